//! `fleetdash cron-run NAME -- COMMAND...`: runs a cron job and keeps the record the dashboard
//! judges it by (`collect::systems::cron`), the way Healthchecks' start and finish pings do.
//!
//! The record `<dir>/NAME.json` is written atomically before the command starts (`last_start`)
//! and again when it ends (finish, exit code, duration, and the success time when it exited 0),
//! so a job that hangs or never returns shows as started-but-not-finished. The command runs
//! directly (no shell), with the terminal's stdio: its output goes where cron sends it and is
//! never stored, since it may hold secrets. Optionally the same facts go to a `.prom` file for
//! node_exporter's textfile collector, for hosts the dashboard reads through node_exporter.
//!
//! Overlapping runs of one job share its record; the last to write wins.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use chrono::{DateTime, Utc};
use clap::ArgGroup;
use rustix::process::{Pid, Signal, kill_process_group};
use tokio::signal::unix::{SignalKind, signal};

use crate::collect::systems::cron::{Record, record_path};
// The names the node_exporter source reads back, so the two cannot drift apart.
use crate::collect::systems::node_exporter::{
    CRON_LAST_EXIT_CODE, CRON_LAST_FINISH, CRON_LAST_START, CRON_LAST_SUCCESS,
};
use crate::config::is_plain_name;
use crate::write::atomic;

/// What coreutils `timeout` exits with when it had to stop the command.
pub const TIMEOUT_EXIT_CODE: i32 = 124;
/// What a shell exits with when it cannot find or start the command.
pub const CANNOT_START_EXIT_CODE: i32 = 127;
/// A command that outlived its timeout gets SIGTERM, then this long before SIGKILL.
const KILL_AFTER: Duration = Duration::from_secs(5);

#[derive(clap::Args, Debug)]
#[command(group(ArgGroup::new("records").required(true).args(["config", "dir"])))]
pub struct CronRunArgs {
    /// The job's name, as in the config's crons (letters, digits, '.', '_', '-'): its record
    /// is NAME.json.
    #[arg(value_parser = parse_name)]
    pub name: String,
    /// The dashboard's config: the record goes to its state_dir's crons/ folder.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The folder to keep the record in (the host's cron_dir).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Also write fleetdash_cron_NAME.prom here, for node_exporter's textfile collector.
    #[arg(long, value_name = "DIR")]
    pub textfile_dir: Option<PathBuf>,
    /// Stop the command after this long (e.g. 2h, 30m); the run is recorded as failed with
    /// exit code 124.
    #[arg(long, value_name = "DURATION", value_parser = parse_timeout)]
    pub timeout: Option<Duration>,
    /// Also write the outcome as one ASC envelope (a JSON line) on stderr: stdout is the
    /// job's.
    #[arg(long)]
    pub json: bool,
    /// The command and its arguments, after `--`; run as given, not through a shell.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

fn parse_name(s: &str) -> Result<String, String> {
    if is_plain_name(s) {
        Ok(s.to_string())
    } else {
        Err(format!(
            "{s:?} is not a plain name (letters, digits, '.', '_', '-', '@', ':'; not starting with '.' \
             or '-'): it names the job's record file"
        ))
    }
}

fn parse_timeout(s: &str) -> Result<Duration, String> {
    match humantime::parse_duration(s) {
        Ok(d) if !d.is_zero() => Ok(d),
        Ok(_) => Err("must be longer than zero".into()),
        Err(e) => Err(format!(
            "{e}; expected a duration such as \"2h\" or \"30m\""
        )),
    }
}

/// Runs the job, keeping its record in `dir`, and returns the exit code to leave with: the
/// command's own (128 + N when a signal N ended it, 124 on timeout, 127 when it could not be
/// started). An `Err` means the run succeeded but could not be recorded.
pub async fn run(args: &CronRunArgs, dir: &Path) -> Result<i32> {
    let keeper = Keeper {
        name: &args.name,
        record: record_path(dir, &args.name),
        textfile: args
            .textfile_dir
            .as_ref()
            .map(|d| d.join(format!("fleetdash_cron_{}.prom", args.name))),
    };
    let mut record = keeper.previous();
    record.name = args.name.clone();
    record.last_start = Some(Utc::now());
    // The job matters more than its record: it runs even when the record cannot be written,
    // and the dashboard then shows it as not checked in.
    let mut unrecorded = keeper.save(&record).err();
    if let Some(e) = &unrecorded {
        eprintln!("fleetdash cron-run: {e:#}; running {} anyway", args.name);
    }

    let clock = Instant::now();
    let code = match execute(&args.command, args.timeout).await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("fleetdash cron-run: cannot start {}: {e}", args.command[0]);
            CANNOT_START_EXIT_CODE
        }
    };
    let finished = Utc::now();
    record.last_finish = Some(finished);
    record.last_exit_code = Some(code);
    record.last_duration_ms = Some(u64::try_from(clock.elapsed().as_millis()).unwrap_or(u64::MAX));
    if code == 0 {
        record.last_success = Some(finished);
    }
    if let Err(e) = keeper.save(&record) {
        unrecorded = Some(e);
    }
    match unrecorded {
        Some(e) if code == 0 => {
            Err(e.context("the run succeeded but the dashboard will not see it"))
        }
        Some(e) => {
            eprintln!("fleetdash cron-run: {e:#}");
            Ok(code)
        }
        None => Ok(code),
    }
}

/// Where one job's record (and metrics) live.
struct Keeper<'a> {
    name: &'a str,
    record: PathBuf,
    textfile: Option<PathBuf>,
}

impl Keeper<'_> {
    /// The record so far, keeping the last success across runs. A missing record starts
    /// afresh; so does a corrupt one (said on stderr), else it would never heal.
    fn previous(&self) -> Record {
        let bytes = match std::fs::read(&self.record) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Record::default(),
            Err(e) => {
                eprintln!(
                    "fleetdash cron-run: cannot read {}: {e}; starting a new record",
                    self.record.display()
                );
                return Record::default();
            }
        };
        serde_json::from_slice(&bytes).unwrap_or_else(|e| {
            eprintln!(
                "fleetdash cron-run: {} is not a valid record ({e}); starting a new one",
                self.record.display()
            );
            Record::default()
        })
    }

    fn save(&self, record: &Record) -> Result<()> {
        let mut json = serde_json::to_vec_pretty(record).context("cannot encode the record")?;
        json.push(b'\n');
        write_creating_dir(&self.record, &json)?;
        if let Some(path) = &self.textfile {
            write_creating_dir(path, textfile_metrics(self.name, record).as_bytes())?;
        }
        Ok(())
    }
}

fn write_creating_dir(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create the folder {}", dir.display()))?;
    }
    atomic::write(path, bytes)
}

/// The record as Prometheus text exposition for node_exporter's textfile collector: one
/// gauge per known fact, Unix seconds; a fact not known yet is left out, never written as 0.
pub fn textfile_metrics(name: &str, record: &Record) -> String {
    let time = |t: Option<DateTime<Utc>>| t.map(|t| t.timestamp());
    let metrics = [
        (
            CRON_LAST_START,
            "When the job's latest run started, in Unix seconds.",
            time(record.last_start),
        ),
        (
            CRON_LAST_FINISH,
            "When the job's latest finished run ended, in Unix seconds.",
            time(record.last_finish),
        ),
        (
            CRON_LAST_SUCCESS,
            "When the job last finished with exit code 0, in Unix seconds.",
            time(record.last_success),
        ),
        (
            CRON_LAST_EXIT_CODE,
            "The exit code of the job's latest finished run (128+N for signal N, 124 timeout).",
            record.last_exit_code.map(i64::from),
        ),
    ];
    let mut out = String::new();
    for (metric, help, value) in metrics {
        if let Some(value) = value {
            out.push_str(&format!(
                "# HELP {metric} {help}\n# TYPE {metric} gauge\n{metric}{{cron=\"{name}\"}} {value}\n"
            ));
        }
    }
    out
}

/// Runs the command with inherited stdio until it exits, its timeout passes or it is stopped.
/// `Err` only when it could not be started.
///
/// The command leads a process group of its own, and every signal is sent to that group: a
/// shell script's children stop with it, on the timeout as on SIGTERM, SIGINT or SIGHUP sent
/// to cron-run. (The group is not the terminal's foreground one: ctrl-c reaches cron-run, which
/// passes it on; a job that reads the terminal would be stopped, and cron jobs have none.)
async fn execute(command: &[String], timeout: Option<Duration>) -> std::io::Result<i32> {
    let (program, args) = command
        .split_first()
        .ok_or_else(|| std::io::Error::other("no command given"))?;
    // Handlers before the spawn: from here on a signal must not kill us before the record is
    // written. SIGTERM, SIGINT and SIGHUP aimed at us are passed on to the job's group.
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let mut hup = signal(SignalKind::hangup())?;
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .process_group(0)
        .spawn()?;
    let group = child
        .id()
        .and_then(|p| i32::try_from(p).ok())
        .and_then(Pid::from_raw);
    let deadline = async {
        match timeout {
            Some(t) => tokio::time::sleep(t).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            status = child.wait() => return Ok(exit_code(status?)),
            () = &mut deadline => {
                let limit = humantime::format_duration(timeout.unwrap_or_default());
                eprintln!("fleetdash cron-run: {program} ran past its timeout of {limit}; stopping it");
                signal_group(&child, Signal::TERM);
                let stopped = tokio::time::timeout(KILL_AFTER, child.wait()).await.is_ok();
                if let Some(group) = group {
                    // Whatever of the group outlived SIGTERM, the leader itself or a child
                    // that ignores it. While any member lives, the group's id cannot be reused;
                    // with none left this is ESRCH.
                    let _ = kill_process_group(group, Signal::KILL);
                }
                if !stopped {
                    child.wait().await?;
                }
                return Ok(TIMEOUT_EXIT_CODE);
            }
            Some(()) = term.recv() => signal_group(&child, Signal::TERM),
            Some(()) = int.recv() => signal_group(&child, Signal::INT),
            Some(()) = hup.recv() => signal_group(&child, Signal::HUP),
        }
    }
}

/// Signals the job's process group (the job leads it).
fn signal_group(child: &tokio::process::Child, signal: Signal) {
    // `id()` is `None` once the leader has been reaped, so its id cannot have been reused.
    let pid = child
        .id()
        .and_then(|p| i32::try_from(p).ok())
        .and_then(Pid::from_raw);
    if let Some(pid) = pid {
        // It may have exited in the meantime; then there is nothing to stop.
        let _ = kill_process_group(pid, signal);
    }
}

/// The shell's convention: the exit code, or 128 + N when signal N ended the command.
fn exit_code(status: ExitStatus) -> i32 {
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn textfile_leaves_out_what_is_not_known_yet() {
        let started: DateTime<Utc> = "2026-11-29T03:00:12Z".parse().unwrap();
        let record = Record {
            name: "backup".into(),
            last_start: Some(started),
            ..Record::default()
        };
        assert_eq!(
            textfile_metrics("backup", &record),
            "# HELP fleetdash_cron_last_start_timestamp_seconds When the job's latest run \
             started, in Unix seconds.\n\
             # TYPE fleetdash_cron_last_start_timestamp_seconds gauge\n\
             fleetdash_cron_last_start_timestamp_seconds{cron=\"backup\"} 1795921212\n"
        );
    }

    #[test]
    fn names_and_timeouts_are_checked_like_the_config() {
        assert!(parse_name("nightly-backup.v2").is_ok());
        for bad in ["", "../etc/passwd", "a/b", "-rf", ".hidden", "a b"] {
            assert!(parse_name(bad).is_err(), "{bad:?}");
        }
        assert_eq!(parse_timeout("90s"), Ok(Duration::from_secs(90)));
        assert!(parse_timeout("0s").is_err());
        assert!(parse_timeout("soon").is_err());
    }
}

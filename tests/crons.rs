//! `fleetdash cron-run` with real commands (succeeding, failing, hanging, timed out, missing),
//! its records and node_exporter textfile, judged by the Healthchecks model; then crons with a
//! record and a stamp through `fleetdash collect` into status.json.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use chrono::{DateTime, TimeDelta, Utc};
use fleetdash::clock::Clocked;
use fleetdash::collect::systems::cron::{self, Evidence, Record};
use fleetdash::collect::systems::node_exporter;
use fleetdash::config::{Config, CronConfig, CronEvidence};
use fleetdash_model::{CronState, Probe};
use support::Scratch;
use support::procs::{proc_info, processes};

fn cron_run(dir: &Path, name: &str, extra: &[&str], command: &[&str]) -> Command {
    let mut cmd = support::fleetdash();
    cmd.arg("cron-run")
        .arg(name)
        .arg("--dir")
        .arg(dir)
        .args(extra)
        .arg("--")
        .args(command);
    cmd
}

fn run(dir: &Path, name: &str, extra: &[&str], command: &[&str]) -> Output {
    cron_run(dir, name, extra, command).output().unwrap()
}

fn record(dir: &Path, name: &str) -> Record {
    let bytes = std::fs::read(dir.join(format!("{name}.json"))).unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

fn job(name: &str, period_s: u64, grace_s: u64) -> CronConfig {
    CronConfig {
        name: name.into(),
        period: Duration::from_secs(period_s),
        grace: Duration::from_secs(grace_s),
        evidence: CronEvidence::Record,
    }
}

fn read(dir: &Path, cfg: &CronConfig) -> Result<Evidence, fleetdash::net::ProbeFailure> {
    cron::read_local(Some(dir.to_str().unwrap()), cfg)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_succeeding_command_records_its_success_and_not_its_output() {
    let dir = tempfile::tempdir().unwrap();
    let before = Utc::now();
    let out = run(
        dir.path(),
        "nightly",
        &[],
        &["sh", "-c", "echo planted-output-7f3a; sleep 0.2"],
    );
    let after = Utc::now();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // The job's stdout is inherited, not captured: it reaches cron's mail, not the record.
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "planted-output-7f3a\n"
    );
    let text = std::fs::read_to_string(dir.path().join("nightly.json")).unwrap();
    assert!(!text.contains("planted-output"), "{text}");

    let r = record(dir.path(), "nightly");
    assert_eq!(r.name, "nightly");
    assert_eq!(r.last_exit_code, Some(0));
    let (start, finish) = (r.last_start.unwrap(), r.last_finish.unwrap());
    assert!(
        before <= start && start <= finish && finish <= after,
        "{r:?}"
    );
    assert_eq!(r.last_success, Some(finish));
    let ms = r.last_duration_ms.unwrap();
    assert!((200..10_000).contains(&ms), "duration {ms} ms");

    let cfg = job("nightly", 3600, 600);
    let check = cron::judge(
        &cfg,
        "lab",
        read(dir.path(), &cfg),
        after,
        &Clocked::wall_only(after),
    );
    assert_eq!(check.state, CronState::Up, "{check:?}");
    assert_eq!(check.last_ok_s, Probe::Value(0));
}

#[test]
fn a_failing_command_passes_its_exit_code_on_and_is_down() {
    let dir = tempfile::tempdir().unwrap();
    assert!(run(dir.path(), "sync", &[], &["true"]).status.success());
    let first_success = record(dir.path(), "sync").last_success.unwrap();

    let out = run(dir.path(), "sync", &[], &["sh", "-c", "exit 3"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let r = record(dir.path(), "sync");
    assert_eq!(r.last_exit_code, Some(3));
    assert!(r.last_finish.unwrap() > first_success);
    // The earlier success is kept: it is what the age is judged by once the job recovers.
    assert_eq!(r.last_success, Some(first_success));

    let cfg = job("sync", 3600, 600);
    let now = Utc::now();
    let check = cron::judge(
        &cfg,
        "lab",
        read(dir.path(), &cfg),
        now,
        &Clocked::wall_only(now),
    );
    assert_eq!(check.state, CronState::Down);
    let reason = check.reason.unwrap();
    assert!(
        reason.starts_with("last run failed with exit code 3, "),
        "{reason}"
    );

    // It recovers: the next success is up again.
    assert!(run(dir.path(), "sync", &[], &["true"]).status.success());
    let check = cron::judge(
        &cfg,
        "lab",
        read(dir.path(), &cfg),
        now,
        &Clocked::wall_only(Utc::now()),
    );
    assert_eq!(check.state, CronState::Up, "{check:?}");
}

/// Waits until the record shows a run that started and has not finished.
fn wait_for_start(dir: &Path, name: &str, child: &mut Child) -> Record {
    let deadline = Instant::now() + support::HANG_BUDGET;
    loop {
        assert!(child.try_wait().unwrap().is_none(), "cron-run exited early");
        if let Ok(bytes) = std::fs::read(dir.join(format!("{name}.json"))) {
            let r: Record = serde_json::from_slice(&bytes).unwrap();
            if r.last_start > r.last_finish {
                return r;
            }
        }
        assert!(Instant::now() < deadline, "no start recorded");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn wait_with_deadline(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_hanging_command_shows_started_not_finished_and_is_down_past_the_grace() {
    let dir = tempfile::tempdir().unwrap();
    assert!(run(dir.path(), "dump", &[], &["true"]).status.success());
    let earlier = record(dir.path(), "dump");

    let mut child = cron_run(dir.path(), "dump", &[], &["sleep", "30"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let r = wait_for_start(dir.path(), "dump", &mut child);
    // The start is on disk before the command ends; the previous run's facts are kept.
    assert_eq!(r.last_finish, earlier.last_finish);
    assert_eq!(r.last_success, earlier.last_success);
    let start = r.last_start.unwrap();

    let grace = 60;
    let cfg = job("dump", 86_400, grace);
    let at_grace = start + TimeDelta::seconds(grace as i64);
    let check = cron::judge(
        &cfg,
        "lab",
        read(dir.path(), &cfg),
        at_grace,
        &Clocked::wall_only(at_grace),
    );
    assert_eq!(check.state, CronState::Up, "inside its grace: {check:?}");
    let past = at_grace + TimeDelta::seconds(1);
    let check = cron::judge(
        &cfg,
        "lab",
        read(dir.path(), &cfg),
        past,
        &Clocked::wall_only(past),
    );
    assert_eq!(check.state, CronState::Down);
    assert_eq!(
        check.reason.as_deref(),
        Some("started 1 min ago, not finished within the grace (1 min)")
    );

    // SIGTERM to cron-run is passed on to the job; the record says how it ended.
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = wait_with_deadline(&mut child, support::HANG_BUDGET);
    assert_eq!(status.code(), Some(128 + 15));
    let r = record(dir.path(), "dump");
    assert_eq!(r.last_exit_code, Some(143));
    assert!(r.last_finish.unwrap() >= start);
    assert_eq!(r.last_success, earlier.last_success);
    let now = Utc::now();
    let check = cron::judge(
        &cfg,
        "lab",
        read(dir.path(), &cfg),
        now,
        &Clocked::wall_only(now),
    );
    assert!(
        check
            .reason
            .unwrap()
            .starts_with("last run failed with exit code 143"),
    );
}

#[test]
fn timeout_stops_a_hang_and_records_124() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), "hang", &["--timeout", "1s"], &["sleep", "30"]);
    // 124 and the message: the deadline ended it (a finished sleep exits 0).
    assert_eq!(out.status.code(), Some(124), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("sleep ran past its timeout of 1s"),
        "{}",
        stderr(&out)
    );
    let r = record(dir.path(), "hang");
    assert_eq!(r.last_exit_code, Some(124));
    assert_eq!(r.last_success, None);
    assert!(r.last_duration_ms.unwrap() >= 1000);
}

/// The pids of live processes running exactly `argv` whose grandparent is `grandparent`.
fn grandchildren(grandparent: u32, argv: &[&str]) -> Vec<u32> {
    processes()
        .into_iter()
        .filter(|p| {
            p.argv == argv && proc_info(p.ppid).is_some_and(|parent| parent.ppid == grandparent)
        })
        .map(|p| p.pid)
        .collect()
}

/// Whether `parent` has a live child running exactly `argv`.
fn children(parent: u32, argv: &[&str]) -> bool {
    processes()
        .into_iter()
        .any(|p| p.ppid == parent && p.argv == argv)
}

/// Waits until `pid` no longer runs `argv` (SIGKILL is delivered at once, the teardown not
/// quite).
fn assert_gone(pid: u32, argv: &[&str]) {
    let deadline = Instant::now() + support::HANG_BUDGET;
    while proc_info(pid).is_some_and(|p| p.argv == argv) {
        assert!(
            Instant::now() < deadline,
            "{argv:?} (pid {pid}) was left running"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn timeout_stops_the_jobs_children_too() {
    let dir = tempfile::tempdir().unwrap();
    let sleep = ["sleep", "171"];
    let mut child = cron_run(
        dir.path(),
        "spawner",
        &["--timeout", "1s"],
        &["sh", "-c", "sleep 171 & wait"],
    )
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let deadline = Instant::now() + support::HANG_BUDGET;
    let pid = loop {
        if let Some(&pid) = grandchildren(child.id(), &sleep).first() {
            break pid;
        }
        assert!(Instant::now() < deadline, "the job's sleep never started");
        std::thread::sleep(Duration::from_millis(10));
    };
    let sleep_proc = proc_info(pid).unwrap();
    let (shell, pgid) = (sleep_proc.ppid, sleep_proc.pgid);
    assert_eq!(pgid, shell, "the job leads a process group of its own");
    let status = wait_with_deadline(&mut child, support::HANG_BUDGET);
    assert_eq!(status.code(), Some(124));
    assert_gone(pid, &sleep);
    assert_eq!(record(dir.path(), "spawner").last_exit_code, Some(124));
}

#[test]
fn sigint_and_sighup_are_passed_on_to_the_job() {
    let dir = tempfile::tempdir().unwrap();
    for (signal, number) in [("INT", 2), ("HUP", 1)] {
        let name = format!("stopped-{}", signal.to_lowercase());
        let mut child = cron_run(dir.path(), &name, &[], &["sleep", "30"])
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        wait_for_start(dir.path(), &name, &mut child);
        // cron-run handles signals from before it starts the job: wait for the job.
        let deadline = Instant::now() + support::HANG_BUDGET;
        while !children(child.id(), &["sleep", "30"]) {
            assert!(Instant::now() < deadline, "the job never started");
            std::thread::sleep(Duration::from_millis(10));
        }
        let sent = Command::new("kill")
            .args([&format!("-{signal}"), &child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        let status = wait_with_deadline(&mut child, support::HANG_BUDGET);
        assert_eq!(status.code(), Some(128 + number), "SIG{signal}");
        assert_eq!(record(dir.path(), &name).last_exit_code, Some(128 + number));
    }
}

fn metric_lines(name: &str, r: &Record) -> String {
    let mut text = String::new();
    let mut add = |metric: &str, help: &str, value: Option<i64>| {
        if let Some(v) = value {
            text.push_str(&format!(
                "# HELP {metric} {help}\n# TYPE {metric} gauge\n{metric}{{cron=\"{name}\"}} {v}\n"
            ));
        }
    };
    let secs = |t: Option<DateTime<Utc>>| t.map(|t| t.timestamp());
    add(
        "fleetdash_cron_last_start_timestamp_seconds",
        "When the job's latest run started, in Unix seconds.",
        secs(r.last_start),
    );
    add(
        "fleetdash_cron_last_finish_timestamp_seconds",
        "When the job's latest finished run ended, in Unix seconds.",
        secs(r.last_finish),
    );
    add(
        "fleetdash_cron_last_success_timestamp_seconds",
        "When the job last finished with exit code 0, in Unix seconds.",
        secs(r.last_success),
    );
    add(
        "fleetdash_cron_last_exit_code",
        "The exit code of the job's latest finished run (128+N for signal N, 124 timeout).",
        r.last_exit_code.map(i64::from),
    );
    text
}

#[test]
fn textfile_dir_gets_the_metrics_node_exporter_reads() {
    let dir = tempfile::tempdir().unwrap();
    let textfiles = dir.path().join("textfile");
    let tf = textfiles.to_str().unwrap();
    let prom = textfiles.join("fleetdash_cron_daily-op.prom");

    // A first run that fails: no success yet, so no success metric (never a fake 0).
    let out = run(
        dir.path(),
        "daily-op",
        &["--textfile-dir", tf],
        &["sh", "-c", "exit 2"],
    );
    assert_eq!(out.status.code(), Some(2));
    let text = std::fs::read_to_string(&prom).unwrap();
    assert!(!text.contains("last_success"), "{text}");
    assert!(text.ends_with("fleetdash_cron_last_exit_code{cron=\"daily-op\"} 2\n"));
    assert_eq!(
        text,
        metric_lines("daily-op", &record(dir.path(), "daily-op"))
    );

    let out = run(dir.path(), "daily-op", &["--textfile-dir", tf], &["true"]);
    assert!(out.status.success());
    let r = record(dir.path(), "daily-op");
    let text = std::fs::read_to_string(&prom).unwrap();
    assert_eq!(text, metric_lines("daily-op", &r));
    let samples: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(
        samples,
        [
            format!(
                "fleetdash_cron_last_start_timestamp_seconds{{cron=\"daily-op\"}} {}",
                r.last_start.unwrap().timestamp()
            ),
            format!(
                "fleetdash_cron_last_finish_timestamp_seconds{{cron=\"daily-op\"}} {}",
                r.last_finish.unwrap().timestamp()
            ),
            format!(
                "fleetdash_cron_last_success_timestamp_seconds{{cron=\"daily-op\"}} {}",
                r.last_success.unwrap().timestamp()
            ),
            "fleetdash_cron_last_exit_code{cron=\"daily-op\"} 0".to_string(),
        ]
    );
    // What node_exporter serves from the file is read back by the node_exporter source as
    // the record's own facts (to the second).
    let scratch = Scratch::new();
    let config = scratch.config(
        "[[hosts]]\nname = \"LAB\"\nsource = \"node_exporter\"\nurl = \"http://127.0.0.1:9/metrics\"\n\n[[hosts.crons]]\nname = \"daily-op\"\nperiod = \"1d\"\n",
    );
    let config = Config::parse(&config, &std::fs::read_to_string(&config).unwrap()).unwrap();
    let facts = node_exporter::facts_from_text(&config.hosts[0], &text);
    let secs =
        |t: Option<DateTime<Utc>>| t.map(|t| DateTime::from_timestamp(t.timestamp(), 0).unwrap());
    assert_eq!(
        facts.crons,
        [Ok(Evidence {
            last_start: secs(r.last_start),
            last_finish: secs(r.last_finish),
            last_success: secs(r.last_success),
            last_exit_code: Some(0),
        })]
    );
    // Written atomically: no temporary file is left for the collector to trip over.
    let names: Vec<String> = std::fs::read_dir(&textfiles)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["fleetdash_cron_daily-op.prom"]);
}

#[test]
fn bad_names_and_missing_folders_are_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let touch = ["touch", marker.to_str().unwrap()];
    for bad in ["../escape", "a/b", ".hidden", "-rf", "two words", ""] {
        let out = run(dir.path(), bad, &[], &touch);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {}", stderr(&out));
        // "-rf" never reaches the name check: clap refuses it as an unknown option.
        let why = if bad.starts_with('-') {
            "unexpected argument"
        } else {
            "not a plain name"
        };
        assert!(stderr(&out).contains(why), "{}", stderr(&out));
    }
    let out = support::fleetdash()
        .args(["cron-run", "job", "--"])
        .args(touch)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--config <FILE>|--dir <DIR>"),
        "{}",
        stderr(&out)
    );
    assert!(
        !marker.exists(),
        "a refused cron-run must not run its command"
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn a_command_that_cannot_start_is_a_failed_run_with_127() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        dir.path(),
        "ghost",
        &[],
        &["/nonexistent/backup-tool", "--x"],
    );
    assert_eq!(out.status.code(), Some(127));
    assert!(
        stderr(&out).contains("cannot start /nonexistent/backup-tool: No such file"),
        "{}",
        stderr(&out)
    );
    let r = record(dir.path(), "ghost");
    assert_eq!(r.last_exit_code, Some(127));
    assert!(r.last_finish.is_some() && r.last_success.is_none());
}

#[test]
fn config_puts_records_in_the_state_dirs_crons_folder() {
    let scratch = Scratch::new();
    let config = scratch.config("");
    let out = support::fleetdash()
        .args(["cron-run", "--config"])
        .arg(&config)
        .args(["tidy", "--", "true"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let path: PathBuf = scratch.path().join("state/crons/tidy.json");
    let r: Record = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    assert_eq!(r.last_exit_code, Some(0));
}

/// End to end: a local host with a cron under cron-run, one that touches a stamp, and one that
/// never ran, through `fleetdash collect` into status.json.
#[test]
fn collect_judges_record_and_stamp_crons_into_status_json() {
    let scratch = Scratch::new();
    let stamp = scratch.path().join("stamped.ok");
    let config = scratch.config(&format!(
        r#"[[hosts]]
name = "laptop"
source = "local"

[[hosts.crons]]
name = "recorded"
period = "1h"
grace = "10m"

[[hosts.crons]]
name = "stamped"
period = "1d"
grace = "1h"
stamp = "{}"

[[hosts.crons]]
name = "never"
period = "1h"
"#,
        stamp.display()
    ));
    let out = support::fleetdash()
        .args(["cron-run", "--config"])
        .arg(&config)
        .args(["recorded", "--", "true"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    // Touched 1 d 30 min ago: past its period, inside its grace.
    let touched = Utc::now() - TimeDelta::seconds(86_400 + 1800);
    std::fs::File::create(&stamp)
        .unwrap()
        .set_modified(touched.into())
        .unwrap();

    let out = scratch.collect(&config);
    assert!(out.status.success(), "{}", stderr(&out));
    let snapshot = scratch.snapshot();
    let Probe::Value(systems) = &snapshot.systems else {
        panic!("systems: {:?}", snapshot.systems)
    };
    let laptop = systems.iter().find(|s| s.host == "laptop").unwrap();
    let crons = &laptop.crons;
    assert_eq!(crons.len(), 3);

    assert_eq!(crons[0].name, "recorded");
    assert_eq!(crons[0].state, CronState::Up, "{:?}", crons[0]);
    assert!(matches!(crons[0].last_ok_s, Probe::Value(s) if s < 60));
    assert_eq!(crons[0].reason, None);
    assert_eq!((crons[0].period_s, crons[0].grace_s), (3600, 600));

    assert_eq!(crons[1].name, "stamped");
    assert_eq!(crons[1].state, CronState::Late, "{:?}", crons[1]);
    assert!(
        matches!(crons[1].last_ok_s, Probe::Value(s) if (86_400 + 1800..86_400 + 1900).contains(&s))
    );
    let late = crons[1].reason.clone().unwrap();
    assert!(
        late.starts_with("30 min late: last success 1 d ago, period 1 d, within the grace (1 h)"),
        "{late}"
    );

    assert_eq!(crons[2].name, "never");
    assert_eq!(crons[2].state, CronState::Down);
    assert_eq!(crons[2].last_ok_s, Probe::Unknown);
    assert_eq!(crons[2].grace_s, 3600, "Healthchecks' default grace");
    assert!(
        crons[2]
            .reason
            .as_deref()
            .unwrap()
            .starts_with("no successful run recorded")
    );
    assert!(crons.iter().all(|c| !c.stale));

    // The wire form: last_ok_s is the number, or "unknown" when the job never succeeded.
    let json: serde_json::Value = serde_json::from_str(&scratch.snapshot_text()).unwrap();
    let host = json["systems"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["host"] == "laptop")
        .unwrap();
    assert_eq!(host["crons"][2]["last_ok_s"], "unknown");
    assert_eq!(host["crons"][1]["state"], "late");
    // The host row names the worst cron.
    assert!(
        laptop
            .reason
            .as_deref()
            .unwrap_or_default()
            .contains("cron never: no successful run recorded"),
        "{:?}",
        laptop.reason
    );
}

/// Glued secrets (issue 21) wherever a cron meets outside text: a job that prints them all, to
/// stdout and stderr, and fails, under `fleetdash cron-run --config --textfile-dir`; and
/// records no `cron-run` wrote, a glued secret where a number belongs (the parser's error,
/// which the reason quotes, holds the string), one cron each. Through `fleetdash collect`,
/// nothing of them in any file fleetdash writes or in its log, and the corrupt records were
/// read and said so, redacted.
#[test]
fn glued_secrets_in_a_crons_output_and_records_reach_no_file_and_no_log() {
    use support::secrets::{GLUED, find_secret, glued_text};
    let scratch = Scratch::new();
    let planted = scratch.path().join("planted");
    std::fs::create_dir_all(&planted).unwrap();
    let mut crons = String::new();
    for (i, g) in GLUED.iter().enumerate() {
        let record = serde_json::json!({"name": format!("c{i}"), "last_exit_code": g.value});
        std::fs::write(planted.join(format!("c{i}.json")), record.to_string()).unwrap();
        crons += &format!("[[hosts.crons]]\nname = \"c{i}\"\nperiod = \"1h\"\n\n");
    }
    let config = scratch.config(&format!(
        "[[hosts]]\nname = \"laptop\"\nsource = \"local\"\n\n\
         [[hosts.crons]]\nname = \"loud\"\nperiod = \"1h\"\n\n\
         [[hosts]]\nname = \"planted\"\nsource = \"local\"\ncron_dir = {:?}\n\n{crons}",
        planted.display().to_string()
    ));
    let said = scratch.path().join("said.txt");
    std::fs::write(&said, glued_text()).unwrap();
    let textfiles = scratch.path().join("state/textfile");
    let out = support::fleetdash()
        .args(["cron-run", "--config"])
        .arg(&config)
        .arg("--textfile-dir")
        .arg(&textfiles)
        .arg("loud")
        .args(["--", "sh", "-c", "cat \"$0\"; cat \"$0\" >&2; exit 3"])
        .arg(&said)
        .env("FLEETDASH_LOG", "debug")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    // The job's own output is passed on (to cron's mail): the rest of the log is fleetdash's.
    let job_said = glued_text();
    let cron_run_log = stderr(&out).replacen(&job_said, "", 1);
    if let Some(found) = find_secret(&cron_run_log) {
        panic!("{found} leaked into cron-run's log:\n{cron_run_log}");
    }

    let out = support::fleetdash()
        .args(["collect", "--config"])
        .arg(&config)
        .env("FLEETDASH_LOG", "debug")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    if let Some(found) = find_secret(&stderr(&out)) {
        panic!("{found} leaked into collect's log:\n{}", stderr(&out));
    }
    let written: Vec<PathBuf> = ["out", "state"]
        .iter()
        .flat_map(|d| support::files_under(&scratch.path().join(d)))
        .collect();
    for name in ["loud.json", "fleetdash_cron_loud.prom", "status.json"] {
        assert!(written.iter().any(|p| p.ends_with(name)), "{written:?}");
    }
    for path in written {
        let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
        if let Some(found) = find_secret(&text) {
            panic!("{found} leaked into {}:\n{text}", path.display());
        }
    }

    let snapshot = scratch.snapshot();
    let Probe::Value(systems) = &snapshot.systems else {
        panic!("systems: {:?}", snapshot.systems)
    };
    let laptop = systems.iter().find(|s| s.host == "laptop").unwrap();
    assert_eq!(laptop.crons[0].state, CronState::Down, "{:?}", laptop.crons);
    let host = systems.iter().find(|s| s.host == "planted").unwrap();
    assert_eq!(host.crons.len(), GLUED.len());
    for c in &host.crons {
        let reason = c.reason.as_deref().unwrap_or_default();
        assert!(
            reason.contains("corrupt cron-run record") && reason.contains("[redacted]"),
            "{}: {reason}",
            c.name
        );
    }
}

#[test]
fn a_record_that_cannot_be_written_still_runs_the_job_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("file"), "").unwrap();
    let records = dir.path().join("file/crons");
    let marker = dir.path().join("ran");
    let out = run(&records, "job", &[], &["touch", marker.to_str().unwrap()]);
    // The job matters more than its record; a success that was not recorded is not a success
    // for cron's mail either.
    assert!(marker.exists());
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(
            "the run succeeded but the dashboard will not see it: cannot create the folder"
        ),
        "{}",
        stderr(&out)
    );
    // A failing job keeps its own exit code.
    let out = run(&records, "job", &[], &["sh", "-c", "exit 4"]);
    assert_eq!(out.status.code(), Some(4));
}

/// A record that cannot be read (a FIFO where the record should be: opening it would wait for
/// a writer for ever) fails only its own cron, and `collect` still writes and exits in time.
#[test]
fn a_stuck_record_fails_only_its_own_cron_and_collect_still_exits() {
    let scratch = Scratch::new();
    // The body continues the header's [probe] table.
    let config = scratch.config(
        r#"command_timeout = "2s"

[[hosts]]
name = "laptop"
source = "local"

[[hosts.crons]]
name = "stuck"
period = "1h"

[[hosts.crons]]
name = "fine"
period = "1h"
grace = "10m"
"#,
    );
    let out = support::fleetdash()
        .args(["cron-run", "--config"])
        .arg(&config)
        .args(["fine", "--", "true"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let fifo = scratch.path().join("state/crons/stuck.json");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());

    let mut child = support::fleetdash()
        .args(["collect", "--only", "systems", "--config"])
        .arg(&config)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Nobody ever writes to the FIFO, so the thread reading it stays blocked for good: that
    // collect exits at all shows the stuck thread did not hold it. The budget only turns a
    // hang into a failure.
    let status = wait_with_deadline(&mut child, support::HANG_BUDGET);
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(status.success(), "{err}");

    let snapshot = scratch.snapshot();
    let Probe::Value(systems) = &snapshot.systems else {
        panic!("systems: {:?}", snapshot.systems)
    };
    let crons = &systems[0].crons;
    assert_eq!(crons[0].name, "stuck");
    assert_eq!(crons[0].state, CronState::Down, "{:?}", crons[0]);
    assert!(crons[0].stale);
    let reason = crons[0].reason.clone().unwrap_or_default();
    assert!(reason.contains("stuck.json"), "{reason}");
    assert_eq!(crons[1].name, "fine");
    assert_eq!(crons[1].state, CronState::Up, "{:?}", crons[1]);
    assert_eq!(crons[1].reason, None);
    assert!(!crons[1].stale);
}

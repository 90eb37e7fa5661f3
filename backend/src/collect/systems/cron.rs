//! Crons, judged like Healthchecks: each job has a period and a grace; it is up while its last
//! success is younger than the period, late inside the grace, down after it. A run that
//! started and did not finish within the grace is down, and so is a job whose last run failed.
//!
//! The evidence is what the job leaves behind: the record `fleetdash cron-run` writes
//! ([`Record`]), or the modification time of a stamp file the job touches.

use std::path::Path;

use chrono::{DateTime, SecondsFormat, Utc};
use fleetdash_model::{Asc, CronCheck, CronState, Probe, human_age};
use serde::{Deserialize, Serialize};

use crate::clock::Clocked;
use crate::collect::checkin::{FUTURE_SKEW, healthchecks_state};
use crate::config::{CronConfig, CronEvidence};
use crate::net::ProbeFailure;

/// A record larger than this is not one `cron-run` wrote (it writes a few hundred bytes).
const MAX_RECORD_BYTES: u64 = 64 * 1024;

/// What a job left behind, read from a record or a stamp file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Evidence {
    pub last_success: Option<DateTime<Utc>>,
    /// When the latest run started (running or finished).
    pub last_start: Option<DateTime<Utc>>,
    /// When the latest run finished; older than `last_start` while a run is in progress.
    pub last_finish: Option<DateTime<Utc>>,
    pub last_exit_code: Option<i32>,
}

/// The file `fleetdash cron-run NAME` keeps at `<cron_dir>/NAME.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    pub name: String,
    pub last_start: Option<DateTime<Utc>>,
    pub last_finish: Option<DateTime<Utc>>,
    pub last_exit_code: Option<i32>,
    pub last_duration_ms: Option<u64>,
    pub last_success: Option<DateTime<Utc>>,
}

impl From<&Record> for Evidence {
    fn from(r: &Record) -> Evidence {
        Evidence {
            last_success: r.last_success,
            last_start: r.last_start,
            last_finish: r.last_finish,
            last_exit_code: r.last_exit_code,
        }
    }
}

/// The record's path for a job: `<cron_dir>/<name>.json`.
pub fn record_path(cron_dir: &Path, name: &str) -> std::path::PathBuf {
    cron_dir.join(format!("{name}.json"))
}

/// Where job `name` keeps its record under the host's `cron_dir`; a host without one cannot be
/// asked for records, and the failure says so.
pub fn configured_record_path(
    cron_dir: Option<&str>,
    name: &str,
) -> Result<std::path::PathBuf, ProbeFailure> {
    let dir = cron_dir.ok_or_else(|| {
        ProbeFailure::new(
            Asc::FAILED_PRECONDITION,
            "no cron_dir configured for this host's cron records",
        )
    })?;
    Ok(record_path(Path::new(dir), name))
}

/// Reads one job's evidence on this machine. A missing record or stamp is not an error: the
/// job has simply never checked in, which [`judge`] says loudly.
///
/// Nothing here can block for ever on a special file: a record's path is looked at
/// (`metadata`) before it is opened, and only a regular file of at most [`MAX_RECORD_BYTES`] is
/// read (a FIFO, a device or a directory is refused, naming the path); the open itself is
/// non-blocking in case the file was swapped in between. A stamp is never opened: only its
/// modification time is read.
pub fn read_local(cron_dir: Option<&str>, cfg: &CronConfig) -> Result<Evidence, ProbeFailure> {
    match &cfg.evidence {
        CronEvidence::Record => {
            let path = configured_record_path(cron_dir, &cfg.name)?;
            match read_record(&path)? {
                None => Ok(Evidence::default()),
                Some(bytes) => {
                    evidence_from_record(&bytes).map_err(|f| f.context(&path.display().to_string()))
                }
            }
        }
        CronEvidence::Stamp(stamp) => match std::fs::metadata(stamp).and_then(|m| m.modified()) {
            Ok(mtime) => Ok(evidence_from_stamp(mtime.into())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Evidence::default()),
            Err(e) => Err(ProbeFailure::new(
                Asc::DEPENDENCY_UNAVAILABLE,
                format!("cannot read the modification time of {stamp}: {e}"),
            )),
        },
    }
}

/// A record's bytes; `None` when there is no record. Refuses anything but a regular file of at
/// most [`MAX_RECORD_BYTES`], before opening it.
fn read_record(path: &Path) -> Result<Option<Vec<u8>>, ProbeFailure> {
    use std::io::Read;
    let unreadable = |e: std::io::Error| {
        ProbeFailure::new(
            Asc::DEPENDENCY_UNAVAILABLE,
            format!("cannot read {}: {e}", path.display()),
        )
    };
    // Follows a symbolic link: a linked record is read, what it points at is checked.
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(unreadable(e)),
    };
    check_record_metadata(path, &meta)?;
    // O_NONBLOCK: were the record replaced by a FIFO since the check, opening it must not wait
    // for a writer. It changes nothing for a regular file.
    let fd = match rustix::fs::open(
        path,
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(e) if e == rustix::io::Errno::NOENT => return Ok(None),
        Err(e) => return Err(unreadable(e.into())),
    };
    let file = std::fs::File::from(fd);
    check_record_metadata(path, &file.metadata().map_err(unreadable)?)?;
    let mut bytes = Vec::new();
    file.take(MAX_RECORD_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(unreadable)?;
    if bytes.len() as u64 > MAX_RECORD_BYTES {
        // It grew after the check.
        return Err(too_large(path, None));
    }
    Ok(Some(bytes))
}

/// A record must be a regular file no larger than [`MAX_RECORD_BYTES`].
fn check_record_metadata(path: &Path, meta: &std::fs::Metadata) -> Result<(), ProbeFailure> {
    use std::os::unix::fs::FileTypeExt;
    let kind = meta.file_type();
    if !kind.is_file() {
        let what = if kind.is_dir() {
            "a directory"
        } else if kind.is_fifo() {
            "a FIFO"
        } else if kind.is_socket() {
            "a socket"
        } else if kind.is_char_device() {
            "a character device"
        } else if kind.is_block_device() {
            "a block device"
        } else {
            "a special file"
        };
        return Err(ProbeFailure::new(
            Asc::INTEGRITY_CHECK_FAILED,
            format!(
                "{} is not a regular file ({what}), not a cron-run record",
                path.display()
            ),
        ));
    }
    if meta.len() > MAX_RECORD_BYTES {
        return Err(too_large(path, Some(meta.len())));
    }
    Ok(())
}

fn too_large(path: &Path, size: Option<u64>) -> ProbeFailure {
    let size = size.map_or_else(String::new, |n| format!("{n} bytes, "));
    ProbeFailure::new(
        Asc::INTEGRITY_CHECK_FAILED,
        format!(
            "{} is {size}larger than {MAX_RECORD_BYTES} bytes: not a cron-run record (it writes \
             a few hundred)",
            path.display()
        ),
    )
}

/// Parses a record's bytes (read here, over SSH, ...).
pub fn evidence_from_record(bytes: &[u8]) -> Result<Evidence, ProbeFailure> {
    let record: Record = serde_json::from_slice(bytes).map_err(|e| {
        ProbeFailure::new(
            Asc::INTEGRITY_CHECK_FAILED,
            format!("corrupt cron-run record ({e})"),
        )
    })?;
    Ok(Evidence::from(&record))
}

/// A stamp is touched on success, so its modification time is the last success and nothing
/// else is known.
pub fn evidence_from_stamp(mtime: DateTime<Utc>) -> Evidence {
    Evidence {
        last_success: Some(mtime),
        ..Evidence::default()
    }
}

/// Judges one cron of `host` at `at`. `checked_at` stamps the row. Ages are whole seconds, as
/// fleetdash observed them; each boundary belongs to the better state (an age equal to the
/// period is still up).
///
/// A record with a time more than [`FUTURE_SKEW`] ahead of the clock when first seen (success,
/// start or finish) is down: its age would read 0 for ever and keep it up. Its last success is
/// then unknown unless that one is believable. One seen before this clock stepped back is
/// believed: it was not ahead then.
pub fn judge(
    cfg: &CronConfig,
    host: &str,
    evidence: Result<Evidence, ProbeFailure>,
    checked_at: DateTime<Utc>,
    at: &Clocked,
) -> CronCheck {
    let period_s = cfg.period.as_secs();
    let grace_s = cfg.grace.as_secs();
    let row = |state, last_ok_s, reason: Option<String>, stale| CronCheck {
        name: cfg.name.clone(),
        state,
        last_ok_s,
        period_s,
        grace_s,
        reason,
        uptime_24h_pct: None,
        checked_at,
        stale,
    };
    let ev = match evidence {
        Ok(ev) => ev,
        Err(e) => {
            return row(
                CronState::Down,
                Probe::Error(e.reason.clone()),
                Some(e.reason),
                true,
            );
        }
    };
    let ages = Ages {
        at,
        cron: format!("cron {} on {host}", cfg.name),
    };
    let skew = u64::try_from(FUTURE_SKEW.num_seconds()).unwrap_or(0);
    let believable = |what: &str, t: &DateTime<Utc>| ages.sight(what, *t).ahead_s <= skew;
    let last_ok_s: Probe<u64> = ev
        .last_success
        .filter(|t| believable(SUCCESS, t))
        .map(|t| ages.age(SUCCESS, t))
        .into();
    let future = [
        (SUCCESS, ev.last_success),
        (START, ev.last_start),
        (FINISH, ev.last_finish),
    ]
    .into_iter()
    .filter_map(|(what, t)| t.filter(|t| !believable(what, t)))
    .max();
    if let Some(t) = future {
        let reason = format!(
            "record dated in the future ({}): check the clock of the host that wrote it",
            t.to_rfc3339_opts(SecondsFormat::Secs, true)
        );
        return row(CronState::Down, last_ok_s, Some(reason), false);
    }
    let (state, reason) = verdict(&ev, period_s, grace_s, &ages);
    row(state, last_ok_s, reason, false)
}

const SUCCESS: &str = "last success";
const START: &str = "last start";
const FINISH: &str = "last finish";

/// One cron's stamps, aged by the clock under their names.
struct Ages<'a> {
    at: &'a Clocked,
    cron: String,
}

impl Ages<'_> {
    fn sight(&self, what: &str, t: DateTime<Utc>) -> crate::clock::Sight {
        self.at.sight(&format!("{}'s {what}", self.cron), t)
    }

    fn age(&self, what: &str, t: DateTime<Utc>) -> u64 {
        self.sight(what, t).age_s
    }
}

fn verdict(ev: &Evidence, period_s: u64, grace_s: u64, ages: &Ages) -> (CronState, Option<String>) {
    let grace = human_age(grace_s);
    // A run in progress: started after the last finish (or never finished at all).
    let running_since = ev
        .last_start
        .filter(|start| ev.last_finish.is_none_or(|finish| *start > finish));
    if let Some(start) = running_since {
        let running_s = ages.age(START, start);
        if ages.at.reached(running_s, grace_s.saturating_add(1)) {
            return (
                CronState::Down,
                Some(format!(
                    "started {} ago, not finished within the grace ({grace})",
                    human_age(running_s)
                )),
            );
        }
    }
    if let (Some(code), Some(finish)) = (ev.last_exit_code, ev.last_finish)
        && code != 0
        && ev.last_success.is_none_or(|ok| finish >= ok)
    {
        return (
            CronState::Down,
            Some(format!(
                "last run failed with exit code {code}, {} ago",
                human_age(ages.age(FINISH, finish))
            )),
        );
    }
    let Some(last_success) = ev.last_success else {
        return (
            CronState::Down,
            Some(
                "no successful run recorded (is it running under fleetdash cron-run, or \
                 touching its stamp?)"
                    .into(),
            ),
        );
    };
    let age_s = ages.age(SUCCESS, last_success);
    let running = running_since
        .map(|start| format!("; a run started {} ago", human_age(ages.age(START, start))))
        .unwrap_or_default();
    match healthchecks_state(age_s, period_s, grace_s, &ages.at.now) {
        CronState::Up => (CronState::Up, None),
        CronState::Late => (
            CronState::Late,
            Some(format!(
                "{} late: last success {} ago, period {}, within the grace ({grace}){running}",
                human_age(age_s.saturating_sub(period_s)),
                human_age(age_s),
                human_age(period_s),
            )),
        ),
        CronState::Down => (
            CronState::Down,
            Some(format!(
                "last success {} ago: {} past its period ({}) and beyond the grace ({grace}){running}",
                human_age(age_s),
                human_age(age_s.saturating_sub(period_s)),
                human_age(period_s),
            )),
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use chrono::TimeDelta;

    use super::*;

    const PERIOD: u64 = 3600;
    const GRACE: u64 = 600;

    fn cfg() -> CronConfig {
        CronConfig {
            name: "backup".into(),
            period: Duration::from_secs(PERIOD),
            grace: Duration::from_secs(GRACE),
            evidence: CronEvidence::Record,
        }
    }

    fn t0() -> DateTime<Utc> {
        "2026-11-29T03:00:00Z".parse().unwrap()
    }

    fn at(secs: u64) -> DateTime<Utc> {
        t0() + TimeDelta::seconds(secs as i64)
    }

    fn judge_at(ev: Evidence, now: DateTime<Utc>) -> CronCheck {
        judge(&cfg(), "lab", Ok(ev), now, &Clocked::wall_only(now))
    }

    fn succeeded_at(t: DateTime<Utc>) -> Evidence {
        Evidence {
            last_success: Some(t),
            last_start: Some(t - TimeDelta::seconds(5)),
            last_finish: Some(t),
            last_exit_code: Some(0),
        }
    }

    #[test]
    fn up_late_down_at_the_exact_boundaries() {
        let ev = succeeded_at(t0());
        let cases = [
            (0, CronState::Up),
            (PERIOD, CronState::Up),
            (PERIOD + 1, CronState::Late),
            (PERIOD + GRACE, CronState::Late),
            (PERIOD + GRACE + 1, CronState::Down),
        ];
        for (age, want) in cases {
            let c = judge_at(ev.clone(), at(age));
            assert_eq!(c.state, want, "age {age}: {c:?}");
            assert_eq!(c.last_ok_s, Probe::Value(age));
            assert!(!c.stale);
            assert_eq!((c.period_s, c.grace_s), (PERIOD, GRACE));
        }
        assert_eq!(judge_at(ev.clone(), at(PERIOD)).reason, None);
        let late = judge_at(ev.clone(), at(PERIOD + 300)).reason.unwrap();
        assert_eq!(
            late,
            "5 min late: last success 1 h 5 min ago, period 1 h, within the grace (10 min)"
        );
        let down = judge_at(ev, at(PERIOD + GRACE + 1)).reason.unwrap();
        assert_eq!(
            down,
            "last success 1 h 10 min ago: 10 min past its period (1 h) and beyond the grace (10 min)"
        );
    }

    #[test]
    fn a_run_within_the_grace_is_judged_by_its_last_success() {
        let mut ev = succeeded_at(t0());
        ev.last_start = Some(at(1000));
        let c = judge_at(ev.clone(), at(1000 + GRACE));
        assert_eq!(c.state, CronState::Up, "{c:?}");
        // Past its period while the next run is still inside the grace: late, and says so.
        ev.last_start = Some(at(PERIOD));
        let c = judge_at(ev, at(PERIOD + 60));
        assert_eq!(c.state, CronState::Late);
        assert!(c.reason.unwrap().ends_with("; a run started 1 min ago"));
    }

    #[test]
    fn a_run_past_the_grace_is_down() {
        let mut ev = succeeded_at(t0());
        ev.last_start = Some(at(1000));
        let c = judge_at(ev.clone(), at(1000 + GRACE + 1));
        assert_eq!(c.state, CronState::Down);
        assert_eq!(
            c.reason.as_deref(),
            Some("started 10 min ago, not finished within the grace (10 min)")
        );
        assert_eq!(c.last_ok_s, Probe::Value(1000 + GRACE + 1));
        // A first run that never finished: no finish at all.
        let first = Evidence {
            last_start: Some(t0()),
            ..Evidence::default()
        };
        let c = judge_at(first.clone(), at(GRACE + 1));
        assert_eq!(c.state, CronState::Down);
        assert!(c.reason.unwrap().contains("not finished within the grace"));
        assert_eq!(c.last_ok_s, Probe::Unknown);
        // Still inside its grace, a first run has no success to be judged by yet.
        let c = judge_at(first, at(GRACE));
        assert!(c.reason.unwrap().starts_with("no successful run recorded"));
    }

    #[test]
    fn a_failed_last_run_is_down_even_inside_the_period() {
        let ev = Evidence {
            last_success: Some(t0()),
            last_start: Some(at(100)),
            last_finish: Some(at(160)),
            last_exit_code: Some(3),
        };
        let c = judge_at(ev.clone(), at(460));
        assert_eq!(c.state, CronState::Down);
        assert_eq!(
            c.reason.as_deref(),
            Some("last run failed with exit code 3, 5 min ago")
        );
        assert_eq!(c.last_ok_s, Probe::Value(460));
        // A failure that was never preceded by a success says the failure, not "never ran".
        let never_ok = Evidence {
            last_success: None,
            ..ev
        };
        let c = judge_at(never_ok, at(460));
        assert!(
            c.reason
                .unwrap()
                .starts_with("last run failed with exit code 3")
        );
        assert_eq!(c.last_ok_s, Probe::Unknown);
    }

    #[test]
    fn failed_then_succeeded_is_up() {
        // The exit code is the latest run's; a later success supersedes an old failure.
        let ev = Evidence {
            last_success: Some(at(200)),
            last_start: Some(at(100)),
            last_finish: Some(at(200)),
            last_exit_code: Some(0),
        };
        assert_eq!(judge_at(ev, at(300)).state, CronState::Up);
        // A record whose success is newer than its failed finish (stamp and record mixed up,
        // or clocks): the success wins.
        let ev = Evidence {
            last_success: Some(at(250)),
            last_start: Some(at(100)),
            last_finish: Some(at(200)),
            last_exit_code: Some(1),
        };
        assert_eq!(judge_at(ev, at(300)).state, CronState::Up);
    }

    #[test]
    fn never_ran_is_down_and_says_how_to_check_in() {
        let c = judge_at(Evidence::default(), t0());
        assert_eq!(c.state, CronState::Down);
        assert_eq!(c.last_ok_s, Probe::Unknown);
        assert_eq!(
            c.reason.as_deref(),
            Some(
                "no successful run recorded (is it running under fleetdash cron-run, or \
                 touching its stamp?)"
            )
        );
        assert!(!c.stale);
    }

    #[test]
    fn unreadable_evidence_is_down_and_stale() {
        let failure = ProbeFailure::new(Asc::DEPENDENCY_UNAVAILABLE, "ssh: connection refused");
        let c = judge(
            &cfg(),
            "lab",
            Err(failure),
            t0(),
            &Clocked::wall_only(at(5)),
        );
        assert_eq!(c.state, CronState::Down);
        assert_eq!(c.last_ok_s, Probe::Error("ssh: connection refused".into()));
        assert_eq!(c.reason.as_deref(), Some("ssh: connection refused"));
        assert!(c.stale);
        assert_eq!(c.checked_at, t0());
    }

    #[test]
    fn a_corrupt_record_fails_its_integrity_check() {
        let e = evidence_from_record(b"{\"name\": \"backup\", \"last_start\": 12").unwrap_err();
        assert_eq!(e.asc, Asc::INTEGRITY_CHECK_FAILED);
        assert!(
            e.reason.starts_with("corrupt cron-run record ("),
            "{}",
            e.reason
        );
        let e = evidence_from_record(br#"{"name": "b", "last_start": "yesterday"}"#).unwrap_err();
        // serde's message says what is wrong and where.
        assert!(e.reason.contains("line 1 column"), "{}", e.reason);
    }

    #[test]
    fn a_record_dated_beyond_the_skew_is_down_at_the_boundary() {
        let now = t0();
        let skew = FUTURE_SKEW.num_seconds();
        assert_eq!(skew, 3600, "the bound backups use too");
        // Exactly at the skew: believed (clocks disagree), age 0, up.
        let c = judge_at(succeeded_at(now + TimeDelta::seconds(skew)), now);
        assert_eq!(
            (c.state, c.reason.as_deref()),
            (CronState::Up, None),
            "{c:?}"
        );
        assert_eq!(c.last_ok_s, Probe::Value(0));
        // One second further: not believed, down for good reason, not stale (it was read).
        let ahead = now + TimeDelta::seconds(skew + 1);
        let c = judge_at(succeeded_at(ahead), now);
        assert_eq!(c.state, CronState::Down, "{c:?}");
        assert_eq!(
            c.reason.as_deref(),
            Some(
                "record dated in the future (2026-11-29T04:00:01Z): check the clock of the host \
                 that wrote it"
            )
        );
        assert_eq!(c.last_ok_s, Probe::Unknown);
        assert!(!c.stale);
        // A believable success with a start or a finish from the future: down, the success's
        // age still shown.
        for field in ["start", "finish"] {
            let mut ev = succeeded_at(now - TimeDelta::seconds(60));
            match field {
                "start" => ev.last_start = Some(ahead),
                _ => ev.last_finish = Some(ahead),
            }
            let c = judge_at(ev, now);
            assert_eq!(c.state, CronState::Down, "{field}: {c:?}");
            assert!(
                c.reason
                    .as_deref()
                    .unwrap()
                    .starts_with("record dated in the future (2026-11-29T04:00:01Z)"),
                "{c:?}"
            );
            assert_eq!(c.last_ok_s, Probe::Value(60));
        }
        // A stamp touched in the future, the same.
        let c = judge_at(evidence_from_stamp(ahead), now);
        assert_eq!(c.state, CronState::Down);
    }

    /// `read_local` on its own thread: a test that would block reports it instead of hanging.
    fn read_local_within(
        dir: &str,
        cfg: &CronConfig,
        limit: Duration,
    ) -> Result<Evidence, ProbeFailure> {
        let (dir, cfg) = (dir.to_string(), cfg.clone());
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(read_local(Some(&dir), &cfg)));
        rx.recv_timeout(limit)
            .expect("read_local blocked (opened a FIFO?)")
    }

    fn mkfifo(path: &Path) {
        let status = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap();
        assert!(status.success());
    }

    #[test]
    fn a_record_that_is_not_a_regular_file_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().to_str().unwrap();
        let path = dir.path().join("backup.json");
        let limit = Duration::from_secs(5);
        // A FIFO nobody writes to: opening it for reading would wait for ever.
        mkfifo(&path);
        let e = read_local_within(d, &cfg(), limit).unwrap_err();
        assert_eq!(e.asc, Asc::INTEGRITY_CHECK_FAILED);
        assert_eq!(
            e.reason,
            format!(
                "{} is not a regular file (a FIFO), not a cron-run record",
                path.display()
            )
        );
        // A directory.
        std::fs::remove_file(&path).unwrap();
        std::fs::create_dir(&path).unwrap();
        let e = read_local_within(d, &cfg(), limit).unwrap_err();
        assert_eq!(e.asc, Asc::INTEGRITY_CHECK_FAILED);
        assert_eq!(
            e.reason,
            format!(
                "{} is not a regular file (a directory), not a cron-run record",
                path.display()
            )
        );
        // A symbolic link to a FIFO: what it points at is checked.
        std::fs::remove_dir(&path).unwrap();
        let fifo = dir.path().join("fifo");
        mkfifo(&fifo);
        std::os::unix::fs::symlink(&fifo, &path).unwrap();
        let e = read_local_within(d, &cfg(), limit).unwrap_err();
        assert!(e.reason.contains("not a regular file (a FIFO)"), "{e:?}");
        // Far larger than any record: refused by its size, before it is read.
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, vec![b' '; 70_000]).unwrap();
        let e = read_local_within(d, &cfg(), limit).unwrap_err();
        assert_eq!(e.asc, Asc::INTEGRITY_CHECK_FAILED);
        assert_eq!(
            e.reason,
            format!(
                "{} is 70000 bytes, larger than 65536 bytes: not a cron-run record (it writes a \
                 few hundred)",
                path.display()
            )
        );
        // A stamp is never opened: a FIFO stamp gives its modification time at once.
        let stamp = dir.path().join("stamp");
        mkfifo(&stamp);
        let stamp_cfg = CronConfig {
            evidence: CronEvidence::Stamp(stamp.to_str().unwrap().into()),
            ..cfg()
        };
        let mtime: DateTime<Utc> = std::fs::metadata(&stamp)
            .unwrap()
            .modified()
            .unwrap()
            .into();
        assert_eq!(
            read_local_within(d, &stamp_cfg, limit),
            Ok(evidence_from_stamp(mtime))
        );
    }

    #[test]
    fn read_local_reads_records_and_stamps() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().to_str().unwrap();
        // Never checked in: no file is no evidence, not an error.
        assert_eq!(read_local(Some(d), &cfg()), Ok(Evidence::default()));
        let record = Record {
            name: "backup".into(),
            last_start: Some(t0()),
            last_finish: Some(at(3)),
            last_exit_code: Some(0),
            last_duration_ms: Some(3000),
            last_success: Some(at(3)),
        };
        std::fs::write(
            dir.path().join("backup.json"),
            serde_json::to_vec(&record).unwrap(),
        )
        .unwrap();
        assert_eq!(read_local(Some(d), &cfg()), Ok(Evidence::from(&record)));
        std::fs::write(dir.path().join("backup.json"), b"not json").unwrap();
        let e = read_local(Some(d), &cfg()).unwrap_err();
        assert_eq!(e.asc, Asc::INTEGRITY_CHECK_FAILED);
        assert!(
            e.reason.contains("backup.json: corrupt cron-run record"),
            "{}",
            e.reason
        );
        assert!(
            read_local(None, &cfg())
                .unwrap_err()
                .reason
                .contains("cron_dir")
        );

        let stamp = dir.path().join("stamp");
        let stamp_cfg = CronConfig {
            evidence: CronEvidence::Stamp(stamp.to_str().unwrap().into()),
            ..cfg()
        };
        assert_eq!(read_local(None, &stamp_cfg), Ok(Evidence::default()));
        let file = std::fs::File::create(&stamp).unwrap();
        file.set_modified(at(42).into()).unwrap();
        assert_eq!(
            read_local(None, &stamp_cfg),
            Ok(evidence_from_stamp(at(42)))
        );
    }
}

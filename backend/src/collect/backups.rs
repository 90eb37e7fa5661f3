//! Backup freshness (C4): the latest backup's time from a local folder (its newest file) or from
//! a command's output (e.g. an rclone listing; the newest timestamp printed counts), with a
//! deadline. Its age is banded by the rules file's `backups` thresholds.
//!
//! A timestamp without a zone is read in this machine's local time zone (chrono's [`Local`], so
//! `TZ` counts): that is what `rclone lsl` prints, the hub's local time with no zone. Where the
//! clocks change, a local time that happens twice is taken at its earlier instant (the backup
//! looks older, never younger), and one that never happens (skipped by a daylight-saving change)
//! is left out with a note in the reason. Prefer `rclone lsjson`, whose `ModTime` carries its
//! zone and means one instant wherever it is read.
//!
//! A folder is walked by metadata only ([`walk_dir`]): no file in it is ever opened.
//!
//! Reasons name the folder, or only the program of a command: its other arguments may carry a
//! remote's name or a token.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use chrono::{
    DateTime, FixedOffset, Local, MappedLocalTime, NaiveDate, NaiveDateTime, TimeZone, Utc,
};
use fleetdash_model::{Asc, Backups, Band, Probe, RulesView, human_age};
use regex::Regex;

use super::checkin::FUTURE_SKEW;
use super::systems::command::run_argv;
use super::{Collector, Findings, SectionData};
use crate::clock::{Clock, Clocked};
use crate::config::{BackupSource, BackupsConfig, Config, Rules};
use crate::net::ProbeFailure;

/// A folder walk reads at most this many entries, so a huge tree costs a bounded pass.
pub const MAX_DIR_ENTRIES: usize = 100_000;

pub struct BackupsCollector {
    backups: BackupsConfig,
    rules: RulesView,
    /// Where the backups group comes from (the rules file's name, or "built-in"), cited in
    /// reasons.
    rules_file: String,
    cadence: Duration,
}

impl BackupsCollector {
    pub fn new(config: &Config, rules: &Rules) -> Option<Self> {
        Some(BackupsCollector {
            backups: config.backups.clone()?,
            rules: rules.view(),
            rules_file: rules.origin.short_of_group("backups"),
            cadence: config.cadence.backups,
        })
    }

    pub async fn check(&self, clock: &Clock) -> Backups {
        let checked_at = clock.now().wall;
        let timeout = self.backups.timeout;
        let found = match &self.backups.source {
            BackupSource::Dir(dir) => newest_in_dir(dir, timeout).await,
            BackupSource::Command(argv) => newest_in_output(argv, timeout).await,
        };
        judge(
            &self.backups.name,
            found,
            &self.rules,
            &self.rules_file,
            checked_at,
            &clock.clocked(),
        )
    }
}

#[async_trait]
impl Collector for BackupsCollector {
    fn cadence(&self) -> Duration {
        self.cadence
    }

    async fn collect(&self, clock: &Clock) -> Findings {
        SectionData::Backups(self.check(clock).await).into()
    }
}

/// What a source found: every backup time it saw (the judge keeps the newest believable one),
/// and anything the reason should add.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Found {
    pub times: Vec<DateTime<Utc>>,
    /// E.g. that a folder walk stopped at its bound.
    pub note: Option<String>,
    /// Said when `times` is empty ("no backup files in DIR").
    pub empty: String,
}

/// Turns what the source found into the section. `checked_at` stamps it; `at` judges the age,
/// as observed: the newest time first seen more than [`FUTURE_SKEW`] ahead of the clock is not
/// believed (one seen before this clock stepped back is).
pub fn judge(
    name: &str,
    found: Result<Found, ProbeFailure>,
    rules: &RulesView,
    rules_file: &str,
    checked_at: DateTime<Utc>,
    at: &Clocked,
) -> Backups {
    let failed = |f: ProbeFailure| Backups {
        name: name.to_string(),
        gdrive_latest: Probe::Error(f.reason.clone()),
        age_h: Probe::Error(f.reason.clone()),
        band: Band::Red,
        status: f.asc,
        reason: Some(f.reason),
        checked_at,
        stale: true,
    };
    let found = match found {
        Ok(found) => found,
        Err(f) => return failed(f),
    };
    let skew = u64::try_from(FUTURE_SKEW.num_seconds()).unwrap_or(0);
    let what = format!("backups {name}'s newest");
    let mut times = found.times;
    times.sort_unstable();
    // Newest first until one is believed, each under a name of its place (so that a time
    // ignored pass after pass never takes the believed one's name and its observed age).
    let mut future = 0;
    let mut newest = None;
    for t in times.iter().rev() {
        let sight = match future {
            0 => at.sight(&what, *t),
            n => at.sight(&format!("{what} after {n} ignored"), *t),
        };
        if sight.ahead_s <= skew {
            newest = Some((*t, sight.age_s));
            break;
        }
        future += 1;
    }
    let mut notes: Vec<String> = found.note.into_iter().collect();
    if future > 0 {
        notes.push(format!("{future} timestamp(s) in the future ignored"));
    }
    let Some((latest, age_s)) = newest else {
        let mut reason = found.empty;
        for n in &notes {
            reason.push_str(&format!("; {n}"));
        }
        return failed(ProbeFailure::new(Asc::FAILED_PRECONDITION, reason));
    };
    let band = if at.reached(age_s, rules.backup_red_after_s) {
        Band::Red
    } else if at.reached(age_s, rules.backup_amber_after_s) {
        Band::Amber
    } else {
        Band::Green
    };
    let amber = format!(
        "amber at {}, {rules_file} backups.amber_after_seconds",
        human_age(rules.backup_amber_after_s)
    );
    let red = format!(
        "red at {}, {rules_file} backups.red_after_seconds",
        human_age(rules.backup_red_after_s)
    );
    let (status, threshold) = match band {
        Band::Green => (Asc::SUCCESS, amber),
        Band::Amber => (Asc::SUCCESS_WITH_WARNINGS, format!("{amber}; {red}")),
        // Overdue: the deadline for the next backup has passed.
        Band::Red => (Asc::TIMEOUT, red),
    };
    let mut reason = format!("latest backup {} old ({threshold})", human_age(age_s));
    for n in &notes {
        reason.push_str(&format!("; {n}"));
    }
    Backups {
        name: name.to_string(),
        gdrive_latest: Probe::Value(latest),
        age_h: Probe::Value((age_s as f64 / 3600.0 * 10.0).round() / 10.0),
        band,
        status,
        reason: Some(reason),
        checked_at,
        stale: false,
    }
}

/// The modification times of the regular files under `dir` ([`walk_dir`]), within `timeout`
/// (`backups.timeout`).
///
/// A hung network mount (an NFS or SMB server gone, a stuck FUSE daemon) can block `read_dir`
/// or `stat` for as long as it likes; the pass does not wait longer than `timeout` and reports
/// TIMEOUT. The walk itself cannot be stopped: its thread stays blocked in the kernel until the
/// mount answers (one more such thread for each pass while it hangs). It is a plain detached
/// thread, not tokio's blocking pool, because the runtime waits for every blocking task when it
/// shuts down: a stuck walk there would keep a one-shot `fleetdash collect` from ever exiting.
async fn newest_in_dir(dir: &Path, timeout: Duration) -> Result<Found, ProbeFailure> {
    let owned = dir.to_path_buf();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let failed = |why: String| {
        ProbeFailure::new(
            Asc::INTERNAL_ERROR,
            format!("reading {} failed: {why}", dir.display()),
        )
    };
    std::thread::Builder::new()
        .name("backups-walk".into())
        .spawn(move || {
            // No receiver when the pass stopped waiting: nobody to tell.
            let _ = tx.send(walk_dir(&owned, MAX_DIR_ENTRIES));
        })
        .map_err(|e| failed(format!("cannot start a thread: {e}")))?;
    match tokio::time::timeout(timeout, rx).await {
        Ok(Ok(found)) => found,
        Ok(Err(_)) => Err(failed("the walk ended without an answer".into())),
        Err(_) => Err(ProbeFailure::new(
            Asc::TIMEOUT,
            format!(
                "reading {} took longer than {}",
                dir.display(),
                humantime::format_duration(timeout)
            ),
        )),
    }
}

/// Walks `dir` depth first over at most `max_entries` entries, by metadata alone: folders are
/// listed (`read_dir`) and each entry's type and modification time come from `lstat`, so no file
/// is ever opened and nothing waits on a FIFO, a socket or a device; those are skipped, as only
/// regular files are backups. Symbolic links are not followed either: a link out of the folder
/// is not a backup in it. `dir` itself may be a link to the folder.
pub fn walk_dir(dir: &Path, max_entries: usize) -> Result<Found, ProbeFailure> {
    let mut found = Found {
        empty: format!("no backup files in {}", dir.display()),
        ..Found::default()
    };
    let mut seen = 0usize;
    let mut stack: Vec<PathBuf> = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        // Opened as a directory (O_DIRECTORY): a FIFO put in its place fails at once.
        let entries = std::fs::read_dir(&folder).map_err(|e| unreadable(dir, &folder, &e))?;
        for entry in entries {
            seen += 1;
            if seen > max_entries {
                found.note = Some(format!(
                    "read only the first {max_entries} entries of {}; a newer file may be \
                     among the rest",
                    dir.display()
                ));
                return Ok(found);
            }
            let entry = entry.map_err(|e| unreadable(dir, &folder, &e))?;
            let path = entry.path();
            // The listing's own type, or lstat: never follows a link.
            let kind = entry.file_type().map_err(|e| unreadable(dir, &path, &e))?;
            if kind.is_dir() {
                stack.push(path);
            } else if kind.is_file() {
                // lstat (fstatat with AT_SYMLINK_NOFOLLOW), not an open.
                let mtime: SystemTime = entry
                    .metadata()
                    .and_then(|m| m.modified())
                    .map_err(|e| unreadable(dir, &path, &e))?;
                found.times.push(mtime.into());
            }
        }
    }
    Ok(found)
}

fn unreadable(top: &Path, what: &Path, e: &std::io::Error) -> ProbeFailure {
    let asc = match e.kind() {
        ErrorKind::NotFound => Asc::NOT_FOUND,
        ErrorKind::PermissionDenied => Asc::PERMISSION_DENIED,
        _ => Asc::DEPENDENCY_UNAVAILABLE,
    };
    let reason = if what == top {
        format!("cannot read the backups folder {}: {e}", top.display())
    } else {
        format!(
            "cannot read {} in the backups folder {}: {e}",
            what.display(),
            top.display()
        )
    };
    ProbeFailure::new(asc, reason)
}

/// Runs the listing command and collects every timestamp it printed.
async fn newest_in_output(argv: &[String], timeout: Duration) -> Result<Found, ProbeFailure> {
    let program = argv.first().map_or("the backups command", String::as_str);
    // run_argv's own failures (cannot start, deadline, too much output) name only the program.
    let out = run_argv(argv, timeout).await?;
    if !out.success() {
        let how = out.exit_code.map_or_else(
            || "was killed by a signal".to_string(),
            |c| format!("exited with code {c}"),
        );
        return Err(ProbeFailure::new(
            Asc::DEPENDENCY_UNAVAILABLE,
            format!(
                "{program} {how}: {}",
                scrub_arguments(&out.first_error_line(), argv)
            ),
        ));
    }
    let parsed = timestamps(&out.stdout, &Local);
    Ok(Found {
        note: parsed.gap_note(),
        times: parsed.times,
        empty: format!("no timestamp in the output of {program}"),
    })
}

/// Blanks out the command's arguments (and their `=` values and `:`-separated parts) from a
/// line of its stderr, which tends to repeat them: a remote's name or a token must not reach a
/// reason. Parts shorter than 4 characters are left, as they would mangle ordinary words.
pub fn scrub_arguments(line: &str, argv: &[String]) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for arg in argv.iter().skip(1) {
        parts.push(arg);
        if let Some((_, value)) = arg.split_once('=') {
            parts.push(value);
        }
        parts.extend(arg.split([':', '/', '=']));
    }
    parts.retain(|p| p.chars().count() >= 4);
    // Longest first, so a whole argument goes before its parts.
    parts.sort_by_key(|p| std::cmp::Reverse(p.len()));
    let mut line = line.to_string();
    for p in parts {
        line = line.replace(p, "…");
    }
    line
}

/// What [`timestamps`] read from a command's output.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Timestamps {
    pub times: Vec<DateTime<Utc>>,
    /// Zone-less date-times that do not exist in the zone they were read in (skipped by a
    /// daylight-saving change): left out of `times`.
    pub nonexistent: Vec<NaiveDateTime>,
}

impl Timestamps {
    /// What the reason says about the date-times left out, if any.
    pub fn gap_note(&self) -> Option<String> {
        let first = self.nonexistent.first()?;
        Some(format!(
            "{} zone-less timestamp(s) that do not exist in local time (a daylight-saving gap) \
             ignored, e.g. {first}",
            self.nonexistent.len()
        ))
    }
}

/// Every timestamp in `text`: RFC 3339 / ISO 8601 date-times with `T` or a space, optional
/// fraction and zone, and lines that are a bare Unix epoch in seconds (ten digits).
///
/// A date-time without a zone (`rclone lsl`'s) is read in `zone`: the collector passes
/// [`Local`], the zone `rclone` printed it in. One that `zone` has twice (clocks going back)
/// counts at its earlier instant; one that `zone` never has (clocks going forward) is put in
/// [`Timestamps::nonexistent`] instead.
pub fn timestamps<Tz: TimeZone>(text: &str, zone: &Tz) -> Timestamps {
    static DATE_TIME: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(
            r"(?:^|[^0-9])(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9})\d*)?(Z|z|[+-]\d{2}(?::?\d{2})?)?",
        )
        .expect("valid regex")
    });
    // Exactly ten digits: 2001-09-09 to 2286-11-20, so a size or a count alone on its line is
    // not taken for a date unless it is that long (nine digits would be 1973 to 2001, eleven up
    // to the year 5138).
    static EPOCH: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\d{10}$").expect("valid regex"));
    let mut out = Timestamps::default();
    for c in DATE_TIME.captures_iter(text) {
        // An impossible date or time is not a timestamp.
        let Some(naive) = date_time(&c) else { continue };
        let instant = match c.get(8).map(|m| m.as_str()) {
            None => match zone.from_local_datetime(&naive) {
                MappedLocalTime::Single(t) => Some(t.to_utc()),
                // The earlier instant by comparison, not `earliest()`: chrono's `Local` gives
                // the pair in the wrong order (chronotope/chrono#1625).
                MappedLocalTime::Ambiguous(a, b) => Some(a.to_utc().min(b.to_utc())),
                MappedLocalTime::None => {
                    out.nonexistent.push(naive);
                    None
                }
            },
            Some("Z" | "z") => Some(naive.and_utc()),
            Some(z) => zone_offset(z)
                .and_then(|o| o.from_local_datetime(&naive).single())
                .map(|t| t.to_utc()),
        };
        out.times.extend(instant);
    }
    out.times.extend(
        text.lines()
            .map(str::trim)
            .filter(|l| EPOCH.is_match(l))
            .filter_map(|l| DateTime::from_timestamp(l.parse().ok()?, 0)),
    );
    out
}

/// The date and time [`timestamps`]' regex captured, if they exist on the calendar.
fn date_time(c: &regex::Captures) -> Option<NaiveDateTime> {
    let n = |i: usize| c.get(i).and_then(|m| m.as_str().parse::<u32>().ok());
    let nanos = c.get(7).map_or(Some(0), |f| {
        format!("{:0<9}", f.as_str()).parse::<u32>().ok()
    })?;
    NaiveDate::from_ymd_opt(i32::try_from(n(1)?).ok()?, n(2)?, n(3)?)?.and_hms_nano_opt(
        n(4)?,
        n(5)?,
        n(6)?,
        nanos,
    )
}

/// `+01`, `+0100`, `-05:30` as an offset.
fn zone_offset(zone: &str) -> Option<FixedOffset> {
    let sign = if zone.starts_with('-') { -1 } else { 1 };
    let digits: String = zone[1..].chars().filter(char::is_ascii_digit).collect();
    let hours: i32 = digits.get(..2)?.parse().ok()?;
    let minutes: i32 = digits
        .get(2..)
        .filter(|m| !m.is_empty())
        .map_or(Some(0), |m| m.parse().ok())?;
    FixedOffset::east_opt(sign * (hours * 3600 + minutes * 60))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    fn utc_times(text: &str) -> Vec<DateTime<Utc>> {
        let parsed = timestamps(text, &Utc);
        assert!(parsed.nonexistent.is_empty());
        parsed.times
    }

    #[test]
    fn finds_every_timestamp_shape() {
        let lsl = "     1234 2026-11-29 03:00:12.000000000 daily/fleet.tar\n   99 2026-11-27 03:00:01.5 old.tar\n";
        assert_eq!(
            utc_times(lsl),
            vec![t("2026-11-29T03:00:12Z"), t("2026-11-27T03:00:01.5Z")]
        );
        let lsjson =
            r#"[{"Path":"a.tar","Size":1,"ModTime":"2026-11-29T03:00:12.123Z","IsDir":false}]"#;
        assert_eq!(utc_times(lsjson), vec![t("2026-11-29T03:00:12.123Z")]);
        assert_eq!(
            utc_times(
                "at 2026-11-29T04:00:12+01:00 and 2026-11-29 02:00:12-0100 and 2026-11-29T03:00:12+01"
            ),
            vec![
                t("2026-11-29T03:00:12Z"),
                t("2026-11-29T03:00:12Z"),
                t("2026-11-29T02:00:12Z")
            ]
        );
        assert_eq!(utc_times("1795921212\n"), vec![t("2026-11-29T03:00:12Z")]);
        assert_eq!(
            utc_times("fleet_2026-11-29T03:00:12Z.tar"),
            vec![t("2026-11-29T03:00:12Z")]
        );
        // Sizes and counts alone on a line, impossible dates, and dates without a time are not
        // timestamps.
        assert!(utc_times("1234\n42 files\n2026-13-40T03:00:00Z\n2026-11-29\n").is_empty());
    }

    #[test]
    fn a_zone_less_time_is_read_in_the_given_zone() {
        // rclone lsl on a hub at UTC+2: its 05:00:12 is 03:00:12 UTC.
        let plus_two = FixedOffset::east_opt(2 * 3600).unwrap();
        let lsl = "     1234 2026-11-29 05:00:12.000000000 daily/fleet.tar\n";
        assert_eq!(
            timestamps(lsl, &plus_two),
            Timestamps {
                times: vec![t("2026-11-29T03:00:12Z")],
                nonexistent: vec![]
            }
        );
        let minus_five = FixedOffset::west_opt(5 * 3600).unwrap();
        assert_eq!(
            timestamps("2026-11-28T22:00:12", &minus_five).times,
            vec![t("2026-11-29T03:00:12Z")]
        );
        // A time that says its zone means that instant whatever the local zone.
        for text in [
            "2026-11-29T03:00:12Z",
            "2026-11-29T04:00:12+01:00",
            "2026-11-29 03:00:12z",
        ] {
            assert_eq!(
                timestamps(text, &plus_two).times,
                vec![t("2026-11-29T03:00:12Z")],
                "{text}"
            );
        }
        // So does an epoch.
        assert_eq!(
            timestamps("1795921212", &plus_two).times,
            vec![t("2026-11-29T03:00:12Z")]
        );
    }

    #[test]
    fn a_date_time_missing_from_local_time_is_named_in_the_note() {
        let parsed = Timestamps {
            times: vec![],
            nonexistent: vec![
                "2025-03-30T02:30:00".parse().unwrap(),
                "2025-03-30T02:45:00".parse().unwrap(),
            ],
        };
        assert_eq!(
            parsed.gap_note().as_deref(),
            Some(
                "2 zone-less timestamp(s) that do not exist in local time (a daylight-saving \
                 gap) ignored, e.g. 2025-03-30 02:30:00"
            )
        );
        assert_eq!(Timestamps::default().gap_note(), None);
    }

    #[test]
    fn a_bare_epoch_has_exactly_ten_digits() {
        // 2001-09-09T01:46:40Z, the first ten-digit second, and the last one, in 2286.
        assert_eq!(utc_times("1000000000"), vec![t("2001-09-09T01:46:40Z")]);
        assert_eq!(utc_times("9999999999"), vec![t("2286-11-20T17:46:39Z")]);
        // Nine digits would be 1973 to 2001, eleven up to 5138: a size, not a date.
        assert!(utc_times("999999999\n123456789\n10000000000\n").is_empty());
    }

    #[test]
    fn stderr_keeps_no_argument_of_the_command() {
        let argv: Vec<String> = [
            "rclone",
            "lsl",
            "--token=s3cr3tvalue",
            "gdrive:fleet-backups/daily",
        ]
        .map(String::from)
        .to_vec();
        let line = "Failed to lsl: gdrive:fleet-backups/daily: token s3cr3tvalue refused for section \"gdrive\"";
        let scrubbed = scrub_arguments(line, &argv);
        for secret in ["s3cr3tvalue", "gdrive", "fleet-backups", "daily"] {
            assert!(!scrubbed.contains(secret), "{scrubbed}");
        }
        assert!(scrubbed.starts_with("Failed to lsl: "), "{scrubbed}");
    }

    #[test]
    fn ages_drop_a_zero_unit() {
        assert_eq!(human_age(172_800), "2 d");
        assert_eq!(human_age(93_600), "1 d 2 h");
        assert_eq!(human_age(7_200), "2 h");
    }
}

//! Backup freshness (C4): the latest backup's time from a local folder (its newest file) or from
//! a command's output (e.g. an rclone listing; the newest timestamp printed counts), with a
//! deadline. Its age is banded by the rules file's `backups` thresholds.
//!
//! Reasons name the folder, or only the program of a command: its other arguments may carry a
//! remote's name or a token.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use chrono::{DateTime, FixedOffset, NaiveDate, TimeDelta, TimeZone, Utc};
use fleetdash_model::{Asc, Backups, Band, Probe, RulesView, human_age, seconds_since};
use regex::Regex;

use super::systems::command::run_argv;
use super::{Collector, SectionData, SectionName};
use crate::config::{BackupSource, BackupsConfig, Config, Rules};
use crate::net::ProbeFailure;

/// A folder walk reads at most this many entries, so a huge tree costs a bounded pass.
pub const MAX_DIR_ENTRIES: usize = 100_000;

/// A timestamp further in the future than this is not believed: one bogus date would otherwise
/// keep the backup green for ever. An hour covers clocks that disagree.
const FUTURE_SKEW: TimeDelta = TimeDelta::hours(1);

pub struct BackupsCollector {
    backups: BackupsConfig,
    rules: RulesView,
    /// The rules file's name, cited in reasons.
    rules_file: String,
    cadence: Duration,
}

impl BackupsCollector {
    pub fn new(config: &Config, rules: &Rules) -> Option<Self> {
        Some(BackupsCollector {
            backups: config.backups.clone()?,
            rules: rules.view(),
            rules_file: rules.path.file_name().map_or_else(
                || rules.path.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            ),
            cadence: config.cadence.backups,
        })
    }

    pub async fn check(&self) -> Backups {
        let checked_at = Utc::now();
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
            Utc::now(),
        )
    }
}

#[async_trait]
impl Collector for BackupsCollector {
    fn section(&self) -> SectionName {
        SectionName::Backups
    }

    fn cadence(&self) -> Duration {
        self.cadence
    }

    async fn collect(&self) -> SectionData {
        SectionData::Backups(self.check().await)
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

/// Turns what the source found into the section. `checked_at` stamps it; `now` judges the age.
pub fn judge(
    name: &str,
    found: Result<Found, ProbeFailure>,
    rules: &RulesView,
    rules_file: &str,
    checked_at: DateTime<Utc>,
    now: DateTime<Utc>,
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
    let (believed, future): (Vec<_>, Vec<_>) =
        found.times.iter().partition(|t| **t <= now + FUTURE_SKEW);
    let mut notes: Vec<String> = found.note.into_iter().collect();
    if !future.is_empty() {
        notes.push(format!(
            "{} timestamp(s) in the future ignored",
            future.len()
        ));
    }
    let Some(latest) = believed.into_iter().max() else {
        let mut reason = found.empty;
        for n in &notes {
            reason.push_str(&format!("; {n}"));
        }
        return failed(ProbeFailure::new(Asc::FAILED_PRECONDITION, reason));
    };
    let age_s = seconds_since(latest, now);
    let band = Band::for_backup_age(age_s, rules);
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

/// The modification times of the regular files under `dir`, on a blocking thread, within
/// `timeout` (a hung network mount must not hang the pass).
async fn newest_in_dir(dir: &Path, timeout: Duration) -> Result<Found, ProbeFailure> {
    let owned = dir.to_path_buf();
    let walk = tokio::task::spawn_blocking(move || walk_dir(&owned, MAX_DIR_ENTRIES));
    match tokio::time::timeout(timeout, walk).await {
        Ok(Ok(found)) => found,
        Ok(Err(e)) => Err(ProbeFailure::new(
            Asc::INTERNAL_ERROR,
            format!("reading {} failed: {e}", dir.display()),
        )),
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

/// Walks `dir` depth first over at most `max_entries` entries. Symbolic links are not followed:
/// a link out of the folder is not a backup in it.
pub fn walk_dir(dir: &Path, max_entries: usize) -> Result<Found, ProbeFailure> {
    let mut found = Found {
        empty: format!("no backup files in {}", dir.display()),
        ..Found::default()
    };
    let mut seen = 0usize;
    let mut stack: Vec<PathBuf> = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
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
            let kind = entry.file_type().map_err(|e| unreadable(dir, &path, &e))?;
            if kind.is_dir() {
                stack.push(path);
            } else if kind.is_file() {
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
    Ok(Found {
        times: timestamps(&out.stdout),
        note: None,
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

/// Every timestamp in `text`: RFC 3339 / ISO 8601 date-times with `T` or a space, optional
/// fraction and zone (none means UTC), and lines that are a bare Unix epoch in seconds.
pub fn timestamps(text: &str) -> Vec<DateTime<Utc>> {
    static DATE_TIME: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(
            r"(?:^|[^0-9])(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9})\d*)?(Z|z|[+-]\d{2}(?::?\d{2})?)?",
        )
        .expect("valid regex")
    });
    // Nine to eleven digits: 2001 to 5138, so a size or a count on its own line is not a date.
    static EPOCH: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"^\d{9,11}$").expect("valid regex"));
    let mut out: Vec<DateTime<Utc>> = DATE_TIME
        .captures_iter(text)
        .filter_map(|c| {
            let n = |i: usize| c.get(i).and_then(|m| m.as_str().parse::<u32>().ok());
            let nanos = c.get(7).map_or(Some(0), |f| {
                format!("{:0<9}", f.as_str()).parse::<u32>().ok()
            })?;
            let naive = NaiveDate::from_ymd_opt(i32::try_from(n(1)?).ok()?, n(2)?, n(3)?)?
                .and_hms_nano_opt(n(4)?, n(5)?, n(6)?, nanos)?;
            let offset = match c.get(8).map(|m| m.as_str()) {
                None | Some("Z" | "z") => FixedOffset::east_opt(0)?,
                Some(zone) => zone_offset(zone)?,
            };
            Some(offset.from_local_datetime(&naive).single()?.to_utc())
        })
        .collect();
    out.extend(
        text.lines()
            .map(str::trim)
            .filter(|l| EPOCH.is_match(l))
            .filter_map(|l| DateTime::from_timestamp(l.parse().ok()?, 0)),
    );
    out
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

    #[test]
    fn finds_every_timestamp_shape() {
        let lsl = "     1234 2026-11-29 03:00:12.000000000 daily/fleet.tar\n   99 2026-11-27 03:00:01.5 old.tar\n";
        assert_eq!(
            timestamps(lsl),
            vec![t("2026-11-29T03:00:12Z"), t("2026-11-27T03:00:01.5Z")]
        );
        let lsjson =
            r#"[{"Path":"a.tar","Size":1,"ModTime":"2026-11-29T03:00:12.123Z","IsDir":false}]"#;
        assert_eq!(timestamps(lsjson), vec![t("2026-11-29T03:00:12.123Z")]);
        assert_eq!(
            timestamps(
                "at 2026-11-29T04:00:12+01:00 and 2026-11-29 02:00:12-0100 and 2026-11-29T03:00:12+01"
            ),
            vec![
                t("2026-11-29T03:00:12Z"),
                t("2026-11-29T03:00:12Z"),
                t("2026-11-29T02:00:12Z")
            ]
        );
        assert_eq!(timestamps("1795921212\n"), vec![t("2026-11-29T03:00:12Z")]);
        assert_eq!(
            timestamps("fleet_2026-11-29T03:00:12Z.tar"),
            vec![t("2026-11-29T03:00:12Z")]
        );
        // Sizes and counts alone on a line, impossible dates, and dates without a time are not
        // timestamps.
        assert!(timestamps("1234\n42 files\n2026-13-40T03:00:00Z\n2026-11-29\n").is_empty());
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

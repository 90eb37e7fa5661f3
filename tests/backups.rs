//! Backup freshness against real folders (nested files with set modification times, empty,
//! missing) and real commands (shell scripts printing rclone-like listings, hanging, failing,
//! printing no timestamp), banded by the real rules file; then `fleetdash collect` end to end,
//! including zone-less listings read in the local time zone its `TZ` sets.

use crate::support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Local, TimeDelta, Utc};
use fleetdash::clock::Clocked;
use fleetdash::collect::backups::{self, BackupsCollector, Found};
use fleetdash::config::{Config, Rules};
use fleetdash_model::{Asc, Backups, Band, Probe};
use support::{Scratch, assert_success};

const HOUR: i64 = 3600;

/// Whole seconds, so a time survives the round trip through a file's mtime on any filesystem.
fn ago(secs: i64) -> DateTime<Utc> {
    let t = Utc::now() - TimeDelta::seconds(secs);
    DateTime::from_timestamp(t.timestamp(), 0).unwrap()
}

fn file_at(path: &Path, mtime: DateTime<Utc>) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::File::create(path)
        .unwrap()
        .set_modified(mtime.into())
        .unwrap();
}

fn script(scratch: &Scratch, name: &str, body: &str) -> PathBuf {
    let path = scratch.path().join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// The collector for a `[backups]` table, with the real rules file.
fn collector(scratch: &Scratch, table: &str) -> BackupsCollector {
    let config = scratch.config(&format!("[backups]\nname = \"gdrive\"\n{table}"));
    let (config, rules) = Config::load(&config).unwrap();
    BackupsCollector::new(&config, &rules).unwrap()
}

async fn check_dir(scratch: &Scratch, dir: &Path) -> Backups {
    collector(scratch, &format!("dir = \"{}\"\n", dir.display()))
        .check(&support::clock())
        .await
}

async fn check_command(scratch: &Scratch, argv: &[&str], timeout: &str) -> Backups {
    let argv: Vec<String> = argv.iter().map(|a| format!("{a:?}")).collect();
    collector(
        scratch,
        &format!("command = [{}]\ntimeout = \"{timeout}\"\n", argv.join(", ")),
    )
    .check(&support::clock())
    .await
}

fn assert_failed(b: &Backups, asc: Asc, reason: &str) {
    assert_eq!(b.gdrive_latest, Probe::Error(reason.to_string()), "{b:?}");
    assert_eq!(b.age_h, Probe::Error(reason.to_string()));
    assert_eq!(b.reason.as_deref(), Some(reason));
    assert_eq!((b.band, &b.status, b.stale), (Band::Red, &asc, true));
}

#[tokio::test]
async fn the_newest_file_anywhere_under_the_folder_counts() {
    let scratch = Scratch::new();
    let dir = scratch.path().join("backups");
    let newest = ago(2 * HOUR);
    file_at(&dir.join("top.tar"), ago(30 * HOUR));
    file_at(&dir.join("2026/11/deep.tar"), newest);
    file_at(&dir.join("2026/10/old.tar"), ago(40 * 24 * HOUR));
    // A symlink is not followed: its target is newer but lives outside the folder.
    let outside = scratch.path().join("elsewhere.tar");
    file_at(&outside, ago(60));
    std::os::unix::fs::symlink(&outside, dir.join("link.tar")).unwrap();

    let b = check_dir(&scratch, &dir).await;
    assert_eq!(b.name, "gdrive");
    assert_eq!(b.gdrive_latest, Probe::Value(newest), "{b:?}");
    assert_eq!(b.age_h, Probe::Value(2.0));
    assert_eq!(
        (b.band, &b.status, b.stale),
        (Band::Green, &Asc::SUCCESS, false)
    );
    assert_eq!(
        b.reason.as_deref(),
        Some("latest backup 2 h old (amber at 1 d 2 h, rules.yaml backups.amber_after_seconds)")
    );
}

#[tokio::test]
async fn green_amber_red_by_the_rules_thresholds() {
    let scratch = Scratch::new();
    let cases = [
        (
            25 * HOUR,
            Band::Green,
            Asc::SUCCESS,
            25.0,
            "latest backup 1 d 1 h old (amber at 1 d 2 h, rules.yaml backups.amber_after_seconds)",
        ),
        (
            27 * HOUR,
            Band::Amber,
            Asc::SUCCESS_WITH_WARNINGS,
            27.0,
            "latest backup 1 d 3 h old (amber at 1 d 2 h, rules.yaml backups.amber_after_seconds; red at 2 d, rules.yaml backups.red_after_seconds)",
        ),
        (
            51 * HOUR,
            Band::Red,
            Asc::TIMEOUT,
            51.0,
            "latest backup 2 d 3 h old (red at 2 d, rules.yaml backups.red_after_seconds)",
        ),
    ];
    for (i, (age, band, asc, age_h, reason)) in cases.into_iter().enumerate() {
        let dir = scratch.path().join(format!("b{i}"));
        file_at(&dir.join("x.tar"), ago(age));
        let b = check_dir(&scratch, &dir).await;
        assert_eq!((b.band, &b.status), (band, &asc), "{b:?}");
        assert_eq!(b.age_h, Probe::Value(age_h));
        assert_eq!(b.reason.as_deref(), Some(reason));
        assert!(!b.stale);
    }
}

#[test]
fn bands_change_at_the_exact_thresholds_of_the_real_rules_file() {
    let rules = Rules::parse(Path::new("rules.yaml"), support::DEFAULT_RULES).unwrap();
    let (amber, red) = (
        rules.backup_amber_after.seconds,
        rules.backup_red_after.seconds,
    );
    let now = Utc::now();
    let band_at = |age: u64| {
        let found = Found {
            times: vec![now - TimeDelta::seconds(age as i64)],
            ..Found::default()
        };
        backups::judge(
            "g",
            Ok(found),
            &rules.view(),
            "rules.yaml",
            now,
            &Clocked::wall_only(now),
        )
        .band
    };
    assert_eq!(band_at(amber - 1), Band::Green);
    assert_eq!(band_at(amber), Band::Amber);
    assert_eq!(band_at(red - 1), Band::Amber);
    assert_eq!(band_at(red), Band::Red);
}

#[tokio::test]
async fn an_empty_folder_is_red_and_says_so() {
    let scratch = Scratch::new();
    let dir = scratch.path().join("empty");
    // Subfolders are not backups.
    std::fs::create_dir_all(dir.join("nested/deeper")).unwrap();
    let b = check_dir(&scratch, &dir).await;
    let reason = format!("no backup files in {}", dir.display());
    assert_failed(&b, Asc::FAILED_PRECONDITION, &reason);
}

#[tokio::test]
async fn a_missing_folder_is_red_naming_it() {
    let scratch = Scratch::new();
    let dir = scratch.path().join("not-mounted");
    let b = check_dir(&scratch, &dir).await;
    let reason = format!(
        "cannot read the backups folder {}: No such file or directory (os error 2)",
        dir.display()
    );
    assert_failed(&b, Asc::NOT_FOUND, &reason);
}

#[test]
fn a_huge_folder_is_read_up_to_the_bound_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..10 {
        file_at(&dir.path().join(format!("{i}.tar")), ago(HOUR));
    }
    let found = backups::walk_dir(dir.path(), 4).unwrap();
    assert_eq!(found.times.len(), 4);
    assert_eq!(
        found.note,
        Some(format!(
            "read only the first 4 entries of {}; a newer file may be among the rest",
            dir.path().display()
        ))
    );
    assert_eq!(backups::walk_dir(dir.path(), 10).unwrap().note, None);
    assert_eq!(backups::MAX_DIR_ENTRIES, 100_000);
}

#[tokio::test]
async fn an_rclone_lsl_listing_counts_its_newest_line() {
    let scratch = Scratch::new();
    let newest = ago(3 * HOUR);
    // rclone lsl prints the local time, without a zone (this test process's local time is the
    // collector's: they are one process).
    let fmt = |t: DateTime<Utc>| {
        t.with_timezone(&Local)
            .format("%Y-%m-%d %H:%M:%S%.9f")
            .to_string()
    };
    let lsl = script(
        &scratch,
        "lsl.sh",
        &format!(
            "cat <<'EOF'\n   1048576 {} fleet-old.tar.zst\n  2097152 {} fleet-new.tar.zst\n      512 {} notes.txt\nEOF",
            fmt(ago(27 * HOUR)),
            fmt(newest),
            fmt(ago(50 * HOUR)),
        ),
    );
    let b = check_command(
        &scratch,
        &[lsl.to_str().unwrap(), "lsl", "gdrive:fleet"],
        "10s",
    )
    .await;
    assert_eq!(b.gdrive_latest, Probe::Value(newest), "{b:?}");
    assert_eq!((b.band, b.stale), (Band::Green, false));
    assert_eq!(b.age_h, Probe::Value(3.0));
}

#[tokio::test]
async fn fifos_and_sockets_in_the_folder_are_skipped_without_blocking() {
    let scratch = Scratch::new();
    let dir = scratch.path().join("backups");
    let newest = ago(2 * HOUR);
    file_at(&dir.join("fleet.tar"), newest);
    // Opening a FIFO nobody writes to waits for ever; the walk must not even try. Both are
    // newer than the backup: they must not count.
    mkfifo(&dir.join("pipe"));
    mkfifo(&dir.join("nested/pipe"));
    let _socket = std::os::unix::net::UnixListener::bind(dir.join("sock")).unwrap();
    // A walk that opened a FIFO would wait for a writer until its deadline and fail: the
    // newest backup found proves it never did.
    let b = check_dir(&scratch, &dir).await;
    assert_eq!(b.gdrive_latest, Probe::Value(newest), "{b:?}");
    assert_eq!((b.band, b.stale), (Band::Green, false));

    // A FIFO configured as the folder: refused at once, named.
    let fifo = scratch.path().join("fifo-folder");
    mkfifo(&fifo);
    let b = check_dir(&scratch, &fifo).await;
    assert_failed(
        &b,
        Asc::DEPENDENCY_UNAVAILABLE,
        &format!(
            "cannot read the backups folder {}: Not a directory (os error 20)",
            fifo.display()
        ),
    );
}

fn mkfifo(path: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}

#[tokio::test]
async fn an_rclone_lsjson_listing_and_a_bare_epoch_both_work() {
    let scratch = Scratch::new();
    let newest = ago(28 * HOUR);
    let iso = |t: DateTime<Utc>| t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string();
    let lsjson = script(
        &scratch,
        "lsjson.sh",
        &format!(
            "printf '%s\\n' '[{{\"Path\":\"a.tar\",\"Size\":10,\"ModTime\":\"{}\",\"IsDir\":false}},' '{{\"Path\":\"b.tar\",\"Size\":10,\"ModTime\":\"{}\",\"IsDir\":false}}]'",
            iso(ago(60 * HOUR)),
            iso(newest),
        ),
    );
    let b = check_command(&scratch, &[lsjson.to_str().unwrap()], "10s").await;
    assert_eq!(b.gdrive_latest, Probe::Value(newest), "{b:?}");
    assert_eq!(
        (b.band, &b.status),
        (Band::Amber, &Asc::SUCCESS_WITH_WARNINGS)
    );

    // One instant for the script and the assertion: two calls to ago() may straddle a second.
    let old = ago(50 * HOUR);
    let epoch = script(&scratch, "epoch.sh", &format!("echo {}", old.timestamp()));
    let b = check_command(&scratch, &[epoch.to_str().unwrap()], "10s").await;
    assert_eq!(b.gdrive_latest, Probe::Value(old), "{b:?}");
    assert_eq!((b.band, &b.status), (Band::Red, &Asc::TIMEOUT));
}

#[tokio::test]
async fn a_hanging_command_times_out() {
    let scratch = Scratch::new();
    let pid_file = scratch.path().join("hang.pid");
    let hang = script(
        &scratch,
        "hang.sh",
        &format!("echo $$ > '{}'\nexec sleep 30", pid_file.display()),
    );
    let b = check_command(&scratch, &[hang.to_str().unwrap()], "1s").await;
    assert_failed(
        &b,
        Asc::TIMEOUT,
        &format!("{}: no answer within 1s", hang.display()),
    );
    // Ended by the deadline, not left to finish: the 30 s sleep was killed (SIGKILL lands at
    // once, the kernel's teardown a moment later).
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let deadline = std::time::Instant::now() + support::HANG_BUDGET;
    while support::procs::proc_info(pid).is_some() {
        assert!(
            std::time::Instant::now() < deadline,
            "the hung command was left running"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[tokio::test]
async fn a_failing_command_says_its_first_error_line_without_its_arguments() {
    let scratch = Scratch::new();
    let fail = script(
        &scratch,
        "fail.sh",
        "echo 'Failed to lsl: secret-remote:fleet-backups: directory not found' >&2\necho more >&2\nexit 3",
    );
    let b = check_command(
        &scratch,
        &[fail.to_str().unwrap(), "lsl", "secret-remote:fleet-backups"],
        "10s",
    )
    .await;
    assert_failed(
        &b,
        Asc::DEPENDENCY_UNAVAILABLE,
        &format!(
            "{} exited with code 3: Failed to lsl: …: directory not found",
            fail.display()
        ),
    );
}

#[tokio::test]
async fn output_without_a_timestamp_or_a_missing_program_is_red() {
    let scratch = Scratch::new();
    let quiet = script(
        &scratch,
        "quiet.sh",
        "echo 'no files'\necho 42\necho 2026-11-29",
    );
    let b = check_command(&scratch, &[quiet.to_str().unwrap()], "10s").await;
    assert_failed(
        &b,
        Asc::FAILED_PRECONDITION,
        &format!("no timestamp in the output of {}", quiet.display()),
    );

    let b = check_command(&scratch, &["/nonexistent/rclone", "lsl", "remote:x"], "10s").await;
    assert_failed(
        &b,
        Asc::FAILED_PRECONDITION,
        "cannot run /nonexistent/rclone: No such file or directory (os error 2)",
    );
}

/// End to end: `[backups]` through `fleetdash collect` into status.json, from a folder, then
/// from a failing command whose arguments must not reach the file.
#[test]
fn collect_writes_the_backups_object() {
    let scratch = Scratch::new();
    let dir = scratch.path().join("backups");
    let newest = ago(27 * HOUR);
    file_at(&dir.join("daily/fleet.tar"), newest);
    let config = scratch.config(&format!(
        "[backups]\nname = \"gdrive\"\ndir = \"{}\"\n",
        dir.display()
    ));
    let out = scratch.collect(&config);
    assert_success(&out);
    let json: serde_json::Value = serde_json::from_str(&scratch.snapshot_text()).unwrap();
    let b = &json["backups"];
    assert_eq!(b["name"], "gdrive");
    assert_eq!(
        b["gdrive_latest"]
            .as_str()
            .unwrap()
            .parse::<DateTime<Utc>>()
            .unwrap(),
        newest
    );
    assert_eq!(b["age_h"], 27.0);
    assert_eq!(b["band"], "amber");
    assert_eq!(b["status"]["code"], 2001);
    assert_eq!(b["stale"], false);
    assert!(
        b["reason"]
            .as_str()
            .unwrap()
            .starts_with("latest backup 1 d 3 h old (amber at 1 d 2 h, rules.yaml")
    );
    assert!(b["checked_at"].is_string());
    assert_eq!(json["sections"]["backups"]["configured"], true);

    let fail = script(
        &scratch,
        "fail.sh",
        "echo 'token tok-9Zq81 refused for remote planted-remote' >&2\nexit 1",
    );
    let config = scratch.config(&format!(
        "[backups]\nname = \"gdrive\"\ncommand = [\"{}\", \"--token=tok-9Zq81\", \"planted-remote:backups\"]\n",
        fail.display()
    ));
    let out = scratch.collect(&config);
    assert_success(&out);
    let text = scratch.snapshot_text();
    assert!(
        !text.contains("tok-9Zq81") && !text.contains("planted-remote"),
        "{text}"
    );
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let b = &json["backups"];
    assert_eq!(b["band"], "red");
    assert_eq!(b["stale"], true);
    assert!(
        b["gdrive_latest"].as_str().unwrap().starts_with(&format!(
            "error: {} exited with code 1: token … refused",
            fail.display()
        )),
        "{b}"
    );
}

/// A backup command whose first error line holds glued secrets (issue 21), a few to a line,
/// then one per shape across the 200-character cut of that line: through `fleetdash collect`,
/// one run per line, nothing of them in any file it writes or in its log, and the line was
/// quoted, redacted.
#[test]
fn glued_secrets_in_a_backup_commands_error_reach_no_file_and_no_log() {
    use support::secrets::{find_secret, glued_across_a_cut, glued_packed};
    let scratch = Scratch::new();
    // The line is read from a file so that no shell quoting touches it.
    let said = scratch.path().join("said.txt");
    let fail = script(
        &scratch,
        "fail.sh",
        &format!("cat '{}' >&2\nexit 1", said.display()),
    );
    let config = scratch.config(&format!(
        "[backups]\nname = \"gdrive\"\ncommand = [\"{}\"]\n",
        fail.display()
    ));
    let lines = [glued_packed(180), glued_across_a_cut(200, 0)].concat();
    for line in &lines {
        std::fs::write(&said, format!("{line}\nsecond line\n")).unwrap();
        let out = support::fleetdash()
            .args(["collect", "--config"])
            .arg(&config)
            .env("FLEETDASH_LOG", "debug")
            .output()
            .unwrap();
        let log = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{log}");
        if let Some(found) = find_secret(&log) {
            panic!("{found} leaked into the log for {line:?}:\n{log}");
        }
        for path in ["out", "state"]
            .iter()
            .flat_map(|d| support::files_under(&scratch.path().join(d)))
        {
            let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
            if let Some(found) = find_secret(&text) {
                panic!(
                    "{found} leaked into {} for {line:?}:\n{text}",
                    path.display()
                );
            }
        }
        let json: serde_json::Value = serde_json::from_str(&scratch.snapshot_text()).unwrap();
        let reason = json["backups"]["reason"].as_str().unwrap_or_default();
        assert!(
            reason.contains("exited with code 1: ") && reason.contains("[redacted]"),
            "{line:?}: {reason}"
        );
    }
}

/// `fleetdash collect` with `TZ` set, a `[backups]` command printing `lines`: the backups object.
fn collect_in_zone(scratch: &Scratch, tz: &str, lines: &[String]) -> serde_json::Value {
    let lsl = script(
        scratch,
        "lsl.sh",
        &format!("cat <<'EOF'\n{}\nEOF", lines.join("\n")),
    );
    let config = scratch.config(&format!(
        "[backups]\nname = \"gdrive\"\ncommand = [\"{}\", \"lsl\", \"gdrive:fleet\"]\n",
        lsl.display()
    ));
    let out = support::fleetdash()
        .env("TZ", tz)
        .args(["collect", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert_success(&out);
    let json: serde_json::Value = serde_json::from_str(&scratch.snapshot_text()).unwrap();
    json["backups"].clone()
}

fn latest(b: &serde_json::Value) -> DateTime<Utc> {
    b["gdrive_latest"]
        .as_str()
        .unwrap_or_else(|| panic!("{b}"))
        .parse()
        .unwrap()
}

/// rclone lsl prints the hub's local time without a zone: on a hub at UTC+2, a backup made an
/// hour ago is printed an hour ahead of UTC's clock. Read as UTC it would look an hour in the
/// future (age 0, green for the wrong reason); read in local time it is an hour old.
#[test]
fn collect_reads_a_zone_less_listing_in_the_local_time_zone() {
    let scratch = Scratch::new();
    let backup = ago(HOUR);
    let printed = (backup + TimeDelta::hours(2))
        .naive_utc()
        .format("%Y-%m-%d %H:%M:%S%.9f");
    // Etc/GMT-2 is UTC+2 (POSIX signs are reversed).
    let b = collect_in_zone(
        &scratch,
        "Etc/GMT-2",
        &[format!("   2097152 {printed} fleet-new.tar.zst")],
    );
    assert_eq!(latest(&b), backup, "{b}");
    assert_eq!(b["age_h"], 1.0, "{b}");
    assert_eq!((&b["band"], &b["stale"]), (&"green".into(), &false.into()));
    assert_eq!(
        b["reason"],
        "latest backup 1 h old (amber at 1 d 2 h, rules.yaml backups.amber_after_seconds)"
    );
}

/// Where the clocks change (Central European rules, given as a POSIX TZ string so no zone files
/// are needed): 02:30 on 2025-03-30 never happened, so it is left out with a note; 02:30 on
/// 2025-10-26 happened twice, and counts at the earlier one (00:30 UTC, summer time).
#[test]
fn collect_takes_the_earlier_of_a_repeated_local_time_and_notes_a_missing_one() {
    let scratch = Scratch::new();
    let b = collect_in_zone(
        &scratch,
        "CET-1CEST,M3.5.0,M10.5.0/3",
        &[
            "      512 2025-03-30 02:30:00.000000000 spring.tar".to_string(),
            "      512 2025-10-26 02:30:00.000000000 autumn.tar".to_string(),
            "      512 2025-10-01 12:00:00.000000000 older.tar".to_string(),
        ],
    );
    assert_eq!(
        latest(&b),
        "2025-10-26T00:30:00Z".parse::<DateTime<Utc>>().unwrap()
    );
    assert_eq!(b["band"], "red");
    let reason = b["reason"].as_str().unwrap();
    assert!(
        reason.ends_with(
            "; 1 zone-less timestamp(s) that do not exist in local time (a daylight-saving gap) \
             ignored, e.g. 2025-03-30 02:30:00"
        ),
        "{reason}"
    );

    // Nothing but a missing time: no backup, and the note says why.
    let b = collect_in_zone(
        &scratch,
        "CET-1CEST,M3.5.0,M10.5.0/3",
        &["      512 2025-03-30 02:30:00.000000000 spring.tar".to_string()],
    );
    assert_eq!(b["stale"], true);
    assert!(
        b["reason"]
            .as_str()
            .unwrap()
            .ends_with("(a daylight-saving gap) ignored, e.g. 2025-03-30 02:30:00"),
        "{b}"
    );
}

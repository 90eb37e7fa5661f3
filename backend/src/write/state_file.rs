//! fleetdash's own state files, loaded under one policy (issue 20): the 24 h history, the
//! transitions log, the alert engine's state and the silences are versioned JSON files in the
//! state directory, and the alert outbox a SQLite file beside them.
//!
//! - A missing file is a fresh start: nothing was lost.
//! - A corrupt file, or one of another layout, is moved aside to
//!   `<file>.corrupt-<UTC stamp>` ([`move_aside`]), said at error level with both paths and
//!   why, and a fresh one takes its place. It is never silently reset, and never deleted:
//!   [`set_aside_in`] lists the copies for the page, which says so until the operator
//!   removes them.
//! - A file that is there but cannot be read (permissions, an I/O error) is left as it is,
//!   and said: it may well be fine.
//! - Of each file's copies, only the newest `set_aside.copies_kept` (rules file) are kept
//!   ([`prune_set_aside`], at each snapshot write): a file that keeps breaking leaves a few
//!   copies to look at, not one per failure for ever (issue 33).
//!
//! Blocking (reads, renames): call from a blocking thread.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use chrono::{DateTime, NaiveDateTime, Utc};
use fleetdash_model::SetAside;
use serde::de::DeserializeOwned;

/// What a copy's name carries after the file's own name.
const ASIDE_MARK: &str = ".corrupt-";
const STAMP: &str = "%Y%m%dT%H%M%SZ";
/// A SQLite file's companions, moved with it and never listed on their own.
const COMPANIONS: [&str; 2] = ["-wal", "-shm"];

/// A versioned JSON state file's contents.
pub trait StateFile: DeserializeOwned {
    /// What the file is called in messages ("history", "alert engine state").
    const WHAT: &'static str;

    /// Why these contents are not of this build's layout, if they are not.
    fn layout_problem(&self) -> Option<String>;
}

/// What loading a state file found.
#[derive(Debug)]
pub enum Loaded<T> {
    /// No file: a fresh start.
    Missing,
    Found(T),
    /// The file was corrupt or of another layout: it now lies at `aside`; a fresh start.
    SetAside {
        aside: PathBuf,
        problem: String,
    },
    /// The file is there but cannot be read, or was corrupt and could not be moved aside: it
    /// is left as it is. The error names it.
    Unreadable(anyhow::Error),
}

impl<T> Loaded<T> {
    /// The contents, or `fresh` for every case but [`Loaded::Found`].
    pub fn or_fresh(self, fresh: impl FnOnce() -> T) -> T {
        match self {
            Loaded::Found(t) => t,
            _ => fresh(),
        }
    }
}

/// Loads the state file at `path` under the policy above; `now` stamps a copy moved aside.
pub fn load<T: StateFile>(path: &Path, now: DateTime<Utc>) -> Loaded<T> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Loaded::Missing,
        Err(e) => {
            let e = anyhow::Error::new(e).context(format!(
                "cannot read the {} file {}",
                T::WHAT,
                path.display()
            ));
            tracing::warn!(file = %path.display(), "{} unreadable, left as it is: {e:#}", T::WHAT);
            return Loaded::Unreadable(e);
        }
    };
    let problem = match serde_json::from_slice::<T>(&bytes) {
        Ok(t) => match t.layout_problem() {
            None => return Loaded::Found(t),
            Some(problem) => problem,
        },
        Err(e) => format!("not a {} file: {e}", T::WHAT),
    };
    match move_aside(path, now) {
        Ok(aside) => {
            tracing::error!(
                file = %path.display(),
                moved_to = %aside.display(),
                %problem,
                "{} invalid: moved aside, a fresh one takes its place",
                T::WHAT
            );
            Loaded::SetAside { aside, problem }
        }
        Err(e) => {
            let e = e.context(format!("{}: {problem}", path.display()));
            tracing::error!(file = %path.display(), "{} invalid and left as it is: {e:#}", T::WHAT);
            Loaded::Unreadable(e)
        }
    }
}

/// Moves `path` (and its `-wal`, `-shm`, if any) to `<path>.corrupt-<UTC stamp of now>`, never
/// over an existing file. The `-wal` goes first: a fresh SQLite file must never meet the old
/// file's log, which SQLite would replay into it. Returns where the file went.
pub fn move_aside(path: &Path, now: DateTime<Utc>) -> Result<PathBuf> {
    let stamp = now.format(STAMP);
    let with = |p: &Path, suffix: &str| {
        let mut s = p.as_os_str().to_owned();
        s.push(suffix);
        PathBuf::from(s)
    };
    let taken = |p: &Path| {
        std::iter::once("")
            .chain(COMPANIONS)
            .any(|s| with(p, s).symlink_metadata().is_ok())
    };
    let mut aside = with(path, &format!("{ASIDE_MARK}{stamp}"));
    let mut n = 1;
    while taken(&aside) {
        aside = with(path, &format!("{ASIDE_MARK}{stamp}-{n}"));
        n += 1;
    }
    for suffix in COMPANIONS.into_iter().chain([""]) {
        let from = with(path, suffix);
        if suffix.is_empty() || from.symlink_metadata().is_ok() {
            let to = with(&aside, suffix);
            std::fs::rename(&from, &to).with_context(|| {
                format!(
                    "cannot move it aside: {} -> {}",
                    from.display(),
                    to.display()
                )
            })?;
        }
    }
    Ok(aside)
}

/// Removes, for each state file in `dir`, its copies moved aside beyond the newest `keep` (with
/// their `-wal` and `-shm`), each said at warn level with its path. Returns the copies removed.
/// A folder that cannot be listed removes nothing; a copy that cannot be removed is said and
/// left. Blocking.
pub fn prune_set_aside(dir: &Path, keep: usize) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    // By file: each copy's name, its stamp and its same-second number (`-1`, `-2`, ...).
    let mut by_file: std::collections::BTreeMap<String, Vec<(String, String, u32)>> =
        std::collections::BTreeMap::new();
    for name in entries.filter_map(|e| e.ok()?.file_name().into_string().ok()) {
        let Some((file, tail)) = name.split_once(ASIDE_MARK) else {
            continue;
        };
        if file.is_empty() || COMPANIONS.iter().any(|c| tail.ends_with(c)) {
            continue;
        }
        let (stamp, n) = match tail.split_once('-') {
            Some((stamp, n)) => (stamp.to_string(), n.parse().unwrap_or(u32::MAX)),
            None => (tail.to_string(), 0),
        };
        by_file
            .entry(file.to_string())
            .or_default()
            .push((name, stamp, n));
    }
    let mut removed = Vec::new();
    for (file, mut copies) in by_file {
        // Newest first.
        copies.sort_by(|a, b| (&b.1, b.2).cmp(&(&a.1, a.2)));
        for (name, _, _) in copies.into_iter().skip(keep) {
            let copy = dir.join(&name);
            match std::fs::remove_file(&copy) {
                Ok(()) => {
                    for companion in COMPANIONS {
                        let _ = std::fs::remove_file(dir.join(format!("{name}{companion}")));
                    }
                    tracing::warn!(
                        file = %dir.join(&file).display(),
                        removed = %copy.display(),
                        kept = keep,
                        "state file copy set aside removed: only the newest copies are kept \
                         (set_aside.copies_kept)"
                    );
                    removed.push(copy);
                }
                Err(e) => tracing::warn!(
                    file = %copy.display(),
                    "cannot remove an old state file copy set aside: {e}"
                ),
            }
        }
    }
    removed
}

/// Every copy moved aside in `dir`, by name, as of `now`. A folder that cannot be listed
/// lists nothing (the state files' own loads say what is wrong with it).
pub fn set_aside_in(dir: &Path, now: DateTime<Utc>) -> Vec<SetAside> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<SetAside> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|name| {
            let (file, tail) = name.split_once(ASIDE_MARK)?;
            if file.is_empty() || COMPANIONS.iter().any(|c| tail.ends_with(c)) {
                return None;
            }
            let stamp = tail.get(..16).unwrap_or(tail);
            let at = NaiveDateTime::parse_from_str(stamp, STAMP)
                .ok()
                .map(|t| t.and_utc());
            Some(SetAside {
                file: file.to_string(),
                aside: name.clone(),
                at,
                checked_at: now,
            })
        })
        .collect();
    out.sort_by(|a, b| a.aside.cmp(&b.aside));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Notes {
        version: u32,
        notes: Vec<String>,
    }

    impl StateFile for Notes {
        const WHAT: &'static str = "notes";
        fn layout_problem(&self) -> Option<String> {
            (self.version != 1).then(|| format!("layout version {}, not 1", self.version))
        }
    }

    /// Issue 33: a file that keeps breaking left a copy per failure, for ever. Only the newest
    /// `keep` copies of each file stay (a SQLite copy with its `-wal` and `-shm`); the other
    /// files' copies and the state files themselves are not touched.
    #[test]
    fn only_the_newest_copies_of_each_file_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let keep = 2;
        for name in [
            "history.json",
            "history.json.corrupt-20261128T060000Z",
            "history.json.corrupt-20261129T060000Z",
            "history.json.corrupt-20261130T060000Z",
            "history.json.corrupt-20261130T060000Z-1",
            "acks.json.corrupt-20261101T000000Z",
            "outbox.sqlite.corrupt-20261120T000000Z",
            "outbox.sqlite.corrupt-20261120T000000Z-wal",
            "outbox.sqlite.corrupt-20261120T000000Z-shm",
            "outbox.sqlite.corrupt-20261121T000000Z",
            "outbox.sqlite.corrupt-20261122T000000Z",
        ] {
            std::fs::write(d.join(name), name).unwrap();
        }
        let (removed, logs) = crate::logging::logs_of(|| prune_set_aside(d, keep));
        let mut removed: Vec<String> = removed
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        removed.sort();
        assert_eq!(
            removed,
            [
                "history.json.corrupt-20261128T060000Z",
                "history.json.corrupt-20261129T060000Z",
                "outbox.sqlite.corrupt-20261120T000000Z",
            ]
        );
        assert!(
            logs.contains("history.json.corrupt-20261128T060000Z"),
            "{logs}"
        );
        assert_eq!(
            names(d),
            [
                "acks.json.corrupt-20261101T000000Z",
                "history.json",
                "history.json.corrupt-20261130T060000Z",
                "history.json.corrupt-20261130T060000Z-1",
                "outbox.sqlite.corrupt-20261121T000000Z",
                "outbox.sqlite.corrupt-20261122T000000Z",
            ]
        );
        assert_eq!(set_aside_in(d, at("2026-11-30T07:00:00Z")).len(), 5);
    }

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut out: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        out.sort();
        out
    }

    #[test]
    fn a_missing_file_is_a_fresh_start_and_a_good_one_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notes.json");
        let now = at("2026-11-30T12:00:00Z");
        assert!(matches!(load::<Notes>(&path, now), Loaded::Missing));
        std::fs::write(&path, r#"{"version": 1, "notes": ["a"]}"#).unwrap();
        match load::<Notes>(&path, now) {
            Loaded::Found(n) => assert_eq!(n.notes, ["a"]),
            other => panic!("{other:?}"),
        }
        assert_eq!(names(dir.path()), ["notes.json"]);
        assert!(set_aside_in(dir.path(), now).is_empty());
    }

    #[test]
    fn a_corrupt_file_or_another_layout_is_moved_aside_with_its_time_and_listed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notes.json");
        let now = at("2026-11-30T12:00:00Z");
        std::fs::write(&path, b"{\"version\": 1, \"notes\": [tru").unwrap();
        match load::<Notes>(&path, now) {
            Loaded::SetAside { aside, problem } => {
                assert_eq!(
                    aside,
                    dir.path().join("notes.json.corrupt-20261130T120000Z")
                );
                assert!(problem.starts_with("not a notes file: "), "{problem}");
            }
            other => panic!("{other:?}"),
        }
        // Another layout, in the same second: a second copy, never over the first.
        std::fs::write(&path, r#"{"version": 2, "notes": []}"#).unwrap();
        match load::<Notes>(&path, now) {
            Loaded::SetAside { problem, .. } => {
                assert_eq!(problem, "layout version 2, not 1")
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            names(dir.path()),
            [
                "notes.json.corrupt-20261130T120000Z",
                "notes.json.corrupt-20261130T120000Z-1"
            ]
        );
        // The copies keep their bytes.
        assert_eq!(
            std::fs::read(dir.path().join("notes.json.corrupt-20261130T120000Z-1")).unwrap(),
            br#"{"version": 2, "notes": []}"#
        );
        let later = at("2026-11-30T12:05:00Z");
        let listed = set_aside_in(dir.path(), later);
        assert_eq!(
            listed
                .iter()
                .map(|a| (a.file.as_str(), a.aside.as_str(), a.at, a.checked_at))
                .collect::<Vec<_>>(),
            [
                (
                    "notes.json",
                    "notes.json.corrupt-20261130T120000Z",
                    Some(now),
                    later
                ),
                (
                    "notes.json",
                    "notes.json.corrupt-20261130T120000Z-1",
                    Some(now),
                    later
                ),
            ]
        );
    }

    #[test]
    fn a_sqlite_file_moves_with_its_log_and_only_the_file_is_listed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("outbox.sqlite");
        for suffix in ["", "-wal", "-shm"] {
            std::fs::write(dir.path().join(format!("outbox.sqlite{suffix}")), suffix).unwrap();
        }
        let now = at("2026-11-30T12:00:00Z");
        move_aside(&path, now).unwrap();
        assert_eq!(
            names(dir.path()),
            [
                "outbox.sqlite.corrupt-20261130T120000Z",
                "outbox.sqlite.corrupt-20261130T120000Z-shm",
                "outbox.sqlite.corrupt-20261130T120000Z-wal",
            ]
        );
        let listed = set_aside_in(dir.path(), now);
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].file, "outbox.sqlite");
    }

    #[test]
    fn a_file_that_cannot_be_read_is_left_as_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notes.json");
        // A folder in the file's place: unreadable as a file even for root.
        std::fs::create_dir(&path).unwrap();
        match load::<Notes>(&path, at("2026-11-30T12:00:00Z")) {
            Loaded::Unreadable(e) => {
                assert!(format!("{e:#}").contains("notes.json"), "{e:#}")
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(names(dir.path()), ["notes.json"]);
    }
}

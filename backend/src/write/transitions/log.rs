//! The transitions log on disk: `<state_dir>/transitions.json`, a ring of every band change,
//! and the recent ones `status.json` carries ([`recent`]).
//!
//! The log is a ring ([`Bounds`], the rules' `transitions_log` group): at most `max_entries`,
//! none older than `keep_seconds`, and the file never past `max_file_bytes` (the oldest go
//! first). It is replaced atomically. A corrupt log is
//! moved aside (`write::state_file`) and replaced, starting again from what the previous
//! snapshot carried; an unreadable one is left alone; both are logged, and neither ever fails
//! the snapshot. Every entry passes the
//! redaction gate on its way in.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use chrono::{DateTime, Duration, Utc};
use fleetdash_model::Transition;
use serde::{Deserialize, Serialize};

use crate::config::StateRules;
use crate::redact::RedactionGate;
use crate::write::{atomic, state_file};

pub const FILE_NAME: &str = "transitions.json";

/// `status.json` carries the transitions of this last window...
pub const RECENT_S: i64 = 24 * 3600;
/// ...at most this many, newest first: the snapshot stays small on a phone's connection.
pub const RECENT_MAX: usize = 100;
/// Each text of an entry (key, name, reason) is cut to this many characters.
const TEXT_MAX_CHARS: usize = 240;
/// Bumped when the file's layout changes; another version is replaced, like a corrupt file.
const VERSION: u32 = 1;

/// The log's bounds, from the rules' `transitions_log` group ([`Bounds::of`]); tests and
/// benches shrink them to reach them quickly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// The most transitions the log keeps (a ring: the oldest go first).
    pub max_entries: usize,
    /// Nothing older than this is kept.
    pub keep_s: i64,
    /// The file never grows past this, whatever text its entries hold.
    pub max_file_bytes: usize,
}

impl Bounds {
    /// The bounds the rules declare (`transitions_log`).
    pub fn of(rules: &StateRules) -> Bounds {
        Bounds {
            max_entries: usize::try_from(rules.transitions_max_entries.count).unwrap_or(usize::MAX),
            keep_s: i64::try_from(rules.transitions_keep.seconds).unwrap_or(i64::MAX),
            max_file_bytes: usize::try_from(rules.transitions_max_file.bytes).unwrap_or(usize::MAX),
        }
    }
}

/// Every entry of the log in `state_dir`, oldest first; an empty log when the file is missing.
/// The error says why the file cannot be used. Reading needs no bounds (the answers to "what
/// changed since").
pub fn read_log(state_dir: &Path) -> Result<Vec<Transition>> {
    read_file(&state_dir.join(FILE_NAME))
}

fn read_file(path: &Path) -> Result<Vec<Transition>> {
    match std::fs::read(path) {
        Ok(bytes) => parse(path, &bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

fn parse(path: &Path, bytes: &[u8]) -> Result<Vec<Transition>> {
    let file: File = serde_json::from_slice(bytes)
        .with_context(|| format!("{} is not a transitions log", path.display()))?;
    // The same layout rule the loader applies (`state_file::StateFile`).
    if let Some(problem) = state_file::StateFile::layout_problem(&file) {
        anyhow::bail!("{} has {problem}", path.display());
    }
    Ok(file.entries)
}
/// The file: oldest first.
#[derive(Debug, Serialize, Deserialize)]
struct File {
    version: u32,
    entries: Vec<Transition>,
}

impl state_file::StateFile for File {
    const WHAT: &'static str = "transitions log";

    fn layout_problem(&self) -> Option<String> {
        (self.version != VERSION).then(|| format!("layout version {}, not {VERSION}", self.version))
    }
}

/// The log on disk. Used under the status lock.
#[derive(Debug, Clone)]
pub struct TransitionLog {
    path: PathBuf,
    gate: RedactionGate,
    bounds: Bounds,
}

/// The log with one write's transitions appended, not yet saved.
#[derive(Debug)]
pub struct Appended {
    /// Oldest first: the whole log, or only the last day when the write took it from the
    /// previous snapshot.
    entries: Vec<Transition>,
    save: bool,
}

impl Appended {
    /// What status.json carries: the last [`RECENT_S`], at most [`RECENT_MAX`], newest first.
    pub fn recent(&self, now: DateTime<Utc>) -> Vec<Transition> {
        recent(&self.entries, now)
    }

    /// The entries this write holds, oldest first.
    pub fn entries(&self) -> &[Transition] {
        &self.entries
    }
}

/// What loading found.
struct Loaded {
    entries: Vec<Transition>,
    /// False when the file exists but cannot be read: it is left as it is.
    writable: bool,
    /// True when the file must be replaced even with nothing new (it was corrupt).
    replace: bool,
}

impl TransitionLog {
    pub fn new(state_dir: &Path, gate: RedactionGate, bounds: Bounds) -> TransitionLog {
        TransitionLog {
            path: state_dir.join(FILE_NAME),
            gate,
            bounds,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every entry on disk, oldest first ([`read_log`]).
    pub fn read(&self) -> Result<Vec<Transition>> {
        read_file(&self.path)
    }

    /// `carried` (newest first, as a snapshot holds them) is where the log starts again when
    /// the file is missing, corrupt or unreadable. A corrupt one is moved aside as `now`
    /// ([`state_file`]); an unreadable one is left as it is, and not written.
    fn load(&self, carried: &[Transition], now: DateTime<Utc>) -> Loaded {
        let seed = || {
            carried
                .iter()
                .rev()
                .map(|t| self.admit(t.clone()))
                .collect::<Vec<_>>()
        };
        match state_file::load::<File>(&self.path, now) {
            state_file::Loaded::Found(file) => Loaded {
                entries: file.entries,
                writable: true,
                replace: false,
            },
            state_file::Loaded::Missing => Loaded {
                entries: seed(),
                writable: true,
                replace: false,
            },
            state_file::Loaded::SetAside { .. } => {
                tracing::warn!(file = %self.path.display(), "transitions log replaced by the snapshot's recent transitions");
                Loaded {
                    entries: seed(),
                    writable: true,
                    replace: true,
                }
            }
            state_file::Loaded::Unreadable(_) => {
                tracing::warn!(file = %self.path.display(), "this write's transitions reach status.json only");
                Loaded {
                    entries: seed(),
                    writable: false,
                    replace: false,
                }
            }
        }
    }

    /// Appends `new` to the log as loaded, bounded as of `now`; [`TransitionLog::save`] puts
    /// it on disk once the snapshot is written (a snapshot that fails to be written must not
    /// leave its transitions in the log: the next write sees the same changes again).
    /// `carried` is what the previous snapshot carried, `None` when there was none.
    ///
    /// With nothing new and a previous snapshot, the log is not read at all: that snapshot
    /// carried the log's last day as it still is (most writes change nothing, and a week's log
    /// is half a megabyte to parse).
    pub fn append(
        &self,
        new: Vec<Transition>,
        carried: Option<&[Transition]>,
        now: DateTime<Utc>,
    ) -> Appended {
        if new.is_empty()
            && let Some(carried) = carried
        {
            return Appended {
                entries: carried.iter().rev().cloned().collect(),
                save: false,
            };
        }
        let Loaded {
            mut entries,
            writable,
            replace,
        } = self.load(carried.unwrap_or_default(), now);
        let changed = !new.is_empty();
        entries.extend(new.into_iter().map(|t| self.admit(t)));
        bound(&mut entries, now, self.bounds);
        Appended {
            entries,
            save: writable && (changed || replace),
        }
    }

    /// Replaces the file with `appended` when it changed. Never fails: a log that cannot be
    /// saved is logged, and costs the log only.
    pub fn save(&self, mut appended: Appended) {
        if !appended.save {
            return;
        }
        let saved = self
            .to_bytes(&mut appended.entries)
            .and_then(|bytes| atomic::write(&self.path, &bytes));
        if let Err(e) = saved {
            tracing::warn!(file = %self.path.display(), "cannot save the transitions log: {e:#}");
        }
    }

    /// What enters the log: each text through the gate (the snapshot's own text already
    /// passed it; this is the log's own wall), then cut to [`TEXT_MAX_CHARS`] so one odd
    /// reason cannot eat the log. Redacting before cutting keeps half a secret from leaking.
    fn admit(&self, mut t: Transition) -> Transition {
        let clean = |s: &str| crate::text::clean(&self.gate.redact_str(s), TEXT_MAX_CHARS);
        t.key = clean(&t.key);
        t.kind = clean(&t.kind);
        t.name = clean(&t.name);
        t.reason = t.reason.as_deref().map(clean);
        t
    }

    /// The file's bytes, compact JSON, dropping the oldest entries until it fits the bound
    /// ([`Bounds::max_file_bytes`]; `entries` loses them too). Every entry passed the gate on its way
    /// in ([`TransitionLog::admit`]).
    fn to_bytes(&self, entries: &mut Vec<Transition>) -> Result<Vec<u8>> {
        let whole = |entries: &[Transition]| {
            serde_json::to_vec(&FileRef {
                version: VERSION,
                entries,
            })
            .context("cannot serialise the transitions log")
        };
        let bytes = whole(entries)?;
        if bytes.len() <= self.bounds.max_file_bytes {
            return Ok(bytes);
        }
        // Too big (long texts): the oldest go until the rest fits, each counted with its comma.
        let sizes: Vec<usize> = entries
            .iter()
            .map(|t| serde_json::to_vec(t).map(|b| b.len() + 1))
            .collect::<serde_json::Result<_>>()?;
        let mut total = bytes.len();
        let mut first = 0;
        while total > self.bounds.max_file_bytes && first < sizes.len() {
            total -= sizes[first];
            first += 1;
        }
        entries.drain(..first);
        whole(entries)
    }
}

/// [`File`] without a copy of its entries, for writing.
#[derive(Serialize)]
struct FileRef<'a> {
    version: u32,
    entries: &'a [Transition],
}

/// Time order (a stable sort: one write's entries keep their key order), nothing older than
/// `keep_s`, at most `max_entries` ([`Bounds`]).
fn bound(entries: &mut Vec<Transition>, now: DateTime<Utc>, bounds: Bounds) {
    entries.sort_by_key(|t| t.at);
    let from = now - Duration::seconds(bounds.keep_s);
    entries.retain(|t| t.at >= from);
    let extra = entries.len().saturating_sub(bounds.max_entries);
    entries.drain(..extra);
}

/// What status.json carries, newest first.
pub fn recent(entries: &[Transition], now: DateTime<Utc>) -> Vec<Transition> {
    let from = now - Duration::seconds(RECENT_S);
    entries
        .iter()
        .rev()
        .filter(|t| t.at >= from)
        .take(RECENT_MAX)
        .cloned()
        .collect()
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::logging::logs_of;
    use crate::write::transitions::tests::{changes, t0};
    use fleetdash_model::Band;

    /// The shipped rules' `transitions_log` bounds.
    fn fleet() -> Bounds {
        Bounds::of(&crate::config::fleet_state_rules())
    }

    fn transition(key: &str, to: Band, at: DateTime<Utc>) -> Transition {
        Transition {
            key: key.into(),
            kind: "agent".into(),
            name: key.into(),
            from: Some(if to == Band::Red {
                Band::Green
            } else {
                Band::Red
            }),
            to,
            at,
            reason: (to == Band::Red).then(|| "down: connection refused".into()),
        }
    }

    fn file_len(log: &TransitionLog) -> usize {
        std::fs::metadata(log.path()).unwrap().len() as usize
    }

    /// 2,000 writes, each flapping an element (a write a minute: past the day the window
    /// keeps), keep the file within its bounds (entries, bytes, age) at every write, and keep
    /// the newest in order. (10,000 took 17 s of CPU in each of the 12 runs of the unit tests,
    /// CI's clocks included, and proved no more: the ring is full after 64.)
    #[test]
    fn two_thousand_flapping_writes_keep_the_log_within_its_bounds() {
        // In memory (tmpfs): this counts bytes, not durability, and 20,000 fsyncs would cost
        // minutes on a shared disk.
        let dir = tempfile::tempdir_in("/dev/shm").expect("a tmpfs at /dev/shm (Linux)");
        let bounds = Bounds {
            max_entries: 64,
            keep_s: 24 * 3600,
            max_file_bytes: 8 * 1024,
        };
        let log = TransitionLog::new(dir.path(), RedactionGate::default(), bounds);
        let mut biggest = 0;
        let mut last = Vec::new();
        for i in 0..2_000i64 {
            let at = t0() + Duration::minutes(i);
            let to = if i % 2 == 0 { Band::Red } else { Band::Green };
            // Long names on some writes, so the byte bound binds before the entry bound.
            let mut t = transition(&format!("agent:a{}", i % 7), to, at);
            if i % 3 == 0 {
                t.name = "n".repeat(400);
            }
            let appended = log.append(vec![t], None, at);
            assert!(appended.entries().len() <= bounds.max_entries);
            last = appended.recent(at);
            log.save(appended);
            biggest = biggest.max(file_len(&log));
        }
        assert!(biggest <= bounds.max_file_bytes, "{biggest} bytes");
        let on_disk = log.read().unwrap();
        assert!(!on_disk.is_empty() && on_disk.len() <= bounds.max_entries);
        let end = t0() + Duration::minutes(1_999);
        assert_eq!(on_disk.last().unwrap().at, end, "the newest is kept");
        assert!(
            on_disk.windows(2).all(|w| w[0].at <= w[1].at),
            "oldest first"
        );
        assert_eq!(last[0].at, end, "status.json gets the newest first");
        assert!(last.windows(2).all(|w| w[0].at >= w[1].at));
        assert!(last.len() <= RECENT_MAX);
        // Cut to its bound, not left whole.
        assert!(
            on_disk
                .iter()
                .all(|t| t.name.chars().count() <= TEXT_MAX_CHARS)
        );
    }

    /// With the fleet's own bounds, a full ring of the longest entries the log admits (every
    /// text at its cut, 4 bytes a character) still fits the file's byte bound, the newest
    /// kept; and the window drops what is older than a week.
    #[test]
    fn the_fleets_bounds_hold_for_a_full_ring_of_the_longest_entries() {
        let dir = tempfile::tempdir().unwrap();
        let Bounds {
            max_entries,
            keep_s,
            max_file_bytes,
        } = fleet();
        let log = TransitionLog::new(dir.path(), RedactionGate::default(), fleet());
        let now = t0();
        let longest = "😀".repeat(TEXT_MAX_CHARS);
        let entries: Vec<Transition> = (0..max_entries)
            .map(|i| Transition {
                key: format!("{i}/{longest}"),
                kind: longest.clone(),
                name: longest.clone(),
                from: None,
                to: Band::Red,
                at: now,
                reason: Some(longest.clone()),
            })
            .collect();
        let raw = serde_json::to_vec(&entries).unwrap().len();
        assert!(
            raw > 4 * max_file_bytes,
            "the bytes bound must bind: {raw} B"
        );
        log.save(Appended {
            entries,
            save: true,
        });
        let len = file_len(&log);
        assert!(len <= max_file_bytes, "{len} bytes");
        assert!(
            len > max_file_bytes - 8 * 1024,
            "only what did not fit went: {len} bytes"
        );
        let kept = log.read().unwrap();
        let newest = format!("{}/", max_entries - 1);
        assert!(kept.last().unwrap().key.starts_with(&newest));
        // A week and a second later, all of it is too old.
        let later = now + Duration::seconds(keep_s + 1);
        let appended = log.append(vec![transition("agent:new", Band::Red, later)], None, later);
        assert_eq!(
            changes(appended.entries()),
            [("agent:new", Some(Band::Green), Band::Red)]
        );
    }

    /// Issue 33: the ring's bounds are the rules' `transitions_log`: under rules that say 3
    /// entries, an hour and 4 KiB, a fourth transition pushes out the oldest, an hour-old one
    /// goes, and long texts keep the file under 4 KiB.
    #[test]
    fn the_ring_keeps_what_the_rules_declare() {
        let mut rules = crate::config::fleet_state_rules();
        rules.transitions_max_entries.count = 3;
        rules.transitions_keep.seconds = 3600;
        rules.transitions_max_file.bytes = 4096;
        let bounds = Bounds::of(&rules);
        assert_eq!(
            bounds,
            Bounds {
                max_entries: 3,
                keep_s: 3600,
                max_file_bytes: 4096
            }
        );
        let dir = tempfile::tempdir().unwrap();
        let log = TransitionLog::new(dir.path(), RedactionGate::default(), bounds);
        for i in 0..4 {
            let at = t0() + Duration::minutes(i);
            let appended = log.append(
                vec![transition(&format!("agent:a{i}"), Band::Red, at)],
                None,
                at,
            );
            log.save(appended);
        }
        let keys = |log: &TransitionLog| -> Vec<String> {
            log.read().unwrap().into_iter().map(|t| t.key).collect()
        };
        assert_eq!(keys(&log), ["agent:a1", "agent:a2", "agent:a3"]);
        // An hour after a1: it goes.
        let at = t0() + Duration::minutes(61);
        log.save(log.append(vec![transition("agent:b", Band::Red, at)], None, at));
        assert_eq!(keys(&log), ["agent:a2", "agent:a3", "agent:b"]);
        // Long texts: the oldest go until the file fits 4 KiB.
        let mut long = transition("agent:long", Band::Red, at);
        long.name = "n".repeat(TEXT_MAX_CHARS);
        long.reason = Some("r".repeat(TEXT_MAX_CHARS));
        for i in 0..3 {
            let mut t = long.clone();
            t.key = format!("agent:long{i}");
            log.save(log.append(vec![t], None, at));
        }
        assert!(file_len(&log) <= 4096, "{} B", file_len(&log));
    }

    /// status.json's share: the last 24 h only, at most RECENT_MAX, newest first.
    #[test]
    fn the_snapshot_carries_the_last_day_newest_first_capped() {
        let now = t0();
        let entries: Vec<Transition> = (0..(RECENT_MAX as i64 + 50))
            .map(|i| transition(&format!("agent:{i}"), Band::Red, now - Duration::minutes(i)))
            .rev()
            .collect();
        let got = recent(&entries, now);
        assert_eq!(got.len(), RECENT_MAX);
        assert_eq!(got[0].key, "agent:0");
        let old = [
            transition(
                "agent:old",
                Band::Red,
                now - Duration::seconds(RECENT_S + 1),
            ),
            transition("agent:day", Band::Red, now - Duration::seconds(RECENT_S)),
        ];
        assert_eq!(
            changes(&recent(&old, now)),
            [("agent:day", Some(Band::Green), Band::Red)]
        );
    }

    /// A corrupt log (or one of another layout) is said with its path and replaced, starting
    /// again from what the snapshot carried; an unreadable one (a directory) is said and left
    /// alone, and the snapshot still gets its recent transitions.
    #[test]
    fn a_corrupt_log_is_replaced_from_the_snapshot_and_an_unreadable_one_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let log = TransitionLog::new(dir.path(), RedactionGate::default(), fleet());
        let now = t0();
        let carried = vec![transition(
            "agent:carried",
            Band::Red,
            now - Duration::hours(1),
        )];
        let new = || vec![transition("agent:new", Band::Red, now)];
        for bad in [
            &b"{\"version\":1,\"entries\":[trunc"[..],
            b"{\"version\":99,\"entries\":[]}",
        ] {
            std::fs::write(log.path(), bad).unwrap();
            let (recent, logs) = logs_of(|| {
                let appended = log.append(new(), Some(&carried), now);
                let recent = appended.recent(now);
                log.save(appended);
                recent
            });
            assert!(logs.contains(&log.path().display().to_string()), "{logs}");
            assert!(logs.contains("transitions log invalid"), "{logs}");
            let keys = ["agent:new", "agent:carried"];
            assert_eq!(
                recent.iter().map(|t| t.key.as_str()).collect::<Vec<_>>(),
                keys
            );
            let on_disk = log.read().unwrap();
            assert_eq!(
                on_disk
                    .iter()
                    .rev()
                    .map(|t| t.key.as_str())
                    .collect::<Vec<_>>(),
                keys
            );
        }
        // Corrupt, nothing new and no previous snapshot: read, replaced all the same (the
        // warning is said once), by nothing.
        std::fs::write(log.path(), b"not json").unwrap();
        let ((), logs) = logs_of(|| log.save(log.append(Vec::new(), None, now)));
        assert!(logs.contains("transitions log invalid"), "{logs}");
        assert_eq!(log.read().unwrap().len(), 0);

        std::fs::remove_file(log.path()).unwrap();
        std::fs::create_dir(log.path()).unwrap();
        let (recent, logs) = logs_of(|| {
            let appended = log.append(new(), Some(&carried), now);
            let recent = appended.recent(now);
            log.save(appended);
            recent
        });
        assert!(
            logs.contains("transitions log unreadable, left as it is"),
            "{logs}"
        );
        assert!(logs.contains(&log.path().display().to_string()), "{logs}");
        assert_eq!(recent.len(), 2);
        assert!(log.path().is_dir(), "left alone");
    }

    /// A write that sees no change does not read the log: the last day is what the previous
    /// snapshot carried (what the log said then), as of now. Even a corrupt log stays as it
    /// is until there is something to record.
    #[test]
    fn a_write_with_nothing_new_takes_the_last_day_from_the_previous_snapshot() {
        let dir = tempfile::tempdir().unwrap();
        let log = TransitionLog::new(dir.path(), RedactionGate::default(), fleet());
        let now = t0();
        let carried = vec![
            transition("agent:hour", Band::Red, now - Duration::hours(1)),
            transition("agent:day", Band::Red, now - Duration::hours(25)),
        ];
        std::fs::write(log.path(), b"not json").unwrap();
        let (recent, logs) = logs_of(|| {
            let appended = log.append(Vec::new(), Some(&carried), now);
            let recent = appended.recent(now);
            log.save(appended);
            recent
        });
        assert_eq!(
            changes(&recent),
            [("agent:hour", Some(Band::Green), Band::Red)]
        );
        assert!(logs.is_empty(), "{logs}");
        assert_eq!(std::fs::read(log.path()).unwrap(), b"not json");
    }

    /// The file passes the gate: a secret the collector holds never reaches it.
    #[test]
    fn the_log_passes_the_redaction_gate() {
        let dir = tempfile::tempdir().unwrap();
        let secret = "s3cr3t-peer-token-value";
        let log = TransitionLog::new(
            dir.path(),
            RedactionGate::new([secret.to_string()]),
            fleet(),
        );
        let mut t = transition("agent:min", Band::Red, t0());
        t.reason = Some(format!("down: 401 for {secret}"));
        log.save(log.append(vec![t], None, t0()));
        let text = std::fs::read_to_string(log.path()).unwrap();
        assert!(!text.contains(secret), "{text}");
        assert!(text.contains(crate::redact::REDACTED), "{text}");
    }
}

//! Acknowledgements (issue 24): the operator has seen an open alert, so its reminders stop
//! until the element's band changes; the page still shows it red, marked "acked 14:02".
//!
//! - An ack is made by the operator (`fleetdash ack agent:min`, or the phone's button through
//!   [`AckStore::ack`]) and kept in `<state_dir>/acks.json`, replaced atomically through the
//!   redaction gate under a lock file, like the silences.
//! - An ack names the open alert it acknowledges by its red run's start (`since`, part of the
//!   alert's dedupe key): it stands only while the engine's open alert for the key has that
//!   `since`. So it ends by itself when the band changes: a recovery closes the alert (the
//!   Recovered still goes out, never held), and a later red run opens a new alert with a new
//!   `since`, whose reminders go out again. Acks whose alert is gone are dropped when the file
//!   is next written.
//! - Only an open alert can be acked: a key with none is refused, naming what is open.
//!
//! Keys are exactly the transitions log's (`agent:min`, `host:lab/tunnel:lab-heart`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::engine::state::{State, StateFile as EngineState};
use crate::redact::RedactionGate;
use crate::write::{atomic, state_file};

pub const FILE_NAME: &str = "acks.json";
/// Held while a command reads, changes and replaces the file, so two acks at once both land
/// (the engine only reads: the atomic replace is enough for it).
const LOCK_NAME: &str = "acks.lock";
/// Bumped when the file's layout changes.
const VERSION: u32 = 1;
/// Where an ack came from is a few words ("cli", "from the phone"), not a story.
const VIA_MAX_CHARS: usize = 40;
/// The refusal names at most this many open alerts: a storm would make it unreadable.
const OPEN_NAMED_MAX: usize = 8;

/// One acknowledged alert.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ack {
    /// The element's key, as the transitions log keys it.
    pub key: String,
    /// The acknowledged alert's red run start: the ack stands while the open alert has it.
    pub since: DateTime<Utc>,
    /// When it was acknowledged.
    pub at: DateTime<Utc>,
    /// Where from: "cli", "from the phone".
    pub via: String,
}

impl Ack {
    /// Whether the alert it acknowledges is still the element's open alert in `state`.
    pub fn stands(&self, state: &State) -> bool {
        state
            .tracks
            .get(&self.key)
            .and_then(|t| t.open.as_ref())
            .is_some_and(|open| open.since == self.since)
    }
}

/// The standing acks by key, each with the `since` of the alert it acknowledges: what a pass
/// needs to hold back reminders (`PassContext::acked`).
pub type Acked = BTreeMap<String, DateTime<Utc>>;

/// `acks` as the pass takes them.
pub fn by_key(acks: &[Ack]) -> Acked {
    acks.iter().map(|a| (a.key.clone(), a.since)).collect()
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct AcksFile {
    version: u32,
    acks: Vec<Ack>,
}

impl state_file::StateFile for AcksFile {
    const WHAT: &'static str = "saved acks";

    fn layout_problem(&self) -> Option<String> {
        (self.version != VERSION)
            .then(|| format!("acks file of version {} (expected {VERSION})", self.version))
    }
}

/// `<state_dir>/acks.json`, judged against the engine's open alerts
/// (`<state_dir>/alerts-engine.json`).
pub struct AckStore {
    path: PathBuf,
    gate: RedactionGate,
    engine: EngineState,
}

impl AckStore {
    pub fn new(state_dir: &Path, gate: RedactionGate) -> Self {
        AckStore {
            path: state_dir.join(FILE_NAME),
            engine: EngineState::new(state_dir, gate.clone()),
            gate,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `change` under the file's lock. Blocking.
    fn locked<T>(&self, change: impl FnOnce() -> Result<T>) -> Result<T> {
        let lock_path = self.path.with_file_name(LOCK_NAME);
        let lock = std::fs::File::create(&lock_path)
            .with_context(|| format!("cannot open lock file {}", lock_path.display()))?;
        lock.lock()
            .with_context(|| format!("cannot lock {}", lock_path.display()))?;
        change()
    }

    /// Every ack kept, standing or not; none when there is no file, and none when it was
    /// corrupt or of another layout: it is moved aside and said ([`state_file`]; the page says
    /// so until the copy is removed), and reminders go out as if nothing were acked (a reminder
    /// too many beats one lost). A file that cannot be read is an error naming it. Blocking.
    pub fn load(&self, now: DateTime<Utc>) -> Result<Vec<Ack>> {
        match state_file::load::<AcksFile>(&self.path, now) {
            state_file::Loaded::Found(file) => Ok(file.acks),
            state_file::Loaded::Missing | state_file::Loaded::SetAside { .. } => Ok(Vec::new()),
            state_file::Loaded::Unreadable(e) => Err(e),
        }
    }

    /// The acks whose alert is still open, as the engine's state says now. Blocking.
    pub fn standing(&self, now: DateTime<Utc>) -> Result<Vec<Ack>> {
        let state = self.engine.load(now);
        let mut acks = self.load(now)?;
        acks.retain(|a| a.stands(&state));
        Ok(acks)
    }

    /// Replaces the file with `acks`, those whose alert is gone dropped.
    fn save(&self, mut acks: Vec<Ack>, state: &State) -> Result<()> {
        acks.retain(|a| a.stands(state));
        let file = AcksFile {
            version: VERSION,
            acks,
        };
        let json = self.gate.to_json(&file)?;
        atomic::write(&self.path, &serde_json::to_vec_pretty(&json)?)
            .with_context(|| format!("cannot save {}", self.path.display()))
    }

    /// Whether `key` has an open alert (fired, not recovered) at `now`: what an ack needs.
    /// Blocking (reads the engine's state).
    pub fn has_open_alert(&self, key: &str, now: DateTime<Utc>) -> bool {
        let state = self.engine.load(now);
        state.tracks.get(key).is_some_and(|t| t.open.is_some())
    }

    /// Acknowledges the open alert of the element `key` at `at`, `via` saying where from
    /// ("cli", "from the phone"); acking it again replaces the earlier ack. A key with no
    /// open alert (never fired, or recovered) is refused, naming what is open. Blocking (reads,
    /// lock, fsync): from async code, call it on a blocking thread.
    pub fn ack(&self, key: &str, at: DateTime<Utc>, via: &str) -> Result<Ack> {
        let via = crate::text::clean(&self.gate.redact_str(via), VIA_MAX_CHARS);
        self.locked(|| {
            let state = self.engine.load(at);
            let Some(open) = state.tracks.get(key).and_then(|t| t.open.as_ref()) else {
                bail!("no open alert for {key:?}: {}", open_now(&state));
            };
            let ack = Ack {
                key: key.to_string(),
                since: open.since,
                at,
                via,
            };
            let mut acks = self.load(at)?;
            acks.retain(|a| a.key != key);
            acks.push(ack.clone());
            self.save(acks, &state)?;
            Ok(ack)
        })
    }

    /// Ends the ack of `key` now, so its reminders go out again; a key not acked is an error
    /// naming it. Blocking.
    pub fn end(&self, key: &str, now: DateTime<Utc>) -> Result<Ack> {
        self.locked(|| {
            let state = self.engine.load(now);
            let mut acks = self.load(now)?;
            let Some(i) = acks.iter().position(|a| a.key == key && a.stands(&state)) else {
                bail!("{key:?} is not acked in {}", self.path.display());
            };
            let ended = acks.remove(i);
            self.save(acks, &state)?;
            Ok(ended)
        })
    }
}

/// What is open, for a refusal: "open now: agent:min, host:lab/tunnel:lab-heart", or that
/// nothing is.
fn open_now(state: &State) -> String {
    let open: Vec<&str> = state
        .tracks
        .iter()
        .filter(|(_, t)| t.open.is_some())
        .map(|(key, _)| key.as_str())
        .collect();
    match open.len() {
        0 => "no alert is open now".into(),
        n if n > OPEN_NAMED_MAX => format!(
            "open now: {} and {} more",
            open[..OPEN_NAMED_MAX].join(", "),
            n - OPEN_NAMED_MAX
        ),
        _ => format!("open now: {}", open.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alerting::engine::state::{Open, Track};
    use chrono::Duration;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    /// The engine's state with an open alert for each `(key, since)`, saved in `dir`.
    fn open_alerts(dir: &Path, open: &[(&str, DateTime<Utc>)]) {
        let mut state = State {
            version: crate::alerting::engine::state::VERSION,
            ..State::default()
        };
        for (key, since) in open {
            state.tracks.insert(
                key.to_string(),
                Track {
                    red_passes: 3,
                    clear_passes: 0,
                    red_since: Some(*since),
                    clear_since: None,
                    open: Some(Open {
                        since: *since,
                        last: *since,
                        reminders: 0,
                        takes_down: Vec::new(),
                    }),
                    seen: *since,
                    kind: "agent".into(),
                    name: key.to_string(),
                },
            );
        }
        EngineState::new(dir, RedactionGate::default())
            .save(&state)
            .unwrap();
    }

    #[test]
    fn an_ack_binds_to_the_open_alert_and_ends_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = AckStore::new(dir.path(), RedactionGate::default());
        let since = at("2026-11-30T13:50:00Z");
        let now = at("2026-11-30T14:02:00Z");
        open_alerts(dir.path(), &[("agent:min", since)]);
        let ack = store.ack("agent:min", now, "cli").unwrap();
        assert_eq!(
            ack,
            Ack {
                key: "agent:min".into(),
                since,
                at: now,
                via: "cli".into()
            }
        );
        assert_eq!(store.standing(now).unwrap(), vec![ack.clone()]);
        // Acked again from the phone: one ack, the newer.
        let later = now + Duration::minutes(3);
        let again = store.ack("agent:min", later, "from the phone").unwrap();
        assert_eq!(store.load(later).unwrap(), vec![again]);
        // Recovered, then red again: a new alert, which the old ack does not stand for; the
        // next write drops it.
        let new_since = at("2026-11-30T15:00:00Z");
        open_alerts(dir.path(), &[("agent:min", new_since), ("host:lab", since)]);
        assert!(store.standing(new_since).unwrap().is_empty());
        assert_eq!(store.load(new_since).unwrap().len(), 1);
        store.ack("host:lab", new_since, "cli").unwrap();
        let kept = store.load(new_since).unwrap();
        assert_eq!(
            kept.iter().map(|a| a.key.as_str()).collect::<Vec<_>>(),
            ["host:lab"]
        );
        // Ended by the operator: gone; ending it twice says so.
        store.end("host:lab", new_since).unwrap();
        assert!(store.load(new_since).unwrap().is_empty());
        let err = store.end("host:lab", new_since).unwrap_err().to_string();
        assert!(err.contains("\"host:lab\" is not acked"), "{err}");
    }

    #[test]
    fn a_key_with_no_open_alert_is_refused_naming_what_is_open() {
        let dir = tempfile::tempdir().unwrap();
        let store = AckStore::new(dir.path(), RedactionGate::default());
        let now = at("2026-11-30T14:02:00Z");
        let err = store.ack("agent:min", now, "cli").unwrap_err().to_string();
        assert_eq!(err, "no open alert for \"agent:min\": no alert is open now");
        open_alerts(
            dir.path(),
            &[("agent:min", now), ("host:lab/tunnel:lab-heart", now)],
        );
        // Keys are the log's, exactly: no prefix, no other case.
        for wrong in ["agent:MIN", "min", "host:lab"] {
            let err = store.ack(wrong, now, "cli").unwrap_err().to_string();
            assert_eq!(
                err,
                format!(
                    "no open alert for {wrong:?}: open now: agent:min, host:lab/tunnel:lab-heart"
                )
            );
        }
        assert!(!store.path().exists(), "a refusal writes nothing");
    }

    #[test]
    fn a_corrupt_acks_file_is_set_aside_naming_it_and_acks_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = AckStore::new(dir.path(), RedactionGate::default());
        let now = at("2026-11-30T14:00:00Z");
        open_alerts(dir.path(), &[("agent:min", now)]);
        std::fs::write(store.path(), "{\"version\":1,\"acks\":[").unwrap();
        let (loaded, logs) = crate::logging::logs_of(|| store.standing(now));
        assert!(loaded.unwrap().is_empty());
        assert!(logs.contains("ERROR"), "{logs}");
        assert!(logs.contains("acks.json"), "{logs}");
        assert!(logs.contains("not a saved acks file"), "{logs}");
        let aside = dir.path().join("acks.json.corrupt-20261130T140000Z");
        assert!(aside.exists());
        // Acking again works at once; the copy stays for the operator.
        store.ack("agent:min", now, "cli").unwrap();
        assert_eq!(store.standing(now).unwrap().len(), 1);
        assert!(aside.exists());
        // Another layout is set aside too.
        std::fs::write(store.path(), r#"{"version":9,"acks":[]}"#).unwrap();
        assert!(store.load(now).unwrap().is_empty());
        assert_eq!(state_file::set_aside_in(dir.path(), now).len(), 2);
    }

    #[test]
    fn a_secret_in_via_never_reaches_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let store = AckStore::new(dir.path(), RedactionGate::default());
        let now = at("2026-11-30T14:00:00Z");
        open_alerts(dir.path(), &[("agent:min", now)]);
        let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
        let ack = store
            .ack("agent:min", now, &format!("phone {jwt}"))
            .unwrap();
        assert!(ack.via.chars().count() <= VIA_MAX_CHARS, "{}", ack.via);
        let text = std::fs::read_to_string(store.path()).unwrap();
        assert!(!text.contains("eyJhbGciOiJIUzI1NiJ9"), "{text}");
        assert!(text.contains("phone"), "{text}");
    }

    #[test]
    fn acks_at_the_same_time_all_land() {
        let dir = tempfile::tempdir().unwrap();
        let now = at("2026-11-30T14:00:00Z");
        let keys: Vec<String> = (0..8).map(|i| format!("agent:a{i}")).collect();
        let open: Vec<(&str, DateTime<Utc>)> = keys.iter().map(|k| (k.as_str(), now)).collect();
        open_alerts(dir.path(), &open);
        let threads: Vec<_> = keys
            .iter()
            .map(|key| {
                let (path, key) = (dir.path().to_path_buf(), key.clone());
                std::thread::spawn(move || {
                    AckStore::new(&path, RedactionGate::default())
                        .ack(&key, now, "cli")
                        .unwrap()
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let store = AckStore::new(dir.path(), RedactionGate::default());
        assert_eq!(store.standing(now).unwrap().len(), 8);
    }
}

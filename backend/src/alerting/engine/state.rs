//! What the engine remembers between passes ([`State`]: each element's count of passes and its
//! open alert, and the sections' readings the last pass saw), and its file
//! `<state_dir>/alerts-engine.json` ([`StateFile`]), so a restart mid-red sends no second Firing
//! and forgets no open alert. A missing, corrupt or other-layout file is a fresh start; a
//! corrupt one is moved aside and said (`write::state_file`): alerting never fails a write.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use chrono::{DateTime, Utc};
use fleetdash_model::alerts::key;
use serde::{Deserialize, Serialize};

use crate::redact::RedactionGate;
use crate::write::{atomic, state_file};

pub const FILE_NAME: &str = "alerts-engine.json";

/// Bumped when the file's layout changes; another version is moved aside, like a corrupt file.
pub const VERSION: u32 = 1;

impl state_file::StateFile for State {
    const WHAT: &'static str = "alert engine state";

    fn layout_problem(&self) -> Option<String> {
        (self.version != VERSION)
            .then(|| format!("layout version {} (expected {VERSION})", self.version))
    }
}

/// What the engine remembers between passes, by element key.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct State {
    pub version: u32,
    pub tracks: BTreeMap<String, Track>,
    /// Each section's `checked_at` as the last pass saw it: an element is counted only by a
    /// pass whose write renewed its section ([`Readings`]).
    #[serde(default)]
    pub readings: Readings,
}

/// Each collected section's `checked_at` in a snapshot, by its element key (`section:agents`);
/// and each stale one's judgement, the write's moment, under [`stale_key`].
pub type Readings = BTreeMap<String, DateTime<Utc>>;

/// The sections' readings of `snap`: what tells a pass which sections its write renewed. A
/// section's staleness is judged anew by every write: while a section is stale, each write is
/// a reading of it (under [`stale_key`]), so that its own element counts at every pass.
pub fn readings(snap: &fleetdash_model::Snapshot) -> Readings {
    let mut out = Readings::new();
    for part in crate::collect::SectionName::PARTS {
        let meta = crate::snapshot::meta(snap, part);
        if let Some(at) = meta.checked_at {
            let section = key::section(part.as_str());
            if meta.stale {
                out.insert(stale_key(&section), snap.generated_at);
            }
            out.insert(section, at);
        }
    }
    // The tunnels' collector renews no section: its reading is its tunnels' newest check.
    let tunnels = snap
        .systems
        .value()
        .into_iter()
        .flatten()
        .flat_map(|h| &h.tunnels)
        .map(|t| t.checked_at)
        .max();
    if let Some(at) = tunnels {
        out.insert(key::TUNNELS.to_string(), at);
    }
    out
}

/// Where [`readings`] puts a stale section's judgement: beside its read, never in its place
/// (the section's elements are still counted by its read alone).
pub fn stale_key(section: &str) -> String {
    format!("{section} stale")
}

/// One element's count of passes and its open alert.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Track {
    /// Consecutive red passes (0 when the last pass was not red).
    pub red_passes: u64,
    /// Consecutive passes not red (0 when the last one was red): green or amber, or gone from
    /// a listing read whole. Only red fires, so what is no longer red recovers.
    #[serde(alias = "green_passes")]
    pub clear_passes: u64,
    /// The first pass of the current red run.
    pub red_since: Option<DateTime<Utc>>,
    /// The first pass of the current run not red.
    #[serde(alias = "green_since")]
    pub clear_since: Option<DateTime<Utc>>,
    /// The Firing that was sent and not yet recovered.
    pub open: Option<Open>,
    /// The last pass that showed the element.
    pub seen: DateTime<Utc>,
    /// Its kind and name when last shown, for a Recovered sent after it is gone.
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub name: String,
}

impl Track {
    /// One counted pass: red, or not.
    pub(super) fn count(&mut self, red: bool, now: DateTime<Utc>) {
        if red {
            self.red_since.get_or_insert(now);
            self.red_passes += 1;
            self.clear_passes = 0;
            self.clear_since = None;
        } else {
            self.red_passes = 0;
            self.red_since = None;
            self.clear_since.get_or_insert(now);
            self.clear_passes += 1;
        }
    }
}

/// A Firing that went out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Open {
    /// When the element turned red (the alert's `since`, part of its dedupe key).
    pub since: DateTime<Utc>,
    /// The Firing's or the last Reminder's time.
    pub last: DateTime<Utc>,
    pub reminders: u32,
    /// What its Firing named as taken down; its Recovered says them again.
    pub takes_down: Vec<String>,
}

/// The engine's state in `state_dir`, written atomically through the redaction gate.
pub struct StateFile {
    path: PathBuf,
    gate: RedactionGate,
}

impl StateFile {
    pub fn new(state_dir: &Path, gate: RedactionGate) -> Self {
        StateFile {
            path: state_dir.join(FILE_NAME),
            gate,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The saved state; a missing file is a fresh start, and so is a corrupt one (or one of
    /// another layout), moved aside as `now` and said ([`state_file`]), and an unreadable one,
    /// said in the log with its path: alerting never fails a write.
    pub fn load(&self, now: DateTime<Utc>) -> State {
        state_file::load::<State>(&self.path, now).or_fresh(State::default)
    }

    /// Replaces the file with `state`. Blocking (fsync): call from a blocking thread.
    pub fn save(&self, state: &State) -> Result<()> {
        let json = self
            .gate
            .to_json(state)
            .context("cannot serialise the alert engine state")?;
        let bytes = serde_json::to_vec(&json).context("cannot serialise the alert engine state")?;
        atomic::write(&self.path, &bytes)
            .with_context(|| format!("cannot save {}", self.path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::super::bench::{Bench, el, fired};
    use super::*;
    use crate::alerting::AlertEvent;
    use fleetdash_model::Band;

    #[test]
    fn a_restart_mid_red_sends_no_second_firing_and_keeps_the_open_alert() {
        let dir = tempfile::tempdir().unwrap();
        let file = StateFile::new(dir.path(), RedactionGate::default());
        let red = [("agent:min", el("agent", "min", Band::Red))];
        let green = [("agent:min", el("agent", "min", Band::Green))];
        let mut b = Bench::new();
        for _ in 0..b.th.fail_after {
            b.next(&red);
        }
        file.save(&b.state).unwrap();
        let mut after = Bench::new();
        after.now = b.now;
        after.state = file.load(after.now);
        assert_eq!(after.state, b.state);
        for _ in 0..3 {
            assert!(after.next(&red).is_empty());
        }
        for _ in 1..after.th.recover_after {
            after.next(&green);
        }
        assert_eq!(
            after.next(&green),
            fired("agent:min", AlertEvent::Recovered)
        );
    }

    #[test]
    fn a_corrupt_state_file_is_a_fresh_start() {
        let dir = tempfile::tempdir().unwrap();
        let file = StateFile::new(dir.path(), RedactionGate::default());
        let now = DateTime::parse_from_rfc3339("2026-11-30T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(file.load(now), State::default());
        std::fs::write(file.path(), "{not json").unwrap();
        let (loaded, logs) = crate::logging::logs_of(|| file.load(now));
        assert_eq!(loaded, State::default());
        assert!(
            logs.contains("alert engine state invalid: moved aside, a fresh one takes its place"),
            "{logs}"
        );
        assert!(logs.contains(&file.path().display().to_string()), "{logs}");
        let aside = dir
            .path()
            .join(format!("{FILE_NAME}.corrupt-20261130T120000Z"));
        assert_eq!(std::fs::read(&aside).unwrap(), b"{not json");
        std::fs::write(file.path(), r#"{"version":99,"tracks":{}}"#).unwrap();
        assert_eq!(file.load(now), State::default());
        assert_eq!(state_file::set_aside_in(dir.path(), now).len(), 2);
    }

    /// Issue 43: the tunnels are read by a collector of their own, which renews no section; their
    /// reading is their newest check, so a tunnel's failure is counted (and confirmed) on the
    /// tunnels' cadence, not the hosts'.
    #[test]
    fn the_tunnels_have_a_reading_of_their_own() {
        use fleetdash_model::{Asc, NamedCheck, Probe, RulesView, Snapshot, System};
        let t0: DateTime<Utc> = "2026-11-30T12:00:00Z".parse().unwrap();
        let check = |name: &str, at: DateTime<Utc>| NamedCheck {
            name: name.into(),
            ok: Probe::Value(false),
            reason: None,
            uptime_24h_pct: None,
            checked_at: at,
            stale: false,
        };
        let rules: RulesView = serde_json::from_value(
            serde_json::json!({"no_reply_s": 300, "exchange_green_below_s": 1,
                "exchange_amber_below_s": 2, "snapshot_stale_after_s": 600}),
        )
        .unwrap();
        let mut s = Snapshot::empty(t0, rules);
        let host = |tunnels: Vec<NamedCheck>| System {
            host: "laptop".into(),
            source: "local".into(),
            ram_used_gb: Probe::Unknown,
            ram_total_gb: Probe::Unknown,
            disk_free_gb: Probe::Unknown,
            services: Vec::new(),
            tunnels,
            crons: Vec::new(),
            vault_parity: Probe::Unknown,
            vault_reason: None,
            band: Band::Red,
            status: Asc::SUCCESS,
            reason: None,
            history: None,
            checked_at: t0,
            stale: false,
        };
        assert_eq!(readings(&s).get(key::TUNNELS), None, "no hosts");
        let later = t0 + chrono::Duration::seconds(10);
        s.systems = Probe::Value(vec![host(vec![check("a", t0), check("b", later)])]);
        assert_eq!(readings(&s).get(key::TUNNELS), Some(&later));
        assert!(
            crate::deps::Deps::section_of("host:laptop/tunnel:a").as_deref() == Some(key::TUNNELS)
        );
        assert_eq!(
            crate::deps::Deps::section_of("host:laptop/service:nginx").as_deref(),
            Some("section:systems")
        );
    }
}

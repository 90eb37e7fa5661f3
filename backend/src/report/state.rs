//! The reporter's state file, `<state_dir>/report-state.json`: where the last report's period
//! ended (the next begins there: no gap, no overlap), which due moment it served, the report
//! about to be put in the outbox (written first, so a crash between the two puts the same
//! report there again, which the outbox's dedupe key keeps once), and fleetdash's own blind
//! spells. Loaded under `write::state_file`'s policy (a corrupt file is set aside, said, and
//! replaced: reporting starts again from that moment, and the next report says so).
//!
//! Blocking (reads, fsync): call from a blocking thread.

use std::path::{Path, PathBuf};

use anyhow::Result;
use chrono::{DateTime, Utc};
use fleetdash_model::glance::report::BlindSpell;
use serde::{Deserialize, Serialize};

use crate::write::{atomic, state_file};

pub const FILE_NAME: &str = "report-state.json";
const VERSION: u32 = 1;

/// One report on its way: built, not yet in the outbox.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pending {
    /// The outbox's dedupe key: `report:<due moment, unix s>`.
    pub id: String,
    pub due: DateTime<Utc>,
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    pub title: String,
    /// What a lock screen shows.
    pub phone: String,
    /// The whole report.
    pub text: String,
    pub channels: Vec<String>,
    /// The report's band: the worst of what needs the operator now.
    #[serde(default = "green")]
    pub band: fleetdash_model::Band,
}

fn green() -> fleetdash_model::Band {
    fleetdash_model::Band::Green
}

/// The last moment a running reporter was seen: a restart measures the gap from it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Alive {
    pub wall: DateTime<Utc>,
    /// The boot clock then, in seconds: within one boot, the gap is measured on it.
    pub boot_s: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct State {
    version: u32,
    /// Since when fleetdash has reported: nothing before it is known to a report.
    pub watching_since: DateTime<Utc>,
    /// The end of the last report's period: the next one starts here.
    pub covered_until: DateTime<Utc>,
    /// Where the last report's period began: the next compares with it.
    #[serde(default)]
    pub previous_from: Option<DateTime<Utc>>,
    /// The due moment the last report served; `None` before the first.
    #[serde(default)]
    pub last_due: Option<DateTime<Utc>>,
    #[serde(default)]
    pub pending: Option<Pending>,
    /// fleetdash's own blind spells, oldest first.
    #[serde(default)]
    pub blind: Vec<BlindSpell>,
    #[serde(default)]
    pub alive: Option<Alive>,
    /// The snapshot's `generated_at` the reporter last saw (a write that failed for long shows
    /// as a gap in it).
    #[serde(default)]
    pub snapshot_seen: Option<DateTime<Utc>>,
}

impl state_file::StateFile for State {
    const WHAT: &'static str = "report state";

    fn layout_problem(&self) -> Option<String> {
        (self.version != VERSION).then(|| format!("layout version {}, not {VERSION}", self.version))
    }
}

impl State {
    /// A first start at `now`: the first report covers from here.
    pub fn fresh(now: DateTime<Utc>) -> State {
        State {
            version: VERSION,
            watching_since: now,
            covered_until: now,
            previous_from: None,
            last_due: None,
            pending: None,
            blind: Vec::new(),
            alive: None,
            snapshot_seen: None,
        }
    }

    /// Adds a blind spell unless one as long or longer with the same words is there; drops
    /// those that ended before `forget_before`.
    pub fn note_blind(&mut self, spell: BlindSpell, forget_before: DateTime<Utc>) {
        let known = self
            .blind
            .iter()
            .any(|b| b.why == spell.why && b.from <= spell.from && b.to >= spell.to);
        if !known && spell.to >= spell.from {
            self.blind.push(spell);
            self.blind.sort_by_key(|b| b.from);
        }
        self.blind.retain(|b| b.to >= forget_before);
    }
}

/// What loading found.
pub enum Loaded {
    State(Box<State>),
    /// Missing, or corrupt and set aside: a fresh start (`true` when something was set aside).
    Fresh(bool),
    /// There, but unreadable: nothing is sent (exactly once cannot be kept without it).
    Unreadable(String),
}

pub fn path(state_dir: &Path) -> PathBuf {
    state_dir.join(FILE_NAME)
}

pub fn load(state_dir: &Path, now: DateTime<Utc>) -> Loaded {
    match state_file::load::<State>(&path(state_dir), now) {
        state_file::Loaded::Found(s) => Loaded::State(Box::new(s)),
        state_file::Loaded::Missing => Loaded::Fresh(false),
        state_file::Loaded::SetAside { .. } => Loaded::Fresh(true),
        state_file::Loaded::Unreadable(why) => Loaded::Unreadable(format!("{why:#}")),
    }
}

/// The state as it is on disk, for a reader that must change nothing (`fleetdash report`, the
/// hub's questions): a missing, unreadable or corrupt file is `None`, left where it is for
/// `run`'s reporter to judge.
pub fn read(state_dir: &Path) -> Option<State> {
    let bytes = std::fs::read(path(state_dir)).ok()?;
    let state: State = serde_json::from_slice(&bytes).ok()?;
    (state.version == VERSION).then_some(state)
}

/// Replaces the file (atomically, synced).
pub fn save(state_dir: &Path, state: &State) -> Result<()> {
    let bytes = serde_json::to_vec_pretty(state)?;
    atomic::write(&path(state_dir), &bytes)
}

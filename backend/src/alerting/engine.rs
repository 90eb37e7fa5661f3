//! Deciding what fires: after every snapshot write, the new snapshot's elements are counted per
//! key in consecutive passes, and [`pass`] says which [`Alert`]s that makes.
//!
//! Pure over (state, elements, readings, now, thresholds, deps, silences): the write side owns
//! the clock and the files; here nothing reads a clock or a disk, so every boundary is testable
//! exactly.
//! - A pass counts an element only when its write renewed the element's section (its
//!   `checked_at` moved, [`readings`]): the snapshot is written after each section's read, and
//!   an agent left red in it while the queue writes is one probe, not two.
//! - Only red fires (amber is shown, not paged). `fail_after` consecutive red passes make a
//!   Firing, so one lost probe pages nobody; `recover_after` consecutive passes no longer red
//!   (green or amber) make a Recovered, sent only for what fired; a Reminder falls due every
//!   `remind_every` while red.
//! - An element whose root cause ([`Deps`]) is down (red now, or its alert still open) raises
//!   nothing of its own; the root's Firing names what it takes down, and its Recovered repeats
//!   them (the dependents' recoveries are said by it). When the root is back and the dependent
//!   is still red, the dependent fires as anything else would. Two elements that depend on
//!   each other (a cycle in `depends_on`) hold neither back.
//! - A silenced element (a silence or a maintenance window) raises no Firing nor Reminder; its
//!   counting goes on, so the Firing goes out at the first pass after the silence if still red.
//! - A recovery is never suppressed nor silenced.
//! - An element with an open alert that a pass no longer shows (a card moved to done and out of
//!   the capped listing, a finished task, a removed agent, a removed host's checks) counts a
//!   pass not red when what lists it was read whole ([`gone_reads_green`]); so its alert closes
//!   with a Recovered ("no longer listed") instead of staying open until forgotten. Otherwise
//!   the pass says nothing of it.
//!
//! The state ([`State`]) is kept in `<state_dir>/alerts-engine.json` ([`StateFile`]), so a
//! restart mid-red sends no second Firing and forgets no open alert.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use chrono::{DateTime, Duration, Utc};
use fleetdash_model::alerts::{Element, key};
use fleetdash_model::{Asc, Band};
use serde::{Deserialize, Serialize};

use super::deps::Deps;
use super::silences::{Active, MaintenanceWindow, Silence, SilenceStore};
use super::{Alert, AlertEvent};
use crate::config::{AlertRules, Config, Rules};
use crate::redact::RedactionGate;
use crate::write::atomic;
use crate::write::transitions::Elements;

pub const FILE_NAME: &str = "alerts-engine.json";

/// An element no snapshot has shown for this long is forgotten (a removed agent, a finished
/// task). Shorter would let a section that failed for a weekend come back with its open alerts
/// forgotten, and fire them again.
pub const FORGET_UNSEEN_S: i64 = 7 * 24 * 3600;

/// An element with no open alert is forgotten sooner: the file stays the size of the fleet,
/// however many short-lived tasks pass through. Coming back red, it counts its passes again.
pub const FORGET_QUIET_S: i64 = 3600;

/// Bumped when the file's layout changes; another version is started afresh, like a corrupt file.
const VERSION: u32 = 1;

/// The thresholds, from the rules file's `alerts` group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thresholds {
    pub fail_after: u64,
    pub recover_after: u64,
    pub remind_every: Duration,
}

impl From<&AlertRules> for Thresholds {
    fn from(r: &AlertRules) -> Self {
        Thresholds {
            fail_after: r.fail_after.count,
            recover_after: r.recover_after.count,
            remind_every: Duration::seconds(
                i64::try_from(r.remind_every.seconds).unwrap_or(i64::MAX),
            ),
        }
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

/// Each collected section's `checked_at` in a snapshot, by its element key (`section:agents`).
pub type Readings = BTreeMap<String, DateTime<Utc>>;

/// The sections' readings of `snap`: what tells a pass which sections its write renewed.
pub fn readings(snap: &fleetdash_model::Snapshot) -> Readings {
    crate::collect::SectionName::PARTS
        .into_iter()
        .filter_map(|part| {
            crate::snapshot::meta(snap, part)
                .checked_at
                .map(|at| (key::section(part.as_str()), at))
        })
        .collect()
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
    fn count(&mut self, red: bool, now: DateTime<Utc>) {
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

/// What a pass needs besides the state and the elements.
pub struct PassContext<'a> {
    pub now: DateTime<Utc>,
    pub thresholds: Thresholds,
    pub deps: &'a Deps,
    /// Whether an element is silenced at `now` (a silence or a maintenance window).
    pub silenced: &'a dyn Fn(&str, &Element) -> bool,
    /// `[alerts] dashboard_url`, the alerts' click target.
    pub link: Option<&'a str>,
    /// The snapshot's sections' readings ([`readings`]). A section it does not name counts
    /// its elements at every pass.
    pub readings: &'a Readings,
}

/// One pass: counts `elements` into `state` and returns the alerts it makes, in key order.
///
/// A pass counts an element only when the write renewed the section it is collected in: the
/// snapshot is written after every section's read, and a red agent left in it while the queue
/// writes is one lost probe, not two.
pub fn pass(state: &mut State, elements: &Elements, cx: &PassContext) -> Vec<Alert> {
    let now = cx.now;
    state.version = VERSION;
    let renewed = |key: &str| match Deps::section_of(key) {
        None => true,
        Some(section) => cx
            .readings
            .get(&section)
            .is_none_or(|at| state.readings.get(&section) != Some(at)),
    };
    let counted: BTreeMap<&String, bool> = elements.keys().map(|k| (k, renewed(k))).collect();
    let gone: Vec<String> = state
        .tracks
        .iter()
        .filter(|(key, t)| t.open.is_some() && !elements.contains_key(*key))
        .filter(|(key, _)| renewed(key))
        .filter(|(key, _)| gone_reads_green(key, elements, &state.tracks, cx.deps))
        .map(|(key, _)| key.clone())
        .collect();
    state.readings = cx.readings.clone();
    for (key, el) in elements {
        let t = state.tracks.entry(key.clone()).or_insert_with(|| Track {
            red_passes: 0,
            clear_passes: 0,
            red_since: None,
            clear_since: None,
            open: None,
            seen: now,
            kind: String::new(),
            name: String::new(),
        });
        t.seen = now;
        if t.kind != el.kind || t.name != el.name {
            t.kind = el.kind.to_string();
            t.name = el.name.clone();
        }
        if counted[key] {
            t.count(el.band == Band::Red, now);
        }
    }
    for key in &gone {
        let t = state.tracks.get_mut(key).expect("listed above");
        t.count(false, now);
    }
    state.tracks.retain(|_, t| {
        let keep = if t.open.is_some() {
            FORGET_UNSEEN_S
        } else {
            FORGET_QUIET_S
        };
        (now - t.seen).num_seconds() < keep
    });

    // A root is down while red now or while its own alert is open (a root that is recovering
    // still holds back dependents a pass behind it). Two elements that depend on each other
    // (a cycle someone wrote in `depends_on`) hold neither back: each fires as itself.
    let down = |key: &str| {
        elements.get(key).is_some_and(|e| e.band == Band::Red)
            || state.tracks.get(key).is_some_and(|t| t.open.is_some())
    };
    let suppressed: BTreeMap<&String, bool> = elements
        .keys()
        .map(|k| {
            let held = cx
                .deps
                .ancestors(k)
                .iter()
                .any(|a| down(a) && !cx.deps.ancestors(a).contains(k));
            (k, held)
        })
        .collect();
    let takes_down = |root: &str| -> Vec<String> {
        elements
            .iter()
            .filter(|(k, e)| e.band != Band::Green && cx.deps.ancestors(k).contains(root))
            .map(|(_, e)| format!("{} {}", e.kind, e.name))
            .collect()
    };

    let mut alerts = Vec::new();
    for (key, el) in elements {
        let Some(t) = state.tracks.get_mut(key) else {
            continue;
        };
        let held = || suppressed[key] || (cx.silenced)(key, el);
        let alert =
            |event: AlertEvent, since: DateTime<Utc>, id: String, takes_down: Vec<String>| Alert {
                id,
                key: key.clone(),
                kind: el.kind.to_string(),
                name: el.name.clone(),
                event,
                band: el.band,
                reason: el.reason.clone().filter(|_| event != AlertEvent::Recovered),
                status: status_of(el.band),
                since,
                at: now,
                takes_down,
                link: cx.link.map(str::to_string),
            };
        match (el.band, &mut t.open) {
            (Band::Red, None) if t.red_passes >= cx.thresholds.fail_after && !held() => {
                let since = t.red_since.unwrap_or(now);
                let names = takes_down(key);
                let id = format!(
                    "{key}:{}:{}",
                    AlertEvent::Firing.as_str(),
                    since.timestamp()
                );
                alerts.push(alert(AlertEvent::Firing, since, id, names.clone()));
                t.open = Some(Open {
                    since,
                    last: now,
                    reminders: 0,
                    takes_down: names,
                });
            }
            (Band::Red, Some(open)) if now - open.last >= cx.thresholds.remind_every && !held() => {
                open.reminders += 1;
                open.last = now;
                let id = format!(
                    "{key}:{}:{}:{}",
                    AlertEvent::Reminder.as_str(),
                    open.since.timestamp(),
                    open.reminders
                );
                let names = takes_down(key);
                alerts.push(alert(AlertEvent::Reminder, open.since, id, names));
            }
            (Band::Green | Band::Amber, Some(_))
                if t.clear_passes >= cx.thresholds.recover_after =>
            {
                let open = t.open.take().expect("matched Some");
                let since = t.clear_since.unwrap_or(now);
                let id = format!(
                    "{key}:{}:{}",
                    AlertEvent::Recovered.as_str(),
                    open.since.timestamp()
                );
                alerts.push(alert(AlertEvent::Recovered, since, id, open.takes_down));
            }
            _ => {}
        }
    }
    for key in gone {
        let t = state.tracks.get_mut(&key).expect("listed above");
        if t.clear_passes < cx.thresholds.recover_after {
            continue;
        }
        let open = t.open.take().expect("gone lists open alerts only");
        alerts.push(Alert {
            id: format!(
                "{key}:{}:{}",
                AlertEvent::Recovered.as_str(),
                open.since.timestamp()
            ),
            kind: if t.kind.is_empty() {
                "element".into()
            } else {
                t.kind.clone()
            },
            name: if t.name.is_empty() {
                key.clone()
            } else {
                t.name.clone()
            },
            key,
            event: AlertEvent::Recovered,
            band: Band::Green,
            reason: Some(NO_LONGER_LISTED.into()),
            status: status_of(Band::Green),
            since: t.clear_since.unwrap_or(now),
            at: now,
            takes_down: open.takes_down,
            link: cx.link.map(str::to_string),
        });
    }
    alerts.sort_by(|a, b| a.key.cmp(&b.key));
    alerts
}

/// The reason a Recovered carries when its element is gone rather than green.
pub const NO_LONGER_LISTED: &str = "no longer listed";

/// Whether an element this pass does not show is known to be no longer failing: what lists it
/// was read whole and is fine. Each parent its key implies (a card's board, a host's check's
/// host, a task's agent, a top-level element's section) is shown, and nothing it depends on
/// (declared edges too, transitively) is down: red now, or its alert still open. A listing that left cards needing attention
/// out (`board:<name>/unlisted` not green) may be hiding it: unknown, not green.
pub fn gone_reads_green(
    key: &str,
    elements: &Elements,
    tracks: &BTreeMap<String, Track>,
    deps: &Deps,
) -> bool {
    // A parent gone too (a host removed from the config, with its checks) vouches for its
    // children when its own lister does.
    let implied = Deps::implied_parents(key);
    if implied.is_empty()
        || !implied
            .iter()
            .all(|p| elements.contains_key(p) || gone_reads_green(p, elements, tracks, deps))
    {
        return false;
    }
    let down = |k: &str| {
        elements.get(k).is_some_and(|e| e.band == Band::Red)
            || tracks.get(k).is_some_and(|t| t.open.is_some())
    };
    if deps.ancestors(key).iter().any(|p| down(p)) {
        return false;
    }
    let left_out = key
        .split_once('/')
        .and_then(|(under, _)| under.strip_prefix("board:"))
        .and_then(|board| elements.get(&key::unlisted_cards(board)));
    left_out.is_none_or(|e| e.band == Band::Green)
}

/// Elements carry a band, not a status code: the alert's ASC says the family the band means
/// (red: a failure monitoring keeps retrying; amber: success with warnings).
fn status_of(band: Band) -> Asc {
    match band {
        Band::Green => Asc::SUCCESS,
        Band::Amber => Asc::SUCCESS_WITH_WARNINGS,
        _ => Asc::RETRYABLE_ERROR,
    }
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
    /// another layout), said in the log with its path: alerting never fails a write.
    pub fn load(&self) -> State {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return State::default(),
            Err(e) => {
                tracing::warn!(file = %self.path.display(), "alert engine state unreadable, starting afresh: {e}");
                return State::default();
            }
        };
        match serde_json::from_str::<State>(&text) {
            Ok(s) if s.version == VERSION => s,
            Ok(s) => {
                tracing::warn!(file = %self.path.display(), "alert engine state of version {} (expected {VERSION}), starting afresh", s.version);
                State::default()
            }
            Err(e) => {
                tracing::warn!(file = %self.path.display(), "alert engine state corrupt, starting afresh: {e}");
                State::default()
            }
        }
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

/// What one pass decided: its alerts, and the state to save once they are safe.
#[derive(Debug, Clone)]
pub struct Decision {
    pub alerts: Vec<Alert>,
    state: State,
}

/// The engine as the write side runs it: built once from the config, then
/// [`Alerting::after_write`] after every snapshot write.
pub struct Alerting {
    thresholds: Thresholds,
    deps: Deps,
    link: Option<String>,
    windows: Vec<MaintenanceWindow>,
    state: StateFile,
    silences: SilenceStore,
}

impl Alerting {
    pub fn new(config: &Config, rules: &Rules, gate: RedactionGate) -> Self {
        Alerting {
            thresholds: Thresholds::from(&rules.alerts),
            deps: Deps::from_config(config),
            link: config.alerts.dashboard_url.as_ref().map(|u| u.to_string()),
            windows: config.alerts.maintenance.clone(),
            state: StateFile::new(&config.state_dir, gate.clone()),
            silences: SilenceStore::new(&config.state_dir, gate),
        }
    }

    /// The operator's silences; an unreadable or corrupt file is logged with its path and
    /// silences nothing (an alert too many beats a page lost).
    fn silences(&self) -> Vec<Silence> {
        self.silences.load().unwrap_or_else(|e| {
            tracing::warn!(file = %self.silences.path().display(), "silences not read, none applied: {e:#}");
            Vec::new()
        })
    }

    /// One pass over the new snapshot's elements at the write's clock, then its state saved:
    /// [`Alerting::decide`] and [`Alerting::commit`] in one. Blocking (reads, fsync): call from
    /// a blocking thread.
    pub fn after_write(
        &self,
        elements: &Elements,
        readings: &Readings,
        now: DateTime<Utc>,
    ) -> Vec<Alert> {
        let decision = self.decide(elements, readings, now);
        self.commit(&decision);
        decision.alerts
    }

    /// One pass, not yet saved. For at-least-once delivery the write side puts
    /// [`Decision::alerts`] in the outbox first and [`Alerting::commit`]s after: a crash in
    /// between replays the same pass next time, making the same alert ids, which the outbox's
    /// dedupe key drops. Blocking (reads).
    pub fn decide(&self, elements: &Elements, readings: &Readings, now: DateTime<Utc>) -> Decision {
        let mut state = self.state.load();
        let silences = self.silences();
        let silenced = |key: &str, el: &Element| {
            super::silences::active(&silences, &self.windows, key, el, now).is_some()
        };
        let cx = PassContext {
            now,
            thresholds: self.thresholds,
            deps: &self.deps,
            silenced: &silenced,
            link: self.link.as_deref(),
            readings,
        };
        let alerts = pass(&mut state, elements, &cx);
        Decision { alerts, state }
    }

    /// Saves the pass's state; a failed save is logged with its path, never a failed write.
    /// Blocking (fsync).
    pub fn commit(&self, decision: &Decision) {
        if let Err(e) = self.state.save(&decision.state) {
            tracing::warn!(file = %self.state.path().display(), "alert engine state not saved: {e:#}");
        }
    }

    /// What holds each element's alerts back at `now`, by key, for the snapshot to carry
    /// ("silenced until 16:00 (disk swap)"). Blocking (reads the silences file).
    pub fn holds(&self, elements: &Elements, now: DateTime<Utc>) -> BTreeMap<String, Active> {
        let silences = self.silences();
        elements
            .iter()
            .filter_map(|(key, el)| {
                super::silences::active(&silences, &self.windows, key, el, now)
                    .map(|a| (key.clone(), a))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::fleet_alert_rules;
    use crate::write::transitions;
    use fleetdash_model::Snapshot;

    fn t0() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-11-30T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    fn el(kind: &'static str, name: &str, band: Band) -> Element {
        Element {
            kind,
            name: name.into(),
            band,
            reason: (band != Band::Green).then(|| "error: connection refused".into()),
        }
    }

    /// Drives passes with a controlled clock (one pass a minute) and the fleet's thresholds.
    struct Bench {
        state: State,
        now: DateTime<Utc>,
        th: Thresholds,
        deps: Deps,
        silenced: Vec<String>,
        /// The sections' readings the passes see; none: every pass counts every element.
        readings: Readings,
    }

    impl Bench {
        fn new() -> Self {
            Bench {
                state: State::default(),
                now: t0(),
                th: Thresholds::from(&fleet_alert_rules()),
                deps: Deps::default(),
                silenced: Vec::new(),
                readings: Readings::new(),
            }
        }

        fn at(
            &mut self,
            now: DateTime<Utc>,
            elements: &[(&str, Element)],
        ) -> Vec<(String, AlertEvent)> {
            self.now = now;
            self.full(elements)
                .into_iter()
                .map(|a| (a.key, a.event))
                .collect()
        }

        fn next(&mut self, elements: &[(&str, Element)]) -> Vec<(String, AlertEvent)> {
            let now = self.now + Duration::minutes(1);
            self.at(now, elements)
        }

        fn full(&mut self, elements: &[(&str, Element)]) -> Vec<Alert> {
            let elements: Elements = elements
                .iter()
                .map(|(k, e)| (k.to_string(), e.clone()))
                .collect();
            self.full_elements(elements)
        }

        fn full_elements(&mut self, elements: Elements) -> Vec<Alert> {
            let silenced = self.silenced.clone();
            let is_silenced = move |k: &str, _: &Element| silenced.iter().any(|s| s == k);
            let cx = PassContext {
                now: self.now,
                thresholds: self.th,
                deps: &self.deps,
                silenced: &is_silenced,
                link: Some("https://dash.example/"),
                readings: &self.readings,
            };
            pass(&mut self.state, &elements, &cx)
        }

        /// A pass over a snapshot as the write side runs it: its elements and its readings.
        fn write(&mut self, snap: &Snapshot) -> Vec<Alert> {
            self.readings = readings(snap);
            self.full_elements(transitions::elements(snap))
        }
    }

    fn fired(key: &str, event: AlertEvent) -> Vec<(String, AlertEvent)> {
        vec![(key.to_string(), event)]
    }

    #[test]
    fn firing_after_exactly_fail_after_red_passes_and_a_single_lost_probe_pages_nobody() {
        let mut b = Bench::new();
        let n = b.th.fail_after;
        assert!(n >= 2, "the fleet's rule lets one lost probe pass");
        let red = [("agent:min", el("agent", "min", Band::Red))];
        let green = [("agent:min", el("agent", "min", Band::Green))];
        // One lost probe, then green: nothing.
        assert!(b.next(&red).is_empty());
        assert!(b.next(&green).is_empty());
        // N-1 red passes: nothing; the N-th: Firing, once.
        for _ in 1..n {
            assert!(b.next(&red).is_empty());
        }
        assert_eq!(b.next(&red), fired("agent:min", AlertEvent::Firing));
        assert!(b.next(&red).is_empty());
    }

    #[test]
    fn amber_never_pages_and_breaks_a_red_run() {
        let mut b = Bench::new();
        let red = [("agent:min", el("agent", "min", Band::Red))];
        let amber = [("agent:min", el("agent", "min", Band::Amber))];
        for _ in 0..5 {
            assert!(b.next(&amber).is_empty());
        }
        for _ in 1..b.th.fail_after {
            assert!(b.next(&red).is_empty());
            assert!(b.next(&amber).is_empty());
        }
    }

    #[test]
    fn recovered_after_exactly_recover_after_green_passes_and_only_for_what_fired() {
        let mut b = Bench::new();
        let red = [("host:lab", el("host", "lab", Band::Red))];
        let green = [("host:lab", el("host", "lab", Band::Green))];
        for _ in 0..b.th.fail_after {
            b.next(&red);
        }
        // A green pass short of the threshold, then red again: still the same open alert.
        assert!(b.next(&green).is_empty());
        assert!(b.next(&red).is_empty());
        for _ in 1..b.th.recover_after {
            assert!(b.next(&green).is_empty());
        }
        let alerts = b.full(&green);
        assert_eq!(alerts.len(), 1);
        let a = &alerts[0];
        assert_eq!(a.event, AlertEvent::Recovered);
        assert_eq!(a.reason, None);
        assert_eq!(a.headline(), "✔ ok · host lab recovered");
        // Green after a red that never fired: no recovery.
        let mut b = Bench::new();
        b.next(&red);
        for _ in 0..5 {
            assert!(b.next(&green).is_empty());
        }
    }

    #[test]
    fn a_reminder_falls_due_at_exactly_the_interval_while_red() {
        let mut b = Bench::new();
        let red = [("agent:min", el("agent", "min", Band::Red))];
        for _ in 1..b.th.fail_after {
            b.next(&red);
        }
        let fired_at = b.now + Duration::minutes(1);
        assert_eq!(b.at(fired_at, &red), fired("agent:min", AlertEvent::Firing));
        let every = b.th.remind_every;
        assert!(
            b.at(fired_at + every - Duration::seconds(1), &red)
                .is_empty()
        );
        let alerts = {
            b.now = fired_at + every;
            b.full(&red)
        };
        assert_eq!(alerts.len(), 1);
        assert_eq!(alerts[0].event, AlertEvent::Reminder);
        assert!(
            alerts[0].headline().ends_with("(still)"),
            "{}",
            alerts[0].headline()
        );
        assert!(alerts[0].id.ends_with(":1"), "{}", alerts[0].id);
        // The next one counts from this reminder.
        assert!(
            b.at(fired_at + every * 2 - Duration::seconds(1), &red)
                .is_empty()
        );
        assert_eq!(
            b.at(fired_at + every * 2, &red),
            fired("agent:min", AlertEvent::Reminder)
        );
    }

    #[test]
    fn the_alert_carries_its_dedupe_key_since_reason_and_link() {
        let mut b = Bench::new();
        let red = [("agent:min", el("agent", "min", Band::Red))];
        let first = b.now + Duration::minutes(1);
        let mut alerts = Vec::new();
        for _ in 0..b.th.fail_after {
            b.now += Duration::minutes(1);
            alerts = b.full(&red);
        }
        let a = &alerts[0];
        assert_eq!(a.id, format!("agent:min:firing:{}", first.timestamp()));
        assert_eq!(a.since, first);
        assert_eq!(a.at, b.now);
        assert_eq!(a.reason.as_deref(), Some("error: connection refused"));
        assert_eq!(a.link.as_deref(), Some("https://dash.example/"));
        assert_eq!(a.status, Asc::RETRYABLE_ERROR);
    }

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
        after.state = file.load();
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
        assert_eq!(file.load(), State::default());
        std::fs::write(file.path(), "{not json").unwrap();
        let (loaded, logs) = crate::logging::logs_of(|| file.load());
        assert_eq!(loaded, State::default());
        assert!(
            logs.contains("alert engine state corrupt, starting afresh"),
            "{logs}"
        );
        assert!(logs.contains(&file.path().display().to_string()), "{logs}");
        std::fs::write(file.path(), r#"{"version":99,"tracks":{}}"#).unwrap();
        assert_eq!(file.load(), State::default());
    }

    #[test]
    fn an_element_unseen_for_a_while_keeps_its_open_alert_and_is_forgotten_after_a_week() {
        let mut b = Bench::new();
        let red = [("agent:min", el("agent", "min", Band::Red))];
        for _ in 0..b.th.fail_after {
            b.next(&red);
        }
        // The agents section failed for a day: the agent is absent, then red again.
        let later = b.now + Duration::days(1);
        assert!(b.at(later, &[]).is_empty());
        assert_eq!(
            b.at(later + Duration::minutes(1), &red),
            fired("agent:min", AlertEvent::Reminder)
        );
        b.at(later + Duration::seconds(FORGET_UNSEEN_S + 120), &[]);
        assert!(b.state.tracks.is_empty());
    }

    /// A board read whole: its element, its section, and nothing needing attention left out.
    fn board_read(unlisted: Band) -> Vec<(&'static str, Element)> {
        vec![
            (
                "section:tasks.board",
                el("section", "tasks.board", Band::Green),
            ),
            ("board:lab", el("board", "lab", Band::Green)),
            (
                "board:lab/unlisted",
                el("card", "cards of lab not listed", unlisted),
            ),
        ]
    }

    fn with_card(
        mut els: Vec<(&'static str, Element)>,
        band: Band,
    ) -> Vec<(&'static str, Element)> {
        els.push(("board:lab/card:c1", el("card", "rotate the keys", band)));
        els
    }

    /// Was: a card that recovered was listed once more, then left the capped listing; with no
    /// other writes between board reads it had one green pass, short of `recover_after`, and
    /// its alert stayed open (no Recovered) until forgotten a week later.
    #[test]
    fn a_card_gone_from_a_board_read_whole_recovers_as_no_longer_listed() {
        let mut b = Bench::new();
        assert_eq!(
            b.th.recover_after, 2,
            "one green listing, then one pass gone"
        );
        let red_from = b.now + Duration::minutes(1);
        for _ in 1..b.th.fail_after {
            assert!(
                b.next(&with_card(board_read(Band::Green), Band::Red))
                    .is_empty()
            );
        }
        assert_eq!(
            b.next(&with_card(board_read(Band::Green), Band::Red)),
            fired("board:lab/card:c1", AlertEvent::Firing)
        );
        // Done: listed once more, green.
        assert!(
            b.next(&with_card(board_read(Band::Green), Band::Green))
                .is_empty()
        );
        let green_at = b.now;
        // Then out of the listing.
        b.now += Duration::minutes(1);
        let alerts = b.full(&board_read(Band::Green));
        assert_eq!(alerts.len(), 1, "{alerts:#?}");
        let r = &alerts[0];
        assert_eq!(
            (r.key.as_str(), r.event, r.kind.as_str(), r.name.as_str()),
            (
                "board:lab/card:c1",
                AlertEvent::Recovered,
                "card",
                "rotate the keys"
            )
        );
        assert_eq!(r.band, Band::Green);
        assert_eq!(r.reason.as_deref(), Some(NO_LONGER_LISTED));
        assert_eq!(r.since, green_at, "green since its last listing");
        assert_eq!(
            r.id,
            format!("board:lab/card:c1:recovered:{}", red_from.timestamp()),
            "the same dedupe key as a Recovered of a shown element"
        );
        assert!(
            r.headline()
                .ends_with("card rotate the keys recovered (no longer listed)"),
            "{}",
            r.headline()
        );
        assert!(b.state.tracks["board:lab/card:c1"].open.is_none());
        // Closed once: later passes without it say nothing.
        assert!(b.next(&board_read(Band::Green)).is_empty());
    }

    /// Gone from a listing that cannot vouch for it, an open alert stays open and its passes
    /// count nothing: the board failed (red), its section is stale, or the cap left cards
    /// needing attention out (it may be one of them). Once the board is read whole again, it
    /// counts green. (A board gone from a fresh section was removed from the config: its cards
    /// recover with it, see `a_check_of_a_host_removed_from_the_config_recovers_with_it`.)
    #[test]
    fn a_card_gone_from_a_listing_that_cannot_vouch_for_it_keeps_its_alert_open() {
        let mut b = Bench::new();
        for _ in 0..b.th.fail_after {
            b.next(&with_card(board_read(Band::Green), Band::Red));
        }
        assert!(b.state.tracks["board:lab/card:c1"].open.is_some());
        let mut board_red = board_read(Band::Green);
        board_red[1].1 = el("board", "lab", Band::Red);
        let mut section_stale = board_read(Band::Green);
        section_stale[0].1 = el("section", "tasks.board", Band::Red);
        let cannot_vouch = [
            board_red,
            section_stale,
            board_read(Band::Red),
            board_read(Band::Amber),
        ];
        for els in &cannot_vouch {
            for _ in 0..3 {
                let alerts = b.next(els);
                assert!(
                    alerts.iter().all(|(key, _)| key != "board:lab/card:c1"),
                    "{els:?}: {alerts:#?}"
                );
            }
            let t = &b.state.tracks["board:lab/card:c1"];
            assert!(t.open.is_some() && t.clear_passes == 0, "{els:?}: {t:?}");
        }
        // The board's own alerts (it was red) must close before it vouches for its cards.
        let mut closed = Vec::new();
        for _ in 0..b.th.recover_after * 2 + 1 {
            closed.extend(b.next(&board_read(Band::Green)));
        }
        assert!(
            closed.contains(&("board:lab/card:c1".to_string(), AlertEvent::Recovered)),
            "{closed:?}"
        );
        assert!(b.state.tracks["board:lab/card:c1"].open.is_none());
    }

    /// A state file written before tracks kept their element's kind and name still loads; a
    /// Recovered for an element gone since says its key.
    #[test]
    fn a_track_without_kind_and_name_loads_and_recovers_by_its_key() {
        let mut b = Bench::new();
        for _ in 0..b.th.fail_after {
            b.next(&with_card(board_read(Band::Green), Band::Red));
        }
        let mut json = serde_json::to_value(&b.state).unwrap();
        let track = &mut json["tracks"]["board:lab/card:c1"];
        track.as_object_mut().unwrap().remove("kind");
        track.as_object_mut().unwrap().remove("name");
        b.state = serde_json::from_value(json).unwrap();
        let mut got = Vec::new();
        for _ in 0..b.th.recover_after {
            got.extend(b.full(&board_read(Band::Green)));
            b.now += Duration::minutes(1);
        }
        assert_eq!(got.len(), 1, "{got:#?}");
        assert_eq!(got[0].name, "board:lab/card:c1");
        assert_eq!(got[0].event, AlertEvent::Recovered);
    }

    #[test]
    fn an_element_that_never_fired_is_forgotten_after_an_hour_unseen() {
        let mut b = Bench::new();
        let tasks: Vec<(String, Element)> = (0..50)
            .map(|i| {
                (
                    format!("task:min/t{i}"),
                    el("task", &format!("t{i}"), Band::Green),
                )
            })
            .collect();
        run(&mut b, &tasks);
        assert_eq!(b.state.tracks.len(), 50);
        let seen = b.now;
        b.at(seen + Duration::seconds(FORGET_QUIET_S - 1), &[]);
        assert_eq!(b.state.tracks.len(), 50);
        b.at(seen + Duration::seconds(FORGET_QUIET_S), &[]);
        assert!(b.state.tracks.is_empty());
    }

    /// host lab -> tunnel lab-heart (on lab) -> 5 agents behind it.
    fn chain(host: Band, tunnel: Band, agents: Band) -> Vec<(String, Element)> {
        let mut out = vec![
            ("host:lab".to_string(), el("host", "lab", host)),
            (
                "host:lab/tunnel:lab-heart".to_string(),
                el("tunnel", "lab-heart on lab", tunnel),
            ),
        ];
        for i in 1..=5 {
            out.push((format!("agent:a{i}"), el("agent", &format!("a{i}"), agents)));
        }
        out
    }

    fn chain_bench() -> Bench {
        let mut b = Bench::new();
        for i in 1..=5 {
            b.deps
                .add(&format!("agent:a{i}"), "host:lab/tunnel:lab-heart");
        }
        b
    }

    fn run(b: &mut Bench, els: &[(String, Element)]) -> Vec<Alert> {
        b.now += Duration::minutes(1);
        let refs: Vec<(&str, Element)> = els.iter().map(|(k, e)| (k.as_str(), e.clone())).collect();
        b.full(&refs)
    }

    #[test]
    fn a_host_down_suppresses_its_tunnel_and_the_agents_behind_it_and_names_them() {
        let mut b = chain_bench();
        let down = chain(Band::Red, Band::Red, Band::Red);
        let mut all = Vec::new();
        for _ in 0..b.th.fail_after + 3 {
            all.extend(run(&mut b, &down));
        }
        assert_eq!(all.len(), 1, "{all:#?}");
        let root = &all[0];
        assert_eq!(
            (root.key.as_str(), root.event),
            ("host:lab", AlertEvent::Firing)
        );
        assert_eq!(root.takes_down.len(), 6, "{:?}", root.takes_down);
        assert!(
            root.takes_down
                .contains(&"tunnel lab-heart on lab".to_string())
        );
        assert!(root.takes_down.contains(&"agent a3".to_string()));
        assert!(
            root.headline().contains("(6 unreachable)"),
            "{}",
            root.headline()
        );
        // Everything back: the root's recovery goes out, naming them; the dependents that never
        // fired send none.
        let up = chain(Band::Green, Band::Green, Band::Green);
        let mut back = Vec::new();
        for _ in 0..b.th.recover_after + 2 {
            back.extend(run(&mut b, &up));
        }
        assert_eq!(back.len(), 1, "{back:#?}");
        assert_eq!(
            (back[0].key.as_str(), back[0].event),
            ("host:lab", AlertEvent::Recovered)
        );
        assert_eq!(back[0].takes_down.len(), 6);
    }

    #[test]
    fn the_tunnel_down_alone_names_its_five_agents() {
        let mut b = chain_bench();
        let down = chain(Band::Green, Band::Red, Band::Red);
        let mut all = Vec::new();
        for _ in 0..b.th.fail_after {
            all.extend(run(&mut b, &down));
        }
        assert_eq!(all.len(), 1, "{all:#?}");
        assert_eq!(all[0].key, "host:lab/tunnel:lab-heart");
        assert_eq!(
            all[0].headline(),
            "✖ fail · tunnel lab-heart on lab: error: connection refused (5 unreachable)"
        );
    }

    #[test]
    fn a_dependent_red_while_its_root_is_green_fires_normally() {
        let mut b = chain_bench();
        let one = chain(Band::Green, Band::Green, Band::Green)
            .into_iter()
            .map(|(k, e)| {
                if k == "agent:a2" {
                    (k, el("agent", "a2", Band::Red))
                } else {
                    (k, e)
                }
            })
            .collect::<Vec<_>>();
        let mut all = Vec::new();
        for _ in 0..b.th.fail_after {
            all.extend(run(&mut b, &one));
        }
        assert_eq!(all.len(), 1);
        assert_eq!(
            (all[0].key.as_str(), all[0].event),
            ("agent:a2", AlertEvent::Firing)
        );
        assert!(all[0].takes_down.is_empty());
    }

    #[test]
    fn a_recovery_is_never_suppressed_and_a_dependent_still_red_after_its_root_fires() {
        let mut b = chain_bench();
        // a1 fails on its own first and fires.
        let mut a1_red = chain(Band::Green, Band::Green, Band::Green);
        a1_red[2].1 = el("agent", "a1", Band::Red);
        for _ in 0..b.th.fail_after {
            run(&mut b, &a1_red);
        }
        // Then the tunnel goes down; a1 comes back while the tunnel is still down: its
        // recovery goes out.
        let mut tunnel_down = chain(Band::Green, Band::Red, Band::Red);
        tunnel_down[2].1 = el("agent", "a1", Band::Green);
        let mut all = Vec::new();
        for _ in 0..b.th.fail_after.max(b.th.recover_after) {
            all.extend(run(&mut b, &tunnel_down));
        }
        let events: Vec<(&str, AlertEvent)> =
            all.iter().map(|a| (a.key.as_str(), a.event)).collect();
        assert!(
            events.contains(&("agent:a1", AlertEvent::Recovered)),
            "{events:?}"
        );
        assert!(
            events.contains(&("host:lab/tunnel:lab-heart", AlertEvent::Firing)),
            "{events:?}"
        );
        assert_eq!(events.len(), 2, "{events:?}");
        // The tunnel recovers, agent a4 stays red: the tunnel's Recovered, then a4 fires as
        // its own fault.
        let mut a4_red = chain(Band::Green, Band::Green, Band::Green);
        a4_red[5].1 = el("agent", "a4", Band::Red);
        let mut all = Vec::new();
        for _ in 0..b.th.recover_after + 1 {
            all.extend(run(&mut b, &a4_red));
        }
        let events: Vec<(&str, AlertEvent)> =
            all.iter().map(|a| (a.key.as_str(), a.event)).collect();
        assert_eq!(
            events,
            vec![
                ("host:lab/tunnel:lab-heart", AlertEvent::Recovered),
                ("agent:a4", AlertEvent::Firing)
            ]
        );
    }

    /// A work-queue task as the queue judges it at `now` (the model's one judge): unACKed past
    /// the rules' limit, orphaned by the watchdog, or past its deadline.
    fn queue_task(id: &str, state: &str, now: DateTime<Utc>) -> fleetdash_model::QueueTask {
        let mut t = fleetdash_model::QueueTask {
            id: id.into(),
            title: format!("task {id}"),
            owner: None,
            tagged: vec!["sol".into()],
            created_by: "hub".into(),
            created_at: now - Duration::hours(2),
            deadline: None,
            state: state.into(),
            ack: None,
            blocked_on: None,
            last_report_at: None,
            status_message: None,
            worker_died: false,
            band: Band::Green,
            status: Asc::SUCCESS,
            reason: None,
            checked_at: now,
            stale: false,
        };
        if id == "orphaned" {
            t.status_message = Some(fleetdash_model::queue::ORPHANED_MESSAGE.into());
        }
        if id == "late" {
            t.owner = Some("sol".into());
            t.ack = Some(fleetdash_model::QueueAck {
                kind: "owning".into(),
                by: "sol".into(),
                at: now - Duration::hours(2),
                eta: None,
                to: None,
            });
            t.deadline = Some(now - Duration::minutes(5));
        }
        (t.band, t.status, t.reason) = t.judge(600, now);
        t
    }

    /// What `fleetdash run` hands the engine: a snapshot's elements. Each of a work-queue
    /// task's reds fires with the queue's own reason.
    #[test]
    fn work_queue_tasks_unacked_orphaned_or_late_fire_with_their_reason() {
        let mut b = Bench::new();
        let mut fired = Vec::new();
        for _ in 0..b.th.fail_after {
            b.now += Duration::minutes(1);
            let mut snap = Snapshot::empty(b.now, crate::config::fleet_rules());
            snap.tasks.queue = fleetdash_model::Probe::Value(vec![
                queue_task("unacked", "TASK_STATE_SUBMITTED", b.now),
                queue_task("orphaned", "TASK_STATE_FAILED", b.now),
                queue_task("late", "TASK_STATE_WORKING", b.now),
            ]);
            fired.extend(b.full_elements(transitions::elements(&snap)));
        }
        let got: Vec<(&str, AlertEvent, &str)> = fired
            .iter()
            .map(|a| (a.key.as_str(), a.event, a.reason.as_deref().unwrap_or("")))
            .collect();
        assert_eq!(got.len(), 3, "{got:#?}");
        assert!(got.iter().all(|g| g.1 == AlertEvent::Firing), "{got:#?}");
        let reason = |key: &str| got.iter().find(|g| g.0 == key).map(|g| g.2).unwrap();
        assert!(
            reason("queue:unacked").starts_with("no ACK for "),
            "{got:#?}"
        );
        assert_eq!(reason("queue:orphaned"), "orphaned: no reply produced");
        assert!(
            reason("queue:late").starts_with("deadline passed"),
            "{got:#?}"
        );
    }

    /// A section gone stale fires as its own element and speaks for what it collects: an agent
    /// red in it raises nothing while the section is down, and is named by the section's alert.
    /// Once the section is fresh again and the agent still red, the agent fires.
    #[test]
    fn a_stale_section_is_a_root_for_its_elements() {
        let mut b = Bench::new();
        let snap_at = |now: DateTime<Utc>, stale: bool| {
            let mut snap = Snapshot::empty(now, crate::config::fleet_rules());
            snap.agents = fleetdash_model::Probe::Value(vec![
                crate::write::history::tests::agent("a1", false, now),
                crate::write::history::tests::agent("a2", true, now),
            ]);
            snap.sections.agents = fleetdash_model::SectionMeta {
                configured: true,
                checked_at: Some(now - Duration::minutes(if stale { 30 } else { 0 })),
                duration_ms: Some(5),
                stale,
            };
            if stale {
                snap.stale_reasons = vec!["agents: 30 min old".into()];
            }
            snap
        };
        let mut all = Vec::new();
        for _ in 0..b.th.fail_after + 2 {
            b.now += Duration::minutes(1);
            all.extend(b.full_elements(transitions::elements(&snap_at(b.now, true))));
        }
        assert_eq!(all.len(), 1, "{all:#?}");
        assert_eq!(
            (all[0].key.as_str(), all[0].event),
            ("section:agents", AlertEvent::Firing)
        );
        assert_eq!(all[0].reason.as_deref(), Some("30 min old"));
        assert_eq!(all[0].takes_down, vec!["agent a1".to_string()]);
        // The section's recovery, then (the pass after: the root's alert is closed) the agent.
        let mut back = Vec::new();
        for _ in 0..b.th.recover_after + 1 {
            b.now += Duration::minutes(1);
            back.extend(b.full_elements(transitions::elements(&snap_at(b.now, false))));
        }
        let events: Vec<(&str, AlertEvent)> =
            back.iter().map(|a| (a.key.as_str(), a.event)).collect();
        assert_eq!(
            events,
            vec![
                ("section:agents", AlertEvent::Recovered),
                ("agent:a1", AlertEvent::Firing)
            ],
            "{back:#?}"
        );
    }

    #[test]
    fn silenced_raises_nothing_then_fires_when_the_silence_ends_and_recovers_during_one() {
        let mut b = Bench::new();
        let red = [("host:lab", el("host", "lab", Band::Red))];
        let green = [("host:lab", el("host", "lab", Band::Green))];
        b.silenced = vec!["host:lab".into()];
        for _ in 0..b.th.fail_after + 3 {
            assert!(b.next(&red).is_empty());
        }
        b.silenced.clear();
        assert_eq!(b.next(&red), fired("host:lab", AlertEvent::Firing));
        // Silenced again: no reminder, but its recovery goes out.
        b.silenced = vec!["host:lab".into()];
        let late = b.now + b.th.remind_every * 2;
        assert!(b.at(late, &red).is_empty());
        for _ in 1..b.th.recover_after {
            assert!(b.next(&green).is_empty());
        }
        assert_eq!(b.next(&green), fired("host:lab", AlertEvent::Recovered));
    }

    #[test]
    fn after_write_keeps_state_and_reads_silences_from_state_dir_across_restarts() {
        let (dir, path) = crate::config::config_beside_fleet_rules(
            "output_dir = \"o\"\nstate_dir = \"s\"\nrules = \"rules.yaml\"\n\
             [alerts]\ndashboard_url = \"https://fleet.example/\"\n",
        );
        std::fs::create_dir_all(dir.path().join("s")).unwrap();
        let (config, rules) = Config::load(&path).unwrap_or_else(|e| panic!("{e}"));
        let gate = RedactionGate::default();
        let red: Elements = [("host:lab".to_string(), el("host", "lab", Band::Red))].into();
        let store = SilenceStore::new(&config.state_dir, gate.clone());
        let mut now = t0();
        let silence = store
            .add(
                vec![super::super::silences::Matcher::parse("host=lab").unwrap()],
                Duration::minutes(10),
                "disk swap",
                now,
            )
            .unwrap();
        let engine = Alerting::new(&config, &rules, gate.clone());
        for _ in 0..rules.alerts.fail_after.count + 1 {
            now += Duration::minutes(1);
            assert!(engine.after_write(&red, &Readings::new(), now).is_empty());
        }
        assert_eq!(
            engine.holds(&red, now)["host:lab"].describe(),
            "silenced until 12:10 (disk swap)"
        );
        store.end(&silence.id, now).unwrap();
        now += Duration::minutes(1);
        let fired = engine.after_write(&red, &Readings::new(), now);
        assert_eq!(fired.len(), 1);
        assert_eq!(fired[0].link.as_deref(), Some("https://fleet.example/"));
        // A restart: a new engine over the same state_dir sends no second Firing.
        let engine = Alerting::new(&config, &rules, gate);
        now += Duration::minutes(1);
        assert!(engine.after_write(&red, &Readings::new(), now).is_empty());
        assert!(engine.holds(&red, now).is_empty());
    }

    #[test]
    fn a_pass_not_committed_is_replayed_with_the_same_alert_ids() {
        let (dir, path) = crate::config::config_beside_fleet_rules(
            "output_dir = \"o\"\nstate_dir = \"s\"\nrules = \"rules.yaml\"\n",
        );
        std::fs::create_dir_all(dir.path().join("s")).unwrap();
        let (config, rules) = Config::load(&path).unwrap_or_else(|e| panic!("{e}"));
        let engine = Alerting::new(&config, &rules, RedactionGate::default());
        let red: Elements = [("host:lab".to_string(), el("host", "lab", Band::Red))].into();
        let mut now = t0();
        for _ in 1..rules.alerts.fail_after.count {
            now += Duration::minutes(1);
            engine.after_write(&red, &Readings::new(), now);
        }
        now += Duration::minutes(1);
        let first = engine.decide(&red, &Readings::new(), now);
        assert_eq!(first.alerts.len(), 1);
        // A crash before commit: the next pass makes the same Firing (the outbox drops it).
        let again = engine.decide(&red, &Readings::new(), now + Duration::minutes(1));
        assert_eq!(again.alerts.len(), 1);
        assert_eq!(again.alerts[0].id, first.alerts[0].id);
        engine.commit(&again);
        assert!(
            engine
                .decide(&red, &Readings::new(), now + Duration::minutes(2))
                .alerts
                .is_empty()
        );
    }

    // Found in review: each of these failed before its fix.

    /// Host lab as the systems collector judges it (its row's band folds its checks).
    fn lab(
        now: DateTime<Utc>,
        vault_ok: bool,
        nginx_ok: bool,
        tunnel_ok: bool,
    ) -> fleetdash_model::System {
        use crate::write::history::tests::{check, host};
        let mut h = host("lab", 3, now);
        h.services = vec![check("nginx", nginx_ok, now)];
        h.tunnels = vec![check("lab-heart", tunnel_ok, now)];
        h.vault_parity = fleetdash_model::Probe::Value(vault_ok);
        h.vault_reason = (!vault_ok).then(|| "3 uncommitted changes".into());
        crate::collect::systems::rejudge(&mut h);
        h
    }

    /// Was: a pass was any section's write, so one lost agent probe, left red in the snapshot
    /// while the queue wrote, made two red passes and paged. Now only a write that renewed the
    /// agents section counts the agent; a second lost probe still fires.
    #[test]
    fn one_lost_probe_left_in_the_snapshot_while_another_section_writes_pages_nobody() {
        use crate::collect::{SectionData, SectionName};
        use crate::write::history::tests::{agent, update};
        let mut b = Bench::new();
        assert_eq!(b.th.fail_after, 2);
        let configured = [SectionName::Agents, SectionName::Queue];
        let mut snap = Snapshot::empty(t0(), crate::config::fleet_rules());
        // One section's read at `at`, written as the writer does, and the engine's pass after.
        let mut read = |at: DateTime<Utc>, data: SectionData| {
            b.now = at;
            crate::snapshot::apply(&mut snap, update(data, at));
            crate::snapshot::finalize(&mut snap, &configured, crate::config::fleet_rules(), at);
            let alerts = b.write(&snap);
            alerts
                .iter()
                .map(|a| (a.key.clone(), a.event))
                .collect::<Vec<_>>()
        };
        let agents = |up: bool, at| SectionData::Agents(vec![agent("min", up, at)]);
        let queue = || SectionData::Queue(fleetdash_model::Probe::Value(vec![]));
        let mut events = Vec::new();
        // t0: min answers; the queue is read.
        events.extend(read(t0(), agents(true, t0())));
        events.extend(read(t0(), queue()));
        // t0+2m: ONE agents probe lost (min red); 20 s later the queue writes (no new probe).
        let lost_at = t0() + Duration::minutes(2);
        events.extend(read(lost_at, agents(false, lost_at)));
        events.extend(read(lost_at + Duration::seconds(20), queue()));
        assert!(
            !events.contains(&("agent:min".to_string(), AlertEvent::Firing)),
            "one lost probe paged: {events:?}"
        );
        // The next agents read finds min red again: the second red probe fires.
        let again = t0() + Duration::minutes(4);
        assert_eq!(
            read(again, agents(false, again)),
            [("agent:min".to_string(), AlertEvent::Firing)]
        );
    }

    /// Was: the host's element folded its checks, and a host is an ancestor of its checks and
    /// (through its tunnels) of agents: a standing red check (vault out of sync) kept host:lab
    /// open, so a later service or tunnel failure, and the agents behind the tunnel, paged
    /// nobody. Now the host is only whether it answers; each check fires as itself.
    #[test]
    fn a_hosts_standing_red_check_holds_back_no_later_failure_under_it() {
        let mut b = chain_bench();
        let snap_at = |now: DateTime<Utc>, nginx_ok: bool, tunnel_ok: bool| {
            let mut s = Snapshot::empty(now, crate::config::fleet_rules());
            for meta in [&mut s.sections.agents, &mut s.sections.systems] {
                meta.configured = true;
                meta.checked_at = Some(now);
            }
            s.agents = fleetdash_model::Probe::Value(
                (1..=5)
                    .map(|i| crate::write::history::tests::agent(&format!("a{i}"), tunnel_ok, now))
                    .collect(),
            );
            s.systems = fleetdash_model::Probe::Value(vec![lab(now, false, nginx_ok, tunnel_ok)]);
            s
        };
        let mut all = Vec::new();
        for _ in 0..b.th.fail_after {
            b.now += Duration::minutes(1);
            all.extend(b.full_elements(transitions::elements(&snap_at(b.now, true, true))));
        }
        assert_eq!(all.len(), 1, "{all:#?}");
        assert_eq!(
            (all[0].key.as_str(), all[0].event),
            ("host:lab/vault", AlertEvent::Firing),
            "the vault fires as itself; the host answers"
        );
        // 50 minutes later, nginx and the tunnel go down, the 5 agents behind it too.
        let mut later = Vec::new();
        for _ in 0..50 {
            b.now += Duration::minutes(1);
            later.extend(b.full_elements(transitions::elements(&snap_at(b.now, false, false))));
        }
        let got: Vec<(&str, AlertEvent)> =
            later.iter().map(|a| (a.key.as_str(), a.event)).collect();
        // nginx and the tunnel fire as themselves; the 5 agents behind the tunnel are named by
        // the tunnel's Firing, not paged one by one.
        let firings: Vec<&str> = got
            .iter()
            .filter(|(_, e)| *e == AlertEvent::Firing)
            .map(|(k, _)| *k)
            .collect();
        assert_eq!(
            firings,
            ["host:lab/service:nginx", "host:lab/tunnel:lab-heart"],
            "{later:#?}"
        );
        let tunnel = later
            .iter()
            .find(|a| a.key == "host:lab/tunnel:lab-heart")
            .unwrap();
        assert_eq!(tunnel.takes_down.len(), 5, "{tunnel:#?}");
    }

    /// Was: only green closed an alert, so a root back to amber kept its alert open and stayed
    /// down for ever, holding back its dependents. Now what is no longer red recovers (the
    /// Recovered carries the amber band), and a dependent still red then fires.
    #[test]
    fn a_root_back_to_amber_recovers_and_its_dependents_fire() {
        let mut b = Bench::new();
        let base = |agent: Band, task: Band| {
            vec![
                ("section:agents", el("section", "agents", Band::Green)),
                (
                    "section:tasks.live",
                    el("section", "tasks.live", Band::Green),
                ),
                ("agent:min", el("agent", "min", agent)),
                ("task:min/t1", el("task", "t1 on min", task)),
            ]
        };
        for _ in 0..b.th.fail_after {
            b.next(&base(Band::Red, Band::Green));
        }
        assert!(b.state.tracks["agent:min"].open.is_some());
        // min answers again, amber (its last exchange is old); its task t1 is STUCK.
        let mut all = Vec::new();
        for _ in 0..120 {
            all.extend(b.next(&base(Band::Amber, Band::Red)));
        }
        assert_eq!(
            all,
            [
                ("agent:min".to_string(), AlertEvent::Recovered),
                ("task:min/t1".to_string(), AlertEvent::Firing),
                ("task:min/t1".to_string(), AlertEvent::Reminder),
            ],
            "the agent recovers to amber, then its stuck task fires (and reminds an hour on)"
        );
    }

    /// Was: a cycle in depends_on (the config accepts it) made two red elements hold each other
    /// back: nobody was paged. Now neither holds the other back.
    #[test]
    fn two_red_elements_in_a_depends_on_cycle_both_fire() {
        let mut b = Bench::new();
        b.deps.add("host:a", "host:b");
        b.deps.add("host:b", "host:a");
        let red = [
            ("section:systems", el("section", "systems", Band::Green)),
            ("host:a", el("host", "a", Band::Red)),
            ("host:b", el("host", "b", Band::Red)),
        ];
        let mut all = Vec::new();
        for _ in 0..10 {
            all.extend(b.next(&red));
        }
        assert_eq!(
            all,
            [
                ("host:a".to_string(), AlertEvent::Firing),
                ("host:b".to_string(), AlertEvent::Firing)
            ]
        );
    }

    /// Was: an element under a parent that leaves the snapshot (a host, board or agent removed
    /// from the config) kept its open alert, forgotten silently after FORGET_UNSEEN_S. Now a
    /// parent gone from a section read whole vouches for its children: they recover.
    #[test]
    fn a_check_of_a_host_removed_from_the_config_recovers_with_it() {
        let mut b = Bench::new();
        let with_host = [
            ("section:systems", el("section", "systems", Band::Green)),
            ("host:lab", el("host", "lab", Band::Green)),
            (
                "host:lab/service:nginx",
                el("service", "nginx on lab", Band::Red),
            ),
        ];
        for _ in 0..b.th.fail_after {
            b.next(&with_host);
        }
        assert!(b.state.tracks["host:lab/service:nginx"].open.is_some());
        // The operator removes host lab from the config.
        let without = [("section:systems", el("section", "systems", Band::Green))];
        let mut all = Vec::new();
        for _ in 0..10 {
            all.extend(b.next(&without));
        }
        let later = b.now + Duration::seconds(FORGET_UNSEEN_S);
        all.extend(b.at(later, &without));
        assert_eq!(
            all,
            [("host:lab/service:nginx".to_string(), AlertEvent::Recovered)],
            "tracks: {:?}",
            b.state.tracks.keys().collect::<Vec<_>>()
        );
    }
}

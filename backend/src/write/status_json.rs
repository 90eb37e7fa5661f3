//! Writes `status.json`: read the previous snapshot, merge the new sections, judge staleness,
//! pass the result through the redaction gate, replace the file atomically; then render the
//! static `snapshot.html` from the same gated data.
//!
//! The read-merge-write runs under an exclusive lock file in the state directory, so two
//! `collect` runs (cron overlapping a manual run, or `run` beside a cron) never lose each
//! other's sections or interleave their writes.
//!
//! Under the same lock, the write samples what it collected into the bounded 24 h history
//! (`<state_dir>/history.json`, see [`super::history`]) and annotates every agent, host and host
//! check of the merged snapshot with its strip and uptime, and records every band change
//! between the previous snapshot and the new one in the transitions log
//! (`<state_dir>/transitions.json`, see [`super::transitions`]); the snapshot carries the
//! recent ones. Last, it lists the state files moved aside as corrupt (see
//! [`super::state_file`]): the snapshot carries them until the operator removes the copies.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use fleetdash_model::glance::{self, fold::FoldRules};
use fleetdash_model::{AlertsView, RulesView, Snapshot};
use serde::Deserialize;

use super::atomic;
use super::first_html::{FirstHtml, Shell};
use super::history::{Collected, HistoryStore, Samples};
use super::snapshot_html::{self, Zone};
use super::state_file;
use super::transitions::{self, TransitionLog};
use crate::clock::{Clock, Clocked};
use crate::collect::{SectionName, SectionUpdate};
use crate::config::{Flaky, NeedsYouRules};
use crate::deps::Deps;
use crate::redact::RedactionGate;
use crate::snapshot;

pub const FILE_NAME: &str = "status.json";
const LOCK_NAME: &str = "status.json.lock";

/// What alerting tells a write: the elements held back from paging and each channel's health
/// (`Snapshot.alerts`). The write side asks; alerting answers from its own files (silences,
/// outbox), read-only. Blocking: it is called under the status lock, off the runtime.
pub trait AlertsLook: Send + Sync {
    fn look(&self, elements: &transitions::Elements, now: DateTime<Utc>) -> AlertsView;
}

pub struct StatusWriter {
    path: PathBuf,
    html_path: PathBuf,
    lock_path: PathBuf,
    state_dir: PathBuf,
    transitions: TransitionLog,
    gate: RedactionGate,
    alerts: Option<Arc<dyn AlertsLook>>,
    /// The rules' blind spot (failed percent, least failed count): each write judges
    /// `alerts.reach` by it (issue 24), alerting configured or not. `None`: not judged.
    blind_spot: Option<(u64, u64)>,
    /// The rules' `set_aside.copies_kept`: each write removes older copies of a state file set
    /// aside. `None`: none are removed.
    set_aside_kept: Option<usize>,
    zone: Zone,
    /// The clock each write judges by (ages as observed, `clock` said); without one, the wall
    /// clock alone.
    clock: Option<Clock>,
    /// What depends on what, and the rules' `needs_you`, for the folds.
    folding: Option<(Arc<Deps>, NeedsYouRules)>,
    /// The elements the config declares known to drop: said held as declared even when no
    /// alerting runs (with it, alerting says them, [`AlertsLook`]).
    declared: BTreeMap<String, Flaky>,
    /// index.html with the verdict in it, written with each snapshot; `None`: not written.
    first_html: Option<FirstHtml>,
}

impl StatusWriter {
    /// Creates the output and state directories if needed. The transitions log is kept within
    /// `transitions` (the rules' `transitions_log`, [`transitions::Bounds::of`]).
    pub fn new(
        output_dir: &Path,
        state_dir: &Path,
        gate: RedactionGate,
        transitions: transitions::Bounds,
    ) -> Result<Self> {
        for dir in [output_dir, state_dir] {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create directory {}", dir.display()))?;
        }
        Ok(StatusWriter {
            path: output_dir.join(FILE_NAME),
            html_path: output_dir.join(snapshot_html::FILE_NAME),
            lock_path: state_dir.join(LOCK_NAME),
            state_dir: state_dir.to_path_buf(),
            transitions: TransitionLog::new(state_dir, gate.clone(), transitions),
            gate,
            alerts: None,
            blind_spot: None,
            set_aside_kept: None,
            zone: Zone::Host,
            clock: None,
            folding: None,
            declared: BTreeMap::new(),
            first_html: None,
        })
    }

    /// Each write judges by `clock`: ages as fleetdash observed them, and what it saw of this
    /// host's clock in the snapshot's `clock`.
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = Some(clock);
        self
    }

    /// snapshot.html says times of day in `zone` (by default the host's).
    pub fn with_zone(mut self, zone: Zone) -> Self {
        self.zone = zone;
        self
    }

    /// Each write judges fleetdash's reach of the fleet (`alerts.reach`) by the rules' blind
    /// spot: (failed percent, least failed count).
    pub fn with_blind_spot(mut self, failed_percent: u64, min_failed: u64) -> Self {
        self.blind_spot = Some((failed_percent, min_failed));
        self
    }

    /// Each write keeps only the newest `kept` copies of each state file set aside (the rules'
    /// `set_aside.copies_kept`), removing the older ones before it lists them.
    pub fn with_set_aside_kept(mut self, kept: u64) -> Self {
        self.set_aside_kept = Some(usize::try_from(kept).unwrap_or(usize::MAX));
        self
    }

    /// Each write folds the needs-you lines: what is red because of what by `deps` (the
    /// registry's), and many alike by `rules`. Without it, nothing folds.
    pub fn with_folding(mut self, deps: Arc<Deps>, rules: NeedsYouRules) -> Self {
        self.folding = Some((deps, rules));
        self
    }

    /// Each write says the elements `declared` known to drop (the config's `flaky`) as held,
    /// while no alerting is asked ([`StatusWriter::with_alerts`] says them then).
    pub fn with_declared(mut self, declared: BTreeMap<String, Flaky>) -> Self {
        self.declared = declared;
        self
    }

    /// Each write writes the first HTML of the page `shell` too (issue 46): its index.html with
    /// the verdict in it, in the output folder.
    pub fn with_first_html(mut self, shell: Shell) -> Self {
        let output_dir = self.path.parent().unwrap_or(Path::new("."));
        self.first_html = Some(FirstHtml::new(shell, output_dir));
        self
    }

    /// Each write asks `alerts` what it holds back and how its channels fare. Without it, a
    /// write says alerting is not configured (what it does not know, it does not repeat).
    pub fn with_alerts(mut self, alerts: Arc<dyn AlertsLook>) -> Self {
        self.alerts = Some(alerts);
        self
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Merges `updates` into the snapshot on disk and writes it. Returns what was written.
    pub fn write(
        &self,
        updates: Vec<SectionUpdate>,
        configured: &[SectionName],
        rules: RulesView,
    ) -> Result<Snapshot> {
        let at = match &self.clock {
            Some(clock) => clock.clocked(),
            None => Clocked::wall_only(Utc::now()),
        };
        self.write_clocked(updates, configured, rules, &at)
    }

    /// [`StatusWriter::write`] as of `now` by the wall clock alone: the snapshot's
    /// `generated_at`, its staleness and the history's samples are all judged by it.
    pub fn write_at(
        &self,
        updates: Vec<SectionUpdate>,
        configured: &[SectionName],
        rules: RulesView,
        now: DateTime<Utc>,
    ) -> Result<Snapshot> {
        self.write_clocked(updates, configured, rules, &Clocked::wall_only(now))
    }

    /// [`StatusWriter::write`] as of `at`.
    pub fn write_clocked(
        &self,
        updates: Vec<SectionUpdate>,
        configured: &[SectionName],
        rules: RulesView,
        at: &Clocked,
    ) -> Result<Snapshot> {
        let now = at.wall();
        let lock = File::create(&self.lock_path)
            .with_context(|| format!("cannot open lock file {}", self.lock_path.display()))?;
        lock.lock()
            .with_context(|| format!("cannot lock {}", self.lock_path.display()))?;
        let previous = self.load_previous()?;
        let had_previous = previous.is_some();
        // The bands as they were, from the previous snapshot (gated when it was written).
        let before = previous.as_ref().map(transitions::elements);
        let mut snap = previous.unwrap_or_else(|| Snapshot::empty(now, rules.clone()));
        // Only what this write collected is sampled, judged on the merged rows.
        let collected = Collected::of(&updates);
        for update in updates {
            snapshot::apply(&mut snap, update);
        }
        snapshot::finalize(&mut snap, configured, rules, at);
        snap.clock = at.view();
        let elements = transitions::elements(&snap);
        snap.alerts = match &self.alerts {
            Some(alerts) => alerts.look(&elements, now),
            None => AlertsView {
                held: crate::config::flaky::holds(
                    &self.declared,
                    |k| elements.contains_key(k),
                    now,
                ),
                ..AlertsView::default()
            },
        };
        // Needs-you lines folded (issue 43): one per cause, by what the registry says depends on
        // what, and one for many alike, by the rules; the page says them as written.
        snap.folds = match &self.folding {
            Some((deps, rules)) => glance::fold::folds(
                &snap,
                &deps.causes(&elements),
                FoldRules {
                    alike_from: rules.fold_alike_from.count,
                    kinds: &rules.fold_kinds,
                },
            ),
            None => Vec::new(),
        };
        snap.alerts.reach = self
            .blind_spot
            .map(|(percent, min)| snap.reach(percent, min));
        let mut history = HistoryStore::load(&self.state_dir, self.gate.clone(), now);
        let samples = Samples::of(&collected, &snap);
        let sampled = !samples.is_empty();
        history.record(samples, now);
        history.annotate(&mut snap, now);
        let mut json = self
            .gate
            .to_json(&snap)
            .context("cannot serialise the snapshot")?;
        // Transitions are judged on what passed the gate, so their text is the snapshot's own.
        let mut gated =
            Snapshot::deserialize(&json).context("the gated snapshot no longer parses")?;
        let changes = transitions::compare(before.as_ref(), &transitions::elements(&gated), now);
        // Until replaced, the merged snapshot carries the previous one's recent transitions.
        let carried = had_previous.then_some(gated.transitions.as_slice());
        let said = changes.clone();
        let log = self.transitions.append(changes, carried, now);
        let recent = log.recent(now);
        json["transitions"] = self
            .gate
            .to_json(&recent)
            .context("cannot serialise the transitions")?;
        gated.transitions = recent.clone();
        snap.transitions = recent;
        // Listed once every state file of this write has been loaded (any may have just been
        // moved aside): the page says so until the operator removes the copy.
        if let Some(kept) = self.set_aside_kept {
            state_file::prune_set_aside(&self.state_dir, kept);
        }
        let set_aside = state_file::set_aside_in(&self.state_dir, now);
        json["set_aside"] = self
            .gate
            .to_json(&set_aside)
            .context("cannot serialise the state files set aside")?;
        gated.set_aside = set_aside.clone();
        snap.set_aside = set_aside;
        let mut bytes =
            serde_json::to_vec_pretty(&json).context("cannot serialise the snapshot")?;
        bytes.push(b'\n');
        atomic::write(&self.path, &bytes)?;
        // Saved once the snapshot that holds the new bands is written (the next write compares
        // with it); a failed save is logged.
        self.transitions.save(log);
        transitions::said::log(&said, &gated);
        // The static page shows exactly what passed the gate, and passes it once more whole.
        let offset = self.zone.offset_at(gated.generated_at);
        let html = snapshot_html::render(&gated, offset);
        atomic::write(&self.html_path, self.gate.redact_str(&html).as_bytes())?;
        if let Some(first) = &self.first_html {
            first.write(&gated, offset, &self.gate)?;
        }
        // The history is worth a day of strips, not a failed snapshot: a failed save is logged.
        // A write that sampled nothing leaves the file alone (loading prunes it anyway).
        if sampled && let Err(e) = history.save() {
            tracing::warn!(file = %history.path().display(), "cannot save the history: {e:#}");
        }
        drop(lock);
        Ok(snap)
    }

    /// The snapshot on disk, if there is a readable one of this schema.
    pub fn read_previous(&self) -> Option<Snapshot> {
        self.load_previous().ok().flatten()
    }

    /// The snapshot on disk: none when there is none, or when it is not a snapshot of this
    /// schema (said; the next write starts afresh). A file that cannot be read now (out of
    /// descriptors, an I/O error) is an error: writing over it with this write's sections
    /// alone would lose every other section, so the write is skipped and the file kept whole.
    fn load_previous(&self) -> Result<Option<Snapshot>> {
        let bytes = match std::fs::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(anyhow::Error::new(e).context(format!(
                    "cannot read the previous snapshot {} (left as it is; this write is \
                     skipped)",
                    self.path.display()
                )));
            }
        };
        match serde_json::from_slice(&bytes) {
            Ok(s) => Ok(Some(s)),
            Err(e) => {
                tracing::warn!(file = %self.path.display(), "previous snapshot invalid, starting afresh: {e}");
                Ok(None)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::fleet_rules;
    use chrono::{Duration, TimeZone};
    use fleetdash_model::Probe;

    use crate::collect::SectionData;
    use crate::write::history;
    use fleetdash_model::Band;

    /// The moment the tests' writes start at.
    fn t0() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 30, 6, 0, 0).unwrap()
    }

    /// The shipped rules' `transitions_log` bounds.
    fn fleet_transitions() -> transitions::Bounds {
        transitions::Bounds::of(&crate::config::fleet_state_rules())
    }

    /// A writer saying times of day in UTC, whatever this machine's zone.
    fn writer(out: &Path, state: &Path) -> StatusWriter {
        StatusWriter::new(out, state, RedactionGate::default(), fleet_transitions())
            .unwrap()
            .with_zone(Zone::Fixed(chrono::FixedOffset::east_opt(0).unwrap()))
    }

    fn agents(up: bool, at: DateTime<Utc>) -> SectionUpdate {
        SectionUpdate {
            data: SectionData::Agents(vec![history::tests::agent("a", up, at)]),
            checked_at: at,
            duration: std::time::Duration::from_millis(1),
        }
    }

    fn board(at: DateTime<Utc>) -> SectionUpdate {
        SectionUpdate {
            data: SectionData::LiveTasks(Probe::Value(Vec::new())),
            checked_at: at,
            duration: std::time::Duration::from_millis(1),
        }
    }

    /// Agents written 3 times up and once down, with writes of another section between them:
    /// 75.0 %, four samples, the strip in status.json and snapshot.html, history.json in the
    /// state directory.
    #[test]
    fn each_agents_write_samples_once_and_other_writes_sample_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let (out, state) = (dir.path().join("out"), dir.path().join("state"));
        let writer = writer(&out, &state);
        let t0 = t0();
        let configured = [SectionName::Agents, SectionName::LiveTasks];
        for (i, up) in [true, true, true, false].into_iter().enumerate() {
            let at = t0 + Duration::minutes(2 * i as i64);
            writer
                .write_at(vec![agents(up, at)], &configured, fleet_rules(), at)
                .unwrap();
            for _ in 0..3 {
                writer
                    .write_at(vec![board(at)], &configured, fleet_rules(), at)
                    .unwrap();
            }
        }
        let at = t0 + Duration::minutes(7);
        let snap = writer
            .write_at(vec![board(at)], &configured, fleet_rules(), at)
            .unwrap();
        let Probe::Value(rows) = &snap.agents else {
            panic!("{:?}", snap.agents)
        };
        let h = rows[0].history.clone().unwrap();
        assert_eq!((h.uptime_24h_pct, h.samples), (Some(75.0), 4));
        assert_eq!(h.strip.len(), history::SLOTS);
        assert!(h.strip.ends_with('p'), "{}", h.strip);
        let on_disk = writer.read_previous().unwrap();
        assert_eq!(on_disk.agents, snap.agents);
        assert!(state.join(history::FILE_NAME).is_file());
        let html = std::fs::read_to_string(out.join(snapshot_html::FILE_NAME)).unwrap();
        assert!(html.contains("uptime 75.0 %"), "{html}");
    }

    /// A history.json that cannot be parsed costs the strip, never the snapshot.
    #[test]
    fn a_corrupt_history_never_fails_a_write() {
        let dir = tempfile::tempdir().unwrap();
        let (out, state) = (dir.path().join("out"), dir.path().join("state"));
        let writer = writer(&out, &state);
        std::fs::write(state.join(history::FILE_NAME), b"{\"version\":1,").unwrap();
        let now = t0();
        let snap = writer
            .write_at(
                vec![agents(true, now)],
                &[SectionName::Agents],
                fleet_rules(),
                now,
            )
            .unwrap();
        let Probe::Value(rows) = &snap.agents else {
            panic!()
        };
        assert_eq!(rows[0].history.as_ref().unwrap().samples, 1);
        let text = std::fs::read_to_string(state.join(history::FILE_NAME)).unwrap();
        assert!(text.contains("\"agent:a\""), "replaced: {text}");
    }

    /// A state file moved aside is said in status.json and on snapshot.html at the write that
    /// found it and every write after, until the operator removes the copy.
    #[test]
    fn a_state_file_moved_aside_is_said_on_the_page_until_its_copy_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let (out, state) = (dir.path().join("out"), dir.path().join("state"));
        let writer = writer(&out, &state);
        std::fs::write(state.join(history::FILE_NAME), b"{\"version\":1,").unwrap();
        let write = |now| {
            writer
                .write_at(
                    vec![agents(true, now)],
                    &[SectionName::Agents],
                    fleet_rules(),
                    now,
                )
                .unwrap()
        };
        let copy = "history.json.corrupt-20261130T060000Z";
        for now in [t0(), t0() + chrono::Duration::minutes(1)] {
            let snap = write(now);
            assert_eq!(
                snap.set_aside
                    .iter()
                    .map(|a| (a.file.as_str(), a.aside.as_str(), a.at, a.checked_at))
                    .collect::<Vec<_>>(),
                [("history.json", copy, Some(t0()), now)]
            );
            let on_disk: Snapshot =
                serde_json::from_slice(&std::fs::read(out.join(FILE_NAME)).unwrap()).unwrap();
            assert_eq!(on_disk.set_aside, snap.set_aside);
            let html = std::fs::read_to_string(out.join("snapshot.html")).unwrap();
            assert!(html.contains("state file history.json"), "{html}");
            assert!(html.contains(copy), "{html}");
        }
        std::fs::remove_file(state.join(copy)).unwrap();
        let snap = write(t0() + chrono::Duration::minutes(2));
        assert!(snap.set_aside.is_empty());
        let html = std::fs::read_to_string(out.join("snapshot.html")).unwrap();
        assert!(!html.contains("state file history.json"), "{html}");
    }

    /// An agent going down then up across writers (each a restart): each change is in the
    /// log, status.json carries them newest first and snapshot.html shows them; writes that
    /// change nothing add nothing.
    #[test]
    fn band_changes_reach_the_log_status_json_and_snapshot_html_across_restarts() {
        use fleetdash_model::Band;
        let dir = tempfile::tempdir().unwrap();
        let (out, state) = (dir.path().join("out"), dir.path().join("state"));
        let t0 = t0();
        let configured = [SectionName::Agents];
        let mut snap = None;
        for (i, up) in [true, true, false, false, true].into_iter().enumerate() {
            let at = t0 + Duration::minutes(2 * i as i64);
            let writer = writer(&out, &state);
            snap = Some(
                writer
                    .write_at(vec![agents(up, at)], &configured, fleet_rules(), at)
                    .unwrap(),
            );
        }
        let said = |list: &[fleetdash_model::Transition]| {
            list.iter()
                .map(|t| (t.key.clone(), t.from, t.to, t.at))
                .collect::<Vec<_>>()
        };
        let down = (
            "agent:a".to_string(),
            Some(Band::Green),
            Band::Red,
            t0 + Duration::minutes(4),
        );
        let up = (
            "agent:a".to_string(),
            Some(Band::Red),
            Band::Green,
            t0 + Duration::minutes(8),
        );
        let log = super::transitions::TransitionLog::new(
            &state,
            RedactionGate::default(),
            fleet_transitions(),
        );
        assert_eq!(said(&log.read().unwrap()), [down.clone(), up.clone()]);
        let on_disk: Snapshot =
            serde_json::from_slice(&std::fs::read(out.join(FILE_NAME)).unwrap()).unwrap();
        assert_eq!(said(&on_disk.transitions), [up, down]);
        assert_eq!(snap.unwrap().transitions, on_disk.transitions);
        let html = std::fs::read_to_string(out.join(snapshot_html::FILE_NAME)).unwrap();
        let section = &html[html.find("id=\"transitions\"").expect("the section")..];
        let (fail, ok) = (
            section.find("ok → fail").unwrap(),
            section.find("fail → ok").unwrap(),
        );
        assert!(ok < fail, "newest first: {section}");
        assert!(
            section.contains("<strong>agent a</strong> <small>06:04</small>"),
            "{section}"
        );
    }

    /// One read of board "lab" holding `cards` (id, status, band, age in seconds).
    fn board_read(cards: &[(&str, &str, Band, u64)], at: DateTime<Utc>) -> SectionUpdate {
        use crate::collect::board::cap::Cap;
        use fleetdash_model::{Asc, Board, BoardSource, Card};
        let cards: Vec<Card> = cards
            .iter()
            .map(|&(id, status, band, age_s)| Card {
                board: "lab".into(),
                id: id.into(),
                title: format!("Card {id}"),
                status: status.into(),
                assignee: None,
                priority: None,
                age_s,
                block_kind: None,
                latest_activity_at: None,
                conditions: (band != Band::Green)
                    .then(|| "crashed: the worker process died".to_string())
                    .into_iter()
                    .collect(),
                band,
                checked_at: at,
                stale: false,
            })
            .collect();
        let board = Board {
            columns: crate::collect::board::columns(&cards, false),
            sources: vec![BoardSource {
                name: "lab".into(),
                plane: None,
                cards: Probe::Value(cards.len() as u32),
                projection: Probe::Unknown,
                status: Asc::SUCCESS,
                reason: None,
                columns: Vec::new(),
                attention_left_out: Default::default(),
                checked_at: at,
                stale: false,
            }],
            cards,
        };
        SectionUpdate::new(
            SectionData::Board {
                read: Probe::Value(board),
                cap: Cap {
                    cards_max: 4,
                    newest_per_column: 1,
                },
            },
            at,
            std::time::Duration::from_millis(1),
        )
    }

    /// Under the cap, a green card moving in and out of the newest few comes and goes without
    /// a transition, pass after pass, whatever other sections write in between; a red card
    /// that recovers and leaves the listing is recorded as a recovery (red → green) before it
    /// goes, never left "still red" by a disappearance.
    #[test]
    fn the_board_listing_changes_no_band_and_a_recovery_is_seen_before_the_card_leaves() {
        use fleetdash_model::Band::{Green, Red};
        let dir = tempfile::tempdir().unwrap();
        let (out, state) = (dir.path().join("out"), dir.path().join("state"));
        let writer = writer(&out, &state);
        let t0 = t0();
        let configured = [SectionName::Board, SectionName::LiveTasks];
        let passes: [&[(&str, &str, Band, u64)]; 6] = [
            &[("old", "todo", Green, 100), ("crash", "running", Red, 50)],
            // A newer todo card takes the old one's place among the newest: it leaves, green.
            &[
                ("old", "todo", Green, 100),
                ("new", "todo", Green, 0),
                ("crash", "running", Red, 50),
            ],
            // The newer one is gone: the old one is back, green.
            &[("old", "todo", Green, 100), ("crash", "running", Red, 50)],
            &[("old", "todo", Green, 100), ("crash", "running", Red, 50)],
            // The crashed card completes: listed once more, green.
            &[("old", "todo", Green, 100), ("crash", "done", Green, 50)],
            &[("old", "todo", Green, 100), ("crash", "done", Green, 50)],
        ];
        let mut listed = Vec::new();
        for (i, cards) in passes.into_iter().enumerate() {
            let at = t0 + Duration::minutes(5 * i as i64);
            let snap = writer
                .write_at(vec![board_read(cards, at)], &configured, fleet_rules(), at)
                .unwrap();
            // Another section's write between board reads keeps the listing as it is.
            writer
                .write_at(vec![board(at)], &configured, fleet_rules(), at)
                .unwrap();
            let Probe::Value(b) = &snap.tasks.board else {
                panic!("{:?}", snap.tasks.board)
            };
            let mut ids: Vec<String> = b.cards.iter().map(|c| c.id.clone()).collect();
            ids.sort_unstable();
            listed.push(ids.join(" "));
        }
        assert_eq!(
            listed,
            [
                "crash old",
                "crash new",
                "crash old",
                "crash old",
                "crash old",
                "old"
            ]
        );
        let log = super::transitions::TransitionLog::new(
            &state,
            RedactionGate::default(),
            fleet_transitions(),
        );
        let said: Vec<_> = log
            .read()
            .unwrap()
            .into_iter()
            .map(|t| (t.key, t.from, t.to, t.at))
            .collect();
        let key = "board:lab/card:crash".to_string();
        assert_eq!(
            said,
            [
                (key.clone(), None, Red, t0),
                (key, Some(Red), Green, t0 + Duration::minutes(20)),
            ]
        );
        // The last snapshot counts both cards, the one it no longer lists included.
        let last = writer.read_previous().unwrap();
        let Probe::Value(b) = &last.tasks.board else {
            panic!()
        };
        let counts: Vec<(&str, u32, u32)> = b.sources[0]
            .columns
            .iter()
            .map(|c| (c.column.as_str(), c.cards, c.left_out))
            .collect();
        assert_eq!(counts, [("todo", 1, 0), ("done", 1, 1)]);
        assert_eq!(last.verdict().green, 2);
    }

    /// A transitions log that cannot be parsed costs the log, never the snapshot.
    #[test]
    fn a_corrupt_transitions_log_never_fails_a_write() {
        let dir = tempfile::tempdir().unwrap();
        let (out, state) = (dir.path().join("out"), dir.path().join("state"));
        let writer = writer(&out, &state);
        let log = state.join(super::transitions::FILE_NAME);
        std::fs::write(&log, b"{\"version\":1,\"entries\":[{").unwrap();
        let now = t0();
        let snap = writer
            .write_at(
                vec![agents(false, now)],
                &[SectionName::Agents],
                fleet_rules(),
                now,
            )
            .unwrap();
        assert_eq!(
            snap.transitions.len(),
            1,
            "born red: {:?}",
            snap.transitions
        );
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(text.contains("\"agent:a\""), "replaced: {text}");
    }
}

//! Writes `status.json`: read the previous snapshot, merge the new sections, judge staleness,
//! pass the result through the redaction gate, replace the file atomically; then render the
//! static `snapshot.html` from the same gated data.
//!
//! The read-merge-write runs under an exclusive lock file in the state directory, so two
//! `collect` runs (cron overlapping a manual run, or `run` beside a cron) never lose each
//! other's sections or interleave their writes.
//!
//! Under the same lock, the write samples what it collected into the bounded 24 h history
//! (`<state_dir>/history.json`, see [`crate::history`]) and annotates every agent, host and host
//! check of the merged snapshot with its strip and uptime.

use std::fs::File;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use chrono::{DateTime, Utc};
use fleetdash_model::{RulesView, Snapshot};

use super::{atomic, snapshot_html};
use crate::collect::{SectionName, SectionUpdate};
use crate::history::{Collected, HistoryStore, Samples};
use crate::redact::RedactionGate;
use crate::snapshot;

pub const FILE_NAME: &str = "status.json";
const LOCK_NAME: &str = "status.json.lock";

pub struct StatusWriter {
    path: PathBuf,
    html_path: PathBuf,
    lock_path: PathBuf,
    state_dir: PathBuf,
    gate: RedactionGate,
}

impl StatusWriter {
    /// Creates the output and state directories if needed.
    pub fn new(output_dir: &Path, state_dir: &Path, gate: RedactionGate) -> Result<Self> {
        for dir in [output_dir, state_dir] {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create directory {}", dir.display()))?;
        }
        Ok(StatusWriter {
            path: output_dir.join(FILE_NAME),
            html_path: output_dir.join(snapshot_html::FILE_NAME),
            lock_path: state_dir.join(LOCK_NAME),
            state_dir: state_dir.to_path_buf(),
            gate,
        })
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
        self.write_at(updates, configured, rules, Utc::now())
    }

    /// [`StatusWriter::write`] as of `now`: the snapshot's `generated_at`, its staleness and
    /// the history's samples are all judged by it.
    pub fn write_at(
        &self,
        updates: Vec<SectionUpdate>,
        configured: &[SectionName],
        rules: RulesView,
        now: DateTime<Utc>,
    ) -> Result<Snapshot> {
        let lock = File::create(&self.lock_path)
            .with_context(|| format!("cannot open lock file {}", self.lock_path.display()))?;
        lock.lock()
            .with_context(|| format!("cannot lock {}", self.lock_path.display()))?;
        let mut snap = self
            .read_previous()
            .unwrap_or_else(|| Snapshot::empty(now, rules.clone()));
        // Only what this write collected is sampled, judged on the merged rows.
        let collected = Collected::of(&updates);
        for update in updates {
            snapshot::apply(&mut snap, update);
        }
        snapshot::finalize(&mut snap, configured, rules, now);
        let mut history = HistoryStore::load(&self.state_dir, now);
        let samples = Samples::of(&collected, &snap);
        let sampled = !samples.is_empty();
        history.record(samples, now);
        history.annotate(&mut snap, now);
        let json = self
            .gate
            .to_json(&snap)
            .context("cannot serialise the snapshot")?;
        let mut bytes =
            serde_json::to_vec_pretty(&json).context("cannot serialise the snapshot")?;
        bytes.push(b'\n');
        atomic::write(&self.path, &bytes)?;
        // The static page shows exactly what passed the gate, and passes it once more whole.
        let gated: Snapshot =
            serde_json::from_value(json).context("the gated snapshot no longer parses")?;
        let html = snapshot_html::render(&gated);
        atomic::write(&self.html_path, self.gate.redact_str(&html).as_bytes())?;
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
        let bytes = match std::fs::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => {
                tracing::warn!(file = %self.path.display(), "previous snapshot unreadable, starting afresh: {e}");
                return None;
            }
        };
        match serde_json::from_slice(&bytes) {
            Ok(s) => Some(s),
            Err(e) => {
                tracing::warn!(file = %self.path.display(), "previous snapshot invalid, starting afresh: {e}");
                None
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
    use crate::history;

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
        let writer = StatusWriter::new(&out, &state, RedactionGate::default()).unwrap();
        let t0 = Utc.with_ymd_and_hms(2026, 11, 30, 6, 0, 0).unwrap();
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
        assert!(html.contains("24 h uptime 75.0 %"), "{html}");
    }

    /// A history.json that cannot be parsed costs the strip, never the snapshot.
    #[test]
    fn a_corrupt_history_never_fails_a_write() {
        let dir = tempfile::tempdir().unwrap();
        let (out, state) = (dir.path().join("out"), dir.path().join("state"));
        let writer = StatusWriter::new(&out, &state, RedactionGate::default()).unwrap();
        std::fs::write(state.join(history::FILE_NAME), b"{\"version\":1,").unwrap();
        let now = Utc::now();
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
}

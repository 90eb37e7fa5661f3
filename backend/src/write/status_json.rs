//! Writes `status.json`: read the previous snapshot, merge the new sections, judge staleness,
//! pass the result through the redaction gate, replace the file atomically; then render the
//! static `snapshot.html` from the same gated data.
//!
//! The read-merge-write runs under an exclusive lock file in the state directory, so two
//! `collect` runs (cron overlapping a manual run, or `run` beside a cron) never lose each
//! other's sections or interleave their writes.

use std::fs::File;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use chrono::Utc;
use fleetdash_model::{RulesView, Snapshot};

use super::{atomic, snapshot_html};
use crate::collect::{SectionName, SectionUpdate};
use crate::redact::RedactionGate;
use crate::snapshot;

pub const FILE_NAME: &str = "status.json";
const LOCK_NAME: &str = "status.json.lock";

pub struct StatusWriter {
    path: PathBuf,
    html_path: PathBuf,
    lock_path: PathBuf,
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
        let lock = File::create(&self.lock_path)
            .with_context(|| format!("cannot open lock file {}", self.lock_path.display()))?;
        lock.lock()
            .with_context(|| format!("cannot lock {}", self.lock_path.display()))?;
        let now = Utc::now();
        let mut snap = self
            .read_previous()
            .unwrap_or_else(|| Snapshot::empty(now, rules.clone()));
        for update in updates {
            snapshot::apply(&mut snap, update);
        }
        snapshot::finalize(&mut snap, configured, rules, now);
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

//! The escalation log: one JSON line per task that became stuck, appended to
//! `state_dir/escalations.jsonl` (like the fleet's `operation/state/escalations.jsonl`), so the
//! follow-up loop fires without a human deciding (spec §5.3). Only ids, states and the cause are
//! written: never message text. Appended by the live-task store, under the registry's lock.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use chrono::{DateTime, Utc};
use fleetdash_model::LiveTask;
use serde_json::json;

use crate::config::Rule;
use crate::redact::RedactionGate;

pub const FILE_NAME: &str = "escalations.jsonl";

pub struct Escalations {
    path: PathBuf,
}

impl Escalations {
    pub fn new(state_dir: &Path) -> Escalations {
        Escalations {
            path: state_dir.join(FILE_NAME),
        }
    }

    /// Appends one line for `task`, passed through the gate.
    pub fn append(
        &self,
        task: &LiveTask,
        rule: &Rule,
        gate: &RedactionGate,
        now: DateTime<Utc>,
    ) -> Result<()> {
        let line = json!({
            "ts": now.to_rfc3339(),
            "kind": "stuck",
            "task_id": task.id,
            "agent": task.agent,
            "state": task.state.value(),
            "cause": task.reason,
            "rule": {"no_reply_seconds": rule.seconds, "source": rule.source, "ruled_by": rule.ruled_by},
        });
        let line = gate
            .to_json(&line)
            .context("cannot serialise the escalation")?;
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .with_context(|| format!("cannot open {}", self.path.display()))?;
        writeln!(file, "{line}")
            .with_context(|| format!("cannot append to {}", self.path.display()))
    }
}

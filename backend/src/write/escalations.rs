//! The escalation log: one JSON line per task that became stuck, appended to
//! `state_dir/escalations.jsonl` (like the fleet's `operation/state/escalations.jsonl`), so the
//! follow-up loop fires without a human deciding (spec §5.3). Only ids, states and the cause are
//! written: never message text. Appended by the live-task store, under the registry's lock,
//! and bounded like the audit log: at [`ROTATE_AT_BYTES`] it moves to `escalations.jsonl.1`.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use chrono::{DateTime, Utc};
use fleetdash_model::LiveTask;
use serde_json::json;

use crate::collect::agents::audit_tail::rotated_path;
use crate::config::Rule;
use crate::redact::RedactionGate;

pub const FILE_NAME: &str = "escalations.jsonl";
/// Past this size the log moves to `escalations.jsonl.1` before the next line, as the A2A
/// audit log does (reference a2a-audit-log.md: rotated at 2 MiB to `<file>.1`).
pub const ROTATE_AT_BYTES: u64 = 2 * 1024 * 1024;

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
        self.rotate_if_full()?;
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .with_context(|| format!("cannot open {}", self.path.display()))?;
        writeln!(file, "{line}")
            .with_context(|| format!("cannot append to {}", self.path.display()))
    }

    /// Moves a full log to `<file>.1`, replacing the previous rotation.
    fn rotate_if_full(&self) -> Result<()> {
        let size = match std::fs::metadata(&self.path) {
            Ok(meta) => meta.len(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => {
                return Err(e).with_context(|| format!("cannot inspect {}", self.path.display()));
            }
        };
        if size < ROTATE_AT_BYTES {
            return Ok(());
        }
        let rotated = rotated_path(&self.path);
        std::fs::rename(&self.path, &rotated).with_context(|| {
            format!(
                "cannot rotate {} to {}",
                self.path.display(),
                rotated.display()
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleetdash_model::{Asc, Probe};

    /// The tests' clock: one fixed moment, so that no outcome depends on the day they run.
    fn fixed_now() -> chrono::DateTime<chrono::Utc> {
        "2026-11-30T12:00:00Z".parse().expect("an RFC 3339 instant")
    }

    fn stuck(id: &str) -> LiveTask {
        LiveTask {
            id: id.into(),
            agent: "heart".into(),
            state: Probe::Value("TASK_STATE_WORKING".into()),
            age_s: 423,
            stuck: true,
            status: Asc::TIMEOUT,
            reason: Some("no reply for 423 s (>= 300 s)".into()),
            checked_at: fixed_now(),
            stale: false,
        }
    }

    fn rule() -> Rule {
        Rule {
            seconds: 300,
            source: "adapter.py:38".into(),
            ruled_by: Some("young".into()),
        }
    }

    /// Like the audit log it sits beside: past `ROTATE_AT_BYTES` the file moves to `<file>.1`
    /// (replacing the one before) and a new one starts, so the log never grows past about
    /// twice the bound.
    #[test]
    fn the_log_rotates_at_its_bound_to_dot_one() {
        let dir = tempfile::tempdir().unwrap();
        let log = Escalations::new(dir.path());
        let path = dir.path().join(FILE_NAME);
        let rotated = dir.path().join(format!("{FILE_NAME}.1"));
        std::fs::write(&rotated, "the rotation before\n").unwrap();
        let filler = format!(
            "{}\n",
            serde_json::json!({"kind": "stuck", "task_id": "t_old"})
        );
        let full = filler.repeat(usize::try_from(ROTATE_AT_BYTES).unwrap() / filler.len() + 1);
        std::fs::write(&path, &full).unwrap();

        let gate = RedactionGate::default();
        log.append(&stuck("t_new"), &rule(), &gate, fixed_now())
            .unwrap();
        let moved = std::fs::read_to_string(&rotated).unwrap();
        assert!(
            moved == full,
            "rotated: {} bytes, expected the full log",
            moved.len()
        );
        let fresh = std::fs::read_to_string(&path).unwrap();
        assert_eq!(fresh.lines().count(), 1, "{fresh}");
        assert!(fresh.contains("\"t_new\""));

        // Under the bound, appending just appends.
        log.append(&stuck("t_next"), &rule(), &gate, fixed_now())
            .unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 2);
        assert_eq!(
            std::fs::metadata(&rotated).unwrap().len(),
            full.len() as u64
        );
    }
}

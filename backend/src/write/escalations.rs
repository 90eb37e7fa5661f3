//! The escalation log: one JSON line per task that became stuck, appended to
//! `state_dir/escalations.jsonl` (like the fleet's `operation/state/escalations.jsonl`), so the
//! follow-up loop fires without a human deciding (spec §5.3). Only ids, states and the cause are
//! written: never message text. Appended by the live-task store, under the registry's lock,
//! and by the work queue's watchdog. Bounded like the audit log, and by age (issue 33): before
//! a line is appended, a log of the rules' `escalations.rotate_at_bytes`, or whose first line is
//! the rules' `escalations.rotate_after_seconds` old, moves to `escalations.jsonl.1` (replacing the one
//! before), so the two hold at most two such periods and never more than twice the size.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use chrono::{DateTime, Utc};
use fleetdash_model::LiveTask;
use serde_json::json;

use crate::clock::Clocked;
use crate::collect::agents::audit_tail::rotated_path;
use crate::config::{Rule, StateRules};
use crate::redact::RedactionGate;

pub const FILE_NAME: &str = "escalations.jsonl";

pub struct Escalations {
    path: PathBuf,
    /// The rules' `escalations.rotate_after_seconds`.
    rotate_after_s: u64,
    /// The rules' `escalations.rotate_at_bytes`: past this size the log moves to
    /// `escalations.jsonl.1` before the next line, as the A2A audit log does.
    rotate_at_bytes: u64,
}

/// What the clock knows the log's first line by: a new first line is a new sighting.
const FIRST_LINE_WHAT: &str = "escalations.jsonl's first line";

impl Escalations {
    pub fn new(state_dir: &Path, rules: &StateRules) -> Escalations {
        Escalations {
            path: state_dir.join(FILE_NAME),
            rotate_after_s: rules.escalations_rotate_after.seconds,
            rotate_at_bytes: rules.escalations_rotate_at.bytes,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one line for `task`, passed through the gate, stamped `at`; a log that is full
    /// or old ([`Escalations`]) moves to `.1` first.
    pub fn append(
        &self,
        task: &LiveTask,
        rule: &Rule,
        gate: &RedactionGate,
        at: &Clocked,
    ) -> Result<()> {
        let now = at.wall();
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
        self.rotate_if_due(at)?;
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .with_context(|| format!("cannot open {}", self.path.display()))?;
        writeln!(file, "{line}")
            .with_context(|| format!("cannot append to {}", self.path.display()))
    }

    /// Moves a full or old log to `<file>.1`, replacing the previous rotation. The age is the
    /// first line's, as the clock observed it; a first line without a readable stamp (edited
    /// by hand) leaves the size alone to decide.
    fn rotate_if_due(&self, at: &Clocked) -> Result<()> {
        let size = match std::fs::metadata(&self.path) {
            Ok(meta) => meta.len(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => {
                return Err(e).with_context(|| format!("cannot inspect {}", self.path.display()));
            }
        };
        let old = || {
            self.first_stamp()
                .is_some_and(|ts| at.reached(at.age(FIRST_LINE_WHAT, ts), self.rotate_after_s))
        };
        if size < self.rotate_at_bytes && !old() {
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

    /// The `ts` of the log's first line, when it has one.
    fn first_stamp(&self) -> Option<DateTime<Utc>> {
        use std::io::BufRead as _;
        let file = std::fs::File::open(&self.path).ok()?;
        let mut line = String::new();
        // A line is a few hundred bytes; a first "line" past this is not one of ours.
        std::io::Read::take(std::io::BufReader::new(file), 64 * 1024)
            .read_line(&mut line)
            .ok()?;
        let value: serde_json::Value = serde_json::from_str(&line).ok()?;
        value.get("ts")?.as_str()?.parse().ok()
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

    fn at(now: chrono::DateTime<chrono::Utc>) -> Clocked {
        Clocked::wall_only(now)
    }

    fn state_rules() -> StateRules {
        crate::config::Rules::parse(
            Path::new("config/rules.yaml"),
            include_str!("../../../config/rules.yaml"),
        )
        .unwrap()
        .state
    }

    fn rule() -> Rule {
        Rule {
            seconds: 300,
            source: "adapter.py:38".into(),
            ruled_by: Some("young".into()),
        }
    }

    /// Like the audit log it sits beside: past `escalations.rotate_at_bytes` the file moves to `<file>.1`
    /// (replacing the one before) and a new one starts, so the log never grows past about
    /// twice the bound.
    #[test]
    fn the_log_rotates_at_its_bound_to_dot_one() {
        let dir = tempfile::tempdir().unwrap();
        let rules = state_rules();
        let log = Escalations::new(dir.path(), &rules);
        let path = dir.path().join(FILE_NAME);
        let rotated = dir.path().join(format!("{FILE_NAME}.1"));
        std::fs::write(&rotated, "the rotation before\n").unwrap();
        let filler = format!(
            "{}\n",
            serde_json::json!({"kind": "stuck", "task_id": "t_old"})
        );
        let bound = usize::try_from(rules.escalations_rotate_at.bytes).unwrap();
        let full = filler.repeat(bound / filler.len() + 1);
        std::fs::write(&path, &full).unwrap();

        let gate = RedactionGate::default();
        log.append(&stuck("t_new"), &rule(), &gate, &at(fixed_now()))
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
        log.append(&stuck("t_next"), &rule(), &gate, &at(fixed_now()))
            .unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 2);
        assert_eq!(
            std::fs::metadata(&rotated).unwrap().len(),
            full.len() as u64
        );
    }

    /// Issue 33: at a fleet's pace the 2 MiB bound took months. A log whose first line is
    /// `escalations.rotate_after_seconds` old moves to `.1` before the next line; one a
    /// second younger stays, and so does a first line without a stamp (the size decides).
    #[test]
    fn the_log_rotates_once_its_first_line_is_as_old_as_the_rule() {
        let dir = tempfile::tempdir().unwrap();
        let rules = state_rules();
        let log = Escalations::new(dir.path(), &rules);
        let rotated = dir.path().join(format!("{FILE_NAME}.1"));
        let gate = RedactionGate::default();
        let t0 = fixed_now();
        let window = chrono::Duration::seconds(
            i64::try_from(rules.escalations_rotate_after.seconds).unwrap(),
        );
        log.append(&stuck("t_first"), &rule(), &gate, &at(t0))
            .unwrap();
        let just_before = t0 + window - chrono::Duration::seconds(1);
        log.append(&stuck("t_second"), &rule(), &gate, &at(just_before))
            .unwrap();
        assert!(!rotated.exists(), "a second short of the rule: kept");
        assert_eq!(
            std::fs::read_to_string(log.path()).unwrap().lines().count(),
            2
        );

        log.append(&stuck("t_third"), &rule(), &gate, &at(t0 + window))
            .unwrap();
        let moved = std::fs::read_to_string(&rotated).unwrap();
        assert!(
            moved.contains("t_first") && moved.contains("t_second"),
            "{moved}"
        );
        let fresh = std::fs::read_to_string(log.path()).unwrap();
        assert_eq!(fresh.lines().count(), 1, "{fresh}");
        assert!(fresh.contains("t_third"));

        // A week later again: the week before replaces the `.1` of the week before that.
        log.append(&stuck("t_fourth"), &rule(), &gate, &at(t0 + window * 2))
            .unwrap();
        let moved = std::fs::read_to_string(&rotated).unwrap();
        assert!(
            moved.contains("t_third") && !moved.contains("t_first"),
            "{moved}"
        );

        // A first line edited by hand, without a stamp: only the size rotates it.
        std::fs::write(log.path(), "not a line of ours\n").unwrap();
        log.append(&stuck("t_fifth"), &rule(), &gate, &at(t0 + window * 9))
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(log.path()).unwrap().lines().count(),
            2
        );
    }

    /// The size bound is the rules' `escalations.rotate_at_bytes`: a log of 8 KiB is kept under
    /// the shipped 2 MiB, and moves to `.1` under rules that say 8 KiB.
    #[test]
    fn the_size_bound_is_the_one_the_rules_declare() {
        let filler = format!(
            "{}\n",
            serde_json::json!({"kind": "stuck", "task_id": "t_old"})
        );
        let full = filler.repeat(8 * 1024 / filler.len() + 1);
        let gate = RedactionGate::default();
        let shipped = state_rules();
        let mut small = shipped.clone();
        small.escalations_rotate_at.bytes = 8 * 1024;
        for (rules, moves) in [(shipped, false), (small, true)] {
            let dir = tempfile::tempdir().unwrap();
            let log = Escalations::new(dir.path(), &rules);
            std::fs::write(log.path(), &full).unwrap();
            log.append(&stuck("t_new"), &rule(), &gate, &at(fixed_now()))
                .unwrap();
            let rotated = dir.path().join(format!("{FILE_NAME}.1"));
            assert_eq!(
                rotated.exists(),
                moves,
                "bound {} B",
                rules.escalations_rotate_at.bytes
            );
        }
    }
}

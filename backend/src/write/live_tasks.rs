//! The live-task registry on disk (`state_dir/live_tasks.json`) and its escalations: the write
//! half of the live-task lane.
//!
//! Every read-modify-write holds an exclusive lock (`state_dir/live_tasks.lock`), so cron's
//! `collect --only agents` and `collect --only tasks` can overlap without losing each other's
//! changes; the file is replaced atomically, so the poll may read it without the lock. Noting
//! mentioned ids and recording a poll both happen here; judging is the pure
//! [`judge`](crate::collect::live_tasks::judge) run under the lock, and each newly stuck task's
//! escalation is appended before the lock is released, so two overlapping runs never escalate
//! one task twice. A task is marked escalated only once its line is written: a failed append
//! is tried again on the next pass.

use std::fs::File;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use fleetdash_model::LiveTask;

use super::atomic;
use super::escalations::Escalations;
use crate::clock::Clocked;
use crate::collect::live_tasks::Poll;
use crate::collect::live_tasks::judge::{self, StuckRules};
use crate::collect::live_tasks::registry::{self, Mention, Registry};
use crate::redact::RedactionGate;

const LOCK_NAME: &str = "live_tasks.lock";

pub struct LiveTaskStore {
    path: PathBuf,
    lock_path: PathBuf,
    escalations: Escalations,
    rules: StuckRules,
    gate: RedactionGate,
}

impl LiveTaskStore {
    /// The registry in `state_dir`; each newly stuck task's line goes to `escalations`.
    pub fn new(
        state_dir: &Path,
        rules: StuckRules,
        escalations: Escalations,
        gate: RedactionGate,
    ) -> LiveTaskStore {
        LiveTaskStore {
            path: state_dir.join(registry::FILE_NAME),
            lock_path: state_dir.join(LOCK_NAME),
            escalations,
            rules,
            gate,
        }
    }

    /// Notes the task ids an agents pass mentioned, seen at `at`; ids that look like secrets
    /// are counted, never stored. The stamps made are noted on the clock as made now.
    pub fn note(&self, mentions: &[Mention], at: &Clocked) -> Result<()> {
        let now = at.wall();
        self.update(|registry| {
            registry.note(mentions, &self.gate, now);
            for (key, task) in &registry.tasks {
                if task.last_mentioned == now {
                    at.note(&judge::mentioned_what(key), now);
                }
                if task.last_progress == now {
                    at.note(&judge::progress_what(key), now);
                }
            }
            for (agent, withheld) in &registry.withheld {
                at.note(&judge::withheld_what(agent), withheld.last_mentioned);
            }
        })
    }

    /// Records what the poll's peers answered, judges every known task at `at`, appends one
    /// escalation per newly stuck task, and returns the rows.
    pub fn record(&self, poll: &Poll, at: &Clocked) -> Result<Vec<LiveTask>> {
        // Judged without answers, every task would look silent: the pass is the poll's error.
        if let Some(why) = &poll.unread_registry {
            anyhow::bail!("{why}");
        }
        self.update(|registry| {
            let judged = judge::judge_registry(registry, &poll.answers, &self.rules, at);
            for row in &judged.newly_stuck {
                let appended = self
                    .escalations
                    .append(row, &self.rules.no_reply, &self.gate, at);
                match appended {
                    // Marked only once written: a failed append is tried again next pass.
                    Ok(()) => registry.mark_escalated(&row.agent, &row.id),
                    Err(e) => tracing::error!(
                        task = %row.id,
                        "cannot write the escalation, trying again next pass: {e:#}"
                    ),
                }
            }
            judged.rows
        })
    }

    /// Runs `change` on the registry under the lock and saves the result, through the gate,
    /// if it changed. A registry that cannot be read is an error, and is not written over.
    fn update<T>(&self, change: impl FnOnce(&mut Registry) -> T) -> Result<T> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create directory {}", dir.display()))?;
        }
        let lock = File::create(&self.lock_path)
            .with_context(|| format!("cannot open lock file {}", self.lock_path.display()))?;
        lock.lock()
            .with_context(|| format!("cannot lock {}", self.lock_path.display()))?;
        let read = registry::read_file(&self.path)?;
        let mut registry = read.clone();
        // A file from before ids were checked may hold secret-shaped ones: never again.
        registry.purge(&self.gate);
        let out = change(&mut registry);
        // Most passes change nothing: no write, no fsync.
        if registry != read || !self.path.exists() {
            let json = self
                .gate
                .to_json(&registry)
                .context("cannot serialise live tasks")?;
            let bytes = serde_json::to_vec_pretty(&json).context("cannot serialise live tasks")?;
            atomic::write(&self.path, &bytes)?;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::TaskFacts;
    use crate::collect::live_tasks::registry::Origin;
    use crate::collect::live_tasks::{Answer, Answers};
    use chrono::{Duration, TimeZone, Utc};

    /// The shipped rules file's values: judged by the fleet's own thresholds.
    fn rules() -> StuckRules {
        StuckRules::of(
            &crate::config::Rules::parse(
                Path::new("config/rules.yaml"),
                include_str!("../../../config/rules.yaml"),
            )
            .unwrap(),
        )
    }

    fn lines(path: &Path) -> Vec<String> {
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// A stuck task whose escalation line cannot be written (a directory where the log goes)
    /// is not marked escalated: once the log can be written, the next pass writes its line,
    /// and only that once.
    #[test]
    fn a_failed_escalation_is_written_on_the_next_pass_exactly_once() {
        let state = tempfile::tempdir().unwrap();
        let rules = rules();
        let limit = i64::try_from(rules.no_reply.seconds).unwrap();
        let shipped = crate::config::Rules::parse(
            Path::new("config/rules.yaml"),
            include_str!("../../../config/rules.yaml"),
        )
        .unwrap();
        let store = LiveTaskStore::new(
            state.path(),
            rules,
            Escalations::new(state.path(), &shipped.state),
            RedactionGate::default(),
        );
        let t0 = Utc.with_ymd_and_hms(2026, 11, 30, 6, 0, 0).unwrap();
        let mention = Mention {
            agent: "heart".into(),
            wire: Some("v1".into()),
            origin: Origin::Heartbeat,
            id: "t_1".into(),
        };
        store.note(&[mention], &Clocked::wall_only(t0)).unwrap();
        let poll = Poll {
            answers: Answers::from([(
                crate::collect::live_tasks::registry::TaskKey::new("heart", "t_1"),
                Answer::Task(TaskFacts {
                    state: Some("TASK_STATE_WORKING"),
                    updated_at: Some(t0),
                }),
            )]),
            unread_registry: None,
        };
        store.record(&poll, &Clocked::wall_only(t0)).unwrap();

        let log = state.path().join(crate::write::escalations::FILE_NAME);
        std::fs::create_dir(&log).unwrap();
        let stuck = store
            .record(&poll, &Clocked::wall_only(t0 + Duration::seconds(limit)))
            .unwrap();
        assert!(stuck[0].stuck, "{stuck:?}");
        std::fs::remove_dir(&log).unwrap();

        store
            .record(
                &poll,
                &Clocked::wall_only(t0 + Duration::seconds(limit + 1)),
            )
            .unwrap();
        let written = lines(&log);
        assert_eq!(written.len(), 1, "{written:?}");
        assert!(written[0].contains("\"t_1\""), "{written:?}");
        store
            .record(
                &poll,
                &Clocked::wall_only(t0 + Duration::seconds(limit + 2)),
            )
            .unwrap();
        assert_eq!(lines(&log).len(), 1, "{:?}", lines(&log));
    }
}

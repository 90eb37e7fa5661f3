//! The known live A2A tasks, kept in `state_dir/live_tasks.json` so that separate runs (cron
//! `collect --only agents` and `collect --only tasks`, or `run`) share them.
//!
//! The agents collector notes the task ids heartbeat replies and audit logs mention; the
//! live-tasks collector polls them and records what it learned (state, last progress, whether
//! the stuck escalation was written). Every read-modify-write holds an exclusive lock, and the
//! file is replaced atomically; an unreadable file is logged and started afresh (it only holds
//! what the next passes rediscover).

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::write::atomic;

const FILE_NAME: &str = "live_tasks.json";
const LOCK_NAME: &str = "live_tasks.lock";

/// Where a task id was seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    Heartbeat,
    Audit,
}

/// One known task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KnownTask {
    pub agent: String,
    pub origin: Origin,
    /// The dialect that answered the agent's heartbeat (`v1`, `v0.3`, `v0.3-content`).
    pub wire: Option<String>,
    pub first_seen: DateTime<Utc>,
    /// The last time a heartbeat or audit line mentioned it.
    pub last_mentioned: DateTime<Utc>,
    /// The last time it showed progress: first seen, or a state or timestamp change.
    pub last_progress: DateTime<Utc>,
    pub state: Option<String>,
    pub updated_at: Option<DateTime<Utc>>,
    /// When it reached a terminal state.
    pub finished_at: Option<DateTime<Utc>>,
    /// The stuck escalation was appended for it.
    pub escalated: bool,
}

/// Task id → what is known. Ordered, so the file is stable.
pub type Tasks = BTreeMap<String, KnownTask>;

pub struct Registry {
    path: PathBuf,
    lock_path: PathBuf,
}

impl Registry {
    pub fn new(state_dir: &Path) -> Registry {
        Registry {
            path: state_dir.join(FILE_NAME),
            lock_path: state_dir.join(LOCK_NAME),
        }
    }

    /// Runs `change` on the known tasks under the lock and saves the result if it changed.
    pub fn update<T>(&self, change: impl FnOnce(&mut Tasks) -> T) -> Result<T> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create directory {}", dir.display()))?;
        }
        let lock = File::create(&self.lock_path)
            .with_context(|| format!("cannot open lock file {}", self.lock_path.display()))?;
        lock.lock()
            .with_context(|| format!("cannot lock {}", self.lock_path.display()))?;
        let mut tasks = self.load();
        let before = tasks.clone();
        let out = change(&mut tasks);
        // Most passes change nothing: no write, no fsync.
        if tasks != before || !self.path.exists() {
            let bytes = serde_json::to_vec_pretty(&tasks).context("cannot serialise live tasks")?;
            atomic::write(&self.path, &bytes)?;
        }
        Ok(out)
    }

    fn load(&self) -> Tasks {
        match std::fs::read(&self.path) {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                tracing::warn!(file = %self.path.display(), "live task registry unreadable, starting afresh: {e}");
                Tasks::new()
            }),
            Err(_) => Tasks::new(),
        }
    }
}

/// Records that `agent` mentioned these task ids at `now`.
pub fn note(
    tasks: &mut Tasks,
    agent: &str,
    wire: Option<&str>,
    origin: Origin,
    ids: &[String],
    now: DateTime<Utc>,
) {
    for id in ids {
        let task = tasks.entry(id.clone()).or_insert_with(|| KnownTask {
            agent: agent.to_string(),
            origin,
            wire: None,
            first_seen: now,
            last_mentioned: now,
            last_progress: now,
            state: None,
            updated_at: None,
            finished_at: None,
            escalated: false,
        });
        task.last_mentioned = now;
        if let Some(wire) = wire {
            task.wire = Some(wire.to_string());
        }
        // A heartbeat's own report outranks an audit line's mention.
        if origin == Origin::Heartbeat {
            task.origin = Origin::Heartbeat;
            task.agent = agent.to_string();
        }
    }
}

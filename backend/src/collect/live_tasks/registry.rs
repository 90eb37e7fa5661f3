//! The known live A2A tasks: what `state_dir/live_tasks.json` holds, so that separate runs (cron
//! `collect --only agents` and `collect --only tasks`, or `run`) share them.
//!
//! The agents pass mentions task ids (heartbeat replies, audit logs); the write side notes
//! them here ([`note`]) and records what the live-task poll learned (state, last progress,
//! whether the stuck escalation was written). This module only holds the shape and the pure
//! operations on it, plus a read-only [`read`] for the poll: the file is written by
//! `write::live_tasks`, under its lock, and replaced atomically, so a read without the lock
//! sees one whole version. An unreadable file is logged and read as empty (it only holds what
//! the next passes rediscover).

use std::collections::BTreeMap;
use std::path::Path;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

pub const FILE_NAME: &str = "live_tasks.json";

/// Where a task id was seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// A heartbeat reply's in-flight list.
    Heartbeat,
    /// The heartbeat itself: the peer answered it with a Task it has not finished. Spec §2.2:
    /// the hub expects the reply within the stuck window, so this task is judged like any.
    HeartbeatTask,
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
    /// Its peer's last answer was "task not found": why, until it knows the task again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_found: Option<String>,
}

/// Task id → what is known. Ordered, so the file is stable.
pub type Tasks = BTreeMap<String, KnownTask>;

/// A task id one agent's pass mentioned, handed from the agents collector to the write side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mention {
    pub agent: String,
    /// The dialect that answered the agent's heartbeat, if it answered.
    pub wire: Option<String>,
    pub origin: Origin,
    pub id: String,
}

/// The known tasks as last written, for reading only.
pub fn read(state_dir: &Path) -> Tasks {
    let path = state_dir.join(FILE_NAME);
    match std::fs::read(&path) {
        Ok(bytes) => parse(&path, &bytes),
        Err(_) => Tasks::new(),
    }
}

/// The file's content; an unreadable one is logged and read as empty.
pub fn parse(path: &Path, bytes: &[u8]) -> Tasks {
    serde_json::from_slice(bytes).unwrap_or_else(|e| {
        tracing::warn!(file = %path.display(), "live task registry unreadable, starting afresh: {e}");
        Tasks::new()
    })
}

/// Records that the mentioned task ids were seen at `now`.
///
/// Each heartbeat a peer leaves unfinished is a new task; one per agent is tracked at a time,
/// the oldest still open (neither finished nor unknown to its peer): it alone shows whether
/// the agent ever finishes them, and each later one only renews its mention, so a hung agent
/// is one row and one escalation, not one per heartbeat.
pub fn note(tasks: &mut Tasks, mentions: &[Mention], now: DateTime<Utc>) {
    for mention in mentions {
        if mention.origin == Origin::HeartbeatTask
            && !tasks.contains_key(&mention.id)
            && let Some(open) = tasks.values_mut().find(|t| {
                t.origin == Origin::HeartbeatTask
                    && t.agent == mention.agent
                    && t.finished_at.is_none()
                    && t.not_found.is_none()
            })
        {
            open.last_mentioned = now;
            continue;
        }
        let task = tasks
            .entry(mention.id.clone())
            .or_insert_with(|| KnownTask {
                agent: mention.agent.clone(),
                origin: mention.origin,
                wire: None,
                first_seen: now,
                last_mentioned: now,
                last_progress: now,
                state: None,
                updated_at: None,
                finished_at: None,
                escalated: false,
                not_found: None,
            });
        task.last_mentioned = now;
        if let Some(wire) = &mention.wire {
            task.wire = Some(wire.clone());
        }
        // A heartbeat's in-flight list outranks an audit line's mention.
        if mention.origin == Origin::Heartbeat {
            task.origin = Origin::Heartbeat;
            task.agent = mention.agent.clone();
        }
    }
}

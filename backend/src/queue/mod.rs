//! The work queue (spec 003 §3): every instruction and every agent report becomes a row in one
//! SQLite file per workspace (`[work_queue] db`), owned and written by fleetdash alone.
//!
//! - [`report`]: what agents report (heartbeat, completion, blocker, ACK, assign).
//! - The store: rows (§3.2) and an append-only events table, WAL, a versioned schema.
//! - The rules (ACK within N, multi-tag, the 300 s watchdog, worker died, deadline, blocked),
//!   every threshold from the rules file.
//!
//! The intake (`crate::intake`) and the CLI (`fleetdash task assign`, `fleetdash tasks`) are its
//! only writers; the collector reads it to put `tasks.queue[]` into the snapshot.
//!
//! INTERFACE ONLY on branch h/qbase: the bodies are written on h/queue. Semantics:
//! - [`WorkQueue::apply`] applies one report in one transaction and returns only after that
//!   transaction is durable (the intake answers after it: an answered report is never lost). A
//!   report whose `message_id` was already applied (same reporter) is not applied again: the
//!   answer is the same as the first time (`Applied::duplicate` set).
//! - SQLite runs off the async runtime (a writer thread or `spawn_blocking`): these are `async`.

pub mod report;

use chrono::{DateTime, Utc};

pub use report::{Ack, Assignment, Report, ReportKind, Reporter, WireState};

/// One task row (§3.2), as the queue holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRow {
    /// "q_" and a short random id, unique in the file.
    pub id: String,
    pub title: String,
    /// The agent that owns it: named by the assignment, or the first owning ACK (§4.2).
    pub owner: Option<String>,
    pub tagged: Vec<String>,
    /// "operator" or the agent that assigned it.
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    pub deadline: Option<DateTime<Utc>>,
    pub state: WireState,
    /// The owner's (or the first) ACK; `None` until one came.
    pub ack: Option<AckRecord>,
    /// Agents that ACKed "yielded to owner", or lost the multi-tag race.
    pub yielded: Vec<String>,
    /// What it is blocked on, from a blocker report or an "ACK blocked on".
    pub blocked_on: Option<String>,
    /// The last report about this task (any kind).
    pub last_report_at: Option<DateTime<Utc>>,
    /// Set by the watchdog: "[task orphaned — no reply produced]".
    pub status_message: Option<String>,
    /// Recorded separately from the 300 s rule (§3.5): no report for the worker-died limit.
    pub worker_died: bool,
    /// Who reported last and the contextId it carried (§5.4).
    pub provenance: Provenance,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AckRecord {
    pub by: String,
    pub ack: Ack,
    pub at: DateTime<Utc>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Provenance {
    pub reporter: String,
    pub context_id: Option<String>,
}

/// What applying a report did.
#[derive(Debug, Clone, PartialEq)]
pub struct Applied {
    /// The task the report created or touched (none for a heartbeat).
    pub task: Option<TaskRow>,
    /// The same `message_id` was applied before: nothing changed this time.
    pub duplicate: bool,
}

/// Why a report was refused; nothing was written for it.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// A2A TaskNotFound (-32001).
    UnknownTask(String),
    /// The reporter neither owns nor is tagged on the task: 403, ASC `PERMISSION_DENIED`.
    NotYours { task_id: String },
    /// An owning ACK after another agent owns it (§4.2): ASC `ABORTED_CONCURRENCY`; recorded
    /// as yielded.
    AlreadyOwned { task_id: String, owner: String },
    /// Well-formed but not a legal report (a non-terminal state in a completion, ...).
    Invalid(String),
    /// The database failed: the report is not stored (500), and the reason names the file.
    Store(String),
}

/// What a watchdog sweep did, one line per task (each fires once per task).
#[derive(Debug, Clone, PartialEq)]
pub enum SweepEvent {
    /// WORKING with no report for `no_reply_s`: now FAILED, "[task orphaned — no reply
    /// produced]"; the caller writes one escalation line for it.
    Orphaned { task: TaskRow },
    /// No report for the worker-died limit: recorded, no follow-up.
    WorkerDied { task: TaskRow },
}

/// The queue's thresholds, from the rules file (never literals in code).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QueueRules {
    pub ack_within_s: u64,
    pub no_reply_s: u64,
    pub worker_died_s: u64,
}

/// The work queue in one SQLite file.
pub struct WorkQueue {
    _private: (),
}

impl WorkQueue {
    /// Opens (creating and migrating) the queue at `path`.
    pub async fn open(_path: &std::path::Path, _rules: QueueRules) -> Result<WorkQueue, String> {
        unimplemented!("h/queue")
    }

    /// Applies one report; durable before it returns.
    pub async fn apply(&self, _report: Report) -> Result<Applied, Refusal> {
        unimplemented!("h/queue")
    }

    pub async fn get(&self, _id: &str) -> Result<Option<TaskRow>, String> {
        unimplemented!("h/queue")
    }

    /// Every row, newest first.
    pub async fn list(&self) -> Result<Vec<TaskRow>, String> {
        unimplemented!("h/queue")
    }

    /// The watchdog at `now` (every 60 s, `stuck.sweep_seconds` in the rules).
    pub async fn sweep(&self, _now: DateTime<Utc>) -> Result<Vec<SweepEvent>, String> {
        unimplemented!("h/queue")
    }
}

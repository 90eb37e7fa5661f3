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
//! Modules: [`schema`] (opening, refusing what is not ours, migrations), [`rows`] (a row in SQL,
//! read row by row: one that cannot be read is its own failure), [`store`] (the state machine,
//! ACK-then-own, permissions, dismissals), [`writer`] (the one writer thread, group commit),
//! [`judge`] (the rules as pure functions of a row and `now`), [`retention`] (what the file lets
//! go, after each sweep: finished tasks and old events, issue 33). The sweep's cadence and its
//! escalation lines are a run-time loop: `crate::watchdog::sweep`.
//!
//! Semantics:
//! - [`WorkQueue::apply`] applies one report in one transaction and returns only after that
//!   transaction is durable (the intake answers after it: an answered report is never lost). A
//!   report whose `message_id` was already applied (same reporter) is not applied again: the
//!   answer is the same as the first time (`Applied::duplicate` set).
//! - SQLite runs off the async runtime (a writer thread or `spawn_blocking`): these are `async`.

pub mod judge;
pub mod report;
pub mod retention;
pub mod rows;
pub mod schema;
pub mod store;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::Context;
use chrono::{DateTime, Utc};
use rusqlite::Connection;
use tokio::sync::{mpsc, oneshot};

use crate::config::Rules;

pub use judge::{ORPHANED_MESSAGE, Retention, Verdict, judge};
pub use report::{Ack, Assignment, Report, ReportKind, Reporter, WireState};
pub use rows::{RowRead, Unreadable};
pub use writer::{CHECKPOINT_PAUSE, MAX_BATCH, QUEUE_DEPTH};

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
    /// Who reported last, and the task's A2A context (its assignment's contextId).
    pub provenance: Provenance,
    /// When it reached its terminal state (absent in files of schema v1 read as they are).
    pub finished_at: Option<DateTime<Utc>>,
    /// When the operator dismissed it (`fleetdash task dismiss`): no longer on the dashboard.
    pub dismissed_at: Option<DateTime<Utc>>,
}

impl TaskRow {
    /// Since when a finished task is finished (the retention counts from it): when it reached
    /// its terminal state, else (a v1 file read as it is) its last report, else its creation.
    /// `None` while it is open.
    pub fn finished_since(&self) -> Option<DateTime<Utc>> {
        self.state.is_terminal().then(|| {
            self.finished_at
                .or(self.last_report_at)
                .unwrap_or(self.created_at)
        })
    }

    /// Whether `agent` may read this task (GetTask, ListTasks): the tasks it owns, is tagged
    /// on, or assigned; never another agent's (issue 21).
    pub fn visible_to(&self, agent: &str) -> bool {
        self.owner.as_deref() == Some(agent)
            || self.tagged.iter().any(|t| t == agent)
            || self.created_by == agent
    }

    /// The task's A2A `contextId`: its assignment's, or (none given) the task's own id. It
    /// never changes: a later report's contextId is the reporter's session (spec 003 §5.4),
    /// kept with that report's event, and A2A §3.4.3 has the task keep its context.
    pub fn context(&self) -> &str {
        self.provenance.context_id.as_deref().unwrap_or(&self.id)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct AckRecord {
    pub by: String,
    pub ack: Ack,
    pub at: DateTime<Utc>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Provenance {
    /// The last reporter.
    pub reporter: String,
    /// The contextId the task was assigned in; `None` when the assignment carried none.
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
    /// A report on a task already finished (a second completion, a cancel that lost a race):
    /// for a cancel, A2A TaskNotCancelable (-32002).
    Finished { task_id: String, state: WireState },
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
    /// An open row that cannot be read: passed by, the others swept; the caller logs it.
    Unreadable(Unreadable),
}

/// What `fleetdash task dismiss` did.
#[derive(Debug, Clone, PartialEq)]
pub enum Dismissal {
    /// Dismissed now: the row as it is afterwards (or why it cannot be read), and whether it
    /// was open and canceled first.
    Dismissed { task: Box<RowRead>, canceled: bool },
    /// Dismissed before, at `at`: nothing written.
    Already { at: DateTime<Utc> },
}

/// Asks the watchdog's sweep to run now and waits until it has (its escalations written):
/// what the queue's collector does at the moment a task's verdict turns, so that a task due to
/// be orphaned is orphaned before it is read. Made with [`sweep_calls`].
#[derive(Debug, Clone)]
pub struct SweepCall {
    calls: mpsc::Sender<oneshot::Sender<()>>,
}

/// The sweep's end of [`SweepCall`]s.
#[derive(Debug)]
pub struct SweepCalls {
    calls: mpsc::Receiver<oneshot::Sender<()>>,
}

/// A pair of ends: the collector's and the sweep's.
pub fn sweep_calls() -> (SweepCall, SweepCalls) {
    let (tx, rx) = mpsc::channel(4);
    (SweepCall { calls: tx }, SweepCalls { calls: rx })
}

impl SweepCall {
    /// Returns once the sweep ran after this call, or at once when the sweep has stopped.
    pub async fn sweep_now(&self) {
        let (done, swept) = oneshot::channel();
        if self.calls.send(done).await.is_ok() {
            let _ = swept.await;
        }
    }
}

impl SweepCalls {
    /// The next call, whose sender is told once the sweep ran; `None` once every caller is
    /// gone.
    pub async fn next(&mut self) -> Option<oneshot::Sender<()>> {
        self.calls.recv().await
    }
}

/// The queue's thresholds, from the rules file (never literals in code).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QueueRules {
    pub ack_within_s: u64,
    pub no_reply_s: u64,
    pub worker_died_s: u64,
    /// A finished task leaves the file, with its events, this long after it finished
    /// (`queue_file.finished_stored_seconds`).
    pub finished_stored_s: u64,
    /// An event about no stored task leaves the file this long after it was received
    /// (`queue_file.events_stored_seconds`).
    pub events_stored_s: u64,
    /// The WAL left after a checkpoint is cut back to this (`queue_file.wal_kept_bytes`).
    pub wal_kept_bytes: u64,
}

impl QueueRules {
    /// The limits the model's judge of a task takes ([`fleetdash_model::QueueTask::judge`]).
    pub fn limits(&self) -> fleetdash_model::QueueLimits {
        fleetdash_model::QueueLimits {
            ack_within_s: self.ack_within_s,
            no_reply_s: self.no_reply_s,
            worker_died_s: self.worker_died_s,
        }
    }

    /// The work queue's thresholds in `rules`.
    pub fn of(rules: &Rules) -> QueueRules {
        QueueRules {
            ack_within_s: rules.ack_within.seconds,
            no_reply_s: rules.no_reply.seconds,
            worker_died_s: rules.worker_died.seconds,
            finished_stored_s: rules.state.queue_finished_stored.seconds,
            events_stored_s: rules.state.queue_events_stored.seconds,
            wal_kept_bytes: rules.state.queue_wal_kept.bytes,
        }
    }
}

/// What the queue knows of one agent's reports (push checks: an agent judged on its last
/// heartbeat report, and every agent's last report age).
#[derive(Debug, Clone, PartialEq)]
pub struct AgentReports {
    pub name: String,
    /// Its last report of any kind.
    pub last_report_at: DateTime<Utc>,
    pub last_heartbeat_at: Option<DateTime<Utc>>,
    /// What its last heartbeat said it was last doing.
    pub last_activity_at: Option<DateTime<Utc>>,
    /// The task ids its last heartbeat had in flight.
    pub in_flight: Vec<String>,
}

/// The work queue in one SQLite file.
/// How long [`WorkQueue::close`] waits for a read still in flight to let go of the reader.
const CLOSE_READ_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

pub struct WorkQueue {
    path: PathBuf,
    jobs: mpsc::Sender<writer::Job>,
    /// Reads go to their own connection, beside the writer (WAL: they never wait for it).
    reader: Arc<Mutex<Connection>>,
    writer: Mutex<Option<std::thread::JoinHandle<()>>>,
    checkpointer: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// The clock the queue's ages are observed on: each report's stamps are noted on it as
    /// they are committed, so a step just after a report changes no task's age.
    clock: Option<crate::clock::Clock>,
}

impl WorkQueue {
    /// Opens (creating and migrating) the queue at `path`. A file that is not SQLite, is
    /// corrupt, belongs to another program or has a newer schema is refused with an error
    /// naming it, and left untouched.
    pub async fn open(path: &Path, rules: QueueRules) -> Result<WorkQueue, String> {
        let owned = path.to_path_buf();
        let (conn, reader, checkpointer) = tokio::task::spawn_blocking(move || {
            let conn = schema::open_writer(&owned, rules.wal_kept_bytes)?;
            let reader = schema::open_reader(&owned)?;
            let checkpointer = schema::open_checkpointer(&owned, rules.wal_kept_bytes)?;
            Ok::<_, String>((conn, reader, checkpointer))
        })
        .await
        .map_err(|e| format!("{}: cannot open the work queue: {e}", path.display()))??;
        let (jobs, rx) = mpsc::channel(writer::QUEUE_DEPTH);
        let (wake, wakeups) = std::sync::mpsc::sync_channel(1);
        let thread_path = path.to_path_buf();
        let checkpointer = std::thread::Builder::new()
            .name("work-queue-checkpointer".into())
            .spawn(move || writer::checkpoint(checkpointer, wakeups, thread_path))
            .map_err(|e| format!("{}: cannot start the checkpointer: {e}", path.display()))?;
        let thread_path = path.to_path_buf();
        let handle = std::thread::Builder::new()
            .name("work-queue-writer".into())
            .spawn(move || writer::run(conn, rx, thread_path, rules, wake))
            .map_err(|e| format!("{}: cannot start the writer: {e}", path.display()))?;
        Ok(WorkQueue {
            path: path.to_path_buf(),
            jobs,
            reader: Arc::new(Mutex::new(reader)),
            writer: Mutex::new(Some(handle)),
            checkpointer: Mutex::new(Some(checkpointer)),
            clock: None,
        })
    }

    /// A reading of the queue's clock to judge its rows by (the wall clock alone without one).
    pub fn clocked(&self) -> crate::clock::Clocked {
        match &self.clock {
            Some(clock) => clock.clocked(),
            None => crate::clock::Clocked::wall_only(Utc::now()),
        }
    }

    /// The clock the queue's ages are observed on, when it has one.
    pub fn clock(&self) -> Option<crate::clock::Clock> {
        self.clock.clone()
    }

    /// Notes each committed report's stamps on `clock` (`fleetdash run`: the clock the sweep
    /// and the collector judge by).
    pub fn with_clock(mut self, clock: crate::clock::Clock) -> WorkQueue {
        self.clock = Some(clock);
        self
    }

    /// The queue's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn writer_gone(&self) -> String {
        format!(
            "{}: the work queue's writer stopped; the report is not stored",
            self.path.display()
        )
    }

    /// Applies one report; durable before it returns.
    pub async fn apply(&self, report: Report) -> Result<Applied, Refusal> {
        let (reply, answer) = oneshot::channel();
        let named = match &report.kind {
            ReportKind::Heartbeat { in_flight, .. } => in_flight.clone(),
            _ => Vec::new(),
        };
        let received_at = report.received_at;
        self.jobs
            .send(writer::Job::Apply(Box::new(report), reply))
            .await
            .map_err(|_| Refusal::Store(self.writer_gone()))?;
        let answer = answer
            .await
            .unwrap_or_else(|_| Err(Refusal::Store(self.writer_gone())));
        if let (Some(clock), Ok(applied)) = (&self.clock, &answer)
            && !applied.duplicate
        {
            let at = clock.clocked();
            if let Some(task) = &applied.task {
                judge::note(task, &at);
            }
            // A heartbeat is news of the tasks it names (the claim heartbeat).
            for id in &named {
                judge::note_news(id, received_at, &at);
            }
        }
        answer
    }

    /// Runs `f` on the read connection, off the async runtime.
    async fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, String> {
        let reader = self.reader.clone();
        let path = self.path.display().to_string();
        tokio::task::spawn_blocking(move || {
            let conn = reader.lock().unwrap_or_else(|p| p.into_inner());
            f(&conn).map_err(|e| format!("{path}: cannot read the work queue: {e}"))
        })
        .await
        .map_err(|e| format!("{}: the read failed: {e}", self.path.display()))?
    }

    /// The task `id`. A row that cannot be read is none, as for a report on it: to an agent it
    /// is as absent (never a store failure to retry, nor another agent's data in an error); the
    /// dashboard shows it red, and it is logged here.
    pub async fn get(&self, id: &str) -> Result<Option<TaskRow>, String> {
        let id = id.to_string();
        match self.read(move |c| rows::get(c, &id)).await? {
            None => Ok(None),
            Some(Ok(row)) => Ok(Some(row)),
            Some(Err(bad)) => {
                tracing::warn!(
                    file = %self.path.display(),
                    task = %bad.id,
                    "work queue row asked for cannot be read: {}",
                    bad.reason
                );
                Ok(None)
            }
        }
    }

    /// Every row that can be read, newest first (the dashboard shows the others, [`Self::rows`]).
    pub async fn list(&self) -> Result<Vec<TaskRow>, String> {
        Ok(self
            .rows()
            .await?
            .into_iter()
            .filter_map(Result::ok)
            .collect())
    }

    /// Every row, newest first, each read on its own.
    pub async fn rows(&self) -> Result<Vec<RowRead>, String> {
        self.read(|c| rows::list(c, schema::CURRENT_VERSION)).await
    }

    /// Each agent's last report and heartbeat, by name.
    pub async fn last_reports(&self) -> Result<Vec<AgentReports>, String> {
        self.read(rows::last_reports).await
    }

    /// The operator's dismissal of `task_id` at `at` (`cancel`: an open task is canceled
    /// first); durable before it returns. An unknown id is `Refusal::UnknownTask`, an open task
    /// without `cancel` `Refusal::Invalid`.
    pub async fn dismiss(
        &self,
        task_id: &str,
        cancel: bool,
        at: DateTime<Utc>,
    ) -> Result<Dismissal, Refusal> {
        let (reply, answer) = oneshot::channel();
        let job = writer::Job::Dismiss {
            task_id: task_id.to_string(),
            cancel,
            at,
            reply,
        };
        self.jobs
            .send(job)
            .await
            .map_err(|_| Refusal::Store(self.writer_gone()))?;
        answer
            .await
            .unwrap_or_else(|_| Err(Refusal::Store(self.writer_gone())))
    }

    /// The watchdog at `now` by the wall clock alone (tests at a fixed moment).
    pub async fn sweep(&self, now: DateTime<Utc>) -> Result<Vec<SweepEvent>, String> {
        self.sweep_at(crate::clock::Clocked::wall_only(now)).await
    }

    /// The watchdog at `at` (every 60 s, `stuck.sweep_seconds` in the rules): each task's quiet
    /// time as fleetdash observed it, so a step of the clock fails no task.
    pub async fn sweep_at(&self, at: crate::clock::Clocked) -> Result<Vec<SweepEvent>, String> {
        let (reply, answer) = oneshot::channel();
        self.jobs
            .send(writer::Job::Sweep(Box::new(at), reply))
            .await
            .map_err(|_| self.writer_gone())?;
        answer.await.unwrap_or_else(|_| Err(self.writer_gone()))
    }

    /// Stops the writer once everything sent has been committed, and closes the file.
    pub async fn close(self) -> anyhow::Result<()> {
        let WorkQueue {
            path,
            jobs,
            reader,
            writer,
            checkpointer,
            clock: _,
        } = self;
        drop(jobs);
        // A read still running on a blocking thread (its caller gone at shutdown) holds the
        // reader: wait for it (reads are short; at most CLOSE_READ_WAIT).
        let _ = tokio::task::spawn_blocking(move || {
            let started = std::time::Instant::now();
            let mut reader = reader;
            loop {
                match Arc::try_unwrap(reader) {
                    Ok(conn) => return drop(conn),
                    Err(shared) if started.elapsed() < CLOSE_READ_WAIT => {
                        reader = shared;
                        std::thread::sleep(std::time::Duration::from_millis(5));
                    }
                    Err(_) => return,
                }
            }
        })
        .await;
        // The writer first: when it is gone, the checkpointer stops.
        for (what, thread) in [("writer", writer), ("checkpointer", checkpointer)] {
            let handle = thread.lock().unwrap_or_else(|p| p.into_inner()).take();
            if let Some(handle) = handle {
                tokio::task::spawn_blocking(move || handle.join())
                    .await
                    .with_context(|| format!("the {what}'s join failed"))?
                    .map_err(|_| anyhow::anyhow!("{}: the {what} panicked", path.display()))?;
            }
        }
        // The last connection to close removes the -wal and -shm files only if it has the WAL
        // open; which of ours closed last (the checkpointer may never have read) is a race, so
        // one more connection reads, checkpoints and closes last: a clean close leaves the file
        // alone beside nothing.
        let tidy_path = path.clone();
        tokio::task::spawn_blocking(move || schema::tidy_after_close(&tidy_path))
            .await
            .context("the final checkpoint's join failed")?
            .map_err(anyhow::Error::msg)?;
        Ok(())
    }
}

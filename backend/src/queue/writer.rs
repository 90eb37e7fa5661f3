//! The queue's one writer: a thread that owns the write connection, takes jobs from a channel
//! and commits everything waiting in ONE transaction (group commit), then answers each caller.
//! An fsync per report would cap the queue at the disk's fsync rate; one per batch keeps every
//! answer durable (`synchronous = FULL`) at a fraction of the cost.
//!
//! Each report runs in its own savepoint: a refused report (or one whose SQL failed) is rolled
//! back alone, the others of its batch commit. If the commit itself fails, every caller of the
//! batch is told the report is not stored.

use std::path::PathBuf;
use std::time::Duration;

use chrono::{DateTime, Utc};
use rusqlite::{Connection, TransactionBehavior};
use tokio::sync::{mpsc, oneshot};

use super::{Applied, Dismissal, QueueRules, Refusal, Report, SweepEvent, retention, store};

/// At most this many jobs share one transaction (bounds a transaction's size and the wait of
/// the first caller in it).
pub const MAX_BATCH: usize = 512;
/// Jobs waiting for the writer beyond this make callers wait to send (backpressure).
pub const QUEUE_DEPTH: usize = 4096;

pub(super) enum Job {
    Apply(Box<Report>, oneshot::Sender<Result<Applied, Refusal>>),
    Sweep(
        Box<crate::clock::Clocked>,
        oneshot::Sender<Result<Vec<SweepEvent>, String>>,
    ),
    /// The operator's `fleetdash task dismiss`.
    Dismiss {
        task_id: String,
        cancel: bool,
        at: DateTime<Utc>,
        reply: oneshot::Sender<Result<Dismissal, Refusal>>,
    },
}

enum Answer {
    Apply(
        oneshot::Sender<Result<Applied, Refusal>>,
        Box<Result<Applied, Refusal>>,
    ),
    Sweep(
        oneshot::Sender<Result<Vec<SweepEvent>, String>>,
        Result<Vec<SweepEvent>, String>,
    ),
    Dismiss(
        oneshot::Sender<Result<Dismissal, Refusal>>,
        Result<Dismissal, Refusal>,
    ),
}

/// Pause between two checkpoints: the WAL grows by at most this long's commits between them.
pub const CHECKPOINT_PAUSE: Duration = Duration::from_millis(500);

/// Runs until every sender is gone. `checkpoints` is told after each commit (a wake-up, not a
/// queue: any number of commits coalesce into one checkpoint).
pub(super) fn run(
    mut conn: Connection,
    mut jobs: mpsc::Receiver<Job>,
    path: PathBuf,
    rules: QueueRules,
    checkpoints: std::sync::mpsc::SyncSender<()>,
) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while let Some(first) = jobs.blocking_recv() {
        batch.push(first);
        while batch.len() < MAX_BATCH {
            match jobs.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        commit(&mut conn, batch.drain(..), &path, &rules);
        let _ = checkpoints.try_send(());
    }
}

/// Copies the WAL into the database beside the writer (PASSIVE: it never waits for, nor
/// blocks, the writer or the readers), at most every [`CHECKPOINT_PAUSE`], until the writer
/// is gone. The last connection to close checkpoints what is left.
pub(super) fn checkpoint(conn: Connection, wakeups: std::sync::mpsc::Receiver<()>, path: PathBuf) {
    use std::sync::mpsc::RecvTimeoutError;
    while wakeups.recv().is_ok() {
        if let Err(e) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
            tracing::warn!(file = %path.display(), "work queue checkpoint failed: {e}");
        }
        // The pause, cut short when the writer is gone; wake-ups in it coalesce.
        let until = std::time::Instant::now() + CHECKPOINT_PAUSE;
        loop {
            let left = until.saturating_duration_since(std::time::Instant::now());
            match wakeups.recv_timeout(left) {
                Ok(()) => continue,
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
    }
}

fn commit(
    conn: &mut Connection,
    batch: impl Iterator<Item = Job>,
    path: &std::path::Path,
    rules: &QueueRules,
) {
    let failed = |e: &rusqlite::Error| format!("{}: {e}", path.display());
    let mut tx = match conn.transaction_with_behavior(TransactionBehavior::Immediate) {
        Ok(tx) => tx,
        Err(e) => {
            let why = failed(&e);
            for job in batch {
                fail(job, &why);
            }
            return;
        }
    };
    let mut answers = Vec::new();
    for job in batch {
        answers.push(match job {
            Job::Apply(report, reply) => {
                let answer = match in_savepoint(&mut tx, |c| {
                    store::apply(c, &report).map(|step| (step.keep, step.answer))
                }) {
                    Ok(answer) => answer,
                    Err(e) => Err(Refusal::Store(failed(&e))),
                };
                Answer::Apply(reply, Box::new(answer))
            }
            Job::Sweep(at, reply) => {
                let answer = in_savepoint(&mut tx, |c| {
                    store::sweep(c, rules, &at).map(|events| (true, events))
                })
                .map_err(|e| failed(&e));
                // The retention after the watchdog, on its own: a failed one keeps the sweep.
                match in_savepoint(&mut tx, |c| {
                    retention::prune(c, rules, &at).map(|pruned| (true, pruned))
                }) {
                    // Routine, every sweep: not worth the operator's log.
                    Ok(pruned) if pruned != retention::Pruned::default() => tracing::debug!(
                        file = %path.display(),
                        tasks = pruned.tasks,
                        events = pruned.events,
                        "work queue retention: finished tasks and old events deleted"
                    ),
                    Ok(_) => {}
                    Err(e) => tracing::warn!(
                        file = %path.display(),
                        "work queue retention failed, tried again at the next sweep: {e}"
                    ),
                }
                Answer::Sweep(reply, answer)
            }
            Job::Dismiss {
                task_id,
                cancel,
                at,
                reply,
            } => {
                let answer = match in_savepoint(&mut tx, |c| {
                    store::dismiss(c, &task_id, cancel, at).map(|done| (done.is_ok(), done))
                }) {
                    Ok(answer) => answer,
                    Err(e) => Err(Refusal::Store(failed(&e))),
                };
                Answer::Dismiss(reply, answer)
            }
        });
    }
    // Nobody is answered before the commit is durable.
    if let Err(e) = tx.commit() {
        let why = failed(&e);
        for answer in answers {
            match answer {
                Answer::Apply(reply, _) => {
                    let _ = reply.send(Err(Refusal::Store(why.clone())));
                }
                Answer::Sweep(reply, _) => {
                    let _ = reply.send(Err(why.clone()));
                }
                Answer::Dismiss(reply, _) => {
                    let _ = reply.send(Err(Refusal::Store(why.clone())));
                }
            }
        }
        return;
    }
    for answer in answers {
        // A caller that gave up waiting is not an error: its report is stored.
        match answer {
            Answer::Apply(reply, answer) => {
                let _ = reply.send(*answer);
            }
            Answer::Sweep(reply, answer) => {
                let _ = reply.send(answer);
            }
            Answer::Dismiss(reply, answer) => {
                let _ = reply.send(answer);
            }
        }
    }
}

/// Runs `f` in a savepoint, kept when it says so, rolled back otherwise (and on error).
fn in_savepoint<T>(
    tx: &mut rusqlite::Transaction,
    f: impl FnOnce(&Connection) -> rusqlite::Result<(bool, T)>,
) -> rusqlite::Result<T> {
    let sp = tx.savepoint()?;
    // Dropped without commit (refused, or an error): rolled back.
    let (keep, value) = f(&sp)?;
    if keep {
        sp.commit()?;
    }
    Ok(value)
}

fn fail(job: Job, why: &str) {
    match job {
        Job::Apply(_, reply) => {
            let _ = reply.send(Err(Refusal::Store(why.to_string())));
        }
        Job::Sweep(_, reply) => {
            let _ = reply.send(Err(why.to_string()));
        }
        Job::Dismiss { reply, .. } => {
            let _ = reply.send(Err(Refusal::Store(why.to_string())));
        }
    }
}

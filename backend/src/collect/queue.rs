//! The work queue's collector: `tasks.queue[]` in status.json, each row judged at the
//! collection's moment by the queue's rules (`queue::judge::to_snapshot`, the model's one judge).
//! A row that cannot be read is red on its own (`tasks.queue_unreadable`), the others are
//! listed; finished tasks past the rules' retention and dismissed ones are left out and counted
//! (`tasks.queue_left_out`, `queue::judge::left_out`), never silently dropped.
//!
//! It reads and never writes: the queue has one writer per file. In `fleetdash run` (and the
//! demo) it reads through the same [`WorkQueue`] handle the intake and the watchdog use; a
//! one-shot `fleetdash collect` opens the file strictly read-only instead
//! (`queue::rows::read_only`), so that it never starts a second writer beside `run`'s. A file
//! not created yet, where `run` can create it, is `"unknown"`: no task yet, and no failure
//! (issue 43: a `collect` before the first `run` is not red). A file that cannot be created,
//! is corrupt or another program's is `"error: <reason>"` naming it.
//!
//! Besides its cadence, it reads again at the moment the first of the listed tasks' verdicts
//! turns by time alone (`turns_in_s`: an ACK limit, a deadline, no reply, worker died), after
//! asking the watchdog's sweep to run then ([`SweepCall`]): a task past the no-reply limit is
//! orphaned and shown so at that moment, not up to a cadence later.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use fleetdash_model::{Asc, Band, Probe, QueueLeftOut, QueueTask, UnreadableTask};

use super::{Collector, Findings, SectionData};
use crate::clock::{Clock, Clocked};
use crate::queue::judge::{LeftOut, left_out};
use crate::queue::rows::{self, QueueView};
use crate::queue::{QueueRules, Retention, SweepCall, WorkQueue};

/// Where the queue is read from.
#[derive(Clone)]
pub enum QueueSource {
    /// The handle `run` shares with the intake and the watchdog.
    Shared(Arc<WorkQueue>),
    /// The file, opened read-only for each read (a one-shot `collect`).
    File(PathBuf),
}

impl QueueSource {
    /// Every row and each agent's last reports. Off the async runtime.
    pub async fn read(&self) -> Result<QueueView, String> {
        match self {
            QueueSource::Shared(queue) => Ok(QueueView {
                tasks: queue.rows().await?,
                agents: queue.last_reports().await?,
                not_created: false,
            }),
            QueueSource::File(path) => {
                let path = path.clone();
                let shown = path.display().to_string();
                tokio::task::spawn_blocking(move || rows::read_only(&path))
                    .await
                    .map_err(|e| format!("{shown}: the read failed: {e}"))?
            }
        }
    }
}

/// The queue's part of the snapshot, from one read.
#[derive(Debug, Clone, PartialEq)]
pub struct QueuePart {
    /// `tasks.queue`: the rows listed, each judged; a read that failed is the part's error.
    pub tasks: Probe<Vec<QueueTask>>,
    /// `tasks.queue_unreadable`: the rows that cannot be read, red on their own.
    pub unreadable: Vec<UnreadableTask>,
    /// `tasks.queue_left_out`, counted; which of them the snapshot before listed is the
    /// snapshot's to say (`crate::snapshot::apply`, from [`QueuePart::left`]).
    pub left_out: QueueLeftOut,
    /// Every row left out, by id, and why.
    pub left: Vec<(String, LeftOut)>,
}

impl QueuePart {
    /// A part listing `tasks`, with nothing unreadable and nothing left out.
    pub fn listed(tasks: Vec<QueueTask>) -> QueuePart {
        QueuePart {
            tasks: Probe::Value(tasks),
            unreadable: Vec::new(),
            left_out: QueueLeftOut::default(),
            left: Vec::new(),
        }
    }
}

/// The queue's part from what was read, judged at `at`: every row judged then, newest first,
/// past the `retention` left out and counted; a row that cannot be read on its own; a read that
/// failed is the part's error.
pub fn rows(
    read: Result<&QueueView, &str>,
    rules: &QueueRules,
    retention: &Retention,
    at: &Clocked,
) -> QueuePart {
    let now = at.wall();
    let view = match read {
        Ok(view) => view,
        Err(reason) => {
            return QueuePart {
                tasks: Probe::error(reason),
                ..QueuePart::listed(Vec::new())
            };
        }
    };
    if view.not_created {
        // Nothing failed: no task yet, said so (`fleetdash run` creates the file).
        return QueuePart {
            tasks: Probe::Unknown,
            ..QueuePart::listed(Vec::new())
        };
    }
    let mut part = QueuePart::listed(Vec::new());
    let mut listed = Vec::new();
    for (row, out) in view.tasks.iter().zip(left_out(&view.tasks, retention, at)) {
        if let Some(why) = out {
            let id = match row {
                Ok(row) => row.id.clone(),
                Err(bad) => bad.id.clone(),
            };
            match why {
                LeftOut::Dismissed => part.left_out.dismissed += 1,
                LeftOut::Retired => part.left_out.finished += 1,
            }
            part.left.push((id, why));
            continue;
        }
        match row {
            Ok(row) => listed.push(crate::queue::judge::to_snapshot(row, rules, at)),
            Err(bad) => part.unreadable.push(UnreadableTask {
                id: bad.id.clone(),
                reason: bad.reason.clone(),
                band: Band::Red,
                status: Asc::INTEGRITY_CHECK_FAILED,
                checked_at: now,
                stale: true,
            }),
        }
    }
    part.tasks = Probe::Value(listed);
    part
}

pub struct QueueCollector {
    source: QueueSource,
    rules: QueueRules,
    retention: Retention,
    cadence: Duration,
    /// When the first of the listed tasks' verdicts turns, as of the last read.
    turn: Mutex<Option<tokio::time::Instant>>,
    /// The watchdog's sweep, run at a turn before the read (`run` with the queue's writer).
    sweep: Option<SweepCall>,
}

impl QueueCollector {
    pub fn new(
        source: QueueSource,
        rules: QueueRules,
        retention: Retention,
        cadence: Duration,
    ) -> Self {
        QueueCollector {
            source,
            rules,
            retention,
            cadence,
            turn: Mutex::new(None),
            sweep: None,
        }
    }

    /// At a turn, has the watchdog's sweep run before it reads.
    pub fn with_sweep(mut self, sweep: SweepCall) -> Self {
        self.sweep = Some(sweep);
        self
    }

    fn turn(&self) -> Option<tokio::time::Instant> {
        *self.turn.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// In how many seconds the first of `part`'s listed tasks turns ([`QueueTask::turns_in_s`]).
pub fn next_turn(part: &QueuePart) -> Option<u64> {
    part.tasks
        .value()?
        .iter()
        .filter_map(|t| t.turns_in_s)
        .min()
}

#[async_trait]
impl Collector for QueueCollector {
    fn cadence(&self) -> Duration {
        self.cadence
    }

    async fn collect(&self, clock: &Clock) -> Findings {
        let read = self.source.read().await;
        let at = clock.clocked();
        // A row that cannot be read is said on the dashboard (and logged by the sweep).
        if let Err(e) = &read {
            tracing::warn!("work queue not read: {e}");
        }
        let part = rows(
            read.as_ref().map_err(String::as_str),
            &self.rules,
            &self.retention,
            &at,
        );
        // Counted from now, a little after `at`: never before the turn.
        let turn =
            next_turn(&part).map(|s| tokio::time::Instant::now() + Duration::from_secs(s.max(1)));
        *self.turn.lock().unwrap_or_else(|p| p.into_inner()) = turn;
        Findings::Section(SectionData::Queue(part))
    }

    /// Until `due` (its cadence, or a re-probe), or sooner the moment a listed task's verdict
    /// turns: then the watchdog's sweep runs first (it orphans what is due), and the read
    /// follows it.
    async fn wait_next(&self, due: tokio::time::Instant) {
        match self.turn() {
            Some(turn) if turn < due => {
                tokio::time::sleep_until(turn).await;
                tracing::debug!("work queue: a task's verdict turns now; read again");
                if let Some(sweep) = &self.sweep {
                    sweep.sweep_now().await;
                }
            }
            _ => tokio::time::sleep_until(due).await,
        }
    }
}

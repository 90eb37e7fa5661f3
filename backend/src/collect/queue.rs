//! The work queue's collector: `tasks.queue[]` in status.json, each row judged at the
//! collection's moment by the queue's rules (`queue::judge::to_snapshot`, the model's one judge).
//!
//! It reads and never writes: the queue has one writer per file. In `fleetdash run` (and the
//! demo) it reads through the same [`WorkQueue`] handle the intake and the watchdog use; a
//! one-shot `fleetdash collect` opens the file strictly read-only instead
//! (`queue::store::read_only`), so that it never starts a second writer beside `run`'s. A file
//! that is missing, corrupt or another program's is `"error: <reason>"` naming it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use fleetdash_model::{Probe, QueueTask};

use super::{Collector, Findings, SectionData};
use crate::queue::store::{self, QueueView};
use crate::queue::{QueueRules, WorkQueue};

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
                tasks: queue.list().await?,
                agents: queue.last_reports().await?,
            }),
            QueueSource::File(path) => {
                let path = path.clone();
                let shown = path.display().to_string();
                tokio::task::spawn_blocking(move || store::read_only(&path))
                    .await
                    .map_err(|e| format!("{shown}: the read failed: {e}"))?
            }
        }
    }
}

/// `tasks.queue[]` from what was read at `now`: every row judged then, newest first; a read
/// that failed is the part's error.
pub fn rows(
    read: Result<&QueueView, &str>,
    rules: &QueueRules,
    now: DateTime<Utc>,
) -> Probe<Vec<QueueTask>> {
    match read {
        Ok(view) => Probe::Value(
            view.tasks
                .iter()
                .map(|row| crate::queue::judge::to_snapshot(row, rules, now))
                .collect(),
        ),
        Err(reason) => Probe::error(reason),
    }
}

pub struct QueueCollector {
    source: QueueSource,
    rules: QueueRules,
    cadence: Duration,
}

impl QueueCollector {
    pub fn new(source: QueueSource, rules: QueueRules, cadence: Duration) -> Self {
        QueueCollector {
            source,
            rules,
            cadence,
        }
    }
}

#[async_trait]
impl Collector for QueueCollector {
    fn cadence(&self) -> Duration {
        self.cadence
    }

    async fn collect(&self) -> Findings {
        let read = self.source.read().await;
        let now = Utc::now();
        if let Err(e) = &read {
            tracing::warn!("work queue not read: {e}");
        }
        Findings::Section(SectionData::Queue(rows(
            read.as_ref().map_err(String::as_str),
            &self.rules,
            now,
        )))
    }
}

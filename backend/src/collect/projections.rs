//! The vault projection job (spec §3.4): every `cadence.projections`, each board with a declared
//! target is read afresh and handed to the write side, which projects it through the
//! projection writer (`write::projection`, failing closed on any file it did not write).
//! Scheduled like a collector, and like one it writes nothing itself; what the snapshot shows
//! is each board's outcome ("written", "unchanged", "retired: writes nothing", or why it
//! refused).
//!
//! A board that cannot be read is not projected at all: an empty projection would erase the
//! vault's copy of a board that still exists.

use std::path::Path;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use fleetdash_model::{Card, Probe};

use super::board::BoardCollector;
use super::{Collector, Findings};
use crate::clock::Clock;
use crate::config::{BoardConfig, Config};

/// The outcome of a retired board: it writes nothing, and says so.
pub const RETIRED: &str = "retired: writes nothing";

/// Which database the cards were read from, and when, for the file's header.
#[derive(Debug, Clone)]
pub struct ProjectionSource {
    /// The board database as shown in the header (a path).
    pub db: String,
    /// When the cards were read.
    pub generated_at: DateTime<Utc>,
}

impl ProjectionSource {
    pub fn new(db: &Path, generated_at: DateTime<Utc>) -> Self {
        ProjectionSource {
            db: db.display().to_string(),
            generated_at,
        }
    }
}

/// One board as the job found it, for the write side.
#[derive(Debug, Clone)]
pub struct ProjectionInput {
    pub board: BoardConfig,
    pub plan: ProjectionPlan,
}

#[derive(Debug, Clone)]
pub enum ProjectionPlan {
    /// Project these cards (the board's columns in board order) into the board's target.
    Write {
        columns: Vec<String>,
        cards: Vec<Card>,
        source: ProjectionSource,
    },
    /// Write nothing; this is the board's outcome.
    Skip(Probe<String>),
}

pub struct ProjectionJob {
    boards: Vec<BoardConfig>,
    reader: BoardCollector,
    cadence: Duration,
}

impl ProjectionJob {
    /// The job for the boards that have a projection target or are retired generators.
    pub fn new(config: &Config) -> Option<Self> {
        let boards: Vec<BoardConfig> = config
            .boards
            .iter()
            .filter(|b| b.projection.is_some() || b.retired)
            .cloned()
            .collect();
        if boards.is_empty() {
            return None;
        }
        let mut reader_config = config.clone();
        reader_config.boards = boards.clone();
        Some(ProjectionJob {
            boards,
            reader: BoardCollector::new(&reader_config),
            cadence: config.cadence.projections,
        })
    }

    /// Reads every board and says, per board, what to project.
    pub async fn run(&self) -> Vec<ProjectionInput> {
        let read = self.reader.read_all().await;
        let now = Utc::now();
        let mut inputs = Vec::new();
        for board in &self.boards {
            let source = read.sources.iter().find(|s| s.name == board.name);
            let plan = match source.map(|s| &s.cards) {
                _ if board.retired => ProjectionPlan::Skip(Probe::Value(RETIRED.to_string())),
                Some(Probe::Value(_)) => ProjectionPlan::Write {
                    columns: read.columns.clone(),
                    cards: read
                        .cards
                        .iter()
                        .filter(|c| c.board == board.name)
                        .cloned()
                        .collect(),
                    source: ProjectionSource::new(&board.db, now),
                },
                Some(Probe::Error(reason)) => ProjectionPlan::Skip(Probe::error(format!(
                    "not projected: the board could not be read ({reason})"
                ))),
                _ => ProjectionPlan::Skip(Probe::error("not projected: the board was not read")),
            };
            inputs.push(ProjectionInput {
                board: board.clone(),
                plan,
            });
        }
        inputs
    }
}

#[async_trait]
impl Collector for ProjectionJob {
    fn cadence(&self) -> Duration {
        self.cadence
    }

    async fn collect(&self, _clock: &Clock) -> Findings {
        Findings::Projections(self.run().await)
    }
}

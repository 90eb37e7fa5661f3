//! The vault projection job (spec §3.4): every `cadence.projections`, each board with a declared
//! target is read afresh and handed to the projection writer (`write::projection`), which fails
//! closed on any file it did not write. Scheduled like a collector; what it reports is each
//! board's outcome ("written", "unchanged", "retired: writes nothing", or why it refused).
//!
//! A board that cannot be read is not projected at all: an empty projection would erase the
//! vault's copy of a board that still exists.

use std::time::Duration;

use async_trait::async_trait;
use chrono::Utc;
use fleetdash_model::Probe;

use super::board::BoardCollector;
use super::{Collector, SectionData, SectionName};
use crate::config::{BoardConfig, Config};
use crate::redact::RedactionGate;
use crate::write::projection::{self, ProjectionSource};

pub struct ProjectionJob {
    boards: Vec<BoardConfig>,
    reader: BoardCollector,
    gate: RedactionGate,
    cadence: Duration,
}

impl ProjectionJob {
    /// The job for the boards that have a projection target or are retired generators.
    pub fn new(config: &Config, gate: RedactionGate) -> Option<Self> {
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
            gate,
            cadence: config.cadence.projections,
        })
    }

    pub async fn run(&self) -> Vec<(String, Probe<String>)> {
        let read = self.reader.read_all().await;
        let now = Utc::now();
        let mut outcomes = Vec::new();
        for board in &self.boards {
            let source = read.sources.iter().find(|s| s.name == board.name);
            let outcome = match source.map(|s| &s.cards) {
                _ if board.retired => Probe::Value(projection::RETIRED.to_string()),
                Some(Probe::Value(_)) => {
                    let cards: Vec<_> = read
                        .cards
                        .iter()
                        .filter(|c| c.board == board.name)
                        .cloned()
                        .collect();
                    let (board, columns, gate) =
                        (board.clone(), read.columns.clone(), self.gate.clone());
                    let source = ProjectionSource::new(&board.db, now);
                    tokio::task::spawn_blocking(move || {
                        projection::project(&board, &columns, &cards, &source, &gate)
                    })
                    .await
                    .unwrap_or_else(|e| Probe::error(format!("projection writer failed: {e}")))
                }
                Some(Probe::Error(reason)) => Probe::error(format!(
                    "not projected: the board could not be read ({reason})"
                )),
                _ => Probe::error("not projected: the board was not read"),
            };
            outcomes.push((board.name.clone(), outcome));
        }
        outcomes
    }
}

#[async_trait]
impl Collector for ProjectionJob {
    fn section(&self) -> SectionName {
        SectionName::Board
    }

    fn cadence(&self) -> Duration {
        self.cadence
    }

    async fn collect(&self) -> SectionData {
        SectionData::Projections(self.run().await)
    }
}

//! The board collector (C1): every configured Hermes kanban board, read-only, into
//! `tasks.board` — columns in board order, the cards of all boards, one source per board.
//!
//! - [`read`]: opening one database strictly read-only and reading it in one transaction.
//! - [`schema`]: which columns this Hermes version has; a board without the essentials fails
//!   alone, with the file and the column named.
//! - [`events`]: the board's own worker events (crashed, timed_out, stale...) as card
//!   conditions. No stuck detector of our own runs over board cards (spec §3.5).
//! - [`dispatch`]: the host boundary (spec §3.1), `kanban.dispatch_profiles`, fail closed.
//! - [`card`]: one card from its row, its events and the boundary.
//! - [`vfs`]: the SQLite VFS that opens a board's files read-only and only if they exist.
//! - [`cap`]: which cards the snapshot lists in full under the rules' `board` group (applied
//!   by the snapshot merge, which knows the previous listing); every card is counted.
//!
//! Boards are few; they are read concurrently, each in its own blocking task with its own
//! result, so a corrupt, missing or locked board is one red source while the others read fine.
//! The projection half of each source is not this collector's: it stays "unknown" here and the
//! snapshot keeps the projection job's last outcome across board reads.

pub mod cap;
pub mod card;
pub mod dispatch;
pub mod events;
pub mod read;
pub mod schema;
pub mod vfs;

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use fleetdash_model::{Asc, Board, BoardSource, Card, Probe};

use super::{Attempt, Collector, Findings, SectionData};
use crate::clock::Clock;
use crate::config::{BoardConfig, Config};
use crate::net::ProbeFailure;
use cap::Cap;
use dispatch::HostBoundary;
use read::{BoardRead, ReadOptions};

/// The Hermes statuses, in board order (`archived` follows when a board includes it).
pub const COLUMNS: [&str; 8] = [
    "triage",
    "todo",
    "scheduled",
    "ready",
    "running",
    "blocked",
    "review",
    "done",
];
pub const ARCHIVED: &str = "archived";

pub struct BoardCollector {
    boards: Vec<BoardConfig>,
    cadence: Duration,
    busy_timeout: Duration,
    cap: Cap,
}

impl BoardCollector {
    /// A reader of the config's boards. Its collections list every card ([`Cap::NONE`]) until
    /// [`BoardCollector::with_cap`] gives it the rules' cap, as `collect::from_config` does.
    pub fn new(config: &Config) -> Self {
        BoardCollector {
            boards: config.boards.clone(),
            cadence: config.cadence.board,
            busy_timeout: read::BUSY_TIMEOUT,
            cap: Cap::NONE,
        }
    }

    /// The same collector, its collections listed under `cap` in the snapshot.
    pub fn with_cap(mut self, cap: Cap) -> Self {
        self.cap = cap;
        self
    }

    /// The same collector with another busy timeout (tests of a locked board).
    pub fn with_busy_timeout(mut self, busy_timeout: Duration) -> Self {
        self.busy_timeout = busy_timeout;
        self
    }

    /// Reads every board and assembles `tasks.board`.
    pub async fn read_all(&self) -> Board {
        self.read_all_traced().await.0
    }

    /// [`BoardCollector::read_all`], with the reads tried again (Hermes changed the board
    /// under them).
    pub async fn read_all_traced(&self) -> (Board, Vec<Attempt>) {
        let reads = futures::future::join_all(self.boards.iter().map(|b| self.read_one(b))).await;
        let now = Utc::now();
        let mut cards = Vec::new();
        let mut sources = Vec::new();
        let mut attempts = Vec::new();
        for (config, (boundary, read, retried)) in self.boards.iter().zip(reads) {
            attempts.extend(retried.into_iter().map(|(started, took)| Attempt {
                kind: "board",
                name: config.name.clone(),
                what: "board.read",
                variant: None,
                asc: Asc::RETRYABLE_ERROR,
                started,
                took,
            }));
            let (board_cards, source) = assemble(config, boundary, read, now);
            cards.extend(board_cards);
            sources.push(source);
        }
        let include_archived = self.boards.iter().any(|b| b.include_archived);
        let columns = columns(&cards, include_archived);
        sort_cards(&mut cards, &columns);
        let board = Board {
            columns,
            cards,
            sources,
        };
        (board, attempts)
    }

    async fn read_one(&self, config: &BoardConfig) -> (HostBoundary, BoardOutcome, Retried) {
        let db = config.db.clone();
        let dispatch_config = config.dispatch_config.clone();
        let opts = ReadOptions {
            busy_timeout: self.busy_timeout,
            include_archived: config.include_archived,
        };
        tokio::task::spawn_blocking(move || {
            let boundary = dispatch_config
                .as_deref()
                .map_or_else(HostBoundary::unchecked, dispatch::load);
            let mut retried = Vec::new();
            let read = read::read_board_recording(&db, &opts, &mut retried);
            (boundary, read, retried)
        })
        .await
        .unwrap_or_else(|e| {
            let failure =
                ProbeFailure::new(Asc::INTERNAL_ERROR, format!("board reader failed: {e}"));
            (HostBoundary::unchecked(), Err(failure), Vec::new())
        })
    }
}

type BoardOutcome = Result<BoardRead, ProbeFailure>;
/// When each read tried again started, and how long it took.
type Retried = Vec<(std::time::Instant, Duration)>;

/// One board's cards and its source entry.
fn assemble(
    config: &BoardConfig,
    boundary: HostBoundary,
    read: Result<BoardRead, ProbeFailure>,
    now: DateTime<Utc>,
) -> (Vec<Card>, BoardSource) {
    let mut source = BoardSource {
        name: config.name.clone(),
        plane: config.plane.clone(),
        cards: Probe::Unknown,
        projection: Probe::Unknown,
        status: Asc::SUCCESS,
        reason: None,
        columns: Vec::new(),
        attention_left_out: Default::default(),
        checked_at: now,
        stale: false,
    };
    let dispatch_warning = boundary.warning.clone();
    match read {
        Ok(mut read) => {
            let rows = std::mem::take(&mut read.tasks);
            let cards: Vec<Card> = rows
                .into_iter()
                .map(|row| card::build(&config.name, row, &read, &boundary, now))
                .collect();
            source.cards = Probe::Value(u32::try_from(cards.len()).unwrap_or(u32::MAX));
            let warnings: Vec<String> = read.warnings.into_iter().chain(dispatch_warning).collect();
            if !warnings.is_empty() {
                source.status = Asc::SUCCESS_WITH_WARNINGS;
                source.reason = Some(warnings.join("; "));
            }
            (cards, source)
        }
        Err(failure) => {
            source.cards = Probe::Error(failure.reason.clone());
            source.status = failure.asc;
            source.reason = Some(
                std::iter::once(failure.reason)
                    .chain(dispatch_warning)
                    .collect::<Vec<_>>()
                    .join("; "),
            );
            source.stale = true;
            (Vec::new(), source)
        }
    }
}

/// The Hermes columns in board order, then any status the databases hold that Hermes does not
/// name (sorted), so that no card is dropped for an unexpected status.
pub fn columns(cards: &[Card], include_archived: bool) -> Vec<String> {
    let mut columns: Vec<String> = COLUMNS.iter().map(|c| c.to_string()).collect();
    if include_archived {
        columns.push(ARCHIVED.to_string());
    }
    let mut extra: Vec<&str> = cards
        .iter()
        .map(|c| c.status.as_str())
        .filter(|s| !columns.iter().any(|c| c == s))
        .collect();
    extra.sort_unstable();
    extra.dedup();
    columns.extend(extra.into_iter().map(str::to_string));
    columns
}

/// Column order; within a column red first, then higher priority, then older.
fn sort_cards(cards: &mut [Card], columns: &[String]) {
    let column = |c: &Card| columns.iter().position(|x| *x == c.status);
    cards.sort_by(|a, b| {
        column(a)
            .cmp(&column(b))
            .then_with(|| b.band.cmp(&a.band))
            .then_with(|| b.priority.cmp(&a.priority))
            .then_with(|| b.age_s.cmp(&a.age_s))
            .then_with(|| a.board.cmp(&b.board))
            .then_with(|| a.id.cmp(&b.id))
    });
}

#[async_trait]
impl Collector for BoardCollector {
    fn cadence(&self) -> Duration {
        self.cadence
    }

    async fn collect(&self, clock: &Clock) -> Findings {
        self.collect_traced(clock).await.0
    }

    async fn collect_traced(&self, _clock: &Clock) -> (Findings, Vec<Attempt>) {
        let (board, attempts) = self.read_all_traced().await;
        let findings = SectionData::Board {
            read: Probe::Value(board),
            cap: self.cap,
        };
        (findings.into(), attempts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleetdash_model::Band;

    /// The tests' clock: one fixed moment, so that no outcome depends on the day they run.
    fn fixed_now() -> chrono::DateTime<chrono::Utc> {
        "2026-11-30T12:00:00Z".parse().expect("an RFC 3339 instant")
    }

    fn card(status: &str, band: Band, priority: i64, id: &str) -> Card {
        Card {
            board: "b".into(),
            id: id.into(),
            title: String::new(),
            status: status.into(),
            assignee: None,
            priority: Some(priority),
            age_s: 0,
            block_kind: None,
            latest_activity_at: None,
            conditions: Vec::new(),
            band,
            checked_at: fixed_now(),
            stale: false,
        }
    }

    #[test]
    fn unknown_statuses_become_extra_columns_after_the_hermes_ones() {
        let cards = [
            card("zeta", Band::Green, 0, "a"),
            card("ready", Band::Green, 0, "b"),
            card("alpha", Band::Green, 0, "c"),
            card("zeta", Band::Green, 0, "d"),
        ];
        let cols = columns(&cards, false);
        assert_eq!(&cols[..8], COLUMNS.map(String::from));
        assert_eq!(&cols[8..], ["alpha", "zeta"]);
        let cols = columns(&[], true);
        assert_eq!(cols.last().map(String::as_str), Some("archived"));
    }

    #[test]
    fn cards_sort_by_column_then_red_first_then_priority() {
        let mut cards = vec![
            card("done", Band::Green, 9, "a"),
            card("ready", Band::Green, 5, "b"),
            card("ready", Band::Red, 0, "c"),
            card("ready", Band::Green, 7, "d"),
            card("triage", Band::Green, 0, "e"),
        ];
        let cols = columns(&cards, false);
        sort_cards(&mut cards, &cols);
        let ids: Vec<_> = cards.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["e", "c", "d", "b", "a"]);
    }
}

//! Benchmark of the board collector on a large board. It prints figures and asserts no timing.
//!
//! Run at the repository root:
//!
//!     cargo bench -p fleetdash --bench board_read
//!
//! What it measures:
//! 1. Building a 10,000-card Hermes board (the real schema, WAL mode, every status, five events
//!    per card and a worker event on one card in five: 52,000 events) — setup, not judged.
//! 2. `BoardCollector::read_all` over that board (archived included, so all 10,000 cards come
//!    out): mean, fastest and slowest of several runs, after one warm-up.
//! 3. What the board adds to `status.json`: `tasks.board` serialised as the writer does
//!    (pretty JSON), and gzipped as nginx would serve it, in total and per card.
//!
//! 4. Projecting the board into its vault `.kanban` file: the first write, then the unchanged
//!    re-render (the job's steady state), and the file's size.
//!
//! `FLEETDASH_BENCH_QUICK=1` reads three times instead of ten.

#[path = "../../tests/support/kanban.rs"]
mod kanban;

use std::io::Write;
use std::time::{Duration, Instant};

use fleetdash::collect::board::BoardCollector;
use fleetdash::config::Config;
use fleetdash::redact::RedactionGate;
use fleetdash::write::projection::{self, ProjectionSource};
use fleetdash_model::{Board, Probe};

const CARDS: usize = 10_000;

fn main() {
    let quick = std::env::var_os("FLEETDASH_BENCH_QUICK").is_some();
    let runs = if quick { 3 } else { 10 };
    let dir = tempfile::tempdir().expect("temporary directory");
    let db = dir.path().join("kanban.db");

    let started = Instant::now();
    let k = kanban::Kanban::create(&db);
    kanban::populate(&k, CARDS);
    let events: i64 = k
        .conn
        .query_row("SELECT COUNT(*) FROM task_events", [], |r| r.get(0))
        .unwrap();
    println!(
        "board: {CARDS} cards, {events} events, built in {:.2?} ({:.1} MiB + WAL)",
        started.elapsed(),
        std::fs::metadata(&db).map_or(0.0, |m| m.len() as f64 / 1048576.0)
    );

    let text = format!(
        "output_dir = \"out\"\nstate_dir = \"state\"\nrules = \"rules.yaml\"\n\n\
         [[boards]]\nname = \"lab\"\ndb = \"{}\"\ninclude_archived = true\n",
        db.display()
    );
    let config = Config::parse(&dir.path().join("fleetdash.toml"), &text).expect("config");
    let collector = BoardCollector::new(&config);
    let runtime = tokio::runtime::Runtime::new().unwrap();

    let warm = runtime.block_on(collector.read_all());
    assert_eq!(warm.cards.len(), CARDS, "{:?}", warm.sources);
    let mut times = Vec::with_capacity(runs);
    let mut board = warm;
    for _ in 0..runs {
        let t = Instant::now();
        board = runtime.block_on(collector.read_all());
        times.push(t.elapsed());
    }
    let read_mean = times.iter().sum::<Duration>() / runs as u32;
    let mean = read_mean;
    println!(
        "read_all: mean {mean:.2?} over {runs} runs (fastest {:.2?}, slowest {:.2?}), {:.0} cards/s",
        times.iter().min().unwrap(),
        times.iter().max().unwrap(),
        CARDS as f64 / mean.as_secs_f64()
    );
    let with_conditions = board
        .cards
        .iter()
        .filter(|c| !c.conditions.is_empty())
        .count();
    println!("cards with a condition: {with_conditions}");

    let (raw, gz) = status_json_size(&board);
    println!(
        "status.json contribution of tasks.board: {:.1} KiB pretty ({:.0} B/card), {:.1} KiB gzipped ({:.0} B/card)",
        raw as f64 / 1024.0,
        raw as f64 / CARDS as f64,
        gz as f64 / 1024.0,
        gz as f64 / CARDS as f64
    );

    // The projection of the same board: the first render writes the file, every later one
    // finds the content unchanged and writes nothing (the steady state of the 30 min job).
    let mut board_config = config.boards[0].clone();
    let target = dir.path().join("vault/Docs/Kanban/lab.kanban");
    board_config.projection = Some(target.clone());
    let gate = RedactionGate::default();
    let source = ProjectionSource::new(&board_config.db, chrono::Utc::now());
    let t = Instant::now();
    let first = projection::project(&board_config, &board.columns, &board.cards, &source, &gate);
    let first_took = t.elapsed();
    assert_eq!(first, Probe::Value(projection::WRITTEN.to_string()));
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        let again =
            projection::project(&board_config, &board.columns, &board.cards, &source, &gate);
        times.push(t.elapsed());
        assert_eq!(again, Probe::Value(projection::UNCHANGED.to_string()));
    }
    let mean = times.iter().sum::<Duration>() / runs as u32;
    println!(
        "projection: first write {first_took:.2?}, unchanged re-render mean {mean:.2?} over {runs} runs; {:.1} KiB .kanban file",
        std::fs::metadata(&target).map_or(0.0, |m| m.len() as f64 / 1024.0)
    );
    println!(
        "read + projection of {CARDS} cards: {:.2?} (mean read + first write)",
        read_mean + first_took
    );
}

/// Bytes of `tasks.board` as the status writer serialises it (pretty JSON), and gzipped.
fn status_json_size(board: &Board) -> (usize, usize) {
    let json = serde_json::to_vec_pretty(&Probe::Value(board.clone())).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&json).unwrap();
    (json.len(), gz.finish().unwrap().len())
}

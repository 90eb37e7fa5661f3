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
//! 5. The snapshot a whole collect pass writes (`fleetdash collect`'s library call: read every
//!    card, list them under the shipped rules' `board` cap, write status.json, snapshot.html,
//!    the transitions and the history) at 1,000, 10,000 and 100,000 cards, for two boards: the
//!    one above (every status alike, one card in five with a worker event: the cards needing
//!    attention alone pass the cap) and a mature one (nearly all done, four cards needing
//!    attention). Per size: status.json raw and gzipped, and the pass's wall time (the first
//!    pass, then the mean of the next ones, each with the previous snapshot on disk). Issue
//!    13's goal: under 300 KB raw at 10,000 and 100,000 cards, the pass under 1 s at 10,000.
//!
//! `FLEETDASH_BENCH_QUICK=1` reads three times instead of ten.

#[path = "../../tests/support/kanban.rs"]
mod kanban;

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use fleetdash::collect::board::BoardCollector;
use fleetdash::config::Config;
use fleetdash::redact::RedactionGate;
use fleetdash::write::projection::{self, ProjectionSource};
use fleetdash_model::{Board, Probe, Snapshot};

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

    let passes = if quick { 2 } else { 4 };
    for (kind, fill) in [
        (
            "every status alike",
            kanban::populate as fn(&kanban::Kanban, usize),
        ),
        ("mature", kanban::populate_mature),
    ] {
        for cards in [1_000, 10_000, 100_000] {
            snapshot_pass(&runtime, kind, fill, cards, passes);
        }
    }
}

/// One board of `cards` cards filled by `fill`, collected `passes` times by the library's own
/// `collect` under the shipped rules: status.json's size and each pass's wall time.
fn snapshot_pass(
    runtime: &tokio::runtime::Runtime,
    kind: &str,
    fill: fn(&kanban::Kanban, usize),
    cards: usize,
    passes: usize,
) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let db = dir.path().join("kanban.db");
    let started = Instant::now();
    let k = kanban::Kanban::create(&db);
    fill(&k, cards);
    drop(k);
    let built = started.elapsed();
    let rules = Path::new(env!("CARGO_MANIFEST_DIR")).join("../config/rules.yaml");
    std::fs::copy(&rules, dir.path().join("rules.yaml")).expect("rules.yaml copied");
    let config = dir.path().join("fleetdash.toml");
    std::fs::write(
        &config,
        format!(
            "output_dir = \"out\"\nstate_dir = \"state\"\nrules = \"rules.yaml\"\n\n\
             [[boards]]\nname = \"lab\"\ndb = \"{}\"\ninclude_archived = true\n",
            db.display()
        ),
    )
    .expect("config written");
    let mut times = Vec::with_capacity(passes);
    for _ in 0..passes {
        let t = Instant::now();
        let done = runtime.block_on(fleetdash::app::collect(&config, None));
        match done {
            Ok(_) => {}
            Err(fleetdash::app::Failure::Config { errors, .. }) => panic!("config: {errors}"),
            Err(fleetdash::app::Failure::Other(e)) => panic!("collect failed: {e:#}"),
            Err(fleetdash::app::Failure::Exit(code)) => panic!("collect exited {code}"),
        }
        times.push(t.elapsed());
    }
    let json = std::fs::read(dir.path().join("out/status.json")).expect("status.json");
    let snapshot: Snapshot = serde_json::from_slice(&json).expect("status.json parses");
    let board = snapshot.tasks.board.value().expect("the board was read");
    let source = &board.sources[0];
    assert_eq!(source.cards, Probe::Value(cards as u32), "{source:?}");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&json).unwrap();
    let gz = gz.finish().unwrap().len();
    let later = &times[1..];
    println!(
        "snapshot, {kind} board of {cards:>6} cards (built in {built:.1?}): status.json {:>6.1} KiB raw, {:>5.1} KiB gzip; \
         {} cards listed, {} left out (of them {} needing attention); collect pass first {:.2?}, then mean {:.2?} (slowest {:.2?})",
        json.len() as f64 / 1024.0,
        gz as f64 / 1024.0,
        board.cards.len(),
        source.left_out(),
        source.attention_left_out.red + source.attention_left_out.amber,
        times[0],
        later.iter().sum::<Duration>() / later.len() as u32,
        later.iter().max().unwrap(),
    );
}

/// Bytes of `tasks.board` as the status writer serialises it (pretty JSON), and gzipped.
fn status_json_size(board: &Board) -> (usize, usize) {
    let json = serde_json::to_vec_pretty(&Probe::Value(board.clone())).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&json).unwrap();
    (json.len(), gz.finish().unwrap().len())
}

//! What fleetdash's reads cost Hermes: Hermes' own code (hermes-agent from the venv
//! `scripts/setup-test-deps` makes, `tests/hermes/write_load.py`) writes its board as fast as
//! it can, and the bench prints its write latency and its errors by kind, alone and with a
//! reader. It prints figures and asserts no timing.
//!
//! Run at the repository root:
//!
//!     cargo bench -p fleetdash --bench hermes_writes
//!
//! Phases, each on a fresh board for the same time:
//! 1. Hermes alone.
//! 2. fleetdash reading back to back (`read_board`, the board collector's whole read, one read
//!    transaction each), far more often than its 5 min cadence: the worst case.
//! 3. For comparison, a plain reader that holds each read transaction for 20 ms: why the
//!    collector keeps its transaction short. Hermes checks its file length after each commit
//!    and raises "torn-extend detected" when its checkpoint was cut short by a reader's
//!    snapshot, so any reader can cause it; how often depends on how long reads last.
//!
//! `FLEETDASH_BENCH_QUICK=1` runs each phase 3 s instead of 20 s.

#[path = "../../tests/support/kanban.rs"]
mod kanban;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use fleetdash::collect::board::read::{self, ReadOptions};
use rusqlite::{Connection, OpenFlags};
use serde_json::Value;

/// How a phase reads while Hermes writes.
#[derive(Clone, Copy, PartialEq)]
enum Reader {
    None,
    Fleetdash,
    /// A plain read-only connection holding each transaction this long.
    Holding(Duration),
}

/// What one phase measured.
struct Figures {
    hermes: Value,
    reads: Vec<Duration>,
    read_errors: BTreeMap<String, u64>,
}

fn main() {
    let quick = std::env::var_os("FLEETDASH_BENCH_QUICK").is_some();
    let seconds = if quick { 3 } else { 20 };
    let python = kanban::hermes_python();
    println!("hermes_writes: {seconds} s per phase, Hermes' create_task + add_comment in a loop");
    for (name, reader) in [
        ("Hermes alone", Reader::None),
        ("fleetdash reading back to back", Reader::Fleetdash),
        (
            "a plain reader holding 20 ms",
            Reader::Holding(Duration::from_millis(20)),
        ),
    ] {
        let f = phase(&python, seconds, reader);
        let h = &f.hermes;
        let writes = h["writes"].as_u64().unwrap_or(0);
        let errors: u64 = h["errors"]
            .as_object()
            .map_or(0, |e| e.values().filter_map(Value::as_u64).sum());
        println!(
            "{name}: {writes} writes ({:.0}/s), latency p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms; \
             {errors} errors {}",
            writes as f64 / seconds as f64,
            h["p50_ms"].as_f64().unwrap_or(f64::NAN),
            h["p99_ms"].as_f64().unwrap_or(f64::NAN),
            h["max_ms"].as_f64().unwrap_or(f64::NAN),
            h["errors"]
        );
        if reader != Reader::None {
            let mut reads = f.reads.clone();
            reads.sort();
            let pct = |p: f64| {
                reads
                    .get(((reads.len() as f64 * p) as usize).min(reads.len().saturating_sub(1)))
                    .copied()
                    .unwrap_or_default()
            };
            println!(
                "  reads: {} ({:.1}/s), each p50 {:.2?}, p99 {:.2?}; read errors {:?}; \
                 Hermes errors per read {:.4}",
                reads.len(),
                reads.len() as f64 / seconds as f64,
                pct(0.5),
                pct(0.99),
                f.read_errors,
                errors as f64 / reads.len().max(1) as f64
            );
        }
    }
}

fn phase(python: &Path, seconds: u64, reader: Reader) -> Figures {
    let dir = tempfile::tempdir().expect("temporary directory");
    let kanban_home = dir.path().join("kanban");
    let mut writer = Command::new(python)
        .arg(kanban::hermes_script("write_load.py"))
        .arg(seconds.to_string())
        .env("HERMES_HOME", dir.path().join("home"))
        .env("HERMES_KANBAN_HOME", &kanban_home)
        .env("HERMES_HOME_MODE", "0755")
        .stdout(Stdio::piped())
        .spawn()
        .expect("start Hermes' writer");
    let mut out = BufReader::new(writer.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "ready", "Hermes' writer did not start");
    let db = kanban_home.join("kanban.db");
    let done = AtomicBool::new(false);
    let (reads, read_errors) = std::thread::scope(|s| {
        let reading = s.spawn(|| read_until(&db, reader, &done));
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
        line = rest;
        done.store(true, Ordering::Relaxed);
        reading.join().unwrap()
    });
    assert!(writer.wait().unwrap().success(), "Hermes' writer failed");
    Figures {
        hermes: serde_json::from_str(&line).expect("the writer's figures"),
        reads,
        read_errors,
    }
}

fn read_until(
    db: &Path,
    reader: Reader,
    done: &AtomicBool,
) -> (Vec<Duration>, BTreeMap<String, u64>) {
    let mut reads = Vec::new();
    let mut errors = BTreeMap::new();
    let opts = ReadOptions {
        include_archived: true,
        ..ReadOptions::default()
    };
    while !done.load(Ordering::Relaxed) {
        let started = Instant::now();
        let outcome = match reader {
            Reader::None => return (reads, errors),
            Reader::Fleetdash => read::read_board(db, &opts).map(drop).map_err(|e| {
                // The reason names the board's path: keep what follows it.
                let why = e.reason.rsplit(".db: ").next().unwrap_or(&e.reason);
                format!("{}: {}", e.asc, why.chars().take(100).collect::<String>())
            }),
            Reader::Holding(hold) => hold_a_read(db, hold).map_err(|e| e.to_string()),
        };
        reads.push(started.elapsed());
        if let Err(e) = outcome {
            *errors.entry(e).or_insert(0) += 1;
        }
    }
    (reads, errors)
}

fn hold_a_read(db: &Path, hold: Duration) -> rusqlite::Result<()> {
    let mut conn = Connection::open_with_flags(
        db,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(Duration::from_secs(2))?;
    let tx = conn.transaction()?;
    let _: i64 = tx.query_row("SELECT COUNT(*) FROM tasks", [], |r| r.get(0))?;
    std::thread::sleep(hold);
    tx.finish()
}

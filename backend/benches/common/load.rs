//! The reporting load of the queue and intake benches, one for both so that the intake's
//! figures (HTTP, tokens, JSON-RPC on top) compare with the queue's alone: [`CLIENTS`]
//! concurrent clients send [`REPORTS`] reports in all (a tenth under `FLEETDASH_BENCH_QUICK`),
//! judged against one goal.

use std::path::Path;
use std::time::Duration;

use super::verdict;

pub const CLIENTS: usize = 50;
pub const REPORTS: usize = 10_000;
/// The goal on a 2-core machine.
pub const GOAL_PER_S: f64 = 2_000.0;
pub const GOAL_P99: Duration = Duration::from_millis(25);

/// Each client's share: [`REPORTS`] in all, or a tenth of them under `FLEETDASH_BENCH_QUICK`.
pub fn reports_per_client() -> usize {
    let quick = std::env::var_os("FLEETDASH_BENCH_QUICK").is_some();
    let total = if quick { REPORTS / 10 } else { REPORTS };
    total / CLIENTS
}

/// The events the queue's file holds: the benches check that every report they timed was stored.
pub fn stored_events(db: &Path) -> usize {
    let c = rusqlite::Connection::open(db).expect("the file opens");
    let events: i64 = c
        .query_row("SELECT count(*) FROM events", [], |r| r.get(0))
        .expect("events counted");
    events as usize
}

/// Prints the load's throughput and latency beside its goals (reports/s, p50, p99, max).
pub fn print_throughput(
    what: &str,
    latencies: &mut [Duration],
    elapsed: Duration,
    goal_per_s: f64,
    goal_p99: Duration,
) {
    latencies.sort();
    let at = |q: f64| latencies[((latencies.len() as f64 * q) as usize).min(latencies.len() - 1)];
    let rate = latencies.len() as f64 / elapsed.as_secs_f64();
    let (p50, p99, max) = (at(0.50), at(0.99), latencies[latencies.len() - 1]);
    println!(
        "{} {what} in {:.2} s: {rate:.0} {what}/s (goal >= {goal_per_s:.0}: {})",
        latencies.len(),
        elapsed.as_secs_f64(),
        verdict(rate >= goal_per_s)
    );
    println!(
        "latency p50 {:.2} ms, p99 {:.2} ms (goal < {} ms: {}), max {:.2} ms",
        p50.as_secs_f64() * 1e3,
        p99.as_secs_f64() * 1e3,
        goal_p99.as_millis(),
        verdict(p99 < goal_p99),
        max.as_secs_f64() * 1e3
    );
}

//! Benchmark of the work queue with durable commits: 10,000 reports from 50 concurrent
//! clients, each answered only after its transaction is on disk (WAL, `synchronous = FULL`,
//! group commit by the one writer thread). It prints reports/s, p50/p99 latency and the peak
//! RSS beside the goal (>= 2,000 reports/s, p99 < 25 ms on a 2-core machine) and asserts no
//! timing; it asserts the work it times (every report applied, every event in the file).
//!
//! Run from a clean clone, at the repository root:
//!
//!     cargo bench -p fleetdash --bench queue
//!
//! Each client is an agent that assigns itself a task, ACKs it owning, names it in a heartbeat
//! and then completes it (or reports a blocker), over and over: every report kind but yielding,
//! in the proportions of a busy fleet. The file lives under the target folder (a real disk,
//! not a tmpfs) so the fsyncs are real. `FLEETDASH_BENCH_QUICK=1` sends 1,000 reports.

// Helpers some benches do not use.
#[allow(dead_code)]
mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use common::load::{
    CLIENTS, GOAL_P99, GOAL_PER_S, print_throughput, reports_per_client, stored_events,
};
use fleetdash::queue::{
    Ack, Assignment, MAX_BATCH, QUEUE_DEPTH, QueueRules, Report, ReportKind, Reporter, WireState,
    WorkQueue,
};

fn main() {
    let per_client = reports_per_client();
    println!("== fleetdash work queue bench ==");
    println!(
        "{CLIENTS} clients x {per_client} reports, durable commits (WAL, synchronous=FULL), \
         group commit of up to {MAX_BATCH} (channel depth {QUEUE_DEPTH})"
    );
    let shipped = common::shipped_rules();
    let rules = QueueRules::of(&shipped);
    // As `fleetdash run` opens it: each committed report's stamps noted on the run's clock.
    let clock = fleetdash::clock::Clock::system(shipped.clock.settings());
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("a folder under target/");
    let db = dir.path().join("tasks.db");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let (elapsed, mut latencies) = rt.block_on(async {
        let q = Arc::new(
            WorkQueue::open(&db, rules)
                .await
                .expect("the queue opens")
                .with_clock(clock),
        );
        let start = Instant::now();
        let clients: Vec<_> = (0..CLIENTS)
            .map(|c| {
                let q = q.clone();
                tokio::spawn(async move { client(&q, c, per_client).await })
            })
            .collect();
        let mut latencies = Vec::with_capacity(per_client * CLIENTS);
        for client in clients {
            latencies.extend(client.await.expect("a client finished"));
        }
        let elapsed = start.elapsed();
        let q = Arc::into_inner(q).expect("every client is done");
        q.close().await.expect("the queue closes");
        (elapsed, latencies)
    });
    assert_eq!(
        stored_events(&db),
        per_client * CLIENTS,
        "every report is stored"
    );

    print_throughput("reports", &mut latencies, elapsed, GOAL_PER_S, GOAL_P99);
    let size = std::fs::metadata(&db).map(|m| m.len()).unwrap_or(0);
    println!(
        "file {:.1} MB; peak RSS {:.1} MB (VmHWM)",
        size as f64 / 1e6,
        common::mb(common::vm_hwm_kib("self").unwrap_or_else(common::max_rss_kib))
    );
}

/// One agent's reports, each timed from send to answer.
async fn client(q: &WorkQueue, c: usize, reports: usize) -> Vec<Duration> {
    let name = format!("agent{c}");
    let mut task = String::new();
    let mut out = Vec::with_capacity(reports);
    for i in 0..reports {
        let kind = match i % 4 {
            0 => ReportKind::Assign(Assignment {
                title: format!("bench task {i} of {name}"),
                owner: Some(name.clone()),
                tagged: vec![],
                deadline: None,
            }),
            1 => ReportKind::Ack {
                task_id: task.clone(),
                ack: Ack::Owning { eta: None },
            },
            2 => ReportKind::Heartbeat {
                last_activity_at: Some(Utc::now()),
                in_flight: vec![task.clone()],
            },
            _ if i % 8 == 3 => ReportKind::Completion {
                task_id: task.clone(),
                state: WireState::Completed,
            },
            _ => ReportKind::Blocker {
                task_id: task.clone(),
                on: "waiting for the LAB disk".into(),
            },
        };
        let report = Report {
            from: Reporter::Agent(name.clone()),
            message_id: format!("{name}-{i}"),
            context_id: Some(format!("ctx-{name}")),
            received_at: Utc::now(),
            kind,
        };
        let sent = Instant::now();
        let applied = q.apply(report).await.expect("the report is applied");
        out.push(sent.elapsed());
        if let Some(t) = applied.task
            && i % 4 == 0
        {
            task = t.id;
        }
    }
    out
}

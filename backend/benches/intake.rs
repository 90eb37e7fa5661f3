//! Benchmark of the report intake end to end on loopback: 10,000 A2A reports (v1.0 JSON-RPC
//! `SendMessage` over HTTP, each agent with its own bearer token) from 50 concurrent clients,
//! each answered only after its report is durable in the work queue (WAL, `synchronous =
//! FULL`). It prints reports/s, p50/p99 latency and the process's peak RSS beside the goal (>=
//! 2,000 reports/s, p99 < 25 ms on a 2-core machine), and asserts the work it times (every
//! answer a result, every report an event in the file), never a time.
//!
//! Run from a clean clone, at the repository root:
//!
//!     cargo bench -p fleetdash --bench intake
//!
//! Each client is an agent that assigns itself a task, ACKs it owning (text form), names it in
//! a heartbeat (data part) and completes it, over and over. The server and the clients share
//! the process and its two cores, as a hub and its tunnels' far ends would not: the figures are
//! a floor. `FLEETDASH_BENCH_QUICK=1` sends 1,000 reports.

// Helpers some benches do not use.
#[allow(dead_code)]
mod common;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::load::{
    CLIENTS, GOAL_P99, GOAL_PER_S, print_throughput, reports_per_client, stored_events,
};
use fleetdash::config::IntakeConfig;
use fleetdash::intake::{IntakeOptions, guard::Tokens};
use fleetdash::queue::{QueueRules, WorkQueue};
use fleetdash::redact::RedactionGate;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

fn main() {
    let per_client = reports_per_client();
    println!("== fleetdash intake bench (loopback HTTP, durable commits) ==");
    println!("{CLIENTS} clients x {per_client} reports, v1.0 SendMessage with a bearer token each");
    let rules = QueueRules::of(&common::shipped_rules());
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("a folder under target/");
    let db = dir.path().join("tasks.db");
    let agents: Vec<String> = (0..CLIENTS).map(|c| format!("agent{c:02}")).collect();
    let tokens: Vec<(String, String)> = agents
        .iter()
        .map(|a| (a.clone(), format!("bench-token-{a}-0123456789abcdef")))
        .collect();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let (elapsed, mut latencies) = rt.block_on(async {
        let queue = Arc::new(WorkQueue::open(&db, rules).await.expect("the queue opens"));
        let options = IntakeOptions {
            tokens: Tokens::new(tokens.clone()).expect("distinct tokens"),
            agents: agents.iter().cloned().collect::<HashSet<_>>(),
            // The rate limit guards a fleet against one noisy agent; the bench is that agent
            // on purpose.
            limits: IntakeConfig {
                rate_per_minute: usize::MAX / 2,
                ..IntakeConfig::default()
            },
            gate: RedactionGate::default(),
            metrics: None,
            actions: None,
            hubs: HashSet::new(),
            snapshot: None,
            state_dir: None,
            queue_rules: rules,
            report: None,
            mcp: None,
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let url = format!("http://{}/", listener.local_addr().expect("its address"));
        let shutdown = CancellationToken::new();
        let server = tokio::spawn(fleetdash::intake::serve(
            listener,
            queue.clone(),
            options,
            shutdown.clone(),
        ));
        let start = Instant::now();
        let clients: Vec<_> = tokens
            .iter()
            .cloned()
            .map(|(agent, token)| {
                let url = url.clone();
                tokio::spawn(async move { client(&url, &agent, &token, per_client).await })
            })
            .collect();
        let mut latencies = Vec::with_capacity(per_client * CLIENTS);
        for c in clients {
            latencies.extend(c.await.expect("a client finished"));
        }
        let elapsed = start.elapsed();
        shutdown.cancel();
        server
            .await
            .expect("the server task")
            .expect("the server stopped cleanly");
        let queue = Arc::into_inner(queue).expect("the server let go of the queue");
        queue.close().await.expect("the queue closes");
        (elapsed, latencies)
    });
    assert_eq!(
        stored_events(&db),
        per_client * CLIENTS,
        "every answered report is stored"
    );
    print_throughput("reports", &mut latencies, elapsed, GOAL_PER_S, GOAL_P99);
    println!(
        "peak RSS {:.1} MB (VmHWM) of the whole process (server and clients)",
        common::mb(common::vm_hwm_kib("self").unwrap_or_else(common::max_rss_kib))
    );
}

/// One agent's reports, each timed from send to parsed answer: assign, ACK owning,
/// heartbeat naming it, completion; again and again.
async fn client(url: &str, agent: &str, token: &str, n: usize) -> Vec<Duration> {
    let http = reqwest::Client::new();
    let mut times = Vec::with_capacity(n);
    let mut task = String::new();
    for i in 0..n {
        let (task_id, part) = match i % 4 {
            0 => (
                None,
                json!({"data": {"report": "assign", "title": format!("job {i} of {agent}"),
                                "owner": agent}}),
            ),
            1 => (Some(task.clone()), json!({"text": "ACK owning ETA 45m"})),
            2 => (
                None,
                json!({"data": {"report": "heartbeat", "in_flight": [task.clone()]}}),
            ),
            _ => (
                Some(task.clone()),
                json!({"data": {"report": "completion", "state": "TASK_STATE_COMPLETED"}}),
            ),
        };
        let mut message = json!({
            "messageId": format!("{agent}-{i}"),
            "role": "ROLE_USER",
            "parts": [part],
        });
        if let Some(id) = task_id {
            message["taskId"] = json!(id);
        }
        let body = json!({"jsonrpc": "2.0", "id": i, "method": "SendMessage",
                          "params": {"message": message}});
        let sent = Instant::now();
        let answer = http
            .post(url)
            .bearer_auth(token)
            .header("A2A-Version", "1.0")
            .header("Content-Type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .expect("the intake answers")
            .bytes()
            .await
            .expect("a whole answer");
        let reply: Value = serde_json::from_slice(&answer).expect("a JSON answer");
        times.push(sent.elapsed());
        assert!(reply.get("error").is_none(), "{agent} #{i}: {reply}");
        if i % 4 == 0 {
            task = reply["result"]["task"]["id"]
                .as_str()
                .unwrap_or_else(|| panic!("an assignment answers its task: {reply}"))
                .to_string();
        }
    }
    times
}

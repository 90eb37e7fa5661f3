//! Benchmark of the hub agent's question `status` (issue 25) on loopback, over A2A and over MCP:
//! what the one voice waits for when the operator asks it how the fleet is, and how big the
//! answer is, at the demo fleet's size and with a 10,000-card board. It prints figures and asserts no timing; it
//! asserts what it times (every answer a Message whose text says the snapshot's verdict).
//!
//! Run from a clean clone, at the repository root:
//!
//!     cargo bench -p fleetdash --bench ask
//!
//! Per case, the intake serves a snapshot written as `fleetdash run` writes it:
//! 1. the demo fleet's size: 11 agents (one in ten down), 3 hosts of 3 services, tunnels and
//!    crons each, built in memory;
//! 2. a 10,000-card Hermes board (mature: nearly all done), collected by the real collector, so
//!    status.json lists the rules' capped share and counts the rest.
//!
//! Then N v1.0 `SendMessage {"text": "status"}` requests with the operator's token, one at a
//! time over a kept-alive connection, and N MCP `tools/call fleet_status` to the intake's `/mcp`
//! (Streamable HTTP, stateless, JSON answers): median, p90 and worst round trip (each question
//! reads and parses status.json: no cache to go stale), and the answer's bytes (the words, and
//! the whole JSON-RPC reply). N = 50 (`FLEETDASH_BENCH_QUICK=1`: 5).

#[allow(dead_code)]
mod common;
#[path = "../../tests/support/kanban.rs"]
mod kanban;

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::fleet::{HOSTS, agent, host};
use common::shipped_rules;
use fleetdash::config::IntakeConfig;
use fleetdash::intake::{IntakeOptions, guard::Tokens};
use fleetdash::queue::{QueueRules, WorkQueue};
use fleetdash::redact::RedactionGate;
use fleetdash_model::{Probe, Snapshot};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const OPERATOR: &str = "bench-operator-token-0123456789";

/// One case's folder: status.json under `out/`, its words for the check.
struct Case {
    name: &'static str,
    dir: tempfile::TempDir,
    status_bytes: usize,
    headline: String,
}

fn demo_fleet() -> Case {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("a folder");
    let now = chrono::Utc::now();
    let mut snap = Snapshot::empty(now, shipped_rules().view());
    snap.stale = false;
    snap.agents = Probe::Value((0..11).map(|i| agent(i, i % 10 != 3, now)).collect());
    snap.systems = Probe::Value((0..HOSTS).map(|h| host(h, h != 1, now)).collect());
    for meta in [&mut snap.sections.agents, &mut snap.sections.systems] {
        meta.configured = true;
        meta.checked_at = Some(now);
    }
    write(dir, "demo fleet (11 agents, 3 hosts)", &snap)
}

fn big_board(cards: usize) -> Case {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("a folder");
    let db = dir.path().join("lab.db");
    let k = kanban::Kanban::create(&db);
    kanban::populate_mature(&k, cards);
    drop(k);
    let rules = Path::new(env!("CARGO_MANIFEST_DIR")).join("../config/rules.yaml");
    std::fs::copy(&rules, dir.path().join("rules.yaml")).expect("rules.yaml copied");
    let config = dir.path().join("fleetdash.toml");
    std::fs::write(
        &config,
        format!(
            "output_dir = \"out\"\nstate_dir = \"state\"\nrules = \"rules.yaml\"\n\n\
             [[boards]]\nname = \"lab\"\nplane = \"LAB\"\ndb = {:?}\n",
            db.display().to_string()
        ),
    )
    .expect("config written");
    let rt = tokio::runtime::Runtime::new().expect("a runtime");
    match rt.block_on(fleetdash::app::collect(&config, None)) {
        Ok(_) => {}
        Err(fleetdash::app::Failure::Config { errors, .. }) => panic!("config: {errors}"),
        Err(fleetdash::app::Failure::Other(e)) => panic!("collect failed: {e:#}"),
        Err(fleetdash::app::Failure::Exit(code)) => panic!("collect exited {code}"),
    }
    let json = std::fs::read(dir.path().join("out/status.json")).expect("status.json");
    let snap: Snapshot = serde_json::from_slice(&json).expect("status.json parses");
    assert_eq!(
        snap.tasks
            .board
            .value()
            .expect("the board was read")
            .sources[0]
            .cards,
        Probe::Value(cards as u32)
    );
    write(dir, "10,000-card board (collected)", &snap)
}

fn write(dir: tempfile::TempDir, name: &'static str, snap: &Snapshot) -> Case {
    let rules = Path::new(env!("CARGO_MANIFEST_DIR")).join("../config/rules.yaml");
    std::fs::copy(&rules, dir.path().join("rules.yaml")).expect("rules.yaml copied");
    let config = dir.path().join("fleetdash.toml");
    if !config.exists() {
        std::fs::write(
            &config,
            "output_dir = \"out\"\nstate_dir = \"state\"\nrules = \"rules.yaml\"\n",
        )
        .expect("config written");
    }
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).expect("out/");
    let bytes = serde_json::to_vec(snap).expect("a snapshot serialises");
    std::fs::write(out.join("status.json"), &bytes).expect("status.json written");
    let glance = fleetdash_model::glance::Glance::new(
        snap,
        chrono::Utc::now(),
        chrono::FixedOffset::east_opt(0).expect("UTC"),
    );
    Case {
        name,
        dir,
        status_bytes: bytes.len(),
        headline: glance.headline,
    }
}

fn sorted(mut v: Vec<Duration>) -> Vec<Duration> {
    v.sort();
    v
}

fn main() {
    let quick = std::env::var_os("FLEETDASH_BENCH_QUICK").is_some();
    let asks = if quick { 5 } else { 50 };
    println!(
        "== fleetdash ask bench: the hub's `status` question (loopback HTTP: A2A v1.0 and MCP) =="
    );
    let cases = [demo_fleet(), big_board(10_000)];
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    println!(
        "{:<34} {:<17} {:>12} | {:>24} | {:>10} {:>10}",
        "snapshot", "question", "status.json", "round trip median/p90/max", "words", "reply"
    );
    for case in &cases {
        let (config, all_rules) =
            fleetdash::config::Config::load(&case.dir.path().join("fleetdash.toml"))
                .expect("the case's config loads");
        let rules = QueueRules::of(&shipped_rules());
        let queue = Arc::new(
            rt.block_on(WorkQueue::open(&case.dir.path().join("tasks.db"), rules))
                .expect("the queue opens"),
        );
        let options = IntakeOptions {
            tokens: Tokens::new(Vec::new())
                .expect("no agents")
                .with_operator(OPERATOR)
                .expect("the operator's token"),
            agents: HashSet::new(),
            limits: IntakeConfig {
                read_rate_per_minute: usize::MAX / 2,
                rate_per_minute: usize::MAX / 2,
                ..IntakeConfig::default()
            },
            gate: RedactionGate::default(),
            metrics: None,
            actions: None,
            hubs: HashSet::new(),
            snapshot: Some(case.dir.path().join("out/status.json")),
            state_dir: None,
            queue_rules: rules,
            report: Some(fleetdash::answers::report::Reports::new(
                &config, &all_rules,
            )),
            mcp: Some(fleetdash::mcp::FleetTools::new(&config, &all_rules)),
        };
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("a loopback port");
        let url = format!("http://{}/", listener.local_addr().expect("an address"));
        let stop = CancellationToken::new();
        rt.spawn(fleetdash::intake::serve(
            listener,
            queue.clone(),
            options,
            stop.clone(),
        ));
        let client = reqwest::Client::new();
        let a2a = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                         "params": {"message": {"messageId": "q", "role": "ROLE_USER",
                                                "parts": [{"text": "status"}]}}});
        let mcp = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                         "params": {"name": "fleet_status", "arguments": {}}});
        for (face, path, body, words) in [
            ("A2A status", "", a2a, "/result/message/parts/0/text"),
            ("MCP fleet_status", "mcp", mcp, "/result/content/0/text"),
        ] {
            let mut times = Vec::new();
            let (mut text_bytes, mut reply_bytes) = (0, 0);
            for _ in 0..=asks {
                let started = Instant::now();
                let reply = rt.block_on(async {
                    client
                        .post(format!("{url}{path}"))
                        .header("Authorization", format!("Bearer {OPERATOR}"))
                        .header("A2A-Version", "1.0")
                        .header("Content-Type", "application/json")
                        .header("Accept", "application/json, text/event-stream")
                        .body(body.to_string())
                        .send()
                        .await
                        .expect("the intake answers")
                        .bytes()
                        .await
                        .expect("a body")
                });
                times.push(started.elapsed());
                let v: Value = serde_json::from_slice(&reply).unwrap_or_else(|e| {
                    panic!("{face}: JSON-RPC: {e}: {}", String::from_utf8_lossy(&reply))
                });
                let text = v
                    .pointer(words)
                    .and_then(Value::as_str)
                    .unwrap_or_else(|| panic!("{face}: an answer: {v}"));
                assert!(
                    text.lines()
                        .next()
                        .is_some_and(|l| l.ends_with(&case.headline)),
                    "{}: {face}: the verdict {:?} first: {text}",
                    case.name,
                    case.headline
                );
                text_bytes = text.len();
                reply_bytes = reply.len();
            }
            // The first was the warm-up (a connection, the first read of the file).
            let t = sorted(times[1..].to_vec());
            let ms = |d: Duration| d.as_secs_f64() * 1000.0;
            println!(
                "{:<34} {:<17} {:>9.1} KB | {:>8.2} {:>7.2} {:>7.2} ms | {:>7.1} KB {:>7.1} KB",
                case.name,
                face,
                case.status_bytes as f64 / 1024.0,
                ms(t[t.len() / 2]),
                ms(t[t.len() * 9 / 10]),
                ms(t[t.len() - 1]),
                text_bytes as f64 / 1024.0,
                reply_bytes as f64 / 1024.0,
            );
        }
        stop.cancel();
    }
    println!("({asks} questions per case after a warm-up, one at a time, kept-alive connection)");
}

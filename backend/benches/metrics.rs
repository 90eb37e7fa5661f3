//! Benchmark of `/metrics`: the exposition's size and what a scrape costs, at the demo fleet's
//! size and at 1,000 agents. It prints figures and asserts no timing; it asserts what it times
//! (every agent's series present), so it cannot pass on empty work.
//!
//! Run from a clean clone, at the repository root:
//!
//!     cargo bench -p fleetdash --bench metrics
//!
//! What it measures, for each fleet (the demo's 11 agents and 3 hosts of 3 services, tunnels
//! and crons and a vault; then 1,000 agents and the same hosts), with the run's live counters
//! fed an agents pass:
//! 1. The exposition's size (bytes, series).
//! 2. Rendering it from a snapshot in memory (the registry built, every series encoded).
//! 3. A whole scrape as `/metrics` does it: status.json read and parsed, then rendered.
//!
//! Median and worst of 50 runs each (`FLEETDASH_BENCH_QUICK=1`: 5).

#[allow(dead_code)]
mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use common::fleet::{HOSTS, PER_KIND, agent, host, start};
use common::shipped_rules;
use fleetdash::collect::{Collection, Findings};
use fleetdash::metrics::names::{HostNames, Names};
use fleetdash::metrics::{Live, Source};
use fleetdash_model::{Probe, Snapshot};

fn fleet(agents: usize, now: DateTime<Utc>) -> (Snapshot, Names) {
    let mut snap = Snapshot::empty(now, shipped_rules().view());
    // One agent in ten down: its band and failure series are as many as a healthy one's.
    snap.agents = Probe::Value((0..agents).map(|i| agent(i, i % 10 != 3, now)).collect());
    snap.systems = Probe::Value((0..HOSTS).map(|h| host(h, h != 1, now)).collect());
    snap.sections.agents.configured = true;
    snap.sections.agents.checked_at = Some(now);
    snap.sections.systems.configured = true;
    snap.sections.systems.checked_at = Some(now);
    let names = Names {
        agents: (0..agents).map(|i| format!("agent-{i:02}")).collect(),
        hosts: (0..HOSTS)
            .map(|h| {
                let list = |p: &str| (0..PER_KIND).map(|i| format!("{p}-{i}")).collect();
                let checks = HostNames {
                    services: list("svc"),
                    tunnels: list("tun"),
                    crons: list("cron"),
                    vault: true,
                };
                (format!("host-{h}"), checks)
            })
            .collect::<BTreeMap<_, _>>(),
        ..Names::default()
    };
    (snap, names)
}

fn stats(mut samples: Vec<Duration>) -> (f64, f64) {
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    (ms(samples[samples.len() / 2]), ms(*samples.last().unwrap()))
}

fn main() {
    let runs = if std::env::var_os("FLEETDASH_BENCH_QUICK").is_some() {
        5
    } else {
        50
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    println!("/metrics: {runs} runs each; median / worst");
    for agents in [11, 1000] {
        let now = start();
        let (snap, names) = fleet(agents, now);
        let dir = tempfile::tempdir().unwrap();
        let status = dir.path().join("status.json");
        let json = serde_json::to_vec(&snap).unwrap();
        std::fs::write(&status, &json).unwrap();
        let live = Live::new(Arc::new(names.clone()));
        let Probe::Value(rows) = &snap.agents else {
            unreachable!()
        };
        live.observe(&Collection {
            findings: Findings::Agents {
                rows: rows.clone(),
                mentions: Vec::new(),
            },
            checked_at: now,
            duration: Duration::from_millis(420),
        });
        live.written(true);
        let source = Arc::new(Source::new(names, status, Some(live.clone())));

        let text = source.render(Some(&snap), now);
        let series = text.lines().filter(|l| !l.starts_with('#')).count();
        for i in (0..agents).step_by(97) {
            assert!(
                text.contains(&format!("fleetdash_agent_up{{agent=\"agent-{i:02}\"}}")),
                "agent-{i:02} missing from the exposition"
            );
        }
        let rendered: Vec<Duration> = (0..runs)
            .map(|_| {
                let t = Instant::now();
                let text = source.render(Some(&snap), now);
                let took = t.elapsed();
                assert!(!text.is_empty());
                took
            })
            .collect();
        let scraped: Vec<Duration> = (0..runs)
            .map(|_| {
                let t = Instant::now();
                let text = runtime.block_on(source.clone().scrape());
                let took = t.elapsed();
                assert!(
                    text.contains("fleetdash_snapshot_readable 1"),
                    "status.json read"
                );
                took
            })
            .collect();
        let (r_med, r_max) = stats(rendered);
        let (s_med, s_max) = stats(scraped);
        println!(
            "{agents:>5} agents, {HOSTS} hosts: {:>8} bytes, {series:>6} series (status.json \
             {} bytes); render {r_med:.2} / {r_max:.2} ms; scrape (read + parse + render) \
             {s_med:.2} / {s_max:.2} ms",
            text.len(),
            json.len()
        );
    }
}

//! Benchmark of the systems collector over many node_exporter hosts, of the bounded 24 h
//! history store, and of the Prometheus text parser. It prints figures beside their targets and
//! asserts no timing; it asserts the data it times, so it cannot pass on empty rows.
//!
//! Run from a clean clone, at the repository root:
//!
//!     cargo bench -p fleetdash --bench systems_pass
//!
//! Takes about half a minute, most of it the 7 days of history writes (each one fsyncs
//! `history.json`, as the writer does).
//!
//! What it measures:
//! 1. One systems pass (`SystemsCollector::probe_all`) over N simulated node_exporter hosts
//!    (`demo::hosts::SimExporter`, three units and two cron records each, served by axum on
//!    loopback in this process), of which 10% accept the connection and never answer; T = 1 s.
//!    N = 50 and 200: wall time / T (target ≤ 1.5: a pass costs one timeout, not one per hung
//!    host), rows red and green (the hung ones red with a timeout reason, the others green),
//!    and the peak memory (VmHWM from /proc/self/status; it includes the simulated exporters,
//!    which run in this process).
//! 2. The history store (`write::history::HistoryStore`), driven as `write::status_json` drives it:
//!    7 days of writes every 2 minutes for 11 agents and 3 hosts of 10 checks each (44 keys).
//!    Time per write (load + sample + record + annotate + save, with a breakdown), the size of
//!    `history.json` at each day's mark (it must not grow after the first 24 h), the bytes the
//!    history fields add to `status.json`, and for comparison a whole `StatusWriter::write_at`.
//! 3. `prom_text::parse` on a real-size scrape: this machine's `prometheus-node-exporter`
//!    (started on a loopback port, scraped once) when it is installed, and always a generated
//!    text of the same size (about 57 KB, 1,100 lines of `node_*` families): µs per scrape.
//!
//! `FLEETDASH_BENCH_QUICK=1` runs one pass over 20 hosts, 2 days of history and shorter parse
//! rounds (a few seconds).

// Helpers some benches do not use.
#[allow(dead_code)]
mod common;

use std::io::Write;
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use common::fleet::{AGENTS, CADENCE_MIN, HOSTS, PER_KIND, WRITES_PER_DAY, agent, host, start};
use common::{mb, memory_now, micros, raise_open_files_limit, shipped_rules, verdict, vm_hwm_kib};
use fleetdash::collect::systems::SystemsCollector;
use fleetdash::collect::systems::cron::Record;
use fleetdash::collect::systems::prom_text;
use fleetdash::collect::tunnels::HostTunnels;
use fleetdash::collect::{SectionData, SectionName, SectionUpdate};
use fleetdash::config::Config;
use fleetdash::demo::hosts::{SimExporter, serve_exporter};
use fleetdash::net::ProbeClient;
use fleetdash::redact::RedactionGate;
use fleetdash::snapshot;
use fleetdash::write::history::{self, Collected, HistoryStore, Samples};
use fleetdash::write::status_json::StatusWriter;
use fleetdash_model::{Asc, Band, CronState, Probe, Snapshot, System};
use tokio_util::sync::CancellationToken;

/// The probe timeout T of every pass.
const TIMEOUT: Duration = Duration::from_secs(1);
/// Host `i` hangs when `i % 10 == 9`: 10% of them.
const HANG_EVERY: usize = 10;
const HOSTS_FULL: [usize; 2] = [50, 200];
const HOSTS_QUICK: [usize; 1] = [20];
/// Passes per host count; the summary reports the median.
const PASSES: usize = 3;
const UNITS: [&str; 3] = ["hermes-gateway", "nginx", "node-exporter"];
/// Cron name, period, grace.
const CRONS: [(&str, &str, &str); 2] =
    [("db-dump", "1d", "2h"), ("kanban-projection", "30m", "10m")];

/// The history case, the demo-sized fleet: each agent, and each host with its services,
/// tunnels, crons and vault.
const KEYS: usize = AGENTS + HOSTS * (1 + 3 * PER_KIND + 1);
/// `history.json` at the same time of day on later days may differ by this much.
const SIZE_TOLERANCE: u64 = 64;

/// A real node_exporter's scrape: the generated text aims at its size.
const NODE_EXPORTER: &str = "/usr/bin/prometheus-node-exporter";
const SCRAPE_TARGET_BYTES: usize = 57_000;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let quick = std::env::var_os("FLEETDASH_BENCH_QUICK").is_some();
    println!("== fleetdash systems_pass bench ==");
    if quick {
        println!("FLEETDASH_BENCH_QUICK is set: one pass over 20 hosts, 2 days of history");
    }
    raise_open_files_limit();
    let work = tempfile::tempdir().expect("a temporary directory");
    println!("at start: {}", memory_now());

    // 1: systems passes.
    let sizes: &[usize] = if quick { &HOSTS_QUICK } else { &HOSTS_FULL };
    let passes = if quick { 1 } else { PASSES };
    let mut systems = Vec::new();
    for &n in sizes {
        systems.push(runtime.block_on(systems_case(work.path(), n, passes)));
        println!("  after it: {}", memory_now());
    }
    let systems_hwm_kib = vm_hwm_kib("self");

    // 2: the history store.
    let days = if quick { 2 } else { 7 };
    let hist = history_case(work.path(), days, if quick { 20 } else { 100 });

    // 3: the parser.
    let real = runtime.block_on(real_scrape(work.path()));
    let generated = synthetic_scrape();
    let round = Duration::from_millis(if quick { 40 } else { 200 });
    let parse_real = real
        .as_ref()
        .map(|text| parse_case("real node_exporter", text, round));
    let parse_generated = parse_case("generated", &generated, round);

    let t = TIMEOUT.as_secs_f64();
    let timeout = humantime::format_duration(TIMEOUT);
    println!();
    println!("== summary ==");
    for s in &systems {
        let ratio = s.wall.as_secs_f64() / t;
        println!(
            "systems pass {} node_exporter hosts ({} hung), T={timeout}: {:.3} s = {ratio:.2}×T (target ≤ 1.5×) {} [median of {}; {} green, {} red with a timeout reason; slowest pass {:.3} s]",
            s.hosts,
            s.hung,
            s.wall.as_secs_f64(),
            verdict(ratio <= 1.5),
            s.passes,
            s.green,
            s.red,
            s.slowest.as_secs_f64(),
        );
    }
    println!(
        "peak memory after the systems passes: {} (VmHWM; includes the simulated exporters served in this process)",
        systems_hwm_kib.map_or("unavailable".into(), |k| format!("{:.1} MB", mb(k)))
    );
    println!(
        "history write (load + sample + record + annotate + save) over {days} days every {CADENCE_MIN} min, {KEYS} keys: mean {:.0} µs, median {:.0} µs, p99 {:.0} µs, max {:.0} µs [{} writes; load {:.0} µs, sample + record {:.0} µs, annotate {:.0} µs, save {:.0} µs, means]",
        hist.mean_us,
        hist.p50_us,
        hist.p99_us,
        hist.max_us,
        hist.writes,
        hist.load_us,
        hist.record_us,
        hist.annotate_us,
        hist.save_us,
    );
    println!(
        "history.json after 1 day: {} B, after {days} days: {} B (target: no growth after 24 h, ±{SIZE_TOLERANCE} B) {}; range after the first day {}..{} B; bound by key count {} B",
        hist.size_day1,
        hist.size_end,
        verdict(hist.size_end.abs_diff(hist.size_day1) <= SIZE_TOLERANCE),
        hist.steady_min,
        hist.steady_max,
        hist.bound,
    );
    println!(
        "status.json with history annotations: {} B vs {} B without: +{} B ({:.1}%); gzipped {} B vs {} B: +{} B",
        hist.status_with,
        hist.status_without,
        hist.status_with - hist.status_without,
        (hist.status_with - hist.status_without) as f64 * 100.0 / hist.status_without as f64,
        hist.gzip_with,
        hist.gzip_without,
        hist.gzip_with as i64 - hist.gzip_without as i64,
    );
    println!(
        "whole StatusWriter::write_at (status.json, snapshot.html, history) at the {days}-day state: mean {:.0} µs over {} writes",
        hist.writer_mean_us, hist.writer_writes,
    );
    match &parse_real {
        Some(p) => p.print_summary("real node_exporter"),
        None => println!("prom_text::parse on a real node_exporter scrape: skipped (see above)"),
    }
    parse_generated.print_summary("generated");
    println!("peak memory at the end: {}", memory_now());
}

// ---------------------------------------------------------------------------------------------
// 1. The systems pass over many node_exporter hosts.

struct SystemsCase {
    hosts: usize,
    hung: usize,
    passes: usize,
    /// The median pass.
    wall: Duration,
    slowest: Duration,
    green: usize,
    red: usize,
}

fn is_hung(i: usize) -> bool {
    i % HANG_EVERY == HANG_EVERY - 1
}

/// A healthy host: every unit active, every cron's last run a success a few minutes ago.
fn sim_host(i: usize) -> SimExporter {
    const GB: u64 = 1_000_000_000;
    let now = Utc::now();
    let crons = CRONS
        .iter()
        .enumerate()
        .map(|(k, (name, _, _))| {
            // Whole seconds, as the exporter's metrics carry.
            let start = DateTime::from_timestamp(now.timestamp() - 300 - 60 * k as i64, 0)
                .expect("a valid time");
            let finish = start + chrono::Duration::seconds(4);
            Record {
                name: name.to_string(),
                last_start: Some(start),
                last_finish: Some(finish),
                last_exit_code: Some(0),
                last_duration_ms: Some(4000),
                last_success: Some(finish),
            }
        })
        .collect();
    SimExporter {
        mem_total_bytes: 16 * GB,
        mem_available_bytes: (4 + (i as u64 % 8)) * GB,
        root_avail_bytes: (100 + i as u64) * GB,
        units: UNITS.iter().map(|u| (u.to_string(), "active")).collect(),
        crons,
    }
}

/// A port that accepts connections and never answers; returns its `/metrics` URL.
async fn serve_hung(shutdown: CancellationToken) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let url = format!("http://{}/metrics", listener.local_addr().expect("address"));
    tokio::spawn(async move {
        // Held open, never read nor written, until the case ends.
        let mut held = Vec::new();
        loop {
            tokio::select! {
                () = shutdown.cancelled() => break,
                accepted = listener.accept() => {
                    if let Ok((stream, _)) = accepted {
                        held.push(stream);
                    }
                }
            }
        }
    });
    url
}

fn systems_config(dir: &Path, urls: &[String]) -> Config {
    let mut text = format!(
        "output_dir = \"out\"\nstate_dir = \"state\"\nrules = \"rules.yaml\"\n\n[probe]\ntimeout = \"{}\"\n",
        humantime::format_duration(TIMEOUT)
    );
    let services = UNITS.map(|u| format!("\"{u}\"")).join(", ");
    for (i, url) in urls.iter().enumerate() {
        text.push_str(&format!(
            "\n[[hosts]]\nname = \"host-{i:03}\"\nsource = \"node_exporter\"\nurl = \"{url}\"\nservices = [{services}]\n"
        ));
        for (name, period, grace) in CRONS {
            text.push_str(&format!(
                "\n[[hosts.crons]]\nname = \"{name}\"\nperiod = \"{period}\"\ngrace = \"{grace}\"\n"
            ));
        }
    }
    let path = dir.join(format!("systems-{}.toml", urls.len()));
    std::fs::write(&path, &text).expect("config file");
    Config::parse(&path, &text).unwrap_or_else(|e| panic!("{e}"))
}

async fn systems_case(dir: &Path, hosts: usize, passes: usize) -> SystemsCase {
    let shutdown = CancellationToken::new();
    let mut urls = Vec::with_capacity(hosts);
    for i in 0..hosts {
        urls.push(if is_hung(i) {
            serve_hung(shutdown.clone()).await
        } else {
            serve_exporter(sim_host(i), shutdown.clone())
                .await
                .expect("a simulated exporter")
        });
    }
    let hung = (0..hosts).filter(|&i| is_hung(i)).count();
    let config = systems_config(dir, &urls);
    assert_eq!(config.hosts.len(), hosts);
    println!("systems: {hosts} node_exporter hosts on loopback, {hung} of them hung");

    let mut walls = Vec::new();
    let (mut green, mut red) = (0, 0);
    let clock = fleetdash::clock::Clock::system(shipped_rules().clock.settings());
    for pass in 1..=passes {
        // A collector per pass, as a fresh `fleetdash collect` run builds it.
        let collector = SystemsCollector::new(&config);
        let started = Instant::now();
        let rows = collector.probe_all(&clock).await;
        let wall = started.elapsed();
        (green, red) = check_rows(&rows);
        println!(
            "  pass {pass}/{passes}: {:.3} s = {:.2}×T; {} rows, {green} green, {red} red",
            wall.as_secs_f64(),
            wall.as_secs_f64() / TIMEOUT.as_secs_f64(),
            rows.len(),
        );
        walls.push(wall);
    }
    shutdown.cancel();
    walls.sort();
    SystemsCase {
        hosts,
        hung,
        passes,
        wall: walls[walls.len() / 2],
        slowest: *walls.last().expect("a pass"),
        green,
        red,
    }
}

/// The hung hosts are red, timed out, with the timeout named; every other one is green with
/// its RAM, disk, units and crons read. Returns (green, red).
fn check_rows(rows: &[System]) -> (usize, usize) {
    let (mut green, mut red) = (0, 0);
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(row.host, format!("host-{i:03}"), "rows in config order");
        if is_hung(i) {
            let reason = row.reason.as_deref().unwrap_or_default();
            assert!(
                row.band() == Band::Red
                    && row.status == Asc::TIMEOUT
                    && reason.contains("node_exporter: no answer within 1s"),
                "hung {}: {:?} {:?} {reason:?}",
                row.host,
                row.band(),
                row.status
            );
            red += 1;
        } else {
            assert!(
                row.band() == Band::Green && row.reason.is_none(),
                "{}: {:?} {:?}",
                row.host,
                row.band(),
                row.reason
            );
            assert_eq!(row.ram_total_gb, Probe::Value(16.0), "{}", row.host);
            assert!(row.disk_free_gb.value().is_some(), "{}", row.host);
            assert_eq!(row.services.len(), UNITS.len(), "{}", row.host);
            assert!(row.services.iter().all(|s| s.ok == Probe::Value(true)));
            assert_eq!(row.crons.len(), CRONS.len(), "{}", row.host);
            assert!(row.crons.iter().all(|c| c.state == CronState::Up));
            green += 1;
        }
    }
    (green, red)
}

// ---------------------------------------------------------------------------------------------
// 2. The history store.

struct HistoryCase {
    writes: usize,
    mean_us: f64,
    p50_us: f64,
    p99_us: f64,
    max_us: f64,
    load_us: f64,
    record_us: f64,
    annotate_us: f64,
    save_us: f64,
    size_day1: u64,
    size_end: u64,
    steady_min: u64,
    steady_max: u64,
    bound: usize,
    status_with: usize,
    status_without: usize,
    gzip_with: usize,
    gzip_without: usize,
    writer_mean_us: f64,
    writer_writes: usize,
}

/// One write's updates: agents (agent 0 down every 7th write, so buckets hold both counts),
/// host probes and tunnel probes (the tunnels in their own section, as the tunnels collector
/// sends them), all collected at `now`.
fn updates(step: i64, now: DateTime<Utc>) -> Vec<SectionUpdate> {
    let update = |data| SectionUpdate {
        data,
        checked_at: now,
        duration: Duration::from_millis(20),
    };
    let agents = (0..AGENTS)
        .map(|i| agent(i, i != 0 || step % 7 != 0, now))
        .collect();
    let mut hosts: Vec<System> = (0..HOSTS).map(|h| host(h, true, now)).collect();
    let tunnels = hosts
        .iter_mut()
        .map(|row| HostTunnels {
            host: row.host.clone(),
            source: row.source.clone(),
            tunnels: std::mem::take(&mut row.tunnels),
        })
        .collect();
    vec![
        update(SectionData::Agents(agents)),
        update(SectionData::Systems(hosts)),
        update(SectionData::Tunnels(tunnels)),
    ]
}

const CONFIGURED: [SectionName; 2] = [SectionName::Agents, SectionName::Systems];

/// `status.json` as the writer serialises it: through the redaction gate, pretty, a newline.
fn status_json_bytes(snap: &Snapshot) -> Vec<u8> {
    let json = RedactionGate::default().to_json(snap).expect("serialise");
    let mut bytes = serde_json::to_vec_pretty(&json).expect("serialise");
    bytes.push(b'\n');
    bytes
}

fn gzip_len(bytes: &[u8]) -> usize {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(bytes).expect("gzip");
    gz.finish().expect("gzip").len()
}

fn without_history(snap: &Snapshot) -> Snapshot {
    let mut s = snap.clone();
    if let Probe::Value(rows) = &mut s.agents {
        for a in rows {
            a.history = None;
        }
    }
    if let Probe::Value(hosts) = &mut s.systems {
        for h in hosts {
            h.history = None;
            for c in h.services.iter_mut().chain(h.tunnels.iter_mut()) {
                c.uptime_24h_pct = None;
            }
            for c in &mut h.crons {
                c.uptime_24h_pct = None;
            }
        }
    }
    s
}

/// `days` of writes every 2 minutes through the calls `StatusWriter::write_at` makes, the
/// history part timed; then `writer_writes` whole writes for comparison.
fn history_case(dir: &Path, days: i64, writer_writes: usize) -> HistoryCase {
    let state = dir.join("history-state");
    std::fs::create_dir_all(&state).expect("state dir");
    let file = state.join(history::FILE_NAME);
    // Parsed once, outside the timing.
    let rules = shipped_rules().view();
    // Slot-aligned, like the writer's own tests.
    let start = start();
    let steps = days * WRITES_PER_DAY;
    println!(
        "history: {days} days of writes every {CADENCE_MIN} min ({} writes), {AGENTS} agents and {HOSTS} hosts × {} checks = {KEYS} keys, state in {}",
        steps + 1,
        3 * PER_KIND + 1,
        state.display()
    );
    let mut snap = Snapshot::empty(start, rules.clone());
    let (mut load, mut record, mut annotate, mut save) = (
        Duration::ZERO,
        Duration::ZERO,
        Duration::ZERO,
        Duration::ZERO,
    );
    let mut per_write = Vec::with_capacity(steps as usize + 1);
    let mut day_sizes = Vec::new();
    let (mut steady_min, mut steady_max) = (u64::MAX, 0);
    for step in 0..=steps {
        let now = start + chrono::Duration::minutes(CADENCE_MIN * step);
        // Outside the timing: what the writer does before it touches the history.
        let updates = updates(step, now);
        let collected = Collected::of(&updates);
        for u in updates {
            snapshot::apply(&mut snap, u);
        }
        snapshot::finalize(
            &mut snap,
            &CONFIGURED,
            rules.clone(),
            &fleetdash::clock::Clocked::wall_only(now),
        );

        let t0 = Instant::now();
        let mut store = HistoryStore::load(&state, RedactionGate::default(), now);
        let t1 = Instant::now();
        let samples = Samples::of(&collected, &snap);
        assert_eq!(samples.len(), KEYS, "every key sampled at step {step}");
        store.record(samples, now);
        let t2 = Instant::now();
        store.annotate(&mut snap, now);
        let t3 = Instant::now();
        store.save().expect("save history.json");
        let t4 = Instant::now();
        load += t1 - t0;
        record += t2 - t1;
        annotate += t3 - t2;
        save += t4 - t3;
        per_write.push(t4 - t0);

        let size = std::fs::metadata(&file).expect("history.json").len();
        if step >= WRITES_PER_DAY {
            steady_min = steady_min.min(size);
            steady_max = steady_max.max(size);
        }
        if step > 0 && step % WRITES_PER_DAY == 0 {
            println!(
                "  after day {}: history.json {size} B, {} keys; {:.0} µs per write so far",
                step / WRITES_PER_DAY,
                store.keys().count(),
                micros(per_write.iter().sum::<Duration>()) / per_write.len() as f64
            );
            day_sizes.push(size);
        }
    }
    let writes = per_write.len();
    let size_day1 = day_sizes[0];
    let size_end = *day_sizes.last().expect("a day");
    for (d, size) in day_sizes.iter().enumerate() {
        assert!(
            size.abs_diff(size_day1) <= SIZE_TOLERANCE,
            "history.json grows with run time: {size_day1} B after a day, {size} B after {}",
            d + 1
        );
    }
    // The bound of write/history.rs's own test: per key its name and framing, then 96 buckets of
    // `[<10 digits>,<up>,<down>],`.
    let store = HistoryStore::load(
        &state,
        RedactionGate::default(),
        start + chrono::Duration::minutes(CADENCE_MIN * steps),
    );
    assert_eq!(store.keys().count(), KEYS);
    let names: usize = store.keys().map(|k| k.len() + 4).sum();
    // Per key: its name, `"first"` and `"last"` (Unix seconds) and a day of buckets.
    let per_key =
        32 + r#""first":1234567890,"#.len() + history::BUCKETS * "[1234567890,8,8],".len();
    let bound = 64 + names + KEYS * per_key;
    assert!(
        steady_max as usize <= bound,
        "history.json {steady_max} B > bound {bound} B"
    );

    // What the annotations add to status.json: every agent and host carries its strip; every
    // host check its uptime.
    let Probe::Value(agents) = &snap.agents else {
        panic!("agents: {:?}", snap.agents)
    };
    assert!(
        agents
            .iter()
            .all(|a| a.history.as_ref().is_some_and(|h| h.samples > 0))
    );
    assert!(
        agents[0]
            .history
            .as_ref()
            .expect("history")
            .strip
            .contains('p')
    );
    let with = status_json_bytes(&snap);
    let without = status_json_bytes(&without_history(&snap));

    per_write.sort();
    let pct = |p: f64| micros(per_write[((writes - 1) as f64 * p).round() as usize]);
    let n = writes as f64;
    let case = HistoryCase {
        writes,
        mean_us: micros(load + record + annotate + save) / n,
        p50_us: pct(0.5),
        p99_us: pct(0.99),
        max_us: micros(*per_write.last().expect("a write")),
        load_us: micros(load) / n,
        record_us: micros(record) / n,
        annotate_us: micros(annotate) / n,
        save_us: micros(save) / n,
        size_day1,
        size_end,
        steady_min,
        steady_max,
        bound,
        status_with: with.len(),
        status_without: without.len(),
        gzip_with: gzip_len(&with),
        gzip_without: gzip_len(&without),
        writer_mean_us: 0.0,
        writer_writes,
    };

    // For comparison: the whole write (status.json and snapshot.html too), on this history.
    let out = dir.join("writer-out");
    let writer_state = dir.join("writer-state");
    std::fs::create_dir_all(&writer_state).expect("state dir");
    std::fs::copy(&file, writer_state.join(history::FILE_NAME)).expect("copy history.json");
    let writer = StatusWriter::new(
        &out,
        &writer_state,
        RedactionGate::default(),
        fleetdash::write::transitions::Bounds::of(&shipped_rules().state),
    )
    .expect("writer");
    let mut total = Duration::ZERO;
    for k in 1..=writer_writes as i64 {
        let now = start + chrono::Duration::minutes(CADENCE_MIN * (steps + k));
        let updates = updates(steps + k, now);
        let started = Instant::now();
        writer
            .write_at(updates, &CONFIGURED, rules.clone(), now)
            .expect("a status write");
        total += started.elapsed();
    }
    let written = std::fs::metadata(writer.path()).expect("status.json").len();
    println!("  whole writes: {writer_writes}, status.json {written} B on disk after the last one");
    HistoryCase {
        writer_mean_us: micros(total) / writer_writes as f64,
        ..case
    }
}

// ---------------------------------------------------------------------------------------------
// 3. The node_exporter text parser.

struct ParseCase {
    bytes: usize,
    lines: usize,
    samples: usize,
    /// The median round's mean.
    median_us: f64,
    best_us: f64,
    calls: usize,
}

impl ParseCase {
    fn print_summary(&self, label: &str) {
        println!(
            "prom_text::parse, {label} scrape ({} B, {} lines, {} samples): {:.1} µs per scrape (median of 5 rounds; best round {:.1} µs; {:.0} ns per line, {:.0} MB/s) [{} calls]",
            self.bytes,
            self.lines,
            self.samples,
            self.median_us,
            self.best_us,
            self.median_us * 1000.0 / self.lines as f64,
            self.bytes as f64 / self.median_us,
            self.calls,
        );
    }
}

/// Times `parse` in five rounds of about `round` each, after a warm-up that sizes them.
fn parse_case(label: &str, text: &str, round: Duration) -> ParseCase {
    const ROUNDS: usize = 5;
    let expo = prom_text::parse(text);
    assert_eq!(
        expo.unparseable,
        0,
        "{label}: {:?}",
        expo.unparseable_note()
    );
    assert!(expo.has("node_memory_MemTotal_bytes"), "{label}");
    assert!(
        expo.samples.len() > 400,
        "{label}: {} samples",
        expo.samples.len()
    );
    let warm = Instant::now();
    let mut warm_calls = 0;
    while warm.elapsed() < round / 4 || warm_calls < 3 {
        std::hint::black_box(prom_text::parse(std::hint::black_box(text)));
        warm_calls += 1;
    }
    let per_call = warm.elapsed() / warm_calls;
    let calls = ((round.as_secs_f64() / per_call.as_secs_f64()) as usize).max(3);
    let mut rounds = Vec::new();
    for _ in 0..ROUNDS {
        let started = Instant::now();
        for _ in 0..calls {
            std::hint::black_box(prom_text::parse(std::hint::black_box(text)));
        }
        rounds.push(micros(started.elapsed()) / calls as f64);
    }
    let mut sorted = rounds.clone();
    sorted.sort_by(f64::total_cmp);
    let case = ParseCase {
        bytes: text.len(),
        lines: text.lines().count(),
        samples: expo.samples.len(),
        median_us: sorted[ROUNDS / 2],
        best_us: sorted[0],
        calls: calls * ROUNDS,
    };
    println!(
        "parse {label}: {} B, {} lines, {} samples; rounds {:?} µs",
        case.bytes,
        case.lines,
        case.samples,
        rounds
            .iter()
            .map(|r| (r * 10.0).round() / 10.0)
            .collect::<Vec<_>>()
    );
    case
}

struct Exporter(Child);

impl Drop for Exporter {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One scrape of this machine's node_exporter on a free loopback port, when it is installed.
async fn real_scrape(dir: &Path) -> Option<String> {
    if !Path::new(NODE_EXPORTER).exists() {
        println!("parse: {NODE_EXPORTER} is not installed, only the generated scrape is timed");
        return None;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let textfiles = dir.join("textfiles");
    std::fs::create_dir_all(&textfiles).expect("textfile dir");
    // Its systemd collector off: without systemd it only fails and logs every scrape.
    let child = Command::new(NODE_EXPORTER)
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .arg(format!(
            "--collector.textfile.directory={}",
            textfiles.display()
        ))
        .arg("--no-collector.systemd")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let _exporter = match child {
        Ok(c) => Exporter(c),
        Err(e) => {
            println!(
                "parse: cannot start {NODE_EXPORTER} ({e}); only the generated scrape is timed"
            );
            return None;
        }
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if Instant::now() > deadline {
            println!(
                "parse: {NODE_EXPORTER} did not listen within 10 s; only the generated scrape is timed"
            );
            return None;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let url = format!("http://127.0.0.1:{port}/metrics")
        .parse()
        .expect("a url");
    let reply = ProbeClient::new(Duration::from_secs(10), 16 << 20)
        .get(url, None)
        .await;
    match reply {
        Ok(r) if r.status == 200 => {
            let text = String::from_utf8_lossy(&r.body).into_owned();
            println!(
                "parse: scraped {NODE_EXPORTER} once: {} B, {} lines, in {:.1} ms",
                text.len(),
                text.lines().count(),
                r.elapsed.as_secs_f64() * 1000.0
            );
            Some(text)
        }
        Ok(r) => {
            println!(
                "parse: {NODE_EXPORTER} answered HTTP {}; only the generated scrape is timed",
                r.status
            );
            None
        }
        Err(e) => {
            println!(
                "parse: {NODE_EXPORTER}: {}; only the generated scrape is timed",
                e.reason
            );
            None
        }
    }
}

/// A text shaped like node_exporter's default scrape: HELP and TYPE per family, labelled
/// `node_*` families (CPU modes, filesystems, network devices, disks, collectors), the
/// escapes and special values of the format, grown to about [`SCRAPE_TARGET_BYTES`].
fn synthetic_scrape() -> String {
    const MEMINFO: &str = "Active Active_anon Active_file AnonHugePages AnonPages Bounce Buffers \
        Cached CommitLimit Committed_AS DirectMap1G DirectMap2M DirectMap4k Dirty \
        HardwareCorrupted HugePages_Free HugePages_Rsvd HugePages_Surp HugePages_Total \
        Hugepagesize Inactive Inactive_anon Inactive_file KernelStack Mapped MemAvailable MemFree \
        MemTotal Mlocked NFS_Unstable PageTables Percpu SReclaimable SUnreclaim Shmem \
        ShmemHugePages ShmemPmdMapped Slab SwapCached SwapFree SwapTotal Unevictable \
        VmallocChunk VmallocTotal VmallocUsed Writeback WritebackTmp";
    const FILESYSTEM: &str =
        "avail_bytes device_error files files_free free_bytes readonly size_bytes";
    const NETWORK: &str = "receive_bytes_total receive_compressed_total receive_drop_total \
        receive_errs_total receive_fifo_total receive_frame_total receive_multicast_total \
        receive_packets_total transmit_bytes_total transmit_carrier_total transmit_colls_total \
        transmit_compressed_total transmit_drop_total transmit_errs_total transmit_fifo_total \
        transmit_packets_total up mtu_bytes speed_bytes carrier";
    const DISK: &str = "discard_time_seconds_total discarded_sectors_total \
        discards_completed_total discards_merged_total io_now io_time_seconds_total \
        io_time_weighted_seconds_total read_bytes_total read_time_seconds_total \
        reads_completed_total reads_merged_total write_time_seconds_total \
        writes_completed_total writes_merged_total written_bytes_total flush_requests_total";
    const COLLECTORS: &str = "arp bcache bonding btrfs conntrack cpu cpufreq diskstats dmi edac \
        entropy fibrechannel filefd filesystem hwmon infiniband ipvs loadavg mdadm meminfo \
        netclass netdev netstat nfs nfsd nvme os powersupplyclass pressure rapl schedstat \
        selinux sockstat softnet stat tapestats textfile thermal_zone time timex udp_queues \
        uname vmstat xfs zfs";
    const MODES: &str = "idle iowait irq nice softirq steal system user";
    const MOUNTS: [(&str, &str, &str); 6] = [
        ("/dev/vda1", "ext4", "/"),
        ("/dev/vda15", "vfat", "/boot/efi"),
        ("tmpfs", "tmpfs", "/run"),
        ("tmpfs", "tmpfs", "/run/lock"),
        ("tmpfs", "tmpfs", "/run/user/1000"),
        ("/dev/vdb", "xfs", "/srv/data"),
    ];
    fn family(out: &mut String, name: &str, kind: &str, samples: &[(String, String)]) {
        out.push_str(&format!(
            "# HELP {name} {} of the simulated host.\n# TYPE {name} {kind}\n",
            name.replace('_', " ")
        ));
        for (labels, value) in samples {
            out.push_str(&format!("{name}{labels} {value}\n"));
        }
    }
    let one = |v: f64| vec![(String::new(), format!("{v:e}"))];
    let mut out = String::new();
    let cpu: Vec<_> = (0..8)
        .flat_map(|c| {
            MODES.split_whitespace().enumerate().map(move |(m, mode)| {
                let value = 123456.78 * (c + 1) as f64 / (m + 1) as f64;
                (format!(r#"{{cpu="{c}",mode="{mode}"}}"#), value.to_string())
            })
        })
        .collect();
    family(&mut out, "node_cpu_seconds_total", "counter", &cpu);
    for field in MEMINFO.split_whitespace() {
        let value = 16.0e9 * field.len() as f64 / 20.0;
        let name = format!("node_memory_{field}_bytes");
        family(&mut out, &name, "gauge", &one(value));
    }
    for metric in FILESYSTEM.split_whitespace() {
        let samples: Vec<_> = MOUNTS
            .iter()
            .enumerate()
            .map(|(i, (dev, fs, mp))| {
                let labels = format!(r#"{{device="{dev}",fstype="{fs}",mountpoint="{mp}"}}"#);
                (labels, (1.5e9 * (i + 1) as f64).to_string())
            })
            .collect();
        let name = format!("node_filesystem_{metric}");
        family(&mut out, &name, "gauge", &samples);
    }
    let labelled = |devices: &[&str], base: f64| -> Vec<(String, String)> {
        devices
            .iter()
            .enumerate()
            .map(|(i, d)| {
                let value = base * (i + 1) as f64;
                (format!(r#"{{device="{d}"}}"#), value.to_string())
            })
            .collect()
    };
    for metric in NETWORK.split_whitespace() {
        let samples = labelled(&["eth0", "lo", "docker0", "wg0"], 987654321.0);
        let name = format!("node_network_{metric}");
        family(&mut out, &name, "counter", &samples);
    }
    for metric in DISK.split_whitespace() {
        let samples = labelled(&["vda", "vdb", "sr0"], 4242.5);
        family(
            &mut out,
            &format!("node_disk_{metric}"),
            "counter",
            &samples,
        );
    }
    for (metric, value) in [("duration_seconds", "0.000123"), ("success", "1")] {
        let samples: Vec<_> = COLLECTORS
            .split_whitespace()
            .map(|c| (format!(r#"{{collector="{c}"}}"#), value.to_string()))
            .collect();
        let name = format!("node_scrape_collector_{metric}");
        family(&mut out, &name, "gauge", &samples);
    }
    // Escaped quotes in a label value, and the format's special values.
    let uname = r##"{machine="x86_64",nodename="lab",release="6.1.0-18-amd64",sysname="Linux",version="#1 SMP Debian 6.1.76-1 \"bookworm\""}"##;
    let uname = [(uname.to_string(), "1".to_string())];
    family(&mut out, "node_uname_info", "gauge", &uname);
    let temps = [
        (
            r#"{chip="coretemp_0",sensor="temp1"}"#.to_string(),
            "+Inf".to_string(),
        ),
        (
            r#"{chip="coretemp_0",sensor="temp2"}"#.to_string(),
            "NaN".to_string(),
        ),
    ];
    family(&mut out, "node_hwmon_temp_max_celsius", "gauge", &temps);
    // Then netstat-style unlabelled counters until the text has the real size.
    let mut k = 0;
    while out.len() < SCRAPE_TARGET_BYTES {
        let name = format!("node_netstat_TcpExt_Counter{k:03}");
        family(&mut out, &name, "untyped", &one(1.0e6 + k as f64));
        k += 1;
    }
    out
}

// ---------------------------------------------------------------------------------------------
// libc and /proc.

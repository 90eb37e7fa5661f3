//! Benchmark of the agents collector and the audit-log tail reader. It prints figures beside
//! their targets and asserts no timing.
//!
//! Run from a clean clone, at the repository root:
//!
//!     cargo bench -p fleetdash --bench agents_pass
//!
//! Cargo builds the `fleetdash` binary (release profile) before any bench of its package, and
//! hands its path to this file as `CARGO_BIN_EXE_fleetdash`: the simulated fleet runs from it as
//! a child process (`fleetdash sim-fleet`), so the peak memory measured here is the collector's
//! alone. Takes about two to three minutes, most of it the concurrency-1 pass, and writes a
//! 1 GiB file to the temporary directory (skipped, with a note, below 3 GiB free).
//!
//! What it measures:
//! 1. One agents pass over 1,000 simulated agents of which 10% never answer, at concurrency 256,
//!    run in-process through the library (`Config::load`, `collect::from_config`,
//!    `collect::run_once`): wall time, wall time / T (target ≤ 1.5), up/down, rows per second.
//! 2. The same pass at concurrency 1, for comparison (about 100 × T for the hung agents alone).
//!    Both passes use T = 1 s so that the bench stays short; the ratio to T is what matters.
//! 3. Peak memory of this process after the passes: target ≤ 30 MB (issue 35; it was 50). Both
//!    getrusage `ru_maxrss` and /proc's `VmHWM` are printed, and VmHWM is the one judged: Linux
//!    carries the parent's high-water mark into `ru_maxrss` across exec, so under `cargo bench`
//!    it reports cargo's. The bench limits glibc's malloc arenas first, as the binary does
//!    (`cli::limit_malloc_arenas`).
//! 4. `audit_tail::last_exchange` on a 1 GiB and a 1 MiB audit log with the same tail: mean
//!    time and bytes read; the ratio should stay within one order of magnitude.
//!
//! 5. What observing ages costs a pass (issue 31).
//! 6. What OpenTelemetry export costs a pass (issue 34): the concurrent pass again, with
//!    `[otel]` off, then on; with it on, each pass's 1,001 spans are planned, handed
//!    to the batch processor and exported to an OTLP/HTTP receiver served in this process
//!    (`FLEETDASH_BENCH_OTLP_ENDPOINT=http://host:4318` exports to that one instead). Printed:
//!    the pass's wall time, the time the pass spends handing its spans over, and the process's
//!    CPU time per pass (the exporter's encoding and sending included, flushed at the end).
//!
//! `FLEETDASH_BENCH_QUICK=1` skips the concurrency-1 pass and the 1 GiB log (a few seconds).
//! `FLEETDASH_BENCH_PASSES=6` runs six concurrent passes instead of three (does the memory
//! plateau?); `FLEETDASH_BENCH_PASSES_ONLY=1` stops after part 3, so that a heap profile of the
//! run (`heaptrack`) shows the passes alone, without the exporter of part 6 (issue 35).

// Helpers some benches do not use.
#[allow(dead_code)]
mod common;

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{max_rss_kib, mb, memory_now, raise_open_files_limit, verdict, vm_hwm_kib};
use fleetdash::collect::agents::audit_tail;
use fleetdash::collect::{self, Findings, SectionName};
use fleetdash::config::Config;
use fleetdash::config::defaults::COLLECTOR_PEER;

const AGENTS: usize = 1000;
const HANG_PERCENT: usize = 10;
/// The probe timeout T of both passes.
const TIMEOUT: Duration = Duration::from_secs(1);
const CONCURRENCY: usize = 256;
/// Passes at `CONCURRENCY`; the summary reports the median.
const FAST_PASSES: usize = 3;
/// The dialect the simulated agent `i` speaks is `DIALECTS[i % 3]` (see `demo::sim::serve_many`).
const DIALECTS: [&str; 3] = ["v1", "v0.3", "v0.3-content"];
/// The collector's default per-agent tail budget (`probe.audit_tail_max_bytes`).
const AUDIT_BUDGET: u64 = 4 * 1024 * 1024;
/// The collector's peak RSS at `AGENTS` agents, in MB of 10^6 bytes (issue 35).
const PEAK_TARGET_MB: f64 = 30.0;
const GIB: u64 = 1 << 30;
const MIB: u64 = 1 << 20;

fn main() {
    // As the `fleetdash` binary does first thing (issue 35): the peak measured is what it runs.
    fleetdash::cli::limit_malloc_arenas();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");

    println!("== fleetdash agents_pass bench ==");
    let maxrss_at_start_kib = max_rss_kib();
    // ru_maxrss already well above this image's own peak means it was inherited (see part 3).
    let maxrss_inherited = vm_hwm_kib("self").is_some_and(|own| maxrss_at_start_kib > own + 4096);
    let quick = std::env::var_os("FLEETDASH_BENCH_QUICK").is_some();
    raise_open_files_limit();
    let work = tempfile::tempdir().expect("a temporary directory");

    // 1 and 2: the agents passes against a simulated fleet in a child process.
    let fleet = SimFleet::start(AGENTS, HANG_PERCENT);
    println!(
        "simulated fleet: {AGENTS} agents, {HANG_PERCENT}% hung, child pid {} on 127.0.0.1:{}",
        fleet.child.id(),
        fleet.port
    );
    let fast_config = write_config(work.path(), fleet.port, CONCURRENCY);
    let slow_config = write_config(work.path(), fleet.port, 1);

    let fast_passes = std::env::var("FLEETDASH_BENCH_PASSES")
        .ok()
        .and_then(|n| n.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(FAST_PASSES);
    let mut fast = Vec::new();
    for i in 1..=fast_passes {
        let pass = runtime.block_on(agents_pass(&fast_config));
        pass.print(&format!(
            "pass {i}/{fast_passes}, concurrency {CONCURRENCY}"
        ));
        println!("  after it: {}", memory_now());
        fast.push(pass);
    }
    fast.sort_by_key(|p| p.wall);
    let fast = fast.swap_remove(fast.len() / 2);

    let slow = if quick {
        println!("concurrency-1 pass: skipped (FLEETDASH_BENCH_QUICK is set)");
        None
    } else {
        println!(
            "concurrency-1 pass (about {} × T for the hung agents alone)...",
            AGENTS * HANG_PERCENT / 100
        );
        let slow = runtime.block_on(agents_pass(&slow_config));
        slow.print("concurrency 1");
        println!("  after it: {}", memory_now());
        Some(slow)
    };
    let fleet_peak_kib = vm_hwm_kib(&fleet.child.id().to_string());
    drop(fleet);

    // 3: peak memory of this process, which ran only the collector. Linux keeps the parent's
    // high-water mark in ru_maxrss across exec, so under `cargo bench` getrusage reports cargo's
    // own peak from the start; VmHWM is this process image's alone and is the figure to judge.
    let maxrss_kib = max_rss_kib();
    let hwm_kib = vm_hwm_kib("self");
    let peak_kib = hwm_kib.unwrap_or(maxrss_kib);
    println!(
        "peak memory after the passes: VmHWM {} KiB; getrusage ru_maxrss {maxrss_kib} KiB (it was {maxrss_at_start_kib} KiB before the bench did anything{})",
        hwm_kib.map_or("unavailable".to_string(), |k| k.to_string()),
        if maxrss_inherited {
            ": the parent's high-water mark, inherited across exec"
        } else {
            ""
        },
    );
    if let Some(k) = fleet_peak_kib {
        println!(
            "the sim-fleet child process peaked at {:.1} MB (not counted)",
            mb(k)
        );
    }

    if std::env::var_os("FLEETDASH_BENCH_PASSES_ONLY").is_some() {
        println!("parts 4 to 6 skipped (FLEETDASH_BENCH_PASSES_ONLY is set)");
        return;
    }

    // 4: the audit tail on a large and a small log.
    let free = free_bytes(work.path());
    let with_large = if quick {
        println!("audit tail 1 GiB: skipped (FLEETDASH_BENCH_QUICK is set)");
        false
    } else if free < 3 * GIB {
        println!(
            "audit tail 1 GiB: SKIPPED, only {:.1} GiB free in {} (needs 3 GiB)",
            free as f64 / GIB as f64,
            work.path().display()
        );
        false
    } else {
        true
    };
    let tails = audit_tail_cases(work.path(), with_large);

    // 5: what observing ages costs a pass (issue 31): each row asks the clock the age of a few
    // stamps (last exchange, last report, heartbeat report); here 3 per agent, remembered.
    let clock = fleetdash::clock::Clock::system(common::shipped_rules().clock.settings());
    let names: Vec<String> = (0..AGENTS * 3)
        .map(|i| format!("agent a{:04}'s stamp {}", i / 3, i % 3))
        .collect();
    let stamp = chrono::Utc::now() - chrono::Duration::seconds(30);
    let first = Instant::now();
    let at = clock.clocked();
    names.iter().for_each(|n| {
        std::hint::black_box(at.age(n, stamp));
    });
    let first = first.elapsed();
    let rounds = 20;
    let again = Instant::now();
    for _ in 0..rounds {
        let at = clock.clocked();
        names.iter().for_each(|n| {
            std::hint::black_box(at.age(n, stamp));
        });
    }
    let again = again.elapsed() / rounds;
    println!(
        "clock: {} ages of a pass: first seen {:.2} ms, then {:.2} ms a pass ({:.0} ns an age)",
        names.len(),
        first.as_secs_f64() * 1e3,
        again.as_secs_f64() * 1e3,
        again.as_secs_f64() * 1e9 / names.len() as f64
    );

    // 6: the concurrent pass with OpenTelemetry export off and on, against a new sim fleet.
    let otel = otel_cost(&runtime, work.path(), if quick { 1 } else { 3 });

    let t = TIMEOUT.as_secs_f64();
    let fast_ratio = fast.wall.as_secs_f64() / t;
    let timeout = humantime::format_duration(TIMEOUT);
    println!();
    println!("== summary ==");
    println!(
        "agents pass {AGENTS} agents ({HANG_PERCENT}% hung), T={timeout}, concurrency {CONCURRENCY}: {:.2} s = {fast_ratio:.2}×T (target ≤ 1.5×) {} [median of {fast_passes}; {} up, {} down; {:.0} rows/s]",
        fast.wall.as_secs_f64(),
        verdict(fast_ratio <= 1.5),
        fast.up,
        fast.down,
        fast.rows_per_second(),
    );
    match &slow {
        Some(slow) => println!(
            "agents pass {AGENTS} agents ({HANG_PERCENT}% hung), T={timeout}, concurrency 1: {:.2} s = {:.2}×T (for comparison: {:.1}× the concurrent pass) [{} up, {} down; {:.0} rows/s]",
            slow.wall.as_secs_f64(),
            slow.wall.as_secs_f64() / t,
            slow.wall.as_secs_f64() / fast.wall.as_secs_f64(),
            slow.up,
            slow.down,
            slow.rows_per_second(),
        ),
        None => println!("agents pass at concurrency 1: skipped"),
    }
    println!(
        "peak memory of the collector process after the passes: {:.1} MB{} (target ≤ {PEAK_TARGET_MB} MB) {}",
        mb(peak_kib),
        match (hwm_kib, maxrss_inherited) {
            (Some(_), true) => " (VmHWM; ru_maxrss holds the parent's peak, see above)",
            (Some(_), false) => " (VmHWM)",
            (None, _) => " (ru_maxrss)",
        },
        verdict(peak_kib as f64 * 1024.0 <= PEAK_TARGET_MB * 1e6),
    );
    otel.print();
    match (&tails.small, &tails.large) {
        (small, Some(large)) => {
            let ratio = large.mean_us / small.mean_us;
            println!(
                "audit tail last_exchange: 1 GiB log {:.1} µs ({} bytes read) vs 1 MiB log {:.1} µs ({} bytes read): {ratio:.2}× (target: same order of magnitude) {}",
                large.mean_us,
                large.bytes_read,
                small.mean_us,
                small.bytes_read,
                verdict(ratio < 10.0),
            );
        }
        (small, None) => println!(
            "audit tail last_exchange: 1 MiB log {:.1} µs ({} bytes read); 1 GiB case skipped",
            small.mean_us, small.bytes_read
        ),
    }
}

// ---------------------------------------------------------------------------------------------
// The simulated fleet, as a child process.

struct SimFleet {
    child: Child,
    port: u16,
}

impl SimFleet {
    fn start(agents: usize, hang_percent: usize) -> SimFleet {
        let exe = env!("CARGO_BIN_EXE_fleetdash");
        let mut child = Command::new(exe)
            .args(["sim-fleet", "--agents", &agents.to_string(), "--hang-percent", &hang_percent.to_string()])
            .env("FLEETDASH_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot start {exe} sim-fleet ({e}); build it with `cargo build --release -p fleetdash`")
            });
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let mut fleet = SimFleet { child, port: 0 };
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the sim-fleet child printed no `READY <port>` line within 30 s");
        fleet.port = line
            .trim()
            .strip_prefix("READY ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| {
                panic!("the sim-fleet child printed {line:?}, expected `READY <port>`")
            });
        fleet
    }
}

impl Drop for SimFleet {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ---------------------------------------------------------------------------------------------
// The config and one agents pass.

/// Writes `fleetdash-c<concurrency>.toml` (and, once, the agents' small audit logs) in `dir`.
fn write_config(dir: &Path, port: u16, concurrency: usize) -> PathBuf {
    let audit_dir = dir.join("audit");
    if !audit_dir.exists() {
        std::fs::create_dir(&audit_dir).expect("audit dir");
        let now = chrono::Utc::now().timestamp() as f64;
        for i in 0..AGENTS {
            let mut f = BufWriter::new(
                File::create(audit_dir.join(format!("{i}.jsonl"))).expect("audit log"),
            );
            for k in 0..20 {
                write_audit_line(&mut f, now - 3600.0 + k as f64 * 60.0, k % 7 == 6)
                    .expect("audit line");
            }
            f.flush().expect("audit log flush");
        }
    }
    let rules = Path::new(env!("CARGO_MANIFEST_DIR")).join("../config/rules.yaml");
    let rules = rules
        .canonicalize()
        .unwrap_or_else(|e| panic!("{}: {e}", rules.display()));
    let quote = |s: &str| toml::Value::String(s.to_string()).to_string();
    let mut text = format!(
        "output_dir = \"out\"\nstate_dir = \"state\"\nrules = {}\n\n[probe]\ntimeout = \"{}\"\nconcurrency = {concurrency}\n",
        quote(&rules.to_string_lossy()),
        humantime::format_duration(TIMEOUT),
    );
    for i in 0..AGENTS {
        text.push_str(&format!(
            "\n[[agents]]\nname = \"sim-{i}\"\nendpoint = \"http://127.0.0.1:{port}/agents/{i}/\"\ndialect = \"{}\"\naudit_log = \"audit/{i}.jsonl\"\n",
            DIALECTS[i % 3]
        ));
    }
    let path = dir.join(format!("fleetdash-c{concurrency}.toml"));
    std::fs::write(&path, text).expect("config file");
    path
}

struct Pass {
    wall: Duration,
    rows: usize,
    up: usize,
    down: usize,
    heartbeat_ok: usize,
    audit_ok: usize,
}

impl Pass {
    fn rows_per_second(&self) -> f64 {
        self.rows as f64 / self.wall.as_secs_f64()
    }

    fn print(&self, label: &str) {
        println!(
            "{label}: {:.3} s = {:.2}×T; {} rows ({} up, {} down, {} heartbeats answered, {} audit tails read); {:.0} rows/s",
            self.wall.as_secs_f64(),
            self.wall.as_secs_f64() / TIMEOUT.as_secs_f64(),
            self.rows,
            self.up,
            self.down,
            self.heartbeat_ok,
            self.audit_ok,
            self.rows_per_second()
        );
    }
}

async fn agents_pass(config_path: &Path) -> Pass {
    let (config, rules) = Config::load(config_path).unwrap_or_else(|e| panic!("{e}"));
    let collectors = collect::from_config(&config, &rules, Some(&[SectionName::Agents]));
    let collector = collectors.first().expect("an agents collector");
    // One clock for every pass, as `fleetdash run` has: ages are remembered between passes.
    static CLOCK: std::sync::OnceLock<fleetdash::clock::Clock> = std::sync::OnceLock::new();
    let clock = CLOCK.get_or_init(|| fleetdash::clock::Clock::system(rules.clock.settings()));
    let started = Instant::now();
    let update = collect::run_once(collector.as_ref(), clock).await;
    let wall = started.elapsed();
    let Findings::Agents { rows, .. } = update.findings else {
        panic!("the agents collector returned another section");
    };
    Pass {
        wall,
        rows: rows.len(),
        up: rows.iter().filter(|a| a.up).count(),
        down: rows.iter().filter(|a| !a.up).count(),
        heartbeat_ok: rows
            .iter()
            .filter(|a| a.heartbeat.value().is_some())
            .count(),
        audit_ok: rows
            .iter()
            .filter(|a| a.last_exchange_s.value().is_some())
            .count(),
    }
}

// ---------------------------------------------------------------------------------------------
// OpenTelemetry export (part 6).

/// What a pass costs with export off and on (medians).
struct OtelCost {
    off_wall: Duration,
    on_wall: Duration,
    /// The pass's own time to plan its spans and hand them to the processor.
    hand_over: Duration,
    off_cpu: Duration,
    /// The process's CPU per pass with export on, the exporter's encoding and sending included.
    on_cpu: Duration,
    spans: usize,
    bytes: usize,
    receiver: String,
}

impl OtelCost {
    fn print(&self) {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        println!(
            "agents pass {AGENTS} agents, OpenTelemetry export off / on ({}): wall {:.0} / {:.0} ms; CPU of the process {:.0} / {:.0} ms a pass (+{:.0} ms: planning, queueing, encoding, sending); the pass itself hands its spans over in {:.2} ms; {} spans, {} bytes of OTLP protobuf received",
            self.receiver,
            ms(self.off_wall),
            ms(self.on_wall),
            ms(self.off_cpu),
            ms(self.on_cpu),
            ms(self.on_cpu.saturating_sub(self.off_cpu)),
            ms(self.hand_over),
            self.spans,
            self.bytes,
        );
    }
}

/// CPU time of this process so far (user and system).
fn cpu_time() -> Duration {
    // SAFETY: an all-zero rusage is valid, and getrusage only writes into it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// An OTLP/HTTP receiver on loopback counting the spans and bytes it is sent.
async fn otlp_receiver() -> (String, std::sync::Arc<std::sync::Mutex<(usize, usize)>>) {
    use prost::Message;
    let counts = std::sync::Arc::new(std::sync::Mutex::new((0, 0)));
    let kept = counts.clone();
    let app = axum::Router::new().fallback(move |body: axum::body::Bytes| {
        let kept = kept.clone();
        async move {
            let request = opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest::decode(body.as_ref())
                .expect("an OTLP protobuf body");
            let spans: usize = request
                .resource_spans
                .iter()
                .flat_map(|r| &r.scope_spans)
                .map(|s| s.spans.len())
                .sum();
            let mut counts = kept.lock().unwrap();
            counts.0 += spans;
            counts.1 += body.len();
            [("content-type", "application/x-protobuf")]
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let addr = listener.local_addr().expect("its address");
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}"), counts)
}

fn otel_cost(runtime: &tokio::runtime::Runtime, dir: &Path, rounds: usize) -> OtelCost {
    let fleet = SimFleet::start(AGENTS, HANG_PERCENT);
    let off_config = write_config(dir, fleet.port, CONCURRENCY);
    let (endpoint, counts, receiver) = match std::env::var("FLEETDASH_BENCH_OTLP_ENDPOINT") {
        Ok(e) => (e.clone(), None, e),
        Err(_) => {
            let (e, counts) = runtime.block_on(otlp_receiver());
            (e, Some(counts), "a receiver in this process".to_string())
        }
    };
    let on_config = dir.join("fleetdash-otel.toml");
    let text = std::fs::read_to_string(&off_config).expect("the config");
    std::fs::write(
        &on_config,
        format!("{text}\n[otel]\nendpoint = \"{endpoint}\"\n"),
    )
    .expect("the otel config");
    let load = |p: &Path| Config::load(p).unwrap_or_else(|e| panic!("{e}"));
    let (off, rules) = load(&off_config);
    let (on, _) = load(&on_config);
    let clock = fleetdash::clock::Clock::system(rules.clock.settings());
    let collector = collect::from_config(&off, &rules, Some(&[SectionName::Agents]))
        .pop()
        .expect("an agents collector");
    let otel = runtime.block_on(async {
        fleetdash::otel::Otel::start(&on)
            .expect("the exporter")
            .expect("[otel] is set")
    });
    let (mut off_wall, mut on_wall, mut hand_over) = (Vec::new(), Vec::new(), Vec::new());
    let (mut off_cpu, mut on_cpu) = (Duration::ZERO, Duration::ZERO);
    // Off first, then on: the exporter's work in the background falls in the on phase alone.
    for export in [false, true] {
        for round in 0..=rounds {
            let cpu = cpu_time();
            let started = Instant::now();
            let (collection, trace) =
                runtime.block_on(collect::run_traced(collector.as_ref(), &clock));
            let wall = started.elapsed();
            let handed = Instant::now();
            if export {
                otel.observe(&collection, &trace);
            }
            let handed = handed.elapsed();
            // Each phase's first pass warms the connections and the exporter: not counted.
            if round == 0 {
                continue;
            }
            let cpu = cpu_time() - cpu;
            if export {
                on_wall.push(wall);
                hand_over.push(handed);
                on_cpu += cpu;
            } else {
                off_wall.push(wall);
                off_cpu += cpu;
            }
        }
    }
    // The exports still queued: their CPU is the on side's.
    let cpu = cpu_time();
    runtime.block_on(otel.clone().shutdown());
    on_cpu += cpu_time() - cpu;
    let (exported, dropped) = otel.counts();
    println!("OpenTelemetry: {exported} spans exported, {dropped} dropped");
    let (spans, bytes) = counts.map_or((exported as usize, 0), |c| *c.lock().unwrap());
    drop(fleet);
    OtelCost {
        off_wall: median(off_wall),
        on_wall: median(on_wall),
        hand_over: median(hand_over),
        off_cpu: off_cpu / rounds as u32,
        on_cpu: on_cpu / rounds as u32,
        spans: spans / (rounds + 1),
        bytes: bytes / (rounds + 1),
        receiver,
    }
}

// ---------------------------------------------------------------------------------------------
// The audit tail.

/// One audit line of about 200 bytes, shaped like the Hermes adapter's.
fn write_audit_line(out: &mut impl Write, ts: f64, rejected: bool) -> std::io::Result<()> {
    let (decision, status) = if rejected {
        ("rejected_bad_token", 401)
    } else {
        ("accepted", 200)
    };
    writeln!(
        out,
        r#"{{"ts": {ts:.3}, "direction": "inbound", "peer": "hermes-hub", "ip": "127.0.0.1", "task_id": null, "decision": "{decision}", "status": {status}, "summary": "heartbeat received, nothing to report"}}"#
    )
}

struct TailCase {
    mean_us: f64,
    bytes_read: u64,
}

struct TailCases {
    small: TailCase,
    large: Option<TailCase>,
}

/// Writes a log of about `size` bytes whose newest successful line sits behind five rejected
/// ones; returns its path and the timestamp `last_exchange` must find.
fn write_audit_log(dir: &Path, size: u64, label: &str) -> (PathBuf, f64) {
    let path = dir.join(format!("a2a_audit-{size}.jsonl"));
    let started = Instant::now();
    let mut out = BufWriter::with_capacity(1 << 20, File::create(&path).expect("audit log"));
    let mut written = 0u64;
    let mut ts = 1_700_000_000.0;
    let mut line = Vec::with_capacity(256);
    let tail_reserve = 8 * 1024;
    while written + tail_reserve < size {
        line.clear();
        write_audit_line(&mut line, ts, false).expect("line");
        out.write_all(&line).expect("write");
        written += line.len() as u64;
        ts += 0.25;
    }
    write_audit_line(&mut out, ts, false).expect("line");
    for k in 1..=5 {
        write_audit_line(&mut out, ts + k as f64, true).expect("line");
    }
    out.into_inner().expect("flush").sync_all().expect("sync");
    let len = std::fs::metadata(&path).expect("metadata").len();
    println!(
        "audit tail {label}: wrote {len} bytes ({:.0} B/line) in {:.2} s",
        line.len(),
        started.elapsed().as_secs_f64()
    );
    (path, ts)
}

/// Times `last_exchange` on a 1 MiB log and, when asked, a 1 GiB one, in alternating rounds so
/// that neither gets the warmer machine; deletes the logs afterwards.
fn audit_tail_cases(dir: &Path, with_large: bool) -> TailCases {
    const ROUNDS: usize = 5;
    const CALLS: usize = 1000;
    let mut logs = vec![("1 MiB", write_audit_log(dir, MIB, "1 MiB"))];
    if with_large {
        logs.push(("1 GiB", write_audit_log(dir, GIB, "1 GiB")));
    }
    let mut elapsed = vec![Duration::ZERO; logs.len()];
    let mut bytes_read = vec![0; logs.len()];
    for (_, (path, ts)) in &logs {
        let tail =
            audit_tail::last_exchange(path, AUDIT_BUDGET, COLLECTOR_PEER).expect("last_exchange");
        assert_eq!(
            tail.last_exchange_ts,
            Some((ts * 1000.0).round() / 1000.0),
            "{}",
            path.display()
        );
    }
    for _ in 0..ROUNDS {
        for (i, (_, (path, _))) in logs.iter().enumerate() {
            let started = Instant::now();
            for _ in 0..CALLS {
                let tail = audit_tail::last_exchange(
                    std::hint::black_box(path),
                    AUDIT_BUDGET,
                    COLLECTOR_PEER,
                )
                .expect("last_exchange");
                bytes_read[i] = tail.bytes_read;
            }
            elapsed[i] += started.elapsed();
        }
    }
    let mut cases = logs.iter().enumerate().map(|(i, (label, (path, _)))| {
        let mean_us = elapsed[i].as_secs_f64() * 1e6 / (ROUNDS * CALLS) as f64;
        println!(
            "audit tail {label}: {mean_us:.1} µs mean over {} calls, {} bytes read (page cache warm)",
            ROUNDS * CALLS,
            bytes_read[i]
        );
        std::fs::remove_file(path).expect("remove the audit log");
        TailCase { mean_us, bytes_read: bytes_read[i] }
    });
    let small = cases.next().expect("the 1 MiB case");
    TailCases {
        small,
        large: cases.next(),
    }
}

// ---------------------------------------------------------------------------------------------
// libc.

/// Bytes available to this user on the filesystem holding `dir`.
fn free_bytes(dir: &Path) -> u64 {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).expect("a path without NUL");
    // SAFETY: an all-zero statvfs is valid, and statvfs only writes into it.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return 0;
    }
    st.f_bavail as u64 * st.f_frsize as u64
}

//! Benchmark of `fleetdash serve` under a password-guessing storm: the latency of a good client
//! polling `/api/status.json` while 200 concurrent clients send wrong passwords. It prints
//! figures and asserts no timing.
//!
//! Run from the repository root:
//!
//!     cargo bench -p fleetdash --bench serve_auth
//!
//! The server is the real `fleetdash serve` binary (Cargo hands its path to this file as
//! `CARGO_BIN_EXE_fleetdash`) in its own process, on loopback; the clients are raw HTTP/1.1 over
//! fresh connections (`Connection: close`), from this process. Loopback has the whole 127/8,
//! so each client binds the source address it plays: the good client 127.0.0.1, the attackers
//! 127.0.0.2 (one guessing host) or 127.0.1.1 .. 127.0.1.200 (a distributed storm).
//!
//! Scenarios, each reported as p50 / p90 / p99 / max of the good client's polls:
//! 1. quiet: no attackers.
//! 2. storm from one IP: 200 attackers on 127.0.0.2.
//! 3. storm from 200 IPs: one attacker per address.
//! 4. storm from the good client's own IP (a shared NAT): 200 attackers on 127.0.0.1.
//!
//! The htpasswd entry has bcrypt cost [`BCRYPT_COST`] (one verify is timed and printed). About
//! a minute; `FLEETDASH_BENCH_QUICK=1` polls fewer times.

// Shared with the other benches; this one needs only the open-files limit.
#[allow(dead_code)]
mod common;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use base64::Engine;
use common::raise_open_files_limit;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const USER: &str = "young";
const PASSWORD: &str = "correct horse battery";
/// What a hub's htpasswd would plausibly hold: about 100 ms a verify on a small machine.
const BCRYPT_COST: u32 = 10;
const ATTACKERS: usize = 200;
/// The good client's polls per scenario (fewer with FLEETDASH_BENCH_QUICK), a pause between.
const POLLS: usize = 100;
const QUICK_POLLS: usize = 20;
const POLL_PAUSE: Duration = Duration::from_millis(20);
/// A poll slower than this is counted as timed out (and as this long in the percentiles).
const POLL_TIMEOUT: Duration = Duration::from_secs(30);
/// No scenario's polling runs longer than this; fewer polls are then reported.
const SCENARIO_BUDGET: Duration = Duration::from_secs(60);
/// Attackers start this long before the good client, so the storm is under way.
const STORM_WARMUP: Duration = Duration::from_secs(2);

/// Where attacker `i` connects from.
type AttackerSource = fn(usize) -> Ipv4Addr;

const GOOD_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 1);
const ONE_ATTACKER_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);

fn main() {
    raise_open_files_limit();
    let quick = std::env::var_os("FLEETDASH_BENCH_QUICK").is_some();
    let polls = if quick { QUICK_POLLS } else { POLLS };
    let work = tempfile::tempdir().expect("a temporary directory");
    let config = write_fixture(work.path());

    println!("== fleetdash serve_auth bench ==");
    let hash = std::fs::read_to_string(work.path().join("htpasswd")).expect("htpasswd");
    let hash = hash
        .trim()
        .split_once(':')
        .expect("user:hash")
        .1
        .to_string();
    let started = Instant::now();
    let _ = bcrypt::verify("wrong", &hash);
    println!(
        "one bcrypt verify at cost {BCRYPT_COST}: {:.1} ms (on this machine, now)",
        started.elapsed().as_secs_f64() * 1e3
    );

    let server = Server::start(&config);
    println!(
        "fleetdash serve: pid {} on {}",
        server.child.id(),
        server.addr
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");

    let scenarios: [(&str, Option<AttackerSource>); 4] = [
        ("quiet (no attackers)", None),
        (
            "200 attackers from one IP (127.0.0.2)",
            Some(|_| ONE_ATTACKER_IP),
        ),
        (
            "200 attackers from 200 IPs (127.0.1.1-200)",
            Some(|i| Ipv4Addr::new(127, 0, 1, 1 + i as u8)),
        ),
        (
            "200 attackers from the good client's own IP (127.0.0.1)",
            Some(|_| GOOD_IP),
        ),
    ];
    let mut summary = Vec::new();
    for (label, attacker_ip) in scenarios {
        let result = runtime.block_on(scenario(server.addr, polls, attacker_ip));
        println!("{label}:");
        result.print();
        summary.push((label, result));
        // Let throttles and the server's queues from one scenario drain before the next.
        std::thread::sleep(Duration::from_secs(2));
    }

    println!();
    println!("== summary: the good client's GET /api/status.json latency ==");
    for (label, r) in &summary {
        println!(
            "{label}: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms; after the handshake p99 {:.1} ms ({} polls: {} ok, {} not 200, {} timed out)",
            r.percentile(50.0),
            r.percentile(99.0),
            r.max(),
            percentile(&r.answers, 99.0),
            r.latencies.len(),
            r.ok,
            r.not_ok,
            r.timed_out
        );
    }
}

/// Writes htpasswd, rules, a status.json and the config; returns the config's path.
fn write_fixture(dir: &Path) -> std::path::PathBuf {
    let hash = bcrypt::hash_with_result(PASSWORD, BCRYPT_COST)
        .expect("bcrypt")
        .format_for_version(bcrypt::Version::TwoY);
    std::fs::write(dir.join("htpasswd"), format!("{USER}:{hash}\n")).expect("htpasswd");
    let rules = Path::new(env!("CARGO_MANIFEST_DIR")).join("../config/rules.yaml");
    std::fs::copy(&rules, dir.join("rules.yaml"))
        .unwrap_or_else(|e| panic!("{}: {e}", rules.display()));
    std::fs::create_dir_all(dir.join("out")).expect("out");
    // About the size of a small fleet's snapshot.
    let rows: Vec<String> = (0..40)
        .map(|i| format!("{{\"name\": \"agent-{i}\", \"up\": true, \"band\": \"green\"}}"))
        .collect();
    std::fs::write(
        dir.join("out/status.json"),
        format!(
            "{{\"schema_version\": 0, \"agents\": [{}]}}\n",
            rows.join(", ")
        ),
    )
    .expect("status.json");
    let path = dir.join("fleetdash.toml");
    std::fs::write(
        &path,
        "output_dir = \"out\"\nstate_dir = \"state\"\nrules = \"rules.yaml\"\n\n[serve]\nhtpasswd = \"htpasswd\"\n",
    )
    .expect("config");
    path
}

struct Server {
    child: Child,
    addr: SocketAddr,
}

impl Server {
    fn start(config: &Path) -> Server {
        let exe = env!("CARGO_BIN_EXE_fleetdash");
        let mut child = Command::new(exe)
            .args(["serve", "--listen", "127.0.0.1:0", "--config"])
            .arg(config)
            .env("FLEETDASH_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {exe} serve: {e}"));
        let mut stderr = std::io::BufReader::new(child.stderr.take().expect("piped"));
        let mut line = String::new();
        std::io::BufRead::read_line(&mut stderr, &mut line).expect("serve's first line");
        let addr = line
            .trim()
            .strip_prefix("fleetdash: serving on http://")
            .and_then(|s| s.strip_suffix('/'))
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("fleetdash serve printed {line:?}"));
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::stderr()));
        Server { child, addr }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[derive(Default)]
struct Outcome {
    /// Milliseconds, one per poll (a timed-out poll counts as POLL_TIMEOUT).
    latencies: Vec<f64>,
    /// Milliseconds of each poll's TCP handshake (part of its latency).
    connects: Vec<f64>,
    /// Milliseconds from the handshake to the whole answer (the rest of its latency).
    answers: Vec<f64>,
    ok: usize,
    not_ok: usize,
    timed_out: usize,
    attacker_replies: Vec<(u16, u64)>,
    attacker_errors: u64,
    wall: Duration,
}

impl Outcome {
    fn percentile(&self, p: f64) -> f64 {
        percentile(&self.latencies, p)
    }

    fn max(&self) -> f64 {
        self.latencies.iter().copied().fold(f64::NAN, f64::max)
    }

    fn print(&self) {
        println!(
            "  good client: {} polls in {:.1} s: p50 {:.1} ms, p90 {:.1} ms, p99 {:.1} ms, max {:.1} ms; {} ok, {} not 200, {} timed out",
            self.latencies.len(),
            self.wall.as_secs_f64(),
            self.percentile(50.0),
            self.percentile(90.0),
            self.percentile(99.0),
            self.max(),
            self.ok,
            self.not_ok,
            self.timed_out
        );
        println!(
            "  of which the TCP handshake: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms (a connect near 1 s is a SYN retransmitted after the accept queue overflowed)",
            percentile(&self.connects, 50.0),
            percentile(&self.connects, 99.0),
            self.connects.iter().copied().fold(f64::NAN, f64::max),
        );
        println!(
            "  and from connected to answered: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
            percentile(&self.answers, 50.0),
            percentile(&self.answers, 99.0),
            self.answers.iter().copied().fold(f64::NAN, f64::max),
        );
        if !self.attacker_replies.is_empty() || self.attacker_errors > 0 {
            let replies: Vec<String> = self
                .attacker_replies
                .iter()
                .map(|(status, n)| format!("{n} × {status}"))
                .collect();
            println!(
                "  attackers' answers: {}; {} failed connections",
                replies.join(", "),
                self.attacker_errors
            );
        }
    }
}

async fn scenario(
    server: SocketAddr,
    polls: usize,
    attacker_ip: Option<AttackerSource>,
) -> Outcome {
    let stop = Arc::new(AtomicBool::new(false));
    // Counts per status code (index = status), and connection failures.
    let statuses: Arc<Vec<AtomicU64>> = Arc::new((0..600).map(|_| AtomicU64::new(0)).collect());
    let errors = Arc::new(AtomicU64::new(0));
    let mut attackers = Vec::new();
    if let Some(ip_of) = attacker_ip {
        for i in 0..ATTACKERS {
            let (stop, statuses, errors) = (stop.clone(), statuses.clone(), errors.clone());
            let source = ip_of(i);
            let wrong = basic(USER, &format!("guess-{i}"));
            attackers.push(tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    match get(source, server, &wrong, POLL_TIMEOUT, &mut None).await {
                        Some(status) => {
                            statuses[usize::from(status).min(599)].fetch_add(1, Ordering::Relaxed);
                        }
                        None => {
                            errors.fetch_add(1, Ordering::Relaxed);
                            tokio::time::sleep(Duration::from_millis(10)).await;
                        }
                    }
                }
            }));
        }
        tokio::time::sleep(STORM_WARMUP).await;
    }

    let good = basic(USER, PASSWORD);
    let mut outcome = Outcome::default();
    let started = Instant::now();
    for _ in 0..polls {
        if started.elapsed() > SCENARIO_BUDGET {
            break;
        }
        let sent = Instant::now();
        let mut connected_after = None;
        let status = get(GOOD_IP, server, &good, POLL_TIMEOUT, &mut connected_after).await;
        let took = sent.elapsed();
        if let Some(connect) = connected_after {
            outcome.connects.push(connect.as_secs_f64() * 1e3);
            outcome
                .answers
                .push(took.saturating_sub(connect).min(POLL_TIMEOUT).as_secs_f64() * 1e3);
        }
        match status {
            Some(200) => outcome.ok += 1,
            Some(_) => outcome.not_ok += 1,
            None => outcome.timed_out += 1,
        }
        outcome
            .latencies
            .push(took.min(POLL_TIMEOUT).as_secs_f64() * 1e3);
        tokio::time::sleep(POLL_PAUSE).await;
    }
    outcome.wall = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    for a in attackers {
        a.abort();
        let _ = a.await;
    }
    outcome.attacker_replies = statuses
        .iter()
        .enumerate()
        .filter_map(|(s, n)| {
            let n = n.load(Ordering::Relaxed);
            (n > 0).then_some((s as u16, n))
        })
        .collect();
    outcome.attacker_errors = errors.load(Ordering::Relaxed);
    outcome
}

/// The `p`th percentile (nearest rank) of `values`; NaN when there are none.
fn percentile(values: &[f64], p: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn basic(user: &str, pass: &str) -> String {
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"))
    )
}

/// One GET /api/status.json from `source` over a fresh connection; the status, or None when
/// it failed or took longer than `limit`. `connected_after` gets the TCP handshake's time, to
/// tell a wait in the kernel's accept queue from a wait for the server's answer.
async fn get(
    source: Ipv4Addr,
    server: SocketAddr,
    authorization: &str,
    limit: Duration,
    connected_after: &mut Option<Duration>,
) -> Option<u16> {
    let started = Instant::now();
    let exchange = async {
        let socket = tokio::net::TcpSocket::new_v4().ok()?;
        socket.bind(SocketAddr::new(IpAddr::V4(source), 0)).ok()?;
        let mut stream = socket.connect(server).await.ok()?;
        *connected_after = Some(started.elapsed());
        let request = format!(
            "GET /api/status.json HTTP/1.1\r\nHost: {server}\r\nAuthorization: {authorization}\r\nConnection: close\r\n\r\n"
        );
        stream.write_all(request.as_bytes()).await.ok()?;
        let mut reply = Vec::new();
        stream.read_to_end(&mut reply).await.ok()?;
        let head = std::str::from_utf8(reply.get(..12)?).ok()?;
        head.split_whitespace().nth(1)?.parse().ok()
    };
    tokio::time::timeout(limit, exchange).await.ok().flatten()
}

//! Time to page (issue 43): how long after an agent dies its alert reaches the operator's phone,
//! and whether one lost probe pages anyone. It prints figures and asserts no timing.
//!
//! Run from a clean clone, at the repository root:
//!
//!     cargo bench -p fleetdash --bench time_to_page   # about 5 to 7 minutes
//!
//! `FLEETDASH_BENCH_RUNS=N` sets the runs of each scenario (default 8, at least 6 for the
//! README's figures); `FLEETDASH_BENCH_QUICK=1` is a check that the bench works (3 runs, agents
//! every 20 s and a 5 s group wait: not the shipped defaults, and said so), in about a minute.
//!
//! Each run is a real `fleetdash run` (the binary cargo built for this bench) on the shipped
//! defaults: `config/rules.yaml` as it is, the `[cadence]` of `config/fleetdash.example.toml`
//! (agents every 2 min), one agent, and one `ntfy` channel pointed at a receiver of the run's
//! own on loopback that answers as ntfy's publish API does (`POST /<topic>`, a JSON message
//! back) and notes when each notification arrived. The agent is a simulated A2A agent of
//! `fleetdash::demo::sim` served on a loopback port of its own, through an accept loop here
//! that counts the probes it gets and can refuse one.
//!
//! 1. Killed: once the agent has answered its first probe, it is killed (its listener closed,
//!    its connections reset: every later probe is refused, as a dead process's port) at a
//!    random phase of the cadence: run i of N at `cadence × (i + u) / N` after a probe, u
//!    uniform in [0, 1), so the phases cover the cadence evenly. The figure is kill → the ntfy
//!    POST received, on this process's monotonic clock; min / median / max over the runs.
//! 2. One dropped probe: the agent drops exactly one probe at a random phase (the next
//!    connection after it is armed is reset unanswered), then answers for good. Once the agent
//!    has been probed twice more after the drop, and the group wait and a delivery tick have
//!    passed, the run's notifications are counted: that is the count of pages from a single
//!    dropped probe (0 is right: `alerts.fail_after_passes`).
//!
//! Runs are independent (each its own fleetdash process, agent and receiver) and all run at
//! once, so N runs take about one run's time: a few minutes, not N × 4 min.
//!
//! `FLEETDASH_BENCH_EXE=PATH` runs another `fleetdash` binary instead of the one cargo built
//! (a copy built before a change, to measure both on the same machine).

// Helpers some benches do not use.
#[allow(dead_code)]
mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path as UrlPath, State};
use axum::http::HeaderMap;
use rand::Rng;
use serde_json::json;

/// The binary cargo built for this bench, unless `FLEETDASH_BENCH_EXE` names another.
fn exe() -> PathBuf {
    std::env::var_os("FLEETDASH_BENCH_EXE").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_fleetdash")),
        PathBuf::from,
    )
}
const SHIPPED_RULES: &str = include_str!("../../config/rules.yaml");
const EXAMPLE_CONFIG: &str = include_str!("../../config/fleetdash.example.toml");
/// The agent every run watches.
const AGENT: &str = "lyra";

/// A child process killed (and reaped) when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The `[cadence]` table of the example config, as shipped.
fn example_cadence() -> String {
    let mut out = String::new();
    let mut inside = false;
    for line in EXAMPLE_CONFIG.lines() {
        if line.starts_with('[') {
            inside = line.trim() == "[cadence]";
        }
        if inside {
            out.push_str(line);
            out.push('\n');
        }
    }
    assert!(
        out.contains("agents = "),
        "config/fleetdash.example.toml has no [cadence] agents"
    );
    out
}

/// What the bench runs on: the shipped defaults, or the quick mode's shorter ones.
struct Setup {
    cadence_table: String,
    rules: String,
    cadence: Duration,
    group_wait: Duration,
    quick: bool,
}

impl Setup {
    fn new(quick: bool) -> Setup {
        let mut cadence_table = example_cadence();
        let mut rules = SHIPPED_RULES.to_string();
        if quick {
            let agents = cadence_table
                .lines()
                .find(|l| l.starts_with("agents = "))
                .unwrap()
                .to_string();
            cadence_table = cadence_table.replace(&agents, "agents = \"20s\"");
            let wait = format!(
                "group_wait_seconds: {}",
                common::shipped_rules().alerts.group_wait.seconds
            );
            rules = rules.replace(&wait, "group_wait_seconds: 5");
        }
        // What fleetdash itself reads from these: the cadence and the group wait it runs on.
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("rules.yaml"), &rules).unwrap();
        let path = dir.path().join("fleetdash.toml");
        std::fs::write(
            &path,
            format!(
                "output_dir = \"out\"\nstate_dir = \"state\"\nrules = \"rules.yaml\"\n\n\
                 {cadence_table}\n[[agents]]\nname = \"{AGENT}\"\n\
                 endpoint = \"http://127.0.0.1:9/\"\ndialect = \"v1\"\n"
            ),
        )
        .unwrap();
        let (config, loaded) =
            fleetdash::config::Config::load(&path).unwrap_or_else(|e| panic!("{e}"));
        Setup {
            cadence_table,
            rules,
            cadence: config.cadence.agents,
            group_wait: Duration::from_secs(loaded.alerts.group_wait.seconds),
            quick,
        }
    }
}

/// A simulated agent on its own loopback port: counts the probes it gets (each pass starts
/// with a GET of its card), can drop the next connection, and can be killed.
struct Agent {
    endpoint: String,
    cards: Arc<AtomicUsize>,
    drop_next: Arc<AtomicBool>,
    dropped: Arc<AtomicUsize>,
    serving: tokio::task::JoinHandle<()>,
}

impl Agent {
    async fn start() -> Agent {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let endpoint = format!("http://{}/", listener.local_addr().unwrap());
        let cards = Arc::new(AtomicUsize::new(0));
        let drop_next = Arc::new(AtomicBool::new(false));
        let dropped = Arc::new(AtomicUsize::new(0));
        let agent = fleetdash::demo::sim::SimAgent::healthy(AGENT, fleetdash::a2a::Wire::V1);
        let counted = cards.clone();
        let router = fleetdash::demo::sim::single_router(agent, endpoint.clone()).layer(
            axum::middleware::from_fn(
                move |req: axum::extract::Request, next: axum::middleware::Next| {
                    if req.uri().path().ends_with("agent-card.json") {
                        counted.fetch_add(1, Ordering::SeqCst);
                    }
                    next.run(req)
                },
            ),
        );
        let serving = tokio::spawn(serve(listener, router, drop_next.clone(), dropped.clone()));
        Agent {
            endpoint,
            cards,
            drop_next,
            dropped,
            serving,
        }
    }

    /// Probes it got: cards answered and connections dropped.
    fn probes(&self) -> usize {
        self.cards.load(Ordering::SeqCst) + self.dropped.load(Ordering::SeqCst)
    }

    /// Dies: the listener closes (later connects are refused) and every connection it serves
    /// is reset, as when its process is killed.
    fn kill(&self) -> Instant {
        self.serving.abort();
        Instant::now()
    }
}

/// The agent's accept loop: each connection served on a task of the loop's own set, so that
/// aborting the loop drops them all with the listener. An armed drop resets the next
/// connection before anything is read from it.
async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    drop_next: Arc<AtomicBool>,
    dropped: Arc<AtomicUsize>,
) {
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        if drop_next.swap(false, Ordering::SeqCst) {
            let _ = socket2::SockRef::from(&stream).set_linger(Some(Duration::ZERO));
            drop(stream);
            dropped.fetch_add(1, Ordering::SeqCst);
            continue;
        }
        let service = hyper_util::service::TowerToHyperService::new(router.clone());
        connections.spawn(async move {
            let io = hyper_util::rt::TokioIo::new(stream);
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(io, service)
                .await;
        });
        while connections.try_join_next().is_some() {}
    }
}

/// One notification as the receiver got it.
#[derive(Clone)]
struct Got {
    at: Instant,
    title: String,
}

/// A loopback ntfy: `POST /<topic>` answered as ntfy's publish API answers, each arrival noted.
#[derive(Clone)]
struct Ntfy {
    got: Arc<Mutex<Vec<Got>>>,
    url: String,
}

impl Ntfy {
    async fn start(topic: &str) -> Ntfy {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/{topic}", listener.local_addr().unwrap());
        let got: Arc<Mutex<Vec<Got>>> = Arc::default();
        let app = Router::new()
            .route("/{topic}", axum::routing::post(publish))
            .with_state(got.clone());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Ntfy { got, url }
    }

    fn got(&self) -> Vec<Got> {
        self.got.lock().unwrap().clone()
    }
}

async fn publish(
    State(got): State<Arc<Mutex<Vec<Got>>>>,
    UrlPath(topic): UrlPath<String>,
    headers: HeaderMap,
    body: Bytes,
) -> axum::Json<serde_json::Value> {
    let at = Instant::now();
    let title = headers
        .get("title")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    got.lock().unwrap().push(Got { at, title });
    let time = chrono::Utc::now().timestamp();
    axum::Json(json!({
        "id": uuid::Uuid::new_v4().simple().to_string()[..12].to_string(),
        "time": time,
        "expires": time + 43200,
        "event": "message",
        "topic": topic,
        "message": String::from_utf8_lossy(&body),
    }))
}

/// One run's installation: a scratch folder with the config and rules, its fleetdash process.
struct Run {
    _dir: tempfile::TempDir,
    _fleetdash: Killed,
    agent: Agent,
    ntfy: Ntfy,
    log: PathBuf,
}

impl Run {
    async fn start(setup: &Setup, topic: &str) -> Run {
        let agent = Agent::start().await;
        let ntfy = Ntfy::start(topic).await;
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("rules.yaml"), &setup.rules).unwrap();
        let config = dir.path().join("fleetdash.toml");
        std::fs::write(
            &config,
            format!(
                "output_dir = \"out\"\nstate_dir = \"state\"\nrules = \"rules.yaml\"\n\n\
                 {}\n[[alerts.channels]]\ntype = \"ntfy\"\nurl = \"{}\"\n\n\
                 [[agents]]\nname = \"{AGENT}\"\nendpoint = \"{}\"\ndialect = \"v1\"\n",
                setup.cadence_table, ntfy.url, agent.endpoint
            ),
        )
        .unwrap();
        let log = dir.path().join("fleetdash.log");
        let fleetdash = Killed(spawn_run(&config, &log));
        Run {
            _dir: dir,
            _fleetdash: fleetdash,
            agent,
            ntfy,
            log,
        }
    }

    /// Waits until the agent has been probed `n` times in all; the moment it saw that.
    async fn probed(&self, n: usize, within: Duration) -> Instant {
        let deadline = Instant::now() + within;
        while self.agent.probes() < n {
            assert!(
                Instant::now() < deadline,
                "the agent was not probed {n} times within {within:?}; fleetdash's log:\n{}",
                std::fs::read_to_string(&self.log).unwrap_or_default()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Instant::now()
    }
}

fn spawn_run(config: &Path, log: &Path) -> Child {
    let file = std::fs::File::create(log).unwrap();
    Command::new(exe())
        .args(["run", "--config"])
        .arg(config)
        .env("FLEETDASH_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(file.try_clone().unwrap())
        .stderr(file)
        .spawn()
        .unwrap()
}

/// The phase of run `i` of `n`: evenly spread over the cadence, each at a random place in its
/// slice.
fn phase(i: usize, n: usize, cadence: Duration) -> Duration {
    let u: f64 = rand::rng().random_range(0.0..1.0);
    cadence.mul_f64((i as f64 + u) / n as f64)
}

/// What a killed run measured.
struct Killing {
    phase: Duration,
    /// Kill → the first ntfy POST naming the agent; `None` when none came in the time allowed.
    to_page: Option<Duration>,
    /// Probes the agent answered from its first until its kill.
    answered: usize,
}

async fn killed(setup: &Setup, i: usize, n: usize) -> Killing {
    let run = Run::start(setup, &format!("killed-{i}")).await;
    let first = run.probed(1, Duration::from_secs(120)).await;
    let phase = phase(i, n, setup.cadence);
    tokio::time::sleep_until((first + phase).into()).await;
    let answered = run.agent.probes();
    let killed_at = run.agent.kill();
    // Room for the old behaviour (two regular passes) and a loaded machine, then give up.
    let give_up = killed_at + setup.cadence * 3 + setup.group_wait + Duration::from_secs(60);
    let to_page = loop {
        let page = run
            .ntfy
            .got()
            .into_iter()
            .find(|g| g.at >= killed_at && g.title.contains(AGENT));
        if let Some(page) = page {
            break Some(page.at - killed_at);
        }
        if Instant::now() > give_up {
            break None;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    Killing {
        phase,
        to_page,
        answered,
    }
}

/// What a run with one dropped probe saw.
struct Dropping {
    phase: Duration,
    /// Notifications the run's ntfy got, from the start to the end of the run.
    pages: usize,
    /// The probes the agent got after the dropped one, by the time they were counted.
    after: usize,
    /// From the drop to the next probe (a re-probe or the next pass).
    next_probe: Duration,
}

async fn dropped(setup: &Setup, i: usize, n: usize) -> Dropping {
    let run = Run::start(setup, &format!("dropped-{i}")).await;
    let first = run.probed(1, Duration::from_secs(120)).await;
    let phase = phase(i, n, setup.cadence);
    tokio::time::sleep_until((first + phase).into()).await;
    run.agent.drop_next.store(true, Ordering::SeqCst);
    let armed = run.agent.probes();
    let within = setup.cadence * 2 + Duration::from_secs(60);
    let drop_at = run.probed(armed + 1, within).await;
    assert_eq!(run.agent.dropped.load(Ordering::SeqCst), 1, "one drop");
    let next = run.probed(armed + 2, within).await;
    run.probed(armed + 3, within).await;
    // Whatever the two probes after the drop decided has had its group wait and a delivery.
    tokio::time::sleep(setup.group_wait + Duration::from_secs(10)).await;
    Dropping {
        phase,
        pages: run.ntfy.got().len(),
        after: run.agent.probes() - armed - 1,
        next_probe: next - drop_at,
    }
}

fn secs(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

/// Min, median and max of `values`, sorted here.
fn spread(values: &mut [Duration]) -> (Duration, Duration, Duration) {
    values.sort();
    let n = values.len();
    let median = if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2
    };
    (values[0], median, values[n - 1])
}

fn main() {
    let quick = std::env::var_os("FLEETDASH_BENCH_QUICK").is_some();
    let runs: usize = std::env::var("FLEETDASH_BENCH_RUNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(if quick { 3 } else { 8 })
        .max(1);
    let setup = Setup::new(quick);
    let rules = fleetdash::config::Rules::parse(Path::new("rules.yaml"), &setup.rules).unwrap();
    println!("fleetdash: {}", exe().display());
    println!(
        "time to page: {runs} killed and {runs} dropped-probe runs at once; agents every {}, \
         fail_after_passes {}, group_wait {}{}",
        humantime::format_duration(setup.cadence),
        rules.alerts.fail_after.count,
        humantime::format_duration(setup.group_wait),
        if setup.quick {
            " (FLEETDASH_BENCH_QUICK: NOT the shipped defaults)"
        } else {
            " (the shipped defaults)"
        }
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let started = Instant::now();
    let (kills, drops) = runtime.block_on(async {
        let kills = (0..runs).map(|i| killed(&setup, i, runs));
        let drops = (0..runs).map(|i| dropped(&setup, i, runs));
        futures::join!(
            futures::future::join_all(kills),
            futures::future::join_all(drops)
        )
    });

    println!("\nkilled at a random phase (kill → ntfy POST received):");
    let mut paged = Vec::new();
    for (i, k) in kills.iter().enumerate() {
        let figure = k.to_page.map_or("no page".to_string(), secs);
        println!(
            "  run {i}: killed {} after a probe ({} answered before): {figure}",
            secs(k.phase),
            k.answered
        );
        paged.extend(k.to_page);
    }
    let missing = kills.len() - paged.len();
    if paged.is_empty() {
        println!("  no run paged");
    } else {
        let (min, median, max) = spread(&mut paged);
        println!(
            "  time to page over {} runs: min {}, median {}, max {}{}",
            paged.len(),
            secs(min),
            secs(median),
            secs(max),
            if missing > 0 {
                format!(" ({missing} runs never paged)")
            } else {
                String::new()
            }
        );
        println!(
            "  max against cadence + 45 s ({}): {}",
            secs(setup.cadence + Duration::from_secs(45)),
            common::verdict(max <= setup.cadence + Duration::from_secs(45) && missing == 0)
        );
    }

    println!("\none probe dropped at a random phase, then healthy for good:");
    for (i, d) in drops.iter().enumerate() {
        println!(
            "  run {i}: dropped {} after a probe; next probe {} after the drop; {} probes after \
             it; pages: {}",
            secs(d.phase),
            secs(d.next_probe),
            d.after,
            d.pages
        );
    }
    let pages: usize = drops.iter().map(|d| d.pages).sum();
    println!(
        "  pages from a single dropped probe over {} runs: {pages} ({})",
        drops.len(),
        common::verdict(pages == 0)
    );
    println!("\nall runs took {}", secs(started.elapsed()));
}

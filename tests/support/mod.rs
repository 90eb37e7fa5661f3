//! Shared test fixtures: a scratch directory with config and rules, the real `fleetdash`
//! binary, real-SDK Python A2A peers and in-process simulated agents, all on loopback.
#![allow(dead_code)]

pub mod alertmanager;
pub mod chrome;
pub mod flaky;
pub mod git;
pub mod hub;
pub mod kanban;
pub mod procs;
pub mod prometheus;
pub mod receiver;
pub mod report;
pub mod secrets;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use fleetdash::a2a::Wire;
use fleetdash::demo::sim::{self, SimAgent};
use fleetdash_model::{RulesView, Snapshot};

/// How long a test waits for something that should happen at once (a process to start or
/// stop, a file to appear, a server to listen) before calling it hung. Not a speed bound: a
/// test never asserts that anything was fast (the benches measure speed); this only turns a
/// hang into a failure, and is generous enough for a loaded 2-core machine.
pub const HANG_BUDGET: std::time::Duration = std::time::Duration::from_secs(60);

/// Polls `probe` (every 250 ms) until it gives something, or fails once `within` has passed,
/// saying `what` and the last thing seen. `within` is no speed bound: it only turns a hang into
/// a failure (each test says how long what it waits for may take on a loaded 2-core machine).
pub fn eventually<T>(
    within: std::time::Duration,
    what: &str,
    mut probe: impl FnMut() -> Result<T, String>,
) -> T {
    let deadline = std::time::Instant::now() + within;
    loop {
        match probe() {
            Ok(v) => return v,
            Err(last) if std::time::Instant::now() >= deadline => {
                panic!("{what}: not within {within:?}; last seen:\n{last}")
            }
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(250)),
        }
    }
}

/// Spawns `cmd` with nothing on stdin and its stdout and stderr both in the file `log`.
pub fn spawn_logging_to(cmd: &mut Command, log: &Path) -> Child {
    let file = std::fs::File::create(log).unwrap();
    cmd.stdin(Stdio::null())
        .stdout(file.try_clone().unwrap())
        .stderr(file)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"))
}

/// Fails the test unless it runs as root: the suite runs as root (its command installs Debian
/// packages), and a test that cannot run must fail, never pass without having run.
#[track_caller]
pub fn require_root(why: &str) {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let euid = unsafe { libc::geteuid() };
    assert_eq!(
        euid, 0,
        "this test needs root {why}; run the suite as root, as scripts/test and CI do"
    );
}

/// Runs `f` on this thread without root's power over file permissions (CAP_DAC_OVERRIDE,
/// CAP_DAC_READ_SEARCH, CAP_FOWNER dropped from the thread's effective set, then restored), so
/// that a test of a permission refusal runs for real under root too. Capabilities are per
/// thread on Linux: other tests are not affected. As another user, `f` just runs.
pub fn without_file_permission_override<T>(f: impl FnOnce() -> T) -> T {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const VERSION_3: u32 = 0x2008_0522;
    const DAC_OVERRIDE: u32 = 1;
    const DAC_READ_SEARCH: u32 = 2;
    const FOWNER: u32 = 3;
    let mask = (1 << DAC_OVERRIDE) | (1 << DAC_READ_SEARCH) | (1 << FOWNER);
    let mut header = Header {
        version: VERSION_3,
        pid: 0,
    };
    let mut caps = [Data::default(); 2];
    // SAFETY: capget/capset with a version-3 header read and write exactly two data structs;
    // pid 0 is the calling thread.
    let got = unsafe { libc::syscall(libc::SYS_capget, &mut header, caps.as_mut_ptr()) };
    assert_eq!(got, 0, "capget: {}", std::io::Error::last_os_error());
    let saved = caps;
    caps[0].effective &= !mask;
    let set = unsafe { libc::syscall(libc::SYS_capset, &mut header, caps.as_ptr()) };
    assert_eq!(set, 0, "capset: {}", std::io::Error::last_os_error());
    let out = f();
    let restored = unsafe { libc::syscall(libc::SYS_capset, &mut header, saved.as_ptr()) };
    assert_eq!(restored, 0, "capset: {}", std::io::Error::last_os_error());
    out
}

/// Every file below `dir` (none when it does not exist), for tests that search all that
/// fleetdash wrote.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out
}

pub const DEFAULT_RULES: &str = include_str!("../../config/rules.yaml");

/// The shipped rules with alert grouping of a second (`grouping`: Alertmanager's 30 s wait and
/// 5 min interval): a test that runs `fleetdash run` end to end does not wait half a minute
/// for each alert. Grouping itself is tested at the shipped values with a clock of its own
/// (`tests/alert_delivery.rs`), and once through `fleetdash run`.
pub fn quick_grouping_rules() -> String {
    let quick = DEFAULT_RULES
        .replace("group_wait_seconds: 30", "group_wait_seconds: 1")
        .replace("group_interval_seconds: 300", "group_interval_seconds: 1");
    assert_ne!(
        quick, DEFAULT_RULES,
        "config/rules.yaml has no grouping to shorten"
    );
    quick
}

/// The thresholds of the shipped `config/rules.yaml` ([`DEFAULT_RULES`]): tests judge by the
/// fleet's own rules file, never by literals of their own.
pub fn fleet_rules() -> RulesView {
    fleetdash::config::Rules::parse(Path::new("config/rules.yaml"), DEFAULT_RULES)
        .unwrap_or_else(|e| panic!("config/rules.yaml: {e}"))
        .view()
}

/// This host's clock, judged by the shipped rules' `clock` group.
#[allow(dead_code)]
pub fn clock() -> fleetdash::clock::Clock {
    let rules = fleetdash::config::Rules::parse(Path::new("config/rules.yaml"), DEFAULT_RULES)
        .unwrap_or_else(|e| panic!("config/rules.yaml: {e}"));
    fleetdash::clock::Clock::system(rules.clock.settings())
}

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Fails with the command's stderr unless it exited successfully.
#[track_caller]
pub fn assert_success(out: &Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

pub fn fleetdash() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fleetdash"));
    cmd.env("FLEETDASH_LOG", "warn");
    cmd
}

/// A scratch directory holding a config, the default rules and an output directory.
pub struct Scratch {
    pub dir: tempfile::TempDir,
}

impl Scratch {
    pub fn new() -> Scratch {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("rules.yaml"), quick_grouping_rules()).unwrap();
        Scratch { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn status_path(&self) -> PathBuf {
        self.path().join("out/status.json")
    }

    /// Writes `fleetdash.toml` with the standard header plus `body` (agents etc.).
    pub fn config(&self, body: &str) -> PathBuf {
        let text = format!(
            "output_dir = \"out\"\nstate_dir = \"state\"\nrules = \"rules.yaml\"\n\n[probe]\ntimeout = \"2s\"\n\n{body}"
        );
        let path = self.path().join("fleetdash.toml");
        std::fs::write(&path, text).unwrap();
        path
    }

    pub fn collect(&self, config: &Path) -> Output {
        fleetdash()
            .args(["collect", "--config"])
            .arg(config)
            .output()
            .unwrap()
    }

    pub fn snapshot(&self) -> Snapshot {
        let bytes = std::fs::read(self.status_path()).unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    pub fn snapshot_text(&self) -> String {
        std::fs::read_to_string(self.status_path()).unwrap()
    }

    /// Writes an audit log with one successful exchange `age_s` seconds ago.
    pub fn audit_log(&self, name: &str, age_s: f64) -> PathBuf {
        let path = self.path().join(format!("{name}.a2a_audit.jsonl"));
        let ts = chrono::Utc::now().timestamp() as f64 - age_s;
        std::fs::write(
            &path,
            format!("{{\"ts\": {ts}, \"direction\": \"inbound\", \"peer\": \"min\"}}\n"),
        )
        .unwrap();
        path
    }
}

/// A TOML `[[agents]]` block.
pub fn agent_toml(name: &str, endpoint: &str, dialect: &str, audit_log: &Path) -> String {
    format!(
        "[[agents]]\nname = \"{name}\"\nendpoint = \"{endpoint}\"\ndialect = \"{dialect}\"\naudit_log = \"{}\"\n\n",
        audit_log.display()
    )
}

/// Which real SDK a Python peer runs on.
#[derive(Clone, Copy, Debug)]
pub enum Sdk {
    /// a2a-sdk 1.x: v1.0, plus v0.3 through its compat mode.
    V1,
    /// a2a-sdk 0.3.x: pure v0.3.
    V03,
}

/// A real A2A peer on the official Python SDK, killed on drop.
pub struct PyPeer {
    pub port: u16,
    child: Child,
}

impl PyPeer {
    pub fn start(sdk: Sdk, args: &[&str]) -> PyPeer {
        let (venv, script) = match sdk {
            Sdk::V1 => ("a2a-v1", "peer_v1.py"),
            Sdk::V03 => ("a2a-v03", "peer_v03.py"),
        };
        let python = repo_root().join(".venv").join(venv).join("bin/python");
        assert!(
            python.exists(),
            "{} is missing: run scripts/setup-test-deps (the README's test command does)",
            python.display()
        );
        let mut child = Command::new(python)
            .arg(repo_root().join("tests/peers").join(script))
            .args(["--port", "0"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .strip_prefix("READY ")
            .and_then(|p| p.trim().parse().ok())
            .unwrap_or_else(|| panic!("peer did not start: {line:?}"));
        PyPeer { port, child }
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }
}

impl Drop for PyPeer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A simulated agent served in-process on its own loopback port, on its own runtime thread.
pub struct Sim {
    pub endpoint: String,
    in_flight: std::sync::Arc<InFlight>,
    _runtime: tokio::runtime::Runtime,
}

/// Requests a simulated agent is answering right now, and the most it ever answered at once:
/// probes that overlap in time show here, whatever the clock says.
#[derive(Default)]
struct InFlight {
    now: std::sync::atomic::AtomicUsize,
    peak: std::sync::atomic::AtomicUsize,
    total: std::sync::atomic::AtomicUsize,
}

/// Counts one request for as long as the server works on it (a client that gives up drops it).
struct InFlightGuard(std::sync::Arc<InFlight>);

impl InFlightGuard {
    fn enter(gauge: std::sync::Arc<InFlight>) -> InFlightGuard {
        use std::sync::atomic::Ordering::SeqCst;
        gauge.total.fetch_add(1, SeqCst);
        let now = gauge.now.fetch_add(1, SeqCst) + 1;
        gauge.peak.fetch_max(now, SeqCst);
        InFlightGuard(gauge)
    }
}

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        self.0.now.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// A runtime of its own (one worker thread) and a listener on a free loopback port of it: where
/// a test serves something in-process (spawn the server on the runtime; keep the runtime).
pub fn loopback_runtime() -> (tokio::runtime::Runtime, tokio::net::TcpListener) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    (runtime, listener)
}

impl Sim {
    pub fn start(agent: SimAgent) -> Sim {
        let (runtime, listener) = loopback_runtime();
        let endpoint = format!("http://{}/", listener.local_addr().unwrap());
        let in_flight = std::sync::Arc::new(InFlight::default());
        let gauge = in_flight.clone();
        let router = sim::single_router(agent, endpoint.clone()).layer(axum::middleware::from_fn(
            move |req: axum::extract::Request, next: axum::middleware::Next| {
                let guard = InFlightGuard::enter(gauge.clone());
                async move {
                    let response = next.run(req).await;
                    drop(guard);
                    response
                }
            },
        ));
        runtime.spawn(async move { axum::serve(listener, router).await });
        Sim {
            endpoint,
            in_flight,
            _runtime: runtime,
        }
    }

    /// (the most requests answered at once, all requests received) so far.
    pub fn concurrency(&self) -> (usize, usize) {
        use std::sync::atomic::Ordering::SeqCst;
        (
            self.in_flight.peak.load(SeqCst),
            self.in_flight.total.load(SeqCst),
        )
    }

    pub fn healthy(name: &str, speaks: Wire) -> Sim {
        Sim::start(SimAgent::healthy(name, speaks))
    }
}

/// A loopback port with nothing listening: connections are refused. The port stays bound
/// (never listening) for the rest of the test process, so no other test's server can take it
/// meanwhile: a port let go is soon handed out again on a busy machine, and an agent meant
/// to refuse would answer as someone else.
pub fn refused_endpoint() -> String {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    let any: std::net::SocketAddr = "127.0.0.1:0".parse().unwrap();
    socket.bind(&any.into()).unwrap();
    let port = socket.local_addr().unwrap().as_socket().unwrap().port();
    // Held, not listening, until the process ends.
    std::mem::forget(socket);
    format!("http://127.0.0.1:{port}/")
}

/// `fleetdash demo` on a free loopback port, with the URL and password it printed; killed when
/// dropped.
pub struct Demo {
    pub child: Child,
    pub url: String,
    pub password: String,
}

impl Demo {
    /// Starts the demo with its state in `state_dir`, serving the built page from `dist_dir`
    /// (the built-in page without one).
    pub fn start(state_dir: &Path, dist_dir: Option<&Path>) -> Demo {
        Demo::start_with(state_dir, dist_dir, &[])
    }

    /// [`Demo::start`] with more arguments for `fleetdash demo`. `password` is what the demo
    /// printed on its password line: the password, or that it is unchanged.
    pub fn start_with(state_dir: &Path, dist_dir: Option<&Path>, args: &[&str]) -> Demo {
        use std::os::unix::process::CommandExt;
        let mut cmd = fleetdash();
        cmd.args(["demo", "--listen", "127.0.0.1:0", "--state-dir"])
            .arg(state_dir)
            .args(args);
        if let Some(dist) = dist_dir {
            cmd.arg("--dist-dir").arg(dist);
        }
        let mut child = cmd.stdout(Stdio::piped()).process_group(0).spawn().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (mut url, mut password) = (String::new(), String::new());
        for line in stdout.lines() {
            let line = line.unwrap();
            if let Some(u) = line.trim().strip_prefix("dashboard: ") {
                url = u.trim().to_string();
            }
            if let Some(p) = line.trim().strip_prefix("password: ") {
                password = p.trim().to_string();
                break;
            }
        }
        assert!(
            url.starts_with("http://127.0.0.1:"),
            "the demo printed no URL"
        );
        Demo {
            child,
            url,
            password,
        }
    }

    /// `127.0.0.1:PORT` of the dashboard.
    pub fn addr(&self) -> String {
        self.url
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_string()
    }
}

impl Drop for Demo {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A blocking GET on loopback; the body of a 200.
pub fn get(addr: std::net::SocketAddr, path: &str) -> Result<String, String> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(HANG_BUDGET)).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    let mut reply = String::new();
    s.read_to_string(&mut reply).map_err(|e| e.to_string())?;
    let (head, body) = reply.split_once("\r\n\r\n").ok_or("no header end")?;
    if !head.starts_with("HTTP/1.1 200") {
        return Err(head.lines().next().unwrap_or_default().to_string());
    }
    // Go's server chunks a long body.
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        let mut out = String::new();
        let mut rest = body;
        while let Some((size, tail)) = rest.split_once("\r\n") {
            let n = usize::from_str_radix(size.trim(), 16).map_err(|e| e.to_string())?;
            if n == 0 {
                break;
            }
            out.push_str(&tail[..n]);
            rest = &tail[n + 2..];
        }
        return Ok(out);
    }
    Ok(body.to_string())
}

//! The real Prometheus (Debian's `prometheus` package, promtool in it, installed by
//! scripts/test) on loopback for the tests that scrape fleetdash (tests/metrics.rs,
//! tests/prometheus_rules.rs): the binaries, the processes a test starts (each killed when
//! dropped), waiting for what takes passes and scrapes, and Prometheus' instant query.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

pub const PROMETHEUS: &str = "/usr/bin/prometheus";
pub const PROMTOOL: &str = "/usr/bin/promtool";

/// How long to wait for what takes several passes, scrapes and evaluations (each every
/// second): generous for a loaded 2-core machine. Not a speed bound.
pub const EVENTUALLY: Duration = Duration::from_secs(180);

/// Polls `probe` until it gives something, or fails after [`EVENTUALLY`] saying `what` and the
/// last thing seen.
pub fn eventually<T>(what: &str, probe: impl FnMut() -> Result<T, String>) -> T {
    crate::support::eventually(EVENTUALLY, what, probe)
}

/// Fails loudly when a binary the test drives is not installed.
pub fn require(path: &str) -> &str {
    assert!(
        Path::new(path).exists(),
        "{path} is missing: run scripts/test, which installs Debian's prometheus package \
         (prometheus and promtool)"
    );
    path
}

/// What a command said, stdout then stderr.
pub fn said(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A child process killed and reaped when the test ends, with what it said on stderr.
pub struct Proc {
    child: Child,
    log: Arc<Mutex<String>>,
}

impl Proc {
    /// Starts `cmd` and waits until it has said each of `wanted` (a line prefix, followed by
    /// an address) on stderr; returns the addresses in that order.
    pub fn start(mut cmd: Command, wanted: &[&str]) -> (Proc, Vec<SocketAddr>) {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
        let stderr = child.stderr.take().unwrap();
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let wanted_owned: Vec<String> = wanted.iter().map(|w| w.to_string()).collect();
        let kept = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                kept.lock().unwrap().push_str(&format!("{line}\n"));
                for (i, w) in wanted_owned.iter().enumerate() {
                    if let Some(rest) = line.strip_prefix(w.as_str()) {
                        let addr = rest
                            .trim()
                            .trim_start_matches("http://")
                            .split('/')
                            .next()
                            .unwrap()
                            .to_string();
                        let _ = tx.send((i, addr));
                    }
                }
            }
        });
        let mut proc = Proc { child, log };
        let mut found: Vec<Option<SocketAddr>> = vec![None; wanted.len()];
        while found.iter().any(Option::is_none) {
            match rx.recv_timeout(crate::support::HANG_BUDGET) {
                Ok((i, addr)) => found[i] = Some(addr.parse().unwrap()),
                Err(_) => panic!(
                    "{cmd:?} never said {wanted:?} (exited: {:?}):\n{}",
                    proc.child.try_wait().unwrap(),
                    proc.log()
                ),
            }
        }
        (proc, found.into_iter().map(Option::unwrap).collect())
    }

    /// What it said on stderr so far (nothing for one that writes a log file of its own).
    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A real Prometheus on a free loopback port with `config` as its prometheus.yml (checked by
/// promtool first), its data and log (returned) in `dir`; ready once it answers a query.
pub fn start(dir: &Path, config: &str, args: &[&str]) -> (Proc, SocketAddr, PathBuf) {
    std::fs::create_dir_all(dir).unwrap();
    let config_path = dir.join("prometheus.yml");
    std::fs::write(&config_path, config).unwrap();
    let check = Command::new(require(PROMTOOL))
        .args(["check", "config"])
        .arg(&config_path)
        .output()
        .unwrap();
    assert!(check.status.success(), "{}\n{config}", said(&check));
    let listen: SocketAddr = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let log = dir.join("prometheus.log");
    let mut cmd = Command::new(require(PROMETHEUS));
    cmd.arg(format!("--config.file={}", config_path.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address={listen}"))
        .args(args);
    let proc = Proc {
        child: crate::support::spawn_logging_to(&mut cmd, &log),
        log: Arc::new(Mutex::new(String::new())),
    };
    eventually("Prometheus answering", || {
        query(listen, "vector(1)")
            .map(|_| ())
            .map_err(|e| format!("{e}\n{}", std::fs::read_to_string(&log).unwrap_or_default()))
    });
    (proc, listen, log)
}

/// Prometheus' instant query: the result vector.
pub fn query(prometheus: SocketAddr, promql: &str) -> Result<Vec<Value>, String> {
    let q: String = url::form_urlencoded::byte_serialize(promql.as_bytes()).collect();
    let mut s = TcpStream::connect(prometheus).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(crate::support::HANG_BUDGET))
        .unwrap();
    write!(
        s,
        "GET /api/v1/query?query={q} HTTP/1.0\r\nHost: {prometheus}\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    let mut answer = String::new();
    s.read_to_string(&mut answer).map_err(|e| e.to_string())?;
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    if !head.starts_with("HTTP/1.0 200") && !head.starts_with("HTTP/1.1 200") {
        return Err(format!("{head}\n{body}"));
    }
    let v: Value = serde_json::from_str(body).map_err(|e| format!("{e}: {body}"))?;
    Ok(v["data"]["result"].as_array().cloned().unwrap_or_default())
}

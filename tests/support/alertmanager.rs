//! The real Alertmanager (Debian's `prometheus-alertmanager`, installed by scripts/test) on
//! loopback for the tests of the `alertmanager` channel: one alone, or members of a cluster
//! gossiping on loopback; its API and its own metrics read as an operator (or amtool) would.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use serde_json::Value;

pub const ALERTMANAGER: &str = "/usr/bin/prometheus-alertmanager";
pub const AMTOOL: &str = "/usr/bin/amtool";

/// Fails the test unless `tool` is installed (a test that cannot run fails).
pub fn require(tool: &str) -> &str {
    assert!(
        Path::new(tool).exists(),
        "{tool} is missing: run scripts/test, which installs Debian's prometheus-alertmanager"
    );
    tool
}

/// A free loopback port (bound and let go: nothing else here takes ports at random).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One Alertmanager, killed and reaped when dropped (or by [`Am::kill`]).
pub struct Am {
    child: Option<Child>,
    pub addr: SocketAddr,
    /// Its `--web.external-url`: every notification it sends carries it as `externalURL`,
    /// so a test can tell which member of a cluster notified.
    pub external_url: String,
    log: PathBuf,
}

impl Drop for Am {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Where a member of a cluster gossips, and the members it joins.
pub struct Gossip {
    pub listen: SocketAddr,
    pub peers: Vec<SocketAddr>,
    /// `--cluster.peer-timeout`: how long each member waits per place before it notifies
    /// what an earlier member has not.
    pub peer_timeout: &'static str,
}

impl Am {
    /// The real Alertmanager alone (no gossip port, no peers to wait for), routing every alert
    /// by `alertname` to `webhook` with resolved notifications; ready once `/-/ready` says so.
    pub fn start(dir: &Path, webhook: &url::Url) -> Am {
        let config = format!(
            "route:\n  receiver: fleet\n  group_by: [alertname]\n  group_wait: 1s\n  \
             group_interval: 1s\n  repeat_interval: 1h\n\
             receivers:\n- name: fleet\n  webhook_configs:\n  - url: {webhook}\n    \
             send_resolved: true\n"
        );
        Am::start_with(dir, &config, None)
    }

    /// The real Alertmanager on `config` (its alertmanager.yml), alone or as a member of a
    /// cluster; ready once `/-/ready` says so (a member: once its gossip has settled).
    pub fn start_with(dir: &Path, config: &str, gossip: Option<&Gossip>) -> Am {
        require(ALERTMANAGER);
        std::fs::create_dir_all(dir).unwrap();
        let file = dir.join("alertmanager.yml");
        std::fs::write(&file, config).unwrap();
        let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
        let external_url = format!("http://{addr}/");
        let log = dir.join("alertmanager.log");
        let mut cmd = Command::new(ALERTMANAGER);
        cmd.arg(format!("--config.file={}", file.display()))
            .arg(format!("--storage.path={}", dir.join("data").display()))
            .arg(format!("--web.listen-address={addr}"))
            .arg(format!("--web.external-url={external_url}"));
        match gossip {
            None => {
                cmd.arg("--cluster.listen-address=");
            }
            Some(g) => {
                cmd.arg(format!("--cluster.listen-address={}", g.listen))
                    .arg(format!("--cluster.peer-timeout={}", g.peer_timeout));
                for peer in &g.peers {
                    cmd.arg(format!("--cluster.peer={peer}"));
                }
            }
        }
        let am = Am {
            child: Some(crate::support::spawn_logging_to(&mut cmd, &log)),
            addr,
            external_url,
            log,
        };
        am.eventually("Alertmanager ready", || {
            get(am.addr, "/-/ready").map(|_| ())
        });
        if gossip.is_some() {
            am.eventually("its cluster settled", || {
                let status: Value = serde_json::from_str(&get(am.addr, "/api/v2/status")?)
                    .map_err(|e| e.to_string())?;
                (status["cluster"]["status"] == "ready")
                    .then_some(())
                    .ok_or_else(|| format!("{:#}", status["cluster"]))
            });
        }
        am
    }

    /// Kills it (SIGKILL: an Alertmanager lost, not one shut down politely).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    pub fn said(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits until `check` holds, or fails with what Alertmanager logged.
    pub fn eventually<T>(&self, what: &str, mut check: impl FnMut() -> Result<T, String>) -> T {
        let deadline = Instant::now() + crate::support::HANG_BUDGET * 2;
        loop {
            match check() {
                Ok(v) => return v,
                Err(e) if Instant::now() > deadline => {
                    panic!("{what}: never: {e}\nalertmanager said:\n{}", self.said())
                }
                Err(_) => std::thread::sleep(Duration::from_millis(200)),
            }
        }
    }

    /// Alertmanager's alerts named by fleetdash (its API, as amtool reads it): the active ones
    /// neither silenced nor inhibited, or all of them.
    pub fn fleetdash_alerts(&self) -> Result<Vec<Value>, String> {
        self.alerts("?active=true&silenced=false&inhibited=false")
    }

    pub fn alerts(&self, query: &str) -> Result<Vec<Value>, String> {
        let body = get(self.addr, &format!("/api/v2/alerts{query}"))?;
        let all: Vec<Value> = serde_json::from_str(&body).map_err(|e| format!("{e}: {body}"))?;
        Ok(all
            .into_iter()
            .filter(|a| a["labels"]["alertname"] == "FleetdashRed")
            .collect())
    }

    /// Its cluster's status (`/api/v2/status`): `name`, `peers`, `status`.
    pub fn cluster(&self) -> Result<Value, String> {
        let status: Value =
            serde_json::from_str(&get(self.addr, "/api/v2/status")?).map_err(|e| e.to_string())?;
        Ok(status["cluster"].clone())
    }

    /// The sum of one of its own metrics over every series (0 when it has none yet).
    pub fn metric(&self, name: &str) -> Result<f64, String> {
        let text = get(self.addr, "/metrics")?;
        Ok(text
            .lines()
            .filter(|l| {
                l.strip_prefix(name)
                    .is_some_and(|rest| rest.starts_with(['{', ' ']))
            })
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum())
    }

    /// POSTs alerts to its API, as a client does.
    pub fn post_alerts(&self, alerts: &Value) -> Result<(), String> {
        use std::io::{Read, Write};
        let body = alerts.to_string();
        let mut s = std::net::TcpStream::connect(self.addr).map_err(|e| e.to_string())?;
        s.set_read_timeout(Some(crate::support::HANG_BUDGET))
            .unwrap();
        write!(
            s,
            "POST /api/v2/alerts HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.addr,
            body.len()
        )
        .map_err(|e| e.to_string())?;
        let mut reply = String::new();
        s.read_to_string(&mut reply).map_err(|e| e.to_string())?;
        reply
            .starts_with("HTTP/1.1 200")
            .then_some(())
            .ok_or_else(|| reply.lines().next().unwrap_or_default().to_string())
    }
}

pub use crate::support::get;

/// The labels' `key`s of `alerts`, sorted.
pub fn keys(alerts: &[Value]) -> Vec<String> {
    let mut keys: Vec<String> = alerts
        .iter()
        .map(|a| a["labels"]["key"].as_str().unwrap_or_default().to_string())
        .collect();
    keys.sort();
    keys
}

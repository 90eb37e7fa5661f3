//! The `alertmanager` channel against the real Alertmanager (Debian's `prometheus-alertmanager`,
//! installed by scripts/test), started by the test on loopback with a route of its own that
//! notifies a local webhook receiver: `fleetdash run` sends two red hosts, Alertmanager shows
//! them in its API with fleetdash's labels, groups them by its own route into one notification,
//! keeps them firing while fleetdash sends them again, and resolves them on recovery.

mod support;

#[path = "support/receiver.rs"]
mod receiver;

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use receiver::{Mode, Receiver};
use serde_json::Value;

const ALERTMANAGER: &str = "/usr/bin/prometheus-alertmanager";

/// Alertmanager killed and reaped when the test ends.
struct Am {
    child: Child,
    addr: SocketAddr,
    log: std::path::PathBuf,
}

impl Drop for Am {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Am {
    /// The real Alertmanager on a free loopback port, clustering off, routing every alert by
    /// `alertname` to `webhook` with resolved notifications; ready once `/-/ready` says so.
    fn start(dir: &Path, webhook: &url::Url) -> Am {
        assert!(
            Path::new(ALERTMANAGER).exists(),
            "{ALERTMANAGER} is missing: run scripts/test, which installs Debian's \
             prometheus-alertmanager"
        );
        std::fs::create_dir_all(dir).unwrap();
        let config = dir.join("alertmanager.yml");
        std::fs::write(
            &config,
            format!(
                "route:\n  receiver: fleet\n  group_by: [alertname]\n  group_wait: 1s\n  \
                 group_interval: 1s\n  repeat_interval: 1h\n\
                 receivers:\n- name: fleet\n  webhook_configs:\n  - url: {webhook}\n    \
                 send_resolved: true\n"
            ),
        )
        .unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let log = dir.join("alertmanager.log");
        let child = Command::new(ALERTMANAGER)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.path={}", dir.join("data").display()))
            .arg(format!("--web.listen-address={addr}"))
            // One instance: no gossip port, no peers to wait for.
            .arg("--cluster.listen-address=")
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&log).unwrap())
            .stderr(std::fs::File::create(&log).unwrap().try_clone().unwrap())
            .spawn()
            .unwrap();
        let am = Am { child, addr, log };
        am.eventually("Alertmanager ready", || {
            get(am.addr, "/-/ready").map(|_| ())
        });
        am
    }

    fn said(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits until `check` holds, or fails with what Alertmanager logged.
    fn eventually<T>(&self, what: &str, mut check: impl FnMut() -> Result<T, String>) -> T {
        let deadline = Instant::now() + support::HANG_BUDGET * 2;
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

    /// Alertmanager's active alerts named by fleetdash (its API, as amtool reads it).
    fn fleetdash_alerts(&self) -> Result<Vec<Value>, String> {
        let body = get(
            self.addr,
            "/api/v2/alerts?active=true&silenced=false&inhibited=false",
        )?;
        let all: Vec<Value> = serde_json::from_str(&body).map_err(|e| format!("{e}: {body}"))?;
        Ok(all
            .into_iter()
            .filter(|a| a["labels"]["alertname"] == "FleetdashRed")
            .collect())
    }
}

/// A blocking GET on loopback; the body of a 200.
fn get(addr: SocketAddr, path: &str) -> Result<String, String> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(support::HANG_BUDGET)).unwrap();
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

/// The webhook notifications Alertmanager sent the receiver.
fn notifications(rx: &Receiver) -> Vec<Value> {
    rx.got()
        .iter()
        .filter(|g| g.path == "/am")
        .map(|g| serde_json::from_slice(&g.body).unwrap())
        .collect()
}

fn keys(alerts: &[Value]) -> Vec<String> {
    let mut keys: Vec<String> = alerts
        .iter()
        .map(|a| a["labels"]["key"].as_str().unwrap_or_default().to_string())
        .collect();
    keys.sort();
    keys
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleetdash_run_fires_groups_keeps_and_resolves_alerts_in_a_real_alertmanager() {
    let rx = Receiver::start(Mode::Ok).await;
    let scratch = support::Scratch::new();
    // Resent every second, each ending 60 s later: the test sees endsAt move on while fleetdash
    // runs (the shipped 60 s / 240 s would take minutes).
    let rules = support::quick_grouping_rules()
        .replace("resend_seconds: 60", "resend_seconds: 1")
        .replace("ends_after_seconds: 240", "ends_after_seconds: 60");
    assert!(
        rules.contains("resend_seconds: 1"),
        "rules.yaml has no alertmanager group"
    );
    std::fs::write(scratch.path().join("rules.yaml"), rules).unwrap();
    let am = tokio::task::block_in_place(|| Am::start(&scratch.path().join("am"), &rx.url("/am")));
    // Two hosts whose disk path does not exist yet: red, each for its own reason.
    let disk = |name: &str| scratch.path().join(format!("disk-{name}"));
    let config = scratch.config(&format!(
        "[cadence]\nsystems = \"1s\"\n\n\
         [alerts]\ndashboard_url = \"https://fleet.example/\"\n\n\
         [[alerts.channels]]\ntype = \"alertmanager\"\nname = \"am\"\nurl = \"http://{am}/\"\n\n\
         [[hosts]]\nname = \"here\"\nsource = \"local\"\ndisk_path = \"{here}\"\n\n\
         [[hosts]]\nname = \"there\"\nsource = \"local\"\ndisk_path = \"{there}\"\n",
        am = am.addr,
        here = disk("here").display(),
        there = disk("there").display(),
    ));
    let started = Instant::now();
    let mut run = support::fleetdash()
        .args(["run", "--config"])
        .arg(&config)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(scratch.path().join("run.log")).unwrap())
        .spawn()
        .unwrap();
    let ran = scratch.path().join("run.log");
    let run_said = || std::fs::read_to_string(&ran).unwrap_or_default();

    // Both in Alertmanager's API, with fleetdash's labels and words.
    let firing = tokio::task::block_in_place(|| {
        am.eventually("both hosts firing in Alertmanager", || {
            let alerts = am.fleetdash_alerts()?;
            (keys(&alerts) == ["host:here", "host:there"])
                .then_some(alerts.clone())
                .ok_or_else(|| format!("{alerts:?}\nfleetdash said:\n{}", run_said()))
        })
    });
    let in_am = started.elapsed();
    let here = firing
        .iter()
        .find(|a| a["labels"]["key"] == "host:here")
        .unwrap();
    assert_eq!(here["labels"]["kind"], "host");
    assert_eq!(here["labels"]["name"], "here");
    assert_eq!(here["labels"]["band"], "red");
    assert_eq!(here["labels"]["section"], "systems");
    assert_eq!(here["status"]["state"], "active");
    let reason = here["annotations"]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("statvfs") && reason.contains("disk-here"),
        "{here:#}"
    );
    assert!(
        here["annotations"]["summary"]
            .as_str()
            .is_some_and(|s| s.starts_with("✖ fail · host here")),
        "{here:#}"
    );
    assert_eq!(here["generatorURL"], "https://fleet.example/");

    // Alertmanager grouped them by its own route (alertname): one notification, both alerts.
    let grouped = tokio::task::block_in_place(|| {
        am.eventually("Alertmanager's notification of the group", || {
            notifications(&rx)
                .into_iter()
                .find(|n| n["status"] == "firing")
                .ok_or_else(|| "none yet".to_string())
        })
    });
    let notified = started.elapsed();
    assert_eq!(grouped["groupLabels"]["alertname"], "FleetdashRed");
    let alerts = grouped["alerts"].as_array().unwrap();
    assert_eq!(keys(alerts), ["host:here", "host:there"], "{grouped:#}");

    // While red, fleetdash sends them again: their end moves on, so they never lapse.
    let first_end = here["endsAt"].as_str().unwrap().to_string();
    tokio::task::block_in_place(|| {
        am.eventually("endsAt renewed by a resend", || {
            let alerts = am.fleetdash_alerts()?;
            let end = alerts
                .iter()
                .find(|a| a["labels"]["key"] == "host:here")
                .and_then(|a| a["endsAt"].as_str())
                .unwrap_or_default()
                .to_string();
            // RFC 3339 in UTC compares as text.
            (end > first_end)
                .then_some(())
                .ok_or_else(|| format!("still {end} (first {first_end})"))
        })
    });

    // Recovery: the disk paths appear; the Recovered resolves both in Alertmanager.
    std::fs::create_dir_all(disk("here")).unwrap();
    std::fs::create_dir_all(disk("there")).unwrap();
    let healed = Instant::now();
    tokio::task::block_in_place(|| {
        am.eventually("no fleetdash alert active in Alertmanager", || {
            let alerts = am.fleetdash_alerts()?;
            alerts
                .is_empty()
                .then_some(())
                .ok_or_else(|| format!("{alerts:?}"))
        })
    });
    let resolved = tokio::task::block_in_place(|| {
        am.eventually("Alertmanager's resolved notification", || {
            notifications(&rx)
                .into_iter()
                .find(|n| n["status"] == "resolved")
                .ok_or_else(|| "none yet".to_string())
        })
    });
    let resolved_after = healed.elapsed();
    let alerts = resolved["alerts"].as_array().unwrap();
    assert_eq!(keys(alerts), ["host:here", "host:there"], "{resolved:#}");
    assert!(
        alerts.iter().all(|a| a["status"] == "resolved"),
        "{resolved:#}"
    );
    let _ = run.kill();
    let _ = run.wait();
    eprintln!(
        "alertmanager round trip: both reds in its API {in_am:?} after fleetdash run started \
         (2 red passes 1 s apart, group_wait 1 s), its grouped notification at {notified:?}; \
         resolved notification {resolved_after:?} after the disks appeared (2 green passes, \
         group_wait 1 s, Alertmanager's group_interval 1 s)"
    );
    assert!(
        !run_said().contains("not sent again to alertmanager"),
        "{}",
        run_said()
    );
}

//! The demo's Systems panel: this machine as the hub (real RAM, disk, tunnels to the demo's own
//! agents, cron records, a real git vault) and two simulated remote hosts that speak the
//! Prometheus node_exporter text format, as LAB and prod would.
//!
//! Each host shows a different state an operator must read at a glance: the hub has a late
//! cron and a dead tunnel, LAB is healthy, prod has a failed unit and a cron whose last run
//! failed. The backups folder holds a backup from last night.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result};
use axum::Router;
use axum::routing::get;
use chrono::{DateTime, Utc};
use tokio_util::sync::CancellationToken;

use crate::collect::systems::cron::Record;

/// A remote host as its node_exporter describes it.
#[derive(Debug, Clone)]
pub struct SimExporter {
    pub mem_total_bytes: u64,
    pub mem_available_bytes: u64,
    pub root_avail_bytes: u64,
    /// systemd units and their state (`active`, `failed`, `inactive`).
    pub units: Vec<(String, &'static str)>,
    /// Cron records, as `fleetdash cron-run --textfile-dir` leaves them for the textfile
    /// collector.
    pub crons: Vec<Record>,
}

const GB: u64 = 1_000_000_000;
const STATES: [&str; 5] = ["active", "activating", "deactivating", "failed", "inactive"];

impl SimExporter {
    /// The `/metrics` body, in the text exposition format (version 0.0.4).
    pub fn render(&self) -> String {
        let mut out = String::new();
        let mut gauge = |name: &str, help: &str, samples: &[(String, f64)]| {
            out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} gauge\n"));
            for (labels, value) in samples {
                out.push_str(&format!("{name}{labels} {value}\n"));
            }
        };
        gauge(
            "node_memory_MemTotal_bytes",
            "Memory information field MemTotal_bytes.",
            &[(String::new(), self.mem_total_bytes as f64)],
        );
        gauge(
            "node_memory_MemAvailable_bytes",
            "Memory information field MemAvailable_bytes.",
            &[(String::new(), self.mem_available_bytes as f64)],
        );
        gauge(
            "node_filesystem_avail_bytes",
            "Filesystem space available to non-root users in bytes.",
            &[
                (
                    r#"{device="/dev/sda1",fstype="ext4",mountpoint="/"}"#.to_string(),
                    self.root_avail_bytes as f64,
                ),
                (
                    r#"{device="tmpfs",fstype="tmpfs",mountpoint="/run"}"#.to_string(),
                    (GB / 2) as f64,
                ),
            ],
        );
        let mut units = Vec::new();
        for (unit, state) in &self.units {
            for s in STATES {
                let value = if s == *state { 1.0 } else { 0.0 };
                units.push((
                    format!(r#"{{name="{unit}.service",state="{s}",type="simple"}}"#),
                    value,
                ));
            }
        }
        gauge("node_systemd_unit_state", "Systemd unit", &units);
        fn secs(t: Option<DateTime<Utc>>) -> Option<f64> {
            t.map(|t| t.timestamp() as f64)
        }
        type Field = fn(&Record) -> Option<f64>;
        let fields: [(&str, Field); 4] = [
            ("fleetdash_cron_last_start_timestamp_seconds", |r| {
                secs(r.last_start)
            }),
            ("fleetdash_cron_last_finish_timestamp_seconds", |r| {
                secs(r.last_finish)
            }),
            ("fleetdash_cron_last_success_timestamp_seconds", |r| {
                secs(r.last_success)
            }),
            ("fleetdash_cron_last_exit_code", |r| {
                r.last_exit_code.map(f64::from)
            }),
        ];
        for (name, field) in fields {
            let samples: Vec<(String, f64)> = self
                .crons
                .iter()
                .filter_map(|r| Some((format!(r#"{{cron="{}"}}"#, r.name), field(r)?)))
                .collect();
            if !samples.is_empty() {
                gauge(name, "Written by fleetdash cron-run.", &samples);
            }
        }
        out
    }
}

/// A finished run of `name`: it started `ago` before now, took `took`, exited `exit_code`.
fn finished_run(name: &str, ago: Duration, took: Duration, exit_code: i32) -> Record {
    let start = Utc::now() - ago;
    let finish = start + took;
    Record {
        name: name.into(),
        last_start: Some(start),
        last_finish: Some(finish),
        last_exit_code: Some(exit_code),
        last_duration_ms: Some(took.as_millis() as u64),
        last_success: Some(if exit_code == 0 {
            finish
        } else {
            // The success before the failure: one period earlier.
            finish - chrono::Duration::hours(24)
        }),
    }
}

const MIN: u64 = 60;
const HOUR: u64 = 60 * MIN;

fn lab() -> SimExporter {
    SimExporter {
        mem_total_bytes: 64 * GB,
        mem_available_bytes: 41 * GB,
        root_avail_bytes: 612 * GB,
        units: vec![
            ("hermes-gateway".into(), "active"),
            ("autossh-laptop".into(), "active"),
            ("node-exporter".into(), "active"),
        ],
        crons: vec![finished_run(
            "kanban-projection",
            Duration::from_secs(12 * MIN),
            Duration::from_secs(4),
            0,
        )],
    }
}

fn prod() -> SimExporter {
    SimExporter {
        mem_total_bytes: 8 * GB,
        mem_available_bytes: GB,
        root_avail_bytes: 9 * GB,
        units: vec![
            ("nginx".into(), "active"),
            ("hermes-gateway".into(), "failed"),
            ("autossh-lab".into(), "active"),
        ],
        crons: vec![
            finished_run(
                "db-dump",
                Duration::from_secs(3 * HOUR),
                Duration::from_secs(40),
                2,
            ),
            finished_run(
                "cert-renew",
                Duration::from_secs(6 * HOUR),
                Duration::from_secs(9),
                0,
            ),
        ],
    }
}

/// Serves `host` on a loopback port until `shutdown`; returns its `/metrics` URL. Public for the
/// `systems_pass` bench, which serves many of them.
pub async fn serve_exporter(host: SimExporter, shutdown: CancellationToken) -> Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/metrics", listener.local_addr()?);
    let router = Router::new().route(
        "/metrics",
        get(move || {
            let body = host.render();
            async move { ([("content-type", "text/plain; version=0.0.4")], body) }
        }),
    );
    tokio::spawn(async move {
        let _ = axum::serve(listener, router)
            .with_graceful_shutdown(async move { shutdown.cancelled().await })
            .await;
    });
    Ok(url)
}

/// A git vault in sync with its remote: a bare repository and a clone with one pushed commit.
/// Without git on the machine the demo shows the vault check's error instead.
fn make_vault(state_dir: &Path) -> PathBuf {
    let remote = state_dir.join("vault-remote.git");
    let clone = state_dir.join("notes");
    if clone.join(".git").is_dir() {
        // A restart on the same state directory keeps the vault it made the first time.
        return clone;
    }
    let git = |dir: &Path, args: &[&str]| {
        Command::new("git")
            .current_dir(dir)
            .args([
                "-c",
                "user.name=fleetdash demo",
                "-c",
                "user.email=demo@localhost",
            ])
            .args(["-c", "init.defaultBranch=main"])
            .args(args)
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false)
    };
    let ok = git(state_dir, &["init", "-q", "--bare", "vault-remote.git"])
        && git(state_dir, &["clone", "-q", "vault-remote.git", "notes"])
        && std::fs::write(clone.join("README.md"), "# Notes\n").is_ok()
        && git(&clone, &["add", "README.md"])
        && git(&clone, &["commit", "-q", "-m", "notes"])
        && git(&clone, &["push", "-q", "origin", "HEAD:main"]);
    if !ok {
        tracing::warn!("demo: git could not build the demo vault; its parity check will say why");
    }
    let _ = remote;
    clone
}

fn set_age(path: &Path, age: Duration) -> Result<()> {
    let file = std::fs::File::options()
        .write(true)
        .open(path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    file.set_modified(SystemTime::now() - age)
        .with_context(|| format!("cannot set the time of {}", path.display()))
}

/// Starts the simulated exporters, writes the hub's cron records, stamp, vault and backups,
/// and returns the `[[hosts]]` and `[backups]` blocks of the demo's config.
///
/// `up_endpoint` and `down_endpoint` are agents of the demo fleet: a tunnel to each.
pub async fn start(
    state_dir: &Path,
    records_dir: &Path,
    up_endpoint: &str,
    down_endpoint: &str,
    shutdown: CancellationToken,
) -> Result<String> {
    let lab_url = serve_exporter(lab(), shutdown.clone()).await?;
    let prod_url = serve_exporter(prod(), shutdown).await?;

    std::fs::create_dir_all(records_dir)
        .with_context(|| format!("cannot create {}", records_dir.display()))?;
    let record = finished_run(
        "kanban-projection",
        Duration::from_secs(7 * MIN),
        Duration::from_secs(3),
        0,
    );
    let path = records_dir.join("kanban-projection.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&record)?)
        .with_context(|| format!("cannot write {}", path.display()))?;
    // The vault sync touches a stamp; it is 50 min old against a 30 min period: late.
    let stamp = state_dir.join("vault-sync.stamp");
    std::fs::write(&stamp, "")?;
    set_age(&stamp, Duration::from_secs(50 * MIN))?;
    let vault = make_vault(state_dir);

    let backups = state_dir.join("backups");
    std::fs::create_dir_all(&backups)?;
    for (name, age_h) in [("vault-2026-11-28.tar.gz", 44), ("vault-latest.tar.gz", 20)] {
        let file = backups.join(name);
        std::fs::write(&file, b"demo backup")?;
        set_age(&file, Duration::from_secs(age_h * HOUR))?;
    }

    let host_of = |endpoint: &str| {
        endpoint
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_string()
    };
    Ok(format!(
        r#"
[[hosts]]
name = "laptop"
source = "local"
disk_path = "/"
vault = {{ path = "{vault}", remote = "origin", branch = "main" }}

[[hosts.tunnels]]
name = "lab-heart (min)"
address = "{up}"

[[hosts.tunnels]]
name = "lab-docs (lyra)"
address = "{down}"

[[hosts.crons]]
name = "kanban-projection"
period = "30m"
grace = "10m"

[[hosts.crons]]
name = "vault-sync"
period = "30m"
grace = "30m"
stamp = "{stamp}"

[[hosts]]
name = "LAB"
source = "node_exporter"
url = "{lab_url}"
services = ["hermes-gateway", "autossh-laptop"]

[[hosts.crons]]
name = "kanban-projection"
period = "30m"
grace = "10m"

[[hosts]]
name = "prod"
source = "node_exporter"
url = "{prod_url}"
services = ["nginx", "hermes-gateway", "autossh-lab"]

[[hosts.crons]]
name = "db-dump"
period = "1d"
grace = "2h"

[[hosts.crons]]
name = "cert-renew"
period = "1d"
grace = "1h"

[backups]
name = "gdrive"
dir = "{backups}"
"#,
        vault = vault.display(),
        up = host_of(up_endpoint),
        down = host_of(down_endpoint),
        stamp = stamp.display(),
        backups = backups.display(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_simulated_exporter_speaks_the_text_format() {
        let text = prod().render();
        assert!(text.contains("# TYPE node_memory_MemTotal_bytes gauge\n"));
        assert!(text.contains("node_memory_MemTotal_bytes 8000000000\n"));
        assert!(text.contains(
            "node_systemd_unit_state{name=\"hermes-gateway.service\",state=\"failed\",type=\"simple\"} 1\n"
        ));
        assert!(text.contains("fleetdash_cron_last_exit_code{cron=\"db-dump\"} 2\n"));
        // Every sample line is `name{labels} value`, every family has HELP and TYPE.
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let value = line.rsplit_once(' ').unwrap().1;
            assert!(value.parse::<f64>().is_ok(), "{line}");
        }
    }
}

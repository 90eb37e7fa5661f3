//! The systems collector (C3): one row per configured host, each check on its own.
//!
//! A host's *source* reads raw facts ([`HostFacts`]): [`local`] reads this machine directly,
//! [`node_exporter`] scrapes a Prometheus exporter, [`ssh`] runs a fixed set of read-only
//! commands ([`command`]) on the host. Then one judge, the same for every source, turns facts
//! into the snapshot's [`System`] row: crons by the Healthchecks model ([`cron`]), the vault
//! by git parity ([`vault`]). Every fact fails on its own, so an unreadable disk never hides
//! the RAM, and a dead host is a red row with its reason, never a missing one.
//!
//! Tunnels are probed by their own collector on their own cadence (`collect::tunnels`) and
//! merged into these rows by `snapshot::apply`.

pub mod certs;
pub mod command;
pub mod cron;
pub mod local;
pub mod node_exporter;
pub mod prom_text;
pub mod ssh;
pub mod vault;

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use fleetdash_model::{Asc, Band, CronState, NamedCheck, Probe, System};
use futures::StreamExt;

use super::{Collector, Findings, SectionData};
use crate::clock::{Clock, Clocked};
use crate::config::{Config, HostConfig, HostSource, ProbeLimits};
use crate::net::{ProbeClient, ProbeFailure};

const BYTES_PER_GB: f64 = 1_000_000_000.0;

/// Used and total memory, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ram {
    pub used_bytes: u64,
    pub total_bytes: u64,
}

/// A systemd unit's state in systemd's own word (`active`, `failed`, `inactive`, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitState(pub String);

impl UnitState {
    /// "reloading" and "refreshing" are active units at work: systemctl exits 0 for them.
    pub fn is_active(&self) -> bool {
        matches!(self.0.as_str(), "active" | "reloading" | "refreshing")
    }
}

/// Everything one source could read about one host, each fact failing on its own.
#[derive(Debug, Clone)]
pub struct HostFacts {
    pub ram: Result<Ram, ProbeFailure>,
    pub disk_free_bytes: Result<u64, ProbeFailure>,
    /// One per configured service, in config order.
    pub services: Vec<Result<UnitState, ProbeFailure>>,
    /// One per configured cron, in config order.
    pub crons: Vec<Result<cron::Evidence, ProbeFailure>>,
    /// `None` when the host has no vault configured.
    pub vault: Option<Result<vault::Parity, ProbeFailure>>,
}

impl HostFacts {
    /// Every fact failed for the same reason (the host could not be reached at all).
    pub fn unreachable(host: &HostConfig, failure: ProbeFailure) -> HostFacts {
        HostFacts {
            ram: Err(failure.clone()),
            disk_free_bytes: Err(failure.clone()),
            services: vec![Err(failure.clone()); host.services.len()],
            crons: vec![Err(failure.clone()); host.crons.len()],
            vault: host.vault.as_ref().map(|_| Err(failure)),
        }
    }
}

/// Reads one host's facts. One implementation per kind of [`HostSource`].
#[async_trait]
pub trait FactSource: Send + Sync {
    async fn read(&self, host: &HostConfig) -> HostFacts;
}

pub struct SystemsCollector {
    hosts: Vec<HostConfig>,
    limits: ProbeLimits,
    cadence: Duration,
    client: ProbeClient,
    /// The certificates watched as checks of the hosts' rows (issue 44), when given.
    certs: Option<certs::CertWatch>,
}

impl SystemsCollector {
    pub fn new(config: &Config) -> Self {
        SystemsCollector {
            hosts: config.hosts.clone(),
            limits: config.probe.clone(),
            cadence: config.cadence.systems,
            client: ProbeClient::new(config.probe.timeout, config.probe.max_response_bytes),
            certs: None,
        }
    }

    /// Watches TLS certificates too (`fleetdash run` and `collect`): each a check of a row.
    pub fn with_certificates(mut self, watch: certs::CertWatch) -> Self {
        self.certs = Some(watch);
        self
    }

    /// The certificate checks of host `i`, added to its row's services (serve's and the https
    /// agents' on the first local host; an https node_exporter's on its own row).
    async fn certificates(&self, i: usize, row: &mut System) {
        let Some(watch) = &self.certs else {
            return;
        };
        let host = &self.hosts[i];
        let checked_at = row.checked_at;
        let mut added = Vec::new();
        if certs::local_row(&self.hosts) == Some(i) && watch.watches_local() {
            added = watch.local(checked_at).await;
        }
        if let HostSource::NodeExporter { url } = &host.source
            && url.scheme() == "https"
        {
            added.push(watch.node_exporter(url, checked_at).await);
        }
        if !added.is_empty() {
            row.services.extend(added);
            rejudge(row);
        }
    }

    async fn read(&self, host: &HostConfig) -> HostFacts {
        match &host.source {
            HostSource::Local => local::LocalSource::new(&self.limits).read(host).await,
            HostSource::NodeExporter { url } => {
                node_exporter::NodeExporterSource::new(url.clone(), self.client.clone())
                    .read(host)
                    .await
            }
            HostSource::Ssh(target) => {
                ssh::SshSource::new(target.clone(), &self.limits)
                    .read(host)
                    .await
            }
        }
    }

    /// Every host, at most `probe.concurrency` at a time, in config order.
    ///
    /// Each host may start a dozen ssh or git processes: unbounded, 200 hosts would be
    /// thousands of processes at once. Unordered, then sorted, as the agents pass does, so a
    /// hung host holds one slot for its timeout, not a whole window.
    pub async fn probe_all(&self, clock: &Clock) -> Vec<System> {
        let mut rows: Vec<(usize, System)> = futures::stream::iter(0..self.hosts.len())
            .map(|i| async move {
                let host = &self.hosts[i];
                let checked_at = clock.now().wall;
                let facts = self.read(host).await;
                let mut row = judge(host, facts, checked_at, &clock.clocked());
                self.certificates(i, &mut row).await;
                (i, row)
            })
            .buffer_unordered(self.limits.concurrency)
            .collect()
            .await;
        rows.sort_unstable_by_key(|(i, _)| *i);
        rows.into_iter().map(|(_, row)| row).collect()
    }
}

#[async_trait]
impl Collector for SystemsCollector {
    fn cadence(&self) -> Duration {
        self.cadence
    }

    async fn collect(&self, clock: &Clock) -> Findings {
        SectionData::Systems(self.probe_all(clock).await).into()
    }
}

fn gb(bytes: u64) -> f64 {
    // Two decimals are plenty for a phone, and keep the JSON short.
    (bytes as f64 / BYTES_PER_GB * 100.0).round() / 100.0
}

fn probe_of<T, U>(r: &Result<T, ProbeFailure>, f: impl FnOnce(&T) -> U) -> Probe<U> {
    match r {
        Ok(v) => Probe::Value(f(v)),
        Err(e) => Probe::Error(e.reason.clone()),
    }
}

/// Turns a host's facts into its row. `checked_at` is when the read started; `at` judges ages.
pub fn judge(
    host: &HostConfig,
    facts: HostFacts,
    checked_at: DateTime<Utc>,
    at: &Clocked,
) -> System {
    let services = host
        .services
        .iter()
        .zip(&facts.services)
        .map(|(name, state)| NamedCheck {
            name: name.clone(),
            ok: probe_of(state, UnitState::is_active),
            reason: match state {
                Ok(s) if s.is_active() => None,
                Ok(s) => Some(s.0.clone()),
                Err(e) => Some(e.reason.clone()),
            },
            uptime_24h_pct: None,
            checked_at,
            stale: state.is_err(),
        })
        .collect();
    let crons = host
        .crons
        .iter()
        .zip(facts.crons)
        .map(|(cfg, evidence)| cron::judge(cfg, &host.name, evidence, checked_at, at))
        .collect();
    let mut row = System {
        host: host.name.clone(),
        source: host.source.kind().to_string(),
        ram_used_gb: probe_of(&facts.ram, |r| gb(r.used_bytes)),
        ram_total_gb: probe_of(&facts.ram, |r| gb(r.total_bytes)),
        disk_free_gb: probe_of(&facts.disk_free_bytes, |b| gb(*b)),
        services,
        // The tunnel probes fill these in by name (`snapshot::apply`); until a probe has
        // answered, a configured tunnel says it was not probed yet.
        tunnels: host
            .tunnels
            .iter()
            .map(|t| NamedCheck {
                name: t.name.clone(),
                ok: Probe::not_collected(),
                reason: None,
                uptime_24h_pct: None,
                checked_at,
                stale: true,
            })
            .collect(),
        crons,
        vault_parity: match &facts.vault {
            None => Probe::Unknown,
            Some(Ok(p)) => Probe::Value(p.in_sync()),
            Some(Err(e)) => Probe::Error(e.reason.clone()),
        },
        vault_reason: match &facts.vault {
            Some(Ok(p)) => p.reason(),
            _ => None,
        },
        band: Band::Green,
        status: Asc::SUCCESS,
        reason: None,
        history: None,
        checked_at,
        stale: false,
    };
    rejudge(&mut row);
    // A source that failed as a whole (host unreachable, auth refused) names the row with its
    // own code rather than the generic one of its first failed fact.
    if let (Err(ram), Err(disk)) = (&facts.ram, &facts.disk_free_bytes)
        && ram.reason == disk.reason
    {
        row.stale = true;
        row.status = ram.asc.clone();
    }
    row
}

/// Recomputes a row's band, status and reason from its own fields. Run by [`judge`], and again
/// when tunnels are merged into the row.
pub fn rejudge(row: &mut System) {
    // A host whose source failed as a whole (every fact has the same error) keeps the code
    // `judge` gave it from the failure itself (PERMISSION_DENIED, TIMEOUT...), through merges.
    let source_failed = row.stale
        && matches!(
            (&row.ram_total_gb, &row.disk_free_gb),
            (Probe::Error(a), Probe::Error(b)) if a == b
        );
    let source_status = (source_failed && !row.status.is_success()).then(|| row.status.clone());
    let mut problems: Vec<(Band, Asc, String)> = Vec::new();
    let mut failed = |what: String, probe_reason: Option<&str>, asc: Asc| {
        if let Some(r) = probe_reason {
            problems.push((Band::Red, asc, format!("{what}: {r}")));
        }
    };
    failed(
        "RAM".into(),
        row.ram_total_gb.error_reason(),
        Asc::DEPENDENCY_UNAVAILABLE,
    );
    failed(
        "disk".into(),
        row.disk_free_gb.error_reason(),
        Asc::DEPENDENCY_UNAVAILABLE,
    );
    failed(
        "vault".into(),
        row.vault_parity.error_reason(),
        Asc::DEPENDENCY_UNAVAILABLE,
    );
    if row.vault_parity == Probe::Value(false) {
        let why = row
            .vault_reason
            .clone()
            .unwrap_or_else(|| "out of sync".into());
        problems.push((
            Band::Red,
            Asc::INTEGRITY_CHECK_FAILED,
            format!("vault: {why}"),
        ));
    }
    for (kind, list) in [("service", &row.services), ("tunnel", &row.tunnels)] {
        for c in list {
            if let (Probe::Value(true), false, Some(why)) = (&c.ok, c.stale, &c.reason) {
                // Ok with a reason: ok for now, with a caveat (a certificate inside its
                // renewal window, `certs`).
                problems.push((
                    Band::Amber,
                    Asc::SUCCESS_WITH_WARNINGS,
                    format!("{kind} {}: {why}", c.name),
                ));
            } else if !matches!(c.ok, Probe::Value(true)) || c.stale {
                let why = match (&c.reason, &c.ok) {
                    (Some(r), _) => r.clone(),
                    (None, Probe::Error(e)) => format!("error: {e}"),
                    (None, _) => "down".into(),
                };
                problems.push((
                    Band::Red,
                    Asc::DEPENDENCY_UNAVAILABLE,
                    format!("{kind} {}: {why}", c.name),
                ));
            }
        }
    }
    for c in &row.crons {
        if c.state != CronState::Up {
            let why = c.reason.clone().unwrap_or_else(|| "not up".into());
            let asc = if c.state == CronState::Late {
                Asc::SUCCESS_WITH_WARNINGS
            } else {
                Asc::TIMEOUT
            };
            problems.push((c.state.band(), asc, format!("cron {}: {why}", c.name)));
        }
    }
    // Red first; the worst names the row's code.
    problems.sort_by_key(|p| std::cmp::Reverse(p.0));
    match problems.first() {
        None => {
            row.band = Band::Green;
            row.status = Asc::SUCCESS;
            row.reason = None;
        }
        Some((band, asc, _)) => {
            row.band = *band;
            row.status = asc.clone();
            let shown: Vec<&str> = problems.iter().take(3).map(|p| p.2.as_str()).collect();
            let more = problems.len().saturating_sub(3);
            let mut reason = shown.join("; ");
            if more > 0 {
                reason.push_str(&format!("; and {more} more"));
            }
            row.reason = Some(reason);
        }
    }
    if let Some(status) = source_status {
        row.status = status;
    }
}

//! Tunnel probes (spec §7.2): each configured loopback forward is probed by a TCP connect with
//! a deadline, on its own cadence (2 min by default, faster than the host probes). A refused
//! connection and a silent one are both down, each with its own reason and code.
//!
//! The result is merged into the hosts' rows by `snapshot::apply`.

use std::time::Duration;

use async_trait::async_trait;
use chrono::Utc;
use fleetdash_model::{Asc, NamedCheck, Probe};

use super::{Collector, Findings, SectionData};
use crate::clock::Clock;
use crate::config::{Config, HostConfig, TunnelConfig};
use crate::net::ProbeFailure;

/// The tunnels of one host, in config order.
#[derive(Debug, Clone, PartialEq)]
pub struct HostTunnels {
    pub host: String,
    pub source: String,
    pub tunnels: Vec<NamedCheck>,
}

pub struct TunnelsCollector {
    hosts: Vec<HostConfig>,
    timeout: Duration,
    cadence: Duration,
}

impl TunnelsCollector {
    pub fn new(config: &Config) -> Self {
        TunnelsCollector {
            hosts: config
                .hosts
                .iter()
                .filter(|h| !h.tunnels.is_empty())
                .cloned()
                .collect(),
            timeout: config.probe.timeout,
            cadence: config.cadence.tunnels,
        }
    }

    /// Every tunnel of every host, concurrently.
    pub async fn probe_all(&self) -> Vec<HostTunnels> {
        let hosts = self.hosts.iter().map(|host| async move {
            let checks = host.tunnels.iter().map(|t| self.probe(t));
            HostTunnels {
                host: host.name.clone(),
                source: host.source.kind().to_string(),
                tunnels: futures::future::join_all(checks).await,
            }
        });
        futures::future::join_all(hosts).await
    }

    async fn probe(&self, tunnel: &TunnelConfig) -> NamedCheck {
        let checked_at = Utc::now();
        let result = connect(&tunnel.address, self.timeout).await;
        let ok = match &result {
            Ok(()) => Probe::Value(true),
            // A refusal is an answer: the tunnel is down, and that is known for sure.
            Err(f) if f.asc == Asc::DEPENDENCY_UNAVAILABLE => Probe::Value(false),
            Err(f) => Probe::Error(f.reason.clone()),
        };
        NamedCheck {
            name: tunnel.name.clone(),
            // No answer at all: whether the tunnel is up is not known, only that it failed.
            stale: ok.is_error(),
            ok,
            reason: result.err().map(|f| f.reason),
            uptime_24h_pct: None,
            checked_at,
        }
    }
}

/// One TCP connect to `address` within `timeout`; the connection is closed at once.
pub async fn connect(address: &str, timeout: Duration) -> Result<(), ProbeFailure> {
    match tokio::time::timeout(timeout, tokio::net::TcpStream::connect(address)).await {
        Ok(Ok(_stream)) => Ok(()),
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => Err(ProbeFailure::new(
            Asc::DEPENDENCY_UNAVAILABLE,
            format!("{address}: connection refused (nothing listens: is the tunnel running?)"),
        )),
        // Only a refusal is a certain "down"; no route, a failed lookup and the like say only
        // that the probe failed.
        Ok(Err(e)) => Err(ProbeFailure::new(
            Asc::RETRYABLE_ERROR,
            format!("{address}: {e}"),
        )),
        Err(_) => Err(ProbeFailure::new(
            Asc::TIMEOUT,
            format!(
                "{address}: no answer within {} (blackholed or hung)",
                humantime::format_duration(timeout)
            ),
        )),
    }
}

#[async_trait]
impl Collector for TunnelsCollector {
    fn cadence(&self) -> Duration {
        self.cadence
    }

    async fn collect(&self, _clock: &Clock) -> Findings {
        SectionData::Tunnels(self.probe_all().await).into()
    }
}

//! The certificates Systems watches (issue 44), each a check of its own on a host's row, in
//! its list of services, refreshed at every systems pass:
//!
//! - on the host fleetdash runs on (the first `local` host): `certificate serve`, serve's own
//!   (`[serve] tls_cert`, read from its file: no network), then `certificate agent <name>` for
//!   each `https` agent (one handshake per address, however many agents share it);
//! - on an `https` node_exporter host: `certificate node_exporter`, the one its URL presents.
//!
//! A certificate inside the rules' renewal window is ok with a reason (`expiring, ...`), which
//! every reader of a check takes as amber; past its end or before its beginning it is not ok
//! (`expired, ...`, `not-yet-valid, ...`), red; a handshake or a file that fails is red with
//! its reason. Whether a peer's certificate verifies is the doctor's to say: an agent whose
//! certificate the probes refuse is red on its own row already.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use chrono::{DateTime, Utc};
use fleetdash_model::{Band, NamedCheck, Probe};

use crate::certs::{self, Validity};
use crate::config::{Config, HostSource, Rules};
use crate::net::ProbeFailure;

/// The check of serve's own certificate.
pub const SERVE: &str = "certificate serve";
/// The check of an `https` node_exporter's certificate, on its host's row.
pub const NODE_EXPORTER: &str = "certificate node_exporter";

/// The check of agent `name`'s certificate.
pub fn agent_check(name: &str) -> String {
    format!("certificate agent {name}")
}

/// What to watch, from the config; the window from the rules.
#[derive(Debug, Clone)]
pub struct CertWatch {
    serve: Option<PathBuf>,
    /// Each `https` agent: its check's name and its endpoint.
    agents: Vec<(String, url::Url)>,
    renew_within_s: u64,
    timeout: Duration,
}

impl CertWatch {
    pub fn new(config: &Config, rules: &Rules) -> CertWatch {
        CertWatch {
            serve: config.serve.tls.as_ref().map(|t| t.cert.clone()),
            agents: config
                .agents
                .iter()
                .filter(|a| a.endpoint.scheme() == "https")
                .map(|a| (agent_check(&a.name), a.endpoint.clone()))
                .collect(),
            renew_within_s: rules.cert_renew_within.seconds,
            timeout: config.probe.timeout,
        }
    }

    /// Whether there is anything to watch on the host fleetdash runs on.
    pub fn watches_local(&self) -> bool {
        self.serve.is_some() || !self.agents.is_empty()
    }

    /// The checks of the host fleetdash runs on: serve's certificate, then each https agent's,
    /// in config order; every handshake at once, each within the probe timeout.
    pub async fn local(&self, checked_at: DateTime<Utc>) -> Vec<NamedCheck> {
        let mut out = Vec::new();
        if let Some(path) = self.serve.clone() {
            let read = tokio::task::spawn_blocking(move || Validity::of_pem_file(&path))
                .await
                .unwrap_or_else(|e| Err(format!("reading the file: {e}")));
            let read = read.map_err(|e| {
                ProbeFailure::new(fleetdash_model::Asc::FAILED_PRECONDITION, e)
                    .context("serve.tls_cert")
            });
            out.push(self.check(SERVE.into(), read, checked_at));
        }
        // One handshake per address: agents behind one https proxy present one certificate.
        let mut by_address: BTreeMap<String, url::Url> = BTreeMap::new();
        for (_, url) in &self.agents {
            by_address
                .entry(address(url))
                .or_insert_with(|| url.clone());
        }
        let probed: BTreeMap<String, Result<Validity, ProbeFailure>> =
            futures::future::join_all(by_address.into_iter().map(|(at, url)| async move {
                let got = certs::presented(&url, self.timeout).await;
                // Its dates; whether it verifies is the doctor's to say.
                (at, got.map(|p| p.validity))
            }))
            .await
            .into_iter()
            .collect();
        for (name, url) in &self.agents {
            let got = probed
                .get(&address(url))
                .cloned()
                .expect("every address was probed");
            out.push(self.check(name.clone(), got, checked_at));
        }
        out
    }

    /// The check of the certificate an `https` node_exporter's `url` presents.
    pub async fn node_exporter(&self, url: &url::Url, checked_at: DateTime<Utc>) -> NamedCheck {
        let got = certs::presented(url, self.timeout).await;
        self.check(NODE_EXPORTER.into(), got.map(|p| p.validity), checked_at)
    }

    fn check(
        &self,
        name: String,
        got: Result<Validity, ProbeFailure>,
        checked_at: DateTime<Utc>,
    ) -> NamedCheck {
        check(name, got, checked_at, self.renew_within_s)
    }
}

/// `host:port` of an https URL, without its credentials.
fn address(url: &url::Url) -> String {
    format!(
        "{}:{}",
        url.host_str().unwrap_or_default(),
        url.port_or_known_default().unwrap_or(443)
    )
}

/// A certificate's check, judged at `checked_at`.
pub fn check(
    name: String,
    got: Result<Validity, ProbeFailure>,
    checked_at: DateTime<Utc>,
    renew_within_s: u64,
) -> NamedCheck {
    match got {
        Ok(validity) => {
            let judged = certs::judge(validity, checked_at, renew_within_s);
            let band = judged.band();
            NamedCheck {
                name,
                ok: Probe::Value(band != Band::Red),
                reason: (band != Band::Green).then(|| judged.words()),
                uptime_24h_pct: None,
                checked_at,
                stale: false,
            }
        }
        Err(failure) => NamedCheck {
            name,
            ok: Probe::Error(failure.reason.clone()),
            reason: Some(failure.reason),
            uptime_24h_pct: None,
            checked_at,
            stale: true,
        },
    }
}

/// The index of the row fleetdash's own certificates go on: the first `local` host.
pub fn local_row(config_hosts: &[crate::config::HostConfig]) -> Option<usize> {
    config_hosts
        .iter()
        .position(|h| h.source == HostSource::Local)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        s.parse().expect("an RFC 3339 instant")
    }

    #[test]
    fn a_certificate_is_a_check_ok_with_a_reason_inside_the_window_and_not_ok_past_its_end() {
        let v = Validity {
            not_before: t("2026-01-01T00:00:00Z"),
            not_after: t("2026-12-31T12:00:00Z"),
        };
        let window = 14 * 86400;
        let green = check(SERVE.into(), Ok(v), t("2026-11-01T00:00:00Z"), window);
        assert_eq!((&green.ok, &green.reason), (&Probe::Value(true), &None));
        let amber = check(SERVE.into(), Ok(v), t("2026-12-22T12:00:00Z"), window);
        assert_eq!(amber.ok, Probe::Value(true));
        assert!(
            amber
                .reason
                .as_deref()
                .unwrap()
                .starts_with("expiring, in 9 d, on 31 Dec 2026"),
            "{amber:?}"
        );
        let red = check(SERVE.into(), Ok(v), t("2027-01-01T12:00:00Z"), window);
        assert_eq!(red.ok, Probe::Value(false));
        assert_eq!(
            red.reason.as_deref(),
            Some("expired, 1 d ago, on 31 Dec 2026 12:00 UTC")
        );
        let failed = check(
            agent_check("min"),
            Err(ProbeFailure::new(
                fleetdash_model::Asc::DEPENDENCY_UNAVAILABLE,
                "connect: Connection refused",
            )),
            t("2026-11-01T00:00:00Z"),
            window,
        );
        assert_eq!(failed.name, "certificate agent min");
        assert!(failed.stale && failed.ok.is_error(), "{failed:?}");
        assert_eq!(
            failed.reason.as_deref(),
            Some("connect: Connection refused")
        );
    }

    #[test]
    fn an_address_is_host_and_port_without_credentials() {
        let u = url::Url::parse("https://user:pw@agents.example.org/a2a/min").unwrap();
        assert_eq!(address(&u), "agents.example.org:443");
        let u = url::Url::parse("https://127.0.0.1:8443/").unwrap();
        assert_eq!(address(&u), "127.0.0.1:8443");
    }
}

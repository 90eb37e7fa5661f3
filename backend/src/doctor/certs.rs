//! The `certificates` check (issue 44): serve's own certificate (`[serve] tls_cert`, read from
//! its file) and the one each `https` agent and node_exporter presents, judged by their dates
//! against the rules' `certificates` window: fail when expired or not yet valid, warn inside
//! the window, each with its date and what to do. A peer's certificate that does not verify
//! (self-signed, a private CA, another name) is a finding of its own: fleetdash's probes refuse
//! it whatever its dates.

use chrono::{DateTime, Utc};
use fleetdash_model::Asc;

use super::Finding;
use crate::certs::{self, Judged, Standing, Validity};
use crate::config::{Config, HostSource, Rules};

const CHECK: &str = "certificates";

/// Every finding about the certificates `config` leads to; the peers' unless `offline`.
pub async fn findings(config: &Config, rules: &Rules, offline: bool) -> Vec<Finding> {
    let window = rules.cert_renew_within.seconds;
    let mut out = Vec::new();
    if let Some(tls) = &config.serve.tls {
        let path = tls.cert.clone();
        let read = tokio::task::spawn_blocking(move || Validity::of_pem_file(&path))
            .await
            .unwrap_or_else(|e| Err(format!("reading the file: {e}")));
        out.push(serve(read, Utc::now(), window));
    }
    let mut peers: Vec<(String, url::Url, &str)> = config
        .agents
        .iter()
        .filter(|a| a.endpoint.scheme() == "https")
        .map(|a| (format!("agent {}", a.name), a.endpoint.clone(), "agent"))
        .collect();
    for h in &config.hosts {
        if let HostSource::NodeExporter { url } = &h.source
            && url.scheme() == "https"
        {
            peers.push((format!("host {}", h.name), url.clone(), "node_exporter"));
        }
    }
    if offline && !peers.is_empty() {
        out.push(Finding::ok(CHECK, "https peers", "not checked (--offline)"));
        peers.clear();
    }
    let timeout = config.probe.timeout;
    let presented = futures::future::join_all(
        peers
            .iter()
            .map(|(_, url, _)| certs::presented(url, timeout)),
    )
    .await;
    let now = Utc::now();
    for ((subject, _, what), got) in peers.into_iter().zip(presented) {
        match got {
            Ok(p) => out.extend(peer(&subject, what, p, now, window)),
            Err(failure) => out.push(Finding::fail(
                CHECK,
                subject,
                failure.reason,
                format!("is the {what} running, and its address in the config https?"),
                failure.asc,
            )),
        }
    }
    let watched = config.serve.tls.is_some() || !out.is_empty();
    if watched && crate::collect::systems::certs::local_row(&config.hosts).is_none() {
        out.push(Finding::ok(
            CHECK,
            "hosts",
            "Systems shows serve's and the agents' certificates on the row of the host \
             fleetdash runs on: add a [[hosts]] entry with source = \"local\" to see them there \
             (and be alerted by them)",
        ));
    }
    if out.is_empty() {
        out.push(Finding::ok(
            CHECK,
            "TLS",
            "nothing to check: no serve.tls_cert, no https agent or node_exporter",
        ));
    }
    out
}

/// Serve's own certificate, read from its file, judged at `now`.
fn serve(read: Result<Validity, String>, now: DateTime<Utc>, window: u64) -> Finding {
    let subject = "serve.tls_cert";
    let renew = "renew it (certbot renew, or your CA), put the new chain at serve.tls_cert, then \
                 `systemctl reload fleetdash-serve` (browsers refuse an expired certificate)";
    match read {
        Err(why) => Finding::fail(
            CHECK,
            subject,
            why,
            "give a PEM certificate chain, the server's first",
            Asc::FAILED_PRECONDITION,
        ),
        Ok(v) => judged(subject, certs::judge(v, now, window), renew),
    }
}

/// A peer's certificate: its dates, then whether it verifies.
fn peer(
    subject: &str,
    what: &str,
    p: certs::Presented,
    now: DateTime<Utc>,
    window: u64,
) -> Vec<Finding> {
    let renew =
        format!("renew the {what}'s certificate before browsers and fleetdash's probes refuse it");
    let mut out = vec![judged(
        subject,
        certs::judge(p.validity, now, window),
        &renew,
    )];
    if let Err(why) = p.verified {
        out.push(Finding::fail(
            CHECK,
            subject.to_string(),
            format!("its certificate does not verify: {why}"),
            format!(
                "give the {what} a certificate from a public CA (Let's Encrypt) for the name in \
                 the config, or reach it over http through a tunnel on loopback"
            ),
            Asc::INTEGRITY_CHECK_FAILED,
        ));
    }
    out
}

fn judged(subject: &str, j: Judged, fix: &str) -> Finding {
    let detail = match j.standing {
        Standing::Valid => format!("valid {}", j.detail),
        Standing::Expiring => format!("expires {}", j.detail),
        Standing::Expired => format!("expired {}", j.detail),
        Standing::NotYetValid => format!("not yet valid: {}", j.detail),
    };
    match j.standing {
        Standing::Valid => Finding::ok(CHECK, subject, detail),
        Standing::Expiring => {
            Finding::warn(CHECK, subject, detail, fix, Asc::SUCCESS_WITH_WARNINGS)
        }
        Standing::Expired | Standing::NotYetValid => {
            Finding::fail(CHECK, subject, detail, fix, Asc::FAILED_PRECONDITION)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::Level;

    fn t(s: &str) -> DateTime<Utc> {
        s.parse().expect("an RFC 3339 instant")
    }

    #[test]
    fn serves_certificate_fails_expired_warns_inside_the_window_and_names_its_date() {
        let v = Validity {
            not_before: t("2026-01-01T00:00:00Z"),
            not_after: t("2026-12-31T12:00:00Z"),
        };
        let window = 14 * 86400;
        let ok = serve(Ok(v), t("2026-06-01T00:00:00Z"), window);
        assert_eq!(ok.level, Level::Ok, "{ok:?}");
        assert!(ok.detail.starts_with("valid until 31 Dec 2026"), "{ok:?}");
        let soon = serve(Ok(v), t("2026-12-25T12:00:00Z"), window);
        assert_eq!(soon.level, Level::Warn, "{soon:?}");
        assert!(
            soon.detail
                .starts_with("expires in 6 d, on 31 Dec 2026 12:00 UTC"),
            "{soon:?}"
        );
        assert!(
            soon.fix
                .as_deref()
                .unwrap()
                .contains("systemctl reload fleetdash-serve")
        );
        let gone = serve(Ok(v), t("2027-02-01T12:00:00Z"), window);
        assert_eq!(gone.level, Level::Fail, "{gone:?}");
        assert_eq!(gone.detail, "expired 32 d ago, on 31 Dec 2026 12:00 UTC");
        let early = serve(Ok(v), t("2025-12-01T00:00:00Z"), window);
        assert_eq!(early.level, Level::Fail, "{early:?}");
        assert!(
            early
                .detail
                .starts_with("not yet valid: valid from 1 Jan 2026")
        );
        let broken = serve(
            Err("cert.pem: no PEM certificate in it".into()),
            t("2026-06-01T00:00:00Z"),
            window,
        );
        assert_eq!(
            (broken.level, broken.subject.as_str()),
            (Level::Fail, "serve.tls_cert")
        );
    }

    #[test]
    fn a_peers_certificate_that_does_not_verify_is_a_finding_of_its_own() {
        let v = Validity {
            not_before: t("2026-01-01T00:00:00Z"),
            not_after: t("2026-12-31T12:00:00Z"),
        };
        let p = certs::Presented {
            validity: v,
            verified: Err("its issuer is unknown".into()),
        };
        let found = peer(
            "agent min",
            "agent",
            p,
            t("2026-06-01T00:00:00Z"),
            14 * 86400,
        );
        let levels: Vec<Level> = found.iter().map(|f| f.level).collect();
        assert_eq!(levels, [Level::Ok, Level::Fail], "{found:?}");
        assert_eq!(
            found[1].detail,
            "its certificate does not verify: its issuer is unknown"
        );
    }
}

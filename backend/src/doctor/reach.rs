//! The network checks: each agent's card answers, each remote host's source answers, and this
//! host's clock agrees with the agents' (`Date` headers) within the rules' `doctor` limit.

use std::time::Duration;

use chrono::{DateTime, Utc};
use fleetdash_model::Asc;

use super::{Finding, cards};
use crate::config::{Config, HostSource, Rules, read_token};
use crate::net::ProbeClient;

/// Where an agent's card is (the v1.0 path; the collector also tries v0.3's `agent.json`).
const CARD_PATH: &str = ".well-known/agent-card.json";

pub async fn network(config: &Config, rules: &Rules) -> Vec<Finding> {
    let client = ProbeClient::new(config.probe.timeout, config.probe.max_response_bytes);
    let agents = futures::future::join_all(config.agents.iter().map(|a| {
        let client = client.clone();
        async move {
            let token = read_token(a.token.as_ref()).ok().flatten();
            let url = a
                .endpoint
                .join(CARD_PATH)
                .unwrap_or_else(|_| a.endpoint.clone());
            (a, client.get(url, token.as_deref()).await, Utc::now())
        }
    }))
    .await;
    let mut out = Vec::new();
    let mut skews: Vec<(String, i64)> = Vec::new();
    for (agent, reply, at) in agents {
        let name = &agent.name;
        let subject = format!("agent {name}");
        match reply {
            Ok(reply) => {
                if let Some(theirs) = reply.date.as_deref().and_then(parse_date) {
                    skews.push((name.clone(), (theirs - at).num_seconds()));
                }
                if let Some(refused) = reply.permission_failure() {
                    out.push(Finding::fail(
                        "agents",
                        subject,
                        refused.reason,
                        "check the agent's token_env / token_file",
                        refused.asc,
                    ));
                } else if reply.status == 200 {
                    out.push(Finding::ok("agents", subject, "its card answers"));
                    match reply.json() {
                        Ok(card) => out.extend(cards::judge(agent, &card)),
                        Err(bad) => out.push(Finding::fail(
                            "skills",
                            format!("agent {name}"),
                            format!("its card: {}", bad.reason),
                            "serve an A2A agent card (JSON) at /.well-known/agent-card.json",
                            bad.asc,
                        )),
                    }
                } else {
                    out.push(Finding::warn(
                        "agents",
                        subject,
                        format!("its card answered HTTP {}", reply.status),
                        "check the agent's endpoint in the config",
                        Asc::NOT_FOUND,
                    ));
                }
            }
            Err(failure) => out.push(Finding::fail(
                "agents",
                subject,
                failure.reason,
                "is the agent running, and its endpoint (or tunnel) right?",
                failure.asc,
            )),
        }
    }
    out.extend(hosts(config, &client).await);
    out.push(clock(&skews, rules.clock_skew.seconds));
    out
}

/// Remote hosts: a node_exporter answers its URL; an ssh host's port accepts a connection
/// (the doctor logs in nowhere).
async fn hosts(config: &Config, client: &ProbeClient) -> Vec<Finding> {
    let mut out = Vec::new();
    for h in &config.hosts {
        let subject = format!("host {}", h.name);
        match &h.source {
            HostSource::Local => out.push(Finding::ok("hosts", subject, "this host")),
            HostSource::NodeExporter { url } => match client.get(url.clone(), None).await {
                Ok(reply) if reply.status == 200 => {
                    out.push(Finding::ok("hosts", subject, "node_exporter answers"))
                }
                Ok(reply) => out.push(Finding::fail(
                    "hosts",
                    subject,
                    format!("node_exporter answered HTTP {}", reply.status),
                    "check the URL (and its credentials) in the config",
                    Asc::PERMISSION_DENIED,
                )),
                Err(failure) => out.push(Finding::fail(
                    "hosts",
                    subject,
                    failure.reason,
                    "is node_exporter running there, and reachable from here?",
                    failure.asc,
                )),
            },
            HostSource::Ssh(target) => {
                let host = target
                    .destination
                    .rsplit('@')
                    .next()
                    .unwrap_or(&target.destination);
                let port = target.port.unwrap_or(22);
                let connect = tokio::net::TcpStream::connect((host, port));
                match tokio::time::timeout(config.probe.timeout, connect).await {
                    Ok(Ok(_)) => out.push(Finding::ok(
                        "hosts",
                        subject,
                        format!("ssh port {port} accepts connections"),
                    )),
                    Ok(Err(e)) => out.push(Finding::fail(
                        "hosts",
                        subject,
                        format!("ssh {host}:{port}: {e}"),
                        "is sshd running there, and the port open to this host?",
                        Asc::DEPENDENCY_UNAVAILABLE,
                    )),
                    Err(_) => out.push(Finding::fail(
                        "hosts",
                        subject,
                        format!(
                            "ssh {host}:{port}: no answer within {}",
                            humantime::format_duration(config.probe.timeout)
                        ),
                        "a firewall dropping the port?",
                        Asc::TIMEOUT,
                    )),
                }
            }
        }
    }
    out
}

/// The largest difference between an agent's clock and ours, against the limit.
fn clock(skews: &[(String, i64)], limit_s: u64) -> Finding {
    let Some((name, worst)) = skews.iter().max_by_key(|(_, s)| s.unsigned_abs()) else {
        return Finding::ok(
            "clock",
            "this host",
            "no agent answered with a Date to compare",
        );
    };
    let off = humantime::format_duration(Duration::from_secs(worst.unsigned_abs()));
    let side = if *worst > 0 { "ahead of" } else { "behind" };
    if worst.unsigned_abs() > limit_s {
        Finding::warn(
            "clock",
            "this host",
            format!(
                "agent {name}'s clock is {off} {side} this host's (limit {limit_s} s, rules doctor.clock_skew_seconds)"
            ),
            "run NTP on both (systemd-timesyncd or chrony): ages on the page are only as right as the clocks",
            Asc::INTEGRITY_CHECK_FAILED,
        )
    } else {
        Finding::ok(
            "clock",
            "this host",
            format!(
                "within {limit_s} s of {} agent(s)' clocks (furthest: {name}, {off})",
                skews.len()
            ),
        )
    }
}

/// An HTTP date (RFC 9110: `Sun, 06 Nov 1994 08:49:37 GMT`).
fn parse_date(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc2822(text)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::Level;

    #[test]
    fn a_clock_past_the_limit_warns_naming_the_agent_and_the_side() {
        assert!(parse_date("Tue, 01 Dec 2026 10:00:00 GMT").is_some());
        let near = clock(&[("min".into(), 2), ("kai".into(), -1)], 30);
        assert_eq!(near.level, Level::Ok, "{near:?}");
        let far = clock(&[("min".into(), 2), ("kai".into(), -95)], 30);
        assert_eq!(far.level, Level::Warn);
        assert!(
            far.detail.contains("kai's clock is 1m 35s behind"),
            "{far:?}"
        );
        assert_eq!(clock(&[], 30).level, Level::Ok);
    }
}

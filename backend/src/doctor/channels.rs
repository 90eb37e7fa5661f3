//! Each alert channel answers, probed so that nothing reaches the phone: ntfy's `/v1/health`,
//! Alertmanager's `/-/ready` (each member), and for a webhook or an a2a channel's agent a TCP
//! connection that sends nothing. Reach only: whether a notification is delivered and shown is
//! `fleetdash alerts test CHANNEL`'s to prove.

use std::time::Duration;

use fleetdash_model::Asc;

use super::Finding;
use crate::collect::agents::card::join;
use crate::config::{ChannelConfig, ChannelTarget, Config};
use crate::net::ProbeClient;

pub async fn checks(config: &Config) -> Vec<Finding> {
    if config.alerts.channels.is_empty() {
        return vec![Finding::ok(
            "channels",
            "alerts.channels",
            "none configured: a red is said on the page alone",
        )];
    }
    let client = ProbeClient::new(config.probe.timeout, config.probe.max_response_bytes);
    let probes = config
        .alerts
        .channels
        .iter()
        .map(|c| channel(config, c, &client));
    futures::future::join_all(probes).await
}

async fn channel(config: &Config, c: &ChannelConfig, client: &ProbeClient) -> Finding {
    let subject = format!("channel {} ({})", c.name, c.target.type_name());
    let refused = |why: String| {
        Finding::fail(
            "channels",
            subject.clone(),
            why,
            format!(
                "is its server running, and its URL in [[alerts.channels]] right and reachable \
                 from this host? Then `fleetdash alerts test {}` sends a test notification \
                 through it",
                c.name
            ),
            Asc::DEPENDENCY_UNAVAILABLE,
        )
    };
    let urls: Vec<(url::Url, &str)> = match &c.target {
        ChannelTarget::Ntfy(url) => vec![(origin(url).join("v1/health").unwrap(), "/v1/health")],
        ChannelTarget::Alertmanager(urls) => urls
            .iter()
            .map(|u| (join(u, "-/ready"), "/-/ready"))
            .collect(),
        ChannelTarget::Webhook(url) => {
            return match connect(url, config.probe.timeout).await {
                Ok(at) => Finding::ok(
                    "channels",
                    subject,
                    format!("{at} accepts connections (nothing was sent)"),
                ),
                Err(why) => refused(why),
            };
        }
        ChannelTarget::A2a(agent) => {
            let Some(a) = config.agents.iter().find(|a| &a.name == agent) else {
                return refused(format!("no agent {agent} in [[agents]]"));
            };
            return match connect(&a.endpoint, config.probe.timeout).await {
                Ok(at) => Finding::ok(
                    "channels",
                    subject,
                    format!("agent {agent} at {at} accepts connections (nothing was sent)"),
                ),
                Err(why) => refused(format!("agent {agent}: {why}")),
            };
        }
    };
    let mut said = Vec::new();
    for (url, path) in urls {
        let at = host_port(&url);
        match client.get(url, None).await {
            Ok(reply) if reply.status == 200 => said.push(format!("{at} answers {path}")),
            Ok(reply) => return refused(format!("{at}{path} answered HTTP {}", reply.status)),
            Err(f) => return refused(format!("{at}: {}", f.reason)),
        }
    }
    Finding::ok("channels", subject, said.join("; "))
}

/// `scheme://host:port/` of `url`: ntfy's health is at its server's root, not the topic's.
fn origin(url: &url::Url) -> url::Url {
    let mut root = url.clone();
    root.set_path("/");
    root.set_query(None);
    root.set_fragment(None);
    root
}

/// `host:port`, never the URL's credentials or path (a topic name may be a secret's only guard).
fn host_port(url: &url::Url) -> String {
    format!(
        "{}:{}",
        url.host_str().unwrap_or(""),
        url.port_or_known_default().unwrap_or(0)
    )
}

/// A TCP connection to `url`'s host and port, closed at once: `host:port`, or why not.
async fn connect(url: &url::Url, timeout: Duration) -> Result<String, String> {
    let at = host_port(url);
    let host = url.host_str().unwrap_or("").trim_matches(['[', ']']);
    let port = url.port_or_known_default().unwrap_or(0);
    match tokio::time::timeout(timeout, tokio::net::TcpStream::connect((host, port))).await {
        Ok(Ok(_)) => Ok(at),
        Ok(Err(e)) => Err(format!("{at}: {e}")),
        Err(_) => Err(format!(
            "{at}: no answer within {}",
            humantime::format_duration(timeout)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::{Level, loaded};

    #[tokio::test]
    async fn a_channel_that_refuses_fails_naming_alerts_test_and_one_that_answers_is_ok() {
        // A port that was open and is closed: refused at once.
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let refused = closed.local_addr().unwrap();
        drop(closed);
        let open = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let answering = open.local_addr().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let body = format!(
            "[[alerts.channels]]\nname = \"hook\"\ntype = \"webhook\"\nurl = \"http://{refused}/hook\"\n\n\
             [[alerts.channels]]\nname = \"hook2\"\ntype = \"webhook\"\nurl = \"http://{answering}/x\"\n"
        );
        let (config, _) = loaded(dir.path(), &body);
        let found = checks(&config).await;
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[0].level, Level::Fail, "{found:?}");
        assert!(found[0].detail.contains(&refused.to_string()), "{found:?}");
        assert!(
            found[0]
                .fix
                .as_deref()
                .unwrap()
                .contains("fleetdash alerts test hook"),
            "{found:?}"
        );
        assert_eq!(found[1].level, Level::Ok, "{found:?}");
        drop(open);
    }

    #[test]
    fn ntfy_is_asked_at_its_servers_root() {
        let topic = url::Url::parse("https://ntfy.example:8443/fleet-alerts?x=1").unwrap();
        assert_eq!(
            origin(&topic).join("v1/health").unwrap().as_str(),
            "https://ntfy.example:8443/v1/health"
        );
        assert_eq!(host_port(&topic), "ntfy.example:8443");
    }
}

//! Liveness and the agent card: `GET <endpoint>/.well-known/agent-card.json` (spec §2.1).
//!
//! Any HTTP answer means the agent is up, redirects included (a loop is up, its reason says so);
//! refused or timed out means down. The card then gives `skills_count`, and an empty skills list
//! is a failure of its own (spec §1.3: RED, never silently absent).

use fleetdash_model::Asc;

use crate::a2a;
use crate::net::{ProbeClient, ProbeFailure};

/// The v1.0 and v0.3 card path, then the v0.2 one that some older peers still serve.
pub const CARD_PATHS: [&str; 2] = [".well-known/agent-card.json", ".well-known/agent.json"];

#[derive(Debug, Clone)]
pub struct CardProbe {
    pub up: bool,
    /// The card's facts, or why they could not be read (down, 401, 404, malformed...).
    pub card: Result<a2a::CardFacts, ProbeFailure>,
}

pub async fn probe(client: &ProbeClient, endpoint: &url::Url, token: Option<&str>) -> CardProbe {
    let mut last_status = None;
    for path in CARD_PATHS {
        let reply = match client.get(join(endpoint, path), token).await {
            Ok(r) => r,
            Err(failure) if failure.answered => {
                // The peer answered, but with an oversized, broken or stalled body: up, bad card.
                return CardProbe {
                    up: true,
                    card: Err(failure.context("card")),
                };
            }
            Err(down) => {
                // A transport failure on the first path is the liveness verdict.
                if last_status.is_none() {
                    return CardProbe {
                        up: false,
                        card: Err(down),
                    };
                }
                break;
            }
        };
        if let Some(denied) = reply.permission_failure() {
            return CardProbe {
                up: true,
                card: Err(denied.context("card")),
            };
        }
        if reply.status == 404 {
            last_status = Some(404);
            continue;
        }
        let card = if (200..300).contains(&reply.status) {
            reply.json().and_then(|v| {
                a2a::card_facts(&v).map_err(|e| ProbeFailure::new(Asc::INTEGRITY_CHECK_FAILED, e))
            })
        } else {
            Err(ProbeFailure::new(
                Asc::RETRYABLE_ERROR,
                format!("HTTP {}", reply.status),
            ))
        };
        return CardProbe {
            up: true,
            card: card.map_err(|e| e.context("card")),
        };
    }
    CardProbe {
        up: true,
        card: Err(ProbeFailure::new(
            Asc::NOT_FOUND,
            format!("card: no agent card at /{} (HTTP 404)", CARD_PATHS[0]),
        )),
    }
}

/// `<endpoint>/<path>`, keeping any path prefix the endpoint has.
pub fn join(endpoint: &url::Url, path: &str) -> url::Url {
    let mut url = endpoint.clone();
    let base = url.path().trim_end_matches('/').to_string();
    url.set_path(&format!("{base}/{path}"));
    url.set_query(None);
    url
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_keeps_the_endpoint_prefix() {
        let e = url::Url::parse("http://127.0.0.1:9/agents/7/").unwrap();
        assert_eq!(
            join(&e, "x.json").as_str(),
            "http://127.0.0.1:9/agents/7/x.json"
        );
        let e = url::Url::parse("http://127.0.0.1:9").unwrap();
        assert_eq!(join(&e, "x.json").as_str(), "http://127.0.0.1:9/x.json");
    }

    /// A peer that answers every request with a redirect to itself is up (it answers HTTP),
    /// but misconfigured: its status and the loop are the reason.
    #[tokio::test]
    async fn a_redirect_loop_is_up_and_says_so() {
        use axum::http::{StatusCode, Uri, header};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let endpoint =
            url::Url::parse(&format!("http://{}/", listener.local_addr().unwrap())).unwrap();
        let app = axum::Router::new().fallback(|uri: Uri| async move {
            (StatusCode::FOUND, [(header::LOCATION, uri.to_string())])
        });
        let server = tokio::spawn(async move { axum::serve(listener, app).await });
        let client = ProbeClient::new(std::time::Duration::from_secs(5), 1 << 20);
        let probe = probe(&client, &endpoint, None).await;
        server.abort();
        assert!(probe.up, "a peer that answers redirects is up: {probe:?}");
        let failure = probe.card.unwrap_err();
        assert_eq!(failure.asc, Asc::FAILED_PRECONDITION, "{failure:?}");
        assert!(
            failure.reason.contains("HTTP 302") && failure.reason.contains("redirect loop"),
            "{failure:?}"
        );
    }
}

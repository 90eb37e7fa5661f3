//! The heartbeat: one JSON-RPC send in the peer's dialect (spec §2.2), timed.
//!
//! `auto` tries v1.0 then v0.3 and the collector remembers what worked. Only a reply that says
//! "wrong dialect" (a JSON-RPC dialect error, or an HTTP 4xx) moves on to the next one: a
//! timeout, a refusal or an HTTP 5xx (the peer failing) is the answer, and trying again in
//! another dialect would only double the cost of a dead or overloaded peer.

use std::time::{Duration, Instant};

use fleetdash_model::Asc;

use crate::a2a::{self, ReplyFacts, RpcOutcome, Wire, rpc_url};
use crate::net::{ProbeClient, ProbeFailure};

/// The text of the heartbeat message; peers are free to ignore it.
pub const HEARTBEAT_TEXT: &str = "heartbeat";
/// The context id heartbeats share, so a peer can tell them from real work.
pub const HEARTBEAT_CONTEXT: &str = "fleetdash-heartbeat";

#[derive(Debug, Clone)]
pub struct HeartbeatReply {
    pub wire: Wire,
    pub latency: Duration,
    pub facts: ReplyFacts,
}

/// A dialect that did not answer, before the next was tried.
#[derive(Debug, Clone, PartialEq)]
pub struct Tried {
    pub wire: Wire,
    pub asc: Asc,
    pub started: Instant,
    pub took: Duration,
}

/// Sends the heartbeat in each of `attempts` until one is understood.
pub async fn probe(
    client: &ProbeClient,
    endpoint: &url::Url,
    attempts: &[Wire],
    token: Option<&str>,
) -> Result<HeartbeatReply, ProbeFailure> {
    probe_recording(client, endpoint, attempts, token, &mut Vec::new()).await
}

/// [`probe`], noting in `tried` each dialect that failed before the next was tried (the last
/// one's failure is the probe's own).
pub async fn probe_recording(
    client: &ProbeClient,
    endpoint: &url::Url,
    attempts: &[Wire],
    token: Option<&str>,
    tried: &mut Vec<Tried>,
) -> Result<HeartbeatReply, ProbeFailure> {
    let url = rpc_url(endpoint);
    let mut last_mismatch: Option<ProbeFailure> = None;
    let mut note = |wire: Wire, started: Instant, failure: &Option<ProbeFailure>| {
        if let Some(f) = failure {
            tried.push(Tried {
                wire,
                asc: f.asc.clone(),
                started,
                took: started.elapsed(),
            });
        }
    };
    for &wire in attempts {
        let started = Instant::now();
        let id = uuid::Uuid::new_v4().to_string();
        let body = wire.send_message(&id, &id, HEARTBEAT_CONTEXT, HEARTBEAT_TEXT);
        let reply = client
            .post_json(url.clone(), wire.headers(), &body, token)
            .await?;
        if let Some(denied) = reply.permission_failure() {
            return Err(denied);
        }
        if reply.status >= 500 {
            // The peer is failing, whatever it speaks: the other dialect would only add load
            // to a peer already overloaded.
            return Err(ProbeFailure::new(
                Asc::RETRYABLE_ERROR,
                format!(
                    "{} send answered HTTP {}: the peer failed",
                    wire.as_str(),
                    reply.status
                ),
            ));
        }
        if !(200..300).contains(&reply.status) {
            // A pure v0.3 server may answer a v1 request with a 4xx; let auto try the next.
            last_mismatch = Some(ProbeFailure::new(
                Asc::UNSUPPORTED_CAPABILITY,
                format!("{} send answered HTTP {}", wire.as_str(), reply.status),
            ));
            note(wire, started, &last_mismatch);
            continue;
        }
        let json = reply.json()?;
        match RpcOutcome::parse(&json)
            .map_err(|e| ProbeFailure::new(Asc::INTEGRITY_CHECK_FAILED, e))?
        {
            RpcOutcome::Result(result) => {
                return Ok(HeartbeatReply {
                    wire,
                    latency: reply.elapsed,
                    facts: a2a::reply_facts(&result),
                });
            }
            RpcOutcome::Error { code } if a2a::is_dialect_mismatch(code) => {
                last_mismatch = Some(rpc_failure(wire, code, Asc::UNSUPPORTED_CAPABILITY));
                note(wire, started, &last_mismatch);
            }
            RpcOutcome::Error { code } => {
                return Err(rpc_failure(wire, code, Asc::RETRYABLE_ERROR));
            }
        }
    }
    // The last dialect's failure is the probe's answer, not an attempt before another.
    if last_mismatch.is_some() {
        tried.pop();
    }
    Err(last_mismatch
        .unwrap_or_else(|| ProbeFailure::new(Asc::UNSUPPORTED_CAPABILITY, "no dialect to try")))
}

fn rpc_failure(wire: Wire, code: i64, asc: Asc) -> ProbeFailure {
    let name = a2a::error_name(code);
    ProbeFailure::new(
        asc,
        format!("{} send: JSON-RPC {code} {name}", wire.as_str()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A peer that answers every POST with `status`, counting them.
    async fn peer(status: u16) -> (url::Url, Arc<AtomicUsize>) {
        let hits = Arc::new(AtomicUsize::new(0));
        let counted = hits.clone();
        let app = axum::Router::new().fallback(move || {
            let counted = counted.clone();
            async move {
                counted.fetch_add(1, Ordering::SeqCst);
                axum::http::StatusCode::from_u16(status).unwrap()
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        (format!("http://{addr}/").parse().unwrap(), hits)
    }

    /// Issue 21: a 5xx was worded "unsupported capability" and `auto` then tried the other
    /// dialect, doubling the load on an overloaded peer.
    #[tokio::test]
    async fn a_peer_failing_with_5xx_is_failing_and_asked_once() {
        let client = ProbeClient::new(Duration::from_secs(5), 64 * 1024);
        for status in [500, 503] {
            let (url, hits) = peer(status).await;
            let e = probe(&client, &url, &[Wire::V1, Wire::V03], None)
                .await
                .unwrap_err();
            assert_eq!(e.asc, Asc::RETRYABLE_ERROR, "{status}: {e:?}");
            assert!(e.reason.contains(&format!("HTTP {status}")), "{}", e.reason);
            assert_eq!(
                hits.load(Ordering::SeqCst),
                1,
                "{status}: one dialect asked"
            );
        }
        // A 4xx may be a v0.3 server refusing v1: auto tries the next.
        let (url, hits) = peer(404).await;
        let e = probe(&client, &url, &[Wire::V1, Wire::V03], None)
            .await
            .unwrap_err();
        assert_eq!(e.asc, Asc::UNSUPPORTED_CAPABILITY, "{e:?}");
        assert_eq!(hits.load(Ordering::SeqCst), 2);
        // Both dialects refused: the first was an attempt before another, the second is the
        // probe's own answer.
        let mut tried = Vec::new();
        let e = probe_recording(&client, &url, &[Wire::V1, Wire::V03], None, &mut tried)
            .await
            .unwrap_err();
        assert_eq!(e.asc, Asc::UNSUPPORTED_CAPABILITY);
        let tried: Vec<(Wire, u16)> = tried.iter().map(|t| (t.wire, t.asc.code)).collect();
        assert_eq!(tried, [(Wire::V1, 4007)]);
    }
}

//! The heartbeat: one JSON-RPC send in the peer's dialect (spec §2.2), timed.
//!
//! `auto` tries v1.0 then v0.3 and the collector remembers what worked. Only a reply that says
//! "wrong dialect" moves on to the next one: a timeout or a refusal is the answer, and trying
//! again in another dialect would only double the cost of a dead peer.

use std::time::Duration;

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

/// Sends the heartbeat in each of `attempts` until one is understood.
pub async fn probe(
    client: &ProbeClient,
    endpoint: &url::Url,
    attempts: &[Wire],
    token: Option<&str>,
) -> Result<HeartbeatReply, ProbeFailure> {
    let url = rpc_url(endpoint);
    let mut last_mismatch = None;
    for &wire in attempts {
        let id = uuid::Uuid::new_v4().to_string();
        let body = wire.send_message(&id, &id, HEARTBEAT_CONTEXT, HEARTBEAT_TEXT);
        let reply = client
            .post_json(url.clone(), wire.headers(), &body, token)
            .await?;
        if let Some(denied) = reply.permission_failure() {
            return Err(denied);
        }
        if !(200..300).contains(&reply.status) {
            // A pure v0.3 server may answer a v1 request with a 4xx; let auto try the next.
            last_mismatch = Some(ProbeFailure::new(
                Asc::UNSUPPORTED_CAPABILITY,
                format!("{} send answered HTTP {}", wire.as_str(), reply.status),
            ));
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
            }
            RpcOutcome::Error { code } => {
                return Err(rpc_failure(wire, code, Asc::RETRYABLE_ERROR));
            }
        }
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

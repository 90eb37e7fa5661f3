//! A2A to the hub agent: a `SendMessage` / `message/send` in the hub's dialect (its
//! `[[agents]]` entry: endpoint, dialect, token), whose text is the headline and the link. The
//! spec's "one voice to Young": the hub relays; fleetdash does not talk to the operator twice.
//!
//! The message id is derived from the alert's dedupe key, so a hub that sees a repeat (delivery
//! is at least once) can tell.

use async_trait::async_trait;

use super::common::{self, Wants};
use super::{Provider, SendError};
use crate::a2a::{RpcOutcome, Wire, error_name, is_dialect_mismatch};
use crate::alerting::Alert;
use crate::config::AgentConfig;
use crate::net::ProbeClient;

/// One context for every alert: the hub sees them as one conversation.
pub const CONTEXT_ID: &str = "fleetdash-alerts";
/// The most of the hub's reply read (a message or a task).
pub const REPLY_MAX_BYTES: usize = 256 * 1024;

pub struct Hub {
    name: String,
    agent: AgentConfig,
    wants: Wants,
    client: ProbeClient,
}

impl Hub {
    pub fn new(name: &str, agent: AgentConfig, wants: Wants) -> Hub {
        Hub {
            name: name.to_string(),
            agent,
            wants,
            client: ProbeClient::new(common::HTTP_TIMEOUT, REPLY_MAX_BYTES),
        }
    }
}

/// The message text: the headline, what it takes down, and the page's link.
pub fn text(alert: &Alert) -> String {
    let mut text = common::message(alert);
    if let Some(link) = &alert.link {
        text.push_str(&format!("\n{link}"));
    }
    text
}

/// The message id: the alert's dedupe key, so a repeat is recognisable.
pub fn message_id(alert: &Alert) -> String {
    format!("fleetdash-alert:{}", alert.id)
}

#[async_trait]
impl Provider for Hub {
    fn name(&self) -> &str {
        &self.name
    }

    fn wants(&self, alert: &Alert) -> bool {
        self.wants.wants(alert)
    }

    async fn send(&self, alert: &Alert) -> Result<(), SendError> {
        self.say(&message_id(alert), &text(alert)).await
    }

    async fn send_group(&self, alerts: &[Alert]) -> Result<(), SendError> {
        let mut text = common::group_message(alerts);
        if let Some(link) = alerts.iter().find_map(|a| a.link.as_deref()) {
            text.push_str(&format!("\n{link}"));
        }
        let id = format!("fleetdash-alert:{}", common::group_id(alerts));
        self.say(&id, &text).await
    }
}

impl Hub {
    /// One message to the hub, in the first of its dialects it answers.
    async fn say(&self, message_id: &str, text: &str) -> Result<(), SendError> {
        let token = common::token(self.agent.token.as_ref())?;
        let mut last = None;
        for wire in Wire::attempts(self.agent.dialect) {
            let rpc_id = uuid::Uuid::new_v4().to_string();
            let request = wire.send_message(&rpc_id, message_id, CONTEXT_ID, text);
            let reply = self
                .client
                .post_json(
                    self.agent.endpoint.clone(),
                    wire.headers(),
                    &request,
                    token.as_deref(),
                )
                .await
                .map_err(common::transport)?;
            if let Some(refused) = reply.permission_failure() {
                // The token may be fixed without a restart: keep the alert.
                return Err(SendError {
                    retryable: true,
                    reason: refused.reason,
                });
            }
            common::judge(&reply)?;
            let json = reply.json().map_err(common::transport)?;
            match RpcOutcome::parse(&json) {
                Ok(RpcOutcome::Result(_)) => return Ok(()),
                Ok(RpcOutcome::Error { code }) if is_dialect_mismatch(code) => {
                    last = Some(format!("{}: {code} {}", wire.as_str(), error_name(code)));
                }
                Ok(RpcOutcome::Error { code }) => {
                    return Err(SendError {
                        retryable: true,
                        reason: format!("JSON-RPC {code} {}", error_name(code)),
                    });
                }
                Err(e) => {
                    return Err(SendError {
                        retryable: true,
                        reason: e,
                    });
                }
            }
        }
        Err(SendError {
            retryable: true,
            reason: format!(
                "the hub speaks none of the dialects tried ({})",
                last.unwrap_or_default()
            ),
        })
    }
}

//! Alert channels, one file per channel behind [`Provider`] (as Gatus' `alerting/provider/`):
//! ntfy, a generic webhook, and A2A to the hub agent (the spec's "one voice to Young": the hub
//! relays). Each is configured with the bands and sections it wants; tokens come from an env
//! var or a file, never from the config itself.
//!
//! INTERFACE on branch h/abase; the channels are written on h/alert-delivery.

pub mod a2a;
pub mod common;
pub mod ntfy;
pub mod webhook;

use async_trait::async_trait;

use super::Alert;

/// Why a delivery failed, and whether trying again later may help (a 5xx, a timeout, a refused
/// connection: yes; a 4xx that says the request itself is wrong: no).
#[derive(Debug, Clone, PartialEq)]
pub struct SendError {
    pub retryable: bool,
    /// For the page ("ntfy failing since 14:02: 503") and the log: gated, short.
    pub reason: String,
}

/// One channel.
#[async_trait]
pub trait Provider: Send + Sync {
    /// The channel's name in the config and on the page ("ntfy", "ops-webhook", "hub").
    fn name(&self) -> &str;
    /// Whether this channel wants `alert` (its bands and sections); recoveries of what it was
    /// told about always.
    fn wants(&self, alert: &Alert) -> bool;
    /// Delivers `alert`, bounded in time and size like every probe.
    async fn send(&self, alert: &Alert) -> Result<(), SendError>;
}

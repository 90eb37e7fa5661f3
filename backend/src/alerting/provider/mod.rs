//! Alert channels, one file per channel behind [`Provider`] (as Gatus' `alerting/provider/`):
//! ntfy, a generic webhook, A2A to the hub agent (the spec's "one voice to Young": the hub
//! relays), and Alertmanager (where teams already route alerts). Each is configured with the bands and sections it wants; tokens come from an env
//! var or a file, never from the config itself.
//!
//! A channel depends on [`common`] (what the channels share) and nothing else of this folder;
//! no channel knows another. Here: the trait, and [`build`], the factory that makes each
//! configured channel.
//!
pub mod a2a;
pub mod alertmanager;
pub mod common;
pub mod ntfy;
pub mod webhook;

use std::sync::Arc;

use async_trait::async_trait;

use super::Alert;
use crate::config::AlertRules;
use crate::config::{ChannelTarget, Config};
use a2a::Hub;
use alertmanager::Alertmanager;
use common::Wants;
use ntfy::Ntfy;
use webhook::Webhook;

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
    /// Delivers several alerts as one notification (Alertmanager's group: a storm is one
    /// buzz, every element in it); `alerts` holds two or more.
    async fn send_group(&self, alerts: &[Alert]) -> Result<(), SendError>;
}

/// The configured channels.
pub struct Channels {
    /// Each behind [`Provider`], in the config's order (the outbox delivers to these).
    pub all: Vec<Arc<dyn Provider>>,
    /// The alertmanager ones again, the same instances: the run loop also sends them what is
    /// still firing, every `alertmanager.resend_seconds`.
    pub alertmanagers: Vec<Arc<Alertmanager>>,
}

/// The configured channels. An a2a channel's agent is known (the config checked it).
pub fn build(config: &Config, rules: &AlertRules) -> Channels {
    build_clocked(config, rules, None)
}

/// [`build`], the phone's links made on `clock` (`fleetdash run`'s: a link's time left is then
/// as observed where it is checked in the same run).
pub fn build_clocked(
    config: &Config,
    rules: &AlertRules,
    clock: Option<&crate::clock::Clock>,
) -> Channels {
    let mut channels = Channels {
        all: Vec::new(),
        alertmanagers: Vec::new(),
    };
    // The phone's buttons need the dashboard's URL: their links are under it.
    let links = crate::alerting::phone::LinkMaker::from_config(config, rules)
        .map(|l| Arc::new(l.with_clock(clock.cloned())));
    for c in &config.alerts.channels {
        let wants = Wants::of(c);
        let provider: Arc<dyn Provider> = match &c.target {
            ChannelTarget::Ntfy(url) => {
                let ntfy = Ntfy::new(&c.name, url.clone(), c.token.clone(), wants);
                Arc::new(match &links {
                    Some(links) => ntfy.with_actions(links.clone()),
                    None => ntfy,
                })
            }
            ChannelTarget::Webhook(url) => {
                Arc::new(Webhook::new(&c.name, url.clone(), c.token.clone(), wants))
            }
            ChannelTarget::A2a(agent) => {
                let Some(agent) = config.agents.iter().find(|a| &a.name == agent) else {
                    continue;
                };
                Arc::new(Hub::new(&c.name, agent.clone(), wants))
            }
            ChannelTarget::Alertmanager(urls) => {
                let ends_after = chrono::Duration::seconds(
                    i64::try_from(rules.am_ends_after.seconds).unwrap_or(i64::MAX),
                );
                let am = Arc::new(Alertmanager::new(
                    &c.name,
                    urls,
                    &config.hub,
                    c.token.clone(),
                    wants,
                    ends_after,
                ));
                channels.alertmanagers.push(am.clone());
                am
            }
        };
        channels.all.push(provider);
    }
    channels
}

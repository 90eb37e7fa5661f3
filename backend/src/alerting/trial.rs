//! `fleetdash alerts test`: a test notification through each configured channel, so the first
//! proof that the phone is wired is not a real red.
//!
//! It goes as real alerts go: kept in an outbox, sent by the outbox's delivery (the channel's
//! own request, the send deadline, a refusal given up, a failure that may pass backed off),
//! the outbox's file guarded as the real one is. But the outbox is one of its own in
//! `state_dir` ([`TEST_OUTBOX_FILE`]): a `fleetdash run` sharing the folder never sends,
//! groups, counts or reports a test, and its outbox and locks are not touched. The test is no
//! element's: no transition, no acknowledgement, no engine state; every channel takes it
//! whatever bands and sections it filters, and says it is a test (`event` "test", ntfy's
//! title, Alertmanager's `alertname` [`TEST_ALERTNAME`](super::provider::alertmanager::TEST_ALERTNAME)).

use std::sync::Arc;

use anyhow::Result;
use chrono::{DateTime, Utc};
use fleetdash_model::{Asc, Band};

use super::outbox::{Delivery, Limits, Outbox};
use super::provider::Provider;
use super::{Alert, AlertEvent};
use crate::config::{Config, Rules};

/// The test outbox, in `state_dir` beside the real one.
pub const TEST_OUTBOX_FILE: &str = "alerts-test-outbox.sqlite";

/// What became of one channel's test notification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The channel took it.
    Delivered,
    /// The channel refused it for a reason that will not pass by itself (a 4xx: the URL, the
    /// token): a real alert would be given up the same way.
    Refused(String),
    /// It failed for a reason that may pass (unreachable, a 5xx, no answer in time): a real
    /// alert would be tried again from `retry_at`, backing off. The test is not: it says so.
    Retrying {
        reason: String,
        retry_at: Option<DateTime<Utc>>,
    },
}

impl Outcome {
    /// One word for a terminal and the envelope: delivered, refused, retrying.
    pub fn word(&self) -> &'static str {
        match self {
            Outcome::Delivered => "delivered",
            Outcome::Refused(_) => "refused",
            Outcome::Retrying { .. } => "retrying",
        }
    }
}

/// One channel tried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tried {
    pub channel: String,
    pub outcome: Outcome,
}

/// The test notification for `channel`, sent at `now`: it says plainly that it is a test,
/// that nothing is wrong, and where it came from.
pub fn test_alert(config: &Config, channel: &str, id: &str, now: DateTime<Utc>) -> Alert {
    Alert {
        id: id.to_string(),
        key: format!("test:{channel}"),
        kind: "test".into(),
        name: format!("fleetdash test: {} to {channel}", config.hub),
        event: AlertEvent::Test,
        band: Band::Green,
        reason: Some(format!(
            "a test notification, nothing is wrong. Sent by `fleetdash alerts test` on hub {} \
             (config {}) at {} UTC: this channel's alerts reach you.",
            config.hub,
            config.path.display(),
            now.format("%Y-%m-%d %H:%M:%S")
        )),
        status: Asc::SUCCESS,
        since: now,
        at: now,
        takes_down: Vec::new(),
        link: config
            .alerts
            .dashboard_url
            .as_ref()
            .map(ToString::to_string),
        detail: None,
    }
}

/// Sends a test notification through each of `providers` (the configured channels, or the one
/// asked for) via the test outbox in `config`'s `state_dir`, one delivery pass, and says what
/// became of each. An earlier test still pending there is dropped first: nobody waits for it.
pub async fn send(
    config: &Config,
    rules: &Rules,
    providers: Vec<Arc<dyn Provider>>,
    now: DateTime<Utc>,
) -> Result<Vec<Tried>> {
    let dir = config.state_dir.clone();
    let gate = config.gate();
    let limits = Limits::of(&rules.alerts);
    let outbox = tokio::task::spawn_blocking(move || -> Result<Outbox> {
        let outbox = Outbox::open_file(&dir, TEST_OUTBOX_FILE, gate, limits)?;
        outbox.start_over(now)?;
        Ok(outbox)
    })
    .await??;
    let outbox = Arc::new(outbox);
    // One id for the run: each (id, channel) pair is its own item.
    let id = format!("test:{}", uuid::Uuid::new_v4());
    let names: Vec<String> = providers.iter().map(|p| p.name().to_string()).collect();
    let delivery = Delivery::new(outbox.clone(), providers);
    // Each channel its own alert (its name in the title), kept for that channel alone, all
    // in one transaction.
    let alerts: Vec<(Alert, String)> = names
        .iter()
        .map(|name| (test_alert(config, name, &id, now), name.clone()))
        .collect();
    let store = outbox.clone();
    tokio::task::spawn_blocking(move || {
        let pairs: Vec<(&Alert, [&str; 1])> =
            alerts.iter().map(|(a, c)| (a, [c.as_str()])).collect();
        let pairs: Vec<(&Alert, &[&str])> = pairs.iter().map(|(a, c)| (*a, &c[..])).collect();
        store.enqueue_all(&pairs, now)
    })
    .await??;
    delivery.pass(now).await?;
    let store = outbox.clone();
    let lookup = id.clone();
    let (outcomes, health) = tokio::task::spawn_blocking(move || {
        Ok::<_, anyhow::Error>((store.outcomes(&lookup)?, store.health()?))
    })
    .await??;
    let mut tried = Vec::new();
    for name in names {
        let outcome = outcomes
            .iter()
            .find(|(channel, _)| *channel == name)
            .and_then(|(_, outcome)| outcome.clone());
        let health = health.iter().find(|h| h.channel == name);
        let reason = health
            .and_then(|h| h.last_reason.clone())
            .unwrap_or_else(|| "no answer".into());
        let outcome = match outcome.as_deref() {
            Some("delivered") => Outcome::Delivered,
            Some("refused") => Outcome::Refused(reason),
            _ => Outcome::Retrying {
                reason,
                retry_at: health.and_then(|h| h.retry_at),
            },
        };
        tried.push(Tried {
            channel: name,
            outcome,
        });
    }
    Ok(tried)
}

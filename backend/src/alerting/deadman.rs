//! The collector's dead man's switch: after each good pass, a GET of `[alerts] deadman_url`
//! (a Healthchecks-style check URL), so that something outside fleetdash notices when the
//! collector stops. The ping is bounded ([`PING_TIMEOUT`]) and never fails the pass; a failing
//! ping is logged once when it starts (and when it ends) rather than at every pass, and is
//! reported like an alert channel ("deadman failing since 14:02: HTTP 503").
//!
//! The URL is never logged nor shown: a check's URL is its credential.

use std::sync::Mutex;
use std::time::Duration;

use chrono::{DateTime, Utc};

use super::outbox::ChannelHealth;
use super::provider::common;
use crate::net::ProbeClient;

/// A ping's deadline: well under any cadence, so a hung check service costs the pass little.
pub const PING_TIMEOUT: Duration = Duration::from_secs(10);
/// The most of the check service's reply read ("OK").
pub const REPLY_MAX_BYTES: usize = 4 * 1024;
/// The name the switch is reported under, beside the channels.
pub const NAME: &str = "deadman";

#[derive(Debug, Default, Clone)]
struct State {
    failing_since: Option<DateTime<Utc>>,
    last_reason: Option<String>,
    failures: u32,
}

pub struct Deadman {
    url: url::Url,
    client: ProbeClient,
    state: Mutex<State>,
}

impl Deadman {
    pub fn new(url: url::Url) -> Deadman {
        Deadman::with_timeout(url, PING_TIMEOUT)
    }

    pub fn with_timeout(url: url::Url, timeout: Duration) -> Deadman {
        Deadman {
            url,
            client: ProbeClient::new(timeout, REPLY_MAX_BYTES),
            state: Mutex::default(),
        }
    }

    /// The configured switch, if any.
    pub fn from_config(config: &crate::config::Config) -> Option<Deadman> {
        config.alerts.deadman_url.clone().map(Deadman::new)
    }

    /// Pings after a good pass. Returns whether the check service took it; the caller's pass
    /// goes on either way.
    pub async fn ping(&self, now: DateTime<Utc>) -> bool {
        let result = match self.client.get(self.url.clone(), None).await {
            Ok(reply) => common::judge(&reply).map_err(|e| e.reason),
            Err(f) => Err(f.reason),
        };
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        match result {
            Ok(()) => {
                if let Some(since) = s.failing_since.take() {
                    tracing::info!(failing_since = %since, "dead man's switch pings again");
                }
                s.failures = 0;
                true
            }
            Err(reason) => {
                if s.failing_since.is_none() || s.last_reason.as_deref() != Some(reason.as_str()) {
                    tracing::warn!(%reason, "dead man's switch ping failed");
                }
                s.failing_since.get_or_insert(now);
                s.last_reason = Some(reason);
                s.failures += 1;
                false
            }
        }
    }

    /// The switch's health, in the channels' shape.
    pub fn health(&self) -> ChannelHealth {
        let s = self.state.lock().unwrap_or_else(|p| p.into_inner()).clone();
        ChannelHealth {
            channel: NAME.to_string(),
            failing_since: s.failing_since,
            last_reason: s.last_reason,
            failures: s.failures,
            retry_at: None,
            pending: 0,
        }
    }
}

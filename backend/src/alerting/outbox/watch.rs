//! A failing channel told to the others: the page shows "alerts: ntfy failing since 14:02",
//! but a dead ntfy topic is exactly what keeps the operator from opening the page. Once a
//! channel has failed `down_after` consecutive attempts (the rules file's
//! `alerts.fail_after_passes`, the same count that makes an element fire), every other channel
//! is told once; when it delivers again, they are told it recovered. No reminders: the page
//! keeps saying it while it lasts.
//!
//! Each notice is an ordinary alert through the outbox, enqueued to every other configured
//! channel whatever its bands and sections (a channel that cannot be reached concerns all).
//! Its id carries the channel's `failing_since`, so enqueueing it again is a no-op (the outbox's
//! dedupe key): a crash after the failure was recorded and before the notice was kept raises it
//! again at the next failure, and the recovery is kept before the delivery that proves it is
//! marked, so neither is lost.

use chrono::{DateTime, Utc};
use fleetdash_model::{Asc, Band};

use super::store::ChannelHealth;
use crate::alerting::{Alert, AlertEvent};

/// The element key of a channel's notices (`channel:ntfy`).
pub fn key(channel: &str) -> String {
    format!("channel:{channel}")
}

/// When a failing channel is told to the others, and the click target of the notice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelWatch {
    /// Consecutive failed attempts that make a channel down.
    pub down_after: u32,
    /// `[alerts] dashboard_url`.
    pub link: Option<String>,
}

impl ChannelWatch {
    /// The notice a channel in `health` is owed now, if any: it just failed (`Firing`, once
    /// it has failed `down_after` times in a row), or it is about to be marked delivering again
    /// after such a failure (`Recovered`).
    pub fn notice(
        &self,
        health: &ChannelHealth,
        event: AlertEvent,
        now: DateTime<Utc>,
    ) -> Option<Alert> {
        let since = health.failing_since?;
        if health.failures < self.down_after.max(1) {
            return None;
        }
        let (band, status, reason) = match event {
            AlertEvent::Recovered => (Band::Green, Asc::success(), None),
            _ => {
                let mut why = health
                    .last_reason
                    .clone()
                    .filter(|r| !r.trim().is_empty())
                    .unwrap_or_else(|| "failing".into());
                why.push_str(&format!("; {} failed tries", health.failures));
                if health.pending > 0 {
                    why.push_str(&format!(", {} alerts waiting for it", health.pending));
                }
                (Band::Amber, Asc::DEPENDENCY_UNAVAILABLE, Some(why))
            }
        };
        Some(Alert {
            id: format!(
                "{}:{}:{}",
                key(&health.channel),
                event.as_str(),
                since.timestamp()
            ),
            key: key(&health.channel),
            kind: "alert channel".into(),
            name: health.channel.clone(),
            event,
            band,
            reason,
            status,
            since,
            at: now,
            takes_down: Vec::new(),
            link: self.link.clone(),
            detail: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn t(s: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(1_800_000_000 + s, 0).unwrap()
    }

    fn health(failures: u32) -> ChannelHealth {
        ChannelHealth {
            channel: "ntfy".into(),
            failing_since: Some(t(0)),
            last_reason: Some("503".into()),
            failures,
            retry_at: None,
            pending: 3,
        }
    }

    #[test]
    fn a_channel_is_told_once_it_failed_down_after_times_and_then_its_recovery() {
        let watch = ChannelWatch {
            down_after: 2,
            link: Some("https://fleet.example/".into()),
        };
        assert_eq!(watch.notice(&health(1), AlertEvent::Firing, t(10)), None);
        assert_eq!(watch.notice(&health(1), AlertEvent::Recovered, t(10)), None);
        let down = watch.notice(&health(2), AlertEvent::Firing, t(30)).unwrap();
        assert_eq!(down.id, "channel:ntfy:firing:1800000000");
        assert_eq!(
            down.headline(),
            "▲ warn · alert channel ntfy: 503; 2 failed tries, 3 alerts waiting for it"
        );
        let again = watch.notice(&health(5), AlertEvent::Firing, t(90)).unwrap();
        assert_eq!(
            again.id, down.id,
            "one episode, one id: the outbox keeps it once"
        );
        let back = watch
            .notice(&health(5), AlertEvent::Recovered, t(99))
            .unwrap();
        assert_eq!(back.id, "channel:ntfy:recovered:1800000000");
        assert_eq!(back.band, Band::Green);
        assert_eq!(back.link.as_deref(), Some("https://fleet.example/"));
        let fine = ChannelHealth {
            failing_since: None,
            failures: 0,
            ..health(0)
        };
        assert_eq!(watch.notice(&fine, AlertEvent::Recovered, t(99)), None);
    }
}

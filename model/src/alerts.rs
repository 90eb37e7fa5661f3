//! What alerting adds to the snapshot (issue 12), and the element keys it speaks in.
//!
//! Alerts leave fleetdash through channels the page cannot see, so the page is told three
//! things: which elements are held back from paging (a silence or a maintenance window:
//! "silenced until 16:00 (disk swap)"), which open alerts the operator acknowledged, so their
//! reminders stop ("acked 14:02"), and which channels are failing ("alerts: ntfy failing since
//! 14:02: 503"). Holding an alert back never hides the element: it is shown in its band, marked.
//!
//! [`key`] is the one place an element's key is spelt (`agent:min`, `host:lab/tunnel:heart`):
//! the collector's transitions log, history, alert engine and silences key by it, and the page
//! finds an element's hold by it. [`Element`] is what a snapshot says about the element a key
//! names: the collector derives them from each snapshot, and its alerting judges them.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::band::Band;
use crate::words::moment;

/// Alerting as of the write that carries it. `Default` (nothing configured) is what a snapshot
/// written without alerting holds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AlertsView {
    /// Whether alerting runs at all (a channel or a dead man's switch is configured).
    pub configured: bool,
    /// Elements whose alerts are held back now, by key; only elements that are not green (a
    /// green element has nothing to hold back, and a broad silence would otherwise list the
    /// whole fleet).
    #[serde(default)]
    pub held: Vec<Held>,
    /// Elements whose open alert the operator acknowledged (issue 24): no reminders until its
    /// band changes. Absent from snapshots written before acks existed.
    #[serde(default)]
    pub acked: Vec<Acked>,
    /// Every configured channel (and the dead man's switch), failing or not.
    #[serde(default)]
    pub channels: Vec<ChannelState>,
    /// How many of the fleet's independent probes failed in the write, and whether that is
    /// fleetdash's own blind spot (issue 24), alerting configured or not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reach: Option<Reach>,
}

/// fleetdash's own blind spot (issue 24): when most of the fleet's independent probes fail at
/// once (each agent's endpoint, each remote host's source), the likely cause is fleetdash's own
/// host or network, not eleven failures. One element ([`key::BLIND_SPOT`]) says so; every agent
/// and remote host depends on it, so their own alerts wait under it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reach {
    pub agents_failed: usize,
    pub agents: usize,
    pub hosts_failed: usize,
    pub hosts: usize,
    /// At least the rules' share and count of them failed.
    pub blind: bool,
}

impl Reach {
    /// "10 of 11 agents and 2 of 3 hosts fail at once: this host's network?"
    pub fn words(&self) -> String {
        let mut parts = Vec::new();
        if self.agents > 0 {
            let noun = if self.agents == 1 { "agent" } else { "agents" };
            parts.push(format!("{} of {} {noun}", self.agents_failed, self.agents));
        }
        if self.hosts > 0 {
            let noun = if self.hosts == 1 { "host" } else { "hosts" };
            parts.push(format!("{} of {} {noun}", self.hosts_failed, self.hosts));
        }
        format!("{} fail at once: this host's network?", parts.join(" and "))
    }
}

/// One element held back from paging: by a silence or a maintenance window, or because the
/// config declares it known to drop (`flaky = { reason, until }` on an agent, a host or a
/// tunnel: it still shows in its band and still counts, its red wakes nobody).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Held {
    /// The element's [`key`].
    pub key: String,
    /// When the hold ends: the silence's or the window's end; a declaration's lapse (the end
    /// of its `until` day, UTC), none for a declaration without an end date.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<DateTime<Utc>>,
    /// The reason given when it was silenced ("disk swap"), may be empty; a declaration's
    /// reason with the day it holds until, as declared ("laptop tunnel drops at night (until
    /// 31 Jan)"), never empty.
    #[serde(default)]
    pub reason: String,
    /// Held as declared flaky in the config, not by a silence or a window. Absent: false.
    #[serde(default, skip_serializing_if = "is_false")]
    pub flaky: bool,
    pub checked_at: DateTime<Utc>,
}

fn is_false(b: &bool) -> bool {
    !b
}

/// The first words of a declared element's mark, which the needs-you lines sort by.
pub const DECLARED_FLAKY: &str = "declared flaky";

impl Held {
    /// The page's words at `now`, the time said at `offset` from UTC: "silenced until 16:00
    /// (disk swap)", with its date when it is not within the day ("until 2 Dec 16:00"); a
    /// declaration says the day it was declared until, as written: "declared flaky: laptop
    /// tunnel drops at night (until 31 Jan)".
    pub fn describe(&self, now: DateTime<Utc>, offset: chrono::FixedOffset) -> String {
        let reason = self.reason.trim();
        if self.flaky {
            // The collector words the declared day into the reason (`config::flaky`): no date
            // arithmetic in the page.
            return format!("{DECLARED_FLAKY}: {reason}");
        }
        let mut out = "silenced".to_string();
        if let Some(until) = self.until {
            out.push_str(&format!(" until {}", moment(until, now, offset)));
        }
        if !reason.is_empty() {
            out.push_str(&format!(" ({reason})"));
        }
        out
    }
}

/// One element whose open alert the operator acknowledged (`fleetdash ack KEY`, or the phone):
/// it sends no reminders until its band changes. It still needs the operator: it keeps its band
/// and its needs-you line, marked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Acked {
    /// The element's [`key`].
    pub key: String,
    /// When it was acknowledged.
    pub at: DateTime<Utc>,
    /// Where from, in a few words ("cli", "from the phone"); may be empty.
    #[serde(default)]
    pub via: String,
    pub checked_at: DateTime<Utc>,
}

impl Acked {
    /// The page's words at `now`, the time said at `offset` from UTC: "acked 14:02" (with its
    /// date when it is not within the day).
    pub fn describe(&self, now: DateTime<Utc>, offset: chrono::FixedOffset) -> String {
        format!("acked {}", moment(self.at, now, offset))
    }
}

/// One alert channel's delivery health.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChannelState {
    /// The channel's configured name ("ntfy", "hub"), or "deadman" for the dead man's switch.
    pub name: String,
    /// Since when it has failed without a success in between; `None` while it delivers.
    #[serde(default)]
    pub failing_since: Option<DateTime<Utc>>,
    /// Why its last attempt failed ("503", "connection refused"), while failing.
    #[serde(default)]
    pub reason: Option<String>,
    /// Alerts waiting for it.
    #[serde(default)]
    pub pending: u64,
    pub checked_at: DateTime<Utc>,
}

impl ChannelState {
    /// The page's words for a failing channel, times at `offset`:
    /// "alerts: ntfy failing since 14:02: 503 (3 waiting)"; `None` while it delivers.
    pub fn describe(&self, now: DateTime<Utc>, offset: chrono::FixedOffset) -> Option<String> {
        let since = self.failing_since?;
        let mut out = format!(
            "alerts: {} failing since {}",
            self.name,
            moment(since, now, offset)
        );
        if let Some(reason) = self.reason.as_deref().filter(|r| !r.trim().is_empty()) {
            out.push_str(": ");
            out.push_str(reason.trim());
        }
        if self.pending > 0 {
            out.push_str(&format!(" ({} waiting)", self.pending));
        }
        Some(out)
    }
}

impl ChannelState {
    /// Amber while it fails: nothing in the fleet is down for it, but nobody will be paged.
    pub fn band(&self) -> Band {
        if self.failing_since.is_some() {
            Band::Amber
        } else {
            Band::Green
        }
    }
}

/// What a snapshot says about one element: enough to see a band change and to record it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Element {
    pub kind: &'static str,
    pub name: String,
    pub band: crate::Band,
    /// Why it is not green; `None` when it is.
    pub reason: Option<String>,
}

/// Element keys, spelt in one place. A key names the same thing across runs and files.
pub mod key {
    pub fn agent(name: &str) -> String {
        format!("agent:{name}")
    }
    /// A live task, by the agent that runs it.
    pub fn live_task(agent: &str, id: &str) -> String {
        format!("task:{agent}/{id}")
    }
    /// A work-queue task.
    pub fn queue_task(id: &str) -> String {
        format!("queue:{id}")
    }
    pub fn board(name: &str) -> String {
        format!("board:{name}")
    }
    pub fn card(board: &str, id: &str) -> String {
        format!("board:{board}/card:{id}")
    }
    /// A board's cards needing attention that its capped listing leaves out, as one element.
    pub fn unlisted_cards(board: &str) -> String {
        format!("board:{board}/unlisted")
    }
    pub fn host(name: &str) -> String {
        format!("host:{name}")
    }
    /// A host's check: `kind` is "service", "tunnel" or "cron".
    pub fn host_check(host: &str, kind: &str, name: &str) -> String {
        format!("host:{host}/{kind}:{name}")
    }
    pub fn vault(host: &str) -> String {
        format!("host:{host}/vault")
    }
    pub const BACKUPS: &str = "backups";
    /// fleetdash's own reach of the fleet ([`super::Reach`]).
    pub const BLIND_SPOT: &str = "fleetdash:reach";
    /// This host's clock, as fleetdash saw it ([`crate::clock::ClockView`]).
    pub const CLOCK: &str = "fleetdash:clock";
    /// The hosts' tunnels as their own collector reads them: a reading of its own, though they
    /// are listed in the hosts' rows, so that a tunnel's failure is counted, confirmed and paged
    /// on the tunnels' cadence (issue 43), not the hosts'.
    pub const TUNNELS: &str = "section:tunnels";
    /// Whether `key` is a host's tunnel.
    pub fn is_tunnel(key: &str) -> bool {
        key.starts_with("host:") && key.contains("/tunnel:")
    }
    /// A section of the snapshot ("agents", "tasks.queue").
    pub fn section(name: &str) -> String {
        format!("section:{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{FixedOffset, TimeZone};

    #[test]
    fn a_hold_and_a_failing_channel_in_the_operators_words() {
        let at = Utc.with_ymd_and_hms(2026, 11, 30, 14, 2, 0).unwrap();
        let utc = FixedOffset::east_opt(0).unwrap();
        let held = Held {
            key: key::host("LAB"),
            until: Some(at + chrono::Duration::minutes(118)),
            reason: "disk swap".into(),
            flaky: false,
            checked_at: at,
        };
        assert_eq!(held.describe(at, utc), "silenced until 16:00 (disk swap)");
        // Three days on, a time of day alone would name the wrong day.
        let long = Held {
            until: Some(at + chrono::Duration::days(3)),
            ..held.clone()
        };
        assert_eq!(
            long.describe(at, utc),
            "silenced until 3 Dec 14:02 (disk swap)"
        );
        let plus_one = FixedOffset::east_opt(3600).unwrap();
        assert_eq!(
            Held {
                reason: " ".into(),
                ..held
            }
            .describe(at, plus_one),
            "silenced until 17:00"
        );
        let mut ch = ChannelState {
            name: "ntfy".into(),
            failing_since: None,
            reason: Some("503".into()),
            pending: 3,
            checked_at: at,
        };
        assert_eq!(ch.describe(at, utc), None);
        ch.failing_since = Some(at);
        assert_eq!(
            ch.describe(at, utc).as_deref(),
            Some("alerts: ntfy failing since 14:02: 503 (3 waiting)")
        );
        assert_eq!(
            ch.describe(at + chrono::Duration::days(2), utc).as_deref(),
            Some("alerts: ntfy failing since 30 Nov 14:02: 503 (3 waiting)")
        );
    }

    /// The time is the reader's: 14:02 UTC is 16:02 two hours east of it, and a day-old ack
    /// says its date.
    #[test]
    fn an_ack_in_the_operators_words_in_their_zone() {
        let at = Utc.with_ymd_and_hms(2026, 11, 30, 14, 2, 0).unwrap();
        let acked = Acked {
            key: key::agent("min"),
            at,
            via: "cli".into(),
            checked_at: at,
        };
        let utc = FixedOffset::east_opt(0).unwrap();
        let east = FixedOffset::east_opt(2 * 3600).unwrap();
        assert_eq!(acked.describe(at, utc), "acked 14:02");
        let later = at + chrono::Duration::minutes(30);
        assert_eq!(acked.describe(later, east), "acked 16:02");
        let next_day = at + chrono::Duration::days(1);
        assert_eq!(acked.describe(next_day, east), "acked 30 Nov 16:02");
    }

    #[test]
    fn a_snapshot_written_before_acks_reads_as_none_acked() {
        let view: AlertsView =
            serde_json::from_str(r#"{"configured":true,"held":[],"channels":[]}"#).unwrap();
        assert!(view.acked.is_empty());
    }

    #[test]
    fn keys_are_spelt_as_the_logs_keep_them() {
        assert_eq!(
            key::host_check("lab", "tunnel", "heart"),
            "host:lab/tunnel:heart"
        );
        assert_eq!(key::card("ops", "c1"), "board:ops/card:c1");
        assert_eq!(key::section("tasks.queue"), "section:tasks.queue");
    }
}

//! What alerting tells each snapshot write (`Snapshot.alerts`): the elements whose alerts are
//! held back now (a silence or a maintenance window), the open alerts the operator acked, and
//! every channel's delivery health, so the page shows "silenced until 16:00 (disk swap)",
//! "acked 14:02" and "alerts: ntfy failing since 14:02: 503".
//!
//! Read-only over alerting's files (silences, acks, the engine's state, outbox); a file that cannot be read is logged and
//! said on the page as what it costs, never a failed write. An outbox that could not be opened
//! at all makes every channel failing, with the outbox's path and error as the reason.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use fleetdash_model::{Acked, AlertsView, Band, ChannelState, Held};

use super::deadman::Deadman;
use super::engine::{Alerting, Hold};
use super::outbox::{ChannelHealth, Outbox};
use crate::write::status_json::AlertsLook;
use crate::write::transitions::Elements;

/// Why this run delivers no alert: the outbox could not be opened, even afresh.
#[derive(Debug, Clone)]
pub struct Unusable {
    /// "outbox unusable: <path>: <error>", as each channel's reason.
    pub reason: String,
    /// When opening it failed: every channel has failed since.
    pub since: DateTime<Utc>,
}

pub struct Look {
    pub alerting: Arc<Alerting>,
    pub outbox: Result<Arc<Outbox>, Unusable>,
    /// The configured channels, so one that never sent anything is listed too.
    pub channels: Vec<String>,
    pub deadman: Option<Arc<Deadman>>,
}

impl AlertsLook for Look {
    fn look(&self, elements: &Elements, now: DateTime<Utc>) -> AlertsView {
        // A silence is listed while it holds something back; a declaration while it stands,
        // green or not: status.json says what the config declared of each element shown.
        let held = self
            .alerting
            .holds(elements, now)
            .into_iter()
            .filter_map(|(key, hold)| match hold {
                Hold::Silenced(active) => not_green_on_the_page(&key, elements).then_some(Held {
                    key,
                    until: Some(active.until),
                    reason: active.reason,
                    flaky: false,
                    checked_at: now,
                }),
                Hold::Declared(flaky) => Some(flaky.held(key, now)),
            })
            .collect();
        // The engine's state as of the last pass: an ack listed here stands for the alert that
        // is open now.
        let acked = self
            .alerting
            .standing_acks(now)
            .into_iter()
            .map(|a| Acked {
                key: a.key,
                at: a.at,
                via: a.via,
                checked_at: now,
            })
            .collect();
        let known = match &self.outbox {
            Ok(outbox) => outbox.health().unwrap_or_else(|e| {
                tracing::warn!(file = %outbox.path().display(), "alert channels' health not read: {e:#}");
                Vec::new()
            }),
            Err(_) => Vec::new(),
        };
        let mut channels: Vec<ChannelState> = self
            .channels
            .iter()
            .map(
                |name| match (&self.outbox, known.iter().find(|h| &h.channel == name)) {
                    (Err(unusable), _) => ChannelState {
                        name: name.clone(),
                        failing_since: Some(unusable.since),
                        reason: Some(unusable.reason.clone()),
                        pending: 0,
                        checked_at: now,
                    },
                    (Ok(_), Some(h)) => state(h, now),
                    (Ok(_), None) => ChannelState {
                        name: name.clone(),
                        failing_since: None,
                        reason: None,
                        pending: 0,
                        checked_at: now,
                    },
                },
            )
            .collect();
        if let Some(deadman) = &self.deadman {
            channels.push(state(&deadman.health(), now));
        }
        AlertsView {
            configured: true,
            held,
            acked,
            channels,
            // Judged by the writer, on the whole snapshot.
            reach: None,
        }
    }
}

/// A channel's health as the page reads it: the reason only while it fails.
/// Whether the page shows `key` not green: the element itself, or, for a host, any check under
/// it (the page's host row folds its checks; the host's own element is only whether it
/// answers), so a silenced host whose service failed still says so on its row.
fn not_green_on_the_page(key: &str, elements: &Elements) -> bool {
    let under = format!("{key}/");
    elements.get(key).is_some_and(|e| e.band != Band::Green)
        || elements
            .range(under.clone()..)
            .take_while(|(k, _)| k.starts_with(&under))
            .any(|(_, e)| e.band != Band::Green)
}

fn state(h: &ChannelHealth, now: DateTime<Utc>) -> ChannelState {
    ChannelState {
        name: h.channel.clone(),
        failing_since: h.failing_since,
        reason: h.failing_since.and(h.last_reason.clone()),
        pending: h.pending as u64,
        checked_at: now,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleetdash_model::alerts::Element;

    fn el(band: Band) -> Element {
        Element {
            kind: "x",
            name: "x".into(),
            band,
            reason: None,
        }
    }

    /// The ack `fleetdash ack` keeps reaches the write, stamped with the write's clock, while
    /// its alert is open; not after the alert recovered.
    #[test]
    fn a_write_carries_the_standing_acks() {
        use crate::alerting::acks::AckStore;
        use crate::alerting::engine::{Readings, gone};
        use crate::redact::RedactionGate;
        use chrono::Duration;
        let (dir, path) = crate::config::config_beside_fleet_rules(
            "output_dir = \"o\"\nstate_dir = \"s\"\nrules = \"rules.yaml\"\n",
        );
        std::fs::create_dir_all(dir.path().join("s")).unwrap();
        let (config, rules) = crate::config::Config::load(&path).unwrap_or_else(|e| panic!("{e}"));
        let gate = RedactionGate::default();
        let alerting = Arc::new(Alerting::new(&config, &rules, gate.clone()));
        let red: Elements = [("agent:min".to_string(), el(Band::Red))].into();
        let mut now = DateTime::parse_from_rfc3339("2026-11-30T14:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        while alerting
            .after_write(&red, &Readings::new(), &gone::Ended::new(), now)
            .is_empty()
        {
            now += Duration::minutes(1);
        }
        let acked_at = now;
        AckStore::new(&config.state_dir, gate)
            .ack("agent:min", acked_at, "from the phone")
            .unwrap();
        let look = Look {
            alerting: alerting.clone(),
            outbox: Err(Unusable {
                reason: "not needed here".into(),
                since: now,
            }),
            channels: Vec::new(),
            deadman: None,
        };
        now += Duration::minutes(5);
        assert_eq!(
            look.look(&red, now).acked,
            vec![Acked {
                key: "agent:min".into(),
                at: acked_at,
                via: "from the phone".into(),
                checked_at: now,
            }]
        );
        let green: Elements = [("agent:min".to_string(), el(Band::Green))].into();
        for _ in 0..rules.alerts.recover_after.count {
            now += Duration::minutes(1);
            alerting.after_write(&green, &Readings::new(), &gone::Ended::new(), now);
        }
        assert!(look.look(&green, now).acked.is_empty());
    }

    /// A host that answers but whose service failed is red on the page: a silence on it is said
    /// there. A green host with green checks is not listed; a neighbour's key is not "under".
    #[test]
    fn a_host_is_not_green_on_the_page_while_a_check_under_it_is_not() {
        let mut elements: Elements = [
            ("host:lab", el(Band::Green)),
            ("host:lab/service:nginx", el(Band::Red)),
            ("host:lab2", el(Band::Green)),
            ("host:lab2/service:nginx", el(Band::Green)),
        ]
        .into_iter()
        .map(|(k, e)| (k.to_string(), e))
        .collect();
        assert!(not_green_on_the_page("host:lab", &elements));
        assert!(!not_green_on_the_page("host:lab2", &elements));
        elements.insert("host:lab/service:nginx".into(), el(Band::Green));
        assert!(!not_green_on_the_page("host:lab", &elements));
        elements.insert("host:lab".into(), el(Band::Red));
        assert!(not_green_on_the_page("host:lab", &elements));
    }
}

//! From probe evidence to an agent's row: fields, colour band, Agent Status Code and reason.
//!
//! Colour rules (spec §5.2): last exchange younger than the green threshold is green, younger
//! than the amber threshold is amber, older is red; down is red (its exchange band too: a
//! past exchange never shows a down agent as ok); an empty card is red; a model window at or
//! above the rules' percentage is amber. Every failed probe turns its field into
//! `"error: <reason>"`, marks the row stale and red: a failure is shown, never smoothed over.

use chrono::{DateTime, Utc};
use fleetdash_model::{Agent, Asc, Band, Heartbeat, Probe, RulesView, Window, human_age};

use super::audit_tail::AuditTail;
use super::card::CardProbe;
use super::heartbeat::HeartbeatReply;
use crate::config::AgentConfig;
use crate::net::ProbeFailure;

pub struct Evidence {
    pub card: CardProbe,
    pub heartbeat: Result<HeartbeatReply, ProbeFailure>,
    /// `None` when no audit log is configured for the agent.
    pub audit: Option<Result<AuditTail, ProbeFailure>>,
}

/// One condition of a row; the worst decides the row's band and code.
struct Condition {
    band: Band,
    asc: Asc,
    reason: String,
}

#[derive(Default)]
struct Conditions(Vec<Condition>);

impl Conditions {
    fn push(&mut self, band: Band, asc: Asc, reason: impl Into<String>) {
        self.0.push(Condition {
            band,
            asc,
            reason: reason.into(),
        });
    }

    /// (band, code, reason) of the row: the first of the worst conditions names the code, and
    /// the reason lists them all, worst first.
    fn summary(mut self) -> (Band, Asc, Option<String>) {
        // A stable sort keeps the evidence order within a band.
        self.0.sort_by_key(|c| std::cmp::Reverse(c.band));
        match self.0.first() {
            None => (Band::Green, Asc::SUCCESS, None),
            Some(worst) => {
                let reason = self
                    .0
                    .iter()
                    .map(|c| c.reason.as_str())
                    .collect::<Vec<_>>()
                    .join("; ");
                (worst.band, worst.asc.clone(), Some(reason))
            }
        }
    }
}

pub fn row(
    agent: &AgentConfig,
    evidence: Evidence,
    rules: &RulesView,
    now: DateTime<Utc>,
) -> Agent {
    let mut conditions = Conditions::default();
    let Evidence {
        card,
        heartbeat,
        audit,
    } = evidence;

    let skills_count = match &card.card {
        Ok(facts) => {
            if facts.skills_count == 0 {
                conditions.push(
                    Band::Red,
                    Asc::FAILED_PRECONDITION,
                    "agent card lists no skills",
                );
            }
            Probe::Value(facts.skills_count)
        }
        Err(failure) => {
            let reason = if card.up {
                failure.reason.clone()
            } else {
                format!("down: {}", failure.reason)
            };
            conditions.push(Band::Red, failure.asc.clone(), reason.clone());
            Probe::Error(reason)
        }
    };

    let (heartbeat, facts) = match heartbeat {
        Ok(reply) => (
            Probe::Value(Heartbeat {
                dialect: reply.wire.as_str().to_string(),
                latency_ms: u64::try_from(reply.latency.as_millis()).unwrap_or(u64::MAX),
                last_activity_at: reply.facts.last_activity_at.into(),
                in_flight: reply.facts.in_flight.clone().into(),
            }),
            Some(reply.facts),
        ),
        Err(failure) => {
            let reason = format!("heartbeat: {}", failure.reason);
            // When the agent is down the card already said why; do not say it twice.
            if card.up {
                conditions.push(Band::Red, failure.asc, reason.clone());
            }
            (Probe::Error(reason), None)
        }
    };

    let mut audit_skipped_lines = 0;
    let last_exchange_s = match audit {
        None => {
            conditions.push(
                Band::Amber,
                Asc::NOT_FOUND,
                "last exchange unknown: no audit_log configured",
            );
            Probe::Unknown
        }
        Some(Err(failure)) => {
            conditions.push(Band::Red, failure.asc, failure.reason.clone());
            Probe::Error(failure.reason)
        }
        Some(Ok(tail)) => {
            audit_skipped_lines = tail.skipped_lines;
            match tail.last_exchange_ts {
                Some(ts) => Probe::Value(age_seconds(ts, now)),
                None => {
                    let reason = if tail.collector_lines > 0 {
                        format!(
                            "audit log: no exchange in the part read, only the collector's own \
                             probes (peer {:?})",
                            agent.collector_peer
                        )
                    } else {
                        "audit log: no successful exchange in the part read".to_string()
                    };
                    conditions.push(Band::Red, Asc::NOT_FOUND, reason.clone());
                    Probe::Error(reason)
                }
            }
        }
    };
    let age_band = match &last_exchange_s {
        Probe::Value(age) => Band::for_exchange_age(*age, rules),
        Probe::Unknown => Band::Amber,
        Probe::Error(_) => Band::Red,
    };
    if let Probe::Value(age) = last_exchange_s {
        match age_band {
            Band::Green => {}
            Band::Amber => conditions.push(
                Band::Amber,
                Asc::SUCCESS_WITH_WARNINGS,
                format!("last exchange {} ago", human_age(age)),
            ),
            Band::Red => conditions.push(
                Band::Red,
                Asc::TIMEOUT,
                format!(
                    "no exchange for {} (>= {})",
                    human_age(age),
                    human_age(rules.exchange_amber_below_s)
                ),
            ),
        }
    }

    // The row already says why a down agent is red; its exchange is not ok either, however
    // recent (the page shows the band beside the age).
    let exchange_band = if card.up { age_band } else { Band::Red };

    let facts = facts.unwrap_or_default();
    let model = facts.model.or_else(|| agent.model.clone());
    let lane = agent.lane.clone().or(facts.lane);
    let window = facts.window.map(|w| {
        let band = w
            .percent
            .map_or(Band::Green, |p| Band::for_window_percent(p, rules));
        if let (Band::Amber, Some(p)) = (band, w.percent) {
            conditions.push(
                Band::Amber,
                Asc::SUCCESS_WITH_WARNINGS,
                format!(
                    "model window {} % (>= {} %)",
                    (p * 10.0).round() / 10.0,
                    rules.window_amber_at_percent
                ),
            );
        }
        Window {
            model: w.model.into(),
            percent: w.percent.into(),
            status: w.status.into(),
            resets_at: w.resets_at.into(),
            band,
        }
    });

    let stale =
        !card.up || skills_count.is_error() || heartbeat.is_error() || last_exchange_s.is_error();
    let (band, status, reason) = conditions.summary();
    Agent {
        name: agent.name.clone(),
        endpoint: public_endpoint(&agent.endpoint),
        plane: agent.plane.clone(),
        up: card.up,
        last_exchange_s,
        exchange_band,
        skills_count,
        lane: lane.into(),
        model: model.into(),
        window: window.into(),
        heartbeat,
        band,
        status,
        reason,
        audit_skipped_lines,
        // The intake's last report is added where the snapshot is merged, not by the probe.
        last_report_s: None,
        history: None,
        checked_at: now,
        stale,
    }
}

/// A row for an agent that could not even be probed (e.g. its token is missing).
pub fn unprobed(
    agent: &AgentConfig,
    failure: ProbeFailure,
    rules: &RulesView,
    now: DateTime<Utc>,
) -> Agent {
    let reason = format!("not probed: {}", failure.reason);
    let mut row = row(
        agent,
        Evidence {
            card: CardProbe {
                up: false,
                card: Err(ProbeFailure::new(failure.asc.clone(), reason.clone())),
            },
            heartbeat: Err(failure),
            audit: None,
        },
        rules,
        now,
    );
    row.reason = Some(reason);
    row
}

fn age_seconds(ts: f64, now: DateTime<Utc>) -> u64 {
    let now_s = now.timestamp_millis() as f64 / 1000.0;
    // A timestamp from the future (clock skew between hosts) counts as "just now".
    (now_s - ts).max(0.0) as u64
}

/// The endpoint as shown: no user, password, query or fragment.
fn public_endpoint(endpoint: &url::Url) -> String {
    let mut url = endpoint.clone();
    let _ = url.set_username("");
    let _ = url.set_password(None);
    url.set_query(None);
    url.set_fragment(None);
    url.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::{CardFacts, ReplyFacts, Wire};
    use crate::config::Dialect;
    use crate::config::fleet_rules;
    use std::time::Duration;

    fn agent() -> AgentConfig {
        AgentConfig {
            name: "min".into(),
            endpoint: url::Url::parse("http://young:pw@127.0.0.1:18301/?k=v").unwrap(),
            dialect: Dialect::Auto,
            lane: Some("hub".into()),
            model: Some("configured-model".into()),
            plane: Some("heart".into()),
            audit_log: None,
            token: None,
            report_token: None,
            collector_peer: "fleetdash".into(),
        }
    }

    fn healthy(skills: u32, exchange_age_s: f64, now: DateTime<Utc>) -> Evidence {
        Evidence {
            card: CardProbe {
                up: true,
                card: Ok(CardFacts {
                    skills_count: skills,
                    protocol_version: None,
                }),
            },
            heartbeat: Ok(HeartbeatReply {
                wire: Wire::V1,
                latency: Duration::from_millis(12),
                facts: ReplyFacts {
                    model: Some("reported-model".into()),
                    ..Default::default()
                },
            }),
            audit: Some(Ok(AuditTail {
                last_exchange_ts: Some(now.timestamp() as f64 - exchange_age_s),
                skipped_lines: 1,
                bytes_read: 10,
                ..AuditTail::default()
            })),
        }
    }

    #[test]
    fn a_healthy_agent_is_green_with_success() {
        let now = Utc::now();
        let row = row(&agent(), healthy(3, 60.0, now), &fleet_rules(), now);
        assert_eq!(row.band, Band::Green);
        assert_eq!(row.status, Asc::SUCCESS);
        assert_eq!(row.reason, None);
        assert!(!row.stale);
        assert_eq!(row.model, Probe::Value("reported-model".into()));
        assert_eq!(row.lane, Probe::Value("hub".into()));
        assert_eq!(row.endpoint, "http://127.0.0.1:18301/");
        assert_eq!(row.audit_skipped_lines, 1);
        assert_eq!(row.window, Probe::Unknown);
    }

    #[test]
    fn empty_skills_are_red_with_their_own_reason() {
        let now = Utc::now();
        let row = row(&agent(), healthy(0, 60.0, now), &fleet_rules(), now);
        assert_eq!(row.band, Band::Red);
        assert_eq!(row.status, Asc::FAILED_PRECONDITION);
        assert_eq!(row.reason.as_deref(), Some("agent card lists no skills"));
        assert_eq!(row.skills_count, Probe::Value(0));
    }

    #[test]
    fn the_exchange_age_sets_amber_and_red() {
        let now = Utc::now();
        let amber = row(&agent(), healthy(1, 3600.0, now), &fleet_rules(), now);
        assert_eq!(
            (amber.band, amber.exchange_band),
            (Band::Amber, Band::Amber)
        );
        assert_eq!(amber.reason.as_deref(), Some("last exchange 1 h ago"));
        let red = row(&agent(), healthy(1, 7.0 * 3600.0, now), &fleet_rules(), now);
        assert_eq!(red.band, Band::Red);
        assert_eq!(red.status, Asc::TIMEOUT);
        assert_eq!(red.reason.as_deref(), Some("no exchange for 7 h (>= 6 h)"));
        assert!(
            !red.stale,
            "an old exchange is a reading, not a failed probe"
        );
    }

    #[test]
    fn a_down_agent_is_red_stale_and_says_why_once() {
        let now = Utc::now();
        let mut ev = healthy(1, 60.0, now);
        ev.card = CardProbe {
            up: false,
            card: Err(ProbeFailure::new(
                Asc::DEPENDENCY_UNAVAILABLE,
                "connection refused",
            )),
        };
        ev.heartbeat = Err(ProbeFailure::new(
            Asc::DEPENDENCY_UNAVAILABLE,
            "connection refused",
        ));
        let row = row(&agent(), ev, &fleet_rules(), now);
        assert!(!row.up && row.stale);
        assert_eq!(row.band, Band::Red);
        assert_eq!(row.status, Asc::DEPENDENCY_UNAVAILABLE);
        assert_eq!(row.reason.as_deref(), Some("down: connection refused"));
        assert_eq!(
            row.skills_count,
            Probe::Error("down: connection refused".into())
        );
        assert_eq!(
            row.heartbeat,
            Probe::Error("heartbeat: connection refused".into())
        );
        assert_eq!(row.model, Probe::Value("configured-model".into()));
        assert_eq!(
            (row.last_exchange_s, row.exchange_band),
            (Probe::Value(60), Band::Red),
            "a recent exchange beside a down agent is not ok"
        );
    }

    #[test]
    fn a_model_window_at_the_rules_percentage_is_amber_and_says_so() {
        let now = Utc::now();
        let rules = fleet_rules();
        let with_window = |percent: f64| {
            let mut ev = healthy(2, 60.0, now);
            if let Ok(reply) = &mut ev.heartbeat {
                reply.facts.window = Some(crate::a2a::WindowFacts {
                    percent: Some(percent),
                    status: Some("near limit".into()),
                    ..Default::default()
                });
            }
            row(&agent(), ev, &rules, now)
        };
        let at = rules.window_amber_at_percent as f64;
        let below = with_window(at - 0.1);
        assert_eq!((below.band, below.reason.as_deref()), (Band::Green, None));
        assert_eq!(below.window.value().map(|w| w.band), Some(Band::Green));

        let at_threshold = with_window(at);
        assert_eq!(at_threshold.band, Band::Amber);
        assert_eq!(
            at_threshold.window.value().map(|w| w.band),
            Some(Band::Amber)
        );

        let row = with_window(93.0);
        assert_eq!(row.band, Band::Amber);
        assert_eq!(row.status, Asc::SUCCESS_WITH_WARNINGS);
        assert_eq!(row.reason.as_deref(), Some("model window 93 % (>= 90 %)"));
        assert!(!row.stale, "a full window is a reading, not a failed probe");
    }

    /// Writes an audit log: the last exchange with another peer at `exchange_ts`, then the
    /// collector's own heartbeat every 2 minutes up to `now`, as a collector that keeps
    /// probing leaves it.
    fn log_with_heartbeats(path: &std::path::Path, exchange_ts: i64, now: i64) {
        let mut lines = vec![format!(
            r#"{{"ts": {exchange_ts}.0, "direction": "inbound", "peer": "min", "summary": "report"}}"#
        )];
        let mut ts = exchange_ts + 120;
        while ts <= now {
            lines.push(format!(
                r#"{{"ts": {ts}.0, "direction": "inbound", "peer": "fleetdash", "summary": "heartbeat received"}}"#
            ));
            ts += 120;
        }
        std::fs::write(path, lines.join("\n") + "\n").unwrap();
    }

    #[test]
    fn an_agent_only_the_collector_talks_to_goes_amber_then_red_at_the_rules_thresholds() {
        use super::super::audit_tail::last_exchange;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a2a_audit.jsonl");
        let rules = fleet_rules();
        let exchange_ts: i64 = 1_796_000_000;
        let green = rules.exchange_green_below_s as i64;
        let amber = rules.exchange_amber_below_s as i64;
        let judge = |age: i64, collector_peer: &str| {
            let now = exchange_ts + age;
            log_with_heartbeats(&path, exchange_ts, now);
            let tail = last_exchange(&path, 1 << 22, collector_peer).unwrap();
            let now = DateTime::from_timestamp(now, 0).unwrap();
            let mut ev = healthy(3, 0.0, now);
            ev.audit = Some(Ok(tail));
            row(&agent(), ev, &rules, now)
        };
        for (age, band) in [
            (green - 1, Band::Green),
            (green, Band::Amber),
            (amber - 1, Band::Amber),
            (amber, Band::Red),
        ] {
            let r = judge(age, "fleetdash");
            assert_eq!(
                (r.last_exchange_s.clone(), r.exchange_band, r.band),
                (Probe::Value(age as u64), band, band),
                "at {age} s: {:?}",
                r.reason
            );
        }
        assert_eq!(
            judge(amber, "fleetdash").reason.as_deref(),
            Some("no exchange for 6 h (>= 6 h)")
        );
        // Counted as exchanges (a collector known by another name), the same heartbeats would
        // keep the agent green for ever: what this rule is for.
        let fooled = judge(amber, "someone-else");
        assert_eq!(fooled.band, Band::Green);
        assert!(matches!(fooled.last_exchange_s, Probe::Value(age) if age < 120));
    }

    #[test]
    fn a_log_of_nothing_but_the_collectors_probes_says_so() {
        let now = Utc::now();
        let mut ev = healthy(3, 0.0, now);
        ev.audit = Some(Ok(AuditTail {
            collector_lines: 12,
            bytes_read: 1200,
            ..AuditTail::default()
        }));
        let row = row(&agent(), ev, &fleet_rules(), now);
        assert_eq!(row.band, Band::Red);
        assert_eq!(
            row.last_exchange_s,
            Probe::Error(
                "audit log: no exchange in the part read, only the collector's own probes \
                 (peer \"fleetdash\")"
                    .into()
            )
        );
    }
}

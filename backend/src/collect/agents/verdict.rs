//! From probe evidence to an agent's row: fields, colour band, Agent Status Code and reason.
//!
//! Colour rules (spec §5.2): last exchange younger than the green threshold is green, younger
//! than the amber threshold is amber, older is red; down is red (its exchange band too: a
//! past exchange never shows a down agent as ok); an empty card is red; a model window at or
//! above the rules' percentage is amber. Every failed probe turns its field into
//! `"error: <reason>"`, marks the row stale and red: a failure is shown, never smoothed over.

use chrono::DateTime;
use fleetdash_model::{
    Agent, Asc, Band, CronState, Heartbeat, Probe, RulesView, Window, human_age,
};

use super::audit_tail::AuditTail;
use super::card::CardProbe;
use super::heartbeat::HeartbeatReply;
use crate::clock::Clocked;
use crate::collect::checkin::healthchecks_state;
use crate::config::AgentConfig;
use crate::net::ProbeFailure;
use crate::queue::AgentReports;

pub struct Evidence {
    pub card: CardProbe,
    pub heartbeat: Result<HeartbeatReply, ProbeFailure>,
    /// `None` when no audit log is configured for the agent.
    pub audit: Option<Result<AuditTail, ProbeFailure>>,
    /// What the work queue knows of the agent's reports to the intake.
    pub reports: Reports,
}

/// An agent's reports as the work queue knows them, for its last report's age and its push
/// check (`report_every`).
#[derive(Debug, Clone, PartialEq)]
pub struct Reports {
    /// `None`: no `[work_queue]` configured; `Some(Err)`: the queue could not be read;
    /// `Some(Ok(None))`: the agent never reported.
    pub read: Option<Result<Option<AgentReports>, String>>,
    /// The rules' `heartbeat_reports.grace_seconds`, for an agent without `report_grace`.
    pub default_grace_s: u64,
}

impl Reports {
    /// No work queue: nothing known of reports.
    pub fn none() -> Reports {
        Reports {
            read: None,
            default_grace_s: 0,
        }
    }
}

/// The push check (spec 003: heartbeat reports judged like Healthchecks' pings) of an agent
/// with `report_every`, at `at`: nothing when it is up, else the condition to add to its row.
fn push_check(agent: &AgentConfig, reports: &Reports, at: &Clocked) -> Option<Condition> {
    let period = agent.report_every?;
    let period_s = period.as_secs();
    let grace_s = agent
        .report_grace
        .map_or(reports.default_grace_s, |g| g.as_secs());
    let every = human_age(period_s);
    let condition = |band, asc, reason: String| Some(Condition { band, asc, reason });
    let last = match &reports.read {
        None => {
            return condition(
                Band::Red,
                Asc::FAILED_PRECONDITION,
                format!(
                    "heartbeat reports unknown (every {every} promised): no [work_queue] \
                     receives them"
                ),
            );
        }
        Some(Err(e)) => {
            return condition(
                Band::Red,
                Asc::DEPENDENCY_UNAVAILABLE,
                format!("heartbeat reports unknown (every {every} promised): {e}"),
            );
        }
        Some(Ok(r)) => r.as_ref().and_then(|r| r.last_heartbeat_at),
    };
    let Some(last) = last else {
        return condition(
            Band::Red,
            Asc::NOT_FOUND,
            format!("no heartbeat report received (every {every} promised)"),
        );
    };
    let age_s = at.age(
        &format!("agent {}'s last heartbeat report", agent.name),
        last,
    );
    match healthchecks_state(age_s, period_s, grace_s, &at.now) {
        CronState::Up => None,
        CronState::Late => condition(
            Band::Amber,
            Asc::SUCCESS_WITH_WARNINGS,
            format!(
                "heartbeat report late (last {} ago, every {every})",
                human_age(age_s)
            ),
        ),
        CronState::Down => condition(
            Band::Red,
            Asc::TIMEOUT,
            format!(
                "no heartbeat report for {} (every {every}, grace {})",
                human_age(age_s),
                human_age(grace_s)
            ),
        ),
    }
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

/// The row of `agent` from `evidence`, judged at `at`: every age as fleetdash observed it.
pub fn row(agent: &AgentConfig, evidence: Evidence, rules: &RulesView, at: &Clocked) -> Agent {
    let now = at.wall();
    let mut conditions = Conditions::default();
    let Evidence {
        card,
        heartbeat,
        audit,
        reports,
    } = evidence;

    let skills_count = match &card.card {
        Ok(facts) => {
            if facts.skills_count == 0 {
                conditions.push(
                    Band::Red,
                    Asc::FAILED_PRECONDITION,
                    "its card lists no skills: it cannot be given work",
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
        // No audit log on this host: the agent's own reports to the intake are exchanges it
        // made; without any, its last exchange is not watched. That is the config's choice,
        // not the agent's trouble: no band of its own; the Agents panel says it once, with
        // what to do (issue 43).
        None => match &reports.read {
            Some(Ok(Some(r))) => Probe::Value(at.age(
                &format!("agent {}'s last report", agent.name),
                r.last_report_at,
            )),
            _ => Probe::Unknown,
        },
        Some(Err(failure)) => {
            conditions.push(Band::Red, failure.asc, failure.reason.clone());
            Probe::Error(failure.reason)
        }
        Some(Ok(tail)) => {
            audit_skipped_lines = tail.skipped_lines;
            match tail.last_exchange_ts {
                Some(ts) => Probe::Value(exchange_age(&agent.name, ts, at)),
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
        Probe::Value(age) => exchange_band(*age, rules, at),
        Probe::Unknown => Band::Green,
        Probe::Error(_) => Band::Red,
    };
    if let Probe::Value(age) = last_exchange_s {
        match age_band {
            Band::Green => {}
            Band::Amber => conditions.push(
                Band::Amber,
                Asc::SUCCESS_WITH_WARNINGS,
                // A duration as of the poll, not an age: it reads true on a frozen page too.
                format!("no exchange for {}", human_age(age)),
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

    let last_report_s = match &reports.read {
        Some(Ok(Some(r))) => Some(at.age(
            &format!("agent {}'s last report", agent.name),
            r.last_report_at,
        )),
        _ => None,
    };
    if let Some(c) = push_check(agent, &reports, at) {
        conditions.0.push(c);
    }

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
        last_report_s,
        history: None,
        checked_at: now,
        stale,
    }
}

/// A row for an agent that could not even be probed (e.g. its token is missing).
pub fn unprobed(
    agent: &AgentConfig,
    failure: ProbeFailure,
    reports: Reports,
    rules: &RulesView,
    at: &Clocked,
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
            reports,
        },
        rules,
        at,
    );
    row.reason = Some(reason);
    row
}

/// The age of an audit line's `ts` (seconds since the epoch) as observed: a line from the
/// future (another host's clock ahead) counts from when it was seen, and is said.
fn exchange_age(agent: &str, ts: f64, at: &Clocked) -> u64 {
    let Some(stamp) = DateTime::from_timestamp_millis((ts * 1000.0) as i64) else {
        return 0;
    };
    at.age(&format!("agent {agent}'s last exchange"), stamp)
}

/// The band of a last exchange `age_s` old (spec §5.2): amber and red are reached like every
/// window, after a forward step or a wake only once watched again.
fn exchange_band(age_s: u64, rules: &RulesView, at: &Clocked) -> Band {
    if at.reached(age_s, rules.exchange_amber_below_s) {
        Band::Red
    } else if at.reached(age_s, rules.exchange_green_below_s) {
        Band::Amber
    } else {
        Band::Green
    }
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
    use chrono::Utc;
    use std::time::Duration;

    /// The tests' clock: one fixed moment, so that no outcome depends on the day they run.
    fn fixed_now() -> chrono::DateTime<chrono::Utc> {
        "2026-11-30T12:00:00Z".parse().expect("an RFC 3339 instant")
    }

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
            report_every: None,
            report_grace: None,
            hub: false,
        }
    }

    fn healthy(skills: u32, exchange_age_s: f64, now: DateTime<Utc>) -> Evidence {
        Evidence {
            card: CardProbe {
                up: true,
                card: Ok(CardFacts {
                    skills_count: skills,
                    protocol_version: None,
                    versions: Vec::new(),
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
            reports: Reports::none(),
        }
    }

    #[test]
    fn a_healthy_agent_is_green_with_success() {
        let now = fixed_now();
        let row = row(
            &agent(),
            healthy(3, 60.0, now),
            &fleet_rules(),
            &Clocked::wall_only(now),
        );
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
        let now = fixed_now();
        let row = row(
            &agent(),
            healthy(0, 60.0, now),
            &fleet_rules(),
            &Clocked::wall_only(now),
        );
        assert_eq!(row.band, Band::Red);
        assert_eq!(row.status, Asc::FAILED_PRECONDITION);
        assert_eq!(
            row.reason.as_deref(),
            Some("its card lists no skills: it cannot be given work")
        );
        assert_eq!(row.skills_count, Probe::Value(0));
    }

    #[test]
    fn the_exchange_age_sets_amber_and_red() {
        let now = fixed_now();
        let amber = row(
            &agent(),
            healthy(1, 3600.0, now),
            &fleet_rules(),
            &Clocked::wall_only(now),
        );
        assert_eq!(
            (amber.band, amber.exchange_band),
            (Band::Amber, Band::Amber)
        );
        assert_eq!(amber.reason.as_deref(), Some("no exchange for 1 h"));
        let red = row(
            &agent(),
            healthy(1, 7.0 * 3600.0, now),
            &fleet_rules(),
            &Clocked::wall_only(now),
        );
        assert_eq!(red.band, Band::Red);
        assert_eq!(red.status, Asc::TIMEOUT);
        assert_eq!(red.reason.as_deref(), Some("no exchange for 7 h (>= 6 h)"));
        assert!(
            !red.stale,
            "an old exchange is a reading, not a failed probe"
        );
    }

    /// Issue 43: no audit log on this host is the config's choice, not the agent's trouble.
    /// Its reports to the intake are exchanges it made; without any, its last exchange is not
    /// watched, and the row stays in its own band.
    #[test]
    fn without_an_audit_log_the_last_exchange_is_its_last_report_or_not_watched() {
        let now = fixed_now();
        let ev = || {
            let mut ev = healthy(3, 60.0, now);
            ev.audit = None;
            ev
        };
        let quiet = row(&agent(), ev(), &fleet_rules(), &Clocked::wall_only(now));
        assert_eq!(
            (
                quiet.band,
                quiet.exchange_band,
                quiet.last_exchange_s.clone()
            ),
            (Band::Green, Band::Green, Probe::Unknown)
        );
        assert_eq!(quiet.reason, None);
        let reported = |ago_s: i64| {
            let mut ev = ev();
            ev.reports = Reports {
                read: Some(Ok(Some(AgentReports {
                    name: "min".into(),
                    last_report_at: now - chrono::Duration::seconds(ago_s),
                    last_heartbeat_at: None,
                    last_activity_at: None,
                    in_flight: Vec::new(),
                }))),
                default_grace_s: 300,
            };
            row(&agent(), ev, &fleet_rules(), &Clocked::wall_only(now))
        };
        let fresh = reported(120);
        assert_eq!(
            (fresh.band, fresh.last_exchange_s),
            (Band::Green, Probe::Value(120))
        );
        // Judged by the same rules as an audit log's exchange.
        let old = reported(2 * 3600);
        assert_eq!(old.band, Band::Amber);
        assert_eq!(old.reason.as_deref(), Some("no exchange for 2 h"));
    }

    #[test]
    fn a_down_agent_is_red_stale_and_says_why_once() {
        let now = fixed_now();
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
        let row = row(&agent(), ev, &fleet_rules(), &Clocked::wall_only(now));
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
        let now = fixed_now();
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
            row(&agent(), ev, &rules, &Clocked::wall_only(now))
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
            row(&agent(), ev, &rules, &Clocked::wall_only(now))
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
        let now = fixed_now();
        let mut ev = healthy(3, 0.0, now);
        ev.audit = Some(Ok(AuditTail {
            collector_lines: 12,
            bytes_read: 1200,
            ..AuditTail::default()
        }));
        let row = row(&agent(), ev, &fleet_rules(), &Clocked::wall_only(now));
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

    mod push_checks {
        use super::*;
        use crate::queue::AgentReports;

        /// The shipped rules' grace: the tests judge by the rules file, not by literals.
        fn grace_s() -> u64 {
            crate::config::Rules::parse(
                std::path::Path::new("config/rules.yaml"),
                include_str!("../../../../config/rules.yaml"),
            )
            .unwrap()
            .report_grace
            .seconds
        }

        fn every_5_min() -> AgentConfig {
            AgentConfig {
                report_every: Some(Duration::from_secs(5 * 60)),
                ..agent()
            }
        }

        /// The row of `agent` at `now` whose last heartbeat report was `age_s` ago.
        fn judged(agent: &AgentConfig, age_s: u64, now: DateTime<Utc>) -> Agent {
            let at = now - chrono::Duration::seconds(age_s as i64);
            let evidence = Evidence {
                reports: Reports {
                    read: Some(Ok(Some(AgentReports {
                        name: agent.name.clone(),
                        last_report_at: at,
                        last_heartbeat_at: Some(at),
                        last_activity_at: None,
                        in_flight: vec![],
                    }))),
                    default_grace_s: grace_s(),
                },
                ..healthy(3, 60.0, now)
            };
            row(agent, evidence, &fleet_rules(), &Clocked::wall_only(now))
        }

        #[test]
        fn up_late_and_down_at_the_exact_boundaries() {
            let now = fixed_now();
            let (period, grace) = (300, grace_s());
            let agent = every_5_min();
            for (age, band) in [
                (0, Band::Green),
                (period, Band::Green),
                (period + 1, Band::Amber),
                (period + grace, Band::Amber),
                (period + grace + 1, Band::Red),
            ] {
                let row = judged(&agent, age, now);
                assert_eq!(row.band, band, "age {age}: {:?}", row.reason);
                assert_eq!(row.last_report_s, Some(age));
            }
            let late = judged(&agent, 7 * 60, now);
            assert_eq!(
                late.reason.as_deref(),
                Some("heartbeat report late (last 7 min ago, every 5 min)")
            );
            assert_eq!(late.status, Asc::SUCCESS_WITH_WARNINGS);
            let down = judged(&agent, period + grace + 1, now);
            assert_eq!(down.status, Asc::TIMEOUT);
            assert!(
                down.reason
                    .unwrap()
                    .starts_with("no heartbeat report for 10 min (every 5 min, grace ")
            );
        }

        #[test]
        fn report_grace_overrides_the_rules_grace() {
            let now = fixed_now();
            let agent = AgentConfig {
                report_grace: Some(Duration::from_secs(60)),
                ..every_5_min()
            };
            assert_eq!(judged(&agent, 360, now).band, Band::Amber);
            assert_eq!(judged(&agent, 361, now).band, Band::Red);
        }

        #[test]
        fn without_report_every_only_the_age_is_shown() {
            let now = fixed_now();
            let row = judged(&agent(), 86_400, now);
            assert_eq!(row.band, Band::Green, "{:?}", row.reason);
            assert_eq!(row.last_report_s, Some(86_400));
        }

        #[test]
        fn no_report_or_an_unreadable_queue_is_loud() {
            let now = fixed_now();
            let with = |read| Evidence {
                reports: Reports {
                    read,
                    default_grace_s: grace_s(),
                },
                ..healthy(3, 60.0, now)
            };
            let never = row(
                &every_5_min(),
                with(Some(Ok(None))),
                &fleet_rules(),
                &Clocked::wall_only(now),
            );
            assert_eq!(never.band, Band::Red);
            assert_eq!(
                never.reason.as_deref(),
                Some("no heartbeat report received (every 5 min promised)")
            );
            assert_eq!(never.last_report_s, None);
            let broken = row(
                &every_5_min(),
                with(Some(Err("q.db: not a SQLite database".into()))),
                &fleet_rules(),
                &Clocked::wall_only(now),
            );
            assert_eq!(broken.band, Band::Red);
            assert!(
                broken
                    .reason
                    .unwrap()
                    .ends_with("q.db: not a SQLite database")
            );
        }
    }
}

//! The Agents panel: one row per agent, red first, each with its place and the age of its last
//! exchange, and behind the tap its skills, model, usage window, heartbeat and endpoint.

use super::parts::{
    Words, anchor, code, crossed, fact, group, join, plain_reason, problem, red_first, section,
    shown, sorted, strip,
};
use super::types::{Kind, Row, Section};
use crate::alerts::key;
use crate::band::Band;
use crate::probe::Probe;
use crate::rules::RulesView;
use crate::snapshot::{Agent, Snapshot};

pub(super) fn agents(s: &Snapshot, w: &Words) -> Section {
    let meta = &s.sections.agents;
    let mut view = section("agents", "Agents", meta, w);
    view.problem = problem(&s.agents, meta, "agents", w);
    if let Probe::Value(rows) = &s.agents {
        let sorted = sorted(rows.iter().collect(), |a: &&Agent| (0, a.name.clone()));
        let mut g = group(red_first(
            sorted
                .into_iter()
                .map(|a| agent_row(a, &s.rules, w))
                .collect(),
        ));
        if g.rows.is_empty() {
            g.empty = Some("The registry lists no agents.");
        }
        view.groups.push(g);
    }
    view
}

fn agent_row(a: &Agent, rules: &RulesView, w: &Words) -> Row {
    let (reason, cut) = plain_reason(a.reason.clone().filter(|_| a.band != Band::Green));
    let r = reason.as_deref();
    let last = match &a.last_exchange_s {
        Probe::Value(age) => Some(w.ago(crossed(a.checked_at, *age, 0))),
        _ => None,
    };
    let exchange = match (&a.last_exchange_s, &last) {
        // A down agent's last exchange is a fact, never an "ok".
        (Probe::Value(_), Some(last)) => (
            last.clone(),
            (a.up && a.exchange_band != Band::Green).then_some(a.exchange_band),
        ),
        (other, _) => shown(other, |_| String::new()),
    };
    let age_words = last.unwrap_or_default();
    let place = join(&[
        a.plane.as_deref().unwrap_or(""),
        a.lane.value().map_or("", String::as_str),
        &age_words,
    ]);
    let skills = match &a.skills_count {
        Probe::Value(0) => ("none".into(), Some(Band::Red)),
        other => shown(other, u32::to_string),
    };
    let window = shown(&a.window, |w| match (&w.percent, &w.status) {
        (Probe::Value(p), Probe::Value(s)) => format!("{} % ({s})", whole(*p)),
        (Probe::Value(p), _) => format!("{} %", whole(*p)),
        (_, Probe::Value(s)) => s.clone(),
        _ => "unknown".into(),
    });
    // A window at or above the rules' percentage is amber: coloured as such behind the tap.
    let window = match (&a.window, window) {
        (Probe::Value(w), (text, None)) if w.band != Band::Green => (text, Some(w.band)),
        (_, shown) => shown,
    };
    let mut facts = vec![
        fact("last exchange", exchange, r),
        fact("skills", skills, r),
        fact("model", shown(&a.model, Clone::clone), r),
        fact("window", window, r),
        fact(
            "heartbeat",
            shown(&a.heartbeat, |h| {
                format!("{} · {} ms", h.dialect, h.latency_ms)
            }),
            r,
        ),
        fact("endpoint", (a.endpoint.clone(), None), r),
    ];
    facts.extend(cut);
    if a.audit_skipped_lines > 0 {
        facts.push(fact(
            "audit lines skipped",
            (a.audit_skipped_lines.to_string(), None),
            r,
        ));
    }
    // An agent that is up and quiet went amber (or red) when its last exchange aged past the
    // rules' threshold.
    let since = match (&a.last_exchange_s, a.band) {
        (Probe::Value(age), band) if a.up && band != Band::Green && a.exchange_band == band => {
            let after = if band == Band::Red {
                rules.exchange_amber_below_s
            } else {
                rules.exchange_green_below_s
            };
            Some(crossed(a.checked_at, *age, after))
        }
        _ => None,
    };
    Row {
        kind: Some(if a.up { Kind::Agent } else { Kind::AgentDown }),
        what: format!("agent {}", a.name),
        since,
        anchor: anchor("agent", &a.name),
        band: a.band,
        badge: if a.up { a.band.word() } else { "down" },
        title: a.name.clone(),
        summary: place,
        code: code(&a.status).filter(|_| reason.is_some()),
        reason,
        held: w.held(&key::agent(&a.name), a.band),
        facts,
        checks: Vec::new(),
        strip: strip(a.history.as_ref(), w),
    }
}

fn whole(value: f64) -> String {
    (value.round() as i64).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::asc::Asc;
    use crate::glance::Glance;
    use crate::glance::fixtures::*;
    use crate::snapshot::History;
    use chrono::FixedOffset;

    #[test]
    fn a_down_agent_says_its_reason_once_and_its_last_exchange_is_never_ok() {
        let g = at(&fleet(), 30);
        let lyra = row(&g, "agent-lyra");
        assert_eq!(lyra.badge, "down");
        assert_eq!(lyra.reason.as_deref(), Some("down: connection refused"));
        assert_eq!(
            lyra.code.as_deref(),
            Some("ASC-5003 DEPENDENCY_UNAVAILABLE")
        );
        let said = |label: &str| lyra.facts.iter().find(|f| f.label == label).unwrap();
        assert_eq!(said("skills").text, "error, as above");
        assert_eq!(said("heartbeat").text, "error, as above");
        // Ages count from the poll; no band word, no green for a down agent's exchange.
        assert_eq!(
            (
                said("last exchange").text.as_str(),
                said("last exchange").band
            ),
            ("2 min ago", None)
        );
        assert!(!lyra.summary.contains("ok"), "{}", lyra.summary);
        // A green row is one quiet line: no reason, no code.
        let min = row(&g, "agent-min");
        assert_eq!((min.reason.as_ref(), min.code.as_ref()), (None, None));
        assert_eq!(min.summary, "heart · hub · 2 min ago");
    }

    #[test]
    fn a_window_at_the_rules_percentage_is_amber_and_its_reason_said_once() {
        let mut s = fleet();
        if let Probe::Value(rows) = &mut s.agents {
            let min = &mut rows[0];
            min.window = Probe::Value(crate::Window {
                model: Probe::Value("claude".into()),
                percent: Probe::Value(93.0),
                status: Probe::Value("near limit".into()),
                resets_at: Probe::Unknown,
                band: Band::Amber,
            });
            min.band = Band::Amber;
            min.status = Asc::SUCCESS_WITH_WARNINGS;
            min.reason = Some("model window 93 % (>= 90 %)".into());
        }
        let g = at(&s, 0);
        let min = row(&g, "agent-min");
        assert_eq!(min.band, Band::Amber);
        assert_eq!(min.reason.as_deref(), Some("model window 93 %"));
        // The rule is cut from the reason and kept behind the tap.
        let rule = min.facts.iter().find(|f| f.label == "rule").unwrap();
        assert_eq!(rule.text, "90 % or more");
        let window = min.facts.iter().find(|f| f.label == "window").unwrap();
        assert_eq!(
            (window.text.as_str(), window.band),
            ("93 % (near limit)", Some(Band::Amber))
        );
        assert!(
            g.needs
                .iter()
                .any(|n| n.what == "agent min" && n.band == Band::Amber)
        );
    }

    #[test]
    fn a_strip_says_its_span_until_it_holds_a_day() {
        let mut s = fleet();
        if let Probe::Value(rows) = &mut s.agents {
            rows[0].history = Some(History {
                uptime_24h_pct: Some(100.0),
                strip: format!("{}{}", ".".repeat(44), "uuuu"),
                slot_s: 1800,
                samples: 38,
                since: Some(t0() - chrono::Duration::minutes(125)),
            });
            rows[1].history = Some(History {
                uptime_24h_pct: Some(97.94),
                strip: format!("{}d", "u".repeat(47)),
                slot_s: 1800,
                samples: 700,
                since: None,
            });
        }
        let g = at(&s, 0);
        assert_eq!(
            row(&g, "agent-min").strip.as_ref().unwrap().label,
            "uptime 100.0 % since 17:15, 38 samples"
        );
        // In the reader's zone, which the page names elsewhere.
        let plus_one = Glance::new(&s, s.generated_at, FixedOffset::east_opt(3600).unwrap());
        assert_eq!(
            row(&plus_one, "agent-min").strip.as_ref().unwrap().label,
            "uptime 100.0 % since 18:15, 38 samples"
        );
        let vega = row(&g, "agent-vega").strip.clone().unwrap();
        assert_eq!(vega.label, "24 h uptime 97.9 %");
        assert_eq!(vega.axis, ["24 h ago", "12 h", "now"]);
    }
}

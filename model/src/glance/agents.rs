//! The Agents panel: one row per agent, red first, each with its place and the age of its last
//! exchange, and behind the tap its skills, model, usage window, heartbeat and endpoint.

use super::parts::{
    Words, anchor, code, crossed, fact, group, join, plain_reason, problem, red_first, section,
    shown, sorted, strip,
};
use super::tasks::Work;
use super::types::{Kind, Row, Section};
use crate::alerts::key;
use crate::band::Band;
use crate::probe::Probe;
use crate::rules::RulesView;
use crate::snapshot::{Agent, Snapshot};

pub(super) fn agents(s: &Snapshot, w: &Words, work: &[Work]) -> Section {
    let meta = &s.sections.agents;
    let mut view = section("agents", "Agents", meta, w);
    view.problem = problem(&s.agents, meta, "agents", w);
    if let Probe::Value(rows) = &s.agents {
        let sorted = sorted(rows.iter().collect(), |a: &&Agent| (0, a.name.clone()));
        let mut g = group(red_first(
            sorted
                .into_iter()
                .map(|a| {
                    let mine: Vec<&Work> = work.iter().filter(|j| j.agent == a.name).collect();
                    with_work(agent_row(a, &s.rules, w), &mine)
                })
                .collect(),
        ));
        if g.rows.is_empty() {
            g.empty = Some("The registry lists no agents.");
        }
        view.groups.push(g);
        // What the config leaves unknown is said once, here, with what to do about it; the
        // rows stay in their own bands (issue 43).
        let unwatched = rows
            .iter()
            .filter(|a| a.last_exchange_s == Probe::Unknown)
            .count();
        if unwatched > 0 {
            let agents = if unwatched == 1 { "agent" } else { "agents" };
            view.note = Some(format!(
                "last exchange not watched for {unwatched} {agents}: no audit_log, no reports \
                 to the intake"
            ));
        }
    }
    view
}

/// An agent's row carrying its work (issue 43): a task stuck or orphaned on it makes the row
/// red, "STUCK", and says so first in its summary and behind the tap. The agent still counts as
/// itself, and its reason (its needs-you line, when it has trouble of its own) is its own: the
/// task's line, which leads here, says the task.
fn with_work(mut row: Row, work: &[&Work]) -> Row {
    if work.is_empty() {
        return row;
    }
    row.band = Band::Red;
    row.badge = "STUCK";
    let n = work.len();
    let short = format!("{n} task{} stuck", if n == 1 { "" } else { "s" });
    row.summary = join(&[&short, &row.summary]);
    let said: Vec<&str> = work.iter().map(|j| j.words.as_str()).collect();
    row.facts
        .insert(0, fact("work", (said.join("; "), Some(Band::Red)), None));
    row
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
        // Not an unknown to fix on the row: the panel's note says it once.
        (Probe::Unknown, _) => ("not watched (no audit log)".into(), None),
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
        own: a.band,
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
        let mut s = fleet();
        // min quiet: no task stuck on it.
        s.tasks.live = Probe::Value(Vec::new());
        let g = at(&s, 30);
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
        s.tasks.live = Probe::Value(Vec::new());
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

    /// Was: three healthy agents amber for good, "last exchange unknown: no audit log
    /// configured", each repeating what the operator cannot fix on its row.
    #[test]
    fn what_the_config_leaves_unknown_is_said_once_in_the_panel_and_no_row_is_amber_for_it() {
        let mut s = fleet();
        s.tasks.live = Probe::Value(Vec::new());
        if let Probe::Value(rows) = &mut s.agents {
            for a in rows.iter_mut().filter(|a| a.name != "juno") {
                a.last_exchange_s = Probe::Unknown;
            }
        }
        let g = at(&s, 0);
        let agents = g.sections.iter().find(|x| x.id == "agents").unwrap();
        assert_eq!(
            agents.note.as_deref(),
            Some("last exchange not watched for 3 agents: no audit_log, no reports to the intake")
        );
        let min = row(&g, "agent-min");
        assert_eq!(min.band, Band::Green);
        let last = min
            .facts
            .iter()
            .find(|f| f.label == "last exchange")
            .unwrap();
        assert_eq!(
            (last.text.as_str(), last.band),
            ("not watched (no audit log)", None)
        );
        // Watched everywhere: nothing said.
        assert_eq!(at(&fleet(), 0).sections[0].note, None);
    }

    /// Was: lyra hung on its tasks and its row said nothing of it; "task on lyra · no reply
    /// for 9 min" was on another line, leading elsewhere.
    #[test]
    fn an_agent_with_a_stuck_or_orphaned_task_says_so_on_its_row_and_the_tasks_line_leads_there() {
        let mut s = fleet();
        let mut orphaned = queue_task("q_orph", 30);
        orphaned.owner = Some("juno".into());
        orphaned.state = "TASK_STATE_FAILED".into();
        orphaned.status_message = Some(crate::queue::ORPHANED_MESSAGE.into());
        orphaned.ack = Some(crate::queue::QueueAck {
            kind: "owning".into(),
            by: "juno".into(),
            at: t0(),
            eta: None,
            to: None,
        });
        s.tasks.queue = Probe::Value(vec![orphaned]);
        s.sections.queue = s.sections.agents.clone();
        let g = at(&s, 0);
        let min = row(&g, "agent-min");
        assert_eq!(
            (min.band, min.own, min.badge),
            (Band::Red, Band::Green, "STUCK")
        );
        assert_eq!(min.summary, "1 task stuck · heart · hub · 1 min ago");
        // Behind the tap, first, in the task's band; the reason is the agent's own (none).
        assert_eq!(min.reason, None);
        let work = &min.facts[0];
        assert_eq!(
            (work.label, work.text.as_str(), work.band),
            ("work", "task stuck: no reply for 1 min", Some(Band::Red))
        );
        // juno is amber of its own: its reason and its line say its own, its row both.
        let juno = row(&g, "agent-juno");
        assert_eq!((juno.band, juno.own), (Band::Red, Band::Amber));
        assert_eq!(juno.reason.as_deref(), Some("no exchange for 3 h"));
        assert_eq!(
            juno.facts[0].text,
            "task “Task q_orph” orphaned: no reply produced"
        );
        let line = |anchor: &str| {
            g.needs
                .iter()
                .find(|n| n.stands_for.iter().any(|a| a == anchor))
                .unwrap()
        };
        assert_eq!(line("task-min-t_stuck").anchor, "agent-min");
        assert_eq!(line("queue-q_orph").anchor, "agent-juno");
        assert_eq!(line("agent-juno").reason, "no exchange for 3 h");
        // Each element counted once, as itself.
        assert_eq!(g.counts, s.verdict());
    }
}

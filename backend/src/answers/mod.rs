//! What fleetdash answers when an agent asks (issue 25), in words and as data, for every face
//! that takes questions (the intake's A2A questions; MCP): the glance of the last snapshot
//! ([`status`]), the band changes since a moment from the transitions log ([`changes`]), the
//! work queue as `fleetdash tasks` words it ([`queue`]); the report of a period, as the
//! morning report says it ([`report`]).
//!
//! The answers come from `status.json` as `fleetdash run` last wrote it (already through the
//! redaction gate), the transitions log and the queue, worded by the model ([`Glance`]): never
//! a second collector, never a raw audit event or a message's text. Times are UTC, and said to
//! be (the report's are in the report's zone, which it names). Each is bounded: a flapping fleet's week of changes or a queue of thousands is listed up
//! to a count, the rest counted.

use chrono::{DateTime, SecondsFormat, Utc};
use fleetdash_model::glance::{Glance, Need};
use fleetdash_model::{Band, Snapshot, Transition, human_age};
use serde_json::{Value, json};

pub mod report;

use crate::alerting::engine::pass::status_of;
use crate::clock::Clocked;
use crate::queue::{QueueRules, TaskRow, judge};
use crate::write::transitions;

/// The most tasks one `queue` answer lists (red first); the rest are counted.
pub const QUEUE_MAX: usize = 200;

/// The most changes one answer lists (newest first); the rest are counted. A week's log of a
/// flapping fleet would be a megabyte of answer.
pub const CHANGES_MAX: usize = 200;

/// "14:00" (UTC, the last such time at or before `now`) or an RFC 3339 moment.
pub fn moment(text: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, String> {
    let text = text.trim();
    if let Ok(at) = DateTime::parse_from_rfc3339(&text.to_ascii_uppercase()) {
        return Ok(at.with_timezone(&Utc));
    }
    let time = chrono::NaiveTime::parse_from_str(text, "%H:%M").map_err(|_| {
        format!(
            "since {text:?}: expected a time of day in UTC (\"14:00\") or an RFC 3339 moment \
             (\"2026-12-02T14:00:00Z\")"
        )
    })?;
    let today = now.date_naive().and_time(time).and_utc();
    Ok(if today > now {
        today - chrono::Duration::days(1)
    } else {
        today
    })
}

/// `status.json` at `path`, or why not in words for the answer. Blocking (a file read).
pub fn read_snapshot(path: &std::path::Path) -> Result<Snapshot, String> {
    let bytes = std::fs::read(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!(
            "no snapshot yet at {}: is `fleetdash run` collecting?",
            path.display()
        ),
        _ => format!("{} cannot be read: {e}", path.display()),
    })?;
    serde_json::from_slice(&bytes).map_err(|e| {
        format!(
            "{} is not a snapshot this fleetdash reads: {e}",
            path.display()
        )
    })
}

/// An answer: the text part and the data part of one Message.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub text: String,
    pub data: Value,
}

fn utc(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// One needs-you line as the page and snapshot.html say it: "✖ agent vega · down: connection
/// refused since 14:02 · silenced until 16:00 (disk swap)".
fn need_line(n: &Need) -> String {
    let mut line = format!("{} {}", n.band.icon(), n.what);
    if !n.reason.is_empty() {
        line.push_str(&format!(" · {}", n.reason));
    }
    if let Some(since) = &n.since {
        line.push_str(&format!(" {since}"));
    }
    if let Some(held) = &n.held {
        line.push_str(&format!(" · {held}"));
    }
    line
}

/// Each needs-you line as data, with the key and ASC of the element it stands for when one
/// element does (its row's anchor is the element's); a line for a section or a lot has none.
fn needs_data(glance: &Glance, snapshot: &Snapshot) -> Vec<Value> {
    let elements = transitions::elements(snapshot);
    glance
        .needs
        .iter()
        .map(|n| {
            let element = elements
                .iter()
                .find(|(_, el)| fleetdash_model::glance::anchor(el.kind, &el.name) == n.anchor);
            let (key, asc) = match element {
                Some((key, el)) => {
                    let asc = status_of(el.band);
                    (
                        Some(key.clone()),
                        Some(json!({"code": asc.code, "name": asc.name})),
                    )
                }
                None => (None, None),
            };
            json!({"band": n.band.class(), "what": n.what, "reason": n.reason, "since": n.since,
                   "held": n.held, "anchor": n.anchor, "key": key, "agent_status": asc})
        })
        .collect()
}

/// What needs the operator, alone: the needs-you lines of the glance of `snapshot` at `now`
/// (red first), or that nothing does; a stale snapshot says so first.
pub fn needs(snapshot: &Snapshot, now: DateTime<Utc>) -> Answer {
    let glance = Glance::new(
        snapshot,
        now,
        chrono::FixedOffset::east_opt(0).expect("UTC"),
    );
    let mut lines = Vec::new();
    if let Some(why) = &glance.stale {
        lines.push(format!("Do not trust this yet: {why}."));
    }
    if glance.needs.is_empty() {
        lines.push("Nothing needs the operator.".into());
    }
    lines.extend(glance.needs.iter().map(need_line));
    Answer {
        text: lines.join("\n"),
        data: json!({"needs": needs_data(&glance, snapshot), "stale": glance.stale.is_some()}),
    }
}

/// One element by its key: its band and reason, what it is, what it depends on and what
/// depends on it (among the elements shown), whether its alerts are held or acknowledged, and
/// its last day as numbers (1 up, 0 down, 0.5 both, null no sample; oldest first) when the
/// snapshot keeps a strip for it. `None`: no element has that key.
pub fn explain(
    snapshot: &Snapshot,
    key: &str,
    deps: &crate::deps::Deps,
    now: DateTime<Utc>,
) -> Option<Answer> {
    let elements = transitions::elements(snapshot);
    let el = elements.get(key)?;
    let depends_on: Vec<&String> = {
        let ancestors = deps.ancestors(key);
        elements.keys().filter(|k| ancestors.contains(*k)).collect()
    };
    let dependents: Vec<&String> = elements
        .keys()
        .filter(|k| k.as_str() != key && deps.ancestors(k).contains(key))
        .collect();
    let utc0 = chrono::FixedOffset::east_opt(0).expect("UTC");
    let held = snapshot
        .alerts
        .held
        .iter()
        .find(|h| h.key == key)
        .map(|h| h.describe(now, utc0));
    let acked = snapshot
        .alerts
        .acked
        .iter()
        .find(|a| a.key == key)
        .map(|a| a.describe(now, utc0));
    let history = history_of(snapshot, key);
    let strip: Option<Vec<Option<f64>>> = history.map(|h| {
        h.strip
            .chars()
            .map(|c| match c {
                'u' => Some(1.0),
                'd' => Some(0.0),
                'p' => Some(0.5),
                _ => None,
            })
            .collect()
    });
    let asc = status_of(el.band);
    let mut lines = vec![format!(
        "{} {} {}: {}{}",
        el.band.icon(),
        el.kind,
        el.name,
        el.band.word(),
        el.reason
            .as_deref()
            .map(|r| format!(" ({r})"))
            .unwrap_or_default()
    )];
    if !depends_on.is_empty() {
        let names: Vec<&str> = depends_on.iter().map(|k| k.as_str()).collect();
        lines.push(format!("depends on: {}", names.join(", ")));
    }
    if !dependents.is_empty() {
        let names: Vec<&str> = dependents.iter().map(|k| k.as_str()).collect();
        lines.push(format!("what depends on it: {}", names.join(", ")));
    }
    lines.extend(held.clone());
    lines.extend(acked.clone());
    if let Some(h) = history {
        lines.push(match h.uptime_24h_pct {
            Some(pct) => format!("last day: {pct} % up ({} samples)", h.samples),
            None => "last day: no sample yet".into(),
        });
    }
    Some(Answer {
        text: lines.join("\n"),
        data: json!({
            "key": key, "kind": el.kind, "name": el.name, "band": el.band.class(),
            "reason": el.reason, "agent_status": {"code": asc.code, "name": asc.name},
            "depends_on": depends_on, "dependents": dependents, "held": held, "acked": acked,
            "history": history.map(|h| json!({
                "uptime_24h_pct": h.uptime_24h_pct, "slot_s": h.slot_s, "samples": h.samples,
                "strip": strip,
            })),
        }),
    })
}

/// The strip the snapshot keeps for `key`: an agent's or a host's.
fn history_of<'a>(snapshot: &'a Snapshot, key: &str) -> Option<&'a fleetdash_model::History> {
    let (kind, name) = key.split_once(':')?;
    match kind {
        "agent" => snapshot
            .agents
            .value()?
            .iter()
            .find(|a| a.name == name)?
            .history
            .as_ref(),
        "host" if !name.contains('/') => snapshot
            .systems
            .value()?
            .iter()
            .find(|h| h.host == name)?
            .history
            .as_ref(),
        _ => None,
    }
}

/// `fleet.status`: the glance of `snapshot` at `now`, in UTC. `Err`: why there is no snapshot
/// to answer from (not written yet, unreadable), said as the answer itself.
pub fn status(snapshot: Result<&Snapshot, &str>, now: DateTime<Utc>) -> Answer {
    let snap = match snapshot {
        Ok(snap) => snap,
        Err(why) => {
            return Answer {
                text: format!("fleetdash cannot answer: {why}"),
                data: json!({"snapshot": null, "stale": true, "stale_reason": why}),
            };
        }
    };
    let utc0 = chrono::FixedOffset::east_opt(0).expect("UTC");
    let glance = Glance::new(snap, now, utc0);
    let (band, verdict) = glance.verdict(true);
    let age_s = u64::try_from((now - snap.generated_at).num_seconds()).unwrap_or(0);
    let mut lines = Vec::new();
    if let Some(why) = &glance.stale {
        lines.push(format!("Do not trust this yet: {why}."));
    }
    lines.push(format!("{} {verdict}", band.icon()));
    lines.push(glance.counts.sentence());
    lines.extend(glance.needs.iter().map(need_line));
    lines.push(format!(
        "Snapshot written {} ({} ago). Times are {}.",
        snap.generated_at.format("%H:%M UTC"),
        human_age(age_s),
        glance.zone
    ));
    let needs = needs_data(&glance, snap);
    // Every element not green, by its stable key: what a hub acts on.
    let elements: Vec<Value> = transitions::elements(snap)
        .into_iter()
        .filter(|(_, el)| el.band != Band::Green)
        .map(|(key, el)| {
            let asc = status_of(el.band);
            json!({"key": key, "kind": el.kind, "name": el.name, "band": el.band.class(),
                   "reason": el.reason, "agent_status": {"code": asc.code, "name": asc.name}})
        })
        .collect();
    Answer {
        text: lines.join("\n"),
        data: json!({
            "verdict": {
                "band": band.class(),
                "words": verdict,
                "counts": {"red": glance.counts.red, "amber": glance.counts.amber,
                           "green": glance.counts.green},
            },
            "needs": needs,
            "elements": elements,
            "snapshot": {"generated_at": utc(snap.generated_at), "age_s": age_s},
            "stale": glance.stale.is_some(),
            "stale_reason": glance.stale,
        }),
    }
}

/// `fleet.changes`: the band changes of `log` (oldest first, as the transitions log keeps
/// them) after `since`, newest first, at most [`CHANGES_MAX`]. `Err`: why the log cannot be
/// read, said as the answer.
pub fn changes(log: Result<&[Transition], &str>, since: DateTime<Utc>) -> Answer {
    let since_words = since.format("%Y-%m-%d %H:%M UTC").to_string();
    let log = match log {
        Ok(log) => log,
        Err(why) => {
            return Answer {
                text: format!("fleetdash cannot answer: {why}"),
                data: json!({"since": utc(since), "changes": null, "error": why}),
            };
        }
    };
    let after: Vec<&Transition> = log.iter().rev().filter(|t| t.at > since).collect();
    let listed = &after[..after.len().min(CHANGES_MAX)];
    let word = |b: Option<Band>| b.map_or("new", Band::word);
    let mut lines = vec![match after.len() {
        0 => format!("No band changed since {since_words}."),
        1 => format!("1 band change since {since_words}:"),
        n => format!("{n} band changes since {since_words}, newest first:"),
    }];
    lines.extend(listed.iter().map(|t| {
        let mut line = format!(
            "{} {} {} {}: {} → {}",
            t.at.format("%H:%M"),
            t.to.icon(),
            t.kind,
            t.name,
            word(t.from),
            t.to.word()
        );
        if let Some(reason) = &t.reason {
            line.push_str(&format!(" ({reason})"));
        }
        line
    }));
    let more = after.len() - listed.len();
    if more > 0 {
        lines.push(format!("… and {more} older (ask since a later time)."));
    }
    let items: Vec<Value> = listed
        .iter()
        .map(|t| {
            json!({"at": utc(t.at), "key": t.key, "kind": t.kind, "name": t.name,
                   "from": t.from.map(Band::class), "to": t.to.class(), "reason": t.reason})
        })
        .collect();
    Answer {
        text: lines.join("\n"),
        data: json!({"since": utc(since), "changes": items, "more": more}),
    }
}

/// `fleet.queue`: the work queue's tasks as `fleetdash tasks` shows them (red first, then
/// amber, then green, each as listed), the dismissed ones left out, at most [`QUEUE_MAX`].
pub fn queue(rows: Result<&[TaskRow], &str>, rules: &QueueRules, at: &Clocked) -> Answer {
    let rows = match rows {
        Ok(rows) => rows,
        Err(why) => {
            return Answer {
                text: format!("fleetdash cannot answer: {why}"),
                data: json!({"tasks": null, "error": why}),
            };
        }
    };
    let mut shown: Vec<(Band, &TaskRow)> = rows
        .iter()
        .filter(|r| r.dismissed_at.is_none())
        .map(|r| (crate::queue::judge(r, rules, at).band, r))
        .collect();
    shown.sort_by_key(|(band, _)| std::cmp::Reverse(*band));
    let listed = &shown[..shown.len().min(QUEUE_MAX)];
    let count = |b: Band| shown.iter().filter(|(band, _)| *band == b).count();
    let mut lines = vec![match shown.len() {
        0 => "The work queue is empty.".to_string(),
        n => format!(
            "Work queue: {n} task{} ({} red, {} amber, {} green):",
            if n == 1 { "" } else { "s" },
            count(Band::Red),
            count(Band::Amber),
            count(Band::Green)
        ),
    }];
    if !listed.is_empty() {
        lines.push(judge::heads());
    }
    lines.extend(listed.iter().map(|(_, r)| judge::line(r, rules, at)));
    let more = shown.len() - listed.len();
    if more > 0 {
        lines.push(format!(
            "… and {more} more (`fleetdash tasks` lists them all)."
        ));
    }
    let tasks: Vec<Value> = listed
        .iter()
        .map(|(band, r)| {
            let verdict = crate::queue::judge(r, rules, at);
            json!({"id": r.id, "title": r.title, "owner": r.owner, "tagged": r.tagged,
                   "state": r.state.as_str(), "band": band.class(), "reason": verdict.reason,
                   "agent_status": {"code": verdict.status.code, "name": verdict.status.name}})
        })
        .collect();
    Answer {
        text: lines.join("\n"),
        data: json!({"tasks": tasks, "more": more}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use fleetdash_model::Probe;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 30, 20, 0, 0).unwrap()
    }

    fn snapshot() -> Snapshot {
        let mut s = Snapshot::empty(now(), crate::config::fleet_rules());
        s.stale = false;
        s.sections.agents.configured = true;
        s.sections.agents.checked_at = Some(now());
        let agent = crate::write::history::tests::agent;
        let mut vega = agent("vega", false, now());
        vega.reason = Some("down: connection refused".into());
        s.agents = Probe::Value(vec![agent("min", true, now()), vega]);
        s
    }

    #[test]
    fn changes_are_the_logs_after_the_moment_newest_first_and_bounded() {
        let at = |m: i64| now() - chrono::Duration::minutes(m);
        let t = |key: &str, to: Band, m: i64| Transition {
            key: key.into(),
            kind: "agent".into(),
            name: key.trim_start_matches("agent:").into(),
            from: Some(if to == Band::Red {
                Band::Green
            } else {
                Band::Red
            }),
            to,
            at: at(m),
            reason: (to == Band::Red).then(|| "down: connection refused".into()),
        };
        // Oldest first, as the log keeps them.
        let log = vec![
            t("agent:orin", Band::Red, 90),
            t("agent:vega", Band::Red, 30),
            t("agent:vega", Band::Green, 10),
        ];
        let a = changes(Ok(&log), at(60));
        let lines: Vec<&str> = a.text.lines().collect();
        assert_eq!(
            lines[0],
            "2 band changes since 2026-11-30 19:00 UTC, newest first:"
        );
        assert_eq!(lines[1], "19:50 ✔ agent vega: fail → ok");
        assert_eq!(
            lines[2],
            "19:30 ✖ agent vega: ok → fail (down: connection refused)"
        );
        assert_eq!(lines.len(), 3, "orin's is before the moment");
        assert_eq!(a.data["changes"][1]["key"], "agent:vega");
        assert_eq!(a.data["changes"][1]["to"], "red");
        let none = changes(Ok(&log), at(5));
        assert_eq!(none.text, "No band changed since 2026-11-30 19:55 UTC.");
        let many: Vec<Transition> = (0..CHANGES_MAX + 5)
            .map(|i| t("agent:kai", Band::Red, 50 - (i as i64 % 50)))
            .collect();
        let a = changes(Ok(&many), at(60));
        assert_eq!(a.data["changes"].as_array().unwrap().len(), CHANGES_MAX);
        assert_eq!(a.data["more"], 5);
        assert!(a.text.ends_with("… and 5 older (ask since a later time)."));
    }

    #[test]
    fn the_answer_is_the_glance_in_the_pages_words_and_as_data() {
        let s = snapshot();
        let at = now() + chrono::Duration::seconds(40);
        let a = status(Ok(&s), at);
        let glance = Glance::new(&s, at, chrono::FixedOffset::east_opt(0).unwrap());
        let lines: Vec<&str> = a.text.lines().collect();
        assert_eq!(lines[0], format!("✖ {}", glance.headline));
        assert!(
            lines.contains(&"✖ agent vega · down: connection refused"),
            "{}",
            a.text
        );
        assert_eq!(
            *lines.last().unwrap(),
            "Snapshot written 20:00 UTC (40 s ago). Times are UTC."
        );
        assert_eq!(a.data["verdict"]["band"], "red");
        assert_eq!(a.data["verdict"]["counts"]["red"], 1);
        assert_eq!(a.data["needs"][0]["what"], "agent vega");
        assert_eq!(a.data["needs"][0]["key"], "agent:vega");
        assert_eq!(
            a.data["needs"][0]["agent_status"]["name"],
            "RETRYABLE_ERROR"
        );
        assert_eq!(a.data["elements"][0]["key"], "agent:vega");
        assert_eq!(
            a.data["elements"][0]["agent_status"]["name"],
            "RETRYABLE_ERROR"
        );
        assert_eq!(a.data["snapshot"]["age_s"], 40);
        assert_eq!(a.data["stale"], false);
    }

    /// Issue 44: the hub agent hears a declared agent as declared, in the page's words, in its
    /// needs-you line (still red, still counted) and when it asks about the element.
    #[test]
    fn a_declared_flaky_agent_is_said_as_declared_to_the_hub() {
        let mut s = snapshot();
        let flaky = crate::config::Flaky {
            reason: "laptop tunnel drops at night".into(),
            until: chrono::NaiveDate::from_ymd_opt(2027, 1, 31),
        };
        s.alerts.held = vec![flaky.held("agent:vega".into(), now())];
        let a = status(Ok(&s), now());
        let words = "declared flaky: laptop tunnel drops at night (until 31 Jan)";
        assert!(
            a.text
                .lines()
                .any(|l| l == format!("✖ agent vega · down: connection refused · {words}")),
            "{}",
            a.text
        );
        assert_eq!(a.data["verdict"]["counts"]["red"], 1);
        assert_eq!(a.data["needs"][0]["held"], words);
        let deps = crate::deps::Deps::default();
        let e = explain(&s, "agent:vega", &deps, now()).unwrap();
        assert_eq!(e.data["held"], words);
    }

    #[test]
    fn a_stale_snapshot_says_so_first() {
        let s = snapshot();
        let late = now() + chrono::Duration::seconds(s.rules.snapshot_stale_after_s as i64 + 60);
        let a = status(Ok(&s), late);
        assert!(a.text.starts_with("Do not trust this yet: "), "{}", a.text);
        assert_eq!(a.data["stale"], true);
        let none = status(
            Err("no snapshot yet at /var/lib/fleetdash/out/status.json"),
            now(),
        );
        assert!(
            none.text
                .starts_with("fleetdash cannot answer: no snapshot yet")
        );
        assert_eq!(none.data["stale"], true);
    }
}

//! Asking the fleet (issue 25): spec 003's "one voice" is the hub agent, and when the operator
//! asks it "how is the fleet?", it asks fleetdash. A `SendMessage` / `message/send` whose text
//! is `status` (or whose data part is `{"query": "status"}`) is a question, not a report: the
//! answer is a Message whose text part is the glance in the page's words (the verdict, then the
//! needs-you lines) and whose data part carries the same as data, with the snapshot's age and
//! whether it is stale (a stale answer says so first).
//!
//! - Who may ask: the operator's token, and the report token of an agent marked
//!   `role = "hub"`; any other agent is refused (403 PERMISSION_DENIED, problem+json).
//! - The answer comes from `status.json` as `fleetdash run` last wrote it and the model's
//!   words ([`Glance`]), never from a second collector; the snapshot has passed the redaction
//!   gate already. Times are UTC, and said to be.

use chrono::{DateTime, SecondsFormat, Utc};
use fleetdash_model::glance::{Glance, Need};
use fleetdash_model::{Band, Snapshot, human_age};
use serde_json::{Value, json};

use super::report::Part;
use crate::alerting::engine::pass::status_of;
use crate::write::transitions;

/// The skill the card lists for it.
pub const STATUS_SKILL: &str = "fleet.status";

/// What a message asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Query {
    Status,
}

/// The question `parts` ask, or `None`: a report (the lenient text form never reads a bare
/// `status` as one).
pub fn asked(parts: &[Part]) -> Option<Query> {
    parts.iter().find_map(|p| match p {
        Part::Text(t) => matches!(
            t.trim().to_ascii_lowercase().as_str(),
            "status" | "fleet.status"
        )
        .then_some(Query::Status),
        Part::Data(d) => matches!(
            d.get("query").and_then(Value::as_str),
            Some("status" | "fleet.status")
        )
        .then_some(Query::Status),
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
    let needs: Vec<Value> = glance
        .needs
        .iter()
        .map(|n| {
            json!({"band": n.band.class(), "what": n.what, "reason": n.reason, "since": n.since,
                   "held": n.held, "anchor": n.anchor})
        })
        .collect();
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
    fn a_bare_status_asks_and_a_report_does_not() {
        assert_eq!(asked(&[Part::Text(" Status ".into())]), Some(Query::Status));
        assert_eq!(
            asked(&[Part::Data(json!({"query": "status"}))]),
            Some(Query::Status)
        );
        assert_eq!(asked(&[Part::Text("ACK owning ETA 5m".into())]), None);
        assert_eq!(asked(&[Part::Data(json!({"report": "heartbeat"}))]), None);
        assert_eq!(asked(&[Part::Text("status of the LAB disk".into())]), None);
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
        assert_eq!(a.data["elements"][0]["key"], "agent:vega");
        assert_eq!(
            a.data["elements"][0]["agent_status"]["name"],
            "RETRYABLE_ERROR"
        );
        assert_eq!(a.data["snapshot"]["age_s"], 40);
        assert_eq!(a.data["stale"], false);
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

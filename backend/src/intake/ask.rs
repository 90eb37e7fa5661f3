//! The intake's questions (issue 25): spec 003's "one voice" is the hub agent, and when the
//! operator asks it "how is the fleet?", it asks fleetdash on the endpoint the agents report
//! to. A `SendMessage` / `message/send` whose text is `status`, `changes since 14:00`,
//! `queue` or `report` (`report since 07:30`) (or whose data part is `{"query": "status"}`,
//! `{"since": "..."}`, `{"query": "queue"}`, `{"query": "report"}` with or without a
//! `"since"`) is a question, not a report, answered with a Message of the answer's words and
//! data ([`crate::answers`]).
//!
//! Who may ask: the operator's token, and the report token of an agent marked `role = "hub"`;
//! any other agent is refused (403 PERMISSION_DENIED, problem+json).

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::report::Part;
use crate::answers::moment;
use crate::answers::report::check_since;

/// The skills the card lists for them.
pub const STATUS_SKILL: &str = "fleet.status";
pub const CHANGES_SKILL: &str = "fleet.changes";
pub const QUEUE_SKILL: &str = "fleet.queue";
pub const REPORT_SKILL: &str = "fleet.report";

/// A bare `changes` looks back this far.
const CHANGES_DEFAULT_S: i64 = 3600;

/// What a message asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Query {
    Status,
    Changes {
        since: DateTime<Utc>,
    },
    Queue,
    /// The report of the time since `since`; `None`: since the last scheduled report ended,
    /// else the last day ([`crate::report::default_since`]).
    Report {
        since: Option<DateTime<Utc>>,
    },
}

/// The question `parts` ask at `now`: `None` is a report (the lenient text form never reads a
/// bare `status` or `changes since ...` as one); `Some(Err)` a question whose time cannot be
/// read, in words for the refusal.
pub fn asked(parts: &[Part], now: DateTime<Utc>) -> Option<Result<Query, String>> {
    let last_hour = || Query::Changes {
        since: now - chrono::Duration::seconds(CHANGES_DEFAULT_S),
    };
    parts.iter().find_map(|p| match p {
        Part::Text(t) => {
            let t = t.trim().to_ascii_lowercase();
            match t.as_str() {
                "status" | "fleet.status" => Some(Ok(Query::Status)),
                "changes" | "fleet.changes" => Some(Ok(last_hour())),
                "queue" | "fleet.queue" | "tasks" => Some(Ok(Query::Queue)),
                "report" | "fleet.report" => Some(Ok(Query::Report { since: None })),
                _ => {
                    if let Some(when) = t.strip_prefix("report since ") {
                        return Some(report_since(moment(when, now), now));
                    }
                    let when = t
                        .strip_prefix("changes since ")
                        .or_else(|| t.strip_prefix("since "))?;
                    Some(moment(when, now).map(|since| Query::Changes { since }))
                }
            }
        }
        Part::Data(d) => {
            let since = d.get("since").map(|v| {
                v.as_str()
                    .ok_or_else(|| {
                        "since: a time, e.g. \"14:00\" or an RFC 3339 moment".to_string()
                    })
                    .and_then(|s| moment(s, now))
            });
            match (d.get("query").and_then(Value::as_str), since) {
                (Some("status" | "fleet.status"), _) => Some(Ok(Query::Status)),
                (Some("queue" | "fleet.queue" | "tasks"), _) => Some(Ok(Query::Queue)),
                (Some("report" | "fleet.report"), None) => Some(Ok(Query::Report { since: None })),
                (Some("report" | "fleet.report"), Some(since)) => Some(report_since(since, now)),
                (Some("changes" | "fleet.changes"), None) => Some(Ok(last_hour())),
                (Some("changes" | "fleet.changes") | None, Some(since)) => {
                    Some(since.map(|since| Query::Changes { since }))
                }
                _ => None,
            }
        }
    })
}

/// A report since a moment read, checked as a report's start.
fn report_since(since: Result<DateTime<Utc>, String>, now: DateTime<Utc>) -> Result<Query, String> {
    since
        .and_then(|since| check_since(since, now))
        .map(|since| Query::Report { since: Some(since) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use serde_json::json;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 30, 20, 0, 0).unwrap()
    }

    #[test]
    fn a_bare_status_or_changes_asks_and_a_report_does_not() {
        let ask = |p: Part| asked(&[p], now());
        assert_eq!(ask(Part::Text(" Status ".into())), Some(Ok(Query::Status)));
        assert_eq!(
            ask(Part::Data(json!({"query": "status"}))),
            Some(Ok(Query::Status))
        );
        assert_eq!(ask(Part::Text("ACK owning ETA 5m".into())), None);
        assert_eq!(ask(Part::Data(json!({"report": "heartbeat"}))), None);
        assert_eq!(ask(Part::Text("status of the LAB disk".into())), None);
        let at = |h, m| Utc.with_ymd_and_hms(2026, 11, 30, h, m, 0).unwrap();
        let since = |t| Some(Ok(Query::Changes { since: t }));
        // now() is 20:00 UTC: 14:00 is today's, 21:00 yesterday's.
        assert_eq!(
            ask(Part::Text("changes since 14:00".into())),
            since(at(14, 0))
        );
        assert_eq!(
            ask(Part::Text("since 21:00".into())),
            since(at(21, 0) - chrono::Duration::days(1))
        );
        assert_eq!(ask(Part::Text("changes".into())), since(at(19, 0)));
        assert_eq!(
            ask(Part::Data(json!({"since": "2026-11-30T18:30:00Z"}))),
            since(at(18, 30))
        );
        assert_eq!(
            ask(Part::Data(json!({"query": "changes", "since": "18:30"}))),
            since(at(18, 30))
        );
        let bad = ask(Part::Text("since lunch".into())).unwrap().unwrap_err();
        assert!(bad.contains("expected a time of day in UTC"), "{bad}");
    }

    /// Issue 45: `report`, `report since <moment>` and `{"query": "report"}` ask for the
    /// report; a moment it cannot read or one after now is the caller's mistake; a data part
    /// `{"report": ...}` is still a report kind, never the question.
    #[test]
    fn report_and_report_since_ask_for_the_report() {
        let ask = |p: Part| asked(&[p], now());
        let at = |h, m| Utc.with_ymd_and_hms(2026, 11, 30, h, m, 0).unwrap();
        let report = |since| Some(Ok(Query::Report { since }));
        assert_eq!(ask(Part::Text(" Report ".into())), report(None));
        assert_eq!(ask(Part::Text("fleet.report".into())), report(None));
        assert_eq!(
            ask(Part::Text("report since 07:30".into())),
            report(Some(at(7, 30)))
        );
        assert_eq!(
            ask(Part::Text("report since 2026-11-30T06:00:00Z".into())),
            report(Some(at(6, 0)))
        );
        assert_eq!(ask(Part::Data(json!({"query": "report"}))), report(None));
        assert_eq!(
            ask(Part::Data(
                json!({"query": "fleet.report", "since": "18:30"})
            )),
            report(Some(at(18, 30)))
        );
        assert_eq!(ask(Part::Data(json!({"report": "heartbeat"}))), None);
        assert_eq!(ask(Part::Text("report the disk is full".into())), None);
        let bad = ask(Part::Text("report since lunch".into()))
            .unwrap()
            .unwrap_err();
        assert!(bad.contains("expected a time of day in UTC"), "{bad}");
        let ahead = ask(Part::Data(
            json!({"query": "report", "since": "2026-12-01T00:00:00Z"}),
        ))
        .unwrap()
        .unwrap_err();
        assert!(ahead.contains("after now"), "{ahead}");
    }
}

//! Reading a report out of one A2A message, whatever the dialect: a structured **data part**
//! (`{"report": "ack", ...}`, the documented schema of docs/reporting.md) or, for agents that
//! only send text, one line of the lenient **text form** (`ACK owning ETA 45m`).
//!
//! Pure: the clock (`received_at`), the registry's agent names and the redaction gate come from
//! the caller. Free text never leaves this module as it came: a title and a blocked-on cause are
//! redacted, flattened and cut; everything else in the message (summaries, the rest of the text)
//! is dropped here.
//!
//! The text grammar (keywords in any case, commas read as spaces, only the first non-blank line
//! counts, anything after the report's own words is a summary and is not kept):
//!
//! ```text
//! HEARTBEAT [in-flight ID ...]
//! ACK [TASK] owning [ETA DURATION|TIME]
//! ACK [TASK] escalating [to] AGENT
//! ACK [TASK] blocked [on] CAUSE...
//! ACK [TASK] yielded [to owner]
//! DONE|COMPLETED|FAILED|CANCELED|CANCELLED|REJECTED [TASK]
//! BLOCKED [TASK][:] CAUSE...
//! ASSIGN [to AGENT] [tag AGENT]... [deadline DURATION|TIME]: TITLE...
//! ```
//!
//! `[TASK]`: which task a report is about is the message's A2A `taskId` when it has one (the
//! text may repeat it); a message without `taskId` names the task as the first word after the
//! keyword.

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::queue::{Ack, Assignment, ReportKind, WireState};
use crate::redact::RedactionGate;
use crate::text;

/// A task's title, as the snapshot shows it (the board's cards are cut to the same).
pub const TITLE_MAX_CHARS: usize = 120;
/// What a task is blocked on: a cause in a few words, not a story.
pub const BLOCKED_ON_MAX_CHARS: usize = 160;
/// Task ids, message ids, context ids and agent names: longer is not an id.
pub const ID_MAX_CHARS: usize = 128;
/// In-flight ids in one heartbeat (the collector's own bound on a peer's list).
pub const MAX_IN_FLIGHT: usize = crate::a2a::MAX_IN_FLIGHT;

/// One part of a message, as the dialects carry it.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    Text(String),
    Data(Value),
}

/// What the report parser needs to know beyond the message.
pub struct Context<'a> {
    pub received_at: DateTime<Utc>,
    /// The message's A2A `taskId`.
    pub task_id: Option<&'a str>,
    /// Whether `name` is an agent of the registry (owners and tagged agents must be).
    pub is_agent: &'a dyn Fn(&str) -> bool,
    pub gate: &'a RedactionGate,
}

/// The report a message carries; the error names the field or the word that is wrong.
pub fn read(parts: &[Part], cx: &Context<'_>) -> Result<ReportKind, String> {
    let reports: Vec<&Map<String, Value>> = parts
        .iter()
        .filter_map(|p| match p {
            Part::Data(Value::Object(o)) if o.contains_key("report") => Some(o),
            _ => None,
        })
        .collect();
    match reports.as_slice() {
        [one] => return from_data(one, cx),
        [] => {}
        _ => {
            return Err(
                "one report per message: this one has several data parts with \"report\"".into(),
            );
        }
    }
    let text: String = parts
        .iter()
        .filter_map(|p| match p {
            Part::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n");
    let line = text.lines().map(str::trim).find(|l| !l.is_empty()).ok_or(
        "no report: expected a data part with \"report\" or a text report such as \
         \"ACK owning ETA 45m\" (docs/reporting.md)",
    )?;
    from_text(line, cx)
}

// ---------------------------------------------------------------------------------------------
// The data form.

#[derive(Deserialize)]
#[serde(tag = "report", rename_all = "lowercase", deny_unknown_fields)]
enum DataReport {
    Heartbeat {
        last_activity_at: Option<String>,
        #[serde(default)]
        in_flight: Vec<String>,
    },
    Completion {
        task_id: Option<String>,
        state: String,
    },
    Blocker {
        task_id: Option<String>,
        on: String,
    },
    Ack {
        task_id: Option<String>,
        shape: Shape,
        eta: Option<String>,
        eta_in: Option<String>,
        to: Option<String>,
        on: Option<String>,
    },
    Assign {
        title: String,
        owner: Option<String>,
        #[serde(default)]
        tagged: Vec<String>,
        deadline: Option<String>,
        deadline_in: Option<String>,
    },
}

#[derive(Deserialize, Clone, Copy, PartialEq, Debug)]
#[serde(rename_all = "lowercase")]
enum Shape {
    Owning,
    Escalating,
    Blocked,
    Yielded,
}

fn from_data(data: &Map<String, Value>, cx: &Context<'_>) -> Result<ReportKind, String> {
    let report: DataReport = serde_json::from_value(Value::Object(data.clone()))
        .map_err(|e| format!("data part: {e}"))?;
    Ok(match report {
        DataReport::Heartbeat {
            last_activity_at,
            in_flight,
        } => ReportKind::Heartbeat {
            last_activity_at: last_activity_at
                .map(|t| time(&t).ok_or("last_activity_at: expected an RFC 3339 time"))
                .transpose()?,
            in_flight: in_flight_ids(in_flight.iter().map(String::as_str))?,
        },
        DataReport::Completion { task_id, state } => {
            // A TASK_STATE_* wire value, nothing else (spec §1.2): not even v0.3's lower case.
            let state = WireState::ALL
                .into_iter()
                .find(|w| w.as_str() == state)
                .ok_or("state: expected a TASK_STATE_* wire value")?;
            if !state.is_terminal() {
                return Err(format!(
                    "state: a completion names a terminal state (TASK_STATE_COMPLETED, _FAILED, \
                     _CANCELED or _REJECTED), not {}",
                    state.as_str()
                ));
            }
            ReportKind::Completion {
                task_id: data_task(task_id, cx)?,
                state,
            }
        }
        DataReport::Blocker { task_id, on } => ReportKind::Blocker {
            task_id: data_task(task_id, cx)?,
            on: cause(&on, cx, "on")?,
        },
        DataReport::Ack {
            task_id,
            shape,
            eta,
            eta_in,
            to,
            on,
        } => {
            let task_id = data_task(task_id, cx)?;
            let allowed: &[&str] = match shape {
                Shape::Owning => &["eta", "eta_in"],
                Shape::Escalating => &["to"],
                Shape::Blocked => &["on"],
                Shape::Yielded => &[],
            };
            for (key, present) in [
                ("eta", eta.is_some()),
                ("eta_in", eta_in.is_some()),
                ("to", to.is_some()),
                ("on", on.is_some()),
            ] {
                if present && !allowed.contains(&key) {
                    return Err(format!("{key}: not a field of an ACK {shape:?}").to_lowercase());
                }
            }
            let ack = match shape {
                Shape::Owning => Ack::Owning {
                    eta: when(eta.as_deref(), eta_in.as_deref(), "eta", cx)?,
                },
                // Whom it goes to must be able to ACK it: an agent of the registry, as an owner.
                Shape::Escalating => Ack::Escalating {
                    to: agent(
                        to.as_deref().ok_or("to: required for an ACK escalating")?,
                        "to",
                        cx,
                    )?,
                },
                Shape::Blocked => Ack::Blocked {
                    on: cause(
                        on.as_deref().ok_or("on: required for an ACK blocked")?,
                        cx,
                        "on",
                    )?,
                },
                Shape::Yielded => Ack::Yielded,
            };
            ReportKind::Ack { task_id, ack }
        }
        DataReport::Assign {
            title,
            owner,
            tagged,
            deadline,
            deadline_in,
        } => ReportKind::Assign(assignment(
            &title,
            owner.as_deref(),
            tagged.iter().map(String::as_str),
            when(deadline.as_deref(), deadline_in.as_deref(), "deadline", cx)?,
            cx,
        )?),
    })
}

/// The task of a data report: the message's `taskId`, or the part's `task_id`; both must agree.
fn data_task(in_data: Option<String>, cx: &Context<'_>) -> Result<String, String> {
    match (cx.task_id, in_data) {
        (Some(msg), Some(data)) if msg != data => Err(format!(
            "task_id: the data part names another task than the message's taskId ({})",
            msg
        )),
        (Some(msg), _) => task_id(msg),
        (None, Some(data)) => task_id(&data),
        (None, None) => Err("task_id: required (or set the message's taskId)".into()),
    }
}

/// An absolute time or one relative to when the report came; never both.
fn when(
    at: Option<&str>,
    after: Option<&str>,
    field: &str,
    cx: &Context<'_>,
) -> Result<Option<DateTime<Utc>>, String> {
    match (at, after) {
        (Some(_), Some(_)) => Err(format!("{field}: give {field} or {field}_in, not both")),
        (Some(at), None) => time(at)
            .ok_or_else(|| {
                format!("{field}: expected an RFC 3339 time such as 2026-01-02T15:04:05Z")
            })
            .and_then(|at| {
                crate::clock::within_horizon(at, cx.received_at)
                    .map_err(|e| format!("{field}: {e}"))
            })
            .map(Some),
        (None, Some(after)) => in_from(after, cx)
            .map(Some)
            .map_err(|e| format!("{field}_in: {e}")),
        (None, None) => Ok(None),
    }
}

fn time(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s.trim())
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// `45m`, `2h 30m`: from the hub's receiving time, within [`crate::clock::HORIZON`].
fn in_from(s: &str, cx: &Context<'_>) -> Result<DateTime<Utc>, String> {
    let d = humantime::parse_duration(s.trim())
        .ok()
        .ok_or("expected a duration such as 45m or 2h")?;
    crate::clock::ahead(cx.received_at, d)
}

/// A task id, message id or context id from the wire: short, printable, no spaces, and nothing
/// the redaction gate would hold back (an id that looks like a token is never stored).
pub fn id(raw: &str, field: &str) -> Result<String, String> {
    let ok = !raw.is_empty()
        && raw.chars().count() <= ID_MAX_CHARS
        && raw
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':' | '/'))
        && RedactionGate::default().is_clean(raw);
    if ok {
        Ok(raw.to_string())
    } else {
        Err(format!(
            "{field}: expected an id (letters, digits, _ - . : /; at most {ID_MAX_CHARS})"
        ))
    }
}

fn task_id(raw: &str) -> Result<String, String> {
    id(raw, "taskId")
}

/// A word shaped as a task id (`q_1a2b3c`, `t_9`: a short lowercase prefix, `_`, letters and
/// digits with at least one digit), not a summary's first word.
fn looks_like_task_id(w: &str) -> bool {
    w.split_once('_').is_some_and(|(prefix, rest)| {
        (1..=8).contains(&prefix.len())
            && prefix.chars().all(|c| c.is_ascii_lowercase())
            && !rest.is_empty()
            && rest.chars().all(|c| c.is_ascii_alphanumeric())
            && rest.chars().any(|c| c.is_ascii_digit())
    })
}

fn in_flight_ids<'a>(ids: impl Iterator<Item = &'a str>) -> Result<Vec<String>, String> {
    let ids: Vec<String> = ids.map(|i| id(i, "in_flight")).collect::<Result<_, _>>()?;
    if ids.len() > MAX_IN_FLIGHT {
        return Err(format!("in_flight: at most {MAX_IN_FLIGHT} ids"));
    }
    Ok(ids)
}

/// An agent's name (an owner, a tagged agent, whom an ACK escalates to).
fn name(raw: &str, field: &str) -> Result<String, String> {
    let raw = raw.trim();
    if crate::config::is_plain_name(raw) && raw.chars().count() <= ID_MAX_CHARS {
        Ok(raw.to_string())
    } else {
        Err(format!("{field}: expected an agent's name"))
    }
}

fn agent(raw: &str, field: &str, cx: &Context<'_>) -> Result<String, String> {
    let n = name(raw, field)?;
    if (cx.is_agent)(&n) {
        Ok(n)
    } else {
        Err(format!("{field}: no agent named {n:?} in the registry"))
    }
}

/// Free text kept on a row: through the gate (which knows the fleet's tokens), flattened and cut.
fn cause(raw: &str, cx: &Context<'_>, field: &str) -> Result<String, String> {
    let kept = text::clean(&cx.gate.redact_str(raw), BLOCKED_ON_MAX_CHARS);
    if kept.is_empty() {
        return Err(format!("{field}: say what it is blocked on"));
    }
    Ok(kept)
}

fn assignment<'a>(
    title: &str,
    owner: Option<&str>,
    tagged: impl Iterator<Item = &'a str>,
    deadline: Option<DateTime<Utc>>,
    cx: &Context<'_>,
) -> Result<Assignment, String> {
    let title = text::clean(&cx.gate.redact_str(title), TITLE_MAX_CHARS);
    if title.is_empty() {
        return Err("title: required".into());
    }
    let owner = owner.map(|o| agent(o, "owner", cx)).transpose()?;
    let mut tags: Vec<String> = Vec::new();
    for t in tagged {
        let t = agent(t, "tagged", cx)?;
        if !tags.contains(&t) {
            tags.push(t);
        }
    }
    if owner.is_none() && tags.is_empty() {
        return Err("owner: an assignment names an owner or tagged agents".into());
    }
    Ok(Assignment {
        title,
        owner,
        tagged: tags,
        deadline,
    })
}

// ---------------------------------------------------------------------------------------------
// The text form.

const TEXT_KEYWORDS: &str =
    "HEARTBEAT, ACK, DONE, FAILED, CANCELED, REJECTED, BLOCKED or ASSIGN (docs/reporting.md)";

/// One word off the front of `s`: up to a space or comma; a trailing `:` is not part of it.
fn word(s: &str) -> Option<(&str, &str)> {
    let s = s.trim_start_matches(|c: char| c.is_whitespace() || c == ',');
    if s.is_empty() {
        return None;
    }
    let end = s
        .find(|c: char| c.is_whitespace() || c == ',')
        .unwrap_or(s.len());
    let (w, rest) = s.split_at(end);
    Some((w.trim_end_matches(':'), rest))
}

/// `rest` without the separators between a report's words and its free text.
fn tail(rest: &str) -> &str {
    rest.trim_start_matches(|c: char| c.is_whitespace() || matches!(c, ',' | ':' | '-'))
        .trim_end()
}

fn is(w: &str, words: &[&str]) -> bool {
    words.iter().any(|k| w.eq_ignore_ascii_case(k))
}

/// The report's task: the message's `taskId` (a repeat of it in the text is skipped), else the
/// first word. Words naming another task than the message's are refused, as the data form
/// refuses a `task_id` that is not the message's: applied to the message's task, "DONE q_2"
/// in q_1's thread would complete the wrong one.
fn text_task<'s>(
    rest: &'s str,
    cx: &Context<'_>,
    example: &str,
) -> Result<(String, &'s str), String> {
    match (cx.task_id, word(rest)) {
        (Some(t), Some((w, after))) if w == t => Ok((task_id(t)?, after)),
        (Some(t), Some((w, _))) if looks_like_task_id(w) => Err(format!(
            "the words name task {w} but the message's taskId is {t}: report on {w} in its own \
             task, or name {t}"
        )),
        (Some(t), _) => Ok((task_id(t)?, rest)),
        (None, Some((w, after))) => Ok((
            id(w, "task").map_err(|_| format!("name the task: {example}"))?,
            after,
        )),
        (None, None) => Err(format!("name the task: {example}")),
    }
}

fn from_text(line: &str, cx: &Context<'_>) -> Result<ReportKind, String> {
    let (keyword, rest) = word(line).ok_or("empty report")?;
    let k = keyword.to_ascii_uppercase();
    match k.as_str() {
        "HEARTBEAT" => {
            let mut in_flight = Vec::new();
            if let Some((w, after)) = word(rest)
                && is(w, &["in-flight", "inflight", "in_flight"])
            {
                let mut after = after;
                while let Some((i, more)) = word(after) {
                    in_flight.push(i.to_string());
                    after = more;
                }
            }
            Ok(ReportKind::Heartbeat {
                last_activity_at: None,
                in_flight: in_flight_ids(in_flight.iter().map(String::as_str))?,
            })
        }
        "DONE" | "COMPLETED" | "FAILED" | "CANCELED" | "CANCELLED" | "REJECTED" => {
            let state = match k.as_str() {
                "DONE" | "COMPLETED" => WireState::Completed,
                "FAILED" => WireState::Failed,
                "REJECTED" => WireState::Rejected,
                _ => WireState::Canceled,
            };
            let (task_id, _summary) = text_task(rest, cx, "DONE t_1a2b")?;
            Ok(ReportKind::Completion { task_id, state })
        }
        "BLOCKED" => {
            let (task_id, rest) = text_task(rest, cx, "BLOCKED t_1a2b: LAB disk full")?;
            Ok(ReportKind::Blocker {
                task_id,
                on: cause(tail(rest), cx, "BLOCKED")?,
            })
        }
        "ACK" => ack_text(rest, cx),
        // The title follows the first colon, which may end the keyword itself ("ASSIGN: x").
        "ASSIGN" => assign_text(
            &line.trim_start_matches(|c: char| c.is_whitespace() || c == ',')[keyword.len()..],
            cx,
        ),
        _ => Err(format!(
            "not a report: a text report starts with {TEXT_KEYWORDS}"
        )),
    }
}

fn ack_text(rest: &str, cx: &Context<'_>) -> Result<ReportKind, String> {
    const SHAPES: &[&str] = &[
        "owning",
        "own",
        "owned",
        "escalating",
        "escalated",
        "blocked",
        "yielded",
        "yielding",
        "yield",
    ];
    const EXAMPLE: &str = "ACK t_1a2b owning ETA 45m";
    // Without a taskId, the task comes first; with one, the shape may come first.
    let (task_id, rest) = match (cx.task_id, word(rest)) {
        (None, Some((w, _))) if is(w, SHAPES) => {
            return Err(format!("name the task: {EXAMPLE}"));
        }
        _ => text_task(rest, cx, EXAMPLE)?,
    };
    let (shape, rest) = word(rest)
        .ok_or("ACK: say owning [ETA 45m], escalating to AGENT, blocked on CAUSE, or yielded")?;
    let ack = if is(shape, &["owning", "own", "owned"]) {
        let eta = match word(rest) {
            Some((w, after)) if is(w, &["eta"]) => {
                let at = tail(after);
                // A time, or a duration up to the end of the line or the first comma.
                let at = at.split(',').next().unwrap_or("").trim();
                Some(match time(at) {
                    Some(at) => crate::clock::within_horizon(at, cx.received_at)
                        .map_err(|e| format!("ETA: {e}"))?,
                    None => {
                        in_from(at, cx).map_err(|e| format!("ETA: {e}, or an RFC 3339 time"))?
                    }
                })
            }
            _ => None,
        };
        Ack::Owning { eta }
    } else if is(shape, &["escalating", "escalated"]) {
        let rest = match word(rest) {
            Some((w, after)) if is(w, &["to"]) => after,
            _ => rest,
        };
        let (to, _) = word(rest).ok_or("ACK escalating: to whom? (ACK escalating to sol)")?;
        Ack::Escalating {
            to: agent(to, "escalating to", cx)?,
        }
    } else if is(shape, &["blocked"]) {
        let rest = match word(rest) {
            Some((w, after)) if is(w, &["on"]) => after,
            _ => rest,
        };
        Ack::Blocked {
            on: cause(tail(rest), cx, "ACK blocked on")?,
        }
    } else if is(shape, &["yielded", "yielding", "yield"]) {
        Ack::Yielded
    } else {
        return Err(
            "ACK: say owning [ETA 45m], escalating to AGENT, blocked on CAUSE, or yielded".into(),
        );
    };
    Ok(ReportKind::Ack { task_id, ack })
}

fn assign_text(rest: &str, cx: &Context<'_>) -> Result<ReportKind, String> {
    let (head, title) = rest
        .split_once(':')
        .ok_or("ASSIGN: the title comes after a colon (ASSIGN to sol deadline 2h: title)")?;
    let mut owner = None;
    let mut tagged = Vec::new();
    let mut deadline = None;
    let mut words = head;
    while let Some((w, after)) = word(words) {
        let (value, after) = word(after).ok_or_else(|| format!("ASSIGN: {w} what?"))?;
        if is(w, &["to"]) {
            owner = Some(value);
        } else if is(w, &["tag", "tagged"]) {
            tagged.push(value);
        } else if is(w, &["deadline", "by"]) {
            deadline = Some(
                time(value)
                    .map(Ok)
                    .unwrap_or_else(|| in_from(value, cx))
                    .map_err(|e| format!("deadline: {e}, or an RFC 3339 time"))?,
            );
        } else {
            return Err(
                "ASSIGN: expected to AGENT, tag AGENT, deadline DURATION, then : title".into(),
            );
        }
        words = after;
    }
    Ok(ReportKind::Assign(assignment(
        title,
        owner,
        tagged.into_iter(),
        deadline,
        cx,
    )?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use serde_json::json;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 3, 1, 12, 0, 0).unwrap()
    }

    fn known(name: &str) -> bool {
        matches!(name, "sol" | "mira" | "nova")
    }

    fn text_with(task: Option<&str>, line: &str) -> Result<ReportKind, String> {
        let gate = RedactionGate::new(["fleet-secret-token-123".to_string()]);
        let cx = Context {
            received_at: now(),
            task_id: task,
            is_agent: &known,
            gate: &gate,
        };
        read(&[Part::Text(line.into())], &cx)
    }

    fn text(line: &str) -> Result<ReportKind, String> {
        text_with(None, line)
    }

    fn data_with(task: Option<&str>, data: Value) -> Result<ReportKind, String> {
        let gate = RedactionGate::default();
        let cx = Context {
            received_at: now(),
            task_id: task,
            is_agent: &known,
            gate: &gate,
        };
        read(&[Part::Text("ignored".into()), Part::Data(data)], &cx)
    }

    fn data(d: Value) -> Result<ReportKind, String> {
        data_with(None, d)
    }

    fn ack(task: &str, ack: Ack) -> ReportKind {
        ReportKind::Ack {
            task_id: task.into(),
            ack,
        }
    }

    #[test]
    fn the_three_ack_shapes_and_yielding_read_from_text() {
        assert_eq!(
            text_with(Some("t_1a2b"), "ACK owning ETA 45m"),
            Ok(ack(
                "t_1a2b",
                Ack::Owning {
                    eta: Some(now() + chrono::Duration::minutes(45))
                }
            ))
        );
        assert_eq!(
            text("ack, t_1a2b, owning, eta 2026-03-01T15:00:00Z"),
            Ok(ack(
                "t_1a2b",
                Ack::Owning {
                    eta: Some(Utc.with_ymd_and_hms(2026, 3, 1, 15, 0, 0).unwrap())
                }
            ))
        );
        assert_eq!(
            text("ACK t_1 owning"),
            Ok(ack("t_1", Ack::Owning { eta: None }))
        );
        assert_eq!(
            text_with(Some("t_1"), "ACK escalating to sol"),
            Ok(ack("t_1", Ack::Escalating { to: "sol".into() }))
        );
        assert_eq!(
            text_with(Some("q_9"), "ACK blocked on t_1a2b: LAB disk full"),
            Ok(ack(
                "q_9",
                Ack::Blocked {
                    on: "t_1a2b: LAB disk full".into()
                }
            ))
        );
        assert_eq!(
            text_with(Some("q_9"), "ACK yielded to owner"),
            Ok(ack("q_9", Ack::Yielded))
        );
        // The text may repeat the message's taskId.
        assert_eq!(
            text_with(Some("q_9"), "ACK q_9 yielded"),
            Ok(ack("q_9", Ack::Yielded))
        );
    }

    #[test]
    fn completions_blockers_and_heartbeats_read_from_text() {
        assert_eq!(
            text("DONE t_1a2b shipped it, see the PR"),
            Ok(ReportKind::Completion {
                task_id: "t_1a2b".into(),
                state: WireState::Completed
            })
        );
        assert_eq!(
            text("failed t_1"),
            Ok(ReportKind::Completion {
                task_id: "t_1".into(),
                state: WireState::Failed
            })
        );
        assert_eq!(
            text_with(Some("t_1"), "CANCELLED"),
            Ok(ReportKind::Completion {
                task_id: "t_1".into(),
                state: WireState::Canceled
            })
        );
        assert_eq!(
            text("BLOCKED t_1a2b: why\nmore lines are a summary"),
            Ok(ReportKind::Blocker {
                task_id: "t_1a2b".into(),
                on: "why".into()
            })
        );
        assert_eq!(
            text("HEARTBEAT"),
            Ok(ReportKind::Heartbeat {
                last_activity_at: None,
                in_flight: vec![]
            })
        );
        assert_eq!(
            text("  \n heartbeat in-flight q_1, q_2"),
            Ok(ReportKind::Heartbeat {
                last_activity_at: None,
                in_flight: vec!["q_1".into(), "q_2".into()]
            })
        );
        assert_eq!(
            text("HEARTBEAT all quiet here"),
            Ok(ReportKind::Heartbeat {
                last_activity_at: None,
                in_flight: vec![]
            })
        );
    }

    #[test]
    fn assign_reads_owner_tags_deadline_and_a_clean_title() {
        let got = text("ASSIGN to sol tag mira tag nova deadline 2h: Fix the\tarm64 pull").unwrap();
        assert_eq!(
            got,
            ReportKind::Assign(Assignment {
                title: "Fix the arm64 pull".into(),
                owner: Some("sol".into()),
                tagged: vec!["mira".into(), "nova".into()],
                deadline: Some(now() + chrono::Duration::hours(2)),
            })
        );
        let err = text("ASSIGN to bob: x").unwrap_err();
        assert!(err.contains("no agent named \"bob\""), "{err}");
        assert!(text("ASSIGN to sol").unwrap_err().contains("colon"));
        assert!(text("ASSIGN: x").unwrap_err().contains("owner"));
    }

    #[test]
    fn free_text_is_redacted_flattened_and_cut() {
        let ReportKind::Assign(a) = text(&format!(
            "ASSIGN to sol: rotate fleet-secret-token-123 and sk-ant-api03-abcdefghijklmnopqrstu {}",
            "x".repeat(300)
        ))
        .unwrap() else {
            panic!()
        };
        assert!(!a.title.contains("fleet-secret-token-123"), "{}", a.title);
        assert!(!a.title.contains("sk-ant"), "{}", a.title);
        assert!(a.title.chars().count() <= TITLE_MAX_CHARS);
        let ReportKind::Blocker { on, .. } =
            text("BLOCKED t_1: the token=hunter2hunter2 \u{202E}expired").unwrap()
        else {
            panic!()
        };
        assert!(!on.contains("hunter2"), "{on}");
        assert!(!on.contains('\u{202E}'), "{on}");
    }

    #[test]
    fn text_mistakes_name_what_is_wrong() {
        assert!(
            text("ACK owning ETA 45m")
                .unwrap_err()
                .contains("name the task")
        );
        assert!(text("DONE").unwrap_err().contains("name the task"));
        assert!(text("hello there").unwrap_err().contains("not a report"));
        assert!(
            text_with(Some("t"), "ACK maybe")
                .unwrap_err()
                .contains("owning")
        );
        assert!(
            text_with(Some("t"), "ACK owning ETA soon")
                .unwrap_err()
                .contains("ETA")
        );
        assert!(
            text_with(Some("t"), "ACK owning ETA 9999d")
                .unwrap_err()
                .contains("more than 366 d ahead")
        );
        // Issue 32: an absolute time past the horizon too, and one past any date.
        assert!(
            text_with(Some("t"), "ACK owning ETA 9999-12-31T00:00:00Z")
                .unwrap_err()
                .contains("more than 366 d ahead")
        );
        assert!(
            text_with(Some("t"), "ACK owning ETA 300000y")
                .unwrap_err()
                .contains("ETA")
        );
        assert!(
            text_with(Some("t"), "ACK blocked on")
                .unwrap_err()
                .contains("blocked")
        );
        assert!(text("BLOCKED t_1").unwrap_err().contains("blocked on"));
        assert!(text("DONE sk-ant-api03-abcdefghijklmnopqrstu").is_err());
        assert!(text("").unwrap_err().contains("no report"));
    }

    #[test]
    fn every_data_kind_reads_by_its_schema() {
        assert_eq!(
            data(
                json!({"report": "heartbeat", "last_activity_at": "2026-03-01T11:00:00Z", "in_flight": ["q_1"]})
            ),
            Ok(ReportKind::Heartbeat {
                last_activity_at: Some(Utc.with_ymd_and_hms(2026, 3, 1, 11, 0, 0).unwrap()),
                in_flight: vec!["q_1".into()]
            })
        );
        assert_eq!(
            data(json!({"report": "completion", "task_id": "q_1", "state": "TASK_STATE_FAILED"})),
            Ok(ReportKind::Completion {
                task_id: "q_1".into(),
                state: WireState::Failed
            })
        );
        assert_eq!(
            data_with(
                Some("q_1"),
                json!({"report": "blocker", "on": "mira's review"})
            ),
            Ok(ReportKind::Blocker {
                task_id: "q_1".into(),
                on: "mira's review".into()
            })
        );
        assert_eq!(
            data_with(
                Some("q_1"),
                json!({"report": "ack", "shape": "owning", "eta_in": "45m"})
            ),
            Ok(ack(
                "q_1",
                Ack::Owning {
                    eta: Some(now() + chrono::Duration::minutes(45))
                }
            ))
        );
        assert_eq!(
            data(json!({"report": "ack", "task_id": "q_1", "shape": "escalating", "to": "sol"})),
            Ok(ack("q_1", Ack::Escalating { to: "sol".into() }))
        );
        assert_eq!(
            data(json!({"report": "ack", "task_id": "q_1", "shape": "blocked", "on": "LAB disk"})),
            Ok(ack(
                "q_1",
                Ack::Blocked {
                    on: "LAB disk".into()
                }
            ))
        );
        assert_eq!(
            data(json!({"report": "ack", "task_id": "q_1", "shape": "yielded"})),
            Ok(ack("q_1", Ack::Yielded))
        );
        assert_eq!(
            data(
                json!({"report": "assign", "title": "Rotate logs", "tagged": ["sol", "mira", "nova"], "deadline": "2026-03-02T00:00:00Z"})
            ),
            Ok(ReportKind::Assign(Assignment {
                title: "Rotate logs".into(),
                owner: None,
                tagged: vec!["sol".into(), "mira".into(), "nova".into()],
                deadline: Some(Utc.with_ymd_and_hms(2026, 3, 2, 0, 0, 0).unwrap()),
            }))
        );
    }

    #[test]
    fn data_mistakes_name_the_field() {
        let err = |d: Value| data(d).unwrap_err();
        assert!(
            err(json!({"report": "completion", "task_id": "q", "state": "completed"}))
                .contains("TASK_STATE_")
        );
        assert!(
            err(json!({"report": "completion", "task_id": "q", "state": "TASK_STATE_WORKING"}))
                .contains("terminal")
        );
        assert!(
            err(json!({"report": "completion", "state": "TASK_STATE_FAILED"})).contains("task_id")
        );
        assert!(
            err(json!({"report": "ack", "task_id": "q", "shape": "owning", "to": "sol"}))
                .contains("to")
        );
        assert!(err(json!({"report": "ack", "task_id": "q", "shape": "owning", "eta": "x", "eta_in": "1h"})).contains("not both"));
        assert!(
            err(json!({"report": "ack", "task_id": "q", "shape": "maybe"}))
                .contains("unknown variant")
        );
        assert!(
            err(json!({"report": "blocker", "task_id": "q", "on": "x", "summary": "long"}))
                .contains("unknown field `summary`")
        );
        assert!(err(json!({"report": "gossip"})).contains("unknown variant"));
        assert!(err(json!({"report": "assign", "title": "x", "owner": "bob"})).contains("bob"));
        assert!(
            data_with(
                Some("q_1"),
                json!({"report": "blocker", "task_id": "q_2", "on": "x"})
            )
            .unwrap_err()
            .contains("another task")
        );
        let many = vec![Part::Data(json!({"report": "heartbeat"})); 2];
        let gate = RedactionGate::default();
        let cx = Context {
            received_at: now(),
            task_id: None,
            is_agent: &known,
            gate: &gate,
        };
        assert!(read(&many, &cx).unwrap_err().contains("one report"));
    }

    /// Was: a text report whose words name another task than the message's taskId was applied
    /// to the message's taskId, silently (the data form refuses the same mismatch).
    #[test]
    fn a_text_report_naming_another_task_than_the_messages_is_refused() {
        // The data form refuses it:
        assert!(
            data_with(
                Some("q_1"),
                json!({"report": "completion", "task_id": "q_2", "state": "TASK_STATE_COMPLETED"})
            )
            .is_err()
        );
        // The text form must not complete q_1 when it says DONE q_2.
        let got = text_with(Some("q_1"), "DONE q_2");
        assert!(
            got.as_ref()
                .is_err_and(|e| e.contains("q_2") && e.contains("q_1")),
            "DONE q_2 in q_1's thread: {got:?}"
        );
        // A summary is not a task's name: DONE with words after it completes the message's task.
        assert!(matches!(
            text_with(Some("q_1"), "DONE released v2_beta to LAB"),
            Ok(ReportKind::Completion { task_id, .. }) if task_id == "q_1"
        ));
        let got = text_with(Some("q_1"), "BLOCKED q_2: LAB disk full");
        assert!(
            !matches!(&got, Ok(ReportKind::Blocker { task_id, .. }) if task_id == "q_1"),
            "BLOCKED q_2 blocked q_1: {got:?}"
        );
    }

    /// Was: an ACK escalating to a name that is no agent of the registry was accepted (an owner
    /// or a tag naming one is refused): the task went to nobody who could ever ACK it.
    #[test]
    fn an_escalation_to_an_unknown_agent_is_refused_like_an_unknown_owner() {
        let got =
            data(json!({"report": "ack", "task_id": "q_1", "shape": "escalating", "to": "bob"}));
        assert!(
            got.is_err(),
            "escalating to bob (not in the registry) accepted: {got:?}"
        );
        let got = text("ACK q_1 escalating to bob");
        assert!(
            got.is_err(),
            "escalating to bob (not in the registry) accepted: {got:?}"
        );
    }
}

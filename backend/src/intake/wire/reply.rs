//! Replies in the caller's dialect: the JSON-RPC envelopes of a result and of an error (with
//! its ASC refinement in the data), and a queue row as an A2A Task, shaped so that the official
//! SDK clients parse them.

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Map, Value, json};

use super::{
    ASC_EXTENSION, ASC_SPEC_VERSION, Dialect, Inbound, LIST_PAGE_DEFAULT, ListQuery,
    QUEUE_EXTENSION, RpcError,
};
use crate::queue::{Ack, TaskRow, WireState};
use fleetdash_model::Asc;

/// `{"jsonrpc": "2.0", "id": .., "result": ..}`
pub fn ok(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// `{"jsonrpc": "2.0", "id": .., "error": {code, message, data}}`: v1.0's data is a list of
/// google.rpc details (the SDK reads an ErrorInfo's metadata), v0.3's an object.
pub fn error(id: &Value, dialect: Dialect, e: &RpcError) -> Value {
    let data = match (dialect, &e.asc) {
        (Dialect::V1, asc) => {
            let mut metadata = Map::new();
            let mut reason = e.reason().to_string();
            let mut domain = "a2a-protocol.org";
            if let Some(asc) = asc {
                // ErrorInfo's metadata is a map of strings.
                reason = asc.asc.name.to_string();
                domain = "agent-status";
                metadata.insert("code".into(), asc.asc.code.to_string().into());
                metadata.insert("name".into(), asc.asc.name.to_string().into());
                metadata.insert("terminal".into(), asc.terminal.to_string().into());
                for (k, v) in &asc.facts {
                    metadata.insert((*k).into(), v.clone().into());
                }
            }
            json!([{
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": reason,
                "domain": domain,
                "metadata": metadata,
            }])
        }
        (Dialect::V03, None) => Value::Null,
        (Dialect::V03, Some(asc)) => {
            let mut data = Map::new();
            data.insert("agent_status".into(), asc_status(&asc.asc, asc.terminal));
            for (k, v) in &asc.facts {
                data.insert((*k).into(), v.clone().into());
            }
            Value::Object(data)
        }
    };
    let mut err = json!({"code": e.code, "message": e.message});
    if !data.is_null() {
        err["data"] = data;
    }
    json!({"jsonrpc": "2.0", "id": id, "error": err})
}

/// ASC's status object (the envelope's `status`, seed 000's `agent_status`).
pub fn asc_status(asc: &Asc, terminal: bool) -> Value {
    json!({"code": asc.code, "name": asc.name, "kind": "status", "scope": "task", "terminal": terminal})
}

pub fn timestamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// v0.3's lower-case state.
fn v03_state(state: WireState) -> &'static str {
    match state {
        WireState::Submitted => "submitted",
        WireState::Working => "working",
        WireState::InputRequired => "input-required",
        WireState::Completed => "completed",
        WireState::Failed => "failed",
        WireState::Canceled => "canceled",
        WireState::Rejected => "rejected",
        WireState::AuthRequired => "auth-required",
    }
}

/// The ASC refinement of a row's A2A state (seed 000's table), and whether it is terminal.
pub fn refinement(row: &TaskRow) -> (Asc, bool) {
    let named = |code, name: &'static str| Asc {
        code,
        name: std::borrow::Cow::Borrowed(name),
    };
    match row.state {
        WireState::Submitted => (Asc::ACCEPTED, false),
        // Blocked on something or someone (a blocker, or "ACK blocked on"): waiting, not
        // asking a human for input.
        WireState::Working | WireState::InputRequired if row.blocked_on.is_some() => {
            (named(1020, "WAITING_DEPENDENCY"), false)
        }
        WireState::Working => (Asc::RUNNING, false),
        WireState::InputRequired => (Asc::HUMAN_INPUT_REQUIRED, false),
        WireState::AuthRequired => (Asc::AUTHENTICATION_REQUIRED, false),
        WireState::Completed => (Asc::SUCCESS, true),
        WireState::Canceled => (Asc::CANCELLED, true),
        WireState::Rejected => (Asc::PERMISSION_DENIED, true),
        // The watchdog's orphan (§3.5): no reply within the limit.
        WireState::Failed if row.status_message.is_some() => (Asc::TIMEOUT, true),
        WireState::Failed => (named(6000, "FATAL_ERROR"), true),
    }
}

/// A message from the intake (role agent).
fn agent_message(
    dialect: Dialect,
    message_id: &str,
    text: &str,
    task_id: Option<&str>,
    context_id: Option<&str>,
) -> Value {
    let mut m = match dialect {
        Dialect::V1 => {
            json!({"messageId": message_id, "role": "ROLE_AGENT", "parts": [{"text": text}]})
        }
        Dialect::V03 => json!({"kind": "message", "messageId": message_id, "role": "agent",
                               "parts": [{"kind": "text", "text": text}]}),
    };
    if let Some(t) = task_id {
        m["taskId"] = t.into();
    }
    if let Some(c) = context_id {
        m["contextId"] = c.into();
    }
    m
}

/// A queue row as an A2A Task of `dialect`.
pub fn task(dialect: Dialect, row: &TaskRow) -> Value {
    // v0.3 requires a contextId; a row assigned without one is its own context.
    let context_id = row.context();
    let at = status_at(row);
    let mut status = json!({
        "state": match dialect {
            Dialect::V1 => row.state.as_str(),
            Dialect::V03 => v03_state(row.state),
        },
        "timestamp": timestamp(at),
    });
    if let Some(text) = &row.status_message {
        status["message"] = agent_message(
            dialect,
            &format!("{}-status", row.id),
            text,
            Some(&row.id),
            Some(context_id),
        );
    }
    let (asc, terminal) = refinement(row);
    let mut metadata = Map::new();
    metadata.insert(
        ASC_EXTENSION.into(),
        json!({"spec_version": ASC_SPEC_VERSION, "status": asc_status(&asc, terminal),
               "occurred_at": timestamp(at)}),
    );
    metadata.insert(QUEUE_EXTENSION.into(), queue_facts(row));
    let mut t = json!({"id": row.id, "contextId": context_id, "status": status,
                       "metadata": metadata});
    if dialect == Dialect::V03 {
        t["kind"] = "task".into();
    }
    t
}

fn queue_facts(row: &TaskRow) -> Value {
    let mut f = Map::new();
    f.insert("title".into(), row.title.clone().into());
    if let Some(o) = &row.owner {
        f.insert("owner".into(), o.clone().into());
    }
    f.insert("tagged".into(), row.tagged.clone().into());
    f.insert("created_by".into(), row.created_by.clone().into());
    f.insert("created_at".into(), timestamp(row.created_at).into());
    if let Some(d) = row.deadline {
        f.insert("deadline".into(), timestamp(d).into());
    }
    if let Some(ack) = &row.ack {
        let mut a = json!({"by": ack.by, "at": timestamp(ack.at)});
        match &ack.ack {
            Ack::Owning { eta } => {
                a["shape"] = "owning".into();
                if let Some(eta) = eta {
                    a["eta"] = timestamp(*eta).into();
                }
            }
            Ack::Escalating { to } => {
                a["shape"] = "escalating".into();
                a["to"] = to.clone().into();
            }
            Ack::Blocked { on } => {
                a["shape"] = "blocked".into();
                a["on"] = on.clone().into();
            }
            Ack::Yielded => a["shape"] = "yielded".into(),
        }
        f.insert("ack".into(), a);
    }
    if !row.yielded.is_empty() {
        f.insert("yielded".into(), row.yielded.clone().into());
    }
    if let Some(b) = &row.blocked_on {
        f.insert("blocked_on".into(), b.clone().into());
    }
    if let Some(t) = row.last_report_at {
        f.insert("last_report_at".into(), timestamp(t).into());
    }
    if row.worker_died {
        f.insert("worker_died".into(), true.into());
    }
    if !row.provenance.reporter.is_empty() {
        f.insert("reporter".into(), row.provenance.reporter.clone().into());
    }
    Value::Object(f)
}

/// SendMessage's result: the task the report touched, or (a heartbeat) a message.
pub fn send_result(dialect: Dialect, row: Option<&TaskRow>, inbound: &Inbound) -> Value {
    match (dialect, row) {
        (Dialect::V1, Some(row)) => json!({"task": task(dialect, row)}),
        (Dialect::V03, Some(row)) => task(dialect, row),
        (_, None) => {
            let m = agent_message(
                dialect,
                &format!("ack-{}", inbound.message_id),
                "recorded",
                None,
                inbound.context_id.as_deref(),
            );
            match dialect {
                Dialect::V1 => json!({"message": m}),
                Dialect::V03 => m,
            }
        }
    }
}

/// SendMessage's result for a question (issue 25): a Message of the agent with the answer's
/// text part, then its data part, in the question's context.
pub fn answer_result(dialect: Dialect, inbound: &Inbound, text: &str, data: Value) -> Value {
    let mut m = agent_message(
        dialect,
        &format!("answer-{}", inbound.message_id),
        text,
        None,
        inbound.context_id.as_deref(),
    );
    let part = match dialect {
        Dialect::V1 => json!({"data": data}),
        Dialect::V03 => json!({"kind": "data", "data": data}),
    };
    if let Some(parts) = m["parts"].as_array_mut() {
        parts.push(part);
    }
    match dialect {
        Dialect::V1 => json!({"message": m}),
        Dialect::V03 => m,
    }
}

/// When a task's status last changed, as its `status.timestamp` says.
fn status_at(row: &TaskRow) -> DateTime<Utc> {
    row.last_report_at.unwrap_or(row.created_at)
}

/// ListTasks' result (v1.0): one page of `rows` after the query's filters, sorted by status
/// timestamp, most recently updated first (the spec's MUST; the id breaks ties, so pages are
/// stable).
pub fn list_result(rows: &[TaskRow], q: &ListQuery) -> Value {
    let mut matching: Vec<&TaskRow> = rows
        .iter()
        .filter(|r| q.state.is_none_or(|s| r.state == s))
        .filter(|r| q.status_after.is_none_or(|after| status_at(r) >= after))
        .filter(|r| q.context_id.as_deref().is_none_or(|c| r.context() == c))
        .collect();
    matching.sort_by(|a, b| {
        status_at(b)
            .cmp(&status_at(a))
            .then_with(|| a.id.cmp(&b.id))
    });
    let size = q.page_size.unwrap_or(LIST_PAGE_DEFAULT);
    let page: Vec<Value> = matching
        .iter()
        .skip(q.offset)
        .take(size)
        .map(|r| task(Dialect::V1, r))
        .collect();
    let next = q.offset + page.len();
    json!({
        "tasks": page,
        "nextPageToken": if next < matching.len() { next.to_string() } else { String::new() },
        "pageSize": size,
        "totalSize": matching.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::intake::wire::{AscError, code};
    use crate::queue::{AckRecord, Provenance};
    use chrono::TimeZone;

    fn row() -> TaskRow {
        let t = Utc.with_ymd_and_hms(2026, 3, 1, 12, 0, 0).unwrap();
        TaskRow {
            id: "q_1".into(),
            title: "Rotate logs".into(),
            owner: Some("sol".into()),
            tagged: vec!["mira".into()],
            created_by: "operator".into(),
            created_at: t,
            deadline: Some(t + chrono::Duration::hours(2)),
            state: WireState::Working,
            ack: Some(AckRecord {
                by: "sol".into(),
                ack: Ack::Owning {
                    eta: Some(t + chrono::Duration::minutes(45)),
                },
                at: t,
            }),
            yielded: vec![],
            blocked_on: None,
            last_report_at: Some(t),
            status_message: None,
            worker_died: false,
            provenance: Provenance {
                reporter: "sol".into(),
                context_id: Some("c1".into()),
            },
            finished_at: None,
            dismissed_at: None,
        }
    }

    #[test]
    fn a_row_is_a_task_of_each_dialect_with_its_asc_refinement() {
        let v1 = task(Dialect::V1, &row());
        assert_eq!(v1["id"], "q_1");
        assert_eq!(v1["contextId"], "c1");
        assert_eq!(v1["status"]["state"], "TASK_STATE_WORKING");
        assert_eq!(v1["status"]["timestamp"], "2026-03-01T12:00:00.000000Z");
        assert!(v1.get("kind").is_none());
        assert_eq!(v1["metadata"][ASC_EXTENSION]["status"]["name"], "RUNNING");
        assert_eq!(v1["metadata"][QUEUE_EXTENSION]["owner"], "sol");
        assert_eq!(v1["metadata"][QUEUE_EXTENSION]["ack"]["shape"], "owning");

        let mut orphan = row();
        orphan.state = WireState::Failed;
        orphan.status_message = Some("[task orphaned — no reply produced]".into());
        orphan.provenance.context_id = None;
        let v03 = task(Dialect::V03, &orphan);
        assert_eq!(v03["kind"], "task");
        assert_eq!(v03["contextId"], "q_1");
        assert_eq!(v03["status"]["state"], "failed");
        assert_eq!(v03["status"]["message"]["kind"], "message");
        assert_eq!(v03["status"]["message"]["role"], "agent");
        assert_eq!(
            v03["status"]["message"]["parts"][0]["text"],
            "[task orphaned — no reply produced]"
        );
        assert_eq!(v03["metadata"][ASC_EXTENSION]["status"]["name"], "TIMEOUT");
        assert_eq!(v03["metadata"][ASC_EXTENSION]["status"]["terminal"], true);

        let inbound = Inbound {
            message_id: "m1".into(),
            context_id: None,
            task_id: None,
            parts: vec![],
        };
        assert_eq!(
            send_result(Dialect::V1, Some(&row()), &inbound)["task"]["id"],
            "q_1"
        );
        assert_eq!(
            send_result(Dialect::V1, None, &inbound)["message"]["role"],
            "ROLE_AGENT"
        );
        assert_eq!(send_result(Dialect::V03, None, &inbound)["kind"], "message");
    }

    #[test]
    fn errors_carry_asc_in_each_dialects_data() {
        let e = RpcError {
            code: code::ALREADY_OWNED,
            message: "sol owns q_1".into(),
            asc: Some(AscError {
                asc: Asc {
                    code: 5006,
                    name: "ABORTED_CONCURRENCY".into(),
                },
                terminal: true,
                facts: vec![("owner", "sol".into())],
            }),
        };
        let v1 = error(&json!(3), Dialect::V1, &e);
        assert_eq!(v1["error"]["code"], code::ALREADY_OWNED);
        assert_eq!(v1["error"]["data"][0]["reason"], "ABORTED_CONCURRENCY");
        assert_eq!(v1["error"]["data"][0]["metadata"]["owner"], "sol");
        assert_eq!(v1["id"], 3);
        let v03 = error(&json!(3), Dialect::V03, &e);
        assert_eq!(v03["error"]["data"]["agent_status"]["code"], 5006);
        let plain = error(
            &Value::Null,
            Dialect::V03,
            &RpcError::new(code::PARSE_ERROR, "x"),
        );
        assert!(plain["error"].get("data").is_none());
        assert_eq!(plain["id"], Value::Null);
    }

    #[test]
    fn list_pages_newest_first_with_a_token_to_the_next_page() {
        let rows: Vec<TaskRow> = (0..5)
            .map(|i| TaskRow {
                id: format!("q_{i}"),
                ..row()
            })
            .collect();
        let q = ListQuery {
            page_size: Some(2),
            ..ListQuery::default()
        };
        let first = list_result(&rows, &q);
        assert_eq!(first["tasks"].as_array().unwrap().len(), 2);
        assert_eq!(first["nextPageToken"], "2");
        assert_eq!(first["totalSize"], 5);
        let last = list_result(
            &rows,
            &ListQuery {
                offset: 4,
                ..q.clone()
            },
        );
        assert_eq!(last["tasks"][0]["id"], "q_4");
        assert_eq!(last["nextPageToken"], "");
        let none = list_result(
            &rows,
            &ListQuery {
                state: Some(WireState::Completed),
                ..q
            },
        );
        assert_eq!(none["totalSize"], 0);
    }

    /// The spec's MUST (issue 21): most recently updated first, whatever order the queue
    /// keeps; `statusTimestampAfter` keeps those updated at or after it.
    #[test]
    fn list_is_sorted_by_status_timestamp_and_filtered_by_it() {
        let t = Utc.with_ymd_and_hms(2026, 3, 1, 12, 0, 0).unwrap();
        let updated = |id: &str, min: i64, reported: bool| TaskRow {
            id: id.into(),
            created_at: t,
            last_report_at: reported.then(|| t + chrono::Duration::minutes(min)),
            ..row()
        };
        // Queue order (by creation) is not update order.
        let rows = vec![
            updated("q_a", 5, true),
            updated("q_b", 30, true),
            updated("q_c", 0, false),
            updated("q_d", 15, true),
        ];
        let ids = |v: &Value| {
            v["tasks"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["id"].as_str().unwrap().to_string())
                .collect::<Vec<_>>()
        };
        let all = list_result(&rows, &ListQuery::default());
        assert_eq!(ids(&all), ["q_b", "q_d", "q_a", "q_c"]);
        let stamps: Vec<&str> = all["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["status"]["timestamp"].as_str().unwrap())
            .collect();
        assert!(stamps.windows(2).all(|w| w[0] >= w[1]), "{stamps:?}");
        let recent = list_result(
            &rows,
            &ListQuery {
                status_after: Some(t + chrono::Duration::minutes(15)),
                ..ListQuery::default()
            },
        );
        assert_eq!(ids(&recent), ["q_b", "q_d"]);
        assert_eq!(recent["totalSize"], 2);
    }
}

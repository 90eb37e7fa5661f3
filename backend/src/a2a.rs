//! A2A on the wire, in each dialect the fleet speaks (reference: a2a-dialects.md).
//!
//! This module only builds requests and reads replies; it does no I/O. What it takes from a
//! reply is a fixed set of structured facts ([`ReplyFacts`], [`CardFacts`]): message text,
//! descriptions and anything else free-form never leave it.

use chrono::{DateTime, TimeZone, Utc};
use serde_json::{Map, Value, json};

use crate::config::Dialect;
// Peer text is data, not layout: the crate's one sanitiser flattens, redacts and cuts it.
use crate::text::clean;

/// A concrete dialect: what `auto` resolves to, one attempt at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Wire {
    V1,
    V03,
    V03Content,
}

impl Wire {
    pub fn as_str(self) -> &'static str {
        match self {
            Wire::V1 => "v1",
            Wire::V03 => "v0.3",
            Wire::V03Content => "v0.3-content",
        }
    }

    /// The dialects to try, in order, for a configured dialect.
    pub fn attempts(dialect: Dialect) -> &'static [Wire] {
        match dialect {
            Dialect::V1 => &[Wire::V1],
            Dialect::V03 => &[Wire::V03],
            Dialect::V03Content => &[Wire::V03Content],
            Dialect::Auto => &[Wire::V1, Wire::V03],
        }
    }

    /// Extra headers the dialect requires: v1.0 clients MUST send `A2A-Version: 1.0`.
    pub fn headers(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Wire::V1 => &[("a2a-version", "1.0")],
            Wire::V03 | Wire::V03Content => &[],
        }
    }

    /// A JSON-RPC `SendMessage` / `message/send` carrying one line of text.
    pub fn send_message(
        self,
        rpc_id: &str,
        message_id: &str,
        context_id: &str,
        text: &str,
    ) -> Value {
        let (method, message) = match self {
            Wire::V1 => (
                "SendMessage",
                json!({"messageId": message_id, "role": "ROLE_USER", "contextId": context_id,
                       "parts": [{"text": text}]}),
            ),
            Wire::V03 => (
                "message/send",
                json!({"kind": "message", "messageId": message_id, "role": "user", "contextId": context_id,
                       "parts": [{"kind": "text", "text": text}]}),
            ),
            Wire::V03Content => (
                "message/send",
                json!({"kind": "message", "messageId": message_id, "role": "user", "contextId": context_id,
                       "content": text}),
            ),
        };
        json!({"jsonrpc": "2.0", "id": rpc_id, "method": method, "params": {"message": message}})
    }

    /// A JSON-RPC `GetTask` / `tasks/get`.
    pub fn get_task(self, rpc_id: &str, task_id: &str) -> Value {
        let method = match self {
            Wire::V1 => "GetTask",
            Wire::V03 | Wire::V03Content => "tasks/get",
        };
        json!({"jsonrpc": "2.0", "id": rpc_id, "method": method, "params": {"id": task_id}})
    }
}

/// The outcome of a JSON-RPC call that got a well-formed answer.
#[derive(Debug, Clone, PartialEq)]
pub enum RpcOutcome {
    Result(Value),
    /// Only the code: the peer's error message is free text and never leaves the collector.
    Error {
        code: i64,
    },
}

impl RpcOutcome {
    pub fn parse(reply: &Value) -> Result<RpcOutcome, String> {
        let obj = reply.as_object().ok_or("JSON-RPC reply is not an object")?;
        if let Some(err) = obj.get("error") {
            let code = err.get("code").and_then(Value::as_i64).unwrap_or(0);
            return Ok(RpcOutcome::Error { code });
        }
        obj.get("result")
            .cloned()
            .map(RpcOutcome::Result)
            .ok_or_else(|| "JSON-RPC reply has neither result nor error".to_string())
    }
}

/// Whether a JSON-RPC error means "wrong dialect", so `auto` should try the next one.
pub fn is_dialect_mismatch(code: i64) -> bool {
    // -32601 method not found, -32600 invalid request, -32602 invalid params,
    // -32009 VersionNotSupported (v1.0).
    matches!(code, -32601 | -32600 | -32602 | -32009)
}

/// The standard name of a JSON-RPC / A2A error code, for reasons shown to the operator.
pub fn error_name(code: i64) -> &'static str {
    match code {
        -32700 => "parse error",
        -32600 => "invalid request",
        -32601 => "method not found",
        -32602 => "invalid params",
        -32603 => "internal error",
        -32001 => "task not found",
        -32002 => "task not cancelable",
        -32004 => "unsupported operation",
        -32005 => "content type not supported",
        -32006 => "invalid agent response",
        -32009 => "version not supported",
        _ => "error",
    }
}

/// What the agent card says that the dashboard shows.
#[derive(Debug, Clone, PartialEq)]
pub struct CardFacts {
    pub skills_count: u32,
    /// From `supportedInterfaces[].protocolVersion` (v1.0, preferred) or `protocolVersion` (v0.3).
    pub protocol_version: Option<String>,
    /// Every protocol version the card names (a hybrid card names both), cleaned: what a
    /// configured dialect is held against ([`contradicting`]).
    pub versions: Vec<String>,
}

/// The dialect to set instead when the card's versions contradict the configured `dialect`
/// (`dialect = "v1"` for a card saying only 0.3.0, whose heartbeat then fails with -32601
/// method not found); `None` when they agree, or `auto`, or the card names no version.
pub fn contradicting(dialect: Dialect, versions: &[String]) -> Option<&'static str> {
    let v1 = versions.iter().any(|v| v.starts_with('1'));
    let v03 = versions.iter().any(|v| v.starts_with("0."));
    match dialect {
        _ if versions.is_empty() => None,
        Dialect::V1 if !v1 => Some("\"v0.3\" (or \"v0.3-content\" for the Pulse plane's variant)"),
        Dialect::V03 | Dialect::V03Content if !v03 => Some("\"v1\""),
        _ => None,
    }
}

/// Reads a v0.3, v1.0 or hybrid agent card.
pub fn card_facts(card: &Value) -> Result<CardFacts, String> {
    let obj = card.as_object().ok_or("agent card is not a JSON object")?;
    // Protobuf JSON omits empty repeated fields, so a v1.0 card with no skills has no key.
    let skills_count = match obj.get("skills") {
        Some(Value::Array(s)) => s.len(),
        Some(_) => return Err("agent card `skills` is not a list".into()),
        None => 0,
    };
    let from_interfaces = obj
        .get("supportedInterfaces")
        .and_then(Value::as_array)
        .and_then(|i| i.iter().find_map(|i| i.get("protocolVersion")?.as_str()));
    let protocol_version = from_interfaces
        .or_else(|| obj.get("protocolVersion")?.as_str())
        .map(|v| clean(v, 16));
    let interfaces = obj.get("supportedInterfaces").and_then(Value::as_array);
    let versions = interfaces
        .into_iter()
        .flatten()
        .filter_map(|i| i.get("protocolVersion")?.as_str())
        .chain(obj.get("protocolVersion").and_then(Value::as_str))
        .map(|v| clean(v, 16))
        .collect();
    Ok(CardFacts {
        skills_count: u32::try_from(skills_count).unwrap_or(u32::MAX),
        protocol_version,
        versions,
    })
}

/// The card's `name` (both dialects), through the sanitiser: `fleetdash init` names the agent
/// after it. Kept apart from [`CardFacts`]: the collector never needs it.
pub fn card_name(card: &Value) -> Option<String> {
    let name = clean(card.get("name")?.as_str()?, 64);
    (!name.trim().is_empty()).then_some(name)
}

/// Structured facts a heartbeat reply may carry in its metadata or in a data part.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReplyFacts {
    pub last_activity_at: Option<DateTime<Utc>>,
    pub in_flight: Option<Vec<String>>,
    pub model: Option<String>,
    pub lane: Option<String>,
    pub window: Option<WindowFacts>,
    /// The task the heartbeat itself became, when the peer answered with a Task.
    pub task: Option<ReplyTask>,
}

/// The heartbeat's own task: its id and the state the reply gave it.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplyTask {
    pub id: String,
    /// A v1.0 `TASK_STATE_*` wire value; `None` when the reply carried none we know.
    pub state: Option<&'static str>,
}

impl ReplyTask {
    /// Not in a terminal state: the peer has yet to finish it.
    pub fn is_open(&self) -> bool {
        !self.state.is_some_and(is_terminal)
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct WindowFacts {
    pub model: Option<String>,
    pub percent: Option<f64>,
    pub status: Option<String>,
    pub resets_at: Option<DateTime<Utc>>,
}

/// The most in-flight ids kept from one reply: a row, not a dump.
pub const MAX_IN_FLIGHT: usize = 64;
/// Task ids are at most 128 characters in the audit log's own rule.
const MAX_TASK_ID: usize = 128;
const MAX_LABEL: usize = 64;

/// Collects [`ReplyFacts`] from a `SendMessage` / `message/send` result in any dialect.
pub fn reply_facts(result: &Value) -> ReplyFacts {
    let mut facts = ReplyFacts::default();
    // v1.0 wraps the payload as {"task": ...} or {"message": ...}; v0.3 returns it bare.
    let payload = result
        .get("task")
        .or_else(|| result.get("message"))
        .unwrap_or(result);
    for source in fact_sources(payload) {
        absorb(&mut facts, source);
    }
    facts.task = reply_task(result, payload);
    facts
}

/// The Task a `SendMessage` / `message/send` answered with: v1.0 wraps it as `{"task": ...}`,
/// v0.3 marks it `"kind": "task"`. A Message reply creates no task.
fn reply_task(result: &Value, payload: &Value) -> Option<ReplyTask> {
    let is_task =
        result.get("task").is_some() || payload.get("kind").and_then(Value::as_str) == Some("task");
    if !is_task {
        return None;
    }
    let id = payload
        .get("id")
        .and_then(Value::as_str)
        .filter(|id| is_task_id(id))?;
    Some(ReplyTask {
        id: id.to_string(),
        state: payload
            .pointer("/status/state")
            .and_then(Value::as_str)
            .and_then(wire_state),
    })
}

/// Metadata objects and data parts, most specific first.
fn fact_sources(payload: &Value) -> Vec<&Map<String, Value>> {
    let mut out = Vec::new();
    visit_message(payload, &mut out);
    if let Some(status_msg) = payload.pointer("/status/message") {
        visit_message(status_msg, &mut out);
    }
    for artifact in payload
        .get("artifacts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        visit_message(artifact, &mut out);
    }
    out
}

fn visit_message<'a>(m: &'a Value, out: &mut Vec<&'a Map<String, Value>>) {
    if let Some(md) = m.get("metadata").and_then(Value::as_object) {
        out.push(md);
    }
    for part in m
        .get("parts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(data) = part.get("data").and_then(Value::as_object) {
            // v1.0 DataPart is {"data": {...}}; some SDK versions nest {"data": {"data": ...}}.
            out.push(data.get("data").and_then(Value::as_object).unwrap_or(data));
        }
    }
}

fn absorb(facts: &mut ReplyFacts, md: &Map<String, Value>) {
    if facts.last_activity_at.is_none() {
        facts.last_activity_at = md.get("last_activity_at").and_then(timestamp);
    }
    if facts.in_flight.is_none() {
        facts.in_flight = md.get("in_flight").and_then(Value::as_array).map(|ids| {
            ids.iter()
                .filter_map(Value::as_str)
                .filter(|id| is_task_id(id))
                .take(MAX_IN_FLIGHT)
                .map(str::to_string)
                .collect()
        });
    }
    if facts.model.is_none() {
        facts.model = md.get("model").and_then(label);
    }
    if facts.lane.is_none() {
        facts.lane = md.get("lane").and_then(label);
    }
    if facts.window.is_none() {
        facts.window = md
            .get("window")
            .and_then(Value::as_object)
            .map(|w| WindowFacts {
                model: w.get("model").and_then(label),
                percent: w
                    .get("percent")
                    .and_then(Value::as_f64)
                    .filter(|p| p.is_finite()),
                status: w.get("status").and_then(label),
                resets_at: w.get("resets_at").and_then(timestamp),
            });
    }
}

/// Task ids are shown, so keep only ids that look like ids: printable, no spaces, bounded.
fn is_task_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= MAX_TASK_ID && id.chars().all(|c| c.is_ascii_graphic())
}

/// A short single-line label (model, lane, status) from a peer.
///
/// Anything longer is not a label and is dropped rather than cut: a cut secret would no
/// longer match the redaction gate's patterns.
fn label(v: &Value) -> Option<String> {
    let s = v.as_str()?.trim();
    let fits = !s.is_empty() && s.chars().count() <= MAX_LABEL && !s.chars().any(char::is_control);
    fits.then(|| s.to_string())
}

/// RFC 3339 text or Unix seconds.
pub fn timestamp(v: &Value) -> Option<DateTime<Utc>> {
    match v {
        Value::String(s) => DateTime::parse_from_rfc3339(s)
            .ok()
            .map(|t| t.with_timezone(&Utc)),
        Value::Number(n) => {
            let secs = n.as_f64()?;
            if !secs.is_finite() {
                return None;
            }
            Utc.timestamp_opt(secs.trunc() as i64, (secs.fract() * 1e9) as u32)
                .single()
        }
        _ => None,
    }
}

/// What a `GetTask` / `tasks/get` result says about the task.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskFacts {
    /// Always a v1.0 `TASK_STATE_*` wire value; `None` when the peer sent none we know.
    pub state: Option<&'static str>,
    /// `status.timestamp`: when the task last changed, by the peer's clock.
    pub updated_at: Option<DateTime<Utc>>,
}

/// Reads a Task in either dialect (v1.0 may wrap it as `{"task": ...}`).
pub fn task_facts(result: &Value) -> TaskFacts {
    let task = result.get("task").unwrap_or(result);
    TaskFacts {
        state: task
            .pointer("/status/state")
            .and_then(Value::as_str)
            .and_then(wire_state),
        updated_at: task.pointer("/status/timestamp").and_then(timestamp),
    }
}

/// Terminal states: a task in one of them will not change again.
pub fn is_terminal(state: &str) -> bool {
    matches!(
        state,
        "TASK_STATE_COMPLETED"
            | "TASK_STATE_FAILED"
            | "TASK_STATE_CANCELED"
            | "TASK_STATE_REJECTED"
    )
}

/// Maps any A2A task state to the v1.0 wire value, the only form that leaves the system.
pub fn wire_state(state: &str) -> Option<&'static str> {
    Some(match state {
        "submitted" | "TASK_STATE_SUBMITTED" => "TASK_STATE_SUBMITTED",
        "working" | "TASK_STATE_WORKING" => "TASK_STATE_WORKING",
        "input-required" | "TASK_STATE_INPUT_REQUIRED" => "TASK_STATE_INPUT_REQUIRED",
        "completed" | "TASK_STATE_COMPLETED" => "TASK_STATE_COMPLETED",
        "canceled" | "TASK_STATE_CANCELED" => "TASK_STATE_CANCELED",
        "failed" | "TASK_STATE_FAILED" => "TASK_STATE_FAILED",
        "rejected" | "TASK_STATE_REJECTED" => "TASK_STATE_REJECTED",
        "auth-required" | "TASK_STATE_AUTH_REQUIRED" => "TASK_STATE_AUTH_REQUIRED",
        _ => return None,
    })
}

/// The JSON-RPC endpoint: the agent's base URL with a trailing slash.
pub fn rpc_url(endpoint: &url::Url) -> url::Url {
    let mut url = endpoint.clone();
    if !url.path().ends_with('/') {
        let path = format!("{}/", url.path());
        url.set_path(&path);
    }
    url
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_dialect_builds_its_own_send_shape() {
        let v1 = Wire::V1.send_message("1", "m", "c", "heartbeat");
        assert_eq!(v1["method"], "SendMessage");
        assert_eq!(
            v1.pointer("/params/message/parts/0/text").unwrap(),
            "heartbeat"
        );
        assert_eq!(v1.pointer("/params/message/role").unwrap(), "ROLE_USER");
        let v03 = Wire::V03.send_message("1", "m", "c", "heartbeat");
        assert_eq!(v03["method"], "message/send");
        assert_eq!(v03.pointer("/params/message/parts/0/kind").unwrap(), "text");
        let content = Wire::V03Content.send_message("1", "m", "c", "heartbeat");
        assert_eq!(
            content.pointer("/params/message/content").unwrap(),
            "heartbeat"
        );
        assert!(content.pointer("/params/message/parts").is_none());
        assert_eq!(Wire::V1.headers(), &[("a2a-version", "1.0")]);
        assert!(Wire::V03.headers().is_empty());
    }

    #[test]
    fn a_dialect_the_card_contradicts_is_named_with_the_one_to_set() {
        let versions = |card: Value| card_facts(&card).unwrap().versions;
        let v03 = versions(json!({"protocolVersion": "0.3.0"}));
        let v1 = versions(json!({"supportedInterfaces": [{"protocolVersion": "1.0"}]}));
        let hybrid = versions(json!({"protocolVersion": "0.3.0",
            "supportedInterfaces": [{"protocolVersion": "1.0"}]}));
        assert_eq!(hybrid, ["1.0", "0.3.0"]);
        assert!(
            contradicting(Dialect::V1, &v03)
                .unwrap()
                .starts_with("\"v0.3\"")
        );
        assert_eq!(contradicting(Dialect::V03, &v1), Some("\"v1\""));
        assert_eq!(contradicting(Dialect::V03Content, &v1), Some("\"v1\""));
        for d in [Dialect::V1, Dialect::V03, Dialect::Auto] {
            assert_eq!(contradicting(d, &hybrid), None, "{d:?}");
            assert_eq!(contradicting(d, &[]), None, "no version named: {d:?}");
        }
        assert_eq!(contradicting(Dialect::Auto, &v03), None);
        assert_eq!(contradicting(Dialect::V1, &v1), None);
    }

    #[test]
    fn cards_of_every_version_give_their_skills_count() {
        let v03 = json!({"protocolVersion": "0.3.0", "skills": [{"id": "a"}, {"id": "b"}]});
        let v1 =
            json!({"supportedInterfaces": [{"protocolVersion": "1.0", "url": "x"}], "skills": []});
        let hybrid = json!({"protocolVersion": "0.3.0",
            "supportedInterfaces": [{"protocolVersion": "1.0"}], "skills": [{"id": "a"}]});
        assert_eq!(card_facts(&v03).unwrap().skills_count, 2);
        assert_eq!(card_facts(&v1).unwrap().skills_count, 0);
        assert_eq!(
            card_facts(&hybrid).unwrap().protocol_version.as_deref(),
            Some("1.0")
        );
        assert_eq!(card_facts(&json!({"name": "x"})).unwrap().skills_count, 0);
        assert!(
            card_facts(&json!({"skills": "many"}))
                .unwrap_err()
                .contains("not a list")
        );
        assert!(card_facts(&json!([1])).is_err());
    }

    #[test]
    fn reply_facts_come_from_metadata_in_both_wrappings() {
        let md = json!({"last_activity_at": "2026-11-30T04:00:00Z", "in_flight": ["t_1", "bad id", "t_2"],
                        "model": "m1", "window": {"percent": 42.5, "status": "ok"}});
        let v1 = json!({"message": {"role": "ROLE_AGENT", "parts": [{"text": "alive"}], "metadata": md}});
        let v03 = json!({"kind": "message", "parts": [{"kind": "text", "text": "alive"}], "metadata": md});
        for reply in [v1, v03] {
            let f = reply_facts(&reply);
            assert_eq!(
                f.in_flight,
                Some(vec!["t_1".to_string(), "t_2".to_string()])
            );
            assert_eq!(f.model.as_deref(), Some("m1"));
            assert_eq!(f.window.as_ref().unwrap().percent, Some(42.5));
            assert_eq!(
                f.last_activity_at.unwrap().to_rfc3339(),
                "2026-11-30T04:00:00+00:00"
            );
        }
    }

    /// The shapes the real SDKs send for a heartbeat left working (tests/peers/WIRE.md,
    /// --never-complete): v1.0 `{"task": ...}` and v0.3 `kind: task`; a Message is no task.
    #[test]
    fn a_heartbeat_answered_with_a_task_yields_its_id_and_state() {
        let v1 = json!({"task": {"id": "62509762-57c6", "contextId": "c1",
            "status": {"state": "TASK_STATE_WORKING", "timestamp": "2026-11-30T05:02:58.771320Z"},
            "metadata": {"lane": "heart"}}});
        let v03 = json!({"contextId": "c1", "id": "a4d65161-a4b4", "kind": "task",
            "status": {"state": "working"}});
        let done = json!({"kind": "task", "id": "t-done", "status": {"state": "completed"}});
        let message = json!({"message": {"role": "ROLE_AGENT", "parts": [{"text": "alive"}]}});
        let task = reply_facts(&v1).task.unwrap();
        assert_eq!(
            (task.id.as_str(), task.state),
            ("62509762-57c6", Some("TASK_STATE_WORKING"))
        );
        assert!(task.is_open());
        assert_eq!(reply_facts(&v1).lane.as_deref(), Some("heart"));
        assert_eq!(reply_facts(&v03).task.unwrap().id, "a4d65161-a4b4");
        assert!(!reply_facts(&done).task.unwrap().is_open());
        assert_eq!(reply_facts(&message).task, None);
    }

    #[test]
    fn a_task_reply_yields_facts_from_its_status_message() {
        let reply = json!({"task": {"id": "t", "status": {"state": "TASK_STATE_WORKING",
            "message": {"metadata": {"lane": "research"}}}}});
        assert_eq!(reply_facts(&reply).lane.as_deref(), Some("research"));
    }

    #[test]
    fn an_overlong_label_is_dropped_not_cut() {
        let long = "m".repeat(MAX_LABEL + 1);
        let reply = json!({"kind": "message", "metadata": {"model": long, "lane": "ok"}});
        let facts = reply_facts(&reply);
        assert_eq!(facts.model, None);
        assert_eq!(facts.lane.as_deref(), Some("ok"));
    }

    #[test]
    fn a_json_rpc_error_keeps_only_its_code() {
        let reply =
            json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "sk-secret"}});
        assert_eq!(
            RpcOutcome::parse(&reply).unwrap(),
            RpcOutcome::Error { code: -32601 }
        );
    }

    #[test]
    fn task_facts_read_both_dialects() {
        let v1 = json!({"id": "t", "status": {"state": "TASK_STATE_WORKING", "timestamp": "2026-11-30T04:00:00Z"}});
        let v03 = json!({"kind": "task", "id": "t", "status": {"state": "completed"}});
        assert_eq!(task_facts(&v1).state, Some("TASK_STATE_WORKING"));
        assert!(task_facts(&v1).updated_at.is_some());
        assert_eq!(task_facts(&v03).state, Some("TASK_STATE_COMPLETED"));
        assert!(is_terminal("TASK_STATE_COMPLETED") && !is_terminal("TASK_STATE_WORKING"));
    }

    #[test]
    fn v03_states_map_to_v1_wire_values() {
        assert_eq!(
            wire_state("input-required"),
            Some("TASK_STATE_INPUT_REQUIRED")
        );
        assert_eq!(wire_state("TASK_STATE_WORKING"), Some("TASK_STATE_WORKING"));
        assert_eq!(wire_state("unknown"), None);
    }

    #[test]
    fn a_peer_cannot_hide_characters_in_what_the_snapshot_shows() {
        let card = json!({"protocolVersion": "0.3\u{200B}\u{202E}.0\u{FEFF}", "skills": []});
        let facts = card_facts(&card).unwrap();
        // Removed, not turned into spaces: what shows is what the peer's text shows (issue 21).
        assert_eq!(facts.protocol_version.as_deref(), Some("0.3.0"));
    }
}

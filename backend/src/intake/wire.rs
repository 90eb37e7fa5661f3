//! The intake's JSON-RPC, in both dialects on one endpoint: a request body and its
//! `A2A-Version` header become a [`Call`] or a JSON-RPC error, and what the queue answered
//! becomes a reply of the caller's dialect, shaped so that the official SDK clients parse it
//! (reference a2a-dialects.md; tests/peers/WIRE.md for what the SDKs really send).
//!
//! - v1.0 (`A2A-Version: 1.0`, any 1.x): `SendMessage`, `GetTask`, `ListTasks`, `CancelTask`;
//!   parts `{"text"}` / `{"data"}`; states `TASK_STATE_*`; SendMessage answers `{"task": ...}`
//!   or `{"message": ...}`.
//! - v0.3 (the header absent or empty): `message/send`, `tasks/get`, `tasks/cancel`; parts with
//!   `kind`; lower-case states; `result` is the Task (`kind: "task"`) or Message itself. The
//!   Pulse plane's quirk, the text under `content` instead of `parts`, is read here too.
//! - A method of the other dialect is -32009 (VersionNotSupported), as the SDK answers a v1.0
//!   method without the header. A batch, a notification, anything but one object: -32600.
//!
//! Pure: no I/O, no clock.

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Map, Value, json};

use super::report::{self, Part};
use crate::queue::{Ack, TaskRow, WireState};
use fleetdash_model::Asc;

/// JSON-RPC and A2A error codes (reference a2a-dialects.md).
pub mod code {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL: i64 = -32603;
    pub const TASK_NOT_FOUND: i64 = -32001;
    pub const TASK_NOT_CANCELABLE: i64 = -32002;
    pub const PUSH_NOT_SUPPORTED: i64 = -32003;
    pub const UNSUPPORTED_OPERATION: i64 = -32004;
    pub const EXTENDED_CARD_NOT_CONFIGURED: i64 = -32007;
    pub const VERSION_NOT_SUPPORTED: i64 = -32009;
    /// fleetdash's own, from the implementation-defined server range (-32000..-32099) at the
    /// end away from A2A's: another agent already owns the task (§4.2). The ASC refinement,
    /// `ABORTED_CONCURRENCY`, rides in the error's data.
    pub const ALREADY_OWNED: i64 = -32099;
}

/// The versioned A2A extension that carries a task's ASC refinement in its metadata (seed 000:
/// "in a versioned A2A extension rather than replace A2A's lifecycle state").
pub const ASC_EXTENSION: &str = "urn:fleetdash:a2a:agent-status:v0.1";
/// The work queue's row facts (owner, ACK, deadline, ...) in a task's metadata.
pub const QUEUE_EXTENSION: &str = "urn:fleetdash:a2a:work-queue:v1";
/// The ASC draft the envelopes follow.
pub const ASC_SPEC_VERSION: &str = "0.1";

/// The dialect of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    V1,
    V03,
}

impl Dialect {
    /// From the `A2A-Version` header: absent or empty is 0.3 (the spec's default); a 1.x is
    /// v1.0; anything else is a version this intake does not speak.
    pub fn from_header(value: Option<&str>) -> Result<Dialect, String> {
        let v = value.map(str::trim).unwrap_or("");
        let major = v.split('.').next().unwrap_or("");
        match (v, major) {
            ("", _) => Ok(Dialect::V03),
            (_, "1") => Ok(Dialect::V1),
            ("0.3" | "0.3.0", _) => Ok(Dialect::V03),
            _ => Err(format!(
                "A2A version {:?} is not supported: send A2A-Version: 1.0, or no header for 0.3",
                crate::text::clean(v, 16)
            )),
        }
    }
}

/// What a request asks.
#[derive(Debug, Clone, PartialEq)]
pub enum Params {
    Send(Inbound),
    Get { id: String },
    List(ListQuery),
    Cancel { id: String },
}

/// A message as the report parser reads it, whatever the dialect.
#[derive(Debug, Clone, PartialEq)]
pub struct Inbound {
    pub message_id: String,
    pub context_id: Option<String>,
    pub task_id: Option<String>,
    pub parts: Vec<Part>,
}

/// `ListTasks` (v1.0 only): filters and a page.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ListQuery {
    pub context_id: Option<String>,
    pub state: Option<WireState>,
    pub page_size: Option<usize>,
    /// Offset into the newest-first list, as the previous page's `nextPageToken` said.
    pub offset: usize,
}

/// The page size when a ListTasks names none, and the most it may ask for (the A2A spec's).
pub const LIST_PAGE_DEFAULT: usize = 50;
pub const LIST_PAGE_MAX: usize = 100;

#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// The JSON-RPC id, echoed in the reply.
    pub id: Value,
    pub dialect: Dialect,
    pub params: Params,
}

/// A JSON-RPC error, with the ASC refinement when there is one.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub asc: Option<AscError>,
}

/// The ASC facts a JSON-RPC error carries in its data.
#[derive(Debug, Clone, PartialEq)]
pub struct AscError {
    pub asc: Asc,
    pub terminal: bool,
    /// Extra facts, e.g. who owns the task.
    pub facts: Vec<(&'static str, String)>,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
            asc: None,
        }
    }

    pub fn invalid_params(message: impl Into<String>) -> RpcError {
        RpcError::new(code::INVALID_PARAMS, message)
    }

    /// A2A's own name for the code, in the v1.0 ErrorInfo.
    fn reason(&self) -> &'static str {
        match self.code {
            code::PARSE_ERROR => "PARSE_ERROR",
            code::INVALID_REQUEST => "INVALID_REQUEST",
            code::METHOD_NOT_FOUND => "METHOD_NOT_FOUND",
            code::INVALID_PARAMS => "INVALID_PARAMS",
            code::TASK_NOT_FOUND => "TASK_NOT_FOUND",
            code::TASK_NOT_CANCELABLE => "TASK_NOT_CANCELABLE",
            code::PUSH_NOT_SUPPORTED => "PUSH_NOTIFICATION_NOT_SUPPORTED",
            code::UNSUPPORTED_OPERATION => "UNSUPPORTED_OPERATION",
            code::EXTENDED_CARD_NOT_CONFIGURED => "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
            code::VERSION_NOT_SUPPORTED => "VERSION_NOT_SUPPORTED",
            code::ALREADY_OWNED => "ALREADY_OWNED",
            _ => "INTERNAL_ERROR",
        }
    }
}

/// A request that could not be read: the reply goes back in `dialect`, with `id` when known.
#[derive(Debug, Clone, PartialEq)]
pub struct Refused {
    pub id: Value,
    pub dialect: Dialect,
    pub error: RpcError,
}

/// Reads one JSON-RPC request of either dialect.
pub fn read_call(version_header: Option<&str>, body: &[u8]) -> Result<Call, Box<Refused>> {
    let header_dialect = Dialect::from_header(version_header);
    let dialect = *header_dialect.as_ref().unwrap_or(&Dialect::V1);
    let refuse = |id: Value, error: RpcError| Box::new(Refused { id, dialect, error });
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        refuse(
            Value::Null,
            RpcError::new(code::PARSE_ERROR, format!("not JSON: {e}")),
        )
    })?;
    let Value::Object(request) = value else {
        let why = if value.is_array() {
            "batches are not accepted: one request per POST"
        } else {
            "a JSON-RPC request is an object"
        };
        return Err(refuse(
            Value::Null,
            RpcError::new(code::INVALID_REQUEST, why),
        ));
    };
    let id = match request.get("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
        Some(_) => {
            return Err(refuse(
                Value::Null,
                RpcError::new(code::INVALID_REQUEST, "id: expected a string or a number"),
            ));
        }
        None => {
            // A notification gets no answer, and a report nobody answers may be retried
            // forever: none is applied.
            return Err(refuse(
                Value::Null,
                RpcError::new(
                    code::INVALID_REQUEST,
                    "id: required (notifications are not accepted: every report is answered)",
                ),
            ));
        }
    };
    if request.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(refuse(
            id,
            RpcError::new(code::INVALID_REQUEST, "jsonrpc: expected \"2.0\""),
        ));
    }
    let Some(method) = request.get("method").and_then(Value::as_str) else {
        return Err(refuse(
            id,
            RpcError::new(code::INVALID_REQUEST, "method: expected a string"),
        ));
    };
    let dialect = match header_dialect {
        Ok(d) => d,
        Err(why) => {
            return Err(refuse(id, RpcError::new(code::VERSION_NOT_SUPPORTED, why)));
        }
    };
    let refuse = |error: RpcError| {
        Box::new(Refused {
            id: id.clone(),
            dialect,
            error,
        })
    };
    let (method_dialect, op) = method_of(method).ok_or_else(|| {
        refuse(RpcError::new(
            code::METHOD_NOT_FOUND,
            "method not found: this intake answers SendMessage, GetTask, ListTasks, CancelTask \
             (A2A-Version: 1.0) and message/send, tasks/get, tasks/cancel (0.3)",
        ))
    })?;
    if method_dialect != dialect {
        let why = match dialect {
            Dialect::V03 => "a v1.0 method needs the header A2A-Version: 1.0",
            Dialect::V1 => "a v0.3 method is sent without the A2A-Version: 1.0 header",
        };
        return Err(refuse(RpcError::new(code::VERSION_NOT_SUPPORTED, why)));
    }
    let params = match request.get("params") {
        Some(Value::Object(p)) => p,
        None if op == Op::List => &Map::new(),
        _ => {
            return Err(refuse(RpcError::invalid_params(
                "params: expected an object",
            )));
        }
    };
    let params = match op {
        Op::Send => Params::Send(inbound(params, dialect).map_err(&refuse)?),
        Op::Get => Params::Get {
            id: param_id(params).map_err(&refuse)?,
        },
        Op::Cancel => Params::Cancel {
            id: param_id(params).map_err(&refuse)?,
        },
        Op::List => Params::List(list_query(params).map_err(&refuse)?),
        Op::Unsupported(code, why) => return Err(refuse(RpcError::new(code, why))),
    };
    Ok(Call {
        id,
        dialect,
        params,
    })
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Send,
    Get,
    List,
    Cancel,
    Unsupported(i64, &'static str),
}

fn method_of(method: &str) -> Option<(Dialect, Op)> {
    const STREAMING: Op = Op::Unsupported(
        code::UNSUPPORTED_OPERATION,
        "streaming is not offered (the card says streaming: false): send the report with SendMessage",
    );
    const PUSH: Op = Op::Unsupported(
        code::PUSH_NOT_SUPPORTED,
        "push notifications are not offered",
    );
    const EXTENDED: Op =
        Op::Unsupported(code::EXTENDED_CARD_NOT_CONFIGURED, "no extended agent card");
    Some(match method {
        "SendMessage" => (Dialect::V1, Op::Send),
        "GetTask" => (Dialect::V1, Op::Get),
        "ListTasks" => (Dialect::V1, Op::List),
        "CancelTask" => (Dialect::V1, Op::Cancel),
        "SendStreamingMessage" | "SubscribeToTask" => (Dialect::V1, STREAMING),
        "CreateTaskPushNotificationConfig"
        | "GetTaskPushNotificationConfig"
        | "ListTaskPushNotificationConfigs"
        | "DeleteTaskPushNotificationConfig" => (Dialect::V1, PUSH),
        "GetExtendedAgentCard" => (Dialect::V1, EXTENDED),
        "message/send" => (Dialect::V03, Op::Send),
        "tasks/get" => (Dialect::V03, Op::Get),
        "tasks/cancel" => (Dialect::V03, Op::Cancel),
        "message/stream" | "tasks/resubscribe" => (Dialect::V03, STREAMING),
        "tasks/pushNotificationConfig/set"
        | "tasks/pushNotificationConfig/get"
        | "tasks/pushNotificationConfig/list"
        | "tasks/pushNotificationConfig/delete" => (Dialect::V03, PUSH),
        "agent/getAuthenticatedExtendedCard" => (Dialect::V03, EXTENDED),
        _ => return None,
    })
}

fn optional_id(obj: &Map<String, Value>, key: &str) -> Result<Option<String>, RpcError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) => report::id(s, key)
            .map(Some)
            .map_err(RpcError::invalid_params),
        Some(_) => Err(RpcError::invalid_params(format!(
            "{key}: expected a string"
        ))),
    }
}

fn param_id(params: &Map<String, Value>) -> Result<String, RpcError> {
    optional_id(params, "id")?.ok_or_else(|| RpcError::invalid_params("id: required"))
}

fn inbound(params: &Map<String, Value>, dialect: Dialect) -> Result<Inbound, RpcError> {
    let Some(Value::Object(message)) = params.get("message") else {
        return Err(RpcError::invalid_params("message: expected an object"));
    };
    let message_id = optional_id(message, "messageId")?
        .ok_or_else(|| RpcError::invalid_params("messageId: required"))?;
    let parts = match (message.get("parts"), message.get("content"), dialect) {
        (Some(Value::Array(parts)), None, _) => parts
            .iter()
            .map(|p| part(p, dialect))
            .collect::<Result<Vec<_>, _>>()?,
        (Some(_), None, _) => return Err(RpcError::invalid_params("parts: expected a list")),
        // The Pulse plane's v0.3: the text under `content`, a string or a list of parts.
        (None, Some(Value::String(text)), Dialect::V03) => vec![Part::Text(text.clone())],
        (None, Some(Value::Array(parts)), Dialect::V03) => parts
            .iter()
            .map(|p| part(p, dialect))
            .collect::<Result<Vec<_>, _>>()?,
        (None, Some(_), Dialect::V03) => {
            return Err(RpcError::invalid_params(
                "content: expected text or a list of parts",
            ));
        }
        (Some(_), Some(_), _) => {
            return Err(RpcError::invalid_params(
                "message: give parts or content, not both",
            ));
        }
        (None, Some(_), Dialect::V1) => {
            return Err(RpcError::invalid_params(
                "parts: required (content instead of parts is the Pulse plane's v0.3 only)",
            ));
        }
        (None, None, _) => return Err(RpcError::invalid_params("parts: required")),
    };
    Ok(Inbound {
        message_id,
        context_id: optional_id(message, "contextId")?,
        task_id: optional_id(message, "taskId")?,
        parts,
    })
}

fn part(p: &Value, dialect: Dialect) -> Result<Part, RpcError> {
    let Value::Object(p) = p else {
        return Err(RpcError::invalid_params("parts: each part is an object"));
    };
    // v0.3 names the kind; v1.0 has one of text, data, url, raw. The Pulse plane sends
    // v0.3 parts without a kind sometimes: the fields decide then.
    let kind = p.get("kind").and_then(Value::as_str);
    if dialect == Dialect::V03
        && let Some(kind) = kind
        && !matches!(kind, "text" | "data" | "file")
    {
        return Err(RpcError::invalid_params(
            "parts: kind is text, data or file",
        ));
    }
    Ok(match (p.get("text"), p.get("data")) {
        (Some(Value::String(t)), None) => Part::Text(t.clone()),
        (None, Some(d)) => Part::Data(d.clone()),
        (Some(_), Some(_)) => {
            return Err(RpcError::invalid_params(
                "parts: a part is text or data, not both",
            ));
        }
        (Some(_), None) => return Err(RpcError::invalid_params("parts: text is a string")),
        (None, None) => Part::Other,
    })
}

fn list_query(params: &Map<String, Value>) -> Result<ListQuery, RpcError> {
    let state = match params.get("status") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s == "TASK_STATE_UNSPECIFIED" || s.is_empty() => None,
        Some(Value::String(s)) => Some(
            WireState::ALL
                .into_iter()
                .find(|w| w.as_str() == s)
                .ok_or_else(|| RpcError::invalid_params("status: expected a TASK_STATE_* value"))?,
        ),
        Some(_) => return Err(RpcError::invalid_params("status: expected a string")),
    };
    let page_size = match params.get("pageSize") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_u64() {
            Some(n) if (1..=LIST_PAGE_MAX as u64).contains(&n) => Some(n as usize),
            _ => {
                return Err(RpcError::invalid_params(format!(
                    "pageSize: expected 1 to {LIST_PAGE_MAX}"
                )));
            }
        },
    };
    let offset = match params.get("pageToken") {
        None | Some(Value::Null) => 0,
        Some(Value::String(s)) if s.is_empty() => 0,
        Some(Value::String(s)) => s
            .parse()
            .map_err(|_| RpcError::invalid_params("pageToken: not one this intake gave"))?,
        Some(_) => return Err(RpcError::invalid_params("pageToken: expected a string")),
    };
    Ok(ListQuery {
        context_id: optional_id(params, "contextId")?,
        state,
        page_size,
        offset,
    })
}

// ---------------------------------------------------------------------------------------------
// Replies.

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
    // v0.3 requires a contextId; a row that never saw one is its own context.
    let context_id = row.provenance.context_id.as_deref().unwrap_or(&row.id);
    let at = row.last_report_at.unwrap_or(row.created_at);
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

/// ListTasks' result (v1.0): one page of `rows` (newest first) after the query's filters.
pub fn list_result(rows: &[TaskRow], q: &ListQuery) -> Value {
    let matching: Vec<&TaskRow> = rows
        .iter()
        .filter(|r| q.state.is_none_or(|s| r.state == s))
        .filter(|r| {
            q.context_id
                .as_deref()
                .is_none_or(|c| r.provenance.context_id.as_deref() == Some(c))
        })
        .collect();
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
    use crate::queue::{AckRecord, Provenance};
    use chrono::TimeZone;

    fn call(header: Option<&str>, body: &str) -> Result<Call, Box<Refused>> {
        read_call(header, body.as_bytes())
    }

    fn code_of(r: Result<Call, Box<Refused>>) -> i64 {
        r.unwrap_err().error.code
    }

    const V1_SEND: &str = r#"{"jsonrpc":"2.0","id":"r1","method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","taskId":"q_1","contextId":"c1","parts":[{"text":"ACK owning"}]}}}"#;
    const V03_SEND: &str = r#"{"jsonrpc":"2.0","id":7,"method":"message/send","params":{"message":{"kind":"message","messageId":"m2","role":"user","parts":[{"kind":"text","text":"HEARTBEAT"},{"kind":"data","data":{"report":"heartbeat"}}]}}}"#;
    const PULSE_SEND: &str = r#"{"jsonrpc":"2.0","id":"p","method":"message/send","params":{"message":{"kind":"message","messageId":"m3","role":"user","contextId":"c9","content":"DONE q_4"}}}"#;

    #[test]
    fn both_dialects_and_the_pulse_quirk_read_on_one_endpoint() {
        let c = call(Some("1.0"), V1_SEND).unwrap();
        assert_eq!(c.dialect, Dialect::V1);
        assert_eq!(c.id, json!("r1"));
        assert_eq!(
            c.params,
            Params::Send(Inbound {
                message_id: "m1".into(),
                context_id: Some("c1".into()),
                task_id: Some("q_1".into()),
                parts: vec![Part::Text("ACK owning".into())],
            })
        );
        for header in [None, Some(""), Some("  ")] {
            let c = call(header, V03_SEND).unwrap();
            assert_eq!(c.dialect, Dialect::V03);
            assert_eq!(c.id, json!(7));
            let Params::Send(m) = c.params else { panic!() };
            assert_eq!(m.parts[1], Part::Data(json!({"report": "heartbeat"})));
        }
        let Params::Send(m) = call(None, PULSE_SEND).unwrap().params else {
            panic!()
        };
        assert_eq!(m.parts, vec![Part::Text("DONE q_4".into())]);
        assert_eq!(m.context_id.as_deref(), Some("c9"));
        assert_eq!(
            call(
                Some("1.1"),
                r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"q_1"}}"#
            )
            .unwrap()
            .params,
            Params::Get { id: "q_1".into() }
        );
        assert_eq!(
            call(Some("1.0"), r#"{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"status":"TASK_STATE_WORKING","pageSize":5,"pageToken":"10"}}"#)
                .unwrap()
                .params,
            Params::List(ListQuery {
                context_id: None,
                state: Some(WireState::Working),
                page_size: Some(5),
                offset: 10
            })
        );
        assert_eq!(
            call(
                None,
                r#"{"jsonrpc":"2.0","id":1,"method":"tasks/cancel","params":{"id":"q_1"}}"#
            )
            .unwrap()
            .params,
            Params::Cancel { id: "q_1".into() }
        );
    }

    #[test]
    fn wrong_dialects_and_bad_envelopes_get_the_spec_codes() {
        // A v1.0 method without the header, as the SDK answers it; and the other way round.
        assert_eq!(
            code_of(call(None, &V1_SEND.replace("\"r1\"", "1"))),
            code::VERSION_NOT_SUPPORTED
        );
        assert_eq!(
            code_of(call(Some("1.0"), V03_SEND)),
            code::VERSION_NOT_SUPPORTED
        );
        assert_eq!(
            code_of(call(Some("2.0"), V1_SEND)),
            code::VERSION_NOT_SUPPORTED
        );
        assert_eq!(
            code_of(call(
                Some("1.0"),
                V1_SEND.replace("\"parts\"", "\"content\"").as_str()
            )),
            code::INVALID_PARAMS
        );
        assert_eq!(code_of(call(None, "{not json")), code::PARSE_ERROR);
        assert_eq!(
            code_of(call(None, &format!("[{V03_SEND}]"))),
            code::INVALID_REQUEST
        );
        assert_eq!(code_of(call(None, "42")), code::INVALID_REQUEST);
        assert_eq!(
            code_of(call(
                None,
                r#"{"jsonrpc":"2.0","method":"message/send","params":{}}"#
            )),
            code::INVALID_REQUEST,
            "a notification"
        );
        assert_eq!(
            code_of(call(
                None,
                r#"{"jsonrpc":"1.0","id":1,"method":"tasks/get","params":{"id":"x"}}"#
            )),
            code::INVALID_REQUEST
        );
        assert_eq!(
            code_of(call(
                None,
                r#"{"jsonrpc":"2.0","id":1,"method":"tasks/list","params":{}}"#
            )),
            code::METHOD_NOT_FOUND
        );
        assert_eq!(
            code_of(call(
                None,
                r#"{"jsonrpc":"2.0","id":1,"method":"message/stream","params":{}}"#
            )),
            code::UNSUPPORTED_OPERATION
        );
        assert_eq!(
            code_of(call(
                Some("1.0"),
                r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{}}"#
            )),
            code::INVALID_PARAMS
        );
        assert_eq!(
            code_of(call(
                Some("1.0"),
                r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"Bearer abcdefghijklmnop"}}"#
            )),
            code::INVALID_PARAMS
        );
        let no_message_id = V1_SEND.replace("\"messageId\":\"m1\",", "");
        let e = call(Some("1.0"), &no_message_id).unwrap_err();
        assert_eq!(e.error.code, code::INVALID_PARAMS);
        assert!(e.error.message.contains("messageId"));
        assert_eq!(e.id, json!("r1"), "the id is echoed once read");
    }

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
}

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
//!   method without the header. A batch, anything but one object: -32600. A notification (no
//!   `id`) is applied never and answered never: HTTP 204, no body.
//!
//! Pure: no I/O, no clock.
//!
//! - [`request`]: a request body and its header read into a [`Call`], or refused.
//! - [`reply`]: results, errors and queue rows as the caller's dialect shapes them.
//!
//! This module holds what both sides share: the error codes, the extensions' names, the
//! dialect and the call's parts.

mod reply;
mod request;

pub use reply::{
    answer_result, asc_status, error, list_result, ok, refinement, send_result, task, timestamp,
};
pub use request::read_call;

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::report::Part;
use crate::queue::WireState;
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
    pub const CONTENT_TYPE_NOT_SUPPORTED: i64 = -32005;
    /// v0.3's AuthenticatedExtendedCardNotConfigured.
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
    /// Only tasks whose status timestamp is at or after this (`statusTimestampAfter`).
    pub status_after: Option<DateTime<Utc>>,
    /// The most history messages per task (`historyLength`); this intake's tasks carry none,
    /// so any valid value is honoured by sending none.
    pub history_length: Option<u32>,
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
    /// No id: applied, never answered (JSON-RPC 2.0 §4.1).
    pub notification: bool,
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

    /// Invalid params that no retry will mend (a report that cannot be read, a time past the
    /// horizon), with the ASC envelope saying so: `INVALID_REQUEST`, terminal.
    pub fn invalid_report(message: impl Into<String>) -> RpcError {
        RpcError {
            asc: Some(AscError {
                asc: crate::problem::INVALID_REQUEST,
                terminal: true,
                facts: Vec::new(),
            }),
            ..RpcError::invalid_params(message)
        }
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
            code::CONTENT_TYPE_NOT_SUPPORTED => "CONTENT_TYPE_NOT_SUPPORTED",
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
    /// A request without an `id`: JSON-RPC 2.0 says a server never replies to one, not even
    /// with an error, so the intake answers HTTP 204 with no body.
    pub notification: bool,
}

//! Reading one JSON-RPC request of either dialect: the envelope (JSON, one object, an id,
//! `jsonrpc: "2.0"`), the method against the header's dialect, then its params: a message's
//! parts (and the Pulse plane's `content`), a task id, a ListTasks query.

use serde_json::{Map, Value};

use super::{Call, Dialect, Inbound, LIST_PAGE_MAX, ListQuery, Params, Refused, RpcError, code};
use crate::intake::report::{self, Part};
use crate::queue::WireState;

/// Reads one JSON-RPC request of either dialect.
/// The id of an invalid Request, when it has a usable one; else null (JSON-RPC 2.0 §5: null
/// when it could not be detected).
fn valid_id(id: Option<&Value>) -> Value {
    match id {
        Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
        _ => Value::Null,
    }
}

pub fn read_call(version_header: Option<&str>, body: &[u8]) -> Result<Call, Box<Refused>> {
    let header_dialect = Dialect::from_header(version_header);
    let dialect = *header_dialect.as_ref().unwrap_or(&Dialect::V1);
    let refuse = |id: Value, error: RpcError| {
        Box::new(Refused {
            id,
            dialect,
            error,
            notification: false,
        })
    };
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
    // A Request object first (JSON-RPC 2.0 §4): one that is not ("jsonrpc" not "2.0", no
    // method) is an Invalid Request answered with a null id, whether or not it has an id;
    // only a valid Request without an id is a notification.
    if request.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(refuse(
            valid_id(request.get("id")),
            RpcError::new(code::INVALID_REQUEST, "jsonrpc: expected \"2.0\""),
        ));
    }
    let Some(method) = request.get("method").and_then(Value::as_str) else {
        return Err(refuse(
            valid_id(request.get("id")),
            RpcError::new(code::INVALID_REQUEST, "method: expected a string"),
        ));
    };
    // A notification (no id) is read and applied like any request (JSON-RPC 2.0 §4.1), but
    // never answered, not even with an error.
    let (id, notification) = match request.get("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) => (id.clone(), false),
        Some(_) => {
            return Err(refuse(
                Value::Null,
                RpcError::new(code::INVALID_REQUEST, "id: expected a string or a number"),
            ));
        }
        None => (Value::Null, true),
    };
    let dialect = match header_dialect {
        Ok(d) => d,
        Err(why) => {
            return Err(Box::new(Refused {
                notification,
                ..*refuse(id, RpcError::new(code::VERSION_NOT_SUPPORTED, why))
            }));
        }
    };
    let refuse = |error: RpcError| {
        Box::new(Refused {
            id: id.clone(),
            dialect,
            error,
            notification,
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
            Dialect::V1 => {
                "a v0.3 method (message/send, tasks/get, tasks/cancel) is answered \
                            without the A2A-Version: 1.0 header; with it, use SendMessage, GetTask, \
                            ListTasks, CancelTask"
            }
        };
        return Err(refuse(RpcError::new(code::VERSION_NOT_SUPPORTED, why)));
    }
    // An operation not offered is said whatever its params (the spec's own GetExtendedAgentCard
    // example has none).
    if let Op::Unsupported(code, why) = op {
        return Err(refuse(RpcError::new(code, why)));
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
        Op::Unsupported(..) => unreachable!("answered above"),
    };
    Ok(Call {
        id,
        dialect,
        params,
        notification,
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
    // A2A §3.3.4: with capabilities.extendedAgentCard absent, UnsupportedOperation (-32007 is
    // for a card that declares one and has none configured).
    const EXTENDED: Op = Op::Unsupported(
        code::UNSUPPORTED_OPERATION,
        "no extended agent card (the card does not declare capabilities.extendedAgentCard)",
    );
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
        // v0.3 has no capability for it: its own "not configured" error.
        "agent/getAuthenticatedExtendedCard" => (
            Dialect::V03,
            Op::Unsupported(
                code::EXTENDED_CARD_NOT_CONFIGURED,
                "no authenticated extended card",
            ),
        ),
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
    // v1.0 says a part's media type in `mediaType`; v0.3 a file's in `file.mimeType`.
    let media = match p
        .get("mediaType")
        .or_else(|| p.get("file").and_then(|f| f.get("mimeType")))
    {
        None | Some(Value::Null) => None,
        Some(Value::String(m)) => Some(m.as_str()),
        Some(_) => return Err(RpcError::invalid_params("parts: mediaType is a string")),
    };
    let unsupported = |what: String| {
        RpcError::new(
            code::CONTENT_TYPE_NOT_SUPPORTED,
            format!("parts: {what} is not supported; a report is text (text/*) or JSON data"),
        )
    };
    // The essence of a media type: "text/plain; charset=utf-8" is text/plain.
    let essence = media.map(|m| {
        m.split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase()
    });
    Ok(match (p.get("text"), p.get("data")) {
        (Some(Value::String(_)), None)
            if essence.as_deref().is_some_and(|m| !m.starts_with("text/")) =>
        {
            return Err(unsupported(format!(
                "a text part of {}",
                media.unwrap_or_default()
            )));
        }
        (None, Some(_))
            if essence
                .as_deref()
                .is_some_and(|m| m != "application/json" && !m.ends_with("+json")) =>
        {
            return Err(unsupported(format!(
                "a data part of {}",
                media.unwrap_or_default()
            )));
        }
        (Some(Value::String(t)), None) => Part::Text(t.clone()),
        (None, Some(d)) => Part::Data(d.clone()),
        (Some(_), Some(_)) => {
            return Err(RpcError::invalid_params(
                "parts: a part is text or data, not both",
            ));
        }
        (Some(_), None) => return Err(RpcError::invalid_params("parts: text is a string")),
        // A file, a URL or raw bytes: nothing a report can be.
        (None, None) => {
            return Err(unsupported(match media {
                Some(m) => format!("a part of {m}"),
                None => "a part that is neither text nor data (a file, a URL, raw bytes)".into(),
            }));
        }
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
    let status_after = match params.get("statusTimestampAfter") {
        None | Some(Value::Null) => None,
        Some(Value::String(t)) => Some(
            chrono::DateTime::parse_from_rfc3339(t)
                .map_err(|_| {
                    RpcError::invalid_params(
                        "statusTimestampAfter: expected an RFC 3339 time, e.g. 2026-11-30T12:00:00Z",
                    )
                })?
                .with_timezone(&chrono::Utc),
        ),
        Some(_) => {
            return Err(RpcError::invalid_params(
                "statusTimestampAfter: expected an RFC 3339 time string",
            ));
        }
    };
    let history_length = match params.get("historyLength") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_u64() {
            Some(n) if n <= i32::MAX as u64 => Some(n as u32),
            _ => {
                return Err(RpcError::invalid_params(
                    "historyLength: expected a whole number, 0 or more",
                ));
            }
        },
    };
    match params.get("includeArtifacts") {
        None | Some(Value::Null) | Some(Value::Bool(_)) => {}
        Some(_) => {
            return Err(RpcError::invalid_params(
                "includeArtifacts: expected true or false",
            ));
        }
    }
    Ok(ListQuery {
        context_id: optional_id(params, "contextId")?,
        state,
        status_after,
        history_length,
        page_size,
        offset,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
                offset: 10,
                ..ListQuery::default()
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
        let notification = call(
            None,
            r#"{"jsonrpc":"2.0","method":"message/send","params":{}}"#,
        )
        .unwrap_err();
        assert!(
            notification.notification,
            "a notification, refused unanswered"
        );
        let notification = call(None, &V03_SEND.replace("\"id\":7,", "")).unwrap();
        assert!(
            notification.notification,
            "a notification, read to be applied"
        );
        // Issue 21 (the TCK's invalid_request0/1): no id, but not a Request object either: an
        // Invalid Request, answered with a null id, never taken for a notification.
        for invalid in [
            r#"{"jsonrpc":"aaa","method":"SendMessage","params":{}}"#,
            r#"{"jsonrpc":"2.0","params":{}}"#,
            r#"{"jsonrpc":"2.0","method":1,"params":"bar"}"#,
        ] {
            let refused = call(Some("1.0"), invalid).unwrap_err();
            assert!(!refused.notification, "{invalid}");
            assert_eq!(refused.error.code, code::INVALID_REQUEST, "{invalid}");
            assert_eq!(refused.id, Value::Null, "{invalid}");
        }
        assert!(
            !call(None, "{not json").unwrap_err().notification,
            "only a request without an id"
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

    /// ListTasks' other parameters (issue 21): honoured when valid, -32602 otherwise.
    #[test]
    fn list_tasks_reads_its_time_filter_and_refuses_bad_values() {
        let list = |params: &str| {
            call(
                Some("1.0"),
                &format!(r#"{{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{params}}}"#),
            )
        };
        match list(r#"{"statusTimestampAfter":"2026-03-01T12:15:00Z","historyLength":0,"includeArtifacts":false}"#)
            .unwrap()
            .params
        {
            Params::List(q) => {
                assert_eq!(
                    q.status_after.map(|t| t.to_rfc3339()),
                    Some("2026-03-01T12:15:00+00:00".into())
                );
                assert_eq!(q.history_length, Some(0));
            }
            other => panic!("{other:?}"),
        }
        for bad in [
            r#"{"historyLength":-1}"#,
            r#"{"historyLength":1.5}"#,
            r#"{"historyLength":"3"}"#,
            r#"{"statusTimestampAfter":"yesterday"}"#,
            r#"{"statusTimestampAfter":1700000000}"#,
            r#"{"includeArtifacts":"yes"}"#,
        ] {
            assert_eq!(code_of(list(bad)), code::INVALID_PARAMS, "{bad}");
        }
    }

    /// A part this intake cannot read as a report is -32005 ContentTypeNotSupported (issue 21),
    /// not -32602; text in text/* and data in JSON are read.
    #[test]
    fn an_unsupported_media_type_is_content_type_not_supported() {
        let send = |part: &str| {
            call(
                Some("1.0"),
                &format!(
                    r#"{{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{{"message":{{"messageId":"m","role":"ROLE_USER","parts":[{part}]}}}}}}"#
                ),
            )
        };
        for ok in [
            r#"{"text":"ACK owning"}"#,
            r#"{"text":"ACK owning","mediaType":"text/plain; charset=utf-8"}"#,
            r#"{"text":"ACK owning","mediaType":"text/markdown"}"#,
            r#"{"data":{"report":"heartbeat"},"mediaType":"application/json"}"#,
            r#"{"data":{"report":"heartbeat"},"mediaType":"application/vnd.fleet+json"}"#,
        ] {
            assert!(send(ok).is_ok(), "{ok}");
        }
        for bad in [
            r#"{"text":"ACK owning","mediaType":"image/png"}"#,
            r#"{"data":{"report":"heartbeat"},"mediaType":"application/xml"}"#,
            r#"{"url":"https://example.invalid/a.pdf","mediaType":"application/pdf"}"#,
            r#"{"raw":"AAAA"}"#,
        ] {
            let e = send(bad).unwrap_err().error;
            assert_eq!(e.code, code::CONTENT_TYPE_NOT_SUPPORTED, "{bad}");
            assert!(e.message.contains("not supported"), "{}", e.message);
        }
        let v03_file = call(
            None,
            r#"{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"file","file":{"mimeType":"application/pdf","uri":"https://example.invalid/a.pdf"}}]}}}"#,
        );
        assert_eq!(code_of(v03_file), code::CONTENT_TYPE_NOT_SUPPORTED);
    }
}

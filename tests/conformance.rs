//! The report intake against the A2A 1.0 specification's mandatory JSON-RPC requirements that
//! apply to a report intake, one test each: the request, and the answer the spec requires.
//! Written from the spec (a2aproject/A2A `docs/specification.md`, commit 16ba5269; "§" below)
//! and JSON-RPC 2.0 ("JSON-RPC §"), not from our code: the official kit (a2aproject/a2a-tck)
//! is no package and CI has no network, so it is run by hand (README, "A2A conformance").
//!
//! Not here, by design (a report intake, not a chat agent): streaming, push notifications and
//! the extended card are declared unsupported and answered with their errors (tested below); a
//! free-text greeting is not a report and is refused with -32602 and what a report looks like;
//! no message history is kept (§3.7: clients must not rely on it).

use crate::support::hub;

use hub::{Answer, Hub, post};
use serde_json::{Value, json};

/// A v1.0 JSON-RPC call as `who` (an agent, or "operator"): HTTP 200, a JSON body (§9.1),
/// `jsonrpc` "2.0" and exactly one of result and error (JSON-RPC §5); the reply.
#[track_caller]
fn call(hub: &Hub, who: &str, body: &Value) -> Value {
    raw(hub, who, &body.to_string())
}

#[track_caller]
fn raw(hub: &Hub, who: &str, body: &str) -> Value {
    let a = post(hub, Some(who), Some("1.0"), body);
    well_formed(&a)
}

#[track_caller]
fn well_formed(a: &Answer) -> Value {
    assert_eq!(a.status, 200, "{}", a.body);
    assert!(
        a.header("content-type")
            .is_some_and(|c| c.starts_with("application/json")),
        "§9.1: responses are application/json: {:?}",
        a.header("content-type")
    );
    let reply = a.json();
    assert_eq!(reply["jsonrpc"], "2.0", "{reply}");
    assert!(
        reply.get("result").is_some() != reply.get("error").is_some(),
        "JSON-RPC §5: exactly one of result and error: {reply}"
    );
    reply
}

fn request(id: Value, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// The error's code, after checking the error object's shape: an integer code, a message,
/// and (§9.5) every detail in `data` an object with its `@type`.
#[track_caller]
fn code_of(reply: &Value) -> i64 {
    let e = &reply["error"];
    assert!(
        e["message"].is_string(),
        "JSON-RPC §5.1: a message: {reply}"
    );
    if let Some(data) = e.get("data") {
        let details = data.as_array().expect("§9.5: data is an array");
        assert!(
            details.iter().all(|d| d["@type"].is_string()),
            "§9.5: every detail has its @type: {reply}"
        );
    }
    e["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("an integer code: {reply}"))
}

fn send(id: &str, message: Value) -> Value {
    let mut m = message;
    m["role"] = "ROLE_USER".into();
    m["messageId"] = id.into();
    request(json!(id), "SendMessage", json!({"message": m}))
}

/// An assignment from the operator (as `fleetdash task assign`), ACKed by its owner so it is
/// working; its id.
fn working_task(hub: &Hub, title: &str, owner: &str) -> String {
    let id = hub.assign(title, Some(owner), &[]);
    let ack = send(
        &format!("ack-{id}"),
        json!({"taskId": id, "parts": [{"text": "ACK owning ETA 30m"}]}),
    );
    let reply = call(hub, owner, &ack);
    assert!(reply.get("result").is_some(), "{reply}");
    id
}

/// JSON-RPC §4.2, §5.1: a body that is not JSON is -32700, with a null id.
#[test]
fn invalid_json_is_a_parse_error_with_a_null_id() {
    let hub = Hub::start();
    let reply = raw(&hub, "sol", r#"{"jsonrpc": "2.0", "id": 1, "method": "#);
    assert_eq!(code_of(&reply), -32700);
    assert_eq!(reply["id"], Value::Null);
}

/// JSON-RPC §4, §5.1: what is not a Request object is -32600; the id is null when it could
/// not be read, and a missing id does not make an invalid object a notification.
#[test]
fn an_invalid_request_object_is_32600() {
    let hub = Hub::start();
    for (body, id) in [
        ("42", Value::Null),
        (r#""SendMessage""#, Value::Null),
        (
            r#"{"jsonrpc": "1.0", "id": 7, "method": "GetTask", "params": {"id": "x"}}"#,
            json!(7),
        ),
        (r#"{"jsonrpc": "2.0", "id": 8, "params": {}}"#, json!(8)),
        (
            r#"{"jsonrpc": "2.0", "id": 9, "method": 42, "params": {}}"#,
            json!(9),
        ),
        (
            r#"{"jsonrpc": "2.0", "id": {"no": 1}, "method": "GetTask", "params": {"id": "x"}}"#,
            Value::Null,
        ),
        (
            r#"{"jsonrpc": "aaa", "method": "SendMessage", "params": {}}"#,
            Value::Null,
        ),
        (r#"{"jsonrpc": "2.0", "params": {}}"#, Value::Null),
    ] {
        let reply = raw(&hub, "sol", body);
        assert_eq!(code_of(&reply), -32600, "{body}: {reply}");
        assert_eq!(reply["id"], id, "{body}: {reply}");
    }
}

/// JSON-RPC §5.1: an unknown method is -32601.
#[test]
fn an_unknown_method_is_32601() {
    let hub = Hub::start();
    let reply = call(
        &hub,
        "sol",
        &request(json!(1), "tasks/unknownMethod", json!({})),
    );
    assert_eq!(code_of(&reply), -32601);
}

/// JSON-RPC §5: the response carries the request's id, a string or a number, as sent.
#[test]
fn the_response_carries_the_requests_id() {
    let hub = Hub::start();
    for id in [json!("req-α-1"), json!(7), json!(-3)] {
        let reply = call(&hub, "sol", &request(id.clone(), "ListTasks", json!({})));
        assert_eq!(reply["id"], id);
        assert!(reply["result"].is_object(), "{reply}");
    }
}

/// JSON-RPC §4.1: a notification (a valid Request without an id) is never answered, and the
/// server still processes it (issue 32: it was dropped): the ACK is applied.
#[test]
fn a_notification_is_applied_and_not_answered() {
    let hub = Hub::start();
    let t = hub.assign("Rotate the logs", Some("sol"), &[]);
    let mut body = send(
        "n-1",
        json!({"taskId": t, "parts": [{"text": "ACK owning ETA 5m"}]}),
    );
    body.as_object_mut().unwrap().remove("id");
    let a = post(&hub, Some("sol"), Some("1.0"), &body.to_string());
    assert_eq!((a.status, a.body.as_str()), (204, ""));
    assert_eq!(hub.row(&t).state.as_str(), "TASK_STATE_WORKING");
}

/// §3.3.2 (validation), §9.5: invalid params are -32602.
#[test]
fn invalid_params_are_32602() {
    let hub = Hub::start();
    for (method, params) in [
        ("SendMessage", json!({})),
        (
            "SendMessage",
            json!({"message": {"role": "ROLE_USER", "messageId": "m"}}),
        ),
        ("GetTask", json!({})),
        ("CancelTask", json!({"id": 42})),
        ("ListTasks", json!({"historyLength": -1})),
        ("ListTasks", json!({"pageSize": 0})),
        ("ListTasks", json!({"pageSize": 101})),
        ("ListTasks", json!({"status": "TASK_STATE_RUNNING"})),
        ("ListTasks", json!({"statusTimestampAfter": "yesterday"})),
    ] {
        let reply = call(&hub, "sol", &request(json!(1), method, params.clone()));
        assert_eq!(code_of(&reply), -32602, "{method} {params}: {reply}");
    }
}

/// §3.3.2 (authentication): a request without valid credentials is rejected; HTTP 401 with
/// the scheme to use (§3.3.2 SHOULD: the challenge).
#[test]
fn a_request_without_valid_credentials_is_rejected() {
    let hub = Hub::start();
    let body = request(json!(1), "ListTasks", json!({})).to_string();
    let a = post(&hub, None, Some("1.0"), &body);
    assert_eq!(a.status, 401);
    assert_eq!(a.header("www-authenticate").as_deref(), Some("Bearer"));
}

/// §3.6, §3.2.6: a version the agent does not support is VersionNotSupportedError (-32009).
#[test]
fn an_unsupported_version_is_32009() {
    let hub = Hub::start();
    let body = request(json!(1), "ListTasks", json!({})).to_string();
    let a = post(&hub, Some("sol"), Some("9.9"), &body);
    let reply = well_formed(&a);
    assert_eq!(code_of(&reply), -32009);
}

/// §3.1.3, §5.4: GetTask of a task that does not exist is TaskNotFoundError (-32001).
#[test]
fn get_task_of_an_unknown_task_is_32001() {
    let hub = Hub::start();
    let reply = call(
        &hub,
        "sol",
        &request(json!(1), "GetTask", json!({"id": "q_nothere"})),
    );
    assert_eq!(code_of(&reply), -32001);
}

/// §3.4.2: a message naming a taskId that does not exist is TaskNotFoundError.
#[test]
fn a_message_naming_an_unknown_task_is_32001() {
    let hub = Hub::start();
    let reply = call(
        &hub,
        "sol",
        &send(
            "m-1",
            json!({"taskId": "q_nothere", "parts": [{"text": "ACK owning ETA 5m"}]}),
        ),
    );
    assert_eq!(code_of(&reply), -32001);
}

/// §3.1.5, §5.4: CancelTask of an unknown task is -32001, of a finished one
/// TaskNotCancelableError (-32002); of a working one, the Task, canceled.
#[test]
fn cancel_task_answers_the_task_or_its_error() {
    let hub = Hub::start();
    let reply = call(
        &hub,
        "sol",
        &request(json!(1), "CancelTask", json!({"id": "q_nothere"})),
    );
    assert_eq!(code_of(&reply), -32001);
    let t = working_task(&hub, "Cancel me", "sol");
    let reply = call(
        &hub,
        "sol",
        &request(json!(2), "CancelTask", json!({"id": t})),
    );
    assert_eq!(reply["result"]["id"], t.as_str(), "{reply}");
    assert_eq!(reply["result"]["status"]["state"], "TASK_STATE_CANCELED");
    let reply = call(
        &hub,
        "sol",
        &request(json!(3), "CancelTask", json!({"id": t})),
    );
    assert_eq!(code_of(&reply), -32002);
}

/// §3.3.4: push notification configuration without the capability is
/// PushNotificationNotSupportedError (-32003), for each of the four methods (§9.4.7).
#[test]
fn push_notification_methods_are_32003() {
    let hub = Hub::start();
    for method in [
        "CreateTaskPushNotificationConfig",
        "GetTaskPushNotificationConfig",
        "ListTaskPushNotificationConfigs",
        "DeleteTaskPushNotificationConfig",
    ] {
        let reply = call(
            &hub,
            "sol",
            &request(json!(1), method, json!({"taskId": "q_1"})),
        );
        assert_eq!(code_of(&reply), -32003, "{method}");
    }
}

/// §3.3.4: streaming without the capability is UnsupportedOperationError (-32004), and so is
/// the extended card when the card does not declare it.
#[test]
fn undeclared_capabilities_are_32004() {
    let hub = Hub::start();
    for method in [
        "SendStreamingMessage",
        "SubscribeToTask",
        "GetExtendedAgentCard",
    ] {
        let reply = call(&hub, "sol", &request(json!(1), method, json!({})));
        assert_eq!(code_of(&reply), -32004, "{method}: {reply}");
    }
    // The spec's own example (§9.4.8) sends no params.
    let bare = json!({"jsonrpc": "2.0", "id": 6, "method": "GetExtendedAgentCard"});
    assert_eq!(code_of(&call(&hub, "sol", &bare)), -32004);
}

/// §3.3.2, §5.4: a part whose media type the agent does not take is
/// ContentTypeNotSupportedError (-32005).
#[test]
fn an_unsupported_content_type_is_32005() {
    let hub = Hub::start();
    for part in [
        json!({"url": "https://example.com/x.png", "mediaType": "image/png"}),
        json!({"raw": "aGVsbG8=", "mediaType": "application/octet-stream"}),
        // Any text/* is read as words (a markdown report is still a report); not a PDF.
        json!({"text": "DONE q_1", "mediaType": "application/pdf"}),
    ] {
        let reply = call(&hub, "sol", &send("m-1", json!({"parts": [part.clone()]})));
        assert_eq!(code_of(&reply), -32005, "{part}: {reply}");
    }
}

/// §3.1.4: ListTasks returns only the caller's tasks (§13.1), newest status timestamp first,
/// with `nextPageToken` always present ("" on the last page) and cursor pagination.
#[test]
fn list_tasks_is_scoped_sorted_newest_first_and_paginated() {
    let hub = Hub::start();
    let first = working_task(&hub, "First", "sol");
    let _novas = working_task(&hub, "Nova's", "nova");
    let second = working_task(&hub, "Second", "sol");
    let third = working_task(&hub, "Third", "sol");
    // A report on the first makes it the most recently updated.
    let blocker = send(
        "b-1",
        json!({"taskId": first, "parts": [{"data": {"report": "blocker", "on": "disk"}}]}),
    );
    assert!(call(&hub, "sol", &blocker).get("result").is_some());
    let page = |token: &str| {
        let reply = call(
            &hub,
            "sol",
            &request(
                json!(1),
                "ListTasks",
                json!({"pageSize": 2, "pageToken": token}),
            ),
        );
        reply["result"].clone()
    };
    let ids = |page: &Value| -> Vec<String> {
        page["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_str().unwrap().to_string())
            .collect()
    };
    let one = page("");
    assert_eq!(ids(&one), vec![first.clone(), third.clone()]);
    let token = one["nextPageToken"].as_str().unwrap().to_string();
    assert!(!token.is_empty(), "more to come: {one}");
    let two = page(&token);
    assert_eq!(ids(&two), vec![second]);
    assert_eq!(two["nextPageToken"], "", "the last page says so");
    assert_eq!(one["totalSize"], 3, "nova's task is not the caller's");
    let stamps: Vec<String> = one["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["status"]["timestamp"].as_str().unwrap().to_string())
        .collect();
    assert!(stamps[0] >= stamps[1], "{stamps:?}");
    assert!(
        one["tasks"][0].get("artifacts").is_none(),
        "§3.1.4: artifacts omitted unless includeArtifacts"
    );
}

/// §3.3.2 (authorization), §13.1: a task the caller may not access is not revealed: reading,
/// cancelling or reporting on it is TaskNotFoundError, as for one that does not exist.
#[test]
fn another_agents_task_is_not_found() {
    let hub = Hub::start();
    let t = hub.assign("Nova's task", Some("nova"), &[]);
    let before = hub.contents();
    for body in [
        request(json!(1), "GetTask", json!({"id": t})),
        request(json!(2), "CancelTask", json!({"id": t})),
        send(
            "m-1",
            json!({"taskId": t, "parts": [{"text": "ACK owning ETA 5m"}]}),
        ),
    ] {
        let reply = call(&hub, "sol", &body);
        assert_eq!(code_of(&reply), -32001, "{body}: {reply}");
    }
    assert_eq!(hub.contents(), before);
}

/// §3.4.3: the context is inferred from the task when only taskId is given, and a message
/// with a mismatching contextId is rejected.
#[test]
fn a_task_keeps_its_context() {
    let hub = Hub::start();
    let t = hub.assign("Context", Some("sol"), &[]);
    let reply = call(
        &hub,
        "sol",
        &send(
            "m-1",
            json!({"taskId": t, "parts": [{"text": "ACK owning ETA 5m"}]}),
        ),
    );
    let context = reply["result"]["task"]["contextId"].clone();
    assert!(context.is_string(), "{reply}");
    let reply = call(
        &hub,
        "sol",
        &send(
            "m-2",
            json!({"taskId": t, "contextId": "ctx-elsewhere",
                   "parts": [{"data": {"report": "blocker", "on": "x"}}]}),
        ),
    );
    assert!(code_of(&reply) == -32602, "{reply}");
    let reply = call(&hub, "sol", &request(json!(3), "GetTask", json!({"id": t})));
    assert_eq!(reply["result"]["contextId"], context);
    assert!(reply["result"]["metadata"].to_string().contains("\"ack\""));
}

/// §4.1.1, §5.5, §5.6.1: a Task has its id, contextId and status; the state is a
/// `TASK_STATE_*` name; timestamps are ISO 8601 in UTC; fields are camelCase.
#[test]
fn a_task_has_the_specs_shape() {
    let hub = Hub::start();
    let t = working_task(&hub, "Shape", "sol");
    let reply = call(&hub, "sol", &request(json!(1), "GetTask", json!({"id": t})));
    let task = &reply["result"];
    assert_eq!(task["id"], t.as_str());
    assert!(task["contextId"].is_string());
    assert!(
        task["status"]["state"]
            .as_str()
            .unwrap()
            .starts_with("TASK_STATE_")
    );
    let stamp = task["status"]["timestamp"].as_str().unwrap();
    let parsed = chrono::DateTime::parse_from_rfc3339(stamp).expect("ISO 8601");
    assert_eq!(parsed.offset().local_minus_utc(), 0, "UTC: {stamp}");
    let mut keys = Vec::new();
    collect_keys(task, &mut keys);
    assert!(
        keys.iter().all(|k| !k.contains('_')),
        "§5.5: camelCase: {keys:?}"
    );
}

/// Every field name of `v` outside `metadata` (whose keys are the extensions' own).
fn collect_keys(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                out.push(k.clone());
                if k != "metadata" {
                    collect_keys(v, out);
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|v| collect_keys(v, out)),
        _ => {}
    }
}

/// §8.2, §4.4.1: the card at `/.well-known/agent-card.json` has the required fields; with
/// `A2A-Version: 1.0`, its interface says JSONRPC 1.0 and its security is in the v1.0 shape.
#[test]
fn the_agent_card_has_the_required_fields() {
    let hub = Hub::start();
    let a = hub::exchange(
        hub.addr,
        "GET /.well-known/agent-card.json HTTP/1.1\r\nHost: x\r\nA2A-Version: 1.0\r\n\
         Connection: close\r\n\r\n",
        b"",
    );
    assert_eq!(a.status, 200);
    let card = a.json();
    for field in [
        "name",
        "description",
        "version",
        "supportedInterfaces",
        "capabilities",
        "defaultInputModes",
        "defaultOutputModes",
        "skills",
    ] {
        assert!(card.get(field).is_some(), "{field}: {card}");
    }
    let interface = &card["supportedInterfaces"][0];
    assert_eq!(interface["url"], hub.url());
    assert_eq!(interface["protocolBinding"], "JSONRPC");
    assert_eq!(interface["protocolVersion"], "1.0");
    assert_eq!(card["capabilities"]["streaming"], false);
    assert_eq!(card["capabilities"]["pushNotifications"], false);
    for skill in card["skills"].as_array().unwrap() {
        for field in ["id", "name", "description", "tags"] {
            assert!(skill.get(field).is_some(), "{field}: {skill}");
        }
    }
    let scheme = &card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"];
    assert_eq!(scheme["scheme"], "Bearer", "{card}");
    assert!(card["securityRequirements"].is_array(), "{card}");
    for v03_only in ["url", "protocolVersion", "preferredTransport", "security"] {
        assert!(card.get(v03_only).is_none(), "{v03_only} on a v1.0 card");
    }
}

/// §3.1.4 (ListTasksRequest): `statusTimestampAfter` is honoured, as the spec's filter on
/// the status timestamp.
#[test]
fn list_tasks_honours_status_timestamp_after() {
    let hub = Hub::start();
    working_task(&hub, "One", "sol");
    working_task(&hub, "Two", "sol");
    let listed = |after: &str| -> usize {
        let reply = call(
            &hub,
            "sol",
            &request(
                json!(1),
                "ListTasks",
                json!({"statusTimestampAfter": after}),
            ),
        );
        reply["result"]["tasks"].as_array().unwrap().len()
    };
    assert_eq!(listed("2000-01-01T00:00:00Z"), 2);
    assert_eq!(listed("2999-01-01T00:00:00Z"), 0);
}

/// §9.1: requests are `application/json`; another content type is refused before the body
/// is read (HTTP 415), and nothing is written.
#[test]
fn a_request_that_is_not_json_is_refused() {
    let hub = Hub::start();
    let t = hub.assign("Rotate the logs", Some("sol"), &[]);
    let before = hub.contents();
    let body = send(
        "m-1",
        json!({"taskId": t, "parts": [{"text": "ACK owning ETA 5m"}]}),
    )
    .to_string();
    let head = format!(
        "POST / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\nA2A-Version: 1.0\r\n\
         Content-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        hub::token("sol"),
        body.len()
    );
    let a = hub::exchange(hub.addr, &head, body.as_bytes());
    assert_eq!(a.status, 415, "{}", a.body);
    assert_eq!(hub.contents(), before);
}

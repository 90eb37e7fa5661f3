//! The report intake end to end: a real listener on loopback in front of a real work queue
//! (SQLite file), the official a2a-sdk clients (1.3.0 for v1.0, 0.3.26 for v0.3) reporting
//! through their own client classes (tests/peers/report_v1.py, report_v03.py), and raw HTTP for
//! what no SDK sends (the Pulse plane's `content`, hostile input).

use crate::support;
use crate::support::hub;

use hub::{
    AGENTS, Hub, OPERATOR_TOKEN, exchange, post, read_answer, text, token, v1_send, v03_send,
};

use std::collections::HashSet;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::sync::Arc;

use fleetdash::config::IntakeConfig;
use serde_json::{Value, json};
use support::{HANG_BUDGET, Sdk, repo_root};

/// Runs `steps` through the official SDK client of `sdk` as `agent`; one result per step.
fn sdk(sdk: Sdk, url: &str, agent: Option<&str>, steps: Value) -> Vec<Value> {
    let (venv, script) = match sdk {
        Sdk::V1 => ("a2a-v1", "report_v1.py"),
        Sdk::V03 => ("a2a-v03", "report_v03.py"),
    };
    let python = repo_root().join(".venv").join(venv).join("bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/setup-test-deps (the README's test command does)",
        python.display()
    );
    let mut cmd = Command::new(python);
    cmd.arg(repo_root().join("tests/peers").join(script))
        .args(["--url", url])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(agent) = agent {
        cmd.args(["--token", token(agent)]);
    }
    let mut child = cmd.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(steps.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{script} failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        results.len(),
        steps.as_array().unwrap().len(),
        "one result per step: {stdout}"
    );
    results
}

#[track_caller]
fn ok(result: &Value) -> &Value {
    match result.get("ok") {
        Some(ok) => ok,
        None => panic!("the SDK raised: {result}"),
    }
}

#[track_caller]
fn err(result: &Value) -> &Value {
    match result.get("error") {
        Some(e) => e,
        None => panic!("expected an error, the SDK parsed: {result}"),
    }
}

const ASC_KEY: &str = "urn:fleetdash:a2a:agent-status:v0.1";
const QUEUE_KEY: &str = "urn:fleetdash:a2a:work-queue:v1";

#[test]
fn every_report_kind_from_the_v1_sdk_is_applied_and_its_reply_parsed() {
    let hub = Hub::start();
    let t = hub.assign("Rotate the LAB logs", Some("sol"), &["mira"]);
    let results = sdk(
        Sdk::V1,
        &hub.url(),
        Some("sol"),
        json!([
            {"op": "card"},
            {"op": "send", "text": "ACK owning ETA 45m", "task_id": t},
            {"op": "get", "id": t},
            {"op": "send", "task_id": t, "data": {"report": "blocker", "on": "LAB disk full"}},
            {"op": "send", "data": {"report": "heartbeat", "in_flight": [t]}},
            {"op": "send", "data": {"report": "assign", "title": "Check nova's backups", "owner": "nova", "tagged": ["sol"]}},
            {"op": "list"},
            {"op": "send", "text": format!("DONE {t} and a summary that is never kept: ZEBRA-SUMMARY")},
            {"op": "get", "id": t},
            {"op": "send", "text": "ACK owning ETA 5m", "task_id": t, "context_id": "ctx-elsewhere"},
        ]),
    );
    let card = ok(&results[0]);
    assert_eq!(card["name"], "fleetdash-intake");
    let skills: Vec<&str> = card["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        skills,
        [
            "heartbeat",
            "completion",
            "blocker",
            "ack",
            "assign",
            "fleet.status",
            "fleet.changes",
            "fleet.queue",
            "fleet.report"
        ]
    );

    let acked = &ok(&results[1])["task"];
    assert_eq!(acked["id"], t);
    assert_eq!(
        acked["contextId"], t,
        "a task assigned without a context is its own, inferred when only its taskId is sent"
    );
    assert_eq!(acked["metadata"][QUEUE_KEY]["owner"], "sol");
    assert_eq!(acked["metadata"][QUEUE_KEY]["ack"]["shape"], "owning");
    assert!(acked["metadata"][QUEUE_KEY]["ack"]["eta"].is_string());
    assert!(
        acked["status"]["state"]
            .as_str()
            .unwrap()
            .starts_with("TASK_STATE_")
    );
    assert_eq!(ok(&results[2])["id"], t, "GetTask returns the Task itself");

    let blocked = &ok(&results[3])["task"];
    assert_eq!(
        blocked["metadata"][QUEUE_KEY]["blocked_on"],
        "LAB disk full"
    );

    let heartbeat = &ok(&results[4])["message"];
    assert_eq!(heartbeat["role"], "ROLE_AGENT");

    let assigned = &ok(&results[5])["task"];
    assert_eq!(assigned["metadata"][QUEUE_KEY]["owner"], "nova");
    assert_eq!(assigned["metadata"][QUEUE_KEY]["created_by"], "sol");

    let list = ok(&results[6]);
    assert_eq!(list["totalSize"], 2);
    assert_eq!(list["tasks"].as_array().unwrap().len(), 2);

    let done = &ok(&results[7])["task"];
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(done["metadata"][ASC_KEY]["status"]["name"], "SUCCESS");
    assert_eq!(ok(&results[8])["status"]["state"], "TASK_STATE_COMPLETED");
    // Issue 21 (A2A §3.4.3): a message naming a task in another context is refused, and the
    // task keeps its own.
    let mismatch = err(&results[9]);
    assert!(
        mismatch["message"]
            .as_str()
            .unwrap_or_default()
            .contains("contextId"),
        "{mismatch}"
    );
    assert_eq!(ok(&results[8])["contextId"], t);

    let row = hub.row(&t);
    assert_eq!(row.owner.as_deref(), Some("sol"));
    let bytes = hub.bytes();
    assert!(
        !bytes.windows(13).any(|w| w == b"ZEBRA-SUMMARY"),
        "a report's summary is not kept"
    );
}

#[test]
fn the_other_ack_shapes_and_a_retried_message_through_the_v1_sdk() {
    let hub = Hub::start();
    let t = hub.assign("Fix the arm64 pull", None, &["sol", "mira", "nova"]);
    let u = hub.assign("Renew the cert", Some("nova"), &["sol"]);
    let first = sdk(
        Sdk::V1,
        &hub.url(),
        Some("sol"),
        json!([
            {"op": "send", "text": "ACK owning", "task_id": t, "message_id": "m-own"},
        ]),
    );
    assert_eq!(ok(&first[0])["task"]["metadata"][QUEUE_KEY]["owner"], "sol");
    let owner = sdk(
        Sdk::V1,
        &hub.url(),
        Some("nova"),
        json!([
            {"op": "send", "text": format!("ACK {u} blocked on mira's review: token={}", token("sol"))},
            {"op": "send", "text": format!("ACK {u} escalating to mira")},
        ]),
    );
    let blocked = &ok(&owner[0])["task"]["metadata"][QUEUE_KEY];
    assert_eq!(blocked["ack"]["shape"], "blocked", "{blocked}");
    assert!(!blocked.to_string().contains(token("sol")), "{blocked}");
    assert_eq!(
        ok(&owner[1])["task"]["metadata"][QUEUE_KEY]["ack"]["to"],
        "mira"
    );
    assert!(
        !String::from_utf8_lossy(&hub.bytes()).contains(token("sol")),
        "a token never reaches the queue's file"
    );

    let events = hub.events();
    let yielded = sdk(
        Sdk::V1,
        &hub.url(),
        Some("mira"),
        json!([{"op": "send", "text": "ACK yielded to owner", "task_id": t}]),
    );
    ok(&yielded[0]);
    assert!(hub.row(&t).yielded.contains(&"mira".to_string()));
    assert_eq!(hub.events(), events + 1);

    // The same messageId again: the same answer, nothing applied twice.
    let again = sdk(
        Sdk::V1,
        &hub.url(),
        Some("sol"),
        json!([{"op": "send", "text": "ACK owning", "task_id": t, "message_id": "m-own"}]),
    );
    assert_eq!(ok(&again[0])["task"]["id"], t);
    assert_eq!(hub.events(), events + 1);
}

#[test]
fn every_report_kind_from_the_v03_sdk_and_the_pulse_content_quirk() {
    let hub = Hub::start();
    let t = hub.assign("Summarise the podcast", Some("echo"), &[]);
    let results = sdk(
        Sdk::V03,
        &hub.url(),
        Some("echo"),
        json!([
            {"op": "card"},
            {"op": "send", "text": "ACK owning ETA 2h", "task_id": t},
            {"op": "send", "data": {"report": "blocker", "task_id": t, "on": "the feed is down"}},
            {"op": "send", "text": "HEARTBEAT"},
            {"op": "send", "data": {"report": "assign", "title": "Draft the brief", "owner": "sol"}},
            {"op": "get", "id": t},
            {"op": "send", "data": {"report": "completion", "task_id": t, "state": "TASK_STATE_FAILED"}},
            {"op": "get", "id": "q_nope"},
        ]),
    );
    assert_eq!(ok(&results[0])["protocolVersion"], "0.3.0");
    let acked = ok(&results[1]);
    assert_eq!(acked["kind"], "task");
    assert_eq!(acked["id"], t);
    assert_eq!(acked["metadata"][QUEUE_KEY]["owner"], "echo");
    let state = acked["status"]["state"].as_str().unwrap();
    assert!(
        !state.starts_with("TASK_STATE_"),
        "v0.3 states are lower case: {state}"
    );
    assert_eq!(
        ok(&results[2])["metadata"][QUEUE_KEY]["blocked_on"],
        "the feed is down"
    );
    assert_eq!(ok(&results[3])["kind"], "message");
    assert_eq!(ok(&results[3])["role"], "agent");
    assert_eq!(ok(&results[4])["metadata"][QUEUE_KEY]["owner"], "sol");
    assert_eq!(ok(&results[5])["kind"], "task");
    assert_eq!(ok(&results[6])["status"]["state"], "failed");
    let missing = err(&results[7]);
    assert_eq!(missing["code"], -32001);

    // The Pulse plane: v0.3 with the text under `content` (no SDK sends it).
    let u = hub.assign("Publish the brief", Some("echo"), &[]);
    let a = post(
        &hub,
        Some("echo"),
        None,
        &v03_send(
            "pulse-1",
            json!({"content": format!("DONE {u}"), "contextId": "pulse-ctx"}),
        ),
    );
    assert_eq!(a.status, 200);
    let reply = a.json();
    assert_eq!(reply["result"]["kind"], "task", "{reply}");
    assert_eq!(reply["result"]["status"]["state"], "completed");
    assert_eq!(
        reply["result"]["contextId"], u,
        "the task keeps its context; the report's is its reporter's session"
    );
}

#[test]
fn a_multi_tag_race_of_concurrent_sdk_clients_has_exactly_one_owner() {
    let hub = Hub::start();
    let t = hub.assign("Who takes the arm64 pull?", None, &["sol", "mira", "nova"]);
    let url = hub.url();
    let racers: Vec<_> = [(Sdk::V1, "sol"), (Sdk::V1, "mira"), (Sdk::V03, "nova")]
        .into_iter()
        .map(|(kind, agent)| {
            let url = url.clone();
            let t = t.clone();
            std::thread::spawn(move || {
                let r = sdk(
                    kind,
                    &url,
                    Some(agent),
                    json!([{"op": "send", "text": "ACK owning ETA 30m", "task_id": t}]),
                );
                (agent, r.into_iter().next().unwrap())
            })
        })
        .collect();
    let results: Vec<(&str, Value)> = racers.into_iter().map(|h| h.join().unwrap()).collect();
    let winners: Vec<&str> = results
        .iter()
        .filter(|(_, r)| r.get("ok").is_some())
        .map(|(a, _)| *a)
        .collect();
    assert_eq!(winners.len(), 1, "exactly one owner: {results:?}");
    let row = hub.row(&t);
    assert_eq!(row.owner.as_deref(), Some(winners[0]));
    for (agent, r) in &results {
        if *agent == winners[0] {
            continue;
        }
        let e = err(r);
        assert!(row.yielded.contains(&agent.to_string()), "{agent}: {row:?}");
        if *agent == "nova" {
            // v0.3: the ASC refinement in the error's data.
            assert_eq!(e["code"], -32099, "{e}");
            assert_eq!(e["data"]["agent_status"]["name"], "ABORTED_CONCURRENCY");
            assert_eq!(e["data"]["owner"], winners[0]);
        } else {
            assert!(
                e["message"].as_str().unwrap().contains("-32099"),
                "the v1 SDK names the code: {e}"
            );
        }
    }
}

/// A task an agent may read (it assigned it) but neither owns nor is tagged on: a report on it
/// is 403. One it cannot even read is "not found" (-32001), as GetTask says: a refusal must not
/// tell an agent that another agent's task exists (A2A §13.1; issue 21). Neither writes.
#[test]
fn reporting_on_a_task_that_is_not_yours_is_403_problem_json_and_writes_nothing() {
    let hub = Hub::start();
    let assigned = post(
        &hub,
        Some("echo"),
        Some("1.0"),
        &v1_send(
            "assign-1",
            json!({"parts": [{"data": {"report": "assign", "title": "Sol's own task",
                "owner": "sol", "tagged": ["mira"]}}]}),
        ),
    );
    let t = assigned.json()["result"]["task"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", assigned.body))
        .to_string();
    let before = hub.contents();
    let a = post(
        &hub,
        Some("echo"),
        Some("1.0"),
        &v1_send(
            "m-x",
            json!({"taskId": t, "parts": [{"text": "ACK owning"}]}),
        ),
    );
    assert_eq!(a.status, 403);
    assert_eq!(
        a.header("content-type").as_deref(),
        Some("application/problem+json")
    );
    let p = a.json();
    assert_eq!(p["type"], "urn:agent-status:PERMISSION_DENIED");
    assert_eq!(p["status"], 403);
    assert_eq!(p["agent_status"]["code"], 4002);
    assert_eq!(p["agent_status"]["name"], "PERMISSION_DENIED");
    assert_eq!(hub.contents(), before);
    // The v0.3 SDK sees an HTTP error it can name.
    let r = sdk(
        Sdk::V03,
        &hub.url(),
        Some("echo"),
        json!([{"op": "send", "text": "DONE", "task_id": t}]),
    );
    assert_eq!(err(&r[0])["status"], 403);
    assert_eq!(hub.contents(), before);
    // Nova cannot read it: to nova it does not exist.
    let hidden = post(
        &hub,
        Some("nova"),
        Some("1.0"),
        &v1_send(
            "m-y",
            json!({"taskId": t, "parts": [{"text": "ACK owning"}]}),
        ),
    );
    assert_eq!(hidden.status, 200, "{}", hidden.body);
    assert_eq!(hidden.json()["error"]["code"], -32001, "{}", hidden.body);
    assert_eq!(hub.contents(), before);
}

#[test]
fn a_missing_or_unknown_token_is_401_problem_json_and_writes_nothing() {
    let hub = Hub::start();
    let before = hub.contents();
    let body = v03_send(
        "m-1",
        json!({"parts": [{"kind": "text", "text": "HEARTBEAT"}]}),
    );
    let a = post(&hub, None, None, &body);
    assert_eq!(a.status, 401);
    assert_eq!(a.header("www-authenticate").as_deref(), Some("Bearer"));
    assert_eq!(
        a.header("content-type").as_deref(),
        Some("application/problem+json")
    );
    assert_eq!(a.json()["agent_status"]["name"], "AUTHENTICATION_REQUIRED");
    let head = format!(
        "POST / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer report-sol-5b1e9c2\r\n\
         Connection: close\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    assert_eq!(exchange(hub.addr, &head, body.as_bytes()).status, 401);
    assert_eq!(hub.contents(), before);
}

#[test]
fn hostile_input_gets_its_error_and_writes_nothing() {
    let hub = Hub::with_limits(IntakeConfig {
        max_body_bytes: 4096,
        body_timeout: std::time::Duration::from_secs(1),
        ..IntakeConfig::default()
    });
    let t = hub.assign("Nothing may touch this", Some("sol"), &[]);
    let before = hub.contents();
    // (what, A2A-Version, body, JSON-RPC code)
    let cases: Vec<(&str, Option<&str>, String, i64)> = vec![
        (
            "invalid JSON",
            None,
            "{\"jsonrpc\": \"2.0\", \"id\": 1,".into(),
            -32700,
        ),
        (
            "a JSON-RPC batch",
            None,
            format!("[{}]", v03_send("b-1", text("HEARTBEAT"))),
            -32600,
        ),
        (
            "an unknown method",
            None,
            json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/delete", "params": {"id": t}})
                .to_string(),
            -32601,
        ),
        (
            "a v1.0 method without the header",
            None,
            v1_send("d-1", json!({"parts": [{"text": format!("DONE {t}")}]})),
            -32009,
        ),
        (
            "a v0.3 method with the v1.0 header",
            Some("1.0"),
            v03_send("d-2", text(&format!("DONE {t}"))),
            -32009,
        ),
        (
            "not a report",
            None,
            v03_send("d-3", text("please do the thing")),
            -32602,
        ),
        (
            "a state that is not a wire value",
            None,
            v03_send(
                "d-4",
                json!({"parts": [{"kind": "data", "data": {"report": "completion", "task_id": t, "state": "done"}}]}),
            ),
            -32602,
        ),
        (
            "an unknown field",
            None,
            v03_send(
                "d-5",
                json!({"parts": [{"kind": "data", "data": {"report": "blocker", "task_id": t, "on": "x", "summary": "long story"}}]}),
            ),
            -32602,
        ),
        (
            "an unknown task",
            None,
            v03_send("d-6", text("DONE q_unknown")),
            -32001,
        ),
        (
            "content in v1.0",
            Some("1.0"),
            v1_send("d-7", json!({"content": format!("DONE {t}")})),
            -32602,
        ),
    ];
    for (what, version, body, code) in &cases {
        let a = post(&hub, Some("sol"), *version, body);
        assert_eq!(a.status, 200, "{what}: JSON-RPC errors travel in a 200");
        let reply = a.json();
        assert_eq!(reply["error"]["code"], *code, "{what}: {reply}");
        assert_eq!(reply["jsonrpc"], "2.0");
        assert_eq!(hub.contents(), before, "{what} wrote something");
    }

    // A notification that cannot be read: refused, and not answered, not even with its error.
    let notification = json!({"jsonrpc": "2.0", "method": "message/send", "params": {"message": {"kind": "message", "messageId": "n", "role": "user", "parts": [{"kind": "text", "text": "DONE"}]}}}).to_string();
    let a = post(&hub, Some("sol"), None, &notification);
    assert_eq!((a.status, a.body.as_str()), (204, ""), "a notification");
    assert_eq!(hub.contents(), before, "a bad notification wrote something");
    // No id, and not a Request either (the TCK's invalid_request0/1): an Invalid Request,
    // answered with a null id, never taken for a notification.
    for invalid in [
        json!({"jsonrpc": "aaa", "method": "SendMessage", "params": {}}),
        json!({"jsonrpc": "2.0", "params": {}}),
    ] {
        let a = post(&hub, Some("sol"), Some("1.0"), &invalid.to_string());
        assert_eq!(a.status, 200, "{invalid}: {}", a.body);
        let reply = a.json();
        assert_eq!(reply["error"]["code"], -32600, "{invalid}: {reply}");
        assert_eq!(reply["id"], Value::Null, "{invalid}: {reply}");
    }
    assert_eq!(hub.contents(), before);
    // A body that is not declared JSON: 415, before it is read (issue 21).
    let done = v03_send("c-1", text(&format!("DONE {t}")));
    for content_type in [
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
        None,
    ] {
        let mut head = format!(
            "POST / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\nConnection: close\r\n\
             Content-Length: {}\r\n",
            token("sol"),
            done.len()
        );
        if let Some(ct) = content_type {
            head.push_str(&format!("Content-Type: {ct}\r\n"));
        }
        head.push_str("\r\n");
        let a = exchange(hub.addr, &head, done.as_bytes());
        assert_eq!(a.status, 415, "{content_type:?}: {}", a.body);
        assert_eq!(
            a.header("content-type").as_deref(),
            Some("application/problem+json")
        );
        assert!(
            a.json()["detail"]
                .as_str()
                .is_some_and(|d| d.contains(content_type.unwrap_or("none"))),
            "{}",
            a.body
        );
    }
    assert_eq!(
        hub.contents(),
        before,
        "a body not declared JSON wrote something"
    );
    // A JSON type with parameters is JSON.
    let head = format!(
        "POST / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\nConnection: close\r\n\
         Content-Type: application/json; charset=utf-8\r\nContent-Length: 8\r\n\r\n",
        token("sol")
    );
    assert_eq!(
        exchange(hub.addr, &head, br#"{"id":1}"#).json()["error"]["code"],
        -32600
    );

    // Too large, declared.
    let huge = v03_send("h-1", text(&format!("BLOCKED {t}: {}", "x".repeat(10_000))));
    let a = post(&hub, Some("sol"), None, &huge);
    assert_eq!(a.status, 413);
    assert_eq!(a.json()["type"], "urn:agent-status:INVALID_REQUEST");
    // Too large, chunked (no length to refuse by: cut at the ceiling).
    let head = format!(
        "POST / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
        token("sol")
    );
    let mut chunked = Vec::new();
    for piece in huge.as_bytes().chunks(1000) {
        chunked.extend(format!("{:x}\r\n", piece.len()).as_bytes());
        chunked.extend(piece);
        chunked.extend(b"\r\n");
    }
    chunked.extend(b"0\r\n\r\n");
    let a = exchange(hub.addr, &head, &chunked);
    assert_eq!(a.status, 413, "{}", a.body);
    assert_eq!(
        a.header("content-type").as_deref(),
        Some("application/problem+json")
    );
    // Too slow: half a body, then nothing; the deadline cuts it.
    let body = v03_send("s-1", text(&format!("DONE {t}")));
    let head = format!(
        "POST / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        token("sol"),
        body.len()
    );
    let mut s = TcpStream::connect(hub.addr).unwrap();
    s.set_read_timeout(Some(HANG_BUDGET)).unwrap();
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(&body.as_bytes()[..body.len() / 2]).unwrap();
    let a = read_answer(s);
    assert_eq!(a.status, 408);
    assert_eq!(a.json()["agent_status"]["name"], "TIMEOUT");
    assert_eq!(
        hub.contents(),
        before,
        "a huge or slow body wrote something"
    );
}

#[test]
fn the_rate_limit_answers_429_with_retry_after_for_that_agent_only() {
    let hub = Hub::with_limits(IntakeConfig {
        rate_per_minute: 2,
        ..IntakeConfig::default()
    });
    let heartbeat = |n: u32| v03_send(&format!("hb-{n}"), text("HEARTBEAT idle"));
    assert_eq!(post(&hub, Some("sol"), None, &heartbeat(1)).status, 200);
    assert_eq!(post(&hub, Some("sol"), None, &heartbeat(2)).status, 200);
    let a = post(&hub, Some("sol"), None, &heartbeat(3));
    assert_eq!(a.status, 429);
    let after: u64 = a.header("retry-after").unwrap().parse().unwrap();
    assert!(after >= 1);
    let p = a.json();
    assert_eq!(p["type"], "urn:agent-status:RATE_LIMITED");
    assert_eq!(p["agent_status"]["code"], 5001);
    assert_eq!(p["retry"]["after_ms"], after * 1000);
    assert!(p["detail"].as_str().unwrap().contains("rate_per_minute"));
    assert_eq!(
        a.header("content-type").as_deref(),
        Some("application/problem+json")
    );
    assert_eq!(
        post(&hub, Some("mira"), None, &heartbeat(1)).status,
        200,
        "another agent is not slowed"
    );
}

/// Issue 21: a client reading on an agent's token shared the agent's budget with its
/// heartbeats, so a busy reader starved its reports. Reads (and malformed requests) spend a
/// budget of their own; reports still go through when reads are exhausted, and the other way
/// round.
#[test]
fn a_busy_reader_never_starves_its_agents_reports() {
    let hub = Hub::with_limits(IntakeConfig {
        rate_per_minute: 2,
        read_rate_per_minute: 3,
        ..IntakeConfig::default()
    });
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}}).to_string();
    let garbage = "{not json";
    for body in [list.as_str(), garbage, list.as_str()] {
        let a = post(&hub, Some("sol"), Some("1.0"), body);
        assert_eq!(a.status, 200, "{}", a.body);
    }
    let refused = post(&hub, Some("sol"), Some("1.0"), &list);
    assert_eq!(refused.status, 429);
    assert!(
        refused.json()["detail"]
            .as_str()
            .unwrap()
            .contains("read_rate_per_minute"),
        "{}",
        refused.body
    );
    let before = hub.events();
    for n in 0..2 {
        let hb = v03_send(&format!("hb-{n}"), text("HEARTBEAT idle"));
        assert_eq!(
            post(&hub, Some("sol"), None, &hb).status,
            200,
            "a report after the reads ran out"
        );
    }
    assert_eq!(hub.events(), before + 2, "both heartbeats stored");
    let hb = v03_send("hb-9", text("HEARTBEAT idle"));
    assert_eq!(post(&hub, Some("sol"), None, &hb).status, 429);
    assert_eq!(
        post(&hub, Some("operator"), Some("1.0"), &list).status,
        200,
        "the operator's reads are its own"
    );
}

#[test]
fn the_card_has_cache_control_and_an_etag_and_revalidates() {
    let hub = Hub::start();
    let get = |extra: &str| {
        exchange(
            hub.addr,
            &format!(
                "GET /.well-known/agent-card.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{extra}\r\n"
            ),
            b"",
        )
    };
    let a = get("");
    assert_eq!(a.status, 200);
    assert!(a.header("cache-control").unwrap().contains("max-age"));
    let etag = a.header("etag").unwrap();
    let card = a.json();
    assert_eq!(card["supportedInterfaces"][0]["url"], hub.url());
    assert_eq!(card["supportedInterfaces"][0]["protocolVersion"], "1.0");
    assert_eq!(card["url"], hub.url());
    let again = get(&format!("If-None-Match: {etag}\r\n"));
    assert_eq!(again.status, 304);
    assert_eq!(again.header("etag"), Some(etag.clone()));
    // Asked for v1.0 (issue 21): v1.0's own shape, its own ETag, and caches told to keep the
    // two apart.
    let v1 = get("A2A-Version: 1.0\r\n");
    assert_eq!(v1.status, 200);
    assert_eq!(v1.header("vary").as_deref(), Some("A2A-Version"));
    assert_ne!(v1.header("etag"), Some(etag.clone()));
    let v1_card = v1.json();
    assert_eq!(
        v1_card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"],
        "Bearer"
    );
    assert!(v1_card["securityRequirements"].is_array(), "{v1_card}");
    for v03_only in ["url", "protocolVersion", "preferredTransport", "security"] {
        assert!(v1_card.get(v03_only).is_none(), "{v03_only}: {v1_card}");
    }
    assert_eq!(v1_card["supportedInterfaces"][0]["url"], hub.url());
    assert_eq!(
        get(&format!("A2A-Version: 1.0\r\nIf-None-Match: {etag}\r\n")).status,
        200,
        "the hybrid's ETag does not validate the v1.0 card"
    );
    let other = exchange(
        hub.addr,
        "GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        b"",
    );
    assert_eq!(other.status, 404);
    assert_eq!(
        other.header("content-type").as_deref(),
        Some("application/problem+json")
    );
}

/// `fleetdash run` starts the intake when `[intake] listen` is set, and says where.
#[test]
fn fleetdash_run_serves_the_intake_it_is_configured_with() {
    let scratch = support::Scratch::new();
    let config = scratch.config(&format!(
        "[intake]\nlisten = \"127.0.0.1:0\"\noperator_token_env = \"FLEET_OPERATOR_TOKEN\"\n\n\
         [work_queue]\ndb = \"state/tasks.db\"\n\n\
         [[agents]]\nname = \"sol\"\nendpoint = \"{}\"\ndialect = \"v1\"\nreport_token_env = \"SOL_REPORT_TOKEN\"\n",
        support::refused_endpoint()
    ));
    let mut cmd = support::fleetdash();
    cmd.args(["run", "--config"])
        .arg(&config)
        .env("SOL_REPORT_TOKEN", token("sol"))
        .env("FLEET_OPERATOR_TOKEN", OPERATOR_TOKEN);
    let (mut child, intake) = run_with_intake(cmd);
    let result = intake.map(|addr| {
        let hub_like = |as_who: &str, body: &str| {
            let head = format!(
                "POST / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\nConnection: close\r\n\
                 Content-Type: application/json\r\nContent-Length: {}\r\n{}\r\n",
                token(as_who),
                body.len(),
                if as_who == "operator" {
                    "A2A-Version: 1.0\r\n"
                } else {
                    ""
                }
            );
            exchange(addr, &head, body.as_bytes())
        };
        let a = hub_like("sol", &v03_send("run-1", text("HEARTBEAT")));
        let listed = hub_like(
            "operator",
            &json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}}).to_string(),
        );
        ((a.status, a.json()), (listed.status, listed.json()))
    });
    let _ = child.kill();
    let _ = child.wait();
    let ((status, reply), (listed, list)) =
        result.expect("fleetdash run never said where the intake listens");
    assert_eq!(status, 200);
    assert_eq!(reply["result"]["kind"], "message", "{reply}");
    assert_eq!(listed, 200, "the operator's token from the config: {list}");
    assert!(list["result"]["tasks"].is_array(), "{list}");
    assert!(scratch.path().join("state/tasks.db").exists());
}

/// Starts `cmd` (a `fleetdash run`) and waits for the address its intake says it listens on.
fn run_with_intake(
    mut cmd: Command,
) -> (
    std::process::Child,
    Result<SocketAddr, std::sync::mpsc::RecvTimeoutError>,
) {
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if let Some(url) = line.strip_prefix("fleetdash: intake listening on ") {
                let _ = tx.send(url.trim().to_string());
            }
        }
    });
    let addr = rx.recv_timeout(HANG_BUDGET).map(|url| {
        url.trim_start_matches("http://")
            .trim_end_matches('/')
            .parse()
            .unwrap()
    });
    (child, addr)
}

/// The names the tests use are the registry's: nothing else may own or be tagged.
#[test]
fn assignments_name_registry_agents_only() {
    let hub = Hub::start();
    let before = hub.contents();
    let r = sdk(
        Sdk::V1,
        &hub.url(),
        Some("sol"),
        json!([{"op": "send", "text": "ASSIGN to bob: a stranger's task"}]),
    );
    let e = err(&r[0]);
    assert!(e["message"].as_str().unwrap().contains("bob"), "{e}");
    assert_eq!(hub.contents(), before);
    let names: HashSet<&str> = AGENTS.iter().map(|(a, _)| *a).collect();
    assert!(!names.contains("bob"));
}

/// `fleetdash run` killed with SIGKILL in the middle of a burst of reports from concurrent
/// clients over HTTP: every report that got its answer is in the database, and the database
/// opens clean. (The intake answers only after the queue's commit is on disk.)
#[test]
fn a_kill_during_a_burst_of_reports_loses_no_answered_report() {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicBool, Ordering};
    let scratch = support::Scratch::new();
    let mut body = "[intake]\nlisten = \"127.0.0.1:0\"\nrate_per_minute = 1000000\n\n\
                    [work_queue]\ndb = \"state/tasks.db\"\n\n"
        .to_string();
    for (agent, _) in AGENTS {
        body.push_str(&format!(
            "[[agents]]\nname = \"{agent}\"\nendpoint = \"{}\"\ndialect = \"v1\"\n\
             report_token_env = \"{}_REPORT_TOKEN\"\n\n",
            support::refused_endpoint(),
            agent.to_uppercase()
        ));
    }
    let config = scratch.config(&body);
    let mut cmd = support::fleetdash();
    cmd.args(["run", "--config"]).arg(&config);
    for (agent, token) in AGENTS {
        cmd.env(format!("{}_REPORT_TOKEN", agent.to_uppercase()), token);
    }
    let (mut child, intake) = run_with_intake(cmd);
    let addr = intake.expect("fleetdash run never said where the intake listens");

    // Two clients per agent, each sending heartbeats with ids of its own until the hub is gone.
    const KILL_AFTER: usize = 300;
    let answered: Arc<Mutex<Vec<String>>> = Arc::default();
    let gone = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = AGENTS
        .iter()
        .flat_map(|(agent, token)| (0..2).map(move |c| (*agent, *token, c)))
        .map(|(agent, token, c)| {
            let (answered, gone) = (answered.clone(), gone.clone());
            std::thread::spawn(move || {
                for i in 0.. {
                    if gone.load(Ordering::SeqCst) {
                        break;
                    }
                    let id = format!("{agent}-{c}-{i}");
                    let body = v1_send(&id, json!({"parts": [{"data": {"report": "heartbeat"}}]}));
                    let head = format!(
                        "POST / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\
                         A2A-Version: 1.0\r\nContent-Type: application/json\r\n\
                         Connection: close\r\nContent-Length: {}\r\n\r\n",
                        body.len()
                    );
                    // A connection the kill cut is no answer; an answer is a 200 with a result.
                    let Ok(mut s) = TcpStream::connect(addr) else {
                        break;
                    };
                    s.set_read_timeout(Some(HANG_BUDGET)).unwrap();
                    if s.write_all(head.as_bytes()).is_err()
                        || s.write_all(body.as_bytes()).is_err()
                    {
                        break;
                    }
                    let mut raw = Vec::new();
                    let _ = s.read_to_end(&mut raw);
                    let text = String::from_utf8_lossy(&raw);
                    if text.starts_with("HTTP/1.1 200") && text.contains("\"result\"") {
                        answered.lock().unwrap().push(id);
                    }
                }
            })
        })
        .collect();
    let deadline = std::time::Instant::now() + HANG_BUDGET;
    while answered.lock().unwrap().len() < KILL_AFTER {
        assert!(
            std::time::Instant::now() < deadline,
            "only {} reports answered",
            answered.lock().unwrap().len()
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    // Mid-burst: the clients are still sending.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGKILL);
    }
    let _ = child.wait();
    gone.store(true, Ordering::SeqCst);
    for c in clients {
        c.join().unwrap();
    }
    let answered = answered.lock().unwrap().clone();
    assert!(answered.len() >= KILL_AFTER);

    let db = scratch.path().join("state/tasks.db");
    let conn = rusqlite::Connection::open(&db).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    let mut stored = std::collections::HashSet::new();
    let mut stmt = conn
        .prepare("SELECT message_id FROM events WHERE kind = 'heartbeat'")
        .unwrap();
    for id in stmt.query_map([], |r| r.get::<_, String>(0)).unwrap() {
        stored.insert(id.unwrap());
    }
    let lost: Vec<&String> = answered.iter().filter(|id| !stored.contains(*id)).collect();
    assert!(
        lost.is_empty(),
        "{} of {} answered reports are not in the database: {:?}",
        lost.len(),
        answered.len(),
        &lost[..lost.len().min(5)]
    );
    eprintln!(
        "{} reports answered before the kill, {} stored (some stored reports lost their answer \
         to the kill)",
        answered.len(),
        stored.len()
    );
}

/// Issue 21, found by hostile clients: a key glued to the word before it (an escaped newline in
/// JSON text, a URL-encoded `=`, a letter, `_`) and invisible characters (a word joiner, the
/// Arabic letter mark, a soft hyphen, a tag) in a report's free text. None reaches the answer,
/// the row, or the queue's file and its WAL.
#[test]
fn glued_secrets_and_invisible_characters_never_reach_the_answer_or_the_file() {
    let hub = Hub::start();
    let t = hub.assign(
        "Rotate\u{2060} the\u{061C} LAB\u{00AD} keys\u{E0041}",
        Some("sol"),
        &[],
    );
    assert_eq!(hub.row(&t).title, "Rotate the LAB keys");
    let glued = [
        "key:\\nsk-proj-PLANTEDabcdefghijklmnop0123456789",
        "url?t%3Dghp_PLANTEDabcdefghijklmnopqrstuvwxyz0123",
        "xAKIAPLANTED234567ABC",
        "id_glpat-PLANTEDabcdefghijklmn",
    ];
    let cause = format!("mira\u{2060}'s\u{061C} review: {}", glued.join(" "));
    let a = post(
        &hub,
        Some("sol"),
        Some("1.0"),
        &v1_send(
            "m-glued",
            json!({"taskId": t, "parts": [{"text": format!("ACK blocked on {cause}")}]}),
        ),
    );
    assert_eq!(a.status, 200, "{}", a.body);
    let answer = a.json();
    let blocked = &answer["result"]["task"]["metadata"][QUEUE_KEY]["ack"];
    assert_eq!(blocked["shape"], "blocked", "{answer}");
    let invisible = ['\u{2060}', '\u{061C}', '\u{00AD}', '\u{E0041}'];
    for text in [a.body.clone(), hub.contents()] {
        assert!(!text.contains("PLANTED"), "a glued key was kept: {text}");
        assert!(
            !text.contains(invisible),
            "an invisible character was kept: {text:?}"
        );
    }
    assert!(
        !String::from_utf8_lossy(&hub.bytes()).contains("PLANTED"),
        "a glued key reached the queue's file or its WAL"
    );
    let on = blocked["on"].as_str().unwrap_or_default();
    assert!(on.starts_with("mira's review: key:"), "{blocked}");
    assert_eq!(on.matches("[redacted]").count(), glued.len(), "{on}");
}

/// Issue 21: CancelTask made up the messageId `cancel-<task>` in the agent's own namespace, so
/// an agent that had used that id got `result: null` and the task stayed WORKING. A cancel is
/// an event of its own: it cancels, and answers the Task.
#[test]
fn cancel_task_cancels_even_when_the_agent_used_its_old_made_up_id() {
    let hub = Hub::start();
    let t = hub.assign("Cancel me", Some("sol"), &[]);
    let own = post(
        &hub,
        Some("sol"),
        Some("1.0"),
        &v1_send(
            &format!("cancel-{t}"),
            json!({"taskId": t, "parts": [{"text": "ACK owning"}]}),
        ),
    );
    assert_eq!(own.status, 200, "{}", own.body);
    assert_eq!(hub.row(&t).state.as_str(), "TASK_STATE_WORKING");
    let cancel =
        json!({"jsonrpc": "2.0", "id": 7, "method": "CancelTask", "params": {"id": t}}).to_string();
    let a = post(&hub, Some("sol"), Some("1.0"), &cancel);
    assert_eq!(a.status, 200, "{}", a.body);
    let answer = a.json();
    assert_eq!(answer["result"]["id"], t, "{answer}");
    assert_eq!(
        answer["result"]["status"]["state"], "TASK_STATE_CANCELED",
        "{answer}"
    );
    assert_eq!(hub.row(&t).state.as_str(), "TASK_STATE_CANCELED");
    // A second cancel finds nothing left to cancel.
    let again = post(&hub, Some("sol"), Some("1.0"), &cancel).json();
    assert_eq!(again["error"]["code"], -32002, "{again}");
}

/// Issue 21: any agent's token could read every agent's tasks. An agent reads the tasks it
/// owns, is tagged on or assigned; to it another agent's task is "not found", in GetTask,
/// ListTasks and CancelTask alike.
#[test]
fn an_agent_reads_only_its_own_tasks() {
    let hub = Hub::start();
    let sols = hub.assign("Sol's task, Mira tagged", Some("sol"), &["mira"]);
    let other = hub.assign("Nova's task", Some("nova"), &[]);
    let call = |agent: &str, method: &str, params: Value| {
        let body =
            json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
        post(&hub, Some(agent), Some("1.0"), &body).json()
    };
    let listed = |agent: &str| -> Vec<String> {
        call(agent, "ListTasks", json!({}))["result"]["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(listed("sol"), vec![sols.clone()]);
    assert_eq!(listed("mira"), vec![sols.clone()]);
    assert_eq!(listed("nova"), vec![other.clone()]);
    assert!(listed("echo").is_empty());
    assert_eq!(
        call("mira", "GetTask", json!({"id": sols}))["result"]["id"],
        sols
    );
    for (agent, task) in [("echo", &sols), ("sol", &other)] {
        let got = call(agent, "GetTask", json!({"id": task}));
        assert_eq!(got["error"]["code"], -32001, "{agent} reads {task}: {got}");
        let cancel = call(agent, "CancelTask", json!({"id": task}));
        assert_eq!(
            cancel["error"]["code"], -32001,
            "{agent} cancels {task}: {cancel}"
        );
    }
    assert_eq!(hub.row(&other).state.as_str(), "TASK_STATE_SUBMITTED");
}

/// Issue 21: the operator has a token of its own that reads every agent's tasks, and reports
/// nothing: its SendMessage and CancelTask are 403 and write nothing.
#[test]
fn the_operators_token_reads_every_task_and_reports_nothing() {
    let hub = Hub::start();
    let sols = hub.assign("Sol's task", Some("sol"), &[]);
    let novas = hub.assign("Nova's task", Some("nova"), &[]);
    let call = |method: &str, params: Value| {
        let body =
            json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
        post(&hub, Some("operator"), Some("1.0"), &body)
    };
    let listed = call("ListTasks", json!({})).json();
    let mut ids: Vec<&str> = listed["result"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    ids.sort_unstable();
    let mut want = vec![sols.as_str(), novas.as_str()];
    want.sort_unstable();
    assert_eq!(ids, want);
    assert_eq!(
        call("GetTask", json!({"id": novas})).json()["result"]["id"],
        novas
    );
    let before = hub.contents();
    let cancel = call("CancelTask", json!({"id": sols}));
    assert_eq!(cancel.status, 403, "{}", cancel.body);
    assert_eq!(cancel.json()["agent_status"]["name"], "PERMISSION_DENIED");
    let send = json!({"jsonrpc": "2.0", "id": 2, "method": "SendMessage", "params": {"message": {
        "messageId": "op-1", "role": "ROLE_USER",
        "parts": [{"text": format!("DONE {sols}")}]}}})
    .to_string();
    let sent = post(&hub, Some("operator"), Some("1.0"), &send);
    assert_eq!(sent.status, 403, "{}", sent.body);
    assert_eq!(
        hub.contents(),
        before,
        "the operator's token wrote something"
    );
    assert_eq!(hub.row(&sols).state.as_str(), "TASK_STATE_SUBMITTED");
}

/// Whether the server closed `s` (read gives the end, or a reset) before HANG_BUDGET ran out.
fn closed_by_server(mut s: TcpStream) -> bool {
    s.set_read_timeout(Some(HANG_BUDGET)).unwrap();
    let mut buf = [0u8; 1024];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

/// Issue 32: a notification (a request without an id) was answered 204 and dropped; JSON-RPC
/// 2.0 says the server processes it and does not reply. Now a report sent as one is applied,
/// durably and once per messageId, and nothing is answered but HTTP's 204.
#[test]
fn a_notification_is_applied_once_and_never_answered() {
    let hub = Hub::start();
    let t = hub.assign("Applied without an answer", Some("sol"), &[]);
    let events = hub.events();
    let mut notification: Value =
        serde_json::from_str(&v03_send("note-1", text(&format!("DONE {t}")))).unwrap();
    notification.as_object_mut().unwrap().remove("id");
    let notification = notification.to_string();
    for _ in 0..2 {
        let a = post(&hub, Some("sol"), None, &notification);
        assert_eq!((a.status, a.body.as_str()), (204, ""), "never answered");
    }
    assert_eq!(hub.row(&t).state.as_str(), "TASK_STATE_COMPLETED");
    assert_eq!(hub.events(), events + 1, "applied once for its messageId");
    // A v1.0 heartbeat as a notification, the same.
    let mut beat: Value = serde_json::from_str(&v1_send(
        "beat-1",
        json!({"parts": [{"data": {"report": "heartbeat"}}]}),
    ))
    .unwrap();
    beat.as_object_mut().unwrap().remove("id");
    let a = post(&hub, Some("nova"), Some("1.0"), &beat.to_string());
    assert_eq!((a.status, a.body.as_str()), (204, ""));
    assert_eq!(hub.events(), events + 2, "the heartbeat was applied");
}

/// Issue 32: five concurrent CancelTask on one task answered one Task and four -32602 (invalid
/// params); A2A says a task that can no longer be canceled is -32002 TaskNotCancelableError.
#[test]
fn the_losers_of_a_cancel_race_are_told_the_task_is_not_cancelable() {
    let hub = Arc::new(Hub::start());
    let t = hub.assign("Cancelled five times at once", Some("sol"), &[]);
    let cancel = json!({"jsonrpc": "2.0", "id": "c", "method": "CancelTask", "params": {"id": t}})
        .to_string();
    let barrier = Arc::new(std::sync::Barrier::new(5));
    let racers: Vec<_> = (0..5)
        .map(|_| {
            let (hub, cancel, barrier) = (hub.clone(), cancel.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                post(&hub, Some("sol"), Some("1.0"), &cancel).json()
            })
        })
        .collect();
    let answers: Vec<Value> = racers.into_iter().map(|r| r.join().unwrap()).collect();
    let won = answers.iter().filter(|a| a["result"]["id"] == t).count();
    let lost: Vec<&Value> = answers
        .iter()
        .filter(|a| a.get("error").is_some())
        .collect();
    assert_eq!(won, 1, "{answers:#?}");
    assert_eq!(lost.len(), 4, "{answers:#?}");
    for a in lost {
        assert_eq!(a["error"]["code"], -32002, "{a}");
        assert!(
            a["error"]["message"]
                .as_str()
                .unwrap()
                .contains("TASK_STATE_CANCELED"),
            "{a}"
        );
    }
    assert_eq!(hub.row(&t).state.as_str(), "TASK_STATE_CANCELED");
}

/// Issue 21, found by hostile clients: headers sent a byte at a time held a connection for
/// ever (300 of them, 300 descriptors). Headers not read within `header_timeout` close it.
/// Issue 32: past `max_unauthenticated_connections`, a newcomer closes the connection idle the
/// longest (it was the newcomer that was closed, by address, before), and is answered.
#[test]
fn slow_headers_are_cut_and_make_room_for_a_client_that_speaks() {
    let hub = Hub::with_limits(IntakeConfig {
        header_timeout: std::time::Duration::from_secs(1),
        ..IntakeConfig::default()
    });
    let mut slow = TcpStream::connect(hub.addr).unwrap();
    slow.write_all(b"POST / HTTP/1.1\r\nHo").unwrap();
    assert!(
        closed_by_server(slow),
        "half-sent headers were held past the header deadline"
    );

    // A header deadline far away: only making room closes a connection here.
    let hub = Hub::with_limits(IntakeConfig {
        max_unauthenticated_connections: 3,
        header_timeout: std::time::Duration::from_secs(600),
        ..IntakeConfig::default()
    });
    let mut idle: Vec<TcpStream> = Vec::new();
    for _ in 0..3 {
        let mut s = TcpStream::connect(hub.addr).unwrap();
        s.write_all(b"POST / HTTP/1.1\r\nHo").unwrap();
        idle.push(s);
        // Accepted in the order they connected.
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let get = json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": "q_x"}})
        .to_string();
    let answer = post(&hub, Some("sol"), None, &get);
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(answer.json()["error"]["code"], -32001, "{}", answer.body);
    let first = idle.remove(0);
    assert!(
        closed_by_server(first),
        "the slow connection idle the longest was kept"
    );
    for s in &idle {
        s.set_read_timeout(Some(std::time::Duration::from_millis(200)))
            .unwrap();
        let mut probe = [0u8; 1];
        let mut reader: &TcpStream = s;
        assert!(
            reader.read(&mut probe).is_err(),
            "a newer slow connection was closed too"
        );
    }
}

/// Issue 21, measured: a slowloris from many peer addresses against `fleetdash run` under a
/// lowered open-files limit (128, as `prlimit` sets it). Before, the intake took connections
/// until the process ran out of descriptors, and the collector could no longer write
/// status.json ("Too many open files"). Now the intake holds at most half the limit (64),
/// closes the rest at once, the snapshot keeps being written through the flood, and once the
/// header deadline cuts the slow ones a report is answered again. Prints the figures.
#[test]
fn a_slowloris_under_a_low_open_files_limit_leaves_the_collector_its_files() {
    const LIMIT: usize = 128;
    const PEERS: u8 = 10;
    const PER_PEER: usize = 30;
    let scratch = support::Scratch::new();
    let config = scratch.config(
        "[intake]\nlisten = \"127.0.0.1:0\"\nheader_timeout = \"4s\"\n\n\
         [work_queue]\ndb = \"state/tasks.db\"\n\n[cadence]\nqueue = \"1s\"\n\n\
         [[agents]]\nname = \"sol\"\nendpoint = \"http://127.0.0.1:9/\"\ndialect = \"v1\"\n\
         report_token_env = \"SOL_REPORT_TOKEN\"\n",
    );
    let mut cmd = Command::new("prlimit");
    cmd.arg(format!("--nofile={LIMIT}:{LIMIT}"))
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_fleetdash"))
        .args(["run", "--config"])
        .arg(&config)
        .env("FLEETDASH_LOG", "warn")
        .env("SOL_REPORT_TOKEN", token("sol"));
    let (mut child, intake, log) = run_with_intake_logged(cmd);
    let addr = intake.expect("fleetdash run never said where the intake listens");
    let status = scratch.path().join("out/status.json");
    let generated_at = || -> Option<String> {
        let v: Value = serde_json::from_slice(&std::fs::read(&status).ok()?).ok()?;
        v["generated_at"].as_str().map(str::to_string)
    };
    // Half-sent headers from PEERS loopback addresses, PER_PEER each (within the per-peer
    // bound, so only the limit-derived ceiling holds them back).
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut slow: Vec<TcpStream> = Vec::new();
    for peer in 0..PEERS {
        for _ in 0..PER_PEER {
            let connected = rt.block_on(async {
                let socket = tokio::net::TcpSocket::new_v4()?;
                socket.bind(SocketAddr::from(([127, 0, 0, 2 + peer], 0)))?;
                socket.connect(addr).await?.into_std()
            });
            let Ok(s) = connected else { continue };
            s.set_nonblocking(false).unwrap();
            let mut s = s;
            let _ = s.write_all(b"POST / HTTP/1.1\r\nHo");
            slow.push(s);
        }
    }
    let attempted = slow.len();
    // Which of them the intake closed at once: a read sees the end (or a reset).
    std::thread::sleep(std::time::Duration::from_millis(500));
    let closed = slow
        .iter()
        .filter(|s| {
            s.set_read_timeout(Some(std::time::Duration::from_millis(20)))
                .unwrap();
            let mut probe = [0u8; 1];
            let mut reader: &TcpStream = s;
            match reader.read(&mut probe) {
                Ok(0) => true,
                Ok(_) => false,
                Err(e) => !matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ),
            }
        })
        .count();
    let held = attempted - closed;
    // The snapshot is still written while the slow connections are held.
    let before = generated_at();
    let mut renewed = false;
    let deadline = std::time::Instant::now() + support::HANG_BUDGET;
    while std::time::Instant::now() < deadline {
        if generated_at().is_some_and(|g| Some(&g) != before.as_ref()) {
            renewed = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    // After the header deadline cuts them, a report is answered again.
    let hb = v03_send("after-flood", text("HEARTBEAT idle"));
    let head = format!(
        "POST / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        token("sol"),
        hb.len()
    );
    let mut answered = None;
    let deadline = std::time::Instant::now() + support::HANG_BUDGET;
    while std::time::Instant::now() < deadline && answered.is_none() {
        if let Ok(a) = std::panic::catch_unwind(|| exchange(addr, &head, hb.as_bytes()))
            && a.status == 200
        {
            answered = Some(a.status);
        } else {
            std::thread::sleep(std::time::Duration::from_millis(250));
        }
    }
    drop(slow);
    let _ = child.kill();
    let _ = child.wait();
    let log = log.lock().unwrap().join("\n");
    println!(
        "slowloris under an open-files limit of {LIMIT}: {attempted} connections from {PEERS} \
         peers, {held} held, {closed} closed at once; status.json renewed during the flood: \
         {renewed}; a report answered after the header deadline: {answered:?}"
    );
    assert!(
        !log.contains("Too many open files"),
        "the process ran out of descriptors:\n{log}"
    );
    assert!(
        log.contains("lowered to 64"),
        "the ceiling was not said:\n{log}"
    );
    assert!(held <= LIMIT / 2, "{held} held past half the limit");
    assert!(
        closed >= attempted - LIMIT / 2,
        "{closed} of {attempted} closed"
    );
    assert!(
        renewed,
        "status.json was not written during the flood:\n{log}"
    );
    assert_eq!(
        answered,
        Some(200),
        "no report answered after the flood:\n{log}"
    );
}

/// As [`run_with_intake`], keeping every line the process writes on stderr.
fn run_with_intake_logged(
    mut cmd: Command,
) -> (
    std::process::Child,
    Result<SocketAddr, std::sync::mpsc::RecvTimeoutError>,
    Arc<std::sync::Mutex<Vec<String>>>,
) {
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let log: Arc<std::sync::Mutex<Vec<String>>> = Arc::default();
    let kept = log.clone();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if let Some(url) = line.strip_prefix("fleetdash: intake listening on ") {
                let _ = tx.send(url.trim().to_string());
            }
            kept.lock().unwrap().push(line);
        }
    });
    let addr = rx.recv_timeout(HANG_BUDGET).map(|url| {
        url.trim_start_matches("http://")
            .trim_end_matches('/')
            .parse()
            .unwrap()
    });
    (child, addr, log)
}

/// A real snapshot to answer from, and the transitions log beside it: `fleetdash collect` over
/// one agent that refuses connections.
fn collected_snapshot() -> (fleetdash_model::Snapshot, Vec<u8>) {
    let scratch = support::Scratch::new();
    let config = scratch.config(&format!(
        "[[agents]]\nname = \"vega\"\nendpoint = \"{}\"\ndialect = \"v1\"\n",
        support::refused_endpoint()
    ));
    support::assert_success(&scratch.collect(&config));
    let log = std::fs::read(scratch.path().join("state").join(TRANSITIONS)).unwrap();
    (scratch.snapshot(), log)
}

const TRANSITIONS: &str = fleetdash::write::transitions::FILE_NAME;

/// The text and data parts of an answer, as either SDK parsed them.
fn answer_parts(message: &Value) -> (String, Value) {
    let parts = message["parts"].as_array().expect("parts");
    let text = parts
        .iter()
        .find_map(|p| p["text"].as_str())
        .expect("a text part")
        .to_string();
    let data = parts
        .iter()
        .find_map(|p| p.get("data"))
        .expect("a data part")
        .clone();
    (text, data)
}

/// Issue 25: the hub agent (`role = "hub"`) and the operator ask "status" through the official
/// SDK clients of both dialects, as text or as data, and get the glance: the verdict and the
/// needs-you lines in the page's words, and the same as data with each non-green element's
/// key, band and ASC, the snapshot's age. Another agent's token is refused (403, the ASC
/// envelope); nothing is written to the queue by a question.
#[test]
fn the_hub_agent_and_the_operator_ask_the_fleet_status_in_both_dialects() {
    let hub = Hub::start();
    let (snapshot, _) = collected_snapshot();
    hub.write_snapshot(&snapshot);
    let before = hub.contents();
    let v1 = sdk(
        Sdk::V1,
        &hub.url(),
        Some(hub::HUB_AGENT),
        json!([{"op": "send", "text": "status"}, {"op": "send", "data": {"query": "status"}}]),
    );
    let v03 = sdk(
        Sdk::V03,
        &hub.url(),
        Some("operator"),
        json!([{"op": "send", "text": "status"}]),
    );
    let answers = [
        ("v1.0 text, the hub agent", &ok(&v1[0])["message"]),
        ("v1.0 data, the hub agent", &ok(&v1[1])["message"]),
        ("v0.3 text, the operator", ok(&v03[0])),
    ];
    for (what, message) in answers {
        let (text, data) = answer_parts(message);
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].starts_with("✖ "),
            "{what}: the verdict first: {text}"
        );
        assert!(
            lines.iter().any(|l| l.starts_with("✖ agent vega · ")),
            "{what}: vega's needs-you line: {text}"
        );
        assert!(
            lines.last().is_some_and(
                |l| l.starts_with("Snapshot written ") && l.ends_with("Times are UTC.")
            ),
            "{what}: {text}"
        );
        assert_eq!(data["verdict"]["band"], "red", "{what}: {data:#}");
        let vega = data["elements"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["key"] == "agent:vega")
            .unwrap_or_else(|| panic!("{what}: vega among the elements: {data:#}"));
        assert_eq!(vega["band"], "red");
        assert!(vega["agent_status"]["name"].is_string(), "{vega}");
        assert_eq!(data["stale"], false, "{what}: {data:#}");
        // A number (protobuf's Value, under the v1.0 SDK, has only doubles).
        assert!(data["snapshot"]["age_s"].is_number(), "{what}: {data:#}");
        assert_eq!(
            data["snapshot"]["generated_at"],
            snapshot
                .generated_at
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        );
    }
    assert_eq!(ok(&v03[0])["role"], "agent");
    // Another agent may not ask: 403 with the ASC envelope, through the SDK and raw.
    let refused = sdk(
        Sdk::V1,
        &hub.url(),
        Some("sol"),
        json!([{"op": "send", "text": "status"}]),
    );
    let e = err(&refused[0]);
    assert!(
        e["message"].as_str().unwrap_or_default().contains("403"),
        "{e}"
    );
    let raw = post(&hub, Some("sol"), None, &v03_send("q-1", text("status")));
    assert_eq!(raw.status, 403, "{}", raw.body);
    assert_eq!(raw.json()["agent_status"]["name"], "PERMISSION_DENIED");
    assert_eq!(hub.contents(), before, "a question writes nothing");
}

/// Issue 25: "changes since 14:00" (text, in UTC) or `{"since": RFC 3339}` (data) answers the
/// band changes after the moment from the transitions log, newest first, through both SDKs;
/// a time that cannot be read is the caller's mistake (-32602, naming the forms).
#[test]
fn the_hub_agent_asks_what_changed_since_a_moment_in_both_dialects() {
    let hub = Hub::start();
    let (snapshot, log) = collected_snapshot();
    hub.write_state_file(TRANSITIONS, &log);
    let before = snapshot.generated_at - chrono::Duration::minutes(1);
    let rfc = before.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let v1 = sdk(
        Sdk::V1,
        &hub.url(),
        Some(hub::HUB_AGENT),
        json!([{"op": "send", "data": {"since": rfc}}, {"op": "send", "text": "since lunch"}]),
    );
    let v03 = sdk(
        Sdk::V03,
        &hub.url(),
        Some("operator"),
        json!([{"op": "send", "text": format!("changes since {}", before.format("%H:%M"))}]),
    );
    for (what, message) in [("v1.0", &ok(&v1[0])["message"]), ("v0.3", ok(&v03[0]))] {
        let (text, data) = answer_parts(message);
        assert!(
            text.lines().any(|l| l.contains("✖ agent vega: new → fail")),
            "{what}: {text}"
        );
        let vega = data["changes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["key"] == "agent:vega")
            .unwrap_or_else(|| panic!("{what}: {data:#}"));
        assert_eq!(vega["to"], "red", "{what}");
    }
    let e = err(&v1[1]);
    assert!(
        e["message"]
            .as_str()
            .unwrap_or_default()
            .contains("expected a time of day in UTC"),
        "{e}"
    );
    // A moment after every change: none.
    let later = snapshot.generated_at + chrono::Duration::seconds(1);
    let none = sdk(
        Sdk::V1,
        &hub.url(),
        Some("operator"),
        json!([{"op": "send", "data": {"query": "changes", "since": later.to_rfc3339()}}]),
    );
    let (text, _) = answer_parts(&ok(&none[0])["message"]);
    assert!(text.starts_with("No band changed since "), "{text}");
}

/// Issue 45: "report since <moment>" (text) or `{"query": "report", "since": ...}` (data)
/// answers the report of the period built from the state dir, through both SDKs, as words and
/// the `Report` as data; a bare "report" covers the time since the last scheduled report ended.
/// A moment it cannot read, or after now, is the caller's mistake (-32602); another agent may
/// not ask (403).
#[test]
fn the_hub_agent_asks_for_the_report_of_a_period_in_both_dialects() {
    let hub = Hub::start();
    let (snapshot, log) = collected_snapshot();
    let t0 = snapshot.generated_at;
    hub.write_snapshot(&snapshot);
    hub.write_state_file(
        TRANSITIONS,
        &support::report::with_flap_and_recovery(&log, t0),
    );
    let since =
        support::report::since_before_all(t0).to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let v1 = sdk(
        Sdk::V1,
        &hub.url(),
        Some(hub::HUB_AGENT),
        json!([
            {"op": "send", "data": {"query": "report", "since": since}},
            {"op": "send", "text": "report since lunch"},
        ]),
    );
    let v03 = sdk(
        Sdk::V03,
        &hub.url(),
        Some("operator"),
        json!([{"op": "send", "text": format!("report since {since}")}]),
    );
    for (what, message) in [("v1.0", &ok(&v1[0])["message"]), ("v0.3", ok(&v03[0]))] {
        let (text, data) = answer_parts(message);
        support::report::assert_whole(what, &text, &data);
    }
    let e = err(&v1[1]);
    assert!(
        e["message"]
            .as_str()
            .unwrap_or_default()
            .contains("expected a time of day in UTC"),
        "{e}"
    );
    let ahead = chrono::Utc::now() + chrono::Duration::hours(1);
    let raw = post(
        &hub,
        Some(hub::HUB_AGENT),
        None,
        &v03_send("r-1", text(&format!("report since {}", ahead.to_rfc3339()))),
    );
    assert_eq!(raw.json()["error"]["code"], -32602, "{}", raw.body);

    hub.write_state_file(
        fleetdash::report::state::FILE_NAME,
        &support::report::state_covering_until(t0),
    );
    let bare = sdk(
        Sdk::V1,
        &hub.url(),
        Some(hub::HUB_AGENT),
        json!([{"op": "send", "text": "report"}]),
    );
    let (text, data) = answer_parts(&ok(&bare[0])["message"]);
    support::report::assert_since_last_report("v1.0, a bare report", &text, &data, t0);
    let refused = post(
        &hub,
        Some("sol"),
        None,
        &v03_send("r-2", hub::text("report")),
    );
    assert_eq!(refused.status, 403, "{}", refused.body);
}

/// Issue 25: "queue" answers the work queue as `fleetdash tasks` shows it (its column heads,
/// one line per task, red first), and as data, through both SDKs; another agent may not ask.
#[test]
fn the_hub_agent_asks_for_the_work_queue_as_fleetdash_tasks_shows_it() {
    let hub = Hub::start();
    let owned = hub.assign("Rotate the LAB logs", Some("sol"), &[]);
    let untaken = hub.assign("Renew the cert", None, &["nova"]);
    let v1 = sdk(
        Sdk::V1,
        &hub.url(),
        Some(hub::HUB_AGENT),
        json!([{"op": "send", "text": "queue"}]),
    );
    let v03 = sdk(
        Sdk::V03,
        &hub.url(),
        Some("operator"),
        json!([{"op": "send", "data": {"query": "queue"}}]),
    );
    for (what, message) in [("v1.0", &ok(&v1[0])["message"]), ("v0.3", ok(&v03[0]))] {
        let (text, data) = answer_parts(message);
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].starts_with("Work queue: 2 tasks ("),
            "{what}: {text}"
        );
        assert!(
            lines[1].starts_with("ID ") && lines[1].ends_with("REASON  TITLE"),
            "{what}: {text}"
        );
        for (id, title) in [
            (&owned, "Rotate the LAB logs"),
            (&untaken, "Renew the cert"),
        ] {
            assert!(
                lines
                    .iter()
                    .any(|l| l.starts_with(id.as_str()) && l.ends_with(&format!("\"{title}\""))),
                "{what}: {id}'s line: {text}"
            );
        }
        let ids: HashSet<&str> = data["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_str().unwrap())
            .collect();
        assert_eq!(
            ids,
            HashSet::from([owned.as_str(), untaken.as_str()]),
            "{what}"
        );
    }
    let raw = post(&hub, Some("nova"), None, &v03_send("q-2", text("queue")));
    assert_eq!(raw.status, 403, "{}", raw.body);
}

/// docs/agents.md's Python example, run as written with the official v1.0 SDK against a real
/// intake as the hub agent: it prints the glance's words.
#[test]
fn the_agents_doc_example_asks_the_intake_and_prints_the_glance() {
    let hub = Hub::start();
    let (snapshot, _) = collected_snapshot();
    hub.write_snapshot(&snapshot);
    let doc = std::fs::read_to_string(repo_root().join("docs/agents.md")).unwrap();
    let example = doc
        .split("```python\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("docs/agents.md has a python block");
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("ask.py");
    std::fs::write(&script, example).unwrap();
    let python = repo_root().join(".venv/a2a-v1/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/setup-test-deps (the README's test command does)",
        python.display()
    );
    let out = Command::new(python)
        .arg(&script)
        .env("FLEETDASH_INTAKE", hub.url())
        .env("FLEETDASH_TOKEN", token(hub::HUB_AGENT))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.starts_with("✖ "), "{stdout}");
    assert!(stdout.contains("✖ agent vega · "), "{stdout}");
    assert!(stdout.trim_end().ends_with("Times are UTC."), "{stdout}");
}

/// Issue 25: a question is a read. The hub agent asking `status` spends its read budget, not
/// its reports': with one report a minute, three questions are answered and its report still
/// goes through once (the next one is 429, the reports' own limit).
#[test]
fn the_hub_agents_questions_do_not_use_up_its_reports() {
    let hub = Hub::with_limits(IntakeConfig {
        rate_per_minute: 1,
        ..IntakeConfig::default()
    });
    let (snapshot, _) = collected_snapshot();
    hub.write_snapshot(&snapshot);
    for n in 0..3 {
        let asked = post(
            &hub,
            Some(hub::HUB_AGENT),
            None,
            &v03_send(&format!("q-{n}"), text("status")),
        );
        assert_eq!(asked.status, 200, "question {n}: {}", asked.body);
        assert!(asked.body.contains("Snapshot written"), "{}", asked.body);
    }
    let beat = json!({"parts": [{"kind": "data", "data": {"report": "heartbeat"}}]});
    let first = post(
        &hub,
        Some(hub::HUB_AGENT),
        None,
        &v03_send("hb-1", beat.clone()),
    );
    assert_eq!(first.status, 200, "{}", first.body);
    let second = post(&hub, Some(hub::HUB_AGENT), None, &v03_send("hb-2", beat));
    assert_eq!(second.status, 429, "{}", second.body);
}

//! The intake's own agent card: a hybrid of v1.0 fields and v0.3 fields, as the Python SDK
//! serves when it speaks both, so that either SDK's client finds its interface. Its skills are
//! the report kinds. Built once at start (it changes only with the address), with an ETag.

use ring::digest;
use serde_json::{Value, json};

use super::wire::{ASC_EXTENSION, QUEUE_EXTENSION};

/// The card changes only when the intake restarts somewhere else: a client may keep it a while.
pub const CACHE_CONTROL: &str = "public, max-age=300";

/// The report kinds, as skills: (id, name, what it is, text examples).
const SKILLS: &[(&str, &str, &str, &[&str])] = &[
    (
        "heartbeat",
        "Heartbeat",
        "Alive: last activity and the queue tasks in flight.",
        &["HEARTBEAT", "HEARTBEAT in-flight q_1a2b q_3c4d"],
    ),
    (
        "completion",
        "Completion",
        "A task reached a terminal state (TASK_STATE_COMPLETED, _FAILED, _CANCELED, _REJECTED).",
        &["DONE q_1a2b", "FAILED q_1a2b"],
    ),
    (
        "blocker",
        "Blocker",
        "A task is blocked on something or someone.",
        &["BLOCKED q_1a2b: LAB disk full"],
    ),
    (
        "ack",
        "ACK",
        "ACK-then-own (spec 003 §4): owning with an ETA, escalating to someone, blocked on \
         something; or yielded to the owner.",
        &[
            "ACK owning ETA 45m",
            "ACK escalating to sol",
            "ACK blocked on q_9f: LAB disk full",
            "ACK yielded",
        ],
    ),
    (
        "assign",
        "Assign",
        "A new task with an owner or tagged agents and a deadline.",
        &["ASSIGN to sol tag mira deadline 2h: Rotate the LAB logs"],
    ),
];

/// The card for an intake reachable at `url` (`http://127.0.0.1:8470/`).
pub fn card(url: &str) -> Value {
    let skills: Vec<Value> = SKILLS
        .iter()
        .map(|(id, name, description, examples)| {
            json!({"id": id, "name": name, "description": description, "tags": ["report"],
                   "examples": examples,
                   "inputModes": ["application/json", "text/plain"],
                   "outputModes": ["application/json"]})
        })
        .collect();
    json!({
        "name": "fleetdash-intake",
        "description": "The hub's report intake: agents report heartbeats, completions, \
                        blockers, ACKs and assignments here; each becomes a work-queue row \
                        (docs/reporting.md).",
        "supportedInterfaces": [
            {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
        ],
        "version": env!("CARGO_PKG_VERSION"),
        "capabilities": {
            "streaming": false,
            "pushNotifications": false,
            "extensions": [
                {"uri": ASC_EXTENSION, "required": false,
                 "description": "A task's Agent Status Code refinement (ASC 0.1) in its metadata."},
                {"uri": QUEUE_EXTENSION, "required": false,
                 "description": "The work queue's row in a task's metadata: owner, ACK, deadline, blocked-on."},
            ],
        },
        "defaultInputModes": ["application/json", "text/plain"],
        "defaultOutputModes": ["application/json"],
        "skills": skills,
        // v0.3's names for the same (the v1.0 SDK maps these onto its own).
        "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        "security": [{"bearer": []}],
        "protocolVersion": "0.3.0",
        "url": url,
        "preferredTransport": "JSONRPC",
    })
}

/// The card's bytes and their strong ETag.
pub fn rendered(url: &str) -> (String, String) {
    let body = card(url).to_string();
    let d = digest::digest(&digest::SHA256, body.as_bytes());
    let hex: String = d.as_ref()[..12]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    (body, format!("\"{hex}\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_card_is_hybrid_and_its_skills_are_the_report_kinds() {
        let c = card("http://127.0.0.1:9/");
        let ids: Vec<&str> = c["skills"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["heartbeat", "completion", "blocker", "ack", "assign"]);
        assert_eq!(c["supportedInterfaces"][0]["protocolVersion"], "1.0");
        assert_eq!(c["protocolVersion"], "0.3.0");
        assert_eq!(c["url"], "http://127.0.0.1:9/");
        let (body, etag) = rendered("http://127.0.0.1:9/");
        assert_eq!(rendered("http://127.0.0.1:9/"), (body, etag.clone()));
        assert_ne!(rendered("http://127.0.0.1:10/").1, etag);
    }
}

//! The intake's own agent card, in two shapes: v1.0's own for a client that asks with
//! `A2A-Version: 1.x`, and for one that names no version a hybrid of v1.0 fields and v0.3
//! fields, as the Python SDK serves when it speaks both, so that either SDK's client finds its
//! interface. Its skills are the report kinds, then the questions the hub agent may ask
//! ([`super::ask`]). Built once at start (it changes only with the
//! address), each with its ETag.

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

/// The v1.0 card for an intake reachable at `url` (`http://127.0.0.1:8470/`): v1.0's own
/// shape, security included (`httpAuthSecurityScheme`, `securityRequirements`), and no field
/// that only v0.3 has. Served to a client that asks with `A2A-Version: 1.x`.
pub fn card_v1(url: &str) -> Value {
    let skills: Vec<Value> = SKILLS
        .iter()
        .map(|(id, name, description, examples)| {
            json!({"id": id, "name": name, "description": description, "tags": ["report"],
            "examples": examples,
            "inputModes": ["application/json", "text/plain"],
            // A heartbeat is answered with a text message; a task report, the Task.
            "outputModes": if *id == "heartbeat" {
                json!(["text/plain"])
            } else {
                json!(["application/json"])
            }})
        })
        .chain(std::iter::once(json!({
            "id": super::ask::STATUS_SKILL,
            "name": "Fleet status",
            "description": "The hub agent (role = \"hub\") or the operator asks how the fleet is: \
                            the verdict and what needs the operator, in the page's words (text) \
                            and as data, with the snapshot's age; a stale answer says so first.",
            "tags": ["ask"],
            "examples": ["status", "{\"query\": \"status\"}"],
            "inputModes": ["text/plain", "application/json"],
            "outputModes": ["text/plain", "application/json"],
        })))
        .chain(std::iter::once(json!({
            "id": super::ask::CHANGES_SKILL,
            "name": "Fleet changes",
            "description": "The hub agent or the operator asks what changed since a moment: \
                            every band change after it, newest first, from the transitions log, \
                            in words (text) and as data.",
            "tags": ["ask"],
            "examples": ["changes since 14:00", "{\"since\": \"2026-12-02T14:00:00Z\"}"],
            "inputModes": ["text/plain", "application/json"],
            "outputModes": ["text/plain", "application/json"],
        })))
        .chain(std::iter::once(json!({
            "id": super::ask::QUEUE_SKILL,
            "name": "Work queue",
            "description": "The hub agent or the operator asks for the work queue as \
                            `fleetdash tasks` shows it: each task's owner, ACK, state, band and \
                            reason, red first.",
            "tags": ["ask"],
            "examples": ["queue", "{\"query\": \"queue\"}"],
            "inputModes": ["text/plain", "application/json"],
            "outputModes": ["text/plain", "application/json"],
        })))
        .chain(std::iter::once(json!({
            "id": super::ask::REPORT_SKILL,
            "name": "Fleet report",
            "description": format!(
                "The hub agent or the operator asks for the report of a period, as the morning \
                 report says it: what needs the operator now, what went red or amber and came \
                 back (flaps merged), red time per element against the period before, the work \
                 queue, fleetdash's own blind spots, the rest in one line, or an all-clear. \
                 Since a moment, else since the last scheduled report ended, else the last {} h.",
                crate::report::DEFAULT_SPAN_H
            ),
            "tags": ["ask"],
            "examples": [
                "report",
                "report since 07:30",
                "{\"query\": \"report\", \"since\": \"2026-12-02T07:30:00Z\"}",
            ],
            "inputModes": ["text/plain", "application/json"],
            "outputModes": ["text/plain", "application/json"],
        })))
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
        // A heartbeat is answered with a one-word text message ("recorded"); a task report
        // with the Task.
        "defaultOutputModes": ["application/json", "text/plain"],
        "skills": skills,
        "securitySchemes": {"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}},
        "securityRequirements": [{"schemes": {"bearer": {"list": []}}}],
    })
}

/// The card for a client that names no version: v1.0's fields and v0.3's side by side, as
/// the Python SDK serves when it speaks both, so that either SDK's client finds its
/// interface (v0.3's security shape, `url`, `protocolVersion`, `preferredTransport`).
pub fn card(url: &str) -> Value {
    let mut c = card_v1(url);
    c["securitySchemes"] = json!({"bearer": {"type": "http", "scheme": "bearer"}});
    let o = c.as_object_mut().expect("a card is an object");
    o.remove("securityRequirements");
    o.insert("security".into(), json!([{"bearer": []}]));
    o.insert("protocolVersion".into(), "0.3.0".into());
    o.insert("url".into(), url.into());
    o.insert("preferredTransport".into(), "JSONRPC".into());
    c
}

/// A card's bytes and their strong ETag.
pub struct Rendered {
    pub body: String,
    pub etag: String,
}

/// Both cards, rendered: (v1.0, the hybrid one).
pub fn rendered(url: &str) -> (Rendered, Rendered) {
    let render = |card: Value| {
        let body = card.to_string();
        let d = digest::digest(&digest::SHA256, body.as_bytes());
        let hex: String = d.as_ref()[..12]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        Rendered {
            body,
            etag: format!("\"{hex}\""),
        }
    };
    (render(card_v1(url)), render(card(url)))
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
        assert_eq!(
            ids,
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
        assert_eq!(c["supportedInterfaces"][0]["protocolVersion"], "1.0");
        assert_eq!(c["protocolVersion"], "0.3.0");
        assert_eq!(c["url"], "http://127.0.0.1:9/");
        let (v1, hybrid) = rendered("http://127.0.0.1:9/");
        assert_eq!(rendered("http://127.0.0.1:9/").1.etag, hybrid.etag);
        assert_ne!(rendered("http://127.0.0.1:10/").1.etag, hybrid.etag);
        assert_ne!(v1.etag, hybrid.etag);
    }

    /// Issue 21: a v1.0 card's security is v1.0's (`httpAuthSecurityScheme`,
    /// `securityRequirements`), and it carries none of v0.3's own fields.
    #[test]
    fn the_v1_card_is_v1_shaped_with_no_v03_field() {
        let c = card_v1("http://127.0.0.1:9/");
        assert_eq!(
            c["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"],
            "Bearer"
        );
        assert_eq!(
            c["securityRequirements"],
            json!([{"schemes": {"bearer": {"list": []}}}])
        );
        for v03_only in ["url", "protocolVersion", "preferredTransport", "security"] {
            assert!(c.get(v03_only).is_none(), "{v03_only}: {c}");
        }
        assert!(c["securitySchemes"]["bearer"].get("type").is_none());
        // The hybrid keeps v0.3's shape for v0.3 clients.
        let h = card("http://127.0.0.1:9/");
        assert_eq!(
            h["securitySchemes"]["bearer"],
            json!({"type": "http", "scheme": "bearer"})
        );
        assert_eq!(h["security"], json!([{"bearer": []}]));
        assert_eq!(h["supportedInterfaces"], c["supportedInterfaces"]);
    }
}

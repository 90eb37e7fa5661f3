//! Simulated A2A agents: small axum servers that speak one dialect each and can be made to
//! fail in the ways real peers fail (hang, answer slowly, serve an empty card).
//!
//! They answer exactly what the collector asks: the agent card, `SendMessage` /
//! `message/send` (v1.0 needs the `A2A-Version` header, as the official SDK enforces), and
//! `GetTask` / `tasks/get`. The real-SDK peers in `tests/peers/` keep these honest.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono::Utc;
use serde_json::{Value, json};

use crate::a2a::Wire;

/// When this process started: the frozen status time of stalled tasks.
static STARTED: std::sync::LazyLock<chrono::DateTime<Utc>> = std::sync::LazyLock::new(Utc::now);

/// One simulated agent and the way it behaves.
#[derive(Debug, Clone)]
pub struct SimAgent {
    pub name: String,
    /// The dialect it speaks. A `V1` agent also answers v0.3, as the SDK's compat mode does.
    pub speaks: Wire,
    pub skills: usize,
    /// Added before every answer.
    pub delay: Duration,
    /// Accept requests and never answer them.
    pub hang: bool,
    pub model: Option<String>,
    pub window_percent: Option<f64>,
    pub in_flight: Vec<String>,
    /// In-flight tasks that never progress: their status timestamp stays at start-up, so the
    /// stuck rule fires on them.
    pub stalled: Vec<String>,
    /// Where it appends one audit line per message it answers, like the Hermes adapter.
    pub audit_log: Option<PathBuf>,
    /// Who it records as the `peer` of those lines: the identity the collector's token has on
    /// this agent (every message a simulated agent answers comes from the collector).
    pub collector_peer: String,
}

/// The simulated agent's own rule: its window status says "near limit" from this share of the
/// limit on (what the agent reports, not what the dashboard judges by).
const NEAR_LIMIT_PERCENT: f64 = 90.0;

impl SimAgent {
    pub fn healthy(name: &str, speaks: Wire) -> SimAgent {
        SimAgent {
            name: name.to_string(),
            speaks,
            skills: 3,
            delay: Duration::ZERO,
            hang: false,
            model: None,
            window_percent: None,
            in_flight: Vec::new(),
            stalled: Vec::new(),
            audit_log: None,
            collector_peer: crate::config::defaults::COLLECTOR_PEER.to_string(),
        }
    }

    async fn pause(&self) {
        if self.hang {
            std::future::pending::<()>().await;
        }
        if !self.delay.is_zero() {
            tokio::time::sleep(self.delay).await;
        }
    }

    fn card(&self, base_url: &str) -> Value {
        let skills: Vec<Value> = (0..self.skills)
            .map(|i| {
                json!({"id": format!("skill-{i}"), "name": format!("Skill {i}"),
                             "description": "simulated skill", "tags": ["demo"]})
            })
            .collect();
        let mut card = json!({
            "name": self.name,
            "description": "fleetdash simulated agent",
            "version": "1.0.0",
            "capabilities": {"streaming": false, "pushNotifications": false},
            "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["text/plain"],
            "skills": skills,
        });
        match self.speaks {
            Wire::V1 => {
                card["supportedInterfaces"] = json!([
                    {"url": base_url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
                    {"url": base_url, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}]);
            }
            Wire::V03 | Wire::V03Content => {
                card["protocolVersion"] = json!("0.3.0");
                card["url"] = json!(base_url);
                card["preferredTransport"] = json!("JSONRPC");
            }
        }
        card
    }

    fn metadata(&self) -> Value {
        let mut md = json!({
            "last_activity_at": Utc::now().to_rfc3339(),
            "in_flight": self.in_flight,
        });
        if let Some(model) = &self.model {
            md["model"] = json!(model);
        }
        if let Some(percent) = self.window_percent {
            let resets_at = (Utc::now() + chrono::Duration::hours(2)).to_rfc3339();
            md["window"] = json!({"model": self.model, "percent": percent,
                                  "status": if percent >= NEAR_LIMIT_PERCENT { "near limit" } else { "ok" },
                                  "resets_at": resets_at});
        }
        md
    }

    fn audit(&self) {
        let Some(path) = &self.audit_log else { return };
        let line = json!({"ts": Utc::now().timestamp_millis() as f64 / 1000.0, "direction": "inbound",
                          "peer": self.collector_peer, "task_id": null, "summary": "heartbeat received"});
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut f| writeln!(f, "{line}"));
        if let Err(e) = written {
            tracing::warn!(agent = %self.name, "cannot append to the simulated audit log: {e}");
        }
    }

    /// Answers one JSON-RPC request the way a peer of its dialect would.
    fn rpc(&self, headers: &HeaderMap, request: &Value) -> Value {
        let id = request.get("id").cloned().unwrap_or(Value::Null);
        let method = request.get("method").and_then(Value::as_str).unwrap_or("");
        let v1_header = headers
            .get("a2a-version")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with('1'));
        let error = |code: i64, message: &str| json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
        let result = |r: Value| json!({"jsonrpc": "2.0", "id": id, "result": r});
        let message = request.pointer("/params/message");
        let text_parts = message.and_then(|m| m.get("parts")).is_some();
        let content = message.and_then(|m| m.get("content")).is_some();
        match (self.speaks, method) {
            (Wire::V1, "SendMessage") if !v1_header => {
                error(-32009, "A2A version '0.3' is not supported; expected '1.0'")
            }
            (Wire::V1, "SendMessage") if text_parts => {
                self.audit();
                result(
                    json!({"message": {"messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_AGENT",
                                          "parts": [{"text": "alive"}], "metadata": self.metadata()}}),
                )
            }
            (Wire::V1 | Wire::V03, "message/send") if text_parts && !v1_header => {
                self.v03_reply(&result)
            }
            (Wire::V03Content, "message/send") if content => self.v03_reply(&result),
            (_, "SendMessage" | "message/send") => error(-32602, "Invalid parameters"),
            (Wire::V1, "GetTask") | (Wire::V1 | Wire::V03 | Wire::V03Content, "tasks/get") => {
                let task_id = request
                    .pointer("/params/id")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if !self.in_flight.iter().any(|t| t == task_id) {
                    return error(-32001, "Task not found");
                }
                let state = if method == "GetTask" {
                    "TASK_STATE_WORKING"
                } else {
                    "working"
                };
                // A working task reports progress with a fresh timestamp; a stalled one never does.
                let at = if self.stalled.iter().any(|t| t == task_id) {
                    *STARTED
                } else {
                    Utc::now()
                };
                result(json!({"id": task_id, "contextId": "demo", "kind": "task",
                              "status": {"state": state, "timestamp": at.to_rfc3339()}}))
            }
            _ => error(-32601, "Method not found"),
        }
    }

    fn v03_reply(&self, result: &dyn Fn(Value) -> Value) -> Value {
        self.audit();
        result(
            json!({"kind": "message", "messageId": uuid::Uuid::new_v4().to_string(), "role": "agent",
                      "parts": [{"kind": "text", "text": "alive"}], "metadata": self.metadata()}),
        )
    }
}

async fn card_handler(agent: Arc<SimAgent>, base_url: String) -> Response {
    agent.pause().await;
    Json(agent.card(&base_url)).into_response()
}

async fn rpc_handler(
    agent: Arc<SimAgent>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    agent.pause().await;
    let reply = match serde_json::from_slice::<Value>(&body) {
        Ok(request) => agent.rpc(&headers, &request),
        Err(e) => {
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": e.to_string()}})
        }
    };
    Json(reply).into_response()
}

/// A router serving one agent at the root of its own port.
pub fn single_router(agent: SimAgent, base_url: String) -> Router {
    let agent = Arc::new(agent);
    let (a1, a2, url) = (agent.clone(), agent, base_url);
    Router::new()
        .route(
            "/.well-known/agent-card.json",
            get(move || card_handler(a1.clone(), url.clone())),
        )
        .route(
            "/",
            post(move |h: HeaderMap, b| rpc_handler(a2.clone(), h, b)),
        )
}

struct Many {
    agents: Vec<Arc<SimAgent>>,
    port: u16,
}

impl Many {
    fn get(&self, i: usize) -> Option<Arc<SimAgent>> {
        self.agents.get(i).cloned()
    }
}

/// Serves `count` agents under `/agents/<i>/`; agent `i` hangs when `i % 100 < hang_percent`.
pub async fn serve_many(
    listener: tokio::net::TcpListener,
    count: usize,
    hang_percent: usize,
) -> std::io::Result<()> {
    let port = listener.local_addr()?.port();
    let agents = (0..count)
        .map(|i| {
            let speaks = [Wire::V1, Wire::V03, Wire::V03Content][i % 3];
            let mut a = SimAgent::healthy(&format!("sim-{i}"), speaks);
            a.hang = i % 100 < hang_percent;
            Arc::new(a)
        })
        .collect();
    let fleet = Arc::new(Many { agents, port });
    let router = Router::new()
        .route(
            "/agents/{i}/.well-known/agent-card.json",
            get(
                |State(f): State<Arc<Many>>, Path(i): Path<usize>| async move {
                    match f.get(i) {
                        Some(a) => {
                            card_handler(a, format!("http://127.0.0.1:{}/agents/{i}/", f.port))
                                .await
                        }
                        None => axum::http::StatusCode::NOT_FOUND.into_response(),
                    }
                },
            ),
        )
        .route(
            "/agents/{i}/",
            post(
                |State(f): State<Arc<Many>>,
                 Path(i): Path<usize>,
                 h: HeaderMap,
                 b: axum::body::Bytes| async move {
                    match f.get(i) {
                        Some(a) => rpc_handler(a, h, b).await,
                        None => axum::http::StatusCode::NOT_FOUND.into_response(),
                    }
                },
            ),
        )
        .with_state(fleet);
    axum::serve(listener, router).await
}

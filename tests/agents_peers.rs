//! The agents collector end to end: the real `fleetdash collect --config FILE` binary against
//! real A2A peers on the official Python SDK (tests/peers, see WIRE.md), the project's own
//! simulated agents for the failure modes, and tiny hostile servers written here.
//!
//! Every test starts its own peers on their own loopback ports and writes into its own scratch
//! directory, so the tests run in parallel. Every collect goes through [`collect`], which also
//! checks the invariants every row must meet (exit 0, `checked_at`, `stale` = failed probe).
//!
//! Needs the peers' venvs: run `scripts/setup-test-deps` once.

use crate::support;

use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use fleetdash::a2a::Wire;
use fleetdash::demo::sim::SimAgent;
use fleetdash_model::{Band, RulesView, Snapshot};
use serde_json::{Value, json};
use support::secrets::{
    BEARER, GLUED, HASH, JWT, SECRETS, SHAPES, SK, URL_CREDS, find_secret, glued_text, glued_words,
};
use support::{PyPeer, Scratch, Sdk, Sim, fleetdash, refused_endpoint};

// ---------------------------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------------------------

/// What one `fleetdash collect` left behind.
struct Run {
    json: Value,
    text: String,
    wall: Duration,
    /// What the collect logged (at `warn`, as [`fleetdash`] sets it).
    stderr: String,
}

impl Run {
    /// The row of agent `name`; panics listing the rows there are.
    fn agent(&self, name: &str) -> &Value {
        let rows = self.json["agents"].as_array().expect("agents is an array");
        rows.iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("no row for agent {name:?} in {:#}", self.json["agents"]))
    }

    fn rules(&self) -> RulesView {
        serde_json::from_value(self.json["rules"].clone()).expect("rules in the snapshot")
    }
}

/// Runs `fleetdash collect` with `env` set for the fleetdash process only.
fn collect_env(scratch: &Scratch, config: &Path, env: &[(&str, &str)]) -> Run {
    let started_at = Utc::now();
    let started = Instant::now();
    let mut cmd = fleetdash();
    cmd.args(["collect", "--config"]).arg(config);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out: Output = cmd.output().expect("the fleetdash binary runs");
    let wall = started.elapsed();
    let finished_at = Utc::now();
    assert!(
        out.status.success(),
        "fleetdash collect must exit 0 even with failed probes; got {:?}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let text = scratch.snapshot_text();
    // The typed model must accept what was written (schema contract with the page).
    let typed: Snapshot = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("status.json does not parse as Snapshot: {e}\n{text}"));
    let json: Value = serde_json::from_str(&text).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let run = Run {
        json,
        text,
        wall,
        stderr,
    };
    check_invariants(&run, &typed, started_at, finished_at);
    eprintln!("collect took {} ms", wall.as_millis());
    run
}

fn collect(scratch: &Scratch, config: &Path) -> Run {
    collect_env(scratch, config, &[])
}

/// Requirement 8 and the row rules, checked on every snapshot any test produces.
fn check_invariants(run: &Run, typed: &Snapshot, started: DateTime<Utc>, finished: DateTime<Utc>) {
    let agents = &run.json["agents"];
    let rows = agents
        .as_array()
        .unwrap_or_else(|| panic!("agents section was not collected: {agents:#}"));
    assert!(!rows.is_empty(), "no agent rows: {:#}", run.json);
    assert_eq!(typed.agents.value().map(Vec::len), Some(rows.len()));
    let meta = &run.json["sections"]["agents"];
    assert!(
        meta["configured"] == true && meta["checked_at"].is_string() && meta["stale"] == false,
        "sections.agents: {meta:#}"
    );
    let slack = chrono::Duration::seconds(1);
    for row in rows {
        let checked_at = row["checked_at"]
            .as_str()
            .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
            .unwrap_or_else(|| panic!("row without a valid checked_at: {row:#}"));
        assert!(
            checked_at >= started - slack && checked_at <= finished + slack,
            "checked_at {checked_at} is not within the collect ({started} .. {finished}): {row:#}"
        );
        let stale = row["stale"]
            .as_bool()
            .unwrap_or_else(|| panic!("row without a boolean stale: {row:#}"));
        let failed_probe = row["up"] == false
            || ["skills_count", "heartbeat", "last_exchange_s"]
                .iter()
                .any(|f| row[f].as_str().is_some_and(|s| s.starts_with("error: ")));
        assert_eq!(
            stale, failed_probe,
            "stale must be true exactly when a probe failed: {row:#}"
        );
        // Model, lane and window are readings, never failed probes.
        for f in ["model", "lane", "window"] {
            assert!(
                !row[f].as_str().is_some_and(|s| s.starts_with("error: ")),
                "{f}: {row:#}"
            );
        }
        let band = row["band"]
            .as_str()
            .unwrap_or_else(|| panic!("row without band: {row:#}"));
        let code = row["status"]["code"]
            .as_u64()
            .unwrap_or_else(|| panic!("row without status code: {row:#}"));
        if band == "green" {
            assert!(
                code == 2000 && row.get("reason").is_none(),
                "a green row is SUCCESS without a reason: {row:#}"
            );
        } else {
            assert!(
                code != 2000 && row["reason"].as_str().is_some_and(|r| !r.is_empty()),
                "a {band} row has a code and a reason: {row:#}"
            );
        }
    }
}

/// A TOML string literal (JSON string syntax is valid TOML basic-string syntax for our values).
fn q(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

/// A TOML `[[agents]]` block with optional extra `key = "value"` lines.
fn agent_block(
    name: &str,
    endpoint: &str,
    dialect: &str,
    audit_log: Option<&Path>,
    extra: &[(&str, &str)],
) -> String {
    let mut s = format!(
        "[[agents]]\nname = {}\nendpoint = {}\ndialect = {}\n",
        q(name),
        q(endpoint),
        q(dialect)
    );
    if let Some(p) = audit_log {
        s += &format!("audit_log = {}\n", q(&p.display().to_string()));
    }
    for (k, v) in extra {
        s += &format!("{k} = {}\n", q(v));
    }
    s + "\n"
}

/// Starts several Python peers at once (their interpreters start in parallel).
fn start_peers(specs: &[(Sdk, Vec<String>)]) -> Vec<PyPeer> {
    std::thread::scope(|s| {
        let handles: Vec<_> = specs
            .iter()
            .map(|(sdk, args)| {
                s.spawn(move || {
                    let args: Vec<&str> = args.iter().map(String::as_str).collect();
                    PyPeer::start(*sdk, &args)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("peer start"))
            .collect()
    })
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// A row field as a string, "" when it is not one.
fn s<'a>(row: &'a Value, pointer: &str) -> &'a str {
    row.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn assert_green(row: &Value) {
    assert!(
        row["up"] == true
            && row["band"] == "green"
            && row["status"]["code"] == 2000
            && row["stale"] == false,
        "expected an up, green, fresh row: {row:#}"
    );
}

/// An axum router served on its own loopback port and runtime, for servers the test controls.
struct Raw {
    endpoint: String,
    _runtime: tokio::runtime::Runtime,
}

impl Raw {
    fn start(router: axum::Router) -> Raw {
        let (runtime, listener) = support::loopback_runtime();
        let endpoint = format!("http://{}/", listener.local_addr().unwrap());
        runtime.spawn(async move { axum::serve(listener, router).await });
        Raw {
            endpoint,
            _runtime: runtime,
        }
    }

    /// Serves `card` for the agent card and `rpc(request)` for every JSON-RPC POST.
    fn agent(
        card: fn() -> axum::response::Response,
        rpc: fn(&Value) -> axum::response::Response,
    ) -> Raw {
        use axum::routing::{get, post};
        let router = axum::Router::new()
            .route(
                "/.well-known/agent-card.json",
                get(move || async move { card() }),
            )
            .route(
                "/",
                post(move |body: axum::body::Bytes| async move {
                    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    rpc(&request)
                }),
            );
        Raw::start(router)
    }
}

/// One agent per value of [`GLUED`], all on one server: agent `i` is at `/g/{i}/` and puts its
/// glued secret in every field a peer fills: the card's name and descriptions, the reply's
/// text, task id, model, lane, window, in-flight list and an unrelated note, the same for any
/// `tasks/get`. Cheap where a real peer per value would not be (the real SDK peers carry them
/// all in their free text and in-flight lists).
fn glued_agents() -> Raw {
    use axum::extract::Path as UrlPath;
    use axum::routing::{get, post};
    fn glued(i: usize) -> &'static str {
        GLUED[i].value.as_str()
    }
    let router = axum::Router::new()
        .route(
            "/g/{i}/.well-known/agent-card.json",
            get(|UrlPath(i): UrlPath<usize>| async move {
                let g = glued(i);
                json_response(json!({"name": g, "description": format!("agent {g}"),
                    "protocolVersion": "0.3.0",
                    "skills": [{"id": g, "name": g, "description": format!("skill {g}")}]}))
            }),
        )
        .route(
            "/g/{i}/",
            post(
                |UrlPath(i): UrlPath<usize>, body: axum::body::Bytes| async move {
                    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    let g = glued(i);
                    // A glued value with a space is no task id: the task gets a plain one.
                    let id = if GLUED[i].is_word() {
                        g.to_string()
                    } else {
                        format!("t_glued{i}")
                    };
                    let metadata = json!({"model": g, "lane": g, "note": g, "in_flight": [g],
                        "window": {"percent": 5, "model": g, "status": g}});
                    json_response(json!({"jsonrpc": "2.0", "id": request["id"], "result": {
                        "kind": "task", "id": id, "contextId": g, "metadata": metadata,
                        "status": {"state": "working", "message": {"kind": "message",
                            "messageId": g, "role": "agent", "metadata": metadata,
                            "parts": [{"kind": "text", "text": format!("alive {g}")}]}}}}))
                },
            ),
        );
    Raw::start(router)
}

fn json_response(body: Value) -> axum::response::Response {
    use axum::response::IntoResponse;
    axum::Json(body).into_response()
}

fn body_response(body: axum::body::Body) -> axum::response::Response {
    axum::response::Response::builder()
        .status(200)
        .header("content-type", "application/json")
        .body(body)
        .unwrap()
}

fn good_card() -> axum::response::Response {
    json_response(json!({"name": "raw", "protocolVersion": "0.3.0", "skills": [{"id": "s"}]}))
}

/// A v0.3 `message/send` answer, as a vanilla agent gives it.
fn alive(request: &Value) -> axum::response::Response {
    json_response(json!({"jsonrpc": "2.0", "id": request["id"],
        "result": {"kind": "message", "messageId": "m", "role": "agent",
                   "parts": [{"kind": "text", "text": "alive"}]}}))
}

const TEN_MIB: usize = 10 * 1024 * 1024;

/// 10 MiB of (valid-looking) JSON with a Content-Length.
fn huge_with_length() -> axum::response::Response {
    let mut body = b"{\"skills\": [".to_vec();
    while body.len() < TEN_MIB {
        body.extend_from_slice(b"{\"id\": \"skill\"},");
    }
    body.extend_from_slice(b"{}]}");
    body_response(axum::body::Body::from(body))
}

/// 10 MiB streamed in chunks without a Content-Length.
fn huge_chunked() -> axum::response::Response {
    let chunk = axum::body::Bytes::from(vec![b' '; 64 * 1024]);
    let chunks = (0..TEN_MIB / chunk.len()).map(move |_| Ok::<_, std::io::Error>(chunk.clone()));
    body_response(axum::body::Body::from_stream(futures::stream::iter(chunks)))
}

// ---------------------------------------------------------------------------------------------
// 1. Dialects against real SDK peers
// ---------------------------------------------------------------------------------------------

#[test]
fn dialects_against_real_sdk_peers() {
    let scratch = Scratch::new();
    let peers = start_peers(&[
        (Sdk::V1, args(&["--name", "dial-v1", "--skills", "2"])),
        (Sdk::V03, args(&["--name", "dial-v03", "--skills", "3"])),
    ]);
    let (v1, v03) = (&peers[0], &peers[1]);
    let audit = scratch.audit_log("fresh", 60.0);
    let mut body = String::new();
    for (name, peer, dialect) in [
        ("v1-as-v1", v1, "v1"),
        ("v1-as-v03", v1, "v0.3"),
        ("v1-auto", v1, "auto"),
        ("v03-as-v03", v03, "v0.3"),
        ("v03-auto", v03, "auto"),
        ("v03-as-v1", v03, "v1"),
        ("v1-as-content", v1, "v0.3-content"),
        ("v03-as-content", v03, "v0.3-content"),
    ] {
        body += &agent_block(name, &peer.endpoint(), dialect, Some(&audit), &[]);
    }
    let run = collect(&scratch, &scratch.config(&body));

    for (name, peer, skills, answered) in [
        ("v1-as-v1", v1, 2, "v1"),
        ("v1-as-v03", v1, 2, "v0.3"),
        ("v1-auto", v1, 2, "v1"),
        ("v03-as-v03", v03, 3, "v0.3"),
        ("v03-auto", v03, 3, "v0.3"),
    ] {
        let row = run.agent(name);
        assert_green(row);
        assert_eq!(row["skills_count"], skills, "{name}: skills_count: {row:#}");
        assert_eq!(
            row["heartbeat"]["dialect"], answered,
            "{name}: answering dialect: {row:#}"
        );
        assert!(
            row["heartbeat"]["latency_ms"].is_u64(),
            "{name}: latency: {row:#}"
        );
        assert_eq!(row["endpoint"], peer.endpoint().as_str(), "{name}: {row:#}");
        // A flagless peer is a vanilla agent: no metadata means explicit unknowns, not errors.
        for field in [
            "/heartbeat/in_flight",
            "/heartbeat/last_activity_at",
            "/model",
            "/lane",
            "/window",
        ] {
            assert_eq!(s(row, field), "unknown", "{name}{field}: {row:#}");
        }
        assert!(
            row["last_exchange_s"]
                .as_u64()
                .is_some_and(|a| (60..120).contains(&a)),
            "{name}: {row:#}"
        );
    }

    // The wrong dialect: peer_v03 answers a v1 SendMessage with -32601.
    let row = run.agent("v03-as-v1");
    let hb = s(row, "/heartbeat");
    assert!(
        hb.starts_with("error: ") && hb.contains("-32601"),
        "heartbeat must name -32601: {row:#}"
    );
    assert!(
        row["up"] == true && row["band"] == "red" && row["stale"] == true,
        "{row:#}"
    );
    assert_eq!(
        row["status"],
        json!({"code": 4007, "name": "UNSUPPORTED_CAPABILITY"}),
        "{row:#}"
    );
    assert_eq!(row["skills_count"], 3, "the card still reads: {row:#}");
    assert!(s(row, "/reason").contains("-32601"), "{row:#}");

    // The "Pulse plane" content variant is rejected by both real SDKs (WIRE.md).
    for (name, code) in [("v1-as-content", "-32600"), ("v03-as-content", "-32602")] {
        let row = run.agent(name);
        let hb = s(row, "/heartbeat");
        assert!(
            hb.starts_with("error: ") && hb.contains(code),
            "{name}: heartbeat must name {code}: {row:#}"
        );
        assert!(
            row["up"] == true && row["band"] == "red" && row["status"]["code"] == 4007,
            "{name}: {row:#}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// 2. Heartbeat metadata reaches the snapshot
// ---------------------------------------------------------------------------------------------

#[test]
fn heartbeat_metadata_reaches_the_snapshot() {
    let scratch = Scratch::new();
    let peers = start_peers(&[
        (
            Sdk::V1,
            args(&[
                "--model",
                "claude-x",
                "--lane",
                "heart",
                "--in-flight",
                "t-1",
                "--in-flight",
                "t-2",
                "--last-activity-at",
                "2026-01-02T03:04:05Z",
                "--window-percent",
                "42.5",
                "--window-model",
                "claude-x-win",
                "--window-status",
                "ok",
                "--window-resets-at",
                "2026-01-02T08:00:00Z",
            ]),
        ),
        (
            Sdk::V03,
            args(&[
                "--lane",
                "pulse",
                "--in-flight",
                "t-9",
                "--last-activity-at",
                "2026-03-04T05:06:07.250000Z",
                "--window-percent",
                "10",
                "--window-status",
                "near limit",
            ]),
        ),
    ]);
    let (v1, v03) = (&peers[0], &peers[1]);
    let audit = scratch.audit_log("fresh", 30.0);
    let body = [
        agent_block("md-v1", &v1.endpoint(), "v1", Some(&audit), &[]),
        agent_block("md-v1-compat", &v1.endpoint(), "v0.3", Some(&audit), &[]),
        // The config's lane wins over the peer's; the peer's model wins over the config's.
        agent_block(
            "md-v1-cfg",
            &v1.endpoint(),
            "auto",
            Some(&audit),
            &[("lane", "cfg-lane"), ("model", "cfg-model")],
        ),
        // Without a reported model, the configured one is shown.
        agent_block(
            "md-v03",
            &v03.endpoint(),
            "v0.3",
            Some(&audit),
            &[("model", "cfg-fallback")],
        ),
    ]
    .concat();
    let run = collect(&scratch, &scratch.config(&body));

    let at = |row: &Value, p: &str| -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s(row, p))
            .unwrap_or_else(|e| panic!("{p} is not a timestamp ({e}): {row:#}"))
            .with_timezone(&Utc)
    };
    for (name, dialect) in [
        ("md-v1", "v1"),
        ("md-v1-compat", "v0.3"),
        ("md-v1-cfg", "v1"),
    ] {
        let row = run.agent(name);
        assert_green(row);
        let hb = &row["heartbeat"];
        assert_eq!(hb["dialect"], dialect, "{name}: {row:#}");
        assert_eq!(
            hb["in_flight"],
            json!(["t-1", "t-2"]),
            "{name}: in_flight: {row:#}"
        );
        assert_eq!(
            at(row, "/heartbeat/last_activity_at"),
            "2026-01-02T03:04:05Z".parse::<DateTime<Utc>>().unwrap(),
            "{name}"
        );
        assert_eq!(row["model"], "claude-x", "{name}: model: {row:#}");
        let window = &row["window"];
        assert_eq!(window["percent"], 42.5, "{name}: window: {row:#}");
        assert_eq!(window["model"], "claude-x-win", "{name}: window: {row:#}");
        assert_eq!(window["status"], "ok", "{name}: window: {row:#}");
        assert_eq!(
            at(row, "/window/resets_at"),
            "2026-01-02T08:00:00Z".parse::<DateTime<Utc>>().unwrap(),
            "{name}"
        );
    }
    assert_eq!(
        run.agent("md-v1")["lane"],
        "heart",
        "{:#}",
        run.agent("md-v1")
    );
    assert_eq!(
        run.agent("md-v1-compat")["lane"],
        "heart",
        "{:#}",
        run.agent("md-v1-compat")
    );
    assert_eq!(
        run.agent("md-v1-cfg")["lane"],
        "cfg-lane",
        "{:#}",
        run.agent("md-v1-cfg")
    );

    let row = run.agent("md-v03");
    assert_green(row);
    assert_eq!(row["heartbeat"]["dialect"], "v0.3", "{row:#}");
    assert_eq!(row["heartbeat"]["in_flight"], json!(["t-9"]), "{row:#}");
    assert_eq!(
        at(row, "/heartbeat/last_activity_at"),
        "2026-03-04T05:06:07.25Z".parse::<DateTime<Utc>>().unwrap(),
        "{row:#}"
    );
    assert_eq!(row["lane"], "pulse", "{row:#}");
    assert_eq!(row["model"], "cfg-fallback", "{row:#}");
    // `--window-percent 10` arrives as 10.0; fields the peer did not send are explicit unknowns.
    assert_eq!(row["window"]["percent"].as_f64(), Some(10.0), "{row:#}");
    assert_eq!(row["window"]["status"], "near limit", "{row:#}");
    assert_eq!(row["window"]["model"], "unknown", "{row:#}");
    assert_eq!(row["window"]["resets_at"], "unknown", "{row:#}");
}

// ---------------------------------------------------------------------------------------------
// 3. An empty skills list is red
// ---------------------------------------------------------------------------------------------

#[test]
fn empty_skills_are_red_failed_precondition() {
    let scratch = Scratch::new();
    let peers = start_peers(&[
        (Sdk::V1, args(&["--skills", "0"])),
        (Sdk::V03, args(&["--skills", "0"])),
    ]);
    let audit = scratch.audit_log("fresh", 10.0);
    let body = [
        agent_block("empty-v1", &peers[0].endpoint(), "v1", Some(&audit), &[]),
        agent_block("empty-v03", &peers[1].endpoint(), "auto", Some(&audit), &[]),
    ]
    .concat();
    let run = collect(&scratch, &scratch.config(&body));
    for name in ["empty-v1", "empty-v03"] {
        let row = run.agent(name);
        assert_eq!(
            row["skills_count"], 0,
            "{name}: skills_count is 0, not an error or unknown: {row:#}"
        );
        assert!(row["up"] == true && row["band"] == "red", "{name}: {row:#}");
        assert_eq!(
            row["status"],
            json!({"code": 4001, "name": "FAILED_PRECONDITION"}),
            "{name}: {row:#}"
        );
        assert!(
            s(row, "/reason").contains("no skills"),
            "{name}: reason: {row:#}"
        );
        // Nothing else is wrong: the heartbeat answered and the row is a reading, not stale.
        assert!(
            row["heartbeat"]["dialect"].is_string() && row["stale"] == false,
            "{name}: {row:#}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// 4. Bearer tokens
// ---------------------------------------------------------------------------------------------

#[test]
fn bearer_token_from_env_or_file_and_never_in_the_snapshot() {
    const TOKEN: &str = "fleetTok-7f3a9c2e51d84b06";
    const VAR: &str = "FLEETDASH_TEST_AGENTS_PEERS_TOKEN";
    const UNSET_VAR: &str = "FLEETDASH_TEST_AGENTS_PEERS_NEVER_SET";
    let scratch = Scratch::new();
    let peers = start_peers(&[
        (Sdk::V1, args(&["--require-token", TOKEN, "--skills", "2"])),
        (Sdk::V03, args(&["--require-token", TOKEN])),
    ]);
    let (v1, v03) = (&peers[0], &peers[1]);
    let token_file = scratch.path().join("peer.token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
    let token_file = token_file.display().to_string();
    // A strict server: exactly one Authorization field (RFC 9110), and it must be the bearer.
    // Credentials in the endpoint URL must not become a second Authorization header.
    let strict = {
        use axum::http::{HeaderMap, StatusCode};
        use axum::response::IntoResponse;
        use axum::routing::{get, post};
        fn authorized(h: &HeaderMap) -> bool {
            let all: Vec<_> = h.get_all("authorization").iter().collect();
            all.len() == 1 && all[0] == format!("Bearer {TOKEN}").as_str()
        }
        let router = axum::Router::new()
            .route(
                "/.well-known/agent-card.json",
                get(|h: HeaderMap| async move {
                    if authorized(&h) {
                        good_card()
                    } else {
                        StatusCode::UNAUTHORIZED.into_response()
                    }
                }),
            )
            .route(
                "/",
                post(|h: HeaderMap, body: axum::body::Bytes| async move {
                    if !authorized(&h) {
                        return StatusCode::UNAUTHORIZED.into_response();
                    }
                    alive(&serde_json::from_slice(&body).unwrap_or(Value::Null))
                }),
            );
        Raw::start(router)
    };
    let userinfo = |endpoint: &str| endpoint.replace("http://", "http://someone:PLANTEDuiPass@");
    let audit = scratch.audit_log("fresh", 10.0);
    let body = [
        agent_block("no-token", &v1.endpoint(), "v1", Some(&audit), &[]),
        agent_block(
            "strict-env-token",
            &strict.endpoint,
            "v0.3",
            Some(&audit),
            &[("token_env", VAR)],
        ),
        agent_block(
            "strict-userinfo-token",
            &userinfo(&strict.endpoint),
            "v0.3",
            Some(&audit),
            &[("token_env", VAR)],
        ),
        agent_block(
            "userinfo-token",
            &userinfo(&v1.endpoint()),
            "v1",
            Some(&audit),
            &[("token_env", VAR)],
        ),
        agent_block("no-token-v03", &v03.endpoint(), "v0.3", Some(&audit), &[]),
        agent_block(
            "env-token",
            &v1.endpoint(),
            "auto",
            Some(&audit),
            &[("token_env", VAR)],
        ),
        agent_block(
            "env-token-v03",
            &v03.endpoint(),
            "auto",
            Some(&audit),
            &[("token_env", VAR)],
        ),
        agent_block(
            "file-token",
            &v1.endpoint(),
            "v0.3",
            Some(&audit),
            &[("token_file", &token_file)],
        ),
        agent_block(
            "unset-token",
            &v1.endpoint(),
            "v1",
            Some(&audit),
            &[("token_env", UNSET_VAR)],
        ),
    ]
    .concat();
    assert!(std::env::var_os(UNSET_VAR).is_none());
    let run = collect_env(&scratch, &scratch.config(&body), &[(VAR, TOKEN)]);

    for name in ["no-token", "no-token-v03"] {
        let row = run.agent(name);
        assert!(
            row["up"] == true && row["band"] == "red" && row["stale"] == true,
            "{name}: a 401 is up but red: {row:#}"
        );
        assert_eq!(
            row["status"],
            json!({"code": 4002, "name": "PERMISSION_DENIED"}),
            "{name}: {row:#}"
        );
        assert!(s(row, "/skills_count").contains("401"), "{name}: {row:#}");
        assert!(s(row, "/heartbeat").contains("401"), "{name}: {row:#}");
    }
    for (name, skills) in [
        ("env-token", 2),
        ("env-token-v03", 1),
        ("file-token", 2),
        ("strict-env-token", 1),
        ("strict-userinfo-token", 1),
        ("userinfo-token", 2),
    ] {
        let row = run.agent(name);
        assert_green(row);
        assert_eq!(row["skills_count"], skills, "{name}: {row:#}");
    }
    let row = run.agent("unset-token");
    assert!(
        row["band"] == "red" && row["stale"] == true && row["status"]["code"] == 4001,
        "{row:#}"
    );
    assert!(
        s(row, "/reason").contains(UNSET_VAR),
        "the reason names the missing variable: {row:#}"
    );

    for needle in [
        TOKEN,
        "fleetTok",
        "7f3a9c2e51d84b06",
        "PLANTEDuiPass",
        "someone",
    ] {
        assert!(
            !run.text.contains(needle),
            "the token ({needle}) leaked into status.json:\n{}",
            run.text
        );
    }
}

// ---------------------------------------------------------------------------------------------
// 5. Secrets never reach status.json
// ---------------------------------------------------------------------------------------------

/// Fails if any secret, or any 12-character piece of its core, is in `text`.
fn assert_no_secret(text: &str, extra: &[&str]) {
    if let Some(found) = find_secret(text) {
        panic!("{found} leaked:\n{text}");
    }
    for needle in extra {
        assert!(!text.contains(needle), "{needle:?} leaked:\n{text}");
    }
}

#[test]
fn planted_secrets_never_reach_status_json_or_snapshot_html() {
    let scratch = Scratch::new();
    // Each peer plants one secret (card and skill descriptions, reply text, metadata.note) and
    // also reports it in the fields the collector does copy (model, lane, window, in_flight).
    // The first two also plant every glued secret (issue 21) in their free text, and list the
    // whitespace-free ones in flight between them (at most 64 are read from one reply).
    let glued = glued_text();
    let words = glued_words();
    let (words_v1, words_v03) = words.split_at(words.len() / 2);
    let in_flight = |ids: &[&str]| -> Vec<String> {
        ids.iter()
            .flat_map(|id| ["--in-flight".to_string(), id.to_string()])
            .collect()
    };
    let peers = start_peers(&[
        (
            Sdk::V1,
            [
                args(&[
                    "--plant-secret",
                    &format!("{} {glued}", SK.value),
                    "--model",
                    SK.value,
                    "--in-flight",
                    SK.value,
                ]),
                in_flight(words_v1),
            ]
            .concat(),
        ),
        (
            Sdk::V03,
            [
                args(&[
                    "--plant-secret",
                    &format!("{} {glued}", BEARER.value),
                    "--lane",
                    BEARER.value,
                    "--window-percent",
                    "5",
                    "--window-status",
                    BEARER.value,
                ]),
                in_flight(words_v03),
            ]
            .concat(),
        ),
        (
            Sdk::V1,
            args(&[
                "--plant-secret",
                JWT.value,
                "--window-percent",
                "7",
                "--window-model",
                JWT.value,
                "--in-flight",
                JWT.value,
            ]),
        ),
        (
            Sdk::V03,
            args(&[
                "--plant-secret",
                URL_CREDS.value,
                "--model",
                URL_CREDS.value,
                "--in-flight",
                URL_CREDS.value,
            ]),
        ),
        (
            Sdk::V1,
            args(&[
                "--plant-secret",
                HASH.value,
                "--model",
                HASH.value,
                "--in-flight",
                HASH.value,
                "--lane",
                HASH.value,
            ]),
        ),
    ]);
    // A peer that puts a secret into a JSON-RPC error message, which the heartbeat reason quotes
    // (cut to a short length): the cut must not leave most of the secret behind.
    let error_peer = Raw::agent(good_card, |request| {
        let message = format!(
            "upstream refused the call after a very long explanation, key {}",
            HASH.value
        );
        json_response(
            json!({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32603, "message": message}}),
        )
    });

    // The audit log's summaries carry every secret too, and so do the lines the tail reader
    // skips: malformed ones (counted) and rejections (not successes) after the newest success.
    let audit = scratch.path().join("secret.a2a_audit.jsonl");
    let now = Utc::now().timestamp() as f64;
    let mut lines = Vec::new();
    for secret in SECRETS {
        let summary = format!("said {}", secret.value);
        lines
            .push(json!({"ts": now - 120.0, "peer": secret.value, "summary": summary}).to_string());
    }
    lines.push(
        json!({"ts": now - 60.0, "direction": "outbound", "status": 200, "summary": HASH.value,
               "task_id": SK.value})
        .to_string(),
    );
    for secret in SECRETS {
        lines.push(format!("not json {}", secret.value));
        lines.push(
            json!({"ts": now - 1.0, "decision": "rejected_bad_token", "summary": secret.value})
                .to_string(),
        );
    }
    std::fs::write(&audit, lines.join("\n") + "\n").unwrap();

    // Each glued agent's own audit log: its glued secret as a success's peer, summary and task
    // id, then a malformed line and a rejection after it (read, not copied).
    let glued_peer = glued_agents();
    let glued_blocks: String = GLUED
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let log = scratch.path().join(format!("g{i}.a2a_audit.jsonl"));
            let lines = [
                json!({"ts": now - 30.0, "direction": "inbound", "status": 200, "peer": g.value,
                       "summary": g.value, "task_id": g.value})
                .to_string(),
                format!("not json {}", g.value),
                json!({"ts": now - 1.0, "decision": "rejected_bad_token", "summary": g.value,
                       "task_id": g.value})
                .to_string(),
            ];
            std::fs::write(&log, lines.join("\n") + "\n").unwrap();
            let endpoint = format!("{}g/{i}/", glued_peer.endpoint);
            agent_block(
                &format!("g{i}"),
                &endpoint,
                "v0.3",
                Some(&log),
                &[("plane", &g.value)],
            )
        })
        .collect();

    // Secrets in the config: credentials in an endpoint, and secret-shaped lane, model, plane.
    let with_creds = peers[0]
        .endpoint()
        .replace("http://", "http://cfguser:PLANTEDcfgPa55@");
    let body = [
        agent_block(
            "sec-sk",
            &peers[0].endpoint(),
            "v1",
            Some(&audit),
            &[("lane", JWT.value)],
        ),
        agent_block(
            "sec-bearer",
            &peers[1].endpoint(),
            "v0.3",
            Some(&audit),
            &[("model", HASH.value), ("plane", BEARER.value)],
        ),
        agent_block(
            "sec-jwt",
            &peers[2].endpoint(),
            "auto",
            Some(&audit),
            &[("model", SK.value)],
        ),
        agent_block(
            "sec-url",
            &peers[3].endpoint(),
            "auto",
            Some(&audit),
            &[("plane", URL_CREDS.value)],
        ),
        agent_block("sec-hash", &peers[4].endpoint(), "v0.3", Some(&audit), &[]),
        agent_block("sec-creds-endpoint", &with_creds, "v1", Some(&audit), &[]),
        agent_block(
            "sec-rpc-error",
            &error_peer.endpoint,
            "v0.3",
            Some(&audit),
            &[],
        ),
        glued_blocks,
    ]
    .concat();
    let run = collect(&scratch, &scratch.config(&body));

    // The run was real: every peer answered, so the secrets did travel through the collector.
    for name in [
        "sec-sk",
        "sec-bearer",
        "sec-jwt",
        "sec-url",
        "sec-hash",
        "sec-creds-endpoint",
    ] {
        let row = run.agent(name);
        assert!(
            row["up"] == true && row["heartbeat"]["dialect"].is_string(),
            "{name}: {row:#}"
        );
        assert_eq!(
            row["audit_skipped_lines"], 5,
            "{name}: the malformed audit lines were read: {row:#}"
        );
    }
    // Userinfo in the endpoint does not disturb the peer, and is not shown.
    let row = run.agent("sec-creds-endpoint");
    assert_green(row);
    assert_eq!(row["endpoint"], peers[0].endpoint().as_str(), "{row:#}");
    // The copied fields held secrets and were redacted, not dropped.
    assert!(
        run.text.contains("[redacted]"),
        "no redaction happened at all:\n{}",
        run.text
    );
    assert!(
        s(run.agent("sec-rpc-error"), "/heartbeat").contains("-32603"),
        "{:#}",
        run.agent("sec-rpc-error")
    );

    assert_no_secret(&run.text, &["PLANTEDcfgPa55", "cfguser"]);
    // The static page is rendered from the same data and must be just as clean.
    let html = std::fs::read_to_string(scratch.path().join("out/snapshot.html")).unwrap();
    assert!(
        html.contains("sec-sk"),
        "snapshot.html lists the agents:\n{html}"
    );
    assert_no_secret(&html, &["PLANTEDcfgPa55", "cfguser"]);
    // So must every other file the collect wrote (transitions, the live-task registry, the
    // history) and its log.
    let written: Vec<_> = ["out", "state"]
        .iter()
        .flat_map(|d| support::files_under(&scratch.path().join(d)))
        .collect();
    assert!(written.len() > 2, "{written:?}");
    for path in written {
        let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
        if let Some(found) = find_secret(&text) {
            panic!("{found} leaked into {}:\n{text}", path.display());
        }
    }
    assert_no_secret(&run.stderr, &["PLANTEDcfgPa55", "cfguser"]);

    // The glued secrets travelled too: every glued agent answered, its audit log was read,
    // and a label short enough to be one came back redacted, not dropped.
    for (i, g) in GLUED.iter().enumerate() {
        let row = run.agent(&format!("g{i}"));
        assert!(
            row["up"] == true && row["heartbeat"]["dialect"] == "v0.3",
            "g{i} ({:?}): {row:#}",
            g.value
        );
        assert_eq!(row["audit_skipped_lines"], 1, "g{i}: {row:#}");
        if g.value.chars().count() <= 64 {
            for field in ["/model", "/lane", "/window/model", "/window/status"] {
                assert!(
                    s(row, field).contains("[redacted]"),
                    "g{i} {field} ({:?}): {row:#}",
                    g.value
                );
            }
        }
    }
}

/// The planted values are what they claim to be: each shape alone is one the gate redacts whole,
/// so a glued one that comes out raw is a gluing leak, never a badly made fixture.
#[test]
fn every_planted_shape_alone_is_redacted_whole() {
    let gate = fleetdash::redact::RedactionGate::default();
    for shape in SECRETS.into_iter().chain(SHAPES) {
        let text = format!("said {} then", shape.value);
        let clean = gate.redact_str(&text);
        assert!(
            find_secret(&clean).is_none() && clean.contains("[redacted]"),
            "{}: {clean}",
            shape.kind
        );
    }
    assert_eq!(GLUED.len(), SHAPES.len() * 7);
}

// ---------------------------------------------------------------------------------------------
// 6. Failure modes: refused, hanging, slow
// ---------------------------------------------------------------------------------------------

#[test]
fn refused_hanging_and_slow_agents() {
    const TIMEOUT: Duration = Duration::from_secs(2); // what Scratch::config sets
    let scratch = Scratch::new();
    let hang = Sim::start(SimAgent {
        hang: true,
        ..SimAgent::healthy("hang", Wire::V1)
    });
    let slow = Sim::start(SimAgent {
        delay: Duration::from_millis(500),
        ..SimAgent::healthy("slow", Wire::V03)
    });
    let refused = refused_endpoint();
    let audit = scratch.audit_log("fresh", 5.0);
    let body = [
        agent_block("refused", &refused, "auto", Some(&audit), &[]),
        agent_block("hang", &hang.endpoint, "auto", Some(&audit), &[]),
        agent_block("hang-v1", &hang.endpoint, "v1", Some(&audit), &[]),
        agent_block("slow", &slow.endpoint, "auto", Some(&audit), &[]),
    ]
    .concat();
    let config = scratch.config(&body);
    assert!(
        std::fs::read_to_string(&config)
            .unwrap()
            .contains("timeout = \"2s\"")
    );
    let run = collect(&scratch, &config);

    let row = run.agent("refused");
    assert!(
        row["up"] == false && row["band"] == "red" && row["stale"] == true,
        "{row:#}"
    );
    assert_eq!(
        row["status"],
        json!({"code": 5003, "name": "DEPENDENCY_UNAVAILABLE"}),
        "{row:#}"
    );
    assert_eq!(row["reason"], "down: connection refused", "{row:#}");
    assert_eq!(
        row["skills_count"], "error: down: connection refused",
        "{row:#}"
    );
    assert!(s(row, "/heartbeat").starts_with("error: "), "{row:#}");

    for name in ["hang", "hang-v1"] {
        let row = run.agent(name);
        assert!(
            row["up"] == false && row["band"] == "red" && row["stale"] == true,
            "{name}: {row:#}"
        );
        assert_eq!(
            row["status"],
            json!({"code": 5004, "name": "TIMEOUT"}),
            "{name}: {row:#}"
        );
        assert!(
            s(row, "/reason").starts_with("down: ") && s(row, "/reason").contains("2s"),
            "{name}: {row:#}"
        );
    }
    // Two hung agents cost one timeout, not one per agent or per probe: every request to the
    // hung peer was pending at the same moment (the wall clock would flake on a busy machine;
    // the overlap cannot). The card found each down, so neither was sent the heartbeat (issue
    // 35): one request per agent, not a second that would wait out another timeout.
    assert!(
        run.wall >= TIMEOUT,
        "the hung probes cannot have finished before the timeout: {:?}",
        run.wall
    );
    let (peak, total) = hang.concurrency();
    assert!(
        total == 2 && peak == total,
        "one card request per hung agent, all pending at once: at most {peak} of {total} \
         pending at once"
    );
    for name in ["hang", "hang-v1"] {
        assert!(
            s(run.agent(name), "/heartbeat").contains("not sent"),
            "{name}: {:#}",
            run.agent(name)
        );
    }

    let row = run.agent("slow");
    assert_green(row);
    let latency = row["heartbeat"]["latency_ms"].as_u64().unwrap_or(0);
    assert!(
        latency >= 500,
        "latency_ms must count the 500 ms delay: {row:#}"
    );
    assert_eq!(row["heartbeat"]["dialect"], "v0.3", "{row:#}");
}

// ---------------------------------------------------------------------------------------------
// 6. Failure modes: the audit log
// ---------------------------------------------------------------------------------------------

#[test]
fn audit_log_age_absence_and_garbage() {
    let scratch = Scratch::new();
    let sim = Sim::healthy("audited", Wire::V1);
    let young = scratch.audit_log("young", 1700.0); // green below 1800 s
    let amber = scratch.audit_log("amber", 1900.0); // just past green
    let hours = scratch.audit_log("hours", 2.0 * 3600.0);
    let red = scratch.audit_log("red", 21_700.0); // just past amber (6 h)
    let days = scratch.audit_log("days", 3.0 * 86_400.0);
    let missing = scratch.path().join("missing.a2a_audit.jsonl");
    let garbage = scratch.path().join("garbage.a2a_audit.jsonl");
    let now = Utc::now().timestamp() as f64;
    let lines = [
        json!({"ts": now - 600.0, "direction": "inbound"}).to_string(),
        "not json at all".to_string(),
        r#"{"ts": "yesterday"}"#.to_string(),
        r#"{"ts": 1.0, "direction": "#.to_string(),
        json!({"ts": now - 5.0, "decision": "rejected_bad_token"}).to_string(),
        json!({"ts": now - 4.0, "status": 503}).to_string(),
        "[1, 2, 3]".to_string(),
        String::new(),
    ];
    std::fs::write(&garbage, lines.join("\n")).unwrap();
    let mut body = String::new();
    for (name, path) in [
        ("young", &young),
        ("amber", &amber),
        ("hours", &hours),
        ("red", &red),
        ("days", &days),
        ("missing", &missing),
        ("garbage", &garbage),
    ] {
        body += &agent_block(name, &sim.endpoint, "v1", Some(path), &[]);
    }
    body += &agent_block("no-audit", &sim.endpoint, "v1", None, &[]);
    let run = collect(&scratch, &scratch.config(&body));
    let rules = run.rules();
    assert_eq!(
        (rules.exchange_green_below_s, rules.exchange_amber_below_s),
        (1800, 21_600),
        "{:#}",
        run.json["rules"]
    );

    for (name, band, code) in [
        ("young", "green", 2000),
        ("amber", "amber", 2001),
        ("hours", "amber", 2001),
        ("red", "red", 5004),
        ("days", "red", 5004),
    ] {
        let row = run.agent(name);
        let age = row["last_exchange_s"]
            .as_u64()
            .unwrap_or_else(|| panic!("{name}: last_exchange_s: {row:#}"));
        let expected = serde_json::to_value(Band::for_exchange_age(age, &rules)).unwrap();
        assert_eq!(
            row["exchange_band"], expected,
            "{name}: exchange_band by the rules: {row:#}"
        );
        assert_eq!(row["exchange_band"], band, "{name}: {row:#}");
        assert_eq!(
            row["band"], band,
            "{name}: an old exchange sets the row band: {row:#}"
        );
        assert_eq!(row["status"]["code"], code, "{name}: {row:#}");
        assert!(
            row["up"] == true && row["stale"] == false,
            "{name}: an old exchange is a reading: {row:#}"
        );
    }
    assert!(
        run.agent("hours")["last_exchange_s"]
            .as_u64()
            .is_some_and(|a| (7200..7260).contains(&a))
    );
    assert_eq!(
        run.agent("hours")["reason"],
        "no exchange for 2 h",
        "{:#}",
        run.agent("hours")
    );
    assert_eq!(
        run.agent("days")["reason"],
        "no exchange for 3 d (>= 6 h)",
        "{:#}",
        run.agent("days")
    );

    let row = run.agent("missing");
    let err = s(row, "/last_exchange_s");
    assert!(
        err.starts_with("error: ") && err.contains(&missing.display().to_string()),
        "the error names the missing file: {row:#}"
    );
    assert!(
        row["stale"] == true
            && row["band"] == "red"
            && row["exchange_band"] == "red"
            && row["up"] == true,
        "{row:#}"
    );
    assert_eq!(
        row["status"],
        json!({"code": 4006, "name": "NOT_FOUND"}),
        "{row:#}"
    );

    let row = run.agent("garbage");
    assert_eq!(
        row["audit_skipped_lines"], 4,
        "4 unparseable lines; rejections and failures are not garbage: {row:#}"
    );
    assert!(
        row["last_exchange_s"]
            .as_u64()
            .is_some_and(|a| (600..660).contains(&a)),
        "{row:#}"
    );
    assert_eq!(run.agent("young")["audit_skipped_lines"], 0);

    // No audit log and no reports: not watched, which the Agents panel says once; the agent
    // itself answers, so it is green (issue 43: a missing optional part is never amber).
    let row = run.agent("no-audit");
    assert!(
        row["last_exchange_s"] == "unknown"
            && row["band"] == "green"
            && row["exchange_band"] == "green"
            && row["stale"] == false
            && row["reason"].is_null(),
        "{row:#}"
    );
}

/// The `peer` of every line of an audit log.
fn audit_peers(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            let line: Value = serde_json::from_str(l).unwrap();
            line["peer"].as_str().unwrap_or_default().to_string()
        })
        .collect()
}

#[test]
fn the_collectors_own_heartbeats_are_not_exchanges() {
    let scratch = Scratch::new();
    // Each agent's last exchange with another peer ("min") is 2000 s old: amber. Each
    // simulated agent logs every heartbeat it answers, as the Hermes adapter does, under the
    // name the collector's token has on it.
    let logged = |name: &str, collector_peer: &str| {
        let log = scratch.audit_log(name, 2000.0);
        let sim = Sim::start(SimAgent {
            audit_log: Some(log.clone()),
            collector_peer: collector_peer.into(),
            ..SimAgent::healthy(name, Wire::V1)
        });
        (sim, log)
    };
    let (plain, plain_log) = logged("plain", "fleetdash");
    let (pulse, pulse_log) = logged("pulse", "fleetdash-pulse");
    let (unknown, unknown_log) = logged("unknown", "watcher");
    // Past the red threshold (6 h): its heartbeats do not bring it back either.
    let red_log = scratch.audit_log("quiet", 25_000.0);
    let quiet = Sim::start(SimAgent {
        audit_log: Some(red_log.clone()),
        collector_peer: "fleetdash".into(),
        ..SimAgent::healthy("quiet", Wire::V1)
    });
    let body = agent_block("plain", &plain.endpoint, "v1", Some(&plain_log), &[])
        + &agent_block(
            "pulse",
            &pulse.endpoint,
            "v1",
            Some(&pulse_log),
            &[("collector_peer", "fleetdash-pulse")],
        )
        // The config does not know what this agent calls the collector.
        + &agent_block("unknown", &unknown.endpoint, "v1", Some(&unknown_log), &[])
        + &agent_block("quiet", &quiet.endpoint, "v1", Some(&red_log), &[]);
    let config = scratch.config(&body);
    // Two passes: the second reads the heartbeat lines the first one left.
    collect(&scratch, &config);
    let run = collect(&scratch, &config);

    for (name, log, peer) in [
        ("plain", &plain_log, "fleetdash"),
        ("pulse", &pulse_log, "fleetdash-pulse"),
    ] {
        let peers = audit_peers(log);
        assert!(
            peers.iter().filter(|p| *p == peer).count() >= 2 && peers.last().unwrap() == peer,
            "{name}: the heartbeats were logged after the exchange: {peers:?}"
        );
        let row = run.agent(name);
        let age = row["last_exchange_s"]
            .as_u64()
            .filter(|age| (2000..2000 + support::HANG_BUDGET.as_secs()).contains(age))
            .unwrap_or_else(|| panic!("{name}: the exchange with min, not a heartbeat: {row:#}"));
        assert_eq!(
            (&row["exchange_band"], &row["band"], &row["reason"]),
            (
                &json!("amber"),
                &json!("amber"),
                &json!(format!(
                    "no exchange for {}",
                    fleetdash_model::human_age(age)
                ))
            ),
            "{name}: {row:#}"
        );
    }
    let row = run.agent("quiet");
    assert!(
        audit_peers(&red_log).last().map(String::as_str) == Some("fleetdash"),
        "the collector's heartbeats were logged"
    );
    assert!(
        row["last_exchange_s"]
            .as_u64()
            .is_some_and(|age| age >= 25_000)
            && row["exchange_band"] == "red"
            && row["band"] == "red",
        "quiet: red at the rules' 6 h, however often the collector calls: {row:#}"
    );
    // Lines under a name the config does not give the collector are another peer's: they
    // count, so the same heartbeats keep this agent green.
    assert!(audit_peers(&unknown_log).iter().any(|p| p == "watcher"));
    let row = run.agent("unknown");
    assert!(
        row["last_exchange_s"]
            .as_u64()
            .is_some_and(|age| age < 2000),
        "{row:#}"
    );
    assert_green(row);
}

// ---------------------------------------------------------------------------------------------
// 7. Hostile and broken peers
// ---------------------------------------------------------------------------------------------

#[test]
fn hostile_peers_are_refused_and_do_not_spoil_the_pass() {
    let scratch = Scratch::new();
    let healthy = Sim::healthy("neighbour", Wire::V1);
    let huge = Raw::agent(huge_with_length, alive);
    let chunked = Raw::agent(huge_chunked, alive);
    let invalid = Raw::agent(
        || body_response("{\"name\": \"x\", \"skills\": [".into()),
        alive,
    );
    let binary = Raw::agent(|| body_response(vec![0xff, 0xfe, 0x00, 0x81].into()), alive);
    let not_list = Raw::agent(
        || json_response(json!({"name": "x", "skills": "many"})),
        alive,
    );
    let huge_reply = Raw::agent(good_card, |_| huge_chunked());
    let garbage_reply = Raw::agent(good_card, |_| body_response("alive!".into()));
    let audit = scratch.audit_log("fresh", 5.0);
    let body = [
        agent_block(
            "neighbour-before",
            &healthy.endpoint,
            "v1",
            Some(&audit),
            &[],
        ),
        agent_block("huge-card", &huge.endpoint, "v0.3", Some(&audit), &[]),
        agent_block(
            "huge-chunked-card",
            &chunked.endpoint,
            "v0.3",
            Some(&audit),
            &[],
        ),
        agent_block("invalid-card", &invalid.endpoint, "v0.3", Some(&audit), &[]),
        agent_block("binary-card", &binary.endpoint, "v0.3", Some(&audit), &[]),
        agent_block(
            "skills-not-list",
            &not_list.endpoint,
            "v0.3",
            Some(&audit),
            &[],
        ),
        agent_block(
            "huge-reply",
            &huge_reply.endpoint,
            "v0.3",
            Some(&audit),
            &[],
        ),
        agent_block(
            "garbage-reply",
            &garbage_reply.endpoint,
            "v0.3",
            Some(&audit),
            &[],
        ),
        agent_block(
            "neighbour-after",
            &healthy.endpoint,
            "auto",
            Some(&audit),
            &[],
        ),
    ]
    .concat();
    let run = collect(&scratch, &scratch.config(&body));

    for name in [
        "huge-card",
        "huge-chunked-card",
        "invalid-card",
        "binary-card",
        "skills-not-list",
    ] {
        let row = run.agent(name);
        let card = s(row, "/skills_count");
        assert!(
            card.starts_with("error: card: "),
            "{name}: the card error is shown: {row:#}"
        );
        assert!(
            row["up"] == true && row["band"] == "red" && row["stale"] == true,
            "{name}: {row:#}"
        );
        assert_eq!(
            row["status"],
            json!({"code": 7005, "name": "INTEGRITY_CHECK_FAILED"}),
            "{name}: {row:#}"
        );
        // The heartbeat was fine: only the card is blamed.
        assert_eq!(row["heartbeat"]["dialect"], "v0.3", "{name}: {row:#}");
    }
    for name in ["huge-card", "huge-chunked-card"] {
        assert!(
            s(run.agent(name), "/skills_count").contains("larger than"),
            "{:#}",
            run.agent(name)
        );
    }
    for name in ["invalid-card", "binary-card"] {
        assert!(
            s(run.agent(name), "/skills_count").contains("not valid JSON"),
            "{:#}",
            run.agent(name)
        );
    }
    for name in ["huge-reply", "garbage-reply"] {
        let row = run.agent(name);
        assert!(
            s(row, "/heartbeat").starts_with("error: heartbeat: "),
            "{name}: {row:#}"
        );
        assert_eq!(row["skills_count"], 1, "{name}: the card was fine: {row:#}");
        assert!(
            row["band"] == "red" && row["status"]["code"] == 7005 && row["stale"] == true,
            "{name}: {row:#}"
        );
    }
    for name in ["neighbour-before", "neighbour-after"] {
        let row = run.agent(name);
        assert_green(row);
        assert_eq!(row["skills_count"], 3, "{name}: {row:#}");
    }
    // Refusing 10 MiB bodies is cheap: every refusal came from reading, none from waiting for
    // a timeout.
    for row in run.json["agents"].as_array().unwrap() {
        assert!(
            row["status"]["code"] != 5004 && !row.to_string().contains("no answer within"),
            "a hostile peer was waited for until the timeout: {row:#}"
        );
    }
    assert!(
        run.text.len() < 64 * 1024,
        "status.json grew to {} bytes",
        run.text.len()
    );
}

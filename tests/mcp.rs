//! `fleetdash mcp` over stdio, asked by the official MCP Python SDK's own client (mcp 2.3.0,
//! tests/peers/mcp_client.py), as a local agent would: the tools listed with their schemas, each
//! called, the error shapes seed 000 binds ASC to (a tool that fails is `isError: true` with the
//! ASC envelope as an `application/agent-status+json` resource; an unknown tool stays a
//! protocol error), and a stale snapshot.

use crate::support;

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use support::{Scratch, repo_root};

/// Runs `steps` through the SDK's client against `fleetdash mcp --config CONFIG`.
fn ask(config: &std::path::Path, steps: Value) -> Vec<Value> {
    ask_as(config, &[], steps)
}

/// The same, with `extra` arguments to `fleetdash mcp` (`--operator`).
fn ask_as(config: &std::path::Path, extra: &[&str], steps: Value) -> Vec<Value> {
    let python = repo_root().join(".venv/mcp/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/setup-test-deps (the README's test command does)",
        python.display()
    );
    let mut child = Command::new(python)
        .arg(repo_root().join("tests/peers/mcp_client.py"))
        .args([
            "--command",
            env!("CARGO_BIN_EXE_fleetdash"),
            "--",
            "mcp",
            "--config",
        ])
        .arg(config)
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
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
        "mcp_client.py failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(results.len(), steps.as_array().unwrap().len(), "{stdout}");
    results
}

#[track_caller]
fn ok(result: &Value) -> &Value {
    result
        .get("ok")
        .unwrap_or_else(|| panic!("the SDK raised: {result}"))
}

fn text(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The ASC envelope a failed tool carries, parsed.
#[track_caller]
fn envelope(result: &Value) -> Value {
    let resource = result["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "resource")
        .unwrap_or_else(|| panic!("an ASC resource: {result:#}"));
    assert_eq!(
        resource["resource"]["mimeType"],
        "application/agent-status+json"
    );
    serde_json::from_str(resource["resource"]["text"].as_str().unwrap()).unwrap()
}

/// A collected fleet (one agent refusing connections) with a work queue holding one task.
fn fleet() -> (Scratch, std::path::PathBuf) {
    let scratch = Scratch::new();
    let config = scratch.config(&format!(
        "[work_queue]\ndb = \"state/tasks.db\"\n\n\
         [[agents]]\nname = \"vega\"\nendpoint = \"{}\"\ndialect = \"v1\"\n",
        support::refused_endpoint()
    ));
    let assigned = support::fleetdash()
        .args(["task", "assign", "--config"])
        .arg(&config)
        .args(["--to", "vega", "Rotate the LAB logs"])
        .output()
        .unwrap();
    support::assert_success(&assigned);
    support::assert_success(&scratch.collect(&config));
    (scratch, config)
}

#[test]
fn an_mcp_client_lists_and_calls_every_tool_and_reads_the_error_shapes() {
    let (_scratch, config) = fleet();
    let results = ask(
        &config,
        json!([
            {"op": "initialize"},
            {"op": "list_tools"},
            {"op": "call", "name": "fleet_status"},
            {"op": "call", "name": "changes_since", "arguments": {"since": "2000-01-01T00:00:00Z"}},
            {"op": "call", "name": "changes_since", "arguments": {"since": "lunch"}},
            {"op": "call", "name": "work_queue"},
            {"op": "call", "name": "no_such_tool"},
            {"op": "call", "name": "needs_you"},
            {"op": "call", "name": "explain", "arguments": {"key": "agent:vega"}},
            {"op": "call", "name": "explain", "arguments": {"key": "agent:nobody"}},
            {"op": "list_resources"},
            {"op": "read_resource", "uri": "fleet://glance.txt"},
            {"op": "read_resource", "uri": "fleet://status.json"},
        ]),
    );
    assert_eq!(ok(&results[0])["serverInfo"]["name"], "fleetdash");
    let mut tools: Vec<&str> = ok(&results[1])["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    tools.sort();
    assert_eq!(
        tools,
        [
            "assign_task",
            "changes_since",
            "explain",
            "fleet_status",
            "needs_you",
            "report",
            "silence",
            "work_queue"
        ]
    );
    let since = ok(&results[1])["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "changes_since")
        .unwrap();
    assert_eq!(since["inputSchema"]["required"], json!(["since"]));
    let report = ok(&results[1])["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "report")
        .unwrap();
    assert!(
        report["inputSchema"]["properties"]["since"].is_object()
            && report["inputSchema"]
                .get("required")
                .is_none_or(|r| r == &json!([])),
        "since is optional: {report:#}"
    );

    let status = ok(&results[2]);
    assert_ne!(status["isError"], true, "{status:#}");
    let words = text(status);
    assert!(words.starts_with("✖ 1 agent down\n"), "{words}");
    assert!(
        words.contains("✖ agent vega · down: connection refused"),
        "{words}"
    );
    let vega = &status["structuredContent"]["elements"][0];
    assert_eq!(vega["key"], "agent:vega");
    assert_eq!(vega["band"], "red");

    let changes = ok(&results[3]);
    assert!(
        text(changes).contains("✖ agent vega: new → fail"),
        "{changes:#}"
    );
    assert_eq!(
        changes["structuredContent"]["changes"][0]["key"],
        "agent:vega"
    );

    let bad = ok(&results[4]);
    assert_eq!(
        bad["isError"], true,
        "a tool that fails answers, isError: {bad:#}"
    );
    assert!(
        text(bad).contains("expected a time of day in UTC"),
        "{bad:#}"
    );
    assert_eq!(envelope(bad)["name"], "INVALID_REQUEST");
    assert_eq!(envelope(bad)["scope"], "tool_call");

    let queue = ok(&results[5]);
    let words = text(queue);
    assert!(words.starts_with("Work queue: 1 task ("), "{words}");
    assert!(words.contains("\"Rotate the LAB logs\""), "{words}");
    assert_eq!(queue["structuredContent"]["tasks"][0]["owner"], "vega");

    // An unknown tool stays a protocol error: the SDK raises, no result.
    assert!(results[6].get("error").is_some(), "{}", results[6]);

    let needs = ok(&results[7]);
    assert_eq!(
        text(needs).lines().next(),
        Some("✖ agent vega · down: connection refused")
    );
    assert_eq!(needs["structuredContent"]["needs"][0]["what"], "agent vega");

    let vega = ok(&results[8]);
    assert!(
        text(vega).starts_with("✖ agent vega: fail (down: connection refused"),
        "{vega:#}"
    );
    assert_eq!(vega["structuredContent"]["band"], "red");
    assert!(
        vega["structuredContent"]["history"]["strip"].is_array(),
        "{vega:#}"
    );
    let nobody = ok(&results[9]);
    assert_eq!(nobody["isError"], true, "{nobody:#}");
    assert_eq!(envelope(nobody)["name"], "NOT_FOUND");

    let resources: Vec<&str> = ok(&results[10])["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert_eq!(resources, ["fleet://status.json", "fleet://glance.txt"]);
    let glance = &ok(&results[11])["contents"][0];
    assert_eq!(glance["mimeType"], "text/plain");
    // The same words as fleet_status, but for the age said in the last line (read later).
    let lines = |t: &str| t.lines().map(str::to_string).collect::<Vec<_>>();
    let (read, said) = (
        lines(glance["text"].as_str().unwrap()),
        lines(&text(status)),
    );
    assert_eq!(read[..read.len() - 1], said[..said.len() - 1]);
    let snapshot = &ok(&results[12])["contents"][0];
    assert_eq!(snapshot["mimeType"], "application/json");
    let parsed: Value = serde_json::from_str(snapshot["text"].as_str().unwrap()).unwrap();
    assert_eq!(parsed["agents"][0]["name"], "vega");
}

#[test]
fn a_stale_snapshot_or_none_is_a_failed_tool_that_still_says_what_it_knew() {
    let (scratch, config) = fleet();
    // The snapshot as if fleetdash run had stopped writing a day ago.
    let path = scratch.status_path();
    let mut snap: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let day_ago = (chrono::Utc::now() - chrono::Duration::days(1))
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    snap["generated_at"] = day_ago.clone().into();
    snap["sections"]["agents"]["checked_at"] = day_ago.into();
    std::fs::write(&path, snap.to_string()).unwrap();
    let stale = ask(&config, json!([{"op": "call", "name": "fleet_status"}]));
    let stale = ok(&stale[0]);
    assert_eq!(stale["isError"], true, "{stale:#}");
    assert!(
        text(stale).starts_with("Do not trust this yet: "),
        "{stale:#}"
    );
    assert!(
        text(stale).contains("agent vega"),
        "what it last knew: {stale:#}"
    );
    assert_eq!(envelope(stale)["name"], "DEPENDENCY_UNAVAILABLE");
    assert_eq!(stale["structuredContent"]["stale"], true);

    std::fs::remove_file(&path).unwrap();
    let none = ask(&config, json!([{"op": "call", "name": "fleet_status"}]));
    let none = ok(&none[0]);
    assert_eq!(none["isError"], true, "{none:#}");
    assert!(text(none).contains("no snapshot yet"), "{none:#}");
}

/// docs/agents.md's MCP example, run as written with the official SDK, `fleetdash` found on the
/// PATH as a client finds it.
#[test]
fn the_agents_doc_mcp_example_prints_the_glance() {
    let (_scratch, config) = fleet();
    let doc = std::fs::read_to_string(repo_root().join("docs/agents.md")).unwrap();
    let example = doc
        .split("## MCP")
        .nth(1)
        .and_then(|mcp| mcp.split("```python\n").nth(1))
        .and_then(|b| b.split("```").next())
        .expect("docs/agents.md has a python block under MCP");
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("ask.py");
    std::fs::write(&script, example).unwrap();
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_fleetdash"))
        .parent()
        .unwrap()
        .to_path_buf();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new(repo_root().join(".venv/mcp/bin/python"))
        .arg(&script)
        .env("FLEETDASH_CONFIG", &config)
        .env("PATH", path)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.starts_with("✖ 1 agent down"), "{stdout}");
    assert!(stdout.contains("✖ agent vega · "), "{stdout}");
}

/// Issue 45: the hub agent (stdio without `--operator`) asks for the report of a period and
/// gets the report built from the state dir: since a moment, or by default since the last
/// scheduled report ended; a moment it cannot read, or one after now, is its mistake.
#[test]
fn the_hub_asks_for_the_report_of_a_period() {
    let (scratch, config) = fleet();
    let t0 = scratch.snapshot().generated_at;
    let state = scratch.path().join("state");
    let log = state.join(fleetdash::write::transitions::FILE_NAME);
    let fixture = support::report::with_flap_and_recovery(&std::fs::read(&log).unwrap(), t0);
    std::fs::write(&log, fixture).unwrap();
    let since =
        support::report::since_before_all(t0).to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let ahead = (chrono::Utc::now() + chrono::Duration::hours(1))
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let asked = json!([
        {"op": "call", "name": "report", "arguments": {"since": since}},
        {"op": "call", "name": "report", "arguments": {"since": "lunch"}},
        {"op": "call", "name": "report", "arguments": {"since": ahead}},
    ]);
    let results = ask(&config, asked);
    let whole = ok(&results[0]);
    assert_ne!(whole["isError"], true, "{whole:#}");
    support::report::assert_whole("MCP", &text(whole), &whole["structuredContent"]);
    for bad in &results[1..] {
        assert_eq!(ok(bad)["isError"], true, "{bad:#}");
        assert_eq!(envelope(ok(bad))["name"], "INVALID_REQUEST", "{bad:#}");
    }
    assert!(text(ok(&results[2])).contains("after now"), "{results:?}");

    std::fs::write(
        state.join(fleetdash::report::state::FILE_NAME),
        support::report::state_covering_until(t0),
    )
    .unwrap();
    let results = ask(&config, json!([{"op": "call", "name": "report"}]));
    let since_last = ok(&results[0]);
    support::report::assert_since_last_report(
        "MCP, no since",
        &text(since_last),
        &since_last["structuredContent"],
        t0,
    );
}

/// A process killed and reaped when the test ends.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `steps` through the SDK's Streamable HTTP client against `url` with `token`.
fn ask_http(url: &str, token: Option<&str>, steps: Value) -> Vec<Value> {
    let mut child = Command::new(repo_root().join(".venv/mcp/bin/python"))
        .arg(repo_root().join("tests/peers/mcp_client.py"))
        .args(["--url", url])
        .args(token.map(|t| ["--token", t]).into_iter().flatten())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(steps.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .chain((!out.status.success()).then(|| {
            json!({"error": {"type": "ClientFailed",
                             "message": String::from_utf8_lossy(&out.stderr).to_string()}})
        }))
        .collect()
}

/// The MCP face over Streamable HTTP at the intake's `/mcp` (`fleetdash run`): the operator's
/// token and the hub agent's (`role = "hub"`) are answered; another agent's token and none
/// are refused before any tool runs.
#[test]
fn the_intakes_mcp_answers_the_operator_and_the_hub_and_refuses_the_others() {
    let scratch = Scratch::new();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    for (file, token) in [
        ("op.token", "operator-mcp-7f31c2d9"),
        ("min.token", "report-min-0c8e41aa"),
        ("sol.token", "report-sol-52b9d7e3"),
    ] {
        std::fs::write(scratch.path().join(file), token).unwrap();
    }
    let config = scratch.config(&format!(
        "[cadence]\nagents = \"1s\"\n\n\
         [intake]\nlisten = \"127.0.0.1:{port}\"\noperator_token_file = \"op.token\"\n\n\
         [work_queue]\ndb = \"state/tasks.db\"\n\n\
         [[agents]]\nname = \"min\"\nendpoint = \"{refused}\"\ndialect = \"v1\"\n\
         report_token_file = \"min.token\"\nrole = \"hub\"\n\n\
         [[agents]]\nname = \"sol\"\nendpoint = \"{refused}\"\ndialect = \"v1\"\n\
         report_token_file = \"sol.token\"\n",
        refused = support::refused_endpoint()
    ));
    let _run = Killed(
        support::fleetdash()
            .args(["run", "--config"])
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let deadline = std::time::Instant::now() + support::HANG_BUDGET;
    while !scratch.status_path().exists()
        || std::net::TcpStream::connect(("127.0.0.1", port)).is_err()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "fleetdash run never wrote nor listened"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let url = format!("http://127.0.0.1:{port}/mcp");
    let status = json!([{"op": "call", "name": "fleet_status"}]);
    for (who, token) in [
        ("the operator", "operator-mcp-7f31c2d9"),
        ("the hub", "report-min-0c8e41aa"),
    ] {
        let results = ask_http(&url, Some(token), status.clone());
        let answer = ok(&results[0]);
        assert!(text(answer).contains("agent min · "), "{who}: {answer:#}");
        assert!(text(answer).contains("agent sol · "), "{who}: {answer:#}");
    }
    // Every read tool and resource over HTTP too, with the hub's token.
    let all = ask_http(
        &url,
        Some("report-min-0c8e41aa"),
        json!([
            {"op": "list_tools"},
            {"op": "call", "name": "needs_you"},
            {"op": "call", "name": "explain", "arguments": {"key": "agent:sol"}},
            {"op": "call", "name": "changes_since", "arguments": {"since": "2000-01-01T00:00:00Z"}},
            {"op": "call", "name": "work_queue"},
            {"op": "call", "name": "explain", "arguments": {"key": "agent:nobody"}},
            {"op": "read_resource", "uri": "fleet://glance.txt"},
            {"op": "call", "name": "report"},
        ]),
    );
    assert_eq!(ok(&all[0])["tools"].as_array().unwrap().len(), 8);
    assert!(text(ok(&all[1])).contains("agent sol · "), "{all:?}");
    assert!(
        text(ok(&all[2])).starts_with("✖ agent sol: fail"),
        "{all:?}"
    );
    assert!(
        text(ok(&all[3])).contains("agent sol: new → fail"),
        "{all:?}"
    );
    assert!(
        text(ok(&all[4])).starts_with("The work queue is empty."),
        "{all:?}"
    );
    assert_eq!(envelope(ok(&all[5]))["name"], "NOT_FOUND");
    let glance = ok(&all[6])["contents"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(glance.contains("agent min · "), "{all:?}");
    // The report of the last day (no scheduled report yet), from what `run` wrote.
    let report = ok(&all[7]);
    assert_ne!(report["isError"], true, "{report:#}");
    let title = report["structuredContent"]["title"]
        .as_str()
        .unwrap_or_default();
    assert!(
        title.starts_with("Since ") && title.contains(" needs you"),
        "{report:#}"
    );
    for agent in ["min", "sol"] {
        assert!(
            report["structuredContent"]["needs_now"]
                .as_array()
                .unwrap()
                .iter()
                .any(|l| l
                    .as_str()
                    .unwrap()
                    .starts_with(&format!("✖ agent {agent}: "))),
            "{report:#}"
        );
    }
    for (who, token) in [
        ("another agent", Some("report-sol-52b9d7e3")),
        ("no token", None),
    ] {
        let results = ask_http(&url, token, status.clone());
        assert!(
            results.iter().any(|r| r.get("error").is_some())
                && results.iter().all(|r| r.get("ok").is_none()),
            "{who} must be refused: {results:?}"
        );
    }
    // The refusals themselves, as HTTP says them: before rmcp reads anything.
    for (token, code, name) in [
        (Some("report-sol-52b9d7e3"), "403", "PERMISSION_DENIED"),
        (None, "401", "AUTHENTICATION_REQUIRED"),
    ] {
        let reply = raw_post(port, "/mcp", token);
        assert!(reply.starts_with(&format!("HTTP/1.1 {code}")), "{reply}");
        assert!(reply.contains("application/problem+json"), "{reply}");
        assert!(reply.contains(name), "{reply}");
    }
}

/// A POST of an empty JSON object to 127.0.0.1:`port`, with `token` as its bearer; the reply.
fn raw_post(port: u16, path: &str, token: Option<&str>) -> String {
    use std::io::Read;
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(support::HANG_BUDGET)).unwrap();
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{auth}Content-Length: 2\r\n\
         Connection: close\r\n\r\n{{}}"
    )
    .unwrap();
    let mut reply = String::new();
    let _ = s.read_to_string(&mut reply);
    reply
}

/// The operator's tools over stdio (`fleetdash mcp --operator`): a silence recorded as
/// `fleetdash silence add` records it, a task assigned as `fleetdash task assign` does; without
/// `--operator` both are refused (isError, PERMISSION_DENIED) and nothing is written.
#[test]
fn the_operator_silences_and_assigns_through_mcp_and_the_hub_may_not() {
    let (_scratch, config) = fleet();
    let steps = json!([
        {"op": "call", "name": "silence",
         "arguments": {"matchers": ["agent=vega"], "length": "2h", "reason": "disk swap"}},
        {"op": "call", "name": "assign_task",
         "arguments": {"title": "Renew the cert", "to": "vega", "deadline": "45m"}},
        {"op": "call", "name": "silence",
         "arguments": {"matchers": ["nonsense"], "length": "2h"}},
    ]);
    let hub = ask(&config, steps.clone());
    for refused in &hub[..2] {
        assert_eq!(
            envelope(ok(refused))["name"],
            "PERMISSION_DENIED",
            "{refused}"
        );
    }
    let list = |what: &str| {
        let out = support::fleetdash()
            .args([what, "list", "--config"])
            .arg(&config)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    assert!(
        !list("silence").contains("agent=vega"),
        "the hub silenced nothing"
    );

    let done = ask_as(&config, &["--operator"], steps);
    let silenced = ok(&done[0]);
    assert!(
        text(silenced).starts_with("silenced agent=vega until ")
            && text(silenced).contains("(disk swap)"),
        "{silenced:#}"
    );
    let listed = list("silence");
    assert!(
        listed.contains("agent=vega") && listed.contains("disk swap"),
        "{listed}"
    );
    let assigned = ok(&done[1]);
    assert!(
        text(assigned).ends_with("\"Renew the cert\""),
        "{assigned:#}"
    );
    let tasks = support::fleetdash()
        .args(["tasks", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    let tasks = String::from_utf8_lossy(&tasks.stdout);
    assert!(tasks.contains("\"Renew the cert\""), "{tasks}");
    let bad = ok(&done[2]);
    assert_eq!(envelope(bad)["name"], "INVALID_REQUEST", "{bad:#}");
}

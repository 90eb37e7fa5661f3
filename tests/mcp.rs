//! `fleetdash mcp` over stdio, asked by the official MCP Python SDK's own client (mcp 2.3.0,
//! tests/peers/mcp_client.py), as a local agent would: the tools listed with their schemas, each
//! called, the error shapes seed 000 binds ASC to (a tool that fails is `isError: true` with the
//! ASC envelope as an `application/agent-status+json` resource; an unknown tool stays a
//! protocol error), and a stale snapshot.

mod support;

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use support::{Scratch, repo_root};

/// Runs `steps` through the SDK's client against `fleetdash mcp --config CONFIG`.
fn ask(config: &std::path::Path, steps: Value) -> Vec<Value> {
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
            "changes_since",
            "explain",
            "fleet_status",
            "needs_you",
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

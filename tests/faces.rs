//! Issue 32, "every face guarded alike", tried as a hostile or careless client would, against
//! `fleetdash run` on loopback: `/mcp` held to the A2A routes' deadlines, cap, budgets and
//! refusal shapes, and a fleet that arrives from one address (every agent behind an SSH tunnel
//! is 127.0.0.1) still heard while 64 slow connections from that address hold what they can.

use crate::support;
use crate::support::hub;

use hub::{Answer, read_answer};

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use support::{HANG_BUDGET, Scratch};

/// The fleet of these tests: ten agents, the hub agent, and `rogue`, an agent whose client
/// misbehaves. Each with its report token.
const FLEET: &[&str] = &[
    "a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "a9", "hub", "rogue",
];
const OPERATOR: &str = "operator-faces-4c19e2b7";

fn token(agent: &str) -> String {
    format!("report-{agent}-7d3a90c1e5")
}

struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `fleetdash run` with the fleet and `[intake]` plus `intake_extra`, listening; its port.
fn run(scratch: &Scratch, intake_extra: &str) -> (Killed, u16) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    std::fs::write(scratch.path().join("op.token"), OPERATOR).unwrap();
    let mut agents = String::new();
    for agent in FLEET {
        std::fs::write(scratch.path().join(format!("{agent}.token")), token(agent)).unwrap();
        let role = if *agent == "hub" {
            "role = \"hub\"\n"
        } else {
            ""
        };
        agents.push_str(&format!(
            "[[agents]]\nname = \"{agent}\"\nendpoint = \"{refused}\"\ndialect = \"v1\"\n\
             report_token_file = \"{agent}.token\"\n{role}\n",
            refused = support::refused_endpoint()
        ));
    }
    let config = scratch.config(&format!(
        "[cadence]\nagents = \"30s\"\n\n\
         [intake]\nlisten = \"127.0.0.1:{port}\"\noperator_token_file = \"op.token\"\n\
         {intake_extra}\n\n\
         [work_queue]\ndb = \"state/tasks.db\"\n\n{agents}"
    ));
    let child = Killed(
        support::fleetdash()
            .args(["run", "--config"])
            .arg(&config)
            .env("FLEETDASH_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let deadline = std::time::Instant::now() + HANG_BUDGET;
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "fleetdash run never listened"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    (child, port)
}

/// A POST to `path` with `token`, whole at once.
fn post(port: u16, path: &str, token: Option<&str>, content_type: &str, body: &str) -> Answer {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(HANG_BUDGET)).unwrap();
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: {content_type}\r\n\
         Accept: application/json, text/event-stream\r\n{auth}Content-Length: {}\r\n\
         Connection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    let _ = s.write_all(body.as_bytes());
    read_answer(s)
}

fn tools_list() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}).to_string()
}

#[track_caller]
fn assert_problem(a: &Answer, status: u16, asc: &str) {
    assert_eq!(a.status, status, "{}\n{}", a.headers, a.body);
    assert!(
        a.header("content-type")
            .is_some_and(|t| t == "application/problem+json"),
        "{}",
        a.headers
    );
    assert_eq!(a.json()["agent_status"]["name"], asc, "{}", a.body);
}

/// Before: a body trickled to `/mcp` at a byte a second was still open after 70 s (POST / cut
/// it at 3 s); the cap was the MCP SDK's 4 MiB; a malformed body got 415 text/plain ("fail to
/// deserialize"); 45 `tools/list` in a row on the hub's token were all answered with
/// `read_rate_per_minute = 30`. Now the same deadline, cap, refusals and budget as POST /.
#[test]
fn mcp_is_held_to_the_intakes_deadline_cap_refusals_and_budget() {
    let scratch = Scratch::new();
    let (_run, port) = run(
        &scratch,
        "body_timeout = \"2s\"\nmax_body_bytes = 4096\nread_rate_per_minute = 30",
    );
    let hub = token("hub");

    // A body a byte a second: cut at the body deadline, 408 problem+json.
    let mut slow = TcpStream::connect(("127.0.0.1", port)).unwrap();
    slow.set_read_timeout(Some(Duration::from_millis(900)))
        .unwrap();
    write!(
        slow,
        "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nAuthorization: Bearer {hub}\r\n\
         Content-Length: 200\r\n\r\n{{"
    )
    .unwrap();
    let mut raw = Vec::new();
    let mut sent = 1;
    let started = std::time::Instant::now();
    loop {
        let mut buf = [0u8; 4096];
        match slow.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => raw.extend_from_slice(&buf[..n]),
            Err(_) => {}
        }
        if raw.windows(4).any(|w| w == b"\r\n\r\n") {
            break;
        }
        assert!(
            started.elapsed() < HANG_BUDGET,
            "a trickled /mcp body was still open after {sent} bytes"
        );
        if slow.write_all(b" ").is_ok() {
            sent += 1;
        }
    }
    let text = String::from_utf8_lossy(&raw).to_ascii_lowercase();
    assert!(text.starts_with("http/1.1 408"), "{text}");
    assert!(text.contains("application/problem+json"), "{text}");
    assert!(sent < 200, "the whole body was waited for");

    // The intake's cap, declared or not.
    let big = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{{\"pad\":\"{}\"}}}}",
        "x".repeat(5000)
    );
    assert_problem(
        &post(port, "/mcp", Some(&hub), "application/json", &big),
        413,
        "INVALID_REQUEST",
    );

    // Malformed: a JSON-RPC parse error, with the ASC envelope; not JSON-RPC: invalid request.
    for (body, code) in [
        ("{not json", -32700),
        ("{\"id\":1,\"method\":\"x\"}", -32600),
    ] {
        let a = post(port, "/mcp", Some(&hub), "application/json", body);
        assert_eq!(a.status, 400, "{body}: {}", a.body);
        assert!(
            a.header("content-type")
                .is_some_and(|t| t == "application/json"),
            "{}",
            a.headers
        );
        let reply = a.json();
        assert_eq!(reply["jsonrpc"], "2.0");
        assert_eq!(reply["id"], Value::Null);
        assert_eq!(reply["error"]["code"], code, "{reply}");
        assert_eq!(
            reply["error"]["data"]["agent_status"]["name"], "INVALID_REQUEST",
            "{reply}"
        );
    }
    // Not JSON at all: 415 as on POST /.
    assert_problem(
        &post(port, "/mcp", Some(&hub), "text/plain", &tools_list()),
        415,
        "INVALID_REQUEST",
    );
    // The MCP SDK's own refusal (no Accept for its stream) leaves as problem+json too.
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(HANG_BUDGET)).unwrap();
    let list = tools_list();
    write!(
        s,
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Accept: text/html\r\nAuthorization: Bearer {hub}\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{list}",
        list.len()
    )
    .unwrap();
    let a = read_answer(s);
    assert!(a.status >= 400, "{}", a.body);
    assert!(
        a.header("content-type")
            .is_some_and(|t| t.starts_with("application/problem+json")),
        "{}",
        a.headers
    );

    // The read budget: 30 a minute for the hub's token, spent above by the requests that
    // reached it (the 400s); the rest of 45 tools/list get 429 problem+json.
    let statuses: Vec<u16> = (0..45)
        .map(|_| post(port, "/mcp", Some(&hub), "application/json", &list).status)
        .collect();
    let limited = statuses.iter().filter(|s| **s == 429).count();
    let answered = statuses.iter().filter(|s| **s == 200).count();
    println!("45 tools/list at read_rate_per_minute = 30: {answered} answered, {limited} 429");
    assert!(limited >= 15, "{statuses:?}");
    assert_eq!(answered + limited, 45, "{statuses:?}");
    let a = post(port, "/mcp", Some(&hub), "application/json", &list);
    assert_problem(&a, 429, "RATE_LIMITED");
    assert!(a.header("retry-after").is_some(), "{}", a.headers);
}

/// How a slow client behaves: what it sends at once, then what it trickles.
#[derive(Clone)]
struct Slow {
    path: &'static str,
    token: Option<String>,
    /// The headers trickle too (a slowloris); else only the body.
    headers_trickle: bool,
}

impl Slow {
    fn head(&self) -> String {
        let auth = self
            .token
            .as_ref()
            .map(|t| format!("Authorization: Bearer {t}\r\n"))
            .unwrap_or_default();
        format!(
            "POST {} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\n{auth}Content-Length: 1000\r\n\r\n",
            self.path
        )
    }

    /// Holds one slow connection after another (reconnecting when cut) until `stop`; counts the
    /// connections it made and how they ended.
    fn hold(self, port: u16, stop: Arc<AtomicBool>, seen: Arc<Seen>) {
        let head = self.head().into_bytes();
        while !stop.load(Ordering::Relaxed) {
            let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
                seen.refused.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(20));
                continue;
            };
            seen.connections.fetch_add(1, Ordering::Relaxed);
            let (now, later) = if self.headers_trickle {
                (&head[..20], &head[20..])
            } else {
                (&head[..], &b"{\"jsonrpc\":\"2.0\" "[..])
            };
            let _ = s.write_all(now);
            s.set_read_timeout(Some(Duration::from_millis(200)))
                .unwrap();
            let mut i = 0;
            let mut answer = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let mut buf = [0u8; 1024];
                match s.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => answer.extend_from_slice(&buf[..n]),
                    Err(e)
                        if e.kind() == std::io::ErrorKind::WouldBlock
                            || e.kind() == std::io::ErrorKind::TimedOut => {}
                    Err(_) => break,
                }
                let byte = later.get(i % later.len()).copied().unwrap_or(b' ');
                if s.write_all(&[byte]).is_err() {
                    break;
                }
                i += 1;
            }
            let status = String::from_utf8_lossy(&answer)
                .split(' ')
                .nth(1)
                .unwrap_or("cut")
                .to_string();
            seen.ended.lock().unwrap().push(status);
            // A hostile client comes straight back; a breath so as not to spin the machine.
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

#[derive(Default)]
struct Seen {
    connections: AtomicUsize,
    refused: AtomicUsize,
    ended: std::sync::Mutex<Vec<String>>,
}

/// A heartbeat as `agent`, on a fresh connection, with `deadline` for its answer.
fn heartbeat(port: u16, agent: &str, n: usize, deadline: Duration) -> Result<Value, String> {
    let body = json!({"jsonrpc": "2.0", "id": n, "method": "SendMessage", "params": {"message": {
        "role": "ROLE_USER", "messageId": format!("{agent}-beat-{n}"),
        "parts": [{"data": {"report": "heartbeat"}}]}}})
    .to_string();
    let mut s = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(deadline)).unwrap();
    let head = format!(
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nA2A-Version: 1.0\r\n\
         Authorization: Bearer {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        token(agent),
        body.len()
    );
    s.write_all(head.as_bytes()).map_err(|e| e.to_string())?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| format!("no answer: {text:?}"))?;
    if !head.starts_with("HTTP/1.1 200") {
        return Err(head.lines().next().unwrap_or_default().to_string());
    }
    serde_json::from_str(body).map_err(|e| format!("{e}: {body}"))
}

/// Before: the per-peer cap (32, by address) let one client lock the fleet out: 34 slow
/// connections from 127.0.0.1 and an agent's next request was reset. Now 64 slow connections
/// from 127.0.0.1 — headers trickled (no token, a wrong one, an agent's, the hub's in them),
/// bodies trickled with no token, a wrong one, the rogue agent's, the hub's on /mcp — held and
/// renewed as they are cut, while each of the 11 other agents' heartbeats is answered within
/// its deadline, three rounds over.
#[test]
fn one_client_from_the_fleets_address_never_takes_the_connections_the_agents_need() {
    const DEADLINE: Duration = Duration::from_secs(10);
    let scratch = Scratch::new();
    let (_run, port) = run(&scratch, "header_timeout = \"3s\"\nbody_timeout = \"3s\"");
    let wrong = Some("report-nobody-00000000".to_string());
    let mut slow: Vec<Slow> = Vec::new();
    for t in [None, wrong.clone(), Some(token("a0")), Some(token("hub"))] {
        for _ in 0..4 {
            slow.push(Slow {
                path: "/",
                token: t.clone(),
                headers_trickle: true,
            });
        }
    }
    for (path, t) in [
        ("/", None),
        ("/", wrong),
        ("/", Some(token("rogue"))),
        ("/mcp", Some(token("hub"))),
    ] {
        for _ in 0..12 {
            slow.push(Slow {
                path,
                token: t.clone(),
                headers_trickle: false,
            });
        }
    }
    assert_eq!(slow.len(), 64);
    let stop = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(Seen::default());
    let holders: Vec<_> = slow
        .into_iter()
        .map(|s| {
            let (stop, seen) = (stop.clone(), seen.clone());
            std::thread::spawn(move || s.hold(port, stop, seen))
        })
        .collect();
    // Every slow client connected once before the agents report.
    let deadline = std::time::Instant::now() + HANG_BUDGET;
    while seen.connections.load(Ordering::Relaxed) < 64 {
        assert!(
            std::time::Instant::now() < deadline,
            "the slow clients never connected"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    let agents: Vec<&str> = FLEET.iter().copied().filter(|a| *a != "rogue").collect();
    assert_eq!(agents.len(), 11);
    let mut failures = Vec::new();
    for round in 0..3 {
        let beats: Vec<_> = agents
            .iter()
            .map(|agent| {
                let agent = agent.to_string();
                std::thread::spawn(move || {
                    let answer = heartbeat(port, &agent, round, DEADLINE);
                    (agent, answer)
                })
            })
            .collect();
        for beat in beats {
            let (agent, answer) = beat.join().unwrap();
            match answer {
                Ok(reply) if reply.get("result").is_some() => {}
                Ok(reply) => failures.push(format!("round {round}, {agent}: {reply}")),
                Err(e) => failures.push(format!("round {round}, {agent}: {e}")),
            }
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    stop.store(true, Ordering::Relaxed);
    for h in holders {
        h.join().unwrap();
    }
    let ended = seen.ended.lock().unwrap().clone();
    let count = |s: &str| ended.iter().filter(|e| e.as_str() == s).count();
    println!(
        "64 slow clients from 127.0.0.1: {} connections made, {} refused at connect; ended \
         401 x{}, 408 x{}, 429 x{}, cut x{}; 11 agents x 3 rounds of heartbeats: {} failed",
        seen.connections.load(Ordering::Relaxed),
        seen.refused.load(Ordering::Relaxed),
        count("401"),
        count("408"),
        count("429"),
        count("cut"),
        failures.len()
    );
    assert!(failures.is_empty(), "{failures:#?}");
    for refusal in ["401", "408", "429"] {
        assert!(
            count(refusal) > 0,
            "no slow client was answered {refusal}: the guard did not hold as designed"
        );
    }
}

/// A tools/call on `/mcp` with `token`: the JSON-RPC reply.
fn mcp_call(port: u16, token: &str, tool: &str, arguments: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                      "params": {"name": tool, "arguments": arguments}})
    .to_string();
    let a = post(port, "/mcp", Some(token), "application/json", &body);
    assert_eq!(a.status, 200, "{}\n{}", a.headers, a.body);
    // The SDK answers JSON, or one SSE event when it streams.
    let json = a
        .body
        .lines()
        .find_map(|l| l.strip_prefix("data:"))
        .unwrap_or(&a.body)
        .trim()
        .to_string();
    serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {}", a.body))
}

/// Before: `fleetdash silence add … --for 300000y` (and the MCP `silence` tool) panicked on
/// `DateTime + TimeDelta` overflow inside a task. Now every place where input meets time
/// refuses a span past the horizon (366 d) with the limit named: the CLI exits 2, A2A and MCP
/// answer the INVALID_REQUEST envelope, `/act` answers 400; and nothing is written.
#[test]
fn a_time_out_of_range_is_refused_at_every_entry_point_with_the_limit_named() {
    let scratch = Scratch::new();
    let (_run, port) = run(&scratch, "");
    let config = scratch.path().join("fleetdash.toml");

    // The CLI.
    for args in [
        &[
            "silence", "add", "host=lab", "--for", "300000y", "--reason", "x",
        ][..],
        &[
            "task",
            "assign",
            "--deadline",
            "300000y",
            "--to",
            "a0",
            "Far away",
        ][..],
    ] {
        let out = support::fleetdash()
            .args(args)
            .arg("--config")
            .arg(&config)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("more than 366 d ahead"),
            "{args:?}: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    assert!(
        !scratch.path().join("state/silences.json").exists(),
        "a refused silence was written"
    );

    // A2A: a deadline past the horizon, relative or absolute, and an ETA.
    for data in [
        json!({"report": "assign", "title": "Far", "owner": "a0", "deadline_in": "300000y"}),
        json!({"report": "assign", "title": "Far", "owner": "a0",
               "deadline": "9999-12-31T00:00:00Z"}),
    ] {
        let body = json!({"jsonrpc": "2.0", "id": 3, "method": "message/send", "params": {
            "message": {"kind": "message", "role": "user", "messageId": "far-1",
                        "parts": [{"kind": "data", "data": data}]}}})
        .to_string();
        let reply = post(port, "/", Some(&token("a1")), "application/json", &body).json();
        assert_eq!(reply["error"]["code"], -32602, "{reply}");
        assert!(
            reply["error"]["message"]
                .as_str()
                .unwrap()
                .contains("more than 366 d ahead"),
            "{reply}"
        );
        assert_eq!(
            reply["error"]["data"]["agent_status"]["name"], "INVALID_REQUEST",
            "{reply}"
        );
    }

    // MCP, as the operator: a silence and an assignment.
    for (tool, arguments) in [
        (
            "silence",
            json!({"matchers": ["host=lab"], "length": "300000y", "reason": "x"}),
        ),
        (
            "assign_task",
            json!({"title": "Far away", "to": "a0", "deadline": "300000y"}),
        ),
    ] {
        let reply = mcp_call(port, OPERATOR, tool, arguments);
        let result = &reply["result"];
        assert_eq!(result["isError"], true, "{tool}: {reply}");
        let words = result["content"][0]["text"].as_str().unwrap_or_default();
        assert!(words.contains("more than 366 d ahead"), "{tool}: {reply}");
        let envelope: Value = serde_json::from_str(
            result["content"][1]["resource"]["text"]
                .as_str()
                .unwrap_or("{}"),
        )
        .unwrap();
        assert_eq!(envelope["name"], "INVALID_REQUEST", "{tool}: {reply}");
    }
    assert!(
        !scratch.path().join("state/silences.json").exists(),
        "a refused silence was written"
    );

    // /act: a link signed with this installation's key whose expiry is past any date.
    let garbled = post(port, "/act?t=x", None, "application/json", "");
    assert_eq!(garbled.status, 403, "{}", garbled.body);
    let key = std::fs::read(scratch.path().join("state/phone-actions.key")).unwrap();
    let payload = "v1\nsilence\n99999999999999\nbm9uY2U\nagent:a0";
    let signature = {
        use hmac::Mac as _;
        let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(&key).unwrap();
        mac.update(payload.as_bytes());
        mac.finalize().into_bytes()
    };
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let link = format!("/act?t={}.{}", b64.encode(payload), b64.encode(signature));
    let a = post(port, &link, None, "application/json", "");
    assert_problem(&a, 400, "INVALID_REQUEST");
    assert!(a.body.contains("366 d"), "{}", a.body);
    assert!(
        !scratch.path().join("state/silences.json").exists(),
        "a refused link silenced something"
    );
}

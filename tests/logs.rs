//! What fleetdash writes to its log (stderr): no secret at the most verbose level, whatever the
//! inputs hold, and no terminal colour codes when stderr is a file or a pipe.
//!
//! The secrets travel through real parts: real A2A peers on the official Python SDK (requiring
//! bearer tokens, echoing planted secrets in their cards and replies), the real
//! prometheus-node-exporter behind basic auth, audit logs whose summaries hold secrets, and
//! endpoint and node_exporter URLs with `user:password`. The HTTP client's own logging (reqwest,
//! hyper) is on too, as an operator turning `FLEETDASH_LOG=trace` on would have it.
//!
//! Needs the peers' venvs and node_exporter: run `scripts/setup-test-deps` once.

use crate::support;

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{Value, json};
use support::secrets::{BEARER, GLUED, JWT, SECRETS, SK, find_secret, glued_text};
use support::{PyPeer, Scratch, Sdk, refused_endpoint};

const NODE_EXPORTER: &str = "/usr/bin/prometheus-node-exporter";

/// Credentials in an agent's endpoint URL.
const ENDPOINT_USER: &str = "epuser";
const ENDPOINT_PASSWORD: &str = "PLANTEDepPa55w0rd";
/// A user name whose percent-decoded bytes are not UTF-8: reqwest then leaves the whole userinfo
/// in the URL it connects to, and logs it ("starting new connection: http://user:pass@...").
const ODD_ENDPOINT_USER: &str = "ep%FFuser";
/// Credentials in a node_exporter URL (node_exporter's web config checks them).
const EXPORTER_USER: &str = "neuser";
const EXPORTER_PASSWORD: &str = "PLANTEDnePa55w0rd";
/// Bearer tokens, by `token_env` and by `token_file`.
const ENV_TOKEN: &str = "PLANTEDenvTok3n9f2a7c";
const FILE_TOKEN: &str = "PLANTEDfileTok3n4b8d1e";
const TOKEN_VAR: &str = "FLEETDASH_TEST_LOGS_TOKEN";

/// Every form a planted credential could take in a log line: itself, and the Authorization
/// header values built from it.
fn credential_needles() -> Vec<String> {
    let basic = |user: &str, pass: &str| {
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"))
    };
    vec![
        ENDPOINT_PASSWORD.into(),
        format!("{ENDPOINT_USER}:"),
        ODD_ENDPOINT_USER.into(),
        basic(ENDPOINT_USER, ENDPOINT_PASSWORD),
        EXPORTER_PASSWORD.into(),
        format!("{EXPORTER_USER}:"),
        basic(EXPORTER_USER, EXPORTER_PASSWORD),
        ENV_TOKEN.into(),
        FILE_TOKEN.into(),
    ]
}

/// Fails naming the secret and the place when `text` holds any planted secret.
fn assert_clean(place: &str, text: &str) {
    if let Some(found) = find_secret(text) {
        panic!("{found} leaked into {place}:\n{}", excerpt(text, &found));
    }
    for needle in credential_needles() {
        assert!(
            !text.contains(&needle),
            "{needle:?} leaked into {place}:\n{}",
            excerpt(text, &needle)
        );
    }
}

/// The lines of `text` that hold the first 12 characters-or-fewer piece of `what`, or the start.
fn excerpt(text: &str, what: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("PLANTED") || what.split('"').any(|p| p.len() > 4 && l.contains(p)))
        .take(20)
        .collect();
    if lines.is_empty() {
        text.chars().take(4000).collect()
    } else {
        lines.join("\n")
    }
}

/// The real node_exporter on a free loopback port, behind basic auth (its web config holds a
/// bcrypt hash of the password, as `htpasswd -B` would make). Killed on drop.
struct Exporter {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Exporter {
    fn start() -> Exporter {
        assert!(
            Path::new(NODE_EXPORTER).exists(),
            "{NODE_EXPORTER} is missing: run scripts/setup-test-deps (apt-get install prometheus-node-exporter)"
        );
        let dir = tempfile::tempdir().unwrap();
        let hash = bcrypt::hash(EXPORTER_PASSWORD, 5).unwrap();
        let web = dir.path().join("web.yml");
        std::fs::write(
            &web,
            format!("basic_auth_users:\n  {EXPORTER_USER}: {hash}\n"),
        )
        .unwrap();
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let child = Command::new(NODE_EXPORTER)
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg(format!("--web.config.file={}", web.display()))
            .arg("--no-collector.systemd")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let exporter = Exporter {
            child,
            port,
            _dir: dir,
        };
        let deadline = Instant::now() + support::HANG_BUDGET;
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "node_exporter did not listen on port {port}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        exporter
    }

    fn url_with_credentials(&self) -> String {
        format!(
            "http://{EXPORTER_USER}:{EXPORTER_PASSWORD}@127.0.0.1:{}/metrics",
            self.port
        )
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn q(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

fn with_userinfo(endpoint: &str) -> String {
    with_user(endpoint, ENDPOINT_USER)
}

fn with_user(endpoint: &str, user: &str) -> String {
    endpoint.replace("http://", &format!("http://{user}:{ENDPOINT_PASSWORD}@"))
}

#[test]
fn the_most_verbose_log_holds_no_secret() {
    let scratch = Scratch::new();
    let exporter = Exporter::start();
    // The first peer also plants every glued secret (issue 21) in its card and replies.
    let planted = format!("{} {}", SK.value, glued_text());
    let specs: [(Sdk, Vec<&str>); 3] = [
        (Sdk::V1, vec!["--plant-secret", &planted]),
        (
            Sdk::V03,
            vec!["--require-token", ENV_TOKEN, "--plant-secret", JWT.value],
        ),
        (
            Sdk::V1,
            vec![
                "--require-token",
                FILE_TOKEN,
                "--plant-secret",
                BEARER.value,
            ],
        ),
    ];
    // The interpreters start in parallel.
    let peers: Vec<PyPeer> = std::thread::scope(|s| {
        let handles: Vec<_> = specs
            .iter()
            .map(|(sdk, args)| s.spawn(move || PyPeer::start(*sdk, args)))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });

    // The audit log's summaries hold every secret, glued ones too, and so do lines the reader
    // skips.
    let audit = scratch.path().join("secrets.a2a_audit.jsonl");
    let now = chrono::Utc::now().timestamp() as f64;
    let mut lines = Vec::new();
    let whole = SECRETS.iter().map(|s| s.value);
    for secret in whole.chain(GLUED.iter().map(|g| g.value.as_str())) {
        lines.push(
            json!({"ts": now - 30.0, "direction": "inbound", "peer": "min",
                   "summary": format!("said {secret}"), "task_id": secret})
            .to_string(),
        );
        lines.push(format!("not json {secret}"));
    }
    std::fs::write(&audit, lines.join("\n") + "\n").unwrap();
    let token_file = scratch.path().join("peer.token");
    std::fs::write(&token_file, format!("{FILE_TOKEN}\n")).unwrap();

    let agent = |name: &str, endpoint: &str, dialect: &str, extra: &str| {
        format!(
            "[[agents]]\nname = {}\nendpoint = {}\ndialect = {}\naudit_log = {}\n{extra}\n",
            q(name),
            q(endpoint),
            q(dialect),
            q(&audit.display().to_string())
        )
    };
    let body = [
        agent(
            "userinfo",
            &with_userinfo(&peers[0].endpoint()),
            "v1",
            "",
        ),
        agent(
            "odd-userinfo",
            &with_user(&peers[0].endpoint(), ODD_ENDPOINT_USER),
            "v1",
            "",
        ),
        agent(
            "env-token",
            &peers[1].endpoint(),
            "v0.3",
            &format!("token_env = {}\n", q(TOKEN_VAR)),
        ),
        agent(
            "file-token-and-userinfo",
            &with_userinfo(&peers[2].endpoint()),
            "auto",
            &format!("token_file = {}\n", q(&token_file.display().to_string())),
        ),
        // A refused peer with credentials: the failure path logs too.
        agent("refused", &with_userinfo(&refused_endpoint()), "v1", ""),
        format!(
            "[[hosts]]\nname = \"exporter\"\nsource = \"node_exporter\"\nurl = {}\ndisk_path = \"/\"\n",
            q(&exporter.url_with_credentials())
        ),
    ]
    .concat();
    let config = scratch.config(&body);

    let out = support::fleetdash()
        .args(["collect", "--config"])
        .arg(&config)
        .env("FLEETDASH_LOG", "trace")
        .env(TOKEN_VAR, ENV_TOKEN)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "collect failed: {:?}\n{}",
        out.status,
        stderr.chars().rev().take(4000).collect::<String>()
    );

    // The run was real: each secret did travel through the collector, and the HTTP client's
    // own connection logging was on.
    let snapshot: Value = serde_json::from_str(&scratch.snapshot_text()).unwrap();
    let row = |name: &str| -> Value {
        snapshot["agents"]
            .as_array()
            .and_then(|rows| rows.iter().find(|r| r["name"] == name))
            .cloned()
            .unwrap_or_else(|| panic!("no row {name}: {:#}", snapshot["agents"]))
    };
    for name in [
        "userinfo",
        "odd-userinfo",
        "env-token",
        "file-token-and-userinfo",
    ] {
        let r = row(name);
        assert!(
            r["up"] == true && r["heartbeat"]["dialect"].is_string() && r["skills_count"] == 1,
            "{name}: the peer must have accepted the credentials: {r:#}"
        );
    }
    assert_eq!(row("refused")["up"], false);
    let host = &snapshot["systems"][0];
    assert!(
        host["ram_total_gb"].is_number(),
        "node_exporter must have accepted the url's credentials: {host:#}"
    );
    assert!(
        stderr.contains("starting new connection"),
        "the HTTP client's debug lines are not in the log, so the test proves nothing:\n{}",
        stderr.chars().take(4000).collect::<String>()
    );

    assert_clean("stderr at FLEETDASH_LOG=trace", &stderr);
    let written: Vec<PathBuf> = ["out", "state"]
        .iter()
        .flat_map(|d| support::files_under(&scratch.path().join(d)))
        .collect();
    assert!(
        written.iter().any(|p| p.ends_with("status.json")),
        "{written:?}"
    );
    for file in written {
        let text = String::from_utf8_lossy(&std::fs::read(&file).unwrap()).into_owned();
        assert_clean(&file.display().to_string(), &text);
    }
}

#[test]
fn logs_to_a_pipe_carry_no_colour_codes() {
    let scratch = Scratch::new();
    let audit = scratch.audit_log("a", 60.0);
    let config = scratch.config(&support::agent_toml("a", &refused_endpoint(), "v1", &audit));
    // `output()` pipes stderr: not a terminal. NO_COLOR would hide the terminal check.
    let out = support::fleetdash()
        .args(["collect", "--config"])
        .arg(&config)
        .env("FLEETDASH_LOG", "debug")
        .env_remove("NO_COLOR")
        .output()
        .unwrap();
    support::assert_success(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("snapshot written"),
        "the info line is missing, so nothing was checked:\n{stderr}"
    );
    if let Some(at) = out.stderr.iter().position(|&b| b == 0x1b) {
        let from = at.saturating_sub(40);
        panic!(
            "an ESC byte (terminal colour code) in piped stderr at byte {at}: {:?}",
            String::from_utf8_lossy(&out.stderr[from..(at + 40).min(out.stderr.len())])
        );
    }
}

/// `FLEETDASH_LOG_FORMAT=json`: every line one JSON object (the debug lines of other crates
/// too), and a probe failure said with the ASC fields of seed 000 (`agent.status.code`,
/// `agent.status.name`) a shipper can count by.
#[test]
fn json_logs_are_one_object_per_line_with_the_asc_fields_of_a_failure() {
    let scratch = Scratch::new();
    let audit = scratch.audit_log("a", 60.0);
    let config = scratch.config(&support::agent_toml("a", &refused_endpoint(), "v1", &audit));
    let out = support::fleetdash()
        .args(["collect", "--config"])
        .arg(&config)
        .env("FLEETDASH_LOG", "debug")
        .env("FLEETDASH_LOG_FORMAT", "json")
        .output()
        .unwrap();
    support::assert_success(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<Value> = stderr
        .lines()
        .map(|line| {
            serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("not a JSON line ({e}): {line:?}\n{stderr}"))
        })
        .collect();
    assert!(
        lines.iter().any(|l| l["message"] == "snapshot written"),
        "the info line is missing, so nothing was checked:\n{stderr}"
    );
    for line in &lines {
        assert!(
            line["level"].is_string() && line["timestamp"].is_string(),
            "{line}"
        );
    }
    let failure = lines
        .iter()
        .find(|l| l["element"] == "agent:a")
        .unwrap_or_else(|| panic!("the agent's failure is not said:\n{stderr}"));
    assert_eq!(failure["level"], "WARN", "{failure}");
    assert_eq!(failure["to"], "red", "{failure}");
    assert!(
        failure["agent.status.code"]
            .as_u64()
            .is_some_and(|c| c / 1000 == 5),
        "a refused connection is a transient failure: {failure}"
    );
    assert!(failure["agent.status.name"].is_string(), "{failure}");

    // A format it does not know is said, and the log goes on as text.
    let out = support::fleetdash()
        .args(["collect", "--config"])
        .arg(&config)
        .env("FLEETDASH_LOG_FORMAT", "yaml")
        .output()
        .unwrap();
    support::assert_success(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("FLEETDASH_LOG_FORMAT=\"yaml\" is no log format"),
        "{stderr}"
    );
    assert!(!stderr.trim_start().starts_with('{'), "{stderr}");
}

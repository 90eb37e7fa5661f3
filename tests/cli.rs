//! The `fleetdash` commands as an operator runs them: exit codes, error lines, the server's
//! auth, graceful shutdown, and the demo fleet end to end.

use crate::support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use fleetdash::a2a::Wire;
use fleetdash_model::{Asc, Band, Probe, Snapshot};
use support::{Scratch, Sim, agent_toml, refused_endpoint};

fn stderr_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `fleetdash check --config CONFIG`.
fn check(config: &Path) -> Output {
    support::fleetdash()
        .args(["check", "--config"])
        .arg(config)
        .output()
        .unwrap()
}

#[test]
fn check_accepts_a_good_config_and_cites_the_stuck_rule() {
    let scratch = Scratch::new();
    let audit = scratch.audit_log("a", 1.0);
    let config = scratch.config(&agent_toml("a", "http://127.0.0.1:18301/", "v1", &audit));
    let out = check(&config);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("1 agents"), "{stdout}");
    assert!(
        stdout.contains("no_reply_seconds = 300 [plugins/platforms/a2a/adapter.py:38"),
        "{stdout}"
    );
}

/// Issue 44: without `rules`, the built-in rules (`check` says so); `rules show` prints them
/// as the shipped file, and with `--config` the rules in force as one rules file: saved and
/// named in a config, it is the same rules, every group from the file now.
#[test]
fn without_rules_check_says_built_in_and_rules_show_prints_a_file_to_start_from() {
    let scratch = Scratch::new();
    let path = scratch.path().join("fleetdash.toml");
    std::fs::write(&path, "output_dir = \"out\"\nstate_dir = \"state\"\n").unwrap();
    let out = check(&path);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(
            "rules: built in; no_reply_seconds = 300 [plugins/platforms/a2a/adapter.py:38"
        ),
        "{stdout}"
    );
    let show = |args: &[&str]| {
        let out = support::fleetdash()
            .args(["rules", "show"])
            .args(args)
            .output()
            .unwrap();
        support::assert_success(&out);
        String::from_utf8(out.stdout).unwrap()
    };
    assert_eq!(
        show(&[]),
        support::DEFAULT_RULES,
        "the shipped file, comments and all"
    );
    // One group of the operator's: the rest stays built in.
    std::fs::write(
        scratch.path().join("mine.yaml"),
        "ack:\n  within_seconds: 900\n  source: our own promise\n",
    )
    .unwrap();
    std::fs::write(
        &path,
        "output_dir = \"out\"\nstate_dir = \"state\"\nrules = \"mine.yaml\"\n",
    )
    .unwrap();
    let out = support::fleetdash()
        .args(["check", "--json", "--config"])
        .arg(&path)
        .output()
        .unwrap();
    support::assert_success(&out);
    let envelope: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        envelope["result"]["rules"]["from_file"],
        serde_json::json!(["ack"])
    );
    let shown = show(&["--config", path.to_str().unwrap()]);
    assert!(
        shown.contains("built in for the rest")
            && shown.contains("within_seconds: 900")
            && !shown.contains("within_seconds: 600"),
        "{shown}"
    );
    std::fs::write(scratch.path().join("mine.yaml"), &shown).unwrap();
    let out = check(&path);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("rules: "), "{stdout}");
    assert!(stdout.contains("mine.yaml (every group)"), "{stdout}");
    let out = support::fleetdash()
        .args(["check", "--json", "--config"])
        .arg(&path)
        .output()
        .unwrap();
    let envelope: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        envelope["result"]["rules"]["built_in"],
        serde_json::json!([])
    );
}

#[test]
fn check_reports_every_config_error_with_file_line_and_field() {
    let scratch = Scratch::new();
    let config = scratch.config(
        "[[agents]]\nname = \"a\"\nendpoint = \"ftp://x\"\n\n[[agents]]\nname = \"a\"\nendpoint = \"http://127.0.0.1:1\"\ndialect = \"v9\"\n",
    );
    let out = check(&config);
    assert_eq!(out.status.code(), Some(2));
    let stderr = stderr_of(&out);
    let file = config.display().to_string();
    for expected in [
        format!("{file}:10: agents[0].endpoint: expected an http:// or https:// URL"),
        format!("{file}:13: agents[1].name: duplicate agent name \"a\""),
        format!(
            "{file}:15: agents[1].dialect: unknown dialect \"v9\"; expected one of v1, v0.3, v0.3-content, auto"
        ),
    ] {
        assert!(
            stderr.contains(&expected),
            "missing {expected:?} in:\n{stderr}"
        );
    }
}

/// Issue 32: `[serve] listen` off loopback without TLS would send basic auth across the
/// network in the clear: check refuses it (exit 2, file, line and field, and what to do)
/// unless the operator says `plain_http_on_network = true` or TLS is on; loopback is fine.
#[test]
fn check_refuses_plain_http_off_loopback_unless_tls_or_said() {
    let scratch = Scratch::new();
    let file = |scratch: &Scratch, serve: &str| scratch.config(&format!("[serve]\n{serve}"));
    for listen in ["0.0.0.0:8080", "192.168.1.20:8080", "[::]:8080"] {
        let config = file(&scratch, &format!("listen = \"{listen}\"\n"));
        let out = check(&config);
        let stderr = stderr_of(&out);
        assert_eq!(out.status.code(), Some(2), "{listen}: {stderr}");
        let at = format!(
            "{}:9: serve.listen: {listen} is reachable from the network",
            config.display()
        );
        assert!(
            stderr.contains(&at),
            "{listen}: missing {at:?} in:\n{stderr}"
        );
        assert!(
            stderr.contains("set tls_cert and tls_key")
                && stderr.contains("plain_http_on_network = true"),
            "{stderr}"
        );
    }
    for serve in [
        "listen = \"127.0.0.1:8080\"\n",
        "listen = \"[::1]:8080\"\n",
        "listen = \"0.0.0.0:8080\"\nplain_http_on_network = true\n",
        "listen = \"0.0.0.0:8443\"\ntls_cert = \"cert.pem\"\ntls_key = \"key.pem\"\n",
    ] {
        let out = check(&file(&scratch, serve));
        assert!(out.status.success(), "{serve}: {}", stderr_of(&out));
    }
    // Half a pair is a mistake too, said at the key that is set.
    let config = file(&scratch, "tls_key = \"key.pem\"\n");
    let out = check(&config);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr_of(&out).contains(&format!("{}:9: serve.tls_cert: not set", config.display())),
        "{}",
        stderr_of(&out)
    );
}

#[test]
fn check_refuses_host_settings_ssh_or_a_probe_would_misread() {
    let scratch = Scratch::new();
    let config = scratch.config(
        "[[hosts]]\nname = \"lab\"\nsource = \"ssh\"\n\
         ssh = { destination = \"ops@lab;id\", port = 0 }\n\n\
         [[hosts]]\nname = \"exporter\"\nsource = \"node_exporter\"\n\
         url = \"http://127.0.0.1:9100/metrics\"\nservices = [\"nginx\", \"nginx\"]\n\
         crons = [{ name = \"job\", period = \"1h\", stamp = \"/tmp/job.ok\" }]\n",
    );
    let out = check(&config);
    assert_eq!(out.status.code(), Some(2));
    let stderr = stderr_of(&out);
    let file = config.display().to_string();
    for expected in [
        format!("{file}:11: hosts[0].ssh.destination: expected user@host or host"),
        format!("{file}:11: hosts[0].ssh.port: expected a port from 1 to 65535"),
        format!("{file}:17: hosts[1].services[1]: duplicate service \"nginx\" on this host"),
        format!("{file}:18: hosts[1].crons[0].stamp: stamp files need a local or ssh host"),
    ] {
        assert!(
            stderr.contains(&expected),
            "missing {expected:?} in:\n{stderr}"
        );
    }
}

#[test]
fn check_reports_rules_without_a_source() {
    let scratch = Scratch::new();
    let config = scratch.config("");
    let rules = support::DEFAULT_RULES.replace("  source: plugins/platforms/a2a/adapter.py:38 (_MIN_ORPHAN_TIMEOUT), cortex/tasks/states.yaml\n", "");
    std::fs::write(scratch.path().join("rules.yaml"), rules).unwrap();
    let out = check(&config);
    assert_eq!(out.status.code(), Some(2));
    let stderr = stderr_of(&out);
    assert!(
        stderr.contains(
            "rules.yaml:5: stuck.source: missing; every rule cites where its value comes from"
        ),
        "{stderr}"
    );
}

/// A config with one mistake of each kind, and a rules file with one of its own.
fn config_with_a_mistake_of_each_kind(scratch: &Scratch) -> std::path::PathBuf {
    let rules = support::DEFAULT_RULES.replace(
        "  source: plugins/platforms/a2a/adapter.py:38 (_MIN_ORPHAN_TIMEOUT), cortex/tasks/states.yaml\n",
        "",
    );
    std::fs::write(scratch.path().join("rules.yaml"), rules).unwrap();
    scratch.config(
        "[cadence]\nagents = \"20m\"\n\n\
         [serve]\nlisten = \"localhost\"\n\n\
         [[agents]]\nname = \"hub\"\nendpont = \"http://127.0.0.1:18301\"\n\n\
         [[agents]]\nname = \"lyra\"\nendpoint = \"ftp://127.0.0.1:18302\"\n\n\
         [[hosts]]\nname = \"lab\"\nsource = \"ssh\"\nssh = { destination = \"-oProxyCommand=x\" }\n",
    )
}

#[test]
fn check_lists_every_mistake_of_the_config_and_its_rules_in_one_run() {
    let scratch = Scratch::new();
    let config = config_with_a_mistake_of_each_kind(&scratch);
    let out = check(&config);
    assert_eq!(out.status.code(), Some(2));
    let stderr = stderr_of(&out);
    let file = config.display().to_string();
    let rules = scratch.path().join("rules.yaml").display().to_string();
    let expected = [
        // Found only once the rules file is read, yet listed with the rest.
        format!("{file}:9: cadence.agents: 20m is not shorter than the staleness limit (600 s"),
        format!("{file}:12: serve.listen: expected an address such as \"127.0.0.1:8080\""),
        format!("{file}:16: agents[0].endpont: unknown key `endpont`, did you mean `endpoint`?"),
        format!("{file}:20: agents[1].endpoint: expected an http:// or https:// URL with a host"),
        format!("{file}:25: hosts[0].ssh.destination: expected user@host or host"),
        format!("{rules}:5: stuck.source: missing; every rule cites where its value comes from"),
    ];
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), expected.len(), "{stderr}");
    for (line, expected) in lines.iter().zip(&expected) {
        assert!(
            line.starts_with(&format!("fleetdash: {expected}")),
            "expected {expected:?}, got {line:?} in:\n{stderr}"
        );
    }
}

#[test]
fn collect_refuses_a_config_with_many_mistakes_with_the_first_and_their_count() {
    let scratch = Scratch::new();
    let config = config_with_a_mistake_of_each_kind(&scratch);
    let out = scratch.collect(&config);
    assert_eq!(out.status.code(), Some(2));
    let stderr = stderr_of(&out);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    let file = config.display().to_string();
    assert!(
        stderr.starts_with(&format!(
            "fleetdash: {file}:9: cadence.agents: 20m is not shorter"
        )),
        "{stderr}"
    );
    assert!(
        stderr
            .trim_end()
            .ends_with("(and 5 more; `fleetdash check --config FILE` lists them all)"),
        "{stderr}"
    );
    assert!(!scratch.status_path().exists());
}

#[test]
fn check_warns_about_each_missing_file_the_config_names_and_still_passes() {
    let scratch = Scratch::new();
    let boards = scratch.path().join("boards");
    std::fs::create_dir(&boards).unwrap();
    let config = scratch.config(&format!(
        "[[agents]]\nname = \"hub\"\nendpoint = \"http://127.0.0.1:18301\"\n\
         audit_log = \"nowhere/a2a_audit.jsonl\"\ntoken_file = \"tokens/hub\"\n\n\
         [[boards]]\nname = \"research\"\ndb = \"{}/kanban.db\"\n",
        boards.display()
    ));
    let out = check(&config);
    let stderr = stderr_of(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).contains(": ok (1 agents"));
    let file = config.display().to_string();
    let at = |name: &str| scratch.path().join(name).display().to_string();
    let expected = [
        format!(
            "fleetdash: warning: {file}:11: agents[0].audit_log: \"{}\" does not exist",
            at("nowhere/a2a_audit.jsonl")
        ),
        format!(
            "fleetdash: warning: {file}:12: agents[0].token_file: \"{}\" does not exist",
            at("tokens/hub")
        ),
        format!(
            "fleetdash: warning: {file}:16: boards[0].db: \"{}\" does not exist",
            at("boards/kanban.db")
        ),
        "fleetdash: 3 warnings, about files the config names that are missing or unreadable \
         now; warnings do not fail check"
            .to_string(),
    ];
    assert_eq!(stderr.lines().collect::<Vec<_>>(), expected);
    // Looking for the board created nothing in its folder.
    assert_eq!(std::fs::read_dir(&boards).unwrap().count(), 0);
}

/// An id no account on this machine has, for running fleetdash as "another user".
const OTHER_UID: &str = "61000";

#[test]
fn check_as_another_user_warns_about_files_it_cannot_read_and_never_prints_a_token() {
    use std::os::unix::fs::PermissionsExt;
    let scratch = Scratch::new();
    // The scratch folder is readable by the other user; the token and the board are not.
    std::fs::set_permissions(scratch.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let secret = "sk-live-0123456789abcdef0123456789abcdef";
    let token = scratch.path().join("hub.token");
    std::fs::write(&token, secret).unwrap();
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
    let board_dir = scratch.path().join("board");
    std::fs::create_dir(&board_dir).unwrap();
    std::fs::set_permissions(&board_dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let db = board_dir.join("kanban.db");
    std::fs::write(&db, "SQLite format 3\0").unwrap();
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o600)).unwrap();
    let config = scratch.config(
        "[[agents]]\nname = \"hub\"\nendpoint = \"http://127.0.0.1:18301\"\n\
         token_file = \"hub.token\"\n\n\
         [[boards]]\nname = \"research\"\ndb = \"board/kanban.db\"\n",
    );
    let before = folder_listing(&board_dir);

    let out = std::process::Command::new("setpriv")
        .args(["--reuid", OTHER_UID, "--regid", OTHER_UID, "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_fleetdash"))
        .args(["check", "--config"])
        .arg(&config)
        .env("FLEETDASH_LOG", "warn")
        .output()
        .expect("setpriv (util-linux) runs fleetdash as another user");
    let stderr = stderr_of(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stderr}");
    let file = config.display().to_string();
    for expected in [
        format!(
            "fleetdash: warning: {file}:11: agents[0].token_file: \"{}\" cannot be read by this \
             user (uid {OTHER_UID}): Permission denied",
            token.display()
        ),
        format!(
            "fleetdash: warning: {file}:15: boards[0].db: \"{}\" cannot be read by this user \
             (uid {OTHER_UID}): Permission denied",
            db.display()
        ),
    ] {
        assert!(
            stderr.lines().any(|l| l.starts_with(&expected)),
            "missing {expected:?} in:\n{stderr}"
        );
    }
    assert!(!stderr.contains(secret) && !stdout.contains(secret));
    // Nothing was opened for writing or created beside the board.
    assert_eq!(folder_listing(&board_dir), before);
}

/// Each entry of a folder with its size and modification time.
fn folder_listing(dir: &Path) -> Vec<(String, u64, std::time::SystemTime)> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let m = e.metadata().unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                m.len(),
                m.modified().unwrap(),
            )
        })
        .collect();
    entries.sort();
    entries
}

#[test]
fn collect_with_an_unreadable_config_exits_2_with_one_line() {
    let out = support::fleetdash()
        .args(["collect", "--config", "/nonexistent/fleetdash.toml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = stderr_of(&out);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("fleetdash: /nonexistent/fleetdash.toml: cannot read the config file"),
        "{stderr}"
    );
}

#[test]
fn collect_with_failing_probes_exits_0_and_writes_them_as_data() {
    let scratch = Scratch::new();
    let audit = scratch.audit_log("a", 60.0);
    let sim = Sim::healthy("up", Wire::V03);
    let body = agent_toml("up", &sim.endpoint, "auto", &audit)
        + &agent_toml("down", &refused_endpoint(), "v1", &audit);
    let out = scratch.collect(&scratch.config(&body));
    assert!(out.status.success(), "{}", stderr_of(&out));
    let snap = scratch.snapshot();
    let Probe::Value(rows) = &snap.agents else {
        panic!("{:?}", snap.agents)
    };
    assert_eq!(rows[0].band, Band::Green, "{:?}", rows[0]);
    assert_eq!(rows[1].status, Asc::DEPENDENCY_UNAVAILABLE, "{:?}", rows[1]);
    // Sections without a collector are present and say so.
    assert_eq!(snap.systems, Probe::error("not collected"));
    assert!(!snap.sections.systems.configured);
    let text = scratch.snapshot_text();
    assert!(
        text.contains("\"systems\": \"error: not collected\""),
        "{text}"
    );
}

#[test]
fn collect_only_rejects_an_unknown_section() {
    let out = support::fleetdash()
        .args(["collect", "--config", "x.toml", "--only", "agents,gpus"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr_of(&out).contains("unknown section \"gpus\""),
        "{}",
        stderr_of(&out)
    );
}

/// A minimal HTTP/1.1 GET on loopback: status line and headers, then body.
fn http_get(addr: &str, path: &str, auth: Option<(&str, &str)>) -> (u16, String, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(support::HANG_BUDGET)).unwrap();
    let mut req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    if let Some((u, p)) = auth {
        let token = base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"));
        req.push_str(&format!("Authorization: Basic {token}\r\n"));
    }
    req.push_str("\r\n");
    stream.write_all(req.as_bytes()).unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, head.to_ascii_lowercase(), body.to_string())
}

struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn sigterm(child: &Child) {
    let ok = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
}

fn wait_exit(child: &mut Child, within: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(
            Instant::now() < deadline,
            "process did not exit within {within:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn serve_requires_basic_auth_on_every_path() {
    let scratch = Scratch::new();
    let audit = scratch.audit_log("a", 60.0);
    let hash = bcrypt::hash("correct horse", 4).unwrap();
    std::fs::write(scratch.path().join("htpasswd"), format!("young:{hash}\n")).unwrap();
    let body =
        agent_toml("a", &refused_endpoint(), "v1", &audit) + "[serve]\nhtpasswd = \"htpasswd\"\n";
    let config = scratch.config(&body);
    assert!(scratch.collect(&config).status.success());

    let mut child = support::fleetdash()
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(&config)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("fleetdash: serving on http://")
        .and_then(|s| s.strip_suffix('/'))
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_string();
    let running = Running(child);
    assert!(addr.starts_with("127.0.0.1:"));

    for path in ["/", "/api/status.json", "/anything"] {
        let (status, head, _) = http_get(&addr, path, None);
        assert_eq!(status, 401, "{path}");
        assert!(
            head.contains("www-authenticate: basic realm=\"fleetdash\""),
            "{head}"
        );
        assert_eq!(
            http_get(&addr, path, Some(("young", "wrong"))).0,
            401,
            "{path}"
        );
    }
    let (status, head, body) =
        http_get(&addr, "/api/status.json", Some(("young", "correct horse")));
    assert_eq!(status, 200);
    assert!(head.contains("cache-control: no-cache"), "{head}");
    let snap: Snapshot = serde_json::from_str(&body).unwrap();
    assert!(matches!(snap.agents, Probe::Value(ref r) if r.len() == 1));
    // No dist_dir: the page built into the binary; at `/`, with the verdict in it (issue 46).
    let (status, _, page) = http_get(&addr, "/index.html", Some(("young", "correct horse")));
    assert_eq!(status, 200);
    assert_eq!(
        page,
        std::fs::read_to_string(support::repo_root().join("page/index.html")).unwrap()
    );
    let (_, _, first) = http_get(&addr, "/", Some(("young", "correct horse")));
    assert_first_html(&first, &page);
    assert!(first.contains("<b>agent a</b>"), "{first}");

    sigterm(&running.0);
    let mut child = running;
    assert!(wait_exit(&mut child.0, support::HANG_BUDGET).success());
}

#[test]
fn serve_refuses_to_start_without_an_htpasswd() {
    let scratch = Scratch::new();
    let config = scratch.config("");
    let out = support::fleetdash()
        .args(["serve", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr_of(&out).contains("serve.htpasswd: not set"),
        "{}",
        stderr_of(&out)
    );
}

#[test]
fn run_collects_on_its_cadence_and_stops_cleanly_on_sigterm() {
    let scratch = Scratch::new();
    let audit = scratch.audit_log("a", 60.0);
    let sim = Sim::healthy("a", Wire::V1);
    let body = "[cadence]\nagents = \"1s\"\n\n".to_string()
        + &agent_toml("a", &sim.endpoint, "v1", &audit);
    let config = scratch.config(&body);
    let child = support::fleetdash()
        .args(["run", "--config"])
        .arg(&config)
        .spawn()
        .unwrap();
    let mut running = Running(child);

    let first = wait_for_snapshot(&scratch, support::HANG_BUDGET, |_| true);
    let later = wait_for_snapshot(&scratch, support::HANG_BUDGET, |s| {
        s.sections.agents.checked_at > first.sections.agents.checked_at
    });
    assert!(matches!(later.agents, Probe::Value(ref r) if r[0].band == Band::Green));

    sigterm(&running.0);
    assert!(wait_exit(&mut running.0, support::HANG_BUDGET).success());
}

fn wait_for_snapshot(
    scratch: &Scratch,
    within: Duration,
    pred: impl Fn(&Snapshot) -> bool,
) -> Snapshot {
    let deadline = Instant::now() + within;
    loop {
        if let Ok(bytes) = std::fs::read(scratch.status_path()) {
            let snap: Snapshot = serde_json::from_slice(&bytes).unwrap();
            if pred(&snap) {
                return snap;
            }
        }
        assert!(
            Instant::now() < deadline,
            "no matching snapshot within {within:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn demo_shows_eleven_agents_three_hosts_and_every_failure_mode_behind_auth() {
    let state = tempfile::tempdir().unwrap();
    let mut demo = support::Demo::start(state.path(), None);
    let (addr, password) = (demo.addr(), demo.password.clone());

    let status_path = state.path().join("out/status.json");
    let deadline = Instant::now() + support::HANG_BUDGET;
    let snap: Snapshot = loop {
        // Collectors write as they finish: wait for the agents pass.
        if let Ok(bytes) = std::fs::read(&status_path) {
            let snap: Snapshot = serde_json::from_slice(&bytes).unwrap();
            if matches!(snap.agents, Probe::Value(_)) {
                break snap;
            }
        }
        assert!(
            Instant::now() < deadline,
            "the demo wrote no agents section"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    let Probe::Value(rows) = &snap.agents else {
        panic!("{:?}", snap.agents)
    };
    assert_eq!(rows.len(), 11);
    let by_name = |n: &str| rows.iter().find(|r| r.name == n).unwrap();
    assert_eq!(by_name("lyra").status, Asc::DEPENDENCY_UNAVAILABLE);
    assert_eq!(by_name("orin").status, Asc::TIMEOUT);
    assert!(!by_name("orin").up);
    assert_eq!(by_name("vega").skills_count, Probe::Value(0));
    assert_eq!(by_name("vega").band, Band::Red);
    // Nobody but the collector talks to juno: its heartbeats answer, its last exchange is
    // hours old all the same.
    let juno = by_name("juno");
    assert!(juno.up, "{juno:?}");
    assert_eq!((juno.exchange_band, juno.band), (Band::Amber, Band::Amber));
    assert!(
        juno.reason
            .as_deref()
            .is_some_and(|r| r.starts_with("no exchange for 3 h")),
        "{juno:?}"
    );
    // Down, with an exchange 90 s old: the exchange is not ok beside it.
    assert_eq!(
        (by_name("lyra").up, by_name("lyra").exchange_band),
        (false, Band::Red)
    );
    // sol's model window is at 93 %.
    assert_eq!(by_name("sol").band, Band::Amber);
    assert_eq!(
        by_name("sol").reason.as_deref(),
        Some("model window 93 % (>= 90 %)")
    );
    // The Pulse plane's agents know the collector under their own name, and are talked to.
    for name in ["echo", "mira"] {
        assert_eq!(by_name(name).band, Band::Green, "{:?}", by_name(name));
    }
    let Probe::Value(kai) = &by_name("kai").heartbeat else {
        panic!()
    };
    assert!(kai.latency_ms >= 1500, "{kai:?}");
    let dialects: std::collections::BTreeSet<String> = rows
        .iter()
        .filter_map(|r| r.heartbeat.value().map(|h| h.dialect.clone()))
        .collect();
    assert_eq!(
        dialects.into_iter().collect::<Vec<_>>(),
        ["v0.3", "v0.3-content", "v1"]
    );
    let greens = rows.iter().filter(|r| r.band == Band::Green).count();
    assert!(greens >= 6, "{greens} green rows");

    // The demo's boards: read, projected into its vault, and the hand-edited file refused.
    let deadline = Instant::now() + support::HANG_BUDGET;
    let sources = loop {
        let snap: Snapshot = serde_json::from_slice(&std::fs::read(&status_path).unwrap()).unwrap();
        if let Probe::Value(board) = &snap.tasks.board
            && board
                .sources
                .iter()
                .all(|s| !matches!(s.projection, Probe::Unknown))
            && board.sources.len() == 3
        {
            break board.sources.clone();
        }
        assert!(
            Instant::now() < deadline,
            "no projections: {:?}",
            snap.tasks.board
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    let projection = |name: &str| {
        sources
            .iter()
            .find(|s| s.name == name)
            .unwrap()
            .projection
            .clone()
    };
    assert_eq!(projection("research"), Probe::Value("written".into()));
    assert!(
        projection("daily-operation")
            .error_reason()
            .is_some_and(|r| r.starts_with("refused:"))
    );
    assert_eq!(
        std::fs::read_to_string(
            state
                .path()
                .join("vault/Docs/Kanban/daily-operation.kanban")
        )
        .unwrap(),
        fleetdash::demo::kanban::HAND_EDITED
    );
    assert!(
        std::fs::read_to_string(state.path().join("vault/Pulse/Kanban/podcast.kanban"))
            .unwrap()
            .contains("Record episode 12")
    );

    // The Systems panel: this machine read for real, two simulated node_exporter hosts, and
    // the backups folder; every trouble the demo plants is named in its host's reason.
    let deadline = Instant::now() + support::HANG_BUDGET;
    let (hosts, backups) = loop {
        let snap: Snapshot = serde_json::from_slice(&std::fs::read(&status_path).unwrap()).unwrap();
        if let (Probe::Value(hosts), Probe::Value(backups)) = (&snap.systems, &snap.backups)
            && hosts.len() == 3
            && hosts.iter().all(|h| h.ram_total_gb.value().is_some())
        {
            break (hosts.clone(), backups.clone());
        }
        assert!(
            Instant::now() < deadline,
            "no systems or backups: {:?} {:?}",
            snap.systems,
            snap.backups
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    let host = |n: &str| hosts.iter().find(|h| h.host == n).unwrap();
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
    let mem_total_kb: f64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    let laptop = host("laptop");
    assert_eq!(laptop.source, "local");
    let total = *laptop.ram_total_gb.value().unwrap();
    assert!(
        (total - mem_total_kb * 1024.0 / 1e9).abs() < 0.02,
        "laptop RAM {total} GB is this machine's"
    );
    assert_eq!(laptop.vault_parity, Probe::Value(true), "{laptop:?}");
    let reason = laptop.reason.clone().unwrap_or_default();
    assert!(
        reason.contains("tunnel lab-docs (lyra)") && reason.contains("connection refused"),
        "{reason}"
    );
    assert!(
        reason.contains("cron vault-sync") && reason.contains("late"),
        "{reason}"
    );
    assert_eq!(laptop.band, Band::Red);
    let lab = host("LAB");
    assert_eq!(
        (lab.source.as_str(), lab.band),
        ("node_exporter", Band::Green),
        "{lab:?}"
    );
    assert_eq!(lab.ram_total_gb, Probe::Value(64.0));
    let prod = host("prod");
    let reason = prod.reason.clone().unwrap_or_default();
    assert!(
        reason.contains("service hermes-gateway: failed"),
        "{reason}"
    );
    assert!(
        reason.contains("cron db-dump: last run failed with exit code 2"),
        "{reason}"
    );
    assert!(
        hosts
            .iter()
            .all(|h| h.history.as_ref().is_some_and(|hist| hist.samples > 0))
    );
    assert_eq!(
        (backups.name.as_str(), backups.band),
        ("gdrive", Band::Green),
        "{backups:?}"
    );
    assert_eq!(backups.age_h, Probe::Value(20.0));

    assert_eq!(http_get(&addr, "/api/status.json", None).0, 401);
    let (status, _, body) = http_get(&addr, "/api/status.json", Some(("demo", &password)));
    assert_eq!(status, 200);
    assert!(body.contains("\"lyra\""));
    // Without --dist-dir, the page built into the binary: the committed page/, no tools; at
    // `/`, with the demo fleet's verdict in it (issue 46).
    assert_eq!(http_get(&addr, "/", None).0, 401);
    let (status, _, body) = http_get(&addr, "/index.html", Some(("demo", &password)));
    assert_eq!(status, 200);
    assert_eq!(
        body,
        std::fs::read_to_string(support::repo_root().join("page/index.html")).unwrap()
    );
    assert_first_html(&http_get(&addr, "/", Some(("demo", &password))).2, &body);

    sigterm(&demo.child);
    assert!(wait_exit(&mut demo.child, support::HANG_BUDGET).success());
}

/// Stops a demo the way ctrl-c would, and waits for it to end.
fn stop(mut demo: support::Demo) {
    sigterm(&demo.child);
    assert!(wait_exit(&mut demo.child, support::HANG_BUDGET).success());
}

#[test]
fn the_demo_keeps_its_password_for_a_state_dir_and_never_writes_it() {
    let state = tempfile::tempdir().unwrap();
    let login = |demo: &support::Demo, password: &str| {
        http_get(
            &demo.addr(),
            "/",
            Some((fleetdash::demo::DEMO_USER, password)),
        )
        .0
    };

    let first = support::Demo::start(state.path(), None);
    let password = first.password.clone();
    assert!(
        password.len() == 20 && password.chars().all(|c| c.is_ascii_alphanumeric()),
        "the first start of a state dir prints a new password: {password:?}"
    );
    assert_eq!(login(&first, &password), 200);
    stop(first);

    // A restart on the same state dir: the same password opens it, and the demo says so
    // instead of printing it again.
    let again = support::Demo::start(state.path(), None);
    assert!(
        again.password.starts_with("unchanged"),
        "a restart prints no password: {:?}",
        again.password
    );
    assert!(!again.password.contains(&password));
    assert_eq!(login(&again, &password), 200);
    stop(again);

    // --new-password replaces it: the old one no longer opens the page.
    let renewed = support::Demo::start_with(state.path(), None, &["--new-password"]);
    let new_password = renewed.password.clone();
    assert!(
        new_password.len() == 20 && new_password != password,
        "{new_password:?}"
    );
    assert_eq!(login(&renewed, &new_password), 200);
    assert_eq!(login(&renewed, &password), 401);
    stop(renewed);

    // Only the bcrypt hash is kept: neither password is in any file of the state dir.
    let files = support::files_under(state.path());
    assert!(files.iter().any(|f| f.ends_with("htpasswd")), "{files:?}");
    for file in files {
        let bytes = std::fs::read(&file).unwrap();
        for secret in [&password, &new_password] {
            assert!(
                !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
                "{} holds a demo password",
                file.display()
            );
        }
    }
}

#[test]
fn a_demo_state_dir_whose_htpasswd_lacks_the_demo_user_is_refused_with_its_name() {
    let state = tempfile::tempdir().unwrap();
    let htpasswd = state.path().join("htpasswd");
    std::fs::write(&htpasswd, "someone:$2b$04$abcdefghijklmnopqrstuu\n").unwrap();
    let out = support::fleetdash()
        .args(["demo", "--listen", "127.0.0.1:0", "--state-dir"])
        .arg(state.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr_of(&out));
    let stderr = stderr_of(&out);
    assert!(
        stderr.contains(&htpasswd.display().to_string()) && stderr.contains("--new-password"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(&htpasswd).unwrap(),
        "someone:$2b$04$abcdefghijklmnopqrstuu\n",
        "the file is left as it was"
    );
}

#[test]
fn the_documented_example_config_passes_check() {
    let scratch = Scratch::new();
    let example =
        std::fs::read_to_string(support::repo_root().join("config/fleetdash.example.toml"))
            .unwrap();
    let config = scratch.path().join("fleetdash.toml");
    std::fs::write(&config, example).unwrap();
    let out = check(&config);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("3 agents"));
}

/// `first` is the first HTML of `page` (issue 46): the page itself with the verdict's header
/// first in its body, marked with the page's id.
fn assert_first_html(first: &str, page: &str) {
    assert!(
        first.contains("<body><header class=\"top\" id=\"first\""),
        "{first}"
    );
    let id = fleetdash::write::first_html::page_id(page.as_bytes());
    assert!(fleetdash::write::first_html::is_for(first, &id), "{first}");
    let (head, _) = page.split_once("<body>").unwrap();
    assert!(
        first.starts_with(head.split("<title>").next().unwrap()),
        "{first}"
    );
}

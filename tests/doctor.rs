//! `fleetdash doctor` and the CLI's ASC envelopes, through the real binary.
//!
//! The doctor is run on a scratch installation broken the ways a new one is (the state folder
//! inside the served one, a world-readable htpasswd, a token file others can read, an agent
//! that does not answer, a missing folder) and then mended: each mistake is named with its
//! fix, the exit status follows the worst finding, and `--json` carries the same findings in
//! one ASC envelope. The other commands' `--json` envelopes are checked beside it.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use fleetdash::a2a::Wire;
use serde_json::Value;
use support::{Scratch, Sim, refused_endpoint};

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// The one JSON line a `--json` command wrote on stdout.
fn envelope(out: &std::process::Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "one line on stdout: {stdout}");
    let v: Value = serde_json::from_str(lines[0]).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(
        v["exit_code"],
        u64::from(out.status.code().unwrap() as u8),
        "the envelope names the exit code: {v}"
    );
    assert!(v["agent_status"]["code"].is_u64(), "{v}");
    assert!(v["agent_status"]["name"].is_string(), "{v}");
    v
}

fn doctor(config: &Path, extra: &[&str]) -> std::process::Output {
    support::fleetdash()
        .arg("doctor")
        .arg("--config")
        .arg(config)
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn the_doctor_names_each_mistake_of_a_new_installation_with_its_fix() {
    let scratch = Scratch::new();
    let root = scratch.path();
    let healthy = Sim::healthy("min", Wire::V1);
    let token = root.join("min.token");
    std::fs::write(&token, "tok-min-1234").unwrap();
    chmod(&token, 0o644);
    let htpasswd = root.join("htpasswd");
    std::fs::write(
        &htpasswd,
        format!("young:{}\n", bcrypt::hash("correct horse", 4).unwrap()),
    )
    .unwrap();
    chmod(&htpasswd, 0o644);
    std::fs::create_dir_all(root.join("out")).unwrap();
    let body = format!(
        "[serve]\nhtpasswd = \"htpasswd\"\n\n\
             [[agents]]\nname = \"min\"\nendpoint = \"{}\"\ndialect = \"v1\"\ntoken_file = \"min.token\"\n\n\
             [[agents]]\nname = \"kai\"\nendpoint = \"{}\"\ndialect = \"v1\"\n",
        healthy.endpoint,
        refused_endpoint()
    );
    // The scratch header says state_dir = "state": put it inside the served folder instead.
    let config = scratch.config(&body);
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("state_dir = \"state\"", "state_dir = \"out/state\"");
    std::fs::write(&config, text).unwrap();

    let out = doctor(&config, &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let line_of = |needle: &str| {
        stdout
            .lines()
            .position(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no line with {needle:?}:\n{stdout}"))
    };
    let lines: Vec<&str> = stdout.lines().collect();
    for (needle, level) in [
        ("the state folder is inside the output folder", "fail"),
        ("readable by every user of this host: its hashes", "fail"),
        ("min's token — readable by every user", "fail"),
        ("agent kai", "fail"),
        ("agent min — its card answers", "ok"),
        ("within 30 s of 1 agent(s)' clocks", "ok"),
    ] {
        let at = line_of(needle);
        assert!(lines[at].starts_with(level), "{needle}: {}", lines[at]);
        if level == "fail" {
            assert!(
                lines[at + 1].trim_start().starts_with("fix: "),
                "{needle}: a failure says its fix:\n{stdout}"
            );
        }
    }
    assert!(
        stdout.contains("chmod 0400") && stdout.contains("chmod 0640"),
        "{stdout}"
    );

    // The same findings as one envelope.
    let out = doctor(&config, &["--json"]);
    let v = envelope(&out);
    assert_eq!(v["command"], "doctor");
    assert_eq!(v["result"]["worst"], "fail");
    assert_eq!(v["agent_status"]["class"], "request_policy", "{v}");
    let findings = v["result"]["findings"].as_array().unwrap();
    let checks: Vec<&str> = findings
        .iter()
        .filter(|f| f["level"] == "fail")
        .map(|f| f["check"].as_str().unwrap())
        .collect();
    for check in ["exposure", "htpasswd", "tokens", "agents"] {
        assert!(checks.contains(&check), "{check} not failed: {checks:?}");
    }
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("tok-min-1234"),
        "the doctor never shows a token"
    );

    // Mended: state apart, modes tightened, the silent agent gone. Offline, all is ok: 0.
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("state_dir = \"out/state\"", "state_dir = \"state\"");
    let text = text
        .split("[[agents]]\nname = \"kai\"")
        .next()
        .unwrap()
        .to_string();
    std::fs::write(&config, text).unwrap();
    std::fs::create_dir_all(root.join("state")).unwrap();
    chmod(&token, 0o600);
    chmod(&htpasswd, 0o640);
    let out = doctor(&config, &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains(" 0 warn, 0 fail"), "{stdout}");
    let out = doctor(&config, &["--offline", "--json"]);
    let v = envelope(&out);
    assert_eq!(v["agent_status"]["name"], "SUCCESS");
    assert_eq!(v["exit_code"], 0);
}

/// A config that does not load: the doctor fails it, says the rest was skipped, exits 1.
#[test]
fn the_doctor_on_a_broken_config_says_what_it_skipped() {
    let scratch = Scratch::new();
    let config = scratch.config("[cadence]\nagents = \"sometimes\"\n");
    let out = doctor(&config, &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("cadence.agents"), "{stdout}");
    assert!(stdout.contains("the other checks were skipped"), "{stdout}");
}

/// `--json` on check, collect, task assign, silence add and cron-run: one envelope each, the
/// exit code in it; a config error carries every error with its file and line.
#[test]
fn every_json_command_writes_one_asc_envelope() {
    let scratch = Scratch::new();
    let audit = scratch.audit_log("a", 60.0);
    let body = format!(
        "{}[work_queue]\ndb = \"queue.sqlite\"\n",
        support::agent_toml("a", &refused_endpoint(), "v1", &audit)
    );
    let config = scratch.config(&body);
    let run = |args: &[&str]| {
        support::fleetdash()
            .args(args)
            .arg("--config")
            .arg(&config)
            .output()
            .unwrap()
    };

    let v = envelope(&run(&["check", "--json"]));
    assert_eq!(
        (v["command"].as_str(), v["exit_code"].as_u64()),
        (Some("check"), Some(0))
    );
    assert_eq!(v["result"]["agents"], 1);

    let v = envelope(&run(&["collect", "--json"]));
    assert_eq!(v["agent_status"]["name"], "SUCCESS");
    assert!(
        v["result"]["red"].as_u64().unwrap() >= 1,
        "the refused agent: {v}"
    );
    assert!(scratch.status_path().exists());

    let out = run(&["task", "assign", "--json", "--to", "a", "write the report"]);
    let v = envelope(&out);
    assert!(v["result"]["id"].as_str().unwrap().starts_with("q_"), "{v}");
    assert_eq!(v["result"]["owner"], "a");

    let out = run(&[
        "silence", "add", "--json", "--for", "2h", "--reason", "swap", "agent=a",
    ]);
    let v = envelope(&out);
    assert_eq!(v["result"]["matchers"][0], "agent=a");
    assert_eq!(v["result"]["reason"], "swap");

    // cron-run: stdout is the job's; the envelope is the last line on stderr.
    let out = support::fleetdash()
        .args(["cron-run", "nightly", "--json", "--config"])
        .arg(&config)
        .args(["--", "sh", "-c", "echo job-output; exit 3"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "job-output\n");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let v: Value = serde_json::from_str(stderr.lines().last().unwrap()).unwrap();
    assert_eq!(v["command"], "cron-run");
    assert_eq!(v["exit_code"], 3);
    assert_eq!(v["result"]["exit_code"], 3);

    // A config error: exit 2, every error in the envelope, with file and line.
    std::fs::write(
        &config,
        std::fs::read_to_string(&config).unwrap() + "\n[cadence]\nagents = \"often\"\n",
    )
    .unwrap();
    let out = run(&["check", "--json"]);
    assert_eq!(out.status.code(), Some(2));
    let v = envelope(&out);
    assert_eq!(v["agent_status"]["name"], "INVALID_REQUEST");
    let errors = v["errors"].as_array().unwrap();
    assert!(
        errors
            .iter()
            .any(|e| e["field"] == "cadence.agents" && e["line"].is_u64()),
        "{v}"
    );
}

/// Issue 32: the doctor fails a `[serve] listen` off loopback without TLS (basic auth in the
/// clear on the network), naming the field and what to do, and passes it once the operator
/// says `plain_http_on_network = true`.
#[test]
fn the_doctor_fails_plain_http_off_loopback_unless_said() {
    let scratch = Scratch::new();
    std::fs::create_dir_all(scratch.path().join("out")).unwrap();
    std::fs::create_dir_all(scratch.path().join("state")).unwrap();
    let config = scratch.config("[serve]\nlisten = \"0.0.0.0:8080\"\n");
    let out = doctor(&config, &["--offline", "--json"]);
    let v = envelope(&out);
    assert_eq!(v["result"]["worst"], "fail", "{v:#}");
    let failed: Vec<&Value> = v["result"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["level"] == "fail" && f["check"] == "config")
        .collect();
    assert_eq!(failed.len(), 1, "{v:#}");
    let detail = failed[0]["detail"].as_str().unwrap();
    assert!(
        detail.contains("serve.listen")
            && detail.contains("0.0.0.0:8080")
            && detail.contains("tls_cert")
            && detail.contains("plain_http_on_network"),
        "{detail}"
    );

    let config =
        scratch.config("[serve]\nlisten = \"0.0.0.0:8080\"\nplain_http_on_network = true\n");
    let out = doctor(&config, &["--offline", "--json"]);
    let v = envelope(&out);
    let config_failed = v["result"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["level"] == "fail" && f["check"] == "config");
    assert!(!config_failed, "{v:#}");
}

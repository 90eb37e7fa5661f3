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

/// Issue 44: the usual mistakes of a fleet fleetdash was never tuned to, each named with its
/// fix: a dialect the card contradicts, a card with no skills, a vault without the remote it is
/// compared to, report tokens missing or readable by others, a channel that refuses; an agent
/// with no audit log is a note, never a warning. Then one `collect`: the heartbeat's refusal
/// names the card's dialect, and the remote-less vault is watched alone, never "out of sync".
#[test]
fn the_doctor_names_the_usual_mistakes_of_a_new_fleet_with_their_fixes() {
    let scratch = Scratch::new();
    let root = scratch.path();
    let ivy = Sim::healthy("ivy", Wire::V03);
    let zed = Sim::start(fleetdash::demo::sim::SimAgent {
        skills: 0,
        ..fleetdash::demo::sim::SimAgent::healthy("zed", Wire::V1)
    });
    let vault = root.join("vault");
    std::fs::create_dir(&vault).unwrap();
    support::git::git(&vault, &["init", "-q"]);
    support::git::commit(&vault, "note.md", "first\n");
    let open_token = root.join("ivy.report");
    std::fs::write(&open_token, "tok-ivy-report-5678").unwrap();
    chmod(&open_token, 0o644);
    let hook = refused_endpoint();
    let fleet = |vault_remote: &str, ivy_dialect: &str| {
        format!(
            "[[agents]]\nname = \"ivy\"\nendpoint = \"{}\"\ndialect = \"{ivy_dialect}\"\n\
             report_token_file = \"ivy.report\"\n\n\
             [[agents]]\nname = \"zed\"\nendpoint = \"{}\"\ndialect = \"auto\"\n\
             report_token_file = \"zed.report\"\n\n\
             [[hosts]]\nname = \"here\"\nsource = \"local\"\n\
             vault = {{ path = \"{}\"{vault_remote} }}\n\n\
             [[alerts.channels]]\nname = \"hook\"\ntype = \"webhook\"\nurl = \"{}hook\"\n",
            ivy.endpoint,
            zed.endpoint,
            vault.display(),
            hook
        )
    };
    let config = scratch.config(&fleet(", remote = \"origin\"", "v1"));
    let out = doctor(&config, &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let lines: Vec<&str> = stdout.lines().collect();
    for (needle, level, fix) in [
        (
            "dialect = \"v1\", but its card says protocolVersion 0.3.0",
            "fail",
            "set dialect = \"v0.3\"",
        ),
        ("its card lists no skills", "warn", "publish its skills"),
        (
            "the checkout has no remote 'origin'",
            "fail",
            "remote add origin",
        ),
        (
            "ivy's report token — readable by every user",
            "fail",
            "chmod 0400",
        ),
        (
            "zed's report token — missing",
            "fail",
            "head -c 32 /dev/urandom",
        ),
        ("Connection refused", "fail", "fleetdash alerts test hook"),
        ("no audit_log: its last exchange is not watched", "ok", ""),
    ] {
        let at = lines
            .iter()
            .position(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no line with {needle:?}:\n{stdout}"));
        assert!(lines[at].starts_with(level), "{needle}: {}", lines[at]);
        if level != "ok" {
            assert!(
                lines[at + 1].trim_start().starts_with("fix: ") && lines[at + 1].contains(fix),
                "{needle}: its fix says {fix:?}:\n{stdout}"
            );
        }
    }
    let v = envelope(&doctor(&config, &["--json"]));
    let failed: Vec<&str> = v["result"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["level"] != "ok")
        .map(|f| f["check"].as_str().unwrap())
        .collect();
    for check in ["dialect", "skills", "vault", "tokens", "channels"] {
        assert!(failed.contains(&check), "{check} not said: {failed:?}");
    }
    assert!(!v.to_string().contains("tok-ivy-report"), "never a token");

    // One pass as configured: the refused heartbeat says which dialect to set; the missing
    // remote is said as such.
    let out = scratch.collect(&config);
    support::assert_success(&out);
    let text = scratch.snapshot_text();
    assert!(
        text.contains("; its card says protocolVersion 0.3.0: set dialect = \\\"v0.3\\\""),
        "{text}"
    );
    assert!(
        text.contains("no remote 'origin' to compare with"),
        "{text}"
    );
    assert!(
        !text.contains("does not appear to be a git repository"),
        "{text}"
    );

    // Mended where the doctor said: the vault watched alone, the dialect the card's.
    std::fs::write(
        &config,
        std::fs::read_to_string(&config)
            .unwrap()
            .replace(&fleet(", remote = \"origin\"", "v1"), &fleet("", "v0.3")),
    )
    .unwrap();
    let out = doctor(&config, &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "ok    dialect",
        "watched alone (no remote configured, no origin in the checkout)",
    ] {
        assert!(stdout.contains(needle), "{needle}:\n{stdout}");
    }
    let out = scratch.collect(&config);
    support::assert_success(&out);
    let snapshot: Value = serde_json::from_str(&scratch.snapshot_text()).unwrap();
    let here = &snapshot["systems"][0];
    assert_eq!(here["vault_parity"], true, "{here}");
    assert!(
        here["vault_reason"]
            .as_str()
            .unwrap()
            .starts_with("no remote to compare with (HEAD "),
        "{here}"
    );
    let ivy_row = snapshot["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "ivy")
        .unwrap();
    assert_eq!(ivy_row["band"], "green", "{ivy_row}");
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

//! `fleetdash doctor` and the CLI's ASC envelopes, through the real binary.
//!
//! The doctor is run on a scratch installation broken the ways a new one is (the state folder
//! inside the served one, a world-readable htpasswd, a token file others can read, an agent
//! that does not answer, a missing folder) and then mended: each mistake is named with its
//! fix, the exit status follows the worst finding, and `--json` carries the same findings in
//! one ASC envelope. The other commands' `--json` envelopes are checked beside it.

use crate::support;

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

/// A self-signed certificate for 127.0.0.1 valid from `from` to `until` (days from today,
/// UTC midnights: the test holds on any date), and its key, both PEM.
fn cert_between(from: i64, until: i64) -> (String, String) {
    use chrono::Datelike;
    let day = |d: i64| {
        let t = chrono::Utc::now().date_naive() + chrono::Duration::days(d);
        rcgen::date_time_ymd(t.year(), t.month() as u8, t.day() as u8)
    };
    let mut params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    params.not_before = day(from);
    params.not_after = day(until);
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    (cert.pem(), key.serialize_pem())
}

/// A TLS server on loopback for each certificate, each finishing handshakes and then closing:
/// their ports. They live as long as the test's process.
fn tls_servers(pairs: &[(String, String)]) -> Vec<u16> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let mut ports = Vec::new();
    let mut listeners = Vec::new();
    for (cert, key) in pairs {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        ports.push(listener.local_addr().unwrap().port());
        let chain = CertificateDer::pem_slice_iter(cert.as_bytes())
            .map(Result::unwrap)
            .collect::<Vec<_>>();
        let key = PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap();
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .unwrap();
        listeners.push((listener, std::sync::Arc::new(config)));
    }
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            for (listener, config) in listeners {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                let acceptor = tokio_rustls::TlsAcceptor::from(config);
                tokio::spawn(async move {
                    while let Ok((tcp, _)) = listener.accept().await {
                        let acceptor = acceptor.clone();
                        tokio::spawn(async move {
                            let _ = acceptor.accept(tcp).await;
                        });
                    }
                });
            }
            std::future::pending::<()>().await;
        });
    });
    ports
}

/// Issue 44: an expired certificate was "ok" and served without a word. Serve's own (inside
/// the renewal window), and the ones three https agents present (valid a year, inside the
/// window, expired) and an https node_exporter's (expired), through `fleetdash collect` into
/// status.json, each a check of its host's row; and through `fleetdash doctor`, each a
/// finding with its date, the self-signed ones said not to verify.
#[test]
fn certificates_are_checks_in_systems_and_findings_of_the_doctor() {
    let scratch = Scratch::new();
    let root = scratch.path();
    let year = cert_between(-1, 365);
    let soon = cert_between(-80, 5);
    let gone = cert_between(-90, -2);
    let ports = tls_servers(&[year.clone(), soon.clone(), gone.clone()]);
    std::fs::write(root.join("cert.pem"), &soon.0).unwrap();
    std::fs::write(root.join("key.pem"), &soon.1).unwrap();
    chmod(&root.join("key.pem"), 0o600);
    std::fs::create_dir_all(root.join("out")).unwrap();
    std::fs::create_dir_all(root.join("state")).unwrap();
    let mut body =
        "[serve]\nlisten = \"127.0.0.1:9\"\ntls_cert = \"cert.pem\"\ntls_key = \"key.pem\"\n\n\
                    [[hosts]]\nname = \"hub\"\nsource = \"local\"\ndisk_path = \"/\"\n\n"
            .to_string();
    for (name, port) in ["year", "soon", "gone"].iter().zip(&ports) {
        body.push_str(&format!(
            "[[agents]]\nname = \"{name}\"\nendpoint = \"https://127.0.0.1:{port}/\"\ndialect = \"v1\"\n\n"
        ));
    }
    body.push_str(&format!(
        "[[hosts]]\nname = \"edge\"\nsource = \"node_exporter\"\nurl = \"https://127.0.0.1:{}/metrics\"\n",
        ports[2]
    ));
    let config = scratch.config(&body);

    let out = scratch.collect(&config);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let snap: Value = serde_json::from_str(&scratch.snapshot_text()).unwrap();
    let rows = snap["systems"].as_array().expect("systems rows");
    let check = |host: &str, name: &str| -> Value {
        let row = rows.iter().find(|r| r["host"] == host).unwrap();
        row["services"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no check {name} on {host}: {row:#}"))
            .clone()
    };
    // Days from a UTC midnight: 4 d and some hours (5 d at the stroke of midnight).
    let days = |text: &str, prefix: &str, a: &str, b: &str| {
        assert!(
            text.starts_with(&format!("{prefix}{a}")) || text.starts_with(&format!("{prefix}{b}")),
            "{text}"
        );
    };
    let serve = check("hub", "certificate serve");
    assert_eq!(serve["active"], true, "{serve}");
    let reason = serve["reason"].as_str().unwrap();
    days(reason, "expiring, in ", "4 d", "5 d");
    assert!(reason.contains("renewal window 14 d"), "{reason}");
    let year_check = check("hub", "certificate agent year");
    assert_eq!(
        (&year_check["active"], year_check.get("reason")),
        (&Value::Bool(true), None),
        "{year_check}"
    );
    assert!(year_check["checked_at"].is_string(), "{year_check}");
    let soon_check = check("hub", "certificate agent soon");
    days(
        soon_check["reason"].as_str().unwrap(),
        "expiring, in ",
        "4 d",
        "5 d",
    );
    for (host, name) in [
        ("hub", "certificate agent gone"),
        ("edge", "certificate node_exporter"),
    ] {
        let c = check(host, name);
        assert_eq!(c["active"], false, "{c}");
        let reason = c["reason"].as_str().unwrap();
        days(reason, "expired, ", "1 d", "2 d");
    }
    // The hub is red for the expired certificate, and says both.
    let hub = rows.iter().find(|r| r["host"] == "hub").unwrap();
    assert_eq!(hub["band"], "red", "{hub:#}");
    let said = hub["reason"].as_str().unwrap();
    assert!(
        said.contains("certificate agent gone: expired")
            && said.contains("certificate serve: expiring"),
        "{said}"
    );

    let out = doctor(&config, &["--json"]);
    let v = envelope(&out);
    let found: Vec<(String, String, String)> = v["result"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["check"] == "certificates")
        .map(|f| {
            let s = |k: &str| f[k].as_str().unwrap_or_default().to_string();
            (s("level"), s("subject"), s("detail"))
        })
        .collect();
    let has = |level: &str, subject: &str, starts: &[&str]| {
        assert!(
            found.iter().any(|(l, s, d)| l == level
                && s == subject
                && starts.iter().any(|x| d.starts_with(x))),
            "no {level} {subject} {starts:?}: {found:#?}"
        );
    };
    has(
        "warn",
        "serve.tls_cert",
        &["expires in 4 d", "expires in 5 d"],
    );
    has("ok", "agent year", &["valid until "]);
    has(
        "fail",
        "agent year",
        &["its certificate does not verify: its issuer is unknown"],
    );
    has("warn", "agent soon", &["expires in 4 d", "expires in 5 d"]);
    has("fail", "agent gone", &["expired 1 d", "expired 2 d"]);
    has("fail", "host edge", &["expired 1 d", "expired 2 d"]);
}

//! Issue 44's "Done when": `fleetdash init` on a fleet it was never tuned to, then `check`,
//! `doctor` and one `collect` on what it wrote, with no line of config written by hand.
//!
//! The fleet: real A2A peers on the official SDKs (a v1.0 agent, a v0.3 agent, a v1.0 agent
//! whose card lists no skills), one endpoint named that nothing answers, a real Hermes board, a
//! git vault with no remote, an ntfy topic (a loopback receiver). Then a re-run with one more
//! agent (a range of one port): only that agent is added (no tunnel: the peers are local
//! processes, not SSH forwards), every other byte of
//! the file as it was.

use crate::support;

use crate::support::kanban;

use crate::support::receiver;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Output;

use fleetdash_model::{Band, Probe, Snapshot};
use serde_json::Value;
use support::git;
use support::{PyPeer, Sdk, assert_success, files_under, fleetdash, refused_endpoint};

fn init(config: &Path, args: &[&str]) -> Output {
    fleetdash()
        .arg("init")
        .arg("--yes")
        .arg("--config")
        .arg(config)
        .args(args)
        .output()
        .unwrap()
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// The `[[agents]]` block of `name` in the config's text, from its header to the next blank line.
fn block<'t>(text: &'t str, name: &str) -> &'t str {
    let at = text
        .find(&format!("[[agents]]\nname = \"{name}\"\n"))
        .unwrap_or_else(|| panic!("no agent {name}:\n{text}"));
    let end = text[at..].find("\n\n").map_or(text.len(), |n| at + n);
    &text[at..end]
}

#[test]
fn init_writes_a_working_config_for_a_fleet_it_never_saw_and_a_rerun_only_adds() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();

    let v1 = PyPeer::start(Sdk::V1, &["--name", "alpha"]);
    let v03 = PyPeer::start(Sdk::V03, &["--name", "beta"]);
    let empty = PyPeer::start(Sdk::V1, &["--name", "gamma", "--skills", "0"]);
    let down = refused_endpoint();
    let down_port = url::Url::parse(&down).unwrap().port().unwrap();
    let down_name = format!("127.0.0.1-{down_port}");

    let board = root.join("hermes/kanban.db");
    std::fs::create_dir_all(board.parent().unwrap()).unwrap();
    let k = kanban::Kanban::create(&board);
    k.task(&kanban::Task::new(
        "t1",
        "write the intro",
        "todo",
        Some("alpha"),
    ));

    let vault = root.join("vault");
    std::fs::create_dir_all(&vault).unwrap();
    git::git(&vault, &["init", "-q"]);
    git::commit(&vault, "note.md", "first\n");

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let ntfy = runtime.block_on(receiver::Receiver::start(receiver::Mode::Ok));
    let topic = ntfy.url("/fleet-alerts").to_string();

    let config = root.join("fleet/fleetdash.toml");
    let out = init(
        &config,
        &[
            "--agents",
            &v1.endpoint(),
            // HOST:PORT, as a tunnel registry lists it.
            "--agents",
            &format!("127.0.0.1:{}", v03.port),
            "--agents",
            &empty.endpoint(),
            "--agents",
            &down,
            "--board",
            &format!("research={}", board.display()),
            "--vault",
            vault.to_str().unwrap(),
            "--ntfy",
            &topic,
            "--listen",
            "127.0.0.1:18080",
            "--report",
            "06:45",
        ],
    );
    assert_success(&out);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    println!("{stdout}");
    assert!(stdout.lines().count() <= 15, "under 15 lines:\n{stdout}");
    let password = stdout
        .lines()
        .find_map(|l| l.strip_prefix("Page login: "))
        .and_then(|l| l.split(" / ").nth(1))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("the password is printed once:\n{stdout}"))
        .to_string();
    for next in [
        "fleetdash check",
        "fleetdash doctor",
        "fleetdash run",
        "fleetdash serve",
    ] {
        assert!(stdout.contains(next), "{next}:\n{stdout}");
    }
    assert!(stdout.contains("http://127.0.0.1:18080/"), "{stdout}");
    assert!(
        stdout.contains("http://127.0.0.1:8470/"),
        "the intake:\n{stdout}"
    );

    // What was written: every agent with the dialect its card shows, the silent one kept.
    let text = std::fs::read_to_string(&config).unwrap();
    println!("{text}");
    assert!(block(&text, "alpha").contains("dialect = \"v1\""), "{text}");
    assert!(
        block(&text, "beta").contains("dialect = \"v0.3\""),
        "{text}"
    );
    assert!(
        block(&text, "beta").contains(&format!("endpoint = \"http://127.0.0.1:{}/\"", v03.port))
    );
    assert!(block(&text, "gamma").contains("dialect = \"v1\""), "{text}");
    let at = text.find(&format!("name = \"{down_name}\"")).unwrap();
    let before = &text[..at];
    assert!(
        before[before.rfind("\n\n").unwrap()..].contains("did not answer at init"),
        "the silent endpoint says so:\n{text}"
    );
    assert!(!text.contains("\nrules ="), "the built-in rules: {text}");
    assert!(text.contains("\n[report]\nat = \"06:45\"\n"), "{text}");
    assert!(
        stdout.contains("The report of the night: every day at 06:45")
            && stdout.contains("to the alert channels and the page"),
        "{stdout}"
    );
    // The agents are processes of this machine on loopback ports, not SSH forwards: no tunnel
    // is written for them (one would be blamed for their every fall).
    assert!(!text.contains("[[hosts.tunnels]]"), "no tunnel:\n{text}");
    for name in ["alpha", "beta", "gamma", &down_name] {
        let token = root.join("fleet/report-tokens").join(name);
        assert_eq!(mode(&token), 0o600, "{}", token.display());
        assert!(
            block(&text, name).contains(&format!("report_token_file = \"report-tokens/{name}\""))
        );
    }
    let htpasswd = root.join("fleet/htpasswd");
    assert_eq!(mode(&htpasswd), 0o600);
    let entry = std::fs::read_to_string(&htpasswd).unwrap();
    let hash = entry.trim().split_once(':').unwrap().1;
    assert!(
        bcrypt::verify(&password, hash).unwrap(),
        "the printed password logs in"
    );
    // No secret anywhere but its own file: the password nowhere, each token in its file only.
    let tokens: Vec<String> = ["alpha", "beta", "gamma"]
        .iter()
        .map(|n| std::fs::read_to_string(root.join("fleet/report-tokens").join(n)).unwrap())
        .collect();
    let secrets_in = |dir: &Path| {
        for file in files_under(dir) {
            let Ok(bytes) = std::fs::read(&file) else {
                continue;
            };
            let body = String::from_utf8_lossy(&bytes);
            assert!(
                !body.contains(&password),
                "{} holds the password",
                file.display()
            );
            for t in &tokens {
                if !file.starts_with(root.join("fleet/report-tokens")) {
                    assert!(!body.contains(t.trim()), "{} holds a token", file.display());
                }
            }
        }
    };
    secrets_in(&root.join("fleet"));
    assert!(
        !stdout.contains(tokens[0].trim()),
        "init never prints a token"
    );

    // check: 0.
    let out = fleetdash()
        .args(["check", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert_success(&out);

    // doctor: each planted mistake named by its check, nothing said of what is right.
    let out = fleetdash()
        .args(["doctor", "--json", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    let envelope: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    let findings = envelope["result"]["findings"].as_array().unwrap().clone();
    let said = |check: &str, needle: &str| {
        findings
            .iter()
            .any(|f| f["check"] == check && f["level"] != "ok" && f.to_string().contains(needle))
    };
    let all = serde_json::to_string_pretty(&findings).unwrap();
    assert!(said("agents", &down_name), "the agent down:\n{all}");
    assert!(said("skills", "gamma"), "the card with no skills:\n{all}");
    assert!(
        findings.iter().any(|f| f["check"] == "report"
            && f["level"] == "ok"
            && f["detail"]
                .as_str()
                .is_some_and(|d| d.contains("every day at 06:45") && d.contains("none sent yet"))),
        "the report, when and where:\n{all}"
    );
    // A vault that syncs nowhere is no mistake: watched alone, and said so.
    assert!(
        findings
            .iter()
            .any(|f| f["check"] == "vault" && f.to_string().contains("alone")),
        "the vault without a remote:\n{all}"
    );
    assert!(
        !findings
            .iter()
            .any(|f| f["check"] == "dialect" && f["level"] != "ok"),
        "init wrote each card's dialect:\n{all}"
    );
    for name in ["alpha", "beta"] {
        let blamed: Vec<&Value> = findings
            .iter()
            .filter(|f| {
                matches!(f["level"].as_str(), Some("fail" | "warn"))
                    && f["check"] != "audit"
                    && f.to_string().contains(&format!("agent {name}"))
            })
            .collect();
        assert!(blamed.is_empty(), "{name} is right: {blamed:?}");
    }

    // One collect: every agent with its dialect; red and amber only where planted.
    let out = fleetdash()
        .args(["collect", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert_success(&out);
    let snapshot: Snapshot =
        serde_json::from_slice(&std::fs::read(root.join("fleet/out/status.json")).unwrap())
            .unwrap();
    let Probe::Value(agents) = &snapshot.agents else {
        panic!("agents collected: {:?}", snapshot.agents)
    };
    for (name, dialect) in [("alpha", "v1"), ("beta", "v0.3"), ("gamma", "v1")] {
        let row = agents.iter().find(|a| a.name == name).unwrap();
        let Probe::Value(heartbeat) = &row.heartbeat else {
            panic!("{name}'s heartbeat answered: {row:?}")
        };
        assert_eq!(heartbeat.dialect, dialect, "{name}: {row:?}");
    }
    let troubled: Vec<(String, Band)> = fleetdash::write::transitions::elements(&snapshot)
        .into_iter()
        .filter(|(_, e)| e.band != Band::Green)
        .map(|(k, e)| (k, e.band))
        .collect();
    let planted = [format!("agent:{down_name}"), "agent:gamma".to_string()];
    for (key, band) in &troubled {
        assert!(
            planted.contains(key),
            "{key} is {band:?}, which the operator did not cause: {troubled:?}"
        );
    }
    assert!(
        troubled.iter().any(|(k, _)| *k == planted[0]),
        "the agent down is red: {troubled:?}"
    );

    // Re-run with one more agent, given as a range of one port: only it is added.
    let delta = PyPeer::start(Sdk::V03, &["--name", "delta"]);
    let before = std::fs::read_to_string(&config).unwrap();
    let htpasswd_before = std::fs::read(&htpasswd).unwrap();
    let out = init(
        &config,
        &[
            "--agents",
            &v1.endpoint(),
            "--agents",
            &format!("127.0.0.1:{0}-{0}", delta.port),
            "--board",
            &format!("research={}", board.display()),
            "--report",
            "09:00",
        ],
    );
    assert_success(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("Added to") && stdout.contains("delta"),
        "{stdout}"
    );
    assert!(
        stdout.contains("[report] at = \"06:45\" kept"),
        "the operator's hour is theirs: {stdout}"
    );
    assert!(!stdout.contains("Page login"), "no new password: {stdout}");
    let after = std::fs::read_to_string(&config).unwrap();
    let added = block(&after, "delta");
    assert!(added.contains("dialect = \"v0.3\""), "{added}");
    // The new block with the comments above it: remove it, and the file is what it was, byte
    // for byte.
    let start = after[..after.find(added).unwrap()].rfind("\n\n").unwrap();
    let end = after.find(added).unwrap() + added.len();
    let without = format!("{}{}", &after[..start], &after[end..]);
    assert_eq!(without, before, "only delta was added:\n{after}");
    assert_eq!(std::fs::read(&htpasswd).unwrap(), htpasswd_before);
    assert_eq!(
        std::fs::read_to_string(root.join("fleet/report-tokens/alpha")).unwrap(),
        tokens[0],
        "a token an agent holds is never replaced"
    );

    // Nothing new: the file untouched, and said.
    let out = init(&config, &["--agents", &v1.endpoint()]);
    assert_success(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("nothing new"));
    assert_eq!(std::fs::read_to_string(&config).unwrap(), after);

    // An hour that is not one: refused, naming the flag, nothing written.
    let elsewhere = root.join("other/fleetdash.toml");
    let out = init(&elsewhere, &["--report", "7:30"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("--report \"7:30\": expected a time of day as HH:MM"),
        "{out:?}"
    );
    assert!(!elsewhere.exists());

    // The count for the closing note: lines written by hand after init.
    println!(
        "config lines written by init: {}; by hand: 0",
        after.lines().count()
    );
}

//! The Prometheus rules the Debian package ships (packaging/prometheus/, installed under
//! /usr/share/fleetdash/prometheus/; docs/metrics.md, "Scraping it"), with Prometheus' own
//! tools: `promtool check rules` and `promtool test rules` pass on them, the rules name only
//! series docs/metrics.md lists, the unit tests cover every rule, and a real Prometheus that
//! loads them while scraping two `fleetdash run` hubs answers reds per hub.
//!
//! The binaries come from Debian's `prometheus` package (promtool is in it), which scripts/test
//! installs; a test that finds them missing fails, saying so.

use crate::support;

use crate::support::prometheus;

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;

use fleetdash::a2a::Wire;
use serde_json::Value;
use serde_yaml_ng::Value as Yaml;

use prometheus::{PROMETHEUS, PROMTOOL, Proc, eventually, query, require, said};

/// The packaged rules files, by their name in the package.
const RULES_FILES: [&str; 2] = ["fleetdash.rules.yml", "fleetdash.recording.yml"];

/// Where the package installs them (backend/Cargo.toml's `[package.metadata.deb]` assets).
const INSTALLED: &str = "/usr/share/fleetdash/prometheus/";

fn packaged() -> PathBuf {
    support::repo_root().join("packaging/prometheus")
}

fn yaml(path: &Path) -> Yaml {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every rule of a rules file (the maps under `groups[].rules`).
fn rules(file: &Yaml) -> Vec<&Yaml> {
    file["groups"]
        .as_sequence()
        .expect("groups")
        .iter()
        .flat_map(|g| g["rules"].as_sequence().expect("rules").iter())
        .collect()
}

fn text(v: &Yaml) -> &str {
    v.as_str().unwrap_or("")
}

/// `promtool check rules` and `promtool test rules` pass on every packaged file; each has its
/// test file, and the package installs each where docs/metrics.md says.
#[test]
fn promtool_checks_and_tests_the_packaged_rules() {
    let dir = packaged();
    let on_disk: BTreeSet<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".yml"))
        .collect();
    assert_eq!(
        on_disk,
        RULES_FILES.iter().map(|f| f.to_string()).collect(),
        "packaging/prometheus/*.yml is what the package installs: list a new file here"
    );
    let cargo = std::fs::read_to_string(support::repo_root().join("backend/Cargo.toml")).unwrap();
    assert!(
        cargo.contains(&format!(
            "[\"../packaging/prometheus/*.yml\", \"{}\", \"644\"]",
            INSTALLED.trim_start_matches('/')
        )),
        "backend/Cargo.toml's deb assets install packaging/prometheus/*.yml under {INSTALLED}"
    );
    let doc = std::fs::read_to_string(support::repo_root().join("docs/metrics.md")).unwrap();
    for name in RULES_FILES {
        let file = dir.join(name);
        let out = Command::new(require(PROMTOOL))
            .args(["check", "rules"])
            .arg(&file)
            .output()
            .unwrap();
        let n = rules(&yaml(&file)).len();
        assert!(
            out.status.success() && said(&out).contains(&format!("SUCCESS: {n} rules found")),
            "promtool check rules {name}: {}\n{}",
            out.status,
            said(&out)
        );
        let test = dir.join("tests").join(name.replace(".yml", ".test.yml"));
        let named: Vec<String> = yaml(&test)["rule_files"]
            .as_sequence()
            .expect("rule_files")
            .iter()
            .map(|f| text(f).to_string())
            .collect();
        assert_eq!(named, [format!("../{name}")], "{}", test.display());
        let out = Command::new(PROMTOOL)
            .args(["test", "rules"])
            .arg(&test)
            .output()
            .unwrap();
        assert!(
            out.status.success() && said(&out).contains("SUCCESS"),
            "promtool test rules {}: {}\n{}",
            test.display(),
            out.status,
            said(&out)
        );
        assert!(
            doc.contains(&format!("  - {INSTALLED}{name}\n")),
            "docs/metrics.md's example names {INSTALLED}{name} in rule_files"
        );
    }
}

/// The backticked names in docs/metrics.md's table rows.
fn documented() -> BTreeSet<String> {
    let doc = std::fs::read_to_string(support::repo_root().join("docs/metrics.md")).unwrap();
    doc.lines()
        .filter(|l| l.starts_with('|'))
        .flat_map(|l| l.split('`').skip(1).step_by(2))
        .map(str::to_string)
        .collect()
}

/// Every series a rule reads or records, and every alert, is in docs/metrics.md's tables; each
/// alert has a severity and says what to do.
#[test]
fn the_rules_name_only_documented_series() {
    let documented = documented();
    let series = regex::Regex::new(r"\bfleetdash(_[a-z0-9_]+|:[a-z0-9_:]+)").unwrap();
    let mut used = BTreeSet::new();
    for name in RULES_FILES {
        let file = yaml(&packaged().join(name));
        for rule in rules(&file) {
            let expr = text(&rule["expr"]);
            used.extend(series.find_iter(expr).map(|m| m.as_str().to_string()));
            let own = text(&rule["record"]).to_string() + text(&rule["alert"]);
            assert!(!own.is_empty(), "{name}: a rule with no name");
            assert!(
                documented.contains(&own),
                "{name}: {own} is not in docs/metrics.md's tables"
            );
            if rule["alert"].is_string() {
                assert!(
                    ["page", "warning"].contains(&text(&rule["labels"]["severity"])),
                    "{own}: severity page or warning"
                );
                assert!(
                    text(&rule["annotations"]["summary"]).contains("{{ $labels.hub }}"),
                    "{own}: its summary names the hub"
                );
                assert!(
                    !text(&rule["annotations"]["description"]).is_empty(),
                    "{own}: a description of what to do"
                );
            }
        }
    }
    for s in [
        "fleetdash_hub_info",
        "fleetdash_snapshot_age_seconds",
        "fleetdash_snapshot_stale_after_seconds",
        "fleetdash_snapshot_write_failures_total",
        "fleetdash_snapshot_writes_total",
        "fleetdash_agent_band",
    ] {
        assert!(used.contains(s), "the rules use {s}: {used:?}");
    }
    let missing: Vec<&String> = used.iter().filter(|s| !documented.contains(*s)).collect();
    assert!(
        missing.is_empty(),
        "the rules use series docs/metrics.md's tables do not list: {missing:?}"
    );
}

/// The unit tests cover every rule: each alert firing (with `hub` and `severity`) and not
/// firing; each recorded series with a value, and for one per hub, across two hubs at least.
#[test]
fn every_rule_has_its_promtool_tests() {
    for name in RULES_FILES {
        let file = yaml(&packaged().join(name));
        let test_path = packaged()
            .join("tests")
            .join(name.replace(".yml", ".test.yml"));
        let tests = yaml(&test_path);
        let cases: Vec<&Yaml> = tests["tests"]
            .as_sequence()
            .expect("tests")
            .iter()
            .collect();
        for rule in rules(&file) {
            if let Some(alert) = rule["alert"].as_str() {
                let checks: Vec<&Yaml> = cases
                    .iter()
                    .flat_map(|c| c["alert_rule_test"].as_sequence().into_iter().flatten())
                    .filter(|t| text(&t["alertname"]) == alert)
                    .collect();
                let fired: Vec<&Yaml> = checks
                    .iter()
                    .flat_map(|t| t["exp_alerts"].as_sequence().into_iter().flatten())
                    .collect();
                assert!(
                    checks
                        .iter()
                        .any(|t| t["exp_alerts"].as_sequence().is_some_and(|a| a.is_empty())),
                    "{alert}: no test of it not firing"
                );
                assert!(!fired.is_empty(), "{alert}: no test of it firing");
                for f in fired {
                    for label in ["hub", "severity"] {
                        assert!(
                            !text(&f["exp_labels"][label]).is_empty(),
                            "{alert}: fires without {label}: {f:?}"
                        );
                    }
                }
            }
            if let Some(record) = rule["record"].as_str() {
                let samples: Vec<&str> = cases
                    .iter()
                    .flat_map(|c| c["promql_expr_test"].as_sequence().into_iter().flatten())
                    .filter(|t| {
                        let e = text(&t["expr"]);
                        e == record || e.starts_with(&format!("{record}{{"))
                    })
                    .flat_map(|t| t["exp_samples"].as_sequence().into_iter().flatten())
                    .map(|s| text(&s["labels"]))
                    .collect();
                assert!(!samples.is_empty(), "{record}: never tested");
                let hubs: BTreeSet<&str> = samples
                    .iter()
                    .filter_map(|l| l.split("hub=\"").nth(1)?.split('"').next())
                    .collect();
                // A series kept per hub (aggregated `by (hub...)`) is tested on two.
                let per_hub = text(&rule["expr"]).contains("by (hub");
                assert!(
                    !per_hub || hubs.len() >= 2,
                    "{record}: tested on {hubs:?}, not across two hubs"
                );
            }
        }
    }
}

/// A query's samples keyed by the values of `labels`, each value as Prometheus says it.
fn by(result: &[Value], labels: &[&str]) -> BTreeMap<Vec<String>, String> {
    result
        .iter()
        .map(|s| {
            let key = labels
                .iter()
                .map(|l| s["metric"][*l].as_str().unwrap_or("").to_string())
                .collect();
            (key, s["value"][1].as_str().unwrap_or("").to_string())
        })
        .collect()
}

fn keyed(pairs: &[(&[&str], &str)]) -> BTreeMap<Vec<String>, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.iter().map(|s| s.to_string()).collect(), v.to_string()))
        .collect()
}

/// Polls `promql` until its samples keyed by `labels` are `want`.
fn until_answers(
    prometheus: SocketAddr,
    promql: &str,
    labels: &[&str],
    want: &BTreeMap<Vec<String>, String>,
    context: &dyn Fn() -> String,
) {
    eventually(&format!("{promql} answering {want:?}"), || {
        match query(prometheus, promql) {
            Ok(r) if by(&r, labels) == *want => Ok(()),
            other => Err(format!("{other:?}\n{}", context())),
        }
    });
}

/// One hub: `fleetdash run` named `hub`, watching sol (answers), lyra (answers on `lyra`, or
/// refuses connections) and vega (refuses on every hub), its metrics on a loopback port.
struct Hub {
    _scratch: support::Scratch,
    run: Proc,
    metrics: SocketAddr,
}

fn hub(name: &str, sol: &support::Sim, lyra: Option<&support::Sim>) -> Hub {
    let scratch = support::Scratch::new();
    let sol_audit = scratch.audit_log("sol", 30.0);
    let lyra_audit = scratch.audit_log("lyra", 30.0);
    let lyra_endpoint = lyra.map_or_else(support::refused_endpoint, |s| s.endpoint.clone());
    // `hub` is a top-level key: before the first table.
    let config = format!(
        "hub = \"{name}\"\noutput_dir = \"out\"\nstate_dir = \"state\"\nrules = \"rules.yaml\"\n\n\
         [probe]\ntimeout = \"2s\"\n\n\
         [cadence]\nagents = \"1s\"\nlive_tasks = \"1s\"\n\n\
         [metrics]\nlisten = \"127.0.0.1:0\"\n\n\
         [[agents]]\nname = \"sol\"\nendpoint = \"{sol}\"\ndialect = \"v1\"\naudit_log = \"{sol_audit}\"\n\n\
         [[agents]]\nname = \"lyra\"\nendpoint = \"{lyra_endpoint}\"\ndialect = \"v1\"\naudit_log = \"{lyra_audit}\"\n\n\
         [[agents]]\nname = \"vega\"\nendpoint = \"{vega}\"\ndialect = \"v1\"\n",
        sol = sol.endpoint,
        sol_audit = sol_audit.display(),
        lyra_audit = lyra_audit.display(),
        vega = support::refused_endpoint(),
    );
    let path = scratch.path().join("fleetdash.toml");
    std::fs::write(&path, config).unwrap();
    let mut cmd = support::fleetdash();
    cmd.args(["run", "--config"]).arg(&path);
    let (run, addrs) = Proc::start(cmd, &["fleetdash: metrics on "]);
    Hub {
        _scratch: scratch,
        run,
        metrics: addrs[0],
    }
}

/// Two hubs watch one fleet and disagree about lyra (west cannot reach it); both see vega
/// red. A real Prometheus scrapes both with the packaged rules loaded and answers, from the
/// recorded series: reds per hub, which hubs see each agent red, hubs up; the pending alerts
/// carry each hub's name. Then west stops, and the rules say so under its name.
#[test]
fn a_real_prometheus_answers_reds_per_hub_across_two_hubs() {
    require(PROMETHEUS);
    let sol = support::Sim::healthy("sol", Wire::V1);
    let lyra = support::Sim::healthy("lyra", Wire::V1);
    let east = hub("east", &sol, Some(&lyra));
    let west = hub("west", &sol, None);

    let dir = tempfile::tempdir().unwrap();
    let rule_files: String = RULES_FILES
        .iter()
        .map(|f| format!("  - {}\n", packaged().join(f).display()))
        .collect();
    // One job, no target label: the hub comes from each target's fleetdash_hub_info.
    let config = format!(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n\
         rule_files:\n{rule_files}\
         scrape_configs:\n\
         - job_name: fleetdash-run\n  static_configs: [{{targets: ['{e}', '{w}']}}]\n",
        e = east.metrics,
        w = west.metrics,
    );
    // The site's Prometheus also writes what it records to a central one, as docs/scale.md
    // has it write to Mimir or Thanos Receive (a Prometheus with its remote-write receiver on
    // speaks the same protocol).
    let central_dir = dir.path().join("central");
    let (_central, central, central_log) = prometheus::start(
        &central_dir,
        "global:\n  scrape_interval: 1s\n",
        &["--web.enable-remote-write-receiver"],
    );
    let remote_write = scale_doc_block("remote_write:").replace(
        "https://mimir.example/api/v1/push",
        &format!("http://{central}/api/v1/write"),
    );
    assert!(
        remote_write.contains(&central.to_string()),
        "{remote_write}"
    );
    let config = format!("{config}{remote_write}");
    let (_prometheus, listen, log) = prometheus::start(&dir.path().join("site"), &config, &[]);
    let context = || {
        format!(
            "--- prometheus:\n{}\n--- east:\n{}\n--- west:\n{}",
            std::fs::read_to_string(&log).unwrap_or_default(),
            east.run.log(),
            west.run.log()
        )
    };

    // Reds per hub: east sees vega; west sees lyra and vega.
    until_answers(
        listen,
        "fleetdash:reds:count",
        &["hub"],
        &keyed(&[(&["east"], "1"), (&["west"], "2")]),
        &context,
    );
    until_answers(
        listen,
        "fleetdash:agent_red_hubs:count",
        &["agent"],
        &keyed(&[(&["sol"], "0"), (&["lyra"], "1"), (&["vega"], "2")]),
        &context,
    );
    until_answers(
        listen,
        "fleetdash:agent_watching_hubs:count",
        &["agent"],
        &keyed(&[(&["sol"], "2"), (&["lyra"], "2"), (&["vega"], "2")]),
        &context,
    );
    until_answers(
        listen,
        "fleetdash:agents_red_on_any_hub:count",
        &[],
        &keyed(&[(&[], "2")]),
        &context,
    );
    until_answers(
        listen,
        "fleetdash:hubs_up:count",
        &[],
        &keyed(&[(&[], "2")]),
        &context,
    );
    // The alert of each red, pending for its `for:`, under the hub that sees it.
    until_answers(
        listen,
        "ALERTS{alertname=\"FleetdashAgentStillRed\", alertstate=\"pending\"}",
        &["hub", "agent", "severity"],
        &keyed(&[
            (&["east", "vega", "warning"], "1"),
            (&["west", "lyra", "warning"], "1"),
            (&["west", "vega", "warning"], "1"),
        ]),
        &context,
    );

    // Past one Prometheus (docs/scale.md): a global Prometheus federating the site's recorded
    // series with the doc's own scrape config, and the central one the site writes to, answer
    // reds per hub as the site does.
    let federate = scale_doc_block("/federate").replace(
        "[\"prometheus.site-a:9090\", \"prometheus.site-b:9090\"]",
        &format!("['{listen}']"),
    );
    assert!(federate.contains(&listen.to_string()), "{federate}");
    let (_global, global, global_log) = prometheus::start(
        &dir.path().join("global"),
        &format!("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n{federate}"),
        &[],
    );
    let reds = keyed(&[(&["east"], "1"), (&["west"], "2")]);
    let context_of = |log: &Path| {
        let log = log.to_path_buf();
        move || std::fs::read_to_string(&log).unwrap_or_default()
    };
    until_answers(
        global,
        "fleetdash:reds:count",
        &["hub"],
        &reds,
        &context_of(&global_log),
    );
    until_answers(
        global,
        "fleetdash_hub_info",
        &["hub"],
        &keyed(&[(&["east"], "1"), (&["west"], "1")]),
        &context_of(&global_log),
    );
    until_answers(
        central,
        "fleetdash:reds:count",
        &["hub"],
        &reds,
        &context_of(&central_log),
    );

    // west stops: Prometheus marks its series stale; the rules still name it.
    drop(west);
    let context = || {
        format!(
            "--- prometheus:\n{}\n--- east:\n{}",
            std::fs::read_to_string(&log).unwrap_or_default(),
            east.run.log()
        )
    };
    until_answers(
        listen,
        "fleetdash:hub_up:max",
        &["hub"],
        &keyed(&[(&["east"], "1"), (&["west"], "0")]),
        &context,
    );
    until_answers(
        listen,
        "fleetdash:hubs_up:count",
        &[],
        &keyed(&[(&[], "1")]),
        &context,
    );
    until_answers(
        listen,
        "ALERTS{alertname=\"FleetdashHubDown\", alertstate=\"pending\"}",
        &["hub", "severity"],
        &keyed(&[(&["west", "page"], "1")]),
        &context,
    );
    until_answers(
        listen,
        "fleetdash:reds:count",
        &["hub"],
        &keyed(&[(&["east"], "1")]),
        &context,
    );
}

/// The ```yaml block of docs/scale.md that holds `needle`.
fn scale_doc_block(needle: &str) -> String {
    let doc = std::fs::read_to_string(support::repo_root().join("docs/scale.md")).unwrap();
    doc.split("```yaml\n")
        .skip(1)
        .map(|b| b.split("```").next().unwrap())
        .find(|b| b.contains(needle))
        .unwrap_or_else(|| panic!("docs/scale.md has no ```yaml block with {needle}"))
        .to_string()
}

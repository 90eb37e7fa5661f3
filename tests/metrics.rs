//! `/metrics` against the real thing (docs/metrics.md): a real `fleetdash run` (its loopback
//! `[metrics] listen` and its intake) and a real `fleetdash serve`, over a fleet of a simulated
//! agent that answers, one that refuses connections, a local host and a webhook channel nobody
//! listens on. Every exposition passes `promtool check metrics`, every label is one of the
//! bounded list with a value the config declares, and a real Prometheus (Debian's package,
//! started here on loopback) scrapes all three endpoints and answers queries.
//!
//! The binaries come from Debian's `prometheus` package (promtool is in it), which
//! scripts/test installs; a test that finds them missing fails, saying so.

use crate::support;

use crate::support::prometheus;

use crate::support::kanban;

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use base64::Engine;
use fleetdash::a2a::Wire;
use fleetdash::metrics::names::{LABELS, Names};

use prometheus::{PROMETHEUS, PROMTOOL, Proc, eventually, query, require};

const OPERATOR_TOKEN: &str = "operator-metrics-7c1d52e0";
const SOL_TOKEN: &str = "report-sol-metrics-19ab44f6";
const USER: &str = "scraper";
const PASSWORD: &str = "scrape-me-5e2b";

/// The fleet: `sol` answers (a simulated v1.0 agent), `lyra` refuses connections, a local
/// host, a Hermes board of 12 cards, a backups folder, a webhook channel on a closed port; the
/// intake, the loopback metrics listener and serve's htpasswd.
struct Fleet {
    scratch: support::Scratch,
    config: PathBuf,
    _sol: support::Sim,
}

fn fleet() -> Fleet {
    let scratch = support::Scratch::new();
    let sol = support::Sim::healthy("sol", Wire::V1);
    let audit = scratch.audit_log("sol", 30.0);
    let board = kanban::Kanban::create(&scratch.path().join("ops.db"));
    kanban::populate(&board, 12);
    drop(board);
    let backups = scratch.path().join("backups");
    std::fs::create_dir_all(&backups).unwrap();
    std::fs::write(backups.join("fleet-0001.tar.zst"), "backup").unwrap();
    std::fs::write(scratch.path().join("operator.token"), OPERATOR_TOKEN).unwrap();
    std::fs::write(scratch.path().join("sol.token"), SOL_TOKEN).unwrap();
    std::fs::write(
        scratch.path().join("htpasswd"),
        format!("{USER}:{}\n", bcrypt::hash(PASSWORD, 4).unwrap()),
    )
    .unwrap();
    let config = scratch.config(&format!(
        "[cadence]\nagents = \"1s\"\nsystems = \"1s\"\nqueue = \"1s\"\nboard = \"1s\"\n\
         backups = \"1s\"\n\n\
         [[boards]]\nname = \"ops\"\ndb = \"ops.db\"\n\n\
         [backups]\nname = \"nightly\"\ndir = \"backups\"\n\n\
         [intake]\nlisten = \"127.0.0.1:0\"\noperator_token_file = \"operator.token\"\n\n\
         [work_queue]\ndb = \"state/tasks.db\"\n\n\
         [metrics]\nlisten = \"127.0.0.1:0\"\n\n\
         [serve]\nhtpasswd = \"htpasswd\"\n\n\
         [[alerts.channels]]\ntype = \"webhook\"\nname = \"hook\"\nurl = \"{hook}\"\n\n\
         [[hosts]]\nname = \"hub\"\nsource = \"local\"\ndisk_path = \"/\"\n\n\
         [[agents]]\nname = \"sol\"\nendpoint = \"{sol}\"\ndialect = \"v1\"\naudit_log = \"{audit}\"\n\
         report_token_file = \"sol.token\"\n\n\
         [[agents]]\nname = \"lyra\"\nendpoint = \"{lyra}\"\ndialect = \"v1\"\n",
        hook = support::refused_endpoint(),
        sol = sol.endpoint,
        audit = audit.display(),
        lyra = support::refused_endpoint(),
    ));
    Fleet {
        scratch,
        config,
        _sol: sol,
    }
}

impl Fleet {
    fn names(&self) -> Names {
        let (config, _) = fleetdash::config::Config::load(&self.config).unwrap();
        Names::of(&config)
    }
}

/// `fleetdash run`: (the process, its intake, its metrics listener).
fn run(fleet: &Fleet) -> (Proc, SocketAddr, SocketAddr) {
    let mut cmd = support::fleetdash();
    cmd.args(["run", "--config"]).arg(&fleet.config);
    let (proc, addrs) = Proc::start(
        cmd,
        &["fleetdash: intake listening on ", "fleetdash: metrics on "],
    );
    (proc, addrs[0], addrs[1])
}

/// `fleetdash serve` on a free loopback port.
fn serve(config: &Path) -> (Proc, SocketAddr) {
    let mut cmd = support::fleetdash();
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(config);
    let (proc, addrs) = Proc::start(cmd, &["fleetdash: serving on "]);
    (proc, addrs[0])
}

/// One HTTP/1.0 exchange (no chunking, the connection closes): (status, body).
fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[String],
    body: &str,
) -> (u16, String) {
    try_request(addr, method, path, headers, body).unwrap_or_else(|e| panic!("{addr}{path}: {e}"))
}

/// [`request`], or why not (nothing listening yet).
fn try_request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[String],
    body: &str,
) -> Result<(u16, String), String> {
    let mut s = TcpStream::connect(addr).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(support::HANG_BUDGET)).unwrap();
    let mut head = format!("{method} {path} HTTP/1.0\r\nHost: {addr}\r\n");
    for h in headers {
        head.push_str(h);
        head.push_str("\r\n");
    }
    if !body.is_empty() {
        head.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body.as_bytes()).unwrap();
    let mut answer = Vec::new();
    s.read_to_end(&mut answer).map_err(|e| e.to_string())?;
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("no status line: {head}"))?;
    Ok((status, body.to_string()))
}

fn get(addr: SocketAddr, path: &str, headers: &[String]) -> (u16, String) {
    request(addr, "GET", path, headers, "")
}

fn bearer(token: &str) -> String {
    format!("Authorization: Bearer {token}")
}

fn basic() -> String {
    let pair = base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}"));
    format!("Authorization: Basic {pair}")
}

/// A sample of the exposition: (name, labels, value).
type Sample = (String, Vec<(String, String)>, f64);

/// Every sample line of a text exposition.
fn samples(text: &str) -> Vec<Sample> {
    let mut out = Vec::new();
    for line in text
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let (series, value) = line.rsplit_once(' ').unwrap();
        let value: f64 = match value {
            "+Inf" => f64::INFINITY,
            v => v.parse().unwrap_or_else(|_| panic!("value of {line}")),
        };
        let (name, labels) = match series.split_once('{') {
            None => (series.to_string(), Vec::new()),
            Some((name, rest)) => (name.to_string(), label_pairs(rest.trim_end_matches('}'))),
        };
        out.push((name, labels, value));
    }
    out
}

/// `a="x",b="y"` into pairs (values unescaped: `\"`, `\\`, `\n`).
fn label_pairs(s: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    loop {
        let name: String = chars.by_ref().take_while(|c| *c != '=').collect();
        if name.is_empty() {
            break;
        }
        assert_eq!(chars.next(), Some('"'), "label {name} in {s}");
        let mut value = String::new();
        while let Some(c) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some('n') => value.push('\n'),
                    Some(other) => value.push(other),
                    None => break,
                },
                '"' => break,
                c => value.push(c),
            }
        }
        out.push((name.trim_start_matches(',').to_string(), value));
        if chars.peek() == Some(&',') {
            chars.next();
        }
    }
    out
}

/// The value of the sample `name` with exactly `labels` (histogram `le` aside), if any.
fn value(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    samples(text).into_iter().find_map(|(n, l, v)| {
        let mine: BTreeSet<(String, String)> = l.into_iter().filter(|(k, _)| k != "le").collect();
        let want: BTreeSet<(String, String)> = labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        (n == name && mine == want).then_some(v)
    })
}

/// Seed 000: every label of every series is one of the bounded list, with a value the config
/// (or the closed lists) allows: no task id, URL, title, message or user name can pass.
fn assert_bounded(text: &str, names: &Names) {
    let all = samples(text);
    assert!(!all.is_empty(), "an empty exposition");
    for (name, labels, _) in &all {
        assert!(name.starts_with("fleetdash_"), "{name}: not fleetdash's");
        for (label, value) in labels {
            if label == "le" && name.ends_with("_bucket") {
                continue;
            }
            assert!(
                LABELS.contains(&label.as_str()),
                "{name}: label {label} is not one of {LABELS:?}"
            );
            assert!(
                names.allows(label, value),
                "{name}: {label}={value:?} is no value the config or the closed lists allow"
            );
        }
    }
}

/// `promtool check metrics` finds nothing to say about `text`.
fn assert_promtool_clean(text: &str) {
    let mut child = Command::new(require(PROMTOOL))
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && said.trim().is_empty(),
        "promtool check metrics: {}\n{said}\n--- the exposition:\n{text}",
        out.status
    );
}

/// Every metric family exposed is documented in docs/metrics.md.
fn assert_documented(text: &str) {
    let doc = std::fs::read_to_string(support::repo_root().join("docs/metrics.md")).unwrap();
    for line in text.lines().filter(|l| l.starts_with("# TYPE ")) {
        let family = line.split_whitespace().nth(2).unwrap();
        assert!(
            doc.contains(&format!("`{family}`")),
            "{family} is exposed but docs/metrics.md does not list it"
        );
    }
}

/// `fleetdash run`: the loopback listener answers without auth, the intake only to the
/// operator's token; what happens while it runs is counted (passes, probe failures, reports
/// accepted and refused, a failed alert delivery), beside the snapshot's series.
#[test]
fn run_counts_what_happens_and_its_exposition_is_bounded_and_lint_clean() {
    let fleet = fleet();
    let (run, intake, metrics) = run(&fleet);
    // One report accepted, one refused before it was read (a token nobody has).
    let heartbeat = serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "message/send",
        "params": {"message": {"kind": "message", "role": "user", "messageId": "m-1",
                   "parts": [{"kind": "text", "text": "HEARTBEAT"}]}}
    })
    .to_string();
    let (status, reply) = request(intake, "POST", "/", &[bearer(SOL_TOKEN)], &heartbeat);
    assert_eq!(status, 200, "{reply}");
    let (status, _) = request(intake, "POST", "/", &[bearer("nobody's")], &heartbeat);
    assert_eq!(status, 401);
    // No `hub` in this config: the host's name.
    let hub = fleet.names().hub;
    let text = eventually("run's /metrics with every expected series", || {
        let (status, text) = get(metrics, "/metrics", &[]);
        let want = [
            value(&text, "fleetdash_hub_info", &[("hub", &hub)]) == Some(1.0),
            value(&text, "fleetdash_agent_up", &[("agent", "sol")]) == Some(1.0),
            value(&text, "fleetdash_agent_up", &[("agent", "lyra")]) == Some(0.0),
            value(
                &text,
                "fleetdash_agent_band",
                &[("agent", "lyra"), ("band", "red")],
            ) == Some(1.0),
            value(&text, "fleetdash_agent_skills", &[("agent", "sol")]).is_some_and(|n| n >= 1.0),
            value(
                &text,
                "fleetdash_agent_last_exchange_age_seconds",
                &[("agent", "sol")],
            )
            .is_some_and(|s| s >= 30.0),
            value(
                &text,
                "fleetdash_collector_pass_duration_seconds_count",
                &[("section", "agents")],
            )
            .is_some_and(|n| n >= 2.0),
            samples(&text).iter().any(|(n, l, v)| {
                n == "fleetdash_probe_failures_total"
                    && l.contains(&("section".into(), "agents".into()))
                    && *v >= 1.0
            }),
            value(
                &text,
                "fleetdash_intake_reports_accepted_total",
                &[("kind", "heartbeat")],
            ) == Some(1.0),
            value(
                &text,
                "fleetdash_intake_reports_refused_total",
                &[("kind", "unread"), ("asc", "AUTHENTICATION_REQUIRED")],
            ) == Some(1.0),
            value(
                &text,
                "fleetdash_alert_delivery_failures_total",
                &[("channel", "hook")],
            )
            .is_some_and(|n| n >= 1.0),
            value(&text, "fleetdash_snapshot_writes_total", &[]).is_some_and(|n| n >= 1.0),
            value(&text, "fleetdash_snapshot_readable", &[]) == Some(1.0),
            value(&text, "fleetdash_snapshot_age_seconds", &[]).is_some(),
            value(&text, "fleetdash_host_up", &[("host", "hub")]) == Some(1.0),
            value(&text, "fleetdash_board_up", &[("board", "ops")]) == Some(1.0),
            value(&text, "fleetdash_board_cards", &[("board", "ops")]).is_some_and(|n| n >= 1.0),
            value(&text, "fleetdash_backup_up", &[("backup", "nightly")]) == Some(1.0),
            value(
                &text,
                "fleetdash_backup_band",
                &[("backup", "nightly"), ("band", "green")],
            ) == Some(1.0),
            value(
                &text,
                "fleetdash_backup_age_seconds",
                &[("backup", "nightly")],
            )
            .is_some(),
            value(&text, "fleetdash_section_stale", &[("section", "agents")]) == Some(0.0),
        ];
        if status == 200 && want.iter().all(|w| *w) {
            Ok(text)
        } else {
            Err(format!(
                "{status} {want:?}\n{text}\n--- run's log:\n{}",
                run.log()
            ))
        }
    });
    assert_promtool_clean(&text);
    assert_bounded(&text, &fleet.names());
    assert_documented(&text);
    // The board's count is status.json's (the archived card aside, as the page counts).
    let snap = fleet.scratch.snapshot();
    let board = snap.tasks.board.value().expect("the board was read");
    let cards = board.sources[0]
        .cards
        .value()
        .copied()
        .expect("its cards counted");
    assert!(
        cards > 0 && cards < 12,
        "{cards}: the archived card is not counted"
    );
    assert_eq!(
        value(&text, "fleetdash_board_cards", &[("board", "ops")]),
        Some(f64::from(cards))
    );
    assert!(
        !text.contains("127.0.0.1") && !text.contains("m-1") && !text.contains(SOL_TOKEN),
        "no URL, message id or token in the exposition:\n{text}"
    );

    // The intake's /metrics: the operator's token only.
    let (status, body) = get(intake, "/metrics", &[]);
    assert_eq!(status, 401, "{body}");
    let (status, body) = get(intake, "/metrics", &[bearer(SOL_TOKEN)]);
    assert_eq!(status, 403, "an agent's token: {body}");
    assert!(body.contains("PERMISSION_DENIED"), "{body}");
    let (status, body) = get(intake, "/metrics", &[bearer(OPERATOR_TOKEN)]);
    assert_eq!(status, 200, "{body}");
    assert!(
        value(
            &body,
            "fleetdash_intake_reports_accepted_total",
            &[("kind", "heartbeat")]
        ) == Some(1.0),
        "{body}"
    );
    // The loopback listener serves /metrics and nothing else.
    assert_eq!(get(metrics, "/", &[]).0, 404);
}

/// `fleetdash serve` knows status.json: its /metrics (behind its basic auth) has the
/// snapshot's series and none of run's counters; an element status.json has but the config
/// does not declare is no series.
#[test]
fn serve_exposes_the_snapshots_series_behind_basic_auth() {
    let fleet = fleet();
    support::assert_success(&fleet.scratch.collect(&fleet.config));
    // The same output folder, read by a config that no longer declares lyra.
    let text = std::fs::read_to_string(&fleet.config).unwrap();
    let (kept, _lyra) = text.rsplit_once("[[agents]]\nname = \"lyra\"").unwrap();
    let narrower = fleet.scratch.path().join("serve.toml");
    std::fs::write(&narrower, kept).unwrap();
    let (_serve, addr) = serve(&narrower);
    let (status, _) = get(addr, "/metrics", &[]);
    assert_eq!(status, 401, "serve's /metrics is behind its basic auth");
    let (status, body) = request(addr, "POST", "/metrics", &[basic()], "{}");
    assert_eq!(status, 405, "{body}");
    assert!(
        body.contains("agent_status"),
        "problem+json as every refusal: {body}"
    );
    let (status, text) = get(addr, "/metrics", &[basic()]);
    assert_eq!(status, 200, "{text}");
    assert!(
        fleet.scratch.snapshot_text().contains("\"lyra\""),
        "status.json lists lyra"
    );
    assert_eq!(
        value(&text, "fleetdash_agent_up", &[("agent", "sol")]),
        Some(1.0),
        "{text}"
    );
    assert!(!text.contains("lyra"), "not in serve's config:\n{text}");
    assert!(value(&text, "fleetdash_snapshot_age_seconds", &[]).is_some());
    assert!(
        !text.contains("collector_pass_duration") && !text.contains("intake_reports"),
        "serve counts nothing it did not see:\n{text}"
    );
    assert_promtool_clean(&text);
    let (config, _) = fleetdash::config::Config::load(&narrower).unwrap();
    assert_bounded(&text, &Names::of(&config));
    assert_documented(&text);

    // status.json gone: said, not hidden.
    std::fs::remove_file(fleet.scratch.status_path()).unwrap();
    let (status, text) = get(addr, "/metrics", &[basic()]);
    assert_eq!(status, 200);
    assert_eq!(
        value(&text, "fleetdash_snapshot_readable", &[]),
        Some(0.0),
        "{text}"
    );
    // Which hub this is comes from the config, and stays.
    assert_eq!(
        value(&text, "fleetdash_hub_info", &[("hub", &config.hub)]),
        Some(1.0),
        "{text}"
    );
    assert_promtool_clean(&text);
}

/// A real Prometheus scrapes the three endpoints (the loopback listener without auth, serve
/// with basic auth, the intake with the operator's token) and answers queries for them.
#[test]
fn a_real_prometheus_scrapes_run_serve_and_the_intake_and_answers_queries() {
    require(PROMETHEUS);
    let fleet = fleet();
    let (_run, intake, metrics) = run(&fleet);
    // serve reads what run writes.
    eventually("run's first status.json", || {
        fleet
            .scratch
            .status_path()
            .exists()
            .then_some(())
            .ok_or_default()
    });
    let (_serve, served) = serve(&fleet.config);
    let dir = fleet.scratch.path().join("prometheus");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("password"), PASSWORD).unwrap();
    std::fs::write(dir.join("operator.token"), OPERATOR_TOKEN).unwrap();
    let config = format!(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n\
         scrape_configs:\n\
         - job_name: fleetdash-run\n  static_configs: [{{targets: ['{metrics}']}}]\n\
         - job_name: fleetdash-serve\n  basic_auth: {{username: {USER}, password_file: {pw}}}\n  \
           static_configs: [{{targets: ['{served}']}}]\n\
         - job_name: fleetdash-intake\n  authorization: {{credentials_file: {tok}}}\n  \
           static_configs: [{{targets: ['{intake}']}}]\n",
        pw = dir.join("password").display(),
        tok = dir.join("operator.token").display(),
    );
    let (prometheus, listen, log) = prometheus::start(&dir, &config, &[]);
    let said = || std::fs::read_to_string(&log).unwrap_or_default();
    for job in ["fleetdash-run", "fleetdash-serve", "fleetdash-intake"] {
        eventually(&format!("Prometheus scraping {job}"), || {
            match query(listen, &format!("up{{job=\"{job}\"}} == 1")) {
                Ok(r) if r.len() == 1 => Ok(()),
                other => Err(format!("{other:?}\n{}", said())),
            }
        });
    }
    // A known series, from each process.
    for job in ["fleetdash-run", "fleetdash-serve"] {
        let r = eventually(
            &format!("fleetdash_agent_up of sol from {job}"),
            || match query(
                listen,
                &format!("fleetdash_agent_up{{agent=\"sol\",job=\"{job}\"}}"),
            ) {
                Ok(r) if !r.is_empty() => Ok(r),
                other => Err(format!("{other:?}\n{}", said())),
            },
        );
        assert_eq!(r[0]["value"][1], "1", "{r:?}");
    }
    // A counter only run has, queried as Prometheus users do.
    let r = eventually("passes of the agents' collector", || {
        match query(
            listen,
            "sum by (job) (fleetdash_collector_pass_duration_seconds_count{section=\"agents\"}) > 0",
        ) {
            Ok(r) if r.len() == 2 => Ok(r),
            other => Err(format!("{other:?}\n{}", said())),
        }
    });
    let jobs: BTreeSet<&str> = r
        .iter()
        .filter_map(|s| s["metric"]["job"].as_str())
        .collect();
    assert_eq!(jobs, BTreeSet::from(["fleetdash-intake", "fleetdash-run"]));
    drop(prometheus);
}

/// docs/metrics.md's example prometheus.yml passes `promtool check config`, with the rules
/// files it names: the packaged ones (packaging/prometheus, installed under
/// /usr/share/fleetdash/prometheus), checked as promtool checks every file in `rule_files`.
/// tests/prometheus_rules.rs tests the rules themselves.
#[test]
fn the_documented_alerting_rules_pass_promtool() {
    let doc = std::fs::read_to_string(support::repo_root().join("docs/metrics.md")).unwrap();
    let scrape = doc
        .split("```yaml\n")
        .skip(1)
        .map(|b| b.split("```").next().unwrap())
        .find(|b| b.contains("scrape_configs:"))
        .expect("docs/metrics.md has an example scrape config");
    let installed = "/usr/share/fleetdash/prometheus/";
    let rule_files: Vec<&str> = scrape
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- "))
        .filter(|f| f.starts_with(installed))
        .collect();
    assert_eq!(
        rule_files,
        [
            "/usr/share/fleetdash/prometheus/fleetdash.rules.yml",
            "/usr/share/fleetdash/prometheus/fleetdash.recording.yml"
        ],
        "the example loads the packaged rules:\n{scrape}"
    );
    let dir = tempfile::tempdir().unwrap();
    // The files it names exist on the host it documents; here, the repository's, and secrets
    // beside it.
    let packaged = support::repo_root().join("packaging/prometheus");
    let scrape = scrape
        .replace(installed, &format!("{}/", packaged.display()))
        .replace("/etc/prometheus/", &format!("{}/", dir.path().display()));
    for name in ["fleetdash.password", "fleetdash-operator.token"] {
        std::fs::write(dir.path().join(name), "x").unwrap();
    }
    let file = dir.path().join("prometheus.yml");
    std::fs::write(&file, &scrape).unwrap();
    let out = Command::new(require(PROMTOOL))
        .args(["check", "config"])
        .arg(&file)
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "promtool check config: {}\n{said}\n{scrape}",
        out.status
    );
    for name in ["fleetdash.rules.yml", "fleetdash.recording.yml"] {
        let checked = format!("Checking {}", packaged.join(name).display());
        assert!(said.contains(&checked), "{checked}: not in\n{said}");
    }
    assert!(
        said.matches("rules found").count() == 2,
        "both rules files checked:\n{said}"
    );
}

trait OkOrDefault<T> {
    fn ok_or_default(self) -> Result<T, String>;
}

impl<T> OkOrDefault<T> for Option<T> {
    fn ok_or_default(self) -> Result<T, String> {
        self.ok_or_else(|| "not yet".to_string())
    }
}

//! The page in a real browser: headless Chromium, driven through chromedriver (WebDriver), at a
//! phone's width (390 x 844 CSS px, mobile emulation), loading the built page (`frontend/dist`,
//! from `scripts/build-frontend`) from the real `fleetdash serve` behind basic auth.
//!
//! Every assertion is about what a person would see: the DOM and its `innerText`, waited for
//! with a deadline, never a blind sleep. Each scenario saves a screenshot of the whole page in
//! `target/browser-screenshots/` (and `<scenario>-FAILED.png` when it fails).
//!
//! Basic auth: credentials in the page URL break wasm-bindgen's fetch of the .wasm, so the
//! Authorization header is sent by the browser itself, set through DevTools
//! (`Network.setExtraHTTPHeaders` over chromedriver's `goog/cdp/execute`). That harness
//! (chromedriver, Chromium at the phone's size, DevTools, the log-in, `fleetdash serve`) is
//! `support/chrome.rs`, shared with the page_verdict bench; the waits, checks and screenshots
//! are this file's.
//!
//! Needs `chromium` and `chromium-driver` (Debian) and the peers' venvs; `scripts/test` installs
//! them and builds the page first.

use crate::support;

use crate::support::kanban;

use crate::support::chrome;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use base64::Engine;
use chrome::{PHONE, Serve, network, runtime};

/// A desktop window, CSS px.
const DESKTOP: (u32, u32) = (1280, 900);
use chrono::{DateTime, FixedOffset, Utc};
use fleetdash::a2a::Wire;
use fleetdash::demo::sim::SimAgent;
use fleetdash_model::{
    Agent, Asc, Band, Board, Card, CronCheck, CronState, Glance, History, LiveTask, NamedCheck,
    Probe, RulesView, Snapshot, System,
};
use serde::Deserialize;
use serde_json::{Value, json};
use support::secrets::{self, BEARER, GLUED, HASH, JWT, SECRETS, SK, URL_CREDS, glued_text};
use support::{PyPeer, Scratch, Sdk, Sim, refused_endpoint, repo_root};

const USER: &str = "young";
const PASSWORD: &str = "correct horse battery";
/// How long the test waits for the page to show what it waits for before calling it hung (a
/// budget for a loaded machine, not a speed bound).
const PATIENCE: Duration = support::HANG_BUDGET;

// ---------------------------------------------------------------------------------------------
// 1. Real data from the real collector, with secrets planted everywhere
// ---------------------------------------------------------------------------------------------

/// Credentials written into an endpoint of the config.
const CFG_USER: &str = "cfguser";
const CFG_PASS: &str = "PLANTEDcfgPa55";

/// Where in `text` a secret (or a piece of one, or the config's credentials) shows, if it does.
fn find_secret(text: &str) -> Option<String> {
    secrets::find_secret(text).or_else(|| {
        [CFG_USER, CFG_PASS]
            .into_iter()
            .find(|needle| text.contains(needle))
            .map(|needle| format!("{needle:?}"))
    })
}

#[test]
fn a_real_fleet_reads_right_on_a_phone_and_shows_no_secret() {
    let started = Instant::now();
    let scratch = Scratch::new();
    // Real SDK peers, each planting one secret in its card, replies and metadata, and
    // reporting it in the fields the collector does copy (model, lane, window, in-flight ids).
    // The first two plant every glued secret too (issue 21).
    let sk_glued = format!("{} {}", SK.value, glued_text());
    let bearer_glued = format!("{} {}", BEARER.value, glued_text());
    let peer_specs: [(Sdk, &[&str]); 5] = [
        (
            Sdk::V1,
            &[
                "--plant-secret",
                &sk_glued,
                "--model",
                SK.value,
                "--in-flight",
                SK.value,
            ],
        ),
        (
            Sdk::V03,
            &[
                "--plant-secret",
                &bearer_glued,
                "--lane",
                BEARER.value,
                "--window-percent",
                "5",
                "--window-status",
                BEARER.value,
            ],
        ),
        (
            Sdk::V1,
            &[
                "--plant-secret",
                JWT.value,
                "--window-percent",
                "7",
                "--window-model",
                JWT.value,
            ],
        ),
        (
            Sdk::V03,
            &[
                "--plant-secret",
                URL_CREDS.value,
                "--model",
                URL_CREDS.value,
            ],
        ),
        (
            Sdk::V1,
            &[
                "--plant-secret",
                HASH.value,
                "--in-flight",
                HASH.value,
                "--lane",
                HASH.value,
            ],
        ),
    ];
    let peers: Vec<PyPeer> = std::thread::scope(|s| {
        let handles: Vec<_> = peer_specs
            .iter()
            .map(|(sdk, args)| s.spawn(move || PyPeer::start(*sdk, args)))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let min = Sim::healthy("min", Wire::V1);
    let orion = Sim::healthy("orion", Wire::V03Content);
    let vega = Sim::start(SimAgent {
        skills: 0,
        ..SimAgent::healthy("vega", Wire::V03)
    });

    // An audit log whose summaries and peers are secrets, with malformed lines carrying them too.
    let secret_audit = scratch.path().join("secret.a2a_audit.jsonl");
    let now = Utc::now().timestamp() as f64;
    let mut lines = Vec::new();
    let glued = GLUED.iter().map(|g| g.value.as_str());
    for secret in SECRETS.iter().map(|s| s.value).chain(glued) {
        lines.push(
            json!({"ts": now - 120.0, "direction": "inbound", "peer": secret,
                   "summary": format!("said {secret}")})
            .to_string(),
        );
        lines.push(format!("not json {secret}"));
    }
    std::fs::write(&secret_audit, lines.join("\n") + "\n").unwrap();
    let fresh = scratch.audit_log("fresh", 30.0);

    let agent = |name: &str,
                 endpoint: &str,
                 dialect: &str,
                 audit: &Path,
                 extra: &[(&str, &str)]| {
        let mut block = format!(
            "[[agents]]\nname = {name:?}\nendpoint = {endpoint:?}\ndialect = {dialect:?}\naudit_log = {:?}\n",
            audit.display().to_string()
        );
        for (k, v) in extra {
            block += &format!("{k} = {v:?}\n");
        }
        block + "\n"
    };
    let with_creds = peers[0]
        .endpoint()
        .replace("http://", &format!("http://{CFG_USER}:{CFG_PASS}@"));
    let body = [
        agent("min", &min.endpoint, "v1", &fresh, &[("lane", "hub")]),
        agent("orion", &orion.endpoint, "v0.3-content", &fresh, &[]),
        agent(
            "lyra",
            &refused_endpoint(),
            "v1",
            &fresh,
            &[("lane", "docs")],
        ),
        agent("vega", &vega.endpoint, "v0.3", &fresh, &[]),
        agent(
            "sec-sk",
            &peers[0].endpoint(),
            "v1",
            &secret_audit,
            &[("lane", JWT.value)],
        ),
        agent(
            "sec-bearer",
            &peers[1].endpoint(),
            "v0.3",
            &secret_audit,
            &[("model", HASH.value), ("plane", BEARER.value)],
        ),
        agent(
            "sec-jwt",
            &peers[2].endpoint(),
            "auto",
            &secret_audit,
            &[("model", SK.value)],
        ),
        agent(
            "sec-url",
            &peers[3].endpoint(),
            "auto",
            &secret_audit,
            &[("plane", URL_CREDS.value)],
        ),
        agent("sec-hash", &peers[4].endpoint(), "v0.3", &secret_audit, &[]),
        agent("sec-creds-endpoint", &with_creds, "v1", &secret_audit, &[]),
        // Glued secrets in the labels the page shows from the config (the model only until the
        // peer reports one).
        agent(
            "sec-glued",
            &peers[2].endpoint(),
            "v1",
            &secret_audit,
            &[
                ("plane", secrets::glued("bearer token", "x")),
                ("lane", secrets::glued("Anthropic key", "7")),
                ("model", secrets::glued("basic auth header", "%3D")),
            ],
        ),
    ]
    .concat();
    let config = scratch.config(&(body + &serve_section(&scratch)));
    let collected = scratch.collect(&config);
    assert!(
        collected.status.success(),
        "fleetdash collect failed: {}",
        String::from_utf8_lossy(&collected.stderr)
    );
    let snapshot = scratch.snapshot();
    let verdict = snapshot.verdict();
    let rows = snapshot
        .agents
        .value()
        .expect("agents were collected")
        .len();
    eprintln!("fleet up and collected in {:?}", started.elapsed());

    // The first HTML (issue 46): the collector wrote the page's index.html with the verdict in
    // it, through the gate like every file it writes.
    let first_html = std::fs::read_to_string(scratch.path().join("out/index.html")).unwrap();
    assert!(
        first_html.contains("<header class=\"top\" id=\"first\""),
        "{first_html}"
    );
    assert_eq!(find_secret(&first_html), None, "a secret in out/index.html");

    let server = Serve::start(&config);
    runtime().block_on(async {
        let chrome = Chrome::start("1-real-fleet").await;
        chrome.refused_without_credentials(&server.url()).await;
        chrome.log_in().await;
        let first = chrome.first_html_without_wasm(&server.url()).await;
        chrome.screenshot("1-first-html-before-wasm").await;
        chrome.open(&server.url()).await;
        chrome
            .wait_for(
                &format!("{rows} agent rows"),
                &format!("return document.querySelectorAll('#agents li.row').length === {rows}"),
            )
            .await;
        chrome.assert_took_over_in_place(&first).await;
        chrome
            .assert_a_failed_first_poll_is_said(&server.url())
            .await;
        chrome.assert_phone_width().await;
        chrome.assert_panels_visible().await;

        // lyra (down) and vega (no skills) at least; the line counts what the snapshot holds.
        let line = chrome.text(".counts").await;
        chrome
            .check(
                verdict.red >= 2 && line.contains(&verdict.sentence()),
                || format!("the counts say {line:?}; the snapshot has {verdict:?}"),
            )
            .await;

        let shown = chrome.rows("#agents").await;
        let position = |name: &str| shown.iter().position(|r| r.id == format!("agent-{name}"));
        let lyra = position("lyra").expect("a row for lyra");
        chrome.open_row("agent-lyra").await;
        let shown = chrome.rows("#agents").await;
        let first_green = shown.iter().position(|r| r.band() == "green");
        let last_red = shown.iter().rposition(|r| r.band() == "red");
        chrome
            .check(
                shown[lyra].band() == "red"
                    && shown[lyra].text.contains("down: connection refused")
                    && shown[lyra].text.contains("ASC-5003"),
                || {
                    format!(
                        "lyra's row should be red, down, ASC-5003: {:#?}",
                        shown[lyra]
                    )
                },
            )
            .await;
        chrome
            .check(
                first_green.is_some() && last_red < first_green && lyra < first_green.unwrap(),
                || format!("red rows must come before green rows: {shown:#?}"),
            )
            .await;
        let vega = &shown[position("vega").expect("a row for vega")];
        // Closed, the row leaves its reason to its needs-you line; opened, it says it whole.
        chrome.open_row("agent-vega").await;
        let vega_opened = chrome.text("#agent-vega").await;
        chrome
            .check(
                vega.band() == "red" && vega_opened.contains("card lists no skills"),
                || format!("vega's empty card should be red and say so: {vega:#?} {vega_opened:?}"),
            )
            .await;
        for name in ["min", "orion", "sec-creds-endpoint"] {
            let row = &shown[position(name).unwrap_or_else(|| panic!("a row for {name}"))];
            chrome
                .check(row.band() == "green", || {
                    format!("{name} is healthy: {row:#?}")
                })
                .await;
        }

        // Every row opened: what sits behind the taps is searched too.
        chrome.open_all().await;
        let html: String = chrome.js("return document.documentElement.outerHTML").await;
        let leaked = find_secret(&html);
        chrome
            .check(leaked.is_none(), || {
                format!(
                    "{} is in the page's HTML",
                    leaked.clone().unwrap_or_default()
                )
            })
            .await;
        chrome.assert_no_horizontal_scroll().await;
        chrome.screenshot("1-real-fleet").await;
        chrome.quit().await;
    });
    eprintln!("scenario 1 took {:?}", started.elapsed());
}

// ---------------------------------------------------------------------------------------------
// 2. A hand-written snapshot: stuck tasks (one crossing the rule while the page is open),
//    failed system probes, sections not collected
// ---------------------------------------------------------------------------------------------

#[test]
fn stuck_tasks_failed_probes_and_missing_sections_are_loud() {
    let started = Instant::now();
    let scratch = Scratch::new();
    let config = scratch.config(&serve_section(&scratch));
    let server = Serve::start(&config);
    runtime().block_on(async {
        let chrome = Chrome::start("2-fixture").await;
        chrome.log_in().await;
        // Written just before the page opens: the crossing task is CROSSING_IN_S from the rule.
        let now = Utc::now();
        write_snapshot(&scratch, &fixture_snapshot(now));
        chrome.open(&server.url()).await;
        chrome
            .wait_for(
                "the live tasks",
                "return document.querySelectorAll('#live li.row').length === 3",
            )
            .await;
        chrome.assert_phone_width().await;
        chrome.assert_panels_visible().await;

        // Before the rule: the crossing task is green, without the badge, and the verdict
        // counts the stuck task, the failed host, the backups not collected and the work
        // queue's row that cannot be read.
        let before = chrome.row_at("task-min-t_crossing").await;
        let verdict_before = chrome.text(".counts").await;
        let shown_after = (Utc::now() - now).num_milliseconds();
        eprintln!("2-fixture: tasks read {shown_after} ms after the snapshot was written");
        chrome
            .check(shown_after < CROSSING_IN_S as i64 * 1000, || {
                format!("the page took {shown_after} ms to show the tasks: too slow to see the crossing")
            })
            .await;
        chrome
            .check(before.band() == "green" && !before.text.contains("STUCK"), || {
                format!("before the 30 s rule the task is not stuck yet: {before:#?}")
            })
            .await;
        chrome
            .check(verdict_before.contains("4 red · 4 green"), || {
                format!("verdict before the crossing: {verdict_before:?}")
            })
            .await;
        // Red first, then unfinished tasks oldest first (the next to cross), finished last.
        let order: Vec<String> = chrome
            .rows("#live")
            .await
            .into_iter()
            .map(|r| r.id)
            .collect();
        chrome
            .check(
                order == ["task-min-t_flagged", "task-min-t_crossing", "task-min-t_done"],
                || format!("live task order: {order:?}"),
            )
            .await;
        chrome
            .check(
                before.text.contains("working") && !before.text.contains("TASK_STATE_"),
                || format!("the state reads as a word: {before:#?}"),
            )
            .await;

        chrome.open_row("task-min-t_flagged").await;
        let flagged = chrome.row_at("task-min-t_flagged").await;
        chrome
            .check(
                flagged.band() == "red"
                    && flagged.text.contains("✖ STUCK")
                    && flagged.text.contains("no reply for 15 min")
                    && flagged.text.contains("ASC-5004"),
                || format!("the collector's stuck task shows STUCK and why: {flagged:#?}"),
            )
            .await;
        let done = chrome.row_at("task-min-t_done").await;
        chrome
            .check(done.band() == "green" && !done.text.contains("STUCK"), || {
                format!("a completed task is never stuck, however old: {done:#?}")
            })
            .await;

        // Ages tick: without a reload the crossing task passes 30 s and turns STUCK.
        chrome
            .wait_for(
                "the STUCK badge on t_crossing",
                "const li = document.querySelector('#task-min-t_crossing');
                 const badge = li && li.querySelector('span.badge.red');
                 return !!badge && badge.innerText.includes('STUCK') && li.classList.contains('red');",
            )
            .await;
        let after = chrome.row_at("task-min-t_crossing").await;
        // The badge came with the age that crossed the rule (read a tick or more later on a
        // busy machine: any age at or past 30 s, never one below it).
        let age_at_rule = shown_seconds(&after.text).is_some_and(|s| s >= 30);
        chrome
            .check(after.text.contains("✖ STUCK") && age_at_rule, || {
                format!("the crossed task: {after:#?}")
            })
            .await;
        // The glance agrees with the rows: one more red.
        chrome
            .wait_for(
                "the verdict to count the crossed task",
                "return document.querySelector('.counts').innerText.includes('5 red · 3 green')",
            )
            .await;

        // Systems: the failed probe is red with its reason, sorted first; its code and the
        // failed readings behind the tap.
        chrome.open_row("host-hub-2").await;
        let hosts = chrome.rows("#systems").await;
        chrome
            .check(
                hosts.len() == 2
                    && hosts[0].band() == "red"
                    && hosts[0].id == "host-hub-2"
                    && hosts[0].text.contains("ssh: connection refused")
                    && hosts[0].text.contains("ASC-5003")
                    && hosts[0].text.contains("error: ssh: connection refused")
                    && hosts[1].band() == "green",
                || format!("the unreachable host first, red, with its reason: {hosts:#?}"),
            )
            .await;

        // The host's 24 h strip behind the tap: runs of half hours (48 in all), labelled for
        // screen readers with the uptime; the down and partly-down slots are runs of their own.
        chrome.open_row("host-hub-1").await;
        let strip: Value = chrome
            .js(
                "const li = document.querySelector('#host-hub-1');
                 const s = li && li.querySelector('.strip[role=img]');
                 return s && [s.getAttribute('aria-label'),
                     [...s.children].reduce((n, i) => n + Number(i.style.getPropertyValue('--n')), 0),
                     s.querySelectorAll('i.d').length, s.querySelectorAll('i.p').length,
                     li.querySelector('.strip:not([role])').getAttribute('aria-hidden'),
                     li.innerText.includes('24 h uptime 97.9 %'),
                     li.innerText.includes('24 h ago') && li.innerText.includes('now')]",
            )
            .await;
        chrome
            .check(
                strip == json!(["24 h uptime 97.9 %", 48, 1, 1, "true", true, true]),
                || format!("hub-1's strip: [label, slots, down runs, partly runs, line strip hidden, words, axis] = {strip}"),
            )
            .await;

        // Issue 21: a work-queue row the hub cannot read is red on its own with its id and why;
        // what the retention and the operator leave out is said beside the panel's title.
        chrome.open_row("queue-q_bad").await;
        let bad = chrome.row("#queue", "q_bad").await;
        chrome
            .check(
                bad.band() == "red"
                    && bad.text.contains("unreadable: state \"TASK_STATE_PAUSED\"")
                    && bad.text.contains("ASC-7005"),
                || format!("the unreadable row, red with its id and why: {bad:#?}"),
            )
            .await;
        let queue = chrome.text("#queue").await;
        chrome
            .check(
                queue.contains("1,150 finished tasks not shown, 3 dismissed"),
                || format!("what the queue leaves out is said: {queue:?}"),
            )
            .await;

        // Sections without data: configured (backups) is a red error; unconfigured (agents)
        // says so.
        let backups = chrome.text("#backups").await;
        chrome
            .check(backups.contains("error: not collected"), || {
                format!("backups are configured but not collected: {backups:?}")
            })
            .await;
        let agents = chrome.text("#agents").await;
        chrome
            .check(
                agents.contains("Not configured") && !agents.contains("error"),
                || format!("agents have no collector: {agents:?}"),
            )
            .await;
        chrome.assert_no_horizontal_scroll().await;
        chrome.screenshot("2-fixture").await;
        chrome.quit().await;
    });
    eprintln!("scenario 2 took {:?}", started.elapsed());
}

/// How long after the fixture is written its crossing task reaches the 30 s stuck rule: room
/// for a loaded machine to open the page and read the rows before the crossing.
const CROSSING_IN_S: u64 = 15;

/// The age a row shows in seconds ("42 s", or "1 min" as 60), if it shows one.
fn shown_seconds(text: &str) -> Option<u64> {
    let words: Vec<&str> = text.split_whitespace().collect();
    words.windows(2).find_map(|w| match w[1] {
        "s" => w[0].parse().ok(),
        "min" => w[0].parse::<u64>().ok().map(|m| m * 60),
        _ => None,
    })
}

/// The shipped rules, with the stuck rule set to `no_reply_s`.
fn rules(no_reply_s: u64) -> RulesView {
    RulesView {
        no_reply_s,
        ..support::fleet_rules()
    }
}

fn green_agent(name: &str, at: DateTime<Utc>) -> Agent {
    Agent {
        name: name.into(),
        endpoint: "http://127.0.0.1:9/".into(),
        plane: Some("heart".into()),
        up: true,
        last_exchange_s: Probe::Value(90),
        exchange_band: Band::Green,
        skills_count: Probe::Value(3),
        lane: Probe::Value("hub".into()),
        model: Probe::Value("claude-opus".into()),
        window: Probe::Unknown,
        heartbeat: Probe::Unknown,
        band: Band::Green,
        status: Asc::SUCCESS,
        reason: None,
        audit_skipped_lines: 0,
        last_report_s: None,
        history: None,
        checked_at: at,
        stale: false,
    }
}

fn fixture_snapshot(now: DateTime<Utc>) -> Snapshot {
    let mut s = Snapshot::empty(now, rules(30));
    // Fresh, so the page's clock runs on it (a stale one is frozen): the backups section failed
    // on its own.
    s.stale = false;
    s.sections.tasks.configured = true;
    s.sections.tasks.checked_at = Some(now);
    s.sections.systems.configured = true;
    s.sections.systems.checked_at = Some(now);
    s.sections.backups.configured = true;
    s.sections.queue.configured = true;
    s.sections.queue.checked_at = Some(now);
    s.tasks.queue = Probe::Value(Vec::new());
    s.tasks.queue_unreadable = vec![fleetdash_model::UnreadableTask {
        id: "q_bad".into(),
        reason: "state \"TASK_STATE_PAUSED\": not a task state this fleetdash knows".into(),
        band: Band::Red,
        status: Asc::INTEGRITY_CHECK_FAILED,
        checked_at: now,
        stale: true,
    }];
    s.tasks.queue_left_out = fleetdash_model::QueueLeftOut {
        finished: 1150,
        dismissed: 3,
        ended: Vec::new(),
    };
    let task = |id: &str, state: &str, age_s: u64, stuck: bool| LiveTask {
        id: id.into(),
        agent: "min".into(),
        state: Probe::Value(state.into()),
        age_s,
        stuck,
        status: if stuck { Asc::TIMEOUT } else { Asc::SUCCESS },
        reason: stuck.then(|| "no reply for 15 min".into()),
        checked_at: now,
        stale: false,
    };
    s.tasks.live = Probe::Value(vec![
        task(
            "t_crossing",
            "TASK_STATE_WORKING",
            30 - CROSSING_IN_S,
            false,
        ),
        task("t_flagged", "TASK_STATE_WORKING", 900, true),
        task("t_done", "TASK_STATE_COMPLETED", 3600, false),
    ]);
    s.tasks.board = Probe::Value(Board {
        columns: vec!["todo".into(), "doing".into(), "done".into()],
        cards: vec![Card {
            board: "fleet".into(),
            id: "c1".into(),
            title: "Rotate the hub's backup key".into(),
            status: "doing".into(),
            assignee: Some("min".into()),
            priority: None,
            age_s: 3600,
            block_kind: None,
            latest_activity_at: None,
            conditions: Vec::new(),
            band: Band::Green,
            checked_at: now,
            stale: false,
        }],
        sources: Vec::new(),
    });
    let check = |name: &str, ok: Probe<bool>| NamedCheck {
        name: name.into(),
        stale: ok.is_error(),
        reason: ok.error_reason().map(Into::into),
        ok,
        uptime_24h_pct: Some(100.0),
        checked_at: now,
    };
    s.systems = Probe::Value(vec![
        System {
            host: "hub-1".into(),
            source: "local".into(),
            ram_used_gb: Probe::Value(3.2),
            ram_total_gb: Probe::Value(16.0),
            disk_free_gb: Probe::Value(120.5),
            services: vec![check("fleetdash", Probe::Value(true))],
            tunnels: vec![check("wg0", Probe::Value(true))],
            crons: vec![CronCheck {
                name: "backup".into(),
                state: CronState::Up,
                last_ok_s: Probe::Value(3600),
                period_s: 86400,
                grace_s: 3600,
                reason: None,
                uptime_24h_pct: Some(100.0),
                checked_at: now,
                stale: false,
            }],
            vault_parity: Probe::Value(true),
            vault_reason: None,
            band: Band::Green,
            status: Asc::SUCCESS,
            reason: None,
            // Down for one half hour, partly down for the one before, this morning.
            history: Some(History {
                uptime_24h_pct: Some(97.9),
                strip: format!("{}pd{}", "u".repeat(40), "u".repeat(6)),
                slot_s: 1800,
                samples: 700,
                since: None,
            }),
            checked_at: now,
            stale: false,
        },
        System {
            host: "hub-2".into(),
            source: "ssh".into(),
            ram_used_gb: Probe::error("ssh: connection refused"),
            ram_total_gb: Probe::error("ssh: connection refused"),
            disk_free_gb: Probe::error("ssh: connection refused"),
            services: vec![check("fleetdash", Probe::error("ssh: connection refused"))],
            tunnels: Vec::new(),
            crons: Vec::new(),
            vault_parity: Probe::Unknown,
            vault_reason: None,
            band: Band::Red,
            status: Asc::DEPENDENCY_UNAVAILABLE,
            reason: Some("ssh: connection refused".into()),
            history: None,
            checked_at: now,
            stale: true,
        },
    ]);
    s
}

// ---------------------------------------------------------------------------------------------
// 3. The staleness banner: an old snapshot, a fresh one, then no snapshot at all
// ---------------------------------------------------------------------------------------------

#[test]
fn the_banner_says_when_not_to_trust_the_page() {
    let started = Instant::now();
    let scratch = Scratch::new();
    let config = scratch.config(&serve_section(&scratch));
    let mut server = Serve::start(&config);
    let snapshot_at = |generated_at: DateTime<Utc>| {
        let mut s = Snapshot::empty(generated_at, support::fleet_rules());
        s.stale = false;
        s.sections.agents.configured = true;
        s.sections.agents.checked_at = Some(generated_at);
        s.agents = Probe::Value(vec![green_agent("min", generated_at)]);
        s
    };
    write_snapshot(
        &scratch,
        &snapshot_at(Utc::now() - chrono::Duration::minutes(20)),
    );
    runtime().block_on(async {
        let chrome = Chrome::start("3-staleness").await;
        chrome.log_in().await;
        chrome.open(&server.url()).await;
        chrome.assert_phone_width().await;

        let banner = chrome
            .wait_for(
                "the staleness banner",
                "const b = document.querySelector('#stale-banner');
                 return b && b.getBoundingClientRect().height > 0 && b.innerText;",
            )
            .await;
        let banner = banner.as_str().unwrap_or_default().to_string();
        chrome
            .check(
                banner.contains("snapshot is 20 min old (limit 10 min)"),
                || format!("the banner should say how old the snapshot is: {banner:?}"),
            )
            .await;
        chrome.assert_no_horizontal_scroll().await;
        chrome.screenshot("3a-stale-snapshot").await;

        // A fresh snapshot (2 min old, under the 10 min limit) and the tab coming back into
        // focus: the banner goes.
        write_snapshot(
            &scratch,
            &snapshot_at(Utc::now() - chrono::Duration::minutes(2)),
        );
        chrome.focus().await;
        chrome
            .wait_for(
                "the banner to go after a fresh snapshot",
                "return document.querySelector('#stale-banner') === null
                    && document.querySelector('#verdict') !== null
                    && document.querySelector('#agents').innerText.includes('2 min ago')",
            )
            .await;
        chrome.screenshot("3b-fresh-snapshot").await;

        // The snapshot disappears (the server answers 503, "no snapshot yet"): the banner says
        // the page cannot load it and how old the last good one is.
        std::fs::remove_file(scratch.status_path()).unwrap();
        chrome.focus().await;
        let banner = chrome
            .wait_for(
                "the banner after a 503",
                "const b = document.querySelector('#stale-banner');
                 return b && b.innerText.includes('Cannot load the snapshot') && b.innerText;",
            )
            .await;
        let banner = banner.as_str().unwrap_or_default().to_string();
        chrome
            .check(
                banner.contains("HTTP 503: No snapshot yet")
                    && banner.contains("last good snapshot 2 min ago"),
                || format!("503, in the server's words (its problem+json title): {banner:?}"),
            )
            .await;
        chrome.screenshot("3c-no-snapshot").await;

        // The server stops: same, in words, never the browser's "TypeError: Failed to fetch".
        server.stop();
        chrome.focus().await;
        let banner = chrome
            .wait_for(
                "the banner after the server stopped",
                "const b = document.querySelector('#stale-banner');
                 return b && b.innerText.includes('cannot be reached') && b.innerText;",
            )
            .await;
        let banner = banner.as_str().unwrap_or_default().to_string();
        chrome
            .check(
                banner.contains("Cannot load the snapshot: the server cannot be reached")
                    && banner.contains("last good snapshot 2 min ago")
                    && !banner.contains("TypeError")
                    && !banner.contains("network error"),
                || format!("server gone: {banner:?}"),
            )
            .await;
        // Every panel says the time its data is from, not an age from another clock.
        chrome.assert_frozen_panels().await;
        chrome.assert_no_horizontal_scroll().await;
        chrome.screenshot("3d-server-gone").await;
        chrome.quit().await;
    });
    eprintln!("scenario 3 took {:?}", started.elapsed());
}

// ---------------------------------------------------------------------------------------------
// 4. The demo fleet on a phone's first screen, light and dark
// ---------------------------------------------------------------------------------------------

/// The demo fleet at 390x844: every red item has a needs-you line inside the first screen, in
/// light and dark mode; the page, all collapsed, is at most three screens tall; the Systems
/// panel reads right when its rows are opened.
#[test]
fn the_demo_fleet_fits_a_phones_first_screen() {
    let started = Instant::now();
    let state = tempfile::tempdir().unwrap();
    let demo = support::Demo::start(state.path(), Some(&dist_dir()));
    demo_snapshot_with_hosts(state.path());
    // The page is judged once the demo's story has played out (its most rows and reasons): the
    // silent owner's task orphaned by the watchdog, so every queue row is in its last band.
    let snapshot = demo_snapshot_when(state.path(), "the watchdog orphaning a queue task", |s| {
        s.tasks.queue.value().is_some_and(|q| {
            q.iter().any(|t| {
                t.status_message.as_deref() == Some(fleetdash_model::queue::ORPHANED_MESSAGE)
            })
        })
    });
    // What the glance says is red at the snapshot's own time: ages only add red items later.
    let glance = Glance::new(
        &snapshot,
        snapshot.generated_at,
        FixedOffset::east_opt(0).unwrap(),
    );
    let red: Vec<String> = glance
        .needs
        .iter()
        .filter(|n| n.band == Band::Red)
        .map(|n| n.what.clone())
        .collect();
    assert!(red.len() >= 5, "the demo plants red items: {red:?}");
    runtime().block_on(async {
        let chrome = Chrome::start("4-demo-glance").await;
        chrome
            .log_in_as(fleetdash::demo::DEMO_USER, &demo.password)
            .await;
        // A phone set to Berlin (UTC+01:00 in winter, +02:00 in summer): every time on the page
        // in its zone, said once.
        chrome.zone("Europe/Berlin").await;
        chrome.open(&demo.url).await;
        chrome
            .wait_for(
                "three hosts in the Systems panel",
                "return document.querySelectorAll('#systems li.row').length === 3",
            )
            .await;
        chrome.assert_phone_width().await;
        chrome.assert_panels_visible().await;
        // The tab says it too: the red count in the title, a red dot for its icon.
        let tab: Value = chrome
            .js("return [document.title, document.querySelector('link[rel=icon]').getAttribute('href')]")
            .await;
        chrome
            .check(
                tab[0].as_str().is_some_and(|t| t.starts_with("✖ ") && t.ends_with(" · fleet"))
                    && tab[1].as_str().is_some_and(|h| h.starts_with("data:image/svg+xml") && h.contains("b3261e")),
                || format!("the tab's title and icon carry the verdict: {tab}"),
            )
            .await;
        for scheme in ["light", "dark"] {
            chrome.colour_scheme(scheme).await;
            let seen = chrome.first_screen().await;
            let named: Vec<&str> = seen.red.iter().map(|l| l.what.as_str()).collect();
            let missing: Vec<&String> = red.iter().filter(|r| !named.contains(&r.as_str())).collect();
            chrome
                .check(missing.is_empty(), || {
                    format!("{scheme}: red items without a needs-you line: {missing:?}; the page names {named:?}")
                })
                .await;
            let below: Vec<&NeedLine> = seen.red.iter().filter(|l| l.bottom > seen.viewport).collect();
            chrome
                .check(below.is_empty(), || {
                    format!("{scheme}: red needs-you lines below the first screen ({} px): {below:#?}", seen.viewport)
                })
                .await;
            // Every red row is said by a red needs-you line: its own, one leading to it (a task
            // stuck on an agent), or one folding it with what took it down (issue 43).
            let said: Vec<&str> = seen
                .red
                .iter()
                .map(|l| l.anchor.as_str())
                .chain(glance.needs.iter().filter(|n| n.band == Band::Red).flat_map(|n| n.stands_for().iter().map(String::as_str)))
                .collect();
            // A live task that turned stuck since `glance` was taken (the page's clock ticks on)
            // is said by the line leading to its agent's row (`task-<agent>-<id>`).
            let on_its_agent = |r: &str| {
                r.strip_prefix("task-")
                    .and_then(|t| t.rsplit_once('-'))
                    .is_some_and(|(agent, _)| said.contains(&format!("agent-{agent}").as_str()))
            };
            let unsaid: Vec<&String> = seen
                .red_rows
                .iter()
                .filter(|r| !said.contains(&r.as_str()) && !on_its_agent(r))
                .collect();
            chrome
                .check(unsaid.is_empty() && !seen.red_rows.is_empty(), || {
                    format!("{scheme}: red rows no red needs-you line says: {unsaid:?} (red rows {:?})", seen.red_rows)
                })
                .await;
            chrome
                .check(seen.height <= 3 * seen.viewport, || {
                    format!("{scheme}: the page is {} px tall, more than 3 screens of {} px", seen.height, seen.viewport)
                })
                .await;
            let dark_background = chrome.background_is_dark().await;
            chrome
                .check(dark_background == (scheme == "dark"), || {
                    format!("{scheme}: the page's background is dark: {dark_background}")
                })
                .await;
            eprintln!(
                "4-demo-glance ({scheme}): {} red lines, the last ending at {} px of {}; page {} px = {:.2} screens",
                seen.red.len(),
                seen.red.iter().map(|l| l.bottom).max().unwrap_or(0),
                seen.viewport,
                seen.height,
                seen.height as f64 / seen.viewport as f64
            );
            chrome.assert_no_horizontal_scroll().await;
            chrome.screenshot(&format!("4-demo-glance-{scheme}")).await;
            let targets = chrome.assert_tap_targets(scheme).await;
            let lines = chrome.assert_needs_lines(scheme).await;
            let opened = chrome.assert_opened_rows_full_width(scheme).await;
            let targets_opened = chrome.assert_tap_targets(&format!("{scheme}, rows opened")).await;
            chrome.assert_no_horizontal_scroll().await;
            eprintln!(
                "4-demo-glance ({scheme}): {targets} tap targets closed, {targets_opened} opened, all >= 24 px; \
                 {} needs-you lines, the longest {:.2} lines; {opened} rows opened, none squeezed",
                lines.len(),
                lines.iter().filter_map(|l| l["lines"].as_f64()).fold(0.0, f64::max)
            );
            chrome.screenshot(&format!("4-demo-glance-{scheme}-opened")).await;
        }
        chrome.colour_scheme("light").await;
        chrome.assert_one_zone("Europe/Berlin").await;
        chrome.assert_work_queue_reads(&glance).await;
        chrome.assert_plain_words().await;
        chrome.assert_desktop_uses_the_width().await;
        chrome.assert_last_report_linked().await;

        // Systems: red first; each host's band as the demo planted it; details behind the tap.
        let hosts = chrome.rows("#systems").await;
        let bands: Vec<(&str, &str)> = hosts
            .iter()
            .map(|h| {
                let name = ["laptop", "LAB", "prod"]
                    .into_iter()
                    .find(|n| h.text.split_whitespace().any(|w| w == *n))
                    .unwrap_or("?");
                (name, h.band())
            })
            .collect();
        chrome
            .check(
                bands.len() == 3
                    && bands[2] == ("LAB", "green")
                    && bands[..2].contains(&("laptop", "red"))
                    && bands[..2].contains(&("prod", "red")),
                || format!("host bands, red first: {bands:?}"),
            )
            .await;
        // Every green row is one line tall, closed (a queued task's may take a second line for
        // its owner: checked below).
        let tall_green: Vec<String> = chrome
            .js(
                "return [...document.querySelectorAll('main .panel:not(#queue) li.row.green')].filter(li => {
                     const s = li.querySelector('summary');
                     const line = parseFloat(getComputedStyle(s).lineHeight);
                     const pad = parseFloat(getComputedStyle(s).paddingTop) + parseFloat(getComputedStyle(s).paddingBottom);
                     return s.getBoundingClientRect().height > 1.5 * line + pad;
                 }).map(li => li.id)",
            )
            .await;
        chrome
            .check(tall_green.is_empty(), || {
                format!("green rows taller than one line: {tall_green:?}")
            })
            .await;
        chrome.open_row("host-laptop").await;
        chrome.open_row("host-prod").await;
        let laptop = chrome.text("#host-laptop").await;
        chrome
            .check(
                laptop.contains("connection refused")
                    && laptop.contains("late")
                    && laptop.contains("in sync"),
                || format!("laptop: the dead tunnel, the late cron, the vault: {laptop:?}"),
            )
            .await;
        let prod = chrome.text("#host-prod").await;
        chrome
            .check(
                prod.contains("hermes-gateway failed") && prod.contains("exit code 2"),
                || format!("prod: the failed unit and the failed cron: {prod:?}"),
            )
            .await;
        // An opened host shows its strip labelled for a screen reader, with its span.
        let strips: Vec<String> = chrome
            .js(
                "return [...document.querySelectorAll('#systems li.row [role=img]')]
                     .map(s => s.getAttribute('aria-label') || '')",
            )
            .await;
        chrome
            .check(
                strips.len() == 2 && strips.iter().all(|l| l.contains("since") || l.contains("24 h")),
                || format!("opened host strips: {strips:?}"),
            )
            .await;
        let backups = chrome.text("#backups").await;
        chrome
            .check(backups.contains("gdrive") && backups.contains("latest 20 h"), || {
                format!("backups: {backups:?}")
            })
            .await;
        chrome.assert_no_horizontal_scroll().await;
        chrome.screenshot("4-demo-glance-opened").await;
        chrome.quit().await;
    });
    drop(demo);
    eprintln!("scenario 4 took {:?}", started.elapsed());
}

/// The demo's snapshot once `ready` holds of it: the demo plays out over a few minutes (its
/// shortened limits), so this waits up to three hang budgets.
fn demo_snapshot_when(state: &Path, what: &str, ready: impl Fn(&Snapshot) -> bool) -> Snapshot {
    let status = state.join("out/status.json");
    let deadline = Instant::now() + 3 * PATIENCE;
    loop {
        let snapshot = std::fs::read(&status)
            .ok()
            .and_then(|b| serde_json::from_slice::<Snapshot>(&b).ok());
        if let Some(s) = snapshot.filter(|s| ready(s)) {
            return s;
        }
        assert!(Instant::now() < deadline, "the demo never got to {what}");
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// The demo's snapshot once the collector has read every section and all three hosts (the page polls every 30 s:
/// it is opened only then).
fn demo_snapshot_with_hosts(state: &Path) -> Snapshot {
    let status = state.join("out/status.json");
    let deadline = Instant::now() + PATIENCE;
    loop {
        let snapshot = std::fs::read(&status)
            .ok()
            .and_then(|b| serde_json::from_slice::<Snapshot>(&b).ok());
        let all_read = snapshot.as_ref().is_some_and(|s| {
            s.agents.value().is_some()
                && s.tasks.board.value().is_some()
                && s.tasks.live.value().is_some()
                && s.backups.value().is_some()
                && s.systems.value().is_some_and(|h| {
                    h.len() == 3 && h.iter().all(|h| h.ram_total_gb.value().is_some())
                })
        });
        if all_read {
            return snapshot.unwrap();
        }
        assert!(
            Instant::now() < deadline,
            "the demo never read every section and its three hosts"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

// ---------------------------------------------------------------------------------------------
// 5. A server that accepts and never answers; then a reload after a transition
// ---------------------------------------------------------------------------------------------

/// The page polls every 2 s with a 1 s deadline (its test timing, `?poll=2&deadline=1`) through a
/// proxy that can hang: once hung, every request is taken and never answered. The banner comes
/// from the first poll given up at its deadline, the bands freeze at the last snapshot (a task
/// crossing the stuck rule meanwhile does not turn STUCK), and when the server answers again
/// the clock runs and it does. Then a transition written while the page was away shows under
/// "since you last looked" after a reload.
#[test]
fn a_hung_server_freezes_the_page_and_a_reload_shows_what_changed_since_the_last_look() {
    let started = Instant::now();
    let scratch = Scratch::new();
    let config = scratch.config(&serve_section(&scratch));
    let server = Serve::start(&config);
    let proxy = HangingProxy::start(&server.addr);
    let url = format!("http://{}/?poll=2&deadline=1", proxy.addr);
    let fleet = |now: DateTime<Utc>, task_age_s: u64| {
        let mut s = Snapshot::empty(now, rules(30));
        s.stale = false;
        for meta in [&mut s.sections.agents, &mut s.sections.live_tasks] {
            meta.configured = true;
            meta.checked_at = Some(now);
        }
        s.agents = Probe::Value(vec![green_agent("min", now), green_agent("vega", now)]);
        s.tasks.live = Probe::Value(vec![LiveTask {
            id: "t_slow".into(),
            agent: "min".into(),
            state: Probe::Value("TASK_STATE_WORKING".into()),
            age_s: task_age_s,
            stuck: false,
            status: Asc::SUCCESS,
            reason: None,
            checked_at: now,
            stale: false,
        }]);
        s
    };
    let stuck_badge = "const li = document.querySelector('#task-min-t_slow');
                       return !!li && li.classList.contains('red') && li.innerText.includes('STUCK');";
    runtime().block_on(async {
        let chrome = Chrome::start("5-hung-server").await;
        chrome.log_in().await;
        // A reader in a zone half an hour off the hour (UTC+05:30).
        chrome.zone("Asia/Kolkata").await;
        write_snapshot(&scratch, &fleet(Utc::now(), 0));
        chrome.open(&url).await;
        chrome
            .wait_for(
                "the task row",
                "return !!document.querySelector('#task-min-t_slow') && !document.querySelector('#stale-banner')",
            )
            .await;
        // This look is stored once a poll succeeded; no look before it: nothing to compare.
        chrome
            .wait_for(
                "the look to be stored",
                "return !!localStorage.getItem('fleetdash.looked')",
            )
            .await;
        let since: bool = chrome.js("return !!document.querySelector('#since')").await;
        chrome
            .check(!since, || "a first visit has no 'since you last looked'".into())
            .await;

        // A snapshot whose task crosses the 30 s rule 8 s from now; once the page shows it,
        // the server hangs.
        let written = Utc::now();
        let mut about_to_cross = fleet(written, 22);
        if let Probe::Value(agents) = &mut about_to_cross.agents {
            // Its mark: the page shows mira once it has read this snapshot.
            agents.push(green_agent("mira", written));
        }
        write_snapshot(&scratch, &about_to_cross);
        chrome
            .wait_for(
                "the snapshot whose task is about to cross",
                "return !!document.querySelector('#agent-mira')",
            )
            .await;
        let seen_fresh: bool = chrome.js(stuck_badge).await;
        proxy.hang(true);
        let hung_at = Instant::now();
        let banner = chrome
            .wait_for(
                "the banner after the server hung",
                "const b = document.querySelector('#stale-banner'); return b && b.innerText;",
            )
            .await;
        eprintln!("5-hung-server: banner {:?} after the hang", hung_at.elapsed());
        let banner = banner.as_str().unwrap_or_default().to_string();
        chrome
            .check(banner.contains("no answer within 1 s"), || {
                format!("the banner comes from the poll given up at its deadline: {banner:?}")
            })
            .await;
        chrome
            .check(banner.contains("Bands as of"), || {
                format!("the banner says when the bands are frozen: {banner:?}")
            })
            .await;
        let verdict = chrome.text("#verdict").await;
        chrome
            .check(verdict.contains("stale"), || {
                format!("a page that cannot be trusted never reads green: {verdict:?}")
            })
            .await;
        // Its panels say when their data is from; no age counts on from a clock without data,
        // and none jumps back when the next poll fails too.
        chrome.assert_frozen_panels().await;
        let before: String = chrome.text("main").await;
        chrome
            .wait_for(
                "another failed poll",
                &format!(
                    "const b = document.querySelector('#stale-banner');
                     return b && b.innerText !== {:?};",
                    chrome.text("#stale-banner").await
                ),
            )
            .await;
        let after: String = chrome.text("main").await;
        chrome
            .check(before == after, || {
                format!("a frozen page does not change between failed polls:\n{before}\n---\n{after}")
            })
            .await;
        // Past the crossing (8 s after the write, plus a poll), still hung: nothing turned STUCK.
        let crossing = written + chrono::Duration::seconds(8 + 2);
        while Utc::now() < crossing {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let frozen: Value = chrome
            .js(&format!(
                "const stuck = (() => {{ {stuck_badge} }})();
                 return [stuck, !!document.querySelector('#stale-banner'),
                         document.querySelector('#task-min-t_slow').innerText]"
            ))
            .await;
        chrome
            .check(frozen[0] == false && frozen[1] == true, || {
                format!("while the banner is up the task is not made STUCK by the clock: [stuck, banner, row] = {frozen}")
            })
            .await;
        chrome.screenshot("5a-hung-frozen").await;

        // The server answers again: the banner goes and the clock runs: now it is STUCK.
        proxy.hang(false);
        chrome
            .wait_for(
                "the banner to go and the task to be STUCK",
                &format!("if (document.querySelector('#stale-banner')) return false; {stuck_badge}"),
            )
            .await;
        chrome
            .check(!seen_fresh, || "the task was not STUCK before the hang".into())
            .await;
        chrome.screenshot("5b-recovered").await;

        // Away from the page: vega goes down, then the operator reloads.
        let mut later = fleet(Utc::now(), 40);
        let at = later.generated_at;
        if let Probe::Value(agents) = &mut later.agents {
            agents[1].up = false;
            agents[1].band = Band::Red;
            agents[1].status = Asc::DEPENDENCY_UNAVAILABLE;
            agents[1].reason = Some("down: connection refused".into());
        }
        // The log says what vega went down with then; the page says what is true now.
        later.transitions = vec![fleetdash_model::Transition {
            key: "agent:vega".into(),
            kind: "agent".into(),
            name: "vega".into(),
            from: Some(Band::Green),
            to: Band::Red,
            at,
            reason: Some("down: no answer within 3 s".into()),
        }];
        write_snapshot(&scratch, &later);
        chrome.open(&url).await;
        let since = chrome
            .wait_for(
                "'since you last looked'",
                "const s = document.querySelector('#since');
                 return s && document.querySelector('#needs') && s.innerText;",
            )
            .await;
        let since = since.as_str().unwrap_or_default().to_string();
        chrome
            .check(
                since.contains("agent vega turned red")
                    && since.contains("connection refused")
                    && !since.contains("no answer")
                    && since.contains("Nothing else changed")
                    && !since.contains("→")
                    && !since.contains("min"),
                || format!("the reload shows what changed, vega, in today's words, and nothing else: {since:?}"),
            )
            .await;
        // Its line leads to vega's row; vega's needs-you line is marked new; both are on the
        // first screen.
        let seen: Value = chrome
            .js("const since = document.querySelector('#since a');
                 const line = [...document.querySelectorAll('#needs li')].find(li => li.innerText.includes('vega'));
                 return {href: since.getAttribute('href'), new: !!line.querySelector('.new'),
                         marked: document.querySelectorAll('#needs .new').length,
                         bottom: Math.max(since.getBoundingClientRect().bottom, line.getBoundingClientRect().bottom),
                         viewport: window.innerHeight};")
            .await;
        chrome
            .check(
                seen["href"] == "#agent-vega"
                    && seen["new"] == true
                    && seen["marked"] == 1
                    && seen["bottom"].as_f64() <= seen["viewport"].as_f64(),
                || format!("vega: its change leads to its row, its needs-you line is marked new, on the first screen: {seen}"),
            )
            .await;
        chrome.assert_tap_targets("since you last looked").await;
        chrome.assert_no_horizontal_scroll().await;
        chrome.screenshot("5c-since-you-last-looked").await;
        // A tap on either line opens the row it leads to (each row closed before): vega's line
        // under "since you last looked", then the first needs-you line that leads elsewhere.
        for (link, what) in [
            ("document.querySelector('#since a')", "vega's line since the last look"),
            (
                "[...document.querySelectorAll('#needs li a')].find(a => a.getAttribute('href') !== '#agent-vega')",
                "a needs-you line",
            ),
        ] {
            let target: Value = chrome
                .js(&format!(
                    "const link = {link}, id = link.getAttribute('href');
                     const row = document.querySelector(id + ' details');
                     if (!row || row.open) return null;
                     link.click(); return id;"
                ))
                .await;
            let Some(id) = target.as_str().map(str::to_string) else {
                chrome
                    .check(false, || format!("{what}: no closed row to lead to"))
                    .await;
                continue;
            };
            chrome
                .wait_for(
                    &format!("the tap on {what} to open the row {id}"),
                    &format!(
                        "return document.querySelector('{id} details').open
                             && location.hash === '{id}';"
                    ),
                )
                .await;
        }

        // Reloaded once more, nothing changed since the look before: one line says so, and
        // vega is no longer new (Needs you still lists it).
        chrome.open(&url).await;
        let seen = chrome
            .wait_for(
                "'nothing changed' after another look",
                "const s = document.querySelector('#since');
                 if (!s || !document.querySelector('#needs')) return false;
                 const cs = getComputedStyle(s), line = parseFloat(cs.lineHeight);
                 const pad = parseFloat(cs.paddingTop) + parseFloat(cs.paddingBottom)
                     + parseFloat(cs.borderTopWidth) + parseFloat(cs.borderBottomWidth);
                 return {text: s.innerText, lines: (s.getBoundingClientRect().height - pad) / line,
                         needs: document.querySelector('#needs').innerText,
                         marked: document.querySelectorAll('#needs .new').length};",
            )
            .await;
        chrome
            .check(
                seen["text"].as_str().is_some_and(|t| t.contains("nothing changed") && !t.contains("vega"))
                    && seen["lines"].as_f64() < Some(1.5)
                    && seen["needs"].as_str().is_some_and(|t| t.contains("vega"))
                    && seen["marked"] == 0,
                || format!("a revisit with nothing changed is one line: {seen:#}"),
            )
            .await;
        chrome.screenshot("5d-nothing-changed").await;
        chrome.quit().await;
    });
    drop(proxy);
    eprintln!("scenario 5 took {:?}", started.elapsed());
}

/// A TCP proxy in front of the server that can hang: while hung it takes every byte and passes
/// none on, either way, so a request is accepted and never answered.
struct HangingProxy {
    addr: String,
    hung: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl HangingProxy {
    fn start(upstream: &str) -> HangingProxy {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, Ordering};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let hung = Arc::new(AtomicBool::new(false));
        let upstream = upstream.to_string();
        let flag = hung.clone();
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let Ok(server) = std::net::TcpStream::connect(&upstream) else {
                    continue;
                };
                for (mut from, mut to) in [
                    (client.try_clone().unwrap(), server.try_clone().unwrap()),
                    (server, client),
                ] {
                    let flag = flag.clone();
                    std::thread::spawn(move || {
                        use std::io::{Read, Write};
                        let mut buf = [0u8; 16 * 1024];
                        loop {
                            let n = match from.read(&mut buf) {
                                Ok(0) | Err(_) => break,
                                Ok(n) => n,
                            };
                            // Held while hung: taken, never passed on.
                            while flag.load(Ordering::SeqCst) {
                                std::thread::sleep(Duration::from_millis(20));
                            }
                            if to.write_all(&buf[..n]).is_err() {
                                break;
                            }
                        }
                        let _ = to.shutdown(std::net::Shutdown::Write);
                    });
                }
            }
        });
        HangingProxy { addr, hung }
    }

    fn hang(&self, hung: bool) {
        self.hung.store(hung, std::sync::atomic::Ordering::SeqCst);
    }
}

// ---------------------------------------------------------------------------------------------
// 6. Alerting on the page: a silenced red host, a failing alert channel
// ---------------------------------------------------------------------------------------------

/// A red host held back from paging by a silence ("disk swap") stays red, in needs-you and in
/// its row, marked "silenced until HH:MM (disk swap)"; a tunnel of it silenced for another
/// reason says its own; a failing ntfy channel is an amber needs-you line ("alerts: ntfy failing
/// since HH:MM: 503") leading to its row in the Systems panel's "alerts" group. Both lines are
/// on the first screen, whole, and nothing scrolls sideways.
#[test]
fn a_silenced_host_and_a_failing_alert_channel_are_shown_as_such() {
    let started = Instant::now();
    let scratch = Scratch::new();
    let config = scratch.config(&serve_section(&scratch));
    let server = Serve::start(&config);
    let now = Utc::now();
    let snapshot = alerting_snapshot(now);
    write_snapshot(&scratch, &snapshot);
    runtime().block_on(async {
        let chrome = Chrome::start("6-alerting").await;
        chrome.log_in().await;
        chrome.open(&server.url()).await;
        chrome
            .wait_for(
                "the hosts",
                "return document.querySelectorAll('#systems li.row').length >= 2",
            )
            .await;
        chrome.assert_phone_width().await;
        // The words are the model's, said in the browser's zone.
        let behind_min: i32 = chrome.js("return new Date().getTimezoneOffset()").await;
        let zone = FixedOffset::west_opt(behind_min * 60).unwrap();
        let host_hold = snapshot.alerts.held[0].describe(now, zone);
        let tunnel_hold = snapshot.alerts.held[1].describe(now, zone);
        let failing = snapshot.alerts.channels[0].describe(now, zone).unwrap();
        assert!(host_hold.starts_with("silenced until ") && host_hold.ends_with(" (disk swap)"));
        assert!(failing.starts_with("alerts: ntfy failing since ") && failing.contains(": 503"));

        // Needs-you: the held host's red line carries its mark; the channel's amber line says
        // it is failing. Each whole (not cut by an ellipsis) and on the first screen.
        let lines: Vec<Value> = chrome
            .js("window.scrollTo(0, 0);
                 return [...document.querySelectorAll('#needs li')].map(li => ({
                     band: li.className, text: li.innerText, href: li.querySelector('a').hash,
                     bottom: Math.ceil(li.getBoundingClientRect().bottom),
                     cut: li.scrollWidth > li.clientWidth + 0.5,
                 }))")
            .await;
        let line = |href: &str| lines.iter().find(|l| l["href"] == href);
        let banded = |l: &Value, band: &str| {
            l["band"]
                .as_str()
                .is_some_and(|c| c.split_whitespace().any(|c| c == band))
        };
        let host_line = line("#host-LAB");
        chrome
            .check(
                host_line.is_some_and(|l| {
                    l["band"] == "red" && l["text"].as_str().is_some_and(|t| t.contains(&host_hold))
                }),
                || format!("LAB's red needs-you line says {host_hold:?}: {lines:#?}"),
            )
            .await;
        // Issue 44: lyra, declared flaky, is still a red line, says so, and comes after LAB's
        // (the surprise first), though the agents come before the hosts.
        let declared = snapshot.alerts.held[2].describe(now, zone);
        assert!(declared.starts_with("declared flaky: tunnel drops at night (until "));
        let at = |href: &str| lines.iter().position(|l| l["href"] == href);
        chrome
            .check(
                line("#agent-lyra").is_some_and(|l| {
                    l["band"] == "red" && l["text"].as_str().is_some_and(|t| t.contains(&declared))
                }) && at("#agent-lyra") > at("#host-LAB"),
                || format!("lyra's red line says {declared:?}, after LAB's: {lines:#?}"),
            )
            .await;
        let lyra = chrome.row("#agents", "lyra").await;
        chrome
            .check(
                lyra.band() == "red" && lyra.text.contains(&declared),
                || format!("lyra's row is red and says {declared:?}: {lyra:#?}"),
            )
            .await;
        let channel_line = line("#alert-ntfy");
        chrome
            .check(
                channel_line.is_some_and(|l| {
                    banded(l, "amber") && l["text"].as_str().is_some_and(|t| t.contains(&failing))
                }),
                || format!("an amber needs-you line says {failing:?}: {lines:#?}"),
            )
            .await;
        for l in [host_line, channel_line].into_iter().flatten() {
            chrome
                .check(
                    l["bottom"].as_u64() <= Some(u64::from(PHONE.1)) && l["cut"] == false,
                    || format!("a needs-you line below the first screen or cut short: {l:#}"),
                )
                .await;
        }
        // The verdict counts the channel: red for the host, and the channel said in words.
        let verdict = chrome.text("#verdict").await;
        chrome
            .check(verdict.contains("1 alert channel failing"), || {
                format!("the verdict names the failing channel: {verdict:?}")
            })
            .await;

        // The host's row: still red, marked (visible while closed); its silenced tunnel says
        // its own hold behind the tap.
        let host = chrome.row("#systems", "LAB").await;
        chrome
            .check(
                host.band() == "red" && host.text.contains(&host_hold),
                || format!("LAB's row is red and says {host_hold:?}: {host:#?}"),
            )
            .await;
        chrome.open_row("host-LAB").await;
        let host = chrome.text("#host-LAB").await;
        chrome
            .check(host.contains(&tunnel_hold), || {
                format!("LAB's tunnel heart says {tunnel_hold:?}: {host:?}")
            })
            .await;
        // The alerts group: the failing channel amber with its reason, the dead man's switch
        // green and delivering.
        let ntfy = chrome.row("#systems", "ntfy").await;
        let deadman = chrome.row("#systems", "deadman").await;
        chrome
            .check(ntfy.id == "alert-ntfy" && ntfy.band() == "amber", || {
                format!("the ntfy row: {ntfy:#?}")
            })
            .await;
        chrome
            .check(
                deadman.band() == "green" && deadman.text.contains("delivering"),
                || format!("the dead man's switch row: {deadman:#?}"),
            )
            .await;
        chrome.open_row("alert-ntfy").await;
        let ntfy = chrome.text("#alert-ntfy").await;
        chrome
            .check(
                ntfy.contains("waiting") && ntfy.contains('3') && ntfy.contains("503"),
                || format!("the ntfy row says how many alerts wait: {ntfy:?}"),
            )
            .await;
        // A state file set aside: an amber line, said in the verdict, and a row of
        // "fleetdash's files" that names the copy behind the tap.
        let aside = &snapshot.set_aside[0].aside;
        let file_line = line("#file-history_json");
        chrome
            .check(
                file_line.is_some_and(|l| {
                    banded(l, "amber")
                        && l["text"]
                            .as_str()
                            .is_some_and(|t| t.contains("state file history.json"))
                }),
                || format!("an amber needs-you line says the history was set aside: {lines:#?}"),
            )
            .await;
        chrome
            .check(file_line.is_some_and(|l| l["cut"] == false), || {
                format!("the state file's needs-you line is whole: {file_line:#?}")
            })
            .await;
        chrome
            .check(verdict.contains("1 state file set aside"), || {
                format!("the verdict names the state file set aside: {verdict:?}")
            })
            .await;
        let file = chrome.row("#systems", "history.json").await;
        chrome
            .check(
                file.id == "file-history_json" && file.band() == "amber",
                || format!("the history.json row: {file:#?}"),
            )
            .await;
        chrome.open_row("file-history_json").await;
        let file = chrome.text("#file-history_json").await;
        chrome
            .check(file.contains(aside.as_str()), || {
                format!("the history.json row names its copy {aside:?}: {file:?}")
            })
            .await;
        chrome.assert_no_horizontal_scroll().await;
        chrome.screenshot("6-alerting").await;
        chrome.quit().await;
    });
    eprintln!("scenario 6 took {:?}", started.elapsed());
}

/// fleetdash's own blind spot (issue 24): 10 of 11 agents fail at once. The verdict and the
/// first needs-you line say so ("fleetdash cannot reach the fleet: 10 of 11 agents fail at
/// once: this host's network?") above the ten agents' own lines, on the first screen; an agent
/// acknowledged from the phone says "acked HH:MM" on its line, still red.
#[test]
fn fleetdashs_blind_spot_leads_the_page_and_an_ack_is_said() {
    use fleetdash_model::alerts::{Acked, Reach, key};
    let scratch = Scratch::new();
    let config = scratch.config(&serve_section(&scratch));
    let server = Serve::start(&config);
    let now = Utc::now();
    let mut snapshot = Snapshot::empty(now, support::fleet_rules());
    snapshot.stale = false;
    snapshot.sections.agents.configured = true;
    snapshot.sections.agents.checked_at = Some(now);
    let names = [
        "min", "sol", "vega", "orin", "kai", "lyra", "tam", "mira", "juno", "rhea", "nyx",
    ];
    let agents = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let mut a = green_agent(name, now);
            if i > 0 {
                a.up = false;
                a.band = Band::Red;
                a.status = Asc::DEPENDENCY_UNAVAILABLE;
                a.reason = Some("down: connection refused".into());
            }
            a
        })
        .collect();
    snapshot.agents = Probe::Value(agents);
    snapshot.alerts.configured = true;
    snapshot.alerts.reach = Some(Reach {
        agents_failed: 10,
        agents: 11,
        hosts_failed: 0,
        hosts: 0,
        blind: true,
    });
    snapshot.alerts.acked = vec![Acked {
        key: key::agent("vega"),
        at: now - chrono::Duration::minutes(3),
        via: "from the phone".into(),
        checked_at: now,
    }];
    write_snapshot(&scratch, &snapshot);
    runtime().block_on(async {
        let chrome = Chrome::start("6b-blind-spot").await;
        chrome.log_in().await;
        chrome.open(&server.url()).await;
        chrome
            .wait_for(
                "the needs-you lines",
                "return document.querySelectorAll('#needs li').length >= 2",
            )
            .await;
        chrome.assert_phone_width().await;
        let behind_min: i32 = chrome.js("return new Date().getTimezoneOffset()").await;
        let zone = FixedOffset::west_opt(behind_min * 60).unwrap();
        let acked = snapshot.alerts.acked[0].describe(now, zone);
        let verdict = chrome.text("#verdict").await;
        chrome
            .check(verdict.contains("fleetdash cannot reach the fleet"), || {
                format!("the verdict leads with the blind spot: {verdict:?}")
            })
            .await;
        let lines: Vec<Value> = chrome
            .js("window.scrollTo(0, 0);
                 return [...document.querySelectorAll('#needs li')].map(li => ({
                     band: li.className, text: li.innerText, href: li.querySelector('a').hash,
                     bottom: Math.ceil(li.getBoundingClientRect().bottom),
                 }))")
            .await;
        let first = &lines[0];
        chrome
            .check(
                first["text"].as_str().is_some_and(|t| {
                    t.contains("fleetdash cannot reach the fleet")
                        && t.contains("10 of 11 agents fail at once: this host's network?")
                }) && first["band"]
                    .as_str()
                    .is_some_and(|c| c.split_whitespace().any(|c| c == "red"))
                    && first["bottom"].as_u64() <= Some(u64::from(PHONE.1)),
                || format!("the first needs-you line is the blind spot, on the first screen: {lines:#?}"),
            )
            .await;
        let vega = lines.iter().find(|l| l["href"] == "#agent-vega");
        chrome
            .check(
                vega.is_some_and(|l| {
                    l["text"].as_str().is_some_and(|t| t.contains(&acked))
                        && l["band"]
                            .as_str()
                            .is_some_and(|c| c.split_whitespace().any(|c| c == "red"))
                }),
                || format!("vega's line is still red and says {acked:?}: {lines:#?}"),
            )
            .await;
        chrome
            .check(acked.starts_with("acked "), || acked.clone())
            .await;
        chrome.assert_no_horizontal_scroll().await;
        chrome.screenshot("6b-blind-spot").await;
        chrome.quit().await;
    });
}

/// A fresh snapshot with alerting configured: hosts LAB (red: a failed service and a dead
/// tunnel; the host silenced for a disk swap, the tunnel for a rebuild) and hub (green); three
/// agents, one of them down and not silenced; ntfy failing for 12 min with 503 and 3 alerts
/// waiting, the dead man's switch delivering; the history file set aside as corrupt.
fn alerting_snapshot(now: DateTime<Utc>) -> Snapshot {
    use fleetdash_model::alerts::{ChannelState, Held, key};
    let mut s = Snapshot::empty(now, support::fleet_rules());
    s.stale = false;
    s.sections.agents.configured = true;
    s.sections.agents.checked_at = Some(now);
    s.sections.systems.configured = true;
    s.sections.systems.checked_at = Some(now);
    let mut down = green_agent("lyra", now);
    down.up = false;
    down.band = Band::Red;
    down.status = Asc::DEPENDENCY_UNAVAILABLE;
    down.reason = Some("down: connection refused".into());
    down.stale = true;
    s.agents = Probe::Value(vec![green_agent("min", now), green_agent("sol", now), down]);
    let check = |name: &str, ok: bool, reason: Option<&str>| NamedCheck {
        name: name.into(),
        ok: Probe::Value(ok),
        reason: reason.map(Into::into),
        uptime_24h_pct: Some(if ok { 100.0 } else { 80.0 }),
        checked_at: now,
        stale: false,
    };
    let host = |name: &str, band: Band| System {
        host: name.into(),
        source: "node_exporter".into(),
        ram_used_gb: Probe::Value(3.2),
        ram_total_gb: Probe::Value(16.0),
        disk_free_gb: Probe::Value(40.0),
        services: vec![check("hermes-gateway", band == Band::Green, Some("failed"))],
        tunnels: vec![check(
            "heart",
            band == Band::Green,
            Some("connection refused"),
        )],
        crons: Vec::new(),
        vault_parity: Probe::Unknown,
        vault_reason: None,
        band,
        status: if band == Band::Green {
            Asc::SUCCESS
        } else {
            Asc::DEPENDENCY_UNAVAILABLE
        },
        reason: (band != Band::Green).then(|| "service hermes-gateway: failed".into()),
        history: None,
        checked_at: now,
        stale: false,
    };
    s.systems = Probe::Value(vec![host("LAB", Band::Red), host("hub", Band::Green)]);
    let minutes = chrono::Duration::minutes;
    s.alerts.configured = true;
    s.alerts.held = vec![
        Held {
            key: key::host("LAB"),
            until: Some(now + minutes(118)),
            reason: "disk swap".into(),
            flaky: false,
            checked_at: now,
        },
        Held {
            key: key::host_check("LAB", "tunnel", "heart"),
            until: Some(now + minutes(58)),
            reason: "tunnel rebuild".into(),
            flaky: false,
            checked_at: now,
        },
        // Issue 44: lyra is declared flaky until a day a month on, held as the config makes it.
        fleetdash::config::Flaky {
            reason: "tunnel drops at night".into(),
            until: Some(now.date_naive() + chrono::Days::new(30)),
        }
        .held(key::agent("lyra"), now),
    ];
    s.alerts.channels = vec![
        ChannelState {
            name: "ntfy".into(),
            failing_since: Some(now - minutes(12)),
            reason: Some("503".into()),
            pending: 3,
            checked_at: now,
        },
        ChannelState {
            name: "deadman".into(),
            failing_since: None,
            reason: None,
            pending: 0,
            checked_at: now,
        },
    ];
    // A state file fleetdash moved aside as corrupt 20 min ago.
    let moved = now - chrono::Duration::minutes(20);
    s.set_aside = vec![fleetdash_model::SetAside {
        file: "history.json".into(),
        aside: format!("history.json.corrupt-{}", moved.format("%Y%m%dT%H%M%SZ")),
        at: Some(moved),
        checked_at: now,
    }];
    s
}

// ---------------------------------------------------------------------------------------------
// 7. A 10,000-card board, as the collector lists it; the page updates by key
// ---------------------------------------------------------------------------------------------

/// A board of 10,000 cards (nearly all done; three blocked, one crashed) collected by the real
/// `fleetdash collect`, so status.json lists them under the rules' cap. On a phone's first
/// screen: the verdict, counting every card, and the Board note saying what is not listed; no
/// sideways scroll. The time from navigation to the rendered verdict is printed, not asserted
/// (the page_verdict bench measures it).
///
/// Then the page updates by key: over clock ticks and over a new snapshot in which one listed
/// card's title changed, the other rows keep their DOM nodes (tagged with a JS property before)
/// and the changed row's node is replaced.
#[test]
fn a_10000_card_board_reads_on_a_phone_and_the_page_updates_by_key() {
    const CARDS: usize = 10_000;
    let started = Instant::now();
    let scratch = Scratch::new();
    let db = scratch.path().join("lab.db");
    let k = kanban::Kanban::create(&db);
    kanban::populate_mature(&k, CARDS);
    let config = scratch.config(&format!(
        "[[boards]]\nname = \"lab\"\nplane = \"LAB\"\ndb = {:?}\n\n{}",
        db.display().to_string(),
        serve_section(&scratch)
    ));
    support::assert_success(&scratch.collect(&config));
    let snapshot = scratch.snapshot();
    let bytes = std::fs::metadata(scratch.status_path()).unwrap().len();
    let board = snapshot
        .tasks
        .board
        .value()
        .expect("the board was read")
        .clone();
    assert_eq!(board.sources[0].cards, Probe::Value(CARDS as u32));
    assert!(
        board.cards.len() < 100 && board.sources[0].left_out() > 9_000,
        "status.json lists {} cards",
        board.cards.len()
    );
    let verdict = snapshot.verdict();
    assert_eq!(verdict.red + verdict.amber + verdict.green, CARDS);
    assert_eq!((verdict.red, verdict.amber), (1, 3), "{verdict:?}");
    // The words the page must show, from the model (its zone does not matter here: no time).
    let glance = Glance::new(&snapshot, Utc::now(), FixedOffset::east_opt(0).unwrap());
    let note = chrome::board_note(&snapshot);
    assert!(note.contains("and 9,9"), "{note}");
    // A listed green todo card far from the turn of an hour of its age (its row's words stay
    // the same while the test runs), and another one whose title the test will change.
    let mut quiet = board
        .cards
        .iter()
        .filter(|c| c.status == "todo" && c.band == Band::Green)
        .filter(|c| (900..2700).contains(&(c.age_s % 3600)));
    let (kept, renamed) = (quiet.next().unwrap().clone(), quiet.next().unwrap().clone());
    let anchor =
        |c: &Card| fleetdash_model::glance::anchor("card", &format!("{}-{}", c.board, c.id));
    let (kept_id, renamed_id) = (anchor(&kept), anchor(&renamed));

    let server = Serve::start(&config);
    runtime().block_on(async {
        let chrome = Chrome::start("7-big-board").await;
        // Collected again just before the page opens: its Board heading then counts seconds
        // ("checked 4 s ago"), the clock the test watches tick. Nothing else changes.
        support::assert_success(&scratch.collect(&config));
        let ids = |b: &Board| b.cards.iter().map(|c| c.id.clone()).collect::<Vec<_>>();
        assert_eq!(
            scratch.snapshot().tasks.board.value().map(ids),
            Some(ids(&board)),
            "the same cards listed"
        );
        chrome.log_in().await;
        // When the verdict and the Board note first appear, by the page's own clock.
        chrome.clock_first_render().await;
        chrome.open(&server.url()).await;
        chrome
            .wait_for("the Board note", "return !!document.querySelector('#board p.note')")
            .await;
        chrome.assert_phone_width().await;
        let timing = chrome.first_render().await;
        eprintln!(
            "7-big-board: status.json of {CARDS} cards is {:.1} KB; verdict rendered {:.0} ms \
             after navigation start, the Board note {:.0} ms (load event {:.0} ms)",
            bytes as f64 / 1024.0,
            timing.verdict.unwrap_or(f64::NAN),
            timing.note.unwrap_or(f64::NAN),
            timing.loaded.unwrap_or(f64::NAN),
        );

        // The first screen: the verdict with every card counted, and what is not listed.
        let seen: Value = chrome
            .js("window.scrollTo(0, 0);
                 const at = s => { const e = document.querySelector(s);
                     return e && {text: e.innerText, bottom: Math.ceil(e.getBoundingClientRect().bottom)}; };
                 return {verdict: at('#verdict'), counts: at('.counts'), note: at('#board p.note'),
                         viewport: window.innerHeight};")
            .await;
        let on_screen = |what: &str| {
            seen[what]["bottom"].as_u64().is_some_and(|b| b <= seen["viewport"].as_u64().unwrap())
        };
        chrome
            .check(
                on_screen("verdict") && on_screen("counts") && on_screen("note"),
                || format!("the verdict and the note on the first screen: {seen:#}"),
            )
            .await;
        let (counts, shown_note) = (
            seen["counts"]["text"].as_str().unwrap_or_default(),
            seen["note"]["text"].as_str().unwrap_or_default(),
        );
        chrome
            .check(counts.contains(&verdict.sentence()), || {
                format!("the counts {counts:?} are the snapshot's {:?}", verdict.sentence())
            })
            .await;
        chrome
            .check(shown_note == note, || {
                format!("the Board note reads {shown_note:?}, the glance says {note:?}")
            })
            .await;
        let verdict_text = seen["verdict"]["text"].as_str().unwrap_or_default();
        chrome
            .check(verdict_text.contains(&glance.headline), || {
                format!("the verdict {verdict_text:?} says {:?}", glance.headline)
            })
            .await;
        chrome.assert_no_horizontal_scroll().await;
        chrome.screenshot("7-big-board").await;

        // Keyed updates. Tag the nodes, and remember the clock's words in the Board heading.
        let tag = format!(
            "for (const [id, tag] of [['{kept_id}', 'kept'], ['{renamed_id}', 'renamed'],
                                     ['board', 'section']])
                 document.getElementById(id).__fleetdashTag = tag;
             document.querySelector('#needs li').__fleetdashTag = 'need';
             return document.querySelector('#board h2').innerText;"
        );
        let mut heading: String = chrome.js(&tag).await;
        let tags = format!(
            "return [document.getElementById('{kept_id}'), document.getElementById('{renamed_id}'),
                     document.getElementById('board'), document.querySelector('#needs li')]
                 .map(e => e && e.__fleetdashTag || null);"
        );
        // Two ticks of the clock: the Board heading's "checked N s ago" counts up (the glance
        // is computed again each time), and no row is redrawn.
        for _ in 0..2 {
            heading = chrome
                .wait_for(
                    "the clock to tick",
                    &format!(
                        "const h = document.querySelector('#board h2').innerText;
                         return h !== {heading:?} && h;"
                    ),
                )
                .await
                .as_str()
                .unwrap_or_default()
                .to_string();
        }
        let after_ticks: Value = chrome.js(&tags).await;
        chrome
            .check(
                after_ticks == json!(["kept", "renamed", "section", "need"]),
                || format!("rows redrawn by the clock alone: {after_ticks}"),
            )
            .await;

        // A new snapshot in which one listed card's title changed.
        k.conn
            .execute(
                "UPDATE tasks SET title = ?1 WHERE id = ?2",
                rusqlite::params!["Renamed while the page was open", renamed.id],
            )
            .unwrap();
        support::assert_success(&scratch.collect(&config));
        chrome.focus().await;
        chrome
            .wait_for(
                "the renamed card",
                &format!(
                    "const li = document.getElementById('{renamed_id}');
                     return !!li && li.innerText.includes('Renamed while the page was open');"
                ),
            )
            .await;
        let after_update: Value = chrome.js(&tags).await;
        chrome
            .check(
                after_update == json!(["kept", null, "section", "need"]),
                || {
                    format!(
                        "after the new snapshot, [unchanged row, changed row, section, needs line] \
                         carry {after_update}: the unchanged ones must keep their nodes, the \
                         changed row a new one"
                    )
                },
            )
            .await;
        chrome.assert_no_horizontal_scroll().await;
        chrome.quit().await;
    });
    eprintln!("scenario 7 took {:?}", started.elapsed());
}

// ---------------------------------------------------------------------------------------------
// 8. The page under its Content-Security-Policy (issue 32)
// ---------------------------------------------------------------------------------------------

/// The page, served with its policy, starts its wasm, fetches the snapshot and draws it with no
/// violation; and the watch on violations every scenario ends with does see one: an image from
/// another origin, which the policy refuses, is reported.
#[test]
fn the_page_runs_under_its_content_security_policy() {
    let scratch = Scratch::new();
    let config = scratch.config(&serve_section(&scratch));
    let server = Serve::start(&config);
    let now = Utc::now();
    write_snapshot(&scratch, &fixture_snapshot(now));
    runtime().block_on(async {
        let chrome = Chrome::start("8-csp").await;
        chrome.log_in().await;
        chrome.open(&server.url()).await;
        let policy = chrome
            .wait_for(
                "the page's policy",
                "return fetch('/', {cache: 'no-store'})
                     .then(r => r.headers.get('content-security-policy') || 'none');",
            )
            .await;
        let policy = policy.as_str().unwrap_or_default().to_string();
        chrome
            .check(
                policy.contains("'wasm-unsafe-eval'") && policy.contains("frame-ancestors 'none'"),
                || format!("the page must be served with its policy, got {policy:?}"),
            )
            .await;
        // The wasm ran: it drew the verdict from the snapshot it fetched.
        chrome
            .wait_for(
                "the verdict, drawn by the wasm",
                "const v = document.querySelector('#verdict');
                 return v && v.innerText.trim().length > 0;",
            )
            .await;
        chrome.screenshot("8-under-csp").await;
        // Issue 35: Chromium asks for brotli (it does on localhost as over HTTPS) and ran the
        // wasm it decoded from the build's .br: the bytes on the wire were that file's.
        let wasm_file = std::fs::read_dir(dist_dir())
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.to_string_lossy().ends_with("_bg.wasm"))
            .unwrap();
        let br_len = std::fs::metadata(format!("{}.br", wasm_file.display()))
            .unwrap()
            .len();
        let raw_len = std::fs::metadata(&wasm_file).unwrap().len();
        let sizes = chrome
            .wait_for(
                "the wasm's transfer sizes",
                "const e = performance.getEntriesByType('resource')
                     .find(e => e.name.endsWith('_bg.wasm'));
                 return e && e.responseEnd > 0 && [e.encodedBodySize, e.decodedBodySize];",
            )
            .await;
        chrome
            .check(sizes == json!([br_len, raw_len]), || {
                format!(
                    "the wasm should come as its .br ({br_len} B, {raw_len} B decoded): {sizes}"
                )
            })
            .await;
        let before = chrome.csp_violations().await;
        chrome
            .check(before == Some(Vec::new()), || {
                format!("violations while the page started: {before:?}")
            })
            .await;
        // The watch sees what the policy refuses.
        let _: Value = chrome
            .js("new Image().src = 'http://127.0.0.2:9/provoked.png'; return null;")
            .await;
        let seen = chrome
            .wait_for(
                "the provoked violation",
                "const s = JSON.parse(sessionStorage.getItem('fleetdash-csp-violations') || '[]');
                 return s.length > 0 && s;",
            )
            .await;
        chrome
            .check(
                seen.to_string().contains("img-src") && seen.to_string().contains("provoked.png"),
                || format!("the provoked violation should be seen as img-src: {seen}"),
            )
            .await;
        let _: Value = chrome
            .js("sessionStorage.removeItem('fleetdash-csp-violations'); return null;")
            .await;
        chrome.quit().await;
    });
}

// ---------------------------------------------------------------------------------------------
// 9. Installable as a phone app (issue 46)
// ---------------------------------------------------------------------------------------------

/// The page passes Chromium's installability check, behind basic auth as a person logs in: the
/// browser's own credentials (typed once, kept in its auth cache), not the DevTools header the
/// other scenarios send on every request, so a fetch without credentials is refused as it would
/// be on a phone. The manifest is fetched with them (the link says use-credentials: without,
/// its 401 would leave the page uninstallable), parses without errors, and names icons the
/// browser gets (200, PNGs of the sizes said); the toolbar's colour is the page's background in
/// both schemes.
#[test]
fn the_page_is_installable_behind_its_password() {
    let scratch = Scratch::new();
    let config = scratch.config(&serve_section(&scratch));
    let server = Serve::start(&config);
    write_snapshot(&scratch, &fixture_snapshot(Utc::now()));
    runtime().block_on(async {
        let chrome = Chrome::start("9-installable").await;
        // Credentials in a URL break the wasm's fetch (the document's URL would carry them), so
        // they log in on another path first: Chromium keeps them for the realm and answers the
        // page's 401s with them, for every request whose credentials mode lets it.
        let password = PASSWORD.replace(' ', "%20");
        chrome
            .open(&format!(
                "http://{USER}:{password}@{}/api/status.json",
                server.addr
            ))
            .await;
        chrome.open(&server.url()).await;
        chrome
            .wait_for(
                "the verdict, drawn by the wasm, and the load event",
                "const v = document.querySelector('#verdict');
                 const nav = performance.getEntriesByType('navigation')[0];
                 return v && v.innerText.trim().length > 0 && nav && nav.loadEventEnd > 0;",
            )
            .await;
        let link: Value = chrome
            .js("const l = document.querySelector('link[rel=manifest]');
                 return l && [l.getAttribute('href'), l.crossOrigin];")
            .await;
        chrome
            .check(
                link == json!(["manifest.webmanifest", "use-credentials"]),
                || format!("the manifest's link must send the credentials: {link}"),
            )
            .await;
        // Chromium judges installability once it has fetched the manifest and an icon itself:
        // asked again until it answers with no error (or its last errors, after PATIENCE).
        let deadline = Instant::now() + PATIENCE;
        let errors = loop {
            let answer = chrome.cdp("Page.getInstallabilityErrors", json!({})).await;
            let errors = answer["installabilityErrors"].clone();
            if errors == json!([]) || Instant::now() > deadline {
                break errors;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        chrome
            .check(errors == json!([]), || {
                format!("Chromium finds the page not installable: {errors}")
            })
            .await;
        let manifest = chrome.cdp("Page.getAppManifest", json!({})).await;
        let parsed: Value =
            serde_json::from_str(manifest["data"].as_str().unwrap_or_default()).unwrap_or_default();
        chrome
            .check(
                manifest["errors"] == json!([])
                    && manifest["url"]
                        .as_str()
                        .is_some_and(|u| u.ends_with("/manifest.webmanifest"))
                    && parsed["display"] == "standalone"
                    && parsed["start_url"] == "./"
                    && parsed["scope"] == "./",
                || format!("the manifest as Chromium read it: {manifest:#}"),
            )
            .await;
        // What each fetch gets: the manifest without credentials is refused (why the link
        // says use-credentials), with them it and every icon it names come, PNGs of the sizes
        // it says (decoded: naturalWidth x naturalHeight).
        let fetched: Value = chrome
            .js("const get = (u, c) => fetch(u, {credentials: c, cache: 'no-store'});
                 const size = u => new Promise(done => { const i = new Image();
                     i.onload = () => done(i.naturalWidth + 'x' + i.naturalHeight);
                     i.onerror = () => done('undecodable'); i.src = u; });
                 return (async () => {
                     const bare = await get('manifest.webmanifest', 'omit');
                     const m = await get('manifest.webmanifest', 'include');
                     const icons = [];
                     for (const i of (await m.json()).icons) {
                         const r = await get(i.src, 'include');
                         icons.push({src: i.src, said: i.sizes, purpose: i.purpose, status: r.status,
                                     type: r.headers.get('content-type'), size: await size(i.src)});
                     }
                     return {bare: bare.status, manifest: m.status,
                             type: m.headers.get('content-type'), icons};
                 })();")
            .await;
        let icons = fetched["icons"].as_array().cloned().unwrap_or_default();
        chrome
            .check(
                fetched["bare"] == 401
                    && fetched["manifest"] == 200
                    && fetched["type"] == "application/manifest+json"
                    && icons.len() == 3
                    && icons.iter().all(|i| {
                        i["status"] == 200 && i["type"] == "image/png" && i["size"] == i["said"]
                    })
                    && icons.iter().any(|i| i["purpose"] == "maskable"),
                || format!("the manifest and its icons as the page fetches them: {fetched:#}"),
            )
            .await;
        // The toolbar's colour: the first theme-color whose media matches is the page's
        // background (style.css's --bg), in light and in dark; the manifest's, the light one.
        for scheme in ["light", "dark"] {
            chrome.colour_scheme(scheme).await;
            let colours: Value = chrome
                .js("const meta = [...document.querySelectorAll('meta[name=theme-color]')]
                         .find(m => !m.media || matchMedia(m.media).matches);
                     return [meta && meta.content,
                             getComputedStyle(document.documentElement).getPropertyValue('--bg').trim()];")
                .await;
            chrome
                .check(colours[0].is_string() && colours[0] == colours[1], || {
                    format!("in {scheme}, theme-color and --bg: {colours}")
                })
                .await;
            if scheme == "light" {
                chrome
                    .check(
                        parsed["theme_color"] == colours[1]
                            && parsed["background_color"] == colours[1],
                        || format!("the manifest's colours are not the light --bg: {parsed}"),
                    )
                    .await;
            }
        }
        chrome.colour_scheme("light").await;
        chrome.screenshot("9-installable").await;
        chrome.quit().await;
    });
}

// ---------------------------------------------------------------------------------------------
// Harness: the page's build, the `[serve]` section, the scenarios' Chrome (chromedriver,
// Chromium and `fleetdash serve` themselves: support/chrome.rs)
// ---------------------------------------------------------------------------------------------

/// The built page; the test cannot run without it.
fn dist_dir() -> PathBuf {
    let dist = repo_root().join("frontend/dist");
    let built = std::fs::read_dir(&dist)
        .map(|entries| {
            entries
                .flatten()
                .any(|e| e.file_name().to_string_lossy().ends_with("_bg.wasm"))
        })
        .unwrap_or(false);
    assert!(
        built && dist.join("index.html").is_file(),
        "{} holds no built page: run scripts/build-frontend first (scripts/test does)",
        dist.display()
    );
    dist
}

/// The `[serve]` section: an htpasswd in the scratch dir, the built page.
fn serve_section(scratch: &Scratch) -> String {
    chrome::write_htpasswd(scratch.path(), USER, PASSWORD);
    format!(
        "[serve]\nhtpasswd = \"htpasswd\"\ndist_dir = {:?}\n",
        dist_dir().display().to_string()
    )
}

/// Writes `status.json` the way the collector does: whole, by rename.
fn write_snapshot(scratch: &Scratch, snapshot: &Snapshot) {
    let path = scratch.status_path();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let tmp = path.with_extension("tmp-test");
    std::fs::write(&tmp, serde_json::to_vec_pretty(snapshot).unwrap()).unwrap();
    std::fs::rename(&tmp, &path).unwrap();
}

/// One `li.row` as a person sees it.
#[derive(Debug, Deserialize)]
struct Row {
    /// The row's element id ("agent-lyra").
    id: String,
    class: String,
    text: String,
}

impl Row {
    fn band(&self) -> &str {
        ["red", "amber", "green"]
            .into_iter()
            .find(|b| self.class.split_whitespace().any(|c| c == *b))
            .unwrap_or("none")
    }
}

/// One red needs-you line: what it names and where it ends on the first screen.
#[derive(Debug, Deserialize)]
struct NeedLine {
    what: String,
    bottom: u64,
    /// The row (or section) it leads to.
    anchor: String,
}

#[derive(Debug, Deserialize)]
struct FirstScreen {
    red: Vec<NeedLine>,
    /// The ids of the red rows.
    red_rows: Vec<String>,
    viewport: u64,
    height: u64,
}

/// The shared phone-sized Chromium ([`chrome::Browser`], which it derefs to), with what a
/// scenario adds: its name for screenshots, waits and checks that fail with a picture.
struct Chrome {
    browser: chrome::Browser,
    scenario: &'static str,
}

impl std::ops::Deref for Chrome {
    type Target = chrome::Browser;

    fn deref(&self) -> &chrome::Browser {
        &self.browser
    }
}

fn screenshot_dir() -> PathBuf {
    // CARGO_TARGET_TMPDIR is <target>/tmp: the folder sits beside it.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("browser-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

impl Chrome {
    async fn start(scenario: &'static str) -> Chrome {
        let started = Instant::now();
        // A failure picture from an earlier run would mislead.
        let _ = std::fs::remove_file(screenshot_dir().join(format!("{scenario}-FAILED.png")));
        let browser = chrome::Browser::start().await;
        eprintln!("{scenario}: Chromium up in {:?}", started.elapsed());
        // Every Content-Security-Policy violation of every document the scenario opens, kept
        // in the tab's sessionStorage (it outlives a reload) for `quit` to fail on (issue 32).
        browser
            .cdp(
                "Page.addScriptToEvaluateOnNewDocument",
                json!({"source": CSP_VIOLATIONS_LISTENER}),
            )
            .await;
        Chrome { browser, scenario }
    }

    /// The CSP violations seen so far in this tab, each as the browser's console names it
    /// (directive, what was blocked, where); `None` when the open document cannot say (a
    /// browser error page has no storage).
    async fn csp_violations(&self) -> Option<Vec<String>> {
        self.js(
            "try { return JSON.parse(sessionStorage.getItem('fleetdash-csp-violations') || '[]'); }
             catch (e) { return null; }",
        )
        .await
    }

    /// From now on every request of the page carries the basic-auth header.
    async fn log_in(&self) {
        self.log_in_as(USER, PASSWORD).await;
    }

    /// Without credentials the server answers 401 and no dashboard appears. (Headless Chromium
    /// has no login prompt: it shows its own error page for the refused navigation.)
    async fn refused_without_credentials(&self, url: &str) {
        self.open(url).await;
        let seen: Value = self
            .js("return {status: performance.getEntriesByType('navigation').map(e => e.responseStatus),
                         dashboard: !!document.querySelector('#verdict, #agents, #boot'),
                         html: document.documentElement.outerHTML}")
            .await;
        self.check(
            seen["status"] == json!([401]) && seen["dashboard"] == false,
            || format!("without credentials the page must be refused with a 401: {seen:#}"),
        )
        .await;
    }

    /// Polls `script` until it returns something truthy; fails with a screenshot after
    /// [`PATIENCE`].
    async fn wait_for(&self, what: &str, script: &str) -> Value {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let value: Value = self.js(script).await;
            let truthy = match &value {
                Value::Null | Value::Bool(false) => false,
                Value::String(s) => !s.is_empty(),
                Value::Number(n) => n.as_f64() != Some(0.0),
                _ => true,
            };
            if truthy {
                return value;
            }
            if Instant::now() > deadline {
                self.fail(&format!("waited {PATIENCE:?} for {what} in vain"))
                    .await;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The `innerText` of the element at `selector` (which must exist).
    async fn text(&self, selector: &str) -> String {
        let script = format!(
            "const e = document.querySelector({selector:?}); return e ? e.innerText : null"
        );
        match self.js::<Option<String>>(&script).await {
            Some(text) => text,
            None => self.fail(&format!("no element {selector}")).await,
        }
    }

    /// The `li.row`s of a panel, in page order.
    async fn rows(&self, panel: &str) -> Vec<Row> {
        self.js(&format!(
            "return [...document.querySelectorAll('{panel} li.row')].map(li =>
                 ({{id: li.id, class: li.className, text: li.innerText}}))"
        ))
        .await
    }

    /// The row whose element id is `anchor`.
    async fn row_at(&self, anchor: &str) -> Row {
        let rows = self.rows("main").await;
        match rows.into_iter().find(|r| r.id == anchor) {
            Some(row) => row,
            None => self.fail(&format!("no row #{anchor}")).await,
        }
    }

    /// The row of `panel` whose text names `name`.
    async fn row(&self, panel: &str, name: &str) -> Row {
        let rows = self.rows(panel).await;
        match rows.into_iter().find(|r| r.text.contains(name)) {
            Some(row) => row,
            None => self.fail(&format!("no row for {name} in {panel}")).await,
        }
    }

    async fn assert_phone_width(&self) {
        let width: u64 = self.js("return document.documentElement.clientWidth").await;
        self.check(width == u64::from(PHONE.0), || {
            format!("the page is {width} px wide, not a phone's {} px", PHONE.0)
        })
        .await;
    }

    async fn assert_panels_visible(&self) {
        for (id, title) in [
            ("agents", "Agents"),
            ("live", "Live tasks"),
            ("board", "Board"),
            ("systems", "Systems"),
            ("backups", "Backups"),
        ] {
            let visible: bool = self
                .js(&format!(
                    "const h = document.querySelector('#{id} h2'); if (!h) return false;
                     const r = h.getBoundingClientRect(), st = getComputedStyle(h);
                     return r.width > 0 && r.height > 0 && st.visibility !== 'hidden'
                         && st.display !== 'none' && h.innerText.startsWith('{title}');"
                ))
                .await;
            self.check(visible, || {
                format!("the {title} panel's heading is not visible")
            })
            .await;
        }
    }

    /// Nothing wider than the phone: no sideways scrolling.
    async fn assert_no_horizontal_scroll(&self) {
        let seen: Value = self
            .js("const d = document.documentElement, w = d.clientWidth;
                 const wide = [...document.querySelectorAll('body *')]
                     .filter(e => e.getBoundingClientRect().right > w + 0.5)
                     .slice(0, 5).map(e => e.tagName + '.' + e.className + ': ' + (e.innerText || '').slice(0, 60));
                 return {scroll: d.scrollWidth, client: w, wide};")
            .await;
        self.check(seen["scroll"].as_u64() <= seen["client"].as_u64(), || {
            format!("the page scrolls sideways on a phone: {seen}")
        })
        .await;
    }

    /// Emulates the system's colour scheme ("light" or "dark").
    async fn colour_scheme(&self, scheme: &str) {
        self.cdp(
            "Emulation.setEmulatedMedia",
            json!({"features": [{"name": "prefers-color-scheme", "value": scheme}]}),
        )
        .await;
    }

    /// Whether the page's background is dark (luminance of the body's colour below a half).
    async fn background_is_dark(&self) -> bool {
        self.js(
            "const [r, g, b] = getComputedStyle(document.body).backgroundColor.match(/\\d+/g).map(Number);
             return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255 < 0.5;",
        )
        .await
    }

    /// What the first screen shows, scrolled to the top with every row closed.
    async fn first_screen(&self) -> FirstScreen {
        self.js(
            "window.scrollTo(0, 0);
             for (const d of document.querySelectorAll('details[open]')) d.open = false;
             const lines = [...document.querySelectorAll('#needs li.red')].map(li => ({
                 what: (li.querySelector('b') || li).innerText.trim(),
                 bottom: Math.ceil(li.getBoundingClientRect().bottom),
                 anchor: li.querySelector('a').hash.slice(1),
                 section: !document.getElementById(li.querySelector('a').hash.slice(1))
                     || !document.getElementById(li.querySelector('a').hash.slice(1)).matches('li.row'),
             }));
             return {
                 red: lines,
                 red_sections: lines.filter(l => l.section).length,
                 red_rows: [...document.querySelectorAll('main li.row.red')].map(li => li.id),
                 viewport: window.innerHeight,
                 height: document.documentElement.scrollHeight,
             };",
        )
        .await
    }

    /// Opens every row (a tap on each closed one, again until all stay open: a redraw may
    /// come between taps) and waits for their details.
    async fn open_all(&self) {
        self.wait_for(
            "every row's details",
            "const rows = [...document.querySelectorAll('main li.row')];
             const closed = rows.filter(li => !li.querySelector('details[open] .more'));
             for (const li of closed) {
                 const d = li.querySelector('details');
                 if (d && !d.open) d.querySelector('summary').click();
             }
             return rows.length > 0 && closed.length === 0;",
        )
        .await;
    }

    /// Opens the row with element id `anchor` (a tap on its summary).
    async fn open_row(&self, anchor: &str) {
        let opened: bool = self
            .js(&format!(
                "const d = document.querySelector('#{anchor} details');
                 if (!d) return false; if (!d.open) d.querySelector('summary').click(); return true;"
            ))
            .await;
        self.check(opened, || format!("no row #{anchor}")).await;
        self.wait_for(
            &format!("#{anchor}'s details"),
            &format!("return !!document.querySelector('#{anchor} details[open] .more')"),
        )
        .await;
    }

    /// Refresh as the page does when the tab comes back.
    async fn focus(&self) {
        let _: Value = self
            .js("window.dispatchEvent(new Event('focus')); return null")
            .await;
    }

    /// The whole page (beyond the phone's viewport) as a PNG in target/browser-screenshots/.
    async fn screenshot(&self, name: &str) -> PathBuf {
        let height: f64 = self
            .js("return document.documentElement.scrollHeight")
            .await;
        let (width, viewport): (f64, f64) = self
            .js("return [document.documentElement.clientWidth, window.innerHeight]")
            .await;
        let clip = json!({"x": 0, "y": 0, "width": width,
                          "height": height.max(viewport), "scale": 1});
        let shot = self
            .cdp(
                "Page.captureScreenshot",
                json!({"format": "png", "captureBeyondViewport": true, "clip": clip}),
            )
            .await;
        let png = base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().expect("screenshot data"))
            .unwrap();
        let path = screenshot_dir().join(format!("{name}.png"));
        std::fs::write(&path, png).unwrap();
        eprintln!("{}: screenshot {}", self.scenario, path.display());
        path
    }

    /// Says times of day in the zone `tz` (an IANA name), as a phone set to it would.
    async fn zone(&self, tz: &str) {
        self.cdp("Emulation.setTimezoneOverride", json!({"timezoneId": tz}))
            .await;
    }

    /// A desktop window (1280 x 900, no touch), or back to the phone.
    async fn desktop(&self, on: bool) {
        if on {
            self.cdp(
                "Emulation.setDeviceMetricsOverride",
                json!({"width": DESKTOP.0, "height": DESKTOP.1, "deviceScaleFactor": 1, "mobile": false}),
            )
            .await;
        } else {
            self.cdp(
                "Emulation.setDeviceMetricsOverride",
                json!({"width": PHONE.0, "height": PHONE.1, "deviceScaleFactor": 2, "mobile": true}),
            )
            .await;
        }
    }

    /// Every interactive element shown is at least 24 x 24 CSS px (WCAG 2.2, 2.5.8 target
    /// size); returns how many there are.
    async fn assert_tap_targets(&self, label: &str) -> u64 {
        let seen: Value = self
            .js("const all = [...document.querySelectorAll('a[href], summary, button, input, select')]
                     .map(e => [e, e.getBoundingClientRect()])
                     .filter(([, r]) => r.width > 0 || r.height > 0);
                 const small = all.filter(([, r]) => r.width < 24 || r.height < 24)
                     .map(([e, r]) => `${e.tagName} ${Math.round(r.width)}x${Math.round(r.height)} ${(e.innerText || '').slice(0, 40)}`);
                 return {count: all.length, small};")
            .await;
        let small = seen["small"].as_array().map_or(0, Vec::len);
        self.check(small == 0, || {
            format!(
                "{label}: tap targets under 24 x 24 CSS px: {:#}",
                seen["small"]
            )
        })
        .await;
        seen["count"].as_u64().unwrap_or(0)
    }

    /// Every needs-you line is at most two lines (its muted "silenced" line aside), and a red
    /// row that has a line does not say the line's reason again while closed.
    async fn assert_needs_lines(&self, label: &str) -> Vec<Value> {
        let lines: Vec<Value> = self
            .js(
                "return [...document.querySelectorAll('#needs li a')].map(a => {
                     const cs = getComputedStyle(a), held = a.querySelector('.held');
                     const pad = parseFloat(cs.paddingTop) + parseFloat(cs.paddingBottom);
                     const text = a.getBoundingClientRect().height - pad
                         - (held ? held.getBoundingClientRect().height : 0);
                     const because = a.querySelector('.because');
                     const row = document.getElementById(a.hash.slice(1));
                     const summary = row && row.matches('li.row') && row.querySelector('summary');
                     return {text: a.innerText, lines: text / parseFloat(cs.lineHeight),
                             because: because ? because.innerText : '',
                             row: summary ? summary.innerText : null};
                 })",
            )
            .await;
        self.check(!lines.is_empty(), || format!("{label}: no needs-you lines"))
            .await;
        let long: Vec<&Value> = lines
            .iter()
            .filter(|l| l["lines"].as_f64().unwrap_or(9.0) > 2.3)
            .collect();
        self.check(long.is_empty(), || {
            format!("{label}: needs-you lines longer than two lines: {long:#?}")
        })
        .await;
        let repeated: Vec<&Value> = lines
            .iter()
            .filter(|l| {
                let because = l["because"].as_str().unwrap_or_default();
                let because = because.trim_end_matches('…');
                because.len() >= 10 && l["row"].as_str().is_some_and(|row| row.contains(because))
            })
            .collect();
        self.check(repeated.is_empty(), || {
            format!("{label}: closed rows repeating their needs-you line's reason: {repeated:#?}")
        })
        .await;
        lines
    }

    /// Opens every row and checks that no text in an opened row is squeezed into a column:
    /// every text box that wraps, and every row's summary, is at least 40 % of the row wide.
    async fn assert_opened_rows_full_width(&self, label: &str) -> u64 {
        // The folded groups too (the work queue's finished tasks): their rows are rows.
        let _: Value = self
            .js("for (const d of document.querySelectorAll('details.fold')) d.open = true; return null")
            .await;
        self.open_all().await;
        let seen: Value = self
            .js("const narrow = [];
                 const rows = [...document.querySelectorAll('main li.row')];
                 for (const li of rows) {
                     const width = li.getBoundingClientRect().width;
                     for (const e of li.querySelectorAll('*')) {
                         const own = [...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim());
                         if (!own) continue;
                         const r = e.getBoundingClientRect();
                         const line = parseFloat(getComputedStyle(e).lineHeight) || 16;
                         const wraps = r.height > 1.6 * line;
                         if ((wraps || e.matches('.sum')) && r.width < 0.4 * width)
                             narrow.push(`${li.id} ${e.tagName}.${e.className} ${Math.round(r.width)} of ${Math.round(width)} px: ${e.innerText.slice(0, 50)}`);
                     }
                 }
                 return {rows: rows.length, narrow};")
            .await;
        self.check(seen["narrow"].as_array().is_some_and(Vec::is_empty), || {
            format!(
                "{label}: squeezed text in opened rows: {:#}",
                seen["narrow"]
            )
        })
        .await;
        seen["rows"].as_u64().unwrap_or(0)
    }

    /// The page cannot be trusted: every panel says the time its data is from ("as of 19:15"),
    /// and no age measured from another clock than the banner's is shown.
    async fn assert_frozen_panels(&self) {
        let seen: Value = self
            .js("const checked = [...document.querySelectorAll('main .panel > .part > h2 .checked')].map(c => c.innerText);
                 return {checked, main: document.querySelector('main').innerText};")
            .await;
        let checked: Vec<&str> = seen["checked"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let main = seen["main"].as_str().unwrap_or_default();
        let ages: Vec<&str> = main.lines().filter(|l| l.contains(" ago")).collect();
        self.check(
            !checked.is_empty() && checked.iter().all(|c| c.starts_with("as of ")) && ages.is_empty(),
            || format!("a frozen page says 'as of' in every panel heading ({checked:?}) and no age ({ages:?})"),
        )
        .await;
    }

    /// Every time of day on the page is in the reader's zone `tz`, which is named once at the
    /// top ("times in UTC+01:00"), and "UTC" appears nowhere else: the footer's time of the
    /// snapshot is its `generated_at` in `tz`.
    async fn assert_one_zone(&self, tz: &str) {
        let seen = self
            .wait_for(
                "the snapshot's time in the reader's zone",
                &format!(
                    "const text = document.body.innerText;
                     const mark = document.querySelector('h1 .zone');
                     const foot = document.querySelector('footer').innerText;
                     return fetch('api/status.json', {{cache: 'no-store'}}).then(r => r.json()).then(s => {{
                         const at = new Date(s.generated_at);
                         const hm = z => at.toLocaleTimeString('en-GB', {{hour: '2-digit', minute: '2-digit', timeZone: z}});
                         const local = hm({tz:?}), utc = hm('UTC');
                         const ok = foot.includes('written ' + local);
                         return ok && {{utcs: (text.match(/UTC/g) || []).length, mark: mark && mark.innerText,
                                        local, utc, foot}};
                     }});"
                ),
            )
            .await;
        let mark = seen["mark"].as_str().unwrap_or_default();
        self.check(
            seen["utcs"] == 1
                && (mark.contains("UTC+01:00") || mark.contains("UTC+02:00"))
                && seen["local"] != seen["utc"],
            || format!("one zone, marked once at the top: {seen:#}"),
        )
        .await;
    }

    /// The Work queue, closed: one entry per task whose title and owner (or what is wrong, or
    /// the ETA) are never cut and take at most two lines; the panel says its rule in words;
    /// the finished tasks are one tap away, as many as the glance folds.
    async fn assert_work_queue_reads(&self, glance: &Glance) {
        let finished = glance
            .sections
            .iter()
            .find(|s| s.id == "queue")
            .and_then(|s| s.groups.iter().find(|g| g.closed))
            .map(|g| g.title.clone().unwrap_or_default());
        let Some(title) = finished else {
            self.fail("the demo's queue has finished tasks, folded")
                .await
        };
        // "finished (2)": the count is the page's own (the demo may finish another meanwhile).
        let word = title.split(" (").next().unwrap_or_default().to_string();
        let seen: Value = self
            .js("for (const d of document.querySelectorAll('details[open]')) d.open = false;
                 const rows = [...document.querySelectorAll('#queue li.row')].filter(li => li.getBoundingClientRect().height > 0);
                 const cut = [...document.querySelectorAll('#queue .name, #queue .sum')]
                     .filter(e => e.getBoundingClientRect().height > 0 && e.scrollWidth > e.clientWidth + 1)
                     .map(e => e.innerText);
                 const tall = rows.filter(li => {
                     const s = li.querySelector('summary'), cs = getComputedStyle(s);
                     const pad = parseFloat(cs.paddingTop) + parseFloat(cs.paddingBottom);
                     return (s.getBoundingClientRect().height - pad) / parseFloat(cs.lineHeight) > 2.3;
                 }).map(li => li.innerText);
                 const fold = document.querySelector('#queue details.fold');
                 return {open: rows.length, cut, tall, text: document.querySelector('#queue').innerText,
                         fold: fold && fold.querySelector('summary').innerText};")
            .await;
        let text = seen["text"].as_str().unwrap_or_default();
        self.check(
            seen["open"].as_u64() >= Some(3)
                && seen["cut"].as_array().is_some_and(Vec::is_empty)
                && seen["tall"].as_array().is_some_and(Vec::is_empty)
                && text.contains("an agent must take a task within")
                && !text.contains("ACK")
                && !text.contains("owning")
                && seen["fold"].as_str().is_some_and(|f| f.starts_with(&word)),
            || format!("the work queue, closed ({title:?} folded): {seen:#}"),
        )
        .await;
        // One tap shows the finished ones, as many as the fold says.
        let n: u64 = seen["fold"]
            .as_str()
            .and_then(|f| f.split(['(', ')']).nth(1))
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        let shown = self
            .wait_for(
                "the finished tasks after a tap",
                "const fold = document.querySelector('#queue details.fold');
                 if (!fold.open) fold.querySelector('summary').click();
                 const rows = [...fold.querySelectorAll('li.row')].filter(li => li.getBoundingClientRect().height > 0);
                 return rows.length;",
            )
            .await;
        self.check(n > 0 && shown.as_u64() == Some(n), || {
            format!("{n} finished tasks one tap away, {shown} shown")
        })
        .await;
        self.screenshot(&format!("{}-queue-finished", self.scenario))
            .await;
    }

    /// The page, closed, speaks the operator's words: no wire values, rule expressions, config
    /// keys or task ids (they wait in the opened rows), and one unit per fact: no count of
    /// seconds that is a minute or more.
    async fn assert_plain_words(&self) {
        let text: String = self
            .js(
                "for (const d of document.querySelectorAll('details[open]')) d.open = false;
                 // Names are the operator's own (a card titled 'Verify the 300 s rule source').
                 let text = document.body.innerText;
                 for (const n of document.querySelectorAll('.name')) text = text.split(n.innerText).join(' ');
                 return text",
            )
            .await;
        let jargon: Vec<&str> = [
            "TASK_STATE_",
            "timed_out",
            "needs_input",
            "gave_up",
            "spawn_failed",
            "(>=",
            "dispatch_profiles",
            "t_demo",
            "ACK",
        ]
        .into_iter()
        .filter(|j| text.contains(j))
        .collect();
        let words: Vec<&str> = text.split_whitespace().collect();
        let long_seconds: Vec<String> = words
            .windows(2)
            .filter(|w| w[1].trim_end_matches([',', ')', '.']) == "s")
            .filter_map(|w| w[0].parse::<u64>().ok())
            .filter(|n| *n >= 60)
            .map(|n| format!("{n} s"))
            .collect();
        self.check(jargon.is_empty() && long_seconds.is_empty(), || {
            format!("data words on the page: {jargon:?}; seconds that should be minutes: {long_seconds:?}")
        })
        .await;
    }

    /// At 1280 x 900 the page uses the width: needs-you beside the panels (not above them),
    /// panels side by side, and no row's name or summary cut short.
    async fn assert_desktop_uses_the_width(&self) {
        self.desktop(true).await;
        let seen = self
            .wait_for(
                "the desktop layout",
                "const needs = document.querySelector('#needs').getBoundingClientRect();
                 const main = document.querySelector('main').getBoundingClientRect();
                 const panels = [...document.querySelectorAll('main .panel')].map(p => p.getBoundingClientRect());
                 if (document.documentElement.clientWidth !== 1280) return false;
                 for (const d of document.querySelectorAll('details[open]')) d.open = false;
                 const cut = [...document.querySelectorAll('main .sum, main .name, #needs li')]
                     .filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.innerText.slice(0, 50));
                 return {beside: needs.right <= main.left + 1 && needs.top < 300 && main.top < 300,
                         columns: new Set(panels.map(p => Math.round(p.left))).size,
                         cut, scroll: document.documentElement.scrollWidth};",
            )
            .await;
        self.check(
            seen["beside"] == true
                && seen["columns"].as_u64() >= Some(2)
                && seen["cut"].as_array().is_some_and(Vec::is_empty)
                && seen["scroll"] == json!(DESKTOP.0),
            || format!("1280 x 900: needs-you beside the panels, panels in columns, nothing cut: {seen:#}"),
        )
        .await;
        self.screenshot(&format!("{}-desktop", self.scenario)).await;
        self.desktop(false).await;
        self.wait_for(
            "the phone's width again",
            &format!(
                "return document.documentElement.clientWidth === {}",
                PHONE.0
            ),
        )
        .await;
    }

    /// The page's last lines lead to the last report and the static snapshot (issue 45: the
    /// page shows the last report), below everything the page draws, and both are served.
    async fn assert_last_report_linked(&self) {
        let seen = self
            .wait_for(
                "the links below the page, served",
                "const links = document.querySelector('#links');
                 if (!links || document.body.lastElementChild !== links) return false;
                 const main = document.querySelector('main').getBoundingClientRect();
                 const hrefs = [...links.querySelectorAll('a')].map(a => [a.innerText, a.getAttribute('href')]);
                 return Promise.all(hrefs.map(([, h]) => fetch(h).then(r => r.status + ' ' + r.headers.get('content-type'))))
                     .then(served => ({hrefs, served, below: links.getBoundingClientRect().top >= main.bottom}));",
            )
            .await;
        self.check(
            seen["hrefs"]
                == json!([
                    ["Last report", "api/report.html"],
                    ["Static snapshot (no JavaScript)", "api/snapshot.html"]
                ])
                && seen["served"].as_array().is_some_and(|s| {
                    s.iter()
                        .all(|s| s.as_str().is_some_and(|s| s.starts_with("200 text/html")))
                })
                && seen["below"] == true,
            || format!("the last report and the static snapshot linked below the page: {seen:#}"),
        )
        .await;
    }

    async fn check(&self, ok: bool, message: impl FnOnce() -> String) {
        if !ok {
            self.fail(&message()).await;
        }
    }

    /// Fails the test with what the page shows and a screenshot of it.
    async fn fail(&self, message: &str) -> ! {
        let text = self
            .client
            .execute(
                "return document.body ? document.body.innerText : ''",
                Vec::new(),
            )
            .await
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let shot = format!("{}-FAILED", self.scenario);
        let path = self.screenshot(&shot).await;
        panic!(
            "{}: {message}\nscreenshot: {}\nthe page reads:\n{text}",
            self.scenario,
            path.display()
        );
    }

    /// Ends the scenario: it fails if the page broke its Content-Security-Policy anywhere
    /// (the console's "Refused to ..."), since what the policy blocked did not run.
    async fn quit(self) {
        match self.csp_violations().await {
            Some(seen) if seen.is_empty() => {}
            Some(seen) => {
                self.fail(&format!(
                    "the page broke its Content-Security-Policy:\n{}",
                    seen.join("\n")
                ))
                .await
            }
            None => {
                self.fail("the open document cannot say its CSP violations")
                    .await
            }
        }
        self.browser.quit().await;
    }
}

/// Installed in every document before its own scripts: each `securitypolicyviolation` event
/// (what Chromium logs to the console as "Refused to load/execute/apply ...") appended to the
/// tab's sessionStorage.
const CSP_VIOLATIONS_LISTENER: &str = "document.addEventListener('securitypolicyviolation', e => {
    try {
        const key = 'fleetdash-csp-violations';
        const seen = JSON.parse(sessionStorage.getItem(key) || '[]');
        seen.push(`${e.effectiveDirective} refused ${e.blockedURI || 'inline'} in ${e.documentURI} (${e.sourceFile}:${e.lineNumber})`);
        sessionStorage.setItem(key, JSON.stringify(seen));
    } catch (_) {}
});";

// ---------------------------------------------------------------------------------------------
// 9. Offline, the hub unreachable, a return visit, a new page version: the service worker
//    (issue 46)
// ---------------------------------------------------------------------------------------------

/// One browser, one origin (a proxy in front of the real `fleetdash serve`, which restarts on
/// the same port), logged in the way a person is (the browser's own credentials, which the
/// worker's fetches carry too, not DevTools' extra header, which never reaches a worker):
/// 1. a visit installs the worker: it keeps the shell and the status.json it read, nothing else;
/// 6. a return visit paints the kept verdict while status.json is held, marked as being
///    checked, then the fresh one;
/// 2. offline (DevTools' offline, on the page and on its worker), a reload shows the kept
///    snapshot with the banner and its age, bands frozen; 4. back online, the page is live by
///    itself;
/// 3. the hub stopped: the same; 4. it starts again: live by itself;
/// 5. a new page build takes over on the next visit, and the old build's cache is gone.
#[test]
fn the_page_opens_from_its_worker_offline_and_a_new_build_takes_over() {
    let started = Instant::now();
    let scratch = Scratch::new();
    let config = scratch.config(&serve_section(&scratch));
    let mut server = Serve::start(&config);
    let upstream = server.addr.clone();
    let proxy = HangingProxy::start(&upstream);
    let origin = format!("http://{}", proxy.addr);
    let url = format!("{origin}/?poll=2&deadline=30");
    let fleet = |at: DateTime<Utc>, names: &[&str]| {
        let mut s = Snapshot::empty(at, support::fleet_rules());
        s.stale = false;
        s.sections.agents.configured = true;
        s.sections.agents.checked_at = Some(at);
        s.agents = Probe::Value(names.iter().map(|n| green_agent(n, at)).collect());
        s
    };
    // Times in the reader's zone (UTC+05:30): what "Bands as of" must say.
    let kolkata = FixedOffset::east_opt(19_800).unwrap();
    let hm = |at: DateTime<Utc>| at.with_timezone(&kolkata).format("%H:%M").to_string();
    let first = fleet(Utc::now() - chrono::Duration::minutes(3), &["min"]);
    write_snapshot(&scratch, &first);
    let build = worker_build(&dist_dir());
    let assets = hashed_assets(&dist_dir());
    runtime().block_on(async {
        let chrome = Chrome::start("9-offline").await;
        chrome.zone("Asia/Kolkata").await;
        chrome.log_in_by_url(&origin).await;
        chrome
            .cdp(
                "Page.addScriptToEvaluateOnNewDocument",
                json!({"source": STATES_RECORDER}),
            )
            .await;

        // 1. The first visit: live, and the worker installed with this build's shell.
        chrome.open(&url).await;
        chrome
            .wait_for(
                "the live page",
                "return !!document.querySelector('#agent-min') && !document.querySelector('#stale-banner')",
            )
            .await;
        let mut expected: Vec<String> = assets.iter().map(|a| format!("{origin}/{a}")).collect();
        expected.push(format!("{origin}/"));
        expected.push(format!("{origin}/api/status.json"));
        expected.sort();
        let kept = chrome
            .wait_for(
                "the worker to keep the shell and status.json",
                &format!("return {KEPT}.then(k => k.controlled && Object.values(k.caches).some(urls => urls.length === {}) && k)", expected.len()),
            )
            .await;
        chrome
            .check(
                kept["caches"] == json!({format!("fleetdash {origin}/ {build}"): expected})
                    && kept["script"] == json!(format!("{origin}/sw.js")),
                || format!("one cache, this build's, with the shell and status.json only: {kept:#}"),
            )
            .await;
        // The worker is checked on every visit: served no-cache, as JavaScript.
        let served = chrome
            .js::<Value>(
                "return fetch('sw.js', {cache: 'no-store'}).then(r =>
                     [r.status, r.headers.get('cache-control'), r.headers.get('content-type')]);",
            )
            .await;
        chrome
            .check(
                served[0] == 200
                    && served[1] == "no-cache"
                    && served[2].as_str().is_some_and(|t| t.ends_with("javascript")),
                || format!("sw.js: 200, no-cache, JavaScript: {served}"),
            )
            .await;
        // Nothing else is kept: not the static snapshot, not a refusal.
        let after = chrome
            .js::<Value>(&format!(
                "return Promise.all(['api/snapshot.html', 'api/report.html', 'nothing-here.js']
                     .map(u => fetch(u).then(r => r.status)))
                     .then(statuses => {KEPT}.then(k => [statuses, k.caches]));"
            ))
            .await;
        chrome
            .check(after[1] == kept["caches"], || {
                format!("what the page fetched besides status.json is not kept: {after:#}")
            })
            .await;
        chrome.screenshot("9a-first-visit").await;

        // 6. A return visit with status.json held: the kept verdict at once, being checked;
        //    the fresh snapshot (mira came) when the server answers.
        let second = fleet(Utc::now() - chrono::Duration::minutes(1), &["min", "mira"]);
        write_snapshot(&scratch, &second);
        proxy.hang(true);
        chrome.open(&url).await;
        let checking = chrome
            .wait_for(
                "the kept verdict, being checked",
                "const c = document.querySelector('h1 .checking');
                 return c && document.querySelector('#verdict')
                     && {checking: c.innerText, banner: !!document.querySelector('#stale-banner'),
                         mira: !!document.querySelector('#agent-mira'), min: !!document.querySelector('#agent-min')};",
            )
            .await;
        let mark = checking["checking"].as_str().unwrap_or_default();
        chrome
            .check(
                checking["mira"] == false
                    && checking["min"] == true
                    && checking["banner"] == false
                    && says_age(mark, "", " old · checking…", first.generated_at),
                || format!("the kept snapshot, aged and marked, while the server is asked: {checking:#}"),
            )
            .await;
        chrome.screenshot("9b-return-visit-checking").await;
        proxy.hang(false);
        chrome
            .wait_for(
                "the fresh snapshot after the held answer",
                "return !!document.querySelector('#agent-mira') && !document.querySelector('#stale-banner')",
            )
            .await;
        let states: Vec<Value> = chrome.js("return window.__states").await;
        let first_checking = states.iter().position(|s| s["checking"] == true);
        let first_fresh = states.iter().position(|s| s["mira"] == true);
        chrome
            .check(
                first_checking.is_some()
                    && first_fresh > first_checking
                    && states[..first_fresh.unwrap_or(0)].iter().all(|s| s["mira"] == false)
                    && states.iter().all(|s| s["banner"].is_null())
                    && states
                        .last()
                        .is_some_and(|s| s["checking"] == false && s["mira"] == true),
                || format!("kept verdict first, being checked, then the fresh one: {states:#?}"),
            )
            .await;

        // 2. Offline: the kept snapshot, said to be so, bands frozen.
        let sessions = chrome.offline().await;
        chrome.open(&url).await;
        chrome
            .assert_unreachable_shows(&hm(second.generated_at), second.generated_at)
            .await;
        chrome.screenshot("9c-offline").await;
        // 4. Back online: live by itself.
        chrome.online(sessions).await;
        chrome.assert_live_again("back online").await;

        // 3. The hub stopped: the same; started again: live by itself.
        server.stop();
        chrome.open(&url).await;
        chrome
            .assert_unreachable_shows(&hm(second.generated_at), second.generated_at)
            .await;
        chrome.screenshot("9d-hub-unreachable").await;
        server = Serve::start_at(&config, &upstream);
        chrome.assert_live_again("the hub back").await;

        // 5. A new build of the page (its own sw.js, a footer of its own): the visit after it
        //    is served installs it, which drops the old build's cache; the next visit is it.
        server.stop();
        let new_build = "2222222222222222";
        let dist2 = new_page_build(&scratch, new_build);
        let config2 = scratch.config(&format!(
            "[serve]\nhtpasswd = \"htpasswd\"\ndist_dir = {:?}\n",
            dist2.display().to_string()
        ));
        server = Serve::start_at(&config2, &upstream);
        chrome.open(&url).await;
        let name = format!("fleetdash {origin}/ {new_build}");
        let kept = chrome
            .wait_for(
                "the new build's worker, alone",
                &format!(
                    "return {KEPT}.then(k => {{ const names = Object.keys(k.caches);
                         return names.length === 1 && names[0] === {name:?} && k; }})"
                ),
            )
            .await;
        chrome.open(&url).await;
        let footer = chrome
            .wait_for(
                "the new build's page",
                "const l = document.querySelector('#links');
                 return document.querySelector('#agent-mira') && l && l.innerText;",
            )
            .await;
        chrome
            .check(
                footer.as_str().is_some_and(|f| f.contains("version 2"))
                    && kept["caches"][&name]
                        .as_array()
                        .is_some_and(|urls| urls.contains(&json!(format!("{origin}/")))),
                || format!("the new build's page, from its own cache: {footer} {kept:#}"),
            )
            .await;
        chrome.screenshot("9e-new-build").await;
        chrome.quit().await;
    });
    drop(proxy);
    eprintln!("scenario 9 took {:?}", started.elapsed());
}

/// The worker's registration and what it keeps, as the page sees them: `{script, controlled,
/// caches: {name: [url, ...sorted]}}` (a promise).
const KEPT: &str = "navigator.serviceWorker.ready.then(async reg => {
    const caches_ = {};
    for (const name of await caches.keys())
        caches_[name] = (await (await caches.open(name)).keys()).map(r => r.url).sort();
    return {script: reg.active && reg.active.scriptURL,
            controlled: !!navigator.serviceWorker.controller, caches: caches_};
})";

/// Installed in every document: each distinct state of the verdict, the banner and mira's row,
/// in the order the page showed them (`window.__states`).
const STATES_RECORDER: &str = "window.__states = [];
new MutationObserver(() => {
    const v = document.getElementById('verdict');
    if (!v) return;
    const b = document.getElementById('stale-banner');
    const s = {verdict: v.innerText, banner: b ? b.innerText : null,
               checking: !!document.querySelector('h1 .checking'),
               mira: !!document.getElementById('agent-mira')};
    const last = window.__states[window.__states.length - 1];
    if (JSON.stringify(last) !== JSON.stringify(s)) window.__states.push(s);
}).observe(document, {childList: true, subtree: true, characterData: true});";

/// Whether `banner` says the snapshot written at `at` is as old as it is ("last good snapshot
/// 3 min ago"), judged at the time of reading (a minute may turn meanwhile).
fn shows_age(banner: &str, at: DateTime<Utc>) -> bool {
    says_age(banner, "last good snapshot ", " ago", at)
}

/// Whether `text` says the age of what was written at `at` between `before` and `after`
/// ("snapshot 3 min old"), judged at the time of reading (a minute may turn meanwhile).
fn says_age(text: &str, before: &str, after: &str, at: DateTime<Utc>) -> bool {
    let age = |now: DateTime<Utc>| fleetdash_model::human_age((now - at).num_seconds() as u64);
    let now = Utc::now();
    [now - chrono::Duration::seconds(60), now]
        .into_iter()
        .any(|n| text.contains(&format!("{before}{}{after}", age(n))))
}

/// The build id written into `dist`'s sw.js.
fn worker_build(dist: &Path) -> String {
    let worker = std::fs::read_to_string(dist.join("sw.js")).unwrap();
    worker
        .lines()
        .find_map(|l| l.strip_prefix("const BUILD = \""))
        .and_then(|l| l.strip_suffix("\";"))
        .expect("sw.js carries its build id")
        .to_string()
}

/// The content-hashed files of `dist` (what the worker keeps besides the page).
fn hashed_assets(dist: &Path) -> Vec<String> {
    std::fs::read_dir(dist)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| fleetdash::page::is_hashed_asset(&format!("/{n}")))
        .collect()
}

/// A copy of the built page as another build would be: sw.js with `build` as its id, index.html
/// with a footer of its own ("version 2"); their pre-compressed copies left out, so the server
/// answers the changed files themselves.
fn new_page_build(scratch: &Scratch, build: &str) -> PathBuf {
    let dist = dist_dir();
    let copy = scratch.path().join("dist2");
    std::fs::create_dir_all(&copy).unwrap();
    for entry in std::fs::read_dir(&dist).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("index.html.") || name.starts_with("sw.js.") {
            continue;
        }
        std::fs::copy(entry.path(), copy.join(&name)).unwrap();
    }
    let worker = std::fs::read_to_string(copy.join("sw.js")).unwrap();
    let old = worker_build(&dist);
    std::fs::write(copy.join("sw.js"), worker.replace(&old, build)).unwrap();
    let index = std::fs::read_to_string(copy.join("index.html")).unwrap();
    let changed = index.replace(
        "Static snapshot (no JavaScript)",
        "Static snapshot (no JavaScript), version 2",
    );
    assert_ne!(index, changed, "index.html links the static snapshot");
    std::fs::write(copy.join("index.html"), changed).unwrap();
    copy
}

impl Chrome {
    /// The page at `url` with its WebAssembly refused, as on a link where it has not arrived
    /// yet: the first HTML's header must say the verdict, the needs-you lines and the
    /// snapshot's age (the browser's), before and without the page. Returns where and what it
    /// showed, for [`Chrome::assert_took_over_in_place`].
    async fn first_html_without_wasm(&self, url: &str) -> Value {
        self.cdp("Network.enable", json!({})).await;
        self.cdp("Network.setBlockedURLs", json!({"urls": ["*.wasm"]}))
            .await;
        self.open(url).await;
        let first = self
            .wait_for(
                "the first HTML's verdict and age, without the wasm",
                "const h = document.getElementById('first');
                 const v = h && h.querySelector('.verdict');
                 const age = h && h.querySelector('.checking time').innerText;
                 if (!v || !/^\\d+ (s|min) old$/.test(age) || !document.getElementById('boot')) return false;
                 const top = e => e ? Math.round(e.getBoundingClientRect().top) : null;
                 return {verdict: v.innerText, verdict_top: top(v), age,
                         mark: h.querySelector('.checking').innerText,
                         counts: h.querySelector('.counts').innerText,
                         needs: [...h.querySelectorAll('.needs li')].map(li => li.innerText),
                         needs_top: top(h.querySelector('.needs')),
                         page: !!document.getElementById('verdict'),
                         visible: v.checkVisibility(), title: document.title};",
            )
            .await;
        self.check(
            first["page"] == false
                && first["visible"] == true
                && first["mark"]
                    .as_str()
                    .is_some_and(|m| m.ends_with(" old · checking…"))
                && first["needs"].as_array().is_some_and(|n| !n.is_empty())
                && first["title"].as_str().is_some_and(|t| t != "fleet"),
            || format!("the first HTML says the verdict, alone: {first:#}"),
        )
        .await;
        self.cdp("Network.setBlockedURLs", json!({"urls": []}))
            .await;
        first
    }

    /// The page's first poll failing (here refused by DevTools; on a phone, a 401 after the
    /// browser forgot the login): the first HTML's header goes and the banner says why, rather
    /// than an old verdict "checking…" for ever.
    async fn assert_a_failed_first_poll_is_said(&self, url: &str) {
        self.cdp("Network.enable", json!({})).await;
        self.cdp(
            "Network.setBlockedURLs",
            json!({"urls": ["*api/status.json*"]}),
        )
        .await;
        self.open(url).await;
        let banner = self
            .wait_for(
                "the banner, the first HTML's header gone, when the first poll fails",
                "const b = document.getElementById('stale-banner');
                 return !document.getElementById('first') && b && b.checkVisibility()
                     && b.innerText.includes('Cannot load the snapshot') && b.innerText;",
            )
            .await;
        self.check(
            banner
                .as_str()
                .is_some_and(|b| b.contains("No snapshot loaded yet.")),
            || format!("the banner says nothing was loaded: {banner}"),
        )
        .await;
        self.cdp("Network.setBlockedURLs", json!({"urls": []}))
            .await;
        // And the page as it was, for what follows.
        self.open(url).await;
        self.wait_for(
            "the page again",
            "return !document.getElementById('first') && !document.getElementById('stale-banner')
                 && document.querySelectorAll('#agents li.row').length > 0",
        )
        .await;
    }

    /// The page, once its WebAssembly runs, says the first HTML's verdict in the same place
    /// (no jump), with as many needs-you lines, and the first HTML's header is gone.
    async fn assert_took_over_in_place(&self, first: &Value) {
        let page: Value = self
            .js("const v = document.getElementById('verdict');
                 const top = e => e ? Math.round(e.getBoundingClientRect().top) : null;
                 return {verdict: v.innerText, verdict_top: top(v),
                         counts: document.querySelector('.counts').innerText,
                         needs: document.querySelectorAll('#needs li').length,
                         needs_top: top(document.getElementById('needs')),
                         first: !!document.getElementById('first')};")
            .await;
        self.check(
            page["first"] == false
                && page["verdict"] == first["verdict"]
                && page["counts"] == first["counts"]
                && page["verdict_top"] == first["verdict_top"]
                && page["needs_top"] == first["needs_top"]
                && first["needs"].as_array().map(Vec::len) == page["needs"].as_u64().map(|n| n as usize),
            || format!("the page took over the first HTML's verdict in place: first {first:#}, page {page:#}"),
        )
        .await;
    }

    /// Logs in as a person does (see [`chrome::Browser::log_in_by_url`]).
    async fn log_in_by_url(&self, origin: &str) {
        self.browser.log_in_by_url(origin, USER, PASSWORD).await;
    }

    /// DevTools' offline for the page and for its service worker (see
    /// [`chrome::Browser::attach_workers`]). Returns the worker's DevTools sessions, for
    /// [`Chrome::online`].
    async fn offline(&self) -> Vec<Value> {
        let sessions = self.attach_workers().await;
        self.check(!sessions.is_empty(), || {
            "no service worker to take offline".into()
        })
        .await;
        self.emulate_network(&sessions, &network(true)).await;
        sessions
    }

    /// The network back, for the page and its worker (whose sessions [`Chrome::offline`] gave).
    async fn online(&self, sessions: Vec<Value>) {
        self.emulate_network(&sessions, &network(false)).await;
        self.detach_workers(sessions).await;
    }

    /// The server cannot be reached: the reloaded page shows the kept snapshot (mira's) at
    /// once, with the banner saying so and how old it is, bands frozen at its time.
    async fn assert_unreachable_shows(&self, as_of: &str, at: DateTime<Utc>) {
        let seen = self
            .wait_for(
                "the kept snapshot, the server unreachable",
                "const b = document.querySelector('#stale-banner');
                 return b && b.innerText.includes('cannot be reached')
                     && {banner: b.innerText, verdict: document.querySelector('#verdict').innerText,
                         mira: !!document.querySelector('#agent-mira')};",
            )
            .await;
        let banner = seen["banner"].as_str().unwrap_or_default();
        self.check(
            seen["mira"] == true
                && banner.contains("Cannot load the snapshot: the server cannot be reached")
                && banner.contains(&format!("Bands as of {as_of}"))
                && shows_age(banner, at)
                && seen["verdict"]
                    .as_str()
                    .is_some_and(|v| v.contains("stale")),
            || format!("the kept snapshot, aged, with the banner: {seen:#}"),
        )
        .await;
        self.assert_frozen_panels().await;
        self.assert_no_horizontal_scroll().await;
    }

    /// The page went live again by itself: the banner gone, the verdict no longer stale.
    async fn assert_live_again(&self, what: &str) {
        self.wait_for(
            &format!("the page live again ({what})"),
            "const v = document.querySelector('#verdict');
             return !document.querySelector('#stale-banner') && v && !v.innerText.includes('stale')
                 && !!document.querySelector('#agent-mira');",
        )
        .await;
    }
}

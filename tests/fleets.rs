//! Fleets of other shapes (issue 43): the glance is judged on fleets it was not tuned beside.
//! Besides the demo, three fixture fleets, each run through the real `fleetdash run` (simulated
//! A2A agents, real sockets, a real Hermes board, real tunnels refused or answering, an ntfy
//! receiver) and read in headless Chromium at a phone's 390 × 844 from `fleetdash serve`:
//!
//! - **tunnels**: five agents behind loopback tunnels, with no audit logs on this host; one
//!   tunnel down (its agent with it), one agent with an empty card, one hanging on its task;
//! - **board**: a Hermes board of 300 cards, eight blocked on input and two crashed, beside
//!   three healthy agents;
//! - **chain**: a tunnel down takes a remote host down, and the three agents on it, beside an
//!   agent with trouble of its own.
//!
//! On each, the first screen: every red and amber needs-you line is one the operator can act on
//! or must know (the exact lines are listed), no element is named by two lines, the Agents
//! panel starts on it; and the notifications name things by their words, never an id.
//!
//! Each scenario prints its first screen and saves it in `target/browser-screenshots/`
//! (`fleet-<name>.png`) before it asserts, so a failing run shows what the operator saw.

use crate::support;

use crate::support::chrome;

use crate::support::kanban;

use crate::support::receiver;

use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

use chrome::{Browser, PHONE, Serve};
use fleetdash::a2a::Wire;
use fleetdash::demo::sim::SimAgent;
use fleetdash_model::Snapshot;
use receiver::{Mode, Receiver};
use serde::Deserialize;
use support::{Scratch, Sim, refused_endpoint, repo_root};

const USER: &str = "young";
const PASSWORD: &str = "correct horse battery";

/// How long a fleet may take to reach the state a scenario reads (a few passes of 2 s
/// cadences, the stuck rule, two failing passes and a notification): a hang budget, not a
/// speed bound.
const PATIENCE: Duration = Duration::from_secs(180);

/// One needs-you line as the page shows it.
#[derive(Debug, Deserialize)]
struct Line {
    band: String,
    text: String,
    href: String,
    bottom: u64,
}

/// What the first screen shows, scrolled to the top with every row closed.
#[derive(Debug, Deserialize)]
struct FirstScreen {
    verdict: String,
    lines: Vec<Line>,
    /// Where the Agents panel's heading starts, px from the top.
    agents_top: i64,
    agents_note: String,
    viewport: u64,
}

impl FirstScreen {
    /// The red and amber lines the first screen shows, "✖ what · reason" without the time
    /// ("since 14:02") that varies from run to run.
    fn said(&self) -> Vec<String> {
        self.lines
            .iter()
            .filter(|l| l.bottom <= self.viewport && (l.band == "red" || l.band == "amber"))
            .map(|l| {
                let text = l.text.split(" since ").next().unwrap_or(&l.text);
                durations_as_n(text.trim())
            })
            .collect()
    }

    fn print(&self, name: &str) {
        eprintln!("--- fleet {name}: the first screen (390 x 844) ---");
        eprintln!("verdict: {}", self.verdict.replace('\n', " / "));
        for l in &self.lines {
            let seen = if l.bottom <= self.viewport {
                ""
            } else {
                " (below the first screen)"
            };
            eprintln!("  [{}] {} -> {}{seen}", l.band, l.text, l.href);
        }
        eprintln!(
            "Agents panel at {} px of {}; its note: {:?}",
            self.agents_top, self.viewport, self.agents_note
        );
    }
}

/// `text` with each duration ("23 s", "1 min", "2 h 5 min") said as "N", so that a line
/// reads the same however long the run took to get there.
fn durations_as_n(text: &str) -> String {
    let words: Vec<&str> = text.split(' ').collect();
    let mut out: Vec<&str> = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let number = words[i].bytes().all(|b| b.is_ascii_digit()) && !words[i].is_empty();
        let unit = words
            .get(i + 1)
            .is_some_and(|u| ["s", "min", "h", "d"].contains(u));
        if number && unit {
            if out.last() != Some(&"N") {
                out.push("N");
            }
            i += 2;
        } else {
            out.push(words[i]);
            i += 1;
        }
    }
    out.join(" ")
}

/// The first screen's script: what a person sees without scrolling or tapping.
const FIRST_SCREEN: &str = "window.scrollTo(0, 0);
    for (const d of document.querySelectorAll('details[open]')) d.open = false;
    const lines = [...document.querySelectorAll('#needs li')].map(li => ({
        band: ['red', 'amber', 'green'].find(b => li.classList.contains(b)) || '',
        text: li.innerText.replace(/\\s+/g, ' ').trim(),
        href: (li.querySelector('a') || {}).hash || '',
        bottom: Math.ceil(li.getBoundingClientRect().bottom),
    }));
    const h = document.querySelector('#agents h2');
    const note = document.querySelector('#agents .note');
    const verdict = document.querySelector('#verdict');
    return {
        verdict: verdict ? verdict.innerText : '',
        lines,
        agents_top: h ? Math.floor(h.getBoundingClientRect().top) : -1,
        agents_note: note ? note.innerText : '',
        viewport: window.innerHeight,
    };";

/// A fleet under `fleetdash run`: its scratch folder, config, the simulated agents (kept
/// alive), the ntfy receiver, and the run itself (killed on drop).
struct Fleet {
    name: &'static str,
    scratch: Scratch,
    config: PathBuf,
    _sims: Vec<Sim>,
    ntfy: Receiver,
    _runtime: tokio::runtime::Runtime,
    run: Child,
}

impl Drop for Fleet {
    fn drop(&mut self) {
        let _ = self.run.kill();
        let _ = self.run.wait();
    }
}

impl Fleet {
    /// Starts `fleetdash run` on `body` (agents, hosts, boards), with every cadence at 2 s,
    /// the shipped rules with `rules` applied (each a `(from, to)` text replacement), an ntfy
    /// channel to a receiver, and `[serve]` for the built page.
    fn start(
        name: &'static str,
        scratch: Scratch,
        sims: Vec<Sim>,
        body: &str,
        rules: &[(&str, &str)],
    ) -> Fleet {
        let mut text = support::quick_grouping_rules();
        for (from, to) in rules {
            assert!(text.contains(from), "the shipped rules have no {from:?}");
            text = text.replace(from, to);
        }
        std::fs::write(scratch.path().join("rules.yaml"), text).unwrap();
        let (runtime, listener) = support::loopback_runtime();
        let ntfy = runtime.block_on(async { Receiver::serve(listener, Mode::Ok) });
        chrome::write_htpasswd(scratch.path(), USER, PASSWORD);
        let config = scratch.config(&format!(
            "[cadence]\nagents = \"2s\"\nlive_tasks = \"2s\"\nboard = \"2s\"\nsystems = \"2s\"\n\
             tunnels = \"2s\"\nbackups = \"2s\"\n\n\
             [serve]\nhtpasswd = \"htpasswd\"\ndist_dir = {:?}\n\n\
             [alerts]\n\n[[alerts.channels]]\ntype = \"ntfy\"\nname = \"phone\"\nurl = \"{}\"\n\n\
             {body}",
            dist_dir().display().to_string(),
            ntfy.url("/fleet"),
        ));
        let check = support::fleetdash()
            .args(["check", "--config"])
            .arg(&config)
            .output()
            .unwrap();
        support::assert_success(&check);
        let log = scratch.path().join("run.log");
        let run = support::spawn_logging_to(
            support::fleetdash()
                .env("FLEETDASH_LOG", "info")
                .args(["run", "--config"])
                .arg(&config),
            &log,
        );
        Fleet {
            name,
            scratch,
            config,
            _sims: sims,
            ntfy,
            _runtime: runtime,
            run,
        }
    }

    /// The snapshot once `ready` holds of it; fails naming `what` with the run's log.
    fn snapshot_when(&self, what: &str, ready: impl Fn(&Snapshot) -> bool) -> Snapshot {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let read = std::fs::read(self.scratch.status_path())
                .ok()
                .and_then(|b| serde_json::from_slice::<Snapshot>(&b).ok());
            if let Some(s) = read.filter(|s| ready(s)) {
                return s;
            }
            if Instant::now() > deadline {
                let log = std::fs::read_to_string(self.scratch.path().join("run.log"))
                    .unwrap_or_default();
                panic!(
                    "fleet {}: never reached {what}; status.json: {}\nrun.log:\n{log}",
                    self.name,
                    std::fs::read_to_string(self.scratch.status_path()).unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// The ntfy notifications' titles and bodies so far, once `ready` holds of the titles.
    fn notifications_when(&self, what: &str, ready: impl Fn(&[String]) -> bool) -> Vec<String> {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let got: Vec<String> = self
                .ntfy
                .got()
                .iter()
                .filter(|g| g.path == "/fleet")
                .map(|g| {
                    let title = g
                        .headers
                        .get("title")
                        .and_then(|t| t.to_str().ok())
                        .unwrap_or_default();
                    format!("{title}\n{}", String::from_utf8_lossy(&g.body))
                })
                .collect();
            let titles: Vec<String> = got
                .iter()
                .map(|n| n.lines().next().unwrap_or_default().to_string())
                .collect();
            if ready(&titles) {
                return got;
            }
            assert!(
                Instant::now() < deadline,
                "fleet {}: no notification {what}; got {got:#?}",
                self.name
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// The page's first screen in Chromium at 390 × 844 (a screenshot of it saved), light.
    fn first_screen(&self) -> FirstScreen {
        let mut serve = Serve::start(&self.config);
        let url = serve.url();
        let seen = chrome::runtime().block_on(async {
            let browser = Browser::start().await;
            browser.log_in_as(USER, PASSWORD).await;
            browser.open(&url).await;
            let deadline = Instant::now() + PATIENCE;
            loop {
                let ready: bool = browser
                    .js("return !!document.querySelector('#verdict') && !!document.querySelector('#agents h2')")
                    .await;
                if ready {
                    break;
                }
                assert!(Instant::now() < deadline, "fleet {}: the page never showed its verdict", self.name);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            let seen: FirstScreen = browser.js(FIRST_SCREEN).await;
            screenshot(&browser, &format!("fleet-{}", self.name)).await;
            browser.quit().await;
            seen
        });
        serve.stop();
        seen.print(self.name);
        seen
    }
}

/// The first screen as a PNG (the phone's viewport, not the whole page).
async fn screenshot(browser: &Browser, name: &str) {
    use base64::Engine;
    let shot = browser
        .cdp(
            "Page.captureScreenshot",
            serde_json::json!({"format": "png", "clip": {"x": 0, "y": 0, "width": PHONE.0, "height": PHONE.1, "scale": 1}}),
        )
        .await;
    let png = base64::engine::general_purpose::STANDARD
        .decode(shot["data"].as_str().expect("screenshot data"))
        .unwrap();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("browser-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.png"));
    std::fs::write(&path, png).unwrap();
    eprintln!("screenshot {}", path.display());
}

/// The built page; the test cannot run without it.
fn dist_dir() -> PathBuf {
    let dist = repo_root().join("frontend/dist");
    assert!(
        dist.join("index.html").is_file(),
        "{} holds no built page: run scripts/build-frontend first (scripts/test does)",
        dist.display()
    );
    dist
}

/// The checks every fixture fleet's first screen passes: exactly the `expected` red and amber
/// lines (each one the operator can act on or must know), no element named by two lines, the
/// Agents panel starting on the screen.
fn assert_first_screen(name: &str, seen: &FirstScreen, expected: &[&str], elements: &[&str]) {
    assert_eq!(
        seen.said(),
        expected,
        "fleet {name}: the first screen's red and amber lines"
    );
    for element in elements {
        let naming: Vec<&String> = seen
            .lines
            .iter()
            .map(|l| &l.text)
            .filter(|t| {
                t.split(|c: char| !c.is_alphanumeric() && c != '-')
                    .any(|w| w == *element)
            })
            .collect();
        assert!(
            naming.len() <= 1,
            "fleet {name}: {element} is named by {} needs-you lines: {naming:#?}",
            naming.len()
        );
    }
    assert!(
        seen.agents_top >= 0 && (seen.agents_top as u64) < seen.viewport,
        "fleet {name}: the Agents panel starts at {} px, below the first screen ({} px)",
        seen.agents_top,
        seen.viewport
    );
}

/// No notification names anything by an id: no A2A task id (a UUID), no board card id.
fn assert_words_not_ids(name: &str, notifications: &[String]) {
    for n in notifications {
        let title = n.lines().next().unwrap_or_default();
        let uuid = title
            .split(|c: char| !c.is_ascii_hexdigit() && c != '-')
            .any(|w| w.len() >= 32 && w.matches('-').count() == 4);
        assert!(
            !uuid && !title.contains(" t_"),
            "fleet {name}: a notification's title names an id: {title:?}"
        );
    }
}

/// An agent's `[[agents]]` entry without an audit log.
fn agent(name: &str, endpoint: &str) -> String {
    format!("[[agents]]\nname = \"{name}\"\nendpoint = \"{endpoint}\"\n\n")
}

/// `127.0.0.1:PORT` of an endpoint URL.
fn address(endpoint: &str) -> String {
    endpoint
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string()
}

// ---------------------------------------------------------------------------------------------
// 1. Agents behind tunnels, no audit logs on this host; one tunnel down, an empty card, a hang
// ---------------------------------------------------------------------------------------------

/// Was (issue 43): three healthy agents amber for good ("last exchange unknown: no audit log
/// configured"), orin said twice (its own line and its tunnel's), lyra's row silent about the
/// task it hangs on, and a notification titled with the task's UUID.
#[test]
fn agents_behind_tunnels_without_audit_logs() {
    const TASK: &str = "4dd0be78-1619-4aaa-ba50-c4139d9ac7e4";
    let scratch = Scratch::new();
    let mut lyra = SimAgent::healthy("lyra", Wire::V1);
    lyra.in_flight = vec![TASK.into()];
    lyra.stalled = vec![TASK.into()];
    let mut cirrus = SimAgent::healthy("cirrus", Wire::V03);
    cirrus.skills = 0;
    let sims = vec![
        Sim::healthy("atlas", Wire::V1),
        Sim::healthy("boreal", Wire::V03),
        Sim::start(cirrus),
        Sim::start(lyra),
    ];
    let orin = refused_endpoint();
    let names = ["atlas", "boreal", "cirrus", "lyra"];
    let mut body = String::new();
    let mut tunnels = String::new();
    for (name, sim) in names.iter().zip(&sims) {
        body.push_str(&agent(name, &sim.endpoint));
        tunnels.push_str(&format!(
            "[[hosts.tunnels]]\nname = \"{name}\"\naddress = \"{}\"\n",
            address(&sim.endpoint)
        ));
    }
    body.push_str(&agent("orin", &orin));
    tunnels.push_str(&format!(
        "[[hosts.tunnels]]\nname = \"orin\"\naddress = \"{}\"\n",
        address(&orin)
    ));
    body.push_str(&format!(
        "[[hosts]]\nname = \"laptop\"\nsource = \"local\"\n{tunnels}"
    ));
    let fleet = Fleet::start(
        "tunnels",
        scratch,
        sims,
        &body,
        // The stuck rule at 20 s, so that lyra's task hangs within the test.
        &[("no_reply_seconds: 300", "no_reply_seconds: 20")],
    );
    fleet.snapshot_when("lyra's task stuck and orin down behind its tunnel", |s| {
        s.tasks
            .live
            .value()
            .is_some_and(|t| t.iter().any(|t| t.id == TASK && t.stuck))
            && s.systems.value().is_some_and(|h| !h.is_empty())
            && s.agents.value().is_some_and(|a| a.len() == 5)
    });
    let notifications =
        fleet.notifications_when("for the stuck task, the tunnel and cirrus", |t| {
            let all = t.join(" | ");
            all.contains("lyra") && all.contains("orin") && all.contains("cirrus")
        });
    eprintln!("notifications: {notifications:#?}");
    let seen = fleet.first_screen();
    assert_first_screen(
        "tunnels",
        &seen,
        &[
            "✖ agent cirrus · its card lists no skills: it cannot be given work",
            "✖ agent orin down · tunnel orin on laptop is down",
            "✖ task on lyra · no reply for N",
        ],
        &["orin", "cirrus", "lyra", "atlas", "boreal"],
    );
    // The stuck task's line leads to lyra's row, which says it hangs.
    let lyra_line = seen
        .lines
        .iter()
        .find(|l| l.text.contains("on lyra"))
        .unwrap();
    assert_eq!(lyra_line.href, "#agent-lyra");
    assert!(
        seen.agents_note
            .starts_with("last exchange not watched for 5 agents"),
        "the Agents panel says once what the config leaves unwatched: {:?}",
        seen.agents_note
    );
    assert_words_not_ids("tunnels", &notifications);
}

// ---------------------------------------------------------------------------------------------
// 2. A board of 300 cards, eight blocked on input, two crashed
// ---------------------------------------------------------------------------------------------

/// Was (issue 43): eight board cards, one line each, "blocked: needs input", pushing the Agents
/// panel off the first screen.
#[test]
fn a_big_board_with_many_blocked_cards() {
    let scratch = Scratch::new();
    let db = scratch.path().join("kanban.db");
    let board = kanban::Kanban::create(&db);
    let now = kanban::now();
    let statuses = ["todo", "ready", "running", "done", "triage"];
    for i in 0..300 {
        let (status, block) = match i {
            0..8 => ("blocked", Some("needs_input")),
            8..10 => ("running", None),
            _ => (statuses[i % statuses.len()], None),
        };
        let mut t = kanban::Task::new(
            &format!("t_{i:04}"),
            &format!("Research item {i}"),
            status,
            Some(["min", "echo", "mira"][i % 3]),
        );
        t.block_kind = block.map(String::from);
        board.task(&t);
        if (8..10).contains(&i) {
            board.event(&t.id, "claimed", "{}", now - 600);
            board.event(&t.id, "crashed", "{\"pid\": 4242}", now - 120);
        }
    }
    let sims = vec![
        Sim::healthy("min", Wire::V1),
        Sim::healthy("echo", Wire::V1),
        Sim::healthy("mira", Wire::V03),
    ];
    let mut body = String::new();
    for (name, sim) in ["min", "echo", "mira"].iter().zip(&sims) {
        let audit = fleet_audit_log(&scratch, name);
        body.push_str(&support::agent_toml(name, &sim.endpoint, "auto", &audit));
    }
    body.push_str(&format!(
        "[[boards]]\nname = \"research\"\ndb = \"{}\"\n",
        db.display()
    ));
    let fleet = Fleet::start("board", scratch, sims, &body, &[]);
    fleet.snapshot_when("the board read, and every agent", |s| {
        s.tasks.board.value().is_some_and(|b| !b.cards.is_empty())
            && s.agents.value().is_some_and(|a| a.len() == 3)
    });
    let notifications = fleet.notifications_when("for the crashed cards", |t| {
        t.iter().any(|t| t.contains("Research item 8"))
    });
    eprintln!("notifications: {notifications:#?}");
    let seen = fleet.first_screen();
    assert_first_screen(
        "board",
        &seen,
        &[
            "✖ card Research item 8 · crashed: the worker process died",
            "✖ card Research item 9 · crashed: the worker process died",
            "▲ 8 cards · blocked: needs input",
        ],
        &["min", "echo", "mira"],
    );
    let blocked = seen
        .lines
        .iter()
        .find(|l| l.text.contains("8 cards"))
        .unwrap();
    assert_eq!(
        blocked.href, "#board",
        "the folded line leads to the board, which lists them"
    );
    assert_words_not_ids("board", &notifications);
}

/// An audit log beside the fleet where `name` exchanged a message a minute ago: these agents
/// are watched.
fn fleet_audit_log(scratch: &Scratch, name: &str) -> PathBuf {
    scratch.audit_log(name, 60.0)
}

// ---------------------------------------------------------------------------------------------
// 3. A chain: a tunnel down takes a remote host down, and the agents on it
// ---------------------------------------------------------------------------------------------

/// Was (issue 43): each element of a chain its own red line (the tunnel's host, the remote
/// host, each agent on it), though one cause takes them all down.
#[test]
fn a_chain_of_dependencies() {
    let scratch = Scratch::new();
    let mut sol = SimAgent::healthy("sol", Wire::V1);
    sol.skills = 0;
    let sims = vec![Sim::healthy("echo", Wire::V1), Sim::start(sol)];
    let lab = refused_endpoint();
    let mut body = String::new();
    for (name, sim) in ["echo", "sol"].iter().zip(&sims) {
        let audit = fleet_audit_log(&scratch, name);
        body.push_str(&support::agent_toml(name, &sim.endpoint, "auto", &audit));
    }
    for name in ["vega", "kai", "mira"] {
        let audit = fleet_audit_log(&scratch, name);
        body.push_str(&support::agent_toml(
            name,
            &refused_endpoint(),
            "auto",
            &audit,
        ));
        body.push_str("depends_on = [\"host:LAB\"]\n\n");
    }
    body.push_str(&format!(
        "[[hosts]]\nname = \"laptop\"\nsource = \"local\"\n\
         [[hosts.tunnels]]\nname = \"lab\"\naddress = \"{}\"\n\n\
         [[hosts]]\nname = \"LAB\"\nsource = \"node_exporter\"\nurl = \"{lab}metrics\"\n",
        address(&lab)
    ));
    let fleet = Fleet::start("chain", scratch, sims, &body, &[]);
    fleet.snapshot_when("LAB and its agents down behind the tunnel", |s| {
        s.folds.iter().any(|f| f.rows.len() >= 5) && s.agents.value().is_some_and(|a| a.len() == 5)
    });
    let notifications = fleet.notifications_when("for the tunnel and sol", |t| {
        let all = t.join(" | ");
        all.contains("lab on laptop") && all.contains("sol")
    });
    eprintln!("notifications: {notifications:#?}");
    let seen = fleet.first_screen();
    assert_first_screen(
        "chain",
        &seen,
        &[
            "✖ agent kai and 3 more down · tunnel lab on laptop is down",
            "✖ agent sol · its card lists no skills: it cannot be given work",
        ],
        &["vega", "kai", "mira", "LAB", "sol", "echo"],
    );
    assert_eq!(
        seen.lines[0].href, "#host-laptop",
        "the line leads to the tunnel's host"
    );
    // The tunnel's notification names what it takes down; theirs wait under it.
    assert!(
        notifications
            .iter()
            .any(|n| n.contains("tunnel lab on laptop") && n.contains("takes down")),
        "{notifications:#?}"
    );
    assert!(
        !notifications
            .iter()
            .any(|n| n.lines().next().unwrap_or_default().contains("vega")),
        "vega's own alert waits under the tunnel's: {notifications:#?}"
    );
    assert_words_not_ids("chain", &notifications);
}

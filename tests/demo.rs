//! `fleetdash demo`'s agents report to the hub: the real binary, its real intake and work queue
//! on loopback. After start the queue holds the demo's fixed scenario (owners, the three ACK
//! shapes, the blocker, the completions, the multi-tag race with exactly one owner, the task
//! nobody ACKs, the silent owner), and the report tokens are in no file the demo writes but
//! their own.

use crate::support;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use fleetdash::config::Config;
use fleetdash::demo::scenario::{RACERS, TASKS};
use fleetdash::queue::{Ack, ORPHANED_MESSAGE, QueueRules, TaskRow, WireState, WorkQueue};

/// The demo with its log (at info) in a file of its own; killed when dropped.
struct LoggedDemo {
    child: Child,
    intake: String,
}

impl LoggedDemo {
    fn start(state_dir: &Path, log: &Path) -> LoggedDemo {
        use std::os::unix::process::CommandExt;
        let mut child = support::fleetdash()
            .env("FLEETDASH_LOG", "info")
            .args(["demo", "--listen", "127.0.0.1:0", "--state-dir"])
            .arg(state_dir)
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(log).unwrap())
            .process_group(0)
            .spawn()
            .unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut intake = String::new();
        for line in stdout.lines() {
            let line = line.unwrap();
            if let Some(rest) = line.trim().strip_prefix("intake:") {
                intake = rest.split_whitespace().next().unwrap_or("").to_string();
            }
            if line.starts_with("Press ctrl-c") {
                break;
            }
        }
        assert!(
            intake.starts_with("http://127.0.0.1:"),
            "the demo printed no intake address"
        );
        LoggedDemo { child, intake }
    }
}

impl Drop for LoggedDemo {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files_under(&path, out);
        } else {
            out.push(path);
        }
    }
}

fn title_of(key: &str) -> &'static str {
    TASKS.iter().find(|t| t.key == key).unwrap().title
}

/// `(reporter, fields)` of each ACK event about `task_id` that was applied, in order.
fn applied_acks(db: &Path, task_id: &str) -> Vec<(String, serde_json::Value)> {
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT reporter, outcome, fields FROM events WHERE task_id = ?1 AND kind = 'ack' \
             ORDER BY seq",
        )
        .unwrap();
    stmt.query_map([task_id], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, String>(2)?,
        ))
    })
    .unwrap()
    .map(Result::unwrap)
    .filter(|(_, outcome, _)| outcome == "applied")
    .map(|(who, _, fields)| (who, serde_json::from_str(&fields).unwrap()))
    .collect()
}

#[test]
fn the_demo_agents_report_the_scenario_to_the_queue_and_their_tokens_stay_in_their_files() {
    let state = tempfile::tempdir().unwrap();
    let logs = tempfile::tempdir().unwrap();
    let log = logs.path().join("demo.log");
    let demo = LoggedDemo::start(state.path(), &log);
    let config_path = state.path().join("fleetdash.toml");
    let (config, rules) = Config::load(&config_path).unwrap();
    assert_eq!(
        config.intake.listen.map(|a| format!("http://{a}/")),
        Some(demo.intake.clone())
    );
    let db = config.work_queue.as_ref().unwrap().db.clone();
    assert!(db.starts_with(state.path()), "{}", db.display());

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let queue = runtime
        .block_on(WorkQueue::open(&db, QueueRules::of(&rules)))
        .unwrap();
    let by_title = |rows: &[TaskRow], key: &str| -> TaskRow {
        rows.iter()
            .find(|r| r.title == title_of(key))
            .unwrap_or_else(|| panic!("no task {key}: {rows:#?}"))
            .clone()
    };
    // The second act (the escalation taken up, the completions) is the last thing to happen.
    let deadline = Instant::now() + support::HANG_BUDGET;
    let rows = loop {
        let rows = runtime.block_on(queue.list()).unwrap();
        let done = |key: &str| {
            rows.iter()
                .any(|r| r.title == title_of(key) && r.state == WireState::Completed)
        };
        let taken_up = rows.iter().any(|r| {
            r.title == title_of("drill") && r.ack.as_ref().is_some_and(|a| a.by == "nova")
        });
        if done("brief") && done("review") && taken_up {
            break rows;
        }
        assert!(
            Instant::now() < deadline,
            "the demo's second act did not happen: {rows:#?}"
        );
        std::thread::sleep(Duration::from_millis(250));
    };
    assert_eq!(rows.len(), TASKS.len(), "{rows:#?}");
    assert!(rows.iter().all(|r| r.created_by == "operator"));

    // ACK owning with an ETA, kept alive by heartbeats.
    let logs_row = by_title(&rows, "logs");
    assert_eq!(logs_row.owner.as_deref(), Some("sol"));
    assert_eq!(logs_row.state, WireState::Working);
    let ack = logs_row.ack.clone().unwrap();
    assert_eq!(ack.by, "sol");
    assert!(
        matches!(ack.ack, Ack::Owning { eta: Some(eta) } if eta > ack.at),
        "{ack:?}"
    );
    // Completions, one sent as text under the Pulse plane's `content`.
    for (key, owner) in [("brief", "echo"), ("review", "kai")] {
        let row = by_title(&rows, key);
        assert_eq!(
            (row.owner.as_deref(), row.state),
            (Some(owner), WireState::Completed),
            "{row:?}"
        );
    }
    // Escalating to nova, who then ACKed owning: both in the events, in that order.
    let drill = by_title(&rows, "drill");
    assert_eq!(
        (drill.owner.as_deref(), drill.state),
        (Some("nova"), WireState::Working)
    );
    assert!(matches!(
        drill.ack.as_ref().unwrap().ack,
        Ack::Owning { .. }
    ));
    let acks = applied_acks(&db, &drill.id);
    let shapes: Vec<(&str, &str)> = acks
        .iter()
        .map(|(who, f)| (who.as_str(), f["ack"].as_str().unwrap()))
        .collect();
    assert_eq!(
        shapes,
        [("tam", "escalating"), ("nova", "owning")],
        "{acks:?}"
    );
    assert_eq!(acks[0].1["to"], "nova");
    // ACK blocked on something.
    let episode = by_title(&rows, "episode");
    assert_eq!(
        (episode.owner.as_deref(), episode.state),
        (Some("mira"), WireState::InputRequired)
    );
    assert!(
        matches!(&episode.ack.as_ref().unwrap().ack, Ack::Blocked { on } if on.contains("audio master")),
        "{episode:?}"
    );
    // A blocker report after an owning ACK.
    let disk = by_title(&rows, "disk");
    assert_eq!(
        (disk.owner.as_deref(), disk.state),
        (Some("min"), WireState::InputRequired)
    );
    assert!(matches!(disk.ack.as_ref().unwrap().ack, Ack::Owning { .. }));
    assert!(
        disk.blocked_on
            .as_deref()
            .is_some_and(|b| b.starts_with("LAB disk full")),
        "{disk:?}"
    );
    // The multi-tag race: exactly one owner, the two others recorded as yielded.
    let alerts = by_title(&rows, "alerts");
    let owner = alerts.owner.clone().expect("the race has an owner");
    assert!(RACERS.contains(&owner.as_str()), "{alerts:?}");
    assert_eq!(alerts.state, WireState::Working);
    assert_eq!(alerts.ack.as_ref().unwrap().by, owner);
    let losers: BTreeSet<&str> = RACERS.iter().copied().filter(|r| *r != owner).collect();
    assert_eq!(
        alerts
            .yielded
            .iter()
            .map(String::as_str)
            .collect::<BTreeSet<_>>(),
        losers
    );
    let owning: Vec<_> = applied_acks(&db, &alerts.id)
        .into_iter()
        .filter(|(_, f)| f["ack"] == "owning")
        .collect();
    assert_eq!(owning.len(), 1, "{owning:?}");
    // Nobody ACKs vega's task.
    let certs = by_title(&rows, "certs");
    assert_eq!(
        (certs.owner.as_deref(), certs.state, certs.ack.is_none()),
        (Some("vega"), WireState::Submitted, true)
    );
    assert!(applied_acks(&db, &certs.id).is_empty());
    // The demo's ACK limit makes it red at 60 s (the rules' clock, not the test's).
    let limits = QueueRules::of(&rules);
    let ack_limit = chrono::Duration::seconds(limits.ack_within_s as i64);
    let at_limit = fleetdash::queue::judge(
        &certs,
        &limits,
        &fleetdash::clock::Clocked::wall_only(certs.created_at + ack_limit),
    );
    assert_eq!(at_limit.band, fleetdash_model::Band::Red, "{at_limit:?}");
    assert!(
        at_limit
            .reason
            .as_deref()
            .is_some_and(|r| r.ends_with("taken it for 1 min")),
        "{at_limit:?}"
    );
    // juno owns its task and is never heard from again: WORKING until the watchdog orphans it.
    let archive = by_title(&rows, "archive");
    assert_eq!(archive.owner.as_deref(), Some("juno"));
    let juno_ack = archive.ack.clone().unwrap();
    assert_eq!(archive.last_report_at, Some(juno_ack.at), "{archive:?}");
    // The demo's stuck rule orphans it one minute after juno's ACK.
    let no_reply = chrono::Duration::seconds(limits.no_reply_s as i64);
    assert!(fleetdash::queue::judge::orphan_due(
        &TaskRow {
            state: WireState::Working,
            ..archive.clone()
        },
        &limits,
        &fleetdash::clock::Clocked::wall_only(juno_ack.at + no_reply)
    ));
    assert!(
        archive.state == WireState::Working
            || (archive.state == WireState::Failed
                && archive.status_message.as_deref() == Some(ORPHANED_MESSAGE)),
        "{archive:?}"
    );

    // Heartbeats from every agent that reports, naming the tasks it owns; none from juno or vega.
    let reports = runtime.block_on(queue.last_reports()).unwrap();
    let heartbeating: BTreeSet<&str> = reports
        .iter()
        .filter(|r| r.last_heartbeat_at.is_some())
        .map(|r| r.name.as_str())
        .collect();
    assert_eq!(
        heartbeating,
        BTreeSet::from(["echo", "kai", "min", "mira", "nova", "sol", "tam"]),
        "{reports:?}"
    );
    let sol = reports.iter().find(|r| r.name == "sol").unwrap();
    assert!(sol.in_flight.contains(&logs_row.id), "{sol:?}");
    runtime.block_on(queue.close()).unwrap();

    // `fleetdash tasks` shows the same rows.
    let out = support::fleetdash()
        .args(["tasks", "--config"])
        .arg(&config_path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let line_of = |key: &str| {
        text.lines()
            .find(|l| l.contains(&format!("\"{}\"", title_of(key))))
            .unwrap_or_else(|| panic!("no {key} in\n{text}"))
            .to_string()
    };
    assert!(line_of("drill").contains("owning (nova"), "{text}");
    assert!(line_of("episode").contains("blocked (mira)"), "{text}");
    assert!(
        line_of("disk").contains("blocked on LAB disk full"),
        "{text}"
    );
    assert!(line_of("certs").contains("no ACK"), "{text}");
    assert!(
        line_of("alerts").contains(&format!("owning ({owner}")),
        "{text}"
    );
    assert!(line_of("brief").contains("COMPLETED"), "{text}");

    // Each agent's report token: in its own 0600 file, and in no other file the demo wrote
    // (config, snapshot, state, the queue's files) nor in its log.
    drop(demo);
    let mut files = Vec::new();
    files_under(state.path(), &mut files);
    files.push(log.clone());
    let token_dir = state.path().join("report-tokens");
    let mut tokens = 0;
    for agent in &config.agents {
        let Some(fleetdash::config::TokenSource::File(path)) = &agent.report_token else {
            panic!("{} has no report token file", agent.name);
        };
        assert_eq!(path.parent(), Some(token_dir.as_path()));
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{}", path.display());
        let token = std::fs::read_to_string(path).unwrap().trim().to_string();
        assert!(token.len() >= 32, "{}", agent.name);
        for file in &files {
            if file == path {
                continue;
            }
            let bytes = std::fs::read(file).unwrap();
            assert!(
                !bytes.windows(token.len()).any(|w| w == token.as_bytes()),
                "{}'s report token is in {}",
                agent.name,
                file.display()
            );
        }
        tokens += 1;
    }
    assert_eq!(tokens, 11);
    // The log is the demo's (it says where the intake listens), so the search above means it.
    let log_text = std::fs::read_to_string(&log).unwrap();
    assert!(log_text.contains("intake listening on"), "{log_text}");
    assert!(!log_text.contains("refused a report"), "{log_text}");
}

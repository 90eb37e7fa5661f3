//! The work queue's way into status.json (`tasks.queue[]`, `sections.queue`): the real CLI
//! (`fleetdash task assign`, `fleetdash collect`, `fleetdash run`) on real SQLite files.
//! A one-shot `collect` reads the queue without writing it or creating anything beside it; a
//! file that is not a work queue is the part's error while the other sections stay whole; in
//! `run` the watchdog shares the queue's one writer, fails an orphaned task once (one
//! escalation line) and the snapshot shows it red.

mod support;

use std::path::{Path, PathBuf};
use std::time::Instant;

use chrono::{Duration, Utc};
use fleetdash::queue::{Ack, ORPHANED_MESSAGE, Report, ReportKind, Reporter, WorkQueue};
use fleetdash_model::{Band, Probe, QueueTask, Snapshot};
use support::Scratch;

/// A config whose queue lives in a folder of its own (`queue/tasks.db`), so that anything
/// created beside it is seen; `extra` adds sections.
fn queue_config(scratch: &Scratch, extra: &str) -> (PathBuf, PathBuf) {
    let config = scratch.config(&format!("[work_queue]\ndb = \"queue/tasks.db\"\n\n{extra}"));
    (config, scratch.path().join("queue/tasks.db"))
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// `fleetdash task assign --to sol TITLE`; the new task's id (the line's first word).
fn assign(config: &Path, title: &str) -> String {
    let out = support::fleetdash()
        .args(["task", "assign", "--to", "sol", "--config"])
        .arg(config)
        .arg(title)
        .output()
        .unwrap();
    support::assert_success(&out);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    stdout.split_whitespace().next().unwrap().to_string()
}

fn collect(scratch: &Scratch, config: &Path) -> Snapshot {
    support::assert_success(&scratch.collect(config));
    scratch.snapshot()
}

fn queue_rows(snap: &Snapshot) -> &[QueueTask] {
    snap.tasks
        .queue
        .value()
        .unwrap_or_else(|| panic!("tasks.queue is not rows: {:?}", snap.tasks.queue))
}

/// Applies `report` to the queue file (as the intake would), then closes it.
fn apply(db: &Path, report: Report) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let rules = fleetdash::queue::QueueRules::of(
            &fleetdash::config::Rules::parse(Path::new("rules.yaml"), support::DEFAULT_RULES)
                .unwrap(),
        );
        let q = WorkQueue::open(db, rules).await.unwrap();
        q.apply(report).await.unwrap();
        q.close().await.unwrap();
    });
}

fn ack_owning(task: &str, at: chrono::DateTime<Utc>) -> Report {
    Report {
        from: Reporter::Agent("sol".into()),
        message_id: format!("ack-{task}"),
        context_id: None,
        received_at: at,
        kind: ReportKind::Ack {
            task_id: task.into(),
            ack: Ack::Owning { eta: None },
        },
    }
}

#[test]
fn an_assigned_task_reaches_status_json_and_collect_writes_nothing_beside_the_queue() {
    let scratch = Scratch::new();
    let (config, db) = queue_config(&scratch, "");
    let id = assign(&config, "rotate the LAB keys");
    let dir = db.parent().unwrap();
    let before = files_in(dir);
    assert_eq!(before, ["tasks.db"], "the CLI closed the queue cleanly");
    let bytes = std::fs::read(&db).unwrap();

    let snap = collect(&scratch, &config);
    assert_eq!(
        files_in(dir),
        before,
        "collect created nothing beside the queue"
    );
    assert_eq!(
        std::fs::read(&db).unwrap(),
        bytes,
        "collect wrote nothing into it"
    );
    assert!(snap.sections.queue.configured);
    assert!(snap.sections.queue.checked_at.is_some());
    assert!(!snap.sections.queue.stale, "{:?}", snap.stale_reasons);
    assert!(
        snap.sections.tasks.configured,
        "the queue is a part of tasks"
    );
    assert_eq!(
        snap.rules.ack_within_s, 600,
        "the rules file's ack.within_seconds"
    );
    let rows = queue_rows(&snap);
    assert_eq!(rows.len(), 1);
    let row = &rows[0];
    assert_eq!(row.id, id);
    assert_eq!(row.title, "rotate the LAB keys");
    assert_eq!(row.owner.as_deref(), Some("sol"));
    assert_eq!(row.state, "TASK_STATE_SUBMITTED");
    assert!(row.ack.is_none());
    assert_eq!((row.band, row.reason.as_deref()), (Band::Green, None));
    assert!(!row.stale);

    // sol ACKs owning: the next collect shows who owns it and how.
    apply(&db, ack_owning(&id, Utc::now()));
    let snap = collect(&scratch, &config);
    let row = &queue_rows(&snap)[0];
    assert_eq!(row.state, "TASK_STATE_WORKING");
    let ack = row.ack.as_ref().expect("the ACK");
    assert_eq!((ack.kind.as_str(), ack.by.as_str()), ("owning", "sol"));
    assert_eq!(row.band, Band::Green);
}

/// An unACKed task past `ack.within_seconds` is red in status.json and snapshot.html, and its
/// turning red is a `queue:<id>` transition. The limit is lowered in the rules file between two
/// collects, so that no test waits out the shipped 10 minutes.
#[test]
fn an_unacked_task_past_the_limit_is_red_everywhere_and_a_transition() {
    let scratch = Scratch::new();
    let (config, _db) = queue_config(&scratch, "");
    let id = assign(&config, "renew the prod certificate");
    let snap = collect(&scratch, &config);
    let created = queue_rows(&snap)[0].created_at;
    assert_eq!(queue_rows(&snap)[0].band, Band::Green);

    let rules = support::DEFAULT_RULES.replace("within_seconds: 600", "within_seconds: 1");
    assert_ne!(rules, support::DEFAULT_RULES);
    std::fs::write(scratch.path().join("rules.yaml"), rules).unwrap();
    // The limit must have passed since the task was created: wait for that, not for a time.
    while Utc::now() < created + Duration::seconds(2) {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let snap = collect(&scratch, &config);
    let row = &queue_rows(&snap)[0];
    assert_eq!(row.band, Band::Red, "{row:?}");
    let reason = row.reason.clone().unwrap();
    assert!(reason.starts_with("no ACK for "), "{reason}");
    assert!(reason.ends_with("nobody owns it"), "{reason}");
    assert_eq!(snap.rules.ack_within_s, 1);
    let key = format!("queue:{id}");
    let turned = snap
        .transitions
        .iter()
        .find(|t| t.key == key)
        .unwrap_or_else(|| panic!("no {key} transition in {:?}", snap.transitions));
    assert_eq!((turned.from, turned.to), (Some(Band::Green), Band::Red));
    let html = std::fs::read_to_string(scratch.path().join("out/snapshot.html")).unwrap();
    assert!(html.contains("renew the prod certificate"), "{html}");
    assert!(html.contains("nobody owns it"), "{html}");
}

/// A queue file that is not one (garbage bytes) is `"error: ..."` naming the file; the other
/// sections of the same pass are whole, and the file is left as it was.
#[test]
fn a_corrupt_queue_is_an_error_naming_the_file_and_the_rest_stays_whole() {
    let scratch = Scratch::new();
    let backups = scratch.path().join("backups");
    std::fs::create_dir_all(&backups).unwrap();
    std::fs::write(backups.join("fleet-2026.tar"), b"x").unwrap();
    let (config, db) = queue_config(
        &scratch,
        &format!(
            "[backups]\nname = \"fleet\"\ndir = \"{}\"\n",
            backups.display()
        ),
    );
    std::fs::create_dir_all(db.parent().unwrap()).unwrap();
    let garbage = vec![0x5a_u8; 8192];
    std::fs::write(&db, &garbage).unwrap();

    let snap = collect(&scratch, &config);
    let Probe::Error(reason) = &snap.tasks.queue else {
        panic!("not an error: {:?}", snap.tasks.queue)
    };
    assert!(reason.contains(&db.display().to_string()), "{reason}");
    assert!(reason.contains("not a SQLite database"), "{reason}");
    let text = scratch.snapshot_text();
    assert!(text.contains("\"error: "), "the error is written as such");
    assert!(snap.sections.queue.checked_at.is_some(), "read, and failed");
    assert!(snap.backups.value().is_some(), "{:?}", snap.backups);
    assert_eq!(std::fs::read(&db).unwrap(), garbage, "left untouched");
    assert_eq!(files_in(db.parent().unwrap()), ["tasks.db"]);
}

/// `fleetdash run` with a work queue: the watchdog shares the queue's writer, fails the WORKING
/// task nobody reported on for `stuck.no_reply_seconds` with the orphan message, writes ONE
/// escalation line for it, and the snapshot shows it red; SIGTERM stops it all cleanly.
#[test]
fn the_watchdog_in_run_orphans_once_and_the_snapshot_shows_it_red() {
    let scratch = Scratch::new();
    let (config, db) = queue_config(&scratch, "[cadence]\nqueue = \"1s\"\n");
    let id = assign(&config, "drain the LAB queue");
    // sol owned it ten minutes ago and has said nothing since: past the 300 s rule, not the
    // worker-died hour.
    apply(&db, ack_owning(&id, Utc::now() - Duration::minutes(10)));

    let mut child = support::fleetdash()
        .args(["run", "--config"])
        .arg(&config)
        .spawn()
        .unwrap();
    let escalations = scratch.path().join("state/escalations.jsonl");
    let started = Instant::now();
    let orphaned_at = loop {
        assert!(
            started.elapsed() < support::HANG_BUDGET,
            "run never showed the orphan"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
        let Ok(bytes) = std::fs::read(scratch.status_path()) else {
            continue;
        };
        let snap: Snapshot = serde_json::from_slice(&bytes).unwrap();
        let Some(row) = snap.tasks.queue.value().and_then(|r| r.first()) else {
            continue;
        };
        if row.state == "TASK_STATE_FAILED" {
            assert_eq!(row.band, Band::Red);
            assert_eq!(row.status_message.as_deref(), Some(ORPHANED_MESSAGE));
            assert_eq!(row.reason.as_deref(), Some("orphaned: no reply produced"));
            break snap.sections.queue.checked_at.unwrap();
        }
    };
    // More sweeps and reads after it: the orphan still fires only once.
    loop {
        assert!(
            started.elapsed() < support::HANG_BUDGET,
            "run stopped reading"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
        let snap = scratch.snapshot();
        if snap
            .sections
            .queue
            .checked_at
            .is_some_and(|at| at >= orphaned_at + Duration::seconds(3))
        {
            break;
        }
    }
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
    }
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    let lines = std::fs::read_to_string(&escalations).unwrap();
    let lines: Vec<&str> = lines.lines().collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains(&id), "{}", lines[0]);
    // The writer was closed with the run: nothing but the file is left beside it.
    assert_eq!(files_in(db.parent().unwrap()), ["tasks.db"]);
}

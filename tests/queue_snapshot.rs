//! The work queue's way into status.json (`tasks.queue[]`, `sections.queue`): the real CLI
//! (`fleetdash task assign`, `fleetdash collect`, `fleetdash run`) on real SQLite files.
//! A one-shot `collect` reads the queue without writing it or creating anything beside it; a
//! file that is not a work queue is the part's error while the other sections stay whole; in
//! `run` the watchdog shares the queue's one writer, fails an orphaned task once (one
//! escalation line) and the snapshot shows it red. A row the reader cannot read is red on its
//! own while the others are listed and swept; finished tasks past the rules' retention and
//! dismissed ones (`fleetdash task dismiss`) leave status.json, counted.

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
    assert!(reason.contains("taken it for "), "{reason}");
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
    assert!(html.contains("taken it for "), "{html}");
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

/// Edits the queue file as a newer build, a hand edit or a bad restore might: `sql` with `?1`
/// the task's id, the file's own CHECKs off.
fn corrupt(db: &Path, sql: &str, id: &str) {
    let c = rusqlite::Connection::open(db).unwrap();
    c.pragma_update(None, "ignore_check_constraints", true)
        .unwrap();
    assert_eq!(c.execute(sql, [id]).unwrap(), 1, "{sql}");
}

fn completion(task: &str, at: chrono::DateTime<Utc>) -> Report {
    Report {
        from: Reporter::Agent("sol".into()),
        message_id: format!("done-{task}"),
        context_id: None,
        received_at: at,
        kind: ReportKind::Completion {
            task_id: task.into(),
            state: fleetdash::queue::WireState::Failed,
        },
    }
}

/// Issue 21: one row the reader could not read turned the whole `tasks.queue` into one error.
/// Now status.json lists the others and the bad one red on its own with its id and why (the
/// column and its value), and snapshot.html says the same.
#[test]
fn an_unreadable_row_is_red_on_its_own_and_the_others_stay() {
    let scratch = Scratch::new();
    let (config, db) = queue_config(&scratch, "");
    let good = assign(&config, "rotate the LAB keys");
    let bad = assign(&config, "drain the LAB queue");
    let odd = assign(&config, "renew the prod certificate");
    corrupt(
        &db,
        "UPDATE tasks SET state = 'TASK_STATE_PAUSED' WHERE id = ?1",
        &bad,
    );
    corrupt(
        &db,
        "UPDATE tasks SET ack_kind = 'nodding', ack_by = 'sol', ack_at = 1 WHERE id = ?1",
        &odd,
    );

    let snap = collect(&scratch, &config);
    let rows = queue_rows(&snap);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(
        (rows[0].id.as_str(), rows[0].band),
        (good.as_str(), Band::Green)
    );
    let unreadable = &snap.tasks.queue_unreadable;
    assert_eq!(unreadable.len(), 2, "{unreadable:?}");
    let said = |id: &str| unreadable.iter().find(|u| u.id == id).unwrap();
    let paused = said(&bad);
    assert_eq!(paused.band, Band::Red);
    assert!(paused.stale);
    assert_eq!(
        paused.reason,
        "state \"TASK_STATE_PAUSED\": not a task state this fleetdash knows"
    );
    assert_eq!(
        said(&odd).reason,
        "ack_kind \"nodding\": not an ACK kind this fleetdash knows"
    );
    assert_eq!(snap.verdict().red, 2, "each counts red on its own");
    let html = std::fs::read_to_string(scratch.path().join("out/snapshot.html")).unwrap();
    assert!(html.contains(&format!("id=\"queue-{bad}\"")), "{html}");
    assert!(
        html.contains("not a task state this fleetdash knows"),
        "{html}"
    );
    assert!(
        html.contains("rotate the LAB keys"),
        "the others stay: {html}"
    );
    // `fleetdash tasks` says it too, red first, with its id and why.
    let tasks = support::fleetdash()
        .args(["tasks", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    support::assert_success(&tasks);
    let listed = String::from_utf8_lossy(&tasks.stdout);
    let lines: Vec<&str> = listed.lines().collect();
    assert_eq!(lines.len(), 4, "a header and three rows: {listed}");
    let line = lines.iter().find(|l| l.starts_with(&bad)).unwrap();
    assert!(
        line.contains("✖ fail") && line.contains("unreadable: state \"TASK_STATE_PAUSED\""),
        "{listed}"
    );
    assert!(
        lines[3].starts_with(&good),
        "red first, the good one last: {listed}"
    );
}

/// The rules' retention: a finished task past `queue.finished_kept_max` (lowered to 1 in the
/// rules file) leaves status.json, counted, and the page says so; an open task always stays.
/// A dismissed one leaves too (`fleetdash task dismiss`), counted apart.
#[test]
fn finished_tasks_past_the_retention_and_dismissed_ones_leave_status_json_counted() {
    let scratch = Scratch::new();
    let (config, db) = queue_config(&scratch, "");
    let rules = support::DEFAULT_RULES.replace("finished_kept_max: 100", "finished_kept_max: 1");
    assert_ne!(rules, support::DEFAULT_RULES);
    std::fs::write(scratch.path().join("rules.yaml"), rules).unwrap();
    let open = assign(&config, "rotate the LAB keys");
    let old = assign(&config, "drain the LAB queue");
    let new = assign(&config, "renew the prod certificate");
    let now = Utc::now();
    apply(&db, completion(&old, now - Duration::minutes(2)));
    apply(&db, completion(&new, now - Duration::minutes(1)));

    let snap = collect(&scratch, &config);
    let ids: Vec<&str> = queue_rows(&snap).iter().map(|t| t.id.as_str()).collect();
    assert!(
        ids.contains(&open.as_str()) && ids.contains(&new.as_str()),
        "{ids:?}"
    );
    assert!(!ids.contains(&old.as_str()), "past the cap: {ids:?}");
    assert_eq!(snap.tasks.queue_left_out.finished, 1);
    assert_eq!(snap.tasks.queue_left_out.dismissed, 0);
    let html = std::fs::read_to_string(scratch.path().join("out/snapshot.html")).unwrap();
    assert!(html.contains("1 finished task not shown"), "{html}");

    // The operator dismisses the newest finished one: it leaves, the file keeps it, and it
    // keeps its place among the newest (the older one stays retired: its alert ended).
    let out = support::fleetdash()
        .args(["task", "dismiss", "--config"])
        .arg(&config)
        .arg(&new)
        .output()
        .unwrap();
    support::assert_success(&out);
    let snap = collect(&scratch, &config);
    let ids: Vec<&str> = queue_rows(&snap).iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, [open.as_str()], "only the open task");
    let left = &snap.tasks.queue_left_out;
    assert_eq!((left.finished, left.dismissed), (1, 1));
    assert_eq!(
        left.ended
            .iter()
            .map(|e| (e.id.as_str(), e.how.as_str()))
            .collect::<Vec<_>>(),
        [(new.as_str(), "dismissed")],
        "said once, for its alert"
    );
    let tasks = support::fleetdash()
        .args(["tasks", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    support::assert_success(&tasks);
    let listed = String::from_utf8_lossy(&tasks.stdout);
    for id in [&open, &old, &new] {
        assert!(
            listed.contains(id.as_str()),
            "the file keeps {id}: {listed}"
        );
    }
    let (_, dismissed) = listed
        .split_once("dismissed (not on the dashboard):")
        .unwrap_or_else(|| panic!("{listed}"));
    assert!(
        dismissed.contains(&new) && dismissed.contains("(dismissed "),
        "{listed}"
    );
    assert!(!dismissed.contains(&old), "{listed}");
}

/// Issue 21: status.json carried every task ever created (~750 B a row: 864 KiB at 1,197).
/// With the shipped retention it lists the newest `queue.finished_kept_max` finished tasks and
/// every open one, counts the rest, and stays small.
#[test]
fn status_json_stays_small_however_many_tasks_finished() {
    let scratch = Scratch::new();
    let (config, db) = queue_config(&scratch, "");
    let rules =
        fleetdash::config::Rules::parse(Path::new("rules.yaml"), support::DEFAULT_RULES).unwrap();
    let kept = usize::try_from(rules.queue.finished_kept_max.count).unwrap();
    let (finished, open) = (1_200, 3);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let q = WorkQueue::open(&db, fleetdash::queue::QueueRules::of(&rules))
            .await
            .unwrap();
        // Finished within the last hour, well under finished_kept_seconds: the cap decides.
        let start = Utc::now() - Duration::hours(1);
        for i in 0..finished + open {
            let at = start + Duration::seconds(i64::try_from(i).unwrap());
            let report = Report {
                from: Reporter::Operator,
                message_id: format!("a{i}"),
                context_id: None,
                received_at: at,
                kind: ReportKind::Assign(fleetdash::queue::Assignment {
                    title: format!("rotate the LAB keys, part {i} of a long series of chores"),
                    owner: Some("sol".into()),
                    tagged: vec!["mira".into()],
                    deadline: None,
                }),
            };
            let id = q.apply(report).await.unwrap().task.unwrap().id;
            if i < finished {
                q.apply(completion(&id, at)).await.unwrap();
            }
        }
        q.close().await.unwrap();
    });
    let snap = collect(&scratch, &config);
    let rows = queue_rows(&snap);
    let done = rows
        .iter()
        .filter(|t| t.state == "TASK_STATE_FAILED")
        .count();
    assert_eq!((done, rows.len() - done), (kept, open));
    assert_eq!(
        usize::try_from(snap.tasks.queue_left_out.finished).unwrap(),
        finished - kept
    );
    let size = std::fs::metadata(scratch.status_path()).unwrap().len();
    let per_row = size / u64::try_from(rows.len()).unwrap();
    assert!(
        size < 150 * 1024,
        "status.json is {size} B for {} rows ({per_row} B a row)",
        rows.len()
    );
    let html = std::fs::read_to_string(scratch.path().join("out/snapshot.html")).unwrap();
    assert!(html.contains("1,100 finished tasks not shown"), "{html}");
}

/// `fleetdash run`, killed if the test fails before stopping it.
struct Run(Option<std::process::Child>);

impl Drop for Run {
    fn drop(&mut self) {
        if let Some(child) = &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// `fleetdash run` with a corrupt open row beside a stuck one: the watchdog's sweep passes the
/// bad row by at every tick (it failed whole before, so nothing was orphaned any more) and
/// orphans the good one, once; status.json shows both, the bad one red on its own.
#[test]
fn the_watchdog_in_run_passes_an_unreadable_row_by_and_orphans_the_stuck_one() {
    let scratch = Scratch::new();
    let (config, db) = queue_config(&scratch, "[cadence]\nqueue = \"1s\"\n");
    let stuck = assign(&config, "drain the LAB queue");
    let bad = assign(&config, "rotate the LAB keys");
    apply(&db, ack_owning(&stuck, Utc::now() - Duration::minutes(10)));
    corrupt(
        &db,
        "UPDATE tasks SET tagged = 'sol mira' WHERE id = ?1",
        &bad,
    );

    let mut run = Run(Some(
        support::fleetdash()
            .args(["run", "--config"])
            .arg(&config)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    ));
    let started = Instant::now();
    let snap = loop {
        assert!(
            started.elapsed() < support::HANG_BUDGET,
            "run never orphaned the stuck task"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
        let Ok(bytes) = std::fs::read(scratch.status_path()) else {
            continue;
        };
        let snap: Snapshot = serde_json::from_slice(&bytes).unwrap();
        let failed = snap.tasks.queue.value().is_some_and(|r| {
            r.iter()
                .any(|t| t.id == stuck && t.state == "TASK_STATE_FAILED")
        });
        if failed {
            break snap;
        }
    };
    let child = run.0.take().unwrap();
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{:?}", out.status);
    let unreadable = &snap.tasks.queue_unreadable;
    assert_eq!(unreadable.len(), 1, "{unreadable:?}");
    assert_eq!(unreadable[0].id, bad);
    assert!(
        unreadable[0].reason.starts_with("tagged \"sol mira\""),
        "{unreadable:?}"
    );
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        log.contains("work queue row not swept, it cannot be read") && log.contains(&bad),
        "{log}"
    );
    let lines = std::fs::read_to_string(scratch.path().join("state/escalations.jsonl")).unwrap();
    let lines: Vec<&str> = lines.lines().collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains(&stuck), "{}", lines[0]);
}

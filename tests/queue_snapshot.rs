//! The work queue's way into status.json (`tasks.queue[]`, `sections.queue`): the real CLI
//! (`fleetdash task assign`, `fleetdash collect`, `fleetdash run`) on real SQLite files.
//! A one-shot `collect` reads the queue without writing it or creating anything beside it; a
//! file that is not a work queue is the part's error while the other sections stay whole; in
//! `run` the watchdog shares the queue's one writer, fails an orphaned task once (one
//! escalation line) and the snapshot shows it red. A row the reader cannot read is red on its
//! own while the others are listed and swept; finished tasks past the rules' retention and
//! dismissed ones (`fleetdash task dismiss`) leave status.json, counted.
//!
//! Issue 43: a `collect` before the first `run` is not red and pages nobody (the file not
//! created yet is an empty queue; a path that cannot be one stays red); a WORKING task is red in
//! status.json from the no-reply limit, as `fleetdash tasks` says; and `run` reads the queue,
//! after a sweep, at the moment a task's verdict turns, not a cadence later.

use crate::support;

use crate::support::receiver;

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

/// `fleetdash run` on `config` with `FLEETDASH_LOG=info`, its log in `log`.
fn run_logging(config: &Path, log: &Path) -> Run {
    let mut cmd = support::fleetdash();
    cmd.env("FLEETDASH_LOG", "info")
        .args(["run", "--config"])
        .arg(config);
    Run(Some(support::spawn_logging_to(&mut cmd, log)))
}

/// Stops `run` with SIGTERM; fails unless it stopped cleanly.
fn stop(run: &mut Run) {
    let mut child = run.0.take().unwrap();
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
    }
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
}

/// The queue's row `id` in status.json, once `ok` holds of it (polled; a hang fails).
fn wait_row(scratch: &Scratch, id: &str, what: &str, ok: impl Fn(&QueueTask) -> bool) -> QueueTask {
    support::eventually(support::HANG_BUDGET, what, || {
        let bytes = std::fs::read(scratch.status_path()).map_err(|e| e.to_string())?;
        let snap: Snapshot = serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
        let row = snap
            .tasks
            .queue
            .value()
            .and_then(|rows| rows.iter().find(|t| t.id == id))
            .cloned();
        match row {
            Some(row) if ok(&row) => Ok(row),
            other => Err(format!("{other:?}")),
        }
    })
}

/// Issue 43, as a new user met it: `[work_queue]` in the config, its file not created yet, a
/// one-off `fleetdash collect`, then `fleetdash run` with an alert channel. Was: the queue red
/// ("no work queue file") in the collect's snapshot, and `run`'s first writes of the other
/// sections each counting that red again, so the first notification carried the queue's red
/// and its recovery together. Now the collect says there is no task yet (nothing is red,
/// nothing is created), `run` creates the file, and nothing about the queue reaches the
/// channel, however many passes the engine made.
#[test]
fn a_collect_before_the_first_run_is_not_red_and_pages_nobody() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let rx = rt.block_on(receiver::Receiver::start(receiver::Mode::Ok));
    let scratch = Scratch::new();
    let backups = scratch.path().join("backups");
    std::fs::create_dir_all(&backups).unwrap();
    std::fs::write(backups.join("fleet-2026.tar"), b"x").unwrap();
    // Several sections besides the queue, so that run writes others before its first read of
    // the queue, as on the user's fleet.
    let (config, db) = queue_config(
        &scratch,
        &format!(
            "[cadence]\nqueue = \"1s\"\nsystems = \"1s\"\ntunnels = \"1s\"\nbackups = \"1s\"\n\n\
             [[hosts]]\nname = \"here\"\nsource = \"local\"\n\n\
             [[hosts.tunnels]]\nname = \"alerts\"\naddress = \"{}\"\n\n\
             [backups]\nname = \"fleet\"\ndir = \"{}\"\n\n\
             [[alerts.channels]]\ntype = \"webhook\"\nurl = \"{}\"\n",
            rx.addr,
            backups.display(),
            rx.url("/hook"),
        ),
    );
    let queue_dir = db.parent().unwrap().to_path_buf();

    let snap = collect(&scratch, &config);
    assert_eq!(
        snap.tasks.queue,
        Probe::Unknown,
        "no task yet, and no error"
    );
    assert!(snap.sections.queue.configured && snap.sections.queue.checked_at.is_some());
    assert!(!snap.sections.queue.stale, "{:?}", snap.stale_reasons);
    assert!(
        !snap
            .transitions
            .iter()
            .any(|t| t.key.contains("queue") && t.to == Band::Red),
        "{:?}",
        snap.transitions
    );
    let html = std::fs::read_to_string(scratch.path().join("out/snapshot.html")).unwrap();
    assert!(
        html.contains("No tasks yet: fleetdash run creates the work queue."),
        "{html}"
    );
    assert!(!queue_dir.exists(), "collect created nothing");
    let tasks = support::fleetdash()
        .args(["tasks", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    support::assert_success(&tasks);
    assert!(
        String::from_utf8_lossy(&tasks.stdout)
            .starts_with("no tasks yet: fleetdash run creates the work queue"),
        "{}",
        String::from_utf8_lossy(&tasks.stdout)
    );

    let log = scratch.path().join("run.log");
    let mut run = run_logging(&config, &log);
    // Until the engine has counted the queue's section not red for as many passes as a
    // recovery needs: had anything about it fired, its Recovered would be due by then, and
    // both would be in the outbox (the engine puts its alerts there before saving its state).
    let engine = scratch.path().join("state/alerts-engine.json");
    let recover_after = fleetdash::config::Rules::parse(
        Path::new("rules.yaml"),
        &std::fs::read_to_string(scratch.path().join("rules.yaml")).unwrap(),
    )
    .unwrap()
    .alerts
    .recover_after
    .count;
    support::eventually(support::HANG_BUDGET, "the engine's passes", || {
        let state: serde_json::Value = std::fs::read(&engine)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .ok_or("no engine state yet")?;
        let track = &state["tracks"]["section:tasks.queue"];
        (track["clear_passes"].as_u64().unwrap_or(0) >= recover_after)
            .then_some(())
            .ok_or(format!("{track}"))
    });
    let snap = scratch.snapshot();
    assert_eq!(
        snap.tasks.queue,
        Probe::Value(vec![]),
        "run created the queue"
    );
    assert!(db.exists());
    stop(&mut run);
    let outbox =
        rusqlite::Connection::open(scratch.path().join("state/alerts-outbox.sqlite")).unwrap();
    let alerts: Vec<String> = outbox
        .prepare("SELECT alert_id FROM outbox ORDER BY enqueued_at")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(
        !alerts.iter().any(|a| a.contains("queue")),
        "the queue paged: {alerts:?}"
    );
    let posted: Vec<String> = rx
        .got()
        .iter()
        .map(|g| String::from_utf8_lossy(&g.body).into_owned())
        .collect();
    assert!(
        !posted.iter().any(|b| b.contains("tasks.queue")),
        "{posted:?}"
    );
    let log = std::fs::read_to_string(&log).unwrap();
    assert!(!log.contains("work queue not read"), "{log}");
}

/// A queue path that cannot be a work queue is broken, not new: red with why, in a `collect`
/// (a file where its folder should be) and when its folder cannot be written (read as a
/// process without root's power over permissions).
#[test]
fn a_queue_path_that_cannot_be_created_stays_red_with_why() {
    let scratch = Scratch::new();
    let (config, db) = queue_config(&scratch, "");
    std::fs::write(db.parent().unwrap(), b"not a folder").unwrap();
    let snap = collect(&scratch, &config);
    let Probe::Error(reason) = &snap.tasks.queue else {
        panic!("not an error: {:?}", snap.tasks.queue)
    };
    assert!(
        reason.contains("no work queue file, and fleetdash run cannot create it"),
        "{reason}"
    );
    assert!(reason.contains("is not a folder"), "{reason}");
    let turned = snap
        .transitions
        .iter()
        .find(|t| t.key == "section:tasks.queue")
        .unwrap_or_else(|| panic!("{:?}", snap.transitions));
    assert_eq!(turned.to, Band::Red);

    use std::os::unix::fs::PermissionsExt;
    let locked = scratch.path().join("locked");
    std::fs::create_dir(&locked).unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o555)).unwrap();
    let read = support::without_file_permission_override(|| {
        fleetdash::queue::rows::read_only(&locked.join("queue/tasks.db"))
    });
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
    let err = read.unwrap_err();
    assert!(err.contains("cannot write in"), "{err}");
    assert!(err.contains(&locked.display().to_string()), "{err}");
}

/// Issue 43: status.json had a WORKING task green at `quiet_s: 312`, past the 300 s rule, while
/// `fleetdash tasks` said it was orphaned (the queue is swept every 60 s). The collect after the
/// limit shows it red, in the sweep's words to come, as `fleetdash tasks` does; and each row
/// says when its verdict turns (`turns_in_s`), counted from the same observed moment as its
/// quiet time.
#[test]
fn a_working_task_is_red_at_the_collect_after_the_no_reply_limit() {
    let scratch = Scratch::new();
    let (config, db) = queue_config(&scratch, "");
    let id = assign(&config, "drain the LAB queue");
    let acked = Utc::now();
    apply(&db, ack_owning(&id, acked));
    let rules = support::fleet_rules();
    let snap = collect(&scratch, &config);
    let row = &queue_rows(&snap)[0];
    assert_eq!(row.state, "TASK_STATE_WORKING");
    assert_eq!(row.band, Band::Green, "{row:?}");
    let quiet = row.quiet_s.unwrap();
    assert_eq!(
        row.turns_in_s,
        Some(rules.no_reply_s - quiet),
        "turns when its quiet time reaches the rule: {row:?}"
    );

    // The rule lowered to 2 s, so that no test waits 5 minutes; then past it.
    let lowered =
        support::quick_grouping_rules().replace("no_reply_seconds: 300", "no_reply_seconds: 2");
    assert_ne!(lowered, support::quick_grouping_rules());
    std::fs::write(scratch.path().join("rules.yaml"), lowered).unwrap();
    while Utc::now() < acked + Duration::seconds(3) {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let snap = collect(&scratch, &config);
    let row = &queue_rows(&snap)[0];
    assert_eq!(
        row.state, "TASK_STATE_WORKING",
        "a collect sweeps nothing: still WORKING"
    );
    assert_eq!(row.band, Band::Red, "{row:?}");
    let reason = row.reason.clone().unwrap();
    assert!(
        reason.starts_with("no reply for ") && reason.ends_with(": orphaned at the next sweep"),
        "{reason}"
    );
    let quiet = row.quiet_s.unwrap();
    assert!(quiet >= 2, "{row:?}");
    assert_eq!(
        row.turns_in_s,
        Some(rules.worker_died_s - quiet),
        "next: worker died: {row:?}"
    );
    let turned = snap
        .transitions
        .iter()
        .find(|t| t.key == format!("queue:{id}"))
        .unwrap_or_else(|| panic!("{:?}", snap.transitions));
    assert_eq!((turned.from, turned.to), (Some(Band::Green), Band::Red));
    let tasks = support::fleetdash()
        .args(["tasks", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    support::assert_success(&tasks);
    let out = String::from_utf8_lossy(&tasks.stdout);
    let line = out.lines().find(|l| l.starts_with(&id)).unwrap();
    assert!(
        line.contains("fail")
            && line.contains("no reply for ")
            && line.contains(": orphaned at the next sweep"),
        "{out}"
    );
}

/// `fleetdash run` reads the queue, after a sweep, at the moment a task's verdict turns: the
/// queue's cadence is 9 minutes and its sweep hourly, yet a WORKING task reaching the no-reply
/// limit (3 s here) is orphaned, escalated once and shown so. The queue was read twice (at the
/// start, and at the turn, after the sweep orphaned it), not once a cadence.
#[test]
fn run_reads_the_queue_after_a_sweep_when_a_verdict_turns_not_a_cadence_later() {
    let scratch = Scratch::new();
    let quick = support::quick_grouping_rules();
    let rules = quick.replace("no_reply_seconds: 300", "no_reply_seconds: 3");
    assert_ne!(rules, quick);
    let rules_hourly = rules.replace("sweep_seconds: 60", "sweep_seconds: 3600");
    assert_ne!(rules_hourly, rules);
    let rules = rules_hourly;
    std::fs::write(scratch.path().join("rules.yaml"), &rules).unwrap();
    let (config, db) = queue_config(&scratch, "[cadence]\nqueue = \"9m\"\n");
    let id = assign(&config, "drain the LAB queue");
    // The owner's ACK stamped ahead of the hub's clock: a stamp ahead is taken as made when
    // first seen (issue 31), so its quiet time counts from run's first look at it, however
    // long run takes to start, and its turn is the no-reply limit after that.
    apply(&db, ack_owning(&id, Utc::now() + Duration::hours(1)));
    let log = scratch.path().join("run.log");
    let mut run = run_logging(&config, &log);
    let row = wait_row(&scratch, &id, "the task orphaned", |t| {
        t.state == "TASK_STATE_FAILED"
    });
    assert_eq!(row.status_message.as_deref(), Some(ORPHANED_MESSAGE));
    assert_eq!(
        (row.band, row.reason.as_deref()),
        (Band::Red, Some("orphaned: no reply produced"))
    );
    assert_eq!(row.turns_in_s, None, "finished: nothing turns");
    stop(&mut run);
    let log = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    let reads: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.contains("collected") && l.contains("section=tasks.queue"))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(reads.len(), 2, "the start and the turn: {log}");
    let orphaned = lines
        .iter()
        .position(|l| l.contains("work queue task orphaned") && l.contains(&id))
        .unwrap_or_else(|| panic!("{log}"));
    assert!(
        reads[0] < orphaned && orphaned < reads[1],
        "read, sweep at the turn, read: {log}"
    );
    let escalations =
        std::fs::read_to_string(scratch.path().join("state/escalations.jsonl")).unwrap();
    let escalations: Vec<&str> = escalations.lines().collect();
    assert_eq!(escalations.len(), 1, "{escalations:?}");
    assert!(escalations[0].contains(&id));
}

//! The work queue on real SQLite files with a controlled clock: reports applied durably and
//! once, ACK-then-own and the multi-tag race under concurrent callers, permissions, the
//! watchdog's FAILED transition and its one escalation line, worker died on its own, a kill -9
//! in the middle of a burst, and files that are not ours (corrupt, another program's, newer).

use crate::support;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use chrono::{DateTime, Duration, TimeZone, Utc};
use fleetdash::clock::Clocked;
use fleetdash::config::Rules;
use fleetdash::queue::schema::CURRENT_VERSION;
use fleetdash::queue::{
    Ack, Applied, Assignment, ORPHANED_MESSAGE, QueueRules, Refusal, Report, ReportKind, Reporter,
    SweepEvent, WireState, WorkQueue, judge,
};
use fleetdash::redact::RedactionGate;
use fleetdash::watchdog::sweep as watchdog;
use fleetdash::write::escalations::{self, Escalations};
use fleetdash_model::Band;

fn rules() -> Rules {
    Rules::parse(Path::new("config/rules.yaml"), support::DEFAULT_RULES).unwrap()
}

fn queue_rules() -> QueueRules {
    QueueRules::of(&rules())
}

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 10, 20, 22, 0, 0).unwrap()
}

fn secs(s: u64) -> Duration {
    Duration::seconds(i64::try_from(s).unwrap())
}

fn report(from: Reporter, message_id: &str, at: DateTime<Utc>, kind: ReportKind) -> Report {
    Report {
        from,
        message_id: message_id.into(),
        context_id: Some("ctx-1".into()),
        received_at: at,
        kind,
    }
}

fn agent(name: &str) -> Reporter {
    Reporter::Agent(name.into())
}

fn assign(owner: Option<&str>, tagged: &[&str]) -> ReportKind {
    ReportKind::Assign(Assignment {
        title: "rotate the LAB keys".into(),
        owner: owner.map(str::to_string),
        tagged: tagged.iter().map(|t| t.to_string()).collect(),
        deadline: None,
    })
}

fn ack(task: &str, ack: Ack) -> ReportKind {
    ReportKind::Ack {
        task_id: task.into(),
        ack,
    }
}

fn owning() -> Ack {
    Ack::Owning { eta: None }
}

async fn open(dir: &Path) -> WorkQueue {
    WorkQueue::open(&dir.join("tasks.db"), queue_rules())
        .await
        .unwrap()
}

/// Assigns a task from the operator at `at`; its id.
async fn new_task(q: &WorkQueue, id: &str, owner: Option<&str>, tagged: &[&str]) -> String {
    q.apply(report(Reporter::Operator, id, t0(), assign(owner, tagged)))
        .await
        .unwrap()
        .task
        .unwrap()
        .id
}

fn count(path: &Path, sql: &str) -> i64 {
    let c = rusqlite::Connection::open(path).unwrap();
    c.query_row(sql, [], |r| r.get(0)).unwrap()
}

#[tokio::test]
async fn an_assignment_is_a_row_that_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let q = open(dir.path()).await;
    let deadline = t0() + Duration::hours(2);
    let applied = q
        .apply(report(
            Reporter::Operator,
            "m1",
            t0(),
            ReportKind::Assign(Assignment {
                title: "rotate the LAB keys".into(),
                owner: Some("sol".into()),
                tagged: vec!["mira".into(), "sol".into(), "mira".into()],
                deadline: Some(deadline),
            }),
        ))
        .await
        .unwrap();
    assert!(!applied.duplicate);
    let row = applied.task.unwrap();
    assert!(row.id.starts_with("q_"), "{}", row.id);
    assert_eq!(row.owner.as_deref(), Some("sol"));
    assert_eq!(row.tagged, ["mira"], "the owner and repeats are not tags");
    assert_eq!(row.created_by, "operator");
    assert_eq!(row.state, WireState::Submitted);
    assert_eq!(row.deadline, Some(deadline));
    assert_eq!(row.provenance.context_id.as_deref(), Some("ctx-1"));
    let second = new_task(&q, "m2", None, &["nova"]).await;
    let listed: Vec<String> = q.list().await.unwrap().into_iter().map(|r| r.id).collect();
    assert_eq!(listed.len(), 2);
    assert!(listed.contains(&second));
    q.close().await.unwrap();
    // Closed: every connection is gone, the last one folded the WAL into the file.
    assert!(!wal(&dir.path().join("tasks.db")).exists());

    let q = open(dir.path()).await;
    assert_eq!(q.get(&row.id).await.unwrap(), Some(row));
    assert_eq!(q.get("q_nothing").await.unwrap(), None);
    q.close().await.unwrap();
}

#[tokio::test]
async fn a_retried_report_is_applied_once_and_answered_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("tasks.db");
    let q = open(dir.path()).await;
    let first = q
        .apply(report(
            Reporter::Operator,
            "m1",
            t0(),
            assign(Some("sol"), &["mira"]),
        ))
        .await
        .unwrap();
    let again = q
        .apply(report(
            Reporter::Operator,
            "m1",
            t0(),
            assign(Some("sol"), &["mira"]),
        ))
        .await
        .unwrap();
    assert_eq!(
        again,
        Applied {
            task: first.task.clone(),
            duplicate: true
        }
    );
    let id = first.task.unwrap().id;
    // The same id from another reporter is another report.
    let other = q
        .apply(report(agent("sol"), "m1", t0(), ack(&id, owning())))
        .await
        .unwrap();
    assert!(!other.duplicate);
    // A refusal that is recorded (already owned) is the answer to its retry too.
    let lost = report(agent("mira"), "m2", t0(), ack(&id, owning()));
    let refused = q.apply(lost.clone()).await.unwrap_err();
    assert_eq!(
        refused,
        Refusal::AlreadyOwned {
            task_id: id.clone(),
            owner: "sol".into()
        }
    );
    assert_eq!(q.apply(lost).await.unwrap_err(), refused);
    q.close().await.unwrap();
    assert_eq!(count(&db, "SELECT count(*) FROM tasks"), 1);
    assert_eq!(count(&db, "SELECT count(*) FROM events"), 3);
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM events WHERE outcome = 'already_owned'"
        ),
        1
    );
}

#[tokio::test]
async fn ack_then_own_in_its_three_shapes_and_yielding() {
    let dir = tempfile::tempdir().unwrap();
    let q = open(dir.path()).await;
    let at = t0() + Duration::minutes(3);
    let eta = t0() + Duration::minutes(45);

    // Owning with an ETA: WORKING, owned.
    let a = new_task(&q, "a", None, &["sol", "mira", "nova"]).await;
    let row = q
        .apply(report(
            agent("mira"),
            "1",
            at,
            ack(&a, Ack::Owning { eta: Some(eta) }),
        ))
        .await
        .unwrap()
        .task
        .unwrap();
    assert_eq!(row.owner.as_deref(), Some("mira"));
    assert_eq!(row.state, WireState::Working);
    let rec = row.ack.clone().unwrap();
    assert_eq!((rec.by.as_str(), rec.at), ("mira", at));
    assert_eq!(rec.ack, Ack::Owning { eta: Some(eta) });
    assert_eq!(row.last_report_at, Some(at));
    let row = q
        .apply(report(agent("nova"), "2", at, ack(&a, Ack::Yielded)))
        .await
        .unwrap()
        .task
        .unwrap();
    assert_eq!(row.yielded, ["nova"]);
    assert_eq!(
        row.ack.unwrap().by,
        "mira",
        "a yield is not the owner's ACK"
    );

    // Blocked on Y: INPUT_REQUIRED with its cause, amber; an owning ACK later clears it.
    let b = new_task(&q, "b", Some("sol"), &[]).await;
    let row = q
        .apply(report(
            agent("sol"),
            "3",
            at,
            ack(
                &b,
                Ack::Blocked {
                    on: "t_1a2b: LAB disk full".into(),
                },
            ),
        ))
        .await
        .unwrap()
        .task
        .unwrap();
    assert_eq!(row.state, WireState::InputRequired);
    assert_eq!(row.blocked_on.as_deref(), Some("t_1a2b: LAB disk full"));
    let v = judge(&row, &queue_rules(), &Clocked::wall_only(at));
    assert_eq!(
        (v.band, v.reason.as_deref()),
        (Band::Amber, Some("blocked on t_1a2b: LAB disk full"))
    );
    let row = q
        .apply(report(agent("sol"), "4", at, ack(&b, owning())))
        .await
        .unwrap()
        .task
        .unwrap();
    assert_eq!((row.state, row.blocked_on), (WireState::Working, None));

    // Escalating to X: X owns it and must ACK in its turn.
    let c = new_task(&q, "c", Some("sol"), &[]).await;
    let row = q
        .apply(report(
            agent("sol"),
            "5",
            at,
            ack(&c, Ack::Escalating { to: "echo".into() }),
        ))
        .await
        .unwrap()
        .task
        .unwrap();
    assert_eq!(row.owner.as_deref(), Some("echo"));
    assert_eq!(row.tagged, ["echo"]);
    assert_eq!(row.state, WireState::Submitted);
    let row = q
        .apply(report(agent("echo"), "6", at, ack(&c, owning())))
        .await
        .unwrap()
        .task
        .unwrap();
    assert_eq!(
        (row.state, row.ack.unwrap().by.as_str()),
        (WireState::Working, "echo")
    );

    // A blocker report and a completion.
    let row = q
        .apply(report(
            agent("echo"),
            "7",
            at,
            ReportKind::Blocker {
                task_id: c.clone(),
                on: "waiting for sol's review".into(),
            },
        ))
        .await
        .unwrap()
        .task
        .unwrap();
    assert_eq!(row.state, WireState::InputRequired);
    let row = q
        .apply(report(
            agent("echo"),
            "8",
            at,
            ReportKind::Completion {
                task_id: c.clone(),
                state: WireState::Completed,
            },
        ))
        .await
        .unwrap()
        .task
        .unwrap();
    assert_eq!((row.state, row.blocked_on), (WireState::Completed, None));
    q.close().await.unwrap();
}

#[tokio::test]
async fn reports_that_are_not_allowed_are_refused_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("tasks.db");
    let q = open(dir.path()).await;
    let id = new_task(&q, "a", Some("sol"), &["mira"]).await;
    let events = || count(&db, "SELECT count(*) FROM events");
    let before = events();
    let refusals = [
        // Lyra cannot even read it: to lyra it does not exist (issue 21).
        (
            report(agent("lyra"), "1", t0(), ack(&id, owning())),
            Refusal::UnknownTask(id.clone()),
        ),
        (
            report(agent("sol"), "2", t0(), ack("q_missing", owning())),
            Refusal::UnknownTask("q_missing".into()),
        ),
        (
            report(
                agent("sol"),
                "3",
                t0(),
                ReportKind::Completion {
                    task_id: id.clone(),
                    state: WireState::Working,
                },
            ),
            Refusal::Invalid(
                "a completion names a terminal state (COMPLETED, FAILED, CANCELED, REJECTED), \
                 not TASK_STATE_WORKING"
                    .into(),
            ),
        ),
        // Tagged, but sol owns it: only its owner reports progress.
        (
            report(
                agent("mira"),
                "4",
                t0(),
                ReportKind::Blocker {
                    task_id: id.clone(),
                    on: "x".into(),
                },
            ),
            Refusal::NotYours {
                task_id: id.clone(),
            },
        ),
    ];
    for (report, expected) in refusals {
        assert_eq!(q.apply(report).await.unwrap_err(), expected);
    }
    let invalid = [
        report(Reporter::Operator, "5", t0(), ack(&id, owning())),
        report(agent("sol"), "", t0(), ack(&id, owning())),
        report(agent("sol"), "6", t0(), ack(&id, Ack::Yielded)),
        report(Reporter::Operator, "7", t0(), assign(None, &[])),
        report(
            Reporter::Operator,
            "8",
            t0(),
            assign(Some("sol; rm -rf /"), &[]),
        ),
        report(
            Reporter::Operator,
            "9",
            t0(),
            ReportKind::Heartbeat {
                last_activity_at: None,
                in_flight: vec![],
            },
        ),
    ];
    for report in invalid {
        let got = q.apply(report.clone()).await.unwrap_err();
        assert!(matches!(got, Refusal::Invalid(_)), "{report:?}: {got:?}");
    }
    assert_eq!(events(), before, "a refusal writes nothing");
    // The operator may do anything: cancel it.
    let row = q
        .apply(report(
            Reporter::Operator,
            "10",
            t0(),
            ReportKind::Completion {
                task_id: id.clone(),
                state: WireState::Canceled,
            },
        ))
        .await
        .unwrap()
        .task
        .unwrap();
    assert_eq!(row.state, WireState::Canceled);
    let late = q
        .apply(report(agent("sol"), "11", t0(), ack(&id, owning())))
        .await
        .unwrap_err();
    assert!(
        matches!(&late, Refusal::Finished { state, .. } if state.is_terminal()),
        "{late:?}"
    );
    q.close().await.unwrap();
}

#[tokio::test]
async fn free_text_is_gated_and_never_kept_in_the_events() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("tasks.db");
    let q = open(dir.path()).await;
    let secret = "sk-ant-api03-PLANTEDabcdefghijklmnop0123456789";
    let row = q
        .apply(report(
            Reporter::Operator,
            "m",
            t0(),
            ReportKind::Assign(Assignment {
                title: format!("use {secret}\nthen {}", "x".repeat(300)),
                owner: Some("sol".into()),
                tagged: vec![],
                deadline: None,
            }),
        ))
        .await
        .unwrap()
        .task
        .unwrap();
    assert!(!row.title.contains(secret), "{}", row.title);
    assert!(!row.title.contains('\n'));
    assert!(row.title.chars().count() <= fleetdash::queue::store::TITLE_MAX_CHARS);
    q.apply(report(
        agent("sol"),
        "b",
        t0(),
        ack(
            &row.id,
            Ack::Blocked {
                on: format!("key {secret}"),
            },
        ),
    ))
    .await
    .unwrap();
    q.close().await.unwrap();
    let bytes = std::fs::read(&db).unwrap();
    let text = String::from_utf8_lossy(&bytes);
    assert!(!text.contains("PLANTED"), "a secret reached the file");
    let c = rusqlite::Connection::open(&db).unwrap();
    let fields: Vec<String> = c
        .prepare("SELECT fields FROM events")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(fields.iter().all(|f| !f.contains("then xxx")), "{fields:?}");
}

/// Every shape glued to each kind of neighbour (issue 21) in a title and a blocked-on reason:
/// nothing of them in the queue's files (the db, its WAL), nor in what the queue answers.
#[tokio::test]
async fn glued_secrets_in_titles_and_blocked_on_never_reach_the_files() {
    use support::secrets::{GLUED, find_secret};
    let dir = tempfile::tempdir().unwrap();
    let q = open(dir.path()).await;
    for (i, g) in GLUED.iter().enumerate() {
        let row = q
            .apply(report(
                Reporter::Operator,
                &format!("m{i}"),
                t0(),
                ReportKind::Assign(Assignment {
                    title: format!("use {}", g.value),
                    owner: Some("sol".into()),
                    tagged: vec![],
                    deadline: None,
                }),
            ))
            .await
            .unwrap()
            .task
            .unwrap();
        assert!(row.title.contains("[redacted]"), "{}", row.title);
        let blocked = q
            .apply(report(
                agent("sol"),
                &format!("b{i}"),
                t0(),
                ack(
                    &row.id,
                    Ack::Blocked {
                        on: g.value.clone(),
                    },
                ),
            ))
            .await
            .unwrap();
        let answered = format!("{row:?} {blocked:?}");
        if let Some(found) = find_secret(&answered) {
            panic!("{found} in the queue's answer: {answered}");
        }
    }
    // The files as they are while open (the WAL holds the writes), then once closed.
    let check = |when: &str| {
        for path in support::files_under(dir.path()) {
            let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
            if let Some(found) = find_secret(&text) {
                panic!("{found} reached {} {when}", path.display());
            }
        }
    };
    check("while open");
    q.close().await.unwrap();
    check("once closed");
}

/// §4.2: many tagged agents ACK owning at once; exactly one owns, every other one is told
/// who does and recorded as yielded.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_multi_tag_race_has_exactly_one_owner() {
    let dir = tempfile::tempdir().unwrap();
    let q = Arc::new(open(dir.path()).await);
    let agents: Vec<String> = (0..12).map(|i| format!("agent{i}")).collect();
    let tags: Vec<&str> = agents.iter().map(String::as_str).collect();
    for round in 0..10 {
        let id = new_task(&q, &format!("t{round}"), None, &tags).await;
        let start = Arc::new(tokio::sync::Barrier::new(agents.len()));
        let racers: Vec<_> = agents
            .iter()
            .map(|name| {
                let (q, id, name, start) = (q.clone(), id.clone(), name.clone(), start.clone());
                tokio::spawn(async move {
                    start.wait().await;
                    let r = report(
                        agent(&name),
                        &format!("ack-{round}"),
                        t0(),
                        ack(&id, owning()),
                    );
                    (name, q.apply(r).await)
                })
            })
            .collect();
        let mut winners = Vec::new();
        let mut losers = BTreeSet::new();
        for racer in racers {
            let (name, answer) = racer.await.unwrap();
            match answer {
                Ok(applied) => {
                    assert_eq!(applied.task.unwrap().owner.as_deref(), Some(name.as_str()));
                    winners.push(name);
                }
                Err(Refusal::AlreadyOwned { task_id, owner }) => {
                    assert_eq!(task_id, id);
                    losers.insert((name, owner));
                }
                Err(other) => panic!("{name}: {other:?}"),
            }
        }
        assert_eq!(winners.len(), 1, "round {round}: {winners:?}");
        let owner = &winners[0];
        assert_eq!(losers.len(), agents.len() - 1);
        assert!(losers.iter().all(|(_, o)| o == owner), "{losers:?}");
        let row = q.get(&id).await.unwrap().unwrap();
        assert_eq!(row.owner.as_ref(), Some(owner));
        let yielded: BTreeSet<String> = row.yielded.into_iter().collect();
        let expected: BTreeSet<String> = losers.into_iter().map(|(n, _)| n).collect();
        assert_eq!(yielded, expected);
    }
}

/// §3.5: WORKING with no report for `no_reply_seconds` becomes FAILED, orphaned, once, with one
/// escalation line; a sweep a second earlier does nothing.
#[tokio::test]
async fn the_watchdog_orphans_a_silent_working_task_once_with_one_escalation_line() {
    let dir = tempfile::tempdir().unwrap();
    let q = open(dir.path()).await;
    let r = queue_rules();
    let rules = rules();
    let id = new_task(&q, "a", Some("sol"), &[]).await;
    let quiet = new_task(&q, "b", Some("nova"), &[]).await;
    let acked = t0() + Duration::minutes(1);
    q.apply(report(agent("sol"), "1", acked, ack(&id, owning())))
        .await
        .unwrap();
    q.apply(report(agent("nova"), "2", acked, ack(&quiet, owning())))
        .await
        .unwrap();
    // nova's heartbeat names its task 30 s later: a report about it.
    let beat = acked + Duration::seconds(30);
    q.apply(report(
        agent("nova"),
        "3",
        beat,
        ReportKind::Heartbeat {
            last_activity_at: Some(beat),
            in_flight: vec![quiet.clone()],
        },
    ))
    .await
    .unwrap();

    let log = Escalations::new(dir.path(), &rules.state);
    let gate = RedactionGate::default();
    let limit = secs(r.no_reply_s);
    let early = q.sweep(acked + limit - secs(1)).await.unwrap();
    assert_eq!(early, []);
    let due = acked + limit;
    let events = q.sweep(due).await.unwrap();
    assert_eq!(events.len(), 1, "{events:?}");
    let SweepEvent::Orphaned { task } = &events[0] else {
        panic!("{events:?}")
    };
    assert_eq!(task.id, id);
    assert_eq!(task.state, WireState::Failed);
    assert_eq!(task.status_message.as_deref(), Some(ORPHANED_MESSAGE));
    assert_eq!(
        watchdog::escalate(
            &events,
            &log,
            &rules.no_reply,
            &gate,
            &Clocked::wall_only(due)
        )
        .unwrap(),
        1
    );
    let v = judge(task, &r, &Clocked::wall_only(due));
    assert_eq!(
        (v.band, v.reason.as_deref()),
        (Band::Red, Some("orphaned: no reply produced"))
    );
    // Once per task: later sweeps find it FAILED; nova's task falls due 30 s later.
    let later = q.sweep(due + secs(1)).await.unwrap();
    assert_eq!(later, []);
    let next = q.sweep(beat + limit).await.unwrap();
    assert_eq!(next.len(), 1);
    assert!(matches!(&next[0], SweepEvent::Orphaned { task } if task.id == quiet));
    assert_eq!(q.sweep(beat + limit * 2).await.unwrap(), []);

    let lines: Vec<serde_json::Value> =
        std::fs::read_to_string(dir.path().join(escalations::FILE_NAME))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["task_id"], id.as_str());
    assert_eq!(lines[0]["agent"], "sol");
    assert_eq!(lines[0]["state"], "TASK_STATE_FAILED");
    assert_eq!(lines[0]["cause"], ORPHANED_MESSAGE);
    assert_eq!(lines[0]["rule"]["no_reply_seconds"], r.no_reply_s);

    // The owner's late completion is the truth.
    let row = q
        .apply(report(
            agent("sol"),
            "4",
            due + secs(5),
            ReportKind::Completion {
                task_id: id.clone(),
                state: WireState::Completed,
            },
        ))
        .await
        .unwrap()
        .task
        .unwrap();
    assert_eq!(row.state, WireState::Completed);
    q.close().await.unwrap();
}

/// §3.5: the coarser condition is recorded on its own, once, and escalates nothing.
#[tokio::test]
async fn worker_died_is_recorded_once_without_a_follow_up() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("tasks.db");
    let q = open(dir.path()).await;
    let r = queue_rules();
    let rules = rules();
    let id = new_task(&q, "a", Some("sol"), &[]).await;
    q.apply(report(
        agent("sol"),
        "1",
        t0(),
        ack(
            &id,
            Ack::Blocked {
                on: "LAB disk full".into(),
            },
        ),
    ))
    .await
    .unwrap();
    let limit = secs(r.worker_died_s);
    assert_eq!(q.sweep(t0() + limit - secs(1)).await.unwrap(), []);
    let events = q.sweep(t0() + limit).await.unwrap();
    assert_eq!(events.len(), 1, "{events:?}");
    let SweepEvent::WorkerDied { task } = &events[0] else {
        panic!("{events:?}")
    };
    assert!(task.worker_died);
    assert_eq!(
        task.state,
        WireState::InputRequired,
        "not failed: only recorded"
    );
    let log = Escalations::new(dir.path(), &rules.state);
    assert_eq!(
        watchdog::escalate(
            &events,
            &log,
            &rules.no_reply,
            &RedactionGate::default(),
            &Clocked::wall_only(t0())
        )
        .unwrap(),
        0
    );
    assert!(!dir.path().join(escalations::FILE_NAME).exists());
    assert_eq!(q.sweep(t0() + limit * 2).await.unwrap(), []);
    assert_eq!(
        judge(task, &r, &Clocked::wall_only(t0() + limit)).band,
        Band::Red
    );
    q.close().await.unwrap();
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM events WHERE kind = 'worker_died'"
        ),
        1
    );
}

/// Issue 21: an open row the reader cannot read made every sweep fail, so nothing was orphaned
/// any more. Now it is passed by (said in the sweep's events, logged at each tick) and the good
/// stuck task beside it is still orphaned; the bad row is not touched. To an agent it is as
/// absent: read by id, listed or reported on.
#[tokio::test]
async fn the_sweep_passes_an_unreadable_open_row_by_and_orphans_the_good_one() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("tasks.db");
    let q = open(dir.path()).await;
    let r = queue_rules();
    let good = new_task(&q, "a", Some("sol"), &[]).await;
    let bad = new_task(&q, "b", Some("nova"), &[]).await;
    q.apply(report(agent("sol"), "1", t0(), ack(&good, owning())))
        .await
        .unwrap();
    q.apply(report(agent("nova"), "2", t0(), ack(&bad, owning())))
        .await
        .unwrap();
    q.close().await.unwrap();
    let edited = rusqlite::Connection::open(&db)
        .unwrap()
        .execute(
            "UPDATE tasks SET tagged = 'nova mira' WHERE id = ?1",
            [&bad],
        )
        .unwrap();
    assert_eq!(edited, 1);
    let before = count(&db, "SELECT count(*) FROM events");

    let q = open(dir.path()).await;
    let due = t0() + secs(r.no_reply_s);
    let events = q.sweep(due).await.expect("the sweep goes on");
    assert_eq!(events.len(), 2, "{events:?}");
    let orphaned: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            SweepEvent::Orphaned { task } => Some(task.id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(orphaned, [good.as_str()]);
    let unreadable: Vec<&fleetdash::queue::Unreadable> = events
        .iter()
        .filter_map(|e| match e {
            SweepEvent::Unreadable(u) => Some(u),
            _ => None,
        })
        .collect();
    assert_eq!(unreadable.len(), 1, "{events:?}");
    assert_eq!(unreadable[0].id, bad);
    assert!(
        unreadable[0]
            .reason
            .starts_with("tagged \"nova mira\": not a list of names"),
        "{}",
        unreadable[0].reason
    );
    // The next tick says it again (the caller logs it once per tick) and orphans nothing more.
    let again = q.sweep(due + secs(60)).await.unwrap();
    assert!(
        matches!(&again[..], [SweepEvent::Unreadable(u)] if u.id == bad),
        "{again:?}"
    );
    assert_eq!(
        q.get(&good).await.unwrap().unwrap().state,
        WireState::Failed
    );
    // To an agent (GetTask, ListTasks, a report) it is as absent: whose it is cannot be told.
    assert_eq!(q.get(&bad).await.unwrap(), None);
    let listed: Vec<String> = q.list().await.unwrap().into_iter().map(|t| t.id).collect();
    assert_eq!(listed, [good.as_str()]);
    let refused = q
        .apply(report(agent("nova"), "3", due, ack(&bad, owning())))
        .await
        .unwrap_err();
    assert_eq!(refused, Refusal::UnknownTask(bad.clone()));
    q.close().await.unwrap();
    assert_eq!(
        count(
            &db,
            &format!("SELECT count(*) FROM tasks WHERE id = '{bad}' AND tagged = 'nova mira'")
        ),
        1,
        "the bad row is left as it is"
    );
    assert_eq!(
        count(&db, "SELECT count(*) FROM events") - before,
        1,
        "one event: the good task's orphaning"
    );
}

/// Issue 21: `fleetdash task dismiss` is the operator's event, never a DELETE: the row stays
/// (dismissed_at set), the events say who and when. A finished task is dismissed as it is; an
/// open one is refused unless canceled first; an unknown id is refused naming it; twice changes
/// nothing.
#[tokio::test]
async fn a_dismissal_is_an_event_on_a_row_that_stays() {
    use fleetdash::queue::Dismissal;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("tasks.db");
    let q = open(dir.path()).await;
    let done = new_task(&q, "a", Some("sol"), &[]).await;
    let open_one = new_task(&q, "b", Some("sol"), &[]).await;
    let finished_at = t0() + Duration::minutes(5);
    q.apply(report(
        agent("sol"),
        "1",
        finished_at,
        ReportKind::Completion {
            task_id: done.clone(),
            state: WireState::Failed,
        },
    ))
    .await
    .unwrap();
    assert_eq!(
        q.get(&done).await.unwrap().unwrap().finished_at,
        Some(finished_at),
        "when it finished: the retention counts from it"
    );
    let at = t0() + Duration::hours(1);
    let Dismissal::Dismissed {
        task,
        canceled: false,
    } = q.dismiss(&done, false, at).await.unwrap()
    else {
        panic!("not dismissed")
    };
    let task = task.unwrap();
    assert_eq!(
        (task.dismissed_at, task.state),
        (Some(at), WireState::Failed)
    );
    assert_eq!(
        q.dismiss(&done, false, at + secs(60)).await.unwrap(),
        Dismissal::Already { at },
        "twice: nothing written"
    );
    assert_eq!(
        q.dismiss("q_nothere", false, at).await.unwrap_err(),
        Refusal::UnknownTask("q_nothere".into())
    );
    let Refusal::Invalid(why) = q.dismiss(&open_one, false, at).await.unwrap_err() else {
        panic!("an open task dismissed without --cancel")
    };
    assert!(
        why.contains(&open_one)
            && why.contains("still open (submitted)")
            && why.contains("--cancel"),
        "{why}"
    );
    assert_eq!(q.get(&open_one).await.unwrap().unwrap().dismissed_at, None);
    let Dismissal::Dismissed {
        task,
        canceled: true,
    } = q.dismiss(&open_one, true, at).await.unwrap()
    else {
        panic!("not canceled and dismissed")
    };
    let task = task.unwrap();
    assert_eq!(task.state, WireState::Canceled);
    assert_eq!((task.finished_at, task.dismissed_at), (Some(at), Some(at)));
    assert_eq!(task.context(), "ctx-1", "the task keeps its context");
    assert_eq!(task.provenance.reporter, "operator");
    // Nobody works on it: the watchdog leaves it alone, an agent's report is refused.
    assert_eq!(q.sweep(at + Duration::days(1)).await.unwrap(), []);
    q.close().await.unwrap();
    assert_eq!(
        count(&db, "SELECT count(*) FROM tasks"),
        2,
        "never a DELETE"
    );
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM events WHERE kind = 'dismiss' AND reporter_kind = 'operator'"
        ),
        2
    );
    assert_eq!(
        count(
            &db,
            &format!(
                "SELECT count(*) FROM events WHERE kind = 'completion' AND task_id = '{open_one}' \
                 AND reporter_kind = 'operator'"
            )
        ),
        1,
        "the cancel is an event of its own"
    );
}

#[tokio::test]
async fn heartbeats_record_each_agents_last_report() {
    let dir = tempfile::tempdir().unwrap();
    let q = open(dir.path()).await;
    let id = new_task(&q, "a", Some("sol"), &[]).await;
    let at = t0() + Duration::minutes(2);
    q.apply(report(agent("sol"), "1", t0(), ack(&id, owning())))
        .await
        .unwrap();
    q.apply(report(
        agent("sol"),
        "2",
        at,
        ReportKind::Heartbeat {
            last_activity_at: Some(at - Duration::seconds(10)),
            in_flight: vec![id.clone(), "t_elsewhere".into()],
        },
    ))
    .await
    .unwrap();
    let reports = q.last_reports().await.unwrap();
    assert_eq!(reports.len(), 1);
    let sol = &reports[0];
    assert_eq!(sol.name, "sol");
    assert_eq!(sol.last_report_at, at);
    assert_eq!(sol.last_heartbeat_at, Some(at));
    assert_eq!(sol.last_activity_at, Some(at - Duration::seconds(10)));
    assert_eq!(sol.in_flight, [id.clone(), "t_elsewhere".to_string()]);
    assert_eq!(q.get(&id).await.unwrap().unwrap().last_report_at, Some(at));
    q.close().await.unwrap();
}

#[tokio::test]
async fn a_file_that_is_not_a_work_queue_is_refused_by_name_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let rules = queue_rules();

    // Not SQLite at all.
    let text = dir.path().join("notes.db");
    std::fs::write(&text, "these are my notes, not a database\n".repeat(200)).unwrap();
    // A real queue with its pages damaged.
    let corrupt = dir.path().join("corrupt.db");
    {
        let q = WorkQueue::open(&corrupt, rules).await.unwrap();
        for i in 0..200 {
            q.apply(report(
                Reporter::Operator,
                &format!("m{i}"),
                t0(),
                assign(Some("sol"), &[]),
            ))
            .await
            .unwrap();
        }
        q.close().await.unwrap();
        let mut bytes = std::fs::read(&corrupt).unwrap();
        assert!(bytes.len() > 8192, "{}", bytes.len());
        // Every page but the first (the header and schema stay readable, so the damage is
        // what the check meets): one damaged page may be a free one, which no check reads.
        for b in &mut bytes[4096..] {
            *b = 0x5a;
        }
        std::fs::write(&corrupt, bytes).unwrap();
    }
    // A queue written by a newer fleetdash.
    let newer = dir.path().join("newer.db");
    {
        let q = WorkQueue::open(&newer, rules).await.unwrap();
        q.close().await.unwrap();
        let c = rusqlite::Connection::open(&newer).unwrap();
        c.pragma_update(None, "journal_mode", "DELETE").unwrap();
        c.pragma_update(None, "user_version", CURRENT_VERSION + 1)
            .unwrap();
    }
    let newer_said = format!(
        "work queue schema version {} is newer than this fleetdash reads ({CURRENT_VERSION})",
        CURRENT_VERSION + 1
    );
    for (path, expected) in [
        (&text, "not a SQLite database"),
        (&corrupt, "corrupt"),
        (&newer, newer_said.as_str()),
    ] {
        let before = std::fs::read(path).unwrap();
        let err = match WorkQueue::open(path, rules).await {
            Ok(_) => panic!("{} opened", path.display()),
            Err(e) => e,
        };
        assert!(
            err.starts_with(&path.display().to_string()),
            "the error names the file: {err}"
        );
        assert!(err.contains(expected), "{err}");
        assert_eq!(
            std::fs::read(path).unwrap(),
            before,
            "{} was changed",
            path.display()
        );
        assert!(
            !wal(path).exists(),
            "{}: a -wal was created",
            path.display()
        );
    }
}

fn wal(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push("-wal");
    PathBuf::from(name)
}

/// What the crash child prints for each answered report.
const ANSWERED: &str = "ANSWERED";
/// The crash child's threads.
const CRASH_CLIENTS: usize = 8;
/// Answers the parent waits for before it kills the child.
const ANSWERS_BEFORE_KILL: usize = 400;

/// kill -9 in the middle of a burst from concurrent clients: every report that was answered is
/// in the file, and the file opens clean.
#[test]
fn a_kill_mid_burst_loses_no_answered_report() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("tasks.db");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            // Its path in the one integration binary (tests/integration.rs).
            concat!(module_path!(), "::crash_child")
                .split_once("::")
                .map_or("crash_child", |(_, path)| path),
            "--nocapture",
            "--test-threads=1",
        ])
        .env("QUEUE_CRASH_DB", &db)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let (lines_tx, lines_rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in stdout.lines() {
            let Ok(line) = line else { break };
            if lines_tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut answered = Vec::new();
    let deadline = std::time::Instant::now() + support::HANG_BUDGET;
    while answered.len() < ANSWERS_BEFORE_KILL {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match lines_rx.recv_timeout(left) {
            Ok(line) if line.starts_with(ANSWERED) => answered.push(line),
            Ok(_) => {}
            Err(e) => {
                let _ = child.kill();
                panic!("the child gave {} answers, then {e}", answered.len());
            }
        }
    }
    // SIGKILL: no destructor, no flush, no checkpoint.
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert!(!status.success(), "the child was killed: {status}");
    reader.join().unwrap();
    answered.extend(lines_rx.try_iter().filter(|l| l.starts_with(ANSWERED)));

    let c = rusqlite::Connection::open(&db).unwrap();
    let check: String = c
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    let mut missing = Vec::new();
    for line in &answered {
        let parts: Vec<&str> = line.split(' ').collect();
        let [_, reporter, message_id, task_id] = parts[..] else {
            panic!("{line}")
        };
        let event: i64 = c
            .query_row(
                "SELECT count(*) FROM events WHERE reporter = ?1 AND message_id = ?2",
                [reporter, message_id],
                |r| r.get(0),
            )
            .unwrap();
        let task: i64 = c
            .query_row("SELECT count(*) FROM tasks WHERE id = ?1", [task_id], |r| {
                r.get(0)
            })
            .unwrap();
        if event != 1 || task != 1 {
            missing.push(line.clone());
        }
    }
    assert!(
        missing.is_empty(),
        "{} of {} answered reports are not in the file: {:?}",
        missing.len(),
        answered.len(),
        &missing[..missing.len().min(5)]
    );
    drop(c);
    // And fleetdash opens it again and goes on.
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let q = WorkQueue::open(&db, queue_rules()).await.unwrap();
        assert!(q.list().await.unwrap().len() >= ANSWERS_BEFORE_KILL / 2);
        q.close().await.unwrap();
    });
}

/// The crash test's child: `CRASH_CLIENTS` agents each assigning itself tasks and ACKing them,
/// for ever, printing each answer once it has it. Run only by the test above.
#[test]
#[ignore = "the child process of a_kill_mid_burst_loses_no_answered_report"]
fn crash_child() {
    let db = PathBuf::from(
        std::env::var_os("QUEUE_CRASH_DB")
            .expect("run by a_kill_mid_burst_loses_no_answered_report"),
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let q = Arc::new(WorkQueue::open(&db, queue_rules()).await.unwrap());
        let clients: Vec<_> = (0..CRASH_CLIENTS)
            .map(|c| {
                let q = q.clone();
                tokio::spawn(async move {
                    let name = format!("w{c}");
                    for i in 0.. {
                        let at = Utc::now();
                        let mid = format!("a{c}-{i}");
                        let task = q
                            .apply(report(agent(&name), &mid, at, assign(Some(&name), &[])))
                            .await
                            .unwrap()
                            .task
                            .unwrap()
                            .id;
                        println!("{ANSWERED} {name} {mid} {task}");
                        let mid = format!("k{c}-{i}");
                        q.apply(report(agent(&name), &mid, at, ack(&task, owning())))
                            .await
                            .unwrap();
                        println!("{ANSWERED} {name} {mid} {task}");
                    }
                })
            })
            .collect();
        for client in clients {
            client.await.unwrap();
        }
    });
}

/// A scratch config whose `[work_queue] db` is `state/tasks.db`; the config and the db paths.
fn queue_config(scratch: &support::Scratch) -> (PathBuf, PathBuf) {
    let config = scratch.config("[work_queue]\ndb = \"state/tasks.db\"\n");
    (config, scratch.path().join("state/tasks.db"))
}

/// `fleetdash task dismiss ID` through the binary: an unknown id fails naming it (and creates
/// no queue), an open task is refused without --cancel, a finished one is dismissed (an event,
/// the row stays: `fleetdash tasks` lists it among the dismissed), and twice says so and
/// changes nothing.
#[test]
fn task_dismiss_through_the_cli() {
    let scratch = support::Scratch::new();
    let (config, db) = queue_config(&scratch);
    let dismiss = |args: &[&str]| {
        support::fleetdash()
            .args(["task", "dismiss", "--config"])
            .arg(&config)
            .args(args)
            .output()
            .unwrap()
    };
    let out = dismiss(&["q_nothere"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no task q_nothere"), "{err}");
    assert!(
        !db.exists(),
        "nothing created for an id that cannot be there"
    );

    let assign = support::fleetdash()
        .args(["task", "assign", "--to", "sol", "--config"])
        .arg(&config)
        .arg("rotate the LAB keys")
        .output()
        .unwrap();
    support::assert_success(&assign);
    let id = String::from_utf8_lossy(&assign.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    let out = dismiss(&["q_nothere"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no task q_nothere in the work queue") && err.contains("tasks.db"),
        "{err}"
    );
    let out = dismiss(&[&id]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("still open") && err.contains("--cancel"),
        "{err}"
    );

    let out = dismiss(&["--cancel", &id]);
    support::assert_success(&out);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.starts_with(&format!(
            "canceled and dismissed {id} \"rotate the LAB keys\""
        )),
        "{said}"
    );
    let out = dismiss(&[&id]);
    support::assert_success(&out);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.starts_with(&format!("{id} was already dismissed at "))
            && said.contains("nothing to do"),
        "{said}"
    );
    assert_eq!(
        count(&db, "SELECT count(*) FROM events WHERE kind = 'dismiss'"),
        1,
        "the second dismissal wrote nothing"
    );
    let tasks = support::fleetdash()
        .args(["tasks", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    support::assert_success(&tasks);
    let listed = String::from_utf8_lossy(&tasks.stdout);
    let (_, dismissed) = listed
        .split_once("dismissed (not on the dashboard):\n")
        .unwrap_or_else(|| panic!("{listed}"));
    assert!(
        dismissed.starts_with(&id)
            && dismissed.contains("CANCELED")
            && dismissed.contains("(dismissed "),
        "{listed}"
    );
}

#[test]
fn task_assign_writes_through_the_queue_and_tasks_lists_red_first() {
    let scratch = support::Scratch::new();
    let (config, db) = queue_config(&scratch);
    let secret = "sk-ant-api03-PLANTEDabcdefghijklmnop0123456789";
    let out = support::fleetdash()
        .args(["task", "assign", "--config"])
        .arg(&config)
        .args([
            "--to",
            "sol",
            "--tag",
            "mira",
            "--tag",
            "nova",
            "--deadline",
            "2h",
        ])
        .arg(format!("Fix the arm64 pull\nwith {secret}"))
        .output()
        .unwrap();
    support::assert_success(&out);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(stdout.starts_with("q_"), "{stdout}");
    let id = stdout.split_whitespace().next().unwrap().to_string();
    assert!(!stdout.contains("PLANTED"), "{stdout}");

    // A task nobody ACKed for a day, written by the library into the same file.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let stale = rt.block_on(async {
        let q = WorkQueue::open(&db, queue_rules()).await.unwrap();
        let at = Utc::now() - Duration::days(1);
        let row = q
            .apply(report(
                Reporter::Operator,
                "old",
                at,
                assign(None, &["echo"]),
            ))
            .await
            .unwrap()
            .task
            .unwrap();
        let mine = q.get(&id).await.unwrap().unwrap();
        assert_eq!(mine.owner.as_deref(), Some("sol"));
        assert_eq!(mine.tagged, ["mira", "nova"]);
        assert_eq!(mine.created_by, "operator");
        assert!(
            mine.title.starts_with("Fix the arm64 pull with"),
            "{}",
            mine.title
        );
        assert!(!mine.title.contains("PLANTED"), "{}", mine.title);
        let due = mine.deadline.unwrap() - mine.created_at;
        assert_eq!(due, Duration::hours(2));
        q.close().await.unwrap();
        row.id
    });

    let out = support::fleetdash()
        .args(["tasks", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    support::assert_success(&out);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{stdout}");
    assert!(lines[0].starts_with("ID "), "{stdout}");
    assert!(lines[1].starts_with(&stale), "red first: {stdout}");
    assert!(
        lines[1].contains("fail  ") && lines[1].contains(" taken it for 1 d"),
        "{stdout}"
    );
    assert!(lines[2].starts_with(&id), "{stdout}");
    assert!(lines[2].contains("SUBMITTED"), "{stdout}");
}

#[test]
fn the_work_queue_commands_need_work_queue_db_and_a_valid_assignment() {
    let scratch = support::Scratch::new();
    let config = scratch.config("");
    let out = support::fleetdash()
        .args(["tasks", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("{}: work_queue.db: missing", config.display())),
        "{stderr}"
    );

    let (config, db) = queue_config(&scratch);
    let out = support::fleetdash()
        .args(["task", "assign", "--config"])
        .arg(&config)
        .arg("nobody is named")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("an assignment names its owner or tags the agents it is for"),
        "{stderr}"
    );
    assert_eq!(count(&db, "SELECT count(*) FROM tasks"), 0);
}

/// `fleetdash tasks | head`: a reader that stops early ends the listing quietly, as any
/// command-line tool would, instead of a panic on the closed pipe.
#[test]
fn tasks_into_a_closed_pipe_is_no_error() {
    let scratch = support::Scratch::new();
    let (config, _) = queue_config(&scratch);
    for i in 0..50 {
        let out = support::fleetdash()
            .args(["task", "assign", "--config"])
            .arg(&config)
            .args(["--to", "sol"])
            .arg(format!("task number {i}"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    }
    let mut child = support::fleetdash()
        .args(["tasks", "--config"])
        .arg(&config)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The reader is gone before the listing is written.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && !stderr.contains("panicked"),
        "{out:?}"
    );
}

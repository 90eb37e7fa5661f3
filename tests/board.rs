//! The board collector against real Hermes kanban databases: every status, the board's own
//! worker events, the host boundary, a writer holding the database while we read, damaged and
//! old databases beside healthy ones, secrets that must never come out, and the real binary.

use crate::support;
use crate::support::kanban;

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use fleetdash::collect::board::BoardCollector;
use fleetdash::config::Config;
use fleetdash_model::{Asc, Band, Board, BoardSource, Card, Probe};
use kanban::{Kanban, Task, now};
use rusqlite::Connection;

/// One `[[boards]]` entry.
struct Entry<'a> {
    name: &'a str,
    db: &'a Path,
    include_archived: bool,
    dispatch_config: Option<&'a Path>,
}

impl<'a> Entry<'a> {
    fn new(name: &'a str, db: &'a Path) -> Self {
        Entry {
            name,
            db,
            include_archived: false,
            dispatch_config: None,
        }
    }
}

fn config(dir: &Path, boards: &[Entry<'_>]) -> Config {
    let mut text =
        String::from("output_dir = \"out\"\nstate_dir = \"state\"\nrules = \"rules.yaml\"\n");
    for b in boards {
        text.push_str(&format!(
            "\n[[boards]]\nname = \"{}\"\ndb = \"{}\"\ninclude_archived = {}\n",
            b.name,
            b.db.display(),
            b.include_archived
        ));
        if let Some(d) = b.dispatch_config {
            text.push_str(&format!("dispatch_config = \"{}\"\n", d.display()));
        }
    }
    Config::parse(&dir.join("fleetdash.toml"), &text).unwrap()
}

async fn read(dir: &Path, boards: &[Entry<'_>]) -> Board {
    BoardCollector::new(&config(dir, boards)).read_all().await
}

fn card<'a>(board: &'a Board, id: &str) -> &'a Card {
    board
        .cards
        .iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("no card {id} in {:#?}", board.cards))
}

fn source<'a>(board: &'a Board, name: &str) -> &'a BoardSource {
    board.sources.iter().find(|s| s.name == name).unwrap()
}

fn allowlist(dir: &Path) -> PathBuf {
    let path = dir.join("hermes-config.yaml");
    std::fs::write(
        &path,
        "model: claude\nkanban:\n  review_dispatch: true\n  dispatch_profiles: [echo, min, mira, nova, sol]\n",
    )
    .unwrap();
    path
}

/// A committed board of `n` plain ready cards.
fn healthy(path: &Path, n: usize) -> Kanban {
    let k = Kanban::create(path);
    for i in 0..n {
        k.task(&Task::new(
            &format!("t_h{i:06}"),
            "healthy",
            "ready",
            Some("min"),
        ));
    }
    k
}

#[tokio::test]
async fn every_status_worker_event_and_the_host_boundary_show_on_the_cards() {
    let dir = tempfile::tempdir().unwrap();
    let t = now();
    let lab = Kanban::create(&dir.path().join("lab.db"));
    for (id, status, who) in [
        ("t_triage", "triage", "min"),
        ("t_todo", "todo", "echo"),
        ("t_sched", "scheduled", "mira"),
        ("t_tam", "ready", "tam"),
        ("t_running", "running", "min"),
        ("t_crashed", "ready", "nova"),
        ("t_recover", "running", "sol"),
        ("t_stale", "ready", "min"),
        ("t_timed", "ready", "min"),
        ("t_gaveup", "blocked", "min"),
        ("t_blocked", "blocked", "Echo"),
        ("t_review", "review", "mira"),
        ("t_done", "done", "tam"),
        ("t_archive", "archived", "min"),
        ("t_reconc", "ready", "min"),
        ("t_unblock", "ready", "min"),
    ] {
        let mut task = Task::new(id, &format!("Card {id}"), status, Some(who));
        task.block_kind = match id {
            "t_gaveup" => Some("transient".into()),
            "t_blocked" => Some("needs_input".into()),
            // `hermes kanban block --kind dependency` parks a card in todo.
            "t_todo" => Some("dependency".into()),
            // Kept across an unblock by Hermes; means nothing on a ready card.
            "t_unblock" => Some("dependency".into()),
            _ => None,
        };
        if id == "t_running" {
            task.started_at = Some(t - 1800);
            task.last_heartbeat_at = Some(t - 30);
        }
        lab.task(&task);
    }
    let ev = |id, kind, payload, ago: i64| lab.event(id, kind, payload, t - ago);
    ev("t_running", "claimed", "{}", 1800);
    ev("t_running", "heartbeat", "{}", 90);
    ev("t_crashed", "claimed", "{}", 900);
    ev(
        "t_crashed",
        "crashed",
        r#"{"pid": 4242, "claimer": "lab:1"}"#,
        300,
    );
    ev("t_recover", "claimed", "{}", 900);
    ev("t_recover", "crashed", "{}", 800);
    ev("t_recover", "claimed", "{}", 700);
    ev("t_stale", "claimed", "{}", 9000);
    ev(
        "t_stale",
        "stale",
        r#"{"elapsed_seconds": 8000, "heartbeat_age_seconds": 3720}"#,
        400,
    );
    ev("t_stale", "reclaimed", "{}", 400);
    ev("t_timed", "claimed", "{}", 8000);
    ev(
        "t_timed",
        "timed_out",
        r#"{"pid": 1, "elapsed_seconds": 7260, "limit_seconds": 7200, "sigkill": true}"#,
        600,
    );
    ev("t_gaveup", "claimed", "{}", 900);
    ev("t_gaveup", "crashed", "{}", 800);
    ev(
        "t_gaveup",
        "gave_up",
        r#"{"failures": 2, "effective_limit": 2, "limit_source": "default"}"#,
        800,
    );
    ev("t_done", "crashed", "{}", 900);
    ev("t_done", "completed", "{}", 100);
    for _ in 0..3 {
        ev(
            "t_reconc",
            "reconciled",
            r#"{"reason": "orphaned_running"}"#,
            60,
        );
    }
    ev("t_unblock", "claimed", "{}", 900);
    ev("t_unblock", "gave_up", "{}", 800);
    ev("t_unblock", "unblocked", "{}", 100);

    let pulse = Kanban::create(&dir.path().join("pulse.db"));
    pulse.task(&Task::new("t_p_arch", "Old card", "archived", Some("tam")));
    pulse.task(&Task::new("t_p_park", "Odd status", "parked", Some("tam")));

    let dispatch = allowlist(dir.path());
    let board = read(
        dir.path(),
        &[
            Entry {
                dispatch_config: Some(&dispatch),
                ..Entry::new("lab", &lab.path)
            },
            Entry {
                include_archived: true,
                ..Entry::new("pulse", &pulse.path)
            },
        ],
    )
    .await;

    assert_eq!(
        board.columns,
        [
            "triage",
            "todo",
            "scheduled",
            "ready",
            "running",
            "blocked",
            "review",
            "done",
            "archived",
            "parked"
        ]
    );
    assert!(
        board
            .cards
            .iter()
            .all(|c| board.columns.contains(&c.status))
    );
    assert!(
        board.cards.iter().all(|c| c.id != "t_archive"),
        "archived left out on lab"
    );
    assert_eq!(source(&board, "lab").cards, Probe::Value(15));
    assert_eq!(source(&board, "pulse").cards, Probe::Value(2));
    for s in &board.sources {
        assert_eq!(s.status, Asc::SUCCESS, "{s:?}");
        assert_eq!(s.projection, Probe::Unknown);
        assert!(!s.stale);
    }

    let bands = |ids: &[&str], band: Band| {
        for id in ids {
            assert_eq!(card(&board, id).band, band, "{:#?}", card(&board, id));
        }
    };
    bands(
        &[
            "t_triage",
            "t_todo",
            "t_sched",
            "t_running",
            "t_review",
            "t_done",
            "t_p_arch",
            "t_p_park",
        ],
        Band::Green,
    );
    bands(
        &["t_stale", "t_reconc", "t_blocked", "t_recover", "t_unblock"],
        Band::Amber,
    );
    bands(&["t_tam", "t_crashed", "t_timed", "t_gaveup"], Band::Red);

    let conditions = |id| card(&board, id).conditions.clone();
    assert_eq!(
        conditions("t_tam"),
        ["assignee tam cannot be claimed on this host (kanban.dispatch_profiles)"]
    );
    assert!(conditions("t_crashed")[0].starts_with("crashed: the worker process died at "));
    assert!(
        conditions("t_crashed")[0].ends_with(" UTC"),
        "an absolute time, stable across passes"
    );
    assert!(
        conditions("t_stale")[0].starts_with("reclaimed: "),
        "newest wins"
    );
    assert!(
        conditions("t_timed")[0]
            .starts_with("timed_out: the worker was killed after 2 h 1 min (limit 2 h)")
    );
    assert_eq!(conditions("t_gaveup").len(), 2);
    assert!(conditions("t_gaveup")[0].contains("after 2 failures (limit 2)"));
    assert_eq!(conditions("t_gaveup")[1], "blocked: transient");
    assert_eq!(conditions("t_blocked"), ["blocked: needs_input"]);
    assert!(conditions("t_reconc")[0].ends_with("(3× without a new claim)"));
    // A failure stays visible until the card completes, amber once another attempt took over.
    assert_eq!(conditions("t_recover").len(), 1);
    assert!(conditions("t_recover")[0].starts_with("crashed: "));
    assert!(conditions("t_recover")[0].ends_with("; retried since"));
    assert_eq!(conditions("t_unblock").len(), 1);
    assert!(conditions("t_unblock")[0].starts_with("gave_up: "));
    assert!(conditions("t_unblock")[0].ends_with("; unblocked by hand since"));
    assert!(
        conditions("t_p_park").is_empty(),
        "no dispatch config on pulse"
    );

    let blocked = card(&board, "t_blocked");
    assert_eq!(blocked.block_kind.as_deref(), Some("needs_input"));
    assert_eq!(blocked.assignee.as_deref(), Some("Echo"));
    assert_eq!(card(&board, "t_unblock").block_kind, None);
    let waiting = card(&board, "t_todo");
    assert_eq!(waiting.block_kind.as_deref(), Some("dependency"));
    assert!(
        waiting.conditions.is_empty(),
        "a dependency wait is no alarm"
    );
    let running = card(&board, "t_running");
    assert_eq!(running.latest_activity_at.unwrap().timestamp(), t - 30);
    assert!((3599..=3601).contains(&running.age_s), "{}", running.age_s);
    assert_eq!(
        card(&board, "t_crashed")
            .latest_activity_at
            .unwrap()
            .timestamp(),
        t - 300
    );
    assert_eq!(card(&board, "t_triage").latest_activity_at, None);
    // Red first within a column.
    let ready: Vec<_> = board
        .cards
        .iter()
        .filter(|c| c.status == "ready")
        .map(|c| c.band)
        .collect();
    assert!(ready.windows(2).all(|w| w[0] >= w[1]), "{ready:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reader_neither_waits_for_nor_disturbs_a_writer_holding_the_board() {
    let dir = tempfile::tempdir().unwrap();
    let k = healthy(&dir.path().join("kanban.db"), 5);
    let path = k.path.clone();
    let (held_tx, held_rx) = mpsc::channel();
    let (commit_tx, commit_rx) = mpsc::channel::<()>();
    let writer = std::thread::spawn(move || {
        let w = Connection::open(&path).unwrap();
        w.execute_batch("BEGIN IMMEDIATE").unwrap();
        for i in 0..100 {
            w.execute(
                "INSERT INTO tasks (id, title, status, created_at) VALUES (?1, 'new', 'triage', ?2)",
                rusqlite::params![format!("t_w{i:06}"), now()],
            )
            .unwrap();
            w.execute(
                "INSERT INTO task_events (task_id, kind, created_at) VALUES (?1, 'created', ?2)",
                rusqlite::params![format!("t_w{i:06}"), now()],
            )
            .unwrap();
        }
        held_tx.send(()).unwrap();
        commit_rx.recv().unwrap();
        let committed = w.execute_batch("COMMIT");
        // Nothing of ours lingers: a full checkpoint finds no reader in its way.
        let busy: i64 = w
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))
            .unwrap();
        (committed, busy)
    });
    held_rx.recv().unwrap();

    // A long busy timeout: if the read waited for the writer at all, it would show.
    let collector = BoardCollector::new(&config(dir.path(), &[Entry::new("lab", &k.path)]))
        .with_busy_timeout(Duration::from_secs(30));
    let during = collector.read_all().await;
    // It returned while the writer still held its transaction open, with the committed state:
    // a read that had waited on the writer would have hit the 30 s busy timeout and said so.
    assert_eq!(
        source(&during, "lab").status,
        Asc::SUCCESS,
        "{:?}",
        during.sources
    );
    assert_eq!(
        during.cards.len(),
        5,
        "the last committed state, not the open transaction"
    );

    commit_tx.send(()).unwrap();
    let (committed, busy) = writer.join().unwrap();
    committed.expect("the writer's commit succeeds after our read");
    assert_eq!(busy, 0, "the checkpoint was not blocked by a reader");
    let after = collector.read_all().await;
    assert_eq!(after.cards.len(), 105);
    // Still a WAL database: the reader changed nothing.
    let mode: String = k
        .conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_board_locked_past_the_busy_timeout_times_out_alone() {
    let dir = tempfile::tempdir().unwrap();
    let ok = healthy(&dir.path().join("ok.db"), 3);
    // A rollback-journal database under an exclusive lock: the one case where SQLite makes a
    // reader wait.
    let locked_path = dir.path().join("locked.db");
    let locked = Connection::open(&locked_path).unwrap();
    locked
        .pragma_update(None, "journal_mode", "delete")
        .unwrap();
    locked.execute_batch(kanban::SCHEMA).unwrap();
    locked
        .execute_batch("BEGIN EXCLUSIVE; INSERT INTO tasks (id, title, status, created_at) VALUES ('t_1', 'x', 'ready', 1);")
        .unwrap();

    let collector = BoardCollector::new(&config(
        dir.path(),
        &[
            Entry::new("ok", &ok.path),
            Entry::new("locked", &locked_path),
        ],
    ))
    .with_busy_timeout(Duration::from_millis(300));
    // The lock is never released: that the read returns at all, with the timeout as the
    // locked board's reason, shows the busy timeout bounds it.
    let board = collector.read_all().await;
    let s = source(&board, "locked");
    assert_eq!(s.status, Asc::TIMEOUT, "{s:?}");
    assert!(s.stale);
    let reason = s.cards.error_reason().unwrap();
    assert!(
        reason.contains("locked.db") && reason.contains("still locked after 300ms"),
        "{reason}"
    );
    assert_eq!(source(&board, "ok").cards, Probe::Value(3));
    locked.execute_batch("COMMIT").unwrap();
}

#[tokio::test]
async fn damaged_missing_and_old_boards_fail_or_read_alone() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ok = healthy(&d.join("ok.db"), 4);

    // Random bytes.
    let random = d.join("random.db");
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let bytes: Vec<u8> = (0..65_536)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    std::fs::write(&random, &bytes).unwrap();

    // A real database whose pages after the first were overwritten.
    let malformed = d.join("malformed.db");
    {
        let c = Connection::open(&malformed).unwrap();
        c.execute_batch(kanban::SCHEMA).unwrap();
        for i in 0..200 {
            c.execute(
                "INSERT INTO tasks (id, title, body, status, created_at) VALUES (?1, 'x', ?2, 'ready', 1)",
                rusqlite::params![format!("t_{i}"), "b".repeat(500)],
            )
            .unwrap();
        }
    }
    let mut image = std::fs::read(&malformed).unwrap();
    for (i, b) in image.iter_mut().enumerate().skip(4096) {
        *b = (i * 31 % 251) as u8;
    }
    std::fs::write(&malformed, &image).unwrap();

    let no_table = d.join("notable.db");
    Connection::open(&no_table)
        .unwrap()
        .execute_batch("CREATE TABLE notes (x TEXT);")
        .unwrap();

    let no_title = d.join("notitle.db");
    Connection::open(&no_title)
        .unwrap()
        .execute_batch("CREATE TABLE tasks (id TEXT PRIMARY KEY, status TEXT, created_at INTEGER);")
        .unwrap();

    // An older Hermes: fewer task columns, events without run_id or payload.
    let old = d.join("old.db");
    {
        let c = Connection::open(&old).unwrap();
        c.execute_batch(
            "CREATE TABLE tasks (id TEXT PRIMARY KEY, title TEXT NOT NULL, body TEXT,
                 assignee TEXT, status TEXT NOT NULL, created_at INTEGER NOT NULL);
             CREATE TABLE task_events (id INTEGER PRIMARY KEY AUTOINCREMENT, task_id TEXT,
                 kind TEXT, created_at INTEGER);",
        )
        .unwrap();
        let t = now();
        c.execute_batch(&format!(
            "INSERT INTO tasks VALUES ('t_o1', 'old one', 'body', 'min', 'running', {});
             INSERT INTO tasks VALUES ('t_o2', 'old two', NULL, NULL, 'ready', {});
             INSERT INTO task_events (task_id, kind, created_at) VALUES ('t_o2', 'claimed', {});
             INSERT INTO task_events (task_id, kind, created_at) VALUES ('t_o2', 'crashed', {});",
            t - 100,
            t - 100,
            t - 50,
            t - 40
        ))
        .unwrap();
    }
    // Older still: no task_events at all.
    let oldest = d.join("oldest.db");
    Connection::open(&oldest)
        .unwrap()
        .execute_batch(
            "CREATE TABLE tasks (id TEXT, title TEXT, status TEXT, created_at INTEGER);
             INSERT INTO tasks VALUES ('t_x', 'ancient', 'todo', 1);",
        )
        .unwrap();

    let missing = d.join("missing.db");
    let board = read(
        d,
        &[
            Entry::new("ok", &ok.path),
            Entry::new("random", &random),
            Entry::new("malformed", &malformed),
            Entry::new("notable", &no_table),
            Entry::new("notitle", &no_title),
            Entry::new("old", &old),
            Entry::new("oldest", &oldest),
            Entry::new("missing", &missing),
        ],
    )
    .await;

    let failed = |name: &str, asc: Asc, words: &[&str]| {
        let s = source(&board, name);
        assert_eq!(s.status, asc, "{s:?}");
        assert!(s.stale, "{name}");
        let reason = s.cards.error_reason().unwrap_or_else(|| panic!("{s:?}"));
        assert!(reason.contains(&format!("{name}.db")), "{reason}");
        for w in words {
            assert!(reason.contains(w), "{name}: {w:?} not in {reason:?}");
        }
        assert_eq!(s.reason.as_deref(), Some(reason));
        assert!(board.cards.iter().all(|c| c.board != name));
    };
    failed("random", Asc::INTEGRITY_CHECK_FAILED, &["not a database"]);
    failed("malformed", Asc::INTEGRITY_CHECK_FAILED, &["damaged"]);
    failed("notable", Asc::FAILED_PRECONDITION, &["no `tasks` table"]);
    failed("notitle", Asc::FAILED_PRECONDITION, &["no column `title`"]);
    failed("missing", Asc::NOT_FOUND, &["no such file"]);
    assert!(!missing.exists(), "a read never creates a database");

    assert_eq!(source(&board, "ok").cards, Probe::Value(4));
    assert_eq!(source(&board, "ok").status, Asc::SUCCESS);
    assert_eq!(source(&board, "old").cards, Probe::Value(2));
    assert_eq!(source(&board, "old").status, Asc::SUCCESS);
    let o2 = card(&board, "t_o2");
    assert_eq!(o2.band, Band::Red, "events work without payload: {o2:?}");
    assert_eq!(o2.priority, None);
    assert_eq!(card(&board, "t_o1").assignee.as_deref(), Some("min"));
    let oldest = source(&board, "oldest");
    assert_eq!(oldest.cards, Probe::Value(1));
    assert_eq!(oldest.status, Asc::SUCCESS_WITH_WARNINGS);
    assert!(
        oldest
            .reason
            .as_deref()
            .unwrap()
            .contains("no `task_events` table")
    );
}

#[tokio::test]
async fn an_unreadable_dispatch_config_fails_closed_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let k = Kanban::create(&dir.path().join("lab.db"));
    k.task(&Task::new("t_min", "mine", "ready", Some("min")));
    k.task(&Task::new("t_done", "over", "done", Some("min")));
    k.task(&Task::new("t_none", "nobody's", "triage", None));
    let bad = dir.path().join("config.yaml");
    std::fs::write(&bad, "kanban:\n  dispatch_profiles: [min\nproviders: {key: sk-ant-api03-PLANTEDabcdefghijklmnop}\n").unwrap();
    let board = read(
        dir.path(),
        &[Entry {
            dispatch_config: Some(&bad),
            ..Entry::new("lab", &k.path)
        }],
    )
    .await;
    let s = source(&board, "lab");
    assert_eq!(s.status, Asc::SUCCESS_WITH_WARNINGS);
    let reason = s.reason.as_deref().unwrap();
    assert!(
        reason.contains("config.yaml") && reason.contains("fail closed"),
        "{reason}"
    );
    assert!(!reason.contains("PLANTED"), "{reason}");
    assert_eq!(card(&board, "t_min").band, Band::Red);
    assert_eq!(card(&board, "t_done").band, Band::Green);
    assert_eq!(card(&board, "t_none").band, Band::Green);

    // Present but empty: nobody may be dispatched here, which is a setting, not a fault.
    std::fs::write(&bad, "kanban:\n  dispatch_profiles: []\n").unwrap();
    let board = read(
        dir.path(),
        &[Entry {
            dispatch_config: Some(&bad),
            ..Entry::new("lab", &k.path)
        }],
    )
    .await;
    assert_eq!(source(&board, "lab").status, Asc::SUCCESS);
    assert_eq!(card(&board, "t_min").band, Band::Red);
}

/// Secrets of each kind the redaction gate knows, and markers for text that must not be read
/// at all.
const PLANTED: &[&str] = &[
    "sk-ant-api03-PLANTEDabcdefghijklmnop0123456789",
    "Bearer PLANTEDtokenabcdefghij0123456789",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJwbGFudGVkIn0.c2lnbmF0dXJlUExBTlRFRA",
    "https://young:PLANTEDpass@example.invalid/path",
    "ghp_PLANTEDabcdefghijklmnopqrstuvwxyz0123",
    "AKIAPLANTED234567ABC",
];

/// Every planted secret: one of each kind, then every shape glued to each kind of neighbour
/// (issue 21).
fn every_planted() -> Vec<&'static str> {
    let glued = support::secrets::GLUED.iter().map(|g| g.value.as_str());
    PLANTED.iter().copied().chain(glued).collect()
}

#[tokio::test]
async fn secrets_in_titles_bodies_results_comments_and_payloads_never_come_out() {
    let dir = tempfile::tempdir().unwrap();
    let k = Kanban::create(&dir.path().join("lab.db"));
    let planted = every_planted();
    for (i, secret) in planted.iter().enumerate() {
        let id = format!("t_s{i}");
        let mut t = Task::new(
            &id,
            &format!("Rotate {secret} today\nplease"),
            "running",
            Some("min"),
        );
        t.body = Some(format!("BODYMARKER the key is {secret}"));
        t.result = Some(format!("RESULTMARKER {secret}"));
        t.last_failure_error = Some(format!("ERRORMARKER {secret}"));
        k.task(&t);
        k.comment(&id, &format!("COMMENTMARKER {secret}"));
        k.run(
            &id,
            "crashed",
            &format!("SUMMARYMARKER {secret}"),
            &format!("RUNERRORMARKER {secret}"),
        );
        k.event(&id, "claimed", "{}", now() - 100);
        k.event(
            &id,
            "crashed",
            &format!(
                r#"{{"pid": 1, "worker_output": "PAYLOADMARKER {secret}", "error": "{secret}"}}"#
            ),
            now() - 50,
        );
    }
    // A title that is all secret, and one long enough to be cut through a secret.
    k.task(&Task::new(
        "t_long",
        &format!("{} {}", "x".repeat(100), PLANTED[0]),
        "todo",
        None,
    ));

    let board = read(dir.path(), &[Entry::new("lab", &k.path)]).await;
    assert_eq!(board.cards.len(), planted.len() + 1);
    let json = serde_json::to_string(&board).unwrap();
    for needle in [
        "PLANTED", "MARKER", "sk-ant", "eyJhbGci", "ghp_", "AKIA", "young:",
    ] {
        assert!(!json.contains(needle), "{needle} leaked: {json}");
    }
    if let Some(found) = support::secrets::find_secret(&json) {
        panic!("{found} leaked: {json}");
    }
    for c in &board.cards {
        assert!(c.title.contains("[redacted]"), "{}", c.title);
        assert!(c.title.chars().count() <= 120, "{}", c.title);
        assert!(!c.title.contains('\n'));
    }
    assert!(
        card(&board, "t_s0")
            .title
            .starts_with("Rotate [redacted] today please")
    );
    assert_eq!(
        card(&board, "t_s0").band,
        Band::Red,
        "the crash still shows"
    );
}

#[test]
fn collect_writes_the_board_into_status_json() {
    let scratch = support::Scratch::new();
    let k = Kanban::create(&scratch.path().join("kanban.db"));
    let mut t = Task::new("t_0000beef", "Ship the board", "running", Some("min"));
    t.body = Some("BODYMARKER sk-ant-api03-PLANTEDabcdefghijklmnop0123456789".into());
    k.task(&t);
    k.event("t_0000beef", "claimed", "{}", now() - 60);
    k.event(
        "t_0000beef",
        "stale",
        r#"{"heartbeat_age_seconds": 3700}"#,
        now() - 10,
    );
    let config = scratch.config(&format!(
        "[[boards]]\nname = \"lab\"\nplane = \"Docs\"\ndb = \"{}\"\n\n[[boards]]\nname = \"gone\"\ndb = \"gone.db\"\n",
        k.path.display()
    ));
    let out = scratch.collect(&config);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = scratch.snapshot_text();
    assert!(
        !text.contains("PLANTED") && !text.contains("MARKER"),
        "{text}"
    );
    let snapshot = scratch.snapshot();
    let Probe::Value(board) = &snapshot.tasks.board else {
        panic!("tasks.board: {:?}", snapshot.tasks.board);
    };
    assert!(snapshot.sections.tasks.configured);
    let c = card(board, "t_0000beef");
    assert_eq!(
        (c.board.as_str(), c.status.as_str(), c.band),
        ("lab", "running", Band::Amber)
    );
    assert!(
        c.conditions[0].starts_with("stale: no heartbeat for 1 h 1 min"),
        "{:?}",
        c.conditions
    );
    assert_eq!(source(board, "lab").plane.as_deref(), Some("Docs"));
    assert_eq!(source(board, "gone").status, Asc::NOT_FOUND);
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        json.pointer("/tasks/board/sources/0/cards"),
        Some(&serde_json::json!(1))
    );
    assert_eq!(
        json.pointer("/tasks/board/sources/0/projection"),
        Some(&serde_json::json!("unknown"))
    );
    assert!(
        json.pointer("/tasks/board/sources/1/cards")
            .and_then(|v| v.as_str())
            .is_some_and(|s| s.starts_with("error: board db ") && s.contains("gone.db")),
        "{json}"
    );
}

/// Every glued secret (issue 21) in every text of a card that leaves the board reader (title,
/// assignee, block kind, a manual reclaim's reason) and in those it never copies (body,
/// result, error, comments, runs, event payloads), through `fleetdash collect` twice (the
/// cards go from ready to blocked, so the bands change): nothing of them in any file it
/// writes (status.json, snapshot.html, transitions.json, the history, the vault's `.kanban`
/// projection) or in its log.
#[test]
fn glued_secrets_in_a_board_reach_no_file_and_no_log() {
    use support::secrets::{GLUED, find_secret};
    let scratch = support::Scratch::new();
    let k = Kanban::create(&scratch.path().join("lab.db"));
    for (i, g) in GLUED.iter().enumerate() {
        let mut t = Task::new(
            &format!("t_g{i:03}"),
            &format!("Rotate {} today", g.value),
            "ready",
            Some(&g.value),
        );
        t.block_kind = Some(g.value.clone());
        t.body = Some(format!("BODYMARKER {}", g.value));
        t.result = Some(g.value.clone());
        t.last_failure_error = Some(g.value.clone());
        k.task(&t);
    }
    let vault = scratch.path().join("vault");
    let config = scratch.config(&format!(
        "[vault]\npath = \"{}\"\n\n[[boards]]\nname = \"lab\"\ndb = \"lab.db\"\n\
         projection = \"Docs/Kanban/lab.kanban\"\n",
        vault.display()
    ));
    let collect = || {
        let out = support::fleetdash()
            .args(["collect", "--config"])
            .arg(&config)
            .env("FLEETDASH_LOG", "debug")
            .output()
            .unwrap();
        let log = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{log}");
        log
    };
    let first = collect();

    // Blocked now, with worker events, comments and runs holding the glued secrets too.
    for (i, g) in GLUED.iter().enumerate() {
        let id = format!("t_g{i:03}");
        k.conn
            .execute("UPDATE tasks SET status = 'blocked' WHERE id = ?1", [&id])
            .unwrap();
        let json_text = serde_json::to_string(&g.value).unwrap();
        k.event(
            &id,
            "crashed",
            &format!(r#"{{"pid": 1, "worker_output": {json_text}, "error": {json_text}}}"#),
            now() - 100,
        );
        // The newest worker event is the one a card shows.
        k.event(
            &id,
            "reclaimed",
            &format!(r#"{{"manual": true, "reason": {json_text}}}"#),
            now() - 50,
        );
        k.comment(&id, &g.value);
        k.run(&id, "crashed", &g.value, &g.value);
    }
    let second = collect();

    for (place, log) in [("the first log", first), ("the second log", second)] {
        if let Some(found) = find_secret(&log) {
            panic!("{found} leaked into {place}:\n{log}");
        }
    }
    let written: Vec<PathBuf> = ["out", "state", "vault"]
        .iter()
        .flat_map(|d| support::files_under(&scratch.path().join(d)))
        .collect();
    for name in [
        "status.json",
        "snapshot.html",
        "transitions.json",
        "lab.kanban",
    ] {
        assert!(
            written.iter().any(|p| p.ends_with(name)),
            "{name} was written: {written:?}"
        );
    }
    for path in written {
        let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
        if let Some(found) = find_secret(&text) {
            panic!("{found} leaked into {}:\n{text}", path.display());
        }
    }

    let snapshot = scratch.snapshot();
    let Probe::Value(board) = &snapshot.tasks.board else {
        panic!("tasks.board: {:?}", snapshot.tasks.board);
    };
    // Every card was listed, red, its planted texts (the reclaim reason too) redacted rather
    // than dropped.
    assert_eq!(board.cards.len(), GLUED.len());
    for c in &board.cards {
        assert_eq!(c.band, Band::Red, "{c:?}");
        assert!(c.title.contains("[redacted]"), "{c:?}");
        assert!(
            c.conditions
                .iter()
                .any(|w| w.contains("taken back by hand (") && w.contains("[redacted]")),
            "{c:#?}"
        );
    }
}

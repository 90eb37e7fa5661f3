//! Hermes kanban databases for the board tests and the board_read bench, built with the schema
//! Hermes itself creates (reference hermes-kanban.md: tasks, task_links, task_comments,
//! task_events, task_runs and their indexes), in WAL mode, written as Hermes writes them.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use rusqlite::{Connection, params};

/// The Hermes schema, shared with the demo fleet's boards.
pub use fleetdash::demo::kanban::HERMES_SCHEMA as SCHEMA;

pub fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

/// One task row; the fields the dashboard reads plus the text it must never copy.
#[derive(Debug, Clone, Default)]
pub struct Task {
    pub id: String,
    pub title: String,
    pub body: Option<String>,
    pub assignee: Option<String>,
    pub status: String,
    pub priority: i64,
    pub created_at: i64,
    pub started_at: Option<i64>,
    pub completed_at: Option<i64>,
    pub last_heartbeat_at: Option<i64>,
    pub block_kind: Option<String>,
    pub result: Option<String>,
    pub last_failure_error: Option<String>,
}

impl Task {
    pub fn new(id: &str, title: &str, status: &str, assignee: Option<&str>) -> Task {
        Task {
            id: id.to_string(),
            title: title.to_string(),
            status: status.to_string(),
            assignee: assignee.map(str::to_string),
            created_at: now() - 3600,
            ..Task::default()
        }
    }
}

/// A Hermes board database, held open like the Hermes process holds it.
pub struct Kanban {
    pub path: PathBuf,
    pub conn: Connection,
}

impl Kanban {
    /// A new board database at `path`, in WAL mode, with the Hermes schema.
    pub fn create(path: &Path) -> Kanban {
        let conn = Connection::open(path).unwrap();
        conn.pragma_update(None, "journal_mode", "wal").unwrap();
        conn.execute_batch(SCHEMA).unwrap();
        Kanban {
            path: path.to_path_buf(),
            conn,
        }
    }

    pub fn task(&self, t: &Task) {
        self.conn
            .execute(
                "INSERT INTO tasks (id, title, body, assignee, status, priority, created_by,
                     created_at, started_at, completed_at, last_heartbeat_at, block_kind, result,
                     last_failure_error)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'young', ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
                params![
                    t.id,
                    t.title,
                    t.body,
                    t.assignee,
                    t.status,
                    t.priority,
                    t.created_at,
                    t.started_at,
                    t.completed_at,
                    t.last_heartbeat_at,
                    t.block_kind,
                    t.result,
                    t.last_failure_error
                ],
            )
            .unwrap();
    }

    /// Appends an event, as `_append_event` does.
    pub fn event(&self, task: &str, kind: &str, payload: &str, created_at: i64) {
        self.conn
            .execute(
                "INSERT INTO task_events (task_id, kind, payload, created_at) VALUES (?1, ?2, ?3, ?4)",
                params![task, kind, payload, created_at],
            )
            .unwrap();
    }

    pub fn comment(&self, task: &str, body: &str) {
        self.conn
            .execute(
                "INSERT INTO task_comments (task_id, author, body, created_at) VALUES (?1, 'min', ?2, ?3)",
                params![task, body, now()],
            )
            .unwrap();
    }

    pub fn run(&self, task: &str, outcome: &str, summary: &str, error: &str) {
        self.conn
            .execute(
                "INSERT INTO task_runs (task_id, profile, status, started_at, ended_at, outcome,
                     summary, metadata, error)
                 VALUES (?1, 'min', ?2, ?3, ?3, ?2, ?4, '{}', ?5)",
                params![task, outcome, now() - 600, summary, error],
            )
            .unwrap();
    }
}

/// `count` tasks spread over every status, each with a claim, heartbeats and, for one in
/// five, a worker event; what the bench reads.
pub fn populate(k: &Kanban, count: usize) {
    const STATUSES: [&str; 9] = [
        "triage",
        "todo",
        "scheduled",
        "ready",
        "running",
        "blocked",
        "review",
        "done",
        "archived",
    ];
    const WORKER: [&str; 5] = ["crashed", "timed_out", "stale", "reclaimed", "reconciled"];
    let t0 = now() - 86_400;
    k.conn.execute_batch("BEGIN").unwrap();
    for i in 0..count {
        let id = format!("t_{i:08x}");
        let status = STATUSES[i % STATUSES.len()];
        let mut t = Task::new(
            &id,
            &format!("Card {i}: move the arm64 image pull behind the cache"),
            status,
            Some(["echo", "min", "mira", "nova", "sol", "tam"][i % 6]),
        );
        t.created_at = t0 + i as i64;
        t.body = Some("A body of some length that the dashboard never reads. ".repeat(8));
        t.started_at = Some(t.created_at + 60);
        t.priority = (i % 4) as i64;
        if status == "blocked" {
            t.block_kind = Some("needs_input".into());
        }
        k.task(&t);
        k.event(&id, "created", "{}", t.created_at);
        k.event(&id, "claimed", r#"{"lock": "lab:4242"}"#, t.created_at + 60);
        for h in 0..3 {
            k.event(&id, "heartbeat", "{}", t.created_at + 120 + h * 60);
        }
        if i % 5 == 0 {
            k.event(
                &id,
                WORKER[(i / 5) % WORKER.len()],
                r#"{"pid": 4242, "elapsed_seconds": 7260, "limit_seconds": 7200, "worker_output": "long text the dashboard never reads"}"#,
                t.created_at + 600,
            );
        }
    }
    k.conn.execute_batch("COMMIT").unwrap();
}

/// `count` tasks as a board that has lived a while holds them: nearly all done, a few in each
/// open column, three blocked (amber) and one whose worker crashed (red); each with a claim
/// and heartbeats. What the 10,000-card page test and the snapshot bench read.
pub fn populate_mature(k: &Kanban, count: usize) {
    // Out of every 200 cards: 4 todo, 2 ready, 2 triage, 2 running, 1 review, 1 scheduled, and
    // the rest done.
    const OPEN: [(&str, usize); 6] = [
        ("todo", 4),
        ("ready", 2),
        ("triage", 2),
        ("running", 2),
        ("review", 1),
        ("scheduled", 1),
    ];
    let t0 = now() - 30 * 86_400;
    k.conn.execute_batch("BEGIN").unwrap();
    for i in 0..count {
        let id = format!("t_{i:08x}");
        let mut slot = i % 200;
        let mut status = "done";
        for (s, n) in OPEN {
            if slot < n {
                status = s;
                break;
            }
            slot -= n;
        }
        let flagged = i * 4 / count.max(1);
        let special = i % (count / 4).max(1) == (count / 8).max(1) && flagged < 4;
        if special {
            status = if flagged < 3 { "blocked" } else { "running" };
        }
        let mut t = Task::new(
            &id,
            &format!("Card {i}: move the arm64 image pull behind the cache"),
            status,
            Some(["echo", "min", "mira", "nova", "sol", "tam"][i % 6]),
        );
        // Spread over the last 30 days, the newest last.
        t.created_at = t0 + (i as i64 * 30 * 86_400) / count.max(1) as i64;
        t.started_at = Some(t.created_at + 60);
        t.priority = (i % 4) as i64;
        if status == "done" {
            t.completed_at = Some(t.created_at + 3600);
        }
        if status == "blocked" {
            t.block_kind = Some("needs_input".into());
        }
        k.task(&t);
        k.event(&id, "created", "{}", t.created_at);
        k.event(&id, "claimed", r#"{"lock": "lab:4242"}"#, t.created_at + 60);
        k.event(&id, "heartbeat", "{}", t.created_at + 120);
        if special && status == "running" {
            k.event(
                &id,
                "crashed",
                r#"{"pid": 4242, "worker_output": "long text the dashboard never reads"}"#,
                t.created_at + 600,
            );
        }
    }
    k.conn.execute_batch("COMMIT").unwrap();
}

/// The interpreter of the venv holding Hermes' own package (hermes-agent), which
/// `scripts/setup-test-deps` creates. Without it a test that builds boards with Hermes' code
/// cannot run: it fails, saying how to get it, and never passes silently.
pub fn hermes_python() -> PathBuf {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/hermes/bin/python");
    let hermes = python.with_file_name("hermes");
    assert!(
        python.exists() && hermes.exists(),
        "{} is missing: run scripts/setup-test-deps (it installs hermes-agent, Hermes' own kanban \
         code, which this test builds its boards with)",
        python.display()
    );
    python
}

/// `tests/hermes/NAME`: the Python drivers of Hermes' own code.
pub fn hermes_script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/hermes")
        .join(name)
}

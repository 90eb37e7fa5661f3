//! The demo fleet's kanban boards: real SQLite databases with the Hermes schema, in WAL mode,
//! on two planes, holding every status, the board's own worker events, and a card whose
//! assignee this host can never dispatch; plus a vault for their projections with one
//! hand-edited file that the projection job must refuse to touch.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use rusqlite::{Connection, params};

/// The Hermes schema (hermes_cli/kanban_db.py, the version the reference describes).
pub const HERMES_SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS tasks (
    id TEXT PRIMARY KEY, title TEXT NOT NULL, body TEXT, assignee TEXT, status TEXT NOT NULL,
    priority INTEGER DEFAULT 0, created_by TEXT, created_at INTEGER NOT NULL, started_at INTEGER,
    completed_at INTEGER, workspace_kind TEXT NOT NULL DEFAULT 'scratch', workspace_path TEXT,
    branch_name TEXT, project_id TEXT, claim_lock TEXT, claim_expires INTEGER, tenant TEXT,
    result TEXT, idempotency_key TEXT, consecutive_failures INTEGER NOT NULL DEFAULT 0,
    worker_pid INTEGER, last_failure_error TEXT, max_runtime_seconds INTEGER,
    last_heartbeat_at INTEGER, current_run_id INTEGER, workflow_template_id TEXT,
    current_step_key TEXT, skills TEXT, model_override TEXT, provider_override TEXT,
    reasoning_effort TEXT, max_retries INTEGER, goal_mode INTEGER NOT NULL DEFAULT 0,
    goal_max_turns INTEGER, session_id TEXT, block_kind TEXT,
    block_recurrences INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS task_links (
    parent_id TEXT NOT NULL, child_id TEXT NOT NULL, PRIMARY KEY (parent_id, child_id)
);
CREATE TABLE IF NOT EXISTS task_comments (
    id INTEGER PRIMARY KEY AUTOINCREMENT, task_id TEXT NOT NULL, author TEXT NOT NULL,
    body TEXT NOT NULL, created_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS task_events (
    id INTEGER PRIMARY KEY AUTOINCREMENT, task_id TEXT NOT NULL, run_id INTEGER,
    kind TEXT NOT NULL, payload TEXT, created_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS task_runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT, task_id TEXT NOT NULL, profile TEXT, step_key TEXT,
    status TEXT NOT NULL, claim_lock TEXT, claim_expires INTEGER, worker_pid INTEGER,
    max_runtime_seconds INTEGER, last_heartbeat_at INTEGER, started_at INTEGER NOT NULL,
    ended_at INTEGER, outcome TEXT, summary TEXT, metadata TEXT, error TEXT
);
CREATE INDEX IF NOT EXISTS idx_tasks_assignee_status ON tasks(assignee, status);
CREATE INDEX IF NOT EXISTS idx_tasks_status ON tasks(status);
CREATE INDEX IF NOT EXISTS idx_links_child ON task_links(child_id);
CREATE INDEX IF NOT EXISTS idx_links_parent ON task_links(parent_id);
CREATE INDEX IF NOT EXISTS idx_comments_task ON task_comments(task_id, created_at);
CREATE INDEX IF NOT EXISTS idx_events_task ON task_events(task_id, created_at);
CREATE INDEX IF NOT EXISTS idx_runs_task ON task_runs(task_id, started_at);
CREATE INDEX IF NOT EXISTS idx_runs_status ON task_runs(status);
";

/// The allowlist of this (demo) host: the Hermes config's `kanban.dispatch_profiles`.
pub const DISPATCH_CONFIG: &str = "kanban:\n  dispatch_profiles: [echo, min, mira, nova, sol]\n";

/// A hand-written file that a projection target must never overwrite.
pub const HAND_EDITED: &str =
    "---\n\nkanban-plugin: board\n\n---\n\n## Ideas\n\n- [ ] written by hand, kept by hand\n";

/// One demo board: name, plane, and whether its projection target starts out hand-edited.
pub struct DemoBoard {
    pub name: &'static str,
    pub plane: &'static str,
    pub hand_edited: bool,
}

pub const BOARDS: [DemoBoard; 3] = [
    DemoBoard {
        name: "research",
        plane: "Docs",
        hand_edited: false,
    },
    DemoBoard {
        name: "daily-operation",
        plane: "Docs",
        hand_edited: true,
    },
    DemoBoard {
        name: "podcast",
        plane: "Pulse",
        hand_edited: false,
    },
];

/// (id, title, status, assignee, block kind, worker event) for each board.
type Row = (
    &'static str,
    &'static str,
    &'static str,
    Option<&'static str>,
    Option<&'static str>,
    Option<&'static str>,
);

fn rows(board: &str) -> &'static [Row] {
    match board {
        "research" => &[
            (
                "t_5e1a0001",
                "Survey the A2A dialects per plane",
                "running",
                Some("sol"),
                None,
                None,
            ),
            (
                "t_5e1a0002",
                "Verify the 300 s rule source",
                "review",
                Some("min"),
                None,
                None,
            ),
            (
                "t_5e1a0003",
                "Compare kanban projections",
                "todo",
                Some("tam"),
                None,
                None,
            ),
            (
                "t_5e1a0004",
                "Draft the reporting spec",
                "done",
                Some("sol"),
                None,
                None,
            ),
            (
                "t_5e1a0005",
                "Index the audit trail",
                "running",
                Some("nova"),
                None,
                Some("crashed"),
            ),
            (
                "t_5e1a0006",
                "Triage new dialect reports",
                "triage",
                None,
                None,
                None,
            ),
        ],
        "daily-operation" => &[
            (
                "t_0d0e0001",
                "Rotate the hub's backup key",
                "blocked",
                Some("min"),
                Some("needs_input"),
                None,
            ),
            (
                "t_0d0e0002",
                "Patch the LAB host",
                "scheduled",
                Some("echo"),
                None,
                None,
            ),
            (
                "t_0d0e0003",
                "Renew the tunnel units",
                "ready",
                Some("mira"),
                None,
                Some("stale"),
            ),
            (
                "t_0d0e0004",
                "Prune old snapshots",
                "running",
                Some("nova"),
                None,
                Some("timed_out"),
            ),
        ],
        _ => &[
            (
                "t_90dc0001",
                "Record episode 12",
                "running",
                Some("echo"),
                None,
                Some("reclaimed"),
            ),
            (
                "t_90dc0002",
                "Edit episode 11",
                "review",
                Some("mira"),
                None,
                None,
            ),
            (
                "t_90dc0003",
                "Publish episode 10",
                "done",
                Some("echo"),
                None,
                None,
            ),
            (
                "t_90dc0004",
                "Book the next guest",
                "todo",
                Some("mira"),
                None,
                None,
            ),
            // Archived: in the database, left off the dashboard (boards do not include archived).
            (
                "t_90dc0005",
                "Publish episode 9",
                "archived",
                Some("echo"),
                None,
                None,
            ),
        ],
    }
}

/// Creates the boards under `hermes_home` and the vault; returns each board's database path.
pub fn create(hermes_home: &Path, vault: &Path) -> Result<Vec<(&'static DemoBoard, PathBuf)>> {
    let now = chrono::Utc::now().timestamp();
    let mut out = Vec::new();
    for board in &BOARDS {
        let dir = hermes_home.join("kanban/boards").join(board.name);
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        let db = dir.join("kanban.db");
        let _ = std::fs::remove_file(&db);
        let conn =
            Connection::open(&db).with_context(|| format!("cannot create {}", db.display()))?;
        conn.pragma_update(None, "journal_mode", "wal")?;
        conn.execute_batch(HERMES_SCHEMA)?;
        for (i, (id, title, status, assignee, block, event)) in rows(board.name).iter().enumerate()
        {
            let created = now - 3600 * (i as i64 + 1);
            let started = matches!(*status, "running" | "review" | "done" | "blocked")
                .then_some(created + 600);
            conn.execute(
                "INSERT INTO tasks (id, title, body, assignee, status, priority, created_by, created_at, started_at, block_kind)
                 VALUES (?1, ?2, 'the body stays in the database', ?3, ?4, ?5, 'young', ?6, ?7, ?8)",
                params![id, title, assignee, status, (i % 3) as i64, created, started, block],
            )?;
            conn.execute(
                "INSERT INTO task_events (task_id, kind, payload, created_at) VALUES (?1, 'claimed', '{}', ?2)",
                params![id, created + 600],
            )?;
            if let Some(kind) = event {
                conn.execute(
                    "INSERT INTO task_events (task_id, kind, payload, created_at) VALUES (?1, ?2, ?3, ?4)",
                    params![id, kind, r#"{"elapsed_seconds": 5400, "limit_seconds": 3600}"#, now - 300],
                )?;
            }
        }
        let target = vault
            .join(board.plane)
            .join("Kanban")
            .join(format!("{}.kanban", board.name));
        std::fs::create_dir_all(target.parent().expect("has a parent"))?;
        if board.hand_edited {
            std::fs::write(&target, HAND_EDITED)?;
        }
        out.push((board, db));
    }
    // The retired register sits in the vault too, and nothing ever targets it.
    std::fs::write(
        vault.join("Docs/Kanban/fleet-board.md"),
        "---\nstatus: superseded\n---\n\n# Fleet board (hand-edited register)\n",
    )?;
    std::fs::write(hermes_home.join("config.yaml"), DISPATCH_CONFIG)?;
    Ok(out)
}

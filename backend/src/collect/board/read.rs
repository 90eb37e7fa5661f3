//! Reading one board database, strictly read-only, in one read transaction.
//!
//! Hermes owns the database and writes it with `BEGIN IMMEDIATE` in WAL mode. The dashboard
//! opens it as `file:<path>?mode=ro` with `SQLITE_OPEN_READ_ONLY | SQLITE_OPEN_URI`, sets
//! `query_only`, and turns off the checkpoint-on-close (which would otherwise try an exclusive
//! lock when ours is the last connection): it never takes a write lock. In WAL mode a reader
//! sees the last committed state and neither waits for nor disturbs a writer's open
//! transaction; the busy timeout covers the short moments SQLite itself asks readers to wait
//! (WAL recovery, a rollback-journal database mid-commit), and past it the board reports a
//! timeout instead of hanging the pass.
//!
//! Only the columns a card shows are selected; `body`, `result`, comments, run summaries and
//! event payload text are never read into the output (payloads are parsed for numbers in
//! [`super::events`]). Text is cleaned ([`crate::text`]) as soon as it leaves SQLite.
//!
//! Failures carry an Agent Status Code:
//!
//! | condition | ASC |
//! | --- | --- |
//! | file missing | 4006 NOT_FOUND |
//! | no `tasks` table, or a required column missing | 4001 FAILED_PRECONDITION |
//! | not a database, or malformed (SQLITE_NOTADB, SQLITE_CORRUPT) | 7005 INTEGRITY_CHECK_FAILED |
//! | still locked when the busy timeout ran out (SQLITE_BUSY, SQLITE_LOCKED) | 5004 TIMEOUT |
//! | cannot be opened or read for permissions (SQLITE_CANTOPEN, SQLITE_PERM, EACCES) | 4002 PERMISSION_DENIED |
//! | anything else | 6001 INTERNAL_ERROR |
//!
//! 7005 rather than 6003 DATA_LOSS: the file failed SQLite's own checks, and whether data was
//! lost is Hermes' to say; it is also a code the snapshot model already names.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use fleetdash_model::Asc;
use rusqlite::config::DbConfig;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, ErrorCode, OpenFlags, Row};

use super::events::{self, Numbers, WorkerEvent, WorkerKind};
use super::schema::Schema;
use crate::net::ProbeFailure;
use crate::text::clean;

/// A card title longer than this is cut (in characters, ellipsis included).
pub const TITLE_MAX_CHARS: usize = 120;
/// Ids, assignees, statuses and block kinds are short words in Hermes; anything longer is cut.
pub const WORD_MAX_CHARS: usize = 64;

/// How long a read waits on a lock SQLite asks it to wait on, before the board reports a
/// timeout. Far below the board cadence (5 min), far above any Hermes write transaction.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(2);

#[derive(Debug, Clone)]
pub struct ReadOptions {
    pub busy_timeout: Duration,
    pub include_archived: bool,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            busy_timeout: BUSY_TIMEOUT,
            include_archived: false,
        }
    }
}

/// One task as the dashboard needs it, every text already cleaned.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRow {
    pub id: String,
    pub title: String,
    pub status: String,
    pub assignee: Option<String>,
    pub priority: Option<i64>,
    pub created_at: Option<i64>,
    pub started_at: Option<i64>,
    pub completed_at: Option<i64>,
    pub last_heartbeat_at: Option<i64>,
    pub block_kind: Option<String>,
}

/// Everything read from one board.
#[derive(Debug, Clone, Default)]
pub struct BoardRead {
    pub tasks: Vec<TaskRow>,
    /// Newest `task_events.created_at` per task id.
    pub newest_event_at: HashMap<String, i64>,
    /// The worker event that applies per task id ([`events`] says which).
    pub worker_events: HashMap<String, WorkerEvent>,
    /// Why part of the board could not be read (e.g. no `task_events`).
    pub warnings: Vec<String>,
}

/// Reads the board at `db`. Blocking: run it in `spawn_blocking`.
pub fn read_board(db: &Path, opts: &ReadOptions) -> Result<BoardRead, ProbeFailure> {
    let fail = |asc: Asc, what: String| {
        ProbeFailure::new(asc, format!("board db {}: {what}", db.display()))
    };
    match std::fs::metadata(db) {
        Ok(m) if m.is_file() => {}
        Ok(_) => return Err(fail(Asc::FAILED_PRECONDITION, "not a file".into())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(fail(Asc::NOT_FOUND, "no such file".into()));
        }
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            return Err(fail(Asc::PERMISSION_DENIED, "permission denied".into()));
        }
        Err(e) => return Err(fail(Asc::INTERNAL_ERROR, e.to_string())),
    }
    let uri = sqlite_uri(db).ok_or_else(|| {
        fail(
            Asc::FAILED_PRECONDITION,
            "the path is not valid UTF-8".into(),
        )
    })?;
    let sqlite = |e: rusqlite::Error| {
        let (asc, what) = classify(&e, opts.busy_timeout);
        fail(asc, what)
    };
    let mut conn = open(&uri, opts.busy_timeout).map_err(sqlite)?;
    // One read transaction: tasks and events come from the same committed state.
    let tx = conn.transaction().map_err(sqlite)?;
    let schema = match Schema::inspect(&tx).map_err(sqlite)? {
        Ok(s) => s,
        Err(e) => {
            return Err(fail(Asc::FAILED_PRECONDITION, e.to_string()));
        }
    };
    let mut read = BoardRead {
        tasks: read_tasks(&tx, &schema, opts.include_archived).map_err(sqlite)?,
        ..BoardRead::default()
    };
    if schema.has_events() {
        read.newest_event_at = newest_events(&tx).map_err(sqlite)?;
        read.worker_events = worker_events(&tx, &schema).map_err(sqlite)?;
    }
    read.warnings.extend(schema.events_missing.clone());
    tx.finish().map_err(sqlite)?;
    Ok(read)
}

fn open(uri: &str, busy_timeout: Duration) -> rusqlite::Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(uri, flags)?;
    conn.busy_timeout(busy_timeout)?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)?;
    conn.pragma_update(None, "query_only", true)?;
    Ok(conn)
}

/// `file:<path>?mode=ro`, with the characters a URI path cannot hold percent-encoded.
pub fn sqlite_uri(path: &Path) -> Option<String> {
    let text = path.to_str()?;
    let mut uri = String::from("file:");
    if path.is_absolute() {
        // `file:///abs`: an empty authority, so a path starting with `//` stays a path.
        uri.push_str("//");
    }
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"/-_.~+,;=:@!$&'()*".contains(&b) {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri.push_str("?mode=ro");
    Some(uri)
}

fn classify(e: &rusqlite::Error, busy_timeout: Duration) -> (Asc, String) {
    match e.sqlite_error_code() {
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => (
            Asc::INTEGRITY_CHECK_FAILED,
            format!("damaged or not a SQLite database ({e})"),
        ),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => (
            Asc::TIMEOUT,
            format!(
                "still locked after {} ({e})",
                humantime::format_duration(busy_timeout)
            ),
        ),
        Some(
            ErrorCode::CannotOpen
            | ErrorCode::PermissionDenied
            | ErrorCode::AuthorizationForStatementDenied,
        ) => (Asc::PERMISSION_DENIED, format!("cannot open or read ({e})")),
        _ => (Asc::INTERNAL_ERROR, e.to_string()),
    }
}

fn read_tasks(
    conn: &Connection,
    schema: &Schema,
    include_archived: bool,
) -> rusqlite::Result<Vec<TaskRow>> {
    let optional = [
        "assignee",
        "priority",
        "started_at",
        "completed_at",
        "last_heartbeat_at",
        "block_kind",
    ]
    .map(|c| schema.task_column_or_null(c))
    .join(", ");
    let filter = if include_archived {
        ""
    } else {
        " WHERE status IS NOT 'archived'"
    };
    let sql = format!("SELECT id, title, status, created_at, {optional} FROM tasks{filter}");
    let mut stmt = conn.prepare(&sql)?;
    let rows = stmt.query_map([], |row| {
        Ok(TaskRow {
            id: word(row, 0)?.unwrap_or_else(|| "(no id)".to_string()),
            title: text(row, 1)?
                .map(|t| clean(&t, TITLE_MAX_CHARS))
                .unwrap_or_default(),
            status: word(row, 2)?
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| "(no status)".to_string()),
            created_at: int(row, 3)?,
            assignee: word(row, 4)?.filter(|a| !a.is_empty()),
            priority: int(row, 5)?,
            started_at: int(row, 6)?,
            completed_at: int(row, 7)?,
            last_heartbeat_at: int(row, 8)?,
            // Hermes stores "" for "not set".
            block_kind: word(row, 9)?.filter(|k| !k.is_empty()),
        })
    })?;
    rows.collect()
}

fn newest_events(conn: &Connection) -> rusqlite::Result<HashMap<String, i64>> {
    let mut stmt =
        conn.prepare("SELECT task_id, MAX(created_at) FROM task_events GROUP BY task_id")?;
    let rows = stmt.query_map([], |row| Ok((word(row, 0)?, int(row, 1)?)))?;
    let mut out = HashMap::new();
    for row in rows {
        if let (Some(task), Some(at)) = row? {
            out.insert(task, at);
        }
    }
    Ok(out)
}

fn worker_events(
    conn: &Connection,
    schema: &Schema,
) -> rusqlite::Result<HashMap<String, WorkerEvent>> {
    let sql = events::since_reset_sql(schema.has_event_column("payload"));
    let mut stmt = conn.prepare(&sql)?;
    let rows = stmt.query_map([], |row| {
        let task = word(row, 0)?;
        let kind = text(row, 1)?.as_deref().and_then(WorkerKind::parse);
        let event = kind.map(|kind| -> rusqlite::Result<WorkerEvent> {
            Ok(WorkerEvent {
                kind,
                event_id: int(row, 2)?.unwrap_or(0),
                created_at: int(row, 3)?,
                numbers: Numbers::from_payload(text(row, 4)?.as_deref()),
                count: int(row, 5)?
                    .and_then(|c| u64::try_from(c).ok())
                    .unwrap_or(1),
            })
        });
        Ok((task, event.transpose()?))
    })?;
    let mut found = Vec::new();
    for row in rows {
        if let (Some(task), Some(event)) = row? {
            found.push((task, event));
        }
    }
    Ok(events::newest_per_task(found))
}

/// A column as text, whatever SQLite stored it as (blobs are not text).
fn text(row: &Row, i: usize) -> rusqlite::Result<Option<String>> {
    Ok(match row.get_ref(i)? {
        ValueRef::Text(b) => Some(String::from_utf8_lossy(b).into_owned()),
        ValueRef::Integer(n) => Some(n.to_string()),
        ValueRef::Real(f) => Some(f.to_string()),
        ValueRef::Null | ValueRef::Blob(_) => None,
    })
}

/// A short text column (id, status, assignee, kind), cleaned and bounded.
fn word(row: &Row, i: usize) -> rusqlite::Result<Option<String>> {
    Ok(text(row, i)?.map(|t| clean(&t, WORD_MAX_CHARS)))
}

/// A column as an integer: Hermes writes INTEGER, but a REAL or numeric TEXT is accepted.
fn int(row: &Row, i: usize) -> rusqlite::Result<Option<i64>> {
    Ok(match row.get_ref(i)? {
        ValueRef::Integer(n) => Some(n),
        ValueRef::Real(f) if f.is_finite() => Some(f as i64),
        ValueRef::Text(b) => std::str::from_utf8(b)
            .ok()
            .and_then(|s| s.trim().parse::<f64>().ok())
            .filter(|f| f.is_finite())
            .map(|f| f as i64),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_are_read_only_and_escape_what_a_uri_path_cannot_hold() {
        assert_eq!(
            sqlite_uri(Path::new("/var/lib/hermes/kanban.db")).unwrap(),
            "file:///var/lib/hermes/kanban.db?mode=ro"
        );
        assert_eq!(
            sqlite_uri(Path::new("/a b/c?d#e%f/é.db")).unwrap(),
            "file:///a%20b/c%3Fd%23e%25f/%C3%A9.db?mode=ro"
        );
        assert_eq!(
            sqlite_uri(Path::new("rel/k.db")).unwrap(),
            "file:rel/k.db?mode=ro"
        );
    }

    #[test]
    fn a_missing_file_is_not_found_and_is_not_created() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("kanban.db");
        let err = read_board(&db, &ReadOptions::default()).unwrap_err();
        assert_eq!(err.asc, Asc::NOT_FOUND);
        assert!(err.reason.contains("kanban.db") && err.reason.contains("no such file"));
        assert!(!db.exists());
    }

    #[test]
    fn odd_paths_open_through_the_uri() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("a b?#%");
        std::fs::create_dir(&folder).unwrap();
        let db = folder.join("kanban.db");
        Connection::open(&db)
            .unwrap()
            .execute_batch(
                "CREATE TABLE tasks (id TEXT, title TEXT, status TEXT, created_at INTEGER);
                 INSERT INTO tasks VALUES ('t_1', 'one', 'ready', 1);",
            )
            .unwrap();
        let read = read_board(&db, &ReadOptions::default()).unwrap();
        assert_eq!(read.tasks.len(), 1);
        assert_eq!(read.warnings.len(), 1, "no task_events table is said");
    }
}

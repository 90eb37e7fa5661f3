//! Reading one board database, strictly read-only, in one short read transaction, without
//! creating, owning, write-locking or checkpointing anything in Hermes' folder.
//!
//! Hermes owns the database and writes it with `BEGIN IMMEDIATE` in WAL mode; when its last
//! connection closes, SQLite checkpoints and deletes `-wal` and `-shm`. The collector usually
//! runs as another Unix user, in a folder it may not be able to write. How a read opens the
//! board depends on what the folder holds at that moment:
//!
//! - **No `-wal` and no `-journal`** (an idle board: every committed page is in the main file):
//!   `immutable=1`. SQLite then takes no lock and opens no other file. Immutable means SQLite
//!   trusts the file not to change, so the read is only kept if the main file's identity, size,
//!   mtime and ctime are the same after it and no `-wal` or `-journal` appeared; otherwise the
//!   board is read again (a Hermes that opened meanwhile is read the other way).
//! - **A `-wal` or `-journal`** (Hermes is connected, or stopped uncleanly): `mode=ro` with
//!   `readonly_shm=1`, so the `-shm` is opened read-only and never created; a WAL reader sees
//!   the last committed state and neither waits for nor disturbs a writer's open transaction.
//!   Checkpoint-on-close is off and `query_only` is on.
//!
//! Both go through [`super::vfs`], which opens the database's files read-only and only if they
//! exist: SQLite's own open would create a `-wal` that vanished between our look and its own.
//! A `-wal` without a `-shm` (Hermes' close caught half-way, or a crash) cannot be read without
//! creating one: it is read again, and if it stays so, a clear error says why.
//!
//! One read transaction per pass holds tasks and events from the same committed state, and
//! it only copies rows: cleaning text and parsing payloads happen after it ends. Hermes checks
//! its file length after each commit and raises "torn-extend detected" when a checkpoint was
//! cut short by a reader's snapshot, so the snapshot is held as briefly as possible. The busy
//! timeout covers the short moments SQLite asks readers to wait (WAL recovery, a
//! rollback-journal database mid-commit); past it the board reports a timeout.
//!
//! Only the columns a card shows are selected; `body`, `result`, comments and run summaries
//! are never read. Event payloads are read for their numbers and, for a manual reclaim, its
//! reason ([`super::events`]). Text is cleaned ([`crate::text`]) before it goes anywhere.
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
//! | a `-wal` without `-shm`, the board changed under every attempt, or SQLite needed a writer's step every time | 5000 RETRYABLE_ERROR |
//! | anything else | 6001 INTERNAL_ERROR |
//!
//! 7005 rather than 6003 DATA_LOSS: the file failed SQLite's own checks, and whether data was
//! lost is Hermes' to say; it is also a code the snapshot model already names.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fleetdash_model::Asc;
use rusqlite::config::DbConfig;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, ErrorCode, OpenFlags, Row};

use super::events::{self, RawEvent, TaskEvents};
use super::schema::{OPTIONAL_TASK_COLUMNS, REQUIRED_TASK_COLUMNS, Schema};
use super::vfs;
use crate::net::ProbeFailure;
use crate::text::clean;

/// A card title longer than this is cut (in characters, ellipsis included).
pub const TITLE_MAX_CHARS: usize = 120;
/// Ids, assignees, statuses and block kinds are short words in Hermes; anything longer is cut.
pub const WORD_MAX_CHARS: usize = 64;

/// How long a read waits on a lock SQLite asks it to wait on, before the board reports a
/// timeout. Far below the board cadence (5 min), far above any Hermes write transaction.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(2);

/// How many times one pass reads a board that changed under the read (Hermes opened or
/// closed it meanwhile) before it reports that instead. Each change is Hermes' open or close,
/// so a second attempt almost always finds the board settled.
pub const READ_ATTEMPTS: u32 = 3;

/// The pause before reading again a board that changed under the read or was caught
/// mid-update: long enough for Hermes to finish a commit or a close, short beside a pass.
pub const RETRY_PAUSE: Duration = Duration::from_millis(50);

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
    /// The worker events that apply per task id ([`events`] says which).
    pub worker_events: HashMap<String, TaskEvents>,
    /// Why part of the board could not be read (e.g. no `task_events`).
    pub warnings: Vec<String>,
    /// How the database was opened (tests and the bench look).
    pub access: Access,
}

/// How one read opened the database.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Access {
    /// `immutable=1`: no `-wal`, no `-journal`; no lock, no other file.
    #[default]
    Immutable,
    /// `mode=ro&readonly_shm=1`: through the WAL (or a journal) Hermes has open.
    Shared,
}

/// The files of a board as seen from outside SQLite: the main file's identity and change
/// times, and which of its companions exist.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Folder {
    main: Option<MainFile>,
    wal: bool,
    shm: bool,
    journal: bool,
}

/// Device, inode, size, and mtime and ctime (seconds, nanoseconds): any write, replace or
/// checkpoint of the main file changes one of them.
type MainFile = (u64, u64, u64, (i64, i64), (i64, i64));

impl Folder {
    fn observe(db: &Path) -> Folder {
        let beside = |suffix: &str| {
            let mut name = db.as_os_str().to_owned();
            name.push(suffix);
            PathBuf::from(name).exists()
        };
        Folder {
            main: std::fs::metadata(db).ok().map(|m| {
                (
                    m.dev(),
                    m.ino(),
                    m.size(),
                    (m.mtime(), m.mtime_nsec()),
                    (m.ctime(), m.ctime_nsec()),
                )
            }),
            wal: beside("-wal"),
            shm: beside("-shm"),
            journal: beside("-journal"),
        }
    }

    /// The same main file (device, inode) with the same companions.
    fn same_files(&self, other: &Folder) -> bool {
        let id = |f: &Folder| f.main.map(|(dev, ino, ..)| (dev, ino));
        id(self) == id(other)
            && (self.wal, self.shm, self.journal) == (other.wal, other.shm, other.journal)
    }

    fn access(&self) -> Access {
        if self.wal || self.journal {
            Access::Shared
        } else {
            Access::Immutable
        }
    }
}

/// Reads the board at `db`. Blocking: run it in `spawn_blocking`.
pub fn read_board(db: &Path, opts: &ReadOptions) -> Result<BoardRead, ProbeFailure> {
    read_board_recording(db, opts, &mut Vec::new())
}

/// [`read_board`], noting in `retried` when each read that was tried again started and how
/// long it took (each a RETRYABLE_ERROR; a last one that failed is the read's own failure).
pub fn read_board_recording(
    db: &Path,
    opts: &ReadOptions,
    retried: &mut Vec<(Instant, Duration)>,
) -> Result<BoardRead, ProbeFailure> {
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
    let vfs = vfs::register().map_err(|rc| {
        fail(
            Asc::INTERNAL_ERROR,
            format!("the read-only SQLite VFS could not be registered (SQLite code {rc})"),
        )
    })?;
    let sqlite = |e: rusqlite::Error| {
        let (asc, what) = classify(&e, opts.busy_timeout);
        fail(asc, what)
    };
    let changed = format!(
        "the board changed under {READ_ATTEMPTS} reads in a row (Hermes opening or closing \
         it); the next pass reads it again"
    );
    let mut why_again = String::new();
    for attempt in 0..READ_ATTEMPTS {
        if attempt > 0 {
            std::thread::sleep(RETRY_PAUSE);
        }
        let started = Instant::now();
        let before = Folder::observe(db);
        let access = before.access();
        let uri = sqlite_uri(db, access).ok_or_else(|| {
            fail(
                Asc::FAILED_PRECONDITION,
                "the path is not valid UTF-8".into(),
            )
        })?;
        let raw = read_raw(&uri, vfs, opts);
        let after = Folder::observe(db);
        why_again = match (access, raw) {
            // Immutable: only what was read from a file that did not change is kept.
            (Access::Immutable, _) if after != before => changed.clone(),
            // Hermes opened or closed the board during the read (a -wal that vanished
            // before SQLite opened it is one way): look again. Its commits and checkpoints
            // alone (size, mtime) are no reason: SQLite's WAL locks cover those.
            (Access::Shared, Err(_)) if !after.same_files(&before) => changed.clone(),
            // A -wal caught without its -shm: reading it would mean creating one.
            (Access::Shared, Err(e)) if is_cant_open(&e) && after.wal && !after.shm => {
                "its -wal exists without its -shm (Hermes stopped half-way through closing \
                 it?); fleetdash never creates files in Hermes' folder, so it reads the board \
                 again once Hermes has opened it"
                    .to_string()
            }
            // A query-only reader only meets these when SQLite wanted to write the -shm
            // (recover a WAL index caught mid-update by Hermes' commit), which is Hermes' to
            // do: the hermes_writes bench meets one in a few thousand reads under flat-out
            // writes.
            (Access::Shared, Err(e)) if needs_a_writer(&e) => format!(
                "SQLite asked for a step only a writer may take ({e}) {READ_ATTEMPTS} times; \
                 the next pass reads it again"
            ),
            (_, Err(e)) => return Err(sqlite(e)),
            (_, Ok(Raw::Schema(why))) => return Err(fail(Asc::FAILED_PRECONDITION, why)),
            (_, Ok(Raw::Rows(raw))) => return Ok(raw.finish(access)),
        };
        retried.push((started, started.elapsed()));
    }
    // The last read's failure is the board's, not a read tried again.
    retried.pop();
    Err(fail(Asc::RETRYABLE_ERROR, why_again))
}

/// SQLITE_READONLY (e.g. READONLY_RECOVERY) or SQLITE_PROTOCOL on a connection that never
/// writes: the WAL index was caught mid-update.
fn needs_a_writer(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::ReadOnly | ErrorCode::FileLockingProtocolFailed)
    )
}

/// `SQLITE_CANTOPEN`: with our VFS, a file that was not there to open.
fn is_cant_open(e: &rusqlite::Error) -> bool {
    e.sqlite_error_code() == Some(ErrorCode::CannotOpen)
}

/// What one attempt got out of SQLite.
enum Raw {
    Rows(RawBoard),
    /// The schema is not a board's (the reason).
    Schema(String),
}

/// Rows as SQLite gave them, copied out of the read transaction.
struct RawBoard {
    tasks: Vec<RawTask>,
    newest_events: Vec<(Option<String>, Option<i64>)>,
    events: Vec<RawEvent>,
    warnings: Vec<String>,
}

struct RawTask {
    id: Option<String>,
    title: Option<String>,
    status: Option<String>,
    created_at: Option<i64>,
    assignee: Option<String>,
    priority: Option<i64>,
    started_at: Option<i64>,
    completed_at: Option<i64>,
    last_heartbeat_at: Option<i64>,
    block_kind: Option<String>,
}

/// One read transaction that only copies rows.
fn read_raw(uri: &str, vfs: &str, opts: &ReadOptions) -> rusqlite::Result<Raw> {
    let mut conn = open(uri, vfs, opts.busy_timeout)?;
    let tx = conn.transaction()?;
    let schema = match Schema::inspect(&tx)? {
        Ok(s) => s,
        Err(e) => return Ok(Raw::Schema(e.to_string())),
    };
    let tasks = read_tasks(&tx, &schema, opts.include_archived)?;
    let (newest_events, events) = if schema.has_events() {
        (
            newest_events(&tx)?,
            worker_events(&tx, schema.has_event_column("payload"))?,
        )
    } else {
        (Vec::new(), Vec::new())
    };
    tx.finish()?;
    Ok(Raw::Rows(RawBoard {
        tasks,
        newest_events,
        events,
        warnings: schema.events_missing.into_iter().collect(),
    }))
}

impl RawBoard {
    /// Cleaning and mapping, after the read transaction has ended.
    fn finish(self, access: Access) -> BoardRead {
        let word = |t: Option<String>| t.map(|t| clean(&t, WORD_MAX_CHARS));
        let tasks = self
            .tasks
            .into_iter()
            .map(|t| TaskRow {
                id: word(t.id).unwrap_or_else(|| "(no id)".to_string()),
                title: t
                    .title
                    .map(|t| clean(&t, TITLE_MAX_CHARS))
                    .unwrap_or_default(),
                status: word(t.status)
                    .filter(|s| !s.is_empty())
                    .unwrap_or_else(|| "(no status)".to_string()),
                created_at: t.created_at,
                assignee: word(t.assignee).filter(|a| !a.is_empty()),
                priority: t.priority,
                started_at: t.started_at,
                completed_at: t.completed_at,
                last_heartbeat_at: t.last_heartbeat_at,
                // Hermes stores "" for "not set".
                block_kind: word(t.block_kind).filter(|k| !k.is_empty()),
            })
            .collect();
        let newest_event_at = self
            .newest_events
            .into_iter()
            .filter_map(|(task, at)| Some((word(task)?, at?)))
            .collect();
        let worker_events = events::per_task(self.events, |t| clean(t, WORD_MAX_CHARS));
        BoardRead {
            tasks,
            newest_event_at,
            worker_events,
            warnings: self.warnings,
            access,
        }
    }
}

fn open(uri: &str, vfs: &str, busy_timeout: Duration) -> rusqlite::Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags_and_vfs(uri, flags, vfs)?;
    conn.busy_timeout(busy_timeout)?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)?;
    conn.pragma_update(None, "query_only", true)?;
    Ok(conn)
}

/// `file:<path>?...` with the characters a URI path cannot hold percent-encoded, and the
/// parameters of `access`.
pub fn sqlite_uri(path: &Path, access: Access) -> Option<String> {
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
    uri.push_str(match access {
        Access::Immutable => "?mode=ro&immutable=1",
        Access::Shared => "?mode=ro&readonly_shm=1",
    });
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
) -> rusqlite::Result<Vec<RawTask>> {
    // The columns are read by position below, in the order of OPTIONAL_TASK_COLUMNS.
    let optional = OPTIONAL_TASK_COLUMNS
        .map(|c| schema.task_column_or_null(c))
        .join(", ");
    let filter = if include_archived {
        ""
    } else {
        " WHERE status IS NOT 'archived'"
    };
    let required = REQUIRED_TASK_COLUMNS.join(", ");
    let sql = format!("SELECT {required}, {optional} FROM tasks{filter}");
    let mut stmt = conn.prepare(&sql)?;
    let rows = stmt.query_map([], |row| {
        Ok(RawTask {
            id: text(row, 0)?,
            title: text(row, 1)?,
            status: text(row, 2)?,
            created_at: int(row, 3)?,
            assignee: text(row, 4)?,
            priority: int(row, 5)?,
            started_at: int(row, 6)?,
            completed_at: int(row, 7)?,
            last_heartbeat_at: int(row, 8)?,
            block_kind: text(row, 9)?,
        })
    })?;
    rows.collect()
}

fn newest_events(conn: &Connection) -> rusqlite::Result<Vec<(Option<String>, Option<i64>)>> {
    let mut stmt =
        conn.prepare("SELECT task_id, MAX(created_at) FROM task_events GROUP BY task_id")?;
    let rows = stmt.query_map([], |row| Ok((text(row, 0)?, int(row, 1)?)))?;
    rows.collect()
}

fn worker_events(conn: &Connection, has_payload: bool) -> rusqlite::Result<Vec<RawEvent>> {
    let mut stmt = conn.prepare(&events::since_completion_sql(has_payload))?;
    let rows = stmt.query_map([], |row| {
        Ok(RawEvent {
            task_id: text(row, 0)?,
            id: int(row, 1)?.unwrap_or(0),
            kind: text(row, 2)?,
            created_at: int(row, 3)?,
            payload: text(row, 4)?,
        })
    })?;
    rows.collect()
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
            sqlite_uri(Path::new("/var/lib/hermes/kanban.db"), Access::Shared).unwrap(),
            "file:///var/lib/hermes/kanban.db?mode=ro&readonly_shm=1"
        );
        assert_eq!(
            sqlite_uri(Path::new("/a b/c?d#e%f/é.db"), Access::Immutable).unwrap(),
            "file:///a%20b/c%3Fd%23e%25f/%C3%A9.db?mode=ro&immutable=1"
        );
        assert_eq!(
            sqlite_uri(Path::new("rel/k.db"), Access::Shared).unwrap(),
            "file:rel/k.db?mode=ro&readonly_shm=1"
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

    /// Every file of a folder with its size, mtime and owner.
    fn listing(dir: &Path) -> Vec<(String, u64, i64, i64, u32)> {
        let mut out: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let m = e.metadata().unwrap();
                (
                    e.file_name().to_string_lossy().into_owned(),
                    m.size(),
                    m.mtime(),
                    m.mtime_nsec(),
                    m.uid(),
                )
            })
            .collect();
        out.sort();
        out
    }

    fn wal_board(db: &Path) -> Connection {
        let c = Connection::open(db).unwrap();
        c.pragma_update(None, "journal_mode", "wal").unwrap();
        c.execute_batch(
            "CREATE TABLE tasks (id TEXT, title TEXT, status TEXT, created_at INTEGER);
             CREATE TABLE task_events (id INTEGER PRIMARY KEY AUTOINCREMENT, task_id TEXT,
                 kind TEXT, payload TEXT, created_at INTEGER);
             INSERT INTO tasks VALUES ('t_1', 'one', 'ready', 1);
             INSERT INTO task_events (task_id, kind, payload, created_at)
                 VALUES ('t_1', 'crashed', '{}', 2);",
        )
        .unwrap();
        c
    }

    /// Was: each read of an idle board created -wal and -shm (owned by the reader's user) and
    /// took SQLite's exclusive lock to open the WAL.
    #[test]
    fn an_idle_wal_board_is_read_without_a_file_appearing_or_changing() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("kanban.db");
        drop(wal_board(&db));
        let before = listing(dir.path());
        assert_eq!(before.len(), 1, "Hermes' last close removed -wal and -shm");
        let read = read_board(&db, &ReadOptions::default()).unwrap();
        assert_eq!(read.access, Access::Immutable);
        assert_eq!(read.tasks.len(), 1);
        assert!(read.worker_events.contains_key("t_1"));
        assert_eq!(listing(dir.path()), before);
    }

    #[test]
    fn a_board_hermes_has_open_is_read_through_its_wal_without_touching_its_files() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("kanban.db");
        let hermes = wal_board(&db);
        hermes
            .execute("INSERT INTO tasks VALUES ('t_2', 'two', 'todo', 3)", [])
            .unwrap();
        let before = listing(dir.path());
        assert_eq!(before.len(), 3, "{before:?}");
        let read = read_board(&db, &ReadOptions::default()).unwrap();
        assert_eq!(read.access, Access::Shared);
        assert_eq!(read.tasks.len(), 2, "the WAL's commits are read");
        assert_eq!(listing(dir.path()), before);
        // Hermes' own checkpoint finds no reader left behind.
        let busy: i64 = hermes
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))
            .unwrap();
        assert_eq!(busy, 0);
    }

    #[test]
    fn a_wal_without_its_shm_is_a_clear_error_and_no_shm_is_created() {
        let dir = tempfile::tempdir().unwrap();
        let live = dir.path().join("live");
        std::fs::create_dir(&live).unwrap();
        let hermes = wal_board(&live.join("kanban.db"));
        // What a crash half-way through Hermes' close leaves: the WAL without its index.
        let left = dir.path().join("left");
        std::fs::create_dir(&left).unwrap();
        for name in ["kanban.db", "kanban.db-wal"] {
            std::fs::copy(live.join(name), left.join(name)).unwrap();
        }
        drop(hermes);
        let before = listing(&left);
        let err = read_board(&left.join("kanban.db"), &ReadOptions::default()).unwrap_err();
        assert_eq!(err.asc, Asc::RETRYABLE_ERROR, "{err:?}");
        assert!(
            err.reason.contains("-wal exists without its -shm")
                && err.reason.contains("never creates files"),
            "{}",
            err.reason
        );
        assert_eq!(listing(&left), before);
    }
}

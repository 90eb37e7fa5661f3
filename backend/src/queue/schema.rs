//! Opening the queue's file: refusing what is not ours (not SQLite, corrupt, another program's
//! database, a newer schema) before anything is written, then WAL with `synchronous = FULL`
//! (a commit is on disk before `apply` answers) and the migrations up to [`CURRENT_VERSION`].
//!
//! The schema's version is `PRAGMA user_version`; `application_id` marks the file as a
//! fleetdash work queue, so that a `db` pointing at, say, a Hermes board is refused instead of
//! having tables added to it. Recognising the file is [`crate::sqlite`]'s (shared with the
//! alert outbox); refusing it, untouched, is the queue's own policy.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use crate::sqlite::{self, Kind, NotOurs, Unrecognised};

/// "FDWQ": a fleetdash work queue (SQLite's `application_id`).
pub const APPLICATION_ID: i32 = 0x4644_5751;

/// The schema this build reads and writes.
pub const CURRENT_VERSION: i32 = 3;

/// What makes a file a fleetdash work queue: its mark and its version (no tables: a file
/// holding anything without the mark is another program's).
const KIND: Kind = Kind {
    application_id: APPLICATION_ID,
    schema_version: CURRENT_VERSION,
    tables: None,
};

/// How long a connection waits for another's lock (a reader's checkpoint, a second writer)
/// before it reports the database busy.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Each migration takes the file from the version before it to its own, in one transaction.
/// Adding v3 is one entry here, e.g.
/// `(3, "ALTER TABLE tasks ADD COLUMN priority INTEGER; ")`, and `CURRENT_VERSION = 3`: an
/// older file is migrated when the writer opens it, a newer file is refused by an older build.
const MIGRATIONS: &[(i32, &str)] = &[(1, V1), (2, V2), (3, V3)];

const V1: &str = "
CREATE TABLE tasks (
    id TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    owner TEXT,
    tagged TEXT NOT NULL DEFAULT '[]',
    created_by TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    deadline INTEGER,
    state TEXT NOT NULL CHECK (state GLOB 'TASK_STATE_*'),
    ack_kind TEXT CHECK (ack_kind IN ('owning', 'escalating', 'blocked', 'yielded')),
    ack_by TEXT,
    ack_at INTEGER,
    ack_eta INTEGER,
    ack_to TEXT,
    ack_on TEXT,
    yielded TEXT NOT NULL DEFAULT '[]',
    blocked_on TEXT,
    last_report_at INTEGER,
    status_message TEXT,
    worker_died INTEGER NOT NULL DEFAULT 0,
    reporter TEXT NOT NULL,
    context_id TEXT
) STRICT;
CREATE INDEX tasks_by_creation ON tasks (created_at);
CREATE INDEX tasks_by_state ON tasks (state);

-- Every applied report (and every watchdog transition), never rewritten: kinds and structured
-- fields only, never message text.
CREATE TABLE events (
    seq INTEGER PRIMARY KEY,
    reporter_kind TEXT NOT NULL CHECK (reporter_kind IN ('agent', 'operator', 'watchdog')),
    reporter TEXT NOT NULL,
    message_id TEXT NOT NULL,
    context_id TEXT,
    received_at INTEGER NOT NULL,
    kind TEXT NOT NULL,
    task_id TEXT,
    outcome TEXT NOT NULL,
    fields TEXT NOT NULL,
    UNIQUE (reporter_kind, reporter, message_id)
) STRICT;
CREATE TRIGGER events_are_append_only_update BEFORE UPDATE ON events
    BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
CREATE TRIGGER events_are_append_only_delete BEFORE DELETE ON events
    BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;

-- Per agent: its last report of any kind and its last heartbeat (push checks).
CREATE TABLE agents (
    name TEXT PRIMARY KEY,
    last_report_at INTEGER NOT NULL,
    last_heartbeat_at INTEGER,
    last_activity_at INTEGER,
    in_flight TEXT NOT NULL DEFAULT '[]'
) STRICT;
";

/// v2 (issue 21): when a task finished (the finished-task retention counts from it) and when the
/// operator dismissed it (`fleetdash task dismiss`; the dismissal is an event too, the row is
/// never deleted). A task finished under v1 gets the time of the event that finished it, else
/// its last report. A v1 file is still read as it is (`fleetdash collect`, `fleetdash tasks`
/// never migrate): see `rows::select`.
const V2: &str = "
ALTER TABLE tasks ADD COLUMN finished_at INTEGER;
ALTER TABLE tasks ADD COLUMN dismissed_at INTEGER;
UPDATE tasks SET finished_at = f.at FROM (
    SELECT task_id, max(received_at) AS at FROM events
    WHERE outcome = 'applied' AND kind IN ('completion', 'orphaned') AND task_id IS NOT NULL
    GROUP BY task_id
) AS f
WHERE f.task_id = tasks.id AND tasks.state IN ('TASK_STATE_COMPLETED', 'TASK_STATE_FAILED',
    'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED');
UPDATE tasks SET finished_at = coalesce(last_report_at, created_at)
WHERE finished_at IS NULL AND state IN ('TASK_STATE_COMPLETED', 'TASK_STATE_FAILED',
    'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED');
";

/// v3 (issue 33): the file has a retention (`queue::retention`). Events are still never
/// rewritten, and those of a task the file holds are never deleted; an event about no stored
/// task (a heartbeat, the events of a task gone) may be. An open task is never deleted. The
/// retention finds a task's events by its id.
const V3: &str = "
DROP TRIGGER events_are_append_only_delete;
CREATE TRIGGER events_stay_with_their_task BEFORE DELETE ON events
    WHEN old.task_id IS NOT NULL AND EXISTS (SELECT 1 FROM tasks WHERE id = old.task_id)
    BEGIN SELECT RAISE(ABORT, 'an event is kept while its task is'); END;
CREATE TRIGGER open_tasks_stay BEFORE DELETE ON tasks
    WHEN old.finished_at IS NULL
    BEGIN SELECT RAISE(ABORT, 'an open task is never deleted'); END;
CREATE INDEX events_by_task ON events (task_id);
";

/// Opens `path` for writing: checked, migrated, WAL, durable commits. Nothing is written to a
/// file that is refused. The WAL left on disk after a checkpoint is cut back to
/// `wal_kept_bytes` (the rules' `queue_file.wal_kept_bytes`, SQLite's `journal_size_limit`):
/// otherwise it keeps the size of the largest burst it ever held for good (issue 33).
pub fn open_writer(path: &Path, wal_kept_bytes: u64) -> Result<Connection, String> {
    let named = |what: &str, e: &dyn std::fmt::Display| format!("{}: {what}: {e}", path.display());
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| named("cannot create its folder", &e))?;
    }
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| named("cannot open the work queue", &e))?;
    conn.busy_timeout(BUSY_TIMEOUT)
        .map_err(|e| named("cannot set the busy timeout", &e))?;
    // Reads only, until the file is known to be ours.
    let version = inspect(&conn, path)?;
    conn.pragma_update(None, "journal_mode", "WAL")
        .map_err(|e| named("cannot switch to WAL", &e))?;
    // FULL: in WAL mode NORMAL may lose the last commits on power loss; an answered report
    // must not be lost, and group commit pays for the fsync.
    conn.pragma_update(None, "synchronous", "FULL")
        .map_err(|e| named("cannot make commits durable", &e))?;
    conn.pragma_update(None, "foreign_keys", true)
        .map_err(|e| named("cannot enable foreign keys", &e))?;
    // The writer never checkpoints: a checkpoint fsyncs the database file inside a commit and
    // holds up every caller of that batch. The checkpointer's own connection does it beside it.
    conn.pragma_update(None, "wal_autocheckpoint", 0)
        .map_err(|e| named("cannot hand checkpoints to the checkpointer", &e))?;
    conn.pragma_update(None, "journal_size_limit", wal_limit(wal_kept_bytes))
        .map_err(|e| named("cannot bound the WAL", &e))?;
    migrate(&conn, version).map_err(|e| named("cannot migrate the schema", &e))?;
    Ok(conn)
}

/// A read-only connection beside the writer (which must have opened the file first).
pub fn open_reader(path: &Path) -> Result<Connection, String> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| {
        format!(
            "{}: cannot open the work queue to read: {e}",
            path.display()
        )
    })?;
    conn.busy_timeout(BUSY_TIMEOUT)
        .map_err(|e| format!("{}: cannot set the busy timeout: {e}", path.display()))?;
    Ok(conn)
}

/// The checkpointer's connection: read-write, used only to copy the WAL into the database.
/// After every connection of ours is closed: one that reads (so it opens the WAL), checkpoints
/// everything into the file and closes last, so SQLite removes the -wal and -shm files.
pub fn tidy_after_close(path: &Path) -> Result<(), String> {
    // A TRUNCATE checkpoint empties the WAL whatever its limit.
    let conn = open_read_write(path)?;
    conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| {
        r.get::<_, i64>(0)
    })
    .map_err(|e| format!("{}: cannot read the work queue: {e}", path.display()))?;
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .map_err(|e| format!("{}: the final checkpoint failed: {e}", path.display()))?;
    drop(conn);
    Ok(())
}

/// Its WAL cut back to `wal_kept_bytes` after each checkpoint, as the writer's.
pub fn open_checkpointer(path: &Path, wal_kept_bytes: u64) -> Result<Connection, String> {
    let conn = open_read_write(path)?;
    conn.pragma_update(None, "journal_size_limit", wal_limit(wal_kept_bytes))
        .map_err(|e| format!("{}: cannot bound the WAL: {e}", path.display()))?;
    Ok(conn)
}

/// SQLite's `journal_size_limit` is signed; the rules bound the value far below its range.
fn wal_limit(bytes: u64) -> i64 {
    i64::try_from(bytes).unwrap_or(i64::MAX)
}

/// A read-write connection with durable checkpoints (the checkpointer's and the last one's).
fn open_read_write(path: &Path) -> Result<Connection, String> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| {
        format!(
            "{}: cannot open the work queue to checkpoint: {e}",
            path.display()
        )
    })?;
    conn.busy_timeout(BUSY_TIMEOUT)
        .map_err(|e| format!("{}: cannot set the busy timeout: {e}", path.display()))?;
    conn.pragma_update(None, "synchronous", "FULL")
        .map_err(|e| format!("{}: cannot make checkpoints durable: {e}", path.display()))?;
    Ok(conn)
}

/// The file's schema version, after making sure it is a healthy fleetdash work queue (or a new,
/// empty database) this build can read ([`crate::sqlite::recognise`]). Reads only. A file that
/// is not ours is refused and left untouched, said with its path and what to do.
pub(super) fn inspect(conn: &Connection, path: &Path) -> Result<i32, String> {
    let file = path.display();
    sqlite::recognise(conn, &KIND).map_err(|e| match e {
        Unrecognised::Unreadable(e) => format!("{file}: cannot read the work queue: {e}"),
        Unrecognised::NotOurs(NotOurs::NotADatabase(_)) => {
            format!("{file}: not a SQLite database (not a work queue); left untouched")
        }
        Unrecognised::NotOurs(NotOurs::Corrupt(e)) => {
            format!("{file}: the database is corrupt ({e}); left untouched")
        }
        Unrecognised::NotOurs(NotOurs::Damaged(check)) => {
            format!("{file}: the database is corrupt (quick_check: {check}); left untouched")
        }
        Unrecognised::NotOurs(NotOurs::Newer { version }) => format!(
            "{file}: work queue schema version {version} is newer than this fleetdash reads \
             ({CURRENT_VERSION}); left untouched: upgrade fleetdash"
        ),
        // The work queue is known by its mark alone ([`KIND`] names no tables).
        Unrecognised::NotOurs(
            NotOurs::OtherProgram { .. } | NotOurs::OtherTables(_) | NotOurs::OtherColumns { .. },
        ) => format!(
            "{file}: a SQLite database of another program (no fleetdash work queue mark); left \
             untouched: point [work_queue] db at a file of its own"
        ),
    })
}

fn migrate(conn: &Connection, from: i32) -> rusqlite::Result<()> {
    for (version, sql) in MIGRATIONS.iter().filter(|(v, _)| *v > from) {
        let tx = conn.unchecked_transaction()?;
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "application_id", APPLICATION_ID)?;
        tx.pragma_update(None, "user_version", version)?;
        tx.commit()?;
    }
    Ok(())
}

/// A file written by a v1 build: its schema, its mark, two finished tasks and an open one.
#[cfg(test)]
pub(super) fn v1_file(path: &Path) {
    let c = Connection::open(path).unwrap();
    c.execute_batch(V1).unwrap();
    c.pragma_update(None, "application_id", APPLICATION_ID)
        .unwrap();
    c.pragma_update(None, "user_version", 1).unwrap();
    c.execute_batch(
        "INSERT INTO tasks (id, title, created_by, created_at, state, reporter, \
         last_report_at) VALUES ('q_done', 't', 'operator', 10, 'TASK_STATE_FAILED', \
         'sol', 20);
         INSERT INTO tasks (id, title, created_by, created_at, state, reporter, \
         last_report_at) VALUES ('q_quiet', 't', 'operator', 10, 'TASK_STATE_COMPLETED', \
         'sol', 30);
         INSERT INTO tasks (id, title, created_by, created_at, state, reporter) \
         VALUES ('q_open', 't', 'operator', 10, 'TASK_STATE_WORKING', 'sol');
         INSERT INTO events (reporter_kind, reporter, message_id, received_at, kind, \
         task_id, outcome, fields) VALUES ('watchdog', 'watchdog', 'o', 25, 'orphaned', \
         'q_done', 'applied', '{}');",
    )
    .unwrap();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shipped rules' `queue_file.wal_kept_bytes`.
    fn wal_kept() -> u64 {
        crate::config::Rules::parse(
            Path::new("config/rules.yaml"),
            include_str!("../../../config/rules.yaml"),
        )
        .unwrap()
        .state
        .queue_wal_kept
        .bytes
    }

    /// Issue 33: the WAL left after a checkpoint is the rules' `queue_file.wal_kept_bytes`,
    /// on the writer's and the checkpointer's connections: 200 KiB of commits stay in the WAL
    /// under the shipped megabyte, and are cut back to 8 KiB under rules that say so.
    #[test]
    fn the_wal_is_cut_back_to_the_size_the_rules_declare() {
        for (limit, cut) in [(wal_kept(), false), (8 * 1024, true)] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("tasks.db");
            let conn = open_writer(&path, limit).unwrap();
            let checkpointer = open_checkpointer(&path, limit).unwrap();
            for c in [&conn, &checkpointer] {
                let set: i64 = c
                    .pragma_query_value(None, "journal_size_limit", |r| r.get(0))
                    .unwrap();
                assert_eq!(set, i64::try_from(limit).unwrap());
            }
            conn.execute_batch("CREATE TABLE pad (x BLOB)").unwrap();
            for _ in 0..50 {
                conn.execute("INSERT INTO pad VALUES (zeroblob(4096))", [])
                    .unwrap();
            }
            checkpointer
                .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
                .unwrap();
            // The next commit starts the WAL over, and cuts the file back to the limit.
            conn.execute("INSERT INTO pad VALUES (1)", []).unwrap();
            let wal = std::fs::metadata(dir.path().join("tasks.db-wal"))
                .unwrap()
                .len();
            assert!(wal <= limit, "limit {limit} B: the WAL is {wal} B");
            assert_eq!(wal <= 8 * 1024, cut, "limit {limit} B: the WAL is {wal} B");
            assert!(wal > 0);
        }
    }

    #[test]
    fn a_new_file_is_created_at_the_current_version_in_wal() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state/tasks.db");
        let conn = open_writer(&path, wal_kept()).unwrap();
        let v: i32 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(v, CURRENT_VERSION);
        let mode: String = conn
            .pragma_query_value(None, "journal_mode", |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        let sync: i64 = conn
            .pragma_query_value(None, "synchronous", |r| r.get(0))
            .unwrap();
        assert_eq!(sync, 2, "synchronous = FULL");
        drop(conn);
        // Opening again migrates nothing and keeps the data.
        let conn = open_writer(&path, wal_kept()).unwrap();
        let n: i64 = conn
            .query_row("SELECT count(*) FROM tasks", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 0);
    }

    /// Events are never rewritten; since v3 (issue 33) one about no stored task may be
    /// deleted by the retention (`retention`'s tests: those of a stored task may not).
    #[test]
    fn events_cannot_be_rewritten() {
        let dir = tempfile::tempdir().unwrap();
        let conn = open_writer(&dir.path().join("q.db"), wal_kept()).unwrap();
        conn.execute(
            "INSERT INTO events (reporter_kind, reporter, message_id, received_at, kind, outcome, \
             fields) VALUES ('agent', 'sol', 'm1', 0, 'heartbeat', 'applied', '{}')",
            [],
        )
        .unwrap();
        let err = conn
            .execute("UPDATE events SET kind = 'x'", [])
            .unwrap_err();
        assert!(err.to_string().contains("append-only"), "{err}");
        assert_eq!(conn.execute("DELETE FROM events", []).unwrap(), 1);
    }

    #[test]
    fn another_programs_database_is_refused_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kanban.db");
        {
            let c = Connection::open(&path).unwrap();
            c.execute_batch("CREATE TABLE cards (id TEXT);").unwrap();
        }
        let before = std::fs::read(&path).unwrap();
        let err = open_writer(&path, wal_kept()).unwrap_err();
        assert!(err.starts_with(&path.display().to_string()), "{err}");
        assert!(err.contains("another program"), "{err}");
        assert_eq!(std::fs::read(&path).unwrap(), before);
    }

    /// Issue 21: v2 adds when a task finished and when it was dismissed. A v1 file is migrated
    /// by the writer: a finished task gets the time of the event that finished it, else its
    /// last report. (Read as it is by the read-only reader: `rows`' tests.)
    #[test]
    fn a_v1_file_is_migrated_by_the_writer() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tasks.db");
        v1_file(&path);
        let conn = open_writer(&path, wal_kept()).unwrap();
        let v: i32 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(v, CURRENT_VERSION);
        let finished = |id: &str| -> Option<i64> {
            conn.query_row("SELECT finished_at FROM tasks WHERE id = ?1", [id], |r| {
                r.get(0)
            })
            .unwrap()
        };
        assert_eq!(finished("q_done"), Some(25), "the orphaning event's time");
        assert_eq!(finished("q_quiet"), Some(30), "no event: its last report");
        assert_eq!(finished("q_open"), None, "open: not finished");
        let dismissed: i64 = conn
            .query_row(
                "SELECT count(*) FROM tasks WHERE dismissed_at IS NOT NULL",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(dismissed, 0);
    }
}

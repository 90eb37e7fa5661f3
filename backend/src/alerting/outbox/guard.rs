//! The outbox's SQLite file, guarded: opened only once it is known to be ours (recognised by
//! [`crate::sqlite`]: its mark, its schema version, its tables), then set up (WAL, durable
//! commits, the schema and its mark). A file that is not a usable outbox of ours is moved aside
//! and replaced, never deleted (`write::state_file::move_aside`): as every state file of
//! fleetdash's, a corrupt outbox is a fresh start said in the log and on the page, not a
//! stopped collector.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use chrono::Utc;
use rusqlite::Connection;
use rusqlite::config::DbConfig;

use crate::sqlite::{self, Kind, NotOurs, Unrecognised};
use crate::write::state_file::move_aside;

/// "FDAO": a fleetdash alert outbox (SQLite's `application_id`), so that a file of another
/// program is told apart from ours and never has our tables added to it.
pub const APPLICATION_ID: i32 = 0x4644_414F;
/// The outbox's schema (`user_version`). An outbox from before the mark (no application id,
/// version 0) is recognised by its tables and columns, then marked.
pub const SCHEMA_VERSION: i32 = 1;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS outbox (
    alert_id TEXT NOT NULL,
    channel TEXT NOT NULL,
    event TEXT NOT NULL,
    alert TEXT NOT NULL,
    enqueued_at INTEGER NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    -- NULL while pending; set when delivered or refused for good.
    done_at INTEGER,
    outcome TEXT,
    PRIMARY KEY (alert_id, channel)
);
CREATE INDEX IF NOT EXISTS outbox_pending ON outbox (channel, done_at, enqueued_at);
CREATE TABLE IF NOT EXISTS channels (
    channel TEXT PRIMARY KEY,
    failing_since INTEGER,
    last_reason TEXT,
    failures INTEGER NOT NULL DEFAULT 0,
    retry_at INTEGER
);";

/// Each table of [`SCHEMA`] with its columns, in order: what makes a file ours.
const TABLES: &[(&str, &[&str])] = &[
    (
        "outbox",
        &[
            "alert_id",
            "channel",
            "event",
            "alert",
            "enqueued_at",
            "attempts",
            "done_at",
            "outcome",
        ],
    ),
    (
        "channels",
        &[
            "channel",
            "failing_since",
            "last_reason",
            "failures",
            "retry_at",
        ],
    ),
];

/// Why [`open_checked`] did not hand back a connection.
enum Refused {
    /// The file is not a usable outbox of ours: it is moved aside.
    NotOurs(String),
    /// Anything else (cannot open, busy, cannot write): nothing is moved.
    Failed(anyhow::Error),
}

/// Opens `path`, reads whether it is ours (reads only), then sets it up: WAL, durable
/// commits, the schema and its mark.
fn open_checked(path: &Path) -> std::result::Result<Connection, Refused> {
    let failed = |what: &str, e: rusqlite::Error| {
        Refused::Failed(anyhow::Error::new(e).context(format!("{what} {}", path.display())))
    };
    let conn = Connection::open(path).map_err(|e| failed("cannot open the alert outbox", e))?;
    let setup = |e| failed("cannot set up the alert outbox", e);
    conn.busy_timeout(Duration::from_secs(5)).map_err(setup)?;
    // While it is not known to be ours, closing must not checkpoint: SQLite would then delete
    // the file's -wal, which goes aside with it untouched.
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)
        .map_err(setup)?;
    let version = inspect(&conn)?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, false)
        .map_err(setup)?;
    // Before the first table: lets prune hand freed pages back (a new file only).
    conn.pragma_update(None, "auto_vacuum", "INCREMENTAL")
        .map_err(setup)?;
    conn.pragma_update(None, "journal_mode", "WAL")
        .map_err(setup)?;
    conn.pragma_update(None, "synchronous", "FULL")
        .map_err(setup)?;
    conn.execute_batch(SCHEMA).map_err(setup)?;
    if version < SCHEMA_VERSION {
        conn.pragma_update(None, "application_id", APPLICATION_ID)
            .map_err(setup)?;
        conn.pragma_update(None, "user_version", SCHEMA_VERSION)
            .map_err(setup)?;
    }
    Ok(conn)
}

/// What makes a file an outbox of ours ([`crate::sqlite::recognise`]): the mark, the schema
/// version, and the tables, by which an outbox from before the mark is known.
const KIND: Kind = Kind {
    application_id: APPLICATION_ID,
    schema_version: SCHEMA_VERSION,
    tables: Some(TABLES),
};

/// The file's schema version, once it is known to be a healthy outbox of ours (marked, or
/// from before the mark with exactly our tables) or an empty database. Reads only.
fn inspect(conn: &Connection) -> std::result::Result<i32, Refused> {
    let why = match sqlite::recognise(conn, &KIND) {
        Ok(version) => return Ok(version),
        Err(Unrecognised::Unreadable(e)) => {
            return Err(Refused::Failed(
                anyhow::Error::new(e).context("cannot read the alert outbox"),
            ));
        }
        Err(Unrecognised::NotOurs(why)) => why,
    };
    Err(Refused::NotOurs(match why {
        NotOurs::NotADatabase(e) => format!("not a SQLite database ({e})"),
        NotOurs::Corrupt(e) => format!("the database is corrupt ({e})"),
        NotOurs::Damaged(check) => format!("the database is corrupt ({check})"),
        NotOurs::OtherProgram {
            application_id,
            user_version,
        } => format!(
            "a SQLite database of another program (application_id {application_id:#x}, \
             user_version {user_version})"
        ),
        NotOurs::Newer { version } => format!(
            "an outbox of a newer fleetdash (schema {version}; this build reads up to \
             {SCHEMA_VERSION})"
        ),
        NotOurs::OtherTables(tables) => {
            format!("not an alert outbox (its tables: {})", tables.join(", "))
        }
        NotOurs::OtherColumns { table, columns } => format!(
            "not an alert outbox (table {table} has columns {})",
            columns.join(", ")
        ),
    }))
}

/// Opens the outbox at `path`, set up and ours. A file there that is not a usable outbox of
/// ours is moved aside ([`move_aside`], with its `-wal` and `-shm`), said at error level with both paths and why, and a
/// fresh one takes its place; any other failure is returned, with nothing moved.
pub(super) fn open(path: &Path) -> Result<Connection> {
    let conn = match open_checked(path) {
        Ok(conn) => conn,
        Err(Refused::Failed(e)) => return Err(e),
        Err(Refused::NotOurs(reason)) => {
            let aside = move_aside(path, Utc::now())
                .context("the alert outbox is unusable and cannot be moved aside")?;
            tracing::error!(
                file = %path.display(),
                moved_to = %aside.display(),
                %reason,
                "alert outbox unusable: moved aside, a fresh one takes its place (what was \
                 pending in it is not sent)"
            );
            match open_checked(path) {
                Ok(conn) => conn,
                Err(Refused::Failed(e)) => return Err(e),
                Err(Refused::NotOurs(reason)) => anyhow::bail!(
                    "the fresh alert outbox {} is not usable either: {reason}",
                    path.display()
                ),
            }
        }
    };
    Ok(conn)
}

#[cfg(test)]
mod tests {
    use super::super::store::tests::{alert, limits};
    use super::super::store::{OUTBOX_FILE, Outbox, time};
    use super::*;
    use crate::alerting::AlertEvent;
    use crate::redact::RedactionGate;
    use chrono::DateTime;
    use std::path::PathBuf;

    /// The files in `dir` whose name says they were moved aside.
    fn aside(dir: &Path) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().contains(".corrupt-"))
            .collect();
        out.sort();
        out
    }

    #[test]
    fn a_fresh_outbox_is_marked_and_reopened_as_ours() {
        let dir = tempfile::tempdir().unwrap();
        drop(Outbox::open(dir.path(), RedactionGate::default(), limits()).unwrap());
        let conn = Connection::open(dir.path().join(OUTBOX_FILE)).unwrap();
        let app: i32 = conn
            .pragma_query_value(None, "application_id", |r| r.get(0))
            .unwrap();
        let version: i32 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!((app, version), (APPLICATION_ID, SCHEMA_VERSION));
        drop(conn);
        drop(Outbox::open(dir.path(), RedactionGate::default(), limits()).unwrap());
        assert!(aside(dir.path()).is_empty());
    }

    #[test]
    fn an_outbox_of_a_newer_schema_or_with_other_tables_goes_aside() {
        for sql in [
            format!("PRAGMA user_version = {};", SCHEMA_VERSION + 1),
            "CREATE TABLE extra (x);".to_string(),
            "ALTER TABLE outbox ADD COLUMN extra TEXT;".to_string(),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let o = Outbox::open(dir.path(), RedactionGate::default(), limits()).unwrap();
            o.enqueue(&alert("a", AlertEvent::Firing), &["c"], time(1))
                .unwrap();
            drop(o);
            let conn = Connection::open(dir.path().join(OUTBOX_FILE)).unwrap();
            conn.execute_batch(&sql).unwrap();
            drop(conn);
            let o = Outbox::open(dir.path(), RedactionGate::default(), limits()).unwrap();
            assert_eq!(o.rows().unwrap(), 0, "{sql}: a fresh outbox");
            // With its -wal and -shm beside it, as the open that refused it left them.
            let moved: Vec<PathBuf> = aside(dir.path())
                .into_iter()
                .filter(|p| {
                    !p.to_string_lossy().ends_with("-wal") && !p.to_string_lossy().ends_with("-shm")
                })
                .collect();
            assert_eq!(moved.len(), 1, "{sql}: {moved:?}");
            // The operator's file is whole: its alert is still in it.
            let old = Connection::open(&moved[0]).unwrap();
            let n: i64 = old
                .query_row("SELECT COUNT(*) FROM outbox", [], |r| r.get(0))
                .unwrap();
            assert_eq!(n, 1, "{sql}");
        }
    }

    #[test]
    fn a_second_corrupt_file_in_the_same_second_does_not_replace_the_first() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(OUTBOX_FILE);
        let at: DateTime<Utc> = "2026-11-30T12:00:00Z".parse().unwrap();
        let first = dir
            .path()
            .join(format!("{OUTBOX_FILE}.corrupt-20261130T120000Z"));
        std::fs::write(&first, "first").unwrap();
        let mut moved = Vec::new();
        for junk in ["second", "third"] {
            std::fs::write(&file, junk).unwrap();
            moved.push(move_aside(&file, at).unwrap());
        }
        assert_eq!(std::fs::read_to_string(&first).unwrap(), "first");
        let said: Vec<String> = moved
            .iter()
            .map(|p| std::fs::read_to_string(p).unwrap())
            .collect();
        assert_eq!(said, ["second", "third"]);
        assert!(!moved.contains(&first), "{moved:?}");
        assert_eq!(aside(dir.path()).len(), 3);
    }
}

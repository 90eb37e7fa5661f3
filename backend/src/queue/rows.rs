//! A task row in SQL, both ways: the columns, saving a row, and reading rows one by one. A row
//! this build cannot read (a state it does not know, a `tagged` list that is not one, an ACK
//! kind it does not know, a time out of range) is that row's own failure ([`Unreadable`], with
//! its id, the column and the value), never the whole read's: the others are read as ever.
//!
//! Also the whole queue read strictly read-only ([`read_only`]), for `fleetdash collect` and
//! `fleetdash tasks` beside `run`'s writer. No I/O of its own besides that, no clock.

use std::path::Path;

use chrono::{DateTime, Utc};
use rusqlite::types::{FromSql, ValueRef};
use rusqlite::{Connection, OpenFlags, OptionalExtension, Row, params};

use super::{Ack, AckRecord, AgentReports, Provenance, TaskRow, WireState};
use crate::text::clean;

/// The columns of a task row, in the order they are selected (`rowid` last: it names a row
/// whose `id` cannot be read).
const COLUMNS: [&str; 24] = [
    "id",
    "title",
    "owner",
    "tagged",
    "created_by",
    "created_at",
    "deadline",
    "state",
    "ack_kind",
    "ack_by",
    "ack_at",
    "ack_eta",
    "ack_to",
    "ack_on",
    "yielded",
    "blocked_on",
    "last_report_at",
    "status_message",
    "worker_died",
    "reporter",
    "context_id",
    "finished_at",
    "dismissed_at",
    "rowid",
];

/// The columns schema v2 added (`schema::V2`): a v1 file read without migrating (read-only)
/// selects NULL for them.
const SINCE_V2: [&str; 2] = ["finished_at", "dismissed_at"];

const UPSERT: &str = "INSERT INTO tasks (id, title, owner, tagged, created_by, created_at, \
    deadline, state, ack_kind, ack_by, ack_at, ack_eta, ack_to, ack_on, yielded, blocked_on, \
    last_report_at, status_message, worker_died, reporter, context_id, finished_at, \
    dismissed_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, \
    ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23) \
    ON CONFLICT (id) DO UPDATE SET title = excluded.title, owner = excluded.owner, \
    tagged = excluded.tagged, deadline = excluded.deadline, state = excluded.state, \
    ack_kind = excluded.ack_kind, ack_by = excluded.ack_by, ack_at = excluded.ack_at, \
    ack_eta = excluded.ack_eta, ack_to = excluded.ack_to, ack_on = excluded.ack_on, \
    yielded = excluded.yielded, blocked_on = excluded.blocked_on, \
    last_report_at = excluded.last_report_at, status_message = excluded.status_message, \
    worker_died = excluded.worker_died, reporter = excluded.reporter, \
    context_id = excluded.context_id, finished_at = excluded.finished_at, \
    dismissed_at = excluded.dismissed_at";

/// A message id, task id or context id longer than this is not one (an unreadable row's id is
/// cut to it).
pub const ID_MAX_CHARS: usize = 128;

/// What is said of a value in an unreadable row, at most this many characters.
const VALUE_MAX_CHARS: usize = 60;
/// An unreadable row's reason, at most this many characters.
pub const REASON_MAX_CHARS: usize = 200;

/// The select list for a file at schema `version`.
pub(super) fn select(version: i32) -> String {
    COLUMNS
        .iter()
        .map(|c| {
            if version < 2 && SINCE_V2.contains(c) {
                "NULL".to_string()
            } else {
                (*c).to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

pub(super) fn ts(t: DateTime<Utc>) -> i64 {
    t.timestamp_micros()
}

pub(super) fn time(v: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_micros(v).unwrap_or_default()
}

/// A row that cannot be read, said on its own: the dashboard shows it red with its id and why,
/// the watchdog's sweep passes it by, and every other row is read as ever.
#[derive(Debug, Clone, PartialEq)]
pub struct Unreadable {
    /// Its `id` (cleaned), or `rowid N` when even that cannot be read.
    pub id: String,
    /// The column, its value and what is wrong with it, e.g. `state "TASK_STATE_PAUSED": not
    /// a task state this fleetdash knows`; flattened, redacted and cut like any untrusted text.
    pub reason: String,
    /// When the operator dismissed it (`fleetdash task dismiss` works on such a row too).
    pub dismissed_at: Option<DateTime<Utc>>,
}

/// One row as read: the task, or why it cannot be read.
pub type RowRead = Result<TaskRow, Unreadable>;

/// What is wrong with one column of a row.
struct Bad {
    column: usize,
    why: String,
}

fn bad(column: usize, why: impl Into<String>) -> Bad {
    Bad {
        column,
        why: why.into(),
    }
}

fn col<T: FromSql>(r: &Row, column: usize) -> Result<T, Bad> {
    r.get(column).map_err(|e| {
        let why = match e {
            rusqlite::Error::InvalidColumnType(_, _, found) => {
                format!("a {found} where another type is due")
            }
            rusqlite::Error::IntegralValueOutOfRange(..) => "out of range".to_string(),
            rusqlite::Error::FromSqlConversionFailure(_, _, e) => e.to_string(),
            other => other.to_string(),
        };
        bad(column, why)
    })
}

/// A time column: microseconds since 1970, within chrono's range.
fn time_col(r: &Row, column: usize) -> Result<Option<DateTime<Utc>>, Bad> {
    match col::<Option<i64>>(r, column)? {
        None => Ok(None),
        Some(v) => DateTime::from_timestamp_micros(v)
            .map(Some)
            .ok_or_else(|| bad(column, "not a time (microseconds since 1970, out of range)")),
    }
}

fn names_col(r: &Row, column: usize) -> Result<Vec<String>, Bad> {
    let text: String = col(r, column)?;
    serde_json::from_str(&text).map_err(|e| bad(column, format!("not a list of names ({e})")))
}

/// The value of `column` as the reason shows it: text quoted, cut and cleaned.
fn shown(r: &Row, column: usize) -> String {
    match r.get_ref(column) {
        Ok(ValueRef::Null) => "NULL".into(),
        Ok(ValueRef::Integer(n)) => n.to_string(),
        Ok(ValueRef::Real(f)) => f.to_string(),
        Ok(ValueRef::Text(t)) => {
            format!("{:?}", clean(&String::from_utf8_lossy(t), VALUE_MAX_CHARS))
        }
        Ok(ValueRef::Blob(b)) => format!("a blob of {} bytes", b.len()),
        Err(e) => format!("(unreadable: {e})"),
    }
}

fn parse(r: &Row) -> Result<TaskRow, Bad> {
    let state: String = col(r, 7)?;
    let state =
        WireState::parse(&state).ok_or_else(|| bad(7, "not a task state this fleetdash knows"))?;
    let ack = match col::<Option<String>>(r, 8)? {
        None => None,
        Some(kind) => {
            let ack = match kind.as_str() {
                "owning" => Ack::Owning {
                    eta: time_col(r, 11)?,
                },
                "escalating" => Ack::Escalating {
                    to: col::<Option<String>>(r, 12)?.unwrap_or_default(),
                },
                "blocked" => Ack::Blocked {
                    on: col::<Option<String>>(r, 13)?.unwrap_or_default(),
                },
                "yielded" => Ack::Yielded,
                _ => return Err(bad(8, "not an ACK kind this fleetdash knows")),
            };
            Some(AckRecord {
                by: col::<Option<String>>(r, 9)?.unwrap_or_default(),
                ack,
                at: time_col(r, 10)?.unwrap_or_default(),
            })
        }
    };
    Ok(TaskRow {
        id: col(r, 0)?,
        title: col(r, 1)?,
        owner: col(r, 2)?,
        tagged: names_col(r, 3)?,
        created_by: col(r, 4)?,
        created_at: time_col(r, 5)?.ok_or_else(|| bad(5, "missing"))?,
        deadline: time_col(r, 6)?,
        state,
        ack,
        yielded: names_col(r, 14)?,
        blocked_on: col(r, 15)?,
        last_report_at: time_col(r, 16)?,
        status_message: col(r, 17)?,
        worker_died: col(r, 18)?,
        provenance: Provenance {
            reporter: col(r, 19)?,
            context_id: col(r, 20)?,
        },
        finished_at: time_col(r, 21)?,
        dismissed_at: time_col(r, 22)?,
    })
}

/// One selected row (see [`select`]): the task, or why this row alone cannot be read. The
/// outer error is the read's own (I/O, a busy file), never a row's.
pub(super) fn task_from(r: &Row) -> rusqlite::Result<RowRead> {
    match parse(r) {
        Ok(row) => Ok(Ok(row)),
        Err(Bad { column, why }) => {
            let id = match r.get_ref(0)? {
                ValueRef::Text(t) => clean(&String::from_utf8_lossy(t), ID_MAX_CHARS),
                _ => String::new(),
            };
            let id = if id.is_empty() {
                format!("rowid {}", r.get::<_, i64>(COLUMNS.len() - 1)?)
            } else {
                id
            };
            let reason = format!("{} {}: {why}", COLUMNS[column], shown(r, column));
            Ok(Err(Unreadable {
                id,
                reason: clean(&reason, REASON_MAX_CHARS),
                // A dismissal is read even off a row that is otherwise unreadable.
                dismissed_at: time_col(r, 22).ok().flatten(),
            }))
        }
    }
}

/// The row `id` at the current schema (the writer's and the shared reader's connections).
pub(super) fn get(conn: &Connection, id: &str) -> rusqlite::Result<Option<RowRead>> {
    conn.prepare_cached(&format!(
        "SELECT {} FROM tasks WHERE id = ?1",
        select(super::schema::CURRENT_VERSION)
    ))?
    .query_row([id], task_from)
    .optional()
}

/// Every row of a file at schema `version`, newest first, each read on its own.
pub(super) fn list(conn: &Connection, version: i32) -> rusqlite::Result<Vec<RowRead>> {
    conn.prepare_cached(&format!(
        "SELECT {} FROM tasks ORDER BY created_at DESC, id DESC",
        select(version)
    ))?
    .query_map([], task_from)?
    .collect()
}

/// The unfinished rows, oldest first (the watchdog's sweep), each read on its own.
pub(super) fn open(conn: &Connection) -> rusqlite::Result<Vec<RowRead>> {
    conn.prepare_cached(&format!(
        "SELECT {} FROM tasks WHERE state IN ('TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING', \
         'TASK_STATE_INPUT_REQUIRED', 'TASK_STATE_AUTH_REQUIRED') ORDER BY created_at, id",
        select(super::schema::CURRENT_VERSION)
    ))?
    .query_map([], task_from)?
    .collect()
}

/// Writes `row` whole (inserted or replaced).
pub(super) fn save(conn: &Connection, row: &TaskRow) -> rusqlite::Result<()> {
    let (kind, by, at, eta, to, on) = match &row.ack {
        None => (None, None, None, None, None, None),
        Some(a) => {
            let (kind, eta, to, on) = match &a.ack {
                Ack::Owning { eta } => ("owning", eta.map(ts), None, None),
                Ack::Escalating { to } => ("escalating", None, Some(to.as_str()), None),
                Ack::Blocked { on } => ("blocked", None, None, Some(on.as_str())),
                Ack::Yielded => ("yielded", None, None, None),
            };
            (Some(kind), Some(a.by.as_str()), Some(ts(a.at)), eta, to, on)
        }
    };
    let list = |v: &[String]| serde_json::to_string(v).unwrap_or_else(|_| "[]".into());
    conn.prepare_cached(UPSERT)?.execute(params![
        row.id,
        row.title,
        row.owner,
        list(&row.tagged),
        row.created_by,
        ts(row.created_at),
        row.deadline.map(ts),
        row.state.as_str(),
        kind,
        by,
        at,
        eta,
        to,
        on,
        list(&row.yielded),
        row.blocked_on,
        row.last_report_at.map(ts),
        row.status_message,
        row.worker_died,
        row.provenance.reporter,
        row.provenance.context_id,
        row.finished_at.map(ts),
        row.dismissed_at.map(ts),
    ])?;
    Ok(())
}

pub(super) fn last_reports(conn: &Connection) -> rusqlite::Result<Vec<AgentReports>> {
    conn.prepare_cached(
        "SELECT name, last_report_at, last_heartbeat_at, last_activity_at, in_flight \
         FROM agents ORDER BY name",
    )?
    .query_map([], |r| {
        let in_flight: String = r.get(4)?;
        Ok(AgentReports {
            name: r.get(0)?,
            last_report_at: time(r.get(1)?),
            last_heartbeat_at: r.get::<_, Option<i64>>(2)?.map(time),
            last_activity_at: r.get::<_, Option<i64>>(3)?.map(time),
            in_flight: serde_json::from_str(&in_flight).map_err(|e| {
                rusqlite::Error::FromSqlConversionFailure(
                    4,
                    rusqlite::types::Type::Text,
                    format!("agents.in_flight: not a list of names: {e}").into(),
                )
            })?,
        })
    })?
    .collect()
}

/// The whole queue as one reader sees it at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueView {
    /// Every row, newest first, each read on its own.
    pub tasks: Vec<RowRead>,
    /// Each agent's last report and heartbeat, by name.
    pub agents: Vec<AgentReports>,
    /// The file does not exist yet, and can be made where the config says: nothing is in the
    /// queue, which `fleetdash run` (or `fleetdash task assign`) creates (issue 43: a fact of
    /// the order of commands, not a failure).
    pub not_created: bool,
}

impl QueueView {
    /// A queue whose file nobody has created yet: no task, no report.
    pub fn not_created() -> QueueView {
        QueueView {
            tasks: Vec::new(),
            agents: Vec::new(),
            not_created: true,
        }
    }
}

/// Reads the queue at `path` strictly read-only (`SQLITE_OPEN_READONLY`, SQLite's `mode=ro`),
/// in one read transaction: for a one-shot `fleetdash collect`, which must not start a second
/// writer beside `run`'s (one writer per file). Nothing is created (no file, no folder, no
/// `-wal`/`-shm` when the file is checkpointed), nothing migrated (an older schema is read as
/// it is), no checkpoint run. A file not created yet is an empty queue
/// ([`QueueView::not_created`]) when `fleetdash run` can create it there (its folder, or the
/// nearest one that exists, can be written); one that cannot be created, a corrupt file,
/// another program's database or a schema this build does not read is an error naming the
/// file. Blocking: call it off the async runtime.
pub fn read_only(path: &Path) -> Result<QueueView, String> {
    let file = path.display();
    // SQLite would answer "unable to open database file": say what is missing instead.
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() => {}
        Ok(_) => {
            return Err(format!(
                "{file}: not a file (the work queue is a SQLite file)"
            ));
        }
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            return creatable(path)
                .map(|()| QueueView::not_created())
                .map_err(|why| {
                    format!("{file}: no work queue file, and fleetdash run cannot create it: {why}")
                });
        }
        Err(e) => return Err(format!("{file}: cannot read the work queue: {e}")),
    }
    let conn = Connection::open_with_flags(
        read_only_uri(path)?,
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| format!("{file}: cannot open the work queue to read: {e}"))?;
    let version = super::schema::inspect(&conn, path)?;
    if version == 0 {
        return Err(format!(
            "{file}: an empty database, not a work queue yet (fleetdash run or fleetdash task \
             assign makes it one)"
        ));
    }
    let read = |conn: &Connection| -> rusqlite::Result<QueueView> {
        let tx = conn.unchecked_transaction()?;
        let view = QueueView {
            tasks: list(&tx, version)?,
            agents: last_reports(&tx)?,
            not_created: false,
        };
        tx.finish()?;
        Ok(view)
    };
    read(&conn).map_err(|e| format!("{file}: cannot read the work queue: {e}"))
}

/// Whether the work queue's file could be created at `path` (by `fleetdash run`, which makes
/// its folder first): the nearest folder of it that exists is a folder this process may write
/// and enter. Nothing is created. Else why not.
fn creatable(path: &Path) -> Result<(), String> {
    let mut dir = path.parent();
    while let Some(d) = dir {
        let here = if d.as_os_str().is_empty() {
            Path::new(".")
        } else {
            d
        };
        match std::fs::metadata(here) {
            Ok(meta) if meta.is_dir() => {
                // The effective ids and capabilities: what this process may do, not its user.
                return rustix::fs::accessat(
                    rustix::fs::CWD,
                    here,
                    rustix::fs::Access::WRITE_OK | rustix::fs::Access::EXEC_OK,
                    rustix::fs::AtFlags::EACCESS,
                )
                .map_err(|e| {
                    format!(
                        "cannot write in {}: {}",
                        here.display(),
                        std::io::Error::from(e)
                    )
                });
            }
            Ok(_) => return Err(format!("{} is not a folder", here.display())),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                ) =>
            {
                dir = d.parent()
            }
            Err(e) => return Err(format!("{}: {e}", here.display())),
        }
    }
    Err("no folder of it exists".into())
}

/// The URI [`read_only`] opens `path` with. `mode=ro` alone is not enough: on a WAL database
/// SQLite creates the `-wal` and `-shm` files even for a read-only connection. While a writer
/// has the file open both exist, and reading through them sees its latest commits; when they
/// are absent the file is checkpointed and nobody writes it, so it is read as it stands
/// (`immutable=1`: no locks, no shared memory, nothing created). A writer starting during that
/// read is not seen by it: the next pass sees it.
fn read_only_uri(path: &Path) -> Result<String, String> {
    let text = path.to_str().ok_or_else(|| {
        format!(
            "{}: the work queue's path is not UTF-8, which SQLite's read-only open needs",
            path.display()
        )
    })?;
    let mut uri = String::from("file:");
    for c in text.chars() {
        match c {
            // The characters a URI path cannot carry as they are.
            '%' | '?' | '#' => uri.push_str(&format!("%{:02X}", c as u32)),
            c => uri.push(c),
        }
    }
    let beside = |suffix: &str| {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        std::path::PathBuf::from(p).exists()
    };
    uri.push_str(if beside("-wal") && beside("-shm") {
        "?mode=ro"
    } else {
        "?mode=ro&immutable=1"
    });
    Ok(uri)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::{Assignment, QueueRules, Report, ReportKind, Reporter, WorkQueue};

    /// The tests' clock: one fixed moment, so that no outcome depends on the day they run.
    fn fixed_now() -> chrono::DateTime<chrono::Utc> {
        "2026-11-30T12:00:00Z".parse().expect("an RFC 3339 instant")
    }

    fn rules() -> QueueRules {
        QueueRules::of(
            &crate::config::Rules::parse(
                Path::new("config/rules.yaml"),
                include_str!("../../../config/rules.yaml"),
            )
            .expect("the shipped rules parse"),
        )
    }

    fn files(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    async fn one_task(path: &Path) {
        let queue = WorkQueue::open(path, rules()).await.unwrap();
        let report = Report {
            from: Reporter::Operator,
            message_id: "m1".into(),
            context_id: None,
            received_at: fixed_now(),
            kind: ReportKind::Assign(Assignment {
                title: "rotate the LAB keys".into(),
                owner: Some("sol".into()),
                tagged: vec![],
                deadline: None,
            }),
        };
        queue.apply(report).await.unwrap();
        queue.close().await.unwrap();
    }

    /// `collect` reads beside `run`: a read-only open creates nothing next to the file (no
    /// `-wal`, no `-shm`, no journal), writes nothing into it, and sees the rows.
    #[tokio::test]
    async fn a_read_only_read_sees_the_rows_and_creates_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tasks.db");
        one_task(&path).await;
        let before = files(dir.path());
        let bytes = std::fs::read(&path).unwrap();
        let view = read_only(&path).unwrap();
        assert_eq!(view.tasks.len(), 1);
        assert_eq!(view.tasks[0].as_ref().unwrap().title, "rotate the LAB keys");
        assert_eq!(files(dir.path()), before);
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "nothing written");
    }

    /// While `run`'s writer has the file open, a read-only read sees its latest commits (in the
    /// WAL) and still creates nothing.
    #[tokio::test]
    async fn a_read_only_read_beside_a_live_writer_sees_its_commits() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("odd ?#% name.db");
        one_task(&path).await;
        let queue = WorkQueue::open(&path, rules()).await.unwrap();
        let before = files(dir.path());
        assert_eq!(before.len(), 3, "the writer's -wal and -shm: {before:?}");
        let report = Report {
            from: Reporter::Agent("sol".into()),
            message_id: "m2".into(),
            context_id: None,
            received_at: fixed_now(),
            kind: ReportKind::Heartbeat {
                last_activity_at: None,
                in_flight: vec![],
            },
        };
        queue.apply(report).await.unwrap();
        let view = read_only(&path).unwrap();
        assert_eq!(view.tasks.len(), 1);
        assert_eq!(
            view.agents.len(),
            1,
            "the heartbeat still in the WAL is seen"
        );
        assert_eq!(files(dir.path()), before);
        queue.close().await.unwrap();
    }

    /// Issue 43: a one-off `collect` before `run` said the queue red ("no work queue file").
    /// A file not created yet, where `run` can create it, is an empty queue said so; nothing is
    /// created.
    #[test]
    fn a_file_not_created_yet_is_an_empty_queue_and_nothing_is_created() {
        let dir = tempfile::tempdir().unwrap();
        for path in [
            dir.path().join("tasks.db"),
            dir.path().join("state/queue/tasks.db"),
        ] {
            let view = read_only(&path).unwrap();
            assert_eq!(view, QueueView::not_created());
            assert!(view.not_created && view.tasks.is_empty() && view.agents.is_empty());
        }
        assert!(files(dir.path()).is_empty(), "no folder, no file");
    }

    /// A file that is missing where nobody can create it is broken, not new: an error naming
    /// the file and why (here a file where its folder should be).
    #[test]
    fn a_file_that_cannot_be_created_is_an_error_saying_why() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("state"), b"not a folder").unwrap();
        let path = dir.path().join("state/tasks.db");
        let err = read_only(&path).unwrap_err();
        assert!(err.starts_with(&path.display().to_string()), "{err}");
        assert!(
            err.contains("no work queue file, and fleetdash run cannot create it"),
            "{err}"
        );
        assert!(err.contains("state is not a folder"), "{err}");
        // A folder that cannot be written: tests/queue_snapshot.rs, as a process without
        // root's power over permissions.
    }

    #[test]
    fn a_corrupt_file_or_another_programs_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let garbage = dir.path().join("garbage.db");
        std::fs::write(&garbage, vec![0x5a; 8192]).unwrap();
        let err = read_only(&garbage).unwrap_err();
        assert!(err.starts_with(&garbage.display().to_string()), "{err}");
        assert!(err.contains("not a SQLite database"), "{err}");
        let other = dir.path().join("kanban.db");
        Connection::open(&other)
            .unwrap()
            .execute_batch("CREATE TABLE cards (id TEXT);")
            .unwrap();
        let err = read_only(&other).unwrap_err();
        assert!(err.contains("another program"), "{err}");
        assert_eq!(files(dir.path()), ["garbage.db", "kanban.db"]);
    }

    /// A v1 file (before finished_at and dismissed_at) is read as it is: nothing migrated.
    #[test]
    fn a_v1_file_is_read_as_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tasks.db");
        super::super::schema::v1_file(&path);
        let bytes = std::fs::read(&path).unwrap();
        let view = read_only(&path).unwrap();
        assert_eq!(view.tasks.len(), 3);
        let rows: Vec<&TaskRow> = view.tasks.iter().map(|r| r.as_ref().unwrap()).collect();
        assert!(rows.iter().all(|r| r.finished_at.is_none()));
        assert!(rows.iter().all(|r| r.dismissed_at.is_none()));
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "nothing migrated");
    }

    /// Was: one row the reader could not read made the whole read an error (`tasks.queue` one
    /// error, the watchdog's sweep failing at every tick). Now each bad row is its own
    /// [`Unreadable`], naming its id, the column and the value (cleaned: a secret in it is
    /// redacted), and the good rows are read as ever.
    #[tokio::test]
    async fn each_row_that_cannot_be_read_is_its_own_failure_naming_column_and_value() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tasks.db");
        let queue = WorkQueue::open(&path, rules()).await.unwrap();
        let mut ids = Vec::new();
        for n in 0..6 {
            let report = Report {
                from: Reporter::Operator,
                message_id: format!("m{n}"),
                context_id: None,
                received_at: fixed_now() + chrono::Duration::seconds(n),
                kind: ReportKind::Assign(Assignment {
                    title: format!("task {n}"),
                    owner: Some("sol".into()),
                    tagged: vec![],
                    deadline: None,
                }),
            };
            ids.push(queue.apply(report).await.unwrap().task.unwrap().id);
        }
        queue.close().await.unwrap();
        let secret = "ghp_PLANTEDabcdefghijklmnopqrstuvwxyz0123";
        {
            let c = Connection::open(&path).unwrap();
            // What a newer build, a hand edit or a bad restore might leave; the CHECK on
            // ack_kind is the file's, so it is switched off for the edit.
            c.pragma_update(None, "ignore_check_constraints", true)
                .unwrap();
            let set = |sql: &str, id: &str| {
                assert_eq!(c.execute(sql, [id]).unwrap(), 1, "{sql}");
            };
            set(
                "UPDATE tasks SET state = 'TASK_STATE_PAUSED' WHERE id = ?1",
                &ids[0],
            );
            set(
                "UPDATE tasks SET tagged = 'sol, mira' WHERE id = ?1",
                &ids[1],
            );
            set(
                "UPDATE tasks SET ack_kind = 'nodding', ack_by = 'sol', ack_at = 1 WHERE id = ?1",
                &ids[2],
            );
            set(
                "UPDATE tasks SET created_at = 9223372036854775807 WHERE id = ?1",
                &ids[3],
            );
            set(
                &format!("UPDATE tasks SET yielded = 'token {secret}' WHERE id = ?1"),
                &ids[5],
            );
        }
        let view = read_only(&path).unwrap();
        assert_eq!(view.tasks.len(), 6, "every row, each read on its own");
        let by_id = |id: &str| {
            view.tasks
                .iter()
                .find(|r| match r {
                    Ok(t) => t.id == id,
                    Err(b) => b.id == id,
                })
                .unwrap()
        };
        let why = |id: &str| by_id(id).as_ref().unwrap_err().reason.clone();
        assert_eq!(
            why(&ids[0]),
            "state \"TASK_STATE_PAUSED\": not a task state this fleetdash knows"
        );
        assert!(
            why(&ids[1]).starts_with("tagged \"sol, mira\": not a list of names ("),
            "{}",
            why(&ids[1])
        );
        assert_eq!(
            why(&ids[2]),
            "ack_kind \"nodding\": not an ACK kind this fleetdash knows"
        );
        assert_eq!(
            why(&ids[3]),
            "created_at 9223372036854775807: not a time (microseconds since 1970, out of range)"
        );
        assert_eq!(by_id(&ids[4]).as_ref().unwrap().title, "task 4");
        let leaked = why(&ids[5]);
        assert!(leaked.starts_with("yielded \"token "), "{leaked}");
        assert!(!leaked.contains("PLANTED"), "the gate ran: {leaked}");
    }
}

//! What this board's database has: columns vary by Hermes version, so every read is by column
//! name after a `PRAGMA table_info` check (reference hermes-kanban.md).
//!
//! Without the `tasks` table or one of its required columns there is no board to show, and the
//! board says so naming the file and the column; every other board keeps working. Optional
//! columns that are absent read as NULL. `task_events` is optional as a whole: without it (or
//! without its key columns) cards show no worker events and no event activity, and the source
//! says that too.

use std::collections::HashSet;

use rusqlite::Connection;

/// Without these there is no card.
pub const REQUIRED_TASK_COLUMNS: [&str; 4] = ["id", "title", "status", "created_at"];
/// Read when present, NULL when not. `body`, `result` and the like are never among them.
pub const OPTIONAL_TASK_COLUMNS: [&str; 6] = [
    "assignee",
    "priority",
    "started_at",
    "completed_at",
    "last_heartbeat_at",
    "block_kind",
];
/// The events the dashboard maps need these.
pub const REQUIRED_EVENT_COLUMNS: [&str; 3] = ["task_id", "kind", "created_at"];

/// The columns present, by table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schema {
    tasks: HashSet<String>,
    /// `None`: no usable `task_events`.
    events: Option<HashSet<String>>,
    /// Why `events` is `None`, for the source's reason.
    pub events_missing: Option<String>,
}

/// A schema the collector cannot read a board from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SchemaError {
    NoTasksTable,
    MissingColumns(Vec<&'static str>),
}

impl std::fmt::Display for SchemaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SchemaError::NoTasksTable => {
                write!(f, "no `tasks` table (is this a Hermes kanban database?)")
            }
            SchemaError::MissingColumns(cols) => write!(
                f,
                "table `tasks` has no column {} (required: {})",
                cols.iter()
                    .map(|c| format!("`{c}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
                REQUIRED_TASK_COLUMNS.join(", ")
            ),
        }
    }
}

impl Schema {
    /// Inspects the database. The outer error is SQLite's (corrupt file, busy...).
    pub fn inspect(conn: &Connection) -> rusqlite::Result<Result<Schema, SchemaError>> {
        let tasks = columns(conn, "tasks")?;
        if tasks.is_empty() {
            return Ok(Err(SchemaError::NoTasksTable));
        }
        let missing: Vec<&'static str> = REQUIRED_TASK_COLUMNS
            .into_iter()
            .filter(|c| !tasks.contains(*c))
            .collect();
        if !missing.is_empty() {
            return Ok(Err(SchemaError::MissingColumns(missing)));
        }
        let events = columns(conn, "task_events")?;
        let (events, events_missing) = if events.is_empty() {
            (
                None,
                Some("no `task_events` table: worker events and event activity are not shown"),
            )
        } else if REQUIRED_EVENT_COLUMNS.iter().any(|c| !events.contains(*c)) {
            (
                None,
                Some(
                    "`task_events` lacks task_id, kind or created_at: worker events and event activity are not shown",
                ),
            )
        } else {
            (Some(events), None)
        };
        Ok(Ok(Schema {
            tasks,
            events,
            events_missing: events_missing.map(str::to_string),
        }))
    }

    pub fn has_task_column(&self, column: &str) -> bool {
        self.tasks.contains(column)
    }

    pub fn has_events(&self) -> bool {
        self.events.is_some()
    }

    pub fn has_event_column(&self, column: &str) -> bool {
        self.events.as_ref().is_some_and(|e| e.contains(column))
    }

    /// `column` when the table has it, else `NULL`: the SELECT list for one optional column.
    /// Names come from this module's constants only, never from the database.
    pub fn task_column_or_null(&self, column: &'static str) -> &'static str {
        if self.has_task_column(column) {
            column
        } else {
            "NULL"
        }
    }
}

/// Column names of `table` (lower case); empty when the table does not exist.
fn columns(conn: &Connection, table: &str) -> rusqlite::Result<HashSet<String>> {
    let mut stmt = conn.prepare("SELECT name FROM pragma_table_info(?1)")?;
    let names = stmt
        .query_map([table], |row| row.get::<_, String>(0))?
        .map(|n| n.map(|n| n.to_lowercase()))
        .collect::<rusqlite::Result<HashSet<String>>>()?;
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db(sql: &str) -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(sql).unwrap();
        conn
    }

    #[test]
    fn a_full_schema_has_everything() {
        let conn = db(
            "CREATE TABLE tasks (id TEXT, title TEXT, body TEXT, assignee TEXT, status TEXT,
                 priority INTEGER, created_at INTEGER, started_at INTEGER, completed_at INTEGER,
                 last_heartbeat_at INTEGER, block_kind TEXT);
             CREATE TABLE task_events (id INTEGER PRIMARY KEY, task_id TEXT, run_id INTEGER,
                 kind TEXT, payload TEXT, created_at INTEGER);",
        );
        let s = Schema::inspect(&conn).unwrap().unwrap();
        assert!(OPTIONAL_TASK_COLUMNS.iter().all(|c| s.has_task_column(c)));
        assert!(s.has_events() && s.has_event_column("payload"));
        assert_eq!(s.events_missing, None);
    }

    #[test]
    fn optional_columns_and_events_may_be_absent() {
        let conn = db("CREATE TABLE tasks (id TEXT, title TEXT, status TEXT, created_at INTEGER);");
        let s = Schema::inspect(&conn).unwrap().unwrap();
        assert_eq!(s.task_column_or_null("block_kind"), "NULL");
        assert_eq!(s.task_column_or_null("title"), "title");
        assert!(!s.has_events());
        assert!(s.events_missing.unwrap().contains("task_events"));
    }

    #[test]
    fn a_missing_table_or_required_column_is_named() {
        let conn = db("CREATE TABLE other (x);");
        assert_eq!(
            Schema::inspect(&conn).unwrap(),
            Err(SchemaError::NoTasksTable)
        );
        let conn = db("CREATE TABLE tasks (id TEXT, status TEXT);");
        let err = Schema::inspect(&conn).unwrap().unwrap_err();
        assert_eq!(
            err.to_string(),
            "table `tasks` has no column `title`, `created_at` (required: id, title, status, created_at)"
        );
    }
}

//! The queue's rows in SQL, and what each report does to them (the state machine, ACK-then-own,
//! permissions, idempotency). Every function here runs inside the writer's transaction (or on
//! the reader's connection): no I/O of its own, no clock of its own.
//!
//! The state machine (spec §1.2 wire states only):
//! - assign: SUBMITTED, owned by the named agent or by nobody yet (tags only);
//! - the first ACK owns (§4.2, whatever the number of tags: a single tag is an assignment, and
//!   with two the second learns at once that the first holds it rather than both working):
//!   "owning" makes it WORKING (and clears a block), "blocked on Y" makes it INPUT_REQUIRED with
//!   what it is blocked on, "escalating to X" hands it to X (SUBMITTED, X added to the tags,
//!   waiting for X's own ACK); a later ACK by another agent is refused as already owned and
//!   recorded as yielded; "yielded to owner" is recorded;
//! - a blocker report: INPUT_REQUIRED with its cause; a completion: its terminal state;
//! - the watchdog: WORKING with no report for the stuck limit becomes FAILED, orphaned.
//!
//! Who may report on a task: the operator always; an agent that owns it, or any tagged agent
//! while nobody owns it. Other tagged agents may only yield (their other ACKs are refused as
//! already owned, and recorded as yielded); anyone else is refused (`NotYours`).
//! A finished task takes no more reports, except a completion from its owner after the
//! watchdog orphaned it: the late answer is the truth, and the orphaning stays in the events.

use std::path::Path;

use chrono::{DateTime, Utc};
use rusqlite::types::Type;
use rusqlite::{Connection, OpenFlags, OptionalExtension, params};
use serde_json::{Value, json};

use super::judge::{ORPHANED_MESSAGE, orphan_due, worker_died_due};
use super::{
    Ack, AckRecord, AgentReports, Applied, Assignment, Provenance, QueueRules, Refusal, Report,
    ReportKind, Reporter, SweepEvent, TaskRow, WireState,
};
use crate::config::is_plain_name;
use crate::text::clean;

/// A task's title, at most this many characters (flattened, redacted, then cut).
pub const TITLE_MAX_CHARS: usize = 120;
/// What a task is blocked on, at most this many characters.
pub const BLOCKED_ON_MAX_CHARS: usize = 160;
/// A message id, task id or context id longer than this is not one.
pub const ID_MAX_CHARS: usize = 128;
/// A heartbeat names at most this many in-flight tasks.
pub const IN_FLIGHT_MAX: usize = 64;

const COLUMNS: &str = "id, title, owner, tagged, created_by, created_at, deadline, state, \
    ack_kind, ack_by, ack_at, ack_eta, ack_to, ack_on, yielded, blocked_on, last_report_at, \
    status_message, worker_died, reporter, context_id";

const UPSERT: &str = "INSERT INTO tasks (id, title, owner, tagged, created_by, created_at, \
    deadline, state, ack_kind, ack_by, ack_at, ack_eta, ack_to, ack_on, yielded, blocked_on, \
    last_report_at, status_message, worker_died, reporter, context_id) VALUES (?1, ?2, ?3, ?4, \
    ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21) \
    ON CONFLICT (id) DO UPDATE SET title = excluded.title, owner = excluded.owner, \
    tagged = excluded.tagged, deadline = excluded.deadline, state = excluded.state, \
    ack_kind = excluded.ack_kind, ack_by = excluded.ack_by, ack_at = excluded.ack_at, \
    ack_eta = excluded.ack_eta, ack_to = excluded.ack_to, ack_on = excluded.ack_on, \
    yielded = excluded.yielded, blocked_on = excluded.blocked_on, \
    last_report_at = excluded.last_report_at, status_message = excluded.status_message, \
    worker_died = excluded.worker_died, reporter = excluded.reporter, \
    context_id = excluded.context_id";

fn ts(t: DateTime<Utc>) -> i64 {
    t.timestamp_micros()
}

fn time(v: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_micros(v).unwrap_or_default()
}

fn bad_column(index: usize, what: String) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(index, Type::Text, what.into())
}

fn names(index: usize, text: &str) -> rusqlite::Result<Vec<String>> {
    serde_json::from_str(text).map_err(|e| bad_column(index, format!("not a list of names: {e}")))
}

fn task_from(r: &rusqlite::Row) -> rusqlite::Result<TaskRow> {
    let state: String = r.get(7)?;
    let state = WireState::parse(&state)
        .ok_or_else(|| bad_column(7, format!("not a task state: {state:?}")))?;
    let ack_kind: Option<String> = r.get(8)?;
    let ack = match ack_kind {
        None => None,
        Some(kind) => {
            let ack = match kind.as_str() {
                "owning" => Ack::Owning {
                    eta: r.get::<_, Option<i64>>(11)?.map(time),
                },
                "escalating" => Ack::Escalating {
                    to: r.get::<_, Option<String>>(12)?.unwrap_or_default(),
                },
                "blocked" => Ack::Blocked {
                    on: r.get::<_, Option<String>>(13)?.unwrap_or_default(),
                },
                "yielded" => Ack::Yielded,
                other => return Err(bad_column(8, format!("not an ACK kind: {other:?}"))),
            };
            Some(AckRecord {
                by: r.get::<_, Option<String>>(9)?.unwrap_or_default(),
                ack,
                at: time(r.get::<_, Option<i64>>(10)?.unwrap_or_default()),
            })
        }
    };
    Ok(TaskRow {
        id: r.get(0)?,
        title: r.get(1)?,
        owner: r.get(2)?,
        tagged: names(3, &r.get::<_, String>(3)?)?,
        created_by: r.get(4)?,
        created_at: time(r.get(5)?),
        deadline: r.get::<_, Option<i64>>(6)?.map(time),
        state,
        ack,
        yielded: names(14, &r.get::<_, String>(14)?)?,
        blocked_on: r.get(15)?,
        last_report_at: r.get::<_, Option<i64>>(16)?.map(time),
        status_message: r.get(17)?,
        worker_died: r.get(18)?,
        provenance: Provenance {
            reporter: r.get(19)?,
            context_id: r.get(20)?,
        },
    })
}

pub(super) fn get(conn: &Connection, id: &str) -> rusqlite::Result<Option<TaskRow>> {
    conn.prepare_cached(&format!("SELECT {COLUMNS} FROM tasks WHERE id = ?1"))?
        .query_row([id], task_from)
        .optional()
}

/// Every row, newest first.
pub(super) fn list(conn: &Connection) -> rusqlite::Result<Vec<TaskRow>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM tasks ORDER BY created_at DESC, id DESC"
    ))?
    .query_map([], task_from)?
    .collect()
}

pub(super) fn last_reports(conn: &Connection) -> rusqlite::Result<Vec<AgentReports>> {
    conn.prepare_cached(
        "SELECT name, last_report_at, last_heartbeat_at, last_activity_at, in_flight \
         FROM agents ORDER BY name",
    )?
    .query_map([], |r| {
        Ok(AgentReports {
            name: r.get(0)?,
            last_report_at: time(r.get(1)?),
            last_heartbeat_at: r.get::<_, Option<i64>>(2)?.map(time),
            last_activity_at: r.get::<_, Option<i64>>(3)?.map(time),
            in_flight: names(4, &r.get::<_, String>(4)?)?,
        })
    })?
    .collect()
}

/// The whole queue as one reader sees it at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueView {
    /// Every row, newest first.
    pub tasks: Vec<TaskRow>,
    /// Each agent's last report and heartbeat, by name.
    pub agents: Vec<AgentReports>,
}

/// Reads the queue at `path` strictly read-only (`SQLITE_OPEN_READONLY`, SQLite's `mode=ro`),
/// in one read transaction: for a one-shot `fleetdash collect`, which must not start a second
/// writer beside `run`'s (one writer per file). Nothing is created (no file, no folder, no
/// `-wal`/`-shm` when the file is checkpointed), nothing migrated, no checkpoint run. A missing
/// file, a corrupt one, another program's database or a schema this build does not read is an
/// error naming the file. Blocking: call it off the async runtime.
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
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!(
                "{file}: no work queue file (fleetdash run or fleetdash task assign creates it)"
            ));
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
            tasks: list(&tx)?,
            agents: last_reports(&tx)?,
        };
        tx.finish()?;
        Ok(view)
    };
    read(&conn).map_err(|e| format!("{file}: cannot read the work queue: {e}"))
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

fn save(conn: &Connection, row: &TaskRow) -> rusqlite::Result<()> {
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
    ])?;
    Ok(())
}

/// The events table's key for a reporter: (kind, name).
fn reporter_key(from: &Reporter) -> (&'static str, &str) {
    match from {
        Reporter::Agent(name) => ("agent", name.as_str()),
        Reporter::Operator => ("operator", "operator"),
    }
}

struct Event<'a> {
    reporter_kind: &'a str,
    reporter: &'a str,
    message_id: &'a str,
    context_id: Option<&'a str>,
    received_at: DateTime<Utc>,
    kind: &'a str,
    task_id: Option<&'a str>,
    outcome: &'a str,
    fields: Value,
}

fn append_event(conn: &Connection, e: Event) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO events (reporter_kind, reporter, message_id, context_id, received_at, kind, \
         task_id, outcome, fields) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?
    .execute(params![
        e.reporter_kind,
        e.reporter,
        e.message_id,
        e.context_id,
        ts(e.received_at),
        e.kind,
        e.task_id,
        e.outcome,
        e.fields.to_string(),
    ])?;
    Ok(())
}

/// What applying one report came to. `keep`: its writes stay (an applied report, or a refusal
/// that is recorded); otherwise the caller rolls them back.
pub(super) struct Step {
    pub answer: Result<Applied, Refusal>,
    pub keep: bool,
}

impl Step {
    fn refused(refusal: Refusal) -> rusqlite::Result<Step> {
        Ok(Step {
            answer: Err(refusal),
            keep: false,
        })
    }
}

const APPLIED: &str = "applied";
const ALREADY_OWNED: &str = "already_owned";

/// Applies one report inside the caller's transaction.
pub(super) fn apply(conn: &Connection, report: &Report) -> rusqlite::Result<Step> {
    let invalid = |why: String| Step::refused(Refusal::Invalid(why));
    if report.message_id.trim().is_empty() || report.message_id.chars().count() > ID_MAX_CHARS {
        return invalid(format!(
            "a report needs a messageId of 1 to {ID_MAX_CHARS} characters"
        ));
    }
    if let Reporter::Agent(name) = &report.from
        && !is_plain_name(name)
    {
        return invalid(format!("{name:?} is not an agent name"));
    }
    let (reporter_kind, reporter) = reporter_key(&report.from);
    // Idempotency: the same (reporter, messageId) gets the first answer again.
    let seen: Option<(Option<String>, String)> = conn
        .prepare_cached(
            "SELECT task_id, outcome FROM events WHERE reporter_kind = ?1 AND reporter = ?2 \
             AND message_id = ?3",
        )?
        .query_row(params![reporter_kind, reporter, report.message_id], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .optional()?;
    if let Some((task_id, outcome)) = seen {
        let task = match &task_id {
            Some(id) => get(conn, id)?,
            None => None,
        };
        let answer = match (outcome.as_str(), task) {
            (ALREADY_OWNED, Some(task)) => Err(Refusal::AlreadyOwned {
                task_id: task.id.clone(),
                owner: task.owner.clone().unwrap_or_default(),
            }),
            (_, task) => Ok(Applied {
                task,
                duplicate: true,
            }),
        };
        return Ok(Step {
            answer,
            keep: false,
        });
    }
    let context_id = report
        .context_id
        .as_deref()
        .map(|c| clean(c, ID_MAX_CHARS))
        .filter(|c| !c.is_empty());
    let ctx = Ctx {
        conn,
        report,
        reporter_kind,
        reporter,
        context_id,
    };
    let step = match &report.kind {
        ReportKind::Heartbeat {
            last_activity_at,
            in_flight,
        } => ctx.heartbeat(*last_activity_at, in_flight)?,
        ReportKind::Assign(a) => ctx.assign(a)?,
        ReportKind::Ack { task_id, ack } => ctx.ack(task_id, ack)?,
        ReportKind::Blocker { task_id, on } => ctx.blocker(task_id, on)?,
        ReportKind::Completion { task_id, state } => ctx.completion(task_id, *state)?,
    };
    if step.keep
        && let Reporter::Agent(name) = &report.from
    {
        conn.prepare_cached(
            "INSERT INTO agents (name, last_report_at) VALUES (?1, ?2) ON CONFLICT (name) DO \
             UPDATE SET last_report_at = max(last_report_at, excluded.last_report_at)",
        )?
        .execute(params![name, ts(report.received_at)])?;
    }
    Ok(step)
}

/// One report being applied.
struct Ctx<'a> {
    conn: &'a Connection,
    report: &'a Report,
    reporter_kind: &'static str,
    reporter: &'a str,
    context_id: Option<String>,
}

impl Ctx<'_> {
    fn event(
        &self,
        kind: &str,
        task_id: Option<&str>,
        outcome: &str,
        fields: Value,
    ) -> rusqlite::Result<()> {
        append_event(
            self.conn,
            Event {
                reporter_kind: self.reporter_kind,
                reporter: self.reporter,
                message_id: &self.report.message_id,
                context_id: self.context_id.as_deref(),
                received_at: self.report.received_at,
                kind,
                task_id,
                outcome,
                fields,
            },
        )
    }

    fn agent(&self) -> Option<&str> {
        match &self.report.from {
            Reporter::Agent(name) => Some(name),
            Reporter::Operator => None,
        }
    }

    /// The row after a report touched it: its last reporter, and the last report's time. The
    /// task keeps its context ([`TaskRow::context`]); the report's own is in its event.
    fn touched(&self, mut row: TaskRow) -> TaskRow {
        row.last_report_at = Some(self.report.received_at);
        row.provenance.reporter = self.reporter.to_string();
        // The owner reported: it is alive.
        if self.agent().is_some() && self.agent() == row.owner.as_deref() {
            row.worker_died = false;
        }
        row
    }

    fn applied(&self, kind: &str, row: TaskRow, fields: Value) -> rusqlite::Result<Step> {
        save(self.conn, &row)?;
        self.event(kind, Some(&row.id), APPLIED, fields)?;
        Ok(Step {
            answer: Ok(Applied {
                task: get(self.conn, &row.id)?,
                duplicate: false,
            }),
            keep: true,
        })
    }

    /// The row `task_id` names, unfinished, and the reporter allowed to report on it.
    fn open_task(
        &self,
        task_id: &str,
        finished_ok: bool,
    ) -> rusqlite::Result<Result<TaskRow, Refusal>> {
        let Some(row) = get(self.conn, task_id)? else {
            return Ok(Err(Refusal::UnknownTask(
                task_id.chars().take(ID_MAX_CHARS).collect(),
            )));
        };
        if let Some(agent) = self.agent()
            && row.owner.as_deref() != Some(agent)
            && !row.tagged.iter().any(|t| t == agent)
        {
            // A task the agent cannot even read is "not found" to it, as one that does not
            // exist (nothing says it is there); one it assigned, it may read but not report on.
            return Ok(Err(if row.visible_to(agent) {
                Refusal::NotYours { task_id: row.id }
            } else {
                Refusal::UnknownTask(task_id.chars().take(ID_MAX_CHARS).collect())
            }));
        }
        if row.state.is_terminal() && !finished_ok {
            return Ok(Err(Refusal::Invalid(format!(
                "task {} is already finished ({})",
                row.id,
                row.state.as_str()
            ))));
        }
        Ok(Ok(row))
    }

    fn heartbeat(
        &self,
        last_activity_at: Option<DateTime<Utc>>,
        in_flight: &[String],
    ) -> rusqlite::Result<Step> {
        let Some(agent) = self.agent() else {
            return Step::refused(Refusal::Invalid(
                "a heartbeat comes from an agent, not the operator".into(),
            ));
        };
        if in_flight.len() > IN_FLIGHT_MAX
            || in_flight
                .iter()
                .any(|id| id.is_empty() || id.chars().count() > ID_MAX_CHARS)
        {
            return Step::refused(Refusal::Invalid(format!(
                "a heartbeat names at most {IN_FLIGHT_MAX} in-flight task ids of 1 to \
                 {ID_MAX_CHARS} characters"
            )));
        }
        let now = ts(self.report.received_at);
        let ids = serde_json::to_string(in_flight).unwrap_or_else(|_| "[]".into());
        self.conn
            .prepare_cached(
                "INSERT INTO agents (name, last_report_at, last_heartbeat_at, last_activity_at, \
                 in_flight) VALUES (?1, ?2, ?2, ?3, ?4) ON CONFLICT (name) DO UPDATE SET \
                 last_report_at = max(last_report_at, excluded.last_report_at), \
                 last_heartbeat_at = excluded.last_heartbeat_at, \
                 last_activity_at = excluded.last_activity_at, in_flight = excluded.in_flight",
            )?
            .execute(params![agent, now, last_activity_at.map(ts), ids])?;
        // A heartbeat naming a task its sender owns is a report about that task (the claim
        // heartbeat): it keeps the watchdog off a task that is being worked on.
        for id in in_flight {
            if let Some(row) = get(self.conn, id)?
                && row.owner.as_deref() == Some(agent)
                && !row.state.is_terminal()
            {
                save(self.conn, &self.touched(row))?;
            }
        }
        self.event(
            "heartbeat",
            None,
            APPLIED,
            json!({
                "in_flight": in_flight,
                "last_activity_at": last_activity_at.map(|t| t.to_rfc3339()),
            }),
        )?;
        Ok(Step {
            answer: Ok(Applied {
                task: None,
                duplicate: false,
            }),
            keep: true,
        })
    }

    fn assign(&self, a: &Assignment) -> rusqlite::Result<Step> {
        let title = clean(&a.title, TITLE_MAX_CHARS);
        if title.is_empty() {
            return Step::refused(Refusal::Invalid("an assignment needs a title".into()));
        }
        let mut tagged: Vec<String> = Vec::new();
        for name in a.owner.iter().chain(&a.tagged) {
            if !is_plain_name(name) {
                return Step::refused(Refusal::Invalid(format!(
                    "{:?} is not an agent name",
                    clean(name, ID_MAX_CHARS)
                )));
            }
        }
        for name in &a.tagged {
            if !tagged.contains(name) && a.owner.as_ref() != Some(name) {
                tagged.push(name.clone());
            }
        }
        if a.owner.is_none() && tagged.is_empty() {
            return Step::refused(Refusal::Invalid(
                "an assignment names its owner or tags the agents it is for".into(),
            ));
        }
        let id = format!("q_{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
        let row = TaskRow {
            id,
            title,
            owner: a.owner.clone(),
            tagged,
            created_by: self.reporter.to_string(),
            created_at: self.report.received_at,
            deadline: a.deadline,
            state: WireState::Submitted,
            ack: None,
            yielded: Vec::new(),
            blocked_on: None,
            // Nothing heard from an assignee yet.
            last_report_at: None,
            status_message: None,
            worker_died: false,
            provenance: Provenance {
                reporter: self.reporter.to_string(),
                context_id: self.context_id.clone(),
            },
        };
        let fields = json!({
            "owner": row.owner,
            "tagged": row.tagged,
            "deadline": row.deadline.map(|t| t.to_rfc3339()),
        });
        self.applied("assign", row, fields)
    }

    fn ack(&self, task_id: &str, ack: &Ack) -> rusqlite::Result<Step> {
        let Some(agent) = self.agent().map(str::to_string) else {
            return Step::refused(Refusal::Invalid(
                "the operator does not ACK: ACKs come from the agents a task is for".into(),
            ));
        };
        let mut row = match self.open_task(task_id, false)? {
            Ok(row) => row,
            Err(refusal) => return Step::refused(refusal),
        };
        let ack = match ack {
            Ack::Blocked { on } => {
                let on = clean(on, BLOCKED_ON_MAX_CHARS);
                if on.is_empty() {
                    return Step::refused(Refusal::Invalid(
                        "\"ACK blocked on\" names what it is blocked on".into(),
                    ));
                }
                Ack::Blocked { on }
            }
            Ack::Escalating { to } => {
                if !is_plain_name(to) || *to == agent {
                    return Step::refused(Refusal::Invalid(
                        "\"ACK escalating to\" names another agent".into(),
                    ));
                }
                ack.clone()
            }
            other => other.clone(),
        };
        let fields = ack_fields(&ack);
        if ack == Ack::Yielded {
            if row.owner.as_deref() == Some(agent.as_str()) {
                return Step::refused(Refusal::Invalid(format!(
                    "{agent} owns {}: the owner does not yield",
                    row.id
                )));
            }
            if !row.yielded.contains(&agent) {
                row.yielded.push(agent);
            }
            // Not progress: a yield does not count as a report for the watchdog.
            return self.applied("ack", row, fields);
        }
        if let Some(owner) = row.owner.clone()
            && owner != agent
        {
            // §4.2: someone else holds it. The refusal is kept: recorded as yielded.
            if !row.yielded.contains(&agent) {
                row.yielded.push(agent);
            }
            save(self.conn, &row)?;
            self.event("ack", Some(&row.id), ALREADY_OWNED, fields)?;
            return Ok(Step {
                answer: Err(Refusal::AlreadyOwned {
                    task_id: row.id,
                    owner,
                }),
                keep: true,
            });
        }
        let mut row = self.touched(row);
        row.ack = Some(AckRecord {
            by: agent.clone(),
            ack: ack.clone(),
            at: self.report.received_at,
        });
        match ack {
            Ack::Owning { .. } => {
                row.owner = Some(agent);
                row.state = WireState::Working;
                row.blocked_on = None;
            }
            Ack::Blocked { on } => {
                row.owner = Some(agent);
                row.state = WireState::InputRequired;
                row.blocked_on = Some(on);
            }
            Ack::Escalating { to } => {
                if !row.tagged.contains(&to) {
                    row.tagged.push(to.clone());
                }
                row.owner = Some(to);
                row.state = WireState::Submitted;
                row.blocked_on = None;
                row.worker_died = false;
            }
            Ack::Yielded => unreachable!("handled above"),
        }
        self.applied("ack", row, fields)
    }

    fn blocker(&self, task_id: &str, on: &str) -> rusqlite::Result<Step> {
        let on = clean(on, BLOCKED_ON_MAX_CHARS);
        if on.is_empty() {
            return Step::refused(Refusal::Invalid(
                "a blocker names what it is blocked on".into(),
            ));
        }
        let row = match self.reportable(task_id, false)? {
            Ok(row) => row,
            Err(refusal) => return Step::refused(refusal),
        };
        let mut row = self.touched(row);
        row.blocked_on = Some(on.clone());
        row.state = WireState::InputRequired;
        self.applied("blocker", row, json!({ "on": on }))
    }

    fn completion(&self, task_id: &str, state: WireState) -> rusqlite::Result<Step> {
        if !state.is_terminal() {
            return Step::refused(Refusal::Invalid(format!(
                "a completion names a terminal state (COMPLETED, FAILED, CANCELED, REJECTED), \
                 not {}",
                state.as_str()
            )));
        }
        let row = match self.reportable(task_id, true)? {
            Ok(row) => row,
            Err(refusal) => return Step::refused(refusal),
        };
        let orphaned = row.state == WireState::Failed
            && row.status_message.as_deref() == Some(ORPHANED_MESSAGE);
        if row.state.is_terminal() && !orphaned {
            return Step::refused(Refusal::Invalid(format!(
                "task {} is already finished ({})",
                row.id,
                row.state.as_str()
            )));
        }
        let mut row = self.touched(row);
        if row.owner.is_none() {
            row.owner = self.agent().map(str::to_string);
        }
        row.state = state;
        row.blocked_on = None;
        self.applied("completion", row, json!({ "state": state.as_str() }))
    }

    /// [`Ctx::open_task`], and then only its owner (or a tagged agent while nobody owns it).
    fn reportable(
        &self,
        task_id: &str,
        finished_ok: bool,
    ) -> rusqlite::Result<Result<TaskRow, Refusal>> {
        let row = match self.open_task(task_id, finished_ok)? {
            Ok(row) => row,
            Err(refusal) => return Ok(Err(refusal)),
        };
        match (self.agent(), &row.owner) {
            (Some(agent), Some(owner)) if agent != owner => {
                Ok(Err(Refusal::NotYours { task_id: row.id }))
            }
            _ => Ok(Ok(row)),
        }
    }
}

fn ack_fields(ack: &Ack) -> Value {
    match ack {
        Ack::Owning { eta } => json!({"ack": "owning", "eta": eta.map(|t| t.to_rfc3339())}),
        Ack::Escalating { to } => json!({"ack": "escalating", "to": to}),
        Ack::Blocked { on } => json!({"ack": "blocked", "on": on}),
        Ack::Yielded => json!({"ack": "yielded"}),
    }
}

/// The watchdog at `now` (§3.5), inside the caller's transaction: each condition once per task.
pub(super) fn sweep(
    conn: &Connection,
    rules: &QueueRules,
    now: DateTime<Utc>,
) -> rusqlite::Result<Vec<SweepEvent>> {
    let open: Vec<TaskRow> = conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM tasks WHERE state IN ('TASK_STATE_SUBMITTED', \
             'TASK_STATE_WORKING', 'TASK_STATE_INPUT_REQUIRED', 'TASK_STATE_AUTH_REQUIRED') \
             ORDER BY created_at, id"
        ))?
        .query_map([], task_from)?
        .collect::<rusqlite::Result<_>>()?;
    let mut events = Vec::new();
    for mut row in open {
        let stamp = now.timestamp_micros();
        let watchdog = |kind: &str, row: &TaskRow, fields: Value| {
            append_event(
                conn,
                Event {
                    reporter_kind: "watchdog",
                    reporter: "watchdog",
                    message_id: &format!("{kind}:{}:{stamp}", row.id),
                    context_id: None,
                    received_at: now,
                    kind,
                    task_id: Some(&row.id),
                    outcome: APPLIED,
                    fields,
                },
            )
        };
        if worker_died_due(&row, rules, now) {
            row.worker_died = true;
            save(conn, &row)?;
            watchdog(
                "worker_died",
                &row,
                json!({"rule": "worker_died.no_report_seconds", "seconds": rules.worker_died_s}),
            )?;
            events.push(SweepEvent::WorkerDied { task: row.clone() });
        }
        if orphan_due(&row, rules, now) {
            row.state = WireState::Failed;
            row.status_message = Some(ORPHANED_MESSAGE.to_string());
            save(conn, &row)?;
            watchdog(
                "orphaned",
                &row,
                json!({"rule": "stuck.no_reply_seconds", "seconds": rules.no_reply_s}),
            )?;
            events.push(SweepEvent::Orphaned { task: row });
        }
    }
    Ok(events)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::WorkQueue;

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
        assert_eq!(view.tasks[0].title, "rotate the LAB keys");
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

    #[test]
    fn a_missing_file_is_an_error_naming_it_and_nothing_is_created() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state/tasks.db");
        let err = read_only(&path).unwrap_err();
        assert!(err.starts_with(&path.display().to_string()), "{err}");
        assert!(err.contains("no work queue file"), "{err}");
        assert!(files(dir.path()).is_empty(), "no folder, no file");
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
}

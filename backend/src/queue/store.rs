//! What each report does to the queue's rows (the state machine, ACK-then-own, permissions,
//! idempotency), the watchdog's sweep and the operator's dismissals; the rows in SQL are
//! `rows`'. Every function here runs inside the writer's transaction: no I/O of its own, no
//! clock of its own.
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
//! - the watchdog: WORKING with no report for the stuck limit becomes FAILED, orphaned; a row
//!   it cannot read is passed by;
//! - the operator's dismissal: the row stays, `dismissed_at` set, an event recorded (an open
//!   task only canceled first).
//!
//! A row that cannot be read takes no report: to the reporter it is as absent.
//! Who may report on a task: the operator always; an agent that owns it, or any tagged agent
//! while nobody owns it. Other tagged agents may only yield (their other ACKs are refused as
//! already owned, and recorded as yielded); anyone else is refused (`NotYours`).
//! A finished task takes no more reports, except a completion from its owner after the
//! watchdog orphaned it: the late answer is the truth, and the orphaning stays in the events.

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, params};
use serde_json::{Value, json};

use super::judge::{ORPHANED_MESSAGE, orphan_due, worker_died_due};
use super::rows::{self, save, ts};
use super::{
    Ack, AckRecord, Applied, Assignment, Dismissal, Provenance, QueueRules, Refusal, Report,
    ReportKind, Reporter, SweepEvent, TaskRow, WireState,
};
use crate::clock::Clocked;
use crate::config::is_plain_name;
use crate::text::clean;

/// A task's title, at most this many characters (flattened, redacted, then cut).
pub const TITLE_MAX_CHARS: usize = 120;
/// What a task is blocked on, at most this many characters.
pub const BLOCKED_ON_MAX_CHARS: usize = 160;
/// A message id, task id or context id longer than this is not one.
pub use super::rows::ID_MAX_CHARS;
/// A heartbeat names at most this many in-flight tasks.
pub const IN_FLIGHT_MAX: usize = 64;

/// The row `id` when it can be read (an unreadable one is no task to report on or answer with).
fn readable(conn: &Connection, id: &str) -> rusqlite::Result<Option<TaskRow>> {
    Ok(rows::get(conn, id)?.and_then(Result::ok))
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
            Some(id) => readable(conn, id)?,
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
                task: readable(self.conn, &row.id)?,
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
        let row = match rows::get(self.conn, task_id)? {
            None => {
                return Ok(Err(Refusal::UnknownTask(
                    task_id.chars().take(ID_MAX_CHARS).collect(),
                )));
            }
            Some(Ok(row)) => row,
            // Nothing is applied to a row that cannot be read, and to the reporter it is as
            // absent (whose it is cannot be told): the dashboard shows it red.
            Some(Err(bad)) => {
                return Ok(Err(Refusal::UnknownTask(bad.id)));
            }
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
            return Ok(Err(Refusal::Finished {
                task_id: row.id,
                state: row.state,
            }));
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
            if let Some(row) = readable(self.conn, id)?
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
            finished_at: None,
            dismissed_at: None,
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
            return Step::refused(Refusal::Finished {
                task_id: row.id,
                state: row.state,
            });
        }
        let mut row = self.touched(row);
        if row.owner.is_none() {
            row.owner = self.agent().map(str::to_string);
        }
        row.state = state;
        row.blocked_on = None;
        row.finished_at = Some(self.report.received_at);
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
    at: &Clocked,
) -> rusqlite::Result<Vec<SweepEvent>> {
    let now = at.wall();
    let mut events = Vec::new();
    for row in rows::open(conn)? {
        // A row that cannot be read is passed by (the caller logs it): the others are swept.
        let mut row = match row {
            Ok(row) => row,
            Err(bad) => {
                events.push(SweepEvent::Unreadable(bad));
                continue;
            }
        };
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
        if worker_died_due(&row, rules, at) {
            row.worker_died = true;
            save(conn, &row)?;
            watchdog(
                "worker_died",
                &row,
                json!({"rule": "worker_died.no_report_seconds", "seconds": rules.worker_died_s}),
            )?;
            events.push(SweepEvent::WorkerDied { task: row.clone() });
        }
        if orphan_due(&row, rules, at) {
            row.state = WireState::Failed;
            row.status_message = Some(ORPHANED_MESSAGE.to_string());
            row.finished_at = Some(now);
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

/// The operator's dismissal of `task_id` at `at` (`fleetdash task dismiss`), inside the
/// caller's transaction: the row gets `dismissed_at` and the events a `dismiss` line; the row
/// itself stays (never a DELETE). A finished task, or a row that cannot be read, is dismissed as
/// it is; an open one only with `cancel`, which cancels it first (its own `completion` event),
/// so that nobody works on, nor the watchdog sweeps, a task nobody sees. Dismissed before:
/// nothing is written.
pub(super) fn dismiss(
    conn: &Connection,
    task_id: &str,
    cancel: bool,
    at: DateTime<Utc>,
) -> rusqlite::Result<Result<Dismissal, Refusal>> {
    let Some(read) = rows::get(conn, task_id)? else {
        return Ok(Err(Refusal::UnknownTask(clean(task_id, ID_MAX_CHARS))));
    };
    let before = match &read {
        Ok(row) => row.dismissed_at,
        Err(bad) => bad.dismissed_at,
    };
    if let Some(at) = before {
        return Ok(Ok(Dismissal::Already { at }));
    }
    let stamp = at.timestamp_micros();
    let operator = |kind: &str, fields: Value| {
        append_event(
            conn,
            Event {
                reporter_kind: "operator",
                reporter: "operator",
                message_id: &format!("{kind}:{task_id}:{stamp}"),
                context_id: None,
                received_at: at,
                kind,
                task_id: Some(task_id),
                outcome: APPLIED,
                fields,
            },
        )
    };
    let mut canceled = false;
    let fields = match &read {
        Ok(row) if !row.state.is_terminal() => {
            if !cancel {
                return Ok(Err(Refusal::Invalid(format!(
                    "task {} is still open ({}): only a finished task is dismissed;                      --cancel cancels it first",
                    row.id,
                    row.state
                        .as_str()
                        .trim_start_matches("TASK_STATE_")
                        .to_ascii_lowercase()
                ))));
            }
            let mut row = row.clone();
            row.state = WireState::Canceled;
            row.blocked_on = None;
            row.finished_at = Some(at);
            row.last_report_at = Some(at);
            // The task keeps its context (`TaskRow::context`); the operator reported last.
            row.provenance.reporter = "operator".to_string();
            save(conn, &row)?;
            operator(
                "completion",
                json!({"state": WireState::Canceled.as_str(), "by": "task dismiss --cancel"}),
            )?;
            canceled = true;
            json!({"state": WireState::Canceled.as_str()})
        }
        Ok(row) => json!({"state": row.state.as_str()}),
        Err(bad) => json!({"unreadable": bad.reason}),
    };
    conn.prepare_cached("UPDATE tasks SET dismissed_at = ?1 WHERE id = ?2")?
        .execute(params![ts(at), task_id])?;
    operator("dismiss", fields)?;
    let task = rows::get(conn, task_id)?.ok_or(rusqlite::Error::QueryReturnedNoRows)?;
    Ok(Ok(Dismissal::Dismissed {
        task: Box::new(task),
        canceled,
    }))
}

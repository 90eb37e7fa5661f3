//! How long tasks.db keeps what it holds (issue 33): it kept every task and every report's
//! event for ever, and a fleet's heartbeats alone are thousands of events a day.
//!
//! After each watchdog sweep the writer deletes, in the same transaction (its own savepoint):
//! - a finished task (completed, failed, canceled, rejected) once its finish is
//!   `queue_file.finished_stored_seconds` old, with every event about it;
//! - an event about no task the file holds (a heartbeat, a refusal, the events of a task gone)
//!   once it is `queue_file.events_stored_seconds` old.
//!
//! Open tasks, and every event about a task still held, stay however old: the schema refuses
//! to delete them (v3's triggers), so no later change here can lose what is still live. Each
//! age is observed on the queue's clock (`Clocked::age`), oldest first, stopping at the first
//! that is not due. Freed pages are reused by later rows: the file plateaus without a VACUUM.

use rusqlite::{Connection, params};

use super::judge::finish_what;
use super::rows::time;
use super::{QueueRules, WireState};
use crate::clock::Clocked;

/// At most this many tasks, and as many events, go in one sweep: a file that kept months of
/// events is emptied over a few sweeps, never in one transaction that holds up the reports
/// waiting behind it. A sweep a minute deletes millions a day, far more than a fleet reports.
pub const BATCH: usize = 2000;

/// What one pass deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pruned {
    pub tasks: usize,
    pub events: usize,
}

fn event_what(seq: i64) -> String {
    format!("queue event {seq}'s receipt")
}

/// Deletes what the retention above lets go at `at`, inside the caller's transaction.
pub(super) fn prune(
    conn: &Connection,
    rules: &QueueRules,
    at: &Clocked,
) -> rusqlite::Result<Pruned> {
    let mut pruned = Pruned::default();
    let terminal: Vec<String> = WireState::ALL
        .iter()
        .filter(|w| w.is_terminal())
        .map(|w| format!("'{}'", w.as_str()))
        .collect();
    let finished: Vec<(String, i64)> = conn
        .prepare_cached(&format!(
            "SELECT id, finished_at FROM tasks WHERE finished_at IS NOT NULL AND state IN ({}) \
             ORDER BY finished_at, id LIMIT ?1",
            terminal.join(", ")
        ))?
        .query_map([BATCH as i64], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    for (id, finished_at) in finished {
        let age = at.age(&finish_what(&id), time(finished_at));
        if !at.reached(age, rules.finished_stored_s) {
            break;
        }
        // The task first: its events may go only once it is gone (v3's trigger).
        conn.prepare_cached("DELETE FROM tasks WHERE id = ?1")?
            .execute([&id])?;
        pruned.events += conn
            .prepare_cached("DELETE FROM events WHERE task_id = ?1")?
            .execute([&id])?;
        pruned.tasks += 1;
    }
    let loose: Vec<(i64, i64)> = conn
        .prepare_cached(
            "SELECT seq, received_at FROM events WHERE task_id IS NULL \
             OR task_id NOT IN (SELECT id FROM tasks) ORDER BY seq LIMIT ?1",
        )?
        .query_map([BATCH as i64], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    for (seq, received_at) in loose {
        let age = at.age(&event_what(seq), time(received_at));
        // Events come in order: the first one not due is followed by younger ones.
        if !at.reached(age, rules.events_stored_s) {
            break;
        }
        pruned.events += conn
            .prepare_cached("DELETE FROM events WHERE seq = ?1")?
            .execute(params![seq])?;
    }
    Ok(pruned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{DateTime, Duration, Utc};

    use crate::queue::rows::ts;
    use crate::queue::schema::open_writer;

    /// The tests' clock: one fixed moment.
    fn t0() -> DateTime<Utc> {
        "2026-11-30T12:00:00Z".parse().expect("an RFC 3339 instant")
    }

    fn rules() -> QueueRules {
        QueueRules::of(
            &crate::config::Rules::parse(
                std::path::Path::new("config/rules.yaml"),
                include_str!("../../../config/rules.yaml"),
            )
            .unwrap(),
        )
    }

    fn secs(s: u64) -> Duration {
        Duration::seconds(i64::try_from(s).unwrap())
    }

    fn task(conn: &Connection, id: &str, state: &str, finished: Option<DateTime<Utc>>) {
        conn.execute(
            "INSERT INTO tasks (id, title, created_by, created_at, state, reporter, finished_at) \
             VALUES (?1, 't', 'operator', ?2, ?3, 'sol', ?4)",
            params![id, ts(t0() - Duration::days(30)), state, finished.map(ts)],
        )
        .unwrap();
    }

    fn event(conn: &Connection, id: &str, task: Option<&str>, at: DateTime<Utc>) {
        conn.execute(
            "INSERT INTO events (reporter_kind, reporter, message_id, received_at, kind, \
             task_id, outcome, fields) VALUES ('agent', 'sol', ?1, ?2, 'heartbeat', ?3, \
             'applied', '{}')",
            params![id, ts(at), task],
        )
        .unwrap();
    }

    fn ids(conn: &Connection, sql: &str) -> Vec<String> {
        conn.prepare(sql)
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    }

    /// What goes and what stays, at the retention's exact boundary: a finished task whose
    /// finish is `finished_stored_seconds` old goes with its events, one a second younger
    /// stays; an open task stays however old, with its events; a heartbeat event goes at
    /// `events_stored_seconds`, one a second younger stays.
    #[test]
    fn finished_tasks_and_loose_events_go_at_their_age_and_open_work_stays() {
        let dir = tempfile::tempdir().unwrap();
        let conn = open_writer(&dir.path().join("tasks.db"), rules().wal_kept_bytes).unwrap();
        let r = rules();
        let now = t0();
        let finished_due = now - secs(r.finished_stored_s);
        let events_due = now - secs(r.events_stored_s);
        task(&conn, "q_due", "TASK_STATE_COMPLETED", Some(finished_due));
        task(
            &conn,
            "q_young",
            "TASK_STATE_FAILED",
            Some(finished_due + Duration::seconds(1)),
        );
        task(&conn, "q_open", "TASK_STATE_WORKING", None);
        task(&conn, "q_blocked", "TASK_STATE_INPUT_REQUIRED", None);
        event(&conn, "done-1", Some("q_due"), now - Duration::days(40));
        event(&conn, "young-1", Some("q_young"), now - Duration::days(40));
        event(&conn, "open-1", Some("q_open"), now - Duration::days(40));
        event(&conn, "beat-old", None, events_due);
        event(&conn, "beat-new", None, events_due + Duration::seconds(1));

        let pruned = prune(&conn, &r, &Clocked::wall_only(now)).unwrap();
        assert_eq!(
            pruned,
            Pruned {
                tasks: 1,
                events: 2
            }
        );
        assert_eq!(
            ids(&conn, "SELECT id FROM tasks ORDER BY id"),
            ["q_blocked", "q_open", "q_young"]
        );
        assert_eq!(
            ids(&conn, "SELECT message_id FROM events ORDER BY seq"),
            ["young-1", "open-1", "beat-new"]
        );

        // A second later the young ones are due too; the open work still stays.
        let later = prune(&conn, &r, &Clocked::wall_only(now + Duration::seconds(1))).unwrap();
        assert_eq!(
            later,
            Pruned {
                tasks: 1,
                events: 2
            }
        );
        assert_eq!(
            ids(&conn, "SELECT id FROM tasks ORDER BY id"),
            ["q_blocked", "q_open"]
        );
        assert_eq!(ids(&conn, "SELECT message_id FROM events"), ["open-1"]);
    }

    /// The schema itself keeps what is live: an open task, and an event about a stored task,
    /// cannot be deleted, whatever a later change of the retention does.
    #[test]
    fn the_file_refuses_to_delete_open_tasks_and_the_events_of_stored_ones() {
        let dir = tempfile::tempdir().unwrap();
        let conn = open_writer(&dir.path().join("tasks.db"), rules().wal_kept_bytes).unwrap();
        task(&conn, "q_open", "TASK_STATE_SUBMITTED", None);
        task(&conn, "q_done", "TASK_STATE_COMPLETED", Some(t0()));
        event(&conn, "done-1", Some("q_done"), t0());
        let err = conn
            .execute("DELETE FROM tasks WHERE id = 'q_open'", [])
            .unwrap_err();
        assert!(
            err.to_string().contains("an open task is never deleted"),
            "{err}"
        );
        let err = conn.execute("DELETE FROM events", []).unwrap_err();
        assert!(err.to_string().contains("kept while its task is"), "{err}");
    }
}

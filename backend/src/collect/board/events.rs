//! The board's own worker events, made visible on its cards (spec §3.5).
//!
//! Hermes' dispatcher already decides when a worker crashed, timed out, went stale or was
//! reclaimed, on its own floors (15 min claim TTL, 1 h heartbeat), and writes an event when it
//! does. The dashboard maps those events; it runs no stuck detector of its own over board cards
//! (a 300 s rule over a kernel whose floor is 15 minutes would fire on every healthy worker).
//!
//! # Which event applies
//!
//! Per task, the **newest worker event since the task's latest reset** applies, and only that
//! one. A reset is a `claimed` (a new attempt started), `completed` (the work ended), or
//! `unblocked` (a person put the task back in play) event: a crash before the task was claimed
//! again describes an attempt that is over. "Newest" and "since" are decided by the event id
//! (AUTOINCREMENT, so insertion order), not by `created_at`: Hermes writes several events in the
//! same second (the reconciler requeues a card in the second it was projected), and clocks of
//! different writers need not agree. Done and archived cards carry no worker condition at all.
//!
//! The condition names how many events of its kind piled up since the reset, so a card that the
//! reconciler requeued five times with no claim in between (two dispatchers fighting over its
//! bookkeeping, spec §3.5) says "5× without a new claim".
//!
//! Payloads are parsed for numbers only (elapsed and limit seconds, failure counts); their text
//! (worker output, error messages) never leaves this module.

use std::collections::HashMap;

use fleetdash_model::{Band, human_age};
use serde_json::Value;

/// Events after which earlier worker events no longer describe the task.
pub const RESET_KINDS: [&str; 3] = ["claimed", "completed", "unblocked"];

/// The worker telemetry the dashboard shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WorkerKind {
    Crashed,
    TimedOut,
    GaveUp,
    SpawnFailed,
    ProtocolViolation,
    Stale,
    Reclaimed,
    Reconciled,
    RateLimited,
    RespawnGuarded,
}

impl WorkerKind {
    pub const ALL: [WorkerKind; 10] = [
        WorkerKind::Crashed,
        WorkerKind::TimedOut,
        WorkerKind::GaveUp,
        WorkerKind::SpawnFailed,
        WorkerKind::ProtocolViolation,
        WorkerKind::Stale,
        WorkerKind::Reclaimed,
        WorkerKind::Reconciled,
        WorkerKind::RateLimited,
        WorkerKind::RespawnGuarded,
    ];

    /// The `task_events.kind` value.
    pub fn as_str(self) -> &'static str {
        match self {
            WorkerKind::Crashed => "crashed",
            WorkerKind::TimedOut => "timed_out",
            WorkerKind::GaveUp => "gave_up",
            WorkerKind::SpawnFailed => "spawn_failed",
            WorkerKind::ProtocolViolation => "protocol_violation",
            WorkerKind::Stale => "stale",
            WorkerKind::Reclaimed => "reclaimed",
            WorkerKind::Reconciled => "reconciled",
            WorkerKind::RateLimited => "rate_limited",
            WorkerKind::RespawnGuarded => "respawn_guarded",
        }
    }

    pub fn parse(kind: &str) -> Option<WorkerKind> {
        WorkerKind::ALL.into_iter().find(|k| k.as_str() == kind)
    }

    /// Red: the attempt failed and needs a look (the worker died, was killed, or the breaker
    /// tripped). Amber: the dispatcher took the task back or held it, and will retry on its own
    /// (a protocol violation usually completes on the next run; a rate limit is not a failure).
    pub fn band(self) -> Band {
        match self {
            WorkerKind::Crashed
            | WorkerKind::TimedOut
            | WorkerKind::GaveUp
            | WorkerKind::SpawnFailed => Band::Red,
            WorkerKind::ProtocolViolation
            | WorkerKind::Stale
            | WorkerKind::Reclaimed
            | WorkerKind::Reconciled
            | WorkerKind::RateLimited
            | WorkerKind::RespawnGuarded => Band::Amber,
        }
    }
}

/// The numbers a worker event's payload may carry; nothing else of the payload is kept.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Numbers {
    pub elapsed_seconds: Option<u64>,
    pub limit_seconds: Option<u64>,
    pub heartbeat_age_seconds: Option<u64>,
    pub failures: Option<u64>,
    pub effective_limit: Option<u64>,
}

impl Numbers {
    /// Reads the numeric fields of a JSON payload; a field that is not a non-negative number,
    /// or a payload that is not a JSON object, gives `None` for it.
    pub fn from_payload(payload: Option<&str>) -> Numbers {
        let Some(Value::Object(map)) = payload.and_then(|p| serde_json::from_str(p).ok()) else {
            return Numbers::default();
        };
        let n = |key: &str| {
            map.get(key).and_then(|v| {
                v.as_u64()
                    .or_else(|| v.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
            })
        };
        Numbers {
            elapsed_seconds: n("elapsed_seconds"),
            limit_seconds: n("limit_seconds"),
            heartbeat_age_seconds: n("heartbeat_age_seconds"),
            failures: n("failures"),
            effective_limit: n("effective_limit"),
        }
    }
}

/// Worker events of one kind for one task since its latest reset: the newest of them, and how
/// many there were.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerEvent {
    pub kind: WorkerKind,
    /// `task_events.id` (rowid) of the newest.
    pub event_id: i64,
    /// Unix seconds of the newest.
    pub created_at: Option<i64>,
    pub count: u64,
    pub numbers: Numbers,
}

/// One query for the whole board, grouped per task and kind: the worker events newer than the
/// task's latest reset. SQLite returns the bare columns (`created_at`, `payload`) of the row
/// that holds `MAX(rowid)`, i.e. of the newest event of the group.
///
/// `has_payload`: old schemas may lack the column.
pub fn since_reset_sql(has_payload: bool) -> String {
    let resets = quoted(RESET_KINDS);
    let workers = quoted(WorkerKind::ALL.map(WorkerKind::as_str));
    let payload = if has_payload { "e.payload" } else { "NULL" };
    format!(
        "WITH resets AS (\
             SELECT task_id, MAX(rowid) AS reset_id FROM task_events \
             WHERE kind IN ({resets}) GROUP BY task_id) \
         SELECT e.task_id, e.kind, MAX(e.rowid), e.created_at, {payload}, COUNT(*) \
         FROM task_events e LEFT JOIN resets r ON r.task_id = e.task_id \
         WHERE e.kind IN ({workers}) AND e.rowid > COALESCE(r.reset_id, 0) \
         GROUP BY e.task_id, e.kind"
    )
}

/// `'a', 'b'` for an SQL `IN` list; the kinds are this module's own constants.
fn quoted<'a>(kinds: impl IntoIterator<Item = &'a str>) -> String {
    kinds
        .into_iter()
        .map(|k| format!("'{k}'"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Keeps, per task, the newest of its worker events (by event id).
pub fn newest_per_task(
    rows: impl IntoIterator<Item = (String, WorkerEvent)>,
) -> HashMap<String, WorkerEvent> {
    let mut out: HashMap<String, WorkerEvent> = HashMap::new();
    for (task, event) in rows {
        match out.get(&task) {
            Some(kept) if kept.event_id >= event.event_id => {}
            _ => {
                out.insert(task, event);
            }
        }
    }
    out
}

/// Statuses whose cards carry no worker condition: the work is over.
pub fn is_terminal(status: &str) -> bool {
    matches!(status, "done" | "archived")
}

/// What the card shows for its applicable worker event, and the band it earns. `now` in Unix
/// seconds.
pub fn condition(event: &WorkerEvent) -> (String, Band) {
    let n = &event.numbers;
    let secs = |s: Option<u64>| s.map(human_age);
    let what = match event.kind {
        WorkerKind::Crashed => "the worker process died".to_string(),
        WorkerKind::TimedOut => match (secs(n.elapsed_seconds), secs(n.limit_seconds)) {
            (Some(e), Some(l)) => format!("the worker was killed after {e} (limit {l})"),
            (Some(e), None) => format!("the worker was killed after {e}"),
            _ => "the worker ran past its time limit and was killed".to_string(),
        },
        WorkerKind::GaveUp => match (n.failures, n.effective_limit) {
            (Some(f), Some(l)) => {
                format!("the dispatcher stopped retrying after {f} failures (limit {l})")
            }
            (Some(f), None) => format!("the dispatcher stopped retrying after {f} failures"),
            _ => "the dispatcher stopped retrying".to_string(),
        },
        WorkerKind::SpawnFailed => "the worker could not be started".to_string(),
        WorkerKind::ProtocolViolation => {
            "the worker exited without completing, blocking or asking for review".to_string()
        }
        WorkerKind::Stale => match secs(n.heartbeat_age_seconds) {
            Some(age) => format!("no heartbeat for {age}; the task was taken back"),
            None => "no heartbeat; the task was taken back".to_string(),
        },
        WorkerKind::Reclaimed => "the claim expired; the task was taken back".to_string(),
        WorkerKind::Reconciled => {
            "requeued by the reconciler (running without a valid claim)".to_string()
        }
        WorkerKind::RateLimited => {
            "the worker hit a provider rate limit; requeued without counting a failure".to_string()
        }
        WorkerKind::RespawnGuarded => "the dispatcher held back a respawn".to_string(),
    };
    let mut text = format!("{}: {what}", event.kind.as_str());
    // An absolute time, not an age: the condition is projected into the vault, and a text
    // that changed every minute would rewrite an unchanged board every pass.
    if let Some(at) = event
        .created_at
        .and_then(|at| chrono::DateTime::from_timestamp(at, 0))
    {
        text.push_str(&at.format(" at %Y-%m-%d %H:%M UTC").to_string());
    }
    if event.count > 1 {
        text.push_str(&format!(" ({}× without a new claim)", event.count));
    }
    (text, event.kind.band())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::Connection;

    const NOW: i64 = 1_800_000_000;

    fn event(kind: WorkerKind, id: i64) -> WorkerEvent {
        WorkerEvent {
            kind,
            event_id: id,
            created_at: Some(NOW - 120),
            count: 1,
            numbers: Numbers::default(),
        }
    }

    #[test]
    fn every_kind_round_trips_and_has_a_band() {
        for k in WorkerKind::ALL {
            assert_eq!(WorkerKind::parse(k.as_str()), Some(k));
        }
        assert_eq!(WorkerKind::parse("heartbeat"), None);
        assert_eq!(WorkerKind::parse("claimed"), None);
        let red: Vec<_> = WorkerKind::ALL
            .into_iter()
            .filter(|k| k.band() == Band::Red)
            .map(WorkerKind::as_str)
            .collect();
        assert_eq!(red, ["crashed", "timed_out", "gave_up", "spawn_failed"]);
    }

    #[test]
    fn conditions_name_the_kind_the_numbers_and_the_age() {
        let mut e = event(WorkerKind::TimedOut, 1);
        e.numbers = Numbers::from_payload(Some(
            r#"{"pid": 7, "elapsed_seconds": 7260, "limit_seconds": 7200, "sigkill": true}"#,
        ));
        let (text, band) = condition(&e);
        assert_eq!(
            text,
            "timed_out: the worker was killed after 2 h 1 min (limit 2 h) at 2027-01-15 07:58 UTC"
        );
        assert_eq!(band, Band::Red);

        let mut e = event(WorkerKind::Reconciled, 1);
        e.count = 5;
        let (text, band) = condition(&e);
        assert!(text.starts_with("reconciled: "), "{text}");
        assert!(text.ends_with("(5× without a new claim)"), "{text}");
        assert_eq!(band, Band::Amber);

        let mut e = event(WorkerKind::GaveUp, 1);
        e.numbers = Numbers::from_payload(Some(
            r#"{"failures": 2, "effective_limit": 2, "limit_source": "default", "error": "Bearer abcdefghijklmnop"}"#,
        ));
        let (text, _) = condition(&e);
        assert!(text.contains("after 2 failures (limit 2)"), "{text}");
        assert!(!text.contains("Bearer"), "{text}");
    }

    #[test]
    fn payload_text_is_never_kept_and_bad_payloads_give_no_numbers() {
        assert_eq!(Numbers::from_payload(None), Numbers::default());
        assert_eq!(Numbers::from_payload(Some("not json")), Numbers::default());
        assert_eq!(Numbers::from_payload(Some("[1,2]")), Numbers::default());
        let n = Numbers::from_payload(Some(
            r#"{"elapsed_seconds": "7260", "heartbeat_age_seconds": -3, "failures": 2.0}"#,
        ));
        assert_eq!(
            n,
            Numbers {
                failures: Some(2),
                ..Numbers::default()
            }
        );
    }

    #[test]
    fn the_newest_event_wins_by_id_not_by_time() {
        let mut older_id = event(WorkerKind::Crashed, 10);
        older_id.created_at = Some(NOW); // same or later second, but written first
        let newer_id = event(WorkerKind::Reclaimed, 11);
        let kept = newest_per_task([
            ("t_1".to_string(), older_id),
            ("t_1".to_string(), newer_id.clone()),
            ("t_2".to_string(), event(WorkerKind::Stale, 3)),
        ]);
        assert_eq!(kept["t_1"], newer_id);
        assert_eq!(kept["t_2"].kind, WorkerKind::Stale);
    }

    /// The SQL rule against a real table: events before the latest reset do not apply.
    #[test]
    fn events_before_the_latest_claim_completion_or_unblock_no_longer_apply() {
        let db = Connection::open_in_memory().unwrap();
        db.execute_batch(
            "CREATE TABLE task_events (id INTEGER PRIMARY KEY AUTOINCREMENT, task_id TEXT NOT NULL,
                 run_id INTEGER, kind TEXT NOT NULL, payload TEXT, created_at INTEGER NOT NULL);",
        )
        .unwrap();
        let script: &[(&str, &str)] = &[
            // t_a: crashed, then claimed again: nothing applies.
            ("t_a", "claimed"),
            ("t_a", "crashed"),
            ("t_a", "claimed"),
            ("t_a", "heartbeat"),
            // t_b: stale then reclaimed after its claim: the reclaim is newest.
            ("t_b", "claimed"),
            ("t_b", "stale"),
            ("t_b", "reclaimed"),
            // t_c: never claimed; reconciled three times.
            ("t_c", "reconciled"),
            ("t_c", "status"),
            ("t_c", "reconciled"),
            ("t_c", "reconciled"),
            // t_d: crashed, gave up, then a person unblocked it.
            ("t_d", "claimed"),
            ("t_d", "crashed"),
            ("t_d", "gave_up"),
            ("t_d", "unblocked"),
            // t_e: timed out, then completed on a later run.
            ("t_e", "timed_out"),
            ("t_e", "completed"),
            // t_f: crashed, then gave up: both since the claim, gave_up is newest.
            ("t_f", "claimed"),
            ("t_f", "crashed"),
            ("t_f", "gave_up"),
        ];
        for (task, kind) in script {
            // One second for all: ordering must come from the id.
            db.execute(
                "INSERT INTO task_events (task_id, kind, payload, created_at) VALUES (?1, ?2, '{}', ?3)",
                rusqlite::params![task, kind, NOW],
            )
            .unwrap();
        }
        let mut stmt = db.prepare(&since_reset_sql(true)).unwrap();
        let rows: Vec<(String, WorkerEvent)> = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    WorkerEvent {
                        kind: WorkerKind::parse(&r.get::<_, String>(1)?).unwrap(),
                        event_id: r.get(2)?,
                        created_at: r.get(3)?,
                        numbers: Numbers::from_payload(r.get::<_, Option<String>>(4)?.as_deref()),
                        count: r.get::<_, i64>(5)? as u64,
                    },
                ))
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let kept = newest_per_task(rows);
        let kinds: HashMap<&str, (WorkerKind, u64)> = kept
            .iter()
            .map(|(t, e)| (t.as_str(), (e.kind, e.count)))
            .collect();
        assert_eq!(
            kinds,
            HashMap::from([
                ("t_b", (WorkerKind::Reclaimed, 1)),
                ("t_c", (WorkerKind::Reconciled, 3)),
                ("t_f", (WorkerKind::GaveUp, 1)),
            ])
        );
    }

    #[test]
    fn done_and_archived_are_terminal() {
        assert!(is_terminal("done") && is_terminal("archived"));
        assert!(!is_terminal("blocked") && !is_terminal("ready"));
    }
}

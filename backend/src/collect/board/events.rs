//! The board's own worker events, made visible on its cards (spec §3.5).
//!
//! Hermes' dispatcher already decides when a worker crashed, timed out, went stale or was
//! reclaimed, on its own floors (15 min claim TTL, 1 h heartbeat), and writes an event when it
//! does. The dashboard maps those events; it runs no stuck detector of its own over board cards
//! (a 300 s rule over a kernel whose floor is 15 minutes would fire on every healthy worker).
//!
//! # Which events apply
//!
//! Only events since the task last **completed** count: after that the work is over. Of those:
//!
//! - **The current event**: the newest worker event since the task's latest **reset**, a
//!   `claimed` (a new attempt started) or `unblocked` (a person put the task back in play).
//!   It says what is happening to the attempt now, and how many events of its kind piled up
//!   since the reset: a card the reconciler requeued five times with no claim in between (two
//!   dispatchers fighting over its bookkeeping, spec §3.5) says "5× without a new claim".
//! - **The last failure** (crashed, timed_out, gave_up, spawn_failed): it stays visible until
//!   the task completes, even once a new attempt started, since Hermes retries a crash within
//!   a dispatch tick and the card would otherwise look healthy a minute after its worker died.
//!   While it is the current attempt's, it is red; once a new attempt or a person took over, it
//!   is amber and says so ("retried since", "unblocked by hand since").
//!
//! "Newest" and "since" are decided by the event id (AUTOINCREMENT, so insertion order), not by
//! `created_at`: Hermes writes several events in the same second, and clocks of different
//! writers need not agree. Done and archived cards carry no worker condition at all.
//!
//! # Bands, by what the events mean in Hermes 0.19.0 (hermes_cli/kanban_db.py)
//!
//! Red, the attempt failed and needs a look: crashed (the worker died), timed_out (killed at
//! its runtime cap), gave_up (the failure breaker tripped and blocked the card), spawn_failed.
//! Amber, the dispatcher took the task back or held it and retries on its own: stale,
//! reclaimed (the claim expired, or a person reclaimed it: then the reason is shown),
//! reconciled, protocol_violation, rate_limited, respawn_guarded, and reclaim_deferred (a
//! reclaim whose worker survived termination: the claim is held and the kill retried).
//! Green, facts about a healthy card: claim_extended (the claim ran out while the worker's
//! process was alive, so it was extended rather than spawning a duplicate) and claim_rejected
//! (a claim found a parent not done, so the card went back to todo to wait for it).
//!
//! Payloads are parsed for numbers, the manual-reclaim flag and its reason only; the reason is
//! cleaned ([`crate::text`]) and bounded, and no other payload text leaves this module.

use std::collections::HashMap;

use fleetdash_model::{Band, human_age};
use serde_json::Value;

use crate::text::clean;

/// Events after which earlier worker events no longer describe the current attempt.
pub const RESET_KINDS: [&str; 2] = ["claimed", "unblocked"];
/// The event after which no earlier event applies at all: the work is over.
pub const COMPLETED: &str = "completed";
/// A manual reclaim's reason longer than this is cut (in characters, ellipsis included).
pub const REASON_MAX_CHARS: usize = 80;

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
    ReclaimDeferred,
    ClaimExtended,
    ClaimRejected,
}

impl WorkerKind {
    pub const ALL: [WorkerKind; 13] = [
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
        WorkerKind::ReclaimDeferred,
        WorkerKind::ClaimExtended,
        WorkerKind::ClaimRejected,
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
            WorkerKind::ReclaimDeferred => "reclaim_deferred",
            WorkerKind::ClaimExtended => "claim_extended",
            WorkerKind::ClaimRejected => "claim_rejected",
        }
    }

    pub fn parse(kind: &str) -> Option<WorkerKind> {
        WorkerKind::ALL.into_iter().find(|k| k.as_str() == kind)
    }

    /// The band of the current event of this kind (the module's doc says why each).
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
            | WorkerKind::RespawnGuarded
            | WorkerKind::ReclaimDeferred => Band::Amber,
            WorkerKind::ClaimExtended | WorkerKind::ClaimRejected => Band::Green,
        }
    }

    /// A failure stays visible until the task completes.
    pub fn is_failure(self) -> bool {
        self.band() == Band::Red
    }
}

/// What a worker event's payload may tell; nothing else of the payload is kept.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    pub elapsed_seconds: Option<u64>,
    pub limit_seconds: Option<u64>,
    pub heartbeat_age_seconds: Option<u64>,
    pub failures: Option<u64>,
    pub effective_limit: Option<u64>,
    /// `reclaimed` by a person (`hermes kanban reclaim`), not by claim expiry.
    pub manual: bool,
    /// A manual reclaim's reason, cleaned and bounded; `None` when none was given.
    pub manual_reason: Option<String>,
}

impl Facts {
    /// Reads a JSON payload; a field of the wrong type, or a payload that is not a JSON
    /// object, gives nothing for it.
    pub fn from_payload(payload: Option<&str>) -> Facts {
        let Some(Value::Object(map)) = payload.and_then(|p| serde_json::from_str(p).ok()) else {
            return Facts::default();
        };
        let n = |key: &str| {
            map.get(key).and_then(|v| {
                v.as_u64()
                    .or_else(|| v.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
            })
        };
        let manual = map.get("manual").and_then(Value::as_bool) == Some(true);
        Facts {
            elapsed_seconds: n("elapsed_seconds"),
            limit_seconds: n("limit_seconds"),
            heartbeat_age_seconds: n("heartbeat_age_seconds"),
            failures: n("failures"),
            effective_limit: n("effective_limit"),
            manual,
            manual_reason: map
                .get("reason")
                .and_then(Value::as_str)
                .filter(|_| manual)
                .map(|r| clean(r, REASON_MAX_CHARS))
                .filter(|r| !r.is_empty()),
        }
    }
}

/// Worker events of one kind for one task: the newest of them, and how many there were since
/// the task's latest reset.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerEvent {
    pub kind: WorkerKind,
    /// `task_events.id` (rowid) of the newest.
    pub event_id: i64,
    /// Unix seconds of the newest.
    pub created_at: Option<i64>,
    pub count: u64,
    pub facts: Facts,
}

/// What took over after a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TakenOver {
    /// A new attempt was claimed.
    Retried,
    /// A person unblocked the card.
    Unblocked,
}

/// The worker events that apply to one task (module doc).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskEvents {
    pub current: Option<WorkerEvent>,
    /// The last failure since the task completed, when it is not the current event.
    pub earlier_failure: Option<(WorkerEvent, Option<TakenOver>)>,
}

/// One event row as SQLite gave it, copied out of the read transaction.
#[derive(Debug, Clone, PartialEq)]
pub struct RawEvent {
    pub task_id: Option<String>,
    pub id: i64,
    pub kind: Option<String>,
    pub created_at: Option<i64>,
    /// Only for worker kinds (NULL for resets).
    pub payload: Option<String>,
}

/// One query for the whole board: every worker event and reset since each task's latest
/// completion. It copies rows and decides nothing: the read transaction stays short.
///
/// `has_payload`: old schemas may lack the column.
pub fn since_completion_sql(has_payload: bool) -> String {
    let resets = quoted(RESET_KINDS);
    let workers = quoted(WorkerKind::ALL.map(WorkerKind::as_str));
    let payload = if has_payload {
        format!("CASE WHEN e.kind IN ({workers}) THEN e.payload END")
    } else {
        "NULL".to_string()
    };
    format!(
        "WITH done AS (\
             SELECT task_id, MAX(rowid) AS done_id FROM task_events \
             WHERE kind = '{COMPLETED}' GROUP BY task_id) \
         SELECT e.task_id, e.rowid, e.kind, e.created_at, {payload} \
         FROM task_events e LEFT JOIN done d ON d.task_id = e.task_id \
         WHERE e.kind IN ({workers}, {resets}) AND e.rowid > COALESCE(d.done_id, 0)"
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

/// The events that apply, per task id (`task_key` turns a raw task id into the card's id).
pub fn per_task(
    rows: Vec<RawEvent>,
    task_key: impl Fn(&str) -> String,
) -> HashMap<String, TaskEvents> {
    let mut by_task: HashMap<String, Vec<RawEvent>> = HashMap::new();
    for row in rows {
        if let Some(task) = row.task_id.as_deref() {
            by_task.entry(task_key(task)).or_default().push(row);
        }
    }
    by_task
        .into_iter()
        .filter_map(|(task, mut rows)| {
            rows.sort_by_key(|r| r.id);
            let events = applicable(&rows);
            (events != TaskEvents::default()).then_some((task, events))
        })
        .collect()
}

/// The module doc's rule over one task's events since its completion, in id order.
fn applicable(rows: &[RawEvent]) -> TaskEvents {
    let kind_of = |r: &RawEvent| r.kind.as_deref().and_then(WorkerKind::parse);
    let reset = rows
        .iter()
        .rposition(|r| r.kind.as_deref().is_some_and(|k| RESET_KINDS.contains(&k)));
    let since_reset = &rows[reset.map_or(0, |i| i + 1)..];
    let event = |row: &RawEvent, kind: WorkerKind, count: u64| WorkerEvent {
        kind,
        event_id: row.id,
        created_at: row.created_at,
        count,
        facts: Facts::from_payload(row.payload.as_deref()),
    };
    let current = since_reset
        .iter()
        .rev()
        .find_map(|r| Some((r, kind_of(r)?)))
        .map(|(row, kind)| {
            let count = since_reset
                .iter()
                .filter(|r| kind_of(r) == Some(kind))
                .count() as u64;
            event(row, kind, count)
        });
    let failure = rows
        .iter()
        .enumerate()
        .rev()
        .find_map(|(i, r)| Some((i, r, kind_of(r).filter(|k| k.is_failure())?)));
    let earlier_failure = failure.and_then(|(i, row, kind)| {
        if current.as_ref().is_some_and(|c| c.event_id == row.id) {
            return None;
        }
        let taken_over = reset.filter(|r| *r > i).map(|r| {
            if rows[r].kind.as_deref() == Some("unblocked") {
                TakenOver::Unblocked
            } else {
                TakenOver::Retried
            }
        });
        Some((event(row, kind, 1), taken_over))
    });
    TaskEvents {
        current,
        earlier_failure,
    }
}

/// Statuses whose cards carry no worker condition: the work is over.
pub fn is_terminal(status: &str) -> bool {
    matches!(status, "done" | "archived")
}

/// What the card shows for the events that apply, each with the band it earns: the current
/// event first, then an earlier failure.
pub fn conditions(events: &TaskEvents) -> Vec<(String, Band)> {
    let mut out = Vec::new();
    if let Some(event) = &events.current {
        out.push(condition(event));
    }
    if let Some((failure, taken_over)) = &events.earlier_failure {
        let (mut text, band) = condition(failure);
        let band = match taken_over {
            None => band,
            Some(TakenOver::Retried) => {
                text.push_str("; retried since");
                Band::Amber
            }
            Some(TakenOver::Unblocked) => {
                text.push_str("; unblocked by hand since");
                Band::Amber
            }
        };
        out.push((text, band));
    }
    out
}

/// What the card shows for one worker event, and the band it earns.
pub fn condition(event: &WorkerEvent) -> (String, Band) {
    let n = &event.facts;
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
        WorkerKind::Reclaimed if n.manual => match &n.manual_reason {
            Some(reason) => format!("taken back by hand ({reason})"),
            None => "taken back by hand (no reason given)".to_string(),
        },
        WorkerKind::Reclaimed => "the claim expired; the task was taken back".to_string(),
        WorkerKind::Reconciled => {
            "requeued by the reconciler (running without a valid claim)".to_string()
        }
        WorkerKind::RateLimited => {
            "the worker hit a provider rate limit; requeued without counting a failure".to_string()
        }
        WorkerKind::RespawnGuarded => "the dispatcher held back a respawn".to_string(),
        WorkerKind::ReclaimDeferred => {
            "the worker survived being stopped; the claim is held and the stop retried".to_string()
        }
        WorkerKind::ClaimExtended => {
            "the claim ran out while the worker was alive; extended".to_string()
        }
        WorkerKind::ClaimRejected => {
            "a claim found a parent not done; back in todo to wait for it".to_string()
        }
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
            facts: Facts::default(),
        }
    }

    #[test]
    fn every_kind_round_trips_and_has_a_band() {
        for k in WorkerKind::ALL {
            assert_eq!(WorkerKind::parse(k.as_str()), Some(k));
        }
        assert_eq!(WorkerKind::parse("heartbeat"), None);
        assert_eq!(WorkerKind::parse("claimed"), None);
        let of = |band: Band| -> Vec<_> {
            WorkerKind::ALL
                .into_iter()
                .filter(|k| k.band() == band)
                .map(WorkerKind::as_str)
                .collect()
        };
        assert_eq!(
            of(Band::Red),
            ["crashed", "timed_out", "gave_up", "spawn_failed"]
        );
        assert_eq!(of(Band::Green), ["claim_extended", "claim_rejected"]);
    }

    #[test]
    fn conditions_name_the_kind_the_numbers_and_the_time() {
        let mut e = event(WorkerKind::TimedOut, 1);
        e.facts = Facts::from_payload(Some(
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
        e.facts = Facts::from_payload(Some(
            r#"{"failures": 2, "effective_limit": 2, "limit_source": "default", "error": "Bearer abcdefghijklmnop"}"#,
        ));
        let (text, _) = condition(&e);
        assert!(text.contains("after 2 failures (limit 2)"), "{text}");
        assert!(!text.contains("Bearer"), "{text}");
    }

    /// Was "the claim expired" for every reclaim.
    #[test]
    fn a_manual_reclaim_says_so_with_its_reason_cleaned() {
        let mut e = event(WorkerKind::Reclaimed, 1);
        e.facts = Facts::from_payload(Some(
            r#"{"manual": true, "reason": "wrong repo\n\u202e token sk-ant-api03-PLANTEDabcdefghijklmnop0123", "prev_lock": "lab:42"}"#,
        ));
        let (text, band) = condition(&e);
        assert!(
            text.starts_with(&format!(
                "reclaimed: taken back by hand (wrong repo token {})",
                crate::redact::REDACTED
            )),
            "{text}"
        );
        assert!(
            !text.contains("PLANTED") && !text.contains('\u{202e}'),
            "{text}"
        );
        assert_eq!(band, Band::Amber);

        e.facts = Facts::from_payload(Some(r#"{"manual": true, "reason": null}"#));
        assert!(
            condition(&e)
                .0
                .contains("taken back by hand (no reason given)")
        );
        // The claim-expiry shape, whose `reason`-free payload says nothing of a person.
        e.facts = Facts::from_payload(Some(
            r#"{"stale_lock": "lab:42", "claim_expires": 1, "heartbeat_stale": false, "now": 2}"#,
        ));
        assert!(condition(&e).0.contains("the claim expired"));
        // A reason without `manual: true` is not shown (reclaim_deferred's reason is a code).
        e.facts = Facts::from_payload(Some(r#"{"reason": "ttl_expired_worker_alive"}"#));
        assert_eq!(e.facts.manual_reason, None);
    }

    /// Were not mapped at all: the cards showed nothing.
    #[test]
    fn claim_rejected_extended_and_reclaim_deferred_are_mapped() {
        for (kind, band, words) in [
            (WorkerKind::ClaimRejected, Band::Green, "parent not done"),
            (WorkerKind::ClaimExtended, Band::Green, "extended"),
            (
                WorkerKind::ReclaimDeferred,
                Band::Amber,
                "survived being stopped",
            ),
        ] {
            let (text, b) = condition(&event(kind, 1));
            assert!(text.starts_with(&format!("{}: ", kind.as_str())), "{text}");
            assert!(text.contains(words), "{text}");
            assert_eq!(b, band, "{text}");
        }
    }

    #[test]
    fn payload_text_is_never_kept_and_bad_payloads_give_nothing() {
        assert_eq!(Facts::from_payload(None), Facts::default());
        assert_eq!(Facts::from_payload(Some("not json")), Facts::default());
        assert_eq!(Facts::from_payload(Some("[1,2]")), Facts::default());
        let n = Facts::from_payload(Some(
            r#"{"elapsed_seconds": "7260", "heartbeat_age_seconds": -3, "failures": 2.0, "manual": "yes"}"#,
        ));
        assert_eq!(
            n,
            Facts {
                failures: Some(2),
                ..Facts::default()
            }
        );
    }

    fn raw(task: &str, id: i64, kind: &str) -> RawEvent {
        RawEvent {
            task_id: Some(task.to_string()),
            id,
            kind: Some(kind.to_string()),
            created_at: Some(NOW),
            payload: Some("{}".to_string()),
        }
    }

    #[test]
    fn the_newest_event_wins_by_id_not_by_time() {
        let mut older_id = raw("t_1", 10, "crashed");
        older_id.created_at = Some(NOW + 60); // a later second, but written first
        let rows = vec![raw("t_1", 11, "stale"), older_id, raw("t_2", 3, "stale")];
        let kept = per_task(rows, str::to_string);
        let t1 = &kept["t_1"];
        assert_eq!(t1.current.as_ref().unwrap().kind, WorkerKind::Stale);
        // The crash stays, in the same attempt: still red.
        let (failure, taken_over) = t1.earlier_failure.as_ref().unwrap();
        assert_eq!((failure.kind, *taken_over), (WorkerKind::Crashed, None));
        assert_eq!(
            kept["t_2"].current.as_ref().unwrap().kind,
            WorkerKind::Stale
        );
    }

    /// A crash followed by a new claim showed nothing: Hermes requeues a crashed card and
    /// claims it again on its next tick, so the crash was invisible a minute later.
    #[test]
    fn a_failure_stays_visible_after_a_new_claim_until_the_task_completes() {
        let kept = per_task(
            vec![
                raw("t_a", 1, "claimed"),
                raw("t_a", 2, "crashed"),
                raw("t_a", 3, "claimed"),
                raw("t_a", 4, "claim_extended"),
            ],
            str::to_string,
        );
        let shown = conditions(&kept["t_a"]);
        assert_eq!(shown.len(), 2, "{shown:?}");
        assert!(shown[0].0.starts_with("claim_extended: "));
        assert_eq!(shown[0].1, Band::Green);
        assert!(shown[1].0.starts_with("crashed: "));
        assert!(shown[1].0.ends_with("; retried since"), "{shown:?}");
        assert_eq!(shown[1].1, Band::Amber);

        let kept = per_task(
            vec![
                raw("t_d", 1, "claimed"),
                raw("t_d", 2, "gave_up"),
                raw("t_d", 3, "unblocked"),
            ],
            str::to_string,
        );
        let c = conditions(&kept["t_d"]);
        assert_eq!(c.len(), 1);
        assert!(c[0].0.ends_with("; unblocked by hand since"), "{c:?}");
    }

    /// The SQL rule against a real table: nothing before the latest completion applies, and
    /// resets only end the current event, not a failure.
    #[test]
    fn events_before_the_latest_completion_no_longer_apply() {
        let db = Connection::open_in_memory().unwrap();
        db.execute_batch(
            "CREATE TABLE task_events (id INTEGER PRIMARY KEY AUTOINCREMENT, task_id TEXT NOT NULL,
                 run_id INTEGER, kind TEXT NOT NULL, payload TEXT, created_at INTEGER NOT NULL);",
        )
        .unwrap();
        let script: &[(&str, &str)] = &[
            // t_a: crashed, then claimed again: the crash stays, retried since.
            ("t_a", "claimed"),
            ("t_a", "crashed"),
            ("t_a", "claimed"),
            ("t_a", "heartbeat"),
            // t_b: stale then reclaimed after its claim: the reclaim is current.
            ("t_b", "claimed"),
            ("t_b", "stale"),
            ("t_b", "reclaimed"),
            // t_c: never claimed; reconciled three times.
            ("t_c", "reconciled"),
            ("t_c", "status"),
            ("t_c", "reconciled"),
            ("t_c", "reconciled"),
            // t_e: timed out, then completed on a later run: nothing.
            ("t_e", "claimed"),
            ("t_e", "timed_out"),
            ("t_e", "claimed"),
            ("t_e", "completed"),
            // t_f: crashed, then gave up: both since the claim, gave_up is current.
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
        let mut stmt = db.prepare(&since_completion_sql(true)).unwrap();
        let rows: Vec<RawEvent> = stmt
            .query_map([], |r| {
                Ok(RawEvent {
                    task_id: r.get(0)?,
                    id: r.get(1)?,
                    kind: r.get(2)?,
                    created_at: r.get(3)?,
                    payload: r.get(4)?,
                })
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(
            rows.iter()
                .all(|r| r.kind.as_deref() != Some("claimed") || r.payload.is_none()),
            "payloads of resets are not read"
        );
        let kept = per_task(rows, str::to_string);
        let summary = |t: &str| {
            let e = &kept[t];
            (
                e.current.as_ref().map(|c| (c.kind, c.count)),
                e.earlier_failure.as_ref().map(|(f, by)| (f.kind, *by)),
            )
        };
        assert_eq!(
            summary("t_a"),
            (None, Some((WorkerKind::Crashed, Some(TakenOver::Retried))))
        );
        assert_eq!(summary("t_b"), (Some((WorkerKind::Reclaimed, 1)), None));
        assert_eq!(summary("t_c"), (Some((WorkerKind::Reconciled, 3)), None));
        assert!(!kept.contains_key("t_e"), "{:?}", kept.get("t_e"));
        assert_eq!(summary("t_f"), (Some((WorkerKind::GaveUp, 1)), None));
    }

    #[test]
    fn done_and_archived_are_terminal() {
        assert!(is_terminal("done") && is_terminal("archived"));
        assert!(!is_terminal("blocked") && !is_terminal("ready"));
    }
}

//! One card: a task row, the worker event that applies to it, and the host boundary, turned
//! into what the Tasks panel shows (conditions in words, a band).
//!
//! Conditions, in this order: the applicable worker event ([`super::events`]), the block
//! (`blocked` is amber and names its kind), and the host boundary ([`super::dispatch`]: an
//! assignee this host can never claim is red). Done and archived cards carry none of the first
//! and last: the work is over. The band is the worst of the conditions; none is green.

use chrono::{DateTime, Utc};
use fleetdash_model::{Band, Card};

use super::dispatch::HostBoundary;
use super::events;
use super::read::{BoardRead, TaskRow};

pub fn build(
    board: &str,
    row: TaskRow,
    read: &BoardRead,
    boundary: &HostBoundary,
    now: DateTime<Utc>,
) -> Card {
    let now_s = now.timestamp();
    let terminal = events::is_terminal(&row.status);
    let mut conditions = Vec::new();
    let mut band = Band::Green;
    let mut add = |text: String, b: Band| {
        conditions.push(text);
        band = band.max(b);
    };
    if !terminal && let Some(event) = read.worker_events.get(&row.id) {
        let (text, b) = events::condition(event);
        add(text, b);
    }
    let blocked = row.status == "blocked";
    if blocked {
        let text = match &row.block_kind {
            Some(kind) => format!("blocked: {kind}"),
            None => "blocked (no kind given)".to_string(),
        };
        add(text, Band::Amber);
    }
    if !terminal
        && let Some(assignee) = &row.assignee
        && let Some(text) = boundary.condition(assignee)
    {
        add(text, Band::Red);
    }
    let latest_activity_at = [
        row.started_at,
        row.completed_at,
        row.last_heartbeat_at,
        read.newest_event_at.get(&row.id).copied(),
    ]
    .into_iter()
    .flatten()
    .max()
    .and_then(|s| DateTime::from_timestamp(s, 0));
    let age_s = row
        .created_at
        .map_or(0, |c| u64::try_from(now_s.saturating_sub(c)).unwrap_or(0));
    Card {
        board: board.to_string(),
        id: row.id,
        title: row.title,
        status: row.status,
        assignee: row.assignee,
        priority: row.priority,
        age_s,
        // Hermes keeps block_kind across an unblock (to spot loops); it only means something
        // while the card is blocked.
        block_kind: if blocked { row.block_kind } else { None },
        latest_activity_at,
        conditions,
        band,
        checked_at: now,
        stale: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::board::dispatch::parse;
    use crate::collect::board::events::{Numbers, WorkerEvent, WorkerKind};

    const NOW: i64 = 1_800_000_000;

    fn row(status: &str, assignee: Option<&str>) -> TaskRow {
        TaskRow {
            id: "t_0000abcd".into(),
            title: "Title".into(),
            status: status.into(),
            assignee: assignee.map(str::to_string),
            priority: Some(1),
            created_at: Some(NOW - 3600),
            started_at: Some(NOW - 1800),
            completed_at: None,
            last_heartbeat_at: Some(NOW - 900),
            block_kind: Some("needs_input".into()),
        }
    }

    fn boundary(yaml: &str) -> HostBoundary {
        HostBoundary {
            dispatchable: parse(yaml).unwrap(),
            warning: None,
        }
    }

    fn now() -> DateTime<Utc> {
        DateTime::from_timestamp(NOW, 0).unwrap()
    }

    fn with_event(kind: WorkerKind) -> BoardRead {
        let mut read = BoardRead::default();
        read.newest_event_at.insert("t_0000abcd".into(), NOW - 60);
        read.worker_events.insert(
            "t_0000abcd".into(),
            WorkerEvent {
                kind,
                event_id: 9,
                created_at: Some(NOW - 60),
                count: 1,
                numbers: Numbers::default(),
            },
        );
        read
    }

    #[test]
    fn a_quiet_card_is_green_with_its_age_and_activity() {
        let c = build(
            "lab",
            row("running", Some("min")),
            &BoardRead::default(),
            &HostBoundary::unchecked(),
            now(),
        );
        assert_eq!(c.band, Band::Green);
        assert!(c.conditions.is_empty());
        assert_eq!(c.age_s, 3600);
        assert_eq!(c.block_kind, None, "block_kind only while blocked");
        assert_eq!(c.latest_activity_at.unwrap().timestamp(), NOW - 900);
    }

    #[test]
    fn the_newest_event_counts_toward_latest_activity() {
        let c = build(
            "lab",
            row("ready", None),
            &with_event(WorkerKind::Reclaimed),
            &HostBoundary::unchecked(),
            now(),
        );
        assert_eq!(c.latest_activity_at.unwrap().timestamp(), NOW - 60);
        assert_eq!(c.band, Band::Amber);
        assert!(
            c.conditions[0].starts_with("reclaimed: "),
            "{:?}",
            c.conditions
        );
    }

    #[test]
    fn blocked_is_amber_with_its_kind_and_a_worker_failure_is_red() {
        let c = build(
            "lab",
            row("blocked", Some("min")),
            &with_event(WorkerKind::GaveUp),
            &HostBoundary::unchecked(),
            now(),
        );
        assert_eq!(c.band, Band::Red);
        assert_eq!(c.block_kind.as_deref(), Some("needs_input"));
        assert!(c.conditions[0].starts_with("gave_up: "));
        assert_eq!(c.conditions[1], "blocked: needs_input");

        let mut r = row("blocked", Some("min"));
        r.block_kind = None;
        let c = build(
            "lab",
            r,
            &BoardRead::default(),
            &HostBoundary::unchecked(),
            now(),
        );
        assert_eq!(
            (c.band, c.conditions),
            (Band::Amber, vec!["blocked (no kind given)".to_string()])
        );
    }

    #[test]
    fn an_assignee_this_host_cannot_claim_is_red_unless_the_work_is_over() {
        let b = boundary("kanban:\n  dispatch_profiles: [echo, min, mira, nova, sol]\n");
        let c = build(
            "lab",
            row("ready", Some("tam")),
            &BoardRead::default(),
            &b,
            now(),
        );
        assert_eq!(c.band, Band::Red);
        assert_eq!(
            c.conditions,
            ["assignee tam cannot be claimed on this host (kanban.dispatch_profiles)"]
        );
        let c = build(
            "lab",
            row("ready", Some("min")),
            &BoardRead::default(),
            &b,
            now(),
        );
        assert_eq!(c.band, Band::Green);
        for status in ["done", "archived"] {
            let c = build(
                "lab",
                row(status, Some("tam")),
                &with_event(WorkerKind::Crashed),
                &b,
                now(),
            );
            assert_eq!(c.band, Band::Green, "{status}");
            assert!(c.conditions.is_empty(), "{status}");
        }
        // Unassigned cards are not a host-boundary matter.
        let c = build("lab", row("ready", None), &BoardRead::default(), &b, now());
        assert_eq!(c.band, Band::Green);
    }
}

//! One card: a task row, the worker event that applies to it, and the host boundary, turned
//! into what the Tasks panel shows (conditions in words, a band).
//!
//! Conditions, in this order: the worker events that apply ([`super::events`]: the current
//! one, then an earlier failure), the block (`blocked` is amber and names its kind), and the
//! host boundary ([`super::dispatch`]: an assignee this host can never claim is red). Done and
//! archived cards carry none of the first and last: the work is over. The band is the worst of
//! the conditions; none is green.
//!
//! The block kind is kept on the statuses where Hermes routes a block ([`BLOCK_KIND_STATUSES`]:
//! `dependency` waits in todo, a block loop goes to triage). On the others it is only Hermes'
//! memory for spotting unblock loops (it survives an unblock), and would mislead.

use chrono::{DateTime, Utc};
use fleetdash_model::{Band, Card};

use super::dispatch::HostBoundary;
use super::events;
use super::read::{BoardRead, TaskRow};

/// Statuses on which a card's `block_kind` says why it waits.
pub const BLOCK_KIND_STATUSES: [&str; 3] = ["blocked", "todo", "triage"];

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
    if !terminal && let Some(events) = read.worker_events.get(&row.id) {
        for (text, b) in events::conditions(events) {
            add(text, b);
        }
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
    let block_kind = if BLOCK_KIND_STATUSES.contains(&row.status.as_str()) {
        row.block_kind.clone()
    } else {
        None
    };
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
        block_kind,
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
    use crate::collect::board::events::{Facts, TaskEvents, WorkerEvent, WorkerKind};

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
            TaskEvents {
                current: Some(WorkerEvent {
                    kind,
                    event_id: 9,
                    created_at: Some(NOW - 60),
                    count: 1,
                    facts: Facts::default(),
                }),
                earlier_failure: None,
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
        assert_eq!(c.block_kind, None, "a running card's kind is loop memory");
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

    /// Was dropped outside `blocked`: a todo card waiting on a dependency showed nothing.
    #[test]
    fn the_block_kind_stays_where_hermes_routes_a_block() {
        for (status, kind, kept) in [
            ("todo", "dependency", true),
            ("triage", "needs_input", true),
            ("blocked", "capability", true),
            ("ready", "needs_input", false),
            ("running", "dependency", false),
            ("done", "transient", false),
        ] {
            let mut r = row(status, Some("min"));
            r.block_kind = Some(kind.into());
            let c = build(
                "lab",
                r,
                &BoardRead::default(),
                &HostBoundary::unchecked(),
                now(),
            );
            assert_eq!(c.block_kind.is_some(), kept, "{status} {kind}");
            // Only `blocked` makes it a condition: a dependency wait is Hermes' normal path.
            assert_eq!(c.band == Band::Amber, status == "blocked", "{status}");
        }
    }
}

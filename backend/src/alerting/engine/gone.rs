//! Elements a pass no longer shows (a card moved to done and out of the capped listing, a
//! finished task, a removed agent, a removed host's checks): an open alert's element counts a
//! pass not red when what lists it was read whole ([`gone_reads_green`]), so its alert closes
//! with a Recovered ([`NO_LONGER_LISTED`]) instead of staying open until forgotten. Pure, like
//! the pass that asks ([`super::pass::pass`]).
//!
//! Some elements are not gone but taken away, and the snapshot says so ([`ended`]): a
//! work-queue task the operator dismissed, or a finished one the rules' retention retired. Its
//! alert ends at once, in those words ([`DISMISSED`], [`RETIRED`]), since nothing recovered
//! and nothing is unknown.

use std::collections::BTreeMap;

use fleetdash_model::alerts::key;
use fleetdash_model::{Band, Snapshot};

use super::roots;
use super::state::Track;
use crate::deps::Deps;
use crate::write::transitions::Elements;

/// The reason a Recovered carries when its element is gone rather than green.
pub const NO_LONGER_LISTED: &str = "no longer listed";

/// The reason a Recovered carries when the operator dismissed its task
/// (`fleetdash task dismiss`); the headline says it instead of "recovered".
pub const DISMISSED: &str = "dismissed by the operator";

/// The reason a Recovered carries when the rules' retention took its finished task off the
/// dashboard (`queue.finished_kept_seconds`, `queue.finished_kept_max`); the headline says it
/// instead of "recovered".
pub const RETIRED: &str = "retired: finished, past the queue's retention";

/// The elements a snapshot says were taken away, by key, with the words their alert ends with.
pub type Ended = BTreeMap<String, String>;

/// What `snap` says was taken away: the work-queue tasks the snapshot before it listed that it
/// leaves out as dismissed or retired (`tasks.queue_left_out.ended`).
pub fn ended(snap: &Snapshot) -> Ended {
    snap.tasks
        .queue_left_out
        .ended
        .iter()
        .map(|t| {
            let why = if t.how == crate::queue::judge::LeftOut::Dismissed.as_str() {
                DISMISSED
            } else {
                RETIRED
            };
            (key::queue_task(&t.id), why.to_string())
        })
        .collect()
}

/// Whether an element this pass does not show is known to be no longer failing: what lists it
/// was read whole and is fine. Each parent its key implies (a card's board, a host's check's
/// host, a task's agent, a top-level element's section) is shown, and nothing it depends on
/// (declared edges too, transitively) is down: red now, or its alert still open. A listing that left cards needing attention
/// out (`board:<name>/unlisted` not green) may be hiding it: unknown, not green.
pub fn gone_reads_green(
    key: &str,
    elements: &Elements,
    tracks: &BTreeMap<String, Track>,
    deps: &Deps,
) -> bool {
    // A parent gone too (a host removed from the config, with its checks) vouches for its
    // children when its own lister does.
    let implied = Deps::implied_parents(key);
    if implied.is_empty()
        || !implied
            .iter()
            .all(|p| elements.contains_key(p) || gone_reads_green(p, elements, tracks, deps))
    {
        return false;
    }
    if deps
        .ancestors(key)
        .iter()
        .any(|p| roots::is_down(p, elements, tracks))
    {
        return false;
    }
    let left_out = key
        .split_once('/')
        .and_then(|(under, _)| under.strip_prefix("board:"))
        .and_then(|board| elements.get(&key::unlisted_cards(board)));
    left_out.is_none_or(|e| e.band == Band::Green)
}

#[cfg(test)]
mod tests {
    use super::super::bench::{Bench, el, fired};
    use super::*;
    use crate::alerting::AlertEvent;
    use chrono::Duration;
    use fleetdash_model::alerts::Element;

    /// A board read whole: its element, its section, and nothing needing attention left out.
    fn board_read(unlisted: Band) -> Vec<(&'static str, Element)> {
        vec![
            (
                "section:tasks.board",
                el("section", "tasks.board", Band::Green),
            ),
            ("board:lab", el("board", "lab", Band::Green)),
            (
                "board:lab/unlisted",
                el("card", "cards of lab not listed", unlisted),
            ),
        ]
    }

    fn with_card(
        mut els: Vec<(&'static str, Element)>,
        band: Band,
    ) -> Vec<(&'static str, Element)> {
        els.push(("board:lab/card:c1", el("card", "rotate the keys", band)));
        els
    }

    /// Was: a card that recovered was listed once more, then left the capped listing; with no
    /// other writes between board reads it had one green pass, short of `recover_after`, and
    /// its alert stayed open (no Recovered) until forgotten a week later.
    #[test]
    fn a_card_gone_from_a_board_read_whole_recovers_as_no_longer_listed() {
        let mut b = Bench::new();
        assert_eq!(
            b.th.recover_after, 2,
            "one green listing, then one pass gone"
        );
        let red_from = b.now + Duration::minutes(1);
        for _ in 1..b.th.fail_after {
            assert!(
                b.next(&with_card(board_read(Band::Green), Band::Red))
                    .is_empty()
            );
        }
        assert_eq!(
            b.next(&with_card(board_read(Band::Green), Band::Red)),
            fired("board:lab/card:c1", AlertEvent::Firing)
        );
        // Done: listed once more, green.
        assert!(
            b.next(&with_card(board_read(Band::Green), Band::Green))
                .is_empty()
        );
        let green_at = b.now;
        // Then out of the listing.
        b.now += Duration::minutes(1);
        let alerts = b.full(&board_read(Band::Green));
        assert_eq!(alerts.len(), 1, "{alerts:#?}");
        let r = &alerts[0];
        assert_eq!(
            (r.key.as_str(), r.event, r.kind.as_str(), r.name.as_str()),
            (
                "board:lab/card:c1",
                AlertEvent::Recovered,
                "card",
                "rotate the keys"
            )
        );
        assert_eq!(r.band, Band::Green);
        assert_eq!(r.reason.as_deref(), Some(NO_LONGER_LISTED));
        assert_eq!(r.since, green_at, "green since its last listing");
        assert_eq!(
            r.id,
            format!("board:lab/card:c1:recovered:{}", red_from.timestamp()),
            "the same dedupe key as a Recovered of a shown element"
        );
        assert!(
            r.headline()
                .ends_with("card rotate the keys recovered (no longer listed)"),
            "{}",
            r.headline()
        );
        assert!(b.state.tracks["board:lab/card:c1"].open.is_none());
        // Closed once: later passes without it say nothing.
        assert!(b.next(&board_read(Band::Green)).is_empty());
    }

    /// Gone from a listing that cannot vouch for it, an open alert stays open and its passes
    /// count nothing: the board failed (red), its section is stale, or the cap left cards
    /// needing attention out (it may be one of them). Once the board is read whole again, it
    /// counts green. (A board gone from a fresh section was removed from the config: its cards
    /// recover with it, see `a_check_of_a_host_removed_from_the_config_recovers_with_it`.)
    #[test]
    fn a_card_gone_from_a_listing_that_cannot_vouch_for_it_keeps_its_alert_open() {
        let mut b = Bench::new();
        for _ in 0..b.th.fail_after {
            b.next(&with_card(board_read(Band::Green), Band::Red));
        }
        assert!(b.state.tracks["board:lab/card:c1"].open.is_some());
        let mut board_red = board_read(Band::Green);
        board_red[1].1 = el("board", "lab", Band::Red);
        let mut section_stale = board_read(Band::Green);
        section_stale[0].1 = el("section", "tasks.board", Band::Red);
        let cannot_vouch = [
            board_red,
            section_stale,
            board_read(Band::Red),
            board_read(Band::Amber),
        ];
        for els in &cannot_vouch {
            for _ in 0..3 {
                let alerts = b.next(els);
                assert!(
                    alerts.iter().all(|(key, _)| key != "board:lab/card:c1"),
                    "{els:?}: {alerts:#?}"
                );
            }
            let t = &b.state.tracks["board:lab/card:c1"];
            assert!(t.open.is_some() && t.clear_passes == 0, "{els:?}: {t:?}");
        }
        // The board's own alerts (it was red) must close before it vouches for its cards.
        let mut closed = Vec::new();
        for _ in 0..b.th.recover_after * 2 + 1 {
            closed.extend(b.next(&board_read(Band::Green)));
        }
        assert!(
            closed.contains(&("board:lab/card:c1".to_string(), AlertEvent::Recovered)),
            "{closed:?}"
        );
        assert!(b.state.tracks["board:lab/card:c1"].open.is_none());
    }

    /// A state file written before tracks kept their element's kind and name still loads; a
    /// Recovered for an element gone since says its key.
    #[test]
    fn a_track_without_kind_and_name_loads_and_recovers_by_its_key() {
        let mut b = Bench::new();
        for _ in 0..b.th.fail_after {
            b.next(&with_card(board_read(Band::Green), Band::Red));
        }
        let mut json = serde_json::to_value(&b.state).unwrap();
        let track = &mut json["tracks"]["board:lab/card:c1"];
        track.as_object_mut().unwrap().remove("kind");
        track.as_object_mut().unwrap().remove("name");
        b.state = serde_json::from_value(json).unwrap();
        let mut got = Vec::new();
        for _ in 0..b.th.recover_after {
            got.extend(b.full(&board_read(Band::Green)));
            b.now += Duration::minutes(1);
        }
        assert_eq!(got.len(), 1, "{got:#?}");
        assert_eq!(got[0].name, "board:lab/card:c1");
        assert_eq!(got[0].event, AlertEvent::Recovered);
    }

    // Found in review: it failed before its fix.

    /// Was: an element under a parent that leaves the snapshot (a host, board or agent removed
    /// from the config) kept its open alert, forgotten silently after the rules'
    /// `alert_memory.forget_unseen_seconds`. Now a parent gone from a section read whole vouches
    /// for its children: they recover.
    #[test]
    fn a_check_of_a_host_removed_from_the_config_recovers_with_it() {
        let mut b = Bench::new();
        let with_host = [
            ("section:systems", el("section", "systems", Band::Green)),
            ("host:lab", el("host", "lab", Band::Green)),
            (
                "host:lab/service:nginx",
                el("service", "nginx on lab", Band::Red),
            ),
        ];
        for _ in 0..b.th.fail_after {
            b.next(&with_host);
        }
        assert!(b.state.tracks["host:lab/service:nginx"].open.is_some());
        // The operator removes host lab from the config.
        let without = [("section:systems", el("section", "systems", Band::Green))];
        let mut all = Vec::new();
        for _ in 0..10 {
            all.extend(b.next(&without));
        }
        let later = b.now + b.th.forget_unseen;
        all.extend(b.at(later, &without));
        assert_eq!(
            all,
            [("host:lab/service:nginx".to_string(), AlertEvent::Recovered)],
            "tracks: {:?}",
            b.state.tracks.keys().collect::<Vec<_>>()
        );
    }

    /// The shipped rules file: the retention and the alert thresholds are the fleet's.
    fn queue_rules() -> crate::config::Rules {
        crate::config::Rules::parse(
            std::path::Path::new("config/rules.yaml"),
            include_str!("../../../../config/rules.yaml"),
        )
        .unwrap()
    }

    /// A work queue with one FAILED task, read as `fleetdash run` reads it: the rows through the
    /// queue's collector (retention included), into the snapshot, and the engine's pass over it.
    struct Queue {
        b: Bench,
        snap: fleetdash_model::Snapshot,
        row: crate::queue::TaskRow,
    }

    impl Queue {
        fn new() -> Queue {
            use crate::queue::{Provenance, TaskRow, WireState};
            let b = Bench::new();
            let finished = b.now;
            let row = TaskRow {
                id: "q_1".into(),
                title: "rotate the LAB keys".into(),
                owner: Some("sol".into()),
                tagged: vec![],
                created_by: "operator".into(),
                created_at: finished - Duration::hours(1),
                deadline: None,
                state: WireState::Failed,
                ack: None,
                yielded: vec![],
                blocked_on: None,
                last_report_at: Some(finished),
                status_message: None,
                worker_died: false,
                provenance: Provenance::default(),
                finished_at: Some(finished),
                dismissed_at: None,
            };
            let snap = fleetdash_model::Snapshot::empty(b.now, crate::config::fleet_rules());
            Queue { b, snap, row }
        }

        /// One read of the queue `minutes` later, the snapshot written, the engine's pass.
        fn read(&mut self, minutes: i64) -> Vec<crate::alerting::Alert> {
            use crate::collect::queue::rows;
            use crate::collect::{SectionData, SectionName};
            let rules = queue_rules();
            self.b.now += Duration::minutes(minutes);
            let now = self.b.now;
            let view = crate::queue::rows::QueueView {
                tasks: vec![Ok(self.row.clone())],
                agents: vec![],
                not_created: false,
            };
            let part = rows(
                Ok(&view),
                &crate::queue::QueueRules::of(&rules),
                &crate::queue::Retention::of(&rules),
                &crate::clock::Clocked::wall_only(now),
            );
            let update = crate::write::history::tests::update(SectionData::Queue(part), now);
            crate::snapshot::apply(&mut self.snap, update);
            crate::snapshot::finalize(
                &mut self.snap,
                &[SectionName::Queue],
                rules.view(),
                &crate::clock::Clocked::wall_only(now),
            );
            self.b.write(&self.snap)
        }
    }

    /// Was: a FAILED task reminded every hour for ever; once it left status.json its alert
    /// could only close as "recovered (no longer listed)". Dismissed by the operator, its alert
    /// ends at the next read, said as dismissed; nothing follows.
    #[test]
    fn a_dismissed_tasks_alert_ends_at_once_said_as_dismissed() {
        let mut q = Queue::new();
        let mut got = Vec::new();
        for _ in 0..q.b.th.fail_after {
            got.extend(q.read(1));
        }
        assert_eq!(got.len(), 1, "{got:#?}");
        assert_eq!(got[0].event, AlertEvent::Firing);
        let fired_since = got[0].since;
        // Still failed an hour on: a reminder.
        let every = q.b.th.remind_every.num_minutes();
        let reminded = q.read(every);
        assert_eq!(reminded.len(), 1, "{reminded:#?}");
        assert_eq!(reminded[0].event, AlertEvent::Reminder);

        q.row.dismissed_at = Some(q.b.now);
        let ended = q.read(1);
        assert_eq!(q.snap.tasks.queue_left_out.dismissed, 1);
        assert_eq!(ended.len(), 1, "{ended:#?}");
        let a = &ended[0];
        assert_eq!(
            (a.key.as_str(), a.event, a.band),
            ("queue:q_1", AlertEvent::Recovered, Band::Green)
        );
        assert_eq!(a.reason.as_deref(), Some(DISMISSED));
        assert_eq!(
            a.headline(),
            "✔ ok · task rotate the LAB keys dismissed by the operator"
        );
        assert!(!a.headline().contains("recovered"), "{}", a.headline());
        assert_eq!(
            a.id,
            format!("queue:q_1:recovered:{}", fired_since.timestamp()),
            "the dedupe key of the alert's one ending"
        );
        // Later reads (and a day of them) say nothing more: no reminder, no "no longer listed".
        for _ in 0..3 {
            assert!(q.read(every).is_empty());
        }
        assert!(q.snap.tasks.queue_left_out.ended.is_empty(), "said once");
    }

    /// A failed task past `queue.finished_kept_seconds` leaves status.json; its alert ends then,
    /// said as retired.
    #[test]
    fn a_retired_tasks_alert_ends_said_as_retired() {
        let mut q = Queue::new();
        let mut got = Vec::new();
        for _ in 0..q.b.th.fail_after {
            got.extend(q.read(1));
        }
        assert_eq!(got.len(), 1, "{got:#?}");
        let kept = crate::queue::Retention::of(&queue_rules()).finished_kept_s;
        let kept_min = i64::try_from(kept).unwrap() / 60;
        let mut ended = Vec::new();
        let mut reads = 0;
        while q.snap.tasks.queue_left_out.finished == 0 {
            ended = q.read(kept_min / 4);
            reads += 1;
            assert!(reads < 10, "never retired");
        }
        assert!(q.snap.tasks.queue.value().unwrap().is_empty());
        let ended: Vec<_> = ended
            .into_iter()
            .filter(|a| a.event == AlertEvent::Recovered)
            .collect();
        assert_eq!(ended.len(), 1, "{ended:#?}");
        assert_eq!(ended[0].reason.as_deref(), Some(RETIRED));
        assert_eq!(
            ended[0].headline(),
            format!("✔ ok · task rotate the LAB keys {RETIRED}")
        );
        assert!(q.read(60).is_empty());
    }
}

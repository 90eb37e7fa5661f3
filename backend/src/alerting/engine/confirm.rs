//! Which reds wait for their confirmation (issue 43): after a pass, the sections a quick
//! re-read would confirm a red in. The watchdog reads such a section again
//! `reprobe.spacing_seconds` after the reading, instead of at its next pass
//! (`watchdog::reprobe`), so that `fail_after` consecutive red readings come within seconds:
//! one lost probe is green again at the re-read and pages nobody, and a death reaches the phone
//! within about one cadence.
//!
//! Pure over the pass's state and elements, like the pass itself.

use std::collections::BTreeSet;

use fleetdash_model::Band;

use super::pass::PassContext;
use super::roots;
use super::state::State;
use crate::deps::Deps;
use crate::write::transitions::Elements;

/// The sections to read again soon, after a pass over `elements` left `state`: each holds an
/// element that is red, counted red at least once and fewer than `fail_after` times in a row,
/// with no alert open and nothing holding it back (a silence, a maintenance window, a root cause
/// down: a re-read would fire nothing), and that a re-read of its section probes again
/// ([`reread_by`]). A red that fired, or that is held, asks for none: a fleet with hung agents
/// costs no re-probe once they have paged.
pub fn unconfirmed(state: &State, elements: &Elements, cx: &PassContext) -> BTreeSet<String> {
    let fail_after = cx.thresholds.fail_after;
    let held = roots::held_back(elements, &state.tracks, cx.deps);
    elements
        .iter()
        .filter(|(_, el)| el.band == Band::Red)
        .filter(|(key, _)| {
            state
                .tracks
                .get(*key)
                .is_some_and(|t| t.open.is_none() && (1..fail_after).contains(&t.red_passes))
        })
        .filter(|(key, el)| !held[key] && !(cx.silenced)(key, el))
        .filter_map(|(key, _)| reread_by(key))
        .collect()
}

/// The reading whose renewal probes the element `key` again: the section it is collected in,
/// or the tunnels' own for a host's tunnel ([`Deps::section_of`]: tunnels are probed by a
/// collector of their own, and counted on its reading). None for a section's own element (it is
/// counted at every write).
pub fn reread_by(key: &str) -> Option<String> {
    Deps::section_of(key)
}

#[cfg(test)]
mod tests {
    use super::super::bench::{Bench, el, t0};
    use super::*;
    use crate::alerting::AlertEvent;
    use crate::collect::SectionName;
    use chrono::Duration;
    use fleetdash_model::alerts::Element;

    /// The readings of `list`'s sections, as the engine keys them.
    fn parts(list: &[SectionName]) -> BTreeSet<String> {
        list.iter()
            .map(|s| fleetdash_model::alerts::key::section(s.as_str()))
            .collect()
    }

    /// A red counted once waits for its section's re-read; counted `fail_after` times it
    /// fires, and waits for nothing more (however long it stays red). Green or amber waits for
    /// nothing.
    #[test]
    fn a_red_waits_for_its_section_until_it_fires_and_green_or_amber_never_does() {
        let mut b = Bench::new();
        assert_eq!(b.th.fail_after, 2, "the shipped rules");
        let red = [("agent:min", el("agent", "min", Band::Red))];
        let green = [("agent:min", el("agent", "min", Band::Green))];
        let amber = [("agent:min", el("agent", "min", Band::Amber))];
        assert!(b.next(&green).is_empty());
        assert_eq!(b.unconfirmed(&green), parts(&[]));
        assert!(b.next(&amber).is_empty());
        assert_eq!(b.unconfirmed(&amber), parts(&[]));
        assert!(b.next(&red).is_empty());
        assert_eq!(b.unconfirmed(&red), parts(&[SectionName::Agents]));
        assert_eq!(b.next(&red), [("agent:min".into(), AlertEvent::Firing)]);
        assert_eq!(b.unconfirmed(&red), parts(&[]));
        assert!(b.next(&red).is_empty());
        assert_eq!(
            b.unconfirmed(&red),
            parts(&[]),
            "an open alert asks for nothing"
        );
    }

    /// Exactly the reds counted 1 to fail_after - 1 times wait: under fail_after 3, after one
    /// and after two red passes, not after three (it fired); under fail_after 1, never (every
    /// red fires at its first reading).
    #[test]
    fn waiting_ends_exactly_at_fail_after() {
        let red = [("host:lab", el("host", "lab", Band::Red))];
        let mut rules = crate::config::fleet_alert_rules();
        rules.fail_after.count = 3;
        let mut b = Bench::new();
        b.th = super::super::pass::Thresholds::from(&rules);
        for counted in 1..=2 {
            assert!(b.next(&red).is_empty());
            assert_eq!(b.state.tracks["host:lab"].red_passes, counted);
            assert_eq!(b.unconfirmed(&red), parts(&[SectionName::Systems]));
        }
        assert_eq!(b.next(&red), [("host:lab".into(), AlertEvent::Firing)]);
        assert_eq!(b.unconfirmed(&red), parts(&[]));

        rules.fail_after.count = 1;
        let mut b = Bench::new();
        b.th = super::super::pass::Thresholds::from(&rules);
        assert_eq!(b.next(&red), [("host:lab".into(), AlertEvent::Firing)]);
        assert_eq!(b.unconfirmed(&red), parts(&[]));
    }

    /// A red the pass did not count (its section was not read anew: another section's write)
    /// has no reading to confirm yet.
    #[test]
    fn a_red_not_counted_yet_waits_for_nothing() {
        let mut b = Bench::new();
        b.readings = [("section:agents".to_string(), t0())].into();
        let green = [("agent:min", el("agent", "min", Band::Green))];
        let red = [("agent:min", el("agent", "min", Band::Red))];
        b.next(&green);
        // The same reading of the agents: the red is not counted.
        b.next(&red);
        assert_eq!(b.state.tracks["agent:min"].red_passes, 0);
        assert_eq!(b.unconfirmed(&red), parts(&[]));
        b.readings = [("section:agents".to_string(), t0() + Duration::minutes(2))].into();
        b.next(&red);
        assert_eq!(b.unconfirmed(&red), parts(&[SectionName::Agents]));
    }

    /// A red held back (silenced, or under a root cause that is down) would fire nothing at a
    /// re-read: it asks for none; its root, red and not confirmed, asks for its own section.
    #[test]
    fn a_held_red_waits_for_nothing_and_its_root_for_its_own_section() {
        let mut b = Bench::new();
        b.deps.add("agent:min", "host:lab");
        let both = [
            ("agent:min", el("agent", "min", Band::Red)),
            ("host:lab", el("host", "lab", Band::Red)),
        ];
        b.next(&both);
        assert_eq!(b.unconfirmed(&both), parts(&[SectionName::Systems]));
        b.silenced = vec!["host:lab".into()];
        assert_eq!(b.unconfirmed(&both), parts(&[]), "the root silenced");
        let agent = [("agent:min", el("agent", "min", Band::Red))];
        let mut b = Bench::new();
        b.silenced = vec!["agent:min".into()];
        b.next(&agent);
        assert_eq!(b.unconfirmed(&agent), parts(&[]), "silenced");
    }

    /// Each kind of element waits for the reading that probes it again: its section's, a host's
    /// tunnel the tunnels' own (its collector probes it, issue 43: a tunnel and the agents under
    /// it are confirmed on the tunnels' cadence, not the hosts'); a section's own element none.
    #[test]
    fn each_red_waits_for_the_reading_that_probes_it_and_a_tunnel_for_the_tunnels() {
        let cases: [(&str, Element, Option<&str>); 9] = [
            (
                "agent:min",
                el("agent", "min", Band::Red),
                Some("section:agents"),
            ),
            (
                "fleetdash:reach",
                el("fleetdash", "cannot reach the fleet", Band::Red),
                Some("section:agents"),
            ),
            (
                "host:lab",
                el("host", "lab", Band::Red),
                Some("section:systems"),
            ),
            (
                "host:lab/service:nginx",
                el("service", "nginx on lab", Band::Red),
                Some("section:systems"),
            ),
            (
                "host:lab/tunnel:heart",
                el("tunnel", "heart on lab", Band::Red),
                Some("section:tunnels"),
            ),
            (
                "backups",
                el("backups", "backups", Band::Red),
                Some("section:backups"),
            ),
            (
                "queue:t1",
                el("task", "t1", Band::Red),
                Some("section:tasks.queue"),
            ),
            (
                "board:ops/card:c1",
                el("card", "c1", Band::Red),
                Some("section:tasks.board"),
            ),
            ("section:agents", el("section", "agents", Band::Red), None),
        ];
        for (key, element, part) in cases {
            let mut b = Bench::new();
            let red = [(key, element)];
            b.next(&red);
            assert_eq!(
                b.unconfirmed(&red),
                part.into_iter().map(String::from).collect::<BTreeSet<_>>(),
                "{key}"
            );
        }
    }
}

//! Root causes in a pass: an element whose root cause ([`Deps`]) is down (red now, or its alert
//! still open) raises nothing of its own, and the root's alert names what it takes down (its
//! Firing, and its Recovered again: the dependents' recoveries are said by it). When the root is
//! back and the dependent is still red, the dependent fires as anything else would. Two
//! elements that depend on each other (a cycle in `depends_on`) hold neither back. Pure, like
//! the pass that asks ([`super::pass::pass`]).

use std::collections::BTreeMap;

use fleetdash_model::Band;

use super::state::Track;
use crate::deps::Deps;
use crate::write::transitions::Elements;

/// Whether `key` is down for what depends on it: red now, or its alert still open (a root that
/// is recovering still holds back dependents a pass behind it).
pub(super) fn is_down(key: &str, elements: &Elements, tracks: &BTreeMap<String, Track>) -> bool {
    elements.get(key).is_some_and(|e| e.band == Band::Red)
        || tracks.get(key).is_some_and(|t| t.open.is_some())
}

/// Whether each element is held back by a root cause down. Two elements that depend on each
/// other (a cycle someone wrote in `depends_on`) hold neither back: each fires as itself.
pub(super) fn held_back<'a>(
    elements: &'a Elements,
    tracks: &BTreeMap<String, Track>,
    deps: &Deps,
) -> BTreeMap<&'a String, bool> {
    elements
        .keys()
        .map(|k| {
            let held = deps
                .ancestors(k)
                .iter()
                .any(|a| is_down(a, elements, tracks) && !deps.ancestors(a).contains(k));
            (k, held)
        })
        .collect()
}

/// What `root` takes down: each element under it that is red, as "kind name" (an amber one is
/// answering, only late or warned: not taken down).
pub(super) fn takes_down(root: &str, elements: &Elements, deps: &Deps) -> Vec<String> {
    elements
        .iter()
        .filter(|(k, e)| e.band == Band::Red && deps.ancestors(k).contains(root))
        .map(|(_, e)| format!("{} {}", e.kind, e.name))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::bench::{Bench, el, run};
    use crate::alerting::AlertEvent;
    use crate::write::transitions;
    use chrono::{DateTime, Duration, Utc};
    use fleetdash_model::alerts::Element;
    use fleetdash_model::{Band, Snapshot};

    /// host lab -> tunnel lab-heart (on lab) -> 5 agents behind it.
    fn chain(host: Band, tunnel: Band, agents: Band) -> Vec<(String, Element)> {
        let mut out = vec![
            ("host:lab".to_string(), el("host", "lab", host)),
            (
                "host:lab/tunnel:lab-heart".to_string(),
                el("tunnel", "lab-heart on lab", tunnel),
            ),
        ];
        for i in 1..=5 {
            out.push((format!("agent:a{i}"), el("agent", &format!("a{i}"), agents)));
        }
        out
    }

    fn chain_bench() -> Bench {
        let mut b = Bench::new();
        for i in 1..=5 {
            b.deps
                .add(&format!("agent:a{i}"), "host:lab/tunnel:lab-heart");
        }
        b
    }

    #[test]
    fn a_host_down_suppresses_its_tunnel_and_the_agents_behind_it_and_names_them() {
        let mut b = chain_bench();
        let down = chain(Band::Red, Band::Red, Band::Red);
        let mut all = Vec::new();
        for _ in 0..b.th.fail_after + 3 {
            all.extend(run(&mut b, &down));
        }
        assert_eq!(all.len(), 1, "{all:#?}");
        let root = &all[0];
        assert_eq!(
            (root.key.as_str(), root.event),
            ("host:lab", AlertEvent::Firing)
        );
        assert_eq!(root.takes_down.len(), 6, "{:?}", root.takes_down);
        assert!(
            root.takes_down
                .contains(&"tunnel lab-heart on lab".to_string())
        );
        assert!(root.takes_down.contains(&"agent a3".to_string()));
        assert!(
            root.headline().contains("(6 unreachable)"),
            "{}",
            root.headline()
        );
        // Everything back: the root's recovery goes out, naming them; the dependents that never
        // fired send none.
        let up = chain(Band::Green, Band::Green, Band::Green);
        let mut back = Vec::new();
        for _ in 0..b.th.recover_after + 2 {
            back.extend(run(&mut b, &up));
        }
        assert_eq!(back.len(), 1, "{back:#?}");
        assert_eq!(
            (back[0].key.as_str(), back[0].event),
            ("host:lab", AlertEvent::Recovered)
        );
        assert_eq!(back[0].takes_down.len(), 6);
    }

    /// Issue 24: ten of eleven agents down at once is fleetdash's blind spot. Its root alert is
    /// the only one, naming the ten; when it clears, the two agents still red fire on their own.
    #[test]
    fn the_blind_spot_holds_the_fleet_under_it_and_what_stays_red_fires_after() {
        use fleetdash_model::alerts::key::BLIND_SPOT;
        let mut b = Bench::new();
        for i in 1..=11 {
            b.deps.add(&format!("agent:a{i}"), BLIND_SPOT);
        }
        let fleet = |blind: bool, red: usize| -> Vec<(String, Element)> {
            let band = |r: bool| if r { Band::Red } else { Band::Green };
            let mut out = vec![(
                BLIND_SPOT.to_string(),
                el("fleetdash", "cannot reach the fleet", band(blind)),
            )];
            for i in 1..=11 {
                out.push((
                    format!("agent:a{i}"),
                    el("agent", &format!("a{i}"), band(i <= red)),
                ));
            }
            out
        };
        let mut all = Vec::new();
        for _ in 0..b.th.fail_after + 3 {
            all.extend(run(&mut b, &fleet(true, 10)));
        }
        assert_eq!(all.len(), 1, "{all:#?}");
        assert_eq!(
            (all[0].key.as_str(), all[0].event, all[0].takes_down.len()),
            (BLIND_SPOT, AlertEvent::Firing, 10)
        );
        // The network is back; a1 and a2 are still down.
        let mut after = Vec::new();
        for _ in 0..b.th.fail_after.max(b.th.recover_after) + 2 {
            after.extend(run(&mut b, &fleet(false, 2)));
        }
        let mut said: Vec<(&str, AlertEvent)> =
            after.iter().map(|a| (a.key.as_str(), a.event)).collect();
        said.sort_by_key(|(k, _)| *k);
        assert_eq!(
            said,
            [
                ("agent:a1", AlertEvent::Firing),
                ("agent:a2", AlertEvent::Firing),
                (BLIND_SPOT, AlertEvent::Recovered),
            ]
        );
    }

    #[test]
    fn the_tunnel_down_alone_names_its_five_agents() {
        let mut b = chain_bench();
        let down = chain(Band::Green, Band::Red, Band::Red);
        let mut all = Vec::new();
        for _ in 0..b.th.fail_after {
            all.extend(run(&mut b, &down));
        }
        assert_eq!(all.len(), 1, "{all:#?}");
        assert_eq!(all[0].key, "host:lab/tunnel:lab-heart");
        assert_eq!(
            all[0].headline(),
            "✖ fail · tunnel lab-heart on lab: error: connection refused (5 unreachable)"
        );
    }

    #[test]
    fn a_dependent_red_while_its_root_is_green_fires_normally() {
        let mut b = chain_bench();
        let one = chain(Band::Green, Band::Green, Band::Green)
            .into_iter()
            .map(|(k, e)| {
                if k == "agent:a2" {
                    (k, el("agent", "a2", Band::Red))
                } else {
                    (k, e)
                }
            })
            .collect::<Vec<_>>();
        let mut all = Vec::new();
        for _ in 0..b.th.fail_after {
            all.extend(run(&mut b, &one));
        }
        assert_eq!(all.len(), 1);
        assert_eq!(
            (all[0].key.as_str(), all[0].event),
            ("agent:a2", AlertEvent::Firing)
        );
        assert!(all[0].takes_down.is_empty());
    }

    #[test]
    fn a_recovery_is_never_suppressed_and_a_dependent_still_red_after_its_root_fires() {
        let mut b = chain_bench();
        // a1 fails on its own first and fires.
        let mut a1_red = chain(Band::Green, Band::Green, Band::Green);
        a1_red[2].1 = el("agent", "a1", Band::Red);
        for _ in 0..b.th.fail_after {
            run(&mut b, &a1_red);
        }
        // Then the tunnel goes down; a1 comes back while the tunnel is still down: its
        // recovery goes out.
        let mut tunnel_down = chain(Band::Green, Band::Red, Band::Red);
        tunnel_down[2].1 = el("agent", "a1", Band::Green);
        let mut all = Vec::new();
        for _ in 0..b.th.fail_after.max(b.th.recover_after) {
            all.extend(run(&mut b, &tunnel_down));
        }
        let events: Vec<(&str, AlertEvent)> =
            all.iter().map(|a| (a.key.as_str(), a.event)).collect();
        assert!(
            events.contains(&("agent:a1", AlertEvent::Recovered)),
            "{events:?}"
        );
        assert!(
            events.contains(&("host:lab/tunnel:lab-heart", AlertEvent::Firing)),
            "{events:?}"
        );
        assert_eq!(events.len(), 2, "{events:?}");
        // The tunnel recovers, agent a4 stays red: the tunnel's Recovered, then a4 fires as
        // its own fault.
        let mut a4_red = chain(Band::Green, Band::Green, Band::Green);
        a4_red[5].1 = el("agent", "a4", Band::Red);
        let mut all = Vec::new();
        for _ in 0..b.th.recover_after + 1 {
            all.extend(run(&mut b, &a4_red));
        }
        let events: Vec<(&str, AlertEvent)> =
            all.iter().map(|a| (a.key.as_str(), a.event)).collect();
        assert_eq!(
            events,
            vec![
                ("host:lab/tunnel:lab-heart", AlertEvent::Recovered),
                ("agent:a4", AlertEvent::Firing)
            ]
        );
    }

    /// A section gone stale fires as its own element and speaks for what it collects: an agent
    /// red in it raises nothing while the section is down, and is named by the section's alert.
    /// Once the section is fresh again and the agent still red, the agent fires.
    #[test]
    fn a_stale_section_is_a_root_for_its_elements() {
        let mut b = Bench::new();
        let snap_at = |now: DateTime<Utc>, stale: bool| {
            let mut snap = Snapshot::empty(now, crate::config::fleet_rules());
            snap.agents = fleetdash_model::Probe::Value(vec![
                crate::write::history::tests::agent("a1", false, now),
                crate::write::history::tests::agent("a2", true, now),
            ]);
            snap.sections.agents = fleetdash_model::SectionMeta {
                configured: true,
                checked_at: Some(now - Duration::minutes(if stale { 30 } else { 0 })),
                duration_ms: Some(5),
                stale,
            };
            if stale {
                snap.stale_reasons = vec!["agents: 30 min old".into()];
            }
            snap
        };
        let mut all = Vec::new();
        for _ in 0..b.th.fail_after + 2 {
            b.now += Duration::minutes(1);
            all.extend(b.full_elements(transitions::elements(&snap_at(b.now, true))));
        }
        assert_eq!(all.len(), 1, "{all:#?}");
        assert_eq!(
            (all[0].key.as_str(), all[0].event),
            ("section:agents", AlertEvent::Firing)
        );
        assert_eq!(all[0].reason.as_deref(), Some("30 min old"));
        assert_eq!(all[0].takes_down, vec!["agent a1".to_string()]);
        // The section's recovery, then (the pass after: the root's alert is closed) the agent.
        let mut back = Vec::new();
        for _ in 0..b.th.recover_after + 1 {
            b.now += Duration::minutes(1);
            back.extend(b.full_elements(transitions::elements(&snap_at(b.now, false))));
        }
        let events: Vec<(&str, AlertEvent)> =
            back.iter().map(|a| (a.key.as_str(), a.event)).collect();
        assert_eq!(
            events,
            vec![
                ("section:agents", AlertEvent::Recovered),
                ("agent:a1", AlertEvent::Firing)
            ],
            "{back:#?}"
        );
    }

    // Found in review: each of these failed before its fix.

    /// Host lab as the systems collector judges it (its row's band folds its checks).
    fn lab(
        now: DateTime<Utc>,
        vault_ok: bool,
        nginx_ok: bool,
        tunnel_ok: bool,
    ) -> fleetdash_model::System {
        use crate::write::history::tests::{check, host};
        let mut h = host("lab", 3, now);
        h.services = vec![check("nginx", nginx_ok, now)];
        h.tunnels = vec![check("lab-heart", tunnel_ok, now)];
        h.vault_parity = fleetdash_model::Probe::Value(vault_ok);
        h.vault_reason = (!vault_ok).then(|| "3 uncommitted changes".into());
        crate::collect::systems::rejudge(&mut h);
        h
    }

    /// Was: the host's element folded its checks, and a host is an ancestor of its checks and
    /// (through its tunnels) of agents: a standing red check (vault out of sync) kept host:lab
    /// open, so a later service or tunnel failure, and the agents behind the tunnel, paged
    /// nobody. Now the host is only whether it answers; each check fires as itself.
    #[test]
    fn a_hosts_standing_red_check_holds_back_no_later_failure_under_it() {
        let mut b = chain_bench();
        let snap_at = |now: DateTime<Utc>, nginx_ok: bool, tunnel_ok: bool| {
            let mut s = Snapshot::empty(now, crate::config::fleet_rules());
            for meta in [&mut s.sections.agents, &mut s.sections.systems] {
                meta.configured = true;
                meta.checked_at = Some(now);
            }
            s.agents = fleetdash_model::Probe::Value(
                (1..=5)
                    .map(|i| crate::write::history::tests::agent(&format!("a{i}"), tunnel_ok, now))
                    .collect(),
            );
            s.systems = fleetdash_model::Probe::Value(vec![lab(now, false, nginx_ok, tunnel_ok)]);
            s
        };
        let mut all = Vec::new();
        for _ in 0..b.th.fail_after {
            b.now += Duration::minutes(1);
            all.extend(b.full_elements(transitions::elements(&snap_at(b.now, true, true))));
        }
        assert_eq!(all.len(), 1, "{all:#?}");
        assert_eq!(
            (all[0].key.as_str(), all[0].event),
            ("host:lab/vault", AlertEvent::Firing),
            "the vault fires as itself; the host answers"
        );
        // 50 minutes later, nginx and the tunnel go down, the 5 agents behind it too.
        let mut later = Vec::new();
        for _ in 0..50 {
            b.now += Duration::minutes(1);
            later.extend(b.full_elements(transitions::elements(&snap_at(b.now, false, false))));
        }
        let got: Vec<(&str, AlertEvent)> =
            later.iter().map(|a| (a.key.as_str(), a.event)).collect();
        // nginx and the tunnel fire as themselves; the 5 agents behind the tunnel are named by
        // the tunnel's Firing, not paged one by one.
        let firings: Vec<&str> = got
            .iter()
            .filter(|(_, e)| *e == AlertEvent::Firing)
            .map(|(k, _)| *k)
            .collect();
        assert_eq!(
            firings,
            ["host:lab/service:nginx", "host:lab/tunnel:lab-heart"],
            "{later:#?}"
        );
        let tunnel = later
            .iter()
            .find(|a| a.key == "host:lab/tunnel:lab-heart")
            .unwrap();
        assert_eq!(tunnel.takes_down.len(), 5, "{tunnel:#?}");
    }

    /// Was: only green closed an alert, so a root back to amber kept its alert open and stayed
    /// down for ever, holding back its dependents. Now what is no longer red recovers (the
    /// Recovered carries the amber band), and a dependent still red then fires.
    #[test]
    fn a_root_back_to_amber_recovers_and_its_dependents_fire() {
        let mut b = Bench::new();
        let base = |agent: Band, task: Band| {
            vec![
                ("section:agents", el("section", "agents", Band::Green)),
                (
                    "section:tasks.live",
                    el("section", "tasks.live", Band::Green),
                ),
                ("agent:min", el("agent", "min", agent)),
                ("task:min/t1", el("task", "t1 on min", task)),
            ]
        };
        for _ in 0..b.th.fail_after {
            b.next(&base(Band::Red, Band::Green));
        }
        assert!(b.state.tracks["agent:min"].open.is_some());
        // min answers again, amber (its last exchange is old); its task t1 is STUCK.
        let mut all = Vec::new();
        for _ in 0..120 {
            all.extend(b.next(&base(Band::Amber, Band::Red)));
        }
        assert_eq!(
            all,
            [
                ("agent:min".to_string(), AlertEvent::Recovered),
                ("task:min/t1".to_string(), AlertEvent::Firing),
                ("task:min/t1".to_string(), AlertEvent::Reminder),
            ],
            "the agent recovers to amber, then its stuck task fires (and reminds an hour on)"
        );
    }

    /// Was: a cycle in depends_on (the config accepts it) made two red elements hold each other
    /// back: nobody was paged. Now neither holds the other back.
    #[test]
    fn two_red_elements_in_a_depends_on_cycle_both_fire() {
        let mut b = Bench::new();
        b.deps.add("host:a", "host:b");
        b.deps.add("host:b", "host:a");
        let red = [
            ("section:systems", el("section", "systems", Band::Green)),
            ("host:a", el("host", "a", Band::Red)),
            ("host:b", el("host", "b", Band::Red)),
        ];
        let mut all = Vec::new();
        for _ in 0..10 {
            all.extend(b.next(&red));
        }
        assert_eq!(
            all,
            [
                ("host:a".to_string(), AlertEvent::Firing),
                ("host:b".to_string(), AlertEvent::Firing)
            ]
        );
    }
}

//! Needs-you lines that say many elements at once (issue 43): every line on the first screen
//! earns its place. Each element not green is one entry ([`Need`]) for the verdict's words;
//! the lines are made from them here:
//! - one cause, one line: the red elements another red one took down (the snapshot's
//!   `causes`, what the registry says depends on what) are one line leading to the root;
//! - many alike, one line: lines of a kind the rules fold, in one band and with one reason, are
//!   one once there are the rules' `fold_alike_from` of them.
//!
//! Kept light for WebAssembly, as the rest of the glance: plain loops over short lists.

use super::parts::row_anchor;
use super::types::Need;
use crate::band::Band;
use crate::rules::RulesView;
use crate::snapshot::Cause;
use crate::words::thousands;

/// The lines of `elements` (red first, each element's entry in its panel's order), folded.
pub(super) fn fold(elements: Vec<Need>, causes: &[Cause], rules: &RulesView) -> Vec<Need> {
    fold_alike(fold_causes(elements, causes), rules)
}

/// One cause, one line: the red elements another red one took down (the snapshot's `causes`)
/// are one line, "agent orin down · tunnel orin on laptop is down", where the first of them
/// stood, leading to the root's row; "agent kai and 3 more down" when it took down more. A root
/// that is a row of its own (a host down) has no other line: this one names it. A host whose
/// only trouble is a check that is such a root says so itself ([`super::types::Line`]).
fn fold_causes(elements: Vec<Need>, causes: &[Cause]) -> Vec<Need> {
    // Each cause by rows: the dependent's, the root's, the root in words, and whether the root
    // is that row itself (not one of a host's checks).
    let causes: Vec<(String, String, &str, bool)> = causes
        .iter()
        .map(|c| {
            let check = c.root.starts_with("host:") && c.root.contains('/');
            (
                row_anchor(&c.key, ""),
                row_anchor(&c.root, ""),
                c.root_what.as_str(),
                !check,
            )
        })
        .collect();
    let cause_of = |n: &Need| {
        causes
            .iter()
            .position(|c| n.band == Band::Red && n.stands_for.first() == Some(&c.0))
    };
    let rows_named: Vec<String> = elements
        .iter()
        .filter_map(|n| cause_of(n).filter(|&i| causes[i].3))
        .map(|i| causes[i].1.clone())
        .collect();
    let mut lines: Vec<Need> = Vec::new();
    // The line standing for each root, by its row.
    let mut folds: Vec<(String, usize)> = Vec::new();
    for mut n in elements {
        if let Some(i) = cause_of(&n) {
            let (_, root, what, _) = &causes[i];
            if let Some((_, at)) = folds.iter().find(|(r, _)| r == root) {
                let line = &mut lines[*at];
                line.count += 1;
                line.stands_for.append(&mut n.stands_for);
                continue;
            }
            folds.push((root.clone(), lines.len()));
            n.reason = format!("{what} is down");
            n.anchor = root.clone();
            n.stands_for.push(root.clone());
            lines.push(n);
        } else if n.lined && !n.stands_for.first().is_some_and(|a| rows_named.contains(a)) {
            lines.push(n);
        }
    }
    for (_, at) in folds {
        let line = &mut lines[at];
        line.what = match line.count {
            1 => format!("{} down", line.what),
            n => format!("{} and {} more down", line.what, n - 1),
        };
    }
    lines
}

/// Many alike, one line: at least the rules' `fold_alike_from` lines of a kind the rules
/// fold, in one band and with one reason, are one, "8 cards · blocked: needs input", where the
/// first stood, leading to their panel, which lists them.
fn fold_alike(lines: Vec<Need>, rules: &RulesView) -> Vec<Need> {
    let same = |a: &Need, b: &Need| {
        a.band == b.band && a.kind.family() == b.kind.family() && a.reason == b.reason
    };
    let folds = |n: &Need| {
        rules.fold_alike_from >= 2
            && n.count == 1
            && !n.section.is_empty()
            && rules
                .fold_kinds
                .iter()
                .any(|k| k == n.kind.family().words().0)
            && lines.iter().filter(|l| l.count == 1 && same(l, n)).count() as u64
                >= rules.fold_alike_from
    };
    let folding: Vec<bool> = lines.iter().map(folds).collect();
    let mut out: Vec<Need> = Vec::new();
    // Where each fold's line is in `out`.
    let mut at: Vec<usize> = Vec::new();
    for (mut n, fold) in lines.into_iter().zip(folding) {
        if fold {
            if let Some(&i) = at.iter().find(|&&i| same(&out[i], &n)) {
                out[i].count += 1;
                out[i].stands_for.append(&mut n.stands_for);
                continue;
            }
            n.anchor = n.section.to_string();
            n.since = None;
            n.held = None;
            at.push(out.len());
        }
        out.push(n);
    }
    for &i in &at {
        let n = &mut out[i];
        n.what = format!("{} {}", thousands(n.count as u64), n.kind.family().words().1);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::asc::Asc;
    use crate::glance::Glance;
    use crate::glance::fixtures::*;
    use crate::probe::Probe;
    use crate::snapshot::{Board, SectionMeta, Sections, Snapshot, System};

    fn lines(g: &Glance) -> Vec<String> {
        g.needs
            .iter()
            .map(|n| format!("{} {} · {}", n.band.icon(), n.what, n.reason))
            .collect()
    }

    /// A fleet of agents and hosts collected at t0, nothing else.
    fn fleet_of(agents: Vec<crate::snapshot::Agent>, hosts: Vec<System>) -> Snapshot {
        let mut s = Snapshot::empty(t0(), rules());
        s.stale = false;
        let meta = SectionMeta {
            configured: true,
            checked_at: Some(t0()),
            duration_ms: Some(1),
            stale: false,
        };
        s.sections = Sections {
            agents: meta.clone(),
            systems: meta,
            ..Sections::default()
        };
        s.agents = Probe::Value(agents);
        s.systems = Probe::Value(hosts);
        s
    }

    fn down(name: &str) -> crate::snapshot::Agent {
        let mut a = agent(name, Band::Red, false, Some("down: connection refused"));
        a.status = Asc::DEPENDENCY_UNAVAILABLE;
        a
    }

    fn laptop(tunnels: &[(&str, bool)], services: Vec<crate::snapshot::NamedCheck>) -> System {
        let bad = services.iter().any(|c| c.ok != Probe::Value(true))
            || tunnels.iter().any(|(_, up)| !up);
        let mut h = host(
            "laptop",
            if bad { Band::Red } else { Band::Green },
            services,
            Vec::new(),
        );
        h.source = "local".into();
        h.reason = None;
        h.tunnels = tunnels
            .iter()
            .map(|(name, up)| check(name, *up, (!up).then_some("connection refused")))
            .collect();
        h
    }

    fn cause(key: &str, root: &str, root_what: &str) -> Cause {
        Cause {
            key: key.into(),
            root: root.into(),
            root_what: root_what.into(),
            checked_at: t0(),
        }
    }

    /// Was: "agent orin · down: connection refused" and "host laptop · tunnel orin down", one
    /// failure said twice on a phone's first screen.
    #[test]
    fn an_agent_down_behind_a_tunnel_down_is_one_line_leading_to_the_tunnel() {
        let mut s = fleet_of(
            vec![down("orin"), agent("atlas", Band::Green, true, None)],
            vec![laptop(&[("orin", false), ("atlas", true)], Vec::new())],
        );
        s.causes = vec![cause(
            "agent:orin",
            "host:laptop/tunnel:orin",
            "tunnel orin on laptop",
        )];
        let g = at(&s, 0);
        assert_eq!(lines(&g), ["✖ agent orin down · tunnel orin on laptop is down"]);
        assert_eq!(g.needs[0].anchor, "host-laptop");
        // The counts say each element once; the verdict's words say what is red.
        assert_eq!((g.counts.red, g.counts.green), (2, 1));
        assert_eq!(g.counts, s.verdict());
        assert_eq!(g.headline, "1 agent down · 1 host");
        // Both rows still say all of it behind the tap.
        assert_eq!(row(&g, "host-laptop").reason.as_deref(), Some("tunnel orin down"));
        assert_eq!(
            row(&g, "agent-orin").reason.as_deref(),
            Some("down: connection refused")
        );

        // Without what the registry says of it, each says its own.
        s.causes.clear();
        assert_eq!(
            lines(&at(&s, 0)),
            [
                "✖ agent orin · down: connection refused",
                "✖ host laptop · tunnel orin down",
            ]
        );
    }

    /// The host's other trouble keeps its line, without the tunnel the other line names.
    #[test]
    fn a_host_keeps_a_line_for_what_no_other_line_says() {
        let mut s = fleet_of(
            vec![down("orin")],
            vec![laptop(
                &[("orin", false)],
                vec![check("nginx", false, Some("failed"))],
            )],
        );
        s.causes = vec![cause(
            "agent:orin",
            "host:laptop/tunnel:orin",
            "tunnel orin on laptop",
        )];
        let g = at(&s, 0);
        assert_eq!(
            lines(&g),
            [
                "✖ agent orin down · tunnel orin on laptop is down",
                "✖ host laptop · service nginx failed",
            ]
        );
        assert_eq!(
            row(&g, "host-laptop").reason.as_deref(),
            Some("service nginx failed · tunnel orin down")
        );
    }

    /// A chain: a tunnel down takes a remote host down, and the agents on it. One line for
    /// all, at the place of the first, leading to the tunnel's host; an agent down for its
    /// own reason keeps its own line.
    #[test]
    fn a_chain_is_one_line_for_its_root_and_what_is_down_for_another_reason_keeps_its_own() {
        let mut lab = host("LAB", Band::Red, Vec::new(), Vec::new());
        lab.ram_total_gb = Probe::error("node_exporter: connection refused");
        lab.ram_used_gb = lab.ram_total_gb.clone();
        lab.disk_free_gb = lab.ram_total_gb.clone();
        lab.reason = Some("node_exporter: connection refused".into());
        lab.stale = true;
        let mut echo = agent(
            "echo",
            Band::Red,
            true,
            Some("its card lists no skills: it cannot be given work"),
        );
        echo.skills_count = Probe::Value(0);
        let mut s = fleet_of(
            vec![down("vega"), down("kai"), down("mira"), echo],
            vec![laptop(&[("lab", false)], Vec::new()), lab],
        );
        let root = "host:laptop/tunnel:lab";
        s.causes = ["host:LAB", "agent:vega", "agent:kai", "agent:mira"]
            .into_iter()
            .map(|k| cause(k, root, "tunnel lab on laptop"))
            .collect();
        let g = at(&s, 0);
        assert_eq!(
            lines(&g),
            [
                "✖ agent echo · its card lists no skills: it cannot be given work",
                "✖ agent kai and 3 more down · tunnel lab on laptop is down",
            ]
        );
        assert_eq!(g.needs[1].anchor, "host-laptop");
        assert_eq!(g.headline, "4 agents · 2 hosts");
        assert_eq!(g.counts, s.verdict());
        // The line stands for every row it folds: a change of any leads to it.
        let mut stood: Vec<&str> = g.needs[1].stands_for.iter().map(String::as_str).collect();
        stood.sort_unstable();
        assert_eq!(
            stood,
            ["agent-kai", "agent-mira", "agent-vega", "host-LAB", "host-laptop"]
        );
    }

    /// A root that is a row of its own (a host down under which agents are down) is named by
    /// the line, which replaces its own.
    #[test]
    fn a_root_row_is_named_by_the_line_of_what_it_takes_down() {
        let mut lab = host("LAB", Band::Red, Vec::new(), Vec::new());
        lab.ram_total_gb = Probe::error("node_exporter: connection refused");
        lab.reason = Some("node_exporter: connection refused".into());
        lab.stale = true;
        let mut s = fleet_of(vec![down("vega"), down("kai")], vec![lab]);
        s.causes = vec![
            cause("agent:vega", "host:LAB", "host LAB"),
            cause("agent:kai", "host:LAB", "host LAB"),
        ];
        let g = at(&s, 0);
        assert_eq!(lines(&g), ["✖ agent kai and 1 more down · host LAB is down"]);
        assert_eq!(g.needs[0].anchor, "host-LAB");
    }

    /// Was: eight cards, one line each, "blocked: needs input", pushing the Agents panel off a
    /// phone's first screen.
    #[test]
    fn alike_lines_fold_into_one_from_the_rules_count_and_lead_to_their_panel() {
        let mut s = fleet();
        let mut cards: Vec<crate::snapshot::Card> = (0..8)
            .map(|i| {
                let mut c = card(
                    &format!("t_b{i}"),
                    "blocked",
                    Band::Amber,
                    &["blocked: needs_input"],
                );
                c.block_kind = Some("needs_input".into());
                c
            })
            .collect();
        cards.push(card("t_todo", "todo", Band::Green, &[]));
        s.tasks.board = Probe::Value(Board {
            columns: ["todo", "blocked"].map(String::from).to_vec(),
            cards,
            sources: Vec::new(),
        });
        let g = at(&s, 0);
        let blocked: Vec<&crate::glance::Need> = g
            .needs
            .iter()
            .filter(|n| n.reason == "blocked: needs input")
            .collect();
        assert_eq!(blocked.len(), 1, "{:#?}", lines(&g));
        assert_eq!(
            (blocked[0].what.as_str(), blocked[0].anchor.as_str()),
            ("8 cards", "board")
        );
        assert_eq!(blocked[0].stands_for.len(), 8);
        assert_eq!(g.counts, s.verdict());

        // Under the rules' count, each keeps its line; a kind the rules do not fold, too.
        let mut fewer = s.clone();
        fewer.rules.fold_alike_from = 9;
        let g = at(&fewer, 0);
        assert_eq!(
            g.needs
                .iter()
                .filter(|n| n.reason == "blocked: needs input")
                .count(),
            8
        );
        let mut agents_only = s.clone();
        agents_only.rules.fold_kinds = vec!["agent".into()];
        assert_eq!(
            at(&agents_only, 0)
                .needs
                .iter()
                .filter(|n| n.reason == "blocked: needs input")
                .count(),
            8
        );
    }

    /// Agents down alike are one line, counted.
    #[test]
    fn alike_agents_are_one_line_counted() {
        let mut s = fleet_of(vec![down("vega"), down("kai"), down("mira")], Vec::new());
        s.rules.fold_kinds = vec!["agent".into()];
        let g = at(&s, 0);
        assert_eq!(lines(&g), ["✖ 3 agents · down: connection refused"]);
        assert_eq!(g.needs[0].anchor, "agents");
        s.agents = Probe::Value(
            (0..12)
                .map(|i| down(&format!("agent-{i:02}")))
                .collect(),
        );
        assert_eq!(
            lines(&at(&s, 0)),
            ["✖ 12 agents · down: connection refused"]
        );
    }
}

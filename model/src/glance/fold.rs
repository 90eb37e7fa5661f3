//! Needs-you lines that say many elements at once (issue 43): every line on the first screen
//! earns its place. Each element not green is one entry ([`Need`]) for the verdict's words;
//! the lines are made from them here:
//! - one cause, one line: the red elements another red one took down (the snapshot's
//!   `causes`, what the registry says depends on what) are one line leading to the root;
//! - many alike, one line: lines of a kind the rules fold, in one band and with one reason, are
//!   one once there are the rules' `fold_alike_from` of them.
//!
//! Kept light for WebAssembly, as the rest of the glance: plain loops over short lists.

use super::types::{Kind, Need};
use crate::band::Band;
use crate::rules::RulesView;
use crate::snapshot::Cause;
use crate::words::thousands;

/// One cause, one line (issue 43): the red elements another red one took down (a tunnel an
/// agent is reached through, a host its agents run on: the snapshot's `causes`) are one line,
/// "orin down: tunnel orin on laptop is down", where the first of them stood, leading to the
/// root's row. The root's own line goes too when it is a row of its own: the line names it. A
/// host whose only trouble is such a root has no line of its own (its row says [`Line::Folded`]).
pub(super) fn fold_causes(elements: &[Need], causes: &[Cause]) -> Vec<Need> {
    let cause_of = |n: &Need| {
        causes
            .iter()
            .find(|c| n.band == Band::Red && !n.key.is_empty() && c.key == n.key)
    };
    let roots: Vec<&str> = elements
        .iter()
        .filter_map(|n| cause_of(n).map(|c| c.root.as_str()))
        .collect();
    let mut lines: Vec<Need> = Vec::new();
    // Per root: the line standing for it and the names it takes down.
    let mut folds: Vec<(&str, usize, Vec<(&str, Kind)>)> = Vec::new();
    for n in elements {
        if let Some(c) = cause_of(n) {
            match folds.iter_mut().find(|f| f.0 == c.root) {
                Some(f) => {
                    f.2.push((&n.name, n.kind));
                    lines[f.1].stands_for.extend(n.stands_for.iter().cloned());
                }
                None => {
                    let root = elements.iter().find(|r| {
                        !r.key.is_empty()
                            && (r.key == c.root
                                || c.root.strip_prefix(r.key.as_str()).is_some_and(|t| t.starts_with('/')))
                    });
                    let mut line = n.clone();
                    line.reason = format!("{} is down", c.root_what);
                    if let Some(r) = root {
                        line.anchor = r.anchor.clone();
                        line.held = r.held.clone();
                        line.since = r.since.clone().or(line.since);
                        line.stands_for.extend(r.stands_for.iter().cloned());
                    }
                    folds.push((&c.root, lines.len(), vec![(&n.name, n.kind)]));
                    lines.push(line);
                }
            }
            continue;
        }
        if n.lined && !roots.contains(&n.key.as_str()) {
            lines.push(n.clone());
        }
    }
    for (_, i, names) in folds {
        let line = &mut lines[i];
        line.what = format!("{} down", names_or_count(&names));
        line.count = names.len();
    }
    lines
}

/// Many alike lines are one (issue 43): at least the rules' `fold_alike_from` lines of a kind
/// the rules fold, in one band and with one reason, are said once where the first stood, "8
/// cards · blocked: needs input", leading to their panel, which lists them.
pub(super) fn fold_alike(lines: Vec<Need>, rules: &RulesView) -> Vec<Need> {
    let alike = |a: &Need, b: &Need| {
        a.band == b.band
            && a.kind.family() == b.kind.family()
            && a.reason == b.reason
            && a.count == 1
            && b.count == 1
            && !a.key.is_empty()
            && !b.key.is_empty()
    };
    let folds = |n: &Need| {
        rules.fold_alike_from >= 2
            && rules
                .fold_kinds
                .iter()
                .any(|k| k == n.kind.family().words().0)
    };
    let mut taken = vec![false; lines.len()];
    let mut out = Vec::new();
    for (i, n) in lines.iter().enumerate() {
        if taken[i] {
            continue;
        }
        let same: Vec<usize> = (i..lines.len())
            .filter(|&j| !taken[j] && folds(n) && alike(n, &lines[j]))
            .collect();
        if (same.len() as u64) < rules.fold_alike_from.max(2) {
            taken[i] = true;
            out.push(n.clone());
            continue;
        }
        let names: Vec<(&str, Kind)> = same
            .iter()
            .map(|&j| (lines[j].name.as_str(), lines[j].kind))
            .collect();
        let mut line = n.clone();
        for &j in &same[1..] {
            line.stands_for.extend(lines[j].stands_for.iter().cloned());
        }
        for &j in &same {
            taken[j] = true;
        }
        line.what = names_or_count(&names);
        line.count = same.len();
        line.since = None;
        line.held = None;
        line.key = String::new();
        line.anchor = n.section.to_string();
        out.push(line);
    }
    out
}

/// "orin", "vega and kai", "vega, kai and mira" while short; else "8 cards" (one kind), or "LAB
/// and 4 more".
fn names_or_count(names: &[(&str, Kind)]) -> String {
    let n = names.len();
    let listed = match names {
        [] => String::new(),
        [(one, _)] => one.to_string(),
        [rest @ .., (last, _)] => {
            let rest: Vec<&str> = rest.iter().map(|(name, _)| *name).collect();
            format!("{} and {last}", rest.join(", "))
        }
    };
    if n <= 3 && listed.chars().count() <= NAMES_SHOWN {
        return listed;
    }
    let family = names[0].1.family();
    if names.iter().all(|(_, k)| k.family() == family) {
        format!("{} {}", thousands(n as u64), family.words().1)
    } else {
        format!("{} and {} more", names[0].0, n - 1)
    }
}

/// The most characters a folded line spends naming what it stands for.
const NAMES_SHOWN: usize = 32;

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
        assert_eq!(lines(&g), ["✖ orin down · tunnel orin on laptop is down"]);
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
                "✖ orin down · tunnel orin on laptop is down",
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
                "✖ kai and 3 more down · tunnel lab on laptop is down",
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
        assert_eq!(lines(&g), ["✖ kai and vega down · host LAB is down"]);
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

    /// Three agents down alike are named while their names are short.
    #[test]
    fn alike_agents_are_named_while_the_names_are_short() {
        let mut s = fleet_of(vec![down("vega"), down("kai"), down("mira")], Vec::new());
        s.rules.fold_kinds = vec!["agent".into()];
        let g = at(&s, 0);
        assert_eq!(lines(&g), ["✖ kai, mira and vega · down: connection refused"]);
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

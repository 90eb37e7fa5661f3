//! Needs-you lines that say many rows at once (issue 43: every line on a phone's first screen
//! earns its place):
//! - one cause, one line: the red elements another red one took down (what the registry says
//!   depends on what: a tunnel an agent is reached through, a host its agents run on) are one
//!   line, "agent orin down · tunnel orin on laptop is down", leading to the root's row; a host
//!   whose only trouble is that tunnel has no line of its own, and one with other trouble says
//!   only that;
//! - many alike, one line: lines of a kind the rules fold, in one band and with one reason, are
//!   one, "8 cards · blocked: needs input", leading to their panel, once there are the rules'
//!   `needs_you.fold_alike_from` of them.
//!
//! The collector folds ([`folds`], at each write, with the registry's causes and the rules) and
//! status.json carries the result ([`Fold`]); the page and snapshot.html only [`apply`] it to
//! their lines at their moment. The folding's code stays out of the page's WebAssembly, and the
//! page needs neither the registry nor the rules to say the same.

use chrono::FixedOffset;

use super::parts::{Words, row_anchor};
use super::systems::host_trouble;
use super::types::Need;
use super::{assemble, red_then_amber};
use crate::alerts::key;
use crate::band::Band;
use crate::probe::Probe;
use crate::snapshot::{Fold, Snapshot};
use crate::words::thousands;

/// One red element taken down by another, as the collector's registry says (`Deps::causes`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    /// The element's key (`agent:orin`).
    pub key: String,
    /// What took it down: the red element it depends on that depends on nothing red
    /// (`host:laptop/tunnel:orin`).
    pub root: String,
    /// The root in the operator's words: "tunnel orin on laptop".
    pub root_what: String,
}

/// Marks a line folded for a cause whose root has no row of its own here: never a row's anchor
/// (anchors are letters, digits, `-` and `_`).
const CAUSE_MARK: &str = "=";

/// The rules file's `needs_you` group: which lines alike fold, from how many.
#[derive(Debug, Clone, Copy)]
pub struct FoldRules<'a> {
    pub alike_from: u64,
    pub kinds: &'a [String],
}

/// The folds of `s` at its own moment: each needs-you line that stands for more than its own
/// row, and each host line that says less than its row (the rest is said by the line of what
/// it took down).
pub fn folds(s: &Snapshot, causes: &[Cause], rules: FoldRules) -> Vec<Fold> {
    let utc = FixedOffset::east_opt(0).expect("UTC");
    let (_, _, elements) = assemble(s, s.generated_at, utc, false);
    // Hosts with a check that took something down: what else is wrong with them, if anything.
    let w = Words {
        now: s.generated_at,
        clock: &s.clock,
        offset: utc,
        held: &[],
        acked: &[],
        frozen: false,
    };
    let hosts: Vec<(String, Vec<String>, Band)> = match &s.systems {
        Probe::Value(hosts) => hosts
            .iter()
            .filter_map(|h| {
                let root = |kind: &str, name: &str| {
                    let k = key::host_check(&h.host, kind, name);
                    causes.iter().any(|c| c.root == k)
                };
                let (took_down, rest, band) = host_trouble(h, &w, root);
                took_down.then(|| (row_anchor(&key::host(&h.host), ""), rest, band))
            })
            .collect(),
        _ => Vec::new(),
    };
    // Each host said in other words, and in its own band when that is not its row's.
    let mut reworded: Vec<(String, Option<Band>)> = Vec::new();
    let elements = elements
        .into_iter()
        .filter_map(|mut n| {
            match hosts.iter().find(|(a, ..)| n.stands_for.first() == Some(a)) {
                // Nothing else is wrong: the line of what it took down names it.
                Some((_, rest, _)) if rest.is_empty() => return None,
                Some((anchor, rest, band)) => {
                    n.reason = rest.join(" · ");
                    reworded.push((anchor.clone(), (*band != n.band).then_some(*band)));
                    n.band = *band;
                }
                None => {}
            }
            Some(n)
        })
        .collect();
    let folded_hosts: Vec<&String> = hosts
        .iter()
        .filter(|(_, rest, _)| rest.is_empty())
        .map(|(a, ..)| a)
        .collect();
    fold_alike(fold_causes(elements, causes, &folded_hosts), rules)
        .into_iter()
        .filter_map(|n| {
            // A host's own line stands for its row alone (a fold of what it took down leads
            // to its row too).
            let host = reworded
                .iter()
                .find(|(a, _)| n.stands_for.len() == 1 && n.stands_for[0] == *a);
            let rows: Vec<String> = n
                .stands_for
                .iter()
                .filter(|r| !r.starts_with(CAUSE_MARK))
                .cloned()
                .collect();
            (rows.len() < n.stands_for.len() || rows.len() > 1 || host.is_some()).then(|| Fold {
                band: host.and_then(|(_, b)| *b),
                rows,
                what: n.what,
                reason: n.reason,
                anchor: n.anchor,
                checked_at: s.generated_at,
            })
        })
        .collect()
}

/// `elements` (one entry per element not green, red first) as needs-you lines: each row a fold
/// stands for said by that fold's line, where the first of them stood.
pub(super) fn apply(elements: Vec<Need>, folds: &[Fold]) -> Vec<Need> {
    let mut lines: Vec<Need> = Vec::new();
    // Each fold met so far and its line.
    let mut at: Vec<(usize, usize)> = Vec::new();
    for mut n in elements {
        let row = n.stands_for.first();
        let Some(i) = folds
            .iter()
            .position(|f| row.is_some_and(|r| f.rows.contains(r)))
        else {
            lines.push(n);
            continue;
        };
        if let Some(&(_, l)) = at.iter().find(|(j, _)| *j == i) {
            lines[l].stands_for.append(&mut n.stands_for);
            continue;
        }
        let f = &folds[i];
        n.band = f.band.unwrap_or(n.band);
        n.what = f.what.clone();
        n.reason = f.reason.clone();
        n.anchor = f.anchor.clone();
        if f.rows.len() > 1 {
            n.since = None;
            n.held = None;
        }
        at.push((i, lines.len()));
        lines.push(n);
    }
    // A line in another band than its row's (a host's amber trouble, its red said by another
    // line) goes where its band goes: red first.
    red_then_amber(lines)
}

/// One cause, one line: the red elements another red one took down are one line where the
/// first of them stood, leading to the root's row, which it stands for too when the root is a
/// row of its own or a check of a host with nothing else wrong (`folded_hosts`).
fn fold_causes(elements: Vec<Need>, causes: &[Cause], folded_hosts: &[&String]) -> Vec<Need> {
    // Each cause by rows: the dependent's, the root's, the root in words, and whether the root
    // is that row itself (not one of a host's checks).
    let causes: Vec<(String, String, &str, bool, &str)> = causes
        .iter()
        .map(|c| {
            let root = row_anchor(&c.root, "");
            let check = c.root.starts_with("host:") && c.root.contains('/');
            let named = !check || folded_hosts.contains(&&root);
            (
                row_anchor(&c.key, ""),
                root,
                c.root_what.as_str(),
                named,
                c.root.as_str(),
            )
        })
        .collect();
    let cause_of = |n: &Need| {
        causes
            .iter()
            .position(|c| n.band == Band::Red && n.stands_for.first() == Some(&c.0))
    };
    let named: Vec<String> = elements
        .iter()
        .filter_map(|n| cause_of(n).filter(|&i| causes[i].3))
        .map(|i| causes[i].1.clone())
        .collect();
    let mut lines: Vec<Need> = Vec::new();
    // The line standing for each root, by its key: two tunnels of one host are two causes.
    let mut folds: Vec<(&str, usize)> = Vec::new();
    for mut n in elements {
        if let Some(i) = cause_of(&n) {
            let (_, root, what, names_root, key) = &causes[i];
            if let Some((_, at)) = folds.iter().find(|(r, _)| r == key) {
                let line = &mut lines[*at];
                line.count += 1;
                line.stands_for.append(&mut n.stands_for);
                continue;
            }
            folds.push((key, lines.len()));
            n.reason = format!("{what} is down");
            n.anchor = root.clone();
            n.stands_for.push(if *names_root {
                root.clone()
            } else {
                // No row of the root's to stand for (its host says other trouble on a line of
                // its own): marked, so that a fold of one row is still written.
                format!("{CAUSE_MARK}{key}")
            });
            lines.push(n);
        } else if !n.stands_for.first().is_some_and(|a| named.contains(a)) {
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

/// The panel a row's line is in, by its anchor: where a line folding many alike leads. None
/// (empty) for what is no row of a panel's list (a section, a lot, a channel).
fn panel(n: &Need) -> &'static str {
    let row = n.stands_for.first().map_or("", String::as_str);
    let kind = row.split('-').next().unwrap_or_default();
    match kind {
        "agent" => "agents",
        "queue" => "queue",
        "task" => "live",
        "card" => "board",
        "host" => "systems",
        _ => "",
    }
}

/// Many alike, one line: at least the rules' `alike_from` lines of a kind the rules fold, in
/// one band and with one reason, are one, "8 cards · blocked: needs input", where the first
/// stood, leading to their panel, which lists them.
fn fold_alike(lines: Vec<Need>, rules: FoldRules) -> Vec<Need> {
    let same = |a: &Need, b: &Need| {
        a.band == b.band && a.kind.family() == b.kind.family() && a.reason == b.reason
    };
    let folds = |n: &Need| {
        rules.alike_from >= 2
            && n.count == 1
            && !panel(n).is_empty()
            && rules.kinds.iter().any(|k| k == n.kind.family().words().0)
            && lines.iter().filter(|l| l.count == 1 && same(l, n)).count() as u64
                >= rules.alike_from
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
            n.anchor = panel(&n).to_string();
            at.push(out.len());
        }
        out.push(n);
    }
    for &i in &at {
        let n = &mut out[i];
        n.what = format!(
            "{} {}",
            thousands(n.count as u64),
            n.kind.family().words().1
        );
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
        }
    }

    /// The shipped rules' folding.
    fn kinds() -> Vec<String> {
        ["card", "task", "agent", "host", "board"]
            .map(String::from)
            .to_vec()
    }

    /// `s` with the folds the collector writes for `causes`, alike from `from` of `kinds`.
    fn folded(mut s: Snapshot, causes: &[Cause], from: u64, kinds: &[String]) -> Snapshot {
        s.folds = folds(
            &s,
            causes,
            FoldRules {
                alike_from: from,
                kinds,
            },
        );
        s
    }

    /// Was: "agent orin · down: connection refused" and "host laptop · tunnel orin down", one
    /// failure said twice on a phone's first screen.
    #[test]
    fn an_agent_down_behind_a_tunnel_down_is_one_line_leading_to_the_tunnel() {
        let s = fleet_of(
            vec![down("orin"), agent("atlas", Band::Green, true, None)],
            vec![laptop(&[("orin", false), ("atlas", true)], Vec::new())],
        );
        let causes = [cause(
            "agent:orin",
            "host:laptop/tunnel:orin",
            "tunnel orin on laptop",
        )];
        let s = folded(s, &causes, 3, &kinds());
        let g = at(&s, 0);
        assert_eq!(
            lines(&g),
            ["✖ agent orin down · tunnel orin on laptop is down"]
        );
        assert_eq!(g.needs[0].anchor, "host-laptop");
        // The counts say each element once; the verdict's words say what is red.
        assert_eq!((g.counts.red, g.counts.green), (2, 1));
        assert_eq!(g.counts, s.verdict());
        assert_eq!(g.headline, "1 agent down · 1 host");
        // Both rows still say all of it behind the tap.
        assert_eq!(
            row(&g, "host-laptop").reason.as_deref(),
            Some("tunnel orin down")
        );
        assert_eq!(
            row(&g, "agent-orin").reason.as_deref(),
            Some("down: connection refused")
        );

        // Without what the registry says of it, each says its own.
        let s = folded(s, &[], 3, &kinds());
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
        let s = fleet_of(
            vec![down("orin")],
            vec![laptop(
                &[("orin", false)],
                vec![check("nginx", false, Some("failed"))],
            )],
        );
        let causes = [cause(
            "agent:orin",
            "host:laptop/tunnel:orin",
            "tunnel orin on laptop",
        )];
        let s = folded(s, &causes, 3, &kinds());
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

    /// Was (a newcomer's fleet): two agents behind two tunnels of one host, both down, said as
    /// one line with one tunnel's words. Each tunnel is a cause of its own.
    #[test]
    fn two_tunnels_of_one_host_are_two_causes() {
        let s = fleet_of(
            vec![down("osprey"), down("plover")],
            vec![laptop(&[("osprey", false), ("plover", false)], Vec::new())],
        );
        let causes = [
            cause(
                "agent:osprey",
                "host:laptop/tunnel:osprey",
                "tunnel osprey on laptop",
            ),
            cause(
                "agent:plover",
                "host:laptop/tunnel:plover",
                "tunnel plover on laptop",
            ),
        ];
        let s = folded(s, &causes, 3, &kinds());
        assert_eq!(
            lines(&at(&s, 0)),
            [
                "✖ agent osprey down · tunnel osprey on laptop is down",
                "✖ agent plover down · tunnel plover on laptop is down",
            ]
        );
    }

    /// Was: "✖ host laptop · cron vault-sync late", a red line saying something amber: the
    /// host's red was its tunnel, said by the agent's line. Its own line is in its own band.
    #[test]
    fn a_hosts_own_line_is_in_the_band_of_what_it_still_says() {
        let mut h = laptop(&[("orin", false)], Vec::new());
        h.crons = vec![crate::snapshot::CronCheck {
            name: "vault-sync".into(),
            state: crate::snapshot::CronState::Late,
            last_ok_s: Probe::Value(3600),
            period_s: 1800,
            grace_s: 3600,
            reason: Some("late".into()),
            uptime_24h_pct: None,
            checked_at: t0(),
            stale: false,
        }];
        let mut echo = agent("echo", Band::Amber, true, Some("no exchange for 3 h"));
        echo.status = Asc::SUCCESS_WITH_WARNINGS;
        let s = fleet_of(vec![down("orin"), echo], vec![h]);
        let causes = [cause(
            "agent:orin",
            "host:laptop/tunnel:orin",
            "tunnel orin on laptop",
        )];
        let s = folded(s, &causes, 3, &kinds());
        let g = at(&s, 0);
        assert_eq!(
            lines(&g),
            [
                "✖ agent orin down · tunnel orin on laptop is down",
                "▲ host laptop · cron vault-sync late",
                "▲ agent echo · no exchange for 3 h",
            ]
        );
        // The row still says all of it, in its band.
        assert_eq!(row(&g, "host-laptop").band, Band::Red);
        assert_eq!(g.counts, s.verdict());
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
        let s = fleet_of(
            vec![down("vega"), down("kai"), down("mira"), echo],
            vec![laptop(&[("lab", false)], Vec::new()), lab],
        );
        let root = "host:laptop/tunnel:lab";
        let causes: Vec<Cause> = ["host:LAB", "agent:vega", "agent:kai", "agent:mira"]
            .into_iter()
            .map(|k| cause(k, root, "tunnel lab on laptop"))
            .collect();
        let s = folded(s, &causes, 3, &kinds());
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
            [
                "agent-kai",
                "agent-mira",
                "agent-vega",
                "host-LAB",
                "host-laptop"
            ]
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
        let s = fleet_of(vec![down("vega"), down("kai")], vec![lab]);
        let causes = [
            cause("agent:vega", "host:LAB", "host LAB"),
            cause("agent:kai", "host:LAB", "host LAB"),
        ];
        let s = folded(s, &causes, 3, &kinds());
        let g = at(&s, 0);
        assert_eq!(
            lines(&g),
            ["✖ agent kai and 1 more down · host LAB is down"]
        );
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
        let plain = s.clone();
        let s = folded(s, &[], 3, &kinds());
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
        let fewer = folded(plain.clone(), &[], 9, &kinds());
        let g = at(&fewer, 0);
        assert_eq!(
            g.needs
                .iter()
                .filter(|n| n.reason == "blocked: needs input")
                .count(),
            8
        );
        let agents_only = folded(plain, &[], 3, &["agent".to_string()]);
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
        let s = fleet_of(vec![down("vega"), down("kai"), down("mira")], Vec::new());
        let only = ["agent".to_string()];
        let g = at(&folded(s.clone(), &[], 3, &only), 0);
        assert_eq!(lines(&g), ["✖ 3 agents · down: connection refused"]);
        assert_eq!(g.needs[0].anchor, "agents");
        let mut s = s;
        s.agents = Probe::Value((0..12).map(|i| down(&format!("agent-{i:02}"))).collect());
        assert_eq!(
            lines(&at(&folded(s, &[], 3, &only), 0)),
            ["✖ 12 agents · down: connection refused"]
        );
    }
}

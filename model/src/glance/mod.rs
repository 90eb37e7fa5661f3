//! The glance: everything an operator reads, worded once, for the page and `snapshot.html` alike.
//!
//! [`Glance::new`] is a pure function of a snapshot, a time and the reader's UTC offset: the
//! verdict in words and counts, the **needs-you** items (one per red item, then amber, across
//! every section, each with its reason in a few words, since when, and the anchor of its row),
//! and per section its rows (band, badge, title, a one-line summary, the reason said once, and
//! the details behind a tap: codes, paths, facts, checks, the 24 h strip). Both renderers only
//! lay it out, so they cannot disagree about what is red or how it is said.
//!
//! It is computed at `now`: the page calls it every second while its data is fresh (ages count
//! up, a live task crossing the stuck rule turns STUCK). While it is not, the page calls
//! [`Glance::frozen`]: the glance at the snapshot's own `generated_at` that says every moment as
//! a time of day ("as of 19:15", "at 19:12"), never as an age, since an age would count from a
//! clock the data no longer follows. `snapshot.html` calls it at the snapshot's own
//! `generated_at`. Every time of day is in the reader's zone, named once ([`Glance::zone`]). Kept light for WebAssembly: plain structs, strings built once,
//! times and numbers formatted by hand (chrono's and Rust's float formatting cost kilobytes).
//!
//! Alerting adds words, never bands: an element whose alerts are held back (a silence, a
//! maintenance window) keeps its band, its place and its needs-you line, and carries `held`
//! ("silenced until 16:00 (disk swap)"); so does one whose open alert was acknowledged, its
//! reminders stopped ("acked 14:02", in the same place); a failing alert channel is an amber
//! needs-you line and a row of the Systems panel's "alerts" group, since the operator will not
//! be paged.
//!
//! This file holds [`Glance`] and its assembly (the counts, needs-you, the verdict's words);
//! `types.rs` what a glance is made of, `parts.rs` the words and pieces every section is built
//! from, and one file per panel builds its rows: `agents.rs`, `tasks.rs` (the work queue and
//! live tasks), `board.rs`, `systems.rs` (hosts, alert channels, backups). [`changes`] words
//! the band changes.

mod agents;
mod board;
pub mod changes;
#[cfg(test)]
mod fixtures;
pub mod fold;
pub mod markup;
mod parts;
pub mod report;
mod systems;
mod tasks;
mod types;

pub use parts::{anchor, few_words, few_words_within, order};
pub use tasks::stuck_at;
pub use types::{
    Check, Checks, Fact, Group, HELD_ICON, Need, Problem, Row, Section, Strip, favicon,
};

use chrono::{DateTime, FixedOffset, Utc};

use crate::band::Band;
use crate::snapshot::Snapshot;
use crate::summary::Verdict;
use crate::words::{moment, thousands};
use agents::agents;
use board::board;
use parts::Words;
use systems::{backups, systems};
use tasks::{live_tasks, queue, work};
use types::Kind;

/// What the operator reads, as of one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct Glance {
    /// The worst band of every element at `now`.
    pub band: Band,
    pub counts: Verdict,
    /// The verdict in words: "3 agents down · 1 task stuck · 2 hosts".
    pub headline: String,
    /// Why the snapshot itself is not to be trusted at `now`, if it is not.
    pub stale: Option<String>,
    /// The moment it is computed at, as a time of day ("14:02"): what a frozen page says.
    pub as_of: String,
    /// The reader's zone, which every time of day is said in: "UTC", "UTC+01:00",
    /// "UTC−05:00". Said once, at the top, by both renderers.
    pub zone: String,
    /// Red items first, then amber, in section order.
    pub needs: Vec<Need>,
    pub sections: Vec<Section>,
}

impl Glance {
    /// The glance at `now`, times of day said at `offset` from UTC (the reader's zone).
    pub fn new(s: &Snapshot, now: DateTime<Utc>, offset: FixedOffset) -> Glance {
        Glance::at(s, now, offset, false)
    }

    /// The glance of a snapshot the page cannot trust (the server hangs, the snapshot is
    /// stale): computed at its own `generated_at`, every moment said as a time of day ("as of
    /// 19:15", "last report at 19:02"), so nothing reads as fresh and nothing jumps back when
    /// a poll fails.
    pub fn frozen(s: &Snapshot, offset: FixedOffset) -> Glance {
        Glance::at(s, s.generated_at, offset, true)
    }

    fn at(s: &Snapshot, now: DateTime<Utc>, offset: FixedOffset, frozen: bool) -> Glance {
        let (sections, counts, elements) = assemble(s, now, offset, frozen);
        let headline = headline(&elements, &counts);
        let mut needs = fold::apply(elements, &s.folds);
        // The blind spot is said whole: it explains every other red line.
        for n in needs.iter_mut().filter(|n| n.kind != Kind::BlindSpot) {
            n.reason = few_words_within(&n.reason, n.room_for_reason());
        }
        Glance {
            band: counts.worst(),
            counts,
            headline,
            stale: s.staleness(now),
            as_of: moment(now, now, offset),
            zone: zone(offset),
            needs,
            sections,
        }
    }

    /// The verdict line as shown: never green while the page cannot be trusted (the snapshot
    /// is stale, or the page's own polls fail).
    pub fn verdict(&self, trusted: bool) -> (Band, String) {
        if trusted && self.stale.is_none() {
            (self.band, self.headline.clone())
        } else {
            (Band::Red, format!("stale · last known: {}", self.headline))
        }
    }

    /// The tab's title: "✖ 3 · fleet" (red items), "▲ 2 · fleet", "✔ fleet", "✖ stale · fleet".
    pub fn title(&self, trusted: bool) -> String {
        if !trusted || self.stale.is_some() {
            return format!("{} stale · fleet", Band::Red.icon());
        }
        match self.band {
            Band::Green => format!("{} fleet", Band::Green.icon()),
            Band::Amber => format!("{} {} · fleet", Band::Amber.icon(), self.counts.amber),
            Band::Red => format!("{} {} · fleet", Band::Red.icon(), self.counts.red),
        }
    }
}

/// The glance's sections at `now`, the counts, and one needs-you entry per element (or lot) not
/// green, red first, each its own row's line: what the verdict's words are made of, and what the
/// snapshot's folds fold ([`fold`]).
pub(super) fn assemble(
    s: &Snapshot,
    now: DateTime<Utc>,
    offset: FixedOffset,
    frozen: bool,
) -> (Vec<Section>, Verdict, Vec<Need>) {
    let w = Words {
        now,
        clock: &s.clock,
        offset,
        held: &s.alerts.held,
        acked: &s.alerts.acked,
        frozen,
    };
    // A stuck or orphaned task is said on its agent's row, and its line leads there.
    let work = work(s, &w);
    let sections = vec![
        agents(s, &w, &work),
        queue(s, &w),
        live_tasks(s, &w),
        board(s, &w),
        systems(s, &w),
        backups(s, &w),
    ];
    let mut counts = Verdict::default();
    // One per element not green (or lot of them), for the verdict's words; the lines
    // are made from them.
    let mut elements = Vec::new();
    // fleetdash's own blind spot leads: what follows is likely its consequence. Not an
    // element of the fleet, so not counted.
    if let Some(reach) = s.alerts.reach.filter(|r| r.blind) {
        let mut n = Need::new(
            Band::Red,
            Kind::BlindSpot,
            BLIND_SPOT_WHAT.into(),
            reach.words(),
        );
        n.anchor = "agents".into();
        n.stands_for = vec![n.anchor.clone()];
        elements.push(n);
    }
    for section in &sections {
        if let Some(Problem {
            band: Some(band),
            text,
            held,
        }) = &section.problem
        {
            counts.add(*band);
            let mut n = Need::new(
                *band,
                Kind::Section,
                section.title.to_string(),
                few_words_within(text, usize::MAX),
            );
            n.anchor = section.id.to_string();
            n.stands_for = vec![n.anchor.clone()];
            n.held = held.clone();
            elements.push(n);
        }
        for row in section.groups.iter().flat_map(|g| &g.rows) {
            let Some(kind) = row.kind else {
                continue;
            };
            counts.add(row.own);
            if row.own == Band::Green {
                continue;
            }
            let mut n = Need::new(row.own, kind, row.what.clone(), String::new());
            n.anchor = match work.iter().find(|j| j.anchor == row.anchor) {
                Some(job) => anchor("agent", &job.agent),
                None => row.anchor.clone(),
            };
            n.stands_for = vec![row.anchor.clone()];
            // A channel's line is its own sentence, since when included:
            // "alerts: ntfy failing since 14:02: 503 (3 waiting)".
            if kind != Kind::Channel {
                let mut reason = row.reason.clone().unwrap_or_else(|| row.badge.into());
                if let Some(t) = row.since {
                    // "since 19:12" says it: not "... at 19:12" as well.
                    reason = reason.replace(&format!(" at {}", w.time(t)), "");
                }
                n.reason = few_words_within(&reason, usize::MAX);
                n.since = row.since.map(|t| w.since(t));
                n.held = row.held.clone();
            }
            elements.push(n);
        }
        // Folded rows are green cards: counted, not listed.
        for g in &section.groups {
            counts.green += g.folded_n;
        }
        for lot in &section.unlisted {
            counts.add_n(lot.band, lot.count);
            if lot.band != Band::Green {
                elements.push(Need {
                    stands_for: vec![lot.anchor.clone()],
                    ..lot.clone()
                });
            }
        }
    }
    (sections, counts, red_then_amber(elements))
}

/// Red before amber, the order kept within each (a stable sort by hand: the standard sorts
/// cost the page kilobytes; one function for every list of lines, one copy in the page).
/// Within a band, a line of an element declared flaky comes after the others: still said and
/// counted, but the surprise is what the operator reads first.
pub(super) fn red_then_amber(needs: Vec<Need>) -> Vec<Need> {
    let rank = |n: &Need| {
        let declared = n
            .held
            .as_deref()
            .is_some_and(|h| h.starts_with(crate::alerts::DECLARED_FLAKY));
        u8::from(n.band != Band::Red) * 2 + u8::from(declared)
    };
    let mut out = Vec::with_capacity(needs.len());
    for r in 0..4 {
        out.extend(needs.iter().filter(|n| rank(n) == r).cloned());
    }
    out
}

/// The blind spot's needs-you name and the verdict's first words (issue 24).
const BLIND_SPOT_WHAT: &str = "fleetdash cannot reach the fleet";

/// A needs-you line on a phone (what, reason, since, and a "new" mark) is at most two lines:
/// about this many characters of the page's small type at 390 px, measured in the browser
/// test (`the_demo_fleet_fits_a_phones_first_screen`).
const NEED_LINE: usize = 78;
/// A reason is never cut shorter than this: a name that long gets a third line instead.
const NEED_REASON_MIN: usize = 24;

impl Need {
    /// Characters left for the reason on a two-line needs-you line.
    fn room_for_reason(&self) -> usize {
        let since = self.since.as_deref().map_or(0, |s| s.chars().count() + 1);
        // " · " between what and reason.
        NEED_LINE
            .saturating_sub(self.what.chars().count() + 3 + since)
            .max(NEED_REASON_MIN)
    }
}

/// "UTC" at offset 0, else "UTC+01:00", "UTC−05:00" (a minus sign, as the page prints it).
fn zone(offset: FixedOffset) -> String {
    let secs = offset.local_minus_utc();
    if secs == 0 {
        return "UTC".into();
    }
    let sign = if secs < 0 { '−' } else { '+' };
    let mins = secs.unsigned_abs() / 60;
    format!("UTC{sign}{:02}:{:02}", mins / 60, mins % 60)
}

/// The verdict in words: red items by kind ("3 agents down · 1 task stuck · 2 hosts"); amber
/// items by kind when nothing is red ("1 agent · 2 cards to watch"); "all 18 green" otherwise.
/// The counts say the rest.
fn headline(needs: &[Need], counts: &Verdict) -> String {
    if counts.red == 0 && counts.amber == 0 {
        return if counts.green == 0 {
            "nothing collected yet".into()
        } else {
            format!("all {} green", thousands(counts.green as u64))
        };
    }
    let band = if counts.red > 0 {
        Band::Red
    } else {
        Band::Amber
    };
    let of_band: Vec<&Need> = needs
        .iter()
        .filter(|n| n.band == band && !n.kind.is_own())
        .collect();
    let mut parts = Vec::new();
    let mut seen: Vec<Kind> = Vec::new();
    for n in &of_band {
        let family = n.kind.family();
        if seen.contains(&family) {
            continue;
        }
        seen.push(family);
        let members: Vec<&&Need> = of_band
            .iter()
            .filter(|m| m.kind.family() == family)
            .collect();
        let n: usize = members.iter().map(|m| m.count).sum();
        let (one, many, _) = family.words();
        let noun = if n == 1 { one } else { many };
        // The qualifier ("down", "stuck") only when it is true of every one of them.
        let qualifier = members
            .first()
            .map(|m| m.kind.words().2)
            .filter(|q| !q.is_empty() && members.iter().all(|m| m.kind.words().2 == *q));
        let n = thousands(n as u64);
        parts.push(match qualifier {
            Some(q) => format!("{n} {noun} {q}"),
            None => format!("{n} {noun}"),
        });
    }
    let mut words = parts.join(" · ");
    if band == Band::Amber && !words.is_empty() {
        words.push_str(" to watch");
    }
    if needs.iter().any(|n| n.kind == Kind::BlindSpot) {
        words = if words.is_empty() {
            BLIND_SPOT_WHAT.to_string()
        } else {
            format!("{BLIND_SPOT_WHAT} · {words}")
        };
    }
    // fleetdash's own troubles are said whatever else is red: a failing alert channel pages
    // nobody, and a state file set aside lost what it held.
    for kind in Kind::OWN {
        let n = needs.iter().filter(|n| n.kind == kind).count();
        if n > 0 {
            let (one, many, qualifier) = kind.words();
            let noun = if n == 1 { one } else { many };
            if !words.is_empty() {
                words.push_str(" · ");
            }
            words.push_str(&format!("{n} {noun} {qualifier}"));
        }
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alerts::key;
    use crate::glance::fixtures::*;
    use crate::probe::Probe;
    use crate::snapshot::{Board, SectionMeta};

    #[test]
    fn needs_you_names_every_red_item_then_every_amber_one_with_a_few_words() {
        let g = at(&fleet(), 0);
        let lines: Vec<String> = g
            .needs
            .iter()
            .map(|n| {
                format!(
                    "{} {} · {}{}",
                    n.band.icon(),
                    n.what,
                    n.reason,
                    n.since
                        .as_ref()
                        .map(|s| format!(" · {s}"))
                        .unwrap_or_default()
                )
            })
            .collect();
        assert_eq!(
            lines,
            [
                "✖ agent lyra · down: connection refused",
                "✖ agent vega · its card lists no skills: it cannot be given work",
                "✖ task on min · no reply for 1 min · since 19:19",
                "✖ board daily-operation · projection refused: daily-operation.kanban has no…",
                "✖ card Job t_crash · crashed: the worker process died · since 19:12",
                "✖ card Job t_slow · timed out: the worker was killed after… · since 19:13",
                "✖ host prod · service hermes-gateway failed · cron db-dump down",
                "▲ agent juno · no exchange for 3 h · since 16:50",
                "▲ card Job t_blk · blocked: needs input",
            ]
        );
        // Each line leads to its row: the stuck task's to the agent it is stuck on.
        for n in &g.needs {
            assert_eq!(row(&g, &n.anchor).band, n.band, "{}", n.anchor);
        }
        assert_eq!(g.needs[2].anchor, "agent-min");
        // Every element not green has its line: nothing red hides below the fold.
        let not_green = g
            .sections
            .iter()
            .flat_map(|s| &s.groups)
            .flat_map(|g| &g.rows)
            .filter(|r| r.own != Band::Green)
            .count();
        assert_eq!(g.needs.len(), not_green);
    }

    /// Issue 24: most of the fleet's probes failing at once is fleetdash's own blind spot.
    #[test]
    fn fleetdashs_blind_spot_is_judged_by_the_rules_and_leads_the_verdict() {
        let mut s = Snapshot::empty(t0(), rules());
        s.stale = false;
        let mut agents: Vec<_> = (0..10)
            .map(|i| {
                agent(
                    &format!("a{i}"),
                    Band::Red,
                    false,
                    Some("down: connection refused"),
                )
            })
            .collect();
        agents.push(agent("ok", Band::Green, true, None));
        s.agents = Probe::Value(agents);
        let mut hosts = vec![
            host("lab", Band::Red, vec![], vec![]),
            host("prod", Band::Red, vec![], vec![]),
            host("edge", Band::Green, vec![], vec![]),
            host("here", Band::Green, vec![], vec![]),
        ];
        for h in &mut hosts[..2] {
            h.ram_total_gb = Probe::error("connection refused");
            h.disk_free_gb = Probe::error("connection refused");
        }
        // A local host is read without the network: not one of the probes.
        hosts[3].source = "local".into();
        s.systems = Probe::Value(hosts);
        let reach = s.reach(75, 3);
        assert_eq!(
            (
                reach.agents_failed,
                reach.agents,
                reach.hosts_failed,
                reach.hosts
            ),
            (10, 11, 2, 3)
        );
        assert!(reach.blind, "12 of 14 is 86 %");
        assert_eq!(
            reach.words(),
            "10 of 11 agents and 2 of 3 hosts fail at once: this host's network?"
        );
        // At the rule's boundaries: the share, then the count.
        assert!(s.reach(85, 3).blind && !s.reach(86, 3).blind, "12 of 14");
        assert!(s.reach(75, 12).blind && !s.reach(75, 13).blind);

        // The page says it first, in the verdict and in Needs you; the fleet's counts are the
        // fleet's own.
        s.alerts.reach = Some(reach);
        let g = at(&s, 0);
        assert!(
            g.headline
                .starts_with("fleetdash cannot reach the fleet · 10 agents"),
            "{}",
            g.headline
        );
        assert_eq!(
            (g.needs[0].what.as_str(), g.needs[0].reason.as_str()),
            (
                "fleetdash cannot reach the fleet",
                "10 of 11 agents and 2 of 3 hosts fail at once: this host's network?"
            )
        );
        assert_eq!(g.counts, s.verdict());
        s.alerts.reach = Some(s.reach(90, 3));
        let g = at(&s, 0);
        assert!(!g.headline.contains("cannot reach"), "{}", g.headline);
    }

    #[test]
    fn the_verdict_says_what_is_red_in_words_and_the_counts_agree_with_the_snapshot() {
        let s = fleet();
        let g = at(&s, 0);
        assert_eq!(
            g.headline,
            "2 agents · 1 task stuck · 1 board · 2 cards · 1 host"
        );
        assert_eq!(g.counts.sentence(), "7 red · 2 amber · 8 green");
        assert_eq!(g.counts, s.verdict(), "the snapshot's own verdict");
        assert_eq!(g.verdict(true), (Band::Red, g.headline.clone()));
        assert_eq!(g.title(true), "✖ 7 · fleet");

        // Both agents down: the qualifier is true of all of them, so it is said.
        let mut down = s.clone();
        if let Probe::Value(rows) = &mut down.agents {
            rows.retain(|a| a.name != "vega");
        }
        assert!(at(&down, 0).headline.starts_with("1 agent down · "));

        // Nothing red: the amber ones, by kind; nothing at all: all green.
        let mut amber = Snapshot::empty(t0(), rules());
        amber.stale = false;
        amber.agents = Probe::Value(vec![
            agent("juno", Band::Amber, true, Some("quiet")),
            agent("min", Band::Green, true, None),
        ]);
        let g = at(&amber, 0);
        assert_eq!(g.headline, "1 agent to watch");
        assert_eq!(g.title(true), "▲ 1 · fleet");
        if let Probe::Value(rows) = &mut amber.agents {
            rows[0] = agent("juno", Band::Green, true, None);
        }
        let g = at(&amber, 0);
        assert_eq!((g.headline.as_str(), g.band), ("all 2 green", Band::Green));
        assert_eq!(g.title(true), "✔ fleet");
    }

    #[test]
    fn an_untrusted_page_never_reads_green() {
        let mut s = fleet();
        s.agents = Probe::Value(vec![agent("min", Band::Green, true, None)]);
        s.tasks.live = Probe::Value(Vec::new());
        s.tasks.board = Probe::Value(Board {
            columns: Vec::new(),
            cards: Vec::new(),
            sources: Vec::new(),
        });
        s.systems = Probe::Value(Vec::new());
        let g = at(&s, 0);
        assert_eq!(g.band, Band::Green);
        assert_eq!(g.as_of, "19:20", "what a frozen page says it shows");
        assert_eq!(
            g.verdict(false),
            (Band::Red, "stale · last known: all 2 green".into())
        );
        assert_eq!(g.title(false), "✖ stale · fleet");
        // The snapshot itself too old: the glance says so without the page's help.
        let late = at(&s, 601);
        assert!(
            late.stale
                .as_deref()
                .unwrap()
                .starts_with("snapshot is 10 min old")
        );
        assert_eq!(late.verdict(true).0, Band::Red);
    }

    /// Was: a page that could not trust its data froze the glance at the snapshot's moment
    /// yet said "checked 6 s ago" under a banner saying the snapshot is 2 min old.
    #[test]
    fn a_frozen_glance_says_times_of_day_never_ages() {
        let s = queued();
        let live = at(&s, 0);
        let frozen = Glance::frozen(&s, utc());
        for section in &frozen.sections {
            assert_eq!(
                section.checked.as_deref(),
                Some("as of 19:20"),
                "{}",
                section.id
            );
        }
        for words in all_words(&frozen) {
            assert!(!words.contains(" ago"), "{words:?}");
            assert!(!words.starts_with("ago"), "{words:?}");
        }
        assert_eq!(live.sections[0].checked.as_deref(), Some("checked 0 s ago"));
        // The same moments, said as times of day.
        let said = |g: &Glance, anchor: &str, label: &str| {
            row(g, anchor)
                .facts
                .iter()
                .find(|f| f.label == label)
                .unwrap()
                .text
                .clone()
        };
        assert_eq!(said(&live, "queue-q_ok", "last report"), "3 min ago");
        assert_eq!(said(&frozen, "queue-q_ok", "last report"), "at 19:17");
        assert_eq!(said(&live, "agent-min", "last exchange"), "1 min ago");
        assert_eq!(said(&frozen, "agent-min", "last exchange"), "at 19:18");
        assert_eq!(
            row(&frozen, "host-prod").summary,
            "via node_exporter · checked at 19:20"
        );
        // Bands, counts and needs are the glance's at the snapshot's moment.
        assert_eq!(frozen.counts, live.counts);
        assert_eq!(frozen.counts, s.verdict());
        assert_eq!(frozen.as_of, "19:20");
    }

    /// Was: a queue row said "assigned to vega: no ACK yet" and "no ACK for 2 min: nobody
    /// owns it"; an orphaned task's message three times.
    #[test]
    fn no_row_says_a_sentence_twice() {
        let s = queued();
        for g in [
            at(&s, 0),
            at(&s, 60),
            at(&s, 3600),
            Glance::frozen(&s, utc()),
        ] {
            for r in g
                .sections
                .iter()
                .flat_map(|x| &x.groups)
                .flat_map(|x| &x.rows)
            {
                for f in &r.facts {
                    assert_ne!(
                        Some(&f.text),
                        r.reason.as_ref(),
                        "{}: {}",
                        r.anchor,
                        f.label
                    );
                    assert_ne!(f.text, r.summary, "{}: {}", r.anchor, f.label);
                }
                if let Some(reason) = &r.reason
                    && !r.summary.is_empty()
                {
                    assert!(!reason.contains(&r.summary), "{}: {reason}", r.anchor);
                }
            }
        }
    }

    #[test]
    fn every_time_is_in_the_readers_zone_which_is_named_once() {
        let s = queued();
        assert_eq!(at(&s, 0).zone, "UTC");
        let plus_one = FixedOffset::east_opt(3600).unwrap();
        let g = Glance::new(&s, s.generated_at, plus_one);
        assert_eq!(g.zone, "UTC+01:00");
        for words in all_words(&g)
            .iter()
            .chain(all_words(&Glance::frozen(&s, plus_one)).iter())
        {
            assert!(!words.contains("UTC"), "{words:?}");
        }
        assert_eq!(g.as_of, "20:20");
        assert_eq!(row(&g, "queue-q_ok").summary, "owned by sol · ETA 20:45");
        assert_eq!(
            row(&g, "card-ops-t_crash").reason.as_deref(),
            Some("crashed: the worker process died at 20:12")
        );
        let west = Glance::new(&s, s.generated_at, FixedOffset::west_opt(5 * 3600).unwrap());
        assert_eq!(west.zone, "UTC−05:00");
        assert_eq!(west.as_of, "14:20");
        let india = Glance::new(&s, s.generated_at, FixedOffset::east_opt(19_800).unwrap());
        assert_eq!(india.zone, "UTC+05:30");
    }

    #[test]
    fn a_section_that_failed_is_a_red_need_and_one_not_configured_is_quiet() {
        let mut s = fleet();
        s.systems = Probe::error("not collected");
        s.backups = Probe::error("not collected");
        s.sections.backups.configured = false;
        let g = at(&s, 0);
        let systems = g.sections.iter().find(|x| x.id == "systems").unwrap();
        assert_eq!(
            systems.problem,
            Some(Problem {
                band: Some(Band::Red),
                text: "error: not collected".into(),
                held: None,
            })
        );
        assert!(
            g.needs
                .iter()
                .any(|n| n.anchor == "systems" && n.what == "Systems")
        );
        let backups = g.sections.iter().find(|x| x.id == "backups").unwrap();
        assert_eq!(backups.problem.as_ref().unwrap().band, None);
        assert!(!g.needs.iter().any(|n| n.anchor == "backups"));
        assert_eq!(g.counts, s.verdict());
    }

    #[test]
    fn every_kind_of_element_carries_its_hold_in_its_row_and_its_needs_you_line() {
        let mut s = fleet();
        s.sections.queue = SectionMeta {
            configured: true,
            checked_at: Some(t0()),
            duration_ms: Some(1),
            stale: false,
        };
        // Nobody ACKed it in 30 min: red.
        s.tasks.queue = Probe::Value(vec![queue_task("q_late", 30)]);
        if let Probe::Value(b) = &mut s.backups {
            b.band = Band::Amber;
            b.reason = Some("latest backup 30 h old".into());
        }
        s.alerts.configured = true;
        s.alerts.held = vec![
            hold(key::agent("lyra"), 10, "rebuild"),
            hold(key::queue_task("q_late"), 20, "holiday"),
            hold(key::live_task("min", "t_stuck"), 30, ""),
            hold(key::board("daily-operation"), 40, "vault move"),
            hold(key::card("ops", "t_crash"), 50, "known"),
            hold(key::BACKUPS.into(), 60, "drive swap"),
        ];
        let g = at(&s, 0);
        for (anchor, words) in [
            ("agent-lyra", "silenced until 19:30 (rebuild)"),
            ("queue-q_late", "silenced until 19:40 (holiday)"),
            ("task-min-t_stuck", "silenced until 19:50"),
            ("board-daily-operation", "silenced until 20:00 (vault move)"),
            ("card-ops-t_crash", "silenced until 20:10 (known)"),
            ("backup-gdrive", "silenced until 20:20 (drive swap)"),
        ] {
            let r = row(&g, anchor);
            assert_ne!(r.band, Band::Green, "{anchor}");
            assert_eq!(r.held.as_deref(), Some(words), "{anchor}");
            let need = g
                .needs
                .iter()
                .find(|n| n.stands_for.iter().any(|a| a == anchor))
                .unwrap();
            assert_eq!((need.band, need.held.as_deref()), (r.band, Some(words)));
        }
        // Nothing else is marked.
        let marked = g
            .sections
            .iter()
            .flat_map(|x| &x.groups)
            .flat_map(|x| &x.rows)
            .filter(|r| r.held.is_some())
            .count();
        assert_eq!(marked, 6);
        assert_eq!(g.counts, s.verdict());

        // A section that failed as a whole, held by its key.
        s.systems = Probe::error("not collected");
        s.alerts.held = vec![hold(key::section("systems"), 40, "")];
        let g = at(&s, 0);
        let systems = g.sections.iter().find(|x| x.id == "systems").unwrap();
        assert_eq!(
            systems.problem.as_ref().unwrap().held.as_deref(),
            Some("silenced until 20:00")
        );
        let need = g.needs.iter().find(|n| n.anchor == "systems").unwrap();
        assert_eq!(need.held.as_deref(), Some("silenced until 20:00"));
    }

    /// An ack stops reminders, nothing else: the acked agent keeps its band, its needs-you line
    /// and its count, its row says when it was acked in the reader's zone (two hours east of
    /// UTC here), after a silence when it has both; an ack listed for a green element is not
    /// said.
    #[test]
    fn an_acked_element_keeps_its_band_and_line_and_says_acked_in_the_readers_zone() {
        let mut s = fleet();
        s.alerts.configured = true;
        let acked = |key: String| crate::alerts::Acked {
            key,
            at: t0() - chrono::Duration::minutes(18),
            via: "cli".into(),
            checked_at: t0(),
        };
        s.alerts.acked = vec![acked(key::agent("lyra")), acked(key::agent("min"))];
        s.alerts.held = vec![hold(key::BACKUPS.into(), 60, "drive swap")];
        s.alerts.acked.push(acked(key::BACKUPS.into()));
        if let Probe::Value(b) = &mut s.backups {
            b.band = Band::Amber;
            b.reason = Some("latest backup 30 h old".into());
        }
        let east = FixedOffset::east_opt(2 * 3600).unwrap();
        let g = Glance::new(&s, t0(), east);
        let lyra = row(&g, "agent-lyra");
        assert_eq!(
            (lyra.band, lyra.held.as_deref()),
            (Band::Red, Some("acked 21:02"))
        );
        let need = g.needs.iter().find(|n| n.anchor == "agent-lyra").unwrap();
        assert_eq!(
            (need.band, need.held.as_deref()),
            (Band::Red, Some("acked 21:02"))
        );
        assert_eq!(
            row(&g, "backup-gdrive").held.as_deref(),
            Some("silenced until 22:20 (drive swap) · acked 21:02")
        );
        // min carries its stuck task (red on the page) but is itself green: not acked.
        assert_eq!(row(&g, "agent-min").own, Band::Green);
        assert_eq!(row(&g, "agent-min").held, None);
        assert_eq!(g.counts, s.verdict());
        let mut unacked = s.clone();
        unacked.alerts.acked.clear();
        let plain = Glance::new(&unacked, t0(), east);
        assert_eq!(g.needs.len(), plain.needs.len());
        assert_eq!((g.band, &g.headline), (plain.band, &plain.headline));
    }

    /// Issue 44: an agent declared flaky still shows and still counts; its row and its line
    /// say "declared flaky: REASON (until DAY)", the day as declared, whatever the reader's
    /// zone; its line comes after the undeclared red lines, the surprises, and before amber.
    #[test]
    fn a_declared_flaky_element_is_said_as_declared_and_read_after_the_surprises() {
        let mut s = fleet();
        let plain = at(&s, 0);
        let reds = plain.needs.iter().filter(|n| n.band == Band::Red).count();
        assert!(reds > 1, "the fixture has other reds: {:#?}", plain.needs);
        assert_eq!(plain.needs[0].anchor, "agent-lyra", "{:#?}", plain.needs);
        s.alerts.configured = true;
        let declared = crate::alerts::Held {
            key: key::agent("lyra"),
            until: Some(
                chrono::DateTime::parse_from_rfc3339("2027-02-01T00:00:00Z")
                    .unwrap()
                    .into(),
            ),
            // As the collector words it (`config::flaky`): the declared day in the reason.
            reason: "laptop tunnel drops at night (until 31 Jan)".into(),
            flaky: true,
            checked_at: t0(),
        };
        s.alerts.held = vec![declared];
        let words = "declared flaky: laptop tunnel drops at night (until 31 Jan)";
        let east = FixedOffset::east_opt(9 * 3600).unwrap();
        for g in [at(&s, 0), Glance::new(&s, t0(), east)] {
            let lyra = row(&g, "agent-lyra");
            assert_eq!((lyra.band, lyra.held.as_deref()), (Band::Red, Some(words)));
            let i = g
                .needs
                .iter()
                .position(|n| n.anchor == "agent-lyra")
                .unwrap();
            assert_eq!(i, reds - 1, "the last red line: {:#?}", g.needs);
            assert_eq!(g.needs[i].held.as_deref(), Some(words));
            assert_eq!(g.needs.len(), plain.needs.len());
            assert_eq!((g.counts, &g.headline), (plain.counts, &plain.headline));
        }
        // Without an end date, none is said.
        s.alerts.held[0].until = None;
        s.alerts.held[0].reason = "laptop tunnel drops at night".into();
        assert_eq!(
            row(&at(&s, 0), "agent-lyra").held.as_deref(),
            Some("declared flaky: laptop tunnel drops at night")
        );
    }

    #[test]
    fn a_hold_on_a_green_element_is_not_said() {
        let mut s = fleet();
        s.alerts.configured = true;
        s.alerts.held = vec![
            hold(key::agent("min"), 40, "quiet"),
            hold(key::host("LAB"), 40, "disk swap"),
            hold(key::host_check("LAB", "service", "hermes-gateway"), 40, ""),
            hold(key::host_check("prod", "service", "nginx"), 40, ""),
            hold(key::card("ops", "t_todo"), 40, ""),
            hold(key::agent("nobody"), 40, "no such element"),
        ];
        let g = at(&s, 0);
        assert_eq!(row(&g, "agent-min").held, None);
        let lab = row(&g, "host-LAB");
        assert_eq!(lab.held, None);
        assert!(
            lab.checks
                .iter()
                .flat_map(|c| &c.items)
                .all(|i| i.held.is_none())
        );
        let nginx = &row(&g, "host-prod").checks[0].items[0];
        assert_eq!((nginx.band, nginx.held.as_ref()), (Band::Green, None));
        assert_eq!(row(&g, "card-ops-t_todo").held, None);
        assert!(g.needs.iter().all(|n| n.held.is_none()));
        assert_eq!(
            g,
            at(
                &{
                    let mut p = s.clone();
                    p.alerts.held.clear();
                    p
                },
                0
            )
        );
    }
}

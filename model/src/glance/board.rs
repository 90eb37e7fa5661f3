//! The Board panel: one row per configured board (its read and its vault projection), then
//! the cards column by column in board order, red first; finished green cards fold into a
//! count, and what a capped listing leaves out is said and counted, never dropped.

use chrono::{DateTime, Utc};

use super::parts::{
    Words, anchor, code, fact, group, join, order, plain, plain_reason, problem, red_first,
    section, shown, without_paths,
};
use super::types::{Group, Kind, Need, Row, Section};
use crate::alerts::key;
use crate::band::Band;
use crate::probe::Probe;
use crate::snapshot::{Board, BoardSource, Card, Snapshot};
use crate::words::{human_age, thousands};

/// Finished board columns: their green cards fold into a count.
const FINISHED_COLUMNS: [&str; 2] = ["done", "archived"];

impl Card {
    /// The card's band; red as well when the card is stale.
    pub fn judged(&self) -> Band {
        if self.stale { Band::Red } else { self.band }
    }
}

pub(super) fn board(s: &Snapshot, w: &Words) -> Section {
    let meta = &s.sections.board;
    let mut view = section("board", "Board", meta, w);
    view.problem = problem(&s.tasks.board, meta, "tasks.board", w);
    if let Probe::Value(b) = &s.tasks.board {
        view.groups = board_groups(b, w);
        view.note = left_out_note(b);
        view.unlisted = b.sources.iter().flat_map(|src| unlisted(src, w)).collect();
    }
    view
}

/// The cards of all boards that the snapshot does not list, per column: in board order, then
/// any column only a source names.
fn left_out_by_column(b: &Board) -> Vec<(&str, u64)> {
    let mut out: Vec<(&str, u64)> = b.columns.iter().map(|c| (c.as_str(), 0)).collect();
    for c in b.sources.iter().flat_map(|s| &s.columns) {
        match out.iter_mut().find(|(name, _)| *name == c.column) {
            Some((_, n)) => *n += u64::from(c.left_out),
            None => out.push((&c.column, u64::from(c.left_out))),
        }
    }
    out
}

/// What the listing leaves out, said where the Board panel starts, so a capped list never
/// reads as a complete one: "188 of 10,000 cards listed (...); and 9,812 more: done 9,100,
/// todo 412"; and, when the cards needing attention alone passed the cap, how many of them
/// are not listed. `None` when every card is listed.
fn left_out_note(b: &Board) -> Option<String> {
    let total: u64 = b.sources.iter().map(BoardSource::left_out).sum();
    if total == 0 {
        return None;
    }
    let columns: Vec<(&str, u64)> = left_out_by_column(b)
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .collect();
    // Most first, board order among equals.
    let keys: Vec<(u64, String)> = columns
        .iter()
        .map(|(_, n)| (u64::MAX - n, String::new()))
        .collect();
    let per_column: Vec<String> = order(&keys)
        .into_iter()
        .map(|i| format!("{} {}", columns[i].0, thousands(columns[i].1)))
        .collect();
    let listed = b.cards.len() as u64;
    let mut note = format!(
        "{} of {} cards listed (those that need attention or just recovered, then the \
         newest of each open column); and {} more: {}",
        thousands(listed),
        thousands(listed + total),
        thousands(total),
        per_column.join(", ")
    );
    let (red, amber) = b.sources.iter().fold((0u64, 0u64), |(r, a), s| {
        (
            r + u64::from(s.attention_left_out.red),
            a + u64::from(s.attention_left_out.amber),
        )
    });
    if red + amber > 0 {
        note.push_str(&format!(
            ". {} of those need attention ({}): more than the listing holds, so the worst, \
             then the newest, are listed",
            thousands(red + amber),
            bands_in_words(red, amber)
        ));
    }
    Some(note)
}

/// "3 red, 12 amber", leaving out a band with none.
fn bands_in_words(red: u64, amber: u64) -> String {
    let mut parts = Vec::new();
    if red > 0 {
        parts.push(format!("{} red", thousands(red)));
    }
    if amber > 0 {
        parts.push(format!("{} amber", thousands(amber)));
    }
    parts.join(", ")
}

/// One board's unlisted cards as lots for the verdict: its red and amber ones (each a
/// needs-you line leading to the board's row, held as their element `board:<name>/unlisted`
/// is), and the green rest.
fn unlisted(src: &BoardSource, w: &Words) -> Vec<Need> {
    let lot = |band: Band, n: u64, reason: String| Need {
        anchor: anchor("board", &src.name),
        held: w.held(&key::unlisted_cards(&src.name), band),
        count: n as usize,
        ..Need::new(band, Kind::Card, format!("board {}", src.name), reason)
    };
    let (red, amber) = (
        u64::from(src.attention_left_out.red),
        u64::from(src.attention_left_out.amber),
    );
    let green = src.left_out().saturating_sub(red + amber);
    let mut out = Vec::new();
    for (band, n) in [(Band::Red, red), (Band::Amber, amber)] {
        if n > 0 {
            let cards = if n == 1 { "card" } else { "cards" };
            let reason = format!(
                "{} more {} {cards} not listed (over the cap)",
                thousands(n),
                band.class()
            );
            out.push(lot(band, n, reason));
        }
    }
    if green > 0 {
        out.push(lot(Band::Green, green, String::new()));
    }
    out
}

fn board_groups(b: &Board, w: &Words) -> Vec<Group> {
    let mut groups = Vec::new();
    let mut sources = group(red_first(
        b.sources.iter().map(|src| source_row(src, w)).collect(),
    ));
    sources.title = Some("boards".into());
    groups.push(sources);
    let mut columns = left_out_by_column(b);
    // Cards in a column the board does not list are never dropped.
    for c in &b.cards {
        if !columns.iter().any(|(name, _)| *name == c.status) {
            columns.push((&c.status, 0));
        }
    }
    for (column, left_out) in columns {
        let in_column: Vec<&Card> = b.cards.iter().filter(|c| c.status == column).collect();
        let finished = FINISHED_COLUMNS.contains(&column);
        let (listed, folded): (Vec<&Card>, Vec<&Card>) = in_column
            .into_iter()
            .partition(|c| !finished || c.judged() != Band::Green);
        let mut g = group(red_first(
            listed.into_iter().map(|c| card_row(c, w)).collect(),
        ));
        g.title = Some(column.to_string());
        // The listed ones are counted here; those left out by the board's source.
        g.folded_n = folded.len();
        // A finished column's green cards fold into one count, listed or not; an open
        // column says what it does not list.
        let finished_n = folded.len() as u64 + if finished { left_out } else { 0 };
        g.folded = match (finished_n, left_out) {
            (0, 0) => None,
            (1, _) if finished => Some("1 card, finished".to_string()),
            (n, _) if finished => Some(format!("{} cards, finished", thousands(n))),
            (_, n) => Some(format!("and {} more, not listed", thousands(n))),
        };
        if g.rows.is_empty() && g.folded.is_none() {
            g.empty = Some("no cards");
        }
        groups.push(g);
    }
    groups
}

fn source_row(src: &BoardSource, w: &Words) -> Row {
    let band = src.band();
    let cards = shown(&src.cards, |n| {
        format!("{} cards", thousands(u64::from(*n)))
    });
    let projection = shown(&src.projection, Clone::clone);
    let (short_projection, mut paths) = without_paths(&projection.0);
    let mut reason_parts = Vec::new();
    if let Some(r) = &src.reason {
        reason_parts.push(r.clone());
    }
    if let Probe::Error(e) = &src.cards {
        reason_parts.push(format!("cannot read: {e}"));
    }
    if src.projection.is_error() {
        reason_parts.push(format!(
            "projection {}",
            short_projection.trim_start_matches("error: ")
        ));
    }
    if src.stale && reason_parts.is_empty() {
        reason_parts.push("not read within the staleness limit".into());
    }
    let reason = (band != Band::Green && !reason_parts.is_empty()).then(|| {
        let (short, p) = without_paths(&reason_parts.join("; "));
        paths.extend(p);
        short
    });
    let (reason, cut) = plain_reason(reason);
    let r = reason.as_deref();
    let mut facts = vec![fact("cards", cards.clone(), r)];
    facts.extend(cut);
    if !src.columns.is_empty() {
        let per_column: Vec<String> = src
            .columns
            .iter()
            .map(|c| format!("{} {}", c.column, thousands(u64::from(c.cards))))
            .collect();
        facts.push(fact("columns", (per_column.join(", "), None), r));
    }
    let left_out = src.left_out();
    if left_out > 0 {
        let per_column: Vec<String> = src
            .columns
            .iter()
            .filter(|c| c.left_out > 0)
            .map(|c| format!("{} {}", c.column, thousands(u64::from(c.left_out))))
            .collect();
        let a = src.attention_left_out;
        let attention = if a.is_none() {
            String::new()
        } else {
            format!(
                "; needing attention: {}",
                bands_in_words(u64::from(a.red), u64::from(a.amber))
            )
        };
        facts.push(fact(
            "not listed",
            (
                format!(
                    "{}: {}{attention}",
                    thousands(left_out),
                    per_column.join(", ")
                ),
                None,
            ),
            r,
        ));
    }
    if !src.projection.is_error() {
        facts.push(fact("projection", projection.clone(), r));
    }
    paths.dedup();
    if !paths.is_empty() {
        facts.push(fact("path", (paths.join(" "), None), None));
    }
    Row {
        kind: (band == Band::Red).then_some(Kind::Board),
        what: format!("board {}", src.name),
        since: None,
        anchor: anchor("board", &src.name),
        band,
        badge: band.word(),
        title: src.name.clone(),
        summary: join(&[
            src.plane.as_deref().unwrap_or(""),
            &cards.0,
            &format!(
                "projection {}",
                match &src.projection {
                    Probe::Value(v) => v.as_str(),
                    Probe::Unknown => "none",
                    Probe::Error(e) => e.split(':').next().unwrap_or("failed"),
                }
            ),
        ]),
        code: code(&src.status).filter(|_| reason.is_some()),
        reason,
        held: w.held(&key::board(&src.name), band),
        facts,
        checks: Vec::new(),
        strip: None,
        own: band,
    }
}

/// A condition's text with its UTC stamp (" at 2026-11-30 19:12 UTC", as the board collector
/// writes it) said in the reader's zone, and that time.
fn stamped(text: &str, w: &Words) -> (String, Option<DateTime<Utc>>) {
    const STAMP: usize = " at 2026-11-30 19:12 UTC".len();
    let Some(start) = text.find(" at ") else {
        return (text.to_string(), None);
    };
    let stamp = text[start..].get(..STAMP).unwrap_or("");
    let digits = |from: usize, len: usize| -> Option<u32> {
        let part = stamp.get(from..from + len)?;
        part.bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| part.parse().ok())?
    };
    let at = (|| {
        if !stamp.ends_with(" UTC") {
            return None;
        }
        let date =
            chrono::NaiveDate::from_ymd_opt(digits(4, 4)? as i32, digits(9, 2)?, digits(12, 2)?)?;
        Some(
            date.and_hms_opt(digits(15, 2)?, digits(18, 2)?, 0)?
                .and_utc(),
        )
    })();
    match at {
        Some(at) => (
            format!(
                "{} at {}{}",
                &text[..start],
                w.time(at),
                &text[start + STAMP..]
            ),
            Some(at),
        ),
        None => (text.to_string(), None),
    }
}

fn card_row(c: &Card, w: &Words) -> Row {
    let band = c.judged();
    let mut since = None;
    let reason = (band != Band::Green).then(|| {
        if c.conditions.is_empty() {
            if c.stale {
                "not read within the staleness limit".to_string()
            } else {
                band.word().to_string()
            }
        } else {
            let said: Vec<String> = c
                .conditions
                .iter()
                .map(|x| {
                    let (text, at) = stamped(x, w);
                    since = since.or(at);
                    text
                })
                .collect();
            said.join("; ")
        }
    });
    let (reason, cut) = plain_reason(reason);
    let r = reason.as_deref();
    let owner = c.assignee.as_deref().unwrap_or("unassigned");
    let age = human_age(w.age(c.checked_at, c.age_s));
    let mut facts = vec![fact("id", (format!("{} {}", c.board, c.id), None), r)];
    if let Some(k) = c.block_kind.as_deref().map(|k| plain(k).0)
        && !r.is_some_and(|r| r.contains(&k))
    {
        facts.push(fact("blocked", (k, None), r));
    }
    if band == Band::Green && !c.conditions.is_empty() {
        facts.push(fact("events", (plain(&c.conditions.join("; ")).0, None), r));
    }
    facts.extend(cut);
    if let Some(p) = c.priority {
        facts.push(fact("priority", (p.to_string(), None), r));
    }
    if let Some(at) = c.latest_activity_at {
        facts.push(fact("latest activity", (w.time(at), None), r));
    }
    Row {
        kind: Some(Kind::Card),
        what: format!("card {}", c.title),
        since,
        anchor: anchor("card", &format!("{}-{}", c.board, c.id)),
        band,
        badge: band.word(),
        title: c.title.clone(),
        summary: join(&[&c.board, owner, &format!("{age} old")]),
        reason,
        held: w.held(&key::card(&c.board, &c.id), band),
        code: None,
        facts,
        checks: Vec::new(),
        strip: None,
        own: band,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::glance::Glance;
    use crate::glance::fixtures::*;
    use crate::snapshot::SectionMeta;
    use crate::summary::Verdict;
    use chrono::FixedOffset;

    #[test]
    fn crashed_and_timed_out_cards_are_red_with_their_conditions_in_the_readers_zone() {
        let plus_one = FixedOffset::east_opt(3600).unwrap();
        let s = fleet();
        let g = Glance::new(&s, s.generated_at, plus_one);
        let crash = row(&g, "card-ops-t_crash");
        assert_eq!(crash.band, Band::Red);
        assert_eq!(
            crash.reason.as_deref(),
            Some("crashed: the worker process died at 20:12")
        );
        let slow = row(&g, "card-ops-t_slow");
        assert_eq!(
            slow.reason.as_deref(),
            Some("timed out: the worker was killed after 1 h 30 min (limit 1 h) at 20:13")
        );
        let need = g.needs.iter().find(|n| n.anchor == crash.anchor).unwrap();
        assert_eq!(need.since.as_deref(), Some("since 20:12"));
        // A blocked card's kind is said once, by its condition.
        let blocked = row(&g, "card-ops-t_blk");
        assert_eq!(blocked.reason.as_deref(), Some("blocked: needs input"));
        assert!(blocked.facts.iter().all(|f| f.label != "blocked"));
        // A stale card is red whatever its band said.
        let mut stale = s.clone();
        if let Probe::Value(b) = &mut stale.tasks.board {
            b.cards[0].stale = true;
        }
        assert_eq!(row(&at(&stale, 0), "card-ops-t_todo").band, Band::Red);
        assert_eq!(at(&stale, 0).counts, stale.verdict());
    }

    #[test]
    fn finished_green_cards_fold_into_a_count_and_still_count_green() {
        let g = at(&fleet(), 0);
        let board = g.sections.iter().find(|s| s.id == "board").unwrap();
        let done = board
            .groups
            .iter()
            .find(|g| g.title.as_deref() == Some("done"))
            .unwrap();
        assert!(done.rows.is_empty());
        assert_eq!(done.folded.as_deref(), Some("2 cards, finished"));
        let titles: Vec<Option<&str>> = board.groups.iter().map(|g| g.title.as_deref()).collect();
        assert_eq!(
            titles,
            [
                Some("boards"),
                Some("todo"),
                Some("running"),
                Some("blocked"),
                Some("done")
            ]
        );
        // A red card in a finished column is never folded away.
        let mut s = fleet();
        if let Probe::Value(b) = &mut s.tasks.board {
            b.cards[4].band = Band::Red;
        }
        let g = at(&s, 0);
        assert_eq!(row(&g, "card-ops-t_d1").band, Band::Red);
    }

    /// A board of 10,000 cards as the collector lists it under the cap: five cards listed,
    /// every card counted per column.
    fn capped_board() -> Snapshot {
        let mut s = Snapshot::empty(t0(), rules());
        s.stale = false;
        s.sections.board = SectionMeta {
            configured: true,
            checked_at: Some(t0()),
            duration_ms: Some(800),
            stale: false,
        };
        let count = |column: &str, cards: u32, left_out: u32| crate::ColumnCount {
            column: column.into(),
            cards,
            left_out,
        };
        let mut ops = source("ops", Probe::Value("unchanged".into()));
        ops.cards = Probe::Value(10_000);
        ops.columns = vec![
            count("todo", 412, 410),
            count("running", 300, 299),
            count("blocked", 1, 0),
            count("done", 9_287, 9_286),
        ];
        s.tasks.board = Probe::Value(Board {
            columns: ["todo", "running", "blocked", "review", "done"]
                .map(String::from)
                .to_vec(),
            cards: vec![
                card("t_a", "todo", Band::Green, &[]),
                card("t_b", "todo", Band::Green, &[]),
                card(
                    "t_crash",
                    "running",
                    Band::Red,
                    &["crashed: the worker process died"],
                ),
                card("t_blk", "blocked", Band::Amber, &["blocked: needs_input"]),
                card("t_d", "done", Band::Green, &[]),
            ],
            sources: vec![ops],
        });
        s
    }

    /// Was: the glance counted and said only the cards listed, so a capped list read as a
    /// complete one and the verdict missed 9,995 cards.
    #[test]
    fn a_capped_board_says_what_it_does_not_list_and_counts_every_card() {
        let s = capped_board();
        let g = at(&s, 0);
        let board = g.sections.iter().find(|s| s.id == "board").unwrap();
        assert_eq!(
            board.note.as_deref(),
            Some(
                "5 of 10,000 cards listed (those that need attention or just recovered, then \
                 the newest of each open column); and 9,995 more: done 9,286, todo 410, \
                 running 299"
            )
        );
        let folded = |title: &str| {
            let g = board
                .groups
                .iter()
                .find(|g| g.title.as_deref() == Some(title))
                .unwrap();
            (g.rows.len(), g.folded.as_deref(), g.empty)
        };
        assert_eq!(folded("todo"), (2, Some("and 410 more, not listed"), None));
        assert_eq!(
            folded("running"),
            (1, Some("and 299 more, not listed"), None)
        );
        assert_eq!(folded("blocked"), (1, None, None));
        assert_eq!(folded("review"), (0, None, Some("no cards")));
        assert_eq!(folded("done"), (0, Some("9,287 cards, finished"), None));
        // Every card counted: the two flagged ones, and 9,998 green of which 9,995 unlisted.
        assert_eq!(
            g.counts,
            Verdict {
                red: 1,
                amber: 1,
                green: 9_998
            }
        );
        assert_eq!(g.counts, s.verdict());
        assert_eq!(g.counts.sentence(), "1 red · 1 amber · 9,998 green");
        assert_eq!(g.headline, "1 card");
        let src = row(&g, "board-ops");
        assert_eq!(src.summary, "Docs · 10,000 cards · projection unchanged");
        let fact = |label: &str| {
            src.facts
                .iter()
                .find(|f| f.label == label)
                .unwrap()
                .text
                .clone()
        };
        assert_eq!(
            fact("columns"),
            "todo 412, running 300, blocked 1, done 9,287"
        );
        assert_eq!(
            fact("not listed"),
            "9,995: todo 410, running 299, done 9,286"
        );
        // All green, unlisted cards included: "all 10,000 green".
        let mut calm = s.clone();
        if let Probe::Value(b) = &mut calm.tasks.board {
            b.cards.retain(|c| c.band == Band::Green);
            b.sources[0].columns[1].left_out = 300;
            b.sources[0].columns[2].left_out = 1;
        }
        let g = at(&calm, 0);
        assert_eq!(g.headline, "all 10,000 green");
        assert_eq!(g.counts, calm.verdict());
    }

    /// When the cards needing attention alone pass the cap, those not listed are counted in
    /// the verdict and need you, one line per band, each leading to the board's row.
    #[test]
    fn cards_needing_attention_beyond_the_cap_are_counted_and_need_you() {
        let mut s = capped_board();
        if let Probe::Value(b) = &mut s.tasks.board {
            b.sources[0].attention_left_out = crate::LeftOut { red: 3, amber: 40 };
        }
        let g = at(&s, 0);
        assert_eq!(
            g.counts,
            Verdict {
                red: 4,
                amber: 41,
                green: 9_955
            }
        );
        assert_eq!(g.counts, s.verdict());
        assert_eq!(g.headline, "4 cards");
        let lines: Vec<(Band, &str, &str, &str)> = g
            .needs
            .iter()
            .map(|n| {
                (
                    n.band,
                    n.what.as_str(),
                    n.reason.as_str(),
                    n.anchor.as_str(),
                )
            })
            .collect();
        assert_eq!(
            lines,
            [
                (
                    Band::Red,
                    "card Job t_crash",
                    "crashed: the worker process died",
                    "card-ops-t_crash"
                ),
                (
                    Band::Red,
                    "board ops",
                    "3 more red cards not listed (over the cap)",
                    "board-ops"
                ),
                (
                    Band::Amber,
                    "card Job t_blk",
                    "blocked: needs input",
                    "card-ops-t_blk"
                ),
                (
                    Band::Amber,
                    "board ops",
                    "40 more amber cards not listed (over the cap)",
                    "board-ops"
                ),
            ]
        );
        let board = g.sections.iter().find(|s| s.id == "board").unwrap();
        assert!(
            board.note.as_deref().unwrap().ends_with(
                ". 43 of those need attention (3 red, 40 amber): more than the listing holds, \
                 so the worst, then the newest, are listed"
            ),
            "{:?}",
            board.note
        );
    }

    #[test]
    fn a_refused_projection_is_red_with_its_path_behind_the_tap() {
        let g = at(&fleet(), 0);
        let refused = row(&g, "board-daily-operation");
        assert_eq!(refused.band, Band::Red);
        assert_eq!(
            refused.reason.as_deref(),
            Some(
                "projection refused: daily-operation.kanban has no fleetdash marker (hand-edited?); left untouched"
            )
        );
        assert_eq!(refused.summary, "Docs · 4 cards · projection refused");
        let path = refused.facts.iter().find(|f| f.label == "path").unwrap();
        assert_eq!(path.text, "/srv/vault/Docs/Kanban/daily-operation.kanban");
        // A green source is listed but does not count: its cards do.
        assert_eq!(row(&g, "board-research").band, Band::Green);
    }
}

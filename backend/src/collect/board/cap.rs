//! What `status.json` lists of the boards: a phone polls it every 30 s, so it stays small at
//! any board size (a card costs ~450 B; 10,000 cards were 4.4 MiB), and what it leaves out is
//! counted, never silently dropped.
//!
//! Per board, under the rules' `board.cards_max`, in this order:
//! 1. the cards that need attention (amber or red: blocked, a worker failure, the host
//!    boundary), worst band first, then the newest; when they alone pass the cap, the rest of
//!    them is counted by band ([`LeftOut`]), so the verdict still counts them and the page says
//!    so;
//! 2. the cards the previous snapshot listed amber or red that are green now: listed once more,
//!    so their recovery is a band change (the transitions log, the alerts' Recovered) rather
//!    than a disappearance;
//! 3. the newest `board.newest_per_column` cards of each open column (not done, not archived),
//!    the newest of every column first.
//!
//! Every card is counted per column ([`ColumnCount`]), with how many are not listed. The cap is
//! pure: the previous listing comes from the snapshot on disk, the rules from the rules file.
//! "Newest" is by creation (`age_s`), so a quiet board lists the same cards pass after pass,
//! and a green card moving out of the newest few leaves without a transition (it was green).
//! The vault's `.kanban` projections are written from the full read, never from this listing.

use std::collections::HashSet;

use fleetdash_model::{Band, Board, Card, ColumnCount, LeftOut, Probe};

use super::events;
use crate::config::Rules;

/// The rules' `board` group, as the listing applies it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cap {
    pub cards_max: usize,
    pub newest_per_column: usize,
}

impl Cap {
    pub fn of(rules: &Rules) -> Cap {
        let n = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
        Cap {
            cards_max: n(rules.board.cards_max.count),
            newest_per_column: n(rules.board.newest_per_column.count),
        }
    }

    /// No cap at all (a board listed whole), for tests of what the listing does not touch.
    pub const NONE: Cap = Cap {
        cards_max: usize::MAX,
        newest_per_column: usize::MAX,
    };
}

/// `full` (every card of every board, in the collector's order) as the snapshot lists it: the
/// listed cards in the same order, and on each read source its column counts and what needs
/// attention yet is not listed. `previous` is the board part of the snapshot on disk.
pub fn list(mut full: Board, previous: Option<&Board>, cap: Cap) -> Board {
    let was_flagged: HashSet<(&str, &str)> = previous
        .map(|p| {
            p.cards
                .iter()
                .filter(|c| c.judged() != Band::Green)
                .map(|c| (c.board.as_str(), c.id.as_str()))
                .collect()
        })
        .unwrap_or_default();
    let mut keep = vec![false; full.cards.len()];
    for source in &mut full.sources {
        if !matches!(source.cards, Probe::Value(_)) {
            continue;
        }
        let mine: Vec<usize> = (0..full.cards.len())
            .filter(|&i| full.cards[i].board == source.name)
            .collect();
        let chosen = choose(&full.cards, &mine, &was_flagged, cap);
        let mut left_out = LeftOut::default();
        for &i in &mine {
            if chosen.contains(&i) {
                keep[i] = true;
                continue;
            }
            match full.cards[i].judged() {
                Band::Red => left_out.red += 1,
                Band::Amber => left_out.amber += 1,
                Band::Green => {}
            }
        }
        source.attention_left_out = left_out;
        source.columns = full
            .columns
            .iter()
            .filter_map(|column| {
                let (cards, listed) = mine
                    .iter()
                    .filter(|&&i| full.cards[i].status == *column)
                    .fold((0u32, 0u32), |(n, l), &i| (n + 1, l + u32::from(keep[i])));
                (cards > 0).then(|| ColumnCount {
                    column: column.clone(),
                    cards,
                    left_out: cards - listed,
                })
            })
            .collect();
    }
    let mut keep = keep.into_iter();
    full.cards.retain(|_| keep.next().unwrap_or(false));
    full
}

/// The indices (into `cards`) of one board's cards `mine` that are listed.
fn choose(
    cards: &[Card],
    mine: &[usize],
    was_flagged: &HashSet<(&str, &str)>,
    cap: Cap,
) -> HashSet<usize> {
    // Newest first: youngest, then by id for a stable order between passes.
    let newest = |a: &usize, b: &usize| {
        let (a, b) = (&cards[*a], &cards[*b]);
        a.age_s.cmp(&b.age_s).then_with(|| a.id.cmp(&b.id))
    };
    let mut attention: Vec<usize> = mine
        .iter()
        .copied()
        .filter(|&i| cards[i].judged() != Band::Green)
        .collect();
    attention.sort_by(|a, b| {
        cards[*b]
            .judged()
            .cmp(&cards[*a].judged())
            .then_with(|| newest(a, b))
    });
    let mut recovering: Vec<usize> = mine
        .iter()
        .copied()
        .filter(|&i| {
            let c = &cards[i];
            c.judged() == Band::Green && was_flagged.contains(&(c.board.as_str(), c.id.as_str()))
        })
        .collect();
    recovering.sort_by(newest);

    let mut chosen: HashSet<usize> = HashSet::new();
    let take = |i: usize, chosen: &mut HashSet<usize>| {
        if chosen.len() < cap.cards_max {
            chosen.insert(i);
        }
    };
    for i in attention.into_iter().chain(recovering) {
        take(i, &mut chosen);
    }
    // The newest of each open column, rank by rank: every column's newest before any column's
    // second, so a full listing still shows each column.
    let mut columns: Vec<Vec<usize>> = Vec::new();
    let mut names: Vec<&str> = Vec::new();
    for &i in mine {
        let c = &cards[i];
        if events::is_terminal(&c.status) || chosen.contains(&i) {
            continue;
        }
        match names.iter().position(|n| *n == c.status) {
            Some(k) => columns[k].push(i),
            None => {
                names.push(&c.status);
                columns.push(vec![i]);
            }
        }
    }
    for column in &mut columns {
        column.sort_by(newest);
        column.truncate(cap.newest_per_column);
    }
    let deepest = columns.iter().map(Vec::len).max().unwrap_or(0);
    for rank in 0..deepest {
        for column in &columns {
            if let Some(&i) = column.get(rank) {
                take(i, &mut chosen);
            }
        }
    }
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleetdash_model::{Asc, BoardSource};

    /// The tests' clock: one fixed moment, so that no outcome depends on the day they run.
    fn fixed_now() -> chrono::DateTime<chrono::Utc> {
        "2026-11-30T12:00:00Z".parse().expect("an RFC 3339 instant")
    }

    fn card(board: &str, id: &str, status: &str, band: Band, age_s: u64) -> Card {
        Card {
            board: board.into(),
            id: id.into(),
            title: format!("Card {id}"),
            status: status.into(),
            assignee: None,
            priority: None,
            age_s,
            block_kind: None,
            latest_activity_at: None,
            conditions: Vec::new(),
            band,
            checked_at: fixed_now(),
            stale: false,
        }
    }

    fn source(name: &str, cards: Probe<u32>) -> BoardSource {
        BoardSource {
            name: name.into(),
            plane: None,
            cards,
            projection: Probe::Unknown,
            status: Asc::SUCCESS,
            reason: None,
            columns: Vec::new(),
            attention_left_out: LeftOut::default(),
            checked_at: fixed_now(),
            stale: false,
        }
    }

    fn board(cards: Vec<Card>) -> Board {
        let n = cards.len() as u32;
        Board {
            columns: super::super::columns(&cards, false),
            cards,
            sources: vec![source("lab", Probe::Value(n))],
        }
    }

    fn ids(b: &Board) -> Vec<&str> {
        b.cards.iter().map(|c| c.id.as_str()).collect()
    }

    const CAP: Cap = Cap {
        cards_max: 6,
        newest_per_column: 2,
    };

    /// Was: every card listed, whatever the board's size.
    #[test]
    fn attention_then_the_newest_of_each_open_column_and_every_card_counted() {
        let mut cards = vec![
            card("lab", "blk", "blocked", Band::Amber, 500),
            card("lab", "crash", "running", Band::Red, 900),
        ];
        for i in 0..5 {
            cards.push(card(
                "lab",
                &format!("todo{i}"),
                "todo",
                Band::Green,
                100 + i,
            ));
            cards.push(card("lab", &format!("done{i}"), "done", Band::Green, i));
        }
        cards.push(card("lab", "run0", "running", Band::Green, 50));
        let listed = list(board(cards), None, CAP);
        let mut shown = ids(&listed);
        shown.sort_unstable();
        // Both flagged cards; the two newest todo and the one green running card; no done.
        assert_eq!(shown, ["blk", "crash", "run0", "todo0", "todo1"]);
        let src = &listed.sources[0];
        assert_eq!(
            src.cards,
            Probe::Value(13),
            "the count is of every card read"
        );
        let counts: Vec<(&str, u32, u32)> = src
            .columns
            .iter()
            .map(|c| (c.column.as_str(), c.cards, c.left_out))
            .collect();
        assert_eq!(
            counts,
            [
                ("todo", 5, 3),
                ("running", 2, 0),
                ("blocked", 1, 0),
                ("done", 5, 5)
            ]
        );
        assert_eq!(src.left_out(), 8);
        assert!(src.attention_left_out.is_none());
    }

    #[test]
    fn over_the_cap_the_worst_then_the_newest_needing_attention_are_listed_and_the_rest_counted() {
        let mut cards = Vec::new();
        for i in 0..5 {
            cards.push(card("lab", &format!("amber{i}"), "blocked", Band::Amber, i));
            cards.push(card("lab", &format!("red{i}"), "ready", Band::Red, 10 + i));
        }
        cards.push(card("lab", "green", "todo", Band::Green, 0));
        let listed = list(board(cards), None, CAP);
        let mut shown = ids(&listed);
        shown.sort_unstable();
        assert_eq!(shown, ["amber0", "red0", "red1", "red2", "red3", "red4"]);
        let src = &listed.sources[0];
        assert_eq!(src.attention_left_out, LeftOut { red: 0, amber: 4 });
        assert_eq!(src.left_out(), 5, "four amber cards and the green one");
    }

    /// A card that left amber is listed once more, so its recovery is a band change; the next
    /// listing lets it go like any green card.
    #[test]
    fn a_card_that_just_recovered_is_listed_once_more() {
        let cards = |band: Band| {
            let mut v: Vec<Card> = (0..4)
                .map(|i| card("lab", &format!("d{i}"), "done", Band::Green, i))
                .collect();
            v.push(card("lab", "was", "done", band, 100));
            v
        };
        let first = list(board(cards(Band::Amber)), None, CAP);
        assert_eq!(ids(&first), ["was"]);
        let second = list(board(cards(Band::Green)), Some(&first), CAP);
        assert_eq!(ids(&second), ["was"], "listed green once: a recovery");
        let third = list(board(cards(Band::Green)), Some(&second), CAP);
        assert!(ids(&third).is_empty(), "{:?}", ids(&third));
        assert_eq!(third.sources[0].columns[0].left_out, 5);
    }

    /// The listing of a quiet board is the same pass after pass: nothing comes and goes.
    #[test]
    fn a_quiet_board_lists_the_same_cards_each_pass() {
        let cards: Vec<Card> = (0..40)
            .map(|i| {
                let status = ["todo", "ready", "running", "done"][i % 4];
                card("lab", &format!("c{i:02}"), status, Band::Green, i as u64)
            })
            .collect();
        let first = list(board(cards.clone()), None, CAP);
        let second = list(board(cards), Some(&first), CAP);
        assert_eq!(ids(&first), ids(&second));
        assert_eq!(ids(&first).len(), 6);
    }

    /// The cap is per board; a board that could not be read has nothing to count.
    #[test]
    fn each_board_is_capped_on_its_own_and_a_failed_one_is_left_as_it_is() {
        let mut cards = Vec::new();
        for b in ["lab", "ops"] {
            for i in 0..10 {
                cards.push(card(b, &format!("{b}{i}"), "blocked", Band::Amber, i));
            }
        }
        let mut full = board(cards);
        full.sources = vec![
            source("lab", Probe::Value(10)),
            source("ops", Probe::Value(10)),
            source("gone", Probe::error("cannot open gone.db")),
        ];
        let listed = list(full, None, CAP);
        for b in ["lab", "ops"] {
            assert_eq!(listed.cards.iter().filter(|c| c.board == b).count(), 6);
        }
        assert_eq!(listed.sources[0].attention_left_out.amber, 4);
        assert!(listed.sources[2].columns.is_empty());
    }

    #[test]
    fn the_fleet_rules_cap_is_read_from_the_rules_file() {
        let rules = Rules::parse(
            std::path::Path::new("config/rules.yaml"),
            include_str!("../../../../config/rules.yaml"),
        )
        .unwrap();
        let cap = Cap::of(&rules);
        assert_eq!(cap.cards_max as u64, rules.board.cards_max.count);
        assert!(cap.newest_per_column < cap.cards_max);
    }
}

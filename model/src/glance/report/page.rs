//! The report as its page shows it (`report.html`, read on a phone): every part whole but the
//! two that grow with the fleet, what came back and the red time per element. Each shows the
//! rules' `report.page_lines` lines, worst first, and folds the rest under one line that says
//! what they are ("and 103 more, of 87 agents and 2 services (61 flaps)"), one tap away. A
//! thousand agents' day is a hundred such lines and more: unfolded, the page is screens of them
//! before the blind spots. The phone's notification has its own cut ([`Report::phone_body`]);
//! the text, the JSON and the hub agent get every line.

use super::Report;
use super::spells::Element;
use crate::words::human_age;

/// What one line of a long part is of: its element, and for the fold's words whether it is a
/// flap and how long it was out (or red).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Of {
    key: String,
    kind: String,
    flap: bool,
    secs: i64,
}

impl Of {
    pub(super) fn new(e: &Element, flap: bool, secs: i64) -> Of {
        Of {
            key: e.key.clone(),
            kind: e.kind.clone(),
            flap,
            secs,
        }
    }
}

/// A long part as the page shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Folded<'a> {
    pub shown: &'a [String],
    /// The one line that says the folded ones; `None` when nothing is folded.
    pub more: Option<String>,
    pub folded: &'a [String],
}

/// The report's lines as the page lays them out: `head` (why it is late, what needs the
/// operator now), what came back (folded), `tail` (the work queue, the blind spots, the rest);
/// then the red time per element (folded).
#[derive(Debug, Clone, PartialEq)]
pub struct PageParts<'a> {
    pub head: Vec<String>,
    pub recovered: Folded<'a>,
    pub tail: Vec<String>,
    pub red_time: Folded<'a>,
}

impl Report {
    /// The report as its page shows it: the long parts folded past the rules' `page_lines`.
    /// A report read back from JSON knows no rules: nothing is folded.
    pub fn page(&self) -> PageParts<'_> {
        PageParts {
            head: self.head(),
            recovered: fold(&self.recovered, &self.recovered_of, self.page_lines, |of| {
                let flaps = of.iter().filter(|o| o.flap).count();
                (flaps > 0).then(|| format!(" ({flaps} flap{})", plural(flaps)))
            }),
            tail: self.tail(),
            red_time: fold(&self.red_time, &self.red_time_of, self.page_lines, |of| {
                let secs: i64 = of.iter().map(|o| o.secs).sum();
                Some(format!(": red {} in all", human_age(secs.max(0) as u64)))
            }),
        }
    }
}

/// `lines` past the first `shown` folded, said in one line: how many, of what, then `after`'s
/// words about them.
fn fold<'a>(
    lines: &'a [String],
    of: &[Of],
    shown: usize,
    after: impl Fn(&[Of]) -> Option<String>,
) -> Folded<'a> {
    if shown == 0 || lines.len() <= shown {
        return Folded {
            shown: lines,
            more: None,
            folded: &[],
        };
    }
    let (head, rest) = lines.split_at(shown);
    let mut more = format!("and {} more", rest.len());
    // Known only on the report as built (not read back from JSON).
    if let Some(of) = of.get(shown..).filter(|of| of.len() == rest.len()) {
        // Each element once, counted by its kind, in the order they come.
        let mut kinds: Vec<(&str, usize)> = Vec::new();
        let mut seen: Vec<&str> = Vec::new();
        for o in of {
            if seen.contains(&o.key.as_str()) {
                continue;
            }
            seen.push(&o.key);
            match kinds.iter_mut().find(|(k, _)| *k == o.kind) {
                Some((_, n)) => *n += 1,
                None => kinds.push((&o.kind, 1)),
            }
        }
        let said: Vec<String> = kinds
            .iter()
            .map(|(kind, n)| {
                let kinds = if *n == 1 || kind.ends_with('s') {
                    kind.to_string()
                } else {
                    format!("{kind}s")
                };
                format!("{n} {kinds}")
            })
            .collect();
        more.push_str(&format!(", of {}", and_list(&said)));
        more.push_str(&after(of).unwrap_or_default());
    }
    Folded {
        shown: head,
        more: Some(more),
        folded: rest,
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// "a", "a and b", "a, b and c".
fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

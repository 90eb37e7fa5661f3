//! An element's spells out of green, from the transitions log: when each began and ended, how
//! bad it got and why. The report is made of them; nothing else reads the log this way.

use chrono::{DateTime, Utc};

use crate::band::Band;
use crate::snapshot::Transition;

/// One spell of an element out of green (amber or red), clipped to the window it was read in.
#[derive(Debug, Clone, PartialEq)]
pub struct Spell {
    pub start: DateTime<Utc>,
    /// `None`: still out of green at the window's end.
    pub end: Option<DateTime<Utc>>,
    /// The worst band it reached.
    pub worst: Band,
    /// Why, as the log said it when the spell reached its worst.
    pub reason: Option<String>,
    /// Seconds of it spent red (within the window).
    pub red_s: i64,
    /// Whether it began before the window (its start is the window's start).
    pub began_before: bool,
    /// When it really began, when the log says (a spell begun before the window: the last
    /// change before it).
    pub began_at: DateTime<Utc>,
}

/// One element's history in a window: what it is called and its spells, oldest first.
#[derive(Debug, Clone, PartialEq)]
pub struct Element {
    pub key: String,
    pub kind: String,
    pub name: String,
    pub spells: Vec<Spell>,
}

impl Element {
    /// "agent vega", "service nginx on lab": kind, then name.
    pub fn what(&self) -> String {
        format!("{} {}", self.kind, self.name)
    }

    /// Red spells (spells that reached red) and their red seconds, within `[from, to)`.
    pub fn red_within(&self, from: DateTime<Utc>, to: DateTime<Utc>) -> (usize, i64) {
        let mut count = 0;
        let mut secs = 0;
        for s in &self.spells {
            let end = s.end.unwrap_or(to);
            if s.worst == Band::Red && end > from && s.start < to {
                count += 1;
                secs += s.red_s;
            }
        }
        (count, secs)
    }
}

/// Every element the log names in `[from, to)`, each with its spells clipped to the window.
/// `log` is oldest first. An element's band when the window opens is the last the log gave it
/// before; with no entry before, the first entry's `from` (green when it was born).
pub fn elements(log: &[Transition], from: DateTime<Utc>, to: DateTime<Utc>) -> Vec<Element> {
    let mut keys: Vec<&str> = Vec::new();
    for t in log.iter().filter(|t| t.at < to) {
        if !keys.contains(&t.key.as_str()) {
            keys.push(&t.key);
        }
    }
    let mut out = Vec::new();
    for key in keys {
        let entries: Vec<&Transition> = log.iter().filter(|t| t.key == key && t.at < to).collect();
        let before = entries.iter().rev().find(|t| t.at < from);
        let inside: Vec<&&Transition> = entries.iter().filter(|t| t.at >= from).collect();
        if inside.is_empty() && before.is_none_or(|t| t.to == Band::Green) {
            continue;
        }
        let last = inside
            .last()
            .copied()
            .or(before)
            .expect("one entry at least");
        let mut band = match (before, inside.first()) {
            (Some(b), _) => b.to,
            (None, Some(first)) => first.from.unwrap_or(Band::Green),
            (None, None) => Band::Green,
        };
        let mut reason = before.and_then(|t| t.reason.clone());
        let mut spells: Vec<Spell> = Vec::new();
        let mut red_since = (band == Band::Red).then_some(from);
        if band != Band::Green {
            // Out of green since the last change into it before the window, when the log has it.
            let began_at = entries
                .iter()
                .rev()
                .filter(|t| t.at < from)
                .take_while(|t| t.to != Band::Green)
                .last()
                .map_or(from, |t| t.at);
            spells.push(Spell {
                start: from,
                end: None,
                worst: band,
                reason: reason.clone(),
                red_s: 0,
                began_before: true,
                began_at,
            });
        }
        for t in inside {
            if let Some(since) = red_since.take_if(|_| t.to != Band::Red) {
                spells.last_mut().expect("red is a spell").red_s += (t.at - since).num_seconds();
            }
            if t.to == Band::Red && band != Band::Red {
                red_since = Some(t.at);
            }
            reason = t.reason.clone();
            match (band == Band::Green, t.to == Band::Green) {
                (true, false) => spells.push(Spell {
                    start: t.at,
                    end: None,
                    worst: t.to,
                    reason: reason.clone(),
                    red_s: 0,
                    began_before: false,
                    began_at: t.at,
                }),
                (false, true) => {
                    if let Some(s) = spells.last_mut() {
                        s.end = Some(t.at);
                    }
                }
                (false, false) => {
                    if let Some(s) = spells.last_mut()
                        && (t.to == Band::Red || s.worst != Band::Red)
                    {
                        s.worst = if t.to == Band::Red {
                            Band::Red
                        } else {
                            s.worst
                        };
                        s.reason = reason.clone();
                    }
                }
                (true, true) => {}
            }
            band = t.to;
        }
        if let Some(since) = red_since {
            spells.last_mut().expect("red is a spell").red_s += (to - since).num_seconds();
        }
        out.push(Element {
            key: key.to_string(),
            kind: last.kind.clone(),
            name: last.name.clone(),
            spells,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{Duration, TimeZone};

    fn t0() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 3, 7, 0, 0, 0).unwrap()
    }

    fn at(min: i64) -> DateTime<Utc> {
        t0() + Duration::minutes(min)
    }

    fn change(key: &str, from: Option<Band>, to: Band, min: i64) -> Transition {
        Transition {
            key: key.into(),
            kind: "agent".into(),
            name: key.trim_start_matches("agent:").into(),
            from,
            to,
            at: at(min),
            reason: (to != Band::Green).then(|| format!("{to:?} at {min}")),
        }
    }

    #[test]
    fn spells_open_close_and_count_their_red_within_the_window() {
        use Band::*;
        let log = vec![
            // Red before the window, green inside it: a spell begun before.
            change("agent:a", Some(Green), Red, -30),
            change("agent:a", Some(Red), Green, 10),
            // Amber, then red, then green: one spell, red for 20 min of it.
            change("agent:b", Some(Green), Amber, 20),
            change("agent:b", Some(Amber), Red, 30),
            change("agent:b", Some(Red), Green, 50),
            // Red at the end: open.
            change("agent:c", Some(Green), Red, 100),
            // Green all along before the window: not an element of it.
            change("agent:d", Some(Red), Green, -10),
        ];
        let els = elements(&log, at(0), at(120));
        let keys: Vec<&str> = els.iter().map(|e| e.key.as_str()).collect();
        assert_eq!(keys, ["agent:a", "agent:b", "agent:c"]);
        let a = &els[0].spells;
        assert_eq!(a.len(), 1);
        assert!(a[0].began_before);
        assert_eq!(
            (a[0].start, a[0].end, a[0].red_s),
            (at(0), Some(at(10)), 600)
        );
        let b = &els[1].spells[0];
        assert_eq!((b.worst, b.red_s, b.end), (Red, 1200, Some(at(50))));
        assert_eq!(b.reason.as_deref(), Some("Red at 30"));
        let c = &els[2].spells[0];
        assert_eq!((c.end, c.red_s), (None, 1200));
        assert_eq!(els[1].red_within(at(0), at(120)), (1, 1200));
        assert_eq!(els[1].red_within(at(60), at(120)), (0, 0));
    }
}

//! The report of a period (issue 45): what the night did, worst first, in the glance's words,
//! for the phone (ntfy's title and a lock screen's few lines), the page, `fleetdash report`,
//! MCP and the hub agent alike. Built from the transitions log, the snapshot at the period's
//! end, the work queue's tally and fleetdash's own blind spots; pure, so that what is sent is
//! what the tests read.
//!
//! Worst first: what needs the operator now (since when, for how long); what went out of green
//! in the period and came back (one element's spells closer than the rules' flap gap are one
//! line: "agent vega went red 6 times 02:10–03:40, 41 min in all"); per element, its red
//! spells and red time against the period before; the work queue; fleetdash's blind spots;
//! everything else in one line; and when nothing happened, an all-clear.

mod page;
mod spells;

use chrono::{DateTime, Datelike, FixedOffset, Utc};
use serde::{Deserialize, Serialize};

use super::Glance;
use super::parts::row_anchor;
use super::types::Kind;
use crate::band::Band;
use crate::snapshot::{Snapshot, Transition};
use crate::words::{human_age, moment};
use page::Of;
pub use page::{Folded, PageParts};
pub use spells::{Element, Spell, elements};

/// A time fleetdash did not watch, or watched blind, and why ("the hub was asleep",
/// "fleetdash was not running", "the clock stepped 1 h ahead", "2 snapshot writes failed").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BlindSpell {
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    pub why: String,
}

/// The work queue in the period, from its events (the backend counts them).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkTally {
    pub finished: u64,
    pub blocked: u64,
    pub orphaned: u64,
    /// Assigned in the period and never ACKed by anyone.
    pub never_taken: u64,
}

/// The rules' `report` group.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReportRules {
    /// One element's spells this close (green between them shorter than this) are one line.
    pub flap_gap_s: i64,
    /// The lines a phone's notification body gets; the rest is one tap away.
    pub phone_lines: usize,
    /// The lines of what came back, and of the red time, the page shows; the rest is folded
    /// under one line ([`Report::page`]).
    pub page_lines: usize,
}

/// What a report is built from.
pub struct Inputs<'a> {
    /// "Night", "Day", "Week", "Since 14:02": the title's first word.
    pub word: String,
    /// The period: from the previous report's end to now.
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    /// The period before, `[before, from)`, for the comparison; `None` on a first report.
    pub before: Option<DateTime<Utc>>,
    /// The whole transitions log, oldest first.
    pub log: &'a [Transition],
    /// From when the log is whole: it is a bounded ring, so what is older may be gone.
    pub log_whole_from: DateTime<Utc>,
    /// The snapshot at the period's end.
    pub snapshot: &'a Snapshot,
    /// `None`: no work queue configured.
    pub work: Option<WorkTally>,
    pub blind: &'a [BlindSpell],
    /// Why the report is late ("due 07:30, sent 09:12: the hub was asleep"), when it is.
    pub late: Option<String>,
    pub rules: ReportRules,
    /// The zone the report's times are said in, as an offset at `to`, and its name.
    pub offset: FixedOffset,
    pub zone: String,
    /// The reporter's first report: its period is all fleetdash has watched.
    pub first: bool,
}

/// A period's report, worded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    /// From when the report knows what happened (after `from` when the log does not reach
    /// back that far).
    pub known_from: DateTime<Utc>,
    /// The verdict: "Night: 1 needs you, 5 recovered", "Night: all clear".
    pub title: String,
    /// "22:00 Sat 5 Dec – 07:30 Sun 6 Dec (Europe/Berlin)".
    pub covers: String,
    pub late: Option<String>,
    /// The first report says it covers all fleetdash watched: nothing before is known.
    #[serde(default)]
    pub note: Option<String>,
    /// The worst band of what needs the operator now: the report's own (a webhook's `band`).
    pub band: Band,
    /// 1. What needs the operator now, with since when and how long.
    pub needs_now: Vec<String>,
    /// 2. What went red or amber and came back, flaps merged.
    pub recovered: Vec<String>,
    /// 3. Per element: red spells and red time, against the period before.
    pub red_time: Vec<String>,
    /// 4. The work queue.
    pub work: Option<String>,
    /// 5. fleetdash's own blind spots.
    pub blind: Vec<String>,
    /// 6. Everything else, one line.
    pub rest: String,
    /// 7. Nothing happened: the watcher's proof that it is alive.
    pub all_clear: bool,
    /// How many lines a phone's body gets (the rules' `report.phone_lines`).
    #[serde(skip)]
    phone_lines: usize,
    /// How many lines of a long part the page shows (the rules' `report.page_lines`).
    #[serde(skip)]
    page_lines: usize,
    /// What each line of `recovered` and of `red_time` is of, for the page's fold.
    #[serde(skip)]
    recovered_of: Vec<Of>,
    #[serde(skip)]
    red_time_of: Vec<Of>,
}

impl Report {
    /// Every line, worst first, as `fleetdash report` prints it: why it is late, what needs
    /// the operator now, what came back, the work queue, the blind spots, the rest (the red
    /// time per element is [`Report::text`]'s table after them).
    pub fn lines(&self) -> Vec<String> {
        let mut lines = self.head();
        lines.extend(self.recovered.iter().cloned());
        lines.extend(self.tail());
        lines
    }

    /// The lines before what came back: why it is late, the first report's note, what needs
    /// the operator now.
    fn head(&self) -> Vec<String> {
        let mut lines: Vec<String> = self.late.iter().cloned().collect();
        lines.extend(self.note.iter().cloned());
        lines.extend(self.needs_now.iter().cloned());
        lines
    }

    /// The lines after what came back: the work queue, the blind spots, the rest.
    fn tail(&self) -> Vec<String> {
        let mut lines: Vec<String> = self.work.iter().cloned().collect();
        lines.extend(self.blind.iter().cloned());
        lines.push(self.rest.clone());
        lines
    }

    /// The whole report as text: the title, what it covers, the lines, then the red time per
    /// element.
    pub fn text(&self) -> String {
        let mut out = format!("{}\n{}\n", self.title, self.covers);
        for line in self.lines() {
            out.push_str(&format!("- {line}\n"));
        }
        if !self.red_time.is_empty() {
            out.push_str("Red time:\n");
            for line in &self.red_time {
                out.push_str(&format!("- {line}\n"));
            }
        }
        out
    }

    /// A lock screen's worth: the first lines, then how many more are a tap away.
    pub fn phone_body(&self) -> String {
        let lines = self.lines();
        let shown = self.phone_lines.max(1);
        let mut body: Vec<String> = lines.iter().take(shown).cloned().collect();
        if lines.len() > shown {
            body.push(format!("+{} more: open the report", lines.len() - shown));
        }
        body.join("\n")
    }
}

/// The report of `inputs`' period.
pub fn build(inputs: &Inputs) -> Report {
    let (from, to, offset) = (inputs.from, inputs.to, inputs.offset);
    let known_from = inputs.log_whole_from.max(from).min(to);
    let at = |t: DateTime<Utc>| moment(t, to, offset);
    let span = |a: DateTime<Utc>, b: DateTime<Utc>| {
        format!(
            "{}–{} ({})",
            at(a),
            at(b),
            human_age((b - a).num_seconds().max(0) as u64)
        )
    };
    let els = elements(inputs.log, from, to);
    let (sections, els): (Vec<Element>, Vec<Element>) =
        els.into_iter().partition(|e| e.kind == "section");
    // fleetdash's own clock turns amber while a jump is shown: the jump is a blind spot of
    // its own (`inputs.blind`), not an element that went wrong.
    let els: Vec<Element> = els.into_iter().filter(|e| e.kind != "fleetdash").collect();
    let glance = Glance::new(inputs.snapshot, to, offset);

    // 1. Now.
    let band = glance
        .needs
        .iter()
        .filter(|n| n.kind != Kind::Clock)
        .map(|n| n.band)
        .max_by_key(|b| match b {
            Band::Red => 2,
            Band::Amber => 1,
            Band::Green => 0,
        })
        .unwrap_or(Band::Green);
    // A jump of this host's clock is one of fleetdash's blind spots, said there.
    let needs_now: Vec<String> = glance
        .needs
        .iter()
        .filter(|n| n.kind != Kind::Clock)
        .map(|n| {
            let open = els.iter().find_map(|e| {
                let anchor = row_anchor(&e.key, &e.name);
                let open = e.spells.last().filter(|s| s.end.is_none())?;
                (anchor == n.anchor || n.stands_for().contains(&anchor)).then_some(open)
            });
            let mut line = format!("{} {}", n.band.icon(), n.what);
            if !n.reason.is_empty() {
                line.push_str(&format!(": {}", n.reason));
            }
            // A line that stands for many rows has no one start: the glance gives it none.
            let open = open.filter(|_| n.stands_for().len() <= 1);
            match open {
                Some(s) if !s.began_before || s.began_at < from => line.push_str(&format!(
                    " · since {} ({})",
                    at(s.began_at),
                    human_age((to - s.began_at).num_seconds().max(0) as u64)
                )),
                _ => {
                    if let Some(since) = &n.since {
                        line.push_str(&format!(" · {since}"));
                    }
                }
            }
            line
        })
        .collect();

    // 2. Out of green and back, flaps merged.
    let gap = chrono::Duration::seconds(inputs.rules.flap_gap_s);
    let mut back: Vec<(Band, i64, String, Of)> = Vec::new();
    for e in &els {
        let mut runs: Vec<Vec<&Spell>> = Vec::new();
        for s in e.spells.iter().filter(|s| s.end.is_some()) {
            match runs.last_mut() {
                Some(run)
                    if run
                        .last()
                        .and_then(|l| l.end)
                        .is_some_and(|end| s.start - end < gap) =>
                {
                    run.push(s)
                }
                _ => runs.push(vec![s]),
            }
        }
        for run in runs {
            let worst = if run.iter().any(|s| s.worst == Band::Red) {
                Band::Red
            } else {
                Band::Amber
            };
            let (first, last) = (run[0], run[run.len() - 1]);
            let end = last.end.expect("closed");
            let out_s: i64 = run
                .iter()
                .map(|s| (s.end.expect("closed") - s.start).num_seconds())
                .sum();
            let word = if worst == Band::Red { "red" } else { "amber" };
            let line = if run.len() == 1 {
                let mut l = format!(
                    "{} {} was {word} {}",
                    worst.icon(),
                    e.what(),
                    span(first.start, end)
                );
                if let Some(r) = &first.reason {
                    l.push_str(&format!(": {r}"));
                }
                l
            } else {
                format!(
                    "{} {} went {word} {} times {}–{}, {} in all",
                    worst.icon(),
                    e.what(),
                    run.len(),
                    at(first.start),
                    at(end),
                    human_age(out_s.max(0) as u64)
                )
            };
            let of = Of::new(e, run.len() > 1, out_s);
            back.push((worst, out_s, line, of));
        }
    }
    back.sort_by_key(|b| std::cmp::Reverse((b.0 == Band::Red, b.1)));
    let (recovered, recovered_of): (Vec<String>, Vec<Of>) =
        back.into_iter().map(|(_, _, l, of)| (l, of)).unzip();

    // 3. Red time per element, against the period before.
    // Compared only with a period before that fleetdash watched whole: "none" there would be
    // a claim it cannot make.
    let before = inputs.before.filter(|b| *b >= inputs.log_whole_from);
    let before_els = before
        .map(|b| elements(inputs.log, b, from))
        .unwrap_or_default();
    let mut reds: Vec<(i64, String, Of)> = els
        .iter()
        .filter_map(|e| {
            let (n, secs) = e.red_within(from, to);
            (n > 0).then(|| {
                let was = before_els
                    .iter()
                    .find(|b| b.key == e.key)
                    .map(|b| b.red_within(before.unwrap_or(from), from))
                    .unwrap_or((0, 0));
                let before = match (before, was) {
                    (None, _) => String::new(),
                    (Some(_), (0, _)) => " (the period before: none)".into(),
                    (Some(_), (m, s)) => {
                        format!(" (the period before: {m}×, {})", human_age(s.max(0) as u64))
                    }
                };
                (
                    secs,
                    format!(
                        "{}: red {n}×, {}{before}",
                        e.what(),
                        human_age(secs.max(0) as u64)
                    ),
                    Of::new(e, false, secs),
                )
            })
        })
        .collect();
    reds.sort_by_key(|r| std::cmp::Reverse(r.0));
    let (red_time, red_time_of): (Vec<String>, Vec<Of>) =
        reds.into_iter().map(|(_, l, of)| (l, of)).unzip();

    // 4. The work queue, and the live tasks that got stuck.
    let stuck = els
        .iter()
        // Live tasks (`task:<agent>/<id>`); a work-queue task (`queue:<id>`) is counted from
        // the queue's own events above.
        .filter(|e| e.key.starts_with("task:") && e.spells.iter().any(|s| s.worst == Band::Red))
        .count() as u64;
    let work = inputs.work.as_ref().map(|w| {
        let parts: Vec<String> = [
            (w.finished, "finished"),
            (w.blocked, "blocked"),
            (w.orphaned, "orphaned"),
            (stuck, "stuck"),
            (w.never_taken, "never taken"),
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, word)| format!("{n} {word}"))
        .collect();
        if parts.is_empty() {
            "work queue: no task finished, none went wrong".to_string()
        } else {
            format!("work queue: {}", parts.join(", "))
        }
    });
    let work_trouble = inputs
        .work
        .as_ref()
        .is_some_and(|w| w.blocked + w.orphaned + w.never_taken > 0)
        || stuck > 0;

    // 5. fleetdash's blind spots: its own, the sections it could not read, the log's reach.
    let mut blind: Vec<(DateTime<Utc>, String)> = inputs
        .blind
        .iter()
        // A moment (a clock stepped back, a state file set aside) at the period's start is
        // the period's; a spell that ended there was the last report's.
        .filter(|b| (b.to > from || b.from >= from) && b.from < to)
        .map(|b| {
            let line = if b.from == b.to {
                format!("at {}: {}", at(b.from), b.why)
            } else {
                format!(
                    "not watching {}: {}",
                    span(b.from.max(from), b.to.min(to)),
                    b.why
                )
            };
            (b.from, line)
        })
        .collect();
    for s in &sections {
        for sp in &s.spells {
            let end = sp.end.unwrap_or(to);
            let mut line = format!("{} not read {}", s.name, span(sp.start, end));
            if let Some(r) = &sp.reason {
                line.push_str(&format!(": {r}"));
            }
            blind.push((sp.start, line));
        }
    }
    // The snapshot the report is judged on is itself old: fleetdash is not writing.
    if let Some(stale) = &glance.stale {
        blind.push((to, format!("the snapshot is not fresh: {stale}")));
    }
    if known_from > from {
        blind.push((
            from,
            format!(
                "known from {} only: the transitions log reaches back no further",
                at(known_from)
            ),
        ));
    }
    blind.sort_by_key(|(t, _)| *t);
    let blind: Vec<String> = blind.into_iter().map(|(_, l)| l).collect();

    // 6. Everything else.
    let mentioned = |prefix: &str, name: &str| {
        let key = format!("{prefix}:{name}");
        els.iter()
            .any(|e| e.key == key || e.key.starts_with(&format!("{key}/")))
            || glance
                .needs
                .iter()
                .any(|n| n.anchor == row_anchor(&key, name))
    };
    let mut counts = Vec::new();
    let mut others = false;
    let agents = inputs
        .snapshot
        .agents
        .value()
        .map(|a| a.iter().map(|a| a.name.as_str()).collect::<Vec<_>>());
    let hosts = inputs
        .snapshot
        .systems
        .value()
        .map(|s| s.iter().map(|s| s.host.as_str()).collect::<Vec<_>>());
    let boards = inputs.snapshot.tasks.board.value().map(|b| {
        b.sources
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>()
    });
    for (names, prefix, one, many) in [
        (agents, "agent", "agent", "agents"),
        (hosts, "host", "host", "hosts"),
        (boards, "board", "board", "boards"),
    ] {
        let Some(names) = names else { continue };
        let quiet = names.iter().filter(|n| !mentioned(prefix, n)).count();
        others |= quiet < names.len();
        if quiet > 0 {
            counts.push(format!("{quiet} {}", if quiet == 1 { one } else { many }));
        }
    }
    let period = inputs.word.to_lowercase();
    // A first report covers only since fleetdash began watching, not the whole period.
    let all_of = match period.as_str() {
        "night" | "day" | "week" if !inputs.first => format!("all {period}"),
        _ => "throughout".to_string(),
    };
    let rest = match (counts.is_empty(), others) {
        (true, true) => "nothing else to report".to_string(),
        (true, false) => "no agents, hosts or boards watched".to_string(),
        (false, true) => format!("the other {}: green {all_of}", counts.join(", ")),
        (false, false) => format!("{}: green {all_of}", counts.join(", ")),
    };

    // 7. The verdict.
    let all_clear =
        needs_now.is_empty() && recovered.is_empty() && blind.is_empty() && !work_trouble;
    let title = if all_clear {
        format!("{}: all clear", inputs.word)
    } else {
        let mut parts = Vec::new();
        if !needs_now.is_empty() {
            parts.push(format!("{} needs you", needs_now.len()));
        }
        if !recovered.is_empty() {
            parts.push(format!("{} recovered", recovered.len()));
        }
        if !blind.is_empty() {
            parts.push(format!("{} blind", blind.len()));
        }
        if parts.is_empty() {
            parts.push("work queue trouble".into());
        }
        format!("{}: {}", inputs.word, parts.join(", "))
    };
    let covers = format!(
        "{} – {} ({})",
        moment_dated(from, offset, from.year() != to.year()),
        moment_dated(to, offset, false),
        inputs.zone
    );
    Report {
        from,
        to,
        known_from,
        title,
        covers,
        late: inputs.late.clone(),
        note: inputs
            .first
            .then(|| format!("the first report: fleetdash began watching at {}", at(from))),
        band,
        needs_now,
        recovered,
        red_time,
        work,
        blind,
        rest: if all_clear {
            format!("all clear: {rest}")
        } else {
            rest
        },
        all_clear,
        phone_lines: inputs.rules.phone_lines,
        page_lines: inputs.rules.page_lines,
        recovered_of,
        red_time_of,
    }
}

/// "Sat 5 Dec 22:00": a period's bound, always with its day (and its year, "Fri 6 Dec 2025
/// 10:10", for a period that began in another).
fn moment_dated(t: DateTime<Utc>, offset: FixedOffset, year: bool) -> String {
    use chrono::Timelike;
    const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
    let l = t.with_timezone(&offset);
    let year = if year {
        format!(" {}", l.year())
    } else {
        String::new()
    };
    format!(
        "{} {} {}{year} {:02}:{:02}",
        DAYS[l.weekday().num_days_from_monday() as usize],
        l.day(),
        crate::words::month(l.month()),
        l.hour(),
        l.minute()
    )
}

#[cfg(test)]
mod tests;

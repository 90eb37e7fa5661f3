//! The parts every section of the glance is built from, worded once: the reader's [`Words`]
//! (ages and times as of one moment, in one zone, and which elements are held or acked), a
//! reason in a few words, row anchors, facts, a section and its groups, red rows first, and a
//! stable order that costs the page little WebAssembly.

use chrono::{DateTime, FixedOffset, Utc};

use super::types::{Fact, Group, Problem, Row, Section, Strip};
use crate::alerts::{Acked, Held, key};
use crate::asc::Asc;
use crate::band::Band;
use crate::clock::ClockView;
use crate::probe::Probe;
use crate::snapshot::{History, SectionMeta};
use crate::words::{human_age, moment};

const STRIP_AXIS: [&str; 3] = ["24 h ago", "12 h", "now"];
/// A frozen glance's axis: its "now" is the snapshot's moment, not the reader's.
const FROZEN_AXIS: [&str; 3] = ["24 h before", "12 h", "last known"];

/// Needs-you reasons are cut here (at a word): a few words, not the whole story.
const FEW_WORDS: usize = 52;

/// Formats ages and times as of one moment, in one zone, and says which elements are held or
/// acked.
pub(super) struct Words<'a> {
    pub(super) now: DateTime<Utc>,
    /// The clock of the host that wrote the snapshot: its jumps are taken out of the time
    /// since an element was checked, and in its grace (after a forward jump or a wake) a
    /// window is reached only once watched again.
    pub(super) clock: &'a ClockView,
    pub(super) offset: FixedOffset,
    /// The snapshot's held elements (`alerts.held`).
    pub(super) held: &'a [Held],
    /// The snapshot's acknowledged elements (`alerts.acked`).
    pub(super) acked: &'a [Acked],
    /// Live, ages count up ("3 min ago"); frozen at the snapshot's moment, an age would count
    /// from a clock the data no longer follows, so every moment is a time of day ("at 19:15").
    pub(super) frozen: bool,
}

impl Words<'_> {
    /// The hold on the element `key` in words, while it is not green: a green element has
    /// nothing to hold back, so a hold listed for one is not said. An ack holds back its
    /// reminders, so it is said in the same place ("acked 14:02"), after a silence if both:
    /// one mark, one line, nothing more for the page to lay out.
    pub(super) fn held(&self, key: &str, band: Band) -> Option<String> {
        if band == Band::Green {
            return None;
        }
        let held = self.held.iter().find(|h| h.key == key);
        let acked = self.acked.iter().find(|a| a.key == key);
        match (held, acked) {
            (None, None) => None,
            (Some(h), None) => Some(h.describe(self.now, self.offset)),
            (None, Some(a)) => Some(a.describe(self.now, self.offset)),
            (Some(h), Some(a)) => Some(format!(
                "{} · {}",
                h.describe(self.now, self.offset),
                a.describe(self.now, self.offset)
            )),
        }
    }

    /// Seconds of `base_s` at `at`, plus the time since.
    pub(super) fn age(&self, at: DateTime<Utc>, base_s: u64) -> u64 {
        base_s + self.clock.elapsed(at, self.now)
    }

    /// "19:12", or "29 Nov 19:12" when it is not recent.
    pub(super) fn time(&self, t: DateTime<Utc>) -> String {
        moment(t, self.now, self.offset)
    }

    pub(super) fn since(&self, t: DateTime<Utc>) -> String {
        format!("since {}", self.time(t))
    }
}

impl Words<'_> {
    /// "3 min ago", or, frozen, "at 19:15": every moment the glance says relative to now.
    pub(super) fn ago(&self, t: DateTime<Utc>) -> String {
        if self.frozen {
            format!("at {}", self.time(t))
        } else {
            format!("{} ago", human_age(self.clock.elapsed(t, self.now)))
        }
    }

    /// A section's freshness: "checked 12 s ago", or, frozen, "as of 19:15".
    pub(super) fn checked(&self, at: DateTime<Utc>) -> String {
        if self.frozen {
            format!("as of {}", self.time(at))
        } else {
            format!("checked {}", self.ago(at))
        }
    }
}

/// `text` in a few words: its first clause, paths as file names, cut at a word.
pub fn few_words(text: &str) -> String {
    few_words_within(text, FEW_WORDS)
}

/// `text` in at most `max` characters: its first clause, paths as file names, cut between
/// words (never inside one: a fragment reads as another word), "…" marking the cut.
pub fn few_words_within(text: &str, max: usize) -> String {
    let (short, _) = without_paths(text);
    let first = short.split("; ").next().unwrap_or(&short).trim();
    if first.chars().count() <= max {
        return first.to_string();
    }
    let words: Vec<&str> = first.split(' ').collect();
    let mut kept = 0;
    let mut len = 0;
    for word in &words {
        let more = word.chars().count() + usize::from(kept > 0);
        if len + more > max {
            break;
        }
        len += more;
        kept += 1;
    }
    // A quantity is not split: "after 1 h 30…" would say another duration than "after 1 h
    // 30 min". When the cut falls inside one, its numbers and units go too.
    let quantity = |w: &str| {
        w.starts_with(|c: char| c.is_ascii_digit())
            || ["h", "min", "s", "ms", "d", "%"].contains(&w)
    };
    if words.get(kept).is_some_and(|next| quantity(next)) {
        while kept > 0 && quantity(words[kept - 1]) {
            kept -= 1;
        }
    }
    let mut cut = words[..kept].join(" ");
    if cut.is_empty() {
        // One word longer than the room (a hash, a URL): its start says which.
        cut = first.chars().take(max).collect();
    }
    // "…" after a word, not after the comma or colon that joined it to the next.
    let kept = cut.trim_end_matches([',', ':', ';', ' ', '·']).len();
    cut.truncate(kept);
    cut.push('…');
    cut
}

/// `text` with every absolute path replaced by its file name, and the paths it held.
pub(super) fn without_paths(text: &str) -> (String, Vec<String>) {
    let mut paths = Vec::new();
    let words: Vec<String> = text
        .split(' ')
        .map(|word| {
            let core = word.trim_end_matches([':', ';', ',', ')', '.']);
            if core.starts_with('/') && core[1..].contains('/') {
                let name = core.rsplit('/').next().unwrap_or(core);
                paths.push(core.to_string());
                format!("{name}{}", &word[core.len()..])
            } else {
                word.to_string()
            }
        })
        .collect();
    (words.join(" "), paths)
}

/// Wire states an operator reads better in other words than with their underscores spaced.
const STATE_WORDS: [(&str, &str); 4] = [
    ("timed_out", "timed out"),
    ("needs_input", "needs input"),
    ("gave_up", "gave up"),
    ("spawn_failed", "failed to start"),
];

/// A reason in plain words, and the data words cut from it as labelled details (`rule`,
/// `config`): the collectors' reasons carry wire states ("timed_out"), rules ("(>= 60 s)"),
/// config keys ("(kanban.dispatch_profiles)") and ages in seconds ("110 s"), which the row
/// keeps behind the tap while its reason says what happened.
pub(super) fn plain(reason: &str) -> (String, Vec<(&'static str, String)>) {
    let tokens: Vec<&str> = reason.split(' ').collect();
    let mut words: Vec<String> = Vec::with_capacity(tokens.len());
    let mut i = 0;
    while i < tokens.len() {
        let (lead, core, tail) = punctuated(tokens[i]);
        let seconds = core
            .bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| core.parse::<u64>().ok())
            .flatten()
            .filter(|_| tail.is_empty());
        let next = tokens.get(i + 1).map(|t| punctuated(t));
        // "110 s" as "1 min": one unit per duration, as every other age is said.
        if let (Some(n), Some(("", "s", next_tail))) = (seconds, next) {
            words.push(format!("{lead}{}{next_tail}", human_age(n)));
            i += 2;
            continue;
        }
        let snake = core.contains('_')
            && core
                .split('_')
                .all(|part| part.len() >= 2 && part.bytes().all(|b| b.is_ascii_lowercase()));
        if snake {
            let spaced = STATE_WORDS
                .iter()
                .find(|(wire, _)| *wire == core)
                .map_or_else(|| core.replace('_', " "), |(_, words)| words.to_string());
            words.push(format!("{lead}{spaced}{tail}"));
        } else {
            words.push(tokens[i].to_string());
        }
        i += 1;
    }
    let mut text = words.join(" ");
    let mut details = Vec::new();
    let mut from = 0;
    while let Some(open) = text[from..].find(" (").map(|o| from + o) {
        let Some(close) = text[open..].find(')').map(|c| open + c) else {
            break;
        };
        let inner = &text[open + 2..close];
        let key = !inner.is_empty()
            && !inner.contains(' ')
            && (inner.contains('.') || inner.contains('_'))
            && inner
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'_');
        let detail = if let Some(limit) = inner.strip_prefix(">= ") {
            Some(("rule", format!("{limit} or more")))
        } else if key {
            Some(("config", inner.to_string()))
        } else {
            None
        };
        match detail {
            Some(d) => {
                details.push(d);
                text.replace_range(open..=close, "");
                from = open;
            }
            None => from = close,
        }
    }
    (text, details)
}

/// A row's reason in [`plain`] words, and what was cut from it as facts behind the tap.
pub(super) fn plain_reason(reason: Option<String>) -> (Option<String>, Vec<Fact>) {
    let Some(reason) = reason else {
        return (None, Vec::new());
    };
    let (text, details) = plain(&reason);
    let facts = details
        .into_iter()
        .map(|(label, text)| Fact {
            label,
            text,
            band: None,
            held: None,
        })
        .collect();
    (Some(text), facts)
}

/// A word split into its leading "(", its core and its trailing punctuation.
fn punctuated(word: &str) -> (&str, &str, &str) {
    let rest = word.trim_start_matches('(');
    let lead = &word[..word.len() - rest.len()];
    let core = rest.trim_end_matches([':', ';', ',', ')', '.']);
    (lead, core, &rest[core.len()..])
}

/// An element id from a kind and a name: letters, digits, `-` and `_` only.
pub fn anchor(kind: &str, name: &str) -> String {
    let mut id = format!("{kind}-");
    id.extend(name.chars().map(|c| {
        if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
            c
        } else {
            '_'
        }
    }));
    id
}

/// The row an element's key is about: `agent:min` → the agent's row, a host's check → the
/// host's row, a card → its card row, a section → the section.
pub(super) fn row_anchor(key: &str, name: &str) -> String {
    let (head, rest) = key.split_once('/').unwrap_or((key, ""));
    let (kind, id) = head.split_once(':').unwrap_or((head, ""));
    match kind {
        "agent" => anchor("agent", id),
        "queue" => anchor("queue", id),
        "task" => anchor("task", &format!("{id}-{rest}")),
        "board" => match rest.strip_prefix("card:") {
            Some(card) => anchor("card", &format!("{id}-{card}")),
            None => anchor("board", id),
        },
        "host" => anchor("host", id),
        "backups" => anchor("backup", name),
        "section" => match id {
            "tasks.board" => "board".into(),
            "tasks.live" => "live".into(),
            other => other.into(),
        },
        _ => anchor(kind, id),
    }
}

/// When something `ago_s` old at `at` crossed a threshold of `after_s`.
pub(super) fn crossed(at: DateTime<Utc>, ago_s: u64, after_s: u64) -> DateTime<Utc> {
    at - chrono::Duration::seconds(ago_s as i64) + chrono::Duration::seconds(after_s as i64)
}

/// The code, unless it is plain SUCCESS (2001 SUCCESS_WITH_WARNINGS is worth saying).
pub(super) fn code(status: &Asc) -> Option<String> {
    (status.code != Asc::SUCCESS.code).then(|| status.to_string())
}

/// A probe's value in words, "unknown", or its error; the error is red.
pub(super) fn shown<T>(
    probe: &Probe<T>,
    show: impl FnOnce(&T) -> String,
) -> (String, Option<Band>) {
    match probe {
        Probe::Value(v) => (show(v), None),
        Probe::Unknown => ("unknown".into(), None),
        Probe::Error(r) => (format!("error: {r}"), Some(Band::Red)),
    }
}

/// A fact; an error the row's reason already says is not said again.
pub(super) fn fact(
    label: &'static str,
    (text, band): (String, Option<Band>),
    reason: Option<&str>,
) -> Fact {
    let repeats = match (band, reason, text.strip_prefix("error: ")) {
        (Some(_), Some(reason), Some(error)) => {
            let tail = error.split_once(": ").map_or(error, |(_, t)| t);
            reason.contains(tail)
        }
        _ => false,
    };
    Fact {
        label,
        text: if repeats {
            "error, as above".into()
        } else {
            text
        },
        band,
        held: None,
    }
}

pub(super) fn checked(meta: &SectionMeta, w: &Words) -> Option<String> {
    meta.checked_at.map(|at| w.checked(at))
}

/// The section's own failure, when it has no elements to show; `part` is its name in the
/// snapshot ("tasks.queue"), its element key's.
pub(super) fn problem<T>(
    probe: &Probe<T>,
    meta: &SectionMeta,
    part: &str,
    w: &Words,
) -> Option<Problem> {
    let reason = probe.error_reason()?;
    Some(if meta.configured {
        Problem {
            band: Some(Band::Red),
            text: format!("error: {reason}"),
            held: w.held(&key::section(part), Band::Red),
        }
    } else {
        Problem {
            band: None,
            text: "Not configured: no collector for this section.".into(),
            held: None,
        }
    })
}

pub(super) fn section(
    id: &'static str,
    title: &'static str,
    meta: &SectionMeta,
    w: &Words,
) -> Section {
    Section {
        id,
        title,
        checked: checked(meta, w),
        stale: meta.stale,
        note: None,
        problem: None,
        groups: Vec::new(),
        unlisted: Vec::new(),
    }
}

pub(super) fn group(rows: Vec<Row>) -> Group {
    Group {
        title: None,
        rows,
        folded: None,
        folded_n: 0,
        empty: None,
        closed: false,
    }
}

/// Red rows first, then amber, then green; the order given within each band.
pub(super) fn red_first(rows: Vec<Row>) -> Vec<Row> {
    let mut out = Vec::with_capacity(rows.len());
    let mut rest = rows;
    for band in [Band::Red, Band::Amber, Band::Green] {
        let (this, other): (Vec<Row>, Vec<Row>) = rest.into_iter().partition(|r| r.band == band);
        out.extend(this);
        rest = other;
    }
    out
}

/// `items` in the order of their keys, ties kept in the order given.
pub(super) fn sorted<T>(items: Vec<T>, key: impl Fn(&T) -> (u64, String)) -> Vec<T> {
    let keys: Vec<(u64, String)> = items.iter().map(key).collect();
    let mut slots: Vec<Option<T>> = items.into_iter().map(Some).collect();
    order(&keys)
        .into_iter()
        .filter_map(|i| slots[i].take())
        .collect()
}

/// The positions of `keys` in ascending order, ties in their first order: a bottom-up merge
/// sort of indices, a few hundred bytes of WebAssembly where each standard sort of a list of
/// rows costs kilobytes.
pub fn order(keys: &[(u64, String)]) -> Vec<usize> {
    let n = keys.len();
    let mut idx: Vec<usize> = (0..n).collect();
    let mut buf = idx.clone();
    let mut width = 1;
    while width < n {
        for start in (0..n).step_by(2 * width) {
            let mid = (start + width).min(n);
            let end = (start + 2 * width).min(n);
            let (mut i, mut j) = (start, mid);
            for slot in &mut buf[start..end] {
                // The left run wins ties: stable.
                let left = j >= end || (i < mid && keys[idx[i]] <= keys[idx[j]]);
                if left {
                    *slot = idx[i];
                    i += 1;
                } else {
                    *slot = idx[j];
                    j += 1;
                }
            }
        }
        std::mem::swap(&mut idx, &mut buf);
        width *= 2;
    }
    idx
}

pub(super) fn strip(history: Option<&History>, w: &Words) -> Option<Strip> {
    let h = history?;
    Some(Strip {
        label: h.uptime_words_at(w.offset),
        cells: h.strip.clone(),
        axis: if w.frozen { FROZEN_AXIS } else { STRIP_AXIS },
    })
}

pub(super) fn join(parts: &[&str]) -> String {
    parts
        .iter()
        .filter(|p| !p.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join(" · ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::glance::fixtures::*;

    #[test]
    fn a_cut_is_between_words_and_never_after_a_joining_mark() {
        let reason = "crashed: the worker process died at 19:12, restart pending";
        for max in 8..reason.len() {
            let cut = few_words_within(reason, max);
            assert!(cut.chars().count() <= max + 1, "{max}: {cut:?}");
            let stem = cut.trim_end_matches('…');
            assert!(reason.starts_with(stem), "{max}: {cut:?}");
            // The next character of the whole reason ends a word: nothing was cut mid-word.
            let next = reason[stem.len()..].chars().next();
            assert!(
                matches!(next, Some(' ' | ':' | ',')),
                "{max}: {cut:?} is followed by {next:?}"
            );
            assert!(!stem.ends_with([':', ',', ' ']), "{max}: {cut:?}");
        }
        assert_eq!(few_words_within(reason, 200), reason);
        assert_eq!(few_words_within(reason, 17), "crashed: the…");
        // Never inside a quantity.
        let killed = "timed out: the worker was killed after 1 h 30 min (limit 1 h)";
        assert_eq!(
            few_words_within(killed, 46),
            "timed out: the worker was killed after…"
        );
        assert_eq!(
            few_words_within(killed, 52),
            "timed out: the worker was killed after 1 h 30 min…"
        );
    }

    #[test]
    fn few_words_cut_at_a_word_and_name_files_not_paths() {
        assert_eq!(
            few_words("down: connection refused"),
            "down: connection refused"
        );
        assert_eq!(
            few_words("tunnel x: refused; cron y: late"),
            "tunnel x: refused",
            "the first clause"
        );
        assert_eq!(
            few_words("refused: /a/b/c.kanban: no marker"),
            "refused: c.kanban: no marker"
        );
        let long = few_words("the worker was killed after a very long time and nobody noticed it");
        assert_eq!(long, "the worker was killed after a very long time and…");
        assert!(long.chars().count() <= FEW_WORDS + 1);
    }

    #[test]
    fn plain_words_keep_what_happened_and_cut_the_data_words() {
        assert_eq!(
            plain("no reply for 110 s (>= 60 s)"),
            (
                "no reply for 1 min".to_string(),
                vec![("rule", "1 min or more".to_string())]
            )
        );
        assert_eq!(
            plain("timed_out: the worker was killed after 1 h 30 min (limit 1 h) at 19:13").0,
            "timed out: the worker was killed after 1 h 30 min (limit 1 h) at 19:13"
        );
        assert_eq!(
            plain("blocked: needs_input; gave_up, spawn_failed, claim_extended").0,
            "blocked: needs input; gave up, failed to start, claim extended"
        );
        assert_eq!(
            plain("assignee tam cannot be claimed on this host (kanban.dispatch_profiles)"),
            (
                "assignee tam cannot be claimed on this host".to_string(),
                vec![("config", "kanban.dispatch_profiles".to_string())]
            )
        );
        // Ids, paths, short ages and other asides are left as they are.
        for kept in [
            "blocked on t_1a2b: LAB disk full",
            "task t_stuck went quiet after 42 s",
            "refused: /srv/my_vault/a.kanban has no marker (hand-edited?)",
        ] {
            assert_eq!(plain(kept), (kept.to_string(), Vec::new()));
        }
    }

    #[test]
    fn anchors_are_unique_ids() {
        let g = at(&fleet(), 0);
        let mut seen = Vec::new();
        for r in g
            .sections
            .iter()
            .flat_map(|s| &s.groups)
            .flat_map(|g| &g.rows)
        {
            assert!(
                r.anchor
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'),
                "{}",
                r.anchor
            );
            assert!(!seen.contains(&r.anchor), "{} twice", r.anchor);
            seen.push(r.anchor.clone());
        }
        assert_eq!(anchor("card", "ops/x y"), "card-ops_x_y");
    }

    #[test]
    fn order_is_a_stable_ascending_sort() {
        let keys: Vec<(u64, String)> = [(2, "b"), (0, "z"), (2, "a"), (0, "z"), (1, "m")]
            .into_iter()
            .map(|(r, n)| (r, n.to_string()))
            .collect();
        assert_eq!(order(&keys), [1, 3, 4, 2, 0]);
        assert_eq!(order(&[]), Vec::<usize>::new());
        let many: Vec<(u64, String)> = (0..37).rev().map(|i| (i, String::new())).collect();
        assert_eq!(order(&many), (0..37).rev().collect::<Vec<usize>>());
    }
}

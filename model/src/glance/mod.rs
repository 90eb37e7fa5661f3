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
//! up, a live task crossing the stuck rule turns STUCK), and at the time of the last good poll
//! while it is not (nothing is invented from a ticking clock). `snapshot.html` calls it at the
//! snapshot's own `generated_at`. Kept light for WebAssembly: plain structs, strings built once,
//! times and numbers formatted by hand (chrono's and Rust's float formatting cost kilobytes).
//!
//! Alerting adds words, never bands: an element whose alerts are held back (a silence, a
//! maintenance window) keeps its band, its place and its needs-you line, and carries `held`
//! ("silenced until 16:00 (disk swap)"); a failing alert channel is an amber needs-you line and
//! a row of the Systems panel's "alerts" group, since the operator will not be paged.

pub mod changes;

use chrono::{DateTime, FixedOffset, Utc};

use crate::alerts::{ChannelState, Held, key};
use crate::asc::Asc;
use crate::band::Band;
use crate::probe::Probe;
use crate::queue::QueueTask;
use crate::rules::RulesView;
use crate::snapshot::{
    Agent, Backups, Board, BoardSource, Card, CronCheck, CronState, History, LiveTask, NamedCheck,
    SectionMeta, Snapshot, System,
};
use crate::summary::Verdict;
use crate::words::{human_age, moment, one_decimal, seconds_since, thousands};

/// The mark beside a `held` text (a bell struck through): both renderers show it.
pub const HELD_ICON: &str = "🔕";

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
    /// Red items first, then amber, in section order.
    pub needs: Vec<Need>,
    pub sections: Vec<Section>,
}

/// One line of "needs you": what, why in a few words, since when, and where its row is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Need {
    pub band: Band,
    /// "agent lyra", "task t_01 (min)", "card Prune old snapshots", "host prod"; or the whole
    /// line when it is one sentence ("alerts: ntfy failing since 14:02: 503 (3 waiting)").
    pub what: String,
    /// Empty when `what` is the whole line: such a line is shown whole, never cut.
    pub reason: String,
    /// "since 19:12", when known.
    pub since: Option<String>,
    /// The id of its row (or of its section, for a section that failed as a whole).
    pub anchor: String,
    /// "silenced until 16:00 (disk swap)": its alerts are held back; it still needs you.
    pub held: Option<String>,
    kind: Kind,
    /// How many elements the line stands for: 1, or a lot not listed one by one (a board's
    /// cards beyond the cap), which the verdict counts in full.
    count: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    AgentDown,
    Agent,
    TaskStuck,
    Task,
    Card,
    Board,
    Host,
    Backup,
    Section,
    /// An alert channel that fails to deliver: said in the verdict whatever else is red.
    Channel,
}

impl Kind {
    /// The noun of the verdict's words, and the qualifier used when every item of the kind has it.
    fn words(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Kind::AgentDown => ("agent", "agents", "down"),
            Kind::Agent => ("agent", "agents", ""),
            Kind::TaskStuck => ("task", "tasks", "stuck"),
            Kind::Task => ("task", "tasks", ""),
            Kind::Card => ("card", "cards", ""),
            Kind::Board => ("board", "boards", ""),
            Kind::Host => ("host", "hosts", ""),
            Kind::Backup => ("backup", "backups", ""),
            Kind::Section => ("section", "sections", "failed"),
            Kind::Channel => ("alert channel", "alert channels", "failing"),
        }
    }

    /// Kinds that are one noun in the verdict ("3 agents", two of them down).
    fn family(self) -> Kind {
        match self {
            Kind::AgentDown => Kind::Agent,
            Kind::TaskStuck => Kind::Task,
            k => k,
        }
    }
}

/// One panel of the page (one `<section>` of snapshot.html).
#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    /// The element id: "agents", "live", "board", "systems", "backups".
    pub id: &'static str,
    pub title: &'static str,
    /// "checked 12 s ago".
    pub checked: Option<String>,
    /// The section is older than the rules allow, or never collected.
    pub stale: bool,
    /// A few words beside the title ("stuck: no reply for 5 min").
    pub note: Option<String>,
    /// Why there are no rows: the section failed (red) or has no collector (no band).
    pub problem: Option<Problem>,
    pub groups: Vec<Group>,
    /// Elements counted but not shown as rows (a board's cards the snapshot does not list),
    /// one lot per band and board: the verdict counts them, a non-green lot needs you.
    unlisted: Vec<Need>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    /// Red when a configured section failed; `None` when the section is not configured.
    pub band: Option<Band>,
    pub text: String,
    /// The section's alerts held back, in words, while it is red.
    pub held: Option<String>,
}

/// Rows under one optional heading (a board column); `folded` counts rows not listed one by
/// one ("2 finished cards").
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    pub title: Option<String>,
    pub rows: Vec<Row>,
    pub folded: Option<String>,
    /// Set when the group has nothing at all to show ("no cards").
    pub empty: Option<&'static str>,
    folded_n: usize,
}

/// A row is hashed by its anchor alone (equal rows have equal anchors): cheap, and enough for
/// the page, which keys its rows by their whole content.
impl std::hash::Hash for Row {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.anchor.hash(state);
    }
}

/// A needs-you line is hashed by where it leads and what it names, as a [`Row`] is.
impl std::hash::Hash for Need {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.anchor.hash(state);
        self.what.hash(state);
    }
}

/// One element: one line when green; its details open on a tap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub anchor: String,
    pub band: Band,
    /// The word beside the band's icon: "ok", "warn", "fail", "down", "STUCK".
    pub badge: &'static str,
    pub title: String,
    /// One line: where, state, age ("heart · hub · 18 s ago").
    pub summary: String,
    /// Why it is not green, said once; `None` when it is green.
    pub reason: Option<String>,
    /// "silenced until 16:00 (disk swap)" while its alerts are held back and it is not green.
    pub held: Option<String>,
    /// Behind the tap: the Agent Status Code ("ASC-5003 DEPENDENCY_UNAVAILABLE") when not success.
    pub code: Option<String>,
    pub facts: Vec<Fact>,
    pub checks: Vec<Checks>,
    pub strip: Option<Strip>,
    /// What the row is for the verdict and needs-you; `None` when it does not count (a green
    /// board source: its cards count).
    kind: Option<Kind>,
    /// "agent lyra": the row as a needs-you line names it.
    what: String,
    /// When it entered its band, where the snapshot says so.
    since: Option<DateTime<Utc>>,
}

/// A labelled value behind the tap; `band` colours it when it is itself a condition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fact {
    pub label: &'static str,
    pub text: String,
    pub band: Option<Band>,
    /// Its alerts held back, in words (a host's vault parity is an element of its own).
    pub held: Option<String>,
}

/// A host's services, tunnels or crons.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checks {
    pub title: &'static str,
    pub items: Vec<Check>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub band: Band,
    pub text: String,
    /// Why it is not ok, when that says more than its state.
    pub why: Option<String>,
    /// Its alerts held back, in words, unless its host's row says the same.
    pub held: Option<String>,
}

/// The last 24 hours: the uptime in words, one character per slot (oldest first: `u` up, `d`
/// down, `p` partly, `.` no sample), and the axis under it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Strip {
    pub label: String,
    pub cells: String,
    pub axis: [&'static str; 3],
}

impl Strip {
    /// The cells as runs of one kind (`u`, `d`, `p`, `n` for no sample) and their lengths:
    /// one element per run keeps both pages small.
    pub fn runs(&self) -> Vec<(&'static str, usize)> {
        let mut runs: Vec<(&'static str, usize)> = Vec::new();
        for c in self.cells.chars() {
            let class = match c {
                'u' => "u",
                'd' => "d",
                'p' => "p",
                _ => "n",
            };
            match runs.last_mut() {
                Some((last, n)) if *last == class => *n += 1,
                _ => runs.push((class, 1)),
            }
        }
        runs
    }
}

/// The tab's icon: a dot in the verdict's colour (an SVG data URL), so the tab says it too.
pub fn favicon(band: Band) -> String {
    let colour = match band {
        Band::Green => "%231e6b35",
        Band::Amber => "%23d19a00",
        Band::Red => "%23b3261e",
    };
    format!(
        "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 16 16'%3E%3Ccircle cx='8' cy='8' r='7' fill='{colour}'/%3E%3C/svg%3E"
    )
}

const STRIP_AXIS: [&str; 3] = ["24 h ago", "12 h", "now"];
/// Needs-you reasons are cut here (at a word): a few words, not the whole story.
const FEW_WORDS: usize = 52;
/// Finished board columns: their green cards fold into a count.
const FINISHED_COLUMNS: [&str; 2] = ["done", "archived"];
const TERMINAL_STATES: [&str; 4] = [
    "TASK_STATE_COMPLETED",
    "TASK_STATE_FAILED",
    "TASK_STATE_CANCELED",
    "TASK_STATE_REJECTED",
];

impl Glance {
    /// The glance at `now`, times of day said at `offset` from UTC (the reader's zone).
    pub fn new(s: &Snapshot, now: DateTime<Utc>, offset: FixedOffset) -> Glance {
        let w = Words {
            now,
            offset,
            held: &s.alerts.held,
        };
        let sections = vec![
            agents(s, &w),
            queue(s, &w),
            live_tasks(s, &w),
            board(s, &w),
            systems(s, &w),
            backups(s, &w),
        ];
        let mut counts = Verdict::default();
        let mut needs = Vec::new();
        for section in &sections {
            if let Some(Problem {
                band: Some(band),
                text,
                held,
            }) = &section.problem
            {
                counts.add(*band);
                needs.push(Need {
                    band: *band,
                    what: section.title.to_string(),
                    reason: few_words(text),
                    since: None,
                    anchor: section.id.to_string(),
                    held: held.clone(),
                    kind: Kind::Section,
                    count: 1,
                });
            }
            for row in section.groups.iter().flat_map(|g| &g.rows) {
                let Some(kind) = row.kind else {
                    continue;
                };
                counts.add(row.band);
                if row.band == Band::Green {
                    continue;
                }
                if kind == Kind::Channel {
                    // A channel's line is its own sentence, since when included:
                    // "alerts: ntfy failing since 14:02: 503 (3 waiting)".
                    needs.push(Need {
                        band: row.band,
                        what: row.what.clone(),
                        reason: String::new(),
                        since: None,
                        anchor: row.anchor.clone(),
                        held: None,
                        kind,
                        count: 1,
                    });
                    continue;
                }
                let mut reason = row.reason.clone().unwrap_or_else(|| row.badge.into());
                if let Some(t) = row.since {
                    // "since 19:12" says it: not "... at 19:12" as well.
                    reason = reason.replace(&format!(" at {}", w.time(t)), "");
                }
                needs.push(Need {
                    band: row.band,
                    what: row.what.clone(),
                    reason: few_words(&reason),
                    since: row.since.map(|t| w.since(t)),
                    anchor: row.anchor.clone(),
                    held: row.held.clone(),
                    kind,
                    count: 1,
                });
            }
            // Folded rows are green cards: counted, not listed.
            for g in &section.groups {
                counts.green += g.folded_n;
            }
            for lot in &section.unlisted {
                counts.add_n(lot.band, lot.count);
                if lot.band != Band::Green {
                    needs.push(lot.clone());
                }
            }
        }
        // Red before amber, section order kept within each (a stable sort by hand: the
        // standard sorts cost the page kilobytes).
        let (red, amber): (Vec<Need>, Vec<Need>) =
            needs.into_iter().partition(|n| n.band == Band::Red);
        let needs: Vec<Need> = red.into_iter().chain(amber).collect();
        let headline = headline(&needs, &counts);
        Glance {
            band: counts.worst(),
            counts,
            headline,
            stale: s.staleness(now),
            as_of: w.time(now),
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

/// Formats ages and times as of one moment, in one zone, and says which elements are held.
struct Words<'a> {
    now: DateTime<Utc>,
    offset: FixedOffset,
    /// The snapshot's held elements (`alerts.held`).
    held: &'a [Held],
}

impl Words<'_> {
    /// The hold on the element `key` in words, while it is not green: a green element has
    /// nothing to hold back, so a hold listed for one is not said.
    fn held(&self, key: &str, band: Band) -> Option<String> {
        if band == Band::Green {
            return None;
        }
        self.held
            .iter()
            .find(|h| h.key == key)
            .map(|h| h.describe(self.now, self.offset))
    }

    /// Seconds of `base_s` at `at`, plus the time since.
    fn age(&self, at: DateTime<Utc>, base_s: u64) -> u64 {
        base_s + seconds_since(at, self.now)
    }

    /// "19:12", or "29 Nov 19:12" when it is not recent.
    fn time(&self, t: DateTime<Utc>) -> String {
        moment(t, self.now, self.offset)
    }

    fn since(&self, t: DateTime<Utc>) -> String {
        format!("since {}", self.time(t))
    }
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
        .filter(|n| n.band == band && n.kind != Kind::Channel)
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
    // Failing alert channels are said whatever else is red: nobody is paged about it.
    let channels = needs.iter().filter(|n| n.kind == Kind::Channel).count();
    if channels > 0 {
        let (one, many, failing) = Kind::Channel.words();
        let noun = if channels == 1 { one } else { many };
        if !words.is_empty() {
            words.push_str(" · ");
        }
        words.push_str(&format!("{channels} {noun} {failing}"));
    }
    words
}

/// `text` in a few words: its first clause, paths as file names, cut at a word.
pub fn few_words(text: &str) -> String {
    let (short, _) = without_paths(text);
    let first = short.split("; ").next().unwrap_or(&short).trim();
    if first.chars().count() <= FEW_WORDS {
        return first.to_string();
    }
    let mut cut = String::new();
    for word in first.split(' ') {
        if cut.chars().count() + word.chars().count() + 1 > FEW_WORDS {
            break;
        }
        if !cut.is_empty() {
            cut.push(' ');
        }
        cut.push_str(word);
    }
    if cut.is_empty() {
        cut = first.chars().take(FEW_WORDS).collect();
    }
    cut.push('…');
    cut
}

/// `text` with every absolute path replaced by its file name, and the paths it held.
fn without_paths(text: &str) -> (String, Vec<String>) {
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

fn task_anchor(t: &LiveTask) -> String {
    anchor("task", &format!("{}-{}", t.agent, t.id))
}

/// When something `ago_s` old at `at` crossed a threshold of `after_s`.
fn crossed(at: DateTime<Utc>, ago_s: u64, after_s: u64) -> DateTime<Utc> {
    at - chrono::Duration::seconds(ago_s as i64) + chrono::Duration::seconds(after_s as i64)
}

/// The code, unless it is plain SUCCESS (2001 SUCCESS_WITH_WARNINGS is worth saying).
fn code(status: &Asc) -> Option<String> {
    (status.code != Asc::SUCCESS.code).then(|| status.to_string())
}

/// A probe's value in words, "unknown", or its error; the error is red.
fn shown<T>(probe: &Probe<T>, show: impl FnOnce(&T) -> String) -> (String, Option<Band>) {
    match probe {
        Probe::Value(v) => (show(v), None),
        Probe::Unknown => ("unknown".into(), None),
        Probe::Error(r) => (format!("error: {r}"), Some(Band::Red)),
    }
}

/// A fact; an error the row's reason already says is not said again.
fn fact(label: &'static str, (text, band): (String, Option<Band>), reason: Option<&str>) -> Fact {
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

fn checked(meta: &SectionMeta, w: &Words) -> Option<String> {
    meta.checked_at
        .map(|at| format!("checked {} ago", human_age(seconds_since(at, w.now))))
}

/// The section's own failure, when it has no elements to show; `part` is its name in the
/// snapshot ("tasks.queue"), its element key's.
fn problem<T>(probe: &Probe<T>, meta: &SectionMeta, part: &str, w: &Words) -> Option<Problem> {
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

fn section(id: &'static str, title: &'static str, meta: &SectionMeta, w: &Words) -> Section {
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

fn group(rows: Vec<Row>) -> Group {
    Group {
        title: None,
        rows,
        folded: None,
        folded_n: 0,
        empty: None,
    }
}

/// Red rows first, then amber, then green; the order given within each band.
fn red_first(rows: Vec<Row>) -> Vec<Row> {
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
fn sorted<T>(items: Vec<T>, key: impl Fn(&T) -> (u64, String)) -> Vec<T> {
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

fn strip(history: Option<&History>, w: &Words) -> Option<Strip> {
    let h = history?;
    Some(Strip {
        label: h.uptime_words_at(w.offset),
        cells: h.strip.clone(),
        axis: STRIP_AXIS,
    })
}

fn whole(value: f64) -> String {
    (value.round() as i64).to_string()
}

fn join(parts: &[&str]) -> String {
    parts
        .iter()
        .filter(|p| !p.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join(" · ")
}

// ---------------------------------------------------------------------------------------------
// Agents
// ---------------------------------------------------------------------------------------------

fn agents(s: &Snapshot, w: &Words) -> Section {
    let meta = &s.sections.agents;
    let mut view = section("agents", "Agents", meta, w);
    view.problem = problem(&s.agents, meta, "agents", w);
    if let Probe::Value(rows) = &s.agents {
        let sorted = sorted(rows.iter().collect(), |a: &&Agent| (0, a.name.clone()));
        let mut g = group(red_first(
            sorted
                .into_iter()
                .map(|a| agent_row(a, &s.rules, w))
                .collect(),
        ));
        if g.rows.is_empty() {
            g.empty = Some("The registry lists no agents.");
        }
        view.groups.push(g);
    }
    view
}

fn agent_row(a: &Agent, rules: &RulesView, w: &Words) -> Row {
    let reason = a.reason.clone().filter(|_| a.band != Band::Green);
    let r = reason.as_deref();
    let exchange = match &a.last_exchange_s {
        // A down agent's last exchange is a fact, never an "ok".
        Probe::Value(age) => (
            format!("{} ago", human_age(w.age(a.checked_at, *age))),
            (a.up && a.exchange_band != Band::Green).then_some(a.exchange_band),
        ),
        other => shown(other, |_| String::new()),
    };
    let age_words = match &a.last_exchange_s {
        Probe::Value(age) => format!("{} ago", human_age(w.age(a.checked_at, *age))),
        _ => String::new(),
    };
    let place = join(&[
        a.plane.as_deref().unwrap_or(""),
        a.lane.value().map_or("", String::as_str),
        &age_words,
    ]);
    let skills = match &a.skills_count {
        Probe::Value(0) => ("0: the card lists no skills".into(), Some(Band::Red)),
        other => shown(other, u32::to_string),
    };
    let window = shown(&a.window, |w| match (&w.percent, &w.status) {
        (Probe::Value(p), Probe::Value(s)) => format!("{} % ({s})", whole(*p)),
        (Probe::Value(p), _) => format!("{} %", whole(*p)),
        (_, Probe::Value(s)) => s.clone(),
        _ => "unknown".into(),
    });
    // A window at or above the rules' percentage is amber: coloured as such behind the tap.
    let window = match (&a.window, window) {
        (Probe::Value(w), (text, None)) if w.band != Band::Green => (text, Some(w.band)),
        (_, shown) => shown,
    };
    let mut facts = vec![
        fact("last exchange", exchange, r),
        fact("skills", skills, r),
        fact("model", shown(&a.model, Clone::clone), r),
        fact("window", window, r),
        fact(
            "heartbeat",
            shown(&a.heartbeat, |h| {
                format!("{} · {} ms", h.dialect, h.latency_ms)
            }),
            r,
        ),
        fact("endpoint", (a.endpoint.clone(), None), r),
    ];
    if a.audit_skipped_lines > 0 {
        facts.push(fact(
            "audit lines skipped",
            (a.audit_skipped_lines.to_string(), None),
            r,
        ));
    }
    // An agent that is up and quiet went amber (or red) when its last exchange aged past the
    // rules' threshold.
    let since = match (&a.last_exchange_s, a.band) {
        (Probe::Value(age), band) if a.up && band != Band::Green && a.exchange_band == band => {
            let after = if band == Band::Red {
                rules.exchange_amber_below_s
            } else {
                rules.exchange_green_below_s
            };
            Some(crossed(a.checked_at, *age, after))
        }
        _ => None,
    };
    Row {
        kind: Some(if a.up { Kind::Agent } else { Kind::AgentDown }),
        what: format!("agent {}", a.name),
        since,
        anchor: anchor("agent", &a.name),
        band: a.band,
        badge: if a.up { a.band.word() } else { "down" },
        title: a.name.clone(),
        summary: place,
        code: code(&a.status).filter(|_| reason.is_some()),
        reason,
        held: w.held(&key::agent(&a.name), a.band),
        facts,
        checks: Vec::new(),
        strip: strip(a.history.as_ref(), w),
    }
}

// ---------------------------------------------------------------------------------------------
// Live tasks
// ---------------------------------------------------------------------------------------------

/// Whether a live task is stuck at `now`: flagged by the collector, or, still under the rule,
/// its age (which keeps counting after the poll) has reached the rule.
pub fn stuck_at(task: &LiveTask, no_reply_s: u64, now: DateTime<Utc>) -> bool {
    task.stuck
        || (under_the_rule(task) && task.age_s + seconds_since(task.checked_at, now) >= no_reply_s)
}

/// Unfinished, and neither a task its peer does not know (NOT_FOUND) nor ids withheld as
/// secret-shaped (GUARDRAIL_BLOCKED): the collector never judges those stuck.
fn under_the_rule(task: &LiveTask) -> bool {
    !finished(task)
        && task.status.code != Asc::NOT_FOUND.code
        && task.status.code != Asc::GUARDRAIL_BLOCKED.code
}

fn finished(task: &LiveTask) -> bool {
    task.state
        .value()
        .is_some_and(|s| TERMINAL_STATES.contains(&s.as_str()))
}

impl LiveTask {
    /// The task's band at `now` under the stuck rule: red also once it crossed the rule after
    /// the collector's poll.
    pub fn band_at(&self, no_reply_s: u64, now: DateTime<Utc>) -> Band {
        if stuck_at(self, no_reply_s, now) {
            Band::Red
        } else {
            self.band()
        }
    }
}

/// The work queue (spec 003 §3): who owns what and whether they ACKed; red rows first, newest
/// first within a band; finished tasks fold into a count.
fn queue(s: &Snapshot, w: &Words) -> Section {
    let meta = &s.sections.queue;
    let mut view = section("queue", "Work queue", meta, w);
    if s.rules.ack_within_s > 0 {
        view.note = Some(format!("ACK within {}", human_age(s.rules.ack_within_s)));
    }
    view.problem = problem(&s.tasks.queue, meta, "tasks.queue", w);
    if let Probe::Value(tasks) = &s.tasks.queue {
        let newest_first = sorted(tasks.iter().collect(), |t: &&QueueTask| {
            (
                i64::MAX.saturating_sub(t.created_at.timestamp()) as u64,
                t.id.clone(),
            )
        });
        let (open, done): (Vec<&QueueTask>, Vec<&QueueTask>) =
            newest_first.into_iter().partition(|t| {
                !t.is_terminal() || t.judge(s.rules.ack_within_s, w.now).0 != Band::Green
            });
        let mut g = group(red_first(
            open.into_iter().map(|t| queue_row(t, s, w)).collect(),
        ));
        if !done.is_empty() {
            g.folded_n = done.len();
            g.folded = Some(format!("{} finished", done.len()));
        }
        if g.rows.is_empty() && done.is_empty() {
            g.empty = Some("No tasks in the queue.");
        }
        view.groups.push(g);
    }
    view
}

fn queue_row(t: &QueueTask, s: &Snapshot, w: &Words) -> Row {
    let (band, status, reason) = t.judge(s.rules.ack_within_s, w.now);
    let state = t
        .state
        .strip_prefix("TASK_STATE_")
        .unwrap_or(&t.state)
        .to_ascii_lowercase();
    let since = match reason.as_deref() {
        Some(r) if r.starts_with("no ACK") => Some(crossed(t.created_at, 0, s.rules.ack_within_s)),
        Some(r) if r.starts_with("deadline passed") => t.deadline,
        _ => None,
    };
    let r = reason.as_deref();
    let mut facts = vec![
        fact("id", (t.id.clone(), None), r),
        fact("state", (state.clone(), None), r),
        fact(
            "created",
            (
                format!("{} by {}", w.time(t.created_at), t.created_by),
                None,
            ),
            r,
        ),
    ];
    if !t.tagged.is_empty() {
        facts.push(fact("tagged", (t.tagged.join(", "), None), r));
    }
    if let Some(ack) = &t.ack {
        let mut words = format!("{} by {} at {}", ack.kind, ack.by, w.time(ack.at));
        if let Some(to) = &ack.to {
            words.push_str(&format!(" to {to}"));
        }
        if let Some(eta) = ack.eta {
            words.push_str(&format!(", ETA {}", w.time(eta)));
        }
        facts.push(fact("ACK", (words, None), r));
    }
    if let Some(d) = t.deadline {
        facts.push(fact("deadline", (w.time(d), None), r));
    }
    if let Some(at) = t.last_report_at {
        facts.push(fact(
            "last report",
            (format!("{} ago", human_age(seconds_since(at, w.now))), None),
            r,
        ));
    }
    if let Some(m) = &t.status_message {
        facts.push(fact("status", (m.clone(), None), r));
    }
    let mut summary = vec![t.ownership(), state];
    if let Some(d) = t.deadline.filter(|_| !t.is_terminal()) {
        summary.push(format!("due {}", w.time(d)));
    }
    let summary: Vec<&str> = summary.iter().map(String::as_str).collect();
    Row {
        kind: Some(Kind::Task),
        what: format!("task {}", few_words(&t.title)),
        since,
        anchor: anchor("queue", &t.id),
        band,
        badge: band.word(),
        title: t.title.clone(),
        summary: join(&summary),
        code: code(&status).filter(|_| reason.is_some()),
        facts,
        reason,
        held: w.held(&key::queue_task(&t.id), band),
        checks: Vec::new(),
        strip: None,
    }
}

fn live_tasks(s: &Snapshot, w: &Words) -> Section {
    let meta = &s.sections.live_tasks;
    let mut view = section("live", "Live tasks", meta, w);
    let rule = s.rules.no_reply_s;
    view.note = Some(format!("stuck: no reply for {}", human_age(rule)));
    view.problem = problem(&s.tasks.live, meta, "tasks.live", w);
    if let Probe::Value(tasks) = &s.tasks.live {
        // Unfinished tasks oldest first, so one about to cross the rule is at the top of the
        // green ones; finished ones last.
        let sorted = sorted(tasks.iter().collect(), |t: &&LiveTask| {
            (
                (u64::from(finished(t)) << 63) | ((u64::MAX >> 1) - t.age_s.min(u64::MAX >> 1)),
                String::new(),
            )
        });
        let mut g = group(red_first(
            sorted.into_iter().map(|t| task_row(t, rule, w)).collect(),
        ));
        if g.rows.is_empty() {
            g.empty = Some("No live A2A tasks.");
        }
        view.groups.push(g);
    }
    view
}

fn task_row(t: &LiveTask, rule: u64, w: &Words) -> Row {
    let stuck = stuck_at(t, rule, w.now);
    let band = t.band_at(rule, w.now);
    let age = w.age(t.checked_at, t.age_s);
    let state = shown(&t.state, |s| {
        // "working", not "TASK_STATE_WORKING": the wire value breaks mid-word on a phone.
        s.strip_prefix("TASK_STATE_")
            .unwrap_or(s)
            .to_ascii_lowercase()
    });
    let reason = if stuck && !t.stuck {
        // Crossed the rule since the poll: said as the collector says it.
        Some(format!(
            "no reply for {} (>= {})",
            human_age(age),
            human_age(rule)
        ))
    } else {
        t.reason.clone().filter(|_| band != Band::Green)
    };
    // A green task's note ("the heartbeat's own task") is a fact, not a warning.
    let note = t.reason.clone().filter(|_| band == Band::Green);
    let code = if stuck && !t.stuck {
        Some(Asc::TIMEOUT.to_string())
    } else {
        code(&t.status)
    };
    let r = reason.as_deref();
    let summary = join(&[
        &t.agent,
        &state.0,
        &format!("{} without progress", human_age(age)),
    ]);
    Row {
        kind: Some(if stuck { Kind::TaskStuck } else { Kind::Task }),
        what: format!("task {} ({})", t.id, t.agent),
        since: stuck.then(|| crossed(t.checked_at, t.age_s, rule)),
        anchor: task_anchor(t),
        band,
        badge: if stuck { "STUCK" } else { band.word() },
        title: t.id.clone(),
        summary,
        code: code.filter(|_| reason.is_some()),
        facts: {
            let mut facts = vec![
                fact("state", state, r),
                fact("agent", (t.agent.clone(), None), r),
            ];
            facts.extend(note.map(|n| fact("note", (n, None), r)));
            facts
        },
        reason,
        held: w.held(&key::live_task(&t.agent, &t.id), band),
        checks: Vec::new(),
        strip: None,
    }
}

// ---------------------------------------------------------------------------------------------
// Board
// ---------------------------------------------------------------------------------------------

impl Card {
    /// The card's band; red as well when the card is stale.
    pub fn judged(&self) -> Band {
        if self.stale { Band::Red } else { self.band }
    }
}

fn board(s: &Snapshot, w: &Words) -> Section {
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
        band,
        what: format!("board {}", src.name),
        reason,
        since: None,
        anchor: anchor("board", &src.name),
        held: w.held(&key::unlisted_cards(&src.name), band),
        kind: Kind::Card,
        count: n as usize,
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
    let r = reason.as_deref();
    let mut facts = vec![fact("cards", cards.clone(), r)];
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
    let r = reason.as_deref();
    let owner = c.assignee.as_deref().unwrap_or("unassigned");
    let age = human_age(w.age(c.checked_at, c.age_s));
    let mut facts = vec![fact("id", (format!("{} {}", c.board, c.id), None), r)];
    if let Some(k) = &c.block_kind
        && !r.is_some_and(|r| r.contains(k.as_str()))
    {
        facts.push(fact("blocked", (k.clone(), None), r));
    }
    if band == Band::Green && !c.conditions.is_empty() {
        facts.push(fact("events", (c.conditions.join("; "), None), r));
    }
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
    }
}

// ---------------------------------------------------------------------------------------------
// Systems and backups
// ---------------------------------------------------------------------------------------------

fn systems(s: &Snapshot, w: &Words) -> Section {
    let meta = &s.sections.systems;
    let mut view = section("systems", "Systems", meta, w);
    view.problem = problem(&s.systems, meta, "systems", w);
    if let Probe::Value(hosts) = &s.systems {
        let sorted = sorted(hosts.iter().collect(), |h: &&System| (0, h.host.clone()));
        let mut g = group(red_first(
            sorted.into_iter().map(|h| host_row(h, w)).collect(),
        ));
        if g.rows.is_empty() {
            g.empty = Some("No hosts configured.");
        }
        view.groups.push(g);
    }
    // Whether alerts reach anyone is a system of its own; without alerting, nothing is said.
    if s.alerts.configured {
        let mut g = group(red_first(
            s.alerts
                .channels
                .iter()
                .map(|c| channel_row(c, w))
                .collect(),
        ));
        g.title = Some("alerts".into());
        if g.rows.is_empty() {
            g.empty = Some("no alert channels");
        }
        view.groups.push(g);
    }
    view
}

/// An alert channel (or the dead man's switch): green while it delivers, amber while it fails.
fn channel_row(c: &ChannelState, w: &Words) -> Row {
    let band = c.band();
    let reason = c.failing_since.map(|_| {
        c.reason
            .as_deref()
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .unwrap_or("failing")
            .to_string()
    });
    let waiting = match c.pending {
        0 => "none".to_string(),
        1 => "1 alert".to_string(),
        n => format!("{n} alerts"),
    };
    let r = reason.as_deref();
    Row {
        kind: Some(Kind::Channel),
        what: c
            .describe(w.now, w.offset)
            .unwrap_or_else(|| format!("alerts: {}", c.name)),
        since: c.failing_since,
        anchor: anchor("alert", &c.name),
        band,
        badge: band.word(),
        title: c.name.clone(),
        summary: match c.failing_since {
            Some(t) => format!("failing {}", w.since(t)),
            None => "delivering".into(),
        },
        code: None,
        facts: vec![
            fact("waiting", (waiting, None), r),
            fact(
                "checked",
                (
                    format!("{} ago", human_age(seconds_since(c.checked_at, w.now))),
                    None,
                ),
                r,
            ),
        ],
        reason,
        held: None,
        checks: Vec::new(),
        strip: None,
    }
}

fn gb(v: &f64) -> String {
    format!("{} GB", one_decimal(*v))
}

fn host_row(h: &System, w: &Words) -> Row {
    let band = h.band();
    // Checks are sampled with their host: until its samples span a day, their uptimes say
    // since when, as the host's strip does.
    let span = h.history.as_ref().and_then(|x| x.since).map(|t| w.time(t));
    let span = span.as_deref();
    let mut services = named(&h.services, "service", "active", "inactive", span);
    let mut tunnels = named(&h.tunnels, "tunnel", "up", "down", span);
    let mut crons: Vec<(Check, Option<String>)> =
        h.crons.iter().map(|c| cron_check(c, span)).collect();
    // Each check is an element of its own: its hold is said on it, unless the host's row
    // already says the same words.
    let held = w.held(&key::host(&h.host), band);
    let hold = |kind: &str, name: &str, b: Band| {
        w.held(&key::host_check(&h.host, kind, name), b)
            .filter(|m| Some(m) != held.as_ref())
    };
    for (kind, checks, list) in [
        ("service", &mut services, &h.services),
        ("tunnel", &mut tunnels, &h.tunnels),
    ] {
        for ((check, _), c) in checks.iter_mut().zip(list) {
            check.held = hold(kind, &c.name, check.band);
        }
    }
    for ((check, _), c) in crons.iter_mut().zip(&h.crons) {
        check.held = hold("cron", &c.name, check.band);
    }
    // The host's reason in a few words, from its checks (each check keeps its own why behind
    // the tap): said once.
    let mut problems: Vec<(Band, String)> = Vec::new();
    for (check, short) in services.iter().chain(&tunnels).chain(&crons) {
        if let Some(short) = short {
            problems.push((check.band, short.clone()));
        }
    }
    let vault = match &h.vault_parity {
        Probe::Value(true) => ("in sync".to_string(), None),
        Probe::Value(false) => (
            format!(
                "OUT OF SYNC: {}",
                h.vault_reason.as_deref().unwrap_or("no reason given")
            ),
            Some(Band::Red),
        ),
        Probe::Unknown => ("not checked".into(), None),
        Probe::Error(r) => (format!("error: {r}"), Some(Band::Red)),
    };
    if vault.1.is_some() {
        problems.push((Band::Red, "vault out of sync".into()));
    }
    let ram = match (&h.ram_used_gb, &h.ram_total_gb) {
        (Probe::Value(u), Probe::Value(t)) => (format!("{} / {}", gb(u), gb(t)), None),
        (u, t) => {
            let (u, ub) = shown(u, gb);
            let (t, tb) = shown(t, gb);
            (format!("{u} / {t}"), ub.or(tb))
        }
    };
    let disk = shown(&h.disk_free_gb, gb);
    for (label, b) in [("RAM", ram.1), ("disk", disk.1)] {
        if b.is_some() {
            problems.push((Band::Red, format!("{label} unreadable")));
        }
    }
    let reason = match band {
        Band::Green => None,
        // The host itself could not be read: its own reason, every check is stale with it.
        _ if h.stale || problems.is_empty() => h.reason.as_deref().map(few_words),
        _ => {
            let red = problems.iter().filter(|p| p.0 == Band::Red);
            let amber = problems.iter().filter(|p| p.0 != Band::Red);
            Some(
                red.chain(amber)
                    .map(|p| p.1.as_str())
                    .collect::<Vec<_>>()
                    .join(" · "),
            )
        }
    };
    let r = reason.as_deref();
    let source = if h.source.is_empty() {
        String::new()
    } else {
        format!("via {}", h.source)
    };
    Row {
        kind: Some(Kind::Host),
        what: format!("host {}", h.host),
        since: None,
        anchor: anchor("host", &h.host),
        band,
        badge: band.word(),
        title: h.host.clone(),
        summary: join(&[
            &source,
            &format!(
                "checked {} ago",
                human_age(seconds_since(h.checked_at, w.now))
            ),
        ]),
        code: code(&h.status).filter(|_| reason.is_some()),
        facts: vec![
            fact("RAM", ram, r),
            fact("disk free", disk, r),
            Fact {
                held: w
                    .held(&key::vault(&h.host), vault.1.unwrap_or(Band::Green))
                    .filter(|m| Some(m) != held.as_ref()),
                ..fact("vault parity", vault, r)
            },
        ],
        reason,
        held,
        checks: vec![
            Checks {
                title: "services",
                items: services.into_iter().map(|c| c.0).collect(),
            },
            Checks {
                title: "tunnels",
                items: tunnels.into_iter().map(|c| c.0).collect(),
            },
            Checks {
                title: "crons",
                items: crons.into_iter().map(|c| c.0).collect(),
            },
        ],
        strip: strip(h.history.as_ref(), w),
    }
}

/// " · 24 h 99.5 %" when the check has samples, " · 100.0 % since 20:38" while they span
/// less than a day.
fn uptime_suffix(pct: Option<f64>, span: Option<&str>) -> String {
    match (pct, span) {
        (None, _) => String::new(),
        (Some(p), None) => format!(" · 24 h {} %", one_decimal(p)),
        (Some(p), Some(since)) => format!(" · {} % since {since}", one_decimal(p)),
    }
}

/// Each check with its state in words, and the few words the host's reason uses for it when
/// it is not ok.
fn named(
    list: &[NamedCheck],
    kind: &str,
    yes: &str,
    no: &str,
    span: Option<&str>,
) -> Vec<(Check, Option<String>)> {
    list.iter()
        .map(|c| {
            let ok = c.ok == Probe::Value(true) && !c.stale;
            let state = match &c.ok {
                Probe::Value(true) if c.stale => format!("{yes} (stale)"),
                Probe::Value(true) => yes.to_string(),
                // A unit's own state word ("failed") says more than "inactive".
                Probe::Value(false) => match &c.reason {
                    Some(r) if !r.contains(' ') => r.clone(),
                    _ => no.to_string(),
                },
                Probe::Unknown => "unknown".into(),
                Probe::Error(_) => "no answer".into(),
            };
            let band = if ok { Band::Green } else { Band::Red };
            // The reason, unless the state word already is it.
            let why = match &c.ok {
                Probe::Error(e) => Some(e.clone()),
                _ => c.reason.clone().filter(|r| !ok && *r != state),
            };
            let check = Check {
                band,
                text: format!(
                    "{} {state}{}",
                    c.name,
                    uptime_suffix(c.uptime_24h_pct, span)
                ),
                why: why.filter(|_| !ok),
                held: None,
            };
            let short = (!ok).then(|| format!("{kind} {} {state}", c.name));
            (check, short)
        })
        .collect()
}

fn cron_word(state: CronState) -> &'static str {
    match state {
        CronState::Up => "up",
        CronState::Late => "late",
        CronState::Down => "down",
    }
}

fn cron_check(c: &CronCheck, span: Option<&str>) -> (Check, Option<String>) {
    let band = if c.stale { Band::Red } else { c.state.band() };
    let last = match &c.last_ok_s {
        Probe::Value(s) => format!("{} ago", human_age(*s)),
        Probe::Unknown => "never".into(),
        Probe::Error(r) => format!("error: {r}"),
    };
    let word = if c.stale { "stale" } else { cron_word(c.state) };
    let check = Check {
        band,
        text: format!(
            "{} {word} · last ok {last} · every {}, grace {}{}",
            c.name,
            human_age(c.period_s),
            human_age(c.grace_s),
            uptime_suffix(c.uptime_24h_pct, span)
        ),
        why: c.reason.clone().filter(|_| band != Band::Green),
        held: None,
    };
    let short = (band != Band::Green).then(|| format!("cron {} {word}", c.name));
    (check, short)
}

fn backups(s: &Snapshot, w: &Words) -> Section {
    let meta = &s.sections.backups;
    let mut view = section("backups", "Backups", meta, w);
    view.problem = problem(&s.backups, meta, "backups", w);
    if let Probe::Value(b) = &s.backups {
        view.groups.push(group(vec![backup_row(b, s, w)]));
    }
    view
}

fn backup_row(b: &Backups, s: &Snapshot, w: &Words) -> Row {
    let band = b.band();
    let name = if b.name.is_empty() { "backup" } else { &b.name };
    // A green backup's reason ("20 h old, amber at 1 d 2 h") is a fact, not a warning.
    let reason = b.reason.clone().filter(|_| band != Band::Green);
    let r = reason.as_deref();
    let age = match (&b.gdrive_latest, &b.age_h) {
        (Probe::Value(t), _) => format!("latest {} ago", human_age(seconds_since(*t, w.now))),
        (_, Probe::Value(h)) => format!("latest {} h ago", one_decimal(*h)),
        (Probe::Error(_), _) | (_, Probe::Error(_)) => "latest unknown (error)".into(),
        _ => "latest unknown".into(),
    };
    let mut facts = vec![
        fact("latest", shown(&b.gdrive_latest, |t| w.time(*t)), r),
        fact(
            "thresholds",
            (
                format!(
                    "amber from {}, red from {}",
                    human_age(s.rules.backup_amber_after_s),
                    human_age(s.rules.backup_red_after_s)
                ),
                None,
            ),
            r,
        ),
    ];
    if band == Band::Green
        && let Some(note) = &b.reason
    {
        facts.push(fact("note", (note.clone(), None), r));
    }
    let since = match &b.gdrive_latest {
        Probe::Value(latest) if band != Band::Green && !b.stale => {
            let after = if band == Band::Red {
                s.rules.backup_red_after_s
            } else {
                s.rules.backup_amber_after_s
            };
            Some(crossed(*latest, 0, after))
        }
        _ => None,
    };
    Row {
        kind: Some(Kind::Backup),
        what: format!("backup {name}"),
        since,
        anchor: anchor("backup", name),
        band,
        badge: band.word(),
        title: name.to_string(),
        summary: age,
        code: code(&b.status).filter(|_| reason.is_some()),
        reason,
        held: w.held(key::BACKUPS, band),
        facts,
        checks: Vec::new(),
        strip: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Backups, Board, BoardSource, Card, CronCheck, NamedCheck, RulesView, Sections};
    use chrono::Timelike;

    fn rules() -> RulesView {
        RulesView {
            no_reply_s: 60,
            ..crate::rules::tests::rules()
        }
    }

    fn utc() -> FixedOffset {
        FixedOffset::east_opt(0).unwrap()
    }

    fn t0() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-11-30T19:20:00Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    fn agent(name: &str, band: Band, up: bool, reason: Option<&str>) -> Agent {
        Agent {
            name: name.into(),
            endpoint: format!("http://127.0.0.1:1/{name}"),
            plane: Some("heart".into()),
            up,
            last_exchange_s: Probe::Value(90),
            exchange_band: Band::Green,
            skills_count: Probe::Value(3),
            lane: Probe::Value("hub".into()),
            model: Probe::Value("claude".into()),
            window: Probe::Unknown,
            heartbeat: Probe::Unknown,
            band,
            status: if band == Band::Green {
                Asc::SUCCESS
            } else {
                Asc::DEPENDENCY_UNAVAILABLE
            },
            reason: reason.map(Into::into),
            audit_skipped_lines: 0,
            last_report_s: None,
            history: None,
            checked_at: t0(),
            stale: !up,
        }
    }

    fn task(id: &str, age_s: u64, stuck: bool, state: &str) -> LiveTask {
        LiveTask {
            id: id.into(),
            agent: "min".into(),
            state: Probe::Value(state.into()),
            age_s,
            stuck,
            status: if stuck { Asc::TIMEOUT } else { Asc::RUNNING },
            reason: stuck.then(|| format!("no reply for {age_s} s (>= 60 s)")),
            checked_at: t0(),
            stale: false,
        }
    }

    fn card(id: &str, status: &str, band: Band, conditions: &[&str]) -> Card {
        Card {
            board: "ops".into(),
            id: id.into(),
            title: format!("Job {id}"),
            status: status.into(),
            assignee: Some("nova".into()),
            priority: Some(1),
            age_s: 3600,
            block_kind: None,
            latest_activity_at: None,
            conditions: conditions.iter().map(|c| c.to_string()).collect(),
            band,
            checked_at: t0(),
            stale: false,
        }
    }

    fn source(name: &str, projection: Probe<String>) -> BoardSource {
        BoardSource {
            name: name.into(),
            plane: Some("Docs".into()),
            cards: Probe::Value(4),
            projection,
            status: Asc::SUCCESS,
            reason: None,
            columns: Vec::new(),
            attention_left_out: Default::default(),
            checked_at: t0(),
            stale: false,
        }
    }

    fn check(name: &str, ok: bool, reason: Option<&str>) -> NamedCheck {
        NamedCheck {
            name: name.into(),
            ok: Probe::Value(ok),
            reason: reason.map(Into::into),
            uptime_24h_pct: Some(if ok { 100.0 } else { 0.0 }),
            checked_at: t0(),
            stale: false,
        }
    }

    fn host(name: &str, band: Band, services: Vec<NamedCheck>, crons: Vec<CronCheck>) -> System {
        System {
            host: name.into(),
            source: "node_exporter".into(),
            ram_used_gb: Probe::Value(7.0),
            ram_total_gb: Probe::Value(8.0),
            disk_free_gb: Probe::Value(9.0),
            services,
            tunnels: Vec::new(),
            crons,
            vault_parity: Probe::Unknown,
            vault_reason: None,
            band,
            status: if band == Band::Green {
                Asc::SUCCESS
            } else {
                Asc::DEPENDENCY_UNAVAILABLE
            },
            reason: (band != Band::Green).then(|| {
                "service hermes-gateway: failed; cron db-dump: last run failed with exit code 2"
                    .into()
            }),
            history: None,
            checked_at: t0(),
            stale: false,
        }
    }

    /// The demo fleet in small: a down agent, one without skills, a quiet one and a healthy
    /// one; a stuck task, one about to cross the rule and a finished one; a refused projection,
    /// a crashed and a timed-out card, a blocked one and two finished ones; a red host with a
    /// failed service and a down cron, a green host; a green backup with a note.
    fn fleet() -> Snapshot {
        let mut s = Snapshot::empty(t0(), rules());
        s.stale = false;
        let meta = SectionMeta {
            configured: true,
            checked_at: Some(t0()),
            duration_ms: Some(1),
            stale: false,
        };
        s.sections = Sections {
            tasks: meta.clone(),
            board: meta.clone(),
            live_tasks: meta.clone(),
            agents: meta.clone(),
            systems: meta.clone(),
            backups: meta,
            ..Sections::default()
        };
        let mut vega = agent("vega", Band::Red, true, Some("agent card lists no skills"));
        vega.skills_count = Probe::Value(0);
        vega.status = Asc::FAILED_PRECONDITION;
        let mut lyra = agent("lyra", Band::Red, false, Some("down: connection refused"));
        lyra.skills_count = Probe::error("down: connection refused");
        lyra.heartbeat = Probe::error("heartbeat: connection refused");
        let mut juno = agent("juno", Band::Amber, true, Some("last exchange 3 h ago"));
        juno.last_exchange_s = Probe::Value(3 * 3600);
        juno.exchange_band = Band::Amber;
        juno.status = Asc::SUCCESS_WITH_WARNINGS;
        s.agents = Probe::Value(vec![
            agent("min", Band::Green, true, None),
            vega,
            juno,
            lyra,
        ]);
        s.tasks.live = Probe::Value(vec![
            task("t_done", 5, false, "TASK_STATE_COMPLETED"),
            task("t_soon", 50, false, "TASK_STATE_WORKING"),
            task("t_stuck", 100, true, "TASK_STATE_WORKING"),
        ]);
        let mut blocked = card("t_blk", "blocked", Band::Amber, &["blocked: needs_input"]);
        blocked.block_kind = Some("needs_input".into());
        s.tasks.board = Probe::Value(Board {
            columns: ["todo", "running", "blocked", "done"]
                .map(String::from)
                .to_vec(),
            cards: vec![
                card("t_todo", "todo", Band::Green, &[]),
                card(
                    "t_crash",
                    "running",
                    Band::Red,
                    &["crashed: the worker process died at 2026-11-30 19:12 UTC"],
                ),
                card(
                    "t_slow",
                    "running",
                    Band::Red,
                    &[
                        "timed_out: the worker was killed after 1 h 30 min (limit 1 h) at 2026-11-30 19:13 UTC",
                    ],
                ),
                blocked,
                card("t_d1", "done", Band::Green, &[]),
                card("t_d2", "done", Band::Green, &["claim_extended"]),
            ],
            sources: vec![
                source("research", Probe::Value("unchanged".into())),
                source(
                    "daily-operation",
                    Probe::error(
                        "refused: /srv/vault/Docs/Kanban/daily-operation.kanban has no fleetdash marker (hand-edited?); left untouched",
                    ),
                ),
            ],
        });
        let cron = |name: &str, state: CronState, reason: Option<&str>| CronCheck {
            name: name.into(),
            state,
            last_ok_s: Probe::Value(3600),
            period_s: 86400,
            grace_s: 7200,
            reason: reason.map(Into::into),
            uptime_24h_pct: Some(100.0),
            checked_at: t0(),
            stale: false,
        };
        s.systems = Probe::Value(vec![
            host(
                "prod",
                Band::Red,
                vec![
                    check("nginx", true, None),
                    check("hermes-gateway", false, Some("failed")),
                ],
                vec![cron(
                    "db-dump",
                    CronState::Down,
                    Some("last run failed with exit code 2"),
                )],
            ),
            host(
                "LAB",
                Band::Green,
                vec![check("hermes-gateway", true, None)],
                vec![cron("cert-renew", CronState::Up, None)],
            ),
        ]);
        s.backups = Probe::Value(Backups {
            name: "gdrive".into(),
            gdrive_latest: Probe::Value(t0() - chrono::Duration::hours(20)),
            age_h: Probe::Value(20.0),
            band: Band::Green,
            status: Asc::SUCCESS,
            reason: Some("latest backup 20 h old (amber at 1 d 2 h)".into()),
            checked_at: t0(),
            stale: false,
        });
        s
    }

    /// A work-queue task tagged on three agents, nobody owning it yet.
    fn queue_task(id: &str, minutes_ago: i64) -> QueueTask {
        QueueTask {
            id: id.into(),
            title: format!("Task {id}"),
            owner: None,
            tagged: vec!["mira".into(), "nova".into(), "sol".into()],
            created_by: "operator".into(),
            created_at: t0() - chrono::Duration::minutes(minutes_ago),
            deadline: None,
            state: "TASK_STATE_SUBMITTED".into(),
            ack: None,
            blocked_on: None,
            last_report_at: None,
            status_message: None,
            worker_died: false,
            band: Band::Green,
            status: Asc::SUCCESS,
            reason: None,
            checked_at: t0(),
            stale: false,
        }
    }

    /// `key` held until `minutes` after t0 (19:20 UTC) for `reason`.
    fn hold(key: String, minutes: i64, reason: &str) -> Held {
        Held {
            key,
            until: t0() + chrono::Duration::minutes(minutes),
            reason: reason.into(),
            checked_at: t0(),
        }
    }

    fn channel(
        name: &str,
        failing_min_ago: Option<i64>,
        reason: &str,
        pending: u64,
    ) -> ChannelState {
        ChannelState {
            name: name.into(),
            failing_since: failing_min_ago.map(|m| t0() - chrono::Duration::minutes(m)),
            reason: (!reason.is_empty()).then(|| reason.into()),
            pending,
            checked_at: t0(),
        }
    }

    fn row<'a>(g: &'a Glance, anchor: &str) -> &'a Row {
        g.sections
            .iter()
            .flat_map(|s| &s.groups)
            .flat_map(|g| &g.rows)
            .find(|r| r.anchor == anchor)
            .unwrap_or_else(|| panic!("no row {anchor}"))
    }

    fn at(s: &Snapshot, secs: i64) -> Glance {
        Glance::new(s, s.generated_at + chrono::Duration::seconds(secs), utc())
    }

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
                "✖ agent vega · agent card lists no skills",
                "✖ task t_stuck (min) · no reply for 100 s (>= 60 s) · since 19:19",
                "✖ board daily-operation · projection refused: daily-operation.kanban has no…",
                "✖ card Job t_crash · crashed: the worker process died · since 19:12",
                "✖ card Job t_slow · timed_out: the worker was killed after 1 h 30 min… · since 19:13",
                "✖ host prod · service hermes-gateway failed · cron db-dump down",
                "▲ agent juno · last exchange 3 h ago · since 16:50",
                "▲ card Job t_blk · blocked: needs_input",
            ]
        );
        // Each line leads to its row.
        for n in &g.needs {
            assert_eq!(row(&g, &n.anchor).band, n.band, "{}", n.anchor);
        }
        // Every element not green has its line: nothing red hides below the fold.
        let not_green = g
            .sections
            .iter()
            .flat_map(|s| &s.groups)
            .flat_map(|g| &g.rows)
            .filter(|r| r.band != Band::Green)
            .count();
        assert_eq!(g.needs.len(), not_green);
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

    #[test]
    fn a_task_turns_stuck_when_its_age_reaches_the_rule_at_now_not_before() {
        let s = fleet();
        // t_soon: 50 s without progress at the poll, the rule is 60 s.
        let before = at(&s, 9);
        assert_eq!(row(&before, "task-min-t_soon").band, Band::Green);
        assert_eq!(
            before.counts,
            s.verdict_at(s.generated_at + chrono::Duration::seconds(9))
        );
        let after = at(&s, 10);
        let r = row(&after, "task-min-t_soon");
        assert_eq!((r.band, r.badge), (Band::Red, "STUCK"));
        assert_eq!(r.reason.as_deref(), Some("no reply for 1 min (>= 1 min)"));
        assert_eq!(r.code.as_deref(), Some("ASC-5004 TIMEOUT"));
        assert_eq!(after.counts.red, before.counts.red + 1);
        assert_eq!(
            after.counts,
            s.verdict_at(s.generated_at + chrono::Duration::seconds(10))
        );
        assert!(
            after.headline.contains("2 tasks stuck"),
            "{}",
            after.headline
        );
        // A finished task never does.
        assert_eq!(row(&at(&s, 3600), "task-min-t_done").band, Band::Green);
    }

    #[test]
    fn a_down_agent_says_its_reason_once_and_its_last_exchange_is_never_ok() {
        let g = at(&fleet(), 30);
        let lyra = row(&g, "agent-lyra");
        assert_eq!(lyra.badge, "down");
        assert_eq!(lyra.reason.as_deref(), Some("down: connection refused"));
        assert_eq!(
            lyra.code.as_deref(),
            Some("ASC-5003 DEPENDENCY_UNAVAILABLE")
        );
        let said = |label: &str| lyra.facts.iter().find(|f| f.label == label).unwrap();
        assert_eq!(said("skills").text, "error, as above");
        assert_eq!(said("heartbeat").text, "error, as above");
        // Ages count from the poll; no band word, no green for a down agent's exchange.
        assert_eq!(
            (
                said("last exchange").text.as_str(),
                said("last exchange").band
            ),
            ("2 min ago", None)
        );
        assert!(!lyra.summary.contains("ok"), "{}", lyra.summary);
        // A green row is one quiet line: no reason, no code.
        let min = row(&g, "agent-min");
        assert_eq!((min.reason.as_ref(), min.code.as_ref()), (None, None));
        assert_eq!(min.summary, "heart · hub · 2 min ago");
    }

    #[test]
    fn a_window_at_the_rules_percentage_is_amber_and_its_reason_said_once() {
        let mut s = fleet();
        if let Probe::Value(rows) = &mut s.agents {
            let min = &mut rows[0];
            min.window = Probe::Value(crate::Window {
                model: Probe::Value("claude".into()),
                percent: Probe::Value(93.0),
                status: Probe::Value("near limit".into()),
                resets_at: Probe::Unknown,
                band: Band::Amber,
            });
            min.band = Band::Amber;
            min.status = Asc::SUCCESS_WITH_WARNINGS;
            min.reason = Some("model window 93 % (>= 90 %)".into());
        }
        let g = at(&s, 0);
        let min = row(&g, "agent-min");
        assert_eq!(min.band, Band::Amber);
        assert_eq!(min.reason.as_deref(), Some("model window 93 % (>= 90 %)"));
        let window = min.facts.iter().find(|f| f.label == "window").unwrap();
        assert_eq!(
            (window.text.as_str(), window.band),
            ("93 % (near limit)", Some(Band::Amber))
        );
        assert!(
            g.needs
                .iter()
                .any(|n| n.what == "agent min" && n.band == Band::Amber)
        );
    }

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
            Some("timed_out: the worker was killed after 1 h 30 min (limit 1 h) at 20:13")
        );
        let need = g.needs.iter().find(|n| n.anchor == crash.anchor).unwrap();
        assert_eq!(need.since.as_deref(), Some("since 20:12"));
        // A blocked card's kind is said once, by its condition.
        let blocked = row(&g, "card-ops-t_blk");
        assert_eq!(blocked.reason.as_deref(), Some("blocked: needs_input"));
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
                    "blocked: needs_input",
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

    #[test]
    fn a_host_says_its_problems_once_in_a_few_words_and_each_check_keeps_its_why() {
        let g = at(&fleet(), 0);
        let prod = row(&g, "host-prod");
        assert_eq!(
            prod.reason.as_deref(),
            Some("service hermes-gateway failed · cron db-dump down")
        );
        let services = &prod.checks[0].items;
        assert_eq!(services[1].text, "hermes-gateway failed · 24 h 0.0 %");
        assert_eq!(
            services[1].why, None,
            "the state word already is the reason"
        );
        let crons = &prod.checks[2].items;
        assert_eq!(crons[0].band, Band::Red);
        assert_eq!(
            crons[0].why.as_deref(),
            Some("last run failed with exit code 2")
        );
        assert_eq!(
            prod.checks[1].items.len(),
            0,
            "no tunnels: an empty list, said so by the renderer"
        );
        assert_eq!(row(&g, "host-LAB").reason, None);

        // Until the host's samples span a day, its checks' uptimes say since when too.
        let mut young = fleet();
        if let Probe::Value(hosts) = &mut young.systems {
            for h in hosts {
                h.history = Some(History {
                    uptime_24h_pct: Some(50.0),
                    strip: ".".repeat(47) + "d",
                    slot_s: 1800,
                    samples: 2,
                    since: Some(young.generated_at - chrono::Duration::minutes(20)),
                });
            }
        }
        let g = at(&young, 0);
        let services = &row(&g, "host-prod").checks[0].items;
        let start = young.generated_at - chrono::Duration::minutes(20);
        let hm = format!("{:02}:{:02}", start.hour(), start.minute());
        assert_eq!(
            services[1].text,
            format!("hermes-gateway failed · 0.0 % since {hm}")
        );
        let crons = &row(&g, "host-prod").checks[2].items;
        assert!(
            crons[0].text.ends_with(&format!("% since {hm}")),
            "{}",
            crons[0].text
        );
    }

    #[test]
    fn a_green_backup_keeps_its_note_as_a_fact_and_an_amber_one_says_since_when() {
        let s = fleet();
        let g = at(&s, 0);
        let b = row(&g, "backup-gdrive");
        assert_eq!((b.band, b.reason.as_ref()), (Band::Green, None));
        assert_eq!(b.summary, "latest 20 h ago");
        assert!(
            b.facts
                .iter()
                .any(|f| f.label == "note" && f.band.is_none())
        );
        let mut amber = s.clone();
        if let Probe::Value(b) = &mut amber.backups {
            b.gdrive_latest = Probe::Value(t0() - chrono::Duration::hours(30));
            b.band = Band::Amber;
            b.reason = Some("latest backup 30 h old".into());
        }
        let g = at(&amber, 0);
        let need = g
            .needs
            .iter()
            .find(|n| n.anchor == "backup-gdrive")
            .unwrap();
        // 30 h ago plus the 26 h amber threshold: 4 h ago.
        assert_eq!(need.since.as_deref(), Some("since 15:20"));
    }

    #[test]
    fn a_strip_says_its_span_until_it_holds_a_day() {
        let mut s = fleet();
        if let Probe::Value(rows) = &mut s.agents {
            rows[0].history = Some(History {
                uptime_24h_pct: Some(100.0),
                strip: format!("{}{}", ".".repeat(44), "uuuu"),
                slot_s: 1800,
                samples: 38,
                since: Some(t0() - chrono::Duration::minutes(125)),
            });
            rows[1].history = Some(History {
                uptime_24h_pct: Some(97.94),
                strip: format!("{}d", "u".repeat(47)),
                slot_s: 1800,
                samples: 700,
                since: None,
            });
        }
        let g = at(&s, 0);
        assert_eq!(
            row(&g, "agent-min").strip.as_ref().unwrap().label,
            "uptime 100.0 % since 17:15 UTC, 38 samples"
        );
        // In the reader's zone, which the page names elsewhere.
        let plus_one = Glance::new(&s, s.generated_at, FixedOffset::east_opt(3600).unwrap());
        assert_eq!(
            row(&plus_one, "agent-min").strip.as_ref().unwrap().label,
            "uptime 100.0 % since 18:15, 38 samples"
        );
        let vega = row(&g, "agent-vega").strip.clone().unwrap();
        assert_eq!(vega.label, "24 h uptime 97.9 %");
        assert_eq!(vega.axis, ["24 h ago", "12 h", "now"]);
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
    fn the_work_queue_comes_first_red_rows_first_finished_ones_folded() {
        use crate::{QueueAck, QueueTask};
        let mut s = fleet();
        s.sections.queue = SectionMeta {
            configured: true,
            checked_at: Some(t0()),
            duration_ms: Some(1),
            stale: false,
        };
        let task = queue_task;
        let owned = |mut t: QueueTask| {
            t.owner = Some("sol".into());
            t.state = "TASK_STATE_WORKING".into();
            t.ack = Some(QueueAck {
                kind: "owning".into(),
                by: "sol".into(),
                at: t.created_at,
                eta: None,
                to: None,
            });
            t
        };
        let mut blocked = owned(task("q_blk", 30));
        blocked.blocked_on = Some("t_1a2b: LAB disk full".into());
        let mut done = owned(task("q_done", 50));
        done.state = "TASK_STATE_COMPLETED".into();
        s.tasks.queue = Probe::Value(vec![
            owned(task("q_ok", 20)),
            // Created 9 min before the snapshot: its ACK falls due a minute after it.
            task("q_new", 9),
            blocked,
            done,
        ]);
        let g = at(&s, 0);
        let ids: Vec<&str> = g.sections.iter().map(|x| x.id).collect();
        assert_eq!(&ids[..3], ["agents", "queue", "live"]);
        let q = &g.sections[1];
        let rows: Vec<(&str, Band)> = q.groups[0]
            .rows
            .iter()
            .map(|r| (r.anchor.as_str(), r.band))
            .collect();
        assert_eq!(
            rows,
            [
                ("queue-q_blk", Band::Amber),
                ("queue-q_new", Band::Green),
                ("queue-q_ok", Band::Green)
            ]
        );
        assert_eq!(q.groups[0].folded.as_deref(), Some("1 finished"));
        assert_eq!(row(&g, "queue-q_ok").summary, "owned by sol · working");
        assert_eq!(
            row(&g, "queue-q_new").summary,
            "tagged mira, nova, sol: no owner yet · submitted"
        );
        // A minute later nobody has ACKed q_new: red, in needs-you, counted.
        let later = at(&s, 60);
        let new = row(&later, "queue-q_new");
        assert_eq!(new.band, Band::Red);
        assert_eq!(
            new.reason.as_deref(),
            Some("no ACK for 10 min: nobody owns it")
        );
        assert!(
            later
                .needs
                .iter()
                .any(|n| n.anchor == "queue-q_new" && n.what == "task Task q_new"),
            "{:?}",
            later.needs
        );
        assert_eq!(
            later.counts,
            s.verdict_at(t0() + chrono::Duration::seconds(60))
        );
        assert_eq!(at(&s, 0).counts, s.verdict_at(t0()));
    }

    #[test]
    fn a_held_host_and_a_held_tunnel_are_marked_and_keep_their_band_their_line_and_the_verdict() {
        let mut s = fleet();
        if let Probe::Value(hosts) = &mut s.systems {
            hosts[0].tunnels = vec![check("heart", false, Some("connection refused"))];
            hosts[0].vault_parity = Probe::Value(false);
            hosts[0].vault_reason = Some("2 uncommitted changes".into());
        }
        let plain = at(&s, 0);
        s.alerts.configured = true;
        s.alerts.held = vec![
            hold(key::host("prod"), 40, "disk swap"),
            hold(
                key::host_check("prod", "tunnel", "heart"),
                100,
                "tunnel rebuild",
            ),
            // The same silence as the host's: said once, on the host.
            hold(key::host_check("prod", "cron", "db-dump"), 40, "disk swap"),
            hold(key::vault("prod"), 70, ""),
        ];
        let g = at(&s, 0);
        let prod = row(&g, "host-prod");
        assert_eq!(
            prod.held.as_deref(),
            Some("silenced until 20:00 (disk swap)")
        );
        assert_eq!((prod.band, prod.badge), (Band::Red, "fail"));
        assert_eq!(prod.reason, row(&plain, "host-prod").reason);
        let held: Vec<(&str, Option<&str>)> = prod
            .checks
            .iter()
            .flat_map(|c| &c.items)
            .map(|i| (i.text.as_str(), i.held.as_deref()))
            .collect();
        assert_eq!(
            held,
            [
                ("nginx active · 24 h 100.0 %", None),
                ("hermes-gateway failed · 24 h 0.0 %", None),
                (
                    "heart down · 24 h 0.0 %",
                    Some("silenced until 21:00 (tunnel rebuild)")
                ),
                (
                    "db-dump down · last ok 1 h ago · every 1 d, grace 2 h · 24 h 100.0 %",
                    None
                ),
            ]
        );
        let vault = prod
            .facts
            .iter()
            .find(|f| f.label == "vault parity")
            .unwrap();
        assert_eq!(vault.held.as_deref(), Some("silenced until 20:30"));
        // Needs-you: the same line in the same place, the mark added.
        let need = g.needs.iter().find(|n| n.anchor == "host-prod").unwrap();
        assert_eq!(
            need.held.as_deref(),
            Some("silenced until 20:00 (disk swap)")
        );
        let without: Vec<Need> = g
            .needs
            .iter()
            .cloned()
            .map(|n| Need { held: None, ..n })
            .collect();
        assert_eq!(without, plain.needs);
        assert_eq!(
            (g.headline.as_str(), g.counts),
            (plain.headline.as_str(), plain.counts)
        );
        assert_eq!(g.counts, s.verdict());
        // In the reader's zone.
        let plus_one = Glance::new(&s, t0(), FixedOffset::east_opt(3600).unwrap());
        assert_eq!(
            row(&plus_one, "host-prod").held.as_deref(),
            Some("silenced until 21:00 (disk swap)")
        );
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
            let need = g.needs.iter().find(|n| n.anchor == anchor).unwrap();
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

    #[test]
    fn a_failing_alert_channel_is_an_amber_line_said_in_the_verdict_and_a_row_of_systems() {
        let mut s = fleet();
        s.alerts.configured = true;
        s.alerts.channels = vec![
            channel("deadman", None, "", 0),
            channel("ntfy", Some(78), "503", 3),
        ];
        let g = at(&s, 0);
        // Amber, after every red line, in the channel's own words.
        let last = g.needs.last().unwrap();
        assert_eq!(
            (
                last.band,
                last.what.as_str(),
                last.reason.as_str(),
                last.since.as_ref()
            ),
            (
                Band::Amber,
                "alerts: ntfy failing since 18:02: 503 (3 waiting)",
                "",
                None
            )
        );
        assert_eq!(last.anchor, "alert-ntfy");
        // Said in the verdict whatever else is red; counted amber, the healthy one green.
        assert_eq!(
            g.headline,
            "2 agents · 1 task stuck · 1 board · 2 cards · 1 host · 1 alert channel failing"
        );
        assert_eq!(g.counts.sentence(), "7 red · 3 amber · 9 green");
        assert_eq!(g.counts, s.verdict());
        // The Systems panel's "alerts" group: failing first, amber with its reason; the
        // dead man's switch green, delivering; what waits behind the tap.
        let systems = g.sections.iter().find(|x| x.id == "systems").unwrap();
        let alerts = systems.groups.last().unwrap();
        assert_eq!(alerts.title.as_deref(), Some("alerts"));
        let rows: Vec<(&str, Band, &str, &str, Option<&str>)> = alerts
            .rows
            .iter()
            .map(|r| {
                (
                    r.title.as_str(),
                    r.band,
                    r.badge,
                    r.summary.as_str(),
                    r.reason.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            rows,
            [
                (
                    "ntfy",
                    Band::Amber,
                    "warn",
                    "failing since 18:02",
                    Some("503")
                ),
                ("deadman", Band::Green, "ok", "delivering", None),
            ]
        );
        let waiting = |r: &Row| {
            r.facts
                .iter()
                .find(|f| f.label == "waiting")
                .unwrap()
                .text
                .clone()
        };
        assert_eq!(waiting(&alerts.rows[0]), "3 alerts");
        assert_eq!(waiting(&alerts.rows[1]), "none");

        // Nothing else amiss: the channel alone makes the verdict amber.
        let mut calm = Snapshot::empty(t0(), rules());
        calm.stale = false;
        calm.agents = Probe::Value(vec![agent("min", Band::Green, true, None)]);
        calm.alerts = s.alerts.clone();
        let g = at(&calm, 0);
        assert_eq!(
            (g.band, g.headline.as_str()),
            (Band::Amber, "1 alert channel failing")
        );
        assert_eq!(g.title(true), "▲ 1 · fleet");
        calm.alerts
            .channels
            .push(channel("hub", Some(5), "connection refused", 0));
        if let Probe::Value(a) = &mut calm.agents {
            a.push(agent("juno", Band::Amber, true, Some("quiet")));
        }
        assert_eq!(
            at(&calm, 0).headline,
            "1 agent to watch · 2 alert channels failing"
        );
        // Delivering again: green, nothing said.
        calm.alerts.channels = vec![channel("ntfy", None, "", 0)];
        calm.agents = Probe::Value(vec![agent("min", Band::Green, true, None)]);
        let g = at(&calm, 0);
        assert_eq!((g.band, g.headline.as_str()), (Band::Green, "all 2 green"));
    }

    #[test]
    fn without_alerting_nothing_is_added() {
        let mut s = fleet();
        let plain = at(&s, 0);
        // Channels listed by a snapshot that says alerting is off are not shown.
        s.alerts.channels = vec![channel("ntfy", Some(5), "503", 1)];
        let g = at(&s, 0);
        assert_eq!(g, plain);
        let systems = g.sections.iter().find(|x| x.id == "systems").unwrap();
        assert_eq!(systems.groups.len(), 1);
        assert_eq!(g.counts, s.verdict());
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

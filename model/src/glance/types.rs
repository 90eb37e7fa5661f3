//! What a glance is made of: needs-you lines, sections, groups, rows, facts, checks and the
//! 24 h strip, which both renderers only lay out; and the marks they share (the held icon,
//! the tab's icon).
//!
//! The fields the renderers do not read (what a row counts as in the verdict, how it is named
//! in needs-you, since when) are the glance's own.

use chrono::{DateTime, Utc};

use crate::band::Band;

/// The mark beside a `held` text (a bell struck through): both renderers show it.
pub const HELD_ICON: &str = "🔕";

/// One line of "needs you": what, why in a few words, since when, and where its row is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Need {
    pub band: Band,
    /// "agent lyra", "task on min", "card Prune old snapshots", "host prod"; or the whole
    /// line when it is one sentence ("alerts: ntfy failing since 14:02: 503 (3 waiting)").
    pub what: String,
    /// Empty when `what` is the whole line: such a line is shown whole, never cut.
    pub reason: String,
    /// "since 19:12", when known.
    pub since: Option<String>,
    /// The id of its row (or of its section, for a section that failed as a whole).
    pub anchor: String,
    /// "silenced until 16:00 (disk swap)": its alerts are held back; it still needs you. An
    /// acknowledged alert's stopped reminders are said here too ("acked 14:02").
    pub held: Option<String>,
    pub(super) kind: Kind,
    /// How many elements the line stands for: 1, or a lot not listed one by one (a board's
    /// cards beyond the cap), which the verdict counts in full.
    pub(super) count: usize,
    /// The rows (or sections) the line speaks for: its own, or all those a fold stands for
    /// ([`crate::Fold`]). "Since you last looked" finds a change's line by them.
    pub(super) stands_for: Vec<String>,
}

impl Need {
    /// The rows (or sections) the line speaks for: its own, or all those a fold stands for.
    pub fn stands_for(&self) -> &[String] {
        &self.stands_for
    }

    /// A line of its own for one element of `kind`, saying `what` and why (`reason`).
    pub(super) fn new(band: Band, kind: Kind, what: String, reason: String) -> Need {
        Need {
            band,
            what,
            reason,
            since: None,
            anchor: String::new(),
            held: None,
            kind,
            count: 1,
            stands_for: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
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
    /// A state file of fleetdash's own moved aside as corrupt: said like a channel.
    SetAside,
    /// fleetdash cannot reach most of the fleet at once (issue 24): said first in the verdict.
    BlindSpot,
    /// This host's clock jumped (or slept), or stamps ahead of it were seen (issue 31): said
    /// like a channel.
    Clock,
}

impl Kind {
    /// fleetdash's own troubles, said after the fleet's in the verdict, whatever its band.
    pub(super) const OWN: [Kind; 3] = [Kind::Channel, Kind::SetAside, Kind::Clock];
    /// Not the fleet's troubles at all: said apart from them (the blind spot leads).
    pub(super) fn is_own(self) -> bool {
        Kind::OWN.contains(&self) || self == Kind::BlindSpot
    }

    /// The noun of the verdict's words, and the qualifier used when every item of the kind has it.
    pub(super) fn words(self) -> (&'static str, &'static str, &'static str) {
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
            Kind::SetAside => ("state file", "state files", "set aside"),
            Kind::BlindSpot => ("blind spot", "blind spots", ""),
            Kind::Clock => ("clock", "clocks", "out of step"),
        }
    }

    /// Kinds that are one noun in the verdict ("3 agents", two of them down).
    pub(super) fn family(self) -> Kind {
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
    /// "checked 12 s ago"; in a frozen glance "as of 19:15".
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
    pub(super) unlisted: Vec<Need>,
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
/// one ("2 finished cards"); a `closed` group is listed but shown folded, a tap away.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    pub title: Option<String>,
    pub rows: Vec<Row>,
    pub folded: Option<String>,
    /// Set when the group has nothing at all to show ("no cards").
    pub empty: Option<&'static str>,
    /// Shown folded under its title, one tap away (a `<details>` closed by default): rows
    /// worth keeping at hand, not worth a look (the work queue's finished tasks).
    pub closed: bool,
    pub(super) folded_n: usize,
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
    /// "silenced until 16:00 (disk swap)" while its alerts are held back and it is not green;
    /// "acked 14:02" while its open alert is acknowledged (after the silence, when both).
    pub held: Option<String>,
    /// Behind the tap: the Agent Status Code ("ASC-5003 DEPENDENCY_UNAVAILABLE") when not success.
    pub code: Option<String>,
    pub facts: Vec<Fact>,
    pub checks: Vec<Checks>,
    pub strip: Option<Strip>,
    /// What the row is for the verdict and needs-you; `None` when it does not count (a green
    /// board source: its cards count).
    pub(super) kind: Option<Kind>,
    /// "agent lyra": the row as a needs-you line names it.
    pub(super) what: String,
    /// When it entered its band, where the snapshot says so.
    pub(super) since: Option<DateTime<Utc>>,
    /// The band it counts in: `band`, but for an agent shown in its work's band (a task stuck
    /// on it), which counts as the agent itself is.
    pub(super) own: Band,
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

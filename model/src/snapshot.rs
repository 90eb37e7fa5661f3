//! The snapshot's types: [`Snapshot`] and every section's elements, as `status.json` holds
//! them (the crate's doc says the rules they follow).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::alerts::{AlertsView, Reach};
use crate::asc::Asc;
use crate::band::Band;
use crate::clock::ClockView;
use crate::probe::Probe;
use crate::queue::{QueueLeftOut, QueueTask, UnreadableTask};
use crate::rules::RulesView;
use crate::words::one_decimal;

/// Bumped on any change a reader must know about; additions of optional fields keep it.
pub const SCHEMA_VERSION: &str = "0.1";

/// The band of an element read from a snapshot written before it had one: green, as it was
/// shown then.
fn green() -> Band {
    Band::Green
}

/// The whole snapshot, as written to `status.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    pub schema_version: String,
    pub generated_at: DateTime<Utc>,
    /// True when any section is older than `rules.snapshot_stale_after_s` or was never
    /// collected; `stale_reasons` says which and why.
    pub stale: bool,
    #[serde(default)]
    pub stale_reasons: Vec<String>,
    /// The thresholds this snapshot was judged by, so the page never hard-codes one.
    pub rules: RulesView,
    /// When each section was last collected, keyed by section name.
    #[serde(default)]
    pub sections: Sections,
    pub tasks: Tasks,
    pub agents: Probe<Vec<Agent>>,
    pub systems: Probe<Vec<System>>,
    pub backups: Probe<Backups>,
    /// The recent band changes of every element, newest first (the collector's transitions
    /// log, `<state_dir>/transitions.json`, keeps more).
    #[serde(default)]
    pub transitions: Vec<Transition>,
    /// Held alerts and the alert channels' health; empty when alerting is not configured.
    #[serde(default)]
    pub alerts: AlertsView,
    /// fleetdash's own state files found corrupt and moved aside, until the operator removes
    /// the copies.
    #[serde(default)]
    pub set_aside: Vec<SetAside>,
    /// This host's clock as fleetdash saw it: its recent jumps (a step, a sleep), the grace
    /// after one, stamps found ahead of it (issue 31). Empty while the clock keeps time.
    #[serde(default)]
    pub clock: ClockView,
    /// Needs-you lines that each stand for several rows (issue 43: every line on a phone's
    /// first screen earns its place), folded by the collector at this write: what one cause
    /// took down, and many alike. The page and snapshot.html say each instead of its rows' own
    /// lines. Empty when nothing folds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub folds: Vec<Fold>,
}

/// One needs-you line standing for several rows: "agent orin down · tunnel orin on laptop is
/// down" (the rows of what the tunnel took down, and of the tunnel's host), "8 cards · blocked:
/// needs input" (eight card rows).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fold {
    /// The rows it stands for, by their anchors on the page ("agent-orin", "host-laptop").
    pub rows: Vec<String>,
    /// "agent orin down", "8 cards".
    pub what: String,
    /// "tunnel orin on laptop is down", "blocked: needs input".
    pub reason: String,
    /// Where the line leads: the root's row, or the panel that lists them.
    pub anchor: String,
    /// The line's band, when it is not its first row's (a host whose red is said by another
    /// line, and whose own trouble is amber).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub band: Option<Band>,
    pub checked_at: DateTime<Utc>,
}

/// One of fleetdash's own state files (the 24 h history, the transitions log, the alert
/// engine's state, the silences, the alert outbox) found corrupt or of another layout and moved
/// aside, as `<state_dir>/<file>.corrupt-<UTC stamp>`, with a fresh one in its place. What the
/// file held (a day of strips, open alerts, silences) is no longer in use, so it is said on the
/// page, never silently reset, for as long as the copy is there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetAside {
    /// The state file's name (`history.json`).
    pub file: String,
    /// The copy's name, beside it in the state directory.
    pub aside: String,
    /// When it was moved aside (read from the copy's name).
    #[serde(default)]
    pub at: Option<DateTime<Utc>>,
    pub checked_at: DateTime<Utc>,
}

impl Snapshot {
    /// A snapshot in which no section has been collected yet.
    pub fn empty(generated_at: DateTime<Utc>, rules: RulesView) -> Self {
        Snapshot {
            schema_version: SCHEMA_VERSION.to_string(),
            generated_at,
            stale: true,
            stale_reasons: Vec::new(),
            rules,
            sections: Sections::default(),
            tasks: Tasks {
                board: Probe::not_collected(),
                live: Probe::not_collected(),
                queue: Probe::not_collected(),
                queue_unreadable: Vec::new(),
                queue_left_out: QueueLeftOut::default(),
            },
            agents: Probe::not_collected(),
            systems: Probe::not_collected(),
            backups: Probe::not_collected(),
            transitions: Vec::new(),
            alerts: AlertsView::default(),
            set_aside: Vec::new(),
            clock: ClockView::default(),
            folds: Vec::new(),
        }
    }
}

/// Collection bookkeeping per section.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Sections {
    /// Both parts of the tasks section together (configured if either is; stale if either is).
    pub tasks: SectionMeta,
    /// `tasks.board`: the kanban boards.
    #[serde(default)]
    pub board: SectionMeta,
    /// `tasks.live`: live A2A tasks.
    #[serde(default)]
    pub live_tasks: SectionMeta,
    /// `tasks.queue`: the work queue.
    #[serde(default)]
    pub queue: SectionMeta,
    pub agents: SectionMeta,
    pub systems: SectionMeta,
    pub backups: SectionMeta,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SectionMeta {
    /// Whether the config has a collector for this section at all.
    pub configured: bool,
    /// When the section was last collected; absent if never.
    pub checked_at: Option<DateTime<Utc>>,
    /// Wall time of the pass that produced the section.
    pub duration_ms: Option<u64>,
    /// Configured and either never collected or older than `rules.snapshot_stale_after_s`.
    pub stale: bool,
}

/// One agent's row in the Agents panel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Agent {
    pub name: String,
    /// The configured endpoint with any credentials removed.
    pub endpoint: String,
    pub plane: Option<String>,
    /// Liveness: any HTTP answer on the agent card path is up; refused or timed out is down.
    pub up: bool,
    /// Seconds since the agent's last successful exchange in its audit log: a line whose
    /// `peer` is another party than the collector (the collector's own probes are not
    /// exchanges).
    pub last_exchange_s: Probe<u64>,
    /// Band of `last_exchange_s` by the rules' thresholds, and red whenever the agent is down:
    /// a past exchange never makes a down agent look ok.
    pub exchange_band: Band,
    /// Skills on the agent card; 0 is a red condition, not "no data".
    pub skills_count: Probe<u32>,
    pub lane: Probe<String>,
    pub model: Probe<String>,
    pub window: Probe<Window>,
    pub heartbeat: Probe<Heartbeat>,
    /// Overall band of the row: the worst of its conditions.
    pub band: Band,
    /// Agent Status Code of the row's worst condition (SUCCESS when all is well).
    pub status: Asc,
    /// Why the row is not green, in words; absent when it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Audit-log lines that could not be parsed while looking for the last exchange.
    #[serde(default)]
    pub audit_skipped_lines: u64,
    /// Seconds since the agent's last report to the hub's intake (spec 003 §1.2); absent when
    /// it never reported or there is no intake.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_report_s: Option<u64>,
    /// Up/down over the last 24 hours.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<History>,
    pub checked_at: DateTime<Utc>,
    pub stale: bool,
}

/// What the heartbeat exchange told us.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Heartbeat {
    /// The dialect that answered (`v1`, `v0.3`, `v0.3-content`).
    pub dialect: String,
    pub latency_ms: u64,
    pub last_activity_at: Probe<DateTime<Utc>>,
    /// Ids of the agent's in-flight A2A tasks, when the reply carries them.
    pub in_flight: Probe<Vec<String>>,
}

/// A model usage window ("GO window").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Window {
    pub model: Probe<String>,
    pub percent: Probe<f64>,
    pub status: Probe<String>,
    pub resets_at: Probe<DateTime<Utc>>,
    /// Amber at or above the rules' `window_amber_at_percent`, else green.
    #[serde(default = "green")]
    pub band: Band,
}

/// The Tasks panel: the kanban board and, separately, live A2A tasks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tasks {
    pub board: Probe<Board>,
    pub live: Probe<Vec<LiveTask>>,
    /// The hub's work queue (spec 003 §3): absent in snapshots written before it existed.
    #[serde(default = "Probe::not_collected")]
    pub queue: Probe<Vec<QueueTask>>,
    /// The queue's rows that cannot be read, each red on its own (read with `queue`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub queue_unreadable: Vec<UnreadableTask>,
    /// What `queue` leaves out: finished tasks past the retention, dismissed ones.
    #[serde(default, skip_serializing_if = "QueueLeftOut::is_none")]
    pub queue_left_out: QueueLeftOut,
}

/// The kanban board(s): columns in board order and the cards, each naming its board, plus one
/// entry per configured board saying whether it could be read and projected.
///
/// `cards` lists a board's cards in full only under the rules' cap (`board.cards_max`): the
/// cards that need attention (amber or red), those the previous snapshot listed as such (so a
/// recovery is seen), and the newest few of each open column; each source counts every card
/// per column and says how many `cards` leaves out ([`BoardSource::columns`]). A snapshot
/// written before the cap lists every card and counts none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Board {
    /// Hermes statuses in board order (triage, todo, scheduled, ready, running, blocked,
    /// review, done; archived only when configured).
    pub columns: Vec<String>,
    /// The cards listed in full (all of them in snapshots written before the cap).
    pub cards: Vec<Card>,
    #[serde(default)]
    pub sources: Vec<BoardSource>,
}

/// One configured board: its read, and its vault projection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BoardSource {
    pub name: String,
    pub plane: Option<String>,
    /// Cards read from the board, or why the board could not be read.
    pub cards: Probe<u32>,
    /// What the last projection did ("written", "unchanged", "retired: writes nothing"), why it
    /// refused, or "unknown" when the board has no projection target.
    pub projection: Probe<String>,
    pub status: Asc,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Every card the board holds, per column in board order (columns without cards are not
    /// named), with how many of each `tasks.board.cards` does not list. Empty when the board
    /// was not read, and in snapshots written before the cap (they list every card).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub columns: Vec<ColumnCount>,
    /// Cards that need attention and are not listed: they alone passed the cap (the worst,
    /// then the newest, are listed). Counted here so that no verdict misses them.
    #[serde(default, skip_serializing_if = "LeftOut::is_none")]
    pub attention_left_out: LeftOut,
    pub checked_at: DateTime<Utc>,
    pub stale: bool,
}

impl BoardSource {
    /// How many of the board's cards `tasks.board.cards` does not list.
    pub fn left_out(&self) -> u64 {
        self.columns.iter().map(|c| u64::from(c.left_out)).sum()
    }
}

/// One column of one board: how many cards it holds, and how many of them are not listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ColumnCount {
    /// The Hermes status.
    pub column: String,
    pub cards: u32,
    #[serde(default)]
    pub left_out: u32,
}

/// Cards needing attention that a board's listing leaves out, by band.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeftOut {
    pub red: u32,
    pub amber: u32,
}

impl LeftOut {
    pub fn is_none(&self) -> bool {
        self.red == 0 && self.amber == 0
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Card {
    pub board: String,
    pub id: String,
    /// Truncated safely; card bodies, results and comments never leave the collector.
    pub title: String,
    /// The Hermes status, i.e. its column.
    pub status: String,
    pub assignee: Option<String>,
    #[serde(default)]
    pub priority: Option<i64>,
    /// Seconds since the card was created.
    #[serde(default)]
    pub age_s: u64,
    /// dependency, needs_input, capability or transient, when blocked.
    #[serde(default)]
    pub block_kind: Option<String>,
    /// The newest of started, completed, last heartbeat and the newest event.
    #[serde(default)]
    pub latest_activity_at: Option<DateTime<Utc>>,
    /// The board's own worker events made visible (crashed, timed_out, reclaimed...), and the
    /// host boundary (an assignee this host can never dispatch).
    #[serde(default)]
    pub conditions: Vec<String>,
    #[serde(default = "green")]
    pub band: Band,
    pub checked_at: DateTime<Utc>,
    pub stale: bool,
}

/// An in-flight A2A task, judged by the stuck rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LiveTask {
    pub id: String,
    pub agent: String,
    /// Always a v1.0 `TASK_STATE_*` wire value.
    pub state: Probe<String>,
    pub age_s: u64,
    pub stuck: bool,
    pub status: Asc,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub checked_at: DateTime<Utc>,
    pub stale: bool,
}

/// One host in the Systems panel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct System {
    pub host: String,
    /// Where the host's facts come from: `local`, `node_exporter` or `ssh`.
    #[serde(default)]
    pub source: String,
    pub ram_used_gb: Probe<f64>,
    pub ram_total_gb: Probe<f64>,
    pub disk_free_gb: Probe<f64>,
    /// Spec §6.1 names a service's state `active`.
    #[serde(serialize_with = "checks::services")]
    pub services: Vec<NamedCheck>,
    /// Spec §6.1 names a tunnel's state `up`.
    #[serde(serialize_with = "checks::tunnels")]
    pub tunnels: Vec<NamedCheck>,
    pub crons: Vec<CronCheck>,
    /// Local HEAD equals the remote's HEAD and nothing is uncommitted; "unknown" when the host
    /// has no vault configured.
    pub vault_parity: Probe<bool>,
    /// Why the vault is out of sync ("3 uncommitted changes", "HEAD 1a2b3c4 differs from
    /// origin/main 5d6e7f8"), when it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vault_reason: Option<String>,
    /// Overall band of the host: the worst of its checks.
    #[serde(default = "green")]
    pub band: Band,
    pub status: Asc,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The host's last 24 hours (all checks green = up).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<History>,
    pub checked_at: DateTime<Utc>,
    pub stale: bool,
}

/// Writes each kind of check with the spec's name for its state; reading accepts all three
/// names (see [`NamedCheck::ok`]).
mod checks {
    use super::NamedCheck;
    use serde::ser::{SerializeMap, SerializeSeq, Serializer};

    pub fn services<S: Serializer>(list: &[NamedCheck], s: S) -> Result<S::Ok, S::Error> {
        keyed(list, "active", s)
    }

    pub fn tunnels<S: Serializer>(list: &[NamedCheck], s: S) -> Result<S::Ok, S::Error> {
        keyed(list, "up", s)
    }

    struct Keyed<'a>(&'a NamedCheck, &'static str);

    impl serde::Serialize for Keyed<'_> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let c = self.0;
            let mut m = s.serialize_map(None)?;
            m.serialize_entry("name", &c.name)?;
            m.serialize_entry(self.1, &c.ok)?;
            if let Some(r) = &c.reason {
                m.serialize_entry("reason", r)?;
            }
            if let Some(p) = &c.uptime_24h_pct {
                m.serialize_entry("uptime_24h_pct", p)?;
            }
            m.serialize_entry("checked_at", &c.checked_at)?;
            m.serialize_entry("stale", &c.stale)?;
            m.end()
        }
    }

    fn keyed<S: Serializer>(
        list: &[NamedCheck],
        key: &'static str,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(list.len()))?;
        for c in list {
            seq.serialize_element(&Keyed(c, key))?;
        }
        seq.end()
    }
}

/// A yes/no check with a name: a service (`active`) or a tunnel (`up`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NamedCheck {
    pub name: String,
    #[serde(alias = "active", alias = "up")]
    pub ok: Probe<bool>,
    /// Why it is not ok, when it is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Share of the last 24 hours' checks that were ok.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uptime_24h_pct: Option<f64>,
    pub checked_at: DateTime<Utc>,
    pub stale: bool,
}

/// A job that must check in, judged like Healthchecks: up, late (inside its grace), down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CronState {
    /// The last success is younger than the period.
    Up,
    /// Past its period but inside the grace.
    Late,
    /// Past period + grace, never ran, its last run failed, or it started and did not finish
    /// within the grace.
    Down,
}

impl CronState {
    pub fn band(self) -> Band {
        match self {
            CronState::Up => Band::Green,
            CronState::Late => Band::Amber,
            CronState::Down => Band::Red,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CronCheck {
    pub name: String,
    pub state: CronState,
    /// Seconds since the last successful run.
    pub last_ok_s: Probe<u64>,
    pub period_s: u64,
    pub grace_s: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uptime_24h_pct: Option<f64>,
    pub checked_at: DateTime<Utc>,
    pub stale: bool,
}

/// Backup freshness.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Backups {
    /// The configured backup's name (e.g. `gdrive`).
    #[serde(default)]
    pub name: String,
    pub gdrive_latest: Probe<DateTime<Utc>>,
    pub age_h: Probe<f64>,
    /// Green, amber or red by the rules' backup thresholds.
    #[serde(default = "green")]
    pub band: Band,
    #[serde(default = "Asc::success")]
    pub status: Asc,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub checked_at: DateTime<Utc>,
    pub stale: bool,
}

/// The last 24 hours of one agent or host, from the collector's bounded history
/// (`<state_dir>/history.json`, buckets of 15 min).
///
/// The strip has 48 slots of 30 min (`slot_s` = 1800), on the UTC half-hour grid; the newest
/// slot is the one holding the write's time, so the strip covers the last 23.5 to 24 hours.
/// The uptime counts the samples of the same slots. A sample is taken each time the element's
/// own section is collected (agents: `up`; hosts: band not red and not stale). Until the
/// samples span the strip (`since` is set), the uptime is over a shorter time and says so
/// ([`History::uptime_words`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct History {
    /// Share of the samples in the strip's slots that were up, in percent, rounded to 0.1;
    /// absent before the first sample.
    pub uptime_24h_pct: Option<f64>,
    /// Oldest first, one character per slot of `slot_s` seconds ending now (48 of 30 min): `u`
    /// all samples up, `d` all down, `p` some of each, `.` no sample.
    pub strip: String,
    pub slot_s: u64,
    /// Samples in the strip's slots: what the uptime is a share of.
    pub samples: u32,
    /// When the element was first sampled, while that lies inside the strip's window: the
    /// uptime then covers only the time since. Absent once the samples span the whole window
    /// (and before the first sample).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<DateTime<Utc>>,
}

impl History {
    /// The uptime as the operator reads it, the same on the page and in snapshot.html:
    /// "24 h uptime 97.9 %" once the samples span the strip, "uptime 100.0 % since 15:15 UTC,
    /// 38 samples" until then, "uptime: no samples yet" before the first.
    pub fn uptime_words(&self) -> String {
        self.words(
            chrono::FixedOffset::east_opt(0).expect("UTC is an offset"),
            " UTC",
        )
    }

    /// [`History::uptime_words`] with the time of day at `offset` from UTC, the reader's zone,
    /// which the glance names once for all its times: never said here.
    pub fn uptime_words_at(&self, offset: chrono::FixedOffset) -> String {
        self.words(offset, "")
    }

    fn words(&self, offset: chrono::FixedOffset, zone: &str) -> String {
        let Some(pct) = self.uptime_24h_pct.filter(|_| self.samples > 0) else {
            return "uptime: no samples yet".into();
        };
        let pct = one_decimal(pct);
        match self.since {
            None => format!("24 h uptime {pct} %"),
            Some(t) => {
                use chrono::Timelike;
                let samples = match self.samples {
                    1 => "1 sample".to_string(),
                    n => format!("{n} samples"),
                };
                let t = t.with_timezone(&offset);
                format!(
                    "uptime {pct} % since {:02}:{:02}{zone}, {samples}",
                    t.hour(),
                    t.minute()
                )
            }
        }
    }
}

/// One band change of one element, as the writer saw it between two snapshots: what alerts
/// and "since you last looked" are built on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Transition {
    /// Stable across runs and renames of nothing but the element itself: `agent:<name>`,
    /// `task:<agent>/<id>`, `queue:<id>`, `board:<name>`, `board:<name>/card:<id>`,
    /// `board:<name>/unlisted` (its cards needing attention beyond the cap), `host:<name>`,
    /// `host:<name>/service:<n>` (also `tunnel:`, `cron:`), `host:<name>/vault`, `backups`,
    /// `section:<name>`.
    pub key: String,
    /// `agent`, `task`, `board`, `card`, `host`, `service`, `tunnel`, `cron`, `vault`,
    /// `backups` or `section`.
    pub kind: String,
    /// What the operator calls it ("min", "nginx on lab", a card's title).
    pub name: String,
    /// The band before; absent when the element first appeared (only an element born amber
    /// or red is recorded).
    #[serde(default)]
    pub from: Option<Band>,
    pub to: Band,
    /// The time of the write that saw the change.
    pub at: DateTime<Utc>,
    /// Why the element is in its new band; absent when it is green.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Snapshot {
    /// fleetdash's reach of the fleet ([`Reach`], issue 24): its agents that do not answer and
    /// remote hosts whose source does not, judged against the rules' `blind_spot.failed_percent`
    /// and `blind_spot.min_failed`.
    pub fn reach(&self, failed_percent: u64, min_failed: u64) -> Reach {
        let s = self;
        let (agents, agents_failed) = match &s.agents {
            crate::Probe::Value(rows) => (rows.len(), rows.iter().filter(|a| !a.up).count()),
            _ => (0, 0),
        };
        let (hosts, hosts_failed) = match &s.systems {
            crate::Probe::Value(rows) => {
                // A local host is read without the network; a row of tunnels before its first
                // probe says nothing of its source.
                let remote: Vec<_> = rows
                    .iter()
                    .filter(|h| h.source != "local")
                    .filter(|h| h.ram_total_gb.error_reason() != Some(crate::NOT_COLLECTED))
                    .collect();
                let failed = remote
                    .iter()
                    .filter(|h| {
                        h.ram_total_gb.error_reason().is_some()
                            && h.disk_free_gb.error_reason().is_some()
                    })
                    .count();
                (remote.len(), failed)
            }
            _ => (0, 0),
        };
        let failed = (agents_failed + hosts_failed) as u64;
        let total = (agents + hosts) as u64;
        Reach {
            agents_failed,
            agents,
            hosts_failed,
            hosts,
            blind: total > 0 && failed >= min_failed && failed * 100 >= failed_percent * total,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::tests::rules;

    /// The tests' clock: one fixed moment, so that no outcome depends on the day they run.
    fn fixed_now() -> chrono::DateTime<chrono::Utc> {
        "2026-11-30T12:00:00Z".parse().expect("an RFC 3339 instant")
    }

    fn history(samples: u32, pct: Option<f64>, since: Option<DateTime<Utc>>) -> History {
        History {
            uptime_24h_pct: pct,
            strip: ".".repeat(48),
            slot_s: 1800,
            samples,
            since,
        }
    }

    #[test]
    fn uptime_says_its_span_until_the_samples_cover_the_strip() {
        let at = |h, m| {
            DateTime::parse_from_rfc3339(&format!("2026-11-30T{h:02}:{m:02}:41Z"))
                .unwrap()
                .with_timezone(&Utc)
        };
        assert_eq!(
            history(38, Some(100.0), Some(at(15, 15))).uptime_words(),
            "uptime 100.0 % since 15:15 UTC, 38 samples"
        );
        assert_eq!(
            history(1, Some(0.0), Some(at(9, 5))).uptime_words(),
            "uptime 0.0 % since 09:05 UTC, 1 sample"
        );
        // The glance names the reader's zone once: its strips never say it.
        let utc = chrono::FixedOffset::east_opt(0).unwrap();
        assert_eq!(
            history(1, Some(0.0), Some(at(9, 5))).uptime_words_at(utc),
            "uptime 0.0 % since 09:05, 1 sample"
        );
        assert_eq!(
            history(700, Some(97.94), None).uptime_words(),
            "24 h uptime 97.9 %"
        );
        assert_eq!(
            history(0, None, None).uptime_words(),
            "uptime: no samples yet"
        );
        // A snapshot from before `since` existed reads as before: a 24 h figure.
        let mut json = serde_json::to_value(history(2, Some(100.0), Some(at(1, 0)))).unwrap();
        json.as_object_mut().unwrap().remove("since");
        let old: History = serde_json::from_value(json).unwrap();
        assert_eq!(old.since, None);
        assert_eq!(old.uptime_words(), "24 h uptime 100.0 %");
    }

    #[test]
    fn services_say_active_and_tunnels_say_up_as_the_spec_names_them() {
        let now = fixed_now();
        let check = |name: &str, ok: bool| NamedCheck {
            name: name.into(),
            ok: Probe::Value(ok),
            reason: (!ok).then(|| "failed".into()),
            uptime_24h_pct: Some(50.0),
            checked_at: now,
            stale: false,
        };
        let host = System {
            host: "prod".into(),
            source: "ssh".into(),
            ram_used_gb: Probe::Value(1.0),
            ram_total_gb: Probe::Value(2.0),
            disk_free_gb: Probe::Value(3.0),
            services: vec![check("nginx", false)],
            tunnels: vec![check("lab", true)],
            crons: Vec::new(),
            vault_parity: Probe::Unknown,
            vault_reason: None,
            band: Band::Red,
            status: Asc::DEPENDENCY_UNAVAILABLE,
            reason: None,
            history: None,
            checked_at: now,
            stale: false,
        };
        let json = serde_json::to_value(&host).unwrap();
        assert_eq!(json["services"][0]["active"], false);
        assert_eq!(json["services"][0]["reason"], "failed");
        assert_eq!(json["tunnels"][0]["up"], true);
        assert!(json["tunnels"][0].get("ok").is_none());
        let back: System = serde_json::from_value(json).unwrap();
        assert_eq!(back, host);
    }

    /// A snapshot written before transitions existed still parses (with none), and a
    /// transition says `"from": null` for an element that was born red.
    #[test]
    fn transitions_default_to_none_and_a_new_element_says_from_null() {
        let mut json = serde_json::to_value(Snapshot::empty(fixed_now(), rules())).unwrap();
        json.as_object_mut().unwrap().remove("transitions");
        let old: Snapshot = serde_json::from_value(json).unwrap();
        assert!(old.transitions.is_empty());
        let born = Transition {
            key: "agent:min".into(),
            kind: "agent".into(),
            name: "min".into(),
            from: None,
            to: Band::Red,
            at: fixed_now(),
            reason: Some("down: connection refused".into()),
        };
        let json = serde_json::to_value(&born).unwrap();
        assert_eq!(json["from"], serde_json::Value::Null);
        assert_eq!(json["to"], "red");
        assert_eq!(serde_json::from_value::<Transition>(json).unwrap(), born);
    }

    #[test]
    fn an_empty_snapshot_says_every_section_is_not_collected() {
        let snap = Snapshot::empty(fixed_now(), rules());
        let json = serde_json::to_value(&snap).unwrap();
        for path in [
            "/agents",
            "/systems",
            "/backups",
            "/tasks/board",
            "/tasks/live",
        ] {
            assert_eq!(
                json.pointer(path).unwrap(),
                "error: not collected",
                "{path}"
            );
        }
        let back: Snapshot = serde_json::from_value(json).unwrap();
        assert_eq!(back, snap);
    }
}

//! Collectors: one module per snapshot section, all behind the small [`Collector`] trait.
//!
//! A collector is read-only and never fails as a whole: a failed probe is data (an
//! `"error: <reason>"` field with its Agent Status Code), so `collect` always returns findings.
//! Collectors never write: what must be recorded (task ids for the live-task registry, polled
//! task states, board projections) is handed over as [`Findings`] and written by `write`.
//! Scheduling lives in `watchdog`, merging in `snapshot`.

pub mod agents;
pub mod backups;
pub mod board;
pub mod checkin;
pub mod live_tasks;
pub mod projections;
pub mod queue;
pub mod systems;
pub mod tunnels;

use std::fmt;
use std::str::FromStr;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use std::sync::Arc;

use fleetdash_model::alerts::key;
use fleetdash_model::{Agent, Asc, Backups, Board, LiveTask, Probe, System};

use crate::clock::Clock;
use crate::config::{Config, Rules};
use crate::net::ProbeClient;

/// The snapshot's top-level sections, and the two parts of `tasks` that are collected apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SectionName {
    Tasks,
    Agents,
    Systems,
    Backups,
    /// `tasks.board`, read by the board collector.
    Board,
    /// `tasks.live`, polled by the live-tasks collector.
    LiveTasks,
    /// `tasks.queue`, read from the work queue.
    Queue,
}

impl SectionName {
    pub const ALL: [SectionName; 4] = [
        SectionName::Tasks,
        SectionName::Agents,
        SectionName::Systems,
        SectionName::Backups,
    ];

    /// Everything that is collected on its own, each with its own freshness.
    pub const PARTS: [SectionName; 6] = [
        SectionName::Board,
        SectionName::LiveTasks,
        SectionName::Queue,
        SectionName::Agents,
        SectionName::Systems,
        SectionName::Backups,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SectionName::Board => "tasks.board",
            SectionName::LiveTasks => "tasks.live",
            SectionName::Queue => "tasks.queue",
            SectionName::Tasks => "tasks",
            SectionName::Agents => "agents",
            SectionName::Systems => "systems",
            SectionName::Backups => "backups",
        }
    }
}

impl fmt::Display for SectionName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for SectionName {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SectionName::ALL
            .into_iter()
            .find(|n| n.as_str() == s)
            .ok_or_else(|| {
                format!("unknown section {s:?}; expected one of tasks, agents, systems, backups")
            })
    }
}

/// A section's new content, as the snapshot takes it. The tasks section has four producers on
/// their own cadences: the board read, the live-task poll, the work queue's read and the vault
/// projections; each replaces only its part.
#[derive(Debug, Clone)]
pub enum SectionData {
    /// `tasks.board`: every configured board's cards, and one source entry per board; the
    /// snapshot lists them under `cap` ([`board::cap`]), knowing what it listed before.
    Board {
        read: Probe<Board>,
        cap: board::cap::Cap,
    },
    /// `tasks.live`: in-flight A2A tasks judged by the stuck rule.
    LiveTasks(Probe<Vec<LiveTask>>),
    /// `tasks.queue`: the work queue's rows, judged when they were read; the unreadable ones
    /// and what is left out beside them.
    Queue(queue::QueuePart),
    /// What the projection job did per board (board name, outcome), kept in `tasks.board`'s
    /// sources until the next projection.
    Projections(Vec<(String, Probe<String>)>),
    Agents(Vec<Agent>),
    Systems(Vec<System>),
    /// The tunnel probes of every host, merged into the hosts' rows.
    Tunnels(Vec<tunnels::HostTunnels>),
    Backups(Backups),
}

impl SectionData {
    /// The part of the snapshot this data lands in.
    pub fn section(&self) -> SectionName {
        match self {
            SectionData::Board { .. } | SectionData::Projections(_) => SectionName::Board,
            SectionData::LiveTasks(_) => SectionName::LiveTasks,
            SectionData::Queue(_) => SectionName::Queue,
            SectionData::Agents(_) => SectionName::Agents,
            SectionData::Systems(_) | SectionData::Tunnels(_) => SectionName::Systems,
            SectionData::Backups(_) => SectionName::Backups,
        }
    }

    /// The part whose freshness (`checked_at`) this data renews. Projections write the vault
    /// without re-reading the fleet, and tunnels are a part of each host's row whose freshness
    /// the host probes set: neither renews anything.
    pub fn renews(&self) -> Option<SectionName> {
        match self {
            SectionData::Projections(_) | SectionData::Tunnels(_) => None,
            other => Some(other.section()),
        }
    }
}

/// What a collector found. Most of it is section data the snapshot takes as it is; three
/// producers hand the write side something to record first, because collectors never write:
/// the agents pass the task ids it saw (for the live-task registry), the live-task poll what
/// each task's peer answered (recorded in the registry and judged there, escalations
/// included), and the projection job the boards it read (written into the vault).
#[derive(Debug, Clone)]
pub enum Findings {
    Section(SectionData),
    /// The agents' rows, and the task ids their heartbeats and audit logs mentioned.
    Agents {
        rows: Vec<Agent>,
        mentions: Vec<live_tasks::registry::Mention>,
    },
    /// What the peers of the known unfinished tasks answered.
    LivePoll(live_tasks::Poll),
    /// The boards read for their projections, in config order.
    Projections(Vec<projections::ProjectionInput>),
}

impl Findings {
    /// The part of the snapshot these findings land in, once written.
    pub fn section(&self) -> SectionName {
        match self {
            Findings::Section(data) => data.section(),
            Findings::Agents { .. } => SectionName::Agents,
            Findings::LivePoll(_) => SectionName::LiveTasks,
            Findings::Projections(_) => SectionName::Board,
        }
    }
}

impl Findings {
    /// The reading these findings renew once written, as the alert engine keys it: their
    /// section's, or the tunnels' own ([`key::TUNNELS`]: they renew no section, yet their
    /// collector reads them anew). A red waiting for its confirmation is re-read by the loop
    /// whose findings renew its reading.
    pub fn reading(&self) -> Option<String> {
        match self {
            Findings::Section(SectionData::Tunnels(_)) => Some(key::TUNNELS.to_string()),
            other => other.renews().map(|s| key::section(s.as_str())),
        }
    }

    /// The part whose freshness (`checked_at`) these findings renew once written, as
    /// [`SectionData::renews`] says of what the write side makes of them: none for the
    /// projections, which read nothing of the fleet anew.
    pub fn renews(&self) -> Option<SectionName> {
        match self {
            Findings::Section(data) => data.renews(),
            Findings::Agents { .. } => Some(SectionName::Agents),
            Findings::LivePoll(_) => Some(SectionName::LiveTasks),
            Findings::Projections(_) => None,
        }
    }
}

impl From<SectionData> for Findings {
    fn from(data: SectionData) -> Self {
        Findings::Section(data)
    }
}

/// One finished collection of one collector, as the write side receives it.
#[derive(Debug, Clone)]
pub struct Collection {
    pub findings: Findings,
    pub checked_at: DateTime<Utc>,
    pub duration: Duration,
}

impl Collection {
    pub fn section(&self) -> SectionName {
        self.findings.section()
    }
}

/// One section's new content, ready to merge into the snapshot.
#[derive(Debug, Clone)]
pub struct SectionUpdate {
    pub data: SectionData,
    pub checked_at: DateTime<Utc>,
    pub duration: Duration,
}

impl SectionUpdate {
    pub fn new(data: SectionData, checked_at: DateTime<Utc>, duration: Duration) -> Self {
        SectionUpdate {
            data,
            checked_at,
            duration,
        }
    }
}

/// One attempt of a probe that failed and was followed by another in the same pass (a board
/// read that caught Hermes mid-change, a heartbeat in a dialect the peer does not speak). The
/// findings say only how the last one went; tracing (`otel`) shows these too.
#[derive(Debug, Clone, PartialEq)]
pub struct Attempt {
    /// The element's kind and configured name (`agent`, `min`).
    pub kind: &'static str,
    pub name: String,
    /// What was tried (`heartbeat`, `board.read`) and in what variant (a dialect), if any.
    pub what: &'static str,
    pub variant: Option<&'static str>,
    pub asc: Asc,
    pub started: Instant,
    pub took: Duration,
}

/// What a pass did besides its findings, for tracing: when it started, on the boot clock, and
/// the attempts it tried again.
#[derive(Debug, Clone)]
pub struct Trace {
    pub started: Instant,
    pub attempts: Vec<Attempt>,
}

/// A read-only probe of one part of the fleet, run on its own cadence. It judges by `clock`:
/// the wall-clock moment it stamps, and the ages of what it read as fleetdash observed them.
#[async_trait]
pub trait Collector: Send + Sync {
    fn cadence(&self) -> Duration;
    async fn collect(&self, clock: &Clock) -> Findings;

    /// [`Collector::collect`], with the attempts it tried again (only collectors that retry
    /// within a pass have any).
    async fn collect_traced(&self, clock: &Clock) -> (Findings, Vec<Attempt>) {
        (self.collect(clock).await, Vec::new())
    }

    /// Whether this collector works on the task ids other passes mention (the live-task poll),
    /// so that a one-shot `collect` runs it after them and it sees the ids just mentioned.
    fn follows_mentions(&self) -> bool {
        false
    }

    /// Waits until the next pass is due (`run`'s loops): `due`, as the loop's schedule says
    /// (its cadence, or a re-probe); the work queue's sooner, when a task's verdict turns
    /// (`queue::QueueCollector`).
    async fn wait_next(&self, due: tokio::time::Instant) {
        tokio::time::sleep_until(due).await;
    }
}

/// Runs one collection and stamps it by `clock`.
pub async fn run_once(collector: &dyn Collector, clock: &Clock) -> Collection {
    let started = Instant::now();
    let checked_at = clock.now().wall;
    let findings = collector.collect(clock).await;
    Collection {
        findings,
        checked_at,
        duration: started.elapsed(),
    }
}

/// [`run_once`], with the pass's [`Trace`] (`run`'s loops, for tracing).
pub async fn run_traced(collector: &dyn Collector, clock: &Clock) -> (Collection, Trace) {
    let started = Instant::now();
    let checked_at = clock.now().wall;
    let (findings, attempts) = collector.collect_traced(clock).await;
    let collection = Collection {
        findings,
        checked_at,
        duration: started.elapsed(),
    };
    (collection, Trace { started, attempts })
}

/// The collectors the config asks for, limited to `only` when given. The work queue, when
/// configured, is read from its file strictly read-only (a one-shot `collect`): see
/// [`from_config_sharing`] for `run`, which shares the queue's one writer.
pub fn from_config(
    config: &Config,
    rules: &Rules,
    only: Option<&[SectionName]>,
) -> Vec<Box<dyn Collector>> {
    from_config_sharing(config, rules, only, None, None)
}

/// [`from_config`], reading the work queue through `shared` when given (`run` and the demo:
/// one handle for the intake, the watchdog and the collectors), and having the watchdog's
/// sweep run through `sweep` before the read at a task's turning moment.
pub fn from_config_sharing(
    config: &Config,
    rules: &Rules,
    only: Option<&[SectionName]>,
    shared: Option<Arc<crate::queue::WorkQueue>>,
    sweep: Option<crate::queue::SweepCall>,
) -> Vec<Box<dyn Collector>> {
    let queue_source = match (shared, &config.work_queue) {
        (Some(queue), _) => Some(queue::QueueSource::Shared(queue)),
        (None, Some(wq)) => Some(queue::QueueSource::File(wq.db.clone())),
        (None, None) => None,
    };
    let wanted = |s: SectionName| only.is_none_or(|o| o.contains(&s));
    let mut out: Vec<Box<dyn Collector>> = Vec::new();
    if wanted(SectionName::Agents) && !config.agents.is_empty() {
        let client = ProbeClient::new(config.probe.timeout, config.probe.max_response_bytes);
        let mut collector = agents::AgentsCollector::new(config, rules, client);
        if let Some(source) = &queue_source {
            collector = collector.with_reports(source.clone());
        }
        out.push(Box::new(collector));
    }
    if wanted(SectionName::Tasks) && !config.agents.is_empty() {
        let client = ProbeClient::new(config.probe.timeout, config.probe.max_response_bytes);
        out.push(Box::new(live_tasks::LiveTasksCollector::new(
            config, client,
        )));
    }
    if wanted(SectionName::Tasks)
        && let Some(source) = &queue_source
    {
        let mut collector = queue::QueueCollector::new(
            source.clone(),
            crate::queue::QueueRules::of(rules),
            crate::queue::Retention::of(rules),
            config.cadence.queue,
        );
        if let Some(sweep) = sweep {
            collector = collector.with_sweep(sweep);
        }
        out.push(Box::new(collector));
    }
    if wanted(SectionName::Tasks) && !config.boards.is_empty() {
        out.push(Box::new(
            board::BoardCollector::new(config).with_cap(board::cap::Cap::of(rules)),
        ));
        if let Some(job) = projections::ProjectionJob::new(config) {
            out.push(Box::new(job));
        }
    }
    if wanted(SectionName::Systems) && !config.hosts.is_empty() {
        out.push(Box::new(
            systems::SystemsCollector::new(config)
                .with_certificates(systems::certs::CertWatch::new(config, rules)),
        ));
        if config.hosts.iter().any(|h| !h.tunnels.is_empty()) {
            out.push(Box::new(tunnels::TunnelsCollector::new(config)));
        }
    }
    if wanted(SectionName::Backups)
        && let Some(backups) = backups::BackupsCollector::new(config, rules)
    {
        out.push(Box::new(backups));
    }
    out
}

/// Sections (and task parts) that have a collector in this config, whether or not it has run.
pub fn configured_sections(config: &Config) -> Vec<SectionName> {
    let mut out = Vec::new();
    if !config.agents.is_empty() {
        out.push(SectionName::Agents);
        out.push(SectionName::LiveTasks);
    }
    if !config.boards.is_empty() {
        out.push(SectionName::Board);
    }
    if config.work_queue.is_some() {
        out.push(SectionName::Queue);
    }
    if !config.hosts.is_empty() {
        out.push(SectionName::Systems);
    }
    if config.backups.is_some() {
        out.push(SectionName::Backups);
    }
    out
}

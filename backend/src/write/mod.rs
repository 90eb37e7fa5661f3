//! The write side: the only code that puts anything on disk, each write behind the redaction
//! gate and its lock.
//!
//! Probes never write; they return [`Findings`]. The [`Writer`] turns each collection into
//! section data, doing the writes it asks for first: the task ids an agents pass mentioned go
//! into the live-task registry, a live-task poll is recorded and judged there (escalations
//! included, [`live_tasks`]), the boards the projection job read are projected into the vault
//! ([`projection`]). Then `status_json` merges the sections into the snapshot and, from the same
//! gated data, `snapshot_html` writes the no-JavaScript page and `first_html` the page's
//! index.html with the verdict in it; `transitions` records every band
//! change between the previous snapshot and the new one, and `history` the bounded 24 h up/down
//! samples behind the strips and uptimes. `atomic` is the shared temp-file-fsync-rename step
//! that keeps every reader's view whole.

pub mod atomic;
pub mod escalations;
pub mod first_html;
pub mod folders;
pub mod history;
pub mod live_tasks;
pub mod projection;
pub mod snapshot_html;
pub mod state_file;
pub mod status_json;
pub mod transitions;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Result;
use fleetdash_model::{Probe, RulesView, Snapshot};

use crate::clock::Clock;
use crate::collect::live_tasks::judge::StuckRules;
use crate::collect::projections::{ProjectionInput, ProjectionPlan};
use crate::collect::{Collection, Findings, SectionData, SectionName, SectionUpdate};
use crate::config::defaults::CRON_RECORDS_DIR;
use crate::config::{Config, Rules};
use crate::deps::Deps;
use crate::redact::RedactionGate;
use live_tasks::LiveTaskStore;
use status_json::StatusWriter;

pub struct Writer {
    status: StatusWriter,
    live_tasks: LiveTaskStore,
    gate: RedactionGate,
    clock: Clock,
}

impl Writer {
    /// Creates the output and state directories if needed, and removes the temporary files
    /// an interrupted earlier run left in every folder this config writes.
    pub fn new(config: &Config, rules: &Rules, gate: RedactionGate) -> Result<Writer> {
        for dir in written_folders(config) {
            atomic::sweep_stale_temporaries(&dir);
        }
        let clock = Clock::system(rules.clock.settings());
        Ok(Writer {
            status: StatusWriter::new(
                &config.output_dir,
                &config.state_dir,
                gate.clone(),
                transitions::Bounds::of(&rules.state),
            )?
            .with_blind_spot(
                rules.alerts.blind_spot_percent.percent,
                rules.alerts.blind_spot_min.count,
            )
            .with_set_aside_kept(rules.state.set_aside_kept.count)
            .with_clock(clock.clone())
            .with_folding(Arc::new(Deps::from_config(config)), rules.needs_you.clone())
            .with_declared(config.flaky.clone()),
            live_tasks: LiveTaskStore::new(
                &config.state_dir,
                StuckRules::of(rules),
                escalations::Escalations::new(&config.state_dir, &rules.state),
                gate.clone(),
            ),
            gate,
            clock,
        })
    }

    /// Judges by `clock` (`run` shares one with the collectors, the sweep and the intake).
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.status = self.status.with_clock(clock.clone());
        self.clock = clock;
        self
    }

    /// Each snapshot write carries what `alerts` holds back and how its channels fare.
    pub fn with_alerts(mut self, alerts: Arc<dyn status_json::AlertsLook>) -> Self {
        self.status = self.status.with_alerts(alerts);
        self
    }

    /// Each snapshot write writes the first HTML of the page `shell` too ([`first_html`]).
    pub fn with_first_html(mut self, shell: first_html::Shell) -> Self {
        self.status = self.status.with_first_html(shell);
        self
    }

    /// Where `status.json` goes.
    pub fn path(&self) -> &Path {
        self.status.path()
    }

    /// Does the writes `collection` asks for and returns the section data the snapshot takes.
    /// Blocking (locks, fsync): call it off the async runtime.
    pub fn settle(&self, collection: Collection) -> SectionUpdate {
        // The collection's own end (now, or nearly): what it found was true then.
        let at = self.clock.clocked();
        let data = match collection.findings {
            Findings::Section(data) => data,
            Findings::Agents { rows, mentions } => {
                if let Err(e) = self.live_tasks.note(&mentions, &at) {
                    tracing::error!("cannot note live tasks: {e:#}");
                }
                SectionData::Agents(rows)
            }
            Findings::LivePoll(poll) => match self.live_tasks.record(&poll, &at) {
                Ok(rows) => SectionData::LiveTasks(Probe::Value(rows)),
                // The registry cannot be read (or saved): this pass cannot judge anything, and
                // says so; an unreadable registry is left as it is.
                Err(e) => {
                    SectionData::LiveTasks(Probe::error(format!("live task registry: {e:#}")))
                }
            },
            Findings::Projections(inputs) => SectionData::Projections(
                inputs
                    .into_iter()
                    .map(|input| self.project(input))
                    .collect(),
            ),
        };
        SectionUpdate::new(data, collection.checked_at, collection.duration)
    }

    fn project(&self, input: ProjectionInput) -> (String, Probe<String>) {
        let outcome = match &input.plan {
            ProjectionPlan::Write {
                columns,
                cards,
                source,
            } => projection::project(&input.board, columns, cards, source, &self.gate),
            ProjectionPlan::Skip(outcome) => outcome.clone(),
        };
        (input.board.name, outcome)
    }

    /// Settles `collections` and merges them into the snapshot on disk. Blocking.
    pub fn write(
        &self,
        collections: Vec<Collection>,
        configured: &[SectionName],
        rules: RulesView,
    ) -> Result<Snapshot> {
        let updates = collections.into_iter().map(|c| self.settle(c)).collect();
        self.write_settled(updates, configured, rules)
    }

    /// Merges already settled updates into the snapshot on disk. Blocking.
    pub fn write_settled(
        &self,
        updates: Vec<SectionUpdate>,
        configured: &[SectionName],
        rules: RulesView,
    ) -> Result<Snapshot> {
        self.status.write(updates, configured, rules)
    }
}

/// Every folder fleetdash writes for `config`: the output and state directories, cron-run's
/// record folder, and the vault folders the projections go to.
pub fn written_folders(config: &Config) -> Vec<PathBuf> {
    let mut dirs = vec![
        config.output_dir.clone(),
        config.state_dir.clone(),
        config.state_dir.join(CRON_RECORDS_DIR),
    ];
    for board in &config.boards {
        if let Some(dir) = board.projection.as_deref().and_then(Path::parent)
            && !dirs.iter().any(|d| d == dir)
        {
            dirs.push(dir.to_path_buf());
        }
    }
    dirs
}

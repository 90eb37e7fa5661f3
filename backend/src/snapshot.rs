//! Assembling the snapshot: section updates merge into the previous snapshot, then staleness is
//! judged for the whole.
//!
//! Collectors run on different cadences (and `collect --only` runs one of them), so a write
//! replaces only the sections it collected and keeps the others as they were, with their own
//! `checked_at`. A section is stale when its collector is configured and it was never collected
//! or is older than the rules' `snapshot.stale_after_seconds`; the snapshot is stale when any
//! section is.

use chrono::{DateTime, Utc};
use fleetdash_model::{
    Asc, Band, Probe, RulesView, SCHEMA_VERSION, SectionMeta, Snapshot, System, Tasks, human_age,
    seconds_since,
};

use crate::collect::systems;
use crate::collect::tunnels::HostTunnels;
use crate::collect::{SectionData, SectionName, SectionUpdate};

/// Puts one collected section into the snapshot.
pub fn apply(snapshot: &mut Snapshot, update: SectionUpdate) {
    // Projections write the vault; they do not re-read the fleet, so they leave the freshness
    // of the tasks section alone.
    let part = match update.data {
        // Tunnels are a part of each host's row; the host probes set the section's freshness.
        SectionData::Projections(_) | SectionData::Tunnels(_) => None,
        SectionData::Board(_) => Some(SectionName::Board),
        SectionData::LiveTasks(_) => Some(SectionName::LiveTasks),
        _ => Some(update.section),
    };
    if let Some(part) = part {
        let meta = meta_mut(snapshot, part);
        meta.checked_at = Some(update.checked_at);
        meta.duration_ms = Some(u64::try_from(update.duration.as_millis()).unwrap_or(u64::MAX));
    }
    match update.data {
        SectionData::Board(board) => {
            // Projection outcomes come from another job: keep them across board reads.
            let previous = match &snapshot.tasks.board {
                Probe::Value(b) => b.sources.clone(),
                _ => Vec::new(),
            };
            snapshot.tasks.board = board.map(|mut b| {
                for source in &mut b.sources {
                    if let Some(old) = previous.iter().find(|p| p.name == source.name) {
                        source.projection = old.projection.clone();
                    }
                }
                b
            });
        }
        SectionData::LiveTasks(tasks) => snapshot.tasks.live = tasks,
        SectionData::Projections(outcomes) => {
            if let Probe::Value(board) = &mut snapshot.tasks.board {
                for (name, outcome) in outcomes {
                    if let Some(source) = board.sources.iter_mut().find(|s| s.name == name) {
                        source.projection = outcome;
                    }
                }
            }
        }
        SectionData::Agents(rows) => snapshot.agents = Probe::Value(rows),
        SectionData::Systems(mut rows) => {
            // The tunnels of each host come from the tunnel probes: keep the last ones.
            if let Probe::Value(previous) = &snapshot.systems {
                for row in &mut rows {
                    if let Some(old) = previous.iter().find(|p| p.host == row.host) {
                        row.tunnels = old.tunnels.clone();
                        systems::rejudge(row);
                    }
                }
            }
            snapshot.systems = Probe::Value(rows);
        }
        SectionData::Tunnels(hosts) => merge_tunnels(snapshot, hosts, update.checked_at),
        SectionData::Backups(b) => snapshot.backups = Probe::Value(b),
    }
}

/// Puts fresh tunnel probes into their hosts' rows. Before the first host probe has finished,
/// a host gets a row that says its other facts are not collected yet, so the tunnels are shown
/// (and nothing is lost) from the first pass on.
fn merge_tunnels(snapshot: &mut Snapshot, hosts: Vec<HostTunnels>, at: DateTime<Utc>) {
    if !matches!(snapshot.systems, Probe::Value(_)) {
        snapshot.systems = Probe::Value(Vec::new());
    }
    let Probe::Value(rows) = &mut snapshot.systems else {
        unreachable!("set just above")
    };
    for h in hosts {
        match rows.iter_mut().find(|r| r.host == h.host) {
            Some(row) => {
                row.tunnels = h.tunnels;
                systems::rejudge(row);
            }
            None => {
                let mut row = System {
                    host: h.host,
                    source: h.source,
                    ram_used_gb: Probe::not_collected(),
                    ram_total_gb: Probe::not_collected(),
                    disk_free_gb: Probe::not_collected(),
                    services: Vec::new(),
                    tunnels: h.tunnels,
                    crons: Vec::new(),
                    vault_parity: Probe::Unknown,
                    vault_reason: None,
                    band: Band::Green,
                    status: Asc::SUCCESS,
                    reason: None,
                    history: None,
                    checked_at: at,
                    stale: true,
                };
                systems::rejudge(&mut row);
                rows.push(row);
            }
        }
    }
}

/// Stamps the snapshot for writing: generation time, configured sections, staleness.
pub fn finalize(
    snapshot: &mut Snapshot,
    configured: &[SectionName],
    rules: RulesView,
    now: DateTime<Utc>,
) {
    snapshot.schema_version = SCHEMA_VERSION.to_string();
    snapshot.generated_at = now;
    snapshot.rules = rules;
    let limit = snapshot.rules.snapshot_stale_after_s;
    let mut reasons = Vec::new();
    for section in SectionName::PARTS {
        let is_configured = configured.contains(&section);
        if !is_configured {
            // A section nobody collects any more must not keep showing old data as current.
            clear(snapshot, section);
        }
        let meta = meta_mut(snapshot, section);
        meta.configured = is_configured;
        meta.stale = false;
        if !is_configured {
            meta.checked_at = None;
            meta.duration_ms = None;
            continue;
        }
        match meta.checked_at {
            None => {
                meta.stale = true;
                reasons.push(format!("{section}: not collected yet"));
            }
            Some(at) => {
                let age = seconds_since(at, now);
                if age >= limit {
                    meta.stale = true;
                    reasons.push(format!(
                        "{section}: last collected {} ago (>= {})",
                        human_age(age),
                        human_age(limit)
                    ));
                }
            }
        }
    }
    // The tasks section as a whole: its parts together.
    let (board, live) = (
        snapshot.sections.board.clone(),
        snapshot.sections.live_tasks.clone(),
    );
    snapshot.sections.tasks = SectionMeta {
        configured: board.configured || live.configured,
        checked_at: board.checked_at.max(live.checked_at),
        duration_ms: board.duration_ms.max(live.duration_ms),
        stale: board.stale || live.stale,
    };
    snapshot.stale = !reasons.is_empty();
    snapshot.stale_reasons = reasons;
}

fn clear(snapshot: &mut Snapshot, section: SectionName) {
    match section {
        SectionName::Tasks => {
            snapshot.tasks = Tasks {
                board: Probe::not_collected(),
                live: Probe::not_collected(),
            }
        }
        SectionName::Board => snapshot.tasks.board = Probe::not_collected(),
        SectionName::LiveTasks => snapshot.tasks.live = Probe::not_collected(),
        SectionName::Agents => snapshot.agents = Probe::not_collected(),
        SectionName::Systems => snapshot.systems = Probe::not_collected(),
        SectionName::Backups => snapshot.backups = Probe::not_collected(),
    }
}

fn meta_mut(snapshot: &mut Snapshot, section: SectionName) -> &mut SectionMeta {
    let s = &mut snapshot.sections;
    match section {
        SectionName::Tasks => &mut s.tasks,
        SectionName::Board => &mut s.board,
        SectionName::LiveTasks => &mut s.live_tasks,
        SectionName::Agents => &mut s.agents,
        SectionName::Systems => &mut s.systems,
        SectionName::Backups => &mut s.backups,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn rules() -> RulesView {
        RulesView {
            no_reply_s: 300,
            exchange_green_below_s: 1800,
            exchange_amber_below_s: 21600,
            snapshot_stale_after_s: 600,
            backup_amber_after_s: 93600,
            backup_red_after_s: 172800,
        }
    }

    fn agents_update(at: DateTime<Utc>) -> SectionUpdate {
        SectionUpdate {
            section: SectionName::Agents,
            data: SectionData::Agents(Vec::new()),
            checked_at: at,
            duration: Duration::from_millis(5),
        }
    }

    #[test]
    fn a_configured_section_never_collected_makes_the_snapshot_stale() {
        let now = Utc::now();
        let mut snap = Snapshot::empty(now, rules());
        finalize(&mut snap, &[SectionName::Agents], rules(), now);
        assert!(snap.stale);
        assert_eq!(snap.stale_reasons, vec!["agents: not collected yet"]);
        assert!(!snap.sections.systems.stale && !snap.sections.systems.configured);
    }

    #[test]
    fn fresh_sections_are_not_stale_and_old_ones_are() {
        let now = Utc::now();
        let mut snap = Snapshot::empty(now, rules());
        apply(
            &mut snap,
            agents_update(now - chrono::Duration::seconds(30)),
        );
        finalize(&mut snap, &[SectionName::Agents], rules(), now);
        assert!(!snap.stale, "{:?}", snap.stale_reasons);
        assert_eq!(snap.agents, Probe::Value(vec![]));

        finalize(
            &mut snap,
            &[SectionName::Agents],
            rules(),
            now + chrono::Duration::seconds(700),
        );
        assert!(snap.stale);
        assert_eq!(
            snap.stale_reasons,
            vec!["agents: last collected 12 min ago (>= 10 min)"]
        );
    }

    #[test]
    fn a_section_no_longer_configured_is_cleared() {
        let now = Utc::now();
        let mut snap = Snapshot::empty(now, rules());
        apply(&mut snap, agents_update(now));
        finalize(&mut snap, &[], rules(), now);
        assert_eq!(snap.agents, Probe::not_collected());
        assert!(!snap.stale);
    }
}

//! Assembling the snapshot: section updates merge into the previous snapshot, then staleness is
//! judged for the whole.
//!
//! Collectors run on different cadences (and `collect --only` runs one of them), so a write
//! replaces only the sections it collected and keeps the others as they were, with their own
//! `checked_at`. A section is stale when its collector is configured and it was never collected
//! or is older than the rules' `snapshot.stale_after_seconds`; the snapshot is stale when any
//! section is.

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use fleetdash_model::{
    Asc, Band, Board, BoardSource, EndedTask, Probe, QueueLeftOut, RulesView, SCHEMA_VERSION,
    SectionMeta, Snapshot, System, Tasks, human_age,
};

use crate::clock::Clocked;
use crate::collect::tunnels::HostTunnels;
use crate::collect::{SectionData, SectionName, SectionUpdate};
use crate::collect::{board, systems};

/// Puts one collected section into the snapshot.
pub fn apply(snapshot: &mut Snapshot, update: SectionUpdate) {
    if let Some(part) = update.data.renews() {
        let meta = meta_mut(snapshot, part);
        meta.checked_at = Some(update.checked_at);
        meta.duration_ms = Some(u64::try_from(update.duration.as_millis()).unwrap_or(u64::MAX));
    }
    match update.data {
        SectionData::Board { read, cap } => {
            let previous = match &snapshot.tasks.board {
                Probe::Value(b) => Some(b),
                _ => None,
            };
            snapshot.tasks.board = read.map(|b| {
                // Listed under the cap, knowing what the snapshot listed so far.
                let mut b = board::cap::list(b, previous, cap);
                // Projection outcomes come from another job: keep them across board reads.
                for source in &mut b.sources {
                    if let Some(old) =
                        previous.and_then(|p| p.sources.iter().find(|p| p.name == source.name))
                    {
                        source.projection = old.projection.clone();
                    }
                }
                b
            });
        }
        SectionData::LiveTasks(tasks) => snapshot.tasks.live = tasks,
        SectionData::Queue(part) => {
            // The tasks the snapshot listed before and leaves out now are said once, with why,
            // so that an alert of one ends as dismissed or retired, not as recovered.
            let before: HashSet<&str> = match &snapshot.tasks.queue {
                Probe::Value(tasks) => tasks
                    .iter()
                    .map(|t| t.id.as_str())
                    .chain(
                        snapshot
                            .tasks
                            .queue_unreadable
                            .iter()
                            .map(|t| t.id.as_str()),
                    )
                    .collect(),
                _ => HashSet::new(),
            };
            let mut left_out = part.left_out;
            left_out.ended = part
                .left
                .iter()
                .filter(|(id, _)| before.contains(id.as_str()))
                .map(|(id, why)| EndedTask {
                    id: id.clone(),
                    how: why.as_str().to_string(),
                    checked_at: update.checked_at,
                    stale: false,
                })
                .collect();
            snapshot.tasks.queue = part.tasks;
            snapshot.tasks.queue_unreadable = part.unreadable;
            snapshot.tasks.queue_left_out = left_out;
        }
        SectionData::Projections(outcomes) => {
            merge_projections(snapshot, outcomes, update.checked_at)
        }
        SectionData::Agents(rows) => snapshot.agents = Probe::Value(rows),
        SectionData::Systems(mut rows) => {
            // The tunnels of each host come from the tunnel probes: keep the last result of
            // each tunnel the host still has (the new row lists them; a removed one is gone).
            if let Probe::Value(previous) = &snapshot.systems {
                for row in &mut rows {
                    let Some(old) = previous.iter().find(|p| p.host == row.host) else {
                        continue;
                    };
                    for tunnel in &mut row.tunnels {
                        if let Some(probed) = old.tunnels.iter().find(|t| t.name == tunnel.name) {
                            *tunnel = probed.clone();
                        }
                    }
                    systems::rejudge(row);
                }
            }
            snapshot.systems = Probe::Value(rows);
        }
        SectionData::Tunnels(hosts) => merge_tunnels(snapshot, hosts, update.checked_at),
        SectionData::Backups(b) => snapshot.backups = Probe::Value(b),
    }
}

/// Puts the projection job's outcomes into their boards' sources. The job runs on its own
/// cadence and may finish before the first board read: a board without a source yet gets one
/// that says its cards are not read yet, so the outcome is shown (and kept by the board read
/// that follows) rather than lost. A board part that is an error (its read failed) stays
/// what the page shows: the outcomes have no source to go to, and are logged.
fn merge_projections(
    snapshot: &mut Snapshot,
    outcomes: Vec<(String, Probe<String>)>,
    at: DateTime<Utc>,
) {
    if snapshot.tasks.board == Probe::not_collected() {
        snapshot.tasks.board = Probe::Value(Board {
            columns: Vec::new(),
            cards: Vec::new(),
            sources: Vec::new(),
        });
    }
    let Probe::Value(board) = &mut snapshot.tasks.board else {
        for (name, outcome) in &outcomes {
            tracing::warn!(
                board = %name,
                outcome = ?outcome,
                "projection outcome not shown: the board part is not a board ({:?})",
                snapshot.tasks.board
            );
        }
        return;
    };
    for (name, outcome) in outcomes {
        match board.sources.iter_mut().find(|s| s.name == name) {
            Some(source) => source.projection = outcome,
            None => board.sources.push(BoardSource {
                name,
                plane: None,
                cards: Probe::not_collected(),
                projection: outcome,
                status: Asc::SUCCESS,
                reason: None,
                columns: Vec::new(),
                attention_left_out: Default::default(),
                checked_at: at,
                stale: true,
            }),
        }
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
    at: &Clocked,
) {
    let now = at.wall();
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
            Some(checked_at) => {
                let age = at.age(&format!("section {section}'s last collection"), checked_at);
                if at.reached(age, limit) {
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
    let parts = [
        &snapshot.sections.board,
        &snapshot.sections.live_tasks,
        &snapshot.sections.queue,
    ];
    snapshot.sections.tasks = SectionMeta {
        configured: parts.iter().any(|p| p.configured),
        checked_at: parts.iter().filter_map(|p| p.checked_at).max(),
        duration_ms: parts.iter().filter_map(|p| p.duration_ms).max(),
        stale: parts.iter().any(|p| p.stale),
    };
    age_tunnels(snapshot, limit, at);
    snapshot.stale = !reasons.is_empty();
    snapshot.stale_reasons = reasons;
}

/// Tunnel results are carried from one host probe to the next: one the tunnel probes have not
/// refreshed within the staleness limit is stale, and its host says so, rather than showing
/// an old "up" as current.
fn age_tunnels(snapshot: &mut Snapshot, limit_s: u64, at: &Clocked) {
    let Probe::Value(rows) = &mut snapshot.systems else {
        return;
    };
    for row in rows {
        let mut aged = false;
        for t in &mut row.tunnels {
            let what = format!("tunnel {} of {}'s last probe", t.name, row.host);
            let age = at.age(&what, t.checked_at);
            if !t.stale && at.reached(age, limit_s) {
                t.stale = true;
                t.reason = Some(format!(
                    "not probed for {} (>= {}): are the tunnel probes running?",
                    human_age(age),
                    human_age(limit_s)
                ));
                aged = true;
            }
        }
        if aged {
            systems::rejudge(row);
        }
    }
}

fn clear(snapshot: &mut Snapshot, section: SectionName) {
    match section {
        SectionName::Tasks => {
            snapshot.tasks = Tasks {
                board: Probe::not_collected(),
                live: Probe::not_collected(),
                queue: Probe::not_collected(),
                queue_unreadable: Vec::new(),
                queue_left_out: QueueLeftOut::default(),
            }
        }
        SectionName::Board => snapshot.tasks.board = Probe::not_collected(),
        SectionName::LiveTasks => snapshot.tasks.live = Probe::not_collected(),
        SectionName::Queue => {
            snapshot.tasks.queue = Probe::not_collected();
            snapshot.tasks.queue_unreadable = Vec::new();
            snapshot.tasks.queue_left_out = QueueLeftOut::default();
        }
        SectionName::Agents => snapshot.agents = Probe::not_collected(),
        SectionName::Systems => snapshot.systems = Probe::not_collected(),
        SectionName::Backups => snapshot.backups = Probe::not_collected(),
    }
}

/// A section's freshness in `snapshot`.
pub fn meta(snapshot: &Snapshot, section: SectionName) -> &SectionMeta {
    let s = &snapshot.sections;
    match section {
        SectionName::Tasks => &s.tasks,
        SectionName::Board => &s.board,
        SectionName::LiveTasks => &s.live_tasks,
        SectionName::Queue => &s.queue,
        SectionName::Agents => &s.agents,
        SectionName::Systems => &s.systems,
        SectionName::Backups => &s.backups,
    }
}

fn meta_mut(snapshot: &mut Snapshot, section: SectionName) -> &mut SectionMeta {
    let s = &mut snapshot.sections;
    match section {
        SectionName::Tasks => &mut s.tasks,
        SectionName::Board => &mut s.board,
        SectionName::LiveTasks => &mut s.live_tasks,
        SectionName::Queue => &mut s.queue,
        SectionName::Agents => &mut s.agents,
        SectionName::Systems => &mut s.systems,
        SectionName::Backups => &mut s.backups,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::fleet_rules;
    use std::time::Duration;

    /// The tests' clock: one fixed moment, so that no outcome depends on the day they run.
    fn fixed_now() -> chrono::DateTime<chrono::Utc> {
        "2026-11-30T12:00:00Z".parse().expect("an RFC 3339 instant")
    }

    fn agents_update(at: DateTime<Utc>) -> SectionUpdate {
        SectionUpdate {
            data: SectionData::Agents(Vec::new()),
            checked_at: at,
            duration: Duration::from_millis(5),
        }
    }

    /// `run` hands the projection job's outcomes to the writer whenever they are ready: before
    /// the first board read too. They are kept (on a source that says its cards are not read
    /// yet) and survive the board read that follows.
    #[test]
    fn projection_outcomes_before_the_first_board_read_are_kept() {
        let now = fixed_now();
        let mut snap = Snapshot::empty(now, fleet_rules());
        apply(
            &mut snap,
            SectionUpdate::new(
                SectionData::Projections(vec![("research".into(), Probe::Value("written".into()))]),
                now,
                Duration::from_millis(1),
            ),
        );
        let board = snap
            .tasks
            .board
            .value()
            .expect("a board part with the outcome");
        assert_eq!(board.sources[0].projection, Probe::Value("written".into()));
        assert_eq!(board.sources[0].cards, Probe::not_collected());
        assert!(snap.sections.board.checked_at.is_none(), "not a board read");
        let read = fleetdash_model::Board {
            columns: vec!["todo".into()],
            cards: Vec::new(),
            sources: vec![fleetdash_model::BoardSource {
                name: "research".into(),
                plane: Some("Docs".into()),
                cards: Probe::Value(0),
                projection: Probe::Unknown,
                status: Asc::SUCCESS,
                reason: None,
                columns: Vec::new(),
                attention_left_out: Default::default(),
                checked_at: now,
                stale: false,
            }],
        };
        apply(
            &mut snap,
            SectionUpdate::new(
                SectionData::Board {
                    read: Probe::Value(read),
                    cap: board::cap::Cap::NONE,
                },
                now,
                Duration::from_millis(1),
            ),
        );
        let board = snap.tasks.board.value().unwrap();
        assert_eq!(board.sources[0].projection, Probe::Value("written".into()));
        assert_eq!(board.sources[0].cards, Probe::Value(0));
    }

    /// A board part that is an error (the board read failed) is not replaced by an empty board
    /// when projection outcomes arrive: the error stays what the page shows.
    #[test]
    fn a_board_error_survives_a_projections_update() {
        let now = fixed_now();
        let mut snap = Snapshot::empty(now, fleet_rules());
        let failed = Probe::error("cannot open research.db: unable to open database file");
        apply(
            &mut snap,
            SectionUpdate::new(
                SectionData::Board {
                    read: failed.clone(),
                    cap: board::cap::Cap::NONE,
                },
                now,
                Duration::from_millis(1),
            ),
        );
        apply(
            &mut snap,
            SectionUpdate::new(
                SectionData::Projections(vec![(
                    "research".into(),
                    Probe::error("not projected: the board could not be read"),
                )]),
                now,
                Duration::from_millis(1),
            ),
        );
        assert_eq!(snap.tasks.board, failed);
    }

    #[test]
    fn a_configured_section_never_collected_makes_the_snapshot_stale() {
        let now = fixed_now();
        let mut snap = Snapshot::empty(now, fleet_rules());
        finalize(
            &mut snap,
            &[SectionName::Agents],
            fleet_rules(),
            &Clocked::wall_only(now),
        );
        assert!(snap.stale);
        assert_eq!(snap.stale_reasons, vec!["agents: not collected yet"]);
        assert!(!snap.sections.systems.stale && !snap.sections.systems.configured);
    }

    #[test]
    fn fresh_sections_are_not_stale_and_old_ones_are() {
        let now = fixed_now();
        let mut snap = Snapshot::empty(now, fleet_rules());
        apply(
            &mut snap,
            agents_update(now - chrono::Duration::seconds(30)),
        );
        finalize(
            &mut snap,
            &[SectionName::Agents],
            fleet_rules(),
            &Clocked::wall_only(now),
        );
        assert!(!snap.stale, "{:?}", snap.stale_reasons);
        assert_eq!(snap.agents, Probe::Value(vec![]));

        finalize(
            &mut snap,
            &[SectionName::Agents],
            fleet_rules(),
            &Clocked::wall_only(now + chrono::Duration::seconds(700)),
        );
        assert!(snap.stale);
        assert_eq!(
            snap.stale_reasons,
            vec!["agents: last collected 12 min ago (>= 10 min)"]
        );
    }

    /// A step of the clock makes no section stale, nor fresh: 30 s after a collection the
    /// clock jumps a day ahead, and the section is stale only once the limit was watched
    /// after the jump; jumped back an hour, a stale section stays stale.
    #[test]
    fn a_step_of_the_clock_makes_no_section_stale_nor_fresh() {
        let now = fixed_now();
        let (hands, clock) = crate::config::manual_clock(now);
        let limit = fleet_rules().snapshot_stale_after_s;
        let configured = [SectionName::Agents];
        let mut snap = Snapshot::empty(now, fleet_rules());
        apply(&mut snap, agents_update(now));
        hands.pass(std::time::Duration::from_secs(30));
        hands.step(86_400);
        finalize(&mut snap, &configured, fleet_rules(), &clock.clocked());
        assert!(!snap.stale, "{:?}", snap.stale_reasons);
        hands.pass(std::time::Duration::from_secs(limit - 1));
        finalize(&mut snap, &configured, fleet_rules(), &clock.clocked());
        assert!(!snap.stale, "{:?}", snap.stale_reasons);
        hands.pass(std::time::Duration::from_secs(1));
        finalize(&mut snap, &configured, fleet_rules(), &clock.clocked());
        assert!(snap.stale, "a whole limit watched after the jump");
        hands.step(-3_600);
        finalize(&mut snap, &configured, fleet_rules(), &clock.clocked());
        assert!(snap.stale, "stale stays stale after a step back");
        assert_eq!(
            snap.stale_reasons,
            vec![format!(
                "agents: last collected {} ago (>= {})",
                human_age(30 + limit),
                human_age(limit)
            )]
        );
    }

    #[test]
    fn a_section_no_longer_configured_is_cleared() {
        let now = fixed_now();
        let mut snap = Snapshot::empty(now, fleet_rules());
        apply(&mut snap, agents_update(now));
        finalize(&mut snap, &[], fleet_rules(), &Clocked::wall_only(now));
        assert_eq!(snap.agents, Probe::not_collected());
        assert!(!snap.stale);
    }

    mod systems_merge {
        use super::*;
        use crate::collect::systems::{HostFacts, Ram, judge};
        use crate::collect::tunnels::HostTunnels;
        use crate::config::{Config, HostConfig};
        use crate::net::ProbeFailure;
        use fleetdash_model::NamedCheck;

        fn host(tunnels: &[&str]) -> HostConfig {
            let mut text = String::from(
                "output_dir = \"o\"\nstate_dir = \"s\"\nrules = \"r\"\n[[hosts]]\nname = \"lab\"\n",
            );
            for (i, t) in tunnels.iter().enumerate() {
                text.push_str(&format!(
                    "[[hosts.tunnels]]\nname = \"{t}\"\naddress = \"127.0.0.1:{}\"\n",
                    18301 + i
                ));
            }
            Config::parse(std::path::Path::new("/etc/f.toml"), &text)
                .unwrap()
                .hosts
                .remove(0)
        }

        fn facts(host: &HostConfig, ok: bool) -> HostFacts {
            if ok {
                HostFacts {
                    ram: Ok(Ram {
                        used_bytes: 1,
                        total_bytes: 2,
                    }),
                    disk_free_bytes: Ok(3),
                    services: Vec::new(),
                    crons: Vec::new(),
                    vault: None,
                }
            } else {
                HostFacts::unreachable(
                    host,
                    ProbeFailure::new(Asc::PERMISSION_DENIED, "node_exporter: HTTP 401"),
                )
            }
        }

        fn systems(host: &HostConfig, ok: bool, at: DateTime<Utc>) -> SectionUpdate {
            SectionUpdate {
                data: SectionData::Systems(vec![judge(
                    host,
                    facts(host, ok),
                    at,
                    &Clocked::wall_only(at),
                )]),
                checked_at: at,
                duration: Duration::from_millis(1),
            }
        }

        fn tunnels(up: &[(&str, bool)], at: DateTime<Utc>) -> SectionUpdate {
            let checks = up
                .iter()
                .map(|(name, ok)| NamedCheck {
                    name: name.to_string(),
                    ok: Probe::Value(*ok),
                    reason: (!ok).then(|| "connection refused".into()),
                    uptime_24h_pct: None,
                    checked_at: at,
                    stale: false,
                })
                .collect();
            SectionUpdate {
                data: SectionData::Tunnels(vec![HostTunnels {
                    host: "lab".into(),
                    source: "local".into(),
                    tunnels: checks,
                }]),
                checked_at: at,
                duration: Duration::from_millis(1),
            }
        }

        fn row(snap: &Snapshot) -> &System {
            &snap.systems.value().unwrap()[0]
        }

        #[test]
        fn a_whole_source_failure_keeps_its_code_through_merges() {
            let now = fixed_now();
            let h = host(&["heart"]);
            let mut snap = Snapshot::empty(now, fleet_rules());
            apply(&mut snap, systems(&h, false, now));
            apply(&mut snap, tunnels(&[("heart", true)], now));
            assert_eq!(row(&snap).status, Asc::PERMISSION_DENIED);
            apply(&mut snap, systems(&h, false, now));
            assert_eq!(row(&snap).status, Asc::PERMISSION_DENIED);
            assert_eq!(row(&snap).band, Band::Red);
            // Once the host answers again, its code is its checks' again.
            apply(&mut snap, systems(&h, true, now));
            assert_eq!(row(&snap).status, Asc::SUCCESS, "{:?}", row(&snap).reason);
        }

        #[test]
        fn tunnel_results_survive_host_probes_but_not_their_removal() {
            let now = fixed_now();
            let mut snap = Snapshot::empty(now, fleet_rules());
            apply(&mut snap, systems(&host(&["heart", "pulse"]), true, now));
            // Not probed yet: said so, and the host is not green on a guess.
            assert!(
                row(&snap)
                    .tunnels
                    .iter()
                    .all(|t| t.stale && t.ok.is_error())
            );
            assert_eq!(row(&snap).band, Band::Red);
            apply(
                &mut snap,
                tunnels(&[("heart", true), ("pulse", false)], now),
            );
            apply(&mut snap, systems(&host(&["heart", "pulse"]), true, now));
            let kept: Vec<_> = row(&snap).tunnels.iter().map(|t| t.ok.clone()).collect();
            assert_eq!(kept, [Probe::Value(true), Probe::Value(false)]);
            assert!(
                row(&snap)
                    .reason
                    .as_deref()
                    .unwrap()
                    .contains("tunnel pulse")
            );
            // The pulse tunnel is removed from the registry: it leaves the row and the verdict.
            apply(&mut snap, systems(&host(&["heart"]), true, now));
            assert_eq!(row(&snap).tunnels.len(), 1);
            assert_eq!(row(&snap).band, Band::Green, "{:?}", row(&snap).reason);
        }

        #[test]
        fn a_tunnel_result_older_than_the_limit_is_stale_and_said() {
            let then = fixed_now() - chrono::Duration::seconds(700);
            let now = fixed_now();
            let mut snap = Snapshot::empty(now, fleet_rules());
            apply(&mut snap, systems(&host(&["heart"]), true, then));
            apply(&mut snap, tunnels(&[("heart", true)], then));
            apply(&mut snap, systems(&host(&["heart"]), true, now));
            assert_eq!(row(&snap).band, Band::Green);
            finalize(
                &mut snap,
                &[SectionName::Systems],
                fleet_rules(),
                &Clocked::wall_only(now),
            );
            let t = &row(&snap).tunnels[0];
            assert!(t.stale, "{t:?}");
            assert!(
                t.reason
                    .as_deref()
                    .unwrap()
                    .starts_with("not probed for 11 min")
            );
            assert_eq!(row(&snap).band, Band::Red);
        }
    }
}

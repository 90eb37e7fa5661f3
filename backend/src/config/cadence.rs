//! `[cadence]`: how often each collector runs, and the one rule that ties it to the rules
//! file: a section collected less often than the staleness limit would be marked stale
//! between its own passes.

use std::path::Path;
use std::time::Duration;

use super::defaults;
use super::error::ConfigError;
use super::rules::Rule;
use super::table::Table;
use super::validator::{DURATION, Validator};

#[derive(Debug, Clone)]
pub struct Cadences {
    pub agents: Duration,
    /// Reading the kanban boards (spec §5.1: 5 min).
    pub board: Duration,
    /// Polling live A2A tasks for the stuck rule.
    pub live_tasks: Duration,
    /// Rendering the vault projections (spec §3.4: every 30 min).
    pub projections: Duration,
    /// Host probes: RAM, disk, services, crons, vault parity (spec §5.1: 5 min).
    pub systems: Duration,
    /// Tunnel probes (spec §5.1: 2 min).
    pub tunnels: Duration,
    /// Backup freshness.
    pub backups: Duration,
    /// Reading the work queue into `tasks.queue` (when `[work_queue] db` is set).
    pub queue: Duration,
}

/// Where each cadence was written (`None`: not written, the default applies), for errors
/// found once the rules file is read.
#[derive(Debug, Clone, Default)]
pub(super) struct CadenceLines {
    agents: Option<usize>,
    board: Option<usize>,
    live_tasks: Option<usize>,
    systems: Option<usize>,
    tunnels: Option<usize>,
    backups: Option<usize>,
    queue: Option<usize>,
}

/// Which collectors the config gives work to: only their cadences matter.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct InUse {
    pub agents: bool,
    pub boards: bool,
    pub hosts: bool,
    pub tunnels: bool,
    pub backups: bool,
    pub queue: bool,
}

/// Reads `[cadence]`: each collector's period, its default when not written.
pub(super) fn read(v: &mut Validator, mut t: Table) -> (Cadences, CadenceLines) {
    let mut cadence = |key: &'static str, default: Duration| {
        let raw = t.string_as(v, key, DURATION);
        let line = raw.as_ref().map(|s| v.line(s));
        (v.duration(&raw, &t.field(key), default), line)
    };
    let (agents, agents_line) = cadence("agents", defaults::AGENTS_CADENCE);
    let (board, board_line) = cadence("board", defaults::BOARD_CADENCE);
    let (live_tasks, live_tasks_line) = cadence("live_tasks", defaults::LIVE_TASKS_CADENCE);
    let (projections, _) = cadence("projections", defaults::PROJECTIONS_CADENCE);
    let (systems, systems_line) = cadence("systems", defaults::SYSTEMS_CADENCE);
    let (tunnels, tunnels_line) = cadence("tunnels", defaults::TUNNELS_CADENCE);
    let (backups, backups_line) = cadence("backups", defaults::BACKUPS_CADENCE);
    let (queue, queue_line) = cadence("queue", defaults::QUEUE_CADENCE);
    t.finish(v);
    let cadences = Cadences {
        agents,
        board,
        live_tasks,
        projections,
        systems,
        tunnels,
        backups,
        queue,
    };
    let lines = CadenceLines {
        agents: agents_line,
        board: board_line,
        live_tasks: live_tasks_line,
        systems: systems_line,
        tunnels: tunnels_line,
        backups: backups_line,
        queue: queue_line,
    };
    (cadences, lines)
}

impl Cadences {
    /// A section collected less often than the staleness limit would be marked stale between
    /// its own passes: a false alarm every time. Say so at load time instead.
    pub(super) fn check_against(
        &self,
        lines: &CadenceLines,
        in_use: InUse,
        stale_after: &Rule,
        rules_said: &str,
        file: &Path,
    ) -> Vec<ConfigError> {
        let limit = Duration::from_secs(stale_after.seconds);
        let used = [
            ("agents", self.agents, lines.agents, in_use.agents),
            (
                "live_tasks",
                self.live_tasks,
                lines.live_tasks,
                in_use.agents,
            ),
            ("board", self.board, lines.board, in_use.boards),
            ("systems", self.systems, lines.systems, in_use.hosts),
            ("tunnels", self.tunnels, lines.tunnels, in_use.tunnels),
            ("backups", self.backups, lines.backups, in_use.backups),
            ("queue", self.queue, lines.queue, in_use.queue),
        ];
        used.into_iter()
            .filter(|&(_, cadence, _, in_use)| in_use && cadence >= limit)
            .map(|(name, cadence, line, _)| ConfigError {
                file: file.to_path_buf(),
                line,
                field: format!("cadence.{name}"),
                message: format!(
                    "{} is not shorter than the staleness limit ({} s, {} snapshot.stale_after_seconds): the section would be reported stale between passes",
                    humantime::format_duration(cadence),
                    stale_after.seconds,
                    rules_said
                ),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use crate::config::{Config, config_beside_fleet_rules};

    #[test]
    fn a_cadence_not_shorter_than_the_staleness_limit_is_refused_with_its_line() {
        let (_dir, path) = config_beside_fleet_rules("");
        let config = |tunnels: &str| {
            format!(
                "output_dir = \"o\"\nstate_dir = \"s\"\nrules = \"rules.yaml\"\n\
                 [cadence]\ntunnels = \"{tunnels}\"\n\
                 [[hosts]]\nname = \"lab\"\n[[hosts.tunnels]]\nname = \"t\"\naddress = \"127.0.0.1:1\"\n"
            )
        };
        std::fs::write(&path, config("20m")).unwrap();
        let err = Config::load(&path).unwrap_err().to_string();
        assert!(
            err.contains(
                "f.toml:5: cadence.tunnels: 20m is not shorter than the staleness limit (600 s"
            ),
            "{err}"
        );
        std::fs::write(&path, config("2m")).unwrap();
        assert!(Config::load(&path).is_ok());
    }

    #[test]
    fn a_cadence_error_points_at_the_cadence_even_when_its_key_is_used_elsewhere_first() {
        let (_dir, path) = config_beside_fleet_rules("");
        // `tunnels = ...` on line 6 is the host's; the cadence is on line 9.
        std::fs::write(
            &path,
            "output_dir = \"o\"\nstate_dir = \"s\"\nrules = \"rules.yaml\"\n\
             [[hosts]]\nname = \"lab\"\ntunnels = [{ name = \"t\", address = \"127.0.0.1:1\" }]\n\
             [cadence]\nsystems = \"1m\"\ntunnels = \"20m\"\n",
        )
        .unwrap();
        let err = Config::load(&path).unwrap_err().to_string();
        assert!(
            err.contains("f.toml:9: cadence.tunnels: 20m is not shorter"),
            "{err}"
        );
    }

    #[test]
    fn a_cadence_is_checked_when_every_entry_it_serves_is_wrong() {
        let (_dir, path) = config_beside_fleet_rules("");
        std::fs::write(
            &path,
            "output_dir = \"o\"\nstate_dir = \"s\"\nrules = \"rules.yaml\"\n\
             [cadence]\nagents = \"1h\"\n\
             [[agents]]\nname = \"a\"\nendpoint = \"ftp://x\"\n",
        )
        .unwrap();
        let errors: Vec<String> = Config::load(&path)
            .unwrap_err()
            .0
            .iter()
            .map(|e| format!("{}:{}", e.line.unwrap(), e.field))
            .collect();
        assert_eq!(errors, ["5:cadence.agents", "8:agents[0].endpoint"]);
    }
}

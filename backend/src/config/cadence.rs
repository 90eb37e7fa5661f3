//! `[cadence]`: how often each collector runs, and the one rule that ties it to the rules
//! file: a section collected less often than the staleness limit would be marked stale
//! between its own passes.

use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use super::defaults;
use super::error::ConfigError;
use super::rules::Rules;
use super::validator::Validator;

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
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCadence {
    agents: Option<Spanned<String>>,
    board: Option<Spanned<String>>,
    live_tasks: Option<Spanned<String>>,
    projections: Option<Spanned<String>>,
    systems: Option<Spanned<String>>,
    tunnels: Option<Spanned<String>>,
    backups: Option<Spanned<String>>,
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
}

/// Which collectors the config gives work to: only their cadences matter.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct InUse {
    pub agents: bool,
    pub boards: bool,
    pub hosts: bool,
    pub tunnels: bool,
    pub backups: bool,
}

pub(super) fn validate(v: &mut Validator, raw: &RawCadence) -> (Cadences, CadenceLines) {
    let line = |d: &Option<Spanned<String>>| d.as_ref().map(|d| v.line(d));
    let lines = CadenceLines {
        agents: line(&raw.agents),
        board: line(&raw.board),
        live_tasks: line(&raw.live_tasks),
        systems: line(&raw.systems),
        tunnels: line(&raw.tunnels),
        backups: line(&raw.backups),
    };
    let cadences = Cadences {
        agents: v.duration(&raw.agents, "cadence.agents", defaults::AGENTS_CADENCE),
        board: v.duration(&raw.board, "cadence.board", defaults::BOARD_CADENCE),
        live_tasks: v.duration(
            &raw.live_tasks,
            "cadence.live_tasks",
            defaults::LIVE_TASKS_CADENCE,
        ),
        projections: v.duration(
            &raw.projections,
            "cadence.projections",
            defaults::PROJECTIONS_CADENCE,
        ),
        systems: v.duration(&raw.systems, "cadence.systems", defaults::SYSTEMS_CADENCE),
        tunnels: v.duration(&raw.tunnels, "cadence.tunnels", defaults::TUNNELS_CADENCE),
        backups: v.duration(&raw.backups, "cadence.backups", defaults::BACKUPS_CADENCE),
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
        rules: &Rules,
        file: &std::path::Path,
    ) -> Vec<ConfigError> {
        let limit = Duration::from_secs(rules.snapshot_stale_after.seconds);
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
                    rules.snapshot_stale_after.seconds,
                    rules.path.display()
                ),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Config;

    #[test]
    fn a_cadence_not_shorter_than_the_staleness_limit_is_refused_with_its_line() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("rules.yaml"),
            include_str!("../../../config/rules.yaml"),
        )
        .unwrap();
        let path = dir.path().join("f.toml");
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
}

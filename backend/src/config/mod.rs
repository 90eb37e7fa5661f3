//! The registry: one human-written TOML file naming every agent, host, board and backup the
//! collector watches, where it writes, and how often.
//!
//! Each section lives in its own module with its types and the validation of what it holds
//! (`agents`, `hosts`, `boards` with the vault, `backups`, `cadence`, `probe`, `serve`), so
//! that a new field touches one file; this module reads the top level and hands each section
//! to its module.
//!
//! Loading is two steps so that `fleetdash check` can report *every* mistake at once: serde
//! parses the shape (it stops at the first syntax or type error), then each section's
//! validation walks the parsed file and collects each semantic error with its line and field.

mod agents;
mod backups;
mod boards;
mod cadence;
pub mod defaults;
mod error;
mod hosts;
mod probe;
mod rules;
mod serve;
mod validator;

pub use agents::{AgentConfig, Dialect, TokenSource};
pub use backups::{BackupSource, BackupsConfig};
pub use boards::BoardConfig;
pub use cadence::Cadences;
pub use error::{ConfigError, ConfigErrors};
pub use hosts::{
    CronConfig, CronEvidence, HostConfig, HostSource, SshTarget, TunnelConfig, VaultParityConfig,
};
pub use probe::ProbeLimits;
#[cfg(test)]
pub(crate) use rules::fleet_rules;
pub use rules::{Rule, Rules};
pub use serve::ServeConfig;
pub use validator::{is_plain_name, resolve_path};

use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use cadence::{CadenceLines, InUse};
use error::{line_of, one_error};
use validator::Validator;

/// The validated configuration, with every path resolved against the config file's folder.
#[derive(Debug, Clone)]
pub struct Config {
    pub path: PathBuf,
    pub output_dir: PathBuf,
    pub state_dir: PathBuf,
    pub rules_path: PathBuf,
    pub cadence: Cadences,
    pub probe: ProbeLimits,
    pub agents: Vec<AgentConfig>,
    pub hosts: Vec<HostConfig>,
    pub boards: Vec<BoardConfig>,
    /// The Obsidian vault the projections are written into.
    pub vault: Option<PathBuf>,
    pub backups: Option<BackupsConfig>,
    pub serve: ServeConfig,
}

impl Config {
    /// Reads and validates the config file and its rules file.
    pub fn load(path: &Path) -> Result<(Config, Rules), ConfigErrors> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| one_error(path, None, "", format!("cannot read the config file: {e}")))?;
        let (config, lines, in_use) = Config::parse_located(path, &text)?;
        let rules = Rules::load(&config.rules_path)?;
        let errors = config.cadence.check_against(&lines, in_use, &rules, path);
        if errors.is_empty() {
            Ok((config, rules))
        } else {
            Err(ConfigErrors(errors))
        }
    }

    /// Parses and validates config text that was read from `path`.
    pub fn parse(path: &Path, text: &str) -> Result<Config, ConfigErrors> {
        Config::parse_located(path, text).map(|(config, _, _)| config)
    }

    /// [`Config::parse`], plus what the check against the rules file needs.
    fn parse_located(
        path: &Path,
        text: &str,
    ) -> Result<(Config, CadenceLines, InUse), ConfigErrors> {
        let raw: RawConfig = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|s| line_of(text, s.start));
            one_error(path, line, "", e.message().trim().to_string())
        })?;
        validate(path, text, raw)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    output_dir: Spanned<String>,
    state_dir: Spanned<String>,
    rules: Spanned<String>,
    #[serde(default)]
    cadence: cadence::RawCadence,
    #[serde(default)]
    probe: probe::RawProbe,
    #[serde(default)]
    agents: Vec<agents::RawAgent>,
    #[serde(default)]
    hosts: Vec<hosts::RawHost>,
    #[serde(default)]
    boards: Vec<boards::RawBoard>,
    vault: Option<boards::RawVault>,
    backups: Option<backups::RawBackups>,
    #[serde(default)]
    serve: serve::RawServe,
}

fn validate(
    path: &Path,
    text: &str,
    raw: RawConfig,
) -> Result<(Config, CadenceLines, InUse), ConfigErrors> {
    let mut v = Validator::new(path, text);
    let output_dir = v.path(raw.output_dir.get_ref());
    let state_dir = v.path(raw.state_dir.get_ref());
    let rules_path = v.path(raw.rules.get_ref());
    let (cadence, cadence_lines) = cadence::validate(&mut v, &raw.cadence);
    let probe = probe::validate(&mut v, &raw.probe);
    let agents = agents::validate(&mut v, &raw.agents);
    let hosts = hosts::validate(&mut v, &raw.hosts, &state_dir);
    let vault = boards::validate_vault(&v, raw.vault.as_ref());
    let boards = boards::validate(&mut v, &raw.boards, vault.as_deref());
    let backups = raw
        .backups
        .as_ref()
        .and_then(|b| backups::validate(&mut v, b));
    let serve = serve::validate(&mut v, &raw.serve);
    if !v.errors.is_empty() {
        return Err(ConfigErrors(v.errors));
    }
    let in_use = InUse {
        agents: !agents.is_empty(),
        boards: !boards.is_empty(),
        hosts: !hosts.is_empty(),
        tunnels: hosts.iter().any(|h| !h.tunnels.is_empty()),
        backups: backups.is_some(),
    };
    let config = Config {
        path: path.to_path_buf(),
        output_dir,
        state_dir,
        rules_path,
        cadence,
        probe,
        agents,
        hosts,
        boards,
        vault,
        backups,
        serve,
    };
    Ok((config, cadence_lines, in_use))
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::time::Duration;

    const GOOD: &str = r#"
output_dir = "out"
state_dir = "state"
rules = "rules.yaml"

[cadence]
agents = "90s"

[[agents]]
name = "min"
endpoint = "http://127.0.0.1:18301"
dialect = "v1"
lane = "hub"
audit_log = "~/.hermes/a2a_audit.jsonl"
"#;

    #[test]
    fn a_good_config_resolves_paths_and_defaults() {
        let c = Config::parse(Path::new("/etc/fleetdash/fleetdash.toml"), GOOD).unwrap();
        assert_eq!(c.output_dir, Path::new("/etc/fleetdash/out"));
        assert_eq!(c.rules_path, Path::new("/etc/fleetdash/rules.yaml"));
        assert_eq!(c.cadence.agents, Duration::from_secs(90));
        assert_eq!(c.probe.timeout, defaults::PROBE_TIMEOUT);
        assert_eq!(c.agents[0].dialect, Dialect::V1);
        assert!(!c.agents[0].audit_log.as_ref().unwrap().starts_with("~"));
    }

    #[test]
    fn every_semantic_error_is_reported_with_its_line_and_field() {
        let text = r#"output_dir = "out"
state_dir = "state"
rules = "rules.yaml"
[probe]
concurrency = 0
[[agents]]
name = "a"
endpoint = "not a url"
[[agents]]
name = "a"
endpoint = "http://127.0.0.1:1"
dialect = "v2"
"#;
        let errs = Config::parse(Path::new("f.toml"), text).unwrap_err().0;
        let rendered: Vec<String> = errs.iter().map(ToString::to_string).collect();
        assert_eq!(errs.len(), 4, "{rendered:#?}");
        assert!(rendered.contains(
            &"f.toml:5: probe.concurrency: expected a whole number greater than zero".to_string()
        ));
        assert!(
            rendered
                .iter()
                .any(|r| r.starts_with("f.toml:8: agents[0].endpoint: not a URL"))
        );
        assert!(
            rendered.contains(&"f.toml:10: agents[1].name: duplicate agent name \"a\"".to_string())
        );
        assert!(rendered.iter().any(|r| {
            r.starts_with("f.toml:12: agents[1].dialect: unknown dialect \"v2\"; expected one of")
        }));
    }

    #[test]
    fn a_syntax_error_names_the_file_and_line() {
        let err = Config::parse(
            Path::new("f.toml"),
            "output_dir = \"out\"\nstate_dir = \"s\"\nrules = [\n",
        )
        .unwrap_err();
        assert!(err.to_string().starts_with("f.toml:"), "{err}");
    }

    #[test]
    fn an_unknown_key_is_an_error() {
        let err = Config::parse(
            Path::new("f.toml"),
            "output_dir = \"o\"\nstate_dir = \"s\"\nrules = \"r\"\noutptu = 1\n",
        )
        .unwrap_err();
        assert!(err.to_string().contains("outptu"), "{err}");
    }
}

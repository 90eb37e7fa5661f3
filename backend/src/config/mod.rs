//! The registry: one human-written TOML file naming every agent, host, board and backup the
//! collector watches, where it writes, and how often.
//!
//! Each section lives in its own module with its types and the validation of what it holds
//! (`agents`, `hosts`, `boards` with the vault, `backups`, `cadence`, `probe`, `serve`), so
//! that a new field touches one file; this module reads the top level and hands each section
//! to its module.
//!
//! `fleetdash check` reports *every* mistake at once, so nothing stops at the first one: the
//! file is parsed into toml's spanned tree (recovering from syntax errors), each section reads
//! its keys one by one ([`table`]: a wrong type or an unknown key is one error, the rest is
//! still read) and validates what they hold, and the rules file and the cadences it limits are
//! checked even when the config has other mistakes ([`inspect`]). The files the config names
//! are only looked at by `check`, for warnings ([`files`]).

mod agents;
mod alerts;
mod backups;
mod boards;
mod cadence;
pub mod defaults;
mod error;
mod files;
#[cfg(test)]
pub(crate) mod fixtures;
pub mod flaky;
mod hosts;
mod hub;
mod intake;
pub mod maintenance;
mod metrics;
mod otel;
mod probe;
mod report;
mod rules;
mod secrets;
mod serve;
mod table;
mod validator;
mod work_queue;

pub use agents::{AgentConfig, AuditLog, Dialect};
pub use alerts::{AlertsConfig, ChannelConfig, ChannelTarget, QuietHours};
pub use backups::{BackupSource, BackupsConfig};
pub use boards::BoardConfig;
pub use cadence::Cadences;
pub use error::{ConfigError, ConfigErrors};
pub use files::ConfigWarning;
#[cfg(test)]
pub(crate) use fixtures::{
    config_beside_fleet_rules, fleet_alert_rules, fleet_rules, fleet_state_rules, manual_clock,
};
pub use flaky::Flaky;
pub use hosts::{
    CronConfig, CronEvidence, HostConfig, HostSource, SshTarget, TunnelConfig, VaultParityConfig,
};
pub use intake::IntakeConfig;
pub use metrics::MetricsConfig;
pub use otel::OtelConfig;
pub use probe::ProbeLimits;
pub use report::{Every, ReportConfig, minute_of_day};
pub use rules::{
    AlertRules, BUILTIN_RULES, ByteRule, ClockRules, CountRule, NeedsYouRules, Rule, Rules,
    RulesOrigin, StateRules, effective_rules_text,
};
pub use secrets::{TokenSource, read_token};
pub use serve::{ServeConfig, TlsFiles, plain_http_refusal};
pub use validator::{is_plain_name, resolve_path};
pub use work_queue::WorkQueueConfig;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use toml::de::DeTable;

use cadence::{CadenceLines, InUse};
use error::one_error;
use table::Table;
use validator::Validator;

use crate::redact::RedactionGate;

/// The validated configuration, with every path resolved against the config file's folder.
#[derive(Debug, Clone)]
pub struct Config {
    pub path: PathBuf,
    pub output_dir: PathBuf,
    pub state_dir: PathBuf,
    /// `rules`: the rules file over the built-in rules; `None`: the built-in rules alone.
    pub rules_path: Option<PathBuf>,
    /// `hub`: this hub's name, which says which hub saw what when several watch one fleet.
    pub hub: String,
    pub cadence: Cadences,
    pub probe: ProbeLimits,
    /// The collector's identity in the agents' audit logs (`[probe] collector_peer`): the
    /// `peer` of its own probes, which are not exchanges. An agent may name another.
    pub collector_peer: String,
    pub agents: Vec<AgentConfig>,
    pub hosts: Vec<HostConfig>,
    pub boards: Vec<BoardConfig>,
    /// The Obsidian vault the projections are written into.
    pub vault: Option<PathBuf>,
    pub backups: Option<BackupsConfig>,
    pub serve: ServeConfig,
    /// `[intake]`: the A2A server agents report to; off unless `listen` is set.
    pub intake: IntakeConfig,
    /// `[metrics]`: `fleetdash run`'s loopback `/metrics` without auth; off unless set.
    pub metrics: MetricsConfig,
    /// `[otel]`: spans of each pass and probe over OTLP/HTTP; off unless set.
    pub otel: Option<OtelConfig>,
    /// `[work_queue]`: the work queue's SQLite file (spec 003 §3.2), when there is one.
    pub work_queue: Option<WorkQueueConfig>,
    /// `depends_on` of agents and hosts, by element key (`agent:min` -> `["host:lab"]`).
    pub depends_on: BTreeMap<String, Vec<String>>,
    /// `flaky = { reason, until }` of agents, hosts and tunnels, by element key (`agent:orin`,
    /// `host:laptop/tunnel:heart`): the elements declared known to drop ([`Flaky`]).
    pub flaky: BTreeMap<String, Flaky>,
    /// `[alerts]`: the channels, the dead man's switch, the dashboard's URL, maintenance windows.
    pub alerts: AlertsConfig,
    /// `[report]` (issue 45): the report of a period at the operator's hour; off unless set.
    pub report: Option<ReportConfig>,
}

impl Config {
    /// Reads and validates the config file and its rules file; on failure, every mistake
    /// of both (see [`inspect`]).
    pub fn load(path: &Path) -> Result<(Config, Rules), ConfigErrors> {
        let inspection = inspect(path);
        match inspection.loaded {
            Some(loaded) if inspection.errors.is_empty() => Ok(loaded),
            _ => Err(ConfigErrors(inspection.errors)),
        }
    }

    /// Parses and validates config text that was read from `path`, without its rules file.
    pub fn parse(path: &Path, text: &str) -> Result<Config, ConfigErrors> {
        let mut read = read(path, text);
        if read.errors.is_empty() {
            Ok(read.config)
        } else {
            in_line_order(&mut read.errors);
            Err(ConfigErrors(read.errors))
        }
    }
}

/// Everything one look at a config file finds, mistakes of one part never hiding another's.
#[derive(Debug)]
pub struct Inspection {
    /// The config and its rules, when neither has a mistake.
    pub loaded: Option<(Config, Rules)>,
    /// Every mistake: the config file's in line order, then the rules file's.
    pub errors: Vec<ConfigError>,
    path: PathBuf,
    /// The local files and folders the config names for fleetdash to read.
    named: Vec<files::NamedPath>,
}

impl Inspection {
    /// Each file or folder the config names (audit logs, token files, board databases, the
    /// vault, dispatch configs, htpasswd, ssh keys, ...) that is missing or unreadable now.
    /// Only metadata and permissions are looked at: nothing is opened or created.
    pub fn warnings(&self) -> Vec<ConfigWarning> {
        files::warnings(&self.path, &self.named)
    }
}

/// Reads the config file and its rules file and collects every mistake in both: the config's
/// syntax, keys, types and values, the rules file's, and each cadence that the rules'
/// staleness limit makes too long (checked even when other parts are wrong).
pub fn inspect(path: &Path) -> Inspection {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) => {
            return Inspection {
                loaded: None,
                errors: one_error(path, None, "", format!("cannot read the config file: {e}")).0,
                path: path.to_path_buf(),
                named: Vec::new(),
            };
        }
    };
    let mut read = read(path, &text);
    let rules = match &read.config.rules_path {
        Some(file) => Rules::read_file(file),
        None => Rules::read_built_in(),
    };
    if let Some(stale_after) = &rules.snapshot_stale_after {
        read.errors.extend(read.config.cadence.check_against(
            &read.cadence_lines,
            read.in_use,
            stale_after,
            &rules.origin.of_group("snapshot"),
            path,
        ));
    }
    let mut rules_errors = rules.errors;
    let loaded_rules = rules.rules;
    in_line_order(&mut read.errors);
    in_line_order(&mut rules_errors);
    let mut errors = read.errors;
    errors.extend(rules_errors);
    let loaded = match loaded_rules {
        Some(rules) if errors.is_empty() => Some((read.config, rules)),
        _ => None,
    };
    Inspection {
        loaded,
        errors,
        path: path.to_path_buf(),
        named: read.named,
    }
}

/// Sorts one file's errors by line, keeping the order of those on one line (errors about the
/// whole file, without a line, first).
fn in_line_order(errors: &mut [ConfigError]) {
    errors.sort_by_key(|e| e.line);
}

/// What reading the config text found: the config (partial when there are errors: a wrong
/// entry is left out, a wrong value takes its default), and what the check against the rules
/// file needs.
struct Read {
    config: Config,
    cadence_lines: CadenceLines,
    in_use: InUse,
    errors: Vec<ConfigError>,
    named: Vec<files::NamedPath>,
}

fn read(path: &Path, text: &str) -> Read {
    let mut v = Validator::new(path, text);
    let (document, syntax_errors) = DeTable::parse_recoverable(text);
    for e in syntax_errors {
        v.error_at(e.span().map(|s| s.start), "", e.message().trim());
    }
    let mut top = Table::top(&document);
    let mut required_path = |v: &mut Validator, key: &'static str, expected: &str| {
        top.required_string(v, key, expected)
            .map(|p| v.path(p.get_ref()))
    };
    let output_dir = required_path(&mut v, "output_dir", "the folder status.json is written to");
    let state_dir = required_path(
        &mut v,
        "state_dir",
        "fleetdash's own folder (locks, registries; not served)",
    );

    // Optional: without it, the built-in rules (`fleetdash rules show`).
    let rules_path = top.string(&mut v, "rules").map(|p| v.path(p.get_ref()));
    let hub = hub::read(&mut v, &mut top);
    let cadence_table = top.table(&mut v, "cadence");
    let probe_table = top.table(&mut v, "probe");
    let agent_entries = top.tables(&mut v, "agents");
    let host_entries = top.tables(&mut v, "hosts");
    let board_entries = top.tables(&mut v, "boards");
    let vault = top.table(&mut v, "vault");
    let backups = top.table(&mut v, "backups");
    let serve = top.table(&mut v, "serve");
    let intake = top.table(&mut v, "intake");
    let metrics = top.table(&mut v, "metrics");
    let otel = top.table(&mut v, "otel");
    let work_queue = top.table(&mut v, "work_queue");
    let alerts = top.table(&mut v, "alerts");
    let report = top.table(&mut v, "report");
    top.finish(&mut v);

    // Judged by what is declared, valid or not: a wrong entry must not hide a cadence mistake.
    let in_use = InUse {
        agents: !agent_entries.is_empty(),
        boards: !board_entries.is_empty(),
        hosts: !host_entries.is_empty(),
        tunnels: host_entries.iter().any(|h| h.has_entries("tunnels")),
        backups: backups.is_present(),
        queue: work_queue.is_present(),
    };
    let state_dir = state_dir.unwrap_or_default();
    let (cadence, cadence_lines) = cadence::read(&mut v, cadence_table);
    let (probe, collector_peer) = probe::read(&mut v, probe_table);
    let mut depends_on = BTreeMap::new();
    let mut flaky = BTreeMap::new();
    // Hosts first: an agent's audit log may be on one of them (`audit_host`).
    let (hosts, declared_hosts) = hosts::read(
        &mut v,
        host_entries,
        &state_dir,
        &mut depends_on,
        &mut flaky,
    );
    let agents = agents::read(
        &mut v,
        agent_entries,
        &collector_peer,
        work_queue.is_present(),
        &agents::Hosts {
            read: &hosts,
            declared: &declared_hosts,
        },
        &mut depends_on,
        &mut flaky,
    );
    let vault = boards::read_vault(&mut v, vault);
    let boards = boards::read(&mut v, board_entries, vault.as_deref());
    let backups = backups::read(&mut v, backups);
    let serve = serve::read(&mut v, serve);
    let intake = intake::read(&mut v, intake, work_queue.is_present());
    let metrics = metrics::read(&mut v, metrics);
    let otel = otel::read(&mut v, otel);
    let work_queue = work_queue::read(&mut v, work_queue);
    let agent_names: Vec<String> = agents.iter().map(|a| a.name.clone()).collect();
    let alerts = alerts::read(&mut v, alerts, &agent_names);
    let report = report::read(&mut v, report, &alerts);
    Read {
        config: Config {
            path: path.to_path_buf(),
            output_dir: output_dir.unwrap_or_default(),
            state_dir,
            rules_path,
            hub,
            cadence,
            probe,
            collector_peer,
            agents,
            hosts,
            boards,
            vault,
            backups,
            serve,
            intake,
            metrics,
            otel,
            work_queue,
            depends_on,
            flaky,
            alerts,
            report,
        },
        cadence_lines,
        in_use,
        errors: v.errors,
        named: v.named,
    }
}

/// The secrets a config leads to, gathered once for every gate: the snapshot's writers and the
/// log are guarded by the same list, so the two cannot drift apart.
impl Config {
    /// Every secret this config leads to, read now: the tokens fleetdash calls agents with,
    /// those agents report to the intake with, the alert channels' tokens, and the passwords
    /// written into agent endpoints, node_exporter URLs, channel and dead man's URLs. A token
    /// that cannot be read is left out (there is nothing of it to leak).
    pub fn secrets(&self) -> Vec<String> {
        let tokens = self
            .agents
            .iter()
            .flat_map(|a| [a.token.as_ref(), a.report_token.as_ref()])
            .chain(self.alerts.token_sources().map(Some))
            .chain(self.otel.iter().map(|o| o.token.as_ref()))
            .filter_map(|t| read_token(t).ok().flatten());
        let host_urls = self.hosts.iter().filter_map(|h| match &h.source {
            HostSource::NodeExporter { url } => Some(url),
            _ => None,
        });
        let passwords = self
            .agents
            .iter()
            .map(|a| &a.endpoint)
            .chain(host_urls)
            .filter_map(|u| u.password())
            .map(str::to_string)
            .chain(self.alerts.url_passwords());
        tokens.chain(passwords).collect()
    }

    /// The gate for everything written from this config: secret shapes plus [`Config::secrets`].
    pub fn gate(&self) -> RedactionGate {
        RedactionGate::new(self.secrets())
    }
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
        assert_eq!(
            c.rules_path.as_deref(),
            Some(Path::new("/etc/fleetdash/rules.yaml"))
        );
        assert_eq!(c.cadence.agents, Duration::from_secs(90));
        assert_eq!(c.probe.timeout, defaults::PROBE_TIMEOUT);
        assert_eq!(c.agents[0].dialect, Dialect::V1);
        let Some(AuditLog::Local(audit)) = &c.agents[0].audit_log else {
            panic!("{:?}", c.agents[0].audit_log)
        };
        assert!(!audit.starts_with("~"));
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
    fn the_collector_peer_defaults_to_fleetdash_and_each_agent_may_name_its_own() {
        let c = Config::parse(Path::new("f.toml"), GOOD).unwrap();
        assert_eq!(c.collector_peer, defaults::COLLECTOR_PEER);
        assert_eq!(c.agents[0].collector_peer, "fleetdash");

        let text = format!(
            "{}\n[[agents]]\nname = \"echo\"\nendpoint = \"http://127.0.0.1:18441\"\n\
             collector_peer = \"min-watch\"\n",
            GOOD.replace(
                "[cadence]",
                "[probe]\ncollector_peer = \"hub-collector\"\n\n[cadence]"
            )
        );
        let c = Config::parse(Path::new("f.toml"), &text).unwrap();
        assert_eq!(c.collector_peer, "hub-collector");
        let peers: Vec<(&str, &str)> = c
            .agents
            .iter()
            .map(|a| (a.name.as_str(), a.collector_peer.as_str()))
            .collect();
        assert_eq!(peers, [("min", "hub-collector"), ("echo", "min-watch")]);
    }

    #[test]
    fn a_blank_collector_peer_is_reported_where_it_is_written_with_the_other_mistakes() {
        let text = "output_dir = \"o\"\nstate_dir = \"s\"\nrules = \"r\"\n\
                    [probe]\ncollector_peer = \" \"\n\
                    [[agents]]\nname = \"a\"\nendpoint = \"http://127.0.0.1:1\"\n\
                    collector_peer = \"\"\ndialect = \"v9\"\n";
        let errors = Config::parse(Path::new("f.toml"), text).unwrap_err().0;
        let rendered: Vec<String> = errors.iter().map(ToString::to_string).collect();
        let blank = "must not be empty; expected the collector's identity in the agents' audit \
                     logs (their `peer` field), e.g. \"fleetdash\"";
        assert_eq!(
            rendered,
            [
                format!("f.toml:5: probe.collector_peer: {blank}"),
                format!("f.toml:9: agents[0].collector_peer: {blank}"),
                "f.toml:10: agents[0].dialect: unknown dialect \"v9\"; expected one of v1, \
                 v0.3, v0.3-content, auto"
                    .to_string(),
            ]
        );
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

    /// The rules file as shipped, minus the stuck rule's citation: one mistake in it.
    fn rules_without_the_stuck_source() -> String {
        include_str!("../../../config/rules.yaml").replace(
            "  source: plugins/platforms/a2a/adapter.py:38 (_MIN_ORPHAN_TIMEOUT), cortex/tasks/states.yaml\n",
            "",
        )
    }

    #[test]
    fn every_mistake_of_the_config_and_its_rules_is_listed_at_once() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("rules.yaml"),
            rules_without_the_stuck_source(),
        )
        .unwrap();
        let path = dir.path().join("f.toml");
        std::fs::write(
            &path,
            r#"output_dir = "out"
state_dir = "state"
rules = "rules.yaml"

[cadence]
agents = "20m"

[probe]
timeout = "soon"

[[agents]]
name = "hub"
endpont = "http://127.0.0.1:18301"

[[agents]]
name = "lyra"
endpoint = "http://127.0.0.1:18302"
dialect = "v9"

[[hosts]]
name = "lab"
source = "telnet"
"#,
        )
        .unwrap();
        let inspection = inspect(&path);
        assert!(inspection.loaded.is_none());
        let rendered: Vec<String> = inspection.errors.iter().map(ToString::to_string).collect();
        let f = path.display();
        let r = dir.path().join("rules.yaml");
        let r = r.display();
        let expected = [
            format!(
                "{f}:6: cadence.agents: 20m is not shorter than the staleness limit (600 s, {r} \
                 snapshot.stale_after_seconds): the section would be reported stale between passes"
            ),
            format!(
                "{f}:9: probe.timeout: expected a duration such as \"2m\" or \"30s\" \
                 (expected number at 0)"
            ),
            format!("{f}:13: agents[0].endpont: unknown key `endpont`, did you mean `endpoint`?"),
            format!(
                "{f}:18: agents[1].dialect: unknown dialect \"v9\"; expected one of v1, v0.3, \
                 v0.3-content, auto"
            ),
            format!(
                "{f}:22: hosts[0].source: unknown source \"telnet\"; expected local, \
                 node_exporter or ssh"
            ),
            format!("{r}:5: stuck.source: missing; every rule cites where its value comes from"),
        ];
        // In this order: the config's in line order, then the rules file's.
        assert_eq!(rendered, expected);
    }

    #[test]
    fn load_refuses_with_every_mistake_and_accepts_once_they_are_fixed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("rules.yaml"),
            rules_without_the_stuck_source(),
        )
        .unwrap();
        let path = dir.path().join("f.toml");
        std::fs::write(&path, GOOD.replace("name = ", "nmae = ")).unwrap();
        let errors = Config::load(&path).unwrap_err().0;
        assert_eq!(errors.len(), 2, "{errors:#?}");
        assert!(errors[0].message.contains("did you mean `name`?"));
        assert_eq!(errors[1].field, "stuck.source");

        std::fs::write(&path, GOOD).unwrap();
        std::fs::write(
            dir.path().join("rules.yaml"),
            include_str!("../../../config/rules.yaml"),
        )
        .unwrap();
        let (config, rules) = Config::load(&path).unwrap();
        assert_eq!(config.agents[0].name, "min");
        assert_eq!(rules.no_reply.seconds, fleet_rules().no_reply_s);
    }

    /// Issue 44: `rules` is optional; without it, the built-in rules. A rules file named but
    /// missing says so, and that leaving `rules` out is the way to the built-in ones.
    #[test]
    fn without_rules_the_config_runs_on_the_built_in_rules() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.toml");
        std::fs::write(&path, GOOD.replace("rules = \"rules.yaml\"\n", "")).unwrap();
        let (config, rules) = Config::load(&path).unwrap();
        assert_eq!(config.rules_path, None);
        assert_eq!(rules.origin.words(), "built in");
        assert_eq!(rules.no_reply.seconds, fleet_rules().no_reply_s);
        std::fs::write(&path, GOOD).unwrap();
        let errors = Config::load(&path).unwrap_err().to_string();
        assert!(
            errors.contains("rules.yaml: cannot read the rules file: ")
                && errors.contains(
                    "without `rules` in the config, fleetdash runs on its \
                                    built-in rules (`fleetdash rules show` prints them)"
                ),
            "{errors}"
        );
    }

    #[test]
    fn a_syntax_error_does_not_hide_the_mistakes_after_it() {
        let text = "output_dir = \"o\"\nstate_dir = \"s\"\nrules = \"r\"\n\
                    [[agents]]\nname = \"a\"\nendpoint = \"http://127.0.0.1:1\"\nlane = hub\n\
                    [[agents]]\nname = \"a\"\nendpoint = \"http://127.0.0.1:2\"\n";
        let errors = Config::parse(Path::new("f.toml"), text).unwrap_err().0;
        let rendered: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(rendered.len(), 2, "{rendered:#?}");
        assert!(rendered[0].starts_with("f.toml:7: "), "{rendered:#?}");
        assert_eq!(
            rendered[1],
            "f.toml:9: agents[1].name: duplicate agent name \"a\""
        );
    }
}

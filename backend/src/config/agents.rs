//! `[[agents]]`: the A2A peers, how the heartbeat speaks to each, and where its audit log and
//! token are, and who the collector is in that audit log. Each entry is checked here: a unique
//! name, an http(s) endpoint, a known dialect, at most one token source, an audit log on this
//! machine or on an ssh host of `[[hosts]]` (`audit_host`).

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::time::Duration;

use toml::Spanned;

use super::TokenSource;
use super::files::Expect;
use super::hosts::{HostConfig, HostSource, SshTarget};
use super::probe::peer_name;
use super::table::Table;
use super::validator::{DURATION, Validator};

/// How the heartbeat speaks to a peer (spec §7.2, reference a2a-dialects.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// v1.0: `SendMessage`, `A2A-Version: 1.0`, parts `{text}`.
    V1,
    /// v0.3: `message/send`, parts `{kind: text}`.
    V03,
    /// The Pulse plane's v0.3 variant: `message/send` with the text under `content`.
    V03Content,
    /// Try v1 then v0.3, and remember what worked.
    Auto,
}

impl Dialect {
    pub const NAMES: &'static str = "v1, v0.3, v0.3-content, auto";

    pub fn parse(s: &str) -> Option<Dialect> {
        Some(match s {
            "v1" | "v1.0" => Dialect::V1,
            "v0.3" => Dialect::V03,
            "v0.3-content" => Dialect::V03Content,
            "auto" => Dialect::Auto,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Dialect::V1 => "v1",
            Dialect::V03 => "v0.3",
            Dialect::V03Content => "v0.3-content",
            Dialect::Auto => "auto",
        }
    }
}

/// Where an agent's audit log is read: `audit_log`, on the `[[hosts]]` entry `audit_host`
/// names when that is not this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuditLog {
    /// On this machine (no `audit_host`, or a `local` one): resolved against the config's folder.
    Local(PathBuf),
    /// On an `ssh` host, read through that host's ssh source: `path` as the host sees it
    /// (absolute), `host` the entry's name.
    Ssh {
        host: String,
        target: SshTarget,
        path: String,
    },
}

#[derive(Debug, Clone)]
pub struct AgentConfig {
    pub name: String,
    pub endpoint: url::Url,
    pub dialect: Dialect,
    pub lane: Option<String>,
    pub model: Option<String>,
    pub plane: Option<String>,
    /// `None`: no `audit_log` configured.
    pub audit_log: Option<AuditLog>,
    pub token: Option<TokenSource>,
    /// The bearer token this agent reports to the intake with (`report_token_env` /
    /// `report_token_file`): its identity there. Never the token itself.
    pub report_token: Option<TokenSource>,
    /// The `peer` this agent's audit log records for the collector's own probes (the entry's
    /// `collector_peer`, else `[probe] collector_peer`): those lines are not exchanges.
    pub collector_peer: String,
    /// The agent promises a heartbeat report to the intake this often (`report_every`): a push
    /// check, judged like a cron (Healthchecks' up / late / down) on its last heartbeat report.
    pub report_every: Option<Duration>,
    /// How long past `report_every` a missing report is late before it is down
    /// (`report_grace`; default the rules' `heartbeat_reports.grace_seconds`).
    pub report_grace: Option<Duration>,
    /// `role = "hub"`: the hub agent ("one voice", spec 003): its report token may also ask
    /// the intake about the fleet (`fleet.status`, `fleet.changes`, `fleet.queue`); another
    /// agent's may not.
    pub hub: bool,
}

/// The `[[hosts]]` an `audit_host` may name: those read, and the names of every entry declared
/// (one left out for its own mistakes is not unknown: its mistakes are said already).
pub(super) struct Hosts<'h> {
    pub read: &'h [HostConfig],
    pub declared: &'h HashSet<String>,
}

/// Reads each `[[agents]]` entry; an entry with a mistake is reported and left out.
/// `collector_peer` is `[probe] collector_peer`, which an entry may override.
pub(super) fn read(
    v: &mut Validator,
    entries: Vec<Table>,
    collector_peer: &str,
    has_queue: bool,
    hosts: &Hosts,
    depends_on: &mut BTreeMap<String, Vec<String>>,
    flaky: &mut BTreeMap<String, super::Flaky>,
) -> Vec<AgentConfig> {
    let mut names = HashSet::new();
    let mut agents = Vec::new();
    for mut t in entries {
        let name = t.required_string(v, "name", "the agent's name, e.g. \"hub\"");
        let endpoint = t.required_string(
            v,
            "endpoint",
            "the agent's A2A URL, e.g. \"http://127.0.0.1:18301\"",
        );
        let dialect = t.string(v, "dialect");
        let lane = t.string(v, "lane");
        let model = t.string(v, "model");
        let plane = t.string(v, "plane");
        let audit_log = t.string(v, "audit_log");
        let audit_host = t.string(v, "audit_host");
        let token_env = t.string(v, "token_env");
        let token_file = t.string(v, "token_file");
        let report_token_env = t.string(v, "report_token_env");
        let report_token_file = t.string(v, "report_token_file");
        let own_collector_peer = peer_name(v, &mut t, "collector_peer");
        let report_every_raw = t.string_as(v, "report_every", DURATION);
        let report_grace_raw = t.string_as(v, "report_grace", DURATION);
        let role = t.string(v, "role");
        let hub = match &role {
            None => false,
            Some(r) if r.get_ref() == "hub" => true,
            Some(r) => {
                v.error(
                    r,
                    t.field("role"),
                    "expected \"hub\" (the agent that may ask fleetdash about the fleet), or no role",
                );
                false
            }
        };
        let key = name
            .as_ref()
            .map(|n| format!("agent:{}", n.get_ref().trim()));
        super::flaky::read(v, &mut t, key.clone(), flaky);
        super::alerts::depends_on(v, &mut t, key, depends_on);
        // Zero stands for "not given" (or wrong, and said so): `duration` refuses zero.
        let mut optional = |raw: &Option<Spanned<String>>, key: &str| {
            Some(v.duration(raw, &t.field(key), Duration::ZERO)).filter(|d| !d.is_zero())
        };
        let report_every = optional(&report_every_raw, "report_every");
        let report_grace = optional(&report_grace_raw, "report_grace");
        if let (Some(every), false) = (&report_every_raw, has_queue) {
            // Heartbeat reports land in the work queue: without one, the agent would be judged
            // "never reported" at every pass.
            v.error(
                every,
                t.field("report_every"),
                "heartbeat reports are read from the work queue: add [work_queue] db = \"...\"",
            );
        }
        if let (None, Some(grace)) = (&report_every_raw, &report_grace_raw) {
            v.error(
                grace,
                t.field("report_grace"),
                "needs report_every: the grace is counted past the promised period",
            );
        }

        let trimmed = name.as_ref().map(|n| n.get_ref().trim().to_string());
        if let (Some(spanned), Some(name)) = (&name, &trimmed) {
            if name.is_empty() {
                v.error(spanned, t.field("name"), "must not be empty");
            } else if !names.insert(name.clone()) {
                v.error(
                    spanned,
                    t.field("name"),
                    format!("duplicate agent name {name:?}"),
                );
            }
        }
        let endpoint = endpoint.and_then(|e| match url::Url::parse(e.get_ref()) {
            Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => Some(u),
            Ok(_) => {
                v.error(
                    &e,
                    t.field("endpoint"),
                    "expected an http:// or https:// URL with a host",
                );
                None
            }
            Err(err) => {
                v.error(
                    &e,
                    t.field("endpoint"),
                    format!("not a URL ({err}); expected e.g. \"http://127.0.0.1:18301\""),
                );
                None
            }
        });
        let dialect = match &dialect {
            None => Some(Dialect::Auto),
            Some(d) => Dialect::parse(d.get_ref()).or_else(|| {
                v.error(
                    d,
                    t.field("dialect"),
                    format!(
                        "unknown dialect {:?}; expected one of {}",
                        d.get_ref(),
                        Dialect::NAMES
                    ),
                );
                None
            }),
        };
        let token = TokenSource::choose(v, |k| t.field(k), "token", &token_env, &token_file)
            .unwrap_or(None);
        let report_token = TokenSource::choose(
            v,
            |k| t.field(k),
            "report_token",
            &report_token_env,
            &report_token_file,
        )
        .unwrap_or(None);
        let audit_log = read_audit_log(v, &t, audit_log, audit_host, hosts);
        t.finish(v);
        if let (Some(name), Some(endpoint), Some(dialect)) = (trimmed, endpoint, dialect) {
            agents.push(AgentConfig {
                name,
                endpoint,
                dialect,
                lane: lane.map(Spanned::into_inner),
                model: model.map(Spanned::into_inner),
                plane: plane.map(Spanned::into_inner),
                audit_log,
                token,
                report_token,
                collector_peer: own_collector_peer.unwrap_or_else(|| collector_peer.to_string()),
                report_every,
                report_grace,
                hub,
            });
        }
    }
    agents
}

/// `audit_log`, on the host `audit_host` names when there is one: `None` when there is no log
/// to read (none configured, or a mistake, said).
fn read_audit_log(
    v: &mut Validator,
    t: &Table,
    log: Option<Spanned<String>>,
    host: Option<Spanned<String>>,
    hosts: &Hosts,
) -> Option<AuditLog> {
    let local = |v: &mut Validator, log: &Spanned<String>| {
        AuditLog::Local(v.read_path(log, t.field("audit_log"), Expect::File))
    };
    let Some(host) = host else {
        return log.map(|log| local(v, &log));
    };
    let name = host.get_ref().trim();
    let Some(log) = log else {
        v.error(
            &host,
            t.field("audit_host"),
            "needs audit_log: the audit log's path on that host, e.g. \
             \"/home/hermes/.hermes/a2a_audit.jsonl\"",
        );
        return None;
    };
    let Some(entry) = hosts.read.iter().find(|h| h.name == name) else {
        if !hosts.declared.contains(name) {
            v.error(
                &host,
                t.field("audit_host"),
                format!(
                    "no [[hosts]] entry named {name:?}; expected the name of an ssh host (the \
                     log's machine), or no audit_host for a log on this one"
                ),
            );
        }
        return None;
    };
    match &entry.source {
        HostSource::Local => Some(local(v, &log)),
        HostSource::NodeExporter { .. } => {
            v.error(
                &host,
                t.field("audit_host"),
                format!(
                    "host {name:?} is read through node_exporter, which cannot read a file; an \
                     audit log on another machine is read over ssh: name a host whose source is \
                     ssh"
                ),
            );
            None
        }
        HostSource::Ssh(target) => {
            let path = log.get_ref();
            let why = if !path.starts_with('/') {
                "must be absolute: it is a path on that host, where neither the config's folder \
                 nor ~ means anything"
            } else if path.contains(char::is_control) {
                "must not contain control characters"
            } else {
                return Some(AuditLog::Ssh {
                    host: entry.name.clone(),
                    target: target.clone(),
                    path: path.clone(),
                });
            };
            v.error(
                &log,
                t.field("audit_log"),
                format!(
                    "{path:?} {why} (audit_host {name:?}); e.g. \
                     \"/home/hermes/.hermes/a2a_audit.jsonl\""
                ),
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::AuditLog;
    use crate::config::{Config, SshTarget};

    const HOSTS: &str = r#"output_dir = "o"
state_dir = "s"
rules = "r"
[[hosts]]
name = "LAB"
source = "ssh"
ssh = { destination = "hermes@lab", port = 2222 }
[[hosts]]
name = "laptop"
[[hosts]]
name = "exporter"
source = "node_exporter"
url = "http://127.0.0.1:9100/metrics"
"#;

    #[test]
    fn an_audit_log_is_on_this_machine_or_on_an_ssh_host() {
        let text = format!(
            r#"{HOSTS}[[agents]]
name = "remote"
endpoint = "http://127.0.0.1:18301"
audit_host = "LAB"
audit_log = "/home/hermes/.hermes/a2a_audit.jsonl"
[[agents]]
name = "local-host"
endpoint = "http://127.0.0.1:18302"
audit_host = "laptop"
audit_log = "logs/a2a_audit.jsonl"
[[agents]]
name = "no-host"
endpoint = "http://127.0.0.1:18303"
audit_log = "/var/log/a2a_audit.jsonl"
[[agents]]
name = "no-log"
endpoint = "http://127.0.0.1:18304"
"#
        );
        let c = Config::parse(Path::new("/etc/fleetdash/f.toml"), &text).unwrap();
        let logs: Vec<_> = c.agents.iter().map(|a| a.audit_log.clone()).collect();
        assert_eq!(
            logs,
            [
                Some(AuditLog::Ssh {
                    host: "LAB".into(),
                    target: SshTarget {
                        destination: "hermes@lab".into(),
                        port: Some(2222),
                        identity_file: None,
                        known_hosts: None,
                    },
                    path: "/home/hermes/.hermes/a2a_audit.jsonl".into(),
                }),
                Some(AuditLog::Local(PathBuf::from(
                    "/etc/fleetdash/logs/a2a_audit.jsonl"
                ))),
                Some(AuditLog::Local(PathBuf::from("/var/log/a2a_audit.jsonl"))),
                None,
            ]
        );
    }

    #[test]
    fn audit_host_mistakes_are_each_named_with_their_line() {
        let text = format!(
            r#"{HOSTS}[[hosts]]
name = "broken"
source = "ssh"
[[agents]]
name = "unknown-host"
endpoint = "http://127.0.0.1:1"
audit_host = "LBA"
audit_log = "/home/hermes/.hermes/a2a_audit.jsonl"
[[agents]]
name = "exporter-host"
endpoint = "http://127.0.0.1:2"
audit_host = "exporter"
audit_log = "/home/hermes/.hermes/a2a_audit.jsonl"
[[agents]]
name = "relative"
endpoint = "http://127.0.0.1:3"
audit_host = "LAB"
audit_log = "~/.hermes/a2a_audit.jsonl"
[[agents]]
name = "no-log"
endpoint = "http://127.0.0.1:4"
audit_host = "LAB"
[[agents]]
name = "on-a-broken-host"
endpoint = "http://127.0.0.1:5"
audit_host = "broken"
audit_log = "/home/hermes/.hermes/a2a_audit.jsonl"
[[agents]]
name = "control"
endpoint = "http://127.0.0.1:6"
audit_host = "LAB"
audit_log = "/home/hermes/a\nb.jsonl"
"#
        );
        let errs = Config::parse(Path::new("f.toml"), &text).unwrap_err().0;
        let rendered: Vec<String> = errs.iter().map(ToString::to_string).collect();
        let expected = [
            "f.toml:15: hosts[3].ssh: an ssh host needs ssh = { destination = \"user@host\" }"
                .to_string(),
            "f.toml:20: agents[0].audit_host: no [[hosts]] entry named \"LBA\"; expected the \
             name of an ssh host (the log's machine), or no audit_host for a log on this one"
                .to_string(),
            "f.toml:25: agents[1].audit_host: host \"exporter\" is read through node_exporter, \
             which cannot read a file; an audit log on another machine is read over ssh: name a \
             host whose source is ssh"
                .to_string(),
            "f.toml:31: agents[2].audit_log: \"~/.hermes/a2a_audit.jsonl\" must be absolute: it \
             is a path on that host, where neither the config's folder nor ~ means anything \
             (audit_host \"LAB\"); e.g. \"/home/hermes/.hermes/a2a_audit.jsonl\""
                .to_string(),
            "f.toml:35: agents[3].audit_host: needs audit_log: the audit log's path on that \
             host, e.g. \"/home/hermes/.hermes/a2a_audit.jsonl\""
                .to_string(),
            // The agent on the broken host: that host's own mistake is said, nothing more.
            "f.toml:45: agents[5].audit_log: \"/home/hermes/a\\nb.jsonl\" must not contain \
             control characters"
                .to_string(),
        ];
        assert_eq!(rendered.len(), expected.len(), "{rendered:#?}");
        for (got, want) in rendered.iter().zip(&expected) {
            assert!(got.starts_with(want.as_str()), "{got:?}\nwanted {want:?}");
        }
    }
}

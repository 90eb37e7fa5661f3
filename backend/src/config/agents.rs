//! `[[agents]]`: the A2A peers, how the heartbeat speaks to each, and where its audit log and
//! token are, and who the collector is in that audit log. Each entry is checked here: a unique
//! name, an http(s) endpoint, a known dialect, at most one token source.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::time::Duration;

use toml::Spanned;

use super::TokenSource;
use super::files::Expect;
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

#[derive(Debug, Clone)]
pub struct AgentConfig {
    pub name: String,
    pub endpoint: url::Url,
    pub dialect: Dialect,
    pub lane: Option<String>,
    pub model: Option<String>,
    pub plane: Option<String>,
    pub audit_log: Option<PathBuf>,
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

/// Reads each `[[agents]]` entry; an entry with a mistake is reported and left out.
/// `collector_peer` is `[probe] collector_peer`, which an entry may override.
pub(super) fn read(
    v: &mut Validator,
    entries: Vec<Table>,
    collector_peer: &str,
    has_queue: bool,
    depends_on: &mut BTreeMap<String, Vec<String>>,
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
        let audit_log = audit_log.map(|p| v.read_path(&p, t.field("audit_log"), Expect::File));
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

//! The bounded dimensions (seed 000: "Metrics MUST use bounded dimensions"): every label a
//! series may carry, and where its values come from. Names come from the config (this hub's
//! name, an agent, host, check, board, backup or channel the registry declares) or from a
//! closed list written here (sections, bands, ASC names, report kinds, queue states); a value
//! found only in status.json or a request is never a label. Task ids, URLs, titles, message
//! text and user names are never one.

use std::collections::{BTreeMap, BTreeSet};

use fleetdash_model::{Asc, Band};

use crate::config::Config;

/// Every label name a series may carry.
pub const LABELS: &[&str] = &[
    "hub", "agent", "host", "check", "kind", "board", "backup", "section", "channel", "asc",
    "band", "state",
];

/// The bands, in the order their one-hot series are written.
pub const BANDS: [Band; 3] = [Band::Green, Band::Amber, Band::Red];

pub fn band(b: Band) -> &'static str {
    b.class()
}

/// ASC names a label may hold: the model's, and those the intake names. Anything else (a name
/// read from a file, another program's code) is `OTHER`.
pub const ASC_NAMES: &[&str] = &[
    "ACCEPTED",
    "RUNNING",
    "SUCCESS",
    "SUCCESS_WITH_WARNINGS",
    "HUMAN_INPUT_REQUIRED",
    "AUTHENTICATION_REQUIRED",
    "CANCELLED",
    "INVALID_REQUEST",
    "FAILED_PRECONDITION",
    "PERMISSION_DENIED",
    "GUARDRAIL_BLOCKED",
    "NOT_FOUND",
    "UNSUPPORTED_CAPABILITY",
    "RETRYABLE_ERROR",
    "RATE_LIMITED",
    "RESOURCE_EXHAUSTED",
    "DEPENDENCY_UNAVAILABLE",
    "TIMEOUT",
    "ABORTED_CONCURRENCY",
    "INTERNAL_ERROR",
    "INTEGRITY_CHECK_FAILED",
    "OTHER",
];

pub fn asc(a: &Asc) -> &'static str {
    ASC_NAMES
        .iter()
        .find(|n| **n == a.name)
        .copied()
        .unwrap_or("OTHER")
}

/// The kinds of report the intake counts; `unread` for a request refused before its report
/// was read (its token, size, type or rate).
pub const REPORT_KINDS: &[&str] = &[
    "heartbeat",
    "completion",
    "blocker",
    "ack",
    "assign",
    "unread",
];

/// The kinds of a host's checks.
pub const CHECK_KINDS: &[&str] = &["service", "tunnel", "cron", "vault"];

/// The kinds of a jump of this host's clock.
pub const JUMP_KINDS: &[&str] = &["forward", "backward", "asleep"];

/// Every value of the `state` label.
pub const QUEUE_STATES: &[&str] = &[
    "submitted",
    "working",
    "input-required",
    "completed",
    "failed",
    "canceled",
    "rejected",
    "auth-required",
    "unreadable",
    "retired",
    "dismissed",
];

/// A work-queue task's state as a label: the A2A state (v0.3's spelling), `unreadable` for a
/// row the hub cannot read, `retired` and `dismissed` for those status.json leaves out.
pub fn queue_state(wire: &str) -> &'static str {
    use crate::queue::WireState;
    match WireState::parse(wire) {
        Some(WireState::Submitted) => "submitted",
        Some(WireState::Working) => "working",
        Some(WireState::InputRequired) => "input-required",
        Some(WireState::Completed) => "completed",
        Some(WireState::Failed) => "failed",
        Some(WireState::Canceled) => "canceled",
        Some(WireState::Rejected) => "rejected",
        Some(WireState::AuthRequired) => "auth-required",
        None => "unreadable",
    }
}

/// A host's declared checks, by kind.
#[derive(Debug, Default, Clone)]
pub struct HostNames {
    pub services: Vec<String>,
    pub tunnels: Vec<String>,
    pub crons: Vec<String>,
    pub vault: bool,
}

/// The names the config declares: the only values the name labels take.
#[derive(Debug, Default, Clone)]
pub struct Names {
    /// The config's `hub`: the one value of `fleetdash_hub_info`'s label (empty: no such series).
    pub hub: String,
    pub agents: BTreeSet<String>,
    pub hosts: BTreeMap<String, HostNames>,
    pub boards: BTreeSet<String>,
    pub backup: Option<String>,
    pub channels: BTreeSet<String>,
}

impl Names {
    pub fn of(config: &Config) -> Names {
        Names {
            hub: config.hub.clone(),
            agents: config.agents.iter().map(|a| a.name.clone()).collect(),
            hosts: config
                .hosts
                .iter()
                .map(|h| {
                    let names = HostNames {
                        services: h.services.clone(),
                        tunnels: h.tunnels.iter().map(|t| t.name.clone()).collect(),
                        crons: h.crons.iter().map(|c| c.name.clone()).collect(),
                        vault: h.vault.is_some(),
                    };
                    (h.name.clone(), names)
                })
                .collect(),
            boards: config.boards.iter().map(|b| b.name.clone()).collect(),
            backup: config.backups.as_ref().map(|b| backup_name(&b.name)),
            channels: config
                .alerts
                .channels
                .iter()
                .map(|c| c.name.clone())
                .collect(),
        }
    }

    /// Whether `value` may be a value of the label `label` (the test's check of every series).
    pub fn allows(&self, label: &str, value: &str) -> bool {
        let in_list = |list: &[&str]| list.contains(&value);
        match label {
            "hub" => !self.hub.is_empty() && self.hub == value,
            "agent" => self.agents.contains(value),
            "host" => self.hosts.contains_key(value),
            "check" => self.hosts.values().any(|h| {
                h.services
                    .iter()
                    .chain(&h.tunnels)
                    .chain(&h.crons)
                    .any(|n| n == value)
                    || (h.vault && value == "vault")
            }),
            "board" => self.boards.contains(value),
            "backup" => self.backup.as_deref() == Some(value),
            "channel" => self.channels.contains(value),
            "kind" => in_list(REPORT_KINDS) || in_list(CHECK_KINDS) || in_list(JUMP_KINDS),
            "section" => crate::collect::SectionName::PARTS
                .iter()
                .any(|s| s.as_str() == value),
            "asc" => in_list(ASC_NAMES),
            "band" => BANDS.iter().any(|b| band(*b) == value),
            "state" => in_list(QUEUE_STATES),
            _ => false,
        }
    }
}

/// The backup's name as status.json says it (an unnamed one is `backups`).
pub fn backup_name(name: &str) -> String {
    if name.is_empty() {
        "backups".into()
    } else {
        name.to_string()
    }
}

//! `[probe]`: the limits of one probe. The fleet is small, but a hostile or hung peer must
//! cost little, so every limit is positive.

use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use super::defaults;
use super::validator::Validator;

/// Limits of one probe: the fleet is small, but a hostile or hung peer must cost little.
#[derive(Debug, Clone)]
pub struct ProbeLimits {
    pub timeout: Duration,
    pub concurrency: usize,
    pub max_response_bytes: usize,
    /// At most this many bytes are read from the end of an audit log per agent.
    pub audit_tail_max_bytes: u64,
    /// Deadline of each command a host probe runs (ssh, git, systemctl).
    pub command_timeout: Duration,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawProbe {
    timeout: Option<Spanned<String>>,
    concurrency: Option<Spanned<i64>>,
    max_response_bytes: Option<Spanned<i64>>,
    audit_tail_max_bytes: Option<Spanned<i64>>,
    command_timeout: Option<Spanned<String>>,
}

pub(super) fn validate(v: &mut Validator, raw: &RawProbe) -> ProbeLimits {
    ProbeLimits {
        timeout: v.duration(&raw.timeout, "probe.timeout", defaults::PROBE_TIMEOUT),
        concurrency: v.positive(&raw.concurrency, "probe.concurrency", defaults::CONCURRENCY),
        max_response_bytes: v.positive(
            &raw.max_response_bytes,
            "probe.max_response_bytes",
            defaults::MAX_RESPONSE_BYTES,
        ),
        audit_tail_max_bytes: v.positive(
            &raw.audit_tail_max_bytes,
            "probe.audit_tail_max_bytes",
            defaults::AUDIT_TAIL_MAX_BYTES as usize,
        ) as u64,
        command_timeout: v.duration(
            &raw.command_timeout,
            "probe.command_timeout",
            defaults::COMMAND_TIMEOUT,
        ),
    }
}

//! `[probe]`: the limits of one probe. The fleet is small, but a hostile or hung peer must
//! cost little, so every limit is positive.

use std::time::Duration;

use super::defaults;
use super::table::Table;
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

/// Reads `[probe]`, each limit its default when not written.
pub(super) fn read(v: &mut Validator, mut t: Table) -> ProbeLimits {
    let limits = ProbeLimits {
        timeout: t.duration(v, "timeout", defaults::PROBE_TIMEOUT),
        concurrency: t.positive(v, "concurrency", defaults::CONCURRENCY),
        max_response_bytes: t.positive(v, "max_response_bytes", defaults::MAX_RESPONSE_BYTES),
        audit_tail_max_bytes: t.positive(
            v,
            "audit_tail_max_bytes",
            defaults::AUDIT_TAIL_MAX_BYTES as usize,
        ) as u64,
        command_timeout: t.duration(v, "command_timeout", defaults::COMMAND_TIMEOUT),
    };
    t.finish(v);
    limits
}

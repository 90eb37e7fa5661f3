//! `[probe]`: the limits of one probe, and who the collector is to the agents it probes. The
//! fleet is small, but a hostile or hung peer must cost little, so every limit is positive.

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

/// Reads `[probe]`, each limit its default when not written, and `collector_peer` (the
/// collector's identity in the agents' audit logs), "fleetdash" when not written.
pub(super) fn read(v: &mut Validator, mut t: Table) -> (ProbeLimits, String) {
    let collector_peer = peer_name(v, &mut t, "collector_peer")
        .unwrap_or_else(|| defaults::COLLECTOR_PEER.to_string());
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
    (limits, collector_peer)
}

/// A peer name as the audit log records it (`collector_peer`, here or in an `[[agents]]`
/// entry): any non-blank text, matched exactly; a blank one is reported and left out.
pub(super) fn peer_name(v: &mut Validator, t: &mut Table, key: &'static str) -> Option<String> {
    let raw = t.string(v, key)?;
    if raw.get_ref().trim().is_empty() {
        v.error(
            &raw,
            t.field(key),
            format!(
                "must not be empty; expected the collector's identity in the agents' audit \
                 logs (their `peer` field), e.g. \"{}\"",
                defaults::COLLECTOR_PEER
            ),
        );
        return None;
    }
    Some(raw.into_inner())
}

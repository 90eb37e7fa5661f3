//! `[intake]`: the A2A server agents report to (`crate::intake`). Off unless `listen` is set;
//! each limit has a named default.

use std::net::SocketAddr;
use std::time::Duration;

use super::defaults;
use super::table::Table;
use super::validator::Validator;

#[derive(Debug, Clone)]
pub struct IntakeConfig {
    /// Where the intake listens (loopback: agents reach it over the tunnels, not via nginx);
    /// `None` leaves it off.
    pub listen: Option<SocketAddr>,
    /// A request body larger than this is refused (413) before it is read.
    pub max_body_bytes: usize,
    /// Requests per agent per minute (a token bucket that holds this many); past it, 429.
    pub rate_per_minute: usize,
    /// A body not received within this is cut (408): a slow sender holds nothing for long.
    pub body_timeout: Duration,
}

impl Default for IntakeConfig {
    fn default() -> Self {
        IntakeConfig {
            listen: None,
            max_body_bytes: defaults::INTAKE_MAX_BODY_BYTES,
            rate_per_minute: defaults::INTAKE_RATE_PER_MINUTE,
            body_timeout: defaults::INTAKE_BODY_TIMEOUT,
        }
    }
}

/// Reads `[intake]`; every key is optional.
pub(super) fn read(v: &mut Validator, mut t: Table) -> IntakeConfig {
    let listen = t.string(v, "listen");
    let config = IntakeConfig {
        listen: None,
        max_body_bytes: t.positive(v, "max_body_bytes", defaults::INTAKE_MAX_BODY_BYTES),
        rate_per_minute: t.positive(v, "rate_per_minute", defaults::INTAKE_RATE_PER_MINUTE),
        body_timeout: t.duration(v, "body_timeout", defaults::INTAKE_BODY_TIMEOUT),
    };
    t.finish(v);
    let listen = listen.and_then(|l| {
        l.get_ref().parse().ok().or_else(|| {
            v.error(
                &l,
                t.field("listen"),
                "expected an address such as \"127.0.0.1:8470\"",
            );
            None
        })
    });
    IntakeConfig { listen, ..config }
}

//! `[metrics]`: the optional loopback listener of `fleetdash run` that serves `/metrics`
//! without auth (docs/metrics.md). Loopback only: anything there is readable by whoever can
//! reach the address, so an address other hosts reach is refused; Prometheus on another host
//! scrapes the intake's `/metrics` with the operator's token, or `fleetdash serve`'s.

use std::net::SocketAddr;

use super::table::Table;
use super::validator::Validator;

#[derive(Debug, Clone, Default)]
pub struct MetricsConfig {
    /// Where `fleetdash run` serves `/metrics` without auth; always a loopback address.
    pub listen: Option<SocketAddr>,
}

/// Reads `[metrics]`; every key is optional.
pub(super) fn read(v: &mut Validator, mut t: Table) -> MetricsConfig {
    let listen = t.string(v, "listen");
    t.finish(v);
    let listen = listen.and_then(|l| {
        let Ok(addr) = l.get_ref().parse::<SocketAddr>() else {
            v.error(
                &l,
                t.field("listen"),
                "expected an address such as \"127.0.0.1:9478\"",
            );
            return None;
        };
        if !addr.ip().is_loopback() {
            v.error(
                &l,
                t.field("listen"),
                format!(
                    "{addr} is not a loopback address: this listener has no auth, so it only \
                     listens on 127.0.0.1 or [::1]; a Prometheus on another host scrapes \
                     `fleetdash serve`'s /metrics (basic auth) or the intake's (the operator's \
                     token)"
                ),
            );
            return None;
        }
        Some(addr)
    });
    MetricsConfig { listen }
}

#[cfg(test)]
mod tests {
    use crate::config::fixtures::{errors, parse};

    #[test]
    fn the_listener_is_off_unless_set_and_takes_loopback_addresses() {
        assert_eq!(parse("").unwrap().metrics.listen, None);
        let c = parse("[metrics]\nlisten = \"127.0.0.1:9478\"\n").unwrap();
        assert_eq!(c.metrics.listen, Some("127.0.0.1:9478".parse().unwrap()));
        let c = parse("[metrics]\nlisten = \"[::1]:9478\"\n").unwrap();
        assert_eq!(c.metrics.listen, Some("[::1]:9478".parse().unwrap()));
    }

    #[test]
    fn a_listener_other_hosts_reach_is_refused_with_file_and_line() {
        for addr in ["0.0.0.0:9478", "192.0.2.7:9478", "[::]:9478"] {
            let e = errors(&format!("[metrics]\nlisten = \"{addr}\"\n"));
            assert_eq!(e.len(), 1, "{e:?}");
            assert!(
                e[0].contains("/etc/f.toml:5")
                    && e[0].contains("metrics.listen")
                    && e[0].contains("not a loopback address"),
                "{e:?}"
            );
        }
        let e = errors("[metrics]\nlisten = \"localhost\"\nlisen = 1\n");
        assert!(
            e.iter()
                .any(|e| e.contains("metrics.listen") && e.contains("127.0.0.1:9478")),
            "{e:?}"
        );
        assert!(e.iter().any(|e| e.contains("lisen")), "{e:?}");
    }
}

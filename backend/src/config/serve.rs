//! `[serve]`: how `fleetdash serve` runs when nginx is not in front of it, and the one rule of
//! where it may listen: basic auth over plain HTTP stays on loopback unless the operator says
//! otherwise (issue 32).

use std::net::SocketAddr;
use std::path::PathBuf;

use super::files::Expect;
use super::table::Table;
use super::validator::Validator;

/// `[serve]`: how `fleetdash serve` runs when nginx is not in front.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub listen: Option<SocketAddr>,
    /// The htpasswd file (bcrypt entries, `htpasswd -B`) that guards every path.
    pub htpasswd: Option<PathBuf>,
    /// A built page (scripts/build-frontend's `frontend/dist`, or `fleetdash page export`'s
    /// folder) served instead of the one built into the binary.
    pub dist_dir: Option<PathBuf>,
    /// HTTPS: the certificate chain (PEM, the server's first) and its private key (PEM), both
    /// or neither; reread at SIGHUP.
    pub tls: Option<TlsFiles>,
    /// The operator's word that plain HTTP off loopback is meant (a network trusted as a
    /// whole, a TLS proxy on another host): without it such a listen is refused.
    pub plain_http_on_network: bool,
}

/// `[serve] tls_cert` and `tls_key`.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// Why serving plain HTTP on `listen` is refused, or `None` when it is not: a loopback address
/// is fine, TLS is fine, and so is the operator's explicit `plain_http_on_network = true`.
pub fn plain_http_refusal(
    listen: SocketAddr,
    tls: bool,
    plain_http_on_network: bool,
) -> Option<String> {
    if tls || plain_http_on_network || listen.ip().to_canonical().is_loopback() {
        return None;
    }
    Some(format!(
        "{listen} is reachable from the network, and without TLS basic auth would cross it in \
         the clear: set tls_cert and tls_key (docs/install.md, \"HTTPS from fleetdash serve\"), \
         or listen on 127.0.0.1 and reach it through an SSH tunnel, or, only on a network you \
         trust as a whole, set plain_http_on_network = true"
    ))
}

const BOTH_OR_NEITHER: &str =
    "not set, but the other of tls_cert and tls_key is: HTTPS needs the certificate and its key";

/// Reads `[serve]`; every key is optional.
pub(super) fn read(v: &mut Validator, mut t: Table) -> ServeConfig {
    let listen = t.string(v, "listen");
    let htpasswd = t.string(v, "htpasswd");
    let dist_dir = t.string(v, "dist_dir");
    let tls_cert = t.string(v, "tls_cert");
    let tls_key = t.string(v, "tls_key");
    let plain_http_on_network = t.boolean(v, "plain_http_on_network").unwrap_or(false);
    t.finish(v);
    let tls = match (tls_cert, tls_key) {
        (Some(cert), Some(key)) => Some(TlsFiles {
            cert: v.read_path(&cert, t.field("tls_cert"), Expect::File),
            key: v.read_path(&key, t.field("tls_key"), Expect::File),
        }),
        (Some(cert), None) => {
            v.error(&cert, t.field("tls_key"), BOTH_OR_NEITHER);
            None
        }
        (None, Some(key)) => {
            v.error(&key, t.field("tls_cert"), BOTH_OR_NEITHER);
            None
        }
        (None, None) => None,
    };
    let listen = listen.and_then(|l| {
        let Ok(addr) = l.get_ref().parse::<SocketAddr>() else {
            v.error(
                &l,
                t.field("listen"),
                "expected an address such as \"127.0.0.1:8080\"",
            );
            return None;
        };
        if let Some(why) = plain_http_refusal(addr, tls.is_some(), plain_http_on_network) {
            v.error(&l, t.field("listen"), why);
        }
        Some(addr)
    });
    ServeConfig {
        listen,
        htpasswd: htpasswd.map(|p| v.read_path(&p, t.field("htpasswd"), Expect::File)),
        dist_dir: dist_dir.map(|p| v.read_path(&p, t.field("dist_dir"), Expect::Folder)),
        tls,
        plain_http_on_network,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_http_is_refused_off_loopback_unless_tls_or_said() {
        for listen in [
            "127.0.0.1:8080",
            "127.9.9.9:80",
            "[::1]:8080",
            "[::ffff:127.0.0.1]:80",
        ] {
            let listen: SocketAddr = listen.parse().unwrap();
            assert_eq!(plain_http_refusal(listen, false, false), None, "{listen}");
        }
        for listen in [
            "0.0.0.0:8080",
            "192.168.1.20:8080",
            "[::]:8080",
            "[fe80::1]:80",
        ] {
            let listen: SocketAddr = listen.parse().unwrap();
            let why = plain_http_refusal(listen, false, false).expect("refused");
            assert!(
                why.contains("tls_cert") && why.contains("plain_http_on_network"),
                "{why}"
            );
            assert_eq!(
                plain_http_refusal(listen, true, false),
                None,
                "{listen} with TLS"
            );
            assert_eq!(
                plain_http_refusal(listen, false, true),
                None,
                "{listen} said"
            );
        }
    }
}

//! `[serve]`: how `fleetdash serve` runs when nginx is not in front of it.

use std::path::PathBuf;

use serde::Deserialize;
use toml::Spanned;

use super::validator::Validator;

/// `[serve]`: how `fleetdash serve` runs when nginx is not in front.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub listen: Option<std::net::SocketAddr>,
    /// The htpasswd file (bcrypt entries, `htpasswd -B`) that guards every path.
    pub htpasswd: Option<PathBuf>,
    /// The built page (trunk's `dist/`); without it a minimal built-in page is served.
    pub dist_dir: Option<PathBuf>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawServe {
    listen: Option<Spanned<String>>,
    htpasswd: Option<String>,
    dist_dir: Option<String>,
}

pub(super) fn validate(v: &mut Validator, raw: &RawServe) -> ServeConfig {
    let listen = raw.listen.as_ref().and_then(|l| {
        l.get_ref().parse().ok().or_else(|| {
            v.error(
                l,
                "serve.listen",
                "expected an address such as \"127.0.0.1:8080\"",
            );
            None
        })
    });
    ServeConfig {
        listen,
        htpasswd: raw.htpasswd.as_deref().map(|p| v.path(p)),
        dist_dir: raw.dist_dir.as_deref().map(|p| v.path(p)),
    }
}

//! `[serve]`: how `fleetdash serve` runs when nginx is not in front of it.

use std::path::PathBuf;

use super::files::Expect;
use super::table::Table;
use super::validator::Validator;

/// `[serve]`: how `fleetdash serve` runs when nginx is not in front.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub listen: Option<std::net::SocketAddr>,
    /// The htpasswd file (bcrypt entries, `htpasswd -B`) that guards every path.
    pub htpasswd: Option<PathBuf>,
    /// A built page (scripts/build-frontend's `frontend/dist`, or `fleetdash page export`'s
    /// folder) served instead of the one built into the binary.
    pub dist_dir: Option<PathBuf>,
}

/// Reads `[serve]`; every key is optional.
pub(super) fn read(v: &mut Validator, mut t: Table) -> ServeConfig {
    let listen = t.string(v, "listen");
    let htpasswd = t.string(v, "htpasswd");
    let dist_dir = t.string(v, "dist_dir");
    t.finish(v);
    let listen = listen.and_then(|l| {
        l.get_ref().parse().ok().or_else(|| {
            v.error(
                &l,
                t.field("listen"),
                "expected an address such as \"127.0.0.1:8080\"",
            );
            None
        })
    });
    ServeConfig {
        listen,
        htpasswd: htpasswd.map(|p| v.read_path(&p, t.field("htpasswd"), Expect::File)),
        dist_dir: dist_dir.map(|p| v.read_path(&p, t.field("dist_dir"), Expect::Folder)),
    }
}

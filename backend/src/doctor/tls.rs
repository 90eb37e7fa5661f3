//! The check of `fleetdash serve`'s HTTPS (`[serve] tls_cert`, `tls_key`; issue 32): the pair
//! loads as serve would load it, the service's user can read both, and the key is readable by
//! no one else (whoever reads it can pose as this server). Plain HTTP off loopback is the
//! config's own error, said by the config check.

use std::path::Path;

use fleetdash_model::Asc;

use super::Finding;
use super::access::{self, User, Want};
use crate::config::Config;

pub fn files(config: &Config, user: Option<&User>) -> Vec<Finding> {
    let Some(tls) = &config.serve.tls else {
        return vec![Finding::ok(
            "tls",
            "serve.tls_cert",
            "not set: fleetdash serve speaks plain HTTP, on loopback (or where \
             plain_http_on_network says the network is trusted)",
        )];
    };
    if let Some(reader) = user {
        for (field, path) in [("serve.tls_cert", &tls.cert), ("serve.tls_key", &tls.key)] {
            if let Err(why) = access::can(reader, path, Want::Read) {
                let shown = path.display().to_string();
                return vec![Finding::fail(
                    "tls",
                    shown.clone(),
                    format!("{field}: {why}"),
                    format!("chgrp {} {shown} && chmod g+r {shown}", reader.name),
                    Asc::PERMISSION_DENIED,
                )];
            }
        }
    }
    if let Some(found) = key_exposed(&tls.key) {
        return vec![found];
    }
    match crate::server::tls::load(&tls.cert, &tls.key) {
        Ok(_) => vec![Finding::ok(
            "tls",
            tls.cert.display().to_string(),
            format!(
                "fleetdash serve speaks HTTPS with it; its key {} is readable by no other user",
                tls.key.display()
            ),
        )],
        Err(e) => vec![Finding::fail(
            "tls",
            format!("serve.{}", e.key),
            e.message,
            "give a PEM certificate chain and its own private key, then `systemctl reload \
             fleetdash-serve` (docs/install.md, \"HTTPS from fleetdash serve\")",
            Asc::FAILED_PRECONDITION,
        )],
    }
}

/// A fail when every user of this host may read the private key.
fn key_exposed(key: &Path) -> Option<Finding> {
    let (_, others) = access::shared_bits(key).ok()?;
    if others & 4 == 0 {
        return None;
    }
    let shown = key.display().to_string();
    Some(Finding::fail(
        "tls",
        shown.clone(),
        "serve.tls_key: readable by every user of this host: any of them can pose as this server",
        format!("chmod 0640 {shown}, its group fleetdash"),
        Asc::PERMISSION_DENIED,
    ))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;
    use crate::doctor::{Level, loaded};

    fn pair() -> (String, String) {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        (cert.pem(), key.serialize_pem())
    }

    #[test]
    fn a_key_others_can_read_fails_a_foreign_key_fails_and_a_good_pair_passes() {
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = pair();
        let (_, foreign_key) = pair();
        std::fs::write(dir.path().join("cert.pem"), cert).unwrap();
        std::fs::write(dir.path().join("key.pem"), key).unwrap();
        std::fs::write(dir.path().join("foreign.pem"), foreign_key).unwrap();
        for name in ["key.pem", "foreign.pem"] {
            let path = dir.path().join(name);
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        }
        let (config, _) = loaded(
            dir.path(),
            "[serve]\ntls_cert = \"cert.pem\"\ntls_key = \"key.pem\"\n",
        );
        let good = files(&config, None);
        assert_eq!(good[0].level, Level::Ok, "{good:?}");

        std::fs::set_permissions(
            dir.path().join("key.pem"),
            std::fs::Permissions::from_mode(0o644),
        )
        .unwrap();
        let open = files(&config, None);
        assert_eq!(open[0].level, Level::Fail, "{open:?}");
        assert!(open[0].fix.as_deref().unwrap().contains("chmod 0640"));

        let (config, _) = loaded(
            dir.path(),
            "[serve]\ntls_cert = \"cert.pem\"\ntls_key = \"foreign.pem\"\n",
        );
        let foreign = files(&config, None);
        assert_eq!(foreign[0].level, Level::Fail, "{foreign:?}");
        assert_eq!(foreign[0].subject, "serve.tls_key", "{foreign:?}");
        assert!(foreign[0].detail.contains("foreign.pem"), "{foreign:?}");
    }

    #[test]
    fn without_tls_there_is_nothing_to_check() {
        let dir = tempfile::tempdir().unwrap();
        let (config, _) = loaded(dir.path(), "");
        assert_eq!(files(&config, None)[0].level, Level::Ok);
    }
}

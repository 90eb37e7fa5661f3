//! Each vault on this host (`[[hosts]] vault = { path, remote, branch }` of a `local` host)
//! asked the collector's own read-only git questions: a configured remote the checkout lacks
//! fails with both ways out (before issue 44 it was a red "vault out of sync" at the first
//! pass); no remote configured and no `origin` is a vault watched alone, said ok. A vault on an
//! ssh host is the collector's to read: the doctor logs in nowhere.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use fleetdash_model::Asc;

use super::Finding;
use crate::collect::systems::command::LocalRunner;
use crate::collect::systems::vault::parity;
use crate::config::{Config, HostSource};

pub async fn checks(config: &Config) -> Vec<Finding> {
    let runner = LocalRunner {
        timeout: config.probe.command_timeout,
    };
    let me = rustix::process::geteuid().as_raw();
    let mut out = Vec::new();
    for host in &config.hosts {
        let Some(vault) = &host.vault else { continue };
        let subject = format!("host {} vault {}", host.name, vault.path);
        if !matches!(host.source, HostSource::Local) {
            out.push(Finding::ok(
                "vault",
                subject,
                "on a remote host: read by the collector over ssh (`fleetdash collect` shows it)",
            ));
            continue;
        }
        // Git refuses a checkout of another user ("dubious ownership"): as root for the
        // service's user, that would be the doctor's trouble, not the installation's.
        if let Ok(owner) = std::fs::metadata(Path::new(&vault.path)).map(|m| m.uid())
            && owner != me
        {
            out.push(Finding::ok(
                "vault",
                subject,
                format!(
                    "not asked: the checkout belongs to uid {owner}, not to the user running \
                     the doctor (git would refuse it); run the doctor as its owner to check its \
                     remote"
                ),
            ));
            continue;
        }
        out.push(match parity(&runner, vault).await {
            Ok(p) => match &p.compared {
                Some(c) => Finding::ok(
                    "vault",
                    subject,
                    format!("compared with {}/{}: {}", c.remote, c.branch, p.describe()),
                ),
                None => Finding::ok(
                    "vault",
                    subject,
                    format!(
                        "watched alone (no remote configured, no origin in the checkout): {}",
                        p.describe()
                    ),
                ),
            },
            Err(f) if f.reason.starts_with("no remote '") => {
                let name = vault.remote.as_deref().unwrap_or("origin");
                Finding::fail(
                    "vault",
                    subject,
                    format!(
                        "remote = \"{name}\", but the checkout has no remote '{name}': the page \
                         would say \"no remote '{name}' to compare with\", red"
                    ),
                    format!(
                        "add it: git -C {} remote add {name} URL; or remove `remote` from the \
                         host's vault to watch the checkout alone (HEAD, uncommitted changes)",
                        vault.path
                    ),
                    Asc::FAILED_PRECONDITION,
                )
            }
            Err(f) => Finding::fail(
                "vault",
                subject,
                f.reason,
                "vault.path must be a git checkout the service's user may read, and its remote \
                 reachable from here (try the git command as that user)",
                f.asc,
            ),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::*;
    use crate::doctor::{Level, loaded};

    fn git(dir: &Path, args: &[&str]) {
        let ok = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(["-c", "user.name=t", "-c", "user.email=t@t.invalid"])
            .args(["-c", "commit.gpgsign=false"])
            .args(args)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    }

    #[tokio::test]
    async fn a_configured_remote_the_checkout_lacks_fails_and_none_is_watched_alone() {
        let dir = tempfile::tempdir().unwrap();
        let vault = dir.path().join("vault");
        std::fs::create_dir(&vault).unwrap();
        git(&vault, &["init", "-q"]);
        std::fs::write(vault.join("note.md"), "x\n").unwrap();
        git(&vault, &["add", "note.md"]);
        git(&vault, &["commit", "-q", "-m", "first"]);
        let host = |remote: &str| {
            format!(
                "[[hosts]]\nname = \"laptop\"\nsource = \"local\"\n\
                 vault = {{ path = \"{}\"{remote} }}\n",
                vault.display()
            )
        };
        let (config, _) = loaded(dir.path(), &host(", remote = \"origin\""));
        let found = checks(&config).await;
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].check, found[0].level), ("vault", Level::Fail));
        assert!(found[0].detail.contains("no remote 'origin'"), "{found:?}");
        let fix = found[0].fix.as_deref().unwrap();
        assert!(
            fix.contains("remote add origin") && fix.contains("alone"),
            "{fix}"
        );

        let (config, _) = loaded(dir.path(), &host(""));
        let found = checks(&config).await;
        assert_eq!(found[0].level, Level::Ok, "{found:?}");
        assert!(found[0].detail.contains("watched alone"), "{found:?}");
    }
}

//! `fleetdash doctor --config FILE`: what a new installation gets wrong, each finding with its
//! fix. Read-only: it opens nothing for writing, creates nothing, and asks the agents only for
//! their cards (a GET any client may make).
//!
//! The checks, each in a room of its own:
//! - [`access`]: who the service runs as, and what that user may read and write (the
//!   permission bits, as the kernel would judge them, without becoming the user);
//! - [`local`]: the config and rules, the folders, what nginx could serve, the htpasswd, the
//!   token files and the boards (the Hermes WAL hazard);
//! - [`reach`]: the agents and hosts over the network, and the clock against the agents' `Date`;
//! - [`cards`]: each agent's card against its entry: the `dialect` it contradicts, no skills;
//! - [`audit`]: agents whose last exchange nothing watches (a note, never a warning);
//! - [`vault`]: each vault on this host against its remote (a configured one it lacks);
//! - [`channels`]: each alert channel answers, asked so that nothing reaches the phone;
//! - [`nginx`]: the nginx site against the config, and `nginx -t` where nginx is installed;
//! - [`tls`]: `fleetdash serve`'s certificate and key: they load, the key is the service's alone;
//! - [`declared`]: an element declared flaky is said as declared, a lapsed declaration warns.
//! - [`certs`]: serve's certificate and each https peer's, by their dates (expired, not yet
//!   valid, inside the rules' renewal window), and whether a peer's verifies.
//! - [`report`]: when the report of the night goes and where; the last one due not sent.
//!
//! Each finding is ok, warn or fail with an ASC status; the command's outcome is the worst.

pub mod access;
pub mod audit;
pub mod cards;
pub mod certs;
pub mod channels;
pub mod declared;
pub mod local;
pub mod nginx;
pub mod reach;
pub mod report;
pub mod tls;
pub mod vault;

use std::path::{Path, PathBuf};

use fleetdash_model::Asc;
use serde::Serialize;

use crate::config;

/// How bad a finding is; the order is the severity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Ok,
    Warn,
    Fail,
}

impl Level {
    pub fn word(self) -> &'static str {
        match self {
            Level::Ok => "ok",
            Level::Warn => "warn",
            Level::Fail => "fail",
        }
    }
}

/// One thing checked and what was found.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// The check's name: `config`, `folders`, `exposure`, `htpasswd`, `tokens`, `boards`,
    /// `agents`, `dialect`, `skills`, `audit`, `vault`, `channels`, `hosts`, `clock`, `nginx`,
    /// `tls`, `certificates`, `user`, `flaky`.
    pub check: &'static str,
    pub level: Level,
    /// What was looked at: a path, an agent's name, a field.
    pub subject: String,
    /// What was found.
    pub detail: String,
    /// What to do about it (absent when it is ok).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
    /// ASC's class of the finding.
    pub status: Asc,
}

impl Finding {
    pub fn ok(check: &'static str, subject: impl Into<String>, detail: impl Into<String>) -> Self {
        Finding {
            check,
            level: Level::Ok,
            subject: subject.into(),
            detail: detail.into(),
            fix: None,
            status: Asc::SUCCESS,
        }
    }

    pub fn warn(
        check: &'static str,
        subject: impl Into<String>,
        detail: impl Into<String>,
        fix: impl Into<String>,
        status: Asc,
    ) -> Self {
        Finding {
            check,
            level: Level::Warn,
            subject: subject.into(),
            detail: detail.into(),
            fix: Some(fix.into()),
            status,
        }
    }

    pub fn fail(
        check: &'static str,
        subject: impl Into<String>,
        detail: impl Into<String>,
        fix: impl Into<String>,
        status: Asc,
    ) -> Self {
        Finding {
            level: Level::Fail,
            ..Finding::warn(check, subject, detail, fix, status)
        }
    }
}

/// What the doctor is asked to look at besides the config.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The user the service runs as; default: `fleetdash` when that user exists (the
    /// package's), else the user running the doctor.
    pub user: Option<String>,
    /// The nginx site that serves the page; default: the first site under /etc/nginx that
    /// names this config's output folder, or mentions fleetdash.
    pub nginx_site: Option<PathBuf>,
    /// Skip the network checks (agents, hosts, clock).
    pub offline: bool,
}

/// Every finding about the installation `config_path` describes, worst last in no order:
/// the caller sorts. A config that does not load is reported and its dependent checks are
/// said to be skipped, never silently left out.
pub async fn examine(config_path: &Path, options: &Options) -> Vec<Finding> {
    let path = config_path.to_path_buf();
    let inspection = tokio::task::spawn_blocking(move || config::inspect(&path))
        .await
        .expect("the config inspection does not panic");
    let mut findings = local::config_findings(config_path, &inspection);
    let user = access::service_user(options.user.as_deref());
    let user = match user {
        Ok(user) => {
            findings.push(Finding::ok(
                "user",
                user.name.clone(),
                format!("the service's user (uid {})", user.uid),
            ));
            Some(user)
        }
        Err(why) => {
            findings.push(Finding::fail(
                "user",
                options.user.clone().unwrap_or_default(),
                why,
                "name the user the service runs as with --user, or install the package \
                 (it creates the `fleetdash` user)",
                Asc::FAILED_PRECONDITION,
            ));
            None
        }
    };
    let Some((config, rules)) = inspection.loaded.filter(|_| inspection.errors.is_empty()) else {
        findings.push(Finding::warn(
            "config",
            config_path.display().to_string(),
            "the other checks were skipped: they need a config that loads",
            "fix the errors above, then run the doctor again",
            Asc::FAILED_PRECONDITION,
        ));
        return findings;
    };
    if let Some(user) = &user {
        let (config2, user2, site) = (config.clone(), user.clone(), options.nginx_site.clone());
        let more = tokio::task::spawn_blocking(move || {
            let mut out = local::files(&config2, &user2);
            out.extend(tls::files(&config2, Some(&user2)));
            out.extend(nginx::site(&config2, site.as_deref()));
            out
        })
        .await
        .expect("the file checks do not panic");
        findings.extend(more);
    }
    if options.offline {
        findings.push(Finding::ok(
            "agents",
            "network",
            "not checked (--offline), nor the vaults' remotes and the alert channels",
        ));
    } else {
        let (reached, vaults, channels) = tokio::join!(
            reach::network(&config, &rules),
            vault::checks(&config),
            channels::checks(&config)
        );
        findings.extend(reached);
        findings.extend(vaults);
        findings.extend(channels);
    }
    findings.extend(certs::findings(&config, &rules, options.offline).await);
    let config2 = config.clone();
    findings.extend(
        tokio::task::spawn_blocking(move || report::findings(&config2, chrono::Utc::now()))
            .await
            .expect("the report check does not panic"),
    );
    // Notes last: they are about the config's choices, after what is wrong.
    findings.extend(audit::notes(&config));
    declared::apply(findings, &config, chrono::Utc::now())
}

/// The worst level of `findings` (ok when there are none).
pub fn worst(findings: &[Finding]) -> Level {
    findings.iter().map(|f| f.level).max().unwrap_or(Level::Ok)
}

/// Config and rules loaded, for the checks' own tests.
#[cfg(test)]
pub(crate) fn loaded(dir: &Path, body: &str) -> (config::Config, config::Rules) {
    let rules = dir.join("rules.yaml");
    std::fs::write(&rules, include_str!("../../../config/rules.yaml")).unwrap();
    let path = dir.join("fleetdash.toml");
    std::fs::write(
        &path,
        format!(
            "output_dir = \"{}\"\nstate_dir = \"{}\"\nrules = \"rules.yaml\"\n{body}",
            dir.join("out").display(),
            dir.join("state").display()
        ),
    )
    .unwrap();
    config::Config::load(&path).unwrap()
}

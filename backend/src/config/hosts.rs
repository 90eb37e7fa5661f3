//! `[[hosts]]`: the machines of the Systems panel, where each one's facts come from (this
//! machine, a node_exporter, SSH) and what is checked on it (services, tunnels, crons, vault
//! parity). Everything that would make ssh or a probe misread an entry is refused here.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use super::defaults;
use super::validator::{Validator, is_plain_name};

/// Where a host's facts come from (spec §2.4: collectors run from the hub and are read-only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostSource {
    /// This machine: procfs, statvfs, `systemctl is-active`, local files and git.
    Local,
    /// A Prometheus node_exporter's `/metrics`, scraped over HTTP.
    NodeExporter { url: url::Url },
    /// A fixed set of read-only commands over SSH (BatchMode, strict host keys, timeout).
    Ssh(SshTarget),
}

impl HostSource {
    pub fn kind(&self) -> &'static str {
        match self {
            HostSource::Local => "local",
            HostSource::NodeExporter { .. } => "node_exporter",
            HostSource::Ssh(_) => "ssh",
        }
    }
}

/// How to reach a host over SSH. Passwords are never asked for: BatchMode is always on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshTarget {
    /// `user@host` or `host`.
    pub destination: String,
    pub port: Option<u16>,
    pub identity_file: Option<PathBuf>,
    /// A known_hosts file of our own; host keys are always checked strictly.
    pub known_hosts: Option<PathBuf>,
}

/// One loopback forward to probe by TCP connect (spec §7.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TunnelConfig {
    pub name: String,
    /// `host:port`, e.g. `127.0.0.1:18301`.
    pub address: String,
}

/// What a cron job leaves behind when it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CronEvidence {
    /// The record `fleetdash cron-run` writes (or, on a node_exporter host, the metrics it
    /// writes for the textfile collector).
    Record,
    /// A file the job touches on success; its modification time is the last success.
    Stamp(String),
}

/// A job that must check in: the Healthchecks model's period and grace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CronConfig {
    pub name: String,
    pub period: Duration,
    pub grace: Duration,
    pub evidence: CronEvidence,
}

/// The vault's git checkout on a host, compared with its remote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VaultParityConfig {
    /// On the host itself (resolved locally for a local host; as given for an SSH host).
    pub path: String,
    pub remote: String,
    /// The branch to compare; the checkout's current branch when absent.
    pub branch: Option<String>,
}

/// One host of the Systems panel and everything checked on it.
#[derive(Debug, Clone)]
pub struct HostConfig {
    pub name: String,
    pub source: HostSource,
    /// The filesystem whose free space is reported (a mount point).
    pub disk_path: String,
    /// systemd units; `.service` is implied when no suffix is given.
    pub services: Vec<String>,
    pub tunnels: Vec<TunnelConfig>,
    pub crons: Vec<CronConfig>,
    /// Where `fleetdash cron-run` keeps its records on that host.
    pub cron_dir: Option<String>,
    pub vault: Option<VaultParityConfig>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawHost {
    name: Spanned<String>,
    source: Option<Spanned<String>>,
    url: Option<Spanned<String>>,
    ssh: Option<Spanned<RawSsh>>,
    disk_path: Option<String>,
    #[serde(default)]
    services: Vec<Spanned<String>>,
    #[serde(default)]
    tunnels: Vec<RawTunnel>,
    #[serde(default)]
    crons: Vec<RawCron>,
    cron_dir: Option<String>,
    vault: Option<RawHostVault>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSsh {
    destination: Spanned<String>,
    port: Option<Spanned<u16>>,
    identity_file: Option<Spanned<String>>,
    known_hosts: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTunnel {
    name: Spanned<String>,
    address: Spanned<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCron {
    name: Spanned<String>,
    period: Spanned<String>,
    grace: Option<Spanned<String>>,
    stamp: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHostVault {
    path: Spanned<String>,
    remote: Option<String>,
    branch: Option<String>,
}

pub(super) fn validate(v: &mut Validator, raw: &[RawHost], state_dir: &Path) -> Vec<HostConfig> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for (i, h) in raw.iter().enumerate() {
        let prefix = format!("hosts[{i}]");
        let field = |f: &str| format!("{prefix}.{f}");
        let name = h.name.get_ref().trim().to_string();
        if name.is_empty() {
            v.error(&h.name, field("name"), "must not be empty");
        } else if !seen.insert(name.clone()) {
            v.error(&h.name, field("name"), format!("duplicate host {name:?}"));
        }
        let kind = h
            .source
            .as_ref()
            .map(|s| s.get_ref().as_str())
            .unwrap_or("local");
        let source = validate_source(v, h, kind, &prefix);
        let local = kind == "local";
        // Paths on a remote host are that host's; only a local one resolves here.
        let host_path = |v: &Validator, p: &str| -> String {
            if local {
                v.path(p).to_string_lossy().into_owned()
            } else {
                p.to_string()
            }
        };
        let services = validate_services(v, &h.services, &prefix);
        let tunnels = validate_tunnels(v, &h.tunnels, &prefix);
        let mut cron_names = HashSet::new();
        let mut crons = Vec::new();
        for (j, c) in h.crons.iter().enumerate() {
            let cf = |f: &str| field(&format!("crons[{j}].{f}"));
            let cname = c.name.get_ref().clone();
            if !is_plain_name(&cname) {
                v.error(&c.name, cf("name"), "expected a plain name (letters, digits, '.', '_', '-'): it names the job's record file");
            } else if !cron_names.insert(cname.clone()) {
                v.error(
                    &c.name,
                    cf("name"),
                    format!("duplicate cron {cname:?} on this host"),
                );
            }
            let period = v.duration(&Some(c.period.clone()), &cf("period"), Duration::ZERO);
            let grace = v.duration(&c.grace, &cf("grace"), defaults::CRON_GRACE);
            let evidence = match &c.stamp {
                Some(stamp) if kind == "node_exporter" => {
                    v.error(
                        stamp,
                        cf("stamp"),
                        "stamp files need a local or ssh host: node_exporter cannot read a \
                         file's time; run the job under `fleetdash cron-run --textfile-dir` \
                         instead",
                    );
                    CronEvidence::Record
                }
                Some(stamp) => CronEvidence::Stamp(host_path(v, stamp.get_ref())),
                None => CronEvidence::Record,
            };
            crons.push(CronConfig {
                name: cname,
                period,
                grace,
                evidence,
            });
        }
        let cron_dir = match (&h.cron_dir, local) {
            (Some(dir), _) => Some(host_path(v, dir)),
            (None, true) => Some(
                state_dir
                    .join(defaults::CRON_RECORDS_DIR)
                    .to_string_lossy()
                    .into_owned(),
            ),
            (None, false) => None,
        };
        if kind == "ssh"
            && cron_dir.is_none()
            && crons.iter().any(|c| c.evidence == CronEvidence::Record)
        {
            v.error(&h.name, field("cron_dir"), "an ssh host whose crons run under `fleetdash cron-run` needs cron_dir: the record folder on that host (or give each cron a stamp file)");
        }
        let vault = match (&h.vault, kind) {
            (Some(vault), "node_exporter") => {
                v.error(
                    &vault.path,
                    field("vault"),
                    "vault parity needs a local or ssh host: node_exporter cannot run git",
                );
                None
            }
            (Some(vault), _) => Some(VaultParityConfig {
                path: host_path(v, vault.path.get_ref()),
                remote: vault
                    .remote
                    .clone()
                    .unwrap_or_else(|| defaults::VAULT_REMOTE.to_string()),
                branch: vault.branch.clone(),
            }),
            (None, _) => None,
        };
        if let Some(source) = source {
            out.push(HostConfig {
                name,
                source,
                // Resolved against the config's folder like any path, on a local host only.
                disk_path: h
                    .disk_path
                    .as_deref()
                    .map(|p| host_path(v, p))
                    .unwrap_or_else(|| defaults::DISK_PATH.to_string()),
                services,
                tunnels,
                crons,
                cron_dir,
                vault,
            });
        }
    }
    out
}

/// Where the host's facts come from; `None` (with the errors said) when it cannot be reached
/// as configured.
fn validate_source(v: &mut Validator, h: &RawHost, kind: &str, prefix: &str) -> Option<HostSource> {
    let field = |f: &str| format!("{prefix}.{f}");
    let source = match kind {
        "local" => Some(HostSource::Local),
        "node_exporter" => match &h.url {
            None => {
                v.error(
                    &h.name,
                    field("url"),
                    "a node_exporter host needs url, e.g. \"http://127.0.0.1:9100/metrics\"",
                );
                None
            }
            Some(u) => match url::Url::parse(u.get_ref()) {
                Ok(url) if matches!(url.scheme(), "http" | "https") && url.host().is_some() => {
                    Some(HostSource::NodeExporter { url })
                }
                _ => {
                    v.error(u, field("url"), "expected an http:// or https:// URL, e.g. \"http://127.0.0.1:9100/metrics\"");
                    None
                }
            },
        },
        "ssh" => match &h.ssh {
            None => {
                v.error(
                    &h.name,
                    field("ssh"),
                    "an ssh host needs ssh = { destination = \"user@host\" }",
                );
                None
            }
            Some(ssh) => validate_ssh(v, ssh.get_ref(), prefix).map(HostSource::Ssh),
        },
        other => {
            if let Some(s) = &h.source {
                v.error(
                    s,
                    field("source"),
                    format!("unknown source {other:?}; expected local, node_exporter or ssh"),
                );
            }
            None
        }
    };
    if kind != "node_exporter"
        && let Some(u) = &h.url
    {
        v.error(u, field("url"), "only a node_exporter host has a url");
    }
    if kind != "ssh"
        && let Some(s) = &h.ssh
    {
        v.error(s, field("ssh"), "only an ssh host has ssh settings");
    }
    source
}

/// `ssh = { destination, port, identity_file, known_hosts }`: nothing in it may reach ssh as
/// an option or be read by ssh's own expansion.
fn validate_ssh(v: &mut Validator, raw: &RawSsh, prefix: &str) -> Option<SshTarget> {
    let field = |f: &str| format!("{prefix}.ssh.{f}");
    let dest = raw.destination.get_ref();
    let mut valid = true;
    // Never an option to ssh (a leading '-'), never anything a shell or ssh's own parsing
    // would read: only what user@host, [v6]:port and %zone need.
    let plain = |c: char| c.is_ascii_alphanumeric() || "._@:%[]-".contains(c);
    if dest.is_empty() || dest.starts_with('-') || !dest.chars().all(plain) {
        v.error(
            &raw.destination,
            field("destination"),
            "expected user@host or host: letters, digits and . _ @ : % [ ] - only, not \
             starting with '-'",
        );
        valid = false;
    }
    if let Some(port) = &raw.port
        && *port.get_ref() == 0
    {
        v.error(port, field("port"), "expected a port from 1 to 65535");
        valid = false;
    }
    let mut local_file = |key: &str, raw: &Option<Spanned<String>>| {
        let raw = raw.as_ref()?;
        let path = v.path(raw.get_ref());
        let shown = path.to_string_lossy();
        let why = if shown.contains(char::is_whitespace) {
            "contains whitespace, and ssh splits its options' values on whitespace \
             (-o UserKnownHostsFile=/a b names two files, /a and b)"
        } else if shown.contains('%') || shown.contains("${") {
            "contains '%' or '${', which ssh expands (%h is the host name, ${VAR} an \
             environment variable): it would read another file"
        } else {
            return Some(path);
        };
        let message = format!("{shown:?} {why}; use a path without them");
        v.error(raw, field(key), message);
        valid = false;
        None
    };
    let identity_file = local_file("identity_file", &raw.identity_file);
    let known_hosts = local_file("known_hosts", &raw.known_hosts);
    valid.then(|| SshTarget {
        destination: dest.clone(),
        port: raw.port.as_ref().map(|p| *p.get_ref()),
        identity_file,
        known_hosts,
    })
}

/// systemd units, compared by systemd's own name: "nginx" and "nginx.service" are one unit.
fn validate_services(v: &mut Validator, raw: &[Spanned<String>], prefix: &str) -> Vec<String> {
    let mut services = Vec::new();
    let mut units: Vec<(String, &str)> = Vec::new();
    for (j, unit) in raw.iter().enumerate() {
        let field = format!("{prefix}.services[{j}]");
        let configured = unit.get_ref();
        let systemd_name = if configured.contains('.') {
            configured.clone()
        } else {
            format!("{configured}.service")
        };
        if let Some((_, first)) = units.iter().find(|(u, _)| *u == systemd_name) {
            let message = if first == configured {
                format!("duplicate service {configured:?} on this host")
            } else {
                format!("{configured:?} is the unit {first:?} already names ({systemd_name})")
            };
            v.error(unit, field, message);
        } else if is_plain_name(configured) {
            units.push((systemd_name, configured));
            services.push(configured.clone());
        } else {
            v.error(
                unit,
                field,
                "expected a systemd unit name such as \"nginx\" or \"autossh-lab.service\"",
            );
        }
    }
    services
}

fn validate_tunnels(v: &mut Validator, raw: &[RawTunnel], prefix: &str) -> Vec<TunnelConfig> {
    let mut names = HashSet::new();
    let mut tunnels = Vec::new();
    for (j, t) in raw.iter().enumerate() {
        let field = |f: &str| format!("{prefix}.tunnels[{j}].{f}");
        let name = t.name.get_ref().trim().to_string();
        if name.is_empty() || !names.insert(name.clone()) {
            v.error(
                &t.name,
                field("name"),
                "must be non-empty and unique within the host",
            );
        }
        let addr = t.address.get_ref();
        let port_ok = addr.rsplit_once(':').is_some_and(|(host, port)| {
            !host.is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0)
        });
        if port_ok {
            tunnels.push(TunnelConfig {
                name,
                address: addr.clone(),
            });
        } else {
            v.error(
                &t.address,
                field("address"),
                "expected host:port, e.g. \"127.0.0.1:18301\"",
            );
        }
    }
    tunnels
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::config::Config;

    #[test]
    fn host_and_backup_mistakes_are_each_named_with_their_line() {
        let text = r#"output_dir = "o"
state_dir = "s"
rules = "r"
[[hosts]]
name = "a"
source = "ssh"
services = ["nginx", "nginx.service", "cron", "cron"]
ssh = { destination = "ops@lab;id", port = 0, known_hosts = "/k/known hosts", identity_file = "/k/id%h" }
[[hosts]]
name = "b"
source = "ssh"
[hosts.ssh]
destination = "ops@lab"
identity_file = "/k/id"
port = 0
known_hosts = "kh"
[[hosts]]
name = "c"
source = "node_exporter"
url = "http://127.0.0.1:9100/metrics"
[[hosts.crons]]
name = "job"
period = "1h"
stamp = "/tmp/job.ok"
[backups]
name = " "
command = [""]
"#;
        let errs = Config::parse(Path::new("/etc/my configs/f.toml"), text)
            .unwrap_err()
            .0;
        let rendered: Vec<String> = errs.iter().map(ToString::to_string).collect();
        let f = "/etc/my configs/f.toml";
        let expected = [
            format!(
                "{f}:7: hosts[0].services[1]: \"nginx.service\" is the unit \"nginx\" already \
                 names (nginx.service)"
            ),
            format!("{f}:7: hosts[0].services[3]: duplicate service \"cron\" on this host"),
            format!(
                "{f}:8: hosts[0].ssh.destination: expected user@host or host: letters, digits \
                 and . _ @ : % [ ] - only, not starting with '-'"
            ),
            format!("{f}:8: hosts[0].ssh.port: expected a port from 1 to 65535"),
            format!(
                "{f}:8: hosts[0].ssh.identity_file: \"/k/id%h\" contains '%' or '${{', which \
                 ssh expands (%h is the host name, ${{VAR}} an environment variable): it would \
                 read another file; use a path without them"
            ),
            format!(
                "{f}:8: hosts[0].ssh.known_hosts: \"/k/known hosts\" contains whitespace, and \
                 ssh splits its options' values on whitespace (-o UserKnownHostsFile=/a b names \
                 two files, /a and b); use a path without them"
            ),
            format!("{f}:15: hosts[1].ssh.port: expected a port from 1 to 65535"),
            // Relative: resolved against the config's folder, whose name has a space.
            format!("{f}:16: hosts[1].ssh.known_hosts: \"/etc/my configs/kh\" contains whitespace"),
            format!(
                "{f}:24: hosts[2].crons[0].stamp: stamp files need a local or ssh host: \
                 node_exporter cannot read a file's time; run the job under `fleetdash cron-run \
                 --textfile-dir` instead"
            ),
            format!("{f}:26: backups.name: must not be empty"),
            format!(
                "{f}:27: backups.command: must name a program first, e.g. [\"rclone\", \"lsl\", \
                 \"gdrive:backups\"]"
            ),
        ];
        for e in &expected {
            assert!(
                rendered.iter().any(|r| r.starts_with(e.as_str())),
                "missing {e:?} in {rendered:#?}"
            );
        }
        assert_eq!(errs.len(), expected.len(), "{rendered:#?}");
    }

    #[test]
    fn ssh_destinations_are_plain() {
        let host = |dest: &str| {
            format!(
                "output_dir = \"o\"\nstate_dir = \"s\"\nrules = \"r\"\n[[hosts]]\nname = \"h\"\n\
                 source = \"ssh\"\nssh = {{ destination = {dest:?} }}\n"
            )
        };
        for good in [
            "lab",
            "ops@lab",
            "ops@10.0.0.1",
            "deploy_user@host-1.example.org",
            "[fe80::1%eth0]",
            "ops@[2001:db8::1]",
        ] {
            let c = Config::parse(Path::new("f.toml"), &host(good));
            assert!(c.is_ok(), "{good}: {}", c.unwrap_err());
        }
        for bad in [
            "",
            "user@host;id",
            "user@host id",
            "a\tb",
            "\"quoted\"",
            "'quoted'",
            "$(id)",
            "`id`",
            "host|x",
            "-oProxyCommand=x",
            "ops@lab/../x",
            "hôte",
        ] {
            let err = Config::parse(Path::new("f.toml"), &host(bad))
                .unwrap_err()
                .to_string();
            assert!(
                err.starts_with("f.toml:7: hosts[0].ssh.destination: expected user@host"),
                "{bad:?}: {err}"
            );
        }
    }

    #[test]
    fn a_local_disk_path_resolves_against_the_config_folder() {
        let text = "output_dir = \"o\"\nstate_dir = \"s\"\nrules = \"r\"\n\
                    [[hosts]]\nname = \"here\"\ndisk_path = \"data\"\n\
                    [[hosts]]\nname = \"abs\"\ndisk_path = \"/srv\"\n\
                    [[hosts]]\nname = \"default\"\n\
                    [[hosts]]\nname = \"there\"\nsource = \"ssh\"\ndisk_path = \"data\"\n\
                    ssh = { destination = \"lab\" }\n";
        let c = Config::parse(Path::new("/etc/fleetdash/f.toml"), text).unwrap();
        let disks: Vec<&str> = c.hosts.iter().map(|h| h.disk_path.as_str()).collect();
        // A remote host's path is that host's: as given.
        assert_eq!(disks, ["/etc/fleetdash/data", "/srv", "/", "data"]);
    }
}

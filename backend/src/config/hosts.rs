//! `[[hosts]]`: the machines of the Systems panel, where each one's facts come from (this
//! machine, a node_exporter, SSH) and what is checked on it (services, tunnels, crons, vault
//! parity). Everything that would make ssh or a probe misread an entry is refused here.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use toml::Spanned;

use super::defaults;
use super::files::Expect;
use super::table::{Element, Table};
use super::validator::{DURATION, Validator, is_plain_name};

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
    /// The remote (a name or URL) compared with. `None`: the checkout's `origin` when it has
    /// one, else the checkout is watched alone (HEAD, uncommitted changes): a vault that syncs
    /// nowhere is no mistake.
    pub remote: Option<String>,
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

/// Reads each `[[hosts]]` entry; a host whose source cannot be reached as configured is
/// reported and left out. `state_dir` holds a local host's cron records by default. Also the
/// name of every entry, those left out included.
pub(super) fn read(
    v: &mut Validator,
    entries: Vec<Table>,
    state_dir: &Path,
    depends_on: &mut std::collections::BTreeMap<String, Vec<String>>,
    flaky: &mut std::collections::BTreeMap<String, super::Flaky>,
) -> (Vec<HostConfig>, HashSet<String>) {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for mut t in entries {
        let name = t.required_string(v, "name", "the host's name, e.g. \"lab\"");
        let source = t.string(v, "source");
        let url = t.string(v, "url");
        let ssh = t.table(v, "ssh");
        let disk_path = t.string(v, "disk_path");
        let services = t.strings(v, "services");
        let tunnels = t.tables(v, "tunnels");
        let crons = t.tables(v, "crons");
        let cron_dir = t.string(v, "cron_dir");
        let vault = t.table(v, "vault");
        let key = name
            .as_ref()
            .map(|n| format!("host:{}", n.get_ref().trim()));
        super::flaky::read(v, &mut t, key.clone(), flaky);
        super::alerts::depends_on(v, &mut t, key, depends_on);
        t.finish(v);

        // Errors about the entry as a whole point at its name, else at its header.
        let at = name.as_ref().map(|n| n.span().start).or(t.start());
        let name = name.map(|n| (n.get_ref().trim().to_string(), n));
        if let Some((trimmed, spanned)) = &name {
            if trimmed.is_empty() {
                v.error(spanned, t.field("name"), "must not be empty");
            } else if !seen.insert(trimmed.clone()) {
                v.error(
                    spanned,
                    t.field("name"),
                    format!("duplicate host {trimmed:?}"),
                );
            }
        }
        let kind = source
            .as_ref()
            .map(|s| s.get_ref().as_str())
            .unwrap_or("local");
        let host_source = read_source(v, &t, at, kind, &source, &url, ssh);
        let on_host = OnHost {
            local: kind == "local",
        };
        let services = services
            .map(|s| read_services(v, s.get_ref(), &t.field("services")))
            .unwrap_or_default();
        let host = name
            .as_ref()
            .map(|(n, _)| n.as_str())
            .filter(|n| !n.is_empty());
        let tunnels = read_tunnels(v, tunnels, host, flaky);
        let crons = read_crons(v, crons, kind, on_host);
        let cron_dir = match (&cron_dir, on_host.local) {
            (Some(dir), _) => Some(on_host.read_path(v, dir, t.field("cron_dir"), Expect::Folder)),
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
            v.error_at(at, t.field("cron_dir"), "an ssh host whose crons run under `fleetdash cron-run` needs cron_dir: the record folder on that host (or give each cron a stamp file)");
        }
        let vault = read_vault(v, vault, kind, on_host);
        if let (Some((name, _)), Some(source)) = (name, host_source) {
            out.push(HostConfig {
                name,
                source,
                // Resolved against the config's folder like any path, on a local host only.
                disk_path: disk_path
                    .map(|p| on_host.read_path(v, &p, t.field("disk_path"), Expect::Folder))
                    .unwrap_or_else(|| defaults::DISK_PATH.to_string()),
                services,
                tunnels,
                crons,
                cron_dir,
                vault,
            });
        }
    }
    (out, seen)
}

/// Paths on a remote host are that host's, kept as written; only a local host's resolve here.
#[derive(Clone, Copy)]
struct OnHost {
    local: bool,
}

impl OnHost {
    /// A path fleetdash reads on the host (remembered for `check` when the host is this one).
    fn read_path(
        self,
        v: &mut Validator,
        raw: &Spanned<String>,
        field: String,
        expect: Expect,
    ) -> String {
        if self.local {
            v.read_path(raw, field, expect)
                .to_string_lossy()
                .into_owned()
        } else {
            raw.get_ref().clone()
        }
    }
}

/// Where the host's facts come from; `None` (with the errors said) when it cannot be reached
/// as configured.
fn read_source(
    v: &mut Validator,
    t: &Table,
    at: Option<usize>,
    kind: &str,
    source: &Option<Spanned<String>>,
    url: &Option<Spanned<String>>,
    ssh: Table,
) -> Option<HostSource> {
    let ssh = match (kind, ssh.is_present()) {
        ("ssh", _) => Some(ssh),
        (_, true) => {
            ssh.skip();
            v.error_at(
                ssh.start(),
                t.field("ssh"),
                "only an ssh host has ssh settings",
            );
            None
        }
        (_, false) => None,
    };
    let host_source = match kind {
        "local" => Some(HostSource::Local),
        "node_exporter" => match url {
            None => {
                v.error_at(
                    at,
                    t.field("url"),
                    "a node_exporter host needs url, e.g. \"http://127.0.0.1:9100/metrics\"",
                );
                None
            }
            Some(u) => match url::Url::parse(u.get_ref()) {
                Ok(url) if matches!(url.scheme(), "http" | "https") && url.host().is_some() => {
                    Some(HostSource::NodeExporter { url })
                }
                _ => {
                    v.error(u, t.field("url"), "expected an http:// or https:// URL, e.g. \"http://127.0.0.1:9100/metrics\"");
                    None
                }
            },
        },
        "ssh" if ssh.as_ref().is_none_or(|ssh| !ssh.is_present()) => {
            v.error_at(
                at,
                t.field("ssh"),
                "an ssh host needs ssh = { destination = \"user@host\" }",
            );
            None
        }
        "ssh" => ssh.and_then(|ssh| read_ssh(v, ssh)).map(HostSource::Ssh),
        other => {
            if let Some(s) = source {
                v.error(
                    s,
                    t.field("source"),
                    format!("unknown source {other:?}; expected local, node_exporter or ssh"),
                );
            }
            None
        }
    };
    if kind != "node_exporter"
        && let Some(u) = url
    {
        v.error(u, t.field("url"), "only a node_exporter host has a url");
    }
    host_source
}

/// `ssh = { destination, port, identity_file, known_hosts }`: nothing in it may reach ssh as
/// an option or be read by ssh's own expansion.
fn read_ssh(v: &mut Validator, mut t: Table) -> Option<SshTarget> {
    let destination = t.required_string(v, "destination", "user@host or host");
    let port = t.integer(v, "port", "a port from 1 to 65535");
    let identity_file = t.string(v, "identity_file");
    let known_hosts = t.string(v, "known_hosts");
    t.finish(v);

    let mut valid = true;
    if let Some(dest) = &destination {
        // Never an option to ssh (a leading '-'), never anything a shell or ssh's own parsing
        // would read: only what user@host, [v6]:port and %zone need.
        let plain = |c: char| c.is_ascii_alphanumeric() || "._@:%[]-".contains(c);
        let d = dest.get_ref();
        if d.is_empty() || d.starts_with('-') || !d.chars().all(plain) {
            v.error(
                dest,
                t.field("destination"),
                "expected user@host or host: letters, digits and . _ @ : % [ ] - only, not \
                 starting with '-'",
            );
            valid = false;
        }
    }
    let port = match port {
        Some(p) => match u16::try_from(*p.get_ref()) {
            Ok(port) if port > 0 => Some(port),
            _ => {
                v.error(&p, t.field("port"), "expected a port from 1 to 65535");
                valid = false;
                None
            }
        },
        None => None,
    };
    let mut local_file = |key: &str, raw: Option<Spanned<String>>| {
        let raw = raw?;
        let path = v.path(raw.get_ref());
        let shown = path.to_string_lossy();
        let why = if shown.contains(char::is_whitespace) {
            "contains whitespace, and ssh splits its options' values on whitespace \
             (-o UserKnownHostsFile=/a b names two files, /a and b)"
        } else if shown.contains('%') || shown.contains("${") {
            "contains '%' or '${', which ssh expands (%h is the host name, ${VAR} an \
             environment variable): it would read another file"
        } else {
            return Some(v.read_path(&raw, t.field(key), Expect::File));
        };
        let message = format!("{shown:?} {why}; use a path without them");
        v.error(&raw, t.field(key), message);
        valid = false;
        None
    };
    let identity_file = local_file("identity_file", identity_file);
    let known_hosts = local_file("known_hosts", known_hosts);
    let destination = destination?.into_inner();
    valid.then_some(SshTarget {
        destination,
        port,
        identity_file,
        known_hosts,
    })
}

/// systemd units, compared by systemd's own name: "nginx" and "nginx.service" are one unit.
fn read_services(v: &mut Validator, raw: &[Element], field: &str) -> Vec<String> {
    let mut services = Vec::new();
    let mut units: Vec<(String, &str)> = Vec::new();
    for (j, unit) in raw {
        let field = format!("{field}[{j}]");
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

/// `[[hosts.tunnels]]`: loopback forwards probed by TCP connect.
/// `host`: the host's name, the tunnels' declarations (`flaky`) are kept under (`None` when it
/// is wrong, said already).
fn read_tunnels(
    v: &mut Validator,
    entries: Vec<Table>,
    host: Option<&str>,
    flaky: &mut std::collections::BTreeMap<String, super::Flaky>,
) -> Vec<TunnelConfig> {
    let mut names = HashSet::new();
    let mut tunnels = Vec::new();
    for mut t in entries {
        let name = t.required_string(v, "name", "the tunnel's name, unique within the host");
        let address = t.required_string(v, "address", "host:port, e.g. \"127.0.0.1:18301\"");
        let key = host.zip(name.as_ref()).map(|(host, n)| {
            fleetdash_model::alerts::key::host_check(host, "tunnel", n.get_ref().trim())
        });
        super::flaky::read(v, &mut t, key, flaky);
        t.finish(v);
        let name = name.map(|n| (n.get_ref().trim().to_string(), n));
        if let Some((trimmed, spanned)) = &name
            && (trimmed.is_empty() || !names.insert(trimmed.clone()))
        {
            v.error(
                spanned,
                t.field("name"),
                "must be non-empty and unique within the host",
            );
        }
        let Some(address) = address else { continue };
        let port_ok = address
            .get_ref()
            .rsplit_once(':')
            .is_some_and(|(host, port)| {
                !host.is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0)
            });
        if !port_ok {
            v.error(
                &address,
                t.field("address"),
                "expected host:port, e.g. \"127.0.0.1:18301\"",
            );
        } else if let Some((name, _)) = name {
            tunnels.push(TunnelConfig {
                name,
                address: address.into_inner(),
            });
        }
    }
    tunnels
}

/// `[[hosts.crons]]`: jobs that must check in, by their record or a stamp file.
fn read_crons(
    v: &mut Validator,
    entries: Vec<Table>,
    kind: &str,
    on_host: OnHost,
) -> Vec<CronConfig> {
    let mut names = HashSet::new();
    let mut crons = Vec::new();
    for mut t in entries {
        let name = t.required_string(v, "name", "the job's name, which names its record file");
        let period = t.required_string(v, "period", "how often the job runs, e.g. \"1h\"");
        let grace = t.string_as(v, "grace", DURATION);
        let stamp = t.string(v, "stamp");
        t.finish(v);
        if let Some(name) = &name {
            if !is_plain_name(name.get_ref()) {
                v.error(name, t.field("name"), "expected a plain name (letters, digits, '.', '_', '-'): it names the job's record file");
            } else if !names.insert(name.get_ref().clone()) {
                v.error(
                    name,
                    t.field("name"),
                    format!("duplicate cron {:?} on this host", name.get_ref()),
                );
            }
        }
        let period = v.duration(&period, &t.field("period"), Duration::ZERO);
        let grace = v.duration(&grace, &t.field("grace"), defaults::CRON_GRACE);
        let evidence = match &stamp {
            Some(stamp) if kind == "node_exporter" => {
                v.error(
                    stamp,
                    t.field("stamp"),
                    "stamp files need a local or ssh host: node_exporter cannot read a file's \
                     time; run the job under `fleetdash cron-run --textfile-dir` instead",
                );
                CronEvidence::Record
            }
            Some(stamp) => {
                CronEvidence::Stamp(on_host.read_path(v, stamp, t.field("stamp"), Expect::File))
            }
            None => CronEvidence::Record,
        };
        if let Some(name) = name {
            crons.push(CronConfig {
                name: name.into_inner(),
                period,
                grace,
                evidence,
            });
        }
    }
    crons
}

/// `vault = { path, remote, branch }`: the vault's git checkout on the host.
fn read_vault(
    v: &mut Validator,
    mut t: Table,
    kind: &str,
    on_host: OnHost,
) -> Option<VaultParityConfig> {
    if !t.is_present() {
        return None;
    }
    let path = t.required_string(v, "path", "the vault's git checkout on the host");
    let remote = t.string(v, "remote");
    let branch = t.string(v, "branch");
    t.finish(v);
    if kind == "node_exporter" {
        let at = path.as_ref().map(|p| p.span().start).or(t.start());
        v.error_at(
            at,
            t.name(),
            "vault parity needs a local or ssh host: node_exporter cannot run git",
        );
        return None;
    }
    Some(VaultParityConfig {
        path: on_host.read_path(v, &path?, t.field("path"), Expect::Folder),
        remote: remote.map(Spanned::into_inner),
        branch: branch.map(Spanned::into_inner),
    })
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

//! This machine's facts, read directly: `/proc/meminfo`, statvfs, `systemctl is-active`, the
//! cron records and stamps on local disk, and git for the vault.
//!
//! It also owns the parsers of what those commands print ([`parse_meminfo`],
//! [`services_from_is_active`]) and the systemd unit naming ([`unit_name`]), shared with the SSH
//! and node_exporter sources so every source reads a fact the same way.

use std::path::Path;
use std::time::Duration;

use async_trait::async_trait;
use fleetdash_model::Asc;

use super::command::{CommandOutput, LocalRunner, ReadOnlyCommand, Runner};
use super::{FactSource, HostFacts, Ram, UnitState, cron, vault};
use crate::config::{CronConfig, CronEvidence, HostConfig, ProbeLimits};
use crate::net::ProbeFailure;

const MEMINFO: &str = "/proc/meminfo";

pub struct LocalSource {
    runner: LocalRunner,
}

impl LocalSource {
    pub fn new(limits: &ProbeLimits) -> Self {
        LocalSource {
            runner: LocalRunner {
                timeout: limits.command_timeout,
            },
        }
    }
}

#[async_trait]
impl FactSource for LocalSource {
    async fn read(&self, host: &HostConfig) -> HostFacts {
        let timeout = self.runner.timeout;
        let ram = async {
            let text = tokio::fs::read_to_string(MEMINFO).await.map_err(|e| {
                ProbeFailure::new(
                    Asc::DEPENDENCY_UNAVAILABLE,
                    format!("cannot read {MEMINFO}: {e}"),
                )
            })?;
            parse_meminfo(&text).map_err(|f| f.context(MEMINFO))
        };
        let disk = disk_free(host.disk_path.clone(), timeout);
        let services = read_services(&self.runner, &host.services);
        let crons = read_crons(host, timeout);
        let vault = vault::configured_parity(&self.runner, host.vault.as_ref());
        let (ram, disk_free_bytes, services, crons, vault) =
            tokio::join!(ram, disk, services, crons, vault);
        HostFacts {
            ram,
            disk_free_bytes,
            services,
            crons,
            vault,
        }
    }
}

/// Bytes an unprivileged user may still write under `path` (`f_bavail × f_frsize`, what `df`
/// calls Available). statvfs runs off the async threads, under the deadline: a hung network
/// mount must cost one timeout, not a stuck pass.
async fn disk_free(path: String, timeout: Duration) -> Result<u64, ProbeFailure> {
    let job = tokio::task::spawn_blocking({
        let path = path.clone();
        move || rustix::fs::statvfs(path.as_str())
    });
    let st = match tokio::time::timeout(timeout, job).await {
        Err(_) => {
            return Err(ProbeFailure::new(
                Asc::TIMEOUT,
                format!(
                    "statvfs {path}: no answer within {}",
                    humantime::format_duration(timeout)
                ),
            ));
        }
        Ok(Err(join)) => {
            return Err(ProbeFailure::new(
                Asc::INTERNAL_ERROR,
                format!("statvfs {path}: {join}"),
            ));
        }
        Ok(Ok(Err(errno))) => {
            let io = std::io::Error::from(errno);
            let asc = match io.kind() {
                std::io::ErrorKind::NotFound => Asc::NOT_FOUND,
                std::io::ErrorKind::PermissionDenied => Asc::PERMISSION_DENIED,
                _ => Asc::DEPENDENCY_UNAVAILABLE,
            };
            return Err(ProbeFailure::new(asc, format!("statvfs {path}: {io}")));
        }
        Ok(Ok(Ok(st))) => st,
    };
    st.f_bavail.checked_mul(st.f_frsize).ok_or_else(|| {
        ProbeFailure::new(
            Asc::INTEGRITY_CHECK_FAILED,
            format!("statvfs {path}: free space overflows 64 bits"),
        )
    })
}

/// Every configured unit in one `systemctl is-active` call.
pub(crate) async fn read_services(
    runner: &dyn Runner,
    services: &[String],
) -> Vec<Result<UnitState, ProbeFailure>> {
    if services.is_empty() {
        return Vec::new();
    }
    let units: Vec<String> = services.iter().map(|s| unit_name(s)).collect();
    match runner.run(&ReadOnlyCommand::IsActive(&units)).await {
        Ok(out) => services_from_is_active(&units, &out),
        Err(failure) => vec![Err(failure.context("systemctl is-active")); services.len()],
    }
}

/// Each cron's evidence from local files, every cron read on its own blocking thread under its
/// own deadline: one record that cannot be read (a hung mount, a FIFO) fails only its own cron.
async fn read_crons(
    host: &HostConfig,
    timeout: Duration,
) -> Vec<Result<cron::Evidence, ProbeFailure>> {
    futures::future::join_all(
        host.crons
            .iter()
            .map(|cfg| read_cron(host.cron_dir.clone(), cfg.clone(), timeout)),
    )
    .await
}

async fn read_cron(
    cron_dir: Option<String>,
    cfg: CronConfig,
    timeout: Duration,
) -> Result<cron::Evidence, ProbeFailure> {
    let what = match (&cfg.evidence, &cron_dir) {
        (CronEvidence::Record, Some(dir)) => format!(
            "cannot read {}",
            cron::record_path(Path::new(dir), &cfg.name).display()
        ),
        (CronEvidence::Record, None) => "cannot read the cron record".to_string(),
        (CronEvidence::Stamp(stamp), _) => {
            format!("cannot read the modification time of {stamp}")
        }
    };
    // A thread stuck in the kernel cannot be stopped; it is left behind, and the pass goes on.
    let job = tokio::task::spawn_blocking(move || cron::read_local(cron_dir.as_deref(), &cfg));
    match tokio::time::timeout(timeout, job).await {
        Ok(Ok(evidence)) => evidence,
        Ok(Err(join)) => Err(ProbeFailure::new(
            Asc::INTERNAL_ERROR,
            format!("{what}: {join}"),
        )),
        Err(_) => Err(ProbeFailure::new(
            Asc::TIMEOUT,
            format!(
                "{what}: no answer within {}",
                humantime::format_duration(timeout)
            ),
        )),
    }
}

/// systemd's unit name for a configured service: `.service` is implied when the name has no
/// suffix, as `systemctl` itself does, so every source asks about the same unit.
pub fn unit_name(configured: &str) -> String {
    if configured.contains('.') {
        configured.to_string()
    } else {
        format!("{configured}.service")
    }
}

/// Used = MemTotal − MemAvailable, in bytes, from the text of `/proc/meminfo`. MemAvailable is
/// the kernel's own estimate of what can be had without swapping (Linux ≥ 3.14); it is never
/// approximated from MemFree, which would call the page cache "used".
pub fn parse_meminfo(text: &str) -> Result<Ram, ProbeFailure> {
    let field = |key: &str| -> Result<u64, ProbeFailure> {
        let line = text
            .lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
            .ok_or_else(|| {
                ProbeFailure::new(
                    Asc::INTEGRITY_CHECK_FAILED,
                    format!("no {key} line (not a Linux meminfo, or a kernel older than 3.14)"),
                )
            })?;
        let mut words = line.split_whitespace();
        let bad = || {
            ProbeFailure::new(
                Asc::INTEGRITY_CHECK_FAILED,
                format!("unreadable {key} line: {:?}", line.trim()),
            )
        };
        let n: u64 = words.next().and_then(|w| w.parse().ok()).ok_or_else(bad)?;
        // The kernel says "kB" and means KiB.
        match words.next() {
            Some("kB") => n.checked_mul(1024).ok_or_else(bad),
            None => Ok(n),
            Some(_) => Err(bad()),
        }
    };
    let total = field("MemTotal")?;
    let available = field("MemAvailable")?;
    Ok(Ram {
        used_bytes: total.saturating_sub(available),
        total_bytes: total,
    })
}

/// One result per unit from `systemctl is-active -- UNITS`, which prints one state per unit in
/// order and exits non-zero when any is not active (that is an answer, not a failure). When it
/// printed no states, it could not ask systemd, and every unit fails with systemctl's reason.
pub fn services_from_is_active(
    units: &[String],
    out: &CommandOutput,
) -> Vec<Result<UnitState, ProbeFailure>> {
    let states: Vec<&str> = out
        .stdout
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let known = |s: &str| {
        matches!(
            s,
            "active"
                | "reloading"
                | "refreshing"
                | "inactive"
                | "failed"
                | "activating"
                | "deactivating"
                | "maintenance"
                | "unknown"
        )
    };
    if states.len() == units.len() && states.iter().all(|s| known(s)) {
        return states
            .iter()
            .map(|s| Ok(UnitState(s.to_string())))
            .collect();
    }
    let failure = is_active_failure(units.len(), &states, out);
    vec![Err(failure); units.len()]
}

fn is_active_failure(expected: usize, states: &[&str], out: &CommandOutput) -> ProbeFailure {
    let err = out.first_error_line();
    let lowered = out.stderr.to_ascii_lowercase();
    if lowered.contains("not been booted with systemd")
        || lowered.contains("failed to connect to bus")
        || lowered.contains("systemd is not running")
    {
        return ProbeFailure::new(
            Asc::FAILED_PRECONDITION,
            format!(
                "systemd is not running on this host, services cannot be checked (systemctl: {err})"
            ),
        );
    }
    // 127: the shell (over SSH) or `env` found no such command.
    if out.exit_code == Some(127)
        || lowered.contains("command not found")
        || lowered.contains("systemctl: not found")
    {
        return ProbeFailure::new(
            Asc::FAILED_PRECONDITION,
            format!("systemctl not found on this host ({err})"),
        );
    }
    let exit = out
        .exit_code
        .map_or("killed by a signal".to_string(), |c| format!("exit {c}"));
    let why = if out.stderr.trim().is_empty() {
        format!("printed {} states for {expected} units", states.len())
    } else {
        err
    };
    ProbeFailure::new(
        Asc::DEPENDENCY_UNAVAILABLE,
        format!("systemctl is-active gave no usable answer ({exit}: {why})"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(code: i32, stdout: &str, stderr: &str) -> CommandOutput {
        CommandOutput::exited(code, stdout, stderr)
    }

    #[test]
    fn meminfo_used_is_total_minus_available() {
        let text = "MemTotal:       24684084 kB\nMemFree:        22429048 kB\nMemAvailable:   24295076 kB\nBuffers: 1 kB\n";
        let ram = parse_meminfo(text).unwrap();
        assert_eq!(ram.total_bytes, 24_684_084 * 1024);
        assert_eq!(ram.used_bytes, (24_684_084 - 24_295_076) * 1024);
    }

    #[test]
    fn meminfo_without_available_is_an_error_not_a_guess() {
        let err = parse_meminfo("MemTotal: 100 kB\nMemFree: 50 kB\n").unwrap_err();
        assert!(
            err.reason.contains("no MemAvailable line"),
            "{}",
            err.reason
        );
        let err = parse_meminfo("MemTotal: lots kB\nMemAvailable: 1 kB\n").unwrap_err();
        assert!(err.reason.contains("unreadable MemTotal"), "{}", err.reason);
        // "MemTotalX:" is not "MemTotal:".
        assert!(parse_meminfo("MemTotalX: 1 kB\nMemAvailable: 1 kB\n").is_err());
        assert!(parse_meminfo("").is_err());
    }

    #[test]
    fn unit_names_get_service_when_bare() {
        assert_eq!(unit_name("nginx"), "nginx.service");
        assert_eq!(unit_name("autossh-lab.service"), "autossh-lab.service");
        assert_eq!(unit_name("backup.timer"), "backup.timer");
    }

    #[test]
    fn is_active_lines_map_to_units_in_order() {
        let units: Vec<String> = ["a.service", "b.service", "c.service", "d.service"]
            .map(String::from)
            .to_vec();
        let got =
            services_from_is_active(&units, &out(3, "active\ninactive\nfailed\nreloading\n", ""));
        let active: Vec<bool> = got
            .iter()
            .map(|r| r.as_ref().unwrap().is_active())
            .collect();
        assert_eq!(active, [true, false, false, true]);
        assert_eq!(got[2], Ok(UnitState("failed".into())));
    }

    #[test]
    fn no_systemd_fails_every_unit_with_the_reason() {
        let units: Vec<String> = vec!["a.service".into(), "b.service".into()];
        let got = services_from_is_active(
            &units,
            &out(
                1,
                "",
                "System has not been booted with systemd as init system (PID 1). Can't operate.\nFailed to connect to bus: Host is down\n",
            ),
        );
        assert_eq!(got.len(), 2);
        for r in got {
            let e = r.unwrap_err();
            assert_eq!(e.asc, Asc::FAILED_PRECONDITION);
            assert!(e.reason.contains("systemd is not running"), "{}", e.reason);
            assert!(
                e.reason.contains("System has not been booted with systemd"),
                "{}",
                e.reason
            );
        }
        let got = services_from_is_active(
            &units,
            &out(127, "", "env: 'systemctl': No such file or directory\n"),
        );
        assert!(
            got[0]
                .as_ref()
                .unwrap_err()
                .reason
                .contains("systemctl not found")
        );
        let got = services_from_is_active(&units, &out(0, "active\n", ""));
        let e = got[1].clone().unwrap_err();
        assert_eq!(e.asc, Asc::DEPENDENCY_UNAVAILABLE);
        assert!(
            e.reason.contains("printed 1 states for 2 units"),
            "{}",
            e.reason
        );
    }
}

//! A remote host's facts over SSH: the same fixed read-only commands as [`super::command`],
//! each run as `ssh -o BatchMode=yes -o StrictHostKeyChecking=yes ... -- DEST COMMAND`, with a
//! deadline. Never a password prompt, never an unknown host key accepted.
//!
//! It owns [`SshRunner`] (a [`Runner`] that runs a command on the host), the quoting of argv
//! for the remote shell ([`shell_quote`]), the reading of ssh's own failures (exit 255) into
//! codes, and the parsing of `df -Pk`. The first command doubles as the reachability check: if
//! ssh itself fails, the host is unreachable and nothing else is tried, so a dead host costs
//! one timeout.

use std::time::Duration;

use async_trait::async_trait;
use chrono::DateTime;
use fleetdash_model::Asc;
use tokio::sync::Semaphore;

use super::command::{
    CommandOutput, MAX_OUTPUT_BYTES, PROBE_ENV, RawOutput, ReadOnlyCommand, Runner, run_argv_raw,
};
use super::local::{parse_meminfo, read_services};
use super::{FactSource, HostFacts, cron, vault};
use crate::config::{CronConfig, CronEvidence, HostConfig, ProbeLimits, SshTarget};
use crate::net::ProbeFailure;

/// At most this many ssh connections to one host at once: sshd drops unauthenticated
/// connections beyond its MaxStartups (10 by default), and a pass must not trip it.
const MAX_CONNECTIONS_PER_HOST: usize = 4;

pub struct SshSource {
    target: SshTarget,
    timeout: std::time::Duration,
}

impl SshSource {
    pub fn new(target: SshTarget, limits: &ProbeLimits) -> Self {
        SshSource {
            target,
            timeout: limits.command_timeout,
        }
    }
}

#[async_trait]
impl FactSource for SshSource {
    async fn read(&self, host: &HostConfig) -> HostFacts {
        let runner = SshRunner::new(self.target.clone(), self.timeout);
        // The first command is the reachability check: a runner error is ssh failing (refused,
        // timed out, key or host key refused), and every other command would fail the same way.
        let ram = match runner.run(&ReadOnlyCommand::Meminfo).await {
            Err(failure) => return HostFacts::unreachable(host, failure),
            Ok(out) if !out.success() => Err(command_failure("cat /proc/meminfo", &out)),
            Ok(out) => parse_meminfo(&out.stdout).map_err(|f| f.context("/proc/meminfo")),
        };
        let disk = disk_free(&runner, &host.disk_path);
        let services = read_services(&runner, &host.services);
        let crons = futures::future::join_all(
            host.crons
                .iter()
                .map(|cfg| cron_evidence(&runner, host.cron_dir.as_deref(), cfg)),
        );
        let vault = vault::configured_parity(&runner, host.vault.as_ref());
        let (disk_free_bytes, services, crons, vault) = tokio::join!(disk, services, crons, vault);
        HostFacts {
            ram,
            disk_free_bytes,
            services,
            crons,
            vault,
        }
    }
}

/// Runs [`ReadOnlyCommand`]s on a host over ssh, in batch mode with strict host keys.
pub struct SshRunner {
    target: SshTarget,
    timeout: Duration,
    slots: Semaphore,
}

impl SshRunner {
    pub fn new(target: SshTarget, timeout: Duration) -> Self {
        SshRunner {
            target,
            timeout,
            slots: Semaphore::new(MAX_CONNECTIONS_PER_HOST),
        }
    }

    /// The local argv that runs `remote` on the host.
    pub fn ssh_argv(&self, remote: &[String]) -> Vec<String> {
        // ssh's own connect timeout fires a little before our kill, so the reason is ssh's
        // ("Connection timed out") rather than a bare deadline.
        let connect = self.timeout.as_secs().saturating_sub(1).max(1);
        let mut argv: Vec<String> = [
            "ssh",
            "-o",
            "BatchMode=yes",
            "-o",
            "StrictHostKeyChecking=yes",
            "-o",
            // Never write to known_hosts either (the default updates it with the host's other
            // keys after a login).
            "UpdateHostKeys=no",
            "-o",
            // Banners and notices would bury ssh's error line; errors are still printed.
            "LogLevel=ERROR",
            "-o",
        ]
        .map(String::from)
        .to_vec();
        argv.push(format!("ConnectTimeout={connect}"));
        let t = &self.target;
        if let Some(port) = t.port {
            argv.extend(["-p".to_string(), port.to_string()]);
        }
        if let Some(identity) = &t.identity_file {
            argv.extend([
                "-i".to_string(),
                identity.to_string_lossy().into_owned(),
                "-o".to_string(),
                "IdentitiesOnly=yes".to_string(),
            ]);
        }
        if let Some(known) = &t.known_hosts {
            argv.extend([
                "-o".to_string(),
                format!("UserKnownHostsFile={}", known.to_string_lossy()),
            ]);
        }
        argv.extend(["--".to_string(), t.destination.clone()]);
        argv.push(remote_command(remote));
        argv
    }

    fn what(&self) -> String {
        format!("ssh {}", self.target.destination)
    }

    /// Runs `command` on the host as [`Runner::run`] does, its stdout as raw bytes within
    /// `stdout_cap` (an audit log's end, whose bytes are counted as they lie in the file).
    pub async fn run_raw(
        &self,
        command: &ReadOnlyCommand<'_>,
        stdout_cap: usize,
    ) -> Result<RawOutput, ProbeFailure> {
        let argv = self.ssh_argv(&command.argv());
        // Never closed, so acquiring only waits.
        let _slot = self.slots.acquire().await;
        let out = run_argv_raw(&argv, self.timeout, stdout_cap)
            .await
            .map_err(|f| ProbeFailure {
                reason: format!(
                    "{}: {}",
                    self.what(),
                    f.reason.strip_prefix("ssh: ").unwrap_or(&f.reason)
                ),
                ..f
            })?;
        if out.exit_code == Some(255) {
            return Err(ssh_failure(
                &self.target.destination,
                &CommandOutput::from(out),
            ));
        }
        Ok(out)
    }
}

#[async_trait]
impl Runner for SshRunner {
    async fn run(&self, command: &ReadOnlyCommand<'_>) -> Result<CommandOutput, ProbeFailure> {
        self.run_raw(command, MAX_OUTPUT_BYTES)
            .await
            .map(CommandOutput::from)
    }
}

/// The remote shell's command line: through `env`, with the same [`PROBE_ENV`] as
/// [`super::command::run_argv`]
/// sets here (`LC_ALL=C` so messages and `df` columns are the ones parsed here, whatever the
/// login locale; git and ssh never asking, never running an askpass program, never trusting or
/// recording a host key), and each argument single-quoted.
pub fn remote_command(argv: &[String]) -> String {
    let mut line = String::from("env");
    for (name, value) in PROBE_ENV {
        // The names are fixed identifiers; only the values need quoting.
        line.push_str(&format!(" {name}={}", shell_quote(value)));
    }
    for arg in argv {
        line.push(' ');
        line.push_str(&shell_quote(arg));
    }
    line
}

/// Quotes one argument for a POSIX shell: inside single quotes nothing is special but the
/// single quote itself, which is closed, escaped and reopened (`'\''`). Plain words stay bare.
pub fn shell_quote(arg: &str) -> String {
    let plain = |b: u8| b.is_ascii_alphanumeric() || b"-_./:@%+,".contains(&b);
    if !arg.is_empty() && arg.bytes().all(plain) {
        return arg.to_string();
    }
    let mut quoted = String::with_capacity(arg.len() + 2);
    quoted.push('\'');
    for c in arg.chars() {
        if c == '\'' {
            quoted.push_str("'\\''");
        } else {
            quoted.push(c);
        }
    }
    quoted.push('\'');
    quoted
}

/// ssh's own failure (exit 255), classified from what it printed.
pub fn ssh_failure(destination: &str, out: &CommandOutput) -> ProbeFailure {
    let lines: Vec<&str> = out
        .stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.chars().all(|c| c == '@'))
        .collect();
    let find = |needle: &str| lines.iter().copied().find(|l| l.contains(needle));
    let tidy = |line: &str| -> String {
        let line = line.strip_prefix("ssh: ").unwrap_or(line);
        let line = line
            .strip_prefix(destination)
            .and_then(|l| l.strip_prefix(": "))
            .unwrap_or(line);
        // Redacted before the cut, which could leave half a secret no shape matches.
        crate::text::clean(line, 200)
    };
    let (asc, why) = if let Some(line) = find("Host key verification failed") {
        let detail = if out
            .stderr
            .contains("REMOTE HOST IDENTIFICATION HAS CHANGED")
        {
            ": the host's key differs from the one in known_hosts"
        } else if out.stderr.contains("host key is known") {
            ": no key for this host in known_hosts"
        } else {
            ""
        };
        (
            Asc::INTEGRITY_CHECK_FAILED,
            format!("{}{detail}", tidy(line).trim_end_matches('.')),
        )
    } else if let Some(line) = find("Permission denied") {
        (Asc::PERMISSION_DENIED, tidy(line))
    } else if let Some(line) = find("Connection refused") {
        (Asc::DEPENDENCY_UNAVAILABLE, tidy(line))
    } else if let Some(line) = find("timed out") {
        (Asc::TIMEOUT, tidy(line))
    } else if let Some(line) = lines.first() {
        (Asc::DEPENDENCY_UNAVAILABLE, tidy(line))
    } else {
        (
            Asc::DEPENDENCY_UNAVAILABLE,
            "exited 255 without a message".to_string(),
        )
    };
    ProbeFailure::new(asc, format!("ssh {destination}: {why}"))
}

/// A remote command that ran and failed, classified by its message.
pub fn command_failure(what: &str, out: &CommandOutput) -> ProbeFailure {
    let line = out.first_error_line();
    let asc = if line.contains("No such file or directory") {
        Asc::NOT_FOUND
    } else if line.contains("Permission denied") {
        Asc::PERMISSION_DENIED
    } else if out.exit_code == Some(127) {
        Asc::FAILED_PRECONDITION
    } else {
        Asc::DEPENDENCY_UNAVAILABLE
    };
    ProbeFailure::new(asc, format!("{what}: {line}"))
}

fn missing_file(out: &CommandOutput) -> bool {
    !out.success() && out.stderr.contains("No such file or directory")
}

async fn disk_free(runner: &SshRunner, path: &str) -> Result<u64, ProbeFailure> {
    let out = runner.run(&ReadOnlyCommand::DiskFree(path)).await?;
    if !out.success() {
        return Err(command_failure(&format!("df {path}"), &out));
    }
    parse_df_available(&out.stdout).map_err(|f| f.context(&format!("df {path}")))
}

/// The Available column of `df -Pk` (1024-byte blocks), in bytes. POSIX output keeps one line
/// per filesystem; the column is found just before the Capacity percentage so a device name
/// with spaces cannot shift it.
pub fn parse_df_available(text: &str) -> Result<u64, ProbeFailure> {
    let bad = |why: &str| ProbeFailure::new(Asc::INTEGRITY_CHECK_FAILED, why.to_string());
    let line = text
        .lines()
        .skip(1)
        .find(|l| !l.trim().is_empty())
        .ok_or_else(|| bad("no filesystem line in df's output"))?;
    let fields: Vec<&str> = line.split_whitespace().collect();
    let number = |s: &str| s.parse::<u64>().ok();
    let capacity = |s: &str| s == "-" || s.strip_suffix('%').and_then(number).is_some();
    let at = (4..fields.len())
        .find(|&i| capacity(fields[i]) && fields[i - 3..i].iter().all(|f| number(f).is_some()))
        .ok_or_else(|| bad(&format!("unreadable df line: {:?}", line.trim())))?;
    let kib = number(fields[at - 1]).expect("checked above");
    kib.checked_mul(1024)
        .ok_or_else(|| bad("free space overflows 64 bits"))
}

async fn cron_evidence(
    runner: &SshRunner,
    cron_dir: Option<&str>,
    cfg: &CronConfig,
) -> Result<cron::Evidence, ProbeFailure> {
    match &cfg.evidence {
        CronEvidence::Record => {
            let path = cron::configured_record_path(cron_dir, &cfg.name)?;
            let path = path.to_string_lossy();
            let out = runner.run(&ReadOnlyCommand::ReadFile(&path)).await?;
            if missing_file(&out) {
                // Never checked in: the judge says so.
                return Ok(cron::Evidence::default());
            }
            if !out.success() {
                return Err(command_failure(&format!("cat {path}"), &out));
            }
            cron::evidence_from_record(out.stdout.as_bytes()).map_err(|f| f.context(&path))
        }
        CronEvidence::Stamp(stamp) => {
            let out = runner.run(&ReadOnlyCommand::Mtime(stamp)).await?;
            if missing_file(&out) {
                return Ok(cron::Evidence::default());
            }
            if !out.success() {
                return Err(command_failure(&format!("stat {stamp}"), &out));
            }
            let secs = out.stdout.trim();
            let mtime = secs
                .parse::<i64>()
                .ok()
                .and_then(|s| DateTime::from_timestamp(s, 0))
                .ok_or_else(|| {
                    ProbeFailure::new(
                        Asc::INTEGRITY_CHECK_FAILED,
                        format!("stat {stamp}: {secs:?} is not a modification time"),
                    )
                })?;
            Ok(cron::evidence_from_stamp(mtime))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(code: i32, stdout: &str, stderr: &str) -> CommandOutput {
        CommandOutput::exited(code, stdout, stderr)
    }

    /// What `sh -c` makes of a quoted argument, byte for byte.
    fn through_sh(arg: &str) -> String {
        let o = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("printf %s {}", shell_quote(arg)))
            .output()
            .unwrap();
        assert!(o.status.success(), "{arg:?}");
        String::from_utf8(o.stdout).unwrap()
    }

    #[test]
    fn quoting_survives_a_real_shell() {
        for arg in [
            "",
            "plain",
            "/var/lib/fleetdash/crons/backup.json",
            "it's",
            "'",
            "''",
            "a b\tc\nd",
            "$(touch /tmp/pwned) `id` ${HOME} $HOME",
            "\\ \\' \" ; | & < > * ? [a] ~ # !",
            "-n",
            "--",
            "ünïcødé ✓",
        ] {
            assert_eq!(
                through_sh(arg),
                arg,
                "{arg:?} quoted as {}",
                shell_quote(arg)
            );
        }
        assert_eq!(shell_quote("plain-name_1.json"), "plain-name_1.json");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("~"), "'~'");
        assert_eq!(shell_quote("a=b"), "'a=b'");
    }

    /// The `env ...` prefix every remote command carries.
    const REMOTE_ENV: &str = "env LC_ALL=C GIT_TERMINAL_PROMPT=0 \
        GIT_SSH_COMMAND='ssh -o BatchMode=yes -o StrictHostKeyChecking=yes -o UpdateHostKeys=no' \
        GIT_ASKPASS=/bin/false SSH_ASKPASS=/bin/false SSH_ASKPASS_REQUIRE=never";

    #[test]
    fn remote_command_is_one_quoted_line() {
        let argv = ReadOnlyCommand::ReadFile("/tmp/my dir/x'y.json").argv();
        assert_eq!(
            remote_command(&argv),
            format!(r"{REMOTE_ENV} cat -- '/tmp/my dir/x'\''y.json'")
        );
    }

    #[test]
    fn the_remote_shell_gets_the_probe_environment() {
        // What a login shell on the host makes of the line: the command sees every variable.
        let line = remote_command(&["env".to_string()]);
        let o = std::process::Command::new("sh")
            .arg("-c")
            .arg(&line)
            .env_remove("GIT_SSH_COMMAND")
            .env("SSH_ASKPASS", "/usr/bin/ssh-askpass")
            .output()
            .unwrap();
        assert!(o.status.success(), "{line}");
        let env = String::from_utf8(o.stdout).unwrap();
        for (name, value) in PROBE_ENV {
            assert!(
                env.lines().any(|l| l == format!("{name}={value}")),
                "{name} missing from the remote environment:\n{env}"
            );
        }
    }

    #[test]
    fn ssh_argv_has_the_fixed_options() {
        let runner = SshRunner::new(
            SshTarget {
                destination: "ops@lab".into(),
                port: Some(2222),
                identity_file: Some("/keys/id".into()),
                known_hosts: Some("/keys/known_hosts".into()),
            },
            Duration::from_secs(10),
        );
        let argv = runner.ssh_argv(&ReadOnlyCommand::Meminfo.argv());
        assert_eq!(
            argv.join(" "),
            format!(
                "ssh -o BatchMode=yes -o StrictHostKeyChecking=yes -o UpdateHostKeys=no \
             -o LogLevel=ERROR -o ConnectTimeout=9 -p 2222 -i /keys/id -o IdentitiesOnly=yes \
             -o UserKnownHostsFile=/keys/known_hosts -- ops@lab {REMOTE_ENV} cat /proc/meminfo"
            )
        );
    }

    /// Was: ssh's line and a remote command's first stderr line were cut to 200 characters
    /// before anything redacted them, so a key straddling the cut left a piece no secret shape
    /// matches, and that piece reached the snapshot (issue 21).
    #[test]
    fn a_key_straddling_the_reasons_bound_is_redacted_before_the_cut() {
        let key = "xsk-proj-PLANTEDabcdefghijklmnop0123456789";
        // The key starts at character 185 of the line: 15 of it fit before the cut.
        let line = format!("Connection refused {} {key}", "p".repeat(165));
        for reason in [
            ssh_failure("h", &out(255, "", &format!("{line}\n"))).reason,
            command_failure("df /", &out(1, "", &format!("{line}\n"))).reason,
        ] {
            assert!(
                !reason.contains("PLANTED") && !reason.contains("sk-proj"),
                "{reason}"
            );
            assert!(reason.contains(crate::redact::REDACTED), "{reason}");
        }
    }

    #[test]
    fn ssh_failures_are_classified() {
        let f = ssh_failure(
            "root@127.0.0.1",
            &out(
                255,
                "",
                "root@127.0.0.1: Permission denied (publickey).\r\n",
            ),
        );
        assert_eq!(f.asc, Asc::PERMISSION_DENIED);
        assert_eq!(
            f.reason,
            "ssh root@127.0.0.1: Permission denied (publickey)."
        );
        let changed = "@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\n\
                       @    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @\n\
                       @@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\n\
                       IT IS POSSIBLE THAT SOMEONE IS DOING SOMETHING NASTY!\n\
                       Host key for [127.0.0.1]:2222 has changed and you have requested strict checking.\n\
                       Host key verification failed.\n";
        let f = ssh_failure("h", &out(255, "", changed));
        assert_eq!(f.asc, Asc::INTEGRITY_CHECK_FAILED);
        assert_eq!(
            f.reason,
            "ssh h: Host key verification failed: the host's key differs from the one in known_hosts"
        );
        let f = ssh_failure(
            "h",
            &out(
                255,
                "",
                "No ED25519 host key is known for [127.0.0.1]:2222 and you have requested strict checking.\nHost key verification failed.\n",
            ),
        );
        assert!(
            f.reason.ends_with("no key for this host in known_hosts"),
            "{}",
            f.reason
        );
        let f = ssh_failure(
            "h",
            &out(
                255,
                "",
                "ssh: connect to host 127.0.0.1 port 1: Connection refused\n",
            ),
        );
        assert_eq!(f.asc, Asc::DEPENDENCY_UNAVAILABLE);
        assert_eq!(
            f.reason,
            "ssh h: connect to host 127.0.0.1 port 1: Connection refused"
        );
        let f = ssh_failure(
            "h",
            &out(
                255,
                "",
                "ssh: connect to host 10.0.0.1 port 22: Connection timed out\n",
            ),
        );
        assert_eq!(f.asc, Asc::TIMEOUT);
        let f = ssh_failure("h", &out(255, "", ""));
        assert_eq!(f.reason, "ssh h: exited 255 without a message");
    }

    #[test]
    fn df_available_column() {
        let text = "Filesystem     1024-blocks     Used Available Capacity Mounted on\n\
                    /dev/vda         264212084 13984832  81301056      15% /\n";
        assert_eq!(parse_df_available(text).unwrap(), 81_301_056 * 1024);
        // A device name with spaces, a mount point with spaces.
        let text = "Filesystem 1024-blocks Used Available Capacity Mounted on\n\
                    my nas:/share 100 40 60 40% /mnt/my share\n";
        assert_eq!(parse_df_available(text).unwrap(), 60 * 1024);
        assert!(parse_df_available("Filesystem 1024-blocks\n").is_err());
        assert!(parse_df_available("h\n/dev/x a b c 1% /\n").is_err());
    }
}

//! The fixed, read-only command set a host probe may run, and the runners that run it here or
//! on a host over SSH.
//!
//! Probes never build shell strings from config: each command is an [`ReadOnlyCommand`] whose
//! argv is fixed but for validated names and paths, passed as separate arguments after `--`.
//! Every run has a deadline and an output ceiling, and is killed when either is exceeded.

use std::process::Stdio;
use std::time::Duration;

use async_trait::async_trait;
use fleetdash_model::Asc;
use tokio::io::AsyncReadExt;

use crate::net::ProbeFailure;

/// At most this much of a command's stdout or stderr is kept; a command that says more is
/// refused, not truncated silently.
pub const MAX_OUTPUT_BYTES: usize = 256 * 1024;

/// One of the commands a host probe may run. Nothing here writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadOnlyCommand<'a> {
    /// `cat /proc/meminfo`
    Meminfo,
    /// `df -Pk -- PATH`
    DiskFree(&'a str),
    /// `systemctl is-active -- UNIT...`
    IsActive(&'a [String]),
    /// `cat -- PATH`
    ReadFile(&'a str),
    /// `stat -c %Y -- PATH`
    Mtime(&'a str),
    /// `git -C PATH rev-parse HEAD`
    GitHead(&'a str),
    /// `git -C PATH symbolic-ref --short HEAD`
    GitBranch(&'a str),
    /// `git --no-optional-locks -C PATH status --porcelain`: without the option, status
    /// refreshes `.git/index` (taking `index.lock`), a write to the checkout it only observes.
    GitStatus(&'a str),
    /// `git -C PATH ls-remote -- REMOTE REF`
    GitLsRemote {
        path: &'a str,
        remote: &'a str,
        reference: &'a str,
    },
}

impl ReadOnlyCommand<'_> {
    pub fn argv(&self) -> Vec<String> {
        let v = |parts: &[&str]| parts.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        match self {
            ReadOnlyCommand::Meminfo => v(&["cat", "/proc/meminfo"]),
            ReadOnlyCommand::DiskFree(p) => v(&["df", "-Pk", "--", p]),
            ReadOnlyCommand::IsActive(units) => {
                let mut a = v(&["systemctl", "is-active", "--"]);
                a.extend(units.iter().cloned());
                a
            }
            ReadOnlyCommand::ReadFile(p) => v(&["cat", "--", p]),
            ReadOnlyCommand::Mtime(p) => v(&["stat", "-c", "%Y", "--", p]),
            ReadOnlyCommand::GitHead(p) => v(&["git", "-C", p, "rev-parse", "HEAD"]),
            ReadOnlyCommand::GitBranch(p) => {
                v(&["git", "-C", p, "symbolic-ref", "--short", "HEAD"])
            }
            ReadOnlyCommand::GitStatus(p) => v(&[
                "git",
                "--no-optional-locks",
                "-C",
                p,
                "status",
                "--porcelain",
            ]),
            ReadOnlyCommand::GitLsRemote {
                path,
                remote,
                reference,
            } => v(&["git", "-C", path, "ls-remote", "--", remote, reference]),
        }
    }
}

/// What a finished command printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandOutput {
    /// `None` when killed by a signal.
    pub exit_code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl CommandOutput {
    pub fn success(&self) -> bool {
        self.exit_code == Some(0)
    }

    /// The first line of stderr, for a reason ("fatal: not a git repository ...").
    pub fn first_error_line(&self) -> String {
        self.stderr
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("no message")
            .chars()
            .take(200)
            .collect()
    }
}

/// Runs a [`ReadOnlyCommand`] somewhere: here, or on a host over SSH.
#[async_trait]
pub trait Runner: Send + Sync {
    /// `Err` only when the command could not be run or finished (not found, timed out, too
    /// much output, SSH failed); a command that ran and failed is `Ok` with its exit code.
    async fn run(&self, command: &ReadOnlyCommand<'_>) -> Result<CommandOutput, ProbeFailure>;
}

/// The environment every probe command runs with, here and (through `env`) on an SSH host:
/// git and ssh never stop to ask anything, never run an askpass program (a desktop session's
/// would pop up a dialog, or answer), and ssh under git never trusts a new host key or
/// records one (`StrictHostKeyChecking=yes`, `UpdateHostKeys=no`); `LC_ALL=C` so messages and
/// columns are the ones parsed here, whatever the locale.
pub const PROBE_ENV: &[(&str, &str)] = &[
    ("LC_ALL", "C"),
    ("GIT_TERMINAL_PROMPT", "0"),
    (
        "GIT_SSH_COMMAND",
        "ssh -o BatchMode=yes -o StrictHostKeyChecking=yes -o UpdateHostKeys=no",
    ),
    ("GIT_ASKPASS", "/bin/false"),
    ("SSH_ASKPASS", "/bin/false"),
    // OpenSSH 8.4 and later; older ones ignore it (and BatchMode keeps them from asking).
    ("SSH_ASKPASS_REQUIRE", "never"),
];

/// Runs commands on this machine.
#[derive(Debug, Clone)]
pub struct LocalRunner {
    pub timeout: Duration,
}

#[async_trait]
impl Runner for LocalRunner {
    async fn run(&self, command: &ReadOnlyCommand<'_>) -> Result<CommandOutput, ProbeFailure> {
        run_argv(&command.argv(), self.timeout).await
    }
}

/// Runs `argv` with no stdin, a deadline and an output ceiling; kills it on either.
pub async fn run_argv(argv: &[String], timeout: Duration) -> Result<CommandOutput, ProbeFailure> {
    let (program, args) = argv
        .split_first()
        .ok_or_else(|| ProbeFailure::new(Asc::INTERNAL_ERROR, "empty command"))?;
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        // Git and ssh must never stop to ask anything.
        .envs(PROBE_ENV.iter().copied())
        .spawn()
        .map_err(|e| {
            let asc = if e.kind() == std::io::ErrorKind::NotFound {
                Asc::FAILED_PRECONDITION
            } else {
                Asc::INTERNAL_ERROR
            };
            ProbeFailure::new(asc, format!("cannot run {program}: {e}"))
        })?;
    let mut stdout = child.stdout.take().expect("piped stdout");
    let mut stderr = child.stderr.take().expect("piped stderr");
    let work = async {
        let mut out = Vec::new();
        let mut err = Vec::new();
        let limit = MAX_OUTPUT_BYTES as u64 + 1;
        let mut stdout = (&mut stdout).take(limit);
        let mut stderr = (&mut stderr).take(limit);
        let (o, e) = tokio::join!(stdout.read_to_end(&mut out), stderr.read_to_end(&mut err));
        o.and(e).map_err(|e| {
            ProbeFailure::new(
                Asc::INTERNAL_ERROR,
                format!("{program}: cannot read output: {e}"),
            )
        })?;
        if out.len() > MAX_OUTPUT_BYTES || err.len() > MAX_OUTPUT_BYTES {
            return Err(ProbeFailure::new(
                Asc::RESOURCE_EXHAUSTED,
                format!("{program}: more than {MAX_OUTPUT_BYTES} bytes of output, refused"),
            ));
        }
        let status = child
            .wait()
            .await
            .map_err(|e| ProbeFailure::new(Asc::INTERNAL_ERROR, format!("{program}: {e}")))?;
        Ok(CommandOutput {
            exit_code: status.code(),
            stdout: String::from_utf8_lossy(&out).into_owned(),
            stderr: String::from_utf8_lossy(&err).into_owned(),
        })
    };
    match tokio::time::timeout(timeout, work).await {
        Ok(result) => result,
        Err(_) => Err(ProbeFailure::new(
            Asc::TIMEOUT,
            format!(
                "{program}: no answer within {}",
                humantime::format_duration(timeout)
            ),
        )),
    }
}

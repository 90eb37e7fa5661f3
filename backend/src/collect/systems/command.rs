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
use rustix::process::{Pid, Signal, kill_process_group};
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
    /// `git -C PATH remote`: the checkout's remotes, one name a line.
    GitRemotes(&'a str),
    /// `git -C PATH ls-remote -- REMOTE REF`
    GitLsRemote {
        path: &'a str,
        remote: &'a str,
        reference: &'a str,
    },
    /// The last `bytes` of an audit log at `path`, its `.1` rotation before them when the log
    /// is shorter ([`AUDIT_TAIL_SCRIPT`]): `sh -c SCRIPT sh BYTES PATH`.
    AuditTail { path: &'a str, bytes: u64 },
}

/// What [`ReadOnlyCommand::AuditTail`] runs: fixed text, its two arguments positional (`$1` the
/// byte budget, `$2` the log's path), so nothing of the config is ever read as shell. It only
/// tests, counts and reads: `wc -c` (the current file's size), then `tail -c` of the `.1`
/// rotation (what the budget leaves after the current file and one newline) and of the current
/// file, so the output is the end of the log in file order, at most the budget (a file growing
/// meanwhile may add what it grew by), the rotation's last line never joined to the current
/// file's first. Exit 3: neither file exists; exit 2 or tail's own: one could not be read
/// (the shell's or tail's message on stderr).
pub const AUDIT_TAIL_SCRIPT: &str = "b=$1 f=$2 c=0; \
    if [ -e \"$f\" ]; then c=$(wc -c < \"$f\") || exit 2; elif [ ! -e \"$f.1\" ]; then exit 3; fi; \
    r=$((b - c - 1)); \
    if [ \"$r\" -gt 0 ] && [ -e \"$f.1\" ]; then tail -c \"$r\" -- \"$f.1\" || exit 2; echo; fi; \
    if [ -e \"$f\" ]; then tail -c \"$b\" -- \"$f\"; fi";

/// [`AUDIT_TAIL_SCRIPT`]'s exit status when neither the log nor its `.1` exists.
pub const AUDIT_TAIL_NOT_FOUND: i32 = 3;

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
            ReadOnlyCommand::GitRemotes(p) => v(&["git", "-C", p, "remote"]),
            ReadOnlyCommand::GitLsRemote {
                path,
                remote,
                reference,
            } => v(&["git", "-C", path, "ls-remote", "--", remote, reference]),
            ReadOnlyCommand::AuditTail { path, bytes } => v(&[
                "sh",
                "-c",
                AUDIT_TAIL_SCRIPT,
                "sh",
                &bytes.to_string(),
                path,
            ]),
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
    /// A command that exited with `code`, printing `stdout` and `stderr` (for tests).
    #[cfg(test)]
    pub(crate) fn exited(code: i32, stdout: &str, stderr: &str) -> CommandOutput {
        CommandOutput {
            exit_code: Some(code),
            stdout: stdout.into(),
            stderr: stderr.into(),
        }
    }

    pub fn success(&self) -> bool {
        self.exit_code == Some(0)
    }

    /// The first line of stderr, for a reason ("fatal: not a git repository ..."): redacted,
    /// then cut to 200 characters ([`crate::text::clean`]), so a cut never leaves half a
    /// secret that no shape matches any more.
    pub fn first_error_line(&self) -> String {
        let line = self
            .stderr
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("no message");
        crate::text::clean(line, 200)
    }
}

/// What a finished command printed, its stdout as raw bytes (an audit log's end is not text
/// to be made valid UTF-8: its offsets matter).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawOutput {
    /// `None` when killed by a signal.
    pub exit_code: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

impl RawOutput {
    pub fn success(&self) -> bool {
        self.exit_code == Some(0)
    }
}

impl From<RawOutput> for CommandOutput {
    fn from(raw: RawOutput) -> CommandOutput {
        CommandOutput {
            exit_code: raw.exit_code,
            stdout: String::from_utf8_lossy(&raw.stdout).into_owned(),
            stderr: raw.stderr,
        }
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
///
/// [`run_argv_raw`] with stdout within [`MAX_OUTPUT_BYTES`], read as text.
pub async fn run_argv(argv: &[String], timeout: Duration) -> Result<CommandOutput, ProbeFailure> {
    run_argv_raw(argv, timeout, MAX_OUTPUT_BYTES)
        .await
        .map(CommandOutput::from)
}

/// Runs `argv` with no stdin, a deadline and an output ceiling (`stdout_cap` bytes of stdout,
/// [`MAX_OUTPUT_BYTES`] of stderr); kills it on either.
///
/// The command runs in a process group of its own, and the whole group is killed on the
/// deadline or the ceiling (or when this future is dropped first): a shell's children, or
/// ssh under git, die with it instead of living on. More than the ceiling on stdout or stderr
/// is refused as soon as it is read, without waiting for the command to finish.
pub async fn run_argv_raw(
    argv: &[String],
    timeout: Duration,
    stdout_cap: usize,
) -> Result<RawOutput, ProbeFailure> {
    let (program, args) = argv
        .split_first()
        .ok_or_else(|| ProbeFailure::new(Asc::INTERNAL_ERROR, "empty command"))?;
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .process_group(0)
        // Git and ssh must never stop to ask anything.
        .envs(PROBE_ENV.iter().copied())
        // systemd's notify socket is fleetdash's alone: systemd's own tools (systemctl) send
        // ERRNO= to it when they fail.
        .env_remove("NOTIFY_SOCKET")
        .env_remove("WATCHDOG_USEC")
        .env_remove("WATCHDOG_PID")
        .spawn()
        .map_err(|e| {
            let asc = if e.kind() == std::io::ErrorKind::NotFound {
                Asc::FAILED_PRECONDITION
            } else {
                Asc::INTERNAL_ERROR
            };
            ProbeFailure::new(asc, format!("cannot run {program}: {e}"))
        })?;
    // Declared after the child, so dropped before it: the group dies while its leader is
    // still unreaped and its id cannot have been reused.
    let mut group = GroupKiller::of(&child);
    let mut stdout = child.stdout.take().expect("piped stdout");
    let mut stderr = child.stderr.take().expect("piped stderr");
    let work = async {
        // The first stream over the ceiling ends both reads at once.
        let (out, err) = tokio::try_join!(
            read_capped(&mut stdout, program, stdout_cap),
            read_capped(&mut stderr, program, MAX_OUTPUT_BYTES)
        )?;
        let status = child
            .wait()
            .await
            .map_err(|e| ProbeFailure::new(Asc::INTERNAL_ERROR, format!("{program}: {e}")))?;
        Ok(RawOutput {
            exit_code: status.code(),
            stdout: out,
            stderr: String::from_utf8_lossy(&err).into_owned(),
        })
    };
    let result = match tokio::time::timeout(timeout, work).await {
        Ok(result) => result,
        Err(_) => Err(ProbeFailure::new(
            Asc::TIMEOUT,
            format!(
                "{program}: no answer within {}",
                humantime::format_duration(timeout)
            ),
        )),
    };
    if result.is_ok() {
        // The leader was reaped: its id may be reused from now on, so never signal it again.
        group.disarm();
    }
    // Otherwise `group` kills the whole group here, and dropping `child` lets tokio reap it
    // (never waited for: a process stuck in the kernel, on a hung mount, may not die at once).
    result
}

/// Reads `stream` to its end, refusing it once it says more than `cap` bytes.
async fn read_capped(
    stream: &mut (impl tokio::io::AsyncRead + Unpin),
    program: &str,
    cap: usize,
) -> Result<Vec<u8>, ProbeFailure> {
    let mut bytes = Vec::new();
    // One byte past the ceiling is enough to know, and ends the read without waiting for EOF.
    stream
        .take(cap as u64 + 1)
        .read_to_end(&mut bytes)
        .await
        .map_err(|e| {
            ProbeFailure::new(
                Asc::INTERNAL_ERROR,
                format!("{program}: cannot read output: {e}"),
            )
        })?;
    if bytes.len() > cap {
        return Err(ProbeFailure::new(
            Asc::RESOURCE_EXHAUSTED,
            format!("{program}: more than {cap} bytes of output, refused"),
        ));
    }
    Ok(bytes)
}

/// SIGKILLs a child's process group (the child leads it: `process_group(0)`) when dropped,
/// unless disarmed once the child has been reaped.
struct GroupKiller(Option<Pid>);

impl GroupKiller {
    fn of(child: &tokio::process::Child) -> GroupKiller {
        GroupKiller(
            child
                .id()
                .and_then(|id| i32::try_from(id).ok())
                .and_then(Pid::from_raw),
        )
    }

    fn disarm(&mut self) {
        self.0 = None;
    }
}

impl Drop for GroupKiller {
    fn drop(&mut self) {
        if let Some(pgid) = self.0.take() {
            // ESRCH: the group is already gone.
            let _ = kill_process_group(pgid, Signal::KILL);
        }
    }
}

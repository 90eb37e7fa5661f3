//! An agent's audit log on another machine, read through that host's `ssh` source: in a real
//! fleet the agents sit behind SSH tunnels and their `a2a_audit.jsonl` is on their own host,
//! where the hub cannot open it (issue 43).
//!
//! One bounded read-only command ([`ReadOnlyCommand::AuditTail`]) over the host's ssh
//! ([`SshRunner`]: BatchMode, strict host keys, the host's command timeout, the process group
//! killed on the deadline) brings back at most `[probe] audit_tail_max_bytes` of the log's end,
//! its `.1` rotation before it when the current file is shorter. The parser of a local log
//! ([`audit_tail::last_exchange_in`]) finds the last exchange in those bytes on a blocking
//! thread, and they are dropped: only the timestamp and the task ids leave. A read that fails
//! (ssh refused, a host key refused, no answer in time, no such file) is the agent's last
//! exchange as an error naming the host and the path, never an unknown.

use fleetdash_model::Asc;

use super::audit_tail::{self, AuditTail, Head};
use crate::collect::systems::command::{AUDIT_TAIL_NOT_FOUND, CommandOutput, ReadOnlyCommand};
use crate::collect::systems::ssh::{SshRunner, command_failure};
use crate::net::ProbeFailure;

/// Where a remote log is, as its reasons name it: "audit log PATH on HOST".
pub fn place(host: &str, path: &str) -> String {
    format!("audit log {path} on {host}")
}

/// The newest successful exchange in the audit log at `path` on `host` (its name in
/// `[[hosts]]`), read through `runner` within `budget` bytes; the collector's own probes
/// (`collector_peer`) are not exchanges.
pub async fn last_exchange(
    runner: &SshRunner,
    host: &str,
    path: &str,
    budget: u64,
    collector_peer: &str,
) -> Result<AuditTail, ProbeFailure> {
    let place = place(host, path);
    let budget = usize::try_from(budget).unwrap_or(usize::MAX);
    // A file that grows between its size and its tail adds what it grew by, up to the budget
    // again: refused beyond that, and what is over the budget is not read.
    let cap = budget.saturating_mul(2).saturating_add(1);
    let command = ReadOnlyCommand::AuditTail {
        path,
        bytes: budget as u64,
    };
    let out = runner
        .run_raw(&command, cap)
        .await
        .map_err(|f| f.context(&place))?;
    if out.exit_code == Some(AUDIT_TAIL_NOT_FOUND) {
        return Err(ProbeFailure::new(
            Asc::NOT_FOUND,
            format!("{place}: not found (nor its .1)"),
        ));
    }
    if !out.success() {
        // Only stderr is looked at: the log's bytes are never part of a reason.
        let message = CommandOutput {
            exit_code: out.exit_code,
            stdout: String::new(),
            stderr: out.stderr,
        };
        return Err(command_failure(&place, &message));
    }
    let bytes = out.stdout;
    // Less than the budget: the whole of the log (the `.1` too, when there is one) came back.
    let head = if bytes.len() < budget {
        Head::StartsTheLog
    } else {
        Head::InsideTheLog
    };
    let collector_peer = collector_peer.to_string();
    tokio::task::spawn_blocking(move || {
        let from = bytes.len().saturating_sub(budget);
        audit_tail::last_exchange_in(&bytes[from..], head, &collector_peer)
    })
    .await
    .map_err(|e| ProbeFailure::new(Asc::INTERNAL_ERROR, format!("{place}: reader failed: {e}")))
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::time::Duration;

    use super::*;
    use crate::collect::systems::command::run_argv_raw;

    /// The command as the remote shell runs it, here: what ssh would carry back.
    async fn tail(path: &Path, budget: u64) -> (Option<i32>, Vec<u8>, String) {
        let path = path.to_string_lossy();
        let argv = ReadOnlyCommand::AuditTail {
            path: &path,
            bytes: budget,
        }
        .argv();
        let out = run_argv_raw(&argv, Duration::from_secs(60), 1 << 20)
            .await
            .unwrap();
        (out.exit_code, out.stdout, out.stderr)
    }

    #[tokio::test]
    async fn the_command_sends_the_end_of_the_log_in_file_order_within_the_budget() {
        let dir = tempfile::tempdir().unwrap();
        // A name the remote shell would mangle if it were read as shell.
        let log = dir.path().join("it's a $(log) `x`.jsonl");
        let rotated = audit_tail::rotated_path(&log);
        std::fs::write(&rotated, "r1\nr2\n").unwrap();
        std::fs::write(&log, "c1\nc2").unwrap();
        // Room for both: the `.1`, a newline, the current file; less than the budget, so all.
        assert_eq!(
            tail(&log, 100).await,
            (Some(0), b"r1\nr2\n\nc1\nc2".to_vec(), String::new())
        );
        // The budget cuts into the `.1`: exactly the budget, the current file whole.
        assert_eq!(tail(&log, 8).await.1, b"2\n\nc1\nc2".to_vec());
        // The current file alone fills it.
        assert_eq!(tail(&log, 3).await.1, b"\nc2".to_vec());
        // No `.1`: the current file.
        std::fs::remove_file(&rotated).unwrap();
        assert_eq!(tail(&log, 100).await.1, b"c1\nc2".to_vec());
        // Only the `.1` (just rotated): it, and a newline.
        std::fs::rename(&log, &rotated).unwrap();
        assert_eq!(tail(&log, 100).await.1, b"c1\nc2\n".to_vec());
        // Neither: its own exit status.
        std::fs::remove_file(&rotated).unwrap();
        assert_eq!(tail(&log, 100).await.0, Some(AUDIT_TAIL_NOT_FOUND));
        // A folder in its place: a failure with the shell's words.
        std::fs::create_dir(&log).unwrap();
        let (code, stdout, stderr) = tail(&log, 100).await;
        assert!(
            code.is_some_and(|c| c != 0 && c != AUDIT_TAIL_NOT_FOUND),
            "{code:?}"
        );
        assert!(stdout.is_empty());
        assert!(stderr.contains("Is a directory"), "{stderr}");
    }
}

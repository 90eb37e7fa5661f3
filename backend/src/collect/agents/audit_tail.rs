//! Last successful exchange from an agent's `a2a_audit.jsonl`, read from the end.
//!
//! An exchange is the agent's own work with another peer: the collector's own probes (its
//! heartbeats, recorded with the collector's identity as `peer`) are not exchanges, or an agent
//! nobody else talks to would look busy for ever. The log is append-only and rotates at 2 MiB to `.1`, but nothing stops it from growing, so
//! the cost must not depend on its size: blocks are read backwards from the end until a line
//! that records a successful exchange turns up, up to a byte budget. Only the timestamp leaves
//! this module; summaries (which may hold secrets), peers, ips and decisions are never copied.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::Deserialize;

const BLOCK: usize = 64 * 1024;

/// What the tail read found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AuditTail {
    /// Unix seconds of the newest successful exchange, if any was found within the budget.
    pub last_exchange_ts: Option<f64>,
    /// Lines that were not a JSON object with a numeric `ts` (skipped, counted).
    pub skipped_lines: u64,
    /// Bytes read, for the benchmark.
    pub bytes_read: u64,
    /// Task ids on the lines read (newest first, at most [`MAX_TASK_IDS`]): candidates for the
    /// live-task poll. Only the ids: nothing else of those lines is kept.
    pub task_ids: Vec<String>,
    /// Lines passed over because the collector itself was the peer (its own probes).
    pub collector_lines: u64,
}

/// The most task ids taken from one tail read.
pub const MAX_TASK_IDS: usize = 32;

/// Only the fields that decide whether a line is a successful exchange.
#[derive(Deserialize)]
struct Line {
    ts: f64,
    /// Any JSON: a `peer` of an unexpected type is simply not the collector.
    #[serde(default)]
    peer: Option<serde_json::Value>,
    #[serde(default)]
    task_id: Option<String>,
    #[serde(default)]
    decision: Option<String>,
    #[serde(default)]
    status: Option<serde_json::Value>,
}

impl Line {
    /// The collector's own probe, recorded under its identity.
    fn is_from(&self, collector_peer: &str) -> bool {
        self.peer
            .as_ref()
            .and_then(serde_json::Value::as_str)
            .is_some_and(|p| p == collector_peer)
    }

    /// A rejected or failed exchange is not contact with the agent's peer.
    fn is_success(&self) -> bool {
        if self
            .decision
            .as_deref()
            .is_some_and(|d| d.starts_with("rejected"))
        {
            return false;
        }
        match &self.status {
            Some(serde_json::Value::Number(n)) => n.as_u64().is_some_and(|s| s < 400),
            _ => true,
        }
    }
}

/// Searches `path` and then its rotation `path.1`, reading at most `budget` bytes in all, for
/// the newest successful exchange whose peer is not `collector_peer`.
pub fn last_exchange(path: &Path, budget: u64, collector_peer: &str) -> io::Result<AuditTail> {
    let mut total = AuditTail::default();
    let rotated = rotated_path(path);
    let mut found_any_file = false;
    for candidate in [path.to_path_buf(), rotated] {
        let file = match File::open(&candidate) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("{}: {e}", candidate.display()),
                ));
            }
        };
        found_any_file = true;
        let tail = scan_backwards(
            file,
            budget.saturating_sub(total.bytes_read),
            collector_peer,
        )?;
        total.skipped_lines += tail.skipped_lines;
        total.bytes_read += tail.bytes_read;
        total.collector_lines += tail.collector_lines;
        for id in tail.task_ids {
            if total.task_ids.len() < MAX_TASK_IDS && !total.task_ids.contains(&id) {
                total.task_ids.push(id);
            }
        }
        if tail.last_exchange_ts.is_some() {
            total.last_exchange_ts = tail.last_exchange_ts;
            break;
        }
        if total.bytes_read >= budget {
            break;
        }
    }
    if !found_any_file {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("{} not found", path.display()),
        ));
    }
    Ok(total)
}

/// Ids as the audit log writes them: up to 128 printable characters (or `sha256:<16 hex>`).
fn is_task_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 128 && id.chars().all(|c| c.is_ascii_graphic())
}

/// Where a log rotated at its bound goes: `<file>.1`, as the A2A audit log does (reference
/// a2a-audit-log.md). Fleetdash's own escalation log rotates the same way.
pub fn rotated_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".1");
    PathBuf::from(s)
}

fn scan_backwards(mut file: File, budget: u64, collector_peer: &str) -> io::Result<AuditTail> {
    let len = file.seek(SeekFrom::End(0))?;
    let mut out = AuditTail::default();
    let floor = len.saturating_sub(budget);
    let mut pos = len;
    // Bytes of the (possibly partial) line that starts before the block just read.
    let mut carry: Vec<u8> = Vec::new();
    let mut block = vec![0u8; BLOCK];
    while pos > floor {
        let start = pos.saturating_sub(BLOCK as u64).max(floor);
        let n = (pos - start) as usize;
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut block[..n])?;
        out.bytes_read += n as u64;
        pos = start;

        let mut chunk = block[..n].to_vec();
        chunk.extend_from_slice(&carry);
        // Every line after the first newline is complete; the head waits for the next block
        // unless we reached the start of the file.
        let head_end = if pos == 0 {
            0
        } else {
            match chunk.iter().position(|&b| b == b'\n') {
                Some(i) => i + 1,
                None => {
                    carry = chunk;
                    continue;
                }
            }
        };
        for line in chunk[head_end..].rsplit(|&b| b == b'\n') {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match serde_json::from_slice::<Line>(line) {
                Ok(l) if l.ts.is_finite() => {
                    if let Some(id) = l.task_id.as_ref().filter(|id| is_task_id(id))
                        && out.task_ids.len() < MAX_TASK_IDS
                        && !out.task_ids.contains(id)
                    {
                        out.task_ids.push(id.clone());
                    }
                    if l.is_from(collector_peer) {
                        out.collector_lines += 1;
                    } else if l.is_success() {
                        out.last_exchange_ts = Some(l.ts);
                        return Ok(out);
                    }
                }
                _ => out.skipped_lines += 1,
            }
        }
        carry = chunk[..head_end].to_vec();
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn write(path: &Path, lines: &[&str]) {
        let mut f = File::create(path).unwrap();
        for l in lines {
            writeln!(f, "{l}").unwrap();
        }
    }

    #[test]
    fn finds_the_newest_successful_line_skipping_rejections_and_garbage() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a2a_audit.jsonl");
        write(
            &p,
            &[
                r#"{"ts": 100.5, "direction": "inbound", "summary": "old"}"#,
                r#"{"ts": 200.0, "direction": "outbound", "status": 200}"#,
                r#"{"ts": 300.0, "direction": "inbound", "decision": "rejected_bad_token"}"#,
                "not json at all",
                r#"{"ts": "yesterday"}"#,
                r#"{"ts": 400.0, "status": 500}"#,
            ],
        );
        let tail = last_exchange(&p, 1 << 20, "fleetdash").unwrap();
        assert_eq!(tail.last_exchange_ts, Some(200.0));
        assert_eq!(tail.skipped_lines, 2);
        assert!(tail.task_ids.is_empty());
    }

    #[test]
    fn the_collectors_own_probes_are_not_exchanges() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a2a_audit.jsonl");
        write(
            &p,
            &[
                r#"{"ts": 100.0, "direction": "inbound", "peer": "min", "task_id": "t_1"}"#,
                r#"{"ts": 200.0, "direction": "inbound", "peer": "fleetdash", "task_id": "t_2"}"#,
                r#"{"ts": 250.0, "direction": "inbound", "peer": 7}"#,
                r#"{"ts": 300.0, "direction": "inbound", "peer": "fleetdash"}"#,
                r#"{"ts": 400.0, "direction": "inbound", "peer": "watch"}"#,
            ],
        );
        let tail = last_exchange(&p, 1 << 20, "fleetdash").unwrap();
        assert_eq!(tail.last_exchange_ts, Some(400.0));
        assert_eq!(tail.collector_lines, 0);

        // The same log, judged for a collector known as "watch": its line is passed over,
        // and so are those of no one else.
        let tail = last_exchange(&p, 1 << 20, "watch").unwrap();
        assert_eq!(tail.last_exchange_ts, Some(300.0));
        assert_eq!(tail.collector_lines, 1);

        // Only the collector's lines after the last exchange: the exchange is older, and the
        // task ids of the lines read are still candidates.
        write(
            &p,
            &[
                r#"{"ts": 100.0, "direction": "inbound", "peer": "min", "task_id": "t_1"}"#,
                r#"{"ts": 200.0, "direction": "inbound", "peer": "fleetdash", "task_id": "t_2"}"#,
                r#"{"ts": 300.0, "direction": "outbound", "peer": "fleetdash", "status": 200}"#,
            ],
        );
        let tail = last_exchange(&p, 1 << 20, "fleetdash").unwrap();
        assert_eq!(tail.last_exchange_ts, Some(100.0));
        assert_eq!(tail.collector_lines, 2);
        assert_eq!(tail.task_ids, ["t_2", "t_1"]);
        assert_eq!(tail.skipped_lines, 0);

        // Nothing but the collector's probes: no exchange at all.
        write(
            &p,
            &[r#"{"ts": 300.0, "direction": "inbound", "peer": "fleetdash"}"#],
        );
        let tail = last_exchange(&p, 1 << 20, "fleetdash").unwrap();
        assert_eq!((tail.last_exchange_ts, tail.collector_lines), (None, 1));
    }

    #[test]
    fn falls_back_to_the_rotated_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a2a_audit.jsonl");
        write(
            &p,
            &[r#"{"ts": 9.0, "decision": "rejected_untrusted_peer"}"#],
        );
        write(&rotated_path(&p), &[r#"{"ts": 5.0}"#, r#"{"ts": 7.0}"#]);
        assert_eq!(
            last_exchange(&p, 1 << 20, "fleetdash")
                .unwrap()
                .last_exchange_ts,
            Some(7.0)
        );
        std::fs::remove_file(&p).unwrap();
        assert_eq!(
            last_exchange(&p, 1 << 20, "fleetdash")
                .unwrap()
                .last_exchange_ts,
            Some(7.0)
        );
    }

    #[test]
    fn lines_spanning_block_boundaries_are_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a2a_audit.jsonl");
        let pad = "x".repeat(BLOCK - 10);
        let good = format!(r#"{{"ts": 42.0, "summary": "{pad}"}}"#);
        let bad = format!(r#"{{"ts": 43.0, "decision": "rejected_x", "summary": "{pad}"}}"#);
        write(&p, &[&good, &bad, &bad]);
        let tail = last_exchange(&p, 1 << 30, "fleetdash").unwrap();
        assert_eq!(tail.last_exchange_ts, Some(42.0));
        assert_eq!(tail.skipped_lines, 0);
    }

    #[test]
    fn the_budget_bounds_the_bytes_read() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a2a_audit.jsonl");
        let mut lines = vec![r#"{"ts": 1.0}"#.to_string()];
        lines.extend(
            (0..10_000).map(|_| r#"{"ts": 2.0, "decision": "rejected_bad_token"}"#.to_string()),
        );
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        write(&p, &refs);
        let tail = last_exchange(&p, 4096, "fleetdash").unwrap();
        assert_eq!(tail.last_exchange_ts, None);
        assert!(tail.bytes_read <= 4096, "{}", tail.bytes_read);
    }

    #[test]
    fn a_missing_log_is_an_error_naming_the_file() {
        let err =
            last_exchange(Path::new("/nonexistent/a2a_audit.jsonl"), 100, "fleetdash").unwrap_err();
        assert!(err.to_string().contains("/nonexistent/a2a_audit.jsonl"));
    }
}

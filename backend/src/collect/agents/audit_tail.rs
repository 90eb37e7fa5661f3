//! Last successful exchange from an agent's `a2a_audit.jsonl`, read from the end.
//!
//! An exchange is the agent's own work with another peer: the collector's own probes (its
//! heartbeats, recorded with the collector's identity as `peer`) are not exchanges, or an agent
//! nobody else talks to would look busy for ever. The log is append-only and rotates at 2 MiB
//! to `.1`, but nothing stops it from growing, so the cost must not depend on its size: blocks
//! are read backwards from the end until a line that records a successful exchange turns up,
//! up to a byte budget.
//!
//! One parser serves both readers: [`last_exchange`] reads a log on this machine (the file,
//! then its `.1`), [`last_exchange_in`] the end of one another host sent over ssh
//! (`audit_remote`). Each line is judged where it lies ([`LineSeed`]): only the timestamp and a
//! task id leave this module; summaries (which may hold secrets), peers, ips and decisions are
//! compared in place and never copied.

use std::fmt;
use std::fs::File;
use std::io::{self, Cursor, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

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

/// What one line says, and all that is kept of it.
#[derive(Debug, PartialEq)]
struct Judged {
    ts: f64,
    /// The collector's own probe, recorded under its identity (`peer` equal to it).
    from_collector: bool,
    /// Neither rejected (`decision` starting "rejected") nor failed (`status` 400 or above).
    success: bool,
    /// A well-formed `task_id` ([`is_task_id`]), copied; another is not.
    task_id: Option<String>,
}

/// Judges one line (a JSON object) without copying anything but a well-formed task id: the
/// peer is compared with `collector_peer`, the decision and status are looked at, and every
/// other field (the summary above all) is skipped unread. What a line must be is what it was
/// when it was read into a struct: a numeric `ts`; `task_id` and `decision` strings or null;
/// `peer` and `status` any JSON; no field twice.
struct LineSeed<'p> {
    collector_peer: &'p str,
}

impl<'de> DeserializeSeed<'de> for LineSeed<'_> {
    type Value = Judged;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Judged, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for LineSeed<'_> {
    type Value = Judged;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an audit line: a JSON object with a numeric ts")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Judged, A::Error> {
        let mut ts = None;
        let mut peer = None;
        let mut task_id = None;
        let mut decision = None;
        let mut status = None;
        fn once<T, E: de::Error>(slot: &mut Option<T>, name: &'static str, v: T) -> Result<(), E> {
            if slot.replace(v).is_some() {
                return Err(E::duplicate_field(name));
            }
            Ok(())
        }
        let collector = self.collector_peer;
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::Ts => once::<_, A::Error>(&mut ts, "ts", map.next_value::<f64>()?)?,
                Key::Peer => {
                    let v = map.next_value_seed(Judge(|p: &str| p == collector))?;
                    once::<_, A::Error>(&mut peer, "peer", matches!(v, Json::Str(true)))?;
                }
                Key::TaskId => {
                    let v = map.next_value_seed(Judge(|id: &str| {
                        is_task_id(id).then(|| id.to_string())
                    }))?;
                    once::<_, A::Error>(
                        &mut task_id,
                        "task_id",
                        v.string_or_null::<A::Error>("task_id")?,
                    )?;
                }
                Key::Decision => {
                    let v = map.next_value_seed(Judge(|d: &str| d.starts_with("rejected")))?;
                    once::<_, A::Error>(
                        &mut decision,
                        "decision",
                        v.string_or_null::<A::Error>("decision")?,
                    )?;
                }
                Key::Status => {
                    // An HTTP status under 400; any other number is a failure, and anything
                    // that is not a number says nothing.
                    let ok = match map.next_value_seed(Judge(|_: &str| ()))? {
                        Json::Unsigned(s) => s < 400,
                        Json::OtherNumber => false,
                        _ => true,
                    };
                    once::<_, A::Error>(&mut status, "status", ok)?;
                }
                Key::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let ts = ts.ok_or_else(|| de::Error::missing_field("ts"))?;
        let rejected = decision.flatten().unwrap_or(false);
        Ok(Judged {
            ts,
            from_collector: peer.unwrap_or(false),
            success: !rejected && status.unwrap_or(true),
            task_id: task_id.flatten().flatten(),
        })
    }
}

/// The fields a line is judged by; every other is skipped.
enum Key {
    Ts,
    Peer,
    TaskId,
    Decision,
    Status,
    Other,
}

impl<'de> de::Deserialize<'de> for Key {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a field name")
            }
            fn visit_str<E: de::Error>(self, k: &str) -> Result<Key, E> {
                Ok(match k {
                    "ts" => Key::Ts,
                    "peer" => Key::Peer,
                    "task_id" => Key::TaskId,
                    "decision" => Key::Decision,
                    "status" => Key::Status,
                    _ => Key::Other,
                })
            }
        }
        d.deserialize_identifier(KeyVisitor)
    }
}

/// A field's value as far as it matters: a string only through what `Judge`'s function made
/// of it (borrowed from the line or serde_json's scratch, never kept), anything else by its
/// kind, skipped through.
enum Json<T> {
    Str(T),
    Unsigned(u64),
    OtherNumber,
    Null,
    Other,
}

impl<T> Json<T> {
    /// `task_id` and `decision` are strings or null; anything else makes the line unreadable.
    fn string_or_null<E: de::Error>(self, field: &str) -> Result<Option<T>, E> {
        match self {
            Json::Str(v) => Ok(Some(v)),
            Json::Null => Ok(None),
            _ => Err(E::custom(format!("{field} is neither a string nor null"))),
        }
    }
}

/// Reads one value, handing a string to the function in place.
struct Judge<F>(F);

impl<'de, T, F: FnOnce(&str) -> T> DeserializeSeed<'de> for Judge<F> {
    type Value = Json<T>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Json<T>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, T, F: FnOnce(&str) -> T> Visitor<'de> for Judge<F> {
    type Value = Json<T>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Json<T>, E> {
        Ok(Json::Str((self.0)(v)))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Json<T>, E> {
        Ok(Json::Unsigned(v))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Json<T>, E> {
        Ok(Json::OtherNumber)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Json<T>, E> {
        Ok(Json::OtherNumber)
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Json<T>, E> {
        Ok(Json::Other)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Json<T>, E> {
        Ok(Json::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Json<T>, E> {
        Ok(Json::Null)
    }
    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<Json<T>, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json<T>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Json::Other)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json<T>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Json::Other)
    }
}

/// One line judged, or `None` when it is not an audit line (or its `ts` is not finite).
fn judge(line: &[u8], collector_peer: &str) -> Option<Judged> {
    let mut json = serde_json::Deserializer::from_slice(line);
    let judged = LineSeed { collector_peer }.deserialize(&mut json).ok()?;
    // Nothing but whitespace after the object.
    json.end().ok()?;
    judged.ts.is_finite().then_some(judged)
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
            Head::StartsTheLog,
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

/// Where the first byte handed to the parser lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Head {
    /// At the start of the log: the first line is whole.
    StartsTheLog,
    /// Somewhere inside it (the read was cut at the budget): the first line may be a piece of
    /// one, and is left unread, as a file read backwards leaves the line across its budget.
    InsideTheLog,
}

/// Searches `bytes`, the end of a log as it lies on its host (its `.1` rotation first when
/// the read reached into it, then the current file), for the newest successful exchange whose
/// peer is not `collector_peer`: the same search as [`last_exchange`] makes in a file.
pub fn last_exchange_in(bytes: &[u8], head: Head, collector_peer: &str) -> AuditTail {
    scan_backwards(Cursor::new(bytes), u64::MAX, collector_peer, head)
        .expect("reading a slice cannot fail")
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

/// The parser: `log` read backwards from its end in blocks, at most `budget` bytes, each line
/// judged newest first until a successful exchange turns up. Memory: one block and the line
/// that straddles it.
fn scan_backwards(
    mut log: impl Read + Seek,
    budget: u64,
    collector_peer: &str,
    head: Head,
) -> io::Result<AuditTail> {
    let len = log.seek(SeekFrom::End(0))?;
    let mut out = AuditTail::default();
    let floor = len.saturating_sub(budget);
    let mut pos = len;
    // Bytes of the (possibly partial) line that starts before the block just read.
    let mut carry: Vec<u8> = Vec::new();
    let mut block = vec![0u8; BLOCK.min(usize::try_from(len - floor).unwrap_or(BLOCK))];
    while pos > floor {
        let start = pos.saturating_sub(BLOCK as u64).max(floor);
        let n = (pos - start) as usize;
        log.seek(SeekFrom::Start(start))?;
        log.read_exact(&mut block[..n])?;
        out.bytes_read += n as u64;
        pos = start;

        let mut chunk = block[..n].to_vec();
        chunk.extend_from_slice(&carry);
        // Every line after the first newline is complete; the head waits for the next block
        // unless we reached the start of the log.
        let head_end = if pos == 0 && head == Head::StartsTheLog {
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
            match judge(line, collector_peer) {
                Some(l) => {
                    if let Some(id) = l.task_id
                        && out.task_ids.len() < MAX_TASK_IDS
                        && !out.task_ids.contains(&id)
                    {
                        out.task_ids.push(id);
                    }
                    if l.from_collector {
                        out.collector_lines += 1;
                    } else if l.success {
                        out.last_exchange_ts = Some(l.ts);
                        return Ok(out);
                    }
                }
                None => out.skipped_lines += 1,
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

    /// Each line judged alone, as the parser sees it.
    fn one(line: &str) -> Option<Judged> {
        judge(line.as_bytes(), "fleetdash")
    }

    #[test]
    fn a_line_is_judged_in_place_as_the_struct_read_it() {
        let exchange = |ts| {
            Some(Judged {
                ts,
                from_collector: false,
                success: true,
                task_id: None,
            })
        };
        // Every other field is skipped unread, whatever it holds.
        assert_eq!(
            one(r#"{"summary": {"nested": [1, {"a": "b"}], "s": "x\"y"}, "ts": 1, "peer": null}"#),
            exchange(1.0)
        );
        // The peer is compared as JSON reads it, escapes and all; another type is no one.
        assert!(
            one(r#"{"ts": 1.0, "peer": "fleet\u0064ash"}"#)
                .unwrap()
                .from_collector
        );
        assert!(
            !one(r#"{"ts": 1.0, "peer": "fleetdash2"}"#)
                .unwrap()
                .from_collector
        );
        assert_eq!(one(r#"{"ts": 1.0, "peer": ["fleetdash"]}"#), exchange(1.0));
        // A status under 400 succeeded; any other number failed; a non-number says nothing.
        assert!(one(r#"{"ts": 1.0, "status": 399}"#).unwrap().success);
        assert!(!one(r#"{"ts": 1.0, "status": 400}"#).unwrap().success);
        assert!(!one(r#"{"ts": 1.0, "status": 200.0}"#).unwrap().success);
        assert!(!one(r#"{"ts": 1.0, "status": -1}"#).unwrap().success);
        assert!(one(r#"{"ts": 1.0, "status": "500"}"#).unwrap().success);
        assert!(one(r#"{"ts": 1.0, "status": null}"#).unwrap().success);
        assert!(
            !one(r#"{"ts": 1.0, "decision": "rejected_bad_token"}"#)
                .unwrap()
                .success
        );
        assert!(
            one(r#"{"ts": 1.0, "decision": "accepted"}"#)
                .unwrap()
                .success
        );
        assert!(one(r#"{"ts": 1.0, "decision": null}"#).unwrap().success);
        // Only a well-formed task id is kept.
        assert_eq!(
            one(r#"{"ts": 1.0, "task_id": "t_1"}"#).unwrap().task_id,
            Some("t_1".to_string())
        );
        let long = format!(r#"{{"ts": 1.0, "task_id": "{}"}}"#, "x".repeat(129));
        assert_eq!(one(&long), exchange(1.0));
        assert_eq!(one(r#"{"ts": 1.0, "task_id": "a b"}"#), exchange(1.0));
        // Not an audit line: no numeric ts, a field twice, a task id or decision of another
        // type, anything after the object, not an object.
        for bad in [
            r#"{"direction": "inbound"}"#,
            r#"{"ts": "yesterday"}"#,
            r#"{"ts": null}"#,
            r#"{"ts": 1.0, "ts": 2.0}"#,
            r#"{"ts": 1.0, "peer": "a", "peer": "b"}"#,
            r#"{"ts": 1.0, "task_id": 7}"#,
            r#"{"ts": 1.0, "decision": true}"#,
            r#"{"ts": 1.0} {"ts": 2.0}"#,
            r#"{"ts": 1.0"#,
            "[1.0]",
            "1.0",
            "",
        ] {
            assert_eq!(one(bad), None, "{bad}");
        }
        // Trailing whitespace (a CR of a CRLF line) is no harm.
        assert_eq!(one("{\"ts\": 1.0}\r"), exchange(1.0));
    }

    #[test]
    fn the_bytes_of_a_remote_log_are_read_as_its_file_is() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a2a_audit.jsonl");
        let rotated = [
            r#"{"ts": 5.0, "peer": "min", "task_id": "t_old"}"#,
            r#"{"ts": 6.0, "peer": "fleetdash", "task_id": "t_probe"}"#,
        ];
        let current = [
            r#"{"ts": 7.0, "decision": "rejected_untrusted_peer", "task_id": "t_no"}"#,
            "garbage",
            r#"{"ts": 8.0, "peer": "fleetdash", "task_id": "t_probe"}"#,
        ];
        write(&rotated_path(&p), &rotated);
        write(&p, &current);
        let local = last_exchange(&p, 1 << 20, "fleetdash").unwrap();
        // What the remote read sends: the `.1` first, a newline, then the current file.
        let bytes = format!("{}\n\n{}\n", rotated.join("\n"), current.join("\n"));
        let remote = last_exchange_in(bytes.as_bytes(), Head::StartsTheLog, "fleetdash");
        assert_eq!(local.last_exchange_ts, Some(5.0));
        assert_eq!(
            (
                remote.last_exchange_ts,
                &remote.task_ids,
                remote.collector_lines,
                remote.skipped_lines
            ),
            (
                local.last_exchange_ts,
                &local.task_ids,
                local.collector_lines,
                local.skipped_lines
            )
        );
        assert_eq!(remote.task_ids, ["t_probe", "t_no", "t_old"]);
        assert_eq!((remote.collector_lines, remote.skipped_lines), (2, 1));
        // A line longer than a block, across the blocks, in bytes as in a file.
        let pad = "x".repeat(BLOCK + 10);
        let long = format!(
            "{{\"ts\": 42.0, \"summary\": \"{pad}\"}}\n{{\"ts\": 43.0, \"status\": 500}}\n"
        );
        let tail = last_exchange_in(long.as_bytes(), Head::StartsTheLog, "fleetdash");
        assert_eq!((tail.last_exchange_ts, tail.skipped_lines), (Some(42.0), 0));
    }

    #[test]
    fn a_read_cut_inside_the_log_leaves_its_first_line_unread() {
        // The first line is whole here, but a read cut at the budget cannot know that: a
        // piece of a line is never taken for one.
        let bytes = b"{\"ts\": 5.0}\n{\"ts\": 6.0, \"decision\": \"rejected_x\"}\n";
        let cut = last_exchange_in(bytes, Head::InsideTheLog, "fleetdash");
        assert_eq!((cut.last_exchange_ts, cut.skipped_lines), (None, 0));
        let whole = last_exchange_in(bytes, Head::StartsTheLog, "fleetdash");
        assert_eq!(whole.last_exchange_ts, Some(5.0));
        // Without a newline at all, nothing is a whole line.
        let piece = last_exchange_in(b"{\"ts\": 5.0}", Head::InsideTheLog, "fleetdash");
        assert_eq!(
            piece,
            AuditTail {
                bytes_read: 11,
                ..AuditTail::default()
            }
        );
        assert_eq!(
            last_exchange_in(b"", Head::StartsTheLog, "fleetdash"),
            AuditTail::default()
        );
    }

    #[test]
    fn a_missing_log_is_an_error_naming_the_file() {
        let err =
            last_exchange(Path::new("/nonexistent/a2a_audit.jsonl"), 100, "fleetdash").unwrap_err();
        assert!(err.to_string().contains("/nonexistent/a2a_audit.jsonl"));
    }
}

//! The journal's native protocol (systemd-journald.service(8), "native protocol"): under a unit
//! whose stderr is the journal, each event reaches journald as fields of its own, so
//! `journalctl -u fleetdash -o json` and `journalctl AGENT_STATUS_CODE=5003` see
//! `agent.status.code` as `AGENT_STATUS_CODE`, not buried in one line of text.
//!
//! Written by hand, small: tracing-journald writes to the socket itself, past the redaction
//! gate; here the entry is made from the event's JSON after the gate has been through it.

use std::io::Write;
use std::os::unix::net::UnixDatagram;
use std::sync::OnceLock;

use serde_json::{Map, Value};

/// journald's socket for native entries.
pub const SOCKET: &str = "/run/systemd/journal/socket";

/// What every entry is filed under (`journalctl -t fleetdash`).
const IDENTIFIER: &str = "fleetdash";

/// Whether stderr is the journal: systemd sets `JOURNAL_STREAM` to the device and inode of the
/// stream it connects (systemd.exec(5)); a stderr redirected elsewhere by the unit or a shell no
/// longer matches them.
pub fn stderr_is_journal() -> bool {
    let Ok(stream) = std::env::var("JOURNAL_STREAM") else {
        return false;
    };
    let Some((dev, ino)) = stream.split_once(':') else {
        return false;
    };
    let (Ok(dev), Ok(ino)) = (dev.parse::<u64>(), ino.parse::<u64>()) else {
        return false;
    };
    rustix::fs::fstat(std::io::stderr()).is_ok_and(|stat| stat.st_dev == dev && stat.st_ino == ino)
}

/// Sends one event (the formatter's JSON object, already through the gate) to journald.
pub fn send(event: &Map<String, Value>) -> std::io::Result<()> {
    static SOCKET_OUT: OnceLock<std::io::Result<UnixDatagram>> = OnceLock::new();
    let socket = SOCKET_OUT
        .get_or_init(UnixDatagram::unbound)
        .as_ref()
        .map_err(|e| std::io::Error::new(e.kind(), e.to_string()))?;
    socket.send_to(&entry(event), SOCKET).map(drop)
}

/// The datagram for one event: MESSAGE, PRIORITY from the level, TARGET, SYSLOG_IDENTIFIER, and
/// every field of the event under its journal name. The formatter's timestamp is left out:
/// journald stamps each entry itself.
pub fn entry(event: &Map<String, Value>) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    put(&mut out, "SYSLOG_IDENTIFIER", IDENTIFIER);
    for (key, value) in event {
        let text = match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        match key.as_str() {
            "timestamp" => {}
            "message" => put(&mut out, "MESSAGE", &text),
            "level" => put(&mut out, "PRIORITY", priority(&text)),
            "target" => put(&mut out, "TARGET", &text),
            _ => {
                if let Some(name) = field_name(key) {
                    put(&mut out, &name, &text);
                }
            }
        }
    }
    out
}

/// syslog's priority for a tracing level (3 err, 4 warning, 6 info, 7 debug).
fn priority(level: &str) -> &'static str {
    match level {
        "ERROR" => "3",
        "WARN" => "4",
        "INFO" => "6",
        _ => "7",
    }
}

/// The journal's name for an event field: upper case, `_` for anything but letters and digits,
/// no leading `_` or digit (those are journald's trusted fields, refused from clients), at most
/// 64 bytes. A name the journal gives a meaning of its own is kept apart under `FIELD_`.
fn field_name(key: &str) -> Option<String> {
    let mut name: String = key
        .chars()
        .map(|c| match c {
            'a'..='z' => c.to_ascii_uppercase(),
            'A'..='Z' | '0'..='9' => c,
            _ => '_',
        })
        .collect();
    name = name
        .trim_start_matches(|c: char| c == '_' || c.is_ascii_digit())
        .to_string();
    if name.is_empty() {
        return None;
    }
    const THE_JOURNALS_OWN: &[&str] = &[
        "MESSAGE",
        "MESSAGE_ID",
        "PRIORITY",
        "TARGET",
        "SYSLOG_IDENTIFIER",
        "SYSLOG_FACILITY",
        "SYSLOG_PID",
        "SYSLOG_TIMESTAMP",
        "CODE_FILE",
        "CODE_LINE",
        "CODE_FUNC",
        "ERRNO",
        "TID",
        "UNIT",
        "USER_UNIT",
        "INVOCATION_ID",
        "DOCUMENTATION",
    ];
    if THE_JOURNALS_OWN.contains(&name.as_str()) {
        name.insert_str(0, "FIELD_");
    }
    name.truncate(64);
    Some(name)
}

/// One field: `NAME=value\n`, or, for a value with a newline in it, the protocol's binary form
/// (the name, a newline, the value's length as a little-endian u64, the value, a newline).
fn put(out: &mut Vec<u8>, name: &str, value: &str) {
    if value.contains('\n') {
        out.extend_from_slice(name.as_bytes());
        out.push(b'\n');
        out.extend_from_slice(&(value.len() as u64).to_le_bytes());
        out.extend_from_slice(value.as_bytes());
        out.push(b'\n');
    } else {
        let _ = writeln!(out, "{name}={value}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => unreachable!(),
        }
    }

    #[test]
    fn an_events_fields_become_journal_fields() {
        let entry = entry(&event(serde_json::json!({
            "timestamp": "2026-01-01T00:00:00Z",
            "level": "WARN",
            "target": "fleetdash::write::transitions",
            "message": "agent went silent",
            "agent.status.code": 5003,
            "agent.status.name": "AGENT_UNREACHABLE",
            "_PID": 1,
            "priority": "high",
        })));
        let text = String::from_utf8(entry).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for want in [
            "SYSLOG_IDENTIFIER=fleetdash",
            "MESSAGE=agent went silent",
            "PRIORITY=4",
            "TARGET=fleetdash::write::transitions",
            "AGENT_STATUS_CODE=5003",
            "AGENT_STATUS_NAME=AGENT_UNREACHABLE",
            // journald's own fields cannot be forged by an event, nor clobbered.
            "PID=1",
            "FIELD_PRIORITY=high",
        ] {
            assert!(lines.contains(&want), "{want} not in {lines:?}");
        }
        assert!(
            !text.contains("2026-01-01"),
            "journald stamps entries itself: {text}"
        );
        assert!(!text.contains("_PID=1"), "{text}");
    }

    #[test]
    fn a_value_with_a_newline_is_sent_in_the_binary_form() {
        let entry = entry(&event(serde_json::json!({"message": "two\nlines"})));
        let mut want = b"SYSLOG_IDENTIFIER=fleetdash\nMESSAGE\n".to_vec();
        want.extend_from_slice(&9u64.to_le_bytes());
        want.extend_from_slice(b"two\nlines\n");
        assert_eq!(entry, want);
    }

    #[test]
    fn field_names_are_the_journals_shape() {
        assert_eq!(
            field_name("agent.status.code").as_deref(),
            Some("AGENT_STATUS_CODE")
        );
        assert_eq!(field_name("__x").as_deref(), Some("X"));
        assert_eq!(field_name("9lives").as_deref(), Some("LIVES"));
        assert_eq!(field_name("_"), None);
        assert_eq!(field_name(&"a".repeat(100)).map(|n| n.len()), Some(64));
    }
}

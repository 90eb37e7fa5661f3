//! The log: stderr, filtered by `FLEETDASH_LOG`, coloured only on a terminal, and every line
//! through the redaction gate before it is written. `FLEETDASH_LOG_FORMAT=json` makes it one
//! JSON object per line for log shippers (journald → Loki, Vector, ...): the event's fields
//! flattened beside `timestamp`, `level`, `target` and `message`. Under a systemd unit (stderr
//! is the journal) the same events go to journald with their fields as journal fields
//! ([`journal`]), unless `FLEETDASH_LOG_FORMAT` asks for text or json.
//!
//! A log line is an output like status.json. Other crates log too (reqwest and hyper print the
//! addresses they connect to at debug and trace), so the gate guards the writer, not each call:
//! secret shapes from the first line on, and the exact secrets of the config (peer tokens, URL
//! passwords) once it is loaded ([`guard_config_secrets`]).

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{LazyLock, RwLock};

use tracing_subscriber::fmt::MakeWriter;

use crate::config::Config;
use crate::redact::RedactionGate;

mod journal;

static GATE: LazyLock<RwLock<RedactionGate>> =
    LazyLock::new(|| RwLock::new(RedactionGate::default()));

/// Whether lines are JSON objects (then the gate redacts each string in them, so a redaction
/// never breaks the JSON a shipper parses).
static JSON: AtomicBool = AtomicBool::new(false);

/// Whether those JSON objects go to journald as entries rather than to stderr as lines.
static JOURNAL: AtomicBool = AtomicBool::new(false);

/// The environment variable that picks the format: `text` (the default) or `json`.
pub const FORMAT_VAR: &str = "FLEETDASH_LOG_FORMAT";

/// The log's line format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
    /// Entries with fields, to journald (the default when stderr is the journal).
    Journal,
}

impl Format {
    /// The format `FLEETDASH_LOG_FORMAT` asks for, else the journal's when stderr is the
    /// journal, else text; an unknown value is an error naming it.
    pub fn from_env() -> Result<Format, String> {
        let under_journald = journal::stderr_is_journal();
        match std::env::var(FORMAT_VAR) {
            Err(_) if under_journald => Ok(Format::Journal),
            Err(_) => Ok(Format::Text),
            Ok(v) => match v.trim().to_ascii_lowercase().as_str() {
                "" | "text" => Ok(Format::Text),
                "json" => Ok(Format::Json),
                "journal" => Ok(Format::Journal),
                _ => Err(format!(
                    "{FORMAT_VAR}={v:?} is no log format: use text (the default), json or \
                     journal; logging as {}",
                    if under_journald { "journal" } else { "text" }
                )),
            },
        }
    }
}

/// Installs the subscriber: `FLEETDASH_LOG` (any `tracing` filter, default `info`) to stderr,
/// in the format `FLEETDASH_LOG_FORMAT` names. Colour codes only when stderr is a terminal: in
/// a file, a pipe or the journal they are noise.
pub fn init() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("FLEETDASH_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let (format, mistake) = match Format::from_env() {
        Ok(format) => (format, None),
        Err(why) if journal::stderr_is_journal() => (Format::Journal, Some(why)),
        Err(why) => (Format::Text, Some(why)),
    };
    match format {
        Format::Text => tracing_subscriber::fmt()
            .with_writer(GatedStderr)
            .with_ansi(std::io::stderr().is_terminal())
            .with_env_filter(filter)
            .init(),
        Format::Json | Format::Journal => {
            JSON.store(true, Ordering::Relaxed);
            JOURNAL.store(format == Format::Journal, Ordering::Relaxed);
            tracing_subscriber::fmt()
                .json()
                .flatten_event(true)
                .with_current_span(false)
                .with_span_list(false)
                .with_writer(GatedStderr)
                .with_env_filter(filter)
                .init()
        }
    }
    if let Some(why) = mistake {
        tracing::warn!("{why}");
    }
}

/// From now on the log also redacts the exact secrets `config` points at ([`Config::secrets`]),
/// the same the files are guarded from.
pub fn guard_config_secrets(config: &Config) {
    *GATE
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner()) = config.gate();
}

/// The text as the log may show it.
pub fn redact(text: &str) -> String {
    GATE.read()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .redact_str(text)
        .into_owned()
}

/// `value` with every string in it (keys included) through the gate: JSON that stays JSON, for
/// the log's JSON lines and the CLI's `--json` envelopes alike.
pub fn redact_json(value: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::String(s) => Value::String(redact(&s)),
        Value::Array(items) => Value::Array(items.into_iter().map(redact_json).collect()),
        Value::Object(fields) => Value::Object(
            fields
                .into_iter()
                .map(|(k, v)| (redact(&k), redact_json(v)))
                .collect(),
        ),
        other => other,
    }
}

/// Hands the formatter a fresh buffer per event; the event reaches stderr, gated, when the
/// buffer is dropped (one `write_all`, so lines from several threads never interleave).
struct GatedStderr;

impl<'a> MakeWriter<'a> for GatedStderr {
    type Writer = GatedLine;

    fn make_writer(&'a self) -> GatedLine {
        GatedLine(Vec::new())
    }
}

struct GatedLine(Vec<u8>);

impl Write for GatedLine {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for GatedLine {
    fn drop(&mut self) {
        if self.0.is_empty() {
            return;
        }
        let line = String::from_utf8_lossy(&self.0);
        if JOURNAL.load(Ordering::Relaxed) && to_journal(&line) {
            return;
        }
        let clean = if JSON.load(Ordering::Relaxed) {
            gated_json_line(&line)
        } else {
            gated_line(&line)
        };
        // Nowhere to report a failed write to stderr.
        let _ = std::io::stderr().lock().write_all(clean.as_bytes());
    }
}

/// Sends the formatter's JSON line to journald, through the gate first; false when it cannot
/// (not JSON, or journald not listening), and then the line goes to stderr, which is the
/// journal too, as one line of text.
fn to_journal(line: &str) -> bool {
    gated_event(line).is_some_and(|event| journal::send(&event).is_ok())
}

/// The formatter's JSON line as an event's fields, every string through the gate.
fn gated_event(line: &str) -> Option<serde_json::Map<String, serde_json::Value>> {
    let event: serde_json::Value = serde_json::from_str(line.trim_end()).ok()?;
    match redact_json(event) {
        serde_json::Value::Object(event) => Some(event),
        _ => None,
    }
}

/// A formatted line as the log may show it. On a terminal the formatter has put colour codes
/// between a field's name and its value (`\x1b[3mpassword\x1b[0m\x1b[2m=\x1b[0m...`), which would
/// hide a `password=...` shape from the gate: the gate judges the line without them, and a line
/// that needs redacting loses its colours.
fn gated_line(line: &str) -> String {
    static COLOUR: LazyLock<regex::Regex> =
        LazyLock::new(|| regex::Regex::new("\x1b\\[[0-9;]*m").expect("valid"));
    if !line.contains('\x1b') {
        return redact(line);
    }
    let plain = COLOUR.replace_all(line, "");
    let gated = redact(&plain);
    if gated == plain { redact(line) } else { gated }
}

/// A JSON line as the log may show it: every string in it (keys included) through the gate, so
/// the line stays one valid object whatever the gate replaces. A line that is not JSON (none
/// should be) is gated as text.
fn gated_json_line(line: &str) -> String {
    match serde_json::from_str::<serde_json::Value>(line.trim_end()) {
        Ok(value) => {
            let mut out = redact_json(value).to_string();
            out.push('\n');
            out
        }
        Err(_) => redact(line),
    }
}

/// Collects what `tracing` logs while `f` runs (for tests that check what is said).
#[cfg(test)]
pub(crate) fn logs_of<T>(f: impl FnOnce() -> T) -> (T, String) {
    #[derive(Clone, Default)]
    struct Buf(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
    impl Write for Buf {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let buf = Buf::default();
    let writer = buf.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let out = tracing::subscriber::with_default(subscriber, f);
    let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
    (out, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_codes_cannot_hide_a_secret_from_the_gate() {
        let coloured = "\x1b[3mpassword\x1b[0m\x1b[2m=\x1b[0mhunter2hunter2 \x1b[2mdone\x1b[0m\n";
        let line = gated_line(coloured);
        assert!(!line.contains("hunter2"), "{line:?}");
        // A line with nothing to hide keeps its colours.
        let plain = "\x1b[2mcollected\x1b[0m section=agents\n";
        assert_eq!(gated_line(plain), plain);
    }

    /// A secret inside a JSON line is redacted and the line is still one JSON object: the gate
    /// on the raw line could eat an escaped quote and break it.
    #[test]
    fn a_json_line_stays_json_when_a_secret_is_redacted() {
        let raw = serde_json::json!({
            "level": "WARN",
            "message": "peer said \"password=hunter2hunter2\" and left",
            "agent.status.code": 5003,
            "url": "http://admin:hunter2@127.0.0.1:9/",
        })
        .to_string()
            + "\n";
        let line = gated_json_line(&raw);
        assert!(line.ends_with('\n'));
        assert!(!line.contains("hunter2"), "{line}");
        let parsed: serde_json::Value = serde_json::from_str(&line).expect("still JSON");
        assert_eq!(parsed["agent.status.code"], 5003);
        assert_eq!(parsed["level"], "WARN");
    }

    /// What journald gets passed the same gate: no secret in any field of the entry.
    #[test]
    fn a_journal_entry_is_made_from_the_gated_event() {
        let raw = serde_json::json!({
            "level": "WARN",
            "message": "peer said password=hunter2hunter2",
            "url": "http://admin:hunter2@127.0.0.1:9/",
            "agent.status.code": 5003,
        })
        .to_string();
        let entry = journal::entry(&gated_event(&raw).expect("a JSON object"));
        let text = String::from_utf8(entry).unwrap();
        assert!(!text.contains("hunter2"), "{text}");
        assert!(text.contains("AGENT_STATUS_CODE=5003\n"), "{text}");
        assert!(gated_event("not json").is_none());
    }

    #[test]
    fn a_line_with_credentials_in_a_url_is_redacted() {
        let line = redact("starting new connection: http://admin:hunter2@127.0.0.1:9/\n");
        assert!(!line.contains("hunter2"), "{line}");
        assert!(line.ends_with('\n'));
    }
}

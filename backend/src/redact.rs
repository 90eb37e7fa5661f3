//! The redaction gate: the one place every byte passes before a writer puts it on disk.
//!
//! Spec §6.6: no tokens, keys, JWTs, credentials or raw audit events on the dashboard. The
//! collectors already copy only structured slices, never message text or audit summaries; this
//! gate is the second wall. Every string in the snapshot (and every projected card text) is
//! scanned for secret shapes and for the exact secrets the collector itself loaded (peer tokens),
//! and each hit is replaced by [`REDACTED`].

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::{Regex, RegexSet};
use serde::Serialize;
use serde_json::Value;

pub const REDACTED: &str = "[redacted]";

/// Secret shapes. Each pattern is one kind of secret, named for the reader.
const SECRET_PATTERNS: &[(&str, &str)] = &[
    (
        "jwt",
        r"eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*",
    ),
    ("bearer token", r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{8,}"),
    ("basic auth header", r"(?i)\bbasic\s+[A-Za-z0-9+/=]{12,}"),
    (
        "credentials in a URL",
        r"(?i)\b[a-z][a-z0-9+.-]*://[^\s/@:]*:[^\s/@]*@",
    ),
    (
        "0x-prefixed 64-hex hash (tx hash, private key)",
        r"\b0x[0-9a-fA-F]{64}\b",
    ),
    ("OpenAI/Anthropic-style key", r"\bsk-[A-Za-z0-9_-]{16,}"),
    ("GitHub token", r"\bgh[pousr]_[A-Za-z0-9]{30,}"),
    (
        "GitHub fine-grained token",
        r"\bgithub_pat_[A-Za-z0-9_]{30,}",
    ),
    ("GitLab token", r"\bglpat-[A-Za-z0-9_-]{20,}"),
    ("AWS access key id", r"\b(AKIA|ASIA)[0-9A-Z]{16}\b"),
    ("Google API key", r"\bAIza[0-9A-Za-z_-]{35}"),
    ("Slack token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    ("Telegram bot token", r"\b\d{8,10}:[A-Za-z0-9_-]{35}\b"),
    ("PEM private key", r"-----BEGIN [A-Z ]*PRIVATE KEY-----"),
    (
        "key=value secret",
        r#"(?i)\b(api[_-]?key|access[_-]?token|auth[_-]?token|secret|password|passwd|token)\s*[:=]\s*["']?[^\s"',;]{6,}"#,
    ),
];

static PATTERNS: LazyLock<(RegexSet, Vec<Regex>)> = LazyLock::new(|| {
    let sources: Vec<&str> = SECRET_PATTERNS.iter().map(|(_, p)| *p).collect();
    let set = RegexSet::new(&sources).expect("secret patterns compile");
    let each = sources
        .iter()
        .map(|p| Regex::new(p).expect("secret pattern compiles"))
        .collect();
    (set, each)
});

/// The gate. Cheap to clone; holds the exact secrets this process loaded.
#[derive(Debug, Clone, Default)]
pub struct RedactionGate {
    known_secrets: Vec<String>,
}

impl RedactionGate {
    /// `known_secrets` are values the collector holds (peer tokens): they are redacted wherever
    /// they appear, whatever their shape. Values too short to be meaningful are ignored.
    pub fn new(known_secrets: impl IntoIterator<Item = String>) -> Self {
        let mut known_secrets: Vec<String> =
            known_secrets.into_iter().filter(|s| s.len() >= 6).collect();
        known_secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        known_secrets.dedup();
        RedactionGate { known_secrets }
    }

    /// The text with every secret replaced.
    pub fn redact_str<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let (set, each) = &*PATTERNS;
        let mut out = Cow::Borrowed(text);
        for secret in &self.known_secrets {
            if out.contains(secret.as_str()) {
                out = Cow::Owned(out.replace(secret.as_str(), REDACTED));
            }
        }
        let hits = set.matches(&out);
        if !hits.matched_any() {
            return out;
        }
        let mut owned = out.into_owned();
        for i in hits.iter() {
            owned = each[i].replace_all(&owned, REDACTED).into_owned();
        }
        Cow::Owned(owned)
    }

    /// True when the text holds nothing the gate would redact.
    pub fn is_clean(&self, text: &str) -> bool {
        matches!(self.redact_str(text), Cow::Borrowed(_))
    }

    /// Serialises `value` to JSON with every string (keys included) passed through the gate.
    pub fn to_json<T: Serialize>(&self, value: &T) -> serde_json::Result<Value> {
        let mut json = serde_json::to_value(value)?;
        self.redact_value(&mut json);
        Ok(json)
    }

    fn redact_value(&self, value: &mut Value) {
        match value {
            Value::String(s) => {
                if let Cow::Owned(clean) = self.redact_str(s) {
                    *s = clean;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.redact_value(v)),
            Value::Object(map) => {
                let dirty_keys: Vec<String> =
                    map.keys().filter(|k| !self.is_clean(k)).cloned().collect();
                for key in dirty_keys {
                    if let Some(v) = map.remove(&key) {
                        map.insert(self.redact_str(&key).into_owned(), v);
                    }
                }
                map.values_mut().for_each(|v| self.redact_value(v));
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// One planted secret of each kind the spec names; tests elsewhere plant these in inputs.
    pub(crate) const PLANTED: &[&str] = &[
        "sk-ant-api03-PLANTEDabcdefghijklmnop0123456789",
        "Bearer PLANTEDtokenabcdefghij0123456789",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJwbGFudGVkIn0.c2lnbmF0dXJlUExBTlRFRA",
        "https://young:PLANTEDpass@example.invalid/path",
        "0x5f2b1d0c8a7e6f4b3a29180716253443526170819a8b7c6d5e4f3a2b1c0d9e8f",
        "ghp_PLANTEDabcdefghijklmnopqrstuvwxyz0123",
        "AKIAPLANTED234567ABC",
    ];

    #[test]
    fn every_planted_secret_is_redacted_inside_surrounding_text() {
        let gate = RedactionGate::default();
        for secret in PLANTED {
            let text = format!("before {secret} after");
            let clean = gate.redact_str(&text);
            assert!(clean.contains(REDACTED), "{secret} not redacted: {clean}");
            assert!(!clean.contains("PLANTED"), "{secret} leaked: {clean}");
            assert!(clean.starts_with("before "), "{clean}");
        }
    }

    #[test]
    fn ordinary_dashboard_text_passes_unchanged() {
        let gate = RedactionGate::default();
        for text in [
            "http://127.0.0.1:18301",
            "connection refused",
            "no answer within 5s",
            "t_8d7bde82",
            "claude-sonnet-4",
            "sha256:0123456789abcdef",
            "2026-11-30T04:53:55Z",
        ] {
            assert!(gate.is_clean(text), "{text}");
        }
    }

    #[test]
    fn known_secrets_are_redacted_whatever_their_shape() {
        let gate = RedactionGate::new(["hunter2hunter2".to_string()]);
        assert_eq!(
            gate.redact_str("pw hunter2hunter2!"),
            format!("pw {REDACTED}!")
        );
    }

    #[test]
    fn json_keys_and_nested_values_are_redacted() {
        let gate = RedactionGate::default();
        let v = serde_json::json!({"a": [{"b": PLANTED[0]}], PLANTED[2]: 1});
        let out = gate.to_json(&v).unwrap().to_string();
        assert!(!out.contains("PLANTED") && !out.contains("eyJ"), "{out}");
    }
}

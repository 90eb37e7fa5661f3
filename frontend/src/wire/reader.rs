//! The reader's machinery: where it is in the document (for the error's place), the first error
//! it met, the fields of an object read as required, defaulted or optional, lists and probes;
//! and the plain values (strings, booleans, numbers, times) every shape is built from.
//!
//! Readers never stop early: a wrong value reads as a placeholder and the first error decides
//! in the end (see the module above).

use chrono::{DateTime, Utc};
use fleetdash_model::Probe;

use super::Json;
use super::rfc3339::parse_time;

/// Where the reader is, and the first error it met.
#[derive(Default)]
pub(super) struct Reader {
    path: Vec<Step>,
    pub(super) error: Option<String>,
}

enum Step {
    Key(&'static str),
    Index(usize),
}

/// A reader of one kind of value: a plain `fn`, so each generic helper below is compiled once
/// per value type, not once per field.
type ReadFn<T> = fn(&mut Reader, &Json) -> T;

/// The fields of one JSON object (none when the value was not an object).
pub(super) struct Obj<'j>(&'j [(String, Json)]);

impl Obj<'_> {
    pub(super) fn get(&self, key: &str) -> Option<&Json> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

impl Reader {
    /// Keeps the first error, with the path it was found at ("agents[2].up: ...").
    pub(super) fn fail(&mut self, what: &str) {
        if self.error.is_some() {
            return;
        }
        let mut at = String::new();
        for step in &self.path {
            match step {
                Step::Key(k) if at.is_empty() => at.push_str(k),
                Step::Key(k) => {
                    at.push('.');
                    at.push_str(k);
                }
                Step::Index(i) => at.push_str(&format!("[{i}]")),
            }
        }
        self.error = Some(if at.is_empty() {
            what.to_string()
        } else {
            format!("{at}: {what}")
        });
    }

    pub(super) fn object<'j>(&mut self, v: &'j Json) -> Obj<'j> {
        match v {
            Json::Obj(fields) => Obj(fields),
            _ => {
                self.fail("expected an object");
                Obj(&[])
            }
        }
    }

    /// `read` at `key`; a missing key is an error (read from null for a placeholder), or
    /// `Some(default)` (`#[serde(default)]`: null is still wrong).
    pub(super) fn field<T>(
        &mut self,
        o: &Obj,
        key: &'static str,
        read: ReadFn<T>,
        default: Option<T>,
    ) -> T {
        self.path.push(Step::Key(key));
        let value = match (o.get(key), default) {
            (Some(v), _) => read(self, v),
            (None, Some(default)) => default,
            (None, None) => {
                self.fail("missing");
                read(self, &Json::Null)
            }
        };
        self.path.pop();
        value
    }

    /// A required field.
    pub(super) fn req<T>(&mut self, o: &Obj, key: &'static str, read: ReadFn<T>) -> T {
        self.field(o, key, read, None)
    }

    /// An `Option` field: `None` when missing or null.
    pub(super) fn opt<T>(&mut self, o: &Obj, key: &'static str, read: ReadFn<T>) -> Option<T> {
        match o.get(key) {
            None | Some(Json::Null) => None,
            Some(_) => Some(self.req(o, key, read)),
        }
    }

    /// `"unknown"`, `"error: <reason>"`, or the value itself (the model's `Probe` deserializer).
    pub(super) fn probe<T>(&mut self, v: &Json, read: ReadFn<T>) -> Probe<T> {
        if let Json::Str(s) = v {
            if s == "unknown" {
                return Probe::Unknown;
            }
            if let Some(reason) = s.strip_prefix("error: ") {
                return Probe::Error(reason.to_string());
            }
        }
        Probe::Value(read(self, v))
    }

    pub(super) fn list<T>(&mut self, v: &Json, read: ReadFn<T>) -> Vec<T> {
        let Json::Arr(items) = v else {
            self.fail("expected a list");
            return Vec::new();
        };
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            self.path.push(Step::Index(i));
            out.push(read(self, item));
            self.path.pop();
        }
        out
    }
}

pub(super) fn string(r: &mut Reader, v: &Json) -> String {
    match v {
        Json::Str(s) => s.clone(),
        _ => {
            r.fail("expected a string");
            String::new()
        }
    }
}

pub(super) fn boolean(r: &mut Reader, v: &Json) -> bool {
    match v {
        Json::Bool(b) => *b,
        _ => {
            r.fail("expected true or false");
            false
        }
    }
}

pub(super) fn float(r: &mut Reader, v: &Json) -> f64 {
    match v {
        Json::Num(n) => *n,
        _ => {
            r.fail("expected a number");
            0.0
        }
    }
}

/// A whole number in `min..=max` (as f64: exact up to 2^53).
pub(super) fn whole(r: &mut Reader, v: &Json, min: f64, max: f64) -> f64 {
    match v {
        Json::Num(n) if n.fract() == 0.0 && (min..=max).contains(n) => *n,
        _ => {
            r.fail("expected a whole number in range");
            0.0
        }
    }
}

pub(super) fn uint(r: &mut Reader, v: &Json) -> u64 {
    whole(r, v, 0.0, u64::MAX as f64) as u64
}

pub(super) fn u32_(r: &mut Reader, v: &Json) -> u32 {
    whole(r, v, 0.0, f64::from(u32::MAX)) as u32
}

pub(super) fn int(r: &mut Reader, v: &Json) -> i64 {
    whole(r, v, i64::MIN as f64, i64::MAX as f64) as i64
}

pub(super) fn time(r: &mut Reader, v: &Json) -> DateTime<Utc> {
    match v {
        Json::Str(s) => parse_time(s),
        _ => None,
    }
    .unwrap_or_else(|| {
        r.fail("expected an RFC 3339 time");
        DateTime::default()
    })
}

pub(super) fn strings(r: &mut Reader, v: &Json) -> Vec<String> {
    r.list(v, string)
}

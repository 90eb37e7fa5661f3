//! What every section's validation shares: where the file is (relative paths resolve against
//! its folder), the errors found so far, the local paths named so far (for `check`'s
//! warnings), and the readers of values that recur in many sections (durations, positive
//! counts), so that each section checks only what is its own.

use std::path::{Path, PathBuf};
use std::time::Duration;

use toml::Spanned;

use super::error::{ConfigError, line_of};
use super::files::{Expect, NamedPath};

/// What a duration must look like.
pub(super) const DURATION: &str = "a duration such as \"2m\" or \"30s\"";

/// What a count must be.
pub(super) const POSITIVE: &str = "a whole number greater than zero";

pub(super) struct Validator<'a> {
    pub path: &'a Path,
    pub text: &'a str,
    /// The config file's folder: relative paths are relative to it.
    pub base: PathBuf,
    pub errors: Vec<ConfigError>,
    /// The local files and folders the config names for fleetdash to read.
    pub named: Vec<NamedPath>,
}

impl<'a> Validator<'a> {
    pub fn new(path: &'a Path, text: &'a str) -> Self {
        let base = path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        Validator {
            path,
            text,
            base,
            errors: Vec::new(),
            named: Vec::new(),
        }
    }

    pub fn error<T>(
        &mut self,
        spanned: &Spanned<T>,
        field: impl Into<String>,
        message: impl Into<String>,
    ) {
        self.error_at(Some(spanned.span().start), field, message);
    }

    /// An error at a byte offset of the file; `None`: the file as a whole.
    pub fn error_at(
        &mut self,
        offset: Option<usize>,
        field: impl Into<String>,
        message: impl Into<String>,
    ) {
        self.errors.push(ConfigError {
            file: self.path.to_path_buf(),
            line: offset.map(|o| line_of(self.text, o)),
            field: field.into(),
            message: message.into(),
        });
    }

    /// The 1-based line where a value was written.
    pub fn line<T>(&self, spanned: &Spanned<T>) -> usize {
        line_of(self.text, spanned.span().start)
    }

    pub fn path(&self, raw: &str) -> PathBuf {
        resolve_path(&self.base, raw)
    }

    /// Resolves a path fleetdash reads on this machine, and remembers it for `check`'s
    /// warnings about missing or unreadable files.
    pub fn read_path(&mut self, raw: &Spanned<String>, field: String, expect: Expect) -> PathBuf {
        let path = self.path(raw.get_ref());
        self.named.push(NamedPath {
            field,
            line: self.line(raw),
            path: path.clone(),
            expect,
        });
        path
    }

    pub fn duration(
        &mut self,
        raw: &Option<Spanned<String>>,
        field: &str,
        default: Duration,
    ) -> Duration {
        let Some(s) = raw else { return default };
        match humantime::parse_duration(s.get_ref()) {
            Ok(d) if !d.is_zero() => d,
            Ok(_) => {
                self.error(s, field, "must be longer than zero");
                default
            }
            Err(e) => {
                self.error(
                    s,
                    field,
                    format!("expected {DURATION} ({})", duration_mistake(&e)),
                );
                default
            }
        }
    }

    pub fn positive(&mut self, raw: &Option<Spanned<i64>>, field: &str, default: usize) -> usize {
        let Some(n) = raw else { return default };
        match usize::try_from(*n.get_ref()) {
            Ok(v) if v > 0 => v,
            _ => {
                self.error(n, field, format!("expected {POSITIVE}"));
                default
            }
        }
    }
}

/// Expands a leading `~/` and resolves relative paths against the config file's folder.
pub fn resolve_path(base: &Path, raw: &str) -> PathBuf {
    if let Some(rest) = raw.strip_prefix("~/")
        && let Some(home) = std::env::var_os("HOME")
    {
        return PathBuf::from(home).join(rest);
    }
    base.join(raw)
}

/// A name that is safe as a file name and as a command argument: letters, digits, `.`, `_`,
/// `-`, `@`, `:`, not starting with `.` or `-`.
pub fn is_plain_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 128
        && !s.starts_with(['.', '-'])
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '@' | ':'))
}

/// What is wrong with a duration, by position only: the value itself is never repeated (it may
/// be a secret pasted under the wrong key), nor humantime's own words, which quote a unit.
fn duration_mistake(e: &humantime::DurationError) -> String {
    use humantime::DurationError as E;
    match e {
        E::InvalidCharacter(at) => format!("invalid character at {at}"),
        E::NumberExpected(at) => format!("expected number at {at}"),
        E::UnknownUnit { start, .. } => format!("unknown unit at {start}"),
        E::NumberOverflow => "number too large".to_string(),
        E::Empty => "empty".to_string(),
    }
}

//! Reading one TOML table key by key, so that one mistake never hides another.
//!
//! serde stops at the first unknown key or wrong type, and `fleetdash check` must list every
//! mistake at once. So the file is parsed into toml's spanned document tree, and each section
//! asks its [`Table`] for the keys it knows: a value of the wrong type is one error (at its
//! line) and the rest is still read; the keys nobody asked for are reported by
//! [`Table::finish`], with the closest known key as a suggestion.

use std::cell::Cell;
use std::time::Duration;

use chrono::NaiveDate;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::validator::{DURATION, POSITIVE, Validator};

/// How alike an unknown key and a known one must be for "did you mean" (Jaro similarity,
/// the measure and bound clap uses for misspelled subcommands).
const SUGGESTION_SIMILARITY: f64 = 0.7;

/// One string of an array, with its index in the array (for errors naming it).
pub(super) type Element = (usize, Spanned<String>);

/// One table of the config file being read: `[probe]`, one `[[agents]]` entry, an inline
/// `ssh = { ... }`, or the top level.
pub(super) struct Table<'t, 'i> {
    /// `None`: the table is absent, so every key is absent and its default applies.
    entries: Option<&'t DeTable<'i>>,
    /// Where the table was written (its header or its `{`); `None` for the top level.
    start: Option<usize>,
    /// The table's own field name, `agents[0]` or `hosts[1].ssh`; empty at the top level.
    name: String,
    /// Every key a section asked for, present or not.
    known: Vec<&'static str>,
    /// Required keys found absent, with what is expected, reported by [`Table::finish`]
    /// (unless a misspelling of them is, which says it better).
    missing: Vec<(&'static str, String)>,
    /// Whether [`Table::finish`] ran: a table read without it would accept unknown keys
    /// silently, so debug builds refuse to drop one.
    finished: Cell<bool>,
}

impl<'t, 'i> Table<'t, 'i> {
    /// The whole document.
    pub fn top(document: &'t Spanned<DeTable<'i>>) -> Self {
        Table::new(Some(document.get_ref()), None, String::new())
    }

    fn new(entries: Option<&'t DeTable<'i>>, start: Option<usize>, name: String) -> Self {
        Table {
            entries,
            start,
            name,
            known: Vec::new(),
            missing: Vec::new(),
            finished: Cell::new(false),
        }
    }

    /// A table that was not written: every key reads as absent.
    fn absent(name: String) -> Self {
        Table::new(None, None, name)
    }

    /// The full field name of `key` in this table, as errors name it.
    pub fn field(&self, key: &str) -> String {
        if self.name.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.name)
        }
    }

    /// The table's own name (`agents[0]`), as errors about the whole entry name it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Where the table was written, for errors about the table as a whole.
    pub fn start(&self) -> Option<usize> {
        self.start
    }

    /// Whether the table was written at all.
    pub fn is_present(&self) -> bool {
        self.entries.is_some()
    }

    /// Whether `key` holds something (a non-empty array, or any other value), without asking
    /// for it.
    pub fn has_entries(&self, key: &str) -> bool {
        self.entries
            .and_then(|entries| entries.iter().find(|(k, _)| k.get_ref() == key))
            .is_some_and(|(_, value)| match value.get_ref() {
                DeValue::Array(items) => !items.is_empty(),
                _ => true,
            })
    }

    /// The raw value of `key`, which becomes a known key of this table.
    fn value(&mut self, key: &'static str) -> Option<&'t Spanned<DeValue<'i>>> {
        if !self.known.contains(&key) {
            self.known.push(key);
        }
        self.entries?
            .iter()
            .find(|(k, _)| k.get_ref() == key)
            .map(|(_, value)| value)
    }

    /// Says that `key` has the wrong type, without echoing the value (it may be a secret
    /// written under the wrong key).
    fn wrong_type(
        &self,
        v: &mut Validator,
        value: &Spanned<DeValue<'_>>,
        key: &str,
        expected: &str,
    ) {
        v.error_at(
            Some(value.span().start),
            self.field(key),
            format!("expected {expected}, found {}", described(value.get_ref())),
        );
    }

    /// A string value; a value of another type is an error and reads as absent.
    pub fn string(&mut self, v: &mut Validator, key: &'static str) -> Option<Spanned<String>> {
        self.string_as(v, key, "a string")
    }

    /// A string value, saying what it should hold (`expected`) when it is of another type.
    pub fn string_as(
        &mut self,
        v: &mut Validator,
        key: &'static str,
        expected: &str,
    ) -> Option<Spanned<String>> {
        let value = self.value(key)?;
        match value.get_ref() {
            DeValue::String(s) => Some(Spanned::new(value.span(), s.to_string())),
            _ => {
                self.wrong_type(v, value, key, expected);
                None
            }
        }
    }

    /// A string the entry cannot do without: its absence is an error saying what is expected.
    pub fn required_string(
        &mut self,
        v: &mut Validator,
        key: &'static str,
        expected: &str,
    ) -> Option<Spanned<String>> {
        if self.value(key).is_none() {
            self.missing.push((key, expected.to_string()));
        }
        self.string_as(v, key, expected)
    }

    /// An integer value.
    pub fn integer(
        &mut self,
        v: &mut Validator,
        key: &'static str,
        expected: &str,
    ) -> Option<Spanned<i64>> {
        let value = self.value(key)?;
        let parsed = match value.get_ref() {
            DeValue::Integer(n) => i64::from_str_radix(n.as_str(), n.radix()).ok(),
            _ => None,
        };
        match parsed {
            Some(n) => Some(Spanned::new(value.span(), n)),
            None => {
                self.wrong_type(v, value, key, expected);
                None
            }
        }
    }

    /// A duration such as `"2m"`, longer than zero; absent or wrong, `default` (and an
    /// error for the wrong one).
    pub fn duration(
        &mut self,
        v: &mut Validator,
        key: &'static str,
        default: Duration,
    ) -> Duration {
        let raw = self.string_as(v, key, DURATION);
        v.duration(&raw, &self.field(key), default)
    }

    /// A count greater than zero; absent or wrong, `default` (and an error for the wrong one).
    pub fn positive(&mut self, v: &mut Validator, key: &'static str, default: usize) -> usize {
        let raw = self.integer(v, key, POSITIVE);
        v.positive(&raw, &self.field(key), default)
    }

    /// A calendar date: `"2027-01-31"`, or TOML's own `2027-01-31`. Another value (a time, a
    /// date that does not exist) is an error naming what is expected, and reads as absent.
    pub fn date(&mut self, v: &mut Validator, key: &'static str) -> Option<Spanned<NaiveDate>> {
        const EXPECTED: &str = "a date such as \"2027-01-31\"";
        let value = self.value(key)?;
        let date = match value.get_ref() {
            DeValue::String(s) => NaiveDate::parse_from_str(s.trim(), "%Y-%m-%d").ok(),
            DeValue::Datetime(d) if d.time.is_none() && d.offset.is_none() => d
                .date
                .and_then(|d| NaiveDate::from_ymd_opt(d.year.into(), d.month.into(), d.day.into())),
            _ => None,
        };
        match date {
            Some(date) => Some(Spanned::new(value.span(), date)),
            None if matches!(value.get_ref(), DeValue::String(_) | DeValue::Datetime(_)) => {
                v.error_at(
                    Some(value.span().start),
                    self.field(key),
                    format!("expected {EXPECTED} (a day, UTC)"),
                );
                None
            }
            None => {
                self.wrong_type(v, value, key, EXPECTED);
                None
            }
        }
    }

    /// `true` or `false`.
    pub fn boolean(&mut self, v: &mut Validator, key: &'static str) -> Option<bool> {
        let value = self.value(key)?;
        match value.get_ref() {
            DeValue::Boolean(b) => Some(*b),
            _ => {
                self.wrong_type(v, value, key, "true or false");
                None
            }
        }
    }

    /// An array of strings, each with its index in the array and its position. An element of
    /// another type is an error naming its index; the other elements are kept.
    pub fn strings(
        &mut self,
        v: &mut Validator,
        key: &'static str,
    ) -> Option<Spanned<Vec<Element>>> {
        let value = self.value(key)?;
        let DeValue::Array(items) = value.get_ref() else {
            self.wrong_type(v, value, key, "an array of strings");
            return None;
        };
        let mut strings = Vec::new();
        for (j, item) in items.iter().enumerate() {
            match item.get_ref() {
                DeValue::String(s) => strings.push((j, Spanned::new(item.span(), s.to_string()))),
                other => v.error_at(
                    Some(item.span().start),
                    self.field(&format!("{key}[{j}]")),
                    format!("expected a string, found {}", described(other)),
                ),
            }
        }
        Some(Spanned::new(value.span(), strings))
    }

    /// A sub-table (`[probe]`, `ssh = { ... }`); absent, or of another type (an error), it
    /// reads as a table with no keys.
    pub fn table(&mut self, v: &mut Validator, key: &'static str) -> Table<'t, 'i> {
        let name = self.field(key);
        match self.value(key) {
            Some(value) => match value.get_ref() {
                DeValue::Table(entries) => {
                    Table::new(Some(entries), Some(value.span().start), name)
                }
                _ => {
                    self.wrong_type(v, value, key, &format!("a table ([{name}])"));
                    Table::absent(name)
                }
            },
            None => Table::absent(name),
        }
    }

    /// An array of tables (`[[agents]]`); absent, it is empty.
    pub fn tables(&mut self, v: &mut Validator, key: &'static str) -> Vec<Table<'t, 'i>> {
        let Some(value) = self.value(key) else {
            return Vec::new();
        };
        let DeValue::Array(items) = value.get_ref() else {
            let expected = format!("an array of tables ([[{}]])", self.field(key));
            self.wrong_type(v, value, key, &expected);
            return Vec::new();
        };
        let mut tables = Vec::new();
        for (j, item) in items.iter().enumerate() {
            let name = self.field(&format!("{key}[{j}]"));
            match item.get_ref() {
                DeValue::Table(entries) => {
                    tables.push(Table::new(Some(entries), Some(item.span().start), name))
                }
                other => v.error_at(
                    Some(item.span().start),
                    name,
                    format!("expected a table, found {}", described(other)),
                ),
            }
        }
        tables
    }

    /// Reports every key of the table that no section asked for, suggesting the closest
    /// known key when one is close, and every required key that is absent. Called once every
    /// key was asked for.
    pub fn finish(&self, v: &mut Validator) {
        self.finished.set(true);
        let Some(entries) = self.entries else { return };
        let mut suggested = Vec::new();
        for (key, _) in entries.iter() {
            let key_text: &str = key.get_ref();
            if self.known.contains(&key_text) {
                continue;
            }
            let message = match suggestion(key_text, &self.known) {
                Some(known) => {
                    suggested.push(known);
                    format!("unknown key `{key_text}`, did you mean `{known}`?")
                }
                None if self.known.is_empty() => format!("unknown key `{key_text}`"),
                None => format!(
                    "unknown key `{key_text}`; expected one of {}",
                    self.known.join(", ")
                ),
            };
            v.error_at(Some(key.span().start), self.field(key_text), message);
        }
        for (key, expected) in &self.missing {
            // `endpont = ...` already says "did you mean `endpoint`?": one mistake, one line.
            if !suggested.contains(key) {
                v.error_at(
                    self.start,
                    self.field(key),
                    format!("missing; expected {expected}"),
                );
            }
        }
    }

    /// Leaves a table unread on purpose (its presence is the mistake, already said).
    pub fn skip(&self) {
        self.finished.set(true);
    }
}

impl Drop for Table<'_, '_> {
    fn drop(&mut self) {
        debug_assert!(
            self.finished.get() || self.entries.is_none() || std::thread::panicking(),
            "config table `{}` was read without finish(): its unknown keys went unreported",
            self.name
        );
    }
}

/// The known key closest to `unknown`, if any is close enough.
pub(super) fn suggestion<'k>(unknown: &str, known: &[&'k str]) -> Option<&'k str> {
    known
        .iter()
        .map(|k| (strsim::jaro(unknown, k), *k))
        .filter(|(similarity, _)| *similarity > SUGGESTION_SIMILARITY)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| k)
}

/// A value's type for an error message (never the value itself).
fn described(value: &DeValue<'_>) -> &'static str {
    match value {
        DeValue::String(_) => "a string",
        DeValue::Integer(_) => "an integer",
        DeValue::Float(_) => "a float",
        DeValue::Boolean(_) => "a boolean",
        DeValue::Datetime(_) => "a date",
        DeValue::Array(_) => "an array",
        DeValue::Table(_) => "a table",
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::config::Config;

    fn errors_of(body: &str) -> Vec<String> {
        let text = format!("output_dir = \"o\"\nstate_dir = \"s\"\nrules = \"r\"\n{body}");
        Config::parse(Path::new("f.toml"), &text)
            .unwrap_err()
            .0
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn unknown_keys_are_named_at_every_level_with_the_closest_known_one() {
        let errors = errors_of(
            "outptu_dir = \"o\"\n\
             [probe]\ntimout = \"2s\"\n\
             [serve]\ncolour = \"red\"\n\
             [[hosts]]\nname = \"lab\"\nsource = \"ssh\"\nssh = { destinaton = \"ops@lab\" }\n\
             [[hosts.crons]]\nname = \"job\"\nperid = \"1h\"\nstamp = \"/tmp/ok\"\n",
        );
        assert_eq!(
            errors,
            [
                "f.toml:4: outptu_dir: unknown key `outptu_dir`, did you mean `output_dir`?",
                "f.toml:6: probe.timout: unknown key `timout`, did you mean `timeout`?",
                "f.toml:8: serve.colour: unknown key `colour`; expected one of listen, htpasswd, \
                 dist_dir, tls_cert, tls_key, plain_http_on_network",
                // A misspelled required key is one mistake: no "destination: missing" besides.
                "f.toml:12: hosts[0].ssh.destinaton: unknown key `destinaton`, did you mean \
                 `destination`?",
                "f.toml:15: hosts[0].crons[0].perid: unknown key `perid`, did you mean `period`?",
            ]
        );
    }

    #[test]
    fn a_value_of_the_wrong_type_is_one_error_and_the_rest_is_still_read() {
        let errors = errors_of(
            "[probe]\nconcurrency = \"many\"\ntimeout = 5\n\
             [[hosts]]\nname = \"lab\"\nservices = [\"nginx\", 3, \"nginx\"]\n\
             [[boards]]\nname = \"b\"\ndb = \"b.db\"\nretired = \"yes\"\n\
             [backups]\nname = \"b\"\ncommand = \"rclone lsl\"\n",
        );
        assert_eq!(
            errors,
            [
                "f.toml:5: probe.concurrency: expected a whole number greater than zero, found \
                 a string",
                "f.toml:6: probe.timeout: expected a duration such as \"2m\" or \"30s\", found \
                 an integer",
                "f.toml:9: hosts[0].services[1]: expected a string, found an integer",
                // The element after the wrong one is still checked.
                "f.toml:9: hosts[0].services[2]: duplicate service \"nginx\" on this host",
                "f.toml:13: boards[0].retired: expected true or false, found a string",
                // The wrong type is the whole mistake: no "give dir or command" besides.
                "f.toml:16: backups.command: expected an array of strings, found a string",
            ]
        );
    }

    #[test]
    fn a_missing_required_key_points_at_its_entry() {
        let errors = errors_of("[[agents]]\nname = \"a\"\n\n[[boards]]\nplane = \"Docs\"\n");
        assert_eq!(
            errors,
            [
                "f.toml:4: agents[0].endpoint: missing; expected the agent's A2A URL, e.g. \
                 \"http://127.0.0.1:18301\"",
                "f.toml:7: boards[0].name: missing; expected the board's Hermes slug, e.g. \
                 \"research\"",
                "f.toml:7: boards[0].db: missing; expected the board's kanban.db",
            ]
        );
        let top = Config::parse(Path::new("f.toml"), "state_dir = \"s\"\nrules = \"r\"\n")
            .unwrap_err()
            .to_string();
        assert_eq!(
            top,
            "f.toml: output_dir: missing; expected the folder status.json is written to"
        );
    }

    #[test]
    fn a_section_of_the_wrong_shape_is_named_and_the_others_are_read() {
        let errors = errors_of("agents = \"hub\"\nprobe = 3\n[[hosts]]\nname = \"\"\n");
        assert_eq!(
            errors,
            [
                "f.toml:4: agents: expected an array of tables ([[agents]]), found a string",
                "f.toml:5: probe: expected a table ([probe]), found an integer",
                "f.toml:7: hosts[0].name: must not be empty",
            ]
        );
    }

    #[test]
    fn a_value_under_an_unknown_or_mistyped_key_is_never_echoed() {
        // A token written inline by mistake must not reach check's output.
        let secret = "sk-live-0123456789abcdef0123456789abcdef";
        let errors = errors_of(&format!(
            "[[agents]]\nname = \"a\"\nendpoint = \"http://127.0.0.1:1\"\ntoken = \"{secret}\"\n\
             [probe]\nconcurrency = \"{secret}\"\ntimeout = \"{secret}\"\n\
             command_timeout = \"2{secret}\"\n"
        ));
        assert_eq!(errors.len(), 4, "{errors:#?}");
        assert!(errors.iter().all(|e| !e.contains(secret)), "{errors:#?}");
    }
}

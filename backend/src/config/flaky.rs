//! `flaky = { reason = "...", until = "2027-01-31" }` on an `[[agents]]`, `[[hosts]]` or
//! `[[hosts.tunnels]]` entry: the operator declares the element known to drop (issue 44), so
//! its trouble is expected, not a surprise.
//!
//! A declared element still shows in its band and still counts. What changes is who is woken:
//! alerting holds its red as a silence would (and what depends on it under it, as under any
//! root), the doctor says its failure as declared, and the page marks its row "declared flaky:
//! REASON (until 31 Jan)". `until` is a day, UTC, and inclusive: the declaration lapses when
//! that day ends, and alerts go out again (the doctor then says to remove or extend it).

use std::collections::BTreeMap;

use chrono::{DateTime, Days, NaiveDate, NaiveTime, Utc};
use fleetdash_model::Held;

use super::table::Table;
use super::validator::Validator;

/// A reason longer than this is refused: it is said on a phone-sized row.
const REASON_MAX_CHARS: usize = 120;

/// One declaration, kept by the key of the element it is on (`agent:orin`, `host:laptop`,
/// `host:laptop/tunnel:heart`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flaky {
    /// Why it is known to drop ("laptop tunnel drops at night"): never empty.
    pub reason: String,
    /// The last day it holds (UTC); `None`: until the operator removes it.
    pub until: Option<NaiveDate>,
}

impl Flaky {
    /// When the declaration lapses: as its `until` day ends (UTC); `None` when it has no end.
    pub fn lapses_at(&self) -> Option<DateTime<Utc>> {
        self.until
            .and_then(|day| day.checked_add_days(Days::new(1)))
            .map(|next| next.and_time(NaiveTime::MIN).and_utc())
    }

    /// Whether it still holds at `now`.
    pub fn stands_at(&self, now: DateTime<Utc>) -> bool {
        self.lapses_at().is_none_or(|end| now < end)
    }

    /// The hold it makes on the element `key` in a write at `now`, as status.json carries it.
    pub fn held(&self, key: String, now: DateTime<Utc>) -> Held {
        Held {
            key,
            until: self.lapses_at(),
            reason: self.said(),
            flaky: true,
            checked_at: now,
        }
    }

    /// "laptop tunnel drops at night (until 31 Jan)", as the page and the hub are told it: the
    /// day as declared, whatever the reader's zone.
    fn said(&self) -> String {
        use chrono::Datelike;
        match self.until {
            Some(day) => format!(
                "{} (until {} {})",
                self.reason,
                day.day(),
                fleetdash_model::month(day.month())
            ),
            None => self.reason.clone(),
        }
    }

    /// "laptop tunnel drops at night (until 2027-01-31)", as the doctor and the CLI say it.
    pub fn describe(&self) -> String {
        match self.until {
            Some(day) => format!("{} (until {})", self.reason, day.format("%Y-%m-%d")),
            None => self.reason.clone(),
        }
    }
}

/// The holds the declarations standing at `now` make on the elements a write shows (`shown`),
/// in key order: said whether alerting runs or not (without it, nothing pages anyway, but the
/// page still says what is expected).
pub fn holds(
    declared: &BTreeMap<String, Flaky>,
    shown: impl Fn(&str) -> bool,
    now: DateTime<Utc>,
) -> Vec<Held> {
    declared
        .iter()
        .filter(|(key, f)| shown(key) && f.stands_at(now))
        .map(|(key, f)| f.held(key.clone(), now))
        .collect()
}

/// Reads the entry's `flaky` and keeps it under `key`, the element's key (`None` when the
/// entry's name is wrong: said already, and nothing to key it by).
pub(super) fn read(
    v: &mut Validator,
    entry: &mut Table,
    key: Option<String>,
    out: &mut BTreeMap<String, Flaky>,
) {
    let mut t = entry.table(v, "flaky");
    if !t.is_present() {
        t.finish(v);
        return;
    }
    let reason = t.required_string(
        v,
        "reason",
        "why it is known to drop, e.g. \"laptop tunnel drops at night\"",
    );
    let until = t.date(v, "until");
    t.finish(v);
    let reason = reason.and_then(|r| {
        let text = r.get_ref().trim();
        let why = if text.is_empty() {
            "must not be empty: say why it is known to drop, e.g. \"laptop tunnel drops at night\""
        } else if text.chars().any(char::is_control) {
            "must be one line, without control characters"
        } else if text.chars().count() > REASON_MAX_CHARS {
            "must be at most 120 characters: it is said on a phone-sized row"
        } else {
            return Some(text.to_string());
        };
        v.error(&r, t.field("reason"), why);
        None
    });
    if let (Some(key), Some(reason)) = (key, reason) {
        out.insert(
            key,
            Flaky {
                reason,
                until: until.map(|d| d.into_inner()),
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use chrono::{DateTime, NaiveDate, Utc};

    use super::Flaky;
    use crate::config::Config;

    const TOP: &str = "output_dir = \"o\"\nstate_dir = \"s\"\nrules = \"r\"\n";

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn an_agent_a_host_and_a_tunnel_are_declared_by_their_keys() {
        let text = format!(
            r#"{TOP}[[agents]]
name = "orin"
endpoint = "http://127.0.0.1:18301"
flaky = {{ reason = "laptop tunnel drops at night", until = "2027-01-31" }}
[[agents]]
name = "steady"
endpoint = "http://127.0.0.1:18302"
[[hosts]]
name = "laptop"
[hosts.flaky]
reason = " sleeps when the lid is shut "
until = 2027-02-28
[[hosts.tunnels]]
name = "heart"
address = "127.0.0.1:18301"
flaky = {{ reason = "autossh restarts it" }}
"#
        );
        let c = Config::parse(Path::new("f.toml"), &text).unwrap_or_else(|e| panic!("{e}"));
        let day = |s: &str| Some(NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap());
        let declared: Vec<(&str, &str, Option<NaiveDate>)> = c
            .flaky
            .iter()
            .map(|(k, f)| (k.as_str(), f.reason.as_str(), f.until))
            .collect();
        assert_eq!(
            declared,
            [
                (
                    "agent:orin",
                    "laptop tunnel drops at night",
                    day("2027-01-31")
                ),
                (
                    "host:laptop",
                    "sleeps when the lid is shut",
                    day("2027-02-28")
                ),
                ("host:laptop/tunnel:heart", "autossh restarts it", None),
            ]
        );
    }

    #[test]
    fn a_declaration_holds_through_its_until_day_utc_and_lapses_as_it_ends() {
        let f = Flaky {
            reason: "laptop tunnel drops at night".into(),
            until: NaiveDate::from_ymd_opt(2027, 1, 31),
        };
        assert_eq!(f.lapses_at(), Some(at("2027-02-01T00:00:00Z")));
        assert!(f.stands_at(at("2027-01-31T23:59:59Z")));
        assert!(!f.stands_at(at("2027-02-01T00:00:00Z")));
        assert_eq!(
            f.describe(),
            "laptop tunnel drops at night (until 2027-01-31)"
        );
        let open = Flaky { until: None, ..f };
        assert!(open.stands_at(at("2099-01-01T00:00:00Z")));
        assert_eq!(open.describe(), "laptop tunnel drops at night");
    }

    #[test]
    fn each_mistake_in_a_declaration_is_named_with_its_line() {
        let text = format!(
            r#"{TOP}[[agents]]
name = "a"
endpoint = "http://127.0.0.1:1"
flaky = {{ reason = "  ", until = "2027-02-30" }}
[[agents]]
name = "b"
endpoint = "http://127.0.0.1:2"
flaky = {{ until = "2027-01-31", reasn = "drops" }}
[[agents]]
name = "c"
endpoint = "http://127.0.0.1:3"
flaky = true
[[hosts]]
name = "laptop"
[[hosts.tunnels]]
name = "heart"
address = "127.0.0.1:18301"
flaky = {{ reason = "drops", until = 2027-01-31T08:00:00Z }}
"#
        );
        let errors: Vec<String> = Config::parse(Path::new("f.toml"), &text)
            .unwrap_err()
            .0
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            errors,
            [
                "f.toml:7: agents[0].flaky.until: expected a date such as \"2027-01-31\" (a day, \
                 UTC)",
                "f.toml:7: agents[0].flaky.reason: must not be empty: say why it is known to \
                 drop, e.g. \"laptop tunnel drops at night\"",
                "f.toml:11: agents[1].flaky.reasn: unknown key `reasn`, did you mean `reason`?",
                "f.toml:15: agents[2].flaky: expected a table ([agents[2].flaky]), found a \
                 boolean",
                "f.toml:21: hosts[0].tunnels[0].flaky.until: expected a date such as \
                 \"2027-01-31\" (a day, UTC)",
            ]
        );
    }
}

//! What the config says to hold alerts back by (issue 12): a [`Matcher`] names elements the way
//! the transitions log keys them, and a [`MaintenanceWindow`] is a recurring
//! `[[alerts.maintenance]]` window. They live in the config's layer because the config reads
//! them; the operator's silences (`alerting::silences`) are made of the same matchers.
//!
//! `host=lab` is the key prefix `host:lab` (the host and its checks), `key=host:lab/tunnel:t`
//! any key prefix, `kind=cron` and `name=min` an element's kind or name; comparisons ignore
//! case (the operator types `host=LAB`).

use chrono::{DateTime, Datelike, Duration, NaiveTime, Utc, Weekday};
use fleetdash_model::alerts::Element;
use serde::{Deserialize, Serialize};

/// One condition on an element.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "on", content = "value", rename_all = "snake_case")]
pub enum Matcher {
    /// The key is this or under it (`host:lab` matches `host:lab/service:nginx`, not
    /// `host:lab2`).
    KeyPrefix(String),
    Kind(String),
    Name(String),
}

impl Matcher {
    /// Reads `field=value`: `key=`, `kind=`, `name=`, or `<kind>=<name>` for the key prefix
    /// `<kind>:<name>` (`host=lab`, `agent=min`).
    pub fn parse(text: &str) -> Result<Matcher, String> {
        let Some((field, value)) = text.split_once('=') else {
            return Err(format!(
                "{text:?}: expected field=value, e.g. host=lab, agent=min, kind=cron, key=host:lab/tunnel:t"
            ));
        };
        let (field, value) = (field.trim(), value.trim());
        if field.is_empty() || value.is_empty() {
            return Err(format!("{text:?}: both the field and the value are needed"));
        }
        Ok(match field {
            "key" => Matcher::KeyPrefix(value.to_string()),
            "kind" => Matcher::Kind(value.to_string()),
            "name" => Matcher::Name(value.to_string()),
            kind => Matcher::KeyPrefix(format!("{kind}:{value}")),
        })
    }

    pub fn matches(&self, key: &str, element: &Element) -> bool {
        match self {
            Matcher::KeyPrefix(p) => {
                let (k, p) = (key.to_lowercase(), p.to_lowercase());
                k == p || k.starts_with(&format!("{p}/"))
            }
            Matcher::Kind(kind) => element.kind.eq_ignore_ascii_case(kind),
            Matcher::Name(name) => element.name.eq_ignore_ascii_case(name),
        }
    }
}

impl std::fmt::Display for Matcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Matcher::KeyPrefix(p) => match p.split_once(':') {
                Some((kind, name)) if !name.contains(['/', ':']) => write!(f, "{kind}={name}"),
                _ => write!(f, "key={p}"),
            },
            Matcher::Kind(k) => write!(f, "kind={k}"),
            Matcher::Name(n) => write!(f, "name={n}"),
        }
    }
}

/// A recurring window from the config: on these weekdays, from `from` for `length` (UTC).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MaintenanceWindow {
    pub days: Vec<Weekday>,
    pub from: NaiveTime,
    /// May cross midnight (a window from 23:00 for 2 h ends at 01:00 the next day).
    pub length: Duration,
    pub matchers: Vec<Matcher>,
    pub reason: String,
}

impl MaintenanceWindow {
    /// The end of the occurrence `now` falls in, if any.
    pub fn until(&self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        // An occurrence that began yesterday may still run (a window across midnight).
        [now.date_naive(), now.date_naive() - Duration::days(1)]
            .into_iter()
            .filter(|day| self.days.contains(&day.weekday()))
            .map(|day| day.and_time(self.from).and_utc())
            .find(|start| *start <= now && now < *start + self.length)
            .map(|start| start + self.length)
    }
}

/// Shared with `alerting::silences`' tests.
#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use fleetdash_model::Band;

    pub(crate) fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    /// A red element of this kind and name.
    pub(crate) fn el(kind: &'static str, name: &str) -> Element {
        Element {
            kind,
            name: name.into(),
            band: Band::Red,
            reason: None,
        }
    }

    /// Crons, every Sunday from 23:00 UTC for 2 h (2026-11-29 is a Sunday).
    pub(crate) fn weekly_backup() -> MaintenanceWindow {
        MaintenanceWindow {
            days: vec![Weekday::Sun],
            from: NaiveTime::from_hms_opt(23, 0, 0).unwrap(),
            length: Duration::hours(2),
            matchers: vec![Matcher::parse("kind=cron").unwrap()],
            reason: "weekly backup".into(),
        }
    }

    #[test]
    fn matchers_read_the_way_the_operator_types_them() {
        let host = Matcher::parse("host=LAB").unwrap();
        assert_eq!(host, Matcher::KeyPrefix("host:LAB".into()));
        assert!(host.matches("host:lab", &el("host", "lab")));
        assert!(host.matches("host:lab/service:nginx", &el("service", "nginx on lab")));
        assert!(!host.matches("host:lab2", &el("host", "lab2")));
        assert!(
            Matcher::parse("kind=cron")
                .unwrap()
                .matches("host:x/cron:b", &el("cron", "b on x"))
        );
        assert!(
            Matcher::parse("name=min")
                .unwrap()
                .matches("agent:min", &el("agent", "min"))
        );
        assert_eq!(host.to_string(), "host=LAB");
        assert_eq!(
            Matcher::parse("key=host:lab/tunnel:t").unwrap().to_string(),
            "key=host:lab/tunnel:t"
        );
        assert!(
            Matcher::parse("lab")
                .unwrap_err()
                .contains("expected field=value")
        );
        assert!(Matcher::parse("host=").is_err());
    }

    #[test]
    fn a_maintenance_window_recurs_on_its_weekdays_even_across_midnight() {
        let w = weekly_backup();
        assert_eq!(w.until(at("2026-11-29T22:59:59Z")), None);
        assert_eq!(
            w.until(at("2026-11-29T23:00:00Z")),
            Some(at("2026-11-30T01:00:00Z"))
        );
        assert!(w.until(at("2026-11-30T00:59:59Z")).is_some());
        assert_eq!(w.until(at("2026-11-30T01:00:00Z")), None);
        // A week later again; not on the Monday evening.
        assert!(w.until(at("2026-12-06T23:30:00Z")).is_some());
        assert!(w.until(at("2026-11-30T23:30:00Z")).is_none());
    }
}

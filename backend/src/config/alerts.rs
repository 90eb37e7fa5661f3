//! The config's alerting parts (issue 12): `[alerts]` (the dashboard's URL, the alerts' click
//! target, and recurring `[[alerts.maintenance]]` windows), and `depends_on` on an agent or a
//! host, naming the elements it depends on by their transitions-log keys (`host:lab`,
//! `host:lab/tunnel:lab-heart`, `agent:hub`), so an alert about it is held back while its root
//! cause is down.
//!
//! ```toml
//! [alerts]
//! dashboard_url = "https://fleet.example/"
//! [[alerts.maintenance]]
//! days = ["sun"]
//! from = "23:00"        # UTC
//! for = "2h"
//! match = ["host=lab", "kind=cron"]
//! reason = "weekly backup"
//! ```

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{NaiveTime, Weekday};

use super::table::Table;
use super::validator::Validator;
use crate::alerting::silences::{MaintenanceWindow, Matcher};

/// `[alerts]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AlertsConfig {
    /// The page's URL, each alert's click target.
    pub dashboard_url: Option<url::Url>,
    pub maintenance: Vec<MaintenanceWindow>,
}

pub(super) fn read(v: &mut Validator, mut t: Table) -> AlertsConfig {
    let url = t.string(v, "dashboard_url");
    let windows = t.tables(v, "maintenance");
    t.finish(v);
    let dashboard_url = url.and_then(|u| match url::Url::parse(u.get_ref()) {
        Ok(parsed) if matches!(parsed.scheme(), "http" | "https") => Some(parsed),
        _ => {
            v.error(
                &u,
                t.field("dashboard_url"),
                "expected an http:// or https:// URL, e.g. \"https://fleet.example/\"",
            );
            None
        }
    });
    let maintenance = windows
        .into_iter()
        .filter_map(|w| read_window(v, w))
        .collect();
    AlertsConfig {
        dashboard_url,
        maintenance,
    }
}

fn read_window(v: &mut Validator, mut t: Table) -> Option<MaintenanceWindow> {
    let days = t.strings(v, "days");
    let from = t.required_string(
        v,
        "from",
        "the window's start, HH:MM in UTC, e.g. \"23:00\"",
    );
    let length_raw = t.required_string(v, "for", "the window's length, e.g. \"2h\"");
    let length = v.duration(&length_raw, &t.field("for"), Duration::ZERO);
    let matchers = t.strings(v, "match");
    let reason = t.string(v, "reason");
    t.finish(v);
    let mut ok = true;
    let mut weekdays = Vec::new();
    match days {
        Some(days) => {
            for (j, day) in days.into_inner() {
                match day.get_ref().trim().parse::<Weekday>() {
                    Ok(d) => weekdays.push(d),
                    Err(_) => {
                        ok = false;
                        v.error(
                            &day,
                            t.field(&format!("days[{j}]")),
                            format!(
                                "{:?} is not a weekday; expected e.g. \"mon\" or \"sunday\"",
                                day.get_ref()
                            ),
                        );
                    }
                }
            }
        }
        None => {
            ok = false;
            v.error_at(
                t.start(),
                t.field("days"),
                "missing; the weekdays it recurs on, e.g. [\"sat\", \"sun\"]",
            );
        }
    }
    let from = from.and_then(
        |f| match NaiveTime::parse_from_str(f.get_ref().trim(), "%H:%M") {
            Ok(time) => Some(time),
            Err(_) => {
                v.error(&f, t.field("from"), "expected HH:MM in UTC, e.g. \"23:00\"");
                None
            }
        },
    );
    let mut parsed = Vec::new();
    match matchers {
        Some(list) => {
            for (j, m) in list.into_inner() {
                match Matcher::parse(m.get_ref()) {
                    Ok(matcher) => parsed.push(matcher),
                    Err(e) => {
                        ok = false;
                        v.error(&m, t.field(&format!("match[{j}]")), e);
                    }
                }
            }
        }
        None => {
            ok = false;
            v.error_at(
                t.start(),
                t.field("match"),
                "missing; what the window holds back, e.g. [\"host=lab\"]",
            );
        }
    }
    if parsed.is_empty() && ok {
        ok = false;
        v.error_at(
            t.start(),
            t.field("match"),
            "empty; a window holding back everything would hide the whole fleet",
        );
    }
    let length = chrono::Duration::from_std(length)
        .ok()
        .filter(|l| !l.is_zero());
    match (ok, from, length) {
        (true, Some(from), Some(length)) => Some(MaintenanceWindow {
            days: weekdays,
            from,
            length,
            matchers: parsed,
            reason: reason.map(|r| r.into_inner()).unwrap_or_default(),
        }),
        _ => None,
    }
}

/// Reads `depends_on` of the entry keyed `key` into `out`; an entry that is not a key (no
/// `kind:name`) is an error naming its index.
pub(super) fn depends_on(
    v: &mut Validator,
    t: &mut Table,
    key: Option<String>,
    out: &mut BTreeMap<String, Vec<String>>,
) {
    let Some(list) = t.strings(v, "depends_on") else {
        return;
    };
    let mut roots = Vec::new();
    for (j, root) in list.into_inner() {
        let text = root.get_ref().trim();
        let well_formed = text.split('/').all(|part| {
            part.split_once(':')
                .is_some_and(|(k, n)| !k.is_empty() && !n.is_empty())
        });
        if well_formed {
            roots.push(text.to_string());
        } else {
            v.error(
                &root,
                t.field(&format!("depends_on[{j}]")),
                format!(
                    "{text:?} is not an element key; expected e.g. \"host:lab\" or \"host:lab/tunnel:lab-heart\""
                ),
            );
        }
    }
    if let Some(key) = key
        && !roots.is_empty()
    {
        out.insert(key, roots);
    }
}

#[cfg(test)]
mod tests {
    use crate::config::{Config, config_beside_fleet_rules};
    use chrono::{DateTime, Utc};

    const TOP: &str = "output_dir = \"o\"\nstate_dir = \"s\"\nrules = \"rules.yaml\"\n";

    #[test]
    fn alerts_carry_the_dashboard_url_and_recurring_windows() {
        let (_dir, path) = config_beside_fleet_rules(&format!(
            "{TOP}[alerts]\ndashboard_url = \"https://fleet.example/\"\n\
             [[alerts.maintenance]]\ndays = [\"sun\", \"wed\"]\nfrom = \"23:00\"\nfor = \"2h\"\n\
             match = [\"host=lab\", \"kind=cron\"]\nreason = \"weekly backup\"\n"
        ));
        let (config, _) = Config::load(&path).unwrap_or_else(|e| panic!("{e}"));
        let a = &config.alerts;
        assert_eq!(
            a.dashboard_url.as_ref().unwrap().as_str(),
            "https://fleet.example/"
        );
        assert_eq!(a.maintenance.len(), 1);
        let w = &a.maintenance[0];
        assert_eq!(w.reason, "weekly backup");
        assert_eq!(w.matchers.len(), 2);
        let sunday_night: DateTime<Utc> = "2026-11-30T00:30:00Z".parse().unwrap();
        assert_eq!(
            w.until(sunday_night),
            Some("2026-11-30T01:00:00Z".parse().unwrap())
        );
    }

    #[test]
    fn a_wrong_window_is_refused_field_by_field() {
        let (_dir, path) = config_beside_fleet_rules(&format!(
            "{TOP}[alerts]\ndashboard_url = \"fleet\"\n\
             [[alerts.maintenance]]\ndays = [\"caturday\"]\nfrom = \"25:00\"\n\
             match = [\"lab\"]\n"
        ));
        let err = Config::load(&path).unwrap_err().to_string();
        for expected in [
            "alerts.dashboard_url: expected an http:// or https:// URL",
            "alerts.maintenance[0].days[0]: \"caturday\" is not a weekday",
            "alerts.maintenance[0].from: expected HH:MM in UTC",
            "alerts.maintenance[0].for",
            "alerts.maintenance[0].match[0]: \"lab\": expected field=value",
        ] {
            assert!(err.contains(expected), "missing {expected:?} in {err}");
        }
    }
}

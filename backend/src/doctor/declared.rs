//! Expected trouble declared (issue 44): an agent or host the config declares known to drop
//! (`flaky = { reason, until }`) whose check fails is said as declared, an ok-level finding
//! that raises no exit code, with what fails now; a declaration past its `until` warns, so it
//! is removed or extended instead of hiding trouble for good. Tunnels are not probed by the
//! doctor: only their lapsed declarations are said.

use chrono::{DateTime, Utc};
use fleetdash_model::Asc;
use fleetdash_model::alerts::key;

use super::{Finding, Level};
use crate::config::Config;

/// `findings` with each failing check of a declared element said as declared, then a warning
/// for each declaration that has lapsed at `now`.
pub fn apply(findings: Vec<Finding>, config: &Config, now: DateTime<Utc>) -> Vec<Finding> {
    let mut out: Vec<Finding> = findings
        .into_iter()
        .map(|f| {
            let element = match f.check {
                "agents" => f.subject.strip_prefix("agent ").map(key::agent),
                "hosts" => f.subject.strip_prefix("host ").map(key::host),
                _ => None,
            };
            let declared = element
                .and_then(|k| config.flaky.get(&k))
                .filter(|d| d.stands_at(now));
            match declared {
                Some(d) if f.level != Level::Ok => Finding {
                    level: Level::Ok,
                    detail: format!("declared flaky: {}; now: {}", d.describe(), f.detail),
                    fix: None,
                    ..f
                },
                _ => f,
            }
        })
        .collect();
    for (element, d) in &config.flaky {
        let Some(until) = d.until.filter(|_| !d.stands_at(now)) else {
            continue;
        };
        out.push(Finding::warn(
            "flaky",
            element.clone(),
            format!(
                "declared flaky until {}: the declaration has lapsed; remove or extend it",
                until.format("%Y-%m-%d")
            ),
            "remove `flaky` from its entry in the config, or set a later `until`; meanwhile its \
             red pages as any other",
            Asc::FAILED_PRECONDITION,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn a_declared_failure_is_ok_and_a_lapsed_declaration_warns() {
        let dir = tempfile::tempdir().unwrap();
        let (config, _) = super::super::loaded(
            dir.path(),
            "[[agents]]\nname = \"orin\"\nendpoint = \"http://127.0.0.1:1\"\n\
             flaky = { reason = \"laptop tunnel drops at night\", until = \"2027-01-31\" }\n\
             [[agents]]\nname = \"vega\"\nendpoint = \"http://127.0.0.1:2\"\n\
             [[hosts]]\nname = \"laptop\"\n\
             [[hosts.tunnels]]\nname = \"heart\"\naddress = \"127.0.0.1:1\"\n\
             flaky = { reason = \"autossh restarts it\", until = \"2026-12-01\" }\n",
        );
        let refused = |name: &str| {
            Finding::fail(
                "agents",
                format!("agent {name}"),
                "connection refused",
                "is the agent running?",
                Asc::DEPENDENCY_UNAVAILABLE,
            )
        };
        let found = apply(
            vec![refused("orin"), refused("vega")],
            &config,
            at("2027-01-31T23:00:00Z"),
        );
        let said: Vec<(Level, &str, &str)> = found
            .iter()
            .map(|f| (f.level, f.subject.as_str(), f.detail.as_str()))
            .collect();
        assert_eq!(
            said,
            [
                (
                    Level::Ok,
                    "agent orin",
                    "declared flaky: laptop tunnel drops at night (until 2027-01-31); now: \
                     connection refused"
                ),
                (Level::Fail, "agent vega", "connection refused"),
                (
                    Level::Warn,
                    "host:laptop/tunnel:heart",
                    "declared flaky until 2026-12-01: the declaration has lapsed; remove or \
                     extend it"
                ),
            ]
        );
        assert!(found[0].fix.is_none());
        // The next day orin's has lapsed too: its failure is a failure again, and it warns.
        let found = apply(vec![refused("orin")], &config, at("2027-02-01T00:00:00Z"));
        assert_eq!(found[0].level, Level::Fail);
        assert!(
            found
                .iter()
                .any(|f| f.subject == "agent:orin" && f.level == Level::Warn)
        );
    }
}

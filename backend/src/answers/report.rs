//! The report of a period on demand (issue 45), for the hub agent: the same report the
//! operator's phone gets at the report's hour and `fleetdash report` prints, built now by
//! [`crate::report::on_demand`] from the files `fleetdash run` writes, and answered in the
//! same shape as the other answers: its whole text as the words, the model's `Report` as the
//! data (the fields `fleetdash report --json` prints).
//!
//! `since` is read as the other answers read it ([`super::moment`]); without one, the report
//! covers the time since the last scheduled report ended, else the last day
//! ([`crate::report::default_since`]), as `fleetdash report` does.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use fleetdash_model::glance::report::Report;
use serde_json::json;

use super::Answer;
use crate::config::{Config, Rules};

/// What the report is built from: the config's files (status.json, the transitions log, the
/// work queue, the reporter's state) and the rules (the flap gap, the log's bounds).
#[derive(Clone)]
pub struct Reports {
    config: Arc<Config>,
    rules: Arc<Rules>,
}

impl Reports {
    pub fn new(config: &Config, rules: &Rules) -> Reports {
        Reports {
            config: Arc::new(config.clone()),
            rules: Arc::new(rules.clone()),
        }
    }

    /// The report of `[since, now)` (`None`: [`crate::report::default_since`]), built on a
    /// blocking thread (files, SQLite). `Err`: why it cannot be built, in words.
    pub async fn build(
        &self,
        since: Option<DateTime<Utc>>,
        now: DateTime<Utc>,
    ) -> Result<Report, String> {
        let this = self.clone();
        tokio::task::spawn_blocking(move || {
            let since = since.unwrap_or_else(|| crate::report::default_since(&this.config, now));
            crate::report::on_demand(&this.config, &this.rules, since, now)
                .map_err(|e| format!("{e:#}"))
        })
        .await
        .unwrap_or_else(|e| Err(format!("the report's thread failed: {e}")))
    }
}

/// A `since` a report can cover from: not after `now` (a report ends now) and not further
/// back than fleetdash takes a span ([`crate::clock::HORIZON`]). `Err`: the caller's mistake,
/// in words.
pub fn check_since(since: DateTime<Utc>, now: DateTime<Utc>) -> Result<DateTime<Utc>, String> {
    let at = since.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    if since > now {
        return Err(format!(
            "since {at}: after now; a report covers the time up to now, so ask since a moment \
             before it"
        ));
    }
    let horizon =
        chrono::Duration::from_std(crate::clock::HORIZON).unwrap_or(chrono::Duration::MAX);
    if now - since > horizon {
        return Err(format!(
            "since {at}: more than {} back: fleetdash takes spans up to {}",
            crate::clock::HORIZON_WORDS,
            crate::clock::HORIZON_WORDS
        ));
    }
    Ok(since)
}

/// `fleet.report`: the report's whole text as words, the `Report` as data. `Err`: why there is
/// no report (no snapshot yet, a log that cannot be read), said as the answer.
pub fn answer(built: Result<&Report, &str>) -> Answer {
    match built {
        Ok(report) => Answer {
            text: report.text().trim_end().to_string(),
            data: serde_json::to_value(report).unwrap_or_else(|e| json!({"error": e.to_string()})),
        },
        Err(why) => Answer {
            text: format!("fleetdash cannot answer: {why}"),
            data: json!({"report": null, "error": why}),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use fleetdash_model::{Band, Transition};

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 6, 7, 30, 0).unwrap()
    }

    fn minutes_before(m: i64) -> DateTime<Utc> {
        now() - chrono::Duration::minutes(m)
    }

    /// A config over a scratch folder: status.json with one agent down, a transitions log with
    /// orin's flap and kai's recovery, no work queue; the report said in UTC.
    fn scratch() -> (tempfile::TempDir, Config, Rules) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fleetdash.toml");
        let config = Config::parse(
            &path,
            "output_dir = \"out\"\nstate_dir = \"state\"\n\n[report]\nat = \"07:30\"\nzone = \
             \"UTC\"\n",
        )
        .unwrap();
        let rules = crate::config::Rules::parse(
            std::path::Path::new("rules.yaml"),
            include_str!("../../../config/rules.yaml"),
        )
        .unwrap();
        let mut snapshot = fleetdash_model::Snapshot::empty(now(), crate::config::fleet_rules());
        snapshot.stale = false;
        snapshot.sections.agents.configured = true;
        snapshot.sections.agents.checked_at = Some(now());
        let mut vega = crate::write::history::tests::agent("vega", false, now());
        vega.reason = Some("down: connection refused".into());
        snapshot.agents = fleetdash_model::Probe::Value(vec![vega]);
        std::fs::create_dir_all(&config.output_dir).unwrap();
        std::fs::write(
            config.output_dir.join(crate::write::status_json::FILE_NAME),
            serde_json::to_vec(&snapshot).unwrap(),
        )
        .unwrap();
        let t = |name: &str, to: Band, m: i64| Transition {
            key: format!("agent:{name}"),
            kind: "agent".into(),
            name: name.into(),
            from: Some(if to == Band::Red {
                Band::Green
            } else {
                Band::Red
            }),
            to,
            at: minutes_before(m),
            reason: (to == Band::Red).then(|| "down: connection refused".into()),
        };
        let log = vec![
            t("orin", Band::Red, 300),
            t("orin", Band::Green, 296),
            t("orin", Band::Red, 290),
            t("orin", Band::Green, 288),
            t("kai", Band::Red, 120),
            t("kai", Band::Green, 95),
            t("vega", Band::Red, 30),
        ];
        std::fs::create_dir_all(&config.state_dir).unwrap();
        std::fs::write(
            config.state_dir.join(crate::write::transitions::FILE_NAME),
            serde_json::to_vec(&json!({"version": 1, "entries": log})).unwrap(),
        )
        .unwrap();
        (dir, config, rules)
    }

    fn build(reports: &Reports, since: Option<DateTime<Utc>>) -> Result<Report, String> {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(reports.build(since, now()))
    }

    #[test]
    fn the_answer_is_the_reports_text_and_its_data() {
        let (_dir, config, rules) = scratch();
        let reports = Reports::new(&config, &rules);
        let report = build(&reports, Some(minutes_before(360))).unwrap();
        let a = answer(Ok(&report));
        let lines: Vec<&str> = a.text.lines().collect();
        assert_eq!(lines[0], "Since 01:30: 1 needs you, 2 recovered");
        assert_eq!(lines[1], "Sun 6 Dec 01:30 – Sun 6 Dec 07:30 (UTC)");
        assert_eq!(
            lines[2],
            "- ✖ agent vega: down: connection refused · since 07:00 (30 min)"
        );
        assert!(
            lines.contains(&"- ✖ agent kai was red 05:30–05:55 (25 min): down: connection refused"),
            "{}",
            a.text
        );
        assert!(
            lines.contains(&"- ✖ agent orin went red 2 times 02:30–02:42, 6 min in all"),
            "{}",
            a.text
        );
        assert!(!a.text.ends_with('\n'));
        assert_eq!(a.data["title"], "Since 01:30: 1 needs you, 2 recovered");
        assert_eq!(a.data["recovered"].as_array().unwrap().len(), 2);
        assert_eq!(a.data["all_clear"], false);
        assert_eq!(a.data["from"], "2026-12-06T01:30:00Z");
        let none = answer(Err("cannot read out/status.json"));
        assert_eq!(
            none.text,
            "fleetdash cannot answer: cannot read out/status.json"
        );
        assert_eq!(none.data["report"], json!(null));
    }

    /// No `since`: from where the last scheduled report ended (the reporter's state file),
    /// else the last day, as `fleetdash report` does.
    #[test]
    fn without_since_it_covers_since_the_last_scheduled_report_else_a_day() {
        let (_dir, config, rules) = scratch();
        let reports = Reports::new(&config, &rules);
        let day = build(&reports, None).unwrap();
        assert_eq!(day.from, now() - chrono::Duration::hours(24));
        assert_eq!(day.recovered.len(), 2);
        // The night's report ended 100 min ago: orin's flap is the previous report's.
        let mut state = crate::report::state::State::fresh(minutes_before(400));
        state.covered_until = minutes_before(100);
        crate::report::state::save(&config.state_dir, &state).unwrap();
        let since_last = build(&reports, None).unwrap();
        assert_eq!(since_last.from, minutes_before(100));
        assert_eq!(since_last.title, "Since 05:50: 1 needs you, 1 recovered");
        assert_eq!(
            since_last.recovered,
            ["✖ agent kai was red 05:50–05:55 (5 min): down: connection refused"]
        );
    }

    #[test]
    fn no_snapshot_is_said_as_the_answer() {
        let (_dir, config, rules) = scratch();
        std::fs::remove_file(config.output_dir.join(crate::write::status_json::FILE_NAME)).unwrap();
        let why = build(&Reports::new(&config, &rules), None).unwrap_err();
        assert!(why.contains("status.json"), "{why}");
        assert!(why.contains("has `fleetdash run` written it?"), "{why}");
    }

    #[test]
    fn a_since_after_now_or_past_the_horizon_is_the_callers_mistake() {
        assert_eq!(
            check_since(minutes_before(60), now()),
            Ok(minutes_before(60))
        );
        assert_eq!(check_since(now(), now()), Ok(now()));
        let ahead = check_since(now() + chrono::Duration::minutes(1), now()).unwrap_err();
        assert!(
            ahead.starts_with("since 2026-12-06T07:31:00Z: after now"),
            "{ahead}"
        );
        let far = check_since(now() - chrono::Duration::days(367), now()).unwrap_err();
        assert!(far.contains("more than 366 d back"), "{far}");
        assert!(check_since(now() - chrono::Duration::days(366), now()).is_ok());
    }
}

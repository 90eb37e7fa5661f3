//! `[report]` as the doctor sees it: when the report goes and where, and whether the last one
//! due went out. A report that silently stopped being sent is what users of other tools found
//! out weeks late (Healthchecks #1201, #706). Read-only: `report-state.json` is read, never
//! written. No `[report]` is a choice: an ok-level note.

use chrono::{DateTime, Utc};
use fleetdash_model::Asc;

use super::Finding;
use crate::config::{Config, Every};
use crate::report::{schedule, state, zone_at};

const SUBJECT: &str = "[report]";

/// How long after its hour a report may still be on its way before the doctor says it is late
/// (the reporter wakes every 15 s; a slow channel retries through the outbox).
const LATE_AFTER_MIN: i64 = 15;

/// Blocking: reads the reporter's state file.
pub fn findings(config: &Config, now: DateTime<Utc>) -> Vec<Finding> {
    let Some(report) = &config.report else {
        return vec![Finding::ok(
            "report",
            SUBJECT,
            "none: no report of the night (`fleetdash init --report 07:30` adds one; \
             docs/report.md)",
        )];
    };
    let moment = |at: DateTime<Utc>| {
        let (_, offset) = zone_at(config, at);
        at.with_timezone(&offset)
            .format("%a %-d %b %H:%M")
            .to_string()
    };
    let (h, m) = (report.at_minute / 60, report.at_minute % 60);
    let every = match report.every {
        Every::Day => "every day".to_string(),
        Every::Week(d) => format!(
            "every {}",
            [
                "Monday",
                "Tuesday",
                "Wednesday",
                "Thursday",
                "Friday",
                "Saturday",
                "Sunday"
            ][usize::from(d.min(6))]
        ),
    };
    let when = format!("{every} at {h:02}:{m:02} ({})", report.zone_name());
    if report.channels.is_empty() {
        return vec![Finding::warn(
            "report",
            SUBJECT,
            format!(
                "{when}, to no channel (none configured but Alertmanager, which is a pager): \
                 read on the page alone (api/report.html)"
            ),
            "add an ntfy or webhook channel under [[alerts.channels]] (or the hub agent's a2a \
             channel); the report goes to every channel that is not a pager",
            Asc::FAILED_PRECONDITION,
        )];
    }
    let next = moment(schedule::next_after(report, now));
    let to = report.channels.join(", ");
    let Some(state) = state::read(&config.state_dir) else {
        return vec![Finding::ok(
            "report",
            SUBJECT,
            format!("{when} to {to}; none sent yet, the next {next}"),
        )];
    };
    let due = schedule::last_at_or_before(report, now);
    let missed = due > state.watching_since
        && state.last_due.is_none_or(|last| last < due)
        && now - due > chrono::Duration::minutes(LATE_AFTER_MIN);
    if missed {
        return vec![Finding::warn(
            "report",
            SUBJECT,
            format!(
                "{when} to {to}: the one due {} has not gone out",
                moment(due)
            ),
            "is `fleetdash run` running? On waking it sends it, saying it is late and why; \
             `fleetdash report` prints it now",
            Asc::DEPENDENCY_UNAVAILABLE,
        )];
    }
    let last = state
        .last_due
        .map(|d| format!("the last {}", moment(d)))
        .unwrap_or_else(|| "none sent yet".into());
    vec![Finding::ok(
        "report",
        SUBJECT,
        format!("{when} to {to}; {last}, the next {next}"),
    )]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::{Level, loaded};

    const CHANNEL: &str = "[[alerts.channels]]\nname = \"phone\"\ntype = \"ntfy\"\n\
                           url = \"http://127.0.0.1:9/t\"\n";

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    fn said(dir: &std::path::Path, body: &str, now: DateTime<Utc>) -> (Level, String) {
        let (config, _) = loaded(dir, body);
        let f = findings(&config, now);
        assert_eq!(f.len(), 1, "{f:?}");
        (f[0].level, f[0].detail.clone())
    }

    #[test]
    fn none_is_a_note_and_no_channel_warns() {
        let dir = tempfile::tempdir().unwrap();
        let now = at("2026-03-04T12:00:00Z");
        let (level, detail) = said(dir.path(), "", now);
        assert_eq!(level, Level::Ok);
        assert!(detail.contains("init --report"), "{detail}");
        let (level, detail) = said(
            dir.path(),
            "[report]\nat = \"07:30\"\nzone = \"UTC\"\n",
            now,
        );
        assert_eq!(level, Level::Warn);
        assert!(
            detail.starts_with("every day at 07:30 (UTC), to no channel"),
            "{detail}"
        );
    }

    /// Sent on time: ok, with the last and the next; the one due this morning not out 15 min
    /// after its hour, while the reporter was watching: a warning naming it.
    #[test]
    fn a_report_that_did_not_go_out_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let body = format!("{CHANNEL}\n[report]\nat = \"07:30\"\nzone = \"UTC\"\n");
        let now = at("2026-03-04T12:00:00Z");
        let (level, detail) = said(dir.path(), &body, now);
        assert_eq!(level, Level::Ok);
        assert!(
            detail.ends_with("to phone; none sent yet, the next Thu 5 Mar 07:30"),
            "{detail}"
        );

        let (config, _) = loaded(dir.path(), &body);
        std::fs::create_dir_all(&config.state_dir).unwrap();
        let mut s = state::State::fresh(at("2026-03-01T00:00:00Z"));
        s.last_due = Some(at("2026-03-04T07:30:00Z"));
        state::save(&config.state_dir, &s).unwrap();
        let (level, detail) = said(dir.path(), &body, now);
        assert_eq!(level, Level::Ok);
        assert!(
            detail.ends_with("the last Wed 4 Mar 07:30, the next Thu 5 Mar 07:30"),
            "{detail}"
        );

        s.last_due = Some(at("2026-03-03T07:30:00Z"));
        state::save(&config.state_dir, &s).unwrap();
        let (level, detail) = said(dir.path(), &body, now);
        assert_eq!(level, Level::Warn);
        assert!(
            detail.ends_with("the one due Wed 4 Mar 07:30 has not gone out"),
            "{detail}"
        );
        // Ten minutes after its hour it may still be on its way.
        let (level, _) = said(dir.path(), &body, at("2026-03-04T07:40:00Z"));
        assert_eq!(level, Level::Ok);
    }
}

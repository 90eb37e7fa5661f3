//! The last report for the page: `<output_dir>/report.html`, served beside `snapshot.html`
//! (`/api/report.html`), where a report's ntfy notification leads and the page links. Plain
//! HTML that reads on a phone without the page's script; every byte through the gate. What
//! came back and the red time show the rules' `report.page_lines` lines and fold the rest
//! (the model's `Report::page`) in a `<details>`: one tap, no script.
//!
//! Blocking (fsync): call from a blocking thread.

use std::path::Path;

use anyhow::Result;
use askama::Template;
use fleetdash_model::glance::report::{PageParts, Report};

use crate::config::Config;
use crate::redact::RedactionGate;
use crate::write::atomic;

pub const FILE_NAME: &str = "report.html";

#[derive(Template)]
#[template(path = "report.html")]
struct Page<'a> {
    report: &'a Report,
    page: PageParts<'a>,
}

/// The report's page: where its notification's click leads (the dashboard's URL, when set).
pub fn link(config: &Config) -> Option<String> {
    let base = config.alerts.dashboard_url.as_ref()?;
    base.join("api/report.html").ok().map(|u| u.to_string())
}

/// Where no report was written yet, a page that says when the first goes (or how to ask for
/// one): the page's "Last report" link never leads nowhere once `run` has started.
pub fn ensure(config: &Config) -> Result<()> {
    let path = config.output_dir.join(FILE_NAME);
    if path.exists() {
        return Ok(());
    }
    let said = match &config.report {
        Some(r) => format!(
            "The first report goes at {:02}:{:02} ({}), covering the time from fleetdash's start.",
            r.at_minute / 60,
            r.at_minute % 60,
            r.zone_name()
        ),
        None => "No report is set: add <code>[report]</code> with <code>at = \"07:30\"</code> \
                 to the config for one each morning (docs/report.md), or run \
                 <code>fleetdash report</code>."
            .to_string(),
    };
    let html = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>No report yet</title></head><body><h1>No report yet</h1><p>{said}</p>\
         <p><a href=\"../\">The fleet now</a></p></body></html>\n"
    );
    atomic::write(&path, html.as_bytes())
}

/// Renders `report` and replaces `<dir>/report.html` with it.
pub fn write(dir: &Path, report: &Report, gate: &RedactionGate) -> Result<()> {
    let html = render(report)?;
    atomic::write(&dir.join(FILE_NAME), gate.redact_str(&html).as_bytes())
}

pub fn render(report: &Report) -> Result<String> {
    Ok(Page {
        report,
        page: report.page(),
    }
    .render()?)
}

#[cfg(test)]
mod tests {
    use chrono::{Duration, FixedOffset, TimeZone, Utc};
    use fleetdash_model::glance::report::{Inputs, ReportRules, build};
    use fleetdash_model::{Band, Snapshot, Transition};

    use super::render;

    #[test]
    fn what_came_back_past_the_rules_lines_is_folded_one_tap_away() {
        let t0 = Utc.with_ymd_and_hms(2026, 3, 7, 0, 0, 0).unwrap();
        let at = |m: i64| t0 + Duration::minutes(m);
        // Five agents red once each, the later ones longer.
        let log: Vec<Transition> = (0..5)
            .flat_map(|i| {
                let change = |from, to, m| Transition {
                    key: format!("agent:a{i}"),
                    kind: "agent".into(),
                    name: format!("a{i}"),
                    from: Some(from),
                    to,
                    at: at(m),
                    reason: None,
                };
                [
                    change(Band::Green, Band::Red, 60 * i),
                    change(Band::Red, Band::Green, 60 * i + 5 + i),
                ]
            })
            .collect();
        let snapshot = Snapshot::empty(at(480), crate::config::fleet_rules());
        let report = build(&Inputs {
            word: "Night".into(),
            from: at(0),
            to: at(480),
            before: None,
            log: &log,
            log_whole_from: at(0),
            snapshot: &snapshot,
            work: None,
            blind: &[],
            late: None,
            rules: ReportRules {
                flap_gap_s: 1800,
                phone_lines: 4,
                page_lines: 2,
            },
            offset: FixedOffset::east_opt(0).unwrap(),
            zone: "UTC".into(),
            first: false,
        });
        let html = render(&report).unwrap();
        let (open, folded) = html.split_once("<details>").expect("a fold");
        assert!(open.contains(&report.recovered[1]), "{html}");
        assert!(
            folded.contains("<summary>and 3 more, of 3 agents</summary>"),
            "{html}"
        );
        for line in &report.recovered[2..] {
            assert!(
                !open.contains(line) && folded.contains(line),
                "{line}: {html}"
            );
        }
        // The red time folds too, and the rest line still follows what came back.
        assert_eq!(html.matches("<details>").count(), 2, "{html}");
        assert!(folded.contains(&report.rest), "{html}");
    }
}

//! The last report for the page: `<output_dir>/report.html`, served beside `snapshot.html`
//! (`/api/report.html`), where a report's ntfy notification leads and the page links. Plain
//! HTML that reads on a phone without the page's script; every byte through the gate.
//!
//! Blocking (fsync): call from a blocking thread.

use std::path::Path;

use anyhow::Result;
use askama::Template;
use fleetdash_model::glance::report::Report;

use crate::config::Config;
use crate::redact::RedactionGate;
use crate::write::atomic;

pub const FILE_NAME: &str = "report.html";

#[derive(Template)]
#[template(path = "report.html")]
struct Page<'a> {
    report: &'a Report,
    lines: Vec<String>,
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
        lines: report.lines(),
    }
    .render()?)
}

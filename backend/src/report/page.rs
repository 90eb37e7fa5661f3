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

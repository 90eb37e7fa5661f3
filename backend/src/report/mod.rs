//! The report of a period (issue 45): what the night did, at the operator's hour, exactly
//! once. The model words it ([`fleetdash_model::glance::report`]); this module reads what it
//! is built from and sends it:
//!
//! - [`schedule`]: when reports fall due (`[report] at`, its zone, every day or week);
//! - [`gather`]: the snapshot, the transitions log, the work queue's events, read from disk;
//! - [`state`]: the reporter's state file (the last period's end, the report on its way,
//!   fleetdash's own blind spells);
//! - [`job`]: `fleetdash run`'s reporter, exactly once per due moment through the outbox;
//! - [`page`]: the last report as `report.html`, for the page and the notification's click;
//! - [`on_demand`]: the same report for any span, for `fleetdash report`, MCP and A2A.

pub mod gather;
pub mod job;
pub mod page;
pub mod schedule;
pub mod state;

use anyhow::Result;
use chrono::{DateTime, Utc};
use fleetdash_model::glance::report::Report;

use crate::config::{Config, Rules};

/// The report of `[since, now)`, built now from the files `config` names: the reporter's
/// blind spells included when its state file is there. Said in `[report]`'s zone, else this
/// host's. Blocking: call from a blocking thread.
pub fn on_demand(
    config: &Config,
    rules: &Rules,
    since: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<Report> {
    // Read only: a reader never moves the reporter's file aside (`run` judges it).
    let (blind, watching_since) = state::read(&config.state_dir)
        .map(|s| (s.blind, Some(s.watching_since)))
        .unwrap_or_default();
    let (zone, offset) = zone_at(config, now);
    let period = gather::Period {
        word: format!("Since {}", fleetdash_model::moment(since, now, offset)),
        from: since,
        to: now,
        before: Some(since - (now - since)),
        watching_since,
        blind,
        late: None,
        zone: (zone, offset),
        first: false,
    };
    gather::build(config, rules, &period)
}

/// A report asked for with no start covers this far back when no scheduled report has ended.
pub const DEFAULT_SPAN_H: i64 = 24;

/// Where a report asked for with no start begins (`fleetdash report`, MCP, A2A): where the
/// last scheduled report's period ended, else [`DEFAULT_SPAN_H`] back. Blocking (reads the
/// reporter's state file).
pub fn default_since(config: &Config, now: DateTime<Utc>) -> DateTime<Utc> {
    match state::read(&config.state_dir) {
        Some(s) if s.covered_until < now => s.covered_until,
        _ => now - chrono::Duration::hours(DEFAULT_SPAN_H),
    }
}

/// The report's zone (`[report] zone`, else this host's): its name and its offset at `at`.
pub fn zone_at(config: &Config, at: DateTime<Utc>) -> (String, chrono::FixedOffset) {
    let tz = config
        .report
        .as_ref()
        .map(|r| r.time_zone())
        .unwrap_or_else(jiff::tz::TimeZone::system);
    let name = config
        .report
        .as_ref()
        .map(|r| r.zone_name())
        .unwrap_or_else(|| tz.iana_name().unwrap_or("UTC").to_string());
    let seconds = jiff::Timestamp::from_second(at.timestamp())
        .map(|ts| tz.to_offset(ts).seconds())
        .unwrap_or(0);
    let offset = chrono::FixedOffset::east_opt(seconds)
        .unwrap_or(chrono::FixedOffset::east_opt(0).expect("UTC"));
    (name, offset)
}

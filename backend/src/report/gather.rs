//! What a report is built from, read from disk: the last snapshot (`status.json`), the
//! transitions log and how far back it is whole, the work queue's events in the period (read
//! only), and the reporter's blind spells. Then the model builds and words it
//! ([`fleetdash_model::glance::report::build`]): the same report for the phone, `fleetdash
//! report`, MCP and the hub agent.
//!
//! Blocking (files, SQLite): call from a blocking thread.

use std::path::Path;

use anyhow::{Context, Result};
use chrono::{DateTime, Duration, FixedOffset, Utc};
use fleetdash_model::Snapshot;
use fleetdash_model::glance::report::{self, BlindSpell, Inputs, Report, ReportRules, WorkTally};
use rusqlite::{Connection, OpenFlags};

use crate::config::{Config, Rules};
use crate::write::{status_json, transitions};

/// A log this close to its byte bound may have dropped its oldest entries (an entry's texts
/// are cut to 240 characters each: one is well under this).
const FULL_MARGIN_BYTES: usize = 4096;

/// One period to report on.
pub struct Period {
    /// "Night", "Week", "Since 14:02".
    pub word: String,
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    pub before: Option<DateTime<Utc>>,
    /// Nothing before this is known to fleetdash's reports (its first start).
    pub watching_since: Option<DateTime<Utc>>,
    pub blind: Vec<BlindSpell>,
    pub late: Option<String>,
    /// The zone the times are said in: its name, and its offset at `to`.
    pub zone: (String, FixedOffset),
    /// The reporter's first report (its period is all fleetdash has watched).
    pub first: bool,
}

/// The report of `period`, from what `config`'s files hold now.
pub fn build(config: &Config, rules: &Rules, period: &Period) -> Result<Report> {
    let status = config.output_dir.join(status_json::FILE_NAME);
    let bytes = std::fs::read(&status).with_context(|| {
        format!(
            "cannot read {} (has `fleetdash run` written it?)",
            status.display()
        )
    })?;
    let snapshot: Snapshot = serde_json::from_slice(&bytes)
        .with_context(|| format!("{} is not a snapshot", status.display()))?;
    let log = transitions::read_log(&config.state_dir)?;
    let bounds = transitions::Bounds::of(&rules.state);
    // A full ring may have dropped what is older than its oldest entry; otherwise it keeps
    // everything of its window.
    // Full by entries, or by bytes (long reasons): the oldest may have gone.
    let bytes =
        std::fs::metadata(config.state_dir.join(transitions::FILE_NAME)).map_or(0, |m| m.len());
    let full_by_bytes = bytes as usize + FULL_MARGIN_BYTES >= bounds.max_file_bytes;
    let mut whole_from = if log.len() >= bounds.max_entries || full_by_bytes {
        log.first().map_or(period.to, |t| t.at)
    } else {
        period.to - Duration::seconds(bounds.keep_s)
    };
    // Nothing is known to a report from before the reporter first watched (the log's oldest
    // entry says nothing: a quiet fleet writes none).
    if let Some(since) = period.watching_since {
        whole_from = whole_from.max(since);
    }
    let work = match &config.work_queue {
        Some(q) => Some(work_tally(&q.db, period.from, period.to)?),
        None => None,
    };
    let inputs = Inputs {
        word: period.word.clone(),
        from: period.from,
        to: period.to,
        before: period.before,
        log: &log,
        log_whole_from: whole_from,
        snapshot: &snapshot,
        work,
        blind: &period.blind,
        late: period.late.clone(),
        rules: ReportRules {
            flap_gap_s: i64::try_from(rules.report.flap_gap.seconds).unwrap_or(i64::MAX),
            phone_lines: usize::try_from(rules.report.phone_lines.count).unwrap_or(usize::MAX),
            page_lines: usize::try_from(rules.report.page_lines.count).unwrap_or(usize::MAX),
        },
        offset: period.zone.1,
        zone: period.zone.0.clone(),
        first: period.first,
    };
    Ok(report::build(&inputs))
}

/// The work queue's events in `[from, to)`: tasks finished, blocked, orphaned, and those
/// assigned then and never ACKed. Read only; a queue not created yet is an empty one.
pub fn work_tally(db: &Path, from: DateTime<Utc>, to: DateTime<Utc>) -> Result<WorkTally> {
    if !db.exists() {
        return Ok(WorkTally::default());
    }
    let conn = Connection::open_with_flags(
        db,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .with_context(|| format!("cannot open the work queue {} to read", db.display()))?;
    let (from, to) = (from.timestamp_micros(), to.timestamp_micros());
    let count = |sql: &str| -> Result<u64> {
        let n: i64 = conn
            .query_row(sql, [from, to], |r| r.get(0))
            .with_context(|| format!("cannot read the work queue {}", db.display()))?;
        Ok(u64::try_from(n).unwrap_or(0))
    };
    let events = |kind: &str| {
        format!(
            "SELECT COUNT(DISTINCT task_id) FROM events WHERE kind = '{kind}' AND outcome = \
             'applied' AND received_at >= ?1 AND received_at < ?2"
        )
    };
    Ok(WorkTally {
        finished: count(&events("completion"))?,
        blocked: count(&events("blocker"))?,
        orphaned: count(&events("orphaned"))?,
        never_taken: count(
            "SELECT COUNT(*) FROM tasks WHERE created_at >= ?1 AND created_at < ?2 AND ack_kind \
             IS NULL",
        )?,
    })
}

//! Crons, judged like Healthchecks: each job has a period and a grace; it is up while its last
//! success is younger than the period, late inside the grace, down after it. A run that
//! started and did not finish within the grace is down, and so is a job whose last run failed.
//!
//! The evidence is what the job leaves behind: the record `fleetdash cron-run` writes
//! ([`Record`]), or the modification time of a stamp file the job touches.

use chrono::{DateTime, Utc};
use fleetdash_model::CronCheck;
use serde::{Deserialize, Serialize};

use crate::config::CronConfig;
use crate::net::ProbeFailure;

/// What a job left behind, read from a record or a stamp file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Evidence {
    pub last_success: Option<DateTime<Utc>>,
    /// When the latest run started (running or finished).
    pub last_start: Option<DateTime<Utc>>,
    /// When the latest run finished; older than `last_start` while a run is in progress.
    pub last_finish: Option<DateTime<Utc>>,
    pub last_exit_code: Option<i32>,
}

/// The file `fleetdash cron-run NAME` keeps at `<cron_dir>/NAME.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    pub name: String,
    pub last_start: Option<DateTime<Utc>>,
    pub last_finish: Option<DateTime<Utc>>,
    pub last_exit_code: Option<i32>,
    pub last_duration_ms: Option<u64>,
    pub last_success: Option<DateTime<Utc>>,
}

/// Judges one cron at `now`. `checked_at` stamps the row.
pub fn judge(
    cfg: &CronConfig,
    evidence: Result<Evidence, ProbeFailure>,
    checked_at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> CronCheck {
    let _ = (cfg, evidence, checked_at, now);
    todo!("cron::judge")
}

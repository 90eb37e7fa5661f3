//! Crons, judged like Healthchecks: each job has a period and a grace; it is up while its last
//! success is younger than the period, late inside the grace, down after it. A run that
//! started and did not finish within the grace is down, and so is a job whose last run failed.
//!
//! The evidence is what the job leaves behind: the record `fleetdash cron-run` writes
//! ([`Record`]), or the modification time of a stamp file the job touches.

use std::path::Path;

use chrono::{DateTime, Utc};
use fleetdash_model::{Asc, CronCheck};
use serde::{Deserialize, Serialize};

use crate::config::{CronConfig, CronEvidence};
use crate::net::ProbeFailure;

/// A record larger than this is not one `cron-run` wrote (it writes a few hundred bytes).
const MAX_RECORD_BYTES: u64 = 64 * 1024;

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

impl From<&Record> for Evidence {
    fn from(r: &Record) -> Evidence {
        Evidence {
            last_success: r.last_success,
            last_start: r.last_start,
            last_finish: r.last_finish,
            last_exit_code: r.last_exit_code,
        }
    }
}

/// The record's path for a job: `<cron_dir>/<name>.json`.
pub fn record_path(cron_dir: &Path, name: &str) -> std::path::PathBuf {
    cron_dir.join(format!("{name}.json"))
}

/// Reads one job's evidence on this machine. A missing record or stamp is not an error: the
/// job has simply never checked in, which [`judge`] says loudly.
pub fn read_local(cron_dir: Option<&str>, cfg: &CronConfig) -> Result<Evidence, ProbeFailure> {
    match &cfg.evidence {
        CronEvidence::Record => {
            let dir = cron_dir.ok_or_else(|| {
                ProbeFailure::new(
                    Asc::FAILED_PRECONDITION,
                    "no cron_dir configured for this host's cron records",
                )
            })?;
            let path = record_path(Path::new(dir), &cfg.name);
            let bytes = match read_bounded(&path) {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Ok(Evidence::default());
                }
                Err(e) => {
                    return Err(ProbeFailure::new(
                        Asc::DEPENDENCY_UNAVAILABLE,
                        format!("cannot read {}: {e}", path.display()),
                    ));
                }
            };
            evidence_from_record(&bytes).map_err(|f| f.context(&path.display().to_string()))
        }
        CronEvidence::Stamp(stamp) => match std::fs::metadata(stamp).and_then(|m| m.modified()) {
            Ok(mtime) => Ok(evidence_from_stamp(mtime.into())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Evidence::default()),
            Err(e) => Err(ProbeFailure::new(
                Asc::DEPENDENCY_UNAVAILABLE,
                format!("cannot read the modification time of {stamp}: {e}"),
            )),
        },
    }
}

fn read_bounded(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_RECORD_BYTES + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_RECORD_BYTES {
        return Err(std::io::Error::other(format!(
            "larger than {MAX_RECORD_BYTES} bytes, not a cron-run record"
        )));
    }
    Ok(bytes)
}

/// Parses a record's bytes (read here, over SSH, ...).
pub fn evidence_from_record(bytes: &[u8]) -> Result<Evidence, ProbeFailure> {
    let record: Record = serde_json::from_slice(bytes).map_err(|e| {
        ProbeFailure::new(
            Asc::INTEGRITY_CHECK_FAILED,
            format!("corrupt cron-run record ({e})"),
        )
    })?;
    Ok(Evidence::from(&record))
}

/// A stamp is touched on success, so its modification time is the last success and nothing
/// else is known.
pub fn evidence_from_stamp(mtime: DateTime<Utc>) -> Evidence {
    Evidence {
        last_success: Some(mtime),
        ..Evidence::default()
    }
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

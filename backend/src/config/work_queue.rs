//! `[work_queue]`: where the work queue's SQLite file lives (spec 003 §3.2: one file per
//! workspace, e.g. `operation/state/tasks.db`). fleetdash creates it on first use, so it is
//! resolved like every other path but not looked for by `check`.

use std::path::PathBuf;

use super::table::Table;
use super::validator::Validator;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkQueueConfig {
    /// The queue's SQLite file (with its `-wal` and `-shm` beside it).
    pub db: PathBuf,
}

/// Reads `[work_queue]`; `None` when it is absent or wrong (the errors say why).
pub(super) fn read(v: &mut Validator, mut t: Table) -> Option<WorkQueueConfig> {
    if !t.is_present() {
        return None;
    }
    let db = t.required_string(
        v,
        "db",
        "the work queue's SQLite file, e.g. \"operation/state/tasks.db\"",
    );
    t.finish(v);
    let db = db?;
    if db.get_ref().trim().is_empty() {
        v.error(&db, t.field("db"), "must not be empty");
        return None;
    }
    Some(WorkQueueConfig {
        db: v.path(db.get_ref()),
    })
}

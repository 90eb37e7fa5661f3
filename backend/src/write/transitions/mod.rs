//! The transitions log: every band change of every element, kept in
//! `<state_dir>/transitions.json` at a fixed size however long fleetdash runs, and the recent
//! ones carried in `status.json` for the page, `snapshot.html` and (later) alerts.
//!
//! Each write compares the bands of the previous snapshot's elements with the new snapshot's
//! ([`elements()`], [`compare()`]), under the status lock, after the redaction gate: keys, names
//! and reasons are the gated snapshot's own text, never raw probe or audit text. Then the log on
//! disk takes the changes ([`TransitionLog`]). Three parts, so the pure ones stay apart from the
//! disk:
//! - `elements`: what a snapshot says about each element, by its stable key;
//! - `compare`: which band changes between two sets of elements are transitions;
//! - `log`: the ring file on disk (load, append, bounds, save) and status.json's share of it;
//! - `said`: each change said once in fleetdash's own log, with its ASC code.

mod compare;
mod elements;
mod log;
pub mod said;

pub use compare::compare;
pub use elements::{Elements, elements};
pub use log::{Appended, Bounds, FILE_NAME, RECENT_MAX, RECENT_S, TransitionLog, read_log, recent};

/// Fixtures the parts' tests share.
#[cfg(test)]
mod tests {
    use chrono::{DateTime, TimeZone, Utc};
    use fleetdash_model::{Band, Transition};

    pub(super) fn t0() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 30, 6, 0, 0).unwrap()
    }

    /// (key, from, to) of each transition.
    pub(super) fn changes(list: &[Transition]) -> Vec<(&str, Option<Band>, Band)> {
        list.iter()
            .map(|t| (t.key.as_str(), t.from, t.to))
            .collect()
    }
}

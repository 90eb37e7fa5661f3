//! What judges things that must check in, shared by the collectors that do so (crons, backups,
//! the agents' heartbeat reports) so that none reaches into another for it: Healthchecks' Up /
//! Late / Down on the age of the last check-in, and how far ahead of this clock a check-in's
//! time may be and still be believed.

use chrono::TimeDelta;
use fleetdash_model::CronState;

use crate::clock::Now;

/// A timestamp further in the future than this is not believed: one bogus date would otherwise
/// keep a backup or a cron green for ever. An hour covers clocks that disagree.
pub const FUTURE_SKEW: TimeDelta = TimeDelta::hours(1);

/// Healthchecks' model on one age of the last check-in: up while it is at most the period,
/// late inside the grace after it, down beyond. Each boundary belongs to the better state.
/// Crons and the agents' heartbeat reports (push checks) are judged by it alike. After a
/// forward step or a wake, neither limit is passed until it has been watched again
/// ([`Now::reached`]): the agents get a whole window from the wake to check in.
pub fn healthchecks_state(age_s: u64, period_s: u64, grace_s: u64, now: &Now) -> CronState {
    let late_at = period_s.saturating_add(1);
    let down_at = late_at.saturating_add(grace_s);
    if !now.reached(age_s, late_at) {
        CronState::Up
    } else if !now.reached(age_s, down_at) {
        CronState::Late
    } else {
        CronState::Down
    }
}

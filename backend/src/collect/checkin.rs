//! What judges things that must check in, shared by the collectors that do so (crons, backups,
//! the agents' heartbeat reports) so that none reaches into another for it: Healthchecks' Up /
//! Late / Down on the age of the last check-in, and how far ahead of this clock a check-in's
//! time may be and still be believed.

use chrono::TimeDelta;
use fleetdash_model::CronState;

/// A timestamp further in the future than this is not believed: one bogus date would otherwise
/// keep a backup or a cron green for ever. An hour covers clocks that disagree.
pub const FUTURE_SKEW: TimeDelta = TimeDelta::hours(1);

/// Healthchecks' model on one age of the last check-in: up while it is at most the period,
/// late inside the grace after it, down beyond. Each boundary belongs to the better state.
/// Crons and the agents' heartbeat reports (push checks) are judged by it alike.
pub fn healthchecks_state(age_s: u64, period_s: u64, grace_s: u64) -> CronState {
    if age_s <= period_s {
        CronState::Up
    } else if age_s <= period_s.saturating_add(grace_s) {
        CronState::Late
    } else {
        CronState::Down
    }
}

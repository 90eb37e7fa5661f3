//! Quick re-probes (issue 43): a first red reading is confirmed seconds later, not a cadence
//! later.
//!
//! `alerts.fail_after_passes` asks for consecutive red readings of an element's section before
//! anything pages, so that one lost probe pages nobody. Read only at the section's cadence, the
//! second one came a whole cadence after the first: an agent killed at a random moment reached
//! the phone 152 to 263 s later on the defaults (agents every 2 min). Uptime Kuma confirms a
//! failure with retries at a retry interval of their own; Gatus pages after interval ×
//! failure-threshold, which is what fleetdash did. So after a reading that leaves a red of its
//! section counting toward `fail_after_passes` and not yet fired (the engine says which,
//! `alerting::engine::confirm`), the section's collector runs again `reprobe.spacing_seconds`
//! after that reading instead of at its next pass, up to `reprobe.count` times before its next
//! regular pass. A lost probe is green again at the re-probe and pages nobody; a death is
//! confirmed within seconds and reaches the phone within cadence + spacing + group wait.
//!
//! Why the whole section, not only its failing elements: a re-probe is a reading like any other
//! (the engine counts an element when its section's reading is renewed, the staleness banner
//! judges the same reading), so nothing downstream learns a second kind of reading; and one
//! re-probe confirms every red of its section at once, however many there are. Re-probing only
//! the failing agents would cost fewer probes at 1,000 agents (a new death there costs one more
//! pass of the whole fleet, about 1.2 × the probe timeout with 10 % hung, `agents_pass`), but
//! would need partial section updates and a reading per row through the snapshot's merge, the
//! engine and the staleness judgement. The cost is bounded instead:
//! - at most `reprobe.count` re-probes between two regular passes of a collector, whatever its
//!   elements do: a section whose elements flap costs at most (1 + count) × its regular load;
//! - only a red not yet fired asks for one: a hung agent (or a hundred) whose alert is open, or
//!   one held back by a silence, a maintenance window or a root cause down, asks for none, so a
//!   fleet with hung agents costs nothing more once they have paged;
//! - a re-probe is never closer than `spacing` to the reading before it, and never replaces a
//!   regular pass: when the next regular pass comes first, it is the confirmation.
//!
//! Every wait is on the monotonic clock (tokio's `Instant`): a step of the wall clock moves no
//! re-probe. The decision is pure ([`Schedule`]); `super::run` sleeps and reads.

use std::time::Duration;

use tokio::time::Instant;

/// The rules' `reprobe` group, as the loops use it: how long after a red reading the section is
/// read again, and how many times at most between two regular passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reprobes {
    pub spacing: Duration,
    pub count: u64,
}

impl Reprobes {
    /// No re-probes: without alerting (no channel) nothing waits for a confirmation.
    pub const NONE: Reprobes = Reprobes {
        spacing: Duration::ZERO,
        count: 0,
    };

    pub fn of(rules: &crate::config::AlertRules) -> Reprobes {
        Reprobes {
            spacing: Duration::from_secs(rules.reprobe_spacing.seconds),
            count: rules.reprobe_count.count,
        }
    }
}

/// What a loop's reading is: its regular pass, or the n-th re-probe after one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    Regular,
    Reprobe(u64),
}

/// When a loop reads next, and which reading it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Next {
    pub at: Instant,
    pub reading: Reading,
}

/// One collector loop's schedule: a regular pass a cadence after the end of the one before (as
/// the loops always ran), and between two of them at most `count` re-probes, each `spacing`
/// after the end of the reading before it, while that reading left a red of its section
/// unconfirmed.
#[derive(Debug, Clone)]
pub struct Schedule {
    cadence: Duration,
    reprobes: Reprobes,
    /// When the next regular pass is due: a cadence after the last regular one ended.
    regular_at: Option<Instant>,
    /// Re-probes taken since the last regular pass.
    taken: u64,
}

impl Schedule {
    pub fn new(cadence: Duration, reprobes: Reprobes) -> Schedule {
        Schedule {
            cadence,
            reprobes,
            regular_at: None,
            taken: 0,
        }
    }

    /// A reading ended at `ended`. A regular one sets the next regular pass a cadence later and
    /// renews the re-probes allowed before it; a re-probe moves nothing.
    pub fn ended(&mut self, reading: Reading, ended: Instant) {
        match reading {
            Reading::Regular => {
                self.regular_at = Some(ended + self.cadence);
                self.taken = 0;
            }
            Reading::Reprobe(n) => self.taken = n,
        }
    }

    /// When the next regular pass is due (the loop waits no longer than this for the writer's
    /// answer). Before any regular pass ended: now, the first pass.
    pub fn regular_at(&self, now: Instant) -> Instant {
        self.regular_at.unwrap_or(now)
    }

    /// What follows the reading that ended at `ended`, `unconfirmed` saying whether it left a
    /// red of its section counting and not yet fired: a re-probe `spacing` after it while the
    /// count allows and the next regular pass would come later; otherwise that regular pass.
    pub fn next(&self, ended: Instant, unconfirmed: bool) -> Next {
        let regular = Next {
            at: self.regular_at(ended),
            reading: Reading::Regular,
        };
        let at = ended + self.reprobes.spacing;
        if unconfirmed && self.taken < self.reprobes.count && at < regular.at {
            Next {
                at,
                reading: Reading::Reprobe(self.taken + 1),
            }
        } else {
            regular
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CADENCE: Duration = Duration::from_secs(120);
    const SPACING: Duration = Duration::from_secs(10);

    fn schedule(count: u64) -> Schedule {
        Schedule::new(
            CADENCE,
            Reprobes {
                spacing: SPACING,
                count,
            },
        )
    }

    fn regular(at: Instant) -> Next {
        Next {
            at,
            reading: Reading::Regular,
        }
    }

    fn reprobe(n: u64, at: Instant) -> Next {
        Next {
            at,
            reading: Reading::Reprobe(n),
        }
    }

    /// The shipped rules: one re-probe, 10 s after the red reading.
    #[test]
    fn the_shipped_rules_read_a_red_again_once_ten_seconds_later() {
        let r = Reprobes::of(&crate::config::fleet_alert_rules());
        assert_eq!(
            r,
            Reprobes {
                spacing: SPACING,
                count: 1
            }
        );
    }

    #[test]
    fn the_first_pass_is_due_at_once_and_a_green_reading_waits_the_cadence() {
        let t0 = Instant::now();
        let mut s = schedule(1);
        assert_eq!(s.regular_at(t0), t0);
        s.ended(Reading::Regular, t0);
        assert_eq!(s.next(t0, false), regular(t0 + CADENCE));
    }

    /// A red not yet confirmed is read again `spacing` after the reading, not a cadence later;
    /// after the re-probes allowed, the regular pass comes at its time, counted from the end of
    /// the regular pass before (a re-probe moves no regular pass).
    #[test]
    fn a_red_not_yet_confirmed_is_read_again_after_the_spacing_then_the_cadence_resumes() {
        let t0 = Instant::now();
        let mut s = schedule(1);
        s.ended(Reading::Regular, t0);
        assert_eq!(s.next(t0, true), reprobe(1, t0 + SPACING));
        let ended = t0 + SPACING + Duration::from_millis(300);
        s.ended(Reading::Reprobe(1), ended);
        assert_eq!(s.regular_at(ended), t0 + CADENCE);
        // Still unconfirmed (fail_after above 2), or green again: the regular pass.
        assert_eq!(s.next(ended, true), regular(t0 + CADENCE));
        assert_eq!(s.next(ended, false), regular(t0 + CADENCE));
    }

    /// At most `count` re-probes between two regular passes, whatever the section's elements
    /// do (a flapping one, many hung ones): at most (1 + count) readings a cadence. The next
    /// regular pass allows `count` again.
    #[test]
    fn the_count_bounds_the_reprobes_between_two_regular_passes_and_a_regular_pass_renews_it() {
        let t0 = Instant::now();
        let mut s = schedule(2);
        s.ended(Reading::Regular, t0);
        let mut readings = vec![];
        let mut ended = t0;
        loop {
            let next = s.next(ended, true);
            readings.push(next.reading);
            if next.reading == Reading::Regular {
                assert_eq!(next.at, t0 + CADENCE);
                break;
            }
            assert_eq!(
                next.at,
                ended + SPACING,
                "each {SPACING:?} after the one before"
            );
            ended = next.at;
            s.ended(next.reading, ended);
        }
        assert_eq!(
            readings,
            [Reading::Reprobe(1), Reading::Reprobe(2), Reading::Regular]
        );
        let t1 = t0 + CADENCE;
        s.ended(Reading::Regular, t1);
        assert_eq!(s.next(t1, true), reprobe(1, t1 + SPACING));
    }

    /// A re-probe is taken only when it would come before the next regular pass: at exactly
    /// the same moment, the regular pass is the confirmation.
    #[test]
    fn a_reprobe_due_at_or_after_the_next_regular_pass_is_that_pass() {
        let t0 = Instant::now();
        let mut s = Schedule::new(
            SPACING * 2,
            Reprobes {
                spacing: SPACING,
                count: 3,
            },
        );
        s.ended(Reading::Regular, t0);
        assert_eq!(s.next(t0, true), reprobe(1, t0 + SPACING));
        let just_before = t0 + SPACING - Duration::from_nanos(1);
        s.ended(Reading::Reprobe(1), just_before);
        assert_eq!(s.next(just_before, true), reprobe(2, just_before + SPACING));
        s.ended(Reading::Reprobe(1), t0 + SPACING);
        assert_eq!(s.next(t0 + SPACING, true), regular(t0 + SPACING * 2));
        // A reading that ended past the regular pass's time (a slow pass): the regular pass, now.
        let late = t0 + SPACING * 3;
        assert_eq!(s.next(late, true), regular(t0 + SPACING * 2));
    }

    /// No re-probe without a count (`count: 0`) or without alerting (nothing would page).
    #[test]
    fn no_reprobe_without_a_count_or_without_alerting() {
        let t0 = Instant::now();
        for reprobes in [
            Reprobes {
                spacing: SPACING,
                count: 0,
            },
            Reprobes::NONE,
        ] {
            let mut s = Schedule::new(CADENCE, reprobes);
            s.ended(Reading::Regular, t0);
            assert_eq!(s.next(t0, true), regular(t0 + CADENCE), "{reprobes:?}");
        }
    }
}

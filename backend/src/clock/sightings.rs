//! When fleetdash first saw each stamp, and how old the wall clock said it was then: the ages
//! [`super::Clock::age`] counts on from there on the boot clock, and the stamps seen ahead of
//! the wall clock.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use chrono::{DateTime, Utc};

use fleetdash_model::Jump;

use super::{Now, Seen, Settings};

/// How often the stamps nobody asks about any more are let go.
const PRUNE_EVERY: Duration = Duration::from_secs(60);

#[derive(Default)]
pub(super) struct Sightings {
    by_what: HashMap<String, Sighting>,
    ahead: Option<AheadSeen>,
    pruned_at: Duration,
}

struct Sighting {
    stamp: DateTime<Utc>,
    /// The wall clock less the stamp when first seen: its age then, or, below zero, how far
    /// ahead of the clock it was (a moment to come, or a stamp from a clock ahead).
    offset_ms: i64,
    /// On the boot clock: when first seen, and when its age was last asked.
    seen: Duration,
    asked: Duration,
}

/// The wall clock less `stamp` at `now`, with the recent jumps the stamp predates taken out:
/// a stamp first seen just after a jump was most likely made just before it (a report
/// received, a section collected, a peer's heartbeat), in the wall clock's frame of then.
///
/// Newest jump first, while the stamp predates each: it predates a forward jump of Δ when it
/// is earlier than half Δ before the wall clock's reading just after it (a stamp made after
/// the jump is later than that reading), and a backward one of Δ when it is later both than
/// now (no stamp made since can be) and than half Δ after that reading. Another host's stamp
/// in the frame before the jump is taken out alike; one in the frame after it is not. A
/// sleep moves nothing: the wall clock was right.
fn offset_across(stamp: DateTime<Utc>, now: &Now, jumps: &VecDeque<Seen>) -> i64 {
    let mut offset_ms = (now.wall - stamp).num_milliseconds();
    for jump in jumps.iter().rev() {
        let jump_ms = i64::try_from(jump.seconds.saturating_mul(1000)).unwrap_or(i64::MAX);
        let half = chrono::Duration::milliseconds(jump_ms / 2);
        let predates = match jump.kind {
            Jump::Asleep => continue,
            Jump::Forward => stamp < jump.wall - half,
            Jump::Backward => stamp > now.wall && stamp > jump.wall + half,
        };
        if !predates {
            break;
        }
        offset_ms = match jump.kind {
            Jump::Forward => offset_ms.saturating_sub(jump_ms),
            _ => offset_ms.saturating_add(jump_ms),
        };
    }
    offset_ms
}

/// The stamps seen ahead of the wall clock, while they are shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct AheadSeen {
    pub count: u64,
    pub max_s: u64,
    /// The furthest ahead.
    pub what: String,
    /// On the boot clock, when the last was seen.
    pub boot: Duration,
}

impl Sightings {
    /// The observed age of `stamp` under `what`, in milliseconds, and how far ahead of the wall
    /// clock it was when first seen (whole seconds).
    pub(super) fn age_ms(
        &mut self,
        what: &str,
        stamp: DateTime<Utc>,
        now: &Now,
        step_s: u64,
        jumps: &VecDeque<Seen>,
    ) -> (u64, u64) {
        let (offset_ms, since) = self.sighting(what, stamp, now, Some(step_s), jumps);
        // A stamp ahead when first seen is taken as made then: it ages from there.
        let ms = offset_ms
            .max(0)
            .unsigned_abs()
            .saturating_add(u64::try_from(since.as_millis()).unwrap_or(u64::MAX));
        let ahead_s = offset_ms.min(0).unsigned_abs() / 1000;
        (ms, ahead_s)
    }

    /// The observed milliseconds until `moment` under `what` (below zero once it has passed):
    /// how far ahead of the wall clock it was when first seen, less the time since.
    pub(super) fn until_ms(
        &mut self,
        what: &str,
        moment: DateTime<Utc>,
        now: &Now,
        jumps: &VecDeque<Seen>,
    ) -> i64 {
        let (offset_ms, since) = self.sighting(what, moment, now, None, jumps);
        let since = i64::try_from(since.as_millis()).unwrap_or(i64::MAX);
        offset_ms.saturating_neg().saturating_sub(since)
    }

    /// The sighting of `stamp` under `what` (its offset then, and the boot clock's time since),
    /// first seen now if it is new; one ahead by `ahead_after_s` or more is counted to be said.
    fn sighting(
        &mut self,
        what: &str,
        stamp: DateTime<Utc>,
        now: &Now,
        ahead_after_s: Option<u64>,
        jumps: &VecDeque<Seen>,
    ) -> (i64, Duration) {
        let sighting = match self.by_what.get_mut(what) {
            Some(s) if s.stamp == stamp => s,
            _ => {
                self.first_sight(what, stamp, now, ahead_after_s, jumps);
                self.by_what.get_mut(what).expect("just inserted")
            }
        };
        sighting.asked = sighting.asked.max(now.boot);
        (sighting.offset_ms, now.boot.saturating_sub(sighting.seen))
    }

    pub(super) fn note(
        &mut self,
        what: &str,
        stamp: DateTime<Utc>,
        now: &Now,
        step_s: u64,
        jumps: &VecDeque<Seen>,
    ) {
        self.first_sight(what, stamp, now, Some(step_s), jumps);
    }

    fn first_sight(
        &mut self,
        what: &str,
        stamp: DateTime<Utc>,
        now: &Now,
        ahead_after_s: Option<u64>,
        jumps: &VecDeque<Seen>,
    ) {
        let offset_ms = offset_across(stamp, now, jumps);
        let ahead_s = offset_ms.min(0).unsigned_abs() / 1000;
        // Less than a step ahead is the ordinary slack between two hosts' clocks.
        if let Some(after) = ahead_after_s
            && ahead_s > 0
            && ahead_s >= after
        {
            self.seen_ahead(what, ahead_s, now);
        }
        self.by_what.insert(
            what.to_string(),
            Sighting {
                stamp,
                offset_ms,
                seen: now.boot,
                asked: now.boot,
            },
        );
    }

    /// A stamp later than the wall clock is taken as made now, and counted to be said.
    fn seen_ahead(&mut self, what: &str, ahead_s: u64, now: &Now) {
        let fresh = AheadSeen {
            count: 0,
            max_s: 0,
            what: String::new(),
            boot: now.boot,
        };
        let a = self.ahead.get_or_insert(fresh);
        a.count += 1;
        a.boot = now.boot;
        if ahead_s >= a.max_s {
            a.max_s = ahead_s;
            a.what = what.to_string();
        }
    }

    /// The stamps seen ahead by at least a step since the note began.
    pub(super) fn ahead(&self) -> Option<&AheadSeen> {
        self.ahead.as_ref()
    }

    /// Lets go of the stamps nobody asked about for `forget_s`, and of the note of stamps ahead
    /// once it has been shown its time; at most once a minute.
    pub(super) fn prune(&mut self, boot: Duration, settings: Settings) {
        if boot.saturating_sub(self.pruned_at) < PRUNE_EVERY && !self.by_what.is_empty() {
            return;
        }
        self.pruned_at = boot;
        let forget = Duration::from_secs(settings.forget_s);
        self.by_what
            .retain(|_, s| boot.saturating_sub(s.asked) < forget);
        let shown_for = Duration::from_secs(settings.shown_for_s);
        if self
            .ahead
            .as_ref()
            .is_some_and(|a| boot.saturating_sub(a.boot) >= shown_for)
        {
            self.ahead = None;
        }
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.by_what.len()
    }
}

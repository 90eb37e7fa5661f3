//! When fleetdash first saw each stamp, and how old the wall clock said it was then: the ages
//! [`super::Clock::age`] counts on from there on the boot clock, and the stamps seen ahead of
//! the wall clock.

use std::collections::HashMap;
use std::time::Duration;

use chrono::{DateTime, Utc};

use super::{Now, Settings};

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
    ) -> (u64, u64) {
        let (offset_ms, since) = self.sighting(what, stamp, now, Some(step_s));
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
    pub(super) fn until_ms(&mut self, what: &str, moment: DateTime<Utc>, now: &Now) -> i64 {
        let (offset_ms, since) = self.sighting(what, moment, now, None);
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
    ) -> (i64, Duration) {
        let sighting = match self.by_what.get_mut(what) {
            Some(s) if s.stamp == stamp => s,
            _ => {
                self.first_sight(what, stamp, now, ahead_after_s);
                self.by_what.get_mut(what).expect("just inserted")
            }
        };
        sighting.asked = sighting.asked.max(now.boot);
        (sighting.offset_ms, now.boot.saturating_sub(sighting.seen))
    }

    pub(super) fn note(&mut self, what: &str, stamp: DateTime<Utc>, now: &Now, step_s: u64) {
        self.first_sight(what, stamp, now, Some(step_s));
    }

    fn first_sight(
        &mut self,
        what: &str,
        stamp: DateTime<Utc>,
        now: &Now,
        ahead_after_s: Option<u64>,
    ) {
        let offset_ms = (now.wall - stamp).num_milliseconds();
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

//! fleetdash's clocks (issue 31): the wall clock it writes and shows, and the boot clock it
//! measures what it observed itself on.
//!
//! The wall clock steps (NTP setting a wrong clock right, a clock set by hand, a VM resumed)
//! and a laptop hub sleeps; the boot clock (`CLOCK_BOOTTIME`) never steps and counts a sleep;
//! the monotonic clock never steps and stops while the host sleeps. So, between two readings:
//! the wall clock parting from the boot clock is a step, and the boot clock running ahead of
//! the monotonic one is a sleep. [`Clock::now`] takes every reading, so it sees each jump once,
//! logs it, and keeps it to be shown (the snapshot's `clock`) for the rules' `shown_for`.
//!
//! An age is what fleetdash observed: [`Clock::age`] remembers when it first saw each stamp and
//! how old the wall clock said it was then, and counts on from there on the boot clock. A step
//! alone therefore changes no age: a task quiet for 20 s is still quiet for 20 s after the
//! clock jumps a day ahead, and a stuck one stays stuck after it jumps back an hour. A stamp
//! first seen later than the wall clock (another host's clock ahead, or one stored before this
//! clock stepped back, read after a restart) is taken as "now" and said, never as fresh for
//! longer than it was watched.
//!
//! After a forward step or a wake, nothing was watched for the time the wall clock skipped:
//! [`Now::grace`] says how long ago that was (and how long the host slept), and a verdict that
//! needs a whole window of observation asks [`Now::reached`], which waits until the window has
//! been watched again.

mod sightings;
mod source;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use chrono::{DateTime, Utc};
use fleetdash_model::clock::Grace;
use fleetdash_model::{Ahead, ClockJump, ClockView, Jump, human_age};

use sightings::Sightings;
pub use source::{Clocks, ManualClocks, Reading, SystemClocks};

/// The longest span fleetdash takes from its input (issue 32): an ETA, a deadline, a silence,
/// a window of the rules file. Further out than a year is a mistake, not a plan; and any stamp
/// plus this stays far inside what a date can hold, so no sum of input and a time can overflow.
pub const HORIZON: Duration = Duration::from_secs(366 * 24 * 3600);

/// The horizon in the operator's words, as refusals name it.
pub const HORIZON_WORDS: &str = "366 d";

/// `now + span`, or the refusal naming the limit when `span` is past [`HORIZON`].
pub fn ahead(now: DateTime<Utc>, span: Duration) -> Result<DateTime<Utc>, String> {
    if span > HORIZON {
        return Err(beyond_horizon());
    }
    chrono::Duration::from_std(span)
        .ok()
        .and_then(|d| now.checked_add_signed(d))
        .ok_or_else(beyond_horizon)
}

/// Whether `at` is within [`HORIZON`] of `now` (an absolute time from input); else the refusal.
pub fn within_horizon(at: DateTime<Utc>, now: DateTime<Utc>) -> Result<DateTime<Utc>, String> {
    let horizon = chrono::Duration::from_std(HORIZON).unwrap_or(chrono::Duration::MAX);
    if at - now > horizon {
        return Err(beyond_horizon());
    }
    Ok(at)
}

fn beyond_horizon() -> String {
    format!("more than {HORIZON_WORDS} ahead: fleetdash takes spans up to {HORIZON_WORDS}")
}

/// The `clock` rules as this module needs them (the config turns its rules into these).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// The wall and boot clocks parting by this many seconds between two readings is a step;
    /// the boot clock ahead of the monotonic one by as much, a sleep.
    pub step_s: u64,
    /// A jump (and a stamp seen ahead) is shown this long; a grace lasts at most this long.
    pub shown_for_s: u64,
    /// A stamp whose age nobody asked for this long is forgotten.
    pub forget_s: u64,
}

/// One reading of the clocks, as every judgement takes it: the wall-clock moment written and
/// shown, the boot clock that ages are counted on, and how far into a grace it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Now {
    pub wall: DateTime<Utc>,
    /// Since the host booted, sleeps included; never steps.
    pub boot: Duration,
    /// Since the last forward step or wake, while its grace runs.
    pub grace: Option<Grace>,
}

impl Now {
    /// A moment with no clock behind it (no jump, no grace), for judging what needs no memory:
    /// a test's fixed moment, a one-shot command's.
    pub fn at(wall: DateTime<Utc>) -> Now {
        Now {
            wall,
            boot: Duration::ZERO,
            grace: None,
        }
    }

    /// Whether an age has reached a window of `window_s` seconds, waiting, in a grace, for the
    /// window to be watched again ([`fleetdash_model::clock::reached`]).
    pub fn reached(&self, age_s: u64, window_s: u64) -> bool {
        fleetdash_model::clock::reached(age_s, window_s, self.grace)
    }

    /// The clock as a judgement at this moment needs it of the model: its grace, no jumps (what
    /// is judged was checked now).
    pub fn grace_view(&self) -> ClockView {
        ClockView {
            judging_from: self.judging_from(),
            unwatched_s: self.grace.map_or(0, |g| g.unwatched_s),
            ..ClockView::default()
        }
    }

    /// The wall-clock moment the grace began, while one runs.
    pub fn judging_from(&self) -> Option<DateTime<Utc>> {
        self.grace
            .map(|g| self.wall - chrono::Duration::seconds(i64::try_from(g.since_s).unwrap_or(0)))
    }
}

/// The process's clock: readings, the jumps seen in them, and the ages of stamps. Cheap to
/// clone; clones share everything.
#[derive(Clone)]
pub struct Clock {
    inner: Arc<Inner>,
}

struct Inner {
    clocks: Arc<dyn Clocks>,
    settings: Settings,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    last: Option<Reading>,
    /// Newest last, each until `shown_for_s` after it was seen.
    jumps: VecDeque<Seen>,
    /// On the boot clock: the last forward step or wake, while its grace runs.
    grace_from: Option<Duration>,
    /// The sleeps since the grace began (nothing was watched then).
    unwatched: Duration,
    sightings: Sightings,
}

/// A jump as [`Clock::jumps_seen`] tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JumpSeen {
    pub kind: Jump,
    /// How far the wall clock moved against the time that passed; for a sleep, how long.
    pub seconds: u64,
    /// When it was seen, on the boot clock.
    pub boot: Duration,
    /// The wall clock's reading just after it.
    pub wall: DateTime<Utc>,
}

/// A jump, on the boot clock, and the wall clock's reading just after it.
#[derive(Debug, Clone, Copy)]
struct Seen {
    kind: Jump,
    seconds: u64,
    boot: Duration,
    wall: DateTime<Utc>,
}

impl Clock {
    /// This host's clocks.
    pub fn system(settings: Settings) -> Clock {
        Clock::new(Arc::new(SystemClocks), settings)
    }

    /// Over any clocks: a test's [`ManualClocks`].
    pub fn new(clocks: Arc<dyn Clocks>, settings: Settings) -> Clock {
        Clock {
            inner: Arc::new(Inner {
                clocks,
                settings,
                state: Mutex::new(State::default()),
            }),
        }
    }

    pub fn settings(&self) -> Settings {
        self.inner.settings
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere while holding it leaves nothing half-done worth refusing.
        self.inner.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Reads the clocks, noting any jump since the last reading.
    pub fn now(&self) -> Now {
        let settings = self.inner.settings;
        let mut state = self.state();
        // Read under the lock: readings are then in order, each compared with the one before.
        let reading = self.inner.clocks.read();
        if let Some(last) = state.last {
            for seen in jumps_between(&last, &reading, settings.step_s) {
                log(&seen, &reading, settings);
                let running = state.grace_from.is_some();
                match seen.kind {
                    Jump::Backward => {}
                    Jump::Forward => {
                        if !running {
                            state.unwatched = Duration::ZERO;
                        }
                        state.grace_from = Some(reading.boot);
                    }
                    Jump::Asleep => {
                        let slept = Duration::from_secs(seen.seconds);
                        state.unwatched = if running {
                            state.unwatched + slept
                        } else {
                            slept
                        };
                        state.grace_from = Some(reading.boot);
                    }
                }
                state.jumps.push_back(seen);
            }
        }
        state.last = Some(reading);
        let shown_for = Duration::from_secs(settings.shown_for_s);
        while state
            .jumps
            .front()
            .is_some_and(|j| reading.boot.saturating_sub(j.boot) >= shown_for)
        {
            state.jumps.pop_front();
        }
        let grace = match state.grace_from {
            Some(from) if reading.boot.saturating_sub(from) < shown_for => Some(Grace {
                since_s: reading.boot.saturating_sub(from).as_secs(),
                unwatched_s: state.unwatched.as_secs(),
            }),
            _ => {
                state.grace_from = None;
                None
            }
        };
        state.sightings.prune(reading.boot, settings);
        Now {
            wall: reading.wall,
            boot: reading.boot,
            grace,
        }
    }

    /// The age of `stamp` at `now` in whole seconds, as observed: how old the wall clock said
    /// it was when first seen under `what`, plus the boot clock's time since. `what` names the
    /// stamp in the operator's words, and is its identity ("agent vega's last exchange"): a
    /// new stamp under it is a new sighting.
    pub fn age(&self, what: &str, stamp: DateTime<Utc>, now: &Now) -> u64 {
        self.sight(what, stamp, now).age_s
    }

    /// [`Clock::age`], and how far ahead of the wall clock the stamp was when first seen.
    pub fn sight(&self, what: &str, stamp: DateTime<Utc>, now: &Now) -> Sight {
        let (ms, ahead_s) = self.age_ms(what, stamp, now);
        Sight {
            age_s: ms / 1000,
            ahead_s,
        }
    }

    fn age_ms(&self, what: &str, stamp: DateTime<Utc>, now: &Now) -> (u64, u64) {
        let state = &mut *self.state();
        state
            .sightings
            .age_ms(what, stamp, now, self.inner.settings.step_s, &state.jumps)
    }

    /// The seconds until `moment` (a deadline; below zero once passed), as observed: how far
    /// ahead of the wall clock it was when first seen under `what`, less the boot clock's time
    /// since. A step alone moves no deadline nearer or further.
    pub fn until(&self, what: &str, moment: DateTime<Utc>, now: &Now) -> i64 {
        let state = &mut *self.state();
        state
            .sightings
            .until_ms(what, moment, now, &state.jumps)
            .div_euclid(1000)
    }

    /// Records that fleetdash made `stamp` itself just now (a report received, a task seen to
    /// progress): its age counts from here, whatever the wall clock does before it is asked.
    pub fn note(&self, what: &str, stamp: DateTime<Utc>, now: &Now) {
        let state = &mut *self.state();
        state
            .sightings
            .note(what, stamp, now, self.inner.settings.step_s, &state.jumps);
    }

    /// `stamp` as this clock would write it now: `now` less its observed age, or `stamp`
    /// itself while the wall clock agrees with that to the second. What fleetdash stores for
    /// itself is then never later than its clock, and a restart reads the same age.
    pub fn rebase(&self, what: &str, stamp: DateTime<Utc>, now: &Now) -> DateTime<Utc> {
        let observed = i64::try_from(self.age_ms(what, stamp, now).0).unwrap_or(i64::MAX);
        let by_wall = (now.wall - stamp).num_milliseconds();
        if (by_wall - observed).abs() < 1000 {
            return stamp;
        }
        now.wall - chrono::Duration::milliseconds(observed)
    }

    /// A reading to judge by, with this clock to age stamps on.
    pub fn clocked(&self) -> Clocked {
        Clocked {
            now: self.now(),
            clock: Some(self.clone()),
        }
    }

    /// The jumps still shown, oldest first, each with the wall clock's reading just after it
    /// (what the transitions log stamped then) and when it happened on the boot clock (which
    /// no later step moves): the report's blind spots are made of them.
    pub fn jumps_seen(&self) -> Vec<JumpSeen> {
        self.state()
            .jumps
            .iter()
            .map(|j| JumpSeen {
                kind: j.kind,
                seconds: j.seconds,
                boot: j.boot,
                wall: j.wall,
            })
            .collect()
    }

    /// What the snapshot says of this clock at `now`.
    pub fn view(&self, now: &Now) -> ClockView {
        let state = self.state();
        let at = |boot: Duration| {
            let ago = now.boot.saturating_sub(boot);
            now.wall - chrono::Duration::from_std(ago).unwrap_or_default()
        };
        let jumps = state
            .jumps
            .iter()
            .rev()
            .map(|j| ClockJump {
                kind: j.kind,
                seconds: j.seconds,
                at: at(j.boot),
                checked_at: now.wall,
                stale: false,
            })
            .collect();
        let shown_for = Duration::from_secs(self.inner.settings.shown_for_s);
        let ahead = state
            .sightings
            .ahead()
            .filter(|a| now.boot.saturating_sub(a.boot) < shown_for)
            .map(|a| Ahead {
                count: a.count,
                max_s: a.max_s,
                what: a.what.clone(),
                checked_at: now.wall,
                stale: false,
            });
        ClockView {
            jumps,
            judging_from: now.judging_from(),
            unwatched_s: now.grace.map_or(0, |g| g.unwatched_s),
            ahead,
        }
    }
}

/// A stamp's observed age, and how far ahead of the wall clock it was when first seen (0 when
/// it was not): a check-in time from the future is not believed, one stored before a step back
/// is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sight {
    pub age_s: u64,
    pub ahead_s: u64,
}

/// What a judgement is clocked by: one reading, and the clock that ages stamps (or none: the
/// wall clock alone, for a test's fixed moment). Cheap to clone and to move to a blocking
/// thread.
#[derive(Clone)]
pub struct Clocked {
    pub now: Now,
    clock: Option<Clock>,
}

impl Clocked {
    /// Ages by the wall clock alone at `wall`: nothing remembered, no jump seen. For pure
    /// judgements at a test's fixed moment.
    pub fn wall_only(wall: DateTime<Utc>) -> Clocked {
        Clocked {
            now: Now::at(wall),
            clock: None,
        }
    }

    /// The wall-clock moment: what is written and shown.
    pub fn wall(&self) -> DateTime<Utc> {
        self.now.wall
    }

    /// This reading, its wall clock said to be `wall`: a judgement of something stamped by a
    /// reading just before (a snapshot at its `generated_at`) judges at that moment, its ages
    /// still observed on the same clock.
    pub fn with_wall(&self, wall: DateTime<Utc>) -> Clocked {
        Clocked {
            now: Now { wall, ..self.now },
            clock: self.clock.clone(),
        }
    }

    /// [`Clock::age`]; by the wall clock alone without a clock (0 for a stamp ahead).
    pub fn age(&self, what: &str, stamp: DateTime<Utc>) -> u64 {
        match &self.clock {
            Some(clock) => clock.age(what, stamp, &self.now),
            None => fleetdash_model::seconds_since(stamp, self.now.wall),
        }
    }

    /// [`Clock::sight`]; by the wall clock alone without a clock.
    pub fn sight(&self, what: &str, stamp: DateTime<Utc>) -> Sight {
        match &self.clock {
            Some(clock) => clock.sight(what, stamp, &self.now),
            None => Sight {
                age_s: fleetdash_model::seconds_since(stamp, self.now.wall),
                ahead_s: fleetdash_model::seconds_since(self.now.wall, stamp),
            },
        }
    }

    /// [`Clock::until`]; by the wall clock alone without a clock.
    pub fn until(&self, what: &str, moment: DateTime<Utc>) -> i64 {
        match &self.clock {
            Some(clock) => clock.until(what, moment, &self.now),
            None => (moment - self.now.wall).num_milliseconds().div_euclid(1000),
        }
    }

    /// [`Now::reached`].
    pub fn reached(&self, age_s: u64, window_s: u64) -> bool {
        self.now.reached(age_s, window_s)
    }

    /// [`Clock::note`]; nothing without a clock.
    pub fn note(&self, what: &str, stamp: DateTime<Utc>) {
        if let Some(clock) = &self.clock {
            clock.note(what, stamp, &self.now);
        }
    }

    /// [`Clock::rebase`]; without a clock, `stamp` no later than the wall clock.
    pub fn rebase(&self, what: &str, stamp: DateTime<Utc>) -> DateTime<Utc> {
        match &self.clock {
            Some(clock) => clock.rebase(what, stamp, &self.now),
            None => stamp.min(self.now.wall),
        }
    }

    /// [`Clock::view`]; nothing to say without a clock.
    pub fn view(&self) -> ClockView {
        match &self.clock {
            Some(clock) => clock.view(&self.now),
            None => ClockView::default(),
        }
    }
}

/// The jumps between two readings: a step of the wall clock against the boot clock, and a
/// sleep (the boot clock ahead of the monotonic one), each at least `step_s` seconds.
fn jumps_between(last: &Reading, reading: &Reading, step_s: u64) -> Vec<Seen> {
    let mut out = Vec::new();
    let boot = reading.boot.saturating_sub(last.boot);
    let mono = reading.mono.saturating_sub(last.mono);
    let slept = boot.saturating_sub(mono);
    // Whole seconds, rounded: a jump of 25 h read a millisecond short is still 25 h.
    let slept_s = (slept + Duration::from_millis(500)).as_secs();
    if slept_s >= step_s {
        out.push(Seen {
            kind: Jump::Asleep,
            seconds: slept_s,
            boot: reading.boot,
            wall: reading.wall,
        });
    }
    let wall_ms = (reading.wall - last.wall).num_milliseconds();
    let boot_ms = i64::try_from(boot.as_millis()).unwrap_or(i64::MAX);
    let step_ms = wall_ms.saturating_sub(boot_ms);
    let seconds = (step_ms.unsigned_abs() + 500) / 1000;
    if seconds >= step_s {
        out.push(Seen {
            kind: if step_ms > 0 {
                Jump::Forward
            } else {
                Jump::Backward
            },
            seconds,
            boot: reading.boot,
            wall: reading.wall,
        });
    }
    out
}

/// Once per jump, as it is seen.
fn log(seen: &Seen, reading: &Reading, settings: Settings) {
    let how_far = human_age(seen.seconds);
    let at = reading
        .wall
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    match seen.kind {
        Jump::Forward => tracing::warn!(
            jump = "forward",
            seconds = seen.seconds,
            "this host's clock jumped forward {how_far} at {at}: ages are counted on the boot \
             clock; verdicts that need a whole window wait until it has been watched again (at \
             most {})",
            human_age(settings.shown_for_s)
        ),
        Jump::Backward => tracing::warn!(
            jump = "backward",
            seconds = seen.seconds,
            "this host's clock jumped back {how_far} at {at}: ages are counted on the boot \
             clock, so nothing turns green because of it"
        ),
        Jump::Asleep => tracing::warn!(
            jump = "asleep",
            seconds = seen.seconds,
            "this host was asleep {how_far}, until {at}: verdicts that need a whole window wait \
             until it has been watched again (at most {})",
            human_age(settings.shown_for_s)
        ),
    }
}

#[cfg(test)]
mod tests;

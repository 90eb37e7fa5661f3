//! This host's clock as fleetdash saw it (issue 31): the jumps of its wall clock (a step forward
//! or back, a sleep), each shown for a while after it, and the grace a forward step or a wake
//! starts; and the one rule of when a window of observation has passed ([`reached`]).
//!
//! fleetdash writes and shows wall-clock stamps, but measures what it observed itself on a
//! clock that never steps (the boot clock), so a step alone changes no verdict. What it cannot
//! measure is the time it did not watch: after a forward step or a wake, a verdict that needs a
//! whole window of observation (orphaned, stuck, not taken, a late heartbeat, a stale section)
//! waits until that window has been watched again — the agents get one whole window from the
//! wake to report. The snapshot says from when (`judging_from`) so the page judges alike.

use chrono::{DateTime, FixedOffset, Utc};
use serde::{Deserialize, Serialize};

use crate::asc::Asc;
use crate::band::Band;
use crate::words::{human_age, moment, seconds_since};

/// A grace after a forward step or a wake: how long ago it began, and how much time before it
/// went unwatched (the sleep; none for a step, which ages do not count).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grace {
    pub since_s: u64,
    pub unwatched_s: u64,
}

/// Whether an age of `age_s` has reached a window of `window_s` seconds, in a `grace` (`None`
/// when none runs): the age must have reached the window, and so must the part watched since
/// the grace began, unless the window had already passed before anything went unwatched (a
/// red that was red stays red).
pub fn reached(age_s: u64, window_s: u64, grace: Option<Grace>) -> bool {
    if age_s < window_s {
        return false;
    }
    match grace {
        None => true,
        Some(g) => {
            g.since_s >= window_s
                || age_s.saturating_sub(g.since_s.saturating_add(g.unwatched_s)) >= window_s
        }
    }
}

/// In how many seconds an age of `age_s`, counting on from now, reaches a window of
/// `window_s` by [`reached`], with the `grace` (if one runs) counting on too: `0` once reached.
/// A grace ends at the latest when the clock's `shown_for` has passed, and then what it held
/// is reached at once: this is never earlier than the moment it turns.
pub fn reached_in(age_s: u64, window_s: u64, grace: Option<Grace>) -> u64 {
    let by_age = window_s.saturating_sub(age_s);
    let later = |t: u64| {
        grace.map(|g| Grace {
            since_s: g.since_s.saturating_add(t),
            ..g
        })
    };
    if reached(age_s.saturating_add(by_age), window_s, later(by_age)) {
        by_age
    } else {
        // Held by the grace: a whole window watched since it began.
        by_age.max(grace.map_or(0, |g| window_s.saturating_sub(g.since_s)))
    }
}

impl ClockView {
    /// The grace at `now`, while one runs.
    pub fn grace_at(&self, now: DateTime<Utc>) -> Option<Grace> {
        self.judging_from.map(|from| Grace {
            since_s: seconds_since(from, now),
            unwatched_s: self.unwatched_s,
        })
    }

    /// Whole seconds from `then` (a `checked_at` of this snapshot's, stamped by the clock as it
    /// read then) to `now`, with the jumps shown that `then` predates taken out: an element
    /// checked just before the clock jumped a day ahead is seconds old, not a day, when a
    /// later write carries it. The rule of the collector's own clock: `then` predates a
    /// forward jump of D when it is earlier than D/2 before the wall clock's reading just
    /// after it, a backward one when it is later than `now` and than D/2 after it.
    pub fn elapsed(&self, then: DateTime<Utc>, now: DateTime<Utc>) -> u64 {
        let mut ms = (now - then).num_milliseconds();
        // Each jump's `at` is said by the clock as it read at the write: undo the newer
        // jumps to compare it with a stamp of its own time.
        let mut newer_ms = 0i64;
        for j in &self.jumps {
            let d = i64::try_from(j.seconds.saturating_mul(1000)).unwrap_or(i64::MAX);
            let at = j.at - chrono::Duration::milliseconds(newer_ms);
            let half = chrono::Duration::milliseconds(d / 2);
            let (signed, predates) = match j.kind {
                Jump::Asleep => continue,
                Jump::Forward => (d, then < at - half),
                Jump::Backward => (-d, then > now && then > at + half),
            };
            if !predates {
                break;
            }
            ms = ms.saturating_sub(signed);
            newer_ms = newer_ms.saturating_add(signed);
        }
        u64::try_from(ms.max(0) / 1000).unwrap_or(0)
    }
}

/// What happened to this host's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Jump {
    /// The wall clock moved ahead of the time that passed (a clock set, NTP, a VM resumed).
    Forward,
    /// The wall clock moved back.
    Backward,
    /// The host slept: its wall clock is right, but nothing was watched meanwhile.
    Asleep,
}

/// One jump of this host's clock, shown for the rules' `clock.shown_for_seconds` after it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClockJump {
    pub kind: Jump,
    /// How far the wall clock moved against the time that passed; for a sleep, how long.
    pub seconds: u64,
    /// When it was seen (for a sleep, the wake), by this host's clock as it reads now.
    pub at: DateTime<Utc>,
    pub checked_at: DateTime<Utc>,
    pub stale: bool,
}

impl ClockJump {
    /// "this host's clock jumped forward 1 d at 07:40" / "… back 1 h at 07:40" / "the hub was
    /// asleep 7 h 12 min, 23:40–06:52", times said at `offset`.
    pub fn words(&self, now: DateTime<Utc>, offset: FixedOffset) -> String {
        let sep = if self.kind == Jump::Asleep { ", " } else { " " };
        format!("{}{sep}{}", self.what(), self.when(now, offset))
    }

    /// What happened: "this host's clock jumped forward 1 d", "the hub was asleep 7 h 12 min".
    pub fn what(&self) -> String {
        let how_far = human_age(self.seconds);
        match self.kind {
            Jump::Forward => format!("this host's clock jumped forward {how_far}"),
            Jump::Backward => format!("this host's clock jumped back {how_far}"),
            Jump::Asleep => format!("the hub was asleep {how_far}"),
        }
    }

    /// When: "at 07:40", or a sleep's span "23:40–06:52".
    pub fn when(&self, now: DateTime<Utc>, offset: FixedOffset) -> String {
        let at = moment(self.at, now, offset);
        match self.kind {
            Jump::Asleep => {
                let fell = self.at - chrono::Duration::seconds(self.seconds as i64);
                format!("{}–{at}", moment(fell, now, offset))
            }
            _ => format!("at {at}"),
        }
    }
}

/// Stamps fleetdash found later than this host's clock: another host's clock ahead of this
/// one, or stamps stored before this clock stepped back. Each is judged from when it was seen,
/// never as fresh.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ahead {
    /// How many were seen while this is shown.
    pub count: u64,
    /// The furthest ahead, in seconds.
    pub max_s: u64,
    /// What the furthest one stamps: "agent vega's last exchange", "queue task q_1's last
    /// report".
    pub what: String,
    pub checked_at: DateTime<Utc>,
    pub stale: bool,
}

impl Ahead {
    /// "2 stamps ahead of this host's clock (up to 1 h, queue task q_1's last report): judged
    /// from when seen".
    pub fn words(&self) -> String {
        let n = if self.count == 1 {
            "a stamp".to_string()
        } else {
            format!("{} stamps", self.count)
        };
        format!(
            "{n} ahead of this host's clock (up to {}, {}): judged from when seen",
            human_age(self.max_s),
            self.what
        )
    }
}

/// status.json's `clock`: fleetdash's own element for its clock. Empty (and green) while the
/// clock keeps time; amber while a jump or a stamp ahead of it is shown.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClockView {
    /// Newest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub jumps: Vec<ClockJump>,
    /// After a forward step or a wake, while its grace runs: the moment from which verdicts
    /// that need a whole window of observation count that window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judging_from: Option<DateTime<Utc>>,
    /// With `judging_from`: how long the host slept before it (nothing was watched then).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unwatched_s: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ahead: Option<Ahead>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl ClockView {
    /// Amber while anything is shown, green otherwise.
    pub fn band(&self) -> Band {
        if self.jumps.is_empty() && self.ahead.is_none() {
            Band::Green
        } else {
            Band::Amber
        }
    }

    pub fn status(&self) -> Asc {
        match self.band() {
            Band::Green => Asc::SUCCESS,
            _ => Asc::SUCCESS_WITH_WARNINGS,
        }
    }

    /// Every line the element says, newest jump first, then the grace, then the stamps
    /// ahead; `report_s` is the window the agents have to report in after a wake (the stuck
    /// rule): "judging again from 06:52: agents have until 06:57 to report".
    pub fn words(&self, now: DateTime<Utc>, offset: FixedOffset, report_s: u64) -> Vec<String> {
        let mut lines: Vec<String> = self.jumps.iter().map(|j| j.words(now, offset)).collect();
        lines.extend(self.grace_words(now, offset, report_s));
        if let Some(a) = &self.ahead {
            lines.push(a.words());
        }
        lines
    }

    /// While the agents still have time to report after a forward jump or a wake: "judging
    /// again from 06:52: agents have until 06:57 to report".
    pub fn grace_words(
        &self,
        now: DateTime<Utc>,
        offset: FixedOffset,
        report_s: u64,
    ) -> Option<String> {
        let from = self.judging_from?;
        let until = self.report_by(now, offset, report_s)?;
        Some(format!(
            "judging again from {}: {until}",
            moment(from, now, offset)
        ))
    }

    /// The grace's short words, where room is short: "agents have until 06:57 to report".
    pub fn report_by(
        &self,
        now: DateTime<Utc>,
        offset: FixedOffset,
        report_s: u64,
    ) -> Option<String> {
        let until = self.judging_from? + chrono::Duration::seconds(report_s as i64);
        (until > now).then(|| format!("agents have until {} to report", moment(until, now, offset)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t0() -> DateTime<Utc> {
        "2026-11-30T06:52:00Z".parse().unwrap()
    }

    fn utc() -> FixedOffset {
        FixedOffset::east_opt(0).unwrap()
    }

    #[test]
    fn a_window_is_reached_at_its_length_not_before() {
        assert!(!reached(299, 300, None));
        assert!(reached(300, 300, None));
    }

    /// After a forward step or a wake, what was not yet due waits for a whole window watched
    /// again; what was already due stays so.
    fn after_a_step(since_s: u64) -> Option<Grace> {
        Some(Grace {
            since_s,
            unwatched_s: 0,
        })
    }

    #[test]
    fn a_grace_holds_what_was_not_due_for_one_whole_window() {
        // 4 min quiet before the step, 1 min after: 5 min, but only 1 watched since.
        assert!(!reached(300, 300, after_a_step(60)));
        assert!(!reached(598, 300, after_a_step(299)));
        assert!(
            reached(600, 300, after_a_step(300)),
            "a whole window watched since"
        );
        // Already 6 min quiet at the step: it stays reached.
        assert!(reached(420, 300, after_a_step(60)));
        assert!(reached(360, 300, after_a_step(0)));
        // A stamp after the step is judged as ever.
        assert!(!reached(120, 300, after_a_step(400)));
    }

    /// `reached_in` says the very second `reached` turns, with or without a grace: never a
    /// second early (a wake-up at it finds the window reached), never one late.
    #[test]
    fn reached_in_is_the_second_reached_turns() {
        let slept = 7 * 3600;
        let graces = [
            None,
            after_a_step(0),
            after_a_step(60),
            after_a_step(299),
            after_a_step(400),
            Some(Grace {
                since_s: 10,
                unwatched_s: slept,
            }),
        ];
        for grace in graces {
            for age in [0, 1, 120, 299, 300, 420, 60 + slept + 10, 360 + slept + 10] {
                let turn = reached_in(age, 300, grace);
                let at = |t: u64| {
                    let g = grace.map(|g| Grace {
                        since_s: g.since_s + t,
                        ..g
                    });
                    reached(age + t, 300, g)
                };
                assert!(at(turn), "age {age}, {grace:?}: reached at {turn}");
                if turn > 0 {
                    assert!(!at(turn - 1), "age {age}, {grace:?}: not before {turn}");
                }
            }
        }
        assert_eq!(reached_in(299, 300, None), 1);
        assert_eq!(reached_in(300, 300, None), 0);
        assert_eq!(reached_in(200, 300, after_a_step(60)), 240);
    }

    /// A sleep counts in ages (the wall clock was right) but was not watched: what was quiet
    /// for 1 min when the host fell asleep for 7 h gets a whole window from the wake.
    #[test]
    fn a_sleep_is_not_a_window_watched() {
        let slept = 7 * 3600;
        let woke = |since_s| {
            Some(Grace {
                since_s,
                unwatched_s: slept,
            })
        };
        assert!(!reached(60 + slept + 10, 300, woke(10)));
        assert!(reached(60 + slept + 300, 300, woke(300)));
        // 6 min quiet before it fell asleep: still reached.
        assert!(reached(360 + slept + 10, 300, woke(10)));
    }

    /// A row checked 20 s before the clock jumped a day ahead and carried by the write after
    /// it is 20 s and more old, not a day; one checked after it, as ever. Likewise back.
    #[test]
    fn an_age_carried_across_a_jump_has_the_jump_taken_out() {
        let checked = t0();
        let jumped = checked + chrono::Duration::days(1) + chrono::Duration::seconds(20);
        let view = |kind, seconds, at| ClockView {
            jumps: vec![ClockJump {
                kind,
                seconds,
                at,
                checked_at: at,
                stale: false,
            }],
            ..ClockView::default()
        };
        let ahead = view(Jump::Forward, 86_400, jumped);
        let now = jumped + chrono::Duration::seconds(5);
        assert_eq!(ahead.elapsed(checked, now), 25);
        assert_eq!(ahead.elapsed(jumped, now), 5);
        assert_eq!(ClockView::default().elapsed(checked, now), 86_425);
        let back_at = checked + chrono::Duration::seconds(20) - chrono::Duration::hours(1);
        let back = view(Jump::Backward, 3_600, back_at);
        let now = back_at + chrono::Duration::seconds(5);
        assert_eq!(back.elapsed(checked, now), 25);
        assert_eq!(back.elapsed(back_at, now), 5);
    }

    #[test]
    fn the_jumps_say_how_far_and_when() {
        let now = t0();
        let jump = |kind, seconds| ClockJump {
            kind,
            seconds,
            at: now,
            checked_at: now,
            stale: false,
        };
        assert_eq!(
            jump(Jump::Forward, 86_400).words(now, utc()),
            "this host's clock jumped forward 1 d at 06:52"
        );
        assert_eq!(
            jump(Jump::Backward, 3_600).words(now, utc()),
            "this host's clock jumped back 1 h at 06:52"
        );
        assert_eq!(
            jump(Jump::Asleep, 7 * 3600 + 12 * 60).words(now, utc()),
            "the hub was asleep 7 h 12 min, 23:40–06:52"
        );
    }

    #[test]
    fn the_grace_says_until_when_the_agents_may_report() {
        let now = t0();
        let view = ClockView {
            jumps: Vec::new(),
            judging_from: Some(now),
            unwatched_s: 0,
            ahead: None,
        };
        assert_eq!(
            view.words(now, utc(), 300),
            ["judging again from 06:52: agents have until 06:57 to report"]
        );
        // Once the window has passed, nothing more to say of it.
        assert!(
            view.words(now + chrono::Duration::seconds(300), utc(), 300)
                .is_empty()
        );
        assert_eq!(view.band(), Band::Green, "a grace alone is no fault");
    }
}

//! The clock under a test's hand: steps forward and back, a sleep, stamps ahead, each judged
//! by the shipped rules' `clock` group.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use fleetdash_model::Jump;

use super::*;

/// The shipped `config/rules.yaml`'s `clock` group (this layer reads no config: the YAML itself).
fn settings() -> Settings {
    let rules: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(include_str!("../../../config/rules.yaml")).unwrap();
    let value = |key: &str| rules["clock"][key].as_u64().expect(key);
    Settings {
        step_s: value("step_seconds"),
        shown_for_s: value("shown_for_seconds"),
        forget_s: value("forget_unseen_seconds"),
    }
}

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 30, 23, 40, 0).unwrap()
}

fn clock() -> (Arc<ManualClocks>, Clock) {
    let hands = Arc::new(ManualClocks::at(t0()));
    let clock = Clock::new(hands.clone(), settings());
    clock.now();
    (hands, clock)
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

/// The stuck rule's window, from the shipped rules: the window the agents have to report in.
fn settings_window() -> u64 {
    let rules: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(include_str!("../../../config/rules.yaml")).unwrap();
    rules["stuck"]["no_reply_seconds"].as_u64().unwrap()
}

const DAY: i64 = 86_400;
const HOUR: i64 = 3_600;

#[test]
fn time_passing_is_no_jump() {
    let (hands, clock) = clock();
    // NTP slews a little between two readings: less than a step.
    hands.pass(secs(60));
    hands.step(settings().step_s as i64 - 1);
    let now = clock.now();
    assert_eq!(now.grace, None);
    assert!(clock.view(&now).jumps.is_empty());
    assert_eq!(clock.view(&now).band(), fleetdash_model::Band::Green);
}

/// A laptop hub woken the next morning as a step: a task quiet for 20 s is quiet for 20 s,
/// not a day; the step is shown and starts a grace.
#[test]
fn a_forward_step_changes_no_age_and_starts_a_grace() {
    let (hands, clock) = clock();
    let report = hands.wall();
    hands.pass(secs(20));
    let before = clock.now();
    assert_eq!(clock.age("task q_1's last report", report, &before), 20);
    hands.step(DAY);
    let now = clock.now();
    assert_eq!(clock.age("task q_1's last report", report, &now), 20);
    assert_eq!(now.grace.map(|g| g.since_s), Some(0));
    assert_eq!(now.judging_from(), Some(now.wall));
    let view = clock.view(&now);
    assert_eq!(view.jumps.len(), 1);
    assert_eq!(view.jumps[0].kind, Jump::Forward);
    assert_eq!(view.jumps[0].seconds, DAY as u64);
    assert_eq!(view.jumps[0].at, now.wall);
    assert_eq!(view.band(), fleetdash_model::Band::Amber);
    // A window of 300 s waits for 300 s watched after the step.
    hands.pass(secs(279));
    let now = clock.now();
    assert_eq!(clock.age("task q_1's last report", report, &now), 299);
    assert!(!now.reached(299, 300));
    hands.pass(secs(1));
    let now = clock.now();
    assert!(!now.reached(300, 300), "280 s watched since the step");
    hands.pass(secs(20));
    let now = clock.now();
    assert!(
        now.reached(320, 300),
        "a whole window watched since the step"
    );
}

/// Back an hour: a stuck task stays stuck, its age counting on; no grace (nothing went
/// unwatched); stamps stored now are not in the future of a later step back.
#[test]
fn a_backward_step_turns_nothing_green() {
    let (hands, clock) = clock();
    let progress = hands.wall();
    hands.pass(secs(360));
    let now = clock.now();
    assert_eq!(
        clock.age("task lyra/t_2's last progress", progress, &now),
        360
    );
    hands.step(-HOUR);
    let now = clock.now();
    assert_eq!(
        clock.age("task lyra/t_2's last progress", progress, &now),
        360
    );
    assert!(now.reached(360, 300));
    assert_eq!(now.grace, None, "a step back leaves nothing unwatched");
    let view = clock.view(&now);
    assert_eq!(view.jumps[0].kind, Jump::Backward);
    assert_eq!(view.jumps[0].seconds, HOUR as u64);
    // What fleetdash stores for itself is never later than its clock.
    let stored = clock.rebase("task lyra/t_2's last progress", progress, &now);
    assert!(stored <= now.wall);
    assert_eq!((now.wall - stored).num_seconds(), 360);
    // Read back, the stored stamp has the same age; no step, and it stays as it is.
    assert_eq!(
        clock.age("task lyra/t_2's last progress", stored, &now),
        360
    );
    hands.pass(secs(1));
    let now = clock.now();
    assert_eq!(
        clock.rebase("task lyra/t_2's last progress", stored, &now),
        stored
    );
}

/// Forward a day and back to now: the stamps made in between age as they were watched.
#[test]
fn forward_and_back_again_keeps_every_age() {
    let (hands, clock) = clock();
    let before = hands.wall();
    clock.age("agent vega's last report", before, &clock.now());
    hands.pass(secs(10));
    hands.step(DAY);
    let now = clock.now();
    let during = hands.wall();
    clock.note("agent orin's last report", during, &now);
    hands.pass(secs(30));
    hands.step(-DAY);
    let now = clock.now();
    assert_eq!(clock.age("agent vega's last report", before, &now), 40);
    assert_eq!(clock.age("agent orin's last report", during, &now), 30);
    let kinds: Vec<Jump> = clock.view(&now).jumps.iter().map(|j| j.kind).collect();
    assert_eq!(kinds, [Jump::Backward, Jump::Forward], "newest first");
}

/// A sleep: the wall clock is right, so ages count the sleep; but nothing was watched, so a
/// grace begins at the wake, and the sleep is said with its span.
#[test]
fn a_sleep_counts_in_ages_and_starts_a_grace() {
    let (hands, clock) = clock();
    let beat = hands.wall();
    clock.age("agent vega's last heartbeat", beat, &clock.now());
    let asleep = 7 * 3600 + 12 * 60;
    hands.sleep(secs(asleep));
    let now = clock.now();
    assert_eq!(clock.age("agent vega's last heartbeat", beat, &now), asleep);
    assert_eq!(now.grace.map(|g| g.since_s), Some(0));
    let window = settings_window();
    assert!(
        !now.reached(asleep, window),
        "the agents get a whole window from the wake"
    );
    hands.pass(secs(window));
    let later = clock.now();
    let age = clock.age("agent vega's last heartbeat", beat, &later);
    assert!(
        later.reached(age, window),
        "a whole window watched since the wake"
    );
    let view = clock.view(&later);
    assert_eq!(view.jumps.len(), 1, "a sleep is not also a step");
    assert_eq!(view.jumps[0].kind, Jump::Asleep);
    assert_eq!(
        view.jumps[0].words(later.wall, chrono::FixedOffset::east_opt(0).unwrap()),
        "the hub was asleep 7 h 12 min, 23:40–06:52"
    );
}

/// A stamp later than the wall clock when first seen (another host ahead, or stored before a
/// step back and read after a restart) is taken as made now, and said.
#[test]
fn a_stamp_ahead_of_the_clock_is_judged_from_when_seen_and_said() {
    let (hands, clock) = clock();
    let now = clock.now();
    let ahead = now.wall + chrono::Duration::seconds(HOUR);
    assert_eq!(clock.age("queue task q_1's last report", ahead, &now), 0);
    hands.pass(secs(301));
    let now = clock.now();
    assert_eq!(clock.age("queue task q_1's last report", ahead, &now), 301);
    let said = clock.view(&now).ahead.expect("said");
    assert_eq!(said.count, 1);
    assert_eq!(said.max_s, HOUR as u64);
    assert_eq!(said.what, "queue task q_1's last report");
    // A second ahead is two hosts' ordinary slack: not said.
    let (_, clock) = self::clock();
    let now = clock.now();
    clock.age(
        "agent vega's last exchange",
        now.wall + chrono::Duration::seconds(1),
        &now,
    );
    assert_eq!(clock.view(&now).ahead, None);
}

/// Each jump is shown for `shown_for`, the grace lasts at most that long, and both clear on
/// their own.
#[test]
fn jumps_and_their_grace_clear_on_their_own() {
    let (hands, clock) = clock();
    hands.step(DAY);
    clock.now();
    let shown_for = settings().shown_for_s;
    hands.pass(secs(shown_for - 1));
    let now = clock.now();
    assert_eq!(clock.view(&now).jumps.len(), 1);
    assert_eq!(now.grace.map(|g| g.since_s), Some(shown_for - 1));
    hands.pass(secs(1));
    let now = clock.now();
    assert!(clock.view(&now).jumps.is_empty());
    assert_eq!(now.grace, None);
    assert_eq!(clock.view(&now), fleetdash_model::ClockView::default());
}

/// A new stamp under the same name is a new sighting; stamps nobody asks about are let go.
#[test]
fn a_new_stamp_is_a_new_sighting_and_old_ones_are_let_go() {
    let (hands, clock) = clock();
    let first = hands.wall();
    clock.age("agent vega's last heartbeat", first, &clock.now());
    hands.pass(secs(40));
    let now = clock.now();
    let second = now.wall - chrono::Duration::seconds(5);
    assert_eq!(clock.age("agent vega's last heartbeat", second, &now), 5);
    assert_eq!(clock.state().sightings.len(), 1);
    hands.pass(secs(settings().forget_s));
    clock.now();
    assert_eq!(clock.state().sightings.len(), 0);
}

/// A deadline is a moment to come: no ahead note, and a step moves it neither nearer nor
/// further.
#[test]
fn a_deadline_is_as_far_as_was_watched() {
    let (hands, clock) = clock();
    let now = clock.now();
    let deadline = now.wall + chrono::Duration::seconds(2 * HOUR);
    assert_eq!(
        clock.until("queue task q_1's deadline", deadline, &now),
        2 * HOUR
    );
    hands.pass(secs(60));
    hands.step(DAY);
    let now = clock.now();
    assert_eq!(
        clock.until("queue task q_1's deadline", deadline, &now),
        2 * HOUR - 60
    );
    assert_eq!(clock.view(&now).ahead, None);
    hands.pass(secs(2 * HOUR as u64));
    let now = clock.now();
    assert_eq!(
        clock.until("queue task q_1's deadline", deadline, &now),
        -60
    );
}

/// A stamp made just before a jump and first seen just after it (a report received a second
/// before the laptop's clock is set a day ahead, read at the next pass) is as old as it is,
/// not a day: the jump it predates is taken out. Likewise one made just before a step back is
/// not "ahead" of the clock, and not said as such.
#[test]
fn a_stamp_first_seen_just_after_a_jump_it_predates_keeps_its_age() {
    let (hands, clock) = clock();
    let report = hands.wall();
    hands.pass(secs(2));
    hands.step(DAY);
    clock.now();
    hands.pass(secs(3));
    let now = clock.now();
    assert_eq!(clock.age("queue task q_1's last news", report, &now), 5);
    // Made after the jump: nothing taken out.
    let later = now.wall - chrono::Duration::seconds(1);
    assert_eq!(clock.age("queue task q_2's last news", later, &now), 1);

    let (hands, clock) = self::clock();
    let report = hands.wall();
    hands.pass(secs(2));
    hands.step(-HOUR);
    clock.now();
    hands.pass(secs(3));
    let now = clock.now();
    assert_eq!(clock.age("queue task q_1's last news", report, &now), 5);
    assert_eq!(
        clock.view(&now).ahead,
        None,
        "explained by the step, not skew"
    );
    // A deadline set before the forward jump, first seen after it, is as far as it was.
    let (hands, clock) = self::clock();
    let deadline = hands.wall() + chrono::Duration::seconds(2 * HOUR);
    hands.step(DAY);
    let now = clock.now();
    assert_eq!(
        clock.until("queue task q_1's deadline", deadline, &now),
        2 * HOUR
    );
}

/// Random runs of time passing, steps either way and sleeps (seeded: the same runs each time):
/// a stamp seen at the start is always exactly as old as the boot clock says time passed, and
/// once a window is reached for it, no later step or sleep un-reaches it.
#[test]
fn over_random_steps_and_sleeps_ages_follow_the_boot_clock_and_no_red_turns_green() {
    use rand::{Rng, SeedableRng};
    let window = settings_window();
    let mut rng = rand::rngs::StdRng::seed_from_u64(31);
    for run in 0..200 {
        let (hands, clock) = clock();
        let stamp = hands.wall();
        clock.age("task q_1's last news", stamp, &clock.now());
        let mut boot_passed = 0u64;
        let mut was_reached = false;
        for op in 0..30 {
            match rng.random_range(0..4) {
                0 | 1 => {
                    let s = rng.random_range(1..=400);
                    hands.pass(secs(s));
                    boot_passed += s;
                }
                2 => {
                    let mut s = rng.random_range(-2 * DAY..=2 * DAY);
                    if s == 0 {
                        s = 1;
                    }
                    hands.step(s);
                }
                _ => {
                    let s = rng.random_range(60..=12 * 3600);
                    hands.sleep(secs(s));
                    boot_passed += s;
                }
            }
            let now = clock.now();
            let age = clock.age("task q_1's last news", stamp, &now);
            assert_eq!(age, boot_passed, "run {run}, op {op}");
            let reached = now.reached(age, window);
            assert!(
                reached || !was_reached,
                "run {run}, op {op}: reached before, not now ({now:?})"
            );
            was_reached |= reached;
        }
    }
}

/// Issue 32: `silence add --for 300000y` panicked on `DateTime + TimeDelta`; every span from
/// input is now refused past the horizon, the limit named, before any arithmetic.
#[test]
fn a_span_past_the_horizon_is_refused_with_the_limit_named() {
    let now = Utc.with_ymd_and_hms(2026, 12, 3, 12, 0, 0).unwrap();
    assert_eq!(
        ahead(now, Duration::from_secs(3600)),
        Ok(Utc.with_ymd_and_hms(2026, 12, 3, 13, 0, 0).unwrap())
    );
    assert!(ahead(now, HORIZON).is_ok(), "the horizon itself is taken");
    for span in [
        HORIZON + Duration::from_secs(1),
        Duration::from_secs(300_000 * 365 * 86_400),
        Duration::MAX,
    ] {
        let why = ahead(now, span).unwrap_err();
        assert!(why.contains("more than 366 d ahead"), "{why}");
    }
    let far = Utc.with_ymd_and_hms(9999, 12, 31, 0, 0, 0).unwrap();
    assert!(within_horizon(far, now).is_err());
    assert_eq!(within_horizon(now, now), Ok(now));
    // The words and the number the rules file's refusal names agree with the constant.
    assert_eq!(HORIZON.as_secs(), 31_622_400);
    assert_eq!(HORIZON_WORDS, fleetdash_model::human_age(HORIZON.as_secs()));
}

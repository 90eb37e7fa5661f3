//! One pass: the new snapshot's elements counted per key into the engine's [`State`], and the
//! [`Alert`]s that makes.
//!
//! Pure over (state, elements, readings, now, thresholds, deps, silences, acks): the write side owns
//! the clock and the files ([`super::Alerting`]); here nothing reads a clock or a disk, so every
//! boundary is testable exactly.
//! - A pass counts an element only when its write renewed the element's section (its
//!   `checked_at` moved, [`readings`](super::state::readings)): the snapshot is written after
//!   each section's read, and an agent left red in it while the queue writes is one probe, not
//!   two. A section's own element (`section:<name>`, red while failed or stale) likewise counts
//!   once per read of the section, and at every pass while it is stale (staleness is judged at
//!   each write): a failure a one-off `collect` wrote before `run` is one reading, not one per
//!   write of the other sections (issue 43: it paged, then recovered, in one notification).
//! - Only red fires (amber is shown, not paged). `fail_after` consecutive red passes make a
//!   Firing, so one lost probe pages nobody; `recover_after` consecutive passes no longer red
//!   (green or amber) make a Recovered, sent only for what fired; a Reminder falls due every
//!   `remind_every` while red.
//! - An element whose root cause ([`Deps`]) is down raises nothing of its own; the root's Firing
//!   names what it takes down, and its Recovered repeats them (`super::roots` says which).
//! - A silenced element (a silence or a maintenance window) raises no Firing nor Reminder; its
//!   counting goes on, so the Firing goes out at the first pass after the silence if still red.
//! - An acknowledged alert (`super::super::acks`) raises no Reminder while the ack stands: while
//!   the open alert is the one it acked (the same `since`). A recovery closes it, and a later
//!   red run is a new alert whose reminders go out.
//! - A recovery is never suppressed, silenced nor held by an ack.
//! - An element with an open alert that a pass no longer shows counts a pass not red when what
//!   lists it was read whole ([`gone_reads_green`](gone::gone_reads_green)); so its alert
//!   closes with a Recovered ("no longer listed") instead of staying open until forgotten.
//!   Otherwise the pass says nothing of it.
//! - An element the snapshot says was taken away (a work-queue task the operator dismissed, or
//!   one retired by the rules' retention: [`gone::ended`]) ends its open alert at once, said as
//!   such ("dismissed by the operator"), never as recovered nor as no longer listed.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};
use fleetdash_model::{Asc, Band};

use super::gone;
use super::roots;
use super::state::{Open, Readings, State, Track, VERSION, stale_key};
use crate::alerting::{Alert, AlertEvent};
use crate::config::AlertRules;
use crate::deps::Deps;
use crate::write::transitions::Elements;
use fleetdash_model::alerts::Element;

/// A Firing's or Recovered's id: the element's key, the event, and when the red run began,
/// so a pass replayed after a crash makes the same id (the outbox's dedupe key), and the
/// outbox tells whether it went out ([`super::Alerting::reconcile`]).
pub fn alert_id(key: &str, event: AlertEvent, red_since: DateTime<Utc>) -> String {
    format!("{key}:{}:{}", event.as_str(), red_since.timestamp())
}

/// The thresholds, from the rules file's `alerts` and `alert_memory` groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thresholds {
    pub fail_after: u64,
    pub recover_after: u64,
    pub remind_every: Duration,
    /// An element with an open alert that no snapshot has shown for this long is forgotten (a
    /// removed agent, a finished task): `alert_memory.forget_unseen_seconds`.
    pub forget_unseen: Duration,
    /// An element with no open alert is forgotten sooner, so the file stays the size of the
    /// fleet: `alert_memory.forget_quiet_seconds`. Coming back red, it counts its passes again.
    pub forget_quiet: Duration,
}

impl From<&AlertRules> for Thresholds {
    fn from(r: &AlertRules) -> Self {
        let span = |rule: &crate::config::Rule| {
            Duration::seconds(i64::try_from(rule.seconds).unwrap_or(i64::MAX))
        };
        Thresholds {
            fail_after: r.fail_after.count,
            recover_after: r.recover_after.count,
            remind_every: span(&r.remind_every),
            forget_unseen: span(&r.forget_unseen),
            forget_quiet: span(&r.forget_quiet),
        }
    }
}

/// What a pass needs besides the state and the elements.
pub struct PassContext<'a> {
    pub now: DateTime<Utc>,
    pub thresholds: Thresholds,
    pub deps: &'a Deps,
    /// Whether an element is silenced at `now` (a silence or a maintenance window).
    pub silenced: &'a dyn Fn(&str, &Element) -> bool,
    /// The acknowledged alerts: per key, the `since` of the open alert acked. An ack for
    /// another `since` is for an alert that has ended, and holds nothing back.
    pub acked: &'a crate::alerting::acks::Acked,
    /// `[alerts] dashboard_url`, the alerts' click target.
    pub link: Option<&'a str>,
    /// The snapshot's sections' readings ([`readings`](super::state::readings)). A section it
    /// does not name counts its elements at every pass.
    pub readings: &'a Readings,
    /// The elements the snapshot says were taken away, with the words their alerts end with
    /// ([`gone::ended`]).
    pub ended: &'a gone::Ended,
}

/// One pass: counts `elements` into `state` and returns the alerts it makes, in key order.
///
/// A pass counts an element only when the write renewed the section it is collected in: the
/// snapshot is written after every section's read, and a red agent left in it while the queue
/// writes is one lost probe, not two.
pub fn pass(state: &mut State, elements: &Elements, cx: &PassContext) -> Vec<Alert> {
    let now = cx.now;
    state.version = VERSION;
    let moved = |reading: &str| {
        cx.readings
            .get(reading)
            .is_none_or(|at| state.readings.get(reading) != Some(at))
    };
    let renewed = |key: &str| match Deps::section_of(key) {
        Some(section) => moved(&section),
        // A section's own element: by its read, or at every write while it is stale.
        None if key.starts_with("section:") => {
            moved(key) || cx.readings.contains_key(&stale_key(key))
        }
        None => true,
    };
    let counted: BTreeMap<&String, bool> = elements.keys().map(|k| (k, renewed(k))).collect();
    let taken_away: Vec<(String, String)> = state
        .tracks
        .iter()
        .filter(|(key, t)| t.open.is_some() && !elements.contains_key(*key))
        .filter_map(|(key, _)| cx.ended.get(key).map(|why| (key.clone(), why.clone())))
        .collect();
    let gone: Vec<String> = state
        .tracks
        .iter()
        .filter(|(key, t)| t.open.is_some() && !elements.contains_key(*key))
        .filter(|(key, _)| !cx.ended.contains_key(*key))
        .filter(|(key, _)| renewed(key))
        .filter(|(key, _)| gone::gone_reads_green(key, elements, &state.tracks, cx.deps))
        .map(|(key, _)| key.clone())
        .collect();
    state.readings = cx.readings.clone();
    for (key, el) in elements {
        let t = state.tracks.entry(key.clone()).or_insert_with(|| Track {
            red_passes: 0,
            clear_passes: 0,
            red_since: None,
            clear_since: None,
            open: None,
            seen: now,
            kind: String::new(),
            name: String::new(),
        });
        t.seen = now;
        if t.kind != el.kind || t.name != el.name {
            t.kind = el.kind.to_string();
            t.name = el.name.clone();
        }
        if counted[key] {
            t.count(el.band == Band::Red, now);
        }
    }
    for key in &gone {
        let t = state.tracks.get_mut(key).expect("listed above");
        t.count(false, now);
    }
    state.tracks.retain(|_, t| {
        let keep = if t.open.is_some() {
            cx.thresholds.forget_unseen
        } else {
            cx.thresholds.forget_quiet
        };
        now - t.seen < keep
    });

    let suppressed = roots::held_back(elements, &state.tracks, cx.deps);

    let mut alerts = Vec::new();
    for (key, el) in elements {
        let Some(t) = state.tracks.get_mut(key) else {
            continue;
        };
        let held = || suppressed[key] || (cx.silenced)(key, el);
        let alert =
            |event: AlertEvent, since: DateTime<Utc>, id: String, takes_down: Vec<String>| Alert {
                id,
                key: key.clone(),
                kind: el.kind.to_string(),
                name: el.name.clone(),
                event,
                band: el.band,
                reason: el.reason.clone().filter(|_| event != AlertEvent::Recovered),
                status: status_of(el.band),
                since,
                at: now,
                takes_down,
                link: cx.link.map(str::to_string),
                detail: None,
            };
        match (el.band, &mut t.open) {
            (Band::Red, None) if t.red_passes >= cx.thresholds.fail_after && !held() => {
                let since = t.red_since.unwrap_or(now);
                let names = roots::takes_down(key, elements, cx.deps);
                let id = alert_id(key, AlertEvent::Firing, since);
                alerts.push(alert(AlertEvent::Firing, since, id, names.clone()));
                t.open = Some(Open {
                    since,
                    last: now,
                    reminders: 0,
                    takes_down: names,
                });
            }
            (Band::Red, Some(open))
                if now - open.last >= cx.thresholds.remind_every
                    && !held()
                    && cx.acked.get(key) != Some(&open.since) =>
            {
                open.reminders += 1;
                open.last = now;
                let id = format!(
                    "{key}:{}:{}:{}",
                    AlertEvent::Reminder.as_str(),
                    open.since.timestamp(),
                    open.reminders
                );
                let names = roots::takes_down(key, elements, cx.deps);
                alerts.push(alert(AlertEvent::Reminder, open.since, id, names));
            }
            (Band::Green | Band::Amber, Some(_))
                if t.clear_passes >= cx.thresholds.recover_after =>
            {
                let open = t.open.take().expect("matched Some");
                let since = t.clear_since.unwrap_or(now);
                let id = alert_id(key, AlertEvent::Recovered, open.since);
                alerts.push(alert(AlertEvent::Recovered, since, id, open.takes_down));
            }
            _ => {}
        }
    }
    for key in gone {
        let t = state.tracks.get_mut(&key).expect("listed above");
        if t.clear_passes < cx.thresholds.recover_after {
            continue;
        }
        let open = t.open.take().expect("gone lists open alerts only");
        let since = t.clear_since.unwrap_or(now);
        let reason = gone::NO_LONGER_LISTED.to_string();
        alerts.push(closed_unseen(key, t, open, reason, since, cx));
    }
    // Taken away: the alert ends now, in the words of how (the operator's or the rule's
    // decision, not a probe that may flap: no passes to wait for).
    for (key, why) in taken_away {
        let t = state.tracks.get_mut(&key).expect("listed above");
        t.count(false, now);
        let open = t.open.take().expect("taken away lists open alerts only");
        alerts.push(closed_unseen(key, t, open, why, now, cx));
    }
    alerts.sort_by(|a, b| a.key.cmp(&b.key));
    alerts
}

/// What is firing after a pass: each open alert (fired, not yet recovered) as a Firing at
/// `cx.now`, in key order, its reason the element's while it is still red. For a channel that
/// is told the whole firing set again and again (Alertmanager), not for the outbox: its id is
/// the Firing's own.
pub fn firing(state: &State, elements: &Elements, cx: &PassContext) -> Vec<Alert> {
    state
        .tracks
        .iter()
        .filter_map(|(key, t)| {
            let open = t.open.as_ref()?;
            let shown = elements.get(key);
            Some(Alert {
                id: alert_id(key, AlertEvent::Firing, open.since),
                key: key.clone(),
                kind: shown.map_or_else(|| t.kind.clone(), |el| el.kind.to_string()),
                name: shown.map_or_else(|| t.name.clone(), |el| el.name.clone()),
                event: AlertEvent::Firing,
                band: Band::Red,
                reason: shown
                    .filter(|el| el.band == Band::Red)
                    .and_then(|el| el.reason.clone()),
                status: status_of(Band::Red),
                since: open.since,
                at: cx.now,
                takes_down: open.takes_down.clone(),
                link: cx.link.map(str::to_string),
                detail: None,
            })
        })
        .collect()
}

/// The Recovered that closes `open` for an element this pass does not show, `reason` saying
/// why it ended: the same dedupe key as the Recovered of a shown element, its kind and name as
/// its track remembers them.
fn closed_unseen(
    key: String,
    t: &Track,
    open: Open,
    reason: String,
    since: DateTime<Utc>,
    cx: &PassContext,
) -> Alert {
    Alert {
        id: alert_id(&key, AlertEvent::Recovered, open.since),
        kind: if t.kind.is_empty() {
            "element".into()
        } else {
            t.kind.clone()
        },
        name: if t.name.is_empty() {
            key.clone()
        } else {
            t.name.clone()
        },
        key,
        event: AlertEvent::Recovered,
        band: Band::Green,
        reason: Some(reason),
        status: status_of(Band::Green),
        since,
        at: cx.now,
        takes_down: open.takes_down,
        link: cx.link.map(str::to_string),
        detail: None,
    }
}

/// Elements carry a band, not a status code: the alert's ASC says the family the band means
/// (red: a failure monitoring keeps retrying; amber: success with warnings).
pub fn status_of(band: Band) -> Asc {
    match band {
        Band::Green => Asc::SUCCESS,
        Band::Amber => Asc::SUCCESS_WITH_WARNINGS,
        _ => Asc::RETRYABLE_ERROR,
    }
}

#[cfg(test)]
mod tests {
    use super::super::bench::{Bench, el, fired, run, t0};
    use super::*;
    use crate::write::transitions;
    use fleetdash_model::Snapshot;

    #[test]
    fn firing_after_exactly_fail_after_red_passes_and_a_single_lost_probe_pages_nobody() {
        let mut b = Bench::new();
        let n = b.th.fail_after;
        assert!(n >= 2, "the fleet's rule lets one lost probe pass");
        let red = [("agent:min", el("agent", "min", Band::Red))];
        let green = [("agent:min", el("agent", "min", Band::Green))];
        // One lost probe, then green: nothing.
        assert!(b.next(&red).is_empty());
        assert!(b.next(&green).is_empty());
        // N-1 red passes: nothing; the N-th: Firing, once.
        for _ in 1..n {
            assert!(b.next(&red).is_empty());
        }
        assert_eq!(b.next(&red), fired("agent:min", AlertEvent::Firing));
        assert!(b.next(&red).is_empty());
    }

    #[test]
    fn amber_never_pages_and_breaks_a_red_run() {
        let mut b = Bench::new();
        let red = [("agent:min", el("agent", "min", Band::Red))];
        let amber = [("agent:min", el("agent", "min", Band::Amber))];
        for _ in 0..5 {
            assert!(b.next(&amber).is_empty());
        }
        for _ in 1..b.th.fail_after {
            assert!(b.next(&red).is_empty());
            assert!(b.next(&amber).is_empty());
        }
    }

    #[test]
    fn recovered_after_exactly_recover_after_green_passes_and_only_for_what_fired() {
        let mut b = Bench::new();
        let red = [("host:lab", el("host", "lab", Band::Red))];
        let green = [("host:lab", el("host", "lab", Band::Green))];
        for _ in 0..b.th.fail_after {
            b.next(&red);
        }
        // A green pass short of the threshold, then red again: still the same open alert.
        assert!(b.next(&green).is_empty());
        assert!(b.next(&red).is_empty());
        for _ in 1..b.th.recover_after {
            assert!(b.next(&green).is_empty());
        }
        let alerts = b.full(&green);
        assert_eq!(alerts.len(), 1);
        let a = &alerts[0];
        assert_eq!(a.event, AlertEvent::Recovered);
        assert_eq!(a.reason, None);
        assert_eq!(a.headline(), "✔ ok · host lab recovered");
        // Green after a red that never fired: no recovery.
        let mut b = Bench::new();
        b.next(&red);
        for _ in 0..5 {
            assert!(b.next(&green).is_empty());
        }
    }

    #[test]
    fn a_reminder_falls_due_at_exactly_the_interval_while_red() {
        let mut b = Bench::new();
        let red = [("agent:min", el("agent", "min", Band::Red))];
        for _ in 1..b.th.fail_after {
            b.next(&red);
        }
        let fired_at = b.now + Duration::minutes(1);
        assert_eq!(b.at(fired_at, &red), fired("agent:min", AlertEvent::Firing));
        let every = b.th.remind_every;
        assert!(
            b.at(fired_at + every - Duration::seconds(1), &red)
                .is_empty()
        );
        let alerts = {
            b.now = fired_at + every;
            b.full(&red)
        };
        assert_eq!(alerts.len(), 1);
        assert_eq!(alerts[0].event, AlertEvent::Reminder);
        assert!(
            alerts[0].headline().ends_with("(still)"),
            "{}",
            alerts[0].headline()
        );
        assert!(alerts[0].id.ends_with(":1"), "{}", alerts[0].id);
        // The next one counts from this reminder.
        assert!(
            b.at(fired_at + every * 2 - Duration::seconds(1), &red)
                .is_empty()
        );
        assert_eq!(
            b.at(fired_at + every * 2, &red),
            fired("agent:min", AlertEvent::Reminder)
        );
    }

    #[test]
    fn the_alert_carries_its_dedupe_key_since_reason_and_link() {
        let mut b = Bench::new();
        let red = [("agent:min", el("agent", "min", Band::Red))];
        let first = b.now + Duration::minutes(1);
        let mut alerts = Vec::new();
        for _ in 0..b.th.fail_after {
            b.now += Duration::minutes(1);
            alerts = b.full(&red);
        }
        let a = &alerts[0];
        assert_eq!(a.id, format!("agent:min:firing:{}", first.timestamp()));
        assert_eq!(a.since, first);
        assert_eq!(a.at, b.now);
        assert_eq!(a.reason.as_deref(), Some("error: connection refused"));
        assert_eq!(a.link.as_deref(), Some("https://dash.example/"));
        assert_eq!(a.status, Asc::RETRYABLE_ERROR);
    }

    #[test]
    fn an_element_unseen_for_a_while_keeps_its_open_alert_and_is_forgotten_after_a_week() {
        let mut b = Bench::new();
        let red = [("agent:min", el("agent", "min", Band::Red))];
        for _ in 0..b.th.fail_after {
            b.next(&red);
        }
        // The agents section failed for a day: the agent is absent, then red again.
        let later = b.now + Duration::days(1);
        assert!(b.at(later, &[]).is_empty());
        assert_eq!(
            b.at(later + Duration::minutes(1), &red),
            fired("agent:min", AlertEvent::Reminder)
        );
        b.at(later + b.th.forget_unseen + Duration::minutes(2), &[]);
        assert!(b.state.tracks.is_empty());
    }

    #[test]
    fn an_element_that_never_fired_is_forgotten_after_an_hour_unseen() {
        let mut b = Bench::new();
        let tasks: Vec<(String, Element)> = (0..50)
            .map(|i| {
                (
                    format!("task:min/t{i}"),
                    el("task", &format!("t{i}"), Band::Green),
                )
            })
            .collect();
        run(&mut b, &tasks);
        assert_eq!(b.state.tracks.len(), 50);
        let seen = b.now;
        b.at(seen + b.th.forget_quiet - Duration::seconds(1), &[]);
        assert_eq!(b.state.tracks.len(), 50);
        b.at(seen + b.th.forget_quiet, &[]);
        assert!(b.state.tracks.is_empty());
    }

    /// Issue 33: how long the engine remembers an element is the rules' `alert_memory`: under
    /// rules that say ten minutes quiet and a day with an open alert, a quiet task is forgotten
    /// ten minutes after it was last shown, and a fired one a day after.
    #[test]
    fn the_elements_are_forgotten_after_what_the_rules_declare() {
        let mut rules = crate::config::fleet_alert_rules();
        rules.forget_quiet.seconds = 600;
        rules.forget_unseen.seconds = 86400;
        let mut b = Bench::new();
        b.th = Thresholds::from(&rules);
        let quiet = [("task:min/t", el("task", "t", Band::Green))];
        b.next(&quiet);
        let seen = b.now;
        b.at(seen + Duration::minutes(10) - Duration::seconds(1), &[]);
        assert_eq!(b.state.tracks.len(), 1);
        b.at(seen + Duration::minutes(10), &[]);
        assert!(b.state.tracks.is_empty(), "a quiet element: ten minutes");

        let red = [("agent:min", el("agent", "min", Band::Red))];
        for _ in 0..b.th.fail_after {
            b.next(&red);
        }
        assert!(b.state.tracks["agent:min"].open.is_some());
        let seen = b.now;
        b.at(seen + Duration::hours(23), &[]);
        assert!(
            b.state.tracks.contains_key("agent:min"),
            "kept within the day"
        );
        b.at(seen + Duration::days(1), &[]);
        assert!(b.state.tracks.is_empty(), "an open alert: a day");
    }

    /// A work-queue task as the queue judges it at `now` (the model's one judge): unACKed past
    /// the rules' limit, orphaned by the watchdog, or past its deadline.
    fn queue_task(id: &str, state: &str, now: DateTime<Utc>) -> fleetdash_model::QueueTask {
        let mut t = fleetdash_model::QueueTask {
            id: id.into(),
            title: format!("task {id}"),
            owner: None,
            tagged: vec!["sol".into()],
            created_by: "hub".into(),
            created_at: now - Duration::hours(2),
            deadline: None,
            state: state.into(),
            ack: None,
            blocked_on: None,
            last_report_at: None,
            status_message: None,
            quiet_s: None,
            unacked_s: None,
            deadline_in_s: None,
            turns_in_s: None,
            worker_died: false,
            band: Band::Green,
            status: Asc::SUCCESS,
            reason: None,
            checked_at: now,
            stale: false,
        };
        if id == "orphaned" {
            t.status_message = Some(fleetdash_model::queue::ORPHANED_MESSAGE.into());
        }
        if id == "late" {
            t.owner = Some("sol".into());
            t.ack = Some(fleetdash_model::QueueAck {
                kind: "owning".into(),
                by: "sol".into(),
                at: now - Duration::hours(2),
                eta: None,
                to: None,
            });
            t.deadline = Some(now - Duration::minutes(5));
        }
        let limits = fleetdash_model::QueueLimits {
            ack_within_s: 600,
            ..Default::default()
        };
        (t.band, t.status, t.reason) = t.judge(limits, now, &Default::default());
        t
    }

    /// What `fleetdash run` hands the engine: a snapshot's elements. Each of a work-queue
    /// task's reds fires with the queue's own reason.
    #[test]
    fn work_queue_tasks_unacked_orphaned_or_late_fire_with_their_reason() {
        let mut b = Bench::new();
        let mut fired = Vec::new();
        for _ in 0..b.th.fail_after {
            b.now += Duration::minutes(1);
            let mut snap = Snapshot::empty(b.now, crate::config::fleet_rules());
            snap.tasks.queue = fleetdash_model::Probe::Value(vec![
                queue_task("unacked", "TASK_STATE_SUBMITTED", b.now),
                queue_task("orphaned", "TASK_STATE_FAILED", b.now),
                queue_task("late", "TASK_STATE_WORKING", b.now),
            ]);
            fired.extend(b.full_elements(transitions::elements(&snap)));
        }
        let got: Vec<(&str, AlertEvent, &str)> = fired
            .iter()
            .map(|a| (a.key.as_str(), a.event, a.reason.as_deref().unwrap_or("")))
            .collect();
        assert_eq!(got.len(), 3, "{got:#?}");
        assert!(got.iter().all(|g| g.1 == AlertEvent::Firing), "{got:#?}");
        let reason = |key: &str| got.iter().find(|g| g.0 == key).map(|g| g.2).unwrap();
        assert!(
            reason("queue:unacked").contains("taken it for "),
            "{got:#?}"
        );
        assert_eq!(reason("queue:orphaned"), "orphaned: no reply produced");
        assert!(
            reason("queue:late").starts_with("deadline passed"),
            "{got:#?}"
        );
    }

    #[test]
    fn silenced_raises_nothing_then_fires_when_the_silence_ends_and_recovers_during_one() {
        let mut b = Bench::new();
        let red = [("host:lab", el("host", "lab", Band::Red))];
        let green = [("host:lab", el("host", "lab", Band::Green))];
        b.silenced = vec!["host:lab".into()];
        for _ in 0..b.th.fail_after + 3 {
            assert!(b.next(&red).is_empty());
        }
        b.silenced.clear();
        assert_eq!(b.next(&red), fired("host:lab", AlertEvent::Firing));
        // Silenced again: no reminder, but its recovery goes out.
        b.silenced = vec!["host:lab".into()];
        let late = b.now + b.th.remind_every * 2;
        assert!(b.at(late, &red).is_empty());
        for _ in 1..b.th.recover_after {
            assert!(b.next(&green).is_empty());
        }
        assert_eq!(b.next(&green), fired("host:lab", AlertEvent::Recovered));
    }

    /// An ack stops the reminders of the alert it acked and nothing else: the recovery goes
    /// out, and the next red run is a new alert whose reminders go out again.
    #[test]
    fn acked_sends_no_reminder_then_recovers_and_a_new_red_run_reminds_again() {
        let mut b = Bench::new();
        let red = [("agent:min", el("agent", "min", Band::Red))];
        let green = [("agent:min", el("agent", "min", Band::Green))];
        for _ in 1..b.th.fail_after {
            b.next(&red);
        }
        let fired_at = b.now + Duration::minutes(1);
        let alerts = {
            b.now = fired_at;
            b.full(&red)
        };
        assert_eq!(alerts.len(), 1);
        let since = alerts[0].since;
        b.acked.insert("agent:min".into(), since);
        let every = b.th.remind_every;
        // At the interval, and at three times it: nothing.
        assert!(b.at(fired_at + every, &red).is_empty());
        assert!(b.at(fired_at + every * 3, &red).is_empty());
        assert_eq!(
            b.state.tracks["agent:min"].open.as_ref().unwrap().reminders,
            0
        );
        // Recovered: it goes out, never held by the ack.
        for _ in 1..b.th.recover_after {
            assert!(b.next(&green).is_empty());
        }
        assert_eq!(b.next(&green), fired("agent:min", AlertEvent::Recovered));
        // Red again later: a new alert (a new since) that the old ack does not hold.
        for _ in 1..b.th.fail_after {
            assert!(b.next(&red).is_empty());
        }
        let refired_at = b.now + Duration::minutes(1);
        let alerts = {
            b.now = refired_at;
            b.full(&red)
        };
        assert_eq!(alerts[0].event, AlertEvent::Firing);
        assert_ne!(alerts[0].since, since);
        assert_eq!(b.acked["agent:min"], since, "the stale ack is still given");
        assert!(
            b.at(refired_at + every - Duration::seconds(1), &red)
                .is_empty()
        );
        assert_eq!(
            b.at(refired_at + every, &red),
            fired("agent:min", AlertEvent::Reminder)
        );
    }

    /// An ack holds back the one element it names: a neighbour's reminders go out.
    #[test]
    fn an_ack_holds_back_only_its_own_key() {
        let mut b = Bench::new();
        let red = [
            ("agent:min", el("agent", "min", Band::Red)),
            ("agent:sol", el("agent", "sol", Band::Red)),
        ];
        for _ in 0..b.th.fail_after {
            b.next(&red);
        }
        let since = b.state.tracks["agent:min"].open.as_ref().unwrap().since;
        b.acked.insert("agent:min".into(), since);
        let at = b.now + b.th.remind_every;
        assert_eq!(b.at(at, &red), fired("agent:sol", AlertEvent::Reminder));
    }

    // Found in review: it failed before its fix.

    /// Was: a pass was any section's write, so one lost agent probe, left red in the snapshot
    /// while the queue wrote, made two red passes and paged. Now only a write that renewed the
    /// agents section counts the agent; a second lost probe still fires.
    #[test]
    fn one_lost_probe_left_in_the_snapshot_while_another_section_writes_pages_nobody() {
        use crate::collect::{SectionData, SectionName};
        use crate::write::history::tests::{agent, update};
        let mut b = Bench::new();
        assert_eq!(b.th.fail_after, 2);
        let configured = [SectionName::Agents, SectionName::Queue];
        let mut snap = Snapshot::empty(t0(), crate::config::fleet_rules());
        // One section's read at `at`, written as the writer does, and the engine's pass after.
        let mut read = |at: DateTime<Utc>, data: SectionData| {
            b.now = at;
            crate::snapshot::apply(&mut snap, update(data, at));
            crate::snapshot::finalize(
                &mut snap,
                &configured,
                crate::config::fleet_rules(),
                &crate::clock::Clocked::wall_only(at),
            );
            let alerts = b.write(&snap);
            alerts
                .iter()
                .map(|a| (a.key.clone(), a.event))
                .collect::<Vec<_>>()
        };
        let agents = |up: bool, at| SectionData::Agents(vec![agent("min", up, at)]);
        let queue = || SectionData::Queue(crate::collect::queue::QueuePart::listed(vec![]));
        let mut events = Vec::new();
        // t0: min answers; the queue is read.
        events.extend(read(t0(), agents(true, t0())));
        events.extend(read(t0(), queue()));
        // t0+2m: ONE agents probe lost (min red); 20 s later the queue writes (no new probe).
        let lost_at = t0() + Duration::minutes(2);
        events.extend(read(lost_at, agents(false, lost_at)));
        events.extend(read(lost_at + Duration::seconds(20), queue()));
        assert!(
            !events.contains(&("agent:min".to_string(), AlertEvent::Firing)),
            "one lost probe paged: {events:?}"
        );
        // The next agents read finds min red again: the second red probe fires.
        let again = t0() + Duration::minutes(4);
        assert_eq!(
            read(again, agents(false, again)),
            [("agent:min".to_string(), AlertEvent::Firing)]
        );
    }

    /// Issue 43: a one-off `collect` before `run` left a section failed in the snapshot; `run`'s
    /// first writes, of the other sections, each counted that one reading again, so it paged
    /// before the section's own read turned it green, and its Recovered followed in the same
    /// notification. A failure is counted once per read of its section; a second failed read
    /// still fires; a stale section still counts at every write.
    #[test]
    fn a_failed_section_left_in_the_snapshot_is_one_reading_however_many_others_write() {
        use crate::collect::queue::QueuePart;
        use crate::collect::{SectionData, SectionName};
        use crate::write::history::tests::{agent, update};
        use fleetdash_model::Probe;
        let mut b = Bench::new();
        assert_eq!(b.th.fail_after, 2);
        let configured = [SectionName::Agents, SectionName::Queue];
        let mut snap = Snapshot::empty(t0(), crate::config::fleet_rules());
        let mut read = |at: DateTime<Utc>, data: SectionData| {
            b.now = at;
            crate::snapshot::apply(&mut snap, update(data, at));
            crate::snapshot::finalize(
                &mut snap,
                &configured,
                crate::config::fleet_rules(),
                &crate::clock::Clocked::wall_only(at),
            );
            b.write(&snap)
                .iter()
                .map(|a| (a.key.clone(), a.event))
                .collect::<Vec<_>>()
        };
        let failed = || {
            SectionData::Queue(QueuePart {
                tasks: Probe::error("queue/tasks.db: not a SQLite database"),
                ..QueuePart::listed(vec![])
            })
        };
        let agents = |at| SectionData::Agents(vec![agent("min", true, at)]);
        let key = "section:tasks.queue".to_string();
        let mut events = Vec::new();
        // The `collect` before `run`: both sections read, the queue failed.
        events.extend(read(t0(), agents(t0())));
        events.extend(read(t0(), failed()));
        // `run`: three writes of the agents before the queue's own first read.
        for s in 1..=3 {
            let at = t0() + Duration::seconds(30 + s);
            events.extend(read(at, agents(at)));
        }
        let fine = t0() + Duration::seconds(40);
        events.extend(read(fine, SectionData::Queue(QueuePart::listed(vec![]))));
        assert!(
            !events.iter().any(|(k, _)| *k == key),
            "one failed read paged: {events:?}"
        );
        // Two failed reads of its own do.
        let again = t0() + Duration::seconds(100);
        assert!(read(again, failed()).is_empty());
        assert_eq!(
            read(again + Duration::seconds(1), failed()),
            [(key.clone(), AlertEvent::Firing)]
        );
        // Read fine twice: recovered.
        let fine = again + Duration::seconds(10);
        assert!(read(fine, SectionData::Queue(QueuePart::listed(vec![]))).is_empty());
        assert_eq!(
            read(
                fine + Duration::seconds(1),
                SectionData::Queue(QueuePart::listed(vec![]))
            ),
            [(key.clone(), AlertEvent::Recovered)]
        );
        // Then never read again: stale past the rules' limit, its reading never moves, yet
        // every write judges it stale again, and it fires.
        let mut fired = Vec::new();
        let mut at = fine;
        for _ in 0..4 {
            at += Duration::minutes(6);
            fired.extend(read(at, agents(at)));
        }
        assert_eq!(fired, [(key, AlertEvent::Firing)]);
    }
}

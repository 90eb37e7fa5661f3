//! Deciding what fires: after every snapshot write, the new snapshot's elements are counted per
//! key in consecutive passes, and the pass says which [`Alert`]s that makes.
//!
//! Kept apart so that the judging stays pure:
//! - [`pass`]: the pass itself, pure over (state, elements, readings, now, thresholds, deps,
//!   silences): nothing in it reads a clock or a disk, so every boundary is testable exactly.
//!   With it, `roots` (what a root cause holds back and names) and [`gone`] (what an element
//!   no longer listed means).
//! - [`confirm`]: after a pass, the sections a quick re-read would confirm a red in (issue 43:
//!   the watchdog reads them again seconds later instead of a cadence later).
//! - [`state`]: what the engine remembers between passes, and its file
//!   `<state_dir>/alerts-engine.json`, so a restart mid-red sends no second Firing and forgets
//!   no open alert.
//! - Here, [`Alerting`]: the engine as the write side runs it. It reads the state, the
//!   silences and the acks from disk, runs the pass at the write's clock (given, never read
//!   here) and saves the state.

#[cfg(test)]
mod bench;
pub mod confirm;
pub mod gone;
pub mod pass;
mod roots;
pub mod state;

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};

use super::acks::{self, Ack, AckStore};
use super::silences::{Active, Silence, SilenceStore};
use super::{Alert, AlertEvent};
use crate::clock::Clocked;
use crate::config::maintenance::MaintenanceWindow;
use crate::config::{Config, Flaky, Rules};
use crate::deps::Deps;
use crate::redact::RedactionGate;
use crate::write::transitions::Elements;
use fleetdash_model::alerts::Element;
use pass::{PassContext, Thresholds};
pub use state::{Readings, readings};
use state::{State, StateFile};

/// What one pass decided: its alerts, and the state to save once they are safe.
#[derive(Debug, Clone)]
pub struct Decision {
    pub alerts: Vec<Alert>,
    /// What is firing after the pass, each open alert as a Firing ([`pass::firing`]).
    pub firing: Vec<Alert>,
    /// The readings (sections, the tunnels') holding a red that waits for its confirmation
    /// ([`confirm::unconfirmed`]).
    pub unconfirmed: BTreeSet<String>,
    state: State,
}

/// The engine as the write side runs it: built once from the config, then
/// [`Alerting::after_write`] after every snapshot write.
pub struct Alerting {
    thresholds: Thresholds,
    deps: Deps,
    link: Option<String>,
    windows: Vec<MaintenanceWindow>,
    /// The elements the config declares known to drop ([`Flaky`]): held while it stands.
    flaky: BTreeMap<String, Flaky>,
    state: StateFile,
    silences: SilenceStore,
    acks: AckStore,
}

/// The names the clock knows an element's stamps in the engine's state by.
fn seen_what(key: &str) -> String {
    format!("alert track {key}'s last sight")
}

fn sent_what(key: &str) -> String {
    format!("alert {key}'s last notice")
}

/// The stamps whose age the pass judges (when an element was last seen, when its alert was
/// last sent) as this clock would write them now; an alert's `since`, part of its identity,
/// stays as it is.
fn rebase(state: &mut State, at: &Clocked) {
    for (key, t) in &mut state.tracks {
        t.seen = at.rebase(&seen_what(key), t.seen);
        if let Some(open) = &mut t.open {
            open.last = at.rebase(&sent_what(key), open.last);
        }
    }
}

/// Notes the stamps the pass made now, so their ages count from here whatever the clock does.
fn note(state: &State, at: &Clocked) {
    let now = at.wall();
    for (key, t) in &state.tracks {
        if t.seen == now {
            at.note(&seen_what(key), now);
        }
        if let Some(open) = t.open.as_ref().filter(|o| o.last == now) {
            at.note(&sent_what(key), open.last);
        }
    }
}

impl Alerting {
    pub fn new(config: &Config, rules: &Rules, gate: RedactionGate) -> Self {
        Alerting {
            thresholds: Thresholds::from(&rules.alerts),
            deps: Deps::from_config(config),
            link: config.alerts.dashboard_url.as_ref().map(|u| u.to_string()),
            windows: config.alerts.maintenance.clone(),
            flaky: config.flaky.clone(),
            state: StateFile::new(&config.state_dir, gate.clone()),
            silences: SilenceStore::new(&config.state_dir, gate.clone()),
            acks: AckStore::new(&config.state_dir, gate),
        }
    }

    /// The operator's silences at `now`; an unreadable or corrupt file is logged with its path
    /// (a corrupt one set aside) and silences nothing (an alert too many beats a page lost).
    fn silences(&self, now: DateTime<Utc>) -> Vec<Silence> {
        self.silences.load(now).unwrap_or_else(|e| {
            tracing::warn!(file = %self.silences.path().display(), "silences not read, none applied: {e:#}");
            Vec::new()
        })
    }

    /// The operator's acks at `now`, standing or not (the pass judges them against its own
    /// state); an unreadable or corrupt file is logged with its path (a corrupt one set aside)
    /// and acks nothing (a reminder too many beats one lost).
    fn acks(&self, now: DateTime<Utc>) -> Vec<Ack> {
        self.acks.load(now).unwrap_or_else(|e| {
            tracing::warn!(file = %self.acks.path().display(), "acks not read, none applied: {e:#}");
            Vec::new()
        })
    }

    /// One pass over the new snapshot's elements at the write's clock, then its state saved:
    /// [`Alerting::decide`] and [`Alerting::commit`] in one. Blocking (reads, fsync): call from
    /// a blocking thread.
    pub fn after_write(
        &self,
        elements: &Elements,
        readings: &Readings,
        ended: &gone::Ended,
        now: DateTime<Utc>,
    ) -> Vec<Alert> {
        let decision = self.decide(elements, readings, ended, now);
        self.commit(&decision);
        decision.alerts
    }

    /// One pass, not yet saved. For at-least-once delivery the write side puts
    /// [`Decision::alerts`] in the outbox first and [`Alerting::commit`]s after: a crash in
    /// between replays the same pass next time, making the same alert ids, which the outbox's
    /// dedupe key drops. Blocking (reads).
    pub fn decide(
        &self,
        elements: &Elements,
        readings: &Readings,
        ended: &gone::Ended,
        now: DateTime<Utc>,
    ) -> Decision {
        self.decide_clocked(elements, readings, ended, &Clocked::wall_only(now))
    }

    /// [`Alerting::decide`] at `at`: the state's stamps taken as this clock would write them
    /// now before the pass (a step of the clock makes no reminder due, delays none, forgets no
    /// element), and the ones the pass makes noted on it.
    pub fn decide_clocked(
        &self,
        elements: &Elements,
        readings: &Readings,
        ended: &gone::Ended,
        at: &Clocked,
    ) -> Decision {
        let now = at.wall();
        let mut state = self.state.load(now);
        rebase(&mut state, at);
        let silences = self.silences(now);
        // A declared element's red is held as a silenced one's: counted, recorded, not paged.
        let silenced = |key: &str, el: &Element| {
            self.declared(key, now).is_some()
                || super::silences::active(&silences, &self.windows, key, el, now).is_some()
        };
        let acked = acks::by_key(&self.acks(now));
        let cx = PassContext {
            now,
            thresholds: self.thresholds,
            deps: &self.deps,
            silenced: &silenced,
            acked: &acked,
            link: self.link.as_deref(),
            readings,
            ended,
        };
        let alerts = pass::pass(&mut state, elements, &cx);
        let firing = pass::firing(&state, elements, &cx);
        let unconfirmed = confirm::unconfirmed(&state, elements, &cx);
        note(&state, at);
        Decision {
            alerts,
            firing,
            unconfirmed,
            state,
        }
    }

    /// Saves the pass's state; a failed save is logged with its path, never a failed write.
    /// Whether it was saved. Blocking (fsync).
    pub fn commit(&self, decision: &Decision) -> bool {
        match self.state.save(&decision.state) {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(file = %self.state.path().display(), "alert engine state not saved: {e:#}");
                false
            }
        }
    }

    /// Brings the saved state up to what went out. A pass's alerts are kept in the outbox
    /// before its state is saved, so a crash (or a failed save) in between leaves the state a
    /// pass behind. Replaying the pass mends most of that (the same ids, which the outbox
    /// drops), not all: a Firing kept for an element that is no longer red at the next pass
    /// has no open alert in the state, so its Recovered would never be sent; a Recovered kept
    /// for one red again leaves the old alert open, so its new Firing would never be sent.
    /// `sent`: per element key, the newest Firing or Recovered the outbox holds and its red
    /// run's start ([`Outbox::last_verdicts`](super::outbox::Outbox::last_verdicts)). Returns
    /// how many alerts it opened or closed. Blocking (reads, fsync).
    pub fn reconcile(
        &self,
        sent: &std::collections::HashMap<String, (AlertEvent, DateTime<Utc>)>,
        now: DateTime<Utc>,
    ) -> usize {
        let mut state = self.state.load(now);
        let mut mended = Vec::new();
        for (key, t) in &mut state.tracks {
            match (&t.open, sent.get(key)) {
                (None, Some(&(AlertEvent::Firing, since))) => {
                    t.open = Some(state::Open {
                        since,
                        last: now,
                        reminders: 0,
                        takes_down: Vec::new(),
                    });
                    mended.push(format!("{key} open"));
                }
                (Some(open), Some(&(AlertEvent::Recovered, since))) if open.since == since => {
                    t.open = None;
                    mended.push(format!("{key} recovered"));
                }
                _ => {}
            }
        }
        if !mended.is_empty() {
            tracing::warn!(
                file = %self.state.path().display(),
                mended = %mended.join(", "),
                "alert engine state was a pass behind the outbox (a crash or a failed save \
                 between them): mended"
            );
            if let Err(e) = self.state.save(&state) {
                tracing::warn!(file = %self.state.path().display(), "alert engine state not saved: {e:#}");
            }
        }
        mended.len()
    }

    /// The acks that stand at `now` (their alert still open), for the snapshot to carry
    /// ("acked 14:02"). Blocking (reads the acks and the engine's state).
    pub fn standing_acks(&self, now: DateTime<Utc>) -> Vec<Ack> {
        let mut acks = self.acks(now);
        // Most writes find no ack: the state is read only to judge one.
        if !acks.is_empty() {
            let state = self.state.load(now);
            acks.retain(|a| a.stands(&state));
        }
        acks
    }

    /// The declaration that holds `key`'s alerts at `now`: none past its `until`.
    fn declared(&self, key: &str, now: DateTime<Utc>) -> Option<&Flaky> {
        self.flaky.get(key).filter(|f| f.stands_at(now))
    }

    /// What holds each element's alerts back at `now`, by key, for the snapshot to carry
    /// ("silenced until 16:00 (disk swap)", "declared flaky: laptop tunnel drops at night").
    /// A declaration is said before a silence on the same element: it is why its trouble is
    /// expected at all. Blocking (reads the silences file).
    pub fn holds(&self, elements: &Elements, now: DateTime<Utc>) -> BTreeMap<String, Hold> {
        let silences = self.silences(now);
        elements
            .iter()
            .filter_map(|(key, el)| {
                let hold = match self.declared(key, now) {
                    Some(f) => Hold::Declared(f.clone()),
                    None => Hold::Silenced(super::silences::active(
                        &silences,
                        &self.windows,
                        key,
                        el,
                        now,
                    )?),
                };
                Some((key.clone(), hold))
            })
            .collect()
    }
}

/// What holds an element's alerts back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hold {
    /// A silence or a maintenance window.
    Silenced(Active),
    /// The config declares it known to drop, and the declaration stands.
    Declared(Flaky),
}

#[cfg(test)]
mod tests {
    use super::bench::{el, t0};
    use super::*;
    use chrono::Duration;
    use fleetdash_model::Band;

    #[test]
    fn after_write_keeps_state_and_reads_silences_from_state_dir_across_restarts() {
        let (dir, path) = crate::config::config_beside_fleet_rules(
            "output_dir = \"o\"\nstate_dir = \"s\"\nrules = \"rules.yaml\"\n\
             [alerts]\ndashboard_url = \"https://fleet.example/\"\n",
        );
        std::fs::create_dir_all(dir.path().join("s")).unwrap();
        let (config, rules) = Config::load(&path).unwrap_or_else(|e| panic!("{e}"));
        let gate = RedactionGate::default();
        let red: Elements = [("host:lab".to_string(), el("host", "lab", Band::Red))].into();
        let store = SilenceStore::new(&config.state_dir, gate.clone());
        let mut now = t0();
        let silence = store
            .add(
                vec![crate::config::maintenance::Matcher::parse("host=lab").unwrap()],
                Duration::minutes(10),
                "disk swap",
                now,
            )
            .unwrap();
        let engine = Alerting::new(&config, &rules, gate.clone());
        for _ in 0..rules.alerts.fail_after.count + 1 {
            now += Duration::minutes(1);
            assert!(
                engine
                    .after_write(&red, &Readings::new(), &gone::Ended::new(), now)
                    .is_empty()
            );
        }
        assert_eq!(
            engine.holds(&red, now)["host:lab"],
            Hold::Silenced(Active {
                until: t0() + Duration::minutes(10),
                reason: "disk swap".into()
            })
        );
        store.end(&silence.id, now).unwrap();
        now += Duration::minutes(1);
        let fired = engine.after_write(&red, &Readings::new(), &gone::Ended::new(), now);
        assert_eq!(fired.len(), 1);
        assert_eq!(fired[0].link.as_deref(), Some("https://fleet.example/"));
        // A restart: a new engine over the same state_dir sends no second Firing.
        let engine = Alerting::new(&config, &rules, gate);
        now += Duration::minutes(1);
        assert!(
            engine
                .after_write(&red, &Readings::new(), &gone::Ended::new(), now)
                .is_empty()
        );
        assert!(engine.holds(&red, now).is_empty());
    }

    /// The ack is read from state_dir at each pass, as `fleetdash ack` leaves it: no reminder
    /// while it stands, and the snapshot is told of it until the alert recovers.
    #[test]
    fn after_write_reads_acks_from_state_dir_and_holds_back_reminders() {
        let (dir, path) = crate::config::config_beside_fleet_rules(
            "output_dir = \"o\"\nstate_dir = \"s\"\nrules = \"rules.yaml\"\n",
        );
        std::fs::create_dir_all(dir.path().join("s")).unwrap();
        let (config, rules) = Config::load(&path).unwrap_or_else(|e| panic!("{e}"));
        let gate = RedactionGate::default();
        let engine = Alerting::new(&config, &rules, gate.clone());
        let store = AckStore::new(&config.state_dir, gate);
        let red: Elements = [("agent:min".to_string(), el("agent", "min", Band::Red))].into();
        let green: Elements = [("agent:min".to_string(), el("agent", "min", Band::Green))].into();
        let none = (Readings::new(), gone::Ended::new());
        let mut now = t0();
        assert!(
            store.ack("agent:min", now, "cli").is_err(),
            "nothing open yet"
        );
        let mut fired = Vec::new();
        while fired.is_empty() {
            now += Duration::minutes(1);
            fired = engine.after_write(&red, &none.0, &none.1, now);
        }
        let acked = store.ack("agent:min", now, "cli").unwrap();
        assert_eq!(acked.since, fired[0].since);
        assert_eq!(engine.standing_acks(now), vec![acked]);
        let every = Duration::seconds(i64::try_from(rules.alerts.remind_every.seconds).unwrap());
        now += every;
        assert!(engine.after_write(&red, &none.0, &none.1, now).is_empty());
        let mut recovered = Vec::new();
        while recovered.is_empty() {
            now += Duration::minutes(1);
            recovered = engine.after_write(&green, &none.0, &none.1, now);
        }
        assert_eq!(recovered[0].event, AlertEvent::Recovered);
        assert!(engine.standing_acks(now).is_empty());
    }

    #[test]
    fn a_pass_not_committed_is_replayed_with_the_same_alert_ids() {
        let (dir, path) = crate::config::config_beside_fleet_rules(
            "output_dir = \"o\"\nstate_dir = \"s\"\nrules = \"rules.yaml\"\n",
        );
        std::fs::create_dir_all(dir.path().join("s")).unwrap();
        let (config, rules) = Config::load(&path).unwrap_or_else(|e| panic!("{e}"));
        let engine = Alerting::new(&config, &rules, RedactionGate::default());
        let red: Elements = [("host:lab".to_string(), el("host", "lab", Band::Red))].into();
        let mut now = t0();
        for _ in 1..rules.alerts.fail_after.count {
            now += Duration::minutes(1);
            engine.after_write(&red, &Readings::new(), &gone::Ended::new(), now);
        }
        now += Duration::minutes(1);
        let first = engine.decide(&red, &Readings::new(), &gone::Ended::new(), now);
        assert_eq!(first.alerts.len(), 1);
        // A crash before commit: the next pass makes the same Firing (the outbox drops it).
        let again = engine.decide(
            &red,
            &Readings::new(),
            &gone::Ended::new(),
            now + Duration::minutes(1),
        );
        assert_eq!(again.alerts.len(), 1);
        assert_eq!(again.alerts[0].id, first.alerts[0].id);
        engine.commit(&again);
        assert!(
            engine
                .decide(
                    &red,
                    &Readings::new(),
                    &gone::Ended::new(),
                    now + Duration::minutes(2)
                )
                .alerts
                .is_empty()
        );
    }

    /// A red element with an open alert when the hub's clock jumps a day ahead: no reminder
    /// falls due because of the jump (each open alert would otherwise remind at once, a
    /// burst), and one falls due `remind_every` of observed time after the last; back an hour,
    /// none is delayed an hour.
    #[test]
    fn a_step_of_the_clock_makes_no_reminder_due_and_delays_none() {
        let (dir, path) = crate::config::config_beside_fleet_rules(
            "output_dir = \"o\"\nstate_dir = \"s\"\nrules = \"rules.yaml\"\n",
        );
        std::fs::create_dir_all(dir.path().join("s")).unwrap();
        let (config, rules) = Config::load(&path).unwrap_or_else(|e| panic!("{e}"));
        let engine = Alerting::new(&config, &rules, RedactionGate::default());
        let (hands, clock) = crate::config::manual_clock(t0());
        let minute = std::time::Duration::from_secs(60);
        let keys = ["agent:min", "agent:vega", "host:lab"];
        let red: Elements = keys
            .iter()
            .map(|k| {
                let (kind, name) = k.split_once(':').unwrap();
                (k.to_string(), el(kind, name, Band::Red))
            })
            .collect();
        let none = (Readings::new(), gone::Ended::new());
        let pass = || {
            let d = engine.decide_clocked(&red, &none.0, &none.1, &clock.clocked());
            engine.commit(&d);
            d.alerts
        };
        let mut fired = Vec::new();
        while fired.is_empty() {
            hands.pass(minute);
            fired = pass();
        }
        assert_eq!(fired.len(), keys.len());
        hands.pass(minute);
        hands.step(86_400);
        assert!(
            pass().is_empty(),
            "a jump a day ahead makes no reminder due"
        );
        let every = rules.alerts.remind_every.seconds;
        hands.pass(std::time::Duration::from_secs(every - 2 * 60));
        assert!(pass().is_empty());
        hands.pass(minute);
        let reminders = pass();
        assert_eq!(reminders.len(), keys.len(), "{reminders:?}");
        assert!(reminders.iter().all(|a| a.event == AlertEvent::Reminder));
        // Back an hour: the next reminder is due `remind_every` after this one, not an hour
        // later.
        hands.step(-3_600);
        hands.pass(std::time::Duration::from_secs(every));
        assert_eq!(pass().len(), keys.len());
    }
}

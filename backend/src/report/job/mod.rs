//! The reporter of `fleetdash run`: every [`TICK`], it notes fleetdash's own blind spells, and
//! once the wall clock has passed the next due moment it builds the report of the time since
//! the previous one ended and puts it in the outbox for `[report]`'s channels, exactly once
//! per due moment:
//!
//! 1. the report is built and written into the state file as pending (synced);
//! 2. it is put in the outbox under the dedupe key `report:<due moment>` (a second put is a
//!    no-op), for the delivery loop to send and retry;
//! 3. the state file then moves `covered_until` to the report's end and clears the pending one.
//!
//! A crash between any two steps finds the pending report at the next start and puts it in
//! the outbox again: one report, never zero, never two. A crash while it is being sent is the
//! outbox's at-least-once: the same report goes again, with its ntfy sequence id, webhook
//! `Idempotency-Key` and A2A message id, all its dedupe key, so a receiver sees one.
//!
//! A report due while fleetdash did not watch (the hub asleep, fleetdash stopped) goes at the
//! first tick after, saying it is late and why. Every due moment that passed meanwhile is
//! served by that one report, which covers all the time since the previous one ended. A clock
//! stepped back before the last report's end sends nothing until it passes that end again: a
//! step never repeats a report.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use chrono::{DateTime, Utc};
use fleetdash_model::Snapshot;
use fleetdash_model::glance::report::{BlindSpell, Report};
use fleetdash_model::{Asc, Jump};
use tokio_util::sync::CancellationToken;

use super::gather::{self, Period};
use super::state::{self, Alive, Loaded, Pending, State};
use super::{page, schedule};
use crate::alerting::outbox::Delivery;
use crate::alerting::{Alert, AlertEvent};
use crate::clock::Clock;
use crate::config::{Config, ReportConfig, Rules};
use crate::write::status_json;

/// How often the reporter looks at the clock: a report goes within this of its hour.
pub const TICK: Duration = Duration::from_secs(15);

/// The reporter of one `fleetdash run`.
pub struct Reporter {
    config: Arc<Config>,
    rules: Arc<Rules>,
    report: ReportConfig,
    /// `None`: no outbox (no channel, or it cannot be opened): the report is still written
    /// for the page.
    delivery: Option<Arc<Delivery>>,
    clock: Clock,
    /// Set until the first tick of this process: it measures the time nothing ran.
    first: std::sync::atomic::AtomicBool,
    /// The clock's jumps already noted, by when they happened on the boot clock (their wall
    /// moment, as the clock words it, moves with each later step).
    jumps_noted: std::sync::Mutex<std::collections::BTreeSet<u128>>,
}

/// What one tick did, for the log and the tests.
#[derive(Debug, Clone, PartialEq)]
pub enum Ticked {
    /// Nothing due.
    Waiting,
    /// A report was put in the outbox (or re-put, after a crash).
    Sent(String),
    /// Nothing can be done: the state file cannot be read or written.
    Stuck(String),
}

impl Reporter {
    /// The reporter `config` asks for; `None` without `[report]`.
    pub fn of(
        config: Arc<Config>,
        rules: Arc<Rules>,
        delivery: Option<Arc<Delivery>>,
        clock: Clock,
    ) -> Option<Reporter> {
        let report = config.report.clone()?;
        Some(Reporter {
            config,
            rules,
            report,
            delivery,
            clock,
            first: std::sync::atomic::AtomicBool::new(true),
            jumps_noted: Default::default(),
        })
    }

    /// Ticks until `stop`.
    pub fn spawn(self, stop: CancellationToken) -> tokio::task::JoinHandle<()> {
        let this = Arc::new(self);
        tokio::spawn(async move {
            let mut last_stuck: Option<String> = None;
            loop {
                match this.tick().await {
                    Ticked::Sent(id) => tracing::info!(report = %id, "report put in the outbox"),
                    Ticked::Stuck(why) if last_stuck.as_ref() != Some(&why) => {
                        tracing::error!("no report can be sent: {why}");
                        last_stuck = Some(why);
                    }
                    _ => {}
                }
                tokio::select! {
                    () = stop.cancelled() => break,
                    () = tokio::time::sleep(TICK) => {}
                }
            }
        })
    }

    /// One look at the clock: blind spells noted, a pending report finished, a due one sent.
    pub async fn tick(&self) -> Ticked {
        let now = self.clock.now();
        let wall = now.wall;
        let boot_s = now.boot.as_secs();
        let state_dir = self.config.state_dir.clone();
        let loaded = tokio::task::spawn_blocking(move || state::load(&state_dir, wall)).await;
        let mut state = match loaded {
            Ok(Loaded::State(s)) => *s,
            Ok(Loaded::Fresh(false)) => State::fresh(wall),
            // A corrupt state file was set aside: what the lost one covered is not known here,
            // and the next report says so.
            Ok(Loaded::Fresh(true)) => {
                let mut fresh = State::fresh(wall);
                fresh.blind.push(BlindSpell {
                    from: wall,
                    to: wall,
                    why: "the report's state file was corrupt and set aside: reports start \
                          again from here"
                        .into(),
                });
                fresh
            }
            Ok(Loaded::Unreadable(why)) => return Ticked::Stuck(why),
            Err(e) => return Ticked::Stuck(e.to_string()),
        };
        let snapshot = self.snapshot().await;
        let jumps = self.clock.jumps_seen();
        self.note_blind(&mut state, snapshot.as_ref(), &jumps, wall, boot_s);

        // A report left pending by a crash: into the outbox again (the dedupe key keeps one).
        if let Some(pending) = state.pending.clone() {
            if let Err(e) = self.enqueue(&pending, wall).await {
                let _ = self.save(&state).await;
                return Ticked::Stuck(format!("the report could not be put in the outbox: {e:#}"));
            }
            finish(&mut state, &pending);
            return match self.save(&state).await {
                Ok(()) => Ticked::Sent(pending.id),
                Err(e) => Ticked::Stuck(format!("{e:#}")),
            };
        }
        if state.last_due.is_none() {
            // The first start: the report at the next hour covers from now.
            state.last_due = Some(schedule::last_at_or_before(&self.report, wall));
        }
        let last_due = state.last_due.expect("set above");
        let due = schedule::next_after(&self.report, last_due);
        // Not yet its hour; or the clock stepped back before the last report's end.
        if wall < due || wall <= state.covered_until {
            return match self.save(&state).await {
                Ok(()) => Ticked::Waiting,
                Err(e) => Ticked::Stuck(format!("{e:#}")),
            };
        }
        // Due, but no snapshot written yet (`run` just started): the first write is seconds
        // away, and the next tick reports on it.
        if snapshot.is_none() {
            return match self.save(&state).await {
                Ok(()) => Ticked::Waiting,
                Err(e) => Ticked::Stuck(format!("{e:#}")),
            };
        }
        let due = schedule::last_at_or_before(&self.report, wall);
        let late = late(&state.blind, due, wall, self.offset(wall));
        let period = Period {
            word: schedule::word(&self.report).to_string(),
            from: state.covered_until,
            to: wall,
            before: state.previous_from,
            watching_since: Some(state.watching_since),
            blind: state.blind.clone(),
            late,
            zone: (self.report.zone_name(), self.offset(wall)),
            first: state.previous_from.is_none() && state.covered_until == state.watching_since,
        };
        let (config, rules) = (self.config.clone(), self.rules.clone());
        let built =
            tokio::task::spawn_blocking(move || gather::build(&config, &rules, &period)).await;
        let report = match built {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => return Ticked::Stuck(format!("the report could not be built: {e:#}")),
            Err(e) => return Ticked::Stuck(e.to_string()),
        };
        let pending = Pending {
            id: format!("report:{}", due.timestamp()),
            due,
            from: report.from,
            to: report.to,
            title: report.title.clone(),
            phone: report.phone_body(),
            text: report.text(),
            channels: self.report.channels.clone(),
            band: report.band,
        };
        // Written ahead: a crash from here on puts this same report in the outbox at restart.
        state.pending = Some(pending.clone());
        if let Err(e) = self.save(&state).await {
            return Ticked::Stuck(format!("{e:#}"));
        }
        self.write_page(&report).await;
        if let Err(e) = self.enqueue(&pending, wall).await {
            return Ticked::Stuck(format!("the report could not be put in the outbox: {e:#}"));
        }
        finish(&mut state, &pending);
        match self.save(&state).await {
            Ok(()) => Ticked::Sent(pending.id),
            Err(e) => Ticked::Stuck(format!("{e:#}")),
        }
    }

    fn offset(&self, at: DateTime<Utc>) -> chrono::FixedOffset {
        super::zone_at(&self.config, at).1
    }

    async fn snapshot(&self) -> Option<Snapshot> {
        let path = self.config.output_dir.join(status_json::FILE_NAME);
        tokio::task::spawn_blocking(move || {
            let bytes = std::fs::read(path).ok()?;
            serde_json::from_slice(&bytes).ok()
        })
        .await
        .ok()
        .flatten()
    }

    /// fleetdash's own blind spells since the last tick: the clock's jumps (a sleep, a step),
    /// the time it was not running (from the last tick of a previous run, on the boot clock
    /// within one boot), and a snapshot not written for longer than the rules' stale limit.
    fn note_blind(
        &self,
        state: &mut State,
        snapshot: Option<&Snapshot>,
        jumps: &[crate::clock::JumpSeen],
        wall: DateTime<Utc>,
        boot_s: u64,
    ) {
        let keep = chrono::Duration::seconds(
            i64::try_from(self.rules.state.transitions_keep.seconds).unwrap_or(i64::MAX / 2),
        );
        let forget_before = wall - keep;
        let stale_s = i64::try_from(self.rules.snapshot_stale_after.seconds).unwrap_or(i64::MAX);
        let first_tick = self.first.swap(false, std::sync::atomic::Ordering::SeqCst);
        if let Some(alive) = state.alive
            && first_tick
        {
            // Within one boot the boot clock says how long nothing ticked; across a reboot the
            // wall clock is all there is.
            let gap = if boot_s >= alive.boot_s {
                (boot_s - alive.boot_s) as i64
            } else {
                (wall - alive.wall).num_seconds()
            };
            if gap > stale_s {
                let from = alive.wall;
                state.note_blind(
                    BlindSpell {
                        from,
                        to: from + chrono::Duration::seconds(gap),
                        why: "fleetdash was not running".into(),
                    },
                    forget_before,
                );
            }
        }
        let mut noted = self.jumps_noted.lock().unwrap_or_else(|p| p.into_inner());
        for jump in jumps {
            if !noted.insert(jump.boot.as_millis()) {
                continue;
            }
            let span = chrono::Duration::seconds(i64::try_from(jump.seconds).unwrap_or(0));
            let (from, why) = match jump.kind {
                Jump::Asleep => (jump.wall - span, "the hub was asleep".to_string()),
                Jump::Forward => (
                    jump.wall - span,
                    format!(
                        "this host's clock jumped forward {}",
                        fleetdash_model::human_age(jump.seconds)
                    ),
                ),
                Jump::Backward => (
                    jump.wall,
                    format!(
                        "this host's clock jumped back {}",
                        fleetdash_model::human_age(jump.seconds)
                    ),
                ),
            };
            state.note_blind(
                BlindSpell {
                    from,
                    to: jump.wall,
                    why,
                },
                forget_before,
            );
        }
        drop(noted);
        if let Some(s) = snapshot {
            if let Some(seen) = state.snapshot_seen
                && (s.generated_at - seen).num_seconds() > stale_s
                // Not when the gap is already a blind spell (fleetdash stopped, asleep).
                && !state
                    .blind
                    .iter()
                    .any(|b| b.from < s.generated_at && b.to > seen)
            {
                state.note_blind(
                    BlindSpell {
                        from: seen,
                        to: s.generated_at,
                        why: "no snapshot was written".into(),
                    },
                    forget_before,
                );
            }
            state.snapshot_seen = Some(s.generated_at);
        }
        state.alive = Some(Alive { wall, boot_s });
    }

    async fn enqueue(&self, pending: &Pending, now: DateTime<Utc>) -> Result<()> {
        let Some(delivery) = &self.delivery else {
            return Ok(());
        };
        let alert = Alert {
            id: pending.id.clone(),
            key: "report".into(),
            kind: "report".into(),
            name: pending.title.clone(),
            event: AlertEvent::Report,
            band: pending.band,
            reason: Some(pending.phone.clone()),
            status: Asc::SUCCESS,
            since: pending.from,
            at: pending.to,
            takes_down: Vec::new(),
            link: page::link(&self.config),
            detail: Some(pending.text.clone()),
        };
        delivery
            .enqueue_to(alert, pending.channels.clone(), now)
            .await?;
        Ok(())
    }

    async fn save(&self, state: &State) -> Result<()> {
        let (dir, state) = (self.config.state_dir.clone(), state.clone());
        tokio::task::spawn_blocking(move || state::save(&dir, &state)).await?
    }

    async fn write_page(&self, report: &Report) {
        let (dir, report) = (self.config.output_dir.clone(), report.clone());
        let gate = self.config.gate();
        let written = tokio::task::spawn_blocking(move || page::write(&dir, &report, &gate)).await;
        if !matches!(written, Ok(Ok(()))) {
            tracing::warn!("the last report was not written for the page: {written:?}");
        }
    }
}

/// The pending report is in the outbox: the next period starts at its end.
fn finish(state: &mut State, pending: &Pending) {
    state.previous_from = Some(pending.from);
    state.covered_until = pending.to;
    state.last_due = Some(pending.due);
    state.pending = None;
}

/// "due 07:30, sent 09:12: the hub was asleep": when a blind spell covers the due moment.
fn late(
    blind: &[BlindSpell],
    due: DateTime<Utc>,
    now: DateTime<Utc>,
    offset: chrono::FixedOffset,
) -> Option<String> {
    let why = blind.iter().rev().find(|b| b.from <= due && b.to >= due)?;
    Some(format!(
        "late: due {}, sent {}: {}",
        fleetdash_model::moment(due, now, offset),
        fleetdash_model::moment(now, now, offset),
        why.why
    ))
}

#[cfg(test)]
mod tests;

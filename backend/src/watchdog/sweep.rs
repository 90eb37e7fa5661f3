//! The work queue's watchdog (spec §3.5), a run-time loop beside the cadences: a sweep of the
//! queue every `stuck.sweep_seconds`, and at once when the queue's collector calls for one (at
//! the moment a task's verdict turns, [`crate::queue::SweepCall`]: a task reaching the no-reply
//! limit is orphaned then, not up to a sweep later); ONE escalation line per orphaned task,
//! written by the escalation log the live-task watchdog already uses
//! (`state_dir/escalations.jsonl`). Worker died is recorded by the sweep and escalates nothing:
//! only the 300 s condition fires the follow-up loop. An open row that cannot be read is passed
//! by and logged at each tick; the sweep goes on with the others (the dashboard shows it red).

use std::sync::Arc;
use std::time::Duration;

use fleetdash_model::{Asc, LiveTask, Probe};
use tokio_util::sync::CancellationToken;

use crate::clock::{Clock, Clocked};
use crate::config::Rule;
use crate::queue::{SweepCalls, SweepEvent, WorkQueue};
use crate::redact::RedactionGate;
use crate::write::escalations::Escalations;

/// A sweep's caller, told when the sweep is done (when dropped, whatever the sweep came to).
struct Answer(Option<tokio::sync::oneshot::Sender<()>>);

impl Drop for Answer {
    fn drop(&mut self) {
        if let Some(answer) = self.0.take() {
            let _ = answer.send(());
        }
    }
}

/// Writes one escalation line for each orphaned task among `events`; returns how many.
pub fn escalate(
    events: &[SweepEvent],
    log: &Escalations,
    no_reply: &Rule,
    gate: &RedactionGate,
    at: &Clocked,
) -> anyhow::Result<usize> {
    let now = at.wall();
    let mut written = 0;
    for event in events {
        let SweepEvent::Orphaned { task } = event else {
            continue;
        };
        let line = LiveTask {
            id: task.id.clone(),
            agent: task.owner.clone().unwrap_or_default(),
            state: Probe::Value(task.state.as_str().to_string()),
            age_s: crate::queue::judge::quiet_age(task, at),
            stuck: true,
            status: Asc::TIMEOUT,
            reason: task.status_message.clone(),
            checked_at: now,
            stale: false,
        };
        log.append(&line, no_reply, gate, at)?;
        written += 1;
    }
    Ok(written)
}

/// Sweeps `queue` every `rules.sweep_every`, and at each of `calls`, until `shutdown`,
/// escalating each orphaned task once; a call is answered once its sweep and escalations are
/// done. A failed sweep or escalation is logged and tried again at the next tick.
pub async fn run(
    queue: Arc<WorkQueue>,
    rules: crate::config::Rules,
    log: Escalations,
    gate: RedactionGate,
    clock: Clock,
    mut calls: SweepCalls,
    shutdown: CancellationToken,
) {
    let log = Arc::new(log);
    let gate = Arc::new(gate);
    let mut tick = tokio::time::interval(Duration::from_secs(rules.sweep_every.seconds));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut calling = true;
    loop {
        // A call is answered when this is dropped: at the end of this turn of the loop, once
        // the sweep and its escalations are done (or failed), and the caller reads then.
        let _answer = tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tick.tick() => None,
            call = calls.next(), if calling => match call {
                Some(answer) => Some(Answer(Some(answer))),
                None => {
                    calling = false;
                    continue;
                }
            },
        };
        let at = clock.clocked();
        let events = match queue.sweep_at(at.clone()).await {
            Ok(events) => events,
            Err(e) => {
                tracing::error!("work queue sweep failed: {e}");
                continue;
            }
        };
        for event in &events {
            match event {
                SweepEvent::Orphaned { task } => {
                    tracing::warn!(task = %task.id, "work queue task orphaned: no reply produced")
                }
                SweepEvent::WorkerDied { task } => {
                    tracing::warn!(task = %task.id, "work queue task: the worker died")
                }
                // Once per tick while it stays so: the sweep went on with the others.
                SweepEvent::Unreadable(bad) => tracing::warn!(
                    task = %bad.id,
                    "work queue row not swept, it cannot be read: {}",
                    bad.reason
                ),
            }
        }
        let (log, gate, rule) = (log.clone(), gate.clone(), rules.no_reply.clone());
        let written =
            tokio::task::spawn_blocking(move || escalate(&events, &log, &rule, &gate, &at)).await;
        match written {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => tracing::error!("cannot write the work queue's escalations: {e:#}"),
            Err(e) => tracing::error!("the escalation writer failed: {e}"),
        }
    }
}

//! `fleetdash run`'s loops: every collector on its own cadence, one writer, graceful shutdown;
//! quick re-probes ([`reprobe`]); and the work queue's sweep ([`sweep`]).
//!
//! Each collector loops in its own task (a slow section never delays another) and sends what it
//! found to a single writer task, which settles (registry, escalations, projections) and merges
//! one collection at a time, off the async runtime; after each write, alerting takes its pass.
//! The writer then answers the loop whether that reading left a red of its section waiting for
//! its confirmation: if so, the loop reads again after the rules' re-probe spacing instead of
//! its cadence, a bounded number of times ([`reprobe::Schedule`]).
//! On shutdown the loops stop at once (an unfinished pass is simply dropped: nothing was
//! written for it) and the writer finishes the updates already handed to it.
//!
//! Under systemd ([`notify`]): `READY=1` after the first snapshot is written, `WATCHDOG=1`
//! after every good write.

pub mod notify;
pub mod reprobe;
pub mod sweep;

use std::sync::Arc;

use fleetdash_model::RulesView;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::alerting::run::Alerts;
use crate::clock::Clock;
use crate::collect::{self, Collection, Collector, SectionName};
use crate::metrics::Live;
use crate::otel::Otel;
use crate::write::Writer;
use notify::Notifier;
use reprobe::{Reading, Reprobes, Schedule};

/// Who hears of each pass: the alert engine after each write, the metrics of each collection
/// and write, OpenTelemetry each collection's spans, systemd (READY after the first write,
/// WATCHDOG after each good one).
pub struct Listeners<'a> {
    pub alerts: Option<Arc<Alerts>>,
    pub metrics: Option<Live>,
    pub otel: Option<Arc<Otel>>,
    pub notifier: &'a Notifier,
}

/// A collection handed to the writer, and where the writer answers whether it left a red of its
/// section waiting for its confirmation (dropped unanswered: no).
struct Handed {
    collection: Collection,
    unconfirmed: oneshot::Sender<bool>,
}

pub async fn run(
    collectors: Vec<Box<dyn Collector>>,
    clock: Clock,
    writer: Arc<Writer>,
    configured: Vec<SectionName>,
    rules: RulesView,
    listeners: Listeners<'_>,
    shutdown: CancellationToken,
) {
    let Listeners {
        alerts,
        metrics,
        otel,
        notifier,
    } = listeners;
    if collectors.is_empty() {
        // Nothing will ever be written: ready at once, and alive for as long as it runs.
        notifier.ready();
        if let Some(interval) = notifier.watchdog_interval() {
            loop {
                notifier.watchdog();
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    _ = tokio::time::sleep(interval / 2) => {}
                }
            }
        }
        return;
    }
    let mut ready = false;
    // Re-probes confirm a red before it pages: without alerting, nothing waits for one.
    let reprobes = alerts
        .as_ref()
        .map_or(Reprobes::NONE, |a| Reprobes::of(a.rules()));
    let (tx, mut rx) = mpsc::channel::<Handed>(collectors.len().max(1) * 2);
    let mut loops = Vec::with_capacity(collectors.len());
    for collector in collectors {
        let tx = tx.clone();
        let shutdown = shutdown.clone();
        let metrics = metrics.clone();
        let otel = otel.clone();
        let clock = clock.clone();
        loops.push(tokio::spawn(async move {
            let mut schedule = Schedule::new(collector.cadence(), reprobes);
            let mut reading = Reading::Regular;
            loop {
                let (collection, trace) = tokio::select! {
                    _ = shutdown.cancelled() => break,
                    traced = collect::run_traced(collector.as_ref(), &clock) => traced,
                };
                let ended = tokio::time::Instant::now();
                schedule.ended(reading, ended);
                let section = collection.section();
                let took_ms = collection.duration.as_millis() as u64;
                match reading {
                    Reading::Regular => tracing::info!(%section, took_ms, "collected"),
                    Reading::Reprobe(n) => {
                        tracing::info!(%section, took_ms, reprobe = n, "collected (re-probe)")
                    }
                }
                if let Some(metrics) = &metrics {
                    metrics.observe(&collection);
                }
                // Spans are queued, never sent from here: a pass waits on no exporter.
                if let Some(otel) = &otel {
                    otel.observe(&collection, &trace);
                }
                let (answer, answered) = oneshot::channel();
                let handed = Handed {
                    collection,
                    unconfirmed: answer,
                };
                if tx.send(handed).await.is_err() {
                    break;
                }
                // The writer answers once the engine has counted this reading; a writer slower
                // than the cadence delays no regular pass.
                let unconfirmed = tokio::select! {
                    _ = shutdown.cancelled() => break,
                    answer = answered => answer.unwrap_or(false),
                    _ = tokio::time::sleep_until(schedule.regular_at(ended)) => false,
                };
                let next = schedule.next(ended, unconfirmed);
                if let Reading::Reprobe(n) = next.reading {
                    tracing::info!(
                        %section,
                        reprobe = n,
                        in_ms = next.at.saturating_duration_since(ended).as_millis() as u64,
                        "a red not yet confirmed: reading the section again"
                    );
                }
                tokio::select! {
                    _ = shutdown.cancelled() => break,
                    _ = collector.wait_next(next.at) => {}
                }
                reading = next.reading;
            }
        }));
    }
    drop(tx);
    while let Some(Handed {
        collection,
        unconfirmed,
    }) = rx.recv().await
    {
        let writer = writer.clone();
        let configured = configured.clone();
        let rules = rules.clone();
        let section = collection.section();
        let reading = collection.findings.reading();
        let written =
            tokio::task::spawn_blocking(move || writer.write(vec![collection], &configured, rules))
                .await;
        if let Some(metrics) = &metrics {
            metrics.written(matches!(written, Ok(Ok(_))));
        }
        match written {
            Ok(Ok(snapshot)) => {
                tracing::debug!(%section, "snapshot written");
                // status.json exists from the first good write on: that is ready.
                if !ready {
                    ready = true;
                    notifier.ready();
                }
                notifier.watchdog();
                if let Some(alerts) = &alerts {
                    let waiting = alerts.after_write(&snapshot).await;
                    // Only the reading this collection renewed: a re-read of another section
                    // would confirm nothing.
                    let _ = unconfirmed.send(reading.is_some_and(|r| waiting.contains(&r)));
                }
            }
            // The previous snapshot stays whole; the staleness banner will say so in time.
            Ok(Err(e)) => tracing::error!(%section, "cannot write the snapshot: {e:#}"),
            Err(e) => tracing::error!(%section, "snapshot writer failed: {e}"),
        }
    }
    // Every loop has ended (its sender is gone); wait until each has dropped its collector too,
    // so what they hold (the work queue's handle) is free when `run` closes it.
    for handle in loops {
        let _ = handle.await;
    }
}

/// Cancels `token` on SIGTERM or ctrl-c.
///
/// The SIGTERM handler is installed before this returns, and an `Err` says it could not be:
/// the caller says so loudly. Ctrl-c still works then, and SIGTERM keeps its default action,
/// an immediate exit without finishing the write in progress (the writes being atomic, that
/// loses the pass, never a file).
pub fn cancel_on_signal(token: CancellationToken) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        cancel_on(token, tokio::signal::unix::SignalKind::terminate())
    }
    #[cfg(not(unix))]
    {
        tokio::spawn(cancel_after(None, token));
        Ok(())
    }
}

/// [`cancel_on_signal`] for any signal `kind` besides ctrl-c.
#[cfg(unix)]
fn cancel_on(
    token: CancellationToken,
    kind: tokio::signal::unix::SignalKind,
) -> std::io::Result<()> {
    match tokio::signal::unix::signal(kind) {
        Ok(signal) => {
            tokio::spawn(cancel_after(Some(signal), token));
            Ok(())
        }
        Err(e) => {
            tokio::spawn(cancel_after(None, token));
            Err(e)
        }
    }
}

#[cfg(unix)]
type Signal = tokio::signal::unix::Signal;
#[cfg(not(unix))]
type Signal = std::convert::Infallible;

/// Waits for ctrl-c or `signal`, then cancels `token`.
async fn cancel_after(signal: Option<Signal>, token: CancellationToken) {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::error!("cannot listen for ctrl-c: {e}");
            std::future::pending::<()>().await;
        }
    };
    match signal {
        #[cfg(unix)]
        Some(mut signal) => {
            tokio::select! {
                _ = ctrl_c => {}
                _ = signal.recv() => {}
            }
        }
        #[cfg(not(unix))]
        Some(never) => match never {},
        None => ctrl_c.await,
    }
    tracing::info!("shutting down");
    token.cancel();
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use rustix::process::{Signal, getpid, kill_process};
    use tokio::signal::unix::SignalKind;

    /// A handler that cannot be installed (SIGKILL stands in for SIGTERM: the kernel never lets
    /// it be caught) is an error for the caller to say, not a panic in a background task; and
    /// nothing is cancelled by it.
    #[tokio::test]
    async fn a_handler_that_cannot_install_is_an_error_for_the_caller() {
        let token = CancellationToken::new();
        let outcome = cancel_on(token.clone(), SignalKind::from_raw(Signal::KILL.as_raw()));
        let error = outcome.expect_err("SIGKILL cannot be handled");
        assert!(!error.to_string().is_empty());
        tokio::task::yield_now().await;
        assert!(!token.is_cancelled());
    }

    /// Installed, the signal cancels the token (SIGUSR1 stands in for SIGTERM, which would
    /// stop the other tests).
    #[tokio::test]
    async fn the_signal_cancels_the_token_once_installed() {
        let token = CancellationToken::new();
        cancel_on(token.clone(), SignalKind::user_defined1()).expect("SIGUSR1 installs");
        kill_process(getpid(), Signal::USR1).unwrap();
        tokio::time::timeout(std::time::Duration::from_secs(60), token.cancelled())
            .await
            .expect("the token is cancelled");
    }
}

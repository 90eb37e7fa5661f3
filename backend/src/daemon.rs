//! The daemon: a running fleetdash wired whole. [`run_until`] opens what `fleetdash run` shares
//! (the work queue's one writer, the alert engine and outbox, the snapshot writer), starts the
//! faces (the report intake, the queue's sweep, alert delivery, `/metrics`, OpenTelemetry
//! export) and the collectors' cadences, and on shutdown stops them in order, closing the queue
//! last. `fleetdash run` and the demo both run it; neither wires a part of its own.

use std::sync::Arc;

use anyhow::Context;
use tokio_util::sync::CancellationToken;

use crate::clock::Clock;
use crate::collect;
use crate::config::{Config, Rules};
use crate::metrics;
use crate::otel::Otel;
use crate::queue::{QueueRules, WorkQueue};
use crate::watchdog;
use crate::watchdog::notify::Notifier;
use crate::write::Writer;
use crate::write::escalations::Escalations;

/// The long-running collector, until `shutdown` is cancelled.
///
/// With `[work_queue]` set, the queue is opened once: its one writer serves the intake, the
/// watchdog and the queue's collector alike (one writer per file).
pub async fn run_until(
    config: &Config,
    rules: &Rules,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let clock = Clock::system(rules.clock.settings());
    run_notifying(config, rules, &Notifier::none(), &clock, shutdown).await
}

/// The writer of `run` and `collect`: the snapshot and every file written with it, the page's
/// first HTML included (issue 46), judged by `clock`.
pub fn writer(config: &Config, rules: &Rules, clock: &Clock) -> anyhow::Result<Writer> {
    Ok(Writer::new(config, rules, config.gate())?
        .with_clock(clock.clone())
        .with_first_html(crate::page::first_html_shell()?))
}

/// [`run_until`], telling systemd through `notifier` when the first snapshot is written and
/// after every good write (`fleetdash run` under a `Type=notify` unit). Everything judges by
/// `clock`: the collectors, the writer, the queue's sweep and the intake's queue.
pub async fn run_notifying(
    config: &Config,
    rules: &Rules,
    notifier: &Notifier,
    clock: &Clock,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let alerts = crate::alerting::run::Alerts::from_config(config, rules, config.gate(), clock)
        .await?
        .map(Arc::new);
    let mut writer = writer(config, rules, clock)?;
    if let Some(alerts) = &alerts {
        writer = writer.with_alerts(alerts.look());
    }
    let writer = Arc::new(writer);
    let queue = open_shared_queue(config, rules, clock).await?;
    // The queue's collector has the sweep run at a task's turning moment, then reads.
    let (sweep_call, sweep_calls) = match &queue {
        Some(_) => {
            let (call, calls) = crate::queue::sweep_calls();
            (Some(call), Some(calls))
        }
        None => (None, None),
    };
    let collectors = collect::from_config_sharing(config, rules, None, queue.clone(), sweep_call);
    if collectors.is_empty() {
        tracing::warn!(config = %config.path.display(), "nothing to collect: the config lists no agents");
    }
    let configured = collect::configured_sections(config);
    // What this run knows as it runs, counted from here on (docs/metrics.md).
    let live = metrics::Live::new(Arc::new(metrics::Names::of(config)));
    let metrics = Arc::new(metrics::Source::with_live(config, live.clone()));
    if let Some(alerts) = &alerts {
        alerts.observe_deliveries(live.delivery_observer());
    }
    let metrics_listener = metrics::start(config, metrics.clone(), shutdown.clone()).await?;
    // `[otel]`: each pass's spans; a token that cannot be read means no export, said once.
    let otel = Otel::start_observed(config, Some(live.span_observer())).unwrap_or_else(|e| {
        tracing::error!("{e:#}: no OpenTelemetry export in this run");
        None
    });
    // Any good write feeds systemd's watchdog: when even the fastest section passes less often
    // than the watchdog allows, systemd would restart a healthy collector between passes.
    if let (Some(limit), Some(fastest)) = (
        notifier.watchdog_interval(),
        collectors.iter().map(|c| c.cadence()).min(),
    ) && fastest >= limit
    {
        tracing::warn!(
            "the unit's WatchdogSec ({}) is not longer than the fastest cadence ({}): systemd \
             will restart the collector between passes; raise WatchdogSec with a drop-in \
             (systemctl edit fleetdash) or shorten a cadence in {}",
            humantime::format_duration(limit),
            humantime::format_duration(fastest),
            config.path.display()
        );
    }
    let intake = match &queue {
        Some(queue) => {
            crate::intake::start(
                config,
                rules,
                queue.clone(),
                Some(metrics),
                shutdown.clone(),
            )
            .await?
        }
        None => None,
    };
    let sweeps = queue.clone().zip(sweep_calls).map(|(queue, calls)| {
        tokio::spawn(crate::watchdog::sweep::run(
            queue,
            rules.clone(),
            Escalations::new(&config.state_dir, &rules.state),
            config.gate(),
            clock.clone(),
            calls,
            shutdown.clone(),
        ))
    });
    let delivery = alerts
        .as_ref()
        .and_then(|a| a.spawn_delivery(shutdown.clone()));
    // The report of each period at the operator's hour (issue 45), through the same outbox.
    let ensured = {
        let config = config.clone();
        tokio::task::spawn_blocking(move || crate::report::page::ensure(&config)).await
    };
    if !matches!(ensured, Ok(Ok(()))) {
        tracing::warn!("no placeholder for the last report: {ensured:?}");
    }
    let reporter = crate::report::job::Reporter::of(
        Arc::new(config.clone()),
        Arc::new(rules.clone()),
        alerts.as_ref().and_then(|a| a.delivery()),
        clock.clone(),
    )
    .map(|r| r.spawn(shutdown.clone()));
    tracing::info!(file = %writer.path().display(), "collecting");
    watchdog::run(
        collectors,
        clock.clone(),
        writer,
        configured,
        rules.view(),
        watchdog::Listeners {
            alerts,
            metrics: Some(live),
            otel: otel.clone(),
            notifier,
        },
        shutdown,
    )
    .await;
    if let Some(otel) = otel {
        otel.shutdown().await;
    }
    if let Some(delivery) = delivery {
        delivery.await.context("the alert delivery loop stopped")?;
    }
    if let Some(reporter) = reporter {
        reporter.await.context("the reporter stopped")?;
    }
    if let Some(intake) = intake {
        intake.task.await.context("the intake stopped")??;
    }
    if let Some(listener) = metrics_listener {
        listener
            .task
            .await
            .context("the metrics listener stopped")??;
    }
    if let Some(sweeps) = sweeps {
        sweeps.await.context("the work queue's watchdog stopped")?;
    }
    // Everything that held the queue has stopped: its writer finishes what it was handed.
    if let Some(queue) = queue {
        match Arc::try_unwrap(queue) {
            Ok(queue) => queue.close().await?,
            Err(_) => tracing::warn!("the work queue is still in use at shutdown; not closed"),
        }
    }
    Ok(())
}

/// The work queue `run` shares, when `[work_queue]` is set. A queue that cannot be opened
/// (corrupt, another program's) stops `run` when the intake needs it; otherwise `run` goes on
/// without a watchdog, and the queue's collector says what is wrong in `tasks.queue` at every
/// pass (it reads the file read-only then).
async fn open_shared_queue(
    config: &Config,
    rules: &Rules,
    clock: &Clock,
) -> anyhow::Result<Option<Arc<WorkQueue>>> {
    let Some(work_queue) = &config.work_queue else {
        return Ok(None);
    };
    match WorkQueue::open(&work_queue.db, QueueRules::of(rules)).await {
        Ok(queue) => Ok(Some(Arc::new(queue.with_clock(clock.clone())))),
        Err(e) if config.intake.listen.is_some() => Err(anyhow::Error::msg(e)),
        Err(e) => {
            tracing::error!("{e}: no work queue watchdog in this run");
            Ok(None)
        }
    }
}

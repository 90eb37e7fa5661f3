//! `fleetdash run`: every collector on its own cadence, one writer, graceful shutdown.
//!
//! Each collector loops in its own task (a slow section never delays another) and sends what it
//! found to a single writer task, which settles (registry, escalations, projections) and merges
//! one collection at a time, off the async runtime.
//! On shutdown the loops stop at once (an unfinished pass is simply dropped: nothing was
//! written for it) and the writer finishes the updates already handed to it.

use std::sync::Arc;

use fleetdash_model::RulesView;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::collect::{self, Collector, SectionName};
use crate::write::Writer;

pub async fn run(
    collectors: Vec<Box<dyn Collector>>,
    writer: Arc<Writer>,
    configured: Vec<SectionName>,
    rules: RulesView,
    shutdown: CancellationToken,
) {
    let (tx, mut rx) = mpsc::channel(collectors.len().max(1) * 2);
    for collector in collectors {
        let tx = tx.clone();
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            let cadence = collector.cadence();
            loop {
                let collection = tokio::select! {
                    _ = shutdown.cancelled() => break,
                    collection = collect::run_once(collector.as_ref()) => collection,
                };
                tracing::info!(section = %collection.section(), took_ms = collection.duration.as_millis() as u64, "collected");
                if tx.send(collection).await.is_err() {
                    break;
                }
                tokio::select! {
                    _ = shutdown.cancelled() => break,
                    _ = tokio::time::sleep(cadence) => {}
                }
            }
        });
    }
    drop(tx);
    while let Some(collection) = rx.recv().await {
        let writer = writer.clone();
        let configured = configured.clone();
        let rules = rules.clone();
        let section = collection.section();
        let written =
            tokio::task::spawn_blocking(move || writer.write(vec![collection], &configured, rules))
                .await;
        match written {
            Ok(Ok(_)) => tracing::debug!(%section, "snapshot written"),
            // The previous snapshot stays whole; the staleness banner will say so in time.
            Ok(Err(e)) => tracing::error!(%section, "cannot write the snapshot: {e:#}"),
            Err(e) => tracing::error!(%section, "snapshot writer failed: {e}"),
        }
    }
}

/// Cancels `token` on SIGTERM or ctrl-c.
pub fn cancel_on_signal(token: CancellationToken) {
    tokio::spawn(async move {
        let ctrl_c = tokio::signal::ctrl_c();
        #[cfg(unix)]
        {
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                    .expect("SIGTERM handler installs");
            tokio::select! {
                _ = ctrl_c => {}
                _ = term.recv() => {}
            }
        }
        #[cfg(not(unix))]
        let _ = ctrl_c.await;
        tracing::info!("shutting down");
        token.cancel();
    });
}

//! Alerting in `fleetdash run`: after each snapshot write, the engine's pass over the new
//! snapshot's elements, its alerts put in the outbox, then its state saved (a crash in between
//! replays the pass with the same alert ids, which the outbox drops); the delivery loop; and the
//! dead man's switch, pinged after a good write at most every [`DEADMAN_EVERY`].
//!
//! An outbox that cannot be opened even afresh (a corrupt one is moved aside and replaced by
//! [`Outbox::open`](super::outbox::Outbox::open)) costs alert delivery only, never the run:
//! collection and snapshots go on, the log says what to do, and each write's `alerts` says every
//! channel is failing, with the outbox's path and error.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use chrono::Utc;
use fleetdash_model::Snapshot;
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use super::deadman::Deadman;
use super::engine::Alerting;
use super::look::{Look, Unusable};
use super::outbox::{Delivery, OUTBOX_FILE};
use crate::config::{Config, Rules};
use crate::redact::RedactionGate;
use crate::write::status_json::AlertsLook;
use crate::write::transitions;

/// The dead man's switch is pinged at most this often (writes come every few seconds; a check
/// service wants to hear once in its period, not at every write).
pub const DEADMAN_EVERY: Duration = Duration::from_secs(60);
/// How often the delivery loop looks for due items (a retry's backoff starts at 10 s).
pub const DELIVERY_TICK: Duration = Duration::from_secs(2);

/// The alerting of one `fleetdash run`.
pub struct Alerts {
    alerting: Arc<Alerting>,
    /// `Err` when the outbox could not be opened: nothing is delivered by this run.
    delivery: Result<Arc<Delivery>, Unusable>,
    /// The configured channels' names (said failing when the outbox is unusable).
    channels: Vec<String>,
    deadman: Option<Arc<Deadman>>,
    pinged_at: Mutex<Option<tokio::time::Instant>>,
}

impl Alerts {
    /// Alerting as the config asks: `None` when it names no channel and no dead man's switch
    /// (nothing to deliver to; the page still shows every band). Never fails: an outbox that
    /// cannot be opened is logged at error level and said in every write's `alerts`.
    pub async fn from_config(
        config: &Config,
        rules: &Rules,
        gate: RedactionGate,
    ) -> Result<Option<Alerts>> {
        if config.alerts.channels.is_empty() && config.alerts.deadman_url.is_none() {
            return Ok(None);
        }
        let delivery = match Delivery::from_config(config, rules, gate.clone()).await {
            Ok(delivery) => Ok(Arc::new(delivery)),
            Err(e) => {
                let path = config.state_dir.join(OUTBOX_FILE);
                tracing::error!(
                    file = %path.display(),
                    "alert outbox unusable, so this run delivers no alert (collection and \
                     snapshots go on; the page says every channel is failing): {e:#}; make \
                     {} writable by fleetdash, or move what is at that path away, then restart",
                    config.state_dir.display()
                );
                Err(Unusable {
                    reason: format!("outbox unusable: {}: {}", path.display(), e.root_cause()),
                    since: Utc::now(),
                })
            }
        };
        let channels = match &delivery {
            Ok(delivery) => delivery.channel_names(),
            Err(_) => super::provider::build(config)
                .iter()
                .map(|p| p.name().to_string())
                .collect(),
        };
        Ok(Some(Alerts {
            alerting: Arc::new(Alerting::new(config, rules, gate)),
            delivery,
            channels,
            deadman: Deadman::from_config(config).map(Arc::new),
            pinged_at: Mutex::new(None),
        }))
    }

    /// After a snapshot was written: the engine's pass, its alerts into the outbox, its state
    /// saved; then the dead man's switch when due. Never fails the write: what goes wrong is
    /// logged.
    pub async fn after_write(&self, snapshot: &Snapshot) {
        if let Ok(delivery) = &self.delivery {
            self.decide(delivery, snapshot).await;
        }
        if let Some(deadman) = &self.deadman {
            let mut pinged_at = self.pinged_at.lock().await;
            if pinged_at.is_none_or(|at| at.elapsed() >= DEADMAN_EVERY) {
                *pinged_at = Some(tokio::time::Instant::now());
                deadman.ping(Utc::now()).await;
            }
        }
    }

    /// The engine's pass, its alerts into the outbox, its state saved. Not run without an
    /// outbox: a state saved with its alerts nowhere would never send them; unsaved, the
    /// engine raises them once a later run has an outbox.
    async fn decide(&self, delivery: &Delivery, snapshot: &Snapshot) {
        let now = snapshot.generated_at;
        let elements = transitions::elements(snapshot);
        let readings = super::engine::readings(snapshot);
        let alerting = self.alerting.clone();
        let decision =
            match tokio::task::spawn_blocking(move || alerting.decide(&elements, &readings, now))
                .await
            {
                Ok(decision) => decision,
                Err(e) => {
                    tracing::error!("alert engine pass failed: {e}");
                    return;
                }
            };
        let mut kept = true;
        for alert in decision.alerts.clone() {
            if let Err(e) = delivery.enqueue(alert, now).await {
                tracing::error!("alert not put in the outbox (the pass is replayed): {e:#}");
                kept = false;
            }
        }
        // Saved only once every alert is safe in the outbox: otherwise the next pass replays it.
        if kept {
            let alerting = self.alerting.clone();
            let _ = tokio::task::spawn_blocking(move || alerting.commit(&decision)).await;
        }
    }

    /// What each snapshot write asks alerting (held elements, channels' health).
    pub fn look(&self) -> Arc<dyn AlertsLook> {
        Arc::new(Look {
            alerting: self.alerting.clone(),
            outbox: match &self.delivery {
                Ok(delivery) => Ok(delivery.outbox().clone()),
                Err(unusable) => Err(unusable.clone()),
            },
            channels: self.channels.clone(),
            deadman: self.deadman.clone(),
        })
    }

    /// The delivery loop, until `stop`; none without an outbox.
    pub fn spawn_delivery(&self, stop: CancellationToken) -> Option<tokio::task::JoinHandle<()>> {
        let delivery = self.delivery.as_ref().ok()?;
        Some(delivery.clone().spawn(DELIVERY_TICK, stop))
    }
}

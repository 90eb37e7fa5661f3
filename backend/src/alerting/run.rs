//! Alerting in `fleetdash run`: after each snapshot write, the engine's pass over the new
//! snapshot's elements, its alerts put in the outbox, then its state saved (a crash in between
//! replays the pass with the same alert ids, which the outbox drops); the delivery loop; and the
//! dead man's switch, pinged after a good write at most every [`DEADMAN_EVERY`]; and what is
//! firing sent again to each alertmanager channel every `alertmanager.resend_seconds`. Each
//! write's pass says which sections hold a red waiting for its confirmation, for the watchdog
//! to read again soon (issue 43, `watchdog::reprobe`).
//!
//! An outbox that cannot be opened even afresh (a corrupt one is moved aside and replaced by
//! [`Outbox::open`](super::outbox::Outbox::open)) costs alert delivery only, never the run:
//! collection and snapshots go on, the log says what to do, and each write's `alerts` says every
//! channel is failing, with the outbox's path and error.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;
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
use super::provider::alertmanager::Alertmanager;
use super::{Alert, provider};
use crate::clock::Clock;
use crate::config::{AlertRules, Config, Rules};
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
    /// The alertmanager channels, told what is firing every `resend_every`.
    alertmanagers: Vec<Arc<Alertmanager>>,
    resend_every: Duration,
    resent_at: Mutex<Option<tokio::time::Instant>>,
    /// Set at start and after a pass whose alerts or state were not all saved: the engine's
    /// state is then mended from the outbox before the next pass ([`Alerting::reconcile`]).
    reconcile_due: std::sync::atomic::AtomicBool,
    /// The clock the engine's and the delivery's waits are observed on.
    clock: Clock,
    /// The rules' alert groups (the re-probes' spacing and count among them).
    rules: AlertRules,
}

impl Alerts {
    /// Alerting as the config asks: `None` when it names no channel and no dead man's switch
    /// (nothing to deliver to; the page still shows every band). Never fails: an outbox that
    /// cannot be opened is logged at error level and said in every write's `alerts`.
    pub async fn from_config(
        config: &Config,
        rules: &Rules,
        gate: RedactionGate,
        clock: &Clock,
    ) -> Result<Option<Alerts>> {
        if config.alerts.channels.is_empty() && config.alerts.deadman_url.is_none() {
            return Ok(None);
        }
        let built = provider::build_clocked(config, &rules.alerts, Some(clock));
        let names: Vec<String> = built.all.iter().map(|p| p.name().to_string()).collect();
        let delivery = match Delivery::from_config(config, rules, gate.clone(), built.all).await {
            Ok(delivery) => Ok(Arc::new(delivery.with_clock(clock.clone()))),
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
        Ok(Some(Alerts {
            alerting: Arc::new(Alerting::new(config, rules, gate)),
            delivery,
            channels: names,
            deadman: Deadman::from_config(config).map(Arc::new),
            pinged_at: Mutex::new(None),
            alertmanagers: built.alertmanagers,
            resend_every: Duration::from_secs(rules.alerts.am_resend.seconds),
            resent_at: Mutex::new(None),
            reconcile_due: std::sync::atomic::AtomicBool::new(true),
            clock: clock.clone(),
            rules: rules.alerts.clone(),
        }))
    }

    /// The rules' alert groups this alerting runs on.
    pub fn rules(&self) -> &AlertRules {
        &self.rules
    }

    /// After a snapshot was written: the engine's pass, its alerts into the outbox, its state
    /// saved; then the dead man's switch when due. Never fails the write: what goes wrong is
    /// logged. Returns the sections holding a red that waits for its confirmation
    /// ([`Decision::unconfirmed`](super::engine::Decision::unconfirmed)): none when no pass
    /// ran (no outbox, a failed pass), as nothing could page.
    pub async fn after_write(&self, snapshot: &Snapshot) -> BTreeSet<String> {
        let unconfirmed = match &self.delivery {
            Ok(delivery) => self.decide(delivery, snapshot).await,
            Err(_) => BTreeSet::new(),
        };
        if let Some(deadman) = &self.deadman {
            let mut pinged_at = self.pinged_at.lock().await;
            if pinged_at.is_none_or(|at| at.elapsed() >= DEADMAN_EVERY) {
                *pinged_at = Some(tokio::time::Instant::now());
                deadman.ping(Utc::now()).await;
            }
        }
        unconfirmed
    }

    /// The engine's pass, its alerts into the outbox, its state saved; the sections holding a
    /// red that waits for its confirmation. Not run without an outbox: a state saved with its
    /// alerts nowhere would never send them; unsaved, the engine raises them once a later run
    /// has an outbox.
    async fn decide(&self, delivery: &Delivery, snapshot: &Snapshot) -> BTreeSet<String> {
        // The snapshot is judged at its own moment (its writer read the clock just before).
        let at = self.clock.clocked().with_wall(snapshot.generated_at);
        let now = at.wall();
        if self.reconcile_due.swap(false, Ordering::SeqCst) {
            let outbox = delivery.outbox().clone();
            let alerting = self.alerting.clone();
            let mended = tokio::task::spawn_blocking(move || {
                outbox
                    .last_verdicts()
                    .map(|sent| alerting.reconcile(&sent, now))
            })
            .await;
            if !matches!(mended, Ok(Ok(_))) {
                tracing::warn!("alert engine state not checked against the outbox; next pass");
                self.reconcile_due.store(true, Ordering::SeqCst);
            }
        }
        let elements = transitions::elements(snapshot);
        let readings = super::engine::readings(snapshot);
        let ended = super::engine::gone::ended(snapshot);
        let alerting = self.alerting.clone();
        let decision = match tokio::task::spawn_blocking(move || {
            alerting.decide_clocked(&elements, &readings, &ended, &at)
        })
        .await
        {
            Ok(decision) => decision,
            Err(e) => {
                tracing::error!("alert engine pass failed: {e}");
                return BTreeSet::new();
            }
        };
        let firing = decision.firing.clone();
        let unconfirmed = decision.unconfirmed.clone();
        // The pass's alerts together: a storm is one group in the outbox.
        let kept = match delivery.enqueue_all(decision.alerts.clone(), now).await {
            Ok(_) => true,
            Err(e) => {
                tracing::error!("alerts not put in the outbox (the pass is replayed): {e:#}");
                false
            }
        };
        // Saved only once every alert is safe in the outbox: otherwise the next pass replays it.
        let saved = kept && {
            let alerting = self.alerting.clone();
            matches!(
                tokio::task::spawn_blocking(move || alerting.commit(&decision)).await,
                Ok(true)
            )
        };
        if !saved {
            self.reconcile_due.store(true, Ordering::SeqCst);
        }
        if kept {
            self.resend_when_due(firing).await;
        }
        unconfirmed
    }

    /// What is firing, sent again to each alertmanager channel when `resend_every` has passed
    /// since the last time (at the first pass of a run: a restart renews what Alertmanager
    /// holds). Off the write's path: a hanging Alertmanager delays no snapshot. A failure is
    /// logged; the next resend tries again (Alertmanager keeps each alert until its `endsAt`).
    async fn resend_when_due(&self, firing: Vec<Alert>) {
        if self.alertmanagers.is_empty() {
            return;
        }
        let mut resent_at = self.resent_at.lock().await;
        if resent_at.is_some_and(|at| at.elapsed() < self.resend_every) {
            return;
        }
        *resent_at = Some(tokio::time::Instant::now());
        let firing = Arc::new(firing);
        for am in &self.alertmanagers {
            let (am, firing) = (am.clone(), firing.clone());
            tokio::spawn(async move {
                if let Err(e) = am.resend(&firing).await {
                    tracing::warn!(
                        channel = %super::provider::Provider::name(am.as_ref()),
                        "what is firing not sent again to alertmanager (next try in \
                         alertmanager.resend_seconds): {}",
                        e.reason
                    );
                }
            });
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

    /// Tells `observer` of each send of the delivery loop (none without an outbox).
    pub fn observe_deliveries(&self, observer: crate::alerting::outbox::delivery::SendObserver) {
        if let Ok(delivery) = &self.delivery {
            delivery.observe(observer);
        }
    }

    /// The delivery loop's handle, for what is not an engine's alert (a report); none without
    /// an outbox.
    pub fn delivery(&self) -> Option<Arc<Delivery>> {
        self.delivery.as_ref().ok().cloned()
    }

    /// The delivery loop, until `stop`; none without an outbox.
    pub fn spawn_delivery(&self, stop: CancellationToken) -> Option<tokio::task::JoinHandle<()>> {
        let delivery = self.delivery.as_ref().ok()?;
        Some(delivery.clone().spawn(DELIVERY_TICK, stop))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alerting::AlertEvent;
    use chrono::{DateTime, Duration, TimeZone};
    use fleetdash_model::SectionMeta;

    fn t(minutes: i64) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 3, 29, 0, 30, 0).unwrap() + Duration::minutes(minutes)
    }

    /// A snapshot at `now` whose agents section was read then, with one agent up or down.
    fn snap(now: DateTime<Utc>, up: bool) -> Snapshot {
        let mut snap = Snapshot::empty(now, crate::config::fleet_rules());
        snap.agents = fleetdash_model::Probe::Value(vec![crate::write::history::tests::agent(
            "min", up, now,
        )]);
        snap.sections.agents = SectionMeta {
            configured: true,
            checked_at: Some(now),
            duration_ms: Some(5),
            stale: false,
        };
        snap
    }

    /// What the outbox holds, in order: (element key, event).
    fn kept(alerts: &Alerts) -> Vec<(String, AlertEvent)> {
        let outbox = alerts.delivery.as_ref().unwrap().outbox();
        let mut sent: Vec<_> = outbox.last_verdicts().unwrap().into_iter().collect();
        sent.sort_by(|a, b| a.0.cmp(&b.0));
        sent.into_iter().map(|(k, (e, _))| (k, e)).collect()
    }

    /// The crash tests' installation: one webhook channel, the engine's state file, and the
    /// rules' pass counts.
    struct Crash {
        _dir: tempfile::TempDir,
        config: Config,
        rules: Rules,
        state: std::path::PathBuf,
        fail_after: i64,
        recover_after: i64,
    }

    impl Crash {
        fn new() -> Crash {
            let (dir, path) = crate::config::config_beside_fleet_rules(
                "output_dir = \"o\"\nstate_dir = \"s\"\nrules = \"rules.yaml\"\n\n\
                 [[alerts.channels]]\ntype = \"webhook\"\nname = \"ops\"\n\
                 url = \"http://127.0.0.1:9/hook\"\n",
            );
            std::fs::create_dir_all(dir.path().join("s")).unwrap();
            let (config, rules) = Config::load(&path).unwrap_or_else(|e| panic!("{e}"));
            let state = config
                .state_dir
                .join(crate::alerting::engine::state::FILE_NAME);
            let fail_after = i64::try_from(rules.alerts.fail_after.count).unwrap();
            let recover_after = i64::try_from(rules.alerts.recover_after.count).unwrap();
            Crash {
                _dir: dir,
                config,
                rules,
                state,
                fail_after,
                recover_after,
            }
        }
    }

    /// Alerting as `run` starts it over `config`, on this host's clock.
    async fn start(config: &Config, rules: &Rules) -> Alerts {
        Alerts::from_config(
            config,
            rules,
            RedactionGate::default(),
            &Clock::system(rules.clock.settings()),
        )
        .await
        .unwrap()
        .unwrap()
    }

    /// Issue 21: a crash after a pass put its Firing in the outbox and before the engine's
    /// state was saved left the state a pass behind: no open alert. If the element was green
    /// by the next pass, its Recovered was never sent; the operator kept a red that had ended.
    /// The crash is reproduced on disk: the state file of before the Firing's pass, the outbox
    /// of after it. A restart mends the state from the outbox, and the Recovered goes out.
    #[tokio::test]
    async fn a_crash_between_the_outbox_and_the_engine_state_loses_no_recovered() {
        let Crash {
            _dir,
            config,
            rules,
            state,
            fail_after,
            recover_after,
        } = Crash::new();
        let start = || start(&config, &rules);

        let first = start().await;
        for pass in 1..fail_after {
            first.after_write(&snap(t(pass), false)).await;
        }
        let before_firing = std::fs::read(&state).unwrap();
        first.after_write(&snap(t(fail_after), false)).await;
        assert_eq!(kept(&first), vec![("agent:min".into(), AlertEvent::Firing)]);
        drop(first);
        // The kill: the Firing is in the outbox, the state is the one saved before its pass.
        std::fs::write(&state, &before_firing).unwrap();

        let restarted = start().await;
        for pass in 1..=recover_after {
            restarted
                .after_write(&snap(t(fail_after + pass), true))
                .await;
        }
        assert_eq!(
            kept(&restarted),
            vec![("agent:min".into(), AlertEvent::Recovered)],
            "the Recovered of the Firing that went out"
        );
    }

    /// The other way round: the Recovered kept, the state still open, and the element red
    /// again at the next pass. The old alert is closed from the outbox, so the new red run
    /// fires (instead of passing for the old one, recovered, with no Firing of its own).
    #[tokio::test]
    async fn a_crash_after_a_recovered_still_fires_the_next_red() {
        let Crash {
            _dir,
            config,
            rules,
            state,
            fail_after,
            recover_after,
        } = Crash::new();
        let start = || start(&config, &rules);
        let first = start().await;
        let mut now = 0;
        for _ in 0..fail_after {
            now += 1;
            first.after_write(&snap(t(now), false)).await;
        }
        for _ in 1..recover_after {
            now += 1;
            first.after_write(&snap(t(now), true)).await;
        }
        let before_recovered = std::fs::read(&state).unwrap();
        now += 1;
        first.after_write(&snap(t(now), true)).await;
        assert_eq!(
            kept(&first),
            vec![("agent:min".into(), AlertEvent::Recovered)]
        );
        drop(first);
        std::fs::write(&state, &before_recovered).unwrap();

        let restarted = start().await;
        for _ in 0..fail_after {
            now += 1;
            restarted.after_write(&snap(t(now), false)).await;
        }
        assert_eq!(
            kept(&restarted),
            vec![("agent:min".into(), AlertEvent::Firing)],
            "the new red run fired"
        );
    }
}

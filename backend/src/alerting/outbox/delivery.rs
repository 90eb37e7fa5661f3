//! The delivery loop: the outbox and its channels. Every alert goes into the outbox for each
//! channel that wants it; due items are sent in order per channel, the channels side by side,
//! each send bounded ([`SEND_DEADLINE`]); a pass every tick and at once after an enqueue. The
//! store's calls block, so they run on blocking threads.
//!
//! With [`Grouping`] (what `fleetdash run` uses, from the rules file), a channel's due items go
//! out together as one notification, Alertmanager's way: the first waits `group_wait` for the
//! others of its moment, and a channel's next notification waits `group_interval` after its
//! last one. A storm of eleven reds is one buzz, not eleven.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use chrono::{DateTime, Utc};

use super::store::{Enqueued, Item, Outbox};
use super::watch::ChannelWatch;
use crate::alerting::provider::{Provider, SendError};
use crate::alerting::{Alert, AlertEvent};
use crate::clock::{Clock, Clocked};
use crate::config::QuietHours;
use crate::redact::RedactionGate;

/// One send's deadline on top of the channel's own HTTP timeout: nothing holds the loop.
pub const SEND_DEADLINE: Duration = Duration::from_secs(30);
/// How often the delivery loop looks for due items.
pub const DELIVERY_TICK: Duration = Duration::from_secs(5);
/// How often the delivery loop forgets old delivered pairs and folds the WAL back.
pub const PRUNE_EVERY: Duration = Duration::from_secs(3600);

/// What one delivery pass did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Pass {
    pub delivered: usize,
    pub failed: usize,
}

/// Told of each send, (channel, delivered): how `fleetdash run`'s metrics count deliveries
/// without alerting importing them.
pub type SendObserver = Arc<dyn Fn(&str, bool) + Send + Sync>;

/// How a channel's alerts are grouped into notifications (Alertmanager's `group_wait` and
/// `group_interval`, from the rules file's `grouping`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grouping {
    /// A channel's oldest pending alert waits this long for others.
    pub wait: chrono::Duration,
    /// A channel's next notification waits at least this long after its last.
    pub interval: chrono::Duration,
}

impl Grouping {
    pub fn of(rules: &crate::config::AlertRules) -> Grouping {
        let secs = |r: &crate::config::Rule| {
            chrono::Duration::seconds(i64::try_from(r.seconds).unwrap_or(i64::MAX / 1000))
        };
        Grouping {
            wait: secs(&rules.group_wait),
            interval: secs(&rules.group_interval),
        }
    }
}

/// The outbox and its channels: enqueues what each channel wants, and delivers due items.
pub struct Delivery {
    outbox: Arc<Outbox>,
    providers: Vec<Arc<dyn Provider>>,
    /// Rung by an enqueue: a new alert goes out now, not at the loop's next tick.
    wake: tokio::sync::Notify,
    /// Whether (and when) a failing channel is told to the others.
    watch: Option<ChannelWatch>,
    /// Set once, before the loop starts ([`Delivery::observe`]).
    observer: std::sync::OnceLock<SendObserver>,
    /// `None`: each alert goes out on its own, at once.
    grouping: Option<Grouping>,
    /// When each channel last delivered a notification (its age observed on the clock: a step
    /// of the wall clock neither holds a group back nor lets it out early). In memory: after a
    /// restart a channel's first group waits only `group_wait`.
    sent_at: std::sync::Mutex<std::collections::HashMap<String, DateTime<Utc>>>,
    /// Channels' quiet hours, and how long a red lasts before it goes out in them anyway.
    quiet: Option<Quiet>,
    /// The clock the groups' waits and the quiet hours' lasting reds are observed on; without
    /// one, the wall clock alone.
    clock: Option<Clock>,
}

/// The name the clock knows a channel's last notification by.
fn sent_what(channel: &str) -> String {
    format!("channel {channel}'s last notification")
}

/// Quiet hours per channel (issue 24): in them, only a red that has lasted `red_after` goes
/// out; the rest waits in the outbox for their end, then leaves grouped.
#[derive(Debug, Clone, PartialEq)]
pub struct Quiet {
    pub channels: std::collections::HashMap<String, QuietHours>,
    pub red_after: chrono::Duration,
    /// The zone the hours are in; `None`: this host's, at each moment (summer time included).
    pub zone: Option<chrono::FixedOffset>,
}

impl Quiet {
    pub fn of(config: &crate::config::Config, rules: &crate::config::AlertRules) -> Quiet {
        Quiet {
            channels: config
                .alerts
                .channels
                .iter()
                .filter_map(|c| c.quiet.map(|q| (c.name.clone(), q)))
                .collect(),
            red_after: chrono::Duration::seconds(
                i64::try_from(rules.quiet_red_after.seconds).unwrap_or(i64::MAX / 1000),
            ),
            zone: None,
        }
    }

    /// Whether `alert` waits on `channel` at `at`: the hours are the wall clock's, how long a
    /// red has lasted is as observed (after a forward step or a wake, only once watched again).
    pub fn holds(&self, channel: &str, alert: &Alert, at: &Clocked) -> bool {
        let now = at.wall();
        let Some(hours) = self.channels.get(channel) else {
            return false;
        };
        let offset = self
            .zone
            .unwrap_or_else(|| *now.with_timezone(&chrono::Local).offset());
        let local = now.with_timezone(&offset);
        let minute = chrono::Timelike::hour(&local) * 60 + chrono::Timelike::minute(&local);
        if !hours.contains(minute) {
            return false;
        }
        let red_after = u64::try_from(self.red_after.num_seconds()).unwrap_or(0);
        let lasting_red = alert.event == AlertEvent::Firing
            && alert.band == fleetdash_model::Band::Red
            && at.reached(
                at.age(&format!("alert {}'s red run", alert.key), alert.since),
                red_after,
            );
        !lasting_red
    }
}

impl Delivery {
    pub fn new(outbox: Arc<Outbox>, providers: Vec<Arc<dyn Provider>>) -> Delivery {
        Delivery {
            outbox,
            providers,
            wake: tokio::sync::Notify::new(),
            watch: None,
            observer: std::sync::OnceLock::new(),
            grouping: None,
            sent_at: std::sync::Mutex::new(std::collections::HashMap::new()),
            quiet: None,
            clock: None,
        }
    }

    /// Channels keep quiet hours ([`Quiet`]); they apply to grouped delivery.
    pub fn with_quiet(mut self, quiet: Quiet) -> Delivery {
        self.quiet = Some(quiet);
        self
    }

    /// Each channel's alerts go out grouped ([`Grouping`]).
    pub fn with_grouping(mut self, grouping: Grouping) -> Delivery {
        self.grouping = Some(grouping);
        self
    }

    /// A channel failing `watch.down_after` times in a row is told to the other channels, and
    /// its recovery too.
    pub fn with_watch(mut self, watch: ChannelWatch) -> Delivery {
        self.watch = Some(watch);
        self
    }

    /// Tells `observer` of every send from now on (a second observer is ignored).
    pub fn observe(&self, observer: SendObserver) {
        let _ = self.observer.set(observer);
    }

    /// `providers` (the configured channels, [`build`](crate::alerting::provider::build)) over the outbox in the
    /// config's `state_dir` (opened off the runtime), ready for [`Delivery::spawn`]; for the
    /// wiring in `fleetdash run`.
    pub async fn from_config(
        config: &crate::config::Config,
        rules: &crate::config::Rules,
        gate: RedactionGate,
        providers: Vec<Arc<dyn Provider>>,
    ) -> Result<Delivery> {
        let dir = config.state_dir.clone();
        let limits = super::Limits::of(&rules.alerts);
        let outbox =
            tokio::task::spawn_blocking(move || Outbox::open(&dir, gate, limits)).await??;
        let watch = ChannelWatch {
            down_after: u32::try_from(rules.alerts.fail_after.count).unwrap_or(u32::MAX),
            link: config
                .alerts
                .dashboard_url
                .as_ref()
                .map(ToString::to_string),
        };
        Ok(Delivery::new(Arc::new(outbox), providers)
            .with_watch(watch)
            .with_grouping(Grouping::of(&rules.alerts))
            .with_quiet(Quiet::of(config, &rules.alerts)))
    }

    /// Observes waits on `clock` (`fleetdash run`'s).
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = Some(clock);
        self
    }

    /// A reading to judge a pass by.
    fn clocked(&self) -> Clocked {
        match &self.clock {
            Some(clock) => clock.clocked(),
            None => Clocked::wall_only(Utc::now()),
        }
    }

    pub fn outbox(&self) -> &Arc<Outbox> {
        &self.outbox
    }

    /// The configured channels' names, in the config's order.
    pub fn channel_names(&self) -> Vec<String> {
        self.providers
            .iter()
            .map(|p| p.name().to_string())
            .collect()
    }

    /// Keeps `alert` for every channel that wants it (off the runtime).
    pub async fn enqueue(&self, alert: Alert, now: DateTime<Utc>) -> Result<Enqueued> {
        self.enqueue_all(vec![alert], now).await
    }

    /// Keeps `alert` for exactly `channels` (a report: `[report]` names them), whatever they
    /// filter; the dedupe key holds as for any alert.
    pub async fn enqueue_to(
        &self,
        alert: Alert,
        channels: Vec<String>,
        now: DateTime<Utc>,
    ) -> Result<Enqueued> {
        let outbox = self.outbox.clone();
        let enqueued = tokio::task::spawn_blocking(move || {
            let names: Vec<&str> = channels.iter().map(String::as_str).collect();
            outbox.enqueue(&alert, &names, now)
        })
        .await??;
        self.wake.notify_one();
        Ok(enqueued)
    }

    /// Keeps each of `alerts` for every channel that wants it, together (one engine pass's
    /// alerts: [`Outbox::enqueue_all`]).
    pub async fn enqueue_all(&self, alerts: Vec<Alert>, now: DateTime<Utc>) -> Result<Enqueued> {
        if alerts.is_empty() {
            return Ok(Enqueued::default());
        }
        let wanted: Vec<(Alert, Vec<String>)> = alerts
            .into_iter()
            .map(|alert| {
                let channels = self
                    .providers
                    .iter()
                    .filter(|p| p.wants(&alert))
                    .map(|p| p.name().to_string())
                    .collect();
                (alert, channels)
            })
            .collect();
        let outbox = self.outbox.clone();
        let enqueued = tokio::task::spawn_blocking(move || {
            let names: Vec<Vec<&str>> = wanted
                .iter()
                .map(|(_, c)| c.iter().map(String::as_str).collect())
                .collect();
            let pairs: Vec<(&Alert, &[&str])> = wanted
                .iter()
                .zip(&names)
                .map(|((a, _), n)| (a, n.as_slice()))
                .collect();
            outbox.enqueue_all(&pairs, now)
        })
        .await??;
        self.wake.notify_one();
        Ok(enqueued)
    }

    /// Sends every due item, in order per channel, the channels side by side (a hanging one
    /// holds up no other); a channel's first failure ends its turn in this pass (it backs
    /// off). Each send is bounded by [`SEND_DEADLINE`].
    pub async fn pass(&self, now: DateTime<Utc>) -> Result<Pass> {
        self.pass_at(&Clocked::wall_only(now)).await
    }

    /// [`Delivery::pass`] at `at`.
    pub async fn pass_at(&self, at: &Clocked) -> Result<Pass> {
        let now = at.wall();
        let outbox = self.outbox.clone();
        let items = tokio::task::spawn_blocking(move || outbox.due(now)).await??;
        let mut per_channel: Vec<(Arc<dyn Provider>, Vec<Item>)> = Vec::new();
        for item in items {
            match per_channel
                .iter_mut()
                .find(|(p, _)| p.name() == item.channel)
            {
                Some((_, list)) => list.push(item),
                None => {
                    // A channel taken out of the config keeps its items until it comes back.
                    if let Some(p) = self.providers.iter().find(|p| p.name() == item.channel) {
                        per_channel.push((p.clone(), vec![item]));
                    }
                }
            }
        }
        let turns = per_channel
            .into_iter()
            .map(|(provider, items)| self.channel_turn(provider, items, at));
        let mut pass = Pass::default();
        for turn in futures::future::join_all(turns).await {
            let turn = turn?;
            pass.delivered += turn.delivered;
            pass.failed += turn.failed;
        }
        Ok(pass)
    }

    /// One channel's due items, in order, until the first failure; grouped, all of them as one
    /// notification once the group's time has come.
    async fn channel_turn(
        &self,
        provider: Arc<dyn Provider>,
        items: Vec<Item>,
        at: &Clocked,
    ) -> Result<Pass> {
        let now = at.wall();
        if let Some(grouping) = self.grouping {
            return self.group_turn(provider, items, grouping, at).await;
        }
        let mut pass = Pass::default();
        for item in items {
            let result = match tokio::time::timeout(SEND_DEADLINE, provider.send(&item.alert)).await
            {
                Ok(r) => r,
                Err(_) => Err(SendError {
                    retryable: true,
                    reason: format!("no answer within {}s", SEND_DEADLINE.as_secs()),
                }),
            };
            let outbox = self.outbox.clone();
            let (id, channel) = (item.alert.id, item.channel);
            if let Some(observe) = self.observer.get() {
                observe(&channel, result.is_ok());
            }
            match result {
                Ok(()) => {
                    pass.delivered += 1;
                    // Kept before the delivery that proves it is marked: a crash in between
                    // sends the item again and finds the recovery already kept.
                    self.tell_others(&channel, AlertEvent::Recovered, now)
                        .await?;
                    tokio::task::spawn_blocking(move || outbox.delivered(&id, &channel, now))
                        .await??;
                }
                Err(e) => {
                    pass.failed += 1;
                    let name = channel.clone();
                    tokio::task::spawn_blocking(move || outbox.failed(&id, &channel, &e, now))
                        .await??;
                    self.tell_others(&name, AlertEvent::Firing, now).await?;
                    break;
                }
            }
        }
        Ok(pass)
    }

    /// A channel's due items as one notification (one alert alone as itself), unless the
    /// group is still waiting: its oldest item for `group_wait`, or the channel's last
    /// notification for `group_interval`.
    async fn group_turn(
        &self,
        provider: Arc<dyn Provider>,
        items: Vec<Item>,
        grouping: Grouping,
        at: &Clocked,
    ) -> Result<Pass> {
        let now = at.wall();
        let channel = provider.name().to_string();
        // In the channel's quiet hours what may wait does, kept in the outbox for their end.
        let items: Vec<Item> = match &self.quiet {
            Some(quiet) => items
                .into_iter()
                .filter(|i| !quiet.holds(&channel, &i.alert, at))
                .collect(),
            None => items,
        };
        // A report is a notification of its own (issue 45), never in a group: it goes first,
        // alone; what else is due waits for the next pass.
        let items = match items
            .iter()
            .position(|i| i.alert.event == AlertEvent::Report)
        {
            Some(i) => vec![items.into_iter().nth(i).expect("found")],
            None => items,
        };
        let Some(oldest) = items.iter().map(|i| i.enqueued_at).min() else {
            return Ok(Pass::default());
        };
        let last = self
            .sent_at
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&channel)
            .copied();
        // A report goes at its hour: no alert's group holds it back, and it holds none back.
        if items.len() == 1 && items[0].alert.event == AlertEvent::Report {
            let report = items.into_iter().next().expect("one");
            return self.report_turn(provider, report, now).await;
        }
        let waited = at.age(&format!("channel {channel}'s oldest waiting alert"), oldest);
        let wait = u64::try_from(grouping.wait.num_seconds()).unwrap_or(0);
        let interval = u64::try_from(grouping.interval.num_seconds()).unwrap_or(0);
        let since_last = |sent| at.age(&sent_what(&channel), sent);
        if waited < wait || last.is_some_and(|sent| since_last(sent) < interval) {
            return Ok(Pass::default());
        }
        let alerts: Vec<Alert> = items.into_iter().map(|i| i.alert).collect();
        let send = if alerts.len() == 1 {
            provider.send(&alerts[0])
        } else {
            provider.send_group(&alerts)
        };
        let result = match tokio::time::timeout(SEND_DEADLINE, send).await {
            Ok(r) => r,
            Err(_) => Err(SendError {
                retryable: true,
                reason: format!("no answer within {}s", SEND_DEADLINE.as_secs()),
            }),
        };
        if let Some(observe) = self.observer.get() {
            observe(&channel, result.is_ok());
        }
        let ids: Vec<String> = alerts.iter().map(|a| a.id.clone()).collect();
        let outbox = self.outbox.clone();
        let name = channel.clone();
        match result {
            Ok(()) => {
                self.sent_at
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(channel.clone(), now);
                at.note(&sent_what(&channel), now);
                self.tell_others(&channel, AlertEvent::Recovered, now)
                    .await?;
                tokio::task::spawn_blocking(move || {
                    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
                    outbox.delivered_group(&ids, &name, now)
                })
                .await??;
                if alerts.len() > 1 {
                    tracing::info!(
                        channel,
                        alerts = alerts.len(),
                        "alerts sent as one notification"
                    );
                }
                Ok(Pass {
                    delivered: alerts.len(),
                    failed: 0,
                })
            }
            Err(e) => {
                tokio::task::spawn_blocking(move || {
                    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
                    outbox.failed_group(&ids, &name, &e, now)
                })
                .await??;
                self.tell_others(&channel, AlertEvent::Firing, now).await?;
                Ok(Pass {
                    delivered: 0,
                    failed: alerts.len(),
                })
            }
        }
    }

    /// A report, sent alone and at once; marked delivered or failed like any item.
    async fn report_turn(
        &self,
        provider: Arc<dyn Provider>,
        item: Item,
        now: DateTime<Utc>,
    ) -> Result<Pass> {
        let result = match tokio::time::timeout(SEND_DEADLINE, provider.send(&item.alert)).await {
            Ok(r) => r,
            Err(_) => Err(SendError {
                retryable: true,
                reason: format!("no answer within {}s", SEND_DEADLINE.as_secs()),
            }),
        };
        let (outbox, id, channel) = (self.outbox.clone(), item.alert.id, item.channel);
        if let Some(observe) = self.observer.get() {
            observe(&channel, result.is_ok());
        }
        match result {
            Ok(()) => {
                self.tell_others(&channel, AlertEvent::Recovered, now)
                    .await?;
                tokio::task::spawn_blocking(move || outbox.delivered(&id, &channel, now)).await??;
                Ok(Pass {
                    delivered: 1,
                    failed: 0,
                })
            }
            Err(e) => {
                let name = channel.clone();
                tokio::task::spawn_blocking(move || outbox.failed(&id, &channel, &e, now))
                    .await??;
                self.tell_others(&name, AlertEvent::Firing, now).await?;
                Ok(Pass {
                    delivered: 0,
                    failed: 1,
                })
            }
        }
    }

    /// The notice `channel` is owed now ([`ChannelWatch::notice`]), kept for every other
    /// configured channel; nothing without a watch, or when it is owed none.
    async fn tell_others(
        &self,
        channel: &str,
        event: AlertEvent,
        now: DateTime<Utc>,
    ) -> Result<()> {
        let Some(watch) = &self.watch else {
            return Ok(());
        };
        let outbox = self.outbox.clone();
        let health = tokio::task::spawn_blocking(move || outbox.health()).await??;
        let Some(notice) = health
            .iter()
            .find(|h| h.channel == channel)
            .and_then(|h| watch.notice(h, event, now))
        else {
            return Ok(());
        };
        let others: Vec<String> = self
            .providers
            .iter()
            .map(|p| p.name().to_string())
            .filter(|name| name != channel)
            .collect();
        if others.is_empty() {
            return Ok(());
        }
        let outbox = self.outbox.clone();
        let enqueued = tokio::task::spawn_blocking(move || {
            let names: Vec<&str> = others.iter().map(String::as_str).collect();
            outbox.enqueue(&notice, &names, now)
        })
        .await??;
        if enqueued.added > 0 {
            tracing::warn!(
                channel,
                event = event.as_str(),
                told = enqueued.added,
                "alert channel's state told to the other channels"
            );
            self.wake.notify_one();
        }
        Ok(())
    }

    /// The delivery loop: a pass every `tick` (retries fall due) and at once after an enqueue,
    /// until `stop` is cancelled.
    pub fn spawn(
        self: Arc<Self>,
        tick: Duration,
        stop: tokio_util::sync::CancellationToken,
    ) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            let mut interval = tokio::time::interval(tick);
            let mut pruned_at: Option<tokio::time::Instant> = None;
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = stop.cancelled() => break,
                    _ = interval.tick() => {}
                    _ = self.wake.notified() => {}
                }
                let at = self.clocked();
                let now = at.wall();
                if let Err(e) = self.pass_at(&at).await {
                    tracing::error!("alert delivery pass failed: {e:#}");
                }
                if pruned_at.is_some_and(|at| at.elapsed() < PRUNE_EVERY) {
                    continue;
                }
                pruned_at = Some(tokio::time::Instant::now());
                let outbox = self.outbox.clone();
                if let Ok(Err(e)) = tokio::task::spawn_blocking(move || outbox.prune(now)).await {
                    tracing::warn!("alert outbox prune failed: {e:#}");
                }
            }
        })
    }
}

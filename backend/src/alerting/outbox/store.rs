//! The outbox's store: every (alert, channel that wants it) pair, kept in `state_dir` until
//! delivered. Enqueued once per pair (the dedupe key), taken when due, marked delivered or
//! failed; a failing channel backs off as a whole ([`backoff`]); the pending set is bounded per
//! channel and delivered pairs are remembered for a while, then pruned, both as the rules'
//! `alert_outbox` group declares ([`Limits`]). SQLite (WAL); every call blocks. Its file is opened through [`guard`].

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use anyhow::{Context, Result};
use chrono::{DateTime, TimeZone, Utc};
use fleetdash_model::{Asc, Band};
use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};

use super::guard;
use crate::alerting::provider::SendError;
use crate::alerting::{Alert, AlertEvent};
use crate::redact::RedactionGate;

/// The outbox's file in `state_dir`.
pub const OUTBOX_FILE: &str = "alerts-outbox.sqlite";
/// A failing channel's first wait before it is tried again; each further failure doubles it.
pub const BACKOFF_FIRST: Duration = Duration::from_secs(10);
/// The longest wait between two tries of a failing channel (Gatus and Uptime Kuma retry
/// notifications on the order of minutes; a phone alert later than this is of little use).
pub const BACKOFF_MAX: Duration = Duration::from_secs(10 * 60);
/// What the outbox keeps, from the rules' `alert_outbox` group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Pending items per channel; past it the oldest reminders are dropped first
    /// (`max_pending_per_channel`).
    pub max_pending_per_channel: usize,
    /// How long a delivered (alert, channel) pair is remembered (its key only: the alert's
    /// body goes once it is done), so a re-raised alert is not sent again
    /// (`delivered_kept_seconds`).
    pub delivered_kept: chrono::Duration,
}

impl Limits {
    /// The outbox's limits in `rules`.
    pub fn of(rules: &crate::config::AlertRules) -> Limits {
        Limits {
            max_pending_per_channel: usize::try_from(rules.outbox_pending_max.count)
                .unwrap_or(usize::MAX),
            delivered_kept: chrono::Duration::seconds(
                i64::try_from(rules.outbox_delivered_kept.seconds).unwrap_or(i64::MAX),
            ),
        }
    }
}
/// Items taken per channel per delivery pass: one pass stays bounded in time.
pub const BATCH_PER_CHANNEL: usize = 20;

/// The alert as the outbox stores it (the model's serde shapes; the event by its name).
#[derive(Serialize, Deserialize)]
struct Stored {
    id: String,
    key: String,
    kind: String,
    name: String,
    event: String,
    band: Band,
    reason: Option<String>,
    status: Asc,
    since: DateTime<Utc>,
    at: DateTime<Utc>,
    takes_down: Vec<String>,
    link: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    detail: Option<String>,
}

fn event_from(name: &str) -> Option<AlertEvent> {
    [
        AlertEvent::Firing,
        AlertEvent::Recovered,
        AlertEvent::Reminder,
        AlertEvent::Test,
        AlertEvent::Report,
    ]
    .into_iter()
    .find(|e| e.as_str() == name)
}

impl Stored {
    fn of(a: &Alert) -> Stored {
        Stored {
            id: a.id.clone(),
            key: a.key.clone(),
            kind: a.kind.clone(),
            name: a.name.clone(),
            event: a.event.as_str().to_string(),
            band: a.band,
            reason: a.reason.clone(),
            status: a.status.clone(),
            since: a.since,
            at: a.at,
            takes_down: a.takes_down.clone(),
            link: a.link.clone(),
            detail: a.detail.clone(),
        }
    }

    fn into_alert(self) -> Option<Alert> {
        Some(Alert {
            event: event_from(&self.event)?,
            id: self.id,
            key: self.key,
            kind: self.kind,
            name: self.name,
            band: self.band,
            reason: self.reason,
            status: self.status,
            since: self.since,
            at: self.at,
            takes_down: self.takes_down,
            link: self.link,
            detail: self.detail,
        })
    }
}

/// One pending delivery.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub channel: String,
    pub alert: Alert,
    /// Tries so far.
    pub attempts: u32,
    /// When it was kept: a group of alerts waits `group_wait` from its oldest.
    pub enqueued_at: DateTime<Utc>,
}

/// What [`Outbox::enqueue`] did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Enqueued {
    /// New pending items.
    pub added: usize,
    /// Pairs already pending or already delivered: the dedupe key held.
    pub known: usize,
    /// Items dropped to keep a channel under [`Limits::max_pending_per_channel`].
    pub dropped: usize,
}

/// A channel's health, for the page ("alerts: ntfy failing since 14:02: 503").
#[derive(Debug, Clone, PartialEq)]
pub struct ChannelHealth {
    pub channel: String,
    /// Since when it has failed without a success in between; `None` when it is fine.
    pub failing_since: Option<DateTime<Utc>>,
    /// The last failure's reason (gated), kept after a recovery for the log.
    pub last_reason: Option<String>,
    /// Consecutive failures.
    pub failures: u32,
    /// When it is tried again.
    pub retry_at: Option<DateTime<Utc>>,
    pub pending: usize,
}

/// The outbox store. Every method blocks (SQLite, fsync).
pub struct Outbox {
    conn: Mutex<Connection>,
    path: PathBuf,
    gate: RedactionGate,
    limits: Limits,
}

fn secs(t: DateTime<Utc>) -> i64 {
    t.timestamp()
}

/// A stored time (whole seconds) read back.
pub(super) fn time(s: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(s, 0).single().unwrap_or_default()
}

/// The wait after the `failures`-th consecutive failure.
pub fn backoff(failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(16);
    BACKOFF_FIRST
        .saturating_mul(1u32 << doublings)
        .min(BACKOFF_MAX)
}
impl Outbox {
    /// Opens (or creates) the outbox in `state_dir`, bounded by `limits`. `gate` passes every
    /// stored text.
    ///
    /// A file there that is not a usable outbox of ours (not SQLite, corrupt, another
    /// program's database, a newer schema) is moved aside to
    /// `alerts-outbox.sqlite.corrupt-<UTC stamp>` with its `-wal` and `-shm`, said at error
    /// level with both paths and why, and a fresh outbox takes its place: alerting goes on, and
    /// the operator's file is never deleted. Any other failure (the folder unwritable, the file
    /// busy) is returned, with nothing moved ([`guard`]).
    pub fn open(state_dir: &Path, gate: RedactionGate, limits: Limits) -> Result<Outbox> {
        Outbox::open_file(state_dir, OUTBOX_FILE, gate, limits)
    }

    /// [`Outbox::open`], the file named `file` in `state_dir`: `fleetdash alerts test` keeps
    /// its own, so a running `fleetdash run` never sends, groups or counts a test.
    pub fn open_file(
        state_dir: &Path,
        file: &str,
        gate: RedactionGate,
        limits: Limits,
    ) -> Result<Outbox> {
        std::fs::create_dir_all(state_dir)
            .with_context(|| format!("cannot create state_dir {}", state_dir.display()))?;
        let path = state_dir.join(file);
        let conn = guard::open(&path)?;
        Ok(Outbox {
            conn: Mutex::new(conn),
            path,
            gate,
            limits,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        // A panic while holding it leaves SQLite consistent (transactions roll back).
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Keeps `alert` for each of `channels` (those that want it), unless the pair is already
    /// known; then bounds each channel's pending set.
    pub fn enqueue(
        &self,
        alert: &Alert,
        channels: &[&str],
        now: DateTime<Utc>,
    ) -> Result<Enqueued> {
        self.enqueue_all(&[(alert, channels)], now)
    }

    /// Keeps each alert for its channels, all in one transaction: one engine pass's alerts
    /// are in the outbox together or not at all (a storm is one group, never split by a
    /// delivery pass between two of its writes), at the cost of one sync.
    pub fn enqueue_all(
        &self,
        alerts: &[(&Alert, &[&str])],
        now: DateTime<Utc>,
    ) -> Result<Enqueued> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        let mut out = Enqueued::default();
        for (alert, channels) in alerts {
            let stored = self.gate.to_json(&Stored::of(alert))?.to_string();
            for channel in *channels {
                let n = tx.execute(
                    "INSERT OR IGNORE INTO outbox (alert_id, channel, event, alert, enqueued_at)
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                    params![alert.id, channel, alert.event.as_str(), stored, secs(now)],
                )?;
                if n == 0 {
                    out.known += 1;
                    continue;
                }
                out.added += 1;
                out.dropped += bound(&tx, channel, self.limits.max_pending_per_channel, now)?;
            }
        }
        tx.commit()?;
        Ok(out)
    }

    /// The due items of every channel not backing off, oldest first, at most
    /// [`BATCH_PER_CHANNEL`] per channel. A retry set further ahead than the longest backoff
    /// can only be one made before this clock stepped back: it is due now, not an hour later
    /// (issue 31).
    pub fn due(&self, now: DateTime<Utc>) -> Result<Vec<Item>> {
        let conn = self.conn();
        let mut stmt = conn.prepare(
            "SELECT o.channel, o.alert, o.attempts, o.enqueued_at FROM outbox o
             LEFT JOIN channels c ON c.channel = o.channel
             WHERE o.done_at IS NULL
               AND (c.retry_at IS NULL OR c.retry_at <= ?1 OR c.retry_at > ?2)
             ORDER BY o.channel, o.enqueued_at, o.rowid",
        )?;
        let furthest = now + chrono::Duration::from_std(BACKOFF_MAX)?;
        let rows = stmt.query_map(params![secs(now), secs(furthest)], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, u32>(2)?,
                r.get::<_, i64>(3)?,
            ))
        })?;
        let mut out: Vec<Item> = Vec::new();
        let mut per_channel = 0;
        for row in rows {
            let (channel, text, attempts, enqueued_at) = row?;
            if out.last().is_some_and(|i| i.channel == channel) {
                per_channel += 1;
            } else {
                per_channel = 1;
            }
            if per_channel > BATCH_PER_CHANNEL {
                continue;
            }
            let Some(alert) = serde_json::from_str::<Stored>(&text)
                .ok()
                .and_then(Stored::into_alert)
            else {
                tracing::error!(channel, "alert outbox: an unreadable item was skipped");
                continue;
            };
            out.push(Item {
                channel,
                alert,
                attempts,
                enqueued_at: time(enqueued_at),
            });
        }
        Ok(out)
    }

    /// The channel took the item: it is done, and the channel is fine again.
    pub fn delivered(&self, alert_id: &str, channel: &str, now: DateTime<Utc>) -> Result<()> {
        self.delivered_group(&[alert_id], channel, now)
    }

    /// The channel took the items, sent as one notification: all done at once.
    pub fn delivered_group(
        &self,
        alert_ids: &[&str],
        channel: &str,
        now: DateTime<Utc>,
    ) -> Result<()> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        for alert_id in alert_ids {
            tx.execute(
                "UPDATE outbox SET alert = '', done_at = ?3, outcome = 'delivered', attempts = attempts + 1
                 WHERE alert_id = ?1 AND channel = ?2",
                params![alert_id, channel, secs(now)],
            )?;
        }
        let was_failing: Option<i64> = tx
            .query_row(
                "SELECT failing_since FROM channels WHERE channel = ?1",
                params![channel],
                |r| r.get(0),
            )
            .optional()?
            .flatten();
        if let Some(since) = was_failing {
            tracing::info!(
                channel,
                failing_since = %time(since),
                "alert channel delivers again"
            );
        }
        tx.execute(
            "INSERT INTO channels (channel, failing_since, failures, retry_at)
             VALUES (?1, NULL, 0, NULL)
             ON CONFLICT(channel) DO UPDATE SET failing_since = NULL, failures = 0, retry_at = NULL",
            params![channel],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// The channel failed to take the item. Retryable: the channel backs off. Not retryable
    /// (the request itself is wrong): the item is given up, in the log; the channel is still
    /// reported failing, as its configuration needs a look.
    pub fn failed(
        &self,
        alert_id: &str,
        channel: &str,
        error: &SendError,
        now: DateTime<Utc>,
    ) -> Result<()> {
        self.failed_group(&[alert_id], channel, error, now)
    }

    /// The channel failed to take the items sent as one notification: as [`Outbox::failed`]
    /// for each, and one failure of the channel.
    pub fn failed_group(
        &self,
        alert_ids: &[&str],
        channel: &str,
        error: &SendError,
        now: DateTime<Utc>,
    ) -> Result<()> {
        let reason = self.gate.redact_str(&error.reason).into_owned();
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        for alert_id in alert_ids {
            if error.retryable {
                tx.execute(
                    "UPDATE outbox SET attempts = attempts + 1 WHERE alert_id = ?1 AND channel = ?2",
                    params![alert_id, channel],
                )?;
            } else {
                tx.execute(
                    "UPDATE outbox SET attempts = attempts + 1, alert = '', done_at = ?3, outcome = 'refused'
                     WHERE alert_id = ?1 AND channel = ?2",
                    params![alert_id, channel, secs(now)],
                )?;
                tracing::error!(channel, alert = alert_id, %reason, "alert refused by its channel, given up");
            }
        }
        let failures: u32 = tx
            .query_row(
                "SELECT failures FROM channels WHERE channel = ?1",
                params![channel],
                |r| r.get(0),
            )
            .optional()?
            .unwrap_or(0)
            + 1;
        let retry_at = now + chrono::Duration::from_std(backoff(failures))?;
        tx.execute(
            "INSERT INTO channels (channel, failing_since, last_reason, failures, retry_at)
             VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT(channel) DO UPDATE SET
               failing_since = COALESCE(failing_since, ?2), last_reason = ?3,
               failures = ?4, retry_at = ?5",
            params![channel, secs(now), reason, failures, secs(retry_at)],
        )?;
        tx.commit()?;
        tracing::warn!(channel, failures, %reason, retry_at = %retry_at, "alert channel failing");
        Ok(())
    }

    /// Everything pending given up as dropped, and every channel's backoff forgotten: a fresh
    /// start for the test outbox, whose earlier tests no one is waiting for.
    pub fn start_over(&self, now: DateTime<Utc>) -> Result<usize> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        let n = tx.execute(
            "UPDATE outbox SET alert = '', done_at = ?1, outcome = 'dropped' WHERE done_at IS NULL",
            params![secs(now)],
        )?;
        tx.execute("DELETE FROM channels", [])?;
        tx.commit()?;
        Ok(n)
    }

    /// Per channel, what became of `alert_id`: `delivered`, `refused`, `dropped`, or `None`
    /// while it is pending.
    pub fn outcomes(&self, alert_id: &str) -> Result<Vec<(String, Option<String>)>> {
        let conn = self.conn();
        let mut stmt =
            conn.prepare("SELECT channel, outcome FROM outbox WHERE alert_id = ?1 ORDER BY rowid")?;
        let rows = stmt.query_map(params![alert_id], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Pending items of `channel`, or of all channels.
    pub fn pending(&self, channel: Option<&str>) -> Result<usize> {
        let conn = self.conn();
        let n: i64 = match channel {
            Some(c) => conn.query_row(
                "SELECT COUNT(*) FROM outbox WHERE done_at IS NULL AND channel = ?1",
                params![c],
                |r| r.get(0),
            )?,
            None => conn.query_row(
                "SELECT COUNT(*) FROM outbox WHERE done_at IS NULL",
                [],
                |r| r.get(0),
            )?,
        };
        Ok(n as usize)
    }

    /// Rows kept (pending and remembered): what the store's size follows.
    pub fn rows(&self) -> Result<usize> {
        let n: i64 = self
            .conn()
            .query_row("SELECT COUNT(*) FROM outbox", [], |r| r.get(0))?;
        Ok(n as usize)
    }

    /// Forgets delivered pairs older than [`Limits::delivered_kept`], and folds the WAL back
    /// into the file (it would otherwise stay at its high-water mark).
    pub fn prune(&self, now: DateTime<Utc>) -> Result<usize> {
        let cutoff = now - self.limits.delivered_kept;
        let conn = self.conn();
        let n = conn.execute(
            "DELETE FROM outbox WHERE done_at IS NOT NULL AND done_at < ?1",
            params![secs(cutoff)],
        )?;
        conn.execute_batch("PRAGMA incremental_vacuum;")?;
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
        Ok(n)
    }

    /// Per element key, the newest Firing or Recovered the outbox holds (pending or
    /// remembered as delivered) and the red run it is about (its `since`): what went out, for
    /// the engine to mend a state saved one pass behind
    /// ([`Alerting::reconcile`](crate::alerting::engine::Alerting::reconcile)).
    pub fn last_verdicts(&self) -> Result<HashMap<String, (AlertEvent, DateTime<Utc>)>> {
        let conn = self.conn();
        let mut stmt = conn.prepare(
            "SELECT alert_id, event FROM outbox WHERE event IN ('firing', 'recovered')
             ORDER BY enqueued_at, rowid",
        )?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
        let mut out = HashMap::new();
        for row in rows {
            let (id, event) = row?;
            // `<key>:<event>:<since, unix s>`; a key may hold colons itself.
            let mut parts = id.rsplitn(3, ':');
            let (Some(since), Some(_), Some(key), Some(event)) =
                (parts.next(), parts.next(), parts.next(), event_from(&event))
            else {
                continue;
            };
            let Some(since) = since.parse::<i64>().ok().map(time) else {
                continue;
            };
            out.insert(key.to_string(), (event, since));
        }
        Ok(out)
    }

    /// Each channel the outbox has heard of, with its health and pending count.
    pub fn health(&self) -> Result<Vec<ChannelHealth>> {
        let conn = self.conn();
        let mut stmt = conn.prepare(
            "SELECT c.channel, c.failing_since, c.last_reason, c.failures, c.retry_at,
                    (SELECT COUNT(*) FROM outbox o WHERE o.channel = c.channel AND o.done_at IS NULL)
             FROM channels c ORDER BY c.channel",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok(ChannelHealth {
                channel: r.get(0)?,
                failing_since: r.get::<_, Option<i64>>(1)?.map(time),
                last_reason: r.get(2)?,
                failures: r.get(3)?,
                retry_at: r.get::<_, Option<i64>>(4)?.map(time),
                pending: r.get::<_, i64>(5)? as usize,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}

/// Drops the oldest items of `channel` past `max_pending`: reminders first, then (loudly)
/// anything else. Returns how many went.
fn bound(
    tx: &rusqlite::Transaction<'_>,
    channel: &str,
    max_pending: usize,
    now: DateTime<Utc>,
) -> Result<usize> {
    let pending: i64 = tx.query_row(
        "SELECT COUNT(*) FROM outbox WHERE done_at IS NULL AND channel = ?1",
        params![channel],
        |r| r.get(0),
    )?;
    let mut over = (pending as usize).saturating_sub(max_pending);
    let mut dropped = 0;
    for reminders_only in [true, false] {
        if over == 0 {
            break;
        }
        let victims: Vec<(String, String)> = {
            let mut stmt = tx.prepare(
                "SELECT alert_id, event FROM outbox
                 WHERE done_at IS NULL AND channel = ?1 AND (?2 = 0 OR event = 'reminder')
                 ORDER BY enqueued_at, rowid LIMIT ?3",
            )?;
            let rows = stmt
                .query_map(params![channel, reminders_only as i64, over as i64], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        for (id, event) in victims {
            tx.execute(
                "UPDATE outbox SET alert = '', done_at = ?3, outcome = 'dropped' WHERE alert_id = ?1 AND channel = ?2",
                params![id, channel, secs(now)],
            )?;
            if event == "reminder" {
                tracing::info!(channel, alert = %id, "alert outbox full: oldest reminder dropped");
            } else {
                tracing::error!(channel, alert = %id, event = %event,
                    "alert outbox full: a pending {event} alert was dropped");
            }
            dropped += 1;
            over -= 1;
        }
    }
    Ok(dropped)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// The shipped rules' `alert_outbox` limits.
    pub(crate) fn limits() -> Limits {
        Limits::of(&crate::config::fleet_alert_rules())
    }

    /// Agent min's alert `event`, under the dedupe key `id`.
    pub(crate) fn alert(id: &str, event: AlertEvent) -> Alert {
        Alert {
            id: id.to_string(),
            key: "agent:min".into(),
            kind: "agent".into(),
            name: "min".into(),
            event,
            band: Band::Red,
            reason: Some("unreachable".into()),
            status: Asc::DEPENDENCY_UNAVAILABLE,
            since: time(1_700_000_000),
            at: time(1_700_000_060),
            takes_down: vec![],
            link: None,
            detail: None,
        }
    }

    /// A channel backing off when the clock steps back an hour: its retry, now further ahead
    /// than any backoff, is due at once rather than an hour later.
    #[test]
    fn a_retry_set_before_a_step_back_is_due() {
        let dir = tempfile::tempdir().unwrap();
        let o = Outbox::open(dir.path(), RedactionGate::default(), limits()).unwrap();
        let now = time(1_700_000_100);
        let a = alert("agent:min:firing:1700000000", AlertEvent::Firing);
        o.enqueue(&a, &["ntfy"], now).unwrap();
        let error = SendError {
            retryable: true,
            reason: "503".into(),
        };
        o.failed(&a.id, "ntfy", &error, now).unwrap();
        assert!(o.due(now).unwrap().is_empty(), "backing off");
        let backoff = chrono::Duration::from_std(BACKOFF_FIRST).unwrap();
        assert_eq!(o.due(now + backoff).unwrap().len(), 1);
        let back = now - chrono::Duration::hours(1);
        assert_eq!(
            o.due(back).unwrap().len(),
            1,
            "not held an hour by a step back"
        );
    }

    #[test]
    fn backoff_doubles_up_to_its_ceiling() {
        assert_eq!(backoff(1), BACKOFF_FIRST);
        assert_eq!(backoff(2), BACKOFF_FIRST * 2);
        assert_eq!(backoff(3), BACKOFF_FIRST * 4);
        assert_eq!(backoff(40), BACKOFF_MAX);
    }

    #[test]
    fn a_pair_is_kept_once_and_survives_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let now = time(1_700_000_100);
        let a = alert("agent:min:firing:1700000000", AlertEvent::Firing);
        {
            let o = Outbox::open(dir.path(), RedactionGate::default(), limits()).unwrap();
            let e = o.enqueue(&a, &["ntfy", "hook"], now).unwrap();
            assert_eq!((e.added, e.known), (2, 0));
            let e = o.enqueue(&a, &["ntfy"], now).unwrap();
            assert_eq!((e.added, e.known), (0, 1));
        }
        let o = Outbox::open(dir.path(), RedactionGate::default(), limits()).unwrap();
        let due = o.due(now).unwrap();
        assert_eq!(due.len(), 2);
        assert_eq!(due[0].alert, a);
        o.delivered(&a.id, "ntfy", now).unwrap();
        // Re-raised after delivery (an engine restart): still known, not pending again.
        let e = o.enqueue(&a, &["ntfy"], now).unwrap();
        assert_eq!((e.added, e.known), (0, 1));
        assert_eq!(o.pending(Some("ntfy")).unwrap(), 0);
        assert_eq!(o.pending(Some("hook")).unwrap(), 1);
    }

    #[test]
    fn a_failing_channel_backs_off_and_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let o = Outbox::open(dir.path(), RedactionGate::default(), limits()).unwrap();
        let t0 = time(1_700_000_100);
        let a = alert("a1", AlertEvent::Firing);
        o.enqueue(&a, &["ntfy"], t0).unwrap();
        let err = SendError {
            retryable: true,
            reason: "HTTP 503".into(),
        };
        o.failed("a1", "ntfy", &err, t0).unwrap();
        let first = chrono::Duration::from_std(BACKOFF_FIRST).unwrap();
        let tick = chrono::Duration::seconds(1);
        assert!(o.due(t0 + first - tick).unwrap().is_empty());
        assert_eq!(o.due(t0 + first).unwrap().len(), 1);
        o.failed("a1", "ntfy", &err, t0 + first).unwrap();
        // Doubled: not due one second before 2 × first.
        assert!(o.due(t0 + first + first * 2 - tick).unwrap().is_empty());
        let h = &o.health().unwrap()[0];
        assert_eq!(h.failing_since, Some(t0));
        assert_eq!(h.last_reason.as_deref(), Some("HTTP 503"));
        assert_eq!((h.failures, h.pending), (2, 1));
        o.delivered("a1", "ntfy", t0 + first * 3).unwrap();
        let h = &o.health().unwrap()[0];
        assert_eq!((h.failing_since, h.failures, h.pending), (None, 0, 0));
    }

    #[test]
    fn a_full_channel_drops_its_oldest_reminders_first() {
        let dir = tempfile::tempdir().unwrap();
        let o = Outbox::open(dir.path(), RedactionGate::default(), limits()).unwrap();
        let t0 = time(1_700_000_000);
        o.enqueue(&alert("firing", AlertEvent::Firing), &["c"], t0)
            .unwrap();
        let mut dropped = 0;
        for i in 0..limits().max_pending_per_channel + 5 {
            let t = t0 + chrono::Duration::seconds(i as i64 + 1);
            dropped += o
                .enqueue(&alert(&format!("r{i}"), AlertEvent::Reminder), &["c"], t)
                .unwrap()
                .dropped;
        }
        assert_eq!(dropped, 6);
        assert_eq!(
            o.pending(Some("c")).unwrap(),
            limits().max_pending_per_channel
        );
        let due = o.due(t0).unwrap();
        // The older firing is kept; the oldest reminders went.
        assert_eq!(due[0].alert.id, "firing");
        assert_eq!(due[1].alert.id, "r6");
    }

    /// Issue 33: the bounds are the rules' `alert_outbox`: under rules that say 3 pending per
    /// channel and a day for a delivered pair, the fourth reminder drops the oldest, and a pair
    /// delivered over a day ago is forgotten (then enqueued again as new), one delivered 23 h
    /// before kept.
    #[test]
    fn the_outbox_keeps_what_the_rules_declare() {
        let mut rules = crate::config::fleet_alert_rules();
        rules.outbox_pending_max.count = 3;
        rules.outbox_delivered_kept.seconds = 86400;
        let dir = tempfile::tempdir().unwrap();
        let o = Outbox::open(dir.path(), RedactionGate::default(), Limits::of(&rules)).unwrap();
        let t0 = time(1_700_000_000);
        let mut dropped = 0;
        for i in 0..4 {
            let t = t0 + chrono::Duration::seconds(i);
            dropped += o
                .enqueue(&alert(&format!("r{i}"), AlertEvent::Reminder), &["c"], t)
                .unwrap()
                .dropped;
        }
        assert_eq!((dropped, o.pending(Some("c")).unwrap()), (1, 3));
        assert_eq!(o.due(t0).unwrap()[0].alert.id, "r1");

        let day = chrono::Duration::days(1);
        o.delivered("r1", "c", t0).unwrap();
        o.delivered("r2", "c", t0 + chrono::Duration::hours(1))
            .unwrap();
        let later = t0 + day + chrono::Duration::seconds(1);
        assert_eq!(
            o.prune(later).unwrap(),
            1,
            "r1, over a day old, is forgotten"
        );
        let again = |id: &str| {
            o.enqueue(&alert(id, AlertEvent::Reminder), &["c"], later)
                .unwrap()
        };
        assert_eq!(again("r1").added, 1, "forgotten: new again");
        assert_eq!(again("r2").known, 1, "23 h old: still known");
    }

    #[test]
    fn a_firing_goes_only_when_no_reminder_is_left() {
        let dir = tempfile::tempdir().unwrap();
        let o = Outbox::open(dir.path(), RedactionGate::default(), limits()).unwrap();
        let t0 = time(1_700_000_000);
        o.enqueue(&alert("reminder", AlertEvent::Reminder), &["c"], t0)
            .unwrap();
        for i in 0..limits().max_pending_per_channel {
            let t = t0 + chrono::Duration::seconds(i as i64 + 1);
            o.enqueue(&alert(&format!("f{i}"), AlertEvent::Firing), &["c"], t)
                .unwrap();
        }
        // Full: the reminder went first.
        let ids: Vec<String> = o.due(t0).unwrap().into_iter().map(|i| i.alert.id).collect();
        assert_eq!(ids[0], "f0");
        let t = t0 + chrono::Duration::hours(1);
        let e = o
            .enqueue(&alert("recovered", AlertEvent::Recovered), &["c"], t)
            .unwrap();
        assert_eq!(e.dropped, 1);
        // No reminder left: the oldest firing went (and said so in the log).
        assert_eq!(o.due(t0).unwrap()[0].alert.id, "f1");
        assert_eq!(
            o.pending(Some("c")).unwrap(),
            limits().max_pending_per_channel
        );
    }

    #[test]
    fn stored_text_passes_the_gate() {
        let dir = tempfile::tempdir().unwrap();
        let secret = "s3cr3t-token-value";
        let o = Outbox::open(
            dir.path(),
            RedactionGate::new([secret.to_string()]),
            limits(),
        )
        .unwrap();
        let mut a = alert("a", AlertEvent::Firing);
        a.reason = Some(format!("said {secret}"));
        o.enqueue(&a, &["c"], time(1)).unwrap();
        o.failed(
            "a",
            "c",
            &SendError {
                retryable: true,
                reason: format!("HTTP 500 {secret}"),
            },
            time(2),
        )
        .unwrap();
        drop(o);
        let bytes = std::fs::read(dir.path().join(OUTBOX_FILE)).unwrap();
        let wal = std::fs::read(dir.path().join(format!("{OUTBOX_FILE}-wal"))).unwrap_or_default();
        for b in [bytes, wal] {
            assert!(!b.windows(secret.len()).any(|w| w == secret.as_bytes()));
        }
    }

    /// `alerts test`'s outbox starts each test afresh: an earlier test still pending is
    /// dropped, and a channel's backoff from it forgotten, so the new test is due at once; each
    /// channel's outcome is read back by the test's id.
    #[test]
    fn starting_over_drops_what_is_pending_and_forgets_every_backoff() {
        let dir = tempfile::tempdir().unwrap();
        let o =
            Outbox::open_file(dir.path(), "t.sqlite", RedactionGate::default(), limits()).unwrap();
        assert!(dir.path().join("t.sqlite").exists());
        let now = time(1_700_000_100);
        let first = alert("test:1", AlertEvent::Test);
        o.enqueue(&first, &["ntfy", "hook"], now).unwrap();
        o.delivered(&first.id, "hook", now).unwrap();
        let error = SendError {
            retryable: true,
            reason: "connection refused".into(),
        };
        o.failed(&first.id, "ntfy", &error, now).unwrap();
        assert_eq!(
            o.outcomes(&first.id).unwrap(),
            [
                ("ntfy".to_string(), None),
                ("hook".to_string(), Some("delivered".to_string()))
            ]
        );
        assert_eq!(o.start_over(now).unwrap(), 1);
        assert_eq!(o.pending(None).unwrap(), 0);
        assert!(o.health().unwrap().is_empty());
        let second = alert("test:2", AlertEvent::Test);
        o.enqueue(&second, &["ntfy"], now).unwrap();
        let due = o.due(now).unwrap();
        assert_eq!(due.len(), 1, "no backoff left");
        assert_eq!(
            due[0].alert.event,
            AlertEvent::Test,
            "a test reads back as one"
        );
    }
}

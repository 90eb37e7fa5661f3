//! The outbox: every (alert, channel that wants it) pair, kept in `state_dir` until delivered.
//!
//! Delivery is at least once: an item leaves the pending set only after its channel said yes.
//! The pair (alert id, channel) is the dedupe key, and a delivered pair is remembered for
//! [`DELIVERED_KEPT`], so an engine that re-raises the same alert after a crash, or a restart
//! with items pending, sends nothing twice and loses nothing (the one window left is a crash
//! between the channel's yes and the row's update: then it is sent again, as at-least-once says).
//!
//! A failing channel backs off as a whole (exponential, [`BACKOFF_FIRST`] doubling up to
//! [`BACKOFF_MAX`]) and is reported (`failing_since`, the last reason) for the page. The
//! pending set is bounded per channel ([`MAX_PENDING_PER_CHANNEL`]): past it the oldest reminders
//! go first; a Firing or Recovered is dropped only when nothing else is left, and says so in the
//! log. The store is SQLite (WAL) in `state_dir`; every call here blocks, so the async side
//! ([`Delivery`]) runs them on blocking threads. A file there that is not a usable outbox of
//! ours is moved aside and replaced, never deleted ([`Outbox::open`]): as the engine's state
//! file, a corrupt outbox is a fresh start said in the log, not a stopped collector.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result};
use chrono::{DateTime, TimeZone, Utc};
use fleetdash_model::{Asc, Band};
use rusqlite::config::DbConfig;
use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};

use super::provider::{Provider, SendError};
use super::{Alert, AlertEvent};
use crate::redact::RedactionGate;

/// The outbox's file in `state_dir`.
pub const OUTBOX_FILE: &str = "alerts-outbox.sqlite";
/// A failing channel's first wait before it is tried again; each further failure doubles it.
pub const BACKOFF_FIRST: Duration = Duration::from_secs(10);
/// The longest wait between two tries of a failing channel (Gatus and Uptime Kuma retry
/// notifications on the order of minutes; a phone alert later than this is of little use).
pub const BACKOFF_MAX: Duration = Duration::from_secs(10 * 60);
/// Pending items per channel; past it the oldest reminders are dropped first. A day of a
/// channel down, with an alert and its reminders every few minutes, stays under it.
pub const MAX_PENDING_PER_CHANNEL: usize = 500;
/// How long a delivered (alert, channel) pair is remembered (its key only: the alert's body
/// goes once it is done), so a re-raised alert is not sent again: far longer than a restart.
pub const DELIVERED_KEPT: Duration = Duration::from_secs(2 * 24 * 3600);
/// Items taken per channel per delivery pass: one pass stays bounded in time.
pub const BATCH_PER_CHANNEL: usize = 20;
/// One send's deadline on top of the channel's own HTTP timeout: nothing holds the loop.
pub const SEND_DEADLINE: Duration = Duration::from_secs(30);
/// How often the delivery loop looks for due items.
pub const DELIVERY_TICK: Duration = Duration::from_secs(5);
/// How often the delivery loop forgets old delivered pairs and folds the WAL back.
pub const PRUNE_EVERY: Duration = Duration::from_secs(3600);

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
}

fn event_from(name: &str) -> Option<AlertEvent> {
    [
        AlertEvent::Firing,
        AlertEvent::Recovered,
        AlertEvent::Reminder,
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
}

/// What [`Outbox::enqueue`] did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Enqueued {
    /// New pending items.
    pub added: usize,
    /// Pairs already pending or already delivered: the dedupe key held.
    pub known: usize,
    /// Items dropped to keep a channel under [`MAX_PENDING_PER_CHANNEL`].
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
}

fn secs(t: DateTime<Utc>) -> i64 {
    t.timestamp()
}

fn time(s: i64) -> DateTime<Utc> {
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
    /// Opens (or creates) the outbox in `state_dir`. `gate` passes every stored text.
    ///
    /// A file there that is not a usable outbox of ours (not SQLite, corrupt, another
    /// program's database, a newer schema) is moved aside to
    /// `alerts-outbox.sqlite.corrupt-<UTC stamp>` with its `-wal` and `-shm`, said at error
    /// level with both paths and why, and a fresh outbox takes its place: alerting goes on, and
    /// the operator's file is never deleted. Any other failure (the folder unwritable, the file
    /// busy) is returned, with nothing moved.
    pub fn open(state_dir: &Path, gate: RedactionGate) -> Result<Outbox> {
        std::fs::create_dir_all(state_dir)
            .with_context(|| format!("cannot create state_dir {}", state_dir.display()))?;
        let path = state_dir.join(OUTBOX_FILE);
        let conn = match open_checked(&path) {
            Ok(conn) => conn,
            Err(Refused::Failed(e)) => return Err(e),
            Err(Refused::NotOurs(reason)) => {
                let aside = move_aside(&path, Utc::now())?;
                tracing::error!(
                    file = %path.display(),
                    moved_to = %aside.display(),
                    %reason,
                    "alert outbox unusable: moved aside, a fresh one takes its place (what was \
                     pending in it is not sent)"
                );
                match open_checked(&path) {
                    Ok(conn) => conn,
                    Err(Refused::Failed(e)) => return Err(e),
                    Err(Refused::NotOurs(reason)) => anyhow::bail!(
                        "the fresh alert outbox {} is not usable either: {reason}",
                        path.display()
                    ),
                }
            }
        };
        Ok(Outbox {
            conn: Mutex::new(conn),
            path,
            gate,
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
        let stored = self.gate.to_json(&Stored::of(alert))?.to_string();
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        let mut out = Enqueued::default();
        for channel in channels {
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
            out.dropped += bound(&tx, channel, now)?;
        }
        tx.commit()?;
        Ok(out)
    }

    /// The due items of every channel not backing off, oldest first, at most
    /// [`BATCH_PER_CHANNEL`] per channel.
    pub fn due(&self, now: DateTime<Utc>) -> Result<Vec<Item>> {
        let conn = self.conn();
        let mut stmt = conn.prepare(
            "SELECT o.channel, o.alert, o.attempts FROM outbox o
             LEFT JOIN channels c ON c.channel = o.channel
             WHERE o.done_at IS NULL AND (c.retry_at IS NULL OR c.retry_at <= ?1)
             ORDER BY o.channel, o.enqueued_at, o.rowid",
        )?;
        let rows = stmt.query_map(params![secs(now)], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, u32>(2)?,
            ))
        })?;
        let mut out: Vec<Item> = Vec::new();
        let mut per_channel = 0;
        for row in rows {
            let (channel, text, attempts) = row?;
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
            });
        }
        Ok(out)
    }

    /// The channel took the item: it is done, and the channel is fine again.
    pub fn delivered(&self, alert_id: &str, channel: &str, now: DateTime<Utc>) -> Result<()> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        tx.execute(
            "UPDATE outbox SET alert = '', done_at = ?3, outcome = 'delivered', attempts = attempts + 1
             WHERE alert_id = ?1 AND channel = ?2",
            params![alert_id, channel, secs(now)],
        )?;
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
        let reason = self.gate.redact_str(&error.reason).into_owned();
        let mut conn = self.conn();
        let tx = conn.transaction()?;
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

    /// Forgets delivered pairs older than [`DELIVERED_KEPT`], and folds the WAL back into the
    /// file (it would otherwise stay at its high-water mark).
    pub fn prune(&self, now: DateTime<Utc>) -> Result<usize> {
        let cutoff = now - chrono::Duration::from_std(DELIVERED_KEPT)?;
        let conn = self.conn();
        let n = conn.execute(
            "DELETE FROM outbox WHERE done_at IS NOT NULL AND done_at < ?1",
            params![secs(cutoff)],
        )?;
        conn.execute_batch("PRAGMA incremental_vacuum;")?;
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
        Ok(n)
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

/// "FDAO": a fleetdash alert outbox (SQLite's `application_id`), so that a file of another
/// program is told apart from ours and never has our tables added to it.
pub const APPLICATION_ID: i32 = 0x4644_414F;
/// The outbox's schema (`user_version`). An outbox from before the mark (no application id,
/// version 0) is recognised by its tables and columns, then marked.
pub const SCHEMA_VERSION: i32 = 1;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS outbox (
    alert_id TEXT NOT NULL,
    channel TEXT NOT NULL,
    event TEXT NOT NULL,
    alert TEXT NOT NULL,
    enqueued_at INTEGER NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    -- NULL while pending; set when delivered or refused for good.
    done_at INTEGER,
    outcome TEXT,
    PRIMARY KEY (alert_id, channel)
);
CREATE INDEX IF NOT EXISTS outbox_pending ON outbox (channel, done_at, enqueued_at);
CREATE TABLE IF NOT EXISTS channels (
    channel TEXT PRIMARY KEY,
    failing_since INTEGER,
    last_reason TEXT,
    failures INTEGER NOT NULL DEFAULT 0,
    retry_at INTEGER
);";

/// Each table of [`SCHEMA`] with its columns, in order: what makes a file ours.
const TABLES: &[(&str, &[&str])] = &[
    (
        "outbox",
        &[
            "alert_id",
            "channel",
            "event",
            "alert",
            "enqueued_at",
            "attempts",
            "done_at",
            "outcome",
        ],
    ),
    (
        "channels",
        &[
            "channel",
            "failing_since",
            "last_reason",
            "failures",
            "retry_at",
        ],
    ),
];

/// Why [`open_checked`] did not hand back a connection.
enum Refused {
    /// The file is not a usable outbox of ours: it is moved aside.
    NotOurs(String),
    /// Anything else (cannot open, busy, cannot write): nothing is moved.
    Failed(anyhow::Error),
}

/// Opens `path`, reads whether it is ours (reads only), then sets it up: WAL, durable
/// commits, the schema and its mark.
fn open_checked(path: &Path) -> std::result::Result<Connection, Refused> {
    let failed = |what: &str, e: rusqlite::Error| {
        Refused::Failed(anyhow::Error::new(e).context(format!("{what} {}", path.display())))
    };
    let conn = Connection::open(path).map_err(|e| failed("cannot open the alert outbox", e))?;
    let setup = |e| failed("cannot set up the alert outbox", e);
    conn.busy_timeout(Duration::from_secs(5)).map_err(setup)?;
    // While it is not known to be ours, closing must not checkpoint: SQLite would then delete
    // the file's -wal, which goes aside with it untouched.
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)
        .map_err(setup)?;
    let version = inspect(&conn)?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, false)
        .map_err(setup)?;
    // Before the first table: lets prune hand freed pages back (a new file only).
    conn.pragma_update(None, "auto_vacuum", "INCREMENTAL")
        .map_err(setup)?;
    conn.pragma_update(None, "journal_mode", "WAL")
        .map_err(setup)?;
    conn.pragma_update(None, "synchronous", "FULL")
        .map_err(setup)?;
    conn.execute_batch(SCHEMA).map_err(setup)?;
    if version < SCHEMA_VERSION {
        conn.pragma_update(None, "application_id", APPLICATION_ID)
            .map_err(setup)?;
        conn.pragma_update(None, "user_version", SCHEMA_VERSION)
            .map_err(setup)?;
    }
    Ok(conn)
}

/// The file's schema version, once it is known to be a healthy outbox of ours (marked, or
/// from before the mark with exactly our tables) or an empty database. Reads only.
fn inspect(conn: &Connection) -> std::result::Result<i32, Refused> {
    let refused = |e: rusqlite::Error| match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::NotADatabase) => {
            Refused::NotOurs(format!("not a SQLite database ({e})"))
        }
        Some(rusqlite::ErrorCode::DatabaseCorrupt) => {
            Refused::NotOurs(format!("the database is corrupt ({e})"))
        }
        _ => Refused::Failed(anyhow::Error::new(e).context("cannot read the alert outbox")),
    };
    let tables: Vec<String> = {
        let mut stmt = conn
            .prepare(
                "SELECT name FROM sqlite_master WHERE type = 'table' \
                 AND name NOT LIKE 'sqlite_%' ORDER BY name",
            )
            .map_err(refused)?;
        let rows = stmt.query_map([], |r| r.get(0)).map_err(refused)?;
        rows.collect::<rusqlite::Result<_>>().map_err(refused)?
    };
    let app: i32 = conn
        .pragma_query_value(None, "application_id", |r| r.get(0))
        .map_err(refused)?;
    let version: i32 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .map_err(refused)?;
    // The whole file, not just its first page: a truncated outbox reads its header fine. The
    // outbox is small (bounded per channel), so this costs little, once per start.
    let check: String = conn
        .query_row("PRAGMA quick_check(1)", [], |r| r.get(0))
        .map_err(refused)?;
    if check != "ok" {
        return Err(Refused::NotOurs(format!(
            "the database is corrupt ({check})"
        )));
    }
    if app != APPLICATION_ID && (app != 0 || version != 0) {
        return Err(Refused::NotOurs(format!(
            "a SQLite database of another program (application_id {app:#x}, user_version \
             {version})"
        )));
    }
    if version > SCHEMA_VERSION {
        return Err(Refused::NotOurs(format!(
            "an outbox of a newer fleetdash (schema {version}; this build reads up to \
             {SCHEMA_VERSION})"
        )));
    }
    if tables.is_empty() {
        return Ok(version);
    }
    let mut ours: Vec<&str> = TABLES.iter().map(|(t, _)| *t).collect();
    ours.sort_unstable();
    if tables != ours {
        return Err(Refused::NotOurs(format!(
            "not an alert outbox (its tables: {})",
            tables.join(", ")
        )));
    }
    for (table, columns) in TABLES {
        let mut stmt = conn
            .prepare("SELECT name FROM pragma_table_info(?1) ORDER BY cid")
            .map_err(refused)?;
        let found: Vec<String> = stmt
            .query_map([table], |r| r.get(0))
            .map_err(refused)?
            .collect::<rusqlite::Result<_>>()
            .map_err(refused)?;
        if found != *columns {
            return Err(Refused::NotOurs(format!(
                "not an alert outbox (table {table} has columns {})",
                found.join(", ")
            )));
        }
    }
    Ok(version)
}

/// Moves `path` (and its `-wal`, `-shm`) to `<path>.corrupt-<UTC stamp of now>`, never over
/// an existing file. The `-wal` goes first: a fresh file must never meet the old file's log,
/// which SQLite would replay into it. Returns where the file went.
fn move_aside(path: &Path, now: DateTime<Utc>) -> Result<PathBuf> {
    let stamp = now.format("%Y%m%dT%H%M%SZ");
    let with = |p: &Path, suffix: &str| {
        let mut s = p.as_os_str().to_owned();
        s.push(suffix);
        PathBuf::from(s)
    };
    let taken = |p: &Path| {
        ["", "-wal", "-shm"]
            .iter()
            .any(|s| with(p, s).symlink_metadata().is_ok())
    };
    let mut aside = with(path, &format!(".corrupt-{stamp}"));
    let mut n = 1;
    while taken(&aside) {
        aside = with(path, &format!(".corrupt-{stamp}-{n}"));
        n += 1;
    }
    for suffix in ["-wal", "-shm", ""] {
        let from = with(path, suffix);
        if suffix.is_empty() || from.symlink_metadata().is_ok() {
            let to = with(&aside, suffix);
            std::fs::rename(&from, &to).with_context(|| {
                format!(
                    "the alert outbox is unusable and cannot be moved aside: {} -> {}",
                    from.display(),
                    to.display()
                )
            })?;
        }
    }
    Ok(aside)
}

/// Drops the oldest items of `channel` past [`MAX_PENDING_PER_CHANNEL`]: reminders first,
/// then (loudly) anything else. Returns how many went.
fn bound(tx: &rusqlite::Transaction<'_>, channel: &str, now: DateTime<Utc>) -> Result<usize> {
    let pending: i64 = tx.query_row(
        "SELECT COUNT(*) FROM outbox WHERE done_at IS NULL AND channel = ?1",
        params![channel],
        |r| r.get(0),
    )?;
    let mut over = (pending as usize).saturating_sub(MAX_PENDING_PER_CHANNEL);
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

/// What one delivery pass did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Pass {
    pub delivered: usize,
    pub failed: usize,
}

/// The outbox and its channels: enqueues what each channel wants, and delivers due items.
pub struct Delivery {
    outbox: Arc<Outbox>,
    providers: Vec<Arc<dyn Provider>>,
    /// Rung by an enqueue: a new alert goes out now, not at the loop's next tick.
    wake: tokio::sync::Notify,
}

impl Delivery {
    pub fn new(outbox: Arc<Outbox>, providers: Vec<Arc<dyn Provider>>) -> Delivery {
        Delivery {
            outbox,
            providers,
            wake: tokio::sync::Notify::new(),
        }
    }

    /// The configured channels over the outbox in the config's `state_dir` (opened off the
    /// runtime), ready for [`Delivery::spawn`]; for the wiring in `fleetdash run`.
    pub async fn from_config(
        config: &crate::config::Config,
        gate: RedactionGate,
    ) -> Result<Delivery> {
        let dir = config.state_dir.clone();
        let outbox = tokio::task::spawn_blocking(move || Outbox::open(&dir, gate)).await??;
        Ok(Delivery::new(
            Arc::new(outbox),
            super::provider::build(config),
        ))
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
        let channels: Vec<String> = self
            .providers
            .iter()
            .filter(|p| p.wants(&alert))
            .map(|p| p.name().to_string())
            .collect();
        let outbox = self.outbox.clone();
        let enqueued = tokio::task::spawn_blocking(move || {
            let names: Vec<&str> = channels.iter().map(String::as_str).collect();
            outbox.enqueue(&alert, &names, now)
        })
        .await??;
        self.wake.notify_one();
        Ok(enqueued)
    }

    /// Sends every due item, in order per channel, the channels side by side (a hanging one
    /// holds up no other); a channel's first failure ends its turn in this pass (it backs
    /// off). Each send is bounded by [`SEND_DEADLINE`].
    pub async fn pass(&self, now: DateTime<Utc>) -> Result<Pass> {
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
            .map(|(provider, items)| self.channel_turn(provider, items, now));
        let mut pass = Pass::default();
        for turn in futures::future::join_all(turns).await {
            let turn = turn?;
            pass.delivered += turn.delivered;
            pass.failed += turn.failed;
        }
        Ok(pass)
    }

    /// One channel's due items, in order, until the first failure.
    async fn channel_turn(
        &self,
        provider: Arc<dyn Provider>,
        items: Vec<Item>,
        now: DateTime<Utc>,
    ) -> Result<Pass> {
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
            match result {
                Ok(()) => {
                    pass.delivered += 1;
                    tokio::task::spawn_blocking(move || outbox.delivered(&id, &channel, now))
                        .await??;
                }
                Err(e) => {
                    pass.failed += 1;
                    tokio::task::spawn_blocking(move || outbox.failed(&id, &channel, &e, now))
                        .await??;
                    break;
                }
            }
        }
        Ok(pass)
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
                let now = Utc::now();
                if let Err(e) = self.pass(now).await {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn alert(id: &str, event: AlertEvent) -> Alert {
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
        }
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
            let o = Outbox::open(dir.path(), RedactionGate::default()).unwrap();
            let e = o.enqueue(&a, &["ntfy", "hook"], now).unwrap();
            assert_eq!((e.added, e.known), (2, 0));
            let e = o.enqueue(&a, &["ntfy"], now).unwrap();
            assert_eq!((e.added, e.known), (0, 1));
        }
        let o = Outbox::open(dir.path(), RedactionGate::default()).unwrap();
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
        let o = Outbox::open(dir.path(), RedactionGate::default()).unwrap();
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
        let o = Outbox::open(dir.path(), RedactionGate::default()).unwrap();
        let t0 = time(1_700_000_000);
        o.enqueue(&alert("firing", AlertEvent::Firing), &["c"], t0)
            .unwrap();
        let mut dropped = 0;
        for i in 0..MAX_PENDING_PER_CHANNEL + 5 {
            let t = t0 + chrono::Duration::seconds(i as i64 + 1);
            dropped += o
                .enqueue(&alert(&format!("r{i}"), AlertEvent::Reminder), &["c"], t)
                .unwrap()
                .dropped;
        }
        assert_eq!(dropped, 6);
        assert_eq!(o.pending(Some("c")).unwrap(), MAX_PENDING_PER_CHANNEL);
        let due = o.due(t0).unwrap();
        // The older firing is kept; the oldest reminders went.
        assert_eq!(due[0].alert.id, "firing");
        assert_eq!(due[1].alert.id, "r6");
    }

    #[test]
    fn a_firing_goes_only_when_no_reminder_is_left() {
        let dir = tempfile::tempdir().unwrap();
        let o = Outbox::open(dir.path(), RedactionGate::default()).unwrap();
        let t0 = time(1_700_000_000);
        o.enqueue(&alert("reminder", AlertEvent::Reminder), &["c"], t0)
            .unwrap();
        for i in 0..MAX_PENDING_PER_CHANNEL {
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
        assert_eq!(o.pending(Some("c")).unwrap(), MAX_PENDING_PER_CHANNEL);
    }

    /// The files in `dir` whose name says they were moved aside.
    fn aside(dir: &Path) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().contains(".corrupt-"))
            .collect();
        out.sort();
        out
    }

    #[test]
    fn a_fresh_outbox_is_marked_and_reopened_as_ours() {
        let dir = tempfile::tempdir().unwrap();
        drop(Outbox::open(dir.path(), RedactionGate::default()).unwrap());
        let conn = Connection::open(dir.path().join(OUTBOX_FILE)).unwrap();
        let app: i32 = conn
            .pragma_query_value(None, "application_id", |r| r.get(0))
            .unwrap();
        let version: i32 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!((app, version), (APPLICATION_ID, SCHEMA_VERSION));
        drop(conn);
        drop(Outbox::open(dir.path(), RedactionGate::default()).unwrap());
        assert!(aside(dir.path()).is_empty());
    }

    #[test]
    fn an_outbox_of_a_newer_schema_or_with_other_tables_goes_aside() {
        for sql in [
            format!("PRAGMA user_version = {};", SCHEMA_VERSION + 1),
            "CREATE TABLE extra (x);".to_string(),
            "ALTER TABLE outbox ADD COLUMN extra TEXT;".to_string(),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let o = Outbox::open(dir.path(), RedactionGate::default()).unwrap();
            o.enqueue(&alert("a", AlertEvent::Firing), &["c"], time(1))
                .unwrap();
            drop(o);
            let conn = Connection::open(dir.path().join(OUTBOX_FILE)).unwrap();
            conn.execute_batch(&sql).unwrap();
            drop(conn);
            let o = Outbox::open(dir.path(), RedactionGate::default()).unwrap();
            assert_eq!(o.rows().unwrap(), 0, "{sql}: a fresh outbox");
            // With its -wal and -shm beside it, as the open that refused it left them.
            let moved: Vec<PathBuf> = aside(dir.path())
                .into_iter()
                .filter(|p| {
                    !p.to_string_lossy().ends_with("-wal") && !p.to_string_lossy().ends_with("-shm")
                })
                .collect();
            assert_eq!(moved.len(), 1, "{sql}: {moved:?}");
            // The operator's file is whole: its alert is still in it.
            let old = Connection::open(&moved[0]).unwrap();
            let n: i64 = old
                .query_row("SELECT COUNT(*) FROM outbox", [], |r| r.get(0))
                .unwrap();
            assert_eq!(n, 1, "{sql}");
        }
    }

    #[test]
    fn a_second_corrupt_file_in_the_same_second_does_not_replace_the_first() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(OUTBOX_FILE);
        let at: DateTime<Utc> = "2026-11-30T12:00:00Z".parse().unwrap();
        let first = dir
            .path()
            .join(format!("{OUTBOX_FILE}.corrupt-20261130T120000Z"));
        std::fs::write(&first, "first").unwrap();
        let mut moved = Vec::new();
        for junk in ["second", "third"] {
            std::fs::write(&file, junk).unwrap();
            moved.push(move_aside(&file, at).unwrap());
        }
        assert_eq!(std::fs::read_to_string(&first).unwrap(), "first");
        let said: Vec<String> = moved
            .iter()
            .map(|p| std::fs::read_to_string(p).unwrap())
            .collect();
        assert_eq!(said, ["second", "third"]);
        assert!(!moved.contains(&first), "{moved:?}");
        assert_eq!(aside(dir.path()).len(), 3);
    }

    #[test]
    fn stored_text_passes_the_gate() {
        let dir = tempfile::tempdir().unwrap();
        let secret = "s3cr3t-token-value";
        let o = Outbox::open(dir.path(), RedactionGate::new([secret.to_string()])).unwrap();
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
}

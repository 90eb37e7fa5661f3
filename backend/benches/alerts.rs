//! Benchmark of the alert outbox: its size over a simulated week with one channel down for a
//! day, and what enqueueing and a delivery pass cost. It prints figures beside their targets
//! and asserts no timing; it asserts the data it measures (every alert delivered to the healthy
//! channel, the bound held, no Firing or Recovered dropped), so it cannot pass on empty work.
//!
//! Run at the repository root:
//!
//!     cargo bench -p fleetdash --bench alerts
//!
//! (`--profile dev` builds it without a release build, on a machine short of disk.)
//!
//! The week, one delivery pass per simulated minute through the real outbox (SQLite in a temp
//! folder, fsync on every commit) and in-process channels (no network: the outbox is measured,
//! not a receiver):
//! - [`FLAPPERS`] elements fire and recover every [`FLAP_EVERY_MIN`] minutes;
//! - [`STILL_RED`] elements stay red all week with a reminder every [`REMINDER_MIN`] minutes;
//! - two channels want everything: "ntfy" is always up, "hook" is down on day [`DOWN_DAY`].
//!
//! `FLEETDASH_BENCH_QUICK=1` simulates three days (the channel down on the second).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use chrono::{DateTime, TimeZone, Utc};
use fleetdash::alerting::outbox::{Delivery, Limits, OUTBOX_FILE, Outbox};
use fleetdash::alerting::provider::{Provider, SendError};
use fleetdash::alerting::{Alert, AlertEvent};
use fleetdash::redact::RedactionGate;
use fleetdash_model::{Asc, Band};

const FLAPPERS: usize = 5;
const FLAP_EVERY_MIN: i64 = 120;
const STILL_RED: usize = 20;
const REMINDER_MIN: i64 = 30;
const DOWN_DAY: i64 = 3;
const MIN_PER_DAY: i64 = 24 * 60;
/// The outbox file (with its WAL) should stay under this after a week.
const TARGET_BYTES: u64 = 4 * 1024 * 1024;

struct Channel {
    name: &'static str,
    down: AtomicBool,
    sent: AtomicUsize,
}

#[async_trait]
impl Provider for Channel {
    fn name(&self) -> &str {
        self.name
    }
    fn wants(&self, _: &Alert) -> bool {
        true
    }
    async fn send(&self, _: &Alert) -> Result<(), SendError> {
        if self.down.load(Ordering::Relaxed) {
            return Err(SendError {
                retryable: true,
                reason: "HTTP 503".into(),
            });
        }
        self.sent.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
    async fn send_group(&self, alerts: &[Alert]) -> Result<(), SendError> {
        for alert in alerts {
            self.send(alert).await?;
        }
        Ok(())
    }
}

fn alert(element: usize, event: AlertEvent, since: DateTime<Utc>, n: i64) -> Alert {
    Alert {
        id: format!(
            "agent:a{element}:{}:{}:{n}",
            event.as_str(),
            since.timestamp()
        ),
        key: format!("agent:a{element}"),
        kind: "agent".into(),
        name: format!("a{element}"),
        event,
        band: if event == AlertEvent::Recovered {
            Band::Green
        } else {
            Band::Red
        },
        reason: Some("unreachable".into()),
        status: Asc::DEPENDENCY_UNAVAILABLE,
        since,
        at: since,
        takes_down: vec![],
        link: Some("https://fleet.example/".into()),
        detail: None,
    }
}

fn file_bytes(dir: &std::path::Path) -> u64 {
    ["", "-wal", "-shm"]
        .iter()
        .filter_map(|s| std::fs::metadata(dir.join(format!("{OUTBOX_FILE}{s}"))).ok())
        .map(|m| m.len())
        .sum()
}

fn main() {
    let quick = std::env::var_os("FLEETDASH_BENCH_QUICK").is_some();
    let (days, down_day) = if quick { (3, 2) } else { (7, DOWN_DAY) };
    println!("== fleetdash alerts bench ==");
    println!(
        "{days} days, a pass a minute; {FLAPPERS} elements flapping every {FLAP_EVERY_MIN} min, \
         {STILL_RED} red all along with a reminder every {REMINDER_MIN} min; \"hook\" down on day {down_day}"
    );
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let up = Arc::new(Channel {
        name: "ntfy",
        down: AtomicBool::new(false),
        sent: AtomicUsize::new(0),
    });
    let flaky = Arc::new(Channel {
        name: "hook",
        down: AtomicBool::new(false),
        sent: AtomicUsize::new(0),
    });
    // The shipped rules' `alert_outbox` bounds.
    let rules = fleetdash::config::Rules::parse(
        std::path::Path::new("config/rules.yaml"),
        include_str!("../../config/rules.yaml"),
    )
    .unwrap_or_else(|e| panic!("config/rules.yaml: {e}"));
    let limits = Limits::of(&rules.alerts);
    let max_pending_per_channel = limits.max_pending_per_channel;
    let outbox = Arc::new(Outbox::open(dir.path(), RedactionGate::default(), limits).unwrap());
    let d = Delivery::new(outbox.clone(), vec![up.clone(), flaky.clone()]);
    let t0 = Utc.timestamp_opt(1_800_000_000, 0).unwrap();
    let (mut raised, mut dropped) = (0usize, 0usize);
    let (mut enqueue_time, mut pass_time, mut passes) = (Duration::ZERO, Duration::ZERO, 0u32);
    let mut max_pending = 0;
    rt.block_on(async {
        for minute in 0..days * MIN_PER_DAY {
            let now = t0 + chrono::Duration::minutes(minute);
            let day = minute / MIN_PER_DAY + 1;
            flaky.down.store(day == down_day, Ordering::Relaxed);
            let mut new = Vec::new();
            if minute % FLAP_EVERY_MIN == 0 {
                let event = if (minute / FLAP_EVERY_MIN) % 2 == 0 {
                    AlertEvent::Firing
                } else {
                    AlertEvent::Recovered
                };
                new.extend((0..FLAPPERS).map(|e| alert(e, event, now, 0)));
            }
            if minute == 0 {
                new.extend((0..STILL_RED).map(|e| alert(100 + e, AlertEvent::Firing, t0, 0)));
            } else if minute % REMINDER_MIN == 0 {
                let n = minute / REMINDER_MIN;
                new.extend((0..STILL_RED).map(|e| alert(100 + e, AlertEvent::Reminder, t0, n)));
            }
            for a in new {
                let started = Instant::now();
                let e = d.enqueue(a, now).await.unwrap();
                enqueue_time += started.elapsed();
                raised += 1;
                dropped += e.dropped;
            }
            let started = Instant::now();
            d.pass(now).await.unwrap();
            pass_time += started.elapsed();
            passes += 1;
            max_pending = max_pending.max(outbox.pending(Some("hook")).unwrap());
            if (minute + 1) % MIN_PER_DAY == 0 {
                outbox.prune(now).unwrap();
                println!(
                    "day {day}: hook pending {:>4}, rows kept {:>6}, file {:>8} bytes",
                    outbox.pending(Some("hook")).unwrap(),
                    outbox.rows().unwrap(),
                    file_bytes(dir.path())
                );
            }
        }
    });
    let bytes = file_bytes(dir.path());
    println!(
        "alerts raised {raised}; delivered: ntfy {}, hook {}; dropped from hook {dropped} (the oldest reminders first)",
        up.sent.load(Ordering::Relaxed),
        flaky.sent.load(Ordering::Relaxed)
    );
    println!(
        "hook's most pending {max_pending} (bound {max_pending_per_channel}: {})",
        if max_pending <= max_pending_per_channel {
            "ok"
        } else {
            "MISSED"
        }
    );
    println!(
        "outbox after the week: {} rows, {bytes} bytes (target < {TARGET_BYTES}: {})",
        outbox.rows().unwrap(),
        if bytes < TARGET_BYTES { "ok" } else { "MISSED" }
    );
    println!(
        "enqueue {:.2} ms per alert, pass {:.2} ms per pass ({passes} passes)",
        enqueue_time.as_secs_f64() * 1e3 / raised as f64,
        pass_time.as_secs_f64() * 1e3 / passes as f64
    );
    // The data, not the speed: the healthy channel got every alert, the bound held, the down
    // channel lost only reminders and got everything pending once it came back.
    assert_eq!(up.sent.load(Ordering::Relaxed), raised);
    assert!(max_pending <= max_pending_per_channel);
    assert_eq!(flaky.sent.load(Ordering::Relaxed) + dropped, raised);
    assert_eq!(outbox.pending(None).unwrap(), 0);
}

//! Where the three clocks are read: this host's ([`SystemClocks`]), or a test's, moved by hand
//! ([`ManualClocks`]) to step, sleep and pass time at will.

use std::sync::Mutex;
use std::time::Duration;

use chrono::{DateTime, Utc};

/// The three clocks at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reading {
    /// What is written and shown; it steps.
    pub wall: DateTime<Utc>,
    /// Never steps; stops while the host sleeps.
    pub mono: Duration,
    /// Never steps; counts a sleep.
    pub boot: Duration,
}

/// Something that reads the three clocks.
pub trait Clocks: Send + Sync + std::panic::RefUnwindSafe + std::panic::UnwindSafe {
    fn read(&self) -> Reading;
}

/// This host's clocks: `CLOCK_REALTIME` (through chrono, as every stamp is made), and the
/// kernel's `CLOCK_MONOTONIC` and `CLOCK_BOOTTIME`.
pub struct SystemClocks;

impl Clocks for SystemClocks {
    fn read(&self) -> Reading {
        use rustix::time::{ClockId, clock_gettime};
        let duration = |t: rustix::time::Timespec| {
            Duration::new(
                u64::try_from(t.tv_sec).unwrap_or(0),
                u32::try_from(t.tv_nsec).unwrap_or(0),
            )
        };
        let mono = duration(clock_gettime(ClockId::Monotonic));
        let boot = duration(clock_gettime(ClockId::Boottime));
        Reading {
            wall: Utc::now(),
            mono,
            boot,
        }
    }
}

/// A test's clocks: they move only when told, each as the host's would.
pub struct ManualClocks {
    reading: Mutex<Reading>,
}

impl ManualClocks {
    /// Clocks whose wall clock reads `wall`, a day after boot.
    pub fn at(wall: DateTime<Utc>) -> ManualClocks {
        let day = Duration::from_secs(86_400);
        ManualClocks {
            reading: Mutex::new(Reading {
                wall,
                mono: day,
                boot: day,
            }),
        }
    }

    fn change(&self, f: impl FnOnce(&mut Reading)) {
        f(&mut self.reading.lock().unwrap_or_else(|e| e.into_inner()));
    }

    /// Time passes: every clock moves on by `d`.
    pub fn pass(&self, d: Duration) {
        self.change(|r| {
            r.wall += chrono::Duration::from_std(d).expect("a test's duration");
            r.mono += d;
            r.boot += d;
        });
    }

    /// The wall clock alone moves by `seconds` (back when negative): a step.
    pub fn step(&self, seconds: i64) {
        self.change(|r| r.wall += chrono::Duration::seconds(seconds));
    }

    /// The host sleeps `d`: the wall and boot clocks move on, the monotonic one does not.
    pub fn sleep(&self, d: Duration) {
        self.change(|r| {
            r.wall += chrono::Duration::from_std(d).expect("a test's duration");
            r.boot += d;
        });
    }

    pub fn wall(&self) -> DateTime<Utc> {
        self.read().wall
    }
}

impl Clocks for ManualClocks {
    fn read(&self) -> Reading {
        *self.reading.lock().unwrap_or_else(|e| e.into_inner())
    }
}

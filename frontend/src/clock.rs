//! Wall-clock time in the browser, as one signal that ticks every second.

use chrono::{DateTime, Utc};
use leptos::prelude::*;

const TICK: std::time::Duration = std::time::Duration::from_secs(1);

thread_local! {
    /// How far the server's clock is ahead of the browser's, from the last response's `Date`.
    static SERVER_OFFSET_MS: std::cell::Cell<i64> = const { std::cell::Cell::new(0) };
}

/// The browser's time (`Utc::now` needs a clock the wasm target does not have).
pub fn browser_now() -> DateTime<Utc> {
    DateTime::from_timestamp_millis(js_sys::Date::now() as i64).unwrap_or_default()
}

/// The current time by the server's clock: ages and staleness are judged against the clock
/// that wrote the snapshot, so a phone whose clock is off raises no false alarm (nor hides one).
pub fn now() -> DateTime<Utc> {
    browser_now() + chrono::Duration::milliseconds(SERVER_OFFSET_MS.with(|o| o.get()))
}

/// Learns the server's clock from a response's `Date` header (whole seconds, good enough).
pub fn sync_with_server(server_date: DateTime<Utc>) {
    let offset = (server_date - browser_now()).num_milliseconds();
    SERVER_OFFSET_MS.with(|o| o.set(offset));
}

/// The reader's zone, as the browser knows it now: times of day are said in it.
pub fn offset() -> chrono::FixedOffset {
    // getTimezoneOffset is minutes *behind* UTC.
    let behind_min = js_sys::Date::new_0().get_timezone_offset() as i32;
    chrono::FixedOffset::west_opt(behind_min * 60)
        .unwrap_or_else(|| chrono::FixedOffset::east_opt(0).expect("UTC is an offset"))
}

/// A signal holding `now()`, refreshed every second.
pub fn provide_ticking_clock() -> ReadSignal<DateTime<Utc>> {
    let (time, set_time) = signal(now());
    set_interval(move || set_time.set(now()), TICK);
    time
}

pub use fleetdash_model::seconds_since;

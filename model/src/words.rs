//! The plain words the whole snapshot speaks in: an age ("3 h 5 min"), a count ("9,812"), a
//! value with one decimal ("97.9") and a moment ("19:12", "29 Nov 19:12").
//!
//! Below every type that speaks: alert holds, alert channels, queue tasks, the snapshot's
//! staleness and the glance all say their ages and times through these, so they read the same
//! everywhere. Written by hand: chrono's and Rust's float formatting cost the page kilobytes of
//! WebAssembly.
//!
//! The module is private: the crate root re-exports the age and the count words, so
//! [`one_decimal`] and [`moment`] stay the crate's own (they are `pub` here, not `pub(crate)`,
//! because the layering check reads `pub(crate)` as an import of the crate root).

use chrono::{DateTime, Datelike, FixedOffset, Timelike, Utc};

/// Whole seconds from `then` to `now`; 0 when the clocks disagree the other way.
pub fn seconds_since(then: DateTime<Utc>, now: DateTime<Utc>) -> u64 {
    u64::try_from((now - then).num_seconds()).unwrap_or(0)
}

/// "42 s", "7 min", "3 h 5 min", "2 d 4 h": how an operator says an age.
pub fn human_age(secs: u64) -> String {
    const MIN: u64 = 60;
    const HOUR: u64 = 60 * MIN;
    const DAY: u64 = 24 * HOUR;
    match secs {
        s if s < MIN => format!("{s} s"),
        s if s < HOUR => format!("{} min", s / MIN),
        s if s < DAY => match (s % HOUR) / MIN {
            0 => format!("{} h", s / HOUR),
            m => format!("{} h {m} min", s / HOUR),
        },
        s => match (s % DAY) / HOUR {
            0 => format!("{} d", s / DAY),
            h => format!("{} d {h} h", s / DAY),
        },
    }
}

/// "9,812": a count as the operator reads it, with a comma between thousands.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(d);
    }
    out
}

/// `value` with one decimal ("97.9"), written by hand: float formatting would add kilobytes
/// to the page's wasm.
pub fn one_decimal(value: f64) -> String {
    let tenths = (value * 10.0).round() as i64;
    let sign = if tenths < 0 { "-" } else { "" };
    format!("{sign}{}.{}", tenths.abs() / 10, tenths.abs() % 10)
}

/// A time within this many hours of now is said as "19:12"; older ones carry their date.
const SAME_DAY_H: i64 = 20;

/// "19:12" when `t` is within [`SAME_DAY_H`] of `now` (either way), else "29 Nov 19:12": a
/// time of day alone would name the wrong day.
pub fn moment(t: DateTime<Utc>, now: DateTime<Utc>, offset: FixedOffset) -> String {
    let local = t.with_timezone(&offset);
    let hm = format!("{:02}:{:02}", local.hour(), local.minute());
    if (now - t).num_hours().abs() < SAME_DAY_H {
        hm
    } else {
        format!("{} {} {hm}", local.day(), month(local.month()))
    }
}

/// "Jan" .. "Dec".
pub fn month(m: u32) -> &'static str {
    const NAMES: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    NAMES[(m.clamp(1, 12) - 1) as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_read_with_a_comma_between_thousands() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(9812), "9,812");
        assert_eq!(thousands(100_000), "100,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }

    #[test]
    fn ages_read_like_an_operator_says_them() {
        assert_eq!(human_age(42), "42 s");
        assert_eq!(human_age(7 * 60 + 3), "7 min");
        assert_eq!(human_age(3 * 3600 + 5 * 60), "3 h 5 min");
        assert_eq!(human_age(2 * 86400 + 4 * 3600), "2 d 4 h");
        assert_eq!(human_age(2 * 86400 + 59), "2 d");
    }
}

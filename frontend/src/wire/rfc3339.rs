//! RFC 3339 times, read by hand: chrono's parsing machinery cost the page 18 KB.

use chrono::{DateTime, Duration, NaiveDate, Utc};

/// An RFC 3339 time as chrono writes it ("2026-11-30T05:40:00.123456Z"), or with an offset
/// ("+02:00", "+0200") and `t` or a space between date and time, as chrono's parser also takes.
pub fn parse_time(s: &str) -> Option<DateTime<Utc>> {
    let b = s.as_bytes();
    let digits = |from: usize, len: usize| -> Option<u32> {
        b.get(from..from + len)?.iter().try_fold(0u32, |n, &c| {
            c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0'))
        })
    };
    let punctuated = b.get(4) == Some(&b'-')
        && b.get(7) == Some(&b'-')
        && matches!(b.get(10), Some(b'T' | b't' | b' '))
        && b.get(13) == Some(&b':')
        && b.get(16) == Some(&b':');
    if !punctuated {
        return None;
    }
    let date = NaiveDate::from_ymd_opt(digits(0, 4)? as i32, digits(5, 2)?, digits(8, 2)?)?;
    let (hour, minute, second) = (digits(11, 2)?, digits(14, 2)?, digits(17, 2)?);
    let mut i = 19;
    let mut nanos = 0;
    if b.get(i) == Some(&b'.') {
        let start = i + 1;
        i = start;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            // Digits past the ninth (below a nanosecond) are dropped, as chrono does.
            if i - start < 9 {
                nanos = nanos * 10 + u32::from(b[i] - b'0');
            }
            i += 1;
        }
        if i == start {
            return None;
        }
        nanos *= 10u32.pow(9u32.saturating_sub((i - start) as u32));
    }
    let offset_minutes = match &b[i..] {
        b"Z" | b"z" => 0,
        [sign @ (b'+' | b'-'), rest @ ..] => {
            let (h, m) = match rest {
                [_, _, b':', _, _] => (digits(i + 1, 2)?, digits(i + 4, 2)?),
                [_, _, _, _] => (digits(i + 1, 2)?, digits(i + 3, 2)?),
                _ => return None,
            };
            if h > 23 || m > 59 {
                return None;
            }
            let minutes = i64::from(h * 60 + m);
            if *sign == b'-' { -minutes } else { minutes }
        }
        _ => return None,
    };
    let local = date
        .and_hms_nano_opt(hour, minute, second, nanos)?
        .and_utc();
    Some(local - Duration::minutes(offset_minutes))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The times chrono writes and the variants its parser takes, read to the nanosecond as
    /// chrono reads them; what it refuses is refused.
    #[test]
    fn times_read_as_chrono_reads_them() {
        for s in [
            "2026-11-30T05:40:00Z",
            "2026-11-30T05:40:00.123456Z",
            "2026-11-30T05:40:00.123456789Z",
            "2026-11-30T05:40:00.1234567891Z",
            "2026-11-30T05:40:00.5z",
            "2026-11-30t05:40:00Z",
            "2026-11-30 05:40:00Z",
            "2026-11-30T05:40:00+02:00",
            "2026-11-30T05:40:00.25-09:30",
            "2026-11-30T05:40:00+0200",
            "2024-02-29T23:59:59-00:00",
            "0001-01-01T00:00:00Z",
        ] {
            let chrono: DateTime<Utc> = s.parse().unwrap();
            assert_eq!(parse_time(s), Some(chrono), "{s}");
        }
        for s in [
            "",
            "2026-11-30",
            "2026-11-30T05:40Z",
            "2026-11-30T05:40:00",
            "2026-11-30T05:40:00.Z",
            "2026-11-30T25:40:00Z",
            "2026-02-30T05:40:00Z",
            "2026-11-30T05:40:00+24:00",
            "2026-11-30T05:40:00+02",
            "2026-11-30T05:40:00Zjunk",
            "2026/11/30T05:40:00Z",
            "yesterday",
            "2026-11-30T05:40:00ü",
        ] {
            assert!(s.parse::<DateTime<Utc>>().is_err(), "chrono takes {s}");
            assert_eq!(parse_time(s), None, "{s}");
        }
    }
}

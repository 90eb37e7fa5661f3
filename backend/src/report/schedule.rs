//! When reports fall due: `[report] at` in its zone, every day or every week on its weekday,
//! as the zone's rules say on each date (a daylight-saving change moves no report off its
//! hour; an hour that does not exist that day is taken as the zone's rules take it, jiff's
//! "compatible" choice: the wall clock's hour after the gap).

use chrono::{DateTime, Utc};
use jiff::civil::Date;
use jiff::tz::TimeZone;

use crate::config::{Every, ReportConfig};

/// How far a search for a due moment looks (a week and a day: a weekly report is within it).
const SEARCH_DAYS: i64 = 8;

/// The first due moment strictly after `after`.
pub fn next_after(config: &ReportConfig, after: DateTime<Utc>) -> DateTime<Utc> {
    let tz = config.time_zone();
    let start = local_date(&tz, after);
    (-1..=SEARCH_DAYS)
        .filter_map(|d| {
            due_on(
                config,
                &tz,
                start.checked_add(jiff::Span::new().days(d)).ok()?,
            )
        })
        .find(|due| *due > after)
        .expect("a due moment within a week and a day")
}

/// The last due moment at or before `at`.
pub fn last_at_or_before(config: &ReportConfig, at: DateTime<Utc>) -> DateTime<Utc> {
    let tz = config.time_zone();
    let start = local_date(&tz, at);
    (-SEARCH_DAYS..=1)
        .rev()
        .filter_map(|d| {
            due_on(
                config,
                &tz,
                start.checked_add(jiff::Span::new().days(d)).ok()?,
            )
        })
        .find(|due| *due <= at)
        .expect("a due moment within a week and a day")
}

/// The title's first word: "Night" for a daily report in the morning, "Day" for another
/// daily one, "Week" for a weekly one.
pub fn word(config: &ReportConfig) -> &'static str {
    match config.every {
        Every::Week(_) => "Week",
        Every::Day if (3 * 60..12 * 60).contains(&config.at_minute) => "Night",
        Every::Day => "Day",
    }
}

fn local_date(tz: &TimeZone, at: DateTime<Utc>) -> Date {
    jiff::Timestamp::from_second(at.timestamp())
        .expect("a time within jiff's range")
        .to_zoned_datetime(tz.clone())
        .date()
}

/// The due moment on `date`, if a report is due that day.
fn due_on(config: &ReportConfig, tz: &TimeZone, date: Date) -> Option<DateTime<Utc>> {
    if let Every::Week(day) = config.every
        && date.weekday().to_monday_zero_offset() != day as i8
    {
        return None;
    }
    let hour = i8::try_from(config.at_minute / 60).ok()?;
    let minute = i8::try_from(config.at_minute % 60).ok()?;
    let zoned = date
        .at(hour, minute, 0, 0)
        .to_zoned_datetime(tz.clone())
        .ok()?;
    DateTime::from_timestamp(zoned.timestamp().as_second(), 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone as _;

    fn config(at_minute: u32, zone: &str, every: Every) -> ReportConfig {
        ReportConfig {
            at_minute,
            zone: Some((zone.into(), TimeZone::get(zone).unwrap())),
            every,
            channels: vec![],
        }
    }

    fn utc(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, mo, d, h, mi, 0).unwrap()
    }

    #[test]
    fn a_daily_report_keeps_its_hour_across_a_daylight_saving_change() {
        let c = config(7 * 60 + 30, "Europe/Berlin", Every::Day);
        // Saturday 28 March 2027, 07:30 CET is 06:30 UTC; Sunday 07:30 CEST is 05:30 UTC.
        assert_eq!(
            next_after(&c, utc(2027, 3, 27, 12, 0)),
            utc(2027, 3, 28, 5, 30)
        );
        assert_eq!(
            next_after(&c, utc(2027, 3, 27, 6, 0)),
            utc(2027, 3, 27, 6, 30)
        );
        assert_eq!(
            last_at_or_before(&c, utc(2027, 3, 28, 5, 29)),
            utc(2027, 3, 27, 6, 30)
        );
        assert_eq!(
            last_at_or_before(&c, utc(2027, 3, 28, 5, 30)),
            utc(2027, 3, 28, 5, 30)
        );
        assert_eq!(word(&c), "Night");
    }

    #[test]
    fn a_weekly_report_falls_on_its_weekday_and_an_hour_that_does_not_exist_is_the_next() {
        // Fridays at 18:05 in New York.
        let c = config(18 * 60 + 5, "America/New_York", Every::Week(4));
        // Wednesday 9 June 2027 → Friday 11 June, 18:05 EDT = 22:05 UTC.
        assert_eq!(
            next_after(&c, utc(2027, 6, 9, 12, 0)),
            utc(2027, 6, 11, 22, 5)
        );
        assert_eq!(word(&c), "Week");
        // 02:30 on 14 March 2027 does not exist in New York: the report goes at 03:30 EDT.
        let c = config(2 * 60 + 30, "America/New_York", Every::Day);
        assert_eq!(
            next_after(&c, utc(2027, 3, 14, 0, 0)),
            utc(2027, 3, 14, 7, 30)
        );
        assert_eq!(word(&c), "Day");
    }
}

//! `[report]` (issue 45): the report of a period, at the operator's hour. Off unless the
//! section is present:
//!
//! ```toml
//! [report]
//! at = "07:30"               # a time of day, in `zone`
//! zone = "Europe/Berlin"     # an IANA zone; default: this host's (TZ, else /etc/localtime)
//! every = "day"              # or "week", with `weekday = "mon"`
//! channels = ["phone"]       # default: every channel that is not a pager (not alertmanager)
//! ```

use jiff::tz::TimeZone;

use super::alerts::{AlertsConfig, ChannelTarget};
use super::table::Table;
use super::validator::Validator;

/// How often a report goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Every {
    Day,
    /// On this weekday (0 Monday .. 6 Sunday).
    Week(u8),
}

#[derive(Debug, Clone)]
pub struct ReportConfig {
    /// Minutes after midnight, in `zone`.
    pub at_minute: u32,
    /// `None`: this host's zone, read at each moment (a daylight-saving change needs no
    /// restart).
    pub zone: Option<(String, TimeZone)>,
    pub every: Every,
    /// The channels it goes to, by name.
    pub channels: Vec<String>,
}

impl ReportConfig {
    /// The zone's IANA name, or the host's ("UTC" when the host says none).
    pub fn zone_name(&self) -> String {
        match &self.zone {
            Some((name, _)) => name.clone(),
            None => TimeZone::system().iana_name().unwrap_or("UTC").to_string(),
        }
    }

    /// The zone, the host's when none is set.
    pub fn time_zone(&self) -> TimeZone {
        match &self.zone {
            Some((_, tz)) => tz.clone(),
            None => TimeZone::system(),
        }
    }
}

/// `"07:30"` as minutes after midnight; `None` unless it is a time of day as HH:MM.
pub fn minute_of_day(at: &str) -> Option<u32> {
    let digits = at.len() == 5
        && at.bytes().enumerate().all(|(i, b)| {
            if i == 2 {
                b == b':'
            } else {
                b.is_ascii_digit()
            }
        });
    let (h, m) = at.split_once(':').filter(|_| digits)?;
    let (h, m) = (h.parse::<u32>().ok()?, m.parse::<u32>().ok()?);
    (h < 24 && m < 60).then_some(h * 60 + m)
}

const WEEKDAYS: [&str; 7] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];

/// Reads `[report]` when present; the channels are checked against `alerts`' names.
pub(super) fn read(v: &mut Validator, mut t: Table, alerts: &AlertsConfig) -> Option<ReportConfig> {
    if !t.is_present() {
        t.finish(v);
        return None;
    }
    let at = t.required_string(v, "at", "a time of day such as \"07:30\"");
    let zone = t.string_as(v, "zone", "an IANA zone such as \"Europe/Berlin\"");
    let every = t.string_as(v, "every", "\"day\" or \"week\"");
    let weekday = t.string_as(v, "weekday", "a weekday such as \"mon\"");
    let channels = t.strings(v, "channels");
    t.finish(v);

    let at_minute = at.and_then(|at| {
        let parsed = minute_of_day(at.get_ref());
        if parsed.is_none() {
            v.error(
                &at,
                t.field("at"),
                "expected a time of day as HH:MM, such as \"07:30\"",
            );
        }
        parsed
    });
    let zone = zone.and_then(|z| match TimeZone::get(z.get_ref()) {
        Ok(tz) => Some((z.get_ref().clone(), tz)),
        Err(_) => {
            v.error(
                &z,
                t.field("zone"),
                format!(
                    "no time zone {:?} on this host (an IANA name such as \"Europe/Berlin\"; \
                     Debian's tzdata has them)",
                    z.get_ref()
                ),
            );
            None
        }
    });
    let day = match &weekday {
        None => None,
        Some(w) => match WEEKDAYS
            .iter()
            .position(|d| w.get_ref().to_lowercase().starts_with(d))
        {
            Some(i) => Some(i as u8),
            None => {
                v.error(
                    w,
                    t.field("weekday"),
                    "expected a weekday: mon, tue, wed, thu, fri, sat or sun",
                );
                None
            }
        },
    };
    let every = match every.as_ref().map(|e| e.get_ref().as_str()) {
        None | Some("day") => {
            if let Some(w) = &weekday {
                v.error(
                    w,
                    t.field("weekday"),
                    "a weekday goes with every = \"week\"",
                );
            }
            Every::Day
        }
        Some("week") => Every::Week(day.unwrap_or(0)),
        Some(_) => {
            let e = every.as_ref().expect("matched");
            v.error(e, t.field("every"), "expected \"day\" or \"week\"");
            Every::Day
        }
    };
    let known: Vec<&str> = alerts.channels.iter().map(|c| c.name.as_str()).collect();
    let channels = match channels {
        None => alerts
            .channels
            .iter()
            .filter(|c| !matches!(c.target, ChannelTarget::Alertmanager(_)))
            .map(|c| c.name.clone())
            .collect(),
        Some(list) => {
            let mut names = Vec::new();
            for (j, name) in list.get_ref() {
                match alerts.channels.iter().find(|c| c.name == *name.get_ref()) {
                    None => v.error(
                        name,
                        t.field(&format!("channels[{j}]")),
                        format!("no alert channel named {:?} (the channels: {known:?})", name.get_ref()),
                    ),
                    Some(c) if matches!(c.target, ChannelTarget::Alertmanager(_)) => v.error(
                        name,
                        t.field(&format!("channels[{j}]")),
                        "Alertmanager is a pager: a report is not an alert, and it would stay firing",
                    ),
                    Some(c) => names.push(c.name.clone()),
                }
            }
            names
        }
    };
    Some(ReportConfig {
        at_minute: at_minute.unwrap_or(0),
        zone,
        every,
        channels,
    })
}

#[cfg(test)]
mod tests {
    use super::Every;
    use crate::config::fixtures::{errors, parse};

    const NTFY: &str = "[[alerts.channels]]\ntype = \"ntfy\"\nname = \"phone\"\nurl = \"https://ntfy.sh/x\"\n\
        [[alerts.channels]]\ntype = \"alertmanager\"\nurl = \"http://127.0.0.1:9093/\"\n";

    #[test]
    fn a_report_is_off_unless_set_and_goes_to_every_channel_but_the_pager() {
        assert!(parse("").unwrap().report.is_none());
        let c = parse(&format!("{NTFY}[report]\nat = \"07:30\"\n")).unwrap();
        let r = c.report.unwrap();
        assert_eq!((r.at_minute, r.every), (450, Every::Day));
        assert_eq!(r.channels, ["phone"]);
        let c = parse(&format!(
            "{NTFY}[report]\nat = \"18:05\"\nzone = \"America/New_York\"\nevery = \"week\"\nweekday = \"fri\"\n"
        ))
        .unwrap();
        let r = c.report.unwrap();
        assert_eq!((r.at_minute, r.every), (18 * 60 + 5, Every::Week(4)));
        assert_eq!(r.zone_name(), "America/New_York");
    }

    #[test]
    fn a_wrong_hour_zone_weekday_or_channel_is_named_with_its_line() {
        let e = errors(&format!(
            "{NTFY}[report]\nat = \"7:30\"\nzone = \"Mars/Olympus\"\nevery = \"week\"\nweekday = \"someday\"\nchannels = [\"pager\", \"alertmanager\"]\n"
        ));
        for wanted in [
            "report.at",
            "report.zone",
            "report.weekday",
            "report.channels[0]",
            "report.channels[1]",
        ] {
            assert!(e.iter().any(|e| e.contains(wanted)), "{wanted}: {e:?}");
        }
        assert!(e.iter().any(|e| e.contains("Mars/Olympus")), "{e:?}");
    }
}

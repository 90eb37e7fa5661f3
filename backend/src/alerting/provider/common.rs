//! What the channels share: which alerts a channel wants (its bands and sections), the alert in
//! words as a message's body, its token read at send time (a rotated token needs no restart),
//! and an HTTP answer judged as a delivery (2xx yes; 408, 429 and 5xx retry; any other status is
//! the request being wrong). It imports no channel: each channel imports it.

use fleetdash_model::Band;

use super::SendError;
use crate::alerting::{Alert, AlertEvent};
use crate::config::{ChannelConfig, TokenSource};
use crate::net::{HttpReply, ProbeFailure};

/// An HTTP channel's request deadline (the outbox adds its own on top).
pub const HTTP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
/// The most of a channel's reply read (an ntfy or webhook answer is a small JSON).
pub const REPLY_MAX_BYTES: usize = 64 * 1024;

/// A channel's filter: the bands and sections it wants.
#[derive(Debug, Clone, Default)]
pub struct Wants {
    /// Empty: red only.
    pub bands: Vec<Band>,
    /// Empty: every section.
    pub sections: Vec<String>,
}

impl Wants {
    pub fn of(config: &ChannelConfig) -> Wants {
        Wants {
            bands: config.bands.clone(),
            sections: config.sections.clone(),
        }
    }

    /// A section matches an alert's kind (`agent` or `agents`) or, for a stale section, its
    /// name. A recovery is judged by the band it ends: only red fires, so a channel hears a
    /// recovery exactly when it heard (or would have heard) the red.
    pub fn wants(&self, alert: &Alert) -> bool {
        // A test is for whichever channel the operator tries, whatever it filters. A report
        // goes where `[report]` says (it is kept for those channels alone), never by bands.
        match alert.event {
            AlertEvent::Test => return true,
            AlertEvent::Report => return false,
            _ => {}
        }
        let section_ok = self.sections.is_empty()
            || self.sections.iter().any(|s| {
                *s == alert.kind
                    || s.strip_suffix('s') == Some(alert.kind.as_str())
                    || (alert.kind == "section" && *s == alert.name)
            });
        let band = match alert.event {
            AlertEvent::Recovered => Band::Red,
            _ => alert.band,
        };
        let band_ok = if self.bands.is_empty() {
            band == Band::Red
        } else {
            self.bands.contains(&band)
        };
        section_ok && band_ok
    }
}

/// The alert in words, as a message's body (ntfy's, the hub's): the headline, then what it
/// takes down.
pub fn message(alert: &Alert) -> String {
    // A report: the whole of it (its text leads with its verdict).
    if let (AlertEvent::Report, Some(detail)) = (alert.event, &alert.detail) {
        return detail.clone();
    }
    let mut text = alert.headline();
    if !alert.takes_down.is_empty() {
        // A recovery names what the root had taken down: "takes down" under "recovered" read as
        // still broken (issue 43).
        let said = if alert.event == AlertEvent::Recovered {
            "had taken down"
        } else {
            "takes down"
        };
        text.push_str(&format!("\n{said}: {}", alert.takes_down.join(", ")));
    }
    // A task or a card is named by its title or its agent (issue 43: words, not ids, on the
    // phone); its id is here, in the details.
    if matches!(alert.kind.as_str(), "task" | "card") {
        text.push_str(&format!("\nid: {}", alert.key));
    }
    text
}

/// Which alerts of a group one part of its title counts.
type Lot = fn(&Alert) -> bool;

/// Names shown per kind in a group's title before "… (2 more)".
pub const GROUP_NAMES_SHOWN: usize = 3;

/// What an alert says of its element in a title, in the page's words: "red", "amber",
/// "still red", "recovered" (never the machinery's "firing").
pub fn said(alert: &Alert) -> &'static str {
    match (alert.event, alert.band == Band::Red) {
        (AlertEvent::Firing, true) => "red",
        (AlertEvent::Firing, false) => "amber",
        (AlertEvent::Reminder, true) => "still red",
        (AlertEvent::Reminder, false) => "still amber",
        (AlertEvent::Recovered, _) => "recovered",
        (AlertEvent::Test, _) => "test",
        (AlertEvent::Report, _) => "report",
    }
}

/// A group's title, one line a phone shows whole: per event and band, how many and which,
/// by kind: "5 red: agents orin, vega, kai … (2 more); host prod · 1 recovered: agent lyra".
pub fn group_title(alerts: &[Alert]) -> String {
    let mut parts = Vec::new();
    let lots: [(&str, Lot); 5] = [
        ("red", |a| {
            a.event == AlertEvent::Firing && a.band == Band::Red
        }),
        ("amber", |a| {
            a.event == AlertEvent::Firing && a.band != Band::Red
        }),
        ("still red", |a| {
            a.event == AlertEvent::Reminder && a.band == Band::Red
        }),
        ("still amber", |a| {
            a.event == AlertEvent::Reminder && a.band != Band::Red
        }),
        ("recovered", |a| a.event == AlertEvent::Recovered),
    ];
    for (words, of_lot) in lots {
        let lot: Vec<&Alert> = alerts.iter().filter(|a| of_lot(a)).collect();
        if lot.is_empty() {
            continue;
        }
        let mut kinds: Vec<(&str, Vec<&str>)> = Vec::new();
        for a in &lot {
            match kinds.iter_mut().find(|(k, _)| *k == a.kind) {
                Some((_, names)) => names.push(&a.name),
                None => kinds.push((&a.kind, vec![&a.name])),
            }
        }
        let by_kind: Vec<String> = kinds
            .iter()
            .map(|(kind, names)| {
                let noun = if names.len() == 1 {
                    kind.to_string()
                } else {
                    format!("{kind}s")
                };
                let mut shown = names
                    .iter()
                    .take(GROUP_NAMES_SHOWN)
                    .copied()
                    .collect::<Vec<_>>()
                    .join(", ");
                if names.len() > GROUP_NAMES_SHOWN {
                    shown.push_str(&format!(" … ({} more)", names.len() - GROUP_NAMES_SHOWN));
                }
                format!("{noun} {shown}")
            })
            .collect();
        parts.push(format!("{} {words}: {}", lot.len(), by_kind.join("; ")));
    }
    parts.join(" · ")
}

/// A group in words, as a message's body: its title, then each alert's own message.
pub fn group_message(alerts: &[Alert]) -> String {
    let mut text = group_title(alerts);
    for a in alerts {
        text.push('\n');
        text.push_str(&message(a));
    }
    text
}

/// A group's dedupe key, stable for the same alerts: a receiver that saw it (delivery is at
/// least once) can tell a repeat.
pub fn group_id(alerts: &[Alert]) -> String {
    let mut ids: Vec<&str> = alerts.iter().map(|a| a.id.as_str()).collect();
    ids.sort_unstable();
    let digest = ring::digest::digest(&ring::digest::SHA256, ids.join("\n").as_bytes());
    let hex: String = digest.as_ref()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("group:{hex}:{}", alerts.len())
}

/// The channel's token, read now from where the config says.
pub fn token(source: Option<&TokenSource>) -> Result<Option<String>, SendError> {
    crate::config::read_token(source).map_err(|f| SendError {
        // The operator can set it without anything else changing: keep the alert.
        retryable: true,
        reason: f.reason,
    })
}

/// A transport failure (refused, timed out, oversized): worth another try. Its reason never
/// holds the URL (`crate::net`).
pub fn transport(f: ProbeFailure) -> SendError {
    SendError {
        retryable: true,
        reason: f.reason,
    }
}

/// The channel's answer as a delivery.
pub fn judge(reply: &HttpReply) -> Result<(), SendError> {
    match reply.status {
        200..=299 => Ok(()),
        408 | 429 | 500..=599 => Err(SendError {
            retryable: true,
            reason: format!("HTTP {}", reply.status),
        }),
        s => Err(SendError {
            retryable: false,
            reason: format!("HTTP {s} (the channel refuses the request: check its config)"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleetdash_model::Asc;

    /// The tests' clock: one fixed moment, so that no outcome depends on the day they run.
    fn fixed_now() -> chrono::DateTime<chrono::Utc> {
        "2026-11-30T12:00:00Z".parse().expect("an RFC 3339 instant")
    }

    fn alert(kind: &str, band: Band, event: AlertEvent) -> Alert {
        Alert {
            id: "x".into(),
            key: format!("{kind}:a"),
            kind: kind.into(),
            name: "agents".into(),
            event,
            band,
            reason: None,
            status: Asc::DEPENDENCY_UNAVAILABLE,
            since: fixed_now(),
            at: fixed_now(),
            takes_down: vec![],
            link: None,
            detail: None,
        }
    }

    #[test]
    fn a_groups_title_counts_each_lot_and_names_a_few_of_each_kind() {
        let named = |kind: &str, name: &str, band: Band, event: AlertEvent| Alert {
            name: name.into(),
            ..alert(kind, band, event)
        };
        let group = [
            named("agent", "a", Band::Red, AlertEvent::Reminder),
            named("agent", "b", Band::Red, AlertEvent::Reminder),
            named("agent", "c", Band::Red, AlertEvent::Reminder),
            named("agent", "d", Band::Red, AlertEvent::Reminder),
            named("cron", "db-dump on prod", Band::Amber, AlertEvent::Firing),
            named("host", "lab", Band::Green, AlertEvent::Recovered),
        ];
        assert_eq!(
            group_title(&group),
            "1 amber: cron db-dump on prod · 4 still red: agents a, b, c … (1 more) · \
             1 recovered: host lab"
        );
        let body = group_message(&group);
        assert_eq!(
            body.lines().count(),
            7,
            "the title, then each alert: {body}"
        );
        // The same alerts in any order are the same group.
        let mut reversed = group.clone();
        reversed.reverse();
        assert_eq!(group_id(&group), group_id(&reversed));
    }

    #[test]
    fn bands_and_sections_filter_and_recoveries_pass() {
        let w = Wants {
            bands: vec![],
            sections: vec!["agents".into()],
        };
        assert!(w.wants(&alert("agent", Band::Red, AlertEvent::Firing)));
        assert!(!w.wants(&alert("agent", Band::Amber, AlertEvent::Firing)));
        assert!(!w.wants(&alert("host", Band::Red, AlertEvent::Firing)));
        assert!(w.wants(&alert("section", Band::Red, AlertEvent::Firing)));
        assert!(w.wants(&alert("agent", Band::Green, AlertEvent::Recovered)));
        let amber = Wants {
            bands: vec![Band::Amber],
            sections: vec![],
        };
        assert!(amber.wants(&alert("host", Band::Amber, AlertEvent::Reminder)));
        assert!(!amber.wants(&alert("host", Band::Red, AlertEvent::Firing)));
        // It never heard the red, so it does not hear it end.
        assert!(!amber.wants(&alert("host", Band::Green, AlertEvent::Recovered)));
        let red_and_amber = Wants {
            bands: vec![Band::Amber, Band::Red],
            sections: vec![],
        };
        assert!(red_and_amber.wants(&alert("host", Band::Green, AlertEvent::Recovered)));
    }

    /// Issue 43: a root's Firing says what it takes down; its Recovered what it had taken down
    /// ("takes down" under "recovered" read as still broken). A task's or a card's id is in the
    /// details, its title or agent in the headline.
    #[test]
    fn a_message_says_what_a_root_takes_down_and_a_tasks_id_in_its_details() {
        let mut fired = alert("tunnel", Band::Red, AlertEvent::Firing);
        fired.name = "osprey-fwd on trialbox".into();
        fired.takes_down = vec!["agent osprey".into()];
        assert!(message(&fired).ends_with("\ntakes down: agent osprey"));
        let back = Alert {
            event: AlertEvent::Recovered,
            band: Band::Green,
            ..fired
        };
        assert!(message(&back).ends_with("\nhad taken down: agent osprey"));
        let mut task = alert("task", Band::Red, AlertEvent::Firing);
        task.key = "task:lyra/4dd0be78-1619-4aaa-ba50-c4139d9ac7e4".into();
        task.name = "on lyra".into();
        let text = message(&task);
        assert!(text.starts_with("✖ fail · task on lyra"), "{text}");
        assert!(
            text.ends_with("\nid: task:lyra/4dd0be78-1619-4aaa-ba50-c4139d9ac7e4"),
            "{text}"
        );
    }
}

//! ntfy (https://docs.ntfy.sh/publish/): a POST to the topic URL whose body is the message
//! ([`common::message`]), with the `Title`, `Priority`, `Tags` and `Click` headers; an optional
//! bearer token. With the dashboard's URL configured, `Actions` buttons too: "Open" (the page
//! at the element's row) and, on a red, "Silence 1 h" and "Acknowledge", each a signed link
//! for that element that works once ([`crate::alerting::phone`]).

use async_trait::async_trait;
use base64::Engine;
use chrono::{DateTime, Utc};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use super::common::{self, Wants};
use super::{Provider, SendError};
use crate::alerting::phone::{Action, LinkMaker};
use crate::alerting::{Alert, AlertEvent};
use crate::config::TokenSource;
use crate::net::ProbeClient;
use fleetdash_model::Band;
use serde_json::{Value, json};

pub struct Ntfy {
    name: String,
    url: url::Url,
    token: Option<TokenSource>,
    wants: Wants,
    client: ProbeClient,
    links: Option<std::sync::Arc<LinkMaker>>,
}

impl Ntfy {
    pub fn new(name: &str, url: url::Url, token: Option<TokenSource>, wants: Wants) -> Ntfy {
        Ntfy {
            name: name.to_string(),
            url,
            token,
            wants,
            client: ProbeClient::new(common::HTTP_TIMEOUT, common::REPLY_MAX_BYTES),
            links: None,
        }
    }

    /// The same channel with action buttons, their links made by `links`.
    pub fn with_actions(mut self, links: std::sync::Arc<LinkMaker>) -> Ntfy {
        self.links = Some(links);
        self
    }

    /// The `Actions` header's JSON (ntfy's JSON form: a URL may hold commas): "Open" at the
    /// element's row; on a red still open, "Silence 1 h" and "Acknowledge" for it, and until
    /// when their links work. None without the dashboard's URL; a link that cannot be signed
    /// (the key unreadable) leaves its button out and is logged: the alert still goes.
    ///
    /// A link is valid for `phone_actions.link_valid_seconds` from when the notification
    /// leaves (issue 32), not from the alert's moment: one held back (a channel down, quiet
    /// hours) arrives with buttons that work.
    async fn actions(&self, alert: Option<&Alert>) -> Option<(String, Option<DateTime<Utc>>)> {
        let links = self.links.clone()?;
        let Some(alert) = alert else {
            let open = json!({"action": "view", "label": "Open", "url": links.page()});
            return Some((Value::Array(vec![open]).to_string(), None));
        };
        let mut until = None;
        let mut buttons = vec![json!({
            "action": "view",
            "label": "Open",
            "url": links.open(&alert.kind, &alert.name),
        })];
        if alert.event != AlertEvent::Recovered {
            let (key, leaves) = (alert.key.clone(), Utc::now());
            let made = tokio::task::spawn_blocking({
                let links = links.clone();
                move || -> anyhow::Result<(String, String)> {
                    Ok((
                        links.link(&key, Action::Silence, leaves)?,
                        links.link(&key, Action::Ack, leaves)?,
                    ))
                }
            })
            .await;
            match made {
                Ok(Ok((silence, ack))) => {
                    until = Some(links.expires(leaves));
                    for (label, url) in [
                        (links.silence_label(), silence),
                        ("Acknowledge".into(), ack),
                    ] {
                        buttons.push(json!({
                            "action": "http",
                            "label": label,
                            "url": url,
                            "method": "POST",
                            "clear": true,
                        }));
                    }
                }
                Ok(Err(e)) => tracing::warn!(channel = %self.name, "no action buttons: {e:#}"),
                Err(e) => tracing::warn!(channel = %self.name, "no action buttons: {e}"),
            }
        }
        Some((Value::Array(buttons).to_string(), until))
    }

    /// The same channel with another request deadline (a test of a hanging receiver).
    pub fn with_timeout(mut self, timeout: std::time::Duration) -> Ntfy {
        self.client = ProbeClient::new(timeout, common::REPLY_MAX_BYTES);
        self
    }
}

/// ntfy's priority names (1 min .. 5 max): a new red wakes the phone, a reminder does not
/// repeat that, a recovery is quiet.
pub fn priority(alert: &Alert) -> &'static str {
    match (alert.event, alert.band) {
        (AlertEvent::Firing, Band::Red) => "high",
        (AlertEvent::Recovered | AlertEvent::Report, _) => "low",
        _ => "default",
    }
}

/// ntfy's tags: the first one that is an emoji shortcode is shown as the icon.
pub fn tags(alert: &Alert) -> String {
    let icon = match alert.event {
        AlertEvent::Firing => "rotating_light",
        AlertEvent::Reminder => "hourglass",
        AlertEvent::Test => "test_tube",
        AlertEvent::Recovered => "white_check_mark",
        AlertEvent::Report => "memo",
    };
    format!("{icon},{},{}", alert.band.word(), alert.kind)
}

/// A header value ntfy decodes: plain ASCII as is, else RFC 2047 (`=?UTF-8?B?...?=`), which
/// ntfy accepts for every header.
fn header_text(text: &str) -> HeaderValue {
    let flat: String = text.chars().filter(|c| !c.is_control()).collect();
    if flat.is_ascii()
        && let Ok(v) = HeaderValue::from_str(&flat)
    {
        return v;
    }
    let encoded = base64::engine::general_purpose::STANDARD.encode(flat.as_bytes());
    HeaderValue::from_str(&format!("=?UTF-8?B?{encoded}?=")).expect("base64 is a header value")
}

#[async_trait]
impl Provider for Ntfy {
    fn name(&self) -> &str {
        &self.name
    }

    fn wants(&self, alert: &Alert) -> bool {
        self.wants.wants(alert)
    }

    async fn send(&self, alert: &Alert) -> Result<(), SendError> {
        let title = match alert.event {
            AlertEvent::Test | AlertEvent::Report => alert.name.clone(),
            _ => format!("{} {}: {}", alert.kind, alert.name, common::said(alert)),
        };
        // A test or a report is no element's: its one button opens the page.
        let element =
            Some(alert).filter(|a| !matches!(a.event, AlertEvent::Test | AlertEvent::Report));
        let (actions, until) = self.actions(element).await.unzip();
        // A report's body is what a lock screen shows (its reason); the rest is a tap away.
        let mut body = match alert.event {
            AlertEvent::Report => alert.reason.clone().unwrap_or_default(),
            _ => common::message(alert),
        };
        if let Some(until) = until.flatten() {
            // Read late (the phone offline, the notification left unread), the buttons are
            // known dead without pressing them.
            body.push_str(&format!(
                "\nButtons work until {} UTC.",
                until.format("%Y-%m-%d %H:%M")
            ));
        }
        let message = Message {
            title: &title,
            priority: priority(alert),
            tags: &tags(alert),
            link: alert.link.as_deref(),
            body,
            actions,
            // A report sent again after a crash replaces its notification (ntfy 2.16+), not a
            // second one: its sequence id is its dedupe key.
            sequence: (alert.event == AlertEvent::Report).then(|| sequence_id(&alert.id)),
        };
        self.post(message).await
    }

    async fn send_group(&self, alerts: &[Alert]) -> Result<(), SendError> {
        // The loudest of its alerts: one new red wakes the phone, once.
        let loudest = alerts
            .iter()
            .max_by_key(|a| {
                ["min", "low", "default", "high"]
                    .iter()
                    .position(|p| *p == priority(a))
            })
            .expect("a group holds alerts");
        let title = common::group_title(alerts);
        let message = Message {
            title: &title,
            priority: priority(loudest),
            tags: &tags(loudest),
            link: alerts.iter().find_map(|a| a.link.as_deref()),
            body: common::group_message(alerts),
            actions: self.actions(None).await.map(|(json, _)| json),
            sequence: None,
        };
        self.post(message).await
    }
}

/// One ntfy message: its headers and body.
struct Message<'a> {
    title: &'a str,
    priority: &'static str,
    tags: &'a str,
    link: Option<&'a str>,
    body: String,
    /// The `Actions` header's JSON.
    actions: Option<String>,
    /// `X-Sequence-ID`: a message with the same one replaces the earlier (ntfy 2.16+).
    sequence: Option<String>,
}

/// ntfy's sequence ids are letters, digits, `-` and `_`: the dedupe key with anything else as
/// `_`.
pub fn sequence_id(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

impl Ntfy {
    async fn post(&self, message: Message<'_>) -> Result<(), SendError> {
        let token = common::token(self.token.as_ref())?;
        let mut headers = HeaderMap::new();
        headers.insert(HeaderName::from_static("title"), header_text(message.title));
        headers.insert(
            HeaderName::from_static("priority"),
            HeaderValue::from_static(message.priority),
        );
        headers.insert(HeaderName::from_static("tags"), header_text(message.tags));
        if let Some(link) = message.link {
            headers.insert(HeaderName::from_static("click"), header_text(link));
        }
        if let Some(actions) = &message.actions {
            headers.insert(HeaderName::from_static("actions"), header_text(actions));
        }
        if let Some(sequence) = &message.sequence {
            headers.insert(
                HeaderName::from_static("x-sequence-id"),
                header_text(sequence),
            );
        }
        headers.insert(
            reqwest::header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        let reply = self
            .client
            .post(
                self.url.clone(),
                headers,
                message.body.into_bytes(),
                token.as_deref(),
            )
            .await
            .map_err(common::transport)?;
        common::judge(&reply)
    }
}

//! A generic webhook: a JSON POST carrying the element (key, kind, name), the event, band,
//! reason, since / at, what it takes down, the page's link, and the element's Agent Status
//! Code in the ASC `agent_status` envelope (spec 000, as the intake's problem bodies carry it).
//! A group of alerts is one POST: `{"id", "group": {"title", "count"}, "alerts": [...]}`.

use async_trait::async_trait;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};

use super::common::{self, Wants};
use super::{Provider, SendError};
use crate::alerting::Alert;
use crate::config::TokenSource;
use crate::net::ProbeClient;

pub struct Webhook {
    name: String,
    url: url::Url,
    token: Option<TokenSource>,
    wants: Wants,
    client: ProbeClient,
}

impl Webhook {
    pub fn new(name: &str, url: url::Url, token: Option<TokenSource>, wants: Wants) -> Webhook {
        Webhook {
            name: name.to_string(),
            url,
            token,
            wants,
            client: ProbeClient::new(common::HTTP_TIMEOUT, common::REPLY_MAX_BYTES),
        }
    }

    /// The same channel with another request deadline (a test of a hanging receiver).
    pub fn with_timeout(mut self, timeout: std::time::Duration) -> Webhook {
        self.client = ProbeClient::new(timeout, common::REPLY_MAX_BYTES);
        self
    }
}

/// The JSON body. `id` is the dedupe key: a receiver that saw it already may drop the repeat
/// (delivery is at least once).
pub fn body(alert: &Alert) -> Value {
    json!({
        "id": alert.id,
        "element": {"key": alert.key, "kind": alert.kind, "name": alert.name},
        "event": alert.event.as_str(),
        "band": alert.band,
        "reason": alert.reason,
        "since": alert.since.to_rfc3339(),
        "at": alert.at.to_rfc3339(),
        "takes_down": alert.takes_down,
        "headline": alert.headline(),
        "link": alert.link,
        // A report's whole text (issue 45); absent for an element's alert.
        "report": alert.detail,
        "agent_status": {
            "code": alert.status.code,
            "name": alert.status.name,
            "scope": "element",
            // An element can always recover.
            "terminal": false,
        },
    })
}

/// A group's JSON body: its dedupe key, its one-line title, and every alert's own body, as one
/// POST (a receiver that wants them one by one iterates `alerts`).
pub fn group_body(alerts: &[Alert]) -> Value {
    json!({
        "id": common::group_id(alerts),
        "group": {"title": common::group_title(alerts), "count": alerts.len()},
        "alerts": alerts.iter().map(body).collect::<Vec<_>>(),
    })
}

#[async_trait]
impl Provider for Webhook {
    fn name(&self) -> &str {
        &self.name
    }

    fn wants(&self, alert: &Alert) -> bool {
        self.wants.wants(alert)
    }

    async fn send(&self, alert: &Alert) -> Result<(), SendError> {
        // The dedupe key as an `Idempotency-Key` too: a receiver that keeps them drops a report
        // sent again after a crash mid-send.
        self.post_keyed(&body(alert), Some(&alert.id)).await
    }

    async fn send_group(&self, alerts: &[Alert]) -> Result<(), SendError> {
        self.post_keyed(&group_body(alerts), None).await
    }
}

impl Webhook {
    async fn post_keyed(&self, body: &Value, key: Option<&str>) -> Result<(), SendError> {
        let token = common::token(self.token.as_ref())?;
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if let Some(key) = key.and_then(|k| HeaderValue::from_str(k).ok()) {
            headers.insert(HeaderName::from_static("idempotency-key"), key);
        }
        let reply = self
            .client
            .post(
                self.url.clone(),
                headers,
                body.to_string().into_bytes(),
                token.as_deref(),
            )
            .await
            .map_err(common::transport)?;
        common::judge(&reply)
    }
}

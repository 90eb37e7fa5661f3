//! Alertmanager (https://prometheus.io/docs/alerting/latest/clients/): alerts POSTed as a JSON
//! array to `/api/v2/alerts`, as Prometheus sends them, so a team that already routes, groups,
//! inhibits and silences there gets fleetdash's reds like any other alert.
//!
//! - Labels identify an alert in Alertmanager (its fingerprint), so they are the same on the
//!   firing and on its resolution, and bounded as the metrics' are: `alertname`, the element's
//!   `key`, `kind`, `name` and `section` (closed list), and `band`, the band it fired with
//!   (only red fires). The rest is annotations: the headline, the reason, what it takes down,
//!   the Agent Status Code (a recovered element's differs from its firing's, so it cannot be a
//!   label), the page's link also as `generatorURL`.
//! - A firing alert says it ends `ends_after` later; the run loop sends what is firing again
//!   every `resend` ([`Alertmanager::resend`], rules `alertmanager`), so Alertmanager keeps it
//!   firing while it lasts and resolves it by itself if fleetdash falls silent. A Recovered is
//!   the same labels with `endsAt` now: resolved at once.
//! - A group is one POST of every alert in it (Alertmanager groups again by its own routes).
//! - Several hubs, one Alertmanager cluster (docs/scale.md): the labels above identify the
//!   element on every hub alike; `hub` (the config's `hub`) says which hub saw it. Routes that
//!   group without `hub` make a storm both hubs see one notification; an inhibit rule with
//!   `equal: [hub]` lets a hub's own `fleetdash:reach` hold back only that hub's agents.
//! - A cluster (`urls`): every member gets every POST, as Prometheus sends to each of its
//!   Alertmanagers; the members' gossip (their notification log) makes one notification of
//!   it. A send is delivered when one member took it: the others may be down for an upgrade,
//!   and the resend brings them what is still firing when they are back.

use std::collections::BTreeMap;

use async_trait::async_trait;
use chrono::{DateTime, Duration, SecondsFormat, Utc};
use fleetdash_model::Band;
use serde_json::{Value, json};
use tokio::sync::Mutex;

use super::common::{self, Wants};
use super::{Provider, SendError};
use crate::alerting::{Alert, AlertEvent};
use crate::config::TokenSource;
use crate::deps::Deps;
use crate::net::ProbeClient;

/// Every fleetdash alert's `alertname`: an element of the fleet is red.
pub const ALERTNAME: &str = "FleetdashRed";
/// `fleetdash alerts test`'s `alertname`: routed as the operator routes it, never taken for a
/// red.
pub const TEST_ALERTNAME: &str = "FleetdashTest";

pub struct Alertmanager {
    name: String,
    /// Each member's `<base>/api/v2/alerts`.
    members: Vec<url::Url>,
    /// The `hub` label: which hub saw what it sends.
    hub: String,
    /// Whether each member refused the last POST, so its going down and coming back are
    /// logged once each, not at every resend.
    member_failing: std::sync::Mutex<Vec<bool>>,
    token: Option<TokenSource>,
    wants: Wants,
    /// How long after a send a firing alert ends unless sent again.
    ends_after: Duration,
    client: ProbeClient,
    /// One POST at a time: a resend of what was firing never lands after the Recovered that
    /// followed it.
    posting: Mutex<()>,
}

impl Alertmanager {
    pub fn new(
        name: &str,
        bases: &[url::Url],
        hub: &str,
        token: Option<TokenSource>,
        wants: Wants,
        ends_after: Duration,
    ) -> Alertmanager {
        Alertmanager {
            name: name.to_string(),
            members: bases.iter().map(alerts_endpoint).collect(),
            hub: hub.to_string(),
            member_failing: std::sync::Mutex::new(vec![false; bases.len()]),
            token,
            wants,
            ends_after,
            client: ProbeClient::new(common::HTTP_TIMEOUT, common::REPLY_MAX_BYTES),
            posting: Mutex::new(()),
        }
    }

    /// Sends again what is firing (`firing`: each open alert as a Firing, from the engine's
    /// state), those this channel wants, as one POST; nothing when none is.
    pub async fn resend(&self, firing: &[Alert]) -> Result<usize, SendError> {
        let wanted: Vec<Value> = firing
            .iter()
            .filter(|a| self.wants.wants(a))
            .map(|a| postable(a, &self.hub, self.ends_after))
            .collect();
        if wanted.is_empty() {
            return Ok(0);
        }
        self.post(&Value::Array(wanted.clone())).await?;
        Ok(wanted.len())
    }
}

/// Alertmanager's alerts API under `base`; a URL that already names it is kept.
pub fn alerts_endpoint(base: &url::Url) -> url::Url {
    if base
        .path()
        .trim_end_matches('/')
        .ends_with("/api/v2/alerts")
    {
        return base.clone();
    }
    let mut url = base.clone();
    let path = format!("{}/api/v2/alerts", base.path().trim_end_matches('/'));
    url.set_path(&path);
    url
}

fn time(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// One alert as Alertmanager's `postableAlert`, seen by `hub`.
pub fn postable(alert: &Alert, hub: &str, ends_after: Duration) -> Value {
    let resolved = alert.event == AlertEvent::Recovered;
    // The band it fired with: a resolution must carry the firing's labels.
    let fired_with = if resolved { Band::Red } else { alert.band };
    let mut labels = BTreeMap::from([
        (
            "alertname",
            match alert.event {
                AlertEvent::Test => TEST_ALERTNAME,
                _ => ALERTNAME,
            }
            .to_string(),
        ),
        ("key", alert.key.clone()),
        ("kind", alert.kind.clone()),
        ("name", alert.name.clone()),
        ("band", fired_with.class().to_string()),
        ("hub", hub.to_string()),
    ]);
    if let Some(section) = Deps::section_of(&alert.key) {
        let section = section.trim_start_matches("section:").to_string();
        labels.insert("section", section);
    }
    // An empty value is no label at all to Alertmanager: leave it out.
    labels.retain(|_, v| !v.is_empty());
    let mut annotations = BTreeMap::from([
        ("summary", alert.headline()),
        (
            "agent_status",
            format!("{} ({})", alert.status.name, alert.status.code),
        ),
    ]);
    if let Some(reason) = &alert.reason {
        annotations.insert("reason", reason.clone());
    }
    if !alert.takes_down.is_empty() {
        annotations.insert("takes_down", alert.takes_down.join(", "));
    }
    if let Some(link) = &alert.link {
        annotations.insert("link", link.clone());
    }
    // A Recovered's `since` is when it turned green; its red run began earlier, so Alertmanager
    // keeps the start it knows (the firing's) and takes the end.
    let (starts, ends) = if resolved {
        (alert.at.min(alert.since), alert.at)
    } else {
        (alert.since, alert.at + ends_after)
    };
    let mut body = json!({
        "labels": labels,
        "annotations": annotations,
        "startsAt": time(starts),
        "endsAt": time(ends),
    });
    if let Some(link) = &alert.link {
        body["generatorURL"] = Value::String(link.clone());
    }
    body
}

#[async_trait]
impl Provider for Alertmanager {
    fn name(&self) -> &str {
        &self.name
    }

    fn wants(&self, alert: &Alert) -> bool {
        self.wants.wants(alert)
    }

    async fn send(&self, alert: &Alert) -> Result<(), SendError> {
        self.post(&json!([postable(alert, &self.hub, self.ends_after)]))
            .await
    }

    async fn send_group(&self, alerts: &[Alert]) -> Result<(), SendError> {
        let all: Vec<Value> = alerts
            .iter()
            .map(|a| postable(a, &self.hub, self.ends_after))
            .collect();
        self.post(&Value::Array(all)).await
    }
}

impl Alertmanager {
    /// POSTs `body` to every member at once; delivered when one took it. When none did, the
    /// first member's failure is the send's (retryable if any member's is).
    async fn post(&self, body: &Value) -> Result<(), SendError> {
        let token = common::token(self.token.as_ref())?;
        let _one_at_a_time = self.posting.lock().await;
        let sends = self.members.iter().map(|url| async {
            let reply = self
                .client
                .post_json(url.clone(), &[], body, token.as_deref())
                .await
                .map_err(common::transport)?;
            common::judge(&reply)
        });
        let results = futures::future::join_all(sends).await;
        self.log_members(&results);
        if results.iter().any(Result::is_ok) {
            return Ok(());
        }
        let retryable = results
            .iter()
            .any(|r| r.as_ref().is_err_and(|e| e.retryable));
        let mut first = results
            .into_iter()
            .find_map(Result::err)
            .unwrap_or_else(|| SendError {
                retryable: false,
                reason: "no Alertmanager listed".into(),
            });
        first.retryable = retryable;
        if self.members.len() > 1 {
            first.reason = format!("every member failed, the first: {}", first.reason);
        }
        Err(first)
    }

    /// Logs a member that starts failing and one that answers again, once each, by its
    /// place in `urls` and its host (never its URL, which may carry a password).
    fn log_members(&self, results: &[Result<(), SendError>]) {
        if self.members.len() < 2 {
            return;
        }
        let mut failing = self
            .member_failing
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for (i, (result, was)) in results.iter().zip(failing.iter_mut()).enumerate() {
            let host = self.members[i].host_str().unwrap_or_default();
            let port = self.members[i].port_or_known_default().unwrap_or_default();
            match (result, *was) {
                (Err(e), false) => tracing::warn!(
                    channel = %self.name,
                    member = i,
                    "Alertmanager {host}:{port} (urls[{i}]) is not taking alerts, the others are \
                     sent them: {}",
                    e.reason
                ),
                (Ok(()), true) => tracing::info!(
                    channel = %self.name,
                    member = i,
                    "Alertmanager {host}:{port} (urls[{i}]) takes alerts again"
                ),
                _ => {}
            }
            *was = result.is_err();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use fleetdash_model::Asc;

    fn at(h: u32, m: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 3, 29, h, m, 0).unwrap()
    }

    fn alert(event: AlertEvent, band: Band) -> Alert {
        Alert {
            id: "agent:vega:firing:1".into(),
            key: "agent:vega".into(),
            kind: "agent".into(),
            name: "vega".into(),
            event,
            band,
            reason: (event != AlertEvent::Recovered).then(|| "connection refused".into()),
            status: if band == Band::Red {
                Asc::RETRYABLE_ERROR
            } else {
                Asc::SUCCESS
            },
            since: at(14, 0),
            at: at(14, 2),
            takes_down: vec![],
            link: Some("https://fleet.example/".into()),
            detail: None,
        }
    }

    #[test]
    fn a_firing_and_its_resolution_carry_the_same_labels() {
        let ends_after = Duration::seconds(240);
        let firing = postable(&alert(AlertEvent::Firing, Band::Red), "lab", ends_after);
        let mut recovered = alert(AlertEvent::Recovered, Band::Green);
        recovered.since = at(14, 10);
        recovered.at = at(14, 11);
        let resolved = postable(&recovered, "lab", ends_after);
        assert_eq!(firing["labels"], resolved["labels"]);
        assert_eq!(
            firing["labels"],
            json!({"alertname": "FleetdashRed", "key": "agent:vega", "kind": "agent",
                   "name": "vega", "band": "red", "section": "agents", "hub": "lab"})
        );
        assert_eq!(firing["startsAt"], "2026-03-29T14:00:00Z");
        assert_eq!(firing["endsAt"], "2026-03-29T14:06:00Z", "at + ends_after");
        assert_eq!(resolved["endsAt"], "2026-03-29T14:11:00Z", "resolved now");
        assert_eq!(firing["annotations"]["reason"], "connection refused");
        assert_eq!(
            firing["annotations"]["agent_status"],
            format!("RETRYABLE_ERROR ({})", Asc::RETRYABLE_ERROR.code)
        );
        assert_eq!(firing["generatorURL"], "https://fleet.example/");
    }

    /// `fleetdash alerts test`: a test is never taken for a red by Alertmanager's routes.
    #[test]
    fn a_test_goes_under_its_own_alertname() {
        let mut test = alert(AlertEvent::Test, Band::Green);
        test.key = "test:am".into();
        test.kind = "test".into();
        let sent = postable(&test, "lab", Duration::seconds(240));
        assert_eq!(sent["labels"]["alertname"], TEST_ALERTNAME);
        assert_eq!(sent["labels"]["kind"], "test");
        assert_eq!(sent["endsAt"], "2026-03-29T14:06:00Z", "it ends by itself");
    }

    #[test]
    fn the_endpoint_is_alertmanagers_v2_alerts_under_any_base() {
        for (base, want) in [
            (
                "http://127.0.0.1:9093",
                "http://127.0.0.1:9093/api/v2/alerts",
            ),
            (
                "http://127.0.0.1:9093/",
                "http://127.0.0.1:9093/api/v2/alerts",
            ),
            (
                "https://ops.example/am/",
                "https://ops.example/am/api/v2/alerts",
            ),
            (
                "https://ops.example/am/api/v2/alerts",
                "https://ops.example/am/api/v2/alerts",
            ),
        ] {
            let base = url::Url::parse(base).unwrap();
            assert_eq!(alerts_endpoint(&base).as_str(), want);
        }
    }
}

//! Alert delivery end to end on loopback: the outbox in a real SQLite file, the ntfy and webhook
//! channels posting to a local HTTP receiver that records what the real services would receive
//! (headers and body), channels that answer 500, hang or refuse, and a restart mid-outbox.
//!
//! The outbox is clocked from outside (`Delivery::pass(now)`), so backoff is checked at its
//! exact boundary without waiting; only the receivers and sockets are real time.

use crate::support;

use crate::support::flaky;
use crate::support::kanban;
use crate::support::receiver;

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use fleetdash::alerting::outbox::{
    BACKOFF_FIRST, ChannelWatch, Delivery, Grouping, Limits, Outbox,
};
use fleetdash::alerting::provider::Provider;
use fleetdash::alerting::provider::common::Wants;
use fleetdash::alerting::provider::ntfy::Ntfy;
use fleetdash::alerting::provider::webhook::Webhook;
use fleetdash::alerting::{Alert, AlertEvent};
use fleetdash::config::TokenSource;
use fleetdash::redact::RedactionGate;
use fleetdash_model::{Asc, Band};
use receiver::{Got, Mode, Receiver};
use serde_json::Value;

fn t(s: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(1_800_000_000 + s, 0).unwrap()
}

fn alert(key: &str, event: AlertEvent) -> Alert {
    let since = t(0);
    Alert {
        id: format!("{key}:{}:{}", event.as_str(), since.timestamp()),
        key: key.to_string(),
        kind: "tunnel".into(),
        name: "lab-heart on lab".into(),
        event,
        band: if event == AlertEvent::Recovered {
            Band::Green
        } else {
            Band::Red
        },
        reason: (event != AlertEvent::Recovered).then(|| "down".to_string()),
        status: Asc::DEPENDENCY_UNAVAILABLE,
        since,
        at: t(60),
        takes_down: vec!["min".into(), "max".into()],
        link: Some("https://fleet.example/#tunnels".into()),
        detail: None,
    }
}

fn ntfy(name: &str, url: url::Url) -> Ntfy {
    Ntfy::new(name, url, None, Wants::default())
}

fn webhook(name: &str, url: url::Url) -> Webhook {
    Webhook::new(name, url, None, Wants::default())
}

/// The shipped `config/rules.yaml`.
fn shipped_rules() -> fleetdash::config::Rules {
    fleetdash::config::Rules::parse(
        std::path::Path::new("config/rules.yaml"),
        support::DEFAULT_RULES,
    )
    .unwrap()
}

/// The outbox's limits in the shipped rules (`alert_outbox`).
fn limits() -> Limits {
    Limits::of(&shipped_rules().alerts)
}

fn delivery(dir: &std::path::Path, providers: Vec<Arc<dyn Provider>>) -> Delivery {
    let outbox = Outbox::open(dir, RedactionGate::default(), limits()).unwrap();
    Delivery::new(Arc::new(outbox), providers)
}

#[tokio::test]
async fn ntfy_and_webhook_receive_what_the_real_services_would() {
    let rx = Receiver::start(Mode::Ok).await;
    let dir = tempfile::tempdir().unwrap();
    // Set for this test alone; its name is unique to it.
    let var = "FLEETDASH_TEST_NTFY_TOKEN_DELIVERY";
    // SAFETY: no other thread of this test binary reads or writes this variable.
    unsafe { std::env::set_var(var, "tk_ntfy_abcdef123456") };
    let n = Ntfy::new(
        "ntfy",
        rx.url("/fleet-alerts"),
        Some(TokenSource::Env(var.into())),
        Wants::default(),
    );
    let d = delivery(
        dir.path(),
        vec![Arc::new(n), Arc::new(webhook("hook", rx.url("/hook")))],
    );
    let a = alert("host:lab/tunnel:lab-heart", AlertEvent::Firing);
    let e = d.enqueue(a.clone(), t(60)).await.unwrap();
    assert_eq!(e.added, 2);
    let pass = d.pass(t(60)).await.unwrap();
    assert_eq!((pass.delivered, pass.failed), (2, 0));

    let got = rx.got();
    assert_eq!(got.len(), 2);
    let n = got.iter().find(|g| g.path == "/fleet-alerts").unwrap();
    let h = |k: &str| n.headers.get(k).map(|v| v.to_str().unwrap().to_string());
    assert_eq!(h("priority").as_deref(), Some("high"));
    assert_eq!(
        h("click").as_deref(),
        Some("https://fleet.example/#tunnels")
    );
    assert_eq!(h("tags").as_deref(), Some("rotating_light,fail,tunnel"));
    assert_eq!(h("title").as_deref(), Some("tunnel lab-heart on lab: red"));
    assert_eq!(
        h("authorization").as_deref(),
        Some("Bearer tk_ntfy_abcdef123456")
    );
    let text = String::from_utf8(n.body.clone()).unwrap();
    assert!(text.starts_with(&a.headline()), "{text}");
    assert!(text.contains("takes down: min, max"), "{text}");

    let w = got.iter().find(|g| g.path == "/hook").unwrap();
    assert_eq!(w.headers["content-type"], "application/json");
    let body: Value = serde_json::from_slice(&w.body).unwrap();
    assert_eq!(body["id"], a.id);
    assert_eq!(body["element"]["key"], "host:lab/tunnel:lab-heart");
    assert_eq!(body["element"]["kind"], "tunnel");
    assert_eq!(body["event"], "firing");
    assert_eq!(body["band"], "red");
    assert_eq!(body["reason"], "down");
    assert_eq!(body["since"], t(0).to_rfc3339());
    assert_eq!(body["takes_down"], serde_json::json!(["min", "max"]));
    assert_eq!(
        body["agent_status"]["code"],
        Asc::DEPENDENCY_UNAVAILABLE.code
    );
    assert_eq!(body["agent_status"]["name"], "DEPENDENCY_UNAVAILABLE");
    assert!(w.headers.get("authorization").is_none());

    // Nothing left: a second pass sends nothing.
    assert_eq!(d.pass(t(61)).await.unwrap().delivered, 0);
    assert_eq!(rx.got().len(), 2);
}

#[tokio::test]
async fn a_channel_answering_500_hanging_or_refusing_is_retried_reported_then_delivered_once() {
    let failing = Receiver::start(Mode::Fail500).await;
    let hanging = Receiver::start(Mode::Hang).await;
    // A port with nothing listening; the receiver starts on it later.
    let refused = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let refused_addr = refused.local_addr().unwrap();
    drop(refused);
    let refused_url: url::Url = format!("http://{refused_addr}/t").parse().unwrap();

    let dir = tempfile::tempdir().unwrap();
    let d = delivery(
        dir.path(),
        vec![
            Arc::new(ntfy("five-hundred", failing.url("/t"))),
            // A short deadline so that the hang costs little; the test asserts only what happened.
            Arc::new(webhook("hangs", hanging.url("/h")).with_timeout(Duration::from_millis(300))),
            Arc::new(ntfy("refuses", refused_url)),
        ],
    );
    let a = alert("agent:min", AlertEvent::Firing);
    d.enqueue(a.clone(), t(0)).await.unwrap();
    let pass = d.pass(t(0)).await.unwrap();
    assert_eq!((pass.delivered, pass.failed), (0, 3));
    let health = d.outbox().health().unwrap();
    let reason = |name: &str| {
        let h = health.iter().find(|h| h.channel == name).unwrap();
        assert_eq!(h.failing_since, Some(t(0)), "{name}");
        assert_eq!(h.pending, 1, "{name}");
        h.last_reason.clone().unwrap()
    };
    assert_eq!(reason("five-hundred"), "HTTP 500");
    assert!(
        reason("hangs").contains("timed out") || reason("hangs").contains("no answer"),
        "{}",
        reason("hangs")
    );
    assert!(
        reason("refuses").contains("refused"),
        "{}",
        reason("refuses")
    );

    // Within the backoff nothing is tried again.
    let first = chrono::Duration::from_std(BACKOFF_FIRST).unwrap();
    let pass = d
        .pass(t(0) + first - chrono::Duration::seconds(1))
        .await
        .unwrap();
    assert_eq!((pass.delivered, pass.failed), (0, 0));

    // Still failing at the boundary: tried, failed again, reported since the first failure.
    let pass = d.pass(t(0) + first).await.unwrap();
    assert_eq!((pass.delivered, pass.failed), (0, 3));
    assert!(
        d.outbox()
            .health()
            .unwrap()
            .iter()
            .all(|h| h.failing_since == Some(t(0)) && h.failures == 2)
    );

    // Every channel recovers.
    failing.set(Mode::Ok);
    hanging.set(Mode::Ok);
    let back = Receiver::serve(
        tokio::net::TcpListener::bind(refused_addr).await.unwrap(),
        Mode::Ok,
    );
    let later = t(0) + first * 3;
    let pass = d.pass(later).await.unwrap();
    assert_eq!((pass.delivered, pass.failed), (3, 0));
    for name in ["five-hundred", "hangs", "refuses"] {
        let h = d.outbox().health().unwrap();
        let h = h.iter().find(|h| h.channel == name).unwrap();
        assert_eq!((h.failing_since, h.pending), (None, 0), "{name}");
    }
    let pass = d.pass(later + first * 10).await.unwrap();
    assert_eq!(pass.delivered, 0);
    assert_eq!(failing.got().len(), 1);
    assert_eq!(hanging.got().len(), 1);
    assert_eq!(back.got().len(), 1);
}

#[tokio::test]
async fn a_restart_mid_outbox_delivers_each_alert_exactly_once() {
    let rx = Receiver::start(Mode::Fail500).await;
    let dir = tempfile::tempdir().unwrap();
    let alerts = [
        alert("agent:min", AlertEvent::Firing),
        alert("agent:max", AlertEvent::Firing),
        alert("agent:min", AlertEvent::Recovered),
    ];
    let channels = || -> Vec<Arc<dyn Provider>> {
        vec![
            Arc::new(ntfy("ntfy", rx.url("/n"))),
            Arc::new(webhook("hook", rx.url("/w"))),
        ]
    };
    {
        let d = delivery(dir.path(), channels());
        for a in &alerts {
            assert_eq!(d.enqueue(a.clone(), t(0)).await.unwrap().added, 2);
        }
        // The receiver is down: everything stays pending.
        let pass = d.pass(t(0)).await.unwrap();
        assert_eq!(pass.delivered, 0);
        assert_eq!(d.outbox().pending(None).unwrap(), 6);
        // Dropped with items pending (the process stops).
    }
    rx.set(Mode::Ok);
    {
        let d = delivery(dir.path(), channels());
        assert_eq!(
            d.outbox().pending(None).unwrap(),
            6,
            "nothing pending was lost"
        );
        // The engine raises the same alerts again after its own restart: the dedupe key holds.
        for a in &alerts {
            let e = d.enqueue(a.clone(), t(5)).await.unwrap();
            assert_eq!((e.added, e.known), (0, 2));
        }
        let pass = d.pass(t(600)).await.unwrap();
        assert_eq!((pass.delivered, pass.failed), (6, 0));
    }
    {
        // Another restart after delivery: nothing is sent again, even when re-raised.
        let d = delivery(dir.path(), channels());
        for a in &alerts {
            assert_eq!(d.enqueue(a.clone(), t(700)).await.unwrap().added, 0);
        }
        assert_eq!(d.pass(t(1200)).await.unwrap().delivered, 0);
    }
    let got = rx.got();
    let mut ids: Vec<String> = got
        .iter()
        .filter(|g| g.path == "/w")
        .map(|g| {
            serde_json::from_slice::<Value>(&g.body).unwrap()["id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    ids.sort();
    let mut want: Vec<String> = alerts.iter().map(|a| a.id.clone()).collect();
    want.sort();
    assert_eq!(ids, want, "each alert once, by the webhook's dedupe id");
    // In order per channel: min fired before it recovered.
    let ntfy_bodies: Vec<String> = got
        .iter()
        .filter(|g| g.path == "/n")
        .map(|g| String::from_utf8(g.body.clone()).unwrap())
        .collect();
    assert_eq!(ntfy_bodies.len(), 3);
    let fired = ntfy_bodies
        .iter()
        .position(|b| b.contains("lab-heart on lab: down"))
        .unwrap();
    let recovered = ntfy_bodies
        .iter()
        .position(|b| b.contains("recovered"))
        .unwrap();
    assert!(fired < recovered, "{ntfy_bodies:?}");
}

#[tokio::test]
async fn the_delivery_loop_sends_what_is_enqueued() {
    let rx = Receiver::start(Mode::Ok).await;
    let dir = tempfile::tempdir().unwrap();
    let d = Arc::new(delivery(
        dir.path(),
        vec![Arc::new(ntfy("ntfy", rx.url("/n")))],
    ));
    d.enqueue(alert("agent:min", AlertEvent::Firing), Utc::now())
        .await
        .unwrap();
    let stop = tokio_util::sync::CancellationToken::new();
    let task = d.clone().spawn(Duration::from_millis(50), stop.clone());
    tokio::time::timeout(support::HANG_BUDGET, async {
        while rx.got().is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the loop delivered within the hang budget");
    stop.cancel();
    task.await.unwrap();
    assert_eq!(rx.got().len(), 1);
    assert_eq!(d.outbox().pending(None).unwrap(), 0);
}

/// An alert put in the outbox goes out at once, not at the loop's next tick: with an hour
/// between ticks, the second alert (enqueued after the first was delivered, so after the loop's
/// first tick) still arrives. Before the enqueue woke the loop, it waited for the tick.
#[tokio::test]
async fn an_enqueued_alert_wakes_the_delivery_loop() {
    let rx = Receiver::start(Mode::Ok).await;
    let dir = tempfile::tempdir().unwrap();
    let d = Arc::new(delivery(
        dir.path(),
        vec![Arc::new(ntfy("ntfy", rx.url("/n")))],
    ));
    let stop = tokio_util::sync::CancellationToken::new();
    let task = d.clone().spawn(Duration::from_secs(3600), stop.clone());
    for (n, key) in [(1, "agent:min"), (2, "agent:max")] {
        d.enqueue(alert(key, AlertEvent::Firing), Utc::now())
            .await
            .unwrap();
        tokio::time::timeout(support::HANG_BUDGET, async {
            while rx.got().len() < n {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("alert {n} waited for the loop's hourly tick"));
    }
    stop.cancel();
    task.await.unwrap();
    assert_eq!(rx.got().len(), 2);
}

/// The config `body` (after the folders and rules every test here shares), as if read from
/// `dir/fleetdash.toml`.
/// The delivery `fleetdash run` makes of `config`, on the shipped rules.
async fn configured(config: &fleetdash::config::Config) -> anyhow::Result<Delivery> {
    let rules = shipped_rules();
    let channels = fleetdash::alerting::provider::build(config, &rules.alerts);
    Delivery::from_config(config, &rules, RedactionGate::default(), channels.all).await
}

fn config_in(dir: &std::path::Path, body: &str) -> fleetdash::config::Config {
    let toml = format!("output_dir = \"o\"\nstate_dir = \"s\"\nrules = \"r.yaml\"\n{body}");
    fleetdash::config::Config::parse(&dir.join("fleetdash.toml"), &toml).unwrap()
}

/// The messages a `--record` peer was sent.
fn recorded(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test]
async fn the_hub_agent_gets_the_alert_in_its_dialect_with_its_token() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("hub-received.jsonl");
    let token = "hub-token-abcdef123456";
    let peer = support::PyPeer::start(
        support::Sdk::V1,
        &[
            "--record",
            record.to_str().unwrap(),
            "--require-token",
            token,
        ],
    );
    std::fs::write(dir.path().join("hub.token"), token).unwrap();
    // The same peer twice: once in v1.0, once in v0.3 (a2a-sdk 1.3.0 answers both).
    let config = config_in(
        dir.path(),
        &format!(
            "[[agents]]\nname = \"hub\"\nendpoint = \"{e}\"\ndialect = \"v1\"\ntoken_file = \"hub.token\"\n\
             [[agents]]\nname = \"hub-old\"\nendpoint = \"{e}\"\ndialect = \"v0.3\"\ntoken_file = \"hub.token\"\n\
             [[alerts.channels]]\ntype = \"a2a\"\nname = \"hub\"\nagent = \"hub\"\n\
             [[alerts.channels]]\ntype = \"a2a\"\nname = \"hub-old\"\nagent = \"hub-old\"\n",
            e = peer.endpoint()
        ),
    );
    let providers = fleetdash::alerting::provider::build(&config, &shipped_rules().alerts).all;
    assert_eq!(providers.len(), 2);
    let d = delivery(&dir.path().join("state"), providers);
    let a = alert("host:lab/tunnel:lab-heart", AlertEvent::Firing);
    d.enqueue(a.clone(), t(60)).await.unwrap();
    let pass = d.pass(t(60)).await.unwrap();
    assert_eq!(
        (pass.delivered, pass.failed),
        (2, 0),
        "{:?}",
        d.outbox().health().unwrap()
    );
    let got = recorded(&record);
    assert_eq!(got.len(), 2, "{got:?}");
    for m in &got {
        let text = m["text"].as_str().unwrap();
        assert!(text.starts_with(&a.headline()), "{text}");
        assert!(text.ends_with("https://fleet.example/#tunnels"), "{text}");
        assert_eq!(m["message_id"], format!("fleetdash-alert:{}", a.id));
        assert_eq!(m["context_id"], "fleetdash-alerts");
    }
}

#[tokio::test]
async fn a_hub_refusing_the_token_keeps_the_alert_and_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("hub-received.jsonl");
    let peer = support::PyPeer::start(
        support::Sdk::V1,
        &[
            "--record",
            record.to_str().unwrap(),
            "--require-token",
            "the-right-token-123",
        ],
    );
    std::fs::write(dir.path().join("hub.token"), "a-wrong-token-456789").unwrap();
    let config = config_in(
        dir.path(),
        &format!(
            "[[agents]]\nname = \"hub\"\nendpoint = \"{}\"\ntoken_file = \"hub.token\"\n\
             [[alerts.channels]]\ntype = \"a2a\"\nagent = \"hub\"\n",
            peer.endpoint()
        ),
    );
    let d = delivery(
        &dir.path().join("state"),
        fleetdash::alerting::provider::build(&config, &shipped_rules().alerts).all,
    );
    d.enqueue(alert("agent:min", AlertEvent::Firing), t(0))
        .await
        .unwrap();
    let pass = d.pass(t(0)).await.unwrap();
    assert_eq!(pass.failed, 1);
    let h = d.outbox().health().unwrap();
    assert_eq!(h[0].channel, "a2a");
    assert!(
        h[0].last_reason.as_deref().unwrap().contains("401"),
        "{h:?}"
    );
    assert_eq!(
        h[0].pending, 1,
        "the alert is kept for when the token is fixed"
    );
    assert!(recorded(&record).is_empty());
    // Fixed: delivered at the next try.
    std::fs::write(dir.path().join("hub.token"), "the-right-token-123").unwrap();
    let pass = d
        .pass(t(0) + chrono::Duration::from_std(BACKOFF_FIRST).unwrap())
        .await
        .unwrap();
    assert_eq!(pass.delivered, 1);
    assert_eq!(recorded(&record).len(), 1);
}

#[tokio::test]
async fn the_dead_mans_switch_pings_and_reports_a_failing_check() {
    use fleetdash::alerting::deadman::Deadman;
    let rx = Receiver::start(Mode::Ok).await;
    let sw = Deadman::new(rx.url("/ping/check-uuid"));
    assert!(sw.ping(t(0)).await);
    let got = rx.got();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].path, "/ping/check-uuid");
    assert_eq!(sw.health().failing_since, None);

    rx.set(Mode::Fail500);
    assert!(!sw.ping(t(60)).await);
    assert!(!sw.ping(t(120)).await);
    let h = sw.health();
    assert_eq!(h.failing_since, Some(t(60)), "since the first failure");
    assert_eq!(h.last_reason.as_deref(), Some("HTTP 500"));
    assert_eq!(h.failures, 2);

    rx.set(Mode::Hang);
    let hung = Deadman::with_timeout(rx.url("/ping/x"), Duration::from_millis(300));
    assert!(
        !hung.ping(t(0)).await,
        "a hung check service fails the ping, not the pass"
    );

    let refused = Deadman::new(support::refused_endpoint().parse().unwrap());
    assert!(!refused.ping(t(0)).await);
    assert!(refused.health().last_reason.unwrap().contains("refused"));

    rx.set(Mode::Ok);
    assert!(sw.ping(t(180)).await);
    assert_eq!(sw.health().failing_since, None);
    assert_eq!(rx.got().len(), 2);
}

#[tokio::test]
async fn a_hanging_channel_holds_up_no_other() {
    let hanging = Receiver::start(Mode::Hang).await;
    let ok = Receiver::start(Mode::Ok).await;
    let dir = tempfile::tempdir().unwrap();
    let d = Arc::new(delivery(
        dir.path(),
        vec![
            // Its deadline is the hang budget: the pass cannot end before the test gives up.
            Arc::new(webhook("hangs", hanging.url("/h")).with_timeout(support::HANG_BUDGET)),
            Arc::new(ntfy("ok", ok.url("/n"))),
        ],
    ));
    d.enqueue(alert("agent:min", AlertEvent::Firing), t(0))
        .await
        .unwrap();
    let pass = tokio::spawn({
        let d = d.clone();
        async move { d.pass(t(0)).await }
    });
    tokio::time::timeout(support::HANG_BUDGET, async {
        while ok.got().is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the healthy channel got its alert");
    assert!(
        !pass.is_finished(),
        "delivered while the hanging channel's send was still open"
    );
    pass.abort();
}

#[tokio::test]
async fn a_v03_only_hub_gets_the_alert_under_auto() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("hub-received.jsonl");
    let peer = support::PyPeer::start(support::Sdk::V03, &["--record", record.to_str().unwrap()]);
    // `auto` tries v1.0 first; the 0.3 SDK refuses it and the v0.3 attempt is delivered.
    let config = config_in(
        dir.path(),
        &format!(
            "[[agents]]\nname = \"hub\"\nendpoint = \"{}\"\n\
             [[alerts.channels]]\ntype = \"a2a\"\nagent = \"hub\"\n",
            peer.endpoint()
        ),
    );
    let d = delivery(
        &dir.path().join("state"),
        fleetdash::alerting::provider::build(&config, &shipped_rules().alerts).all,
    );
    let a = alert("agent:min", AlertEvent::Recovered);
    d.enqueue(a.clone(), t(0)).await.unwrap();
    let pass = d.pass(t(0)).await.unwrap();
    assert_eq!(pass.delivered, 1, "{:?}", d.outbox().health().unwrap());
    let got = recorded(&record);
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0]["text"].as_str().unwrap().starts_with(&a.headline()));
}

#[tokio::test]
async fn the_configured_channels_deliver_from_the_configured_state_dir() {
    let rx = Receiver::start(Mode::Ok).await;
    let dir = tempfile::tempdir().unwrap();
    let toml = format!(
        "output_dir = \"o\"\nstate_dir = \"state\"\nrules = \"r.yaml\"\n\
         [[alerts.channels]]\ntype = \"ntfy\"\nurl = \"{}\"\nsections = [\"hosts\"]\n\
         [[alerts.channels]]\ntype = \"webhook\"\nurl = \"{}\"\nbands = [\"red\", \"amber\"]\n",
        rx.url("/topic"),
        rx.url("/hook")
    );
    let config =
        fleetdash::config::Config::parse(&dir.path().join("fleetdash.toml"), &toml).unwrap();
    let d = configured(&config).await.unwrap();
    assert!(
        dir.path()
            .join("state")
            .join(fleetdash::alerting::outbox::OUTBOX_FILE)
            .exists()
    );
    let mut amber = alert("agent:min", AlertEvent::Firing);
    amber.kind = "agent".into();
    amber.band = Band::Amber;
    // ntfy wants hosts only (and red by default): only the webhook wants this one.
    assert_eq!(d.enqueue(amber, t(0)).await.unwrap().added, 1);
    // The rules' grouping holds it for group_wait, then it goes out alone.
    let wait = shipped_rules().alerts.group_wait.seconds as i64;
    assert_eq!(d.pass(t(wait - 1)).await.unwrap().delivered, 0);
    assert_eq!(d.pass(t(wait)).await.unwrap().delivered, 1);
    let paths: Vec<String> = rx.got().into_iter().map(|g| g.path).collect();
    assert_eq!(paths, ["/hook"]);
}

/// End to end through `fleetdash run`: an agent that refuses connections is red from the first
/// pass; after the rules' `alerts.fail_after_passes` red passes its Firing reaches the webhook,
/// once, with the element, the band and the reason, and the dead man's switch is pinged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleetdash_run_fires_a_red_agent_to_the_webhook_once() {
    let rx = Receiver::start(Mode::Ok).await;
    let scratch = support::Scratch::new();
    let config = scratch.config(&format!(
        "[cadence]\nagents = \"1s\"\n\n\
         [alerts]\ndeadman_url = \"{}\"\n\n\
         [[alerts.channels]]\ntype = \"webhook\"\nurl = \"{}\"\n\n\
         [[agents]]\nname = \"lyra\"\nendpoint = \"{}\"\ndialect = \"v1\"\n",
        rx.url("/ping"),
        rx.url("/hook"),
        support::refused_endpoint()
    ));
    let started = std::time::Instant::now();
    let mut child = run(&config);
    let deadline = std::time::Instant::now() + support::HANG_BUDGET;
    let firing = loop {
        let hooks: Vec<Value> = rx
            .got()
            .iter()
            .filter(|g| g.path == "/hook")
            .map(|g| serde_json::from_slice(&g.body).unwrap())
            .collect();
        if let Some(f) = hooks.iter().find(|h| h["event"] == "firing") {
            break f.clone();
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("no Firing reached the webhook: {hooks:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    eprintln!(
        "the Firing reached the webhook {:?} after fleetdash run started (2 red passes 1 s apart, then a delivery tick)",
        started.elapsed()
    );
    // A few more passes: still red, no second Firing.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let _ = child.kill();
    let _ = child.wait();
    let got = rx.got();
    let firings = got
        .iter()
        .filter(|g| g.path == "/hook")
        .filter(|g| serde_json::from_slice::<Value>(&g.body).unwrap()["event"] == "firing")
        .count();
    assert_eq!(firings, 1, "one Firing, however many red passes");
    let text = firing.to_string();
    assert!(
        text.contains("agent:lyra") && text.contains("red") && text.contains("connection refused"),
        "{firing:#}"
    );
    assert!(
        got.iter().any(|g| g.path == "/ping"),
        "the dead man's switch was pinged"
    );
}

/// `fleetdash run --config CONFIG` in the background, quiet.
fn run(config: &std::path::Path) -> std::process::Child {
    support::fleetdash()
        .args(["run", "--config"])
        .arg(config)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

/// `status.json` as `fleetdash run` last wrote it, once it parses.
fn status_of(scratch: &support::Scratch) -> Option<Value> {
    let bytes = std::fs::read(scratch.status_path()).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Waits until `status.json` satisfies `ok`, or fails naming `what` with the last one seen.
async fn wait_status(
    scratch: &support::Scratch,
    child: &mut std::process::Child,
    what: &str,
    ok: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = std::time::Instant::now() + support::HANG_BUDGET;
    loop {
        let status = status_of(scratch);
        if let Some(s) = status.as_ref().filter(|s| ok(s)) {
            return s.clone();
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!(
                "{what}: status.json's alerts never did: {:#}",
                status.unwrap_or_default()["alerts"]
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Through `fleetdash run`: an agent silenced by the operator is still red in status.json, held
/// with the silence's end and reason, and pages nobody; another red agent is not held and fires.
/// A channel that answers 500 is shown failing with its reason and what waits for it, then
/// delivering again once the receiver is back (status.json's `alerts`, which the page reads).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_json_shows_a_silenced_agent_and_a_failing_channel() {
    let rx = Receiver::start(Mode::Fail500).await;
    let scratch = support::Scratch::new();
    let config = scratch.config(&format!(
        "[cadence]\nagents = \"1s\"\n\n\
         [[alerts.channels]]\ntype = \"webhook\"\nname = \"ops\"\nurl = \"{}\"\n\n\
         [[agents]]\nname = \"lyra\"\nendpoint = \"{}\"\ndialect = \"v1\"\n\n\
         [[agents]]\nname = \"vega\"\nendpoint = \"{}\"\ndialect = \"v1\"\n",
        rx.url("/hook"),
        support::refused_endpoint(),
        support::refused_endpoint()
    ));
    let out = support::fleetdash()
        .args(["silence", "add", "--config"])
        .arg(&config)
        .args(["agent=lyra", "--for", "2h", "--reason", "disk swap"])
        .output()
        .unwrap();
    support::assert_success(&out);
    let mut child = run(&config);
    let failing = wait_status(&scratch, &mut child, "the channel shown failing", |s| {
        s["alerts"]["channels"][0]["failing_since"].is_string()
    })
    .await;
    let alerts = &failing["alerts"];
    assert_eq!(alerts["configured"], true);
    let ops = &alerts["channels"][0];
    assert_eq!(ops["name"], "ops", "{alerts:#}");
    assert!(
        ops["reason"].as_str().unwrap_or("").contains("500"),
        "{alerts:#}"
    );
    assert!(
        ops["pending"].as_u64().unwrap_or(0) >= 1,
        "vega's Firing waits: {alerts:#}"
    );
    assert!(ops["checked_at"].is_string(), "{alerts:#}");
    let held = alerts["held"].as_array().unwrap();
    assert_eq!(held.len(), 1, "only the silenced agent is held: {alerts:#}");
    assert_eq!(held[0]["key"], "agent:lyra");
    assert_eq!(held[0]["reason"], "disk swap");
    assert!(held[0]["until"].is_string() && held[0]["checked_at"].is_string());
    // Held back from paging, never from monitoring: lyra is still red on the page.
    let lyra = failing["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "lyra")
        .unwrap();
    assert_eq!(lyra["band"], "red");

    rx.set(Mode::Ok);
    let delivering = wait_status(
        &scratch,
        &mut child,
        "the channel shown delivering again",
        |s| {
            s["alerts"]["channels"][0]["failing_since"].is_null()
                && s["alerts"]["channels"][0]["pending"] == 0
        },
    )
    .await;
    let _ = child.kill();
    let _ = child.wait();
    assert!(delivering["alerts"]["channels"][0]["reason"].is_null());
    let keys: Vec<String> = rx
        .got()
        .iter()
        .map(|g| serde_json::from_slice::<Value>(&g.body).unwrap())
        .filter(|h| h["event"] == "firing")
        .map(|h| h["element"]["key"].as_str().unwrap_or("?").to_string())
        .collect();
    assert_eq!(keys, ["agent:vega"], "the silenced agent paged nobody");
}

/// Through `fleetdash run`: a work-queue task nobody ACKs within the rules' `ack.within_seconds`
/// turns red, and its Firing reaches the webhook with the queue's reason. Prints the latency
/// from the transition (its time in status.json's transitions) to the receiver's POST.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unacked_work_queue_task_fires_through_fleetdash_run() {
    let rx = Receiver::start(Mode::Ok).await;
    let scratch = support::Scratch::new();
    let quick = support::quick_grouping_rules();
    let rules = quick.replace("within_seconds: 600", "within_seconds: 2");
    assert_ne!(rules, quick);
    std::fs::write(scratch.path().join("rules.yaml"), rules).unwrap();
    let config = scratch.config(&format!(
        "[cadence]\nqueue = \"1s\"\n\n\
         [work_queue]\ndb = \"queue/tasks.db\"\n\n\
         [[alerts.channels]]\ntype = \"webhook\"\nurl = \"{}\"\n",
        rx.url("/hook"),
    ));
    let out = support::fleetdash()
        .args(["task", "assign", "--to", "sol", "--config"])
        .arg(&config)
        .arg("renew the prod certificate")
        .output()
        .unwrap();
    support::assert_success(&out);
    let id = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    let key = format!("queue:{id}");
    let mut child = run(&config);
    let deadline = std::time::Instant::now() + support::HANG_BUDGET;
    let (hook, posted) = loop {
        let got = rx.got();
        let firing = got.iter().find_map(|g| {
            let h: Value = serde_json::from_slice(&g.body).ok()?;
            (h["event"] == "firing" && h["element"]["key"] == key.as_str()).then_some((h, g.at))
        });
        if let Some(f) = firing {
            break f;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("no Firing for {key} reached the webhook");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let status = status_of(&scratch).expect("status.json");
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(hook["band"], "red", "{hook:#}");
    let text = hook.to_string();
    assert!(text.contains("taken it for "), "{hook:#}");
    assert!(text.contains("renew the prod certificate"), "{hook:#}");
    let turned = status["transitions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["key"] == key.as_str() && t["to"] == "red")
        .unwrap_or_else(|| panic!("no {key} transition: {:#}", status["transitions"]));
    let turned_at: DateTime<Utc> = turned["at"].as_str().unwrap().parse().unwrap();
    assert!(turned_at <= posted, "the POST came after the transition");
    eprintln!(
        "alert latency, transition to the receiver's POST: {} ms (queue cadence 1 s, fail after 2 passes; the enqueue wakes the delivery)",
        (posted - turned_at).num_milliseconds()
    );
}

/// Through `fleetdash run` with a board alone (every pass a board read): a card whose worker
/// crashed fires; moved to done, it is listed once more (green), then leaves the capped listing,
/// and its Recovered still reaches the webhook, once, after its Firing, saying it is no longer
/// listed. Was: one green pass, short of `recover_after`, and the alert stayed open.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recovered_card_that_leaves_the_listing_sends_its_recovered_through_fleetdash_run() {
    let rx = Receiver::start(Mode::Ok).await;
    let scratch = support::Scratch::new();
    let db = scratch.path().join("lab.db");
    let board = kanban::Kanban::create(&db);
    let started_at = kanban::now() - 1800;
    let mut crashed = kanban::Task::new("t_crash", "rotate the keys", "running", Some("min"));
    crashed.started_at = Some(started_at);
    board.task(&crashed);
    board.event("t_crash", "claimed", r#"{"lock": "lab:4242"}"#, started_at);
    board.event("t_crash", "crashed", r#"{"pid": 4242}"#, started_at + 60);
    board.task(&kanban::Task::new(
        "t_todo",
        "write the notes",
        "todo",
        None,
    ));
    let config = scratch.config(&format!(
        "[cadence]\nboard = \"1s\"\n\n\
         [[alerts.channels]]\ntype = \"webhook\"\nurl = \"{}\"\n\n\
         [[boards]]\nname = \"lab\"\nplane = \"LAB\"\ndb = {:?}\n",
        rx.url("/hook"),
        db.display().to_string(),
    ));
    let key = "board:lab/card:t_crash";
    let hooks = |rx: &Receiver| -> Vec<Value> {
        rx.got()
            .iter()
            .map(|g| serde_json::from_slice::<Value>(&g.body).unwrap())
            .filter(|h| h["element"]["key"] == key)
            .collect()
    };
    let mut child = run(&config);
    let deadline = std::time::Instant::now() + support::HANG_BUDGET;
    while !hooks(&rx).iter().any(|h| h["event"] == "firing") {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!(
                "no Firing for {key}: {:#?}",
                status_of(&scratch).map(|s| s["tasks"]["board"].clone())
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    board
        .conn
        .execute(
            "UPDATE tasks SET status = 'done', completed_at = ?1 WHERE id = 't_crash'",
            [kanban::now()],
        )
        .unwrap();
    let deadline = std::time::Instant::now() + support::HANG_BUDGET;
    while !hooks(&rx).iter().any(|h| h["event"] == "recovered") {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!(
                "no Recovered for {key}; the webhook got {:#?}; the board lists {:#?}",
                hooks(&rx),
                status_of(&scratch).map(|s| s["tasks"]["board"]["cards"].clone())
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // A few more board reads: nothing more about the card.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let status = status_of(&scratch).expect("status.json");
    let _ = child.kill();
    let _ = child.wait();
    let got = hooks(&rx);
    let events: Vec<&str> = got
        .iter()
        .map(|h| h["event"].as_str().unwrap_or("?"))
        .collect();
    assert_eq!(events, ["firing", "recovered"], "{got:#?}");
    let recovered = &got[1];
    assert_eq!(recovered["band"], "green", "{recovered:#}");
    assert_eq!(recovered["reason"], "no longer listed", "{recovered:#}");
    // It left the listing: gone, not green, is what closed the alert.
    let listed = status["tasks"]["board"]["cards"].as_array().unwrap();
    assert!(
        listed.iter().all(|c| c["id"] != "t_crash"),
        "the done card is no longer listed: {listed:#?}"
    );
}

/// The outbox's file in `state` and every file beside it, by name.
fn state_files(state: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(state)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The one `alerts-outbox.sqlite.corrupt-<UTC stamp>` in `state` (its -wal beside it aside).
fn moved_aside(state: &std::path::Path) -> std::path::PathBuf {
    let prefix = format!("{}.corrupt-", fleetdash::alerting::outbox::OUTBOX_FILE);
    let names: Vec<String> = state_files(state)
        .into_iter()
        .filter(|n| n.starts_with(&prefix) && !n.ends_with("-wal") && !n.ends_with("-shm"))
        .collect();
    assert_eq!(
        names.len(),
        1,
        "one file moved aside: {:?}",
        state_files(state)
    );
    let stamp = &names[0][prefix.len()..];
    assert!(
        chrono::NaiveDateTime::parse_from_str(stamp, "%Y%m%dT%H%M%SZ").is_ok(),
        "a UTC timestamp: {stamp}"
    );
    state.join(&names[0])
}

/// Three files `Outbox::open` cannot use (junk, a truncated outbox, another program's
/// database) are each moved aside byte for byte, with their -wal, and a fresh outbox delivers.
#[tokio::test]
async fn a_corrupt_outbox_is_moved_aside_and_a_fresh_one_delivers() {
    // A real outbox with rows on many pages, cut in half: its header is fine, its tree is not.
    let truncated = {
        let dir = tempfile::tempdir().unwrap();
        let outbox = Outbox::open(dir.path(), RedactionGate::default(), limits()).unwrap();
        for i in 0..400 {
            let mut a = alert(&format!("agent:a{i}"), AlertEvent::Firing);
            a.reason = Some("x".repeat(300));
            outbox.enqueue(&a, &["hook"], t(i)).unwrap();
        }
        outbox.prune(t(500)).unwrap();
        drop(outbox);
        let bytes =
            std::fs::read(dir.path().join(fleetdash::alerting::outbox::OUTBOX_FILE)).unwrap();
        assert!(bytes.len() > 64 * 1024, "{} bytes", bytes.len());
        bytes[..bytes.len() / 2].to_vec()
    };
    let foreign = {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("other.db");
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes (body) VALUES ('keep me');")
            .unwrap();
        drop(conn);
        std::fs::read(&path).unwrap()
    };
    let junk: Vec<u8> = (0..4096u32).map(|i| (i * 7 + 13) as u8).collect();
    for (what, bytes) in [
        ("junk", junk),
        ("truncated", truncated),
        ("foreign", foreign),
    ] {
        let rx = Receiver::start(Mode::Ok).await;
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("s");
        std::fs::create_dir_all(&state).unwrap();
        let file = state.join(fleetdash::alerting::outbox::OUTBOX_FILE);
        std::fs::write(&file, &bytes).unwrap();
        let wal = b"not a write-ahead log".to_vec();
        std::fs::write(
            state.join(format!("{}-wal", fleetdash::alerting::outbox::OUTBOX_FILE)),
            &wal,
        )
        .unwrap();
        let config = config_in(
            dir.path(),
            &format!(
                "[[alerts.channels]]\ntype = \"webhook\"\nurl = \"{}\"\n",
                rx.url("/hook")
            ),
        );
        let d = match configured(&config).await {
            Ok(d) => d,
            Err(e) => panic!("{what}: the outbox was not replaced: {e:#}"),
        };
        let aside = moved_aside(&state);
        assert_eq!(
            std::fs::read(&aside).unwrap(),
            bytes,
            "{what}: kept byte for byte"
        );
        let aside_wal = std::path::PathBuf::from(format!("{}-wal", aside.display()));
        assert_eq!(
            std::fs::read(&aside_wal).unwrap(),
            wal,
            "{what}: its -wal beside it"
        );
        let a = alert("agent:min", AlertEvent::Firing);
        assert_eq!(d.enqueue(a.clone(), t(0)).await.unwrap().added, 1, "{what}");
        let wait = shipped_rules().alerts.group_wait.seconds as i64;
        assert_eq!(d.pass(t(wait)).await.unwrap().delivered, 1, "{what}");
        let got = rx.got();
        assert_eq!(got.len(), 1, "{what}");
        let body: Value = serde_json::from_slice(&got[0].body).unwrap();
        assert_eq!(body["event"], "firing", "{what}: {body:#}");
        // The fresh outbox is ours from now on: a second open keeps it (and moves nothing).
        drop(d);
        let again = Outbox::open(&state, RedactionGate::default(), limits()).unwrap();
        assert_eq!(again.rows().unwrap(), 1, "{what}");
        moved_aside(&state);
    }
}

/// An outbox written before the file carried fleetdash's mark (tables only) is ours: opened
/// as it is, its pending alert still due, nothing moved aside.
#[tokio::test]
async fn an_outbox_from_before_the_mark_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    {
        let outbox = Outbox::open(dir.path(), RedactionGate::default(), limits()).unwrap();
        outbox
            .enqueue(&alert("agent:min", AlertEvent::Firing), &["hook"], t(0))
            .unwrap();
    }
    let file = dir.path().join(fleetdash::alerting::outbox::OUTBOX_FILE);
    let conn = rusqlite::Connection::open(&file).unwrap();
    conn.execute_batch("PRAGMA application_id = 0; PRAGMA user_version = 0;")
        .unwrap();
    drop(conn);
    let outbox = Outbox::open(dir.path(), RedactionGate::default(), limits()).unwrap();
    assert_eq!(outbox.due(t(0)).unwrap().len(), 1);
    assert_eq!(
        state_files(dir.path())
            .iter()
            .filter(|n| n.contains(".corrupt-"))
            .count(),
        0
    );
}

/// An outbox that cannot be opened even afresh (its path is a folder) costs alert delivery
/// only: `Alerts::from_config` is Ok, and each configured channel is said failing with why.
#[tokio::test]
async fn an_unusable_outbox_is_said_failing_for_each_channel() {
    let rx = Receiver::start(Mode::Ok).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir
        .path()
        .join("s")
        .join(fleetdash::alerting::outbox::OUTBOX_FILE);
    std::fs::create_dir_all(&file).unwrap();
    std::fs::write(file.join("operator.txt"), "mine").unwrap();
    let config = config_in(
        dir.path(),
        &format!(
            "[[alerts.channels]]\ntype = \"webhook\"\nname = \"ops\"\nurl = \"{}\"\n",
            rx.url("/hook")
        ),
    );
    let rules = fleetdash::config::Rules::parse(
        std::path::Path::new("config/rules.yaml"),
        support::DEFAULT_RULES,
    )
    .unwrap();
    let alerts = fleetdash::alerting::run::Alerts::from_config(
        &config,
        &rules,
        RedactionGate::default(),
        &fleetdash::clock::Clock::system(rules.clock.settings()),
    )
    .await
    .expect("alerting's outbox costs alert delivery, never the run")
    .expect("a channel is configured");
    let view = alerts.look().look(&Default::default(), t(0));
    assert!(view.configured);
    assert_eq!(view.channels.len(), 1, "{view:?}");
    let ops = &view.channels[0];
    assert_eq!(ops.name, "ops");
    assert!(ops.failing_since.is_some(), "{ops:?}");
    let reason = ops.reason.clone().unwrap_or_default();
    assert!(
        reason.starts_with("outbox unusable: ") && reason.contains(&file.display().to_string()),
        "{reason}"
    );
    // The operator's folder is left as it was.
    assert_eq!(
        std::fs::read_to_string(file.join("operator.txt")).unwrap(),
        "mine"
    );
}

/// Through `fleetdash run`: 4 KB of junk in the outbox's place neither stops the run nor the
/// alerts: status.json is written, the junk is kept aside, and the red agent's Firing arrives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleetdash_run_with_a_corrupt_outbox_still_writes_and_fires() {
    let rx = Receiver::start(Mode::Ok).await;
    let scratch = support::Scratch::new();
    let config = scratch.config(&format!(
        "[cadence]\nagents = \"1s\"\n\n\
         [[alerts.channels]]\ntype = \"webhook\"\nurl = \"{}\"\n\n\
         [[agents]]\nname = \"lyra\"\nendpoint = \"{}\"\ndialect = \"v1\"\n",
        rx.url("/hook"),
        support::refused_endpoint()
    ));
    let state = scratch.path().join("state");
    std::fs::create_dir_all(&state).unwrap();
    let junk = vec![0x5a_u8; 4096];
    std::fs::write(state.join(fleetdash::alerting::outbox::OUTBOX_FILE), &junk).unwrap();
    let mut child = run(&config);
    let status = wait_status(&scratch, &mut child, "status.json written", |s| {
        s["agents"].as_array().is_some_and(|a| !a.is_empty())
    })
    .await;
    assert_eq!(status["alerts"]["configured"], true);
    let deadline = std::time::Instant::now() + support::HANG_BUDGET;
    loop {
        let firing = rx
            .got()
            .iter()
            .map(|g| serde_json::from_slice::<Value>(&g.body).unwrap())
            .any(|h| h["event"] == "firing" && h["element"]["key"] == "agent:lyra");
        if firing {
            break;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("no Firing reached the webhook");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(std::fs::read(moved_aside(&state)).unwrap(), junk);
}

/// Through `fleetdash run`: an outbox that cannot be opened at all (its path is a folder)
/// leaves collection and snapshots going; status.json says the channel is not delivering.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleetdash_run_with_an_unusable_outbox_says_so_in_status_json() {
    let rx = Receiver::start(Mode::Ok).await;
    let scratch = support::Scratch::new();
    let config = scratch.config(&format!(
        "[cadence]\nagents = \"1s\"\n\n\
         [[alerts.channels]]\ntype = \"webhook\"\nname = \"ops\"\nurl = \"{}\"\n\n\
         [[agents]]\nname = \"lyra\"\nendpoint = \"{}\"\ndialect = \"v1\"\n",
        rx.url("/hook"),
        support::refused_endpoint()
    ));
    std::fs::create_dir_all(
        scratch
            .path()
            .join("state")
            .join(fleetdash::alerting::outbox::OUTBOX_FILE),
    )
    .unwrap();
    let mut child = run(&config);
    let status = wait_status(
        &scratch,
        &mut child,
        "the channel said not delivering, once the agents were read",
        |s| {
            // A write of another section can come first: wait for the agents' too.
            s["agents"][0]["band"].is_string()
                && s["alerts"]["channels"][0]["reason"]
                    .as_str()
                    .is_some_and(|r| r.starts_with("outbox unusable: "))
        },
    )
    .await;
    // Still running: nothing made it exit.
    assert!(child.try_wait().unwrap().is_none(), "fleetdash run exited");
    let _ = child.kill();
    let _ = child.wait();
    let ops = &status["alerts"]["channels"][0];
    assert_eq!(ops["name"], "ops");
    assert!(ops["failing_since"].is_string(), "{ops:#}");
    assert_eq!(status["agents"][0]["band"], "red");
}

/// Issue 21: a failing channel was shown on the page but told nowhere, so a dead ntfy topic
/// went unnoticed unless the page was opened. Once it has failed the rules' fail_after_passes
/// tries in a row, every other channel is told, once (later failures add nothing), and told
/// again when it delivers; the failing channel is never sent notices about itself.
#[tokio::test]
async fn a_failing_channel_is_told_to_the_others_once_and_its_recovery_too() {
    let phone = Receiver::start(Mode::Fail500).await;
    let ops = Receiver::start(Mode::Ok).await;
    let dir = tempfile::tempdir().unwrap();
    let down_after = u32::try_from(shipped_rules().alerts.fail_after.count).unwrap();
    assert!(
        down_after >= 2,
        "the test counts the tries before the notice"
    );
    let d = delivery(
        dir.path(),
        vec![
            Arc::new(ntfy("phone", phone.url("/t"))),
            Arc::new(webhook("ops", ops.url("/h"))),
        ],
    )
    .with_watch(ChannelWatch {
        down_after,
        link: Some("https://fleet.example/".into()),
    });
    let bodies = |rx: &Receiver| -> Vec<String> {
        rx.got()
            .iter()
            .map(|g| String::from_utf8_lossy(&g.body).into_owned())
            .collect()
    };
    d.enqueue(alert("agent:min", AlertEvent::Firing), t(0))
        .await
        .unwrap();
    // Each try once the backoff allows, then a pass just after it (the notice it kept).
    let mut now = t(0);
    for tries in 1..=down_after + 2 {
        let pass = d.pass(now).await.unwrap();
        assert_eq!(pass.failed, 1, "try {tries} of phone");
        let told = d.pass(now + chrono::Duration::seconds(1)).await.unwrap();
        let notices = bodies(&ops).len() - 1;
        assert_eq!(
            notices,
            usize::from(tries >= down_after),
            "after {tries} tries: {:?}",
            bodies(&ops)
        );
        assert_eq!(told.failed, 0);
        now += chrono::Duration::from_std(fleetdash::alerting::outbox::backoff(tries)).unwrap();
    }
    let ops_got = bodies(&ops);
    let down = &ops_got[1];
    assert!(
        down.contains("alert channel phone") && down.contains("HTTP 500"),
        "{down}"
    );
    phone.set(Mode::Ok);
    let pass = d.pass(now).await.unwrap();
    assert_eq!(
        (pass.delivered, pass.failed),
        (1, 0),
        "phone delivers again"
    );
    let pass = d.pass(now + chrono::Duration::seconds(1)).await.unwrap();
    assert_eq!(pass.delivered, 1, "ops is told of the recovery");
    let ops_got = bodies(&ops);
    assert_eq!(ops_got.len(), 3, "{ops_got:?}");
    assert!(
        ops_got[2].contains("alert channel phone") && ops_got[2].contains("recovered"),
        "{}",
        ops_got[2]
    );
    assert_eq!(
        bodies(&phone).len(),
        1,
        "phone got its own alert and nothing about itself: {:?}",
        bodies(&phone)
    );
    let pass = d.pass(now + chrono::Duration::hours(3)).await.unwrap();
    assert_eq!((pass.delivered, pass.failed), (0, 0), "no reminder");
}

// ---------------------------------------------------------------------------------------------
// Issue 24: one buzz per storm
// ---------------------------------------------------------------------------------------------

/// A red alert of `kind` `name`, raised at `at` (its dedupe key unique per element).
fn red(kind: &str, name: &str, at: i64) -> Alert {
    Alert {
        id: format!("{kind}:{name}:firing:{at}"),
        key: format!("{kind}:{name}"),
        kind: kind.into(),
        name: name.into(),
        band: Band::Red,
        reason: Some("down: connection refused".into()),
        since: t(at),
        at: t(at),
        takes_down: Vec::new(),
        ..alert("x", AlertEvent::Firing)
    }
}

/// A header as ntfy reads it: RFC 2047 (`=?UTF-8?B?…?=`) decoded, plain ASCII as is.
fn decoded(value: &axum::http::HeaderValue) -> String {
    use base64::Engine;
    let text = value.to_str().unwrap();
    match text
        .strip_prefix("=?UTF-8?B?")
        .and_then(|t| t.strip_suffix("?="))
    {
        Some(b64) => String::from_utf8(
            base64::engine::general_purpose::STANDARD
                .decode(b64)
                .unwrap(),
        )
        .unwrap(),
        None => text.to_string(),
    }
}

/// The POSTs of one path, in order.
fn posts(rx: &Receiver, path: &str) -> Vec<Got> {
    rx.got().into_iter().filter(|g| g.path == path).collect()
}

/// Eleven reds of one moment at the shipped grouping (Alertmanager's 30 s / 5 min), with a
/// clock of the test's own: nothing before `group_wait`, then ONE ntfy message and ONE webhook
/// POST carrying all eleven; what comes next (a new red, a recovery) waits `group_interval`
/// after that and goes out together; a lone red later goes out alone, as itself.
#[tokio::test]
async fn a_storm_of_eleven_reds_is_one_notification_per_channel() {
    let rx = Receiver::start(Mode::Ok).await;
    let dir = tempfile::tempdir().unwrap();
    let grouping = Grouping::of(&shipped_rules().alerts);
    let (wait, interval) = (grouping.wait.num_seconds(), grouping.interval.num_seconds());
    let d = delivery(
        dir.path(),
        vec![
            Arc::new(ntfy("ntfy", rx.url("/topic"))),
            Arc::new(webhook("hook", rx.url("/hook"))),
        ],
    )
    .with_grouping(grouping);
    let agents = [
        "orin", "vega", "kai", "lyra", "juno", "sol", "echo", "mira", "nova", "tam",
    ];
    for name in agents {
        d.enqueue(red("agent", name, 0), t(0)).await.unwrap();
    }
    d.enqueue(red("host", "prod", 0), t(0)).await.unwrap();

    // The group waits for the rest of its moment.
    assert_eq!(d.pass(t(wait - 1)).await.unwrap().delivered, 0);
    assert!(rx.got().is_empty(), "nothing before group_wait");
    assert_eq!(d.pass(t(wait)).await.unwrap().delivered, 22);
    let (topic, hook) = (posts(&rx, "/topic"), posts(&rx, "/hook"));
    assert_eq!(
        (topic.len(), hook.len()),
        (1, 1),
        "one notification per channel"
    );
    let title = decoded(&topic[0].headers["title"]);
    assert_eq!(
        title, "11 red: agents orin, vega, kai … (7 more); host prod",
        "one line that says the storm"
    );
    assert_eq!(
        topic[0].headers["priority"], "high",
        "a new red wakes the phone, once"
    );
    let body = String::from_utf8(topic[0].body.clone()).unwrap();
    for name in agents.iter().chain(&["prod"]) {
        assert!(body.contains(&format!(" {name}: down")), "{name} in {body}");
    }
    let group: Value = serde_json::from_slice(&hook[0].body).unwrap();
    assert_eq!(group["group"]["count"], 11, "{group:#}");
    assert_eq!(group["alerts"].as_array().unwrap().len(), 11);
    assert!(group["id"].as_str().unwrap().starts_with("group:"));
    assert!(
        group["alerts"]
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a["event"] == "firing" && a["agent_status"]["code"] == 5003),
        "each element whole in the one body: {group:#}"
    );

    // A new red and a recovery after it: held until group_interval after the storm's
    // notification, then one notification with both.
    d.enqueue(red("agent", "atlas", wait + 10), t(wait + 10))
        .await
        .unwrap();
    let mut recovered = red("agent", "orin", wait + 20);
    recovered.id = "agent:orin:recovered".into();
    recovered.event = AlertEvent::Recovered;
    recovered.band = Band::Green;
    recovered.reason = None;
    d.enqueue(recovered, t(wait + 20)).await.unwrap();
    assert_eq!(d.pass(t(wait + 20 + wait)).await.unwrap().delivered, 0);
    assert_eq!(d.pass(t(wait + interval - 1)).await.unwrap().delivered, 0);
    assert_eq!(d.pass(t(wait + interval)).await.unwrap().delivered, 4);
    let topic = posts(&rx, "/topic");
    assert_eq!(topic.len(), 2);
    assert_eq!(
        decoded(&topic[1].headers["title"]),
        "1 red: agent atlas · 1 recovered: agent orin"
    );

    // Quiet for long, then one red: alone, group_wait late, in the single alert's own shape.
    let later = 10_000;
    d.enqueue(red("agent", "kai", later), t(later))
        .await
        .unwrap();
    assert_eq!(d.pass(t(later + wait - 1)).await.unwrap().delivered, 0);
    assert_eq!(d.pass(t(later + wait)).await.unwrap().delivered, 2);
    let hook = posts(&rx, "/hook");
    let single: Value = serde_json::from_slice(&hook.last().unwrap().body).unwrap();
    assert_eq!(
        (single["event"].as_str(), single["element"]["name"].as_str()),
        (Some("firing"), Some("kai")),
        "{single:#}"
    );
    eprintln!(
        "13 alerts over three moments: {} ntfy messages and {} webhook POSTs (ungrouped: 13 each)",
        posts(&rx, "/topic").len(),
        hook.len()
    );
}

/// `fleetdash run`'s config: a webhook and an ntfy channel on `rx`, `refused` agents that refuse
/// connections and `healthy` simulated agents that answer, all probed every second.
fn storm_config(
    scratch: &support::Scratch,
    rx: &Receiver,
    refused: &[&str],
    healthy: &[support::Sim],
) -> std::path::PathBuf {
    let mut agents = String::new();
    for n in refused {
        agents.push_str(&format!(
            "[[agents]]\nname = \"{n}\"\nendpoint = \"{}\"\ndialect = \"v1\"\n\n",
            support::refused_endpoint()
        ));
    }
    for (i, sim) in healthy.iter().enumerate() {
        agents.push_str(&format!(
            "[[agents]]\nname = \"ok{i}\"\nendpoint = \"{}\"\ndialect = \"v1\"\n\n",
            sim.endpoint
        ));
    }
    scratch.config(&format!(
        "[cadence]\nagents = \"1s\"\n\n\
         [[alerts.channels]]\ntype = \"webhook\"\nurl = \"{}\"\n\n\
         [[alerts.channels]]\ntype = \"ntfy\"\nurl = \"{}\"\n\n{agents}",
        rx.url("/hook"),
        rx.url("/topic"),
    ))
}

/// `n` healthy simulated agents, each on its own runtime (started off the test's).
fn healthy_sims(n: usize) -> Vec<support::Sim> {
    std::thread::spawn(move || {
        (0..n)
            .map(|i| support::Sim::healthy(&format!("ok{i}"), fleetdash::a2a::Wire::V1))
            .collect()
    })
    .join()
    .unwrap()
}

/// Stops simulated agents off the test's runtime (each owns one).
fn drop_sims(sims: Vec<support::Sim>) {
    std::thread::spawn(move || drop(sims)).join().unwrap();
}

/// Runs `fleetdash run` on `config` until both channels got a notification, then 4 s more
/// (more passes, nothing new to say); the webhook's and ntfy's POSTs, and how long the first
/// took from the start.
async fn run_until_notified(
    rx: &Receiver,
    config: &std::path::Path,
) -> (Vec<Got>, Vec<Got>, Duration) {
    let started = std::time::Instant::now();
    let mut child = run(config);
    let deadline = std::time::Instant::now() + support::HANG_BUDGET;
    while posts(rx, "/hook").is_empty() || posts(rx, "/topic").is_empty() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("no notification reached both channels: {:?}", rx.got());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let first = started.elapsed();
    tokio::time::sleep(Duration::from_secs(4)).await;
    let _ = child.kill();
    let _ = child.wait();
    (posts(rx, "/hook"), posts(rx, "/topic"), first)
}

/// Through `fleetdash run`: eleven agents that refuse connections (five others answer, so
/// this is the fleet failing, not fleetdash's reach) go red in one pass and reach each channel
/// as ONE notification carrying the eleven (the rules' grouping, shortened to a second here:
/// `support::quick_grouping_rules`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleetdash_run_sends_a_storm_of_eleven_reds_as_one_notification_per_channel() {
    let rx = Receiver::start(Mode::Ok).await;
    let scratch = support::Scratch::new();
    let names = [
        "orin", "vega", "kai", "lyra", "juno", "sol", "echo", "mira", "nova", "tam", "min",
    ];
    let healthy = healthy_sims(5);
    let config = storm_config(&scratch, &rx, &names, &healthy);
    let (hook, topic, first) = run_until_notified(&rx, &config).await;
    drop_sims(healthy);
    assert_eq!(
        (hook.len(), topic.len()),
        (1, 1),
        "one POST per channel for the storm"
    );
    let group: Value = serde_json::from_slice(&hook[0].body).unwrap();
    let keys: Vec<&str> = group["alerts"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x["element"]["key"].as_str())
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(keys.len(), 11, "{group:#}");
    for n in names {
        assert!(
            keys.contains(&format!("agent:{n}").as_str()),
            "{n}: {keys:?}"
        );
    }
    assert!(
        decoded(&topic[0].headers["title"]).starts_with("11 red: agents "),
        "{:?}",
        topic[0].headers
    );
    eprintln!(
        "11 reds through fleetdash run: 1 webhook POST and 1 ntfy message (ungrouped: 11 each), \
         the first {first:?} after start (2 red passes 1 s apart, group_wait 1 s, a delivery tick)"
    );
}

/// Through `fleetdash run`: ten of eleven agents refuse at once. That is fleetdash's blind spot
/// (the rules' `blind_spot`), not ten failures: each channel gets one alert, "fleetdash cannot
/// reach the fleet: 10 of 11 agents fail at once: this host's network?", naming the ten it
/// holds under it, and no alert of the agents' own; status.json says it for the page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleetdash_run_says_its_own_blind_spot_once_instead_of_ten_agents() {
    let rx = Receiver::start(Mode::Ok).await;
    let scratch = support::Scratch::new();
    let names = [
        "orin", "vega", "kai", "lyra", "juno", "sol", "echo", "mira", "nova", "tam",
    ];
    let healthy = healthy_sims(1);
    let config = storm_config(&scratch, &rx, &names, &healthy);
    let (hook, topic, first) = run_until_notified(&rx, &config).await;
    drop_sims(healthy);
    assert_eq!((hook.len(), topic.len()), (1, 1), "{:?}", rx.got());
    let root: Value = serde_json::from_slice(&hook[0].body).unwrap();
    assert_eq!(
        root["element"]["key"], "fleetdash:reach",
        "one alert, the root's: {root:#}"
    );
    assert_eq!(
        root["reason"], "10 of 11 agents fail at once: this host's network?",
        "{root:#}"
    );
    assert_eq!(
        root["takes_down"].as_array().map(Vec::len),
        Some(10),
        "{root:#}"
    );
    let title = decoded(&topic[0].headers["title"]);
    assert!(title.contains("cannot reach the fleet"), "{title}");
    let status = status_of(&scratch).expect("status.json");
    assert_eq!(
        status["alerts"]["reach"],
        serde_json::json!({"agents_failed": 10, "agents": 11, "hosts_failed": 0, "hosts": 0, "blind": true}),
        "the page reads it from status.json"
    );
    eprintln!(
        "10 of 11 agents refused through fleetdash run: 1 alert per channel (the blind spot, naming 10), {first:?} after start"
    );
}

/// A channel's quiet hours (23:00-07:00 in a zone an hour east of UTC), at the shipped rules and
/// a clock of the test's own: at 23:30 a red, an amber and a reminder come; nothing goes until
/// the red has lasted `quiet_hours.red_after_seconds`, then the red alone; the amber and the
/// reminder wait for 07:00 and go out then, together. Another channel without quiet hours got
/// everything at once.
#[tokio::test]
async fn quiet_hours_hold_amber_and_reminders_till_morning_and_let_a_lasting_red_through() {
    use fleetdash::alerting::outbox::Quiet;
    use fleetdash::config::QuietHours;
    let rx = Receiver::start(Mode::Ok).await;
    let dir = tempfile::tempdir().unwrap();
    let rules = shipped_rules();
    let plus_one = chrono::FixedOffset::east_opt(3600).unwrap();
    let quiet = Quiet {
        channels: [(
            "ntfy".to_string(),
            QuietHours::parse("23:00-07:00").unwrap(),
        )]
        .into(),
        red_after: chrono::Duration::seconds(rules.alerts.quiet_red_after.seconds as i64),
        zone: Some(plus_one),
    };
    let red_after = quiet.red_after;
    let d = delivery(
        dir.path(),
        vec![
            // Red and amber: an amber at night is what quiet hours keep for the morning.
            Arc::new(Ntfy::new(
                "ntfy",
                rx.url("/topic"),
                None,
                Wants {
                    bands: vec![Band::Red, Band::Amber],
                    sections: Vec::new(),
                },
            )),
            Arc::new(webhook("hook", rx.url("/hook"))),
        ],
    )
    .with_grouping(Grouping::of(&rules.alerts))
    .with_quiet(quiet);
    let at = |d: u32, h: u32, m: u32| Utc.with_ymd_and_hms(2026, 12, d, h, m, 0).unwrap();
    let night = at(1, 22, 30); // 23:30 on the channel's clock
    let mut red = red("agent", "orin", 0);
    (red.since, red.at, red.id) = (night, night, "orin:firing".into());
    let mut amber = red.clone();
    (amber.id, amber.key, amber.name, amber.band) = (
        "juno:firing".into(),
        "agent:juno".into(),
        "juno".into(),
        Band::Amber,
    );
    let mut reminder = red.clone();
    (reminder.id, reminder.key, reminder.name, reminder.event) = (
        "kai:reminder".into(),
        "agent:kai".into(),
        "kai".into(),
        AlertEvent::Reminder,
    );
    for a in [&red, &amber, &reminder] {
        d.enqueue(a.clone(), night).await.unwrap();
    }
    let group_wait = Grouping::of(&rules.alerts).wait;
    d.pass(night + group_wait).await.unwrap();
    assert!(
        posts(&rx, "/topic").is_empty(),
        "a red of a minute wakes nobody at 23:31"
    );
    assert_eq!(
        posts(&rx, "/hook").len(),
        1,
        "the channel without quiet hours got the group"
    );
    d.pass(night + red_after - chrono::Duration::seconds(1))
        .await
        .unwrap();
    assert!(posts(&rx, "/topic").is_empty());
    d.pass(night + red_after).await.unwrap();
    let topic = posts(&rx, "/topic");
    assert_eq!(topic.len(), 1, "the red that lasted goes out");
    assert_eq!(decoded(&topic[0].headers["title"]), "agent orin: red");
    // 06:59 on the channel's clock: still quiet; 07:00: the rest, together.
    d.pass(at(2, 5, 59)).await.unwrap();
    assert_eq!(posts(&rx, "/topic").len(), 1);
    d.pass(at(2, 6, 0)).await.unwrap();
    let topic = posts(&rx, "/topic");
    assert_eq!(
        topic.len(),
        2,
        "{:?}",
        topic
            .iter()
            .map(|g| decoded(&g.headers["title"]))
            .collect::<Vec<_>>()
    );
    assert_eq!(
        decoded(&topic[1].headers["title"]),
        "1 amber: agent juno · 1 still red: agent kai"
    );
}

/// The re-probe tests' rules (issue 43): the shipped ones with grouping of a second
/// (`support::quick_grouping_rules`) and a red read again a second after its first reading.
fn quick_reprobe_rules() -> String {
    let shipped = format!(
        "spacing_seconds: {}",
        shipped_rules().alerts.reprobe_spacing.seconds
    );
    let quick = support::quick_grouping_rules().replace(&shipped, "spacing_seconds: 1");
    assert!(quick.contains("spacing_seconds: 1\n"), "{quick}");
    quick
}

/// `fleetdash run`'s config for the re-probe tests: an ntfy channel on `rx`, one agent `lyra`
/// at `endpoint` with an audit log of a recent exchange (so that answering, it is green), read
/// every 9 minutes: the next regular pass never comes while a test runs (the staleness limit,
/// 10 min, allows no longer).
fn reprobe_config(scratch: &support::Scratch, rx: &Receiver, endpoint: &str) -> std::path::PathBuf {
    std::fs::write(scratch.path().join("rules.yaml"), quick_reprobe_rules()).unwrap();
    let audit = scratch.audit_log("lyra", 60.0);
    scratch.config(&format!(
        "[cadence]\nagents = \"9m\"\nlive_tasks = \"9m\"\n\n\
         [[alerts.channels]]\ntype = \"ntfy\"\nurl = \"{}\"\n\n{}",
        rx.url("/topic"),
        support::agent_toml("lyra", endpoint, "v1", &audit)
    ))
}

/// The engine's track of `key` in `state_dir`'s alerts-engine.json, once there.
fn track(scratch: &support::Scratch, key: &str) -> Option<Value> {
    let text = std::fs::read_to_string(scratch.path().join("state/alerts-engine.json")).ok()?;
    let state: Value = serde_json::from_str(&text).ok()?;
    state["tracks"].get(key).cloned()
}

/// Through `fleetdash run` (issue 43): an agent drops its first probe (fleetdash's first pass
/// finds it down), then answers for good. That red is read again a re-probe spacing later,
/// long before the next pass (9 min away): green, so the red run ends at one reading and
/// nobody is paged. Asserted on what happened: the agent got its first pass and exactly one
/// re-probe, and the engine counted the red once, then the green, and opened no alert (a
/// Firing would have opened one, in the same pass that sent it to the outbox).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_dropped_probe_is_green_at_its_reprobe_and_pages_nobody() {
    let rx = Receiver::start(Mode::Ok).await;
    let scratch = support::Scratch::new();
    let agent = flaky::Flaky::start("lyra", |connection| connection != 0);
    let config = reprobe_config(&scratch, &rx, &agent.endpoint);
    let mut child = run(&config);
    let deadline = std::time::Instant::now() + support::HANG_BUDGET;
    let track = loop {
        let t = track(&scratch, "agent:lyra");
        if let Some(t) = t.as_ref().filter(|t| t["clear_passes"] == 1) {
            break t.clone();
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!(
                "the dropped probe was never read green again: track {t:?}, agent saw {:?}",
                agent.seen()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let seen = agent.seen();
    let status = status_of(&scratch).expect("status.json");
    let _ = child.kill();
    let _ = child.wait();
    use flaky::Seen::{Answered, Reset};
    assert_eq!(
        seen,
        [Reset, Answered, Answered],
        "the first pass's card dropped; the re-probe's card and heartbeat answered"
    );
    assert_eq!(track["red_passes"], 0, "{track}");
    assert!(track["open"].is_null(), "no alert opened: {track}");
    let lyra: Vec<(&str, &str)> = status["transitions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["key"] == "agent:lyra")
        .map(|t| {
            (
                t["from"].as_str().unwrap_or("none"),
                t["to"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        lyra,
        [("red", "green"), ("none", "red")],
        "red at the first pass, green at the re-probe (newest first)"
    );
    assert!(rx.got().is_empty(), "nobody paged: {:?}", rx.got());
}

/// Through `fleetdash run` (issue 43): an agent dies in the middle of fleetdash's first pass
/// (its card answered, its heartbeat refused: red), as a killed process would. Its section is
/// read again a re-probe spacing later (refused: the second red reading) and the page reaches
/// ntfy then, before the next regular pass (9 min away) could come. Asserted on the agent's
/// count of probes when the page came: the first pass and one re-probe, nothing else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_killed_mid_pass_pages_after_its_reprobe_before_its_next_pass() {
    let rx = Receiver::start(Mode::Ok).await;
    let scratch = support::Scratch::new();
    let agent = flaky::Flaky::start("lyra", |connection| connection == 0);
    let config = reprobe_config(&scratch, &rx, &agent.endpoint);
    let mut child = run(&config);
    let deadline = std::time::Instant::now() + support::HANG_BUDGET;
    let page = loop {
        if let Some(page) = posts(&rx, "/topic").first() {
            break page.clone();
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("no page reached ntfy; the agent saw {:?}", agent.seen());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    // Whatever came up to the page, and since: no re-probe after the Firing (its alert is
    // open), no regular pass.
    let seen = agent.seen();
    let _ = child.kill();
    let _ = child.wait();
    use flaky::Seen::{Answered, Reset};
    assert_eq!(
        seen,
        [Answered, Reset, Reset],
        "the first pass (card answered, heartbeat refused), then one re-probe (card refused)"
    );
    let title = decoded(&page.headers["title"]);
    assert!(title.contains("lyra"), "{title}");
    assert_eq!(posts(&rx, "/topic").len(), 1, "one page");
}

/// Through `fleetdash run` (issue 43): an agent reached through a tunnel that is down, as every
/// agent behind a dropped SSH forward is. The agent's own alert waits under the tunnel's, so
/// the tunnel must page as fast as an agent would: it is counted on the tunnels' own reading
/// (not the hosts', which come every `systems` cadence) and re-read a re-probe spacing after
/// its first red. Every cadence here is 9 min: the page can only come through the tunnels'
/// re-probe.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_behind_a_tunnel_down_pages_through_the_tunnels_reprobe_not_the_hosts_cadence() {
    let rx = Receiver::start(Mode::Ok).await;
    let scratch = support::Scratch::new();
    std::fs::write(scratch.path().join("rules.yaml"), quick_reprobe_rules()).unwrap();
    let endpoint = support::refused_endpoint();
    let address = endpoint
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    let audit = scratch.audit_log("orin", 60.0);
    let config = scratch.config(&format!(
        "[cadence]\nagents = \"9m\"\nlive_tasks = \"9m\"\nsystems = \"9m\"\ntunnels = \"9m\"\n\n\
         [[alerts.channels]]\ntype = \"ntfy\"\nurl = \"{}\"\n\n{}\
         [[hosts]]\nname = \"laptop\"\nsource = \"local\"\n\
         [[hosts.tunnels]]\nname = \"orin\"\naddress = \"{address}\"\n",
        rx.url("/topic"),
        support::agent_toml("orin", &endpoint, "v1", &audit)
    ));
    let mut child = run(&config);
    let deadline = std::time::Instant::now() + support::HANG_BUDGET;
    let page = loop {
        if let Some(page) = posts(&rx, "/topic").first() {
            break page.clone();
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!(
                "no page reached ntfy: tunnel {:?}, agent {:?}",
                track(&scratch, "host:laptop/tunnel:orin"),
                track(&scratch, "agent:orin")
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let tunnel = track(&scratch, "host:laptop/tunnel:orin").unwrap();
    let _ = child.kill();
    let _ = child.wait();
    // The tunnel pages; the agent's own alert waits under it.
    let title = decoded(&page.headers["title"]);
    assert!(title.contains("tunnel orin on laptop"), "{title}");
    assert!(!title.contains("agent orin"), "{title}");
    // Two red readings of the tunnels (the first pass and its re-probe) made the Firing.
    assert!(tunnel["open"].is_object(), "{tunnel:#}");
    assert_eq!(tunnel["red_passes"], 2, "{tunnel:#}");
}

/// `fleetdash alerts test [CHANNEL] --config CONFIG`, its exit code, stdout and stderr.
async fn alerts_test(config: &std::path::Path, args: &[&str]) -> (Option<i32>, String, String) {
    let mut cmd = support::fleetdash();
    cmd.args(["alerts", "test", "--config"])
        .arg(config)
        .args(args);
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Issue 44: a test notification through each channel, as real alerts go, before the first
/// real red: ntfy and a webhook (each filtering what real alerts it wants) take it and say it
/// is a test; a channel refusing the request is reported with its reason, one that cannot be
/// reached as retrying; exit 1 unless every one delivered. It is no fleet alert: the real
/// outbox and the engine's files are never touched (a `fleetdash run` sharing the state dir
/// sends, counts and shows nothing of it). An unknown CHANNEL is a usage error naming those
/// there are; a CHANNEL named is the only one tried.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alerts_test_sends_a_test_through_each_channel_and_says_what_became_of_it() {
    let rx = Receiver::start(Mode::Ok).await;
    let refusing = Receiver::start(Mode::Refuse403).await;
    let scratch = support::Scratch::new();
    let config = scratch.path().join("fleetdash.toml");
    let text = format!(
        "output_dir = \"out\"\nstate_dir = \"state\"\nhub = \"lab\"\n\n[alerts]\ndashboard_url = \"https://dash.example/\"\n\n\
         [[alerts.channels]]\ntype = \"ntfy\"\nname = \"phone\"\nurl = \"{}\"\nsections = [\"hosts\"]\n\n\
         [[alerts.channels]]\ntype = \"webhook\"\nname = \"ops\"\nurl = \"{}\"\nbands = [\"amber\"]\n\n\
         [[alerts.channels]]\ntype = \"webhook\"\nname = \"pager\"\nurl = \"{}\"\n\n\
         [[alerts.channels]]\ntype = \"webhook\"\nname = \"gone\"\nurl = \"{}\"\n",
        rx.url("/topic"),
        rx.url("/hook"),
        refusing.url("/pager"),
        support::refused_endpoint()
    );
    // No `rules`: the built-in ones.
    std::fs::write(&config, text).unwrap();
    // A `fleetdash run` sharing the state dir, its outbox open.
    let state = scratch.path().join("state");
    let mut child = run(&config);
    let deadline = std::time::Instant::now() + support::HANG_BUDGET;
    while !state
        .join(fleetdash::alerting::outbox::OUTBOX_FILE)
        .exists()
    {
        assert!(std::time::Instant::now() < deadline, "run opened no outbox");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (code, stdout, stderr) = alerts_test(&config, &["--json"]).await;
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    let envelope: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    let outcomes: Vec<(String, String, Value)> = envelope["result"]["channels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["channel"].as_str().unwrap().to_string(),
                c["outcome"].as_str().unwrap().to_string(),
                c["reason"].clone(),
            )
        })
        .collect();
    let names: Vec<(&str, &str)> = outcomes
        .iter()
        .map(|(c, o, _)| (c.as_str(), o.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            ("phone", "delivered"),
            ("ops", "delivered"),
            ("pager", "refused"),
            ("gone", "retrying")
        ],
        "{stdout}"
    );
    assert!(
        outcomes[2].2.as_str().unwrap().starts_with("HTTP 403"),
        "{:?}",
        outcomes[2]
    );
    assert!(
        outcomes[3].2.as_str().unwrap().contains("refused"),
        "{:?}",
        outcomes[3]
    );
    assert_eq!(envelope["result"]["delivered"], 2);
    // What the phone shows: a title saying it is a test, from which hub to which channel, a
    // body saying nothing is wrong, no button to silence or acknowledge an element.
    let topic = posts(&rx, "/topic");
    assert_eq!(topic.len(), 1);
    assert_eq!(
        decoded(topic[0].headers.get("title").unwrap()),
        "fleetdash test: lab to phone"
    );
    let body = String::from_utf8_lossy(&topic[0].body).into_owned();
    assert!(
        body.contains("a test notification, nothing is wrong")
            && body.contains("fleetdash alerts test")
            && body.contains(&config.display().to_string()),
        "{body}"
    );
    let actions = decoded(topic[0].headers.get("actions").unwrap());
    assert!(
        actions.contains("Open") && !actions.contains("Acknowledge"),
        "{actions}"
    );
    // A machine reads it as a test, not a firing.
    let hook: Value = serde_json::from_slice(&posts(&rx, "/hook")[0].body).unwrap();
    assert_eq!(hook["event"], "test");
    assert_eq!(hook["element"]["kind"], "test");
    assert!(
        hook["headline"]
            .as_str()
            .unwrap()
            .starts_with("fleetdash test: lab to ops: a test notification"),
        "{hook:#}"
    );
    // In words: one line per channel, then the count.
    let (code, text, _) = alerts_test(&config, &[]).await;
    assert_eq!(code, Some(1));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5, "{text}");
    assert!(lines[0].starts_with("phone  delivered"), "{text}");
    assert!(
        lines[2].starts_with("pager  refused    HTTP 403")
            && lines[2].contains("a real alert would be given up the same way"),
        "{text}"
    );
    assert!(
        lines[3].starts_with("gone   retrying ") && lines[3].contains("would be tried again from"),
        "{text}"
    );
    assert!(
        lines[4].ends_with("2 of 4 channels delivered the test"),
        "{text}"
    );
    // One channel by name, alone; an unknown one names those there are.
    let (code, text, _) = alerts_test(&config, &["ops"]).await;
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.ends_with("1 of 1 channels delivered the test\n"),
        "{text}"
    );
    assert_eq!(posts(&rx, "/hook").len(), 3);
    let (code, _, stderr) = alerts_test(&config, &["opps"]).await;
    assert_eq!(code, Some(2));
    assert!(
        stderr.contains("no channel \"opps\"") && stderr.contains("phone, ops, pager, gone"),
        "{stderr}"
    );
    // No fleet alert: the running collector's outbox holds nothing of the tests (it sent
    // none: the counts above are the tests' own) and knows no channel failing; the tests kept
    // to their own outbox.
    let _ = child.kill();
    let _ = child.wait();
    let outbox = Outbox::open(&state, RedactionGate::default(), limits()).unwrap();
    assert_eq!(outbox.rows().unwrap(), 0);
    assert!(outbox.health().unwrap().is_empty());
    assert!(
        state
            .join(fleetdash::alerting::trial::TEST_OUTBOX_FILE)
            .exists()
    );
}

/// Issue 44, expected trouble declared: an agent (`flaky` until 2027-01-31) and a tunnel
/// (`flaky`, no end) known to drop, and an agent behind that tunnel, all red with a neighbour
/// that is not declared. Passes at a fixed clock through the engine, the real outbox and a
/// webhook: only the undeclared agent wakes anybody; the declared elements still change band in
/// the transitions and are said held as declared in what the write carries; the agent behind
/// the tunnel is held under it as under any root. As 2027-01-31 ends (UTC) the agent's
/// declaration lapses and its Firing goes out; the tunnel's stands.
#[tokio::test]
async fn a_declared_flaky_element_wakes_nobody_until_its_declaration_lapses() {
    use fleetdash::alerting::engine::{Alerting, Readings, gone};
    use fleetdash::write::transitions::{Elements, compare};
    use fleetdash_model::alerts::Element;

    let rx = Receiver::start(Mode::Ok).await;
    let dir = tempfile::tempdir().unwrap();
    let config = config_in(
        dir.path(),
        &format!(
            "[[alerts.channels]]\ntype = \"webhook\"\nurl = \"{}\"\n\
             [[agents]]\nname = \"orin\"\nendpoint = \"http://127.0.0.1:18301\"\n\
             flaky = {{ reason = \"laptop tunnel drops at night\", until = \"2027-01-31\" }}\n\
             [[agents]]\nname = \"vega\"\nendpoint = \"http://127.0.0.1:18302\"\n\
             [[agents]]\nname = \"behind\"\nendpoint = \"http://127.0.0.1:18303\"\n\
             depends_on = [\"host:laptop/tunnel:heart\"]\n\
             [[hosts]]\nname = \"laptop\"\n\
             [[hosts.tunnels]]\nname = \"heart\"\naddress = \"127.0.0.1:18303\"\n\
             flaky = {{ reason = \"autossh restarts it\" }}\n",
            rx.url("/hook")
        ),
    );
    std::fs::create_dir_all(&config.state_dir).unwrap();
    let rules = shipped_rules();
    let engine = Arc::new(Alerting::new(&config, &rules, RedactionGate::default()));
    let d = configured(&config).await.unwrap();
    let el = |kind: &'static str, name: &str, band: Band| Element {
        kind,
        name: name.into(),
        band,
        reason: (band == Band::Red).then(|| "down: connection refused".to_string()),
    };
    let fleet = |band: Band| -> Elements {
        [
            ("agent:orin", el("agent", "orin", band)),
            ("agent:vega", el("agent", "vega", band)),
            ("agent:behind", el("agent", "behind", band)),
            ("host:laptop", el("host", "laptop", Band::Green)),
            (
                "host:laptop/tunnel:heart",
                el("tunnel", "heart on laptop", band),
            ),
        ]
        .into_iter()
        .map(|(k, e)| (k.to_string(), e))
        .collect()
    };
    let (green, red) = (fleet(Band::Green), fleet(Band::Red));
    let at = |s: &str| DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc);
    // Ten minutes before the declaration's last day ends (UTC): less than a reminder's period.
    let mut now = at("2027-01-31T23:50:00Z");
    // The band changes are recorded whatever holds their alerts.
    let changed: Vec<String> = compare(Some(&green), &red, now)
        .into_iter()
        .map(|t| t.key)
        .collect();
    assert!(
        changed.contains(&"agent:orin".to_string())
            && changed.contains(&"host:laptop/tunnel:heart".to_string()),
        "{changed:?}"
    );
    let pass =
        |now: DateTime<Utc>| engine.after_write(&red, &Readings::new(), &gone::Ended::new(), now);
    let mut fired = Vec::new();
    // Well past fail_after: one Firing, vega's.
    let passes = rules.alerts.fail_after.count + 3;
    assert!(passes < 10, "the passes end before the day does");
    for _ in 0..passes {
        now += chrono::Duration::minutes(1);
        fired.extend(pass(now));
    }
    let keys: Vec<(&str, AlertEvent)> = fired.iter().map(|a| (a.key.as_str(), a.event)).collect();
    assert_eq!(keys, [("agent:vega", AlertEvent::Firing)]);
    d.enqueue_all(fired.clone(), now).await.unwrap();
    let wait = rules.alerts.group_wait.seconds as i64;
    d.pass(now + chrono::Duration::seconds(wait)).await.unwrap();
    let hooks: Vec<Value> = rx
        .got()
        .iter()
        .map(|g| serde_json::from_slice(&g.body).unwrap())
        .collect();
    assert_eq!(hooks.len(), 1, "{hooks:#?}");
    assert_eq!(hooks[0]["element"]["key"], "agent:vega");

    // What the write carries: both declarations, as declared, with the day orin's ends; the
    // agent behind the tunnel is not held by a declaration of its own.
    let look = fleetdash::alerting::look::Look {
        alerting: engine.clone(),
        outbox: Ok(d.outbox().clone()),
        channels: vec!["webhook".into()],
        deadman: None,
    };
    let held = fleetdash::write::status_json::AlertsLook::look(&look, &red, now).held;
    let declared: Vec<(&str, bool, Option<DateTime<Utc>>)> = held
        .iter()
        .map(|h| (h.key.as_str(), h.flaky, h.until))
        .collect();
    assert_eq!(
        declared,
        [
            ("agent:orin", true, Some(at("2027-02-01T00:00:00Z"))),
            ("host:laptop/tunnel:heart", true, None),
        ]
    );
    let utc = chrono::FixedOffset::east_opt(0).unwrap();
    assert_eq!(
        held[0].describe(now, utc),
        "declared flaky: laptop tunnel drops at night (until 31 Jan)"
    );

    // The day ends: orin's declaration lapses and its Firing goes out at the next pass; the
    // tunnel's stands, and so does the hold on what is behind it.
    now = at("2027-02-01T00:00:00Z");
    let after = pass(now);
    let keys: Vec<(&str, AlertEvent)> = after.iter().map(|a| (a.key.as_str(), a.event)).collect();
    assert_eq!(keys, [("agent:orin", AlertEvent::Firing)]);
    let held = fleetdash::write::status_json::AlertsLook::look(&look, &red, now).held;
    let still: Vec<&str> = held.iter().map(|h| h.key.as_str()).collect();
    assert_eq!(still, ["host:laptop/tunnel:heart"]);
}

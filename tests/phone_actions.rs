//! Acting from the phone, end to end on loopback: `fleetdash run` sends a red agent to an ntfy
//! receiver with action buttons; the test follows the "Silence 1 h" button as the ntfy app
//! does (a POST with no password) to `fleetdash serve`, then tries the links an attacker or a
//! late thumb would: the same link again, a changed signature, another element's, an expired
//! one, a GET. Only the good one changes anything.

use crate::support;

use crate::support::receiver;

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use receiver::{Mode, Receiver};
use serde_json::Value;

const USER: &str = "young";
const PASSWORD: &str = "phone-actions-4b1d";

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The ntfy button `label`'s entry in a message's `Actions` header.
fn button(actions: &[Value], label: &str) -> Value {
    actions
        .iter()
        .find(|a| a["label"] == label)
        .cloned()
        .unwrap_or_else(|| panic!("no {label:?} button: {actions:?}"))
}

/// `url` with its token's signature part replaced by `make(token)`.
fn with_token(url: &str, make: impl FnOnce(&str) -> String) -> String {
    let (base, token) = url.split_once("?t=").unwrap();
    format!("{base}?t={}", make(token))
}

async fn post(client: &reqwest::Client, url: &str) -> (u16, Value, String) {
    let reply = client.post(url).send().await.unwrap();
    let status = reply.status().as_u16();
    let kind = reply
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let body: Value = serde_json::from_slice(&reply.bytes().await.unwrap()).unwrap_or_default();
    (status, body, kind)
}

/// status.json's `alerts`, once there is one.
fn alerts(scratch: &support::Scratch) -> Value {
    std::fs::read(scratch.status_path())
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .map(|s| s["alerts"].clone())
        .unwrap_or_default()
}

fn held(scratch: &support::Scratch) -> Vec<Value> {
    alerts(scratch)["held"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// `fleetdash run` sending the red agent vega to `ntfy` with buttons, and `fleetdash serve`
/// taking the buttons' links: the config, serve's port, and both processes.
fn start(scratch: &support::Scratch, ntfy: &Receiver) -> (std::path::PathBuf, u16, Killed, Killed) {
    std::fs::write(
        scratch.path().join("htpasswd"),
        format!("{USER}:{}\n", bcrypt::hash(PASSWORD, 4).unwrap()),
    )
    .unwrap();
    let serve_port = free_port();
    let config = scratch.config(&format!(
        "[cadence]\nagents = \"1s\"\n\n\
         [serve]\nhtpasswd = \"htpasswd\"\n\n\
         [alerts]\ndashboard_url = \"http://127.0.0.1:{serve_port}/\"\n\n\
         [[alerts.channels]]\ntype = \"ntfy\"\nurl = \"{topic}\"\n\n\
         [[agents]]\nname = \"vega\"\nendpoint = \"{vega}\"\ndialect = \"v1\"\n",
        topic = ntfy.url("/fleet"),
        vega = support::refused_endpoint(),
    ));
    let run = Killed(
        support::fleetdash()
            .args(["run", "--config"])
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let serve = Killed(
        support::fleetdash()
            .args([
                "serve",
                "--listen",
                &format!("127.0.0.1:{serve_port}"),
                "--config",
            ])
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    (config, serve_port, run, serve)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_phone_button_silences_once_and_every_other_link_is_refused() {
    let ntfy = Receiver::start(Mode::Ok).await;
    let scratch = support::Scratch::new();
    let (config, serve_port, _run, _serve) = start(&scratch, &ntfy);

    // The Firing reaches ntfy with its buttons.
    let deadline = Instant::now() + support::HANG_BUDGET;
    let message = loop {
        if let Some(m) = ntfy.got().into_iter().find(|g| g.path == "/fleet") {
            break m;
        }
        assert!(Instant::now() < deadline, "no ntfy message");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let actions: Vec<Value> =
        serde_json::from_str(message.headers["actions"].to_str().unwrap()).unwrap();
    assert_eq!(actions.len(), 3, "{actions:?}");
    let open = button(&actions, "Open");
    assert_eq!(open["action"], "view");
    assert_eq!(
        open["url"],
        format!("http://127.0.0.1:{serve_port}/#agent-vega")
    );
    let silence = button(&actions, "Silence 1 h");
    assert_eq!(silence["action"], "http");
    assert_eq!(silence["method"], "POST");
    let silence_url = silence["url"].as_str().unwrap().to_string();
    assert!(
        silence_url.starts_with(&format!("http://127.0.0.1:{serve_port}/act?t=")),
        "{silence_url}"
    );
    let ack = button(&actions, "Acknowledge");
    assert_ne!(ack["url"], silence["url"], "one link per action");

    // The button, as the ntfy app presses it: a POST, no password.
    let client = reqwest::Client::new();
    let deadline = Instant::now() + support::HANG_BUDGET;
    let (status, body, _) = loop {
        match client.post(&silence_url).send().await {
            Ok(reply) => {
                let status = reply.status().as_u16();
                let body = reply.bytes().await.unwrap();
                break (
                    status,
                    serde_json::from_slice::<Value>(&body).unwrap(),
                    String::new(),
                );
            }
            Err(_) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await
            }
            Err(e) => panic!("serve never answered: {e}"),
        }
    };
    assert_eq!(status, 200, "{body:#}");
    assert_eq!(body["element"], "agent:vega");
    assert_eq!(body["action"], "silence");
    assert!(
        body["done"].as_str().is_some_and(
            |d| d.starts_with("silenced agent:vega until ") && d.ends_with("(from the phone)")
        ),
        "{body:#}"
    );
    // Recorded as the CLI's silence would be, and shown.
    let deadline = Instant::now() + support::HANG_BUDGET;
    let held = loop {
        let held = held(&scratch);
        if !held.is_empty() {
            break held;
        }
        assert!(
            Instant::now() < deadline,
            "status.json never showed vega held"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(held.len(), 1, "{held:?}");
    assert_eq!(held[0]["key"], "agent:vega");
    assert_eq!(held[0]["reason"], "from the phone");
    let list = support::fleetdash()
        .args(["silence", "list", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    support::assert_success(&list);
    let listed = String::from_utf8_lossy(&list.stdout).to_string();
    assert_eq!(listed.lines().count(), 1, "{listed}");
    assert!(
        listed.contains("agent=vega") && listed.contains("from the phone"),
        "{listed}"
    );

    // The Acknowledge button: the alert is acked as `fleetdash ack` would, and shown.
    let ack_url = ack["url"].as_str().unwrap().to_string();
    let (status, body, _) = post(&client, &ack_url).await;
    assert_eq!(status, 200, "{body:#}");
    assert_eq!(body["action"], "ack");
    assert!(
        body["done"]
            .as_str()
            .is_some_and(|d| d.starts_with("acked agent:vega at ")),
        "{body:#}"
    );
    let deadline = Instant::now() + support::HANG_BUDGET;
    loop {
        let acked = alerts(&scratch)["acked"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if let Some(a) = acked.first() {
            assert_eq!(a["key"], "agent:vega");
            assert_eq!(a["via"], "from the phone");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "status.json never showed vega acked"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (status, body, _) = post(&client, &ack_url).await;
    assert_eq!(status, 403, "an ack link works once too: {body:#}");

    // Every other link: 403 with the ASC envelope, nothing changed.
    let signer =
        fleetdash::alerting::phone::Signer::load_or_create(&scratch.path().join("state")).unwrap();
    let long_ago = chrono::DateTime::parse_from_rfc3339("2026-03-29T01:30:00Z")
        .unwrap()
        .with_timezone(&chrono::Utc);
    let expired = with_token(&silence_url, |_| {
        signer.token(
            "agent:vega",
            fleetdash::alerting::phone::Action::Silence,
            long_ago,
        )
    });
    let forged = with_token(&silence_url, |token| {
        let (payload, signature) = token.split_once('.').unwrap();
        let mut sig = B64.decode(signature).unwrap();
        sig[0] ^= 1;
        format!("{payload}.{}", B64.encode(sig))
    });
    let another_element = with_token(&silence_url, |token| {
        let (payload, signature) = token.split_once('.').unwrap();
        let text = String::from_utf8(B64.decode(payload).unwrap()).unwrap();
        let theirs = text.replace("agent:vega", "agent:orin");
        assert_ne!(theirs, text);
        format!("{}.{signature}", B64.encode(theirs))
    });
    for (what, url, words) in [
        ("replayed", silence_url.clone(), "used already"),
        ("forged", forged, "signature does not match"),
        (
            "another element's",
            another_element,
            "signature does not match",
        ),
        ("expired", expired, "expired at 2026-03-29 01:30 UTC"),
        (
            "garbled",
            format!("http://127.0.0.1:{serve_port}/act?t=not-a-token"),
            "not an action link",
        ),
        (
            "without a token",
            format!("http://127.0.0.1:{serve_port}/act"),
            "not an action link",
        ),
    ] {
        let (status, body, kind) = post(&client, &url).await;
        assert_eq!(status, 403, "{what}: {body:#}");
        assert!(
            kind.starts_with("application/problem+json"),
            "{what}: {kind}"
        );
        assert_eq!(
            body["agent_status"]["name"], "PERMISSION_DENIED",
            "{what}: {body:#}"
        );
        assert!(
            body["detail"].as_str().is_some_and(|d| d.contains(words)),
            "{what}: {body:#}"
        );
    }
    let reply = client.get(&silence_url).send().await.unwrap();
    assert_eq!(reply.status().as_u16(), 405, "a GET does nothing");
    // Only /act goes without the password.
    let page = client
        .get(format!("http://127.0.0.1:{serve_port}/"))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status().as_u16(), 401);
    let list = support::fleetdash()
        .args(["silence", "list", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&list.stdout).lines().count(),
        1,
        "the refused links changed nothing"
    );
}

/// Issue 32: a link's validity counted from the alert's moment, so a notification held back (a
/// channel down, quiet hours) arrived with dead buttons and did not say so. With links valid
/// for 8 s and the ntfy receiver failing the first attempt (the outbox retries 10 s later),
/// the notification that finally leaves carries links valid from then, and its body says until
/// when.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notification_held_back_leaves_with_buttons_that_work_and_says_until_when() {
    let ntfy = Receiver::start(Mode::Fail500).await;
    let scratch = support::Scratch::new();
    let rules = std::fs::read_to_string(scratch.path().join("rules.yaml")).unwrap();
    let shortened = rules.replace("link_valid_seconds: 86400", "link_valid_seconds: 8");
    assert_ne!(rules, shortened, "the rules file's link validity moved");
    std::fs::write(scratch.path().join("rules.yaml"), shortened).unwrap();
    let (_config, _serve_port, _run, _serve) = start(&scratch, &ntfy);
    // The first attempt fails (status.json says since when); the channel comes back for the
    // retry.
    let deadline = Instant::now() + support::HANG_BUDGET;
    let failing_since = loop {
        let since = alerts(&scratch)["channels"]
            .as_array()
            .and_then(|c| c.iter().find_map(|c| c["failing_since"].as_str()))
            .map(|s| chrono::DateTime::parse_from_rfc3339(s).unwrap());
        if let Some(since) = since {
            break since;
        }
        assert!(Instant::now() < deadline, "the first attempt never failed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    ntfy.set(Mode::Ok);
    let deadline = Instant::now() + support::HANG_BUDGET;
    let message = loop {
        if let Some(m) = ntfy.got().into_iter().find(|g| g.path == "/fleet") {
            break m;
        }
        assert!(Instant::now() < deadline, "the retry never came");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let actions: Vec<Value> =
        serde_json::from_str(message.headers["actions"].to_str().unwrap()).unwrap();
    let silence_url = button(&actions, "Silence 1 h")["url"]
        .as_str()
        .unwrap()
        .to_string();
    let client = reqwest::Client::new();
    let (status, body, _) = post(&client, &silence_url).await;
    assert!(
        (message.at - failing_since.with_timezone(&chrono::Utc)).num_seconds() >= 8,
        "the retry came before the first attempt's links would have expired"
    );
    assert_eq!(status, 200, "a held-back notification's button: {body:#}");
    let text = String::from_utf8_lossy(&message.body);
    assert!(text.contains("Buttons work until "), "{text}");
}

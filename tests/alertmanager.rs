//! The `alertmanager` channel against the real Alertmanager (Debian's `prometheus-alertmanager`,
//! installed by scripts/test), started by the test on loopback with a route of its own that
//! notifies a local webhook receiver: `fleetdash run` sends two red hosts, Alertmanager shows
//! them in its API with fleetdash's labels, groups them by its own route into one notification,
//! keeps them firing while fleetdash sends them again, and resolves them on recovery.

use crate::support;

use crate::support::receiver;

use crate::support::alertmanager as am;

use std::process::Stdio;
use std::time::Instant;

use am::{Am, keys};

use receiver::{Mode, Receiver};
use serde_json::Value;

/// The webhook notifications Alertmanager sent the receiver.
fn notifications(rx: &Receiver) -> Vec<Value> {
    rx.got()
        .iter()
        .filter(|g| g.path == "/am")
        .map(|g| serde_json::from_slice(&g.body).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleetdash_run_fires_groups_keeps_and_resolves_alerts_in_a_real_alertmanager() {
    let rx = Receiver::start(Mode::Ok).await;
    let scratch = support::Scratch::new();
    // Resent every second, each ending 60 s later: the test sees endsAt move on while fleetdash
    // runs (the shipped 60 s / 240 s would take minutes).
    let rules = support::quick_grouping_rules()
        .replace("resend_seconds: 60", "resend_seconds: 1")
        .replace("ends_after_seconds: 240", "ends_after_seconds: 60");
    assert!(
        rules.contains("resend_seconds: 1"),
        "rules.yaml has no alertmanager group"
    );
    std::fs::write(scratch.path().join("rules.yaml"), rules).unwrap();
    let am = tokio::task::block_in_place(|| Am::start(&scratch.path().join("am"), &rx.url("/am")));
    // Two hosts whose disk path does not exist yet: red, each for its own reason.
    let disk = |name: &str| scratch.path().join(format!("disk-{name}"));
    let config = scratch.config(&format!(
        "[cadence]\nsystems = \"1s\"\n\n\
         [alerts]\ndashboard_url = \"https://fleet.example/\"\n\n\
         [[alerts.channels]]\ntype = \"alertmanager\"\nname = \"am\"\nurl = \"http://{am}/\"\n\n\
         [[hosts]]\nname = \"here\"\nsource = \"local\"\ndisk_path = \"{here}\"\n\n\
         [[hosts]]\nname = \"there\"\nsource = \"local\"\ndisk_path = \"{there}\"\n",
        am = am.addr,
        here = disk("here").display(),
        there = disk("there").display(),
    ));
    let started = Instant::now();
    let mut run = support::fleetdash()
        .args(["run", "--config"])
        .arg(&config)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(scratch.path().join("run.log")).unwrap())
        .spawn()
        .unwrap();
    let ran = scratch.path().join("run.log");
    let run_said = || std::fs::read_to_string(&ran).unwrap_or_default();

    // Both in Alertmanager's API, with fleetdash's labels and words.
    let firing = tokio::task::block_in_place(|| {
        am.eventually("both hosts firing in Alertmanager", || {
            let alerts = am.fleetdash_alerts()?;
            (keys(&alerts) == ["host:here", "host:there"])
                .then_some(alerts.clone())
                .ok_or_else(|| format!("{alerts:?}\nfleetdash said:\n{}", run_said()))
        })
    });
    let in_am = started.elapsed();
    let here = firing
        .iter()
        .find(|a| a["labels"]["key"] == "host:here")
        .unwrap();
    assert_eq!(here["labels"]["kind"], "host");
    assert_eq!(here["labels"]["name"], "here");
    assert_eq!(here["labels"]["band"], "red");
    assert_eq!(here["labels"]["section"], "systems");
    // No `hub` in the config: this machine's name says which hub saw it.
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    assert_eq!(here["labels"]["hub"], host.trim(), "{here:#}");
    assert_eq!(here["status"]["state"], "active");
    let reason = here["annotations"]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("statvfs") && reason.contains("disk-here"),
        "{here:#}"
    );
    assert!(
        here["annotations"]["summary"]
            .as_str()
            .is_some_and(|s| s.starts_with("✖ fail · host here")),
        "{here:#}"
    );
    assert_eq!(here["generatorURL"], "https://fleet.example/");

    // Alertmanager grouped them by its own route (alertname): one notification, both alerts.
    // If fleetdash saw them red a pass apart (a busy machine), Alertmanager's first notice has
    // one and its next, a group interval later, both: the group is what is asserted.
    let grouped = tokio::task::block_in_place(|| {
        am.eventually("Alertmanager's notification of the group", || {
            let said = notifications(&rx);
            said.iter()
                .find(|n| {
                    n["status"] == "firing" && n["alerts"].as_array().is_some_and(|a| a.len() == 2)
                })
                .cloned()
                .ok_or_else(|| format!("none with both yet: {said:?}"))
        })
    });
    let notified = started.elapsed();
    assert_eq!(grouped["groupLabels"]["alertname"], "FleetdashRed");
    let alerts = grouped["alerts"].as_array().unwrap();
    assert_eq!(keys(alerts), ["host:here", "host:there"], "{grouped:#}");

    // While red, fleetdash sends them again: their end moves on, so they never lapse.
    let first_end = here["endsAt"].as_str().unwrap().to_string();
    tokio::task::block_in_place(|| {
        am.eventually("endsAt renewed by a resend", || {
            let alerts = am.fleetdash_alerts()?;
            let end = alerts
                .iter()
                .find(|a| a["labels"]["key"] == "host:here")
                .and_then(|a| a["endsAt"].as_str())
                .unwrap_or_default()
                .to_string();
            // RFC 3339 in UTC compares as text.
            (end > first_end)
                .then_some(())
                .ok_or_else(|| format!("still {end} (first {first_end})"))
        })
    });

    // Recovery: the disk paths appear; the Recovered resolves both in Alertmanager.
    std::fs::create_dir_all(disk("here")).unwrap();
    std::fs::create_dir_all(disk("there")).unwrap();
    let healed = Instant::now();
    tokio::task::block_in_place(|| {
        am.eventually("no fleetdash alert active in Alertmanager", || {
            let alerts = am.fleetdash_alerts()?;
            alerts
                .is_empty()
                .then_some(())
                .ok_or_else(|| format!("{alerts:?}"))
        })
    });
    let resolved = tokio::task::block_in_place(|| {
        am.eventually("Alertmanager's resolved notification", || {
            notifications(&rx)
                .into_iter()
                .find(|n| n["status"] == "resolved")
                .ok_or_else(|| "none yet".to_string())
        })
    });
    let resolved_after = healed.elapsed();
    let alerts = resolved["alerts"].as_array().unwrap();
    assert_eq!(keys(alerts), ["host:here", "host:there"], "{resolved:#}");
    assert!(
        alerts.iter().all(|a| a["status"] == "resolved"),
        "{resolved:#}"
    );
    let _ = run.kill();
    let _ = run.wait();
    eprintln!(
        "alertmanager round trip: both reds in its API {in_am:?} after fleetdash run started \
         (2 red passes 1 s apart, group_wait 1 s), its grouped notification at {notified:?}; \
         resolved notification {resolved_after:?} after the disks appeared (2 green passes, \
         group_wait 1 s, Alertmanager's group_interval 1 s)"
    );
    assert!(
        !run_said().contains("not sent again to alertmanager"),
        "{}",
        run_said()
    );
}

/// A cluster channel (`urls`) POSTs to every member: delivered while one takes it, whichever
/// is down or failing; a failure only when every member failed, retryable if any may recover.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_channel_is_delivered_while_one_member_takes_it() {
    use chrono::{TimeZone, Utc};
    use fleetdash::alerting::provider::Provider;
    use fleetdash::alerting::provider::alertmanager::Alertmanager;
    use fleetdash::alerting::provider::common::Wants;
    use fleetdash::alerting::{Alert, AlertEvent};
    use fleetdash_model::{Asc, Band};

    let at = Utc.timestamp_opt(1_800_000_000, 0).unwrap();
    let red = Alert {
        id: "host:lab:firing:1800000000".into(),
        key: "host:lab".into(),
        kind: "host".into(),
        name: "lab".into(),
        event: AlertEvent::Firing,
        band: Band::Red,
        reason: Some("statvfs failed".into()),
        status: Asc::DEPENDENCY_UNAVAILABLE,
        since: at,
        at,
        takes_down: vec![],
        link: None,
        detail: None,
    };
    let channel = |members: Vec<url::Url>| {
        Alertmanager::new(
            "am",
            &members,
            "laptop",
            None,
            Wants::default(),
            chrono::Duration::seconds(240),
        )
    };
    let up = Receiver::start(Mode::Ok).await;
    let failing = Receiver::start(Mode::Fail500).await;
    let refused: url::Url = support::refused_endpoint().parse().unwrap();

    // One member refused, one answering 500, one up: delivered, to the one up.
    let am = channel(vec![refused.clone(), failing.url("/"), up.url("/")]);
    am.send(&red).await.unwrap();
    let got = up.got();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].path, "/api/v2/alerts");
    let sent: Value = serde_json::from_slice(&got[0].body).unwrap();
    assert_eq!(sent[0]["labels"]["hub"], "laptop", "{sent:#}");
    assert_eq!(sent[0]["labels"]["key"], "host:lab", "{sent:#}");

    // Every member failing: not delivered, and worth another try.
    let am = channel(vec![refused, failing.url("/")]);
    let e = am.send(&red).await.unwrap_err();
    assert!(e.retryable, "{e:?}");
    assert!(e.reason.starts_with("every member failed"), "{e:?}");
    assert_eq!(up.got().len(), 1, "nothing more reached the member up");
}

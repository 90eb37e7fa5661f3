//! Past one hub (issue 34): two `fleetdash run` over overlapping fleets, each with an
//! `alertmanager` channel listing both members of a real Alertmanager HA pair (Debian's
//! `prometheus-alertmanager`, two processes gossiping on loopback), and the example config the
//! package ships (`packaging/alertmanager/alertmanager.yml`) routing to a local webhook.
//!
//! A storm (every host's disk gone at once) seen by one hub, then by both, reaches the
//! receiver as one notification listing what each hub saw; with the member that would notify
//! killed mid-storm, still one, from the other, nothing lost. "One" is judged after every live
//! member has made its decision (its notification log queried for the group), not after a
//! wait. The example config is checked by amtool, and its inhibit rule by Alertmanager itself
//! on alerts as fleetdash words them.

use crate::support;

use crate::support::receiver;

use crate::support::alertmanager as am;

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use am::{AMTOOL, Am, Gossip, free_port, require};
use receiver::{Mode, Receiver};
use serde_json::{Value, json};

const EXAMPLE: &str = include_str!("../packaging/alertmanager/alertmanager.yml");
/// The example's receiver, which the test points at its own.
const EXAMPLE_RECEIVER: &str = "http://127.0.0.1:9095/alertmanager";
/// The example's group_wait and the test's: long enough for both hubs' views of a storm to
/// arrive before the first notification (each hub sends after its own passes), short enough
/// for a test.
const EXAMPLE_GROUP_WAIT: &str = "group_wait: 30s";
const TEST_GROUP_WAIT: &str = "group_wait: 10s";

/// The example config, notifying `webhook`, with the test's group_wait.
fn example_config(webhook: &url::Url) -> String {
    assert!(
        EXAMPLE.contains(EXAMPLE_RECEIVER) && EXAMPLE.contains(EXAMPLE_GROUP_WAIT),
        "packaging/alertmanager/alertmanager.yml no longer has {EXAMPLE_RECEIVER} and \
         {EXAMPLE_GROUP_WAIT}: update this test with it"
    );
    EXAMPLE
        .replace(EXAMPLE_RECEIVER, webhook.as_str())
        .replace(EXAMPLE_GROUP_WAIT, TEST_GROUP_WAIT)
}

/// A real Alertmanager HA pair, gossiping on loopback.
fn start_pair(dir: &Path, config: &str) -> Vec<Am> {
    let gossip: Vec<SocketAddr> = (0..2)
        .map(|_| format!("127.0.0.1:{}", free_port()).parse().unwrap())
        .collect();
    std::thread::scope(|s| {
        let started: Vec<_> = (0..2)
            .map(|i| {
                let g = Gossip {
                    listen: gossip[i],
                    peers: gossip.clone(),
                    // Each member waits this long per place before notifying what an earlier
                    // member has not: gossip on loopback takes milliseconds.
                    peer_timeout: "5s",
                };
                let dir = dir.join(format!("am{i}"));
                s.spawn(move || Am::start_with(&dir, config, Some(&g)))
            })
            .collect();
        let members: Vec<Am> = started.into_iter().map(|h| h.join().unwrap()).collect();
        for m in &members {
            m.eventually("both members in its cluster", || {
                let peers = m.cluster()?["peers"].as_array().map_or(0, Vec::len);
                (peers == 2)
                    .then_some(())
                    .ok_or_else(|| format!("{peers} peers"))
            });
        }
        members
    })
}

/// The member that notifies first: Alertmanager orders a cluster's members by their names,
/// and the first waits for no one.
fn first_to_notify(members: &[Am]) -> usize {
    let names: Vec<String> = members
        .iter()
        .map(|m| m.cluster().unwrap()["name"].as_str().unwrap().to_string())
        .collect();
    let first = names.iter().min().unwrap();
    names.iter().position(|n| n == first).unwrap()
}

/// One `fleetdash run`, a hub named `name`, watching local hosts whose disks are folders in
/// `disks`, with one alertmanager channel listing `members`.
struct Hub {
    name: &'static str,
    hosts: &'static [&'static str],
    dir: tempfile::TempDir,
    child: Child,
}

impl Drop for Hub {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Hub {
    fn start(
        name: &'static str,
        hosts: &'static [&'static str],
        disks: &Path,
        members: &[&Am],
    ) -> Hub {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("rules.yaml"),
            support::quick_grouping_rules(),
        )
        .unwrap();
        let urls: Vec<String> = members
            .iter()
            .map(|m| format!("\"{}\"", m.external_url))
            .collect();
        let mut config = format!(
            "hub = \"{name}\"\noutput_dir = \"out\"\nstate_dir = \"state\"\nrules = \"rules.yaml\"\n\n\
             [cadence]\nsystems = \"1s\"\n\n\
             [alerts]\ndashboard_url = \"https://fleet.example/\"\n\n\
             [[alerts.channels]]\ntype = \"alertmanager\"\nname = \"am\"\nurls = [{}]\n",
            urls.join(", ")
        );
        for host in hosts {
            config.push_str(&format!(
                "\n[[hosts]]\nname = \"{host}\"\nsource = \"local\"\ndisk_path = \"{}\"\n",
                disk(disks, host).display()
            ));
        }
        let file = dir.path().join("fleetdash.toml");
        std::fs::write(&file, config).unwrap();
        let child = support::fleetdash()
            .args(["run", "--config"])
            .arg(&file)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.path().join("run.log")).unwrap())
            .spawn()
            .unwrap();
        Hub {
            name,
            hosts,
            dir,
            child,
        }
    }

    fn said(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("run.log")).unwrap_or_default()
    }

    fn snapshot(&self) -> Result<Value, String> {
        let text = std::fs::read_to_string(self.dir.path().join("out/status.json"))
            .map_err(|e| e.to_string())?;
        serde_json::from_str(&text).map_err(|e| e.to_string())
    }

    /// Whether every host of this hub is green in its latest snapshot.
    fn all_green(&self) -> Result<(), String> {
        let snapshot = self.snapshot()?;
        let systems = snapshot["systems"].as_array().ok_or("no systems yet")?;
        let green = systems.iter().filter(|s| s["band"] == "green").count();
        (green == self.hosts.len())
            .then_some(())
            .ok_or_else(|| format!("{green} of {} green: {systems:?}", self.hosts.len()))
    }

    /// The (key, hub) of each alert this hub sends in a storm.
    fn storm_alerts(&self) -> BTreeSet<(String, String)> {
        self.hosts
            .iter()
            .map(|h| (format!("host:{h}"), self.name.to_string()))
            .collect()
    }
}

fn disk(disks: &Path, host: &str) -> PathBuf {
    disks.join(format!("disk-{host}"))
}

/// Waits until `check` holds, or fails saying what the hubs said.
fn eventually<T>(what: &str, hubs: &[Hub], mut check: impl FnMut() -> Result<T, String>) -> T {
    let deadline = Instant::now() + support::HANG_BUDGET * 2;
    loop {
        match check() {
            Ok(v) => return v,
            Err(e) if Instant::now() > deadline => {
                let said: Vec<String> = hubs
                    .iter()
                    .map(|h| format!("{} said:\n{}", h.name, h.said()))
                    .collect();
                panic!("{what}: never: {e}\n{}", said.join("\n"))
            }
            Err(_) => std::thread::sleep(Duration::from_millis(200)),
        }
    }
}

/// What the receiver got in a storm.
struct Storm {
    /// The firing notifications, each as Alertmanager's webhook body.
    notifications: Vec<Value>,
    /// The `externalURL` of the member that should notify: the one left, when one was killed.
    notifier: String,
    /// The (key, hub) each hub sends.
    expected: BTreeSet<(String, String)>,
}

/// Starts an Alertmanager pair with the example config and the hubs (`name`, hosts) on it,
/// waits for every host green, then takes every disk away at once. With `kill_first`, the
/// member that would notify is killed once the storm has reached it. Returns once every member
/// still running has decided the group's notification.
fn storm(hubs: &[(&'static str, &'static [&'static str])], kill_first: bool) -> Storm {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let rx = rt.block_on(Receiver::start(Mode::Ok));
    let scratch = tempfile::tempdir().unwrap();
    let disks = scratch.path().join("disks");
    for (_, hosts) in hubs {
        for h in *hosts {
            std::fs::create_dir_all(disk(&disks, h)).unwrap();
        }
    }
    let mut members = start_pair(&scratch.path().join("am"), &example_config(&rx.url("/am")));
    let first = first_to_notify(&members);
    let running: Vec<Hub> = {
        let refs: Vec<&Am> = members.iter().collect();
        hubs.iter()
            .map(|(name, hosts)| Hub::start(name, hosts, &disks, &refs))
            .collect()
    };
    for hub in &running {
        eventually(&format!("{}: every host green", hub.name), &running, || {
            hub.all_green()
        });
    }
    let expected: BTreeSet<(String, String)> = running.iter().flat_map(Hub::storm_alerts).collect();

    // The storm: every disk gone at once.
    for (_, hosts) in hubs {
        for h in *hosts {
            let _ = std::fs::remove_dir(disk(&disks, h));
        }
    }
    let mut live: Vec<usize> = vec![0, 1];
    if kill_first {
        // Mid-storm: once the first alert has reached it, before its group_wait is over.
        eventually("the storm reaching the first member", &running, || {
            let got = members[first].fleetdash_alerts()?;
            (!got.is_empty())
                .then_some(())
                .ok_or_else(|| "no alert yet".to_string())
        });
        members[first].kill();
        live.retain(|&i| i != first);
    }
    let notifier = members[if kill_first { live[0] } else { first }]
        .external_url
        .clone();

    eventually("a notification at the receiver", &running, || {
        rx.got()
            .iter()
            .any(|g| g.path == "/am")
            .then_some(())
            .ok_or_else(|| "none yet".to_string())
    });
    // Every member still running has decided for the group: each queries its notification log
    // before it sends or not (the one that waits does so `peer_timeout` later).
    for &i in &live {
        members[i].eventually("the member's decision for the group", || {
            let queries = members[i].metric("alertmanager_nflog_queries_total")?;
            (queries >= 1.0)
                .then_some(())
                .ok_or_else(|| format!("{queries} queries"))
        });
    }
    // A send decided is made at once, on loopback; let it land.
    std::thread::sleep(Duration::from_secs(1));
    let notifications: Vec<Value> = rx
        .got()
        .iter()
        .filter(|g| g.path == "/am")
        .map(|g| serde_json::from_slice(&g.body).unwrap())
        .filter(|n: &Value| n["status"] == "firing")
        .collect();
    for hub in &running {
        assert!(
            !hub.said().contains("not sent again"),
            "{}: {}",
            hub.name,
            hub.said()
        );
    }
    drop(running);
    drop(members);
    Storm {
        notifications,
        notifier,
        expected,
    }
}

/// The (key, hub) of every alert in a notification.
fn seen(notification: &Value) -> BTreeSet<(String, String)> {
    notification["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["labels"]["key"].as_str().unwrap().to_string(),
                a["labels"]["hub"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Asserts the storm reached the receiver as one notification of everything every hub saw,
/// grouped without `hub`, sent by `notifier`.
fn assert_one_notification_of_everything(storm: &Storm, what: &str) {
    assert_eq!(
        storm.notifications.len(),
        1,
        "{what}: one notification per storm, got {:#?}",
        storm.notifications
    );
    let n = &storm.notifications[0];
    assert_eq!(
        n["groupLabels"],
        json!({"alertname": "FleetdashRed", "section": "systems"}),
        "{what}: {n:#}"
    );
    assert_eq!(seen(n), storm.expected, "{what}: nothing lost: {n:#}");
    // Alertmanager says its external URL without the trailing slash.
    assert_eq!(
        n["externalURL"].as_str().map(|u| u.trim_end_matches('/')),
        Some(storm.notifier.trim_end_matches('/')),
        "{what}: {n:#}"
    );
    eprintln!(
        "{what}: 1 notification, {} alerts ({} elements), from {}",
        storm.expected.len(),
        storm
            .expected
            .iter()
            .map(|(k, _)| k)
            .collect::<BTreeSet<_>>()
            .len(),
        storm.notifier
    );
}

const LAPTOP: (&str, &[&str]) = ("laptop", &["alpha", "beta", "gamma"]);
const LAB: (&str, &[&str]) = ("lab", &["beta", "gamma", "delta"]);

#[test]
fn one_hub_a_storm_is_one_notification_from_the_pair() {
    let storm = storm(&[LAPTOP], false);
    assert_eq!(storm.expected.len(), 3);
    assert_one_notification_of_everything(&storm, "one hub, both members up");
}

#[test]
fn two_hubs_a_storm_both_see_is_one_notification_naming_each_hub() {
    let storm = storm(&[LAPTOP, LAB], false);
    // beta and gamma, seen by both hubs, are two alerts each: which hub saw it is a label.
    assert_eq!(storm.expected.len(), 6);
    assert_one_notification_of_everything(&storm, "two hubs, both members up");
}

#[test]
fn two_hubs_with_the_notifying_member_killed_mid_storm_still_one_nothing_lost() {
    let storm = storm(&[LAPTOP, LAB], true);
    assert_one_notification_of_everything(&storm, "two hubs, one member killed mid-storm");
}

/// amtool accepts the example, and routes fleetdash's reds and the Prometheus rules' alerts
/// about the hubs where its comments say.
#[test]
fn the_example_alertmanager_config_passes_amtool() {
    let file = support::repo_root().join("packaging/alertmanager/alertmanager.yml");
    let out = Command::new(require(AMTOOL))
        .arg("check-config")
        .arg(&file)
        .output()
        .unwrap();
    support::assert_success(&out);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("1 inhibit rules"), "{said}");
    let route = |labels: &[&str]| {
        let out = Command::new(AMTOOL)
            .args([
                "config",
                "routes",
                "test",
                "--tree",
                "--verify.receivers=operator",
            ])
            .arg(format!("--config.file={}", file.display()))
            .args(labels)
            .output()
            .unwrap();
        support::assert_success(&out);
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    // An element's red: the default route, grouped by section.
    let red = route(&["alertname=FleetdashRed", "section=agents", "hub=laptop"]);
    assert!(
        red.contains("default-route  receiver: operator") && !red.contains("alertname=~"),
        "{red}"
    );
    // A rule about a hub itself: its own route, grouped by hub.
    let hub = route(&["alertname=FleetdashHubDown", "hub=lab"]);
    assert!(hub.contains("{alertname=~\"Fleetdash.+\""), "{hub}");
}

/// The example's inhibit rule, in a real Alertmanager, on alerts as fleetdash words them: a
/// hub's `fleetdash:reach` holds back that hub's agents, not another hub's.
#[test]
fn a_hubs_reach_inhibits_its_own_agents_not_another_hubs() {
    use chrono::Utc;
    use fleetdash::alerting::provider::alertmanager::postable;
    use fleetdash::alerting::{Alert, AlertEvent};
    use fleetdash_model::{Asc, Band};

    let scratch = tempfile::tempdir().unwrap();
    let config = example_config(&"http://127.0.0.1:9/am".parse().unwrap());
    let am = Am::start_with(scratch.path(), &config, None);
    let now = Utc::now();
    let red = |key: &str, kind: &str, name: &str| Alert {
        id: format!("{key}:firing:1"),
        key: key.into(),
        kind: kind.into(),
        name: name.into(),
        event: AlertEvent::Firing,
        band: Band::Red,
        reason: Some("connection refused".into()),
        status: Asc::DEPENDENCY_UNAVAILABLE,
        since: now,
        at: now,
        takes_down: vec![],
        link: None,
        detail: None,
    };
    let ends_after = chrono::Duration::seconds(600);
    let reach = red("fleetdash:reach", "fleetdash", "cannot reach the fleet");
    let vega = red("agent:vega", "agent", "vega");
    am.post_alerts(&json!([
        postable(&reach, "laptop", ends_after),
        postable(&vega, "laptop", ends_after),
        postable(&vega, "lab", ends_after),
    ]))
    .unwrap();
    let state = |hub: &str| {
        am.alerts("")
            .unwrap()
            .into_iter()
            .find(|a| a["labels"]["key"] == "agent:vega" && a["labels"]["hub"] == hub)
            .map(|a| a["status"].clone())
    };
    am.eventually("laptop's vega inhibited by laptop's reach", || {
        let s = state("laptop").ok_or("not in Alertmanager")?;
        (s["inhibitedBy"].as_array().is_some_and(|a| a.len() == 1))
            .then_some(())
            .ok_or_else(|| format!("{s}"))
    });
    let lab = state("lab").unwrap();
    assert_eq!(lab["state"], "active", "lab's own view is not held: {lab}");
    assert_eq!(lab["inhibitedBy"], json!([]), "{lab}");
}

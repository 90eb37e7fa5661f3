//! The Systems panel's words, row by row.

use super::*;
use crate::glance::fixtures::*;
use crate::glance::{Glance, Need};
use crate::snapshot::History;
use chrono::{FixedOffset, Timelike};

#[test]
fn a_host_says_its_problems_once_in_a_few_words_and_each_check_keeps_its_why() {
    let g = at(&fleet(), 0);
    let prod = row(&g, "host-prod");
    assert_eq!(
        prod.reason.as_deref(),
        Some("service hermes-gateway failed · cron db-dump down")
    );
    let services = &prod.checks[0].items;
    assert_eq!(services[1].text, "hermes-gateway failed · 24 h 0.0 %");
    assert_eq!(
        services[1].why, None,
        "the state word already is the reason"
    );
    let crons = &prod.checks[2].items;
    assert_eq!(crons[0].band, Band::Red);
    assert_eq!(
        crons[0].why.as_deref(),
        Some("last run failed with exit code 2")
    );
    assert_eq!(
        prod.checks[1].items.len(),
        0,
        "no tunnels: an empty list, said so by the renderer"
    );
    assert_eq!(row(&g, "host-LAB").reason, None);

    // Until the host's samples span a day, its checks' uptimes say since when too.
    let mut young = fleet();
    if let Probe::Value(hosts) = &mut young.systems {
        for h in hosts {
            h.history = Some(History {
                uptime_24h_pct: Some(50.0),
                strip: ".".repeat(47) + "d",
                slot_s: 1800,
                samples: 2,
                since: Some(young.generated_at - chrono::Duration::minutes(20)),
            });
        }
    }
    let g = at(&young, 0);
    let services = &row(&g, "host-prod").checks[0].items;
    let start = young.generated_at - chrono::Duration::minutes(20);
    let hm = format!("{:02}:{:02}", start.hour(), start.minute());
    assert_eq!(
        services[1].text,
        format!("hermes-gateway failed · 0.0 % since {hm}")
    );
    let crons = &row(&g, "host-prod").checks[2].items;
    assert!(
        crons[0].text.ends_with(&format!("% since {hm}")),
        "{}",
        crons[0].text
    );
}

/// Issue 44: a vault watched alone says it has no remote to compare with, green; one whose
/// configured remote is missing is red for it, never "out of sync".
#[test]
fn a_vault_without_a_remote_is_never_said_out_of_sync() {
    let vault_of = |parity: Probe<bool>, reason: Option<&str>| {
        let mut s = fleet();
        if let Probe::Value(hosts) = &mut s.systems {
            // The collector's band: red for a vault git could not compare or out of sync.
            if !matches!(parity, Probe::Value(true)) {
                hosts[1].band = Band::Red;
            }
            hosts[1].vault_parity = parity;
            hosts[1].vault_reason = reason.map(String::from);
        }
        let g = at(&s, 0);
        let lab = row(&g, "host-LAB");
        let fact = lab.facts.iter().find(|f| f.label == "vault parity");
        (
            fact.unwrap().text.clone(),
            fact.unwrap().band,
            lab.reason.clone(),
        )
    };
    let alone = "no remote to compare with (HEAD 1a2b3c4)";
    let said = vault_of(Probe::Value(true), Some(alone));
    assert_eq!(said, (alone.into(), None, None));
    assert_eq!(vault_of(Probe::Value(true), None).0, "in sync");
    let missing = Probe::Error("no remote 'origin' to compare with".into());
    let (text, band, reason) = vault_of(missing, None);
    assert_eq!(text, "error: no remote 'origin' to compare with");
    assert_eq!(band, Some(Band::Red));
    assert_eq!(reason.as_deref(), Some("vault not compared"));
    let (_, _, reason) = vault_of(Probe::Value(false), Some("1 uncommitted change"));
    assert_eq!(reason.as_deref(), Some("vault out of sync"));
}

/// Issue 44: a certificate's check says its state word first; ok with a reason is amber.
/// A tunnel's reason starts with its address: not a state word.
#[test]
fn a_certificate_expiring_is_an_amber_check_and_an_expired_one_red_each_with_its_date() {
    let (soon, gone) = ("expiring, in 9 d, on 31 Dec", "expired, 3 d ago, on 19 Nov");
    let refused = "localhost:22: connection refused";
    let mut s = Snapshot::empty(t0(), rules());
    let certs = vec![
        check("cert a", true, Some(soon)),
        check("cert b", false, Some(gone)),
    ];
    let mut hub = host("hub", Band::Red, certs, Vec::new());
    hub.tunnels = vec![check("t", false, Some(refused))];
    s.systems = Probe::Value(vec![hub]);
    let g = at(&s, 0);
    let items = row(&g, "host-hub").checks.iter().flat_map(|c| &c.items);
    let seen: Vec<(Band, &str, Option<&str>)> = items
        .map(|i| (i.band, i.text.as_str(), i.why.as_deref()))
        .collect();
    let (a, b, t) = ("cert a expiring", "cert b expired", "t down");
    let pct = |x: &str, p: &str| format!("{x} · 24 h {p} %");
    let want = [
        (pct(a, "100.0"), soon),
        (pct(b, "0.0"), gone),
        (pct(t, "0.0"), refused),
    ];
    let bands = [Band::Amber, Band::Red, Band::Red];
    assert_eq!(seen.len(), 3, "{seen:?}");
    for ((got, (text, why)), band) in seen.iter().zip(&want).zip(bands) {
        assert_eq!(*got, (band, text.as_str(), Some(*why)));
    }
    let reason = row(&g, "host-hub").reason.clone().unwrap();
    assert!(reason.ends_with("· service cert a expiring"), "{reason}");
}

#[test]
fn a_green_backup_keeps_its_note_as_a_fact_and_an_amber_one_says_since_when() {
    let s = fleet();
    let g = at(&s, 0);
    let b = row(&g, "backup-gdrive");
    assert_eq!((b.band, b.reason.as_ref()), (Band::Green, None));
    assert_eq!(b.summary, "latest 20 h ago");
    assert!(
        b.facts
            .iter()
            .any(|f| f.label == "note" && f.band.is_none())
    );
    let mut amber = s.clone();
    if let Probe::Value(b) = &mut amber.backups {
        b.gdrive_latest = Probe::Value(t0() - chrono::Duration::hours(30));
        b.band = Band::Amber;
        b.reason = Some("latest backup 30 h old".into());
    }
    let g = at(&amber, 0);
    let need = g
        .needs
        .iter()
        .find(|n| n.anchor == "backup-gdrive")
        .unwrap();
    // 30 h ago plus the 26 h amber threshold: 4 h ago.
    assert_eq!(need.since.as_deref(), Some("since 15:20"));
}

#[test]
fn a_held_host_and_a_held_tunnel_are_marked_and_keep_their_band_their_line_and_the_verdict() {
    let mut s = fleet();
    if let Probe::Value(hosts) = &mut s.systems {
        hosts[0].tunnels = vec![check("heart", false, Some("connection refused"))];
        hosts[0].vault_parity = Probe::Value(false);
        hosts[0].vault_reason = Some("2 uncommitted changes".into());
    }
    let plain = at(&s, 0);
    s.alerts.configured = true;
    s.alerts.held = vec![
        hold(key::host("prod"), 40, "disk swap"),
        hold(
            key::host_check("prod", "tunnel", "heart"),
            100,
            "tunnel rebuild",
        ),
        // The same silence as the host's: said once, on the host.
        hold(key::host_check("prod", "cron", "db-dump"), 40, "disk swap"),
        hold(key::vault("prod"), 70, ""),
    ];
    let g = at(&s, 0);
    let prod = row(&g, "host-prod");
    assert_eq!(
        prod.held.as_deref(),
        Some("silenced until 20:00 (disk swap)")
    );
    assert_eq!((prod.band, prod.badge), (Band::Red, "fail"));
    assert_eq!(prod.reason, row(&plain, "host-prod").reason);
    let held: Vec<(&str, Option<&str>)> = prod
        .checks
        .iter()
        .flat_map(|c| &c.items)
        .map(|i| (i.text.as_str(), i.held.as_deref()))
        .collect();
    assert_eq!(
        held,
        [
            ("nginx active · 24 h 100.0 %", None),
            ("hermes-gateway failed · 24 h 0.0 %", None),
            (
                "heart down · 24 h 0.0 %",
                Some("silenced until 21:00 (tunnel rebuild)")
            ),
            (
                "db-dump down · last ok 1 h ago · every 1 d, grace 2 h · 24 h 100.0 %",
                None
            ),
        ]
    );
    let vault = prod
        .facts
        .iter()
        .find(|f| f.label == "vault parity")
        .unwrap();
    assert_eq!(vault.held.as_deref(), Some("silenced until 20:30"));
    // Needs-you: the same line in the same place, the mark added.
    let need = g.needs.iter().find(|n| n.anchor == "host-prod").unwrap();
    assert_eq!(
        need.held.as_deref(),
        Some("silenced until 20:00 (disk swap)")
    );
    let without: Vec<Need> = g
        .needs
        .iter()
        .cloned()
        .map(|n| Need { held: None, ..n })
        .collect();
    assert_eq!(without, plain.needs);
    assert_eq!(
        (g.headline.as_str(), g.counts),
        (plain.headline.as_str(), plain.counts)
    );
    assert_eq!(g.counts, s.verdict());
    // In the reader's zone.
    let plus_one = Glance::new(&s, t0(), FixedOffset::east_opt(3600).unwrap());
    assert_eq!(
        row(&plus_one, "host-prod").held.as_deref(),
        Some("silenced until 21:00 (disk swap)")
    );
}

#[test]
fn a_failing_alert_channel_is_an_amber_line_said_in_the_verdict_and_a_row_of_systems() {
    let mut s = fleet();
    s.alerts.configured = true;
    s.alerts.channels = vec![
        channel("deadman", None, "", 0),
        channel("ntfy", Some(78), "503", 3),
    ];
    let g = at(&s, 0);
    // Amber, after every red line, in the channel's own words.
    let last = g.needs.last().unwrap();
    assert_eq!(
        (
            last.band,
            last.what.as_str(),
            last.reason.as_str(),
            last.since.as_ref()
        ),
        (
            Band::Amber,
            "alerts: ntfy failing since 18:02: 503 (3 waiting)",
            "",
            None
        )
    );
    assert_eq!(last.anchor, "alert-ntfy");
    // Said in the verdict whatever else is red; counted amber, the healthy one green.
    assert_eq!(
        g.headline,
        "2 agents · 1 task stuck · 1 board · 2 cards · 1 host · 1 alert channel failing"
    );
    assert_eq!(g.counts.sentence(), "7 red · 3 amber · 9 green");
    assert_eq!(g.counts, s.verdict());
    // The Systems panel's "alerts" group: failing first, amber with its reason; the
    // dead man's switch green, delivering; what waits behind the tap.
    let systems = g.sections.iter().find(|x| x.id == "systems").unwrap();
    let alerts = systems.groups.last().unwrap();
    assert_eq!(alerts.title.as_deref(), Some("alerts"));
    let rows: Vec<(&str, Band, &str, &str, Option<&str>)> = alerts
        .rows
        .iter()
        .map(|r| {
            (
                r.title.as_str(),
                r.band,
                r.badge,
                r.summary.as_str(),
                r.reason.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            (
                "ntfy",
                Band::Amber,
                "warn",
                "failing since 18:02",
                Some("503")
            ),
            ("deadman", Band::Green, "ok", "delivering", None),
        ]
    );
    let waiting = |r: &Row| {
        r.facts
            .iter()
            .find(|f| f.label == "waiting")
            .unwrap()
            .text
            .clone()
    };
    assert_eq!(waiting(&alerts.rows[0]), "3 alerts");
    assert_eq!(waiting(&alerts.rows[1]), "none");

    // Nothing else amiss: the channel alone makes the verdict amber.
    let mut calm = Snapshot::empty(t0(), rules());
    calm.stale = false;
    calm.agents = Probe::Value(vec![agent("min", Band::Green, true, None)]);
    calm.alerts = s.alerts.clone();
    let g = at(&calm, 0);
    assert_eq!(
        (g.band, g.headline.as_str()),
        (Band::Amber, "1 alert channel failing")
    );
    assert_eq!(g.title(true), "▲ 1 · fleet");
    calm.alerts
        .channels
        .push(channel("hub", Some(5), "connection refused", 0));
    if let Probe::Value(a) = &mut calm.agents {
        a.push(agent("juno", Band::Amber, true, Some("quiet")));
    }
    assert_eq!(
        at(&calm, 0).headline,
        "1 agent to watch · 2 alert channels failing"
    );
    // Delivering again: green, nothing said.
    calm.alerts.channels = vec![channel("ntfy", None, "", 0)];
    calm.agents = Probe::Value(vec![agent("min", Band::Green, true, None)]);
    let g = at(&calm, 0);
    assert_eq!((g.band, g.headline.as_str()), (Band::Green, "all 2 green"));
}

#[test]
fn a_state_file_set_aside_is_an_amber_line_said_in_the_verdict_until_its_copy_goes() {
    let mut calm = Snapshot::empty(t0(), rules());
    calm.stale = false;
    calm.agents = Probe::Value(vec![agent("min", Band::Green, true, None)]);
    let before = at(&calm, 0);
    assert!(
        !before
            .sections
            .iter()
            .flat_map(|x| &x.groups)
            .any(|g| g.title.as_deref() == Some("fleetdash's files"))
    );
    let moved = t0() - chrono::Duration::minutes(58);
    calm.set_aside = vec![SetAside {
        file: "history.json".into(),
        aside: "history.json.corrupt-20261130T190200Z".into(),
        at: Some(moved),
        checked_at: t0(),
    }];
    let g = at(&calm, 0);
    assert_eq!(
        (g.band, g.headline.as_str()),
        (Band::Amber, "1 state file set aside")
    );
    assert_eq!(g.counts, calm.verdict());
    assert_eq!(g.counts.sentence(), "1 amber · 1 green");
    let need = g.needs.last().unwrap();
    assert_eq!(
        (need.band, need.what.as_str(), need.reason.as_str()),
        (Band::Amber, "state file history.json", "corrupt: set aside")
    );
    assert_eq!(need.anchor, "file-history_json");
    let systems = g.sections.iter().find(|x| x.id == "systems").unwrap();
    let files = systems.groups.last().unwrap();
    assert_eq!(files.title.as_deref(), Some("fleetdash's files"));
    assert_eq!(
        (files.rows[0].band, files.rows[0].summary.as_str()),
        (
            Band::Amber,
            "set aside at 18:22; what it held is no longer used"
        )
    );
    // Said after the fleet's own, whatever is red.
    if let Probe::Value(a) = &mut calm.agents {
        a.push(agent("juno", Band::Red, false, Some("down")));
    }
    assert_eq!(
        at(&calm, 0).headline,
        "1 agent down · 1 state file set aside"
    );
}

#[test]
fn without_alerting_nothing_is_added() {
    let mut s = fleet();
    let plain = at(&s, 0);
    // Channels listed by a snapshot that says alerting is off are not shown.
    s.alerts.channels = vec![channel("ntfy", Some(5), "503", 1)];
    let g = at(&s, 0);
    assert_eq!(g, plain);
    let systems = g.sections.iter().find(|x| x.id == "systems").unwrap();
    assert_eq!(systems.groups.len(), 1);
    assert_eq!(g.counts, s.verdict());
}

/// A wake of the hub (issue 31): one amber line of fleetdash's own, counted, in Needs you
/// with its span and until when the agents may report, in the Systems panel; gone once
/// the snapshot no longer shows the jump.
#[test]
fn a_jump_of_the_clock_is_an_amber_line_of_fleetdashs_own() {
    let mut calm = Snapshot::empty(t0(), rules());
    calm.stale = false;
    calm.agents = Probe::Value(vec![agent("min", Band::Green, true, None)]);
    assert_eq!(at(&calm, 0).band, Band::Green);
    let asleep = 7 * 3600 + 12 * 60;
    calm.clock = ClockView {
        jumps: vec![crate::clock::ClockJump {
            kind: crate::clock::Jump::Asleep,
            seconds: asleep,
            at: t0(),
            checked_at: t0(),
            stale: false,
        }],
        judging_from: Some(t0()),
        unwatched_s: asleep,
        ahead: None,
    };
    let g = at(&calm, 0);
    assert_eq!(
        (g.band, g.headline.as_str()),
        (Band::Amber, "1 clock out of step")
    );
    assert_eq!(g.counts, calm.verdict());
    let need = g.needs.last().unwrap();
    let wake = crate::words::moment(t0(), t0(), FixedOffset::east_opt(0).unwrap());
    let fell = crate::words::moment(
        t0() - chrono::Duration::seconds(asleep as i64),
        t0(),
        FixedOffset::east_opt(0).unwrap(),
    );
    let until = crate::words::moment(
        t0() + chrono::Duration::seconds(rules().no_reply_s as i64),
        t0(),
        FixedOffset::east_opt(0).unwrap(),
    );
    assert_eq!(
        (need.band, need.what.as_str(), need.reason.as_str()),
        (
            Band::Amber,
            "the hub was asleep 7 h 12 min",
            format!("agents have until {until} to report").as_str()
        )
    );
    assert_eq!(
        row(&g, "clock").summary,
        format!("the hub was asleep 7 h 12 min, {fell}–{wake}")
    );
    let systems = g.sections.iter().find(|x| x.id == "systems").unwrap();
    assert_eq!(
        systems.groups.last().unwrap().title.as_deref(),
        Some("fleetdash's clock")
    );
    calm.clock = ClockView::default();
    assert_eq!(at(&calm, 0).band, Band::Green);
}

use chrono::{Duration, FixedOffset};

use super::*;
use crate::glance::fixtures::{agent, rules, t0};
use crate::probe::Probe;

/// The night starts at t0, said at +04:40 so that it reads as midnight.
fn at(min: i64) -> DateTime<Utc> {
    t0() + Duration::minutes(min)
}

fn local() -> FixedOffset {
    FixedOffset::east_opt(4 * 3600 + 40 * 60).unwrap()
}

fn change(key: &str, kind: &str, from: Band, to: Band, min: i64) -> Transition {
    Transition {
        key: key.into(),
        kind: kind.into(),
        name: key.split(':').nth(1).unwrap_or(key).into(),
        from: Some(from),
        to,
        at: at(min),
        reason: (to != Band::Green).then(|| "card unreachable".to_string()),
    }
}

fn snapshot(agents: Vec<crate::snapshot::Agent>, min: i64) -> Snapshot {
    let mut s = Snapshot::empty(at(min), rules());
    s.agents = Probe::Value(
        agents
            .into_iter()
            .map(|mut a| {
                a.checked_at = at(min);
                a
            })
            .collect(),
    );
    s.stale = false;
    s.sections.agents.configured = true;
    s.sections.agents.checked_at = Some(at(min));
    s
}

fn inputs<'a>(log: &'a [Transition], snap: &'a Snapshot, blind: &'a [BlindSpell]) -> Inputs<'a> {
    Inputs {
        word: "Night".into(),
        from: at(0),
        to: at(480),
        before: Some(at(-1440)),
        log,
        log_whole_from: at(-2000),
        snapshot: snap,
        work: Some(WorkTally::default()),
        blind,
        late: None,
        rules: ReportRules {
            flap_gap_s: 1800,
            phone_lines: 3,
            page_lines: 2,
        },
        offset: local(),
        zone: "UTC+04:40".into(),
        first: false,
    }
}

#[test]
fn a_quiet_night_is_an_explicit_all_clear() {
    let snap = snapshot(
        vec![
            agent("vega", Band::Green, true, None),
            agent("lyra", Band::Green, true, None),
        ],
        480,
    );
    let r = build(&inputs(&[], &snap, &[]));
    assert!(r.all_clear);
    assert_eq!(r.title, "Night: all clear");
    assert_eq!(r.rest, "all clear: 2 agents: green all night");
    // The first report covers only since fleetdash began watching: not the whole night.
    let mut first = inputs(&[], &snap, &[]);
    first.first = true;
    assert_eq!(build(&first).rest, "all clear: 2 agents: green throughout");
    assert!(
        r.covers.contains("00:00") && r.covers.contains("08:00"),
        "{}",
        r.covers
    );
}

#[test]
fn flaps_merge_into_one_line_and_red_time_compares_with_the_night_before() {
    use Band::*;
    let mut log = vec![
        // The night before: one red spell of 3 min.
        change("agent:vega", "agent", Green, Red, -600),
        change("agent:vega", "agent", Red, Green, -597),
    ];
    // Six spells 02:10–03:40, each a few minutes, gaps shorter than the flap gap.
    for (start, len) in [(130, 5), (145, 8), (160, 7), (175, 6), (190, 7), (212, 8)] {
        log.push(change("agent:vega", "agent", Green, Red, start));
        log.push(change("agent:vega", "agent", Red, Green, start + len));
    }
    // One spell, hours later: its own line.
    log.push(change("agent:lyra", "agent", Green, Amber, 400));
    log.push(change("agent:lyra", "agent", Amber, Green, 410));
    let snap = snapshot(
        vec![
            agent("vega", Green, true, None),
            agent("lyra", Green, true, None),
            agent("kai", Green, true, None),
        ],
        480,
    );
    let r = build(&inputs(&log, &snap, &[]));
    assert_eq!(r.title, "Night: 2 recovered");
    assert_eq!(
        r.recovered,
        [
            "✖ agent vega went red 6 times 02:10–03:40, 41 min in all",
            "▲ agent lyra was amber 06:40–06:50 (10 min): card unreachable",
        ]
    );
    assert_eq!(
        r.red_time,
        ["agent vega: red 6×, 41 min (the period before: 1×, 3 min)"]
    );
    assert_eq!(r.rest, "the other 1 agent: green all night");
    assert!(!r.all_clear);
}

#[test]
fn what_is_red_now_leads_with_since_and_how_long() {
    use Band::*;
    let log = vec![change("agent:vega", "agent", Green, Red, 300)];
    let snap = snapshot(
        vec![agent("vega", Red, false, Some("card unreachable"))],
        480,
    );
    let r = build(&inputs(&log, &snap, &[]));
    assert_eq!(r.needs_now.len(), 1);
    assert!(
        r.needs_now[0].ends_with("· since 05:00 (3 h)"),
        "{:?}",
        r.needs_now
    );
    assert!(r.recovered.is_empty(), "still red is not recovered");
    assert_eq!(r.title, "Night: 1 needs you");
    assert_eq!(r.phone_body().lines().next(), Some(r.needs_now[0].as_str()));
}

#[test]
fn blind_spots_are_said_with_their_span_and_the_logs_reach() {
    let snap = snapshot(vec![agent("vega", Band::Green, true, None)], 480);
    let blind = [BlindSpell {
        from: at(72),
        to: at(100),
        why: "the hub was asleep".into(),
    }];
    let log = [
        change("section:agents", "section", Band::Green, Band::Red, 200),
        change("section:agents", "section", Band::Red, Band::Green, 220),
    ];
    let mut i = inputs(&log, &snap, &blind);
    i.log_whole_from = at(30);
    let r = build(&i);
    assert_eq!(
        r.blind,
        [
            "known from 00:30 only: the transitions log reaches back no further",
            "not watching 01:12–01:40 (28 min): the hub was asleep",
            "agents not read 03:20–03:40 (20 min): card unreachable",
        ]
    );
    assert!(
        r.recovered.is_empty(),
        "a section is a blind spot, not an element"
    );
    assert_eq!(r.known_from, at(30));
    assert_eq!(r.title, "Night: 3 blind");
}

#[test]
fn the_phone_gets_the_first_lines_and_how_many_more() {
    use Band::*;
    let mut log = Vec::new();
    for (i, name) in ["a", "b", "c", "d", "e"].iter().enumerate() {
        let key = format!("agent:{name}");
        log.push(change(&key, "agent", Green, Red, 60 * i as i64));
        log.push(change(&key, "agent", Red, Green, 60 * i as i64 + 5));
    }
    let snap = snapshot(vec![], 480);
    let r = build(&inputs(&log, &snap, &[]));
    let body = r.phone_body();
    assert_eq!(body.lines().count(), 4, "{body}");
    assert!(body.ends_with("+4 more: open the report"), "{body}");
}

#[test]
fn the_work_queue_counts_what_went_wrong_and_makes_it_no_all_clear() {
    let snap = snapshot(vec![], 480);
    let mut i = inputs(&[], &snap, &[]);
    i.work = Some(WorkTally {
        finished: 12,
        blocked: 0,
        orphaned: 2,
        never_taken: 1,
    });
    let r = build(&i);
    assert_eq!(
        r.work.as_deref(),
        Some("work queue: 12 finished, 2 orphaned, 1 never taken")
    );
    assert!(!r.all_clear);
}

#[test]
fn a_report_on_an_old_snapshot_says_it_is_not_fresh() {
    // Written at 06:00, reported on at 08:00: fleetdash stopped writing.
    let snap = snapshot(vec![agent("vega", Band::Green, true, None)], 360);
    let r = build(&inputs(&[], &snap, &[]));
    assert!(
        r.blind
            .iter()
            .any(|l| l.starts_with("the snapshot is not fresh: ")),
        "{:?}",
        r.blind
    );
    assert!(!r.all_clear, "an old snapshot is no all-clear");
}

#[test]
fn a_red_begun_before_the_period_says_since_when_and_the_first_report_says_it_is_the_first() {
    use Band::*;
    // Red since the evening before the night; the period before is not known whole.
    let log = vec![change("agent:vega", "agent", Green, Red, -90)];
    let snap = snapshot(
        vec![agent("vega", Red, false, Some("card unreachable"))],
        480,
    );
    let mut i = inputs(&log, &snap, &[]);
    i.log_whole_from = at(-120);
    i.first = true;
    let r = build(&i);
    assert!(
        r.needs_now[0].ends_with("· since 22:30 (9 h 30 min)"),
        "{:?}",
        r.needs_now
    );
    assert_eq!(
        r.red_time,
        ["agent vega: red 1×, 8 h"],
        "no comparison with a period before fleetdash watched whole"
    );
    assert_eq!(
        r.note.as_deref(),
        Some("the first report: fleetdash began watching at 00:00")
    );
    assert_eq!(r.band, Red);
    assert_eq!(r.title, "Night: 1 needs you", "the note is no blind spot");
}

#[test]
fn the_page_folds_what_came_back_and_the_red_time_past_the_rules_lines() {
    use Band::*;
    let mut log = Vec::new();
    // Four agents red once, longest first; vega flapping; a service red once.
    for (name, start, end) in [
        ("a", 10, 60),
        ("b", 70, 110),
        ("c", 120, 150),
        ("d", 160, 180),
    ] {
        let key = format!("agent:{name}");
        log.push(change(&key, "agent", Green, Red, start));
        log.push(change(&key, "agent", Red, Green, end));
    }
    for start in [200, 215, 230] {
        log.push(change("agent:vega", "agent", Green, Red, start));
        log.push(change("agent:vega", "agent", Red, Green, start + 5));
    }
    log.push(change("host:lab/service:nginx", "service", Green, Red, 300));
    log.push(change("host:lab/service:nginx", "service", Red, Green, 310));
    let snap = snapshot(vec![agent("a", Green, true, None)], 480);
    let r = build(&inputs(&log, &snap, &[]));
    assert_eq!(r.recovered.len(), 6, "{:?}", r.recovered);
    let page = r.page();
    assert_eq!(page.recovered.shown, &r.recovered[..2]);
    assert_eq!(page.recovered.folded, &r.recovered[2..]);
    assert_eq!(
        page.recovered.more.as_deref(),
        Some("and 4 more, of 3 agents and 1 service (1 flap)")
    );
    assert_eq!(page.red_time.shown, &r.red_time[..2]);
    assert_eq!(
        page.red_time.more.as_deref(),
        Some("and 4 more, of 3 agents and 1 service: red 1 h 15 min in all")
    );
    // The page says every line the text says, in the same order.
    let mut said = page.head.clone();
    said.extend(page.recovered.shown.iter().cloned());
    said.extend(page.recovered.folded.iter().cloned());
    said.extend(page.tail.iter().cloned());
    assert_eq!(said, r.lines());
    // Within the rules' lines, nothing is folded; read back from JSON (no rules), nothing is.
    let mut few = inputs(&log, &snap, &[]);
    few.rules.page_lines = 6;
    assert_eq!(build(&few).page().recovered.more, None);
    let back: Report = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
    assert_eq!(back.page().recovered.shown.len(), 6);
    assert_eq!(back.page().red_time.more, None);
}

//! The report of a period asked for by the hub agent (issue 45), the same fixture for each face
//! that answers it (MCP in tests/mcp.rs, A2A in tests/intake.rs): a transitions log as
//! `fleetdash collect` wrote it (agent vega down now), with agent orin's flap and agent kai's
//! recovery added hours before, and the report's content checked line by line. Times are
//! relative to the snapshot's own `generated_at` and the report's lines are matched without
//! their clock times, so the test passes on any date and in any zone.

use chrono::{DateTime, Duration, Utc};
use fleetdash_model::{Band, Transition};
use serde_json::Value;

/// How long before the snapshot orin's flap begins, and its spells: (red at, green at), in
/// minutes before the snapshot. Three spells, 4 + 2 + 3 = 9 min red.
const ORIN: [(i64, i64); 3] = [(180, 176), (170, 168), (160, 157)];
/// Kai red 25 min, then back, with its reason.
const KAI: (i64, i64) = (120, 95);
const REASON: &str = "down: connection refused";

fn minutes_before(t0: DateTime<Utc>, m: i64) -> DateTime<Utc> {
    t0 - Duration::minutes(m)
}

/// `log` (a transitions log's bytes) with orin's flap and kai's recovery added before `t0`,
/// oldest first as the log keeps them.
pub fn with_flap_and_recovery(log: &[u8], t0: DateTime<Utc>) -> Vec<u8> {
    // Orin's spells must be closer than the rules' flap gap to be one line.
    let rules = fleetdash::config::Rules::parse(
        std::path::Path::new("config/rules.yaml"),
        super::DEFAULT_RULES,
    )
    .unwrap();
    let gap = i64::try_from(rules.report.flap_gap.seconds).unwrap();
    for pair in ORIN.windows(2) {
        assert!(
            (pair[0].1 - pair[1].0) * 60 < gap,
            "config/rules.yaml's report.flap_gap_seconds ({gap}) no longer merges the fixture's flap"
        );
    }
    assert!(
        (ORIN[2].1 - KAI.0) * 60 >= gap,
        "kai's spell must not be within the flap gap of orin's"
    );
    let mut file: Value = serde_json::from_slice(log).unwrap();
    let mut entries: Vec<Transition> = serde_json::from_value(file["entries"].take()).unwrap();
    let t = |name: &str, to: Band, m: i64| Transition {
        key: format!("agent:{name}"),
        kind: "agent".into(),
        name: name.into(),
        from: Some(if to == Band::Red {
            Band::Green
        } else {
            Band::Red
        }),
        to,
        at: minutes_before(t0, m),
        reason: (to == Band::Red).then(|| REASON.into()),
    };
    for (red, green) in ORIN {
        entries.push(t("orin", Band::Red, red));
        entries.push(t("orin", Band::Green, green));
    }
    entries.push(t("kai", Band::Red, KAI.0));
    entries.push(t("kai", Band::Green, KAI.1));
    entries.sort_by_key(|t| t.at);
    file["entries"] = serde_json::to_value(entries).unwrap();
    serde_json::to_vec(&file).unwrap()
}

/// The moment a report that covers the whole fixture starts from: before orin's flap.
pub fn since_before_all(t0: DateTime<Utc>) -> DateTime<Utc> {
    minutes_before(t0, 240)
}

/// Where the last scheduled report ended in [`state_covering_until`]: after orin's flap, while
/// kai was red.
pub fn last_report_end(t0: DateTime<Utc>) -> DateTime<Utc> {
    minutes_before(t0, 150)
}

/// The reporter's state file (`report-state.json`) of a report that ended at
/// [`last_report_end`].
pub fn state_covering_until(t0: DateTime<Utc>) -> Vec<u8> {
    let mut state = fleetdash::report::state::State::fresh(minutes_before(t0, 24 * 60));
    state.covered_until = last_report_end(t0);
    serde_json::to_vec_pretty(&state).unwrap()
}

fn lines(data: &Value, field: &str) -> Vec<String> {
    data[field]
        .as_array()
        .unwrap_or_else(|| panic!("{field}: {data:#}"))
        .iter()
        .map(|l| l.as_str().unwrap().to_string())
        .collect()
}

/// The report of the whole fixture, as words (`text`) and data: vega needs the operator, orin's
/// flap is one line (3 times, 9 min in all), kai was red 25 min and came back.
#[track_caller]
pub fn assert_whole(what: &str, text: &str, data: &Value) {
    let title = data["title"].as_str().unwrap_or_default();
    assert!(
        title.starts_with("Since ") && title.ends_with(": 1 needs you, 2 recovered"),
        "{what}: {data:#}"
    );
    assert_eq!(text.lines().next(), Some(title), "{what}: the title first");
    let needs = lines(data, "needs_now");
    assert_eq!(needs.len(), 1, "{what}: {data:#}");
    assert!(
        needs[0].starts_with(&format!("✖ agent vega: {REASON} · ")),
        "{what}: {data:#}"
    );
    let recovered = lines(data, "recovered");
    assert_eq!(recovered.len(), 2, "{what}: {data:#}");
    assert!(
        recovered[0].starts_with("✖ agent kai was red ")
            && recovered[0].ends_with(&format!(" (25 min): {REASON}")),
        "{what}: the longer red first: {data:#}"
    );
    assert!(
        recovered[1].starts_with("✖ agent orin went red 3 times ")
            && recovered[1].ends_with(", 9 min in all"),
        "{what}: the flap merged: {data:#}"
    );
    for line in needs.iter().chain(&recovered) {
        assert!(
            text.lines().any(|l| l == format!("- {line}")),
            "{what}: the words say what the data says: {line:?} in {text}"
        );
    }
    assert!(
        lines(data, "red_time")
            .contains(&"agent orin: red 3×, 9 min (the period before: none)".into()),
        "{what}: {data:#}"
    );
    assert_eq!(data["all_clear"], false, "{what}");
}

/// The report with no `since` when the last scheduled report ended at [`last_report_end`]: it
/// starts there, so orin's flap (the previous report's) is not in it; kai's is.
#[track_caller]
pub fn assert_since_last_report(what: &str, text: &str, data: &Value, t0: DateTime<Utc>) {
    let from: DateTime<Utc> = data["from"].as_str().unwrap().parse().unwrap();
    assert_eq!(from, last_report_end(t0), "{what}: {data:#}");
    let title = data["title"].as_str().unwrap_or_default();
    assert!(
        title.ends_with(": 1 needs you, 1 recovered"),
        "{what}: {data:#}"
    );
    assert_eq!(text.lines().next(), Some(title), "{what}");
    let recovered = lines(data, "recovered");
    assert_eq!(recovered.len(), 1, "{what}: {data:#}");
    assert!(
        recovered[0].starts_with("✖ agent kai was red ")
            && recovered[0].ends_with(&format!(" (25 min): {REASON}")),
        "{what}: {data:#}"
    );
    assert!(!text.contains("orin"), "{what}: {text}");
}

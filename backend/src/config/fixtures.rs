//! The shipped rules file as tests load it: every threshold a test judges by comes from
//! `config/rules.yaml` itself, never from a literal of the test's own.

use std::path::Path;

use fleetdash_model::RulesView;

use super::{AlertRules, Config, ConfigErrors, Rules, StateRules};

/// The thresholds of the shipped `config/rules.yaml`, for tests: they judge by the fleet's own
/// rules file, never by literals of their own.
pub(crate) fn fleet_rules() -> RulesView {
    Rules::parse(
        Path::new("config/rules.yaml"),
        include_str!("../../../config/rules.yaml"),
    )
    .unwrap_or_else(|e| panic!("config/rules.yaml: {e}"))
    .view()
}

/// The alert thresholds of the shipped `config/rules.yaml`, for tests.
pub(crate) fn fleet_alert_rules() -> AlertRules {
    Rules::parse(
        Path::new("config/rules.yaml"),
        include_str!("../../../config/rules.yaml"),
    )
    .unwrap_or_else(|e| panic!("config/rules.yaml: {e}"))
    .alerts
}

/// The bounds of fleetdash's own files in the shipped `config/rules.yaml`, for tests.
pub(crate) fn fleet_state_rules() -> StateRules {
    Rules::parse(
        Path::new("config/rules.yaml"),
        include_str!("../../../config/rules.yaml"),
    )
    .unwrap_or_else(|e| panic!("config/rules.yaml: {e}"))
    .state
}

/// A clock whose hands a test moves (step, sleep, pass), reading `wall`, judged by the shipped
/// rules' `clock` group.
pub(crate) fn manual_clock(
    wall: chrono::DateTime<chrono::Utc>,
) -> (
    std::sync::Arc<crate::clock::ManualClocks>,
    crate::clock::Clock,
) {
    let rules = Rules::parse(
        Path::new("config/rules.yaml"),
        include_str!("../../../config/rules.yaml"),
    )
    .unwrap_or_else(|e| panic!("config/rules.yaml: {e}"));
    let hands = std::sync::Arc::new(crate::clock::ManualClocks::at(wall));
    let clock = crate::clock::Clock::new(hands.clone(), rules.clock.settings());
    clock.now();
    (hands, clock)
}

/// The top-level keys every config needs, for tests that parse a section after them.
pub(crate) const BASE: &str = "output_dir = \"o\"\nstate_dir = \"s\"\nrules = \"r.yaml\"\n";

/// `/etc/f.toml` holding [`BASE`] then `extra`, parsed (lines of `extra` are counted from 4).
pub(crate) fn parse(extra: &str) -> Result<Config, ConfigErrors> {
    Config::parse(Path::new("/etc/f.toml"), &format!("{BASE}{extra}"))
}

/// What [`parse`] refuses `extra` with, each error as it is said; fails if it is accepted.
pub(crate) fn errors(extra: &str) -> Vec<String> {
    parse(extra)
        .unwrap_err()
        .0
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// A folder holding the shipped rules file as `rules.yaml` beside `f.toml` with `text`, for
/// tests that load a whole config.
pub(crate) fn config_beside_fleet_rules(text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("a temporary folder");
    std::fs::write(
        dir.path().join("rules.yaml"),
        include_str!("../../../config/rules.yaml"),
    )
    .expect("rules.yaml written");
    let path = dir.path().join("f.toml");
    std::fs::write(&path, text).expect("f.toml written");
    (dir, path)
}

/// A whole rules file in the shape of the fleet's, each group citing a short source: the rules
/// parser's tests change one value of it at a time.
pub(crate) const FLEET_RULES: &str = "\
stuck:
  no_reply_seconds: 300
  source: plugins/platforms/a2a/adapter.py:38
  ruled_by: young
  sweep_seconds: 60
last_exchange:
  green_below_seconds: 1800
  amber_below_seconds: 21600
  source: fleet-dashboard-plan.md §5.3
snapshot:
  stale_after_seconds: 600
  source: spec 003 §6.5
live_tasks:
  keep_finished_seconds: 3600
  forget_unseen_seconds: 86400
  source: fleetdash
backups:
  amber_after_seconds: 93600
  red_after_seconds: 172800
  source: fleetdash (a daily backup plus 2 h of slack; two missed days is red)
window:
  amber_at_percent: 90
  source: the heartbeat's window status (near limit at 90 %)
ack:
  within_seconds: 600
  source: spec 003 §4
worker_died:
  no_report_seconds: 3600
  source: spec 003 §3.5
heartbeat_reports:
  grace_seconds: 300
  source: Healthchecks (period + grace)
alerts:
  fail_after_passes: 2
  recover_after_passes: 2
  remind_every_seconds: 3600
  source: Gatus failure-threshold / success-threshold
board:
  cards_max: 200
  newest_per_column: 5
  source: issue 13
queue:
  finished_kept_seconds: 86400
  finished_kept_max: 100
  source: issue 21
doctor:
  clock_skew_seconds: 30
  source: issue 22
grouping:
  group_wait_seconds: 30
  group_interval_seconds: 300
  source: Alertmanager
blind_spot:
  failed_percent: 75
  min_failed: 3
  source: issue 24
quiet_hours:
  red_after_seconds: 1800
  source: issue 24
alertmanager:
  resend_seconds: 60
  ends_after_seconds: 240
  source: Prometheus
phone_actions:
  link_valid_seconds: 86400
  silence_seconds: 3600
  source: issue 24
clock:
  step_seconds: 5
  shown_for_seconds: 3600
  forget_unseen_seconds: 86400
  source: issue 31
queue_file:
  finished_stored_seconds: 604800
  events_stored_seconds: 604800
  wal_kept_bytes: 1048576
  source: issue 33
escalations:
  rotate_after_seconds: 604800
  rotate_at_bytes: 2097152
  source: issue 33
set_aside:
  copies_kept: 3
  source: issue 33
transitions_log:
  max_entries: 4096
  keep_seconds: 604800
  max_file_bytes: 2097152
  source: issue 33
alert_memory:
  forget_quiet_seconds: 3600
  forget_unseen_seconds: 604800
  source: issue 33
alert_outbox:
  max_pending_per_channel: 500
  delivered_kept_seconds: 172800
  source: issue 33
reprobe:
  spacing_seconds: 10
  count: 1
  source: issue 43
needs_you:
  fold_alike_from: 3
  fold_kinds: [card, task, agent, host, board]
  source: issue 43
certificates:
  renew_within_seconds: 1209600
  source: issue 44
";

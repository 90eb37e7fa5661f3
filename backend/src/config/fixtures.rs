//! The shipped rules file as tests load it: every threshold a test judges by comes from
//! `config/rules.yaml` itself, never from a literal of the test's own.

use std::path::Path;

use fleetdash_model::RulesView;

use super::{AlertRules, Rules};

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

//! The rules' thresholds as the snapshot carries them, so that the page judges by the numbers
//! the collector judged by and never hard-codes one.

use serde::{Deserialize, Serialize};

/// Thresholds from the rules file, copied into the snapshot for the page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RulesView {
    /// A live A2A task with no reply for at least this long is STUCK.
    pub no_reply_s: u64,
    /// A last exchange younger than this is green.
    pub exchange_green_below_s: u64,
    /// A last exchange younger than this (and not green) is amber; older is red.
    pub exchange_amber_below_s: u64,
    /// A section older than this makes the snapshot stale.
    pub snapshot_stale_after_s: u64,
    /// A backup at least this old is amber.
    #[serde(default)]
    pub backup_amber_after_s: u64,
    /// A backup at least this old is red.
    #[serde(default)]
    pub backup_red_after_s: u64,
    /// A model usage window at or above this percentage of its limit is amber (0 in snapshots
    /// written before the rule existed: nothing known).
    #[serde(default)]
    pub window_amber_at_percent: u64,
    /// A work-queue task nobody ACKed for this long is red (0 in snapshots written before the
    /// rule existed: not judged).
    #[serde(default)]
    pub ack_within_s: u64,
    /// A work-queue task its owner claimed with no report about it for this long is red:
    /// worker died (`worker_died.no_report_seconds`; 0 in snapshots written before the rule
    /// reached the page: judged only once the watchdog recorded it).
    #[serde(default)]
    pub worker_died_s: u64,
    /// The wall clock and fleetdash's own parting by this much is a jump of the clock; a
    /// snapshot stamped further ahead of the reader's clock (the server's, by its `Date`) than
    /// this cannot be told fresh (0 in snapshots written before the rule existed: not judged).
    #[serde(default)]
    pub clock_step_s: u64,
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The model's one test copy of the shipped `config/rules.yaml` thresholds (the model
    /// cannot read the backend's rules parser); its tests and summary's share it.
    pub(crate) fn rules() -> RulesView {
        RulesView {
            no_reply_s: 300,
            exchange_green_below_s: 1800,
            exchange_amber_below_s: 21600,
            snapshot_stale_after_s: 600,
            backup_amber_after_s: 93600,
            backup_red_after_s: 172800,
            window_amber_at_percent: 90,
            ack_within_s: 600,
            worker_died_s: 3600,
            clock_step_s: 5,
        }
    }
}

//! Backup freshness (C4): the latest backup's time from a local folder (its newest file) or from
//! a command's output (e.g. an rclone listing; the newest timestamp printed counts), with a
//! deadline. Its age is banded by the rules file's `backups` thresholds.

use std::time::Duration;

use async_trait::async_trait;
use fleetdash_model::{Backups, RulesView};

use super::{Collector, SectionData, SectionName};
use crate::config::{BackupsConfig, Config, Rules};

pub struct BackupsCollector {
    backups: BackupsConfig,
    rules: RulesView,
    cadence: Duration,
}

impl BackupsCollector {
    pub fn new(config: &Config, rules: &Rules) -> Option<Self> {
        Some(BackupsCollector {
            backups: config.backups.clone()?,
            rules: rules.view(),
            cadence: config.cadence.backups,
        })
    }

    pub async fn check(&self) -> Backups {
        let _ = (&self.backups, &self.rules);
        todo!("backups")
    }
}

#[async_trait]
impl Collector for BackupsCollector {
    fn section(&self) -> SectionName {
        SectionName::Backups
    }

    fn cadence(&self) -> Duration {
        self.cadence
    }

    async fn collect(&self) -> SectionData {
        SectionData::Backups(self.check().await)
    }
}

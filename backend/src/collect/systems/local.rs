//! This machine's facts, read directly: `/proc/meminfo`, statvfs, `systemctl is-active`, the
//! cron records and stamps on local disk, and git for the vault.

use async_trait::async_trait;

use super::command::LocalRunner;
use super::{FactSource, HostFacts};
use crate::config::{HostConfig, ProbeLimits};

pub struct LocalSource {
    runner: LocalRunner,
}

impl LocalSource {
    pub fn new(limits: &ProbeLimits) -> Self {
        LocalSource {
            runner: LocalRunner {
                timeout: limits.command_timeout,
            },
        }
    }
}

#[async_trait]
impl FactSource for LocalSource {
    async fn read(&self, host: &HostConfig) -> HostFacts {
        let _ = (&self.runner, host);
        todo!("local facts")
    }
}

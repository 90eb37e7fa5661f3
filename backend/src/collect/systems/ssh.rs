//! A remote host's facts over SSH: the same fixed read-only commands as [`super::command`],
//! each run as `ssh -o BatchMode=yes -o StrictHostKeyChecking=yes ... -- ARGV`, with a
//! deadline. Never a password prompt, never an unknown host key accepted.

use async_trait::async_trait;

use super::{FactSource, HostFacts};
use crate::config::{HostConfig, ProbeLimits, SshTarget};

pub struct SshSource {
    target: SshTarget,
    timeout: std::time::Duration,
}

impl SshSource {
    pub fn new(target: SshTarget, limits: &ProbeLimits) -> Self {
        SshSource {
            target,
            timeout: limits.command_timeout,
        }
    }
}

#[async_trait]
impl FactSource for SshSource {
    async fn read(&self, host: &HostConfig) -> HostFacts {
        let _ = (&self.target, self.timeout, host);
        todo!("ssh facts")
    }
}

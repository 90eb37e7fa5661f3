//! Vault parity: the vault is a git checkout synced between hosts. It is in parity when its
//! HEAD equals the configured remote's head of the same branch (`git ls-remote`) and nothing is
//! uncommitted. Any git failure is an error with git's own reason, never a quiet "false".

use crate::config::VaultParityConfig;
use crate::net::ProbeFailure;

use super::command::Runner;

/// What git said about the checkout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parity {
    pub branch: String,
    pub head: String,
    pub remote_head: String,
    /// Lines of `git status --porcelain`.
    pub uncommitted: usize,
}

impl Parity {
    pub fn in_sync(&self) -> bool {
        self.head == self.remote_head && self.uncommitted == 0
    }

    /// Why it is out of sync, in words.
    pub fn describe(&self) -> String {
        todo!("vault::Parity::describe")
    }
}

/// Asks git, through `runner`, about the checkout at `cfg.path`.
pub async fn parity(runner: &dyn Runner, cfg: &VaultParityConfig) -> Result<Parity, ProbeFailure> {
    let _ = (runner, cfg);
    todo!("vault::parity")
}

//! `[backups]`: where the latest backup's time comes from (a folder's newest file or a
//! command's output), checked here: exactly one source, a program named first.

use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use super::defaults;
use super::validator::Validator;

/// Where the latest backup's time comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BackupSource {
    /// The newest file's modification time in this folder.
    Dir(PathBuf),
    /// A command whose output holds the latest backup's timestamp (e.g. an rclone listing);
    /// the newest timestamp found in its output counts.
    Command(Vec<String>),
}

#[derive(Debug, Clone)]
pub struct BackupsConfig {
    pub name: String,
    pub source: BackupSource,
    pub timeout: Duration,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawBackups {
    name: Spanned<String>,
    dir: Option<String>,
    command: Option<Spanned<Vec<String>>>,
    timeout: Option<Spanned<String>>,
}

pub(super) fn validate(v: &mut Validator, b: &RawBackups) -> Option<BackupsConfig> {
    let timeout = v.duration(
        &b.timeout,
        "backups.timeout",
        defaults::BACKUP_COMMAND_TIMEOUT,
    );
    let mut valid = true;
    if b.name.get_ref().trim().is_empty() {
        v.error(&b.name, "backups.name", "must not be empty");
        valid = false;
    }
    let source = match (&b.dir, &b.command) {
        (Some(dir), None) => BackupSource::Dir(v.path(dir)),
        (None, Some(cmd))
            if cmd
                .get_ref()
                .first()
                .is_some_and(|program| !program.trim().is_empty()) =>
        {
            BackupSource::Command(cmd.get_ref().clone())
        }
        (None, Some(cmd)) => {
            v.error(
                cmd,
                "backups.command",
                "must name a program first, e.g. [\"rclone\", \"lsl\", \"gdrive:backups\"]",
            );
            return None;
        }
        _ => {
            v.error(&b.name, "backups", "give exactly one of dir (a folder whose newest file is the latest backup) or command");
            return None;
        }
    };
    valid.then(|| BackupsConfig {
        name: b.name.get_ref().clone(),
        source,
        timeout,
    })
}

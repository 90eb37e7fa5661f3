//! `[backups]`: where the latest backup's time comes from (a folder's newest file or a
//! command's output), checked here: exactly one source, a program named first.

use std::path::PathBuf;
use std::time::Duration;

use toml::Spanned;

use super::defaults;
use super::files::Expect;
use super::table::Table;
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

/// Reads `[backups]`; `None` when it is absent or wrong (the errors say why).
pub(super) fn read(v: &mut Validator, mut t: Table) -> Option<BackupsConfig> {
    if !t.is_present() {
        return None;
    }
    let name = t.required_string(v, "name", "what the backups are called, e.g. \"vault\"");
    let dir = t.string(v, "dir");
    let command = t.strings(v, "command");
    let timeout = t.duration(v, "timeout", defaults::BACKUP_COMMAND_TIMEOUT);
    t.finish(v);

    let mut valid = name.is_some();
    if let Some(name) = &name
        && name.get_ref().trim().is_empty()
    {
        v.error(name, t.field("name"), "must not be empty");
        valid = false;
    }
    let source = match (&dir, &command) {
        (Some(dir), None) => BackupSource::Dir(v.read_path(dir, t.field("dir"), Expect::Folder)),
        (None, Some(cmd))
            if cmd
                .get_ref()
                .first()
                .is_some_and(|(_, program)| !program.get_ref().trim().is_empty()) =>
        {
            BackupSource::Command(
                cmd.get_ref()
                    .iter()
                    .map(|(_, arg)| arg.get_ref().clone())
                    .collect(),
            )
        }
        (None, Some(cmd)) => {
            v.error(
                cmd,
                t.field("command"),
                "must name a program first, e.g. [\"rclone\", \"lsl\", \"gdrive:backups\"]",
            );
            return None;
        }
        // A dir or command of the wrong type was said to be wrong already.
        (None, None) if t.has_entries("dir") || t.has_entries("command") => return None,
        _ => {
            let at = name.as_ref().map(|n| n.span().start).or(t.start());
            v.error_at(at, t.name(), "give exactly one of dir (a folder whose newest file is the latest backup) or command");
            return None;
        }
    };
    valid.then(|| BackupsConfig {
        name: name.map(Spanned::into_inner).unwrap_or_default(),
        source,
        timeout,
    })
}

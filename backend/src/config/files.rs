//! The files and folders a config names, and `fleetdash check`'s warnings about those that are
//! missing or unreadable now.
//!
//! A missing audit log or token file is not a mistake in the config (the file may appear
//! later, and the collector reports it as data then), so these are warnings: they do not fail
//! `check`. Each is found by metadata and a permission check (access(2)) only: nothing is
//! opened, created or locked, so a board database is never touched, and a token file's
//! content is never read.

use std::fmt;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use rustix::fs::Access;

/// What the config expects a named path to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Expect {
    File,
    Folder,
}

/// A local path the config names and fleetdash reads, with where it was named.
#[derive(Debug, Clone)]
pub(super) struct NamedPath {
    pub field: String,
    pub line: usize,
    pub path: PathBuf,
    pub expect: Expect,
}

/// A named path that is missing or unreadable now; it does not fail `check`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigWarning {
    pub file: PathBuf,
    pub line: usize,
    pub field: String,
    pub message: String,
}

impl fmt::Display for ConfigWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "warning: {}:{}: {}: {}",
            self.file.display(),
            self.line,
            self.field,
            self.message
        )
    }
}

/// A warning for each named path that is missing, of the wrong kind, or unreadable by this
/// process's user, in line order.
pub(super) fn warnings(config_file: &Path, named: &[NamedPath]) -> Vec<ConfigWarning> {
    let mut warnings: Vec<ConfigWarning> = named
        .iter()
        .filter_map(|n| {
            problem(&n.path, n.expect).map(|message| ConfigWarning {
                file: config_file.to_path_buf(),
                line: n.line,
                field: n.field.clone(),
                message,
            })
        })
        .collect();
    warnings.sort_by_key(|w| w.line);
    warnings
}

/// What is wrong with `path` now, if anything.
fn problem(path: &Path, expect: Expect) -> Option<String> {
    let shown = path.display();
    let metadata = match std::fs::metadata(path) {
        Ok(metadata) => metadata,
        Err(e) if e.kind() == ErrorKind::NotFound => {
            return Some(format!("\"{shown}\" does not exist"));
        }
        Err(e) => return Some(format!("\"{shown}\" cannot be reached ({e})")),
    };
    let (wanted, verb) = match expect {
        Expect::File if metadata.is_dir() => {
            return Some(format!("\"{shown}\" is a folder; expected a file"));
        }
        Expect::Folder if !metadata.is_dir() => {
            return Some(format!("\"{shown}\" is not a folder"));
        }
        Expect::File => (Access::READ_OK, "read"),
        // Listing a folder and reaching what is in it.
        Expect::Folder => (Access::READ_OK | Access::EXEC_OK, "listed"),
    };
    rustix::fs::access(path, wanted).err().map(|e| {
        format!(
            "\"{shown}\" cannot be {verb} by this user (uid {}): {}",
            rustix::process::getuid().as_raw(),
            std::io::Error::from(e)
        )
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::config::inspect;

    #[test]
    fn every_local_path_the_config_names_is_checked_and_remote_ones_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(
            d.join("rules.yaml"),
            include_str!("../../../config/rules.yaml"),
        )
        .unwrap();
        std::fs::create_dir(d.join("a-folder")).unwrap();
        std::fs::write(d.join("a-file"), "").unwrap();
        std::fs::write(d.join("audit.jsonl"), "").unwrap();
        let path = d.join("f.toml");
        std::fs::write(
            &path,
            r#"output_dir = "out"
state_dir = "state"
rules = "rules.yaml"
[serve]
htpasswd = "a-folder"
dist_dir = "a-file"
[[agents]]
name = "a"
endpoint = "http://127.0.0.1:1"
audit_log = "audit.jsonl"
token_file = "no-token"
[vault]
path = "a-folder"
[[boards]]
name = "b"
db = "no-board/kanban.db"
dispatch_config = "a-file"
[[hosts]]
name = "here"
disk_path = "a-folder"
cron_dir = "no-crons"
vault = { path = "no-vault" }
crons = [{ name = "job", period = "1h", stamp = "no-stamp" }]
[[hosts]]
name = "there"
source = "ssh"
cron_dir = "/nowhere/crons"
ssh = { destination = "lab", identity_file = "no-key", known_hosts = "a-file" }
crons = [{ name = "job", period = "1h", stamp = "/nowhere/stamp" }]
[backups]
name = "b"
dir = "no-backups"
"#,
        )
        .unwrap();
        let inspection = inspect(&path);
        assert!(inspection.errors.is_empty(), "{:#?}", inspection.errors);
        let warnings: Vec<String> = inspection
            .warnings()
            .iter()
            .map(ToString::to_string)
            .collect();
        let f = path.display();
        let at = |name: &str| d.join(name).display().to_string();
        assert_eq!(
            warnings,
            [
                format!(
                    "warning: {f}:5: serve.htpasswd: \"{}\" is a folder; expected a file",
                    at("a-folder")
                ),
                format!(
                    "warning: {f}:6: serve.dist_dir: \"{}\" is not a folder",
                    at("a-file")
                ),
                format!(
                    "warning: {f}:11: agents[0].token_file: \"{}\" does not exist",
                    at("no-token")
                ),
                format!(
                    "warning: {f}:16: boards[0].db: \"{}\" does not exist",
                    at("no-board/kanban.db")
                ),
                format!(
                    "warning: {f}:21: hosts[0].cron_dir: \"{}\" does not exist",
                    at("no-crons")
                ),
                format!(
                    "warning: {f}:22: hosts[0].vault.path: \"{}\" does not exist",
                    at("no-vault")
                ),
                format!(
                    "warning: {f}:23: hosts[0].crons[0].stamp: \"{}\" does not exist",
                    at("no-stamp")
                ),
                // The ssh host's own paths are on that host; its key files are read here.
                format!(
                    "warning: {f}:28: hosts[1].ssh.identity_file: \"{}\" does not exist",
                    at("no-key")
                ),
                format!(
                    "warning: {f}:32: backups.dir: \"{}\" does not exist",
                    at("no-backups")
                ),
            ]
        );
        // Looking created nothing: no board folder, no database, no WAL files.
        assert!(!d.join("no-board").exists());
    }

    #[test]
    fn a_config_with_errors_still_names_its_missing_files() {
        let text = "output_dir = \"o\"\nstate_dir = \"s\"\nrules = \"r\"\n\
                    [[agents]]\nname = \"a\"\nendpoint = \"ftp://x\"\naudit_log = \"/nowhere/audit.jsonl\"\n";
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.toml");
        std::fs::write(&path, text).unwrap();
        let inspection = inspect(&path);
        assert!(!inspection.errors.is_empty());
        let warnings = inspection.warnings();
        assert_eq!(warnings.len(), 1, "{warnings:#?}");
        assert_eq!(warnings[0].field, "agents[0].audit_log");
        assert_eq!(warnings[0].line, 7);
        assert!(Path::new(&warnings[0].file).ends_with("f.toml"));
    }
}

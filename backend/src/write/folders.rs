//! The folders `fleetdash run` writes, tried before it starts and before a reload takes over: a
//! folder it cannot write (a read-only mount, the unit's sandbox, a wrong owner) refuses the
//! config with the field, the folder and the way out, instead of a run that fails every pass
//! (and, under systemd, restarts into the same failure for ever). Under fleetdash.service the
//! sandbox (ProtectSystem=strict) lets fleetdash write only below its ReadWritePaths.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use rustix::fs::Access;

use crate::config::{Config, ConfigError, ConfigErrors};

/// Where the packaged unit lets fleetdash write (its ReadWritePaths).
const PACKAGED_STATE: &str = "/var/lib/fleetdash";

/// Every folder `config` has fleetdash write, made when missing and tried for writing; all
/// that fail, each with its field.
pub fn check(config: &Config) -> Result<(), ConfigErrors> {
    let mut named: Vec<(&str, PathBuf)> = vec![
        ("output_dir", config.output_dir.clone()),
        ("state_dir", config.state_dir.clone()),
    ];
    if let Some(parent) = config
        .work_queue
        .as_ref()
        .and_then(|wq| wq.db.parent())
        .filter(|p| !p.as_os_str().is_empty())
    {
        named.push(("work_queue.db", parent.to_path_buf()));
    }
    let errors: Vec<ConfigError> = named
        .into_iter()
        .filter_map(|(field, dir)| {
            writable(&dir).err().map(|why| ConfigError {
                file: config.path.clone(),
                line: None,
                field: field.to_string(),
                message: why,
            })
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ConfigErrors(errors))
    }
}

/// [`check`] on a blocking thread (it makes folders and asks the kernel), for the runtime.
pub async fn tried(config: &Config) -> Result<(), ConfigErrors> {
    let config = config.clone();
    let path = config.path.clone();
    tokio::task::spawn_blocking(move || check(&config))
        .await
        .unwrap_or_else(|e| {
            Err(ConfigErrors(vec![ConfigError {
                file: path,
                line: None,
                field: String::new(),
                message: format!("trying the folders it writes failed: {e}"),
            }]))
        })
}

/// Ok when fleetdash can make files in `dir` (made first when missing); else why not, and what
/// to do about it.
fn writable(dir: &Path) -> Result<(), String> {
    let tried = std::fs::create_dir_all(dir)
        .map_err(|e| (format!("cannot create {}", dir.display()), e))
        .and_then(|()| {
            rustix::fs::access(dir, Access::WRITE_OK | Access::EXEC_OK)
                .map_err(|e| (format!("cannot write in {}", dir.display()), e.into()))
        });
    let Err((what, e)) = tried else {
        return Ok(());
    };
    let way_out = match e.kind() {
        ErrorKind::ReadOnlyFilesystem => format!(
            "the folder is read-only to fleetdash here. Under fleetdash.service the unit's \
             sandbox (ProtectSystem=strict) lets it write only below {PACKAGED_STATE}: move the \
             folder there, or give it to the unit with a drop-in (`systemctl edit fleetdash`, \
             then under [Service]: ReadWritePaths={})",
            dir.display()
        ),
        ErrorKind::PermissionDenied => format!(
            "give the folder to the user fleetdash runs as (chown fleetdash {})",
            dir.display()
        ),
        _ => "correct the path in the config".to_string(),
    };
    Err(format!("{what} ({e}): {way_out}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_folder_is_made_and_passes() {
        let dir = tempfile::tempdir().unwrap();
        let deep = dir.path().join("a/b/out");
        writable(&deep).unwrap();
        assert!(deep.is_dir());
    }

    #[test]
    fn a_folder_that_cannot_be_made_names_itself_and_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a-file");
        std::fs::write(&file, "x").unwrap();
        let why = writable(&file.join("out")).unwrap_err();
        assert!(why.contains("cannot create"), "{why}");
        assert!(
            why.contains(&file.join("out").display().to_string()),
            "{why}"
        );
        assert!(why.contains("correct the path"), "{why}");
    }
}

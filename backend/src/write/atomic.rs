//! Atomic file replacement: write a temp file in the same directory, fsync it, rename it over
//! the target, fsync the directory. A reader sees the old file or the new one, never a mix, and
//! a crash at any point leaves the old file whole.
//!
//! A crash (kill -9) between creating the temp file and renaming it leaves the temp file
//! behind: a full copy, mode 600, that nothing would ever remove. So the temp files carry a
//! name of our own ([`TEMP_PREFIX`] and [`TEMP_RANDOM_CHARS`] letters or digits), and every
//! write first sweeps its folder of ours that are older than [`STALE_TEMP_AFTER`] (the writer
//! also sweeps every folder it writes when it starts). A younger one may belong to a writer
//! still at work and is left alone; so is anything that is not a regular file of that exact
//! name owned by our own user.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result};

/// The start of every temp file's name.
pub const TEMP_PREFIX: &str = ".fleetdash-tmp-";
/// The random letters and digits after the prefix.
pub const TEMP_RANDOM_CHARS: usize = 12;
/// A temp file of ours older than this was left by a writer that died: no write takes this
/// long (a snapshot is written in milliseconds), so a concurrent writer's file is never
/// younger-than-this-but-abandoned, nor older-than-this-and-in-use.
pub const STALE_TEMP_AFTER: Duration = Duration::from_secs(15 * 60);

pub fn write(target: &Path, bytes: &[u8]) -> Result<()> {
    let dir = target
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    sweep_stale_temporaries(dir);
    let mut tmp = temp_in(dir)
        .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
    tmp.write_all(bytes)
        .and_then(|()| tmp.as_file().sync_all())
        .with_context(|| format!("cannot write a temporary file in {}", dir.display()))?;
    // Readable by the web server's user; the snapshot holds nothing secret by construction.
    set_mode(tmp.path(), 0o644)?;
    tmp.persist(target)
        .with_context(|| format!("cannot replace {}", target.display()))?;
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .with_context(|| format!("cannot sync directory {}", dir.display()))?;
    Ok(())
}

fn temp_in(dir: &Path) -> std::io::Result<tempfile::NamedTempFile> {
    tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .rand_bytes(TEMP_RANDOM_CHARS)
        .tempfile_in(dir)
}

/// Whether `name` is the name of one of our temp files.
pub fn is_our_temp_name(name: &str) -> bool {
    name.strip_prefix(TEMP_PREFIX).is_some_and(|rest| {
        rest.len() == TEMP_RANDOM_CHARS && rest.bytes().all(|b| b.is_ascii_alphanumeric())
    })
}

/// Removes the temp files of ours in `dir` that a dead writer left (see the module docs) and
/// returns how many. Never fails: a folder that cannot be read or a file that cannot be removed
/// is logged, and the write goes on.
pub fn sweep_stale_temporaries(dir: &Path) -> usize {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return 0,
        Err(e) => {
            tracing::warn!(dir = %dir.display(), "cannot look for stale temporary files: {e}");
            return 0;
        }
    };
    let now = SystemTime::now();
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !name.to_str().is_some_and(is_our_temp_name) {
            continue;
        }
        let path = entry.path();
        // symlink_metadata: a link of that name is not ours to follow or remove.
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        let age = meta
            .modified()
            .ok()
            .and_then(|m| now.duration_since(m).ok());
        if !meta.is_file() || !owned_by_us(&meta) || age.is_none_or(|a| a < STALE_TEMP_AFTER) {
            continue;
        }
        match std::fs::remove_file(&path) {
            Ok(()) => {
                removed += 1;
                tracing::info!(file = %path.display(), "removed a temporary file an interrupted write left");
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::warn!(file = %path.display(), "cannot remove a stale temporary file: {e}");
            }
        }
    }
    removed
}

#[cfg(unix)]
fn owned_by_us(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    meta.uid() == rustix::process::geteuid().as_raw()
}

#[cfg(not(unix))]
fn owned_by_us(_: &std::fs::Metadata) -> bool {
    true
}

#[cfg(unix)]
fn set_mode(path: &Path, mode: u32) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .with_context(|| format!("cannot set permissions on {}", path.display()))
}

#[cfg(not(unix))]
fn set_mode(_: &Path, _: u32) -> Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sweep recognises exactly the names the writer gives its temp files.
    #[test]
    fn the_writers_own_temp_names_are_recognised_and_look_alikes_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let tmp = temp_in(dir.path()).unwrap();
        let name = tmp.path().file_name().unwrap().to_str().unwrap();
        assert!(is_our_temp_name(name), "{name}");
        for other in [
            ".tmp-a1b2c3",
            ".fleetdash-tmp-",
            ".fleetdash-tmp-short",
            ".fleetdash-tmp-abcdefghijk!",
            ".fleetdash-tmp-abcdefghijkl.md",
            "fleetdash-tmp-abcdefghijkl",
            "status.json",
        ] {
            assert!(!is_our_temp_name(other), "{other}");
        }
    }

    /// A link named like ours, pointing at a stale file of ours elsewhere, is neither followed
    /// nor removed.
    #[test]
    fn a_link_with_our_name_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let target = elsewhere.path().join("precious");
        std::fs::write(&target, b"x").unwrap();
        let day_ago = SystemTime::now() - Duration::from_secs(86_400);
        std::fs::File::options()
            .write(true)
            .open(&target)
            .unwrap()
            .set_modified(day_ago)
            .unwrap();
        let link = dir.path().join(".fleetdash-tmp-L1nk00000001");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert_eq!(sweep_stale_temporaries(dir.path()), 0);
        assert!(link.symlink_metadata().is_ok() && target.exists());
    }
}

//! Atomic file replacement: write a temp file in the same directory, fsync it, rename it over
//! the target, fsync the directory. A reader sees the old file or the new one, never a mix, and
//! a crash at any point leaves the old file whole.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};

pub fn write(target: &Path, bytes: &[u8]) -> Result<()> {
    let dir = target
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new()
        .prefix(".tmp-")
        .tempfile_in(dir)
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

//! Who the service runs as, and whether that user may read or write a path: the kernel's
//! permission rule (owner, then group, then others; root passes; every folder on the way must
//! be searchable) worked out from the file modes and /etc/passwd and /etc/group, so the
//! doctor can judge for the `fleetdash` user while run by root, without switching users.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// A user: name, ids and every group it is in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    pub name: String,
    pub uid: u32,
    pub gids: Vec<u32>,
}

/// The service's user: `name`, else `fleetdash` if it exists, else whoever runs the doctor.
pub fn service_user(name: Option<&str>) -> Result<User, String> {
    let passwd = std::fs::read_to_string("/etc/passwd")
        .map_err(|e| format!("cannot read /etc/passwd: {e}"))?;
    let group = std::fs::read_to_string("/etc/group").unwrap_or_default();
    let find = |want: &dyn Fn(&str, u32) -> bool| {
        passwd.lines().find_map(|line| {
            let f: Vec<&str> = line.split(':').collect();
            let (name, uid, gid) = (f.first()?, f.get(2)?.parse().ok()?, f.get(3)?.parse().ok()?);
            want(name, uid).then(|| user_of(name, uid, gid, &group))
        })
    };
    match name {
        Some(name) => find(&|n, _| n == name).ok_or_else(|| format!("no user {name} on this host")),
        None => match find(&|n, _| n == "fleetdash") {
            Some(user) => Ok(user),
            None => {
                let me = rustix::process::geteuid().as_raw();
                find(&|_, uid| uid == me)
                    .ok_or_else(|| format!("uid {me} is in no /etc/passwd line"))
            }
        },
    }
}

/// The user running this process (what the doctor judges for when no service user exists).
pub fn current_user() -> Result<User, String> {
    let me = rustix::process::geteuid().as_raw();
    let passwd = std::fs::read_to_string("/etc/passwd")
        .map_err(|e| format!("cannot read /etc/passwd: {e}"))?;
    let group = std::fs::read_to_string("/etc/group").unwrap_or_default();
    passwd
        .lines()
        .find_map(|line| {
            let f: Vec<&str> = line.split(':').collect();
            let (name, uid, gid) = (f.first()?, f.get(2)?.parse().ok()?, f.get(3)?.parse().ok()?);
            (uid == me).then(|| user_of(name, uid, gid, &group))
        })
        .ok_or_else(|| format!("uid {me} is in no /etc/passwd line"))
}

fn user_of(name: &str, uid: u32, gid: u32, group: &str) -> User {
    let mut gids = vec![gid];
    for line in group.lines() {
        let f: Vec<&str> = line.split(':').collect();
        if let (Some(id), Some(members)) = (f.get(2).and_then(|g| g.parse().ok()), f.get(3))
            && members.split(',').any(|m| m == name)
            && !gids.contains(&id)
        {
            gids.push(id);
        }
    }
    User {
        name: name.into(),
        uid,
        gids,
    }
}

/// What `user` may do to one file or folder, by its mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    Read,
    Write,
    /// Enter a folder (search: `x`).
    Search,
}

fn allowed(user: &User, meta: &std::fs::Metadata, want: Want) -> bool {
    if user.uid == 0 {
        // Root passes every check but execute; a folder is searchable to root.
        return true;
    }
    let bit = match want {
        Want::Read => 4,
        Want::Write => 2,
        Want::Search => 1,
    };
    let mode = meta.mode();
    let shift = if meta.uid() == user.uid {
        6
    } else if user.gids.contains(&meta.gid()) {
        3
    } else {
        0
    };
    mode >> shift & bit != 0
}

/// Whether `user` may do `want` to `path`: every folder above it searchable, then the path's
/// own bits. `Err` says why not, naming the path that stops it.
pub fn can(user: &User, path: &Path, want: Want) -> Result<(), String> {
    let path = std::path::absolute(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut above = path.ancestors().skip(1).collect::<Vec<_>>();
    above.reverse();
    for folder in above {
        let meta = std::fs::metadata(folder).map_err(|e| format!("{}: {e}", folder.display()))?;
        if !allowed(user, &meta, Want::Search) {
            return Err(format!(
                "{} cannot enter {} (mode {:o}, owner uid {})",
                user.name,
                folder.display(),
                meta.mode() & 0o7777,
                meta.uid()
            ));
        }
    }
    let meta = std::fs::metadata(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    if allowed(user, &meta, want) {
        Ok(())
    } else {
        let what = match want {
            Want::Read => "read",
            Want::Write => "write",
            Want::Search => "enter",
        };
        Err(format!(
            "{} cannot {what} {} (mode {:o}, owner uid {} gid {})",
            user.name,
            path.display(),
            meta.mode() & 0o7777,
            meta.uid(),
            meta.gid()
        ))
    }
}

/// Whether `path`'s group is `user`'s own: named as the user (Debian's `adduser --system
/// --group`), so group-readable is readable by the service alone.
pub fn group_is_own(path: &Path, user: &User) -> bool {
    let Ok(gid) = std::fs::metadata(path).map(|m| m.gid()) else {
        return false;
    };
    let groups = std::fs::read_to_string("/etc/group").unwrap_or_default();
    groups.lines().any(|line| {
        let f: Vec<&str> = line.split(':').collect();
        f.first() == Some(&user.name.as_str())
            && f.get(2).and_then(|g| g.parse::<u32>().ok()) == Some(gid)
            && f.get(3)
                .is_none_or(|m| m.split(',').all(|m| m.is_empty() || m == user.name))
    })
}

/// The mode bits others (not owner, not group) have on `path`, and the group's.
pub fn shared_bits(path: &Path) -> std::io::Result<(u32, u32)> {
    let mode = std::fs::metadata(path)?.mode();
    Ok((mode >> 3 & 0o7, mode & 0o7))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn someone() -> User {
        User {
            name: "someone".into(),
            uid: 64000,
            gids: vec![64000],
        }
    }

    #[test]
    fn another_user_is_judged_by_the_others_bits_and_every_folder_on_the_way() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "x").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
        let user = someone();
        assert!(can(&user, &file, Want::Read).is_err());
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(can(&user, &file, Want::Read).is_ok());
        assert!(can(&user, &file, Want::Write).is_err());
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let why = can(&user, &file, Want::Read).unwrap_err();
        assert!(why.contains("cannot enter"), "{why}");
        let root = User {
            name: "root".into(),
            uid: 0,
            gids: vec![0],
        };
        assert!(can(&root, &file, Want::Write).is_ok());
    }
}

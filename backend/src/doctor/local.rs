//! The checks of this host's files: the config and rules, the folders fleetdash writes, what
//! nginx could serve from them, the htpasswd, the token files and the boards.

use std::path::Path;

use fleetdash_model::Asc;

use super::Finding;
use super::access::{self, User, Want};
use crate::config::{Config, Inspection, TokenSource};

/// The config's and the rules file's mistakes (fail) and the files it names that are missing
/// now (warn), as `fleetdash check` says them.
pub fn config_findings(path: &Path, inspection: &Inspection) -> Vec<Finding> {
    let mut out: Vec<Finding> = inspection
        .errors
        .iter()
        .map(|e| {
            Finding::fail(
                "config",
                e.file.display().to_string(),
                said(&e.file, e.line, &e.field, &e.message),
                "edit the file where the error points (`fleetdash check --config FILE` lists \
                 them all)",
                Asc::FAILED_PRECONDITION,
            )
        })
        .collect();
    out.extend(inspection.warnings().iter().map(|w| {
        let denied = w.message.contains("ermission denied");
        Finding::warn(
            "config",
            w.file.display().to_string(),
            said(&w.file, Some(w.line), &w.field, &w.message),
            if denied {
                "let the service's user read it (its group, chmod g+r, and g+x on its folders)"
            } else {
                "create the file, or correct its path in the config"
            },
            if denied {
                Asc::PERMISSION_DENIED
            } else {
                Asc::NOT_FOUND
            },
        )
    }));
    if out.is_empty() {
        out.push(Finding::ok(
            "config",
            path.display().to_string(),
            "the config and its rules file are valid",
        ));
    }
    out
}

/// A config mistake in words: `file:line: what (field)`. The field goes last: `htpasswd:` or
/// `token_file:` before a value is a secret's shape to the redaction gate the output passes,
/// which would eat the message.
fn said(file: &Path, line: Option<usize>, field: &str, message: &str) -> String {
    let at = match line {
        Some(line) => format!("{}:{line}", file.display()),
        None => file.display().to_string(),
    };
    if field.is_empty() {
        format!("{at}: {message}")
    } else {
        format!("{at}: {message} ({field})")
    }
}

/// Every file check for `config` run as `user`.
pub fn files(config: &Config, user: &User) -> Vec<Finding> {
    let mut out = folders(config, user);
    out.extend(exposure(config));
    out.extend(htpasswd_file(config, user));
    out.extend(tokens(config, user));
    out.extend(boards(config, user));
    out
}

/// The state and output folders (and the work queue's): writable by the service's user, or
/// creatable by it.
fn folders(config: &Config, user: &User) -> Vec<Finding> {
    let mut named = vec![
        ("state_dir", config.state_dir.clone()),
        ("output_dir", config.output_dir.clone()),
    ];
    if let Some(wq) = &config.work_queue
        && let Some(parent) = wq.db.parent()
    {
        named.push(("work_queue.db's folder", parent.to_path_buf()));
    }
    named
        .into_iter()
        .map(|(field, dir)| {
            let shown = dir.display().to_string();
            if dir.is_dir() {
                return match access::can(user, &dir, Want::Write) {
                    Ok(()) => Finding::ok(
                        "folders",
                        shown,
                        format!("{field}: {} writes it", user.name),
                    ),
                    Err(why) => Finding::fail(
                        "folders",
                        shown.clone(),
                        format!("{field}: {why}"),
                        format!(
                            "chown {} {shown} (the package does it for /var/lib/fleetdash)",
                            user.name
                        ),
                        Asc::PERMISSION_DENIED,
                    ),
                };
            }
            // A missing folder is made by `fleetdash run` when its nearest existing parent
            // lets the user.
            let parent = dir.ancestors().skip(1).find(|p| p.is_dir());
            match parent.map(|p| (p, access::can(user, p, Want::Write))) {
                Some((_, Ok(()))) => Finding::warn(
                    "folders",
                    shown.clone(),
                    format!("{field}: missing; fleetdash makes it at its first write"),
                    format!(
                        "mkdir -p {shown} && chown {} {shown}, to choose its mode yourself",
                        user.name
                    ),
                    Asc::NOT_FOUND,
                ),
                Some((_, Err(why))) => Finding::fail(
                    "folders",
                    shown.clone(),
                    format!("{field}: missing, and {why}"),
                    format!("mkdir -p {shown} && chown {} {shown}", user.name),
                    Asc::PERMISSION_DENIED,
                ),
                None => Finding::fail(
                    "folders",
                    shown,
                    format!("{field}: no folder above it exists"),
                    "correct the path in the config",
                    Asc::NOT_FOUND,
                ),
            }
        })
        .collect()
}

/// The output folder is what nginx serves: the state folder (silences, the queue, the alert
/// outbox, the login cache key) must not be inside it, nor the queue's file.
fn exposure(config: &Config) -> Vec<Finding> {
    let inside = |a: &Path, b: &Path| {
        let (a, b) = (normal(a), normal(b));
        a.starts_with(&b)
    };
    let out = config.output_dir.display().to_string();
    let mut found = Vec::new();
    if inside(&config.state_dir, &config.output_dir) {
        found.push(Finding::fail(
            "exposure",
            config.state_dir.display().to_string(),
            format!("the state folder is inside the output folder {out}, which nginx serves"),
            "give state_dir a folder of its own outside output_dir (the package: \
             /var/lib/fleetdash/state and /var/lib/fleetdash/www)",
            Asc::PERMISSION_DENIED,
        ));
    }
    if let Some(wq) = &config.work_queue
        && inside(&wq.db, &config.output_dir)
    {
        found.push(Finding::fail(
            "exposure",
            wq.db.display().to_string(),
            format!("the work queue's file is inside the output folder {out}"),
            "move work_queue.db under state_dir",
            Asc::PERMISSION_DENIED,
        ));
    }
    if found.is_empty() {
        found.push(Finding::ok(
            "exposure",
            out,
            "nothing of the state is inside the folder nginx serves",
        ));
    }
    found
}

/// The path with `.` and `..` worked out, for comparing folders that may not exist yet.
fn normal(path: &Path) -> std::path::PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let real = absolute.canonicalize().ok();
    let mut out = std::path::PathBuf::new();
    for part in real.as_deref().unwrap_or(&absolute).components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// `[serve] htpasswd`: there, bcrypt only, readable by the service, and not by everyone.
fn htpasswd_file(config: &Config, user: &User) -> Vec<Finding> {
    match &config.serve.htpasswd {
        None => vec![Finding::ok(
            "htpasswd",
            "serve.htpasswd",
            "not set: `fleetdash serve` is not used (nginx's own auth_basic file is checked with \
             the site)",
        )],
        Some(path) => vec![htpasswd(path, Some(user))],
    }
}

/// One htpasswd file: present, every line bcrypt, readable by `reader` when given, not
/// world-readable.
pub fn htpasswd(path: &Path, reader: Option<&User>) -> Finding {
    let shown = path.display().to_string();
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) => {
            return Finding::fail(
                "htpasswd",
                shown,
                format!("cannot read it: {e}"),
                "create it: htpasswd -B -c FILE USER (apache2-utils)",
                Asc::NOT_FOUND,
            );
        }
    };
    let users: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let weak: Vec<&str> = users
        .iter()
        .filter(|l| {
            let hash = l.split_once(':').map_or("", |(_, h)| h);
            !["$2y$", "$2b$", "$2a$"].iter().any(|p| hash.starts_with(p))
        })
        .map(|l| l.split(':').next().unwrap_or(""))
        .collect();
    if users.is_empty() {
        return Finding::fail(
            "htpasswd",
            shown,
            "no user in it: nobody can log in",
            "add one: htpasswd -B FILE USER",
            Asc::FAILED_PRECONDITION,
        );
    }
    if !weak.is_empty() {
        return Finding::fail(
            "htpasswd",
            shown,
            format!(
                "not bcrypt for {}: fleetdash serve refuses such lines",
                weak.join(", ")
            ),
            "set each password again with -B: htpasswd -B FILE USER",
            Asc::FAILED_PRECONDITION,
        );
    }
    if let Ok((_, others)) = access::shared_bits(path)
        && others & 4 != 0
    {
        return Finding::fail(
            "htpasswd",
            shown.clone(),
            "readable by every user of this host: its hashes can be guessed offline",
            format!(
                "chmod 0640 {shown}, its group the reader's (www-data for nginx, fleetdash for \
                 fleetdash serve)"
            ),
            Asc::PERMISSION_DENIED,
        );
    }
    if let Some(reader) = reader
        && let Err(why) = access::can(reader, path, Want::Read)
    {
        return Finding::fail(
            "htpasswd",
            shown.clone(),
            why,
            format!("chgrp {} {shown} && chmod g+r {shown}", reader.name),
            Asc::PERMISSION_DENIED,
        );
    }
    Finding::ok(
        "htpasswd",
        shown,
        format!("{} bcrypt user(s), not world-readable", users.len()),
    )
}

/// Token files: readable by the service, by nobody else. A token in an environment variable
/// is the unit's business (EnvironmentFile=), said once.
fn tokens(config: &Config, user: &User) -> Vec<Finding> {
    // Whether fleetdash's side makes the token (a report or operator token: any random
    // string, given to the agent) or another's gives it (an agent's, a channel's).
    let mut named: Vec<(String, &TokenSource, bool)> = Vec::new();
    for a in &config.agents {
        if let Some(t) = &a.token {
            named.push((format!("agent {}'s token", a.name), t, false));
        }
        if let Some(t) = &a.report_token {
            named.push((format!("agent {}'s report token", a.name), t, true));
        }
    }
    if let Some(t) = &config.intake.operator_token {
        named.push(("the intake's operator token".into(), t, true));
    }
    for t in config.alerts.token_sources() {
        named.push(("an alert channel's token".into(), t, false));
    }
    let mut out = Vec::new();
    for (what, source, ours) in named {
        let TokenSource::File(path) = source else {
            continue;
        };
        let shown = path.display().to_string();
        if !path.exists() {
            out.push(Finding::fail(
                "tokens",
                shown.clone(),
                format!("{what} — missing: nothing can authenticate with it"),
                if ours {
                    format!(
                        "make one: (umask 077; head -c 32 /dev/urandom | base64 > {shown}) && \
                         chown {} {shown}, and give the agent the same token (`fleetdash init` \
                         writes them)",
                        user.name
                    )
                } else {
                    format!(
                        "put the token you were given in it: (umask 077; cat > {shown}), then \
                         chown {} {shown}",
                        user.name
                    )
                },
                Asc::NOT_FOUND,
            ));
            continue;
        }
        let finding = match (
            access::can(user, path, Want::Read),
            access::shared_bits(path),
        ) {
            (Err(why), _) => Finding::fail(
                "tokens",
                shown.clone(),
                format!("{what} — {why}"),
                format!("chown {} {shown} && chmod 0400 {shown}", user.name),
                Asc::PERMISSION_DENIED,
            ),
            (Ok(()), Ok((_, others))) if others & 4 != 0 => Finding::fail(
                "tokens",
                shown.clone(),
                format!("{what} — readable by every user of this host"),
                format!(
                    "chmod 0400 {shown} (owned by {}), and rotate it: any user may have read it",
                    user.name
                ),
                Asc::PERMISSION_DENIED,
            ),
            (Ok(()), Ok((group, _))) if group & 4 != 0 && !access::group_is_own(path, user) => {
                Finding::warn(
                    "tokens",
                    shown.clone(),
                    format!("{what} — readable by the file's group"),
                    format!("chmod 0400 {shown}, unless the group is the service's alone"),
                    Asc::PERMISSION_DENIED,
                )
            }
            (Ok(()), _) => Finding::ok("tokens", shown, format!("{what} — the service's alone")),
        };
        out.push(finding);
    }
    out
}

/// Boards: each file readable by the service without writing anything beside it. Hermes
/// writes in WAL mode: while it runs, a reader needs the `-wal` and `-shm` readable, and a
/// `-wal` without a `-shm` cannot be read without a writer's step (the collector says so red).
fn boards(config: &Config, user: &User) -> Vec<Finding> {
    config
        .boards
        .iter()
        .filter(|b| !b.retired)
        .map(|b| {
            let shown = b.db.display().to_string();
            let subject = format!("board {} ({shown})", b.name);
            if let Err(why) = access::can(user, &b.db, Want::Read) {
                return Finding::fail(
                    "boards",
                    subject,
                    why,
                    format!(
                        "let {} read it: add it to the board owner's group, and chmod g+r the \
                         file (g+x its folders)",
                        user.name
                    ),
                    Asc::PERMISSION_DENIED,
                );
            }
            let beside = |suffix: &str| {
                let mut p = b.db.clone().into_os_string();
                p.push(suffix);
                std::path::PathBuf::from(p)
            };
            let (wal, shm) = (beside("-wal"), beside("-shm"));
            if wal.exists() {
                if !shm.exists() {
                    return Finding::warn(
                        "boards",
                        subject,
                        "a -wal without a -shm: Hermes stopped half-way; no reader can open it \
                         read-only until Hermes opens the board again",
                        "start Hermes (or run one `hermes kanban list`) so it checkpoints the WAL",
                        Asc::RETRYABLE_ERROR,
                    );
                }
                for f in [&wal, &shm] {
                    if let Err(why) = access::can(user, f, Want::Read) {
                        return Finding::fail(
                            "boards",
                            subject,
                            format!("Hermes has the board open in WAL mode and {why}"),
                            "Hermes' umask must leave the -wal and -shm group-readable, as the \
                             board itself (umask 027 with the service in Hermes' group)",
                            Asc::PERMISSION_DENIED,
                        );
                    }
                }
            }
            Finding::ok(
                "boards",
                subject,
                format!("{} reads it read-only", user.name),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::{Level, loaded};
    use std::os::unix::fs::PermissionsExt;

    /// Whoever runs the tests: the package's `fleetdash` user may exist on this host, and
    /// cannot read the files a test makes.
    fn me() -> User {
        access::current_user().unwrap()
    }

    #[test]
    fn the_state_folder_inside_the_served_one_fails() {
        let dir = tempfile::tempdir().unwrap();
        let (mut config, _) = loaded(dir.path(), "");
        assert!(exposure(&config).iter().all(|f| f.level == Level::Ok));
        config.state_dir = config.output_dir.join("state");
        let found = exposure(&config);
        assert_eq!(found[0].level, Level::Fail, "{found:?}");
        config.state_dir = config.output_dir.join("../out/./st");
        assert_eq!(exposure(&config)[0].level, Level::Fail);
    }

    #[test]
    fn an_htpasswd_must_be_bcrypt_and_not_world_readable() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("htpasswd");
        assert_eq!(htpasswd(&path, None).level, Level::Fail, "missing");
        std::fs::write(&path, "young:$apr1$abc$def\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        let md5 = htpasswd(&path, None);
        assert_eq!(md5.level, Level::Fail);
        assert!(md5.detail.contains("not bcrypt for young"), "{md5:?}");
        std::fs::write(&path, format!("young:{}\n", bcrypt::hash("pw", 4).unwrap())).unwrap();
        assert_eq!(htpasswd(&path, None).level, Level::Ok);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let open = htpasswd(&path, None);
        assert_eq!(open.level, Level::Fail);
        assert!(
            open.fix.as_deref().unwrap().contains("chmod 0640"),
            "{open:?}"
        );
    }

    #[test]
    fn a_token_file_others_can_read_fails_and_a_group_readable_one_warns() {
        let dir = tempfile::tempdir().unwrap();
        let token = dir.path().join("min.token");
        std::fs::write(&token, "tok").unwrap();
        let body = format!(
            "[[agents]]\nname = \"min\"\nendpoint = \"http://127.0.0.1:9\"\ndialect = \"v1\"\ntoken_file = \"{}\"\n",
            token.display()
        );
        let (config, _) = loaded(dir.path(), &body);
        // The file's owner and group are the tester's; a service of another name reads it
        // through its group, which is then not the service's own.
        let owner = me();
        let other = User {
            name: "fleetdash-test-other".into(),
            ..owner.clone()
        };
        for (mode, level) in [
            (0o600, Level::Ok),
            (0o640, Level::Warn),
            (0o644, Level::Fail),
        ] {
            std::fs::set_permissions(&token, std::fs::Permissions::from_mode(mode)).unwrap();
            let found = tokens(&config, &other);
            assert_eq!(found.len(), 1);
            assert_eq!(found[0].level, level, "mode {mode:o}: {found:?}");
        }
        // Group-readable by the service's own group (named as the user, as `adduser --system
        // --group` makes it) is the service's alone.
        let own_group = std::fs::read_to_string("/etc/group")
            .unwrap()
            .lines()
            .any(|l| l.starts_with(&format!("{}:", owner.name)));
        if own_group {
            std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o640)).unwrap();
            assert_eq!(tokens(&config, &owner)[0].level, Level::Ok);
        }
    }

    /// Issue 44: a report token that is missing fails saying how one is made; one others can
    /// read fails too.
    #[test]
    fn a_report_token_missing_or_readable_by_others_fails_with_how_to_make_one() {
        let dir = tempfile::tempdir().unwrap();
        let token = dir.path().join("kai.report");
        let body = format!(
            "[[agents]]\nname = \"kai\"\nendpoint = \"http://127.0.0.1:9\"\ndialect = \"v1\"\nreport_token_file = \"{}\"\n",
            token.display()
        );
        let (config, _) = loaded(dir.path(), &body);
        let found = tokens(&config, &me());
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].level, Level::Fail, "{found:?}");
        assert!(
            found[0].detail.contains("kai's report token — missing"),
            "{found:?}"
        );
        let fix = found[0].fix.as_deref().unwrap();
        assert!(
            fix.contains("head -c 32 /dev/urandom | base64") && fix.contains("fleetdash init"),
            "{fix}"
        );
        std::fs::write(&token, "tok").unwrap();
        std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o644)).unwrap();
        let found = tokens(&config, &me());
        assert_eq!(found[0].level, Level::Fail, "{found:?}");
        assert!(
            found[0].detail.contains("readable by every user"),
            "{found:?}"
        );
        std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(tokens(&config, &me())[0].level, Level::Ok);
    }

    #[test]
    fn a_board_in_wal_mode_without_its_shm_is_said() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("kanban.db");
        std::fs::write(&db, "").unwrap();
        let body = format!("[[boards]]\nname = \"main\"\ndb = \"{}\"\n", db.display());
        let (config, _) = loaded(dir.path(), &body);
        assert_eq!(boards(&config, &me())[0].level, Level::Ok);
        std::fs::write(dir.path().join("kanban.db-wal"), "").unwrap();
        let found = boards(&config, &me());
        assert_eq!(found[0].level, Level::Warn, "{found:?}");
        assert!(found[0].detail.contains("-wal without a -shm"));
    }
}

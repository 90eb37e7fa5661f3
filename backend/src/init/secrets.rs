//! The secrets `fleetdash init` makes: the page's login (an htpasswd holding only its bcrypt
//! hash; the password is printed once and written nowhere) and one report token per agent, each
//! in its own file (0600, in a 0700 folder). An existing file is kept as it is: a re-run never
//! changes a password or a token an agent already holds. Blocking (bcrypt, fsync): called off
//! the async workers.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::Path;

use anyhow::{Context, Result};
use rand::distr::{Alphanumeric, SampleString};

/// Characters in a generated password.
const PASSWORD_CHARS: usize = 20;
/// Characters in a report token (about 190 bits).
pub const TOKEN_CHARS: usize = 32;
/// The secret files' mode: the operator alone (the service runs as the operator).
const SECRET_MODE: u32 = 0o600;

/// The page's login as this run left it.
#[derive(Debug, PartialEq, Eq)]
pub enum Login {
    /// Made now: the password, to be printed once.
    New { user: String, password: String },
    /// The htpasswd was there: kept, password unchanged.
    Kept,
}

/// The htpasswd at `path`: kept when it exists (unless `renew`), else a new password for
/// `user` whose bcrypt hash is the file. With `renew`, `user`'s line is replaced and the other
/// users' lines kept.
pub fn login(path: &Path, user: &str, renew: bool) -> Result<Login> {
    let existing = match std::fs::read_to_string(path) {
        Ok(text) if !renew => {
            anyhow::ensure!(
                !text.trim().is_empty(),
                "{} is empty: remove it, or run `fleetdash init --new-password`",
                path.display()
            );
            return Ok(Login::Kept);
        }
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => anyhow::bail!("cannot read {}: {e}", path.display()),
    };
    let password = Alphanumeric.sample_string(&mut rand::rng(), PASSWORD_CHARS);
    let hash = bcrypt::hash(&password, bcrypt::DEFAULT_COST).context("cannot hash the password")?;
    let mut text: String = existing
        .lines()
        .filter(|l| l.split_once(':').is_none_or(|(u, _)| u != user))
        .map(|l| format!("{l}\n"))
        .collect();
    text.push_str(&format!("{user}:{hash}\n"));
    write_private(path, text.as_bytes())?;
    Ok(Login::New {
        user: user.to_string(),
        password,
    })
}

/// The login name for the page: this user's, when it is a plain name.
pub fn user_name() -> String {
    std::env::var("USER")
        .or_else(|_| std::env::var("LOGNAME"))
        .ok()
        .filter(|u| {
            !u.is_empty()
                && u.len() <= 32
                && u.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        })
        .unwrap_or_else(|| "operator".into())
}

/// `dir/<agent>`: a new random report token unless the file exists. Whether it was made now.
pub fn report_token(dir: &Path, agent: &str) -> Result<bool> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("cannot create {}", dir.display()))?;
    let path = dir.join(agent);
    if path.exists() {
        return Ok(false);
    }
    let token = Alphanumeric.sample_string(&mut rand::rng(), TOKEN_CHARS);
    write_private(&path, format!("{token}\n").as_bytes())?;
    Ok(true)
}

/// Writes `bytes` to `path` whole or not at all, mode 0600 from the start (the temporary file
/// is created 0600: never a moment readable by others).
pub fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    write_with_mode(path, bytes, SECRET_MODE)
}

/// Writes `bytes` to `path` whole or not at all (a temporary file beside it, renamed), `mode`.
pub fn write_with_mode(path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new()
        .prefix(crate::write::atomic::TEMP_PREFIX)
        .rand_bytes(crate::write::atomic::TEMP_RANDOM_CHARS)
        .tempfile_in(dir)
        .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
    tmp.write_all(bytes)
        .and_then(|()| tmp.as_file().sync_all())
        .and_then(|()| std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(mode)))
        .with_context(|| format!("cannot write {}", path.display()))?;
    tmp.persist(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_login_is_made_once_and_kept_unless_renewed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("htpasswd");
        let Login::New { user, password } = login(&path, "young", false).unwrap() else {
            panic!("a first login is new");
        };
        assert_eq!(user, "young");
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains(&password), "only the hash is written");
        let hash = text.trim().strip_prefix("young:").unwrap();
        assert!(bcrypt::verify(&password, hash).unwrap());
        assert_eq!(mode(&path), 0o600);

        assert_eq!(login(&path, "young", false).unwrap(), Login::Kept);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);

        // Renewed: the user's line replaced, another user's kept.
        std::fs::write(&path, format!("{text}kai:$2y$04$abc\n")).unwrap();
        let Login::New {
            password: again, ..
        } = login(&path, "young", true).unwrap()
        else {
            panic!("renewed");
        };
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 2, "{text}");
        assert!(text.starts_with("kai:$2y$04$abc\n"), "{text}");
        let hash = text.lines().nth(1).unwrap().strip_prefix("young:").unwrap();
        assert!(bcrypt::verify(&again, hash).unwrap());
    }

    #[test]
    fn a_report_token_is_made_private_and_never_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let tokens = dir.path().join("report-tokens");
        assert!(report_token(&tokens, "min").unwrap());
        let path = tokens.join("min");
        let token = std::fs::read_to_string(&path).unwrap();
        assert_eq!(token.trim().len(), TOKEN_CHARS);
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&tokens), 0o700);
        assert!(!report_token(&tokens, "min").unwrap());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), token);
        assert!(report_token(&tokens, "kai").unwrap());
        assert_ne!(std::fs::read_to_string(tokens.join("kai")).unwrap(), token);
    }
}

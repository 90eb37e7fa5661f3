//! The htpasswd file that guards `fleetdash serve`, the same file nginx's `auth_basic` reads.
//!
//! Only bcrypt entries (`htpasswd -B`) are accepted: the other formats htpasswd can write (MD5,
//! SHA-1, crypt) are too weak to put in front of the fleet, and refusing them at start-up with
//! the line number is better than a login that silently never works. Checking a password
//! against it, without stalling the server, is [`super::auth`]'s job.

use std::collections::HashMap;
use std::path::Path;

use crate::config::ConfigError;

/// The users and their bcrypt hashes.
pub struct Htpasswd {
    users: HashMap<String, String>,
}

impl Htpasswd {
    /// The users of the htpasswd text read from `path`; a mistake names the file and line.
    pub fn parse(path: &Path, text: &str) -> Result<Htpasswd, ConfigError> {
        let error = |line: Option<usize>, message: String| ConfigError {
            file: path.to_path_buf(),
            line,
            field: String::new(),
            message,
        };
        let mut users = HashMap::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let Some((user, hash)) = line.split_once(':') else {
                return Err(error(Some(i + 1), "expected `user:hash`".into()));
            };
            if !["$2y$", "$2b$", "$2a$"].iter().any(|p| hash.starts_with(p)) {
                return Err(error(
                    Some(i + 1),
                    format!("user {user:?} has a non-bcrypt hash; recreate it with `htpasswd -B`"),
                ));
            }
            users.insert(user.to_string(), hash.to_string());
        }
        if users.is_empty() {
            return Err(error(
                None,
                format!(
                    "no users; create one with `htpasswd -B -c {} USER`",
                    path.display()
                ),
            ));
        }
        Ok(Htpasswd { users })
    }

    /// The bcrypt hash of `user`, if the file has that user.
    pub fn hash_of(&self, user: &str) -> Option<&str> {
        self.users.get(user).map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_users_and_skips_comments() {
        let hash = bcrypt::hash("s3cret", 4).unwrap();
        let h = Htpasswd::parse(Path::new("h"), &format!("# who\n\nyoung:{hash}\n")).unwrap();
        assert_eq!(h.hash_of("young"), Some(hash.as_str()));
        assert_eq!(h.hash_of("other"), None);
    }

    #[test]
    fn refuses_weak_hashes_with_the_line() {
        let err = Htpasswd::parse(Path::new("/etc/h"), "# c\nyoung:$apr1$abc$def\n")
            .err()
            .unwrap();
        assert_eq!(
            err.to_string(),
            "/etc/h:2: user \"young\" has a non-bcrypt hash; recreate it with `htpasswd -B`"
        );
    }
}

//! The htpasswd file that guards `fleetdash serve`, the same file nginx's `auth_basic` reads.
//!
//! Only bcrypt entries (`htpasswd -B`) are accepted: the other formats htpasswd can write (MD5,
//! SHA-1, crypt) are too weak to put in front of the fleet, and refusing them at start-up with
//! the line number is better than a login that silently never works.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;

use base64::Engine;

use crate::config::ConfigError;

pub struct Htpasswd {
    users: HashMap<String, String>,
    /// Authorization header values already verified: bcrypt costs ~100 ms by design, and the
    /// page polls, so each distinct credential is checked once per process.
    verified: Mutex<Vec<String>>,
}

const VERIFIED_CACHE: usize = 16;

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
        Ok(Htpasswd {
            users,
            verified: Mutex::new(Vec::new()),
        })
    }

    /// Checks an `Authorization` header value (`Basic base64(user:pass)`).
    pub fn check(&self, header: &str) -> bool {
        if self
            .verified
            .lock()
            .expect("not poisoned")
            .iter()
            .any(|h| h == header)
        {
            return true;
        }
        let Some(encoded) = header
            .strip_prefix("Basic ")
            .or_else(|| header.strip_prefix("basic "))
        else {
            return false;
        };
        let Ok(decoded) = base64::engine::general_purpose::STANDARD.decode(encoded.trim()) else {
            return false;
        };
        let Ok(pair) = String::from_utf8(decoded) else {
            return false;
        };
        let Some((user, pass)) = pair.split_once(':') else {
            return false;
        };
        let ok = self
            .users
            .get(user)
            .is_some_and(|hash| bcrypt::verify(pass, hash).unwrap_or(false));
        if ok {
            let mut cache = self.verified.lock().expect("not poisoned");
            if cache.len() >= VERIFIED_CACHE {
                cache.remove(0);
            }
            cache.push(header.to_string());
        }
        ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(user: &str, pass: &str) -> String {
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"))
        )
    }

    #[test]
    fn accepts_the_right_password_only() {
        let hash = bcrypt::hash("s3cret", 4).unwrap();
        let h = Htpasswd::parse(Path::new("h"), &format!("young:{hash}\n")).unwrap();
        assert!(h.check(&header("young", "s3cret")));
        assert!(h.check(&header("young", "s3cret")), "cached");
        assert!(!h.check(&header("young", "wrong")));
        assert!(!h.check(&header("other", "s3cret")));
        assert!(!h.check("Bearer x"));
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

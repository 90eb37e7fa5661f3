//! The secrets a config points at, never holds: where each bearer token comes from
//! ([`TokenSource`]: an environment variable or a file), reading one, and gathering every secret
//! the config leads to (tokens, and the passwords written into URLs) is `Config::secrets`, for
//! the redaction gate of the snapshot's writers and of the log alike.

use std::path::PathBuf;

use fleetdash_model::Asc;
use toml::Spanned;

use super::files::Expect;
use super::validator::Validator;
use crate::net::ProbeFailure;

/// Where a peer's bearer token comes from. The token itself never sits in the config file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenSource {
    Env(String),
    File(PathBuf),
}

impl TokenSource {
    /// The one of `env` (`<prefix>_env`) and `file` (`<prefix>_file`) that is given; both given
    /// is an error on `<prefix>_env`, said through `v` (`Err`). `field` names a key of the
    /// table being read (`agents[2].token_env`).
    pub(super) fn choose(
        v: &mut Validator,
        field: impl Fn(&str) -> String,
        prefix: &str,
        env: &Option<Spanned<String>>,
        file: &Option<Spanned<String>>,
    ) -> Result<Option<TokenSource>, ()> {
        let (env_key, file_key) = (format!("{prefix}_env"), format!("{prefix}_file"));
        match (env, file) {
            (Some(e), Some(_)) => {
                v.error(
                    e,
                    field(&env_key),
                    format!("give {env_key} or {file_key}, not both"),
                );
                Err(())
            }
            (Some(e), None) => Ok(Some(TokenSource::Env(e.get_ref().clone()))),
            (None, Some(f)) => Ok(Some(TokenSource::File(v.read_path(
                f,
                field(&file_key),
                Expect::File,
            )))),
            (None, None) => Ok(None),
        }
    }
}

/// The token `source` names, trimmed; `None` when there is no source. A variable that is not
/// set or a file that cannot be read is a failed precondition naming it.
pub fn read_token(source: Option<&TokenSource>) -> Result<Option<String>, ProbeFailure> {
    let token = match source {
        None => return Ok(None),
        Some(TokenSource::Env(var)) => std::env::var(var).map_err(|_| {
            ProbeFailure::new(
                Asc::FAILED_PRECONDITION,
                format!("token_env {var} is not set"),
            )
        })?,
        Some(TokenSource::File(path)) => std::fs::read_to_string(path).map_err(|e| {
            ProbeFailure::new(
                Asc::FAILED_PRECONDITION,
                format!("token_file {}: {e}", path.display()),
            )
        })?,
    };
    Ok(Some(token.trim().to_string()))
}

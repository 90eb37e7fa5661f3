//! `[[agents]]`: the A2A peers, how the heartbeat speaks to each, and where its audit log and
//! token are. Each entry is checked here: a unique name, an http(s) endpoint, a known dialect,
//! at most one token source.

use std::collections::HashSet;
use std::path::PathBuf;

use serde::Deserialize;
use toml::Spanned;

use super::validator::Validator;

/// How the heartbeat speaks to a peer (spec §7.2, reference a2a-dialects.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// v1.0: `SendMessage`, `A2A-Version: 1.0`, parts `{text}`.
    V1,
    /// v0.3: `message/send`, parts `{kind: text}`.
    V03,
    /// The Pulse plane's v0.3 variant: `message/send` with the text under `content`.
    V03Content,
    /// Try v1 then v0.3, and remember what worked.
    Auto,
}

impl Dialect {
    pub const NAMES: &'static str = "v1, v0.3, v0.3-content, auto";

    pub fn parse(s: &str) -> Option<Dialect> {
        Some(match s {
            "v1" | "v1.0" => Dialect::V1,
            "v0.3" => Dialect::V03,
            "v0.3-content" => Dialect::V03Content,
            "auto" => Dialect::Auto,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Dialect::V1 => "v1",
            Dialect::V03 => "v0.3",
            Dialect::V03Content => "v0.3-content",
            Dialect::Auto => "auto",
        }
    }
}

/// Where a peer's bearer token comes from. The token itself never sits in the config file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenSource {
    Env(String),
    File(PathBuf),
}

#[derive(Debug, Clone)]
pub struct AgentConfig {
    pub name: String,
    pub endpoint: url::Url,
    pub dialect: Dialect,
    pub lane: Option<String>,
    pub model: Option<String>,
    pub plane: Option<String>,
    pub audit_log: Option<PathBuf>,
    pub token: Option<TokenSource>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAgent {
    name: Spanned<String>,
    endpoint: Spanned<String>,
    dialect: Option<Spanned<String>>,
    lane: Option<String>,
    model: Option<String>,
    plane: Option<String>,
    audit_log: Option<Spanned<String>>,
    token_env: Option<Spanned<String>>,
    token_file: Option<Spanned<String>>,
}

pub(super) fn validate(v: &mut Validator, raw: &[RawAgent]) -> Vec<AgentConfig> {
    let mut names = HashSet::new();
    let mut agents = Vec::new();
    for (i, a) in raw.iter().enumerate() {
        let field = |f: &str| format!("agents[{i}].{f}");
        let name = a.name.get_ref().trim().to_string();
        if name.is_empty() {
            v.error(&a.name, field("name"), "must not be empty");
        } else if !names.insert(name.clone()) {
            v.error(
                &a.name,
                field("name"),
                format!("duplicate agent name {name:?}"),
            );
        }
        let endpoint = match url::Url::parse(a.endpoint.get_ref()) {
            Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => Some(u),
            Ok(_) => {
                v.error(
                    &a.endpoint,
                    field("endpoint"),
                    "expected an http:// or https:// URL with a host",
                );
                None
            }
            Err(e) => {
                v.error(
                    &a.endpoint,
                    field("endpoint"),
                    format!("not a URL ({e}); expected e.g. \"http://127.0.0.1:18301\""),
                );
                None
            }
        };
        let dialect = match &a.dialect {
            None => Some(Dialect::Auto),
            Some(d) => Dialect::parse(d.get_ref()).or_else(|| {
                v.error(
                    d,
                    field("dialect"),
                    format!(
                        "unknown dialect {:?}; expected one of {}",
                        d.get_ref(),
                        Dialect::NAMES
                    ),
                );
                None
            }),
        };
        let token = match (&a.token_env, &a.token_file) {
            (Some(e), Some(_)) => {
                v.error(
                    e,
                    field("token_env"),
                    "give token_env or token_file, not both",
                );
                None
            }
            (Some(e), None) => Some(TokenSource::Env(e.get_ref().clone())),
            (None, Some(f)) => Some(TokenSource::File(v.path(f.get_ref()))),
            (None, None) => None,
        };
        if let (Some(endpoint), Some(dialect)) = (endpoint, dialect) {
            agents.push(AgentConfig {
                name,
                endpoint,
                dialect,
                lane: a.lane.clone(),
                model: a.model.clone(),
                plane: a.plane.clone(),
                audit_log: a.audit_log.as_ref().map(|p| v.path(p.get_ref())),
                token,
            });
        }
    }
    agents
}

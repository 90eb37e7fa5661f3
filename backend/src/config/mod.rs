//! The registry: one human-written TOML file naming every agent, host, board and backup the
//! collector watches, where it writes, and how often.
//!
//! Loading is two steps so that `fleetdash check` can report *every* mistake at once: serde
//! parses the shape (it stops at the first syntax or type error), then [`validate`] walks the
//! parsed file and collects each semantic error with its line and field.

mod rules;

pub use rules::{Rule, Rules};

use std::collections::HashSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

/// One mistake in a config or rules file, located as precisely as the parser allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub file: PathBuf,
    pub line: Option<usize>,
    pub field: String,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if !self.field.is_empty() {
            write!(f, ": {}", self.field)?;
        }
        write!(f, ": {}", self.message)
    }
}

/// All the mistakes found in one load; never empty.
#[derive(Debug)]
pub struct ConfigErrors(pub Vec<ConfigError>);

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigErrors {}

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

/// Limits of one probe: the fleet is small, but a hostile or hung peer must cost little.
#[derive(Debug, Clone)]
pub struct ProbeLimits {
    pub timeout: Duration,
    pub concurrency: usize,
    pub max_response_bytes: usize,
    /// At most this many bytes are read from the end of an audit log per agent.
    pub audit_tail_max_bytes: u64,
}

#[derive(Debug, Clone)]
pub struct Cadences {
    pub agents: Duration,
    /// Reading the kanban boards (spec §5.1: 5 min).
    pub board: Duration,
    /// Polling live A2A tasks for the stuck rule.
    pub live_tasks: Duration,
    /// Rendering the vault projections (spec §3.4: every 30 min).
    pub projections: Duration,
}

/// One Hermes kanban board: where its database is, and where (if anywhere) it is projected.
#[derive(Debug, Clone)]
pub struct BoardConfig {
    /// The board's slug (`default` for `<root>/kanban.db`).
    pub name: String,
    /// The vault plane it belongs to (`Docs`, `Pulse`).
    pub plane: Option<String>,
    pub db: PathBuf,
    /// The projection file, already joined to the vault; `None`: the board is not projected.
    pub projection: Option<PathBuf>,
    /// The projection as declared, relative to the vault (for messages).
    pub projection_rel: Option<String>,
    /// A retired generator writes nothing and says so.
    pub retired: bool,
    pub include_archived: bool,
    /// The Hermes config holding `kanban.dispatch_profiles`, to flag cards this host can never
    /// dispatch; `None`: the host boundary is not checked.
    pub dispatch_config: Option<PathBuf>,
}

/// A configured host, board or backup source: accepted now, collected by later collectors.
#[derive(Debug, Clone)]
pub struct NamedEntry {
    pub name: String,
}

/// The validated configuration, with every path resolved against the config file's folder.
#[derive(Debug, Clone)]
pub struct Config {
    pub path: PathBuf,
    pub output_dir: PathBuf,
    pub state_dir: PathBuf,
    pub rules_path: PathBuf,
    pub cadence: Cadences,
    pub probe: ProbeLimits,
    pub agents: Vec<AgentConfig>,
    pub hosts: Vec<NamedEntry>,
    pub boards: Vec<BoardConfig>,
    /// The Obsidian vault the projections are written into.
    pub vault: Option<PathBuf>,
    pub backups: Option<NamedEntry>,
    pub serve: ServeConfig,
}

/// `[serve]`: how `fleetdash serve` runs when nginx is not in front.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub listen: Option<std::net::SocketAddr>,
    /// The htpasswd file (bcrypt entries, `htpasswd -B`) that guards every path.
    pub htpasswd: Option<PathBuf>,
    /// The built page (trunk's `dist/`); without it a minimal built-in page is served.
    pub dist_dir: Option<PathBuf>,
}

impl Config {
    /// Reads and validates the config file and its rules file.
    pub fn load(path: &Path) -> Result<(Config, Rules), ConfigErrors> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| one_error(path, None, "", format!("cannot read the config file: {e}")))?;
        let config = Config::parse(path, &text)?;
        let rules = Rules::load(&config.rules_path)?;
        Ok((config, rules))
    }

    /// Parses and validates config text that was read from `path`.
    pub fn parse(path: &Path, text: &str) -> Result<Config, ConfigErrors> {
        let raw: RawConfig = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|s| line_of(text, s.start));
            one_error(path, line, "", e.message().trim().to_string())
        })?;
        validate(path, text, raw)
    }
}

fn one_error(file: &Path, line: Option<usize>, field: &str, message: String) -> ConfigErrors {
    ConfigErrors(vec![ConfigError {
        file: file.to_path_buf(),
        line,
        field: field.to_string(),
        message,
    }])
}

/// 1-based line of a byte offset.
pub(crate) fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    output_dir: Spanned<String>,
    state_dir: Spanned<String>,
    rules: Spanned<String>,
    #[serde(default)]
    cadence: RawCadence,
    #[serde(default)]
    probe: RawProbe,
    #[serde(default)]
    agents: Vec<RawAgent>,
    #[serde(default)]
    hosts: Vec<RawNamed>,
    #[serde(default)]
    boards: Vec<RawBoard>,
    vault: Option<RawVault>,
    backups: Option<RawNamed>,
    #[serde(default)]
    serve: RawServe,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawServe {
    listen: Option<Spanned<String>>,
    htpasswd: Option<String>,
    dist_dir: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawCadence {
    agents: Option<Spanned<String>>,
    board: Option<Spanned<String>>,
    live_tasks: Option<Spanned<String>>,
    projections: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVault {
    path: Spanned<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBoard {
    name: Spanned<String>,
    plane: Option<String>,
    db: Spanned<String>,
    projection: Option<Spanned<String>>,
    #[serde(default)]
    retired: bool,
    #[serde(default)]
    include_archived: bool,
    dispatch_config: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawProbe {
    timeout: Option<Spanned<String>>,
    concurrency: Option<Spanned<i64>>,
    max_response_bytes: Option<Spanned<i64>>,
    audit_tail_max_bytes: Option<Spanned<i64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAgent {
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

/// Hosts, boards and backups: their collectors validate the rest of their keys.
#[derive(Deserialize)]
struct RawNamed {
    name: Spanned<String>,
    #[serde(flatten)]
    _rest: toml::Table,
}

/// Defaults of the registry, named so that no number hides in the code below.
mod defaults {
    use std::time::Duration;
    /// Spec §5.1: heartbeat and liveness every 2 min.
    pub const AGENTS_CADENCE: Duration = Duration::from_secs(120);
    /// Spec §5.1: board projection every 5 min.
    pub const BOARD_CADENCE: Duration = Duration::from_secs(300);
    /// Spec §3.5: the A2A watchdog sweeps every 60 s (`_WATCHDOG_INTERVAL`).
    pub const LIVE_TASKS_CADENCE: Duration = Duration::from_secs(60);
    /// Spec §3.4: the vault is re-projected every 30 min.
    pub const PROJECTIONS_CADENCE: Duration = Duration::from_secs(30 * 60);
    pub const PROBE_TIMEOUT: Duration = Duration::from_secs(5);
    pub const CONCURRENCY: usize = 32;
    pub const MAX_RESPONSE_BYTES: usize = 256 * 1024;
    /// Rotation happens at 2 MiB, so two files' worth is ample.
    pub const AUDIT_TAIL_MAX_BYTES: u64 = 4 * 1024 * 1024;
}

struct Validator<'a> {
    path: &'a Path,
    text: &'a str,
    base: PathBuf,
    errors: Vec<ConfigError>,
}

impl Validator<'_> {
    fn error<T>(
        &mut self,
        spanned: &Spanned<T>,
        field: impl Into<String>,
        message: impl Into<String>,
    ) {
        let line = Some(line_of(self.text, spanned.span().start));
        self.errors.push(ConfigError {
            file: self.path.to_path_buf(),
            line,
            field: field.into(),
            message: message.into(),
        });
    }

    fn path(&self, raw: &str) -> PathBuf {
        resolve_path(&self.base, raw)
    }

    fn duration(
        &mut self,
        raw: &Option<Spanned<String>>,
        field: &str,
        default: Duration,
    ) -> Duration {
        let Some(s) = raw else { return default };
        match humantime::parse_duration(s.get_ref()) {
            Ok(d) if !d.is_zero() => d,
            Ok(_) => {
                self.error(s, field, "must be longer than zero");
                default
            }
            Err(e) => {
                self.error(
                    s,
                    field,
                    format!("{e}; expected a duration such as \"2m\" or \"30s\""),
                );
                default
            }
        }
    }

    fn positive(&mut self, raw: &Option<Spanned<i64>>, field: &str, default: usize) -> usize {
        let Some(n) = raw else { return default };
        match usize::try_from(*n.get_ref()) {
            Ok(v) if v > 0 => v,
            _ => {
                self.error(n, field, "expected a whole number greater than zero");
                default
            }
        }
    }
}

/// A board slug, as Hermes accepts it.
fn is_slug(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && s.len() <= 64
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

fn validate_boards(v: &mut Validator, raw: &[RawBoard], vault: Option<&Path>) -> Vec<BoardConfig> {
    let mut seen = HashSet::new();
    let mut targets = HashSet::new();
    let mut out = Vec::new();
    for (i, b) in raw.iter().enumerate() {
        let field = |f: &str| format!("boards[{i}].{f}");
        let name = b.name.get_ref().clone();
        if !is_slug(&name) {
            v.error(&b.name, field("name"), "expected a board slug: a-z, 0-9, '-' and '_', up to 64, starting with a letter or digit");
        } else if !seen.insert(name.clone()) {
            v.error(&b.name, field("name"), format!("duplicate board {name:?}"));
        }
        let mut projection = None;
        if let Some(target) = &b.projection {
            let rel = target.get_ref();
            let path = Path::new(rel);
            // Fail closed (spec §3.4): only a declared `.kanban` file inside the vault can ever
            // be written; a register such as fleet-board.md can never be a target.
            if path.is_absolute()
                || path
                    .components()
                    .any(|c| !matches!(c, std::path::Component::Normal(_)))
            {
                v.error(target, field("projection"), "expected a path relative to [vault] path, without `..`, e.g. \"Docs/Kanban/research.kanban\"");
            } else if path.extension().is_none_or(|e| e != "kanban") {
                v.error(target, field("projection"), "a projection target must be a .kanban file (registers such as fleet-board.md are never written)");
            } else if !targets.insert(rel.clone()) {
                v.error(
                    target,
                    field("projection"),
                    format!("{rel:?} is already the target of another board"),
                );
            } else {
                match vault {
                    Some(vault) => projection = Some((vault.join(path), rel.clone())),
                    None => v.error(
                        target,
                        field("projection"),
                        "a projection needs [vault] path",
                    ),
                }
            }
        }
        out.push(BoardConfig {
            name,
            plane: b.plane.clone(),
            db: v.path(b.db.get_ref()),
            projection_rel: projection.as_ref().map(|(_, rel)| rel.clone()),
            projection: projection.map(|(abs, _)| abs),
            retired: b.retired,
            include_archived: b.include_archived,
            dispatch_config: b.dispatch_config.as_deref().map(|p| v.path(p)),
        });
    }
    out
}

/// Expands a leading `~/` and resolves relative paths against the config file's folder.
pub fn resolve_path(base: &Path, raw: &str) -> PathBuf {
    if let Some(rest) = raw.strip_prefix("~/")
        && let Some(home) = std::env::var_os("HOME")
    {
        return PathBuf::from(home).join(rest);
    }
    base.join(raw)
}

fn validate(path: &Path, text: &str, raw: RawConfig) -> Result<Config, ConfigErrors> {
    let base = path
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let mut v = Validator {
        path,
        text,
        base,
        errors: Vec::new(),
    };

    let output_dir = v.path(raw.output_dir.get_ref());
    let state_dir = v.path(raw.state_dir.get_ref());
    let rules_path = v.path(raw.rules.get_ref());

    let cadence = Cadences {
        agents: v.duration(
            &raw.cadence.agents,
            "cadence.agents",
            defaults::AGENTS_CADENCE,
        ),
        board: v.duration(&raw.cadence.board, "cadence.board", defaults::BOARD_CADENCE),
        live_tasks: v.duration(
            &raw.cadence.live_tasks,
            "cadence.live_tasks",
            defaults::LIVE_TASKS_CADENCE,
        ),
        projections: v.duration(
            &raw.cadence.projections,
            "cadence.projections",
            defaults::PROJECTIONS_CADENCE,
        ),
    };
    let probe = ProbeLimits {
        timeout: v.duration(&raw.probe.timeout, "probe.timeout", defaults::PROBE_TIMEOUT),
        concurrency: v.positive(
            &raw.probe.concurrency,
            "probe.concurrency",
            defaults::CONCURRENCY,
        ),
        max_response_bytes: v.positive(
            &raw.probe.max_response_bytes,
            "probe.max_response_bytes",
            defaults::MAX_RESPONSE_BYTES,
        ),
        audit_tail_max_bytes: v.positive(
            &raw.probe.audit_tail_max_bytes,
            "probe.audit_tail_max_bytes",
            defaults::AUDIT_TAIL_MAX_BYTES as usize,
        ) as u64,
    };

    let mut names = HashSet::new();
    let mut agents = Vec::new();
    for (i, a) in raw.agents.iter().enumerate() {
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

    let named = |v: &mut Validator, list: &[RawNamed], what: &str| -> Vec<NamedEntry> {
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        for (i, e) in list.iter().enumerate() {
            let name = e.name.get_ref().trim().to_string();
            if name.is_empty() || !seen.insert(name.clone()) {
                v.error(
                    &e.name,
                    format!("{what}[{i}].name"),
                    "must be non-empty and unique",
                );
            }
            out.push(NamedEntry { name });
        }
        out
    };
    let hosts = named(&mut v, &raw.hosts, "hosts");
    let vault = raw.vault.as_ref().map(|vault| v.path(vault.path.get_ref()));
    let boards = validate_boards(&mut v, &raw.boards, vault.as_deref());
    let backups = raw.backups.map(|b| NamedEntry {
        name: b.name.into_inner(),
    });

    let listen = raw.serve.listen.as_ref().and_then(|l| {
        l.get_ref().parse().ok().or_else(|| {
            v.error(
                l,
                "serve.listen",
                "expected an address such as \"127.0.0.1:8080\"",
            );
            None
        })
    });
    let serve = ServeConfig {
        listen,
        htpasswd: raw.serve.htpasswd.as_deref().map(|p| v.path(p)),
        dist_dir: raw.serve.dist_dir.as_deref().map(|p| v.path(p)),
    };

    if !v.errors.is_empty() {
        return Err(ConfigErrors(v.errors));
    }
    Ok(Config {
        path: path.to_path_buf(),
        output_dir,
        state_dir,
        rules_path,
        cadence,
        probe,
        agents,
        hosts,
        boards,
        vault,
        backups,
        serve,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
output_dir = "out"
state_dir = "state"
rules = "rules.yaml"

[cadence]
agents = "90s"

[[agents]]
name = "min"
endpoint = "http://127.0.0.1:18301"
dialect = "v1"
lane = "hub"
audit_log = "~/.hermes/a2a_audit.jsonl"
"#;

    #[test]
    fn a_good_config_resolves_paths_and_defaults() {
        let c = Config::parse(Path::new("/etc/fleetdash/fleetdash.toml"), GOOD).unwrap();
        assert_eq!(c.output_dir, Path::new("/etc/fleetdash/out"));
        assert_eq!(c.rules_path, Path::new("/etc/fleetdash/rules.yaml"));
        assert_eq!(c.cadence.agents, Duration::from_secs(90));
        assert_eq!(c.probe.timeout, defaults::PROBE_TIMEOUT);
        assert_eq!(c.agents[0].dialect, Dialect::V1);
        assert!(!c.agents[0].audit_log.as_ref().unwrap().starts_with("~"));
    }

    #[test]
    fn every_semantic_error_is_reported_with_its_line_and_field() {
        let text = r#"output_dir = "out"
state_dir = "state"
rules = "rules.yaml"
[probe]
concurrency = 0
[[agents]]
name = "a"
endpoint = "not a url"
[[agents]]
name = "a"
endpoint = "http://127.0.0.1:1"
dialect = "v2"
"#;
        let errs = Config::parse(Path::new("f.toml"), text).unwrap_err().0;
        let rendered: Vec<String> = errs.iter().map(ToString::to_string).collect();
        assert_eq!(errs.len(), 4, "{rendered:#?}");
        assert!(rendered.contains(
            &"f.toml:5: probe.concurrency: expected a whole number greater than zero".to_string()
        ));
        assert!(
            rendered
                .iter()
                .any(|r| r.starts_with("f.toml:8: agents[0].endpoint: not a URL"))
        );
        assert!(
            rendered.contains(&"f.toml:10: agents[1].name: duplicate agent name \"a\"".to_string())
        );
        assert!(rendered.iter().any(|r| {
            r.starts_with("f.toml:12: agents[1].dialect: unknown dialect \"v2\"; expected one of")
        }));
    }

    #[test]
    fn boards_resolve_their_projection_inside_the_vault() {
        let text = "output_dir = \"o\"\nstate_dir = \"s\"\nrules = \"r\"\n[vault]\npath = \"/v\"\n\
                    [[boards]]\nname = \"research\"\nplane = \"Docs\"\ndb = \"k/research.db\"\n\
                    projection = \"Docs/Kanban/research.kanban\"\n";
        let c = Config::parse(Path::new("/etc/f.toml"), text).unwrap();
        let b = &c.boards[0];
        assert_eq!(b.db, Path::new("/etc/k/research.db"));
        assert_eq!(
            b.projection.as_deref(),
            Some(Path::new("/v/Docs/Kanban/research.kanban"))
        );
        assert!(!b.retired && b.dispatch_config.is_none());
        assert_eq!(c.cadence.projections, defaults::PROJECTIONS_CADENCE);
    }

    #[test]
    fn a_projection_can_only_target_a_kanban_file_inside_the_vault() {
        let board = |target: &str| {
            format!(
                "output_dir = \"o\"\nstate_dir = \"s\"\nrules = \"r\"\n[vault]\npath = \"/v\"\n\
                 [[boards]]\nname = \"b\"\ndb = \"x.db\"\nprojection = \"{target}\"\n"
            )
        };
        for (target, expected) in [
            ("Docs/Kanban/fleet-board.md", "must be a .kanban file"),
            ("../outside.kanban", "without `..`"),
            ("/abs/b.kanban", "relative to [vault] path"),
        ] {
            let err = Config::parse(Path::new("f.toml"), &board(target))
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("boards[0].projection") && err.contains(expected),
                "{target}: {err}"
            );
        }
        let no_vault = board("Docs/Kanban/b.kanban").replace("[vault]\npath = \"/v\"\n", "");
        let err = Config::parse(Path::new("f.toml"), &no_vault)
            .unwrap_err()
            .to_string();
        assert!(err.contains("a projection needs [vault] path"), "{err}");
    }

    #[test]
    fn a_syntax_error_names_the_file_and_line() {
        let err = Config::parse(
            Path::new("f.toml"),
            "output_dir = \"out\"\nstate_dir = \"s\"\nrules = [\n",
        )
        .unwrap_err();
        assert!(err.to_string().starts_with("f.toml:"), "{err}");
    }

    #[test]
    fn an_unknown_key_is_an_error() {
        let err = Config::parse(
            Path::new("f.toml"),
            "output_dir = \"o\"\nstate_dir = \"s\"\nrules = \"r\"\noutptu = 1\n",
        )
        .unwrap_err();
        assert!(err.to_string().contains("outptu"), "{err}");
    }
}

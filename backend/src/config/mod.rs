//! The registry: one human-written TOML file naming every agent, host, board and backup the
//! collector watches, where it writes, and how often.
//!
//! Loading is two steps so that `fleetdash check` can report *every* mistake at once: serde
//! parses the shape (it stops at the first syntax or type error), then [`validate`] walks the
//! parsed file and collects each semantic error with its line and field.

mod rules;

#[cfg(test)]
pub(crate) use rules::fleet_rules;
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
    /// Deadline of each command a host probe runs (ssh, git, systemctl).
    pub command_timeout: Duration,
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
    /// Host probes: RAM, disk, services, crons, vault parity (spec §5.1: 5 min).
    pub systems: Duration,
    /// Tunnel probes (spec §5.1: 2 min).
    pub tunnels: Duration,
    /// Backup freshness.
    pub backups: Duration,
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

/// Where a host's facts come from (spec §2.4: collectors run from the hub and are read-only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostSource {
    /// This machine: procfs, statvfs, `systemctl is-active`, local files and git.
    Local,
    /// A Prometheus node_exporter's `/metrics`, scraped over HTTP.
    NodeExporter { url: url::Url },
    /// A fixed set of read-only commands over SSH (BatchMode, strict host keys, timeout).
    Ssh(SshTarget),
}

impl HostSource {
    pub fn kind(&self) -> &'static str {
        match self {
            HostSource::Local => "local",
            HostSource::NodeExporter { .. } => "node_exporter",
            HostSource::Ssh(_) => "ssh",
        }
    }
}

/// How to reach a host over SSH. Passwords are never asked for: BatchMode is always on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshTarget {
    /// `user@host` or `host`.
    pub destination: String,
    pub port: Option<u16>,
    pub identity_file: Option<PathBuf>,
    /// A known_hosts file of our own; host keys are always checked strictly.
    pub known_hosts: Option<PathBuf>,
}

/// One loopback forward to probe by TCP connect (spec §7.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TunnelConfig {
    pub name: String,
    /// `host:port`, e.g. `127.0.0.1:18301`.
    pub address: String,
}

/// What a cron job leaves behind when it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CronEvidence {
    /// The record `fleetdash cron-run` writes (or, on a node_exporter host, the metrics it
    /// writes for the textfile collector).
    Record,
    /// A file the job touches on success; its modification time is the last success.
    Stamp(String),
}

/// A job that must check in: the Healthchecks model's period and grace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CronConfig {
    pub name: String,
    pub period: Duration,
    pub grace: Duration,
    pub evidence: CronEvidence,
}

/// The vault's git checkout on a host, compared with its remote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VaultParityConfig {
    /// On the host itself (resolved locally for a local host; as given for an SSH host).
    pub path: String,
    pub remote: String,
    /// The branch to compare; the checkout's current branch when absent.
    pub branch: Option<String>,
}

/// One host of the Systems panel and everything checked on it.
#[derive(Debug, Clone)]
pub struct HostConfig {
    pub name: String,
    pub source: HostSource,
    /// The filesystem whose free space is reported (a mount point).
    pub disk_path: String,
    /// systemd units; `.service` is implied when no suffix is given.
    pub services: Vec<String>,
    pub tunnels: Vec<TunnelConfig>,
    pub crons: Vec<CronConfig>,
    /// Where `fleetdash cron-run` keeps its records on that host.
    pub cron_dir: Option<String>,
    pub vault: Option<VaultParityConfig>,
}

/// Where the latest backup's time comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BackupSource {
    /// The newest file's modification time in this folder.
    Dir(PathBuf),
    /// A command whose output holds the latest backup's timestamp (e.g. an rclone listing);
    /// the newest timestamp found in its output counts.
    Command(Vec<String>),
}

#[derive(Debug, Clone)]
pub struct BackupsConfig {
    pub name: String,
    pub source: BackupSource,
    pub timeout: Duration,
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
    pub hosts: Vec<HostConfig>,
    pub boards: Vec<BoardConfig>,
    /// The Obsidian vault the projections are written into.
    pub vault: Option<PathBuf>,
    pub backups: Option<BackupsConfig>,
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
        config.check_cadences(&text, &rules)?;
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

impl Config {
    /// A section collected less often than the staleness limit would be marked stale between
    /// its own passes: a false alarm every time. Say so at load time instead.
    fn check_cadences(&self, text: &str, rules: &Rules) -> Result<(), ConfigErrors> {
        let limit = Duration::from_secs(rules.snapshot_stale_after.seconds);
        let mut errors = Vec::new();
        let c = &self.cadence;
        let used = [
            ("agents", c.agents, !self.agents.is_empty()),
            ("live_tasks", c.live_tasks, !self.agents.is_empty()),
            ("board", c.board, !self.boards.is_empty()),
            ("systems", c.systems, !self.hosts.is_empty()),
            (
                "tunnels",
                c.tunnels,
                self.hosts.iter().any(|h| !h.tunnels.is_empty()),
            ),
            ("backups", c.backups, self.backups.is_some()),
        ];
        for (name, cadence, in_use) in used {
            if in_use && cadence >= limit {
                let line = text
                    .lines()
                    .position(|l| {
                        l.trim_start().starts_with(&format!("{name} "))
                            || l.trim_start().starts_with(&format!("{name}="))
                    })
                    .map(|i| i + 1);
                errors.push(ConfigError {
                    file: self.path.clone(),
                    line,
                    field: format!("cadence.{name}"),
                    message: format!(
                        "{} is not shorter than the staleness limit ({} s, {} snapshot.stale_after_seconds): the section would be reported stale between passes",
                        humantime::format_duration(cadence),
                        rules.snapshot_stale_after.seconds,
                        rules.path.display()
                    ),
                });
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(ConfigErrors(errors))
        }
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
    hosts: Vec<RawHost>,
    #[serde(default)]
    boards: Vec<RawBoard>,
    vault: Option<RawVault>,
    backups: Option<RawBackups>,
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
    systems: Option<Spanned<String>>,
    tunnels: Option<Spanned<String>>,
    backups: Option<Spanned<String>>,
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
    command_timeout: Option<Spanned<String>>,
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

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHost {
    name: Spanned<String>,
    source: Option<Spanned<String>>,
    url: Option<Spanned<String>>,
    ssh: Option<Spanned<RawSsh>>,
    disk_path: Option<String>,
    #[serde(default)]
    services: Vec<Spanned<String>>,
    #[serde(default)]
    tunnels: Vec<RawTunnel>,
    #[serde(default)]
    crons: Vec<RawCron>,
    cron_dir: Option<String>,
    vault: Option<RawHostVault>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSsh {
    destination: Spanned<String>,
    port: Option<u16>,
    identity_file: Option<String>,
    known_hosts: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTunnel {
    name: Spanned<String>,
    address: Spanned<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCron {
    name: Spanned<String>,
    period: Spanned<String>,
    grace: Option<Spanned<String>>,
    stamp: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHostVault {
    path: Spanned<String>,
    remote: Option<String>,
    branch: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBackups {
    name: Spanned<String>,
    dir: Option<String>,
    command: Option<Spanned<Vec<String>>>,
    timeout: Option<Spanned<String>>,
}

/// Defaults of the registry, named so that no number hides in the code below.
pub mod defaults {
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
    /// Spec §5.1: system host probes every 5 min.
    pub const SYSTEMS_CADENCE: Duration = Duration::from_secs(300);
    /// Spec §5.1: tunnel probes every 2 min.
    pub const TUNNELS_CADENCE: Duration = Duration::from_secs(120);
    /// Backups change daily; every 5 min keeps the section inside the staleness limit.
    pub const BACKUPS_CADENCE: Duration = Duration::from_secs(300);
    /// ssh, git ls-remote and systemctl each get this long.
    pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(20);
    /// A backup listing (rclone over the network) may take a while.
    pub const BACKUP_COMMAND_TIMEOUT: Duration = Duration::from_secs(60);
    /// Healthchecks' default grace when a cron gives none.
    pub const CRON_GRACE: Duration = Duration::from_secs(60 * 60);
    /// The filesystem reported when a host names none.
    pub const DISK_PATH: &str = "/";
    /// The git remote compared with when a vault names none.
    pub const VAULT_REMOTE: &str = "origin";
    /// Where `cron-run` keeps its records under the state directory.
    pub const CRON_RECORDS_DIR: &str = "crons";
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

/// A name that is safe as a file name and as a command argument: letters, digits, `.`, `_`,
/// `-`, `@`, `:`, not starting with `.` or `-`.
pub fn is_plain_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 128
        && !s.starts_with(['.', '-'])
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '@' | ':'))
}

fn validate_hosts(v: &mut Validator, raw: &[RawHost], state_dir: &Path) -> Vec<HostConfig> {
    /// An error on `key`, a field the raw config keeps without its position: its line is the
    /// first `key =` at or after byte `from` (where its table starts) and before the next
    /// table header, else `from`'s own line.
    fn error_at_key(v: &mut Validator, from: usize, key: &str, field: String, message: String) {
        let rest = &v.text[from.min(v.text.len())..];
        let mut offset = from;
        let mut found = None;
        for (n, line) in rest.split_inclusive('\n').enumerate() {
            if n > 0 && line.trim_start().starts_with('[') {
                break;
            }
            let at_key = line.match_indices(key).any(|(i, _)| {
                let before = line[..i].chars().next_back();
                before.is_none_or(|c| c.is_whitespace() || c == '{' || c == ',')
                    && line[i + key.len()..].trim_start().starts_with('=')
            });
            if at_key {
                found = Some(offset);
                break;
            }
            offset += line.len();
        }
        let line = line_of(v.text, found.unwrap_or(from));
        v.errors.push(ConfigError {
            file: v.path.to_path_buf(),
            line: Some(line),
            field,
            message,
        });
    }

    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for (i, h) in raw.iter().enumerate() {
        let field = |f: &str| format!("hosts[{i}].{f}");
        let name = h.name.get_ref().trim().to_string();
        if name.is_empty() {
            v.error(&h.name, field("name"), "must not be empty");
        } else if !seen.insert(name.clone()) {
            v.error(&h.name, field("name"), format!("duplicate host {name:?}"));
        }
        let kind = h
            .source
            .as_ref()
            .map(|s| s.get_ref().as_str())
            .unwrap_or("local");
        let source = match kind {
            "local" => Some(HostSource::Local),
            "node_exporter" => {
                match &h.url {
                    None => {
                        v.error(&h.name, field("url"), "a node_exporter host needs url, e.g. \"http://127.0.0.1:9100/metrics\"");
                        None
                    }
                    Some(u) => match url::Url::parse(u.get_ref()) {
                        Ok(url)
                            if matches!(url.scheme(), "http" | "https") && url.host().is_some() =>
                        {
                            Some(HostSource::NodeExporter { url })
                        }
                        _ => {
                            v.error(u, field("url"), "expected an http:// or https:// URL, e.g. \"http://127.0.0.1:9100/metrics\"");
                            None
                        }
                    },
                }
            }
            "ssh" => match &h.ssh {
                None => {
                    v.error(
                        &h.name,
                        field("ssh"),
                        "an ssh host needs ssh = { destination = \"user@host\" }",
                    );
                    None
                }
                Some(ssh) => {
                    let raw_ssh = ssh.get_ref();
                    let dest = raw_ssh.destination.get_ref();
                    let mut valid = true;
                    // Never an option to ssh (a leading '-'), never anything a shell or ssh's
                    // own parsing would read: only what user@host, [v6]:port and %zone need.
                    let plain = |c: char| c.is_ascii_alphanumeric() || "._@:%[]-".contains(c);
                    if dest.is_empty() || dest.starts_with('-') || !dest.chars().all(plain) {
                        v.error(
                            &raw_ssh.destination,
                            field("ssh.destination"),
                            "expected user@host or host: letters, digits and . _ @ : % [ ] - \
                             only, not starting with '-'",
                        );
                        valid = false;
                    }
                    if raw_ssh.port == Some(0) {
                        error_at_key(
                            v,
                            ssh.span().start,
                            "port",
                            field("ssh.port"),
                            "expected a port from 1 to 65535".into(),
                        );
                        valid = false;
                    }
                    let identity_file = raw_ssh.identity_file.as_deref().map(|p| v.path(p));
                    let known_hosts = raw_ssh.known_hosts.as_deref().map(|p| v.path(p));
                    for (key, path) in [
                        ("identity_file", &identity_file),
                        ("known_hosts", &known_hosts),
                    ] {
                        let Some(path) = path else { continue };
                        let shown = path.to_string_lossy();
                        let why = if shown.contains(char::is_whitespace) {
                            "contains whitespace, and ssh splits its options' values on \
                             whitespace (-o UserKnownHostsFile=/a b names two files, /a and b)"
                        } else if shown.contains('%') || shown.contains("${") {
                            "contains '%' or '${', which ssh expands (%h is the host name, \
                             ${VAR} an environment variable): it would read another file"
                        } else {
                            continue;
                        };
                        error_at_key(
                            v,
                            ssh.span().start,
                            key,
                            field(&format!("ssh.{key}")),
                            format!("{shown:?} {why}; use a path without them"),
                        );
                        valid = false;
                    }
                    valid.then(|| {
                        HostSource::Ssh(SshTarget {
                            destination: dest.clone(),
                            port: raw_ssh.port,
                            identity_file,
                            known_hosts,
                        })
                    })
                }
            },
            other => {
                if let Some(s) = &h.source {
                    v.error(
                        s,
                        field("source"),
                        format!("unknown source {other:?}; expected local, node_exporter or ssh"),
                    );
                }
                None
            }
        };
        if kind != "node_exporter"
            && let Some(u) = &h.url
        {
            v.error(u, field("url"), "only a node_exporter host has a url");
        }
        if kind != "ssh"
            && let Some(s) = &h.ssh
        {
            v.error(s, field("ssh"), "only an ssh host has ssh settings");
        }
        let local = kind == "local";
        // Paths on a remote host are that host's; only a local one resolves here.
        let host_path = |v: &Validator, p: &str| -> String {
            if local {
                v.path(p).to_string_lossy().into_owned()
            } else {
                p.to_string()
            }
        };
        let mut services = Vec::new();
        // By systemd's unit name: "nginx" and "nginx.service" are one unit.
        let mut units: Vec<(String, &str)> = Vec::new();
        for (j, unit) in h.services.iter().enumerate() {
            let configured = unit.get_ref();
            let systemd_name = if configured.contains('.') {
                configured.clone()
            } else {
                format!("{configured}.service")
            };
            if let Some((_, first)) = units.iter().find(|(u, _)| *u == systemd_name) {
                let message = if first == configured {
                    format!("duplicate service {configured:?} on this host")
                } else {
                    format!("{configured:?} is the unit {first:?} already names ({systemd_name})")
                };
                v.error(unit, field(&format!("services[{j}]")), message);
            } else if is_plain_name(configured) {
                units.push((systemd_name, configured));
                services.push(configured.clone());
            } else {
                v.error(
                    unit,
                    field(&format!("services[{j}]")),
                    "expected a systemd unit name such as \"nginx\" or \"autossh-lab.service\"",
                );
            }
        }
        let mut tunnel_names = HashSet::new();
        let mut tunnels = Vec::new();
        for (j, t) in h.tunnels.iter().enumerate() {
            let tname = t.name.get_ref().trim().to_string();
            if tname.is_empty() || !tunnel_names.insert(tname.clone()) {
                v.error(
                    &t.name,
                    field(&format!("tunnels[{j}].name")),
                    "must be non-empty and unique within the host",
                );
            }
            let addr = t.address.get_ref();
            let port_ok = addr.rsplit_once(':').is_some_and(|(host, port)| {
                !host.is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0)
            });
            if port_ok {
                tunnels.push(TunnelConfig {
                    name: tname,
                    address: addr.clone(),
                });
            } else {
                v.error(
                    &t.address,
                    field(&format!("tunnels[{j}].address")),
                    "expected host:port, e.g. \"127.0.0.1:18301\"",
                );
            }
        }
        let mut cron_names = HashSet::new();
        let mut crons = Vec::new();
        for (j, c) in h.crons.iter().enumerate() {
            let cf = |f: &str| field(&format!("crons[{j}].{f}"));
            let cname = c.name.get_ref().clone();
            if !is_plain_name(&cname) {
                v.error(&c.name, cf("name"), "expected a plain name (letters, digits, '.', '_', '-'): it names the job's record file");
            } else if !cron_names.insert(cname.clone()) {
                v.error(
                    &c.name,
                    cf("name"),
                    format!("duplicate cron {cname:?} on this host"),
                );
            }
            let period = v.duration(&Some(c.period.clone()), &cf("period"), Duration::ZERO);
            let grace = v.duration(&c.grace, &cf("grace"), defaults::CRON_GRACE);
            let evidence = match &c.stamp {
                Some(_) if kind == "node_exporter" => {
                    error_at_key(
                        v,
                        c.name.span().start,
                        "stamp",
                        cf("stamp"),
                        "stamp files need a local or ssh host: node_exporter cannot read a \
                         file's time; run the job under `fleetdash cron-run --textfile-dir` \
                         instead"
                            .into(),
                    );
                    CronEvidence::Record
                }
                Some(stamp) => CronEvidence::Stamp(host_path(v, stamp)),
                None => CronEvidence::Record,
            };
            crons.push(CronConfig {
                name: cname,
                period,
                grace,
                evidence,
            });
        }
        let cron_dir = match (&h.cron_dir, local) {
            (Some(dir), _) => Some(host_path(v, dir)),
            (None, true) => Some(
                state_dir
                    .join(defaults::CRON_RECORDS_DIR)
                    .to_string_lossy()
                    .into_owned(),
            ),
            (None, false) => None,
        };
        if kind == "ssh"
            && cron_dir.is_none()
            && crons.iter().any(|c| c.evidence == CronEvidence::Record)
        {
            v.error(&h.name, field("cron_dir"), "an ssh host whose crons run under `fleetdash cron-run` needs cron_dir: the record folder on that host (or give each cron a stamp file)");
        }
        let vault = match (&h.vault, kind) {
            (Some(vault), "node_exporter") => {
                v.error(
                    &vault.path,
                    field("vault"),
                    "vault parity needs a local or ssh host: node_exporter cannot run git",
                );
                None
            }
            (Some(vault), _) => Some(VaultParityConfig {
                path: host_path(v, vault.path.get_ref()),
                remote: vault
                    .remote
                    .clone()
                    .unwrap_or_else(|| defaults::VAULT_REMOTE.to_string()),
                branch: vault.branch.clone(),
            }),
            (None, _) => None,
        };
        if let Some(source) = source {
            out.push(HostConfig {
                name,
                source,
                // Resolved against the config's folder like any path, on a local host only.
                disk_path: h
                    .disk_path
                    .as_deref()
                    .map(|p| host_path(v, p))
                    .unwrap_or_else(|| defaults::DISK_PATH.to_string()),
                services,
                tunnels,
                crons,
                cron_dir,
                vault,
            });
        }
    }
    out
}

fn validate_backups(v: &mut Validator, b: &RawBackups) -> Option<BackupsConfig> {
    let timeout = v.duration(
        &b.timeout,
        "backups.timeout",
        defaults::BACKUP_COMMAND_TIMEOUT,
    );
    let mut valid = true;
    if b.name.get_ref().trim().is_empty() {
        v.error(&b.name, "backups.name", "must not be empty");
        valid = false;
    }
    let source = match (&b.dir, &b.command) {
        (Some(dir), None) => BackupSource::Dir(v.path(dir)),
        (None, Some(cmd))
            if cmd
                .get_ref()
                .first()
                .is_some_and(|program| !program.trim().is_empty()) =>
        {
            BackupSource::Command(cmd.get_ref().clone())
        }
        (None, Some(cmd)) => {
            v.error(
                cmd,
                "backups.command",
                "must name a program first, e.g. [\"rclone\", \"lsl\", \"gdrive:backups\"]",
            );
            return None;
        }
        _ => {
            v.error(&b.name, "backups", "give exactly one of dir (a folder whose newest file is the latest backup) or command");
            return None;
        }
    };
    valid.then(|| BackupsConfig {
        name: b.name.get_ref().clone(),
        source,
        timeout,
    })
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
        systems: v.duration(
            &raw.cadence.systems,
            "cadence.systems",
            defaults::SYSTEMS_CADENCE,
        ),
        tunnels: v.duration(
            &raw.cadence.tunnels,
            "cadence.tunnels",
            defaults::TUNNELS_CADENCE,
        ),
        backups: v.duration(
            &raw.cadence.backups,
            "cadence.backups",
            defaults::BACKUPS_CADENCE,
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
        command_timeout: v.duration(
            &raw.probe.command_timeout,
            "probe.command_timeout",
            defaults::COMMAND_TIMEOUT,
        ),
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

    let hosts = validate_hosts(&mut v, &raw.hosts, &state_dir);
    let vault = raw.vault.as_ref().map(|vault| v.path(vault.path.get_ref()));
    let boards = validate_boards(&mut v, &raw.boards, vault.as_deref());
    let backups = raw
        .backups
        .as_ref()
        .and_then(|b| validate_backups(&mut v, b));

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
    fn host_and_backup_mistakes_are_each_named_with_their_line() {
        let text = r#"output_dir = "o"
state_dir = "s"
rules = "r"
[[hosts]]
name = "a"
source = "ssh"
services = ["nginx", "nginx.service", "cron", "cron"]
ssh = { destination = "ops@lab;id", port = 0, known_hosts = "/k/known hosts", identity_file = "/k/id%h" }
[[hosts]]
name = "b"
source = "ssh"
[hosts.ssh]
destination = "ops@lab"
identity_file = "/k/id"
port = 0
known_hosts = "kh"
[[hosts]]
name = "c"
source = "node_exporter"
url = "http://127.0.0.1:9100/metrics"
[[hosts.crons]]
name = "job"
period = "1h"
stamp = "/tmp/job.ok"
[backups]
name = " "
command = [""]
"#;
        let errs = Config::parse(Path::new("/etc/my configs/f.toml"), text)
            .unwrap_err()
            .0;
        let rendered: Vec<String> = errs.iter().map(ToString::to_string).collect();
        let f = "/etc/my configs/f.toml";
        let expected = [
            format!(
                "{f}:7: hosts[0].services[1]: \"nginx.service\" is the unit \"nginx\" already \
                 names (nginx.service)"
            ),
            format!("{f}:7: hosts[0].services[3]: duplicate service \"cron\" on this host"),
            format!(
                "{f}:8: hosts[0].ssh.destination: expected user@host or host: letters, digits \
                 and . _ @ : % [ ] - only, not starting with '-'"
            ),
            format!("{f}:8: hosts[0].ssh.port: expected a port from 1 to 65535"),
            format!(
                "{f}:8: hosts[0].ssh.identity_file: \"/k/id%h\" contains '%' or '${{', which \
                 ssh expands (%h is the host name, ${{VAR}} an environment variable): it would \
                 read another file; use a path without them"
            ),
            format!(
                "{f}:8: hosts[0].ssh.known_hosts: \"/k/known hosts\" contains whitespace, and \
                 ssh splits its options' values on whitespace (-o UserKnownHostsFile=/a b names \
                 two files, /a and b); use a path without them"
            ),
            format!("{f}:15: hosts[1].ssh.port: expected a port from 1 to 65535"),
            // Relative: resolved against the config's folder, whose name has a space.
            format!("{f}:16: hosts[1].ssh.known_hosts: \"/etc/my configs/kh\" contains whitespace"),
            format!(
                "{f}:24: hosts[2].crons[0].stamp: stamp files need a local or ssh host: \
                 node_exporter cannot read a file's time; run the job under `fleetdash cron-run \
                 --textfile-dir` instead"
            ),
            format!("{f}:26: backups.name: must not be empty"),
            format!(
                "{f}:27: backups.command: must name a program first, e.g. [\"rclone\", \"lsl\", \
                 \"gdrive:backups\"]"
            ),
        ];
        for e in &expected {
            assert!(
                rendered.iter().any(|r| r.starts_with(e.as_str())),
                "missing {e:?} in {rendered:#?}"
            );
        }
        assert_eq!(errs.len(), expected.len(), "{rendered:#?}");
    }

    #[test]
    fn ssh_destinations_are_plain() {
        let host = |dest: &str| {
            format!(
                "output_dir = \"o\"\nstate_dir = \"s\"\nrules = \"r\"\n[[hosts]]\nname = \"h\"\n\
                 source = \"ssh\"\nssh = {{ destination = {dest:?} }}\n"
            )
        };
        for good in [
            "lab",
            "ops@lab",
            "ops@10.0.0.1",
            "deploy_user@host-1.example.org",
            "[fe80::1%eth0]",
            "ops@[2001:db8::1]",
        ] {
            let c = Config::parse(Path::new("f.toml"), &host(good));
            assert!(c.is_ok(), "{good}: {}", c.unwrap_err());
        }
        for bad in [
            "",
            "user@host;id",
            "user@host id",
            "a\tb",
            "\"quoted\"",
            "'quoted'",
            "$(id)",
            "`id`",
            "host|x",
            "-oProxyCommand=x",
            "ops@lab/../x",
            "hôte",
        ] {
            let err = Config::parse(Path::new("f.toml"), &host(bad))
                .unwrap_err()
                .to_string();
            assert!(
                err.starts_with("f.toml:7: hosts[0].ssh.destination: expected user@host"),
                "{bad:?}: {err}"
            );
        }
    }

    #[test]
    fn a_local_disk_path_resolves_against_the_config_folder() {
        let text = "output_dir = \"o\"\nstate_dir = \"s\"\nrules = \"r\"\n\
                    [[hosts]]\nname = \"here\"\ndisk_path = \"data\"\n\
                    [[hosts]]\nname = \"abs\"\ndisk_path = \"/srv\"\n\
                    [[hosts]]\nname = \"default\"\n\
                    [[hosts]]\nname = \"there\"\nsource = \"ssh\"\ndisk_path = \"data\"\n\
                    ssh = { destination = \"lab\" }\n";
        let c = Config::parse(Path::new("/etc/fleetdash/f.toml"), text).unwrap();
        let disks: Vec<&str> = c.hosts.iter().map(|h| h.disk_path.as_str()).collect();
        // A remote host's path is that host's: as given.
        assert_eq!(disks, ["/etc/fleetdash/data", "/srv", "/", "data"]);
    }

    #[test]
    fn a_cadence_not_shorter_than_the_staleness_limit_is_refused_with_its_line() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("rules.yaml"),
            include_str!("../../../config/rules.yaml"),
        )
        .unwrap();
        let path = dir.path().join("f.toml");
        let config = |tunnels: &str| {
            format!(
                "output_dir = \"o\"\nstate_dir = \"s\"\nrules = \"rules.yaml\"\n\
                 [cadence]\ntunnels = \"{tunnels}\"\n\
                 [[hosts]]\nname = \"lab\"\n[[hosts.tunnels]]\nname = \"t\"\naddress = \"127.0.0.1:1\"\n"
            )
        };
        std::fs::write(&path, config("20m")).unwrap();
        let err = Config::load(&path).unwrap_err().to_string();
        assert!(
            err.contains(
                "f.toml:5: cadence.tunnels: 20m is not shorter than the staleness limit (600 s"
            ),
            "{err}"
        );
        std::fs::write(&path, config("2m")).unwrap();
        assert!(Config::load(&path).is_ok());
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

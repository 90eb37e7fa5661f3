//! `fleetdash init`: a config for the operator's own fleet. It asks for (or takes as flags) what
//! only the operator knows, the endpoints, boards, vault, channel and address, and learns the
//! rest: each agent's name, dialect and skills from its card (`discover`), this host with its
//! disk and the tunnels the agents are reached through. It writes the commented config
//! (`compose`), the page's login and the agents' report tokens (`secrets`: no secret goes
//! anywhere else), and says the next commands. Run again, it adds what is new and changes
//! nothing the operator wrote.

pub mod compose;
pub mod discover;
pub mod secrets;

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::Context;

use compose::{AgentBlock, BoardBlock, Channel, Existing, HTPASSWD, Plan, TOKENS_DIR, VaultBlock};
use discover::{Answer, Found, Target};

/// serve's address unless given.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";
/// The intake's address in a new config: loopback, where the agents' tunnels end.
pub const DEFAULT_INTAKE: &str = "127.0.0.1:8470";
/// The config file unless given.
pub const DEFAULT_CONFIG: &str = "fleetdash.toml";

/// What the operator gave.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub config: PathBuf,
    pub agents: Vec<String>,
    pub boards: Vec<String>,
    pub vault: Option<PathBuf>,
    pub ntfy: Option<String>,
    pub webhook: Option<String>,
    pub listen: Option<SocketAddr>,
    /// `[report] at`, "07:30": the report of the night at this hour.
    pub report: Option<String>,
    /// Never ask.
    pub yes: bool,
    /// A new password for the page even though the htpasswd exists.
    pub new_password: bool,
}

/// Why init did nothing.
#[derive(Debug)]
pub enum Error {
    /// What was given cannot be used (exit 2): says which flag and what is expected.
    Usage(String),
    Other(anyhow::Error),
}

impl From<anyhow::Error> for Error {
    fn from(e: anyhow::Error) -> Self {
        Error::Other(e)
    }
}

fn usage(message: impl Into<String>) -> Error {
    Error::Usage(message.into())
}

/// Runs `fleetdash init`; prints what it did and the next commands on stdout.
pub async fn run(mut options: Options) -> Result<(), Error> {
    let config = std::path::absolute(&options.config)
        .with_context(|| format!("cannot resolve {}", options.config.display()))?;
    let dir = config.parent().unwrap_or(Path::new("/")).to_path_buf();
    let existing_text = match std::fs::read_to_string(&config) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(anyhow::anyhow!("cannot read {}: {e}", config.display()).into()),
    };
    let mut doc: Option<toml_edit::DocumentMut> = match &existing_text {
        Some(text) => Some(text.parse().map_err(|e| {
            usage(format!(
                "{}: not TOML ({e}); init adds to a config it can read: mend it, or give \
                 another --config",
                config.display()
            ))
        })?),
        None => None,
    };
    let existing = doc.as_ref().map(Existing::read).unwrap_or_default();
    let first_run = existing_text.is_none();
    if !options.yes && std::io::stdin().is_terminal() {
        options = tokio::task::spawn_blocking(move || ask(options, first_run))
            .await
            .context("asking failed")??;
    }

    // Endpoints: each once, those the config has already left out.
    let mut targets: Vec<Target> = Vec::new();
    let mut ranges: Vec<(String, Vec<u16>)> = Vec::new();
    let known: Vec<String> = existing
        .agent_endpoints
        .iter()
        .filter_map(|e| url::Url::parse(e).ok())
        .filter_map(|u| discover::address(&u))
        .collect();
    for spec in &options.agents {
        let parsed = discover::parse_spec(spec).map_err(|e| usage(format!("--agents {e}")))?;
        if parsed.first().is_some_and(|t| !t.explicit) {
            ranges.push((spec.trim().to_string(), Vec::new()));
        }
        for t in parsed {
            let address = discover::address(&t.endpoint);
            if address.as_ref().is_some_and(|a| known.contains(a)) {
                continue;
            }
            // Named explicitly and also in a range: the explicit one wins (it is written even
            // when nothing answers there).
            match targets
                .iter_mut()
                .find(|o| discover::address(&o.endpoint) == address)
            {
                Some(o) => o.explicit |= t.explicit,
                None => targets.push(t),
            }
        }
    }
    let boards = boards(&options.boards, &existing)?;
    let channel = channel(&options)?;
    let report = match options.report.as_deref() {
        Some(at) if crate::config::minute_of_day(at).is_none() => {
            return Err(usage(format!(
                "--report {at:?}: expected a time of day as HH:MM, such as 07:30"
            )));
        }
        at => at.map(str::to_string),
    };
    let vault = match &options.vault {
        Some(path) if !existing.has_vault => Some(vault(path).await?),
        _ => None,
    };

    let found = discover::probe_all(targets).await;
    let mut names: Vec<String> = existing.agent_names.clone();
    let mut tunnel_names: Vec<String> = existing.tunnel_names.clone();
    let mut agents = Vec::new();
    // Per range: the ports where nothing answered, and those that answered without a card.
    let mut silent: BTreeMap<String, (Vec<u16>, Vec<u16>)> = BTreeMap::new();
    for f in &found {
        match agent(f, &mut names) {
            Some(mut block) => {
                if let Some((_, address)) = block.tunnel.clone() {
                    if existing.tunnel_addresses.contains(&address) {
                        // Already a tunnel of the host: the agent depends on it as it is.
                        block.tunnel = None;
                    } else {
                        // The agent's name, unless the host has a tunnel so named.
                        let name = unique(&block.name, &f.target.endpoint, &tunnel_names);
                        tunnel_names.push(name.clone());
                        block.tunnel = Some((name, address));
                    }
                }
                agents.push(block);
            }
            None => {
                let port = f.target.endpoint.port_or_known_default().unwrap_or(0);
                let range = ranges
                    .iter()
                    .find(|(spec, _)| {
                        discover::parse_spec(spec).is_ok_and(|ts| ts.contains(&f.target))
                    })
                    .map(|(spec, _)| spec.clone())
                    .unwrap_or_default();
                let entry = silent.entry(range).or_default();
                match f.answer {
                    Answer::NoCard(_) => entry.1.push(port),
                    _ => entry.0.push(port),
                }
            }
        }
    }
    let unanswered: Vec<String> = silent
        .iter()
        .map(|(range, (none, no_card))| unanswered_line(range, none, no_card))
        .collect();

    // Secrets, off the async workers (bcrypt, fsync).
    let htpasswd = doc
        .as_ref()
        .and_then(|d| d.get("serve")?.get("htpasswd")?.as_str().map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from(HTPASSWD));
    let secrets = {
        let (dir, names) = (
            dir.clone(),
            agents.iter().map(|a| a.name.clone()).collect::<Vec<_>>(),
        );
        let renew = options.new_password;
        tokio::task::spawn_blocking(move || -> anyhow::Result<_> {
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            let htpasswd = dir.join(htpasswd);
            let login = secrets::login(&htpasswd, &secrets::user_name(), renew)?;
            let tokens = dir.join(TOKENS_DIR);
            for name in &names {
                secrets::report_token(&tokens, name)?;
            }
            if first_run {
                for folder in ["out", "state"] {
                    let path = dir.join(folder);
                    std::fs::create_dir_all(&path)
                        .with_context(|| format!("cannot create {}", path.display()))?;
                }
            }
            Ok((login, htpasswd))
        })
        .await
        .context("writing the secrets failed")??
    };

    let listen = options
        .listen
        .unwrap_or_else(|| DEFAULT_LISTEN.parse().expect("a socket address"));
    let added = match &mut doc {
        None => {
            let plan = Plan {
                listen,
                intake: DEFAULT_INTAKE.parse().expect("a socket address"),
                host: this_host(),
                channel: channel.clone(),
                vault: vault.clone(),
                boards: boards.clone(),
                agents: agents.clone(),
                unanswered: unanswered.clone(),
                report: report.clone(),
            };
            write_config(&config, compose::first(&plan)).await?;
            true
        }
        Some(doc) => {
            let channel = channel
                .as_ref()
                .filter(|c| !existing.channel_urls.iter().any(|u| u == c.url()));
            let before = doc.to_string();
            compose::add(
                doc,
                &agents,
                &boards,
                channel,
                report.as_deref(),
                existing.local_host,
            );
            let after = doc.to_string();
            let changed = after != before;
            if changed {
                write_config(&config, after).await?;
            }
            changed
        }
    };
    say(&Said {
        // As the operator gave it: the next commands are theirs to type.
        config: &options.config,
        first_run,
        added,
        agents: &agents,
        boards: &boards,
        unanswered: &unanswered,
        login: &secrets.0,
        htpasswd: &secrets.1,
        listen: existing
            .listen
            .clone()
            .unwrap_or_else(|| listen.to_string()),
        intake: existing
            .intake
            .clone()
            .unwrap_or_else(|| DEFAULT_INTAKE.to_string()),
        no_local_host: doc.is_some()
            && existing.local_host.is_none()
            && agents.iter().any(|a| a.tunnel.is_some()),
        channel: channel.is_some() || !existing.channel_urls.is_empty(),
        report: match (&existing.report, report) {
            (None, Some(at)) => ReportSaid::Added(at),
            (Some(kept), Some(at)) if *kept != at => ReportSaid::Kept(kept.clone()),
            _ => ReportSaid::Unchanged,
        },
    });
    Ok(())
}

/// `name`, or `name-PORT` when `taken` has it already.
fn unique(name: &str, endpoint: &url::Url, taken: &[String]) -> String {
    if !taken.iter().any(|t| t == name) {
        return name.to_string();
    }
    let port = endpoint.port_or_known_default().unwrap_or(0);
    let mut candidate = format!("{name}-{port}");
    let mut n = 2;
    while taken.contains(&candidate) {
        candidate = format!("{name}-{port}-{n}");
        n += 1;
    }
    candidate
}

/// The agent block of what an endpoint answered; `None` for a port of a range where no agent
/// answered. `names` are those taken: a second card of the same name is renamed and says so.
fn agent(found: &Found, names: &mut Vec<String>) -> Option<AgentBlock> {
    let endpoint = &found.target.endpoint;
    let mut notes = Vec::new();
    let (wanted, wire) = match &found.answer {
        Answer::Card(card) => {
            let wire_said = match card.wire {
                Some(w) => format!("dialect {}", w.as_str()),
                None => "no dialect (auto tries v1, then v0.3)".to_string(),
            };
            notes.push(format!(
                "From its card at init: {wire_said}, {} skill(s).",
                card.skills
            ));
            if card.skills == 0 {
                notes.push(
                    "Its card lists no skills: red until it does (it cannot be given work)."
                        .to_string(),
                );
            }
            (
                card.name
                    .clone()
                    .unwrap_or_else(|| discover::name_of_endpoint(endpoint)),
                card.wire,
            )
        }
        Answer::NoCard(why) if found.target.explicit => {
            notes.push(format!(
                "It answered at init but gave no agent card ({why}): is this its A2A endpoint?"
            ));
            (discover::name_of_endpoint(endpoint), None)
        }
        Answer::Silent(why) if found.target.explicit => {
            notes.push(format!(
                "It did not answer at init ({why}): kept, with dialect \"auto\" (the collector \
                 finds it once it answers; set it here to pin it)."
            ));
            (discover::name_of_endpoint(endpoint), None)
        }
        _ => return None,
    };
    let name = unique(&wanted, endpoint, names);
    if name != wanted {
        notes.push(format!(
            "Renamed: its card says {wanted:?}, the name of another agent here."
        ));
    }
    names.push(name.clone());
    Some(AgentBlock {
        report_token_file: format!("{TOKENS_DIR}/{name}"),
        // A loopback port is a tunnel only when an SSH client holds it (`ssh -L`): an agent
        // running on this machine has none to blame.
        tunnel: discover::is_loopback(endpoint)
            .then(|| discover::address(endpoint))
            .flatten()
            .filter(|_| {
                endpoint
                    .port_or_known_default()
                    .is_some_and(discover::forwarded_by_ssh)
            })
            .map(|address| (name.clone(), address)),
        name,
        endpoint: endpoint.to_string(),
        wire,
        notes,
    })
}

/// One comment line for a range's ports where no agent answered.
fn unanswered_line(range: &str, none: &[u16], no_card: &[u16]) -> String {
    let list = |ports: &[u16]| {
        ports
            .iter()
            .map(u16::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut parts = Vec::new();
    if !none.is_empty() {
        parts.push(format!("nothing answered at {}", list(none)));
    }
    if !no_card.is_empty() {
        parts.push(format!("no agent card at {}", list(no_card)));
    }
    format!("{range} at init: {}.", parts.join("; "))
}

/// `--board NAME=DB`, those the config does not have yet.
fn boards(specs: &[String], existing: &Existing) -> Result<Vec<BoardBlock>, Error> {
    let mut out: Vec<BoardBlock> = Vec::new();
    for spec in specs {
        let (name, db) = spec.split_once('=').ok_or_else(|| {
            usage(format!(
                "--board {spec:?}: expected NAME=DB, e.g. research=~/.hermes/kanban/boards/research/kanban.db"
            ))
        })?;
        let name = name.trim();
        let slug = !name.is_empty()
            && name.len() <= 64
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '_'));
        if !slug {
            return Err(usage(format!(
                "--board {spec:?}: {name:?} is not a Hermes board slug (lowercase letters, \
                 digits, '-', '_')"
            )));
        }
        let db = std::path::absolute(expand_home(db.trim()))
            .map_err(|e| usage(format!("--board {spec:?}: {e}")))?;
        if !db.is_file() {
            return Err(usage(format!(
                "--board {spec:?}: no file at {}; give the board's kanban.db",
                db.display()
            )));
        }
        let db = db.to_string_lossy().into_owned();
        let known = existing.board_names.iter().any(|n| n == name)
            || existing.board_dbs.contains(&db)
            || out.iter().any(|b| b.name == name);
        if !known {
            out.push(BoardBlock {
                name: name.to_string(),
                db,
            });
        }
    }
    Ok(out)
}

fn expand_home(path: &str) -> PathBuf {
    match (path.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => PathBuf::from(path),
    }
}

/// `--ntfy URL` or `--webhook URL`.
fn channel(options: &Options) -> Result<Option<Channel>, Error> {
    let check = |flag: &str, url: &str| {
        url::Url::parse(url)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
            .map(|_| url.to_string())
            .ok_or_else(|| {
                usage(format!(
                    "{flag} {url:?}: expected an http(s) URL, e.g. https://ntfy.sh/my-topic"
                ))
            })
    };
    Ok(match (&options.ntfy, &options.webhook) {
        (Some(_), Some(_)) => return Err(usage("give --ntfy or --webhook, not both")),
        (Some(u), None) => Some(Channel::Ntfy(check("--ntfy", u)?)),
        (None, Some(u)) => Some(Channel::Webhook(check("--webhook", u)?)),
        (None, None) => None,
    })
}

/// `--vault PATH`: a git checkout, and the remote its parity is compared with.
async fn vault(path: &Path) -> Result<VaultBlock, Error> {
    let path = std::path::absolute(expand_home(&path.to_string_lossy()))
        .map_err(|e| usage(format!("--vault {}: {e}", path.display())))?;
    let shown = path.display().to_string();
    let dir = path.clone();
    let remotes = tokio::task::spawn_blocking(move || {
        std::process::Command::new("git")
            .arg("-C")
            .arg(&dir)
            .arg("remote")
            .env("LC_ALL", "C")
            .output()
    })
    .await
    .context("git failed")?;
    let out = match remotes {
        Ok(out) if out.status.success() => out,
        Ok(out) => {
            return Err(usage(format!(
                "--vault {shown}: not a git checkout ({}); give the vault's git folder",
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        Err(e) => {
            return Err(usage(format!(
                "--vault {shown}: cannot run git ({e}); the vault's parity is read with git: \
                 install it"
            )));
        }
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let remotes: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let remote = remotes
        .iter()
        .find(|r| **r == "origin")
        .or(remotes.first())
        .map(|r| r.to_string());
    Ok(VaultBlock {
        path: shown,
        remote,
    })
}

/// This machine's name for its `[[hosts]]` entry.
fn this_host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .and_then(|h| discover::config_name(&h))
        .unwrap_or_else(|| "this-host".into())
}

async fn write_config(path: &Path, text: String) -> Result<(), Error> {
    let path = path.to_path_buf();
    tokio::task::spawn_blocking(move || {
        // The config holds no secret (tokens are files it names); 0640 as the package installs it.
        secrets::write_with_mode(&path, text.as_bytes(), 0o640)
    })
    .await
    .context("writing the config failed")??;
    Ok(())
}

/// Asks for what was not given, on a terminal.
fn ask(mut options: Options, first_run: bool) -> Result<Options, Error> {
    let read = |question: &str| -> Result<String, Error> {
        use std::io::Write;
        print!("{question}");
        std::io::stdout().flush().context("stdout")?;
        let mut line = String::new();
        std::io::stdin().read_line(&mut line).context("stdin")?;
        Ok(line.trim().to_string())
    };
    let words =
        |line: String| -> Vec<String> { line.split_whitespace().map(str::to_string).collect() };
    if options.agents.is_empty() {
        options.agents = words(read(
            "Agent endpoints (URL, HOST:PORT or a range such as 127.0.0.1:18301-18313; \
             space-separated, empty for none): ",
        )?);
    }
    if options.boards.is_empty() {
        options.boards = words(read(
            "Hermes boards, NAME=path/to/kanban.db (space-separated, empty for none): ",
        )?);
    }
    if first_run {
        if options.vault.is_none() {
            let v = read("The vault's git checkout (empty for none): ")?;
            options.vault = (!v.is_empty()).then(|| PathBuf::from(v));
        }
        if options.ntfy.is_none() && options.webhook.is_none() {
            let v = read(
                "ntfy topic URL for alerts, e.g. https://ntfy.sh/my-topic (empty for none): ",
            )?;
            options.ntfy = (!v.is_empty()).then_some(v);
        }
        if options.report.is_none() {
            let v = read("The report of the night, at HH:MM (empty for none): ")?;
            options.report = (!v.is_empty()).then_some(v);
        }
        if options.listen.is_none() {
            let v = read(&format!(
                "Address the page is served on [{DEFAULT_LISTEN}]: "
            ))?;
            if !v.is_empty() {
                options.listen = Some(v.parse().map_err(|e| {
                    usage(format!(
                        "{v:?} is not an address such as {DEFAULT_LISTEN} ({e})"
                    ))
                })?);
            }
        }
    }
    Ok(options)
}

/// What [`say`] reports.
struct Said<'a> {
    config: &'a Path,
    first_run: bool,
    added: bool,
    agents: &'a [AgentBlock],
    boards: &'a [BoardBlock],
    unanswered: &'a [String],
    login: &'a secrets::Login,
    htpasswd: &'a Path,
    listen: String,
    intake: String,
    no_local_host: bool,
    /// The config has an alert channel (given now or before).
    channel: bool,
    report: ReportSaid,
}

/// What became of `--report`.
enum ReportSaid {
    /// Written now, at this hour.
    Added(String),
    /// The config's own `[report] at`, left as it is although `--report` said another.
    Kept(String),
    Unchanged,
}

/// What was done and the next commands, in under 15 lines. The password is printed here and
/// nowhere else.
fn say(s: &Said) {
    let c = s.config.display();
    let named = |v: Vec<&str>| {
        if v.is_empty() {
            "none".into()
        } else {
            v.join(", ")
        }
    };
    let agents = named(s.agents.iter().map(|a| a.name.as_str()).collect());
    match (s.first_run, s.added) {
        (true, _) => println!(
            "Wrote {c}: agents {agents}; boards {}.",
            named(s.boards.iter().map(|b| b.name.as_str()).collect())
        ),
        (false, true) => println!(
            "Added to {c}: agents {agents}; boards {}.",
            named(s.boards.iter().map(|b| b.name.as_str()).collect())
        ),
        (false, false) => println!("{c}: nothing new."),
    }
    for line in s.unanswered {
        println!("  {line}");
    }
    match &s.report {
        ReportSaid::Added(at) => println!(
            "  The report of the {}: every day at {at}, this host's zone ({}), {}.",
            // As its title says it (docs/report.md): "Night" for a morning hour.
            match crate::config::minute_of_day(at) {
                Some(m) if (3 * 60..12 * 60).contains(&m) => "night",
                _ => "day",
            },
            jiff::tz::TimeZone::system().iana_name().unwrap_or("UTC"),
            if s.channel {
                "to the alert channels and the page"
            } else {
                "on the page only until an alert channel is added"
            }
        ),
        ReportSaid::Kept(at) => {
            println!("  [report] at = {at:?} kept: it is yours (edit {c} to change it).")
        }
        ReportSaid::Unchanged => {}
    }
    if s.no_local_host {
        println!("  No local [[hosts]] entry: the new agents' tunnels were not added.");
    }
    if let secrets::Login::New { user, password } = s.login {
        println!(
            "Page login: {user} / {password}  (shown once; {} keeps only its hash)",
            s.htpasswd.display()
        );
    }
    println!("Next:");
    println!("  fleetdash check --config {c}");
    println!("  fleetdash doctor --config {c}");
    if s.channel {
        println!(
            "  fleetdash alerts test --config {c}   # a test notification through the channel"
        );
    }
    println!(
        "  fleetdash run --config {c}      # the collector (docs/install.md: as a user service)"
    );
    println!(
        "  fleetdash serve --config {c}    # then open http://{}/ (from the phone: through nginx or a tunnel)",
        s.listen
    );
    if !s.agents.is_empty() {
        let dir = match s.config.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.join(TOKENS_DIR),
            _ => PathBuf::from(TOKENS_DIR),
        };
        println!(
            "  Agents report to http://{}/ with Authorization: Bearer <{}/NAME> (docs/reporting.md)",
            s.intake,
            dir.display()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_card_of_one_name_is_renamed_and_says_so() {
        let found = |port: u16| Found {
            target: Target {
                endpoint: url::Url::parse(&format!("http://127.0.0.1:{port}/")).unwrap(),
                explicit: false,
            },
            answer: Answer::Card(discover::Card {
                name: Some("min".into()),
                wire: Some(crate::a2a::Wire::V03),
                skills: 0,
            }),
        };
        let mut names = Vec::new();
        let a = agent(&found(18301), &mut names).unwrap();
        let b = agent(&found(18302), &mut names).unwrap();
        assert_eq!((a.name.as_str(), b.name.as_str()), ("min", "min-18302"));
        assert!(
            b.notes.iter().any(|n| n.contains("Renamed")),
            "{:?}",
            b.notes
        );
        assert!(
            a.notes.iter().any(|n| n.contains("no skills")),
            "{:?}",
            a.notes
        );
        // Nothing of ssh's listens there: a loopback port alone is no tunnel.
        assert_eq!(a.tunnel, None);
        assert_eq!(a.report_token_file, "report-tokens/min");
    }

    #[test]
    fn a_silent_port_is_an_agent_only_when_named() {
        let silent = |explicit| Found {
            target: Target {
                endpoint: url::Url::parse("http://127.0.0.1:18309/").unwrap(),
                explicit,
            },
            answer: Answer::Silent("connection refused".into()),
        };
        assert!(agent(&silent(false), &mut Vec::new()).is_none());
        let kept = agent(&silent(true), &mut Vec::new()).unwrap();
        assert_eq!(kept.name, "127.0.0.1-18309");
        assert_eq!(kept.wire, None);
        assert!(
            kept.notes[0].contains("did not answer at init"),
            "{:?}",
            kept.notes
        );
        assert_eq!(
            unanswered_line("127.0.0.1:18301-18313", &[18303, 18304], &[18310]),
            "127.0.0.1:18301-18313 at init: nothing answered at 18303, 18304; no agent card at 18310."
        );
    }
}

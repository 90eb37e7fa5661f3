//! `fleetdash demo`: a simulated fleet of 11 agents on loopback, collected and served in one
//! process, so the dashboard can be seen without a fleet.
//!
//! The fleet speaks all three dialects and shows every failure the dashboard must make loud:
//! one agent refuses connections, one never answers, one serves `skills: []`, one is talked to
//! by nobody but the collector (its last exchange is hours old, however often its heartbeat
//! answers), one is slow, one's model window is near its limit. The others exchange messages
//! with each other all along ([`fleet_traffic`]); the Pulse plane knows the collector under its
//! own name (`collector_peer`). Three hosts fill the Systems panel: this machine, read for
//! real, and two remote hosts simulated as node_exporter endpoints ([`hosts`]). Everything is
//! written under the state directory (a fresh temporary one by default): config, rules,
//! htpasswd, audit logs, cron records, backups, snapshot. The login's password is made at the
//! first start of a state directory and kept for it (only its bcrypt hash is stored), so a
//! restart does not lock out an open tab.
//!
//! The fleet also reports to the hub: the demo serves the report intake over a work queue of
//! its own (new at each start), gives each agent a report token in its own file, and plays a
//! fixed work-queue scenario on it ([`scenario`], with the agents' client in [`reporter`]).
//! Its rules shorten the queue's limits and say so ([`DEMO_OVERRIDES`]).

pub mod hosts;
pub mod kanban;
pub mod reporter;
pub mod scenario;
pub mod sim;

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use chrono::Utc;
use rand::distr::{Alphanumeric, SampleString};
use tokio_util::sync::CancellationToken;

use crate::a2a::Wire;
use crate::config::Config;
use crate::server;
use sim::SimAgent;

/// The rules the demo judges by: the built-in rules, shipped in the repository.
pub const DEFAULT_RULES: &str = crate::config::BUILTIN_RULES;
pub const DEMO_USER: &str = "demo";

/// How often the demo's agents exchange a message with one another.
const TRAFFIC_EVERY: Duration = Duration::from_secs(60);
/// The work queue's file, in the demo's state folder.
const QUEUE_DB: &str = "tasks.db";
/// The peer that talks to every agent of the demo (and whom `sol` talks to).
const HUB: &str = "min";
/// What the Pulse plane's agents call the collector: their own name for its token.
const PULSE_COLLECTOR_PEER: &str = "fleetdash-pulse";

/// How an agent of the demo fleet misbehaves, if it does.
#[derive(Clone, Copy, PartialEq)]
enum Trouble {
    None,
    Refuses,
    NeverAnswers,
    EmptySkills,
    /// Nobody but the collector talks to it: its heartbeats answer, its last exchange ages.
    OnlyTheCollector,
    Slow,
}

impl Trouble {
    /// Whether the fleet's traffic reaches the agent: not one that is down or hangs, nor the
    /// one only the collector talks to.
    fn talked_to(self) -> bool {
        matches!(self, Trouble::None | Trouble::EmptySkills | Trouble::Slow)
    }
}

struct DemoAgent {
    name: &'static str,
    dialect: &'static str,
    speaks: Wire,
    plane: &'static str,
    lane: &'static str,
    model: &'static str,
    trouble: Trouble,
}

const fn agent(
    name: &'static str,
    dialect: &'static str,
    speaks: Wire,
    plane: &'static str,
    lane: &'static str,
    model: &'static str,
    trouble: Trouble,
) -> DemoAgent {
    DemoAgent {
        name,
        dialect,
        speaks,
        plane,
        lane,
        model,
        trouble,
    }
}

const FLEET: [DemoAgent; 11] = [
    agent(
        "min",
        "v1",
        Wire::V1,
        "heart",
        "hub",
        "claude-opus",
        Trouble::None,
    ),
    agent(
        "sol",
        "v1",
        Wire::V1,
        "heart",
        "architecture",
        "claude-sonnet",
        Trouble::None,
    ),
    agent(
        "tam",
        "v0.3",
        Wire::V03,
        "brain",
        "board",
        "gpt-5",
        Trouble::None,
    ),
    agent(
        "echo",
        "v0.3-content",
        Wire::V03Content,
        "pulse",
        "research",
        "gemini-pro",
        Trouble::None,
    ),
    agent(
        "mira",
        "v0.3-content",
        Wire::V03Content,
        "pulse",
        "podcast",
        "gemini-flash",
        Trouble::None,
    ),
    agent(
        "nova",
        "auto",
        Wire::V03,
        "brain",
        "ops",
        "qwen-coder",
        Trouble::None,
    ),
    agent(
        "kai",
        "auto",
        Wire::V1,
        "heart",
        "reviews",
        "claude-haiku",
        Trouble::Slow,
    ),
    agent(
        "lyra",
        "v1",
        Wire::V1,
        "heart",
        "docs",
        "claude-sonnet",
        Trouble::Refuses,
    ),
    agent(
        "orin",
        "v0.3-content",
        Wire::V03Content,
        "pulse",
        "daily-brief",
        "gemini-flash",
        Trouble::NeverAnswers,
    ),
    agent(
        "vega",
        "v0.3",
        Wire::V03,
        "brain",
        "infra",
        "gpt-5-mini",
        Trouble::EmptySkills,
    ),
    agent(
        "juno",
        "v1",
        Wire::V1,
        "heart",
        "archive",
        "claude-haiku",
        Trouble::OnlyTheCollector,
    ),
];

/// What the agent's audit log records as the collector's identity.
fn collector_peer(spec: &DemoAgent) -> &'static str {
    if spec.plane == "pulse" {
        PULSE_COLLECTOR_PEER
    } else {
        crate::config::defaults::COLLECTOR_PEER
    }
}

/// Runs the demo until ctrl-c. `new_password` replaces the password the state directory keeps.
pub async fn run(
    listen: SocketAddr,
    state_dir: Option<PathBuf>,
    dist_dir: Option<PathBuf>,
    new_password: bool,
) -> Result<()> {
    let state_dir = match state_dir {
        Some(dir) => {
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            dir
        }
        None => tempfile::Builder::new()
            .prefix("fleetdash-demo-")
            .tempdir()
            .context("cannot create a temporary state directory")?
            .keep(),
    };
    // First, so that a state dir whose login cannot be kept fails before anything starts.
    let password = login(&state_dir, new_password).await?;
    let listener = tokio::net::TcpListener::bind(listen).await.with_context(|| {
        format!("cannot listen on {listen}; pass --listen 127.0.0.1:0 (any free port) or another address")
    })?;
    let url = format!("http://{}/", listener.local_addr()?);
    let shutdown = CancellationToken::new();
    if let Err(e) = crate::watchdog::cancel_on_signal(shutdown.clone()) {
        tracing::error!("cannot handle SIGTERM ({e}): a SIGTERM ends the demo at once");
    }

    let fleet = start_fleet(&state_dir, shutdown.clone()).await?;
    tokio::spawn(fleet_traffic(
        fleet
            .iter()
            .filter(|r| r.spec.trouble.talked_to())
            .map(|r| (r.spec.name, r.audit_log.clone()))
            .collect(),
        shutdown.clone(),
    ));
    let dist_dir = match dist_dir {
        Some(d) if d.join("index.html").is_file() => Some(std::path::absolute(&d)?),
        Some(d) => anyhow::bail!(
            "{}: no index.html; build the page there with scripts/build-frontend, or leave out \
             --dist-dir to serve the page built into fleetdash",
            d.display()
        ),
        None => None,
    };
    let endpoint_of = |name: &str| {
        fleet
            .iter()
            .find(|r| r.spec.name == name)
            .map(|r| r.endpoint.clone())
            .expect("the demo fleet has this agent")
    };
    let hosts = hosts::start(
        &state_dir,
        &state_dir
            .join("state")
            .join(crate::config::defaults::CRON_RECORDS_DIR),
        &endpoint_of("min"),
        &endpoint_of("lyra"),
        shutdown.clone(),
    )
    .await?;
    let tokens = write_report_tokens(&state_dir)?;
    // Held until the collector starts the intake on it, so nothing else takes it meanwhile.
    let intake_port = std::net::TcpListener::bind("127.0.0.1:0")
        .context("cannot find a free loopback port for the intake")?;
    let intake = intake_port.local_addr()?;
    let config_path = write_files(
        &state_dir,
        &fleet,
        &hosts,
        dist_dir.as_deref(),
        intake,
        &tokens,
    )?;
    let (config, rules) =
        Config::load(&config_path).map_err(|e| anyhow::anyhow!("demo config: {e}"))?;
    let options = server::ServeOptions::from_config(&config, &rules)?;
    // The operator's assignments, before the intake opens the queue; the agents' reports
    // follow once it listens.
    let db = &config
        .work_queue
        .as_ref()
        .context("the demo config has a work queue")?
        .db;
    let ids = scenario::assign(db, crate::queue::QueueRules::of(&rules)).await?;
    let intake_url = format!("http://{intake}/");
    let cast = scenario::Cast::new(
        FLEET
            .iter()
            .zip(tokens.tokens)
            .map(|(spec, token)| (spec.name, spec.speaks, token)),
        &intake_url,
    );
    tokio::spawn(scenario::play(
        cast,
        intake_url.clone(),
        ids,
        shutdown.clone(),
    ));

    let password = match &password {
        Login::New(password) => password.as_str(),
        Login::Kept => {
            "unchanged (printed when this state dir was first used; --new-password makes a new one)"
        }
    };
    let banner = format!(
        "fleetdash demo: 11 simulated agents and 3 hosts on loopback\n  dashboard: {url}\n  user:      {DEMO_USER}\n  \
         password:  {password}\n  snapshot:  {}\n  state dir: {}\n  intake:    {intake_url} \
         (the agents report there; the queue: fleetdash tasks --config {})\nPress ctrl-c to stop.\n",
        config.output_dir.join("status.json").display(),
        state_dir.display(),
        config_path.display()
    );
    // Whoever started us may stop reading (a closed pipe); the demo goes on regardless.
    let mut stdout = std::io::stdout();
    let _ = stdout
        .write_all(banner.as_bytes())
        .and_then(|()| stdout.flush());

    // The intake binds its port as the config says: free it just before.
    drop(intake_port);
    let collector = crate::daemon::run_until(&config, &rules, shutdown.clone());
    let server = server::serve(listener, options, shutdown.clone());
    let (collected, served) = tokio::join!(collector, server);
    collected?;
    served?;
    Ok(())
}

/// A running agent of the demo: where to reach it and where its audit log is.
struct Running {
    spec: &'static DemoAgent,
    endpoint: String,
    audit_log: PathBuf,
}

async fn start_fleet(state_dir: &Path, shutdown: CancellationToken) -> Result<Vec<Running>> {
    let mut out = Vec::new();
    for spec in &FLEET {
        let home = state_dir.join("agents").join(spec.name);
        std::fs::create_dir_all(&home)
            .with_context(|| format!("cannot create {}", home.display()))?;
        let audit_log = home.join("a2a_audit.jsonl");
        seed_audit_log(&audit_log, spec)?;

        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let endpoint = format!("http://{addr}/");
        if spec.trouble == Trouble::Refuses {
            // Free the port again: the endpoint now refuses connections, like a dead tunnel.
            drop(listener);
        } else {
            let mut sim = SimAgent::healthy(spec.name, spec.speaks);
            sim.model = Some(spec.model.to_string());
            sim.audit_log = Some(audit_log.clone());
            sim.collector_peer = collector_peer(spec).to_string();
            match spec.trouble {
                Trouble::NeverAnswers => sim.hang = true,
                Trouble::EmptySkills => sim.skills = 0,
                Trouble::Slow => sim.delay = Duration::from_millis(1500),
                _ => {}
            }
            if spec.name == "min" {
                sim.in_flight = vec!["t_demo0001".into(), "t_demo0002".into()];
                // Never progresses: the STUCK badge appears once the demo's rule has passed.
                sim.stalled = vec!["t_demo0002".into()];
                sim.window_percent = Some(62.5);
            }
            if spec.name == "sol" {
                sim.window_percent = Some(93.0);
            }
            let router = sim::single_router(sim, endpoint.clone());
            let stop = shutdown.clone();
            tokio::spawn(async move {
                let _ = axum::serve(listener, router)
                    .with_graceful_shutdown(async move { stop.cancelled().await })
                    .await;
            });
        }
        out.push(Running {
            spec,
            endpoint,
            audit_log,
        });
    }
    Ok(out)
}

/// Who talks to `name` in the demo: the hub, and the hub itself hears from `sol`.
fn partner(name: &str) -> &'static str {
    if name == HUB { "sol" } else { HUB }
}

/// Gives each agent a history: a recent exchange, or, for the agent only the collector talks
/// to, one hours old followed by the collector's heartbeats (which are not exchanges).
fn seed_audit_log(path: &Path, spec: &DemoAgent) -> Result<()> {
    let now = Utc::now().timestamp() as f64;
    let age = if spec.trouble == Trouble::OnlyTheCollector {
        Duration::from_secs(3 * 3600 + 20 * 60)
    } else {
        Duration::from_secs(90)
    };
    let ts = now - age.as_secs_f64();
    let peer = partner(spec.name);
    let mut lines = vec![
        serde_json::json!({"ts": ts - 60.0, "direction": "outbound", "peer": peer, "task_id": null, "summary": "report sent"}),
        serde_json::json!({"ts": ts, "direction": "inbound", "peer": peer, "task_id": null, "summary": "ack"}),
    ];
    if spec.trouble == Trouble::OnlyTheCollector {
        // The collector kept probing it since: every 2 minutes, the fleet's agents cadence.
        let every = crate::config::defaults::AGENTS_CADENCE.as_secs_f64();
        let mut at = ts + every;
        while at < now {
            lines.push(
                serde_json::json!({"ts": at, "direction": "inbound", "peer": collector_peer(spec),
                                          "task_id": null, "summary": "heartbeat received"}),
            );
            at += every;
        }
    }
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

/// The fleet at work: every [`TRAFFIC_EVERY`], each agent that is talked to records an
/// exchange with its partner, as the Hermes adapter records a message from another agent.
async fn fleet_traffic(agents: Vec<(&'static str, PathBuf)>, shutdown: CancellationToken) {
    let mut every = tokio::time::interval(TRAFFIC_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return,
            _ = every.tick() => {}
        }
        let ts = Utc::now().timestamp_millis() as f64 / 1000.0;
        for (name, path) in &agents {
            let line = serde_json::json!({"ts": ts, "direction": "inbound", "peer": partner(name),
                                          "task_id": null, "summary": "status report"});
            let appended = async {
                let mut file = tokio::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .await?;
                tokio::io::AsyncWriteExt::write_all(&mut file, format!("{line}\n").as_bytes()).await
            };
            if let Err(e) = appended.await {
                tracing::warn!(agent = %name, "cannot append to the demo's audit log: {e}");
            }
        }
    }
}

/// The demo's login, as this start of it has it.
enum Login {
    /// Made now: printed once, its bcrypt hash written to the state directory's htpasswd.
    New(String),
    /// The state directory's htpasswd already holds the demo user: kept as it is.
    Kept,
}

/// The password of the state directory: kept when its htpasswd has the demo user (unless
/// `new_password`), else a new one whose bcrypt hash replaces the file. The plaintext is only
/// ever printed, never written. bcrypt and the file's fsync run off the async workers.
async fn login(state_dir: &Path, new_password: bool) -> Result<Login> {
    let path = state_dir.join("htpasswd");
    tokio::task::spawn_blocking(move || login_blocking(&path, new_password))
        .await
        .context("the demo's password setup failed")?
}

fn login_blocking(path: &Path, new_password: bool) -> Result<Login> {
    if !new_password {
        match std::fs::read_to_string(path) {
            Ok(text) => {
                let entry = format!("{DEMO_USER}:$2");
                if text.lines().any(|l| l.starts_with(&entry)) {
                    return Ok(Login::Kept);
                }
                anyhow::bail!(
                    "{}: no bcrypt entry for user {DEMO_USER}; pass --new-password to make a new password",
                    path.display()
                );
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => anyhow::bail!("cannot read {}: {e}", path.display()),
        }
    }
    let password = Alphanumeric.sample_string(&mut rand::rng(), 20);
    let hash =
        bcrypt::hash(&password, bcrypt::DEFAULT_COST).context("cannot hash the demo password")?;
    crate::write::atomic::write(path, format!("{DEMO_USER}:{hash}\n").as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(Login::New(password))
}

/// Where the demo's agents' report tokens are: one file per agent, in [`FLEET`] order.
struct ReportTokens {
    files: Vec<PathBuf>,
    /// Kept in memory for the agents' reporting client; never printed, never in the config.
    tokens: Vec<String>,
}

/// Characters in a demo report token.
const REPORT_TOKEN_CHARS: usize = 32;

/// A fresh report token for each agent of [`FLEET`], each in its own file (mode 0600, in a
/// 0700 folder of the state directory): the config names the file, never the token.
fn write_report_tokens(state_dir: &Path) -> Result<ReportTokens> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
    let dir = state_dir.join("report-tokens");
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .with_context(|| format!("cannot create {}", dir.display()))?;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
        .with_context(|| format!("cannot make {} private", dir.display()))?;
    let mut out = ReportTokens {
        files: Vec::new(),
        tokens: Vec::new(),
    };
    for spec in &FLEET {
        let path = dir.join(spec.name);
        let token = Alphanumeric.sample_string(&mut rand::rng(), REPORT_TOKEN_CHARS);
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&path)
            // A file kept from an earlier start keeps its mode: make sure of it first.
            .and_then(|f| {
                f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
                Ok(f)
            })
            .and_then(|mut f| f.write_all(format!("{token}\n").as_bytes()));
        written.with_context(|| format!("cannot write {}", path.display()))?;
        out.files.push(path);
        out.tokens.push(token);
    }
    Ok(out)
}

/// Keys of one rules group and the demo's value of each, in seconds.
type DemoValues = &'static [(&'static str, u64)];

/// What the demo's rules shorten, by group: each key's demo value (seconds), and why. The
/// heartbeats of the demo's agents ([`scenario::HEARTBEAT_EVERY`]) come well within the stuck
/// rule, so only the task whose owner goes silent is orphaned; the worker-died limit is kept.
const DEMO_OVERRIDES: [(&str, DemoValues, &str); 2] = [
    (
        "stuck",
        &[("no_reply_seconds", 60), ("sweep_seconds", 10)],
        "so the demo shows STUCK and the watchdog's orphaned task within minutes",
    ),
    (
        "ack",
        &[("within_seconds", 60)],
        "so the demo's task nobody ACKs turns red within minutes",
    ),
];

/// The fleet's rules with [`DEMO_OVERRIDES`], each value marked DEMO ONLY and each group's
/// source saying which of its values are the demo's (the escalations cite it).
fn demo_rules() -> String {
    let mut lines: Vec<String> = DEFAULT_RULES.lines().map(str::to_string).collect();
    for (group, changes, why) in DEMO_OVERRIDES {
        let start = lines
            .iter()
            .position(|l| *l == format!("{group}:"))
            .unwrap_or_else(|| panic!("the shipped rules declare {group}"));
        let end = lines[start + 1..]
            .iter()
            .position(|l| !l.starts_with("  "))
            .map_or(lines.len(), |n| start + 1 + n);
        let find = |lines: &[String], key: &str| {
            (start..end)
                .find(|&i| lines[i].trim_start().starts_with(&format!("{key}:")))
                .unwrap_or_else(|| panic!("the shipped rules declare {group}.{key}"))
        };
        let mut said = Vec::new();
        for (key, value) in changes {
            let i = find(&lines, key);
            let fleet = lines[i]
                .split_once(':')
                .map_or("", |(_, v)| v.trim())
                .to_string();
            lines[i] = format!(
                "  # DEMO ONLY: the fleet's value is {fleet} s; shortened {why}.\n  {key}: {value}"
            );
            said.push(format!("{key} {value} s instead of the fleet's {fleet} s"));
        }
        let i = find(&lines, "source");
        let source = lines[i].trim().trim_start_matches("source:").trim();
        let source = format!("DEMO: {} ({source})", said.join(", "));
        // A YAML double-quoted string: the fleet's source may quote the spec.
        lines[i] = format!(
            "  source: \"{}\"",
            source.replace('\\', "\\\\").replace('"', "\\\"")
        );
    }
    lines.iter().map(|l| format!("{l}\n")).collect()
}

/// The demo's report is due this many minutes after it starts.
const REPORT_AFTER_MIN: i64 = 3;

/// Writes the demo's config and rules (the htpasswd is [`login`]'s); returns the config path.
fn write_files(
    state_dir: &Path,
    fleet: &[Running],
    hosts: &str,
    dist_dir: Option<&Path>,
    intake: SocketAddr,
    tokens: &ReportTokens,
) -> Result<PathBuf> {
    let rules = state_dir.join("rules.yaml");
    std::fs::write(&rules, demo_rules())?;

    let mut toml = String::from(
        "# Written by `fleetdash demo`. The demo polls every 15 s (production default: 2 min)\n\
         # so that changes show quickly; the work queue too (production default: 60 s), so a\n\
         # report or the watchdog's verdict is on the page within 15 s.\n\
         output_dir = \"out\"\nstate_dir = \"state\"\nrules = \"rules.yaml\"\n\n\
         [cadence]\nagents = \"15s\"\nlive_tasks = \"10s\"\nboard = \"15s\"\nprojections = \"30s\"\n\
         systems = \"15s\"\ntunnels = \"10s\"\nbackups = \"30s\"\nqueue = \"15s\"\n\n\
         [probe]\ntimeout = \"3s\"\n\n[vault]\npath = \"vault\"\n\n\
         [serve]\nhtpasswd = \"htpasswd\"\n",
    );
    if let Some(dist) = dist_dir {
        toml.push_str(&format!("dist_dir = \"{}\"\n", dist.display()));
    }
    toml.push_str(&format!(
        "\n# The demo's agents report to this intake (a fresh queue at each start: its scenario\n\
         # replays); each with its own token, in report-tokens/ (0600).\n\
         [work_queue]\ndb = \"state/{QUEUE_DB}\"\n\n[intake]\nlisten = \"{intake}\"\n"
    ));
    for (r, token_file) in fleet.iter().zip(&tokens.files) {
        toml.push_str(&format!(
            "\n[[agents]]\nname = \"{}\"\nendpoint = \"{}\"\ndialect = \"{}\"\nplane = \"{}\"\nlane = \"{}\"\nmodel = \"{}\"\naudit_log = \"{}\"\n",
            r.spec.name,
            r.endpoint,
            r.spec.dialect,
            r.spec.plane,
            r.spec.lane,
            r.spec.model,
            r.audit_log.display()
        ));
        toml.push_str(&format!(
            "report_token_file = \"{}\"\n",
            token_file.display()
        ));
        let peer = collector_peer(r.spec);
        if peer != crate::config::defaults::COLLECTOR_PEER {
            toml.push_str(&format!(
                "# This plane knows the collector's token as {peer:?}: its audit logs say so.\n\
                 collector_peer = \"{peer}\"\n"
            ));
        }
    }
    // Real kanban databases on two planes; the vault receives their projections.
    let hermes = state_dir.join("hermes");
    for (board, db) in kanban::create(&hermes, &state_dir.join("vault"))? {
        toml.push_str(&format!(
            "\n[[boards]]\nname = \"{name}\"\nplane = \"{plane}\"\ndb = \"{}\"\n\
             projection = \"{plane}/Kanban/{name}.kanban\"\ndispatch_config = \"{}\"\n",
            db.display(),
            hermes.join("config.yaml").display(),
            name = board.name,
            plane = board.plane,
        ));
    }
    toml.push_str(hosts);
    // The morning report (issue 45), due a few minutes after the demo starts so that its
    // first one is there to read (the page's "Last report"); a fleet's is at the operator's
    // hour.
    let first = jiff::ZonedDateTime::now()
        .saturating_add(jiff::SignedDuration::from_mins(REPORT_AFTER_MIN));
    toml.push_str(&format!(
        "\n# DEMO ONLY: the report is due {REPORT_AFTER_MIN} min after the demo started (a fleet's: \
         its operator's hour, e.g. \"07:30\").\n[report]\nat = \"{:02}:{:02}\"\n",
        first.hour(),
        first.minute()
    ));
    let path = state_dir.join("fleetdash.toml");
    std::fs::write(&path, toml).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_demo_rules_shorten_the_queue_limits_and_say_so() {
        let text = demo_rules();
        let rules = crate::config::Rules::parse(Path::new("rules.yaml"), &text)
            .expect("the demo's rules parse");
        let shipped = crate::config::Rules::parse(Path::new("rules.yaml"), DEFAULT_RULES)
            .expect("the shipped rules parse");
        assert_eq!(
            (
                rules.no_reply.seconds,
                rules.sweep_every.seconds,
                rules.ack_within.seconds
            ),
            (60, 10, 60)
        );
        for rule in [&rules.no_reply, &rules.sweep_every, &rules.ack_within] {
            assert!(rule.source.starts_with("DEMO: "), "{}", rule.source);
        }
        assert!(
            rules
                .no_reply
                .source
                .contains("instead of the fleet's 300 s")
                && rules
                    .ack_within
                    .source
                    .contains("instead of the fleet's 600 s")
                && rules
                    .ack_within
                    .source
                    .contains("\"replies within minutes\""),
            "{} / {}",
            rules.no_reply.source,
            rules.ack_within.source
        );
        assert_eq!(text.matches("# DEMO ONLY").count(), 3);
        // The rest is the fleet's.
        assert_eq!(rules.worker_died, shipped.worker_died);
        assert_eq!(rules.exchange_green_below, shipped.exchange_green_below);
        // The demo's heartbeats keep owned tasks off the watchdog.
        assert!(scenario::HEARTBEAT_EVERY.as_secs() * 2 < rules.no_reply.seconds);
        assert!(rules.sweep_every.seconds < rules.no_reply.seconds);
    }
}

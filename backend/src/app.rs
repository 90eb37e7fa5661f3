//! The commands: each wires config, collectors, writers and server together, and nothing more.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use tokio_util::sync::CancellationToken;

use crate::collect::{self, SectionName};
use crate::config::{Config, ConfigErrors, Rules};
use crate::redact::RedactionGate;
use crate::server;
use crate::watchdog;
use crate::write::status_json::StatusWriter;

pub enum Failure {
    /// The config or rules file is wrong; `list_all` prints every error, else the first.
    Config {
        errors: ConfigErrors,
        list_all: bool,
    },
    Other(anyhow::Error),
    /// Leave with this code, already explained (cron-run passes on its job's exit code).
    Exit(u8),
}

impl From<anyhow::Error> for Failure {
    fn from(e: anyhow::Error) -> Self {
        Failure::Other(e)
    }
}

pub type Outcome = Result<(), Failure>;

fn load(path: &Path) -> Result<(Config, Rules), Failure> {
    let (config, rules) = Config::load(path).map_err(|errors| Failure::Config {
        errors,
        list_all: false,
    })?;
    crate::logging::guard_config_secrets(&config);
    Ok((config, rules))
}

/// The gate for this config: secret shapes plus the exact tokens the config points at.
pub fn gate_for(config: &Config) -> RedactionGate {
    let tokens = config.agents.iter().filter_map(|a| {
        crate::collect::agents::read_token(a.token.as_ref())
            .ok()
            .flatten()
    });
    RedactionGate::new(tokens)
}

pub async fn collect(path: &Path, only: Option<&[SectionName]>) -> Outcome {
    let (config, rules) = load(path)?;
    let writer = StatusWriter::new(&config.output_dir, &config.state_dir, gate_for(&config))?;
    let collectors = collect::from_config(&config, &rules, &gate_for(&config), only);
    // Live tasks are polled after the agents pass, which notes the ids heartbeats mention.
    let (later, first): (Vec<_>, Vec<_>) = collectors
        .iter()
        .partition(|c| c.section() == SectionName::LiveTasks);
    let mut updates =
        futures::future::join_all(first.iter().map(|c| collect::run_once(c.as_ref()))).await;
    updates.extend(
        futures::future::join_all(later.iter().map(|c| collect::run_once(c.as_ref()))).await,
    );
    let configured = collect::configured_sections(&config);
    let written = tokio::task::spawn_blocking(move || {
        writer
            .write(updates, &configured, rules.view())
            .map(|s| (s, writer))
    })
    .await
    .context("the snapshot writer failed")??;
    let (snapshot, writer) = written;
    tracing::info!(file = %writer.path().display(), stale = snapshot.stale, "snapshot written");
    Ok(())
}

pub async fn run(path: &Path) -> Outcome {
    let (config, rules) = load(path)?;
    let shutdown = CancellationToken::new();
    watchdog::cancel_on_signal(shutdown.clone());
    run_until(&config, &rules, shutdown).await?;
    Ok(())
}

/// The long-running collector, until `shutdown` is cancelled.
pub async fn run_until(
    config: &Config,
    rules: &Rules,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let writer = Arc::new(StatusWriter::new(
        &config.output_dir,
        &config.state_dir,
        gate_for(config),
    )?);
    let collectors = collect::from_config(config, rules, &gate_for(config), None);
    if collectors.is_empty() {
        tracing::warn!(config = %config.path.display(), "nothing to collect: the config lists no agents");
    }
    let configured = collect::configured_sections(config);
    tracing::info!(file = %writer.path().display(), "collecting");
    watchdog::run(collectors, writer, configured, rules.view(), shutdown).await;
    Ok(())
}

pub async fn serve(path: &Path, listen: Option<SocketAddr>) -> Outcome {
    let (config, _rules) = load(path)?;
    let options = server::ServeOptions::from_config(&config).map_err(|errors| Failure::Config {
        errors,
        list_all: false,
    })?;
    let addr = listen
        .or(config.serve.listen)
        .unwrap_or(server::DEFAULT_LISTEN);
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let shutdown = CancellationToken::new();
    watchdog::cancel_on_signal(shutdown.clone());
    eprintln!(
        "fleetdash: serving on http://{}/",
        listener.local_addr().context("local address")?
    );
    server::serve(listener, options, shutdown).await?;
    Ok(())
}

pub async fn demo(
    listen: SocketAddr,
    state_dir: Option<PathBuf>,
    dist_dir: Option<PathBuf>,
) -> Outcome {
    crate::demo::run(listen, state_dir, dist_dir).await?;
    Ok(())
}

pub fn check(path: &Path) -> Outcome {
    match Config::load(path) {
        Ok((config, rules)) => {
            println!(
                "{}: ok ({} agents, {} hosts, {} boards, {}; rules from {}: no_reply_seconds = {} [{}])",
                path.display(),
                config.agents.len(),
                config.hosts.len(),
                config.boards.len(),
                if config.backups.is_some() {
                    "backups"
                } else {
                    "no backups"
                },
                rules.path.display(),
                rules.no_reply.seconds,
                rules.no_reply.source
            );
            Ok(())
        }
        Err(errors) => Err(Failure::Config {
            errors,
            list_all: true,
        }),
    }
}

pub async fn sim_fleet(agents: usize, hang_percent: usize) -> Outcome {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .context("cannot bind a loopback port")?;
    let port = listener.local_addr().context("local address")?.port();
    println!("READY {port}");
    crate::demo::sim::serve_many(listener, agents, hang_percent)
        .await
        .context("the simulated fleet stopped")?;
    Ok(())
}

/// `fleetdash cron-run`: the record folder from `--dir`, or the config's state directory.
pub async fn cron_run(args: &crate::cron_run::CronRunArgs) -> Outcome {
    let dir = match (&args.dir, &args.config) {
        (Some(dir), _) => dir.clone(),
        (None, Some(path)) => {
            // Only the registry: a broken rules file must not stop a job from being recorded.
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read the config file {}", path.display()))?;
            let config = Config::parse(path, &text).map_err(|errors| Failure::Config {
                errors,
                list_all: false,
            })?;
            config
                .state_dir
                .join(crate::config::defaults::CRON_RECORDS_DIR)
        }
        (None, None) => {
            return Err(anyhow::anyhow!("cron-run needs --config FILE or --dir DIR").into());
        }
    };
    match crate::cron_run::run(args, &dir).await? {
        0 => Ok(()),
        code => Err(Failure::Exit(u8::try_from(code).unwrap_or(1))),
    }
}

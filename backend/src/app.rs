//! The commands: each wires config, collectors, writers and server together, and nothing more.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use tokio_util::sync::CancellationToken;

use crate::alerting::acks::{self, AckStore};
use crate::alerting::silences::SilenceStore;
use crate::clock::{Clock, Clocked};
use crate::collect::{self, Collection, SectionName, SectionUpdate};
use crate::config::maintenance::Matcher;
use crate::config::{self, Config, ConfigError, ConfigErrors, Rules};
use crate::queue::{
    Applied, Assignment, Dismissal, QueueRules, Refusal, Report, ReportKind, Reporter, RowRead,
    TaskRow, WorkQueue,
};
use crate::server;
use crate::watchdog;
use crate::watchdog::notify::Notifier;
use crate::write::Writer;

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

/// What a command that speaks ASC (`--json`) did: its words for a terminal, its result for a
/// machine, the ASC status of the outcome and the exit code it projects to (docs/cli.md).
pub struct Done {
    /// Printed on stdout without `--json`.
    pub text: String,
    /// The envelope's `result` with `--json`.
    pub result: serde_json::Value,
    pub status: fleetdash_model::Asc,
    pub exit: u8,
}

impl Done {
    pub fn ok(text: String, result: serde_json::Value) -> Done {
        Done {
            text,
            result,
            status: fleetdash_model::Asc::SUCCESS,
            exit: 0,
        }
    }
}

impl Failure {
    /// The ASC status of a failure, for the `--json` envelope.
    pub fn status(&self) -> fleetdash_model::Asc {
        match self {
            Failure::Config { .. } | Failure::Exit(2) => crate::problem::INVALID_REQUEST,
            Failure::Exit(_) => fleetdash_model::Asc::FAILED_PRECONDITION,
            Failure::Other(_) => fleetdash_model::Asc::INTERNAL_ERROR,
        }
    }
}

/// The config and its rules, the config's secrets given to the log's gate.
pub(crate) fn load(path: &Path) -> Result<(Config, Rules), Failure> {
    let (config, rules) = Config::load(path).map_err(|errors| Failure::Config {
        errors,
        list_all: false,
    })?;
    crate::logging::guard_config_secrets(&config);
    Ok((config, rules))
}

pub async fn collect(path: &Path, only: Option<&[SectionName]>) -> Result<Done, Failure> {
    let (config, rules) = load(path)?;
    // One pass: nothing observed before it, so ages are the wall clock's (a stamp ahead of it
    // still counts as now and is said).
    let clock = Clock::system(rules.clock.settings());
    let writer = Arc::new(crate::daemon::writer(&config, &rules, &clock)?);
    let collectors = collect::from_config(&config, &rules, only);
    // Live tasks are polled after the agents pass, once the write side has noted the ids its
    // heartbeats and audit logs mentioned.
    let (later, first): (Vec<_>, Vec<_>) = collectors.iter().partition(|c| c.follows_mentions());
    let collected =
        futures::future::join_all(first.iter().map(|c| collect::run_once(c.as_ref(), &clock)))
            .await;
    let mut updates = settle(&writer, collected).await?;
    let collected =
        futures::future::join_all(later.iter().map(|c| collect::run_once(c.as_ref(), &clock)))
            .await;
    updates.extend(settle(&writer, collected).await?);
    let configured = collect::configured_sections(&config);
    let written = tokio::task::spawn_blocking(move || {
        writer
            .write_settled(updates, &configured, rules.view())
            .map(|s| (s, writer))
    })
    .await
    .context("the snapshot writer failed")??;
    let (snapshot, writer) = written;
    tracing::info!(file = %writer.path().display(), stale = snapshot.stale, "snapshot written");
    let verdict = snapshot.verdict();
    Ok(Done::ok(
        String::new(),
        serde_json::json!({
            "file": writer.path(),
            "generated_at": snapshot.generated_at,
            "stale": snapshot.stale,
            "verdict": verdict.sentence(),
            "red": verdict.red,
            "amber": verdict.amber,
            "green": verdict.green,
        }),
    ))
}

/// The write side's share of `collections` (registry, escalations, projections), off the
/// async runtime.
async fn settle(
    writer: &Arc<Writer>,
    collections: Vec<Collection>,
) -> anyhow::Result<Vec<SectionUpdate>> {
    let writer = writer.clone();
    tokio::task::spawn_blocking(move || collections.into_iter().map(|c| writer.settle(c)).collect())
        .await
        .context("the write side failed")
}

/// `fleetdash run`: the daemon until SIGTERM or ctrl-c; SIGHUP reloads the config and rules.
/// A config that fails `check` is refused with its errors logged, and the running one goes on;
/// a good one replaces it: the running parts stop as at shutdown (the work queue closed, the
/// intake's port let go) and start again on the new config (should they fail to start, as at
/// a first start, `run` exits 1 and systemd restarts it). Under systemd (`Type=notify`),
/// READY after the first snapshot of each start or reload, STOPPING at shutdown.
pub async fn run(path: &Path) -> Outcome {
    let (mut config, mut rules) = load(path)?;
    crate::write::folders::tried(&config)
        .await
        .map_err(|errors| Failure::Config {
            errors,
            list_all: true,
        })?;
    let notifier = Notifier::from_env();
    let shutdown = CancellationToken::new();
    if let Err(e) = watchdog::cancel_on_signal(shutdown.clone()) {
        tracing::error!(
            "cannot handle SIGTERM ({e}): a SIGTERM (systemd's stop) ends the collector at once, \
             without finishing the write in progress; ctrl-c still stops it cleanly"
        );
    }
    // Said as soon as the stop begins; awaited before returning, or the runtime's end could
    // drop it unsent.
    let stopping = {
        let (notifier, shutdown) = (notifier.clone(), shutdown.clone());
        tokio::spawn(async move {
            shutdown.cancelled().await;
            notifier.stopping();
        })
    };
    let mut hangups = hangup_signal();
    // One clock for the whole run, kept across reloads: what it observed (ages, jumps) is not
    // forgotten because the config changed, unless its own rules did.
    let mut clock = Clock::system(rules.clock.settings());
    loop {
        if clock.settings() != rules.clock.settings() {
            clock = Clock::system(rules.clock.settings());
        }
        let generation = shutdown.child_token();
        let next = {
            let running = crate::daemon::run_notifying(
                &config,
                &rules,
                &notifier,
                &clock,
                generation.clone(),
            );
            tokio::pin!(running);
            let next = loop {
                tokio::select! {
                    ended = &mut running => {
                        ended?;
                        if shutdown.is_cancelled() {
                            let _ = stopping.await;
                        }
                        return Ok(());
                    }
                    Some(()) = hangup(&mut hangups) => {
                        if let Some(next) = reload(path).await {
                            break next;
                        }
                    }
                }
            };
            notifier.reloading();
            generation.cancel();
            running.await?;
            next
        };
        // A SIGTERM during the reload: stop here rather than start the new parts for nothing.
        if shutdown.is_cancelled() {
            let _ = stopping.await;
            return Ok(());
        }
        (config, rules) = next;
        // Only now: the old parts logged behind the old secrets until they stopped.
        crate::logging::guard_config_secrets(&config);
        tracing::info!(config = %path.display(), "reloaded: collecting with the new config");
    }
}

async fn hangup(signal: &mut Option<tokio::signal::unix::Signal>) -> Option<()> {
    match signal {
        Some(signal) => signal.recv().await,
        None => std::future::pending().await,
    }
}

/// The config and rules read again for SIGHUP, off the async runtime; `None` (every error
/// logged) when they fail `check`.
async fn reload(path: &Path) -> Option<(Config, Rules)> {
    tracing::info!(config = %path.display(), "SIGHUP: reading the config again");
    let target = path.to_path_buf();
    let loaded = match tokio::task::spawn_blocking(move || Config::load(&target)).await {
        Ok(loaded) => loaded,
        Err(e) => {
            tracing::error!("reading the config failed: {e}; the running config stays");
            return None;
        }
    };
    // A config whose folders cannot be written is refused like a broken one.
    let tried = match loaded {
        Ok(loaded) => crate::write::folders::tried(&loaded.0)
            .await
            .map(|()| loaded),
        Err(errors) => Err(errors),
    };
    tried.inspect_err(|errors| refused(path, errors)).ok()
}

/// `fleetdash serve` until SIGTERM or ctrl-c. SIGHUP rereads the config and the htpasswd: a
/// config or htpasswd that fails is refused with its errors logged, and the running server goes
/// on; good ones replace it. The listening socket stays open across a reload (connections wait
/// in its backlog for the new server; the old one finishes the requests it had), so its
/// address is kept: a new `[serve] listen` needs a restart.
pub async fn serve(path: &Path, listen: Option<SocketAddr>) -> Outcome {
    let (config, rules) = load(path)?;
    let addr = listen
        .or(config.serve.listen)
        .unwrap_or(server::DEFAULT_LISTEN);
    let mut options =
        server::ServeOptions::listening_on(&config, &rules, addr).map_err(|errors| {
            Failure::Config {
                errors,
                list_all: false,
            }
        })?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr} (--listen, or `[serve] listen`)"))?;
    let shutdown = CancellationToken::new();
    if let Err(e) = watchdog::cancel_on_signal(shutdown.clone()) {
        tracing::error!("cannot handle SIGTERM ({e}): a SIGTERM ends the server at once");
    }
    let bound = listener.local_addr().context("local address")?;
    eprintln!("fleetdash: serving on {}://{bound}/", options.scheme());
    let mut hangups = hangup_signal();
    // Each server gets its own handle on the one listening socket.
    let listener = listener.into_std().context("the listening socket")?;
    loop {
        let generation = shutdown.child_token();
        let handle = listener
            .try_clone()
            .and_then(tokio::net::TcpListener::from_std)
            .context("the listening socket")?;
        let mut running = tokio::spawn(server::serve(handle, options, generation.clone()));
        let next = loop {
            tokio::select! {
                ended = &mut running => {
                    ended.context("the server stopped")??;
                    return Ok(());
                }
                Some(()) = hangup(&mut hangups) => {
                    if let Some(next) = reload_serve(path, listen, bound).await {
                        break next;
                    }
                }
            }
        };
        generation.cancel();
        running.await.context("the server stopped")??;
        if shutdown.is_cancelled() {
            return Ok(());
        }
        options = next;
        tracing::info!(config = %path.display(), "reloaded: serving with the new config and htpasswd");
    }
}

/// The config and htpasswd read again for SIGHUP, off the async runtime; `None` (every error
/// logged) when either fails.
async fn reload_serve(
    path: &Path,
    listen: Option<SocketAddr>,
    bound: SocketAddr,
) -> Option<server::ServeOptions> {
    tracing::info!(config = %path.display(), "SIGHUP: reading the config and htpasswd again");
    let target = path.to_path_buf();
    let loaded = tokio::task::spawn_blocking(move || {
        let (config, rules) = Config::load(&target)?;
        let options = server::ServeOptions::listening_on(&config, &rules, bound)?;
        Ok::<_, ConfigErrors>((config, options))
    })
    .await;
    match loaded {
        Ok(Ok((config, options))) => {
            if listen.is_none()
                && let Some(wanted) = config.serve.listen
                && wanted != bound
            {
                tracing::warn!(
                    config = %path.display(),
                    "serve.listen is now {wanted}: still serving on {bound} until a restart"
                );
            }
            crate::logging::guard_config_secrets(&config);
            Some(options)
        }
        Ok(Err(errors)) => {
            refused(path, &errors);
            None
        }
        Err(e) => {
            tracing::error!("reading the config failed: {e}; the running config stays");
            None
        }
    }
}

fn hangup_signal() -> Option<tokio::signal::unix::Signal> {
    match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) {
        Ok(signal) => Some(signal),
        Err(e) => {
            tracing::error!("cannot handle SIGHUP ({e}): reloading needs a restart");
            None
        }
    }
}

/// Logs every error of a config refused at SIGHUP.
fn refused(path: &Path, errors: &ConfigErrors) {
    for e in &errors.0 {
        tracing::error!("{e}");
    }
    tracing::error!(
        config = %path.display(),
        "the new config is refused ({} error{}; `fleetdash check --config {}` lists them): the \
         running config stays",
        errors.0.len(),
        if errors.0.len() == 1 { "" } else { "s" },
        path.display()
    );
}

pub async fn demo(
    listen: SocketAddr,
    state_dir: Option<PathBuf>,
    dist_dir: Option<PathBuf>,
    new_password: bool,
) -> Outcome {
    crate::demo::run(listen, state_dir, dist_dir, new_password).await?;
    Ok(())
}

/// `fleetdash page export DIR`: the embedded page written out, one line per file (what was
/// written, left as it was, removed); a refusal or a failed write names DIR and exits 1.
pub async fn page_export(dir: &Path) -> Outcome {
    let target = dir.to_path_buf();
    let done = tokio::task::spawn_blocking(move || crate::page::export(&target))
        .await
        .context("the export thread failed")??;
    for (what, names) in [
        ("written", &done.written),
        ("unchanged", &done.unchanged),
        ("removed", &done.removed),
    ] {
        for name in names {
            println!("{what:<9} {}", dir.join(name).display());
        }
    }
    println!(
        "{}: the page ({} files written, {} unchanged, {} earlier removed)",
        dir.display(),
        done.written.len(),
        done.unchanged.len(),
        done.removed.len()
    );
    Ok(())
}

/// `fleetdash check`: every mistake of the config and its rules at once (exit 2), and a
/// warning for each file the config names that is missing or unreadable now (these do not
/// fail it: the collector reports such files as data when it runs).
pub fn check(path: &Path) -> Result<Done, Failure> {
    let inspection = config::inspect(path);
    let warnings = inspection.warnings();
    for warning in &warnings {
        eprintln!("fleetdash: {warning}");
    }
    match inspection.loaded {
        Some((config, rules)) if inspection.errors.is_empty() => {
            let text = format!(
                "{}: ok ({} agents, {} hosts, {} boards, {}; rules: {}; no_reply_seconds = {} [{}])\n",
                path.display(),
                config.agents.len(),
                config.hosts.len(),
                config.boards.len(),
                if config.backups.is_some() {
                    "backups"
                } else {
                    "no backups"
                },
                rules.origin.words(),
                rules.no_reply.seconds,
                rules.no_reply.source
            );
            if !warnings.is_empty() {
                eprintln!(
                    "fleetdash: {} warning{}, about files the config names that are missing or \
                     unreadable now; warnings do not fail check",
                    warnings.len(),
                    if warnings.len() == 1 { "" } else { "s" }
                );
            }
            let mut done = Done::ok(
                text,
                serde_json::json!({
                    "config": path,
                    "rules": rules.origin,
                    "agents": config.agents.len(),
                    "hosts": config.hosts.len(),
                    "boards": config.boards.len(),
                    "backups": config.backups.is_some(),
                    "warnings": warnings.iter().map(ToString::to_string).collect::<Vec<_>>(),
                }),
            );
            if !warnings.is_empty() {
                done.status = fleetdash_model::Asc::SUCCESS_WITH_WARNINGS;
            }
            Ok(done)
        }
        _ => Err(Failure::Config {
            errors: ConfigErrors(inspection.errors),
            list_all: true,
        }),
    }
}

/// `fleetdash doctor`: every finding, worst first within each check's order, one line each
/// (level, check, subject, what, and the fix); exit 0 when all is ok, 1 when anything warns or
/// fails (the envelope's status is the worst finding's).
pub async fn doctor(path: &Path, options: &crate::doctor::Options) -> Result<Done, Failure> {
    use crate::doctor::Level;
    let findings = crate::doctor::examine(path, options).await;
    let worst = crate::doctor::worst(&findings);
    let mut text = String::new();
    for f in &findings {
        text.push_str(&format!(
            // " — ", not ": ": a subject such as ".../htpasswd" or "agent min's token" followed
            // by a colon is a secret's shape to the redaction gate, which would eat the words.
            "{:<4}  {:<8}  {} — {}\n",
            f.level.word(),
            f.check,
            f.subject,
            f.detail
        ));
        if let Some(fix) = f.fix.as_deref().filter(|_| f.level != Level::Ok) {
            text.push_str(&format!("                fix: {fix}\n"));
        }
    }
    let count = |level| findings.iter().filter(|f| f.level == level).count();
    text.push_str(&format!(
        "{}: {} ok, {} warn, {} fail\n",
        path.display(),
        count(Level::Ok),
        count(Level::Warn),
        count(Level::Fail)
    ));
    let status = findings
        .iter()
        .filter(|f| f.level == worst)
        .map(|f| f.status.clone())
        .next()
        .unwrap_or(fleetdash_model::Asc::SUCCESS);
    Ok(Done {
        text,
        result: serde_json::json!({ "worst": worst, "findings": findings }),
        status,
        exit: if worst == Level::Ok { 0 } else { 1 },
    })
}

/// The work queue the config names, opened; a config without `[work_queue] db` is a config
/// error naming the key.
async fn work_queue(config: &Config, rules: &Rules) -> Result<WorkQueue, Failure> {
    let Some(wq) = &config.work_queue else {
        return Err(no_work_queue(config));
    };
    WorkQueue::open(&wq.db, QueueRules::of(rules))
        .await
        .map_err(|e| Failure::Other(anyhow::anyhow!(e)))
}

/// The work-queue commands' refusal when the config has no queue.
fn no_work_queue(config: &Config) -> Failure {
    Failure::Config {
        errors: ConfigErrors(vec![ConfigError {
            file: config.path.clone(),
            line: None,
            field: "work_queue.db".into(),
            message: "missing; the work queue commands need `[work_queue] db = \"...\"`".into(),
        }]),
        list_all: false,
    }
}

/// `fleetdash task assign`: the operator's assignment, applied like any report.
pub async fn task_assign(
    path: &Path,
    to: Option<String>,
    tags: Vec<String>,
    deadline: Option<std::time::Duration>,
    title: &str,
) -> Result<Done, Failure> {
    let (config, rules) = load(path)?;
    let now = chrono::Utc::now();
    let deadline = match deadline.map(|d| crate::clock::ahead(now, d)) {
        None => None,
        Some(Ok(at)) => Some(at),
        Some(Err(why)) => {
            eprintln!("fleetdash: task assign: --deadline: {why}");
            return Err(Failure::Exit(2));
        }
    };
    let queue = work_queue(&config, &rules).await?;
    let report = Report {
        from: Reporter::Operator,
        message_id: format!("cli-{}", uuid::Uuid::new_v4()),
        context_id: None,
        received_at: now,
        kind: ReportKind::Assign(Assignment {
            title: crate::text::clean(title, crate::queue::store::TITLE_MAX_CHARS),
            owner: to,
            tagged: tags,
            deadline,
        }),
    };
    let answer = queue.apply(report).await;
    queue.close().await?;
    match answer {
        Ok(Applied {
            task: Some(task), ..
        }) => {
            let at = Clocked::wall_only(now);
            let verdict = crate::queue::judge(&task, &QueueRules::of(&rules), &at);
            Ok(Done::ok(
                format!("{}\n", task_line(&task, &rules, &at)),
                serde_json::json!({
                    "id": task.id,
                    "title": task.title,
                    "owner": task.owner,
                    "tagged": task.tagged,
                    "state": task.state.as_str(),
                    "band": verdict.band,
                    "reason": verdict.reason,
                    "deadline": task.deadline,
                }),
            ))
        }
        Ok(Applied { task: None, .. }) => Err(anyhow::anyhow!("the queue answered no task").into()),
        Err(Refusal::Invalid(why)) => {
            eprintln!("fleetdash: task assign: {why}");
            Err(Failure::Exit(2))
        }
        Err(refusal) => Err(anyhow::anyhow!("task assign: {refusal:?}").into()),
    }
}

/// The silences file of this config's state_dir, read and written on a blocking thread (fsync).
async fn with_silences<T: Send + 'static>(
    path: &Path,
    work: impl FnOnce(&SilenceStore, chrono::DateTime<chrono::Utc>) -> anyhow::Result<T>
    + Send
    + 'static,
) -> Result<T, Failure> {
    let (config, _rules) = load(path)?;
    let gate = config.gate();
    let state_dir = config.state_dir.clone();
    let done = tokio::task::spawn_blocking(move || {
        std::fs::create_dir_all(&state_dir)
            .with_context(|| format!("cannot create {}", state_dir.display()))?;
        work(&SilenceStore::new(&state_dir, gate), chrono::Utc::now())
    })
    .await
    .context("the silences task panicked")??;
    Ok(done)
}

/// `fleetdash silence add MATCHER... --for 2h --reason "..."`.
pub async fn silence_add(
    path: &Path,
    matchers: &[String],
    length: std::time::Duration,
    reason: &str,
) -> Result<Done, Failure> {
    let mut parsed = Vec::new();
    for m in matchers {
        match Matcher::parse(m) {
            Ok(matcher) => parsed.push(matcher),
            Err(why) => {
                eprintln!("fleetdash: silence add: {why}");
                return Err(Failure::Exit(2));
            }
        }
    }
    let length = match crate::clock::ahead(chrono::Utc::now(), length) {
        Err(why) => Err(format!("--for: {why}")),
        Ok(_) => chrono::Duration::from_std(length)
            .ok()
            .filter(|l| *l > chrono::Duration::zero())
            .ok_or_else(|| "--for must be longer than zero, e.g. 2h".to_string()),
    };
    let length = length.map_err(|why| {
        eprintln!("fleetdash: silence add: {why}");
        Failure::Exit(2)
    })?;
    let reason = reason.to_string();
    let silence = with_silences(path, move |store, now| {
        store.add(parsed, length, &reason, now)
    })
    .await?;
    Ok(Done::ok(
        format!("{}\n", silence.line()),
        serde_json::json!({
            "id": silence.id,
            "start": silence.start,
            "end": silence.end,
            "matchers": silence.matchers.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "reason": silence.reason,
        }),
    ))
}

/// `fleetdash silence list`: the active silences, soonest end first, then the config's
/// maintenance windows open now.
pub async fn silence_list(path: &Path) -> Outcome {
    let mut active = with_silences(path, |store, now| {
        Ok(store
            .load(now)?
            .into_iter()
            .filter(|s| s.active_at(now))
            .collect::<Vec<_>>())
    })
    .await?;
    active.sort_by_key(|s| s.end);
    let (config, _rules) = load(path)?;
    let now = chrono::Utc::now();
    let windows: Vec<String> = config
        .alerts
        .maintenance
        .iter()
        .filter_map(|w| {
            let until = w.until(now)?;
            let matchers: Vec<String> = w.matchers.iter().map(ToString::to_string).collect();
            Some(format!(
                "window  until {}  {}  {}",
                until.format("%Y-%m-%d %H:%M UTC"),
                matchers.join(" "),
                w.reason
            ))
        })
        .collect();
    if active.is_empty() && windows.is_empty() {
        println!("no active silences");
    }
    for s in &active {
        println!("{}", s.line());
    }
    for w in &windows {
        println!("{w}");
    }
    Ok(())
}

/// `fleetdash silence end ID`.
pub async fn silence_end(path: &Path, id: &str) -> Outcome {
    let id = id.to_string();
    let ended = with_silences(path, move |store, now| store.end(&id, now)).await?;
    println!("ended {}", ended.line());
    Ok(())
}

/// The acks file of this config's state_dir, read and written on a blocking thread (fsync).
async fn with_acks<T: Send + 'static>(
    path: &Path,
    work: impl FnOnce(&AckStore, chrono::DateTime<chrono::Utc>) -> anyhow::Result<T> + Send + 'static,
) -> Result<T, Failure> {
    let (config, _rules) = load(path)?;
    let gate = config.gate();
    let state_dir = config.state_dir.clone();
    let done = tokio::task::spawn_blocking(move || {
        std::fs::create_dir_all(&state_dir)
            .with_context(|| format!("cannot create {}", state_dir.display()))?;
        work(&AckStore::new(&state_dir, gate), chrono::Utc::now())
    })
    .await
    .context("the acks task panicked")??;
    Ok(done)
}

fn ack_line(a: &acks::Ack) -> String {
    format!(
        "{}  acked {}  {}  (alert since {})",
        a.key,
        a.at.format("%Y-%m-%d %H:%M UTC"),
        a.via,
        a.since.format("%Y-%m-%d %H:%M UTC")
    )
}

/// `fleetdash ack KEY`: the open alert of KEY acknowledged from the command line.
pub async fn ack(path: &Path, key: &str) -> Result<Done, Failure> {
    let key = key.to_string();
    let ack = with_acks(path, move |store, now| store.ack(&key, now, "cli")).await?;
    Ok(Done::ok(
        format!("{}\n", ack_line(&ack)),
        serde_json::json!({
            "key": ack.key,
            "at": ack.at,
            "via": ack.via,
            "since": ack.since,
        }),
    ))
}

/// `fleetdash ack --list`: the acks whose alert is still open, oldest first.
pub async fn ack_list(path: &Path) -> Outcome {
    let mut acks = with_acks(path, |store, now| store.standing(now)).await?;
    acks.sort_by_key(|a| a.at);
    if acks.is_empty() {
        println!("no standing acks");
    }
    for a in &acks {
        println!("{}", ack_line(a));
    }
    Ok(())
}

/// `fleetdash ack --end KEY`.
pub async fn ack_end(path: &Path, key: &str) -> Outcome {
    let key = key.to_string();
    let ended = with_acks(path, move |store, now| store.end(&key, now)).await?;
    println!("ended {}", ack_line(&ended));
    Ok(())
}

/// `fleetdash mcp`: the fleet's answers as MCP tools on stdin/stdout, until the client closes
/// them. stdout is the protocol's: the log goes to stderr, as always.
pub async fn mcp(path: &Path, operator: bool) -> Outcome {
    let (config, rules) = load(path)?;
    let role = if operator {
        crate::mcp::McpRole::Operator
    } else {
        crate::mcp::McpRole::Hub
    };
    crate::mcp::serve_stdio(&config, &rules, role).await?;
    Ok(())
}

/// `fleetdash tasks`: the queue in a terminal, red rows first (a row that cannot be read among
/// them), newest first within a band; then the dismissed ones, which the dashboard no longer
/// shows. Every task the file keeps is listed, those past the dashboard's retention too.
pub async fn tasks(path: &Path) -> Outcome {
    use std::io::Write as _;
    let (config, rules) = load(path)?;
    let Some(work_queue) = &config.work_queue else {
        return Err(no_work_queue(&config));
    };
    // Read-only: `fleetdash run` may hold the queue's one writer right now.
    let db = work_queue.db.clone();
    let view = tokio::task::spawn_blocking(move || crate::queue::rows::read_only(&db))
        .await
        .map_err(|e| anyhow::anyhow!(e))?
        .map_err(|e| anyhow::anyhow!(e))?;
    // A one-shot command observed nothing before: the wall clock alone.
    let now = &Clocked::wall_only(chrono::Utc::now());
    let not_created = view.not_created;
    let (dismissed, shown): (Vec<_>, Vec<_>) = view.tasks.into_iter().partition(|row| match row {
        Ok(row) => row.dismissed_at.is_some(),
        Err(bad) => bad.dismissed_at.is_some(),
    });
    let band = |row: &RowRead| match row {
        Ok(row) => crate::queue::judge(row, &QueueRules::of(&rules), now).band,
        Err(_) => fleetdash_model::Band::Red,
    };
    let mut rows: Vec<_> = shown.into_iter().map(|row| (band(&row), row)).collect();
    // Stable: newest first within a band, as listed.
    rows.sort_by_key(|(band, _)| std::cmp::Reverse(*band));
    let mut out = String::new();
    if rows.is_empty() && dismissed.is_empty() {
        let empty = match not_created {
            true => "no tasks yet: fleetdash run creates the work queue",
            false => "the work queue is empty",
        };
        out.push_str(&format!("{empty} ({})\n", work_queue.db.display()));
    } else {
        out.push_str(&crate::queue::judge::heads());
        out.push('\n');
    }
    for (_, row) in &rows {
        out.push_str(&row_line(row, &rules, now));
        out.push('\n');
    }
    if !dismissed.is_empty() {
        out.push_str("dismissed (not on the dashboard):\n");
    }
    for row in &dismissed {
        out.push_str(&row_line(row, &rules, now));
        out.push('\n');
    }
    // A reader that stops early (`fleetdash tasks | head`) is not an error.
    match std::io::stdout().lock().write_all(out.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(anyhow::anyhow!(e).into()),
        _ => Ok(()),
    }
}

/// One row of `fleetdash tasks`: a task's line, with when it was dismissed if it was; or a row
/// that cannot be read, red, with its id and why.
fn row_line(row: &RowRead, rules: &Rules, now: &Clocked) -> String {
    let utc = |t: chrono::DateTime<chrono::Utc>| t.format("%Y-%m-%d %H:%M UTC").to_string();
    match row {
        Ok(task) => {
            let line = task_line(task, rules, now);
            match task.dismissed_at {
                Some(at) => format!("{line}  (dismissed {})", utc(at)),
                None => line,
            }
        }
        Err(bad) => {
            let red = fleetdash_model::Band::Red;
            let mut line = format!(
                "{:<14}  {:<12}  {:<24}  {:<14}  {} {:<4}  unreadable: {}  -",
                bad.id,
                "-",
                "-",
                "?",
                red.icon(),
                red.word(),
                bad.reason
            );
            if let Some(at) = bad.dismissed_at {
                line.push_str(&format!("  (dismissed {})", utc(at)));
            }
            line
        }
    }
}

/// `fleetdash task dismiss ID`: the operator takes a task off the dashboard (recorded in the
/// queue's events; the row stays, `fleetdash tasks` still lists it) and its alert ends, said as
/// dismissed. An open task only with `cancel` (canceled first); an unknown id fails naming it;
/// a second dismissal changes nothing and says so.
pub async fn task_dismiss(path: &Path, id: &str, cancel: bool) -> Outcome {
    let (config, rules) = load(path)?;
    let Some(wq) = &config.work_queue else {
        return Err(no_work_queue(&config));
    };
    // Opening the queue would create it: an id cannot be in a file that is not there.
    if !wq.db.exists() {
        eprintln!(
            "fleetdash: task dismiss: no task {id}: {}: no work queue file",
            wq.db.display()
        );
        return Err(Failure::Exit(1));
    }
    let queue = work_queue(&config, &rules).await?;
    let answer = queue.dismiss(id, cancel, chrono::Utc::now()).await;
    queue.close().await?;
    let utc = |t: chrono::DateTime<chrono::Utc>| t.format("%Y-%m-%d %H:%M UTC").to_string();
    let gone = "no longer on the dashboard (the queue's file keeps it); its alert, if any, ends";
    match answer {
        Ok(Dismissal::Dismissed { task, canceled }) => {
            match *task {
                Ok(task) => {
                    let state = task.state.as_str().trim_start_matches("TASK_STATE_");
                    let done = if canceled {
                        "canceled and dismissed"
                    } else {
                        "dismissed"
                    };
                    println!(
                        "{done} {} \"{}\" ({}): {gone}",
                        task.id,
                        task.title,
                        state.to_ascii_lowercase()
                    );
                }
                Err(bad) => println!(
                    "dismissed {} (a row that cannot be read: {}): {gone}",
                    bad.id, bad.reason
                ),
            }
            Ok(())
        }
        Ok(Dismissal::Already { at }) => {
            println!("{id} was already dismissed at {}: nothing to do", utc(at));
            Ok(())
        }
        Err(Refusal::UnknownTask(id)) => {
            eprintln!(
                "fleetdash: task dismiss: no task {id} in the work queue ({})",
                wq.db.display()
            );
            Err(Failure::Exit(1))
        }
        Err(Refusal::Invalid(why)) => {
            eprintln!("fleetdash: task dismiss: {why}");
            Err(Failure::Exit(1))
        }
        Err(refusal) => Err(anyhow::anyhow!("task dismiss: {refusal:?}").into()),
    }
}

/// One task on one line, as the queue words it ([`crate::queue::judge::line`]).
fn task_line(row: &TaskRow, rules: &Rules, now: &Clocked) -> String {
    crate::queue::judge::line(row, &QueueRules::of(rules), now)
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
pub async fn cron_run(args: &crate::cron_run::CronRunArgs) -> Result<Done, Failure> {
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
    let code = crate::cron_run::run(args, &dir).await?;
    let exit = u8::try_from(code).unwrap_or(1);
    Ok(Done {
        text: String::new(),
        result: serde_json::json!({
            "job": args.name,
            "exit_code": code,
            "record": dir.join(format!("{}.json", args.name)),
        }),
        status: if code == 0 {
            fleetdash_model::Asc::SUCCESS
        } else {
            fleetdash_model::Asc::INTERNAL_ERROR
        },
        exit,
    })
}

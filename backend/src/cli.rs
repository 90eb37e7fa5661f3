//! Command-line interface: parses arguments, runs the command, turns errors into one clear
//! line on stderr and an exit code, a lossy projection of the outcome (docs/cli.md): 0 done,
//! 1 findings or could not do it, 2 bad config or usage; `cron-run` exits with its job's code.
//! With `--json`, the commands that take it also write the full ASC envelope as one JSON line
//! (seed 000: "exit status is not a substitute for the envelope").

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};

use crate::app;
use crate::collect::SectionName;

/// glibc's malloc arenas for the whole process (`M_ARENA_MAX`).
///
/// glibc gives each thread that allocates an arena of its own, up to 8 per core; what one arena
/// frees, the others cannot reuse. The async runtime's workers and its blocking threads (the
/// audit tails) all allocate, and in the agents_pass bench (1,000 agents, concurrency 256) the
/// collector's peak RSS grew pass after pass with glibc's default (VmHWM 28.8 and 29.4 MB after
/// 10 passes) and less with one arena (24.8 and 26.0 MB), at the same pass time (issue 35). The
/// process is I/O bound on a few threads, so one lock costs it nothing measurable.
pub const MALLOC_ARENAS: i32 = 1;

/// Sets [`MALLOC_ARENAS`]; before any other thread starts, so that none has an arena of its
/// own yet. The agents_pass bench calls it too, to measure what the binary runs. glibc only.
pub fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallopt takes two integers and is safe to call at any time; a refused
        // setting (it returns 0) leaves glibc's default, which is only a larger footprint.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, MALLOC_ARENAS);
        }
    }
}

#[derive(Parser)]
#[command(
    name = "fleetdash",
    version,
    about = "An honest dashboard for a fleet of A2A agents."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run one collection pass, write status.json, exit. Probe failures are data: exits 0
    /// whenever a snapshot was written.
    Collect {
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
        /// Also write the outcome as one ASC envelope (a JSON line) on stdout.
        #[arg(long)]
        json: bool,
        /// Collect only these sections (comma-separated: tasks, agents, systems, backups); the
        /// others keep what the previous snapshot had.
        #[arg(long, value_delimiter = ',', value_name = "SECTIONS")]
        only: Option<Vec<SectionName>>,
    },
    /// Run every collector on its cadence until SIGTERM or ctrl-c.
    Run {
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
    },
    /// Serve the page and /api/status.json behind HTTP basic auth (for use without nginx).
    Serve {
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
        /// Address to listen on; the config's [serve] listen, else 127.0.0.1:8080.
        #[arg(long, value_name = "ADDR")]
        listen: Option<SocketAddr>,
    },
    /// Start a simulated fleet of 11 agents, collect it and serve the dashboard.
    Demo {
        #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
        listen: SocketAddr,
        /// Where the demo keeps everything it writes (default: a fresh temporary directory).
        #[arg(long, value_name = "DIR")]
        state_dir: Option<PathBuf>,
        /// A built page to serve (scripts/build-frontend's frontend/dist) instead of the one
        /// built into fleetdash.
        #[arg(long, value_name = "DIR")]
        dist_dir: Option<PathBuf>,
        /// Make a new password even though the state directory keeps one (the password is
        /// printed at the first start of a state directory and kept for it).
        #[arg(long)]
        new_password: bool,
    },
    /// The page built into fleetdash: `page export DIR` writes it out for nginx.
    Page {
        #[command(subcommand)]
        command: PageCommand,
    },
    /// Validate the config and the rules file; report every error with file, line and field.
    Check {
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
        /// Also write the outcome as one ASC envelope (a JSON line) on stdout.
        #[arg(long)]
        json: bool,
    },
    /// What an installation gets wrong, each with its fix (read-only): config and rules,
    /// folders the service cannot write, state reachable through nginx, htpasswd and token
    /// file modes, boards (the WAL hazard), agents and hosts not answering, clock skew, the
    /// nginx site. Exits 0 when all is ok, 1 when anything warns or fails.
    Doctor {
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
        /// The user the service runs as (default: `fleetdash` if it exists, else you).
        #[arg(long, value_name = "USER")]
        user: Option<String>,
        /// The nginx site in front of the page (default: found under /etc/nginx).
        #[arg(long, value_name = "FILE")]
        nginx_site: Option<PathBuf>,
        /// Skip the checks that go over the network (agents, hosts, clock).
        #[arg(long)]
        offline: bool,
        /// Also write the findings as one ASC envelope (a JSON line) on stdout.
        #[arg(long)]
        json: bool,
    },
    /// The work queue: assign a task (`task assign`), take one off the dashboard (`task
    /// dismiss`).
    Task {
        #[command(subcommand)]
        command: TaskCommand,
    },
    /// Silences: hold back an element's alerts for a while (`silence add host=lab --for 2h
    /// --reason "disk swap"`), list the active ones, end one early. Monitoring goes on.
    Silence {
        #[command(subcommand)]
        command: SilenceCommand,
    },
    /// Acknowledge an open alert: its reminders stop until its element's band changes (it
    /// recovers, or a new red run begins); the page says "acked 14:02". A key with no open
    /// alert is refused (exit 1), naming what is open. `--list` the standing acks, `--end KEY`
    /// to have reminders again.
    Ack {
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
        /// The standing acks, one line each: key, when, where from, the alert's start.
        #[arg(long, conflicts_with_all = ["key", "end", "json"])]
        list: bool,
        /// End the ack of KEY now: its reminders go out again.
        #[arg(long, conflicts_with = "json")]
        end: bool,
        /// Also write the outcome as one ASC envelope (a JSON line) on stdout.
        #[arg(long)]
        json: bool,
        /// The element, as the transitions log keys it: agent:min, host:lab/tunnel:lab-heart.
        #[arg(value_name = "KEY", required_unless_present = "list")]
        key: Option<String>,
    },
    /// List the work queue: id, owner, ACK, state, band and reason, one line each, red first;
    /// then the dismissed tasks.
    Tasks {
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
    },
    /// Serve the fleet's answers as MCP tools over stdin/stdout (fleet_status, needs_you,
    /// explain, changes_since, work_queue, report), for an agent on this host; read-only
    /// (docs/agents.md).
    Mcp {
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
        /// As the operator: the assign_task and silence tools work too (without it, the hub
        /// agent's read-only role).
        #[arg(long)]
        operator: bool,
    },
    /// Write a config for your own fleet, learning each agent from its card.
    ///
    /// Asks for (or takes) the endpoints, boards, vault, channel and address, learns each
    /// agent's name, dialect and skills from its card, and writes the commented config, the
    /// page's login (its password printed once) and a report token per agent. Run again, it
    /// adds what is new and changes nothing you wrote.
    Init(InitArgs),
    /// The rules fleetdash judges by: `rules show` prints them as a rules file to start from.
    Rules {
        #[command(subcommand)]
        command: RulesCommand,
    },
    /// What the fleet did since a moment, worst first, as the morning report says it: what
    /// needs you now, what went wrong and came back, red time, the work queue, fleetdash's own
    /// blind spots. Sends nothing.
    Report {
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
        /// "8h" (back from now), "07:30" (the last one passed) or an RFC 3339 moment; default:
        /// since the last scheduled report, else the last 24 h.
        #[arg(long, value_name = "DUR|TIME")]
        since: Option<String>,
        /// Write the report as one ASC envelope (a JSON line) on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Alert channels: `alerts test [CHANNEL]` sends a test notification through each.
    Alerts {
        #[command(subcommand)]
        command: AlertsCommand,
    },
    /// Run a cron job and record its start, finish and exit code for the dashboard (its output
    /// is passed through, never stored); exits with the job's exit code.
    CronRun(crate::cron_run::CronRunArgs),
    /// Serve many simulated agents under one port (for benchmarks and tests).
    #[command(hide = true)]
    SimFleet {
        #[arg(long, default_value_t = 1000)]
        agents: usize,
        /// Percentage of agents that accept requests and never answer.
        #[arg(long, default_value_t = 10)]
        hang_percent: usize,
    },
}

#[derive(clap::Args)]
struct InitArgs {
    /// The config to write or add to; the other files go beside it.
    #[arg(long, value_name = "FILE", default_value = crate::init::DEFAULT_CONFIG)]
    config: PathBuf,
    /// An agent's URL, HOST:PORT, or a range such as 127.0.0.1:18301-18313 (repeat for more).
    #[arg(long = "agents", value_name = "SPEC")]
    agents: Vec<String>,
    /// A Hermes board: its slug and its kanban.db (repeat for more).
    #[arg(long = "board", value_name = "NAME=DB")]
    boards: Vec<String>,
    /// The vault's git checkout.
    #[arg(long, value_name = "PATH")]
    vault: Option<PathBuf>,
    /// An ntfy topic for alerts, e.g. https://ntfy.sh/my-topic.
    #[arg(long, value_name = "URL", conflicts_with = "webhook")]
    ntfy: Option<String>,
    /// A webhook for alerts instead (a JSON POST per alert).
    #[arg(long, value_name = "URL")]
    webhook: Option<String>,
    /// The report of the night at this hour, HH:MM in this host's zone (docs/report.md).
    #[arg(long, value_name = "HH:MM")]
    report: Option<String>,
    /// serve's address (default 127.0.0.1:8080).
    #[arg(long, value_name = "ADDR")]
    listen: Option<SocketAddr>,
    /// Never ask (also when stdin is not a terminal): flags and defaults only.
    #[arg(long)]
    yes: bool,
    /// A new password for the page although the htpasswd exists (the old one stops working).
    #[arg(long)]
    new_password: bool,
}

#[derive(Subcommand)]
enum PageCommand {
    /// Write the page (index.html and its hashed assets, each with its pre-compressed .gz) into
    /// DIR, nginx's root (nginx/README.md). DIR may be missing, empty, or an earlier export,
    /// which is replaced (index.html last; the assets it no longer names removed); a DIR holding
    /// anything else is refused untouched.
    Export {
        #[arg(value_name = "DIR")]
        dir: PathBuf,
    },
}

#[derive(Subcommand)]
enum RulesCommand {
    /// Print the rules as a rules file: the built-in ones as shipped (`fleetdash rules show >
    /// rules.yaml` starts a file equal to them); with --config, the rules in force (the rules
    /// file's groups in place of the built-in ones). Exits 2 on a bad config or rules file.
    Show {
        /// The config whose rules to show (default: the built-in rules alone).
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// Also write the outcome as one ASC envelope (a JSON line) on stdout.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum AlertsCommand {
    /// Send a test notification through each configured channel (or CHANNEL), through the
    /// outbox as real alerts go, saying it is a test; one line per channel (delivered, refused
    /// and why, retrying and why). Exits 0 when every channel delivered, 1 otherwise, 2 for an
    /// unknown CHANNEL. A running `fleetdash run` is not disturbed and counts no alert.
    Test {
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
        /// Also write the outcome as one ASC envelope (a JSON line) on stdout.
        #[arg(long)]
        json: bool,
        /// The channel to try (its `name` in the config); default: every channel.
        #[arg(value_name = "CHANNEL")]
        channel: Option<String>,
    },
}

#[derive(Subcommand)]
enum TaskCommand {
    /// Assign a task as the operator: written to the work queue like an agent's "assign"
    /// report, the title truncated and through the redaction gate.
    Assign {
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
        /// The agent that owns it; without it, the first tagged agent to ACK owns it.
        #[arg(long, value_name = "AGENT")]
        to: Option<String>,
        /// An agent the task is also for (repeat for several).
        #[arg(long = "tag", value_name = "AGENT")]
        tags: Vec<String>,
        /// Due this long from now, e.g. "2h" or "45m".
        #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
        deadline: Option<Duration>,
        /// Also write the outcome as one ASC envelope (a JSON line) on stdout.
        #[arg(long)]
        json: bool,
        /// What is to be done.
        title: String,
    },
    /// Take a task off the dashboard as the operator: recorded in the queue's events (the row
    /// stays: `fleetdash tasks` lists it), and its alert ends, said as dismissed. A finished
    /// task; an open one only with --cancel.
    Dismiss {
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
        /// Cancel the task first if it is still open (otherwise an open task is refused).
        #[arg(long)]
        cancel: bool,
        /// The task's id (`q_...`, as `fleetdash tasks` lists it).
        id: String,
    },
}

#[derive(Subcommand)]
enum SilenceCommand {
    /// Silence what every matcher matches: host=lab (the host and its checks), agent=min,
    /// kind=cron, name=..., key=host:lab/tunnel:t.
    Add {
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
        /// How long, e.g. "2h" or "45m".
        #[arg(long = "for", value_name = "DURATION", value_parser = humantime::parse_duration)]
        length: Duration,
        /// Why, shown on the page beside the element ("silenced until 16:00 (disk swap)").
        #[arg(long)]
        reason: String,
        /// Also write the outcome as one ASC envelope (a JSON line) on stdout.
        #[arg(long)]
        json: bool,
        #[arg(required = true, value_name = "MATCHER")]
        matchers: Vec<String>,
    },
    /// The active silences, one line each: id, until, matchers, reason.
    List {
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
    },
    /// End a silence now.
    End {
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
        id: String,
    },
}

pub fn main() -> ExitCode {
    limit_malloc_arenas();
    let cli = Cli::parse();
    crate::logging::init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("fleetdash: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    // (the command's name, whether it speaks --json, its outcome)
    let (name, json, result) = runtime.block_on(async {
        let quiet = |outcome: app::Outcome| outcome.map(|()| None);
        let done = |outcome: Result<app::Done, app::Failure>| outcome.map(Some);
        match cli.command {
            Command::Collect { config, only, json } => (
                "collect",
                json,
                done(app::collect(&config, only.as_deref()).await),
            ),
            Command::Run { config } => ("run", false, quiet(app::run(&config).await)),
            Command::Init(args) => ("init", false, quiet(init(args).await)),
            Command::Serve { config, listen } => {
                ("serve", false, quiet(app::serve(&config, listen).await))
            }
            Command::Demo {
                listen,
                state_dir,
                dist_dir,
                new_password,
            } => (
                "demo",
                false,
                quiet(app::demo(listen, state_dir, dist_dir, new_password).await),
            ),
            Command::Page {
                command: PageCommand::Export { dir },
            } => ("page export", false, quiet(app::page_export(&dir).await)),
            Command::Check { config, json } => ("check", json, done(app::check(&config))),
            Command::Doctor {
                config,
                user,
                nginx_site,
                offline,
                json,
            } => {
                let options = crate::doctor::Options {
                    user,
                    nginx_site,
                    offline,
                };
                ("doctor", json, done(app::doctor(&config, &options).await))
            }
            Command::Task { command } => match command {
                TaskCommand::Assign {
                    config,
                    to,
                    tags,
                    deadline,
                    json,
                    title,
                } => (
                    "task assign",
                    json,
                    done(app::task_assign(&config, to, tags, deadline, &title).await),
                ),
                TaskCommand::Dismiss { config, cancel, id } => (
                    "task dismiss",
                    false,
                    quiet(app::task_dismiss(&config, &id, cancel).await),
                ),
            },
            Command::Tasks { config } => ("tasks", false, quiet(app::tasks(&config).await)),
            Command::Report {
                config,
                since,
                json,
            } => (
                "report",
                json,
                done(crate::starter::report(&config, since.as_deref()).await),
            ),
            Command::Mcp { config, operator } => {
                ("mcp", false, quiet(app::mcp(&config, operator).await))
            }
            Command::Silence { command } => match command {
                SilenceCommand::Add {
                    config,
                    length,
                    reason,
                    json,
                    matchers,
                } => (
                    "silence add",
                    json,
                    done(app::silence_add(&config, &matchers, length, &reason).await),
                ),
                SilenceCommand::List { config } => (
                    "silence list",
                    false,
                    quiet(app::silence_list(&config).await),
                ),
                SilenceCommand::End { config, id } => (
                    "silence end",
                    false,
                    quiet(app::silence_end(&config, &id).await),
                ),
            },
            Command::Ack {
                config, list: true, ..
            } => ("ack", false, quiet(app::ack_list(&config).await)),
            Command::Ack {
                config,
                end: true,
                key: Some(key),
                ..
            } => ("ack", false, quiet(app::ack_end(&config, &key).await)),
            Command::Ack {
                config, json, key, ..
            } => {
                // clap requires KEY unless --list.
                let key = key.unwrap_or_default();
                ("ack", json, done(app::ack(&config, &key).await))
            }
            Command::Rules {
                command: RulesCommand::Show { config, json },
            } => (
                "rules show",
                json,
                done(crate::starter::rules_show(config.as_deref())),
            ),
            Command::Alerts {
                command:
                    AlertsCommand::Test {
                        config,
                        json,
                        channel,
                    },
            } => (
                "alerts test",
                json,
                done(crate::starter::alerts_test(&config, channel.as_deref()).await),
            ),
            Command::CronRun(args) => ("cron-run", args.json, done(app::cron_run(&args).await)),
            Command::SimFleet {
                agents,
                hang_percent,
            } => (
                "sim-fleet",
                false,
                quiet(app::sim_fleet(agents, hang_percent).await),
            ),
        }
    });
    // Dropping the runtime would wait for every blocking thread, and one stuck in the kernel
    // (a read on a hung mount) would keep `collect` alive for ever after its snapshot was
    // written. The command is done: give them a second, then leave them.
    runtime.shutdown_timeout(Duration::from_secs(1));
    // cron-run's stdout is its job's: its envelope goes to stderr.
    let envelope_to_stderr = name == "cron-run";
    let code = match &result {
        Ok(None) => 0,
        Ok(Some(done)) => done.exit,
        Err(failure) => failure_code(failure),
    };
    match &result {
        Ok(Some(done)) if !json && !done.text.is_empty() => {
            print!("{}", crate::logging::redact(&done.text))
        }
        Err(failure) => say(failure),
        _ => {}
    }
    if json {
        let line = crate::logging::redact_json(envelope(name, code, &result)).to_string();
        if envelope_to_stderr {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    }
    ExitCode::from(code)
}

/// `fleetdash init`: a face of its own, called from here (app.rs is at its size limit).
async fn init(args: InitArgs) -> app::Outcome {
    let options = crate::init::Options {
        config: args.config,
        agents: args.agents,
        boards: args.boards,
        vault: args.vault,
        ntfy: args.ntfy,
        webhook: args.webhook,
        listen: args.listen,
        report: args.report,
        yes: args.yes,
        new_password: args.new_password,
    };
    crate::init::run(options).await.map_err(|e| match e {
        crate::init::Error::Usage(message) => {
            eprintln!("fleetdash: {message}");
            app::Failure::Exit(2)
        }
        crate::init::Error::Other(e) => app::Failure::Other(e),
    })
}

/// The exit code a failure projects to.
fn failure_code(failure: &app::Failure) -> u8 {
    match failure {
        app::Failure::Config { .. } => 2,
        app::Failure::Exit(code) => *code,
        app::Failure::Other(_) => 1,
    }
}

/// A failure in words on stderr: every config error when `list_all`, else the first and how
/// to see the others.
fn say(failure: &app::Failure) {
    match failure {
        app::Failure::Config {
            errors,
            list_all: true,
        } => {
            for e in &errors.0 {
                eprintln!("fleetdash: {e}");
            }
        }
        app::Failure::Config {
            errors,
            list_all: false,
        } => {
            let more = match errors.0.len() {
                1 => String::new(),
                n => format!(
                    " (and {} more; `fleetdash check --config FILE` lists them all)",
                    n - 1
                ),
            };
            eprintln!("fleetdash: {}{more}", errors.0[0]);
        }
        // Already said where it happened.
        app::Failure::Exit(_) => {}
        app::Failure::Other(e) => {
            eprintln!("fleetdash: {}", crate::logging::redact(&format!("{e:#}")))
        }
    }
}

/// The ASC envelope of a command's outcome (docs/cli.md): seed 000's status object, the exit
/// code it was projected to, and the command's result or what went wrong.
fn envelope(
    command: &str,
    exit_code: u8,
    result: &Result<Option<app::Done>, app::Failure>,
) -> serde_json::Value {
    let status = match result {
        Ok(Some(done)) => done.status.clone(),
        Ok(None) => fleetdash_model::Asc::SUCCESS,
        Err(failure) => failure.status(),
    };
    let mut out = serde_json::json!({
        "command": command,
        "exit_code": exit_code,
        "agent_status": {
            "code": status.code,
            "name": status.name,
            "class": status.family(),
            "kind": "status",
            "scope": "command",
            "terminal": true,
        },
    });
    match result {
        Ok(Some(done)) => out["result"] = done.result.clone(),
        Ok(None) => {}
        Err(app::Failure::Config { errors, .. }) => {
            out["errors"] = errors
                .0
                .iter()
                .map(|e| {
                    serde_json::json!({
                        "file": e.file,
                        "line": e.line,
                        "field": e.field,
                        "message": e.message,
                    })
                })
                .collect();
        }
        Err(app::Failure::Exit(_)) => {
            out["detail"] = "refused; stderr says why".into();
        }
        Err(app::Failure::Other(e)) => out["detail"] = format!("{e:#}").into(),
    }
    out
}

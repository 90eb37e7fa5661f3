//! Command-line interface: parses arguments, runs the command, turns errors into one clear
//! line on stderr and an exit code (0 done, 1 could not do it, 2 bad config or usage).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};

use crate::app;
use crate::collect::SectionName;

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
    /// List the work queue: id, owner, ACK, state, band and reason, one line each, red first;
    /// then the dismissed tasks.
    Tasks {
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
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
    let result = runtime.block_on(async {
        match cli.command {
            Command::Collect { config, only } => app::collect(&config, only.as_deref()).await,
            Command::Run { config } => app::run(&config).await,
            Command::Serve { config, listen } => app::serve(&config, listen).await,
            Command::Demo {
                listen,
                state_dir,
                dist_dir,
                new_password,
            } => app::demo(listen, state_dir, dist_dir, new_password).await,
            Command::Page {
                command: PageCommand::Export { dir },
            } => app::page_export(&dir).await,
            Command::Check { config } => app::check(&config),
            Command::Task { command } => match command {
                TaskCommand::Assign {
                    config,
                    to,
                    tags,
                    deadline,
                    title,
                } => app::task_assign(&config, to, tags, deadline, &title).await,
                TaskCommand::Dismiss { config, cancel, id } => {
                    app::task_dismiss(&config, &id, cancel).await
                }
            },
            Command::Tasks { config } => app::tasks(&config).await,
            Command::Silence { command } => match command {
                SilenceCommand::Add {
                    config,
                    length,
                    reason,
                    matchers,
                } => app::silence_add(&config, &matchers, length, &reason).await,
                SilenceCommand::List { config } => app::silence_list(&config).await,
                SilenceCommand::End { config, id } => app::silence_end(&config, &id).await,
            },
            Command::CronRun(args) => app::cron_run(&args).await,
            Command::SimFleet {
                agents,
                hang_percent,
            } => app::sim_fleet(agents, hang_percent).await,
        }
    });
    // Dropping the runtime would wait for every blocking thread, and one stuck in the kernel
    // (a read on a hung mount) would keep `collect` alive for ever after its snapshot was
    // written. The command is done: give them a second, then leave them.
    runtime.shutdown_timeout(Duration::from_secs(1));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(app::Failure::Config {
            errors,
            list_all: true,
        }) => {
            for e in &errors.0 {
                eprintln!("fleetdash: {e}");
            }
            ExitCode::from(2)
        }
        Err(app::Failure::Config {
            errors,
            list_all: false,
        }) => {
            let more = match errors.0.len() {
                1 => String::new(),
                n => format!(
                    " (and {} more; `fleetdash check --config FILE` lists them all)",
                    n - 1
                ),
            };
            eprintln!("fleetdash: {}{more}", errors.0[0]);
            ExitCode::from(2)
        }
        Err(app::Failure::Exit(code)) => ExitCode::from(code),
        Err(app::Failure::Other(e)) => {
            eprintln!("fleetdash: {e:#}");
            ExitCode::FAILURE
        }
    }
}

//! Defaults of the registry, named so that no number hides in the code that reads it.

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
/// The work queue is read as often as its watchdog sweeps (spec §3.5: every 60 s), so an
/// orphaned task shows within a minute of the sweep that failed it; a read is a few ms.
pub const QUEUE_CADENCE: Duration = Duration::from_secs(60);
/// ssh, git ls-remote and systemctl each get this long.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(20);
/// A backup listing (rclone over the network) may take a while.
pub const BACKUP_COMMAND_TIMEOUT: Duration = Duration::from_secs(60);
/// Healthchecks' default grace when a cron gives none.
pub const CRON_GRACE: Duration = Duration::from_secs(60 * 60);
/// The filesystem reported when a host names none.
pub const DISK_PATH: &str = "/";
/// The git remote compared with when a vault names none, if the checkout has it (else the
/// vault is watched alone).
pub const VAULT_REMOTE: &str = "origin";
/// Who the collector is in the agents' audit logs (their `peer` field, the identity its token
/// authenticates as) when the config names no other: lines from this peer are the collector's
/// own probes, not exchanges.
pub const COLLECTOR_PEER: &str = "fleetdash";
/// Where `cron-run` keeps its records under the state directory.
pub const CRON_RECORDS_DIR: &str = "crons";
/// The intake's largest request: a report is a few hundred bytes; 64 KiB leaves room for any
/// honest message and bounds what a hostile one costs.
pub const INTAKE_MAX_BODY_BYTES: usize = 64 * 1024;
/// Requests per agent per minute: one report a second, sustained, is far above any agent's
/// ACK-heartbeat-completion rhythm (spec §5.1: heartbeats every 2 min).
pub const INTAKE_RATE_PER_MINUTE: usize = 60;
/// Reads (GetTask, ListTasks, anything not a report) per caller per minute, a budget of their
/// own: a busy reader on an agent's token never spends the reports' budget.
pub const INTAKE_READ_RATE_PER_MINUTE: usize = 120;
/// A request body must arrive within this (a slow sender is cut, not waited for).
pub const INTAKE_BODY_TIMEOUT: Duration = Duration::from_secs(10);
/// A request's headers must arrive within this: a client sending them a byte at a time
/// (slowloris) holds a connection for this long at most.
pub const INTAKE_HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections not yet authenticated (headers not read) the intake holds at once: a newcomer
/// past it closes the one idle the longest, so slow clients never shut out one that speaks at
/// once. Enough for the fleet's agents connecting together (about eleven).
pub const INTAKE_MAX_UNAUTHENTICATED_CONNECTIONS: usize = 16;
/// Connections one token holds on each face (A2A, MCP): an agent sends a few reports at
/// once; its client's idle kept-alive connections beyond this are closed to make room, and a
/// request past this many in flight is refused (429).
pub const INTAKE_MAX_CONNECTIONS_PER_TOKEN: usize = 8;
/// Open connections the intake holds at once, whoever the peers: far below the process's open
/// files limit (1024 on a stock Debian unit), so the collector's own files always open.
pub const INTAKE_MAX_CONNECTIONS: usize = 256;

//! fleetdash: the collector, CLI and embedded server of the fleet dashboard.
//!
//! - [`config`]: the registry (TOML) and the rules file (YAML), validated with file and line.
//! - [`collect`]: one module per snapshot section behind the [`collect::Collector`] trait.
//! - [`a2a`], [`net`]: A2A wire shapes per dialect, and bounded HTTP for probes.
//! - [`snapshot`]: merging sections and judging staleness.
//! - [`redact`]: the gate every writer passes through.
//! - [`text`]: the one sanitiser for untrusted text (flatten, redact, cut).
//! - [`logging`]: the log on stderr, through the same gate.
//! - [`write`]: writers (status.json, snapshot.html, the transitions log, the bounded 24 h up/down
//!   history behind the strips and uptimes), atomic and locked.
//! - [`watchdog`]: cadences for `fleetdash run`.
//! - [`server`]: `fleetdash serve`, basic auth over the page and `/api/status.json`.
//! - [`page`]: the built page, embedded in the binary (`fleetdash page export` writes it out).
//! - [`demo`]: a simulated fleet on loopback for `fleetdash demo` and the tests.
//! - [`intake`]: the A2A server agents report to (both dialects), feeding the work queue.
//! - [`queue`]: the work queue (spec 003 §3): reports become task rows, rules over them.
//! - [`sqlite`]: whether a SQLite file is one of ours (the work queue's, the alert outbox's).
//! - [`alerting`]: band changes to the operator's phone and the hub agent (engine, outbox, one
//!   file per channel).
//! - [`daemon`]: a running fleetdash (`run`, the demo) wired whole.
//! - [`app`]: the commands, wiring the above.
//! - [`cron_run`]: `fleetdash cron-run`, which runs a cron job and records it for the dashboard.

pub mod a2a;
pub mod alerting;
pub mod app;
pub mod cli;
pub mod collect;
pub mod config;
pub mod cron_run;
pub mod daemon;
pub mod demo;
pub mod intake;
pub mod logging;
pub mod net;
pub mod page;
pub mod queue;
pub mod redact;
pub mod server;
pub mod snapshot;
pub mod sqlite;
pub mod text;
pub mod watchdog;
pub mod write;

//! fleetdash: the collector, CLI and embedded server of the fleet dashboard.
//!
//! The modules, in their layers from the ground up: each imports only from its own layer and
//! those below (`docs/architecture.md`; `tests/layering.rs` checks it). Below them all is the
//! `fleetdash_model` crate, the snapshot's types and the operator's words.
//!
//! 1. [`redact`] (the gate every byte passes before a writer puts it on disk), [`problem`] (HTTP
//!    refusals as problem+json with the ASC envelope), [`text`] (the
//!    one sanitiser for untrusted text), [`net`] (bounded HTTP for probes), [`sqlite`] (whether
//!    a SQLite file is one of ours), [`clock`] (the wall clock written and shown, the boot clock
//!    ages are counted on, and the jumps between them).
//! 2. [`config`]: the registry (TOML) and the rules file (YAML), validated with file and line.
//! 3. [`a2a`] (A2A wire shapes per dialect), [`queue`] (the work queue's store, spec 003 §3).
//! 4. [`collect`]: one module per snapshot section behind [`collect::Collector`]; probes never
//!    write.
//! 5. [`snapshot`]: merging sections and judging staleness; [`deps`]: what depends on what,
//!    from the registry, and so what a red element took down.
//! 6. [`write`]: everything that puts bytes on disk (status.json, snapshot.html, history,
//!    transitions, the state files' one policy), atomic, locked and gated.
//! 7. [`alerting`]: band changes to the operator's phone and the hub agent (engine, silences,
//!    outbox, one file per channel).
//! 8. The faces: [`server`] (`fleetdash serve`) and [`page`] (the built page, embedded),
//!    [`intake`] (the A2A server agents report to), [`cron_run`], [`watchdog`] (the run-time
//!    loops: cadences, the queue's sweep), [`logging`] (the log, through the same gate),
//!    [`metrics`] (`/metrics` for Prometheus), [`otel`] (each pass and probe as OpenTelemetry
//!    spans), [`answers`] (what the hub agent is answered, whichever face it asks through),
//!    [`init`] (`fleetdash init`: a config for the operator's own fleet).
//! 9. [`daemon`]: a running fleetdash (`run`, the demo) wired whole.
//! 10. [`demo`]: a simulated fleet on loopback.
//! 11. [`app`]: the commands; [`starter`]: `rules show` and `alerts test`.
//! 12. [`cli`]: arguments and exit codes; `main.rs` calls it and nothing else.

pub mod a2a;
pub mod alerting;
pub mod answers;
pub mod app;
pub mod certs;
pub mod cli;
pub mod clock;
pub mod collect;
pub mod config;
pub mod cron_run;
pub mod daemon;
pub mod demo;
pub mod deps;
pub mod doctor;
pub mod init;
pub mod intake;
pub mod logging;
pub mod mcp;
pub mod metrics;
pub mod net;
pub mod otel;
pub mod page;
pub mod problem;
pub mod queue;
pub mod redact;
pub mod report;
pub mod server;
pub mod snapshot;
pub mod sqlite;
pub mod starter;
pub mod text;
pub mod watchdog;
pub mod write;

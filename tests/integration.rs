//! Every integration test of the repository, one module per file of `tests/`, in one binary:
//! the crate and its dependencies are linked once, not once per file (39 links of 250 MB, most
//! of the tests' build). One file's tests: `cargo test -p fleetdash --test integration
//! fleets::`; one test: its name after them.

mod serving;
mod support;

mod agents_peers;
mod alert_delivery;
mod alertmanager;
mod alertmanager_pair;
mod alerts;
mod backups;
mod board;
mod browser;
mod cli;
mod clock_steps;
mod conformance;
mod crons;
mod demo;
mod doctor;
mod faces;
mod fleets;
mod hermes_board;
mod init;
mod intake;
mod layering;
mod live_tasks;
mod logs;
mod mcp;
mod metrics;
mod nginx;
mod otel;
mod page;
mod phone_actions;
mod projection;
mod projection_job;
mod prometheus_rules;
mod queue;
mod queue_snapshot;
mod serve;
mod systemd;
mod systems_hosts;
mod tunnels;
mod vault_parity;
mod writer;

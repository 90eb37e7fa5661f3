//! The `status.json` snapshot: the one data contract between the collector and the page.
//!
//! Everything the dashboard shows is a field of [`Snapshot`]. The collector fills it, the
//! writers (after the redaction gate) put it on disk, and the Leptos page and the static
//! fallback render it. Both sides compile this crate, so the schema cannot drift between them.
//!
//! Two rules from the spec shape these types:
//! - *Emptiness is loud*: a field whose probe failed holds `"error: <reason>"` instead of a
//!   value ([`Probe::Error`]), and a section that was never collected holds
//!   `"error: not collected"`; nothing is ever left out.
//! - Every array element carries its own `checked_at` and `stale`, and an Agent Status Code
//!   ([`Asc`]) that classifies its condition for machines.
//!
//! This root only names the modules and re-exports their types: each module imports what it
//! uses from the module that defines it, never from here, so that no import runs in a circle
//! (`tests/layering.rs` checks it).

pub mod alerts;
mod asc;
mod band;
pub mod clock;
pub mod glance;
mod probe;
pub mod queue;
mod rules;
mod snapshot;
mod summary;
mod words;

pub use alerts::{Acked, AlertsView, ChannelState, Held};
pub use asc::Asc;
pub use band::Band;
pub use clock::{Ahead, ClockJump, ClockView, Jump};
pub use glance::Glance;
pub use probe::{NOT_COLLECTED, Probe};
pub use queue::{EndedTask, QueueAck, QueueLeftOut, QueueLimits, QueueTask, UnreadableTask};
pub use rules::RulesView;
pub use snapshot::{
    Agent, Backups, Board, BoardSource, Card, ColumnCount, CronCheck, CronState, Fold, Heartbeat,
    History, LeftOut, LiveTask, NamedCheck, SCHEMA_VERSION, SectionMeta, Sections, SetAside,
    Snapshot, System, Tasks, Transition, Window,
};
pub use summary::Verdict;
pub use words::{human_age, moment, month, seconds_since, thousands};

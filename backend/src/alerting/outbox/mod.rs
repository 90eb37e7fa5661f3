//! The outbox: every (alert, channel that wants it) pair, kept in `state_dir` until delivered.
//!
//! Delivery is at least once: an item leaves the pending set only after its channel said yes.
//! The pair (alert id, channel) is the dedupe key, and a delivered pair is remembered for the
//! rules' `alert_outbox.delivered_kept_seconds` ([`Limits`]), so an engine that re-raises the same alert after a crash, or a restart
//! with items pending, sends nothing twice and loses nothing (the one window left is a crash
//! between the channel's yes and the row's update: then it is sent again, as at-least-once says).
//!
//! A failing channel backs off as a whole (exponential, [`BACKOFF_FIRST`] doubling up to
//! [`BACKOFF_MAX`]) and is reported (`failing_since`, the last reason) for the page. The
//! pending set is bounded per channel (`alert_outbox.max_pending_per_channel`): past it the oldest reminders
//! go first; a Firing or Recovered is dropped only when nothing else is left, and says so in the
//! log.
//!
//! Three parts:
//! - [`store`]: the store ([`Outbox`]): enqueue, due items, backoff, bounds. SQLite (WAL) in
//!   `state_dir`; every call blocks.
//! - [`guard`]: its file, opened once known to be ours; one that is not a usable outbox of ours
//!   is moved aside and replaced, never deleted ([`Outbox::open`]): as the engine's state file,
//!   a corrupt outbox is a fresh start said in the log, not a stopped collector.
//! - [`delivery`]: the delivery loop ([`Delivery`]), which runs the store's calls on blocking
//!   threads.
//! - [`watch`]: a channel that keeps failing is told to the other channels, once, and its
//!   recovery too ([`ChannelWatch`]).

pub mod delivery;
pub mod guard;
pub mod store;
pub mod watch;

pub use delivery::{DELIVERY_TICK, Delivery, Grouping, PRUNE_EVERY, Pass, Quiet, SEND_DEADLINE};
pub use guard::{APPLICATION_ID, SCHEMA_VERSION};
pub use store::{
    BACKOFF_FIRST, BACKOFF_MAX, BATCH_PER_CHANNEL, ChannelHealth, Enqueued, Item, Limits,
    OUTBOX_FILE, Outbox, backoff,
};
pub use watch::ChannelWatch;

//! Alerting (issue 12): band changes carried to the operator's phone and the hub agent, through
//! one voice, knowing what depends on what.
//!
//! The flow, each part a room of its own:
//! - [`engine`]: after every snapshot write, the elements' bands ([`crate::write::transitions::elements`])
//!   are counted per key in consecutive passes (fail / recover thresholds from the rules file),
//!   reminders fall due while red, dependencies suppress what a root cause takes down, silences
//!   and maintenance windows hold alerts back (never monitoring, never a recovery), and an
//!   acknowledged alert ([`acks`]) sends no reminders until its band changes. Its state
//!   lives in `state_dir` so a restart neither repeats nor forgets. Output: [`Alert`]s.
//! - [`outbox`]: every alert for every channel that wants it, kept in `state_dir` until
//!   delivered (at least once, retries with backoff, a dedupe key per alert and channel).
//! - [`provider`]: one file per channel behind one trait (ntfy, webhook, A2A to the hub agent),
//!   as Gatus' `alerting/provider/`.
//! - [`trial`]: `fleetdash alerts test`, a test notification through each channel, through an
//!   outbox of its own.
//!
//! INTERFACE on branch h/abase; the bodies are written on h/alert-engine and h/alert-delivery.

pub mod acks;
pub mod deadman;
pub mod engine;
pub mod look;
pub mod outbox;
pub mod phone;
pub mod provider;
pub mod run;
pub mod silences;
pub mod trial;

use chrono::{DateTime, Utc};
use fleetdash_model::{Asc, Band};

/// What happened to the element.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AlertEvent {
    /// It went red (after the fail threshold's consecutive passes).
    Firing,
    /// It is green again (after the recover threshold); never suppressed nor silenced.
    Recovered,
    /// Still red after the reminder interval.
    Reminder,
    /// `fleetdash alerts test`: no element's, said as a test; every channel takes it, none
    /// counts it ([`trial`]).
    Test,
    /// The report of a period (issue 45, [`crate::report`]): no element's; its name is its
    /// verdict, its reason what a lock screen shows, its `detail` the whole report. Sent alone,
    /// never grouped; only to the channels `[report]` names.
    Report,
}

impl AlertEvent {
    pub fn as_str(self) -> &'static str {
        match self {
            AlertEvent::Firing => "firing",
            AlertEvent::Recovered => "recovered",
            AlertEvent::Reminder => "reminder",
            AlertEvent::Test => "test",
            AlertEvent::Report => "report",
        }
    }
}

/// One alert, as every channel receives it. Its text has passed the redaction gate.
#[derive(Debug, Clone, PartialEq)]
pub struct Alert {
    /// The dedupe key, stable across restarts: `<element key>:<event>:<since, unix s>` (plus
    /// the reminder's number): an alert re-enqueued after a crash is the same alert.
    pub id: String,
    /// The element's stable key, as the transitions log keys it (`agent:min`,
    /// `host:lab/tunnel:lab-heart`, `queue:q_1a2b`, `section:agents`).
    pub key: String,
    /// `agent`, `task`, `host`, `service`, `tunnel`, `cron`, `vault`, `backups`, `section`, ...
    pub kind: String,
    /// What the operator calls it ("min", "tunnel lab-heart on lab").
    pub name: String,
    pub event: AlertEvent,
    /// The element's band now.
    pub band: Band,
    /// Why, in a few words. On a recovery none, unless the element is gone rather than green
    /// ("no longer listed": a card moved out of the listing, a finished task) or was taken
    /// away ("dismissed by the operator", "retired: ...": a work-queue task).
    pub reason: Option<String>,
    /// The element's Agent Status Code (webhook's ASC envelope).
    pub status: Asc,
    /// When the element entered its band.
    pub since: DateTime<Utc>,
    /// When the alert was raised.
    pub at: DateTime<Utc>,
    /// Elements this root cause takes down, whose own alerts it suppresses ("5 agents
    /// unreachable": their names).
    pub takes_down: Vec<String>,
    /// The dashboard's URL (the click target), when configured.
    pub link: Option<String>,
    /// A report's whole text (the hub agent and a webhook get it all); `None` for any other.
    pub detail: Option<String>,
}

impl Alert {
    /// The short line every channel leads with: the band's icon and word, what, why; e.g.
    /// "✖ fail · tunnel lab-heart down: 5 agents unreachable", "✔ ok · agent min recovered".
    pub fn headline(&self) -> String {
        let what = format!("{} {}", self.kind, self.name);
        match (self.event, &self.reason) {
            // Its name is its title ("fleetdash test: lab to ntfy"), its reason says why.
            (AlertEvent::Test | AlertEvent::Report, reason) => match reason {
                Some(r) => format!("{}: {r}", self.name),
                None => self.name.clone(),
            },
            // Taken away rather than better: said as what happened to it.
            (AlertEvent::Recovered, Some(r))
                if r == engine::gone::DISMISSED || r == engine::gone::RETIRED =>
            {
                format!("{} {} · {what} {r}", self.band.icon(), self.band.word())
            }
            (AlertEvent::Recovered, reason) => {
                let mut line = format!(
                    "{} {} · {what} recovered",
                    self.band.icon(),
                    self.band.word()
                );
                if let Some(r) = reason {
                    line.push_str(&format!(" ({r})"));
                }
                line
            }
            (_, reason) => {
                let mut line = format!("{} {} · {what}", self.band.icon(), self.band.word());
                if let Some(r) = reason {
                    line.push_str(&format!(": {r}"));
                }
                if !self.takes_down.is_empty() {
                    line.push_str(&format!(" ({} unreachable)", self.takes_down.len()));
                }
                if self.event == AlertEvent::Reminder {
                    line.push_str(" (still)");
                }
                line
            }
        }
    }
}

//! What an agent can report to the hub (spec 003 §1.2, §4.1): the work queue's input, as the
//! intake reads it off the wire in any dialect. Plain data: no I/O, no free text kept beyond a
//! task's title (truncated and gated by whoever builds the report).

use chrono::{DateTime, Utc};

/// Who sent a report: the agent its bearer token belongs to, or the operator's CLI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reporter {
    Agent(String),
    /// `fleetdash task assign` on the hub itself.
    Operator,
}

/// One report, as applied to the work queue.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub from: Reporter,
    /// The A2A `messageId`: a report retried with the same id is applied once.
    pub message_id: String,
    /// The A2A `contextId` the message carried (spec §5.4: provenance of auto-sessions).
    pub context_id: Option<String>,
    /// When the hub received it (the queue's clock, not the sender's).
    pub received_at: DateTime<Utc>,
    pub kind: ReportKind,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ReportKind {
    /// Alive; what it was last doing and which queue tasks it has in flight.
    Heartbeat {
        last_activity_at: Option<DateTime<Utc>>,
        in_flight: Vec<String>,
    },
    /// A task reached a terminal state: a `TASK_STATE_*` wire value, nothing else.
    Completion { task_id: String, state: WireState },
    /// A task is blocked on something or someone.
    Blocker { task_id: String, on: String },
    /// ACK-then-own (§4.1), or "yielded to owner" (§4.2).
    Ack { task_id: String, ack: Ack },
    /// An instruction from the hub or the operator: a new task.
    Assign(Assignment),
}

/// The three legal ACK shapes (§4.1), and yielding to the owner (§4.2).
#[derive(Debug, Clone, PartialEq)]
pub enum Ack {
    Owning { eta: Option<DateTime<Utc>> },
    Escalating { to: String },
    Blocked { on: String },
    Yielded,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Assignment {
    /// Truncated and through the redaction gate before it gets here.
    pub title: String,
    /// The one agent it is assigned to, if one is named; otherwise the first owning ACK of
    /// the tagged agents owns it (§4.2).
    pub owner: Option<String>,
    pub tagged: Vec<String>,
    pub deadline: Option<DateTime<Utc>>,
}

/// A spec task state (§1.2): only these reach the queue; v0.3 lower-case states are mapped on
/// the way in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireState {
    Submitted,
    Working,
    InputRequired,
    Completed,
    Failed,
    Canceled,
    Rejected,
    AuthRequired,
}

impl WireState {
    pub const ALL: [WireState; 8] = [
        WireState::Submitted,
        WireState::Working,
        WireState::InputRequired,
        WireState::Completed,
        WireState::Failed,
        WireState::Canceled,
        WireState::Rejected,
        WireState::AuthRequired,
    ];

    /// The v1.0 wire value, `TASK_STATE_*`.
    pub fn as_str(self) -> &'static str {
        match self {
            WireState::Submitted => "TASK_STATE_SUBMITTED",
            WireState::Working => "TASK_STATE_WORKING",
            WireState::InputRequired => "TASK_STATE_INPUT_REQUIRED",
            WireState::Completed => "TASK_STATE_COMPLETED",
            WireState::Failed => "TASK_STATE_FAILED",
            WireState::Canceled => "TASK_STATE_CANCELED",
            WireState::Rejected => "TASK_STATE_REJECTED",
            WireState::AuthRequired => "TASK_STATE_AUTH_REQUIRED",
        }
    }

    /// A `TASK_STATE_*` value, or a v0.3 state ("input-required"); nothing else.
    pub fn parse(s: &str) -> Option<WireState> {
        WireState::ALL
            .into_iter()
            .find(|w| w.as_str() == s)
            .or(match s {
                "submitted" => Some(WireState::Submitted),
                "working" => Some(WireState::Working),
                "input-required" => Some(WireState::InputRequired),
                "completed" => Some(WireState::Completed),
                "failed" => Some(WireState::Failed),
                "canceled" => Some(WireState::Canceled),
                "rejected" => Some(WireState::Rejected),
                "auth-required" => Some(WireState::AuthRequired),
                _ => None,
            })
    }

    /// COMPLETED, FAILED, CANCELED, REJECTED.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            WireState::Completed | WireState::Failed | WireState::Canceled | WireState::Rejected
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_are_the_spec_wire_values_and_v03_maps_onto_them() {
        for w in WireState::ALL {
            assert_eq!(WireState::parse(w.as_str()), Some(w));
        }
        assert_eq!(
            WireState::parse("input-required"),
            Some(WireState::InputRequired)
        );
        assert_eq!(WireState::parse("TASK_STATE_STUCK"), None);
        assert_eq!(WireState::parse("running"), None);
        let terminal: Vec<_> = WireState::ALL
            .into_iter()
            .filter(|w| w.is_terminal())
            .collect();
        assert_eq!(terminal.len(), 4);
    }
}

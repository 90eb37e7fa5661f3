//! The work queue's tasks as status.json carries them (`tasks.queue[]`, spec 003 §3.2): who owns
//! what, whether they ACKed (§4), what is blocked, what died; and the one judge of a task's band
//! at a moment, used by the collector when it writes and by the page between polls (an ACK that
//! is due, or a deadline, passes while the page is open).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::asc::Asc;
use crate::band::Band;
use crate::words::{human_age, seconds_since};

/// The status message of a task the 300 s watchdog failed (spec 003 §3.5).
pub const ORPHANED_MESSAGE: &str = "[task orphaned — no reply produced]";

/// One task of the work queue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueueTask {
    pub id: String,
    /// Truncated and through the redaction gate when it was assigned.
    pub title: String,
    /// The agent that owns it: named by the assignment, or the first owning ACK (§4.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    #[serde(default)]
    pub tagged: Vec<String>,
    /// "operator" or the agent that assigned it.
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<DateTime<Utc>>,
    /// Always a v1.0 `TASK_STATE_*` wire value.
    pub state: String,
    /// The owner's ACK (or the first one); absent until one came.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ack: Option<QueueAck>,
    /// What it is blocked on (a blocker report or "ACK blocked on").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked_on: Option<String>,
    /// The last report about it, from anyone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_report_at: Option<DateTime<Utc>>,
    /// Set by the watchdog: [`ORPHANED_MESSAGE`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// No report for the worker-died limit (spec §3.5: recorded, no follow-up).
    #[serde(default)]
    pub worker_died: bool,
    /// As judged when the snapshot was written ([`QueueTask::judge`]).
    pub band: Band,
    pub status: Asc,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub checked_at: DateTime<Utc>,
    pub stale: bool,
}

/// A work-queue row the hub cannot read (a state it does not know, a `tagged` list that is not
/// one, an unknown ACK kind, a time out of range): red on its own, with its id and why, while
/// the other rows are read as ever (issue 21).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnreadableTask {
    pub id: String,
    /// The column, its value and what is wrong with it.
    pub reason: String,
    /// Always red: nobody can tell what became of the task.
    pub band: Band,
    pub status: Asc,
    pub checked_at: DateTime<Utc>,
    /// Always true: the row could not be read.
    pub stale: bool,
}

/// What `tasks.queue` leaves out (issue 21), counted, never silently dropped; the queue's file
/// keeps every task. `Default`: nothing (and snapshots written before it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueLeftOut {
    /// Finished tasks past the rules' retention (`queue.finished_kept_seconds` since they
    /// finished, or older than the newest `queue.finished_kept_max`).
    pub finished: u32,
    /// Tasks the operator dismissed (`fleetdash task dismiss`).
    pub dismissed: u32,
    /// The tasks the snapshot before this one listed and this one leaves out, with why: so
    /// that an alert of one ends said as dismissed or retired, not as recovered.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ended: Vec<EndedTask>,
}

impl QueueLeftOut {
    pub fn is_none(&self) -> bool {
        self.finished == 0 && self.dismissed == 0 && self.ended.is_empty()
    }
}

/// A task the snapshot before listed and this one leaves out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EndedTask {
    pub id: String,
    /// `dismissed` or `retired`.
    pub how: String,
    pub checked_at: DateTime<Utc>,
    pub stale: bool,
}

/// An ACK (§4.1): owning with an ETA, escalating to X, blocked on Y; or yielded (§4.2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueueAck {
    /// `owning`, `escalating`, `blocked` or `yielded`.
    pub kind: String,
    pub by: String,
    pub at: DateTime<Utc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eta: Option<DateTime<Utc>>,
    /// Escalated to whom.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
}

const TERMINAL: [&str; 4] = [
    "TASK_STATE_COMPLETED",
    "TASK_STATE_FAILED",
    "TASK_STATE_CANCELED",
    "TASK_STATE_REJECTED",
];

impl QueueTask {
    pub fn is_terminal(&self) -> bool {
        TERMINAL.contains(&self.state.as_str())
    }

    /// The task's band, code and reason at `now`, with ACKs due within `ack_within_s`: the one judge of a queue task,
    /// for the collector when it writes and the page between polls. Limits are reached AT N
    /// seconds (as the stuck rule); a deadline passes strictly after its instant.
    ///
    /// Red: orphaned by the watchdog, failed, rejected, no ACK within `ack_within_s` (or
    /// an escalation its new owner did not ACK in time), deadline passed, worker died (it fires
    /// no follow-up, so the row is the only place that says nobody is working on it). Amber:
    /// blocked, waiting for input or authorisation. Green otherwise.
    pub fn judge(&self, ack_within_s: u64, now: DateTime<Utc>) -> (Band, Asc, Option<String>) {
        let red = |asc: Asc, why: String| (Band::Red, asc, Some(why));
        let amber = |asc: Asc, why: String| (Band::Amber, asc, Some(why));
        match self.state.as_str() {
            "TASK_STATE_FAILED" if self.status_message.as_deref() == Some(ORPHANED_MESSAGE) => {
                return red(Asc::TIMEOUT, "orphaned: no reply produced".into());
            }
            "TASK_STATE_FAILED" => return red(Asc::INTERNAL_ERROR, "failed".into()),
            "TASK_STATE_REJECTED" => return red(Asc::FAILED_PRECONDITION, "rejected".into()),
            "TASK_STATE_COMPLETED" | "TASK_STATE_CANCELED" => {
                return (Band::Green, Asc::SUCCESS, None);
            }
            _ => {}
        }
        if let Some(why) = self.no_ack(ack_within_s, now) {
            return red(Asc::TIMEOUT, why);
        }
        if let Some(deadline) = self.deadline
            && now > deadline
        {
            return red(
                Asc::TIMEOUT,
                format!(
                    "deadline passed {} ago",
                    human_age(seconds_since(deadline, now).max(1))
                ),
            );
        }
        if self.worker_died {
            let quiet = self.last_report_at.unwrap_or(self.created_at);
            return red(
                Asc::DEPENDENCY_UNAVAILABLE,
                format!(
                    "worker died: no report for {}",
                    human_age(seconds_since(quiet, now))
                ),
            );
        }
        if let Some(on) = &self.blocked_on {
            return amber(Asc::HUMAN_INPUT_REQUIRED, format!("blocked on {on}"));
        }
        match self.state.as_str() {
            "TASK_STATE_INPUT_REQUIRED" => {
                amber(Asc::HUMAN_INPUT_REQUIRED, "waiting for input".into())
            }
            "TASK_STATE_AUTH_REQUIRED" => amber(
                Asc::AUTHENTICATION_REQUIRED,
                "waiting for authorisation".into(),
            ),
            _ => (Band::Green, Asc::SUCCESS, None),
        }
    }

    /// "nobody has taken it for 14 min" (or "vega has not taken it …" when it is assigned)
    /// once the ACK limit is reached with no ACK, or "min has not taken it for 14 min" for the
    /// agent an escalation named when it has not ACKed in its turn: who, in words that agree
    /// with who the task is assigned to. A limit of 0
    /// (a snapshot written before the rule existed) judges nothing.
    fn no_ack(&self, ack_within_s: u64, now: DateTime<Utc>) -> Option<String> {
        if ack_within_s == 0 {
            return None;
        }
        match &self.ack {
            None => {
                let age = seconds_since(self.created_at, now);
                (age >= ack_within_s).then(|| match &self.owner {
                    Some(owner) => format!("{owner} has not taken it for {}", human_age(age)),
                    None => format!("nobody has taken it for {}", human_age(age)),
                })
            }
            Some(ack) if ack.kind == "escalating" => {
                let to = ack.to.as_deref().or(self.owner.as_deref()).unwrap_or("?");
                let age = seconds_since(ack.at, now);
                (age >= ack_within_s)
                    .then(|| format!("{to} has not taken it for {}", human_age(age)))
            }
            Some(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    fn t0() -> DateTime<Utc> {
        "2026-11-30T14:00:00Z".parse().unwrap()
    }

    fn rules() -> crate::RulesView {
        crate::RulesView {
            ack_within_s: 600,
            ..crate::rules::tests::rules()
        }
    }

    fn task() -> QueueTask {
        QueueTask {
            id: "q_1".into(),
            title: "Rotate the vault key".into(),
            owner: None,
            tagged: vec!["mira".into(), "nova".into(), "sol".into()],
            created_by: "operator".into(),
            created_at: t0(),
            deadline: Some(t0() + Duration::hours(2)),
            state: "TASK_STATE_SUBMITTED".into(),
            ack: None,
            blocked_on: None,
            last_report_at: None,
            status_message: None,
            worker_died: false,
            band: Band::Green,
            status: Asc::SUCCESS,
            reason: None,
            checked_at: t0(),
            stale: false,
        }
    }

    fn at(t: &QueueTask, secs: i64) -> (Band, Option<String>) {
        let (band, _, why) = t.judge(rules().ack_within_s, t0() + Duration::seconds(secs));
        (band, why)
    }

    #[test]
    fn no_ack_is_red_at_the_rules_limit_not_a_second_before() {
        let t = task();
        assert_eq!(at(&t, 599), (Band::Green, None));
        assert_eq!(
            at(&t, 600),
            (Band::Red, Some("nobody has taken it for 10 min".into()))
        );
        let owned = QueueTask {
            owner: Some("sol".into()),
            ack: Some(QueueAck {
                kind: "owning".into(),
                by: "sol".into(),
                at: t0() + Duration::seconds(30),
                eta: Some(t0() + Duration::minutes(45)),
                to: None,
            }),
            state: "TASK_STATE_WORKING".into(),
            ..task()
        };
        assert_eq!(at(&owned, 3600), (Band::Green, None));
    }

    #[test]
    fn a_deadline_is_red_once_passed_and_a_finished_task_never() {
        let owned = QueueTask {
            owner: Some("sol".into()),
            ack: Some(QueueAck {
                kind: "owning".into(),
                by: "sol".into(),
                at: t0(),
                eta: None,
                to: None,
            }),
            ..task()
        };
        assert_eq!(at(&owned, 7200).0, Band::Green, "due at 16:00, not past it");
        assert_eq!(
            at(&owned, 7201),
            (Band::Red, Some("deadline passed 1 s ago".into()))
        );
        assert_eq!(
            at(&owned, 7200 + 7200),
            (Band::Red, Some("deadline passed 2 h ago".into()))
        );
        let done = QueueTask {
            state: "TASK_STATE_COMPLETED".into(),
            ..owned
        };
        assert_eq!(at(&done, 99_999), (Band::Green, None));
    }

    #[test]
    fn orphaned_failed_blocked_escalated_and_died_say_so() {
        let orphan = QueueTask {
            state: "TASK_STATE_FAILED".into(),
            status_message: Some(ORPHANED_MESSAGE.into()),
            ..task()
        };
        assert_eq!(
            at(&orphan, 0),
            (Band::Red, Some("orphaned: no reply produced".into()))
        );
        let acked = |kind: &str, to: Option<&str>| QueueAck {
            kind: kind.into(),
            by: "sol".into(),
            at: t0(),
            eta: None,
            to: to.map(Into::into),
        };
        let blocked = QueueTask {
            owner: Some("sol".into()),
            ack: Some(acked("blocked", None)),
            blocked_on: Some("t_1a2b: LAB disk full".into()),
            ..task()
        };
        assert_eq!(
            at(&blocked, 60),
            (Band::Amber, Some("blocked on t_1a2b: LAB disk full".into()))
        );
        let escalated = QueueTask {
            owner: Some("sol".into()),
            ack: Some(acked("escalating", Some("min"))),
            ..task()
        };
        assert_eq!(at(&escalated, 599), (Band::Green, None));
        assert_eq!(
            at(&escalated, 600),
            (Band::Red, Some("min has not taken it for 10 min".into()))
        );
        let died = QueueTask {
            owner: Some("sol".into()),
            ack: Some(acked("owning", None)),
            worker_died: true,
            ..task()
        };
        assert_eq!(
            at(&died, 3600),
            (Band::Red, Some("worker died: no report for 1 h".into()))
        );
    }
}

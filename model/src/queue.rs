//! The work queue's tasks as status.json carries them (`tasks.queue[]`, spec 003 §3.2): who owns
//! what, whether they ACKed (§4), what is blocked, what died; and the one judge of a task's band
//! at a moment, used by the collector when it writes and by the page between polls (an ACK that
//! is due, or a deadline, passes while the page is open).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::asc::Asc;
use crate::band::Band;
use crate::clock::{ClockView, reached};
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
    /// Seconds nothing was heard about it (since its last report, else since it was created),
    /// as fleetdash observed them, at `checked_at` (issue 31: a step of the clock changes no
    /// age). Absent in snapshots written before: the stamps are judged instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quiet_s: Option<u64>,
    /// Seconds its ACK has been awaited (since it was created, or since it was escalated), as
    /// observed, at `checked_at`; absent once ACKed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unacked_s: Option<u64>,
    /// Seconds from `checked_at` to its deadline, as observed (below zero once passed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_in_s: Option<i64>,
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

    /// Seconds nothing was heard about it at `now`: as observed at `checked_at`, plus the time
    /// since by `clock` (or, in a snapshot written before observed ages, by its stamps).
    pub fn quiet_age(&self, now: DateTime<Utc>, clock: &ClockView) -> u64 {
        match self.quiet_s {
            Some(q) => q.saturating_add(clock.elapsed(self.checked_at, now)),
            None => seconds_since(self.last_report_at.unwrap_or(self.created_at), now),
        }
    }

    /// Seconds the ACK has been awaited at `now`, since `stamp` (its creation or escalation).
    fn unacked_age(&self, stamp: DateTime<Utc>, now: DateTime<Utc>, clock: &ClockView) -> u64 {
        match self.unacked_s {
            Some(u) => u.saturating_add(clock.elapsed(self.checked_at, now)),
            None => seconds_since(stamp, now),
        }
    }

    /// Seconds since its deadline passed, once it has (strictly after its instant).
    fn past_deadline(&self, now: DateTime<Utc>, clock: &ClockView) -> Option<u64> {
        match self.deadline_in_s {
            Some(left) => {
                let since = i64::try_from(clock.elapsed(self.checked_at, now)).unwrap_or(i64::MAX);
                let past = since.saturating_sub(left);
                (past > 0).then(|| past.unsigned_abs())
            }
            None => self
                .deadline
                .filter(|d| now > *d)
                .map(|d| seconds_since(d, now).max(1)),
        }
    }

    /// The task's band, code and reason at `now`, with ACKs due within `ack_within_s`, by the
    /// `clock` of the snapshot (its jumps taken out of the time since `checked_at`; in its grace
    /// if one runs): the one judge of a queue task, for the collector when it
    /// writes and the page between polls. Limits are reached AT N seconds (as the stuck rule),
    /// after a forward step or a wake once watched again; a deadline passes strictly after its
    /// instant.
    ///
    /// Red: orphaned by the watchdog, failed, rejected, no ACK within `ack_within_s` (or
    /// an escalation its new owner did not ACK in time), deadline passed, worker died (it fires
    /// no follow-up, so the row is the only place that says nobody is working on it). Amber:
    /// blocked, waiting for input or authorisation. Green otherwise.
    pub fn judge(
        &self,
        ack_within_s: u64,
        now: DateTime<Utc>,
        clock: &ClockView,
    ) -> (Band, Asc, Option<String>) {
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
        if let Some(why) = self.no_ack(ack_within_s, now, clock) {
            return red(Asc::TIMEOUT, why);
        }
        if let Some(past) = self.past_deadline(now, clock) {
            return red(
                Asc::TIMEOUT,
                format!("deadline passed {} ago", human_age(past.max(1))),
            );
        }
        if self.worker_died {
            return red(
                Asc::DEPENDENCY_UNAVAILABLE,
                format!(
                    "worker died: no report for {}",
                    human_age(self.quiet_age(now, clock))
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
    fn no_ack(&self, ack_within_s: u64, now: DateTime<Utc>, clock: &ClockView) -> Option<String> {
        if ack_within_s == 0 {
            return None;
        }
        let grace = clock.grace_at(now);
        match &self.ack {
            None => {
                let age = self.unacked_age(self.created_at, now, clock);
                reached(age, ack_within_s, grace).then(|| match &self.owner {
                    Some(owner) => format!("{owner} has not taken it for {}", human_age(age)),
                    None => format!("nobody has taken it for {}", human_age(age)),
                })
            }
            Some(ack) if ack.kind == "escalating" => {
                let to = ack.to.as_deref().or(self.owner.as_deref()).unwrap_or("?");
                let age = self.unacked_age(ack.at, now, clock);
                reached(age, ack_within_s, grace)
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
            quiet_s: None,
            unacked_s: None,
            deadline_in_s: None,
            worker_died: false,
            band: Band::Green,
            status: Asc::SUCCESS,
            reason: None,
            checked_at: t0(),
            stale: false,
        }
    }

    fn at(t: &QueueTask, secs: i64) -> (Band, Option<String>) {
        let (band, _, why) = t.judge(
            rules().ack_within_s,
            t0() + Duration::seconds(secs),
            &ClockView::default(),
        );
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

    /// Ages observed by the collector (issue 31) win over the stamps: after the hub's clock
    /// jumped a day ahead, a task created 2 min before is not "not taken for 1 d"; after it
    /// jumped back an hour, a task 15 min unACKed is still red, not green.
    #[test]
    fn observed_ages_win_over_the_stamps() {
        let now = t0() + Duration::days(1) + Duration::seconds(120);
        let stepped = QueueTask {
            unacked_s: Some(120),
            quiet_s: Some(120),
            deadline_in_s: Some(7200 - 120),
            checked_at: now,
            ..task()
        };
        assert_eq!(
            stepped
                .judge(rules().ack_within_s, now, &ClockView::default())
                .0,
            Band::Green
        );
        let back = t0() - Duration::hours(1) + Duration::minutes(15);
        let unacked = QueueTask {
            unacked_s: Some(900),
            checked_at: back,
            ..task()
        };
        let (band, _, why) = unacked.judge(rules().ack_within_s, back, &ClockView::default());
        assert_eq!(band, Band::Red);
        assert_eq!(why.as_deref(), Some("nobody has taken it for 15 min"));
        // Between polls the page adds the time since the check.
        let (_, _, why) = unacked.judge(
            rules().ack_within_s,
            back + Duration::minutes(2),
            &ClockView::default(),
        );
        assert_eq!(why.as_deref(), Some("nobody has taken it for 17 min"));
        // A deadline passes strictly after its instant, as observed.
        let due = QueueTask {
            deadline_in_s: Some(0),
            checked_at: t0(),
            ..task()
        };
        assert_eq!(due.judge(0, t0(), &ClockView::default()).0, Band::Green);
        let (band, _, why) = due.judge(0, t0() + Duration::seconds(1), &ClockView::default());
        assert_eq!(
            (band, why.as_deref()),
            (Band::Red, Some("deadline passed 1 s ago"))
        );
    }

    /// After a wake, a task not yet due waits one whole window watched again before it is
    /// "not taken"; one already red stays red.
    #[test]
    fn a_grace_holds_the_ack_window() {
        let now = t0() + Duration::minutes(9);
        // Woken a minute ago (a jump ahead, nothing unwatched before it).
        let woke = &ClockView {
            judging_from: Some(now - Duration::seconds(60)),
            ..ClockView::default()
        };
        let young = QueueTask {
            unacked_s: Some(650),
            checked_at: now,
            ..task()
        };
        assert_eq!(
            young
                .judge(rules().ack_within_s, now, &ClockView::default())
                .0,
            Band::Red
        );
        assert_eq!(young.judge(rules().ack_within_s, now, woke).0, Band::Green);
        let old = QueueTask {
            unacked_s: Some(700),
            ..young.clone()
        };
        assert_eq!(old.judge(rules().ack_within_s, now, woke).0, Band::Red);
    }
}

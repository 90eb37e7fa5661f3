//! The work queue's tasks as status.json carries them (`tasks.queue[]`, spec 003 §3.2): who owns
//! what, whether they ACKed (§4), what is blocked, what died; and the one judge of a task's band
//! at a moment, used by the collector when it writes and by the page between polls (an ACK that
//! is due, a deadline, the no-reply or worker-died limit passes while the page is open), with
//! when its verdict turns next by time alone ([`QueueTask::turns_in`]).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::asc::Asc;
use crate::band::Band;
use crate::clock::{ClockView, reached, reached_in};
use crate::rules::RulesView;
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
    /// Seconds from `checked_at` until its verdict turns by time alone, as observed: the next
    /// of its limits still ahead ([`QueueTask::turns_in`]). Absent when none is ahead (a
    /// finished task) and in snapshots written before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turns_in_s: Option<u64>,
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

/// The rules' limits a queue task is judged by, as status.json's `rules` carries them. A limit
/// of 0 (a snapshot written before the rule reached it) judges nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueLimits {
    /// `ack.within_seconds`: an ACK not come this long after the task was assigned (or
    /// escalated) is red.
    pub ack_within_s: u64,
    /// `stuck.no_reply_seconds`: a WORKING task with no report this long is red, and orphaned
    /// by the watchdog's sweep (spec 003 §3.5).
    pub no_reply_s: u64,
    /// `worker_died.no_report_seconds`: a claimed, unfinished task with no report this long is
    /// red, and recorded so by the sweep.
    pub worker_died_s: u64,
}

impl QueueLimits {
    pub fn of(rules: &RulesView) -> QueueLimits {
        QueueLimits {
            ack_within_s: rules.ack_within_s,
            no_reply_s: rules.no_reply_s,
            worker_died_s: rules.worker_died_s,
        }
    }
}

const WORKING: &str = "TASK_STATE_WORKING";

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

    /// Since when its ACK is awaited: its creation, or its escalation; none once taken.
    fn awaited_since(&self) -> Option<DateTime<Utc>> {
        match &self.ack {
            None => Some(self.created_at),
            Some(ack) if ack.kind == "escalating" => Some(ack.at),
            Some(_) => None,
        }
    }

    /// Whether its owner claimed it (an owning or blocked ACK of its own): the tasks the
    /// worker-died limit applies to.
    fn claimed(&self) -> bool {
        self.ack.as_ref().is_some_and(|a| {
            Some(&a.by) == self.owner.as_ref() && (a.kind == "owning" || a.kind == "blocked")
        })
    }

    /// The task's band, code and reason at `now`, by the rules' `limits`, by the `clock` of the
    /// snapshot (its jumps taken out of the time since `checked_at`; in its grace if one runs):
    /// the one judge of a queue task, for the collector when it writes, `fleetdash tasks` and
    /// the page between polls. Limits are reached AT N seconds (as the stuck rule), after a
    /// forward step or a wake once watched again; a deadline passes strictly after its instant.
    ///
    /// Red: orphaned by the watchdog, failed, rejected, no ACK within `ack_within_s` (or an
    /// escalation its new owner did not ACK in time), WORKING with no reply for `no_reply_s`
    /// (the tasks the sweep orphans, red from that second, before the sweep runs), deadline
    /// passed, worker died (recorded by the sweep, or due: a claimed task with no report for
    /// `worker_died_s`; it fires no follow-up, so the row is the only place that says nobody
    /// is working on it). Amber: blocked, waiting for input or authorisation. Green otherwise.
    pub fn judge(
        &self,
        limits: QueueLimits,
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
        if let Some(why) = self.no_ack(limits.ack_within_s, now, clock) {
            return red(Asc::TIMEOUT, why);
        }
        let grace = clock.grace_at(now);
        let quiet = self.quiet_age(now, clock);
        let quiet_for = |window: u64| window > 0 && reached(quiet, window, grace);
        if self.state == WORKING && quiet_for(limits.no_reply_s) {
            return red(
                Asc::TIMEOUT,
                format!(
                    "no reply for {}: orphaned at the next sweep",
                    human_age(quiet)
                ),
            );
        }
        if let Some(past) = self.past_deadline(now, clock) {
            return red(
                Asc::TIMEOUT,
                format!("deadline passed {} ago", human_age(past.max(1))),
            );
        }
        if self.worker_died || (self.claimed() && quiet_for(limits.worker_died_s)) {
            return red(
                Asc::DEPENDENCY_UNAVAILABLE,
                format!("worker died: no report for {}", human_age(quiet)),
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

    /// In how many seconds from `now` its verdict turns by time alone ([`QueueTask::judge`] at
    /// the same `limits` and `clock`): the next of its limits still ahead, whichever comes
    /// first: the ACK limit while one is awaited, its deadline, no reply for a WORKING task
    /// (when the watchdog orphans it), worker died for a claimed one. `None` for a finished
    /// task, and when every limit has passed. A report changes the verdict sooner; a limit
    /// passing while an earlier rule already holds the row red changes at most its reason (and
    /// what the watchdog does: the sweep runs then too).
    pub fn turns_in(
        &self,
        limits: QueueLimits,
        now: DateTime<Utc>,
        clock: &ClockView,
    ) -> Option<u64> {
        if self.is_terminal() {
            return None;
        }
        let grace = clock.grace_at(now);
        let ahead = |age: u64, window: u64| {
            (window > 0 && !reached(age, window, grace)).then(|| reached_in(age, window, grace))
        };
        let quiet = self.quiet_age(now, clock);
        let ack = self
            .awaited_since()
            .and_then(|since| ahead(self.unacked_age(since, now, clock), limits.ack_within_s));
        let no_reply = (self.state == WORKING)
            .then(|| ahead(quiet, limits.no_reply_s))
            .flatten();
        let died = (self.claimed() && !self.worker_died)
            .then(|| ahead(quiet, limits.worker_died_s))
            .flatten();
        [ack, no_reply, died, self.deadline_turns_in(now, clock)]
            .into_iter()
            .flatten()
            .min()
    }

    /// In how many seconds from `now` its deadline passes (strictly after its instant), while
    /// it has not.
    fn deadline_turns_in(&self, now: DateTime<Utc>, clock: &ClockView) -> Option<u64> {
        if self.past_deadline(now, clock).is_some() {
            return None;
        }
        let left = match self.deadline_in_s {
            Some(left) => {
                let since = i64::try_from(clock.elapsed(self.checked_at, now)).unwrap_or(i64::MAX);
                left.saturating_sub(since)
            }
            None => (self.deadline? - now).num_milliseconds().div_euclid(1000),
        };
        Some(left.max(0).unsigned_abs().saturating_add(1))
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
        let since = self.awaited_since()?;
        let age = self.unacked_age(since, now, clock);
        if !reached(age, ack_within_s, grace) {
            return None;
        }
        Some(match (&self.ack, &self.owner) {
            (Some(ack), owner) => {
                let to = ack.to.as_deref().or(owner.as_deref()).unwrap_or("?");
                format!("{to} has not taken it for {}", human_age(age))
            }
            (None, Some(owner)) => format!("{owner} has not taken it for {}", human_age(age)),
            (None, None) => format!("nobody has taken it for {}", human_age(age)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    fn t0() -> DateTime<Utc> {
        "2026-11-30T14:00:00Z".parse().unwrap()
    }

    /// The shipped rules' limits (`crate::rules::tests::rules`): ACK within 10 min, no reply
    /// 5 min, worker died 1 h.
    fn limits() -> QueueLimits {
        QueueLimits::of(&crate::rules::tests::rules())
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
            turns_in_s: None,
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
            limits(),
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
            // It reported a minute ago: the no-reply rule is not this test's.
            last_report_at: Some(t0() + Duration::seconds(3540)),
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
            // Its owner reported shortly before: worker died is not this test's.
            last_report_at: Some(t0() + Duration::seconds(7000)),
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
            stepped.judge(limits(), now, &ClockView::default()).0,
            Band::Green
        );
        let back = t0() - Duration::hours(1) + Duration::minutes(15);
        let unacked = QueueTask {
            unacked_s: Some(900),
            checked_at: back,
            ..task()
        };
        let (band, _, why) = unacked.judge(limits(), back, &ClockView::default());
        assert_eq!(band, Band::Red);
        assert_eq!(why.as_deref(), Some("nobody has taken it for 15 min"));
        // Between polls the page adds the time since the check.
        let (_, _, why) =
            unacked.judge(limits(), back + Duration::minutes(2), &ClockView::default());
        assert_eq!(why.as_deref(), Some("nobody has taken it for 17 min"));
        // A deadline passes strictly after its instant, as observed.
        let due = QueueTask {
            deadline_in_s: Some(0),
            checked_at: t0(),
            ..task()
        };
        assert_eq!(
            due.judge(QueueLimits::default(), t0(), &ClockView::default())
                .0,
            Band::Green
        );
        let (band, _, why) = due.judge(
            QueueLimits::default(),
            t0() + Duration::seconds(1),
            &ClockView::default(),
        );
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
            young.judge(limits(), now, &ClockView::default()).0,
            Band::Red
        );
        assert_eq!(young.judge(limits(), now, woke).0, Band::Green);
        let old = QueueTask {
            unacked_s: Some(700),
            ..young.clone()
        };
        assert_eq!(old.judge(limits(), now, woke).0, Band::Red);
    }

    /// A WORKING task owned by sol, its last news (the ACK) at 14:00 as observed at
    /// `checked_at` 14:00: what the collector writes.
    fn working() -> QueueTask {
        QueueTask {
            owner: Some("sol".into()),
            ack: Some(QueueAck {
                kind: "owning".into(),
                by: "sol".into(),
                at: t0(),
                eta: None,
                to: None,
            }),
            state: "TASK_STATE_WORKING".into(),
            last_report_at: Some(t0()),
            quiet_s: Some(0),
            deadline: None,
            ..task()
        }
    }

    /// Issue 43: status.json had a WORKING task green at `quiet_s: 312`, past the 300 s rule,
    /// while `fleetdash tasks` already said it was orphaned. It is red from the 300th second,
    /// in the words of what comes next, for the tasks the sweep orphans (WORKING) only.
    #[test]
    fn a_working_task_is_red_at_the_no_reply_limit_not_a_second_before() {
        let t = working();
        let limit = limits().no_reply_s;
        assert_eq!(limit, 300);
        assert_eq!(at(&t, 299), (Band::Green, None));
        assert_eq!(
            at(&t, 300),
            (
                Band::Red,
                Some("no reply for 5 min: orphaned at the next sweep".into())
            )
        );
        // As status.json carried it: 312 s quiet when checked, judged then and after.
        let written = QueueTask {
            quiet_s: Some(312),
            ..working()
        };
        let (band, status, why) = written.judge(limits(), t0(), &ClockView::default());
        assert_eq!((band, status), (Band::Red, Asc::TIMEOUT));
        assert_eq!(
            why.as_deref(),
            Some("no reply for 5 min: orphaned at the next sweep")
        );
        // Checked at 299 s, the page turns it red one second later.
        let young = QueueTask {
            quiet_s: Some(299),
            ..working()
        };
        assert_eq!(
            young.judge(limits(), t0(), &ClockView::default()).0,
            Band::Green
        );
        assert_eq!(
            young
                .judge(limits(), t0() + Duration::seconds(1), &ClockView::default())
                .0,
            Band::Red
        );
        // The sweep orphans WORKING tasks only: blocked, waiting or not taken, the rule is not
        // theirs.
        let blocked = QueueTask {
            state: "TASK_STATE_INPUT_REQUIRED".into(),
            blocked_on: Some("LAB disk full".into()),
            ..working()
        };
        assert_eq!(at(&blocked, 600).0, Band::Amber);
        let submitted = QueueTask {
            last_report_at: None,
            ..task()
        };
        assert_eq!(at(&submitted, 400), (Band::Green, None));
        // A limit of 0 (a snapshot without the rule) judges nothing.
        let none = QueueLimits {
            no_reply_s: 0,
            ..limits()
        };
        assert_eq!(
            t.judge(none, t0() + Duration::seconds(400), &ClockView::default())
                .0,
            Band::Green
        );
    }

    /// After a wake, a WORKING task gets one whole window watched before it is red, as the
    /// sweep waits before it orphans.
    #[test]
    fn a_grace_holds_the_no_reply_window() {
        let now = t0() + Duration::seconds(350);
        let woke = &ClockView {
            judging_from: Some(now - Duration::seconds(60)),
            ..ClockView::default()
        };
        let t = working();
        assert_eq!(t.judge(limits(), now, &ClockView::default()).0, Band::Red);
        assert_eq!(t.judge(limits(), now, woke).0, Band::Green);
        assert_eq!(t.turns_in(limits(), now, woke), Some(240));
        assert_eq!(
            t.judge(limits(), now + Duration::seconds(239), woke).0,
            Band::Green
        );
        assert_eq!(
            t.judge(limits(), now + Duration::seconds(240), woke).0,
            Band::Red
        );
    }

    /// A claimed task with no report for the worker-died limit is red from that second, before
    /// the sweep records it; a task nobody claimed is the ACK rule's.
    #[test]
    fn worker_died_is_red_at_its_limit_before_the_sweep_records_it() {
        let blocked = QueueTask {
            state: "TASK_STATE_INPUT_REQUIRED".into(),
            blocked_on: Some("LAB disk full".into()),
            ack: Some(QueueAck {
                kind: "blocked".into(),
                ..working().ack.unwrap()
            }),
            ..working()
        };
        assert_eq!(at(&blocked, 3599).0, Band::Amber);
        assert_eq!(
            at(&blocked, 3600),
            (Band::Red, Some("worker died: no report for 1 h".into()))
        );
        let escalated = QueueTask {
            state: "TASK_STATE_SUBMITTED".into(),
            owner: Some("min".into()),
            ack: Some(QueueAck {
                kind: "escalating".into(),
                to: Some("min".into()),
                ..working().ack.unwrap()
            }),
            ..working()
        };
        assert_eq!(
            at(&escalated, 3600).1.as_deref(),
            Some("min has not taken it for 1 h"),
            "not claimed: the ACK rule's"
        );
    }

    /// `turns_in` is the second the judge's band turns by time alone: the ACK limit, the
    /// deadline, no reply, worker died, whichever is first; none for a finished task.
    #[test]
    fn turns_in_is_the_second_the_verdict_turns() {
        let cases = [
            // Not taken yet, created 100 s ago, due in 2 h: the ACK limit in 500 s.
            (
                QueueTask {
                    unacked_s: Some(100),
                    quiet_s: Some(100),
                    deadline_in_s: Some(7200),
                    ..task()
                },
                500,
            ),
            // WORKING, quiet 200 s: orphaned in 100 s.
            (
                QueueTask {
                    quiet_s: Some(200),
                    ..working()
                },
                100,
            ),
            // WORKING, due in 60 s: the deadline passes strictly after it, at 61 s.
            (
                QueueTask {
                    quiet_s: Some(10),
                    deadline: Some(t0() + Duration::seconds(60)),
                    deadline_in_s: Some(60),
                    ..working()
                },
                61,
            ),
            // Blocked, claimed, quiet 3000 s: worker died in 600 s.
            (
                QueueTask {
                    state: "TASK_STATE_INPUT_REQUIRED".into(),
                    blocked_on: Some("LAB disk full".into()),
                    quiet_s: Some(3000),
                    ..working()
                },
                600,
            ),
        ];
        for (t, turns) in cases {
            let clock = ClockView::default();
            assert_eq!(t.turns_in(limits(), t0(), &clock), Some(turns), "{t:?}");
            let band = |s: u64| {
                t.judge(limits(), t0() + Duration::seconds(s as i64), &clock)
                    .0
            };
            assert_eq!(band(turns - 1), band(0), "{t:?}");
            assert_ne!(band(turns), band(0), "{t:?}");
        }
        // Stamps only (a snapshot written before observed ages): the same turn.
        let old = QueueTask {
            quiet_s: None,
            ..working()
        };
        assert_eq!(
            old.turns_in(
                limits(),
                t0() + Duration::seconds(200),
                &ClockView::default()
            ),
            Some(100)
        );
        let done = QueueTask {
            state: "TASK_STATE_COMPLETED".into(),
            ..working()
        };
        assert_eq!(done.turns_in(limits(), t0(), &ClockView::default()), None);
        // Every limit passed: nothing turns by time any more.
        let late = QueueTask {
            quiet_s: Some(4000),
            ..working()
        };
        assert_eq!(late.turns_in(limits(), t0(), &ClockView::default()), None);
    }
}

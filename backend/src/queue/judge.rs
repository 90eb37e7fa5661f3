//! The work queue's rules as pure functions of a row, the rules' thresholds and `now` (clocked
//! from outside, so every rule is tested at its exact boundary): the band and reason a row shows
//! (the model's one judge, [`QueueTask::judge`]), and when the watchdog's two conditions (§3.5)
//! are due.
//!
//! Boundaries follow the live-task stuck rule: a limit of N seconds is reached AT N seconds
//! (`age >= N`), one second before it is not. A deadline passes strictly after its instant.

use chrono::{DateTime, Utc};
#[cfg(test)]
use fleetdash_model::human_age;
use fleetdash_model::{Asc, Band, QueueAck, QueueTask};

use super::{Ack, QueueRules, RowRead, TaskRow, WireState};
use crate::clock::Clocked;
use crate::config::Rules;

/// What the watchdog writes on a task it fails (spec §3.5, adapter.py's message).
pub use fleetdash_model::queue::ORPHANED_MESSAGE;

/// A row's colour and, when it is not green, why, in the operator's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub band: Band,
    pub status: Asc,
    pub reason: Option<String>,
}

/// The column heads of [`line`], as `fleetdash tasks` prints them.
pub fn heads() -> String {
    format!(
        "{:<14}  {:<12}  {:<24}  {:<14}  {:<6}  REASON  TITLE",
        "ID", "OWNER", "ACK", "STATE", "BAND"
    )
}

/// One task on one line, as `fleetdash tasks` (and the hub's `queue` question) show it: id,
/// owner, ACK, state, band, reason and title.
pub fn line(row: &TaskRow, rules: &QueueRules, at: &Clocked) -> String {
    let verdict = judge(row, rules, at);
    let ack = match &row.ack {
        None => "no ACK".to_string(),
        Some(a) => match &a.ack {
            Ack::Owning { eta: Some(eta) } => {
                format!("owning ({}, ETA {})", a.by, eta.format("%H:%M UTC"))
            }
            Ack::Owning { eta: None } => format!("owning ({})", a.by),
            Ack::Escalating { to } => format!("escalating to {to} ({})", a.by),
            Ack::Blocked { .. } => format!("blocked ({})", a.by),
            Ack::Yielded => format!("yielded ({})", a.by),
        },
    };
    let state = row.state.as_str().trim_start_matches("TASK_STATE_");
    format!(
        "{:<14}  {:<12}  {:<24}  {:<14}  {} {:<4}  {}  \"{}\"",
        row.id,
        row.owner.as_deref().unwrap_or("-"),
        ack,
        state,
        verdict.band.icon(),
        verdict.band.word(),
        verdict.reason.as_deref().unwrap_or("-"),
        row.title,
    )
}

/// The band and reason of `row` at `at`: the model's one judge of a queue task
/// ([`QueueTask::judge`]), which the page also applies between polls, so the CLI, the
/// snapshot and the page cannot disagree.
pub fn judge(row: &TaskRow, rules: &QueueRules, at: &Clocked) -> Verdict {
    let (band, status, reason) =
        model_row(row, at).judge(rules.limits(), at.wall(), &at.now.grace_view());
    Verdict {
        band,
        status,
        reason,
    }
}

/// `row` as status.json carries it (`tasks.queue[]`), judged at `at`, with its ages as
/// observed and in how many seconds its verdict turns by time alone (`turns_in_s`).
pub fn to_snapshot(row: &TaskRow, rules: &QueueRules, at: &Clocked) -> QueueTask {
    let mut task = model_row(row, at);
    let clock = at.now.grace_view();
    let (band, status, reason) = task.judge(rules.limits(), at.wall(), &clock);
    task.band = band;
    task.status = status;
    task.reason = reason;
    task.turns_in_s = task.turns_in(rules.limits(), at.wall(), &clock);
    task
}

/// The names the clock knows a task's stamps by: the same for the sweep and the collector.
fn quiet_what(id: &str) -> String {
    format!("queue task {id}'s last news")
}

fn unacked_what(id: &str) -> String {
    format!("queue task {id}'s wait for an ACK")
}

fn deadline_what(id: &str) -> String {
    format!("queue task {id}'s deadline")
}

/// What the clock knows a finished task's finish by: status.json's retention and the file's
/// judge its age on the same sighting.
pub fn finish_what(id: &str) -> String {
    format!("queue task {id}'s finish")
}

/// Notes on the clock what a report just committed stamped on `row`: its news and, while it
/// awaits an ACK, since when.
pub fn note(row: &TaskRow, at: &Clocked) {
    at.note(&quiet_what(&row.id), quiet_since(row));
    if let Some(since) = awaited_since(row) {
        at.note(&unacked_what(&row.id), since);
    }
}

/// Notes news of the task `id` received at `received_at`.
pub fn note_news(id: &str, received_at: DateTime<Utc>, at: &Clocked) {
    at.note(&quiet_what(id), received_at);
}

/// Since when the task awaits an ACK: its creation, or its escalation; none once taken.
fn awaited_since(row: &TaskRow) -> Option<DateTime<Utc>> {
    match &row.ack {
        None => Some(row.created_at),
        Some(a) if matches!(a.ack, Ack::Escalating { .. }) => Some(a.at),
        Some(_) => None,
    }
}

/// Seconds nothing was heard about the task at `at`, as observed.
pub fn quiet_age(row: &TaskRow, at: &Clocked) -> u64 {
    at.age(&quiet_what(&row.id), quiet_since(row))
}

/// The row in the model's shape, not judged yet (green, checked at `at`), its ages observed.
fn model_row(row: &TaskRow, at: &Clocked) -> QueueTask {
    let now = at.wall();
    QueueTask {
        id: row.id.clone(),
        title: row.title.clone(),
        owner: row.owner.clone(),
        tagged: row.tagged.clone(),
        created_by: row.created_by.clone(),
        created_at: row.created_at,
        deadline: row.deadline,
        state: row.state.as_str().to_string(),
        ack: row.ack.as_ref().map(|a| {
            let (kind, eta, to) = match &a.ack {
                Ack::Owning { eta } => ("owning", *eta, None),
                Ack::Escalating { to } => ("escalating", None, Some(to.clone())),
                Ack::Blocked { .. } => ("blocked", None, None),
                Ack::Yielded => ("yielded", None, None),
            };
            QueueAck {
                kind: kind.into(),
                by: a.by.clone(),
                at: a.at,
                eta,
                to,
            }
        }),
        blocked_on: row.blocked_on.clone(),
        last_report_at: row.last_report_at,
        status_message: row.status_message.clone(),
        quiet_s: Some(quiet_age(row, at)),
        unacked_s: awaited_since(row).map(|since| at.age(&unacked_what(&row.id), since)),
        deadline_in_s: row.deadline.map(|d| at.until(&deadline_what(&row.id), d)),
        turns_in_s: None,
        worker_died: row.worker_died,
        band: Band::Green,
        status: Asc::SUCCESS,
        reason: None,
        checked_at: now,
        stale: false,
    }
}

/// Since when nothing was heard about the task: its last report, else its creation.
fn quiet_since(row: &TaskRow) -> DateTime<Utc> {
    row.last_report_at.unwrap_or(row.created_at)
}

/// The 300 s rule (§3.5): a WORKING task with no report for `no_reply_s` (observed; after a
/// forward step or a wake, watched again) is orphaned.
pub fn orphan_due(row: &TaskRow, rules: &QueueRules, at: &Clocked) -> bool {
    row.state == WireState::Working && at.reached(quiet_age(row, at), rules.no_reply_s)
}

/// The coarser condition (§3.5): a task its owner claimed (an owning or blocked ACK) with no
/// report about it for `worker_died_s`, not recorded yet and not finished.
pub fn worker_died_due(row: &TaskRow, rules: &QueueRules, at: &Clocked) -> bool {
    let claimed = row.ack.as_ref().is_some_and(|a| {
        Some(&a.by) == row.owner.as_ref()
            && matches!(a.ack, Ack::Owning { .. } | Ack::Blocked { .. })
    });
    claimed
        && !row.worker_died
        && !row.state.is_terminal()
        && at.reached(quiet_age(row, at), rules.worker_died_s)
}

/// The rules' `queue` group (issue 21): how long a finished task stays in status.json, and at
/// most how many finished ones it lists. The queue's file keeps every task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    pub finished_kept_s: u64,
    pub finished_kept_max: usize,
}

impl Retention {
    pub fn of(rules: &Rules) -> Retention {
        Retention {
            finished_kept_s: rules.queue.finished_kept.seconds,
            finished_kept_max: usize::try_from(rules.queue.finished_kept_max.count)
                .unwrap_or(usize::MAX),
        }
    }
}

/// Why `tasks.queue` leaves a row out; the queue's file keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeftOut {
    /// The operator dismissed it (`fleetdash task dismiss`).
    Dismissed,
    /// Finished, and past the retention: `finished_kept_s` since it finished, or older than
    /// the newest `finished_kept_max` finished ones.
    Retired,
}

impl LeftOut {
    /// The word status.json and the alerts say it with.
    pub fn as_str(self) -> &'static str {
        match self {
            LeftOut::Dismissed => "dismissed",
            LeftOut::Retired => "retired",
        }
    }
}

/// For each of `rows`, whether `tasks.queue` leaves it out at `now`, and why: what the operator
/// dismissed; a finished task once `finished_kept_s` have passed since it finished (reached AT
/// the limit, as every rule of the queue); and the finished ones past the newest
/// `finished_kept_max` (by when they finished, then id). Dismissed finished tasks hold their
/// place among the newest, so that a dismissal never brings an older, retired task back (its
/// alert ended). An open task, and a row that cannot be read (it is red until repaired or
/// dismissed), are never left out unless dismissed.
pub fn left_out(rows: &[RowRead], retention: &Retention, at: &Clocked) -> Vec<Option<LeftOut>> {
    let mut out: Vec<Option<LeftOut>> = rows
        .iter()
        .map(|row| {
            let dismissed = match row {
                Ok(row) => row.dismissed_at.is_some(),
                Err(bad) => bad.dismissed_at.is_some(),
            };
            dismissed.then_some(LeftOut::Dismissed)
        })
        .collect();
    let retire = |i: usize, out: &mut [Option<LeftOut>]| {
        out[i].get_or_insert(LeftOut::Retired);
    };
    let mut newest: Vec<(DateTime<Utc>, &str, usize)> = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        let Ok(row) = row else {
            continue;
        };
        let Some(since) = row.finished_since() else {
            continue;
        };
        if at.age(&finish_what(&row.id), since) >= retention.finished_kept_s {
            retire(i, &mut out);
        } else {
            newest.push((since, &row.id, i));
        }
    }
    // Newest first; past the cap, retired.
    newest.sort_by(|a, b| (b.0, b.1).cmp(&(a.0, a.1)));
    for &(_, _, i) in newest.iter().skip(retention.finished_kept_max) {
        retire(i, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::{AckRecord, Provenance};
    use chrono::{Duration, TimeZone};

    /// The shipped rules file's thresholds: the tests judge by them, not by literals.
    fn rules() -> QueueRules {
        QueueRules::of(
            &crate::config::Rules::parse(
                std::path::Path::new("config/rules.yaml"),
                include_str!("../../../config/rules.yaml"),
            )
            .expect("the shipped rules parse"),
        )
    }

    fn t0() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 10, 20, 22, 0, 0).unwrap()
    }

    fn secs(s: u64) -> Duration {
        Duration::seconds(i64::try_from(s).unwrap())
    }

    fn row() -> TaskRow {
        TaskRow {
            id: "q_1".into(),
            title: "rotate the LAB keys".into(),
            owner: Some("sol".into()),
            tagged: vec![],
            created_by: "operator".into(),
            created_at: t0(),
            deadline: None,
            state: WireState::Submitted,
            ack: None,
            yielded: vec![],
            blocked_on: None,
            last_report_at: None,
            status_message: None,
            worker_died: false,
            provenance: Provenance::default(),
            finished_at: None,
            dismissed_at: None,
        }
    }

    fn owned(at: DateTime<Utc>) -> TaskRow {
        TaskRow {
            state: WireState::Working,
            ack: Some(AckRecord {
                by: "sol".into(),
                ack: Ack::Owning { eta: None },
                at,
            }),
            last_report_at: Some(at),
            ..row()
        }
    }

    #[test]
    fn no_ack_turns_red_at_the_limit_and_not_a_second_before() {
        let r = rules();
        let limit = secs(r.ack_within_s);
        let before = judge(&row(), &r, &Clocked::wall_only(t0() + limit - secs(1)));
        assert_eq!(before.band, Band::Green, "{before:?}");
        let at = judge(&row(), &r, &Clocked::wall_only(t0() + limit));
        assert_eq!(at.band, Band::Red);
        assert_eq!(
            at.reason.as_deref(),
            Some(format!("sol has not taken it for {}", human_age(r.ack_within_s)).as_str())
        );
        let after = judge(&row(), &r, &Clocked::wall_only(t0() + limit + secs(1)));
        assert_eq!(after.band, Band::Red);
        // An ACK at any time before settles it (its owner reporting since).
        let acked = TaskRow {
            last_report_at: Some(t0() + limit * 3 - secs(10)),
            ..owned(t0() + limit - secs(1))
        };
        assert_eq!(
            judge(&acked, &r, &Clocked::wall_only(t0() + limit * 3)).band,
            Band::Green
        );
    }

    #[test]
    fn the_words_are_the_operators() {
        let r = QueueRules {
            ack_within_s: 600,
            no_reply_s: 300,
            worker_died_s: 3600,
            ..rules()
        };
        let v = judge(
            &row(),
            &r,
            &Clocked::wall_only(t0() + Duration::minutes(14)),
        );
        assert_eq!(v.reason.as_deref(), Some("sol has not taken it for 14 min"));
        let late = TaskRow {
            deadline: Some(t0()),
            last_report_at: Some(t0() + Duration::hours(2) - Duration::minutes(1)),
            ..owned(t0())
        };
        let v = judge(&late, &r, &Clocked::wall_only(t0() + Duration::hours(2)));
        assert_eq!(v.reason.as_deref(), Some("deadline passed 2 h ago"));
        // WORKING and silent for the no-reply limit: what the next sweep does, said now.
        let v = judge(
            &owned(t0()),
            &r,
            &Clocked::wall_only(t0() + Duration::minutes(5)),
        );
        assert_eq!(
            (v.band, v.reason.as_deref()),
            (
                Band::Red,
                Some("no reply for 5 min: orphaned at the next sweep")
            )
        );
        let blocked = TaskRow {
            blocked_on: Some("t_1a2b: LAB disk full".into()),
            state: WireState::InputRequired,
            ..owned(t0())
        };
        let v = judge(&blocked, &r, &Clocked::wall_only(t0()));
        assert_eq!(
            (v.band, v.reason.as_deref()),
            (Band::Amber, Some("blocked on t_1a2b: LAB disk full"))
        );
        // Claimed and silent for the worker-died limit: red before the sweep records it.
        let v = judge(&blocked, &r, &Clocked::wall_only(t0() + Duration::hours(1)));
        assert_eq!(
            (v.band, v.reason.as_deref()),
            (Band::Red, Some("worker died: no report for 1 h"))
        );
        let orphaned = TaskRow {
            state: WireState::Failed,
            status_message: Some(ORPHANED_MESSAGE.into()),
            ..owned(t0())
        };
        let v = judge(&orphaned, &r, &Clocked::wall_only(t0()));
        assert_eq!(
            (v.band, v.reason.as_deref()),
            (Band::Red, Some("orphaned: no reply produced"))
        );
    }

    #[test]
    fn a_deadline_passes_strictly_after_its_instant() {
        let r = rules();
        let deadline = t0() + Duration::hours(1);
        // Its owner reported a minute before: the no-reply rule is not this test's.
        let row = TaskRow {
            deadline: Some(deadline),
            ..owned(deadline - secs(60))
        };
        assert_eq!(
            judge(&row, &r, &Clocked::wall_only(deadline - secs(1))).band,
            Band::Green
        );
        assert_eq!(
            judge(&row, &r, &Clocked::wall_only(deadline)).band,
            Band::Green
        );
        let after = judge(&row, &r, &Clocked::wall_only(deadline + secs(1)));
        assert_eq!(after.band, Band::Red);
        assert_eq!(after.reason.as_deref(), Some("deadline passed 1 s ago"));
        // A finished task is judged by how it finished, not by its deadline.
        let done = TaskRow {
            state: WireState::Completed,
            ..row
        };
        assert_eq!(
            judge(&done, &r, &Clocked::wall_only(deadline + secs(60))).band,
            Band::Green
        );
    }

    #[test]
    fn an_escalation_nobody_takes_up_turns_red_at_the_ack_limit() {
        let r = rules();
        let row = TaskRow {
            owner: Some("mira".into()),
            ack: Some(AckRecord {
                by: "sol".into(),
                ack: Ack::Escalating { to: "mira".into() },
                at: t0(),
            }),
            ..row()
        };
        let limit = secs(r.ack_within_s);
        assert_eq!(
            judge(&row, &r, &Clocked::wall_only(t0() + limit - secs(1))).band,
            Band::Green
        );
        let at = judge(&row, &r, &Clocked::wall_only(t0() + limit));
        assert_eq!(at.band, Band::Red);
        assert!(at.reason.unwrap().starts_with("mira has not taken it for "));
    }

    #[test]
    fn the_orphan_rule_is_due_at_no_reply_seconds_for_working_tasks_only() {
        let r = rules();
        let row = owned(t0());
        let limit = secs(r.no_reply_s);
        assert!(!orphan_due(
            &row,
            &r,
            &Clocked::wall_only(t0() + limit - secs(1))
        ));
        assert!(orphan_due(&row, &r, &Clocked::wall_only(t0() + limit)));
        assert!(orphan_due(
            &row,
            &r,
            &Clocked::wall_only(t0() + limit + secs(1))
        ));
        for state in WireState::ALL
            .into_iter()
            .filter(|s| *s != WireState::Working)
        {
            let other = TaskRow {
                state,
                ..row.clone()
            };
            assert!(
                !orphan_due(&other, &r, &Clocked::wall_only(t0() + limit * 10)),
                "{state:?}"
            );
        }
    }

    #[test]
    fn worker_died_is_due_at_its_limit_once_for_a_claimed_unfinished_task() {
        let r = rules();
        let blocked = TaskRow {
            state: WireState::InputRequired,
            blocked_on: Some("LAB disk full".into()),
            ..owned(t0())
        };
        let limit = secs(r.worker_died_s);
        assert!(!worker_died_due(
            &blocked,
            &r,
            &Clocked::wall_only(t0() + limit - secs(1))
        ));
        assert!(worker_died_due(
            &blocked,
            &r,
            &Clocked::wall_only(t0() + limit)
        ));
        assert!(worker_died_due(
            &blocked,
            &r,
            &Clocked::wall_only(t0() + limit + secs(1))
        ));
        let recorded = TaskRow {
            worker_died: true,
            ..blocked.clone()
        };
        assert!(!worker_died_due(
            &recorded,
            &r,
            &Clocked::wall_only(t0() + limit * 2)
        ));
        let v = judge(&recorded, &r, &Clocked::wall_only(t0() + limit));
        assert_eq!(
            (v.band, v.reason.as_deref()),
            (
                Band::Red,
                Some(format!("worker died: no report for {}", human_age(r.worker_died_s)).as_str())
            )
        );
        // Nobody claimed it: that is the ACK rule's business, not a dead worker.
        assert!(!worker_died_due(
            &row(),
            &r,
            &Clocked::wall_only(t0() + limit * 2)
        ));
        let done = TaskRow {
            state: WireState::Completed,
            ..blocked
        };
        assert!(!worker_died_due(
            &done,
            &r,
            &Clocked::wall_only(t0() + limit * 2)
        ));
    }

    /// Issue 43: status.json had a task green past the no-reply limit while `fleetdash tasks`
    /// said it was orphaned. The judge says red, in the sweep's words for it, for exactly the
    /// rows the sweep orphans (`orphan_due`) or records as a dead worker (`worker_died_due`),
    /// at exactly the second it does: every state, every kind of ACK, each side of each limit.
    #[test]
    fn the_judge_is_red_for_exactly_the_rows_the_sweep_acts_on() {
        // No ACK limit: it would speak first for the rows nobody took.
        let r = QueueRules {
            ack_within_s: 0,
            ..rules()
        };
        let acks = [
            None,
            Some(Ack::Owning { eta: None }),
            Some(Ack::Blocked {
                on: "LAB disk full".into(),
            }),
            Some(Ack::Escalating { to: "min".into() }),
            Some(Ack::Yielded),
        ];
        let mut seen = (0, 0);
        for state in WireState::ALL {
            for ack in &acks {
                for by in ["sol", "mira"] {
                    for recorded in [false, true] {
                        let row = TaskRow {
                            state,
                            ack: ack.clone().map(|ack| AckRecord {
                                by: by.into(),
                                ack,
                                at: t0(),
                            }),
                            last_report_at: Some(t0()),
                            worker_died: recorded,
                            ..row()
                        };
                        for limit in [r.no_reply_s, r.worker_died_s] {
                            for age in [limit - 1, limit, limit + 1] {
                                let at = Clocked::wall_only(t0() + secs(age));
                                let v = judge(&row, &r, &at);
                                let why = v.reason.clone().unwrap_or_default();
                                let orphan = orphan_due(&row, &r, &at);
                                assert_eq!(
                                    why.starts_with("no reply for "),
                                    orphan,
                                    "{row:?} at {age} s: {v:?}"
                                );
                                if orphan {
                                    assert!(why.ends_with(": orphaned at the next sweep"));
                                    assert_eq!(v.band, Band::Red);
                                    seen.0 += 1;
                                }
                                let died = worker_died_due(&row, &r, &at)
                                    || (row.worker_died && !row.state.is_terminal());
                                assert_eq!(
                                    why.starts_with("worker died: "),
                                    died && !orphan,
                                    "{row:?} at {age} s: {v:?}"
                                );
                                seen.1 += usize::from(died && !orphan);
                            }
                        }
                    }
                }
            }
        }
        assert!(seen.0 > 0 && seen.1 > 0, "{seen:?}");
    }

    /// What status.json carries of when a row turns (`turns_in_s`) agrees with the sweep: at
    /// `turns_in_s` after the collect, the sweep orphans what the row said would be, and not a
    /// second before.
    #[test]
    fn turns_in_s_is_when_the_sweep_acts() {
        let r = rules();
        let working = owned(t0());
        let at = Clocked::wall_only(t0() + secs(120));
        let shown = to_snapshot(&working, &r, &at);
        assert_eq!(shown.quiet_s, Some(120));
        assert_eq!(shown.turns_in_s, Some(r.no_reply_s - 120));
        let turn = t0() + secs(120) + secs(shown.turns_in_s.unwrap());
        assert!(!orphan_due(
            &working,
            &r,
            &Clocked::wall_only(turn - secs(1))
        ));
        assert!(orphan_due(&working, &r, &Clocked::wall_only(turn)));
        // Not taken: its ACK limit; a finished task: none.
        let unacked = to_snapshot(&row(), &r, &at);
        assert_eq!(unacked.turns_in_s, Some(r.ack_within_s - 120));
        let done = TaskRow {
            state: WireState::Completed,
            ..owned(t0())
        };
        assert_eq!(to_snapshot(&done, &r, &at).turns_in_s, None);
    }

    /// Was: every finished task stayed in status.json for ever.
    #[test]
    fn finished_tasks_leave_at_the_limit_or_past_the_cap_dismissed_ones_always_open_ones_never() {
        let kept = Retention {
            finished_kept_s: 3600,
            finished_kept_max: 2,
        };
        let now = t0() + Duration::hours(10);
        let done = |id: &str, ago: Duration| -> RowRead {
            Ok(TaskRow {
                id: id.into(),
                state: WireState::Completed,
                finished_at: Some(now - ago),
                ..owned(t0())
            })
        };
        let bad = |id: &str, dismissed: bool| -> RowRead {
            Err(crate::queue::Unreadable {
                id: id.into(),
                reason: "state \"TASK_STATE_PAUSED\": not a task state this fleetdash knows".into(),
                dismissed_at: dismissed.then_some(now),
            })
        };
        let rows = vec![
            Ok(owned(t0())),
            done("q_under", secs(kept.finished_kept_s) - secs(1)),
            done("q_at", secs(kept.finished_kept_s)),
            done("q_newest", Duration::minutes(10)),
            done("q_second", Duration::minutes(20)),
            // Dismissed, it still holds its place among the newest: q_second stays out.
            Ok(TaskRow {
                dismissed_at: Some(now),
                ..done("q_dismissed", Duration::minutes(5)).unwrap()
            }),
            Ok(TaskRow {
                id: "q_open_dismissed".into(),
                dismissed_at: Some(now),
                ..owned(t0())
            }),
            bad("q_bad", false),
            bad("q_bad_dismissed", true),
            // A v1 file read as it is: no finished_at, its last report says when.
            Ok(TaskRow {
                id: "q_v1".into(),
                state: WireState::Failed,
                last_report_at: Some(now - Duration::hours(2)),
                ..row()
            }),
        ];
        let got: Vec<(String, Option<LeftOut>)> = rows
            .iter()
            .map(|r| match r {
                Ok(t) => t.id.clone(),
                Err(b) => b.id.clone(),
            })
            .zip(left_out(&rows, &kept, &Clocked::wall_only(now)))
            .collect();
        let want = [
            ("q_1", None),
            // Under the limit, but the third newest finished task: past the cap of two.
            ("q_under", Some(LeftOut::Retired)),
            ("q_at", Some(LeftOut::Retired)),
            ("q_newest", None),
            ("q_second", Some(LeftOut::Retired)),
            ("q_dismissed", Some(LeftOut::Dismissed)),
            ("q_open_dismissed", Some(LeftOut::Dismissed)),
            ("q_bad", None),
            ("q_bad_dismissed", Some(LeftOut::Dismissed)),
            ("q_v1", Some(LeftOut::Retired)),
        ];
        let want: Vec<(String, Option<LeftOut>)> =
            want.iter().map(|(id, l)| (id.to_string(), *l)).collect();
        assert_eq!(got, want);
        // With room under the cap, the ones under the limit stay.
        let roomy = Retention {
            finished_kept_max: 4,
            ..kept
        };
        let roomy = left_out(&rows, &roomy, &Clocked::wall_only(now));
        assert_eq!((roomy[1], roomy[4]), (None, None));
    }

    const DAY: i64 = 86_400;
    const HOUR: i64 = 3_600;

    fn pass(hands: &crate::clock::ManualClocks, s: u64) {
        hands.pass(std::time::Duration::from_secs(s));
    }

    /// The hub's clock jumps a day ahead 20 s after the owner's report (a laptop waking): the
    /// task is not orphaned, its quiet time is the 20 s observed; a whole window watched after
    /// the jump with no report, it is.
    #[test]
    fn a_forward_step_orphans_no_task_whose_owner_reported() {
        let r = rules();
        let (hands, clock) = crate::config::manual_clock(t0());
        let working = owned(t0());
        // As the queue does on committing the report.
        note(&working, &clock.clocked());
        pass(&hands, 20);
        hands.step(DAY);
        let at = clock.clocked();
        assert_eq!(quiet_age(&working, &at), 20);
        assert!(!orphan_due(&working, &r, &at));
        assert!(!worker_died_due(&working, &r, &at));
        pass(&hands, r.no_reply_s - 1);
        assert!(!orphan_due(&working, &r, &clock.clocked()));
        pass(&hands, 1);
        assert!(
            orphan_due(&working, &r, &clock.clocked()),
            "a whole window watched after the step"
        );
    }

    /// Back an hour: a task due to be orphaned stays due, and one nobody took stays red with
    /// its age counting on (not "0 s" from a creation now in the future).
    #[test]
    fn a_backward_step_hides_no_red() {
        let r = rules();
        let (hands, clock) = crate::config::manual_clock(t0());
        let working = owned(t0());
        let unacked = row();
        note(&working, &clock.clocked());
        note(&unacked, &clock.clocked());
        pass(&hands, r.ack_within_s.max(r.no_reply_s) + 60);
        hands.step(-HOUR);
        let at = clock.clocked();
        assert!(orphan_due(&working, &r, &at));
        let v = judge(&unacked, &r, &at);
        assert_eq!(v.band, Band::Red);
        let age = r.ack_within_s.max(r.no_reply_s) + 60;
        assert_eq!(
            v.reason.as_deref(),
            Some(format!("sol has not taken it for {}", human_age(age)).as_str())
        );
        // What the snapshot carries: the ages observed, so the page judges alike.
        let shown = to_snapshot(&unacked, &r, &at);
        assert_eq!(shown.unacked_s, Some(age));
        assert_eq!(shown.band, Band::Red);
    }

    /// A deadline two hours ahead is still about two hours ahead after the clock jumps a day:
    /// a step passes no deadline.
    #[test]
    fn a_step_passes_no_deadline() {
        let r = rules();
        let (hands, clock) = crate::config::manual_clock(t0());
        let due = TaskRow {
            deadline: Some(t0() + Duration::hours(2)),
            ..owned(t0())
        };
        assert_eq!(judge(&due, &r, &clock.clocked()).band, Band::Green);
        pass(&hands, 60);
        hands.step(DAY);
        let at = clock.clocked();
        assert_eq!(judge(&due, &r, &at).band, Band::Green);
        assert_eq!(
            to_snapshot(&due, &r, &at).deadline_in_s,
            Some(2 * HOUR - 60)
        );
    }

    /// The hub sleeps 7 h a minute after the owner's report: its task is as quiet as the wall
    /// clock says (the sleep counts), but nothing was watched, so it is orphaned only once a
    /// whole window has been watched after the wake.
    #[test]
    fn after_a_sleep_the_owner_has_a_whole_window_to_report() {
        let r = rules();
        let (hands, clock) = crate::config::manual_clock(t0());
        let working = owned(t0());
        note(&working, &clock.clocked());
        pass(&hands, 60);
        hands.sleep(std::time::Duration::from_secs(7 * 3600));
        let at = clock.clocked();
        assert_eq!(quiet_age(&working, &at), 60 + 7 * 3600);
        assert!(!orphan_due(&working, &r, &at));
        pass(&hands, r.no_reply_s - 1);
        assert!(!orphan_due(&working, &r, &clock.clocked()));
        pass(&hands, 1);
        assert!(orphan_due(&working, &r, &clock.clocked()));
    }
}

//! The stuck rule as a pure function: the known tasks, what their peers answered, the rules
//! and a clock in; the recorded progress, the rows and the newly stuck tasks out. No I/O, so
//! the rule can be tested at its exact boundary; the write side runs it under the registry's
//! lock and writes what it returns.

use fleetdash_model::{Asc, LiveTask, Probe, human_age};

use super::registry::{KnownTask, Origin, Registry, TaskKey, Tasks, Withheld};
use super::{Answer, Answers};
use crate::a2a::{self, TaskFacts};
use crate::clock::Clocked;
use crate::config::{Rule, Rules};
use crate::redact::REDACTED;

/// The rules the live tasks are judged by, all from the rules file.
#[derive(Debug, Clone, PartialEq)]
pub struct StuckRules {
    /// No progress for this long is stuck (spec §3.5).
    pub no_reply: Rule,
    /// A finished task stays listed this long.
    pub keep_finished_s: u64,
    /// A task no pass has mentioned for this long is forgotten.
    pub forget_unseen_s: u64,
}

impl StuckRules {
    pub fn of(rules: &Rules) -> StuckRules {
        StuckRules {
            no_reply: rules.no_reply.clone(),
            keep_finished_s: rules.keep_finished.seconds,
            forget_unseen_s: rules.forget_unseen.seconds,
        }
    }
}

/// One pass's verdict.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Judged {
    /// Every listed task, in registry order.
    pub rows: Vec<LiveTask>,
    /// The stuck rows not escalated yet: the caller appends one escalation line for each and
    /// marks it escalated ([`Registry::mark_escalated`]) only once the line is written, so a
    /// failed append is tried again on the next pass.
    pub newly_stuck: Vec<LiveTask>,
}

/// [`judge`] over the registry's tasks, then one row per agent whose ids were withheld as
/// secret-shaped (never stuck: there is nothing to poll), until no pass mentions them for
/// `forget_unseen_seconds`.
pub fn judge_registry(
    registry: &mut Registry,
    answers: &Answers,
    rules: &StuckRules,
    at: &Clocked,
) -> Judged {
    let mut judged = judge(&mut registry.tasks, answers, rules, at);
    registry
        .withheld
        .retain(|agent, w| at.age(&withheld_what(agent), w.last_mentioned) < rules.forget_unseen_s);
    for (agent, w) in registry.withheld.iter_mut() {
        w.last_mentioned = at.rebase(&withheld_what(agent), w.last_mentioned);
    }
    judged.rows.extend(
        registry
            .withheld
            .iter()
            .map(|(agent, withheld)| withheld_row(agent, withheld, at)),
    );
    judged
}

/// The names the clock knows a live task's stamps by (the registry's, made by fleetdash).
pub fn mentioned_what(key: &TaskKey) -> String {
    format!("task {}/{}'s last mention", key.agent, key.id)
}

pub fn progress_what(key: &TaskKey) -> String {
    format!("task {}/{}'s last progress", key.agent, key.id)
}

fn finished_what(key: &TaskKey) -> String {
    format!("task {}/{}'s finish", key.agent, key.id)
}

pub fn withheld_what(agent: &str) -> String {
    format!("agent {agent}'s withheld task ids' last mention")
}

/// Says that `agent` mentioned task ids that look like secrets and that they are not tracked.
/// An untracked id has no progress to measure: its `age_s` is the time since the last mention
/// (docs/status-json.md says so).
fn withheld_row(agent: &str, withheld: &Withheld, at: &Clocked) -> LiveTask {
    let n = withheld.ids;
    let (ids, were) = if n == 1 {
        ("id", "was")
    } else {
        ("ids", "were")
    };
    LiveTask {
        id: REDACTED.to_string(),
        agent: agent.to_string(),
        state: Probe::Error(WITHHELD.to_string()),
        age_s: at.age(&withheld_what(agent), withheld.last_mentioned),
        stuck: false,
        status: Asc::GUARDRAIL_BLOCKED,
        reason: Some(format!(
            "{n} task {ids} looking like a secret (a key, token or credential) {were} not \
             tracked: fleetdash writes no secret down, so it cannot poll them; a peer's task \
             ids should carry none"
        )),
        checked_at: at.wall(),
        stale: false,
    }
}

/// Records `answers` into `tasks`, forgets what is no longer mentioned, and judges the rest at
/// `at`, every age as fleetdash observed it (a step of the clock forgets nothing and turns no
/// stuck task green). The stamps kept are then as this clock would write them now: never in
/// its future, and a restart reads the same ages.
pub fn judge(tasks: &mut Tasks, answers: &Answers, rules: &StuckRules, at: &Clocked) -> Judged {
    for (key, task) in tasks.iter_mut() {
        match answers.get(key) {
            Some(Answer::Task(facts)) => {
                let returned = task.not_found.take().is_some();
                record(key, task, facts, returned, at);
            }
            Some(Answer::NotFound(call)) => task.not_found = Some(call.clone()),
            Some(Answer::Failed(_)) | None => {}
        }
    }
    tasks.retain(|key, t| {
        at.age(&mentioned_what(key), t.last_mentioned) < rules.forget_unseen_s
            // A heartbeat's task that completed is our own probe done: nothing to show.
            && !(t.origin == Origin::HeartbeatTask && t.state.as_deref() == Some(COMPLETED))
    });
    let mut judged = Judged::default();
    for (key, task) in tasks.iter_mut() {
        let answer = answers.get(key);
        if task
            .finished_at
            .is_some_and(|f| at.age(&finished_what(key), f) >= rules.keep_finished_s)
        {
            continue;
        }
        let row = row(key, task, answer, &rules.no_reply, at);
        if row.stuck && !task.escalated {
            judged.newly_stuck.push(row.clone());
        }
        judged.rows.push(row);
    }
    for (key, task) in tasks.iter_mut() {
        task.last_mentioned = at.rebase(&mentioned_what(key), task.last_mentioned);
        task.last_progress = at.rebase(&progress_what(key), task.last_progress);
        task.finished_at = task.finished_at.map(|f| at.rebase(&finished_what(key), f));
    }
    judged
}

/// A polled state that differs from the last one, or a newer status timestamp, is progress;
/// so is being known again after its peer did not know it (`returned`), whatever its state.
fn record(key: &TaskKey, task: &mut KnownTask, facts: &TaskFacts, returned: bool, at: &Clocked) {
    let now = at.wall();
    let state = facts.state.map(str::to_string);
    let moved = returned
        || (state.is_some() && state != task.state)
        || (facts.updated_at.is_some()
            && facts.updated_at != task.updated_at
            && task.updated_at.is_some());
    if moved {
        task.last_progress = now;
        at.note(&progress_what(key), now);
        // A new stuck episode, if one follows, is escalated again.
        task.escalated = false;
    }
    if state.is_some() {
        task.state = state;
    }
    if facts.updated_at.is_some() {
        task.updated_at = facts.updated_at;
    }
    if task.finished_at.is_none() && facts.state.is_some_and(a2a::is_terminal) {
        task.finished_at = Some(now);
        at.note(&finished_what(key), now);
    }
}

/// The state of a row that stands for withheld ids.
pub const WITHHELD: &str = "not tracked: the id looks like a secret";

/// What a row of the heartbeat's own task says it is.
pub const HEARTBEAT_TASK: &str = "the task our heartbeat became, left unfinished by the peer";
const COMPLETED: &str = "TASK_STATE_COMPLETED";

/// The peer's own words for a task it does not know (ASC NOT_FOUND).
pub const NOT_FOUND_REASON: &str = "the peer does not know this task";

fn row(
    key: &TaskKey,
    task: &KnownTask,
    answer: Option<&Answer>,
    no_reply: &Rule,
    at: &Clocked,
) -> LiveTask {
    let (id, now) = (key.id.as_str(), at.wall());
    let since_progress = at.age(&progress_what(key), task.last_progress);
    let failure = match answer {
        Some(Answer::Failed(f)) => Some(f),
        _ => None,
    };
    if let Some(call) = &task.not_found {
        // Not a silence: the peer answered, and what it said is that the task does not exist
        // there. The stuck rule cannot judge it, so it is never stuck nor escalated. A failure
        // of this pass wins the row (the peer may be down now); the last answer is context.
        let not_found = format!("{NOT_FOUND_REASON} ({call})");
        let (state, status, reason) = match failure {
            Some(f) => (
                Probe::Error(f.reason.clone()),
                f.asc.clone(),
                format!("{}; its last answer: {not_found}", f.reason),
            ),
            None => (
                Probe::Error(NOT_FOUND_REASON.to_string()),
                Asc::NOT_FOUND,
                not_found,
            ),
        };
        return LiveTask {
            id: id.to_string(),
            agent: task.agent.clone(),
            state,
            age_s: since_progress,
            stuck: false,
            status,
            reason: Some(format!(
                "{reason}; last progress {} ago",
                human_age(since_progress)
            )),
            checked_at: now,
            stale: failure.is_some(),
        };
    }
    let finished = task.finished_at.is_some();
    let stuck = !finished && at.reached(since_progress, no_reply.seconds);
    let state = match (failure, &task.state) {
        (Some(f), _) => Probe::Error(f.reason.clone()),
        (None, Some(s)) => Probe::Value(s.clone()),
        (None, None) => Probe::Unknown,
    };
    let (status, reason) = if stuck {
        let cause = format!(
            "no reply for {} (>= {}){}",
            human_age(since_progress),
            human_age(no_reply.seconds),
            failure
                .map(|f| format!("; {}", f.reason))
                .unwrap_or_default()
        );
        (Asc::TIMEOUT, Some(cause))
    } else if let Some(f) = failure {
        (
            f.asc.clone(),
            Some(format!(
                "{}; last progress {} ago",
                f.reason,
                human_age(since_progress)
            )),
        )
    } else {
        (state_code(task.state.as_deref()), None)
    };
    // Its id is the peer's own UUID: say what the task is.
    let reason = match (task.origin, reason) {
        (Origin::HeartbeatTask, Some(r)) => Some(format!("{r}; {HEARTBEAT_TASK}")),
        (Origin::HeartbeatTask, None) => Some(HEARTBEAT_TASK.to_string()),
        (_, reason) => reason,
    };
    LiveTask {
        id: id.to_string(),
        agent: task.agent.clone(),
        state,
        age_s: since_progress,
        stuck,
        status,
        reason,
        checked_at: now,
        stale: failure.is_some(),
    }
}

/// The Agent Status Code that refines an A2A state (ASC protocol bindings, A2A table).
pub fn state_code(state: Option<&str>) -> Asc {
    match state {
        Some("TASK_STATE_SUBMITTED") => Asc::ACCEPTED,
        Some("TASK_STATE_WORKING") => Asc::RUNNING,
        Some("TASK_STATE_INPUT_REQUIRED") => Asc::HUMAN_INPUT_REQUIRED,
        Some("TASK_STATE_AUTH_REQUIRED") => Asc::AUTHENTICATION_REQUIRED,
        Some("TASK_STATE_COMPLETED") => Asc::SUCCESS,
        Some("TASK_STATE_CANCELED") => Asc::CANCELLED,
        Some("TASK_STATE_REJECTED") => Asc::GUARDRAIL_BLOCKED,
        Some("TASK_STATE_FAILED") => Asc::INTERNAL_ERROR,
        _ => Asc::ACCEPTED,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::live_tasks::registry::TaskKey;
    use crate::collect::live_tasks::registry::{Mention, Origin, note};
    use chrono::{DateTime, Utc};
    use chrono::{Duration, TimeZone};

    /// The shipped rules file's values: the test judges by the fleet's own thresholds.
    fn rules() -> StuckRules {
        StuckRules::of(
            &crate::config::Rules::parse(
                std::path::Path::new("config/rules.yaml"),
                include_str!("../../../../config/rules.yaml"),
            )
            .unwrap(),
        )
    }

    fn t0() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 30, 6, 0, 0).unwrap()
    }

    fn working() -> TaskFacts {
        TaskFacts {
            state: Some("TASK_STATE_WORKING"),
            updated_at: Some(t0()),
        }
    }

    /// What the write side does once each newly stuck task's line is written.
    fn escalate(tasks: &mut Tasks, judged: &Judged) {
        for row in &judged.newly_stuck {
            tasks
                .get_mut(&TaskKey::new(&row.agent, &row.id))
                .unwrap()
                .escalated = true;
        }
    }

    /// A task of the agent "heart", whose tasks these tests follow.
    fn key(id: &str) -> TaskKey {
        TaskKey::new("heart", id)
    }

    fn registry_with(id: &str) -> Tasks {
        let mut tasks = Tasks::new();
        let mention = Mention {
            agent: "heart".into(),
            wire: Some("v1".into()),
            origin: Origin::Heartbeat,
            id: id.into(),
        };
        note(&mut tasks, &[mention], t0());
        tasks
    }

    /// The rule at its exact boundary: one second short of `no_reply_seconds` is not stuck,
    /// the second it is reached is, and the escalation is handed out once.
    #[test]
    fn a_task_without_progress_is_stuck_exactly_at_the_rule_and_escalated_once() {
        let rules = rules();
        let limit = i64::try_from(rules.no_reply.seconds).unwrap();
        let mut tasks = registry_with("t_1");
        let answers = Answers::from([(key("t_1"), Answer::Task(working()))]);
        let first = judge(&mut tasks, &answers, &rules, &Clocked::wall_only(t0()));
        assert!(!first.rows[0].stuck && first.newly_stuck.is_empty());
        assert_eq!(first.rows[0].status, Asc::RUNNING);

        let before = judge(
            &mut tasks,
            &answers,
            &rules,
            &Clocked::wall_only(t0() + Duration::seconds(limit - 1)),
        );
        assert!(!before.rows[0].stuck, "{:?}", before.rows[0]);
        assert_eq!(before.rows[0].age_s, rules.no_reply.seconds - 1);

        let at = judge(
            &mut tasks,
            &answers,
            &rules,
            &Clocked::wall_only(t0() + Duration::seconds(limit)),
        );
        assert!(at.rows[0].stuck, "{:?}", at.rows[0]);
        assert_eq!(at.rows[0].status, Asc::TIMEOUT);
        assert_eq!(
            at.rows[0].reason.as_deref(),
            Some(
                format!(
                    "no reply for {} (>= {})",
                    human_age(limit as u64),
                    human_age(limit as u64)
                )
                .as_str()
            )
        );
        assert_eq!(at.newly_stuck.len(), 1);
        assert!(
            !tasks[&key("t_1")].escalated,
            "marked only once its line is written"
        );
        escalate(&mut tasks, &at);

        let later = judge(
            &mut tasks,
            &answers,
            &rules,
            &Clocked::wall_only(t0() + Duration::seconds(limit + 60)),
        );
        assert!(later.rows[0].stuck && later.newly_stuck.is_empty());
    }

    /// Progress (a new state or a newer status time) restarts the clock.
    #[test]
    fn progress_restarts_the_clock() {
        let rules = rules();
        let limit = i64::try_from(rules.no_reply.seconds).unwrap();
        let mut tasks = registry_with("t_1");
        let answers = Answers::from([(key("t_1"), Answer::Task(working()))]);
        judge(&mut tasks, &answers, &rules, &Clocked::wall_only(t0()));
        let moved_at = t0() + Duration::seconds(limit - 1);
        let moved = Answers::from([(
            key("t_1"),
            Answer::Task(TaskFacts {
                state: Some("TASK_STATE_WORKING"),
                updated_at: Some(moved_at),
            }),
        )]);
        judge(&mut tasks, &moved, &rules, &Clocked::wall_only(moved_at));
        let judged = judge(
            &mut tasks,
            &moved,
            &rules,
            &Clocked::wall_only(t0() + Duration::seconds(limit)),
        );
        assert!(!judged.rows[0].stuck, "{:?}", judged.rows[0]);
        assert_eq!(judged.rows[0].age_s, 1);
    }

    /// A finished task is listed for `keep_finished_seconds`, never stuck, then left out; an
    /// id nobody mentions for `forget_unseen_seconds` is forgotten.
    #[test]
    fn finished_tasks_are_kept_then_dropped_and_unmentioned_ids_forgotten() {
        let rules = rules();
        let mut tasks = registry_with("t_1");
        let done = Answers::from([(
            key("t_1"),
            Answer::Task(TaskFacts {
                state: Some("TASK_STATE_COMPLETED"),
                updated_at: None,
            }),
        )]);
        let judged = judge(&mut tasks, &done, &rules, &Clocked::wall_only(t0()));
        assert_eq!(judged.rows[0].status, Asc::SUCCESS);
        let keep = i64::try_from(rules.keep_finished_s).unwrap();
        let shown = judge(
            &mut tasks,
            &Answers::new(),
            &rules,
            &Clocked::wall_only(t0() + Duration::seconds(keep - 1)),
        );
        assert!(!shown.rows[0].stuck);
        let gone = judge(
            &mut tasks,
            &Answers::new(),
            &rules,
            &Clocked::wall_only(t0() + Duration::seconds(keep)),
        );
        assert!(gone.rows.is_empty());
        let forget = i64::try_from(rules.forget_unseen_s).unwrap();
        judge(
            &mut tasks,
            &Answers::new(),
            &rules,
            &Clocked::wall_only(t0() + Duration::seconds(forget)),
        );
        assert!(tasks.is_empty());
    }

    /// "Task not found" is its own condition: at and past the rule it is NOT_FOUND, not stuck,
    /// and nothing is escalated; once the peer knows the task again the rule applies again.
    #[test]
    fn a_task_the_peer_does_not_know_is_never_stuck() {
        let rules = rules();
        let limit = i64::try_from(rules.no_reply.seconds).unwrap();
        let mut tasks = registry_with("t_1");
        let unknown = Answers::from([(
            key("t_1"),
            Answer::NotFound("GetTask: JSON-RPC -32001 task not found".into()),
        )]);
        for after in [0, limit, limit * 10] {
            let judged = judge(
                &mut tasks,
                &unknown,
                &rules,
                &Clocked::wall_only(t0() + Duration::seconds(after)),
            );
            let row = &judged.rows[0];
            assert!(!row.stuck && judged.newly_stuck.is_empty(), "{row:?}");
            assert_eq!(row.status, Asc::NOT_FOUND);
            assert!(row.reason.as_deref().unwrap().starts_with(NOT_FOUND_REASON));
        }
        // Not polled this pass (say it finished elsewhere): still known as not found.
        let judged = judge(
            &mut tasks,
            &Answers::new(),
            &rules,
            &Clocked::wall_only(t0() + Duration::seconds(limit)),
        );
        assert_eq!(judged.rows[0].status, Asc::NOT_FOUND);
        // Known again: its first state is progress, and the rule counts from there.
        let known = Answers::from([(key("t_1"), Answer::Task(working()))]);
        let again = t0() + Duration::seconds(limit * 11);
        let judged = judge(&mut tasks, &known, &rules, &Clocked::wall_only(again));
        assert_eq!(
            (judged.rows[0].status.clone(), judged.rows[0].stuck),
            (Asc::RUNNING, false)
        );
        let judged = judge(
            &mut tasks,
            &known,
            &rules,
            &Clocked::wall_only(again + Duration::seconds(limit)),
        );
        assert!(judged.rows[0].stuck, "{:?}", judged.rows[0]);
    }

    fn not_found() -> Answer {
        Answer::NotFound("GetTask: JSON-RPC -32001 task not found".into())
    }

    fn refused() -> Answer {
        Answer::Failed(crate::net::ProbeFailure::new(
            Asc::DEPENDENCY_UNAVAILABLE,
            "connection refused",
        ))
    }

    fn answer(id: &str, answer: Answer) -> Answers {
        Answers::from([(key(id), answer)])
    }

    /// A task its peer did not know, whose peer is now down: this pass's failure is what the
    /// row says (stale, the failure's code), with the earlier "not found" as context; still
    /// never stuck, at the rule and past it, since the last word of its peer was that it has no
    /// such task. Once the peer answers "not found" again, the row says that again.
    #[test]
    fn a_failed_poll_of_a_task_the_peer_did_not_know_shows_the_failure() {
        let rules = rules();
        let limit = i64::try_from(rules.no_reply.seconds).unwrap();
        let mut tasks = registry_with("t_1");
        judge(
            &mut tasks,
            &answer("t_1", not_found()),
            &rules,
            &Clocked::wall_only(t0()),
        );
        for after in [1, limit - 1, limit, limit * 2] {
            let judged = judge(
                &mut tasks,
                &answer("t_1", refused()),
                &rules,
                &Clocked::wall_only(t0() + Duration::seconds(after)),
            );
            let row = &judged.rows[0];
            assert_eq!(
                row.state,
                Probe::Error("connection refused".into()),
                "{row:?}"
            );
            assert_eq!(row.status, Asc::DEPENDENCY_UNAVAILABLE, "{row:?}");
            assert!(
                row.stale && !row.stuck && judged.newly_stuck.is_empty(),
                "{row:?}"
            );
            let reason = row.reason.as_deref().unwrap();
            assert!(
                reason.starts_with("connection refused; ") && reason.contains(NOT_FOUND_REASON),
                "{reason}"
            );
        }
        let judged = judge(
            &mut tasks,
            &answer("t_1", not_found()),
            &rules,
            &Clocked::wall_only(t0() + Duration::seconds(limit * 3)),
        );
        assert_eq!(judged.rows[0].status, Asc::NOT_FOUND);
        assert!(!judged.rows[0].stale);
    }

    /// A task that comes back (its peer knows it again) with the very state and status time
    /// it had before it went missing has progressed: the rule counts from its return, stuck
    /// exactly `no_reply_seconds` later and not a second before.
    #[test]
    fn a_task_known_again_with_its_old_state_counts_from_its_return() {
        let rules = rules();
        let limit = i64::try_from(rules.no_reply.seconds).unwrap();
        let mut tasks = registry_with("t_1");
        let known = answer("t_1", Answer::Task(working()));
        judge(&mut tasks, &known, &rules, &Clocked::wall_only(t0()));
        judge(
            &mut tasks,
            &answer("t_1", not_found()),
            &rules,
            &Clocked::wall_only(t0() + Duration::seconds(10)),
        );
        let back = t0() + Duration::seconds(limit * 5);
        let judged = judge(&mut tasks, &known, &rules, &Clocked::wall_only(back));
        assert!(!judged.rows[0].stuck, "{:?}", judged.rows[0]);
        assert_eq!(judged.rows[0].age_s, 0);
        let judged = judge(
            &mut tasks,
            &known,
            &rules,
            &Clocked::wall_only(back + Duration::seconds(limit - 1)),
        );
        assert!(!judged.rows[0].stuck, "{:?}", judged.rows[0]);
        let judged = judge(
            &mut tasks,
            &known,
            &rules,
            &Clocked::wall_only(back + Duration::seconds(limit)),
        );
        assert!(judged.rows[0].stuck, "{:?}", judged.rows[0]);
        assert_eq!(judged.newly_stuck.len(), 1);
    }

    /// Each stuck episode is escalated once: a task that progresses after its escalation and
    /// then sticks again is handed out again, exactly at the rule counted from its progress.
    #[test]
    fn a_task_that_recovers_and_sticks_again_is_escalated_again_once() {
        let rules = rules();
        let limit = i64::try_from(rules.no_reply.seconds).unwrap();
        let mut tasks = registry_with("t_1");
        let known = answer("t_1", Answer::Task(working()));
        judge(&mut tasks, &known, &rules, &Clocked::wall_only(t0()));
        let first = judge(
            &mut tasks,
            &known,
            &rules,
            &Clocked::wall_only(t0() + Duration::seconds(limit)),
        );
        assert_eq!(first.newly_stuck.len(), 1);
        escalate(&mut tasks, &first);

        let moved_at = t0() + Duration::seconds(limit + 10);
        let moved = answer(
            "t_1",
            Answer::Task(TaskFacts {
                state: Some("TASK_STATE_WORKING"),
                updated_at: Some(moved_at),
            }),
        );
        let recovered = judge(&mut tasks, &moved, &rules, &Clocked::wall_only(moved_at));
        assert!(!recovered.rows[0].stuck, "{:?}", recovered.rows[0]);
        let before = judge(
            &mut tasks,
            &moved,
            &rules,
            &Clocked::wall_only(moved_at + Duration::seconds(limit - 1)),
        );
        assert!(!before.rows[0].stuck && before.newly_stuck.is_empty());
        let again = judge(
            &mut tasks,
            &moved,
            &rules,
            &Clocked::wall_only(moved_at + Duration::seconds(limit)),
        );
        assert!(again.rows[0].stuck, "{:?}", again.rows[0]);
        assert_eq!(
            again.newly_stuck.len(),
            1,
            "the second episode is escalated"
        );
        escalate(&mut tasks, &again);
        let later = judge(
            &mut tasks,
            &moved,
            &rules,
            &Clocked::wall_only(moved_at + Duration::seconds(limit + 1)),
        );
        assert!(later.rows[0].stuck && later.newly_stuck.is_empty());
    }

    fn heartbeat_task(id: &str) -> Mention {
        Mention {
            agent: "heart".into(),
            wire: Some("v1".into()),
            origin: Origin::HeartbeatTask,
            id: id.into(),
        }
    }

    /// A peer that leaves every heartbeat working makes a new task each time: the oldest open
    /// one is tracked and judged (stuck at the rule, escalated once), later ones only renew
    /// it; once it completes it is dropped and the next heartbeat's task is tracked.
    #[test]
    fn one_open_heartbeat_task_per_agent_is_tracked_and_judged() {
        let rules = rules();
        let limit = i64::try_from(rules.no_reply.seconds).unwrap();
        let mut tasks = Tasks::new();
        note(&mut tasks, &[heartbeat_task("hb-1")], t0());
        let answers = Answers::from([(key("hb-1"), Answer::Task(working()))]);
        let judged = judge(&mut tasks, &answers, &rules, &Clocked::wall_only(t0()));
        assert_eq!(judged.rows[0].reason.as_deref(), Some(HEARTBEAT_TASK));
        for i in 2..6 {
            note(
                &mut tasks,
                &[heartbeat_task(&format!("hb-{i}"))],
                t0() + Duration::seconds(i),
            );
        }
        assert_eq!(tasks.len(), 1, "{tasks:#?}");
        assert_eq!(
            tasks[&key("hb-1")].last_mentioned,
            t0() + Duration::seconds(5)
        );
        let judged = judge(
            &mut tasks,
            &answers,
            &rules,
            &Clocked::wall_only(t0() + Duration::seconds(limit)),
        );
        assert!(judged.rows[0].stuck);
        assert_eq!(judged.newly_stuck.len(), 1);
        escalate(&mut tasks, &judged);
        assert!(
            judged.rows[0]
                .reason
                .as_deref()
                .unwrap()
                .ends_with(HEARTBEAT_TASK)
        );

        let done = Answers::from([(
            key("hb-1"),
            Answer::Task(TaskFacts {
                state: Some(COMPLETED),
                updated_at: None,
            }),
        )]);
        let judged = judge(
            &mut tasks,
            &done,
            &rules,
            &Clocked::wall_only(t0() + Duration::seconds(limit + 1)),
        );
        assert!(judged.rows.is_empty() && tasks.is_empty(), "{tasks:#?}");
        note(
            &mut tasks,
            &[heartbeat_task("hb-9")],
            t0() + Duration::seconds(limit + 2),
        );
        assert!(tasks.contains_key(&key("hb-9")));
    }

    /// The hub's clock jumps a day ahead (the registry's forget window is a day), then back
    /// to now: the task that never progresses is neither forgotten nor unstuck; it turns stuck
    /// once a whole window was watched after the jump, and stays stuck after the jump back
    /// with its age counting on; what the registry keeps is never in the clock's future.
    #[test]
    fn a_step_of_the_clock_forgets_no_task_and_unsticks_none() {
        let rules = rules();
        let limit = rules.no_reply.seconds;
        let (hands, clock) = crate::config::manual_clock(t0());
        let pass = |s: u64| hands.pass(std::time::Duration::from_secs(s));
        let mut tasks = registry_with("t_1");
        let known = answer("t_1", Answer::Task(working()));
        judge(&mut tasks, &known, &rules, &clock.clocked());
        pass(10);
        hands.step(86_400);
        let after = judge(&mut tasks, &known, &rules, &clock.clocked());
        assert_eq!(after.rows.len(), 1, "not forgotten: {after:?}");
        assert_eq!(after.rows[0].age_s, 10);
        assert!(!after.rows[0].stuck);
        pass(limit - 1);
        assert!(!judge(&mut tasks, &known, &rules, &clock.clocked()).rows[0].stuck);
        pass(1);
        let stuck = judge(&mut tasks, &known, &rules, &clock.clocked());
        assert!(stuck.rows[0].stuck, "{stuck:?}");
        assert_eq!(stuck.newly_stuck.len(), 1);
        escalate(&mut tasks, &stuck);
        hands.step(-86_400);
        let at = clock.clocked();
        let back = judge(&mut tasks, &known, &rules, &at);
        assert!(back.rows[0].stuck, "{back:?}");
        assert_eq!(back.rows[0].age_s, 10 + limit);
        assert!(back.newly_stuck.is_empty(), "escalated once");
        let kept = &tasks[&key("t_1")];
        assert!(kept.last_progress <= at.wall() && kept.last_mentioned <= at.wall());
        assert_eq!(
            (at.wall() - kept.last_progress).num_seconds() as u64,
            10 + limit
        );
    }

    /// The hub sleeps 7 h 30 s after a task's progress: its age counts the sleep (the wall clock
    /// was right), but it turns stuck only once a whole window was watched after the wake, so
    /// the peer has a window to answer; the registry forgets nothing meanwhile.
    #[test]
    fn after_a_sleep_a_task_has_a_whole_window_before_it_is_stuck() {
        let rules = rules();
        let limit = rules.no_reply.seconds;
        let (hands, clock) = crate::config::manual_clock(t0());
        let mut tasks = registry_with("t_1");
        let known = answer("t_1", Answer::Task(working()));
        judge(&mut tasks, &known, &rules, &clock.clocked());
        hands.pass(std::time::Duration::from_secs(30));
        hands.sleep(std::time::Duration::from_secs(7 * 3600));
        let woke = judge(&mut tasks, &known, &rules, &clock.clocked());
        assert_eq!(woke.rows[0].age_s, 30 + 7 * 3600);
        assert!(!woke.rows[0].stuck, "{woke:?}");
        hands.pass(std::time::Duration::from_secs(limit));
        let later = judge(&mut tasks, &known, &rules, &clock.clocked());
        assert!(later.rows[0].stuck, "{later:?}");
    }
}

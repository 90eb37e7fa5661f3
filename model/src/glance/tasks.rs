//! The Work queue and Live tasks panels: who owns each queued task and whether they ACKed
//! (spec 003 §3), and the live A2A tasks under the stuck rule, which is judged again at the
//! glance's `now`, so a task crossing it turns STUCK between polls. The board's cards are the
//! board's.

use chrono::{DateTime, Utc};

use super::parts::{
    Words, anchor, code, crossed, fact, few_words, group, join, plain_reason, problem, red_first,
    section, shown, sorted,
};
use super::types::{Fact, Kind, Row, Section};
use crate::alerts::key;
use crate::asc::Asc;
use crate::band::Band;
use crate::clock::{ClockView, reached};
use crate::probe::Probe;
use crate::queue::{ORPHANED_MESSAGE, QueueAck, QueueLimits, QueueTask, UnreadableTask};
use crate::snapshot::{LiveTask, Snapshot};
use crate::words::{human_age, thousands};

const TERMINAL_STATES: [&str; 4] = [
    "TASK_STATE_COMPLETED",
    "TASK_STATE_FAILED",
    "TASK_STATE_CANCELED",
    "TASK_STATE_REJECTED",
];

/// Whether a live task is stuck at `now`: flagged by the collector, or, still under the rule,
/// its age (which keeps counting after the poll, by the snapshot's `clock`) has reached the
/// rule (in the clock's grace, once watched again).
pub fn stuck_at(task: &LiveTask, no_reply_s: u64, now: DateTime<Utc>, clock: &ClockView) -> bool {
    task.stuck
        || (under_the_rule(task)
            && reached(
                task.age_s + clock.elapsed(task.checked_at, now),
                no_reply_s,
                clock.grace_at(now),
            ))
}

/// Unfinished, and neither a task its peer does not know (NOT_FOUND) nor ids withheld as
/// secret-shaped (GUARDRAIL_BLOCKED): the collector never judges those stuck.
fn under_the_rule(task: &LiveTask) -> bool {
    !finished(task)
        && task.status.code != Asc::NOT_FOUND.code
        && task.status.code != Asc::GUARDRAIL_BLOCKED.code
}

fn finished(task: &LiveTask) -> bool {
    task.state
        .value()
        .is_some_and(|s| TERMINAL_STATES.contains(&s.as_str()))
}

impl LiveTask {
    /// The task's band at `now` under the stuck rule: red also once it crossed the rule after
    /// the collector's poll.
    pub fn band_at(&self, no_reply_s: u64, now: DateTime<Utc>, clock: &ClockView) -> Band {
        if stuck_at(self, no_reply_s, now, clock) {
            Band::Red
        } else {
            self.band()
        }
    }
}

/// The work queue (spec 003 §3): who owns what and whether they took it; red rows first,
/// newest first within a band; finished tasks in a group of their own, folded a tap away.
pub(super) fn queue(s: &Snapshot, w: &Words) -> Section {
    let meta = &s.sections.queue;
    let mut view = section("queue", "Work queue", meta, w);
    // The rule is said where it judges something: not beside "Not configured".
    if s.rules.ack_within_s > 0 && meta.configured {
        view.note = Some(format!(
            "an agent must take a task within {}",
            human_age(s.rules.ack_within_s)
        ));
    }
    view.problem = problem(&s.tasks.queue, meta, "tasks.queue", w);
    if let Probe::Unknown = &s.tasks.queue {
        // No file yet (a `collect` before the first `run`): a fact, not a failure (issue 43).
        let mut g = group(Vec::new());
        g.empty = Some("No tasks yet: fleetdash run creates the work queue.");
        view.groups.push(g);
    }
    if let Probe::Value(tasks) = &s.tasks.queue {
        let newest_first = sorted(tasks.iter().collect(), |t: &&QueueTask| {
            (
                i64::MAX.saturating_sub(t.created_at.timestamp()) as u64,
                t.id.clone(),
            )
        });
        let (open, done): (Vec<&QueueTask>, Vec<&QueueTask>) =
            newest_first.into_iter().partition(|t| {
                !t.is_terminal()
                    || t.judge(QueueLimits::of(&s.rules), w.now, w.clock).0 != Band::Green
            });
        // A row that cannot be read comes first: red, with its id and why.
        let unreadable = s
            .tasks
            .queue_unreadable
            .iter()
            .map(|t| unreadable_row(t, w));
        let mut g = group(red_first(
            unreadable
                .chain(open.into_iter().map(|t| queue_row(t, s, w)))
                .collect(),
        ));
        let left = &s.tasks.queue_left_out;
        if g.rows.is_empty() {
            g.empty = Some(
                if done.is_empty() && left.finished == 0 && left.dismissed == 0 {
                    "No tasks in the queue."
                } else {
                    "No open tasks."
                },
            );
        }
        view.groups.push(g);
        // Finished tasks are rows too (green, counted once as rows), folded: one tap away.
        if !done.is_empty() {
            let n = done.len() as u64;
            let mut finished = group(done.into_iter().map(|t| queue_row(t, s, w)).collect());
            finished.title = Some(format!("finished ({})", thousands(n)));
            finished.closed = true;
            view.groups.push(finished);
        }
        if let Some(note) = left_out_note(s) {
            view.note = Some(match view.note {
                Some(ack) => format!("{ack} · {note}"),
                None => note,
            });
        }
    }
    view
}

/// What `tasks.queue` leaves out, said beside the panel's title as the board says its own:
/// "1,150 finished tasks not shown, 3 dismissed (the queue's file keeps them: fleetdash
/// tasks)". `None` when nothing is left out.
fn left_out_note(s: &Snapshot) -> Option<String> {
    let left = &s.tasks.queue_left_out;
    let mut said = Vec::new();
    if left.finished > 0 {
        let tasks = if left.finished == 1 { "task" } else { "tasks" };
        said.push(format!(
            "{} finished {tasks} not shown",
            thousands(u64::from(left.finished))
        ));
    }
    if left.dismissed > 0 {
        said.push(format!(
            "{} dismissed",
            thousands(u64::from(left.dismissed))
        ));
    }
    (!said.is_empty()).then(|| {
        format!(
            "{} (the queue's file keeps them: fleetdash tasks)",
            said.join(", ")
        )
    })
}

/// A row of the queue that cannot be read: red, its id and why; nothing else is known of it.
fn unreadable_row(t: &UnreadableTask, w: &Words) -> Row {
    let reason = format!("unreadable: {}", t.reason);
    let r = Some(reason.as_str());
    Row {
        kind: Some(Kind::Task),
        what: format!("task {}", t.id),
        since: None,
        anchor: anchor("queue", &t.id),
        band: t.band,
        badge: t.band.word(),
        title: t.id.clone(),
        summary: "a row of the work queue that cannot be read".into(),
        code: code(&t.status),
        facts: vec![fact("id", (t.id.clone(), None), r)],
        held: w.held(&key::queue_task(&t.id), t.band),
        reason: Some(reason),
        checks: Vec::new(),
        strip: None,
        own: t.band,
    }
}

fn queue_row(t: &QueueTask, s: &Snapshot, w: &Words) -> Row {
    let ack_within = s.rules.ack_within_s;
    let (band, status, judged) = t.judge(QueueLimits::of(&s.rules), w.now, w.clock);
    let state = state_words(&t.state);
    let not_taken = judged.as_deref().is_some_and(is_not_taken);
    let since = match (&judged, &t.ack) {
        // As observed at `checked_at` when the snapshot says (issue 31), else by the stamp.
        (Some(_), _) if not_taken && t.unacked_s.is_some() => {
            Some(crossed(t.checked_at, t.unacked_s.unwrap_or(0), ack_within))
        }
        (Some(_), Some(ack)) if not_taken => Some(crossed(ack.at, 0, ack_within)),
        (Some(_), None) if not_taken => Some(crossed(t.created_at, 0, ack_within)),
        (Some(r), _) if r.starts_with("deadline passed") => t.deadline,
        _ => None,
    };
    let reason = judged.map(|why| queue_reason(t, why, w));
    let r = reason.as_deref();
    let mut facts = vec![
        fact("id", (t.id.clone(), None), r),
        fact("state", (state.clone(), None), r),
        fact(
            "created",
            (
                format!("{} by {}", w.time(t.created_at), t.created_by),
                None,
            ),
            r,
        ),
    ];
    if !t.tagged.is_empty() {
        facts.push(fact("tagged", (t.tagged.join(", "), None), r));
    }
    if let Some(ack) = &t.ack {
        facts.push(fact("ACK", (ack_words(ack, w), None), r));
    }
    if let Some(d) = t.deadline {
        facts.push(fact("deadline", (w.time(d), None), r));
    }
    if let Some(at) = t.last_report_at {
        facts.push(fact("last report", (w.ago(at), None), r));
    }
    // The watchdog's message is the reason already ("orphaned: no reply produced").
    if let Some(m) = t.status_message.as_ref().filter(|m| *m != ORPHANED_MESSAGE) {
        facts.push(fact("status", (m.clone(), None), r));
    }
    // Who has it; then, when all is well, when it is expected. A row that is not green says
    // nothing more: its reason says what is wrong.
    let mut summary = vec![owner_words(t)];
    let eta = t.ack.as_ref().and_then(|a| a.eta);
    match (band, t.is_terminal(), eta, t.deadline) {
        (Band::Green, true, _, _) => summary.push(state),
        (Band::Green, false, Some(eta), _) => summary.push(format!("ETA {}", w.time(eta))),
        (Band::Green, false, None, Some(d)) => summary.push(format!("due {}", w.time(d))),
        _ => {}
    }
    let summary: Vec<&str> = summary.iter().map(String::as_str).collect();
    Row {
        kind: Some(Kind::Task),
        what: format!("task {}", few_words(&t.title)),
        since,
        anchor: anchor("queue", &t.id),
        band,
        badge: band.word(),
        title: t.title.clone(),
        summary: join(&summary),
        code: code(&status).filter(|_| reason.is_some()),
        facts,
        reason,
        held: w.held(&key::queue_task(&t.id), band),
        checks: Vec::new(),
        strip: None,
        own: band,
    }
}

/// Whether the judge's reason is an ACK that did not come in time ("nobody has taken it for
/// 2 min", "vega has not taken it for 2 min").
fn is_not_taken(why: &str) -> bool {
    why.contains("has not taken it") || why.starts_with("nobody has taken it")
}

/// Who has the task, in the words its reason agrees with: "owned by juno", "assigned to vega,
/// not taken yet", "escalated to min, not taken yet", "nobody yet".
fn owner_words(t: &QueueTask) -> String {
    match (&t.owner, &t.ack) {
        // The ACK is the escalating agent's; the new owner has not taken it yet.
        (owner, Some(ack)) if ack.kind == "escalating" => {
            let to = ack.to.as_deref().or(owner.as_deref()).unwrap_or("?");
            format!("escalated to {to}, not taken yet")
        }
        (Some(owner), Some(_)) => format!("owned by {owner}"),
        (Some(owner), None) => format!("assigned to {owner}, not taken yet"),
        (None, _) => "nobody yet".into(),
    }
}

/// The judge's reason (its words agree with the summary's), a passed deadline said as a
/// moment when the glance is frozen.
fn queue_reason(t: &QueueTask, why: String, w: &Words) -> String {
    match t.deadline {
        Some(d) if why.starts_with("deadline passed") => format!("deadline passed {}", w.ago(d)),
        _ => why,
    }
}

/// An ACK in words: "taken by juno at 14:02, ETA 14:45", "escalated by sol to min at 14:05".
fn ack_words(ack: &QueueAck, w: &Words) -> String {
    let at = w.time(ack.at);
    let mut words = match (ack.kind.as_str(), &ack.to) {
        ("owning", _) => format!("taken by {} at {at}", ack.by),
        ("escalating", Some(to)) => format!("escalated by {} to {to} at {at}", ack.by),
        ("escalating", None) => format!("escalated by {} at {at}", ack.by),
        ("blocked", _) => format!("blocked, said by {} at {at}", ack.by),
        ("yielded", _) => format!("given up to the owner by {} at {at}", ack.by),
        (kind, _) => format!("{kind} by {} at {at}", ack.by),
    };
    if let Some(eta) = ack.eta {
        words.push_str(&format!(", ETA {}", w.time(eta)));
    }
    words
}

/// A task stuck or orphaned on an agent (issue 43): said on the agent's own row, and the task's
/// needs-you line leads there.
pub(super) struct Work {
    /// The agent it is on.
    pub(super) agent: String,
    /// The task's row.
    pub(super) anchor: String,
    /// "task stuck: no reply for 9 min", "task “Compact the archive” orphaned: no reply
    /// produced".
    pub(super) words: String,
}

/// Every task stuck (a live task past the stuck rule at the glance's `now`) or left to die (a
/// queue task orphaned, or whose worker died) on an agent the Agents panel lists.
pub(super) fn work(s: &Snapshot, w: &Words) -> Vec<Work> {
    let Probe::Value(agents) = &s.agents else {
        return Vec::new();
    };
    let listed = |name: &str| agents.iter().any(|a| a.name == name);
    let mut out = Vec::new();
    if let Probe::Value(tasks) = &s.tasks.live {
        for t in tasks {
            if listed(&t.agent) && stuck_at(t, s.rules.no_reply_s, w.now, w.clock) {
                out.push(Work {
                    agent: t.agent.clone(),
                    anchor: task_anchor(t),
                    words: format!(
                        "task stuck: no reply for {}",
                        human_age(w.age(t.checked_at, t.age_s))
                    ),
                });
            }
        }
    }
    if let Probe::Value(tasks) = &s.tasks.queue {
        for t in tasks {
            let Some(owner) = t.owner.as_deref().filter(|o| listed(o)) else {
                continue;
            };
            let (band, _, why) = t.judge(QueueLimits::of(&s.rules), w.now, w.clock);
            // Orphaned (or due to be at the next sweep), or its worker died: nobody is on it.
            let left = why.as_deref().is_some_and(|y| {
                y.starts_with("orphaned")
                    || y.starts_with("no reply")
                    || y.starts_with("worker died")
            });
            if band == Band::Red && left {
                out.push(Work {
                    agent: owner.to_string(),
                    anchor: anchor("queue", &t.id),
                    words: format!("task “{}” {}", few_words(&t.title), why.unwrap_or_default()),
                });
            }
        }
    }
    out
}

pub(super) fn live_tasks(s: &Snapshot, w: &Words) -> Section {
    let meta = &s.sections.live_tasks;
    let mut view = section("live", "Live tasks", meta, w);
    let rule = s.rules.no_reply_s;
    view.note = Some(format!("stuck: no reply for {}", human_age(rule)));
    view.problem = problem(&s.tasks.live, meta, "tasks.live", w);
    if let Probe::Value(tasks) = &s.tasks.live {
        // Unfinished tasks oldest first, so one about to cross the rule is at the top of the
        // green ones; finished ones last.
        let sorted = sorted(tasks.iter().collect(), |t: &&LiveTask| {
            (
                (u64::from(finished(t)) << 63) | ((u64::MAX >> 1) - t.age_s.min(u64::MAX >> 1)),
                String::new(),
            )
        });
        let mut g = group(red_first(
            sorted.into_iter().map(|t| task_row(t, rule, w)).collect(),
        ));
        if g.rows.is_empty() {
            g.empty = Some("No live A2A tasks.");
        }
        view.groups.push(g);
    }
    view
}

fn task_row(t: &LiveTask, rule: u64, w: &Words) -> Row {
    let stuck = stuck_at(t, rule, w.now, w.clock);
    let band = t.band_at(rule, w.now, w.clock);
    let age = w.age(t.checked_at, t.age_s);
    let state = shown(&t.state, |s| state_words(s));
    let (reason, cut) = if stuck && !t.stuck {
        // Crossed the rule since the poll: said as the collector says it.
        (Some(format!("no reply for {}", human_age(age))), Vec::new())
    } else {
        plain_reason(t.reason.clone().filter(|_| band != Band::Green))
    };
    // The stuck rule in words, instead of the "(>= 1 min)" cut from the collector's reason.
    let cut: Vec<Fact> = cut.into_iter().filter(|f| f.label != "rule").collect();
    // A green task's note ("the heartbeat's own task") is a fact, not a warning.
    let note = t.reason.clone().filter(|_| band == Band::Green);
    let code = if stuck && !t.stuck {
        Some(Asc::TIMEOUT.to_string())
    } else {
        code(&t.status)
    };
    let r = reason.as_deref();
    // The agent is in the title: the summary says the state and how long without progress.
    let summary = join(&[&state.0, &format!("{} without progress", human_age(age))]);
    // Named by its agent: the id is a data word, kept behind the tap.
    let name = format!("task on {}", t.agent);
    Row {
        kind: Some(if stuck { Kind::TaskStuck } else { Kind::Task }),
        what: name.clone(),
        since: stuck.then(|| crossed(t.checked_at, t.age_s, rule)),
        anchor: task_anchor(t),
        band,
        badge: if stuck { "STUCK" } else { band.word() },
        title: name,
        summary,
        code: code.filter(|_| reason.is_some()),
        facts: {
            let mut facts = vec![
                fact("id", (t.id.clone(), None), r),
                fact("state", state, r),
                fact("agent", (t.agent.clone(), None), r),
            ];
            if stuck {
                facts.push(fact(
                    "rule",
                    (
                        format!("stuck after {} without a reply", human_age(rule)),
                        None,
                    ),
                    r,
                ));
            }
            facts.extend(cut);
            facts.extend(note.map(|n| fact("note", (n, None), r)));
            facts
        },
        reason,
        held: w.held(&key::live_task(&t.agent, &t.id), band),
        checks: Vec::new(),
        strip: None,
        own: band,
    }
}

/// "working", "input required": not "TASK_STATE_INPUT_REQUIRED", the wire's word, which also
/// breaks mid-word on a phone.
fn state_words(state: &str) -> String {
    state
        .strip_prefix("TASK_STATE_")
        .unwrap_or(state)
        .to_ascii_lowercase()
        .replace('_', " ")
}

fn task_anchor(t: &LiveTask) -> String {
    anchor("task", &format!("{}-{}", t.agent, t.id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::glance::fixtures::*;
    use crate::snapshot::SectionMeta;

    #[test]
    fn a_task_turns_stuck_when_its_age_reaches_the_rule_at_now_not_before() {
        let s = fleet();
        // t_soon: 50 s without progress at the poll, the rule is 60 s.
        let before = at(&s, 9);
        assert_eq!(row(&before, "task-min-t_soon").band, Band::Green);
        assert_eq!(
            before.counts,
            s.verdict_at(s.generated_at + chrono::Duration::seconds(9))
        );
        let after = at(&s, 10);
        let r = row(&after, "task-min-t_soon");
        assert_eq!((r.band, r.badge), (Band::Red, "STUCK"));
        assert_eq!(r.reason.as_deref(), Some("no reply for 1 min"));
        let said = |label: &str| r.facts.iter().find(|f| f.label == label).unwrap();
        assert_eq!(said("rule").text, "stuck after 1 min without a reply");
        assert_eq!(said("id").text, "t_soon");
        assert_eq!(
            (r.title.as_str(), r.what.as_str()),
            ("task on min", "task on min")
        );
        assert_eq!(r.code.as_deref(), Some("ASC-5004 TIMEOUT"));
        assert_eq!(after.counts.red, before.counts.red + 1);
        assert_eq!(
            after.counts,
            s.verdict_at(s.generated_at + chrono::Duration::seconds(10))
        );
        assert!(
            after.headline.contains("2 tasks stuck"),
            "{}",
            after.headline
        );
        // A finished task never does.
        assert_eq!(row(&at(&s, 3600), "task-min-t_done").band, Band::Green);
    }

    #[test]
    fn the_work_queue_says_who_has_each_task_once_and_its_finished_ones_a_tap_away() {
        let s = queued();
        let g = at(&s, 0);
        let ids: Vec<&str> = g.sections.iter().map(|x| x.id).collect();
        assert_eq!(&ids[..3], ["agents", "queue", "live"]);
        let q = &g.sections[1];
        assert_eq!(
            q.note.as_deref(),
            Some("an agent must take a task within 10 min")
        );
        let lines = |g: &crate::glance::Glance| -> Vec<(String, Band, String, Option<String>)> {
            g.sections[1].groups[0]
                .rows
                .iter()
                .map(|r| {
                    (
                        r.anchor.clone(),
                        r.band,
                        r.summary.clone(),
                        r.reason.clone(),
                    )
                })
                .collect()
        };
        let line = |anchor: &str, band, summary: &str, reason: Option<&str>| {
            (
                anchor.to_string(),
                band,
                summary.to_string(),
                reason.map(String::from),
            )
        };
        assert_eq!(
            lines(&g),
            [
                line(
                    "queue-q_vega",
                    Band::Red,
                    "assigned to vega, not taken yet",
                    Some("vega has not taken it for 12 min")
                ),
                line(
                    "queue-q_esc",
                    Band::Red,
                    "escalated to min, not taken yet",
                    Some("min has not taken it for 15 min")
                ),
                line(
                    "queue-q_orph",
                    Band::Red,
                    "owned by sol",
                    Some("orphaned: no reply produced")
                ),
                line(
                    "queue-q_blk",
                    Band::Amber,
                    "owned by sol",
                    Some("blocked on t_1a2b: LAB disk full")
                ),
                line("queue-q_new", Band::Green, "nobody yet", None),
                line("queue-q_ok", Band::Green, "owned by sol · ETA 19:45", None),
            ]
        );
        let ok = row(&g, "queue-q_ok");
        let said = |r: &Row, label: &str| {
            r.facts
                .iter()
                .find(|f| f.label == label)
                .map(|f| f.text.clone())
        };
        assert_eq!(
            said(ok, "ACK").as_deref(),
            Some("taken by sol at 19:00, ETA 19:45")
        );
        assert_eq!(said(ok, "last report").as_deref(), Some("3 min ago"));
        // The watchdog's message is the reason: not said again as a fact.
        assert_eq!(said(row(&g, "queue-q_orph"), "status"), None);
        // The finished task: a row of a group of its own, folded, counted once.
        let finished = &q.groups[1];
        assert_eq!(
            (finished.title.as_deref(), finished.closed),
            (Some("finished (1)"), true)
        );
        assert_eq!(finished.rows[0].anchor, "queue-q_done");
        assert_eq!(finished.rows[0].summary, "owned by sol · completed");
        assert!(!q.groups[0].closed);
        assert_eq!(q.groups[0].folded, None);
        assert_eq!(g.counts, s.verdict_at(t0()));
        // A minute later nobody has taken q_new: red, in needs-you, counted.
        let later = at(&s, 60);
        let new = row(&later, "queue-q_new");
        assert_eq!(new.band, Band::Red);
        assert_eq!(new.summary, "nobody yet");
        assert_eq!(
            new.reason.as_deref(),
            Some("nobody has taken it for 10 min")
        );
        assert!(
            later.needs.iter().any(|n| n.anchor == "queue-q_new"
                && n.what == "task Task q_new"
                && n.since.as_deref() == Some("since 19:21")),
            "{:?}",
            later.needs
        );
        assert_eq!(
            later.counts,
            s.verdict_at(t0() + chrono::Duration::seconds(60))
        );
    }

    /// Was: one row the hub could not read made the whole `tasks.queue` an error. Now it is a
    /// red row of its own with its id and why, in needs-you and the verdict, beside the others;
    /// and what the retention and the operator leave out is said beside the title.
    #[test]
    fn an_unreadable_row_is_red_on_its_own_and_what_is_left_out_is_said() {
        use crate::{QueueLeftOut, UnreadableTask};
        let mut s = fleet();
        s.sections.queue = SectionMeta {
            configured: true,
            checked_at: Some(t0()),
            duration_ms: Some(1),
            stale: false,
        };
        let mut ok = queue_task("q_ok", 1);
        ok.owner = Some("sol".into());
        s.tasks.queue = Probe::Value(vec![ok]);
        s.tasks.queue_unreadable = vec![UnreadableTask {
            id: "q_bad".into(),
            reason: "state \"TASK_STATE_PAUSED\": not a task state this fleetdash knows".into(),
            band: Band::Red,
            status: Asc::INTEGRITY_CHECK_FAILED,
            checked_at: t0(),
            stale: true,
        }];
        s.tasks.queue_left_out = QueueLeftOut {
            finished: 1150,
            dismissed: 1,
            ended: Vec::new(),
        };
        let g = at(&s, 0);
        let bad = row(&g, "queue-q_bad");
        assert_eq!((bad.band, bad.title.as_str()), (Band::Red, "q_bad"));
        assert_eq!(
            bad.reason.as_deref(),
            Some("unreadable: state \"TASK_STATE_PAUSED\": not a task state this fleetdash knows")
        );
        assert_eq!(bad.code.as_deref(), Some("ASC-7005 INTEGRITY_CHECK_FAILED"));
        assert_eq!(row(&g, "queue-q_ok").band, Band::Green, "the others stay");
        let q = g.sections.iter().find(|x| x.id == "queue").unwrap();
        assert_eq!(q.groups[0].rows[0].anchor, "queue-q_bad", "red first");
        assert_eq!(
            q.note.as_deref(),
            Some(
                "an agent must take a task within 10 min · 1,150 finished tasks not shown, 1 dismissed (the queue's \
                 file keeps them: fleetdash tasks)"
            )
        );
        assert!(
            g.needs
                .iter()
                .any(|n| n.anchor == "queue-q_bad" && n.what == "task q_bad"),
            "{:?}",
            g.needs
        );
        assert_eq!(g.counts, s.verdict_at(t0()));
        let mut without = s.clone();
        without.tasks.queue_unreadable.clear();
        assert_eq!(g.counts.red, without.verdict_at(t0()).red + 1);
        // Only finished ones left out, nothing open: the panel says so rather than "no tasks".
        s.tasks.queue = Probe::Value(Vec::new());
        s.tasks.queue_unreadable.clear();
        let g = at(&s, 0);
        let q = g.sections.iter().find(|x| x.id == "queue").unwrap();
        assert_eq!(q.groups[0].empty, Some("No open tasks."));
        // No file yet (a `collect` before the first `run`): said, and nothing is red.
        s.tasks.queue = Probe::Unknown;
        let g = at(&s, 0);
        let q = g.sections.iter().find(|x| x.id == "queue").unwrap();
        assert_eq!(q.problem, None);
        assert_eq!(
            q.groups[0].empty,
            Some("No tasks yet: fleetdash run creates the work queue.")
        );
        assert_eq!(g.counts, s.verdict_at(t0()));
    }

    /// A row checked just before the hub's clock jumped two hours ahead, carried by a write
    /// after the jump (its section not read again yet): its ages are those observed plus the
    /// time since, the jump taken out; not "not taken for 2 h", not stuck.
    #[test]
    fn rows_carried_across_a_jump_of_the_clock_keep_their_ages() {
        let mut s = Snapshot::empty(t0(), rules());
        s.stale = false;
        let mut new = queue_task("q_new", 0);
        new.unacked_s = Some(50);
        new.quiet_s = Some(50);
        s.tasks.queue = Probe::Value(vec![new]);
        s.sections.queue = SectionMeta {
            configured: true,
            checked_at: Some(t0()),
            duration_ms: None,
            stale: false,
        };
        let jumped = t0() + chrono::Duration::hours(2) + chrono::Duration::seconds(10);
        s.generated_at = jumped;
        s.clock = ClockView {
            jumps: vec![crate::clock::ClockJump {
                kind: crate::clock::Jump::Forward,
                seconds: 7200,
                at: jumped,
                checked_at: jumped,
                stale: false,
            }],
            judging_from: Some(jumped),
            ..ClockView::default()
        };
        let g = crate::glance::Glance::new(&s, jumped + chrono::Duration::seconds(5), utc());
        let task = row(&g, "queue-q_new");
        assert_eq!(task.band, Band::Green, "{task:?}");
        assert!(
            !g.needs.iter().any(|n| n.what.contains("q_new")),
            "{:?}",
            g.needs
        );
        let (band, _, _) = s.tasks.queue.value().unwrap()[0].judge(
            QueueLimits::of(&s.rules),
            jumped + chrono::Duration::seconds(5),
            &s.clock,
        );
        assert_eq!(band, Band::Green);
        // Without the jump said, the same row reads two hours old: red.
        let (band, _, why) = s.tasks.queue.value().unwrap()[0].judge(
            QueueLimits::of(&s.rules),
            jumped + chrono::Duration::seconds(5),
            &ClockView::default(),
        );
        assert_eq!(band, Band::Red, "{why:?}");
    }
}

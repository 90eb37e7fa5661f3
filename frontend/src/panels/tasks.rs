//! Tasks: the kanban board (columns with cards and owners) and, separately, live A2A tasks
//! judged by the stuck rule: a red STUCK badge at or above the rules' `no_reply_s`.

use chrono::{DateTime, Utc};
use fleetdash_model::{Asc, Band, Board, LiveTask, Snapshot, Verdict, human_age};
use leptos::prelude::*;

use super::{checked, field, order, reason_line, red_first, section_problem};
use crate::clock::{seconds_since, use_clock};

const TERMINAL_STATES: [&str; 4] = [
    "TASK_STATE_COMPLETED",
    "TASK_STATE_FAILED",
    "TASK_STATE_CANCELED",
    "TASK_STATE_REJECTED",
];

pub fn tasks_panel(snapshot: Snapshot) -> impl IntoView {
    let meta = snapshot.sections.tasks.clone();
    let no_reply_s = snapshot.rules.no_reply_s;
    let board =
        section_problem(&snapshot.tasks.board, &snapshot.sections.board).unwrap_or_else(|| {
            let board = snapshot.tasks.board.value().cloned().unwrap_or(Board {
                columns: Vec::new(),
                cards: Vec::new(),
                sources: Vec::new(),
            });
            board_view(board).into_any()
        });
    let live =
        section_problem(&snapshot.tasks.live, &snapshot.sections.live_tasks).unwrap_or_else(|| {
            let tasks = snapshot.tasks.live.value().cloned().unwrap_or_default();
            // Red first; then unfinished tasks, oldest first, so that one crossing the stuck rule
            // between polls is already at the top of the green ones; finished tasks last. One key:
            // red in the top bit, finished in the next, then the age counting down.
            let keys = tasks
                .iter()
                .map(|t| {
                    let rank = (u64::from(t.band() != Band::Red) << 63)
                        | (u64::from(finished(t)) << 62)
                        | ((1 << 62) - 1 - t.age_s.min((1 << 62) - 1));
                    (rank, String::new())
                })
                .collect();
            let tasks: Vec<LiveTask> = order(keys).into_iter().map(|i| tasks[i].clone()).collect();
            if tasks.is_empty() {
                return view! { <p class="empty">"No live A2A tasks."</p> }.into_any();
            }
            view! {
                <ul class="rows">
                    {tasks.into_iter().map(|t| live_row(t, no_reply_s)).collect_view()}
                </ul>
            }
            .into_any()
        });
    view! {
        <section class="panel" aria-labelledby="tasks-h" id="tasks">
            <h2 id="tasks-h">"Tasks " {checked(meta)}</h2>
            <h3>"Live tasks " <small>{format!("(stuck at {} without a reply)", human_age(no_reply_s))}</small></h3>
            {live}
            <h3>"Board"</h3>
            {board}
        </section>
    }
}

fn board_view(board: Board) -> impl IntoView {
    // One line per configured board first: a board that could not be read, or whose projection
    // was refused, is red with its reason; it is never just missing from the columns. Plain
    // text lines keep the page small.
    let sources = board
        .sources
        .iter()
        .map(|src| {
            let band = src.band();
            let line = format!(
                "{} {} · {} · projection: {}{}",
                band.icon(),
                src.name,
                text(&src.cards, |n| format!("{n} cards")),
                text(&src.projection, Clone::clone),
                src.reason
                    .as_ref()
                    .map(|r| format!(" · {r} (ASC-{})", src.status.code))
                    .unwrap_or_default()
            );
            view! { <li class=format!("check {}", band.class())>{line}</li> }
        })
        .collect_view();
    // Red cards first within each column.
    let cards = red_first(board.cards.clone(), |c| (c.band, String::new()));
    let columns = board
        .columns
        .iter()
        .map(|column| {
            let in_column: Vec<_> = cards.iter().filter(|c| &c.status == column).cloned().collect();
            let items = in_column
                .into_iter()
                .map(|c| {
                    let mut meta = vec![c.assignee.unwrap_or_else(|| "unassigned".into())];
                    meta.extend(c.block_kind.map(|k| format!("blocked: {k}")));
                    meta.extend(c.conditions.iter().map(|x| format!("{} {x}", c.band.icon())));
                    meta.push(format!("{} {} · {} old", c.board, c.id, human_age(c.age_s)));
                    view! {
                        <li class=format!("card {}", c.band.class())>
                            <span class="title">{c.title}</span><small>{meta.join(" · ")}</small>
                        </li>
                    }
                })
                .collect_view();
            view! { <div class="column"><h4>{column.clone()}</h4><ul class="cards">{items}</ul></div> }
        })
        .collect_view();
    view! {
        <ul class="checks">{sources}</ul>
        <div class="board">{columns}</div>
    }
}

fn text<T>(probe: &fleetdash_model::Probe<T>, show: impl FnOnce(&T) -> String) -> String {
    match probe {
        fleetdash_model::Probe::Value(v) => show(v),
        fleetdash_model::Probe::Unknown => "none".into(),
        fleetdash_model::Probe::Error(r) => format!("error: {r}"),
    }
}

/// Whether a live task is stuck at `now`: flagged by the collector, or, still under the rule,
/// its age (which keeps counting between polls) has reached the rule before the next poll.
pub fn stuck_at(task: &LiveTask, no_reply_s: u64, now: DateTime<Utc>) -> bool {
    task.stuck
        || (under_the_rule(task) && task.age_s + seconds_since(task.checked_at, now) >= no_reply_s)
}

/// Unfinished, and neither a task its peer does not know (ASC NOT_FOUND) nor ids withheld as
/// secret-shaped (ASC GUARDRAIL_BLOCKED): the collector never judges those stuck, so neither
/// does the page.
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

/// The snapshot's verdict at `now`: live tasks that crossed the stuck rule since the snapshot
/// count red, as their rows show them.
pub fn verdict_at(snapshot: &Snapshot, now: DateTime<Utc>) -> Verdict {
    let mut verdict = snapshot.verdict();
    let crossed = snapshot.tasks.live.value().map_or(0, |tasks| {
        tasks
            .iter()
            .filter(|t| t.band() != Band::Red && stuck_at(t, snapshot.rules.no_reply_s, now))
            .count()
    });
    verdict.red += crossed;
    verdict.green -= crossed;
    verdict
}

fn live_row(task: LiveTask, no_reply_s: u64) -> impl IntoView {
    let now = use_clock();
    let at = task.checked_at;
    let base = task.age_s;
    let stuck = {
        let task = task.clone();
        Memo::new(move |_| stuck_at(&task, no_reply_s, now.get()))
    };
    let state = field(&task.state, |s| {
        // "working", not "TASK_STATE_WORKING": the wire value breaks mid-word on a phone.
        s.strip_prefix("TASK_STATE_")
            .unwrap_or(s)
            .to_ascii_lowercase()
    });
    view! {
        <li class=move || if stuck.get() || task.band() == Band::Red { "row red" } else { "row green" }>
            <div class="row-head">
                {move || stuck.get().then(|| view! { <span class="badge red stuck">"✖ STUCK"</span> })}
                <strong class="name">{task.id.clone()}</strong>
                <span class="where">{task.agent.clone()}</span>
            </div>
            {reason_line(task.reason.clone(), task.status.clone())}
            <dl class="facts">
                <div><dt>"state"</dt><dd>{state}</dd></div>
                <div><dt>"age"</dt><dd>{move || human_age(base + seconds_since(at, now.get()))}</dd></div>
            </dl>
        </li>
    }
}

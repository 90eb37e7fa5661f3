//! Tasks: the kanban board (columns with cards and owners) and, separately, live A2A tasks
//! judged by the stuck rule: a red STUCK badge at or above the rules' `no_reply_s`.

use chrono::{DateTime, Utc};
use fleetdash_model::{Band, Board, LiveTask, Snapshot, Verdict, human_age};
use leptos::prelude::*;

use super::{Checked, Reason, field, section_problem};
use crate::clock::{seconds_since, use_clock};

const TERMINAL_STATES: [&str; 4] = [
    "TASK_STATE_COMPLETED",
    "TASK_STATE_FAILED",
    "TASK_STATE_CANCELED",
    "TASK_STATE_REJECTED",
];

#[component]
pub fn TasksPanel(snapshot: Snapshot) -> impl IntoView {
    let meta = snapshot.sections.tasks.clone();
    let no_reply_s = snapshot.rules.no_reply_s;
    let board =
        section_problem(&snapshot.tasks.board, &snapshot.sections.board).unwrap_or_else(|| {
            let board = snapshot.tasks.board.value().cloned().unwrap_or(Board {
                columns: Vec::new(),
                cards: Vec::new(),
                sources: Vec::new(),
            });
            view! { <BoardView board=board/> }.into_any()
        });
    let live = section_problem(&snapshot.tasks.live, &snapshot.sections.live_tasks).unwrap_or_else(|| {
        let mut tasks = snapshot.tasks.live.value().cloned().unwrap_or_default();
        // Red first; then unfinished tasks, oldest first, so that one crossing the stuck rule
        // between polls is already at the top of the green ones; finished tasks last.
        tasks.sort_by_key(|t| (t.band() != Band::Red, finished(t), std::cmp::Reverse(t.age_s)));
        if tasks.is_empty() {
            return view! { <p class="empty">"No live A2A tasks."</p> }.into_any();
        }
        view! {
            <ul class="rows">
                {tasks.into_iter().map(|t| view! { <LiveRow task=t no_reply_s=no_reply_s/> }).collect_view()}
            </ul>
        }
        .into_any()
    });
    view! {
        <section class="panel" aria-labelledby="tasks-h" id="tasks">
            <h2 id="tasks-h">"Tasks " <Checked meta=meta/></h2>
            <h3>"Live tasks " <small>{format!("(stuck at {} without a reply)", human_age(no_reply_s))}</small></h3>
            {live}
            <h3>"Board"</h3>
            {board}
        </section>
    }
}

#[component]
fn BoardView(board: Board) -> impl IntoView {
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
    let mut cards = board.cards.clone();
    // Red cards first within each column.
    cards.sort_by_key(|c| std::cmp::Reverse(c.band));
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

/// Whether a live task is stuck at `now`: flagged by the collector, or, not finished, its age
/// (which keeps counting between polls) has reached the rule before the next poll.
pub fn stuck_at(task: &LiveTask, no_reply_s: u64, now: DateTime<Utc>) -> bool {
    task.stuck
        || (!finished(task) && task.age_s + seconds_since(task.checked_at, now) >= no_reply_s)
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

#[component]
fn LiveRow(task: LiveTask, no_reply_s: u64) -> impl IntoView {
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
            <Reason reason=task.reason.clone() status=task.status.clone()/>
            <dl class="facts">
                <div><dt>"state"</dt><dd>{state}</dd></div>
                <div><dt>"age"</dt><dd>{move || human_age(base + seconds_since(at, now.get()))}</dd></div>
            </dl>
        </li>
    }
}

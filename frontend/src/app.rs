//! The page: one verdict line, the staleness banner, then Agents, Tasks and Systems.

use fleetdash_model::{Band, Snapshot, human_age};
use leptos::prelude::*;
use leptos::task::spawn_local;
use wasm_bindgen::JsCast;
use wasm_bindgen::closure::Closure;

use crate::clock::{self, provide_ticking_clock};
use crate::feed::{self, Feed};
use crate::panels::{agents_panel, systems_panel, tasks_panel};

#[component]
pub fn App() -> impl IntoView {
    let now = provide_ticking_clock();
    let (feed, set_feed) = signal(Feed::default());
    let in_flight = StoredValue::new(false);

    let refresh = move || {
        if in_flight.get_value() {
            return;
        }
        in_flight.set_value(true);
        let (etag, last_modified) =
            feed.with_untracked(|f| (f.etag.clone(), f.last_modified.clone()));
        spawn_local(async move {
            let result = feed::fetch(etag, last_modified).await;
            set_feed.update(|f| *f = f.after(result, clock::now()));
            in_flight.set_value(false);
        });
    };
    refresh();
    set_interval(refresh, feed::POLL_EVERY);
    on_window_event("focus", refresh);
    on_window_event("visibilitychange", move || {
        if document().visibility_state() == web_sys::VisibilityState::Visible {
            refresh();
        }
    });

    let snapshot = Memo::new(move |_| feed.with(|f| f.snapshot.clone()));
    let distrust = Memo::new(move |_| feed.with(|f| reasons_to_distrust(f, now.get())));
    view! {
        <header class="top">
            <h1>"fleet"</h1>
            {verdict_line(snapshot, now, distrust)}
            {banner(distrust)}
        </header>
        <main>
            {move || match snapshot.get() {
                None => view! { <p class="waiting">"Waiting for the first snapshot…"</p> }.into_any(),
                Some(s) => view! {
                    {agents_panel(s.clone())}
                    {tasks_panel(s.clone())}
                    {systems_panel(s)}
                }.into_any(),
            }}
        </main>
        <footer>
            {move || snapshot.get().map(|s| view! {
                <p>"Snapshot written " {clock::utc_minute(s.generated_at)}
                   " · schema " {s.schema_version.clone()}</p>
            })}
            <p><a href="api/snapshot.html">"Static snapshot (no JavaScript)"</a></p>
        </footer>
    }
}

/// Calls `f` on every `event` of the window, for as long as the page lives. Not Leptos'
/// `window_event_listener`: its thread check (a SendWrapper) cost the page 4 KB of wasm.
fn on_window_event(event: &str, f: impl FnMut() + 'static) {
    let listener = Closure::<dyn FnMut()>::new(f);
    // Cannot fail: the window is an event target and the callback a function.
    let _ = window().add_event_listener_with_callback(event, listener.as_ref().unchecked_ref());
    // The listener lives as long as the page.
    listener.forget();
}

/// "2 red · 1 amber · 8 green", coloured by the worst; live tasks that cross the stuck rule
/// between polls turn it red as they turn red in their panel. While the page cannot be trusted
/// it never says green: it says stale, and what the last snapshot said.
fn verdict_line(
    snapshot: Memo<Option<Snapshot>>,
    now: ReadSignal<chrono::DateTime<chrono::Utc>>,
    distrust: Memo<Vec<String>>,
) -> impl IntoView {
    move || {
        let now = now.get();
        snapshot
            .with(|s| s.as_ref().map(|s| crate::panels::verdict_at(s, now)))
            .map(|verdict| {
                let stale = distrust.with(|d| !d.is_empty());
                let band = if stale { Band::Red } else { verdict.worst() };
                let text = if stale {
                    format!("stale · last known: {}", verdict.sentence())
                } else {
                    verdict.sentence()
                };
                view! {
                    <p class=format!("verdict {}", band.class()) id="verdict">
                        <span aria-hidden="true">{band.icon()}" "</span>{text}
                    </p>
                }
            })
    }
}

/// Why the page should not be trusted right now: the last fetch failed, or the snapshot is old
/// or marked stale. Empty when all is well.
fn reasons_to_distrust(f: &Feed, now: chrono::DateTime<chrono::Utc>) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(error) = &f.error {
        let last_good = match &f.snapshot {
            Some(s) => format!("last good snapshot {} ago", human_age(s.age_s(now))),
            None => "no snapshot loaded yet".to_string(),
        };
        lines.push(format!(
            "Cannot load the snapshot: {error}. Showing the {last_good}."
        ));
    }
    if let Some(s) = &f.snapshot
        && let Some(why) = s.staleness(now)
    {
        lines.push(format!("Stale data: {why}."));
    }
    lines
}

/// The fleet's alert: shown when the snapshot is old or stale, or the last fetch failed.
fn banner(distrust: Memo<Vec<String>>) -> impl IntoView {
    move || {
        let lines = distrust.get();
        (!lines.is_empty()).then(|| {
            view! {
                <div class="banner" role="alert" id="stale-banner">
                    <strong><span aria-hidden="true">{Band::Red.icon()}" "</span>"Do not trust this page yet"</strong>
                    {lines.into_iter().map(|l| view! { <p>{l}</p> }).collect_view()}
                </div>
            }
        })
    }
}

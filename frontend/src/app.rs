//! The page: the verdict in words, the staleness banner, needs-you, then every section of the
//! glance. Every word comes from [`fleetdash_model::Glance`], which snapshot.html lays out too.
//!
//! The glance is computed at the ticking `now` while the page can be trusted (ages count up, a
//! task crossing the stuck rule turns STUCK); while it cannot (the last good poll is older than
//! twice the interval, the last poll failed, or the snapshot is stale) it is frozen at the
//! snapshot's own time and says times, not ages ("as of 14:02"): nothing is invented from a
//! clock that ticks on without data, and no age contradicts the banner's.
//!
//! Every time of day is in the reader's zone, named once at the top.

use chrono::{DateTime, Utc};
use fleetdash_model::glance::changes::{self, SinceLooked};
use fleetdash_model::{Band, Glance, human_age};
use leptos::prelude::*;
use leptos::task::spawn_local;
use wasm_bindgen::JsCast;
use wasm_bindgen::closure::Closure;

use crate::clock::{self, provide_ticking_clock};
use crate::feed::{self, Feed, Timing};
use crate::view::{Line, Opened, flag, keyed, live, markup_part, sections};
use fleetdash_model::glance::markup;

#[component]
pub fn App() -> impl IntoView {
    let timing = Timing::from_query(&window().location().search().unwrap_or_default());
    let now = provide_ticking_clock();
    let (feed, set_feed) = signal(Feed::default());
    let in_flight = StoredValue::new(false);

    let refresh = move || {
        if in_flight.get_value() {
            return;
        }
        in_flight.set_value(true);
        spawn_local(async move {
            // The first poll of a visit may get the service worker's kept copy at once: it is
            // shown, and the server asked again at once.
            loop {
                let (etag, last_modified, first) = feed.with_untracked(|f| {
                    (
                        f.etag.clone(),
                        f.last_modified.clone(),
                        f.snapshot.is_none(),
                    )
                });
                let result = feed::fetch(etag, last_modified, first, timing.deadline_s).await;
                let kept = first && matches!(&result, Ok(feed::Fetched::Fresh { kept: true, .. }));
                set_feed.update(|f| *f = f.after(result, clock::now()));
                if !kept {
                    break;
                }
            }
            in_flight.set_value(false);
        });
    };
    refresh();
    set_interval(
        refresh,
        std::time::Duration::from_secs(u64::from(timing.every_s)),
    );
    on_window_event("focus", refresh);
    on_window_event("online", refresh);
    on_window_event("visibilitychange", move || {
        if document().visibility_state() == web_sys::VisibilityState::Visible {
            refresh();
        }
    });

    let distrust = Memo::new(move |_| feed.with(|f| reasons_to_distrust(f, now.get(), timing)));
    let offset = clock::offset();
    let glance = Memo::new(move |_| {
        let trusted = distrust.with(Vec::is_empty);
        feed.with(|f| {
            f.snapshot.as_ref().map(|s| {
                if trusted {
                    Glance::new(s, now.get(), offset)
                } else {
                    Glance::frozen(s, offset)
                }
            })
        })
    });
    // The tab says the verdict too: its title and a dot in the verdict's colour.
    Effect::new(move |_| {
        let trusted = distrust.with(Vec::is_empty);
        glance.with(|g| {
            let (title, band) = match g {
                Some(g) => (g.title(trusted), g.verdict(trusted).0),
                None => ("fleet".to_string(), Band::Amber),
            };
            document().set_title(&title);
            if let Some(icon) = document().query_selector("link[rel=icon]").ok().flatten() {
                let _ = icon.set_attribute("href", &fleetdash_model::glance::favicon(band));
            }
        });
    });
    // The service worker's kept copy, shown while the server is asked: aged and marked on the
    // name's line, not distrusted (the banner is for what has gone wrong).
    let checking = Memo::new(move |_| {
        feed.with(|f| match &f.snapshot {
            Some(s) if f.error.is_none() && f.last_ok_at.is_none() => {
                markup::checking(&format!("{} old", human_age(s.age_s(now.get()))))
            }
            _ => String::new(),
        })
    });
    let opened = Opened::new();
    let loaded = flag(Box::new(move || glance.with(Option::is_some)));
    // The first HTML's header (issue 46) stays until this page draws its own, in the same tick,
    // or until its first poll failed: the banner then says why (a 401 after the browser forgot
    // the login), which the first HTML's "checking…" must not hide.
    let answered = flag(Box::new(move || {
        feed.with(|f| f.snapshot.is_some() || f.error.is_some())
    }));
    Effect::new(move |_| {
        if answered.get()
            && let Some(first) = document().get_element_by_id("first")
        {
            first.remove();
        }
    });
    let looked = Looked::start();
    // A look sees the snapshot shown: it is marked by the server's clock (as the log's times
    // are), and never before that snapshot's own time.
    let look_time = move || {
        let shown = feed.with_untracked(|f| f.snapshot.as_ref().map(|s| s.generated_at));
        shown.map_or(clock::now(), |at| at.max(clock::now()))
    };
    // The first good poll marks this look.
    Effect::new(move |_| {
        if feed.with(|f| f.last_ok_at.is_some()) {
            looked.begin_if_new(look_time());
        }
    });
    on_window_event("visibilitychange", move || {
        match document().visibility_state() {
            web_sys::VisibilityState::Visible => looked.begin(look_time()),
            _ => looked.end(),
        }
    });
    let since = Memo::new(move |_| {
        let previous = looked.previous.get()?;
        glance.with(|g| {
            let g = g.as_ref()?;
            feed.with(|f| {
                f.snapshot
                    .as_ref()
                    .map(|s| changes::since_looked(s, g, previous, offset))
            })
        })
    });

    view! {
        <header class="top">
            <h1>"fleet"<span class="part" inner_html=move || {
                glance.with(|g| g.as_ref().map(|g| markup::zone(&g.zone)).unwrap_or_default())
            }></span><span class="part" inner_html=checking></span></h1>
            {markup_part(Box::new(move || {
                let trusted = distrust.with(Vec::is_empty);
                glance.with(|g| g.as_ref().map(|g| markup::verdict(g, trusted)).unwrap_or_default())
            }))}
            {markup_part(Box::new(move || {
                distrust.with(|lines| {
                    glance.with(|g| markup::banner(lines, g.as_ref().map(|g| g.as_of.as_str())))
                })
            }))}
            // A tap on a line opens the row it leads to.
            <div class="part" on:click=move |ev| opened.set_from_link(&ev)
                inner_html=move || since.with(|s| s.as_ref().map(markup::since_looked).unwrap_or_default())>
            </div>
            {needs(glance, since, opened)}
        </header>
        <main>
            // Drawn once the first snapshot is in, then updated by key (view.rs).
            {live(Box::new(move || match loaded.get() {
                false => view! { <p class="waiting">"Waiting for the first snapshot…"</p> }.into_any(),
                true => sections(glance, opened).into_any(),
            }))}
        </main>
        <footer>
            <p><span class="part" inner_html=move || feed.with(|f| {
                f.snapshot.as_ref().map(|s| {
                    markup::written(&fleetdash_model::moment(s.generated_at, clock::now(), offset), &s.schema_version)
                }).unwrap_or_default()
            })></span></p>
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

/// One line per red item, then amber, each leading to its row (and opening it), "new" when it
/// turned so since the last look; a line that is one sentence (a failing alert channel's) has
/// no separate reason. Keyed by the line itself: a line that did not change keeps its node.
fn needs(
    glance: Memo<Option<Glance>>,
    since: Memo<Option<SinceLooked>>,
    opened: Opened,
) -> impl IntoView + use<> {
    let any = flag(Box::new(move || {
        glance.with(|g| g.as_ref().is_some_and(|g| !g.needs.is_empty()))
    }));
    live(Box::new(move || {
        any.get()
            .then(|| {
                let lines = keyed(
                    Box::new(move || {
                        let is_new = |anchor: &str| {
                            since.with(|s| s.as_ref().is_some_and(|s| s.is_new(anchor)))
                        };
                        glance.with(|g| {
                            g.as_ref()
                                .map(|g| {
                                    g.needs
                                        .iter()
                                        .map(|n| Line::Need(n.clone(), is_new(&n.anchor)))
                                        .collect()
                                })
                                .unwrap_or_default()
                        })
                    }),
                    opened,
                );
                view! {
                    <section class="needs" id="needs" aria-labelledby="needs-h">
                        <h2 id="needs-h">"Needs you"</h2>
                        // A tap on a line opens the row it leads to.
                        <ol on:click=move |ev| opened.set_from_link(&ev)>{lines}</ol>
                    </section>
                }
            })
            .into_any()
    }))
}

/// When the operator last looked, kept in the browser's storage: the start of the previous
/// look (a page opened, or a tab shown again), so a reload still shows what happened since.
#[derive(Clone, Copy)]
struct Looked {
    /// The previous look's start, shown as "since you last looked"; `None` on a first visit.
    previous: RwSignal<Option<DateTime<Utc>>>,
    /// Whether this look has been recorded yet.
    begun: StoredValue<bool>,
}

/// The browser storage key (milliseconds since 1970, by the server's clock).
const LOOKED_KEY: &str = "fleetdash.looked";

impl Looked {
    fn start() -> Looked {
        Looked {
            previous: RwSignal::new(None),
            begun: StoredValue::new(false),
        }
    }

    fn storage() -> Option<web_sys::Storage> {
        window().local_storage().ok().flatten()
    }

    /// Starts a look at `now` unless one has begun: the stored look becomes the previous one.
    fn begin_if_new(self, now: DateTime<Utc>) {
        if !self.begun.get_value() {
            self.begin(now);
        }
    }

    fn begin(self, now: DateTime<Utc>) {
        if self.begun.get_value() {
            return;
        }
        self.begun.set_value(true);
        let Some(storage) = Self::storage() else {
            return;
        };
        let stored = storage
            .get_item(LOOKED_KEY)
            .ok()
            .flatten()
            .and_then(|ms| ms.parse::<i64>().ok())
            .and_then(DateTime::from_timestamp_millis);
        self.previous.set(stored);
        // Rounded up to the millisecond: a look at a snapshot saw its changes (stamped to the
        // microsecond), so it must not fall before them.
        let millis = (now.timestamp_micros() + 999).div_euclid(1000);
        let _ = storage.set_item(LOOKED_KEY, &millis.to_string());
    }

    /// The tab is hidden: the next time it is shown is a new look.
    fn end(self) {
        self.begun.set_value(false);
    }
}

/// Why the page should not be trusted right now: the last poll failed, no poll succeeded for
/// twice the interval, or the snapshot is old or marked stale. Empty when all is well.
fn reasons_to_distrust(f: &Feed, now: DateTime<Utc>, timing: Timing) -> Vec<String> {
    let mut lines = Vec::new();
    let last_good = match &f.snapshot {
        Some(s) => format!(
            "Showing the last good snapshot {} ago.",
            human_age(s.age_s(now))
        ),
        None => "No snapshot loaded yet.".to_string(),
    };
    if let Some(error) = &f.error {
        lines.push(format!("Cannot load the snapshot: {error}. {last_good}"));
    } else if let Some(ok) = f.last_ok_at
        && clock::seconds_since(ok, now) >= timing.trust_s()
    {
        lines.push(format!(
            "No answer from the server for {} (it is asked every {} s). {last_good}",
            human_age(clock::seconds_since(ok, now)),
            timing.every_s
        ));
    }
    if let Some(s) = &f.snapshot
        && let Some(why) = s.staleness(now)
    {
        lines.push(format!("Stale data: {why}."));
    }
    lines
}

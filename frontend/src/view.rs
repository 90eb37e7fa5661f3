//! Lays out the glance's sections: every row one line (badge, name, summary, a small strip),
//! the reason under it when it is not green, the details behind a tap (`<details>`, as on
//! snapshot.html). No words are made here: they all come from [`fleetdash_model::Glance`].
//! An element whose alerts are held back says so in muted words under its line (a struck bell,
//! "silenced until 16:00 (disk swap)"), visible while the row is closed.
//!
//! The details of a row are only built while it is open (the page redraws every second while
//! fresh, and a closed row's details are never seen); which rows are open is kept by anchor, so
//! a redraw never closes what the operator opened.

use fleetdash_model::glance::{Checks, Group, HELD_ICON, Row, Section, Strip};
use fleetdash_model::{Band, Glance};
use leptos::prelude::*;

/// The anchors of the rows the operator opened.
#[derive(Clone, Copy)]
pub struct Opened(pub RwSignal<Vec<String>>);

impl Opened {
    pub fn new() -> Opened {
        Opened(RwSignal::new(Vec::new()))
    }

    fn is_open(self, anchor: &str) -> bool {
        self.0.with(|o| o.iter().any(|a| a == anchor))
    }

    /// Records what the operator did to a row (a `toggle` event says it after the fact).
    pub fn set(self, anchor: &str, open: bool) {
        if open != self.0.with_untracked(|o| o.iter().any(|a| a == anchor)) {
            self.0.update(|o| {
                o.retain(|a| a != anchor);
                if open {
                    o.push(anchor.to_string());
                }
            });
        }
    }
}

pub fn sections(g: &Glance, opened: Opened) -> impl IntoView + use<> {
    g.sections.iter().map(|s| section(s, opened)).collect_view()
}

fn section(s: &Section, opened: Opened) -> impl IntoView + use<> {
    let heading = format!("{}-h", s.id);
    let labelled_by = heading.clone();
    let problem = s.problem.as_ref().map(|p| match p.band {
        Some(band) => view! {
            <p class=format!("section-error {}", band.class()) role="status">
                <span aria-hidden="true">{band.icon()}" "</span>{p.text.clone()}
                {p.held.clone().map(held)}
            </p>
        }
        .into_any(),
        None => view! { <p class="not-configured">{p.text.clone()}</p> }.into_any(),
    });
    view! {
        <section class="panel" id=s.id aria-labelledby=labelled_by>
            <h2 id=heading>{s.title}" "
                {s.checked.clone().map(|c| view! {
                    <small class=if s.stale { "checked stale" } else { "checked" }>{c}</small>
                })}
            </h2>
            {s.note.clone().map(|n| view! { <p class="note">{n}</p> })}
            {problem}
            {s.groups.iter().map(|g| group(g, opened)).collect_view()}
        </section>
    }
}

fn group(g: &Group, opened: Opened) -> impl IntoView + use<> {
    // A titled group (a board column) says its folded cards and its emptiness on its title
    // line; an untitled one on a line of its own.
    let aside = [g.empty.map(str::to_string), g.folded.clone()]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" · ");
    let head = match &g.title {
        Some(t) => Some(view! {
            <h3>{t.clone()}{(!aside.is_empty()).then(|| view! { <small>" · "{aside.clone()}</small> })}</h3>
        }
        .into_any()),
        None => (!aside.is_empty()).then(|| view! { <p class="empty">{aside.clone()}</p> }.into_any()),
    };
    let rows = (!g.rows.is_empty()).then(|| {
        view! { <ul class="rows">{g.rows.iter().map(|r| row(r, opened)).collect_view()}</ul> }
    });
    view! { {head}{rows} }
}

fn row(r: &Row, opened: Opened) -> impl IntoView + use<> {
    let anchor = r.anchor.clone();
    let open = opened.is_open(&anchor);
    let toggle = move |ev: leptos::ev::Event| {
        let details: web_sys::Element = event_target(&ev);
        opened.set(&anchor, details.has_attribute("open"));
    };
    view! {
        <li class=format!("row {}", r.band.class()) id=r.anchor.clone()>
            <details open=open on:toggle=toggle>
                <summary>
                    <span class="line">
                        <span class=format!("badge {}", r.band.class())>
                            <span aria-hidden="true">{r.band.icon()}" "</span>{r.badge}
                        </span>
                        <strong class="name">{r.title.clone()}</strong>
                        <span class="sum">{r.summary.clone()}</span>
                        {r.strip.as_ref().map(|s| cells(s, None))}
                    </span>
                    {r.reason.clone().map(|why| view! { <span class="reason">{why}</span> })}
                    {r.held.clone().map(held)}
                </summary>
                {open.then(|| details(r))}
            </details>
        </li>
    }
}

/// What a tap shows: the code, the facts, a host's checks, the strip with its words and axis.
fn details(r: &Row) -> impl IntoView + use<> {
    let facts = r
        .facts
        .iter()
        .map(|f| {
            let class = f.band.map(Band::class).unwrap_or_default();
            view! { <div><dt>{f.label}</dt><dd class=class>{f.text.clone()}{f.held.clone().map(held)}</dd></div> }
        })
        .collect_view();
    view! {
        <div class="more">
            {r.code.clone().map(|c| view! { <p><code>{c}</code></p> })}
            <dl class="facts">{facts}</dl>
            {r.checks.iter().map(checks).collect_view()}
            {r.strip.as_ref().map(|s| view! {
                <div class="hist">
                    {cells(s, Some(s.label.clone()))}
                    <div class="axis" aria-hidden="true">
                        {s.axis.iter().map(|a| view! { <span>{*a}</span> }).collect_view()}
                    </div>
                    <small aria-hidden="true">{s.label.clone()}</small>
                </div>
            })}
        </div>
    }
}

fn checks(c: &Checks) -> impl IntoView + use<> {
    let items = if c.items.is_empty() {
        view! { <li class="empty">"none configured"</li> }.into_any()
    } else {
        c.items
            .iter()
            .map(|i| {
                view! {
                    <li class=format!("check {}", i.band.class())>
                        <span aria-hidden="true">{i.band.icon()}" "</span>{i.text.clone()}
                        {i.why.clone().map(|w| view! { <small class="why">{w}</small> })}
                        {i.held.clone().map(held)}
                    </li>
                }
            })
            .collect_view()
            .into_any()
    };
    view! { <div class="checks"><h4>{c.title}</h4><ul>{items}</ul></div> }
}

/// An element's alerts held back, in muted words under what it qualifies: it is still shown in
/// its band, only nobody is paged about it.
pub fn held(words: String) -> impl IntoView + use<> {
    view! { <small class="held"><span aria-hidden="true">{HELD_ICON}" "</span>{words}</small> }
}

/// The 24 h strip as runs of one kind; labelled for screen readers when `label` is given (the
/// one in a row's line is decoration: the details say it in words).
fn cells(s: &Strip, label: Option<String>) -> impl IntoView + use<> {
    let runs = s
        .runs()
        .into_iter()
        .map(|(class, n)| view! { <i class=class style=format!("--n:{n}")></i> })
        .collect_view();
    match label {
        Some(l) => {
            view! { <span class="strip big" role="img" aria-label=l>{runs}</span> }.into_any()
        }
        None => view! { <span class="strip" aria-hidden="true">{runs}</span> }.into_any(),
    }
}

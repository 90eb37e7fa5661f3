//! Lays out the glance's sections: every row one line (badge, name, summary, a small strip),
//! the details behind a tap (`<details>`, as on snapshot.html), the reason first among them.
//! A row that is not green has its needs-you line, which says its reason in a few words and
//! leads here: the closed row does not say it again, the opened one says it whole. No words are made here: they all come from [`fleetdash_model::Glance`].
//! An element whose alerts are held back says so in muted words under its line (a struck bell,
//! "silenced until 16:00 (disk swap)"), visible while the row is closed.
//!
//! The page updates by key: the glance is computed again every second while fresh (ages count
//! up), but only what changed is redrawn. The sections are drawn once (the glance always has
//! the same ones); a section's groups again only when their titles change; each row, and each
//! needs-you line, is keyed by its whole content ([`Line`]): a row whose words did not change
//! keeps its DOM node, a changed one is replaced where it stands, so a board of hundreds of
//! listed cards costs a few rows per tick, not all of them. Headings, notes and group titles
//! (a few elements, the ages among them) are redrawn with the glance.
//!
//! The details of a row are only built while it is open (a closed row's details are never
//! seen); which rows are open is kept by anchor, so a redraw never closes what the operator
//! opened.

use fleetdash_model::Glance;
use fleetdash_model::glance::{Need, Row, Section};
use leptos::prelude::*;
use leptos::tachys::view::any_view::AnyView;

use fleetdash_model::glance::markup;

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

    /// A tap on a link to a row (`#anchor`) inside markup: the row it leads to opens.
    pub fn set_from_link(self, ev: &leptos::ev::MouseEvent) {
        use wasm_bindgen::JsCast;
        let link = ev
            .target()
            .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
            .and_then(|e| e.closest("a[href^='#']").ok().flatten());
        if let Some(anchor) = link.and_then(|a| a.get_attribute("href")) {
            self.set(&anchor[1..], true);
        }
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

/// Every section of the glance, drawn once (the glance always has the same sections), each
/// part following the glance as it changes, the rows by key.
pub fn sections(glance: Memo<Option<Glance>>, opened: Opened) -> impl IntoView + use<> {
    let ids: Vec<&'static str> = glance.with_untracked(|g| {
        g.as_ref()
            .map(|g| g.sections.iter().map(|s| s.id).collect())
            .unwrap_or_default()
    });
    ids.into_iter()
        .map(|id| section(id, glance, opened))
        .collect_view()
}

/// `f` of the section `id` of the glance, tracked.
fn of_section<T>(
    glance: Memo<Option<Glance>>,
    id: &str,
    f: impl FnOnce(&Section) -> T,
) -> Option<T> {
    glance.with(|g| g.as_ref()?.sections.iter().find(|s| s.id == id).map(f))
}

/// A part of the page that follows the signals it reads. Every part is this one closure type
/// around its own boxed body: a closure type of its own per part cost about 1.4 KB of wasm each
/// (the renderer is generic over it).
pub fn live(f: Box<dyn Fn() -> AnyView + Send + Sync>) -> impl IntoView {
    move || f()
}

/// A part of the page written as markup ([`markup`]), following the signals it reads, set again
/// only when its text changes. Its element is no box of its own (`.part`: `display: contents`):
/// what it holds lays out as children of its parent.
pub fn markup_part(f: Box<dyn Fn() -> String + Send + Sync>) -> impl IntoView {
    view! { <div class="part" inner_html=f></div> }
}

/// A yes/no that follows the signals it reads and wakes its readers only when it flips; one
/// memo type for all of them, as [`live`] is for views.
pub fn flag(f: Box<dyn Fn() -> bool + Send + Sync>) -> Memo<bool> {
    Memo::new(move |_| f())
}

/// What the page lists by key: a section's rows and the needs-you lines. One type for both, so
/// that the keyed list's code is in the page once (a second item type cost 1.3 KB gzip).
#[derive(Clone, PartialEq, Eq, Hash)]
// A few hundred lines at most, each moved once into its view: boxing the row would cost code
// and an allocation per line for no gain.
#[allow(clippy::large_enum_variant)]
pub enum Line {
    Row(Row),
    /// A needs-you line, and whether it turned red or amber since the operator last looked.
    Need(Need, bool),
}

/// The lines `each` gives, keyed by their whole content: a line that did not change keeps its
/// DOM node, a changed one is replaced where it stands.
pub fn keyed(each: Box<dyn Fn() -> Vec<Line> + Send + Sync>, opened: Opened) -> impl IntoView {
    view! {
        <For
            each=move || each()
            key=|l: &Line| l.clone()
            children=move |l| match l {
                Line::Row(r) => row(r, opened).into_any(),
                Line::Need(n, new) => need(n, new).into_any(),
            }
        />
    }
}

/// A needs-you line, leading to its row (the list's one click handler opens it, as it does
/// for "since you last looked"); "new" when it turned red or amber since the operator last
/// looked.
fn need(n: Need, new: bool) -> impl IntoView {
    view! {
        <li class=n.band.class()>
            <a href=format!("#{}", n.anchor) inner_html=markup::need_line(&n, new)></a>
        </li>
    }
}

fn section(id: &'static str, glance: Memo<Option<Glance>>, opened: Opened) -> impl IntoView {
    // The groups are drawn again only when their titles change (a column appears); within a
    // group, the rows follow by key. The heading, note and problem are redrawn with the glance
    // (a few elements: the age in the heading counts up).
    let groups = Memo::new(move |_| {
        of_section(glance, id, |s| {
            s.groups.iter().map(|g| g.title.clone()).collect::<Vec<_>>()
        })
        .unwrap_or_default()
    });
    let labelled_by = format!("{id}-h");
    let head = markup_part(Box::new(move || {
        of_section(glance, id, markup::section_head).unwrap_or_default()
    }));
    let body = live(Box::new(move || {
        groups
            .with(|titles| {
                (0..titles.len())
                    .map(|i| group(glance, id, i, opened))
                    .collect_view()
            })
            .into_any()
    }));
    view! {
        <section class="panel" id=id aria-labelledby=labelled_by>
            {head}
            {body}
        </section>
    }
}

/// The `i`th group of the section `id`: its title line, and its rows by key.
fn group(glance: Memo<Option<Glance>>, id: &'static str, i: usize, opened: Opened) -> AnyView {
    // A titled group (a board column) says its folded cards and its emptiness on its title
    // line; an untitled one on a line of its own.
    let head = markup_part(Box::new(move || {
        of_section(glance, id, |s| s.groups.get(i).map(markup::group_head))
            .flatten()
            .unwrap_or_default()
    }));
    let has_rows = flag(Box::new(move || {
        of_section(glance, id, |s| {
            s.groups.get(i).is_some_and(|g| !g.rows.is_empty())
        }) == Some(true)
    }));
    let list = live(Box::new(move || {
        has_rows
            .get()
            .then(|| {
                let rows = keyed(
                    Box::new(move || {
                        of_section(glance, id, |s| {
                            s.groups
                                .get(i)
                                .map(|g| g.rows.iter().cloned().map(Line::Row).collect())
                        })
                        .flatten()
                        .unwrap_or_default()
                    }),
                    opened,
                );
                view! { <ul class="rows">{rows}</ul> }
            })
            .into_any()
    }));
    // A closed group (the work queue's finished tasks) is one tap away, folded under its title.
    let closed = glance.with_untracked(|g| {
        g.as_ref()
            .and_then(|g| g.sections.iter().find(|s| s.id == id))
            .and_then(|s| s.groups.get(i))
            .is_some_and(|g| g.closed)
    });
    if closed {
        let title = live(Box::new(move || {
            of_section(glance, id, |s| {
                s.groups.get(i).and_then(|g| g.title.clone())
            })
            .flatten()
            .into_any()
        }));
        return view! { <details class="fold"><summary>{title}</summary>{list}</details> }
            .into_any();
    }
    view! { {head}{list} }.into_any()
}

/// One row, drawn once for its words: a row whose words change is another row (its key is its
/// content), so nothing in it but its opening follows a signal. Its line and details are
/// markup text ([`markup`]).
fn row(r: Row, opened: Opened) -> impl IntoView {
    let anchor = r.anchor.clone();
    let is_open = {
        let anchor = anchor.clone();
        flag(Box::new(move || opened.is_open(&anchor)))
    };
    let toggle = move |ev: leptos::ev::Event| {
        let details: web_sys::Element = event_target(&ev);
        opened.set(&anchor, details.has_attribute("open"));
    };
    let line = markup::row_line(&r);
    let class = format!("row {}", r.band.class());
    let id = r.anchor.clone();
    view! {
        <li class=class id=id>
            <details open=move || is_open.get() on:toggle=toggle>
                <summary inner_html=line></summary>
                {live(Box::new(move || is_open.get().then(|| view! {
                    <div class="more" inner_html=markup::row_details(&r)></div>
                }).into_any()))}
            </details>
        </li>
    }
}

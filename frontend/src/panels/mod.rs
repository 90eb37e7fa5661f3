//! The three panels and what they share: badges, ticking ages, section-level failures.
//!
//! Every element of the snapshot is rendered; a failed one is red with its reason, and a
//! section without data says whether it is not configured or failed. Red rows sort first.

mod agents;
mod systems;
mod tasks;

pub use agents::AgentsPanel;
pub use systems::SystemsPanel;
pub use tasks::{TasksPanel, verdict_at};

use chrono::{DateTime, Utc};
use fleetdash_model::{Asc, Band, Probe, SectionMeta, human_age};
use leptos::prelude::*;

use crate::clock::{seconds_since, use_clock};

/// Colour, icon and word together: the band is never told by colour alone.
#[component]
pub fn BandBadge(band: Band) -> impl IntoView {
    view! {
        <span class=format!("badge {}", band.class())>
            <span aria-hidden="true">{band.icon()}</span>" "{band.word()}
        </span>
    }
}

/// An age that counts up every second: `base_s` seconds at `at`, plus the time since.
#[component]
pub fn Age(
    at: DateTime<Utc>,
    #[prop(default = 0)] base_s: u64,
    #[prop(optional)] suffix: &'static str,
) -> impl IntoView {
    let now = use_clock();
    move || {
        format!(
            "{}{suffix}",
            human_age(base_s + seconds_since(at, now.get()))
        )
    }
}

/// The reason of a failed element with its Agent Status Code.
#[component]
pub fn Reason(reason: Option<String>, status: Asc) -> impl IntoView {
    reason.map(|r| {
        view! {
            <p class="reason">{r}" " <code title=status.family()>{format!("ASC-{} {}", status.code, status.name)}</code></p>
        }
    })
}

/// A field that may hold a value, "unknown", or the error of its probe.
pub fn field<T>(probe: &Probe<T>, show: impl FnOnce(&T) -> String) -> AnyView {
    match probe {
        Probe::Value(v) => view! { <span>{show(v)}</span> }.into_any(),
        Probe::Unknown => view! { <span class="unknown">"unknown"</span> }.into_any(),
        Probe::Error(reason) => {
            view! { <span class="field-error">{format!("error: {reason}")}</span> }.into_any()
        }
    }
}

/// What a section shows instead of its elements when it has none to show.
pub fn section_problem<T>(probe: &Probe<T>, meta: &SectionMeta) -> Option<AnyView> {
    let Probe::Error(reason) = probe else {
        return None;
    };
    Some(if meta.configured {
        view! {
            <p class="section-error" role="status">
                <span aria-hidden="true">{Band::Red.icon()}" "</span>{format!("error: {reason}")}
            </p>
        }
        .into_any()
    } else {
        view! { <p class="not-configured">"Not configured: no collector for this section."</p> }
            .into_any()
    })
}

/// "checked 12 s ago" for a section, or why it is stale.
#[component]
pub fn Checked(meta: SectionMeta) -> impl IntoView {
    meta.checked_at.map(|at| {
        view! {
            <small class=if meta.stale { "checked stale" } else { "checked" }>
                "checked " <Age at=at suffix=" ago"/>
            </small>
        }
    })
}

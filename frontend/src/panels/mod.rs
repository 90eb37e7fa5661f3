//! The three panels and what they share: badges, ticking ages, section-level failures.
//!
//! Every element of the snapshot is rendered; a failed one is red with its reason, and a
//! section without data says whether it is not configured or failed. Red rows sort first.

mod agents;
mod systems;
mod tasks;

pub use agents::agents_panel;
pub use systems::systems_panel;
pub use tasks::{tasks_panel, verdict_at};

use chrono::{DateTime, Utc};
use fleetdash_model::{Asc, Band, History, Probe, SectionMeta, human_age};
use leptos::prelude::*;

use crate::clock::{seconds_since, use_clock};

/// Colour, icon and word together: the band is never told by colour alone.
pub fn badge(band: Band) -> impl IntoView {
    view! {
        <span class=format!("badge {}", band.class())>
            <span aria-hidden="true">{band.icon()}</span>" "{band.word()}
        </span>
    }
}

/// "24 h uptime 97.9 %", or that there is no sample yet.
pub fn uptime_words(pct: Option<f64>) -> String {
    match pct {
        Some(p) => format!("24 h uptime {} %", crate::clock::one_decimal(p)),
        None => "24 h uptime: no samples yet".into(),
    }
}

/// The last 24 hours of an agent or host: one cell per slot, oldest first (green and short when
/// up, red and tall when down, amber between, grey when not sampled), then the uptime in words.
/// Screen readers get the words once, from the strip's label. Without a history yet, every
/// slot is empty and the words say so.
pub fn strip(history: Option<&History>) -> impl IntoView + use<> {
    let (pct, cells) = history.map_or((None, ""), |h| (h.uptime_24h_pct, h.strip.as_str()));
    let label = uptime_words(pct);
    let cells = cells
        .chars()
        .map(|c| {
            let class = match c {
                'u' => "u",
                'd' => "d",
                'p' => "p",
                _ => "n",
            };
            view! { <i class=class aria-hidden="true"></i> }
        })
        .collect_view();
    view! {
        <div class="hist">
            <span class="strip" role="img" aria-label=label.clone()>{cells}</span>
            <small aria-hidden="true">{label}</small>
        </div>
    }
}

/// `items` red first, then amber, then green, each band in the order of its name (stable).
/// Every list of the page is sorted by [`order`] over plain keys: each standard sort of a list
/// of rows would add its own kilobytes of WebAssembly.
pub fn red_first<T>(items: Vec<T>, key: impl Fn(&T) -> (Band, String)) -> Vec<T> {
    let keys = items
        .iter()
        .map(|t| {
            let (band, name) = key(t);
            (Band::Red as u64 - band as u64, name)
        })
        .collect();
    let mut slots: Vec<Option<T>> = items.into_iter().map(Some).collect();
    order(keys)
        .into_iter()
        .filter_map(|i| slots[i].take())
        .collect()
}

/// The positions of `keys` in ascending order, ties in their first order: a bottom-up merge
/// sort of indices, a few hundred bytes where the standard sorts cost kilobytes.
pub fn order(keys: Vec<(u64, String)>) -> Vec<usize> {
    let n = keys.len();
    let mut idx: Vec<usize> = (0..n).collect();
    let mut buf = idx.clone();
    let mut width = 1;
    while width < n {
        for start in (0..n).step_by(2 * width) {
            let mid = (start + width).min(n);
            let end = (start + 2 * width).min(n);
            let (mut i, mut j) = (start, mid);
            for slot in &mut buf[start..end] {
                // The left run wins ties: stable.
                let left = j >= end || (i < mid && keys[idx[i]] <= keys[idx[j]]);
                if left {
                    *slot = idx[i];
                    i += 1;
                } else {
                    *slot = idx[j];
                    j += 1;
                }
            }
        }
        std::mem::swap(&mut idx, &mut buf);
        width *= 2;
    }
    idx
}

/// An age that counts up every second: `base_s` seconds at `at`, plus the time since.
pub fn age(at: DateTime<Utc>, base_s: u64, suffix: &'static str) -> impl IntoView + use<> {
    let now = use_clock();
    move || {
        format!(
            "{}{suffix}",
            human_age(base_s + seconds_since(at, now.get()))
        )
    }
}

/// The reason of a failed element with its Agent Status Code.
pub fn reason_line(reason: Option<String>, status: Asc) -> impl IntoView {
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
pub fn checked(meta: SectionMeta) -> impl IntoView {
    meta.checked_at.map(|at| {
        view! {
            <small class=if meta.stale { "checked stale" } else { "checked" }>
                "checked " {age(at, 0, " ago")}
            </small>
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_is_a_stable_ascending_sort() {
        let keys: Vec<(u64, String)> = [(2, "b"), (0, "z"), (2, "a"), (0, "z"), (1, "m")]
            .into_iter()
            .map(|(r, n)| (r, n.to_string()))
            .collect();
        assert_eq!(order(keys), [1, 3, 4, 2, 0]);
        assert_eq!(order(Vec::new()), Vec::<usize>::new());
        // Longer than one merge width, in reverse: every pass runs.
        let many: Vec<(u64, String)> = (0..37).rev().map(|i| (i, String::new())).collect();
        assert_eq!(order(many), (0..37).rev().collect::<Vec<usize>>());
    }

    #[test]
    fn red_rows_come_first_then_amber_then_green_each_by_name() {
        let rows = vec![
            (Band::Green, "a"),
            (Band::Red, "z"),
            (Band::Amber, "m"),
            (Band::Red, "b"),
            (Band::Green, "0"),
        ];
        let sorted = red_first(rows, |(b, n)| (*b, n.to_string()));
        assert_eq!(
            sorted,
            [
                (Band::Red, "b"),
                (Band::Red, "z"),
                (Band::Amber, "m"),
                (Band::Green, "0"),
                (Band::Green, "a")
            ]
        );
    }

    #[test]
    fn uptime_reads_with_one_decimal_or_says_there_is_none() {
        assert_eq!(uptime_words(Some(97.94)), "24 h uptime 97.9 %");
        assert_eq!(uptime_words(Some(100.0)), "24 h uptime 100.0 %");
        assert_eq!(uptime_words(None), "24 h uptime: no samples yet");
    }
}

//! Systems: per host its source, RAM, disk, vault parity, services, tunnels, crons (up, late,
//! down; last success; period and grace) and its 24 h strip; then the backups' age and band.
//! Every check carries its own state and 24 h uptime; a failed one is red with its reason.

use fleetdash_model::{
    Backups, Band, CronCheck, CronState, NamedCheck, Probe, Snapshot, System, human_age,
};
use leptos::prelude::*;

use super::{age, badge, checked, field, reason_line, red_first, section_problem, strip};
use crate::clock::one_decimal;

pub fn systems_panel(snapshot: Snapshot) -> impl IntoView {
    let meta = snapshot.sections.systems.clone();
    let hosts = section_problem(&snapshot.systems, &meta).unwrap_or_else(|| {
        let hosts = snapshot.systems.value().cloned().unwrap_or_default();
        let hosts = red_first(hosts, |h| (h.band(), h.host.clone()));
        view! { <ul class="rows">{hosts.into_iter().map(host_row).collect_view()}</ul> }.into_any()
    });
    let backups_meta = snapshot.sections.backups.clone();
    let backups = section_problem(&snapshot.backups, &backups_meta).unwrap_or_else(|| {
        snapshot
            .backups
            .value()
            .cloned()
            .map(backups_view)
            .into_any()
    });
    view! {
        <section class="panel" aria-labelledby="systems-h" id="systems">
            <h2 id="systems-h">"Systems " {checked(meta)}</h2>
            {hosts}
            <h3>"Backups " {checked(backups_meta)}</h3>
            {backups}
        </section>
    }
}

fn gb(v: &f64) -> String {
    format!("{} GB", one_decimal(*v))
}

fn host_row(host: System) -> impl IntoView {
    let band = host.band();
    // Plain text with a class, one shape for every case: the page stays small.
    let (vault_class, vault) = match &host.vault_parity {
        Probe::Value(true) => ("", "in sync".to_string()),
        Probe::Value(false) => (
            "band-text red",
            format!(
                "OUT OF SYNC: {}",
                host.vault_reason.as_deref().unwrap_or("no reason given")
            ),
        ),
        Probe::Unknown => ("unknown", "not checked".into()),
        Probe::Error(r) => ("field-error", format!("error: {r}")),
    };
    let services = named(&host.services, "active", "inactive");
    let tunnels = named(&host.tunnels, "up", "down");
    let crons = host.crons.iter().map(cron_line).collect();
    let source = if host.source.is_empty() {
        String::new()
    } else {
        format!("via {}", host.source)
    };
    view! {
        <li class=format!("row {}", band.class())>
            <div class="row-head">
                {badge(band)}
                <strong class="name">{host.host.clone()}</strong>
                <span class="where">{source}</span>
                <small class="checked">"checked " {age(host.checked_at, 0, " ago")}</small>
            </div>
            {reason_line(host.reason.clone(), host.status.clone())}
            {strip(host.history.as_ref())}
            <dl class="facts">
                <div><dt>"RAM"</dt><dd>{field(&host.ram_used_gb, gb)}" / "{field(&host.ram_total_gb, gb)}</dd></div>
                <div><dt>"disk free"</dt><dd>{field(&host.disk_free_gb, gb)}</dd></div>
                <div><dt>"vault parity"</dt><dd class=vault_class>{vault}</dd></div>
            </dl>
            {checks("services", services)}
            {checks("tunnels", tunnels)}
            {checks("crons", crons)}
        </li>
    }
}

/// One check of a host as one line: its band's class, then icon, name, state in words and 24 h
/// uptime; and why it is not ok (empty when it is).
struct Line {
    /// `check <band>`, or `empty`.
    class: &'static str,
    /// The band's icon (hidden from screen readers: the words say it).
    icon: &'static str,
    text: String,
    why: String,
}

fn line(band: Band, name: &str, words: &str, pct: Option<f64>, why: Option<String>) -> Line {
    let pct = pct
        .map(|p| format!(" · 24 h {} %", one_decimal(p)))
        .unwrap_or_default();
    Line {
        class: match band {
            Band::Green => "check green",
            Band::Amber => "check amber",
            Band::Red => "check red",
        },
        icon: band.icon(),
        text: format!(" {name}: {words}{pct}"),
        // A reason that only repeats the state or the error is said once.
        why: why
            .filter(|w| !words.ends_with(w.as_str()))
            .unwrap_or_default(),
    }
}

fn named(list: &[NamedCheck], yes: &str, no: &str) -> Vec<Line> {
    list.iter()
        .map(|c| {
            let ok = c.ok == Probe::Value(true) && !c.stale;
            let words = match &c.ok {
                Probe::Value(true) => yes.to_string(),
                // A unit's own state word ("failed") says more than "inactive".
                Probe::Value(false) => match &c.reason {
                    Some(r) if !r.contains(' ') => r.clone(),
                    _ => no.to_string(),
                },
                Probe::Unknown => "unknown".into(),
                Probe::Error(r) => format!("error: {r}"),
            };
            let band = if ok { Band::Green } else { Band::Red };
            let why = c.reason.clone().filter(|_| !ok);
            line(band, &c.name, &words, c.uptime_24h_pct, why)
        })
        .collect()
}

fn cron_line(c: &CronCheck) -> Line {
    let state = match c.state {
        CronState::Up => "up",
        CronState::Late => "late",
        CronState::Down => "down",
    };
    let last = match &c.last_ok_s {
        Probe::Value(s) => format!("{} ago", human_age(*s)),
        Probe::Unknown => "unknown".into(),
        Probe::Error(r) => format!("error: {r}"),
    };
    let band = if c.stale { Band::Red } else { c.state.band() };
    let words = format!(
        "{state} · last ok {last} · every {}, grace {}",
        human_age(c.period_s),
        human_age(c.grace_s)
    );
    line(band, &c.name, &words, c.uptime_24h_pct, c.reason.clone())
}

/// One list shape for every case; an empty list says so in its one item.
fn checks(title: &'static str, mut list: Vec<Line>) -> impl IntoView {
    if list.is_empty() {
        list.push(Line {
            class: "empty",
            icon: "",
            text: "none configured".into(),
            why: String::new(),
        });
    }
    let items = list
        .into_iter()
        .map(|l| view! { <li class=l.class><span aria-hidden="true">{l.icon}</span>{l.text}<small class="why">{l.why}</small></li> })
        .collect_view();
    view! { <div class="checks"><h4>{title}</h4><ul>{items}</ul></div> }
}

fn backups_view(b: Backups) -> impl IntoView {
    let band = b.band();
    let name = if b.name.is_empty() {
        "backup".to_string()
    } else {
        b.name.clone()
    };
    view! {
        <div class=format!("row {}", band.class())>
            <div class="row-head">
                {badge(band)}
                <strong class="name">{name}</strong>
            </div>
            {reason_line(b.reason.clone(), b.status.clone())}
            <dl class="facts">
                <div><dt>"latest"</dt><dd>{field(&b.gdrive_latest, |t| crate::clock::utc_minute(*t))}</dd></div>
                <div><dt>"age"</dt><dd>{field(&b.age_h, |h| format!("{} h", one_decimal(*h)))}</dd></div>
            </dl>
        </div>
    }
}

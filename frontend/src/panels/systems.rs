//! Systems: per host RAM, disk, services, tunnels, crons' last run and vault parity; then the
//! backups' age. Every check carries its own state; a failed one is red with its reason.

use fleetdash_model::{Backups, CronCheck, NamedCheck, Probe, Snapshot, System, human_age};
use leptos::prelude::*;

use super::{Age, BandBadge, Checked, Reason, field, section_problem};

#[component]
pub fn SystemsPanel(snapshot: Snapshot) -> impl IntoView {
    let meta = snapshot.sections.systems.clone();
    let hosts = section_problem(&snapshot.systems, &meta).unwrap_or_else(|| {
        let mut hosts = snapshot.systems.value().cloned().unwrap_or_default();
        hosts.sort_by(|a, b| b.band().cmp(&a.band()).then_with(|| a.host.cmp(&b.host)));
        view! { <ul class="rows">{hosts.into_iter().map(|h| view! { <HostRow host=h/> }).collect_view()}</ul> }
            .into_any()
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
            <h2 id="systems-h">"Systems " <Checked meta=meta/></h2>
            {hosts}
            <h3>"Backups " <Checked meta=backups_meta/></h3>
            {backups}
        </section>
    }
}

fn gb(v: &f64) -> String {
    format!("{} GB", crate::clock::one_decimal(*v))
}

#[component]
fn HostRow(host: System) -> impl IntoView {
    let band = host.band();
    view! {
        <li class=format!("row {}", band.class())>
            <div class="row-head">
                <BandBadge band=band/>
                <strong class="name">{host.host.clone()}</strong>
                <small class="checked">"checked " <Age at=host.checked_at suffix=" ago"/></small>
            </div>
            <Reason reason=host.reason.clone() status=host.status.clone()/>
            <dl class="facts">
                <div><dt>"RAM"</dt><dd>{field(&host.ram_used_gb, gb)}" / "{field(&host.ram_total_gb, gb)}</dd></div>
                <div><dt>"disk free"</dt><dd>{field(&host.disk_free_gb, gb)}</dd></div>
                <div><dt>"vault parity"</dt><dd>{field(&host.vault_parity, |p| if *p { "in sync".into() } else { "OUT OF SYNC".into() })}</dd></div>
            </dl>
            {checks("services", &host.services, "active", "inactive")}
            {checks("tunnels", &host.tunnels, "up", "down")}
            {crons(&host.crons)}
        </li>
    }
}

fn checks(
    title: &'static str,
    list: &[NamedCheck],
    yes: &'static str,
    no: &'static str,
) -> AnyView {
    let items = list
        .iter()
        .map(|c| {
            let ok = matches!(c.ok, Probe::Value(true)) && !c.stale;
            let state = field(&c.ok, move |v| if *v { yes.into() } else { no.into() });
            view! {
                <li class=if ok { "check green" } else { "check red" }>
                    <span aria-hidden="true">{if ok { "✔ " } else { "✖ " }}</span>{c.name.clone()}": "{state}
                </li>
            }
        })
        .collect_view();
    if list.is_empty() {
        return view! { <div class="checks"><h4>{title}</h4><p class="empty">"none configured"</p></div> }
            .into_any();
    }
    view! { <div class="checks"><h4>{title}</h4><ul>{items}</ul></div> }.into_any()
}

fn crons(list: &[CronCheck]) -> AnyView {
    let items = list
        .iter()
        .map(|c| {
            let ok = !c.last_ok_s.is_error() && !c.stale;
            let last = field(&c.last_ok_s, |s| format!("{} ago", human_age(*s)));
            view! {
                <li class=if ok { "check green" } else { "check red" }>
                    <span aria-hidden="true">{if ok { "✔ " } else { "✖ " }}</span>{c.name.clone()}": last ok "{last}
                </li>
            }
        })
        .collect_view();
    if list.is_empty() {
        return view! { <div class="checks"><h4>"crons"</h4><p class="empty">"none configured"</p></div> }
            .into_any();
    }
    view! { <div class="checks"><h4>"crons"</h4><ul>{items}</ul></div> }.into_any()
}

fn backups_view(b: Backups) -> impl IntoView {
    let class = if b.stale { "row red" } else { "row green" };
    view! {
        <div class=class>
            <dl class="facts">
                <div><dt>"latest"</dt><dd>{field(&b.gdrive_latest, |t| crate::clock::utc_minute(*t))}</dd></div>
                <div><dt>"age"</dt><dd>{field(&b.age_h, |h| format!("{} h", crate::clock::one_decimal(*h)))}</dd></div>
            </dl>
        </div>
    }
}

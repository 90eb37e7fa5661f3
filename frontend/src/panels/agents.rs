//! Agents: one row per agent, red first: up/down, last exchange with its band, skills (empty is
//! loud), lane, model, usage window, heartbeat, the reason and code of any failure, and the
//! agent's 24 h up/down strip with its uptime.

use fleetdash_model::{Agent, Band, Probe, Snapshot};
use leptos::prelude::*;

use super::{age, badge, checked, field, reason_line, red_first, section_problem, strip};

pub fn agents_panel(snapshot: Snapshot) -> impl IntoView {
    let meta = snapshot.sections.agents.clone();
    let body = section_problem(&snapshot.agents, &meta).unwrap_or_else(|| {
        let rows = snapshot.agents.value().cloned().unwrap_or_default();
        let rows = red_first(rows, |a| (a.band, a.name.clone()));
        if rows.is_empty() {
            return view! { <p class="section-error">"The registry lists no agents."</p> }
                .into_any();
        }
        view! { <ul class="rows">{rows.into_iter().map(agent_row).collect_view()}</ul> }.into_any()
    });
    view! {
        <section class="panel" aria-labelledby="agents-h" id="agents">
            <h2 id="agents-h">"Agents " {checked(meta)}</h2>
            {body}
        </section>
    }
}

fn agent_row(agent: Agent) -> impl IntoView {
    let at = agent.checked_at;
    let where_ = [agent.plane.clone(), agent.lane.value().cloned()]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" · ");
    let exchange = match agent.last_exchange_s {
        Probe::Value(age_s) => view! {
            <span class=format!("band-text {}", agent.exchange_band.class())>
                {age(at, age_s, " ago")}" ("{agent.exchange_band.word()}")"
            </span>
        }
        .into_any(),
        ref other => field(other, |_| String::new()),
    };
    let skills = match agent.skills_count {
        Probe::Value(0) => {
            view! { <span class="band-text red">"0: the card lists no skills"</span> }.into_any()
        }
        ref other => field(other, |n| n.to_string()),
    };
    let window = field(&agent.window, |w| match (&w.percent, &w.status) {
        (Probe::Value(p), Probe::Value(s)) => format!("{} % ({s})", crate::clock::whole(*p)),
        (Probe::Value(p), _) => format!("{} %", crate::clock::whole(*p)),
        (_, Probe::Value(s)) => s.clone(),
        _ => "unknown".into(),
    });
    let heartbeat = field(&agent.heartbeat, |h| {
        format!("{} · {} ms", h.dialect, h.latency_ms)
    });
    let model = field(&agent.model, Clone::clone);
    view! {
        <li class=format!("row {}", agent.band.class()) data-agent=agent.name.clone()>
            <div class="row-head">
                {badge(agent.band)}
                <strong class="name">{agent.name.clone()}</strong>
                <span class=if agent.up { "updown up" } else { "updown down" }>{if agent.up { "up" } else { "down" }}</span>
                <span class="where">{where_}</span>
            </div>
            {(agent.band != Band::Green).then(|| view! { {reason_line(agent.reason.clone(), agent.status.clone())} })}
            {strip(agent.history.as_ref())}
            <dl class="facts">
                <div><dt>"last exchange"</dt><dd>{exchange}</dd></div>
                <div><dt>"skills"</dt><dd>{skills}</dd></div>
                <div><dt>"model"</dt><dd>{model}</dd></div>
                <div><dt>"window"</dt><dd>{window}</dd></div>
                <div><dt>"heartbeat"</dt><dd>{heartbeat}</dd></div>
            </dl>
        </li>
    }
}

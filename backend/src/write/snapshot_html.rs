//! `snapshot.html`: the same glance as the page, rendered here (askama, `templates/`) so it works
//! with JavaScript off or the WebAssembly failing. The page links to it from `<noscript>` and
//! from its boot note.
//!
//! It is rendered from the snapshot *after* the redaction gate (and passes the gate again as a
//! whole), and like the page it shows only fields of the schema. Every element is listed; a
//! failed one is red with its reason; red sorts first.

use askama::Template;
use chrono::{DateTime, Utc};
use fleetdash_model::{Asc, Band, Probe, SectionMeta, Snapshot, human_age, seconds_since};

pub const FILE_NAME: &str = "snapshot.html";

/// The static page reloads itself this often; the collector's cadence is minutes.
const REFRESH_SECONDS: u64 = 60;

#[derive(Template)]
#[template(path = "snapshot.html")]
struct Page {
    refresh_s: u64,
    verdict: String,
    verdict_class: &'static str,
    verdict_icon: &'static str,
    staleness: Option<String>,
    generated: String,
    sections: Vec<SectionView>,
}

struct SectionView {
    id: &'static str,
    title: &'static str,
    checked: Option<String>,
    problem: Option<Problem>,
    rows: Vec<Row>,
}

struct Problem {
    class: &'static str,
    text: String,
}

struct Row {
    band: &'static str,
    badge: String,
    title: String,
    subtitle: String,
    reason: Option<String>,
    facts: String,
}

impl Row {
    fn new(band: Band, title: String, subtitle: String, facts: Vec<String>) -> Row {
        Row {
            band: band.class(),
            badge: format!("{} {}", band.icon(), band.word()),
            title,
            subtitle,
            reason: None,
            facts: facts.join(" · "),
        }
    }

    fn with_reason(mut self, reason: Option<&str>, status: &Asc) -> Row {
        self.reason = reason.map(|r| format!("{r} (ASC-{} {})", status.code, status.name));
        self
    }
}

/// The page for `snapshot`, judged as of its own `generated_at`.
pub fn render(snapshot: &Snapshot) -> String {
    let verdict = snapshot.verdict();
    let staleness = snapshot.staleness(snapshot.generated_at);
    // Like the page: a snapshot that cannot be trusted never reads green.
    let (band, sentence) = match &staleness {
        Some(_) => (
            Band::Red,
            format!("stale · last known: {}", verdict.sentence()),
        ),
        None => (verdict.worst(), verdict.sentence()),
    };
    let page = Page {
        refresh_s: REFRESH_SECONDS,
        verdict: sentence,
        verdict_class: band.class(),
        verdict_icon: band.icon(),
        staleness,
        generated: snapshot
            .generated_at
            .format("%Y-%m-%d %H:%M:%S UTC")
            .to_string(),
        sections: vec![
            agents(snapshot),
            live_tasks(snapshot),
            board(snapshot),
            systems(snapshot),
            backups(snapshot),
        ],
    };
    page.render()
        .unwrap_or_else(|e| format!("<!doctype html><title>fleetdash</title><p>The snapshot page could not be rendered: {e}</p>"))
}

fn text<T>(probe: &Probe<T>, show: impl FnOnce(&T) -> String) -> String {
    match probe {
        Probe::Value(v) => show(v),
        Probe::Unknown => "unknown".into(),
        Probe::Error(reason) => format!("error: {reason}"),
    }
}

fn checked(meta: &SectionMeta, generated: DateTime<Utc>) -> Option<String> {
    meta.checked_at
        .map(|at| format!("{} before writing", human_age(seconds_since(at, generated))))
}

/// The section's own failure, if it has no elements to show.
fn problem<T>(probe: &Probe<T>, meta: &SectionMeta) -> Option<Problem> {
    let Probe::Error(reason) = probe else {
        return None;
    };
    Some(if meta.configured {
        Problem {
            class: "red",
            text: format!("{} error: {reason}", Band::Red.icon()),
        }
    } else {
        Problem {
            class: "",
            text: "Not configured: no collector for this section.".into(),
        }
    })
}

fn section(
    id: &'static str,
    title: &'static str,
    meta: &SectionMeta,
    snapshot: &Snapshot,
) -> SectionView {
    SectionView {
        id,
        title,
        checked: checked(meta, snapshot.generated_at),
        problem: None,
        rows: Vec::new(),
    }
}

fn agents(s: &Snapshot) -> SectionView {
    let meta = &s.sections.agents;
    let mut view = section("agents", "Agents", meta, s);
    view.problem = problem(&s.agents, meta);
    let mut rows = s.agents.value().cloned().unwrap_or_default();
    rows.sort_by(|a, b| b.band.cmp(&a.band).then_with(|| a.name.cmp(&b.name)));
    view.rows = rows
        .iter()
        .map(|a| {
            let place = [a.plane.clone(), a.lane.value().cloned()]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(" · ");
            let facts = vec![
                format!(
                    "last exchange {}",
                    text(&a.last_exchange_s, |s| format!(
                        "{} ago ({})",
                        human_age(*s),
                        a.exchange_band.word()
                    ))
                ),
                format!(
                    "skills {}",
                    text(&a.skills_count, |n| if *n == 0 {
                        "0: the card lists no skills".into()
                    } else {
                        n.to_string()
                    })
                ),
                format!("model {}", text(&a.model, Clone::clone)),
                format!(
                    "window {}",
                    text(&a.window, |w| text(&w.percent, |p| format!("{p:.0} %")))
                ),
                format!(
                    "heartbeat {}",
                    text(&a.heartbeat, |h| format!(
                        "{} {} ms",
                        h.dialect, h.latency_ms
                    ))
                ),
            ];
            let updown = if a.up { "up" } else { "down" };
            Row::new(a.band, a.name.clone(), format!("{updown} · {place}"), facts).with_reason(
                a.reason.as_deref().filter(|_| a.band != Band::Green),
                &a.status,
            )
        })
        .collect();
    view
}

fn live_tasks(s: &Snapshot) -> SectionView {
    let meta = &s.sections.live_tasks;
    let mut view = section("live", "Live tasks", meta, s);
    view.problem = problem(&s.tasks.live, meta);
    let mut tasks = s.tasks.live.value().cloned().unwrap_or_default();
    tasks.sort_by_key(|t| (!t.stuck, std::cmp::Reverse(t.age_s)));
    view.rows = tasks
        .iter()
        .map(|t| {
            let mut row = Row::new(
                t.band(),
                t.id.clone(),
                t.agent.clone(),
                vec![
                    format!("state {}", text(&t.state, Clone::clone)),
                    format!(
                        "age {} (stuck at {})",
                        human_age(t.age_s),
                        human_age(s.rules.no_reply_s)
                    ),
                ],
            )
            .with_reason(t.reason.as_deref(), &t.status);
            if t.stuck {
                row.badge = format!("{} STUCK", Band::Red.icon());
            }
            row
        })
        .collect();
    view
}

fn board(s: &Snapshot) -> SectionView {
    let meta = &s.sections.board;
    let mut view = section("board", "Board", meta, s);
    view.problem = problem(&s.tasks.board, meta);
    if let Probe::Value(board) = &s.tasks.board {
        view.rows = board
            .columns
            .iter()
            .flat_map(|column| board.cards.iter().filter(move |c| &c.status == column))
            .map(|c| {
                let band = if c.stale { Band::Red } else { Band::Green };
                let owner = c.assignee.clone().unwrap_or_else(|| "unassigned".into());
                Row::new(
                    band,
                    c.title.clone(),
                    format!("{} · {owner}", c.status),
                    vec![format!("{} · {}", c.board, c.id)],
                )
            })
            .collect();
    }
    view
}

fn systems(s: &Snapshot) -> SectionView {
    let meta = &s.sections.systems;
    let mut view = section("systems", "Systems", meta, s);
    view.problem = problem(&s.systems, meta);
    let mut hosts = s.systems.value().cloned().unwrap_or_default();
    hosts.sort_by(|a, b| b.band().cmp(&a.band()).then_with(|| a.host.cmp(&b.host)));
    view.rows = hosts
        .iter()
        .map(|h| {
            let gb = |v: &f64| format!("{v:.1} GB");
            let checks = |list: &[fleetdash_model::NamedCheck]| {
                list.iter()
                    .map(|c| {
                        format!(
                            "{} {}",
                            c.name,
                            text(&c.ok, |ok| if *ok { "ok".into() } else { "FAILED".into() })
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let facts = vec![
                format!(
                    "RAM {} / {}",
                    text(&h.ram_used_gb, gb),
                    text(&h.ram_total_gb, gb)
                ),
                format!("disk free {}", text(&h.disk_free_gb, gb)),
                format!("services: {}", checks(&h.services)),
                format!("tunnels: {}", checks(&h.tunnels)),
                format!(
                    "crons: {}",
                    h.crons
                        .iter()
                        .map(|c| format!(
                            "{} {}",
                            c.name,
                            text(&c.last_ok_s, |s| format!("ok {} ago", human_age(*s)))
                        ))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                format!(
                    "vault parity {}",
                    text(&h.vault_parity, |p| if *p {
                        "in sync".into()
                    } else {
                        "OUT OF SYNC".into()
                    })
                ),
            ];
            Row::new(h.band(), h.host.clone(), String::new(), facts)
                .with_reason(h.reason.as_deref(), &h.status)
        })
        .collect();
    view
}

fn backups(s: &Snapshot) -> SectionView {
    let meta = &s.sections.backups;
    let mut view = section("backups", "Backups", meta, s);
    view.problem = problem(&s.backups, meta);
    if let Probe::Value(b) = &s.backups {
        let band = if b.stale { Band::Red } else { Band::Green };
        view.rows = vec![Row::new(
            band,
            "latest backup".into(),
            String::new(),
            vec![
                text(&b.gdrive_latest, |t| {
                    t.format("%Y-%m-%d %H:%M UTC").to_string()
                }),
                format!("age {}", text(&b.age_h, |h| format!("{h:.1} h"))),
            ],
        )];
    }
    view
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleetdash_model::{Agent, LiveTask, RulesView};

    fn snapshot() -> Snapshot {
        let now = Utc::now();
        let mut s = Snapshot::empty(
            now,
            RulesView {
                no_reply_s: 300,
                exchange_green_below_s: 1800,
                exchange_amber_below_s: 21600,
                snapshot_stale_after_s: 600,
            },
        );
        s.stale = false;
        s.sections.agents.configured = true;
        s.sections.agents.checked_at = Some(now);
        s.sections.tasks.configured = true;
        s.sections.board.configured = true;
        s.sections.live_tasks.configured = true;
        let agent = |name: &str, band: Band, reason: Option<&str>| Agent {
            name: name.into(),
            endpoint: "http://127.0.0.1:1/".into(),
            plane: Some("heart".into()),
            up: band != Band::Red,
            last_exchange_s: Probe::Value(90),
            exchange_band: Band::Green,
            skills_count: Probe::Value(3),
            lane: Probe::Value("hub".into()),
            model: Probe::Unknown,
            window: Probe::Unknown,
            heartbeat: Probe::error("heartbeat: connection refused"),
            band,
            status: if band == Band::Red {
                Asc::DEPENDENCY_UNAVAILABLE
            } else {
                Asc::SUCCESS
            },
            reason: reason.map(Into::into),
            audit_skipped_lines: 0,
            checked_at: now,
            stale: band == Band::Red,
        };
        s.agents = Probe::Value(vec![
            agent("aaa-green", Band::Green, None),
            agent("zzz-down", Band::Red, Some("down: connection refused")),
        ]);
        s.tasks.live = Probe::Value(vec![LiveTask {
            id: "t_stuck01".into(),
            agent: "min".into(),
            state: Probe::Value("TASK_STATE_WORKING".into()),
            age_s: 423,
            stuck: true,
            status: Asc::TIMEOUT,
            reason: Some("no reply for 423 s (>= 300 s)".into()),
            checked_at: now,
            stale: false,
        }]);
        s
    }

    #[test]
    fn red_rows_come_first_with_their_reason_and_code() {
        let html = render(&snapshot());
        let down = html.find("zzz-down").unwrap();
        let green = html.find("aaa-green").unwrap();
        assert!(down < green, "the red row must sort first");
        assert!(
            html.contains("down: connection refused (ASC-5003 DEPENDENCY_UNAVAILABLE)"),
            "{html}"
        );
        // The down agent, the stuck task, and the configured board that was never collected.
        assert!(html.contains("3 red · 1 green"), "{html}");
        assert!(html.contains("✖ STUCK"), "{html}");
        assert!(
            html.contains("no reply for 423 s (&#62;= 300 s)"),
            "escaped: {html}"
        );
    }

    #[test]
    fn sections_without_data_say_whether_they_are_configured() {
        let html = render(&snapshot());
        assert!(html.contains("Not configured: no collector for this section."));
        let mut s = snapshot();
        s.sections.systems.configured = true;
        s.systems = Probe::error("not collected");
        assert!(render(&s).contains("✖ error: not collected"));
    }

    #[test]
    fn a_stale_snapshot_carries_the_banner_and_text_is_escaped() {
        let mut s = snapshot();
        s.stale = true;
        s.stale_reasons = vec!["agents: last collected 12 min ago (>= 10 min)".into()];
        if let Probe::Value(rows) = &mut s.agents {
            rows[0].name = "<script>alert(1)</script>".into();
        }
        let html = render(&s);
        assert!(html.contains(
            "role=\"alert\">Do not trust this page yet: agents: last collected 12 min ago"
        ));
        assert!(
            html.contains("stale · last known: "),
            "never green while stale: {html}"
        );
        assert!(!html.contains("<script>alert(1)"), "{html}");
        assert!(html.contains("&#60;script&#62;"), "{html}");
    }
}

//! `snapshot.html`: the same glance as the page, rendered here (askama, `templates/`) so it works
//! with JavaScript off or the WebAssembly failing. The page links to it from `<noscript>` and
//! from its boot note.
//!
//! It is rendered from the snapshot *after* the redaction gate (and passes the gate again as a
//! whole), and like the page it shows only fields of the schema. Every element is listed; a
//! failed one is red with its reason; red sorts first.

use askama::Template;
use chrono::{DateTime, Utc};
use fleetdash_model::{
    Asc, Band, CronCheck, CronState, History, NamedCheck, Probe, SectionMeta, Snapshot, System,
    human_age, seconds_since,
};

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
    transitions: TransitionsView,
}

/// The last 24 h of band changes, newest first (a self-contained section).
struct TransitionsView {
    lines: Vec<TransitionLine>,
    /// Set when the snapshot carries as many as it may: older ones are only in the log.
    capped: Option<String>,
}

/// "14:02 UTC (2 h ago) ✖ min (agent): ok → fail · down: connection refused".
struct TransitionLine {
    class: &'static str,
    icon: &'static str,
    when: String,
    what: String,
    change: String,
    reason: Option<String>,
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
    /// Services, tunnels, crons: one line each, every check with its own state.
    checks: Vec<CheckLine>,
    history: Option<StripView>,
}

/// "services: a active · b inactive: why", or "none configured".
struct CheckLine {
    title: &'static str,
    items: Vec<Item>,
}

/// One check: its band's class (colour), icon and words (never colour alone).
struct Item {
    class: &'static str,
    icon: &'static str,
    text: String,
    /// Why it is not ok, when it is not.
    reason: Option<String>,
}

/// The last 24 hours: the uptime in words, then one character per slot, oldest first, in runs
/// of the same character (one element per run keeps the page small).
struct StripView {
    label: String,
    runs: Vec<(&'static str, String)>,
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
            checks: Vec::new(),
            history: None,
        }
    }

    fn with_reason(mut self, reason: Option<&str>, status: &Asc) -> Row {
        self.reason = reason.map(|r| format!("{r} (ASC-{} {})", status.code, status.name));
        self
    }
}

/// "24 h uptime 97.9 %", or "24 h uptime: no samples yet".
fn uptime_words(pct: Option<f64>) -> String {
    match pct {
        Some(p) => format!("24 h uptime {p:.1} %"),
        None => "24 h uptime: no samples yet".into(),
    }
}

fn strip(history: Option<&History>) -> Option<StripView> {
    let h = history?;
    let mut runs: Vec<(&'static str, String)> = Vec::new();
    for c in h.strip.chars() {
        let class = match c {
            'u' => "s-u",
            'd' => "s-d",
            'p' => "s-p",
            _ => "s-n",
        };
        match runs.last_mut() {
            Some((last, text)) if *last == class => text.push(c),
            _ => runs.push((class, c.to_string())),
        }
    }
    Some(StripView {
        label: uptime_words(h.uptime_24h_pct),
        runs,
    })
}

fn item(band: Band, text: String, reason: Option<String>) -> Item {
    Item {
        class: band.class(),
        icon: band.icon(),
        text,
        reason,
    }
}

/// " · 24 h 99.5 %" when the check has samples.
fn uptime_suffix(pct: Option<f64>) -> String {
    pct.map(|p| format!(" · 24 h {p:.1} %")).unwrap_or_default()
}

fn named_checks(
    title: &'static str,
    list: &[NamedCheck],
    yes: &'static str,
    no: &'static str,
) -> CheckLine {
    CheckLine {
        title,
        items: list
            .iter()
            .map(|c| {
                let ok = c.ok == Probe::Value(true) && !c.stale;
                let state = text(&c.ok, |v| if *v { yes.into() } else { no.into() });
                let band = if ok { Band::Green } else { Band::Red };
                let reason = if ok {
                    None
                } else {
                    c.reason.clone().filter(|r| !state.ends_with(r.as_str()))
                };
                item(
                    band,
                    format!("{} {state}{}", c.name, uptime_suffix(c.uptime_24h_pct)),
                    reason,
                )
            })
            .collect(),
    }
}

fn cron_word(state: CronState) -> &'static str {
    match state {
        CronState::Up => "up",
        CronState::Late => "late",
        CronState::Down => "down",
    }
}

fn cron_checks(list: &[CronCheck]) -> CheckLine {
    CheckLine {
        title: "crons",
        items: list
            .iter()
            .map(|c| {
                let band = if c.stale { Band::Red } else { c.state.band() };
                let last = text(&c.last_ok_s, |s| format!("{} ago", human_age(*s)));
                item(
                    band,
                    format!(
                        "{} {} · last ok {last} · every {}, grace {}{}",
                        c.name,
                        cron_word(c.state),
                        human_age(c.period_s),
                        human_age(c.grace_s),
                        uptime_suffix(c.uptime_24h_pct)
                    ),
                    c.reason
                        .clone()
                        .filter(|_| c.state != CronState::Up || c.stale),
                )
            })
            .collect(),
    }
}

fn vault_words(h: &System) -> String {
    match &h.vault_parity {
        Probe::Value(true) => "in sync".into(),
        Probe::Value(false) => format!(
            "OUT OF SYNC: {}",
            h.vault_reason.as_deref().unwrap_or("no reason given")
        ),
        Probe::Unknown => "not checked".into(),
        Probe::Error(reason) => format!("error: {reason}"),
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
        transitions: transitions(snapshot),
    };
    page.render()
        .unwrap_or_else(|e| format!("<!doctype html><title>fleetdash</title><p>The snapshot page could not be rendered: {e}</p>"))
}

/// The band changes the snapshot carries that are at most [`transitions::RECENT_S`] older than
/// it, newest first, as the snapshot orders them.
fn transitions(s: &Snapshot) -> TransitionsView {
    let from = s.generated_at - chrono::Duration::seconds(super::transitions::RECENT_S);
    let lines: Vec<TransitionLine> = s
        .transitions
        .iter()
        .filter(|t| t.at >= from)
        .map(|t| {
            let was = t.from.map_or("new", Band::word);
            TransitionLine {
                class: t.to.class(),
                icon: t.to.icon(),
                when: format!(
                    "{} ({} before writing)",
                    t.at.format("%H:%M UTC"),
                    human_age(seconds_since(t.at, s.generated_at))
                ),
                what: format!("{} ({})", t.name, t.kind),
                change: format!("{was} → {}", t.to.word()),
                reason: t.reason.clone(),
            }
        })
        .collect();
    let capped = (s.transitions.len() >= super::transitions::RECENT_MAX).then(|| {
        format!(
            "The newest {} only; the collector's transitions log holds more.",
            super::transitions::RECENT_MAX
        )
    });
    TransitionsView { lines, capped }
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
            let mut row = Row::new(a.band, a.name.clone(), format!("{updown} · {place}"), facts)
                .with_reason(
                    a.reason.as_deref().filter(|_| a.band != Band::Green),
                    &a.status,
                );
            row.history = strip(a.history.as_ref());
            row
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
            let facts = vec![
                format!(
                    "RAM {} / {}",
                    text(&h.ram_used_gb, gb),
                    text(&h.ram_total_gb, gb)
                ),
                format!("disk free {}", text(&h.disk_free_gb, gb)),
                format!("vault parity {}", vault_words(h)),
            ];
            let subtitle = if h.source.is_empty() {
                String::new()
            } else {
                format!("via {}", h.source)
            };
            let mut row = Row::new(h.band(), h.host.clone(), subtitle, facts)
                .with_reason(h.reason.as_deref(), &h.status);
            row.checks = vec![
                named_checks("services", &h.services, "active", "inactive"),
                named_checks("tunnels", &h.tunnels, "up", "down"),
                cron_checks(&h.crons),
            ];
            row.history = strip(h.history.as_ref());
            row
        })
        .collect();
    view
}

fn backups(s: &Snapshot) -> SectionView {
    let meta = &s.sections.backups;
    let mut view = section("backups", "Backups", meta, s);
    view.problem = problem(&s.backups, meta);
    if let Probe::Value(b) = &s.backups {
        let name = if b.name.is_empty() {
            "backup".to_string()
        } else {
            b.name.clone()
        };
        view.rows = vec![
            Row::new(
                b.band(),
                name,
                String::new(),
                vec![
                    format!(
                        "latest {}",
                        text(&b.gdrive_latest, |t| {
                            t.format("%Y-%m-%d %H:%M UTC").to_string()
                        })
                    ),
                    format!("age {}", text(&b.age_h, |h| format!("{h:.1} h"))),
                    format!(
                        "amber from {}, red from {}",
                        human_age(s.rules.backup_amber_after_s),
                        human_age(s.rules.backup_red_after_s)
                    ),
                ],
            )
            .with_reason(b.reason.as_deref(), &b.status),
        ];
    }
    view
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleetdash_model::{Agent, Backups, LiveTask};

    fn snapshot() -> Snapshot {
        let now = Utc::now();
        let mut s = Snapshot::empty(now, crate::config::fleet_rules());
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
            history: None,
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

    fn history(strip: &str, pct: f64) -> History {
        History {
            uptime_24h_pct: Some(pct),
            strip: strip.into(),
            slot_s: 1800,
            samples: 700,
            since: None,
        }
    }

    /// A red host (a down service, a tunnel that timed out, a late cron, a vault out of sync)
    /// with its strip, and an amber backup with its reason.
    fn with_host_and_backup() -> Snapshot {
        let mut s = snapshot();
        let now = s.generated_at;
        s.sections.systems.configured = true;
        s.sections.systems.checked_at = Some(now);
        s.sections.backups.configured = true;
        s.sections.backups.checked_at = Some(now);
        let check = |name: &str, ok: Probe<bool>, reason: Option<&str>, pct| NamedCheck {
            name: name.into(),
            ok,
            reason: reason.map(Into::into),
            uptime_24h_pct: pct,
            checked_at: now,
            stale: false,
        };
        let cron = |name: &str, state, last_ok_s, reason: Option<&str>| CronCheck {
            name: name.into(),
            state,
            last_ok_s: Probe::Value(last_ok_s),
            period_s: 3600,
            grace_s: 600,
            reason: reason.map(Into::into),
            uptime_24h_pct: Some(100.0),
            checked_at: now,
            stale: false,
        };
        s.systems = Probe::Value(vec![System {
            host: "db1".into(),
            source: "ssh".into(),
            ram_used_gb: Probe::Value(1.25),
            ram_total_gb: Probe::Value(8.0),
            disk_free_gb: Probe::error("df: permission denied"),
            services: vec![
                check("nginx", Probe::Value(true), None, Some(99.5)),
                check(
                    "postgres",
                    Probe::Value(false),
                    Some("inactive"),
                    Some(50.0),
                ),
            ],
            tunnels: vec![check(
                "pg-tunnel",
                Probe::error("no answer within 2 s"),
                Some("no answer within 2 s"),
                None,
            )],
            crons: vec![
                cron(
                    "nightly-dump",
                    CronState::Late,
                    3900,
                    Some("5 min late: last success 1 h 5 min ago"),
                ),
                cron("rotate", CronState::Up, 60, None),
            ],
            vault_parity: Probe::Value(false),
            vault_reason: Some("3 uncommitted changes".into()),
            band: Band::Red,
            status: Asc::DEPENDENCY_UNAVAILABLE,
            reason: Some("service postgres: inactive".into()),
            history: Some(history(&format!("{}dp.", "u".repeat(45)), 97.9)),
            checked_at: now,
            stale: false,
        }]);
        s.backups = Probe::Value(Backups {
            name: "gdrive".into(),
            gdrive_latest: Probe::Value(now - chrono::Duration::hours(30)),
            age_h: Probe::Value(30.0),
            band: Band::Amber,
            status: Asc::SUCCESS_WITH_WARNINGS,
            reason: Some("latest backup is 30 h old".into()),
            checked_at: now,
            stale: false,
        });
        s
    }

    #[test]
    fn hosts_show_every_check_with_its_state_reason_and_uptime() {
        let html = render(&with_host_and_backup());
        for want in [
            "<strong>db1</strong> <small>via ssh</small>",
            "service postgres: inactive (ASC-5003 DEPENDENCY_UNAVAILABLE)",
            "RAM 1.2 GB / 8.0 GB",
            "disk free error: df: permission denied",
            "vault parity OUT OF SYNC: 3 uncommitted changes",
            "nginx active · 24 h 99.5 %",
            "<span class=\"red\"><span aria-hidden=\"true\">✖ </span>postgres inactive · 24 h 50.0 %</span>",
            "pg-tunnel error: no answer within 2 s</span>",
            "<span class=\"amber\"><span aria-hidden=\"true\">▲ </span>nightly-dump late · last ok 1 h 5 min ago · every 1 h, grace 10 min · 24 h 100.0 %<span class=\"why\">5 min late: last success 1 h 5 min ago</span>",
            "rotate up · last ok 1 min ago",
            "24 h uptime 97.9 % <span class=\"strip\" aria-hidden=\"true\">",
            &format!(
                "<span class=\"s-u\">{}</span><span class=\"s-d\">d</span><span class=\"s-p\">p</span><span class=\"s-n\">.</span></span>",
                "u".repeat(45)
            ),
        ] {
            assert!(html.contains(want), "missing {want:?} in\n{html}");
        }
        // The tunnel's reason is its error: said once, not twice.
        assert_eq!(html.matches("no answer within 2 s").count(), 1, "{html}");
    }

    #[test]
    fn a_vault_that_is_not_configured_says_not_checked_and_empty_lists_say_so() {
        let mut s = with_host_and_backup();
        if let Probe::Value(hosts) = &mut s.systems {
            hosts[0].vault_parity = Probe::Unknown;
            hosts[0].vault_reason = None;
            hosts[0].tunnels.clear();
            hosts[0].history = None;
        }
        let html = render(&s);
        assert!(html.contains("vault parity not checked"), "{html}");
        assert!(
            html.contains("tunnels: <span class=\"facts\">none configured</span>"),
            "{html}"
        );
    }

    #[test]
    fn backups_show_their_band_reason_and_thresholds() {
        let html = render(&with_host_and_backup());
        let thresholds = format!(
            "amber from {}, red from {}",
            human_age(93600),
            human_age(172800)
        );
        for want in [
            "<li class=\"row-amber\"><span class=\"badge amber\">▲ warn</span> <strong>gdrive</strong>",
            "latest backup is 30 h old (ASC-2001 SUCCESS_WITH_WARNINGS)",
            "age 30.0 h",
            &thresholds,
        ] {
            assert!(html.contains(want), "missing {want:?} in\n{html}");
        }
        let mut stale = with_host_and_backup();
        if let Probe::Value(b) = &mut stale.backups {
            b.stale = true;
        }
        assert!(
            render(&stale)
                .contains("<span class=\"badge red\">✖ fail</span> <strong>gdrive</strong>")
        );
    }

    #[test]
    fn agents_show_their_uptime_and_strip() {
        let mut s = snapshot();
        if let Probe::Value(rows) = &mut s.agents {
            rows[0].history = Some(history(&".".repeat(48), 0.0));
            rows[0].history.as_mut().unwrap().uptime_24h_pct = None;
            rows[1].history = Some(history(&"d".repeat(48), 0.0));
        }
        let html = render(&s);
        assert!(html.contains("24 h uptime: no samples yet"), "{html}");
        assert!(html.contains("24 h uptime 0.0 %"), "{html}");
    }
}

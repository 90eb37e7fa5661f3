//! `snapshot.html`: the same glance as the page, laid out here (askama, `templates/`) so it
//! works with JavaScript off or the WebAssembly failing. The page links to it from
//! `<noscript>` and from its boot note.
//!
//! Every word, band and count comes from [`fleetdash_model::Glance`], the one wording the page
//! uses too; this module only lays it out: the verdict, the needs-you lines, then each section
//! with its rows, green ones quiet, details behind `<details>` (no JavaScript needed). An
//! element whose alerts are held back carries the glance's mark ("🔕 silenced until 16:00
//! (disk swap)"), and with alerting configured the Systems section lists the alert channels.
//!
//! It is rendered from the snapshot *after* the redaction gate (and passes the gate again as a
//! whole), as of the snapshot's own `generated_at`, times of day in the hub's zone, which it
//! names once at the top ("Times are UTC."). A group the glance marks closed (the work queue's
//! finished tasks) is a `<details>` closed by default.

use askama::Template;
use chrono::{DateTime, FixedOffset, Local, Offset, TimeZone, Utc};
use fleetdash_model::glance::changes::{self, Change};
use fleetdash_model::glance::{HELD_ICON, favicon};
use fleetdash_model::{Glance, Snapshot};

pub const FILE_NAME: &str = "snapshot.html";

/// The static page reloads itself this often; the collector's cadence is minutes.
const REFRESH_SECONDS: u64 = 60;

#[derive(Template)]
#[template(path = "snapshot.html")]
struct Page {
    refresh_s: u64,
    title: String,
    favicon: String,
    verdict: String,
    verdict_class: &'static str,
    verdict_icon: &'static str,
    counts: String,
    staleness: Option<String>,
    generated: String,
    glance: Glance,
    /// The mark beside an element's held alerts, the page's own.
    held_icon: &'static str,
    /// The last day's band changes, newest first.
    changes: Vec<Change>,
    /// Set when the snapshot carries as many changes as it may: older ones are only in the log.
    capped: Option<String>,
}

/// The zone the page says times of day in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Zone {
    /// The hub's own, as this machine has it (`TZ`, else /etc/localtime), taken at the
    /// snapshot's instant, so a daylight-saving change is followed without a restart.
    #[default]
    Host,
    /// A fixed offset from UTC: what a test means, whatever machine runs it.
    Fixed(FixedOffset),
}

impl Zone {
    /// The offset from UTC at the instant `at`.
    pub fn offset_at(self, at: DateTime<Utc>) -> FixedOffset {
        match self {
            Zone::Host => Local.offset_from_utc_datetime(&at.naive_utc()).fix(),
            Zone::Fixed(offset) => offset,
        }
    }
}

/// The page for `snapshot`, judged as of its own `generated_at`, times of day at `offset`
/// from UTC (the reader's: [`Zone::offset_at`] the snapshot's instant).
pub fn render(snapshot: &Snapshot, offset: FixedOffset) -> String {
    let glance = Glance::new(snapshot, snapshot.generated_at, offset);
    let (band, verdict) = glance.verdict(true);
    let local = snapshot.generated_at.with_timezone(&offset);
    let page = Page {
        refresh_s: REFRESH_SECONDS,
        title: glance.title(true),
        favicon: favicon(band),
        verdict,
        verdict_class: band.class(),
        verdict_icon: band.icon(),
        counts: glance.counts.sentence(),
        staleness: glance.stale.clone(),
        generated: local.format("%Y-%m-%d %H:%M:%S").to_string(),
        glance,
        held_icon: HELD_ICON,
        changes: changes::recent(snapshot, snapshot.generated_at, offset),
        capped: (snapshot.transitions.len() >= super::transitions::RECENT_MAX).then(|| {
            format!(
                "The newest {} only; the collector's transitions log holds more.",
                super::transitions::RECENT_MAX
            )
        }),
    };
    page.render()
        .unwrap_or_else(|e| format!("<!doctype html><title>fleetdash</title><p>The snapshot page could not be rendered: {e}</p>"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleetdash_model::{
        Agent, Asc, Backups, Band, Board, BoardSource, Card, CronCheck, CronState, History,
        LiveTask, NamedCheck, Probe, System, human_age,
    };

    fn utc() -> FixedOffset {
        FixedOffset::east_opt(0).unwrap()
    }

    fn html(s: &Snapshot) -> String {
        render(s, utc())
    }

    /// The moment every fixture is written at: its times of day are on the same day, before it.
    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 30, 20, 0, 0).unwrap()
    }

    fn snapshot() -> Snapshot {
        let now = now();
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
            last_report_s: None,
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

    /// `snapshot()` with a board as the demo has it: a crashed and a timed-out card, a card
    /// this host cannot dispatch, two finished ones, and a projection refused.
    fn with_board() -> Snapshot {
        let mut s = snapshot();
        let now = s.generated_at;
        s.sections.board.checked_at = Some(now);
        let card = |id: &str, status: &str, band: Band, conditions: &[&str]| Card {
            board: "ops".into(),
            id: id.into(),
            title: format!("Job {id}"),
            status: status.into(),
            assignee: Some("nova".into()),
            priority: None,
            age_s: 600,
            block_kind: None,
            latest_activity_at: None,
            conditions: conditions.iter().map(|c| c.to_string()).collect(),
            band,
            checked_at: now,
            stale: false,
        };
        let source = |name: &str, projection: Probe<String>| BoardSource {
            name: name.into(),
            plane: Some("Docs".into()),
            cards: Probe::Value(5),
            projection,
            status: Asc::SUCCESS,
            reason: None,
            columns: Vec::new(),
            attention_left_out: Default::default(),
            checked_at: now,
            stale: false,
        };
        s.tasks.board = Probe::Value(Board {
            columns: ["todo", "running", "done"].map(String::from).to_vec(),
            cards: vec![
                card(
                    "t_far",
                    "todo",
                    Band::Red,
                    &["assignee tam cannot be claimed on this host (kanban.dispatch_profiles)"],
                ),
                card(
                    "t_crash",
                    "running",
                    Band::Red,
                    &["crashed: the worker process died at 2026-11-30 19:12 UTC"],
                ),
                card(
                    "t_slow",
                    "running",
                    Band::Red,
                    &[
                        "timed_out: the worker was killed after 1 h 30 min (limit 1 h) at 2026-11-30 19:12 UTC",
                    ],
                ),
                card("t_d1", "done", Band::Green, &[]),
                card("t_d2", "done", Band::Green, &[]),
            ],
            sources: vec![
                source("ops", Probe::Value("unchanged".into())),
                source(
                    "daily",
                    Probe::error(
                        "refused: /srv/vault/Docs/Kanban/daily.kanban has no fleetdash marker (hand-edited?); left untouched",
                    ),
                ),
            ],
        });
        s
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
        let mut s = with_board();
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

    /// The value of every `attr="..."` that follows `marker` in `html`.
    fn after_each(html: &str, marker: &str, attr: &str) -> Vec<String> {
        html.match_indices(marker)
            .filter_map(|(i, _)| {
                let rest = &html[i + marker.len()..];
                let start = rest.find(&format!("{attr}=\""))? + attr.len() + 2;
                let end = rest[start..].find('"')?;
                Some(rest[start..start + end].trim_start_matches('#').to_string())
            })
            .collect()
    }

    /// The row ids snapshot.html draws red, and the rows its red needs-you lines link to.
    fn said_red(html: &str) -> (Vec<String>, Vec<String>) {
        (
            after_each(html, "<li class=\"row row-red\"", "id"),
            after_each(html, "<li class=\"red\"><a", "href"),
        )
    }

    #[test]
    fn what_snapshot_html_says_is_red_is_what_the_glance_says() {
        let s = with_host_and_backup();
        let glance = Glance::new(&s, s.generated_at, utc());
        let mut glance_rows: Vec<String> = glance
            .sections
            .iter()
            .flat_map(|x| &x.groups)
            .flat_map(|g| &g.rows)
            .filter(|r| r.band == Band::Red)
            .map(|r| r.anchor.clone())
            .collect();
        let glance_needs: Vec<String> = glance
            .needs
            .iter()
            .filter(|n| n.band == Band::Red)
            .map(|n| n.anchor.clone())
            .collect();
        let page = html(&s);
        let (mut rows, needs) = said_red(&page);
        // Needs-you keeps the glance's order; the rows are compared as a set.
        assert_eq!(needs, glance_needs, "{page}");
        rows.sort();
        glance_rows.sort();
        assert_eq!(rows, glance_rows, "{page}");
        assert_eq!(
            rows,
            [
                "agent-zzz-down",
                "board-daily",
                "card-ops-t_crash",
                "card-ops-t_far",
                "card-ops-t_slow",
                "host-db1",
                "task-min-t_stuck01"
            ]
        );
        assert!(
            page.contains(&format!(
                "<p class=\"counts\">{}</p>",
                glance.counts.sentence()
            )),
            "{page}"
        );
        assert!(page.contains("7 red · 1 amber · 3 green"), "{page}");
    }

    #[test]
    fn crashed_and_timed_out_cards_are_red_with_their_conditions() {
        let page = html(&with_board());
        for (id, condition) in [
            (
                "card-ops-t_crash",
                "crashed: the worker process died at 19:12",
            ),
            (
                "card-ops-t_slow",
                "timed out: the worker was killed after 1 h 30 min (limit 1 h) at 19:12",
            ),
            (
                "card-ops-t_far",
                "assignee tam cannot be claimed on this host",
            ),
        ] {
            let at = page
                .find(&format!("<li class=\"row row-red\" id=\"{id}\">"))
                .unwrap_or_else(|| panic!("{id} is not a red row:\n{page}"));
            let row = &page[at..at + page[at..].find("</li>").unwrap()];
            assert!(row.contains("✖ </span>fail</span>"), "{row}");
            assert!(!row.contains("ok</span>"), "never ok: {row}");
            assert!(
                row.contains(&format!("<span class=\"reason\">{condition}</span>")),
                "{row}"
            );
        }
        // The config key is cut from the reason, kept behind the tap.
        assert!(
            row_of(&page, "card-ops-t_far")
                .contains("<dt>config</dt><dd>kanban.dispatch_profiles</dd>"),
            "{page}"
        );
        // The finished cards fold into a count, in their column.
        assert!(
            page.contains("<h3>done <small class=\"folded\">· 2 cards, finished</small></h3>"),
            "{page}"
        );
    }

    /// A board listed under the cap: the page says what it does not list, per column, right
    /// under the Board heading and on each column's line, and the verdict counts it all.
    #[test]
    fn a_capped_board_says_what_it_does_not_list() {
        use fleetdash_model::{ColumnCount, LeftOut};
        let mut s = with_board();
        let Probe::Value(b) = &mut s.tasks.board else {
            unreachable!()
        };
        let count = |column: &str, cards, left_out| ColumnCount {
            column: column.into(),
            cards,
            left_out,
        };
        b.sources[0].cards = Probe::Value(10_000);
        b.sources[0].columns = vec![
            count("todo", 400, 399),
            count("running", 2, 0),
            count("done", 9_598, 9_596),
        ];
        b.sources[0].attention_left_out = LeftOut { red: 12, amber: 0 };
        let page = html(&s);
        let (note, folded) = (
            "5 of 10,000 cards listed (those that need attention or just recovered, then the \
             newest of each open column); and 9,995 more: done 9,596, todo 399. 12 of those \
             need attention (12 red): more than the listing holds, so the worst, then the \
             newest, are listed",
            "<h3>todo <small class=\"folded\">· and 399 more, not listed</small></h3>",
        );
        let board = &page[page.find("<section id=\"board\"").unwrap()..];
        assert!(
            board.contains(&format!("<p class=\"sum\">{note}</p>")),
            "{board}"
        );
        assert!(board.contains(folded), "{board}");
        assert!(
            board.contains("<h3>done <small class=\"folded\">· 9,598 cards, finished</small></h3>"),
            "{board}"
        );
        assert!(
            page.contains("board ops</span> · 12 more red cards not listed (over the cap)"),
            "a needs-you line: {page}"
        );
        let (before, verdict) = (with_board().verdict(), s.verdict());
        assert_eq!(
            (verdict.red, verdict.green),
            (before.red + 12, before.green + 9_995 - 12),
            "every unlisted card counted"
        );
        assert!(page.contains(&verdict.sentence()), "{page}");
    }

    #[test]
    fn a_refused_projection_is_red_with_its_reason_and_its_path_behind_the_tap() {
        let page = html(&with_board());
        let at = page
            .find("<li class=\"row row-red\" id=\"board-daily\">")
            .unwrap_or_else(|| panic!("the refused board is not red:\n{page}"));
        let row = &page[at..at + page[at..].find("</li>").unwrap()];
        assert!(
            row.contains("projection refused: daily.kanban has no fleetdash marker (hand-edited?); left untouched"),
            "{row}"
        );
        let summary_end = row.find("</summary>").unwrap();
        assert!(
            row[summary_end..]
                .contains("<dt>path</dt><dd>/srv/vault/Docs/Kanban/daily.kanban</dd>"),
            "the path sits behind the tap: {row}"
        );
        assert!(!row[..summary_end].contains("/srv/vault"), "{row}");
    }

    #[test]
    fn needs_you_comes_first_and_each_line_leads_to_its_row() {
        let page = html(&with_host_and_backup());
        let needs = page.find("<h2 id=\"needs-h\">Needs you</h2>").unwrap();
        let agents = page.find("<section id=\"agents\"").unwrap();
        assert!(needs < agents, "{page}");
        let links = after_each(&page, "<li class=\"red\"><a", "href");
        let amber = after_each(&page, "<li class=\"amber\"><a", "href");
        assert_eq!(amber, ["backup-gdrive", "host-db1"].map(String::from)[..1]);
        for link in links.iter().chain(&amber) {
            assert!(
                page.contains(&format!(" id=\"{link}\">")),
                "no row {link}: {page}"
            );
        }
        assert!(
            page.contains(
                "<span class=\"what\">agent zzz-down</span> · down: connection refused</a>"
            ),
            "{page}"
        );
        assert!(page.contains("<title>✖ 7 · fleet</title>"), "{page}");
        assert!(
            page.contains("<link rel=\"icon\" href=\"data:image/svg+xml,"),
            "{page}"
        );
    }

    #[test]
    fn green_rows_are_one_quiet_line_with_details_behind_a_tap() {
        let page = html(&with_host_and_backup());
        let at = page.find("id=\"agent-aaa-green\"").unwrap();
        let row = &page[at..at + page[at..].find("</li>").unwrap()];
        let summary = &row[..row.find("</summary>").unwrap()];
        assert!(
            summary.contains("<details><summary>"),
            "closed by default: {row}"
        );
        assert!(!summary.contains("class=\"reason\""), "{summary}");
        assert!(
            summary.contains("<span class=\"sum\">heart · hub · 1 min ago</span>"),
            "{summary}"
        );
        // Behind the tap: the facts, the heartbeat's error said there only.
        assert!(
            row.contains(
                "<dt>heartbeat</dt><dd class=\"red\">error: heartbeat: connection refused</dd>"
            ),
            "{row}"
        );
        // A down agent's reason is said once; its facts point to it.
        let at = page.find("id=\"agent-zzz-down\"").unwrap();
        let row = &page[at..at + page[at..].find("</li>").unwrap()];
        assert_eq!(row.matches("connection refused").count(), 1, "{row}");
        assert!(row.contains("ASC-5003 DEPENDENCY_UNAVAILABLE"), "{row}");
    }

    #[test]
    fn sections_without_data_say_whether_they_are_configured() {
        let page = html(&snapshot());
        assert!(page.contains("Not configured: no collector for this section."));
        let mut s = snapshot();
        s.sections.systems.configured = true;
        s.systems = Probe::error("not collected");
        let page = html(&s);
        assert!(page.contains("<p class=\"problem red\"><span aria-hidden=\"true\">✖ </span>error: not collected</p>"), "{page}");
        assert!(
            page.contains("<a href=\"#systems\">"),
            "a failed section needs you: {page}"
        );
    }

    #[test]
    fn a_stale_snapshot_carries_the_banner_and_text_is_escaped() {
        let mut s = snapshot();
        s.stale = true;
        s.stale_reasons = vec!["agents: last collected 12 min ago (>= 10 min)".into()];
        if let Probe::Value(rows) = &mut s.agents {
            rows[0].name = "<script>alert(1)</script>".into();
        }
        let page = html(&s);
        assert!(page.contains(
            "role=\"alert\">Do not trust this page yet: agents: last collected 12 min ago"
        ));
        assert!(
            page.contains("stale · last known: "),
            "never green while stale: {page}"
        );
        assert!(page.contains("<title>✖ stale · fleet</title>"), "{page}");
        assert!(!page.contains("<script>alert(1)"), "{page}");
        assert!(page.contains("&#60;script&#62;"), "{page}");
    }

    #[test]
    fn hosts_show_every_check_with_its_state_reason_and_uptime() {
        let page = html(&with_host_and_backup());
        for want in [
            "<strong>db1</strong> <span class=\"sum\">via ssh · checked 0 s ago</span>",
            "<span class=\"reason\">service postgres inactive · tunnel pg-tunnel no answer · vault out of sync · disk unreadable · cron nightly-dump late</span>",
            "<p>ASC-5003 DEPENDENCY_UNAVAILABLE</p>",
            "<dt>RAM</dt><dd>1.3 GB / 8.0 GB</dd>",
            "<dt>disk free</dt><dd class=\"red\">error: df: permission denied</dd>",
            "<dt>vault parity</dt><dd class=\"red\">OUT OF SYNC: 3 uncommitted changes</dd>",
            "nginx active · 24 h 99.5 %",
            "<span class=\"red\"><span aria-hidden=\"true\">✖ </span>postgres inactive · 24 h 50.0 %</span>",
            "pg-tunnel no answer<span class=\"why\">no answer within 2 s</span></span>",
            "<span class=\"amber\"><span aria-hidden=\"true\">▲ </span>nightly-dump late · last ok 1 h 5 min ago · every 1 h, grace 10 min · 24 h 100.0 %<span class=\"why\">5 min late: last success 1 h 5 min ago</span>",
            "rotate up · last ok 1 min ago",
            "24 h uptime 97.9 % <span class=\"strip\" aria-hidden=\"true\"><i class=\"u\" style=\"--n:45\"></i><i class=\"d\" style=\"--n:1\"></i><i class=\"p\" style=\"--n:1\"></i><i class=\"n\" style=\"--n:1\"></i></span>",
            "<span>24 h ago</span><span>12 h</span><span>now</span>",
        ] {
            assert!(page.contains(want), "missing {want:?} in\n{page}");
        }
        // The tunnel's reason is its error: said once.
        assert_eq!(page.matches("no answer within 2 s").count(), 1, "{page}");
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
        let page = html(&s);
        assert!(
            page.contains("<dt>vault parity</dt><dd>not checked</dd>"),
            "{page}"
        );
        assert!(
            page.contains("tunnels: <span class=\"sum\">none configured</span>"),
            "{page}"
        );
    }

    #[test]
    fn backups_show_their_band_reason_and_thresholds() {
        let page = html(&with_host_and_backup());
        let thresholds = format!(
            "amber from {}, red from {}",
            human_age(93600),
            human_age(172800)
        );
        for want in [
            "<li class=\"row row-amber\" id=\"backup-gdrive\"><details><summary><span class=\"line\"><span class=\"badge amber\"><span aria-hidden=\"true\">▲ </span>warn</span> <strong>gdrive</strong>",
            "<span class=\"reason\">latest backup is 30 h old</span>",
            "<p>ASC-2001 SUCCESS_WITH_WARNINGS</p>",
            "latest 1 d 6 h ago",
            &thresholds,
        ] {
            assert!(page.contains(want), "missing {want:?} in\n{page}");
        }
        let mut stale = with_host_and_backup();
        if let Probe::Value(b) = &mut stale.backups {
            b.stale = true;
        }
        assert!(html(&stale).contains("<li class=\"row row-red\" id=\"backup-gdrive\">"));
        // A green backup writes no reason (in red or otherwise): its note is a fact.
        let mut green = with_host_and_backup();
        if let Probe::Value(b) = &mut green.backups {
            b.band = Band::Green;
            b.status = Asc::SUCCESS;
            b.reason = Some("latest backup 20 h old (amber at 1 d 2 h)".into());
        }
        let page = html(&green);
        let at = page.find("id=\"backup-gdrive\"").unwrap();
        let row = &page[at..at + page[at..].find("</li>").unwrap()];
        assert!(!row.contains("class=\"reason\""), "{row}");
        assert!(
            row.contains("<dt>note</dt><dd>latest backup 20 h old (amber at 1 d 2 h)</dd>"),
            "{row}"
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
        let page = html(&s);
        assert!(page.contains("no samples yet"), "{page}");
        assert!(page.contains("24 h uptime 0.0 %"), "{page}");
    }

    /// `with_host_and_backup()` with alerting: db1 silenced until 22:00 for a disk swap, its
    /// tunnel until 21:00 for a rebuild; ntfy failing since 19:02 with 503 and 3 alerts waiting,
    /// the dead man's switch delivering.
    fn with_alerting() -> Snapshot {
        use fleetdash_model::alerts::{ChannelState, Held, key};
        let mut s = with_host_and_backup();
        let now = s.generated_at;
        let at = |hm: &str| {
            DateTime::parse_from_rfc3339(&format!("2026-11-30T{hm}:00Z"))
                .unwrap()
                .with_timezone(&Utc)
        };
        s.alerts.configured = true;
        s.alerts.held = vec![
            Held {
                key: key::host("db1"),
                until: Some(at("22:00")),
                reason: "disk swap".into(),
                flaky: false,
                checked_at: now,
            },
            Held {
                key: key::host_check("db1", "tunnel", "pg-tunnel"),
                until: Some(at("21:00")),
                reason: "tunnel rebuild".into(),
                flaky: false,
                checked_at: now,
            },
        ];
        s.alerts.channels = vec![
            ChannelState {
                name: "deadman".into(),
                failing_since: None,
                reason: None,
                pending: 0,
                checked_at: now,
            },
            ChannelState {
                name: "ntfy".into(),
                failing_since: Some(at("19:02")),
                reason: Some("503".into()),
                pending: 3,
                checked_at: now,
            },
        ];
        s
    }

    /// The part of `page` from the `<li` holding ` id="{id}"` to its `</li>`.
    fn row_of<'a>(page: &'a str, id: &str) -> &'a str {
        let at = page
            .find(&format!(" id=\"{id}\""))
            .unwrap_or_else(|| panic!("no row {id}:\n{page}"));
        let start = page[..at].rfind("<li").unwrap();
        &page[start..at + page[at..].find("</li>").unwrap()]
    }

    #[test]
    fn a_held_host_and_a_failing_alert_channel_say_so_as_on_the_page() {
        let s = with_alerting();
        let page = html(&s);
        let mark = |words: &str| {
            format!("<span class=\"held\"><span aria-hidden=\"true\">🔕 </span>{words}</span>")
        };
        let host = mark("silenced until 22:00 (disk swap)");
        // Needs-you: the host's red line, marked; the channel's amber line, one sentence.
        let line = page
            .split('\n')
            .find(|l| l.starts_with("<li class=\"red\"><a href=\"#host-db1\">"))
            .unwrap_or_else(|| panic!("no red needs-you line for db1:\n{page}"));
        assert!(line.ends_with(&format!("{host}</a></li>")), "{line}");
        assert!(
            page.contains(
                "<li class=\"amber\"><a href=\"#alert-ntfy\"><span aria-hidden=\"true\">▲ </span><span class=\"what\">alerts: ntfy failing since 19:02: 503 (3 waiting)</span></a></li>"
            ),
            "{page}"
        );
        // The host's row: still red, marked in its summary (seen closed); its tunnel says its
        // own hold behind the tap.
        let row = row_of(&page, "host-db1");
        assert!(row.starts_with("<li class=\"row row-red\""), "{row}");
        let summary_end = row.find("</summary>").unwrap();
        assert!(row[..summary_end].contains(&host), "{row}");
        assert!(
            row.contains(&format!(
                "pg-tunnel no answer<span class=\"why\">no answer within 2 s</span>{}</span>",
                mark("silenced until 21:00 (tunnel rebuild)")
            )),
            "{row}"
        );
        assert_eq!(row.matches("🔕").count(), 2, "{row}");
        // The verdict says the channel; the alerts group lists both, failing first.
        assert!(page.contains("· 1 alert channel failing</p>"), "{page}");
        assert!(page.contains("7 red · 2 amber · 4 green"), "{page}");
        let alerts = page.find("<h3>alerts</h3>").expect("the alerts group");
        let ntfy = row_of(&page, "alert-ntfy");
        assert!(page.find(ntfy).unwrap() > alerts);
        assert!(ntfy.starts_with("<li class=\"row row-amber\""), "{ntfy}");
        assert!(ntfy.contains("<span class=\"reason\">503</span>"), "{ntfy}");
        assert!(ntfy.contains("<dt>waiting</dt><dd>3 alerts</dd>"), "{ntfy}");
        let deadman = row_of(&page, "alert-deadman");
        assert!(
            deadman.starts_with("<li class=\"row row-green\"")
                && deadman.contains("<span class=\"sum\">delivering</span>"),
            "{deadman}"
        );
        assert!(page.find(deadman).unwrap() > page.find(ntfy).unwrap());
        // What the glance says, no more: the same needs, the same counts.
        let glance = Glance::new(&s, s.generated_at, utc());
        assert!(page.contains(&format!(
            "<p class=\"counts\">{}</p>",
            glance.counts.sentence()
        )));

        // Without alerting, nothing of it.
        let page = html(&with_host_and_backup());
        for absent in ["🔕", "class=\"held\"", "<h3>alerts</h3>", "alert channel"] {
            assert!(!page.contains(absent), "{absent} in\n{page}");
        }
    }

    /// An acked host says so where its hold is said, after it; still red, still a needs-you
    /// line.
    #[test]
    fn an_acked_host_says_so_beside_its_hold_as_on_the_page() {
        let mut s = with_alerting();
        s.alerts.acked = vec![fleetdash_model::Acked {
            key: fleetdash_model::alerts::key::host("db1"),
            at: DateTime::parse_from_rfc3339("2026-11-30T19:05:00Z")
                .unwrap()
                .with_timezone(&Utc),
            via: "cli".into(),
            checked_at: s.generated_at,
        }];
        let page = html(&s);
        let words = "<span class=\"held\"><span aria-hidden=\"true\">🔕 </span>silenced until \
                     22:00 (disk swap) · acked 19:05</span>";
        let row = row_of(&page, "host-db1");
        assert!(row.starts_with("<li class=\"row row-red\""), "{row}");
        assert!(row.contains(words), "{row}");
        let line = page
            .split('\n')
            .find(|l| l.starts_with("<li class=\"red\"><a href=\"#host-db1\">"))
            .unwrap_or_else(|| panic!("no red needs-you line for db1:\n{page}"));
        assert!(line.ends_with(&format!("{words}</a></li>")), "{line}");
    }

    #[test]
    fn times_are_said_in_the_hubs_zone_which_the_top_names_once() {
        let mut s = with_board();
        s.generated_at = DateTime::parse_from_rfc3339("2026-11-30T19:20:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let page = render(&s, FixedOffset::east_opt(3600).unwrap());
        assert!(
            page.contains("crashed: the worker process died at 20:12"),
            "{page}"
        );
        assert!(
            page.contains("<p class=\"counts\">Times are UTC+01:00.</p>"),
            "{page}"
        );
        assert!(
            page.contains("Written 2026-11-30 20:20:00; ages are as of then."),
            "{page}"
        );
        assert_eq!(page.matches("UTC").count(), 1, "{page}");
        // At UTC, said once too, with every time of day the page holds.
        let page = html(&with_work_queue());
        assert!(
            page.contains("<p class=\"counts\">Times are UTC.</p>"),
            "{page}"
        );
        assert_eq!(page.matches("UTC").count(), 1, "{page}");
    }

    /// `with_alerting()` with a work queue: one task owned with an ETA, two finished.
    fn with_work_queue() -> Snapshot {
        use fleetdash_model::{QueueAck, QueueTask};
        let mut s = with_alerting();
        let now = s.generated_at;
        s.sections.queue.configured = true;
        s.sections.queue.checked_at = Some(now);
        let task = |id: &str, state: &str| QueueTask {
            id: id.into(),
            title: format!("Task {id}"),
            owner: Some("juno".into()),
            tagged: Vec::new(),
            created_by: "operator".into(),
            created_at: now - chrono::Duration::minutes(30),
            deadline: None,
            state: state.into(),
            ack: Some(QueueAck {
                kind: "owning".into(),
                by: "juno".into(),
                at: now - chrono::Duration::minutes(29),
                eta: Some(now + chrono::Duration::minutes(45)),
                to: None,
            }),
            blocked_on: None,
            // Its owner reported a minute ago: within the no-reply rule.
            last_report_at: Some(now - chrono::Duration::minutes(1)),
            status_message: None,
            quiet_s: None,
            unacked_s: None,
            deadline_in_s: None,
            turns_in_s: None,
            worker_died: false,
            band: Band::Green,
            status: Asc::SUCCESS,
            reason: None,
            checked_at: now,
            stale: false,
        };
        s.tasks.queue = Probe::Value(vec![
            task("q_open", "TASK_STATE_WORKING"),
            task("q_done1", "TASK_STATE_COMPLETED"),
            task("q_done2", "TASK_STATE_CANCELED"),
        ]);
        s
    }

    #[test]
    fn finished_queue_tasks_are_rows_folded_behind_their_groups_title() {
        let s = with_work_queue();
        let page = html(&s);
        let queue = &page[page.find("<section id=\"queue\"").unwrap()..];
        let queue = &queue[..queue.find("</section>").unwrap()];
        let note = format!(
            "<p class=\"sum\">an agent must take a task within {}</p>",
            human_age(s.rules.ack_within_s)
        );
        assert!(queue.contains(&note), "{queue}");
        assert!(
            row_of(queue, "queue-q_open")
                .contains("<span class=\"sum\">owned by juno · ETA 20:45</span>"),
            "{queue}"
        );
        let closed = queue
            .find("<details class=\"closed\"><summary><h3>finished (2)</h3></summary>")
            .unwrap_or_else(|| panic!("no closed group:\n{queue}"));
        let folded = &queue[closed..];
        assert!(folded.trim_end().ends_with("</details>"), "{folded}");
        assert!(folded.contains(" id=\"queue-q_done1\""), "{folded}");
        assert!(folded.contains(" id=\"queue-q_done2\""), "{folded}");
        assert!(!queue[..closed].contains("q_done"), "{queue}");
        // Counted once, as the snapshot counts them.
        assert!(page.contains(&s.verdict().sentence()), "{page}");
    }
}

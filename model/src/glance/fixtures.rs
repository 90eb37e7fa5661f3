//! The glance tests' shared fixtures: the demo fleet in small ([`fleet`]), the elements it is
//! made of, and the glance of a snapshot some seconds after it was written ([`at`]).

use chrono::{DateTime, FixedOffset, Utc};

use super::Glance;
use super::types::Row;
use crate::alerts::{ChannelState, Held};
use crate::asc::Asc;
use crate::band::Band;
use crate::probe::Probe;
use crate::queue::QueueTask;
use crate::rules::RulesView;
use crate::snapshot::{
    Agent, Backups, Board, BoardSource, Card, CronCheck, CronState, LiveTask, NamedCheck,
    SectionMeta, Sections, Snapshot, System,
};
use crate::words::human_age;

pub(super) fn rules() -> RulesView {
    RulesView {
        no_reply_s: 60,
        ..crate::rules::tests::rules()
    }
}

pub(super) fn utc() -> FixedOffset {
    FixedOffset::east_opt(0).unwrap()
}

pub(super) fn t0() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-11-30T19:20:00Z")
        .unwrap()
        .with_timezone(&Utc)
}

pub(super) fn agent(name: &str, band: Band, up: bool, reason: Option<&str>) -> Agent {
    Agent {
        name: name.into(),
        endpoint: format!("http://127.0.0.1:1/{name}"),
        plane: Some("heart".into()),
        up,
        last_exchange_s: Probe::Value(90),
        exchange_band: Band::Green,
        skills_count: Probe::Value(3),
        lane: Probe::Value("hub".into()),
        model: Probe::Value("claude".into()),
        window: Probe::Unknown,
        heartbeat: Probe::Unknown,
        band,
        status: if band == Band::Green {
            Asc::SUCCESS
        } else {
            Asc::DEPENDENCY_UNAVAILABLE
        },
        reason: reason.map(Into::into),
        audit_skipped_lines: 0,
        last_report_s: None,
        history: None,
        checked_at: t0(),
        stale: !up,
    }
}

pub(super) fn task(id: &str, age_s: u64, stuck: bool, state: &str) -> LiveTask {
    LiveTask {
        id: id.into(),
        agent: "min".into(),
        state: Probe::Value(state.into()),
        age_s,
        stuck,
        status: if stuck { Asc::TIMEOUT } else { Asc::RUNNING },
        reason: stuck.then(|| format!("no reply for {} (>= 1 min)", human_age(age_s))),
        checked_at: t0(),
        stale: false,
    }
}

pub(super) fn card(id: &str, status: &str, band: Band, conditions: &[&str]) -> Card {
    Card {
        board: "ops".into(),
        id: id.into(),
        title: format!("Job {id}"),
        status: status.into(),
        assignee: Some("nova".into()),
        priority: Some(1),
        age_s: 3600,
        block_kind: None,
        latest_activity_at: None,
        conditions: conditions.iter().map(|c| c.to_string()).collect(),
        band,
        checked_at: t0(),
        stale: false,
    }
}

pub(super) fn source(name: &str, projection: Probe<String>) -> BoardSource {
    BoardSource {
        name: name.into(),
        plane: Some("Docs".into()),
        cards: Probe::Value(4),
        projection,
        status: Asc::SUCCESS,
        reason: None,
        columns: Vec::new(),
        attention_left_out: Default::default(),
        checked_at: t0(),
        stale: false,
    }
}

pub(super) fn check(name: &str, ok: bool, reason: Option<&str>) -> NamedCheck {
    NamedCheck {
        name: name.into(),
        ok: Probe::Value(ok),
        reason: reason.map(Into::into),
        uptime_24h_pct: Some(if ok { 100.0 } else { 0.0 }),
        checked_at: t0(),
        stale: false,
    }
}

pub(super) fn host(
    name: &str,
    band: Band,
    services: Vec<NamedCheck>,
    crons: Vec<CronCheck>,
) -> System {
    System {
        host: name.into(),
        source: "node_exporter".into(),
        ram_used_gb: Probe::Value(7.0),
        ram_total_gb: Probe::Value(8.0),
        disk_free_gb: Probe::Value(9.0),
        services,
        tunnels: Vec::new(),
        crons,
        vault_parity: Probe::Unknown,
        vault_reason: None,
        band,
        status: if band == Band::Green {
            Asc::SUCCESS
        } else {
            Asc::DEPENDENCY_UNAVAILABLE
        },
        reason: (band != Band::Green).then(|| {
            "service hermes-gateway: failed; cron db-dump: last run failed with exit code 2".into()
        }),
        history: None,
        checked_at: t0(),
        stale: false,
    }
}

/// The demo fleet in small: a down agent, one without skills, a quiet one and a healthy
/// one; a stuck task, one about to cross the rule and a finished one; a refused projection,
/// a crashed and a timed-out card, a blocked one and two finished ones; a red host with a
/// failed service and a down cron, a green host; a green backup with a note.
pub(super) fn fleet() -> Snapshot {
    let mut s = Snapshot::empty(t0(), rules());
    s.stale = false;
    let meta = SectionMeta {
        configured: true,
        checked_at: Some(t0()),
        duration_ms: Some(1),
        stale: false,
    };
    s.sections = Sections {
        tasks: meta.clone(),
        board: meta.clone(),
        live_tasks: meta.clone(),
        agents: meta.clone(),
        systems: meta.clone(),
        backups: meta,
        ..Sections::default()
    };
    let mut vega = agent(
        "vega",
        Band::Red,
        true,
        Some("its card lists no skills: it cannot be given work"),
    );
    vega.skills_count = Probe::Value(0);
    vega.status = Asc::FAILED_PRECONDITION;
    let mut lyra = agent("lyra", Band::Red, false, Some("down: connection refused"));
    lyra.skills_count = Probe::error("down: connection refused");
    lyra.heartbeat = Probe::error("heartbeat: connection refused");
    let mut juno = agent("juno", Band::Amber, true, Some("no exchange for 3 h"));
    juno.last_exchange_s = Probe::Value(3 * 3600);
    juno.exchange_band = Band::Amber;
    juno.status = Asc::SUCCESS_WITH_WARNINGS;
    s.agents = Probe::Value(vec![
        agent("min", Band::Green, true, None),
        vega,
        juno,
        lyra,
    ]);
    s.tasks.live = Probe::Value(vec![
        task("t_done", 5, false, "TASK_STATE_COMPLETED"),
        task("t_soon", 50, false, "TASK_STATE_WORKING"),
        task("t_stuck", 100, true, "TASK_STATE_WORKING"),
    ]);
    let mut blocked = card("t_blk", "blocked", Band::Amber, &["blocked: needs_input"]);
    blocked.block_kind = Some("needs_input".into());
    s.tasks.board = Probe::Value(Board {
        columns: ["todo", "running", "blocked", "done"]
            .map(String::from)
            .to_vec(),
        cards: vec![
            card("t_todo", "todo", Band::Green, &[]),
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
                    "timed_out: the worker was killed after 1 h 30 min (limit 1 h) at 2026-11-30 19:13 UTC",
                ],
            ),
            blocked,
            card("t_d1", "done", Band::Green, &[]),
            card("t_d2", "done", Band::Green, &["claim_extended"]),
        ],
        sources: vec![
            source("research", Probe::Value("unchanged".into())),
            source(
                "daily-operation",
                Probe::error(
                    "refused: /srv/vault/Docs/Kanban/daily-operation.kanban has no fleetdash marker (hand-edited?); left untouched",
                ),
            ),
        ],
    });
    let cron = |name: &str, state: CronState, reason: Option<&str>| CronCheck {
        name: name.into(),
        state,
        last_ok_s: Probe::Value(3600),
        period_s: 86400,
        grace_s: 7200,
        reason: reason.map(Into::into),
        uptime_24h_pct: Some(100.0),
        checked_at: t0(),
        stale: false,
    };
    s.systems = Probe::Value(vec![
        host(
            "prod",
            Band::Red,
            vec![
                check("nginx", true, None),
                check("hermes-gateway", false, Some("failed")),
            ],
            vec![cron(
                "db-dump",
                CronState::Down,
                Some("last run failed with exit code 2"),
            )],
        ),
        host(
            "LAB",
            Band::Green,
            vec![check("hermes-gateway", true, None)],
            vec![cron("cert-renew", CronState::Up, None)],
        ),
    ]);
    s.backups = Probe::Value(Backups {
        name: "gdrive".into(),
        gdrive_latest: Probe::Value(t0() - chrono::Duration::hours(20)),
        age_h: Probe::Value(20.0),
        band: Band::Green,
        status: Asc::SUCCESS,
        reason: Some("latest backup 20 h old (amber at 1 d 2 h)".into()),
        checked_at: t0(),
        stale: false,
    });
    s
}

/// A work-queue task tagged on three agents, nobody owning it yet.
pub(super) fn queue_task(id: &str, minutes_ago: i64) -> QueueTask {
    QueueTask {
        id: id.into(),
        title: format!("Task {id}"),
        owner: None,
        tagged: vec!["mira".into(), "nova".into(), "sol".into()],
        created_by: "operator".into(),
        created_at: t0() - chrono::Duration::minutes(minutes_ago),
        deadline: None,
        state: "TASK_STATE_SUBMITTED".into(),
        ack: None,
        blocked_on: None,
        last_report_at: None,
        status_message: None,
        quiet_s: None,
        unacked_s: None,
        deadline_in_s: None,
        turns_in_s: None,
        worker_died: false,
        band: Band::Green,
        status: Asc::SUCCESS,
        reason: None,
        checked_at: t0(),
        stale: false,
    }
}

/// A queue with one task of each kind of ownership: owned with an ETA (q_ok), tagged and
/// not taken (q_new), assigned to vega and not taken (q_vega), escalated to min (q_esc),
/// blocked (q_blk), orphaned (q_orph), and a finished one (q_done).
pub(super) fn queued() -> Snapshot {
    use crate::{QueueAck, QueueTask};
    let mut s = fleet();
    // The shipped stuck rule (5 min): q_ok, WORKING, reported 3 min ago and is on time.
    s.rules.no_reply_s = 300;
    s.sections.queue = SectionMeta {
        configured: true,
        checked_at: Some(t0()),
        duration_ms: Some(1),
        stale: false,
    };
    let task = queue_task;
    let ack = |kind: &str, by: &str, t: &QueueTask| QueueAck {
        kind: kind.into(),
        by: by.into(),
        at: t.created_at,
        eta: None,
        to: None,
    };
    let owned = |mut t: QueueTask| {
        t.owner = Some("sol".into());
        t.state = "TASK_STATE_WORKING".into();
        t.ack = Some(ack("owning", "sol", &t));
        t
    };
    let mut ok = owned(task("q_ok", 20));
    ok.ack.as_mut().unwrap().eta = Some(t0() + chrono::Duration::minutes(25));
    ok.last_report_at = Some(t0() - chrono::Duration::minutes(3));
    let mut blocked = owned(task("q_blk", 30));
    blocked.blocked_on = Some("t_1a2b: LAB disk full".into());
    // As the store leaves a blocked task: waiting, not WORKING (the no-reply rule is not its).
    blocked.state = "TASK_STATE_INPUT_REQUIRED".into();
    let mut done = owned(task("q_done", 50));
    done.state = "TASK_STATE_COMPLETED".into();
    let mut vega = task("q_vega", 12);
    vega.owner = Some("vega".into());
    let mut esc = task("q_esc", 40);
    esc.owner = Some("min".into());
    let mut handed = ack("escalating", "sol", &esc);
    handed.at = t0() - chrono::Duration::minutes(15);
    handed.to = Some("min".into());
    esc.ack = Some(handed);
    let mut orphan = owned(task("q_orph", 45));
    orphan.state = "TASK_STATE_FAILED".into();
    orphan.status_message = Some(crate::queue::ORPHANED_MESSAGE.into());
    s.tasks.queue = Probe::Value(vec![
        ok,
        // Created 9 min before the snapshot: its ACK falls due a minute after it.
        task("q_new", 9),
        vega,
        esc,
        blocked,
        orphan,
        done,
    ]);
    s
}

/// Every word of a glance that is not a row's anchor or band: what the reader may read.
pub(super) fn all_words(g: &Glance) -> Vec<String> {
    let mut out = vec![g.headline.clone(), g.as_of.clone()];
    for n in &g.needs {
        out.extend([n.what.clone(), n.reason.clone()]);
        out.extend(n.since.clone());
        out.extend(n.held.clone());
    }
    for s in &g.sections {
        out.extend(s.checked.clone());
        out.extend(s.note.clone());
        out.extend(s.problem.as_ref().map(|p| p.text.clone()));
        for grp in &s.groups {
            out.extend(grp.title.clone());
            out.extend(grp.folded.clone());
            out.extend(grp.empty.map(String::from));
            for r in &grp.rows {
                out.extend([r.title.clone(), r.summary.clone()]);
                out.extend(r.reason.clone());
                out.extend(r.held.clone());
                out.extend(r.code.clone());
                for f in &r.facts {
                    out.push(f.text.clone());
                    out.extend(f.held.clone());
                }
                for c in r.checks.iter().flat_map(|c| &c.items) {
                    out.push(c.text.clone());
                    out.extend(c.why.clone());
                    out.extend(c.held.clone());
                }
                if let Some(strip) = &r.strip {
                    out.push(strip.label.clone());
                    out.extend(strip.axis.map(String::from));
                }
            }
        }
    }
    out
}

/// `key` held until `minutes` after t0 (19:20 UTC) for `reason`.
pub(super) fn hold(key: String, minutes: i64, reason: &str) -> Held {
    Held {
        key,
        until: Some(t0() + chrono::Duration::minutes(minutes)),
        reason: reason.into(),
        flaky: false,
        checked_at: t0(),
    }
}

pub(super) fn channel(
    name: &str,
    failing_min_ago: Option<i64>,
    reason: &str,
    pending: u64,
) -> ChannelState {
    ChannelState {
        name: name.into(),
        failing_since: failing_min_ago.map(|m| t0() - chrono::Duration::minutes(m)),
        reason: (!reason.is_empty()).then(|| reason.into()),
        pending,
        checked_at: t0(),
    }
}

pub(super) fn row<'a>(g: &'a Glance, anchor: &str) -> &'a Row {
    g.sections
        .iter()
        .flat_map(|s| &s.groups)
        .flat_map(|g| &g.rows)
        .find(|r| r.anchor == anchor)
        .unwrap_or_else(|| panic!("no row {anchor}"))
}

pub(super) fn at(s: &Snapshot, secs: i64) -> Glance {
    Glance::new(s, s.generated_at + chrono::Duration::seconds(secs), utc())
}

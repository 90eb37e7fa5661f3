//! One reader per type of the model, from the snapshot down: each keeps its type's serde rules
//! (required fields, `#[serde(default)]`s, `Option`s, aliases). A field added to the model stops
//! this file compiling until it is read here.

use fleetdash_model::alerts::Reach;
use fleetdash_model::{
    Acked, Agent, Ahead, AlertsView, Asc, Backups, Band, Board, BoardSource, Card, ChannelState,
    ClockJump, ClockView, ColumnCount, CronCheck, CronState, EndedTask, Fold, Heartbeat, Held,
    History, Jump, LeftOut, LiveTask, NamedCheck, Probe, QueueAck, QueueLeftOut, QueueTask,
    RulesView, SectionMeta, Sections, SetAside, Snapshot, System, Tasks, Transition,
    UnreadableTask, Window,
};

use super::Json;
use super::reader::{Reader, boolean, float, int, string, strings, time, u32_, uint, whole};

fn band(r: &mut Reader, v: &Json) -> Band {
    match v {
        Json::Str(s) if s == "green" => Band::Green,
        Json::Str(s) if s == "amber" => Band::Amber,
        Json::Str(s) if s == "red" => Band::Red,
        _ => {
            r.fail("expected green, amber or red");
            Band::Green
        }
    }
}

fn cron_state(r: &mut Reader, v: &Json) -> CronState {
    match v {
        Json::Str(s) if s == "up" => CronState::Up,
        Json::Str(s) if s == "late" => CronState::Late,
        Json::Str(s) if s == "down" => CronState::Down,
        _ => {
            r.fail("expected up, late or down");
            CronState::Down
        }
    }
}

fn asc(r: &mut Reader, v: &Json) -> Asc {
    let o = r.object(v);
    Asc {
        code: r.req(&o, "code", |r, v| {
            whole(r, v, 0.0, f64::from(u16::MAX)) as u16
        }),
        name: r.req(&o, "name", string).into(),
    }
}

pub(super) fn read_snapshot(r: &mut Reader, v: &Json) -> Snapshot {
    let o = r.object(v);
    Snapshot {
        schema_version: r.req(&o, "schema_version", string),
        generated_at: r.req(&o, "generated_at", time),
        stale: r.req(&o, "stale", boolean),
        stale_reasons: r.field(&o, "stale_reasons", strings, Some(Vec::new())),
        rules: r.req(&o, "rules", rules),
        sections: r.field(&o, "sections", sections, Some(Sections::default())),
        tasks: r.req(&o, "tasks", tasks),
        agents: r.req(&o, "agents", |r, v| r.probe(v, |r, v| r.list(v, agent))),
        systems: r.req(&o, "systems", |r, v| r.probe(v, |r, v| r.list(v, system))),
        backups: r.req(&o, "backups", |r, v| r.probe(v, backups)),
        transitions: r.field(
            &o,
            "transitions",
            |r, v| r.list(v, transition),
            Some(Vec::new()),
        ),
        alerts: r.field(&o, "alerts", alerts, Some(AlertsView::default())),
        set_aside: r.field(
            &o,
            "set_aside",
            |r, v| r.list(v, set_aside),
            Some(Vec::new()),
        ),
        clock: r.field(&o, "clock", clock, Some(ClockView::default())),
        folds: r.field(&o, "folds", |r, v| r.list(v, fold), Some(Vec::new())),
    }
}

fn fold(r: &mut Reader, v: &Json) -> Fold {
    let o = r.object(v);
    Fold {
        rows: r.req(&o, "rows", strings),
        what: r.req(&o, "what", string),
        reason: r.req(&o, "reason", string),
        anchor: r.req(&o, "anchor", string),
        band: r.opt(&o, "band", band),
        checked_at: r.req(&o, "checked_at", time),
    }
}

fn clock(r: &mut Reader, v: &Json) -> ClockView {
    // Every field has a default, so serde takes an empty array for the struct as well.
    if matches!(v, Json::Arr(items) if items.is_empty()) {
        return ClockView::default();
    }
    let o = r.object(v);
    ClockView {
        jumps: r.field(&o, "jumps", |r, v| r.list(v, clock_jump), Some(Vec::new())),
        judging_from: r.opt(&o, "judging_from", time),
        unwatched_s: r.field(&o, "unwatched_s", uint, Some(0)),
        ahead: r.opt(&o, "ahead", ahead),
    }
}

fn clock_jump(r: &mut Reader, v: &Json) -> ClockJump {
    let o = r.object(v);
    ClockJump {
        kind: r.req(&o, "kind", |r, v| match v {
            Json::Str(s) if s == "forward" => Jump::Forward,
            Json::Str(s) if s == "backward" => Jump::Backward,
            Json::Str(s) if s == "asleep" => Jump::Asleep,
            _ => {
                r.fail("expected forward, backward or asleep");
                Jump::Forward
            }
        }),
        seconds: r.req(&o, "seconds", uint),
        at: r.req(&o, "at", time),
        checked_at: r.req(&o, "checked_at", time),
        stale: r.req(&o, "stale", boolean),
    }
}

fn ahead(r: &mut Reader, v: &Json) -> Ahead {
    let o = r.object(v);
    Ahead {
        count: r.req(&o, "count", uint),
        max_s: r.req(&o, "max_s", uint),
        what: r.req(&o, "what", string),
        checked_at: r.req(&o, "checked_at", time),
        stale: r.req(&o, "stale", boolean),
    }
}

fn set_aside(r: &mut Reader, v: &Json) -> SetAside {
    let o = r.object(v);
    SetAside {
        file: r.req(&o, "file", string),
        aside: r.req(&o, "aside", string),
        at: r.opt(&o, "at", time),
        checked_at: r.req(&o, "checked_at", time),
    }
}

fn alerts(r: &mut Reader, v: &Json) -> AlertsView {
    let o = r.object(v);
    AlertsView {
        configured: r.req(&o, "configured", boolean),
        held: r.field(&o, "held", |r, v| r.list(v, held), Some(Vec::new())),
        acked: r.field(&o, "acked", |r, v| r.list(v, acked), Some(Vec::new())),
        channels: r.field(&o, "channels", |r, v| r.list(v, channel), Some(Vec::new())),
        reach: r.opt(&o, "reach", reach),
    }
}

fn reach(r: &mut Reader, v: &Json) -> Reach {
    let o = r.object(v);
    let mut count = |key: &'static str| r.req(&o, key, uint) as usize;
    Reach {
        agents_failed: count("agents_failed"),
        agents: count("agents"),
        hosts_failed: count("hosts_failed"),
        hosts: count("hosts"),
        blind: r.req(&o, "blind", boolean),
    }
}

fn held(r: &mut Reader, v: &Json) -> Held {
    let o = r.object(v);
    Held {
        key: r.req(&o, "key", string),
        until: r.opt(&o, "until", time),
        reason: r.field(&o, "reason", string, Some(String::new())),
        flaky: r.field(&o, "flaky", boolean, Some(false)),
        checked_at: r.req(&o, "checked_at", time),
    }
}

fn acked(r: &mut Reader, v: &Json) -> Acked {
    let o = r.object(v);
    Acked {
        key: r.req(&o, "key", string),
        at: r.req(&o, "at", time),
        via: r.field(&o, "via", string, Some(String::new())),
        checked_at: r.req(&o, "checked_at", time),
    }
}

fn channel(r: &mut Reader, v: &Json) -> ChannelState {
    let o = r.object(v);
    ChannelState {
        name: r.req(&o, "name", string),
        failing_since: r.opt(&o, "failing_since", time),
        reason: r.opt(&o, "reason", string),
        pending: r.field(&o, "pending", uint, Some(0)),
        checked_at: r.req(&o, "checked_at", time),
    }
}

fn transition(r: &mut Reader, v: &Json) -> Transition {
    let o = r.object(v);
    Transition {
        key: r.req(&o, "key", string),
        kind: r.req(&o, "kind", string),
        name: r.req(&o, "name", string),
        from: r.opt(&o, "from", band),
        to: r.req(&o, "to", band),
        at: r.req(&o, "at", time),
        reason: r.opt(&o, "reason", string),
    }
}

fn rules(r: &mut Reader, v: &Json) -> RulesView {
    let o = r.object(v);
    RulesView {
        no_reply_s: r.req(&o, "no_reply_s", uint),
        exchange_green_below_s: r.req(&o, "exchange_green_below_s", uint),
        exchange_amber_below_s: r.req(&o, "exchange_amber_below_s", uint),
        snapshot_stale_after_s: r.req(&o, "snapshot_stale_after_s", uint),
        backup_amber_after_s: r.field(&o, "backup_amber_after_s", uint, Some(0)),
        backup_red_after_s: r.field(&o, "backup_red_after_s", uint, Some(0)),
        window_amber_at_percent: r.field(&o, "window_amber_at_percent", uint, Some(0)),
        ack_within_s: r.field(&o, "ack_within_s", uint, Some(0)),
        worker_died_s: r.field(&o, "worker_died_s", uint, Some(0)),
        clock_step_s: r.field(&o, "clock_step_s", uint, Some(0)),
    }
}

fn sections(r: &mut Reader, v: &Json) -> Sections {
    let o = r.object(v);
    Sections {
        tasks: r.req(&o, "tasks", section),
        board: r.field(&o, "board", section, Some(SectionMeta::default())),
        live_tasks: r.field(&o, "live_tasks", section, Some(SectionMeta::default())),
        queue: r.field(&o, "queue", section, Some(SectionMeta::default())),
        agents: r.req(&o, "agents", section),
        systems: r.req(&o, "systems", section),
        backups: r.req(&o, "backups", section),
    }
}

fn section(r: &mut Reader, v: &Json) -> SectionMeta {
    let o = r.object(v);
    SectionMeta {
        configured: r.req(&o, "configured", boolean),
        checked_at: r.opt(&o, "checked_at", time),
        duration_ms: r.opt(&o, "duration_ms", uint),
        stale: r.req(&o, "stale", boolean),
    }
}

fn agent(r: &mut Reader, v: &Json) -> Agent {
    let o = r.object(v);
    Agent {
        name: r.req(&o, "name", string),
        endpoint: r.req(&o, "endpoint", string),
        plane: r.opt(&o, "plane", string),
        up: r.req(&o, "up", boolean),
        last_exchange_s: r.req(&o, "last_exchange_s", |r, v| r.probe(v, uint)),
        exchange_band: r.req(&o, "exchange_band", band),
        skills_count: r.req(&o, "skills_count", |r, v| r.probe(v, u32_)),
        lane: r.req(&o, "lane", |r, v| r.probe(v, string)),
        model: r.req(&o, "model", |r, v| r.probe(v, string)),
        window: r.req(&o, "window", |r, v| r.probe(v, window)),
        heartbeat: r.req(&o, "heartbeat", |r, v| r.probe(v, heartbeat)),
        band: r.req(&o, "band", band),
        status: r.req(&o, "status", asc),
        reason: r.opt(&o, "reason", string),
        audit_skipped_lines: r.field(&o, "audit_skipped_lines", uint, Some(0)),
        last_report_s: r.opt(&o, "last_report_s", uint),
        history: r.opt(&o, "history", history),
        checked_at: r.req(&o, "checked_at", time),
        stale: r.req(&o, "stale", boolean),
    }
}

fn heartbeat(r: &mut Reader, v: &Json) -> Heartbeat {
    let o = r.object(v);
    Heartbeat {
        dialect: r.req(&o, "dialect", string),
        latency_ms: r.req(&o, "latency_ms", uint),
        last_activity_at: r.req(&o, "last_activity_at", |r, v| r.probe(v, time)),
        in_flight: r.req(&o, "in_flight", |r, v| r.probe(v, strings)),
    }
}

fn window(r: &mut Reader, v: &Json) -> Window {
    let o = r.object(v);
    Window {
        model: r.req(&o, "model", |r, v| r.probe(v, string)),
        percent: r.req(&o, "percent", |r, v| r.probe(v, float)),
        status: r.req(&o, "status", |r, v| r.probe(v, string)),
        resets_at: r.req(&o, "resets_at", |r, v| r.probe(v, time)),
        band: r.field(&o, "band", band, Some(Band::Green)),
    }
}

fn tasks(r: &mut Reader, v: &Json) -> Tasks {
    let o = r.object(v);
    Tasks {
        board: r.req(&o, "board", |r, v| r.probe(v, board)),
        live: r.req(&o, "live", |r, v| r.probe(v, |r, v| r.list(v, live_task))),
        queue: r.field(
            &o,
            "queue",
            |r, v| r.probe(v, |r, v| r.list(v, queue_task)),
            Some(Probe::not_collected()),
        ),
        queue_unreadable: r.field(
            &o,
            "queue_unreadable",
            |r, v| r.list(v, unreadable_task),
            Some(Vec::new()),
        ),
        queue_left_out: r.field(
            &o,
            "queue_left_out",
            queue_left_out,
            Some(QueueLeftOut::default()),
        ),
    }
}

fn unreadable_task(r: &mut Reader, v: &Json) -> UnreadableTask {
    let o = r.object(v);
    UnreadableTask {
        id: r.req(&o, "id", string),
        reason: r.req(&o, "reason", string),
        band: r.req(&o, "band", band),
        status: r.req(&o, "status", asc),
        checked_at: r.req(&o, "checked_at", time),
        stale: r.req(&o, "stale", boolean),
    }
}

fn queue_left_out(r: &mut Reader, v: &Json) -> QueueLeftOut {
    let o = r.object(v);
    QueueLeftOut {
        finished: r.req(&o, "finished", u32_),
        dismissed: r.req(&o, "dismissed", u32_),
        ended: r.field(&o, "ended", |r, v| r.list(v, ended_task), Some(Vec::new())),
    }
}

fn ended_task(r: &mut Reader, v: &Json) -> EndedTask {
    let o = r.object(v);
    EndedTask {
        id: r.req(&o, "id", string),
        how: r.req(&o, "how", string),
        checked_at: r.req(&o, "checked_at", time),
        stale: r.req(&o, "stale", boolean),
    }
}

fn queue_task(r: &mut Reader, v: &Json) -> QueueTask {
    let o = r.object(v);
    QueueTask {
        id: r.req(&o, "id", string),
        title: r.req(&o, "title", string),
        owner: r.opt(&o, "owner", string),
        tagged: r.field(&o, "tagged", strings, Some(Vec::new())),
        created_by: r.req(&o, "created_by", string),
        created_at: r.req(&o, "created_at", time),
        deadline: r.opt(&o, "deadline", time),
        state: r.req(&o, "state", string),
        ack: r.opt(&o, "ack", queue_ack),
        blocked_on: r.opt(&o, "blocked_on", string),
        last_report_at: r.opt(&o, "last_report_at", time),
        status_message: r.opt(&o, "status_message", string),
        quiet_s: r.opt(&o, "quiet_s", uint),
        unacked_s: r.opt(&o, "unacked_s", uint),
        deadline_in_s: r.opt(&o, "deadline_in_s", int),
        turns_in_s: r.opt(&o, "turns_in_s", uint),
        worker_died: r.field(&o, "worker_died", boolean, Some(false)),
        band: r.req(&o, "band", band),
        status: r.req(&o, "status", asc),
        reason: r.opt(&o, "reason", string),
        checked_at: r.req(&o, "checked_at", time),
        stale: r.req(&o, "stale", boolean),
    }
}

fn queue_ack(r: &mut Reader, v: &Json) -> QueueAck {
    let o = r.object(v);
    QueueAck {
        kind: r.req(&o, "kind", string),
        by: r.req(&o, "by", string),
        at: r.req(&o, "at", time),
        eta: r.opt(&o, "eta", time),
        to: r.opt(&o, "to", string),
    }
}

fn board(r: &mut Reader, v: &Json) -> Board {
    let o = r.object(v);
    Board {
        columns: r.req(&o, "columns", strings),
        cards: r.req(&o, "cards", |r, v| r.list(v, card)),
        sources: r.field(
            &o,
            "sources",
            |r, v| r.list(v, board_source),
            Some(Vec::new()),
        ),
    }
}

fn board_source(r: &mut Reader, v: &Json) -> BoardSource {
    let o = r.object(v);
    BoardSource {
        name: r.req(&o, "name", string),
        plane: r.opt(&o, "plane", string),
        cards: r.req(&o, "cards", |r, v| r.probe(v, u32_)),
        projection: r.req(&o, "projection", |r, v| r.probe(v, string)),
        status: r.req(&o, "status", asc),
        reason: r.opt(&o, "reason", string),
        columns: r.field(
            &o,
            "columns",
            |r, v| r.list(v, column_count),
            Some(Vec::new()),
        ),
        attention_left_out: r.field(&o, "attention_left_out", left_out, Some(LeftOut::default())),
        checked_at: r.req(&o, "checked_at", time),
        stale: r.req(&o, "stale", boolean),
    }
}

fn column_count(r: &mut Reader, v: &Json) -> ColumnCount {
    let o = r.object(v);
    ColumnCount {
        column: r.req(&o, "column", string),
        cards: r.req(&o, "cards", u32_),
        left_out: r.field(&o, "left_out", u32_, Some(0)),
    }
}

fn left_out(r: &mut Reader, v: &Json) -> LeftOut {
    let o = r.object(v);
    LeftOut {
        red: r.req(&o, "red", u32_),
        amber: r.req(&o, "amber", u32_),
    }
}

fn card(r: &mut Reader, v: &Json) -> Card {
    let o = r.object(v);
    Card {
        board: r.req(&o, "board", string),
        id: r.req(&o, "id", string),
        title: r.req(&o, "title", string),
        status: r.req(&o, "status", string),
        assignee: r.opt(&o, "assignee", string),
        priority: r.opt(&o, "priority", int),
        age_s: r.field(&o, "age_s", uint, Some(0)),
        block_kind: r.opt(&o, "block_kind", string),
        latest_activity_at: r.opt(&o, "latest_activity_at", time),
        conditions: r.field(&o, "conditions", strings, Some(Vec::new())),
        band: r.field(&o, "band", band, Some(Band::Green)),
        checked_at: r.req(&o, "checked_at", time),
        stale: r.req(&o, "stale", boolean),
    }
}

fn live_task(r: &mut Reader, v: &Json) -> LiveTask {
    let o = r.object(v);
    LiveTask {
        id: r.req(&o, "id", string),
        agent: r.req(&o, "agent", string),
        state: r.req(&o, "state", |r, v| r.probe(v, string)),
        age_s: r.req(&o, "age_s", uint),
        stuck: r.req(&o, "stuck", boolean),
        status: r.req(&o, "status", asc),
        reason: r.opt(&o, "reason", string),
        checked_at: r.req(&o, "checked_at", time),
        stale: r.req(&o, "stale", boolean),
    }
}

fn system(r: &mut Reader, v: &Json) -> System {
    let o = r.object(v);
    System {
        host: r.req(&o, "host", string),
        source: r.field(&o, "source", string, Some(String::new())),
        ram_used_gb: r.req(&o, "ram_used_gb", |r, v| r.probe(v, float)),
        ram_total_gb: r.req(&o, "ram_total_gb", |r, v| r.probe(v, float)),
        disk_free_gb: r.req(&o, "disk_free_gb", |r, v| r.probe(v, float)),
        services: r.req(&o, "services", |r, v| r.list(v, named_check)),
        tunnels: r.req(&o, "tunnels", |r, v| r.list(v, named_check)),
        crons: r.req(&o, "crons", |r, v| r.list(v, cron_check)),
        vault_parity: r.req(&o, "vault_parity", |r, v| r.probe(v, boolean)),
        vault_reason: r.opt(&o, "vault_reason", string),
        band: r.field(&o, "band", band, Some(Band::Green)),
        status: r.req(&o, "status", asc),
        reason: r.opt(&o, "reason", string),
        history: r.opt(&o, "history", history),
        checked_at: r.req(&o, "checked_at", time),
        stale: r.req(&o, "stale", boolean),
    }
}

fn named_check(r: &mut Reader, v: &Json) -> NamedCheck {
    let o = r.object(v);
    // Services write their state as `active`, tunnels as `up` (spec §6.1); `ok` is the field.
    let key = ["ok", "active", "up"]
        .into_iter()
        .find(|k| o.get(k).is_some())
        .unwrap_or("ok");
    NamedCheck {
        name: r.req(&o, "name", string),
        ok: r.req(&o, key, |r, v| r.probe(v, boolean)),
        reason: r.opt(&o, "reason", string),
        uptime_24h_pct: r.opt(&o, "uptime_24h_pct", float),
        checked_at: r.req(&o, "checked_at", time),
        stale: r.req(&o, "stale", boolean),
    }
}

fn cron_check(r: &mut Reader, v: &Json) -> CronCheck {
    let o = r.object(v);
    CronCheck {
        name: r.req(&o, "name", string),
        state: r.req(&o, "state", cron_state),
        last_ok_s: r.req(&o, "last_ok_s", |r, v| r.probe(v, uint)),
        period_s: r.req(&o, "period_s", uint),
        grace_s: r.req(&o, "grace_s", uint),
        reason: r.opt(&o, "reason", string),
        uptime_24h_pct: r.opt(&o, "uptime_24h_pct", float),
        checked_at: r.req(&o, "checked_at", time),
        stale: r.req(&o, "stale", boolean),
    }
}

fn backups(r: &mut Reader, v: &Json) -> Backups {
    let o = r.object(v);
    Backups {
        name: r.field(&o, "name", string, Some(String::new())),
        gdrive_latest: r.req(&o, "gdrive_latest", |r, v| r.probe(v, time)),
        age_h: r.req(&o, "age_h", |r, v| r.probe(v, float)),
        band: r.field(&o, "band", band, Some(Band::Green)),
        status: r.field(&o, "status", asc, Some(Asc::SUCCESS)),
        reason: r.opt(&o, "reason", string),
        checked_at: r.req(&o, "checked_at", time),
        stale: r.req(&o, "stale", boolean),
    }
}

fn history(r: &mut Reader, v: &Json) -> History {
    let o = r.object(v);
    History {
        uptime_24h_pct: r.opt(&o, "uptime_24h_pct", float),
        strip: r.req(&o, "strip", string),
        slot_s: r.req(&o, "slot_s", uint),
        samples: r.req(&o, "samples", u32_),
        since: r.opt(&o, "since", time),
    }
}

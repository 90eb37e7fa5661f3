//! Reads `status.json` into the model's types: the browser's own `JSON.parse`, then this small
//! reader, instead of serde_json and serde's derived visitors, which were a third of the page's
//! WebAssembly (scripts/size-report).
//!
//! It keeps the model's serde rules exactly: required fields, `#[serde(default)]`s, `Option`s
//! (missing or null), the `active`/`up` aliases of a check's state, and [`Probe`]'s `"unknown"`
//! and `"error: <reason>"` strings; unknown keys are ignored. The tests decode what the model's
//! serde writes, and every one-field change of it, both ways, and compare. A field added to the
//! model stops this file compiling until it is read here (and belongs in the tests' `full()`).
//!
//! Readers never stop early: a missing or wrong value reads as a placeholder and the first
//! error, with its place, decides in the end. (An early return per field costs a clean-up path
//! per field: it made this reader twice the size.)
//!
//! Two things the browser cannot tell apart are accepted alike: `1.0` where a whole number is
//! due (JSON.parse gives both as 1), and whole numbers above 2^53 are read as the nearest float.

use chrono::{DateTime, Duration, NaiveDate, Utc};
use fleetdash_model::{
    Agent, AlertsView, Asc, Backups, Band, Board, BoardSource, Card, ChannelState, ColumnCount,
    CronCheck, CronState, Heartbeat, Held, History, LeftOut, LiveTask, NamedCheck, Probe, QueueAck,
    QueueTask, RulesView, SectionMeta, Sections, Snapshot, System, Tasks, Transition, Window,
};

/// A JSON value as `JSON.parse` hands it over (every number is an f64, as in JavaScript).
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

/// The snapshot in `text`, or what is wrong with it and where
/// ("agents[2].heartbeat.latency_ms: expected a whole number").
pub fn parse_snapshot(text: &str) -> Result<Snapshot, String> {
    let value = js_sys::JSON::parse(text).map_err(|e| {
        let why = js_sys::Error::from(e).message();
        format!("not JSON: {}", String::from(why))
    })?;
    snapshot(&from_js(&value))
}

/// The tree `JSON.parse` built, read into Rust once (a few hundred values).
fn from_js(value: &wasm_bindgen::JsValue) -> Json {
    use wasm_bindgen::JsCast;
    if let Some(b) = value.as_bool() {
        Json::Bool(b)
    } else if let Some(n) = value.as_f64() {
        Json::Num(n)
    } else if let Some(s) = value.as_string() {
        Json::Str(s)
    } else if js_sys::Array::is_array(value) {
        Json::Arr(
            js_sys::Array::from(value)
                .iter()
                .map(|v| from_js(&v))
                .collect(),
        )
    } else if value.is_object() {
        let entries = js_sys::Object::entries(value.unchecked_ref());
        Json::Obj(
            entries
                .iter()
                .map(|pair| {
                    let pair = js_sys::Array::from(&pair);
                    (
                        pair.get(0).as_string().unwrap_or_default(),
                        from_js(&pair.get(1)),
                    )
                })
                .collect(),
        )
    } else {
        Json::Null
    }
}

/// The snapshot in `v`, or the first thing wrong with it and where.
pub fn snapshot(v: &Json) -> Result<Snapshot, String> {
    let mut r = Reader::default();
    let s = read_snapshot(&mut r, v);
    r.error.map_or(Ok(s), Err)
}

/// Where the reader is, and the first error it met.
#[derive(Default)]
struct Reader {
    path: Vec<Step>,
    error: Option<String>,
}

enum Step {
    Key(&'static str),
    Index(usize),
}

/// A reader of one kind of value: a plain `fn`, so each generic helper below is compiled once
/// per value type, not once per field.
type ReadFn<T> = fn(&mut Reader, &Json) -> T;

/// The fields of one JSON object (none when the value was not an object).
struct Obj<'j>(&'j [(String, Json)]);

impl Obj<'_> {
    fn get(&self, key: &str) -> Option<&Json> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

impl Reader {
    /// Keeps the first error, with the path it was found at ("agents[2].up: ...").
    fn fail(&mut self, what: &str) {
        if self.error.is_some() {
            return;
        }
        let mut at = String::new();
        for step in &self.path {
            match step {
                Step::Key(k) if at.is_empty() => at.push_str(k),
                Step::Key(k) => {
                    at.push('.');
                    at.push_str(k);
                }
                Step::Index(i) => at.push_str(&format!("[{i}]")),
            }
        }
        self.error = Some(if at.is_empty() {
            what.to_string()
        } else {
            format!("{at}: {what}")
        });
    }

    fn object<'j>(&mut self, v: &'j Json) -> Obj<'j> {
        match v {
            Json::Obj(fields) => Obj(fields),
            _ => {
                self.fail("expected an object");
                Obj(&[])
            }
        }
    }

    /// `read` at `key`; a missing key is an error (read from null for a placeholder), or
    /// `Some(default)` (`#[serde(default)]`: null is still wrong).
    fn field<T>(&mut self, o: &Obj, key: &'static str, read: ReadFn<T>, default: Option<T>) -> T {
        self.path.push(Step::Key(key));
        let value = match (o.get(key), default) {
            (Some(v), _) => read(self, v),
            (None, Some(default)) => default,
            (None, None) => {
                self.fail("missing");
                read(self, &Json::Null)
            }
        };
        self.path.pop();
        value
    }

    /// A required field.
    fn req<T>(&mut self, o: &Obj, key: &'static str, read: ReadFn<T>) -> T {
        self.field(o, key, read, None)
    }

    /// An `Option` field: `None` when missing or null.
    fn opt<T>(&mut self, o: &Obj, key: &'static str, read: ReadFn<T>) -> Option<T> {
        match o.get(key) {
            None | Some(Json::Null) => None,
            Some(_) => Some(self.req(o, key, read)),
        }
    }

    /// `"unknown"`, `"error: <reason>"`, or the value itself (the model's `Probe` deserializer).
    fn probe<T>(&mut self, v: &Json, read: ReadFn<T>) -> Probe<T> {
        if let Json::Str(s) = v {
            if s == "unknown" {
                return Probe::Unknown;
            }
            if let Some(reason) = s.strip_prefix("error: ") {
                return Probe::Error(reason.to_string());
            }
        }
        Probe::Value(read(self, v))
    }

    fn list<T>(&mut self, v: &Json, read: ReadFn<T>) -> Vec<T> {
        let Json::Arr(items) = v else {
            self.fail("expected a list");
            return Vec::new();
        };
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            self.path.push(Step::Index(i));
            out.push(read(self, item));
            self.path.pop();
        }
        out
    }
}

fn string(r: &mut Reader, v: &Json) -> String {
    match v {
        Json::Str(s) => s.clone(),
        _ => {
            r.fail("expected a string");
            String::new()
        }
    }
}

fn boolean(r: &mut Reader, v: &Json) -> bool {
    match v {
        Json::Bool(b) => *b,
        _ => {
            r.fail("expected true or false");
            false
        }
    }
}

fn float(r: &mut Reader, v: &Json) -> f64 {
    match v {
        Json::Num(n) => *n,
        _ => {
            r.fail("expected a number");
            0.0
        }
    }
}

/// A whole number in `min..=max` (as f64: exact up to 2^53).
fn whole(r: &mut Reader, v: &Json, min: f64, max: f64) -> f64 {
    match v {
        Json::Num(n) if n.fract() == 0.0 && (min..=max).contains(n) => *n,
        _ => {
            r.fail("expected a whole number in range");
            0.0
        }
    }
}

fn uint(r: &mut Reader, v: &Json) -> u64 {
    whole(r, v, 0.0, u64::MAX as f64) as u64
}

fn u32_(r: &mut Reader, v: &Json) -> u32 {
    whole(r, v, 0.0, f64::from(u32::MAX)) as u32
}

fn int(r: &mut Reader, v: &Json) -> i64 {
    whole(r, v, i64::MIN as f64, i64::MAX as f64) as i64
}

fn time(r: &mut Reader, v: &Json) -> DateTime<Utc> {
    match v {
        Json::Str(s) => parse_time(s),
        _ => None,
    }
    .unwrap_or_else(|| {
        r.fail("expected an RFC 3339 time");
        DateTime::default()
    })
}
/// An RFC 3339 time as chrono writes it ("2026-11-30T05:40:00.123456Z"), or with an offset
/// ("+02:00", "+0200") and `t` or a space between date and time, as chrono's parser also takes.
/// By hand: chrono's parsing machinery cost the page 18 KB.
pub fn parse_time(s: &str) -> Option<DateTime<Utc>> {
    let b = s.as_bytes();
    let digits = |from: usize, len: usize| -> Option<u32> {
        b.get(from..from + len)?.iter().try_fold(0u32, |n, &c| {
            c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0'))
        })
    };
    let punctuated = b.get(4) == Some(&b'-')
        && b.get(7) == Some(&b'-')
        && matches!(b.get(10), Some(b'T' | b't' | b' '))
        && b.get(13) == Some(&b':')
        && b.get(16) == Some(&b':');
    if !punctuated {
        return None;
    }
    let date = NaiveDate::from_ymd_opt(digits(0, 4)? as i32, digits(5, 2)?, digits(8, 2)?)?;
    let (hour, minute, second) = (digits(11, 2)?, digits(14, 2)?, digits(17, 2)?);
    let mut i = 19;
    let mut nanos = 0;
    if b.get(i) == Some(&b'.') {
        let start = i + 1;
        i = start;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            // Digits past the ninth (below a nanosecond) are dropped, as chrono does.
            if i - start < 9 {
                nanos = nanos * 10 + u32::from(b[i] - b'0');
            }
            i += 1;
        }
        if i == start {
            return None;
        }
        nanos *= 10u32.pow(9u32.saturating_sub((i - start) as u32));
    }
    let offset_minutes = match &b[i..] {
        b"Z" | b"z" => 0,
        [sign @ (b'+' | b'-'), rest @ ..] => {
            let (h, m) = match rest {
                [_, _, b':', _, _] => (digits(i + 1, 2)?, digits(i + 4, 2)?),
                [_, _, _, _] => (digits(i + 1, 2)?, digits(i + 3, 2)?),
                _ => return None,
            };
            if h > 23 || m > 59 {
                return None;
            }
            let minutes = i64::from(h * 60 + m);
            if *sign == b'-' { -minutes } else { minutes }
        }
        _ => return None,
    };
    let local = date
        .and_hms_nano_opt(hour, minute, second, nanos)?
        .and_utc();
    Some(local - Duration::minutes(offset_minutes))
}

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

fn read_snapshot(r: &mut Reader, v: &Json) -> Snapshot {
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
    }
}

fn alerts(r: &mut Reader, v: &Json) -> AlertsView {
    let o = r.object(v);
    AlertsView {
        configured: r.req(&o, "configured", boolean),
        held: r.field(&o, "held", |r, v| r.list(v, held), Some(Vec::new())),
        channels: r.field(&o, "channels", |r, v| r.list(v, channel), Some(Vec::new())),
    }
}

fn held(r: &mut Reader, v: &Json) -> Held {
    let o = r.object(v);
    Held {
        key: r.req(&o, "key", string),
        until: r.req(&o, "until", time),
        reason: r.field(&o, "reason", string, Some(String::new())),
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

fn strings(r: &mut Reader, v: &Json) -> Vec<String> {
    r.list(v, string)
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn from_serde(v: &Value) -> Json {
        match v {
            Value::Null => Json::Null,
            Value::Bool(b) => Json::Bool(*b),
            Value::Number(n) => Json::Num(n.as_f64().unwrap()),
            Value::String(s) => Json::Str(s.clone()),
            Value::Array(items) => Json::Arr(items.iter().map(from_serde).collect()),
            Value::Object(map) => Json::Obj(
                map.iter()
                    .map(|(k, v)| (k.clone(), from_serde(v)))
                    .collect(),
            ),
        }
    }

    fn t(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    fn history() -> History {
        History {
            uptime_24h_pct: Some(97.9),
            strip: "..udp".into(),
            slot_s: 1800,
            samples: 38,
            since: Some(t("2026-11-29T15:15:00Z")),
        }
    }

    /// Every field of the model used at least once with a value, and every optional one both
    /// present and absent; probes as values, "unknown" and errors. A field added to the model
    /// gets a value here too, so that the field-by-field test below covers it.
    fn full() -> Snapshot {
        let at = t("2026-11-30T05:40:12.345678Z");
        let rules = RulesView {
            no_reply_s: 300,
            exchange_green_below_s: 1800,
            exchange_amber_below_s: 21600,
            snapshot_stale_after_s: 600,
            backup_amber_after_s: 93600,
            backup_red_after_s: 172800,
            window_amber_at_percent: 90,
            ack_within_s: 600,
        };
        let mut s = Snapshot::empty(at, rules);
        s.stale_reasons = vec!["board: 12 min old".into()];
        let meta = SectionMeta {
            configured: true,
            checked_at: Some(at),
            duration_ms: Some(412),
            stale: false,
        };
        s.sections = Sections {
            tasks: meta.clone(),
            board: meta.clone(),
            live_tasks: SectionMeta::default(),
            queue: meta.clone(),
            agents: meta.clone(),
            systems: meta.clone(),
            backups: meta,
        };
        s.agents = Probe::Value(vec![
            Agent {
                name: "hub".into(),
                endpoint: "http://127.0.0.1:9001/".into(),
                plane: Some("lab".into()),
                up: true,
                last_exchange_s: Probe::Value(42),
                exchange_band: Band::Green,
                skills_count: Probe::Value(3),
                lane: Probe::Value("ops".into()),
                model: Probe::Value("gpt".into()),
                window: Probe::Value(Window {
                    model: Probe::Value("gpt".into()),
                    percent: Probe::Value(93.5),
                    status: Probe::Value("ok".into()),
                    resets_at: Probe::Value(t("2026-11-30T09:00:00Z")),
                    band: Band::Amber,
                }),
                heartbeat: Probe::Value(Heartbeat {
                    dialect: "v1".into(),
                    latency_ms: 12,
                    last_activity_at: Probe::Value(at),
                    in_flight: Probe::Value(vec!["t1".into(), "t2".into()]),
                }),
                band: Band::Amber,
                status: Asc::SUCCESS_WITH_WARNINGS,
                reason: Some("window at 93 %".into()),
                audit_skipped_lines: 2,
                last_report_s: Some(75),
                history: Some(history()),
                checked_at: at,
                stale: false,
            },
            Agent {
                name: "down".into(),
                endpoint: String::new(),
                plane: None,
                up: false,
                last_exchange_s: Probe::Unknown,
                exchange_band: Band::Red,
                skills_count: Probe::error("connection refused"),
                lane: Probe::Unknown,
                model: Probe::error("connection refused"),
                window: Probe::Unknown,
                heartbeat: Probe::Value(Heartbeat {
                    dialect: "v0.3".into(),
                    latency_ms: 0,
                    last_activity_at: Probe::Unknown,
                    in_flight: Probe::error("not in reply"),
                }),
                band: Band::Red,
                status: Asc::DEPENDENCY_UNAVAILABLE,
                reason: None,
                audit_skipped_lines: 0,
                last_report_s: None,
                history: None,
                checked_at: at,
                stale: true,
            },
        ]);
        let check = |name: &str, ok: Probe<bool>| NamedCheck {
            name: name.into(),
            reason: (ok != Probe::Value(true)).then(|| "failed".into()),
            uptime_24h_pct: ok.value().map(|_| 50.0),
            ok,
            checked_at: at,
            stale: false,
        };
        s.systems = Probe::Value(vec![System {
            host: "prod".into(),
            source: "ssh".into(),
            ram_used_gb: Probe::Value(1.25),
            ram_total_gb: Probe::Unknown,
            disk_free_gb: Probe::error("df failed"),
            services: vec![
                check("nginx", Probe::Value(false)),
                check("sshd", Probe::Value(true)),
            ],
            tunnels: vec![check("lab", Probe::error("refused"))],
            crons: vec![
                CronCheck {
                    name: "backup".into(),
                    state: CronState::Late,
                    last_ok_s: Probe::Value(90000),
                    period_s: 86400,
                    grace_s: 3600,
                    reason: Some("late".into()),
                    uptime_24h_pct: Some(100.0),
                    checked_at: at,
                    stale: false,
                },
                CronCheck {
                    name: "never".into(),
                    state: CronState::Down,
                    last_ok_s: Probe::Unknown,
                    period_s: 60,
                    grace_s: 0,
                    reason: None,
                    uptime_24h_pct: None,
                    checked_at: at,
                    stale: true,
                },
            ],
            vault_parity: Probe::Value(false),
            vault_reason: Some("3 uncommitted changes".into()),
            band: Band::Red,
            status: Asc::FAILED_PRECONDITION,
            reason: Some("nginx failed".into()),
            history: Some(history()),
            checked_at: at,
            stale: false,
        }]);
        s.backups = Probe::Value(Backups {
            name: "gdrive".into(),
            gdrive_latest: Probe::Value(t("2026-11-29T05:00:00Z")),
            age_h: Probe::Value(24.7),
            band: Band::Amber,
            status: Asc::SUCCESS_WITH_WARNINGS,
            reason: Some("a day old".into()),
            checked_at: at,
            stale: false,
        });
        let card = |id: &str, band: Band| Card {
            board: "research".into(),
            id: id.into(),
            title: format!("card {id}"),
            status: "blocked".into(),
            assignee: Some("ada".into()),
            priority: Some(-2),
            age_s: 7200,
            block_kind: Some("needs_input".into()),
            latest_activity_at: Some(at),
            conditions: vec!["crashed".into()],
            band,
            checked_at: at,
            stale: false,
        };
        let bare = Card {
            assignee: None,
            priority: None,
            block_kind: None,
            latest_activity_at: None,
            conditions: Vec::new(),
            ..card("c3", Band::Green)
        };
        s.tasks = Tasks {
            board: Probe::Value(Board {
                columns: vec!["todo".into(), "blocked".into()],
                cards: vec![card("c1", Band::Red), card("c2", Band::Amber), bare],
                sources: vec![BoardSource {
                    name: "research".into(),
                    plane: Some("lab".into()),
                    cards: Probe::Value(3),
                    projection: Probe::error("refused: hand-edited"),
                    status: Asc::INTEGRITY_CHECK_FAILED,
                    reason: Some("projection refused".into()),
                    columns: vec![
                        ColumnCount {
                            column: "todo".into(),
                            cards: 1,
                            left_out: 0,
                        },
                        ColumnCount {
                            column: "blocked".into(),
                            cards: 70_000,
                            left_out: 69_998,
                        },
                    ],
                    attention_left_out: LeftOut {
                        red: 7,
                        amber: 69_991,
                    },
                    checked_at: at,
                    stale: false,
                }],
            }),
            live: Probe::Value(vec![LiveTask {
                id: "task-1".into(),
                agent: "hub".into(),
                state: Probe::Value("TASK_STATE_WORKING".into()),
                age_s: 301,
                stuck: true,
                status: Asc::TIMEOUT,
                reason: Some("no reply for 5 min".into()),
                checked_at: at,
                stale: false,
            }]),
            queue: Probe::Value(vec![QueueTask {
                id: "q_1".into(),
                title: "Rotate the vault key".into(),
                owner: Some("sol".into()),
                tagged: vec!["mira".into(), "sol".into()],
                created_by: "operator".into(),
                created_at: at,
                deadline: Some(at),
                state: "TASK_STATE_WORKING".into(),
                ack: Some(QueueAck {
                    kind: "owning".into(),
                    by: "sol".into(),
                    at,
                    eta: Some(at),
                    to: Some("min".into()),
                }),
                blocked_on: Some("t_1: disk full".into()),
                last_report_at: Some(at),
                status_message: Some("[task orphaned — no reply produced]".into()),
                worker_died: true,
                band: Band::Red,
                status: Asc::TIMEOUT,
                reason: Some("deadline passed".into()),
                checked_at: at,
                stale: false,
            }]),
        };
        s.transitions = vec![
            Transition {
                key: "agent:hub".into(),
                kind: "agent".into(),
                name: "hub".into(),
                from: Some(Band::Green),
                to: Band::Red,
                at,
                reason: Some("no reply".into()),
            },
            Transition {
                key: "backups".into(),
                kind: "backups".into(),
                name: "gdrive".into(),
                from: None,
                to: Band::Amber,
                at,
                reason: None,
            },
        ];
        s.alerts = AlertsView {
            configured: true,
            held: vec![Held {
                key: "host:lab".into(),
                until: at,
                reason: "disk swap".into(),
                checked_at: at,
            }],
            channels: vec![ChannelState {
                name: "ntfy".into(),
                failing_since: Some(at),
                reason: Some("503".into()),
                pending: 3,
                checked_at: at,
            }],
        };
        s
    }

    /// The reader's answer and serde's for the same JSON: the same snapshot, or both refuse.
    fn agree(v: &Value, what: &str) {
        let ours = snapshot(&from_serde(v));
        let serde = serde_json::from_value::<Snapshot>(v.clone());
        match (&ours, &serde) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "{what}"),
            (Err(_), Err(_)) => {}
            _ => {
                let short = |r: String| r.chars().take(200).collect::<String>();
                panic!(
                    "{what}: the reader says {}, serde says {}",
                    short(format!("{ours:?}")),
                    short(format!("{serde:?}"))
                )
            }
        }
    }

    #[test]
    fn reads_what_the_model_writes() {
        let s = full();
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(snapshot(&from_serde(&v)), Ok(s));
        let empty = Snapshot::empty(t("2026-11-30T05:40:00Z"), full().rules);
        let v = serde_json::to_value(&empty).unwrap();
        assert_eq!(snapshot(&from_serde(&v)), Ok(empty));
    }

    /// Every key of the full snapshot removed, nulled, or given another kind of value, one at
    /// a time: the reader accepts exactly what serde accepts, and reads it the same.
    #[test]
    fn accepts_and_refuses_what_serde_does_field_by_field() {
        let base = serde_json::to_value(full()).unwrap();
        let mut paths = Vec::new();
        collect_keys(&base, String::new(), &mut paths);
        assert!(paths.len() > 150, "only {} keys", paths.len());
        let others = [
            Value::Null,
            json!("unknown"),
            json!("error: probe failed"),
            json!("x"),
            json!("2026-11-30T07:40:00.5+02:00"),
            json!(1.5),
            json!(-1),
            json!(7),
            json!(70000),
            json!(true),
            json!({}),
            json!([]),
            json!(["a"]),
            json!("green"),
            json!("late"),
        ];
        let mut changed = 0;
        for path in &paths {
            let mut removed = base.clone();
            let (parent, key) = path.rsplit_once('/').unwrap();
            removed
                .pointer_mut(parent)
                .and_then(Value::as_object_mut)
                .unwrap()
                .remove(key);
            agree(&removed, &format!("{path} removed"));
            for other in &others {
                let mut v = base.clone();
                *v.pointer_mut(path).unwrap() = other.clone();
                agree(&v, &format!("{path} = {other}"));
                changed += 1;
            }
        }
        assert!(changed > 2000);
    }

    fn collect_keys(v: &Value, at: String, out: &mut Vec<String>) {
        match v {
            Value::Object(map) => {
                for (k, child) in map {
                    let path = format!("{at}/{k}");
                    out.push(path.clone());
                    collect_keys(child, path, out);
                }
            }
            Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    collect_keys(child, format!("{at}/{i}"), out);
                }
            }
            _ => {}
        }
    }

    #[test]
    fn an_error_names_the_field_it_is_in() {
        let mut v = serde_json::to_value(full()).unwrap();
        v["agents"][1]["heartbeat"]["latency_ms"] = json!("slow");
        assert_eq!(
            snapshot(&from_serde(&v)).unwrap_err(),
            "agents[1].heartbeat.latency_ms: expected a whole number in range"
        );
        v["agents"][1]["heartbeat"]
            .as_object_mut()
            .unwrap()
            .remove("dialect");
        assert_eq!(
            snapshot(&from_serde(&v)).unwrap_err(),
            "agents[1].heartbeat.dialect: missing"
        );
        assert_eq!(
            snapshot(&Json::Arr(Vec::new())).unwrap_err(),
            "expected an object"
        );
    }

    /// The times chrono writes and the variants its parser takes, read to the nanosecond as
    /// chrono reads them; what it refuses is refused.
    #[test]
    fn times_read_as_chrono_reads_them() {
        for s in [
            "2026-11-30T05:40:00Z",
            "2026-11-30T05:40:00.123456Z",
            "2026-11-30T05:40:00.123456789Z",
            "2026-11-30T05:40:00.1234567891Z",
            "2026-11-30T05:40:00.5z",
            "2026-11-30t05:40:00Z",
            "2026-11-30 05:40:00Z",
            "2026-11-30T05:40:00+02:00",
            "2026-11-30T05:40:00.25-09:30",
            "2026-11-30T05:40:00+0200",
            "2024-02-29T23:59:59-00:00",
            "0001-01-01T00:00:00Z",
        ] {
            let chrono: DateTime<Utc> = s.parse().unwrap();
            assert_eq!(parse_time(s), Some(chrono), "{s}");
        }
        for s in [
            "",
            "2026-11-30",
            "2026-11-30T05:40Z",
            "2026-11-30T05:40:00",
            "2026-11-30T05:40:00.Z",
            "2026-11-30T25:40:00Z",
            "2026-02-30T05:40:00Z",
            "2026-11-30T05:40:00+24:00",
            "2026-11-30T05:40:00+02",
            "2026-11-30T05:40:00Zjunk",
            "2026/11/30T05:40:00Z",
            "yesterday",
            "2026-11-30T05:40:00ü",
        ] {
            assert!(s.parse::<DateTime<Utc>>().is_err(), "chrono takes {s}");
            assert_eq!(parse_time(s), None, "{s}");
        }
    }
}

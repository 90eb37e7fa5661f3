//! Reads `status.json` into the model's types: the browser's own `JSON.parse`, then this small
//! reader, instead of serde_json and serde's derived visitors, which were a third of the page's
//! WebAssembly (scripts/size-report).
//!
//! It keeps the model's serde rules exactly: required fields, `#[serde(default)]`s, `Option`s
//! (missing or null), the `active`/`up` aliases of a check's state, and [`Probe`]'s `"unknown"`
//! and `"error: <reason>"` strings; unknown keys are ignored. The tests decode what the model's
//! serde writes, and every one-field change of it, both ways, and compare. A field added to the
//! model stops this file compiling until it is read here.
//!
//! Two things the browser cannot tell apart are accepted alike: `1.0` where a whole number is
//! due (JSON.parse gives both as 1), and whole numbers above 2^53 are read as the nearest float.

use chrono::{DateTime, Duration, NaiveDate, Utc};
use fleetdash_model::{
    Agent, Asc, Backups, Band, Board, BoardSource, Card, CronCheck, CronState, Heartbeat, History,
    LiveTask, NamedCheck, Probe, RulesView, SectionMeta, Sections, Snapshot, System, Tasks, Window,
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

/// A value, or where and why it could not be read: `.agents[2].up: expected true or false`
/// while it travels outwards (the path grows at each level), without the first dot at the end.
type Read<T> = Result<T, String>;

/// The snapshot in `text`, or what is wrong with it and where
/// ("agents[2].heartbeat.latency_ms: expected a whole number").
pub fn parse_snapshot(text: &str) -> Read<Snapshot> {
    let value = js_sys::JSON::parse(text).map_err(|e| {
        let why = js_sys::Error::from(e).message();
        format!("not JSON: {}", String::from(why))
    })?;
    snapshot(&from_js(&value)).map_err(|e| e.trim_start_matches('.').to_string())
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

/// The fields of one JSON object. Readers are plain `fn`s, so each generic helper below is
/// compiled once per value type, not once per field.
struct Obj<'a>(&'a [(String, Json)]);

fn object(v: &Json) -> Read<Obj<'_>> {
    match v {
        Json::Obj(fields) => Ok(Obj(fields)),
        _ => Err(": expected an object".into()),
    }
}

/// Prefixes an error with the field it happened in.
fn at(key: &str, e: String) -> String {
    format!(".{key}{e}")
}

impl<'a> Obj<'a> {
    fn get(&self, key: &str) -> Option<&'a Json> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// A required field.
    fn req<T>(&self, key: &str, read: fn(&Json) -> Read<T>) -> Read<T> {
        match self.get(key) {
            Some(v) => read(v).map_err(|e| at(key, e)),
            None => Err(at(key, ": missing".into())),
        }
    }

    /// A field with `#[serde(default)]`: `default` when missing (null is still wrong).
    fn or<T>(&self, key: &str, read: fn(&Json) -> Read<T>, default: T) -> Read<T> {
        match self.get(key) {
            Some(v) => read(v).map_err(|e| at(key, e)),
            None => Ok(default),
        }
    }

    /// An `Option` field: `None` when missing or null.
    fn opt<T>(&self, key: &str, read: fn(&Json) -> Read<T>) -> Read<Option<T>> {
        match self.get(key) {
            None | Some(Json::Null) => Ok(None),
            Some(v) => read(v).map(Some).map_err(|e| at(key, e)),
        }
    }

    /// A required [`Probe`] field.
    fn probe<T>(&self, key: &str, read: fn(&Json) -> Read<T>) -> Read<Probe<T>> {
        let v = self.get(key).ok_or_else(|| at(key, ": missing".into()))?;
        probe(v, read).map_err(|e| at(key, e))
    }

    /// A required list field.
    fn list<T>(&self, key: &str, read: fn(&Json) -> Read<T>) -> Read<Vec<T>> {
        let v = self.get(key).ok_or_else(|| at(key, ": missing".into()))?;
        list(v, read).map_err(|e| at(key, e))
    }

    /// A list field with `#[serde(default)]`.
    fn list_or_empty<T>(&self, key: &str, read: fn(&Json) -> Read<T>) -> Read<Vec<T>> {
        match self.get(key) {
            Some(v) => list(v, read).map_err(|e| at(key, e)),
            None => Ok(Vec::new()),
        }
    }
}

/// `"unknown"`, `"error: <reason>"`, or the value itself (the model's `Probe` deserializer).
fn probe<T>(v: &Json, read: fn(&Json) -> Read<T>) -> Read<Probe<T>> {
    if let Json::Str(s) = v {
        if s == "unknown" {
            return Ok(Probe::Unknown);
        }
        if let Some(reason) = s.strip_prefix("error: ") {
            return Ok(Probe::Error(reason.to_string()));
        }
    }
    read(v).map(Probe::Value)
}

fn list<T>(v: &Json, read: fn(&Json) -> Read<T>) -> Read<Vec<T>> {
    let Json::Arr(items) = v else {
        return Err(": expected a list".into());
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| read(item).map_err(|e| format!("[{i}]{e}")))
        .collect()
}

fn string(v: &Json) -> Read<String> {
    match v {
        Json::Str(s) => Ok(s.clone()),
        _ => Err(": expected a string".into()),
    }
}

fn boolean(v: &Json) -> Read<bool> {
    match v {
        Json::Bool(b) => Ok(*b),
        _ => Err(": expected true or false".into()),
    }
}

fn float(v: &Json) -> Read<f64> {
    match v {
        Json::Num(n) => Ok(*n),
        _ => Err(": expected a number".into()),
    }
}

/// A whole number in `min..=max` (as f64: exact up to 2^53).
fn whole(v: &Json, min: f64, max: f64) -> Read<f64> {
    match v {
        Json::Num(n) if n.fract() == 0.0 && (min..=max).contains(n) => Ok(*n),
        _ => Err(": expected a whole number in range".into()),
    }
}

fn uint(v: &Json) -> Read<u64> {
    whole(v, 0.0, u64::MAX as f64).map(|n| n as u64)
}

fn u32_(v: &Json) -> Read<u32> {
    whole(v, 0.0, f64::from(u32::MAX)).map(|n| n as u32)
}

fn int(v: &Json) -> Read<i64> {
    whole(v, i64::MIN as f64, i64::MAX as f64).map(|n| n as i64)
}

fn time(v: &Json) -> Read<DateTime<Utc>> {
    match v {
        Json::Str(s) => parse_time(s).ok_or_else(|| ": expected an RFC 3339 time".into()),
        _ => Err(": expected an RFC 3339 time".into()),
    }
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

fn band(v: &Json) -> Read<Band> {
    match v {
        Json::Str(s) if s == "green" => Ok(Band::Green),
        Json::Str(s) if s == "amber" => Ok(Band::Amber),
        Json::Str(s) if s == "red" => Ok(Band::Red),
        _ => Err(": expected green, amber or red".into()),
    }
}

fn cron_state(v: &Json) -> Read<CronState> {
    match v {
        Json::Str(s) if s == "up" => Ok(CronState::Up),
        Json::Str(s) if s == "late" => Ok(CronState::Late),
        Json::Str(s) if s == "down" => Ok(CronState::Down),
        _ => Err(": expected up, late or down".into()),
    }
}

fn asc(v: &Json) -> Read<Asc> {
    let o = object(v)?;
    Ok(Asc {
        code: o.req("code", |v| {
            whole(v, 0.0, f64::from(u16::MAX)).map(|n| n as u16)
        })?,
        name: o.req("name", string)?.into(),
    })
}

pub fn snapshot(v: &Json) -> Read<Snapshot> {
    let o = object(v)?;
    Ok(Snapshot {
        schema_version: o.req("schema_version", string)?,
        generated_at: o.req("generated_at", time)?,
        stale: o.req("stale", boolean)?,
        stale_reasons: o.list_or_empty("stale_reasons", string)?,
        rules: o.req("rules", rules)?,
        sections: o.or("sections", sections, Sections::default())?,
        tasks: o.req("tasks", tasks)?,
        agents: o.probe("agents", |v| list(v, agent))?,
        systems: o.probe("systems", |v| list(v, system))?,
        backups: o.probe("backups", backups)?,
    })
}

fn rules(v: &Json) -> Read<RulesView> {
    let o = object(v)?;
    Ok(RulesView {
        no_reply_s: o.req("no_reply_s", uint)?,
        exchange_green_below_s: o.req("exchange_green_below_s", uint)?,
        exchange_amber_below_s: o.req("exchange_amber_below_s", uint)?,
        snapshot_stale_after_s: o.req("snapshot_stale_after_s", uint)?,
        backup_amber_after_s: o.or("backup_amber_after_s", uint, 0)?,
        backup_red_after_s: o.or("backup_red_after_s", uint, 0)?,
    })
}

fn sections(v: &Json) -> Read<Sections> {
    let o = object(v)?;
    Ok(Sections {
        tasks: o.req("tasks", section)?,
        board: o.or("board", section, SectionMeta::default())?,
        live_tasks: o.or("live_tasks", section, SectionMeta::default())?,
        agents: o.req("agents", section)?,
        systems: o.req("systems", section)?,
        backups: o.req("backups", section)?,
    })
}

fn section(v: &Json) -> Read<SectionMeta> {
    let o = object(v)?;
    Ok(SectionMeta {
        configured: o.req("configured", boolean)?,
        checked_at: o.opt("checked_at", time)?,
        duration_ms: o.opt("duration_ms", uint)?,
        stale: o.req("stale", boolean)?,
    })
}

fn agent(v: &Json) -> Read<Agent> {
    let o = object(v)?;
    Ok(Agent {
        name: o.req("name", string)?,
        endpoint: o.req("endpoint", string)?,
        plane: o.opt("plane", string)?,
        up: o.req("up", boolean)?,
        last_exchange_s: o.probe("last_exchange_s", uint)?,
        exchange_band: o.req("exchange_band", band)?,
        skills_count: o.probe("skills_count", u32_)?,
        lane: o.probe("lane", string)?,
        model: o.probe("model", string)?,
        window: o.probe("window", window)?,
        heartbeat: o.probe("heartbeat", heartbeat)?,
        band: o.req("band", band)?,
        status: o.req("status", asc)?,
        reason: o.opt("reason", string)?,
        audit_skipped_lines: o.or("audit_skipped_lines", uint, 0)?,
        history: o.opt("history", history)?,
        checked_at: o.req("checked_at", time)?,
        stale: o.req("stale", boolean)?,
    })
}

fn heartbeat(v: &Json) -> Read<Heartbeat> {
    let o = object(v)?;
    Ok(Heartbeat {
        dialect: o.req("dialect", string)?,
        latency_ms: o.req("latency_ms", uint)?,
        last_activity_at: o.probe("last_activity_at", time)?,
        in_flight: o.probe("in_flight", |v| list(v, string))?,
    })
}

fn window(v: &Json) -> Read<Window> {
    let o = object(v)?;
    Ok(Window {
        model: o.probe("model", string)?,
        percent: o.probe("percent", float)?,
        status: o.probe("status", string)?,
        resets_at: o.probe("resets_at", time)?,
    })
}

fn tasks(v: &Json) -> Read<Tasks> {
    let o = object(v)?;
    Ok(Tasks {
        board: o.probe("board", board)?,
        live: o.probe("live", |v| list(v, live_task))?,
    })
}

fn board(v: &Json) -> Read<Board> {
    let o = object(v)?;
    Ok(Board {
        columns: o.list("columns", string)?,
        cards: o.list("cards", card)?,
        sources: o.list_or_empty("sources", board_source)?,
    })
}

fn board_source(v: &Json) -> Read<BoardSource> {
    let o = object(v)?;
    Ok(BoardSource {
        name: o.req("name", string)?,
        plane: o.opt("plane", string)?,
        cards: o.probe("cards", u32_)?,
        projection: o.probe("projection", string)?,
        status: o.req("status", asc)?,
        reason: o.opt("reason", string)?,
        checked_at: o.req("checked_at", time)?,
        stale: o.req("stale", boolean)?,
    })
}

fn card(v: &Json) -> Read<Card> {
    let o = object(v)?;
    Ok(Card {
        board: o.req("board", string)?,
        id: o.req("id", string)?,
        title: o.req("title", string)?,
        status: o.req("status", string)?,
        assignee: o.opt("assignee", string)?,
        priority: o.opt("priority", int)?,
        age_s: o.or("age_s", uint, 0)?,
        block_kind: o.opt("block_kind", string)?,
        latest_activity_at: o.opt("latest_activity_at", time)?,
        conditions: o.list_or_empty("conditions", string)?,
        band: o.or("band", band, Band::Green)?,
        checked_at: o.req("checked_at", time)?,
        stale: o.req("stale", boolean)?,
    })
}

fn live_task(v: &Json) -> Read<LiveTask> {
    let o = object(v)?;
    Ok(LiveTask {
        id: o.req("id", string)?,
        agent: o.req("agent", string)?,
        state: o.probe("state", string)?,
        age_s: o.req("age_s", uint)?,
        stuck: o.req("stuck", boolean)?,
        status: o.req("status", asc)?,
        reason: o.opt("reason", string)?,
        checked_at: o.req("checked_at", time)?,
        stale: o.req("stale", boolean)?,
    })
}

fn system(v: &Json) -> Read<System> {
    let o = object(v)?;
    Ok(System {
        host: o.req("host", string)?,
        source: o.or("source", string, String::new())?,
        ram_used_gb: o.probe("ram_used_gb", float)?,
        ram_total_gb: o.probe("ram_total_gb", float)?,
        disk_free_gb: o.probe("disk_free_gb", float)?,
        services: o.list("services", named_check)?,
        tunnels: o.list("tunnels", named_check)?,
        crons: o.list("crons", cron_check)?,
        vault_parity: o.probe("vault_parity", boolean)?,
        vault_reason: o.opt("vault_reason", string)?,
        band: o.or("band", band, Band::Green)?,
        status: o.req("status", asc)?,
        reason: o.opt("reason", string)?,
        history: o.opt("history", history)?,
        checked_at: o.req("checked_at", time)?,
        stale: o.req("stale", boolean)?,
    })
}

fn named_check(v: &Json) -> Read<NamedCheck> {
    let o = object(v)?;
    // Services write their state as `active`, tunnels as `up` (spec §6.1); `ok` is the field.
    let key = ["ok", "active", "up"]
        .into_iter()
        .find(|k| o.get(k).is_some())
        .unwrap_or("ok");
    Ok(NamedCheck {
        name: o.req("name", string)?,
        ok: o.probe(key, boolean)?,
        reason: o.opt("reason", string)?,
        uptime_24h_pct: o.opt("uptime_24h_pct", float)?,
        checked_at: o.req("checked_at", time)?,
        stale: o.req("stale", boolean)?,
    })
}

fn cron_check(v: &Json) -> Read<CronCheck> {
    let o = object(v)?;
    Ok(CronCheck {
        name: o.req("name", string)?,
        state: o.req("state", cron_state)?,
        last_ok_s: o.probe("last_ok_s", uint)?,
        period_s: o.req("period_s", uint)?,
        grace_s: o.req("grace_s", uint)?,
        reason: o.opt("reason", string)?,
        uptime_24h_pct: o.opt("uptime_24h_pct", float)?,
        checked_at: o.req("checked_at", time)?,
        stale: o.req("stale", boolean)?,
    })
}

fn backups(v: &Json) -> Read<Backups> {
    let o = object(v)?;
    Ok(Backups {
        name: o.or("name", string, String::new())?,
        gdrive_latest: o.probe("gdrive_latest", time)?,
        age_h: o.probe("age_h", float)?,
        band: o.or("band", band, Band::Green)?,
        status: o.or("status", asc, Asc::SUCCESS)?,
        reason: o.opt("reason", string)?,
        checked_at: o.req("checked_at", time)?,
        stale: o.req("stale", boolean)?,
    })
}

fn history(v: &Json) -> Read<History> {
    let o = object(v)?;
    Ok(History {
        uptime_24h_pct: o.opt("uptime_24h_pct", float)?,
        strip: o.req("strip", string)?,
        slot_s: o.req("slot_s", uint)?,
        samples: o.req("samples", u32_)?,
    })
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
        }
    }

    /// Every field of the model used at least once with a value, and every optional one both
    /// present and absent; probes as values, "unknown" and errors.
    fn full() -> Snapshot {
        let at = t("2026-11-30T05:40:12.345678Z");
        let rules = RulesView {
            no_reply_s: 300,
            exchange_green_below_s: 1800,
            exchange_amber_below_s: 21600,
            snapshot_stale_after_s: 600,
            backup_amber_after_s: 93600,
            backup_red_after_s: 172800,
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
            ".agents[1].heartbeat.latency_ms: expected a whole number in range"
        );
        v["agents"][1]["heartbeat"]
            .as_object_mut()
            .unwrap()
            .remove("dialect");
        assert_eq!(
            snapshot(&from_serde(&v)).unwrap_err(),
            ".agents[1].heartbeat.dialect: missing"
        );
        assert_eq!(
            snapshot(&Json::Arr(Vec::new())).unwrap_err(),
            ": expected an object"
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

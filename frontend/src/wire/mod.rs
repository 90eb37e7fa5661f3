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
//!
//! - [`reader`]: where the reader is, its first error, and the plain values (strings,
//!   numbers, times).
//! - [`shapes`]: one reader per type of the model, `Snapshot` down to `History`.
//! - [`rfc3339`]: the times, read by hand.

mod reader;
mod rfc3339;
mod shapes;

use fleetdash_model::Snapshot;
use reader::Reader;
use shapes::read_snapshot;

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

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{DateTime, Utc};
    use fleetdash_model::{
        Agent, AlertsView, Asc, Backups, Band, Board, BoardSource, Card, ChannelState, ColumnCount,
        CronCheck, CronState, EndedTask, Heartbeat, Held, History, LeftOut, LiveTask, NamedCheck,
        Probe, QueueAck, QueueLeftOut, QueueTask, RulesView, SectionMeta, Sections, SetAside,
        System, Tasks, Transition, UnreadableTask, Window,
    };
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
            worker_died_s: 3600,
            clock_step_s: 5,
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
                quiet_s: Some(4_000),
                unacked_s: Some(620),
                deadline_in_s: Some(-90),
                turns_in_s: Some(42),
                worker_died: true,
                band: Band::Red,
                status: Asc::TIMEOUT,
                reason: Some("deadline passed".into()),
                checked_at: at,
                stale: false,
            }]),
            queue_unreadable: vec![UnreadableTask {
                id: "q_2".into(),
                reason: "state \"TASK_STATE_PAUSED\": not a task state this fleetdash knows".into(),
                band: Band::Red,
                status: Asc::INTEGRITY_CHECK_FAILED,
                checked_at: at,
                stale: true,
            }],
            queue_left_out: QueueLeftOut {
                finished: 1150,
                dismissed: 3,
                ended: vec![EndedTask {
                    id: "q_3".into(),
                    how: "dismissed".into(),
                    checked_at: at,
                    stale: false,
                }],
            },
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
                until: Some(at),
                reason: "disk swap".into(),
                flaky: false,
                checked_at: at,
            }],
            acked: vec![fleetdash_model::Acked {
                key: "agent:hub".into(),
                at,
                via: "from the phone".into(),
                checked_at: at,
            }],
            channels: vec![ChannelState {
                name: "ntfy".into(),
                failing_since: Some(at),
                reason: Some("503".into()),
                pending: 3,
                checked_at: at,
            }],
            reach: Some(fleetdash_model::alerts::Reach {
                agents_failed: 10,
                agents: 11,
                hosts_failed: 2,
                hosts: 3,
                blind: true,
            }),
        };
        s.set_aside = vec![SetAside {
            file: "history.json".into(),
            aside: "history.json.corrupt-20261130T054000Z".into(),
            at: Some(at),
            checked_at: at,
        }];
        s.clock = fleetdash_model::ClockView {
            jumps: vec![
                fleetdash_model::ClockJump {
                    kind: fleetdash_model::Jump::Asleep,
                    seconds: 25_920,
                    at,
                    checked_at: at,
                    stale: false,
                },
                fleetdash_model::ClockJump {
                    kind: fleetdash_model::Jump::Backward,
                    seconds: 3_600,
                    at,
                    checked_at: at,
                    stale: false,
                },
            ],
            judging_from: Some(at),
            unwatched_s: 25_920,
            ahead: Some(fleetdash_model::Ahead {
                count: 2,
                max_s: 3_600,
                what: "queue task q_1's last report".into(),
                checked_at: at,
                stale: false,
            }),
        };
        s.folds = vec![fleetdash_model::Fold {
            rows: vec!["agent-orin".into(), "host-laptop".into()],
            what: "agent orin down".into(),
            reason: "tunnel orin on laptop is down".into(),
            anchor: "host-laptop".into(),
            band: Some(Band::Amber),
            checked_at: at,
        }];
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
}

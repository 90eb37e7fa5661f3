//! OpenTelemetry export against the real thing (docs/otel.md): a real `fleetdash run` with
//! `[otel]` sends to an OTLP/HTTP receiver served here on loopback, whose bodies are decoded
//! with the official protobuf messages (`opentelemetry-proto`). The fleet: `sol` answers (v1.0),
//! `vega` speaks only v0.3 behind `dialect = "auto"` (its first heartbeat tries v1.0 first),
//! `lyra` refuses connections; a local host, a Hermes board, a backups folder, a work queue.
//!
//! What is checked: the resource (service.instance.id is the config's `hub`), the span names
//! and parent links, lyra's ASC attributes and its probe's Error status under a pass that is
//! Ok, vega's failed attempt under a probe that ends Ok, with the 8002 event, sol's band change
//! as an event once it is stopped, the token in the request's header and nowhere else, and that
//! every attribute of every span and event has a known key and a bounded value: no URL, no
//! endpoint, no token, no free text. And with the receiver gone, `run` goes on writing its
//! snapshot and says once that spans are dropped.

use crate::support;

use crate::support::kanban;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fleetdash::a2a::Wire;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::{Span, status::StatusCode};
use prost::Message;

const OTEL_TOKEN: &str = "otel-ingest-4b9d71c2e5";
const HUB: &str = "laptop-ci";

/// How long to wait for what takes a few passes and an export (every 1 s, batches every 5 s):
/// generous for a loaded 2-core machine. Not a speed bound.
const EVENTUALLY: Duration = Duration::from_secs(180);

/// Polls `probe` until it gives something, or fails after [`EVENTUALLY`] saying `what` and the
/// last thing seen.
fn eventually<T>(what: &str, probe: impl FnMut() -> Result<T, String>) -> T {
    support::eventually(EVENTUALLY, what, probe)
}

/// What the receiver got: each request's decoded body, and its Authorization header.
#[derive(Default)]
struct Received {
    requests: Vec<ExportTraceServiceRequest>,
    authorization: Vec<String>,
    paths: Vec<String>,
}

/// An OTLP/HTTP receiver on loopback (its own runtime thread), keeping what it is sent.
struct Receiver {
    addr: SocketAddr,
    got: Arc<Mutex<Received>>,
    _runtime: tokio::runtime::Runtime,
}

impl Receiver {
    fn start() -> Receiver {
        let (runtime, listener) = support::loopback_runtime();
        let addr = listener.local_addr().unwrap();
        let got = Arc::new(Mutex::new(Received::default()));
        let kept = got.clone();
        let app = axum::Router::new().fallback(
            move |uri: axum::http::Uri, headers: axum::http::HeaderMap, body: axum::body::Bytes| {
                let kept = kept.clone();
                async move {
                    let request = ExportTraceServiceRequest::decode(body.as_ref())
                        .expect("an OTLP protobuf body");
                    let mut got = kept.lock().unwrap();
                    got.paths.push(uri.path().to_string());
                    got.authorization.push(
                        headers
                            .get("authorization")
                            .map(|v| v.to_str().unwrap().to_string())
                            .unwrap_or_default(),
                    );
                    got.requests.push(request);
                    (
                        [("content-type", "application/x-protobuf")],
                        Vec::<u8>::new(),
                    )
                }
            },
        );
        runtime.spawn(async move { axum::serve(listener, app).await });
        Receiver {
            addr,
            got,
            _runtime: runtime,
        }
    }

    /// Every span received so far, with its resource's attributes.
    fn spans(&self) -> Vec<(Vec<KeyValue>, Span)> {
        let got = self.got.lock().unwrap();
        let mut out = Vec::new();
        for request in &got.requests {
            for rs in &request.resource_spans {
                let resource = rs.resource.clone().unwrap_or_default().attributes;
                for ss in &rs.scope_spans {
                    for span in &ss.spans {
                        out.push((resource.clone(), span.clone()));
                    }
                }
            }
        }
        out
    }
}

/// `fleetdash run`, its stderr kept; killed and reaped when dropped.
struct Run {
    child: Mutex<Child>,
    log: Arc<Mutex<String>>,
}

impl Run {
    fn start(config: &std::path::Path) -> Run {
        let mut child = support::fleetdash()
            .args(["run", "--config"])
            .arg(config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("fleetdash run starts");
        let stderr = child.stderr.take().unwrap();
        let log = Arc::new(Mutex::new(String::new()));
        let kept = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                kept.lock().unwrap().push_str(&format!("{line}\n"));
            }
        });
        Run {
            child: Mutex::new(child),
            log,
        }
    }

    /// What it said so far; a run that stopped fails the test with it.
    fn log(&self) -> String {
        let log = self.log.lock().unwrap().clone();
        if let Ok(Some(exit)) = self.child.lock().unwrap().try_wait() {
            panic!("fleetdash run stopped ({exit}):\n{log}");
        }
        log
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        let child = self.child.get_mut().unwrap();
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// The fleet's config, exporting to `endpoint`.
fn config(scratch: &support::Scratch, endpoint: &str, sol: &str, vega: &str) -> PathBuf {
    let board = kanban::Kanban::create(&scratch.path().join("ops.db"));
    kanban::populate(&board, 6);
    drop(board);
    let backups = scratch.path().join("backups");
    std::fs::create_dir_all(&backups).unwrap();
    std::fs::write(backups.join("fleet-0001.tar.zst"), "backup").unwrap();
    std::fs::write(scratch.path().join("otel.token"), format!("{OTEL_TOKEN}\n")).unwrap();
    // Top-level keys before any table: the scratch's own header ends in `[probe]`.
    let path = scratch.path().join("fleetdash.toml");
    std::fs::write(&path, format!(
        "hub = \"{HUB}\"\noutput_dir = \"out\"\nstate_dir = \"state\"\nrules = \"rules.yaml\"\n\n\
         [probe]\ntimeout = \"2s\"\n\n\
         [cadence]\nagents = \"1s\"\nsystems = \"1s\"\nqueue = \"1s\"\nboard = \"1s\"\n\
         backups = \"1s\"\n\n\
         [otel]\nendpoint = \"{endpoint}\"\ntoken_file = \"otel.token\"\n\n\
         [metrics]\nlisten = \"127.0.0.1:0\"\n\n\
         [work_queue]\ndb = \"state/tasks.db\"\n\n\
         [[boards]]\nname = \"ops\"\ndb = \"ops.db\"\n\n\
         [backups]\nname = \"nightly\"\ndir = \"backups\"\n\n\
         [[hosts]]\nname = \"hub\"\nsource = \"local\"\ndisk_path = \"/\"\n\n\
         [[agents]]\nname = \"sol\"\nendpoint = \"{sol}\"\ndialect = \"v1\"\n\
         audit_log = \"{audit}\"\n\n\
         [[agents]]\nname = \"vega\"\nendpoint = \"{vega}\"\ndialect = \"auto\"\n\n\
         [[agents]]\nname = \"lyra\"\nendpoint = \"{lyra}\"\ndialect = \"v1\"\n",
        lyra = support::refused_endpoint(),
        audit = scratch.audit_log("sol", 30.0).display(),
    ))
    .unwrap();
    path
}

fn string(v: &Option<AnyValue>) -> Option<&str> {
    match v.as_ref()?.value.as_ref()? {
        any_value::Value::StringValue(s) => Some(s),
        _ => None,
    }
}

fn attr<'a>(attrs: &'a [KeyValue], key: &str) -> Option<&'a any_value::Value> {
    attrs
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref()?.value.as_ref())
}

fn text<'a>(attrs: &'a [KeyValue], key: &str) -> Option<&'a str> {
    match attr(attrs, key)? {
        any_value::Value::StringValue(s) => Some(s),
        _ => None,
    }
}

/// The probe spans of `name` (an agent), newest last.
fn probes_of<'a>(spans: &'a [(Vec<KeyValue>, Span)], name: &str) -> Vec<&'a Span> {
    let mut out: Vec<&Span> = spans
        .iter()
        .map(|(_, s)| s)
        .filter(|s| s.name == "fleetdash.probe")
        .filter(|s| text(&s.attributes, "fleetdash.element.kind") == Some("agent"))
        .filter(|s| text(&s.attributes, "fleetdash.element.name") == Some(name))
        .collect();
    out.sort_by_key(|s| s.start_time_unix_nano);
    out
}

fn code(span: &Span) -> i32 {
    span.status.as_ref().map_or(0, |s| s.code)
}

/// Every attribute key a span or event may carry: the first column of docs/otel.md's
/// "Attributes" tables (a row may name two keys), the one list of them.
fn documented_keys() -> Vec<String> {
    let doc = std::fs::read_to_string(support::repo_root().join("docs/otel.md")).unwrap();
    let section = doc.split("\n### Attributes\n").nth(1).unwrap_or_default();
    let rows = section.split("\n### ").next().unwrap().lines();
    let keys: Vec<String> = rows
        .filter_map(|row| row.strip_prefix('|')?.split('|').next())
        .flat_map(|first| first.split('`').skip(1).step_by(2))
        .map(str::to_string)
        .collect();
    for key in [
        "agent.status.code",
        "fleetdash.section",
        "fleetdash.task.state.from",
    ] {
        assert!(
            keys.iter().any(|k| k == key),
            "docs/otel.md lists {key}: {keys:?}"
        );
    }
    keys
}

/// A bounded word: what every string value must look like.
fn is_word(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 40
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
}

/// Every attribute of every span and event: a known key, a bounded value, never the endpoint
/// or the token; every status message the registry's words.
fn assert_bounded(spans: &[(Vec<KeyValue>, Span)], forbidden: &[&str]) {
    let names = ["sol", "vega", "lyra", "hub", "ops", "nightly"];
    let keys = documented_keys();
    for (_, span) in spans {
        assert!(
            ["fleetdash.pass", "fleetdash.probe", "fleetdash.attempt"]
                .contains(&span.name.as_str()),
            "{}",
            span.name
        );
        let events = span.events.iter().flat_map(|e| e.attributes.iter());
        for kv in span.attributes.iter().chain(events) {
            assert!(keys.contains(&kv.key), "unknown key {}", kv.key);
            let Some(value) = string(&kv.value) else {
                continue;
            };
            assert!(is_word(value), "{} = {value:?}", kv.key);
            for bad in forbidden {
                assert!(!value.contains(bad), "{} = {value:?} holds {bad:?}", kv.key);
            }
            if [
                "fleetdash.element.name",
                "fleetdash.agent",
                "fleetdash.host",
            ]
            .contains(&kv.key.as_str())
            {
                assert!(names.contains(&value), "{} = {value:?}", kv.key);
            }
        }
        if let Some(status) = &span.status {
            let m = &status.message;
            let words: Vec<&str> = m.split(' ').collect();
            assert!(
                m.is_empty()
                    || (m.starts_with("ASC-")
                        && words.len() <= 2
                        && words.iter().all(|w| is_word(w)))
                    || m.starts_with("the ")
                    || m == "not projected",
                "status message {m:?}"
            );
            for bad in forbidden {
                assert!(!m.contains(bad), "status message {m:?}");
            }
        }
        for event in &span.events {
            assert!(
                [
                    "fleetdash.transition",
                    "fleetdash.task.state",
                    "agent.status"
                ]
                .contains(&event.name.as_str()),
                "{}",
                event.name
            );
        }
    }
}

#[test]
fn run_exports_each_pass_and_probe_with_the_binding_attributes() {
    let receiver = Receiver::start();
    let scratch = support::Scratch::new();
    let sol = support::Sim::healthy("sol", Wire::V1);
    let vega = support::Sim::healthy("vega", Wire::V03);
    let endpoint = format!("http://{}", receiver.addr);
    let config = config(&scratch, &endpoint, &sol.endpoint, &vega.endpoint);
    let run = Run::start(&config);

    // The first passes of every section, exported.
    let sections = [
        "agents",
        "systems",
        "tasks.board",
        "tasks.live",
        "tasks.queue",
        "backups",
    ];
    let spans = eventually(
        "a pass span of every section, and sol's, vega's and lyra's probes",
        || {
            let spans = receiver.spans();
            let seen: Vec<&str> = spans
                .iter()
                .filter(|(_, s)| s.name == "fleetdash.pass")
                .filter_map(|(_, s)| text(&s.attributes, "fleetdash.section"))
                .collect();
            let missing: Vec<_> = sections.iter().filter(|s| !seen.contains(s)).collect();
            let agents = ["sol", "vega", "lyra"]
                .iter()
                .all(|a| !probes_of(&spans, a).is_empty());
            if missing.is_empty() && agents {
                Ok(spans)
            } else {
                Err(format!("missing {missing:?}; log:\n{}", run.log()))
            }
        },
    );

    // Who is speaking.
    let (resource, _) = &spans[0];
    assert_eq!(text(resource, "service.name"), Some("fleetdash"));
    assert_eq!(
        text(resource, "service.version"),
        Some(env!("CARGO_PKG_VERSION"))
    );
    assert_eq!(text(resource, "service.instance.id"), Some(HUB));
    assert_eq!(resource.len(), 3, "{resource:?}");

    // Parents: a pass is a root, a probe's parent is a pass of its trace, an attempt's a probe.
    let by_id: BTreeMap<&[u8], &Span> = spans
        .iter()
        .map(|(_, s)| (s.span_id.as_slice(), s))
        .collect();
    for (_, span) in &spans {
        let parent = by_id.get(span.parent_span_id.as_slice());
        match span.name.as_str() {
            "fleetdash.pass" => assert!(span.parent_span_id.is_empty(), "{span:?}"),
            "fleetdash.probe" => {
                // A host's checks are probes under the host's probe.
                let parent = parent.expect("a probe's parent was exported");
                assert!(
                    parent.name == "fleetdash.pass"
                        || text(&parent.attributes, "fleetdash.element.kind") == Some("host"),
                    "{span:?}"
                );
                assert_eq!(parent.trace_id, span.trace_id);
            }
            _ => assert_eq!(parent.expect("an attempt's probe").name, "fleetdash.probe"),
        }
    }

    // lyra: down, its probe in error with the binding's attributes; its pass is Ok.
    let lyra = probes_of(&spans, "lyra")[0];
    assert_eq!(code(lyra), StatusCode::Error as i32);
    assert_eq!(
        lyra.status.as_ref().unwrap().message,
        "ASC-5003 DEPENDENCY_UNAVAILABLE"
    );
    let a = &lyra.attributes;
    use any_value::Value::{BoolValue, IntValue, StringValue};
    let s = |v: &str| StringValue(v.to_string());
    for (key, want) in [
        ("agent.status.code", IntValue(5003)),
        ("agent.status.name", s("DEPENDENCY_UNAVAILABLE")),
        ("agent.status.class", s("transient_failure")),
        ("agent.status.kind", s("status")),
        ("agent.status.scope", s("step")),
        ("agent.status.terminal", BoolValue(true)),
        ("agent.status.retryable", BoolValue(true)),
        ("agent.status.retry_safe", BoolValue(true)),
        ("fleetdash.band", s("red")),
        ("fleetdash.agent.up", BoolValue(false)),
    ] {
        assert_eq!(attr(a, key), Some(&want), "{key}: {a:?}");
    }
    let lyra_pass = by_id[lyra.parent_span_id.as_slice()];
    assert_eq!(
        text(&lyra_pass.attributes, "fleetdash.section"),
        Some("agents")
    );
    assert_eq!(code(lyra_pass), StatusCode::Ok as i32);
    // Born red: the first pass says so with an event.
    assert!(
        lyra.events.iter().any(|e| e.name == "fleetdash.transition"
            && text(&e.attributes, "fleetdash.band.to") == Some("red")),
        "{lyra:?}"
    );

    // vega: v1.0 tried first and refused, then v0.3 answered: the failed attempt is a child in
    // error, the probe ends Ok, and the fallback is an 8002 event.
    let vega_probe = probes_of(&spans, "vega")[0];
    assert_eq!(code(vega_probe), StatusCode::Ok as i32, "{vega_probe:?}");
    let attempts: Vec<&Span> = spans
        .iter()
        .map(|(_, s)| s)
        .filter(|s| s.parent_span_id == vega_probe.span_id)
        .collect();
    assert_eq!(attempts.len(), 1, "{attempts:?}");
    let attempt = attempts[0];
    assert_eq!(attempt.name, "fleetdash.attempt");
    assert_eq!(code(attempt), StatusCode::Error as i32);
    assert_eq!(
        text(&attempt.attributes, "fleetdash.a2a.dialect"),
        Some("v1")
    );
    assert_eq!(
        attr(&attempt.attributes, "agent.status.code"),
        Some(&IntValue(4007))
    );
    assert_eq!(
        attr(&attempt.attributes, "agent.status.terminal"),
        Some(&BoolValue(false))
    );
    assert!(attempt.start_time_unix_nano >= vega_probe.start_time_unix_nano);
    assert!(
        vega_probe.events.iter().any(|e| e.name == "agent.status"
            && attr(&e.attributes, "agent.status.code") == Some(&IntValue(8002))),
        "{vega_probe:?}"
    );
    assert_eq!(
        text(&vega_probe.attributes, "fleetdash.a2a.dialect"),
        Some("v0.3")
    );

    // sol is green; stopped, its next probe is red and says the change as an event.
    let sol_first = probes_of(&spans, "sol")[0];
    assert_eq!(text(&sol_first.attributes, "fleetdash.band"), Some("green"));
    assert_eq!(code(sol_first), StatusCode::Ok as i32);
    drop(sol);
    let changed = eventually("sol's probe with its band change", || {
        let spans = receiver.spans();
        probes_of(&spans, "sol")
            .into_iter()
            .find(|s| {
                s.events.iter().any(|e| {
                    e.name == "fleetdash.transition"
                        && text(&e.attributes, "fleetdash.band.from") == Some("green")
                        && text(&e.attributes, "fleetdash.band.to") == Some("red")
                })
            })
            .cloned()
            .ok_or_else(|| format!("{} spans; log:\n{}", spans.len(), run.log()))
    });
    assert_eq!(code(&changed), StatusCode::Error as i32);

    // The token went in the header, to the traces path, and nowhere in a span.
    let spans = receiver.spans();
    {
        let got = receiver.got.lock().unwrap();
        assert!(
            got.authorization
                .iter()
                .all(|a| *a == format!("Bearer {OTEL_TOKEN}")),
            "{:?}",
            got.authorization
        );
        assert!(
            got.paths.iter().all(|p| p == "/v1/traces"),
            "{:?}",
            got.paths
        );
    }
    // What arrived is what run counts as exported, where Prometheus reads it.
    let (exported, dropped) = eventually("the exported spans in /metrics", || {
        span_counts(&run).and_then(|(e, d)| {
            if e > 0.0 {
                Ok((e, d))
            } else {
                Err(format!("{e} exported, {d} dropped"))
            }
        })
    });
    assert_eq!(dropped, 0.0, "{exported} exported");
    let endpoints = [
        endpoint.as_str(),
        "127.0.0.1",
        "://",
        OTEL_TOKEN,
        vega.endpoint.trim_end_matches('/'),
    ];
    assert_bounded(&spans, &endpoints);
}

/// `fleetdash run`'s own count of spans exported and dropped (`[metrics] listen`, the address
/// it says on stderr).
fn span_counts(run: &Run) -> Result<(f64, f64), String> {
    let log = run.log();
    let addr = log
        .lines()
        .find_map(|l| l.split("fleetdash: metrics on ").nth(1))
        .ok_or("no metrics address said yet")?
        .trim()
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap_or_default()
        .parse()
        .map_err(|e| format!("{e}"))?;
    let text = support::get(addr, "/metrics")?;
    let value = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse::<f64>().ok())
            .ok_or_else(|| format!("no {name} in:\n{text}"))
    };
    Ok((
        value("fleetdash_otel_spans_exported_total")?,
        value("fleetdash_otel_spans_dropped_total")?,
    ))
}

/// The receiver gone: spans are dropped, said once in the log (with no token), and the passes
/// go on writing the snapshot.
#[test]
fn run_goes_on_when_the_receiver_is_down_and_says_so_once() {
    let scratch = support::Scratch::new();
    let sol = support::Sim::healthy("sol", Wire::V1);
    let vega = support::Sim::healthy("vega", Wire::V03);
    let endpoint = support::refused_endpoint();
    let config = config(&scratch, &endpoint, &sol.endpoint, &vega.endpoint);
    let run = Run::start(&config);
    let status = scratch.status_path();
    let checked_at = |log: &str| -> Result<String, String> {
        let text = std::fs::read_to_string(&status).map_err(|e| format!("{e}; log:\n{log}"))?;
        let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
        Ok(json["sections"]["agents"]["checked_at"].to_string())
    };
    let warned = eventually("the warning that spans are dropped", || {
        let log = run.log();
        if log.contains("OpenTelemetry export failed") {
            Ok(log)
        } else {
            Err(log)
        }
    });
    assert!(warned.contains("cannot connect"), "{warned}");
    assert!(!warned.contains(OTEL_TOKEN), "{warned}");
    // More passes are written after it: the exporter holds none of them up.
    let first = eventually("a snapshot", || checked_at(&run.log()));
    eventually("a later agents pass in the snapshot", || {
        let now = checked_at(&run.log())?;
        if now != first { Ok(()) } else { Err(now) }
    });
    let log = run.log();
    assert_eq!(
        log.matches("OpenTelemetry export failed").count(),
        1,
        "said once, then counted:\n{log}"
    );
    // Counted where Prometheus reads it: dropped, none exported.
    let (exported, dropped) = eventually("the dropped spans in /metrics", || {
        span_counts(&run).and_then(|(e, d)| {
            if d > 0.0 {
                Ok((e, d))
            } else {
                Err(format!("{e} exported, {d} dropped"))
            }
        })
    });
    assert_eq!(exported, 0.0, "{dropped} dropped");
}

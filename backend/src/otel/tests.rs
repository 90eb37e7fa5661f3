//! The span plans of passes (pure), and their emission through the SDK to an exporter in
//! memory: names, parents, statuses, the binding's attributes, events, and that no value is
//! free text.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::{DateTime, TimeZone, Utc};
use fleetdash_model::{Asc, Band, Heartbeat, Probe};

use super::plan::{self, Memory, Outcome, Planned, Value};
use crate::collect::{Attempt, Collection, Findings, SectionData, Trace};
use crate::metrics::Names;
use crate::write::history::tests::{agent, host};

/// The tests' clock: one fixed moment, so that no outcome depends on the day they run.
fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 30, 19, 12, 0).unwrap()
}

fn names() -> Names {
    Names {
        agents: ["sol", "lyra"].iter().map(|s| s.to_string()).collect(),
        hosts: [("hub".to_string(), Default::default())].into(),
        boards: ["ops".to_string()].into(),
        ..Names::default()
    }
}

fn heartbeat(dialect: &str) -> Probe<Heartbeat> {
    Probe::Value(Heartbeat {
        dialect: dialect.into(),
        latency_ms: 3,
        last_activity_at: Probe::Unknown,
        in_flight: Probe::Unknown,
    })
}

/// sol up (its heartbeat answered in v0.3), lyra down (refused), as the agents pass finds them.
fn agents_pass(at: DateTime<Utc>, lyra_up: bool) -> Collection {
    let mut sol = agent("sol", true, at + chrono::Duration::milliseconds(40));
    sol.heartbeat = heartbeat("v0.3");
    let mut lyra = agent("lyra", lyra_up, at + chrono::Duration::milliseconds(90));
    if !lyra_up {
        lyra.status = Asc::DEPENDENCY_UNAVAILABLE;
        lyra.reason = Some("card: connection refused at http://127.0.0.1:1/ token=abc".into());
    }
    Collection {
        findings: Findings::Agents {
            rows: vec![sol, lyra],
            mentions: Vec::new(),
        },
        checked_at: at,
        duration: Duration::from_millis(100),
    }
}

fn no_attempts() -> Trace {
    Trace {
        started: Instant::now(),
        attempts: Vec::new(),
    }
}

fn attr<'a>(span: &'a Planned, key: &str) -> Option<&'a Value> {
    span.attributes
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v)
}

fn s(v: &'static str) -> Value {
    Value::from(v)
}

/// Every key any span or event may carry: the first column of docs/otel.md's "Attributes"
/// tables (a row may name two keys), the one list of them.
fn keys() -> Vec<&'static str> {
    let doc = include_str!("../../../docs/otel.md");
    let table = doc
        .split("\n### Attributes\n")
        .nth(1)
        .expect("its Attributes");
    let keys: Vec<&str> = (table.split("\n### ").next().unwrap().lines())
        .filter_map(|row| row.strip_prefix('|')?.split('|').next())
        .flat_map(|first| first.split('`').skip(1).step_by(2))
        .collect();
    let parsed = [
        "agent.status.code",
        "fleetdash.section",
        "fleetdash.band.to",
    ];
    assert!(parsed.iter().all(|k| keys.contains(k)), "{keys:?}");
    keys
}

/// Every key is known, and every string a word: no URL, no space, nothing long.
fn assert_bounded(span: &Planned) {
    let attrs = span
        .attributes
        .iter()
        .chain(span.events.iter().flat_map(|e| e.attributes.iter()));
    let keys = keys();
    for (k, v) in attrs {
        assert!(keys.contains(k), "unknown key {k}");
        if let Value::Str(text) = v {
            assert!(
                text.len() <= 40
                    && text
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)),
                "{k} = {text:?}"
            );
        }
    }
    if let Outcome::Error(d) = &span.outcome {
        assert!(d.starts_with("ASC-") || !d.contains(['/', ':']), "{d}");
    }
    span.children.iter().for_each(assert_bounded);
}

#[test]
fn a_pass_is_a_span_and_each_agent_a_child_with_the_binding_attributes() {
    let mut memory = Memory::default();
    let pass = plan::pass(
        &agents_pass(t0(), false),
        &no_attempts(),
        &names(),
        &mut memory,
    );
    assert_eq!(pass.name, plan::PASS);
    assert_eq!(
        (pass.start, pass.end),
        (t0(), t0() + chrono::Duration::milliseconds(100))
    );
    assert_eq!(attr(&pass, "fleetdash.section"), Some(&s("agents")));
    assert_eq!(attr(&pass, "fleetdash.probes_failed"), Some(&Value::Int(1)));
    // The pass did its work: a down agent is its probe's failure, not the pass's.
    assert_eq!(pass.outcome, Outcome::Ok);
    let [sol, lyra] = &pass.children[..] else {
        panic!("{:?}", pass.children)
    };
    assert_eq!(sol.name, plan::PROBE);
    assert_eq!(sol.outcome, Outcome::Ok);
    assert_eq!(attr(sol, "fleetdash.element.name"), Some(&s("sol")));
    assert_eq!(attr(sol, "fleetdash.a2a.dialect"), Some(&s("v0.3")));
    assert_eq!(attr(sol, "agent.status.code"), Some(&Value::Int(2000)));
    assert_eq!(sol.end, t0() + chrono::Duration::milliseconds(40));
    // lyra: red, DEPENDENCY_UNAVAILABLE, an error named by the registry alone.
    assert_eq!(
        lyra.outcome,
        Outcome::Error("ASC-5003 DEPENDENCY_UNAVAILABLE".into())
    );
    for (k, v) in [
        ("fleetdash.element.kind", s("agent")),
        ("fleetdash.element.name", s("lyra")),
        ("fleetdash.band", s("red")),
        ("fleetdash.agent.up", Value::Bool(false)),
        ("agent.status.code", Value::Int(5003)),
        ("agent.status.name", s("DEPENDENCY_UNAVAILABLE")),
        ("agent.status.class", s("transient_failure")),
        ("agent.status.kind", s("status")),
        ("agent.status.scope", s("step")),
        ("agent.status.terminal", Value::Bool(true)),
        ("agent.status.retryable", Value::Bool(true)),
        ("agent.status.retry_safe", Value::Bool(true)),
    ] {
        assert_eq!(attr(lyra, k), Some(&v), "{k}");
    }
    // Born red: its first pass says so, once.
    assert_eq!(lyra.events.len(), 1, "{:?}", lyra.events);
    assert_eq!(lyra.events[0].name, plan::TRANSITION);
    assert!(sol.events.is_empty());
    assert_bounded(&pass);
}

#[test]
fn a_band_change_is_an_event_of_the_pass_that_sees_it_and_only_of_that_one() {
    let mut memory = Memory::default();
    plan::pass(
        &agents_pass(t0(), false),
        &no_attempts(),
        &names(),
        &mut memory,
    );
    let later = t0() + chrono::Duration::seconds(30);
    let same = plan::pass(
        &agents_pass(later, false),
        &no_attempts(),
        &names(),
        &mut memory,
    );
    assert!(same.children.iter().all(|c| c.events.is_empty()));
    let up = plan::pass(
        &agents_pass(later, true),
        &no_attempts(),
        &names(),
        &mut memory,
    );
    let lyra = &up.children[1];
    assert_eq!(lyra.outcome, Outcome::Ok);
    let event = &lyra.events[0];
    let get = |k: &str| {
        event
            .attributes
            .iter()
            .find(|(key, _)| *key == k)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(get("fleetdash.band.from"), Some(s("red")));
    assert_eq!(get("fleetdash.band.to"), Some(s("green")));
    assert_eq!(event.at, lyra.end);
}

/// Seed 000: a transient child attempt that later succeeds does not leave its parent in error.
#[test]
fn an_attempt_tried_again_is_a_child_in_error_under_a_probe_that_ends_ok() {
    let started = Instant::now();
    let board = fleetdash_model::Board {
        columns: Vec::new(),
        cards: Vec::new(),
        sources: vec![fleetdash_model::BoardSource {
            name: "ops".into(),
            plane: None,
            cards: Probe::Value(12),
            projection: Probe::Unknown,
            status: Asc::SUCCESS,
            reason: None,
            columns: Vec::new(),
            attention_left_out: Default::default(),
            checked_at: t0() + chrono::Duration::milliseconds(200),
            stale: false,
        }],
    };
    let collection = Collection {
        findings: SectionData::Board {
            read: Probe::Value(board),
            cap: crate::collect::board::cap::Cap::NONE,
        }
        .into(),
        checked_at: t0(),
        duration: Duration::from_millis(250),
    };
    let trace = Trace {
        started,
        attempts: vec![Attempt {
            kind: "board",
            name: "ops".into(),
            what: "board.read",
            variant: None,
            asc: Asc::RETRYABLE_ERROR,
            started: started + Duration::from_millis(10),
            took: Duration::from_millis(20),
        }],
    };
    let pass = plan::pass(&collection, &trace, &names(), &mut Memory::default());
    let probe = &pass.children[0];
    assert_eq!(probe.outcome, Outcome::Ok, "the read succeeded in the end");
    assert_eq!(pass.outcome, Outcome::Ok);
    let attempt = &probe.children[0];
    assert_eq!(attempt.name, plan::ATTEMPT);
    assert_eq!(
        attempt.outcome,
        Outcome::Error("ASC-5000 RETRYABLE_ERROR".into())
    );
    assert_eq!(attempt.start, t0() + chrono::Duration::milliseconds(10));
    assert_eq!(attempt.end, t0() + chrono::Duration::milliseconds(30));
    assert_eq!(
        attr(attempt, "agent.status.terminal"),
        Some(&Value::Bool(false))
    );
    assert_eq!(attr(attempt, "agent.status.scope"), Some(&s("tool_call")));
    // And the occurrence itself: 8003 RETRY_ATTEMPTED, an event of the probe.
    let event = &probe.events[0];
    assert_eq!(event.name, plan::STATUS_EVENT);
    assert!(
        event
            .attributes
            .contains(&("agent.status.code", Value::Int(8003)))
    );
    assert!(
        event
            .attributes
            .contains(&("agent.status.kind", s("event")))
    );
    assert_bounded(&pass);
}

#[test]
fn a_dialect_that_failed_before_another_answered_is_a_fallback() {
    let started = Instant::now();
    let trace = Trace {
        started,
        attempts: vec![Attempt {
            kind: "agent",
            name: "sol".into(),
            what: "heartbeat",
            variant: Some("v1"),
            asc: Asc::UNSUPPORTED_CAPABILITY,
            started,
            took: Duration::from_millis(5),
        }],
    };
    let pass = plan::pass(
        &agents_pass(t0(), true),
        &trace,
        &names(),
        &mut Memory::default(),
    );
    let sol = &pass.children[0];
    assert_eq!(sol.outcome, Outcome::Ok);
    assert_eq!(sol.children.len(), 1);
    assert_eq!(
        attr(&sol.children[0], "fleetdash.a2a.dialect"),
        Some(&s("v1"))
    );
    assert!(
        sol.events[0]
            .attributes
            .contains(&("agent.status.name", s("FALLBACK_USED")))
    );
    assert_eq!(pass.count(), 4);
}

/// A host and its checks: a service down is its own failing child; its name is the config's.
#[test]
fn a_host_is_a_probe_with_its_checks_as_children() {
    let mut hub = host("hub", 6, t0());
    hub.services[0].ok = Probe::Value(false);
    hub.band = Band::Red;
    hub.status = Asc::DEPENDENCY_UNAVAILABLE;
    let collection = Collection {
        findings: SectionData::Systems(vec![hub]).into(),
        checked_at: t0(),
        duration: Duration::from_millis(10),
    };
    let pass = plan::pass(
        &collection,
        &no_attempts(),
        &names(),
        &mut Memory::default(),
    );
    let hub = &pass.children[0];
    assert_eq!(attr(hub, "fleetdash.host.source"), Some(&s("local")));
    let kinds: Vec<_> = hub
        .children
        .iter()
        .map(|c| attr(c, "fleetdash.element.kind").cloned().unwrap())
        .collect();
    // Two services, one cron (late), the vault; tunnels are the tunnels pass's.
    assert_eq!(kinds, [s("service"), s("service"), s("cron"), s("vault")]);
    assert!(matches!(hub.children[0].outcome, Outcome::Error(_)));
    assert_eq!(hub.children[1].outcome, Outcome::Ok);
    // A late cron is amber, a warning: not an error.
    assert_eq!(attr(&hub.children[2], "fleetdash.band"), Some(&s("amber")));
    assert_eq!(hub.children[2].outcome, Outcome::Ok);
    // Checks the config does not declare (this fixture's) carry no name, only their host's.
    assert_eq!(attr(&hub.children[0], "fleetdash.element.name"), None);
    assert_eq!(
        attr(&hub.children[0], "fleetdash.host"),
        Some(&Value::Str("hub".into()))
    );
    assert_bounded(&pass);
}

/// A task's span says its state and its agent, never its id; a state change that is not
/// terminal is an event, a terminal one is the span's status.
#[test]
fn a_live_task_is_its_state_and_a_non_terminal_change_is_an_event() {
    use crate::a2a::TaskFacts;
    use crate::collect::live_tasks::registry::TaskKey;
    use crate::collect::live_tasks::{Answer, Poll};
    let key = TaskKey {
        agent: "sol".into(),
        id: "task-9f8e-secret-looking-id".into(),
    };
    let poll = |state: &'static str| Collection {
        findings: Findings::LivePoll(Poll {
            answers: [(
                key.clone(),
                Answer::Task(TaskFacts {
                    state: Some(state),
                    updated_at: None,
                }),
            )]
            .into(),
            unread_registry: None,
        }),
        checked_at: t0(),
        duration: Duration::from_millis(10),
    };
    let mut memory = Memory::default();
    let first = plan::pass(
        &poll("TASK_STATE_SUBMITTED"),
        &no_attempts(),
        &names(),
        &mut memory,
    );
    let working = plan::pass(
        &poll("TASK_STATE_WORKING"),
        &no_attempts(),
        &names(),
        &mut memory,
    );
    let task = &working.children[0];
    assert_eq!(
        attr(task, "fleetdash.agent"),
        Some(&Value::Str("sol".into()))
    );
    assert_eq!(
        attr(task, "fleetdash.task.state"),
        Some(&s("TASK_STATE_WORKING"))
    );
    assert_eq!(attr(task, "agent.status.name"), Some(&s("RUNNING")));
    assert_eq!(
        attr(task, "agent.status.terminal"),
        Some(&Value::Bool(false))
    );
    assert_eq!(attr(task, "agent.lifecycle.phase"), Some(&s("EXECUTING")));
    assert_eq!(task.events[0].name, plan::TASK_STATE);
    assert!(
        task.events[0]
            .attributes
            .contains(&("fleetdash.task.state.from", s("TASK_STATE_SUBMITTED")))
    );
    assert_eq!(first.children[0].events.len(), 1);
    // A poll the peer did not answer keeps the last state: working again is no change.
    let mut silent = poll("TASK_STATE_WORKING");
    if let Findings::LivePoll(p) = &mut silent.findings {
        let failure = crate::net::ProbeFailure::new(Asc::TIMEOUT, "no answer from http://x/");
        p.answers.insert(key.clone(), Answer::Failed(failure));
    }
    let silent = plan::pass(&silent, &no_attempts(), &names(), &mut memory);
    assert_eq!(
        silent.children[0].outcome,
        Outcome::Error("ASC-5004 TIMEOUT".into())
    );
    let again = plan::pass(
        &poll("TASK_STATE_WORKING"),
        &no_attempts(),
        &names(),
        &mut memory,
    );
    assert!(
        again.children[0].events.is_empty(),
        "{:?}",
        again.children[0].events
    );
    let failed = plan::pass(
        &poll("TASK_STATE_FAILED"),
        &no_attempts(),
        &names(),
        &mut memory,
    );
    let task = &failed.children[0];
    assert!(task.events.is_empty(), "a terminal state is no event");
    assert_eq!(
        task.outcome,
        Outcome::Error("ASC-6001 INTERNAL_ERROR".into())
    );
    assert_bounded(&working);
    assert_bounded(&failed);
}

/// An in-memory exporter: what the SDK hands over.
#[derive(Debug, Clone, Default)]
struct Kept(Arc<Mutex<Vec<opentelemetry_sdk::trace::SpanData>>>);

impl opentelemetry_sdk::trace::SpanExporter for Kept {
    async fn export(
        &self,
        batch: Vec<opentelemetry_sdk::trace::SpanData>,
    ) -> opentelemetry_sdk::error::OTelSdkResult {
        self.0.lock().unwrap().extend(batch);
        Ok(())
    }
}

/// Through the SDK: parents link, times are the plan's, statuses and events arrive.
#[test]
fn the_plan_is_emitted_with_its_parents_times_and_statuses() {
    use opentelemetry::trace::{Status, TracerProvider as _};
    let kept = Kept::default();
    let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder()
        .with_simple_exporter(kept.clone())
        .build();
    let otel = super::Otel {
        tracer: provider.tracer("fleetdash"),
        provider,
        names: names(),
        memory: Mutex::new(Default::default()),
        stats: Default::default(),
    };
    otel.observe(&agents_pass(t0(), false), &no_attempts());
    let spans = kept.0.lock().unwrap().clone();
    assert_eq!(spans.len(), 3);
    let pass = spans.iter().find(|s| s.name == plan::PASS).unwrap();
    let lyra = spans
        .iter()
        .find(|s| s.attributes.iter().any(|kv| kv.value.as_str() == "lyra"))
        .unwrap();
    assert_eq!(lyra.parent_span_id, pass.span_context.span_id());
    assert_eq!(lyra.span_context.trace_id(), pass.span_context.trace_id());
    assert_eq!(
        lyra.status,
        Status::error("ASC-5003 DEPENDENCY_UNAVAILABLE")
    );
    assert_eq!(pass.status, Status::Ok);
    assert_eq!(pass.start_time, std::time::SystemTime::from(t0()));
    assert_eq!(
        lyra.end_time,
        std::time::SystemTime::from(t0() + chrono::Duration::milliseconds(90))
    );
    assert_eq!(lyra.events.events[0].name, plan::TRANSITION);
    // A root per pass: no parent.
    assert_eq!(pass.parent_span_id, opentelemetry::trace::SpanId::INVALID);
}

/// No `[otel]`, no exporter: nothing is started and nothing is sent.
#[tokio::test]
async fn without_the_section_nothing_is_started() {
    let config = crate::config::Config::parse(
        std::path::Path::new("/etc/f.toml"),
        "output_dir = \"o\"\nstate_dir = \"s\"\nrules = \"r\"\n",
    )
    .unwrap();
    assert!(super::Otel::start(&config).unwrap().is_none());
    let with = crate::config::Config::parse(
        std::path::Path::new("/etc/f.toml"),
        "output_dir = \"o\"\nstate_dir = \"s\"\nrules = \"r\"\n[otel]\nendpoint = \"http://127.0.0.1:9\"\n",
    )
    .unwrap();
    let otel = super::Otel::start(&with).unwrap().expect("an exporter");
    assert_eq!(otel.counts(), (0, 0));
    otel.shutdown().await;
}

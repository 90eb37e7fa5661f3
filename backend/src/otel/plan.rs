//! The spans of one pass, planned from what the pass found: pure, so every attribute can be
//! tested without an exporter. A pass is a span (`fleetdash.pass`); each element it probed a
//! child (`fleetdash.probe`: an agent, a host and its checks, a board, a backup, a task); an
//! attempt tried again within the pass a grandchild (`fleetdash.attempt`) in error, under a
//! probe that ends as its last attempt went. Band changes, task state changes and 8xxx
//! occurrences are events.
//!
//! Bounded by construction: every string value is a name the config declares (checked
//! against [`Names`]) or a word from a closed list here or in [`asc`]. Ids, URLs, endpoints,
//! titles, reasons and anything a peer wrote never become a value; a status description is the
//! registry's name of the code.

use std::borrow::Cow;
use std::collections::HashMap;

use chrono::{DateTime, Utc};
use fleetdash_model::{
    Agent, Asc, Band, BoardSource, CronState, LiveTask, NamedCheck, Probe, QueueTask, System,
};

use super::asc::{self, Context, Scope};
pub use super::value::{Attributes, Value};
use crate::collect::live_tasks::{Answer, Poll};
use crate::collect::projections::{ProjectionInput, ProjectionPlan};
use crate::collect::queue::QueuePart;
use crate::collect::tunnels::HostTunnels;
use crate::collect::{Attempt, Collection, Findings, SectionData, Trace};
use crate::metrics::Names;

pub const PASS: &str = "fleetdash.pass";
pub const PROBE: &str = "fleetdash.probe";
pub const ATTEMPT: &str = "fleetdash.attempt";
/// A band change of an element (an element first seen amber or red has no `from`).
pub const TRANSITION: &str = "fleetdash.transition";
/// A task's state change to a state that is not terminal (a terminal one is the span's status).
pub const TASK_STATE: &str = "fleetdash.task.state";
/// An 8xxx occurrence (FALLBACK_USED, RETRY_ATTEMPTED).
pub const STATUS_EVENT: &str = "agent.status";

/// A span's status: an error says only the registry's name of its code.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Unset,
    Ok,
    Error(Cow<'static, str>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub name: &'static str,
    pub at: DateTime<Utc>,
    pub attributes: Attributes,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Planned {
    pub name: &'static str,
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
    pub attributes: Attributes,
    pub outcome: Outcome,
    pub events: Vec<Event>,
    pub children: Vec<Planned>,
}

impl Planned {
    /// Every span of the tree, depth first (tests, the emitter's count).
    pub fn count(&self) -> usize {
        1 + self.children.iter().map(Planned::count).sum::<usize>()
    }
}

/// What one collector's elements looked like at its last pass, by element key (in memory only:
/// a key never leaves the process). Replaced whole at each pass, so an element gone is forgotten.
#[derive(Debug, Default)]
pub struct Memory {
    seen: HashMap<String, Seen>,
}

#[derive(Debug, Clone, Default)]
struct Seen {
    band: Option<Band>,
    state: Option<&'static str>,
}

/// Which collector a pass came from: what `fleetdash.collector` says, and whose [`Memory`].
pub fn collector(findings: &Findings) -> &'static str {
    match findings {
        Findings::Agents { .. } | Findings::Section(SectionData::Agents(_)) => "agents",
        Findings::LivePoll(_) | Findings::Section(SectionData::LiveTasks(_)) => "live_tasks",
        Findings::Projections(_) | Findings::Section(SectionData::Projections(_)) => "projections",
        Findings::Section(SectionData::Board { .. }) => "board",
        Findings::Section(SectionData::Queue(_)) => "queue",
        Findings::Section(SectionData::Systems(_)) => "systems",
        Findings::Section(SectionData::Tunnels(_)) => "tunnels",
        Findings::Section(SectionData::Backups(_)) => "backups",
    }
}

/// The span tree of one pass.
pub fn pass(collection: &Collection, trace: &Trace, names: &Names, memory: &mut Memory) -> Planned {
    let start = collection.checked_at;
    let end = start + chrono::Duration::from_std(collection.duration).unwrap_or_default();
    let mut p = Planner {
        names,
        start,
        end,
        previous: std::mem::take(&mut memory.seen),
        now: HashMap::new(),
        trace,
    };
    let mut outcome = Outcome::Ok;
    let children = match &collection.findings {
        Findings::Agents { rows, .. } | Findings::Section(SectionData::Agents(rows)) => {
            rows.iter().map(|a| p.agent(a)).collect()
        }
        Findings::Section(SectionData::Systems(rows)) => rows.iter().map(|h| p.host(h)).collect(),
        Findings::Section(SectionData::Tunnels(hosts)) => p.tunnels(hosts),
        Findings::Section(SectionData::Board { read, .. }) => match read {
            Probe::Value(board) => board.sources.iter().map(|s| p.board(s, board)).collect(),
            _ => {
                outcome = Outcome::Error("the boards were not read".into());
                Vec::new()
            }
        },
        Findings::Projections(inputs) => inputs.iter().map(|i| p.projection(i)).collect(),
        Findings::Section(SectionData::Projections(done)) => done
            .iter()
            .map(|(board, o)| p.projected(board, o.error_reason().is_some()))
            .collect(),
        Findings::LivePoll(poll) => p.live_poll(poll, &mut outcome),
        Findings::Section(SectionData::LiveTasks(tasks)) => match tasks {
            Probe::Value(tasks) => tasks.iter().map(|t| p.live_task(t)).collect(),
            _ => {
                outcome = Outcome::Error("the live tasks were not read".into());
                Vec::new()
            }
        },
        Findings::Section(SectionData::Queue(part)) => p.queue(part, &mut outcome),
        Findings::Section(SectionData::Backups(b)) => vec![p.element(
            Element::new("backups", p.config_name(Kind::Backup, &b.name)),
            "backups".to_string(),
            Some(b.band),
            &b.status,
            Context::probe(),
            b.checked_at,
        )],
    };
    let failed = children
        .iter()
        .filter(|c| matches!(c.outcome, Outcome::Error(_)))
        .count();
    memory.seen = p.now;
    Planned {
        name: PASS,
        start,
        end,
        attributes: vec![
            (
                "fleetdash.section",
                Value::from(collection.section().as_str()),
            ),
            (
                "fleetdash.collector",
                Value::from(collector(&collection.findings)),
            ),
            ("fleetdash.probes", Value::Int(children.len() as i64)),
            ("fleetdash.probes_failed", Value::Int(failed as i64)),
        ],
        outcome,
        events: Vec::new(),
        children,
    }
}

/// Which list of configured names a name must be in to become a value.
#[derive(Clone, Copy)]
enum Kind {
    Agent,
    Host,
    Check,
    Board,
    Backup,
}

/// The bounded identity of a probed element: its kind, and its configured name when it has one.
struct Element {
    kind: &'static str,
    name: Option<String>,
    extra: Attributes,
}

impl Element {
    fn new(kind: &'static str, name: Option<String>) -> Element {
        Element {
            kind,
            name,
            extra: Vec::new(),
        }
    }

    fn with(mut self, key: &'static str, value: Option<Value>) -> Element {
        if let Some(value) = value {
            self.extra.push((key, value));
        }
        self
    }
}

struct Planner<'a> {
    names: &'a Names,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
    previous: HashMap<String, Seen>,
    now: HashMap<String, Seen>,
    trace: &'a Trace,
}

impl Planner<'_> {
    /// `name` when the config declares it as a `kind`.
    fn config_name(&self, kind: Kind, name: &str) -> Option<String> {
        let n = self.names;
        let known = match kind {
            Kind::Agent => n.agents.contains(name),
            Kind::Host => n.hosts.contains_key(name),
            Kind::Check => n.hosts.values().any(|h| {
                h.services
                    .iter()
                    .chain(&h.tunnels)
                    .chain(&h.crons)
                    .any(|c| c == name)
            }),
            Kind::Board => n.boards.contains(name),
            Kind::Backup => n.backup.as_deref() == Some(name),
        };
        known.then(|| name.to_string())
    }

    /// A moment of this pass: a stamp outside it (a clock step, an element carried over) is
    /// held to its bounds.
    fn within(&self, at: DateTime<Utc>) -> DateTime<Utc> {
        at.clamp(self.start, self.end)
    }

    /// One probe span: from the pass's start to when its element was judged.
    fn element(
        &mut self,
        element: Element,
        key: String,
        band: Option<Band>,
        status: &Asc,
        context: Context,
        checked_at: DateTime<Utc>,
    ) -> Planned {
        let end = self.within(checked_at);
        let mut attributes: Attributes =
            vec![("fleetdash.element.kind", Value::from(element.kind))];
        if let Some(name) = element.name {
            attributes.push(("fleetdash.element.name", Value::Str(Cow::Owned(name))));
        }
        if let Some(band) = band {
            attributes.push(("fleetdash.band", Value::from(band.class())));
        }
        attributes.extend(element.extra);
        attributes.extend(asc::attributes(status, context));
        let failed = asc::is_failure(status) && band.is_none_or(|b| b == Band::Red);
        let mut events = Vec::new();
        if let Some(band) = band {
            events.extend(self.band_change(&key, element.kind, band, status, context, end));
        }
        Planned {
            name: PROBE,
            start: self.start,
            end,
            attributes,
            outcome: if failed {
                Outcome::Error(asc::describe(status))
            } else {
                Outcome::Ok
            },
            events,
            children: Vec::new(),
        }
    }

    /// The event of a band change of `key` (none when it is as it was, or first seen green).
    fn band_change(
        &mut self,
        key: &str,
        kind: &'static str,
        band: Band,
        status: &Asc,
        context: Context,
        at: DateTime<Utc>,
    ) -> Option<Event> {
        let before = self.previous.get(key).and_then(|s| s.band);
        self.now.entry(key.to_string()).or_default().band = Some(band);
        if before == Some(band) || (before.is_none() && band == Band::Green) {
            return None;
        }
        let mut attributes: Attributes = vec![
            ("fleetdash.element.kind", Value::from(kind)),
            ("fleetdash.band.to", Value::from(band.class())),
        ];
        if let Some(before) = before {
            attributes.push(("fleetdash.band.from", Value::from(before.class())));
        }
        attributes.extend(asc::attributes(status, context));
        Some(Event {
            name: TRANSITION,
            at,
            attributes,
        })
    }

    /// The event of a task's state change to a state that is not terminal.
    fn state_change(&mut self, key: &str, state: &'static str, at: DateTime<Utc>) -> Option<Event> {
        let before = self.previous.get(key).and_then(|s| s.state);
        self.now.entry(key.to_string()).or_default().state = Some(state);
        if before == Some(state) || crate::a2a::is_terminal(state) {
            return None;
        }
        let mut attributes: Attributes = vec![("fleetdash.task.state.to", Value::from(state))];
        if let Some(before) = before {
            attributes.push(("fleetdash.task.state.from", Value::from(before)));
        }
        Some(Event {
            name: TASK_STATE,
            at,
            attributes,
        })
    }

    /// The attempts of `kind` `name` this pass tried again, as children in error, and the
    /// 8xxx events they mean for their probe: RETRY_ATTEMPTED for each, FALLBACK_USED when
    /// another variant answered.
    fn attempts(&self, kind: &'static str, name: &str, probe: &mut Planned, answered: bool) {
        let tried: Vec<&Attempt> = self
            .trace
            .attempts
            .iter()
            .filter(|a| a.kind == kind && a.name == name)
            .collect();
        for (i, a) in tried.iter().enumerate() {
            let offset = a.started.saturating_duration_since(self.trace.started);
            let start =
                self.within(self.start + chrono::Duration::from_std(offset).unwrap_or_default());
            let end = self.within(start + chrono::Duration::from_std(a.took).unwrap_or_default());
            let context = Context {
                scope: Scope::ToolCall,
                // Another attempt followed within the pass.
                terminal: Some(false),
                retry_safe: Some(true),
                phase: Some("FINISHED"),
            };
            let mut attributes: Attributes = vec![
                ("fleetdash.element.kind", Value::from(kind)),
                ("fleetdash.attempt", Value::Int(i as i64 + 1)),
                ("fleetdash.attempt.what", Value::from(a.what)),
            ];
            if let Some(variant) = a.variant.and_then(dialect) {
                attributes.push(("fleetdash.a2a.dialect", Value::from(variant)));
            }
            attributes.extend(asc::attributes(&a.asc, context));
            probe.children.push(Planned {
                name: ATTEMPT,
                start,
                end,
                attributes,
                outcome: Outcome::Error(asc::describe(&a.asc)),
                events: Vec::new(),
                children: Vec::new(),
            });
            let code = if answered && a.variant.is_some() {
                asc::FALLBACK_USED
            } else {
                asc::RETRY_ATTEMPTED
            };
            probe.events.push(Event {
                name: STATUS_EVENT,
                at: end,
                attributes: asc::attributes(&code, Context::probe()),
            });
        }
    }

    fn agent(&mut self, a: &Agent) -> Planned {
        let heartbeat = a.heartbeat.value();
        let element = Element::new("agent", self.config_name(Kind::Agent, &a.name))
            .with("fleetdash.agent.up", Some(Value::Bool(a.up)))
            .with(
                "fleetdash.a2a.dialect",
                heartbeat.and_then(|h| dialect(&h.dialect)).map(Value::from),
            );
        let key = fleetdash_model::alerts::key::agent(&a.name);
        let mut span = self.element(
            element,
            key,
            Some(a.band),
            &a.status,
            Context::probe(),
            a.checked_at,
        );
        self.attempts("agent", &a.name, &mut span, heartbeat.is_some());
        span
    }

    fn host(&mut self, h: &System) -> Planned {
        let element = Element::new("host", self.config_name(Kind::Host, &h.host))
            .with("fleetdash.host.source", source(&h.source).map(Value::from));
        let key = fleetdash_model::alerts::key::host(&h.host);
        let mut span = self.element(
            element,
            key,
            Some(h.band),
            &h.status,
            Context::probe(),
            h.checked_at,
        );
        // Tunnels are probed by their own pass; a host's row only holds their places.
        for c in &h.services {
            let s = self.check(&h.host, "service", c);
            span.children.push(s);
        }
        for c in &h.crons {
            let (band, asc) = match c.state {
                CronState::Up => (Band::Green, Asc::SUCCESS),
                // As the host's own judge words it (`collect::systems::rejudge`).
                CronState::Late => (Band::Amber, Asc::SUCCESS_WITH_WARNINGS),
                CronState::Down => (Band::Red, Asc::TIMEOUT),
            };
            let s = self.named(&h.host, "cron", &c.name, band, &asc, c.checked_at);
            span.children.push(s);
        }
        if !matches!(h.vault_parity, Probe::Unknown) {
            let (band, asc) = match h.vault_parity {
                Probe::Value(true) => (Band::Green, Asc::SUCCESS),
                Probe::Value(false) => (Band::Red, Asc::INTEGRITY_CHECK_FAILED),
                _ => (Band::Red, Asc::DEPENDENCY_UNAVAILABLE),
            };
            let s = self.named(&h.host, "vault", "vault", band, &asc, h.checked_at);
            span.children.push(s);
        }
        span
    }

    /// A service or tunnel: red unless it answered ok, as the host's judge has it.
    fn check(&mut self, host: &str, kind: &'static str, c: &NamedCheck) -> Planned {
        let (band, asc) = match (&c.ok, c.stale) {
            // Ok with a reason: amber, as the host's judge words it (a certificate expiring).
            (Probe::Value(true), false) if c.reason.is_some() => {
                (Band::Amber, Asc::SUCCESS_WITH_WARNINGS)
            }
            (Probe::Value(true), false) => (Band::Green, Asc::SUCCESS),
            _ => (Band::Red, Asc::DEPENDENCY_UNAVAILABLE),
        };
        self.named(host, kind, &c.name, band, &asc, c.checked_at)
    }

    fn named(
        &mut self,
        host: &str,
        kind: &'static str,
        name: &str,
        band: Band,
        asc: &Asc,
        checked_at: DateTime<Utc>,
    ) -> Planned {
        let check = if kind == "vault" {
            None
        } else {
            self.config_name(Kind::Check, name)
        };
        let element = Element::new(kind, check).with(
            "fleetdash.host",
            self.config_name(Kind::Host, host)
                .map(|h| Value::Str(Cow::Owned(h))),
        );
        let key = match kind {
            "vault" => fleetdash_model::alerts::key::vault(host),
            _ => fleetdash_model::alerts::key::host_check(host, kind, name),
        };
        self.element(element, key, Some(band), asc, Context::probe(), checked_at)
    }

    fn tunnels(&mut self, hosts: &[HostTunnels]) -> Vec<Planned> {
        let mut out = Vec::new();
        for h in hosts {
            for t in &h.tunnels {
                let s = self.check(&h.host, "tunnel", t);
                out.push(s);
            }
        }
        out
    }

    fn board(&mut self, s: &BoardSource, board: &fleetdash_model::Board) -> Planned {
        let cards = s.cards.value().map(|n| Value::Int(i64::from(*n)));
        let element = Element::new("board", self.config_name(Kind::Board, &s.name))
            .with("fleetdash.board.cards", cards);
        let key = fleetdash_model::alerts::key::board(&s.name);
        // A board has no band of its own: its read failed, or it did not.
        let band = if asc::is_failure(&s.status) {
            Band::Red
        } else {
            Band::Green
        };
        let mut span = self.element(
            element,
            key,
            Some(band),
            &s.status,
            Context::probe(),
            s.checked_at,
        );
        span.attributes.retain(|(k, _)| *k != "fleetdash.band");
        // Its cards' band changes are events of the board's span, without a card's id or title.
        for card in board.cards.iter().filter(|c| c.board == s.name) {
            let key = fleetdash_model::alerts::key::card(&s.name, &card.id);
            let before = self.previous.get(&key).and_then(|s| s.band);
            self.now.entry(key).or_default().band = Some(card.band);
            if before == Some(card.band) || (before.is_none() && card.band == Band::Green) {
                continue;
            }
            let mut attributes: Attributes = vec![
                ("fleetdash.element.kind", Value::from("card")),
                ("fleetdash.band.to", Value::from(card.band.class())),
            ];
            if let Some(before) = before {
                attributes.push(("fleetdash.band.from", Value::from(before.class())));
            }
            span.events.push(Event {
                name: TRANSITION,
                at: span.end,
                attributes,
            });
        }
        self.attempts("board", &s.name, &mut span, false);
        span
    }

    fn projection(&mut self, input: &ProjectionInput) -> Planned {
        let failed = matches!(input.plan, ProjectionPlan::Skip(Probe::Error(_)));
        self.projected(&input.board.name, failed)
    }

    /// A board's projection: whether it could be planned (the write side says the rest).
    fn projected(&mut self, board: &str, failed: bool) -> Planned {
        let mut attributes: Attributes =
            vec![("fleetdash.element.kind", Value::from("projection"))];
        if let Some(name) = self.config_name(Kind::Board, board) {
            attributes.push(("fleetdash.element.name", Value::Str(Cow::Owned(name))));
        }
        Planned {
            name: PROBE,
            start: self.start,
            end: self.end,
            attributes,
            // No code: a projection's refusal is said in words only, on the page.
            outcome: if failed {
                Outcome::Error("not projected".into())
            } else {
                Outcome::Ok
            },
            events: Vec::new(),
            children: Vec::new(),
        }
    }

    fn live_poll(&mut self, poll: &Poll, outcome: &mut Outcome) -> Vec<Planned> {
        if poll.unread_registry.is_some() {
            *outcome = Outcome::Error("the live-task registry was not read".into());
        }
        poll.answers
            .iter()
            .map(|(key, answer)| {
                let (state, asc) = match answer {
                    Answer::Task(facts) => (
                        facts.state,
                        crate::collect::live_tasks::judge::state_code(facts.state),
                    ),
                    Answer::NotFound(_) => (None, Asc::NOT_FOUND),
                    Answer::Failed(f) => (None, f.asc.clone()),
                };
                let id = fleetdash_model::alerts::key::live_task(&key.agent, &key.id);
                self.task("task", &id, &key.agent, state, None, &asc, self.end)
            })
            .collect()
    }

    fn live_task(&mut self, t: &LiveTask) -> Planned {
        let id = fleetdash_model::alerts::key::live_task(&t.agent, &t.id);
        let state = t.state.value().and_then(|s| crate::a2a::wire_state(s));
        let mut span = self.task("task", &id, &t.agent, state, None, &t.status, t.checked_at);
        span.attributes
            .push(("fleetdash.task.stuck", Value::Bool(t.stuck)));
        span
    }

    fn queue(&mut self, part: &QueuePart, outcome: &mut Outcome) -> Vec<Planned> {
        let mut out = Vec::new();
        match &part.tasks {
            Probe::Value(tasks) => {
                for t in tasks {
                    out.push(self.queue_task(t));
                }
            }
            _ => *outcome = Outcome::Error("the work queue was not read".into()),
        }
        for bad in &part.unreadable {
            let key = fleetdash_model::alerts::key::queue_task(&bad.id);
            let element = Element::new("queue_task", None);
            let context = Context {
                scope: Scope::Task,
                ..Context::probe()
            };
            out.push(self.element(
                element,
                key,
                Some(bad.band),
                &bad.status,
                context,
                bad.checked_at,
            ));
        }
        out
    }

    fn queue_task(&mut self, t: &QueueTask) -> Planned {
        let key = fleetdash_model::alerts::key::queue_task(&t.id);
        let owner = t.owner.as_deref().unwrap_or_default();
        let state = crate::a2a::wire_state(&t.state);
        self.task(
            "queue_task",
            &key,
            owner,
            state,
            Some(t.band),
            &t.status,
            t.checked_at,
        )
    }

    /// A task's span: its state (a closed list), its agent when configured, never its id.
    #[allow(clippy::too_many_arguments)]
    fn task(
        &mut self,
        kind: &'static str,
        key: &str,
        agent: &str,
        state: Option<&'static str>,
        band: Option<Band>,
        status: &Asc,
        checked_at: DateTime<Utc>,
    ) -> Planned {
        let element = Element::new(kind, None)
            .with(
                "fleetdash.agent",
                self.config_name(Kind::Agent, agent)
                    .map(|a| Value::Str(Cow::Owned(a))),
            )
            .with("fleetdash.task.state", state.map(Value::from));
        let context = Context {
            scope: Scope::Task,
            terminal: state.map(crate::a2a::is_terminal),
            retry_safe: None,
            phase: Some(phase(state)),
        };
        let mut span = self.element(element, key.to_string(), band, status, context, checked_at);
        if band.is_none() {
            // A live task has no band: its failure is its code's.
            span.outcome = if asc::is_failure(status) && state.is_none_or(crate::a2a::is_terminal) {
                Outcome::Error(asc::describe(status))
            } else {
                Outcome::Ok
            };
        }
        match state {
            Some(state) => {
                let at = span.end;
                span.events.extend(self.state_change(key, state, at));
            }
            // A peer that did not answer this time leaves the task's last state as it was.
            None => {
                let before = self.previous.get(key).and_then(|s| s.state);
                self.now.entry(key.to_string()).or_default().state = before;
            }
        }
        span
    }
}

/// A dialect's name from the closed list.
fn dialect(d: &str) -> Option<&'static str> {
    ["v1", "v0.3", "v0.3-content"].into_iter().find(|x| *x == d)
}

/// A host's source from the closed list.
fn source(s: &str) -> Option<&'static str> {
    ["local", "node_exporter", "ssh"]
        .into_iter()
        .find(|x| *x == s)
}

/// The lifecycle phase of an A2A state.
fn phase(state: Option<&str>) -> &'static str {
    match state {
        Some("TASK_STATE_SUBMITTED") => "QUEUED",
        Some("TASK_STATE_WORKING") => "EXECUTING",
        Some("TASK_STATE_INPUT_REQUIRED" | "TASK_STATE_AUTH_REQUIRED") => "WAITING",
        Some(s) if crate::a2a::is_terminal(s) => "FINISHED",
        _ => "UNKNOWN",
    }
}

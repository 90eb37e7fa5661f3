//! The report bench's fleets and their days: a 1,000-agent fleet with a day of churn and the
//! demo's nine agents after a night, each planned minute by minute ([`Plan`]), configured
//! ([`Case::config`]), its days before put in the transitions log, its work queue filled, and
//! its reported day written as `fleetdash run` writes it ([`Case::write_day`]).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, TimeZone, Utc};
use fleetdash::clock::Clocked;
use fleetdash::collect::board::cap::Cap;
use fleetdash::collect::{SectionData, SectionName, SectionUpdate};
use fleetdash::config::{Config, Rules};
use fleetdash::deps::Deps;
use fleetdash::queue::{
    Ack, Assignment, QueueRules, Report as QueueReport, ReportKind, Reporter, WireState, WorkQueue,
};
use fleetdash::redact::RedactionGate;
use fleetdash::write::status_json::{self, StatusWriter};
use fleetdash::write::transitions::{self, Bounds, TransitionLog};
use fleetdash_model::alerts::key;
use fleetdash_model::{Asc, Band, Board, BoardSource, Card, Probe, Snapshot, Transition};

use crate::common::fleet::{agent as agent_row, host as host_row};

/// The writer's cadence, in minutes.
const CADENCE: i64 = 2;
pub const DAY: i64 = 24 * 60;
/// Days of churn in the log before the reported one.
pub const DAYS_BEFORE: i64 = 6;
const SERVICES: [&str; 3] = ["hermes-gateway", "nginx", "postgres"];
const CARDS_PER_BOARD: usize = 30;
/// The small fleet's cards, by what they are about.
const CARD_TITLES: [&str; 6] = [
    "Summarise the overnight A2A audit",
    "Transcribe episode 14",
    "Draft the weekly digest",
    "Review the backup rotation",
    "Tag the new papers",
    "Refresh the lab inventory",
];

// ---------------------------------------------------------------------------------------------
// The fleet and its day.

/// A spell out of green in a day's plan, in minutes from the day's start (a due 07:30).
#[derive(Debug, Clone)]
pub struct Out {
    pub from: i64,
    /// `None`: still out at the day's end.
    pub to: Option<i64>,
    pub band: Band,
    pub reason: &'static str,
}

impl Out {
    pub fn red(from: i64, to: i64, reason: &'static str) -> Out {
        Out {
            from,
            to: Some(to),
            band: Band::Red,
            reason,
        }
    }

    pub fn covers(&self, minute: i64) -> bool {
        self.from <= minute && self.to.is_none_or(|to| minute < to)
    }
}

/// A day of churn: per element its spells, and the times nothing was written or read.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    pub agents: Vec<Vec<Out>>,
    /// (host, service, spells).
    pub services: Vec<(usize, usize, Vec<Out>)>,
    /// (board, card, spells).
    pub cards: Vec<(usize, usize, Vec<Out>)>,
    /// The systems section not read in `[from, to)`.
    pub systems_unread: Option<(i64, i64)>,
    /// No write at all in each `[from, to)`, and why (the reporter's blind spells).
    pub asleep: Vec<(i64, i64, &'static str)>,
}

impl Plan {
    pub fn band_of(spells: &[Out], minute: i64) -> (Band, Option<&'static str>) {
        spells
            .iter()
            .find(|o| o.covers(minute))
            .map_or((Band::Green, None), |o| (o.band, Some(o.reason)))
    }

    pub fn asleep_at(&self, minute: i64) -> bool {
        self.asleep
            .iter()
            .any(|(a, b, _)| (*a..*b).contains(&minute))
    }
}

/// A small deterministic generator (splitmix64): the same day on every run.
struct Dice(u64);

impl Dice {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: i64) -> i64 {
        (self.next() % n as u64) as i64
    }

    /// A multiple of the cadence in `[lo, hi]` minutes.
    pub fn minutes(&mut self, lo: i64, hi: i64) -> i64 {
        (lo + self.below(hi - lo + 1)) / CADENCE * CADENCE
    }
}

const DOWN: &str = "down: connection refused (tcp connect error)";
const TIMEOUT: &str = "card unreachable: timed out after 10 s";
const SILENT: &str = "last exchange over 30 min ago";

/// The minute of the day (from 07:30) of a local time of day.
fn local(h: i64, m: i64) -> i64 {
    (h * 60 + m - (7 * 60 + 30)).rem_euclid(DAY)
}

/// The big fleet's day `seed`; `reported` is the day the report covers (agents still red at
/// its end; on the days before every spell ends within the day). Agent 777 is red from 4 h
/// before the reported day's start and through it.
fn big_plan(agents: usize, seed: u64, reported: bool) -> Plan {
    let mut dice = Dice(seed);
    let mut order: Vec<usize> = (0..agents).filter(|i| *i != 777).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, dice.below(i as i64 + 1) as usize);
    }
    let mut plan = Plan {
        agents: vec![Vec::new(); agents],
        ..Plan::default()
    };
    let mut next = order.into_iter();
    // Flapping: one or two bursts, each 3-9 red spells of 2-8 min with green gaps of 2-20 min
    // (within the rules' flap gap: one line each), bursts at least an hour apart.
    for i in next.by_ref().take(40) {
        let mut at = dice.minutes(0, DAY / 2);
        for _ in 0..1 + dice.below(2) {
            for _ in 0..3 + dice.below(7) {
                let len = dice.minutes(2, 8);
                if at + len >= DAY - 10 {
                    break;
                }
                let why = if dice.below(3) == 0 { TIMEOUT } else { DOWN };
                plan.agents[i].push(Out::red(at, at + len, why));
                at += len + dice.minutes(2, 20);
            }
            at += dice.minutes(60, DAY / 3);
        }
    }
    // Red for hours.
    for i in next.by_ref().take(12) {
        let len = dice.minutes(60, 360);
        let at = dice.minutes(0, DAY - len - 10);
        plan.agents[i].push(Out::red(at, at + len, DOWN));
    }
    // Red once, briefly.
    for i in next.by_ref().take(25) {
        let at = dice.minutes(0, DAY - 20);
        let len = dice.minutes(2, 10);
        plan.agents[i].push(Out::red(at, at + len, TIMEOUT));
    }
    // Amber a while: silent for over the rules' green window.
    for i in next.by_ref().take(10) {
        let len = dice.minutes(30, 120);
        let at = dice.minutes(0, DAY - len - 10);
        plan.agents[i].push(Out {
            from: at,
            to: Some(at + len),
            band: Band::Amber,
            reason: SILENT,
        });
    }
    // Going red in the night and still red at 07:30 (on a day before: back within hours).
    for i in next.by_ref().take(5) {
        let at = dice.minutes(DAY - 600, DAY - 30);
        let to = (!reported).then(|| (at + 120).min(DAY - 4));
        plan.agents[i].push(Out {
            from: at,
            to,
            band: Band::Red,
            reason: DOWN,
        });
    }
    if reported {
        plan.agents[777].push(Out {
            from: -2 * CADENCE,
            to: None,
            band: Band::Red,
            reason: DOWN,
        });
        plan.services = vec![
            (3, 0, vec![Out::red(local(4, 6), local(4, 36), "failed")]),
            (
                7,
                1,
                vec![
                    Out::red(local(23, 2), local(23, 10), "failed"),
                    Out::red(local(2, 40), local(3, 2), "failed"),
                ],
            ),
        ];
        plan.cards = vec![(
            1,
            4,
            vec![Out::red(local(22, 0), local(1, 0), "crashed (pid 4242)")],
        )];
        plan.systems_unread = Some((local(3, 20), local(3, 52)));
        plan.asleep = vec![
            (local(1, 12), local(1, 40), "the hub was asleep"),
            (local(15, 4), local(15, 16), "fleetdash was not running"),
        ];
    } else if seed == 1 {
        // The day before: agent 777 goes red 4 h before the reported day begins.
        plan.agents[777].push(Out {
            from: DAY - 240,
            to: None,
            band: Band::Red,
            reason: DOWN,
        });
    }
    plan
}

/// The small fleet's night: vega flaps 02:10-03:40, LAB's hermes-gateway is down half an hour
/// and comes back, lyra is amber a while, kai goes red at 06:12 and stays red, the hub sleeps
/// 01:12-01:40, and a card crashes and is restarted. The night before, vega was red once.
fn small_plan(agents: &[&str], reported: bool) -> Plan {
    let at = |name: &str| agents.iter().position(|a| *a == name).expect("an agent");
    let mut plan = Plan {
        agents: vec![Vec::new(); agents.len()],
        ..Plan::default()
    };
    if !reported {
        plan.agents[at("vega")].push(Out::red(local(3, 0), local(3, 4), DOWN));
        return plan;
    }
    for (h, m, len) in [
        (2, 10, 6),
        (2, 24, 8),
        (2, 40, 6),
        (2, 56, 6),
        (3, 10, 8),
        (3, 32, 8),
    ] {
        plan.agents[at("vega")].push(Out::red(local(h, m), local(h, m) + len, DOWN));
    }
    plan.agents[at("lyra")].push(Out {
        from: local(5, 20),
        to: Some(local(6, 4)),
        band: Band::Amber,
        reason: SILENT,
    });
    plan.agents[at("kai")].push(Out {
        from: local(6, 12),
        to: None,
        band: Band::Red,
        reason: DOWN,
    });
    plan.services = vec![(1, 0, vec![Out::red(local(4, 6), local(4, 36), "failed")])];
    plan.cards = vec![(
        0,
        2,
        vec![Out::red(local(23, 40), local(0, 50), "crashed (pid 4242)")],
    )];
    plan.asleep = vec![(local(1, 12), local(1, 40), "the hub was asleep")];
    plan
}

/// What the bench builds a report for: a fleet, its config, its days.
pub struct Case {
    pub name: &'static str,
    pub agents: Vec<String>,
    pub hosts: Vec<String>,
    pub boards: Vec<String>,
    /// The days before the reported one, oldest first (put in the log directly).
    pub before: Vec<Plan>,
    pub day: Plan,
    /// The work queue's tasks in the day: (finished, blocked, orphaned, never taken).
    pub tasks: (usize, usize, usize, usize),
}

impl Case {
    pub fn big() -> Case {
        const AGENTS: usize = 1_000;
        Case {
            name: "1,000 agents",
            agents: (0..AGENTS).map(|i| format!("agent-{i:04}")).collect(),
            hosts: (0..20).map(|h| format!("host-{h:02}")).collect(),
            boards: vec!["research".into(), "ops".into()],
            before: (1..=DAYS_BEFORE)
                .rev()
                .map(|d| big_plan(AGENTS, d as u64, false))
                .collect(),
            day: big_plan(AGENTS, 0, true),
            tasks: (240, 4, 2, 3),
        }
    }

    pub fn small() -> Case {
        const AGENTS: [&str; 9] = [
            "min", "sol", "tam", "echo", "mira", "nova", "kai", "lyra", "vega",
        ];
        Case {
            name: "the demo's 9 agents",
            agents: AGENTS.iter().map(|a| a.to_string()).collect(),
            hosts: vec!["laptop".into(), "LAB".into(), "prod".into()],
            boards: vec!["research".into()],
            before: vec![small_plan(&AGENTS, false)],
            day: small_plan(&AGENTS, true),
            tasks: (14, 0, 1, 0),
        }
    }

    pub fn config(&self, dir: &Path) -> Config {
        let mut text = String::from(
            "output_dir = \"out\"\nstate_dir = \"state\"\n\n[work_queue]\ndb = \"state/tasks.db\"\n\n\
             [report]\nat = \"07:30\"\nzone = \"Europe/Berlin\"\n",
        );
        for (i, a) in self.agents.iter().enumerate() {
            text.push_str(&format!(
                "\n[[agents]]\nname = \"{a}\"\nendpoint = \"http://127.0.0.1:{}/\"\n",
                20000 + i
            ));
        }
        let services = SERVICES.map(|s| format!("\"{s}\"")).join(", ");
        for (i, h) in self.hosts.iter().enumerate() {
            text.push_str(&format!(
                "\n[[hosts]]\nname = \"{h}\"\nsource = \"node_exporter\"\nurl = \"http://127.0.0.1:{}/metrics\"\nservices = [{services}]\n",
                19100 + i
            ));
        }
        for b in &self.boards {
            text.push_str(&format!(
                "\n[[boards]]\nname = \"{b}\"\ndb = \"boards/{b}.db\"\n"
            ));
        }
        let path = dir.join("fleetdash.toml");
        std::fs::write(&path, &text).expect("the config is written");
        Config::parse(&path, &text).unwrap_or_else(|e| panic!("{e}"))
    }
}

/// The reported day's start: 07:30 in Berlin on Monday 30 November 2026.
fn day_start() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 30, 6, 30, 0)
        .single()
        .expect("a valid time")
}

pub fn at(minute: i64) -> DateTime<Utc> {
    day_start() + chrono::Duration::minutes(minute)
}

// ---------------------------------------------------------------------------------------------
// Writing the days.

impl Case {
    /// The days before, straight into the log (through its own append and save: its bounds),
    /// as the writer would have recorded them.
    pub fn fill_log(&self, state: &Path, bounds: Bounds) {
        let log = TransitionLog::new(state, RedactionGate::default(), bounds);
        for (d, plan) in self.before.iter().enumerate() {
            let start = -(self.before.len() as i64 - d as i64) * DAY;
            let mut day: Vec<Transition> = Vec::new();
            let mut spell = |key: String, kind: &str, name: &str, o: &Out| {
                let (from, to) = (start + o.from, o.to.map(|t| start + t));
                day.push(Transition {
                    key: key.clone(),
                    kind: kind.into(),
                    name: name.into(),
                    from: Some(Band::Green),
                    to: o.band,
                    at: at(from),
                    reason: Some(o.reason.into()),
                });
                if let Some(to) = to {
                    day.push(Transition {
                        key,
                        kind: kind.into(),
                        name: name.into(),
                        from: Some(o.band),
                        to: Band::Green,
                        at: at(to),
                        reason: None,
                    });
                }
            };
            for (i, spells) in plan.agents.iter().enumerate() {
                for o in spells {
                    spell(key::agent(&self.agents[i]), "agent", &self.agents[i], o);
                }
            }
            // One write's changes in key order, as `compare` gives them.
            day.sort_by(|a, b| (a.at, &a.key).cmp(&(b.at, &b.key)));
            let end = at(start + DAY - CADENCE);
            let appended = log.append(day, None, end);
            log.save(appended);
        }
    }

    /// The fleet's sections at `minute` of the reported day.
    pub fn updates(&self, rules: &Rules, minute: i64) -> Vec<SectionUpdate> {
        let now = at(minute);
        let plan = &self.day;
        let agents = self
            .agents
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let (band, why) = Plan::band_of(&plan.agents[i], minute);
                let mut a = agent_row(i, band != Band::Red, now);
                a.name = name.clone();
                a.endpoint = format!("http://127.0.0.1:{}/", 20000 + i);
                a.band = band;
                a.reason = why.map(String::from);
                if band == Band::Amber {
                    a.exchange_band = Band::Amber;
                    a.last_exchange_s = Probe::Value(45 * 60);
                }
                a
            })
            .collect();
        let mut updates = vec![SectionUpdate::new(
            SectionData::Agents(agents),
            now,
            Duration::from_millis(900),
        )];
        if !plan
            .systems_unread
            .is_some_and(|(a, b)| (a..b).contains(&minute))
        {
            let hosts = self
                .hosts
                .iter()
                .enumerate()
                .map(|(h, name)| {
                    let mut row = host_row(0, true, now);
                    row.host = name.clone();
                    // Tunnels are a collector of their own; these hosts have none.
                    row.tunnels.clear();
                    for (s, check) in row.services.iter_mut().enumerate() {
                        check.name = SERVICES[s].into();
                        let down = plan.services.iter().find_map(|(ph, ps, spells)| {
                            (*ph == h && *ps == s)
                                .then(|| Plan::band_of(spells, minute).1)
                                .flatten()
                        });
                        if let Some(why) = down {
                            check.ok = Probe::Value(false);
                            check.reason = Some(why.into());
                            row.band = Band::Red;
                            row.reason = Some(format!("service {}: {why}", SERVICES[s]));
                        }
                    }
                    row
                })
                .collect();
            updates.push(SectionUpdate::new(
                SectionData::Systems(hosts),
                now,
                Duration::from_millis(300),
            ));
        }
        let cards = self
            .boards
            .iter()
            .enumerate()
            .flat_map(|(b, board)| {
                (0..CARDS_PER_BOARD).map(move |c| {
                    let why = plan.cards.iter().find_map(|(pb, pc, spells)| {
                        (*pb == b && *pc == c)
                            .then(|| Plan::band_of(spells, minute).1)
                            .flatten()
                    });
                    Card {
                        board: board.clone(),
                        id: format!("t_{b}{c:03}"),
                        title: match CARD_TITLES.get(c) {
                            Some(t) => t.to_string(),
                            None => format!("{board}: work item {c}"),
                        },
                        status: "running".into(),
                        assignee: Some("min".into()),
                        priority: Some(1),
                        age_s: 3600,
                        block_kind: None,
                        latest_activity_at: Some(now),
                        conditions: why.map(|w| vec![w.to_string()]).unwrap_or_default(),
                        band: if why.is_some() {
                            Band::Red
                        } else {
                            Band::Green
                        },
                        checked_at: now,
                        stale: false,
                    }
                })
            })
            .collect();
        let sources = self
            .boards
            .iter()
            .map(|name| BoardSource {
                name: name.clone(),
                plane: None,
                cards: Probe::Value(CARDS_PER_BOARD as u32),
                projection: Probe::Value("unchanged".into()),
                status: Asc::SUCCESS,
                reason: None,
                columns: Vec::new(),
                attention_left_out: Default::default(),
                checked_at: now,
                stale: false,
            })
            .collect();
        updates.push(SectionUpdate::new(
            SectionData::Board {
                read: Probe::Value(Board {
                    columns: vec!["running".into()],
                    cards,
                    sources,
                }),
                cap: Cap::of(rules),
            },
            now,
            Duration::from_millis(200),
        ));
        updates
    }

    /// The reported day, a write every [`CADENCE`] minutes but while asleep. Each write's
    /// merge, staleness and log are `StatusWriter::write_at`'s own calls (`snapshot::apply`
    /// and `finalize`, the elements compared, the log appended and saved); the last write is a
    /// whole `write_at` by a writer set up as `fleetdash run`'s (the folds, the blind-spot
    /// rule), which leaves status.json as the reporter reads it. (Whole writes all day would
    /// take half a second each at 1,000 agents, most of it history and snapshot.html, which
    /// the report never reads.) Returns the writes, the day's time and the last write's.
    pub fn write_day(&self, config: &Config, rules: &Rules) -> (usize, Duration, Duration) {
        let log = TransitionLog::new(&config.state_dir, config.gate(), Bounds::of(&rules.state));
        let configured = [
            SectionName::Agents,
            SectionName::Systems,
            SectionName::Board,
        ];
        let started = Instant::now();
        let (mut writes, mut snap, mut carried) = (0, None::<Snapshot>, Vec::new());
        let last = DAY - CADENCE;
        for minute in (-CADENCE..last).step_by(CADENCE as usize) {
            if self.day.asleep_at(minute) {
                continue;
            }
            let now = at(minute);
            let before = snap.as_ref().map(transitions::elements);
            let mut s = snap
                .take()
                .unwrap_or_else(|| Snapshot::empty(now, rules.view()));
            for update in self.updates(rules, minute) {
                fleetdash::snapshot::apply(&mut s, update);
            }
            fleetdash::snapshot::finalize(
                &mut s,
                &configured,
                rules.view(),
                &Clocked::wall_only(now),
            );
            let changes = transitions::compare(before.as_ref(), &transitions::elements(&s), now);
            let appended = log.append(changes, before.is_some().then_some(carried.as_slice()), now);
            carried = appended.recent(now);
            log.save(appended);
            s.transitions = carried.clone();
            snap = Some(s);
            writes += 1;
        }
        let previous = config
            .gate()
            .to_json(&snap.expect("a write"))
            .expect("JSON");
        std::fs::write(
            config.output_dir.join(status_json::FILE_NAME),
            previous.to_string(),
        )
        .expect("status.json");
        let writer = StatusWriter::new(
            &config.output_dir,
            &config.state_dir,
            config.gate(),
            Bounds::of(&rules.state),
        )
        .expect("a writer")
        .with_blind_spot(
            rules.alerts.blind_spot_percent.percent,
            rules.alerts.blind_spot_min.count,
        )
        .with_set_aside_kept(rules.state.set_aside_kept.count)
        .with_folding(Arc::new(Deps::from_config(config)), rules.needs_you.clone())
        .with_declared(config.flaky.clone());
        let t = Instant::now();
        writer
            .write_at(
                self.updates(rules, last),
                &configured,
                rules.view(),
                at(last),
            )
            .expect("a write");
        (writes + 1, started.elapsed(), t.elapsed())
    }

    /// The work queue's day: tasks assigned through the day, ACKed and finished within minutes;
    /// some blocked, some never taken, some left silent and orphaned by the queue's own sweep.
    pub fn fill_queue(&self, db: &Path, rules: &Rules) {
        let (finished, blocked, orphaned, never) = self.tasks;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        rt.block_on(async {
            let q = WorkQueue::open(db, QueueRules::of(rules))
                .await
                .expect("the queue opens");
            let mut n = 0;
            let mut say = |who: &str, minute: i64, kind: ReportKind| {
                n += 1;
                QueueReport {
                    from: Reporter::Agent(who.to_string()),
                    message_id: format!("m-{n}"),
                    context_id: None,
                    received_at: at(minute),
                    kind,
                }
            };
            let all = finished + blocked + orphaned + never;
            let step = (DAY - 180) / all as i64;
            for t in 0..all {
                let who = &self.agents[(t * 37) % self.agents.len()];
                let minute = t as i64 * step;
                let assign = say(
                    who,
                    minute,
                    ReportKind::Assign(Assignment {
                        title: format!("task {t} for {who}"),
                        owner: Some(who.clone()),
                        tagged: vec![],
                        deadline: None,
                    }),
                );
                let id = q
                    .apply(assign)
                    .await
                    .expect("assigned")
                    .task
                    .expect("a task")
                    .id;
                if t >= finished + blocked + orphaned {
                    continue; // never taken
                }
                let ack = if t >= finished && t < finished + blocked {
                    Ack::Blocked {
                        on: "waiting for the LAB disk".into(),
                    }
                } else {
                    Ack::Owning { eta: None }
                };
                let r = say(
                    who,
                    minute + 1,
                    ReportKind::Ack {
                        task_id: id.clone(),
                        ack,
                    },
                );
                q.apply(r).await.expect("acked");
                if t < finished {
                    let r = say(
                        who,
                        minute + 3,
                        ReportKind::Completion {
                            task_id: id,
                            state: WireState::Completed,
                        },
                    );
                    q.apply(r).await.expect("finished");
                }
            }
            // The silent ones are past the rules' no-reply limit by the day's end.
            q.sweep(at(DAY - 5)).await.expect("a sweep");
            q.close().await.expect("the queue closes");
        });
    }
}

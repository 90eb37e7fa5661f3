//! Benchmark of the morning report (issue 45) for a 1,000-agent fleet after a day of churn: how
//! long the report takes to build, and how big it is where it is read (the phone's notification,
//! the page, the CLI, the webhook and the hub agent). It prints figures and asserts no timing; it
//! asserts the report it times says what the day did (the flaps, the reds, the blind spells), so
//! it cannot pass on an empty report.
//!
//! Run at the repository root:
//!
//!     cargo bench -p fleetdash --bench report
//!
//! Takes a minute or two, most of it the day of snapshot writes.
//!
//! What it does:
//! 1. A fleet of 1,000 agents, 20 hosts of 3 services and 2 boards of 30 cards, configured in a
//!    `fleetdash.toml` with `[report]` at 07:30 in Europe/Berlin and a work queue.
//! 2. The transitions log as the shipped rules bound it (`transitions_log`: max entries, keep,
//!    max bytes): six days before the reported one, each with the same kind of churn, put
//!    through the log's own append and save, so the ring is full as on a fleet that has run
//!    for a while (about 850 changes a day against 4,096 entries).
//! 3. The reported day, written the way `fleetdash run` writes it: every 2 minutes a
//!    `StatusWriter` write (status.json, snapshot.html, history, the transitions log), with the
//!    folds, the blind-spot rule and the bounds a `run` uses. In it: most agents quiet; 40
//!    flapping (one or two bursts of 3-9 red spells of 2-8 min); 12 red for 1-6 h; 25 red once
//!    for a few minutes; 10 amber for half an hour to two hours; 5 going red in the night and
//!    still red at 07:30, one red since the day before; two services down for a while, a card
//!    crashed for three hours; the systems section not read for 32 minutes (stale once); the
//!    hub asleep 01:12-01:40 (no writes, and the reporter's blind spell), fleetdash stopped
//!    for 12 minutes in the afternoon. The work queue gets a day of tasks: finished, blocked,
//!    orphaned (by its own sweep) and never taken.
//! 4. The report of that day, as run's reporter asks for it: `gather::build` (reading
//!    status.json, the log and the queue from disk, then the model's build) and the model's
//!    `glance::report::build` alone, on inputs already in memory, [`RUNS`] times each: min,
//!    median, max. Then the report's size: bytes of `text()` (the CLI, the webhook's `report`,
//!    the hub agent's message), `phone_body()` (ntfy's body), its JSON (`--json`, MCP), and
//!    report.html (`report::page::render`), and the lines of each part.
//! 5. The same for a demo-sized fleet (9 agents, 3 hosts) after a night with a flap, a
//!    recovery, one agent still red and a blind spell: the report docs/report.md shows and the
//!    README's screenshot is taken of.
//!
//! With `FLEETDASH_REPORT_OUT=DIR`, each report's text and report.html are written into DIR
//! (`fleet-1000.txt`, `fleet-1000.html`, `demo.txt`, `demo.html`): docs/img/report-phone.png
//! is `chromium --headless --screenshot --window-size=390,844 DIR/demo.html`.
//!
//! `FLEETDASH_BENCH_QUICK=1` times 5 runs instead of [`RUNS`].

// Helpers some benches do not use.
#[allow(dead_code)]
mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, TimeZone, Utc};
use common::fleet::{agent as agent_row, host as host_row};
use common::shipped_rules;
use fleetdash::clock::Clocked;
use fleetdash::collect::board::cap::Cap;
use fleetdash::collect::{SectionData, SectionName, SectionUpdate};
use fleetdash::config::{Config, Rules};
use fleetdash::deps::Deps;
use fleetdash::queue::{
    Ack, Assignment, QueueRules, Report as QueueReport, ReportKind, Reporter, WireState, WorkQueue,
};
use fleetdash::redact::RedactionGate;
use fleetdash::report::{gather, page, schedule};
use fleetdash::write::status_json::{self, StatusWriter};
use fleetdash::write::transitions::{self, Bounds, TransitionLog};
use fleetdash_model::alerts::key;
use fleetdash_model::glance::report::{self, BlindSpell, Inputs, Report, ReportRules};
use fleetdash_model::{Asc, Band, Board, BoardSource, Card, Probe, Snapshot, Transition};

/// Timed runs of each build.
const RUNS: usize = 20;
/// The writer's cadence, in minutes.
const CADENCE: i64 = 2;
const DAY: i64 = 24 * 60;
/// Days of churn in the log before the reported one.
const DAYS_BEFORE: i64 = 6;
const SERVICES: [&str; 3] = ["hermes-gateway", "nginx", "postgres"];
const CARDS_PER_BOARD: usize = 30;

fn main() {
    let quick = std::env::var_os("FLEETDASH_BENCH_QUICK").is_some();
    let runs = if quick { 5 } else { RUNS };
    println!("== fleetdash report bench ==");
    let rules = shipped_rules();
    let bounds = Bounds::of(&rules.state);
    println!(
        "rules: report.flap_gap {} s, report.phone_lines {}; transitions_log {} entries, {} s, {} B",
        rules.report.flap_gap.seconds,
        rules.report.phone_lines.count,
        bounds.max_entries,
        bounds.keep_s,
        bounds.max_file_bytes
    );

    let big = Case::big();
    let big = big.run(&rules, runs);
    let small = Case::small();
    let small = small.run(&rules, runs);
    if let Some(dir) = std::env::var_os("FLEETDASH_REPORT_OUT") {
        let dir = Path::new(&dir);
        std::fs::create_dir_all(dir).expect("FLEETDASH_REPORT_OUT is a folder");
        for (r, name) in [(&big, "fleet-1000"), (&small, "demo")] {
            std::fs::write(dir.join(format!("{name}.txt")), r.report.text()).expect("written");
            std::fs::write(dir.join(format!("{name}.html")), &r.html).expect("written");
        }
        println!(
            "\nthe reports' text and report.html written to {} (fleet-1000.*, demo.*)",
            dir.display()
        );
    }
    println!("\n== summary ==");
    for r in [&big, &small] {
        r.print_summary();
    }
}

// ---------------------------------------------------------------------------------------------
// The fleet and its day.

/// A spell out of green in a day's plan, in minutes from the day's start (a due 07:30).
#[derive(Debug, Clone)]
struct Out {
    from: i64,
    /// `None`: still out at the day's end.
    to: Option<i64>,
    band: Band,
    reason: &'static str,
}

impl Out {
    fn red(from: i64, to: i64, reason: &'static str) -> Out {
        Out {
            from,
            to: Some(to),
            band: Band::Red,
            reason,
        }
    }

    fn covers(&self, minute: i64) -> bool {
        self.from <= minute && self.to.is_none_or(|to| minute < to)
    }
}

/// A day of churn: per element its spells, and the times nothing was written or read.
#[derive(Debug, Clone, Default)]
struct Plan {
    agents: Vec<Vec<Out>>,
    /// (host, service, spells).
    services: Vec<(usize, usize, Vec<Out>)>,
    /// (board, card, spells).
    cards: Vec<(usize, usize, Vec<Out>)>,
    /// The systems section not read in `[from, to)`.
    systems_unread: Option<(i64, i64)>,
    /// No write at all in each `[from, to)`, and why (the reporter's blind spells).
    asleep: Vec<(i64, i64, &'static str)>,
}

impl Plan {
    fn band_of(spells: &[Out], minute: i64) -> (Band, Option<&'static str>) {
        spells
            .iter()
            .find(|o| o.covers(minute))
            .map_or((Band::Green, None), |o| (o.band, Some(o.reason)))
    }

    fn asleep_at(&self, minute: i64) -> bool {
        self.asleep
            .iter()
            .any(|(a, b, _)| (*a..*b).contains(&minute))
    }
}

/// A small deterministic generator (splitmix64): the same day on every run.
struct Dice(u64);

impl Dice {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: i64) -> i64 {
        (self.next() % n as u64) as i64
    }

    /// A multiple of the cadence in `[lo, hi]` minutes.
    fn minutes(&mut self, lo: i64, hi: i64) -> i64 {
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
struct Case {
    name: &'static str,
    agents: Vec<String>,
    hosts: Vec<String>,
    boards: Vec<String>,
    /// The days before the reported one, oldest first (put in the log directly).
    before: Vec<Plan>,
    day: Plan,
    /// The work queue's tasks in the day: (finished, blocked, orphaned, never taken).
    tasks: (usize, usize, usize, usize),
}

impl Case {
    fn big() -> Case {
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

    fn small() -> Case {
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

    fn config(&self, dir: &Path) -> Config {
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

fn at(minute: i64) -> DateTime<Utc> {
    day_start() + chrono::Duration::minutes(minute)
}

// ---------------------------------------------------------------------------------------------
// Writing the days.

impl Case {
    /// The days before, straight into the log (through its own append and save: its bounds),
    /// as the writer would have recorded them.
    fn fill_log(&self, state: &Path, bounds: Bounds) {
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
    fn updates(&self, rules: &Rules, minute: i64) -> Vec<SectionUpdate> {
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
                        title: format!("{board}: work item {c}"),
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
    fn write_day(&self, config: &Config, rules: &Rules) -> (usize, Duration, Duration) {
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
    fn fill_queue(&self, db: &Path, rules: &Rules) {
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

// ---------------------------------------------------------------------------------------------
// The report, timed.

struct Figures {
    name: &'static str,
    writes: usize,
    write_time: Duration,
    log_entries: usize,
    log_bytes: u64,
    status_bytes: u64,
    model: [Duration; 3],
    gather: [Duration; 3],
    render: [Duration; 3],
    report: Report,
    html: String,
    json_bytes: usize,
}

fn spread(mut d: Vec<Duration>) -> [Duration; 3] {
    d.sort();
    [d[0], d[d.len() / 2], d[d.len() - 1]]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

impl Case {
    fn run(&self, rules: &Rules, runs: usize) -> Figures {
        println!("\n== {} ==", self.name);
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("a folder");
        let config = self.config(dir.path());
        for d in [&config.state_dir, &config.output_dir] {
            std::fs::create_dir_all(d).expect("the state and output folders");
        }
        let bounds = Bounds::of(&rules.state);
        self.fill_log(&config.state_dir, bounds);
        let before = transitions::read_log(&config.state_dir)
            .expect("the log")
            .len();
        let db = &config.work_queue.as_ref().expect("a work queue").db;
        self.fill_queue(db, rules);
        let (writes, write_time, last_write) = self.write_day(&config, rules);
        let log = transitions::read_log(&config.state_dir).expect("the log");
        let log_bytes = file_len(&config.state_dir.join(transitions::FILE_NAME));
        let status_path = config.output_dir.join(status_json::FILE_NAME);
        let status_bytes = file_len(&status_path);
        let in_day = log.iter().filter(|t| t.at >= at(0)).count();
        println!(
            "{} agents, {} hosts, {} boards; the log: {before} entries from the days before, \
             {in_day} from the reported day; {} entries ({log_bytes} B) after it, from {}",
            self.agents.len(),
            self.hosts.len(),
            self.boards.len(),
            log.len(),
            log.first().map_or("-".into(), |t| t.at.to_rfc3339()),
        );
        println!(
            "the day: {writes} writes in {:.1} s; the last, a whole StatusWriter::write_at, {}; \
             status.json {status_bytes} B",
            write_time.as_secs_f64(),
            ms(last_write)
        );
        assert!(log.len() <= bounds.max_entries, "the log keeps its bound");

        // As run's reporter asks for it at 07:30.
        let report_config = config.report.clone().expect("[report]");
        let (zone, offset) = fleetdash::report::zone_at(&config, at(DAY));
        let period = gather::Period {
            word: schedule::word(&report_config).to_string(),
            from: at(0),
            to: at(DAY),
            before: Some(at(-DAY)),
            watching_since: Some(at(-DAYS_BEFORE * DAY)),
            blind: self
                .day
                .asleep
                .iter()
                .map(|(a, b, why)| BlindSpell {
                    from: at(*a),
                    to: at(*b),
                    why: why.to_string(),
                })
                .collect(),
            late: None,
            zone: (zone, offset),
        };
        let mut gathered = Vec::with_capacity(runs);
        let mut report = None;
        for _ in 0..runs {
            let t = Instant::now();
            let r = gather::build(&config, rules, &period).expect("the report");
            gathered.push(t.elapsed());
            report = Some(r);
        }
        let report = report.expect("a run");

        // The model's build alone, on what gather read.
        let snapshot: Snapshot =
            serde_json::from_slice(&std::fs::read(&status_path).expect("status.json"))
                .expect("a snapshot");
        let inputs = Inputs {
            word: period.word.clone(),
            from: period.from,
            to: period.to,
            before: period.before,
            log: &log,
            log_whole_from: report.known_from.min(period.from),
            snapshot: &snapshot,
            work: gather::work_tally(db, period.from, period.to).ok(),
            blind: &period.blind,
            late: None,
            rules: ReportRules {
                flap_gap_s: rules.report.flap_gap.seconds as i64,
                phone_lines: rules.report.phone_lines.count as usize,
                page_lines: rules.report.page_lines.count as usize,
            },
            offset,
            zone: period.zone.0.clone(),
        };
        let mut built = Vec::with_capacity(runs);
        for _ in 0..runs {
            let t = Instant::now();
            let r = report::build(&inputs);
            built.push(t.elapsed());
            assert_eq!(r, report, "the model builds what gather built");
        }
        let mut rendered = Vec::with_capacity(runs);
        let mut html = String::new();
        for _ in 0..runs {
            let t = Instant::now();
            html = page::render(&report).expect("report.html");
            rendered.push(t.elapsed());
        }
        self.check(&report);
        let json_bytes = serde_json::to_string(&report).expect("JSON").len();
        let figures = Figures {
            name: self.name,
            writes,
            write_time,
            log_entries: log.len(),
            log_bytes,
            status_bytes,
            model: spread(built),
            gather: spread(gathered),
            render: spread(rendered),
            report,
            html,
            json_bytes,
        };
        figures.print_report();
        figures
    }

    /// The report says what the day did: the bench times a real report, not an empty one.
    fn check(&self, r: &Report) {
        let still_red = self
            .day
            .agents
            .iter()
            .filter(|s| s.iter().any(|o| o.to.is_none()))
            .count();
        assert!(
            r.needs_now.len() >= still_red.min(1),
            "what is still red leads: {:?}",
            r.needs_now
        );
        assert!(!r.recovered.is_empty(), "the day's spells are said");
        assert!(
            r.blind.iter().any(|l| l.contains("the hub was asleep")),
            "the hub's sleep is a blind spot: {:?}",
            r.blind
        );
        assert!(!r.all_clear);
        assert_eq!(r.known_from, r.from, "the log reaches back over the day");
        let phone = r.phone_body().lines().count();
        assert!(
            phone <= r.lines().len().min(5),
            "the phone gets a few lines"
        );
    }
}

fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

impl Figures {
    fn print_report(&self) {
        let r = &self.report;
        println!("title: {}", r.title);
        println!("phone body ({} B):", r.phone_body().len());
        for line in r.phone_body().lines() {
            println!("  | {line}");
        }
        let text = r.text();
        let lines: Vec<&str> = text.lines().collect();
        println!("text ({} lines), the first 14:", lines.len());
        for line in lines.iter().take(14) {
            println!("  | {line}");
        }
        if lines.len() > 14 {
            println!("  | ... ({} more lines)", lines.len() - 14);
        }
    }

    fn print_summary(&self) {
        let r = &self.report;
        let [a, b, c] = self.model;
        let [d, e, f] = self.gather;
        let [g, h, i] = self.render;
        println!("{}:", self.name);
        println!(
            "  the day: {} writes, {:.1} s; the log {} entries, {} B; status.json {} B",
            self.writes,
            self.write_time.as_secs_f64(),
            self.log_entries,
            self.log_bytes,
            self.status_bytes
        );
        println!(
            "  build: glance::report::build min {} / median {} / max {}; gather::build (files read) min {} / median {} / max {}; page::render min {} / median {} / max {}",
            ms(a),
            ms(b),
            ms(c),
            ms(d),
            ms(e),
            ms(f),
            ms(g),
            ms(h),
            ms(i)
        );
        let text = r.text();
        let phone = r.phone_body();
        println!(
            "  size: text() {} B in {} lines; phone_body() {} B in {} lines; JSON {} B; report.html {} B",
            text.len(),
            text.lines().count(),
            phone.len(),
            phone.lines().count(),
            self.json_bytes,
            self.html.len()
        );
        println!(
            "  lines: title {:?}; needs now {}, recovered {}, blind {}, work {}, rest 1; red time {}; the page's list {} + red time {}",
            r.title,
            r.needs_now.len(),
            r.recovered.len(),
            r.blind.len(),
            usize::from(r.work.is_some()),
            r.red_time.len(),
            r.lines().len(),
            r.red_time.len(),
        );
    }
}

//! A month of state (issue 33): 30 simulated days of a demo-sized fleet's churn driven through
//! fleetdash's own write paths on a clock the bench moves, printing the size of every file
//! fleetdash keeps at the end of each day, and asserting that each one plateaus.
//!
//! Run from a clean clone, at the repository root:
//!
//!     cargo bench -p fleetdash --bench month_of_state
//!
//! `FLEETDASH_BENCH_DAYS=N` simulates N days instead of 30 (the plateau is judged from 16).
//!
//! What it drives, every simulated 10 minutes (a pass), with the shipped `config/rules.yaml`:
//! - the collectors' findings through `write::Writer` (status.json, snapshot.html, history,
//!   transitions, the live-task registry and its escalations, set-aside copies listed and
//!   pruned): 11 agents (agent-00 down every other hour, agent-01 down 20 min every 6 h), 3
//!   hosts (host-0's first service failed 1 h in 3), each agent with a live A2A task renewed
//!   every 3 h (agent-02's never progresses: stuck, escalated), and the work queue read by its
//!   own collector;
//! - the work queue through `WorkQueue` (tasks.db): a heartbeat from every agent each pass, a
//!   task assigned every 2 h (ACKed and completed or failed; one in ten owned by an agent that
//!   falls silent, orphaned by the watchdog and escalated; one in ten never ACKed, cancelled by
//!   the operator's dismissal at the end of the day; one in ten a two-agent race), the
//!   watchdog's sweep (and with it the file's retention) each pass, finished failures dismissed;
//! - alerting: the engine's pass after each write (alerts-engine.json), its alerts into the
//!   outbox for two channels (alerts-outbox.sqlite), taken and marked delivered, the `hub`
//!   channel failing from 03:00 to 05:00 every day, the outbox pruned hourly as the delivery
//!   loop does;
//! - the operator: a silence added every morning and one at noon (the morning's ended early
//!   every other day), the open alerts acked twice a day from the CLI, phone links made for
//!   every host alert that fires and used the next pass (an ack, every fourth a silence, every
//!   third used twice and refused), and twice a day a state file cut in half, as a failing disk
//!   would, so that its next load moves it aside.
//!
//! The plateau: for each file, the largest size (and row count) over days 16-30 is at most 1.25
//! times the largest over days 1-15, plus 4 KiB of slack for files of a few entries. A file that
//! grows steadily is at twice its first half's peak by day 30, and fails.

// Helpers some benches do not use.
#[allow(dead_code)]
mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use chrono::{DateTime, Duration, Timelike, Utc};
use common::fleet::{AGENTS, HOSTS, agent, host, start};
use common::{shipped_rules, verdict};
use fleetdash::a2a::TaskFacts;
use fleetdash::alerting::acks::AckStore;
use fleetdash::alerting::engine::{Alerting, gone, readings};
use fleetdash::alerting::outbox::{Limits, Outbox};
use fleetdash::alerting::phone::{Action, LinkMaker, PhoneActions};
use fleetdash::alerting::provider::SendError;
use fleetdash::alerting::silences::SilenceStore;
use fleetdash::alerting::{Alert, AlertEvent};
use fleetdash::clock::{Clock, ManualClocks};
use fleetdash::collect::live_tasks::registry::{Mention, Origin, TaskKey};
use fleetdash::collect::live_tasks::{Answer, Answers, Poll};
use fleetdash::collect::queue::{QueueCollector, QueueSource};
use fleetdash::collect::{Collection, Collector, Findings, SectionData, SectionName};
use fleetdash::config::Config;
use fleetdash::config::maintenance::Matcher;
use fleetdash::queue::{
    Ack, Assignment, QueueRules, Report, ReportKind, Reporter, Retention, WireState, WorkQueue,
};
use fleetdash::redact::RedactionGate;
use fleetdash::watchdog::sweep::escalate;
use fleetdash::write::Writer;
use fleetdash::write::escalations::Escalations;
use fleetdash::write::transitions;

/// One pass of the simulated run.
const PASS_MIN: i64 = 10;
const PASSES_PER_DAY: i64 = 24 * 60 / PASS_MIN;
const CHANNELS: [&str; 2] = ["ntfy", "hub"];
/// The plateau's allowance: the second half's peak over the first half's, and a few KiB for
/// files of a few entries.
const PLATEAU_FACTOR: f64 = 1.25;
const PLATEAU_SLACK_BYTES: u64 = 4096;
/// The state files a failing disk cuts in half, two a day in turn.
const BREAKABLE: [&str; 6] = [
    "history.json",
    "transitions.json",
    "alerts-engine.json",
    "silences.json",
    "acks.json",
    "phone-actions-used.json",
];

fn main() {
    let days: i64 = std::env::var("FLEETDASH_BENCH_DAYS")
        .ok()
        .and_then(|d| d.parse().ok())
        .unwrap_or(30);
    println!("== fleetdash month of state bench: {days} simulated days ==");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let started = Instant::now();
    let marks = runtime.block_on(simulate(days));
    let took = started.elapsed();
    print_table(&marks);
    let ok = judge_plateaus(&marks);
    println!(
        "\n{days} simulated days ({} passes) in {:.0} s",
        days * PASSES_PER_DAY,
        took.as_secs_f64()
    );
    assert!(ok, "a file kept growing: see the MISSED lines above");
}

// ---------------------------------------------------------------------------------------------
// The simulated run.

/// A work-queue task of the scenario and what its owner does with it.
struct SimTask {
    id: String,
    owner: String,
    kind: TaskKind,
    assigned: i64,
    finished: bool,
}

#[derive(Clone, Copy, PartialEq)]
enum TaskKind {
    /// ACKed the next pass, completed (or failed) an hour later.
    Normal { fails: bool },
    /// ACKed, then never heard of again: the watchdog orphans it.
    Silent,
    /// Nobody ACKs it: red, cancelled by the operator's dismissal in the evening.
    Unacked,
    /// Tagged to two agents, both ACK; the second is refused as already owned.
    Race { other: usize },
}

/// Everything the run holds, built as `fleetdash run` builds it.
struct Run {
    dir: PathBuf,
    state_dir: PathBuf,
    hands: Arc<ManualClocks>,
    clock: Clock,
    rules: fleetdash::config::Rules,
    writer: Writer,
    queue: Arc<WorkQueue>,
    queue_collector: QueueCollector,
    escalations: Escalations,
    alerting: Alerting,
    outbox: Outbox,
    silences: SilenceStore,
    acks: AckStore,
    links: LinkMaker,
    phone: PhoneActions,
    gate: RedactionGate,
    tasks: Vec<SimTask>,
    messages: u64,
    /// Phone links made when an alert fired, used at the next pass: (token, twice).
    links_to_use: Vec<(String, bool)>,
    morning_silence: Option<String>,
}

async fn simulate(days: i64) -> Vec<DayMark> {
    // The sizes are the point, not the disk's speed: on tmpfs when there is one, where an fsync
    // costs nothing (the run is 4,320 passes of a dozen each).
    let shm = Path::new("/dev/shm");
    let work = if shm.is_dir() {
        tempfile::tempdir_in(shm)
    } else {
        tempfile::tempdir()
    }
    .expect("a temporary directory");
    println!("files under {}", work.path().display());
    let mut run = Run::new(work.path()).await;
    let mut marks = Vec::new();
    for pass in 1..=days * PASSES_PER_DAY {
        run.hands
            .pass(std::time::Duration::from_secs(60 * PASS_MIN as u64));
        run.pass(pass).await;
        if pass % PASSES_PER_DAY == 0 {
            run.idle_minute().await;
            let mark = run.measure(pass / PASSES_PER_DAY);
            println!("day {:>2} measured", mark.day);
            marks.push(mark);
        }
    }
    let queue = run.queue.clone();
    drop(run);
    if let Ok(queue) = Arc::try_unwrap(queue) {
        queue.close().await.expect("the queue closes");
    }
    marks
}

impl Run {
    async fn new(dir: &Path) -> Run {
        std::fs::write(
            dir.join("rules.yaml"),
            include_str!("../../config/rules.yaml"),
        )
        .expect("rules.yaml written");
        let config_path = dir.join("fleetdash.toml");
        std::fs::write(
            &config_path,
            "output_dir = \"out\"\nstate_dir = \"state\"\nrules = \"rules.yaml\"\n\n\
             [alerts]\ndashboard_url = \"https://fleet.example/\"\n",
        )
        .expect("the config written");
        let (config, rules): (Config, _) =
            Config::load(&config_path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(rules.state, shipped_rules().state, "the shipped rules");
        let hands = Arc::new(ManualClocks::at(start()));
        let clock = Clock::new(hands.clone(), rules.clock.settings());
        clock.now();
        let gate = config.gate();
        let writer = Writer::new(&config, &rules, gate.clone())
            .expect("a writer")
            .with_clock(clock.clone());
        let queue = Arc::new(
            WorkQueue::open(&config.state_dir.join("tasks.db"), QueueRules::of(&rules))
                .await
                .expect("the work queue")
                .with_clock(clock.clone()),
        );
        let queue_collector = QueueCollector::new(
            QueueSource::Shared(queue.clone()),
            QueueRules::of(&rules),
            Retention::of(&rules),
            std::time::Duration::from_secs(60 * PASS_MIN as u64),
        );
        Run {
            dir: dir.to_path_buf(),
            state_dir: config.state_dir.clone(),
            escalations: Escalations::new(&config.state_dir, &rules.state),
            alerting: Alerting::new(&config, &rules, gate.clone()),
            outbox: Outbox::open(&config.state_dir, gate.clone(), Limits::of(&rules.alerts))
                .expect("the outbox"),
            silences: SilenceStore::new(&config.state_dir, gate.clone()),
            acks: AckStore::new(&config.state_dir, gate.clone()),
            links: LinkMaker::from_config(&config, &rules.alerts)
                .expect("a dashboard URL")
                .with_clock(Some(clock.clone())),
            phone: PhoneActions::new(&config, &rules.alerts, gate.clone())
                .with_clock(Some(clock.clone())),
            hands,
            clock,
            rules,
            writer,
            queue,
            queue_collector,
            gate,
            tasks: Vec::new(),
            messages: 0,
            links_to_use: Vec::new(),
            morning_silence: None,
        }
    }

    /// What a real run has between two passes and the bench does not: idle time. The queue's
    /// checkpointer checkpoints at a commit after its pause (`CHECKPOINT_PAUSE`, real time),
    /// and a commit after a complete checkpoint starts the WAL afresh, cutting it back to
    /// `queue_file.wal_kept_bytes`. The bench's passes, milliseconds apart, never let that happen: without
    /// this the WAL would measure the bench's speed, not the file. So before each day's
    /// measure: the pause passes, a heartbeat's commit wakes the checkpointer, which catches
    /// up, and the next heartbeat's commit starts the WAL afresh.
    async fn idle_minute(&mut self) {
        let pause = fleetdash::queue::CHECKPOINT_PAUSE;
        for wait in [pause + pause / 5, pause / 2] {
            tokio::time::sleep(wait).await;
            let now = self.now();
            self.apply(
                Reporter::Agent(agent_name(0)),
                now,
                ReportKind::Heartbeat {
                    last_activity_at: Some(now),
                    in_flight: Vec::new(),
                },
            )
            .await;
        }
    }

    fn now(&self) -> DateTime<Utc> {
        self.clock.clocked().wall()
    }

    async fn pass(&mut self, pass: i64) {
        let now = self.now();
        let minute_of_day = i64::from(now.hour()) * 60 + i64::from(now.minute());
        self.use_phone_links();
        self.queue_reports(pass, now).await;
        let at = self.clock.clocked();
        let events = self.queue.sweep_at(at.clone()).await.expect("a sweep");
        escalate(
            &events,
            &self.escalations,
            &self.rules.no_reply,
            &self.gate,
            &at,
        )
        .expect("the escalations written");
        if minute_of_day == 4 * 60 || minute_of_day == 16 * 60 {
            self.break_a_state_file(pass);
        }
        let snapshot = self.write(pass, now).await;
        let firing = self.alert(&snapshot).await;
        self.deliver(now, pass);
        self.operator(minute_of_day, pass, now, &firing).await;
    }

    // --- the work queue -------------------------------------------------------------------

    fn message(&mut self) -> String {
        self.messages += 1;
        format!("m{}", self.messages)
    }

    async fn apply(&mut self, from: Reporter, at: DateTime<Utc>, kind: ReportKind) {
        let report = Report {
            from,
            message_id: self.message(),
            context_id: Some("bench".into()),
            received_at: at,
            kind,
        };
        // Refusals (the race's loser) are part of the scenario.
        let _ = self.queue.apply(report).await;
    }

    async fn queue_reports(&mut self, pass: i64, now: DateTime<Utc>) {
        // Every agent's heartbeat, all at once (the writer commits them together).
        let beats: Vec<Report> = (0..AGENTS)
            .map(|i| {
                let name = agent_name(i);
                let in_flight = self
                    .tasks
                    .iter()
                    .filter(|t| !t.finished && t.owner == name && t.kind != TaskKind::Silent)
                    .filter(|t| t.kind != TaskKind::Unacked)
                    .map(|t| t.id.clone())
                    .collect();
                Report {
                    from: Reporter::Agent(name),
                    message_id: format!("beat-{pass}-{i}"),
                    context_id: None,
                    received_at: now,
                    kind: ReportKind::Heartbeat {
                        last_activity_at: Some(now),
                        in_flight,
                    },
                }
            })
            .collect();
        futures::future::join_all(beats.into_iter().map(|b| self.queue.apply(b))).await;
        // A task assigned every 2 h.
        if pass % 12 == 0 {
            let k = pass / 12;
            let owner = usize::try_from(k).unwrap_or(0) % AGENTS;
            let kind = match k % 10 {
                7 => TaskKind::Silent,
                8 => TaskKind::Unacked,
                9 => TaskKind::Race {
                    other: (owner + 1) % AGENTS,
                },
                n => TaskKind::Normal { fails: n == 3 },
            };
            let (owner_field, tagged) = match kind {
                TaskKind::Race { other } => (None, vec![agent_name(owner), agent_name(other)]),
                _ => (Some(agent_name(owner)), Vec::new()),
            };
            let report = Report {
                from: Reporter::Operator,
                message_id: self.message(),
                context_id: None,
                received_at: now,
                kind: ReportKind::Assign(Assignment {
                    title: format!("rotate the keys of batch {k}"),
                    owner: owner_field,
                    tagged,
                    deadline: Some(now + Duration::hours(4)),
                }),
            };
            if let Ok(applied) = self.queue.apply(report).await
                && let Some(task) = applied.task
            {
                self.tasks.push(SimTask {
                    id: task.id,
                    owner: agent_name(owner),
                    kind,
                    assigned: pass,
                    finished: false,
                });
            }
        }
        // What the owners do with their tasks.
        let mut steps = Vec::new();
        for t in self.tasks.iter().filter(|t| !t.finished) {
            let age = pass - t.assigned;
            match (t.kind, age) {
                (TaskKind::Unacked, _) => {}
                (TaskKind::Race { other }, 1) => {
                    steps.push((t.owner.clone(), t.id.clone(), Step::Own));
                    steps.push((agent_name(other), t.id.clone(), Step::Own));
                }
                (_, 1) => steps.push((t.owner.clone(), t.id.clone(), Step::Own)),
                (TaskKind::Normal { fails }, 7) => {
                    steps.push((t.owner.clone(), t.id.clone(), Step::Finish(fails)))
                }
                (TaskKind::Race { .. }, 7) => {
                    steps.push((t.owner.clone(), t.id.clone(), Step::Finish(false)))
                }
                _ => {}
            }
        }
        for (who, id, step) in steps {
            let kind = match step {
                Step::Own => ReportKind::Ack {
                    task_id: id.clone(),
                    ack: Ack::Owning { eta: None },
                },
                Step::Finish(fails) => ReportKind::Completion {
                    task_id: id.clone(),
                    state: if fails {
                        WireState::Failed
                    } else {
                        WireState::Completed
                    },
                },
            };
            self.apply(Reporter::Agent(who), now, kind).await;
            if matches!(step, Step::Finish(_))
                && let Some(t) = self.tasks.iter_mut().find(|t| t.id == id)
            {
                t.finished = true;
            }
        }
        // The watchdog orphans the silent ones: the bench forgets them an hour later.
        for t in self.tasks.iter_mut() {
            if t.kind == TaskKind::Silent && pass - t.assigned > 6 {
                t.finished = true;
            }
        }
        // Only the scenario's own record of its tasks is trimmed: the queue keeps its own.
        self.tasks
            .retain(|t| pass - t.assigned < PASSES_PER_DAY * 2);
    }

    // --- the collectors' findings, written ------------------------------------------------

    async fn write(&mut self, pass: i64, now: DateTime<Utc>) -> fleetdash_model::Snapshot {
        let hour = i64::from(now.hour());
        let minute_of_day = hour * 60 + i64::from(now.minute());
        let up = |i: usize| match i {
            0 => hour % 2 == 0,
            1 => minute_of_day % 360 >= 20,
            _ => true,
        };
        let rows = (0..AGENTS).map(|i| agent(i, up(i), now)).collect();
        // Each agent's live task, renewed every 3 h (a generation).
        let generation = pass / 18;
        let mentions: Vec<Mention> = (0..AGENTS)
            .filter(|&i| up(i))
            .map(|i| Mention {
                agent: agent_name(i),
                wire: Some("v1".into()),
                origin: Origin::Heartbeat,
                id: format!("t_{i:02}_{generation:05}"),
            })
            .collect();
        let mut answers = Answers::new();
        for i in 0..AGENTS {
            for g in [generation.saturating_sub(1), generation] {
                let finished = g < generation;
                // agent-02's task never progresses: stuck, escalated once.
                let updated_at = if i == 2 { start() } else { now };
                answers.insert(
                    TaskKey::new(&agent_name(i), &format!("t_{i:02}_{g:05}")),
                    Answer::Task(TaskFacts {
                        state: Some(if finished {
                            "TASK_STATE_COMPLETED"
                        } else {
                            "TASK_STATE_WORKING"
                        }),
                        updated_at: Some(updated_at),
                    }),
                );
            }
        }
        let service_up = hour % 3 != 0;
        let systems = (0..HOSTS)
            .map(|h| host(h, h != 0 || service_up, now))
            .collect();
        let collection = |findings| Collection {
            findings,
            checked_at: now,
            duration: std::time::Duration::from_millis(40),
        };
        let queue = self.queue_collector.collect(&self.clock).await;
        let collections = vec![
            collection(Findings::Agents { rows, mentions }),
            collection(Findings::LivePoll(Poll {
                answers,
                unread_registry: None,
            })),
            collection(Findings::Section(SectionData::Systems(systems))),
            collection(queue),
        ];
        let configured = [
            SectionName::Agents,
            SectionName::LiveTasks,
            SectionName::Queue,
            SectionName::Systems,
        ];
        self.writer
            .write(collections, &configured, self.rules.view())
            .expect("the snapshot written")
    }

    // --- alerting -------------------------------------------------------------------------

    /// The engine's pass, its alerts into the outbox, its state saved (as `Alerts::decide`
    /// does); returns what is firing.
    async fn alert(&mut self, snapshot: &fleetdash_model::Snapshot) -> Vec<Alert> {
        let at = self.clock.clocked().with_wall(snapshot.generated_at);
        let decision = self.alerting.decide_clocked(
            &transitions::elements(snapshot),
            &readings(snapshot),
            &gone::ended(snapshot),
            &at,
        );
        let with_channels: Vec<(&Alert, &[&str])> =
            decision.alerts.iter().map(|a| (a, &CHANNELS[..])).collect();
        self.outbox
            .enqueue_all(&with_channels, at.wall())
            .expect("alerts kept");
        assert!(self.alerting.commit(&decision), "the engine state saved");
        // Every host alert that fires gets the phone's buttons.
        for (n, a) in decision
            .alerts
            .iter()
            .filter(|a| a.event == AlertEvent::Firing && a.key.starts_with("host:"))
            .enumerate()
        {
            let action = if n % 4 == 3 {
                Action::Silence
            } else {
                Action::Ack
            };
            let link = self.links.link(&a.key, action, at.wall()).expect("a link");
            let token = url::Url::parse(&link)
                .expect("a URL")
                .query_pairs()
                .find(|(k, _)| k == "t")
                .map(|(_, v)| v.into_owned())
                .expect("a token");
            self.links_to_use.push((token, n % 3 == 2));
        }
        decision.firing
    }

    /// The delivery loop's work on the outbox: due items taken and marked, the `hub` channel
    /// failing from 03:00 to 05:00; pruned hourly.
    fn deliver(&self, now: DateTime<Utc>, pass: i64) {
        let hub_down = (3..5).contains(&now.hour());
        let due = self.outbox.due(now).expect("due items");
        let mut by_channel: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for item in &due {
            by_channel
                .entry(item.channel.as_str())
                .or_default()
                .push(item.alert.id.as_str());
        }
        for (channel, ids) in by_channel {
            if channel == "hub" && hub_down {
                let error = SendError {
                    retryable: true,
                    reason: "503".into(),
                };
                self.outbox
                    .failed_group(&ids, channel, &error, now)
                    .expect("marked failed");
            } else {
                self.outbox
                    .delivered_group(&ids, channel, now)
                    .expect("marked delivered");
            }
        }
        if pass % 6 == 0 {
            self.outbox.prune(now).expect("the outbox pruned");
        }
    }

    fn use_phone_links(&mut self) {
        for (token, twice) in std::mem::take(&mut self.links_to_use) {
            let done = self.phone.act_now(&token).expect("the link's files");
            if twice {
                let again = self.phone.act_now(&token).expect("the link's files");
                assert!(done.is_err() || again.is_err(), "a link works once");
            }
        }
    }

    // --- the operator ---------------------------------------------------------------------

    async fn operator(
        &mut self,
        minute_of_day: i64,
        pass: i64,
        now: DateTime<Utc>,
        firing: &[Alert],
    ) {
        let day = pass / PASSES_PER_DAY;
        match minute_of_day {
            // 08:00: a silence for host-0's disk swap.
            480 => {
                let s = self
                    .silences
                    .add(
                        vec![Matcher::parse("host=host-0").expect("a matcher")],
                        Duration::hours(2),
                        "disk swap",
                        now,
                    )
                    .expect("a silence");
                self.morning_silence = Some(s.id);
            }
            // 09:00: ended early every other day.
            540 if day % 2 == 0 => {
                if let Some(id) = self.morning_silence.take() {
                    self.silences.end(&id, now).expect("the silence ended");
                }
            }
            // Noon: agent-00 silenced for its flapping.
            720 => {
                self.silences
                    .add(
                        vec![Matcher::parse("name=agent-00").expect("a matcher")],
                        Duration::minutes(30),
                        "flapping, looked at",
                        now,
                    )
                    .expect("a silence");
            }
            // 10:00 and 20:00: what is firing, acked from the CLI.
            600 | 1200 => {
                for a in firing {
                    let _ = self.acks.ack(&a.key, now, "cli");
                }
            }
            // 18:00: the day's failures dismissed; the tasks nobody took cancelled.
            1080 => {
                let rows = self.queue.list().await.expect("the queue's rows");
                for row in rows.iter().filter(|r| r.dismissed_at.is_none()) {
                    let failed = row.state == WireState::Failed;
                    let unacked = row.state == WireState::Submitted && row.ack.is_none();
                    if failed || unacked {
                        let _ = self.queue.dismiss(&row.id, unacked, now).await;
                    }
                }
            }
            _ => {}
        }
    }

    /// A failing disk: a state file cut in half, so that its next load moves it aside.
    fn break_a_state_file(&self, pass: i64) {
        let n = usize::try_from(pass / (PASSES_PER_DAY / 2)).unwrap_or(0) % BREAKABLE.len();
        let path = self.state_dir.join(BREAKABLE[n]);
        if let Ok(bytes) = std::fs::read(&path) {
            std::fs::write(&path, &bytes[..bytes.len() / 2]).expect("the file cut");
        }
    }

    // --- measuring ------------------------------------------------------------------------

    fn measure(&self, day: i64) -> DayMark {
        let out = self.dir.join("out");
        let state = &self.state_dir;
        let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        let with_sidecars = |name: &str| {
            ["", "-wal", "-shm"]
                .iter()
                .map(|s| size(&state.join(format!("{name}{s}"))))
                .sum::<u64>()
        };
        let count = |db: &str, sql: &str| -> u64 {
            let c = rusqlite::Connection::open_with_flags(
                state.join(db),
                rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
            )
            .expect("the database");
            c.query_row(sql, [], |r| r.get::<_, i64>(0))
                .map(|n| n as u64)
                .expect("a count")
        };
        let mut aside = (0u64, 0u64);
        let mut files = 0u64;
        for entry in std::fs::read_dir(state).expect("state_dir").flatten() {
            files += 1;
            if entry.file_name().to_string_lossy().contains(".corrupt-") {
                aside.0 += 1;
                aside.1 += entry.metadata().map(|m| m.len()).unwrap_or(0);
            }
        }
        let mut sizes = Vec::new();
        let mut put = |name: &'static str, v: u64| sizes.push((name, v));
        put("status.json", size(&out.join("status.json")));
        put("snapshot.html", size(&out.join("snapshot.html")));
        put("history.json", size(&state.join("history.json")));
        put("transitions.json", size(&state.join("transitions.json")));
        put(
            "escalations.jsonl+.1",
            size(&state.join("escalations.jsonl")) + size(&state.join("escalations.jsonl.1")),
        );
        put("live_tasks.json", size(&state.join("live_tasks.json")));
        put(
            "alerts-engine.json",
            size(&state.join("alerts-engine.json")),
        );
        put("silences.json", size(&state.join("silences.json")));
        put("acks.json", size(&state.join("acks.json")));
        put(
            "phone-actions-used.json",
            size(&state.join("phone-actions-used.json")),
        );
        put(
            "alerts-outbox.sqlite",
            size(&state.join("alerts-outbox.sqlite")),
        );
        put(
            "outbox -wal -shm",
            with_sidecars("alerts-outbox.sqlite") - size(&state.join("alerts-outbox.sqlite")),
        );
        put(
            "outbox rows",
            count("alerts-outbox.sqlite", "SELECT count(*) FROM outbox"),
        );
        put("tasks.db", size(&state.join("tasks.db")));
        put(
            "tasks.db -wal -shm",
            with_sidecars("tasks.db") - size(&state.join("tasks.db")),
        );
        put(
            "tasks rows",
            count("tasks.db", "SELECT count(*) FROM tasks"),
        );
        put(
            "events rows",
            count("tasks.db", "SELECT count(*) FROM events"),
        );
        put("set-aside copies", aside.0);
        put("set-aside bytes", aside.1);
        put("state_dir files", files);
        DayMark { day, sizes }
    }
}

enum Step {
    Own,
    Finish(bool),
}

fn agent_name(i: usize) -> String {
    format!("agent-{i:02}")
}

// ---------------------------------------------------------------------------------------------
// The table and the verdicts.

struct DayMark {
    day: i64,
    /// Each file's figure, in the table's order.
    sizes: Vec<(&'static str, u64)>,
}

impl DayMark {
    fn get(&self, name: &str) -> u64 {
        self.sizes
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(0, |(_, v)| *v)
    }
}

/// What is a count of rows or files rather than bytes: judged without the bytes' slack.
fn is_count(name: &str) -> bool {
    name.ends_with("rows") || name.ends_with("copies") || name.ends_with("files")
}

fn print_table(marks: &[DayMark]) {
    let Some(first) = marks.first() else {
        return;
    };
    let names: Vec<&str> = first.sizes.iter().map(|(n, _)| *n).collect();
    println!(
        "\n== each kept file at the end of each simulated day (bytes; rows and files counted) =="
    );
    print!("{:>3}", "day");
    for name in &names {
        print!(" {name:>w$}", w = name.len().max(8));
    }
    println!();
    for mark in marks {
        print!("{:>3}", mark.day);
        for name in &names {
            print!(" {:>w$}", mark.get(name), w = name.len().max(8));
        }
        println!();
    }
}

/// Every series plateaus: its peak over the second half of the run is at most
/// [`PLATEAU_FACTOR`] times its peak over the first half (plus [`PLATEAU_SLACK_BYTES`] for
/// byte sizes).
fn judge_plateaus(marks: &[DayMark]) -> bool {
    let half = marks.len() / 2;
    if half == 0 {
        println!("too few days to judge a plateau");
        return true;
    }
    println!(
        "\n== plateau: peak of days {}-{} <= {PLATEAU_FACTOR} x peak of days 1-{half} (+ {PLATEAU_SLACK_BYTES} B for sizes) ==",
        half + 1,
        marks.len()
    );
    let mut all_ok = true;
    for (name, _) in &marks[0].sizes {
        let peak = |ms: &[DayMark]| ms.iter().map(|m| m.get(name)).max().unwrap_or(0);
        let (early, late) = (peak(&marks[..half]), peak(&marks[half..]));
        let slack = if is_count(name) {
            0
        } else {
            PLATEAU_SLACK_BYTES
        };
        let ok = late as f64 <= early as f64 * PLATEAU_FACTOR + slack as f64;
        all_ok &= ok;
        let at = |d: usize| marks.get(d - 1).map_or(0, |m| m.get(name));
        println!(
            "{name:<24} day 1 {:>9}  day 7 {:>9}  day {} {:>9}  peak 1-{half} {early:>9}, {}-{} {late:>9}  {}",
            at(1),
            at(7.min(marks.len())),
            marks.len(),
            at(marks.len()),
            half + 1,
            marks.len(),
            verdict(ok)
        );
    }
    all_ok
}

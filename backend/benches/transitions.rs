//! Benchmark of the transitions log: what comparing and recording cost per write, and the log's
//! size over a simulated week. It prints figures beside their targets and asserts no timing; it
//! asserts the data it times (each flap recorded, the bounds held), so it cannot pass on empty
//! work.
//!
//! Run from a clean clone, at the repository root:
//!
//!     cargo bench -p fleetdash --bench transitions
//!
//! Takes about a minute, most of it the week of writes (each one that records a change fsyncs
//! `transitions.json`, as the writer does).
//!
//! What it measures:
//! 1. A week of writes every 2 minutes (5,041 writes) over a demo-sized fleet: 11 agents,
//!    3 hosts of 3 services, 3 tunnels, 3 crons and a vault, a board of 60 cards, backups.
//!    One agent flaps on every write (the most a cadence allows), a service every 15 writes,
//!    a card every 10; the rest is steady. Driven through the calls `StatusWriter::write_at`
//!    makes: the elements of the previous and new snapshots and their comparison ("compare"),
//!    then the log's load, append, bound and save ("record"). Time per write, and the log's
//!    entries and bytes at each day's mark (targets: at most the rules'
//!    `transitions_log.max_entries` and `max_file_bytes`; no growth once the ring is full).
//! 2. A 10,000-card board (the board_read bench's size), one card changing band per write:
//!    compare per write.
//! 3. Whole `StatusWriter::write_at` writes (status.json, snapshot.html, history, transitions),
//!    one agent flapping, then nothing changing, each with the week's full log and with an
//!    empty one: the log's share of a write.
//!
//! `FLEETDASH_BENCH_QUICK=1` simulates one day and fewer whole writes (a few seconds).

// Helpers some benches do not use.
#[allow(dead_code)]
mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use common::fleet::{AGENTS, CADENCE_MIN, HOSTS, WRITES_PER_DAY, agent, host, start};
use common::{micros, shipped_rules, verdict};
use fleetdash::collect::{SectionData, SectionName, SectionUpdate};
use fleetdash::redact::RedactionGate;
use fleetdash::write::status_json::StatusWriter;
use fleetdash::write::transitions::{self, Bounds, TransitionLog, compare, elements};
use fleetdash_model::{Asc, Backups, Band, Board, BoardSource, Card, Probe, RulesView, Snapshot};

const CARDS: usize = 60;
const BIG_BOARD: usize = 10_000;
/// A service flaps every this many writes; a card every [`CARD_FLAP_EVERY`].
const SERVICE_FLAP_EVERY: i64 = 15;
const CARD_FLAP_EVERY: i64 = 10;

/// The shipped rules' `transitions_log` bounds.
fn bounds() -> Bounds {
    Bounds::of(&shipped_rules().state)
}

fn main() {
    let quick = std::env::var_os("FLEETDASH_BENCH_QUICK").is_some();
    println!("== fleetdash transitions bench ==");
    let days = if quick { 1 } else { 7 };
    if quick {
        println!("FLEETDASH_BENCH_QUICK is set: one day, fewer whole writes");
    }
    let work = tempfile::tempdir().expect("a temporary directory");
    let rules = shipped_rules().view();

    let week = week_case(work.path(), days, &rules);
    let big = big_board_case(&rules, if quick { 20 } else { 100 });
    let whole_writes = if quick { 20 } else { 100 };
    // Interleaved, one write of each in turn, so the shared disk's moods fall on all four.
    let mut whole = [
        Whole::new(work.path(), "full", Some(&week.log_path), true),
        Whole::new(work.path(), "empty", None, true),
        Whole::new(work.path(), "full-steady", Some(&week.log_path), false),
        Whole::new(work.path(), "empty-steady", None, false),
    ];
    for w in 0..whole_writes {
        for case in &mut whole {
            case.write(w);
        }
    }
    let [full, empty, full_steady, empty_steady] =
        whole.map(|c| (c.median_us(), c.entries_at_start));

    println!();
    println!("== summary ==");
    println!(
        "per write over {days} day(s) every {CADENCE_MIN} min, {} elements: compare {:.0} µs mean ({:.0} µs p99); record (load + append + save with fsync) {:.0} µs mean ({:.0} µs p99) [{} writes, {} transitions]",
        week.elements,
        week.compare.mean,
        week.compare.p99,
        week.record.mean,
        week.record.p99,
        week.writes,
        week.transitions,
    );
    let Bounds {
        max_entries,
        max_file_bytes,
        ..
    } = bounds();
    println!(
        "transitions.json after 1 day: {} entries, {} B; after {days} day(s): {} entries, {} B (targets: ≤ {max_entries} entries, ≤ {max_file_bytes} B, no growth once full) {}",
        week.day_marks[0].0,
        week.day_marks[0].1,
        week.day_marks.last().expect("a day").0,
        week.day_marks.last().expect("a day").1,
        verdict(week.bounded),
    );
    println!(
        "compare on a {BIG_BOARD}-card board: {:.0} µs mean ({:.0} µs p99) [{} writes]",
        big.mean, big.p99, big.n
    );
    println!(
        "whole StatusWriter::write_at, one agent flapping: {:.0} µs median with the full log ({} entries) vs {:.0} µs with an empty one: the log costs {:+.0} µs a write [{} writes each, interleaved]",
        full.0,
        full.1,
        empty.0,
        full.0 - empty.0,
        whole_writes,
    );
    println!(
        "whole StatusWriter::write_at, nothing changing: {:.0} µs median with the full log ({} entries; status.json carrying its last day) vs {:.0} µs with an empty one: {:+.0} µs a write [{} writes each, interleaved]",
        full_steady.0,
        full_steady.1,
        empty_steady.0,
        full_steady.0 - empty_steady.0,
        whole_writes,
    );
}

struct Stats {
    mean: f64,
    p99: f64,
    n: usize,
}

fn stats(mut samples: Vec<Duration>) -> Stats {
    samples.sort();
    let n = samples.len();
    Stats {
        mean: micros(samples.iter().sum::<Duration>()) / n as f64,
        p99: micros(samples[(n * 99 / 100).min(n - 1)]),
        n,
    }
}

// ---------------------------------------------------------------------------------------------
// The fleet: its agents and hosts are the shared ones (common::fleet), its board this bench's.

fn card(i: usize, red: bool, now: DateTime<Utc>) -> Card {
    Card {
        board: "research".into(),
        id: format!("t_{i:05}"),
        title: format!("Survey the literature, part {i}"),
        status: "running".into(),
        assignee: Some("min".into()),
        priority: Some(1),
        age_s: 3600,
        block_kind: None,
        latest_activity_at: Some(now),
        conditions: if red {
            vec!["crashed (pid 4242)".into()]
        } else {
            Vec::new()
        },
        band: if red { Band::Red } else { Band::Green },
        checked_at: now,
        stale: false,
    }
}

/// The fleet at write `step`: agent 0 down on odd steps, host 0's first service down in odd
/// runs of [`SERVICE_FLAP_EVERY`] writes, card 0 red in odd runs of [`CARD_FLAP_EVERY`].
fn fleet(step: i64, cards: usize, rules: &RulesView, now: DateTime<Utc>) -> Snapshot {
    let mut s = Snapshot::empty(now, rules.clone());
    s.stale = false;
    for meta in [
        &mut s.sections.agents,
        &mut s.sections.board,
        &mut s.sections.live_tasks,
        &mut s.sections.systems,
        &mut s.sections.backups,
    ] {
        meta.configured = true;
        meta.checked_at = Some(now);
    }
    s.agents = Probe::Value(
        (0..AGENTS)
            .map(|i| agent(i, i != 0 || step % 2 == 0, now))
            .collect(),
    );
    let service_up = (step / SERVICE_FLAP_EVERY) % 2 == 0;
    s.systems = Probe::Value(
        (0..HOSTS)
            .map(|h| host(h, h != 0 || service_up, now))
            .collect(),
    );
    let card_red = (step / CARD_FLAP_EVERY) % 2 == 1;
    s.tasks.board = Probe::Value(Board {
        columns: vec!["running".into()],
        cards: (0..cards)
            .map(|i| card(i, i == 0 && card_red, now))
            .collect(),
        sources: vec![BoardSource {
            name: "research".into(),
            plane: Some("heart".into()),
            cards: Probe::Value(u32::try_from(cards).unwrap_or(u32::MAX)),
            projection: Probe::Value("unchanged".into()),
            status: Asc::SUCCESS,
            reason: None,
            columns: Vec::new(),
            attention_left_out: Default::default(),
            checked_at: now,
            stale: false,
        }],
    });
    s.tasks.live = Probe::Value(Vec::new());
    s.backups = Probe::Value(Backups {
        name: "gdrive".into(),
        gdrive_latest: Probe::Value(now),
        age_h: Probe::Value(2.0),
        band: Band::Green,
        status: Asc::SUCCESS,
        reason: None,
        checked_at: now,
        stale: false,
    });
    s
}

// ---------------------------------------------------------------------------------------------
// 1. A simulated week.

struct WeekCase {
    elements: usize,
    writes: usize,
    transitions: usize,
    compare: Stats,
    record: Stats,
    /// (entries, bytes) at each day's mark.
    day_marks: Vec<(usize, u64)>,
    bounded: bool,
    log_path: std::path::PathBuf,
}

fn week_case(dir: &Path, days: i64, rules: &RulesView) -> WeekCase {
    let state = dir.join("week-state");
    std::fs::create_dir_all(&state).expect("state dir");
    let bounds = bounds();
    let log = TransitionLog::new(&state, RedactionGate::default(), bounds);
    let steps = days * WRITES_PER_DAY;
    println!(
        "week: {days} day(s) of writes every {CADENCE_MIN} min ({} writes), state in {}",
        steps + 1,
        state.display()
    );
    let mut previous = fleet(0, CARDS, rules, start());
    let element_count = elements(&previous).len();
    let (mut compares, mut records) = (Vec::new(), Vec::new());
    let mut transitions = 0;
    let mut day_marks = Vec::new();
    let mut bounded = true;
    let mut carried = Vec::new();
    for step in 1..=steps {
        let now = start() + chrono::Duration::minutes(CADENCE_MIN * step);
        let next = fleet(step, CARDS, rules, now);
        let t0 = Instant::now();
        let before = elements(&previous);
        let changes = compare(Some(&before), &elements(&next), now);
        let t1 = Instant::now();
        let n = changes.len();
        assert!(n >= 1, "agent 0 flaps on every write (step {step})");
        transitions += n;
        let appended = log.append(changes, Some(&carried), now);
        carried = appended.recent(now);
        log.save(appended);
        let t2 = Instant::now();
        compares.push(t1 - t0);
        records.push(t2 - t1);
        previous = next;
        let bytes = std::fs::metadata(log.path()).expect("the log").len();
        bounded &= bytes as usize <= bounds.max_file_bytes;
        if step % WRITES_PER_DAY == 0 {
            let entries = log.read().expect("the log reads back");
            bounded &= entries.len() <= bounds.max_entries;
            println!(
                "  after day {}: {} entries, {bytes} B; compare {:.0} µs, record {:.0} µs per write so far",
                step / WRITES_PER_DAY,
                entries.len(),
                stats(compares.clone()).mean,
                stats(records.clone()).mean,
            );
            day_marks.push((entries.len(), bytes));
        }
    }
    // Once the ring is full, the file holds max_entries of the same shape: no growth.
    if let (Some(first_full), Some(last)) = (
        day_marks.iter().find(|(n, _)| *n == bounds.max_entries),
        day_marks.last(),
    ) {
        bounded &= last.0 == bounds.max_entries && last.1.abs_diff(first_full.1) <= 64;
    }
    WeekCase {
        elements: element_count,
        writes: compares.len(),
        transitions,
        compare: stats(compares),
        record: stats(records),
        day_marks,
        bounded,
        log_path: log.path().to_path_buf(),
    }
}

// ---------------------------------------------------------------------------------------------
// 2. A 10,000-card board.

fn big_board_case(rules: &RulesView, writes: usize) -> Stats {
    let mut previous = fleet(0, BIG_BOARD, rules, start());
    let mut samples = Vec::with_capacity(writes);
    for w in 1..=writes {
        let step = w as i64 * CARD_FLAP_EVERY;
        let now = start() + chrono::Duration::minutes(CADENCE_MIN * step);
        let next = fleet(step, BIG_BOARD, rules, now);
        let t0 = Instant::now();
        let changes = compare(Some(&elements(&previous)), &elements(&next), now);
        samples.push(t0.elapsed());
        assert!(
            changes.iter().any(|t| t.kind == "card"),
            "card 0 changes band on every write here"
        );
        previous = next;
    }
    stats(samples)
}

// ---------------------------------------------------------------------------------------------
// 3. Whole writes.

/// A writer of its own (output and state folders), with the week's log or none, writing the
/// agents section with agent 0 flapping on each write when `flap`.
struct Whole {
    writer: StatusWriter,
    with_log: bool,
    flap: bool,
    entries_at_start: usize,
    from: DateTime<Utc>,
    rules: RulesView,
    samples: Vec<Duration>,
}

impl Whole {
    fn new(dir: &Path, name: &str, log: Option<&Path>, flap: bool) -> Whole {
        let (out, state) = (
            dir.join(format!("whole-{name}/out")),
            dir.join(format!("whole-{name}/state")),
        );
        std::fs::create_dir_all(&state).expect("state dir");
        if let Some(log) = log {
            std::fs::copy(log, state.join(transitions::FILE_NAME)).expect("copy the week's log");
        }
        let entries = transitions::read_log(&state).expect("the log reads");
        Whole {
            writer: StatusWriter::new(&out, &state, RedactionGate::default(), bounds())
                .expect("a writer"),
            with_log: log.is_some(),
            flap,
            entries_at_start: entries.len(),
            // Continue where the week's log ends.
            from: entries.last().map_or_else(start, |t| t.at)
                + chrono::Duration::minutes(CADENCE_MIN),
            rules: shipped_rules().view(),
            samples: Vec::new(),
        }
    }

    /// Write number `w`, timed.
    fn write(&mut self, w: usize) {
        let now = self.from + chrono::Duration::minutes(CADENCE_MIN * w as i64);
        let up = |i: usize| i != 0 || !self.flap || w.is_multiple_of(2);
        let update = SectionUpdate {
            data: SectionData::Agents((0..AGENTS).map(|i| agent(i, up(i), now)).collect()),
            checked_at: now,
            duration: Duration::from_millis(1),
        };
        let t0 = Instant::now();
        let snap = self
            .writer
            .write_at(
                vec![update],
                &[SectionName::Agents],
                self.rules.clone(),
                now,
            )
            .expect("a write");
        self.samples.push(t0.elapsed());
        if !self.flap {
            assert_eq!(
                !snap.transitions.is_empty(),
                self.with_log,
                "status.json carries the log's last day"
            );
        } else if w > 0 {
            assert_eq!(
                snap.transitions.first().map(|t| (t.key.as_str(), t.at)),
                Some(("agent:agent-00", now)),
                "agent 0 flapped at write {w}"
            );
        }
    }

    fn median_us(&self) -> f64 {
        let mut s = self.samples.clone();
        s.sort();
        micros(s[s.len() / 2])
    }
}

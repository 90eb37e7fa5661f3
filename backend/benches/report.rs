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
//! Takes about 15 s once built, most of it the day of snapshot writes.
//!
//! What it does:
//! 1. A fleet of 1,000 agents, 20 hosts of 3 services and 2 boards of 30 cards, configured in a
//!    `fleetdash.toml` with `[report]` at 07:30 in Europe/Berlin and a work queue.
//! 2. The transitions log as the shipped rules bound it (`transitions_log`: max entries, keep,
//!    max bytes): six days before the reported one, each with the same kind of churn, put
//!    through the log's own append and save, so the ring is full as on a fleet that has run
//!    for a while (about 850 changes a day against 4,096 entries).
//! 3. The reported day, written the way `fleetdash run` writes it: every 2 minutes the calls of
//!    `StatusWriter::write_at` the report depends on (the merge and staleness of
//!    `snapshot::apply` and `finalize`, the elements compared, the log appended and saved
//!    within its bounds), and last a whole `write_at` by a writer set up as `run`'s (the folds,
//!    the blind-spot rule), which leaves status.json as the reporter reads it (whole writes all
//!    day would take 0.4 s each at 1,000 agents, for history and snapshot.html, which the
//!    report never reads). In it: most agents quiet; 40
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
//! With `FLEETDASH_REPORT_OUT=DIR`, each report is written into DIR as text, phone body, JSON
//! and report.html (`fleet-1000.txt`, `.phone.txt`, `.json`, `.html`; `demo.*`):
//! docs/img/report-phone.png is `chromium --headless --screenshot --window-size=390,844
//! DIR/demo.html`, then `pngquant` and `optipng`.
//!
//! `FLEETDASH_BENCH_QUICK=1` times 5 runs instead of [`RUNS`].

// Helpers some benches do not use.
#[allow(dead_code)]
mod common;
#[path = "report/fleet.rs"]
mod fleet;

use std::path::Path;
use std::time::{Duration, Instant};

use common::shipped_rules;
use fleet::{Case, DAY, DAYS_BEFORE, at};
use fleetdash::config::Rules;
use fleetdash::report::{gather, page, schedule};
use fleetdash::write::status_json;
use fleetdash::write::transitions::{self, Bounds};
use fleetdash_model::Snapshot;
use fleetdash_model::glance::report::{self, BlindSpell, Inputs, Report, ReportRules};

/// Timed runs of each build.
const RUNS: usize = 20;

fn main() {
    let quick = std::env::var_os("FLEETDASH_BENCH_QUICK").is_some();
    let runs = if quick { 5 } else { RUNS };
    println!("== fleetdash report bench ==");
    let rules = shipped_rules();
    let bounds = Bounds::of(&rules.state);
    println!(
        "rules: report.flap_gap {} s, report.phone_lines {}, report.page_lines {}; transitions_log {} entries, {} s, {} B",
        rules.report.flap_gap.seconds,
        rules.report.phone_lines.count,
        rules.report.page_lines.count,
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
            std::fs::write(dir.join(format!("{name}.phone.txt")), r.report.phone_body())
                .expect("written");
            let json = serde_json::to_string_pretty(&r.report).expect("JSON");
            std::fs::write(dir.join(format!("{name}.json")), json).expect("written");
        }
        println!(
            "\nthe reports written to {} (fleet-1000.*, demo.*)",
            dir.display()
        );
    }
    println!("\n== summary ==");
    for r in [&big, &small] {
        r.print_summary();
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
    page_lines: u64,
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
            first: false,
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
            first: false,
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
            page_lines: rules.report.page_lines.count,
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
        let page = r.page();
        let folded = page.recovered.folded.len() + page.red_time.folded.len();
        let on_page = r.lines().len() + r.red_time.len() - folded
            + usize::from(page.recovered.more.is_some())
            + usize::from(page.red_time.more.is_some());
        println!(
            "  lines: title {:?}; needs now {}, recovered {}, blind {}, work {}, rest 1; red time {}; \
             the page shows {on_page} and folds {folded} (report.page_lines {} a part)",
            r.title,
            r.needs_now.len(),
            r.recovered.len(),
            r.blind.len(),
            usize::from(r.work.is_some()),
            r.red_time.len(),
            self.page_lines,
        );
        for more in [&page.recovered.more, &page.red_time.more]
            .into_iter()
            .flatten()
        {
            println!("  the page's fold: {more:?}");
        }
    }
}

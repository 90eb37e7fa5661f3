//! The reporter against a real outbox (SQLite in a temp dir) and a clock moved by hand: one
//! report per due moment across ticks, restarts, a crash after the write-ahead, a clock stepped
//! back, a sleep over the hour.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use chrono::TimeZone;
use fleetdash_model::Snapshot;

use super::*;
use crate::alerting::outbox::{Limits, Outbox};
use crate::clock::ManualClocks;
use crate::config::fixtures::manual_clock;

/// 06:00 in Berlin (CET, +01:00) on Saturday 7 March 2026: the report is due at 07:30 local,
/// 06:30 UTC.
fn six_am() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 7, 5, 0, 0).unwrap()
}

fn due_today() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 7, 6, 30, 0).unwrap()
}

struct Fleet {
    dir: tempfile::TempDir,
    config: Arc<Config>,
    rules: Arc<Rules>,
    outbox: Arc<Outbox>,
    hands: Arc<ManualClocks>,
    clock: Clock,
}

impl Fleet {
    fn new() -> Fleet {
        // In memory (tmpfs): these count reports, not durability, and each tick syncs the
        // state file (a day of ticks is hundreds of fsyncs on a shared disk).
        let dir = tempfile::tempdir_in("/dev/shm").expect("a tmpfs at /dev/shm (Linux)");
        let root = dir.path();
        let text = format!(
            "output_dir = \"{}/out\"\nstate_dir = \"{}/state\"\n\
             [[alerts.channels]]\ntype = \"webhook\"\nname = \"hook\"\nurl = \"http://127.0.0.1:9/\"\n\
             [report]\nat = \"07:30\"\nzone = \"Europe/Berlin\"\n",
            root.display(),
            root.display()
        );
        let config = Config::parse(&root.join("f.toml"), &text).unwrap();
        std::fs::create_dir_all(&config.output_dir).unwrap();
        std::fs::create_dir_all(&config.state_dir).unwrap();
        let rules = Rules::built_in().unwrap();
        let outbox = Arc::new(
            Outbox::open(&config.state_dir, config.gate(), Limits::of(&rules.alerts)).unwrap(),
        );
        let (hands, clock) = manual_clock(six_am());
        let fleet = Fleet {
            dir,
            config: Arc::new(config),
            rules: Arc::new(rules),
            outbox,
            hands,
            clock,
        };
        fleet.write_snapshot();
        fleet
    }

    /// A fresh process: a new reporter on the same files and clock.
    fn reporter(&self) -> Reporter {
        let delivery = Arc::new(Delivery::new(self.outbox.clone(), Vec::new()));
        Reporter::of(
            self.config.clone(),
            self.rules.clone(),
            Some(delivery),
            self.clock.clone(),
        )
        .unwrap()
    }

    /// status.json as the writer would leave it now.
    fn write_snapshot(&self) {
        let mut s = Snapshot::empty(self.hands.wall(), self.rules.view());
        s.stale = false;
        let path = self.config.output_dir.join(status_json::FILE_NAME);
        std::fs::write(path, serde_json::to_vec(&s).unwrap()).unwrap();
    }

    /// The reports waiting in the outbox, by id.
    fn reports(&self) -> Vec<Alert> {
        let far = self.hands.wall() + chrono::Duration::days(30);
        self.outbox
            .due(far)
            .unwrap()
            .into_iter()
            .map(|i| i.alert)
            .filter(|a| a.event == AlertEvent::Report)
            .collect()
    }

    fn state(&self) -> State {
        match state::load(&self.config.state_dir, self.hands.wall()) {
            Loaded::State(s) => *s,
            _ => panic!("no report state in {}", self.dir.path().display()),
        }
    }

    fn pass(&self, minutes: u64) {
        self.hands.pass(Duration::from_secs(minutes * 60));
        self.write_snapshot();
    }

    /// `minutes` of a running fleetdash: a snapshot written and a tick at least every 5
    /// minutes (within the rules' stale limit: no write missed); what the ticks sent.
    fn run(&self, r: &Reporter, minutes: u64) -> Vec<String> {
        let mut sent = Vec::new();
        let mut left = minutes;
        while left > 0 {
            let step = left.min(5);
            left -= step;
            self.pass(step);
            if let Ticked::Sent(id) = tick(r) {
                sent.push(id);
            }
        }
        sent
    }
}

fn tick(r: &Reporter) -> Ticked {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(r.tick())
}

fn state_dir(f: &Fleet) -> &Path {
    &f.config.state_dir
}

#[test]
fn one_report_per_due_moment_across_ticks_and_restarts() {
    let f = Fleet::new();
    let r = f.reporter();
    assert_eq!(tick(&r), Ticked::Waiting, "the first start sends nothing");
    assert_eq!(
        f.state().covered_until,
        six_am(),
        "the first report covers from the start"
    );
    assert!(f.run(&r, 89).is_empty(), "07:29: not yet");
    f.pass(1);
    let id = format!("report:{}", due_today().timestamp());
    assert_eq!(tick(&r), Ticked::Sent(id.clone()));
    let reports = f.reports();
    assert_eq!(reports.len(), 1);
    assert_eq!(reports[0].id, id);
    assert_eq!(reports[0].name, "Night: all clear");
    assert!(
        reports[0]
            .detail
            .as_deref()
            .unwrap()
            .contains("Sat 7 Mar 06:00 – Sat 7 Mar 07:30 (Europe/Berlin)")
    );
    // Later ticks, and a restart, send nothing more until tomorrow's hour.
    f.pass(1);
    assert_eq!(tick(&r), Ticked::Waiting);
    let again = f.reporter();
    assert_eq!(tick(&again), Ticked::Waiting);
    assert_eq!(f.reports().len(), 1);
    let s = f.state();
    assert_eq!(
        (s.covered_until, s.last_due),
        (due_today(), Some(due_today()))
    );
    // Tomorrow's covers exactly from today's end: no gap, no overlap.
    let tomorrow = due_today() + chrono::Duration::days(1);
    assert_eq!(
        f.run(&again, 24 * 60),
        [format!("report:{}", tomorrow.timestamp())]
    );
    let s = f.state();
    assert_eq!(s.previous_from, Some(due_today()));
    assert_eq!(s.covered_until, tomorrow + chrono::Duration::minutes(1));
    assert_eq!(f.reports().len(), 2);
}

#[test]
fn a_crash_after_the_write_ahead_puts_the_same_report_in_the_outbox_once() {
    let f = Fleet::new();
    let r = f.reporter();
    tick(&r);
    assert!(f.run(&r, 89).is_empty());
    f.pass(2);
    // What step 1 leaves when the process dies before step 2: the report pending.
    let mut s = f.state();
    let pending = Pending {
        id: format!("report:{}", due_today().timestamp()),
        due: due_today(),
        from: six_am(),
        to: f.hands.wall(),
        title: "Night: all clear".into(),
        phone: "all clear".into(),
        text: "all clear".into(),
        channels: vec!["hook".into()],
        band: fleetdash_model::Band::Green,
    };
    s.pending = Some(pending.clone());
    state::save(state_dir(&f), &s).unwrap();
    assert_eq!(tick(&f.reporter()), Ticked::Sent(pending.id.clone()));
    // Dying after step 2 but before step 3: the pending one again, kept once by its key.
    s.pending = Some(pending.clone());
    state::save(state_dir(&f), &s).unwrap();
    assert_eq!(tick(&f.reporter()), Ticked::Sent(pending.id.clone()));
    assert_eq!(f.reports().len(), 1);
    let s = f.state();
    assert_eq!((s.pending, s.covered_until), (None, pending.to));
    assert_eq!(tick(&f.reporter()), Ticked::Waiting);
}

#[test]
fn a_clock_stepped_back_over_the_hour_sends_nothing_twice() {
    let f = Fleet::new();
    let r = f.reporter();
    tick(&r);
    assert_eq!(f.run(&r, 95).len(), 1);
    // Back an hour (06:35 local), then past 07:30 again: today's report is not repeated.
    f.hands.step(-3600);
    f.write_snapshot();
    assert_eq!(tick(&r), Ticked::Waiting);
    assert!(f.run(&r, 70).is_empty());
    assert_eq!(f.reports().len(), 1);
}

#[test]
fn a_hub_asleep_at_the_hour_reports_on_waking_saying_it_is_late_and_why() {
    let f = Fleet::new();
    let r = f.reporter();
    tick(&r);
    assert!(f.run(&r, 60).is_empty());
    // Asleep 07:00–09:12 local.
    f.hands.sleep(Duration::from_secs(132 * 60));
    f.write_snapshot();
    assert!(matches!(tick(&r), Ticked::Sent(_)));
    let reports = f.reports();
    let text = reports[0].detail.as_deref().unwrap();
    assert!(
        text.contains("late: due 07:30, sent 09:12: the hub was asleep"),
        "{text}"
    );
    assert!(
        text.contains("not watching 07:00–09:12 (2 h 12 min): the hub was asleep"),
        "{text}"
    );
    assert!(
        !reports[0].name.contains("all clear"),
        "{}",
        reports[0].name
    );
}

#[test]
fn a_restart_after_a_stop_over_the_hour_says_fleetdash_was_not_running() {
    let f = Fleet::new();
    let r = f.reporter();
    tick(&r);
    assert!(f.run(&r, 30).is_empty());
    // Stopped at 06:30 local; started again at 08:40 (the boot clock ran on).
    f.pass(130);
    let r = f.reporter();
    assert!(matches!(tick(&r), Ticked::Sent(_)));
    let text = f.reports()[0].detail.clone().unwrap();
    assert!(
        text.contains("late: due 07:30, sent 08:40: fleetdash was not running"),
        "{text}"
    );
    assert!(
        text.contains("not watching 06:30–08:40 (2 h 10 min): fleetdash was not running"),
        "{text}"
    );
}

#[test]
fn a_corrupt_state_file_is_set_aside_and_the_next_report_says_so() {
    let f = Fleet::new();
    let r = f.reporter();
    tick(&r);
    std::fs::write(state::path(state_dir(&f)), b"{ not json").unwrap();
    assert!(f.run(&r, 95).len() == 1);
    let text = f.reports()[0].detail.clone().unwrap();
    assert!(
        text.contains("the report's state file was corrupt and set aside"),
        "{text}"
    );
    let aside = std::fs::read_dir(state_dir(&f))
        .unwrap()
        .filter_map(|e| e.ok())
        .any(|e| e.file_name().to_string_lossy().contains(".corrupt-"));
    assert!(aside, "the corrupt file is kept aside, not deleted");
}

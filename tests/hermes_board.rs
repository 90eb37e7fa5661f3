//! The board collector against a board written by Hermes' own code (hermes-agent 0.19.0 from
//! the venv `scripts/setup-test-deps` makes): its CLI for every status it can write, its
//! dispatcher over real child processes for thirteen worker-event kinds
//! (`tests/hermes/build_board.py`). fleetdash's counts, cards, block kinds and conditions must
//! match what Hermes itself says (`hermes kanban list --json`).
//!
//! As in production, Hermes and fleetdash run as two different Unix users (made-up ids, through
//! `setpriv`; the tests run as root), and Hermes' board folder is read-only to fleetdash
//! (0755, owned by Hermes' user). After fleetdash reads, the folder holds the same files with
//! the same owners, whether Hermes is idle or has the board open, and Hermes keeps creating
//! cards while and after fleetdash reads.

use crate::support;
use crate::support::kanban;

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use fleetdash_model::{Band, Board, Card, Probe, Snapshot};
use serde_json::Value;

/// Made-up ids: no such users exist, which is the point (nothing is shared but the folder).
const HERMES_UID: u32 = 47_101;
const FLEETDASH_UID: u32 = 47_102;

/// A Hermes home and board folder owned by Hermes' user, and a fleetdash state owned by
/// fleetdash's, in one scratch folder.
struct TwoUsers {
    _dir: tempfile::TempDir,
    hermes_home: PathBuf,
    kanban_home: PathBuf,
    fleetdash: PathBuf,
    python: PathBuf,
}

fn as_user(uid: u32, program: &Path) -> Command {
    let mut cmd = Command::new("setpriv");
    cmd.arg(format!("--reuid={uid}"))
        .arg(format!("--regid={uid}"))
        .arg("--clear-groups")
        .arg(program);
    cmd
}

fn owned_folder(path: &Path, uid: u32) {
    std::fs::create_dir_all(path).unwrap();
    std::os::unix::fs::chown(path, Some(uid), Some(uid)).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[track_caller]
fn succeeded(out: &Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

impl TwoUsers {
    fn new() -> TwoUsers {
        assert!(
            rustix::process::geteuid().is_root(),
            "this test runs Hermes and fleetdash as two users through setpriv: run it as root \
             (CI does)"
        );
        let python = kanban::hermes_python();
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let hermes = dir.path().join("hermes");
        owned_folder(&hermes, HERMES_UID);
        let fleetdash = dir.path().join("fleetdash");
        owned_folder(&fleetdash, FLEETDASH_UID);
        TwoUsers {
            hermes_home: hermes.join("home"),
            kanban_home: hermes.join("kanban"),
            fleetdash,
            python,
            _dir: dir,
        }
    }

    fn db(&self) -> PathBuf {
        self.kanban_home.join("kanban.db")
    }

    /// A command as Hermes' user, in Hermes' environment.
    fn hermes(&self, program: &Path) -> Command {
        let mut cmd = as_user(HERMES_UID, program);
        cmd.env("HOME", &self.hermes_home)
            .env("HERMES_HOME", &self.hermes_home)
            .env("HERMES_KANBAN_HOME", &self.kanban_home)
            // Hermes would chmod its home 0700 at start; the board folder is what fleetdash reads.
            .env("HERMES_HOME_MODE", "0755")
            .env_remove("HERMES_KANBAN_DB")
            .env_remove("HERMES_KANBAN_BOARD");
        cmd
    }

    fn hermes_cli(&self, args: &[&str]) -> Output {
        self.hermes(&self.python.with_file_name("hermes"))
            .arg("kanban")
            .args(args)
            .output()
            .unwrap()
    }

    /// Hermes' own view of its board.
    fn hermes_list(&self) -> Vec<Value> {
        let out = self.hermes_cli(&["list", "--json", "--archived"]);
        serde_json::from_str(&succeeded(&out)).unwrap()
    }

    fn build_board(&self) -> BTreeMap<String, String> {
        let out = self
            .hermes(&self.python)
            .arg(kanban::hermes_script("build_board.py"))
            .output()
            .unwrap();
        serde_json::from_str(&succeeded(&out)).unwrap()
    }

    /// `fleetdash collect` as fleetdash's user; the snapshot it wrote.
    fn collect(&self) -> Snapshot {
        let config = self.fleetdash.join("fleetdash.toml");
        std::fs::write(
            &config,
            format!(
                "output_dir = \"out\"\nstate_dir = \"state\"\nrules = \"rules.yaml\"\n\n\
                 [[boards]]\nname = \"lab\"\ndb = \"{}\"\ninclude_archived = true\n",
                self.db().display()
            ),
        )
        .unwrap();
        // This test holds every card fleetdash reads against Hermes' own list: its rules list
        // every card of the open columns in status.json, beyond the shipped cap; the finished
        // ones are counted per column, as always.
        let rules: String = support::DEFAULT_RULES
            .lines()
            .map(|line| match line.trim_start().split_once(':') {
                Some(("cards_max" | "newest_per_column", _)) => {
                    format!(
                        "  {}: 1000000",
                        line.trim_start().split(':').next().unwrap()
                    )
                }
                _ => line.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n");
        assert_ne!(
            rules.trim(),
            support::DEFAULT_RULES.trim(),
            "the cap is raised"
        );
        std::fs::write(self.fleetdash.join("rules.yaml"), rules).unwrap();
        let out = as_user(FLEETDASH_UID, Path::new(env!("CARGO_BIN_EXE_fleetdash")))
            .args(["collect", "--only", "tasks", "--config"])
            .arg(&config)
            .env("FLEETDASH_LOG", "warn")
            .output()
            .unwrap();
        succeeded(&out);
        let text = std::fs::read_to_string(self.fleetdash.join("out/status.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    }
}

/// Every file of the board folder (recursively) with its size, mtime and owner.
fn listing(dir: &Path) -> BTreeMap<PathBuf, (u64, i64, i64, u32)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let m = std::fs::symlink_metadata(e.path()).unwrap();
            if m.is_dir() {
                stack.push(e.path());
            }
            out.insert(
                e.path().strip_prefix(dir).unwrap().to_path_buf(),
                (m.size(), m.mtime(), m.mtime_nsec(), m.uid()),
            );
        }
    }
    out
}

fn board(snapshot: &Snapshot) -> &Board {
    match &snapshot.tasks.board {
        Probe::Value(b) => b,
        other => panic!("tasks.board: {other:?}"),
    }
}

fn card_titled<'a>(board: &'a Board, title: &str) -> &'a Card {
    board
        .cards
        .iter()
        .find(|c| c.title == title)
        .unwrap_or_else(|| panic!("no card {title:?} in {:#?}", board.cards))
}

/// The cards as (id, status, title, assignee), fleetdash's and Hermes' own.
fn fleetdash_cards(board: &Board) -> BTreeSet<(String, String, String, Option<String>)> {
    board
        .cards
        .iter()
        .map(|c| {
            (
                c.id.clone(),
                c.status.clone(),
                c.title.clone(),
                c.assignee.clone(),
            )
        })
        .collect()
}

/// Hermes' cards of the open columns: status.json lists those, and counts the finished ones
/// (done, archived) per column.
fn hermes_cards(list: &[Value]) -> BTreeSet<(String, String, String, Option<String>)> {
    list.iter()
        .filter(|t| !FINISHED.contains(&t["status"].as_str().unwrap_or_default()))
        .map(|t| {
            let s = |k: &str| t[k].as_str().map(str::to_string);
            (
                s("id").unwrap(),
                s("status").unwrap(),
                s("title").unwrap(),
                s("assignee"),
            )
        })
        .collect()
}

const FINISHED: [&str; 2] = ["done", "archived"];

/// The board's cards per column as status.json counts them, and as Hermes lists them.
fn counts(board: &Board, list: &[Value]) -> (BTreeMap<String, u32>, BTreeMap<String, u32>) {
    let ours = board.sources[0]
        .columns
        .iter()
        .map(|c| (c.column.clone(), c.cards))
        .collect();
    let mut hermes = BTreeMap::new();
    for t in list {
        *hermes
            .entry(t["status"].as_str().unwrap_or_default().to_string())
            .or_insert(0) += 1;
    }
    (ours, hermes)
}

#[test]
fn a_board_hermes_wrote_reads_as_hermes_says_and_reading_it_harms_nothing() {
    let env = TwoUsers::new();
    let ids = env.build_board();
    assert!(ids.len() >= 20, "{ids:?}");

    // The folder is Hermes' and read-only to fleetdash's user.
    let probe = env.kanban_home.join("fleetdash-was-here");
    let touch = as_user(FLEETDASH_UID, Path::new("/usr/bin/touch"))
        .arg(&probe)
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(
        !touch.success() && !probe.exists(),
        "the folder must not be writable to fleetdash"
    );

    // An idle board: Hermes' last close removed -wal and -shm.
    let idle = listing(&env.kanban_home);
    assert!(
        !idle.keys().any(|p| p.to_string_lossy().ends_with("-wal")),
        "{idle:#?}"
    );
    let snapshot = env.collect();
    assert_eq!(
        listing(&env.kanban_home),
        idle,
        "reading an idle board created, changed or took over a file"
    );

    // fleetdash's cards are Hermes' own.
    let b = board(&snapshot);
    let list = env.hermes_list();
    assert_eq!(fleetdash_cards(b), hermes_cards(&list));
    assert_eq!(b.sources[0].cards, Probe::Value(list.len() as u32));
    let (ours, hermes) = counts(b, &list);
    assert_eq!(ours, hermes, "every card counted in its column");
    for c in b.sources[0]
        .columns
        .iter()
        .filter(|c| FINISHED.contains(&c.column.as_str()))
    {
        assert_eq!(
            c.left_out, c.cards,
            "finished green cards are counted, not listed: {c:?}"
        );
    }
    let statuses: BTreeSet<&str> = b.sources[0]
        .columns
        .iter()
        .map(|c| c.column.as_str())
        .collect();
    assert_eq!(
        statuses,
        BTreeSet::from([
            "archived",
            "blocked",
            "done",
            "ready",
            "running",
            "scheduled",
            "todo",
            "triage"
        ]),
        "every status 0.19.0 writes (nothing in it writes `review`)"
    );
    for c in &b.sources[0].columns {
        assert!(b.columns.contains(&c.column), "{c:?}");
    }

    // Block kinds, where Hermes routes a block.
    let kind = |title: &str| card_titled(b, title).block_kind.clone();
    assert_eq!(
        kind("Blocked on a dependency").as_deref(),
        Some("dependency")
    );
    assert_eq!(card_titled(b, "Blocked on a dependency").status, "todo");
    assert_eq!(kind("Blocked needs input").as_deref(), Some("needs_input"));

    // Conditions and bands, from the events Hermes' dispatcher wrote.
    let expect = |title: &str, band: Band, starts: &[&str]| {
        let c = card_titled(b, title);
        assert_eq!(c.band, band, "{title}: {c:#?}");
        assert_eq!(
            c.conditions.len(),
            starts.len(),
            "{title}: {:?}",
            c.conditions
        );
        for (condition, start) in c.conditions.iter().zip(starts) {
            assert!(
                condition.starts_with(start),
                "{title}: {condition:?} !~ {start:?}"
            );
        }
    };
    expect("Went stale", Band::Amber, &["stale: "]);
    expect("Reclaim deferred", Band::Amber, &["reclaim_deferred: "]);
    expect(
        "Reclaimed by hand",
        Band::Amber,
        &["reclaimed: taken back by hand (wrong repository)"],
    );
    expect(
        "Claim expired",
        Band::Amber,
        &["reclaimed: the claim expired"],
    );
    expect("Claim rejected", Band::Green, &["claim_rejected: "]);
    expect(
        "Crashed then retried",
        Band::Amber,
        &["crashed: the worker process died"],
    );
    assert!(card_titled(b, "Crashed then retried").conditions[0].ends_with("; retried since"));
    expect(
        "Gave up",
        Band::Red,
        &[
            "gave_up: the dispatcher stopped retrying after 2 failures (limit 2)",
            "blocked (no kind given)",
        ],
    );
    expect(
        "Timed out",
        Band::Red,
        &["timed_out: the worker was killed after "],
    );
    expect("Could not spawn", Band::Red, &["spawn_failed: "]);
    expect(
        "Exited without completing",
        Band::Amber,
        &["protocol_violation: "],
    );
    expect("Rate limited", Band::Amber, &["respawn_guarded: "]);
    expect("Claim extended", Band::Green, &["claim_extended: "]);
    expect(
        "Blocked needs input",
        Band::Amber,
        &["blocked: needs_input"],
    );
    for quiet in ["Ready card", "Triage card", "Scheduled card"] {
        expect(quiet, Band::Green, &[]);
    }

    // Hermes has the board open (a gateway, a dispatcher): its -wal and -shm exist.
    let mut holder = env
        .hermes(&env.python)
        .arg(kanban::hermes_script("hold_open.py"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(holder.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "open");
    let held = listing(&env.kanban_home);
    assert!(
        held.keys()
            .any(|p| p.to_string_lossy().ends_with("kanban.db-shm")),
        "{held:#?}"
    );
    let connected = env.collect();
    assert!(board(&connected).sources[0].status.is_success());
    assert_eq!(
        board(&connected).sources[0].cards,
        Probe::Value(list.len() as u32 + 1),
        "the card written through the open connection is read from the WAL"
    );
    assert_eq!(
        listing(&env.kanban_home),
        held,
        "reading a board Hermes has open created, changed or took over a file"
    );

    // Hermes keeps creating cards while fleetdash reads, and after. (Its files come and go:
    // Hermes' own post-commit length check opens and closes kanban.db, which drops the
    // process's SQLite locks, so a CLI's close may checkpoint and remove -wal and -shm under
    // the open connection. None of that may become fleetdash's.)
    let titles: Vec<String> = (0..12)
        .map(|i| format!("Created during reads {i}"))
        .collect();
    let during = std::thread::scope(|s| {
        let reader = s.spawn(|| (0..4).map(|_| env.collect()).collect::<Vec<_>>());
        for title in &titles {
            let out = env.hermes_cli(&["create", title, "--assignee", "tam"]);
            let stderr = String::from_utf8_lossy(&out.stderr).to_lowercase();
            assert!(
                out.status.success() && !stderr.contains("readonly"),
                "{stderr}"
            );
        }
        reader.join().unwrap()
    });
    for snapshot in &during {
        assert!(
            board(snapshot).sources[0].status.is_success(),
            "{:?}",
            board(snapshot).sources
        );
    }
    drop(holder.stdin.take());
    assert!(holder.wait().unwrap().success());

    let after = env.hermes_cli(&["create", "Created after the reads", "--assignee", "tam"]);
    assert!(
        after.status.success(),
        "{}",
        String::from_utf8_lossy(&after.stderr)
    );
    let list = env.hermes_list();
    let hermes_titles: BTreeSet<&str> = list.iter().filter_map(|t| t["title"].as_str()).collect();
    for title in titles
        .iter()
        .map(String::as_str)
        .chain(["Written while held open", "Created after the reads"])
    {
        assert!(hermes_titles.contains(title), "Hermes lost {title:?}");
    }
    let last = env.collect();
    assert_eq!(fleetdash_cards(board(&last)), hermes_cards(&list));
    let (ours, hermes) = counts(board(&last), &list);
    assert_eq!(ours, hermes);
    assert!(
        listing(&env.kanban_home)
            .values()
            .all(|(.., uid)| *uid == HERMES_UID),
        "every file in Hermes' folder is Hermes' own"
    );
}

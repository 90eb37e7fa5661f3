//! The status.json writer: atomic under a concurrent reader, locked against concurrent
//! collects, and a crash mid-pass leaves the previous snapshot whole.

use crate::support;

use crate::support::kanban;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use chrono::Utc;
use fleetdash::a2a::Wire;
use fleetdash::collect::{SectionData, SectionName, SectionUpdate};
use fleetdash::demo::sim::SimAgent;
use fleetdash::redact::RedactionGate;
use fleetdash::write::status_json::StatusWriter;
use fleetdash_model::{Agent, Asc, Band, Probe, Snapshot};
use support::{Scratch, Sim, agent_toml, fleet_rules, refused_endpoint};

fn row(i: usize) -> Agent {
    Agent {
        name: format!("agent-{i}"),
        endpoint: format!("http://127.0.0.1:{}/", 18300 + i),
        plane: None,
        up: i.is_multiple_of(2),
        last_exchange_s: Probe::Value(i as u64),
        exchange_band: Band::Green,
        skills_count: Probe::Value(3),
        lane: Probe::Unknown,
        model: Probe::Unknown,
        window: Probe::Unknown,
        heartbeat: Probe::error("connection refused"),
        band: Band::Red,
        status: Asc::DEPENDENCY_UNAVAILABLE,
        reason: Some("down: connection refused".into()),
        audit_skipped_lines: 0,
        last_report_s: None,
        history: None,
        checked_at: Utc::now(),
        stale: true,
    }
}

fn update(rows: usize) -> SectionUpdate {
    SectionUpdate {
        data: SectionData::Agents((0..rows).map(row).collect()),
        checked_at: Utc::now(),
        duration: Duration::from_millis(1),
    }
}

#[test]
fn a_reader_never_sees_a_partial_or_invalid_snapshot_during_hundreds_of_writes() {
    let scratch = Scratch::new();
    let out = scratch.path().join("out");
    let rules = fleetdash::config::Rules::parse(
        std::path::Path::new("config/rules.yaml"),
        support::DEFAULT_RULES,
    )
    .unwrap();
    let writer = StatusWriter::new(
        &out,
        &scratch.path().join("state"),
        RedactionGate::default(),
        fleetdash::write::transitions::Bounds::of(&rules.state),
    )
    .unwrap();
    writer
        .write(vec![update(1)], &[SectionName::Agents], fleet_rules())
        .unwrap();

    let done = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicUsize::new(0));
    let reader = {
        let (done, reads, path) = (done.clone(), reads.clone(), writer.path().to_path_buf());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                let bytes = std::fs::read(&path).expect("status.json is always there");
                let snap: Snapshot = serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                    panic!(
                        "invalid snapshot after {} reads: {e}",
                        reads.load(Ordering::Relaxed)
                    )
                });
                assert!(matches!(snap.agents, Probe::Value(ref rows) if !rows.is_empty()));
                reads.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    // Sizes vary so that a torn write would show as truncated JSON.
    for i in 0..300 {
        writer
            .write(
                vec![update(1 + (i * 7) % 40)],
                &[SectionName::Agents],
                fleet_rules(),
            )
            .unwrap();
    }
    done.store(true, Ordering::Relaxed);
    reader.join().unwrap();
    assert!(reads.load(Ordering::Relaxed) > 50, "the reader barely ran");
    let leftovers: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n != "status.json" && n != "snapshot.html")
        .collect();
    assert!(
        leftovers.is_empty(),
        "temporary files left behind: {leftovers:?}"
    );
}

#[test]
fn concurrent_collects_all_succeed_and_leave_one_valid_snapshot() {
    let scratch = Scratch::new();
    let audit = scratch.audit_log("a", 60.0);
    let sim = Sim::healthy("a", Wire::V1);
    let mut body = agent_toml("a", &sim.endpoint, "v1", &audit);
    body.push_str(&agent_toml("b", &refused_endpoint(), "v1", &audit));
    let config = scratch.config(&body);
    let children: Vec<_> = (0..8)
        .map(|_| {
            support::fleetdash()
                .args(["collect", "--config"])
                .arg(&config)
                .spawn()
                .unwrap()
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    let snap = scratch.snapshot();
    let Probe::Value(rows) = &snap.agents else {
        panic!("agents missing: {:?}", snap.agents)
    };
    assert_eq!(
        rows.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(),
        ["a", "b"]
    );
    assert!(rows[0].up && !rows[1].up);
}

#[test]
fn a_collect_waits_for_the_lock_instead_of_writing_over_another_writer() {
    let scratch = Scratch::new();
    let audit = scratch.audit_log("a", 60.0);
    let config = scratch.config(&agent_toml("a", &refused_endpoint(), "v1", &audit));
    std::fs::create_dir_all(scratch.path().join("state")).unwrap();
    let lock = std::fs::File::create(scratch.path().join("state/status.json.lock")).unwrap();
    lock.lock().unwrap();

    let mut child = support::fleetdash()
        .args(["collect", "--config"])
        .arg(&config)
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        child.try_wait().unwrap().is_none(),
        "collect finished while another writer held the lock"
    );
    assert!(
        !scratch.status_path().exists(),
        "collect wrote while the lock was held"
    );
    drop(lock);
    assert!(child.wait().unwrap().success());
    assert!(matches!(scratch.snapshot().agents, Probe::Value(ref r) if r.len() == 1));
}

#[test]
fn a_collect_killed_mid_pass_leaves_the_previous_snapshot_byte_for_byte() {
    let scratch = Scratch::new();
    let audit = scratch.audit_log("a", 60.0);
    let fast = scratch.config(&agent_toml("a", &refused_endpoint(), "v1", &audit));
    assert!(scratch.collect(&fast).status.success());
    let before = std::fs::read(scratch.status_path()).unwrap();

    let mut hung = SimAgent::healthy("h", Wire::V1);
    hung.hang = true;
    let sim = Sim::start(hung);
    let text = std::fs::read_to_string(&fast)
        .unwrap()
        .replace("timeout = \"2s\"", "timeout = \"30s\"")
        + &agent_toml("h", &sim.endpoint, "v1", &audit);
    std::fs::write(&fast, text).unwrap();
    let mut child = support::fleetdash()
        .args(["collect", "--config"])
        .arg(&fast)
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    child.kill().unwrap();
    child.wait().unwrap();

    assert_eq!(std::fs::read(scratch.status_path()).unwrap(), before);
    assert_only_the_snapshots_files(&scratch.path().join("out"));
}

#[test]
fn a_corrupt_previous_snapshot_is_replaced_by_a_valid_one() {
    let scratch = Scratch::new();
    let audit = scratch.audit_log("a", 60.0);
    let config = scratch.config(&agent_toml("a", &refused_endpoint(), "v1", &audit));
    std::fs::create_dir_all(scratch.path().join("out")).unwrap();
    std::fs::write(
        scratch.status_path(),
        b"{\"schema_version\": \"0.1\", trunc",
    )
    .unwrap();
    let out = scratch.collect(&config);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(matches!(scratch.snapshot().agents, Probe::Value(ref r) if r.len() == 1));
}

#[test]
fn an_unwritable_output_dir_fails_with_one_line_naming_it() {
    let scratch = Scratch::new();
    let audit = scratch.audit_log("a", 60.0);
    // A regular file where the output directory should be: fails even for root.
    std::fs::write(scratch.path().join("blocker"), "").unwrap();
    let config = scratch.config(&agent_toml("a", &refused_endpoint(), "v1", &audit));
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("output_dir = \"out\"", "output_dir = \"blocker/out\"");
    std::fs::write(&config, text).unwrap();
    let out = scratch.collect(&config);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("fleetdash:"))
        .collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(lines[0].contains("blocker/out"), "{stderr}");
}

fn assert_only_the_snapshots_files(dir: &Path) {
    let names: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    let mut names = names;
    names.sort();
    // The page's first HTML (issue 46) is written with each snapshot too.
    assert_eq!(names, ["index.html", "snapshot.html", "status.json"]);
}

/// The names a kill -9 mid-write leaves (fleetdash's own temporaries) and names that only look
/// like them.
const STALE_OURS: &str = ".fleetdash-tmp-St4le0000001";
const FRESH_OURS: &str = ".fleetdash-tmp-Fr3sh0000001";
const NOT_OURS: [&str; 5] = [
    ".tmp-a1b2c3",
    ".fleetdash-tmp-short",
    "fleetdash-tmp-N0tD0tted001",
    ".fleetdash-tmp-St4le0000001.md",
    ".fleetdash-tmp-D1rect0ry001",
];

/// Plants, in `dir`, a stale temporary of ours (a full snapshot, mode 600, a day old), a fresh
/// one (a concurrent writer may own it) and day-old look-alikes that are not ours (one of them
/// a directory). Planting again over an earlier planting renews them all.
fn plant_temporaries(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let day_ago = std::time::SystemTime::now() - Duration::from_secs(86_400);
    std::fs::create_dir_all(dir).unwrap();
    for name in [STALE_OURS, FRESH_OURS]
        .into_iter()
        .chain(NOT_OURS.into_iter().filter(|n| !n.contains("D1rect0ry")))
    {
        let path = dir.join(name);
        std::fs::write(&path, b"{\"schema_version\": \"0\"}").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    std::fs::create_dir_all(dir.join(NOT_OURS[4])).unwrap();
    for name in [STALE_OURS].into_iter().chain(NOT_OURS) {
        std::fs::File::open(dir.join(name))
            .unwrap()
            .set_modified(day_ago)
            .unwrap();
    }
}

#[track_caller]
fn assert_only_the_stale_temporary_went(dir: &Path) {
    assert!(
        !dir.join(STALE_OURS).exists(),
        "the stale temporary in {} survived",
        dir.display()
    );
    for name in [FRESH_OURS].into_iter().chain(NOT_OURS) {
        assert!(
            dir.join(name).exists(),
            "{name} in {} was removed",
            dir.display()
        );
    }
}

/// Fails unless the stale temporary planted in each of `dirs` is still there.
#[track_caller]
fn assert_stale_temporary_kept(dirs: &[&Path]) {
    for dir in dirs {
        assert!(
            dir.join(STALE_OURS).exists(),
            "the stale temporary in {} went before anything was written there",
            dir.display()
        );
    }
}

/// Temporaries a kill -9 mid-write leaves behind are removed in every folder fleetdash writes
/// (output_dir, state_dir, the vault folder a projection goes to, cron-run's record folder),
/// both when the writer starts, before it writes anything, and by each later write in the
/// folder it writes to (a long `run` meets temporaries left after it started). A fresh one
/// stays (a concurrent writer may own it), and nothing that is not ours is touched.
#[test]
fn stale_temporaries_of_ours_are_removed_at_start_and_on_each_write_everywhere_and_nothing_else() {
    use fleetdash::collect::live_tasks::registry::{Mention, Origin};
    use fleetdash::collect::{Collection, Findings, projections::ProjectionJob, run_once};
    use fleetdash::write::Writer;

    let scratch = Scratch::new();
    let root = scratch.path();
    let board = kanban::Kanban::create(&root.join("research.db"));
    board.task(&kanban::Task::new("t_1", "Survey", "todo", Some("min")));
    let vault = root.join("vault");
    let config_path = scratch.config(&format!(
        "[vault]\npath = \"{}\"\n\n[[boards]]\nname = \"research\"\ndb = \"research.db\"\n\
         projection = \"Docs/Kanban/research.kanban\"\n",
        vault.display()
    ));
    let (config, rules) = fleetdash::config::Config::load(&config_path)
        .unwrap_or_else(|e| panic!("{}: {e:?}", config_path.display()));
    let (out, state, kanban_dir, crons) = (
        root.join("out"),
        root.join("state"),
        vault.join("Docs/Kanban"),
        root.join("state/crons"),
    );
    let folders = [&out, &state, &kanban_dir, &crons];

    // At start: every folder is swept before anything is written.
    for dir in folders {
        plant_temporaries(dir);
    }
    let writer = Writer::new(&config, &rules, RedactionGate::default()).unwrap();
    assert!(!scratch.status_path().exists(), "nothing is written yet");
    for dir in folders {
        assert_only_the_stale_temporary_went(dir);
    }

    // On each write: planted again under the running writer, each goes with the first write
    // into its own folder, and not before.
    for dir in folders {
        plant_temporaries(dir);
    }
    let mention = Mention {
        agent: "heart".into(),
        wire: None,
        origin: Origin::Audit,
        id: "t_live01".into(),
    };
    writer.settle(Collection {
        findings: Findings::Agents {
            rows: Vec::new(),
            mentions: vec![mention],
        },
        checked_at: Utc::now(),
        duration: Duration::ZERO,
    });
    assert!(state.join("live_tasks.json").is_file());
    assert_only_the_stale_temporary_went(&state);
    assert_stale_temporary_kept(&[&out, &kanban_dir, &crons]);

    let job = ProjectionJob::new(&config).expect("the board has a projection");
    let projections = tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(run_once(&job, &support::clock()));
    let update = writer.settle(projections);
    assert!(vault.join("Docs/Kanban/research.kanban").is_file());
    assert_only_the_stale_temporary_went(&kanban_dir);
    assert_stale_temporary_kept(&[&out, &crons]);

    writer
        .write_settled(
            vec![update],
            &fleetdash::collect::configured_sections(&config),
            rules.view(),
        )
        .unwrap();
    assert!(scratch.status_path().is_file());
    assert_only_the_stale_temporary_went(&out);
    assert_stale_temporary_kept(&[&crons]);

    // cron-run writes its record without a writer's start sweep: only its write sweeps.
    support::assert_success(
        &support::fleetdash()
            .args(["cron-run", "--config"])
            .arg(&config_path)
            .args(["nightly", "--", "true"])
            .output()
            .unwrap(),
    );
    assert!(crons.join("nightly.json").is_file());
    assert_only_the_stale_temporary_went(&crons);
}

/// Through `fleetdash collect`, each run a new process: an agent born red is recorded as new,
/// one born green is not; a peer going down between two collects is a green-to-red transition
/// in the log (`state/transitions.json`), in status.json (newest first, with the row's own
/// reason) and in snapshot.html; a collect that changes nothing adds nothing and the log
/// survives every restart.
#[test]
fn a_peer_going_down_between_collects_is_a_transition_in_the_log_status_json_and_snapshot_html() {
    use fleetdash_model::Transition;
    let scratch = Scratch::new();
    let audit = scratch.audit_log("a", 60.0);
    let sim = Sim::healthy("a", Wire::V1);
    let mut body = agent_toml("a", &sim.endpoint, "v1", &audit);
    body.push_str(&agent_toml("b", &refused_endpoint(), "v1", &audit));
    let config = scratch.config(&body);
    let log_path = scratch.path().join("state/transitions.json");
    let said = |list: &[Transition]| {
        list.iter()
            .map(|t| (t.key.clone(), t.from, t.to))
            .collect::<Vec<_>>()
    };
    let log = || -> Vec<Transition> {
        let text = std::fs::read_to_string(&log_path).unwrap();
        let file: serde_json::Value = serde_json::from_str(&text).unwrap();
        serde_json::from_value(file["entries"].clone()).unwrap()
    };
    let born_red = || ("agent:b".to_string(), None, Band::Red);

    support::assert_success(&scratch.collect(&config));
    assert_eq!(said(&scratch.snapshot().transitions), [born_red()]);
    assert_eq!(said(&log()), [born_red()]);

    drop(sim);
    support::assert_success(&scratch.collect(&config));
    let went_down = || ("agent:a".to_string(), Some(Band::Green), Band::Red);
    let snap = scratch.snapshot();
    assert_eq!(said(&snap.transitions), [went_down(), born_red()]);
    let Probe::Value(rows) = &snap.agents else {
        panic!("{:?}", snap.agents)
    };
    assert!(!rows[0].up && rows[0].reason.is_some());
    assert_eq!(
        snap.transitions[0].reason, rows[0].reason,
        "the row's own reason"
    );
    assert_eq!(
        snap.transitions[0].at, snap.generated_at,
        "the write's clock"
    );
    assert_eq!(said(&log()), [born_red(), went_down()]);
    let html = std::fs::read_to_string(scratch.path().join("out/snapshot.html")).unwrap();
    let section = &html[html.find("id=\"transitions\"").expect("the section")..];
    assert!(section.contains("<strong>agent a</strong>"), "{section}");
    assert!(section.contains("ok → fail"), "{section}");
    assert!(section.contains("new → fail"), "{section}");

    support::assert_success(&scratch.collect(&config));
    assert_eq!(said(&log()), [born_red(), went_down()]);
    assert_eq!(
        said(&scratch.snapshot().transitions),
        [went_down(), born_red()]
    );
}

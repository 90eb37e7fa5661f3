//! Live A2A tasks and the stuck rule, end to end through `fleetdash collect`: task ids come
//! from heartbeat replies, are polled with GetTask / tasks/get, and a task that shows no
//! progress for the rules' `no_reply_seconds` is STUCK with its cause, escalated exactly once.

use crate::support;

use crate::support::kanban;

use std::time::Duration;

use fleetdash::a2a::Wire;
use fleetdash::demo::sim::SimAgent;
use fleetdash_model::{Asc, LiveTask, Probe, Snapshot};
use support::{PyPeer, Scratch, Sdk, Sim, agent_toml};

/// The shipped rules with a 2 s stuck rule, so a test can wait it out.
fn short_rules(scratch: &Scratch) {
    let rules = support::DEFAULT_RULES.replacen("no_reply_seconds: 300", "no_reply_seconds: 2", 1);
    assert_ne!(rules, support::DEFAULT_RULES);
    std::fs::write(scratch.path().join("rules.yaml"), rules).unwrap();
}

fn live(snapshot: &Snapshot) -> Vec<LiveTask> {
    match &snapshot.tasks.live {
        Probe::Value(tasks) => tasks.clone(),
        other => panic!("tasks.live is {other:?}"),
    }
}

fn collect_ok(scratch: &Scratch, config: &std::path::Path) -> Snapshot {
    let out = scratch.collect(config);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    scratch.snapshot()
}

/// [`collect_ok`] logging at `debug`, with what it logged.
fn collect_logged(scratch: &Scratch, config: &std::path::Path) -> (Snapshot, String) {
    let out = support::fleetdash()
        .args(["collect", "--config"])
        .arg(config)
        .env("FLEETDASH_LOG", "debug")
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{log}");
    (scratch.snapshot(), log)
}

fn escalations(scratch: &Scratch) -> Vec<serde_json::Value> {
    std::fs::read_to_string(scratch.path().join("state/escalations.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn escalations_of(scratch: &Scratch, task_id: &str) -> Vec<serde_json::Value> {
    escalations(scratch)
        .into_iter()
        .filter(|l| l["task_id"] == task_id)
        .collect()
}

#[test]
fn a_task_that_never_progresses_on_a_real_peer_becomes_stuck_and_is_escalated_once() {
    let scratch = Scratch::new();
    short_rules(&scratch);
    let peer = PyPeer::start(
        Sdk::V1,
        &[
            "--name",
            "heart",
            "--in-flight",
            "t_never01",
            "--never-complete",
        ],
    );
    let audit = scratch.audit_log("heart", 10.0);
    let config = scratch.config(&agent_toml("heart", &peer.endpoint(), "v1", &audit));

    let first = live(&collect_ok(&scratch, &config));
    let task = first
        .iter()
        .find(|t| t.id == "t_never01")
        .unwrap_or_else(|| panic!("{first:#?}"));
    assert_eq!(task.agent, "heart");
    assert_eq!(task.state, Probe::Value("TASK_STATE_WORKING".into()));
    assert!(!task.stuck, "{task:#?}");
    assert_eq!(task.status, Asc::RUNNING);
    assert!(escalations(&scratch).is_empty());

    std::thread::sleep(Duration::from_millis(2500));
    let second = collect_ok(&scratch, &config);
    let task = live(&second)
        .into_iter()
        .find(|t| t.id == "t_never01")
        .unwrap();
    assert!(task.stuck, "{task:#?}");
    assert!(task.age_s >= 2);
    assert_eq!(task.status, Asc::TIMEOUT);
    let reason = task.reason.clone().unwrap();
    assert!(
        reason.starts_with("no reply for ") && reason.contains("(>= 2 s)"),
        "{reason}"
    );
    assert!(second.verdict().red >= 1);

    // The heartbeat's own task never finishes either; this test is about the in-flight one.
    let lines = escalations_of(&scratch, "t_never01");
    assert_eq!(lines.len(), 1, "{lines:#?}");
    assert_eq!(lines[0]["rule"]["no_reply_seconds"], 2);
    assert!(
        lines[0]["rule"]["source"]
            .as_str()
            .unwrap()
            .contains("adapter.py")
    );

    // Still stuck on the next pass, but escalated only once.
    let third = live(&collect_ok(&scratch, &config));
    assert!(third.iter().any(|t| t.id == "t_never01" && t.stuck));
    assert_eq!(escalations_of(&scratch, "t_never01").len(), 1);
}

#[test]
fn a_task_that_progresses_is_never_stuck_and_v03_states_are_mapped() {
    let scratch = Scratch::new();
    short_rules(&scratch);
    // The simulated v0.3 peer answers tasks/get with "working" and a fresh timestamp each time.
    let sim = Sim::start(SimAgent {
        in_flight: vec!["t_moving01".into()],
        ..SimAgent::healthy("pulse", Wire::V03)
    });
    let audit = scratch.audit_log("pulse", 10.0);
    let config = scratch.config(&agent_toml("pulse", &sim.endpoint, "v0.3", &audit));
    collect_ok(&scratch, &config);
    std::thread::sleep(Duration::from_millis(2500));
    let tasks = live(&collect_ok(&scratch, &config));
    let task = tasks
        .iter()
        .find(|t| t.id == "t_moving01")
        .unwrap_or_else(|| panic!("{tasks:#?}"));
    assert_eq!(
        task.state,
        Probe::Value("TASK_STATE_WORKING".into()),
        "v0.3 `working` is mapped"
    );
    assert!(!task.stuck, "{task:#?}");
    assert!(escalations(&scratch).is_empty());
}

#[test]
fn a_task_whose_peer_stops_answering_is_stuck_with_the_failure_as_its_cause() {
    let scratch = Scratch::new();
    short_rules(&scratch);
    let sim = Sim::start(SimAgent {
        in_flight: vec!["t_gone01".into()],
        stalled: vec!["t_gone01".into()],
        ..SimAgent::healthy("brain", Wire::V1)
    });
    let audit = scratch.audit_log("brain", 10.0);
    let config = scratch.config(&agent_toml("brain", &sim.endpoint, "v1", &audit));
    collect_ok(&scratch, &config);
    // The peer goes away: the task can only be judged by its silence.
    drop(sim);
    std::thread::sleep(Duration::from_millis(2500));
    let tasks = live(&collect_ok(&scratch, &config));
    let task = tasks
        .iter()
        .find(|t| t.id == "t_gone01")
        .unwrap_or_else(|| panic!("{tasks:#?}"));
    assert!(task.stuck && task.stale, "{task:#?}");
    assert!(task.state.is_error(), "{task:#?}");
    let reason = task.reason.clone().unwrap();
    assert!(
        reason.contains("no reply for") && reason.contains("connection refused"),
        "{reason}"
    );
}

fn collect_only(config: &std::path::Path, section: &str) -> std::process::Child {
    support::fleetdash()
        .args(["collect", "--config"])
        .arg(config)
        .args(["--only", section])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// The production cron split: `collect --only agents` notes the ids heartbeats mention,
/// `collect --only tasks` polls them, and the two overlapping many times share the registry
/// without losing it: every run succeeds and the registry stays whole with the id in it.
#[test]
fn separate_agents_and_tasks_runs_share_the_registry_even_when_they_overlap() {
    let scratch = Scratch::new();
    let sim = Sim::start(SimAgent {
        in_flight: vec!["t_shared01".into()],
        ..SimAgent::healthy("heart", Wire::V1)
    });
    let audit = scratch.audit_log("heart", 10.0);
    let config = scratch.config(&agent_toml("heart", &sim.endpoint, "v1", &audit));

    support::assert_success(&collect_only(&config, "agents").wait_with_output().unwrap());
    support::assert_success(&collect_only(&config, "tasks").wait_with_output().unwrap());
    let tasks = live(&scratch.snapshot());
    let task = tasks
        .iter()
        .find(|t| t.id == "t_shared01")
        .unwrap_or_else(|| {
            panic!("the tasks run did not poll what the agents run noted: {tasks:#?}")
        });
    assert_eq!(task.state, Probe::Value("TASK_STATE_WORKING".into()));

    for _ in 0..4 {
        let runs = [
            collect_only(&config, "agents"),
            collect_only(&config, "tasks"),
            collect_only(&config, "agents"),
            collect_only(&config, "tasks"),
        ];
        for run in runs {
            support::assert_success(&run.wait_with_output().unwrap());
        }
    }
    let registry: serde_json::Value = serde_json::from_slice(
        &std::fs::read(scratch.path().join("state/live_tasks.json")).unwrap(),
    )
    .expect("the registry is whole after overlapping runs");
    assert_eq!(
        // By agent, then id (issue 21: task ids are each peer's own).
        registry["tasks"]["heart"]["t_shared01"]["agent"],
        "heart",
        "{registry:#}"
    );
    assert!(
        live(&scratch.snapshot())
            .iter()
            .any(|t| t.id == "t_shared01" && !t.stuck)
    );
}

/// Writes `name`'s audit log: one successful exchange 10 s ago that mentions the first of
/// `task_ids`, then one failed exchange (HTTP 502) for each of the others. The tail reader
/// takes the ids of the newest successful line and of every line after it.
fn audit_mentioning(scratch: &Scratch, name: &str, task_ids: &[&str]) -> std::path::PathBuf {
    let path = scratch.path().join(format!("{name}.a2a_audit.jsonl"));
    let ts = chrono::Utc::now().timestamp() as f64 - 10.0;
    let lines: String = task_ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let mut line =
                serde_json::json!({"ts": ts, "direction": "inbound", "peer": "min", "task_id": id});
            if i > 0 {
                line["status"] = 502.into();
            }
            format!("{line}\n")
        })
        .collect();
    std::fs::write(&path, lines).unwrap();
    path
}

/// A task id the audit log mentions but the real peer does not know (-32001): its own
/// condition, NOT_FOUND with the reason, never stuck however long it lasts, never escalated.
#[test]
fn a_task_the_peer_does_not_know_is_not_found_never_stuck_nor_escalated() {
    let scratch = Scratch::new();
    short_rules(&scratch);
    let peer = PyPeer::start(Sdk::V1, &["--name", "heart"]);
    let audit = audit_mentioning(&scratch, "heart", &["t_unknown01"]);
    let config = scratch.config(&agent_toml("heart", &peer.endpoint(), "v1", &audit));

    collect_ok(&scratch, &config);
    std::thread::sleep(Duration::from_millis(2500));
    let snapshot = collect_ok(&scratch, &config);
    let tasks = live(&snapshot);
    let task = tasks
        .iter()
        .find(|t| t.id == "t_unknown01")
        .unwrap_or_else(|| panic!("{tasks:#?}"));
    assert_eq!(task.status, Asc::NOT_FOUND, "{task:#?}");
    assert!(!task.stuck, "{task:#?}");
    let reason = task.reason.clone().unwrap();
    assert!(
        reason.contains("the peer does not know this task") && reason.contains("-32001"),
        "{reason}"
    );
    assert!(task.age_s >= 2, "its age still counts: {task:#?}");
    assert!(
        escalations(&scratch).is_empty(),
        "{:#?}",
        escalations(&scratch)
    );
}

/// An agent that accepts the heartbeat as a task and leaves it WORKING (a real a2a-sdk peer
/// with --never-complete, no in-flight list): the heartbeat's own task is tracked, becomes
/// stuck at the rule and is escalated once; the later heartbeats' tasks do not pile up.
#[test]
fn a_heartbeat_the_peer_leaves_working_is_tracked_and_becomes_stuck() {
    let scratch = Scratch::new();
    short_rules(&scratch);
    let peer = PyPeer::start(Sdk::V1, &["--name", "heart", "--never-complete"]);
    let audit = scratch.audit_log("heart", 10.0);
    let config = scratch.config(&agent_toml("heart", &peer.endpoint(), "v1", &audit));

    let first = live(&collect_ok(&scratch, &config));
    assert_eq!(
        first.len(),
        1,
        "the heartbeat's task is tracked: {first:#?}"
    );
    let id = first[0].id.clone();
    assert_eq!(first[0].agent, "heart");
    assert_eq!(first[0].state, Probe::Value("TASK_STATE_WORKING".into()));
    assert!(!first[0].stuck);

    std::thread::sleep(Duration::from_millis(2500));
    let second = collect_ok(&scratch, &config);
    let tasks = live(&second);
    let task = tasks
        .iter()
        .find(|t| t.id == id)
        .unwrap_or_else(|| panic!("{tasks:#?}"));
    assert!(task.stuck, "{task:#?}");
    assert_eq!(task.status, Asc::TIMEOUT);
    let reason = task.reason.clone().unwrap();
    assert!(
        reason.starts_with("no reply for ") && reason.contains("heartbeat"),
        "{reason}"
    );
    assert!(second.verdict().red >= 1);
    assert_eq!(escalations_of(&scratch, &id).len(), 1);

    let third = live(&collect_ok(&scratch, &config));
    assert_eq!(
        third.len(),
        1,
        "one heartbeat task per agent at a time: {third:#?}"
    );
    assert!(third[0].id == id && third[0].stuck);
    assert_eq!(
        escalations(&scratch).len(),
        1,
        "{:#?}",
        escalations(&scratch)
    );
}

/// Secret-shaped task ids from a real peer's heartbeat in-flight list and from audit lines'
/// `task_id`, every glued shape among them (issue 21): none of them reaches any file fleetdash
/// writes (output_dir, state_dir with the registry and the escalations, the vault) or its log,
/// the page says ids were withheld, and a harmless id beside them is still polled, judged and
/// escalated.
#[test]
fn secret_shaped_task_ids_are_never_written_and_harmless_ones_still_tracked() {
    use support::secrets::{HASH, JWT, SK, URL_CREDS, find_secret, glued_words};
    let scratch = Scratch::new();
    short_rules(&scratch);
    // One reply lists at most 64 ids in flight and one audit read takes at most 32, so the
    // glued ids are spread: most in flight, the rest over the two passes' audit logs.
    let glued = glued_words();
    let (in_flight, rest) = glued.split_at(61);
    let (audit_first, audit_second) = rest.split_at(29);
    let mut args = vec!["--name", "heart"];
    for id in ["t_fine01", SK.value, HASH.value].iter().chain(in_flight) {
        args.extend(["--in-flight", id]);
    }
    let peer = PyPeer::start(Sdk::V1, &args);
    let audit_ids = |glued: &[&'static str]| -> Vec<&'static str> {
        let mut ids = vec!["t_fine01", JWT.value, URL_CREDS.value];
        ids.extend(glued);
        ids
    };
    let audit = audit_mentioning(&scratch, "heart", &audit_ids(audit_first));
    let board = kanban::Kanban::create(&scratch.path().join("research.db"));
    board.task(&kanban::Task::new(
        "t_card01",
        "Survey dialects",
        "todo",
        Some("min"),
    ));
    let vault = scratch.path().join("vault");
    let config = scratch.config(&format!(
        "{}[vault]\npath = \"{}\"\n\n[[boards]]\nname = \"research\"\ndb = \"research.db\"\n\
         projection = \"Docs/Kanban/research.kanban\"\n",
        agent_toml("heart", &peer.endpoint(), "v1", &audit),
        vault.display()
    ));

    let (_, first) = collect_logged(&scratch, &config);
    std::thread::sleep(Duration::from_millis(2500));
    audit_mentioning(&scratch, "heart", &audit_ids(audit_second));
    let (snapshot, second) = collect_logged(&scratch, &config);
    for log in [first, second] {
        if let Some(found) = find_secret(&log) {
            panic!("the log holds {found}:\n{log}");
        }
    }

    let mut checked = 0;
    for dir in ["out", "state", "vault"] {
        for path in support::files_under(&scratch.path().join(dir)) {
            let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
            if let Some(found) = find_secret(&text) {
                panic!("{} holds {found}:\n{text}", path.display());
            }
            checked += 1;
        }
    }
    assert!(
        checked >= 6,
        "status.json, snapshot.html, the registry, the escalations, the vault file, the history: {checked}"
    );

    let tasks = live(&snapshot);
    let fine = tasks
        .iter()
        .find(|t| t.id == "t_fine01")
        .unwrap_or_else(|| panic!("the harmless id is tracked: {tasks:#?}"));
    assert_eq!(fine.state, Probe::Value("TASK_STATE_WORKING".into()));
    assert!(fine.stuck, "{fine:#?}");
    assert_eq!(escalations_of(&scratch, "t_fine01").len(), 1);
    let withheld = tasks
        .iter()
        .find(|t| t.status == Asc::GUARDRAIL_BLOCKED)
        .unwrap_or_else(|| panic!("the page says ids were withheld: {tasks:#?}"));
    assert_eq!(withheld.agent, "heart");
    assert!(!withheld.stuck);
    // The second pass's: SK and HASH and the glued ids in flight, JWT, URL_CREDS and the
    // second audit's glued ids.
    let reason = withheld.reason.clone().unwrap();
    let expected = 2 + in_flight.len() + 2 + audit_second.len();
    assert!(
        reason.starts_with(&format!("{expected} task ids")) && reason.contains("not tracked"),
        "{reason}"
    );
    assert!(vault.join("Docs/Kanban/research.kanban").is_file());
}

/// A registry as an earlier pass left it: `t_stuck01` stuck and already escalated.
fn escalated_registry(state: &std::path::Path) -> Vec<u8> {
    let at = chrono::Utc::now() - chrono::Duration::seconds(600);
    let registry = serde_json::json!({"tasks": {"t_stuck01": {
        "agent": "heart", "origin": "heartbeat", "wire": "v1",
        "first_seen": at, "last_mentioned": at, "last_progress": at,
        "state": "TASK_STATE_WORKING", "updated_at": at, "finished_at": null,
        "escalated": true,
    }}});
    let bytes = serde_json::to_vec_pretty(&registry).unwrap();
    std::fs::create_dir_all(state).unwrap();
    std::fs::write(state.join("live_tasks.json"), &bytes).unwrap();
    bytes
}

/// A registry fleetdash may not read (mode 000, and the write side runs without root's
/// override of file permissions) is not an empty one: the live section is an error naming the
/// file, and neither the agents pass's note nor the poll's record writes over it, so the
/// `escalated` flags it holds are not lost (and stuck tasks not escalated again).
#[test]
fn an_unreadable_registry_is_an_error_naming_it_and_is_not_written_over() {
    use fleetdash::collect::live_tasks::registry::{Mention, Origin, TaskKey};
    use fleetdash::collect::live_tasks::{Answer, Answers, Poll};
    use fleetdash::collect::{Collection, Findings, SectionData};
    use fleetdash::write::Writer;
    use std::os::unix::fs::PermissionsExt;

    let scratch = Scratch::new();
    let audit = scratch.audit_log("heart", 10.0);
    let config_path = scratch.config(&agent_toml(
        "heart",
        &support::refused_endpoint(),
        "v1",
        &audit,
    ));
    let (config, rules) = fleetdash::config::Config::load(&config_path)
        .unwrap_or_else(|e| panic!("{}: {e:?}", config_path.display()));
    let state = scratch.path().join("state");
    let before = escalated_registry(&state);
    let path = state.join("live_tasks.json");
    let writer = Writer::new(&config, &rules, fleetdash::redact::RedactionGate::default()).unwrap();
    let collection = |findings| Collection {
        findings,
        checked_at: chrono::Utc::now(),
        duration: Duration::ZERO,
    };
    let mention = Mention {
        agent: "heart".into(),
        wire: Some("v1".into()),
        origin: Origin::Heartbeat,
        id: "t_new01".into(),
    };
    let working = Answer::Task(fleetdash::a2a::TaskFacts {
        state: Some("TASK_STATE_WORKING"),
        updated_at: None,
    });
    let poll = Poll {
        answers: Answers::from([(TaskKey::new("heart", "t_stuck01"), working)]),
        ..Poll::default()
    };

    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o000)).unwrap();
    let (_, live) = support::without_file_permission_override(|| {
        let noted = writer.settle(collection(Findings::Agents {
            rows: Vec::new(),
            mentions: vec![mention],
        }));
        let live = writer.settle(collection(Findings::LivePoll(poll)));
        (noted, live)
    });
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();

    let SectionData::LiveTasks(Probe::Error(reason)) = &live.data else {
        panic!("the live section is not an error: {:?}", live.data)
    };
    assert!(
        reason.contains(&path.display().to_string()) && reason.contains("ermission denied"),
        "{reason}"
    );
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "the unreadable registry was written over"
    );
    assert!(
        !state.join("escalations.jsonl").exists(),
        "nothing is escalated from a registry that was not read"
    );
}

/// The poll's own read of the registry (run by `fleetdash collect`, without the lock): a
/// registry it cannot read (here a directory, which root cannot read either) is an error on
/// the page naming the file, never "no live tasks".
#[test]
fn a_registry_the_poll_cannot_read_is_an_error_on_the_page() {
    let scratch = Scratch::new();
    let audit = scratch.audit_log("heart", 10.0);
    let config = scratch.config(&agent_toml(
        "heart",
        &support::refused_endpoint(),
        "v1",
        &audit,
    ));
    let registry = scratch.path().join("state/live_tasks.json");
    std::fs::create_dir_all(&registry).unwrap();
    let snapshot = collect_ok(&scratch, &config);
    let reason = snapshot
        .tasks
        .live
        .error_reason()
        .unwrap_or_else(|| panic!("tasks.live is {:?}", snapshot.tasks.live));
    assert!(reason.contains(&registry.display().to_string()), "{reason}");
    assert!(registry.is_dir(), "left as it is");
}

//! A clock that steps (issue 31), end to end: `fleetdash run` (an intake, the work queue, a
//! webhook channel, a real A2A peer whose task never progresses) under libfaketime, whose wall
//! clock a timestamp file moves while its monotonic and boot clocks run on (as after a laptop's
//! suspend or an NTP step): +1 d, then back to 1 h behind, then to now. The test itself, the
//! peer and the reporting agent live on the real clock, as a fleet does when its hub's clock
//! jumps.
//!
//! What must hold through every jump: no task orphaned whose owner reports; the stuck live task
//! and the task nobody took stay red; no alert recovers because of a jump; each jump is shown
//! in status.json's `clock`.

use crate::support;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{PyPeer, Sdk};

use crate::support::receiver;
use receiver::{Mode, Receiver};

const SOL_TOKEN: &str = "report-sol-4be2a771";
const VEGA_TOKEN: &str = "report-vega-09c3d5e8";

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Debian's libfaketime (package faketime, which scripts/test installs).
fn libfaketime() -> PathBuf {
    let candidates = [
        "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
        "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
        "/usr/lib/faketime/libfaketime.so.1",
    ];
    candidates
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .unwrap_or_else(|| {
            panic!(
                "libfaketime is missing (looked at {candidates:?}): install Debian's faketime \
                 (scripts/test does)"
            )
        })
}

/// The shipped rules, shortened so that the windows pass within the test: the stuck rule and
/// the ACK limit in seconds, the sweep every second, alerts grouped for a second.
fn short_rules() -> String {
    let rules = support::quick_grouping_rules()
        .replacen("no_reply_seconds: 300", "no_reply_seconds: 8", 1)
        .replacen("sweep_seconds: 60", "sweep_seconds: 1", 1)
        .replacen("within_seconds: 600", "within_seconds: 6", 1);
    for (short, what) in [
        ("no_reply_seconds: 8", "stuck"),
        ("sweep_seconds: 1", "sweep"),
        ("within_seconds: 6", "ack"),
    ] {
        assert!(
            rules.contains(short),
            "config/rules.yaml has no {what} rule to shorten"
        );
    }
    rules
}

/// Moves the faked wall clock: `+1d`, `-1h`, `+0` (relative to the real one).
fn set_clock(file: &Path, offset: &str) {
    std::fs::write(file, format!("{offset}\n")).unwrap();
}

fn snapshot(status: &Path) -> Option<Value> {
    let bytes = std::fs::read(status).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Waits (up to the hang budget) until `status.json` satisfies `ok`, and returns it.
fn wait_for(status: &Path, what: &str, ok: impl Fn(&Value) -> bool) -> Value {
    let started = Instant::now();
    loop {
        if let Some(s) = snapshot(status).filter(|s| ok(s)) {
            return s;
        }
        assert!(
            started.elapsed() < support::HANG_BUDGET,
            "never {what}: {}",
            snapshot(status).map(|s| s.to_string()).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A v0.3 report (`message/send`) from an agent, answered as JSON.
fn send(intake: SocketAddr, token: &str, id: &str, text: &str) -> Value {
    use std::io::{Read, Write};
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {
        "kind": "message", "role": "user", "messageId": id,
        "parts": [{"kind": "text", "text": text}]}}})
    .to_string();
    let mut stream = std::net::TcpStream::connect(intake).unwrap();
    stream.set_read_timeout(Some(support::HANG_BUDGET)).unwrap();
    write!(
        stream,
        "POST / HTTP/1.1\r\nHost: {intake}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let (_, json) = answer
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("{text}: {answer}"));
    serde_json::from_str(json).unwrap_or_else(|e| panic!("{text}: {e}: {answer}"))
}

/// The id of the task an assignment created.
fn assigned(answer: &Value) -> String {
    answer["result"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no task in {answer}"))
        .to_string()
}

fn queue_task<'a>(s: &'a Value, id: &str) -> &'a Value {
    s["tasks"]["queue"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["id"] == id))
        .unwrap_or_else(|| panic!("{id} not in {}", s["tasks"]["queue"]))
}

fn live_task<'a>(s: &'a Value, id: &str) -> Option<&'a Value> {
    s["tasks"]["live"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["id"] == id))
}

/// Every alert the webhook received, each as (element key, event).
fn alerts(hook: &Receiver) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for got in hook.got() {
        let body: Value = serde_json::from_slice(&got.body).unwrap();
        let each = match body["alerts"].as_array() {
            Some(group) => group.clone(),
            None => vec![body],
        };
        for a in each {
            out.push((
                a["element"]["key"].as_str().unwrap_or_default().to_string(),
                a["event"].as_str().unwrap_or_default().to_string(),
            ));
        }
    }
    out
}

/// What must hold at every moment of the run: `working` (its owner reports) is not orphaned,
/// the stuck live task and the task nobody took are red.
fn holds(s: &Value, working: &str, untaken: &str, when: &str) {
    let w = queue_task(s, working);
    assert_ne!(
        w["state"], "TASK_STATE_FAILED",
        "{when}: the task whose owner reports was orphaned: {w}"
    );
    assert_eq!(w["band"], "green", "{when}: {w}");
    let u = queue_task(s, untaken);
    assert_eq!(u["band"], "red", "{when}: the task nobody took turned {u}");
    let stuck = live_task(s, "t_never01").unwrap_or_else(|| panic!("{when}: t_never01 gone"));
    assert_eq!(
        stuck["stuck"], true,
        "{when}: the stuck task is no longer stuck: {stuck}"
    );
    assert!(stuck["age_s"].as_u64().unwrap() > 0, "{when}: {stuck}");
}

/// The newest jump status.json shows, as (kind, seconds).
fn newest_jump(s: &Value) -> Option<(String, u64)> {
    let j = s["clock"]["jumps"].as_array()?.first()?;
    Some((j["kind"].as_str()?.to_string(), j["seconds"].as_u64()?))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clock_that_steps_fails_no_task_hides_no_red_and_pages_no_false_recovery() {
    let hook = Receiver::start(Mode::Ok).await;
    let scratch = support::Scratch::new();
    std::fs::write(scratch.path().join("rules.yaml"), short_rules()).unwrap();
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
    let config = scratch.config(&format!(
        "[cadence]\nagents = \"1s\"\nlive_tasks = \"1s\"\nqueue = \"1s\"\n\n\
         [intake]\nlisten = \"127.0.0.1:0\"\nrate_per_minute = 1000000\n\n\
         [work_queue]\ndb = \"state/tasks.db\"\n\n\
         [[alerts.channels]]\nname = \"hook\"\ntype = \"webhook\"\nurl = \"{hook}\"\n\n\
         [[agents]]\nname = \"heart\"\nendpoint = \"{heart}\"\ndialect = \"v1\"\n\n\
         [[agents]]\nname = \"sol\"\nendpoint = \"{refused}\"\ndialect = \"v1\"\n\
         report_token_env = \"SOL_REPORT_TOKEN\"\n\n\
         [[agents]]\nname = \"vega\"\nendpoint = \"{refused}\"\ndialect = \"v1\"\n\
         report_token_env = \"VEGA_REPORT_TOKEN\"\n",
        hook = hook.url("/hook"),
        heart = peer.endpoint(),
        refused = support::refused_endpoint(),
    ));
    let clock_file = scratch.path().join("faketime");
    set_clock(&clock_file, "+0");
    let mut child = support::fleetdash()
        .args(["run", "--config"])
        .arg(&config)
        .env("SOL_REPORT_TOKEN", SOL_TOKEN)
        .env("VEGA_REPORT_TOKEN", VEGA_TOKEN)
        .env("LD_PRELOAD", libfaketime())
        .env("FAKETIME_TIMESTAMP_FILE", &clock_file)
        .env("FAKETIME_NO_CACHE", "1")
        .env("FAKETIME_DONT_FAKE_MONOTONIC", "1")
        .env("FLEETDASH_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let _run = Killed(child);
    let (tx, rx) = std::sync::mpsc::channel();
    let log = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let kept = log.clone();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stderr);
        let mut bytes = Vec::new();
        while reader.read_until(b'\n', &mut bytes).is_ok_and(|n| n > 0) {
            let line = String::from_utf8_lossy(&bytes).trim_end().to_string();
            bytes.clear();
            if let Some(url) = line.strip_prefix("fleetdash: intake listening on ") {
                let _ = tx.send(url.trim().to_string());
            }
            kept.lock().unwrap().push(line);
        }
    });
    let intake: SocketAddr = rx
        .recv_timeout(support::HANG_BUDGET)
        .expect("fleetdash run never said where the intake listens")
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .parse()
        .unwrap();

    // Blocking HTTP off the runtime's workers.
    let (working, untaken) = tokio::task::spawn_blocking(move || {
        let working = assigned(&send(
            intake,
            SOL_TOKEN,
            "a-1",
            "ASSIGN to sol: keep working",
        ));
        send(
            intake,
            SOL_TOKEN,
            "a-2",
            &format!("ACK {working} owning ETA 2h"),
        );
        let untaken = assigned(&send(
            intake,
            SOL_TOKEN,
            "a-3",
            "ASSIGN to vega: nobody takes this",
        ));
        (working, untaken)
    })
    .await
    .unwrap();
    // sol works on its task and says so every second, on the real clock, throughout.
    let reporting = Arc::new(AtomicBool::new(true));
    let beats = {
        let (reporting, working) = (reporting.clone(), working.clone());
        std::thread::spawn(move || {
            let mut n = 0;
            while reporting.load(Ordering::SeqCst) {
                n += 1;
                send(
                    intake,
                    SOL_TOKEN,
                    &format!("hb-{n}"),
                    &format!("HEARTBEAT in-flight {working}"),
                );
                std::thread::sleep(Duration::from_secs(1));
            }
        })
    };

    let check = {
        let status = scratch.status_path();
        let (working, untaken) = (working.clone(), untaken.clone());
        move |what: &'static str, ok: Box<dyn Fn(&Value) -> bool + Send>| {
            let status = status.clone();
            let (working, untaken) = (working.clone(), untaken.clone());
            tokio::task::spawn_blocking(move || {
                let s = wait_for(&status, what, ok);
                holds(&s, &working, &untaken, what);
                s
            })
        }
    };

    // Before any jump: the task stuck, the one nobody took red, both paged.
    let (w, u) = (working.clone(), untaken.clone());
    check(
        "red before any jump",
        Box::new(move |s| {
            live_task(s, "t_never01").is_some_and(|t| t["stuck"] == true)
                && s["tasks"]["queue"].as_array().is_some_and(|q| {
                    q.iter()
                        .any(|t| t["id"] == u.as_str() && t["band"] == "red")
                })
                && s["tasks"]["queue"]
                    .as_array()
                    .is_some_and(|q| q.iter().any(|t| t["id"] == w.as_str()))
        }),
    )
    .await
    .unwrap();
    let fired_before = {
        let started = Instant::now();
        loop {
            let got = alerts(&hook);
            let fired = |key: &str| got.iter().any(|(k, e)| k == key && e == "firing");
            if fired("task:heart/t_never01") && fired(&format!("queue:{untaken}")) {
                break got;
            }
            assert!(
                started.elapsed() < support::HANG_BUDGET,
                "never paged: {got:?}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    };

    // A day ahead (a laptop waking the next morning): shown, and a whole stuck window (8 s)
    // and more watched after it while sol reports.
    set_clock(&clock_file, "+1d");
    check(
        "the jump ahead shown",
        Box::new(|s| newest_jump(s).is_some_and(|(k, secs)| k == "forward" && secs >= 86_000)),
    )
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_secs(12)).await;
    let ahead = check("through a day ahead", Box::new(|_| true))
        .await
        .unwrap();
    assert!(
        ahead["clock"]["judging_from"].is_string(),
        "the grace after a jump ahead is said: {}",
        ahead["clock"]
    );

    // Back to an hour behind the real clock: a jump back of 25 h.
    set_clock(&clock_file, "-1h");
    check(
        "the jump back shown",
        Box::new(|s| newest_jump(s).is_some_and(|(k, secs)| k == "backward" && secs >= 89_000)),
    )
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_secs(12)).await;
    check("through an hour behind", Box::new(|_| true))
        .await
        .unwrap();

    // And to now: a jump ahead of an hour.
    set_clock(&clock_file, "+0");
    check(
        "the jump to now shown",
        Box::new(|s| newest_jump(s).is_some_and(|(k, secs)| k == "forward" && secs < 86_000)),
    )
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_secs(12)).await;
    let last = check("back to now", Box::new(|_| true)).await.unwrap();

    reporting.store(false, Ordering::SeqCst);
    beats.join().unwrap();
    let jumps: Vec<String> = last["clock"]["jumps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["kind"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        jumps,
        ["forward", "backward", "forward"],
        "{}",
        last["clock"]
    );
    // The clock as fleetdash's own element: its turn to amber is a transition of the log.
    let turned = last["transitions"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["key"] == "fleetdash:clock" && t["to"] == "amber");
    assert!(turned, "{}", last["transitions"]);
    // No alert recovered: nothing that was red turned green, whatever the clock did.
    let got = alerts(&hook);
    let recovered: Vec<&(String, String)> = got.iter().filter(|(_, e)| e == "recovered").collect();
    assert!(recovered.is_empty(), "recovered by a jump: {recovered:?}");
    // Nor was anything paged again: no reminder burst, no second firing of what fired.
    assert_eq!(
        got.iter()
            .filter(|(k, e)| k == "task:heart/t_never01" && e == "firing")
            .count(),
        1,
        "{got:?} (before the jumps: {fired_before:?})"
    );
    let logged = log.lock().unwrap().join("\n");
    for said in [
        "this host's clock jumped forward 1 d",
        "this host's clock jumped back 1 d 1 h",
    ] {
        assert!(
            logged.contains(said),
            "the log does not say {said:?}:\n{logged}"
        );
    }
}

// --- The report of a night (issue 45) ------------------------------------------------------

/// An agent the test takes down and brings back on the same loopback port: its card and
/// heartbeat answered by the demo's simulated agent while it is up, refused while it is down.
struct Toggled {
    name: String,
    addr: SocketAddr,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Toggled {
    fn start(name: &str) -> Toggled {
        let addr = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let mut t = Toggled {
            name: name.into(),
            addr,
            runtime: None,
        };
        t.up();
        t
    }

    fn endpoint(&self) -> String {
        format!("http://{}/", self.addr)
    }

    fn up(&mut self) {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let listener = runtime.block_on(async {
            let socket = tokio::net::TcpSocket::new_v4().unwrap();
            socket.set_reuseaddr(true).unwrap();
            socket.bind(self.addr).unwrap();
            socket.listen(64).unwrap()
        });
        let agent = fleetdash::demo::sim::SimAgent::healthy(&self.name, fleetdash::a2a::Wire::V1);
        let router = fleetdash::demo::sim::single_router(agent, self.endpoint());
        runtime.spawn(async move { axum::serve(listener, router).await });
        self.runtime = Some(runtime);
    }

    fn down(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

/// The seconds from the real clock to `target`: the faked clock's offset that reads `target`
/// now (a fixed night, whatever day the test runs).
fn offset_to(target: &str) -> i64 {
    let target = chrono::DateTime::parse_from_rfc3339(target).unwrap();
    (target.to_utc() - chrono::Utc::now()).num_seconds()
}

fn set_offset(file: &Path, seconds: i64) {
    let sign = if seconds < 0 { "-" } else { "+" };
    set_clock(file, &format!("{sign}{}", seconds.abs()));
}

/// `fleetdash run` on `config` under the faked clock of `clock_file`, and where its intake
/// listens (when it has one: it says so on stderr, which is drained for the rest of the run).
fn run_faked(config: &Path, clock_file: &Path) -> (Child, Option<SocketAddr>) {
    let mut child = support::fleetdash()
        .args(["run", "--config"])
        .arg(config)
        .env("SOL_REPORT_TOKEN", SOL_TOKEN)
        .env("LD_PRELOAD", libfaketime())
        .env("FAKETIME_TIMESTAMP_FILE", clock_file)
        .env("FAKETIME_NO_CACHE", "1")
        .env("FAKETIME_DONT_FAKE_MONOTONIC", "1")
        .env("FLEETDASH_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stderr);
        let mut bytes = Vec::new();
        while reader.read_until(b'\n', &mut bytes).is_ok_and(|n| n > 0) {
            let line = String::from_utf8_lossy(&bytes).trim_end().to_string();
            bytes.clear();
            if let Some(url) = line.strip_prefix("fleetdash: intake listening on ") {
                let _ = tx.send(url.trim().to_string());
            }
            if line.contains("collecting") {
                let _ = tx.send(String::new());
            }
        }
    });
    let mut intake = None;
    while let Ok(said) = rx.recv_timeout(support::HANG_BUDGET) {
        if said.is_empty() {
            break;
        }
        intake = said
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .parse()
            .ok();
    }
    (child, intake)
}

/// The reports the webhook received: (id, Idempotency-Key, body).
fn reports(hook: &Receiver) -> Vec<(String, String, Value)> {
    hook.got()
        .into_iter()
        .filter_map(|got| {
            let body: Value = serde_json::from_slice(&got.body).ok()?;
            (body["event"] == "report").then(|| {
                let key = got
                    .headers
                    .get("idempotency-key")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_string();
                (body["id"].as_str().unwrap().to_string(), key, body)
            })
        })
        .collect()
}

fn agent_band(s: &Value, name: &str) -> String {
    s["agents"]
        .as_array()
        .and_then(|a| a.iter().find(|a| a["name"] == name))
        .map(|a| a["band"].as_str().unwrap_or_default().to_string())
        .unwrap_or_default()
}

/// Stops or continues a process (SIGSTOP / SIGCONT): a hub that is not watching.
fn signal(child: &Child, sig: &str) {
    let ok = std::process::Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill {sig}");
}

/// A webhook in `mode` on a runtime of its own (its workers serve it while the test blocks),
/// and a scratch folder with the shipped rules, grouping shortened.
fn webhook_and_scratch(mode: Mode) -> (tokio::runtime::Runtime, Receiver, support::Scratch) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let hook = rt.block_on(Receiver::start(mode));
    let scratch = support::Scratch::new();
    std::fs::write(
        scratch.path().join("rules.yaml"),
        support::quick_grouping_rules(),
    )
    .unwrap();
    (rt, hook, scratch)
}

/// Issue 45, done when: a night of churn through `fleetdash run` under a faked clock (an
/// agent flapping, one going down for good, a clock stepped ahead, the hub not watching at the
/// hour, tasks finished and never taken) is reported once, late and saying why, and the
/// report says what the transitions log holds, element by element; a restart sends nothing
/// more.
#[test]
fn a_night_of_churn_is_reported_once_saying_what_the_transitions_log_holds() {
    let (_rt, hook, scratch) = webhook_and_scratch(Mode::Ok);
    let mut vega = Toggled::start("vega");
    let mut kai = Toggled::start("kai");
    let lyra = support::Sim::healthy("lyra", fleetdash::a2a::Wire::V1);
    let sol = support::Sim::healthy("sol", fleetdash::a2a::Wire::V1);
    let config = scratch.config(&format!(
        "[cadence]\nagents = \"1s\"\nqueue = \"1s\"\n\n\
         [intake]\nlisten = \"127.0.0.1:0\"\nrate_per_minute = 1000000\n\n\
         [work_queue]\ndb = \"state/tasks.db\"\n\n\
         [[alerts.channels]]\nname = \"hook\"\ntype = \"webhook\"\nurl = \"{hook}\"\n\n\
         [report]\nat = \"07:30\"\nzone = \"Europe/Berlin\"\n\n\
         [[agents]]\nname = \"vega\"\nendpoint = \"{vega}\"\ndialect = \"v1\"\n\n\
         [[agents]]\nname = \"kai\"\nendpoint = \"{kai}\"\ndialect = \"v1\"\n\n\
         [[agents]]\nname = \"lyra\"\nendpoint = \"{lyra}\"\ndialect = \"v1\"\n\n\
         [[agents]]\nname = \"sol\"\nendpoint = \"{sol}\"\ndialect = \"v1\"\n\
         report_token_env = \"SOL_REPORT_TOKEN\"\n",
        hook = hook.url("/hook"),
        vega = vega.endpoint(),
        kai = kai.endpoint(),
        lyra = lyra.endpoint,
        sol = sol.endpoint,
    ));
    // 22:00 in Berlin on Friday 6 March 2026: the report is due at 07:30, 06:30 UTC.
    let clock_file = scratch.path().join("faketime");
    let mut offset = offset_to("2026-03-06T21:00:00Z");
    set_offset(&clock_file, offset);
    let status = scratch.status_path();
    let (child, intake) = run_faked(&config, &clock_file);
    let intake = intake.expect("fleetdash run never said where the intake listens");
    let run = Killed(child);
    let wait = |what: &str, ok: &dyn Fn(&Value) -> bool| wait_for(&status, what, ok);
    wait(
        "every agent green",
        &(|s| {
            ["vega", "kai", "lyra", "sol"]
                .iter()
                .all(|a| agent_band(s, a) == "green")
        }),
    );

    // vega flaps: three red spells, seconds apart.
    for _ in 0..3 {
        vega.down();
        wait("vega red", &(|s| agent_band(s, "vega") == "red"));
        vega.up();
        wait("vega green", &(|s| agent_band(s, "vega") == "green"));
    }
    // The clock steps four hours ahead (01:00 UTC).
    offset += 4 * 3600;
    set_offset(&clock_file, offset);
    wait(
        "the step shown",
        &(|s| newest_jump(s).is_some_and(|(k, secs)| k == "forward" && secs >= 14_000)),
    );
    // Work: a task finished, one nobody takes.
    {
        let done = assigned(&send(
            intake,
            SOL_TOKEN,
            "n-1",
            "ASSIGN to sol: rotate the logs",
        ));
        send(
            intake,
            SOL_TOKEN,
            "n-2",
            &format!("ACK {done} owning ETA 1h"),
        );
        send(intake, SOL_TOKEN, "n-3", &format!("DONE {done} rotated"));
        assigned(&send(
            intake,
            SOL_TOKEN,
            "n-4",
            "ASSIGN to kai: nobody takes this",
        ));
    }
    // kai goes down for good.
    kai.down();
    wait("kai red", &(|s| agent_band(s, "kai") == "red"));
    // The hub stops watching (stopped, as a laptop's lid is shut) across the hour: 07:35.
    signal(&run.0, "-STOP");
    offset = offset_to("2026-03-07T06:35:00Z");
    set_offset(&clock_file, offset);
    std::thread::sleep(Duration::from_secs(2));
    signal(&run.0, "-CONT");

    // The report, once, within a tick of the reporter (15 s) and the group's wait.
    let started = Instant::now();
    let report = loop {
        if let Some(r) = reports(&hook).into_iter().next() {
            break r;
        }
        assert!(
            started.elapsed() < support::HANG_BUDGET * 2,
            "no report reached the webhook"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    let (id, key, body) = report;
    let due = chrono::DateTime::parse_from_rfc3339("2026-03-07T06:30:00Z").unwrap();
    assert_eq!(id, format!("report:{}", due.timestamp()));
    assert_eq!(key, id, "the webhook's Idempotency-Key is the report's id");
    let text = body["report"].as_str().unwrap().to_string();
    let title = body["element"]["name"].as_str().unwrap();
    eprintln!("the night's report, as the webhook got it:\n{text}");
    assert!(
        title.starts_with("Night: 1 needs you, 1 recovered"),
        "{title}\n{text}"
    );

    // Against the log, element by element, over the report's own period.
    let from = chrono::DateTime::parse_from_rfc3339(body["since"].as_str().unwrap()).unwrap();
    let to = chrono::DateTime::parse_from_rfc3339(body["at"].as_str().unwrap()).unwrap();
    let log: Value = serde_json::from_slice(
        &std::fs::read(scratch.path().join("state/transitions.json")).unwrap(),
    )
    .unwrap();
    let entries: Vec<&Value> = log["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| {
            let at = chrono::DateTime::parse_from_rfc3339(t["at"].as_str().unwrap()).unwrap();
            at >= from && at < to
        })
        .collect();
    let reds = |key: &str| {
        entries
            .iter()
            .filter(|t| t["key"] == key && t["to"] == "red")
            .count()
    };
    assert_eq!(reds("agent:vega"), 3, "the log holds vega's three spells");
    assert!(
        text.contains("agent vega went red 3 times"),
        "vega's flaps are one line:\n{text}"
    );
    assert!(
        text.contains("vega: red 3×"),
        "vega's red time is counted:\n{text}"
    );
    assert_eq!(reds("agent:kai"), 1);
    let kai_line = text
        .lines()
        .find(|l| l.contains("agent kai"))
        .unwrap_or_default();
    assert!(kai_line.contains("since"), "kai needs you now:\n{text}");
    // Every element the log changed in the period is in the report, by its name.
    for t in &entries {
        let (kind, name) = (t["kind"].as_str().unwrap(), t["name"].as_str().unwrap());
        if matches!(kind, "fleetdash" | "section") {
            continue;
        }
        assert!(
            text.contains(&format!("{kind} {name}")),
            "{kind} {name} changed in the log but is not in the report:\n{text}"
        );
    }
    assert!(
        text.contains("this host's clock jumped forward 4 h"),
        "the step is a blind spot:\n{text}"
    );
    assert!(
        text.contains("late: due 07:30, sent 07:35: this host's clock jumped forward 5 h"),
        "sent late, saying so:\n{text}"
    );
    assert!(
        text.contains("work queue: 1 finished") && text.contains("1 never taken"),
        "{text}"
    );
    assert!(
        text.contains("the other 2 agents: green throughout"),
        "{text}"
    );

    // A restart sends nothing more: one report for the night.
    drop(run);
    let again = Killed(run_faked(&config, &clock_file).0);
    let restarted = Instant::now();
    wait(
        "a snapshot after the restart",
        &(move |s| {
            chrono::DateTime::parse_from_rfc3339(s["generated_at"].as_str().unwrap_or_default())
                .is_ok_and(|_| restarted.elapsed() > Duration::from_secs(3))
        }),
    );
    std::thread::sleep(Duration::from_secs(3));
    drop(again);
    let ids: Vec<String> = reports(&hook).into_iter().map(|r| r.0).collect();
    assert_eq!(ids, [id], "one report, not two");
}

/// Issue 45, done when: fleetdash killed while it sends the report, then started again: the
/// receiver gets the same report again (same id, same Idempotency-Key), never a second one,
/// and the schedule moves on.
#[test]
fn a_report_killed_while_it_is_sent_is_the_same_report_after_the_restart() {
    let (_rt, hook, scratch) = webhook_and_scratch(Mode::RecordThenHang);
    let lyra = support::Sim::healthy("lyra", fleetdash::a2a::Wire::V1);
    let config = scratch.config(&format!(
        "[cadence]\nagents = \"1s\"\n\n\
         [[alerts.channels]]\nname = \"hook\"\ntype = \"webhook\"\nurl = \"{hook}\"\n\n\
         [report]\nat = \"07:30\"\nzone = \"Europe/Berlin\"\n\n\
         [[agents]]\nname = \"lyra\"\nendpoint = \"{lyra}\"\ndialect = \"v1\"\n",
        hook = hook.url("/hook"),
        lyra = lyra.endpoint,
    ));
    let clock_file = scratch.path().join("faketime");
    set_offset(&clock_file, offset_to("2026-03-07T06:29:00Z"));
    let status = scratch.status_path();
    let first = Killed(run_faked(&config, &clock_file).0);
    wait_for(&status, "a first snapshot", |_: &Value| true);
    // Past the hour: the next tick sends, and the receiver holds the request unanswered.
    set_offset(&clock_file, offset_to("2026-03-07T06:31:00Z"));
    let started = Instant::now();
    while reports(&hook).is_empty() {
        assert!(
            started.elapsed() < support::HANG_BUDGET * 2,
            "the report was never sent"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // Killed mid-send (SIGKILL: no goodbye).
    drop(first);
    hook.set(Mode::Ok);
    let _second = Killed(run_faked(&config, &clock_file).0);
    let started = Instant::now();
    while reports(&hook).len() < 2 {
        assert!(
            started.elapsed() < support::HANG_BUDGET * 2,
            "the report was not sent again after the restart"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // Let the restarted reporter tick again: nothing new.
    std::thread::sleep(Duration::from_secs(3));
    let got = reports(&hook);
    let ids: std::collections::BTreeSet<&str> = got.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(ids.len(), 1, "one report: {ids:?}");
    assert!(
        got.iter().all(|r| r.1 == r.0),
        "each try carries its id as Idempotency-Key"
    );
    assert_eq!(
        got[0].2["report"], got[1].2["report"],
        "the same report, word for word"
    );
    let state: Value = serde_json::from_slice(
        &std::fs::read(scratch.path().join("state/report-state.json")).unwrap(),
    )
    .unwrap();
    assert!(state["pending"].is_null(), "{state}");
    assert_eq!(state["last_due"], "2026-03-07T06:30:00Z", "{state}");
}

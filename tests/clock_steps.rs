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

mod support;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{PyPeer, Sdk};

#[path = "support/receiver.rs"]
mod receiver;
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

//! `fleetdash run` under systemd, with the real binary: the `Type=notify` protocol over a unix
//! datagram socket the test binds (READY only once status.json exists, WATCHDOG after passes,
//! STOPPING on SIGTERM; RELOADING then READY on a SIGHUP reload), SIGHUP reloading the config
//! (a broken one refused while collecting goes on, a good one taking over), and the packaged
//! units passing `systemd-analyze verify` (systemd need not be PID 1 for that); `fleetdash serve`
//! rereading its htpasswd on SIGHUP.

use crate::support;

use std::io::{BufRead, BufReader};
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use fleetdash::a2a::Wire;
use fleetdash_model::{Probe, Snapshot};
use support::{HANG_BUDGET, Scratch, Sim, agent_toml};

/// A running `fleetdash run`, killed if the test fails before it stops it.
struct Running {
    child: Child,
    stderr: mpsc::Receiver<String>,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Running {
    fn start(config: &Path, notify: Option<&Path>) -> Running {
        let mut cmd = support::fleetdash();
        cmd.args(["run", "--config"])
            .arg(config)
            .env("FLEETDASH_LOG", "info")
            .stderr(Stdio::piped());
        if let Some(socket) = notify {
            // As systemd sets them for a Type=notify unit with WatchdogSec= (no WATCHDOG_PID:
            // then the watchdog is this process's, sd_watchdog_enabled(3)).
            cmd.env("NOTIFY_SOCKET", socket)
                .env("WATCHDOG_USEC", "900000000");
        }
        let mut child = cmd.spawn().unwrap();
        let (tx, stderr) = mpsc::channel();
        let pipe = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                eprintln!("fleetdash: {line}");
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Running { child, stderr }
    }

    fn signal(&self, signal: i32) {
        // SAFETY: kill(2) on our own child's pid.
        let sent = unsafe { libc::kill(self.child.id() as i32, signal) };
        assert_eq!(sent, 0, "kill: {}", std::io::Error::last_os_error());
    }

    /// The first log line containing every one of `words`.
    fn wait_for_line(&self, words: &[&str]) -> String {
        let deadline = Instant::now() + HANG_BUDGET;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stderr.recv_timeout(left) {
                Ok(line) if words.iter().all(|w| line.contains(w)) => return line,
                Ok(_) => {}
                Err(e) => panic!("no log line with {words:?} ({e})"),
            }
        }
    }

    fn wait_exit(&mut self) -> std::process::ExitStatus {
        let deadline = Instant::now() + HANG_BUDGET;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "fleetdash run did not exit");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// The socket systemd would listen on, bound by the test.
struct NotifySocket {
    path: PathBuf,
    socket: UnixDatagram,
}

impl NotifySocket {
    fn bind(dir: &Path) -> NotifySocket {
        let path = dir.join("notify.sock");
        let socket = UnixDatagram::bind(&path).unwrap();
        socket.set_read_timeout(Some(HANG_BUDGET)).unwrap();
        NotifySocket { path, socket }
    }

    fn next(&self) -> String {
        let mut buf = [0u8; 4096];
        let n = self
            .socket
            .recv(&mut buf)
            .unwrap_or_else(|e| panic!("no notification from fleetdash run: {e}"));
        String::from_utf8(buf[..n].to_vec()).unwrap()
    }

    /// Notifications until one that starts with `first_line`, which is returned last.
    fn until(&self, first_line: &str) -> Vec<String> {
        let mut seen = Vec::new();
        loop {
            let message = self.next();
            let done = message.lines().next() == Some(first_line);
            seen.push(message);
            if done {
                return seen;
            }
        }
    }
}

fn first_line(message: &str) -> &str {
    message.lines().next().unwrap_or("")
}

fn wait_for_snapshot(scratch: &Scratch, pred: impl Fn(&Snapshot) -> bool) -> Snapshot {
    let deadline = Instant::now() + HANG_BUDGET;
    loop {
        if let Ok(bytes) = std::fs::read(scratch.status_path())
            && let Ok(snap) = serde_json::from_slice::<Snapshot>(&bytes)
            && pred(&snap)
        {
            return snap;
        }
        assert!(Instant::now() < deadline, "no matching snapshot");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// This machine as a host, read every second: a pass takes a few milliseconds.
const LOCAL_HOST: &str = "[[hosts]]\nname = \"here\"\nsource = \"local\"\n\n";

#[test]
fn ready_comes_after_the_first_snapshot_then_watchdog_after_passes_then_stopping() {
    let scratch = Scratch::new();
    // The only agent accepts connections and never answers: the first snapshot is written
    // only after its probe's deadline (the [probe] timeout), so a READY sent at start (before
    // any write) would arrive while status.json does not exist yet.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}/", silent.local_addr().unwrap());
    let audit = scratch.audit_log("quiet", 60.0);
    let config = scratch.config(
        &("[cadence]\nagents = \"1s\"\n\n".to_string()
            + &agent_toml("quiet", &endpoint, "v1", &audit)),
    );
    let notify = NotifySocket::bind(scratch.path());
    let mut running = Running::start(&config, Some(&notify.path));

    let ready = notify.next();
    assert_eq!(first_line(&ready), "READY=1", "{ready:?}");
    assert!(
        scratch.status_path().exists(),
        "READY=1 arrived before status.json was written"
    );
    // A watchdog ping after each good write: the first pass's, then the later passes'.
    let mut pings = 0;
    while pings < 3 {
        let message = notify.next();
        assert_eq!(
            message, "WATCHDOG=1",
            "after READY, only pings until SIGTERM"
        );
        pings += 1;
    }

    running.signal(libc::SIGTERM);
    let rest = notify.until("STOPPING=1");
    assert!(
        rest[..rest.len() - 1].iter().all(|m| m == "WATCHDOG=1"),
        "{rest:?}"
    );
    assert!(running.wait_exit().success());
    drop(silent);
}

#[test]
fn sighup_with_a_broken_config_is_refused_and_the_snapshot_keeps_being_renewed() {
    let scratch = Scratch::new();
    let good = format!("[cadence]\nsystems = \"1s\"\n\n{LOCAL_HOST}");
    let config = scratch.config(&good);
    let notify = NotifySocket::bind(scratch.path());
    let mut running = Running::start(&config, Some(&notify.path));
    assert_eq!(first_line(&notify.next()), "READY=1");

    // A mistake `check` reports with its line: an unknown cadence value.
    std::fs::write(
        &config,
        std::fs::read_to_string(&config)
            .unwrap()
            .replace("systems = \"1s\"", "systems = \"soon\""),
    )
    .unwrap();
    let check = support::fleetdash()
        .args(["check", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert_eq!(
        check.status.code(),
        Some(2),
        "the broken config fails check"
    );
    running.signal(libc::SIGHUP);
    running.wait_for_line(&["cadence.systems"]);
    running.wait_for_line(&["refused", "the running config stays"]);

    // Collecting goes on with the old config: a snapshot newer than the refusal, and the
    // watchdog still fed; no RELOADING was announced.
    let refused_at = chrono::Utc::now();
    wait_for_snapshot(&scratch, |s| {
        s.sections.systems.checked_at > Some(refused_at)
    });
    for _ in 0..2 {
        assert_eq!(notify.next(), "WATCHDOG=1");
    }
    running.signal(libc::SIGTERM);
    let rest = notify.until("STOPPING=1");
    assert!(
        rest.iter().all(|m| !m.starts_with("RELOADING=1")),
        "{rest:?}"
    );
    assert!(running.wait_exit().success());
}

/// A folder `run` cannot write stops it before it starts, exit 2 (a config mistake: the unit's
/// RestartPreventExitStatus=2 keeps systemd from restarting it into the same failure); a reload
/// to such a config is refused and the running one goes on. (The sandbox's read-only folders
/// are tried under a real systemd by scripts/test-systemd.)
#[test]
fn a_folder_run_cannot_write_stops_the_start_and_refuses_the_reload() {
    let scratch = Scratch::new();
    // A file where a folder should be: nothing can be made below it, not even by root.
    let blocker = scratch.path().join("not-a-folder");
    std::fs::write(&blocker, "").unwrap();
    let good = scratch.config(&format!("[cadence]\nsystems = \"1s\"\n\n{LOCAL_HOST}"));
    let good_text = std::fs::read_to_string(&good).unwrap();
    let unwritable = good_text.replace(
        "output_dir = \"out\"",
        &format!("output_dir = \"{}\"", blocker.join("out").display()),
    );
    assert_ne!(unwritable, good_text);

    std::fs::write(&good, &unwritable).unwrap();
    // Before the fix it ran on, failing every pass: wait_exit fails it rather than hang.
    let mut refused = Running::start(&good, None);
    let status = refused.wait_exit();
    // The reader thread ends at the pipe's end, after the last line.
    let stderr: Vec<String> = refused.stderr.iter().collect();
    let stderr = stderr.join("\n");
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("output_dir")
            && stderr.contains(&blocker.join("out").display().to_string()),
        "the error names the field and the folder: {stderr}"
    );
    assert!(!scratch.status_path().exists());

    std::fs::write(&good, &good_text).unwrap();
    let notify = NotifySocket::bind(scratch.path());
    let mut running = Running::start(&good, Some(&notify.path));
    assert_eq!(first_line(&notify.next()), "READY=1");
    std::fs::write(&good, &unwritable).unwrap();
    running.signal(libc::SIGHUP);
    running.wait_for_line(&["output_dir", "cannot create"]);
    running.wait_for_line(&["refused", "the running config stays"]);
    let refused_at = chrono::Utc::now();
    wait_for_snapshot(&scratch, |s| {
        s.sections.systems.checked_at > Some(refused_at)
    });
    running.signal(libc::SIGTERM);
    assert!(running.wait_exit().success());
}

#[test]
fn sighup_with_a_good_config_restarts_the_parts_and_the_next_snapshot_has_the_new_agent() {
    let scratch = Scratch::new();
    // The work queue and the intake are part of what is restarted: the queue's writer must be
    // closed before the new one opens the same file, and the intake's port let go before it is
    // bound again.
    let intake_port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let common = format!(
        "[work_queue]\ndb = \"state/tasks.db\"\n\n[intake]\nlisten = \"127.0.0.1:{intake_port}\"\n\n"
    );
    let config = scratch.config(&format!(
        "[cadence]\nsystems = \"1s\"\nagents = \"1s\"\n\n{common}{LOCAL_HOST}"
    ));
    let notify = NotifySocket::bind(scratch.path());
    let mut running = Running::start(&config, Some(&notify.path));
    assert_eq!(first_line(&notify.next()), "READY=1");
    let before = wait_for_snapshot(&scratch, |_| true);
    assert!(
        !matches!(before.agents, Probe::Value(ref rows) if !rows.is_empty()),
        "no agent yet: {:?}",
        before.agents
    );

    let sim = Sim::healthy("added", Wire::V1);
    let audit = scratch.audit_log("added", 60.0);
    scratch.config(&format!(
        "[cadence]\nsystems = \"1s\"\nagents = \"1s\"\n\n{common}{LOCAL_HOST}{}",
        agent_toml("added", &sim.endpoint, "v1", &audit)
    ));
    running.signal(libc::SIGHUP);
    // RELOADING, then the old parts stop and the new ones start: READY once the new config's
    // first snapshot is written.
    let seen = notify.until("RELOADING=1");
    assert!(
        seen[..seen.len() - 1].iter().all(|m| m == "WATCHDOG=1"),
        "{seen:?}"
    );
    assert!(seen.last().unwrap().contains("MONOTONIC_USEC="), "{seen:?}");
    let seen = notify.until("READY=1");
    assert!(
        seen[..seen.len() - 1].iter().all(|m| m == "WATCHDOG=1"),
        "{seen:?}"
    );
    running.wait_for_line(&["reloaded"]);

    let after = wait_for_snapshot(
        &scratch,
        |s| matches!(s.agents, Probe::Value(ref rows) if rows.iter().any(|r| r.name == "added")),
    );
    assert!(after.generated_at > before.generated_at);
    // The intake listens again on its port, in the new generation.
    std::net::TcpStream::connect(("127.0.0.1", intake_port))
        .expect("the intake is listening again after the reload");

    running.signal(libc::SIGTERM);
    notify.until("STOPPING=1");
    assert!(running.wait_exit().success());
}

/// Every packaged unit passes `systemd-analyze verify` without a word: it exits 0 even for an
/// unknown key or a bad value (it says "ignoring"), so any output fails the test too. verify
/// needs the ExecStart binary to exist: the unit is checked as written, with /usr/bin/fleetdash
/// pointed at the binary under test (scripts/test-package verifies the installed units as
/// they are).
#[test]
fn the_packaged_units_pass_systemd_analyze_verify() {
    let analyze = Path::new("/usr/bin/systemd-analyze");
    assert!(
        analyze.exists(),
        "systemd-analyze is missing: apt-get install systemd (scripts/test installs it)"
    );
    let dir = tempfile::tempdir().unwrap();
    let units = support::repo_root().join("packaging");
    let mut checked = 0;
    for entry in std::fs::read_dir(&units).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("service") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.contains("ExecStart=/usr/bin/fleetdash "),
            "{}",
            path.display()
        );
        let copy = dir.path().join(path.file_name().unwrap());
        std::fs::write(
            &copy,
            text.replace(
                "/usr/bin/fleetdash ",
                &format!("{} ", env!("CARGO_BIN_EXE_fleetdash")),
            ),
        )
        .unwrap();
        let out = std::process::Command::new(analyze)
            .arg("verify")
            .arg(&copy)
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stderr).to_string()
            + &String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && said.trim().is_empty(),
            "{}: systemd-analyze verify: {said}",
            path.display()
        );
        checked += 1;
    }
    assert_eq!(checked, 2, "fleetdash.service and fleetdash-serve.service");
}

/// The package's nginx site is nginx/fleetdash.conf with the package's paths, as
/// scripts/package-nginx-site writes it.
#[test]
fn the_packaged_nginx_site_is_the_repository_site_substituted() {
    let root = support::repo_root();
    let out = std::process::Command::new(root.join("scripts/package-nginx-site"))
        .arg("--stdout")
        .output()
        .unwrap();
    support::assert_success(&out);
    let committed = std::fs::read(root.join("packaging/nginx-site.conf")).unwrap();
    assert!(
        out.stdout == committed,
        "packaging/nginx-site.conf is not nginx/fleetdash.conf substituted: run \
         scripts/package-nginx-site and commit the result"
    );
    assert!(!String::from_utf8_lossy(&committed).contains("{{"));
}

/// The packaged starting config passes `fleetdash check` beside the shipped rules file, as it
/// is installed (/etc/fleetdash/fleetdash.toml beside rules.yaml).
#[test]
fn the_packaged_config_passes_check_beside_the_shipped_rules() {
    let root = support::repo_root();
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        root.join("packaging/fleetdash.toml"),
        dir.path().join("fleetdash.toml"),
    )
    .unwrap();
    std::fs::copy(
        root.join("config/rules.yaml"),
        dir.path().join("rules.yaml"),
    )
    .unwrap();
    let out = support::fleetdash()
        .args(["check", "--config"])
        .arg(dir.path().join("fleetdash.toml"))
        .output()
        .unwrap();
    support::assert_success(&out);
}

fn write_htpasswd(path: &Path, user: &str, password: &str) {
    let hash = bcrypt::hash_with_result(password, 5)
        .unwrap()
        .format_for_version(bcrypt::Version::TwoY);
    std::fs::write(path, format!("{user}:{hash}\n")).unwrap();
}

/// The status of `GET /api/status.json` as `user:password`.
fn status_as(addr: &str, user: &str, password: &str) -> u16 {
    use base64::Engine;
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(HANG_BUDGET)).unwrap();
    let credentials =
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    write!(
        stream,
        "GET /api/status.json HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Basic {credentials}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP answer: {answer:?}"))
}

/// `fleetdash serve` rereads its config and htpasswd on SIGHUP, on the same listening socket:
/// a new password works and the old one no longer does; an htpasswd that is not bcrypt is
/// refused with its error logged, and the running one goes on.
#[test]
fn serve_rereads_its_htpasswd_on_sighup_and_refuses_a_broken_one() {
    let scratch = Scratch::new();
    let htpasswd = scratch.path().join("htpasswd");
    write_htpasswd(&htpasswd, "young", "first password");
    let config = scratch.config("[serve]\nhtpasswd = \"htpasswd\"\n");
    let mut child = support::fleetdash()
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(&config)
        .env("FLEETDASH_LOG", "info")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, stderr) = mpsc::channel();
    let pipe = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines().map_while(Result::ok) {
            eprintln!("fleetdash: {line}");
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut running = Running { child, stderr };
    let line = running.wait_for_line(&["serving on http://"]);
    let addr = line
        .split("serving on http://")
        .nth(1)
        .unwrap()
        .trim_end_matches('/')
        .to_string();
    // Authenticated: whatever the snapshot's state (none was written: 503), not 401.
    assert_ne!(status_as(&addr, "young", "first password"), 401);
    assert_eq!(status_as(&addr, "young", "second password"), 401);

    write_htpasswd(&htpasswd, "young", "second password");
    running.signal(libc::SIGHUP);
    running.wait_for_line(&["reloaded"]);
    assert_ne!(status_as(&addr, "young", "second password"), 401);
    assert_eq!(status_as(&addr, "young", "first password"), 401);

    // Not bcrypt: refused, and the second password still opens the page.
    std::fs::write(&htpasswd, "young:plaintext\n").unwrap();
    running.signal(libc::SIGHUP);
    running.wait_for_line(&["refused", "the running config stays"]);
    assert_ne!(status_as(&addr, "young", "second password"), 401);

    running.signal(libc::SIGTERM);
    assert!(running.wait_exit().success());
}

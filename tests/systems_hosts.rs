//! The systems collector's three host sources against real parts on loopback: this machine read
//! directly, a real Prometheus node_exporter (and a hostile imitation of one), and a real sshd
//! logged into with a fresh key. Every source must read the same machine the same way, and
//! every failure must land in the row as a reason with its code.
//!
//! The binaries come from Debian's prometheus-node-exporter and openssh-server packages, which
//! scripts/test installs; a missing one fails the test saying so, never skips it.

use crate::support;

use std::fs::File;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use fleetdash::collect::systems::cron::{self, Evidence, Record};
use fleetdash::collect::systems::local::LocalSource;
use fleetdash::collect::systems::node_exporter::{
    CRON_LAST_EXIT_CODE, CRON_LAST_FINISH, CRON_LAST_START, CRON_LAST_SUCCESS, NodeExporterSource,
};
use fleetdash::collect::systems::prom_text::{self, render_sample};
use fleetdash::collect::systems::ssh::SshSource;
use fleetdash::collect::systems::{FactSource, HostFacts, SystemsCollector, UnitState, judge};
use fleetdash::config::{
    Config, CronConfig, CronEvidence, HostConfig, HostSource, ProbeLimits, SshTarget,
    VaultParityConfig,
};
use fleetdash::net::{ProbeClient, ProbeFailure};
use fleetdash_model::{Asc, Band, CronState, Probe, System};
use support::procs::{ProcInfo, proc_info, processes};
use support::{assert_success, git};

const COMMAND_TIMEOUT: Duration = Duration::from_secs(10);
const NODE_EXPORTER: &str = "/usr/bin/prometheus-node-exporter";
const SSHD: &str = "/usr/sbin/sshd";

fn limits() -> ProbeLimits {
    ProbeLimits {
        timeout: Duration::from_secs(5),
        concurrency: 4,
        max_response_bytes: 1024 * 1024,
        audit_tail_max_bytes: 64 * 1024,
        command_timeout: COMMAND_TIMEOUT,
    }
}

/// Fails loudly when a binary the test drives is not installed.
fn require(path: &str) -> &str {
    assert!(
        Path::new(path).exists(),
        "{path} is missing: run scripts/test, which installs prometheus-node-exporter, \
         openssh-server, openssh-client and git"
    );
    path
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A child process killed and reaped when the test ends, however it ends.
struct Proc {
    child: Child,
    log: PathBuf,
}

impl Proc {
    fn spawn(cmd: &mut Command, log: PathBuf) -> Proc {
        let out = File::create(&log).unwrap();
        let child = cmd
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
        Proc { child, log }
    }

    /// Waits until `ready` holds, failing with the process's log if it exits or takes too long.
    fn wait_until(&mut self, what: &str, mut ready: impl FnMut() -> bool) {
        let deadline = Instant::now() + support::HANG_BUDGET;
        while !ready() {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("{what} exited ({status}): {}", self.log_text());
            }
            assert!(
                Instant::now() < deadline,
                "{what} not ready within {:?}: {}",
                support::HANG_BUDGET,
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `/proc/meminfo`'s MemTotal in bytes, read here independently of the code under test.
fn meminfo_total_bytes() -> u64 {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap();
    let line = text.lines().find(|l| l.starts_with("MemTotal:")).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

/// `df -Pk PATH`'s Available column in bytes.
fn df_available_bytes(path: &str) -> u64 {
    let out = Command::new("df").args(["-Pk", path]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let line = text.lines().nth(1).unwrap();
    let kib: u64 = line.split_whitespace().nth(3).unwrap().parse().unwrap();
    kib * 1024
}

/// `df` taken before the read; [`DiskWindow::assert_holds`] takes it again after.
struct DiskWindow {
    path: &'static str,
    before: u64,
}

impl DiskWindow {
    fn open(path: &'static str) -> DiskWindow {
        DiskWindow {
            path,
            before: df_available_bytes(path),
        }
    }

    /// The value read lies between df before and after the read, give or take 256 MiB: free
    /// space moves while builds run on the same disk, and a linked test binary is large.
    fn assert_holds(&self, got: u64) {
        let after = df_available_bytes(self.path);
        let slack = 256 * 1024 * 1024;
        let low = self.before.min(after).saturating_sub(slack);
        let high = self.before.max(after) + slack;
        assert!(
            (low..=high).contains(&got),
            "disk free {got} for {} outside df's {} (before) .. {after} (after)",
            self.path,
            self.before
        );
    }
}

fn cron_cfg(name: &str, evidence: CronEvidence) -> CronConfig {
    CronConfig {
        name: name.into(),
        period: Duration::from_secs(3600),
        grace: Duration::from_secs(600),
        evidence,
    }
}

fn host(name: &str, source: HostSource) -> HostConfig {
    HostConfig {
        name: name.into(),
        source,
        disk_path: "/".into(),
        services: Vec::new(),
        tunnels: Vec::new(),
        crons: Vec::new(),
        cron_dir: None,
        vault: None,
    }
}

fn secs_ago(s: i64) -> DateTime<Utc> {
    // Whole seconds: node_exporter's metrics and `stat -c %Y` carry no more.
    DateTime::from_timestamp(Utc::now().timestamp() - s, 0).unwrap()
}

/// A finished, successful run of `name` ten minutes ago, as `fleetdash cron-run` records it.
fn good_record(name: &str) -> Record {
    let start = secs_ago(600);
    let finish = secs_ago(540);
    Record {
        name: name.into(),
        last_start: Some(start),
        last_finish: Some(finish),
        last_exit_code: Some(0),
        last_duration_ms: Some(60_000),
        last_success: Some(finish),
    }
}

fn write_record(dir: &Path, record: &Record) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        cron::record_path(dir, &record.name),
        serde_json::to_vec(record).unwrap(),
    )
    .unwrap();
}

fn evidence_of(record: &Record) -> Evidence {
    Evidence {
        last_success: record.last_success,
        last_start: record.last_start,
        last_finish: record.last_finish,
        last_exit_code: record.last_exit_code,
    }
}

/// Whether systemd runs this machine (its own test, `sd_booted`): the service checks must say
/// why they cannot answer when it does not.
fn systemd_booted() -> bool {
    Path::new("/run/systemd/system").is_dir()
}

fn assert_services_say_no_systemd(services: &[Result<UnitState, ProbeFailure>]) {
    assert!(!services.is_empty());
    for s in services {
        if systemd_booted() {
            // A real systemd answers; any answer will do, a failure must still have a reason.
            if let Err(e) = s {
                assert!(!e.reason.is_empty());
            }
            continue;
        }
        let e = s.as_ref().expect_err("no systemd, no answer");
        assert_eq!(e.asc, Asc::FAILED_PRECONDITION, "{e:?}");
        assert!(
            e.reason.contains("systemd is not running on this host")
                && e.reason.contains("System has not been booted with systemd"),
            "{}",
            e.reason
        );
    }
}

/// A bare remote and a vault cloned from it, in sync after one pushed commit.
fn vault_in_sync(dir: &Path) -> VaultParityConfig {
    VaultParityConfig {
        path: git::vault_in_sync(dir).to_string_lossy().into_owned(),
        remote: Some("origin".into()),
        branch: Some("main".into()),
    }
}

fn judged(host: &HostConfig, facts: HostFacts) -> System {
    let now = Utc::now();
    judge(host, facts, now, &fleetdash::clock::Clocked::wall_only(now))
}

/// Every fact failed with the same reason and code: the host as a whole was not read.
fn assert_unreachable(facts: &HostFacts, asc: &Asc, needle: &str) -> String {
    let ram = facts.ram.as_ref().expect_err("RAM must fail");
    assert_eq!(&ram.asc, asc, "{ram:?}");
    assert!(ram.reason.contains(needle), "{}", ram.reason);
    assert_eq!(facts.disk_free_bytes.as_ref().unwrap_err(), ram);
    for s in &facts.services {
        assert_eq!(s.as_ref().unwrap_err(), ram);
    }
    for c in &facts.crons {
        assert_eq!(c.as_ref().unwrap_err(), ram);
    }
    if let Some(v) = &facts.vault {
        assert_eq!(v.as_ref().unwrap_err(), ram);
    }
    ram.reason.clone()
}

fn assert_red_row(row: &System, asc: &Asc, needle: &str) {
    assert_eq!(row.band, Band::Red, "{row:?}");
    assert_eq!(&row.status, asc, "{row:?}");
    assert!(row.stale, "{row:?}");
    let reason = row.reason.as_deref().unwrap_or_default();
    assert!(reason.contains(needle), "{reason}");
    assert!(
        row.ram_total_gb
            .error_reason()
            .is_some_and(|r| r.contains(needle)),
        "{:?}",
        row.ram_total_gb
    );
}

/// The host was not read (`assert_unreachable`), and its row is red and stale with that reason.
fn assert_unread_host(host: &HostConfig, facts: HostFacts, asc: &Asc, needle: &str) {
    let reason = assert_unreachable(&facts, asc, needle);
    assert_red_row(&judged(host, facts), asc, &reason);
}

fn gb(bytes: u64) -> f64 {
    (bytes as f64 / 1e9 * 100.0).round() / 100.0
}

// ---------------------------------------------------------------------------------------------
// Local

#[tokio::test]
async fn local_source_reads_this_machine() {
    let dir = tempfile::tempdir().unwrap();
    let crons = dir.path().join("crons");
    let backup = good_record("backup");
    write_record(&crons, &backup);
    let stamp = dir.path().join("sync.stamp");
    std::fs::write(&stamp, "").unwrap();
    let stamp_mtime: DateTime<Utc> = std::fs::metadata(&stamp)
        .unwrap()
        .modified()
        .unwrap()
        .into();

    let mut h = host("here", HostSource::Local);
    h.services = vec!["nginx".into(), "ssh.service".into()];
    h.crons = vec![
        cron_cfg("backup", CronEvidence::Record),
        cron_cfg("sync", CronEvidence::Stamp(stamp.to_string_lossy().into())),
        cron_cfg("never", CronEvidence::Record),
    ];
    h.cron_dir = Some(crons.to_string_lossy().into());
    h.vault = Some(vault_in_sync(dir.path()));

    let disk = DiskWindow::open("/");
    let facts = LocalSource::new(&limits()).read(&h).await;

    let ram = facts.ram.clone().unwrap();
    let total = meminfo_total_bytes();
    assert!(
        ram.total_bytes.abs_diff(total) <= total / 20,
        "RAM total {} vs MemTotal {total}",
        ram.total_bytes
    );
    assert!(
        ram.used_bytes > 0 && ram.used_bytes < ram.total_bytes,
        "{ram:?}"
    );
    disk.assert_holds(facts.disk_free_bytes.clone().unwrap());
    assert_eq!(facts.services.len(), 2);
    assert_services_say_no_systemd(&facts.services);
    assert_eq!(facts.crons[0], Ok(evidence_of(&backup)));
    assert_eq!(
        facts.crons[1].clone().unwrap().last_success,
        Some(stamp_mtime)
    );
    assert_eq!(facts.crons[2], Ok(Evidence::default()), "never checked in");
    let parity = facts.vault.clone().unwrap().unwrap();
    assert!(parity.in_sync(), "{parity:?}");

    let row = judged(&h, facts);
    assert_eq!(row.source, "local");
    assert_eq!(row.ram_total_gb, Probe::Value(gb(ram.total_bytes)));
    assert_eq!(row.vault_parity, Probe::Value(true));
    assert_eq!(row.crons[0].state, CronState::Up, "{:?}", row.crons[0]);
    assert_eq!(row.crons[1].state, CronState::Up, "{:?}", row.crons[1]);
    assert_eq!(row.crons[2].state, CronState::Down, "{:?}", row.crons[2]);
    assert_eq!(row.band, Band::Red, "a never-run cron and unknown services");
    if !systemd_booted() {
        let reason = row.reason.clone().unwrap();
        assert!(
            reason.contains("service nginx: systemd is not running on this host"),
            "{reason}"
        );
        assert!(row.services.iter().all(|s| s.stale && s.ok.is_error()));
    }
}

#[tokio::test]
async fn local_disk_path_that_does_not_exist_fails_alone() {
    let mut h = host("here", HostSource::Local);
    h.disk_path = "/nonexistent/fleetdash-test".into();
    let facts = LocalSource::new(&limits()).read(&h).await;
    let e = facts.disk_free_bytes.clone().unwrap_err();
    assert_eq!(e.asc, Asc::NOT_FOUND);
    assert_eq!(
        e.reason,
        "statvfs /nonexistent/fleetdash-test: No such file or directory (os error 2)"
    );
    assert!(facts.ram.is_ok(), "the RAM is still read");
    let row = judged(&h, facts);
    assert_eq!(row.band, Band::Red);
    assert!(!row.stale, "one fact failed, not the host");
    assert!(
        row.reason
            .unwrap()
            .starts_with("disk: statvfs /nonexistent/fleetdash-test")
    );
}

// ---------------------------------------------------------------------------------------------
// node_exporter

struct Exporter {
    proc: Proc,
    url: url::Url,
    textfiles: tempfile::TempDir,
}

impl Exporter {
    /// The real node_exporter on a free loopback port, its textfile collector on a temp folder.
    /// Its systemd collector is off: without systemd it only fails and logs every scrape.
    async fn start() -> Exporter {
        let bin = require(NODE_EXPORTER);
        let textfiles = tempfile::tempdir().unwrap();
        let port = free_port();
        let mut proc = Proc::spawn(
            Command::new(bin)
                .arg(format!("--web.listen-address=127.0.0.1:{port}"))
                .arg(format!(
                    "--collector.textfile.directory={}",
                    textfiles.path().display()
                ))
                .arg("--no-collector.systemd"),
            textfiles.path().join("node_exporter.log"),
        );
        proc.wait_until("node_exporter", || {
            TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        let url: url::Url = format!("http://127.0.0.1:{port}/metrics").parse().unwrap();
        let exporter = Exporter {
            proc,
            url,
            textfiles,
        };
        let reply = exporter.get().await;
        assert_eq!(reply.status, 200, "{}", exporter.proc.log_text());
        exporter
    }

    async fn get(&self) -> fleetdash::net::HttpReply {
        client().get(self.url.clone(), None).await.unwrap()
    }

    /// What `fleetdash cron-run --textfile-dir` leaves: one .prom file per job, renamed into
    /// place so the exporter never reads half of it.
    fn write_cron(&self, record: &Record) {
        let label = [("cron", record.name.as_str())];
        let secs = |t: Option<DateTime<Utc>>| t.map(|t| t.timestamp() as f64);
        let mut text = String::new();
        for (name, value) in [
            (CRON_LAST_START, secs(record.last_start)),
            (CRON_LAST_FINISH, secs(record.last_finish)),
            (CRON_LAST_SUCCESS, secs(record.last_success)),
            (CRON_LAST_EXIT_CODE, record.last_exit_code.map(f64::from)),
        ] {
            if let Some(v) = value {
                text.push_str(&format!("# TYPE {name} gauge\n"));
                text.push_str(&render_sample(name, &label, v));
                text.push('\n');
            }
        }
        let tmp = self.textfiles.path().join(format!(".{}.tmp", record.name));
        std::fs::write(&tmp, text).unwrap();
        std::fs::rename(
            &tmp,
            self.textfiles
                .path()
                .join(format!("fleetdash_cron_{}.prom", record.name)),
        )
        .unwrap();
    }
}

fn client() -> ProbeClient {
    let l = limits();
    ProbeClient::new(l.timeout, l.max_response_bytes)
}

#[tokio::test]
async fn node_exporter_facts_match_this_machine() {
    let exporter = Exporter::start().await;
    let backup = good_record("backup");
    exporter.write_cron(&backup);
    let failing = Record {
        name: "failing".into(),
        last_exit_code: Some(2),
        last_success: Some(secs_ago(3 * 3600)),
        ..good_record("failing")
    };
    exporter.write_cron(&failing);

    // The real exposition, every line of it, is understood.
    let body = String::from_utf8(exporter.get().await.body).unwrap();
    let expo = prom_text::parse(&body);
    assert_eq!(expo.unparseable, 0, "{:?}", expo.first_error);
    assert!(expo.samples.len() > 200, "{} samples", expo.samples.len());

    let mut h = host(
        "exporter",
        HostSource::NodeExporter {
            url: exporter.url.clone(),
        },
    );
    h.services = vec!["nginx".into()];
    h.crons = vec![
        cron_cfg("backup", CronEvidence::Record),
        cron_cfg("failing", CronEvidence::Record),
        cron_cfg("never", CronEvidence::Record),
        cron_cfg("stamped", CronEvidence::Stamp("/tmp/x.stamp".into())),
    ];
    let disk = DiskWindow::open("/");
    let facts = NodeExporterSource::new(exporter.url.clone(), client())
        .read(&h)
        .await;

    // node_exporter reads the same /proc/meminfo.
    let ram = facts.ram.clone().unwrap();
    assert_eq!(ram.total_bytes, meminfo_total_bytes());
    assert!(ram.used_bytes > 0 && ram.used_bytes < ram.total_bytes);
    disk.assert_holds(facts.disk_free_bytes.clone().unwrap());
    let svc = facts.services[0].clone().unwrap_err();
    assert_eq!(svc.asc, Asc::FAILED_PRECONDITION);
    assert_eq!(
        svc.reason,
        "node_systemd_unit_state missing: start node_exporter with --collector.systemd"
    );
    assert_eq!(facts.crons[0], Ok(evidence_of(&backup)));
    assert_eq!(facts.crons[1], Ok(evidence_of(&failing)));
    assert_eq!(facts.crons[2], Ok(Evidence::default()));
    let stamped = facts.crons[3].clone().unwrap_err();
    assert_eq!(stamped.asc, Asc::FAILED_PRECONDITION);
    assert_eq!(stamped.reason, "stamp files need a local or ssh host");

    let row = judged(&h, facts);
    assert_eq!(row.source, "node_exporter");
    assert_eq!(row.ram_total_gb, Probe::Value(gb(meminfo_total_bytes())));
    let states: Vec<CronState> = row.crons.iter().map(|c| c.state).collect();
    assert_eq!(
        states,
        [
            CronState::Up,
            CronState::Down,
            CronState::Down,
            CronState::Down
        ]
    );
    assert_eq!(row.band, Band::Red);
    assert!(!row.stale, "the exporter answered");
    assert!(
        row.reason
            .unwrap()
            .contains("service nginx: node_systemd_unit_state missing")
    );
}

/// An exporter that answers badly: every failure is a reason in the row, never a panic.
#[tokio::test]
async fn hostile_exporter_answers_become_reasons() {
    use axum::Router;
    use axum::http::StatusCode;
    use axum::routing::get;

    let huge: String = (0..100_000)
        .map(|i| format!("padding_metric{{i=\"{i}\"}} {i}\n"))
        .collect();
    let app = Router::new()
        .route(
            "/garbage",
            get(|| async { "<html><body>Welcome to nginx!</body></html>\n" }),
        )
        .route(
            "/partial",
            get(|| async { "node_memory_MemTotal_bytes 8e9\n}}} not a sample {{{\n" }),
        )
        .route("/huge", get(move || async move { huge }))
        .route(
            "/fail",
            get(|| async { (StatusCode::INTERNAL_SERVER_ERROR, "oops") }),
        )
        .route(
            "/denied",
            get(|| async { (StatusCode::UNAUTHORIZED, "who are you") }),
        )
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(30)).await;
                "node_memory_MemTotal_bytes 1\n"
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let closed = free_port();

    let client = ProbeClient::new(Duration::from_secs(1), 64 * 1024);
    let read = |path: String| {
        let client = client.clone();
        async move {
            let url: url::Url = path.parse().unwrap();
            let mut h = host("hostile", HostSource::NodeExporter { url: url.clone() });
            h.services = vec!["nginx".into()];
            h.crons = vec![cron_cfg("backup", CronEvidence::Record)];
            let facts = NodeExporterSource::new(url, client).read(&h).await;
            (h, facts)
        }
    };
    let at = |p: &str| format!("http://{addr}{p}");

    let (h, f) = read(at("/garbage")).await;
    assert_unread_host(
        &h,
        f,
        &Asc::INTEGRITY_CHECK_FAILED,
        "node_exporter reply holds no Prometheus samples: 1 unparseable line (line 1:",
    );

    // Some samples parse: each fact fails on its own, naming its metric and the skipped line.
    let (h, f) = read(at("/partial")).await;
    let ram = f.ram.clone().unwrap_err();
    assert!(
        ram.reason.starts_with(
            "node_memory_MemAvailable_bytes missing: start node_exporter with --collector.meminfo \
             (the reply had 1 unparseable line (line 2:"
        ),
        "{}",
        ram.reason
    );
    let disk = f.disk_free_bytes.clone().unwrap_err();
    assert!(
        disk.reason.starts_with(
            "node_filesystem_avail_bytes missing: start node_exporter with --collector.filesystem"
        ),
        "{}",
        disk.reason
    );
    let cron = f.crons[0].clone().unwrap_err();
    assert!(
        cron.reason.contains("textfile collector is off"),
        "{}",
        cron.reason
    );
    let row = judged(&h, f);
    assert_eq!(row.band, Band::Red);
    assert!(!row.stale, "the facts failed apart, the host answered");
    let reason = row.reason.unwrap();
    assert!(
        reason.contains("RAM: node_memory_MemAvailable_bytes missing"),
        "{reason}"
    );
    assert!(
        reason.contains("disk: node_filesystem_avail_bytes missing"),
        "{reason}"
    );

    let (h, f) = read(at("/huge")).await;
    assert_unread_host(
        &h,
        f,
        &Asc::INTEGRITY_CHECK_FAILED,
        "node_exporter: reply larger than 65536 bytes, refused",
    );

    let (h, f) = read(at("/fail")).await;
    assert_unreachable(
        &f,
        &Asc::DEPENDENCY_UNAVAILABLE,
        "node_exporter answered HTTP 500",
    );
    assert_red_row(
        &judged(&h, f),
        &Asc::DEPENDENCY_UNAVAILABLE,
        "node_exporter answered HTTP 500",
    );

    let (h, f) = read(at("/denied")).await;
    assert_unreachable(
        &f,
        &Asc::PERMISSION_DENIED,
        "node_exporter answered HTTP 401 (check the user:password in the url)",
    );
    assert_red_row(&judged(&h, f), &Asc::PERMISSION_DENIED, "HTTP 401");

    let (h, f) = read(at("/slow")).await;
    assert_unreachable(&f, &Asc::TIMEOUT, "node_exporter: no answer within 1s");
    assert_red_row(&judged(&h, f), &Asc::TIMEOUT, "no answer within 1s");

    let (h, f) = read(format!("http://127.0.0.1:{closed}/metrics")).await;
    assert_unreachable(
        &f,
        &Asc::DEPENDENCY_UNAVAILABLE,
        "node_exporter: connection refused",
    );
    assert_red_row(
        &judged(&h, f),
        &Asc::DEPENDENCY_UNAVAILABLE,
        "connection refused",
    );
}

// ---------------------------------------------------------------------------------------------
// ssh

/// A real sshd on a free loopback port with its own host key, accepting one fresh client key for
/// the user running the tests, and a known_hosts file naming its key.
struct Sshd {
    proc: Proc,
    dir: tempfile::TempDir,
    port: u16,
    user: String,
    key: PathBuf,
    known_hosts: PathBuf,
}

fn keygen(path: &Path) {
    let out = Command::new(require("/usr/bin/ssh-keygen"))
        .args([
            "-q",
            "-t",
            "ed25519",
            "-N",
            "",
            "-C",
            "fleetdash-test",
            "-f",
        ])
        .arg(path)
        .output()
        .unwrap();
    assert_success(&out);
}

/// The `type base64` part of a public key file.
fn public_key(path: &Path) -> String {
    let text = std::fs::read_to_string(path.with_extension("pub")).unwrap();
    let mut words = text.split_whitespace();
    format!("{} {}", words.next().unwrap(), words.next().unwrap())
}

impl Sshd {
    fn start() -> Sshd {
        let sshd = require(SSHD);
        require("/usr/bin/ssh");
        // The privilege-separation directory sshd insists on; the package creates it at boot.
        if !Path::new("/run/sshd").is_dir() {
            std::fs::create_dir_all("/run/sshd")
                .expect("sshd needs /run/sshd; run the tests as root (scripts/test does)");
        }
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let host_key = d.join("host_key");
        let key = d.join("client_key");
        keygen(&host_key);
        keygen(&key);
        std::fs::write(d.join("authorized_keys"), public_key(&key) + "\n").unwrap();
        let port = free_port();
        let config = format!(
            "Port {port}\n\
             ListenAddress 127.0.0.1\n\
             HostKey {host_key}\n\
             AuthorizedKeysFile {authorized}\n\
             PubkeyAuthentication yes\n\
             PasswordAuthentication no\n\
             KbdInteractiveAuthentication no\n\
             PermitRootLogin prohibit-password\n\
             UsePAM no\n\
             StrictModes no\n\
             PrintMotd no\n\
             PidFile {pid}\n",
            host_key = host_key.display(),
            authorized = d.join("authorized_keys").display(),
            pid = d.join("sshd.pid").display(),
        );
        std::fs::write(d.join("sshd_config"), config).unwrap();
        let mut proc = Proc::spawn(
            Command::new(sshd)
                .args(["-D", "-e", "-f"])
                .arg(d.join("sshd_config")),
            d.join("sshd.log"),
        );
        proc.wait_until("sshd", || TcpStream::connect(("127.0.0.1", port)).is_ok());
        let known_hosts = d.join("known_hosts");
        std::fs::write(
            &known_hosts,
            format!("[127.0.0.1]:{port} {}\n", public_key(&host_key)),
        )
        .unwrap();
        let out = Command::new("id").arg("-un").output().unwrap();
        let user = String::from_utf8(out.stdout).unwrap().trim().to_string();
        Sshd {
            proc,
            dir,
            port,
            user,
            key,
            known_hosts,
        }
    }

    fn target(&self) -> SshTarget {
        SshTarget {
            destination: format!("{}@127.0.0.1", self.user),
            port: Some(self.port),
            identity_file: Some(self.key.clone()),
            known_hosts: Some(self.known_hosts.clone()),
        }
    }

    fn host(&self, target: SshTarget) -> HostConfig {
        let mut h = host("over-ssh", HostSource::Ssh(target));
        h.services = vec!["nginx".into()];
        h.crons = vec![cron_cfg("backup", CronEvidence::Record)];
        h.cron_dir = Some(self.dir.path().join("crons").to_string_lossy().into());
        h.vault = Some(VaultParityConfig {
            path: "/nonexistent".into(),
            remote: Some("origin".into()),
            branch: None,
        });
        h
    }

    /// Connections sshd refused before authentication completed (one log line each).
    fn refused_connections(&self) -> usize {
        self.proc
            .log_text()
            .lines()
            .filter(|l| l.contains("[preauth]"))
            .count()
    }

    /// Asserts that exactly `n` connections were refused so far: a host that refuses us costs
    /// one attempt, not one per fact. sshd logs asynchronously, hence the short wait.
    fn assert_refused_connections(&self, n: usize) {
        let deadline = Instant::now() + support::HANG_BUDGET;
        while self.refused_connections() < n && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(self.refused_connections(), n, "{}", self.proc.log_text());
    }

    async fn read(&self, h: &HostConfig) -> HostFacts {
        let HostSource::Ssh(target) = &h.source else {
            unreachable!()
        };
        SshSource::new(target.clone(), &limits()).read(h).await
    }
}

/// Issue 44: `fleetdash init` writes a tunnel for an agent only where an SSH client holds its
/// loopback port. A real `ssh -N -L` to a real sshd is one; a port a local process serves
/// itself is not (the agents of a newcomer's trial, local processes, were each given a tunnel
/// to blame for their every fall).
#[test]
fn init_tells_an_ssh_forward_from_a_local_listener() {
    let sshd = Sshd::start();
    let forwarded = free_port();
    let mut ssh = Proc::spawn(
        Command::new("/usr/bin/ssh")
            .args([
                "-N",
                "-o",
                "BatchMode=yes",
                "-o",
                "StrictHostKeyChecking=yes",
            ])
            .arg("-o")
            .arg(format!("UserKnownHostsFile={}", sshd.known_hosts.display()))
            .arg("-i")
            .arg(&sshd.key)
            .args(["-p", &sshd.port.to_string()])
            .arg("-L")
            .arg(format!("127.0.0.1:{forwarded}:127.0.0.1:{}", sshd.port))
            .arg(format!("{}@127.0.0.1", sshd.user)),
        sshd.dir.path().join("ssh-forward.log"),
    );
    ssh.wait_until("ssh -L", || {
        TcpStream::connect(("127.0.0.1", forwarded)).is_ok()
    });
    assert!(fleetdash::init::discover::forwarded_by_ssh(forwarded));
    // sshd's own port: a listener, but not a client's forward.
    assert!(!fleetdash::init::discover::forwarded_by_ssh(sshd.port));
    let local = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = local.local_addr().unwrap().port();
    assert!(!fleetdash::init::discover::forwarded_by_ssh(port));
    drop(ssh);
    assert!(!fleetdash::init::discover::forwarded_by_ssh(forwarded));
}

#[tokio::test]
async fn ssh_facts_match_the_local_ones() {
    let sshd = Sshd::start();
    let work = tempfile::tempdir().unwrap();
    // A cron folder whose name the remote shell would mangle if it were not quoted.
    let crons = work.path().join("it's a \"dir\" $(id) `x`");
    let backup = good_record("backup");
    write_record(&crons, &backup);
    let stamp = work.path().join("sync.stamp");
    std::fs::write(&stamp, "").unwrap();
    let stamp_secs = std::fs::metadata(&stamp)
        .unwrap()
        .modified()
        .unwrap()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;

    let mut h = sshd.host(sshd.target());
    h.crons = vec![
        cron_cfg("backup", CronEvidence::Record),
        cron_cfg("sync", CronEvidence::Stamp(stamp.to_string_lossy().into())),
        cron_cfg("never", CronEvidence::Record),
        cron_cfg(
            "never-stamped",
            CronEvidence::Stamp(work.path().join("absent.stamp").to_string_lossy().into()),
        ),
    ];
    h.cron_dir = Some(crons.to_string_lossy().into());
    h.vault = Some(vault_in_sync(work.path()));

    let disk = DiskWindow::open("/");
    let facts = sshd.read(&h).await;

    // The same machine: the same MemTotal, the same disk.
    let ram = facts.ram.clone().unwrap_or_else(|e| {
        panic!("{e:?}\nsshd log: {}", sshd.proc.log_text());
    });
    assert_eq!(ram.total_bytes, meminfo_total_bytes());
    assert!(ram.used_bytes > 0 && ram.used_bytes < ram.total_bytes);
    disk.assert_holds(facts.disk_free_bytes.clone().unwrap());
    assert_services_say_no_systemd(&facts.services);
    let mut local = host("here", HostSource::Local);
    local.services = h.services.clone();
    let local_facts = LocalSource::new(&limits()).read(&local).await;
    assert_eq!(
        facts.services, local_facts.services,
        "systemctl says the same over ssh as here"
    );
    assert_eq!(facts.crons[0], Ok(evidence_of(&backup)));
    assert_eq!(
        facts.crons[1],
        Ok(cron::evidence_from_stamp(
            DateTime::from_timestamp(stamp_secs, 0).unwrap()
        ))
    );
    assert_eq!(facts.crons[2], Ok(Evidence::default()), "no record yet");
    assert_eq!(facts.crons[3], Ok(Evidence::default()), "no stamp yet");
    let parity = facts.vault.clone().unwrap().unwrap();
    assert!(parity.in_sync(), "{parity:?}");
    assert_eq!(parity.compared.as_ref().unwrap().branch, "main");

    let row = judged(&h, facts);
    assert_eq!(row.source, "ssh");
    assert_eq!(row.ram_total_gb, Probe::Value(gb(meminfo_total_bytes())));
    assert_eq!(row.vault_parity, Probe::Value(true));
    let states: Vec<CronState> = row.crons.iter().map(|c| c.state).collect();
    assert_eq!(
        states,
        [
            CronState::Up,
            CronState::Up,
            CronState::Down,
            CronState::Down
        ]
    );
    assert!(!row.stale);
}

#[tokio::test]
async fn ssh_refusals_are_named_with_their_codes() {
    let sshd = Sshd::start();
    let d = sshd.dir.path();

    // Someone else's key under this host's name: a possible man in the middle.
    let impostor = d.join("impostor_key");
    keygen(&impostor);
    let wrong = d.join("wrong_known_hosts");
    std::fs::write(
        &wrong,
        format!("[127.0.0.1]:{} {}\n", sshd.port, public_key(&impostor)),
    )
    .unwrap();
    let h = sshd.host(SshTarget {
        known_hosts: Some(wrong),
        ..sshd.target()
    });
    let f = sshd.read(&h).await;
    let reason = assert_unreachable(
        &f,
        &Asc::INTEGRITY_CHECK_FAILED,
        "Host key verification failed",
    );
    assert_eq!(
        reason,
        format!(
            "ssh {}@127.0.0.1: Host key verification failed: the host's key differs from the \
             one in known_hosts",
            sshd.user
        )
    );
    assert_red_row(
        &judged(&h, f),
        &Asc::INTEGRITY_CHECK_FAILED,
        "Host key verification failed",
    );
    sshd.assert_refused_connections(1);

    // No key known for the host at all: never accepted on first use.
    let empty = d.join("empty_known_hosts");
    std::fs::write(&empty, "").unwrap();
    let h = sshd.host(SshTarget {
        known_hosts: Some(empty),
        ..sshd.target()
    });
    let f = sshd.read(&h).await;
    assert_unread_host(
        &h,
        f,
        &Asc::INTEGRITY_CHECK_FAILED,
        "Host key verification failed: no key for this host in known_hosts",
    );
    sshd.assert_refused_connections(2);

    // A key the host does not know.
    let stranger = d.join("stranger_key");
    keygen(&stranger);
    let h = sshd.host(SshTarget {
        identity_file: Some(stranger),
        ..sshd.target()
    });
    let f = sshd.read(&h).await;
    let reason = assert_unreachable(&f, &Asc::PERMISSION_DENIED, "Permission denied (publickey)");
    assert_eq!(
        reason,
        format!(
            "ssh {}@127.0.0.1: Permission denied (publickey).",
            sshd.user
        )
    );
    assert_red_row(
        &judged(&h, f),
        &Asc::PERMISSION_DENIED,
        "Permission denied (publickey)",
    );
    sshd.assert_refused_connections(3);
}

#[tokio::test]
async fn ssh_to_a_closed_port_is_unreachable_at_once() {
    let closed = free_port();
    let mut h = host(
        "gone",
        HostSource::Ssh(SshTarget {
            destination: "nobody@127.0.0.1".into(),
            port: Some(closed),
            identity_file: None,
            known_hosts: None,
        }),
    );
    h.services = vec!["nginx".into()];
    h.crons = vec![cron_cfg("backup", CronEvidence::Record)];
    h.cron_dir = Some("/var/lib/fleetdash/crons".into());
    require("/usr/bin/ssh");
    let HostSource::Ssh(target) = &h.source else {
        unreachable!()
    };
    let f = SshSource::new(target.clone(), &limits()).read(&h).await;
    let reason = assert_unreachable(&f, &Asc::DEPENDENCY_UNAVAILABLE, "Connection refused");
    assert_eq!(
        reason,
        format!(
            "ssh nobody@127.0.0.1: connect to host 127.0.0.1 port {closed}: Connection refused"
        )
    );
    assert_red_row(
        &judged(&h, f),
        &Asc::DEPENDENCY_UNAVAILABLE,
        "Connection refused",
    );
}

// ---------------------------------------------------------------------------------------------
// The collector, from a config file

/// All three kinds of host in one config, read by the collector concurrently, in config order.
#[tokio::test]
async fn collector_reads_every_kind_of_host_from_config() {
    let exporter = Exporter::start().await;
    let sshd = Sshd::start();
    let work = tempfile::tempdir().unwrap();
    let crons = work.path().join("crons");
    write_record(&crons, &good_record("backup"));
    exporter.write_cron(&good_record("backup"));
    let vault = vault_in_sync(work.path());

    let text = format!(
        r#"output_dir = "o"
state_dir = "s"
rules = "r"

[probe]
timeout = "5s"
command_timeout = "10s"

[[hosts]]
name = "here"
source = "local"
cron_dir = {crons:?}
crons = [{{ name = "backup", period = "1h", grace = "10m" }}]

[[hosts]]
name = "exporter"
source = "node_exporter"
url = "{url}"
crons = [{{ name = "backup", period = "1h", grace = "10m" }}]

[[hosts]]
name = "over-ssh"
source = "ssh"
ssh = {{ destination = "{user}@127.0.0.1", port = {port}, identity_file = {key:?}, known_hosts = {known:?} }}
cron_dir = {crons:?}
vault = {{ path = {vault:?}, remote = "origin", branch = "main" }}
crons = [{{ name = "backup", period = "1h", grace = "10m" }}]
"#,
        crons = crons.to_string_lossy(),
        url = exporter.url,
        user = sshd.user,
        port = sshd.port,
        key = sshd.key.to_string_lossy(),
        known = sshd.known_hosts.to_string_lossy(),
        vault = vault.path,
    );
    let config = Config::parse(&work.path().join("fleetdash.toml"), &text).unwrap();
    let rows = SystemsCollector::new(&config)
        .probe_all(&support::clock())
        .await;

    let names: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r.host.as_str(), r.source.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            ("here", "local"),
            ("exporter", "node_exporter"),
            ("over-ssh", "ssh")
        ]
    );
    for row in &rows {
        assert_eq!(row.band, Band::Green, "{row:?}");
        assert_eq!(row.status, Asc::SUCCESS, "{row:?}");
        assert_eq!(row.reason, None);
        assert_eq!(
            row.ram_total_gb,
            Probe::Value(gb(meminfo_total_bytes())),
            "{}",
            row.host
        );
        assert!(matches!(row.disk_free_gb, Probe::Value(v) if v > 0.0));
        assert_eq!(row.crons.len(), 1);
        assert_eq!(row.crons[0].state, CronState::Up, "{row:?}");
    }
    assert_eq!(rows[0].vault_parity, Probe::Unknown);
    assert_eq!(rows[2].vault_parity, Probe::Value(true));
}

// ---------------------------------------------------------------------------------------------
// An agent's audit log on an ssh host (issue 43)

/// A `[[hosts]]` entry `name` reaching `target` over ssh.
fn ssh_host_toml(name: &str, target: &SshTarget) -> String {
    let path = |p: &Option<PathBuf>| p.as_ref().unwrap().to_string_lossy().into_owned();
    format!(
        "[[hosts]]\nname = {name:?}\nsource = \"ssh\"\nssh = {{ destination = {dest:?}, port = {port}, \
         identity_file = {key:?}, known_hosts = {known:?} }}\n\n",
        dest = target.destination,
        port = target.port.unwrap(),
        key = path(&target.identity_file),
        known = path(&target.known_hosts),
    )
}

/// An `[[agents]]` entry whose audit log is `path` on the host `host`.
fn remote_audit_agent_toml(name: &str, endpoint: &str, host: &str, path: &Path) -> String {
    format!(
        "[[agents]]\nname = {name:?}\nendpoint = {endpoint:?}\ndialect = \"v1\"\n\
         audit_host = {host:?}\naudit_log = {:?}\n\n",
        path.to_string_lossy()
    )
}

/// `fleetdash collect --only agents` of a config with `body`: the agents' rows by name, all of
/// status.json, and what the collect logged.
fn collect_agents(scratch: &support::Scratch, body: &str) -> (serde_json::Value, String, String) {
    let out = support::fleetdash()
        .args(["collect", "--only", "agents", "--config"])
        .arg(scratch.config(body))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_success(&out);
    let text = scratch.snapshot_text();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let rows = json["agents"]
        .as_array()
        .unwrap_or_else(|| panic!("no agent rows: {json:#}"))
        .iter()
        .map(|r| (r["name"].as_str().unwrap().to_string(), r.clone()))
        .collect();
    (
        rows,
        text,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The agent on another machine: its audit log is read through its host's ssh, the `.1`
/// rotation too, and only the exchange's age reaches status.json.
#[test]
fn an_agents_audit_log_is_read_over_its_hosts_ssh() {
    let sshd = Sshd::start();
    let scratch = support::Scratch::new();
    let sim = support::Sim::healthy("remote", fleetdash::a2a::Wire::V1);
    let remote = tempfile::tempdir().unwrap();
    // The agent's home on "the lab", with a name the remote shell must not read as shell.
    let home = remote.path().join("hermes home $(id)");
    std::fs::create_dir_all(&home).unwrap();
    let log = home.join("a2a_audit.jsonl");
    let now = Utc::now().timestamp() as f64;
    let secret_summary = "SUMMARY-sk-proj-NEVER-COPIED-0123456789abcdef";
    // The exchange is in the rotated file; the current one holds only the collector's own
    // probes and a rejection since.
    std::fs::write(
        home.join("a2a_audit.jsonl.1"),
        format!(
            "{}\n{}\n",
            serde_json::json!({"ts": now - 4000.0, "direction": "inbound", "peer": "old-peer"}),
            serde_json::json!({"ts": now - 600.0, "direction": "inbound", "peer": "peer-who-talked",
                "task_id": "t_remote_1", "summary": secret_summary, "ip": "10.9.8.7"}),
        ),
    )
    .unwrap();
    std::fs::write(
        &log,
        format!(
            "{}\n{}\n",
            serde_json::json!({"ts": now - 300.0, "direction": "inbound", "peer": "fleetdash",
                "summary": secret_summary}),
            serde_json::json!({"ts": now - 60.0, "direction": "inbound", "peer": "ip:10.9.8.7",
                "decision": "rejected_bad_token", "summary": secret_summary}),
        ),
    )
    .unwrap();

    let body = ssh_host_toml("lab", &sshd.target())
        + &remote_audit_agent_toml("remote", &sim.endpoint, "lab", &log);
    let (rows, text, stderr) = collect_agents(&scratch, &body);
    let row = &rows["remote"];
    let age = row["last_exchange_s"].as_u64().unwrap_or_else(|| {
        panic!(
            "last_exchange_s: {row:#}\nsshd log: {}",
            sshd.proc.log_text()
        )
    });
    // Read from the `.1`, past the collector's probe and the rejection; not from any other line.
    assert!(age >= 600, "{row:#}");
    assert_eq!(row["exchange_band"], "green", "{row:#}");
    assert_eq!(row["band"], "green", "{row:#}");
    assert_eq!(row["stale"], false, "{row:#}");
    assert_eq!(row["audit_skipped_lines"], 0, "{row:#}");
    // Nothing of the log but the age: no summary, peer, ip or decision.
    for leaked in [
        "NEVER-COPIED",
        "peer-who-talked",
        "old-peer",
        "10.9.8.7",
        "rejected_bad_token",
    ] {
        assert!(!text.contains(leaked), "{leaked} in status.json");
        assert!(!stderr.contains(leaked), "{leaked} logged: {stderr}");
    }
}

/// A configured remote log that cannot be read is red with the host and the path in its
/// reason: a missing file, a host whose ssh refuses, a host key that is not the host's.
#[test]
fn an_unreadable_remote_audit_log_is_an_error_naming_its_host() {
    let sshd = Sshd::start();
    let scratch = support::Scratch::new();
    let sim = support::Sim::healthy("remote", fleetdash::a2a::Wire::V1);
    let remote = tempfile::tempdir().unwrap();
    let missing = remote.path().join("nowhere/a2a_audit.jsonl");
    let closed = free_port();
    let refusing = SshTarget {
        port: Some(closed),
        ..sshd.target()
    };
    let impostor = sshd.dir.path().join("impostor_key");
    keygen(&impostor);
    let wrong_known_hosts = sshd.dir.path().join("wrong_known_hosts");
    std::fs::write(
        &wrong_known_hosts,
        format!("[127.0.0.1]:{} {}\n", sshd.port, public_key(&impostor)),
    )
    .unwrap();
    let impostor_target = SshTarget {
        known_hosts: Some(wrong_known_hosts),
        ..sshd.target()
    };
    let log = remote.path().join("a2a_audit.jsonl");
    std::fs::write(&log, format!("{}\n", serde_json::json!({"ts": 1.0}))).unwrap();

    let body = ssh_host_toml("lab", &sshd.target())
        + &ssh_host_toml("gone", &refusing)
        + &ssh_host_toml("spoofed", &impostor_target)
        + &remote_audit_agent_toml("missing", &sim.endpoint, "lab", &missing)
        + &remote_audit_agent_toml("refused", &sim.endpoint, "gone", &log)
        + &remote_audit_agent_toml("spoofed", &sim.endpoint, "spoofed", &log);
    let (rows, _, _) = collect_agents(&scratch, &body);
    let dest = format!("{}@127.0.0.1", sshd.user);
    let place = |path: &Path, host: &str| format!("audit log {} on {host}", path.display());
    for (name, code, reason) in [
        (
            "missing",
            4006,
            format!("{}: not found (nor its .1)", place(&missing, "lab")),
        ),
        (
            "refused",
            5003,
            format!(
                "{}: ssh {dest}: connect to host 127.0.0.1 port {closed}: Connection refused",
                place(&log, "gone")
            ),
        ),
        (
            "spoofed",
            7005,
            format!(
                "{}: ssh {dest}: Host key verification failed: the host's key differs from the \
                 one in known_hosts",
                place(&log, "spoofed")
            ),
        ),
    ] {
        let row = &rows[name];
        assert_eq!(
            row["last_exchange_s"],
            format!("error: {reason}"),
            "{name}: {row:#}"
        );
        assert_eq!(row["status"]["code"], code, "{name}: {row:#}");
        assert_eq!(
            (
                &row["band"],
                &row["exchange_band"],
                &row["stale"],
                &row["up"]
            ),
            (&"red".into(), &"red".into(), &true.into(), &true.into()),
            "{name}: a broken configured part is red, the agent itself up: {row:#}"
        );
        assert_eq!(row["reason"], reason, "{name}: {row:#}");
    }
}

// ---------------------------------------------------------------------------------------------
// Probes never prompt

/// Answers every HTTP request with 401 and a Basic challenge, as a git host does to a clone
/// without credentials.
fn http_401_server() -> u16 {
    use std::io::{Read, Write};
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut request = Vec::new();
            let mut buf = [0u8; 4096];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => request.extend_from_slice(&buf[..n]),
                }
            }
            let _ = stream.write_all(
                b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"vault\"\r\n\
                  Content-Length: 0\r\nConnection: close\r\n\r\n",
            );
        }
    });
    port
}

/// `fleetdash collect` run from a desktop session whose askpass programs would answer: git over
/// HTTP asking for a user name, and ssh (under git) asking to trust an unknown host key, must
/// fail with their own reasons and never run an askpass program.
#[test]
fn vault_probes_never_run_an_askpass_program() {
    let sshd = Sshd::start();
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let (http_dir, ssh_dir) = (w.join("http"), w.join("ssh"));
    std::fs::create_dir_all(&http_dir).unwrap();
    std::fs::create_dir_all(&ssh_dir).unwrap();
    let http_vault = vault_in_sync(&http_dir);
    let ssh_vault = vault_in_sync(&ssh_dir);
    let port = http_401_server();

    let marker = w.join("askpass-ran");
    let askpass = w.join("askpass.sh");
    std::fs::write(
        &askpass,
        format!(
            "#!/bin/sh\necho \"$*\" >> '{}'\necho no\n",
            marker.display()
        ),
    )
    .unwrap();
    let executable = std::os::unix::fs::PermissionsExt::from_mode(0o755);
    std::fs::set_permissions(&askpass, executable).unwrap();
    std::fs::write(w.join("rules.yaml"), include_str!("../config/rules.yaml")).unwrap();
    let config = w.join("fleetdash.toml");
    std::fs::write(
        &config,
        format!(
            r#"output_dir = "out"
state_dir = "state"
rules = "rules.yaml"

[probe]
command_timeout = "10s"

[[hosts]]
name = "git-http"
source = "local"
vault = {{ path = {http:?}, remote = "http://127.0.0.1:{port}/vault.git", branch = "main" }}

[[hosts]]
name = "git-ssh"
source = "local"
vault = {{ path = {ssh:?}, remote = "ssh://{user}@127.0.0.1:{sshd_port}/srv/vault.git", branch = "main" }}
"#,
            http = http_vault.path,
            ssh = ssh_vault.path,
            user = sshd.user,
            sshd_port = sshd.port,
        ),
    )
    .unwrap();

    // ssh's own file (it reads the account's home, not $HOME): not one entry more.
    let user_known_hosts = |home: &str| Path::new(home).join(".ssh/known_hosts");
    let home = String::from_utf8(
        Command::new("sh")
            .args(["-c", "getent passwd \"$(id -u)\" | cut -d: -f6"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let known_before = std::fs::read(user_known_hosts(home.trim())).ok();
    let out = Command::new(env!("CARGO_BIN_EXE_fleetdash"))
        .args(["collect", "--only", "systems", "--config"])
        .arg(&config)
        .env("FLEETDASH_LOG", "warn")
        .env("GIT_ASKPASS", &askpass)
        .env("SSH_ASKPASS", &askpass)
        .env("SSH_ASKPASS_REQUIRE", "force")
        .env("DISPLAY", ":0")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_success(&out);
    let asked = std::fs::read_to_string(&marker).unwrap_or_default();
    assert!(asked.is_empty(), "an askpass program was run for: {asked}");

    let snapshot: fleetdash_model::Snapshot =
        serde_json::from_slice(&std::fs::read(w.join("out/status.json")).unwrap()).unwrap();
    let Probe::Value(rows) = snapshot.systems else {
        panic!("{:?}", snapshot.systems)
    };
    let vault_reason = |name: &str| {
        let row = rows.iter().find(|r| r.host == name).unwrap();
        row.vault_parity
            .error_reason()
            .unwrap_or_else(|| panic!("{name}: {:?}", row.vault_parity))
            .to_string()
    };
    let http = vault_reason("git-http");
    assert!(http.contains("could not read Username"), "{http}");
    // Git's own last word; ssh's "Host key verification failed" comes before it.
    let ssh = vault_reason("git-ssh");
    assert!(
        ssh.contains("Could not read from remote repository"),
        "{ssh}"
    );
    assert_eq!(
        std::fs::read(user_known_hosts(home.trim())).ok(),
        known_before,
        "known_hosts was written"
    );
}

// ---------------------------------------------------------------------------------------------
// Commands: the deadline and the output ceiling

/// Live `sleep SECONDS` processes.
fn sleeps(seconds: &str) -> Vec<ProcInfo> {
    processes()
        .into_iter()
        .filter(|p| p.argv == ["sleep", seconds])
        .collect()
}

fn own_pgid() -> u32 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let (_, rest) = stat.rsplit_once(')').unwrap();
    rest.split_whitespace().nth(2).unwrap().parse().unwrap()
}

/// The pass holds at most `probe.concurrency` hosts at once (each host may start a dozen
/// processes), and still returns every row, in config order: five hung exporters with room for
/// two are answered two at a time, as the exporter's own count of open requests shows.
#[tokio::test]
async fn the_systems_pass_is_bounded_by_probe_concurrency() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

    #[derive(Default)]
    struct Gauge {
        now: AtomicUsize,
        peak: AtomicUsize,
        total: AtomicUsize,
    }
    struct Open(Arc<Gauge>);
    impl Drop for Open {
        fn drop(&mut self) {
            self.0.now.fetch_sub(1, SeqCst);
        }
    }
    let gauge = Arc::new(Gauge::default());
    let counted = gauge.clone();
    let app = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let gauge = counted.clone();
            async move {
                gauge.total.fetch_add(1, SeqCst);
                let now = gauge.now.fetch_add(1, SeqCst) + 1;
                gauge.peak.fetch_max(now, SeqCst);
                // Dropped when the probe gives up on the request.
                let _open = Open(gauge);
                std::future::pending::<String>().await
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });

    let hosts: String = (1..=5)
        .map(|i| {
            format!(
                "[[hosts]]\nname = \"h{i}\"\nsource = \"node_exporter\"\nurl = \"http://{addr}/metrics\"\n\n"
            )
        })
        .collect();
    let text = format!(
        "output_dir = \"o\"\nstate_dir = \"s\"\nrules = \"r\"\n\n[probe]\ntimeout = \"1s\"\nconcurrency = 2\n\n{hosts}"
    );
    let config = Config::parse(Path::new("fleetdash.toml"), &text).unwrap();
    let rows = SystemsCollector::new(&config)
        .probe_all(&support::clock())
        .await;

    let names: Vec<&str> = rows.iter().map(|r| r.host.as_str()).collect();
    assert_eq!(names, ["h1", "h2", "h3", "h4", "h5"]);
    for row in &rows {
        assert_eq!(row.band, Band::Red, "{row:?}");
        let reason = row.reason.as_deref().unwrap_or_default();
        assert!(
            reason.contains("no answer within 1s"),
            "{}: {reason}",
            row.host
        );
    }
    assert_eq!(
        (gauge.peak.load(SeqCst), gauge.total.load(SeqCst)),
        (2, 5),
        "(most hosts probed at once, hosts probed)"
    );
}

#[tokio::test]
async fn a_timeout_kills_the_commands_whole_process_group() {
    use fleetdash::collect::systems::command::run_argv;
    // The shell records, as it starts them, its own pid and each sleep's pid and process group
    // (/proc/PID/stat field 5): nothing here races the deadline by watching from outside.
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("group");
    let script = format!(
        "echo shell $$ > '{f}'; \
         sleep 173 & echo sleep $! $(cut -d' ' -f5 /proc/$!/stat) >> '{f}'; \
         sleep 173 & echo sleep $! $(cut -d' ' -f5 /proc/$!/stat) >> '{f}'; wait",
        f = record.display()
    );
    let argv: Vec<String> = vec!["sh".into(), "-c".into(), script];
    // Room for a loaded machine to start both sleeps before the deadline kills them.
    let timeout = Duration::from_secs(5);
    let err = run_argv(&argv, timeout).await.unwrap_err();
    assert_eq!(err.asc, Asc::TIMEOUT, "{err:?}");
    assert!(err.reason.contains("no answer within 5s"), "{}", err.reason);

    let lines: Vec<Vec<u32>> = std::fs::read_to_string(&record)
        .unwrap()
        .lines()
        .map(|l| l.split(' ').skip(1).map(|n| n.parse().unwrap()).collect())
        .collect();
    assert_eq!(
        lines.len(),
        3,
        "the shell and both sleeps started: {lines:?}"
    );
    let shell = lines[0][0];
    let sleeps_started: Vec<(u32, u32)> = lines[1..].iter().map(|l| (l[0], l[1])).collect();
    for &(_, group) in &sleeps_started {
        assert_eq!(group, shell, "the shell leads the sleeps' process group");
    }
    assert_ne!(
        shell,
        own_pgid(),
        "the command runs in a process group of its own"
    );
    // SIGKILL is delivered at once; give the kernel a moment to tear the processes down.
    let deadline = Instant::now() + support::HANG_BUDGET;
    for (pid, _) in sleeps_started {
        while proc_info(pid).is_some_and(|p| p.argv == ["sleep", "173"]) {
            assert!(
                Instant::now() < deadline,
                "sleep {pid} was left behind after the timeout"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

#[tokio::test]
async fn output_over_the_ceiling_is_refused_at_once_not_timed_out() {
    use fleetdash::collect::systems::command::{MAX_OUTPUT_BYTES, run_argv};
    for script in [
        "head -c 5000000 /dev/zero",
        "head -c 5000000 /dev/zero >&2",
        // Says too much, then would keep quiet for long: refused, not waited for.
        "head -c 5000000 /dev/zero; sleep 172",
    ] {
        let argv: Vec<String> = ["sh", "-c", script].map(String::from).to_vec();
        // Refused, not timed out: the ceiling acted before the deadline could.
        let err = run_argv(&argv, Duration::from_secs(5)).await.unwrap_err();
        assert_eq!(err.asc, Asc::RESOURCE_EXHAUSTED, "{script}: {err:?}");
        assert_eq!(
            err.reason,
            format!("sh: more than {MAX_OUTPUT_BYTES} bytes of output, refused"),
            "{script}"
        );
    }
    let deadline = Instant::now() + support::HANG_BUDGET;
    while !sleeps("172").is_empty() {
        assert!(
            Instant::now() < deadline,
            "left behind: {:?}",
            sleeps("172")
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

// ---------------------------------------------------------------------------------------------
// Glued secrets in what hosts answer (issue 21)

/// A git smart-HTTP answer that refuses with `message`: git prints it as
/// `fatal: remote error: MESSAGE`, which the vault probe quotes.
fn git_remote_error(message: &str) -> axum::response::Response {
    let pkt = |s: &str| format!("{:04x}{s}", s.len() + 4);
    let body = format!(
        "{}0000{}",
        pkt("# service=git-upload-pack\n"),
        pkt(&format!("ERR {message}\n"))
    );
    axum::response::Response::builder()
        .header(
            "content-type",
            "application/x-git-upload-pack-advertisement",
        )
        .body(body.into())
        .unwrap()
}

/// The vault probe's git messages: every glued secret, packed a few to a message short of any
/// cut; then one per shape across the reason's 300-character cut (git prints the message after
/// "fatal: remote error: ", 21 characters).
fn vault_messages() -> Vec<String> {
    use support::secrets::{glued_across_a_cut, glued_packed};
    [glued_packed(240), glued_across_a_cut(300, 21)].concat()
}

/// Hosts whose answers carry every glued secret, through `fleetdash collect`: a node_exporter
/// per glued secret answering it as a sample's value (quoted in the reason), and local hosts
/// whose vault remote refuses with them (git's message quoted in the reason, the cut ones
/// too). Nothing of them reaches any file the collect writes or its log.
#[test]
fn glued_secrets_in_host_answers_reach_no_file_and_no_log() {
    use axum::extract::Path as UrlPath;
    use axum::routing::get;
    use support::secrets::{GLUED, find_secret};

    let scratch = support::Scratch::new();
    let messages = vault_messages();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let served = messages.clone();
    let app = axum::Router::new()
        .route(
            "/m/{i}/metrics",
            get(|UrlPath(i): UrlPath<usize>| async move { format!("m {}\n", GLUED[i].value) }),
        )
        .route(
            "/v/{i}/info/refs",
            get(move |UrlPath(i): UrlPath<usize>| {
                let message = served[i].clone();
                async move { git_remote_error(&message) }
            }),
        );
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    runtime.spawn(async move { axum::serve(listener, app).await });
    let vault = git::vault_in_sync(scratch.path());

    let mut body = String::new();
    for i in 0..GLUED.len() {
        body += &format!(
            "[[hosts]]\nname = \"m{i}\"\nsource = \"node_exporter\"\nurl = \"http://{addr}/m/{i}/metrics\"\n\n"
        );
    }
    for i in 0..messages.len() {
        body += &format!(
            "[[hosts]]\nname = \"v{i}\"\nsource = \"local\"\n\
             vault = {{ path = {:?}, remote = \"http://{addr}/v/{i}\", branch = \"main\" }}\n\n",
            vault.display().to_string()
        );
    }
    let config = scratch.config(&body);
    let out = support::fleetdash()
        .args(["collect", "--config"])
        .arg(&config)
        .env("FLEETDASH_LOG", "debug")
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{log}");

    if let Some(found) = find_secret(&log) {
        panic!("{found} leaked into the log:\n{log}");
    }
    let written: Vec<PathBuf> = ["out", "state"]
        .iter()
        .flat_map(|d| support::files_under(&scratch.path().join(d)))
        .collect();
    assert!(written.len() >= 2, "{written:?}");
    for path in written {
        let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
        if let Some(found) = find_secret(&text) {
            panic!("{found} leaked into {}:\n{text}", path.display());
        }
    }

    // The answers were read and quoted, redacted: the test is not vacuous. (The exposition
    // format splits a sample at whitespace, so of a header only its first word is quoted.)
    let json: serde_json::Value = serde_json::from_str(&scratch.snapshot_text()).unwrap();
    let row = |name: &str| -> serde_json::Value {
        json["systems"]
            .as_array()
            .and_then(|rows| rows.iter().find(|r| r["host"] == name))
            .cloned()
            .unwrap_or_else(|| panic!("no row {name}: {:#}", json["systems"]))
    };
    for i in 0..GLUED.len() {
        let reason = row(&format!("m{i}"))["reason"].to_string();
        assert!(
            reason.contains("is not a number")
                && (reason.contains("[redacted]") || !GLUED[i].is_word()),
            "m{i}: {reason}"
        );
    }
    // (Credentials in a URL are stripped by the vault probe itself, before the gate.)
    for i in 0..messages.len() {
        let r = row(&format!("v{i}"));
        let reason = r["vault_parity"].to_string();
        assert!(
            reason.contains("fatal: remote error: ")
                && (reason.contains("[redacted]") || reason.contains("https://h.invalid")),
            "v{i}: {r:#}"
        );
    }
}

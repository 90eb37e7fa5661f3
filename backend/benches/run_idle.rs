//! What `fleetdash run` costs a hub host at rest: its resident memory and CPU time over a while,
//! collecting the demo fleet (11 agents, 3 hosts, 3 boards, backups) at the demo's cadences
//! (15 s for agents and hosts: eight times the production default, so the figure is an upper
//! bound). It prints figures and asserts no timing; it asserts that the run kept writing a fresh
//! snapshot of all 11 agents, so it cannot pass on a collector that did nothing.
//!
//! Run from a clean clone, at the repository root:
//!
//!     cargo bench -p fleetdash --bench run_idle     # 10 minutes; FLEETDASH_BENCH_MINUTES=N
//!
//! The long run (issue 33: two hours, a sample every five minutes):
//!
//!     FLEETDASH_BENCH_MINUTES=120 FLEETDASH_BENCH_EVERY_MINUTES=5 \
//!         cargo bench -p fleetdash --bench run_idle
//!
//! `fleetdash demo` serves the simulated fleet (and runs its own collector, which is not
//! measured); a second process, `fleetdash run`, collects the same fleet into its own output and
//! state from a copy of the demo's config (without the demo's intake and work queue, which the
//! demo's collector owns). RSS, CPU time (utime + stime), open descriptors and threads
//! are read from /proc for both processes every sample (a minute unless
//! FLEETDASH_BENCH_EVERY_MINUTES says otherwise) after a first minute of warm-up, with the size
//! of everything each keeps on disk (its output and state folders): a leak of memory, of
//! descriptors, of threads or of files shows as a column that keeps growing.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const EXE: &str = env!("CARGO_BIN_EXE_fleetdash");

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// What /proc says of one process at one moment.
struct Sample {
    rss_kb: u64,
    cpu_seconds: f64,
    fds: usize,
    threads: u64,
}

/// A number field of /proc/PID/status (`VmRSS:`, `Threads:`).
fn status_field(status: &str, field: &str) -> u64 {
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/PID/status"))
}

fn sample(pid: u32) -> Sample {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    Sample {
        rss_kb: status_field(&status, "VmRSS:"),
        // CLK_TCK is 100 on Linux for every architecture Debian ships.
        cpu_seconds: ticks as f64 / 100.0,
        fds: std::fs::read_dir(format!("/proc/{pid}/fd"))
            .unwrap()
            .count(),
        threads: status_field(&status, "Threads:"),
    }
}

/// Bytes under `dir`, every file counted (what a process keeps on disk there).
fn disk_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => disk_bytes(&e.path()),
            _ => e.metadata().map(|m| m.len()).unwrap_or(0),
        })
        .sum()
}

/// One table row: the process's sample beside the last, and its folders' size on disk.
fn row(label: &str, now: &Sample, first: &Sample, disk: u64) -> String {
    format!(
        "{label:<6} RSS {:>6} kB, fds {:>3}, threads {:>2}, CPU {:>7.2} s since the first sample, \
         on disk {:>7} kB",
        now.rss_kb,
        now.fds,
        now.threads,
        now.cpu_seconds - first.cpu_seconds,
        disk / 1024
    )
}

fn wait_for(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(300);
    while !done() {
        assert!(Instant::now() < deadline, "{what} never happened");
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn snapshot_agents(path: &Path) -> Option<(usize, bool)> {
    let text = std::fs::read_to_string(path).ok()?;
    let s: serde_json::Value = serde_json::from_str(&text).ok()?;
    Some((s["agents"].as_array()?.len(), s["stale"].as_bool()?))
}

fn main() {
    let minutes: u64 = std::env::var("FLEETDASH_BENCH_MINUTES")
        .ok()
        .and_then(|m| m.parse().ok())
        .unwrap_or(10)
        .max(1);
    let every: u64 = std::env::var("FLEETDASH_BENCH_EVERY_MINUTES")
        .ok()
        .and_then(|m| m.parse().ok())
        .unwrap_or(1)
        .clamp(1, minutes);
    let dir = tempfile::tempdir().unwrap();
    let demo_dir = dir.path().join("demo");
    let demo = Killed(
        Command::new(EXE)
            .args(["demo", "--listen", "127.0.0.1:0", "--state-dir"])
            .arg(&demo_dir)
            .env("FLEETDASH_LOG", "error")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let demo_config = demo_dir.join("fleetdash.toml");
    wait_for("the demo's first snapshot", || {
        demo_config.exists() && demo_dir.join("out/status.json").exists()
    });
    // The demo's config, into an output and state of the run's own; the intake and the queue
    // stay the demo's.
    let mut skip = 0;
    let config: String = std::fs::read_to_string(&demo_config)
        .unwrap()
        .lines()
        .filter(|line| {
            if line.starts_with("[intake]") || line.starts_with("[work_queue]") {
                skip = 2;
            }
            if skip > 0 {
                skip -= 1;
                return false;
            }
            true
        })
        .map(|line| match line {
            "output_dir = \"out\"" => "output_dir = \"run-out\"".to_string(),
            "state_dir = \"state\"" => "state_dir = \"run-state\"".to_string(),
            "path = \"vault\"" => "path = \"run-vault\"".to_string(),
            other => other.to_string(),
        })
        .map(|line| line + "\n")
        .collect();
    std::fs::create_dir_all(demo_dir.join("run-vault")).unwrap();
    let run_config = demo_dir.join("run.toml");
    std::fs::write(&run_config, config).unwrap();
    let run = Killed(
        Command::new(EXE)
            .args(["run", "--config"])
            .arg(&run_config)
            .env("FLEETDASH_LOG", "error")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let pid = run.0.id();
    let out = demo_dir.join("run-out/status.json");
    wait_for("the run's first snapshot of 11 agents", || {
        snapshot_agents(&out).is_some_and(|(n, _)| n == 11)
    });
    std::thread::sleep(Duration::from_secs(60));
    let demo_pid = demo.0.id();
    let run_disk =
        || disk_bytes(&demo_dir.join("run-out")) + disk_bytes(&demo_dir.join("run-state"));
    let demo_disk = || disk_bytes(&demo_dir.join("out")) + disk_bytes(&demo_dir.join("state"));
    let (first, demo_first) = (sample(pid), sample(demo_pid));
    let started = Instant::now();
    println!(
        "fleetdash run (run), the demo fleet at the demo's cadences, and fleetdash demo (demo: \
         the fleet, its collector, intake, queue and server), a sample every {every} min:"
    );
    println!("  after 1 min warm-up:");
    println!("    {}", row("run", &first, &first, run_disk()));
    println!("    {}", row("demo", &demo_first, &demo_first, demo_disk()));
    let mut peak = first.rss_kb;
    let mut minute = 0;
    while minute < minutes {
        let step = every.min(minutes - minute);
        std::thread::sleep(Duration::from_secs(60 * step));
        minute += step;
        let (now, demo_now) = (sample(pid), sample(demo_pid));
        peak = peak.max(now.rss_kb);
        println!("  +{minute:>3} min:");
        println!("    {}", row("run", &now, &first, run_disk()));
        println!("    {}", row("demo", &demo_now, &demo_first, demo_disk()));
    }
    let last = sample(pid);
    let elapsed = started.elapsed().as_secs_f64();
    let (agents, stale) = snapshot_agents(&out).expect("the run's snapshot");
    assert_eq!(agents, 11, "the run's snapshot lists the demo's 11 agents");
    assert!(!stale, "the run kept its snapshot fresh");
    let cpu = last.cpu_seconds - first.cpu_seconds;
    println!(
        "run over {:.0} s: CPU {:.1} s, {:.1} s per hour ({:.2} % of one core); RSS {} kB at the \
         end, {peak} kB the most sampled; fds {} → {}, threads {} → {}",
        elapsed,
        cpu,
        cpu * 3600.0 / elapsed,
        cpu * 100.0 / elapsed,
        last.rss_kb,
        first.fds,
        last.fds,
        first.threads,
        last.threads
    );
    drop(run);
    drop(demo);
}

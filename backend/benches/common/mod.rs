//! What the bench binaries share: verdict words, units, the shipped rules, the open-files limit
//! and the memory figures read from /proc; in [`fleet`], the rows of a demo-sized fleet, and in
//! [`load`], the reporting load of the queue and intake benches.
//!
//! Each bench includes the whole module and uses a part of it, hence the `#[allow(dead_code)]`
//! on each `mod common;`.

pub mod fleet;
pub mod load;

use std::path::Path;
use std::time::Duration;

use fleetdash::config::Rules;

pub fn verdict(ok: bool) -> &'static str {
    if ok { "ok" } else { "MISSED" }
}

pub fn mb(kib: u64) -> f64 {
    kib as f64 * 1024.0 / 1e6
}

pub fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// The shipped `config/rules.yaml`: the benches judge by the fleet's own rules file, never by
/// literals of their own.
pub fn shipped_rules() -> Rules {
    Rules::parse(
        Path::new("config/rules.yaml"),
        include_str!("../../../config/rules.yaml"),
    )
    .unwrap_or_else(|e| panic!("config/rules.yaml: {e}"))
}

pub fn raise_open_files_limit() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read or write the struct passed by pointer.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            println!("open files: getrlimit failed, keeping the limit as it is");
            return;
        }
        let before = lim.rlim_cur;
        if lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                println!("open files: cannot raise the soft limit {before}; keeping it");
                return;
            }
        }
        println!(
            "open files: soft limit {before} -> {} (hard {})",
            lim.rlim_cur, lim.rlim_max
        );
    }
}

/// Resident set now (of it, anonymous memory, the heap and stacks, and file pages, the
/// binary's code), its peak, and the thread count, from /proc (Linux), for the log.
pub fn memory_now() -> String {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return format!("peak {:.1} MB", mb(max_rss_kib()));
    };
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .unwrap_or("?")
            .to_string()
    };
    format!(
        "RSS {} KiB (anon {}, file {}), peak {} KiB, {} threads",
        field("VmRSS:"),
        field("RssAnon:"),
        field("RssFile:"),
        field("VmHWM:"),
        field("Threads:")
    )
}

/// The peak resident set of a process image (`self` or a pid), in KiB, when /proc has it.
pub fn vm_hwm_kib(pid: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Peak resident set of this process, in KiB (Linux reports `ru_maxrss` in KiB).
pub fn max_rss_kib() -> u64 {
    // SAFETY: an all-zero rusage is valid, and getrusage only writes into it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    assert_eq!(rc, 0, "getrusage failed");
    usage.ru_maxrss as u64
}

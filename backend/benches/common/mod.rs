//! What the bench binaries share: verdict words, units, the open-files limit and the memory
//! figures read from /proc.

pub fn verdict(ok: bool) -> &'static str {
    if ok { "ok" } else { "MISSED" }
}

pub fn mb(kib: u64) -> f64 {
    kib as f64 * 1024.0 / 1e6
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

/// Resident set now, its peak, and the thread count, from /proc (Linux), for the log.
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
        "RSS {} KiB, peak {} KiB, {} threads",
        field("VmRSS:"),
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

/// Prints a load's throughput and latency beside its goals (reports/s, p50, p99, max), for
/// the queue and intake benches; the other benches include this module without using it.
#[allow(dead_code)]
pub fn print_throughput(
    what: &str,
    latencies: &mut [std::time::Duration],
    elapsed: std::time::Duration,
    goal_per_s: f64,
    goal_p99: std::time::Duration,
) {
    latencies.sort();
    let at = |q: f64| latencies[((latencies.len() as f64 * q) as usize).min(latencies.len() - 1)];
    let rate = latencies.len() as f64 / elapsed.as_secs_f64();
    let (p50, p99, max) = (at(0.50), at(0.99), latencies[latencies.len() - 1]);
    println!(
        "{} {what} in {:.2} s: {rate:.0} {what}/s (goal >= {goal_per_s:.0}: {})",
        latencies.len(),
        elapsed.as_secs_f64(),
        verdict(rate >= goal_per_s)
    );
    println!(
        "latency p50 {:.2} ms, p99 {:.2} ms (goal < {} ms: {}), max {:.2} ms",
        p50.as_secs_f64() * 1e3,
        p99.as_secs_f64() * 1e3,
        goal_p99.as_millis(),
        verdict(p99 < goal_p99),
        max.as_secs_f64() * 1e3
    );
}

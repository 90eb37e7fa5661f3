//! Live processes as /proc shows them: the tests that kill process groups look for what they
//! started there.

/// A live process: its parent, its process group and its command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcInfo {
    pub pid: u32,
    pub ppid: u32,
    pub pgid: u32,
    pub argv: Vec<String>,
}

/// Process `pid`; `None` once it is gone (a zombie has no command line left, and is left out).
pub fn proc_info(pid: u32) -> Option<ProcInfo> {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    if cmdline.is_empty() {
        return None;
    }
    // "pid (comm) state ppid pgrp ...": comm may hold anything, so split after its ')'.
    let (_, rest) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let argv = cmdline
        .split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    Some(ProcInfo {
        pid,
        ppid: fields[1].parse().ok()?,
        pgid: fields[2].parse().ok()?,
        argv,
    })
}

/// Every live process.
pub fn processes() -> Vec<ProcInfo> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
        .filter_map(proc_info)
        .collect()
}

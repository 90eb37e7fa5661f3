//! The demo-sized fleet the systems_pass and transitions benches write through the status
//! writer: [`AGENTS`] agents and [`HOSTS`] hosts of [`PER_KIND`] services, tunnels and crons
//! and a vault, every row healthy unless a bench asks for one agent or one service down. One
//! copy, so that both benches time fleetdash on the same rows.

use chrono::{DateTime, TimeZone, Utc};
use fleetdash_model::{Agent, Asc, Band, CronCheck, CronState, NamedCheck, Probe, System};

pub const AGENTS: usize = 11;
pub const HOSTS: usize = 3;
/// Services, tunnels and crons on each host.
pub const PER_KIND: usize = 3;
/// The writer's cadence: a write every 2 minutes.
pub const CADENCE_MIN: i64 = 2;
pub const WRITES_PER_DAY: i64 = 24 * 60 / CADENCE_MIN;

/// Where the simulated time starts: a midnight, so that each day's mark falls at the same place
/// in the history strip's 30-minute grid.
pub fn start() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 30, 0, 0, 0)
        .single()
        .expect("a valid time")
}

/// Agent `i`, answering or down (a refused connection).
pub fn agent(i: usize, up: bool, now: DateTime<Utc>) -> Agent {
    Agent {
        name: format!("agent-{i:02}"),
        endpoint: format!("http://127.0.0.1:{}/", 18000 + i),
        plane: None,
        up,
        last_exchange_s: Probe::Value(60),
        exchange_band: Band::Green,
        skills_count: Probe::Value(3),
        lane: Probe::Unknown,
        model: Probe::Unknown,
        window: Probe::Unknown,
        heartbeat: Probe::Unknown,
        band: if up { Band::Green } else { Band::Red },
        status: if up {
            Asc::SUCCESS
        } else {
            Asc::DEPENDENCY_UNAVAILABLE
        },
        reason: (!up).then(|| "down: connection refused (tcp connect error)".into()),
        audit_skipped_lines: 0,
        last_report_s: None,
        history: None,
        checked_at: now,
        stale: !up,
    }
}

/// A service or tunnel check.
pub fn check(name: String, ok: bool, now: DateTime<Utc>) -> NamedCheck {
    NamedCheck {
        name,
        ok: Probe::Value(ok),
        reason: (!ok).then(|| "failed".into()),
        uptime_24h_pct: None,
        checked_at: now,
        stale: false,
    }
}

/// Host `h`'s row, every check up but its first service when `service_up` is false.
pub fn host(h: usize, service_up: bool, now: DateTime<Utc>) -> System {
    System {
        host: format!("host-{h}"),
        source: "local".into(),
        ram_used_gb: Probe::Value(3.2),
        ram_total_gb: Probe::Value(16.0),
        disk_free_gb: Probe::Value(120.5),
        services: (0..PER_KIND)
            .map(|i| check(format!("svc-{i}"), i != 0 || service_up, now))
            .collect(),
        tunnels: (0..PER_KIND)
            .map(|i| check(format!("tun-{i}"), true, now))
            .collect(),
        crons: (0..PER_KIND)
            .map(|i| CronCheck {
                name: format!("cron-{i}"),
                state: CronState::Up,
                last_ok_s: Probe::Value(120),
                period_s: 1800,
                grace_s: 600,
                reason: None,
                uptime_24h_pct: None,
                checked_at: now,
                stale: false,
            })
            .collect(),
        vault_parity: Probe::Value(true),
        vault_reason: None,
        band: if service_up { Band::Green } else { Band::Red },
        status: Asc::SUCCESS,
        reason: (!service_up).then(|| "service svc-0: failed".into()),
        history: None,
        checked_at: now,
        stale: false,
    }
}

//! The series a snapshot gives, at scrape time: each configured element's band and up, the
//! last-exchange and check ages, skills, queue tasks by state and band, the channels' health,
//! the sections' and the snapshot's age. Both processes expose these (`fleetdash serve` reads
//! status.json, as does `fleetdash run`): what the page shows is what Prometheus sees.
//!
//! Every name label is looked up from the config ([`Names`]), never taken from the snapshot:
//! an element status.json has that the config does not (an old snapshot, a renamed agent) is
//! no series. Ages are carried forward to the scrape: an age the snapshot measured at its
//! `checked_at` is that age plus the time since.

use std::sync::atomic::AtomicU64;

use chrono::{DateTime, Utc};
use fleetdash_model::alerts::key;
use fleetdash_model::{Band, Jump, Probe, Snapshot};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::names::{self, BANDS, Names};
use crate::collect::SectionName;
use crate::write::transitions::{Elements, elements};

pub type Labels = Vec<(&'static str, String)>;
type Family64 = Family<Labels, Gauge<f64, AtomicU64>>;

/// One family's samples, registered only when it has some.
struct Series {
    name: &'static str,
    help: &'static str,
    family: Family64,
    any: bool,
}

#[derive(Default)]
struct Out {
    series: Vec<Series>,
}

impl Out {
    fn family(&mut self, name: &'static str, help: &'static str) -> usize {
        self.series.push(Series {
            name,
            help,
            family: Family64::default(),
            any: false,
        });
        self.series.len() - 1
    }

    fn set(&mut self, at: usize, labels: Labels, value: f64) {
        let s = &mut self.series[at];
        s.family.get_or_create(&labels).set(value);
        s.any = true;
    }

    /// One series per band, 1 for `band` and 0 for the others: `..{band="red"} == 1` selects
    /// what is red, and a band that changes never leaves an old series behind.
    fn bands(&mut self, at: usize, labels: &Labels, band: Band) {
        for b in BANDS {
            let mut l = labels.clone();
            l.push(("band", names::band(b).to_string()));
            self.set(at, l, f64::from(u8::from(b == band)));
        }
    }

    fn register(self, registry: &mut Registry) {
        for s in self.series.into_iter().filter(|s| s.any) {
            registry.register(s.name, s.help, s.family);
        }
    }
}

fn labels(pairs: &[(&'static str, &str)]) -> Labels {
    pairs.iter().map(|(k, v)| (*k, v.to_string())).collect()
}

/// Seconds from `at` to `now`, never negative (a clock stepped back says 0).
fn since(at: DateTime<Utc>, now: DateTime<Utc>) -> f64 {
    (now - at).num_milliseconds().max(0) as f64 / 1000.0
}

/// Seconds from an element's `checked_at` to `now`, the jumps of the clock that wrote the
/// snapshot taken out: an age carried to the scrape does not leap a day because the clock did.
fn carried(snap: &Snapshot, checked_at: DateTime<Utc>, now: DateTime<Utc>) -> f64 {
    snap.clock.elapsed(checked_at, now) as f64
}

/// Registers the series of `snapshot` (or says it could not be read) into `registry`.
pub fn register(
    registry: &mut Registry,
    snapshot: Option<&Snapshot>,
    names: &Names,
    now: DateTime<Utc>,
) {
    let mut out = Out::default();
    let readable = out.family(
        "snapshot_readable",
        "1 when status.json could be read and parsed at this scrape, 0 when not",
    );
    out.set(
        readable,
        Vec::new(),
        f64::from(u8::from(snapshot.is_some())),
    );
    // From the config, not the snapshot: a hub whose status.json cannot be read still says
    // which hub it is, so rules joining on it (packaging/prometheus) name the hub in trouble.
    if !names.hub.is_empty() {
        let hub = out.family(
            "hub_info",
            "This hub's name (the config's `hub`), always 1: join on it for a `hub` label",
        );
        out.set(hub, labels(&[("hub", &names.hub)]), 1.0);
    }
    if let Some(snap) = snapshot {
        fleet(&mut out, snap, names, now);
    }
    out.register(registry);
}

fn fleet(out: &mut Out, snap: &Snapshot, names: &Names, now: DateTime<Utc>) {
    let age = out.family(
        "snapshot_age_seconds",
        "Seconds since status.json was generated",
    );
    // Stamped ahead of this clock by a step or more: the clock stepped back since it was
    // written, and its age cannot be told; +Inf, so that an alert on its age fires rather than
    // the snapshot looking fresh (issue 31).
    let ahead_s = (snap.generated_at - now).num_milliseconds().max(0) as f64 / 1000.0;
    let untold = snap.rules.clock_step_s > 0 && ahead_s >= snap.rules.clock_step_s as f64;
    let age_s = if untold {
        f64::INFINITY
    } else {
        since(snap.generated_at, now)
    };
    out.set(age, Vec::new(), age_s);
    let ahead = out.family(
        "snapshot_ahead_seconds",
        "Seconds status.json's generated_at is ahead of this clock (0 unless it stepped back)",
    );
    out.set(ahead, Vec::new(), ahead_s);
    let limit = out.family(
        "snapshot_stale_after_seconds",
        "The rules' staleness limit: a section older than this makes the snapshot stale",
    );
    out.set(limit, Vec::new(), snap.rules.snapshot_stale_after_s as f64);
    let stale = out.family(
        "snapshot_stale",
        "1 when the snapshot says it is stale (a configured section too old or never collected)",
    );
    out.set(stale, Vec::new(), f64::from(u8::from(snap.stale)));
    let elements = elements(snap);
    sections(out, snap, &elements, now);
    agents(out, snap, names, &elements, now);
    hosts(out, snap, names, &elements, now);
    boards(out, snap, names, &elements);
    backups(out, snap, names, &elements, now);
    tasks(out, snap, names);
    channels(out, snap, names);
    clock(out, snap);
}

/// This host's clock as the snapshot says it (issue 31): the jumps shown, by kind (a closed
/// list), the newest one's size, the grace, the stamps found ahead.
fn clock(out: &mut Out, snap: &Snapshot) {
    let c = &snap.clock;
    let jumps = out.family(
        "clock_jumps",
        "Jumps of this host's clock shown now (each for the rules' clock.shown_for_seconds), by kind",
    );
    let size = out.family(
        "clock_jump_seconds",
        "How far the newest shown jump of each kind moved the wall clock (for asleep: how long)",
    );
    let kinds = [Jump::Forward, Jump::Backward, Jump::Asleep];
    for (kind, word) in kinds.into_iter().zip(names::JUMP_KINDS.iter().copied()) {
        let of_kind: Vec<_> = c.jumps.iter().filter(|j| j.kind == kind).collect();
        let l = labels(&[("kind", word)]);
        out.set(jumps, l.clone(), of_kind.len() as f64);
        out.set(size, l, of_kind.first().map_or(0.0, |j| j.seconds as f64));
    }
    let grace = out.family(
        "clock_grace",
        "1 while windowed verdicts wait after a forward jump or a wake (judging_from is set)",
    );
    out.set(
        grace,
        Vec::new(),
        f64::from(u8::from(c.judging_from.is_some())),
    );
    let ahead = out.family(
        "clock_stamps_ahead",
        "Stamps seen ahead of this host's clock while that is shown (judged from when seen)",
    );
    out.set(
        ahead,
        Vec::new(),
        c.ahead.as_ref().map_or(0.0, |a| a.count as f64),
    );
    let band = out.family(
        "clock_band",
        "This host's clock as an element of fleetdash's own: amber while a jump is shown",
    );
    out.bands(band, &Vec::new(), c.band());
}

fn sections(out: &mut Out, snap: &Snapshot, elements: &Elements, now: DateTime<Utc>) {
    let age = out.family(
        "section_age_seconds",
        "Seconds since the section was last collected",
    );
    let stale = out.family(
        "section_stale",
        "1 when the section is configured and never collected or older than the staleness limit",
    );
    let band = out.family(
        "section_band",
        "The section's own band (red while stale or failed as a whole), one-hot by band",
    );
    let s = &snap.sections;
    for part in SectionName::PARTS {
        let meta = match part {
            SectionName::Board => &s.board,
            SectionName::LiveTasks => &s.live_tasks,
            SectionName::Queue => &s.queue,
            SectionName::Agents => &s.agents,
            SectionName::Systems => &s.systems,
            SectionName::Backups => &s.backups,
            SectionName::Tasks => continue,
        };
        if !meta.configured {
            continue;
        }
        let l = labels(&[("section", part.as_str())]);
        out.set(stale, l.clone(), f64::from(u8::from(meta.stale)));
        if let Some(at) = meta.checked_at {
            out.set(age, l.clone(), carried(snap, at, now));
        }
        if let Some(e) = elements.get(&key::section(part.as_str())) {
            out.bands(band, &l, e.band);
        }
    }
}

fn agents(out: &mut Out, snap: &Snapshot, names: &Names, elements: &Elements, now: DateTime<Utc>) {
    let Probe::Value(rows) = &snap.agents else {
        return;
    };
    let up = out.family(
        "agent_up",
        "1 when the agent's card or heartbeat answered at its last probe",
    );
    let band = out.family("agent_band", "The agent's band, one-hot by band");
    let exchange = out.family(
        "agent_last_exchange_age_seconds",
        "Seconds since the agent's last exchange with another agent (its audit log), now",
    );
    let skills = out.family(
        "agent_skills",
        "Skills the agent's card lists at its last probe",
    );
    let report = out.family(
        "agent_last_report_age_seconds",
        "Seconds since the agent's last report to the intake, now",
    );
    for a in rows.iter().filter(|a| names.agents.contains(&a.name)) {
        let l = labels(&[("agent", &a.name)]);
        out.set(up, l.clone(), f64::from(u8::from(a.up)));
        if let Some(e) = elements.get(&key::agent(&a.name)) {
            out.bands(band, &l, e.band);
        }
        let carried = carried(snap, a.checked_at, now);
        if let Probe::Value(s) = a.last_exchange_s {
            out.set(exchange, l.clone(), s as f64 + carried);
        }
        if let Probe::Value(n) = a.skills_count {
            out.set(skills, l.clone(), f64::from(n));
        }
        if let Some(s) = a.last_report_s {
            out.set(report, l, s as f64 + carried);
        }
    }
}

fn hosts(out: &mut Out, snap: &Snapshot, names: &Names, elements: &Elements, now: DateTime<Utc>) {
    let Probe::Value(rows) = &snap.systems else {
        return;
    };
    let up = out.family(
        "host_up",
        "1 when the host's source answered (RAM and disk read) at its last probe",
    );
    let band = out.family(
        "host_band",
        "The host's own band (whether its source answers), one-hot by band",
    );
    let check_up = out.family(
        "host_check_up",
        "1 when a host's check (service active, tunnel up, cron checked in, vault in parity) is not red",
    );
    let check_band = out.family("host_check_band", "A host's check's band, one-hot by band");
    let cron_age = out.family(
        "cron_last_success_age_seconds",
        "Seconds since the cron job's last successful run, now",
    );
    for h in rows {
        let Some(declared) = names.hosts.get(&h.host) else {
            continue;
        };
        let l = labels(&[("host", &h.host)]);
        if let Some(e) = elements.get(&key::host(&h.host)) {
            out.set(up, l.clone(), f64::from(u8::from(e.band != Band::Red)));
            out.bands(band, &l, e.band);
        }
        let checks = [
            ("service", &declared.services),
            ("tunnel", &declared.tunnels),
            ("cron", &declared.crons),
        ];
        let vault = declared.vault.then(|| vec!["vault".to_string()]);
        let all = checks
            .into_iter()
            .chain(vault.as_ref().map(|v| ("vault", v)));
        for (kind, list) in all {
            for name in list {
                let element = if kind == "vault" {
                    key::vault(&h.host)
                } else {
                    key::host_check(&h.host, kind, name)
                };
                let Some(e) = elements.get(&element) else {
                    continue;
                };
                let l = labels(&[("host", &h.host), ("kind", kind), ("check", name)]);
                out.set(
                    check_up,
                    l.clone(),
                    f64::from(u8::from(e.band != Band::Red)),
                );
                out.bands(check_band, &l, e.band);
            }
        }
        for c in h.crons.iter().filter(|c| declared.crons.contains(&c.name)) {
            if let Probe::Value(s) = c.last_ok_s {
                let l = labels(&[("host", &h.host), ("check", &c.name)]);
                out.set(cron_age, l, s as f64 + carried(snap, c.checked_at, now));
            }
        }
    }
}

fn boards(out: &mut Out, snap: &Snapshot, names: &Names, elements: &Elements) {
    let Probe::Value(board) = &snap.tasks.board else {
        return;
    };
    let up = out.family(
        "board_up",
        "1 when the board's database was read at its last pass",
    );
    let band = out.family(
        "board_band",
        "The kanban board's band (its read and projection), one-hot by band",
    );
    let cards = out.family(
        "board_cards",
        "Cards the board holds at its last read (all columns)",
    );
    let by_band = out.family(
        "board_cards_listed",
        "Cards status.json lists for the board, by band (a capped listing leaves green ones out)",
    );
    for s in board
        .sources
        .iter()
        .filter(|s| names.boards.contains(&s.name))
    {
        let l = labels(&[("board", &s.name)]);
        out.set(
            up,
            l.clone(),
            f64::from(u8::from(s.cards.value().is_some())),
        );
        if let Some(e) = elements.get(&key::board(&s.name)) {
            out.bands(band, &l, e.band);
        }
        if let Probe::Value(n) = s.cards {
            out.set(cards, l.clone(), f64::from(n));
        }
        let mut counts = [0u32; 3];
        for c in board.cards.iter().filter(|c| c.board == s.name) {
            counts[BANDS.iter().position(|b| *b == c.band).unwrap_or(2)] += 1;
        }
        for (b, n) in BANDS.iter().zip(counts) {
            let mut l = l.clone();
            l.push(("band", names::band(*b).to_string()));
            out.set(by_band, l, f64::from(n));
        }
    }
}

fn backups(out: &mut Out, snap: &Snapshot, names: &Names, elements: &Elements, now: DateTime<Utc>) {
    let (Probe::Value(b), Some(name)) = (&snap.backups, &names.backup) else {
        return;
    };
    if names::backup_name(&b.name) != *name {
        return;
    }
    let l = labels(&[("backup", name)]);
    let up = out.family(
        "backup_up",
        "1 when the newest backup's time was read at the last pass",
    );
    out.set(
        up,
        l.clone(),
        f64::from(u8::from(b.age_h.value().is_some())),
    );
    if let Some(e) = elements.get(key::BACKUPS) {
        let band = out.family(
            "backup_band",
            "The backup's freshness band, one-hot by band",
        );
        out.bands(band, &l, e.band);
    }
    if let Probe::Value(h) = b.age_h {
        let age = out.family("backup_age_seconds", "Seconds since the newest backup, now");
        out.set(age, l, h * 3600.0 + carried(snap, b.checked_at, now));
    }
}

fn tasks(out: &mut Out, snap: &Snapshot, names: &Names) {
    if let Probe::Value(live) = &snap.tasks.live {
        let family = out.family(
            "live_tasks",
            "In-flight A2A tasks by the agent running them and band (red: stuck)",
        );
        // Only the agents running a task: at 1,000 agents, three zeros each would be most of
        // the exposition.
        let mut counts: std::collections::BTreeMap<(&str, &str), u32> = Default::default();
        for t in live.iter().filter(|t| names.agents.contains(&t.agent)) {
            *counts
                .entry((t.agent.as_str(), names::band(t.band())))
                .or_default() += 1;
        }
        for ((agent, band), n) in counts {
            out.set(
                family,
                labels(&[("agent", agent), ("band", band)]),
                f64::from(n),
            );
        }
    }
    if let Probe::Value(rows) = &snap.tasks.queue {
        let family = out.family(
            "queue_tasks",
            "Work-queue tasks status.json lists, by state and band",
        );
        let mut counts: std::collections::BTreeMap<(&str, &str), u32> = Default::default();
        for t in rows {
            *counts
                .entry((names::queue_state(&t.state), names::band(t.band)))
                .or_default() += 1;
        }
        for t in &snap.tasks.queue_unreadable {
            *counts
                .entry(("unreadable", names::band(t.band)))
                .or_default() += 1;
        }
        for ((state, band), n) in counts {
            out.set(
                family,
                labels(&[("state", state), ("band", band)]),
                f64::from(n),
            );
        }
        let left = out.family(
            "queue_tasks_left_out",
            "Work-queue tasks status.json counts but does not list: finished past the retention (retired) or dismissed",
        );
        let lo = &snap.tasks.queue_left_out;
        out.set(
            left,
            labels(&[("state", "retired")]),
            f64::from(lo.finished),
        );
        out.set(
            left,
            labels(&[("state", "dismissed")]),
            f64::from(lo.dismissed),
        );
    }
}

fn channels(out: &mut Out, snap: &Snapshot, names: &Names) {
    if !snap.alerts.configured {
        return;
    }
    let band = out.family(
        "alert_channel_band",
        "An alert channel's band (amber while it fails to deliver), one-hot by band",
    );
    let pending = out.family(
        "alert_channel_pending",
        "Alerts waiting in the outbox for the channel",
    );
    for c in snap
        .alerts
        .channels
        .iter()
        .filter(|c| names.channels.contains(&c.name))
    {
        let l = labels(&[("channel", &c.name)]);
        out.bands(band, &l, c.band());
        out.set(pending, l, c.pending as f64);
    }
}

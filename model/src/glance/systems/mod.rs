//! The Systems and Backups panels: one row per host, its problems said once in a few words
//! and each service, tunnel and cron behind the tap with its own why and hold; the alert
//! channels as a group of their own (nobody is paged while one fails); and the backup.

use super::parts::{
    Words, anchor, code, crossed, fact, few_words, group, join, plain, plain_reason, problem,
    red_first, section, shown, sorted, strip,
};
use super::types::{Check, Checks, Fact, Kind, Row, Section};
use crate::alerts::{ChannelState, key};
use crate::band::Band;
use crate::clock::ClockView;
use crate::probe::Probe;
use crate::snapshot::{Backups, CronCheck, CronState, NamedCheck, SetAside, Snapshot, System};
use crate::words::{human_age, one_decimal};

pub(super) fn systems(s: &Snapshot, w: &Words) -> Section {
    let meta = &s.sections.systems;
    let mut view = section("systems", "Systems", meta, w);
    view.problem = problem(&s.systems, meta, "systems", w);
    if let Probe::Value(hosts) = &s.systems {
        let sorted = sorted(hosts.iter().collect(), |h: &&System| (0, h.host.clone()));
        let mut g = group(red_first(
            sorted.into_iter().map(|h| host_row(h, w)).collect(),
        ));
        if g.rows.is_empty() {
            g.empty = Some("No hosts configured.");
        }
        view.groups.push(g);
    }
    // Whether alerts reach anyone is a system of its own; without alerting, nothing is said.
    if s.alerts.configured {
        let mut g = group(red_first(
            s.alerts
                .channels
                .iter()
                .map(|c| channel_row(c, w))
                .collect(),
        ));
        g.title = Some("alerts".into());
        if g.rows.is_empty() {
            g.empty = Some("no alert channels");
        }
        view.groups.push(g);
    }
    // A state file of fleetdash's own that was moved aside lost what it held: said until the
    // operator removes the copy. Nothing is said while there is none.
    if !s.set_aside.is_empty() {
        let mut g = group(s.set_aside.iter().map(|a| set_aside_row(a, w)).collect());
        g.title = Some("fleetdash's files".into());
        view.groups.push(g);
    }
    // This host's clock jumped or slept (issue 31): said while it is shown, nothing otherwise.
    if s.clock.band() != Band::Green {
        let mut g = group(vec![clock_row(&s.clock, s.rules.no_reply_s, w)]);
        g.title = Some("fleetdash's clock".into());
        view.groups.push(g);
    }
    view
}

/// This host's clock, amber while a jump of it (or a stamp found ahead of it) is shown: each
/// verdict's ages were observed across it, and after a forward jump or a wake the agents have
/// a whole window to report before anything is judged late.
fn clock_row(c: &ClockView, report_s: u64, w: &Words) -> Row {
    let band = c.band();
    let lines = c.words(w.now, w.offset, report_s);
    // The needs-you line: the newest jump, then what matters now (until when the agents may
    // report, while they may), else when it was; only stamps ahead, what they were.
    let (what, reason) = match (c.jumps.first(), &c.ahead) {
        (Some(j), _) => (
            j.what(),
            c.report_by(w.now, w.offset, report_s)
                .unwrap_or_else(|| j.when(w.now, w.offset)),
        ),
        (None, Some(a)) => ("this host's clock".to_string(), a.words()),
        (None, None) => ("this host's clock".to_string(), String::new()),
    };
    let r = Some(reason.as_str());
    let mut facts: Vec<Fact> = lines
        .iter()
        .map(|l| fact("said", (l.clone(), None), r))
        .collect();
    facts.push(fact(
        "ages",
        ("as fleetdash observed them, not by the jump".into(), None),
        r,
    ));
    Row {
        kind: Some(Kind::Clock),
        what,
        since: None,
        anchor: "clock".into(),
        band,
        badge: band.word(),
        title: "this host's clock".into(),
        summary: lines.first().cloned().unwrap_or_default(),
        code: Some(c.status().to_string()),
        facts,
        reason: Some(reason),
        held: None,
        checks: Vec::new(),
        strip: None,
        own: band,
    }
}

/// A state file moved aside: amber (nothing in the fleet is down, but what the file held is
/// gone from use, and its copy waits for the operator).
fn set_aside_row(a: &SetAside, w: &Words) -> Row {
    let band = Band::Amber;
    let when = a.at.map(|t| w.time(t));
    let reason = "corrupt: set aside".to_string();
    let r = Some(reason.as_str());
    Row {
        kind: Some(Kind::SetAside),
        what: format!("state file {}", a.file),
        // When is in the row's summary: the needs-you line stays whole on a phone.
        since: None,
        anchor: anchor("file", &a.file),
        band,
        badge: band.word(),
        title: a.file.clone(),
        summary: match &when {
            Some(t) => format!("set aside at {t}; what it held is no longer used"),
            None => "set aside; what it held is no longer used".into(),
        },
        code: None,
        facts: vec![
            fact("copy", (a.aside.clone(), None), r),
            fact("remove", ("the copy once looked at".into(), None), r),
            fact("checked", (w.ago(a.checked_at), None), r),
        ],
        reason: Some(reason),
        held: None,
        checks: Vec::new(),
        strip: None,
        own: band,
    }
}

/// An alert channel (or the dead man's switch): green while it delivers, amber while it fails.
fn channel_row(c: &ChannelState, w: &Words) -> Row {
    let band = c.band();
    let reason = c.failing_since.map(|_| {
        c.reason
            .as_deref()
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .unwrap_or("failing")
            .to_string()
    });
    let waiting = match c.pending {
        0 => "none".to_string(),
        1 => "1 alert".to_string(),
        n => format!("{n} alerts"),
    };
    let r = reason.as_deref();
    Row {
        kind: Some(Kind::Channel),
        what: c
            .describe(w.now, w.offset)
            .unwrap_or_else(|| format!("alerts: {}", c.name)),
        since: c.failing_since,
        anchor: anchor("alert", &c.name),
        band,
        badge: band.word(),
        title: c.name.clone(),
        summary: match c.failing_since {
            Some(t) => format!("failing {}", w.since(t)),
            None => "delivering".into(),
        },
        code: None,
        facts: vec![
            fact("waiting", (waiting, None), r),
            fact("checked", (w.ago(c.checked_at), None), r),
        ],
        reason,
        held: None,
        checks: Vec::new(),
        strip: None,
        own: band,
    }
}

fn gb(v: &f64) -> String {
    format!("{} GB", one_decimal(*v))
}

fn host_row(h: &System, w: &Words) -> Row {
    let band = h.band();
    // Checks are sampled with their host: until its samples span a day, their uptimes say
    // since when, as the host's strip does.
    let span = h.history.as_ref().and_then(|x| x.since).map(|t| w.time(t));
    let span = span.as_deref();
    let [mut services, mut tunnels, mut crons] = host_checks(h, w, span);
    // Each check is an element of its own: its hold is said on it, unless the host's row
    // already says the same words.
    let held = w.held(&key::host(&h.host), band);
    let hold = |kind: &str, name: &str, b: Band| {
        w.held(&key::host_check(&h.host, kind, name), b)
            .filter(|m| Some(m) != held.as_ref())
    };
    for (kind, checks, list) in [
        ("service", &mut services, &h.services),
        ("tunnel", &mut tunnels, &h.tunnels),
    ] {
        for ((check, _), c) in checks.iter_mut().zip(list) {
            check.held = hold(kind, &c.name, check.band);
        }
    }
    for ((check, _), c) in crons.iter_mut().zip(&h.crons) {
        check.held = hold("cron", &c.name, check.band);
    }
    let vault = match &h.vault_parity {
        // A vault watched alone (no remote configured) says so: "no remote to compare with".
        Probe::Value(true) => (h.vault_reason.as_deref().unwrap_or("in sync").into(), None),
        Probe::Value(false) => (
            format!(
                "OUT OF SYNC: {}",
                h.vault_reason.as_deref().unwrap_or("no reason given")
            ),
            Some(Band::Red),
        ),
        Probe::Unknown => ("not checked".into(), None),
        Probe::Error(r) => (format!("error: {r}"), Some(Band::Red)),
    };
    let ram = match (&h.ram_used_gb, &h.ram_total_gb) {
        (Probe::Value(u), Probe::Value(t)) => (format!("{} / {}", gb(u), gb(t)), None),
        (u, t) => {
            let (u, ub) = shown(u, gb);
            let (t, tb) = shown(t, gb);
            (format!("{u} / {t}"), ub.or(tb))
        }
    };
    let disk = shown(&h.disk_free_gb, gb);
    // The host's reason in a few words, from its checks (each check keeps its own why behind
    // the tap): said once.
    let problems = problems(h, [&services, &tunnels, &crons], [vault.1, ram.1, disk.1]);
    let reason = match band {
        Band::Green => None,
        // The host itself could not be read: its own reason, every check is stale with it.
        _ if h.stale || problems.is_empty() => h.reason.as_deref().map(|r| few_words(&plain(r).0)),
        _ => Some(worst_first(&problems, |_| true).join(" · ")),
    };
    let r = reason.as_deref();
    let source = if h.source.is_empty() {
        String::new()
    } else {
        format!("via {}", h.source)
    };
    Row {
        kind: Some(Kind::Host),
        what: format!("host {}", h.host),
        since: None,
        anchor: anchor("host", &h.host),
        band,
        badge: band.word(),
        title: h.host.clone(),
        summary: join(&[&source, &format!("checked {}", w.ago(h.checked_at))]),
        code: code(&h.status).filter(|_| reason.is_some()),
        facts: vec![
            fact("RAM", ram, r),
            fact("disk free", disk, r),
            Fact {
                held: w
                    .held(&key::vault(&h.host), vault.1.unwrap_or(Band::Green))
                    .filter(|m| Some(m) != held.as_ref()),
                ..fact("vault parity", vault, r)
            },
        ],
        reason,
        held,
        checks: vec![
            Checks {
                title: "services",
                items: services.into_iter().map(|c| c.0).collect(),
            },
            Checks {
                title: "tunnels",
                items: tunnels.into_iter().map(|c| c.0).collect(),
            },
            Checks {
                title: "crons",
                items: crons.into_iter().map(|c| c.0).collect(),
            },
        ],
        strip: strip(h.history.as_ref(), w),
        own: band,
    }
}

/// A host's services, tunnels and crons, each with its state in words and, when it is not ok,
/// the few words its host's reason uses for it.
fn host_checks(h: &System, w: &Words, span: Option<&str>) -> [Vec<(Check, Option<String>)>; 3] {
    [
        named(&h.services, "service", "active", "inactive", span),
        named(&h.tunnels, "tunnel", "up", "down", span),
        h.crons.iter().map(|c| cron_check(c, span, w)).collect(),
    ]
}

/// A problem of a host in a few words, its band, and (kind, name) when it is one of its checks.
type Problem<'a> = (Band, String, Option<(&'static str, &'a str)>);

/// A host's problems: its checks not ok (`checks`: services, tunnels, crons), then its vault,
/// RAM and disk when their `bands` say so.
fn problems<'a>(
    h: &'a System,
    checks: [&Vec<(Check, Option<String>)>; 3],
    bands: [Option<Band>; 3],
) -> Vec<Problem<'a>> {
    let mut out: Vec<Problem> = Vec::new();
    let names: [Vec<&str>; 3] = [
        h.services.iter().map(|c| c.name.as_str()).collect(),
        h.tunnels.iter().map(|c| c.name.as_str()).collect(),
        h.crons.iter().map(|c| c.name.as_str()).collect(),
    ];
    for ((kind, list), names) in ["service", "tunnel", "cron"]
        .into_iter()
        .zip(checks)
        .zip(names)
    {
        for ((check, short), name) in list.iter().zip(names) {
            if let Some(short) = short {
                out.push((check.band, short.clone(), Some((kind, name))));
            }
        }
    }
    // A vault git could not compare (a configured remote missing, ...) is not out of sync:
    // its fact says why.
    let vault = if h.vault_parity.is_error() {
        "vault not compared"
    } else {
        "vault out of sync"
    };
    for (words, band) in [vault, "RAM unreadable", "disk unreadable"]
        .into_iter()
        .zip(bands)
    {
        if band.is_some() {
            out.push((Band::Red, words.into(), None));
        }
    }
    out
}

/// The words of the `problems` that `keep` keeps, red first.
fn worst_first<'a>(problems: &'a [Problem], keep: impl Fn(&Problem) -> bool) -> Vec<&'a str> {
    let red = problems.iter().filter(|p| p.0 == Band::Red);
    let amber = problems.iter().filter(|p| p.0 != Band::Red);
    red.chain(amber)
        .filter(|p| keep(p))
        .map(|p| p.1.as_str())
        .collect()
}

/// Whether one of `h`'s checks took something down (`root` says which: by kind and name), the
/// host's other problems, red first (what its own needs-you line still has to say), and their
/// worst band (the line's: an amber cron is no red line because a tunnel of its host is down).
pub(super) fn host_trouble(
    h: &System,
    w: &Words,
    root: impl Fn(&str, &str) -> bool,
) -> (bool, Vec<String>, Band) {
    let checks = host_checks(h, w, None);
    let unreadable = |p: &Probe<f64>| p.is_error();
    let bands = [
        matches!(h.vault_parity, Probe::Value(false) | Probe::Error(_)).then_some(Band::Red),
        (unreadable(&h.ram_used_gb) || unreadable(&h.ram_total_gb)).then_some(Band::Red),
        unreadable(&h.disk_free_gb).then_some(Band::Red),
    ];
    let problems = problems(h, [&checks[0], &checks[1], &checks[2]], bands);
    let is_root = |p: &Problem| p.2.is_some_and(|(kind, name)| root(kind, name));
    let took_down = problems.iter().any(is_root);
    let rest = worst_first(&problems, |p| !is_root(p))
        .into_iter()
        .map(String::from)
        .collect();
    let band = problems
        .iter()
        .filter(|p| !is_root(p))
        .map(|p| p.0)
        .max()
        .unwrap_or(Band::Green);
    (took_down, rest, band)
}

/// " · 24 h 99.5 %" when the check has samples, " · 100.0 % since 20:38" while they span
/// less than a day.
fn uptime_suffix(pct: Option<f64>, span: Option<&str>) -> String {
    match (pct, span) {
        (None, _) => String::new(),
        (Some(p), None) => format!(" · 24 h {} %", one_decimal(p)),
        (Some(p), Some(since)) => format!(" · {} % since {since}", one_decimal(p)),
    }
}

/// Each check with its state in words, and the few words the host's reason uses for it when
/// it is not ok.
fn named(
    list: &[NamedCheck],
    kind: &str,
    yes: &str,
    no: &str,
    span: Option<&str>,
) -> Vec<(Check, Option<String>)> {
    list.iter()
        .map(|c| {
            let ok = c.ok == Probe::Value(true) && !c.stale;
            // A reason that starts with a word and a comma says its state by it ("expired, 3 d
            // ago, on ...": a certificate's), as a unit's one word does ("failed").
            let said = c
                .reason
                .as_deref()
                .and_then(|r| r.split(',').next())
                .filter(|w| !w.contains(' '));
            let state = match (&c.ok, said) {
                (Probe::Value(true), _) if c.stale => format!("{yes} (stale)"),
                (Probe::Value(_), Some(w)) => w.to_string(),
                (Probe::Value(true), _) => yes.to_string(),
                (Probe::Value(false), _) => no.to_string(),
                (Probe::Unknown, _) => "unknown".into(),
                (Probe::Error(_), _) => "no answer".into(),
            };
            // Ok with a reason is ok with a caveat (a certificate inside its renewal window).
            let band = match (ok, &c.reason) {
                (false, _) => Band::Red,
                (true, Some(_)) => Band::Amber,
                (true, None) => Band::Green,
            };
            // The reason, unless the state word already is it.
            let why = match &c.ok {
                Probe::Error(e) => Some(e.clone()),
                _ => c.reason.clone().filter(|r| *r != state),
            };
            let check = Check {
                band,
                text: format!(
                    "{} {state}{}",
                    c.name,
                    uptime_suffix(c.uptime_24h_pct, span)
                ),
                why: why.filter(|_| band != Band::Green),
                held: None,
            };
            let short = (band != Band::Green).then(|| format!("{kind} {} {state}", c.name));
            (check, short)
        })
        .collect()
}

fn cron_word(state: CronState) -> &'static str {
    match state {
        CronState::Up => "up",
        CronState::Late => "late",
        CronState::Down => "down",
    }
}

fn cron_check(c: &CronCheck, span: Option<&str>, w: &Words) -> (Check, Option<String>) {
    let band = if c.stale { Band::Red } else { c.state.band() };
    let last = match &c.last_ok_s {
        Probe::Value(s) => w.ago(crossed(c.checked_at, *s, 0)),
        Probe::Unknown => "never".into(),
        Probe::Error(r) => format!("error: {r}"),
    };
    let word = if c.stale { "stale" } else { cron_word(c.state) };
    let check = Check {
        band,
        text: format!(
            "{} {word} · last ok {last} · every {}, grace {}{}",
            c.name,
            human_age(c.period_s),
            human_age(c.grace_s),
            uptime_suffix(c.uptime_24h_pct, span)
        ),
        why: c.reason.clone().filter(|_| band != Band::Green),
        held: None,
    };
    let short = (band != Band::Green).then(|| format!("cron {} {word}", c.name));
    (check, short)
}

pub(super) fn backups(s: &Snapshot, w: &Words) -> Section {
    let meta = &s.sections.backups;
    let mut view = section("backups", "Backups", meta, w);
    view.problem = problem(&s.backups, meta, "backups", w);
    if let Probe::Value(b) = &s.backups {
        view.groups.push(group(vec![backup_row(b, s, w)]));
    }
    view
}

fn backup_row(b: &Backups, s: &Snapshot, w: &Words) -> Row {
    let band = b.band();
    let name = if b.name.is_empty() { "backup" } else { &b.name };
    // A green backup's reason ("20 h old, amber at 1 d 2 h") is a fact, not a warning.
    let (reason, cut) = plain_reason(b.reason.clone().filter(|_| band != Band::Green));
    let r = reason.as_deref();
    let age = match (&b.gdrive_latest, &b.age_h) {
        (Probe::Value(t), _) => format!("latest {}", w.ago(*t)),
        // Hours old at the poll: a moment, said as every other one is.
        (_, Probe::Value(h)) => format!(
            "latest {}",
            w.ago(crossed(b.checked_at, (h * 3600.0).max(0.0) as u64, 0))
        ),
        (Probe::Error(_), _) | (_, Probe::Error(_)) => "latest unknown (error)".into(),
        _ => "latest unknown".into(),
    };
    let mut facts = vec![
        fact("latest", shown(&b.gdrive_latest, |t| w.time(*t)), r),
        fact(
            "thresholds",
            (
                format!(
                    "amber from {}, red from {}",
                    human_age(s.rules.backup_amber_after_s),
                    human_age(s.rules.backup_red_after_s)
                ),
                None,
            ),
            r,
        ),
    ];
    facts.extend(cut);
    if band == Band::Green
        && let Some(note) = &b.reason
    {
        facts.push(fact("note", (note.clone(), None), r));
    }
    let since = match &b.gdrive_latest {
        Probe::Value(latest) if band != Band::Green && !b.stale => {
            let after = if band == Band::Red {
                s.rules.backup_red_after_s
            } else {
                s.rules.backup_amber_after_s
            };
            Some(crossed(*latest, 0, after))
        }
        _ => None,
    };
    Row {
        kind: Some(Kind::Backup),
        what: format!("backup {name}"),
        since,
        anchor: anchor("backup", name),
        band,
        badge: band.word(),
        title: name.to_string(),
        summary: age,
        code: code(&b.status).filter(|_| reason.is_some()),
        reason,
        held: w.held(key::BACKUPS, band),
        facts,
        checks: Vec::new(),
        strip: None,
        own: band,
    }
}

#[cfg(test)]
mod tests;

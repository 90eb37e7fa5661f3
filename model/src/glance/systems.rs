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
        Probe::Value(true) => ("in sync".to_string(), None),
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
    for (words, band) in ["vault out of sync", "RAM unreadable", "disk unreadable"]
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
mod tests {
    use super::*;
    use crate::glance::fixtures::*;
    use crate::glance::{Glance, Need};
    use crate::snapshot::History;
    use chrono::{FixedOffset, Timelike};

    #[test]
    fn a_host_says_its_problems_once_in_a_few_words_and_each_check_keeps_its_why() {
        let g = at(&fleet(), 0);
        let prod = row(&g, "host-prod");
        assert_eq!(
            prod.reason.as_deref(),
            Some("service hermes-gateway failed · cron db-dump down")
        );
        let services = &prod.checks[0].items;
        assert_eq!(services[1].text, "hermes-gateway failed · 24 h 0.0 %");
        assert_eq!(
            services[1].why, None,
            "the state word already is the reason"
        );
        let crons = &prod.checks[2].items;
        assert_eq!(crons[0].band, Band::Red);
        assert_eq!(
            crons[0].why.as_deref(),
            Some("last run failed with exit code 2")
        );
        assert_eq!(
            prod.checks[1].items.len(),
            0,
            "no tunnels: an empty list, said so by the renderer"
        );
        assert_eq!(row(&g, "host-LAB").reason, None);

        // Until the host's samples span a day, its checks' uptimes say since when too.
        let mut young = fleet();
        if let Probe::Value(hosts) = &mut young.systems {
            for h in hosts {
                h.history = Some(History {
                    uptime_24h_pct: Some(50.0),
                    strip: ".".repeat(47) + "d",
                    slot_s: 1800,
                    samples: 2,
                    since: Some(young.generated_at - chrono::Duration::minutes(20)),
                });
            }
        }
        let g = at(&young, 0);
        let services = &row(&g, "host-prod").checks[0].items;
        let start = young.generated_at - chrono::Duration::minutes(20);
        let hm = format!("{:02}:{:02}", start.hour(), start.minute());
        assert_eq!(
            services[1].text,
            format!("hermes-gateway failed · 0.0 % since {hm}")
        );
        let crons = &row(&g, "host-prod").checks[2].items;
        assert!(
            crons[0].text.ends_with(&format!("% since {hm}")),
            "{}",
            crons[0].text
        );
    }

    /// Issue 44: a certificate's check says its state word first; ok with a reason is amber.
    /// A tunnel's reason starts with its address: not a state word.
    #[test]
    fn a_certificate_expiring_is_an_amber_check_and_an_expired_one_red_each_with_its_date() {
        let (soon, gone) = ("expiring, in 9 d, on 31 Dec", "expired, 3 d ago, on 19 Nov");
        let refused = "localhost:22: connection refused";
        let mut s = Snapshot::empty(t0(), rules());
        let certs = vec![
            check("cert a", true, Some(soon)),
            check("cert b", false, Some(gone)),
        ];
        let mut hub = host("hub", Band::Red, certs, Vec::new());
        hub.tunnels = vec![check("t", false, Some(refused))];
        s.systems = Probe::Value(vec![hub]);
        let g = at(&s, 0);
        let items = row(&g, "host-hub").checks.iter().flat_map(|c| &c.items);
        let seen: Vec<(Band, &str, Option<&str>)> = items
            .map(|i| (i.band, i.text.as_str(), i.why.as_deref()))
            .collect();
        let (a, b, t) = ("cert a expiring", "cert b expired", "t down");
        let pct = |x: &str, p: &str| format!("{x} · 24 h {p} %");
        let want = [
            (pct(a, "100.0"), soon),
            (pct(b, "0.0"), gone),
            (pct(t, "0.0"), refused),
        ];
        let bands = [Band::Amber, Band::Red, Band::Red];
        assert_eq!(seen.len(), 3, "{seen:?}");
        for ((got, (text, why)), band) in seen.iter().zip(&want).zip(bands) {
            assert_eq!(*got, (band, text.as_str(), Some(*why)));
        }
        let reason = row(&g, "host-hub").reason.clone().unwrap();
        assert!(reason.ends_with("· service cert a expiring"), "{reason}");
    }

    #[test]
    fn a_green_backup_keeps_its_note_as_a_fact_and_an_amber_one_says_since_when() {
        let s = fleet();
        let g = at(&s, 0);
        let b = row(&g, "backup-gdrive");
        assert_eq!((b.band, b.reason.as_ref()), (Band::Green, None));
        assert_eq!(b.summary, "latest 20 h ago");
        assert!(
            b.facts
                .iter()
                .any(|f| f.label == "note" && f.band.is_none())
        );
        let mut amber = s.clone();
        if let Probe::Value(b) = &mut amber.backups {
            b.gdrive_latest = Probe::Value(t0() - chrono::Duration::hours(30));
            b.band = Band::Amber;
            b.reason = Some("latest backup 30 h old".into());
        }
        let g = at(&amber, 0);
        let need = g
            .needs
            .iter()
            .find(|n| n.anchor == "backup-gdrive")
            .unwrap();
        // 30 h ago plus the 26 h amber threshold: 4 h ago.
        assert_eq!(need.since.as_deref(), Some("since 15:20"));
    }

    #[test]
    fn a_held_host_and_a_held_tunnel_are_marked_and_keep_their_band_their_line_and_the_verdict() {
        let mut s = fleet();
        if let Probe::Value(hosts) = &mut s.systems {
            hosts[0].tunnels = vec![check("heart", false, Some("connection refused"))];
            hosts[0].vault_parity = Probe::Value(false);
            hosts[0].vault_reason = Some("2 uncommitted changes".into());
        }
        let plain = at(&s, 0);
        s.alerts.configured = true;
        s.alerts.held = vec![
            hold(key::host("prod"), 40, "disk swap"),
            hold(
                key::host_check("prod", "tunnel", "heart"),
                100,
                "tunnel rebuild",
            ),
            // The same silence as the host's: said once, on the host.
            hold(key::host_check("prod", "cron", "db-dump"), 40, "disk swap"),
            hold(key::vault("prod"), 70, ""),
        ];
        let g = at(&s, 0);
        let prod = row(&g, "host-prod");
        assert_eq!(
            prod.held.as_deref(),
            Some("silenced until 20:00 (disk swap)")
        );
        assert_eq!((prod.band, prod.badge), (Band::Red, "fail"));
        assert_eq!(prod.reason, row(&plain, "host-prod").reason);
        let held: Vec<(&str, Option<&str>)> = prod
            .checks
            .iter()
            .flat_map(|c| &c.items)
            .map(|i| (i.text.as_str(), i.held.as_deref()))
            .collect();
        assert_eq!(
            held,
            [
                ("nginx active · 24 h 100.0 %", None),
                ("hermes-gateway failed · 24 h 0.0 %", None),
                (
                    "heart down · 24 h 0.0 %",
                    Some("silenced until 21:00 (tunnel rebuild)")
                ),
                (
                    "db-dump down · last ok 1 h ago · every 1 d, grace 2 h · 24 h 100.0 %",
                    None
                ),
            ]
        );
        let vault = prod
            .facts
            .iter()
            .find(|f| f.label == "vault parity")
            .unwrap();
        assert_eq!(vault.held.as_deref(), Some("silenced until 20:30"));
        // Needs-you: the same line in the same place, the mark added.
        let need = g.needs.iter().find(|n| n.anchor == "host-prod").unwrap();
        assert_eq!(
            need.held.as_deref(),
            Some("silenced until 20:00 (disk swap)")
        );
        let without: Vec<Need> = g
            .needs
            .iter()
            .cloned()
            .map(|n| Need { held: None, ..n })
            .collect();
        assert_eq!(without, plain.needs);
        assert_eq!(
            (g.headline.as_str(), g.counts),
            (plain.headline.as_str(), plain.counts)
        );
        assert_eq!(g.counts, s.verdict());
        // In the reader's zone.
        let plus_one = Glance::new(&s, t0(), FixedOffset::east_opt(3600).unwrap());
        assert_eq!(
            row(&plus_one, "host-prod").held.as_deref(),
            Some("silenced until 21:00 (disk swap)")
        );
    }

    #[test]
    fn a_failing_alert_channel_is_an_amber_line_said_in_the_verdict_and_a_row_of_systems() {
        let mut s = fleet();
        s.alerts.configured = true;
        s.alerts.channels = vec![
            channel("deadman", None, "", 0),
            channel("ntfy", Some(78), "503", 3),
        ];
        let g = at(&s, 0);
        // Amber, after every red line, in the channel's own words.
        let last = g.needs.last().unwrap();
        assert_eq!(
            (
                last.band,
                last.what.as_str(),
                last.reason.as_str(),
                last.since.as_ref()
            ),
            (
                Band::Amber,
                "alerts: ntfy failing since 18:02: 503 (3 waiting)",
                "",
                None
            )
        );
        assert_eq!(last.anchor, "alert-ntfy");
        // Said in the verdict whatever else is red; counted amber, the healthy one green.
        assert_eq!(
            g.headline,
            "2 agents · 1 task stuck · 1 board · 2 cards · 1 host · 1 alert channel failing"
        );
        assert_eq!(g.counts.sentence(), "7 red · 3 amber · 9 green");
        assert_eq!(g.counts, s.verdict());
        // The Systems panel's "alerts" group: failing first, amber with its reason; the
        // dead man's switch green, delivering; what waits behind the tap.
        let systems = g.sections.iter().find(|x| x.id == "systems").unwrap();
        let alerts = systems.groups.last().unwrap();
        assert_eq!(alerts.title.as_deref(), Some("alerts"));
        let rows: Vec<(&str, Band, &str, &str, Option<&str>)> = alerts
            .rows
            .iter()
            .map(|r| {
                (
                    r.title.as_str(),
                    r.band,
                    r.badge,
                    r.summary.as_str(),
                    r.reason.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            rows,
            [
                (
                    "ntfy",
                    Band::Amber,
                    "warn",
                    "failing since 18:02",
                    Some("503")
                ),
                ("deadman", Band::Green, "ok", "delivering", None),
            ]
        );
        let waiting = |r: &Row| {
            r.facts
                .iter()
                .find(|f| f.label == "waiting")
                .unwrap()
                .text
                .clone()
        };
        assert_eq!(waiting(&alerts.rows[0]), "3 alerts");
        assert_eq!(waiting(&alerts.rows[1]), "none");

        // Nothing else amiss: the channel alone makes the verdict amber.
        let mut calm = Snapshot::empty(t0(), rules());
        calm.stale = false;
        calm.agents = Probe::Value(vec![agent("min", Band::Green, true, None)]);
        calm.alerts = s.alerts.clone();
        let g = at(&calm, 0);
        assert_eq!(
            (g.band, g.headline.as_str()),
            (Band::Amber, "1 alert channel failing")
        );
        assert_eq!(g.title(true), "▲ 1 · fleet");
        calm.alerts
            .channels
            .push(channel("hub", Some(5), "connection refused", 0));
        if let Probe::Value(a) = &mut calm.agents {
            a.push(agent("juno", Band::Amber, true, Some("quiet")));
        }
        assert_eq!(
            at(&calm, 0).headline,
            "1 agent to watch · 2 alert channels failing"
        );
        // Delivering again: green, nothing said.
        calm.alerts.channels = vec![channel("ntfy", None, "", 0)];
        calm.agents = Probe::Value(vec![agent("min", Band::Green, true, None)]);
        let g = at(&calm, 0);
        assert_eq!((g.band, g.headline.as_str()), (Band::Green, "all 2 green"));
    }

    #[test]
    fn a_state_file_set_aside_is_an_amber_line_said_in_the_verdict_until_its_copy_goes() {
        let mut calm = Snapshot::empty(t0(), rules());
        calm.stale = false;
        calm.agents = Probe::Value(vec![agent("min", Band::Green, true, None)]);
        let before = at(&calm, 0);
        assert!(
            !before
                .sections
                .iter()
                .flat_map(|x| &x.groups)
                .any(|g| g.title.as_deref() == Some("fleetdash's files"))
        );
        let moved = t0() - chrono::Duration::minutes(58);
        calm.set_aside = vec![SetAside {
            file: "history.json".into(),
            aside: "history.json.corrupt-20261130T190200Z".into(),
            at: Some(moved),
            checked_at: t0(),
        }];
        let g = at(&calm, 0);
        assert_eq!(
            (g.band, g.headline.as_str()),
            (Band::Amber, "1 state file set aside")
        );
        assert_eq!(g.counts, calm.verdict());
        assert_eq!(g.counts.sentence(), "1 amber · 1 green");
        let need = g.needs.last().unwrap();
        assert_eq!(
            (need.band, need.what.as_str(), need.reason.as_str()),
            (Band::Amber, "state file history.json", "corrupt: set aside")
        );
        assert_eq!(need.anchor, "file-history_json");
        let systems = g.sections.iter().find(|x| x.id == "systems").unwrap();
        let files = systems.groups.last().unwrap();
        assert_eq!(files.title.as_deref(), Some("fleetdash's files"));
        assert_eq!(
            (files.rows[0].band, files.rows[0].summary.as_str()),
            (
                Band::Amber,
                "set aside at 18:22; what it held is no longer used"
            )
        );
        // Said after the fleet's own, whatever is red.
        if let Probe::Value(a) = &mut calm.agents {
            a.push(agent("juno", Band::Red, false, Some("down")));
        }
        assert_eq!(
            at(&calm, 0).headline,
            "1 agent down · 1 state file set aside"
        );
    }

    #[test]
    fn without_alerting_nothing_is_added() {
        let mut s = fleet();
        let plain = at(&s, 0);
        // Channels listed by a snapshot that says alerting is off are not shown.
        s.alerts.channels = vec![channel("ntfy", Some(5), "503", 1)];
        let g = at(&s, 0);
        assert_eq!(g, plain);
        let systems = g.sections.iter().find(|x| x.id == "systems").unwrap();
        assert_eq!(systems.groups.len(), 1);
        assert_eq!(g.counts, s.verdict());
    }

    /// A wake of the hub (issue 31): one amber line of fleetdash's own, counted, in Needs you
    /// with its span and until when the agents may report, in the Systems panel; gone once
    /// the snapshot no longer shows the jump.
    #[test]
    fn a_jump_of_the_clock_is_an_amber_line_of_fleetdashs_own() {
        let mut calm = Snapshot::empty(t0(), rules());
        calm.stale = false;
        calm.agents = Probe::Value(vec![agent("min", Band::Green, true, None)]);
        assert_eq!(at(&calm, 0).band, Band::Green);
        let asleep = 7 * 3600 + 12 * 60;
        calm.clock = ClockView {
            jumps: vec![crate::clock::ClockJump {
                kind: crate::clock::Jump::Asleep,
                seconds: asleep,
                at: t0(),
                checked_at: t0(),
                stale: false,
            }],
            judging_from: Some(t0()),
            unwatched_s: asleep,
            ahead: None,
        };
        let g = at(&calm, 0);
        assert_eq!(
            (g.band, g.headline.as_str()),
            (Band::Amber, "1 clock out of step")
        );
        assert_eq!(g.counts, calm.verdict());
        let need = g.needs.last().unwrap();
        let wake = crate::words::moment(t0(), t0(), FixedOffset::east_opt(0).unwrap());
        let fell = crate::words::moment(
            t0() - chrono::Duration::seconds(asleep as i64),
            t0(),
            FixedOffset::east_opt(0).unwrap(),
        );
        let until = crate::words::moment(
            t0() + chrono::Duration::seconds(rules().no_reply_s as i64),
            t0(),
            FixedOffset::east_opt(0).unwrap(),
        );
        assert_eq!(
            (need.band, need.what.as_str(), need.reason.as_str()),
            (
                Band::Amber,
                "the hub was asleep 7 h 12 min",
                format!("agents have until {until} to report").as_str()
            )
        );
        assert_eq!(
            row(&g, "clock").summary,
            format!("the hub was asleep 7 h 12 min, {fell}–{wake}")
        );
        let systems = g.sections.iter().find(|x| x.id == "systems").unwrap();
        assert_eq!(
            systems.groups.last().unwrap().title.as_deref(),
            Some("fleetdash's clock")
        );
        calm.clock = ClockView::default();
        assert_eq!(at(&calm, 0).band, Band::Green);
    }
}

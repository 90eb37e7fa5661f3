//! The elements of a snapshot: each thing the verdict counts, with its stable key, kind, display
//! name and band. Pure: no disk; [`compare`](super::compare()) finds the band changes between
//! two sets of them, and the alert engine and silences speak of the same elements.
//!
//! Elements are keyed as the history keys them (`agent:min`, `host:lab`,
//! `host:lab/service:nginx`, ...) plus `task:<agent>/<id>`, `queue:<id>` (a work-queue task),
//! `board:<name>`, `board:<name>/card:<id>`, `board:<name>/unlisted` (the cards needing
//! attention a capped listing leaves out), `backups` and `section:<name>`, so a key names the
//! same thing across runs. A host's own element is whether it answers (its RAM and disk facts);
//! its checks are elements of their own, not folded into it as the page's row folds them.
//!
//! A card that leaves the board or the snapshot's capped listing is no element any more, and
//! one that recovers is listed once more. A section's own element is red while it is stale or
//! failed as a whole, and exists once it was first collected ("not collected yet" at start-up
//! is not news).

use std::collections::BTreeMap;

use fleetdash_model::alerts::{Element, key};
use fleetdash_model::{Band, NOT_COLLECTED, Probe, SectionMeta, Snapshot};

use crate::collect::SectionName;

/// Every element of a snapshot, by key.
pub type Elements = BTreeMap<String, Element>;

fn put(
    out: &mut Elements,
    key: String,
    kind: &'static str,
    name: String,
    band: Band,
    why: Option<String>,
) {
    let reason = why.filter(|_| band != Band::Green);
    out.insert(
        key,
        Element {
            kind,
            name,
            band,
            reason,
        },
    );
}

/// Every element of `snap` with the band the verdict counts it in.
pub fn elements(snap: &Snapshot) -> Elements {
    let mut out = Elements::new();
    if let Probe::Value(rows) = &snap.agents {
        for a in rows {
            let key = key::agent(&a.name);
            put(
                &mut out,
                key,
                "agent",
                a.name.clone(),
                a.band,
                a.reason.clone(),
            );
        }
    }
    if let Probe::Value(tasks) = &snap.tasks.live {
        for t in tasks {
            let key = key::live_task(&t.agent, &t.id);
            // Named by its agent, as the page names it: a task id on a phone is noise (issue
            // 43); the id is in the key, which every alert carries in its details.
            let name = format!("on {}", t.agent);
            put(&mut out, key, "task", name, t.band(), t.reason.clone());
        }
    }
    if let Probe::Value(tasks) = &snap.tasks.queue {
        for t in tasks {
            let key = key::queue_task(&t.id);
            put(
                &mut out,
                key,
                "task",
                t.title.clone(),
                t.band,
                t.reason.clone(),
            );
        }
        // A row that cannot be read is an element of its own, named by its id.
        for t in &snap.tasks.queue_unreadable {
            let why = format!("unreadable: {}", t.reason);
            put(
                &mut out,
                key::queue_task(&t.id),
                "task",
                t.id.clone(),
                t.band,
                Some(why),
            );
        }
    }
    if let Probe::Value(board) = &snap.tasks.board {
        // A source the projection job made before the first board read says nothing about
        // the board yet ("cards: not collected"): like a host placeholder, not an element.
        let sources = board
            .sources
            .iter()
            .filter(|s| s.cards.error_reason() != Some(NOT_COLLECTED));
        for s in sources {
            let why = s
                .reason
                .clone()
                .or_else(|| s.cards.error_reason().map(|e| format!("cards: {e}")))
                .or_else(|| {
                    s.projection
                        .error_reason()
                        .map(|e| format!("projection: {e}"))
                });
            let key = key::board(&s.name);
            put(&mut out, key, "board", s.name.clone(), s.band(), why);
        }
        for c in &board.cards {
            let key = key::card(&c.board, &c.id);
            let why = (!c.conditions.is_empty()).then(|| c.conditions.join("; "));
            put(&mut out, key, "card", c.title.clone(), c.band, why);
        }
        // The cards needing attention that a board's listing leaves out (they alone passed
        // the cap) are one element per board, so they still alert and recover; green while
        // there are none, so it is born quietly and its recovery is a transition.
        for s in board.sources.iter().filter(|s| !s.columns.is_empty()) {
            let lot = s.attention_left_out;
            let band = if lot.red > 0 {
                Band::Red
            } else if lot.amber > 0 {
                Band::Amber
            } else {
                Band::Green
            };
            let mut said = Vec::new();
            if lot.red > 0 {
                said.push(format!("{} red", lot.red));
            }
            if lot.amber > 0 {
                said.push(format!("{} amber", lot.amber));
            }
            let why = format!("{} cards not listed (over the cap)", said.join(" and "));
            let name = format!("cards of {} not listed", s.name);
            put(
                &mut out,
                key::unlisted_cards(&s.name),
                "card",
                name,
                band,
                Some(why),
            );
        }
    }
    if let Probe::Value(hosts) = &snap.systems {
        for h in hosts {
            host(&mut out, h);
        }
    }
    if let Probe::Value(b) = &snap.backups {
        let name = if b.name.is_empty() {
            "backups".to_string()
        } else {
            b.name.clone()
        };
        put(
            &mut out,
            key::BACKUPS.into(),
            "backups",
            name,
            b.band(),
            b.reason.clone(),
        );
    }
    for part in SectionName::PARTS {
        section(&mut out, snap, part);
    }
    // fleetdash's own reach (issue 24): red while most of the fleet fails at once, the root
    // every agent and remote host depends on (`Deps`), so their alerts wait under it.
    if let Some(reach) = &snap.alerts.reach {
        put(
            &mut out,
            key::BLIND_SPOT.into(),
            "fleetdash",
            BLIND_SPOT_NAME.into(),
            if reach.blind { Band::Red } else { Band::Green },
            Some(reach.words()),
        );
    }
    clock(&mut out, snap);
    out
}

/// This host's clock's element: amber while a jump of it is shown (amber pages nobody; the
/// band change is logged, and the hub agent's `changes since` says it).
fn clock(out: &mut Elements, snap: &Snapshot) {
    let c = &snap.clock;
    let reason = c
        .jumps
        .first()
        .map(fleetdash_model::ClockJump::what)
        .or_else(|| c.ahead.as_ref().map(fleetdash_model::Ahead::words));
    put(
        out,
        key::CLOCK.into(),
        "fleetdash",
        "this host's clock".into(),
        c.band(),
        reason,
    );
}

/// The blind spot's element as alerts name it: "fleetdash cannot reach the fleet: 10 of 11
/// agents and 2 of 3 hosts fail at once: this host's network?".
pub const BLIND_SPOT_NAME: &str = "cannot reach the fleet";

fn host(out: &mut Elements, h: &fleetdash_model::System) {
    let key = key::host(&h.host);
    // Tunnels merged before the host's first probe make a placeholder row: it says nothing
    // about the host yet (as in the history), only about its tunnels.
    let placeholder = h.ram_total_gb.error_reason() == Some(NOT_COLLECTED);
    if !placeholder {
        // The host itself is whether its source answers (RAM, disk). Its checks are elements
        // of their own: folded in here (as the page's row folds them), one standing red check
        // (a vault out of sync) would make the host a down root of every later failure under
        // it, and hold their alerts back.
        let mut failures: Vec<String> = Vec::new();
        for (what, probe) in [("RAM", &h.ram_total_gb), ("disk", &h.disk_free_gb)] {
            if let Some(e) = probe.error_reason() {
                failures.push(format!("{what}: {e}"));
            }
        }
        // A source that failed as a whole gives every fact the same error: said once.
        if let (Some(a), Some(b)) = (h.ram_total_gb.error_reason(), h.disk_free_gb.error_reason())
            && a == b
        {
            failures = vec![a.to_string()];
        }
        let band = if failures.is_empty() {
            Band::Green
        } else {
            Band::Red
        };
        put(
            out,
            key.clone(),
            "host",
            h.host.clone(),
            band,
            Some(failures.join("; ")),
        );
    }
    for (kind, list) in [("service", &h.services), ("tunnel", &h.tunnels)] {
        for c in list {
            let ok = c.ok == Probe::Value(true) && !c.stale;
            // Ok with a reason is ok with a caveat (a certificate inside its renewal window).
            let band = match (ok, &c.reason) {
                (false, _) => Band::Red,
                (true, Some(_)) => Band::Amber,
                (true, None) => Band::Green,
            };
            let why = c
                .reason
                .clone()
                .or_else(|| c.ok.error_reason().map(|e| format!("error: {e}")));
            let name = format!("{} on {}", c.name, h.host);
            put(
                out,
                key::host_check(&h.host, kind, &c.name),
                kind,
                name,
                band,
                why,
            );
        }
    }
    for c in &h.crons {
        let band = if c.stale { Band::Red } else { c.state.band() };
        let name = format!("{} on {}", c.name, h.host);
        put(
            out,
            key::host_check(&h.host, "cron", &c.name),
            "cron",
            name,
            band,
            c.reason.clone(),
        );
    }
    let vault = match &h.vault_parity {
        Probe::Unknown => None,
        Probe::Value(true) => Some((Band::Green, None)),
        Probe::Value(false) => Some((
            Band::Red,
            Some(
                h.vault_reason
                    .clone()
                    .unwrap_or_else(|| "out of sync".into()),
            ),
        )),
        Probe::Error(e) => Some((Band::Red, Some(format!("error: {e}")))),
    };
    if let Some((band, why)) = vault {
        let name = format!("vault on {}", h.host);
        put(out, key::vault(&h.host), "vault", name, band, why);
    }
}

/// A configured section that was collected at least once: red while stale or failed whole.
fn section(out: &mut Elements, snap: &Snapshot, part: SectionName) {
    let s = &snap.sections;
    let (meta, failure): (&SectionMeta, Option<&str>) = match part {
        SectionName::Board => (&s.board, snap.tasks.board.error_reason()),
        SectionName::LiveTasks => (&s.live_tasks, snap.tasks.live.error_reason()),
        SectionName::Queue => (&s.queue, snap.tasks.queue.error_reason()),
        SectionName::Agents => (&s.agents, snap.agents.error_reason()),
        SectionName::Systems => (&s.systems, snap.systems.error_reason()),
        SectionName::Backups => (&s.backups, snap.backups.error_reason()),
        SectionName::Tasks => return,
    };
    if !meta.configured || meta.checked_at.is_none() {
        return;
    }
    let name = part.as_str();
    let prefix = format!("{name}: ");
    let mut why: Vec<String> = snap
        .stale_reasons
        .iter()
        .filter(|r| meta.stale && r.starts_with(&prefix))
        .map(|r| r[prefix.len()..].to_string())
        .collect();
    if meta.stale && why.is_empty() {
        why.push("stale".into());
    }
    if let Some(e) = failure {
        why.push(format!("error: {e}"));
    }
    let band = if why.is_empty() {
        Band::Green
    } else {
        Band::Red
    };
    let why = (!why.is_empty()).then(|| why.join("; "));
    put(
        out,
        key::section(name),
        "section",
        name.to_string(),
        band,
        why,
    );
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::write::history::tests::agent;
    use crate::write::transitions::compare;
    use crate::write::transitions::tests::{changes, t0};
    use chrono::{DateTime, Duration, Utc};
    use fleetdash_model::{
        Asc, Backups, Board, BoardSource, Card, CronCheck, CronState, NamedCheck, System,
        Transition,
    };

    /// A work-queue task is an element of its own (`queue:<id>`, named by its title): nobody
    /// ACKing it is a transition to red with the row's reason.
    #[test]
    fn a_queue_task_turning_red_is_a_transition() {
        let snap = |band: Band, reason: Option<&str>| {
            let mut s = Snapshot::empty(t0(), crate::config::fleet_rules());
            s.tasks.queue = Probe::Value(vec![fleetdash_model::QueueTask {
                id: "q_7".into(),
                title: "Rotate the vault key".into(),
                owner: None,
                tagged: Vec::new(),
                created_by: "operator".into(),
                created_at: t0(),
                deadline: None,
                state: "TASK_STATE_SUBMITTED".into(),
                ack: None,
                blocked_on: None,
                last_report_at: None,
                status_message: None,
                quiet_s: None,
                unacked_s: None,
                deadline_in_s: None,
                turns_in_s: None,
                worker_died: false,
                band,
                status: Asc::SUCCESS,
                reason: reason.map(Into::into),
                checked_at: t0(),
                stale: false,
            }]);
            elements(&s)
        };
        let why = "nobody has taken it for 10 min";
        let got = compare(
            Some(&snap(Band::Green, None)),
            &snap(Band::Red, Some(why)),
            t0(),
        );
        assert_eq!(changes(&got), [("queue:q_7", Some(Band::Green), Band::Red)]);
        assert_eq!(
            (
                got[0].kind.as_str(),
                got[0].name.as_str(),
                got[0].reason.as_deref()
            ),
            ("task", "Rotate the vault key", Some(why))
        );
        // Issue 21: a row the reader cannot read is an element of its own, red, named by its
        // id, so it alerts (and ends) as any task does.
        let mut s = Snapshot::empty(t0(), crate::config::fleet_rules());
        s.tasks.queue = Probe::Value(Vec::new());
        s.tasks.queue_unreadable = vec![fleetdash_model::UnreadableTask {
            id: "q_8".into(),
            reason: "tagged \"sol mira\": not a list of names".into(),
            band: Band::Red,
            status: Asc::INTEGRITY_CHECK_FAILED,
            checked_at: t0(),
            stale: true,
        }];
        let els = elements(&s);
        let bad = &els["queue:q_8"];
        assert_eq!(
            (bad.kind, bad.name.as_str(), bad.band, bad.reason.as_deref()),
            (
                "task",
                "q_8",
                Band::Red,
                Some("unreadable: tagged \"sol mira\": not a list of names")
            )
        );
    }

    fn check(name: &str, ok: Probe<bool>, reason: Option<&str>, now: DateTime<Utc>) -> NamedCheck {
        NamedCheck {
            name: name.into(),
            ok,
            reason: reason.map(Into::into),
            uptime_24h_pct: None,
            checked_at: now,
            stale: false,
        }
    }

    fn host(name: &str, now: DateTime<Utc>) -> System {
        System {
            host: name.into(),
            source: "node_exporter".into(),
            ram_used_gb: Probe::Value(1.0),
            ram_total_gb: Probe::Value(4.0),
            disk_free_gb: Probe::Value(10.0),
            services: vec![check("nginx", Probe::Value(true), None, now)],
            tunnels: vec![check("heart", Probe::Value(true), None, now)],
            crons: vec![CronCheck {
                name: "backup".into(),
                state: CronState::Up,
                last_ok_s: Probe::Value(60),
                period_s: 3600,
                grace_s: 600,
                reason: None,
                uptime_24h_pct: None,
                checked_at: now,
                stale: false,
            }],
            vault_parity: Probe::Value(true),
            vault_reason: None,
            band: Band::Green,
            status: Asc::SUCCESS,
            reason: None,
            history: None,
            checked_at: now,
            stale: false,
        }
    }

    fn card(id: &str, band: Band, conditions: &[&str], now: DateTime<Utc>) -> Card {
        Card {
            board: "research".into(),
            id: id.into(),
            title: format!("Card {id}"),
            status: "running".into(),
            assignee: Some("min".into()),
            priority: None,
            age_s: 60,
            block_kind: None,
            latest_activity_at: None,
            conditions: conditions.iter().map(|c| c.to_string()).collect(),
            band,
            checked_at: now,
            stale: false,
        }
    }

    /// A fleet with one of everything, all green, every section collected at `now`.
    fn fleet(now: DateTime<Utc>) -> Snapshot {
        let mut s = Snapshot::empty(now, crate::config::fleet_rules());
        s.stale = false;
        for meta in [
            &mut s.sections.agents,
            &mut s.sections.board,
            &mut s.sections.live_tasks,
            &mut s.sections.systems,
            &mut s.sections.backups,
        ] {
            meta.configured = true;
            meta.checked_at = Some(now);
        }
        s.agents = Probe::Value(vec![agent("min", true, now)]);
        s.tasks.board = Probe::Value(Board {
            columns: vec!["running".into()],
            cards: vec![card("t_1", Band::Green, &[], now)],
            sources: vec![BoardSource {
                name: "research".into(),
                plane: None,
                cards: Probe::Value(1),
                projection: Probe::Value("written".into()),
                status: Asc::SUCCESS,
                reason: None,
                columns: Vec::new(),
                attention_left_out: Default::default(),
                checked_at: now,
                stale: false,
            }],
        });
        s.tasks.live = Probe::Value(Vec::new());
        s.systems = Probe::Value(vec![host("lab", now)]);
        s.backups = Probe::Value(Backups {
            name: "gdrive".into(),
            gdrive_latest: Probe::Value(now),
            age_h: Probe::Value(1.0),
            band: Band::Green,
            status: Asc::SUCCESS,
            reason: None,
            checked_at: now,
            stale: false,
        });
        s
    }

    /// Every kind of element has its stable key, kind, display name and band; a green fleet
    /// has only green elements.
    #[test]
    fn every_element_has_a_stable_key_kind_and_name() {
        let got = elements(&fleet(t0()));
        let keys: Vec<(&str, &str, &str)> = got
            .iter()
            .map(|(k, e)| (k.as_str(), e.kind, e.name.as_str()))
            .collect();
        assert_eq!(
            keys,
            [
                ("agent:min", "agent", "min"),
                ("backups", "backups", "gdrive"),
                ("board:research", "board", "research"),
                ("board:research/card:t_1", "card", "Card t_1"),
                ("fleetdash:clock", "fleetdash", "this host's clock"),
                ("host:lab", "host", "lab"),
                ("host:lab/cron:backup", "cron", "backup on lab"),
                ("host:lab/service:nginx", "service", "nginx on lab"),
                ("host:lab/tunnel:heart", "tunnel", "heart on lab"),
                ("host:lab/vault", "vault", "vault on lab"),
                ("section:agents", "section", "agents"),
                ("section:backups", "section", "backups"),
                ("section:systems", "section", "systems"),
                ("section:tasks.board", "section", "tasks.board"),
                ("section:tasks.live", "section", "tasks.live"),
            ]
        );
        assert!(
            got.values()
                .all(|e| e.band == Band::Green && e.reason.is_none())
        );
    }

    /// Each transition as (key, from, to, reason), to compare with what a test expects.
    fn said(got: &[Transition]) -> Vec<(&str, Option<Band>, Band, Option<&str>)> {
        got.iter()
            .map(|t| (t.key.as_str(), t.from, t.to, t.reason.as_deref()))
            .collect()
    }

    /// A host whose source stops answering is red as itself, its error said once; its checks
    /// are not touched by it.
    #[test]
    fn a_host_that_stops_answering_is_the_hosts_own_transition() {
        let (t, later) = (t0(), t0() + Duration::minutes(15));
        let before = fleet(t);
        let mut after = before.clone();
        if let Probe::Value(hosts) = &mut after.systems {
            hosts[0].ram_total_gb = Probe::error("lab:9100: connection refused");
            hosts[0].disk_free_gb = Probe::error("lab:9100: connection refused");
        }
        let got = compare(Some(&elements(&before)), &elements(&after), later);
        let said = said(&got);
        assert_eq!(
            said,
            [(
                "host:lab",
                Some(Band::Green),
                Band::Red,
                Some("lab:9100: connection refused")
            )]
        );
    }

    /// Issue 44: a certificate's check is amber inside its renewal window (ok, with a reason)
    /// and red once expired, each a transition with its words: amber is shown, red pages.
    #[test]
    fn a_certificate_expiring_is_an_amber_element_and_an_expired_one_red() {
        let (t, later) = (t0(), t0() + Duration::minutes(15));
        let mut before = fleet(t);
        if let Probe::Value(hosts) = &mut before.systems {
            hosts[0]
                .services
                .push(check("certificate serve", Probe::Value(true), None, t));
        }
        let key = "host:lab/service:certificate serve";
        assert_eq!(elements(&before)[key].band, Band::Green);
        let mut soon = before.clone();
        let expiring = "expiring, in 9 d, on 31 Dec 2026 12:00 UTC";
        if let Probe::Value(hosts) = &mut soon.systems {
            hosts[0].services.last_mut().unwrap().reason = Some(expiring.into());
        }
        let got = compare(Some(&elements(&before)), &elements(&soon), later);
        assert_eq!(
            said(&got),
            [(key, Some(Band::Green), Band::Amber, Some(expiring))]
        );
        let mut gone = soon.clone();
        let expired = "expired, 1 d ago, on 31 Dec 2026 12:00 UTC";
        if let Probe::Value(hosts) = &mut gone.systems {
            let c = hosts[0].services.last_mut().unwrap();
            c.ok = Probe::Value(false);
            c.reason = Some(expired.into());
        }
        let got = compare(Some(&elements(&soon)), &elements(&gone), later);
        assert_eq!(
            said(&got),
            [(key, Some(Band::Amber), Band::Red, Some(expired))]
        );
    }

    /// Each element of a fleet going bad changes band with the snapshot's own reason: an agent
    /// down, a card crashing, a service, a tunnel, a cron, the vault, the backups, a section
    /// going stale. A card leaving the board is no transition, and neither is the host whose
    /// checks failed while it answers (its row is red on the page; each check says why here).
    #[test]
    fn a_fleet_going_bad_records_each_element_with_its_reason() {
        let (t, later) = (t0(), t0() + Duration::minutes(15));
        let before = fleet(t);
        let mut after = before.clone();
        after.agents = Probe::Value(vec![{
            let mut a = agent("min", false, later);
            a.reason = Some("down: connection refused".into());
            a
        }]);
        if let Probe::Value(b) = &mut after.tasks.board {
            b.cards = vec![card("t_2", Band::Red, &["crashed (pid 12)"], later)];
        }
        if let Probe::Value(hosts) = &mut after.systems {
            let h = &mut hosts[0];
            h.services[0].ok = Probe::Value(false);
            h.services[0].reason = Some("inactive".into());
            h.tunnels[0].ok = Probe::error("no answer within 5s");
            h.crons[0].state = CronState::Late;
            h.crons[0].reason = Some("5 min late".into());
            h.vault_parity = Probe::Value(false);
            h.vault_reason = Some("3 uncommitted changes".into());
            h.band = Band::Red;
            h.reason = Some("service nginx: inactive".into());
        }
        if let Probe::Value(b) = &mut after.backups {
            b.band = Band::Amber;
            b.reason = Some("latest backup is 30 h old".into());
        }
        after.sections.systems.stale = true;
        after.stale = true;
        after.stale_reasons = vec!["systems: last collected 12 min ago (>= 10 min)".into()];
        let got = compare(Some(&elements(&before)), &elements(&after), later);
        let said = said(&got);
        use Band::*;
        assert_eq!(
            said,
            [
                (
                    "agent:min",
                    Some(Green),
                    Red,
                    Some("down: connection refused")
                ),
                (
                    "backups",
                    Some(Green),
                    Amber,
                    Some("latest backup is 30 h old")
                ),
                (
                    "board:research/card:t_2",
                    None,
                    Red,
                    Some("crashed (pid 12)")
                ),
                (
                    "host:lab/cron:backup",
                    Some(Green),
                    Amber,
                    Some("5 min late")
                ),
                ("host:lab/service:nginx", Some(Green), Red, Some("inactive")),
                (
                    "host:lab/tunnel:heart",
                    Some(Green),
                    Red,
                    Some("error: no answer within 5s")
                ),
                (
                    "host:lab/vault",
                    Some(Green),
                    Red,
                    Some("3 uncommitted changes")
                ),
                (
                    "section:systems",
                    Some(Green),
                    Red,
                    Some("last collected 12 min ago (>= 10 min)")
                ),
            ]
        );
    }

    /// Was: the cards needing attention that a capped listing left out were no element at all,
    /// so a board with more red cards than the cap alerted for some of them only.
    #[test]
    fn cards_needing_attention_beyond_the_cap_are_one_element_that_alerts_and_recovers() {
        use fleetdash_model::{ColumnCount, LeftOut};
        let (t, later) = (t0(), t0() + Duration::minutes(5));
        let mut before = fleet(t);
        if let Probe::Value(b) = &mut before.tasks.board {
            b.sources[0].columns = vec![ColumnCount {
                column: "running".into(),
                cards: 1,
                left_out: 0,
            }];
        }
        let key = "board:research/unlisted";
        let quiet = elements(&before);
        assert_eq!(
            quiet[key].band,
            Band::Green,
            "present and green: born quietly"
        );
        assert_eq!(quiet[key].reason, None);
        let mut over = before.clone();
        if let Probe::Value(b) = &mut over.tasks.board {
            b.sources[0].attention_left_out = LeftOut { red: 3, amber: 40 };
        }
        let got = compare(Some(&quiet), &elements(&over), later);
        let said: Vec<_> = got
            .iter()
            .map(|t| {
                (
                    t.key.as_str(),
                    t.name.as_str(),
                    t.from,
                    t.to,
                    t.reason.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            said,
            [(
                key,
                "cards of research not listed",
                Some(Band::Green),
                Band::Red,
                Some("3 red and 40 amber cards not listed (over the cap)")
            )]
        );
        let back = compare(Some(&elements(&over)), &quiet, later);
        assert_eq!(
            back.iter().map(|t| (t.from, t.to)).collect::<Vec<_>>(),
            [(Some(Band::Red), Band::Green)],
            "its recovery is a transition"
        );
    }

    /// A host row made only of tunnels before the host's first probe says nothing about the
    /// host, nor a board source the projection job made before the first board read; a
    /// section never collected yet has no element; a section that failed whole is red.
    #[test]
    fn placeholders_and_sections_not_collected_yet_are_not_elements() {
        let now = t0();
        let mut s = fleet(now);
        if let Probe::Value(hosts) = &mut s.systems {
            hosts[0].ram_total_gb = Probe::not_collected();
            hosts[0].band = Band::Red;
        }
        s.sections.backups.checked_at = None;
        s.sections.backups.stale = true;
        s.backups = Probe::not_collected();
        s.agents = Probe::error("the registry cannot be read");
        // The projection job finished before the first board read: its source has no cards yet.
        if let Probe::Value(b) = &mut s.tasks.board {
            b.sources[0].cards = Probe::not_collected();
            b.sources[0].stale = true;
        }
        let got = elements(&s);
        assert!(!got.contains_key("board:research"));
        assert!(!got.contains_key("host:lab"));
        assert!(got.contains_key("host:lab/tunnel:heart"));
        assert!(!got.contains_key("section:backups") && !got.contains_key("backups"));
        let agents = &got["section:agents"];
        assert_eq!(agents.band, Band::Red);
        assert_eq!(
            agents.reason.as_deref(),
            Some("error: the registry cannot be read")
        );
    }
}

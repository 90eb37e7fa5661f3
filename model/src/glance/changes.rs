//! Band changes in words: the last day of them (snapshot.html) and "since you last looked"
//! (the page), from the snapshot's `transitions`, worded once for both.
//!
//! An element is named by its transition's kind and name ("agent min", "service nginx on lab")
//! and linked to its row by the same anchor the glance gives the row, so a change leads to
//! what it is about.

use chrono::{DateTime, Duration, FixedOffset, Utc};

use super::Glance;
use super::parts::{Words, few_words, row_anchor};
use crate::band::Band;
use crate::clock::ClockView;
use crate::snapshot::{Snapshot, Transition};

/// How far back snapshot.html lists changes (the snapshot carries about this much).
pub const RECENT_H: i64 = 24;

/// One band change, worded.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// The band it went into.
    pub band: Band,
    /// "agent min", "task t_01 (min)" as the log names it: kind, then name.
    pub what: String,
    /// "ok → fail", "new → warn".
    pub change: String,
    /// When, as a time of day ("14:02", or "29 Nov 14:02" when not recent).
    pub when: String,
    pub at: DateTime<Utc>,
    /// Why it went there, in a few words; none when it went green.
    pub reason: Option<String>,
    /// The id of the element's row on the page (and in snapshot.html).
    pub anchor: String,
}

/// What changed since the reader last looked: only what changed, each element once, in the
/// glance's current words (what a band change said when it happened is history; the operator
/// acts on what is true now). What was red then and is red now is not a change: Needs you
/// lists it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SinceLooked {
    /// "14:02": the last look, as a time of day.
    pub looked: String,
    /// Went red or amber after the last look and is there now: red first, newest first
    /// within a band, worded as its needs-you line is now.
    pub turned: Vec<Change>,
    /// Went green after the last look and is green now, newest first.
    pub recovered: Vec<Change>,
}

impl SinceLooked {
    pub fn is_empty(&self) -> bool {
        self.turned.is_empty() && self.recovered.is_empty()
    }

    /// Whether the row (or section) at `anchor` turned red or amber since the last look: its
    /// needs-you line is marked "new".
    pub fn is_new(&self, anchor: &str) -> bool {
        self.turned.iter().any(|c| c.anchor == anchor)
    }
}

/// The changes of the last [`RECENT_H`] hours before `now`, newest first.
pub fn recent(s: &Snapshot, now: DateTime<Utc>, offset: FixedOffset) -> Vec<Change> {
    let none = ClockView::default();
    let w = Words {
        now,
        clock: &none,
        offset,
        held: &[],
        acked: &[],
        frozen: false,
    };
    let from = now - Duration::hours(RECENT_H);
    s.transitions
        .iter()
        .filter(|t| t.at >= from)
        .map(|t| change(t, &w))
        .collect()
}

/// What changed since `looked_at` in the snapshot whose glance (at the page's `now`) is
/// `glance`: each element by its latest change (the log records every change, so the latest
/// one says where it went), worded as the glance words it now. A change the glance no longer
/// agrees with (the log says red, the element is green at `now`) is left out: the glance is
/// what is true now.
pub fn since_looked(
    s: &Snapshot,
    glance: &Glance,
    looked_at: DateTime<Utc>,
    offset: FixedOffset,
) -> SinceLooked {
    let w = Words {
        now: s.generated_at.max(looked_at),
        clock: &s.clock,
        offset,
        held: &[],
        acked: &[],
        frozen: false,
    };
    let mut out = SinceLooked {
        looked: w.time(looked_at),
        ..SinceLooked::default()
    };
    let mut red = Vec::new();
    let mut amber = Vec::new();
    // Transitions come newest first: the first one of a key is its latest.
    let mut seen: Vec<&str> = Vec::new();
    for t in &s.transitions {
        if seen.contains(&t.key.as_str()) {
            continue;
        }
        seen.push(&t.key);
        if t.at <= looked_at {
            continue;
        }
        let mut c = change(t, &w);
        if t.to == Band::Green {
            // Another of the row's parts may be red now (a host's other service): then the
            // row did not recover.
            if !glance
                .needs
                .iter()
                .any(|n| n.stands_for.contains(&c.anchor))
                && !out.recovered.iter().any(|r: &Change| r.anchor == c.anchor)
            {
                out.recovered.push(c);
            }
            continue;
        }
        // The line that says it now: its own, or one folding it with others (leading to
        // their cause); the change leads where that line does, said once for all of them.
        let Some(need) = glance
            .needs
            .iter()
            .find(|n| n.stands_for.contains(&c.anchor))
        else {
            continue;
        };
        c.anchor = need.anchor.clone();
        if red
            .iter()
            .chain(&amber)
            .any(|r: &Change| r.anchor == c.anchor)
        {
            continue;
        }
        c.band = need.band;
        c.what = need.what.clone();
        c.reason = (!need.reason.is_empty()).then(|| need.reason.clone());
        match need.band {
            Band::Red => red.push(c),
            _ => amber.push(c),
        }
    }
    out.turned = red.into_iter().chain(amber).collect();
    out
}

fn change(t: &Transition, w: &Words) -> Change {
    let kind = if t.kind == "backups" {
        "backup"
    } else {
        &t.kind
    };
    Change {
        band: t.to,
        what: format!("{kind} {}", t.name),
        change: format!("{} → {}", t.from.map_or("new", Band::word), t.to.word()),
        when: w.time(t.at),
        at: t.at,
        reason: t.reason.as_deref().map(few_words),
        anchor: row_anchor(&t.key, &t.name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    fn utc() -> FixedOffset {
        FixedOffset::east_opt(0).unwrap()
    }

    fn tr(key: &str, kind: &str, name: &str, from: Option<Band>, to: Band, at: &str) -> Transition {
        Transition {
            key: key.into(),
            kind: kind.into(),
            name: name.into(),
            from,
            to,
            at: t(at),
            reason: (to != Band::Green).then(|| format!("{name} is {}", to.word())),
        }
    }

    fn snapshot(transitions: Vec<Transition>) -> Snapshot {
        let mut s = Snapshot::empty(t("2026-11-30T15:00:00Z"), crate::rules::tests::rules());
        s.transitions = transitions;
        s
    }

    fn whats(list: &[Change]) -> Vec<(&str, &str, &str)> {
        list.iter()
            .map(|c| (c.what.as_str(), c.change.as_str(), c.when.as_str()))
            .collect()
    }

    #[test]
    fn since_a_look_each_element_is_placed_by_its_latest_change() {
        use Band::*;
        // Newest first, as status.json carries them.
        let s = snapshot(vec![
            tr(
                "agent:lyra",
                "agent",
                "lyra",
                Some(Green),
                Red,
                "2026-11-30T14:50:00Z",
            ),
            tr(
                "host:lab/service:nginx",
                "service",
                "nginx on lab",
                Some(Red),
                Green,
                "2026-11-30T14:40:00Z",
            ),
            tr(
                "agent:min",
                "agent",
                "min",
                Some(Green),
                Amber,
                "2026-11-30T14:30:00Z",
            ),
            tr(
                "agent:lyra",
                "agent",
                "lyra",
                Some(Red),
                Green,
                "2026-11-30T14:20:00Z",
            ),
            tr(
                "host:lab/service:nginx",
                "service",
                "nginx on lab",
                Some(Green),
                Red,
                "2026-11-30T14:10:00Z",
            ),
            tr(
                "backups",
                "backups",
                "gdrive",
                None,
                Red,
                "2026-11-30T13:00:00Z",
            ),
            tr(
                "agent:lyra",
                "agent",
                "lyra",
                Some(Green),
                Red,
                "2026-11-30T12:00:00Z",
            ),
            tr(
                "host:prod",
                "host",
                "prod",
                Some(Red),
                Green,
                "2026-11-30T11:00:00Z",
            ),
        ]);
        let now = t("2026-11-30T15:00:00Z");
        // What the glance says now: lyra red (in today's words), min amber, gdrive red.
        let mut glance = Glance::new(&s, now, utc());
        glance.needs = vec![
            need(Red, "agent lyra", "down: connection refused", "agent-lyra"),
            need(
                Red,
                "backup gdrive",
                "latest backup 3 d old",
                "backup-gdrive",
            ),
            need(Amber, "agent min", "last exchange 3 h ago", "agent-min"),
        ];
        let seen = since_looked(&s, &glance, t("2026-11-30T14:00:00Z"), utc());
        assert_eq!(seen.looked, "14:00");
        let lines: Vec<(&str, Option<&str>, &str)> = seen
            .turned
            .iter()
            .map(|c| (c.what.as_str(), c.reason.as_deref(), c.when.as_str()))
            .collect();
        // Red first, in the glance's current words, not the log's of the time.
        assert_eq!(
            lines,
            [
                ("agent lyra", Some("down: connection refused"), "14:50"),
                ("agent min", Some("last exchange 3 h ago"), "14:30"),
            ]
        );
        assert_eq!(
            whats(&seen.recovered),
            [("service nginx on lab", "fail → ok", "14:40")]
        );
        assert_eq!(seen.recovered[0].anchor, "host-lab");
        // Red before the look and never changed since: not a change (Needs you lists it).
        assert!(!seen.is_new("backup-gdrive") && seen.is_new("agent-lyra"));

        // A look after everything: nothing changed.
        let later = since_looked(&s, &glance, now, utc());
        assert!(later.is_empty());

        // The log says min went amber, but the glance says it is green now: left out.
        glance.needs.truncate(2);
        let seen = since_looked(&s, &glance, t("2026-11-30T14:00:00Z"), utc());
        assert_eq!(seen.turned.len(), 1);
    }

    fn need(band: Band, what: &str, reason: &str, anchor: &str) -> super::super::Need {
        super::super::Need {
            anchor: anchor.into(),
            stands_for: vec![anchor.into()],
            ..super::super::Need::new(
                band,
                super::super::types::Kind::Agent,
                what.into(),
                reason.into(),
            )
        }
    }

    #[test]
    fn recent_keeps_the_last_day_newest_first_in_the_readers_zone() {
        use Band::*;
        let s = snapshot(vec![
            tr(
                "board:ops/card:c1",
                "card",
                "Prune",
                Some(Green),
                Red,
                "2026-11-30T14:50:00Z",
            ),
            tr(
                "section:tasks.live",
                "section",
                "tasks.live",
                Some(Green),
                Red,
                "2026-11-30T09:00:00Z",
            ),
            tr(
                "task:min/t1",
                "task",
                "t1 (min)",
                None,
                Amber,
                "2026-11-29T14:00:00Z",
            ),
        ]);
        let plus_two = FixedOffset::east_opt(2 * 3600).unwrap();
        let list = recent(&s, t("2026-11-30T15:00:00Z"), plus_two);
        assert_eq!(
            whats(&list),
            [
                ("card Prune", "ok → fail", "16:50"),
                ("section tasks.live", "ok → fail", "11:00")
            ]
        );
        assert_eq!(list[0].anchor, "card-ops-c1");
        assert_eq!(list[1].anchor, "live");
        assert_eq!(row_anchor("task:min/t1", "t1"), "task-min-t1");
        assert_eq!(row_anchor("queue:q_7", "Rotate"), "queue-q_7");
    }
}

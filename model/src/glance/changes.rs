//! Band changes in words: the last day of them (snapshot.html) and "since you last looked"
//! (the page), from the snapshot's `transitions`, worded once for both.
//!
//! An element is named by its transition's kind and name ("agent min", "service nginx on lab")
//! and linked to its row by the same anchor the glance gives the row, so a change leads to
//! what it is about.

use chrono::{DateTime, Duration, FixedOffset, Utc};

use super::parts::{Words, anchor, few_words};
use crate::band::Band;
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

/// What changed since the reader last looked, each element once, by where it is now.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SinceLooked {
    /// "14:02": the last look, as a time of day.
    pub looked: String,
    /// Went red after the last look and is red now.
    pub turned_red: Vec<Change>,
    /// Went amber after the last look and is amber now.
    pub turned_amber: Vec<Change>,
    /// Went green after the last look (from red or amber).
    pub recovered: Vec<Change>,
    /// Red already at the last look and still red: its change is the one into red.
    pub still_red: Vec<Change>,
}

impl SinceLooked {
    pub fn is_empty(&self) -> bool {
        self.turned_red.is_empty()
            && self.turned_amber.is_empty()
            && self.recovered.is_empty()
            && self.still_red.is_empty()
    }
}

/// The changes of the last [`RECENT_H`] hours before `now`, newest first.
pub fn recent(s: &Snapshot, now: DateTime<Utc>, offset: FixedOffset) -> Vec<Change> {
    let w = Words {
        now,
        offset,
        held: &[],
    };
    let from = now - Duration::hours(RECENT_H);
    s.transitions
        .iter()
        .filter(|t| t.at >= from)
        .map(|t| change(t, &w))
        .collect()
}

/// What changed since `looked_at`, as of `now`: each element by its latest change (the log
/// records every change, so the latest one says where the element is now).
pub fn since_looked(
    s: &Snapshot,
    looked_at: DateTime<Utc>,
    now: DateTime<Utc>,
    offset: FixedOffset,
) -> SinceLooked {
    let w = Words {
        now,
        offset,
        held: &[],
    };
    let mut out = SinceLooked {
        looked: w.time(looked_at),
        ..SinceLooked::default()
    };
    // Transitions come newest first: the first one of a key is its latest.
    let mut seen: Vec<&str> = Vec::new();
    for t in &s.transitions {
        if seen.contains(&t.key.as_str()) {
            continue;
        }
        seen.push(&t.key);
        let list = match (t.at > looked_at, t.to) {
            (true, Band::Red) => &mut out.turned_red,
            (true, Band::Amber) => &mut out.turned_amber,
            (true, Band::Green) => &mut out.recovered,
            (false, Band::Red) => &mut out.still_red,
            (false, _) => continue,
        };
        list.push(change(t, &w));
    }
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

/// The row a transition's key is about: `agent:min` → the agent's row, a host's check → the
/// host's row, a card → its card row, a section → the section.
fn row_anchor(key: &str, name: &str) -> String {
    let (head, rest) = key.split_once('/').unwrap_or((key, ""));
    let (kind, id) = head.split_once(':').unwrap_or((head, ""));
    match kind {
        "agent" => anchor("agent", id),
        "queue" => anchor("queue", id),
        "task" => anchor("task", &format!("{id}-{rest}")),
        "board" => match rest.strip_prefix("card:") {
            Some(card) => anchor("card", &format!("{id}-{card}")),
            None => anchor("board", id),
        },
        "host" => anchor("host", id),
        "backups" => anchor("backup", name),
        "section" => match id {
            "tasks.board" => "board".into(),
            "tasks.live" => "live".into(),
            other => other.into(),
        },
        _ => anchor(kind, id),
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
        let seen = since_looked(&s, t("2026-11-30T14:00:00Z"), now, utc());
        assert_eq!(seen.looked, "14:00");
        assert_eq!(
            whats(&seen.turned_red),
            [("agent lyra", "ok → fail", "14:50")]
        );
        assert_eq!(
            whats(&seen.turned_amber),
            [("agent min", "ok → warn", "14:30")]
        );
        assert_eq!(
            whats(&seen.recovered),
            [("service nginx on lab", "fail → ok", "14:40")]
        );
        // Red before the look and never changed since; prod recovered before the look: quiet.
        assert_eq!(
            whats(&seen.still_red),
            [("backup gdrive", "new → fail", "13:00")]
        );
        assert_eq!(seen.recovered[0].reason, None);
        assert_eq!(seen.turned_red[0].reason.as_deref(), Some("lyra is fail"));
        assert_eq!(seen.recovered[0].anchor, "host-lab");
        assert_eq!(seen.still_red[0].anchor, "backup-gdrive");

        // A look after everything: only what is still red.
        let later = since_looked(&s, now, now, utc());
        assert!(later.turned_red.is_empty() && later.recovered.is_empty());
        assert_eq!(
            whats(&later.still_red),
            [
                ("agent lyra", "ok → fail", "14:50"),
                ("backup gdrive", "new → fail", "13:00")
            ]
        );
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

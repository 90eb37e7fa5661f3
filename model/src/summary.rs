//! The verdict's counts (how many things are red, amber, green) and whether the snapshot itself
//! can be trusted. [`crate::Glance`] words both for the page and the static fallback alike.

use chrono::{DateTime, Utc};

use crate::band::Band;
use crate::probe::Probe;
use crate::queue::QueueLimits;
use crate::snapshot::{Backups, BoardSource, LiveTask, Snapshot, System};
use crate::words::{human_age, seconds_since, thousands};

/// Counts of elements per band across every section.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Verdict {
    pub red: usize,
    pub amber: usize,
    pub green: usize,
}

impl Verdict {
    /// Counts one element of `band`.
    pub(crate) fn add(&mut self, band: Band) {
        self.add_n(band, 1);
    }

    /// Counts `n` elements of `band` (a lot not listed one by one).
    pub(crate) fn add_n(&mut self, band: Band, n: usize) {
        match band {
            Band::Red => self.red += n,
            Band::Amber => self.amber += n,
            Band::Green => self.green += n,
        }
    }

    pub fn worst(&self) -> Band {
        if self.red > 0 {
            Band::Red
        } else if self.amber > 0 {
            Band::Amber
        } else {
            Band::Green
        }
    }

    /// "all green (11)", "2 red · 1 amber · 8 green".
    pub fn sentence(&self) -> String {
        if self.red == 0 && self.amber == 0 && self.green == 0 {
            return "nothing collected yet".into();
        }
        let n = |n: usize| thousands(n as u64);
        if self.red == 0 && self.amber == 0 {
            return format!("all green ({})", n(self.green));
        }
        let mut parts = Vec::new();
        if self.red > 0 {
            parts.push(format!("{} red", n(self.red)));
        }
        if self.amber > 0 {
            parts.push(format!("{} amber", n(self.amber)));
        }
        parts.push(format!("{} green", n(self.green)));
        parts.join(" · ")
    }
}

impl Snapshot {
    /// Every element's band as of the snapshot's own time, counted. A configured section that
    /// failed as a whole counts red.
    pub fn verdict(&self) -> Verdict {
        self.verdict_at(self.generated_at)
    }

    /// Every element's band at `now`, counted: live tasks that crossed the stuck rule since
    /// their poll count red (and queue tasks whose ACK or deadline passed), as [`crate::Glance`] shows them.
    pub fn verdict_at(&self, now: DateTime<Utc>) -> Verdict {
        let mut v = Verdict::default();
        let section_failed = |configured: bool, failed: bool, v: &mut Verdict| {
            if configured && failed {
                v.add(Band::Red);
            }
        };
        match &self.agents {
            Probe::Value(rows) => rows.iter().for_each(|a| v.add(a.band)),
            other => section_failed(self.sections.agents.configured, other.is_error(), &mut v),
        }
        match &self.tasks.live {
            Probe::Value(tasks) => tasks
                .iter()
                .for_each(|t| v.add(t.band_at(self.rules.no_reply_s, now, &self.clock))),
            other => section_failed(
                self.sections.live_tasks.configured,
                other.is_error(),
                &mut v,
            ),
        }
        match &self.tasks.queue {
            Probe::Value(tasks) => {
                tasks
                    .iter()
                    .for_each(|t| v.add(t.judge(QueueLimits::of(&self.rules), now, &self.clock).0));
                // A row that cannot be read is red on its own.
                self.tasks
                    .queue_unreadable
                    .iter()
                    .for_each(|t| v.add(t.band));
            }
            other => section_failed(self.sections.queue.configured, other.is_error(), &mut v),
        }
        match &self.tasks.board {
            Probe::Value(board) => {
                board.cards.iter().for_each(|c| v.add(c.judged()));
                board
                    .sources
                    .iter()
                    .filter(|s| s.band() == Band::Red)
                    .for_each(|_| v.add(Band::Red));
                // The cards the listing leaves out count as well: green, unless they are the
                // cards needing attention that passed the cap.
                for s in &board.sources {
                    let (red, amber) = (s.attention_left_out.red, s.attention_left_out.amber);
                    v.add_n(Band::Red, red as usize);
                    v.add_n(Band::Amber, amber as usize);
                    let green = s
                        .left_out()
                        .saturating_sub(u64::from(red) + u64::from(amber));
                    v.add_n(Band::Green, green as usize);
                }
            }
            other => section_failed(self.sections.board.configured, other.is_error(), &mut v),
        }
        match &self.systems {
            Probe::Value(hosts) => hosts.iter().for_each(|h| v.add(h.band())),
            other => section_failed(self.sections.systems.configured, other.is_error(), &mut v),
        }
        match &self.backups {
            Probe::Value(b) => v.add(b.band()),
            other => section_failed(self.sections.backups.configured, other.is_error(), &mut v),
        }
        // An alert channel is an element of the Systems panel while alerting is configured.
        if self.alerts.configured {
            self.alerts.channels.iter().for_each(|c| v.add(c.band()));
        }
        // A state file moved aside is amber until its copy is removed.
        self.set_aside.iter().for_each(|_| v.add(Band::Amber));
        // This host's clock, while a jump of it is shown (issue 31).
        if self.clock.band() != Band::Green {
            v.add(self.clock.band());
        }
        v
    }

    /// Seconds between `generated_at` and `now` (0 if the clocks disagree the other way).
    pub fn age_s(&self, now: DateTime<Utc>) -> u64 {
        seconds_since(self.generated_at, now)
    }

    /// Why this snapshot should not be trusted at `now`, if it should not: too old, stale, or
    /// stamped ahead of the clock reading it (its age cannot be told: the clock of the host
    /// that wrote it stepped back since, and its collector may have stopped).
    pub fn staleness(&self, now: DateTime<Utc>) -> Option<String> {
        let age = self.age_s(now);
        let limit = self.rules.snapshot_stale_after_s;
        let mut reasons = Vec::new();
        let ahead = seconds_since(now, self.generated_at);
        if self.rules.clock_step_s > 0 && ahead >= self.rules.clock_step_s {
            reasons.push(format!(
                "snapshot stamped {} ahead of the clock: the hub's clock stepped back, so its \
                 age cannot be told",
                human_age(ahead)
            ));
        } else if age >= limit {
            reasons.push(format!(
                "snapshot is {} old (limit {}): the collector may have stopped",
                human_age(age),
                human_age(limit)
            ));
        }
        if self.stale {
            reasons.extend(self.stale_reasons.iter().cloned());
            if self.stale_reasons.is_empty() {
                reasons.push("the collector marked this snapshot stale".into());
            }
        }
        (!reasons.is_empty()).then(|| reasons.join("; "))
    }
}

impl LiveTask {
    /// Red when stuck, unreadable, or ended in failure: a task that stops is a state with a
    /// cause, never a quiet absence.
    pub fn band(&self) -> Band {
        let failed = matches!(
            self.state.value().map(String::as_str),
            Some("TASK_STATE_FAILED" | "TASK_STATE_REJECTED")
        );
        if self.stuck || self.state.is_error() || self.stale || failed {
            Band::Red
        } else {
            Band::Green
        }
    }
}

impl BoardSource {
    /// Red when the board could not be read or its projection failed or was refused.
    pub fn band(&self) -> Band {
        if self.stale || self.cards.is_error() || self.projection.is_error() {
            Band::Red
        } else {
            Band::Green
        }
    }
}

impl System {
    /// The stored band, red as well when the row is stale.
    pub fn band(&self) -> Band {
        if self.stale { Band::Red } else { self.band }
    }
}

impl Backups {
    pub fn band(&self) -> Band {
        if self.stale { Band::Red } else { self.band }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Agent, Asc};

    /// The tests' clock: one fixed moment, so that no outcome depends on the day they run.
    fn fixed_now() -> chrono::DateTime<chrono::Utc> {
        "2026-11-30T12:00:00Z".parse().expect("an RFC 3339 instant")
    }

    fn snapshot(bands: &[Band]) -> Snapshot {
        let now = fixed_now();
        let mut s = Snapshot::empty(now, crate::rules::tests::rules());
        s.stale = false;
        s.sections.agents.configured = true;
        s.agents = Probe::Value(
            bands
                .iter()
                .enumerate()
                .map(|(i, b)| Agent {
                    name: format!("a{i}"),
                    endpoint: String::new(),
                    plane: None,
                    up: true,
                    last_exchange_s: Probe::Value(1),
                    exchange_band: *b,
                    skills_count: Probe::Value(1),
                    lane: Probe::Unknown,
                    model: Probe::Unknown,
                    window: Probe::Unknown,
                    heartbeat: Probe::Unknown,
                    band: *b,
                    status: Asc::SUCCESS,
                    reason: None,
                    audit_skipped_lines: 0,
                    last_report_s: None,
                    history: None,
                    checked_at: now,
                    stale: false,
                })
                .collect(),
        );
        s
    }

    #[test]
    fn the_verdict_counts_every_band() {
        let s = snapshot(&[Band::Green, Band::Red, Band::Amber, Band::Green]);
        let v = s.verdict();
        assert_eq!((v.red, v.amber, v.green), (1, 1, 2));
        assert_eq!(v.sentence(), "1 red · 1 amber · 2 green");
        assert_eq!(v.worst(), Band::Red);
        assert_eq!(
            snapshot(&[Band::Green]).verdict().sentence(),
            "all green (1)"
        );
    }

    #[test]
    fn a_configured_section_that_failed_counts_red() {
        let mut s = snapshot(&[]);
        s.agents = Probe::error("not collected");
        assert_eq!(s.verdict().red, 1);
        s.sections.agents.configured = false;
        assert_eq!(s.verdict().red, 0);
    }

    #[test]
    fn staleness_is_judged_by_the_rules_limit() {
        let s = snapshot(&[Band::Green]);
        let at = s.generated_at;
        assert_eq!(s.staleness(at + chrono::Duration::seconds(599)), None);
        let old = s.staleness(at + chrono::Duration::seconds(720)).unwrap();
        assert_eq!(
            old,
            "snapshot is 12 min old (limit 10 min): the collector may have stopped"
        );
        let mut marked = s.clone();
        marked.stale = true;
        marked.stale_reasons = vec!["agents: not collected yet".into()];
        assert_eq!(marked.staleness(at).unwrap(), "agents: not collected yet");
    }

    /// After the hub's clock stepped back, a snapshot written before the step is stamped ahead
    /// of the clock reading it: never fresh, whatever the size of the step (issue 31).
    #[test]
    fn a_snapshot_stamped_ahead_of_the_clock_is_not_trusted() {
        let s = snapshot(&[Band::Green]);
        let at = s.generated_at;
        let step = s.rules.clock_step_s as i64;
        // Within a step: the slack of a `Date` header's whole seconds.
        assert_eq!(s.staleness(at - chrono::Duration::seconds(step - 1)), None);
        let back = s.staleness(at - chrono::Duration::hours(1)).unwrap();
        assert_eq!(
            back,
            "snapshot stamped 1 h ahead of the clock: the hub's clock stepped back, so its age \
             cannot be told"
        );
    }
}

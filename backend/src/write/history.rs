//! The bounded 24 h history behind every agent's and host's strip and uptime.
//!
//! [`HistoryStore`] keeps, per tracked key, the samples of the last 24 hours in time buckets of
//! [`BUCKET_S`] (15 min): at most [`BUCKETS`] (96) buckets of `(start, up, down)` per key, so
//! `<state_dir>/history.json` grows with the number of configured things only, never with the
//! cadence or how long the collector has run. A key that has not been sampled for 24 hours is
//! dropped, so a removed agent disappears.
//!
//! Keys: `agent:<name>`, `host:<name>`, and per host `host:<name>/service:<n>`,
//! `host:<name>/tunnel:<n>`, `host:<name>/cron:<n>`, `host:<name>/vault`.
//!
//! What is up: an agent that answers (`agent.up`); a host whose band is not red (a stale host
//! is red); a service or tunnel whose `ok` is `true`; a cron that is not down; a vault in
//! parity (a host without a vault is not tracked). A host row made only of tunnels, before the
//! host's first probe, samples its tunnels but not the host.
//!
//! The writer samples only what a write collected ([`Samples::of`]), one sample per key and
//! write by construction (the samples are a map by key, consumed by [`HistoryStore::record`]),
//! and annotates every row of the merged snapshot ([`HistoryStore::annotate`]). Every function
//! takes `now`, so tests drive the clock.
//!
//! It lives with the writers because it puts `history.json` on disk: atomically, and through
//! the redaction gate like every other file fleetdash writes. Its keys are element keys, never
//! secrets, so the gate changes no byte; it is the wall should a secret-shaped name turn up.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use chrono::{DateTime, Utc};
use fleetdash_model::{CronState, History, NOT_COLLECTED, Probe, Snapshot};
use serde::{Deserialize, Serialize};

use super::{atomic, state_file};
use crate::collect::{SectionData, SectionUpdate};
use crate::redact::RedactionGate;

pub const FILE_NAME: &str = "history.json";

/// Width of one bucket of samples.
pub const BUCKET_S: i64 = 15 * 60;
/// Buckets kept per key: 24 hours.
pub const BUCKETS: usize = 96;
/// Width of one character of the strip: two buckets.
pub const SLOT_S: i64 = 30 * 60;
/// Characters in the strip: 24 hours.
pub const SLOTS: usize = 48;
/// A key not sampled for this long is dropped.
const FORGET_AFTER_S: i64 = 24 * 3600;
/// Bumped when the file's layout changes; another version is replaced, like a corrupt file.
const VERSION: u32 = 1;

/// One key's buckets, oldest first, at most [`BUCKETS`], all inside the window.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Series {
    /// Unix seconds of the key's first sample (kept until the key is forgotten), so the
    /// uptime can say its span until the samples cover the strip. Files written before it
    /// existed read as the start of their oldest bucket.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    first: Option<i64>,
    /// Unix seconds of the newest sample.
    last: i64,
    /// `[start, up, down]` each, oldest first.
    buckets: Vec<(i64, u32, u32)>,
}

#[derive(Debug, Serialize, Deserialize)]
struct File {
    version: u32,
    bucket_s: i64,
    series: BTreeMap<String, Series>,
}

/// [`File`] without a copy of its series, for writing.
#[derive(Serialize)]
struct FileRef<'a> {
    version: u32,
    bucket_s: i64,
    series: &'a BTreeMap<String, Series>,
}

impl state_file::StateFile for File {
    const WHAT: &'static str = "history";

    fn layout_problem(&self) -> Option<String> {
        (self.version != VERSION || self.bucket_s != BUCKET_S).then(|| {
            format!(
                "another layout (version {}, bucket {} s; this build writes version {VERSION}, \
                 bucket {BUCKET_S} s)",
                self.version, self.bucket_s
            )
        })
    }
}

/// The history of every tracked key, loaded from and saved to `<state_dir>/history.json`.
#[derive(Debug)]
pub struct HistoryStore {
    path: PathBuf,
    gate: RedactionGate,
    series: BTreeMap<String, Series>,
}

/// The first second counted at `now`: the start of the oldest of the [`SLOTS`] strip slots
/// that end with the slot holding `now`. Strip and uptime count the same buckets.
fn window_start(now: i64) -> i64 {
    (now.div_euclid(SLOT_S) - (SLOTS as i64 - 1)) * SLOT_S
}

impl Series {
    /// Drops buckets outside `[window_start(now), now]` (a clock that went back leaves
    /// buckets "from the future"; they are dropped too), which keeps at most [`BUCKETS`].
    fn prune(&mut self, now: i64) {
        let from = window_start(now);
        self.buckets
            .retain(|&(start, _, _)| start >= from && start <= now);
        self.buckets.sort_by_key(|b| b.0);
        self.buckets.dedup_by_key(|b| b.0);
        let extra = self.buckets.len().saturating_sub(BUCKETS);
        self.buckets.drain(..extra);
    }

    fn record(&mut self, up: bool, now: i64) {
        self.prune(now);
        let start = now.div_euclid(BUCKET_S) * BUCKET_S;
        // Buckets are in order and none is newer than `now`: the current one is last, or new.
        if self.buckets.last().is_none_or(|b| b.0 != start) {
            self.buckets.push((start, 0, 0));
        }
        // A clock that went back moves the first sample with it: never after a sample.
        self.first = Some(self.first.map_or(now, |first| first.min(now)));
        let bucket = self.buckets.last_mut().expect("pushed just above");
        if up {
            bucket.1 = bucket.1.saturating_add(1);
        } else {
            bucket.2 = bucket.2.saturating_add(1);
        }
        self.last = now;
    }

    fn history(&self, now: i64) -> History {
        let from = window_start(now);
        let mut slots = [(0u64, 0u64); SLOTS];
        let (mut up, mut down) = (0u64, 0u64);
        for &(start, u, d) in &self.buckets {
            if start < from || start > now {
                continue;
            }
            let slot = usize::try_from((start - from) / SLOT_S).unwrap_or(SLOTS);
            if let Some(s) = slots.get_mut(slot) {
                s.0 += u64::from(u);
                s.1 += u64::from(d);
                up += u64::from(u);
                down += u64::from(d);
            }
        }
        let strip = slots
            .iter()
            .map(|&(u, d)| match (u > 0, d > 0) {
                (true, false) => 'u',
                (false, true) => 'd',
                (true, true) => 'p',
                (false, false) => '.',
            })
            .collect();
        let total = up + down;
        let first = self.first.or(self.buckets.first().map(|b| b.0));
        History {
            uptime_24h_pct: (total > 0).then(|| (up as f64 * 1000.0 / total as f64).round() / 10.0),
            strip,
            slot_s: SLOT_S as u64,
            samples: u32::try_from(total).unwrap_or(u32::MAX),
            // Sampling began after the strip's first slot did: the uptime covers only since.
            since: first
                .filter(|&first| total > 0 && first > from)
                .and_then(|first| DateTime::from_timestamp(first, 0)),
        }
    }
}

/// An empty history: no sample in the window, every slot `.`.
pub fn empty_history() -> History {
    Series::default().history(0)
}

/// What one write observed: one up/down per key. Built from the write's updates and the merged
/// snapshot; a map, so each key is sampled at most once per write.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Samples(BTreeMap<String, bool>);

/// What a write's updates collected: agents, and per host its own facts and/or its tunnels.
#[derive(Debug, Default)]
pub struct Collected {
    agents: bool,
    /// Host name to (facts were probed, tunnels were probed).
    hosts: BTreeMap<String, (bool, bool)>,
}

impl Collected {
    /// Reads the updates before they are merged: only their sections are sampled. Writes of
    /// other sections (board, live tasks, projections, backups) sample nothing, or a host
    /// would be counted once per write of any section.
    pub fn of(updates: &[SectionUpdate]) -> Collected {
        let mut c = Collected::default();
        for u in updates {
            match &u.data {
                SectionData::Agents(_) => c.agents = true,
                SectionData::Systems(rows) => {
                    for r in rows {
                        c.hosts.entry(r.host.clone()).or_default().0 = true;
                    }
                }
                SectionData::Tunnels(hosts) => {
                    for h in hosts {
                        c.hosts.entry(h.host.clone()).or_default().1 = true;
                    }
                }
                SectionData::Board { .. }
                | SectionData::LiveTasks(_)
                | SectionData::Queue(_)
                | SectionData::Projections(_)
                | SectionData::Backups(_) => {}
            }
        }
        c
    }
}

impl Samples {
    /// The samples of the collected elements, judged on the merged rows.
    pub fn of(collected: &Collected, snap: &Snapshot) -> Samples {
        let mut s = BTreeMap::new();
        if collected.agents
            && let Probe::Value(rows) = &snap.agents
        {
            for a in rows {
                s.insert(format!("agent:{}", a.name), a.up);
            }
        }
        if let Probe::Value(hosts) = &snap.systems {
            for h in hosts {
                let Some(&(facts, tunnels)) = collected.hosts.get(&h.host) else {
                    continue;
                };
                let key = format!("host:{}", h.host);
                // Tunnels merged before the host's first probe make a placeholder row ("not
                // collected"): that says nothing about the host yet, only about its tunnels.
                let placeholder = h.ram_total_gb.error_reason() == Some(NOT_COLLECTED);
                if facts || !placeholder {
                    s.insert(key.clone(), h.band() != fleetdash_model::Band::Red);
                }
                if facts {
                    for c in &h.services {
                        s.insert(
                            format!("{key}/service:{}", c.name),
                            c.ok == Probe::Value(true),
                        );
                    }
                    for c in &h.crons {
                        s.insert(format!("{key}/cron:{}", c.name), c.state != CronState::Down);
                    }
                    match &h.vault_parity {
                        Probe::Unknown => {}
                        p => {
                            s.insert(format!("{key}/vault"), *p == Probe::Value(true));
                        }
                    }
                }
                if tunnels {
                    for c in &h.tunnels {
                        s.insert(
                            format!("{key}/tunnel:{}", c.name),
                            c.ok == Probe::Value(true),
                        );
                    }
                }
            }
        }
        Samples(s)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn get(&self, key: &str) -> Option<bool> {
        self.0.get(key).copied()
    }
}

impl HistoryStore {
    /// An empty store that will be saved to `<state_dir>/history.json` through `gate`.
    pub fn new(state_dir: &Path, gate: RedactionGate) -> HistoryStore {
        HistoryStore {
            path: state_dir.join(FILE_NAME),
            gate,
            series: BTreeMap::new(),
        }
    }

    /// The store on disk, pruned as of `now`. A missing file is an empty store; a corrupt or
    /// other-layout file is moved aside and said ([`state_file`]: the page says so until the
    /// copy is removed), an unreadable one logged with its path; either way the store starts
    /// empty: losing a day of strips is not worth failing a snapshot write over.
    pub fn load(state_dir: &Path, gate: RedactionGate, now: DateTime<Utc>) -> HistoryStore {
        let mut store = HistoryStore::new(state_dir, gate);
        if let state_file::Loaded::Found(f) = state_file::load::<File>(&store.path, now) {
            store.series = f.series;
            store.prune(now);
        }
        store
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Keys currently tracked.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.series.keys().map(String::as_str)
    }

    /// Drops buckets outside the window and keys not sampled for 24 hours.
    fn prune(&mut self, now: DateTime<Utc>) {
        let now = now.timestamp();
        self.series.retain(|_, s| {
            s.prune(now);
            now - s.last < FORGET_AFTER_S
        });
    }

    /// Counts one sample per key at `now`. Takes the samples by value: one write's samples
    /// cannot be recorded twice.
    pub fn record(&mut self, samples: Samples, now: DateTime<Utc>) {
        for (key, up) in samples.0 {
            self.record_one(&key, up, now);
        }
        self.prune(now);
    }

    fn record_one(&mut self, key: &str, up: bool, now: DateTime<Utc>) {
        self.series
            .entry(key.to_string())
            .or_default()
            .record(up, now.timestamp());
    }

    /// The last 24 hours of `key` at `now`: every slot `.` and no uptime when never sampled.
    pub fn history(&self, key: &str, now: DateTime<Utc>) -> History {
        self.series
            .get(key)
            .map_or_else(empty_history, |s| s.history(now.timestamp()))
    }

    /// Sets the history of every agent and host row and the uptime of every host check.
    pub fn annotate(&self, snap: &mut Snapshot, now: DateTime<Utc>) {
        if let Probe::Value(rows) = &mut snap.agents {
            for a in rows {
                a.history = Some(self.history(&format!("agent:{}", a.name), now));
            }
        }
        if let Probe::Value(hosts) = &mut snap.systems {
            for h in hosts {
                let key = format!("host:{}", h.host);
                h.history = Some(self.history(&key, now));
                for c in &mut h.services {
                    c.uptime_24h_pct = self
                        .history(&format!("{key}/service:{}", c.name), now)
                        .uptime_24h_pct;
                }
                for c in &mut h.tunnels {
                    c.uptime_24h_pct = self
                        .history(&format!("{key}/tunnel:{}", c.name), now)
                        .uptime_24h_pct;
                }
                for c in &mut h.crons {
                    c.uptime_24h_pct = self
                        .history(&format!("{key}/cron:{}", c.name), now)
                        .uptime_24h_pct;
                }
            }
        }
    }

    /// The file's bytes: compact JSON, every string (the keys) passed through the gate.
    fn to_bytes(&self) -> Result<Vec<u8>> {
        // The file's only text is its keys: they pass the gate, and the buckets (numbers) are
        // written straight from the store (a JSON tree of a day of buckets, built to be gated
        // whole, cost more than the rest of the write).
        let gated: BTreeMap<String, Series>;
        let series = if self.series.keys().all(|k| self.gate.is_clean(k)) {
            &self.series
        } else {
            gated = self
                .series
                .iter()
                .map(|(k, s)| (self.gate.redact_str(k).into_owned(), s.clone()))
                .collect();
            &gated
        };
        let file = FileRef {
            version: VERSION,
            bucket_s: BUCKET_S,
            series,
        };
        serde_json::to_vec(&file).context("cannot serialise the history")
    }

    /// Replaces `history.json` atomically.
    pub fn save(&self) -> Result<()> {
        atomic::write(&self.path, &self.to_bytes()?)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::config::fleet_rules;
    use crate::logging::logs_of;
    use chrono::{Duration, TimeZone};

    use crate::collect::tunnels::HostTunnels;
    use fleetdash_model::{Agent, Asc, Band, CronCheck, NamedCheck, Snapshot, System};

    /// A fixed, slot-aligned start: 2026-11-30 00:00:00 UTC.
    fn t0() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 30, 0, 0, 0).unwrap()
    }

    fn samples(pairs: &[(&str, bool)]) -> Samples {
        Samples(pairs.iter().map(|(k, u)| (k.to_string(), *u)).collect())
    }

    fn store() -> (tempfile::TempDir, HistoryStore) {
        let dir = tempfile::tempdir().unwrap();
        let s = HistoryStore::new(dir.path(), RedactionGate::default());
        (dir, s)
    }

    #[test]
    fn three_up_and_one_down_is_75_percent() {
        let (_d, mut s) = store();
        let now = t0();
        for (i, up) in [true, true, true, false].into_iter().enumerate() {
            s.record(
                samples(&[("agent:a", up)]),
                now + Duration::minutes(2 * i as i64),
            );
        }
        let h = s.history("agent:a", now + Duration::minutes(10));
        assert_eq!(h.uptime_24h_pct, Some(75.0));
        assert_eq!(h.samples, 4);
        assert_eq!(h.slot_s, 1800);
        // Rounded to one decimal.
        s.record(samples(&[("agent:a", true)]), now + Duration::minutes(11));
        s.record(samples(&[("agent:a", true)]), now + Duration::minutes(12));
        assert_eq!(
            s.history("agent:a", now + Duration::minutes(12))
                .uptime_24h_pct,
            Some(83.3)
        );
    }

    #[test]
    fn the_uptime_says_since_when_until_the_samples_span_the_strip() {
        let (dir, mut s) = store();
        let first = t0() + Duration::hours(15) + Duration::minutes(15) + Duration::seconds(7);
        for i in 0..38 {
            s.record(
                samples(&[("agent:a", true)]),
                first + Duration::minutes(2 * i),
            );
        }
        let now = first + Duration::minutes(2 * 37);
        let h = s.history("agent:a", now);
        assert_eq!(h.since, DateTime::from_timestamp(first.timestamp(), 0));
        assert_eq!(h.samples, 38);
        assert_eq!(
            h.uptime_words(),
            "uptime 100.0 % since 15:15 UTC, 38 samples"
        );

        // Sampled every 2 minutes on: the claim stays "since" until the first sample lies
        // before the strip's first slot, then it is a 24 h figure.
        let mut at = now;
        let mut last_since = now;
        while s.history("agent:a", at).since.is_some() {
            last_since = at;
            at += Duration::minutes(2);
            s.record(samples(&[("agent:a", true)]), at);
        }
        assert_eq!(
            window_start(last_since.timestamp()),
            t0().timestamp() + 15 * 3600
        );
        assert!(window_start(at.timestamp()) > first.timestamp());
        assert_eq!(
            s.history("agent:a", at).uptime_words(),
            "24 h uptime 100.0 %"
        );

        // The first sample survives the file; a file written before it existed reads the
        // start of its oldest bucket.
        let young = first + Duration::minutes(10);
        let mut fresh = HistoryStore::new(dir.path(), RedactionGate::default());
        fresh.record(samples(&[("agent:b", true)]), first);
        fresh.save().unwrap();
        let back = HistoryStore::load(dir.path(), RedactionGate::default(), young);
        assert_eq!(
            back.history("agent:b", young).since,
            DateTime::from_timestamp(first.timestamp(), 0)
        );
        let text = std::fs::read_to_string(fresh.path()).unwrap();
        let old = text.replace(&format!("\"first\":{},", first.timestamp()), "");
        assert_ne!(old, text, "{text}");
        std::fs::write(fresh.path(), old).unwrap();
        let back = HistoryStore::load(dir.path(), RedactionGate::default(), young);
        let bucket_start = first.timestamp().div_euclid(BUCKET_S) * BUCKET_S;
        assert_eq!(
            back.history("agent:b", young).since,
            DateTime::from_timestamp(bucket_start, 0)
        );
    }

    #[test]
    fn strip_chars_say_all_up_all_down_mixed_and_empty_oldest_first() {
        let (_d, mut s) = store();
        let now = t0() + Duration::hours(24);
        // Slot 0 (oldest) all up, slot 1 all down, slot 2 mixed, slot 3 empty; the newest
        // slot (the one holding `now`) up.
        let oldest = t0() + Duration::minutes(30);
        for (offset_min, up) in [(0, true), (20, true), (30, false), (60, true), (75, false)] {
            s.record(
                samples(&[("k", up)]),
                oldest + Duration::minutes(offset_min),
            );
        }
        s.record(samples(&[("k", true)]), now);
        let h = s.history("k", now);
        assert_eq!(h.strip.chars().count(), SLOTS);
        assert_eq!(&h.strip[..4], "udp.");
        assert!(h.strip.ends_with('u'), "{}", h.strip);
        assert_eq!(h.strip[4..SLOTS - 1], ".".repeat(SLOTS - 5));
        assert_eq!(h.uptime_24h_pct, Some(66.7));

        let never = s.history("nothing", now);
        assert_eq!(never.strip, ".".repeat(SLOTS));
        assert_eq!((never.uptime_24h_pct, never.samples), (None, 0));
    }

    #[test]
    fn a_bucket_older_than_24_hours_no_longer_counts() {
        let (_d, mut s) = store();
        s.record(samples(&[("k", false)]), t0());
        s.record(samples(&[("k", true)]), t0() + Duration::hours(12));
        let at = |h: i64, m: i64| t0() + Duration::hours(h) + Duration::minutes(m);
        assert_eq!(s.history("k", at(23, 59)).uptime_24h_pct, Some(50.0));
        assert_eq!(s.history("k", at(23, 59)).strip.as_bytes()[0], b'd');
        // 24 h after the down sample, its slot has left the strip.
        let later = s.history("k", at(24, 0));
        assert_eq!(later.uptime_24h_pct, Some(100.0));
        assert_eq!(later.samples, 1);
        assert!(!later.strip.contains('d'), "{}", later.strip);
        // And it is gone from the store at the next record.
        s.record(samples(&[("k", true)]), at(24, 0));
        assert!(s.series["k"].buckets.iter().all(|b| b.0 > t0().timestamp()));
    }

    #[test]
    fn a_key_not_sampled_for_24_hours_is_dropped() {
        let (_d, mut s) = store();
        s.record(
            samples(&[("agent:removed", true), ("agent:kept", true)]),
            t0(),
        );
        s.record(samples(&[("agent:kept", true)]), t0() + Duration::hours(23));
        s.record(samples(&[("agent:kept", true)]), t0() + Duration::hours(24));
        assert_eq!(s.keys().collect::<Vec<_>>(), ["agent:kept"]);
    }

    #[test]
    fn the_store_round_trips_through_its_file() {
        let (dir, mut s) = store();
        let now = t0();
        s.record(samples(&[("agent:a", true), ("host:h/vault", false)]), now);
        s.record(samples(&[("agent:a", false)]), now + Duration::minutes(20));
        s.save().unwrap();
        let later = now + Duration::minutes(30);
        let back = HistoryStore::load(dir.path(), RedactionGate::default(), later);
        assert_eq!(back.series, s.series);
        assert_eq!(back.history("agent:a", later), s.history("agent:a", later));
        assert_eq!(back.history("agent:a", later).uptime_24h_pct, Some(50.0));
        // Loading prunes as of its `now`: a day later nothing is left.
        let day_later = HistoryStore::load(
            dir.path(),
            RedactionGate::default(),
            now + Duration::hours(25),
        );
        assert_eq!(day_later.keys().count(), 0);
    }

    /// The file passes the gate: element keys come out byte for byte as serde writes them, and
    /// a secret-shaped key (a secret the collector holds, in an agent's name) never reaches it.
    #[test]
    fn the_history_file_passes_the_redaction_gate() {
        let (dir, mut s) = store();
        s.record(samples(&[("agent:a", true), ("host:h/vault", false)]), t0());
        s.save().unwrap();
        let plain = serde_json::to_vec(&File {
            version: VERSION,
            bucket_s: BUCKET_S,
            series: s.series.clone(),
        })
        .unwrap();
        assert_eq!(std::fs::read(s.path()).unwrap(), plain);

        let secret = "s3cr3t-peer-token-value";
        let mut s = HistoryStore::new(dir.path(), RedactionGate::new([secret.to_string()]));
        s.record(samples(&[(&format!("agent:{secret}"), true)]), t0());
        s.save().unwrap();
        let text = std::fs::read_to_string(s.path()).unwrap();
        assert!(!text.contains(secret), "{text}");
        assert!(
            text.contains(&format!("agent:{}", crate::redact::REDACTED)),
            "{text}"
        );
    }

    #[test]
    fn a_corrupt_history_file_is_logged_with_its_path_and_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        for bad in [
            &b"{\"version\": 1, \"bucket_s\": 900, \"series\": {\"agent:a\": trunc"[..],
            b"\xff\xfe not json",
            b"{\"version\": 99, \"bucket_s\": 900, \"series\": {}}",
        ] {
            std::fs::write(&path, bad).unwrap();
            let (mut s, logs) =
                logs_of(|| HistoryStore::load(dir.path(), RedactionGate::default(), t0()));
            assert!(logs.contains("ERROR"), "{logs}");
            assert!(logs.contains(&path.display().to_string()), "{logs}");
            assert_eq!(s.keys().count(), 0);
            // Never silently reset: the bad bytes are kept aside, named in the log.
            let aside = state_file::set_aside_in(dir.path(), t0());
            assert!(logs.contains(&aside.last().unwrap().aside), "{logs}");
            assert_eq!(
                std::fs::read(dir.path().join(&aside.last().unwrap().aside)).unwrap(),
                bad
            );
            s.record(samples(&[("agent:a", true)]), t0());
            s.save().unwrap();
            let back = HistoryStore::load(dir.path(), RedactionGate::default(), t0());
            assert_eq!(back.history("agent:a", t0()).uptime_24h_pct, Some(100.0));
        }
        assert_eq!(state_file::set_aside_in(dir.path(), t0()).len(), 3);
        // A directory where the file should be cannot be read: logged, and the store is empty.
        std::fs::remove_file(&path).unwrap();
        std::fs::create_dir(&path).unwrap();
        let (s, logs) = logs_of(|| HistoryStore::load(dir.path(), RedactionGate::default(), t0()));
        assert!(logs.contains(&path.display().to_string()), "{logs}");
        assert_eq!(s.keys().count(), 0);
    }

    /// An agent row as the collector writes it: a down agent is red and stale.
    pub(crate) fn agent(name: &str, up: bool, now: DateTime<Utc>) -> Agent {
        Agent {
            name: name.into(),
            endpoint: "http://127.0.0.1:1/".into(),
            plane: None,
            up,
            last_exchange_s: Probe::Value(1),
            exchange_band: Band::Green,
            skills_count: Probe::Value(3),
            lane: Probe::Unknown,
            model: Probe::Unknown,
            window: Probe::Unknown,
            heartbeat: Probe::Unknown,
            band: if up { Band::Green } else { Band::Red },
            status: Asc::SUCCESS,
            reason: None,
            audit_skipped_lines: 0,
            last_report_s: None,
            history: None,
            checked_at: now,
            stale: !up,
        }
    }

    pub(crate) fn check(name: &str, ok: bool, now: DateTime<Utc>) -> NamedCheck {
        NamedCheck {
            name: name.into(),
            ok: Probe::Value(ok),
            reason: None,
            uptime_24h_pct: None,
            checked_at: now,
            stale: false,
        }
    }

    pub(crate) fn host(name: &str, checks: usize, now: DateTime<Utc>) -> System {
        let third = checks / 3;
        System {
            host: name.into(),
            source: "local".into(),
            ram_used_gb: Probe::Value(1.0),
            ram_total_gb: Probe::Value(4.0),
            disk_free_gb: Probe::Value(10.0),
            services: (0..third)
                .map(|i| check(&format!("svc{i}"), true, now))
                .collect(),
            tunnels: (0..third)
                .map(|i| check(&format!("tun{i}"), true, now))
                .collect(),
            crons: (0..checks - 2 * third - 1)
                .map(|i| CronCheck {
                    name: format!("cron{i}"),
                    state: if i == 0 {
                        CronState::Late
                    } else {
                        CronState::Up
                    },
                    last_ok_s: Probe::Value(60),
                    period_s: 3600,
                    grace_s: 600,
                    reason: None,
                    uptime_24h_pct: None,
                    checked_at: now,
                    stale: false,
                })
                .collect(),
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

    pub(crate) fn update(data: SectionData, now: DateTime<Utc>) -> SectionUpdate {
        SectionUpdate {
            data,
            checked_at: now,
            duration: std::time::Duration::from_millis(1),
        }
    }

    /// Applies `updates` to `snap` the way the writer does, and returns the samples taken.
    fn merge(snap: &mut Snapshot, updates: Vec<SectionUpdate>) -> Samples {
        let collected = Collected::of(&updates);
        for u in updates {
            crate::snapshot::apply(snap, u);
        }
        Samples::of(&collected, snap)
    }

    #[test]
    fn only_the_sections_a_write_collected_are_sampled_once_each() {
        let now = t0();
        let mut snap = Snapshot::empty(now, fleet_rules());
        let h = host("h", 4, now);
        let tunnels = HostTunnels {
            host: "h".into(),
            source: "local".into(),
            tunnels: vec![check("tun0", false, now)],
        };
        // Host facts and tunnels in one write (as `collect` does): the host once, every check
        // once; the late cron is up, the down tunnel down, and the host red because of it.
        let s = merge(
            &mut snap,
            vec![
                update(SectionData::Systems(vec![h.clone()]), now),
                update(SectionData::Tunnels(vec![tunnels.clone()]), now),
            ],
        );
        assert_eq!(
            s.0,
            BTreeMap::from([
                ("host:h".to_string(), false),
                ("host:h/cron:cron0".to_string(), true),
                ("host:h/service:svc0".to_string(), true),
                ("host:h/tunnel:tun0".to_string(), false),
                ("host:h/vault".to_string(), true),
            ])
        );
        let (_d, mut store) = store();
        store.record(s, now);
        assert_eq!(store.history("host:h", now).samples, 1);

        // A tunnels-only write samples the host and its tunnels, not its other checks.
        let s = merge(
            &mut snap,
            vec![update(SectionData::Tunnels(vec![tunnels]), now)],
        );
        assert_eq!(
            s.0.keys().collect::<Vec<_>>(),
            ["host:h", "host:h/tunnel:tun0"]
        );
        // A systems-only write: the host and its own checks, not the tunnels.
        let s = merge(&mut snap, vec![update(SectionData::Systems(vec![h]), now)]);
        assert!(!s.0.keys().any(|k| k.contains("tunnel")), "{s:?}");
        assert!(s.get("host:h/service:svc0").is_some());
        // Other sections sample nothing at all, even with hosts and agents in the snapshot.
        snap.agents = Probe::Value(vec![agent("a", true, now)]);
        let s = merge(
            &mut snap,
            vec![update(
                SectionData::Backups(fleetdash_model::Backups {
                    name: "gdrive".into(),
                    gdrive_latest: Probe::Unknown,
                    age_h: Probe::Unknown,
                    band: Band::Green,
                    status: Asc::SUCCESS,
                    reason: None,
                    checked_at: now,
                    stale: false,
                }),
                now,
            )],
        );
        assert!(s.is_empty(), "{s:?}");
        // An agents write samples agents only, `up` as the agent answered.
        let s = merge(
            &mut snap,
            vec![update(
                SectionData::Agents(vec![agent("a", true, now), agent("b", false, now)]),
                now,
            )],
        );
        assert_eq!(
            s.0,
            BTreeMap::from([
                ("agent:a".to_string(), true),
                ("agent:b".to_string(), false)
            ])
        );
    }

    #[test]
    fn tunnels_before_the_first_host_probe_sample_the_tunnels_not_the_host() {
        let now = t0();
        let mut snap = Snapshot::empty(now, fleet_rules());
        let tunnels = HostTunnels {
            host: "h".into(),
            source: "ssh".into(),
            tunnels: vec![check("tun0", true, now)],
        };
        let s = merge(
            &mut snap,
            vec![update(SectionData::Tunnels(vec![tunnels.clone()]), now)],
        );
        assert_eq!(s.0.keys().collect::<Vec<_>>(), ["host:h/tunnel:tun0"]);
        // Once probed, the host is sampled on tunnel writes too.
        merge(
            &mut snap,
            vec![update(SectionData::Systems(vec![host("h", 4, now)]), now)],
        );
        let s = merge(
            &mut snap,
            vec![update(SectionData::Tunnels(vec![tunnels]), now)],
        );
        assert_eq!(s.get("host:h"), Some(true));
    }

    #[test]
    fn a_host_without_a_vault_does_not_track_one_and_a_down_cron_is_down() {
        let now = t0();
        let mut snap = Snapshot::empty(now, fleet_rules());
        let mut h = host("h", 4, now);
        h.vault_parity = Probe::Unknown;
        h.crons[0].state = CronState::Down;
        let s = merge(&mut snap, vec![update(SectionData::Systems(vec![h]), now)]);
        assert_eq!(s.get("host:h/vault"), None);
        assert_eq!(s.get("host:h/cron:cron0"), Some(false));
    }

    /// 11 agents and 3 hosts of 10 checks each, sampled every 2 minutes for 7 days: the file
    /// stays under a bound computed from the number of keys alone, and every strip has its
    /// fixed length.
    #[test]
    fn seven_days_of_two_minute_samples_stay_within_a_fixed_size() {
        let (dir, mut store) = store();
        let start = t0();
        let agents: Vec<Agent> = (0..11)
            .map(|i| agent(&format!("agent-{i:02}"), true, start))
            .collect();
        let hosts: Vec<System> = (0..3)
            .map(|i| host(&format!("host-{i}"), 10, start))
            .collect();
        let mut snap = Snapshot::empty(start, fleet_rules());
        snap.agents = Probe::Value(agents.clone());
        snap.systems = Probe::Value(hosts.clone());
        let keys = {
            let mut c = Collected {
                agents: true,
                ..Default::default()
            };
            for h in &hosts {
                c.hosts.insert(h.host.clone(), (true, true));
            }
            c
        };
        let mut size_after_day = 0;
        let steps = 7 * 24 * 30;
        for step in 0..=steps {
            let now = start + Duration::minutes(2 * step);
            // Flap one agent every 7th sample, so buckets hold both counts.
            if let Probe::Value(rows) = &mut snap.agents {
                rows[0].up = step % 7 != 0;
            }
            store.record(Samples::of(&keys, &snap), now);
            if step == 24 * 30 {
                store.save().unwrap();
                size_after_day = std::fs::metadata(store.path()).unwrap().len();
            }
        }
        store.save().unwrap();
        let size = std::fs::metadata(store.path()).unwrap().len() as usize;
        let key_count = 11 + 3 * (1 + 10);
        assert_eq!(store.keys().count(), key_count);
        // Per key: its name and `{"first":<10 digits>,"last":<10 digits>,"buckets":[]}`
        // framing, then BUCKETS buckets of `[<10 digits>,<up>,<down>],`; 2-minute samples put
        // at most 8 in a bucket, so each count is one digit.
        let names: usize = store.keys().map(|k| k.len() + 4).sum();
        let per_bucket = "[1234567890,8,8],".len();
        let framing = r#"{"first":1234567890,"last":1234567890,"buckets":[]}"#.len();
        let bound = 64 + names + key_count * (framing + BUCKETS * per_bucket);
        assert!(size <= bound, "history.json {size} B > bound {bound} B");
        assert!(bound < 80 * 1024, "the bound itself is small: {bound} B");
        assert!(
            size as u64 <= size_after_day + 64,
            "history grows with run time: {size_after_day} B after a day, {size} B after 7"
        );
        let end = start + Duration::minutes(2 * steps);
        let mut snap2 = snap.clone();
        store.annotate(&mut snap2, end);
        let Probe::Value(rows) = &snap2.agents else {
            unreachable!()
        };
        // The window is the 48 slots ending with the one holding `end`: 23.5 h and a moment
        // here, since `end` starts its slot.
        let in_window = (0..=steps)
            .filter(|s| {
                (start + Duration::minutes(2 * s)).timestamp() >= window_start(end.timestamp())
            })
            .count();
        assert_eq!(in_window, 23 * 30 + 15 + 1);
        for a in rows {
            let h = a.history.as_ref().unwrap();
            assert_eq!(h.strip.len(), SLOTS);
            assert_eq!(h.samples as usize, in_window, "{}", a.name);
        }
        assert!(rows[0].history.as_ref().unwrap().strip.contains('p'));
        let Probe::Value(hosts) = &snap2.systems else {
            unreachable!()
        };
        for h in hosts {
            assert_eq!(h.history.as_ref().unwrap().strip, "u".repeat(SLOTS));
            assert!(h.services.iter().all(|c| c.uptime_24h_pct == Some(100.0)));
            assert!(h.crons.iter().all(|c| c.uptime_24h_pct == Some(100.0)));
            assert!(h.tunnels.iter().all(|c| c.uptime_24h_pct == Some(100.0)));
        }
        drop(dir);
    }
}

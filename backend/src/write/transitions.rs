//! The transitions log: every band change of every element, kept in
//! `<state_dir>/transitions.json` at a fixed size however long fleetdash runs, and the recent
//! ones carried in `status.json` for the page, `snapshot.html` and (later) alerts.
//!
//! Each write compares the bands of the previous snapshot's elements with the new snapshot's
//! ([`elements`], [`compare`]), under the status lock, after the redaction gate: keys, names and
//! reasons are the gated snapshot's own text, never raw probe or audit text. Elements are keyed
//! as the history keys them (`agent:min`, `host:lab`, `host:lab/service:nginx`, ...) plus
//! `task:<agent>/<id>`, `queue:<id>` (a work-queue task), `board:<name>`, `board:<name>/card:<id>`,
//! `board:<name>/unlisted` (the cards needing attention a capped listing leaves out), `backups`
//! and `section:<name>`, so a key names the same thing across runs. A host's own element is
//! whether it answers (its RAM and disk facts); its checks are elements of their own, not folded
//! into it as the page's row folds them.
//!
//! What counts: a change of band between two snapshots. An element that first appears amber or
//! red is recorded with no `from` (an element born red is what an alert wants to hear about);
//! one born green is not (every restart would announce the whole fleet). An element that
//! disappears (a card leaving the board or the snapshot's capped listing, a removed agent) is not
//! a transition; a card that recovers is listed once more, so its recovery is one. A section's own
//! element is red while it is stale or failed as a whole, and exists once it was first
//! collected ("not collected yet" at start-up is not news).
//!
//! The log is a ring: at most [`MAX_ENTRIES`], none older than [`KEEP_S`], and the file never
//! past [`MAX_FILE_BYTES`] (the oldest go first). It is replaced atomically. A corrupt log is
//! replaced, starting again from what the previous snapshot carried; an unreadable one is left
//! alone; both are logged, and neither ever fails the snapshot.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use chrono::{DateTime, Duration, Utc};
use fleetdash_model::alerts::key;
use fleetdash_model::{Band, NOT_COLLECTED, Probe, SectionMeta, Snapshot, Transition};
use serde::{Deserialize, Serialize};

use super::atomic;
use crate::collect::SectionName;
use crate::redact::RedactionGate;

pub const FILE_NAME: &str = "transitions.json";

/// The most transitions the log keeps (a ring: the oldest go first). A fleet of a few dozen
/// elements flapping every pass fills it in hours; a quiet one keeps a week.
pub const MAX_ENTRIES: usize = 4096;
/// Nothing older than this is kept: a week covers "since you last looked" after a weekend.
pub const KEEP_S: i64 = 7 * 24 * 3600;
/// The file never grows past this, whatever text its entries hold.
pub const MAX_FILE_BYTES: usize = 2 * 1024 * 1024;
/// `status.json` carries the transitions of this last window...
pub const RECENT_S: i64 = 24 * 3600;
/// ...at most this many, newest first: the snapshot stays small on a phone's connection.
pub const RECENT_MAX: usize = 100;
/// Each text of an entry (key, name, reason) is cut to this many characters.
const TEXT_MAX_CHARS: usize = 240;
/// Bumped when the file's layout changes; another version is replaced, like a corrupt file.
const VERSION: u32 = 1;

/// The log's size bounds: [`Bounds::FLEET`] (the constants above) everywhere but in tests and
/// benches, which shrink them to reach them quickly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    pub max_entries: usize,
    pub keep_s: i64,
    pub max_file_bytes: usize,
}

impl Bounds {
    pub const FLEET: Bounds = Bounds {
        max_entries: MAX_ENTRIES,
        keep_s: KEEP_S,
        max_file_bytes: MAX_FILE_BYTES,
    };
}

/// What a snapshot says about one element: enough to see a band change and to record it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Element {
    pub kind: &'static str,
    pub name: String,
    pub band: Band,
    /// Why it is not green; `None` when it is.
    pub reason: Option<String>,
}

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
            let name = format!("{} on {}", t.id, t.agent);
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
    out
}

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
            let band = if ok { Band::Green } else { Band::Red };
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

/// The band changes from `before` to `after`, in key order, stamped `at`. With no `before`
/// (the first snapshot), every element is new.
pub fn compare(before: Option<&Elements>, after: &Elements, at: DateTime<Utc>) -> Vec<Transition> {
    after
        .iter()
        .filter_map(|(key, now)| {
            let from = match before.and_then(|b| b.get(key)) {
                Some(old) if old.band == now.band => return None,
                Some(old) => Some(old.band),
                None if now.band == Band::Green => return None,
                None => None,
            };
            Some(Transition {
                key: key.clone(),
                kind: now.kind.to_string(),
                name: now.name.clone(),
                from,
                to: now.band,
                at,
                reason: now.reason.clone(),
            })
        })
        .collect()
}

/// The file: oldest first.
#[derive(Debug, Serialize, Deserialize)]
struct File {
    version: u32,
    entries: Vec<Transition>,
}

/// The log on disk. Used under the status lock.
#[derive(Debug, Clone)]
pub struct TransitionLog {
    path: PathBuf,
    gate: RedactionGate,
    bounds: Bounds,
}

/// The log with one write's transitions appended, not yet saved.
#[derive(Debug)]
pub struct Appended {
    /// Oldest first: the whole log, or only the last day when the write took it from the
    /// previous snapshot.
    entries: Vec<Transition>,
    save: bool,
}

impl Appended {
    /// What status.json carries: the last [`RECENT_S`], at most [`RECENT_MAX`], newest first.
    pub fn recent(&self, now: DateTime<Utc>) -> Vec<Transition> {
        recent(&self.entries, now)
    }

    /// The entries this write holds, oldest first.
    pub fn entries(&self) -> &[Transition] {
        &self.entries
    }
}

/// What loading found.
struct Loaded {
    entries: Vec<Transition>,
    /// False when the file exists but cannot be read: it is left as it is.
    writable: bool,
    /// True when the file must be replaced even with nothing new (it was corrupt).
    replace: bool,
}

impl TransitionLog {
    pub fn new(state_dir: &Path, gate: RedactionGate) -> TransitionLog {
        TransitionLog::with_bounds(state_dir, gate, Bounds::FLEET)
    }

    pub fn with_bounds(state_dir: &Path, gate: RedactionGate, bounds: Bounds) -> TransitionLog {
        TransitionLog {
            path: state_dir.join(FILE_NAME),
            gate,
            bounds,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every entry on disk, oldest first; an empty log when the file is missing. The error
    /// says why the file cannot be used.
    pub fn read(&self) -> Result<Vec<Transition>> {
        match std::fs::read(&self.path) {
            Ok(bytes) => self.parse(&bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(e).with_context(|| format!("cannot read {}", self.path.display())),
        }
    }

    fn parse(&self, bytes: &[u8]) -> Result<Vec<Transition>> {
        let file: File = serde_json::from_slice(bytes)
            .with_context(|| format!("{} is not a transitions log", self.path.display()))?;
        anyhow::ensure!(
            file.version == VERSION,
            "{} has layout version {}, not {VERSION}",
            self.path.display(),
            file.version
        );
        Ok(file.entries)
    }

    /// `carried` (newest first, as a snapshot holds them) is where the log starts again when
    /// the file is missing, corrupt or unreadable.
    fn load(&self, carried: &[Transition]) -> Loaded {
        let seed = || {
            carried
                .iter()
                .rev()
                .map(|t| self.admit(t.clone()))
                .collect::<Vec<_>>()
        };
        let bytes = match std::fs::read(&self.path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Loaded {
                    entries: seed(),
                    writable: true,
                    replace: false,
                };
            }
            Err(e) => {
                tracing::warn!(file = %self.path.display(), "transitions log unreadable, left as it is; this write's transitions reach status.json only: {e}");
                return Loaded {
                    entries: seed(),
                    writable: false,
                    replace: false,
                };
            }
        };
        match self.parse(&bytes) {
            Ok(entries) => Loaded {
                entries,
                writable: true,
                replace: false,
            },
            Err(e) => {
                tracing::warn!(file = %self.path.display(), "transitions log invalid, replaced by the snapshot's recent transitions: {e:#}");
                Loaded {
                    entries: seed(),
                    writable: true,
                    replace: true,
                }
            }
        }
    }

    /// Appends `new` to the log as loaded, bounded as of `now`; [`TransitionLog::save`] puts
    /// it on disk once the snapshot is written (a snapshot that fails to be written must not
    /// leave its transitions in the log: the next write sees the same changes again).
    /// `carried` is what the previous snapshot carried, `None` when there was none.
    ///
    /// With nothing new and a previous snapshot, the log is not read at all: that snapshot
    /// carried the log's last day as it still is (most writes change nothing, and a week's log
    /// is half a megabyte to parse).
    pub fn append(
        &self,
        new: Vec<Transition>,
        carried: Option<&[Transition]>,
        now: DateTime<Utc>,
    ) -> Appended {
        if new.is_empty()
            && let Some(carried) = carried
        {
            return Appended {
                entries: carried.iter().rev().cloned().collect(),
                save: false,
            };
        }
        let Loaded {
            mut entries,
            writable,
            replace,
        } = self.load(carried.unwrap_or_default());
        let changed = !new.is_empty();
        entries.extend(new.into_iter().map(|t| self.admit(t)));
        bound(&mut entries, now, self.bounds);
        Appended {
            entries,
            save: writable && (changed || replace),
        }
    }

    /// Replaces the file with `appended` when it changed. Never fails: a log that cannot be
    /// saved is logged, and costs the log only.
    pub fn save(&self, mut appended: Appended) {
        if !appended.save {
            return;
        }
        let saved = self
            .to_bytes(&mut appended.entries)
            .and_then(|bytes| atomic::write(&self.path, &bytes));
        if let Err(e) = saved {
            tracing::warn!(file = %self.path.display(), "cannot save the transitions log: {e:#}");
        }
    }

    /// What enters the log: each text through the gate (the snapshot's own text already
    /// passed it; this is the log's own wall), then cut to [`TEXT_MAX_CHARS`] so one odd
    /// reason cannot eat the log. Redacting before cutting keeps half a secret from leaking.
    fn admit(&self, mut t: Transition) -> Transition {
        let clean = |s: &str| crate::text::clean(&self.gate.redact_str(s), TEXT_MAX_CHARS);
        t.key = clean(&t.key);
        t.kind = clean(&t.kind);
        t.name = clean(&t.name);
        t.reason = t.reason.as_deref().map(clean);
        t
    }

    /// The file's bytes, compact JSON, dropping the oldest entries until it fits the bound
    /// ([`MAX_FILE_BYTES`]; `entries` loses them too). Every entry passed the gate on its way
    /// in ([`TransitionLog::admit`]).
    fn to_bytes(&self, entries: &mut Vec<Transition>) -> Result<Vec<u8>> {
        let whole = |entries: &[Transition]| {
            serde_json::to_vec(&FileRef {
                version: VERSION,
                entries,
            })
            .context("cannot serialise the transitions log")
        };
        let bytes = whole(entries)?;
        if bytes.len() <= self.bounds.max_file_bytes {
            return Ok(bytes);
        }
        // Too big (long texts): the oldest go until the rest fits, each counted with its comma.
        let sizes: Vec<usize> = entries
            .iter()
            .map(|t| serde_json::to_vec(t).map(|b| b.len() + 1))
            .collect::<serde_json::Result<_>>()?;
        let mut total = bytes.len();
        let mut first = 0;
        while total > self.bounds.max_file_bytes && first < sizes.len() {
            total -= sizes[first];
            first += 1;
        }
        entries.drain(..first);
        whole(entries)
    }
}

/// [`File`] without a copy of its entries, for writing.
#[derive(Serialize)]
struct FileRef<'a> {
    version: u32,
    entries: &'a [Transition],
}

/// Time order (a stable sort: one write's entries keep their key order), nothing older than
/// [`KEEP_S`], at most [`MAX_ENTRIES`].
fn bound(entries: &mut Vec<Transition>, now: DateTime<Utc>, bounds: Bounds) {
    entries.sort_by_key(|t| t.at);
    let from = now - Duration::seconds(bounds.keep_s);
    entries.retain(|t| t.at >= from);
    let extra = entries.len().saturating_sub(bounds.max_entries);
    entries.drain(..extra);
}

/// What status.json carries, newest first.
pub fn recent(entries: &[Transition], now: DateTime<Utc>) -> Vec<Transition> {
    let from = now - Duration::seconds(RECENT_S);
    entries
        .iter()
        .rev()
        .filter(|t| t.at >= from)
        .take(RECENT_MAX)
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::tests::agent;
    use crate::logging::logs_of;
    use chrono::TimeZone;
    use fleetdash_model::{
        Asc, Backups, Board, BoardSource, Card, CronCheck, CronState, NamedCheck, System,
    };

    fn t0() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 30, 6, 0, 0).unwrap()
    }

    fn element(band: Band, reason: Option<&str>) -> Element {
        Element {
            kind: "agent",
            name: "x".into(),
            band,
            reason: reason.map(Into::into),
        }
    }

    fn elements_of(list: &[(&str, Band)]) -> Elements {
        list.iter()
            .map(|(k, b)| {
                let why = (*b != Band::Green).then_some("why");
                (k.to_string(), element(*b, why))
            })
            .collect()
    }

    /// (key, from, to) of each transition.
    fn changes(list: &[Transition]) -> Vec<(&str, Option<Band>, Band)> {
        list.iter()
            .map(|t| (t.key.as_str(), t.from, t.to))
            .collect()
    }

    /// Red to green, green to amber and an element born red are transitions; one born green,
    /// one removed and one unchanged (whatever its reason says now) are not.
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
                worker_died: false,
                band,
                status: Asc::SUCCESS,
                reason: reason.map(Into::into),
                checked_at: t0(),
                stale: false,
            }]);
            elements(&s)
        };
        let why = "no ACK for 10 min: nobody owns it";
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
    }

    #[test]
    fn only_band_changes_and_elements_born_amber_or_red_are_transitions() {
        use Band::*;
        let before = elements_of(&[
            ("recovers", Red),
            ("warns", Green),
            ("quiet", Green),
            ("removed", Red),
            ("still-amber", Amber),
        ]);
        let mut after = elements_of(&[
            ("recovers", Green),
            ("warns", Amber),
            ("quiet", Green),
            ("still-amber", Amber),
            ("born-red", Red),
            ("born-green", Green),
        ]);
        after.get_mut("still-amber").unwrap().reason = Some("another reason".into());
        let at = t0();
        let got = compare(Some(&before), &after, at);
        assert_eq!(
            changes(&got),
            [
                ("born-red", None, Red),
                ("recovers", Some(Red), Green),
                ("warns", Some(Green), Amber),
            ]
        );
        assert!(got.iter().all(|t| t.at == at));
        let recovered = &got[1];
        assert_eq!(recovered.reason, None, "green has no reason");
        assert_eq!(got[2].reason.as_deref(), Some("why"));
        // The first snapshot ever: every element is new, and only the non-green count.
        assert_eq!(
            changes(&compare(None, &after, at)),
            [
                ("born-red", None, Red),
                ("still-amber", None, Amber),
                ("warns", None, Amber)
            ]
        );
        assert!(compare(Some(&after), &after, at).is_empty());
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

    fn transition(key: &str, to: Band, at: DateTime<Utc>) -> Transition {
        Transition {
            key: key.into(),
            kind: "agent".into(),
            name: key.into(),
            from: Some(if to == Band::Red {
                Band::Green
            } else {
                Band::Red
            }),
            to,
            at,
            reason: (to == Band::Red).then(|| "down: connection refused".into()),
        }
    }

    fn file_len(log: &TransitionLog) -> usize {
        std::fs::metadata(log.path()).unwrap().len() as usize
    }

    /// 10,000 writes, each flapping an element (a write a minute: a week), keep the file
    /// within its bounds (entries, bytes, age) at every write, and keep the newest in order.
    #[test]
    fn ten_thousand_flapping_writes_keep_the_log_within_its_bounds() {
        // In memory (tmpfs): this counts bytes, not durability, and 20,000 fsyncs would cost
        // minutes on a shared disk.
        let dir = tempfile::tempdir_in("/dev/shm").expect("a tmpfs at /dev/shm (Linux)");
        let bounds = Bounds {
            max_entries: 64,
            keep_s: 24 * 3600,
            max_file_bytes: 8 * 1024,
        };
        let log = TransitionLog::with_bounds(dir.path(), RedactionGate::default(), bounds);
        let mut biggest = 0;
        let mut last = Vec::new();
        for i in 0..10_000i64 {
            let at = t0() + Duration::minutes(i);
            let to = if i % 2 == 0 { Band::Red } else { Band::Green };
            // Long names on some writes, so the byte bound binds before the entry bound.
            let mut t = transition(&format!("agent:a{}", i % 7), to, at);
            if i % 3 == 0 {
                t.name = "n".repeat(400);
            }
            let appended = log.append(vec![t], None, at);
            assert!(appended.entries().len() <= bounds.max_entries);
            last = appended.recent(at);
            log.save(appended);
            biggest = biggest.max(file_len(&log));
        }
        assert!(biggest <= bounds.max_file_bytes, "{biggest} bytes");
        let on_disk = log.read().unwrap();
        assert!(!on_disk.is_empty() && on_disk.len() <= bounds.max_entries);
        let end = t0() + Duration::minutes(9_999);
        assert_eq!(on_disk.last().unwrap().at, end, "the newest is kept");
        assert!(
            on_disk.windows(2).all(|w| w[0].at <= w[1].at),
            "oldest first"
        );
        assert_eq!(last[0].at, end, "status.json gets the newest first");
        assert!(last.windows(2).all(|w| w[0].at >= w[1].at));
        assert!(last.len() <= RECENT_MAX);
        // Cut to its bound, not left whole.
        assert!(
            on_disk
                .iter()
                .all(|t| t.name.chars().count() <= TEXT_MAX_CHARS)
        );
    }

    /// With the fleet's own bounds, a full ring of the longest entries the log admits (every
    /// text at its cut, 4 bytes a character) still fits the file's byte bound, the newest
    /// kept; and the window drops what is older than a week.
    #[test]
    fn the_fleets_bounds_hold_for_a_full_ring_of_the_longest_entries() {
        let dir = tempfile::tempdir().unwrap();
        let log = TransitionLog::new(dir.path(), RedactionGate::default());
        let now = t0();
        let longest = "😀".repeat(TEXT_MAX_CHARS);
        let entries: Vec<Transition> = (0..MAX_ENTRIES)
            .map(|i| Transition {
                key: format!("{i}/{longest}"),
                kind: longest.clone(),
                name: longest.clone(),
                from: None,
                to: Band::Red,
                at: now,
                reason: Some(longest.clone()),
            })
            .collect();
        let raw = serde_json::to_vec(&entries).unwrap().len();
        assert!(
            raw > 4 * MAX_FILE_BYTES,
            "the bytes bound must bind: {raw} B"
        );
        log.save(Appended {
            entries,
            save: true,
        });
        let len = file_len(&log);
        assert!(len <= MAX_FILE_BYTES, "{len} bytes");
        assert!(
            len > MAX_FILE_BYTES - 8 * 1024,
            "only what did not fit went: {len} bytes"
        );
        let kept = log.read().unwrap();
        let newest = format!("{}/", MAX_ENTRIES - 1);
        assert!(kept.last().unwrap().key.starts_with(&newest));
        // A week and a second later, all of it is too old.
        let later = now + Duration::seconds(KEEP_S + 1);
        let appended = log.append(vec![transition("agent:new", Band::Red, later)], None, later);
        assert_eq!(
            changes(appended.entries()),
            [("agent:new", Some(Band::Green), Band::Red)]
        );
    }

    /// status.json's share: the last 24 h only, at most RECENT_MAX, newest first.
    #[test]
    fn the_snapshot_carries_the_last_day_newest_first_capped() {
        let now = t0();
        let entries: Vec<Transition> = (0..(RECENT_MAX as i64 + 50))
            .map(|i| transition(&format!("agent:{i}"), Band::Red, now - Duration::minutes(i)))
            .rev()
            .collect();
        let got = recent(&entries, now);
        assert_eq!(got.len(), RECENT_MAX);
        assert_eq!(got[0].key, "agent:0");
        let old = [
            transition(
                "agent:old",
                Band::Red,
                now - Duration::seconds(RECENT_S + 1),
            ),
            transition("agent:day", Band::Red, now - Duration::seconds(RECENT_S)),
        ];
        assert_eq!(
            changes(&recent(&old, now)),
            [("agent:day", Some(Band::Green), Band::Red)]
        );
    }

    /// A corrupt log (or one of another layout) is said with its path and replaced, starting
    /// again from what the snapshot carried; an unreadable one (a directory) is said and left
    /// alone, and the snapshot still gets its recent transitions.
    #[test]
    fn a_corrupt_log_is_replaced_from_the_snapshot_and_an_unreadable_one_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let log = TransitionLog::new(dir.path(), RedactionGate::default());
        let now = t0();
        let carried = vec![transition(
            "agent:carried",
            Band::Red,
            now - Duration::hours(1),
        )];
        let new = || vec![transition("agent:new", Band::Red, now)];
        for bad in [
            &b"{\"version\":1,\"entries\":[trunc"[..],
            b"{\"version\":99,\"entries\":[]}",
        ] {
            std::fs::write(log.path(), bad).unwrap();
            let (recent, logs) = logs_of(|| {
                let appended = log.append(new(), Some(&carried), now);
                let recent = appended.recent(now);
                log.save(appended);
                recent
            });
            assert!(logs.contains(&log.path().display().to_string()), "{logs}");
            assert!(logs.contains("transitions log invalid"), "{logs}");
            let keys = ["agent:new", "agent:carried"];
            assert_eq!(
                recent.iter().map(|t| t.key.as_str()).collect::<Vec<_>>(),
                keys
            );
            let on_disk = log.read().unwrap();
            assert_eq!(
                on_disk
                    .iter()
                    .rev()
                    .map(|t| t.key.as_str())
                    .collect::<Vec<_>>(),
                keys
            );
        }
        // Corrupt, nothing new and no previous snapshot: read, replaced all the same (the
        // warning is said once), by nothing.
        std::fs::write(log.path(), b"not json").unwrap();
        let ((), logs) = logs_of(|| log.save(log.append(Vec::new(), None, now)));
        assert!(logs.contains("transitions log invalid"), "{logs}");
        assert_eq!(log.read().unwrap().len(), 0);

        std::fs::remove_file(log.path()).unwrap();
        std::fs::create_dir(log.path()).unwrap();
        let (recent, logs) = logs_of(|| {
            let appended = log.append(new(), Some(&carried), now);
            let recent = appended.recent(now);
            log.save(appended);
            recent
        });
        assert!(
            logs.contains("transitions log unreadable, left as it is"),
            "{logs}"
        );
        assert!(logs.contains(&log.path().display().to_string()), "{logs}");
        assert_eq!(recent.len(), 2);
        assert!(log.path().is_dir(), "left alone");
    }

    /// A write that sees no change does not read the log: the last day is what the previous
    /// snapshot carried (what the log said then), as of now. Even a corrupt log stays as it
    /// is until there is something to record.
    #[test]
    fn a_write_with_nothing_new_takes_the_last_day_from_the_previous_snapshot() {
        let dir = tempfile::tempdir().unwrap();
        let log = TransitionLog::new(dir.path(), RedactionGate::default());
        let now = t0();
        let carried = vec![
            transition("agent:hour", Band::Red, now - Duration::hours(1)),
            transition("agent:day", Band::Red, now - Duration::hours(25)),
        ];
        std::fs::write(log.path(), b"not json").unwrap();
        let (recent, logs) = logs_of(|| {
            let appended = log.append(Vec::new(), Some(&carried), now);
            let recent = appended.recent(now);
            log.save(appended);
            recent
        });
        assert_eq!(
            changes(&recent),
            [("agent:hour", Some(Band::Green), Band::Red)]
        );
        assert!(logs.is_empty(), "{logs}");
        assert_eq!(std::fs::read(log.path()).unwrap(), b"not json");
    }

    /// The file passes the gate: a secret the collector holds never reaches it.
    #[test]
    fn the_log_passes_the_redaction_gate() {
        let dir = tempfile::tempdir().unwrap();
        let secret = "s3cr3t-peer-token-value";
        let log = TransitionLog::new(dir.path(), RedactionGate::new([secret.to_string()]));
        let mut t = transition("agent:min", Band::Red, t0());
        t.reason = Some(format!("down: 401 for {secret}"));
        log.save(log.append(vec![t], None, t0()));
        let text = std::fs::read_to_string(log.path()).unwrap();
        assert!(!text.contains(secret), "{text}");
        assert!(text.contains(crate::redact::REDACTED), "{text}");
    }
}

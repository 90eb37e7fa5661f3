//! Silences, and with the config's maintenance windows (issue 12), what holds an element's
//! alerts back for a while, never its monitoring (the page still shows it red, marked "silenced
//! until 16:00 (disk swap)") and never a recovery of what fired.
//!
//! - A silence is made by the operator (`fleetdash silence add host=lab --for 2h --reason
//!   "disk swap"`) and kept in `<state_dir>/silences.json`, replaced atomically through the
//!   redaction gate; ended ones are dropped when the file is next written.
//! - A maintenance window is declared in the config (`[[alerts.maintenance]]`): weekdays and a
//!   time of day (UTC), recurring every week.
//!
//! Matchers and maintenance windows are the config's (`config::maintenance`). A matcher names
//! elements the way the transitions log keys them: `host=lab` is the key prefix
//! `host:lab` (the host and its checks), `key=host:lab/tunnel:t` any key prefix, `kind=cron`
//! and `name=min` an element's kind or name. All of a silence's matchers must match;
//! comparisons ignore case (the operator types `host=LAB`).

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};
use chrono::{DateTime, Duration, Utc};
use fleetdash_model::alerts::Element;
use serde::{Deserialize, Serialize};

use crate::config::maintenance::{MaintenanceWindow, Matcher};
use crate::redact::RedactionGate;
use crate::write::{atomic, state_file};

pub const FILE_NAME: &str = "silences.json";
/// Held while a command reads, changes and replaces the file, so two `silence add`s at once
/// both land (the engine only reads: the atomic replace is enough for it).
const LOCK_NAME: &str = "silences.lock";
/// Bumped when the file's layout changes.
const VERSION: u32 = 1;
/// A reason longer than this is cut: it is shown on a phone-sized page.
const REASON_MAX_CHARS: usize = 120;

fn all_match(matchers: &[Matcher], key: &str, element: &Element) -> bool {
    !matchers.is_empty() && matchers.iter().all(|m| m.matches(key, element))
}

/// One operator's silence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Silence {
    pub id: String,
    pub matchers: Vec<Matcher>,
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
    pub reason: String,
}

impl Silence {
    pub fn active_at(&self, now: DateTime<Utc>) -> bool {
        self.start <= now && now < self.end
    }

    /// One line for `fleetdash silence add/list/end`: id, end, matchers, reason.
    pub fn line(&self) -> String {
        let matchers: Vec<String> = self.matchers.iter().map(ToString::to_string).collect();
        format!(
            "{}  until {}  {}  {}",
            self.id,
            self.end.format("%Y-%m-%d %H:%M UTC"),
            matchers.join(" "),
            self.reason
        )
    }
}

/// What holds an element's alerts back at a moment, for the engine and the page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Active {
    pub until: DateTime<Utc>,
    pub reason: String,
}

impl Active {
    /// The page's words: "silenced until 16:00 (disk swap)".
    pub fn describe(&self) -> String {
        if self.reason.is_empty() {
            format!("silenced until {}", self.until.format("%H:%M"))
        } else {
            format!(
                "silenced until {} ({})",
                self.until.format("%H:%M"),
                self.reason
            )
        }
    }
}

/// The element's active silence or window at `now`: the one lasting longest when several do.
pub fn active(
    silences: &[Silence],
    windows: &[MaintenanceWindow],
    key: &str,
    element: &Element,
    now: DateTime<Utc>,
) -> Option<Active> {
    let from_silences = silences
        .iter()
        .filter(|s| s.active_at(now) && all_match(&s.matchers, key, element))
        .map(|s| Active {
            until: s.end,
            reason: s.reason.clone(),
        });
    let from_windows = windows
        .iter()
        .filter(|w| all_match(&w.matchers, key, element))
        .filter_map(|w| {
            w.until(now).map(|until| Active {
                until,
                reason: w.reason.clone(),
            })
        });
    from_silences.chain(from_windows).max_by_key(|a| a.until)
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct SilencesFile {
    version: u32,
    silences: Vec<Silence>,
}

impl state_file::StateFile for SilencesFile {
    const WHAT: &'static str = "silences";

    fn layout_problem(&self) -> Option<String> {
        (self.version != VERSION).then(|| {
            format!(
                "silences file of version {} (expected {VERSION})",
                self.version
            )
        })
    }
}

/// `<state_dir>/silences.json`.
pub struct SilenceStore {
    path: PathBuf,
    gate: RedactionGate,
}

impl SilenceStore {
    pub fn new(state_dir: &Path, gate: RedactionGate) -> Self {
        SilenceStore {
            path: state_dir.join(FILE_NAME),
            gate,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `change` under the file's lock. Blocking.
    fn locked<T>(&self, change: impl FnOnce() -> Result<T>) -> Result<T> {
        let lock_path = self.path.with_file_name(LOCK_NAME);
        let lock = std::fs::File::create(&lock_path)
            .with_context(|| format!("cannot open lock file {}", lock_path.display()))?;
        lock.lock()
            .with_context(|| format!("cannot lock {}", lock_path.display()))?;
        change()
    }

    /// Every silence kept, as of `now`; none when there is no file, and none when it was
    /// corrupt or of another layout: it is moved aside and said ([`state_file`]; the page says
    /// so until the copy is removed), and alerts page as if nothing were silenced (an alert
    /// too many beats a page lost). A file that cannot be read is an error naming it.
    pub fn load(&self, now: DateTime<Utc>) -> Result<Vec<Silence>> {
        match state_file::load::<SilencesFile>(&self.path, now) {
            state_file::Loaded::Found(file) => Ok(file.silences),
            state_file::Loaded::Missing | state_file::Loaded::SetAside { .. } => Ok(Vec::new()),
            state_file::Loaded::Unreadable(e) => Err(e),
        }
    }

    fn save(&self, mut silences: Vec<Silence>, now: DateTime<Utc>) -> Result<()> {
        silences.retain(|s| s.end > now);
        let file = SilencesFile {
            version: VERSION,
            silences,
        };
        let json = self.gate.to_json(&file)?;
        atomic::write(&self.path, &serde_json::to_vec_pretty(&json)?)
            .with_context(|| format!("cannot save {}", self.path.display()))
    }

    /// Adds a silence from `now` for `length`.
    pub fn add(
        &self,
        matchers: Vec<Matcher>,
        length: Duration,
        reason: &str,
        now: DateTime<Utc>,
    ) -> Result<Silence> {
        if matchers.is_empty() {
            bail!("a silence needs at least one matcher, e.g. host=lab");
        }
        if length <= Duration::zero() {
            bail!("a silence needs a length greater than zero, e.g. --for 2h");
        }
        let end = length
            .to_std()
            .map_err(|e| e.to_string())
            .and_then(|span| crate::clock::ahead(now, span))
            .map_err(|why| anyhow::anyhow!("a silence's length: {why}"))?;
        let reason = crate::text::clean(&self.gate.redact_str(reason), REASON_MAX_CHARS);
        let silence = Silence {
            id: uuid::Uuid::new_v4().simple().to_string()[..8].to_string(),
            matchers,
            start: now,
            end,
            reason,
        };
        self.locked(|| {
            let mut silences = self.load(now)?;
            silences.push(silence.clone());
            self.save(silences, now)
        })?;
        Ok(silence)
    }

    /// Ends the silence `id` now; an unknown id is an error naming it.
    pub fn end(&self, id: &str, now: DateTime<Utc>) -> Result<Silence> {
        self.locked(|| {
            let mut silences = self.load(now)?;
            let Some(i) = silences.iter().position(|s| s.id == id && s.end > now) else {
                bail!("no active silence {id:?} in {}", self.path.display());
            };
            let mut ended = silences.remove(i);
            ended.end = now;
            self.save(silences, now)?;
            Ok(ended)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::maintenance::tests::{at, el, weekly_backup};

    #[test]
    fn a_silence_holds_from_its_start_until_its_end_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let store = SilenceStore::new(dir.path(), RedactionGate::default());
        let now = at("2026-11-30T14:00:00Z");
        let s = store
            .add(
                vec![Matcher::parse("host=lab").unwrap()],
                Duration::hours(2),
                "disk swap",
                now,
            )
            .unwrap();
        let kept = store.load(now).unwrap();
        assert_eq!(kept, vec![s.clone()]);
        let lab = el("host", "lab");
        let held = active(&kept, &[], "host:lab", &lab, now).unwrap();
        assert_eq!(held.describe(), "silenced until 16:00 (disk swap)");
        assert!(active(&kept, &[], "host:lab", &lab, at("2026-11-30T15:59:59Z")).is_some());
        assert!(active(&kept, &[], "host:lab", &lab, at("2026-11-30T16:00:00Z")).is_none());
        assert!(active(&kept, &[], "host:edge", &el("host", "edge"), now).is_none());
        // Ended early: gone from the file.
        let ended = store.end(&s.id, now + Duration::minutes(5)).unwrap();
        assert_eq!(ended.end, now + Duration::minutes(5));
        assert!(store.load(now).unwrap().is_empty());
        let err = store.end(&s.id, now).unwrap_err().to_string();
        assert!(err.contains("no active silence"), "{err}");
    }

    #[test]
    fn a_corrupt_silences_file_is_set_aside_naming_it_and_silences_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = SilenceStore::new(dir.path(), RedactionGate::default());
        let now = at("2026-11-30T14:00:00Z");
        std::fs::write(store.path(), "[").unwrap();
        let (loaded, logs) = crate::logging::logs_of(|| store.load(now));
        assert!(loaded.unwrap().is_empty());
        assert!(logs.contains("ERROR"), "{logs}");
        assert!(logs.contains("silences.json"), "{logs}");
        assert!(logs.contains("not a silences file"), "{logs}");
        let aside = dir.path().join("silences.json.corrupt-20261130T140000Z");
        assert_eq!(std::fs::read(&aside).unwrap(), b"[");
        // The operator can silence again at once; the copy stays for them to look at.
        store
            .add(
                vec![Matcher::parse("host=lab").unwrap()],
                Duration::hours(1),
                "",
                now,
            )
            .unwrap();
        assert_eq!(store.load(now).unwrap().len(), 1);
        assert!(aside.exists());
        // A file that cannot be read at all is an error naming it, left as it is.
        std::fs::remove_file(store.path()).unwrap();
        std::fs::create_dir(store.path()).unwrap();
        let err = format!("{:#}", store.load(now).unwrap_err());
        assert!(err.contains("silences.json"), "{err}");
    }

    #[test]
    fn adds_at_the_same_time_all_land() {
        let dir = tempfile::tempdir().unwrap();
        let now = at("2026-11-30T14:00:00Z");
        let threads: Vec<_> = (0..8)
            .map(|i| {
                let path = dir.path().to_path_buf();
                std::thread::spawn(move || {
                    SilenceStore::new(&path, RedactionGate::default())
                        .add(
                            vec![Matcher::parse(&format!("agent=a{i}")).unwrap()],
                            Duration::hours(1),
                            "",
                            now,
                        )
                        .unwrap()
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let store = SilenceStore::new(dir.path(), RedactionGate::default());
        assert_eq!(store.load(now).unwrap().len(), 8);
    }

    #[test]
    fn a_maintenance_window_holds_back_what_it_matches_while_it_runs() {
        let w = weekly_backup();
        let windows = [w];
        let cron = el("cron", "backup on lab");
        let held = active(
            &[],
            &windows,
            "host:lab/cron:backup",
            &cron,
            at("2026-11-29T23:30:00Z"),
        );
        assert_eq!(
            held.unwrap().describe(),
            "silenced until 01:00 (weekly backup)"
        );
        assert!(
            active(
                &[],
                &windows,
                "host:lab",
                &el("host", "lab"),
                at("2026-11-29T23:30:00Z")
            )
            .is_none()
        );
    }
}

//! Acting from the phone (issue 24): an ntfy notification's buttons ("Silence 1 h",
//! "Acknowledge") call `fleetdash serve` with a link that is its own authorization, because the
//! ntfy app sends no password. So each link is
//! - **signed**: HMAC-SHA256 with a key of this installation (`<state_dir>/phone-actions.key`,
//!   32 random bytes, owner-only, made by whichever process needs it first); a changed byte
//!   anywhere (another element, another action, a later expiry) is a forged link;
//! - **bound** to one element key and one action, both inside what is signed;
//! - **expiring** after the rules' `phone_actions.link_valid_seconds`;
//! - **single-use**: its random nonce is recorded in `<state_dir>/phone-actions-used.json`
//!   (under a lock, replaced atomically) until the link would have expired anyway.
//!
//! A good link does what the CLI does, "from the phone": a silence of
//! `phone_actions.silence_seconds` recorded like `fleetdash silence add key=<key>`, or an ack
//! like `fleetdash ack <key>` (refused, the link left unused, when the alert is no longer
//! open). Every refusal is said in words for the problem body and changes nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use chrono::{DateTime, Duration, Utc};
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use super::acks::AckStore;
use super::silences::SilenceStore;
use crate::clock::{Clock, Clocked};
use crate::config::maintenance::Matcher;
use crate::config::{AlertRules, Config};
use crate::redact::RedactionGate;
use crate::write::{atomic, state_file};

pub const KEY_FILE: &str = "phone-actions.key";
pub const USED_FILE: &str = "phone-actions-used.json";
const USED_LOCK: &str = "phone-actions-used.lock";
/// The reason a phone's silence is recorded with, as the page shows it.
pub const FROM_THE_PHONE: &str = "from the phone";
/// The path under the dashboard's URL that takes the links.
pub const PATH: &str = "act";
const KEY_BYTES: usize = 32;
/// Bumped when what is signed changes: an old link is then forged, not misread.
const LINK_VERSION: &str = "v1";
/// The longest token taken: an element key is short; a megabyte is an attack.
pub const TOKEN_MAX_BYTES: usize = 2048;

/// What a button does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Silence,
    Ack,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Silence => "silence",
            Action::Ack => "ack",
        }
    }

    fn parse(text: &str) -> Option<Action> {
        match text {
            "silence" => Some(Action::Silence),
            "ack" => Some(Action::Ack),
            _ => None,
        }
    }
}

/// What a link says, once its signature checked out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub key: String,
    pub action: Action,
    pub expires: DateTime<Utc>,
    nonce: String,
}

/// Why a link is refused: each a 403 that changes nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// Not a link this installation makes (cut, garbled, too long).
    Malformed,
    /// Its signature does not match what it says: changed, or made with another key.
    Forged,
    Expired {
        at: DateTime<Utc>,
    },
    /// It worked once already.
    Used,
    /// An ack of an alert that is no longer open (it recovered): nothing to acknowledge.
    NothingOpen {
        key: String,
    },
    /// Signed, but its expiry is no date, or further out than any link is made for (the
    /// horizon): a 400, never arithmetic on it.
    OutOfRange,
}

impl Refused {
    pub fn words(&self) -> String {
        match self {
            Refused::Malformed => "not an action link of this fleetdash".into(),
            Refused::Forged => {
                "the link's signature does not match: it was changed, or made by another \
                 installation"
                    .into()
            }
            Refused::Expired { at } => format!(
                "the link expired at {} UTC; act from the CLI or a newer notification",
                at.format("%Y-%m-%d %H:%M")
            ),
            Refused::Used => "the link was used already; each works once".into(),
            Refused::NothingOpen { key } => {
                format!("{key} has no open alert now (it recovered): nothing to acknowledge")
            }
            Refused::OutOfRange => format!(
                "the link's expiry is out of range: no link is valid for more than {}",
                crate::clock::HORIZON_WORDS
            ),
        }
    }
}

/// The installation's signing key.
pub struct Signer {
    key: Vec<u8>,
}

impl Signer {
    /// The key in `state_dir`, made (owner-only, never replaced) when there is none. Blocking.
    pub fn load_or_create(state_dir: &Path) -> Result<Signer> {
        let path = state_dir.join(KEY_FILE);
        match std::fs::read(&path) {
            Ok(key) if key.len() == KEY_BYTES => return Ok(Signer { key }),
            Ok(key) => anyhow::bail!(
                "{} holds {} bytes, not {KEY_BYTES}: remove it and a new key is made (links \
                 already sent stop working)",
                path.display(),
                key.len()
            ),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
        }
        let key: [u8; KEY_BYTES] = rand::random();
        let made = {
            use std::io::Write as _;
            use std::os::unix::fs::OpenOptionsExt as _;
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)
                .and_then(|mut f| f.write_all(&key).and_then(|()| f.sync_all()))
        };
        match made {
            Ok(()) => Ok(Signer { key: key.to_vec() }),
            // Another process made it first: use theirs.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                Signer::load_or_create(state_dir)
            }
            Err(e) => Err(e).with_context(|| format!("cannot write {}", path.display())),
        }
    }

    fn mac(&self, payload: &[u8]) -> Hmac<Sha256> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.key).expect("HMAC takes any key");
        mac.update(payload);
        mac
    }

    /// A link's token: what it says, then its signature, each base64url.
    pub fn token(&self, key: &str, action: Action, expires: DateTime<Utc>) -> String {
        self.token_and_nonce(key, action, expires).0
    }

    /// [`Signer::token`], and the link's nonce (its name on the clock).
    fn token_and_nonce(
        &self,
        key: &str,
        action: Action,
        expires: DateTime<Utc>,
    ) -> (String, String) {
        let nonce = B64.encode(rand::random::<[u8; 16]>());
        let payload = format!(
            "{LINK_VERSION}\n{}\n{}\n{nonce}\n{key}",
            action.as_str(),
            expires.timestamp()
        );
        let signature = self.mac(payload.as_bytes()).finalize().into_bytes();
        let token = format!("{}.{}", B64.encode(payload), B64.encode(signature));
        (token, nonce)
    }

    /// What `token` says, if this key signed it and it has not expired at `now`. Not yet
    /// whether it was used ([`UsedLinks::take`]).
    pub fn verify(&self, token: &str, now: DateTime<Utc>) -> Result<Link, Refused> {
        self.verify_at(token, &Clocked::wall_only(now))
    }

    /// [`Signer::verify`] at `at`: a link made in this run has as much time left as was
    /// observed since it was made (a step of the clock neither kills nor prolongs it).
    pub fn verify_at(&self, token: &str, at: &Clocked) -> Result<Link, Refused> {
        if token.len() > TOKEN_MAX_BYTES {
            return Err(Refused::Malformed);
        }
        let (payload, signature) = token.split_once('.').ok_or(Refused::Malformed)?;
        let payload = B64.decode(payload).map_err(|_| Refused::Malformed)?;
        let signature = B64.decode(signature).map_err(|_| Refused::Malformed)?;
        // Constant time: the answer's timing says nothing of how much of a guess was right.
        self.mac(&payload)
            .verify_slice(&signature)
            .map_err(|_| Refused::Forged)?;
        let text = String::from_utf8(payload).map_err(|_| Refused::Malformed)?;
        let mut parts = text.splitn(5, '\n');
        let (Some(LINK_VERSION), Some(action), Some(expires), Some(nonce), Some(key)) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        ) else {
            return Err(Refused::Malformed);
        };
        let action = Action::parse(action).ok_or(Refused::Malformed)?;
        let expires = expires.parse::<i64>().map_err(|_| Refused::Malformed)?;
        let expires = DateTime::from_timestamp(expires, 0)
            .and_then(|expires| crate::clock::within_horizon(expires, at.wall()).ok())
            .ok_or(Refused::OutOfRange)?;
        if at.until(&link_what(nonce), expires) <= 0 {
            return Err(Refused::Expired { at: expires });
        }
        Ok(Link {
            key: key.to_string(),
            action,
            expires,
            nonce: nonce.to_string(),
        })
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct UsedFile {
    version: u32,
    /// Each used link's nonce, and when the link expires (then it is forgotten).
    used: BTreeMap<String, DateTime<Utc>>,
}

const USED_VERSION: u32 = 1;

impl state_file::StateFile for UsedFile {
    const WHAT: &'static str = "used phone links";

    fn layout_problem(&self) -> Option<String> {
        (self.version != USED_VERSION)
            .then(|| format!("layout version {} (expected {USED_VERSION})", self.version))
    }
}

/// The links used so far, until they expire.
pub struct UsedLinks {
    path: PathBuf,
}

impl UsedLinks {
    pub fn new(state_dir: &Path) -> UsedLinks {
        UsedLinks {
            path: state_dir.join(USED_FILE),
        }
    }

    /// Marks `link` used; `Err(Used)` when it was already. Blocking (a lock, fsync).
    pub fn take(&self, link: &Link, now: DateTime<Utc>) -> Result<Result<(), Refused>> {
        let lock_path = self.path.with_file_name(USED_LOCK);
        let lock = std::fs::File::create(&lock_path)
            .with_context(|| format!("cannot open lock file {}", lock_path.display()))?;
        lock.lock()
            .with_context(|| format!("cannot lock {}", lock_path.display()))?;
        // A corrupt file is set aside and said: its links could be replayed until they expire,
        // which a forged link still cannot.
        let mut file = match state_file::load::<UsedFile>(&self.path, now) {
            state_file::Loaded::Found(file) => file,
            state_file::Loaded::Missing | state_file::Loaded::SetAside { .. } => {
                UsedFile::default()
            }
            state_file::Loaded::Unreadable(e) => return Err(e),
        };
        if file.used.contains_key(&link.nonce) {
            return Ok(Err(Refused::Used));
        }
        file.version = USED_VERSION;
        file.used.retain(|_, expires| *expires > now);
        file.used.insert(link.nonce.clone(), link.expires);
        atomic::write(&self.path, &serde_json::to_vec(&file)?)
            .with_context(|| format!("cannot save {}", self.path.display()))?;
        Ok(Ok(()))
    }
}

/// What a good link did, in words for its answer and the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Done {
    pub key: String,
    pub action: Action,
    pub words: String,
}

/// The desk that takes the links: `fleetdash serve` holds one, built from the config.
pub struct PhoneActions {
    state_dir: PathBuf,
    silences: SilenceStore,
    acks: AckStore,
    used: UsedLinks,
    silence_for: Duration,
    /// The run's clock, which the links it made were noted on; without one, the wall clock.
    clock: Option<Clock>,
}

/// The name the clock knows a link's time left by.
fn link_what(nonce: &str) -> String {
    format!("phone link {nonce}")
}

impl PhoneActions {
    pub fn new(config: &Config, rules: &AlertRules, gate: RedactionGate) -> PhoneActions {
        PhoneActions {
            state_dir: config.state_dir.clone(),
            silences: SilenceStore::new(&config.state_dir, gate.clone()),
            acks: AckStore::new(&config.state_dir, gate),
            used: UsedLinks::new(&config.state_dir),
            silence_for: Duration::seconds(
                i64::try_from(rules.phone_silence.seconds).unwrap_or(i64::MAX),
            ),
            clock: None,
        }
    }

    /// Checks links' time left on `clock` (the run's, which made them).
    pub fn with_clock(mut self, clock: Option<Clock>) -> PhoneActions {
        self.clock = clock;
        self
    }

    /// Checks `token` at this desk's clock and does what it says, once.
    pub fn act_now(&self, token: &str) -> Result<Result<Done, Refused>> {
        let at = match &self.clock {
            Some(clock) => clock.clocked(),
            None => Clocked::wall_only(Utc::now()),
        };
        self.act_at(token, &at)
    }

    /// Checks `token` and does what it says, once. `Ok(Err(_))`: refused, nothing changed;
    /// `Err(_)`: a file could not be read or written. Blocking (reads, a lock, fsync).
    pub fn act(&self, token: &str, now: DateTime<Utc>) -> Result<Result<Done, Refused>> {
        self.act_at(token, &Clocked::wall_only(now))
    }

    fn act_at(&self, token: &str, at: &Clocked) -> Result<Result<Done, Refused>> {
        let now = at.wall();
        let signer = Signer::load_or_create(&self.state_dir)?;
        let link = match signer.verify_at(token, at) {
            Ok(link) => link,
            Err(refused) => return Ok(Err(refused)),
        };
        if link.action == Action::Ack && !self.acks.has_open_alert(&link.key, now) {
            return Ok(Err(Refused::NothingOpen { key: link.key }));
        }
        if let Err(refused) = self.used.take(&link, now)? {
            return Ok(Err(refused));
        }
        let words = match link.action {
            Action::Silence => {
                let matcher = Matcher::parse(&format!("key={}", link.key))
                    .map_err(|e| anyhow::anyhow!("the link's element: {e}"))?;
                let silence =
                    self.silences
                        .add(vec![matcher], self.silence_for, FROM_THE_PHONE, now)?;
                format!(
                    "silenced {} until {} UTC ({FROM_THE_PHONE})",
                    link.key,
                    silence.end.format("%H:%M")
                )
            }
            Action::Ack => {
                let ack = self.acks.ack(&link.key, now, FROM_THE_PHONE)?;
                format!(
                    "acked {} at {} UTC ({FROM_THE_PHONE}): no reminders until it changes",
                    link.key,
                    ack.at.format("%H:%M")
                )
            }
        };
        Ok(Ok(Done {
            key: link.key,
            action: link.action,
            words,
        }))
    }
}

/// Makes the links an ntfy notification carries: a channel holds one when the config names
/// the dashboard's URL (the links are under it).
pub struct LinkMaker {
    state_dir: PathBuf,
    base: url::Url,
    valid_for: Duration,
    silence_s: u64,
    /// The run's clock: each link's time left is noted on it as the link is made.
    clock: Option<Clock>,
}

impl LinkMaker {
    pub fn from_config(config: &Config, rules: &AlertRules) -> Option<LinkMaker> {
        Some(LinkMaker {
            state_dir: config.state_dir.clone(),
            base: config.alerts.dashboard_url.clone()?,
            valid_for: Duration::seconds(
                i64::try_from(rules.phone_link_valid.seconds).unwrap_or(i64::MAX),
            ),
            silence_s: rules.phone_silence.seconds,
            clock: None,
        })
    }

    /// Notes each link's time left on `clock` as it is made.
    pub fn with_clock(mut self, clock: Option<Clock>) -> LinkMaker {
        self.clock = clock;
        self
    }

    /// The silence button's label: "Silence 1 h".
    pub fn silence_label(&self) -> String {
        format!("Silence {}", fleetdash_model::human_age(self.silence_s))
    }

    /// The page, at the top.
    pub fn page(&self) -> String {
        self.base.to_string()
    }

    /// The page, opened at the element's row.
    pub fn open(&self, kind: &str, name: &str) -> String {
        let mut url = self.base.clone();
        url.set_fragment(Some(&fleetdash_model::glance::anchor(kind, name)));
        url.to_string()
    }

    /// When a link made at `now` expires (the rules bound its validity to the horizon).
    pub fn expires(&self, now: DateTime<Utc>) -> DateTime<Utc> {
        now.checked_add_signed(self.valid_for).unwrap_or(now)
    }

    /// A signed link doing `action` on `key`, valid from `now`. Blocking (reads the key, or
    /// makes it).
    pub fn link(&self, key: &str, action: Action, now: DateTime<Utc>) -> Result<String> {
        let signer = Signer::load_or_create(&self.state_dir)?;
        let expires = self.expires(now);
        let (token, nonce) = signer.token_and_nonce(key, action, expires);
        if let Some(clock) = &self.clock {
            // Its time left, first seen now: from here on it runs on the boot clock.
            clock.until(&link_what(&nonce), expires, &clock.now());
        }
        let mut url = self.base.join(PATH)?;
        url.query_pairs_mut().append_pair("t", &token);
        Ok(url.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn t(minutes: i64) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 3, 29, 1, 30, 0).unwrap() + Duration::minutes(minutes)
    }

    #[test]
    fn a_link_works_once_until_it_expires_and_every_changed_byte_is_forged() {
        let dir = tempfile::tempdir().unwrap();
        let signer = Signer::load_or_create(dir.path()).unwrap();
        let used = UsedLinks::new(dir.path());
        let token = signer.token("agent:vega", Action::Silence, t(60));
        let link = signer.verify(&token, t(0)).unwrap();
        assert_eq!(link.key, "agent:vega");
        assert_eq!(link.action, Action::Silence);
        assert_eq!(used.take(&link, t(0)).unwrap(), Ok(()));
        assert_eq!(used.take(&link, t(1)).unwrap(), Err(Refused::Used));
        // Expired at exactly its time.
        let late = signer.token("agent:vega", Action::Silence, t(60));
        assert!(signer.verify(&late, t(59)).is_ok());
        assert_eq!(
            signer.verify(&late, t(60)),
            Err(Refused::Expired { at: t(60) })
        );
        // Another element's link: the payload of one, the signature of another.
        let orin = signer.token("agent:orin", Action::Silence, t(60));
        let spliced = format!(
            "{}.{}",
            orin.split_once('.').unwrap().0,
            token.split_once('.').unwrap().1
        );
        assert_eq!(signer.verify(&spliced, t(0)), Err(Refused::Forged));
        // The payload re-encoded with a later expiry, the old signature kept.
        let payload = String::from_utf8(B64.decode(token.split_once('.').unwrap().0).unwrap())
            .unwrap()
            .replace(
                &t(60).timestamp().to_string(),
                &t(6000).timestamp().to_string(),
            );
        let later = format!(
            "{}.{}",
            B64.encode(payload),
            token.split_once('.').unwrap().1
        );
        assert_eq!(signer.verify(&later, t(0)), Err(Refused::Forged));
        // Another installation's key.
        let other = tempfile::tempdir().unwrap();
        let theirs = Signer::load_or_create(other.path()).unwrap().token(
            "agent:vega",
            Action::Silence,
            t(60),
        );
        assert_eq!(signer.verify(&theirs, t(0)), Err(Refused::Forged));
        for garbage in ["", "abc", "a.b", &"x".repeat(TOKEN_MAX_BYTES + 1)] {
            assert_eq!(signer.verify(garbage, t(0)), Err(Refused::Malformed));
        }
    }

    #[test]
    fn the_key_is_made_once_owner_only_and_kept() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let first = Signer::load_or_create(dir.path()).unwrap();
        let mode = std::fs::metadata(dir.path().join(KEY_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let token = first.token("host:lab", Action::Ack, t(60));
        let again = Signer::load_or_create(dir.path()).unwrap();
        assert!(
            again.verify(&token, t(0)).is_ok(),
            "the same key after a restart"
        );
        std::fs::write(dir.path().join(KEY_FILE), b"short").unwrap();
        let e = Signer::load_or_create(dir.path())
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("holds 5 bytes, not 32"), "{e}");
    }

    #[test]
    fn an_ack_of_what_is_no_longer_open_is_refused_and_leaves_the_link_unused() {
        let (dir, path) = crate::config::config_beside_fleet_rules(
            "output_dir = \"o\"\nstate_dir = \"s\"\nrules = \"rules.yaml\"\n",
        );
        std::fs::create_dir_all(dir.path().join("s")).unwrap();
        let (config, rules) = Config::load(&path).unwrap_or_else(|e| panic!("{e}"));
        let desk = PhoneActions::new(&config, &rules.alerts, RedactionGate::default());
        let signer = Signer::load_or_create(&config.state_dir).unwrap();
        let token = signer.token("agent:min", Action::Ack, t(60));
        assert_eq!(
            desk.act(&token, t(0)).unwrap(),
            Err(Refused::NothingOpen {
                key: "agent:min".into()
            })
        );
        assert!(
            !config.state_dir.join(USED_FILE).exists(),
            "the link is not spent"
        );
        // A silence needs no open alert: it holds what comes.
        let token = signer.token("agent:min", Action::Silence, t(60));
        let done = desk.act(&token, t(0)).unwrap().unwrap();
        assert_eq!(
            done.words,
            "silenced agent:min until 02:30 UTC (from the phone)"
        );
    }

    #[test]
    fn used_links_are_forgotten_once_expired() {
        let dir = tempfile::tempdir().unwrap();
        let signer = Signer::load_or_create(dir.path()).unwrap();
        let used = UsedLinks::new(dir.path());
        let old = signer.verify(&signer.token("host:lab", Action::Silence, t(10)), t(0));
        used.take(&old.unwrap(), t(0)).unwrap().unwrap();
        let new = signer.verify(&signer.token("host:lab", Action::Silence, t(90)), t(20));
        used.take(&new.unwrap(), t(20)).unwrap().unwrap();
        let file: UsedFile =
            serde_json::from_slice(&std::fs::read(dir.path().join(USED_FILE)).unwrap()).unwrap();
        assert_eq!(file.used.len(), 1, "the expired one is gone");
    }
}

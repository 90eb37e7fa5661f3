//! Basic auth for `fleetdash serve` that a password-guessing storm cannot stall.
//!
//! bcrypt is slow on purpose (about 100 ms a verify at the usual costs). Run on the async
//! workers, a burst of wrong passwords would hold every worker and every other request would
//! wait behind it. So:
//! - a verify runs on the blocking pool, a few at a time, with a bound on those admitted
//!   (running or waiting); past it the answer is 503 with Retry-After, at no cost: a storm cannot
//!   queue unbounded work;
//! - a credential that verified is remembered as an HMAC-SHA256 of it under a key drawn at
//!   start (never the password, nor anything that outlives the process), a bounded number of
//!   them, until it goes unused for a while (each use renews it): the page's polls cost no
//!   bcrypt, not even during a storm, when the verify queue is full;
//! - a client address that keeps failing is slowed down: after a few free failures it gets 429
//!   with Retry-After, without any bcrypt, for a backoff that doubles with each further failure,
//!   up to a cap; a quiet spell forgets it. A verify counts against its address from the moment
//!   it is admitted, as if it had failed, until it is settled: an address may have no more
//!   verifies pending than it has free failures left (one at a time past them), so wrong
//!   passwords sent at once cost no more bcrypt than sent one by one, and one address cannot
//!   fill the verify queue. A verify whose client went away is settled all the same once its
//!   bcrypt has run (hanging up buys no free guess); one that never reached bcrypt costs
//!   nothing. A bounded number of addresses is tracked. Other addresses are unaffected, and so
//!   is a remembered credential from the same address (a shared NAT), which is checked first.
//!
//! A 429 or 503 is held a moment before it is sent, so that a client retrying in a tight loop
//! cannot turn cheap refusals into a flood of its own.
//!
//! Every bound is a field of [`AuthLimits`], with its value and reason in [`AuthLimits::DEFAULT`].
//!
//! Tests can hold every verify at the door of bcrypt, on its blocking thread
//! ([`Authenticator::hold_verifies`]), and count those pending: they check what is answered
//! while verifies are pending by the order of events, never by how fast bcrypt is.
//!
//! The `Basic` scheme name is matched case-insensitively (RFC 7617, RFC 9110 §11.1).

use std::net::{IpAddr, Ipv4Addr};
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use base64::Engine;
use lru::LruCache;
use ring::hmac;
use tokio::sync::Semaphore;
// tokio's clock, which a test can pause and advance: expiries are checked without waiting them out.
use tokio::time::Instant;

use super::htpasswd::Htpasswd;

/// The bounds of the authenticator. Production uses [`AuthLimits::DEFAULT`]; tests shorten or
/// lengthen them to observe behaviour without racing a clock.
#[derive(Debug, Clone)]
pub struct AuthLimits {
    /// bcrypt verifies running at once, on the blocking pool.
    pub verify_slots: usize,
    /// Verifies admitted at once (running or waiting for a slot); more are answered 503 at once.
    pub max_pending_verifies: usize,
    /// What a client that finds the verify queue full is told to wait.
    pub busy_retry_after: Duration,
    /// How long a verified credential is taken without a new bcrypt after its last use (each
    /// use renews it). No bound on its age besides: the htpasswd is read once at start, so a
    /// new bcrypt of the same password against the same hash could only say yes again, and the
    /// restart a changed htpasswd needs forgets every credential.
    pub verified_idle_timeout: Duration,
    /// Verified credentials remembered at once (least recently used dropped first).
    pub verified_capacity: usize,
    /// Failed logins an address may make before it is slowed down: that many are answered 401,
    /// and the attempt after the last of them gets 429.
    pub free_failures: u32,
    /// The first backoff after the free failures; each further failure doubles it.
    pub backoff_base: Duration,
    /// The longest backoff.
    pub backoff_max: Duration,
    /// An address without a failure for this long starts afresh.
    pub failure_memory: Duration,
    /// Addresses whose failures are tracked at once (least recently failing dropped first).
    pub tracked_clients: usize,
    /// How long a 429 or 503 is held before it is sent (never longer than its Retry-After): a
    /// client that retries at once then costs one cheap answer per hold, not thousands a
    /// second, and holding costs only a sleeping task.
    pub hold_refusal: Duration,
}

impl AuthLimits {
    pub const DEFAULT: AuthLimits = AuthLimits {
        // Two cores is the small host this runs on: bcrypt never takes more.
        verify_slots: 2,
        max_pending_verifies: 32,
        busy_retry_after: Duration::from_secs(1),
        // The page polls every 30 s: an open page never needs another bcrypt; one left closed a
        // quarter of an hour needs one.
        verified_idle_timeout: Duration::from_secs(15 * 60),
        verified_capacity: 64,
        // Room for typos and a few reloads with a stale saved password (fail2ban's default is
        // 5 in 10 min, for sshd, which has no backoff after it).
        free_failures: 10,
        backoff_base: Duration::from_secs(1),
        backoff_max: Duration::from_secs(5 * 60),
        failure_memory: Duration::from_secs(15 * 60),
        tracked_clients: 4096,
        hold_refusal: Duration::from_secs(1),
    };

    /// The backoff once an address has made `free_failures + over` failures.
    fn backoff(&self, over: u32) -> Duration {
        self.backoff_base
            .checked_mul(1u32.checked_shl(over).unwrap_or(u32::MAX))
            .map_or(self.backoff_max, |d| d.min(self.backoff_max))
    }
}

/// What to answer a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Allowed,
    /// 401 with the Basic challenge: no, wrong or malformed credentials.
    Refused,
    /// 429: this address failed too often, or has as many verifies pending as it has failures
    /// left; no bcrypt ran.
    Throttled {
        retry_after: Duration,
    },
    /// 503: too many verifies pending; no bcrypt ran.
    Busy {
        retry_after: Duration,
    },
}

/// The failures of the addresses tracked, shared with the blocking verifies that settle into it.
struct Throttle {
    limits: AuthLimits,
    clients: Mutex<LruCache<IpAddr, Failures>>,
}

struct Failures {
    /// Failed logins since the address was last forgiven or forgotten.
    failed: u32,
    /// Verifies admitted for the address and not yet settled: each may yet be a failure.
    pending: u32,
    /// The last failure.
    last: Instant,
    blocked_until: Option<Instant>,
}

/// How an admitted verify ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Verified,
    Failed,
    /// No bcrypt ran for it: the queue was full (503), or its request went away while waiting.
    Abandoned,
}

/// A verify admitted for an address, counted against it until settled; dropped unsettled, it
/// is [`Outcome::Abandoned`].
struct Attempt {
    throttle: Arc<Throttle>,
    client: IpAddr,
    settled: bool,
}

pub struct Authenticator {
    limits: AuthLimits,
    htpasswd: Htpasswd,
    key: hmac::Key,
    verified: Mutex<LruCache<CredentialTag, Instant>>,
    throttle: Arc<Throttle>,
    admitted: Semaphore,
    running: Arc<Semaphore>,
    bcrypt_runs: AtomicU64,
    gate: Arc<VerifyGate>,
}

/// The door every verify passes on its blocking thread just before bcrypt: open, unless a test
/// holds it closed ([`Authenticator::hold_verifies`]).
#[derive(Default)]
struct VerifyGate {
    /// How many [`HeldVerifies`] are alive; the door is open at 0.
    holds: Mutex<usize>,
    opened: Condvar,
    /// Verifies waiting at the closed door.
    waiting: AtomicUsize,
}

impl VerifyGate {
    /// Returns at once when the door is open; else blocks this (blocking-pool) thread until it is.
    fn pass(&self) {
        let mut holds = lock(&self.holds);
        if *holds == 0 {
            return;
        }
        self.waiting.fetch_add(1, Ordering::SeqCst);
        while *holds > 0 {
            holds = self
                .opened
                .wait(holds)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
        }
        self.waiting.fetch_sub(1, Ordering::SeqCst);
    }
}

/// While this lives, every verify waits at the door of bcrypt, on the blocking thread it would
/// run on (so it still holds its verify slot). Dropping it lets them through.
#[must_use = "verifies are held only while this lives"]
pub struct HeldVerifies {
    gate: Arc<VerifyGate>,
}

impl Drop for HeldVerifies {
    fn drop(&mut self) {
        let mut holds = lock(&self.gate.holds);
        *holds -= 1;
        if *holds == 0 {
            self.gate.opened.notify_all();
        }
    }
}

/// An HMAC-SHA256 of `user:password`: what is remembered of a verified credential.
type CredentialTag = [u8; 32];

/// Requests without a known peer address (a router driven in-process) share this one.
const UNKNOWN_CLIENT: IpAddr = IpAddr::V4(Ipv4Addr::UNSPECIFIED);

impl Authenticator {
    pub fn new(htpasswd: Htpasswd) -> Authenticator {
        Authenticator::with_limits(htpasswd, AuthLimits::DEFAULT)
    }

    pub fn with_limits(htpasswd: Htpasswd, limits: AuthLimits) -> Authenticator {
        let rng = ring::rand::SystemRandom::new();
        Authenticator {
            htpasswd,
            key: hmac::Key::generate(hmac::HMAC_SHA256, &rng)
                .expect("the system's random source works"),
            verified: Mutex::new(LruCache::new(nonzero(limits.verified_capacity))),
            throttle: Arc::new(Throttle {
                clients: Mutex::new(LruCache::new(nonzero(limits.tracked_clients))),
                limits: limits.clone(),
            }),
            admitted: Semaphore::new(limits.max_pending_verifies),
            running: Arc::new(Semaphore::new(limits.verify_slots.max(1))),
            bcrypt_runs: AtomicU64::new(0),
            gate: Arc::default(),
            limits,
        }
    }

    /// How long to hold a 429 or 503 whose Retry-After is `retry_after`.
    pub fn hold_for(&self, retry_after: Duration) -> Duration {
        self.limits.hold_refusal.min(retry_after)
    }

    /// How many bcrypt verifies ran since start (remembered credentials and throttled clients
    /// cost none).
    pub fn bcrypt_runs(&self) -> u64 {
        self.bcrypt_runs.load(Ordering::Relaxed)
    }

    /// Holds every verify at the door of bcrypt until the returned value is dropped: for tests
    /// that must see verifies pending while something else is answered, without racing bcrypt.
    pub fn hold_verifies(&self) -> HeldVerifies {
        *lock(&self.gate.holds) += 1;
        HeldVerifies {
            gate: self.gate.clone(),
        }
    }

    /// Verifies admitted and not yet answered: running, waiting for a slot, or held.
    pub fn verifies_pending(&self) -> usize {
        self.limits.max_pending_verifies - self.admitted.available_permits()
    }

    /// Verifies on a blocking thread, held at the door of bcrypt by [`Self::hold_verifies`].
    pub fn verifies_held(&self) -> usize {
        self.gate.waiting.load(Ordering::SeqCst)
    }

    /// Judges one request's `Authorization` header value from `client`.
    pub async fn check(&self, client: Option<IpAddr>, authorization: Option<&str>) -> Verdict {
        let Some((user, password)) = authorization.and_then(basic_credentials) else {
            return Verdict::Refused;
        };
        let client = client.unwrap_or(UNKNOWN_CLIENT);
        let now = Instant::now();
        let tag = self.tag(&user, &password);
        if self.remembered(&tag, now) {
            return Verdict::Allowed;
        }
        let attempt = match self.throttle.admit(client, now) {
            Ok(attempt) => attempt,
            Err(retry_after) => return Verdict::Throttled { retry_after },
        };
        let Some(hash) = self.htpasswd.hash_of(&user) else {
            attempt.settle(Outcome::Failed);
            return Verdict::Refused;
        };
        let Ok(_admission) = self.admitted.try_acquire() else {
            return Verdict::Busy {
                retry_after: self.limits.busy_retry_after,
            };
        };
        let Ok(slot) = self.running.clone().acquire_owned().await else {
            return Verdict::Busy {
                retry_after: self.limits.busy_retry_after,
            };
        };
        self.bcrypt_runs.fetch_add(1, Ordering::Relaxed);
        let hash = hash.to_string();
        let gate = self.gate.clone();
        let verified = tokio::task::spawn_blocking(move || {
            let _slot = slot;
            gate.pass();
            let verified = bcrypt::verify(&password, &hash).unwrap_or(false);
            // Here rather than after the await: a client that hung up while its bcrypt ran is
            // charged for it all the same.
            attempt.settle(if verified {
                Outcome::Verified
            } else {
                Outcome::Failed
            });
            verified
        })
        .await
        .unwrap_or(false);
        if verified {
            self.remember(tag);
            Verdict::Allowed
        } else {
            Verdict::Refused
        }
    }

    fn tag(&self, user: &str, password: &[u8]) -> CredentialTag {
        let mut ctx = hmac::Context::with_key(&self.key);
        // The user name holds no ':' (RFC 7617), so user ':' password is unambiguous.
        ctx.update(user.as_bytes());
        ctx.update(b":");
        ctx.update(password);
        ctx.sign()
            .as_ref()
            .try_into()
            .expect("HMAC-SHA256 is 32 bytes")
    }

    fn remembered(&self, tag: &CredentialTag, now: Instant) -> bool {
        let mut verified = lock(&self.verified);
        match verified.get_mut(tag) {
            Some(until) if *until > now => {
                *until = now + self.limits.verified_idle_timeout;
                true
            }
            Some(_) => {
                verified.pop(tag);
                false
            }
            None => false,
        }
    }

    fn remember(&self, tag: CredentialTag) {
        lock(&self.verified).put(tag, Instant::now() + self.limits.verified_idle_timeout);
    }
}

impl Throttle {
    /// Admits one more verify for `client`, counted against it until settled, or says how long
    /// it must wait.
    fn admit(self: &Arc<Self>, client: IpAddr, now: Instant) -> Result<Attempt, Duration> {
        let mut clients = lock(&self.clients);
        let record = clients.get_or_insert_mut(client, || Failures {
            failed: 0,
            pending: 0,
            last: now,
            blocked_until: None,
        });
        record.forget_if_quiet(now, self.limits.failure_memory);
        if let Some(until) = record.blocked_until.filter(|until| *until > now) {
            return Err(until - now);
        }
        // As many at once as free failures are left, so that all of them failing makes no more
        // failures than allowed; past the free ones, one after each backoff.
        let allowed = self
            .limits
            .free_failures
            .saturating_sub(record.failed)
            .max(1);
        if record.pending >= allowed {
            return Err(self.limits.busy_retry_after);
        }
        record.pending += 1;
        Ok(Attempt {
            throttle: self.clone(),
            client,
            settled: false,
        })
    }

    fn settle(&self, client: IpAddr, outcome: Outcome) {
        let now = Instant::now();
        let mut clients = lock(&self.clients);
        let record = if outcome == Outcome::Failed {
            // Tracked again if it was dropped for others meanwhile: a failure is never lost.
            clients.get_or_insert_mut(client, || Failures {
                failed: 0,
                pending: 1,
                last: now,
                blocked_until: None,
            })
        } else {
            let Some(record) = clients.peek_mut(&client) else {
                return;
            };
            record
        };
        record.pending = record.pending.saturating_sub(1);
        match outcome {
            Outcome::Failed => {
                record.forget_if_quiet(now, self.limits.failure_memory);
                record.failed = record.failed.saturating_add(1);
                record.last = now;
                if let Some(over) = record.failed.checked_sub(self.limits.free_failures) {
                    record.blocked_until = Some(now + self.limits.backoff(over));
                }
            }
            // The right password forgives the address (its other pending verifies still count).
            Outcome::Verified => {
                record.failed = 0;
                record.blocked_until = None;
            }
            Outcome::Abandoned => {}
        }
        if record.failed == 0 && record.pending == 0 {
            clients.pop(&client);
        }
    }
}

impl Failures {
    fn forget_if_quiet(&mut self, now: Instant, memory: Duration) {
        if self.failed > 0 && now.duration_since(self.last) > memory {
            self.failed = 0;
            self.blocked_until = None;
        }
    }
}

impl Attempt {
    fn settle(mut self, outcome: Outcome) {
        self.settled = true;
        self.throttle.settle(self.client, outcome);
    }
}

impl Drop for Attempt {
    fn drop(&mut self) {
        if !self.settled {
            self.throttle.settle(self.client, Outcome::Abandoned);
        }
    }
}

/// `user` and the password bytes of a `Basic` credential, any case of the scheme name.
pub fn basic_credentials(header: &str) -> Option<(String, Vec<u8>)> {
    let (scheme, encoded) = header.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let colon = decoded.iter().position(|&b| b == b':')?;
    let user = String::from_utf8(decoded[..colon].to_vec()).ok()?;
    Some((user, decoded[colon + 1..].to_vec()))
}

fn nonzero(n: usize) -> NonZeroUsize {
    NonZeroUsize::new(n).expect("a capacity above zero")
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic while holding the lock leaves a cache, not an invariant: keep using it.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::atomic::AtomicUsize;

    use super::*;

    const LOCAL: Option<IpAddr> = Some(IpAddr::V4(Ipv4Addr::LOCALHOST));
    const GUESSER: Option<IpAddr> = Some(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)));
    const ELSEWHERE: Option<IpAddr> = Some(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 3)));
    /// Long enough that no test outlives a block it set.
    const LONG: Duration = Duration::from_secs(3600);
    /// How long a wait may take before it is called hung. Not a speed bound: generous enough
    /// for a loaded 2-core machine, it only turns a hang into a failure.
    const HANG: Duration = Duration::from_secs(60);

    /// Lets the spawned checks run until `done` holds.
    async fn until(what: &str, done: impl Fn() -> bool) {
        let deadline = std::time::Instant::now() + HANG;
        while !done() {
            assert!(
                std::time::Instant::now() < deadline,
                "{what}: never happened"
            );
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// `guesses` checks from `client` at once, each with its own wrong password; returns them
    /// once each is answered or pending.
    async fn guesses_at_once(
        auth: &Arc<Authenticator>,
        client: Option<IpAddr>,
        guesses: usize,
    ) -> Vec<tokio::task::JoinHandle<Verdict>> {
        let answered = Arc::new(AtomicUsize::new(0));
        let handles = (0..guesses)
            .map(|i| {
                let (auth, answered) = (auth.clone(), answered.clone());
                tokio::spawn(async move {
                    let wrong = header("Basic", "young", &format!("guess {i}"));
                    let verdict = auth.check(client, Some(&wrong)).await;
                    answered.fetch_add(1, Ordering::SeqCst);
                    verdict
                })
            })
            .collect();
        until("every guess answered or pending", || {
            answered.load(Ordering::SeqCst) + auth.verifies_pending() == guesses
        })
        .await;
        handles
    }

    async fn verdicts(handles: Vec<tokio::task::JoinHandle<Verdict>>) -> Vec<Verdict> {
        let mut verdicts = Vec::new();
        for handle in handles {
            verdicts.push(handle.await.unwrap());
        }
        verdicts
    }

    fn header(scheme: &str, user: &str, pass: &str) -> String {
        format!(
            "{scheme} {}",
            base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"))
        )
    }

    fn authenticator(limits: AuthLimits) -> Authenticator {
        let young = bcrypt::hash("s3cret", 4).unwrap();
        let other = bcrypt::hash("other pass", 4).unwrap();
        let text = format!("young:{young}\nother:{other}\n");
        Authenticator::with_limits(Htpasswd::parse(Path::new("h"), &text).unwrap(), limits)
    }

    fn patient() -> AuthLimits {
        AuthLimits {
            backoff_base: LONG,
            backoff_max: LONG,
            ..AuthLimits::DEFAULT
        }
    }

    #[test]
    fn the_basic_scheme_name_is_case_insensitive() {
        for scheme in ["Basic", "basic", "BASIC", "bAsIc"] {
            assert_eq!(
                basic_credentials(&header(scheme, "young", "pw")),
                Some(("young".to_string(), b"pw".to_vec())),
                "{scheme}"
            );
        }
        assert_eq!(basic_credentials(&header("Bearer", "young", "pw")), None);
        assert_eq!(basic_credentials("Basic"), None);
        assert_eq!(basic_credentials("Basic !!!"), None);
        // No colon: no password at all, not an empty one.
        let no_colon = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode("young")
        );
        assert_eq!(basic_credentials(&no_colon), None);
    }

    #[tokio::test]
    async fn the_right_password_only_and_a_remembered_one_runs_no_bcrypt() {
        let auth = authenticator(AuthLimits::DEFAULT);
        let good = header("Basic", "young", "s3cret");
        assert_eq!(auth.check(LOCAL, Some(&good)).await, Verdict::Allowed);
        assert_eq!(auth.bcrypt_runs(), 1);
        for scheme in ["Basic", "basic", "BASIC"] {
            let same = header(scheme, "young", "s3cret");
            assert_eq!(auth.check(GUESSER, Some(&same)).await, Verdict::Allowed);
        }
        assert_eq!(auth.bcrypt_runs(), 1, "remembered: no bcrypt");
        let wrong = header("Basic", "young", "wrong");
        assert_eq!(auth.check(LOCAL, Some(&wrong)).await, Verdict::Refused);
        assert_eq!(auth.bcrypt_runs(), 2, "a wrong password is verified");
        let unknown = header("Basic", "nobody", "s3cret");
        assert_eq!(auth.check(LOCAL, Some(&unknown)).await, Verdict::Refused);
        assert_eq!(auth.check(LOCAL, None).await, Verdict::Refused);
        assert_eq!(auth.check(LOCAL, Some("Bearer x")).await, Verdict::Refused);
        assert_eq!(auth.bcrypt_runs(), 2, "no such user: no bcrypt");
    }

    /// On tokio's paused clock: a remembered credential used just before each expiry stays
    /// remembered for many times its idle timeout; left unused that long, it needs a bcrypt.
    #[tokio::test(start_paused = true)]
    async fn a_remembered_credential_lasts_while_used_and_expires_when_idle() {
        let idle = AuthLimits::DEFAULT.verified_idle_timeout;
        let auth = authenticator(AuthLimits::DEFAULT);
        let good = header("Basic", "young", "s3cret");
        assert_eq!(auth.check(LOCAL, Some(&good)).await, Verdict::Allowed);
        assert_eq!(auth.bcrypt_runs(), 1);
        for use_ in 1..=4 {
            tokio::time::advance(idle - Duration::from_secs(1)).await;
            assert_eq!(auth.check(LOCAL, Some(&good)).await, Verdict::Allowed);
            assert_eq!(
                auth.bcrypt_runs(),
                1,
                "use {use_}: a login in use is renewed"
            );
        }
        tokio::time::advance(idle).await;
        assert_eq!(auth.check(LOCAL, Some(&good)).await, Verdict::Allowed);
        assert_eq!(
            auth.bcrypt_runs(),
            2,
            "a login idle that long is verified again"
        );
    }

    #[tokio::test]
    async fn a_client_that_keeps_failing_is_throttled_and_no_one_else_is() {
        let auth = authenticator(patient());
        let good = header("Basic", "young", "s3cret");
        assert_eq!(auth.check(LOCAL, Some(&good)).await, Verdict::Allowed);
        let wrong = header("basic", "young", "guess");
        for i in 0..AuthLimits::DEFAULT.free_failures {
            assert_eq!(
                auth.check(GUESSER, Some(&wrong)).await,
                Verdict::Refused,
                "failure {i}"
            );
        }
        let runs = auth.bcrypt_runs();
        let Verdict::Throttled { retry_after } = auth.check(GUESSER, Some(&wrong)).await else {
            panic!("the guesser must be throttled");
        };
        assert!(retry_after > Duration::ZERO && retry_after <= LONG);
        // Throttled before bcrypt, even with a right password not yet remembered...
        let other = header("Basic", "other", "other pass");
        assert!(matches!(
            auth.check(GUESSER, Some(&other)).await,
            Verdict::Throttled { .. }
        ));
        assert_eq!(
            auth.bcrypt_runs(),
            runs,
            "a throttled client costs no bcrypt"
        );
        // ...but a remembered credential still passes (a NAT shared with the guesser).
        assert_eq!(auth.check(GUESSER, Some(&good)).await, Verdict::Allowed);
        // Another address is not affected, new credentials included.
        let elsewhere = Some(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 3)));
        assert_eq!(auth.check(elsewhere, Some(&other)).await, Verdict::Allowed);
        assert_eq!(auth.bcrypt_runs(), runs + 1);
    }

    #[test]
    fn the_backoff_doubles_up_to_its_cap() {
        let limits = AuthLimits::DEFAULT;
        assert_eq!(limits.backoff(0), limits.backoff_base);
        assert_eq!(limits.backoff(1), limits.backoff_base * 2);
        assert_eq!(limits.backoff(3), limits.backoff_base * 8);
        assert_eq!(limits.backoff(40), limits.backoff_max);
        assert!((0..64).all(|n| limits.backoff(n) <= limits.backoff_max));
    }

    #[test]
    fn a_refusal_is_held_no_longer_than_its_retry_after() {
        let auth = authenticator(AuthLimits::DEFAULT);
        let hold = AuthLimits::DEFAULT.hold_refusal;
        assert_eq!(auth.hold_for(hold * 10), hold);
        assert_eq!(auth.hold_for(hold / 2), hold / 2);
    }

    #[tokio::test]
    async fn at_most_the_pending_bound_of_verifies_is_admitted() {
        let limits = AuthLimits::DEFAULT;
        let auth = authenticator(limits.clone());
        // Hold every admission, as a storm's pending verifies would.
        let held: Vec<_> = (0..limits.max_pending_verifies)
            .map(|_| auth.admitted.try_acquire().unwrap())
            .collect();
        let wrong = header("Basic", "young", "guess");
        assert_eq!(
            auth.check(GUESSER, Some(&wrong)).await,
            Verdict::Busy {
                retry_after: limits.busy_retry_after
            }
        );
        assert_eq!(auth.bcrypt_runs(), 0);
        drop(held);
        assert_eq!(auth.check(GUESSER, Some(&wrong)).await, Verdict::Refused);
    }

    /// One address sending many wrong passwords at once (more than the verify queue holds):
    /// bcrypt runs only for its free failures, the rest get 429 at once, and another address's
    /// first login, sent while those are pending, is admitted.
    #[tokio::test]
    async fn wrong_passwords_sent_at_once_cost_no_more_bcrypt_than_the_free_failures() {
        let limits = patient();
        let guesses = limits.max_pending_verifies + 8;
        let free = limits.free_failures as usize;
        let auth = Arc::new(authenticator(limits.clone()));
        let held = auth.hold_verifies();
        let guessing = guesses_at_once(&auth, GUESSER, guesses).await;
        let pending = auth.verifies_pending();
        let first_login = tokio::spawn({
            let auth = auth.clone();
            async move {
                let other = header("Basic", "other", "other pass");
                auth.check(ELSEWHERE, Some(&other)).await
            }
        });
        until("the other address's login admitted or answered", || {
            auth.verifies_pending() > pending || first_login.is_finished()
        })
        .await;
        drop(held);
        assert_eq!(first_login.await.unwrap(), Verdict::Allowed);
        let verdicts = verdicts(guessing).await;
        let refused = verdicts.iter().filter(|v| **v == Verdict::Refused).count();
        let throttled = verdicts
            .iter()
            .filter(|v| matches!(v, Verdict::Throttled { .. }))
            .count();
        assert_eq!((refused, throttled), (free, guesses - free), "{verdicts:?}");
        assert_eq!(auth.bcrypt_runs(), free as u64 + 1);
        let wrong = header("Basic", "young", "once more");
        assert!(matches!(
            auth.check(GUESSER, Some(&wrong)).await,
            Verdict::Throttled { .. }
        ));
    }

    /// Past its free failures, with its backoff over, an address gets one verify at a time: the
    /// others sent with it get 429, told to retry once the one pending is settled.
    #[tokio::test]
    async fn past_the_free_failures_an_address_has_one_verify_at_a_time() {
        // No backoff: what is left to see is the one-at-a-time bound.
        let limits = AuthLimits {
            backoff_base: Duration::ZERO,
            backoff_max: Duration::ZERO,
            ..AuthLimits::DEFAULT
        };
        let auth = Arc::new(authenticator(limits.clone()));
        let wrong = header("Basic", "young", "guess");
        for i in 0..limits.free_failures {
            assert_eq!(
                auth.check(GUESSER, Some(&wrong)).await,
                Verdict::Refused,
                "failure {i}"
            );
        }
        let runs = auth.bcrypt_runs();
        let held = auth.hold_verifies();
        let guessing = guesses_at_once(&auth, GUESSER, 5).await;
        assert_eq!(auth.verifies_pending(), 1);
        drop(held);
        let verdicts = verdicts(guessing).await;
        let busy = Verdict::Throttled {
            retry_after: limits.busy_retry_after,
        };
        assert_eq!(
            verdicts.iter().filter(|v| **v == Verdict::Refused).count(),
            1,
            "{verdicts:?}"
        );
        assert_eq!(
            verdicts.iter().filter(|v| **v == busy).count(),
            4,
            "{verdicts:?}"
        );
        assert_eq!(auth.bcrypt_runs(), runs + 1);
    }

    /// A client that hangs up while its bcrypt runs is charged a failure all the same (else
    /// hanging up would buy unlimited guesses); one that hangs up while waiting for a slot,
    /// before any bcrypt, is charged nothing.
    #[tokio::test]
    async fn a_client_that_hangs_up_is_charged_for_the_bcrypt_it_started_only() {
        let limits = AuthLimits {
            verify_slots: 1,
            ..patient()
        };
        let auth = Arc::new(authenticator(limits.clone()));
        let held = auth.hold_verifies();
        let check = |auth: &Arc<Authenticator>| {
            let auth = auth.clone();
            tokio::spawn(async move {
                let wrong = header("Basic", "young", "guess");
                auth.check(GUESSER, Some(&wrong)).await
            })
        };
        let verifying = check(&auth);
        until("the first verify at bcrypt's door", || {
            auth.verifies_held() == 1
        })
        .await;
        let queued = check(&auth);
        until("the second verify queued", || auth.verifies_pending() == 2).await;
        verifying.abort();
        queued.abort();
        assert!(verifying.await.unwrap_err().is_cancelled());
        assert!(queued.await.unwrap_err().is_cancelled());
        drop(held);
        until("the abandoned bcrypt settled", || {
            auth.running.available_permits() == limits.verify_slots
        })
        .await;
        assert_eq!(auth.bcrypt_runs(), 1);
        // One failure charged: one free failure fewer is left.
        let wrong = header("Basic", "young", "guess");
        for i in 1..limits.free_failures {
            assert_eq!(
                auth.check(GUESSER, Some(&wrong)).await,
                Verdict::Refused,
                "failure {i}"
            );
        }
        assert!(matches!(
            auth.check(GUESSER, Some(&wrong)).await,
            Verdict::Throttled { .. }
        ));
    }

    /// On tokio's paused clock: a block lasts its backoff, the next failure doubles it, and a
    /// quiet spell of failure_memory gives the address its free failures again.
    #[tokio::test(start_paused = true)]
    async fn a_block_ends_after_its_backoff_and_a_quiet_spell_forgets_the_failures() {
        let limits = AuthLimits::DEFAULT;
        let auth = authenticator(limits.clone());
        let wrong = header("Basic", "young", "guess");
        for i in 0..limits.free_failures {
            assert_eq!(
                auth.check(GUESSER, Some(&wrong)).await,
                Verdict::Refused,
                "failure {i}"
            );
        }
        let throttled = |retry_after| Verdict::Throttled { retry_after };
        assert_eq!(
            auth.check(GUESSER, Some(&wrong)).await,
            throttled(limits.backoff_base)
        );
        tokio::time::advance(limits.backoff_base).await;
        assert_eq!(auth.check(GUESSER, Some(&wrong)).await, Verdict::Refused);
        assert_eq!(
            auth.check(GUESSER, Some(&wrong)).await,
            throttled(limits.backoff_base * 2)
        );
        tokio::time::advance(limits.backoff_base * 2 + limits.failure_memory).await;
        for i in 0..limits.free_failures {
            assert_eq!(
                auth.check(GUESSER, Some(&wrong)).await,
                Verdict::Refused,
                "failure {i} after a quiet spell"
            );
        }
    }
}

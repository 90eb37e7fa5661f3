//! `fleetdash serve`, the real binary, against the same assertions as the production nginx
//! config (tests/nginx.rs): auth on every path, only status.json and snapshot.html from
//! output_dir, no-cache + ETag, immutable hashed assets, gzip, 304 on If-None-Match. Then what
//! only `fleetdash serve` has to get right: a storm of wrong passwords does not hold up a
//! logged-in client, a guessing client is slowed down (and no one else), and a configuration
//! mistake exits 2.

mod serving;
mod support;

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use fleetdash::server::{AuthLimits, Authenticator, Htpasswd};
use serving::{Fixture, FleetdashServe, Page, basic, get_from};
use support::Scratch;
use tokio_util::sync::CancellationToken;

#[test]
fn fleetdash_serve_matches_the_production_nginx_config() {
    let fx = Fixture::new();
    let server = FleetdashServe::start(&fx);
    serving::assert_serves_like_production(&server.addr, &fx);
}

/// Without a dist_dir, the page built into the binary, answered exactly as a dist folder is
/// (and nginx answers the exported one): the committed page/ byte for byte, the wasm's own
/// pre-compressed .gz, the types, the caching headers, 304s, all behind the password.
#[test]
fn fleetdash_serve_without_a_dist_dir_serves_the_page_built_in_like_production() {
    let fx = Fixture::with_page(Page::Embedded);
    let server = FleetdashServe::start(&fx);
    serving::assert_serves_like_production(&server.addr, &fx);
    // HEAD answers the headers alone; other methods are refused, after the password.
    let head = serving::request(
        &server.addr,
        "HEAD",
        &fx.wasm,
        Some((serving::USER, serving::PASSWORD)),
    );
    assert_eq!(head.status, 200, "{head:?}");
    assert_eq!(head.header("content-type"), Some("application/wasm"));
    assert!(head.body.is_empty(), "{head:?}");
    let post = serving::request(
        &server.addr,
        "POST",
        "/",
        Some((serving::USER, serving::PASSWORD)),
    );
    assert_eq!(post.status, 405, "{post:?}");
    assert_eq!(
        serving::request(&server.addr, "POST", "/", None).status,
        401
    );
}

/// Issue 32: the page's headers on every answer of `serve`, for the page built in (its inline
/// script's hash is the committed page/'s) and for a dist_dir's page (hashed from its own
/// index.html, whatever script it starts with).
#[test]
fn fleetdash_serve_sends_the_pages_security_headers_on_every_answer() {
    for page in [Page::Embedded, Page::Fake] {
        let fx = Fixture::with_page(page);
        let server = FleetdashServe::start(&fx);
        serving::assert_sends_the_pages_security_headers(&server.addr, &fx);
    }
}

/// A dist_dir without a page is a mistake said at start (exit 2, naming the field and the
/// folder), never a reason to serve some other page.
#[test]
fn serve_with_a_dist_dir_without_index_html_exits_2() {
    let scratch = Scratch::new();
    std::fs::create_dir_all(scratch.path().join("empty-dist")).unwrap();
    std::fs::write(
        scratch.path().join("htpasswd"),
        format!("{USER}:{}\n", bcrypt::hash(PASSWORD, 4).unwrap()),
    )
    .unwrap();
    let config = scratch.config("[serve]\nhtpasswd = \"htpasswd\"\ndist_dir = \"empty-dist\"\n");
    let mut child = support::fleetdash()
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(&config)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // A server that starts anyway would never exit: it fails here instead of hanging the run.
    let deadline = Instant::now() + support::HANG_BUDGET;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("serve started with a dist_dir without index.html instead of exiting 2");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("serve.dist_dir")
            && stderr.contains(&scratch.path().join("empty-dist").display().to_string())
            && stderr.contains("has no index.html"),
        "{stderr}"
    );
}

const USER: &str = "young";
const PASSWORD: &str = "correct horse battery";
const GOOD_CLIENT: Ipv4Addr = Ipv4Addr::LOCALHOST;

/// A scratch host for `serve`: rules, a status.json, an htpasswd with `users` at bcrypt `cost`,
/// and a config naming them. Returns the scratch and the config's path.
fn serve_scratch(users: &[(&str, &str)], cost: u32) -> (Scratch, PathBuf) {
    let scratch = Scratch::new();
    std::fs::create_dir_all(scratch.path().join("out")).unwrap();
    std::fs::write(
        scratch.path().join("out/status.json"),
        "{\"schema_version\": 0}\n",
    )
    .unwrap();
    let lines: String = users
        .iter()
        .map(|(user, pass)| format!("{user}:{}\n", bcrypt::hash(pass, cost).unwrap()))
        .collect();
    std::fs::write(scratch.path().join("htpasswd"), lines).unwrap();
    let config = scratch.config("[serve]\nhtpasswd = \"htpasswd\"\n");
    (scratch, config)
}

/// `fleetdash::server::serve` in this process on a loopback port, on its own runtime thread;
/// stopped when dropped.
struct InProcess {
    addr: String,
    shutdown: CancellationToken,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl InProcess {
    /// `current_thread`: one async worker, so anything that blocks it shows.
    fn start(options: fleetdash::server::ServeOptions, current_thread: bool) -> InProcess {
        let shutdown = CancellationToken::new();
        let stop = shutdown.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            let runtime = if current_thread {
                tokio::runtime::Builder::new_current_thread()
            } else {
                tokio::runtime::Builder::new_multi_thread()
            }
            .enable_all()
            .build()
            .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                tx.send(listener.local_addr().unwrap().to_string()).unwrap();
                fleetdash::server::serve(listener, options, stop)
                    .await
                    .unwrap();
            });
        });
        let addr = rx.recv().expect("the server thread reports its address");
        InProcess {
            addr,
            shutdown,
            thread: Some(thread),
        }
    }
}

impl Drop for InProcess {
    fn drop(&mut self) {
        self.shutdown.cancel();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn options(config: &Path) -> fleetdash::server::ServeOptions {
    let (config, rules) = fleetdash::config::Config::load(config).unwrap();
    fleetdash::server::ServeOptions::from_config(&config, &rules).unwrap()
}

/// The options of `config`, with an authenticator on the scratch's htpasswd under `limits`.
fn options_with_limits(
    scratch: &Scratch,
    config: &Path,
    limits: AuthLimits,
) -> (fleetdash::server::ServeOptions, Arc<Authenticator>) {
    let mut options = options(config);
    let htpasswd = std::fs::read_to_string(scratch.path().join("htpasswd")).unwrap();
    let htpasswd = Htpasswd::parse(Path::new("htpasswd"), &htpasswd).unwrap();
    let auth = Arc::new(Authenticator::with_limits(htpasswd, limits));
    options.auth = auth.clone();
    (options, auth)
}

/// The production bounds, but a backoff no test run outlives: nothing races a clock.
fn patient_limits() -> AuthLimits {
    AuthLimits {
        backoff_base: Duration::from_secs(3600),
        backoff_max: Duration::from_secs(3600),
        ..AuthLimits::DEFAULT
    }
}

/// Waits until `done` holds, failing with `what` (and its state) if it never does.
fn until(what: impl Fn() -> String, done: impl Fn() -> bool) {
    let deadline = Instant::now() + support::HANG_BUDGET;
    while !done() {
        assert!(Instant::now() < deadline, "{}", what());
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Wrong passwords from many addresses at once, and a logged-in client asking in the middle of
/// them: it is answered while every wrong password is still pending. The verifies are held at
/// the door of bcrypt, on the blocking threads bcrypt runs on, until the logged-in client's
/// answer is back: the order is certain, whatever the machine's speed. The server runs on a
/// single async worker: a verify run on it would hold up every request, the logged-in
/// client's too, and that client would never be answered while the verifies are held.
#[test]
fn a_storm_of_wrong_passwords_does_not_hold_up_a_logged_in_client() {
    const GUESSERS: usize = 16;
    let (_scratch, config) = serve_scratch(&[(USER, PASSWORD)], 4);
    let options = options(&config);
    let auth = options.auth.clone();
    let server = InProcess::start(options, true);
    let good = basic("Basic", USER, PASSWORD);
    assert_eq!(
        get_from(GOOD_CLIENT, &server.addr, "/api/status.json", Some(&good)).status,
        200
    );

    let held = auth.hold_verifies();
    let answered = Arc::new(AtomicUsize::new(0));
    let guessers: Vec<_> = (0..GUESSERS)
        .map(|i| {
            let (addr, answered) = (server.addr.clone(), answered.clone());
            std::thread::spawn(move || {
                // One address each, so that no throttle turns them away before bcrypt.
                let source = Ipv4Addr::new(127, 0, 1, 1 + i as u8);
                let wrong = basic("Basic", USER, &format!("guess {i}"));
                let reply = get_from(source, &addr, "/api/status.json", Some(&wrong));
                answered.fetch_add(1, Ordering::SeqCst);
                reply.status
            })
        })
        .collect();
    // The storm is under way: every wrong password admitted, every verify slot's blocking
    // thread taken by one of them.
    let slots = AuthLimits::DEFAULT.verify_slots;
    until(
        || {
            format!(
                "the storm never got under way: {} of {GUESSERS} verifies pending, {} of {slots} \
                 slots held (a verify on the server's only worker would stop the others there)",
                auth.verifies_pending(),
                auth.verifies_held()
            )
        },
        || auth.verifies_pending() >= GUESSERS && auth.verifies_held() >= slots,
    );

    let reply = get_from(GOOD_CLIENT, &server.addr, "/api/status.json", Some(&good));
    assert_eq!(reply.status, 200, "{reply:?}");
    assert_eq!(reply.body, b"{\"schema_version\": 0}\n");
    assert_eq!(
        (auth.verifies_pending(), answered.load(Ordering::SeqCst)),
        (GUESSERS, 0),
        "the logged-in client was answered while every wrong password was pending"
    );

    drop(held);
    let statuses: Vec<u16> = guessers.into_iter().map(|g| g.join().unwrap()).collect();
    assert!(
        statuses.iter().all(|&s| s == 401),
        "every wrong password is refused: {statuses:?}"
    );
    assert_eq!(auth.verifies_pending(), 0);
}

/// Per client address: a guesser gets 401 for its free failures, then 429 with Retry-After and
/// no bcrypt at all; a logged-in client, from anywhere (the guesser's address too), still gets
/// 200 without a new bcrypt; another address gets in with credentials not yet remembered. The
/// scheme name's case does not matter.
#[test]
fn a_guessing_client_is_throttled_and_no_one_else_is() {
    const OTHER: (&str, &str) = ("other", "another passphrase");
    const GUESSER: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);
    let (scratch, config) = serve_scratch(&[(USER, PASSWORD), OTHER], 4);
    let limits = patient_limits();
    let (options, auth) = options_with_limits(&scratch, &config, limits.clone());
    let server = InProcess::start(options, false);
    let status_json = |from: Ipv4Addr, authorization: &str| {
        get_from(from, &server.addr, "/api/status.json", Some(authorization))
    };

    let good = basic("Basic", USER, PASSWORD);
    assert_eq!(status_json(GOOD_CLIENT, &good).status, 200);
    assert_eq!(auth.bcrypt_runs(), 1);
    for scheme in ["basic", "BASIC", "bAsIc"] {
        let reply = status_json(GOOD_CLIENT, &basic(scheme, USER, PASSWORD));
        assert_eq!(reply.status, 200, "scheme {scheme}: {reply:?}");
    }
    assert_eq!(auth.bcrypt_runs(), 1, "a remembered login runs no bcrypt");

    let wrong = basic("Basic", USER, "guess");
    for i in 0..limits.free_failures {
        let reply = status_json(GUESSER, &wrong);
        assert_eq!(reply.status, 401, "failure {i}: {reply:?}");
        assert!(reply.header("www-authenticate").is_some());
    }
    let runs = auth.bcrypt_runs();
    assert_eq!(runs, 1 + u64::from(limits.free_failures));
    let throttled = status_json(GUESSER, &wrong);
    assert_eq!(throttled.status, 429, "{throttled:?}");
    assert_eq!(problem_name(&throttled), "RATE_LIMITED");
    let retry_after: u64 = throttled
        .header("retry-after")
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("429 without a Retry-After in seconds: {throttled:?}"));
    assert!(retry_after >= 1 && retry_after <= limits.backoff_max.as_secs());
    assert!(!String::from_utf8_lossy(&throttled.body).contains("schema_version"));
    // Still throttled with the other user's right password: that would need a bcrypt.
    let other = basic("Basic", OTHER.0, OTHER.1);
    assert_eq!(status_json(GUESSER, &other).status, 429);
    assert_eq!(
        auth.bcrypt_runs(),
        runs,
        "a throttled client costs no bcrypt"
    );

    // The logged-in client is not affected, from its own address or the guesser's (a NAT).
    let reply = status_json(GOOD_CLIENT, &good);
    assert_eq!(reply.status, 200);
    assert_eq!(reply.body, b"{\"schema_version\": 0}\n");
    assert_eq!(status_json(GUESSER, &good).status, 200);
    assert_eq!(auth.bcrypt_runs(), runs);
    // Another address logs in with credentials not yet remembered.
    assert_eq!(status_json(Ipv4Addr::new(127, 0, 0, 3), &other).status, 200);
    assert_eq!(auth.bcrypt_runs(), runs + 1);
}

/// One address sending more wrong passwords at once than the verify queue holds: bcrypt runs
/// only for its free failures, the others get 429 at once, and they cannot fill the queue:
/// another address's first login, sent while they are all pending, gets 200. The verifies are
/// held at bcrypt's door until then, so "at once" and "while pending" are certain.
#[test]
fn many_wrong_passwords_at_once_from_one_address_cost_only_its_free_failures() {
    const GUESSER: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);
    let (scratch, config) = serve_scratch(&[(USER, PASSWORD)], 4);
    let limits = patient_limits();
    let guesses = limits.max_pending_verifies + 8;
    let free = limits.free_failures as usize;
    let (options, auth) = options_with_limits(&scratch, &config, limits);
    let server = InProcess::start(options, false);

    let held = auth.hold_verifies();
    let answered = Arc::new(AtomicUsize::new(0));
    let guessing: Vec<_> = (0..guesses)
        .map(|i| {
            let (addr, answered) = (server.addr.clone(), answered.clone());
            std::thread::spawn(move || {
                let wrong = basic("Basic", USER, &format!("guess {i}"));
                let reply = get_from(GUESSER, &addr, "/api/status.json", Some(&wrong));
                answered.fetch_add(1, Ordering::SeqCst);
                reply.status
            })
        })
        .collect();
    until(
        || {
            format!(
                "of {guesses} guesses, {} answered and {} pending",
                answered.load(Ordering::SeqCst),
                auth.verifies_pending()
            )
        },
        || answered.load(Ordering::SeqCst) + auth.verifies_pending() == guesses,
    );
    let pending = auth.verifies_pending();
    let first_login = {
        let addr = server.addr.clone();
        std::thread::spawn(move || {
            let good = basic("Basic", USER, PASSWORD);
            get_from(GOOD_CLIENT, &addr, "/api/status.json", Some(&good))
        })
    };
    until(
        || "the other address's first login was neither admitted nor answered".into(),
        || auth.verifies_pending() > pending || first_login.is_finished(),
    );
    drop(held);

    let reply = first_login.join().unwrap();
    assert_eq!(
        reply.status, 200,
        "another address's first login: {reply:?}"
    );
    let statuses: Vec<u16> = guessing.into_iter().map(|g| g.join().unwrap()).collect();
    let count = |status| statuses.iter().filter(|&&s| s == status).count();
    assert_eq!(
        (count(401), count(429)),
        (free, guesses - free),
        "{statuses:?}"
    );
    assert_eq!(auth.bcrypt_runs(), free as u64 + 1);
}

/// `serve` without a usable htpasswd is a configuration error like any other: exit 2 and one
/// line naming the file and the field.
#[test]
fn serve_without_a_usable_htpasswd_exits_2() {
    let scratch = Scratch::new();
    let missing = scratch.path().join("nowhere/htpasswd");
    let weak = scratch.path().join("weak.htpasswd");
    std::fs::write(&weak, "young:$apr1$abc$def\n").unwrap();
    let cases = [
        (String::new(), "serve.htpasswd: not set".to_string()),
        (
            format!("[serve]\nhtpasswd = {:?}\n", missing.display().to_string()),
            format!("serve.htpasswd: cannot read {}", missing.display()),
        ),
        (
            format!("[serve]\nhtpasswd = {:?}\n", weak.display().to_string()),
            format!("{}:1: user \"young\" has a non-bcrypt hash", weak.display()),
        ),
    ];
    for (body, expected) in cases {
        let config = scratch.config(&body);
        let out = support::fleetdash()
            .args(["serve", "--listen", "127.0.0.1:0", "--config"])
            .arg(&config)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{body:?}: {stderr}");
        assert!(stderr.contains(&expected), "{body:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    }
}

/// The problem+json body of a refusal: its ASC name, after checking the media type and that
/// the HTTP status and the envelope agree.
fn problem_name(reply: &serving::Reply) -> String {
    assert_eq!(
        reply.header("content-type"),
        Some("application/problem+json"),
        "{reply:?}"
    );
    let body: serde_json::Value =
        serde_json::from_slice(&reply.decoded_body()).expect("a JSON problem body");
    assert_eq!(body["status"], u64::from(reply.status), "{body}");
    assert_eq!(
        body["type"],
        format!(
            "urn:agent-status:{}",
            body["agent_status"]["name"].as_str().unwrap()
        )
    );
    assert!(body["agent_status"]["code"].as_u64().is_some(), "{body}");
    assert!(!body["detail"].as_str().unwrap().is_empty(), "{body}");
    body["agent_status"]["name"].as_str().unwrap().to_string()
}

/// Every refusal of `fleetdash serve` is problem+json with the ASC envelope (seed 000's HTTP
/// binding), as the intake's are: no login, a wrong one, an unknown path, a method it does not
/// take, and no snapshot yet (503, with a Retry-After, not the 404 of a file that never will be).
#[test]
fn every_refusal_of_serve_is_problem_json_with_the_asc_envelope() {
    let (scratch, config) = serve_scratch(&[(USER, PASSWORD)], 4);
    let server = InProcess::start(options(&config), false);
    let auth = Some((USER, PASSWORD));

    let anonymous = serving::get(&server.addr, "/api/status.json", None, &[]);
    assert_eq!(anonymous.status, 401);
    assert_eq!(problem_name(&anonymous), "AUTHENTICATION_REQUIRED");
    assert!(
        anonymous
            .header("www-authenticate")
            .is_some_and(|c| c.starts_with("Basic realm=\"fleetdash\"")),
        "{anonymous:?}"
    );
    let wrong = serving::get(&server.addr, "/", Some((USER, "guess")), &[]);
    assert_eq!(wrong.status, 401);
    assert_eq!(problem_name(&wrong), "AUTHENTICATION_REQUIRED");

    for path in ["/nope.js", "/api/other.json", "/.git/config"] {
        let missing = serving::get(&server.addr, path, auth, &[]);
        assert_eq!(missing.status, 404, "{path}: {missing:?}");
        assert_eq!(problem_name(&missing), "NOT_FOUND", "{path}");
    }
    for path in ["/", "/api/status.json"] {
        let post = serving::request(&server.addr, "POST", path, auth);
        assert_eq!(post.status, 405, "{path}: {post:?}");
        assert_eq!(problem_name(&post), "INVALID_REQUEST", "{path}");
    }

    assert_eq!(
        serving::get(&server.addr, "/api/status.json", auth, &[]).status,
        200
    );
    std::fs::remove_file(scratch.path().join("out/status.json")).unwrap();
    for path in ["/api/status.json", "/api/snapshot.html"] {
        let none = serving::get(&server.addr, path, auth, &[]);
        assert_eq!(none.status, 503, "{path}: {none:?}");
        assert_eq!(problem_name(&none), "DEPENDENCY_UNAVAILABLE", "{path}");
        assert!(none.header("retry-after").is_some(), "{none:?}");
    }
    // Without the password, a missing snapshot is not even told.
    assert_eq!(
        serving::get(&server.addr, "/api/status.json", None, &[]).status,
        401
    );
}

//! `fleetdash serve`, the real binary, against the same assertions as the production nginx
//! config (tests/nginx.rs): auth on every path, only status.json and snapshot.html from
//! output_dir, no-cache + ETag, immutable hashed assets, gzip, 304 on If-None-Match. Then what
//! only `fleetdash serve` has to get right: a storm of wrong passwords does not hold up a
//! logged-in client, a guessing client is slowed down (and no one else), and a configuration
//! mistake exits 2.

use crate::serving;
use crate::support;

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
    // The collector wrote its first HTML from the page built into it, not from this dist
    // folder's page: it names assets this server does not have, and is never served.
    assert!(fx.out.join("index.html").is_file());
    assert_eq!(fx.first_html(), None);
    assert_eq!(
        serving::get(
            &server.addr,
            "/",
            Some((serving::USER, serving::PASSWORD)),
            &[]
        )
        .body,
        fx.dist_file("/index.html")
    );
}

/// Without a dist_dir, the page built into the binary, answered exactly as a dist folder is
/// (and nginx answers the exported one): the committed page/ byte for byte, the wasm's own
/// pre-compressed .gz, the types, the caching headers, 304s, all behind the password.
#[test]
fn fleetdash_serve_without_a_dist_dir_serves_the_page_built_in_like_production() {
    let fx = Fixture::with_page(Page::Embedded);
    let server = FleetdashServe::start(&fx);
    serving::assert_serves_like_production(&server.addr, &fx);
    serving::assert_serves_the_app_manifest(&server.addr, &fx);
    serving::assert_serves_the_first_html(&server.addr, &fx);
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

/// Issue 35: the page built in and a dist_dir's (an export of it) each answer the `.br` to a
/// client that takes brotli, the `.gz` to one that takes gzip only or says `br;q=0`, the file
/// to one that takes neither; Vary on each, each its own length and tag.
#[test]
fn fleetdash_serve_answers_brotli_gzip_or_the_file_as_the_client_accepts() {
    for page in [Page::Embedded, Page::Exported] {
        let fx = Fixture::with_page(page);
        let server = FleetdashServe::start(&fx);
        serving::assert_negotiates_brotli_and_gzip(&server.addr, &fx, true);
    }
}

/// A dist_dir built without `.br` files (an older build): a client that prefers brotli gets
/// the `.gz`, one that takes brotli alone the file; never brotli made on the fly.
#[test]
fn fleetdash_serve_with_a_dist_dir_without_br_files_answers_gzip() {
    let fx = Fixture::with_page(Page::Fake);
    let server = FleetdashServe::start(&fx);
    let auth = Some((serving::USER, serving::PASSWORD));
    let wasm = fx.dist_file(&fx.wasm);
    let gz = serving::get(
        &server.addr,
        &fx.wasm,
        auth,
        &[("Accept-Encoding", "br, gzip")],
    );
    assert_eq!(gz.status, 200, "{gz:?}");
    assert_eq!(gz.header("content-encoding"), Some("gzip"), "{gz:?}");
    assert_eq!(gz.body, fx.dist_file(&format!("{}.gz", fx.wasm)));
    assert_eq!(gz.decoded_body(), wasm);
    let plain = serving::get(&server.addr, &fx.wasm, auth, &[("Accept-Encoding", "br")]);
    assert_eq!(plain.status, 200, "{plain:?}");
    assert_eq!(plain.header("content-encoding"), None, "{plain:?}");
    assert_eq!(plain.body, wasm);
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
    let (status, stderr) = serve_refused(
        &config,
        "127.0.0.1:0",
        "serve started with a dist_dir without index.html instead of exiting 2",
    );
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
        let (status, stderr) = serve_refused(
            &config,
            "127.0.0.1:0",
            &format!("serve started with {body:?} instead of exiting 2"),
        );
        assert_eq!(status.code(), Some(2), "{body:?}: {stderr}");
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

// ---------------------------------------------------------------------------------------------
// HTTPS (issue 32): `[serve] tls_cert` / `tls_key`, certificates made by the test
// ---------------------------------------------------------------------------------------------

/// A certificate authority made for one test: its certificate (what a client trusts) and the
/// issuer that signs server certificates with it.
struct TestCa {
    pem: String,
    issuer: rcgen::CertifiedIssuer<'static, rcgen::KeyPair>,
}

impl TestCa {
    fn new(name: &str) -> TestCa {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        let issuer =
            rcgen::CertifiedIssuer::self_signed(params, rcgen::KeyPair::generate().unwrap())
                .unwrap();
        TestCa {
            pem: issuer.pem(),
            issuer,
        }
    }

    /// A server certificate for 127.0.0.1 and its private key, both PEM.
    fn server_pair(&self) -> (String, String) {
        let params =
            rcgen::CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
                .unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        (cert.pem(), key.serialize_pem())
    }

    /// A TLS client that trusts this authority alone.
    fn client(&self) -> tokio_rustls::TlsConnector {
        use rustls::pki_types::CertificateDer;
        use rustls::pki_types::pem::PemObject;
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(self.pem.as_bytes()) {
            roots.add(cert.unwrap()).unwrap();
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        tokio_rustls::TlsConnector::from(Arc::new(config))
    }
}

/// A GET over a fresh TLS connection from a client trusting `ca` alone: the answer, or why
/// the handshake or the request failed.
fn https_get(
    addr: &str,
    path: &str,
    auth: Option<(&str, &str)>,
    ca: &TestCa,
) -> Result<serving::Reply, String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let tcp = tokio::net::TcpStream::connect(addr)
            .await
            .map_err(|e| format!("connect: {e}"))?;
        let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
        let mut tls = tokio::time::timeout(support::HANG_BUDGET, ca.client().connect(name, tcp))
            .await
            .map_err(|_| "the handshake hung".to_string())?
            .map_err(|e| format!("handshake: {e}"))?;
        let mut request =
            format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n");
        if let Some((user, pass)) = auth {
            request.push_str(&format!(
                "Authorization: {}\r\n",
                basic("Basic", user, pass)
            ));
        }
        request.push_str("\r\n");
        tls.write_all(request.as_bytes())
            .await
            .map_err(|e| format!("write: {e}"))?;
        let mut raw = Vec::new();
        // A server may close without close_notify after `Connection: close`: what was read counts.
        let _ = tokio::time::timeout(support::HANG_BUDGET, tls.read_to_end(&mut raw)).await;
        serving::parse_reply(&raw).ok_or_else(|| format!("no HTTP answer: {raw:?}"))
    })
}

/// Writes `pem` to `path` the way a rotation does: whole, by rename.
fn replace_file(path: &Path, pem: &str) {
    let tmp = path.with_extension("new");
    std::fs::write(&tmp, pem).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// The real `fleetdash serve` with its log (at info) read line by line; SIGTERM on drop.
struct LoggedServe {
    child: std::process::Child,
    /// As it said it: `https://127.0.0.1:PORT/` or `http://...`.
    url: String,
    addr: String,
    lines: std::sync::mpsc::Receiver<String>,
    /// Every line read so far.
    seen: Vec<String>,
}

impl LoggedServe {
    fn start(config: &Path) -> LoggedServe {
        use std::io::BufRead;
        let mut child = support::fleetdash()
            .env("FLEETDASH_LOG", "info")
            .args(["serve", "--listen", "127.0.0.1:0", "--config"])
            .arg(config)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = std::io::BufReader::new(child.stderr.take().unwrap());
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let mut serve = LoggedServe {
            child,
            url: String::new(),
            addr: String::new(),
            lines,
            seen: Vec::new(),
        };
        let first = serve.wait_for_line("the address it serves on", |l| {
            l.starts_with("fleetdash: serving on ")
        });
        serve.url = first["fleetdash: serving on ".len()..].to_string();
        serve.addr = serve
            .url
            .split("://")
            .nth(1)
            .unwrap()
            .trim_end_matches('/')
            .to_string();
        serve
    }

    /// The next line that `matches`, failing with every line seen if none comes, or if the
    /// server exits first.
    fn wait_for_line(&mut self, what: &str, matches: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + support::HANG_BUDGET;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if matches(&line) {
                        return line;
                    }
                }
                Err(_) => panic!(
                    "serve never logged {what}; its log:\n{}",
                    self.seen.join("\n")
                ),
            }
        }
    }

    fn hang_up(&self) {
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGHUP);
        }
    }
}

impl Drop for LoggedServe {
    fn drop(&mut self) {
        serving::stop(&mut self.child);
    }
}

/// `[serve] tls_cert` and `tls_key`: serve speaks HTTPS with that certificate (and nothing in
/// the clear), sends HSTS, takes a rotated certificate at SIGHUP for the next connection, and
/// keeps the running one when the new pair is broken, saying which file and field, never the
/// key's bytes.
#[test]
fn serve_speaks_https_with_its_certificate_and_takes_a_new_one_at_sighup() {
    let (scratch, _) = serve_scratch(&[(USER, PASSWORD)], 4);
    let cert = scratch.path().join("cert.pem");
    let key = scratch.path().join("key.pem");
    let (old_ca, new_ca) = (TestCa::new("old authority"), TestCa::new("new authority"));
    let (old_cert, old_key) = old_ca.server_pair();
    replace_file(&cert, &old_cert);
    replace_file(&key, &old_key);
    let config = scratch.config(
        "[serve]\nhtpasswd = \"htpasswd\"\ntls_cert = \"cert.pem\"\ntls_key = \"key.pem\"\n",
    );
    let mut serve = LoggedServe::start(&config);
    assert!(serve.url.starts_with("https://127.0.0.1:"), "{}", serve.url);
    let addr = serve.addr.clone();

    // HTTPS with the configured certificate; HSTS on every answer, the 401 too.
    let status = https_get(&addr, "/api/status.json", Some((USER, PASSWORD)), &old_ca).unwrap();
    assert_eq!(status.status, 200, "{status:?}");
    assert_eq!(status.body, b"{\"schema_version\": 0}\n");
    let refused = https_get(&addr, "/", None, &old_ca).unwrap();
    assert_eq!(refused.status, 401, "{refused:?}");
    for reply in [&status, &refused] {
        assert_eq!(
            reply.header("strict-transport-security"),
            Some("max-age=31536000"),
            "{reply:?}"
        );
        assert!(
            reply.header("content-security-policy").is_some(),
            "{reply:?}"
        );
    }
    // Nothing in the clear: a plain HTTP request gets no HTTP answer.
    let mut plain = std::net::TcpStream::connect(&addr).unwrap();
    plain.set_read_timeout(Some(support::HANG_BUDGET)).unwrap();
    std::io::Write::write_all(
        &mut plain,
        format!(
            "GET /api/status.json HTTP/1.1\r\nHost: x\r\nAuthorization: {}\r\n\r\n",
            basic("Basic", USER, PASSWORD)
        )
        .as_bytes(),
    )
    .unwrap();
    let mut raw = Vec::new();
    let _ = std::io::Read::read_to_end(&mut plain, &mut raw);
    assert!(
        !raw.starts_with(b"HTTP/") && !String::from_utf8_lossy(&raw).contains("schema_version"),
        "plain HTTP was answered: {:?}",
        String::from_utf8_lossy(&raw)
    );
    // A client that trusts another authority does not get through.
    let other = https_get(&addr, "/", None, &new_ca).unwrap_err();
    assert!(other.contains("handshake"), "{other}");

    // Rotation: new files, SIGHUP; the next connection gets the new certificate.
    let (new_cert, new_key) = new_ca.server_pair();
    replace_file(&cert, &new_cert);
    replace_file(&key, &new_key);
    serve.hang_up();
    serve.wait_for_line("the reload", |l| {
        l.contains("reloaded: serving with the new config")
    });
    let rotated = https_get(&addr, "/api/status.json", Some((USER, PASSWORD)), &new_ca).unwrap();
    assert_eq!(rotated.status, 200, "{rotated:?}");
    let stale = https_get(&addr, "/", None, &old_ca).unwrap_err();
    assert!(
        stale.contains("handshake"),
        "the old certificate is gone: {stale}"
    );

    // A broken pair (the old key under the new certificate) is refused, naming the field and
    // the file; the running certificate stays.
    replace_file(&key, &old_key);
    serve.hang_up();
    let error = serve.wait_for_line("the refused key", |l| l.contains("serve.tls_key"));
    assert!(
        error.contains(&key.display().to_string()),
        "names the key's file: {error}"
    );
    serve.wait_for_line("the refusal", |l| l.contains("the running config stays"));
    let kept = https_get(&addr, "/api/status.json", Some((USER, PASSWORD)), &new_ca).unwrap();
    assert_eq!(kept.status, 200, "{kept:?}");
    // The keys' bytes never reach the log: not one line of either key's base64.
    let log = serve.seen.join("\n");
    for pem in [&old_key, &new_key] {
        for line in pem.lines().filter(|l| !l.starts_with("-----")) {
            assert!(!log.contains(line), "a key line is in the log:\n{log}");
        }
    }
}

/// A certificate or key that cannot be used stops serve before it listens (exit 2), naming the
/// field and the file; so does one of the pair without the other.
#[test]
fn serve_with_an_unusable_certificate_or_key_exits_2_naming_the_field_and_file() {
    let (scratch, _) = serve_scratch(&[(USER, PASSWORD)], 4);
    let (cert_pem, key_pem) = TestCa::new("authority").server_pair();
    let cert = scratch.path().join("cert.pem");
    let key = scratch.path().join("key.pem");
    let not_pem = scratch.path().join("not.pem");
    replace_file(&cert, &cert_pem);
    replace_file(&key, &key_pem);
    replace_file(&not_pem, "hello\n");
    let missing = scratch.path().join("missing.pem");
    let pair = |c: &Path, k: &Path| {
        format!(
            "[serve]\nhtpasswd = \"htpasswd\"\ntls_cert = {:?}\ntls_key = {:?}\n",
            c.display().to_string(),
            k.display().to_string()
        )
    };
    let cases = [
        (
            pair(&missing, &key),
            vec!["serve.tls_cert".to_string(), missing.display().to_string()],
        ),
        (
            pair(&not_pem, &key),
            vec!["serve.tls_cert".to_string(), not_pem.display().to_string()],
        ),
        (
            pair(&cert, &not_pem),
            vec!["serve.tls_key".to_string(), not_pem.display().to_string()],
        ),
        (
            // The certificate where the key should be: no private key in it.
            pair(&cert, &cert),
            vec!["serve.tls_key".to_string(), cert.display().to_string()],
        ),
        (
            "[serve]\nhtpasswd = \"htpasswd\"\ntls_cert = \"cert.pem\"\n".to_string(),
            vec![
                "serve.tls_key".to_string(),
                "needs the certificate and its key".to_string(),
            ],
        ),
    ];
    for (body, expected) in cases {
        let config = scratch.config(&body);
        let (status, stderr) = serve_refused(
            &config,
            "127.0.0.1:0",
            &format!("serve started with {body:?} instead of exiting 2"),
        );
        assert_eq!(status.code(), Some(2), "{body:?}: {stderr}");
        for words in &expected {
            assert!(
                stderr.contains(words.as_str()),
                "{body:?}: {words:?} in {stderr}"
            );
        }
        assert!(
            !stderr.contains(key_pem.lines().nth(1).unwrap()),
            "{stderr}"
        );
    }
}

/// Plain HTTP off loopback puts the password on the network in the clear: serve refuses such
/// a `--listen` (exit 2, before binding anything) unless TLS is on or the operator said
/// `plain_http_on_network = true`; loopback stays as it was.
#[test]
fn serve_refuses_plain_http_off_loopback() {
    let (_scratch, config) = serve_scratch(&[(USER, PASSWORD)], 4);
    for listen in ["0.0.0.0:0", "[::]:0"] {
        let (status, stderr) = serve_refused(
            &config,
            listen,
            &format!("serve started on {listen} in plain HTTP instead of exiting 2"),
        );
        assert_eq!(status.code(), Some(2), "{listen}: {stderr}");
        assert!(
            stderr.contains("serve.listen")
                && stderr.contains("tls_cert")
                && stderr.contains("plain_http_on_network"),
            "{listen}: {stderr}"
        );
        assert!(!stderr.contains("serving on"), "{stderr}");
    }
    // Loopback: served as before, over plain HTTP.
    let serve = LoggedServe::start(&config);
    assert!(serve.url.starts_with("http://127.0.0.1:"), "{}", serve.url);
}

/// `fleetdash serve --listen LISTEN --config CONFIG`, which must exit at once: its status and
/// stderr. A server that starts anyway would never exit: it fails with `started` instead of
/// hanging the run.
fn serve_refused(
    config: &std::path::Path,
    listen: &str,
    started: &str,
) -> (std::process::ExitStatus, String) {
    let mut child = support::fleetdash()
        .args(["serve", "--listen", listen, "--config"])
        .arg(config)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + support::HANG_BUDGET;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{started}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    (status, stderr)
}

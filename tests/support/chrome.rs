//! Headless Chromium at a phone's size, driven through chromedriver (WebDriver), and the real
//! `fleetdash serve` it reads from: the harness tests/browser.rs and the page_verdict bench
//! share (both include this file by path; it needs none of tests/support/mod.rs).
//!
//! It owns the processes and leaves none behind: chromedriver in its own process group (with
//! the Chromium it starts) killed on drop, `fleetdash serve` stopped on drop. Around them: an
//! htpasswd made with bcrypt, DevTools commands over chromedriver's `goog/cdp/execute`, the
//! basic-auth log-in (credentials in the page URL break wasm-bindgen's fetch of the .wasm, so
//! the browser sends the header itself: `Network.setExtraHTTPHeaders`; or, where the service
//! worker must run, the browser's own login, given once in the address of another file),
//! DevTools' network emulation on the page and on its service workers, opening a URL and
//! running a script. What a test asserts (waits, checks, screenshots) stays in the test; what a
//! bench measures stays in the bench.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use axum::http::Method;
use base64::Engine;
use fantoccini::wd::{Capabilities, WebDriverCompatibleCommand};
use fantoccini::{Client, ClientBuilder};
use fleetdash_model::{Glance, Snapshot};
use serde::Deserialize;
use serde_json::{Value, json};

/// A phone: the width of an iPhone 12-15 in CSS pixels.
pub const PHONE: (u32, u32) = (390, 844);

/// What to run when chromedriver or Chromium is missing.
pub const INSTALL: &str = "apt-get install chromium chromium-driver (scripts/test does)";

/// DevTools' network conditions: offline, or the network as it is.
pub fn network(offline: bool) -> Value {
    json!({"offline": offline, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1})
}

/// The single-threaded runtime the WebDriver client runs on.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Writes `dir/htpasswd` with one user, its password hashed with bcrypt (a low cost: the
/// password is a test's, and serve verifies each login once, then remembers it).
pub fn write_htpasswd(dir: &Path, user: &str, password: &str) {
    let hash = bcrypt::hash_with_result(password, 5)
        .unwrap()
        .format_for_version(bcrypt::Version::TwoY);
    std::fs::write(dir.join("htpasswd"), format!("{user}:{hash}\n")).unwrap();
}

/// The real `fleetdash serve --listen 127.0.0.1:0`, stopped on drop.
pub struct Serve {
    /// The address it listens on, as it printed it ("127.0.0.1:41234").
    pub addr: String,
    child: Option<Child>,
}

impl Serve {
    pub fn start(config: &Path) -> Serve {
        Serve::start_at(config, "127.0.0.1:0")
    }

    /// On `listen`: a server restarted where the browser knows it (the same origin).
    pub fn start_at(config: &Path, listen: &str) -> Serve {
        let mut child = Command::new(env!("CARGO_BIN_EXE_fleetdash"))
            .env("FLEETDASH_LOG", "warn")
            .args(["serve", "--listen", listen, "--config"])
            .arg(config)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        stderr.read_line(&mut line).unwrap();
        let addr = line
            .trim()
            .strip_prefix("fleetdash: serving on http://")
            .and_then(|s| s.strip_suffix('/'))
            .unwrap_or_else(|| panic!("fleetdash serve did not start: {line:?}"))
            .to_string();
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        Serve {
            addr,
            child: Some(child),
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// SIGTERM, then SIGKILL if it has not stopped within 5 s.
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        unsafe {
            libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        self.stop();
    }
}

/// chromedriver in its own process group, with the Chromium it starts; the whole group is
/// killed on drop, so a failed run leaves no browser behind.
struct Driver {
    child: Child,
    port: u16,
}

impl Driver {
    fn start() -> Driver {
        for _ in 0..5 {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let mut child = Command::new("chromedriver")
                .arg(format!("--port={port}"))
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .process_group(0)
                .spawn()
                .unwrap_or_else(|e| panic!("chromedriver does not start ({e}): {INSTALL}"));
            let mut stdout = BufReader::new(child.stdout.take().unwrap());
            let mut line = String::new();
            while stdout.read_line(&mut line).unwrap_or(0) > 0 {
                if line.contains("started successfully") {
                    std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
                    return Driver { child, port };
                }
                line.clear();
            }
            // The port was taken in between: try another.
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("chromedriver did not start on any port");
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        unsafe {
            libc::killpg(self.child.id() as libc::pid_t, libc::SIGKILL);
        }
        let _ = self.child.wait();
    }
}

/// When the page first showed the verdict (`#verdict`) and the Board note (`#board p.note`),
/// and when its load event ended: ms after navigation start by the page's own clock
/// (`performance.now()`), `None` for what has not happened.
#[derive(Debug, Deserialize)]
pub struct FirstRender {
    pub verdict: Option<f64>,
    pub note: Option<f64>,
    pub loaded: Option<f64>,
}

/// The Board note the page must show for `snapshot` (what the board's list leaves out), in the
/// model's words. It has no time in it: the zone does not matter.
pub fn board_note(snapshot: &Snapshot) -> String {
    let glance = Glance::new(
        snapshot,
        chrono::Utc::now(),
        chrono::FixedOffset::east_opt(0).unwrap(),
    );
    glance
        .sections
        .into_iter()
        .find(|s| s.id == "board")
        .and_then(|s| s.note)
        .expect("the Board panel says what it does not list")
}

/// A DevTools command run by chromedriver in the page's target.
#[derive(Debug)]
struct Cdp {
    cmd: &'static str,
    params: Value,
}

impl WebDriverCompatibleCommand for Cdp {
    fn endpoint(
        &self,
        base_url: &url::Url,
        session_id: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base_url.join(&format!(
            "session/{}/goog/cdp/execute",
            session_id.unwrap_or_default()
        ))
    }

    fn method_and_body(&self, _: &url::Url) -> (Method, Option<String>) {
        let body = json!({"cmd": self.cmd, "params": self.params});
        (Method::POST, Some(body.to_string()))
    }
}

/// A headless Chromium the size of a phone (mobile emulation at [`PHONE`], a fresh profile),
/// through its own chromedriver.
pub struct Browser {
    pub client: Client,
    /// The id of the next DevTools message sent to a worker's session.
    worker_message: AtomicU32,
    _profile: tempfile::TempDir,
    _driver: Driver,
}

impl Browser {
    pub async fn start() -> Browser {
        let driver = Driver::start();
        let profile = tempfile::tempdir().unwrap();
        let (width, height) = PHONE;
        let args = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            &format!("--window-size={width},{height}"),
            &format!("--user-data-dir={}", profile.path().display()),
        ];
        let capabilities: Capabilities = serde_json::from_value(json!({
            "browserName": "chrome",
            "goog:chromeOptions": {
                "args": args,
                "mobileEmulation": {
                    "deviceMetrics": {"width": width, "height": height, "pixelRatio": 2.0,
                                      "mobile": true, "touch": true},
                },
            },
        }))
        .unwrap();
        let client = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(capabilities)
            .connect(&format!("http://127.0.0.1:{}", driver.port))
            .await
            .unwrap_or_else(|e| panic!("chromedriver could not start Chromium ({e}): {INSTALL}"));
        Browser {
            client,
            worker_message: AtomicU32::new(1),
            _profile: profile,
            _driver: driver,
        }
    }

    pub async fn cdp(&self, cmd: &'static str, params: Value) -> Value {
        self.client
            .issue_cmd(Cdp { cmd, params })
            .await
            .unwrap_or_else(|e| panic!("DevTools {cmd} failed: {e}"))
    }

    /// From now on every request of the page carries the basic-auth header.
    pub async fn log_in_as(&self, user: &str, password: &str) {
        let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        self.cdp("Network.enable", json!({})).await;
        self.cdp(
            "Network.setExtraHTTPHeaders",
            json!({"headers": {"Authorization": format!("Basic {token}")}}),
        )
        .await;
    }

    /// Logs in as a person does: the browser asked for the password once (here: given in the
    /// address of a first request, for `origin`'s sw.js, whose folder is the whole site) and
    /// sends it from then on to the whole site, from the page and from its service worker
    /// alike (DevTools' extra header never reaches a worker). The page itself is then opened
    /// without credentials in its address, which would break wasm-bindgen's fetch of the .wasm.
    pub async fn log_in_by_url(&self, origin: &str, user: &str, password: &str) {
        let password = password.replace(' ', "%20");
        let with_login = origin.replacen("http://", &format!("http://{user}:{password}@"), 1);
        self.open(&format!("{with_login}/sw.js")).await;
    }

    /// Attaches a DevTools session to each service worker of the browser (a target of its own,
    /// as the DevTools window does: network conditions set on the page alone leave the worker's
    /// fetches on the network as it is) and enables its Network domain. Returns the sessions,
    /// for [`Browser::emulate_network`] and [`Browser::detach_workers`]; none when no worker runs.
    pub async fn attach_workers(&self) -> Vec<Value> {
        let mut sessions = Vec::new();
        for worker in self.service_workers().await {
            let attached = self
                .cdp(
                    "Target.attachToTarget",
                    json!({"targetId": worker, "flatten": false}),
                )
                .await;
            let session = attached["sessionId"].clone();
            self.to_worker(&session, "Network.enable", json!({})).await;
            sessions.push(session);
        }
        sessions
    }

    /// The DevTools target ids of the browser's service workers.
    pub async fn service_workers(&self) -> Vec<String> {
        let targets = self.cdp("Target.getTargets", json!({})).await;
        targets["targetInfos"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|t| t["type"] == "service_worker")
            .filter_map(|t| t["targetId"].as_str().map(str::to_string))
            .collect()
    }

    /// DevTools' network `conditions` (see [`network`]) for the page and for the workers of
    /// `sessions` (from [`Browser::attach_workers`]).
    pub async fn emulate_network(&self, sessions: &[Value], conditions: &Value) {
        self.cdp("Network.enable", json!({})).await;
        self.cdp("Network.emulateNetworkConditions", conditions.clone())
            .await;
        for session in sessions {
            self.to_worker(
                session,
                "Network.emulateNetworkConditions",
                conditions.clone(),
            )
            .await;
        }
    }

    /// Ends the sessions of [`Browser::attach_workers`].
    pub async fn detach_workers(&self, sessions: Vec<Value>) {
        for session in sessions {
            self.cdp("Target.detachFromTarget", json!({"sessionId": session}))
                .await;
        }
    }

    /// A DevTools command to a worker's session (its answer is not awaited: chromedriver
    /// passes on no event).
    async fn to_worker(&self, session: &Value, method: &str, params: Value) {
        let id = self.worker_message.fetch_add(1, Ordering::Relaxed);
        self.cdp(
            "Target.sendMessageToTarget",
            json!({"sessionId": session,
                   "message": json!({"id": id, "method": method, "params": params}).to_string()}),
        )
        .await;
    }

    pub async fn open(&self, url: &str) {
        self.client
            .goto(url)
            .await
            .unwrap_or_else(|e| panic!("cannot open {url}: {e}"));
    }

    /// For every document opened from now on: a MutationObserver, installed before the page's
    /// own scripts run, that notes when the verdict and the Board note first appear (read back
    /// by [`Browser::first_render`]).
    pub async fn clock_first_render(&self) {
        self.cdp(
            "Page.addScriptToEvaluateOnNewDocument",
            json!({"source": "new MutationObserver((_, seen) => {
                if (!window.__verdictAt && document.getElementById('verdict'))
                    window.__verdictAt = performance.now();
                if (!window.__noteAt && document.querySelector('#board p.note')) {
                    window.__noteAt = performance.now();
                    seen.disconnect();
                }
            }).observe(document, {childList: true, subtree: true});"}),
        )
        .await;
    }

    /// What the clock of [`Browser::clock_first_render`] noted in the open document.
    pub async fn first_render(&self) -> FirstRender {
        self.js("const nav = performance.getEntriesByType('navigation')[0];
             return {verdict: window.__verdictAt || null, note: window.__noteAt || null,
                     loaded: nav && nav.loadEventEnd || null};")
            .await
    }

    pub async fn js<T: serde::de::DeserializeOwned>(&self, script: &str) -> T {
        let value = self
            .client
            .execute(script, Vec::new())
            .await
            .unwrap_or_else(|e| panic!("script failed: {e}\n{script}"));
        serde_json::from_value(value.clone())
            .unwrap_or_else(|e| panic!("script returned {value}: {e}\n{script}"))
    }

    pub async fn quit(self) {
        let _ = self.client.close().await;
    }
}

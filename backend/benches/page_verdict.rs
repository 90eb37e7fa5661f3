//! Benchmark of the page's glance on a phone: how long after navigation start headless Chromium
//! shows the rendered verdict, for boards of 1,000, 10,000 and 100,000 cards. It prints figures
//! and asserts no timing.
//!
//! Run at the repository root:
//!
//!     cargo bench -p fleetdash --bench page_verdict
//!
//! Needs `chromium` and `chromium-driver` (Debian; `scripts/test` installs them): without them
//! it fails at once, with the command that installs them.
//!
//! What it does, per board size:
//! 1. Builds a mature Hermes board (nearly all done, four cards needing attention: the board of
//!    tests/browser.rs scenario 7) and collects it with the real collector (`fleetdash
//!    collect`'s library call), so status.json lists the cards under the rules' `board` cap and
//!    counts the rest.
//! 2. Serves it with the real `fleetdash serve --listen 127.0.0.1:0` behind basic auth (a bcrypt
//!    htpasswd), with the page built into the binary (no `dist_dir`: what a user gets).
//! 3. Loads the page in headless Chromium through chromedriver at a phone's 390x844 (mobile
//!    emulation), logged in with the Authorization header set through DevTools: one warm-up
//!    load, then N new navigations with the cache disabled (`Network.setCacheDisabled`) and
//!    browser storage cleared, each a first visit fetching the page, its wasm and status.json;
//!    then the same with the cache on (a return visit: the page's files from the cache).
//! 4. Per load, by the page's own clock (a MutationObserver installed before the page's
//!    scripts): navigation start to the rendered verdict (`#verdict`), to the Board note
//!    (`#board p.note`), and the load event; from Resource Timing the status.json and .wasm
//!    fetches (duration and bytes). A load counts only if the page is right: the counts line
//!    says the snapshot's verdict and the Board note says what the model's glance says; a wrong
//!    page fails the bench with what it showed.
//!
//! It prints per size status.json's bytes (raw, and gzip as served), the verdict's min / median
//! / max, the medians of the note, the load event, the status.json and wasm fetches and of the
//! verdict on a return visit; then the goals beside the figures: status.json under 300 KB raw
//! at every size (issue 13), the page's first load within its gzip budget (scripts/size-budget)
//! (`scripts/size-budget`), and the verdict at the largest board within [`VERDICT_GROWTH_GOAL`]
//! of the smallest's (issue 13: the page stays a glance at any board size).
//!
//! Then a phone on a slow link (issue 35): the smallest board again with Chromium's network
//! emulation at Chrome DevTools' "Slow 3G" (2,000 ms latency, 400 kbit/s each way), first visits
//! and return visits: navigation start to the verdict's first paint, and every byte the load
//! moved over the wire (`transferSize`, headers included), as the phone gets the page (brotli
//! when it asks for it, as Chromium does on localhost and over HTTPS).
//!
//! `FLEETDASH_BENCH_QUICK=1`: 1,000 and 10,000 cards only, 3 loads each instead of 10 (2 on the
//! slow link instead of 5).

#[path = "../../tests/support/chrome.rs"]
mod chrome;
// Its verdict words only (the rest serves other benches).
#[allow(dead_code)]
mod common;
#[path = "../../tests/support/kanban.rs"]
mod kanban;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use chrome::{Browser, PHONE, Serve};
use common::verdict;
use fleetdash_model::{Probe, Snapshot, thousands};
use serde::Deserialize;
use serde_json::{Value, json};

const USER: &str = "bench";
const PASSWORD: &str = "a phone on the train";

/// Issue 13's goal for status.json at 10,000 and 100,000 cards, raw (KB of 1,024 B, as
/// `scripts/size-budget` counts).
const STATUS_JSON_GOAL_BYTES: u64 = 300 * 1024;
/// The page's first-load budget, gzip: `scripts/size-budget`'s (index.html, .js, .wasm, .css).
const FIRST_LOAD_BUDGET_BYTES: u64 = 139 * 1024;
/// Issue 13: the page stays a glance at any board size. This bench reads it as the median time
/// to the verdict at the largest board being within half again the smallest board's: room for
/// the noise of a shared 2-core machine, while a page that grew with the board would miss it by
/// far (before the cap a card cost ~447 B of status.json: 44 MB at 100,000 cards).
const VERDICT_GROWTH_GOAL: f64 = 1.5;
/// How long a load may take before the bench calls the page hung (a hang, not a speed bound).
const PATIENCE: Duration = Duration::from_secs(60);

fn main() {
    let quick = std::env::var_os("FLEETDASH_BENCH_QUICK").is_some();
    let loads = if quick { 3 } else { 10 };
    let sizes: &[usize] = if quick {
        &[1_000, 10_000]
    } else {
        &[1_000, 10_000, 100_000]
    };
    let runtime = chrome::runtime();
    // First, so that a machine without Chromium fails at once, before any board is built.
    let browser = runtime.block_on(Browser::start());
    let version = runtime.block_on(browser.cdp("Browser.getVersion", json!({})));
    runtime.block_on(async {
        browser.log_in_as(USER, PASSWORD).await;
        browser.clock_first_render().await;
    });
    println!(
        "page_verdict: {} through chromedriver, {}x{} mobile emulation; the page built into the \
         fleetdash binary (no dist_dir: what a user gets), served by `fleetdash serve` behind \
         basic auth",
        version["product"]
            .as_str()
            .unwrap_or("Chromium (version unknown)"),
        PHONE.0,
        PHONE.1
    );
    println!(
        "per board: 1 warm-up + {loads} loads with the cache disabled and storage cleared (first \
         visits), then 1 + {loads} with the cache on (return visits)"
    );

    let mut rows = Vec::new();
    for &cards in sizes {
        let board = Collected::new(cards);
        let server = Serve::start(&board.config);
        let url = server.url();
        let cold = runtime.block_on(loads_of(&browser, &url, &board, loads, Cache::Disabled));
        let warm = runtime.block_on(loads_of(&browser, &url, &board, loads, Cache::Enabled));
        drop(server);
        rows.push(Row { board, cold, warm });
    }
    // A phone on a slow link (issue 35): the smallest board again, through DevTools' network
    // emulation, first visits and return visits.
    let slow = {
        let board = &rows[0].board;
        let server = Serve::start(&board.config);
        let url = server.url();
        let slow_loads = if quick { 2 } else { 5 };
        runtime.block_on(browser.cdp("Network.emulateNetworkConditions", SLOW_LINK.params()));
        let cold = runtime.block_on(loads_of(&browser, &url, board, slow_loads, Cache::Disabled));
        let warm = runtime.block_on(loads_of(&browser, &url, board, slow_loads, Cache::Enabled));
        runtime.block_on(browser.cdp(
            "Network.emulateNetworkConditions",
            json!({"offline": false, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1}),
        ));
        drop(server);
        (cold, warm)
    };
    runtime.block_on(browser.quit());

    println!();
    println!(
        "{:>7} {:>7} {:>6} | {:>15} {:>9} | {:>25} | {:>7} {:>7} {:>12} {:>7} | {:>10}",
        "cards",
        "listed",
        "built",
        "status.json raw",
        "gzip",
        "verdict ms min/median/max",
        "note",
        "load",
        "status.json",
        "wasm",
        "return visit"
    );
    for row in &rows {
        let cold = &row.cold;
        let verdicts = sorted(cold.iter().map(|l| l.verdict));
        let status = &cold[0].status;
        let med =
            |loads: &[Load], figure: fn(&Load) -> f64| median(&sorted(loads.iter().map(figure)));
        println!(
            "{:>7} {:>7} {:>5.2}s | {:>12.1} KB {:>6.1} KB | {:>7.0} {:>8.0} {:>8.0} | {:>7.0} {:>7.0} {:>12.1} {:>7.1} | {:>10.0}",
            thousands(row.board.cards as u64),
            row.board.listed,
            row.board.built.as_secs_f64(),
            row.board.raw_bytes as f64 / 1024.0,
            status.encoded as f64 / 1024.0,
            verdicts[0],
            median(&verdicts),
            verdicts[verdicts.len() - 1],
            med(cold, |l| l.note),
            med(cold, |l| l.loaded),
            med(cold, |l| l.status.ms),
            med(cold, |l| l.wasm.ms),
            med(&row.warm, |l| l.verdict),
        );
    }
    println!(
        "(ms after navigation start, medians unless said; note: the Board note rendered; load: \
         the load event; status.json, wasm: their fetches; return visit: the verdict with the cache on)"
    );
    println!();

    for row in &rows {
        let raw = row.board.raw_bytes;
        println!(
            "status.json at {} cards: {:.1} KB raw, {:.1} KB gzip as served (goal under {} KB raw: {})",
            thousands(row.board.cards as u64),
            raw as f64 / 1024.0,
            row.cold[0].status.encoded as f64 / 1024.0,
            STATUS_JSON_GOAL_BYTES / 1024,
            verdict(raw < STATUS_JSON_GOAL_BYTES)
        );
    }
    let page = rows[0].cold[0].page_bytes;
    println!(
        "the page's first load as Chromium gets it: {:.1} KB over the wire (index.html, .js, .wasm, \
         .css; brotli, which Chromium asks for on localhost and over HTTPS; scripts/size-budget's \
         gzip budget {} KB: {})",
        page as f64 / 1024.0,
        FIRST_LOAD_BUDGET_BYTES / 1024,
        verdict(page <= FIRST_LOAD_BUDGET_BYTES)
    );
    let (first, last) = (&rows[0], &rows[rows.len() - 1]);
    let at = |row: &Row, figure: fn(&Load) -> f64| median(&sorted(row.cold.iter().map(figure)));
    let growth = at(last, |l| l.verdict) / at(first, |l| l.verdict);
    println!(
        "time to the verdict at {} cards vs {}: median {:.0} ms vs {:.0} ms, x{growth:.2} (goal within x{VERDICT_GROWTH_GOAL}: {}); \
         of it the status.json fetch: {:.1} ms vs {:.1} ms",
        thousands(last.board.cards as u64),
        thousands(first.board.cards as u64),
        at(last, |l| l.verdict),
        at(first, |l| l.verdict),
        verdict(growth <= VERDICT_GROWTH_GOAL),
        at(last, |l| l.status.ms),
        at(first, |l| l.status.ms),
    );
    println!();
    print_slow_link(&rows[0].board, &slow.0, &slow.1);
}

/// A slow mobile link as Chrome DevTools' "Slow 3G" preset throttles one: 2,000 ms of latency
/// (its 400 ms RTT times 5) and 400 kbit/s each way (500 kbit/s times 0.8).
struct Link {
    name: &'static str,
    latency_ms: u32,
    bytes_per_second: u32,
}

const SLOW_LINK: Link = Link {
    name: "DevTools' Slow 3G",
    latency_ms: 2_000,
    bytes_per_second: 50_000,
};

impl Link {
    fn params(&self) -> Value {
        json!({
            "offline": false,
            "latency": self.latency_ms,
            "downloadThroughput": self.bytes_per_second,
            "uploadThroughput": self.bytes_per_second,
        })
    }
}

fn print_slow_link(board: &Collected, cold: &[Load], warm: &[Load]) {
    println!(
        "a phone on a slow link ({}: {} ms latency, {} kbit/s each way), {} cards, the page as \
         a phone on it gets it:",
        SLOW_LINK.name,
        SLOW_LINK.latency_ms,
        SLOW_LINK.bytes_per_second * 8 / 1000,
        thousands(board.cards as u64)
    );
    for (what, loads) in [
        ("first visit (cache off)", cold),
        ("return visit (cache on)", warm),
    ] {
        let verdicts = sorted(loads.iter().map(|l| l.verdict));
        let bytes = sorted(loads.iter().map(|l| l.transferred as f64));
        println!(
            "  {what:<24} verdict painted {:>6.0} / {:>6.0} / {:>6.0} ms (min/median/max of {}), \
             {:>6.1} KB over the wire (median)",
            verdicts[0],
            median(&verdicts),
            verdicts[verdicts.len() - 1],
            loads.len(),
            median(&bytes) / 1024.0,
        );
    }
    println!(
        "  (a first visit's page files: {:.1} KB as sent, {:.1} KB of it the wasm)",
        cold[0].page_bytes as f64 / 1024.0,
        cold[0].wasm.encoded as f64 / 1024.0,
    );
}

/// A board of `cards` cards, collected: its scratch folder (config, htpasswd, status.json) and
/// what the page must show.
struct Collected {
    _dir: tempfile::TempDir,
    config: PathBuf,
    cards: usize,
    built: Duration,
    listed: usize,
    raw_bytes: u64,
    /// The counts line's sentence, from the snapshot.
    counts: String,
    /// The Board note, from the model's glance.
    note: String,
}

impl Collected {
    fn new(cards: usize) -> Collected {
        let dir = tempfile::tempdir().expect("temporary directory");
        let db = dir.path().join("lab.db");
        let started = Instant::now();
        let k = kanban::Kanban::create(&db);
        kanban::populate_mature(&k, cards);
        drop(k);
        let built = started.elapsed();
        let rules = Path::new(env!("CARGO_MANIFEST_DIR")).join("../config/rules.yaml");
        std::fs::copy(&rules, dir.path().join("rules.yaml")).expect("rules.yaml copied");
        chrome::write_htpasswd(dir.path(), USER, PASSWORD);
        let config = dir.path().join("fleetdash.toml");
        std::fs::write(
            &config,
            format!(
                "output_dir = \"out\"\nstate_dir = \"state\"\nrules = \"rules.yaml\"\n\n\
                 [[boards]]\nname = \"lab\"\nplane = \"LAB\"\ndb = {:?}\n\n\
                 [serve]\nhtpasswd = \"htpasswd\"\n",
                db.display().to_string()
            ),
        )
        .expect("config written");
        let done = chrome::runtime().block_on(fleetdash::app::collect(&config, None));
        match done {
            Ok(_) => {}
            Err(fleetdash::app::Failure::Config { errors, .. }) => panic!("config: {errors}"),
            Err(fleetdash::app::Failure::Other(e)) => panic!("collect failed: {e:#}"),
            Err(fleetdash::app::Failure::Exit(code)) => panic!("collect exited {code}"),
        }
        let status = dir.path().join("out/status.json");
        let json = std::fs::read(&status).expect("status.json");
        let snapshot: Snapshot = serde_json::from_slice(&json).expect("status.json parses");
        let board = snapshot.tasks.board.value().expect("the board was read");
        assert_eq!(
            board.sources[0].cards,
            Probe::Value(cards as u32),
            "{:?}",
            board.sources[0]
        );
        Collected {
            config,
            cards,
            built,
            listed: board.cards.len(),
            raw_bytes: json.len() as u64,
            counts: snapshot.verdict().sentence(),
            note: chrome::board_note(&snapshot),
            _dir: dir,
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Cache {
    /// Every load a first visit: nothing from the cache, no browser storage.
    Disabled,
    /// Every load a return visit: the page's files from the cache, the last look kept.
    Enabled,
}

/// One fetch, from Resource Timing.
#[derive(Debug, Deserialize)]
struct Fetch {
    ms: f64,
    /// Bytes over the wire, headers included; 0 when it came from the cache.
    transfer: u64,
    /// The body as sent (gzip when it was compressed).
    encoded: u64,
    decoded: u64,
}

/// One load of the page, ms after navigation start unless said.
#[derive(Debug)]
struct Load {
    verdict: f64,
    note: f64,
    loaded: f64,
    status: Fetch,
    wasm: Fetch,
    /// The page's own files (index.html, .js, .wasm, .css) as sent, gzip: what
    /// `scripts/size-budget` counts.
    page_bytes: u64,
    /// Every byte of the load over the wire (navigation and every resource, headers included;
    /// what came from the cache counts 0).
    transferred: u64,
}

struct Row {
    board: Collected,
    cold: Vec<Load>,
    warm: Vec<Load>,
}

/// One warm-up load, then `n` counted ones, each a new navigation.
async fn loads_of(
    browser: &Browser,
    url: &str,
    board: &Collected,
    n: usize,
    cache: Cache,
) -> Vec<Load> {
    browser
        .cdp(
            "Network.setCacheDisabled",
            json!({"cacheDisabled": cache == Cache::Disabled}),
        )
        .await;
    let mut loads = Vec::with_capacity(n);
    for i in 0..=n {
        if cache == Cache::Disabled {
            // The last look (browser storage) of the load before: a first visit has none.
            let _: Value = browser
                .js("try { localStorage.clear(); sessionStorage.clear(); } catch (e) {} return null")
                .await;
        }
        // From a blank page, so that each load is a navigation of its own (not a reload).
        browser.open("about:blank").await;
        browser.open(url).await;
        let load = read_load(browser, board).await;
        assert!(
            cache == Cache::Enabled || load.wasm.transfer > 0,
            "with the cache disabled the wasm came from the cache: not a first visit: {load:?}"
        );
        if i > 0 {
            loads.push(load);
        }
    }
    loads
}

/// Waits for the page to be drawn and its load event, checks that it shows the board right,
/// and reads the load's figures.
async fn read_load(browser: &Browser, board: &Collected) -> Load {
    let deadline = Instant::now() + PATIENCE;
    let seen: Value = loop {
        let seen: Value = browser
            .js(
                "const nav = performance.getEntriesByType('navigation')[0];
                 const text = s => { const e = document.querySelector(s); return e && e.innerText; };
                 return {done: !!(document.querySelector('#board p.note') && nav && nav.loadEventEnd > 0),
                         counts: text('.counts'), note: text('#board p.note'),
                         verdict: text('#verdict'), url: location.href,
                         body: document.body ? document.body.innerText.slice(0, 2000) : null};",
            )
            .await;
        if seen["done"] == true {
            break seen;
        }
        if Instant::now() > deadline {
            panic!(
                "{} cards: the page did not draw the Board note within {PATIENCE:?}; it shows {seen:#}",
                board.cards
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let counts = seen["counts"].as_str().unwrap_or_default();
    let note = seen["note"].as_str().unwrap_or_default();
    assert!(
        counts.contains(&board.counts) && note == board.note,
        "{} cards: the page is wrong: the counts should say {:?} and the note {:?}; it shows {seen:#}",
        board.cards,
        board.counts,
        board.note
    );
    let first = browser.first_render().await;
    let fetches: Value = browser
        .js("const all = performance.getEntriesByType('resource');
             const fetch = test => { const e = all.find(e => test(new URL(e.name).pathname));
                 return e && {ms: e.duration, transfer: e.transferSize, encoded: e.encodedBodySize,
                              decoded: e.decodedBodySize}; };
             const page = [...performance.getEntriesByType('navigation'), ...all]
                 .filter(e => /(\\/|\\.html|\\.js|\\.wasm|\\.css)$/.test(new URL(e.name).pathname))
                 .reduce((sum, e) => sum + e.encodedBodySize, 0);
             const transferred = [...performance.getEntriesByType('navigation'), ...all]
                 .reduce((sum, e) => sum + e.transferSize, 0);
             return {status: fetch(p => p.endsWith('/api/status.json')),
                     wasm: fetch(p => p.endsWith('.wasm')), page, transferred};")
        .await;
    let fetch = |what: &str| -> Fetch {
        serde_json::from_value(fetches[what].clone())
            .unwrap_or_else(|e| panic!("no {what} fetch in Resource Timing ({e}): {fetches:#}"))
    };
    let status = fetch("status");
    assert_eq!(
        status.decoded, board.raw_bytes,
        "{} cards: the bytes of status.json the page read, and those the collector wrote",
        board.cards
    );
    let missing = |what: &str| -> ! { panic!("{} cards: no {what} time: {first:?}", board.cards) };
    Load {
        verdict: first.verdict.unwrap_or_else(|| missing("verdict")),
        note: first.note.unwrap_or_else(|| missing("note")),
        loaded: first.loaded.unwrap_or_else(|| missing("load event")),
        status,
        wasm: fetch("wasm"),
        page_bytes: fetches["page"].as_u64().unwrap_or(0),
        transferred: fetches["transferred"].as_u64().unwrap_or(0),
    }
}

fn sorted(values: impl Iterator<Item = f64>) -> Vec<f64> {
    let mut values: Vec<f64> = values.collect();
    values.sort_by(f64::total_cmp);
    values
}

fn median(sorted: &[f64]) -> f64 {
    let mid = sorted.len() / 2;
    if sorted.len().is_multiple_of(2) {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    } else {
        sorted[mid]
    }
}

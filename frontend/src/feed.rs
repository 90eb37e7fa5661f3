//! The snapshot feed: fetches `api/status.json` every poll interval and when the tab comes back,
//! with `If-None-Match` / `If-Modified-Since`, so an unchanged snapshot costs a 304 and no body.
//!
//! The browser's own cache is bypassed (`no-store`) so that the validators are ours and a 304
//! really reaches this code: it proves the server is alive even when nothing changed.
//!
//! A refusal is said in the server's words (its problem+json title), a request that got no
//! answer in the operator's ("the server cannot be reached"), never the browser's TypeError.
//!
//! Every poll has a deadline: a server that accepts the connection and never answers is
//! aborted (`AbortController`) and counts as a failed poll, so the page never looks fresh when
//! it is not.
//!
//! The service worker (`sw.js`, docs/page.md) keeps the last snapshot: the first poll of a
//! visit asks for its copy at once (`Fleetdash-Cache`, naming the schema the page reads). A kept
//! copy comes marked (`Fleetdash-From`): it is shown, never taken for the server's answer, and
//! the server is asked at once.

use chrono::{DateTime, Utc};
use fleetdash_model::Snapshot;
use js_sys::futures::JsFuture;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::RequestCache;

/// Relative, so the page also works when served under a sub-path.
pub const STATUS_URL: &str = "api/status.json";
/// Spec §6.5: the page reads the last snapshot, no heavy polling: every 30 s and on focus.
pub const POLL_EVERY_S: u32 = 30;
/// A poll without a whole answer by then is given up: a third of the interval.
pub const DEADLINE_S: u32 = 10;

/// How often the page polls and how long it waits for each answer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timing {
    pub every_s: u32,
    pub deadline_s: u32,
}

impl Timing {
    /// The production timing, or the one a test asks for in the page's address
    /// (`?poll=2&deadline=1`, whole seconds): a test hook, nothing links to it.
    pub fn from_query(query: &str) -> Timing {
        let mut t = Timing {
            every_s: POLL_EVERY_S,
            deadline_s: DEADLINE_S,
        };
        for pair in query.trim_start_matches('?').split('&') {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            match (key, value.parse::<u32>()) {
                ("poll", Ok(v)) if v > 0 => t.every_s = v,
                ("deadline", Ok(v)) if v > 0 => t.deadline_s = v,
                _ => {}
            }
        }
        t
    }

    /// The last good poll may be this old before the page stops trusting what it shows:
    /// twice the interval, whatever the reason (an error, a hang, a poll never sent).
    pub fn trust_s(self) -> u64 {
        2 * u64::from(self.every_s)
    }
}

/// What the page knows: the last good snapshot and how the latest fetch went.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Feed {
    pub snapshot: Option<Snapshot>,
    /// When a fetch last succeeded (a 200 or a 304), by the browser's clock.
    pub last_ok_at: Option<DateTime<Utc>>,
    /// Why the latest fetch failed; `None` after a success.
    pub error: Option<String>,
    pub etag: Option<String>,
    pub last_modified: Option<String>,
}

pub enum Fetched {
    Fresh {
        snapshot: Box<Snapshot>,
        etag: Option<String>,
        last_modified: Option<String>,
        /// The service worker's kept copy, not the server's answer.
        kept: bool,
    },
    NotModified,
}

/// One poll, given up after `deadline_s` (headers and body alike).
pub async fn fetch(
    etag: Option<String>,
    last_modified: Option<String>,
    first: bool,
    deadline_s: u32,
) -> Result<Fetched, String> {
    let controller = web_sys::AbortController::new().map_err(network_error)?;
    let deadline = Deadline::start(&controller, deadline_s);
    let result = fetch_with(etag, last_modified, first, &controller.signal()).await;
    drop(deadline);
    result.map_err(|e| {
        if controller.signal().aborted() {
            format!("no answer within {deadline_s} s (the server hangs or the network is down)")
        } else {
            e
        }
    })
}

/// Aborts a fetch when its time is up; dropped, it is cancelled.
struct Deadline {
    handle: i32,
    _abort: wasm_bindgen::closure::Closure<dyn FnMut()>,
}

impl Deadline {
    fn start(controller: &web_sys::AbortController, deadline_s: u32) -> Option<Deadline> {
        let controller = controller.clone();
        let abort = wasm_bindgen::closure::Closure::<dyn FnMut()>::new(move || controller.abort());
        let handle = leptos::prelude::window()
            .set_timeout_with_callback_and_timeout_and_arguments_0(
                abort.as_ref().unchecked_ref(),
                (deadline_s * 1000) as i32,
            )
            .ok()?;
        Some(Deadline {
            handle,
            _abort: abort,
        })
    }
}

impl Drop for Deadline {
    fn drop(&mut self) {
        leptos::prelude::window().clear_timeout_with_handle(self.handle);
    }
}

async fn fetch_with(
    etag: Option<String>,
    last_modified: Option<String>,
    first: bool,
    signal: &web_sys::AbortSignal,
) -> Result<Fetched, String> {
    // The browser's fetch, called directly: gloo-net's wrapper brought serde_json's and std::io's
    // error texts into the page.
    let headers = web_sys::Headers::new().map_err(network_error)?;
    // To the service worker: its kept copy is welcome at once, of the schema this page reads.
    if first {
        headers
            .set("Fleetdash-Cache", fleetdash_model::SCHEMA_VERSION)
            .map_err(network_error)?;
    }
    if let Some(tag) = &etag {
        headers.set("If-None-Match", tag).map_err(network_error)?;
    }
    if let Some(date) = &last_modified {
        headers
            .set("If-Modified-Since", date)
            .map_err(network_error)?;
    }
    let init = web_sys::RequestInit::new();
    init.set_cache(RequestCache::NoStore);
    init.set_headers(&headers);
    init.set_signal(Some(signal));
    let response: web_sys::Response =
        JsFuture::from(leptos::prelude::window().fetch_with_str_and_init(STATUS_URL, &init))
            .await
            .map_err(network_error)?
            .unchecked_into();
    let header = |name: &str| response.headers().get(name).ok().flatten();
    // The browser parses the HTTP date (chrono's RFC 2822 parser would cost kilobytes).
    if let Some(date) = header("date")
        .map(|d| js_sys::Date::parse(&d))
        .filter(|ms| ms.is_finite())
        .and_then(|ms| DateTime::from_timestamp_millis(ms as i64))
    {
        crate::clock::sync_with_server(date);
    }
    match response.status() {
        304 => Ok(Fetched::NotModified),
        200 => {
            let text = response.text().map_err(network_error)?;
            let text = JsFuture::from(text).await.map_err(network_error)?;
            let snapshot = crate::wire::parse_snapshot(&text.as_string().unwrap_or_default())
                .map_err(|e| format!("status.json is not a valid snapshot ({e})"))?;
            Ok(Fetched::Fresh {
                snapshot: Box::new(snapshot),
                etag: header("etag"),
                last_modified: header("last-modified"),
                kept: header("fleetdash-from").is_some(),
            })
        }
        401 => Err("HTTP 401: not logged in (reload the page to log in again)".into()),
        status => Err(refused(status, &response).await),
    }
}

/// A refusal in the server's own words: the title of its problem+json ("HTTP 503: No
/// snapshot yet"), or the status alone when the body says nothing readable.
async fn refused(status: u16, response: &web_sys::Response) -> String {
    let title = match response.text() {
        Ok(text) => JsFuture::from(text)
            .await
            .ok()
            .and_then(|t| t.as_string())
            .and_then(|t| js_sys::JSON::parse(&t).ok())
            .and_then(|body| js_sys::Reflect::get(&body, &JsValue::from_str("title")).ok())
            .and_then(|title| title.as_string())
            .filter(|t| !t.is_empty() && t.len() <= 120),
        Err(_) => None,
    };
    match title {
        Some(title) => format!("HTTP {status}: {title}"),
        // nginx's own 404 page: the file is not there.
        None if status == 404 => "HTTP 404: no status.json yet (is the collector running?)".into(),
        None => format!("HTTP {status} from the server"),
    }
}

/// The browser says "TypeError: Failed to fetch" for every request that got no answer at all
/// (server down, network gone, connection cut): said in words the operator can act on.
fn network_error(_: JsValue) -> String {
    "the server cannot be reached (it is down, or the network is)".into()
}

impl Feed {
    /// The feed after a fetch that ended at `now`.
    pub fn after(&self, result: Result<Fetched, String>, now: DateTime<Utc>) -> Feed {
        let mut next = self.clone();
        match result {
            // The service worker's kept copy (only ever to a first poll) is shown with its
            // validators, so that the server's 304 confirms it; it is no good poll.
            Ok(Fetched::Fresh {
                snapshot,
                etag,
                last_modified,
                kept,
            }) => {
                next.snapshot = Some(*snapshot);
                next.etag = etag;
                next.last_modified = last_modified;
                if !kept {
                    next.last_ok_at = Some(now);
                    next.error = None;
                }
            }
            Ok(Fetched::NotModified) => {
                next.last_ok_at = Some(now);
                next.error = None;
            }
            Err(reason) => next.error = Some(reason),
        }
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleetdash_model::RulesView;

    /// The tests' clock: one fixed moment, so that no outcome depends on the day they run.
    fn fixed_now() -> chrono::DateTime<chrono::Utc> {
        "2026-11-30T12:00:00Z".parse().expect("an RFC 3339 instant")
    }

    fn snapshot() -> Snapshot {
        Snapshot::empty(
            fixed_now(),
            RulesView {
                no_reply_s: 300,
                exchange_green_below_s: 1800,
                exchange_amber_below_s: 21600,
                snapshot_stale_after_s: 600,
                backup_amber_after_s: 93600,
                backup_red_after_s: 172800,
                window_amber_at_percent: 90,
                ack_within_s: 600,
                worker_died_s: 3600,
                clock_step_s: 5,
            },
        )
    }

    fn fresh(etag: &str) -> Result<Fetched, String> {
        answer(etag, false)
    }

    fn answer(etag: &str, kept: bool) -> Result<Fetched, String> {
        Ok(Fetched::Fresh {
            snapshot: Box::new(snapshot()),
            etag: Some(etag.into()),
            last_modified: None,
            kept,
        })
    }

    #[test]
    fn a_failed_fetch_keeps_the_last_good_snapshot_and_says_why() {
        let t0 = fixed_now();
        let feed = Feed::default().after(fresh("\"a\""), t0);
        let failed = feed.after(
            Err("HTTP 502 from the server".into()),
            t0 + chrono::Duration::seconds(30),
        );
        assert_eq!(failed.snapshot, feed.snapshot);
        assert_eq!(failed.last_ok_at, Some(t0));
        assert_eq!(failed.error.as_deref(), Some("HTTP 502 from the server"));
        assert_eq!(
            failed.etag.as_deref(),
            Some("\"a\""),
            "the validator survives for the next try"
        );
    }

    #[test]
    fn the_timing_is_the_production_one_unless_a_test_asks() {
        let production = Timing::from_query("");
        assert_eq!((production.every_s, production.deadline_s), (30, 10));
        assert_eq!(production.trust_s(), 60);
        let test = Timing::from_query("?poll=2&deadline=1");
        assert_eq!((test.every_s, test.deadline_s), (2, 1));
        // Nonsense keeps the production values.
        assert_eq!(Timing::from_query("?poll=0&deadline=x&other"), production);
    }

    #[test]
    fn a_304_proves_the_server_alive_without_replacing_the_snapshot() {
        let t0 = fixed_now();
        let failed = Feed::default()
            .after(fresh("\"a\""), t0)
            .after(Err("network error".into()), t0);
        let later = t0 + chrono::Duration::seconds(60);
        let revalidated = failed.after(Ok(Fetched::NotModified), later);
        assert_eq!(revalidated.error, None);
        assert_eq!(revalidated.last_ok_at, Some(later));
        assert_eq!(revalidated.snapshot, failed.snapshot);
    }

    /// The service worker's copy on a first poll: shown, with its validators (a 304 of the
    /// server confirms it), but no poll succeeded yet, and a failure after it is said.
    #[test]
    fn a_kept_copy_is_shown_but_never_taken_for_the_servers_answer() {
        let t0 = fixed_now();
        let checking = Feed::default().after(answer("\"k\"", true), t0);
        assert!(checking.snapshot.is_some());
        assert_eq!(checking.etag.as_deref(), Some("\"k\""));
        assert_eq!(
            (checking.last_ok_at, checking.error.as_deref()),
            (None, None)
        );
        let live = checking.after(Ok(Fetched::NotModified), t0);
        assert_eq!((live.last_ok_at, live.error.as_deref()), (Some(t0), None));
        let offline = checking.after(Err("the server cannot be reached".into()), t0);
        assert_eq!(offline.snapshot, checking.snapshot);
        assert_eq!(offline.last_ok_at, None);
        assert!(offline.error.is_some());
    }
}

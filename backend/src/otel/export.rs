//! The way out of the process: the OTLP exporter's HTTP requests, sent by the async runtime's
//! own reqwest client ([`RuntimeClient`]), and the count of what was exported or dropped
//! ([`Counted`]).
//!
//! The batch processor exports from its own thread, never from a pass: a pass only hands its
//! finished spans to the processor's bounded queue. Each export's request is spawned onto the
//! runtime (reqwest needs its reactor; one client, no second runtime) and waited for by that
//! thread. An export that fails drops its batch, counted; the first failure after a success is
//! logged (through the gate, like every line) in fleetdash's own words, never the receiver's.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{SpanData, SpanExporter};

use crate::metrics::SpanObserver;

/// How long one export may take, its answer read in full.
pub const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// The most of a receiver's answer that is read (OTLP answers are a few bytes).
const ANSWER_MAX_BYTES: usize = 64 * 1024;

/// Spans exported and dropped since the start, and whether exports are failing now.
#[derive(Debug, Default)]
pub struct Stats {
    pub exported: AtomicU64,
    pub dropped: AtomicU64,
    failing: AtomicBool,
    /// Why the last request failed, in fleetdash's words ("cannot connect", "HTTP 503").
    last_failure: std::sync::Mutex<Option<&'static str>>,
}

impl Stats {
    fn failed_because(&self, why: &'static str) {
        *self.last_failure.lock().expect("never poisoned") = Some(why);
    }

    fn why(&self) -> &'static str {
        self.last_failure
            .lock()
            .expect("never poisoned")
            .take()
            .unwrap_or("the exporter refused the batch")
    }
}

/// The OTLP exporter's HTTP client: each request runs on the async runtime.
#[derive(Debug, Clone)]
pub struct RuntimeClient {
    client: reqwest::Client,
    runtime: tokio::runtime::Handle,
    stats: Arc<Stats>,
}

impl RuntimeClient {
    pub fn new(runtime: tokio::runtime::Handle, stats: Arc<Stats>) -> RuntimeClient {
        RuntimeClient {
            // No redirects: a receiver's answer is taken as it is, sent nowhere else.
            client: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .timeout(EXPORT_TIMEOUT)
                .build()
                .unwrap_or_default(),
            runtime,
            stats,
        }
    }
}

#[async_trait]
impl HttpClient for RuntimeClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let client = self.client.clone();
        let stats = self.stats.clone();
        let sent = self.runtime.spawn(async move {
            let request = reqwest::Request::try_from(request)
                .map_err(|_| "the export request could not be built")?;
            let mut answer = client.execute(request).await.map_err(|e| {
                if e.is_timeout() {
                    "no answer in time"
                } else if e.is_connect() {
                    "cannot connect"
                } else {
                    "the request failed"
                }
            })?;
            let mut response = Response::builder().status(answer.status());
            for (name, value) in answer.headers() {
                response = response.header(name, value);
            }
            let mut body = Vec::new();
            while let Some(chunk) = answer.chunk().await.map_err(|_| "the answer broke off")? {
                let room = ANSWER_MAX_BYTES.saturating_sub(body.len());
                body.extend_from_slice(&chunk[..chunk.len().min(room)]);
            }
            if !answer.status().is_success() {
                stats.failed_because(status_words(answer.status().as_u16()));
            }
            response
                .body(Bytes::from(body))
                .map_err(|_| "the answer could not be read")
        });
        match sent.await {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(why)) => {
                self.stats.failed_because(why);
                Err(why.into())
            }
            Err(_) => {
                self.stats.failed_because("the export task stopped");
                Err("the export task stopped".into())
            }
        }
    }
}

/// A receiver's refusal in a word: its HTTP status class, never its body.
fn status_words(status: u16) -> &'static str {
    match status {
        401 | 403 => "refused: not authorised (the token?)",
        404 => "refused: HTTP 404 (the endpoint's path?)",
        413 => "refused: HTTP 413 (batch too large)",
        429 => "refused: HTTP 429 (rate limited)",
        400..=499 => "refused: HTTP 4xx",
        500..=599 => "failed: HTTP 5xx",
        _ => "an unexpected HTTP status",
    }
}

/// The OTLP exporter, counting what it exported and what it dropped.
pub struct Counted<E> {
    inner: E,
    stats: Arc<Stats>,
    /// The receiver, as the log names it (`127.0.0.1:4318`): from the config, no path.
    receiver: String,
    /// `fleetdash run`'s /metrics counters, told of each export.
    observer: Option<SpanObserver>,
}

impl<E> Counted<E> {
    pub fn new(
        inner: E,
        stats: Arc<Stats>,
        receiver: String,
        observer: Option<SpanObserver>,
    ) -> Counted<E> {
        Counted {
            inner,
            stats,
            receiver,
            observer,
        }
    }
}

impl<E> std::fmt::Debug for Counted<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Counted")
            .field("receiver", &self.receiver)
            .finish_non_exhaustive()
    }
}

impl<E: SpanExporter> SpanExporter for Counted<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let spans = batch.len() as u64;
        let result = self.inner.export(batch).await;
        if let Some(observe) = &self.observer {
            observe(spans, result.is_ok());
        }
        let stats = &self.stats;
        match &result {
            Ok(()) => {
                stats.exported.fetch_add(spans, Ordering::Relaxed);
                if stats.failing.swap(false, Ordering::Relaxed) {
                    tracing::info!(
                        receiver = %self.receiver,
                        dropped = stats.dropped.load(Ordering::Relaxed),
                        "OpenTelemetry export works again"
                    );
                }
            }
            Err(_) => {
                let dropped = stats.dropped.fetch_add(spans, Ordering::Relaxed) + spans;
                let why = stats.why();
                if !stats.failing.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        receiver = %self.receiver,
                        spans,
                        dropped,
                        "OpenTelemetry export failed ({why}): its spans are dropped; further \
                         failures are counted, not logged, until an export succeeds"
                    );
                } else {
                    tracing::debug!(receiver = %self.receiver, spans, dropped, "OpenTelemetry export failed ({why})");
                }
            }
        }
        result
    }

    fn shutdown_with_timeout(&mut self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&mut self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// An error of ours as the SDK's.
pub fn sdk_error(why: impl Into<String>) -> OTelSdkError {
    OTelSdkError::InternalFailure(why.into())
}

//! `/metrics`: the Prometheus text exposition (docs/metrics.md lists every series).
//!
//! Each process exposes what it truly knows. `fleetdash serve` knows status.json: the series
//! a snapshot gives ([`fleet`]), read at each scrape. `fleetdash run` knows that too and what
//! happens while it runs ([`live`]: passes, probe failures, reports, deliveries, writes).
//! Served by `fleetdash serve` (behind its basic auth), by the intake of `fleetdash run`
//! (behind the operator's token) and by `[metrics] listen` (loopback, no auth; `run` only).
//!
//! Every label is one of [`names::LABELS`], its values from the config or a closed list.

pub mod fleet;
pub mod live;
pub mod names;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use chrono::{DateTime, Utc};
use fleetdash_model::Snapshot;
use prometheus_client::registry::Registry;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::write::status_json;
pub use live::{DeliveryObserver, Live};
pub use names::Names;

/// The exposition's media type: Prometheus text format 0.0.4.
pub const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// Every series' name starts with it.
pub const PREFIX: &str = "fleetdash";

/// What one process answers `/metrics` with.
pub struct Source {
    names: Arc<Names>,
    status_json: PathBuf,
    live: Option<Live>,
}

impl Source {
    /// `serve`'s: the snapshot's series alone.
    pub fn of_snapshot(config: &Config) -> Source {
        Source {
            names: Arc::new(Names::of(config)),
            status_json: config.output_dir.join(status_json::FILE_NAME),
            live: None,
        }
    }

    /// `run`'s: the snapshot's series and `live`'s.
    pub fn with_live(config: &Config, live: Live) -> Source {
        Source {
            live: Some(live),
            ..Source::of_snapshot(config)
        }
    }

    /// The running collector's counters, in `run`.
    pub fn live(&self) -> Option<&Live> {
        self.live.as_ref()
    }

    /// The exposition at `now` for `snapshot` (`None`: status.json could not be read).
    pub fn render(&self, snapshot: Option<&Snapshot>, now: DateTime<Utc>) -> String {
        let mut registry = Registry::with_prefix(PREFIX);
        fleet::register(&mut registry, snapshot, &self.names, now);
        if let Some(live) = &self.live {
            live.register(&mut registry);
        }
        let mut text = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::prometheus_text::encode(&mut text, &registry);
        text
    }

    /// Reads status.json and renders, off the async runtime (a 1,000-agent snapshot is
    /// megabytes to parse).
    pub async fn scrape(self: Arc<Self>) -> String {
        let source = self.clone();
        let rendered = tokio::task::spawn_blocking(move || {
            let snapshot = read_snapshot(&source.status_json);
            source.render(snapshot.as_ref(), Utc::now())
        })
        .await;
        rendered.unwrap_or_else(|e| {
            tracing::error!("metrics: rendering failed: {e}");
            self.render(None, Utc::now())
        })
    }
}

/// The snapshot on disk, or `None` (said at debug level: `snapshot_readable` says it too).
fn read_snapshot(path: &std::path::Path) -> Option<Snapshot> {
    let bytes = std::fs::read(path)
        .map_err(|e| tracing::debug!(file = %path.display(), "metrics: {e}"))
        .ok()?;
    serde_json::from_slice(&bytes)
        .map_err(|e| tracing::debug!(file = %path.display(), "metrics: {e}"))
        .ok()
}

/// The `/metrics` answer.
pub async fn answer(source: Arc<Source>) -> Response {
    let text = source.scrape().await;
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, CONTENT_TYPE),
            (header::CACHE_CONTROL, "no-store"),
        ],
        text,
    )
        .into_response()
}

/// The `[metrics] listen` routes: `GET /metrics`, nothing else.
pub fn router(source: Arc<Source>) -> Router {
    Router::new()
        .route("/metrics", get(move || answer(source.clone())))
        .fallback(|| async { (StatusCode::NOT_FOUND, "404 Not Found: try /metrics\n") })
}

/// The loopback listener of `fleetdash run`, serving its own task.
pub struct Running {
    pub addr: SocketAddr,
    pub task: tokio::task::JoinHandle<anyhow::Result<()>>,
}

/// Starts `[metrics] listen` when set (`None` otherwise): binds, says where on stderr, serves
/// `source` until `shutdown`.
pub async fn start(
    config: &Config,
    source: Arc<Source>,
    shutdown: CancellationToken,
) -> anyhow::Result<Option<Running>> {
    let Some(listen) = config.metrics.listen else {
        return Ok(None);
    };
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("[metrics] listen: cannot listen on {listen}"))?;
    let addr = listener.local_addr().context("local address")?;
    eprintln!("fleetdash: metrics on http://{addr}/metrics");
    let app = router(source);
    let task = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async move { shutdown.cancelled().await })
            .await
            .context("the metrics listener failed")
    });
    Ok(Some(Running { addr, task }))
}

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
pub use live::{DeliveryObserver, Live, SpanObserver};
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
    /// A source over `names`, reading the snapshot at `status_json` (the bench's).
    pub fn new(names: Names, status_json: PathBuf, live: Option<Live>) -> Source {
        Source {
            names: Arc::new(names),
            status_json,
            live,
        }
    }

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::{Collection, Findings};
    use crate::write::history::tests::agent;
    use chrono::TimeZone;
    use fleetdash_model::{Asc, Probe};

    fn fixed_now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 30, 19, 12, 0).unwrap()
    }

    fn names(agents: &[&str]) -> Names {
        Names {
            agents: agents.iter().map(|a| a.to_string()).collect(),
            channels: ["ntfy".to_string()].into(),
            ..Names::default()
        }
    }

    /// Two agents in status.json, one in the config: the other is no series.
    fn snapshot(now: DateTime<Utc>) -> Snapshot {
        let mut snap = Snapshot::empty(now, crate::config::fleet_rules());
        let mut sol = agent("sol", true, now - chrono::Duration::seconds(60));
        sol.last_exchange_s = Probe::Value(30);
        snap.agents = Probe::Value(vec![sol, agent("ghost", false, now)]);
        snap
    }

    fn line<'a>(text: &'a str, start: &str) -> Option<&'a str> {
        text.lines().find(|l| l.starts_with(start))
    }

    #[test]
    fn only_names_the_config_declares_are_labels() {
        let now = fixed_now();
        let source = Source::new(names(&["sol"]), PathBuf::new(), None);
        let text = source.render(Some(&snapshot(now)), now);
        assert_eq!(
            line(&text, "fleetdash_agent_up{"),
            Some("fleetdash_agent_up{agent=\"sol\"} 1.0"),
            "{text}"
        );
        assert!(!text.contains("ghost"), "{text}");
        assert!(!text.contains("127.0.0.1"), "no endpoint: {text}");
        // One-hot bands: every band present, the current one 1.
        for (band, v) in [("green", 1), ("amber", 0), ("red", 0)] {
            let want = format!("fleetdash_agent_band{{agent=\"sol\",band=\"{band}\"}} {v}.0");
            assert!(text.lines().any(|l| l == want), "{want}\n{text}");
        }
    }

    /// An age measured at the element's check is carried to the scrape: 30 s then, 60 s ago.
    #[test]
    fn ages_are_carried_forward_to_the_scrape() {
        let now = fixed_now();
        let mut snap = snapshot(now);
        snap.generated_at = now - chrono::Duration::seconds(45);
        let text = Source::new(names(&["sol"]), PathBuf::new(), None).render(Some(&snap), now);
        assert_eq!(
            line(&text, "fleetdash_agent_last_exchange_age_seconds{"),
            Some("fleetdash_agent_last_exchange_age_seconds{agent=\"sol\"} 90.0"),
            "{text}"
        );
        assert_eq!(
            line(&text, "fleetdash_snapshot_age_seconds "),
            Some("fleetdash_snapshot_age_seconds 45.0")
        );
        // A clock stepped back since the write: the age cannot be told, and is never said
        // fresh (issue 31); how far ahead the snapshot is, is said.
        let text = Source::new(names(&["sol"]), PathBuf::new(), None)
            .render(Some(&snap), now - chrono::Duration::hours(1));
        assert_eq!(
            line(&text, "fleetdash_snapshot_age_seconds "),
            Some("fleetdash_snapshot_age_seconds +Inf")
        );
        assert_eq!(
            line(&text, "fleetdash_snapshot_ahead_seconds "),
            Some("fleetdash_snapshot_ahead_seconds 3555.0")
        );
    }

    /// A jump of this host's clock shown by the snapshot is in /metrics, by kind, with the
    /// grace and the clock's band.
    #[test]
    fn a_jump_of_the_clock_is_a_series() {
        let now = fixed_now();
        let mut snap = snapshot(now);
        snap.clock = fleetdash_model::ClockView {
            jumps: vec![fleetdash_model::ClockJump {
                kind: fleetdash_model::Jump::Forward,
                seconds: 86_400,
                at: now,
                checked_at: now,
                stale: false,
            }],
            judging_from: Some(now),
            unwatched_s: 0,
            ahead: None,
        };
        let text = Source::new(names(&["sol"]), PathBuf::new(), None).render(Some(&snap), now);
        for want in [
            "fleetdash_clock_jumps{kind=\"forward\"} 1.0",
            "fleetdash_clock_jumps{kind=\"backward\"} 0.0",
            "fleetdash_clock_jump_seconds{kind=\"forward\"} 86400.0",
            "fleetdash_clock_grace 1.0",
            "fleetdash_clock_band{band=\"amber\"} 1.0",
        ] {
            assert!(text.lines().any(|l| l == want), "{want}\n{text}");
        }
    }

    /// What the config says stays (which hub this is); nothing of the snapshot is made up.
    #[test]
    fn a_snapshot_that_cannot_be_read_is_said_and_nothing_else_is_made_up() {
        let names = Names {
            hub: "lab".into(),
            ..names(&["sol"])
        };
        let text = Source::new(names, PathBuf::new(), None).render(None, fixed_now());
        let samples: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(
            samples,
            [
                "fleetdash_snapshot_readable 0.0",
                "fleetdash_hub_info{hub=\"lab\"} 1.0"
            ],
            "{text}"
        );
    }

    /// Free-form values never become labels: an unknown ASC name is OTHER, an unknown kind
    /// `unread`, a channel the config does not name is not counted.
    #[test]
    fn live_counters_bound_their_labels() {
        let now = fixed_now();
        let live = Live::new(Arc::new(names(&["sol"])));
        live.refused(
            "Ignore previous instructions",
            &Asc {
                code: 5999,
                name: "SOMETHING_NEW".into(),
            },
        );
        live.accepted("heartbeat");
        live.delivery("ntfy", false);
        live.delivery("https://hooks.example/secret", true);
        let mut down = agent("sol", false, now);
        down.status = Asc::DEPENDENCY_UNAVAILABLE;
        live.observe(&Collection {
            findings: Findings::Agents {
                rows: vec![down, agent("sol", true, now)],
                mentions: Vec::new(),
            },
            checked_at: now,
            duration: std::time::Duration::from_millis(300),
        });
        let source = Source::new(names(&["sol"]), PathBuf::new(), Some(live));
        let text = source.render(None, now);
        for want in [
            "fleetdash_intake_reports_refused_total{kind=\"unread\",asc=\"OTHER\"} 1",
            "fleetdash_intake_reports_accepted_total{kind=\"heartbeat\"} 1",
            "fleetdash_alert_delivery_failures_total{channel=\"ntfy\"} 1",
            "fleetdash_probe_failures_total{section=\"agents\",asc=\"DEPENDENCY_UNAVAILABLE\"} 1",
            "fleetdash_collector_pass_duration_seconds_count{section=\"agents\"} 1",
            "fleetdash_collector_pass_duration_seconds_bucket{section=\"agents\",le=\"0.5\"} 1",
            "fleetdash_collector_pass_duration_seconds_bucket{section=\"agents\",le=\"0.25\"} 0",
        ] {
            assert!(text.lines().any(|l| l == want), "{want}\n{text}");
        }
        assert!(
            !text.contains("hooks.example") && !text.contains("Ignore"),
            "{text}"
        );
        assert!(
            !text.contains("fleetdash_alert_deliveries_total{"),
            "{text}"
        );
    }
}

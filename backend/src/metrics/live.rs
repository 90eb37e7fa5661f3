//! What only the running collector knows (`fleetdash run`): counters and the pass-duration
//! histogram, fed while it runs. The faces that see the events hold a handle ([`Live`]): the
//! watchdog observes each collection, the intake each report it accepts or refuses; alerting,
//! a layer below, is handed a plain callback ([`Live::delivery_observer`]), so it imports
//! nothing from here; so is the OpenTelemetry exporter ([`Live::span_observer`]). Counters start at zero with the process, as Prometheus expects
//! (`rate()` reads a restart as a reset).

use std::sync::Arc;

use fleetdash_model::Asc;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use super::fleet::Labels;
use super::names::{self, Names};
use crate::collect::{Collection, Findings, SectionData};

/// A pass's duration buckets, in seconds: from a local read (~10 ms) to a section at its
/// probes' deadlines (a minute).
const PASS_BUCKETS: [f64; 11] = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 15.0, 60.0];

fn pass_histogram() -> Histogram {
    Histogram::new(PASS_BUCKETS)
}

type Counters = Family<Labels, Counter>;
type Histograms = Family<Labels, Histogram, fn() -> Histogram>;

/// The running collector's counters. Cheap to clone (each family is shared).
#[derive(Clone)]
pub struct Live {
    names: Arc<Names>,
    passes: Histograms,
    probe_failures: Counters,
    writes: Counter,
    write_failures: Counter,
    accepted: Counters,
    refused: Counters,
    deliveries: Counters,
    delivery_failures: Counters,
    spans_exported: Counter,
    spans_dropped: Counter,
}

/// The callback alerting's delivery loop calls after each send: (channel, delivered).
pub type DeliveryObserver = Arc<dyn Fn(&str, bool) + Send + Sync>;

/// The callback the OpenTelemetry exporter calls after each export: (spans, exported).
pub type SpanObserver = Arc<dyn Fn(u64, bool) + Send + Sync>;

impl Live {
    pub fn new(names: Arc<Names>) -> Live {
        Live {
            names,
            passes: Histograms::new_with_constructor(pass_histogram),
            probe_failures: Counters::default(),
            writes: Counter::default(),
            write_failures: Counter::default(),
            accepted: Counters::default(),
            refused: Counters::default(),
            deliveries: Counters::default(),
            delivery_failures: Counters::default(),
            spans_exported: Counter::default(),
            spans_dropped: Counter::default(),
        }
    }

    /// One collector's pass: its duration, and each element whose probe failed, by ASC name.
    pub fn observe(&self, collection: &Collection) {
        let section = collection.section().as_str();
        self.passes
            .get_or_create(&vec![("section", section.to_string())])
            .observe(collection.duration.as_secs_f64());
        for asc in failures(&collection.findings) {
            self.probe_failures
                .get_or_create(&vec![
                    ("section", section.to_string()),
                    ("asc", names::asc(asc).to_string()),
                ])
                .inc();
        }
    }

    /// One snapshot write after a pass.
    pub fn written(&self, ok: bool) {
        if ok {
            self.writes.inc();
        } else {
            self.write_failures.inc();
        }
    }

    /// A report the intake applied (`kind`: [`names::REPORT_KINDS`]).
    pub fn accepted(&self, kind: &str) {
        self.accepted
            .get_or_create(&vec![("kind", report_kind(kind))])
            .inc();
    }

    /// A report (or a request that would have been one) the intake refused, and its ASC.
    pub fn refused(&self, kind: &str, asc: &Asc) {
        self.refused
            .get_or_create(&vec![
                ("kind", report_kind(kind)),
                ("asc", names::asc(asc).to_string()),
            ])
            .inc();
    }

    /// One alert sent to `channel`, delivered or failed; a channel the config does not name
    /// (an outbox item of a removed channel) is no label.
    pub fn delivery(&self, channel: &str, delivered: bool) {
        if !self.names.channels.contains(channel) {
            return;
        }
        let labels = vec![("channel", channel.to_string())];
        if delivered {
            self.deliveries.get_or_create(&labels).inc();
        } else {
            self.delivery_failures.get_or_create(&labels).inc();
        }
    }

    /// [`Live::delivery`] as the callback alerting takes.
    pub fn delivery_observer(&self) -> DeliveryObserver {
        let live = self.clone();
        Arc::new(move |channel, delivered| live.delivery(channel, delivered))
    }

    /// One export of `spans` spans to `[otel] endpoint`: exported, or dropped with it.
    pub fn spans(&self, spans: u64, exported: bool) {
        if exported {
            self.spans_exported.inc_by(spans);
        } else {
            self.spans_dropped.inc_by(spans);
        }
    }

    /// [`Live::spans`] as the callback the exporter takes.
    pub fn span_observer(&self) -> SpanObserver {
        let live = self.clone();
        Arc::new(move |spans, exported| live.spans(spans, exported))
    }

    /// Adds these families to `registry` (shared: later observations show in it too).
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "collector_pass_duration_seconds",
            "Wall time of each collector pass, by section (its count is the passes)",
            self.passes.clone(),
        );
        registry.register(
            "probe_failures",
            "Elements whose probe failed in a pass, by section and ASC name",
            self.probe_failures.clone(),
        );
        registry.register(
            "snapshot_writes",
            "Snapshots written (status.json replaced) after a pass",
            self.writes.clone(),
        );
        registry.register(
            "snapshot_write_failures",
            "Passes whose snapshot could not be written (the previous one stays)",
            self.write_failures.clone(),
        );
        registry.register(
            "intake_reports_accepted",
            "Reports the intake applied to the work queue, by kind",
            self.accepted.clone(),
        );
        registry.register(
            "intake_reports_refused",
            "Reports the intake refused, by kind (unread: refused before it was read) and ASC name",
            self.refused.clone(),
        );
        registry.register(
            "alert_deliveries",
            "Alerts delivered, by channel",
            self.deliveries.clone(),
        );
        registry.register(
            "alert_delivery_failures",
            "Alert sends that failed (each is retried), by channel",
            self.delivery_failures.clone(),
        );
        registry.register(
            "otel_spans_exported",
            "Spans exported to the [otel] endpoint",
            self.spans_exported.clone(),
        );
        registry.register(
            "otel_spans_dropped",
            "Spans dropped because their export failed",
            self.spans_dropped.clone(),
        );
    }
}

fn report_kind(kind: &str) -> String {
    if names::REPORT_KINDS.contains(&kind) {
        kind
    } else {
        "unread"
    }
    .to_string()
}

/// The ASC of each element a collection found failing (rows that carry their own code).
fn failures(findings: &Findings) -> Vec<&Asc> {
    let failing = |asc: &'_ Asc| !asc.is_success();
    match findings {
        Findings::Agents { rows, .. } | Findings::Section(SectionData::Agents(rows)) => rows
            .iter()
            .map(|a| &a.status)
            .filter(|a| failing(a))
            .collect(),
        Findings::Section(SectionData::Systems(rows)) => rows
            .iter()
            .map(|h| &h.status)
            .filter(|a| failing(a))
            .collect(),
        Findings::Section(SectionData::Backups(b)) => {
            Some(&b.status).filter(|a| failing(a)).into_iter().collect()
        }
        Findings::Section(SectionData::Board {
            read: fleetdash_model::Probe::Value(board),
            ..
        }) => board
            .sources
            .iter()
            .map(|s| &s.status)
            .filter(|a| failing(a))
            .collect(),
        _ => Vec::new(),
    }
}

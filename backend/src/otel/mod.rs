//! OpenTelemetry output of `fleetdash run` (docs/otel.md): seed 000's binding. With `[otel]`
//! set, each collection pass is exported over OTLP/HTTP (protobuf) as a span tree, planned
//! from what the pass found ([`plan`]: every attribute bounded) and emitted here with explicit
//! times, so the spans say when the probes ran, not when they were exported.
//!
//! A face, beside `/metrics`: the watchdog hands it each pass after the collector is done.
//! Nothing here holds a pass up: the spans go to the batch processor's bounded queue, and its
//! own thread exports them ([`export`]); a queue that is full drops spans rather than wait.

pub mod asc;
pub mod export;
pub mod plan;
pub mod value;

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use anyhow::Context as _;
use opentelemetry::trace::{SpanKind, Status, TraceContextExt, Tracer as _, TracerProvider as _};
use opentelemetry::{Context, InstrumentationScope, KeyValue};
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, SdkTracer, SdkTracerProvider,
};

use crate::collect::{Collection, Trace};
use crate::config::{Config, OtelConfig, read_token};
use crate::metrics::{Names, SpanObserver};
use plan::{Outcome, Planned, Value};

/// The spans a full queue holds before new ones are dropped: a few passes of a large fleet.
const QUEUE_SPANS: usize = 8192;

/// How long the last spans may take to leave at shutdown.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(5);

/// A running exporter. Cheap to share; [`Otel::shutdown`] sends what is queued.
pub struct Otel {
    provider: SdkTracerProvider,
    tracer: SdkTracer,
    names: Names,
    /// Each collector's elements as its last pass saw them, for the events of a change.
    memory: Mutex<HashMap<&'static str, plan::Memory>>,
    stats: Arc<export::Stats>,
}

impl Otel {
    /// The exporter `[otel]` asks for; `None` without it. Called on the async runtime, whose
    /// reactor the exports use.
    pub fn start(config: &Config) -> anyhow::Result<Option<Arc<Otel>>> {
        Otel::start_observed(config, None)
    }

    /// [`Otel::start`], telling `observer` (`fleetdash run`'s /metrics) of each export.
    pub fn start_observed(
        config: &Config,
        observer: Option<SpanObserver>,
    ) -> anyhow::Result<Option<Arc<Otel>>> {
        let Some(otel) = &config.otel else {
            return Ok(None);
        };
        let runtime = tokio::runtime::Handle::try_current()
            .context("OpenTelemetry export needs the async runtime")?;
        let stats = Arc::new(export::Stats::default());
        let exporter = exporter(otel, runtime, stats.clone())?;
        let receiver = match (
            otel.traces_url.host_str(),
            otel.traces_url.port_or_known_default(),
        ) {
            (Some(host), Some(port)) => format!("{host}:{port}"),
            _ => otel.traces_url.scheme().to_string(),
        };
        let processor = BatchSpanProcessor::builder(export::Counted::new(
            exporter,
            stats.clone(),
            receiver,
            observer,
        ))
        .with_batch_config(
            BatchConfigBuilder::default()
                .with_max_queue_size(QUEUE_SPANS)
                .build(),
        )
        .build();
        let provider = SdkTracerProvider::builder()
            .with_resource(resource(config))
            .with_span_processor(processor)
            .build();
        let scope = InstrumentationScope::builder("fleetdash")
            .with_version(env!("CARGO_PKG_VERSION"))
            .build();
        let tracer = provider.tracer_with_scope(scope);
        Ok(Some(Arc::new(Otel {
            provider,
            tracer,
            names: Names::of(config),
            memory: Mutex::new(HashMap::new()),
            stats,
        })))
    }

    /// Exports one pass: planned, then handed to the batch processor.
    pub fn observe(&self, collection: &Collection, trace: &Trace) {
        let planned = {
            let mut memory = self.memory.lock().expect("never poisoned");
            let memory = memory
                .entry(plan::collector(&collection.findings))
                .or_default();
            plan::pass(collection, trace, &self.names, memory)
        };
        self.emit(&planned, &Context::new());
    }

    fn emit(&self, planned: &Planned, parent: &Context) {
        let span = self
            .tracer
            .span_builder(planned.name)
            .with_kind(SpanKind::Internal)
            .with_start_time(SystemTime::from(planned.start))
            .with_attributes(planned.attributes.iter().map(key_value))
            .start_with_context(&self.tracer, parent);
        let cx = parent.with_span(span);
        let span = cx.span();
        for event in &planned.events {
            span.add_event_with_timestamp(
                event.name,
                SystemTime::from(event.at),
                event.attributes.iter().map(key_value).collect(),
            );
        }
        span.set_status(match &planned.outcome {
            Outcome::Unset => Status::Unset,
            Outcome::Ok => Status::Ok,
            Outcome::Error(description) => Status::error(description.clone()),
        });
        for child in &planned.children {
            self.emit(child, &cx);
        }
        span.end_with_timestamp(SystemTime::from(planned.end));
    }

    /// Spans exported and dropped so far.
    pub fn counts(&self) -> (u64, u64) {
        (
            self.stats.exported.load(Ordering::Relaxed),
            self.stats.dropped.load(Ordering::Relaxed),
        )
    }

    /// Sends what is queued (waiting at most a few seconds) and stops the exporter; off the
    /// async runtime, whose reactor the last exports use.
    pub async fn shutdown(self: Arc<Self>) {
        let done = tokio::task::spawn_blocking(move || {
            let outcome = self.provider.shutdown_with_timeout(SHUTDOWN_WAIT);
            (outcome, self.counts())
        })
        .await;
        match done {
            Ok((Ok(()), (exported, dropped))) => {
                tracing::info!(exported, dropped, "OpenTelemetry export stopped")
            }
            Ok((Err(e), (exported, dropped))) => tracing::warn!(
                exported,
                dropped,
                "OpenTelemetry export stopped without sending everything: {e}"
            ),
            Err(e) => tracing::warn!("OpenTelemetry export did not stop: {e}"),
        }
    }
}

/// The OTLP/HTTP protobuf exporter to `otel`'s endpoint, its token in its header.
fn exporter(
    otel: &OtelConfig,
    runtime: tokio::runtime::Handle,
    stats: Arc<export::Stats>,
) -> anyhow::Result<opentelemetry_otlp::SpanExporter> {
    let mut headers = HashMap::new();
    let token =
        read_token(otel.token.as_ref()).map_err(|f| anyhow::anyhow!("[otel]: {}", f.reason))?;
    if let Some(token) = token {
        match &otel.token_header {
            Some(name) => headers.insert(name.clone(), token),
            None => headers.insert("authorization".to_string(), format!("Bearer {token}")),
        };
    }
    opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(otel.traces_url.as_str())
        .with_timeout(export::EXPORT_TIMEOUT)
        .with_headers(headers)
        .with_http_client(export::RuntimeClient::new(runtime, stats))
        .build()
        .context("the OpenTelemetry exporter")
}

/// Who is speaking: fleetdash, its version, and which hub (`hub` in the config). Nothing from
/// the environment: the config is the one place that says what is sent.
fn resource(config: &Config) -> Resource {
    Resource::builder_empty()
        .with_attributes([
            KeyValue::new("service.name", "fleetdash"),
            KeyValue::new("service.version", env!("CARGO_PKG_VERSION")),
            KeyValue::new("service.instance.id", config.hub.clone()),
        ])
        .build()
}

fn key_value((key, value): &(&'static str, Value)) -> KeyValue {
    match value {
        Value::Str(s) => KeyValue::new(*key, s.clone()),
        Value::Int(n) => KeyValue::new(*key, *n),
        Value::Bool(b) => KeyValue::new(*key, *b),
    }
}

#[cfg(test)]
mod tests;

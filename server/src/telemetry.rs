//! What the process tells about itself: logs on stderr (text or JSON lines, filtered by
//! `RUST_LOG`) and, when `otlp_endpoint` is set, its spans exported to an OpenTelemetry
//! collector over OTLP/HTTP, in the traces the api, worker and notifier continue across
//! the bus (`reelfarm_backends::trace`).

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, SpanExporter, WithExportConfig};
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

/// Keeps the span exporter, when there is one; [`Telemetry::shutdown`] sends what it
/// holds.
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

impl Telemetry {
    /// Installs the logs (`quiet`: warnings and errors only, unless `RUST_LOG` says
    /// otherwise) and, with `otlp` (the collector's base address and this process's
    /// service name), the span exporter. Call it before any tokio runtime starts: the
    /// exporter sends from a thread of its own.
    pub fn init(json: bool, quiet: bool, otlp: Option<(&str, &str)>) -> anyhow::Result<Telemetry> {
        let default = if quiet { "warn" } else { "info" };
        let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
        let provider = otlp.map(|(endpoint, service)| provider(endpoint, service)).transpose()?;
        let exported = provider.as_ref().map(|p| tracing_opentelemetry::layer().with_tracer(p.tracer("reelfarm")));
        let logs = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
        let logs = if json { logs.json().flatten_event(true).boxed() } else { logs.boxed() };
        tracing_subscriber::registry().with(exported).with(logs).with(filter).init();
        Ok(Telemetry { provider })
    }

    /// Sends the spans not sent yet (waiting for the collector a few seconds at most).
    pub fn shutdown(self) {
        if let Some(provider) = self.provider {
            if let Err(e) = provider.shutdown() {
                eprintln!("reelfarm: exporting the last spans failed: {e}");
            }
        }
    }
}

/// Spans in batches to `{endpoint}/v1/traces` (OTLP/HTTP, protobuf).
fn provider(endpoint: &str, service: &str) -> anyhow::Result<SdkTracerProvider> {
    let exporter = SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(format!("{endpoint}/v1/traces"))
        .build()?;
    let resource = Resource::builder().with_service_name(service.to_string()).build();
    Ok(SdkTracerProvider::builder().with_batch_exporter(exporter).with_resource(resource).build())
}

//! OpenTelemetry export of the runtime's spans (the `otel` feature).
//!
//! [`install`] is the one-call setup for a program with no subscriber of its own: it exports
//! the runtime's spans (targets under `thinkers`, `INFO` and above) over OTLP/HTTP with
//! protobuf bodies, logs human-readable lines to standard error (level from `THINKERS_LOG`,
//! default `warn`), and returns an [`OtelGuard`] that flushes the spans still queued when it is
//! dropped. A program that builds its own subscriber composes [`tracer_provider`] and [`layer`]
//! instead.
//!
//! Spans are exported in batches from a background thread; a collector that is down costs
//! dropped spans and a logged export error, never a stalled job.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig as _;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use tracing_opentelemetry::OpenTelemetryLayer;
use tracing_subscriber::filter::{EnvFilter, LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{Layer as _, fmt};

use crate::{Error, Result};

/// The service name exported spans carry unless `OTEL_SERVICE_NAME` says otherwise.
pub const SERVICE_NAME: &str = "thinkers";

/// The instrumentation scope of the runtime's tracer.
const SCOPE: &str = "thinkers";

/// The OTLP/HTTP path of traces, appended to an endpoint given as a bare collector URL.
const TRACES_PATH: &str = "/v1/traces";

/// Keeps the exporter alive; dropping it (or [`OtelGuard::shutdown`]) flushes queued spans and
/// stops the export thread.
#[derive(Debug)]
pub struct OtelGuard {
    provider: Option<SdkTracerProvider>,
}

impl OtelGuard {
    /// Wrap a provider so that it is shut down with the guard.
    pub fn new(provider: SdkTracerProvider) -> Self {
        Self {
            provider: Some(provider),
        }
    }

    /// The tracer provider.
    pub fn provider(&self) -> Option<&SdkTracerProvider> {
        self.provider.as_ref()
    }

    /// Flush every queued span and stop exporting; an export failure is an
    /// [`Error::ExternalService`] naming `otlp`.
    pub fn shutdown(mut self) -> Result<()> {
        match self.provider.take() {
            Some(provider) => provider
                .shutdown()
                .map_err(|e| Error::external("otlp", "flush spans", e.to_string())),
            None => Ok(()),
        }
    }
}

impl Drop for OtelGuard {
    fn drop(&mut self) {
        if let Some(provider) = self.provider.take()
            && let Err(e) = provider.shutdown()
        {
            tracing::warn!(error = %e, "exporting the last spans failed");
        }
    }
}

/// The full URL spans are posted to: `endpoint` itself when it already ends in `/v1/traces`,
/// else the collector base URL with that path appended (`http://localhost:4318` →
/// `http://localhost:4318/v1/traces`).
pub(crate) fn traces_url(endpoint: &str) -> String {
    let base = endpoint.trim().trim_end_matches('/');
    if base.ends_with(TRACES_PATH) {
        base.to_owned()
    } else {
        format!("{base}{TRACES_PATH}")
    }
}

/// A tracer provider exporting over OTLP/HTTP (protobuf) to `endpoint` (a collector base URL
/// such as `http://localhost:4318`, or the full traces URL), in batches, with the service name
/// [`SERVICE_NAME`]. An endpoint that is not an http(s) URL is an [`Error::InvalidInput`]
/// naming `otlp endpoint`.
pub fn tracer_provider(endpoint: &str) -> Result<SdkTracerProvider> {
    let url = traces_url(endpoint);
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(Error::invalid_input(
            "otlp endpoint",
            Some(endpoint.to_owned()),
            "expected an http:// or https:// URL such as http://localhost:4318",
        ));
    }
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_endpoint(url)
        .build()
        .map_err(|e| {
            Error::invalid_input("otlp endpoint", Some(endpoint.to_owned()), e.to_string())
        })?;
    Ok(SdkTracerProvider::builder()
        .with_resource(resource())
        .with_batch_exporter(exporter)
        .build())
}

/// The resource every exported span carries: `service.name` ([`SERVICE_NAME`] unless
/// `OTEL_SERVICE_NAME` is set) plus what the SDK detects.
pub fn resource() -> Resource {
    let builder = Resource::builder();
    if std::env::var_os("OTEL_SERVICE_NAME").is_some() {
        builder.build()
    } else {
        builder.with_service_name(SERVICE_NAME).build()
    }
}

/// A tracing layer turning spans into OpenTelemetry spans through `provider`. It exports every
/// span it sees: filter it (for example with [`runtime_spans`]) when composing.
pub fn layer<S>(provider: &SdkTracerProvider) -> OpenTelemetryLayer<S, SdkTracer>
where
    S: tracing::Subscriber + for<'span> LookupSpan<'span>,
{
    tracing_opentelemetry::layer().with_tracer(provider.tracer(SCOPE))
}

/// The filter [`install`] puts on the export layer: the runtime's own spans (`thinkers::…`
/// targets) at `INFO` and above.
pub fn runtime_spans() -> Targets {
    Targets::new().with_target("thinkers", LevelFilter::INFO)
}

/// Install a global subscriber that exports the runtime's spans over OTLP to `endpoint` (see
/// [`tracer_provider`]) and logs to standard error at the level of `THINKERS_LOG` (default
/// `warn`). Fails with [`Error::System`] when a global subscriber is already installed; keep the
/// guard alive for as long as spans should be exported.
pub fn install(endpoint: &str) -> Result<OtelGuard> {
    let provider = tracer_provider(endpoint)?;
    let log_filter =
        EnvFilter::try_from_env("THINKERS_LOG").unwrap_or_else(|_| EnvFilter::new("warn"));
    tracing_subscriber::registry()
        .with(layer(&provider).with_filter(runtime_spans()))
        .with(
            fmt::layer()
                .with_writer(std::io::stderr)
                .with_filter(log_filter),
        )
        .try_init()
        .map_err(|e| Error::system("telemetry::otel::install", e.to_string()))?;
    Ok(OtelGuard::new(provider))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_get_the_traces_path_once() {
        assert_eq!(
            traces_url("http://localhost:4318"),
            "http://localhost:4318/v1/traces"
        );
        assert_eq!(
            traces_url("http://localhost:4318/"),
            "http://localhost:4318/v1/traces"
        );
        assert_eq!(
            traces_url("https://otel.example/v1/traces"),
            "https://otel.example/v1/traces"
        );
    }

    #[test]
    fn a_bad_endpoint_is_named() {
        let err = tracer_provider("localhost:4318").unwrap_err().to_string();
        assert!(
            err.contains("otlp endpoint") && err.contains("localhost:4318"),
            "{err}"
        );
    }
}

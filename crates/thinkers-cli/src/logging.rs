//! Log output of the `thinkers` binary: human-readable lines or JSON on standard error, the
//! level from `THINKERS_LOG`, payload logging off unless asked for, and (with the `otel`
//! feature) span export over OTLP.

use anyhow::{Context as _, bail};
use clap::{Args, ValueEnum};
use tracing_subscriber::filter::EnvFilter;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{Layer as _, fmt};

/// The environment variable holding the log filter (`warn`, `debug`, `thinkers=debug,sqlx=warn`).
const LEVEL_ENV: &str = "THINKERS_LOG";

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum LogFormat {
    /// One readable line per event.
    Human,
    /// One JSON object per event.
    Json,
}

/// Logging flags shared by every subcommand.
#[derive(Debug, Args)]
pub(crate) struct LogArgs {
    /// Log line format on standard error (the level comes from THINKERS_LOG, default warn).
    #[arg(
        long,
        global = true,
        value_enum,
        env = "THINKERS_LOG_FORMAT",
        default_value = "human"
    )]
    log_format: LogFormat,
    /// Allow model request and response bodies in the logs (API keys are never logged).
    #[arg(long, global = true, env = "THINKERS_LOG_PAYLOADS")]
    log_payloads: bool,
    /// Export spans over OTLP/HTTP to this collector, e.g. http://localhost:4318.
    #[cfg(feature = "otel")]
    #[arg(long, global = true, env = "OTEL_EXPORTER_OTLP_ENDPOINT")]
    otlp_endpoint: Option<String>,
}

/// Keeps span export running until dropped (a no-op without the `otel` feature).
#[derive(Debug)]
pub(crate) struct LogGuard {
    #[cfg(feature = "otel")]
    _otel: Option<thinkers::telemetry::otel::OtelGuard>,
}

/// Install the global subscriber described by `args` and the environment.
pub(crate) fn init(args: &LogArgs) -> anyhow::Result<LogGuard> {
    thinkers::telemetry::set_payload_logging(args.log_payloads);
    let filter = level_filter()?;
    let lines = match args.log_format {
        LogFormat::Human => fmt::layer().with_writer(std::io::stderr).boxed(),
        LogFormat::Json => fmt::layer()
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .with_writer(std::io::stderr)
            .boxed(),
    };
    let registry = tracing_subscriber::registry().with(lines.with_filter(filter));
    #[cfg(feature = "otel")]
    if let Some(endpoint) = &args.otlp_endpoint {
        use thinkers::telemetry::otel;
        let provider = otel::tracer_provider(endpoint)?;
        registry
            .with(otel::layer(&provider).with_filter(otel::runtime_spans()))
            .try_init()
            .context("installing the log subscriber")?;
        return Ok(LogGuard {
            _otel: Some(otel::OtelGuard::new(provider)),
        });
    }
    registry
        .try_init()
        .context("installing the log subscriber")?;
    Ok(LogGuard {
        #[cfg(feature = "otel")]
        _otel: None,
    })
}

/// The filter from `THINKERS_LOG`, `warn` when unset; a value that is not a filter is an error
/// naming it.
fn level_filter() -> anyhow::Result<EnvFilter> {
    match std::env::var(LEVEL_ENV) {
        Ok(value) if !value.trim().is_empty() => match EnvFilter::try_new(&value) {
            Ok(filter) => Ok(filter),
            Err(e) => bail!("{LEVEL_ENV}={value:?} is not a log filter: {e}"),
        },
        _ => Ok(EnvFilter::new("warn")),
    }
}

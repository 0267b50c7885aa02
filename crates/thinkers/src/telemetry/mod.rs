//! Tracing: the spans the runtime opens, the fields they carry, and payload logging.
//!
//! Two kinds of span, both at `INFO` level:
//!
//! * **`job`** (target `thinkers::job`) — one per attempt of every job, opened by the dispatcher
//!   around the job's `execute`, with `job.id`, `job.parent`, `job.workflow`, `job.class`,
//!   `job.ordinal` and `job.attempt`, and `job.outcome` when the attempt ends (`ok`, `retry`,
//!   or the error kind). A child's attempt spans are children of the parent attempt that
//!   submitted it, set explicitly (the child runs on its own task, where the parent's span is
//!   not current); a root job's spans hang under whatever span was current at submission.
//! * **`chat`** (target `thinkers::model`) — one per model call, from [`model_call_span`], with
//!   fields named after the OpenTelemetry GenAI semantic conventions (`gen_ai.operation.name`,
//!   `gen_ai.provider.name`, `gen_ai.request.model`, `gen_ai.request.max_tokens`, and, filled by
//!   [`record_usage`] when the answer arrives, `gen_ai.response.model`,
//!   `gen_ai.usage.input_tokens` (all input, cached included), its parts
//!   `gen_ai.usage.cache_read.input_tokens` and `gen_ai.usage.cache_creation.input_tokens` (read
//!   from and written to the provider's prompt cache), `gen_ai.usage.output_tokens`,
//!   `gen_ai.response.finish_reasons`) plus `thinkers.entry`, `thinkers.cost` and
//!   `thinkers.currency` (for a call to an entry without prices, whose cost is unknown, neither
//!   is set and `thinkers.cost_unknown` is `true`: an absent cost is never a cost of 0). Exported through OpenTelemetry its name is `chat {model}` and its
//!   kind `client`.
//!
//! With no subscriber interested, opening a span is tracing's disabled fast path: no field is
//! evaluated and nothing is formatted.
//!
//! Payloads and credentials: see [`payload_logging_enabled`], [`Payload`] and [`Secret`].
//!
//! With the `otel` feature, [`otel`] exports the spans over OTLP.

#[cfg(feature = "otel")]
pub mod otel;
mod payload;

pub use payload::{PAYLOADS_ENV, Payload, Secret, payload_logging_enabled, set_payload_logging};

use tracing::Span;
use tracing::field::Empty;

use crate::error::Error;
use crate::record::LlmRun;

pub use crate::dispatch::JOB_SPAN;
use crate::dispatch::unless_disabled;

/// The span name of a model call.
pub const MODEL_CALL_SPAN: &str = "chat";

/// Open the span of one model call, to be entered (or used to instrument the call's future)
/// around the request. `entry` is the catalog entry id, `model` the provider's model name,
/// `provider` the provider as the GenAI conventions name it where it is a known one
/// (`openai`, `anthropic`, …; otherwise the catalog's provider name) and `max_tokens` the
/// booked output budget. The usage fields start empty; fill them with [`record_usage`], or
/// mark a failure with [`record_error`].
///
/// The span's parent is the current span: inside a job that is the job's attempt span.
pub fn model_call_span(entry: &str, model: &str, provider: &str, max_tokens: u64) -> Span {
    unless_disabled(tracing::info_span!(
        target: "thinkers::model",
        "chat",
        otel.name = %format_args!("chat {model}"),
        otel.kind = "client",
        otel.status_code = Empty,
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = provider,
        gen_ai.request.model = model,
        gen_ai.request.max_tokens = max_tokens,
        gen_ai.response.model = Empty,
        gen_ai.response.finish_reasons = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.cache_read.input_tokens = Empty,
        gen_ai.usage.cache_creation.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        thinkers.entry = entry,
        thinkers.usage.reasoning_tokens = Empty,
        thinkers.cost = Empty,
        thinkers.currency = Empty,
        thinkers.cost_unknown = Empty,
        "error.type" = Empty,
    ))
}

/// What a model call used, as [`record_usage`] writes it onto the call's span.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelUsage<'a> {
    /// The model the provider says answered (it may name a dated version of the requested one).
    pub response_model: &'a str,
    /// Input tokens the provider reported, all of them (cache reads and writes included).
    pub input_tokens: u64,
    /// The part of `input_tokens` read from the provider's prompt cache (cache reads).
    pub cache_read_tokens: u64,
    /// The part of `input_tokens` written to the provider's prompt cache (cache writes).
    pub cache_write_tokens: u64,
    /// Output tokens the provider reported.
    pub output_tokens: u64,
    /// Reasoning tokens the provider reported.
    pub reasoning_tokens: u64,
    /// The normalised stop reason (`end_turn`, `tool_use`, `max_tokens`, …).
    pub finish_reason: &'a str,
    /// The call's cost in `currency`; `None` when unknown (the entry has no prices).
    pub cost: Option<f64>,
    /// The entry's currency; empty when the cost is unknown.
    pub currency: &'a str,
}

impl<'a> From<&'a LlmRun> for ModelUsage<'a> {
    fn from(run: &'a LlmRun) -> Self {
        Self {
            response_model: &run.model,
            input_tokens: run.input_tokens,
            cache_read_tokens: run.cached_tokens,
            cache_write_tokens: run.cache_write_tokens,
            output_tokens: run.output_tokens,
            reasoning_tokens: run.reasoning_tokens,
            finish_reason: &run.stop_reason,
            cost: run.cost,
            currency: &run.currency,
        }
    }
}

/// Fill the usage fields of a span from [`model_call_span`]. `gen_ai.response.finish_reasons`
/// is an array in the conventions; a tracing field holds the one reason as a string.
pub fn record_usage(span: &Span, usage: &ModelUsage<'_>) {
    if span.is_disabled() {
        return;
    }
    span.record("gen_ai.response.model", usage.response_model);
    span.record("gen_ai.usage.input_tokens", usage.input_tokens);
    span.record(
        "gen_ai.usage.cache_read.input_tokens",
        usage.cache_read_tokens,
    );
    span.record(
        "gen_ai.usage.cache_creation.input_tokens",
        usage.cache_write_tokens,
    );
    span.record("gen_ai.usage.output_tokens", usage.output_tokens);
    span.record("gen_ai.response.finish_reasons", usage.finish_reason);
    span.record("thinkers.usage.reasoning_tokens", usage.reasoning_tokens);
    match usage.cost {
        Some(cost) => {
            span.record("thinkers.cost", cost);
            span.record("thinkers.currency", usage.currency);
        }
        None => {
            span.record("thinkers.cost_unknown", true);
        }
    }
}

/// Mark a model call's span as failed: `error.type` is the error kind and the OpenTelemetry
/// status is `ERROR`. A retry signal (throttling, truncation) is a failure of this call too.
pub fn record_error(span: &Span, error: &Error) {
    if span.is_disabled() {
        return;
    }
    span.record("error.type", error.kind().as_str());
    span.record("otel.status_code", "ERROR");
}

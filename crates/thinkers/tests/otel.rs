//! The span tree exported through OpenTelemetry: job attempts nest like the jobs, across the
//! tasks children run on, and a model call span carries the GenAI fields.
//!
//! Needs the `otel` and `test-utils` features (the SDK's in-memory exporter).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use anyhow::{Context as _, Result};
use opentelemetry::trace::{SpanId, SpanKind, Status};
use opentelemetry::{KeyValue, Value};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use tracing::Instrument as _;
use tracing_subscriber::Layer as _;
use tracing_subscriber::layer::SubscriberExt as _;

use thinkers::Dispatcher;
use thinkers::error::Error;
use thinkers::job::doer;
use thinkers::record::LlmRun;
use thinkers::telemetry::{self, ModelUsage, otel};

fn attr<'a>(span: &'a SpanData, key: &str) -> Option<&'a Value> {
    span.attributes
        .iter()
        .find(|KeyValue { key: k, .. }| k.as_str() == key)
        .map(|kv| &kv.value)
}

fn text(span: &SpanData, key: &str) -> String {
    attr(span, key).map(Value::to_string).unwrap_or_default()
}

/// An in-memory exporter of the runtime's spans, its provider, and the guard that keeps the
/// subscriber feeding it as this thread's default.
fn capture() -> (
    InMemorySpanExporter,
    SdkTracerProvider,
    tracing::subscriber::DefaultGuard,
) {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let subscriber = tracing_subscriber::registry()
        .with(otel::layer(&provider).with_filter(otel::runtime_spans()));
    let guard = tracing::subscriber::set_default(subscriber);
    (exporter, provider, guard)
}

fn jobs<'a>(spans: &'a [SpanData], class: &str) -> Vec<&'a SpanData> {
    let mut found: Vec<&SpanData> = spans
        .iter()
        .filter(|s| s.name == "job" && text(s, "job.class") == class)
        .collect();
    found.sort_by_key(|s| text(s, "job.attempt"));
    found
}

#[tokio::test]
async fn job_and_model_call_spans_form_the_job_tree() -> Result<()> {
    // The test runtime is single-threaded, so every job's task runs under this subscriber.
    let (exporter, provider, guard) = capture();

    let dispatcher = Dispatcher::builder().build();
    let mut tries = 0;
    let (root_id, child_id) = dispatcher
        .run(doer("root", move |cx| async move {
            let child = cx
                .submit(doer("child", move |cx| async move {
                    let span =
                        telemetry::model_call_span("sim-small-a", "sim-small", "openai", 4_096);
                    async { tokio::task::yield_now().await }
                        .instrument(span.clone())
                        .await;
                    telemetry::record_usage(
                        &span,
                        &ModelUsage {
                            response_model: "sim-small-2025",
                            input_tokens: 1_200,
                            output_tokens: 300,
                            reasoning_tokens: 0,
                            cache_read_tokens: 1_000,
                            cache_write_tokens: 150,
                            finish_reason: "end_turn",
                            cost: Some(0.0125),
                            currency: "USD",
                        },
                    );
                    drop(span);
                    cx.submit(doer("grandchild", move |_| {
                        tries += 1;
                        let attempt = tries;
                        async move {
                            if attempt == 1 {
                                Err(Error::correction("try again"))
                            } else {
                                Ok(())
                            }
                        }
                    }))
                    .await?;
                    Ok(cx.id())
                }))
                .await?;
            Ok((cx.id(), child))
        }))
        .await?;
    drop(guard);
    provider.force_flush()?;
    let spans = exporter.get_finished_spans()?;

    let root = jobs(&spans, "root");
    let child = jobs(&spans, "child");
    let grandchild = jobs(&spans, "grandchild");
    assert_eq!(
        (root.len(), child.len(), grandchild.len()),
        (1, 1, 2),
        "{spans:#?}"
    );
    let (root, child) = (root[0], child[0]);

    assert_eq!(root.parent_span_id, SpanId::INVALID);
    assert_eq!(text(root, "job.id"), root_id.to_string());
    assert_eq!(text(root, "job.workflow"), root_id.to_string());
    assert_eq!(attr(root, "job.parent"), None);
    assert_eq!(text(root, "job.outcome"), "ok");

    assert_eq!(child.parent_span_id, root.span_context.span_id());
    assert_eq!(text(child, "job.id"), child_id.to_string());
    assert_eq!(text(child, "job.parent"), root_id.to_string());
    assert_eq!(text(child, "job.workflow"), root_id.to_string());
    assert_eq!(text(child, "job.ordinal"), "1");

    // Both attempts of the grandchild hang under the child's attempt.
    for (n, attempt) in grandchild.iter().enumerate() {
        assert_eq!(attempt.parent_span_id, child.span_context.span_id());
        assert_eq!(text(attempt, "job.attempt"), (n + 1).to_string());
        assert_eq!(text(attempt, "job.parent"), child_id.to_string());
    }
    assert_eq!(text(grandchild[0], "job.outcome"), "retry");
    assert_eq!(text(grandchild[1], "job.outcome"), "ok");
    for span in [root, child, grandchild[1]] {
        assert_eq!(span.span_context.trace_id(), root.span_context.trace_id());
    }

    let call = spans
        .iter()
        .find(|s| s.name == "chat sim-small")
        .context("the model call span")?;
    assert_eq!(call.parent_span_id, child.span_context.span_id());
    assert_eq!(call.span_kind, SpanKind::Client);
    for (key, value) in [
        ("gen_ai.operation.name", "chat"),
        ("gen_ai.provider.name", "openai"),
        ("gen_ai.request.model", "sim-small"),
        ("gen_ai.request.max_tokens", "4096"),
        ("gen_ai.response.model", "sim-small-2025"),
        ("gen_ai.usage.input_tokens", "1200"),
        ("gen_ai.usage.cache_read.input_tokens", "1000"),
        ("gen_ai.usage.cache_creation.input_tokens", "150"),
        ("gen_ai.usage.output_tokens", "300"),
        ("gen_ai.response.finish_reasons", "end_turn"),
        ("thinkers.entry", "sim-small-a"),
        ("thinkers.cost", "0.0125"),
        ("thinkers.currency", "USD"),
    ] {
        assert_eq!(text(call, key), value, "{key} in {call:#?}");
    }
    assert_eq!(call.status, Status::Unset);
    Ok(())
}

#[tokio::test]
async fn a_failed_attempt_marks_its_span_as_an_error() -> Result<()> {
    let (exporter, provider, guard) = capture();
    let dispatcher = Dispatcher::builder().build();
    let failed = dispatcher
        .run(doer("broken", |_| async {
            let span = telemetry::model_call_span("e", "m", "anthropic", 1_024);
            telemetry::record_error(&span, &Error::external("sim", "request", "boom"));
            drop(span);
            Err::<(), _>(Error::invalid_input("query", None, "empty"))
        }))
        .await;
    assert!(failed.is_err());
    drop(guard);
    provider.force_flush()?;
    let spans = exporter.get_finished_spans()?;
    let job = jobs(&spans, "broken");
    assert_eq!(job.len(), 1);
    assert_eq!(text(job[0], "job.outcome"), "invalid_input");
    assert_eq!(text(job[0], "error.type"), "invalid_input");
    assert!(
        matches!(job[0].status, Status::Error { .. }),
        "{:?}",
        job[0].status
    );
    let call = spans
        .iter()
        .find(|s| s.name == "chat m")
        .context("call span")?;
    assert_eq!(text(call, "error.type"), "external_service");
    assert!(matches!(call.status, Status::Error { .. }));
    Ok(())
}

#[tokio::test]
async fn a_call_of_unknown_cost_carries_no_cost_but_says_it_is_unknown() -> Result<()> {
    let (exporter, provider, guard) = capture();
    let span = telemetry::model_call_span("local-llama", "llama", "openai", 1_024);
    // The usage as the model call writes it: from the call's row.
    let run = LlmRun {
        model: "llama".to_owned(),
        input_tokens: 10,
        cached_tokens: 4,
        cache_write_tokens: 2,
        output_tokens: 5,
        stop_reason: "end_turn".to_owned(),
        cost: None,
        ..LlmRun::default()
    };
    telemetry::record_usage(&span, &ModelUsage::from(&run));
    drop(span);
    drop(guard);
    provider.force_flush()?;
    let spans = exporter.get_finished_spans()?;
    let call = spans
        .iter()
        .find(|s| s.name == "chat llama")
        .context("call span")?;
    assert_eq!(text(call, "thinkers.cost_unknown"), "true");
    assert_eq!(attr(call, "thinkers.cost"), None, "never a cost of 0");
    assert_eq!(attr(call, "thinkers.currency"), None);
    assert_eq!(text(call, "gen_ai.usage.output_tokens"), "5");
    // Cache reads and writes are their own figures, beside the whole input.
    assert_eq!(text(call, "gen_ai.usage.input_tokens"), "10");
    assert_eq!(text(call, "gen_ai.usage.cache_read.input_tokens"), "4");
    assert_eq!(text(call, "gen_ai.usage.cache_creation.input_tokens"), "2");
    Ok(())
}

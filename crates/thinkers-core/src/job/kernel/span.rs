//! The span of each job attempt (target `thinkers::job`; the fields are listed in
//! `thinkers::telemetry`).

use tracing::Span;
use tracing::field::Empty;

use crate::error::Error;
use crate::job::JobContext;

/// The span name of a job attempt.
pub const JOB_SPAN: &str = "job";

/// Open the span of attempt `attempt` (1 for the first) of the job running in `cx`, as a child
/// of the span the job's parent was in when it submitted the job, and make it the parent of
/// the children this attempt submits. Pair with [`end_attempt`].
pub(super) fn begin_attempt(cx: &JobContext, attempt: u32) -> Span {
    let node = &cx.node;
    let span = tracing::info_span!(
        target: "thinkers::job",
        parent: &node.parent_span,
        "job",
        job.id = %node.id,
        job.parent = node.parent.map(tracing::field::display),
        job.workflow = %node.workflow,
        job.class = &*node.class,
        job.ordinal = node.ordinal,
        job.attempt = attempt,
        job.outcome = Empty,
        "error.type" = Empty,
        otel.status_code = Empty,
    );
    let span = unless_disabled(span);
    node.set_attempt_span(&span);
    span
}

/// A span no subscriber wants, traded for [`Span::none`]. A disabled span still carries its
/// metadata, so (with `tracing`'s `log` feature, which sqlx turns on) entering and leaving it
/// consults the `log` crate on every poll of the future it instruments; the empty span skips
/// that. What is lost is only the `log` crate's record of span activity, for an application that
/// reads tracing through `log` without a subscriber.
pub fn unless_disabled(span: Span) -> Span {
    if span.is_disabled() {
        Span::none()
    } else {
        span
    }
}

/// Close the bookkeeping of an attempt: record how it ended on its span (`ok`, `retry`, the
/// error kind, or `panic`) and stop handing the span to new children.
pub(super) fn end_attempt<T>(
    cx: &JobContext,
    span: &Span,
    result: &std::thread::Result<crate::Result<T>>,
) {
    cx.node.set_attempt_span(&Span::none());
    if span.is_disabled() {
        return;
    }
    let outcome = match result {
        Ok(Ok(_)) => "ok",
        Ok(Err(Error::Retry(_))) => "retry",
        Ok(Err(e)) => e.kind().as_str(),
        Err(_) => "panic",
    };
    span.record("job.outcome", outcome);
    if !matches!(result, Ok(Ok(_) | Err(Error::Retry(_)))) {
        span.record("error.type", outcome);
        span.record("otel.status_code", "ERROR");
    }
}

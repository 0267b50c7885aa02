//! The attempt loop of one job. See the module docs of [`crate::dispatch`].

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::FutureExt;
use tokio_util::sync::WaitForCancellationFutureOwned;
use tracing::Instrument;

use super::span as telemetry;
use crate::Result;
use crate::error::{Error, RetrySignal};
use crate::job::{AttemptInfo, Job, JobContext, Requirements, Resources};
use crate::record::{JobEnd, JobStatus, now_ms};

/// Records a job run in its caller's task as cancelled if the caller drops it before it ends
/// (a spawned job runs on; one run in place stops with its caller).
pub(crate) struct Unfinished {
    cx: Option<JobContext>,
}

impl Unfinished {
    pub(crate) fn new(cx: JobContext) -> Self {
        Self { cx: Some(cx) }
    }

    /// The job ended and recorded its own end.
    pub(crate) fn disarm(&mut self) {
        self.cx = None;
    }
}

impl Drop for Unfinished {
    fn drop(&mut self) {
        if let Some(cx) = self.cx.take() {
            let reason = cx.node.cancel_reason().map_or_else(
                || "the job that was waiting for it stopped".to_owned(),
                |r| r.to_string(),
            );
            cx.node.cancel_token().cancel();
            cx.recorder().job_finished(JobEnd {
                id: cx.id(),
                status: JobStatus::Cancelled,
                error_kind: Some("cancelled".to_owned()),
                error: Some(reason),
                ended_at_ms: now_ms(),
                attempts: 0,
            });
        }
    }
}

/// How a job's run meets its cancellation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Watch {
    /// On a task of its own: the run races its token and ends as cancelled when it fires.
    Token,
    /// In its caller's task: the caller's own run (or its caller's, up to a task's) races the
    /// ancestor tokens this one hangs from and drops this run with it, and [`Unfinished`] records
    /// the end; the run does not poll a token of its own on every wake.
    Caller,
}

pub(crate) async fn run<J: Job>(mut job: J, cx: JobContext, watch: Watch) -> Result<J::Output> {
    let mut attempt = AttemptInfo::default();
    let cancelled = match watch {
        Watch::Token => Some(cx.node.cancel_token().clone().cancelled_owned()),
        Watch::Caller => None,
    };
    // Pinned where it is built and awaited through the pin: awaiting it by value would keep a
    // second copy of it in this future's state.
    let ended = {
        let guarded = std::pin::pin!(Guarded {
            work: attempts(&mut job, &cx, &mut attempt),
            cancelled,
            limit: None,
        });
        guarded.await
    };
    let outcome = match ended {
        Ended::Done(r) => r,
        Ended::Cancelled => Err(Error::Cancelled),
        Ended::TimedOut => Err(Error::system(
            "dispatcher",
            "a job's run timed out with no time limit set",
        )),
    };
    let (status, kind, message) = match &outcome {
        Ok(_) => (JobStatus::Succeeded, None, None),
        Err(Error::Cancelled) => (
            JobStatus::Cancelled,
            Some("cancelled"),
            cx.node.cancel_reason().map(|r| r.to_string()),
        ),
        Err(e @ Error::Timeout(_)) => (JobStatus::TimedOut, Some("timeout"), Some(e.to_string())),
        Err(e @ Error::AwaitingApproval { .. }) => (
            JobStatus::AwaitingApproval,
            Some(e.kind().as_str()),
            Some(e.to_string()),
        ),
        Err(e) => (
            JobStatus::Failed,
            Some(e.kind().as_str()),
            Some(e.to_string()),
        ),
    };
    if let Some(msg) = &message {
        tracing::debug!(job = %cx.id(), class = cx.class(), error = %msg, "job ended without output");
    }
    cx.recorder().job_finished(JobEnd {
        id: cx.id(),
        status,
        error_kind: kind.map(str::to_owned),
        error: message,
        ended_at_ms: now_ms(),
        attempts: attempt.number,
    });
    // Nothing runs on under a job that ended without output, nor under a workflow that ended.
    if status != JobStatus::Succeeded || cx.node.parent.is_none() {
        cx.node.cancel_subtree(|| {
            let what = match status {
                JobStatus::Succeeded => "ended",
                JobStatus::Cancelled => "was cancelled",
                JobStatus::TimedOut => "timed out",
                JobStatus::AwaitingApproval => "stopped to wait for a person's approval",
                _ => "failed",
            };
            format!(
                "cancelled because `{}` (job {}) {what}",
                cx.class(),
                cx.id()
            )
        });
    }
    outcome
}

pin_project_lite::pin_project! {
    /// `work` raced against a cancellation and a time limit, either of which may be absent.
    ///
    /// One future type with one `.await`, instead of a branch between `select!` (or
    /// `tokio::time::timeout`) and a plain `.await`: each branch keeps its own copy of `work` in
    /// the state of the `async fn` around it, and a job's run nests two such choices, so a model
    /// call's run was three times the size of the call's own future, and every level of it is
    /// copied as it is built. It is pinned where it is built and awaited through the pin: a
    /// future awaited by value is held twice in the state around it.
    struct Guarded<F> {
        #[pin]
        work: F,
        #[pin]
        cancelled: Option<WaitForCancellationFutureOwned>,
        #[pin]
        limit: Option<tokio::time::Sleep>,
    }
}

/// How a [`Guarded`] future ended.
enum Ended<T> {
    Done(T),
    Cancelled,
    TimedOut,
}

impl<F: Future> Future for Guarded<F> {
    type Output = Ended<F::Output>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        // Cancellation first, as `select!` with `biased` did; the limit after the work, as
        // `tokio::time::timeout` does.
        if let Some(cancelled) = this.cancelled.as_pin_mut()
            && cancelled.poll(cx).is_ready()
        {
            return Poll::Ready(Ended::Cancelled);
        }
        if let Poll::Ready(out) = this.work.poll(cx) {
            return Poll::Ready(Ended::Done(out));
        }
        if let Some(limit) = this.limit.as_pin_mut()
            && limit.poll(cx).is_ready()
        {
            return Poll::Ready(Ended::TimedOut);
        }
        Poll::Pending
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-text payload".to_owned()
    }
}

fn backoff(base: Duration, n: u32, salt: u128) -> Duration {
    let exp = base.saturating_mul(1 << n.min(10));
    // Up to 25% jitter, derived from the job id so retries of many jobs spread out.
    let jitter_permille = (salt % 250) as u32;
    exp.saturating_add(exp * jitter_permille / 1000)
}

async fn attempts<J: Job>(
    job: &mut J,
    cx: &JobContext,
    attempt: &mut AttemptInfo,
) -> Result<J::Output> {
    let dispatcher = cx.dispatcher();
    let config = dispatcher.config();
    let salt = cx.id().0.as_u128();
    loop {
        attempt.number += 1;
        if attempt.number > config.max_attempts {
            return Err(Error::AttemptsExhausted {
                attempts: attempt.number - 1,
                last: "the attempt bound was reached".into(),
            });
        }
        let mut req = Requirements::new(*attempt);
        let prepared =
            std::panic::catch_unwind(AssertUnwindSafe(|| job.requirements(&mut req, cx)));
        match prepared {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(e),
            Err(p) => {
                return Err(Error::system(
                    format!("requirements of {}", cx.class()),
                    format!("panicked: {}", panic_message(p.as_ref())),
                ));
            }
        }
        let permit = dispatcher.admission().acquire(req.into_items()).await?;
        let res = Resources::new(permit, *attempt);
        let timeout = job.timeout();
        let attempt_started = tokio::time::Instant::now();
        let span = telemetry::begin_attempt(cx, attempt.number);
        let ended = {
            let guarded = std::pin::pin!(Guarded {
                work: AssertUnwindSafe(job.execute(&res, cx).instrument(span.clone()))
                    .catch_unwind(),
                cancelled: None,
                limit: timeout.map(tokio::time::sleep),
            });
            guarded.await
        };
        let result = match ended {
            Ended::Done(r) => r,
            Ended::TimedOut => Ok(Err(Error::Timeout(timeout.unwrap_or_default()))),
            Ended::Cancelled => Ok(Err(Error::Cancelled)),
        };
        telemetry::end_attempt(cx, &span, &result);
        if let Ok(Err(Error::Retry(RetrySignal::Throttled { .. }))) = &result {
            // A throttled request was charged nothing: its whole token reservation goes back (it
            // still counts against the request rate, since it reached the provider).
            res.report_seat_usage(crate::job::SeatUse::NONE);
        }
        res.settle();
        let signal = match result {
            Ok(Ok(out)) => return Ok(out),
            Ok(Err(Error::Retry(signal))) => signal,
            Ok(Err(e)) => return Err(e),
            Err(p) => {
                return Err(Error::system(
                    format!("execute of {}", cx.class()),
                    format!("panicked: {}", panic_message(p.as_ref())),
                ));
            }
        };
        tracing::debug!(job = %cx.id(), class = cx.class(), %signal, "retry signal");
        match signal {
            RetrySignal::Throttled {
                budget,
                retry_after,
                detail,
            } => {
                attempt.throttles += 1;
                if attempt.throttles > config.max_throttles {
                    return Err(exhausted(attempt, &throttled_out(detail.as_deref())));
                }
                let wait = retry_after
                    .unwrap_or_else(|| {
                        backoff(config.throttle_backoff, attempt.throttles - 1, salt)
                    })
                    .min(config.max_server_wait);
                // A throttled budget holds every job on it for the wait and no longer. The
                // throttle and what it changed are recorded (`limit_log.rs`).
                if let Some(b) = &budget {
                    let (store, log) = (dispatcher.admission().store(), dispatcher.limit_log());
                    log.first_standing(&**store, b, None, cx);
                    store.pause(b, wait);
                    log.throttled(&**store, b, retry_after, wait, detail.as_deref(), cx);
                }
                tokio::time::sleep(wait).await;
            }
            RetrySignal::Correction { reason } => {
                attempt.corrections += 1;
                if attempt.corrections > job.max_corrections() {
                    return Err(exhausted(
                        attempt,
                        &format!("correction bound reached: {reason}"),
                    ));
                }
            }
            RetrySignal::TruncationEscalation => {
                if attempt.escalated {
                    return Err(exhausted(
                        attempt,
                        "the answer was truncated even at the output ceiling",
                    ));
                }
                attempt.escalated = true;
            }
            RetrySignal::Transient {
                service,
                detail,
                retry_after,
            } => {
                attempt.transient_retries += 1;
                if attempt.transient_retries > config.max_transient_retries {
                    return Err(Error::external(service, "request", detail));
                }
                let n = attempt.transient_retries - 1;
                // The server's wait when it named one, else the backoff.
                let wait = retry_after
                    .unwrap_or_else(|| backoff(config.transient_backoff, n, salt))
                    .min(config.max_server_wait);
                attempt.transient_time += attempt_started.elapsed() + wait;
                tokio::time::sleep(wait).await;
            }
            RetrySignal::UnreadableAnswer { service, detail } => {
                attempt.unreadable_answers += 1;
                if attempt.unreadable_answers > config.max_unreadable_answers {
                    return Err(Error::external(service, "response", detail));
                }
            }
            // The job asks in another form at once: a refusal of the form is no outage to wait
            // out.
            RetrySignal::FormRefused { service, detail } => {
                attempt.form_refusals += 1;
                if attempt.form_refusals > config.max_form_refusals {
                    return Err(Error::external(service, "request form", detail));
                }
            }
        }
    }
}

/// What a job throttled past its bound was last told: who throttled it and what they said, when
/// the signal named it.
fn throttled_out(detail: Option<&str>) -> String {
    match detail {
        Some(d) => format!("throttled too many times; the last: {d}"),
        None => "throttled too many times".to_owned(),
    }
}

fn exhausted(attempt: &AttemptInfo, last: &str) -> Error {
    Error::AttemptsExhausted {
        attempts: attempt.number,
        last: last.to_owned(),
    }
}

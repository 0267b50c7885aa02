//! A failed attempt of a model call, and what the dispatcher is told of it.

use std::sync::Arc;
use std::time::Duration;

use super::ClientLimits;
use crate::Error;
use crate::error::RetrySignal;
use crate::job::JobContext;

/// A failed attempt of a model call, and what its retry may cost.
pub(super) struct Failed<'a> {
    pub(super) entry: &'a str,
    pub(super) budget: &'a Arc<str>,
    /// Time spent in this call's failed attempts so far, this one included.
    pub(super) spent: Duration,
    pub(super) attempts: u32,
    pub(super) limits: ClientLimits,
}

impl Failed<'_> {
    /// What the dispatcher is told: a throttle names the entry's budget; a server-requested
    /// wait is capped at the client's `max_retry_wait` (a longer one is logged with the entry,
    /// and the entry's budget is paused for the capped wait, so admission holds every call to
    /// the entry rather than this job sleeping alone); a transient failure past the call's
    /// deadline is final.
    pub(super) fn settle(&self, e: Error, cx: &JobContext) -> Error {
        match e {
            Error::Retry(RetrySignal::Throttled {
                budget: None,
                retry_after,
                detail,
            }) => {
                // The attempt loop records the throttle; it learns the entry and the wait the
                // provider asked (before the cap) from this note.
                if cx.recorder().keeps_rows() {
                    cx.limit_log()
                        .model_throttle(cx.id(), self.entry, retry_after);
                }
                Error::Retry(RetrySignal::Throttled {
                    budget: Some(self.budget.to_string()),
                    retry_after: self.capped(retry_after, cx),
                    detail,
                })
            }
            Error::Retry(RetrySignal::Transient {
                service, detail, ..
            }) if self.spent >= self.limits.call_timeout => Error::external(
                service,
                "timeout",
                format!(
                    "no answer within the call's {:?} ({} attempts); the last: {detail}",
                    self.limits.call_timeout, self.attempts
                ),
            ),
            Error::Retry(RetrySignal::Transient {
                service,
                detail,
                retry_after,
            }) => Error::transient(service, detail, self.capped(retry_after, cx)),
            e => e,
        }
    }

    fn capped(&self, wait: Option<Duration>, cx: &JobContext) -> Option<Duration> {
        let cap = self.limits.max_retry_wait;
        match wait {
            Some(w) if w > cap => {
                tracing::warn!(
                    entry = self.entry,
                    requested = ?w,
                    cap = ?cap,
                    "the provider asked for a longer wait than the client's cap; the entry's \
                     budget is paused for the cap"
                );
                cx.budgets().pause(self.budget, cap);
                Some(cap)
            }
            w => w,
        }
    }
}

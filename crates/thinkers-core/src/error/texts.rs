//! Every text an [`Error`] carries, visited in one place, so a redactor misses none.

use super::{BoxError, Error, RetrySignal};

impl Error {
    /// Hand every text this error carries to `text` (parameter, value, reason, service, step,
    /// detail, budget…) and its source chain to `source`, for a redactor to clean them. Every
    /// variant is visited: a new one is added here, where the match is exhaustive.
    #[doc(hidden)]
    pub fn visit_texts(
        &mut self,
        text: &mut dyn FnMut(&mut String),
        source: &mut dyn FnMut(&mut Option<BoxError>),
    ) {
        match self {
            Self::InvalidInput {
                parameter,
                value,
                reason,
                source: s,
            } => {
                text(parameter);
                if let Some(v) = value {
                    text(v);
                }
                text(reason);
                source(s);
            }
            Self::ExternalService {
                service,
                step,
                detail,
                source: s,
            } => {
                text(service);
                text(step);
                text(detail);
                source(s);
            }
            Self::System {
                context,
                detail,
                source: s,
            } => {
                text(context);
                text(detail);
                source(s);
            }
            Self::Unadmittable { reason, .. } => text(reason),
            Self::SpendCapReached { cap, .. } => text(cap),
            Self::AttemptsExhausted { last, .. } => text(last),
            Self::Retry(signal) => match signal {
                RetrySignal::Transient {
                    service, detail, ..
                }
                | RetrySignal::UnreadableAnswer { service, detail }
                | RetrySignal::FormRefused { service, detail } => {
                    text(service);
                    text(detail);
                }
                RetrySignal::Correction { reason } => text(reason),
                RetrySignal::Throttled { budget, detail, .. } => {
                    if let Some(b) = budget {
                        text(b);
                    }
                    if let Some(d) = detail {
                        text(d);
                    }
                }
                RetrySignal::TruncationEscalation => {}
            },
            Self::Timeout(_) | Self::Cancelled | Self::AwaitingApproval { .. } => {}
        }
    }
}

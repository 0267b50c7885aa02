//! The one error hierarchy of thinkers, readable by a model.
//!
//! Every failure a job can report is an [`Error`]. The variants split into two families:
//!
//! * **outcomes** — [`Error::InvalidInput`] (correctable: the caller, often a model, can fix its own
//!   parameter), [`Error::ExternalService`] (a service failed; names the service and the step),
//!   [`Error::System`] (our own bug), plus the terminal states [`Error::Timeout`],
//!   [`Error::Cancelled`], [`Error::Unadmittable`] and [`Error::AttemptsExhausted`];
//! * **retry signals** — [`Error::Retry`] with a [`RetrySignal`]: "run me again", never a failure.
//!   The dispatcher consumes them; they are never recorded as a job's failure.
//!
//! Two helpers keep broad error handling from swallowing a retry signal, mirroring the seed's
//! `unwrap` and `wrapWithContext`: [`unwrap_error`] converts any error into the hierarchy while
//! passing our own errors (and so every retry signal) through untouched, and [`ServiceStep::wrap`]
//! classifies the failure of one external-service step into the three outcomes.
//!
//! Whether a kind is retryable and what a model is told about it come from one table,
//! [`ErrorKind`], so the three never drift apart.

use std::fmt;
use std::time::Duration;

mod texts;

/// A boxed error used on source chains.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// The result type of thinkers.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A signal asking the dispatcher to run a job again. Never a failure.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RetrySignal {
    /// The upstream provider throttled the call (HTTP 429/529). Wait, then re-admit.
    Throttled {
        /// The budget the throttling applies to (for example `model:sim-small-a`), if known.
        budget: Option<String>,
        /// How long the provider asked us to wait, if it said.
        retry_after: Option<Duration>,
        /// What throttled the call, when the thrower knows: for a model call the provider, the
        /// entry, the HTTP status, the URL and the provider's message on one line (redacted like
        /// every error text). The dispatcher names it when the throttling bound is reached.
        detail: Option<String>,
    },
    /// The job grew its own state (for example appended a correction turn to its conversation)
    /// and must be re-run at once, on the same instance.
    Correction {
        /// What was wrong, in terms the job's author can read in logs.
        reason: String,
    },
    /// The answer hit its output budget; re-run once with the budget raised to the entry's
    /// output ceiling.
    TruncationEscalation,
    /// A transient transport failure (5xx, reset, timeout) that may be retried with backoff.
    Transient {
        /// The service that failed.
        service: String,
        /// What failed.
        detail: String,
        /// How long the service asked us to wait (`Retry-After`), if it said.
        retry_after: Option<Duration>,
    },
    /// The service answered with success but its answer could not be read (not JSON, or not
    /// the shape the protocol defines). Retried on its own, small bound: each retry pays for
    /// the answer again.
    UnreadableAnswer {
        /// The service that answered.
        service: String,
        /// What was wrong with the answer (never the answer itself).
        detail: String,
    },
    /// The service refused the form of the request (a structured-answer format, a streamed
    /// answer that may call a tool), not its content, and the job has chosen another form the
    /// service may accept: run it again at once. Nothing was generated, so nothing is paid; the
    /// forms to try are few, and the dispatcher bounds these retries on their own.
    FormRefused {
        /// The service that refused.
        service: String,
        /// What it refused and the form asked for next.
        detail: String,
    },
}

/// The kinds of [`Error`], with the properties that must stay in sync.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// See [`Error::InvalidInput`].
    InvalidInput,
    /// See [`Error::ExternalService`].
    ExternalService,
    /// See [`Error::System`].
    System,
    /// See [`Error::Timeout`].
    Timeout,
    /// See [`Error::Cancelled`].
    Cancelled,
    /// See [`Error::Unadmittable`].
    Unadmittable,
    /// See [`Error::AttemptsExhausted`].
    AttemptsExhausted,
    /// See [`Error::Retry`].
    Retry,
    /// See [`Error::AwaitingApproval`].
    AwaitingApproval,
    /// See [`Error::SpendCapReached`].
    SpendCapReached,
}

impl ErrorKind {
    /// The stable name stored in records.
    pub fn as_str(self) -> &'static str {
        ERROR_TABLE[self as usize].0
    }
    /// Whether the caller (often a model) can correct this failure by changing its input.
    pub fn is_correctable(self) -> bool {
        ERROR_TABLE[self as usize].1
    }
    /// Whether this is a retry signal rather than an outcome.
    pub fn is_retry_signal(self) -> bool {
        ERROR_TABLE[self as usize].2
    }
    /// A one-line lead a model reads before the detail.
    pub(crate) fn model_lead(self) -> &'static str {
        ERROR_TABLE[self as usize].3
    }
}

/// One table: name, correctable, retry signal, what the model is told. Indexed by `ErrorKind`.
const ERROR_TABLE: [(&str, bool, bool, &str); 10] = [
    (
        "invalid_input",
        true,
        false,
        "Your input was invalid; fix it and try again",
    ),
    (
        "external_service",
        false,
        false,
        "An external service failed",
    ),
    ("system", false, false, "An internal error occurred"),
    ("timeout", false, false, "The job ran out of time"),
    ("cancelled", false, false, "The job was cancelled"),
    (
        "unadmittable",
        false,
        false,
        "The job can never be admitted",
    ),
    (
        "attempts_exhausted",
        false,
        false,
        "The job was retried too many times",
    ),
    ("retry", false, true, "The job will be run again"),
    (
        "awaiting_approval",
        false,
        false,
        "The job is waiting for a person's approval",
    ),
    (
        "spend_cap_reached",
        false,
        false,
        "A spending cap stops this model call",
    ),
];

/// A failure of a job, in the one hierarchy a model can read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Correctable: a parameter was wrong. Names the parameter as the caller knows it.
    #[error("invalid input for `{parameter}`{}: {reason}", value_suffix(.value.as_deref()))]
    InvalidInput {
        /// The parameter as the caller (often a model) knows it.
        parameter: String,
        /// The offending value, when echoing it is safe; `None` for a refusal of what a model
        /// sent (an answer, tool arguments), which never quotes the model. A service step
        /// ([`ServiceStep`]) names the value of the parameter the service refused.
        value: Option<String>,
        /// What is wrong, composed from the schema.
        reason: String,
        /// The underlying cause, kept off the message (a decoder's complaint may quote values).
        #[source]
        source: Option<BoxError>,
    },
    /// An external service failed at one step.
    #[error("external service `{service}` failed at {step}: {detail}")]
    ExternalService {
        /// The service, for example `pubmed` or `openai`.
        service: String,
        /// The step that failed, for example `efetch` or `authentication`.
        step: String,
        /// What happened.
        detail: String,
        /// The underlying cause.
        #[source]
        source: Option<BoxError>,
    },
    /// Our own bug or an impossible state. Never used for a fault of a model's parameter.
    #[error("system failure in {context}: {detail}")]
    System {
        /// Where it happened.
        context: String,
        /// What happened.
        detail: String,
        /// The underlying cause.
        #[source]
        source: Option<BoxError>,
    },
    /// The job exceeded its timeout.
    #[error("timed out after {0:?}")]
    Timeout(Duration),
    /// The job or one of its ancestors was cancelled.
    #[error("cancelled")]
    Cancelled,
    /// The job's reservation can never fit its budget.
    #[error("reservation on budget `{budget}` can never be admitted: {reason}")]
    Unadmittable {
        /// The budget name.
        budget: String,
        /// Why, with the numbers.
        reason: String,
    },
    /// A retry bound was reached; carries the last signal's description.
    #[error("gave up after {attempts} attempts: {last}")]
    AttemptsExhausted {
        /// How many attempts ran.
        attempts: u32,
        /// What the last attempt asked for.
        last: String,
    },
    /// A retry signal. Consumed by the dispatcher; never a recorded failure.
    #[error("retry signal: {0:?}")]
    Retry(RetrySignal),
    /// A tool call waits for a person's decision (see `thinkers::durable`): the run stopped and
    /// holds nothing; once every listed call is decided, running it again (a queue worker does
    /// this by itself) goes on from where it stopped. Recorded as `awaiting_approval`, not as a
    /// failure.
    #[error("waiting for a person's decision on {}; decide with `thinkers approve ID` or `thinkers deny ID --reason …`", pending_list(.pending))]
    AwaitingApproval {
        /// The pending calls: approval id and tool.
        pending: Vec<PendingCall>,
    },
    /// A model call was not sent: its worst-case cost would take a spending cap past its
    /// amount. Never retried.
    #[error(
        "spending cap {cap} of {limit} {currency} would be passed: {spent:.6} {currency} spent \
         or held, and the call needs up to {needed:.6} {currency}"
    )]
    SpendCapReached {
        /// The cap, as its owner named it (`run`, `day 2026-12-06`, `axis tenant=acme`).
        cap: String,
        /// The cap's currency (ISO code).
        currency: String,
        /// The cap's amount.
        limit: f64,
        /// What was spent, or is held by calls in flight, under the cap.
        spent: f64,
        /// The call's worst-case cost.
        needed: f64,
    },
}

/// A tool call waiting for a person, as [`Error::AwaitingApproval`] names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingCall {
    /// The approval's id.
    pub id: String,
    /// The tool.
    pub tool: String,
    /// The model's id of the call.
    pub call_id: String,
}

fn pending_list(pending: &[PendingCall]) -> String {
    let calls: Vec<String> = pending
        .iter()
        .map(|p| format!("approval {} (tool `{}`)", p.id, p.tool))
        .collect();
    calls.join(", ")
}

fn value_suffix(value: Option<&str>) -> String {
    match value {
        Some(v) => format!(" (value {v:?})"),
        None => String::new(),
    }
}

impl Error {
    /// The kind, for queries and records.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::InvalidInput { .. } => ErrorKind::InvalidInput,
            Self::ExternalService { .. } => ErrorKind::ExternalService,
            Self::System { .. } => ErrorKind::System,
            Self::Timeout(_) => ErrorKind::Timeout,
            Self::Cancelled => ErrorKind::Cancelled,
            Self::Unadmittable { .. } => ErrorKind::Unadmittable,
            Self::AttemptsExhausted { .. } => ErrorKind::AttemptsExhausted,
            Self::Retry(_) => ErrorKind::Retry,
            Self::AwaitingApproval { .. } => ErrorKind::AwaitingApproval,
            Self::SpendCapReached { .. } => ErrorKind::SpendCapReached,
        }
    }

    /// Whether this is a retry signal.
    pub fn is_retry_signal(&self) -> bool {
        self.kind().is_retry_signal()
    }

    /// Whether the caller can correct it by changing its input.
    pub fn is_correctable(&self) -> bool {
        self.kind().is_correctable()
    }

    /// The retry signal, if this is one.
    pub fn retry_signal(&self) -> Option<&RetrySignal> {
        match self {
            Self::Retry(s) => Some(s),
            _ => None,
        }
    }

    /// An invalid-input error whose value may be echoed (a tool parameter).
    pub fn invalid_input(
        parameter: impl Into<String>,
        value: Option<String>,
        reason: impl Into<String>,
    ) -> Self {
        Self::InvalidInput {
            parameter: parameter.into(),
            value,
            reason: reason.into(),
            source: None,
        }
    }

    /// An external-service failure.
    pub fn external(
        service: impl Into<String>,
        step: impl Into<String>,
        detail: impl Into<String>,
    ) -> Self {
        Self::ExternalService {
            service: service.into(),
            step: step.into(),
            detail: detail.into(),
            source: None,
        }
    }

    /// A system failure.
    pub fn system(context: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::System {
            context: context.into(),
            detail: detail.into(),
            source: None,
        }
    }

    /// Attach a source to an error that can carry one.
    #[must_use]
    pub fn with_source(mut self, cause: impl Into<BoxError>) -> Self {
        match &mut self {
            Self::InvalidInput { source, .. }
            | Self::ExternalService { source, .. }
            | Self::System { source, .. } => *source = Some(cause.into()),
            _ => {}
        }
        self
    }

    /// A correction retry signal.
    pub fn correction(reason: impl Into<String>) -> Self {
        Self::Retry(RetrySignal::Correction {
            reason: reason.into(),
        })
    }

    /// A throttling retry signal.
    pub fn throttled(budget: Option<String>, retry_after: Option<Duration>) -> Self {
        Self::Retry(RetrySignal::Throttled {
            budget,
            retry_after,
            detail: None,
        })
    }

    /// A throttling retry signal saying what throttled the call (the `detail` of
    /// [`RetrySignal::Throttled`]).
    pub fn throttled_because(
        budget: Option<String>,
        retry_after: Option<Duration>,
        detail: impl Into<String>,
    ) -> Self {
        Self::Retry(RetrySignal::Throttled {
            budget,
            retry_after,
            detail: Some(detail.into()),
        })
    }

    /// A transient-failure retry signal.
    pub fn transient(
        service: impl Into<String>,
        detail: impl Into<String>,
        retry_after: Option<Duration>,
    ) -> Self {
        Self::Retry(RetrySignal::Transient {
            service: service.into(),
            detail: detail.into(),
            retry_after,
        })
    }

    /// The text a model reads about this failure: a lead from the kind table and the message.
    pub fn for_model(&self) -> String {
        format!("{}. {}", self.kind().model_lead(), self)
    }
}

/// Convert any error into the hierarchy, letting our own errors (and so every retry signal)
/// through untouched. The seed's `unwrap`: use it in the broad catch of a job body so that a
/// throttling, correction or escalation signal is never turned into a failure.
pub fn unwrap_error(err: impl Into<BoxError>) -> Error {
    let boxed: BoxError = err.into();
    match boxed.downcast::<Error>() {
        Ok(ours) => *ours,
        Err(other) => match other.downcast::<std::io::Error>() {
            Ok(io) => Error::external("io", "i/o", io.to_string()).with_source(io),
            Err(other) => Error::system("job body", other.to_string()).with_source(other),
        },
    }
}

/// How one failure of an external service client is classified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureClass {
    /// The request was wrong because of a parameter the caller supplied (a 400, a 404 on a fetch).
    Correctable,
    /// The service failed in a way the caller cannot fix (5xx, 401/403, a protocol violation).
    Uncorrectable,
    /// The transport failed (connection refused or reset, DNS, timeout).
    Io,
}

/// Something a service client can fail with, classified into the three outcomes.
pub trait ServiceFailure: std::error::Error + Send + Sync + 'static {
    /// Which of the three outcomes this failure is.
    fn class(&self) -> FailureClass;
}

impl ServiceFailure for std::io::Error {
    fn class(&self) -> FailureClass {
        FailureClass::Io
    }
}

/// A failure a service tool classified itself: a status code plus a message.
#[derive(Debug, thiserror::Error)]
#[error("HTTP {status}: {message}")]
pub struct StatusFailure {
    /// The HTTP status.
    pub status: u16,
    /// What the service said.
    pub message: String,
}

impl ServiceFailure for StatusFailure {
    fn class(&self) -> FailureClass {
        match self.status {
            401 | 403 | 408 | 429 => FailureClass::Uncorrectable,
            400..=499 => FailureClass::Correctable,
            _ => FailureClass::Uncorrectable,
        }
    }
}

/// One external-service step taken with a parameter the model supplied. The seed's
/// `wrapWithContext`: wrap exactly that step, not the whole tool body.
#[derive(Debug, Clone)]
pub struct ServiceStep<'a> {
    /// The service, for example `pubmed`.
    pub service: &'a str,
    /// The step, for example `efetch`.
    pub step: &'a str,
    /// The parameter as the model knows it, for example `pmids`.
    pub parameter: &'a str,
    /// The value the model supplied.
    pub value: &'a str,
}

impl ServiceStep<'_> {
    /// Classify the outcome of the step into the hierarchy:
    /// correctable → [`Error::InvalidInput`] naming the parameter and its value;
    /// uncorrectable or I/O → [`Error::ExternalService`] naming the service and the step.
    /// Our own errors (and so retry signals) pass through untouched.
    pub fn wrap<T, E: ServiceFailure>(&self, result: Result<T, E>) -> Result<T> {
        result.map_err(|e| self.classify(e))
    }

    /// Classify one failure; see [`ServiceStep::wrap`].
    pub fn classify<E: ServiceFailure>(&self, err: E) -> Error {
        let class = err.class();
        let boxed: BoxError = Box::new(err);
        let boxed = match boxed.downcast::<Error>() {
            Ok(ours) => return *ours,
            Err(other) => other,
        };
        match class {
            FailureClass::Correctable => Error::InvalidInput {
                parameter: self.parameter.to_owned(),
                value: Some(self.value.to_owned()),
                reason: format!("{} rejected it at {}: {}", self.service, self.step, boxed),
                source: Some(boxed),
            },
            FailureClass::Uncorrectable => Error::ExternalService {
                service: self.service.to_owned(),
                step: self.step.to_owned(),
                detail: boxed.to_string(),
                source: Some(boxed),
            },
            FailureClass::Io => Error::ExternalService {
                service: self.service.to_owned(),
                step: self.step.to_owned(),
                detail: format!("transport failure: {boxed}"),
                source: Some(boxed),
            },
        }
    }
}

impl ServiceFailure for Error {
    fn class(&self) -> FailureClass {
        // Never consulted: `ServiceStep::classify` passes our own errors through first.
        FailureClass::Uncorrectable
    }
}

impl fmt::Display for RetrySignal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Throttled {
                retry_after,
                detail,
                ..
            } => {
                write!(f, "throttled (retry after {retry_after:?})")?;
                match detail {
                    Some(d) => write!(f, ": {d}"),
                    None => Ok(()),
                }
            }
            Self::Correction { reason } => write!(f, "correction: {reason}"),
            Self::TruncationEscalation => f.write_str("truncation escalation"),
            Self::Transient {
                service, detail, ..
            } => {
                write!(f, "transient failure of {service}: {detail}")
            }
            Self::UnreadableAnswer { service, detail } => {
                write!(f, "unreadable answer from {service}: {detail}")
            }
            Self::FormRefused { service, detail } => {
                write!(f, "{service} refused the request's form: {detail}")
            }
        }
    }
}

#[cfg(test)]
mod tests;

//! What a job asks admission for, and what it is granted.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::Limits;
use super::kernel::Permit;

/// Where an attempt stands in its retry budgets. Handed to `requirements` and `execute`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AttemptInfo {
    /// 1 for the first attempt.
    pub number: u32,
    /// Correction signals honoured so far.
    pub corrections: u32,
    /// Throttling waits so far.
    pub throttles: u32,
    /// Transient-failure retries so far.
    pub transient_retries: u32,
    /// Time spent so far in attempts that failed transiently, and in the waits after them: what
    /// a model call's per-call deadline is measured against.
    pub transient_time: std::time::Duration,
    /// Retries so far of answers that came back unreadable.
    pub unreadable_answers: u32,
    /// Retries so far after a service refused the request's form
    /// ([`crate::RetrySignal::FormRefused`]).
    pub form_refusals: u32,
    /// Whether this attempt runs under the truncation escalation (output budget at the ceiling).
    pub escalated: bool,
}

/// A model seat: one call to one catalog entry, priced from the exact body that goes on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seat {
    /// The catalog entry id (shared with the catalog: a seat is made for every model call).
    pub entry: Arc<str>,
    /// The admission budget the entry's limits live in (conventionally `model:<entry>`).
    pub budget: Arc<str>,
    /// Input tokens counted from the exact request body.
    pub input_tokens: u64,
    /// The output budget booked (the call's max tokens).
    pub output_tokens: u64,
    /// The reasoning budget booked.
    pub reasoning_tokens: u64,
}

impl Seat {
    /// The budget name for a catalog entry.
    pub fn budget_for(entry: &str) -> String {
        format!("model:{entry}")
    }

    /// Tokens this seat reserves.
    pub(crate) fn total_tokens(&self) -> u64 {
        self.input_tokens + self.output_tokens + self.reasoning_tokens
    }
}

/// The tokens a model call really used, as the provider reported them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SeatUse {
    /// Input tokens.
    pub input: u64,
    /// Output tokens (with reasoning).
    pub output: u64,
}

impl SeatUse {
    /// Nothing used: a refused (throttled) call, or one answered from a cache.
    pub const NONE: Self = Self {
        input: 0,
        output: 0,
    };

    /// Input and output together.
    pub(crate) fn total(self) -> u64 {
        self.input.saturating_add(self.output)
    }
}

/// One thing a job needs admitted.
#[derive(Debug, Clone, PartialEq)]
pub enum Requirement {
    /// A model seat.
    Seat(Seat),
    /// One slot of a named resource budget (for example `service:pubmed`): one request against its
    /// rate and one unit of its concurrency.
    Resource {
        /// The budget name.
        budget: Arc<str>,
        /// Limits to configure the budget with if the deployment has not configured it.
        default_limits: Option<Limits>,
    },
}

impl Requirement {
    /// What this requirement asks of its budget.
    pub(crate) fn ask(&self) -> Ask {
        match self {
            Self::Seat(seat) => Ask {
                budget: seat.budget.clone(),
                tokens: seat.total_tokens(),
                input_tokens: seat.input_tokens,
                output_tokens: seat.output_tokens + seat.reasoning_tokens,
                requests: 1,
                slots: 1,
            },
            Self::Resource { budget, .. } => Ask {
                budget: budget.clone(),
                tokens: 0,
                input_tokens: 0,
                output_tokens: 0,
                requests: 1,
                slots: 1,
            },
        }
    }
}

/// The amounts one requirement takes from one budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ask {
    /// The budget name (shared: an ask is made for every admission).
    pub budget: Arc<str>,
    /// Tokens against the budget's token rate (input and output together).
    pub tokens: u64,
    /// Of those, input tokens, against the budget's input-token rate.
    pub input_tokens: u64,
    /// Of those, output tokens (with reasoning), against the budget's output-token rate.
    pub output_tokens: u64,
    /// Requests against the budget's request rate.
    pub requests: u32,
    /// Units of the budget's concurrency.
    pub slots: u32,
}

/// What one attempt of a job needs admitted. Filled by [`crate::job::Job::requirements`].
#[derive(Debug, Default)]
pub struct Requirements {
    attempt: AttemptInfo,
    items: Vec<Requirement>,
}

impl Requirements {
    /// Requirements for an attempt.
    pub fn new(attempt: AttemptInfo) -> Self {
        Self {
            attempt,
            items: Vec::new(),
        }
    }

    /// The attempt being prepared (its number, whether it is escalated…).
    pub fn attempt(&self) -> AttemptInfo {
        self.attempt
    }

    /// Ask for a model seat.
    pub fn seat(&mut self, seat: Seat) -> &mut Self {
        self.items.push(Requirement::Seat(seat));
        self
    }

    /// Ask for one slot of a named resource budget.
    pub fn resource(
        &mut self,
        budget: impl Into<Arc<str>>,
        default_limits: Option<Limits>,
    ) -> &mut Self {
        self.items.push(Requirement::Resource {
            budget: budget.into(),
            default_limits,
        });
        self
    }

    /// Add any requirement.
    pub fn push(&mut self, r: Requirement) -> &mut Self {
        self.items.push(r);
        self
    }

    /// What has been asked so far.
    pub fn items(&self) -> &[Requirement] {
        &self.items
    }

    /// Whether nothing has been asked.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// What was asked, for admission.
    pub(in crate::job) fn into_items(self) -> Vec<Requirement> {
        self.items
    }
}

/// What one attempt was granted: admission's [`Permit`] and the attempt's place in its retry
/// budgets. Dropping it releases the reservation.
///
/// Only the dispatcher's attempt loop makes one, around the permit admission minted for the
/// attempt: it has no public constructor and a permit has none either
/// (`thinkers/tests/compile_fail/`). A model call is sent only against a seat it holds
/// (`thinkers::llm::converse_bound` spends the seat its request was priced for, once,
/// [`Resources::spend_seat`]), so a job cannot reach a model with a seat it was not admitted
/// for, nor twice on one admission.
#[derive(Debug)]
pub struct Resources {
    permit: Permit,
    attempt: AttemptInfo,
    seat_input: AtomicU64,
    seat_output: AtomicU64,
    /// The permit's seats already spent by a model call: bit `i` for requirement `i`.
    seats_spent: AtomicU64,
}

const UNREPORTED: u64 = u64::MAX;

impl Resources {
    /// The resources of an attempt admitted under `permit`: made by the attempt loop only.
    pub(in crate::job) fn new(permit: Permit, attempt: AttemptInfo) -> Self {
        Self {
            permit,
            attempt,
            seat_input: AtomicU64::new(UNREPORTED),
            seat_output: AtomicU64::new(UNREPORTED),
            seats_spent: AtomicU64::new(0),
        }
    }

    /// The attempt these resources were granted for.
    pub fn attempt(&self) -> AttemptInfo {
        self.attempt
    }

    /// The model seat granted, if the job asked for one.
    pub fn seat(&self) -> Option<&Seat> {
        self.permit.requirements().iter().find_map(|r| match r {
            Requirement::Seat(s) => Some(s),
            Requirement::Resource { .. } => None,
        })
    }

    /// Report the tokens the seat really used (as the provider reported them). When the job ends
    /// the reservation is reconciled with this figure and any surplus is given back. A job that
    /// never reports keeps its whole reservation booked, the conservative choice.
    pub fn report_seat_usage(&self, used: SeatUse) {
        self.seat_input
            .store(used.input.min(UNREPORTED - 1), Ordering::Relaxed);
        self.seat_output
            .store(used.output.min(UNREPORTED - 1), Ordering::Relaxed);
    }

    /// Reconcile the seat's reservation with the usage reported so far
    /// ([`Resources::report_seat_usage`]) now, rather than when the attempt ends: for a model
    /// call that has its answer and still has work to do before it returns. Nothing happens when
    /// no usage was reported (the whole reservation stays booked).
    pub fn settle_seat_now(&self) {
        if let Some(used) = self.reported_seat_use() {
            self.permit.settle_seat(used);
        }
    }

    fn reported_seat_use(&self) -> Option<SeatUse> {
        let input = self.seat_input.load(Ordering::Relaxed);
        let output = self.seat_output.load(Ordering::Relaxed);
        (input != UNREPORTED && output != UNREPORTED).then_some(SeatUse { input, output })
    }

    /// Spend the admitted seat `seat` for one model call: the first seat of the permit equal to
    /// it that no call has spent yet. A seat this attempt was not admitted for, or one already
    /// spent, is an [`crate::Error::System`]: the job asked admission for one thing and tried to
    /// send another. A model call spends its seat before it sends; spending only ever uses up
    /// what was admitted.
    pub fn spend_seat(&self, seat: &Seat) -> crate::Result<()> {
        for (i, r) in self.permit.requirements().iter().enumerate() {
            let Requirement::Seat(admitted) = r else {
                continue;
            };
            // A permit of more than 64 requirements has no bit for the rest: never spendable.
            let Some(bit) = u32::try_from(i).ok().and_then(|i| 1u64.checked_shl(i)) else {
                break;
            };
            if admitted == seat && self.seats_spent.fetch_or(bit, Ordering::AcqRel) & bit == 0 {
                return Ok(());
            }
        }
        Err(crate::Error::system(
            "model call",
            format!(
                "no unspent admitted seat on `{}` for this call: a model call is sent only \
                 under a seat its job asked for in `requirements` and was admitted for, once",
                seat.entry
            ),
        ))
    }

    /// Reconcile the seat with the usage reported and release everything: the attempt loop's
    /// last step of an attempt.
    pub(in crate::job) fn settle(self) {
        let used = self.reported_seat_use();
        self.permit.settle(used);
    }
}

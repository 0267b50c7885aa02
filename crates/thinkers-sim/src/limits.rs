//! Per-model limits, enforced the ways real providers enforce them.
//!
//! **Kinds** (each `None` is unlimited):
//! - requests per minute (`rpm`);
//! - tokens per minute (`tpm`), input + output;
//! - input tokens per minute (`itpm`) and output tokens per minute (`otpm`), separately, as
//!   Anthropic and Bedrock have them;
//! - concurrency (`max_concurrency`): requests in flight at once, from admission until the answer
//!   has been sent (or the client went away).
//!
//! **Shapes** ([`LimitShape`], one per model, for every per-minute kind):
//! - `sliding` (the default): in any window of `W` (60 s unless `limit_window_ms` says shorter),
//!   at most the figure × W / 60 s, pro rata: `tpm = 150000` over 10 s admits 25,000 tokens in any
//!   10 seconds;
//! - `fixed`: the same allowance per fixed window of `W`, the windows aligned to the sim's start
//!   (or its last reset); usage starts again from zero at each boundary;
//! - `token_bucket`: a bucket holding the figure × W / 60 s (W is 60 s unless set: capacity = the
//!   per-minute figure), full at start, refilled continuously at figure / 60 per second, as
//!   Anthropic documents; a request takes its cost out of the bucket.
//!
//! **Charging.** At admission a request is charged, per kind: 1 request; input estimate (see
//! [`crate::tokens`]) + the output it asked for (`max_tokens` / `max_completion_tokens`) tokens;
//! its input estimate input tokens; the output it asked for output tokens. Once the answer is
//! known the charge is settled to what it really cost (input + the output produced), so unused
//! output is given back, as Anthropic describes for its OTPM limit and as a client reconciling its
//! reservations expects. A fixed window only settles a charge it still holds (a charge made in an
//! earlier window left with that window); a bucket settles by putting back (or taking out) the
//! difference.
//!
//! **Refusals.** A request that does not fit every limit is refused (429) and charged nothing. The
//! refusal names the limit that binds longest and the true time until the request would fit (the
//! longest wait over the limits it breaks); a request larger than a whole allowance is "too large"
//! (waiting will not help). A concurrency refusal cannot know when a request in flight will end: it
//! asks for [`CONCURRENCY_RETRY`].

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

mod meter;

use meter::{Clock, Meter};

/// The length of a window (and the period of the per-minute figures) unless a model sets another.
pub const WINDOW: Duration = Duration::from_secs(60);

/// The wait a concurrency refusal asks for (the sim cannot know when a request in flight ends).
pub const CONCURRENCY_RETRY: Duration = Duration::from_secs(1);

/// How a model's per-minute figures are enforced (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum LimitShape {
    /// A sliding window of the model's `limit_window_ms` (60 s by default), pro rata.
    #[default]
    Sliding,
    /// Fixed windows of `limit_window_ms` aligned to the sim's start, resetting at each boundary.
    Fixed,
    /// A bucket holding the per-minute figure (pro rata for a `limit_window_ms`), refilled
    /// continuously at figure / 60 per second.
    TokenBucket,
}

impl LimitShape {
    /// The name used in configurations: `sliding`, `fixed` or `token_bucket`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Sliding => "sliding",
            Self::Fixed => "fixed",
            Self::TokenBucket => "token_bucket",
        }
    }
}

impl fmt::Display for LimitShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A `limit_shape` value that names no shape.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown limit_shape `{value}`: expected `sliding`, `fixed` or `token_bucket`")]
pub struct UnknownLimitShape {
    /// The value that was given.
    pub value: String,
}

impl FromStr for LimitShape {
    type Err = UnknownLimitShape;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "sliding" => Ok(Self::Sliding),
            "fixed" => Ok(Self::Fixed),
            "token_bucket" => Ok(Self::TokenBucket),
            other => Err(UnknownLimitShape {
                value: other.to_owned(),
            }),
        }
    }
}

impl TryFrom<String> for LimitShape {
    type Error = UnknownLimitShape;

    fn try_from(value: String) -> Result<Self, Self::Error> {
        value.parse()
    }
}

impl From<LimitShape> for String {
    fn from(shape: LimitShape) -> Self {
        shape.as_str().to_owned()
    }
}

/// Which limit refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitKind {
    /// Requests per minute (`rpm`).
    Requests,
    /// Tokens per minute, input + output (`tpm`).
    Tokens,
    /// Input tokens per minute (`itpm`).
    InputTokens,
    /// Output tokens per minute (`otpm`).
    OutputTokens,
    /// Requests in flight (`max_concurrency`).
    Concurrency,
}

impl LimitKind {
    /// The per-minute kinds, in the order they are checked.
    const METERED: [Self; 4] = [
        Self::Requests,
        Self::Tokens,
        Self::InputTokens,
        Self::OutputTokens,
    ];
}

/// A model's limits; `None` is unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    pub(crate) rpm: Option<u64>,
    pub(crate) tpm: Option<u64>,
    pub(crate) itpm: Option<u64>,
    pub(crate) otpm: Option<u64>,
    pub(crate) max_concurrency: Option<u64>,
    pub(crate) shape: LimitShape,
    /// The window (sliding or fixed) the figures are enforced over, pro rata; for a bucket, the
    /// time the capacity lasts at the refill rate.
    pub(crate) window: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            rpm: None,
            tpm: None,
            itpm: None,
            otpm: None,
            max_concurrency: None,
            shape: LimitShape::Sliding,
            window: WINDOW,
        }
    }
}

impl Limits {
    /// The configured figure of a kind: per minute, or the most requests in flight.
    pub(crate) fn figure(self, kind: LimitKind) -> Option<u64> {
        match kind {
            LimitKind::Requests => self.rpm,
            LimitKind::Tokens => self.tpm,
            LimitKind::InputTokens => self.itpm,
            LimitKind::OutputTokens => self.otpm,
            LimitKind::Concurrency => self.max_concurrency,
        }
    }

    /// A per-minute figure's share of the window (at least 1): what a window admits, or what a
    /// bucket holds.
    pub(crate) fn allowance(self, per_minute: u64) -> u64 {
        let share = u128::from(per_minute) * self.window.as_nanos() / WINDOW.as_nanos();
        u64::try_from(share).unwrap_or(u64::MAX).max(1)
    }
}

/// What a request costs: its input tokens and its output tokens (asked for at admission, produced
/// at settlement).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Cost {
    pub(crate) input: u64,
    pub(crate) output: u64,
}

impl Cost {
    fn of(self, kind: LimitKind) -> u64 {
        match kind {
            LimitKind::Requests | LimitKind::Concurrency => 1,
            LimitKind::Tokens => self.input.saturating_add(self.output),
            LimitKind::InputTokens => self.input,
            LimitKind::OutputTokens => self.output,
        }
    }
}

/// The state of one limit, as the rate-limit headers report it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MeterState {
    /// The configured per-minute figure.
    pub(crate) figure: u64,
    /// What could be admitted right now.
    pub(crate) remaining: u64,
    /// The time until the limit is fully replenished (zero when it is).
    pub(crate) reset: Duration,
}

/// The state of every per-minute limit a model has.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct RateState {
    pub(crate) requests: Option<MeterState>,
    pub(crate) tokens: Option<MeterState>,
    pub(crate) input_tokens: Option<MeterState>,
    pub(crate) output_tokens: Option<MeterState>,
}

impl RateState {
    pub(crate) fn get(&self, kind: LimitKind) -> Option<MeterState> {
        match kind {
            LimitKind::Requests => self.requests,
            LimitKind::Tokens => self.tokens,
            LimitKind::InputTokens => self.input_tokens,
            LimitKind::OutputTokens => self.output_tokens,
            LimitKind::Concurrency => None,
        }
    }

    fn slot(&mut self, kind: LimitKind) -> Option<&mut Option<MeterState>> {
        match kind {
            LimitKind::Requests => Some(&mut self.requests),
            LimitKind::Tokens => Some(&mut self.tokens),
            LimitKind::InputTokens => Some(&mut self.input_tokens),
            LimitKind::OutputTokens => Some(&mut self.output_tokens),
            LimitKind::Concurrency => None,
        }
    }

    /// Whether the model has any per-minute limit to report.
    pub(crate) fn any(&self) -> bool {
        LimitKind::METERED.iter().any(|k| self.get(*k).is_some())
    }
}

/// Why a request was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub(crate) kind: LimitKind,
    /// The request alone exceeds the allowance: waiting will not help.
    pub(crate) too_large: bool,
    /// How long until the request would fit (zero when `too_large`).
    pub(crate) retry_after: Duration,
    /// The binding limit's figure (per minute, or the most requests in flight).
    pub(crate) figure: u64,
    /// What the binding limit has in use (in its window, out of its bucket, or in flight).
    pub(crate) used: u64,
    /// What the request asked of the binding limit.
    pub(crate) requested: u64,
    pub(crate) state: RateState,
}

/// An admitted request: its id (to settle and finish it) and the requests in flight with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ticket {
    pub(crate) id: u64,
    pub(crate) generation: u64,
    pub(crate) in_flight: u64,
}

/// An admitted request not finished yet.
#[derive(Debug, Clone, Copy)]
struct Pending {
    at: Instant,
    cost: Cost,
    settled: bool,
}

/// One model's limits and their usage.
#[derive(Debug)]
pub(crate) struct Window {
    limits: Limits,
    clock: Clock,
    meters: Vec<Meter>,
    pending: HashMap<u64, Pending>,
    in_flight: u64,
    next_id: u64,
    /// Bumped by [`Window::clear`], so requests admitted before a reset finish without effect.
    generation: u64,
}

impl Window {
    /// The usage of `limits`, starting empty (buckets full) at `origin`, where fixed windows are
    /// aligned.
    pub(crate) fn new(limits: Limits, origin: Instant) -> Self {
        let mut window = Self {
            limits,
            clock: Clock {
                window: limits.window,
                origin,
            },
            meters: Vec::new(),
            pending: HashMap::new(),
            in_flight: 0,
            next_id: 0,
            generation: 0,
        };
        window.clear_at(origin);
        window
    }

    fn advance(&mut self, now: Instant) {
        let clock = self.clock;
        for meter in &mut self.meters {
            meter.advance(now, &clock);
        }
    }

    fn state(&self, now: Instant) -> RateState {
        let mut state = RateState::default();
        for meter in &self.meters {
            if let Some(slot) = state.slot(meter.kind) {
                *slot = Some(meter.state(now, &self.clock));
            }
        }
        state
    }

    /// The state of the limits at `now`.
    #[cfg(test)]
    pub(crate) fn state_at(&mut self, now: Instant) -> RateState {
        self.advance(now);
        self.state(now)
    }

    /// Admits a request costing `cost`, or says why not. The ticket's id settles and finishes it.
    pub(crate) fn admit(&mut self, now: Instant, cost: Cost) -> Result<Ticket, Box<Refusal>> {
        self.advance(now);
        if let Some(max) = self.limits.max_concurrency
            && self.in_flight >= max
        {
            return Err(Box::new(Refusal {
                kind: LimitKind::Concurrency,
                too_large: false,
                retry_after: CONCURRENCY_RETRY,
                figure: max,
                used: self.in_flight,
                requested: 1,
                state: self.state(now),
            }));
        }
        // The request fits once every limit it breaks has room: the longest wait binds.
        let mut binding: Option<(&Meter, Option<Duration>)> = None;
        for meter in &self.meters {
            match meter.wait_for(cost.of(meter.kind), now, &self.clock) {
                None => {
                    binding = Some((meter, None));
                    break;
                }
                Some(wait) if wait.is_zero() => {}
                Some(wait) => {
                    let longer = binding.is_none_or(|(_, w)| w.is_some_and(|w| wait > w));
                    if longer {
                        binding = Some((meter, Some(wait)));
                    }
                }
            }
        }
        if let Some((meter, wait)) = binding {
            return Err(Box::new(Refusal {
                kind: meter.kind,
                too_large: wait.is_none(),
                retry_after: wait.unwrap_or_default(),
                figure: meter.figure,
                used: meter.used(),
                requested: cost.of(meter.kind),
                state: self.state(now),
            }));
        }
        let id = self.next_id;
        self.next_id += 1;
        for meter in &mut self.meters {
            meter.charge(cost.of(meter.kind), id, now);
        }
        self.pending.insert(
            id,
            Pending {
                at: now,
                cost,
                settled: false,
            },
        );
        self.in_flight += 1;
        Ok(Ticket {
            id,
            generation: self.generation,
            in_flight: self.in_flight,
        })
    }

    /// Sets the charge of an admitted request to what it really cost, and reports the state after
    /// it (for the success headers). A request is settled once; later calls only report.
    pub(crate) fn settle(&mut self, now: Instant, id: u64, actual: Cost) -> RateState {
        if let Some(pending) = self.pending.get_mut(&id)
            && !pending.settled
        {
            pending.settled = true;
            let (at, reserved) = (pending.at, pending.cost);
            let clock = self.clock;
            for meter in &mut self.meters {
                let (old, new) = (reserved.of(meter.kind), actual.of(meter.kind));
                meter.settle(id, at, old, new, &clock);
            }
        }
        self.advance(now);
        self.state(now)
    }

    /// The request left the sim (its answer was sent, or its client went away): it is no longer in
    /// flight. A request never settled keeps what it was charged at admission.
    pub(crate) fn finish(&mut self, id: u64, generation: u64) {
        if generation != self.generation {
            return;
        }
        if self.pending.remove(&id).is_some() {
            self.in_flight = self.in_flight.saturating_sub(1);
        }
    }

    /// Requests in flight.
    #[cfg(test)]
    pub(crate) fn in_flight(&self) -> u64 {
        self.in_flight
    }

    fn clear_at(&mut self, now: Instant) {
        self.clock.origin = now;
        self.meters = LimitKind::METERED
            .iter()
            .filter_map(|kind| {
                self.limits
                    .figure(*kind)
                    .map(|figure| Meter::new(*kind, figure, self.limits, now))
            })
            .collect();
        self.pending.clear();
        self.in_flight = 0;
        self.generation += 1;
    }

    /// Back to empty windows and full buckets, fixed windows realigned to `now`; requests in
    /// flight are forgotten.
    pub(crate) fn clear(&mut self, now: Instant) {
        self.clear_at(now);
    }
}

/// Formats a duration the way OpenAI's reset headers do (Go's `Duration.String`): `250ms`,
/// `1.5s`, `6m0s`, `1h2m3s`, `0s`.
pub fn go_duration(d: Duration) -> String {
    let total_ms = d.as_millis();
    if total_ms == 0 {
        return if d.is_zero() {
            "0s".to_owned()
        } else {
            "1ms".to_owned()
        };
    }
    if total_ms < 1000 {
        return format!("{total_ms}ms");
    }
    let hours = total_ms / 3_600_000;
    let minutes = (total_ms / 60_000) % 60;
    let millis = total_ms % 60_000;
    let seconds = if millis.is_multiple_of(1000) {
        format!("{}", millis / 1000)
    } else {
        let text = format!("{}.{:03}", millis / 1000, millis % 1000);
        text.trim_end_matches('0').to_owned()
    };
    if hours > 0 {
        format!("{hours}h{minutes}m{seconds}s")
    } else if minutes > 0 {
        format!("{minutes}m{seconds}s")
    } else {
        format!("{seconds}s")
    }
}

#[cfg(test)]
mod tests;

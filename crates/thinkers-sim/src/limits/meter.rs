//! One per-minute limit's usage in its shape (sliding events, a fixed window's count, a bucket's
//! level) and the clock the windows are measured by.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;

use super::{LimitKind, LimitShape, Limits, MeterState};

/// Nanoseconds in a minute: a token bucket counts in 1/`MINUTE_NS` of a token, so that refilling
/// at figure / 60 s is exact integer arithmetic (figure units per nanosecond).
const MINUTE_NS: i128 = 60_000_000_000;

/// `a / b` rounded up, for `a >= 0` and `b > 0`.
fn ceil_div(a: i128, b: i128) -> i128 {
    let (q, r) = (a / b, a % b);
    if r > 0 { q + 1 } else { q }
}

#[derive(Debug, Clone, Copy)]
struct Event {
    at: Instant,
    amount: u64,
    id: u64,
}

/// One per-minute limit's usage, in its shape.
#[derive(Debug)]
enum Usage {
    Sliding {
        events: VecDeque<Event>,
        used: u64,
    },
    Fixed {
        /// The index of the window `used` belongs to.
        index: u128,
        used: u64,
    },
    Bucket {
        /// The level, in 1/`MINUTE_NS` of a unit; may go below zero when a settlement takes more
        /// than was reserved.
        level: i128,
        at: Instant,
    },
}

/// One per-minute limit: its figure, allowance and usage.
#[derive(Debug)]
pub(super) struct Meter {
    pub(super) kind: LimitKind,
    pub(super) figure: u64,
    allowance: u64,
    usage: Usage,
}

impl Meter {
    pub(super) fn new(kind: LimitKind, figure: u64, limits: Limits, origin: Instant) -> Self {
        let allowance = limits.allowance(figure);
        let usage = match limits.shape {
            LimitShape::Sliding => Usage::Sliding {
                events: VecDeque::new(),
                used: 0,
            },
            LimitShape::Fixed => Usage::Fixed { index: 0, used: 0 },
            LimitShape::TokenBucket => Usage::Bucket {
                level: i128::from(allowance) * MINUTE_NS,
                at: origin,
            },
        };
        Self {
            kind,
            figure,
            allowance,
            usage,
        }
    }

    fn capacity(&self) -> i128 {
        i128::from(self.allowance) * MINUTE_NS
    }

    /// Brings the usage to `now`: old events leave, a new fixed window starts, the bucket refills.
    pub(super) fn advance(&mut self, now: Instant, clock: &Clock) {
        let capacity = self.capacity();
        let figure = i128::from(self.figure);
        match &mut self.usage {
            Usage::Sliding { events, used } => {
                while let Some(front) = events.front() {
                    if now.saturating_duration_since(front.at) >= clock.window {
                        *used = used.saturating_sub(front.amount);
                        events.pop_front();
                    } else {
                        break;
                    }
                }
            }
            Usage::Fixed { index, used } => {
                let current = clock.index(now);
                if current != *index {
                    *index = current;
                    *used = 0;
                }
            }
            Usage::Bucket { level, at } => {
                let elapsed = i128::try_from(now.saturating_duration_since(*at).as_nanos())
                    .unwrap_or(i128::MAX);
                *level = level
                    .saturating_add(elapsed.saturating_mul(figure))
                    .min(capacity);
                *at = (*at).max(now);
            }
        }
    }

    /// What is in use: in the window, or taken out of the bucket.
    pub(super) fn used(&self) -> u64 {
        match &self.usage {
            Usage::Sliding { used, .. } | Usage::Fixed { used, .. } => *used,
            Usage::Bucket { level, .. } => {
                let taken = (self.capacity() - *level).max(0);
                u64::try_from(ceil_div(taken, MINUTE_NS)).unwrap_or(u64::MAX)
            }
        }
    }

    /// What could be admitted right now.
    pub(super) fn remaining(&self) -> u64 {
        match &self.usage {
            Usage::Sliding { used, .. } | Usage::Fixed { used, .. } => {
                self.allowance.saturating_sub(*used)
            }
            Usage::Bucket { level, .. } => {
                u64::try_from((*level).max(0) / MINUTE_NS).unwrap_or(u64::MAX)
            }
        }
    }

    /// The time until the limit is fully replenished.
    fn reset(&self, now: Instant, clock: &Clock) -> Duration {
        match &self.usage {
            Usage::Sliding { events, .. } => events
                .iter()
                .rev()
                .find(|e| e.amount > 0)
                .map_or(Duration::ZERO, |e| clock.expiry(e.at, now)),
            Usage::Fixed { used, .. } if *used == 0 => Duration::ZERO,
            Usage::Fixed { .. } => clock.until_boundary(now),
            Usage::Bucket { level, .. } => self.refill_time(self.capacity() - *level),
        }
    }

    /// The time the bucket takes to refill `missing` (in 1/`MINUTE_NS` units), rounded up.
    fn refill_time(&self, missing: i128) -> Duration {
        if missing <= 0 {
            return Duration::ZERO;
        }
        let ns = ceil_div(missing, i128::from(self.figure.max(1)));
        Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
    }

    /// `None` when `amount` exceeds the whole allowance; otherwise the wait until it fits (zero
    /// when it fits now).
    pub(super) fn wait_for(&self, amount: u64, now: Instant, clock: &Clock) -> Option<Duration> {
        if amount > self.allowance {
            return None;
        }
        match &self.usage {
            Usage::Sliding { events, used } => {
                if used.saturating_add(amount) <= self.allowance {
                    return Some(Duration::ZERO);
                }
                let mut freed = 0u64;
                for event in events {
                    freed += event.amount;
                    if used.saturating_sub(freed).saturating_add(amount) <= self.allowance {
                        return Some(clock.expiry(event.at, now));
                    }
                }
                Some(clock.window)
            }
            Usage::Fixed { used, .. } => {
                if used.saturating_add(amount) <= self.allowance {
                    Some(Duration::ZERO)
                } else {
                    Some(clock.until_boundary(now))
                }
            }
            Usage::Bucket { level, .. } => {
                Some(self.refill_time(i128::from(amount) * MINUTE_NS - *level))
            }
        }
    }

    pub(super) fn charge(&mut self, amount: u64, id: u64, now: Instant) {
        match &mut self.usage {
            Usage::Sliding { events, used } => {
                events.push_back(Event {
                    at: now,
                    amount,
                    id,
                });
                *used = used.saturating_add(amount);
            }
            Usage::Fixed { used, .. } => *used = used.saturating_add(amount),
            Usage::Bucket { level, .. } => *level -= i128::from(amount) * MINUTE_NS,
        }
    }

    /// Changes the charge of request `id`, made at `at` for `old`, to `new`.
    pub(super) fn settle(&mut self, id: u64, at: Instant, old: u64, new: u64, clock: &Clock) {
        if old == new {
            return;
        }
        let capacity = self.capacity();
        match &mut self.usage {
            Usage::Sliding { events, used } => {
                if let Some(event) = events.iter_mut().rev().find(|e| e.id == id) {
                    *used = used.saturating_sub(event.amount).saturating_add(new);
                    event.amount = new;
                }
            }
            Usage::Fixed { index, used } => {
                if clock.index(at) == *index {
                    *used = used.saturating_sub(old).saturating_add(new);
                }
            }
            Usage::Bucket { level, .. } => {
                let back = i128::from(old) - i128::from(new);
                *level = (*level + back * MINUTE_NS).min(capacity);
            }
        }
    }

    pub(super) fn state(&self, now: Instant, clock: &Clock) -> MeterState {
        MeterState {
            figure: self.figure,
            remaining: self.remaining(),
            reset: self.reset(now, clock),
        }
    }
}

/// The window length and, for fixed windows, their origin.
#[derive(Debug, Clone, Copy)]
pub(super) struct Clock {
    pub(super) window: Duration,
    pub(super) origin: Instant,
}

impl Clock {
    fn expiry(&self, at: Instant, now: Instant) -> Duration {
        (at + self.window).saturating_duration_since(now)
    }

    fn index(&self, at: Instant) -> u128 {
        at.saturating_duration_since(self.origin).as_nanos() / self.window.as_nanos().max(1)
    }

    /// The time until the next fixed-window boundary.
    fn until_boundary(&self, now: Instant) -> Duration {
        let window = self.window.as_nanos().max(1);
        let elapsed = now.saturating_duration_since(self.origin).as_nanos();
        let left = window - elapsed % window;
        Duration::from_nanos(u64::try_from(left).unwrap_or(u64::MAX))
    }
}

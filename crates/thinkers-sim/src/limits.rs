//! Per-model request and token limits over a sliding window: 60 seconds by default, or shorter
//! (`SimModel::limit_window`), in which case the per-minute figures are enforced pro rata, as
//! providers do: `tpm = 150000` over 10 s admits 25,000 tokens in any 10 seconds. The limit
//! headers then state the window's allowance (25,000), the remaining headers what is left of it.
//!
//! Each admitted request leaves an event (time, tokens) in its model's window. At admission the
//! request is charged its input estimate (see [`crate::tokens`]) plus the output tokens it asked
//! for (`max_tokens` / `max_completion_tokens`); once the answer is known the event is settled to
//! input + the output actually produced, so unused output is given back, as a client reconciling
//! its reservations would expect. Events older than the window leave it.
//!
//! A request that does not fit is refused (429) and leaves no event. The refusal says which limit
//! bound (requests or tokens) and when the request would fit.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;

/// The length of the sliding window unless a model sets a shorter one.
pub const WINDOW: Duration = Duration::from_secs(60);

/// A model's limits; `None` is unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    pub(crate) rpm: Option<u64>,
    pub(crate) tpm: Option<u64>,
    /// The sliding window the figures are enforced over, pro rata.
    pub(crate) window: Duration,
}

impl Limits {
    pub(crate) fn any(self) -> bool {
        self.rpm.is_some() || self.tpm.is_some()
    }

    /// A per-minute figure's share of the window (at least 1).
    fn share(self, per_minute: u64) -> u64 {
        let share = u128::from(per_minute) * self.window.as_millis() / WINDOW.as_millis();
        u64::try_from(share).unwrap_or(u64::MAX).max(1)
    }

    /// Requests the window admits.
    pub(crate) fn requests(self) -> Option<u64> {
        self.rpm.map(|r| self.share(r))
    }

    /// Tokens the window admits.
    pub(crate) fn tokens(self) -> Option<u64> {
        self.tpm.map(|t| self.share(t))
    }
}

/// Which limit refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LimitKind {
    Requests,
    Tokens,
}

/// The figures the rate-limit headers report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RateState {
    pub(crate) limits: Limits,
    pub(crate) remaining_requests: u64,
    pub(crate) remaining_tokens: u64,
    /// When the next request slot frees (zero when the window is empty).
    pub(crate) reset_requests: Duration,
    /// When the oldest tokens leave the window (zero when the window is empty).
    pub(crate) reset_tokens: Duration,
}

/// Why a request was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub(crate) kind: LimitKind,
    /// The request alone exceeds the token limit: waiting will not help.
    pub(crate) too_large: bool,
    /// How long until the request would fit (zero when `too_large`).
    pub(crate) retry_after: Duration,
    /// Tokens in use in the window, for the message.
    pub(crate) used_tokens: u64,
    /// Tokens the request asked for.
    pub(crate) requested_tokens: u64,
    pub(crate) state: RateState,
}

#[derive(Debug, Clone, Copy)]
struct Event {
    at: Instant,
    tokens: u64,
    id: u64,
}

/// One model's window.
#[derive(Debug, Default)]
pub(crate) struct Window {
    events: VecDeque<Event>,
    tokens: u64,
    next_id: u64,
}

impl Window {
    fn prune(&mut self, now: Instant, window: Duration) {
        while let Some(front) = self.events.front() {
            if now.saturating_duration_since(front.at) >= window {
                self.tokens -= front.tokens;
                self.events.pop_front();
            } else {
                break;
            }
        }
    }

    fn expiry(event: &Event, now: Instant, window: Duration) -> Duration {
        (event.at + window).saturating_duration_since(now)
    }

    fn state(&self, now: Instant, limits: Limits) -> RateState {
        let reset = self
            .events
            .front()
            .map_or(Duration::ZERO, |e| Self::expiry(e, now, limits.window));
        RateState {
            limits,
            remaining_requests: limits
                .requests()
                .map_or(u64::MAX, |l| l.saturating_sub(self.events.len() as u64)),
            remaining_tokens: limits
                .tokens()
                .map_or(u64::MAX, |l| l.saturating_sub(self.tokens)),
            reset_requests: reset,
            reset_tokens: reset,
        }
    }

    /// Admits a request costing `tokens`, or says why not. Returns the event id to settle later.
    pub(crate) fn admit(
        &mut self,
        now: Instant,
        limits: Limits,
        tokens: u64,
    ) -> Result<u64, Box<Refusal>> {
        let window = limits.window;
        self.prune(now, window);
        if let Some(rpm) = limits.requests()
            && self.events.len() as u64 >= rpm
        {
            // The request fits once enough of the oldest events have left the window.
            let excess = (self.events.len() as u64 + 1).saturating_sub(rpm) as usize;
            let wait = self
                .events
                .get(excess.saturating_sub(1))
                .map_or(window, |e| Self::expiry(e, now, window));
            return Err(Box::new(self.refusal(
                now,
                limits,
                LimitKind::Requests,
                tokens,
                wait,
                false,
            )));
        }
        if let Some(tpm) = limits.tokens() {
            if tokens > tpm {
                return Err(Box::new(self.refusal(
                    now,
                    limits,
                    LimitKind::Tokens,
                    tokens,
                    Duration::ZERO,
                    true,
                )));
            }
            if self.tokens + tokens > tpm {
                let mut freed = 0;
                let mut wait = window;
                for event in &self.events {
                    freed += event.tokens;
                    if self.tokens - freed + tokens <= tpm {
                        wait = Self::expiry(event, now, window);
                        break;
                    }
                }
                return Err(Box::new(self.refusal(
                    now,
                    limits,
                    LimitKind::Tokens,
                    tokens,
                    wait,
                    false,
                )));
            }
        }
        let id = self.next_id;
        self.next_id += 1;
        self.events.push_back(Event {
            at: now,
            tokens,
            id,
        });
        self.tokens += tokens;
        Ok(id)
    }

    fn refusal(
        &self,
        now: Instant,
        limits: Limits,
        kind: LimitKind,
        tokens: u64,
        wait: Duration,
        too_large: bool,
    ) -> Refusal {
        Refusal {
            kind,
            too_large,
            retry_after: wait,
            used_tokens: self.tokens,
            requested_tokens: tokens,
            state: self.state(now, limits),
        }
    }

    /// Sets the tokens of an admitted request to what it really cost, and reports the state after
    /// it (for the success headers).
    pub(crate) fn settle(
        &mut self,
        now: Instant,
        limits: Limits,
        id: u64,
        tokens: u64,
    ) -> RateState {
        if let Some(event) = self.events.iter_mut().rev().find(|e| e.id == id) {
            self.tokens = self.tokens - event.tokens + tokens;
            event.tokens = tokens;
        }
        self.prune(now, limits.window);
        self.state(now, limits)
    }

    pub(crate) fn clear(&mut self) {
        self.events.clear();
        self.tokens = 0;
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
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        assert_eq!(go_duration(Duration::ZERO), "0s");
        assert_eq!(go_duration(Duration::from_micros(10)), "1ms");
        assert_eq!(go_duration(Duration::from_millis(250)), "250ms");
        assert_eq!(go_duration(Duration::from_millis(1500)), "1.5s");
        assert_eq!(go_duration(Duration::from_secs(1)), "1s");
        assert_eq!(go_duration(Duration::from_secs(360)), "6m0s");
        assert_eq!(go_duration(Duration::from_millis(61_250)), "1m1.25s");
        assert_eq!(go_duration(Duration::from_secs(3723)), "1h2m3s");
    }

    #[tokio::test(start_paused = true)]
    async fn requests_per_minute_slide() {
        let limits = Limits {
            rpm: Some(2),
            tpm: None,
            window: WINDOW,
        };
        let mut w = Window::default();
        let t0 = Instant::now();
        w.admit(t0, limits, 1).unwrap();
        w.admit(t0 + Duration::from_secs(10), limits, 1).unwrap();
        let refused = w
            .admit(t0 + Duration::from_secs(20), limits, 1)
            .unwrap_err();
        assert_eq!(refused.kind, LimitKind::Requests);
        assert_eq!(refused.retry_after, Duration::from_secs(40));
        assert_eq!(refused.state.remaining_requests, 0);
        w.admit(t0 + Duration::from_secs(60), limits, 1).unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn tokens_per_minute_with_settling() {
        let limits = Limits {
            rpm: None,
            tpm: Some(100),
            window: WINDOW,
        };
        let mut w = Window::default();
        let t0 = Instant::now();
        let a = w.admit(t0, limits, 80).unwrap();
        let refused = w.admit(t0, limits, 30).unwrap_err();
        assert_eq!(refused.kind, LimitKind::Tokens);
        assert!(!refused.too_large);
        assert_eq!(refused.retry_after, WINDOW);
        // Giving back unused output makes room.
        let state = w.settle(t0, limits, a, 50);
        assert_eq!(state.remaining_tokens, 50);
        w.admit(t0 + Duration::from_secs(5), limits, 30).unwrap();
        let huge = w.admit(t0, limits, 101).unwrap_err();
        assert!(huge.too_large);
        let refused = w
            .admit(t0 + Duration::from_secs(6), limits, 40)
            .unwrap_err();
        assert_eq!(refused.retry_after, Duration::from_secs(54));
    }

    #[tokio::test(start_paused = true)]
    async fn a_per_minute_figure_over_ten_seconds_admits_its_share() {
        let limits = Limits {
            rpm: None,
            tpm: Some(150_000),
            window: Duration::from_secs(10),
        };
        let mut w = Window::default();
        let t0 = Instant::now();
        w.admit(t0, limits, 20_000).unwrap();
        let refused = w.admit(t0, limits, 5_001).unwrap_err();
        assert_eq!(refused.state.remaining_tokens, 5_000);
        assert_eq!(refused.retry_after, Duration::from_secs(10));
        w.admit(t0, limits, 5_000).unwrap();
        w.admit(t0 + Duration::from_secs(10), limits, 25_000)
            .unwrap();
    }
}

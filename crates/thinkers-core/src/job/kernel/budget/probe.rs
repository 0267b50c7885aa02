//! The slow start of a budget without figures: see [`Probe`].

use std::time::Duration;

use tokio::time::Instant;

use super::Axis;
use crate::job::Limits;

/// Model calls on a budget the catalog gave no rate start slowly: the first goes out alone, so
/// the provider's answer (its rate-limit headers) can state the limits before a burst reaches
/// it, and each call that ends lets one more be out at once than before (twice as many per round
/// trip), until the budget is paced (a header stated a figure or a throttle taught one). A
/// provider that states nothing thus refuses the first few calls beyond its limit, not every
/// call in flight.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub enum Probe {
    /// No call has gone out yet.
    #[default]
    Ahead,
    /// At most `window` calls out at once: `asking` asked and not yet granted or refused (the
    /// last since `since`), and those granted under the leases `out`.
    Ramp {
        /// How many calls may be out at once.
        window: usize,
        /// Calls asked and not yet granted or refused.
        asking: usize,
        /// When the last of those asked.
        since: Instant,
        /// The leases of the calls out.
        out: Vec<u64>,
    },
    /// Done: the budget admits as its limits say.
    Done,
}

/// How long a call may be asked for without being granted (its asker went away) before its
/// place in the window is given to the next ask.
const PROBE_ASKING: Duration = Duration::from_secs(30);

impl Probe {
    /// Whether an ask of `tokens` on a budget with `limits` must wait for a call out to end; an
    /// ask that need not takes a place in the window.
    pub fn holds(&mut self, limits: &Limits, tokens: u64) -> bool {
        if tokens == 0 || Axis::ALL.iter().any(|a| a.rate(limits).is_some()) {
            return false;
        }
        let now = Instant::now();
        match self {
            Self::Ahead => {
                *self = Self::Ramp {
                    window: 1,
                    asking: 1,
                    since: now,
                    out: Vec::new(),
                };
                false
            }
            Self::Ramp {
                window,
                asking,
                since,
                out,
            } => {
                if *asking > 0 && now.saturating_duration_since(*since) > PROBE_ASKING {
                    *asking = 0;
                }
                if out.len() + *asking >= *window {
                    return true;
                }
                *asking += 1;
                *since = now;
                false
            }
            Self::Done => false,
        }
    }

    /// The ask that took a place was granted as lease `id`.
    pub fn granted(&mut self, id: u64) {
        if let Self::Ramp { asking, out, .. } = self
            && *asking > 0
        {
            *asking -= 1;
            out.push(id);
        }
    }

    /// The ask that took a place was not granted after all: its place is free.
    pub fn not_sent(&mut self) {
        if let Self::Ramp { asking, .. } = self {
            *asking = asking.saturating_sub(1);
        }
    }

    /// Lease `id` ended: if it was out in the window, the window grows by one.
    pub fn ended(&mut self, id: u64) {
        if let Self::Ramp { window, out, .. } = self
            && let Some(i) = out.iter().position(|&o| o == id)
        {
            out.swap_remove(i);
            *window += 1;
        }
    }

    /// The budget is paced now (a header stated a figure, a throttle taught one).
    pub fn paced(&mut self) {
        *self = Self::Done;
    }
}

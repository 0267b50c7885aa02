//! The limits of an admission budget: the rates and concurrency a requirement may name as the
//! defaults of the budget it asks for. The budgets themselves (their accounting and waiting) live
//! in the runtime's dispatcher.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// An amount per period, spent as a rate with a bounded burst (see the dispatcher's `bucket` module).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rate {
    /// How much may be used per period.
    pub amount: u64,
    /// The period.
    pub per: Duration,
    /// The burst the provider accepts, as a stretch of the rate (`Some(10 s)`: asks may run
    /// ten seconds' worth ahead of the rate). `None`: no burst; asks are paced at the rate.
    #[serde(default)]
    pub burst: Option<Duration>,
}

impl Rate {
    /// `amount` per minute.
    pub fn per_minute(amount: u64) -> Self {
        Self {
            amount,
            per: Duration::from_secs(60),
            burst: None,
        }
    }
    /// `amount` per second.
    pub fn per_second(amount: u64) -> Self {
        Self {
            amount,
            per: Duration::from_secs(1),
            burst: None,
        }
    }
    /// The same rate with an explicit burst: `burst` worth of the rate at once.
    #[must_use]
    pub fn with_burst(self, burst: Duration) -> Self {
        Self {
            burst: Some(burst),
            ..self
        }
    }
}

/// The limits of one budget. `None` means unlimited on that axis.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// Tokens per period.
    pub tokens: Option<Rate>,
    /// Input tokens per period, where the provider limits them apart from output (Anthropic's
    /// and Bedrock's input-tokens-per-minute).
    #[serde(default)]
    pub input_tokens: Option<Rate>,
    /// Output tokens per period, where the provider limits them apart from input; an ask
    /// reserves its output budget and settles to what the provider reports.
    #[serde(default)]
    pub output_tokens: Option<Rate>,
    /// Requests per period.
    pub requests: Option<Rate>,
    /// Jobs holding the budget at once.
    pub concurrency: Option<u32>,
}

//! [`Stamps`]: the words a seat speaks, written onto its conversation when it is obtained.
//!
//! The grade, depth and output size come from the thinker's declaration; the comfort window and
//! the compaction trigger are optional overrides of the framework defaults
//! ([`DEFAULT_COMFORT_WINDOW`], [`DEFAULT_COMPACTION_TRIGGER`]). Because they are stamped at
//! obtain time, the first model call and the compaction check read them before any per-call code
//! runs, and a resumed conversation keeps the stamps it was saved with.

use serde::{Deserialize, Serialize};

use crate::model::{Depth, Grade, OutputSize};
use crate::{Error, Result};

/// The framework's comfort window: the most tokens a conversation should grow to, whatever the
/// model's own context window.
pub const DEFAULT_COMFORT_WINDOW: u32 = 128_000;

/// The framework's compaction trigger: compaction starts when a rendered request passes this
/// share of the comfort window.
pub const DEFAULT_COMPACTION_TRIGGER: f64 = 0.92;

/// What a conversation was stamped with when it was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Stamps {
    /// How capable a model the conversation's calls need.
    pub grade: Grade,
    /// How hard the model should think.
    pub depth: Depth,
    /// How much answer each call books.
    pub output: OutputSize,
    /// The comfort window in tokens; the effective window is the smaller of this and the serving
    /// entry's context window.
    #[serde(default = "default_window")]
    pub comfort_window: u32,
    /// The share of the effective window past which compaction starts, in `(0, 1]`.
    #[serde(default = "default_trigger")]
    pub compaction_trigger: f64,
}

fn default_window() -> u32 {
    DEFAULT_COMFORT_WINDOW
}

fn default_trigger() -> f64 {
    DEFAULT_COMPACTION_TRIGGER
}

impl Stamps {
    /// Stamps with the framework's comfort window and compaction trigger.
    pub fn new(grade: Grade, depth: Depth, output: OutputSize) -> Self {
        Self {
            grade,
            depth,
            output,
            comfort_window: DEFAULT_COMFORT_WINDOW,
            compaction_trigger: DEFAULT_COMPACTION_TRIGGER,
        }
    }

    /// The same stamps with another comfort window. Zero is an [`Error::InvalidInput`] on
    /// `comfort_window`.
    pub fn with_comfort_window(mut self, tokens: u32) -> Result<Self> {
        self.comfort_window = tokens;
        self.validate()?;
        Ok(self)
    }

    /// The same stamps with another compaction trigger. A value outside `(0, 1]` is an
    /// [`Error::InvalidInput`] on `compaction_trigger`.
    pub fn with_compaction_trigger(mut self, share: f64) -> Result<Self> {
        self.compaction_trigger = share;
        self.validate()?;
        Ok(self)
    }

    /// Check the overrides: a positive comfort window and a trigger in `(0, 1]`.
    pub(crate) fn validate(&self) -> Result<()> {
        if self.comfort_window == 0 {
            return Err(Error::invalid_input(
                "comfort_window",
                Some("0".to_owned()),
                "the comfort window must be at least one token",
            ));
        }
        let t = self.compaction_trigger;
        if !(t > 0.0 && t <= 1.0) {
            return Err(Error::invalid_input(
                "compaction_trigger",
                Some(t.to_string()),
                "the compaction trigger is a share of the window, greater than 0 and at most 1",
            ));
        }
        Ok(())
    }

    /// The effective window: the comfort window, or the serving entry's context window when
    /// that is smaller (`None` when no entry is known yet).
    pub(crate) fn effective_window(&self, entry_context_window: Option<u32>) -> u32 {
        match entry_context_window {
            Some(entry) if entry > 0 => self.comfort_window.min(entry),
            _ => self.comfort_window,
        }
    }

    /// The token count past which a rendered request is compacted: trigger × effective window,
    /// rounded down. An out-of-range trigger is clamped into `(0, 1]` here rather than trusted.
    pub fn compaction_threshold(&self, entry_context_window: Option<u32>) -> u64 {
        let trigger = if self.compaction_trigger.is_finite() {
            self.compaction_trigger.clamp(f64::MIN_POSITIVE, 1.0)
        } else {
            DEFAULT_COMPACTION_TRIGGER
        };
        let window = f64::from(self.effective_window(entry_context_window));
        // Bounded by u32::MAX, so the conversion cannot overflow.
        (window * trigger).floor() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamps() -> Stamps {
        Stamps::new(Grade::Medium, Depth::Standard, OutputSize::Compact)
    }

    #[test]
    fn defaults_and_threshold() {
        let s = stamps();
        assert_eq!(s.comfort_window, 128_000);
        assert_eq!(s.compaction_trigger, 0.92);
        assert_eq!(s.compaction_threshold(None), 117_760);
        assert_eq!(s.compaction_threshold(Some(1_000_000)), 117_760);
        // A smaller entry window wins.
        assert_eq!(s.effective_window(Some(32_000)), 32_000);
        assert_eq!(s.compaction_threshold(Some(32_000)), 29_440);
    }

    #[test]
    fn overrides_are_checked() -> anyhow::Result<()> {
        let s = stamps()
            .with_comfort_window(10_000)?
            .with_compaction_trigger(0.5)?;
        assert_eq!(s.compaction_threshold(None), 5_000);
        for bad in [0.0, -0.1, 1.01, f64::NAN] {
            let err = stamps().with_compaction_trigger(bad).err();
            assert!(
                matches!(&err, Some(Error::InvalidInput { parameter, .. }) if parameter == "compaction_trigger"),
                "{bad}: {err:?}"
            );
        }
        assert!(stamps().with_comfort_window(0).is_err());
        Ok(())
    }

    #[test]
    fn serde_round_trip_and_defaults_for_old_rows() -> anyhow::Result<()> {
        let s = Stamps::new(Grade::Small, Depth::Quick, OutputSize::Tokens(777));
        let back: Stamps = serde_json::from_str(&serde_json::to_string(&s)?)?;
        assert_eq!(back, s);
        let old: Stamps =
            serde_json::from_str(r#"{"grade":"large","depth":"thorough","output":"verdict"}"#)?;
        assert_eq!(old.comfort_window, DEFAULT_COMFORT_WINDOW);
        assert_eq!(old.output, OutputSize::Verdict);
        Ok(())
    }
}

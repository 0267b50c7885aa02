//! [`Depth`]: how hard a piece of work should think.

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ParseNameError;

/// The effort a piece of work asks for: `Immediate < Quick < Standard < Thorough`.
///
/// A child never works deeper than its parent: its depth is clamped to the parent's with
/// [`Depth::clamp_to`]. The catalog entry serving a call translates the depth into a reasoning
/// budget or a provider effort level (see `thinkers::model::Entry::reasoning_tokens`).
///
/// On the wire and in catalogs a depth is its lower-case name.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Depth {
    /// Answer at once; no deliberate reasoning.
    Immediate,
    /// A brief look before answering.
    Quick,
    /// The usual amount of care.
    Standard,
    /// Work the problem through carefully.
    Thorough,
}

const DEPTH_NAMES: &[&str] = &["immediate", "quick", "standard", "thorough"];

impl Depth {
    /// Every depth, shallowest first.
    pub const ALL: [Self; 4] = [Self::Immediate, Self::Quick, Self::Standard, Self::Thorough];

    /// The lower-case name used in catalogs and on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Immediate => "immediate",
            Self::Quick => "quick",
            Self::Standard => "standard",
            Self::Thorough => "thorough",
        }
    }

    /// What this depth asks of the model, in words: the semantic hint a thinker's model reads
    /// in its instructions every turn (the catalog entry separately turns the depth into a
    /// reasoning budget). Each hint names the depth, so a model that hands work on (the depth
    /// field of `sub_thinker`) knows the most it may give.
    pub fn hint(self) -> &'static str {
        match self {
            Self::Immediate => "Effort: immediate. Answer from what you have.",
            Self::Quick => "Effort: quick. Check only what the answer hinges on.",
            Self::Standard => "Effort: standard. Check what matters before you answer.",
            Self::Thorough => "Effort: thorough. Verify each claim and weigh the alternatives.",
        }
    }

    /// The shallower of two depths.
    #[must_use]
    pub(crate) fn min(self, other: Self) -> Self {
        Ord::min(self, other)
    }

    /// This depth, lowered to `parent` when it asks for more than the parent has: a child may
    /// dial its effort down but never above its parent's.
    #[must_use]
    pub fn clamp_to(self, parent: Self) -> Self {
        self.min(parent)
    }
}

impl fmt::Display for Depth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Depth {
    type Err = ParseNameError;

    /// Parses a depth name, ignoring ASCII case.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|d| d.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| ParseNameError::new("depth", s, DEPTH_NAMES))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn any_depth() -> impl Strategy<Value = Depth> {
        prop::sample::select(Depth::ALL.to_vec())
    }

    #[test]
    fn ordered_shallowest_first() {
        assert!(Depth::Immediate < Depth::Quick);
        assert!(Depth::Quick < Depth::Standard);
        assert!(Depth::Standard < Depth::Thorough);
    }

    #[test]
    fn child_is_clamped_to_parent() {
        assert_eq!(Depth::Thorough.clamp_to(Depth::Quick), Depth::Quick);
        assert_eq!(Depth::Quick.clamp_to(Depth::Thorough), Depth::Quick);
        assert_eq!(Depth::Standard.min(Depth::Immediate), Depth::Immediate);
    }

    #[test]
    fn every_hint_names_its_depth_and_differs() {
        let hints: Vec<&str> = Depth::ALL.iter().map(|d| d.hint()).collect();
        for (d, hint) in Depth::ALL.iter().zip(&hints) {
            assert!(hint.starts_with(&format!("Effort: {d}.")), "{hint}");
        }
        let distinct: std::collections::HashSet<_> = hints.iter().collect();
        assert_eq!(distinct.len(), Depth::ALL.len());
    }

    #[test]
    fn names_round_trip() {
        for d in Depth::ALL {
            assert_eq!(d.as_str().parse::<Depth>().unwrap(), d);
            let json = serde_json::to_string(&d).unwrap();
            assert_eq!(json, format!("\"{d}\""));
            assert_eq!(serde_json::from_str::<Depth>(&json).unwrap(), d);
        }
        let err = "deep".parse::<Depth>().unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("depth `deep`") && msg.contains("thorough"),
            "{msg}"
        );
    }

    proptest! {
        #[test]
        fn min_is_commutative_and_a_lower_bound(a in any_depth(), b in any_depth()) {
            prop_assert_eq!(a.min(b), b.min(a));
            prop_assert!(a.min(b) <= a && a.min(b) <= b);
            prop_assert!(a.min(b) == a || a.min(b) == b);
        }

        #[test]
        fn clamp_never_exceeds_parent_and_is_idempotent(child in any_depth(), parent in any_depth()) {
            let clamped = child.clamp_to(parent);
            prop_assert!(clamped <= parent);
            prop_assert!(clamped <= child);
            prop_assert_eq!(clamped.clamp_to(parent), clamped);
            if child <= parent {
                prop_assert_eq!(clamped, child);
            }
        }
    }
}

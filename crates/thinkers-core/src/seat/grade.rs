//! [`Grade`]: the capability ladder a seat declares instead of naming a model.

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ParseNameError;

/// How capable a model a piece of work needs: a rung of the ladder
/// `Small < Medium < Large < Xl < Mega`, or [`Grade::Ceiling`].
///
/// `Ceiling` is not a rung. It stands for the strongest rung the deployment serves and is
/// resolved to that rung (see `thinkers::model::resolve_ceiling`) before any picker sees the seat,
/// so a `thinkers::model::Picker` is never asked for it. For ordering purposes it compares above
/// every rung, because it is at least as strong as any of them.
///
/// On the wire and in catalogs a grade is its lower-case name: `small`, `medium`, `large`, `xl`,
/// `mega`, `ceiling`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Grade {
    /// The cheapest, fastest rung: classification, extraction, short answers.
    Small,
    /// Everyday reasoning and tool use.
    Medium,
    /// Harder multi-step work.
    Large,
    /// Frontier-class work.
    Xl,
    /// The strongest rung a catalog can list.
    Mega,
    /// The strongest rung this deployment serves; resolved before picking.
    Ceiling,
}

const GRADE_NAMES: &[&str] = &["small", "medium", "large", "xl", "mega", "ceiling"];

const ALL_GRADES: [Grade; 6] = [
    Grade::Small,
    Grade::Medium,
    Grade::Large,
    Grade::Xl,
    Grade::Mega,
    Grade::Ceiling,
];

impl Grade {
    /// Every rung, weakest first. `Ceiling` is not among them.
    pub const RUNGS: [Self; 5] = [Self::Small, Self::Medium, Self::Large, Self::Xl, Self::Mega];

    /// The lower-case name used in catalogs and on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Small => "small",
            Self::Medium => "medium",
            Self::Large => "large",
            Self::Xl => "xl",
            Self::Mega => "mega",
            Self::Ceiling => "ceiling",
        }
    }

    /// Whether this grade is a rung of the ladder (everything but `Ceiling`).
    pub fn is_rung(self) -> bool {
        self != Self::Ceiling
    }

    /// This grade with `Ceiling` replaced by `ceiling`, the rung the deployment resolved it to.
    /// A rung is returned unchanged.
    pub fn or_ceiling(self, ceiling: Self) -> Self {
        match self {
            Self::Ceiling => ceiling,
            rung => rung,
        }
    }
}

impl fmt::Display for Grade {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Grade {
    type Err = ParseNameError;

    /// Parses a grade name, ignoring ASCII case (`"MEDIUM"` and `"medium"` are the same grade).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ALL_GRADES
            .into_iter()
            .find(|g| g.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| ParseNameError::new("grade", s, GRADE_NAMES))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rungs_are_ordered_weakest_first() {
        assert!(Grade::Small < Grade::Medium);
        assert!(Grade::Medium < Grade::Large);
        assert!(Grade::Large < Grade::Xl);
        assert!(Grade::Xl < Grade::Mega);
        assert!(Grade::RUNGS.windows(2).all(|w| w[0] < w[1]));
        assert!(!Grade::RUNGS.contains(&Grade::Ceiling));
        assert!(!Grade::Ceiling.is_rung());
        assert!(Grade::Mega.is_rung());
    }

    #[test]
    fn ceiling_resolves_and_rungs_stay() {
        assert_eq!(Grade::Ceiling.or_ceiling(Grade::Xl), Grade::Xl);
        assert_eq!(Grade::Small.or_ceiling(Grade::Mega), Grade::Small);
    }

    #[test]
    fn names_round_trip_through_serde_and_from_str() {
        for g in Grade::RUNGS.into_iter().chain([Grade::Ceiling]) {
            let json = serde_json::to_string(&g).unwrap();
            assert_eq!(json, format!("\"{}\"", g.as_str()));
            assert_eq!(serde_json::from_str::<Grade>(&json).unwrap(), g);
            assert_eq!(g.as_str().parse::<Grade>().unwrap(), g);
            assert_eq!(g.to_string(), g.as_str());
        }
        assert_eq!("MEDIUM".parse::<Grade>().unwrap(), Grade::Medium);
        assert_eq!(serde_json::to_string(&Grade::Xl).unwrap(), "\"xl\"");
    }

    #[test]
    fn unknown_name_is_named_with_the_accepted_ones() {
        let err = "huge".parse::<Grade>().unwrap_err();
        assert_eq!(err.value(), "huge");
        assert_eq!(err.what(), "grade");
        let msg = err.to_string();
        assert!(msg.contains("`huge`"), "{msg}");
        for name in ["small", "medium", "large", "xl", "mega", "ceiling"] {
            assert!(msg.contains(name), "{msg} lacks {name}");
        }
    }
}

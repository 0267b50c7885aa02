//! [`AnalysisReasoning`]: a justification in structure — the approach, then the steps — that an
//! answer type can carry as its `reasoning` field (a sub-thinker's answer does), and that the
//! answer-shape boundary fills from the thinking block when native thinking leaves the field out
//! of the schema.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A justification a reader can check, in two parts: the approach taken and the steps that lead
/// from the evidence to the answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AnalysisReasoning {
    /// The approach taken, stated so a reader can judge whether it fits the question: what was
    /// looked at and how.
    pub approach: String,
    /// The steps from the evidence to the answer, in order, each one a reader can verify
    /// against the tool results or artifacts it cites.
    pub steps: Vec<String>,
}

impl AnalysisReasoning {
    /// Reasoning written as prose (a thinking block): its first paragraph is the approach and
    /// each later non-empty paragraph a step. Prose with one paragraph is an approach without
    /// steps.
    pub(crate) fn from_text(text: &str) -> Self {
        let mut paragraphs = text
            .split("\n\n")
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(str::to_owned);
        Self {
            approach: paragraphs.next().unwrap_or_default(),
            steps: paragraphs.collect(),
        }
    }

    /// The reasoning as prose: the approach, then the steps numbered.
    pub(crate) fn to_text(&self) -> String {
        let mut text = self.approach.clone();
        for (i, step) in self.steps.iter().enumerate() {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(&format!("{}. {step}", i + 1));
        }
        text
    }

    /// Whether the schema node describes this shape (an object with `approach` and `steps`).
    pub(crate) fn is_shape(node: &serde_json::Value) -> bool {
        node.get("properties")
            .is_some_and(|p| p.get("approach").is_some() && p.get("steps").is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prose_splits_into_an_approach_and_steps() {
        let r = AnalysisReasoning::from_text("Looked up both terms.\n\nA is B.\n\n\nB is C.\n");
        assert_eq!(r.approach, "Looked up both terms.");
        assert_eq!(r.steps, ["A is B.", "B is C."]);
        assert_eq!(r.to_text(), "Looked up both terms.\n1. A is B.\n2. B is C.");
        assert_eq!(
            AnalysisReasoning::from_text(""),
            AnalysisReasoning::default()
        );
    }

    #[test]
    fn its_descriptions_ask_for_a_checkable_justification() {
        let schema = serde_json::to_string(&schemars::schema_for!(AnalysisReasoning))
            .unwrap_or_default()
            .to_lowercase();
        assert!(schema.contains("verify"), "{schema}");
        assert!(!schema.contains("thought"), "{schema}");
    }
}

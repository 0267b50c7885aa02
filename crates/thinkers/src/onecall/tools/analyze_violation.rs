//! `analyze_violation`: whether a text breaks a rule, how seriously, with verbatim evidence.

use std::borrow::Cow;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Result;
use crate::model::{Depth, Grade, OutputSize};
use crate::onecall::ModelTool;

/// The input of `analyze_violation`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ViolationInput {
    /// The text to examine.
    pub text: String,
    /// The rule or policy the text is checked against.
    pub rule: String,
}

/// How serious a violation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// The text does not break the rule.
    None,
    /// A technical or marginal breach with little consequence.
    Low,
    /// A clear breach that should be fixed.
    Medium,
    /// A serious breach with real consequences.
    High,
    /// A breach that must be stopped at once.
    Critical,
}

/// The answer of `analyze_violation`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ViolationAnalysis {
    /// Whether the text breaks the rule.
    pub violated: bool,
    /// How serious the violation is; `none` exactly when the text does not break the rule.
    pub severity: Severity,
    /// Passages of the text, quoted exactly as written, that show the violation; empty when
    /// there is none.
    pub evidence: Vec<String>,
    /// A justification a reader can check: which part of the rule each quoted passage breaks, or
    /// why the text complies with it.
    pub justification: String,
}

/// Checks a text against a rule with one call at the small grade.
#[derive(Debug, Clone, Copy, Default)]
pub struct AnalyzeViolation;

impl ModelTool for AnalyzeViolation {
    const NAME: &'static str = "analyze_violation";
    type Input = ViolationInput;
    type Output = ViolationAnalysis;

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(
            "Check whether a text breaks a rule or policy: a yes/no verdict, a severity, the \
             passages of the text that show it, and a justification.",
        )
    }

    fn instructions(&self) -> Cow<'static, str> {
        Cow::Borrowed(
            "You check a text against a rule. Decide whether the text breaks the rule as written, \
             not whether it could be improved. Quote the passages that show a violation exactly as \
             they appear in the text, and rate the severity (none when there is no violation). \
             Justify the verdict so a reader can check it against the rule and the quotes. Answer \
             with a JSON object that matches the response schema.",
        )
    }

    fn output_size(&self, _input: &ViolationInput) -> OutputSize {
        OutputSize::Compact
    }

    fn grade(&self, _input: &ViolationInput) -> Option<Grade> {
        Some(Grade::Small)
    }

    fn depth(&self, _input: &ViolationInput) -> Depth {
        Depth::Quick
    }

    fn render_prompt(&self, input: &ViolationInput) -> Result<String> {
        Ok(format!(
            "Rule:\n{}\n\nText:\n{}",
            input.rule.trim(),
            input.text.trim()
        ))
    }

    fn validate(&self, input: &ViolationInput, output: &ViolationAnalysis) -> Result<(), String> {
        let mut problems = Vec::new();
        match (output.violated, output.severity) {
            (true, Severity::None) => {
                problems.push("`severity` must not be \"none\" when `violated` is true".to_owned());
            }
            (false, s) if s != Severity::None => {
                problems.push("`severity` must be \"none\" when `violated` is false".to_owned());
            }
            _ => {}
        }
        if output.violated && output.evidence.is_empty() {
            problems.push(
                "`evidence` must quote at least one passage of the text when `violated` is true"
                    .to_owned(),
            );
        }
        let text = normalise(&input.text);
        for (i, quote) in output.evidence.iter().enumerate() {
            let quote = normalise(
                quote
                    .trim()
                    .trim_matches(|c| matches!(c, '"' | '\'' | '“' | '”')),
            );
            if quote.is_empty() || !text.contains(&quote) {
                problems.push(format!(
                    "`evidence[{i}]` does not occur in the text; quote passages exactly as written"
                ));
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("; "))
        }
    }

    fn read_only(&self) -> bool {
        true
    }
}

/// Lower case with runs of whitespace collapsed, so a quote matches across line breaks.
fn normalise(s: &str) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::onecall::AnswerShape;

    fn analysis(violated: bool, severity: Severity, evidence: &[&str]) -> ViolationAnalysis {
        ViolationAnalysis {
            violated,
            severity,
            evidence: evidence.iter().map(|s| (*s).to_owned()).collect(),
            justification: "j".to_owned(),
        }
    }

    #[test]
    fn the_check_ties_severity_to_the_verdict_and_quotes_to_the_text() {
        let input = ViolationInput {
            text: "Passwords are stored\n in plain text.".into(),
            rule: "Store no secret unencrypted.".into(),
        };
        let tool = AnalyzeViolation;
        let ok = analysis(
            true,
            Severity::High,
            &["\"passwords are stored in plain text\""],
        );
        assert_eq!(tool.validate(&input, &ok), Ok(()));
        assert_eq!(
            tool.validate(&input, &analysis(false, Severity::None, &[])),
            Ok(())
        );

        let canary = "CANARY-7781";
        let bad = analysis(true, Severity::None, &[canary]);
        let Err(reason) = tool.validate(&input, &bad) else {
            panic!("accepted a violation without severity");
        };
        assert!(
            reason.contains("`severity` must not be \"none\""),
            "{reason}"
        );
        assert!(reason.contains("`evidence[0]` does not occur"), "{reason}");
        assert!(
            !reason.contains(canary),
            "the check never repeats the answer: {reason}"
        );

        let Err(reason) = tool.validate(&input, &analysis(false, Severity::Low, &[])) else {
            panic!("accepted a severity without a violation");
        };
        assert!(reason.contains("must be \"none\""), "{reason}");
        let Err(reason) = tool.validate(&input, &analysis(true, Severity::Low, &[])) else {
            panic!("accepted a violation without evidence");
        };
        assert!(reason.contains("at least one passage"), "{reason}");
    }

    #[test]
    fn the_answer_is_described_in_declaration_order_with_its_severities() {
        let d = AnswerShape::of::<ViolationAnalysis>().describe();
        let at = |needle: &str| d.find(needle).unwrap_or(usize::MAX);
        assert!(
            at("`violated` (true or false)") < at("`severity` (one of"),
            "{d}"
        );
        assert!(
            at("`severity`") < at("`evidence` (an array of strings)"),
            "{d}"
        );
        assert!(at("`evidence`") < at("`justification` (a string)"), "{d}");
        assert!(
            d.contains(r#"one of "none", "low", "medium", "high", "critical""#),
            "{d}"
        );
    }
}

//! The blind judge: a one-call model tool at [`Grade::Ceiling`] that scores one candidate run
//! against the reference run, and the [`Blinder`] that takes every model's name out of what it
//! reads.
//!
//! The rubric is fixed: up to 7 points for accuracy (a tool used wrongly costs at least 3 of
//! them) and up to 3 points for shown work. The judge reads both runs in full (transcript and
//! answer) but never learns which model produced either: the benchmark scrubs catalog entry ids,
//! provider model names and provider names from both sides before the prompt is built.

use std::borrow::Cow;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Result;
use crate::model::{Catalog, Depth, Grade, OutputSize};
use crate::onecall::ModelTool;

/// Most accuracy points a run can earn.
pub const MAX_ACCURACY: u8 = 7;
/// Most points for shown work.
pub const MAX_WORK: u8 = 3;
/// The fewest accuracy points a misused tool takes away.
pub const MISUSED_TOOL_PENALTY: u8 = 3;
/// What a scrubbed model name is replaced with.
pub const HIDDEN: &str = "[hidden model]";

/// One run as the judge sees it, already blinded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RunSheet {
    /// Everything the run did, in order: messages, tool calls and what each tool returned.
    pub transcript: String,
    /// The run's final answer, as JSON.
    pub answer: String,
}

/// What the judge is given: the task, the reference run and one candidate run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct JudgeInput {
    /// The task both runs were given (the job's input, as JSON).
    pub task: String,
    /// The reference run: the ground truth.
    pub reference: RunSheet,
    /// The run to score.
    pub candidate: RunSheet,
}

/// The judge's score of one candidate run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct JudgeVerdict {
    /// Accuracy against the reference, 0 to 7. A tool used wrongly (wrong tool, wrong
    /// arguments, a result misread) takes away at least 3 points.
    #[schemars(range(min = 0, max = 7))]
    pub score_accuracy: u8,
    /// How well the run shows its work (the steps a reader can check), 0 to 3.
    #[schemars(range(min = 0, max = 3))]
    pub score_work: u8,
    /// Why: the differences from the reference that cost points, in a few sentences.
    pub reason: String,
}

impl JudgeVerdict {
    /// The total, 0 to 10.
    pub fn total(&self) -> u8 {
        self.score_accuracy.min(MAX_ACCURACY) + self.score_work.min(MAX_WORK)
    }
}

/// The judge as a one-call tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct JudgeTool;

impl ModelTool for JudgeTool {
    const NAME: &'static str = "benchmark_judge";
    type Input = JudgeInput;
    type Output = JudgeVerdict;

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed("Score one run of a task against a reference run of the same task.")
    }

    fn instructions(&self) -> Cow<'static, str> {
        Cow::Owned(format!(
            "You grade one attempt at a task by comparing it with a reference attempt that is \
             known to be good. You see the task, then each attempt in full: what was said, every \
             tool call with its arguments, what each tool returned, and the final answer. \
             Neither attempt names the system that produced it; do not guess.\n\n\
             Score two things and explain the score briefly:\n\
             - score_accuracy, 0 to {MAX_ACCURACY}: how far the candidate's answer agrees with \
             the reference's in substance. Each tool the candidate used wrongly (a tool that did \
             not fit the step, arguments that could not work, a result it misread) costs at \
             least {MISUSED_TOOL_PENALTY} points.\n\
             - score_work, 0 to {MAX_WORK}: how well the candidate shows the steps that lead to \
             its answer, so that a reader could check them.\n\
             - reason: the differences that cost points, in a few sentences.\n\n\
             Answer with a JSON object that matches the response schema."
        ))
    }

    fn output_size(&self, _input: &JudgeInput) -> OutputSize {
        OutputSize::Compact
    }

    fn grade(&self, _input: &JudgeInput) -> Option<Grade> {
        Some(Grade::Ceiling)
    }

    fn depth(&self, _input: &JudgeInput) -> Depth {
        Depth::Standard
    }

    fn render_prompt(&self, input: &JudgeInput) -> Result<String> {
        Ok(format!(
            "<task>\n{}\n</task>\n\n<reference_attempt>\n<transcript>\n{}\n</transcript>\n\
             <answer>\n{}\n</answer>\n</reference_attempt>\n\n<candidate_attempt>\n\
             <transcript>\n{}\n</transcript>\n<answer>\n{}\n</answer>\n</candidate_attempt>",
            input.task.trim(),
            input.reference.transcript.trim(),
            input.reference.answer.trim(),
            input.candidate.transcript.trim(),
            input.candidate.answer.trim(),
        ))
    }

    fn validate(&self, _input: &JudgeInput, out: &JudgeVerdict) -> Result<(), String> {
        if out.score_accuracy > MAX_ACCURACY {
            return Err(format!(
                "score_accuracy must be between 0 and {MAX_ACCURACY}"
            ));
        }
        if out.score_work > MAX_WORK {
            return Err(format!("score_work must be between 0 and {MAX_WORK}"));
        }
        if out.reason.trim().is_empty() {
            return Err("reason must say why the points were given".to_owned());
        }
        Ok(())
    }

    fn read_only(&self) -> bool {
        true
    }
}

/// Takes every model's identity out of text: the catalog's entry ids, provider model names and
/// provider names, matched without regard to ASCII case, longest first.
#[derive(Debug, Clone, Default)]
pub struct Blinder {
    /// Lower-cased names, longest first.
    names: Vec<String>,
}

impl Blinder {
    /// Hide every name the catalog knows.
    pub fn for_catalog(catalog: &Catalog) -> Self {
        let mut names: Vec<String> = catalog
            .entries()
            .iter()
            .flat_map(|e| [e.id().to_owned(), e.model().to_owned()])
            .chain(catalog.providers().keys().cloned())
            .map(|n| n.trim().to_ascii_lowercase())
            // Very short names would erase ordinary words.
            .filter(|n| n.len() >= 3)
            .collect();
        names.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        names.dedup();
        Self { names }
    }

    /// Also hide `name`.
    #[must_use]
    pub fn hide(mut self, name: &str) -> Self {
        let n = name.trim().to_ascii_lowercase();
        if n.len() >= 3 && !self.names.contains(&n) {
            self.names.push(n);
            self.names
                .sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        }
        self
    }

    /// `text` with every hidden name replaced by [`HIDDEN`].
    pub fn scrub(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for name in &self.names {
            out = replace_ascii_case_insensitive(&out, name, HIDDEN);
        }
        out
    }
}

/// Replace every ASCII-case-insensitive occurrence of `needle` (lower case) in `text`.
/// ASCII lower-casing keeps byte offsets, so offsets found in the lowered copy are valid in
/// `text` and always fall on character boundaries of an ASCII needle's matches.
fn replace_ascii_case_insensitive(text: &str, needle: &str, with: &str) -> String {
    let lowered = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut from = 0;
    while let Some(pos) = lowered[from..].find(needle) {
        let at = from + pos;
        let end = at + needle.len();
        match (text.get(from..at), text.get(at..end)) {
            (Some(before), Some(_)) => {
                out.push_str(before);
                out.push_str(with);
            }
            // Not on a character boundary (a non-ASCII needle): keep the text as it is.
            _ => out.push_str(text.get(from..end).unwrap_or_default()),
        }
        from = end;
    }
    out.push_str(text.get(from..).unwrap_or_default());
    out
}

#[cfg(test)]
// A failing test reports by panicking.
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn every_catalog_name_is_hidden_whatever_its_case() {
        let blinder = Blinder::for_catalog(&Catalog::bundled());
        let text = "Served by sim-small-a (SIM-SMALL-B) via sim-openai; sim-mega-b said: ok é";
        let out = blinder.scrub(text);
        for e in Catalog::bundled().entries() {
            assert!(!out.to_ascii_lowercase().contains(e.id()), "{out}");
            assert!(!out.to_ascii_lowercase().contains(e.model()), "{out}");
        }
        assert!(!out.contains("sim-openai"), "{out}");
        assert!(out.ends_with("said: ok é"), "{out}");
        assert_eq!(out.matches(HIDDEN).count(), 4, "{out}");
    }

    #[test]
    fn extra_names_can_be_hidden() {
        let blinder = Blinder::default().hide("Claude");
        assert_eq!(
            blinder.scrub("claude and CLAUDE"),
            format!("{HIDDEN} and {HIDDEN}")
        );
        assert_eq!(Blinder::default().hide("ab").scrub("ab"), "ab");
    }

    #[test]
    fn the_rubric_bounds_are_checked() {
        let input = JudgeInput {
            task: "t".into(),
            reference: RunSheet {
                transcript: String::new(),
                answer: "1".into(),
            },
            candidate: RunSheet {
                transcript: String::new(),
                answer: "1".into(),
            },
        };
        let ok = JudgeVerdict {
            score_accuracy: 7,
            score_work: 3,
            reason: "same".into(),
        };
        assert_eq!(ok.total(), 10);
        assert!(JudgeTool.validate(&input, &ok).is_ok());
        let high = JudgeVerdict {
            score_accuracy: 8,
            ..ok.clone()
        };
        assert!(
            JudgeTool
                .validate(&input, &high)
                .unwrap_err()
                .contains("score_accuracy")
        );
        let work = JudgeVerdict {
            score_work: 4,
            ..ok
        };
        assert!(
            JudgeTool
                .validate(&input, &work)
                .unwrap_err()
                .contains("score_work")
        );
        let prompt = JudgeTool.render_prompt(&input).unwrap();
        assert!(prompt.contains("<candidate_attempt>"));
        let schema = serde_json::to_string(&schemars::schema_for!(JudgeVerdict)).unwrap();
        assert!(schema.contains("\"maximum\":7"), "{schema}");
    }
}

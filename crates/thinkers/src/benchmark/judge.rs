//! The blind judge: a one-call model tool at [`Grade::Ceiling`] that scores one candidate run
//! against the reference run. What it reads has passed the [`super::Blinder`] first.
//!
//! The rubric is fixed: up to 7 points for accuracy (a tool used wrongly costs at least 3 of
//! them) and up to 3 points for shown work. The judge reads both runs in full (transcript and
//! answer) but never learns which model produced either: the benchmark scrubs the catalog's
//! names and the names models call themselves by from both sides before the prompt is built.

use std::borrow::Cow;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Result;
use crate::model::{Depth, Grade, OutputSize};
use crate::onecall::ModelTool;

/// Most accuracy points a run can earn.
pub(crate) const MAX_ACCURACY: u8 = 7;
/// Most points for shown work.
pub(crate) const MAX_WORK: u8 = 3;
/// The fewest accuracy points a misused tool takes away.
pub(crate) const MISUSED_TOOL_PENALTY: u8 = 3;
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

#[cfg(test)]
mod tests {
    use super::*;

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

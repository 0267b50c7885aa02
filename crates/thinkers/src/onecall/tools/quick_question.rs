//! `quick_llm_question`: one question, one direct answer with a checkable justification.

use std::borrow::Cow;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Result;
use crate::model::{Depth, Grade, OutputSize};
use crate::onecall::ModelTool;

/// The input of `quick_llm_question`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct QuickQuestionInput {
    /// The question, self-contained: the model sees nothing else but the optional context.
    pub question: String,
    /// How capable a model this question needs (small, medium, large, xl, mega or ceiling).
    /// Stated per question: a lookup needs small, a subtle judgement a higher rung.
    pub grade: Grade,
    /// Material the answer should rest on, when there is any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
}

/// The answer of `quick_llm_question`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct QuickAnswer {
    /// The answer, direct and brief.
    pub answer: String,
    /// A short justification a reader can check: the facts, the passages of the context or the
    /// rules the answer rests on.
    pub justification: String,
}

/// Answers one question with one model call, at the grade the input states.
#[derive(Debug, Clone, Copy, Default)]
pub struct QuickQuestion;

impl ModelTool for QuickQuestion {
    const NAME: &'static str = "quick_llm_question";
    type Input = QuickQuestionInput;
    type Output = QuickAnswer;

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(
            "Ask a model one self-contained question and get a brief answer with a justification. \
             State the grade the question needs; pass any material the answer must rest on as \
             context.",
        )
    }

    fn instructions(&self) -> Cow<'static, str> {
        Cow::Borrowed(
            "You answer one question directly and briefly. When context is given, rest the answer \
             on it and say plainly when it does not settle the question. Justify the answer in a \
             sentence or two a reader can check against the question, the context or \
             well-established facts. Answer with a JSON object that matches the response schema.",
        )
    }

    fn output_size(&self, _input: &QuickQuestionInput) -> OutputSize {
        OutputSize::Compact
    }

    fn grade(&self, input: &QuickQuestionInput) -> Option<Grade> {
        Some(input.grade)
    }

    fn depth(&self, _input: &QuickQuestionInput) -> Depth {
        Depth::Quick
    }

    fn render_prompt(&self, input: &QuickQuestionInput) -> Result<String> {
        let mut prompt = format!("Question:\n{}", input.question.trim());
        if let Some(context) = input.context.as_deref().filter(|c| !c.trim().is_empty()) {
            prompt.push_str("\n\nContext:\n");
            prompt.push_str(context.trim());
        }
        Ok(prompt)
    }

    fn read_only(&self) -> bool {
        true
    }
}

//! `summarization`: a summary near a target length, with key points and an optional focus.

use std::borrow::Cow;
use std::num::NonZeroU32;
use std::sync::Arc;

use futures::future::BoxFuture;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Result;
use crate::conversation::Summarizer;
use crate::model::{Depth, Grade, OutputSize};
use crate::onecall::{ModelTool, ModelToolJob};

/// The input of `summarization`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SummarizationInput {
    /// The text to summarise.
    pub text: String,
    /// What the summary should concentrate on, when not the whole text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub focus: Option<String>,
    /// About how many words the summary should have.
    pub target_words: NonZeroU32,
}

/// The answer of `summarization`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Summary {
    /// The summary, close to the target length, saying only what the text says.
    pub summary: String,
    /// The text's main points, one short sentence each, in the order the text makes them.
    pub key_points: Vec<String>,
}

/// Summarises a text with one call at the small grade.
#[derive(Debug, Clone, Copy, Default)]
pub struct Summarization;

/// How far past the target a summary may run before it is sent back: twice the target plus
/// this many words.
const LENGTH_SLACK_WORDS: usize = 20;

impl ModelTool for Summarization {
    const NAME: &'static str = "summarization";
    type Input = SummarizationInput;
    type Output = Summary;

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(
            "Summarise a text to about a target number of words and list its key points, \
             optionally concentrating on one focus.",
        )
    }

    fn instructions(&self) -> Cow<'static, str> {
        Cow::Borrowed(
            "You summarise texts faithfully: say only what the text says, keep its proportions, \
             and stay close to the requested length. When a focus is given, cover what the text \
             says about it and leave the rest out. List the key points as short sentences in the \
             order the text makes them. Answer with a JSON object that matches the response \
             schema.",
        )
    }

    /// Roughly 1.4 tokens a word plus the key points and the JSON around them.
    fn output_size(&self, input: &SummarizationInput) -> OutputSize {
        match input.target_words.get() {
            0..=1_200 => OutputSize::Compact,
            1_201..=6_000 => OutputSize::Standard,
            _ => OutputSize::Extended,
        }
    }

    fn grade(&self, _input: &SummarizationInput) -> Option<Grade> {
        Some(Grade::Small)
    }

    fn depth(&self, _input: &SummarizationInput) -> Depth {
        Depth::Quick
    }

    fn render_prompt(&self, input: &SummarizationInput) -> Result<String> {
        let mut prompt = format!(
            "Summarise the text below in about {} words.",
            input.target_words
        );
        if let Some(focus) = input.focus.as_deref().filter(|f| !f.trim().is_empty()) {
            prompt.push_str("\nFocus on: ");
            prompt.push_str(focus.trim());
        }
        prompt.push_str("\n\nText:\n");
        prompt.push_str(input.text.trim());
        Ok(prompt)
    }

    fn validate(&self, input: &SummarizationInput, output: &Summary) -> Result<(), String> {
        let mut problems = Vec::new();
        let words = output.summary.split_whitespace().count();
        if words == 0 {
            problems.push("`summary` is empty".to_owned());
        }
        let target = usize::try_from(input.target_words.get()).unwrap_or(usize::MAX);
        let limit = target.saturating_mul(2).saturating_add(LENGTH_SLACK_WORDS);
        if words > limit {
            problems.push(format!(
                "`summary` runs to {words} words, far past the target of about {target} words"
            ));
        }
        if output.key_points.iter().all(|p| p.trim().is_empty()) {
            problems.push("`key_points` must list at least one point".to_owned());
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

/// The production [`Summarizer`] for compaction: each summary is one run of the `summarization`
/// tool at Small, submitted as a child of the job whose conversation is compacted (so it is
/// admitted, recorded and priced like any call, on that job's branch of the trajectory). A
/// pinned summariser runs every summary on its pin, as a pinned thinker's turns do.
#[derive(Debug, Clone)]
pub(crate) struct JobSummarizer {
    cx: crate::job::JobContext,
    pin: Option<Arc<str>>,
}

impl JobSummarizer {
    /// A summariser whose runs are children of the job running in `cx`.
    pub(crate) fn new(cx: crate::job::JobContext) -> Self {
        Self { cx, pin: None }
    }

    /// Run every summary on this catalog entry (inside the compliance envelope): a thinker
    /// pinned to an entry passes its pin, so its whole conversation, compaction included, is
    /// served by that entry.
    #[must_use]
    pub(crate) fn pinned(mut self, entry: impl Into<Arc<str>>) -> Self {
        self.pin = Some(entry.into());
        self
    }
}

/// Words to ask for, for a summary of about `tokens` tokens (about 0.7 words a token).
fn words_for(tokens: u32) -> NonZeroU32 {
    NonZeroU32::new(tokens.saturating_mul(7) / 10).unwrap_or(NonZeroU32::MIN)
}

impl Summarizer for JobSummarizer {
    fn summarize<'a>(
        &'a self,
        transcript: &'a str,
        target_tokens: u32,
    ) -> BoxFuture<'a, Result<String>> {
        Box::pin(async move {
            let input = SummarizationInput {
                text: transcript.to_owned(),
                focus: Some(
                    "what was asked, what was found (facts, tool results, artifact refs), what \
                     was decided, and what is still open"
                        .to_owned(),
                ),
                target_words: words_for(target_tokens),
            };
            let mut job = ModelToolJob::new(Arc::new(Summarization), input)?;
            if let Some(pin) = &self.pin {
                job = job.pinned(pin.as_ref());
            }
            let summary = self.cx.submit(job).await?;
            Ok(summary.summary)
        })
    }
}

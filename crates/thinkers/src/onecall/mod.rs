//! One-call model tools: a tool whose whole work is one exchange with a model.
//!
//! An author implements [`ModelTool`]: a snake_case name, typed input and output, instructions (the
//! system content), how the input becomes the prompt, how much answer to book and, optionally, a
//! grade, a depth and a semantic check of the answer. The tool holds no client and no model: it
//! declares a [`Grade`] (or none, to inherit its caller's) and the runtime chooses the entry.
//!
//! [`ModelToolJob`] runs one call of such a tool under the dispatcher:
//!
//! * **wire** (in `requirements`, before every attempt): the conversation is built **once** on the
//!   first attempt — the instructions as system content, the input rendered as the prompt (or the
//!   tool's own messages, for images and files), the JSON Schema of the output type as the response
//!   contract — and then bound afresh per attempt through [`crate::llm::require_seat`], so the
//!   seat is priced from exactly the body that goes on the wire and a pinned call resolves to its
//!   entry (inside the compliance envelope);
//! * **converse** (in `execute`): the bound body is sent ([`crate::llm::converse_bound`] records
//!   the LLM-run row and turns a truncated first attempt into a truncation escalation, so the
//!   truncated answer never enters the conversation), then the answer text is decoded into the
//!   output type at the [`AnswerShape`] boundary;
//! * **correct**: an answer that is not JSON, or is JSON of the wrong shape, or fails
//!   [`ModelTool::validate`], goes back to the model as a correction turn (the model's answer as an
//!   assistant turn, then a user turn saying what was wrong in terms of the schema, never quoting
//!   the answer) and the dispatcher re-runs the same instance on the grown conversation, at most
//!   [`MAX_CORRECTIONS`] times. Past the bound an answer that still does not fit surfaces as
//!   [`crate::Error::InvalidInput`] naming the `answer` parameter and the declared type, and a
//!   well-shaped answer that still fails the semantic check is returned as it is;
//! * the body's broad error handling goes through [`crate::error::unwrap_error`], so throttling,
//!   correction and escalation signals always reach the dispatcher as signals.
//!
//! [`ModelToolProvider`] puts a model tool on a palette: it decodes a model's arguments into the
//! input and lets the job inherit the caller's grade and pin from
//! [`crate::tool::ToolCallContext`]. [`Answerer`] is the seam a test uses to answer without a
//! transport; [`ExchangeHook`] observes each exchange.
//!
//! The built-in tools of this kind are in [`tools`]: `quick_llm_question`, `summarization` and
//! `analyze_violation`.

mod job;
mod provider;
mod seam;
pub mod tools;

pub use crate::llm::correction::MAX_CORRECTIONS;
pub use crate::llm::shape::{AnswerRefusal, AnswerShape};
pub use job::ModelToolJob;
pub use provider::ModelToolProvider;
pub use seam::{AnswerRequest, Answerer, Exchange, ExchangeHook};

use std::borrow::Cow;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::conversation::Message;
use crate::model::{Depth, Grade, OutputSize};
use crate::{Error, Result};

/// A tool whose work is one exchange with a model (see the module docs).
pub trait ModelTool: Send + Sync + 'static {
    /// The snake_case name the tool is called by (also the name of its response contract).
    const NAME: &'static str;
    /// The input; its JSON Schema is what a calling model sees.
    type Input: DeserializeOwned + Serialize + JsonSchema + Send + Sync + 'static;
    /// The answer; its JSON Schema is the response contract the model must meet. Make it a
    /// struct (a JSON object): providers' structured-answer modes require an object root.
    type Output: DeserializeOwned + Serialize + JsonSchema + Send + Sync + 'static;

    /// What the tool does, for a calling model.
    fn description(&self) -> Cow<'static, str>;

    /// The system content of the conversation.
    fn instructions(&self) -> Cow<'static, str>;

    /// How much answer to book for this input.
    fn output_size(&self, input: &Self::Input) -> OutputSize;

    /// The grade this call needs; `None` inherits the caller's (a job built without a caller's
    /// grade then fails with a clear error).
    fn grade(&self, input: &Self::Input) -> Option<Grade> {
        let _ = input;
        None
    }

    /// The most effort this call allows. A call works at its caller's depth lowered to this,
    /// never raised; with no caller's depth it works at this. Defaults to [`Depth::Standard`].
    fn depth(&self, input: &Self::Input) -> Depth {
        let _ = input;
        Depth::Standard
    }

    /// The input as the prompt. Defaults to the input as pretty-printed JSON.
    fn render_prompt(&self, input: &Self::Input) -> Result<String> {
        serde_json::to_string_pretty(input).map_err(|e| {
            Error::system(format!("input of tool {}", Self::NAME), e.to_string()).with_source(e)
        })
    }

    /// The conversation's messages. Defaults to one user turn holding
    /// [`ModelTool::render_prompt`]; override it for a conversation the prompt cannot express
    /// (images, files, several turns). Called once per job, on its first attempt.
    fn build_messages(&self, input: &Self::Input) -> Result<Vec<Message>> {
        Ok(vec![Message::user_text(self.render_prompt(input)?)])
    }

    /// A semantic check of a well-shaped answer. An `Err` names what is wrong; it is put to the
    /// model as a correction. Describe the rule that failed, never repeat the answer's values.
    fn validate(&self, input: &Self::Input, output: &Self::Output) -> Result<(), String> {
        let _ = (input, output);
        Ok(())
    }

    /// Whether the tool has no side effects. Defaults to `false`.
    fn read_only(&self) -> bool {
        false
    }

    /// A bound on one attempt.
    fn timeout(&self) -> Option<Duration> {
        None
    }
}

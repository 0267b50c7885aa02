//! [`ScriptedTurns`]: a [`TurnSource`] that answers from a queue, for tests (feature
//! `test-utils`, and this crate's own tests).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;
use serde_json::Value;

use super::turn::{TurnRequest, TurnSource};
use crate::conversation::ContentBlock;
use crate::job::FanOut;
use crate::llm::{ChatResponse, StopReason, Usage};
use crate::{Error, Result};

/// Turns answered from a queue, for tests: each turn takes the next response and the request it
/// was given is kept for inspection.
#[derive(Debug, Clone, Default)]
pub struct ScriptedTurns {
    inner: Arc<ScriptedInner>,
}

#[derive(Debug, Default)]
struct ScriptedInner {
    queue: Mutex<VecDeque<ChatResponse>>,
    seen: Mutex<Vec<TurnRequest>>,
}

impl ScriptedTurns {
    /// An empty script.
    pub fn new() -> Self {
        Self::default()
    }

    /// Queue a response.
    #[must_use]
    pub fn then(self, response: ChatResponse) -> Self {
        self.inner
            .queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push_back(response);
        self
    }

    /// Queue a turn that calls tools: `(call id, tool name, arguments)`.
    #[must_use]
    pub fn then_calls(self, calls: &[(&str, &str, Value)]) -> Self {
        let content = calls
            .iter()
            .map(|(id, name, args)| ContentBlock::tool_call(*id, *name, args.clone()))
            .collect();
        self.then(response(content, StopReason::ToolUse))
    }

    /// Queue a turn that answers with this text.
    #[must_use]
    pub fn then_text(self, text: impl Into<String>) -> Self {
        self.then(response(
            vec![ContentBlock::text(text)],
            StopReason::EndTurn,
        ))
    }

    /// Queue a final answer as a model writes it for a looping thinker: a JSON string as its
    /// text (the text answer of a `String` thinker), an object as its JSON (a typed answer of an
    /// object type: its own fields, a `reasoning` one included when the type has it). An answer
    /// type that is neither travels as `{"answer": …}`: queue that with
    /// [`ScriptedTurns::then_text`].
    #[must_use]
    pub fn then_answer(self, answer: Value) -> Self {
        match answer {
            Value::String(text) => self.then_text(text),
            other => self.then_text(other.to_string()),
        }
    }

    /// Every turn request received so far.
    pub fn seen(&self) -> Vec<TurnRequest> {
        self.inner
            .seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// How many responses are left.
    pub fn remaining(&self) -> usize {
        self.inner
            .queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

fn response(content: Vec<ContentBlock>, stop: StopReason) -> ChatResponse {
    ChatResponse {
        content,
        stop,
        usage: Usage::default(),
        model: "scripted".into(),
        logprobs: None,
    }
}

impl TurnSource for ScriptedTurns {
    fn take_turn<'a>(
        &'a self,
        turn: TurnRequest,
        _step: &'a FanOut,
    ) -> BoxFuture<'a, Result<ChatResponse>> {
        Box::pin(async move {
            self.inner
                .seen
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(turn);
            self.inner
                .queue
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .pop_front()
                .ok_or_else(|| Error::system("scripted turns", "the script has no turn left"))
        })
    }
}

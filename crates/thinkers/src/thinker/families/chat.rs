//! [`ChatThinker`]: the ready-made chat. A [`ReactiveThinker`] whose conversation is durable
//! (resumable by id after a restart), whose answers are published as content stream events, and
//! which reports each turn as [`ChatEvent`]s (answer text token by token where the provider
//! streams, tool activity, the final answer with the conversation's artifacts, failures).

use std::sync::Arc;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::Result;
use crate::conversation::ConversationId;
use crate::job::FanOut;
use crate::llm::{ChatResponse, LlmCall, StreamDelta};
use crate::model::{Depth, Grade, ModelDependent};
use crate::thinker::builder::sealed::HasCore;
use crate::thinker::declaration::{ThinkerDeclaration, parent_thinker_depth};
use crate::thinker::reactive::{ReactiveThinker, ReactiveTurn};
use crate::thinker::state::ThinkerObserver;
use crate::thinker::turn::{ModelTurns, TurnRequest, TurnSource};
use crate::thinker::turn_loop::ThinkerCore;

/// An artifact as a chat reports it: its ref, the tool that made it and its value as JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatArtifact {
    /// The short ref (`@a1`).
    pub reference: String,
    /// The tool whose output it is.
    pub tool: String,
    /// The output as JSON.
    pub value: Value,
}

/// What happens in a chat turn, in order. Serialized with a `type` tag in snake case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ChatEvent {
    /// A person's message was read by the turn (added to the conversation).
    Message {
        /// The message.
        text: String,
    },
    /// A piece of answer text as the provider streamed it. Text streamed before tool calls is
    /// the model's remark on its way to a tool, not an answer.
    Token {
        /// The text.
        text: String,
    },
    /// The model called a tool.
    ToolCall {
        /// The call id.
        id: String,
        /// The tool.
        name: String,
        /// The arguments as the model sent them.
        arguments: Value,
    },
    /// A tool call's result (or why it was refused or failed).
    ToolResult {
        /// The call id it answers.
        id: String,
        /// The tool.
        name: String,
        /// What the model reads.
        content: String,
        /// Whether the call failed or was refused.
        is_error: bool,
    },
    /// A final answer, with the conversation's artifacts.
    Answer {
        /// The answer text.
        text: String,
        /// Every artifact registered in the conversation so far.
        artifacts: Vec<ChatArtifact>,
    },
    /// The turn stopped: a tool call waits for a person's decision (see [`crate::durable`]).
    /// Nothing runs meanwhile; a decision continues the turn.
    Approval {
        /// The approval's id, to decide it by.
        id: String,
        /// The call id (its [`ChatEvent::ToolCall`] came before).
        call_id: String,
        /// The tool.
        tool: String,
    },
    /// The turn failed; the conversation was rolled back and a marker records why.
    Error {
        /// What went wrong.
        message: String,
    },
}

impl ChatEvent {
    /// The event's name (the serialized `type`): `message`, `token`, `tool_call`,
    /// `tool_result`, `answer`, `approval` or `error`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Message { .. } => "message",
            Self::Token { .. } => "token",
            Self::ToolCall { .. } => "tool_call",
            Self::ToolResult { .. } => "tool_result",
            Self::Answer { .. } => "answer",
            Self::Approval { .. } => "approval",
            Self::Error { .. } => "error",
        }
    }
}

/// Where a chat reports its [`ChatEvent`]s: a callback run in order, on the task that produced
/// the event (keep it short). Cheap to clone.
#[derive(Clone)]
pub struct ChatEvents {
    sink: Arc<dyn Fn(ChatEvent) + Send + Sync>,
}

impl std::fmt::Debug for ChatEvents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatEvents").finish_non_exhaustive()
    }
}

impl ChatEvents {
    /// Events handed to `sink`.
    pub fn new(sink: impl Fn(ChatEvent) + Send + Sync + 'static) -> Self {
        Self {
            sink: Arc::new(sink),
        }
    }

    /// Events sent into an unbounded channel, with its receiver.
    pub fn channel() -> (Self, mpsc::UnboundedReceiver<ChatEvent>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let events = Self::new(move |e| {
            // A receiver that went away no longer wants events.
            let _ = tx.send(e);
        });
        (events, rx)
    }

    /// Report an event.
    pub(crate) fn publish(&self, event: ChatEvent) {
        (self.sink)(event);
    }
}

/// The turn source of a chat with events: one streamed [`LlmCall`] per turn, each piece of
/// answer text reported as a [`ChatEvent::Token`] as it arrives.
#[derive(Debug, Clone)]
pub(crate) struct StreamingTurns {
    events: ChatEvents,
}

impl StreamingTurns {
    pub(crate) fn new(events: ChatEvents) -> Self {
        Self { events }
    }
}

impl TurnSource for StreamingTurns {
    fn take_turn<'a>(
        &'a self,
        turn: TurnRequest,
        step: &'a FanOut,
    ) -> BoxFuture<'a, Result<ChatResponse>> {
        Box::pin(async move {
            // A thinker started under the chat (a sub-thinker) answers its caller, not the
            // person: its text is not streamed as the chat's answer.
            if parent_thinker_depth(step.context()).is_some() {
                return ModelTurns.take_turn(turn, step).await;
            }
            let events = self.events.clone();
            let sink = Box::new(move |delta: StreamDelta| {
                if let StreamDelta::Text(text) = delta {
                    events.publish(ChatEvent::Token { text });
                }
            });
            let mut call = LlmCall::new(turn.grade, turn.output, turn.request)
                .class(turn.class)
                .depth(turn.depth)
                .uncorrected()
                .streaming(sink);
            if let Some(pin) = turn.pin {
                call = call.pinned(pin);
            }
            let outcome = step.submit(call).await?;
            Ok(outcome.response)
        })
    }
}

/// The ready-made chat: a [`ReactiveThinker`] with a durable conversation, recorded under the
/// job class `chat` (unless `class` sets another). Give it [`ChatEvents`] to
/// stream answers and tool activity; resume a saved chat with [`ChatThinker::resume`]. Tools,
/// bounds and the other setters are the ones every looping family has.
#[derive(Debug)]
pub struct ChatThinker {
    inner: ReactiveThinker,
}

impl ChatThinker {
    /// A chat with its seat declaration (declare [`Grade::Ceiling`] for the strongest served
    /// model) and its objective.
    pub fn new(declaration: ThinkerDeclaration, objective: impl Into<String>) -> Self {
        Self {
            inner: ReactiveThinker::new(declaration, objective)
                .durable()
                .class("chat"),
        }
    }

    /// Continue the chat saved under `id`.
    #[must_use]
    pub fn resume(mut self, id: ConversationId) -> Self {
        self.inner = self.inner.resume(id);
        self
    }

    /// Report turns to `events`, answers streamed token by token.
    #[must_use]
    pub fn events(mut self, events: ChatEvents) -> Self {
        self.inner = self.inner.events(events);
        self
    }

    /// The effort of every turn ([`Depth::Standard`] unless set).
    #[must_use]
    pub fn depth(mut self, depth: Depth) -> Self {
        self.inner = self.inner.depth(depth);
        self
    }

    /// Tool calls one message may cause before an answer is forced (25 unless set).
    #[must_use]
    pub fn max_tool_calls_per_message(mut self, budget: u32) -> Self {
        self.inner = self.inner.max_tool_calls_per_message(budget);
        self
    }

    /// Hand the chat a message, before or during the turn that answers it; never refused (see
    /// [`ReactiveThinker::add_message`]).
    pub fn add_message(&self, text: impl Into<String>) -> crate::thinker::Delivery {
        self.inner.add_message(text)
    }

    /// The job of the next turn (see [`ReactiveThinker::turn`]).
    pub fn turn(&self) -> ReactiveTurn {
        self.inner.turn()
    }

    /// The job that goes on with a turn that stopped for a person, once its calls are decided
    /// (see [`ReactiveThinker::continue_turn`]).
    pub fn continue_turn(&self) -> ReactiveTurn {
        self.inner.continue_turn()
    }

    /// Whether a turn is open.
    pub fn is_turn_open(&self) -> bool {
        self.inner.is_turn_open()
    }

    /// The conversation's id, once known.
    pub fn conversation_id(&self) -> Option<ConversationId> {
        self.inner.conversation_id()
    }

    /// A shared view of the chat's state.
    pub fn observer(&self) -> ThinkerObserver {
        self.inner.observer()
    }

    /// The reactive thinker underneath.
    pub fn reactive(&self) -> &ReactiveThinker {
        &self.inner
    }
}

impl HasCore for ChatThinker {
    fn core_mut(&mut self) -> &mut ThinkerCore {
        self.inner.core_mut()
    }
}
shared_setters!(impl for ChatThinker);
loop_setters!(impl for ChatThinker);

impl ModelDependent for ChatThinker {
    fn grade(&self) -> Grade {
        self.inner.grade()
    }
    fn set_grade(&mut self, grade: Grade) {
        self.inner.set_grade(grade);
    }
    fn pin(&self) -> Option<&str> {
        self.inner.pin()
    }
    fn pin_model(&mut self, entry: String) {
        self.inner.pin_model(entry);
    }
}

//! [`ReactiveThinker`]: a thinker that answers a person's messages, one turn at a time, over a
//! conversation that lasts between turns.
//!
//! It has no structured input. Messages reach it through [`ReactiveThinker::add_message`]; one
//! run of the job from [`ReactiveThinker::turn`] (a *turn*) answers every waiting message and
//! completes. The shared loop ([`super::turn_loop`]) does the work; this module is the family's
//! answer phase ([`ReactivePhase`]): it drains the inbox at the start of every step, counts tool
//! calls against a per-message budget (forcing an answer without tools when it is spent), answers
//! in plain text, closes the turn only when no message is waiting, and on a failed exchange rolls
//! the conversation back to the person's last message and records why no answer came.

use std::borrow::Cow;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::chat::{ChatEvent, ChatEvents, StreamingTurns};
use super::conversing;
use super::declaration::{ThinkerDeclaration, ThinkerInput, effective_depth, parent_thinker_depth};
use super::events::{ContentStream, ContentStreamEvent, META_CONTENT};
use super::state::ThinkerObserver;
use super::turn::TurnSource;
use super::turn_loop::{AnswerPhase, StepPlan, ThinkerCore, ThinkerHooks, ThinkerLimits, turns};
use crate::conversation::{ContentBlock, ConversationId, ConversationService, Message};
use crate::job::{JobContext, Orchestrator};
use crate::llm::{ChatResponse, ResponseSchema, ToolCallView};
use crate::model::{Depth, Grade, ModelDependent};
use crate::tool::{Tool, ToolProvider, TypedToolProvider};
use crate::{Error, Result};

/// Tool calls one message may cause unless the thinker sets another budget.
pub const DEFAULT_TOOL_CALLS_PER_MESSAGE: u32 = 25;

/// Model turns one run may take unless the thinker sets other limits. A turn of a chat may
/// answer several messages, each with its own tool budget, so the bound is wider than a
/// goal-directed thinker's.
pub const DEFAULT_CHAT_ITERATIONS: u32 = 40;

/// What the model is told when the tool budget of a message is spent.
fn forced_note(budget: u32) -> String {
    format!(
        "The tool budget for this message ({budget} calls) is spent; no more tools will run. \
         Answer the person now from what you have gathered, and say plainly which parts of \
         your answer remain unverified."
    )
}

/// What the model is told when it ended a step with neither text nor tool calls.
const NUDGE: &str = "No answer was given. Answer the person's latest message in plain text, or \
call a tool if you need one.";

/// The answer recorded when a forced final call still produced no text.
const FORCED_EMPTY: &str = "I ran out of my tool budget for this message before I could write \
an answer; nothing I gathered is verified. Please ask again, perhaps more narrowly.";

/// The marker recorded in place of an answer that did not come.
pub(crate) fn no_answer_marker(error: &Error) -> String {
    format!("[no answer: {}]", error.for_model())
}

#[derive(Debug, Default)]
struct InboxState {
    pending: Vec<String>,
    started: bool,
    closed: bool,
}

/// The messages waiting for one turn. Open from [`ReactiveThinker::turn`] until the turn closes.
#[derive(Debug, Default)]
pub(crate) struct Inbox {
    state: Mutex<InboxState>,
}

impl Inbox {
    fn lock(&self) -> MutexGuard<'_, InboxState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn add(&self, text: String) -> bool {
        let mut st = self.lock();
        if st.closed {
            return false;
        }
        st.pending.push(text);
        true
    }

    fn is_closed(&self) -> bool {
        self.lock().closed
    }

    /// Mark the turn as running. Refused when it ran (or closed) already, or when no message
    /// waits (the turn then closes: there is nothing to answer).
    fn start(&self) -> Result<()> {
        let mut st = self.lock();
        if st.started || st.closed {
            return Err(Error::invalid_input(
                "turn",
                None,
                "this turn has run already; start a new one with ReactiveThinker::turn",
            ));
        }
        st.started = true;
        if st.pending.is_empty() {
            st.closed = true;
            return Err(Error::invalid_input(
                "message",
                None,
                "the turn has no message to answer; add one with add_message before running it",
            ));
        }
        Ok(())
    }

    fn drain(&self) -> Vec<String> {
        std::mem::take(&mut self.lock().pending)
    }

    /// Close the turn unless a message is waiting; `true` when it closed.
    fn close_if_empty(&self) -> bool {
        let mut st = self.lock();
        if st.pending.is_empty() {
            st.closed = true;
        }
        st.closed
    }

    /// Close the turn whatever is waiting, returning what was.
    fn close(&self) -> Vec<String> {
        let mut st = self.lock();
        st.closed = true;
        std::mem::take(&mut st.pending)
    }
}

/// A thinker that answers a person's messages turn by turn, in plain text.
///
/// * [`ReactiveThinker::add_message`] queues a message for the open turn and returns `true`; a
///   message sent while the model works is read at the next step of the loop. When no turn is
///   open (none started yet, or the last one closed) it returns `false`: call
///   [`ReactiveThinker::turn`], add the message, and run the job. The new turn continues the
///   conversation the last one left (or the one named by [`ReactiveThinker::resume`]).
/// * Tool calls are budgeted per message ([`DEFAULT_TOOL_CALLS_PER_MESSAGE`] unless set); when
///   the budget is spent, one more call must answer without tools and say what is unverified.
/// * Depth is the thinker's own ([`Depth::Standard`] unless set), clamped under a calling
///   thinker. A chat wanting the strongest served model declares [`Grade::Ceiling`].
/// * A failed exchange fails the turn but loses nothing: the conversation is cut back to the
///   person's last message, an assistant note `[no answer: <why>]` takes the answer's place, and
///   the next turn's model reads it.
pub struct ReactiveThinker {
    core: ThinkerCore,
    observer: ThinkerObserver,
    current: Arc<Mutex<Option<Arc<Inbox>>>>,
    depth: Depth,
    budget: u32,
    resume: Option<ConversationId>,
    events: Option<ChatEvents>,
    custom_turns: bool,
}

impl std::fmt::Debug for ReactiveThinker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReactiveThinker")
            .field("core", &self.core)
            .field("depth", &self.depth)
            .field("budget", &self.budget)
            .field("resume", &self.resume)
            .finish_non_exhaustive()
    }
}

impl ReactiveThinker {
    /// A reactive thinker with its seat declaration and its objective (the system content).
    pub fn new(declaration: ThinkerDeclaration, objective: impl Into<String>) -> Self {
        let mut core = ThinkerCore::new(declaration, objective.into());
        core.class = "reactive_thinker".into();
        core.limits.max_iterations = DEFAULT_CHAT_ITERATIONS;
        Self {
            core,
            observer: ThinkerObserver::default(),
            current: Arc::default(),
            depth: Depth::Standard,
            budget: DEFAULT_TOOL_CALLS_PER_MESSAGE,
            resume: None,
            events: None,
            custom_turns: false,
        }
    }

    /// Declare a typed tool.
    #[must_use]
    pub fn tool<T: Tool>(self, tool: T) -> Self {
        self.provider(Arc::new(TypedToolProvider::new(tool)))
    }

    /// Declare a tool provider.
    #[must_use]
    pub fn provider(mut self, provider: Arc<dyn ToolProvider>) -> Self {
        self.core.registry.register(provider);
        self
    }

    /// Answer turns from this source instead of the model (tests drive the loop this way).
    #[must_use]
    pub fn turns(mut self, source: impl TurnSource) -> Self {
        self.core.turns = Arc::new(source);
        self.custom_turns = true;
        self
    }

    /// Use these hooks.
    #[must_use]
    pub fn hooks(mut self, hooks: impl ThinkerHooks) -> Self {
        self.core.hooks = Arc::new(hooks);
        self
    }

    /// Replace the bounds of a run (model turns per run, tool calls per turn).
    #[must_use]
    pub fn limits(mut self, limits: ThinkerLimits) -> Self {
        self.core.limits = limits;
        self
    }

    /// The job class recorded for turns (model calls are recorded as `<class>.turn`).
    #[must_use]
    pub fn class(mut self, class: impl Into<String>) -> Self {
        self.core.class = class.into();
        self
    }

    /// The effort of every turn ([`Depth::Standard`] unless set).
    #[must_use]
    pub fn depth(mut self, depth: Depth) -> Self {
        self.depth = depth;
        self
    }

    /// Change the effort for the turns started from now on.
    pub fn set_depth(&mut self, depth: Depth) {
        self.depth = depth;
    }

    /// Tool calls one message may cause before an answer is forced (25 unless set).
    #[must_use]
    pub fn max_tool_calls_per_message(mut self, budget: u32) -> Self {
        self.budget = budget;
        self
    }

    /// Keep new conversations durable (saved after every step, resumable by id after a restart).
    #[must_use]
    pub fn durable(mut self) -> Self {
        self.core.durable = true;
        self
    }

    /// Continue the conversation saved under `id` (an unknown id fails the first turn with an
    /// error naming it).
    #[must_use]
    pub fn resume(mut self, id: ConversationId) -> Self {
        self.resume = Some(id);
        self
    }

    /// Use this conversation service instead of the one registered on the dispatcher.
    #[must_use]
    pub fn conversations(mut self, service: ConversationService) -> Self {
        self.core.conversations = Some(service);
        self
    }

    /// Publish answers of direct runs to this stream (otherwise to a registered one, if any).
    #[must_use]
    pub fn content_stream(mut self, stream: ContentStream) -> Self {
        self.core.content = Some(stream);
        self
    }

    /// Report what happens in each turn (messages read, answer tokens, tool activity, answers,
    /// failures) to `events`. Unless a turn source was set, answers are then requested as
    /// streams so their text arrives token by token.
    #[must_use]
    pub fn events(mut self, events: ChatEvents) -> Self {
        if !self.custom_turns {
            self.core.turns = Arc::new(StreamingTurns::new(events.clone()));
        }
        self.events = Some(events);
        self
    }

    /// Queue a message for the open turn. `false` when no turn is open: start one with
    /// [`ReactiveThinker::turn`] and add the message again.
    pub fn add_message(&self, text: impl Into<String>) -> bool {
        let current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        match current.as_ref() {
            Some(inbox) => inbox.add(text.into()),
            None => false,
        }
    }

    /// Whether a turn is open (messages added now are answered by it).
    pub fn is_turn_open(&self) -> bool {
        let current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        current.as_ref().is_some_and(|i| !i.is_closed())
    }

    /// The job of the next turn. When a turn is open already, the job shares its inbox (only one
    /// of them runs; a second run of one turn fails with an error naming `turn`). Run one turn
    /// of a thinker at a time: the next continues the conversation the last one saved.
    pub fn turn(&self) -> ReactiveTurn {
        let inbox = {
            let mut current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
            match current.as_ref() {
                Some(open) if !open.is_closed() => open.clone(),
                _ => {
                    let fresh = Arc::new(Inbox::default());
                    *current = Some(fresh.clone());
                    fresh
                }
            }
        };
        ReactiveTurn {
            core: self.core.clone(),
            observer: self.observer.clone(),
            inbox,
            depth: self.depth,
            budget: self.budget,
            resume: self.resume.clone(),
            events: self.events.clone(),
        }
    }

    /// The declaration in force.
    pub fn declaration(&self) -> &ThinkerDeclaration {
        &self.core.declaration
    }

    /// The depth of the turns started from now on.
    pub fn current_depth(&self) -> Depth {
        self.depth
    }

    /// The tool-call budget per message.
    pub fn tool_budget(&self) -> u32 {
        self.budget
    }

    /// A shared view of the thinker's state, readable after a turn.
    pub fn observer(&self) -> ThinkerObserver {
        self.observer.clone()
    }

    /// The conversation's id: the one being resumed, or the one the first turn started.
    pub fn conversation_id(&self) -> Option<ConversationId> {
        self.observer
            .conversation_id()
            .or_else(|| self.resume.clone())
    }

    /// The conversation so far as text.
    pub fn transcript(&self) -> String {
        self.observer.transcript()
    }
}

impl ModelDependent for ReactiveThinker {
    fn grade(&self) -> Grade {
        self.core.declaration.grade()
    }
    fn set_grade(&mut self, grade: Grade) {
        self.core.declaration.set_grade(grade);
    }
    fn pin(&self) -> Option<&str> {
        self.core.pin.as_deref()
    }
    fn pin_model(&mut self, entry: String) {
        self.core.pin = Some(entry);
    }
}

/// One turn of a [`ReactiveThinker`]: an orchestrator whose output is the last answer's text.
pub struct ReactiveTurn {
    core: ThinkerCore,
    observer: ThinkerObserver,
    inbox: Arc<Inbox>,
    depth: Depth,
    budget: u32,
    resume: Option<ConversationId>,
    events: Option<ChatEvents>,
}

impl std::fmt::Debug for ReactiveTurn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReactiveTurn")
            .field("core", &self.core)
            .field("depth", &self.depth)
            .finish_non_exhaustive()
    }
}

impl ModelDependent for ReactiveTurn {
    fn grade(&self) -> Grade {
        self.core.declaration.grade()
    }
    fn set_grade(&mut self, grade: Grade) {
        self.core.declaration.set_grade(grade);
    }
    fn pin(&self) -> Option<&str> {
        self.core.pin.as_deref()
    }
    fn pin_model(&mut self, entry: String) {
        self.core.pin = Some(entry);
    }
}

impl ReactiveTurn {
    fn emit(&self, event: ChatEvent) {
        if let Some(events) = &self.events {
            events.publish(event);
        }
    }

    async fn run(&mut self, cx: &JobContext) -> Result<String> {
        self.inbox.start()?;
        let depth = effective_depth(self.depth, cx);
        let service = conversing::service_for(&self.core, cx);
        let input = ThinkerInput::query("").with_depth(depth);
        if let Err(e) = conversing::open(
            &self.core,
            &input,
            depth,
            self.resume.as_ref(),
            &service,
            &self.observer,
        )
        .await
        {
            // No conversation to put them in: the waiting messages go back to the caller as the
            // turn's failure (they were never read).
            let lost = self.inbox.close();
            return Err(if lost.is_empty() {
                e
            } else {
                Error::invalid_input(
                    "conversation",
                    self.resume.as_ref().map(ToString::to_string),
                    format!(
                        "{} message(s) were not answered because the conversation could not be \
                         opened: {e}",
                        lost.len()
                    ),
                )
            });
        }
        let mut phase = ReactivePhase {
            inbox: self.inbox.clone(),
            budget: self.budget,
            used: 0,
            forced: false,
            person_end: None,
            events: self.events.clone(),
            content: self.core.content.clone(),
        };
        let outcome = turns(&self.core, &mut phase, depth, &service, &self.observer, cx).await;
        match outcome {
            Ok(text) => {
                conversing::save_if_durable(&service, &self.observer).await?;
                Ok(text)
            }
            Err(e) => {
                phase.roll_back(&e, &self.observer);
                if let Err(save) = conversing::save_if_durable(&service, &self.observer).await {
                    tracing::warn!(error = %save, "could not save a chat rolled back after a failure");
                }
                Err(e)
            }
        }
    }
}

impl Orchestrator for ReactiveTurn {
    type Output = String;

    fn class(&self) -> Cow<'static, str> {
        Cow::Owned(self.core.class.clone())
    }

    /// The loop bounds its own corrections; the dispatcher never re-runs a turn.
    fn max_corrections(&self) -> u32 {
        0
    }

    async fn execute(&mut self, cx: &JobContext) -> Result<String> {
        let outcome = self.run(cx).await;
        if let Err(e) = &outcome {
            self.emit(ChatEvent::Error {
                message: e.to_string(),
            });
        }
        outcome
    }
}

/// The answer phase of a reactive turn.
pub(crate) struct ReactivePhase {
    inbox: Arc<Inbox>,
    budget: u32,
    /// Tool calls made for the latest message(s).
    used: u32,
    /// Whether the answer-now note was given for the latest message(s).
    forced: bool,
    /// The conversation's length right after the person's latest message.
    person_end: Option<usize>,
    events: Option<ChatEvents>,
    content: Option<ContentStream>,
}

impl ReactivePhase {
    fn emit(&self, event: ChatEvent) {
        if let Some(events) = &self.events {
            events.publish(event);
        }
    }

    fn publish(&self, text: &str, cx: &JobContext) {
        if parent_thinker_depth(cx).is_some() {
            return;
        }
        cx.set_metadata(META_CONTENT, serde_json::Value::String(text.to_owned()));
        let event = ContentStreamEvent {
            job: cx.id(),
            class: cx.class().to_owned(),
            content: text.to_owned(),
        };
        match &self.content {
            Some(stream) => stream.publish(event),
            None => {
                if let Some(stream) = cx.services().get::<ContentStream>() {
                    stream.publish(event);
                }
            }
        }
    }

    /// After a failure: close the turn, cut the conversation back to the person's last message,
    /// record why no answer came in the answer's place, then keep any message that arrived too
    /// late to be read.
    fn roll_back(&mut self, error: &Error, observer: &ThinkerObserver) {
        let late = self.inbox.close();
        let mut st = observer.lock();
        let Some(conv) = st.conversation.as_mut() else {
            return;
        };
        if let Some(end) = self.person_end {
            if conv.messages().len() > end {
                conv.truncate(end);
            }
            conv.push(Message::assistant_text(no_answer_marker(error)));
        }
        for text in late {
            conv.push(Message::user_text(text));
        }
    }
}

impl AnswerPhase for ReactivePhase {
    type Output = String;

    /// Used only to size a request for the compaction check: the answer is plain text.
    fn schema(&self, _native_thinking: bool) -> ResponseSchema {
        ResponseSchema {
            name: "text".into(),
            schema: serde_json::json!({"type": "string"}),
        }
    }

    fn response_schema(&self, _native_thinking: bool) -> Option<ResponseSchema> {
        None
    }

    fn uses_refs(&self) -> bool {
        false
    }

    fn begin_step(&mut self, observer: &ThinkerObserver) -> StepPlan {
        let arrived = self.inbox.drain();
        if !arrived.is_empty() {
            {
                let mut st = observer.lock();
                for text in &arrived {
                    st.push(Message::user_text(text.clone()));
                }
                self.person_end = st.conversation.as_ref().map(|c| c.messages().len());
            }
            for text in arrived {
                self.emit(ChatEvent::Message { text });
            }
            self.used = 0;
            self.forced = false;
        }
        if self.used < self.budget {
            return StepPlan::default();
        }
        if !self.forced {
            self.forced = true;
            tracing::info!(
                budget = self.budget,
                "tool budget of a message spent; asking for an answer without tools"
            );
            observer
                .lock()
                .push(Message::user_text(forced_note(self.budget)));
        }
        StepPlan { answer_now: true }
    }

    fn after_round(&mut self, calls: &[ToolCallView<'_>], results: &[ContentBlock]) {
        self.used = self
            .used
            .saturating_add(u32::try_from(calls.len()).unwrap_or(u32::MAX));
        for call in calls {
            self.emit(ChatEvent::ToolCall {
                id: call.id.to_owned(),
                name: call.name.to_owned(),
                arguments: call.arguments.clone(),
            });
        }
        for result in results {
            if let ContentBlock::ToolResult {
                call_id,
                name,
                content,
                is_error,
            } = result
            {
                self.emit(ChatEvent::ToolResult {
                    id: call_id.clone(),
                    name: name.clone(),
                    content: content.clone(),
                    is_error: *is_error,
                });
            }
        }
    }

    fn finish(
        &mut self,
        response: &ChatResponse,
        _native_thinking: bool,
        observer: &ThinkerObserver,
        cx: &JobContext,
    ) -> Result<Option<String>> {
        let mut text = response.text();
        let called_tools = !response.tool_calls().is_empty();
        if text.trim().is_empty() {
            if !self.forced {
                observer.lock().push(Message::user_text(NUDGE));
                return Ok(None);
            }
            text = FORCED_EMPTY.to_owned();
        }
        let artifacts = {
            let mut st = observer.lock();
            // Calls made despite a forced answer were not run: keep only what was said.
            if called_tools || response.text().trim().is_empty() {
                st.push(Message::assistant_text(text.clone()));
            } else {
                st.push(response.to_message());
            }
            st.artifacts
                .iter()
                .map(|a| super::chat::ChatArtifact {
                    reference: a.reference.to_string(),
                    tool: a.tool.clone(),
                    value: a.output.json.clone(),
                })
                .collect()
        };
        // Close first (when nothing waits), so whoever sees the answer sees a closed turn.
        let closed = self.inbox.close_if_empty();
        self.emit(ChatEvent::Answer {
            text: text.clone(),
            artifacts,
        });
        self.publish(&text, cx);
        if closed {
            Ok(Some(text))
        } else {
            // Messages arrived while this answer was written: the next step reads them.
            Ok(None)
        }
    }
}

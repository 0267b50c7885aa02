//! [`ReactiveThinker`]: a thinker that answers a person's messages, one turn at a time, over a
//! conversation that lasts between turns.
//!
//! It has no structured input. Messages reach it through [`ReactiveThinker::add_message`]; one
//! run of the job from [`ReactiveThinker::turn`] (a *turn*) answers every waiting message and
//! completes. The shared loop does the work; the family's answer phase
//! (`reactive_phase.rs`) drains the inbox at the start of every step, counts tool
//! calls against a per-message budget (forcing an answer without tools when it is spent), answers
//! in plain text, closes the turn only when no message is waiting, and on a failed exchange rolls
//! the conversation back to the person's last message and records why no answer came.

use std::borrow::Cow;
use std::sync::{Arc, Mutex, PoisonError};

use crate::conversation::ConversationId;
use crate::job::{JobContext, Orchestrator};
use crate::model::Depth;
use crate::thinker::builder::sealed::HasCore;
use crate::thinker::chat::{ChatEvent, ChatEvents, StreamingTurns};
use crate::thinker::conversing;
use crate::thinker::declaration::{ThinkerDeclaration, ThinkerInput, effective_depth};
use crate::thinker::reactive_phase::{Inbox, MAX_REASON_BYTES, ReactivePhase, clip};
use crate::thinker::state::ThinkerObserver;
use crate::thinker::turn::Turns;
use crate::thinker::turn_loop::{ThinkerCore, turns};
use crate::{Error, Result};

/// Tool calls one message may cause unless the thinker sets another budget.
pub const DEFAULT_TOOL_CALLS_PER_MESSAGE: u32 = 25;

/// Model turns one run may take unless the thinker sets other limits. A turn of a chat may
/// answer several messages, each with its own tool budget, so the bound is wider than a
/// goal-directed thinker's.
pub const DEFAULT_CHAT_ITERATIONS: u32 = 40;

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
///   thinker. A chat wanting the strongest served model declares [`Grade::Ceiling`](crate::model::Grade::Ceiling).
/// * A failed exchange fails the turn but loses nothing: the conversation is cut back to the
///   person's last message, an assistant note `[no answer: <why>]` takes the answer's place (the
///   record and the page show why), and the next turn's model reads only that the turn failed
///   ([`crate::conversation::no_answer::FAILED_TURN_FOR_MODEL`]), never why.
pub struct ReactiveThinker {
    core: ThinkerCore,
    observer: ThinkerObserver,
    current: Arc<Mutex<Option<Arc<Inbox>>>>,
    depth: Depth,
    budget: u32,
    resume: Option<ConversationId>,
    events: Option<ChatEvents>,
    /// The streamed turns [`ReactiveThinker::events`] asks for: a turn takes them unless
    /// [`ReactiveThinker::turns`] set a source (in either order).
    streaming: Option<Turns>,
    /// Messages that arrived while a turn stopped for a person: the turn that goes on reads
    /// them.
    carried: Arc<Mutex<Vec<String>>>,
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
            streaming: None,
            carried: Arc::default(),
        }
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

    /// Continue the conversation saved under `id` (an unknown id fails the first turn with an
    /// error naming it).
    #[must_use]
    pub fn resume(mut self, id: ConversationId) -> Self {
        self.resume = Some(id);
        self
    }

    /// Report what happens in each turn (messages read, answer tokens, tool activity, answers,
    /// failures) to `events`. Unless a turn source was set, answers are then requested as
    /// streams so their text arrives token by token.
    #[must_use]
    pub fn events(mut self, events: ChatEvents) -> Self {
        self.streaming = Some(Turns::from_source(StreamingTurns::new(events.clone())));
        self.events = Some(events);
        self
    }

    /// Hand the thinker a message; it is never refused. It joins the open turn (read when the
    /// turn starts, or at the running turn's next step), else it waits, with any other message
    /// added meanwhile, for the next [`ReactiveThinker::turn`]. So a message may come before or
    /// after the turn that answers it is made. The [`Delivery`] says which: a
    /// [`Delivery::Waiting`] message is answered only once someone runs a `turn`.
    pub fn add_message(&self, text: impl Into<String>) -> Delivery {
        let mut current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        let mut text = text.into();
        if let Some(inbox) = current.as_ref() {
            match inbox.add(text) {
                Ok(true) => return Delivery::Joined,
                Ok(false) => return Delivery::Waiting,
                // The turn has closed: the message starts the next one.
                Err(back) => text = back,
            }
        }
        let fresh = Arc::new(Inbox::default());
        // A fresh inbox is open and unclaimed: the message waits for the next turn.
        let _ = fresh.add(text);
        *current = Some(fresh);
        Delivery::Waiting
    }

    /// Whether a turn is open (messages added now are answered by it).
    pub fn is_turn_open(&self) -> bool {
        let current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        current.as_ref().is_some_and(|i| !i.is_closed())
    }

    /// The job of the next turn: it answers the messages waiting for it and those added while
    /// it runs. When a turn is open already, the job shares its inbox (only one of them runs; a
    /// second run of one turn fails with an error naming `turn`). Run one turn
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
        inbox.claim();
        self.turn_with(inbox)
    }

    /// The job that goes on with a turn that stopped for a person (see [`crate::durable`]),
    /// once the pending calls are decided: it answers the step's calls (the approved ones run,
    /// the denied ones are answered with the reason, the finished ones come from the journal)
    /// and continues, reading any message that arrived meanwhile. Fails with an error naming
    /// `turn` when the conversation has no step waiting.
    pub fn continue_turn(&self) -> ReactiveTurn {
        let carried =
            std::mem::take(&mut *self.carried.lock().unwrap_or_else(PoisonError::into_inner));
        let inbox = Arc::new(Inbox::continuing(carried));
        *self.current.lock().unwrap_or_else(PoisonError::into_inner) = Some(inbox.clone());
        self.turn_with(inbox)
    }

    fn turn_with(&self, inbox: Arc<Inbox>) -> ReactiveTurn {
        let mut core = self.core.clone();
        if let (Turns::Model, Some(streaming)) = (&core.turns, &self.streaming) {
            core.turns = streaming.clone();
        }
        ReactiveTurn {
            core,
            observer: self.observer.clone(),
            inbox,
            depth: self.depth,
            budget: self.budget,
            resume: self.resume.clone(),
            fresh: false,
            events: self.events.clone(),
            carried: self.carried.clone(),
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

seat_in_core!(impl for ReactiveThinker);
shared_setters!(impl for ReactiveThinker);
loop_setters!(impl for ReactiveThinker);

impl HasCore for ReactiveThinker {
    fn core_mut(&mut self) -> &mut ThinkerCore {
        &mut self.core
    }
}

/// Where [`ReactiveThinker::add_message`] put a message (it never refuses one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// A turn's job holds the open turn it joined: that turn answers it.
    Joined,
    /// No turn's job holds it yet: the next [`ReactiveThinker::turn`] answers it (with any
    /// other message waiting).
    Waiting,
}

/// One turn of a [`ReactiveThinker`]: an orchestrator whose output is the last answer's text.
pub struct ReactiveTurn {
    core: ThinkerCore,
    observer: ThinkerObserver,
    inbox: Arc<Inbox>,
    depth: Depth,
    budget: u32,
    resume: Option<ConversationId>,
    /// Load the conversation from the store even when the thinker holds a copy.
    fresh: bool,
    events: Option<ChatEvents>,
    carried: Arc<Mutex<Vec<String>>>,
}

impl std::fmt::Debug for ReactiveTurn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReactiveTurn")
            .field("core", &self.core)
            .field("depth", &self.depth)
            .finish_non_exhaustive()
    }
}

seat_in_core!(impl for ReactiveTurn);

impl ReactiveTurn {
    /// Continue the conversation saved under `id` as the store has it now, dropping the copy
    /// the thinker holds: for a chat that another process may have continued since this
    /// thinker's last turn (several chat hosts on one database).
    #[must_use]
    pub fn resume_stored(mut self, id: ConversationId) -> Self {
        self.resume = Some(id);
        self.fresh = true;
        self
    }

    /// Give the turn up without running it: it closes, and the messages added to it are
    /// returned (no model read them). A message added from now on starts the next turn.
    pub fn abandon(self) -> Vec<String> {
        self.inbox.close()
    }

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
        if self.fresh {
            // The copy may be stale; `open` loads the stored one in its place.
            self.observer.lock().conversation = None;
        }
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
        // A chat turn journals its tool calls under its conversation, so that a decision on a
        // call that waited for a person continues the turn without running the others again.
        let conversation = self.observer.conversation_id();
        if let Some(id) = &conversation {
            cx.set_metadata(
                crate::durable::META_JOURNAL_RUN,
                serde_json::Value::String(format!("conversation:{id}")),
            );
        }
        if self.inbox.continues() && !conversing::has_open_calls(&self.observer) {
            self.inbox.close();
            return Err(Error::invalid_input(
                "turn",
                conversation.map(|c| c.to_string()),
                "the conversation has no step waiting for a person; send a message instead",
            ));
        }
        let mut phase = ReactivePhase::new(
            self.inbox.clone(),
            self.budget,
            self.events.clone(),
            self.core.content.clone(),
        );
        let outcome = turns(&self.core, &mut phase, depth, &service, &self.observer, cx).await;
        match outcome {
            Ok(text) => {
                conversing::save_if_durable(&service, &self.observer).await?;
                Ok(text)
            }
            Err(e @ Error::AwaitingApproval { .. }) => {
                // The step waits for a person, kept with its calls; messages that arrived
                // meanwhile are read by the turn that goes on.
                let late = self.inbox.close();
                self.carried
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .extend(late);
                conversing::save_if_durable(&service, &self.observer).await?;
                Err(e)
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
        match &outcome {
            Err(Error::AwaitingApproval { pending }) => {
                for p in pending {
                    self.emit(ChatEvent::Approval {
                        id: p.id.clone(),
                        call_id: p.call_id.clone(),
                        tool: p.tool.clone(),
                    });
                }
            }
            Err(e) => self.emit(ChatEvent::Error {
                message: clip(&e.to_string(), MAX_REASON_BYTES),
            }),
            Ok(_) => {}
        }
        outcome
    }
}

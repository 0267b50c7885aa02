//! The answer phase of a reactive turn ([`crate::thinker::reactive`]): the inbox of waiting messages,
//! draining it at each step, the per-message tool budget and its forced answer, plain-text
//! answers that close the turn only when nothing waits, and the rollback after a failure.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::conversation::{ContentBlock, Message};
use crate::job::JobContext;
use crate::llm::{ChatResponse, ResponseSchema, ToolCallView};
use crate::thinker::chat::{ChatArtifact, ChatEvent, ChatEvents};
use crate::thinker::events::{self, ContentStream};
use crate::thinker::state::ThinkerObserver;
use crate::thinker::turn_loop::{AnswerPhase, StepPlan};
use crate::{Error, Result};

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

/// The longest reason a marker or an error event carries (an iteration-limit error carries a
/// whole transcript tail, which the conversation already holds).
pub(crate) const MAX_REASON_BYTES: usize = 600;

/// `text`, cut at a character boundary after at most `max` bytes, marked when cut.
pub(crate) fn clip(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// The marker recorded in place of an answer that did not come: why, for the record and the
/// page (a model reads only that the turn failed; see [`crate::conversation::no_answer`]).
fn no_answer_marker(error: &Error) -> Message {
    crate::conversation::no_answer::marker(&clip(&error.for_model(), MAX_REASON_BYTES))
}

#[derive(Debug, Default)]
struct InboxState {
    pending: Vec<String>,
    started: bool,
    closed: bool,
    /// A turn's job holds this inbox (it was opened by `turn`, or messages were added before
    /// the job that now holds them was made).
    claimed: bool,
    /// The turn goes on with a step that stopped for a person: it may start without a message.
    continues: bool,
}

/// The messages waiting for one turn. Open from the first message or
/// [`crate::thinker::ReactiveThinker::turn`], whichever comes first, until the turn closes.
#[derive(Debug, Default)]
pub(crate) struct Inbox {
    state: Mutex<InboxState>,
}

impl Inbox {
    fn lock(&self) -> MutexGuard<'_, InboxState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// An inbox for a turn that goes on with the calls a person decided, holding `carried`
    /// (messages that arrived while the turn waited).
    pub(crate) fn continuing(carried: Vec<String>) -> Self {
        Self {
            state: Mutex::new(InboxState {
                pending: carried,
                continues: true,
                claimed: true,
                ..InboxState::default()
            }),
        }
    }

    /// Whether the turn goes on with a step that stopped for a person.
    pub(crate) fn continues(&self) -> bool {
        self.lock().continues
    }

    /// Queue `text`, or hand it back when the turn has closed (it belongs to the next turn).
    /// `Ok(true)` when a turn's job holds the inbox already.
    pub(crate) fn add(&self, text: String) -> Result<bool, String> {
        let mut st = self.lock();
        if st.closed {
            return Err(text);
        }
        st.pending.push(text);
        Ok(st.claimed)
    }

    /// A turn's job takes this inbox.
    pub(crate) fn claim(&self) {
        self.lock().claimed = true;
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.lock().closed
    }

    /// Mark the turn as running. Refused when it ran (or closed) already, or when no message
    /// waits (the turn then closes: there is nothing to answer).
    pub(crate) fn start(&self) -> Result<()> {
        let mut st = self.lock();
        if st.started || st.closed {
            return Err(Error::invalid_input(
                "turn",
                None,
                "this turn has run already; start a new one with ReactiveThinker::turn",
            ));
        }
        st.started = true;
        if st.pending.is_empty() && !st.continues {
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
    pub(crate) fn close(&self) -> Vec<String> {
        let mut st = self.lock();
        st.closed = true;
        std::mem::take(&mut st.pending)
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
    pub(crate) fn new(
        inbox: Arc<Inbox>,
        budget: u32,
        events: Option<ChatEvents>,
        content: Option<ContentStream>,
    ) -> Self {
        Self {
            inbox,
            budget,
            used: 0,
            forced: false,
            person_end: None,
            events,
            content,
        }
    }

    fn emit(&self, event: ChatEvent) {
        if let Some(events) = &self.events {
            events.publish(event);
        }
    }

    /// After a failure: close the turn, cut the conversation back to the person's last message,
    /// record why no answer came in the answer's place, then keep any message that arrived too
    /// late to be read.
    pub(crate) fn roll_back(&mut self, error: &Error, observer: &ThinkerObserver) {
        let late = self.inbox.close();
        let mut st = observer.lock();
        let Some(conv) = st.conversation.as_mut() else {
            return;
        };
        if let Some(end) = self.person_end {
            if conv.messages().len() > end {
                conv.truncate(end);
            }
            conv.push(no_answer_marker(error));
        }
        for text in late {
            conv.push(Message::user_text(text));
        }
    }
}

impl AnswerPhase for ReactivePhase {
    type Output = String;

    /// The answer is plain text: no answer schema.
    fn response_schema(&self, _native_thinking: bool) -> Option<ResponseSchema> {
        None
    }

    fn uses_refs(&self) -> bool {
        false
    }

    /// A chat keeps a step that stopped for a person: the decision continues the same turn.
    fn keeps_paused_calls(&self) -> bool {
        true
    }

    fn begin_step(&mut self, observer: &ThinkerObserver) -> StepPlan {
        let arrived = self.inbox.drain();
        let joined = !arrived.is_empty();
        if joined {
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
            return StepPlan {
                answer_now: false,
                arrived: joined,
            };
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
        StepPlan {
            answer_now: true,
            arrived: joined,
        }
    }

    fn before_round(&mut self, calls: &[ToolCallView<'_>]) {
        for call in calls {
            self.emit(ChatEvent::ToolCall {
                id: call.id.to_owned(),
                name: call.name.to_owned(),
                arguments: call.arguments.clone(),
            });
        }
    }

    fn after_round(&mut self, calls: &[ToolCallView<'_>], results: &[ContentBlock]) {
        self.used = self
            .used
            .saturating_add(u32::try_from(calls.len()).unwrap_or(u32::MAX));
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
        let artifacts: Vec<ChatArtifact> = {
            let mut st = observer.lock();
            // Calls made despite a forced answer were not run: keep only what was said.
            if called_tools || response.text().trim().is_empty() {
                st.push(Message::assistant_text(text.clone()));
            } else {
                st.push(response.to_message());
            }
            st.artifacts
                .iter()
                .map(|a| ChatArtifact {
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
            artifacts: artifacts.clone(),
        });
        events::publish(self.content.as_ref(), text.clone(), artifacts, cx);
        if closed {
            Ok(Some(text))
        } else {
            // Messages arrived while this answer was written: the next step reads them.
            Ok(None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_reason_is_clipped_at_a_character_boundary() {
        let long = "é".repeat(400); // 800 bytes
        let clipped = clip(&long, 601);
        assert!(clipped.ends_with('…'));
        assert_eq!(clipped.len(), 600 + '…'.len_utf8());
        assert_eq!(clip("short", 600), "short");
        let marker = no_answer_marker(&Error::invalid_input("x", None, "y".repeat(5000)));
        assert!(crate::conversation::no_answer::is_marker(&marker));
        let marker = marker.text();
        assert!(marker.starts_with("[no answer: "), "{marker}");
        assert!(marker.len() < 700, "{}", marker.len());
    }
}

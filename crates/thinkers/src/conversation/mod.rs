//! Conversations: what a thinker says to a model, what the model says back, and where it is kept.
//!
//! * [`Message`] and [`ContentBlock`] are the provider-agnostic turns: text, tool calls and their
//!   results, native thinking blocks (signatures kept byte for byte), images and files. Only the
//!   `llm` dialects translate them to a wire format.
//! * [`Conversation`] holds an [`Objective`] (the system content, as named slots), the messages,
//!   the [`Stamps`] written when it was obtained (grade, depth, output size, comfort window,
//!   compaction trigger), a state map that survives compaction, and a version.
//!   [`Conversation::render`] turns it into an [`crate::llm::ChatRequest`], so token counts come
//!   from the real encoders.
//! * [`ConversationService`] obtains new conversations, resumes saved ones by id, saves them (the
//!   durable ones to a [`ConversationStore`]), compacts them and renders transcripts.
//! * [`ConversationStore`] keeps durable conversations under optimistic versioning: a save based
//!   on a stale version fails with a [`VersionConflict`] and writes nothing.
//!   [`MemoryConversationStore`] is in memory; the SQLite and PostgreSQL ones
//!   are the `thinkers-store` crate's.
//! * A turn that gave no answer leaves a marker saying why (text starting [`NO_ANSWER_PREFIX`]); a model reads only
//!   that the turn failed.
//! * Compaction ([`Compactor`]) folds older turns into one summary written by a [`Summarizer`],
//!   keeping the objective, the latest turns, every kept tool call paired with its results, and
//!   the state. Each compaction yields a [`CompactionRecord`].

mod compaction;
mod data;
mod id;
mod memory;
pub(crate) mod no_answer;
mod objective;
mod service;
mod sizing;
mod stamps;
mod store;
mod summarizer;
pub(crate) mod transcript;

/// The messages of a conversation and their content blocks (defined with the model client, which
/// puts them on the wire).
use crate::llm::message;
pub use crate::llm::message::{ContentBlock, MediaSource, Message, Role};
pub use compaction::{CompactionRecord, Compactor, DEFAULT_KEEP_RECENT, SUMMARY_HEADER};
pub use data::{Conversation, ConversationState};
pub use id::{ConversationId, MAX_ID_LEN};
pub use memory::MemoryConversationStore;
pub use no_answer::{FAILED_TURN_FOR_MODEL, NO_ANSWER_PREFIX};
pub use objective::{Objective, Slot};
pub use service::ConversationService;
pub use sizing::{RequestSizer, WireSizer};
pub use stamps::{DEFAULT_COMFORT_WINDOW, DEFAULT_COMPACTION_TRIGGER, Stamps};
pub use store::{
    ConversationStore, VERSION_PARAMETER, VersionConflict, is_version_conflict,
    unknown_conversation,
};
pub use summarizer::FnSummarizer;
pub use summarizer::{Summarizer, summarizer_fn};

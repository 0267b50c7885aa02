//! [`ConversationService`]: obtains, resumes, saves, compacts and discards conversations.
//!
//! Durable conversations are saved to the [`ConversationStore`] the service was built with;
//! temporary ones are held in the service's memory (so they can be resumed by id within the
//! process) until discarded. Every save names the version it is based on; see
//! [`super::VersionConflict`] for what happens when someone else saved first.

use std::sync::Arc;

use super::compaction::{CompactionRecord, Compactor};
use super::data::Conversation;
use super::id::ConversationId;
use super::memory::MemoryConversationStore;
use super::sizing::RequestSizer;
use super::stamps::Stamps;
use super::store::{ConversationStore, unknown_conversation};
use super::summarizer::Summarizer;
use crate::{Error, Result};

/// Receives every compaction record; the runtime routes it to its recorder.
pub(crate) type CompactionSink = Arc<dyn Fn(&CompactionRecord) + Send + Sync>;

/// Obtains, resumes, saves, compacts and discards conversations. Cheap to clone; clones share
/// the store, the temporary conversations and the compactor.
#[derive(Clone)]
pub struct ConversationService {
    store: Arc<dyn ConversationStore>,
    temporary: Arc<MemoryConversationStore>,
    compactor: Option<Compactor>,
    sink: Option<CompactionSink>,
}

impl std::fmt::Debug for ConversationService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConversationService")
            .field("temporary", &self.temporary.len())
            .field("compactor", &self.compactor)
            .finish_non_exhaustive()
    }
}

impl ConversationService {
    /// A service saving durable conversations to `store`, with no summariser (compaction fails
    /// until one is given).
    pub fn new(store: Arc<dyn ConversationStore>) -> Self {
        Self {
            store,
            temporary: Arc::new(MemoryConversationStore::new()),
            compactor: None,
            sink: None,
        }
    }

    /// Compact with `summarizer` and the default policy.
    #[must_use]
    pub fn with_summarizer(self, summarizer: Arc<dyn Summarizer>) -> Self {
        self.with_compactor(Compactor::new(summarizer))
    }

    /// Compact with `compactor`.
    #[must_use]
    pub fn with_compactor(mut self, compactor: Compactor) -> Self {
        self.compactor = Some(compactor);
        self
    }

    /// Hand every compaction record to `sink`.
    #[must_use]
    pub fn on_compaction(
        mut self,
        sink: impl Fn(&CompactionRecord) + Send + Sync + 'static,
    ) -> Self {
        self.sink = Some(Arc::new(sink));
        self
    }

    /// The store durable conversations go to.
    pub fn store(&self) -> &Arc<dyn ConversationStore> {
        &self.store
    }

    /// A new conversation under a fresh id, stamped with `stamps` so the first call and the
    /// compaction check read them. Nothing is stored until the first save.
    pub fn obtain_new(&self, stamps: Stamps, durable: bool) -> Conversation {
        Conversation::new(stamps, durable)
    }

    /// The conversation saved under `id` (a temporary one held by this service, or a durable one
    /// from the store), with the objective and stamps it was saved with. An id under which
    /// nothing is saved is an [`Error::InvalidInput`] naming it.
    pub async fn resume(&self, id: &ConversationId) -> Result<Conversation> {
        if let Some(conv) = self.temporary.load(id).await? {
            return Ok(conv);
        }
        self.store
            .load(id)
            .await?
            .ok_or_else(|| unknown_conversation(id))
    }

    /// Save `conversation`: a durable one to the store, a temporary one in this service's
    /// memory. A conversation that only grew since it was loaded or last saved is appended;
    /// anything else rewrites what changed. On success its version moves on; on a version
    /// conflict nothing is written and the conversation is left as it was.
    pub async fn save(&self, conversation: &mut Conversation) -> Result<()> {
        if !conversation.has_unsaved_changes() {
            return Ok(());
        }
        let store: &dyn ConversationStore = if conversation.is_durable() {
            self.store.as_ref()
        } else {
            self.temporary.as_ref()
        };
        let version = conversation.version();
        let appended = match conversation.appended() {
            Some(new) if version > 0 && !conversation.head_changed() => Some(new),
            _ => None,
        };
        let next = match appended {
            Some(new) => store.append(conversation.id(), version, new).await?,
            None => store.save(conversation, version).await?,
        };
        conversation.mark_saved(next);
        Ok(())
    }

    /// The whole conversation as readable text: every message, tool call and tool result in
    /// order, thinking blocks marked.
    pub fn transcript(&self, conversation: &Conversation) -> String {
        conversation.transcript()
    }

    /// Forget the conversation saved under `id`, wherever it is held. `false` when nothing was.
    pub async fn discard(&self, id: &ConversationId) -> Result<bool> {
        if self.temporary.delete(id).await? {
            return Ok(true);
        }
        self.store.delete(id).await
    }

    /// Compact `conversation` when its request, measured by `sizer`, is over its threshold (see
    /// [`Compactor::compact_if_needed`]); the record also goes to the sink. The conversation is
    /// not saved here. Over the threshold with no summariser configured is an
    /// [`Error::System`]: a deployment bug, not the caller's.
    pub async fn compact_if_needed(
        &self,
        conversation: &mut Conversation,
        sizer: &dyn RequestSizer,
        entry_context_window: Option<u32>,
    ) -> Result<Option<CompactionRecord>> {
        self.compact(conversation, sizer, entry_context_window, None)
            .await
    }

    /// As [`Self::compact_if_needed`], compacting with `fallback` when this service has no
    /// compactor of its own (a thinker passes one that runs the summarization tool as its child).
    pub(crate) async fn compact_with_fallback(
        &self,
        conversation: &mut Conversation,
        sizer: &dyn RequestSizer,
        entry_context_window: Option<u32>,
        fallback: &Compactor,
    ) -> Result<Option<CompactionRecord>> {
        self.compact(conversation, sizer, entry_context_window, Some(fallback))
            .await
    }

    async fn compact(
        &self,
        conversation: &mut Conversation,
        sizer: &dyn RequestSizer,
        entry_context_window: Option<u32>,
        fallback: Option<&Compactor>,
    ) -> Result<Option<CompactionRecord>> {
        let record = match self.compactor.as_ref().or(fallback) {
            Some(c) => {
                c.compact_if_needed(conversation, sizer, entry_context_window)
                    .await?
            }
            None => {
                let threshold = conversation
                    .stamps()
                    .compaction_threshold(entry_context_window);
                let size = sizer.tokens(&conversation.render())?;
                if size > threshold {
                    return Err(Error::system(
                        "conversation compaction",
                        format!(
                            "conversation {} needs compaction ({size} tokens over {threshold}) \
                             but the service has no summariser",
                            conversation.id()
                        ),
                    ));
                }
                None
            }
        };
        if let (Some(record), Some(sink)) = (&record, &self.sink) {
            sink(record);
        }
        Ok(record)
    }
}

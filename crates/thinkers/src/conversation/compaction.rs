//! Compaction: folding older turns into one summary when a conversation outgrows its window.
//!
//! The check reads the conversation's stamps: a rendered request larger than
//! trigger × effective window (the comfort window, or the serving entry's context window when
//! smaller) is compacted. [`Compactor`] then
//!
//! 1. chooses where the kept tail starts: never inside a tool exchange (a tool call and every
//!    result answering it stay on the same side), never later than the last
//!    [`Compactor::keep_recent`] messages, and as early as the budget allows, leaving room for
//!    the summary;
//! 2. asks the [`Summarizer`] to condense everything before that point into about
//!    [`Compactor::summary_tokens`] tokens;
//! 3. replaces those messages with ONE user message carrying the summary. When the summary costs
//!    more on the wire than the room left for it, the summariser is asked once more for a
//!    shorter one.
//!
//! The objective, the kept tail and the conversation's state are untouched; the state is where
//! anything that must outlive old messages belongs (tools discovered, skills loaded). A failed
//! summary leaves the conversation as it was. Each compaction yields a [`CompactionRecord`].
//!
//! Not guaranteed: when the kept tail alone (the last messages and the tool exchanges they
//! belong to) does not fit, or the summariser overshoots its target, the result can stay over the
//! threshold; the record shows the size reached.

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::data::Conversation;
use super::id::ConversationId;
use super::message::{ContentBlock, Message};
use super::sizing::RequestSizer;
use super::summarizer::Summarizer;
use super::transcript;
use crate::Result;
use crate::llm::ChatRequest;

/// The fewest most-recent messages compaction keeps by default.
pub const DEFAULT_KEEP_RECENT: usize = 4;

/// The most tokens a summary is asked for by default.
pub(crate) const DEFAULT_MAX_SUMMARY_TOKENS: u32 = 4_096;

/// The smallest summary worth asking for: a foldable prefix under twice this is left as it is.
pub(crate) const MIN_FOLD_SUMMARY_TOKENS: u64 = 32;

/// The first line of a summary message, so a model (and a reader) knows what it is.
pub const SUMMARY_HEADER: &str = "[Summary of the earlier part of this conversation]";

/// One compaction, for the recorder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactionRecord {
    /// The conversation compacted.
    pub conversation: ConversationId,
    /// Tokens of the rendered request before.
    pub before_tokens: u64,
    /// Tokens of the rendered request after.
    pub after_tokens: u64,
    /// How many messages were folded into the summary.
    pub summarized_messages: usize,
    /// When, milliseconds since the Unix epoch.
    pub at_ms: i64,
}

/// Compacts conversations with a [`Summarizer`].
#[derive(Clone)]
pub struct Compactor {
    summarizer: Arc<dyn Summarizer>,
    keep_recent: usize,
    max_summary_tokens: u32,
}

impl std::fmt::Debug for Compactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compactor")
            .field("keep_recent", &self.keep_recent)
            .field("max_summary_tokens", &self.max_summary_tokens)
            .finish_non_exhaustive()
    }
}

impl Compactor {
    /// A compactor keeping at least the last [`DEFAULT_KEEP_RECENT`] messages.
    pub fn new(summarizer: Arc<dyn Summarizer>) -> Self {
        Self {
            summarizer,
            keep_recent: DEFAULT_KEEP_RECENT,
            max_summary_tokens: DEFAULT_MAX_SUMMARY_TOKENS,
        }
    }

    /// Keep at least the last `messages` messages (at least one).
    #[must_use]
    pub fn with_keep_recent(mut self, messages: usize) -> Self {
        self.keep_recent = messages.max(1);
        self
    }

    /// Ask for summaries of at most `tokens` tokens (at least one).
    #[must_use]
    pub fn with_max_summary_tokens(mut self, tokens: u32) -> Self {
        self.max_summary_tokens = tokens.max(1);
        self
    }

    /// The fewest most-recent messages kept.
    pub fn keep_recent(&self) -> usize {
        self.keep_recent
    }

    /// The summary size asked for under `threshold`: an eighth of it, at most the configured
    /// maximum.
    pub(crate) fn summary_tokens(&self, threshold: u64) -> u32 {
        let eighth = u32::try_from(threshold / 8).unwrap_or(u32::MAX);
        eighth.clamp(1, self.max_summary_tokens)
    }

    /// Compact `conversation` when its rendered request, measured by `sizer`, is over the
    /// threshold its stamps give for an entry with `entry_context_window` (`None`: the comfort
    /// window alone). Returns the record of the compaction, or `None` when none was needed or
    /// nothing could be folded (too few messages, or every earlier message belongs to an
    /// exchange the tail keeps).
    pub async fn compact_if_needed(
        &self,
        conversation: &mut Conversation,
        sizer: &dyn RequestSizer,
        entry_context_window: Option<u32>,
    ) -> Result<Option<CompactionRecord>> {
        let threshold = conversation
            .stamps()
            .compaction_threshold(entry_context_window);
        let before = sizer.tokens(&conversation.render())?;
        if before <= threshold {
            return Ok(None);
        }
        let cuts = cut_points(conversation.messages(), self.keep_recent);
        let Some(&latest) = cuts.last() else {
            tracing::warn!(conversation = %conversation.id(), before, threshold,
                "conversation is over its compaction threshold but has nothing to summarise");
            return Ok(None);
        };
        let summary_tokens = self.summary_tokens(threshold);
        // Room for the summary text, with slack for how its bytes are escaped on the wire.
        let reserve = u64::from(summary_tokens) + u64::from(summary_tokens) / 4 + 16;
        let system = conversation.objective().render();
        let measure = |summary: &str, cut: usize| -> Result<u64> {
            let tail = &conversation.messages()[cut..];
            let mut messages = Vec::with_capacity(tail.len() + 1);
            messages.push(summary_message(summary));
            messages.extend_from_slice(tail);
            sizer.tokens(&ChatRequest::new(system.clone(), messages))
        };
        // The size falls as the cut moves later: find the earliest cut that fits.
        let fits = |cut: usize| -> Result<bool> { Ok(measure("", cut)? + reserve <= threshold) };
        let (mut lo, mut hi) = (0, cuts.len() - 1);
        let cut = if fits(latest)? {
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if fits(cuts[mid])? {
                    hi = mid;
                } else {
                    lo = mid + 1;
                }
            }
            cuts[lo]
        } else {
            latest
        };
        // A summary is never asked to be longer than half of what it replaces, and a prefix too
        // small for that to gain anything is left alone.
        let folded = before.saturating_sub(measure("", cut)?);
        if folded < 2 * MIN_FOLD_SUMMARY_TOKENS {
            tracing::warn!(conversation = %conversation.id(), before, threshold, folded,
                "conversation is over its compaction threshold but what could be folded is too \
                 small to gain anything");
            return Ok(None);
        }
        let half = u32::try_from(folded / 2).unwrap_or(u32::MAX);
        let summary_tokens = summary_tokens.min(half);
        // The summariser is a model too: it reads a failed turn's marker without its reason.
        let text = transcript::messages(&super::no_answer::for_model_slice(
            &conversation.messages()[..cut],
        ));
        let mut summary = self.summarizer.summarize(&text, summary_tokens).await?;
        let mut after = measure(summary.trim(), cut)?;
        let base = measure("", cut)?;
        if after > threshold && base < threshold {
            // The summary cost more on the wire than its reserve (escaping, or a summariser
            // that overshot): ask once more, for a target scaled to the room there is.
            let room = (threshold - base) as f64;
            let cost = after.saturating_sub(base).max(1) as f64;
            let retry = (f64::from(summary_tokens) * room / cost * 0.9).floor();
            if retry >= 1.0 && retry < f64::from(summary_tokens) {
                // `retry` is below `summary_tokens`, a u32.
                let shorter = self.summarizer.summarize(&text, retry as u32).await?;
                let size = measure(shorter.trim(), cut)?;
                if size < after {
                    summary = shorter;
                    after = size;
                }
            }
        }
        if after > threshold {
            tracing::warn!(conversation = %conversation.id(), before, after, threshold,
                "compacted conversation is still over its threshold");
        }
        conversation.splice(0..cut, vec![summary_message(summary.trim())]);
        Ok(Some(CompactionRecord {
            conversation: conversation.id().clone(),
            before_tokens: before,
            after_tokens: after,
            summarized_messages: cut,
            at_ms: crate::record::now_ms(),
        }))
    }
}

/// The message that stands for the folded turns.
pub(crate) fn summary_message(summary: &str) -> Message {
    Message::user_text(format!("{SUMMARY_HEADER}\n{summary}"))
}

/// Where a kept tail may start: every index `c` in `1..=len - keep_recent` such that no tool call
/// before `c` is answered at or after `c`. Ascending.
pub(crate) fn cut_points(messages: &[Message], keep_recent: usize) -> Vec<usize> {
    let Some(last) = messages.len().checked_sub(keep_recent.max(1)) else {
        return Vec::new();
    };
    // blocked[c] > 0 when some call before c is answered at or after c.
    let mut delta = vec![0i64; messages.len() + 2];
    let mut calls: HashMap<&str, usize> = HashMap::new();
    for (at, message) in messages.iter().enumerate() {
        for block in &message.content {
            match block {
                ContentBlock::ToolCall { id, .. } => {
                    calls.insert(id.as_str(), at);
                }
                ContentBlock::ToolResult { call_id, .. } => {
                    if let Some(&called) = calls.get(call_id.as_str())
                        && called < at
                    {
                        delta[called + 1] += 1;
                        delta[at + 1] -= 1;
                    }
                }
                _ => {}
            }
        }
    }
    let mut blocked = 0;
    let mut cuts = Vec::new();
    for (c, d) in delta.iter().enumerate().take(last + 1) {
        blocked += d;
        if c >= 1 && blocked == 0 {
            cuts.push(c);
        }
    }
    cuts
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn call(id: &str) -> Message {
        Message::assistant(vec![ContentBlock::tool_call(id, "t", json!({}))])
    }

    fn result(ids: &[&str]) -> Message {
        Message::tool_results(
            ids.iter()
                .map(|id| ContentBlock::tool_result(*id, "t", "ok"))
                .collect(),
        )
    }

    #[test]
    fn cuts_never_split_an_exchange() {
        let m = vec![
            Message::user_text("q"), // 0
            call("a"),               // 1
            result(&["a"]),          // 2
            Message::assistant(vec![
                // 3: two calls, answered over two messages
                ContentBlock::tool_call("b", "t", json!({})),
                ContentBlock::tool_call("c", "t", json!({})),
            ]),
            result(&["b"]),                  // 4
            result(&["c"]),                  // 5
            Message::assistant_text("done"), // 6
            Message::user_text("more"),      // 7
        ];
        assert_eq!(cut_points(&m, 1), vec![1, 3, 6, 7]);
        assert_eq!(cut_points(&m, 4), vec![1, 3]);
        assert!(cut_points(&m, 8).is_empty());
        assert!(cut_points(&m, 9).is_empty());
        // A call never answered does not block anything.
        let open = vec![Message::user_text("q"), call("x"), Message::user_text("?")];
        assert_eq!(cut_points(&open, 1), vec![1, 2]);
    }

    #[test]
    fn summary_size_follows_the_threshold() {
        let c = Compactor::new(Arc::new(super::super::summarizer_fn(
            |_: String, _| async { Ok(String::new()) },
        )));
        assert_eq!(c.summary_tokens(8_000), 1_000);
        assert_eq!(c.summary_tokens(1_000_000), DEFAULT_MAX_SUMMARY_TOKENS);
        assert_eq!(c.summary_tokens(3), 1);
    }
}

//! The `[no answer: …]` marker: what a conversation keeps in the place of an answer that did not
//! come, and what a model reads of it.
//!
//! The marker says why the answer did not come (an error's text, which may name an internal
//! URL, a catalog entry, or quote a provider) for whoever reads the record: the chat page shows
//! it as a failure with its reason, a transcript prints it. A model never reads that reason:
//! every request rendered from a conversation, and every transcript a summariser reads, carries
//! [`FAILED_TURN_FOR_MODEL`] in the marker's place.

use std::borrow::Cow;
use std::sync::Arc;

use super::{ContentBlock, Message, Role};

/// What a marker's text begins with.
pub const NO_ANSWER_PREFIX: &str = "[no answer:";

/// What a model reads in place of a marker: that the turn failed, never why.
pub const FAILED_TURN_FOR_MODEL: &str = "[the previous turn failed; no answer was given]";

/// The marker recorded in place of an answer that did not come, saying `why`.
pub(crate) fn marker(why: &str) -> Message {
    Message::assistant_text(format!("{NO_ANSWER_PREFIX} {why}]"))
}

/// Whether `message` is a marker: the assistant's turn of one text beginning with
/// [`NO_ANSWER_PREFIX`].
pub(crate) fn is_marker(message: &Message) -> bool {
    message.role == Role::Assistant
        && matches!(
            message.content.as_slice(),
            [ContentBlock::Text { text }] if text.starts_with(NO_ANSWER_PREFIX)
        )
}

/// `messages` as a model reads them: each marker replaced by [`FAILED_TURN_FOR_MODEL`]. Shared
/// as they are (no copy) when they hold no marker.
pub(crate) fn for_model(messages: Arc<Vec<Message>>) -> Arc<Vec<Message>> {
    match for_model_slice(&messages) {
        Cow::Borrowed(_) => messages,
        Cow::Owned(replaced) => Arc::new(replaced),
    }
}

/// [`for_model`] over a slice: borrowed when it holds no marker.
pub(crate) fn for_model_slice(messages: &[Message]) -> Cow<'_, [Message]> {
    if !messages.iter().any(is_marker) {
        return Cow::Borrowed(messages);
    }
    Cow::Owned(
        messages
            .iter()
            .map(|m| {
                if is_marker(m) {
                    Message::assistant_text(FAILED_TURN_FOR_MODEL)
                } else {
                    m.clone()
                }
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_reads_that_a_turn_failed_never_why() {
        let why = "An external service failed. sim-small-a: POST http://10.0.0.7:9/v1/chat: boom";
        let messages = Arc::new(vec![
            Message::user_text("hello"),
            marker(why),
            Message::user_text("again"),
            Message::assistant_text("[no answerable question]"),
        ]);
        assert!(is_marker(&messages[1]));
        assert!(!is_marker(&messages[0]) && !is_marker(&messages[3]));
        let read = for_model(Arc::clone(&messages));
        assert_eq!(read.len(), 4);
        assert_eq!(read[1], Message::assistant_text(FAILED_TURN_FOR_MODEL));
        assert_eq!(read[3], messages[3]);
        assert!(!format!("{read:?}").contains("10.0.0.7"));
        // Without a marker the same list is shared, not copied.
        let plain = Arc::new(vec![Message::user_text("hello")]);
        assert!(Arc::ptr_eq(&for_model(Arc::clone(&plain)), &plain));
    }
}

//! [`ConversationId`]: the name a conversation is saved and resumed under.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// The longest id accepted from outside, in bytes.
pub const MAX_ID_LEN: usize = 128;

/// The id of a conversation: the text a caller keeps to resume it later.
///
/// Fresh ids are hyphenated UUID v7 strings, so they sort by creation time. An id that came from
/// elsewhere (a caller's own key, an id stored before) is accepted as long as it is non-empty,
/// at most [`MAX_ID_LEN`] bytes and free of control characters; see [`ConversationId::parse`].
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ConversationId(String);

impl ConversationId {
    /// A fresh id (UUID v7).
    pub fn new() -> Self {
        Self(uuid::Uuid::now_v7().hyphenated().to_string())
    }

    /// Accept an id from outside. Surrounding whitespace is trimmed; an empty id, one longer than
    /// [`MAX_ID_LEN`] bytes or one holding control characters is an [`Error::InvalidInput`]
    /// naming the `conversation_id` parameter.
    pub fn parse(text: &str) -> Result<Self> {
        let trimmed = text.trim();
        let reason = if trimmed.is_empty() {
            Some("a conversation id must not be empty".to_owned())
        } else if trimmed.len() > MAX_ID_LEN {
            Some(format!(
                "a conversation id is at most {MAX_ID_LEN} bytes, this one has {}",
                trimmed.len()
            ))
        } else if trimmed.chars().any(char::is_control) {
            Some("a conversation id must not contain control characters".to_owned())
        } else {
            None
        };
        match reason {
            Some(reason) => Err(Error::invalid_input(
                "conversation_id",
                Some(text.chars().take(MAX_ID_LEN).collect()),
                reason,
            )),
            None => Ok(Self(trimmed.to_owned())),
        }
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for ConversationId {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Display for ConversationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for ConversationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ConversationId({})", self.0)
    }
}

impl FromStr for ConversationId {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        Self::parse(s)
    }
}

impl TryFrom<String> for ConversationId {
    type Error = Error;

    fn try_from(value: String) -> Result<Self> {
        Self::parse(&value)
    }
}

impl From<ConversationId> for String {
    fn from(id: ConversationId) -> Self {
        id.0
    }
}

impl AsRef<str> for ConversationId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_ids_are_uuid_v7_and_sort_by_creation() -> anyhow::Result<()> {
        let a = ConversationId::new();
        let b = ConversationId::new();
        let uuid = uuid::Uuid::parse_str(a.as_str())?;
        assert_eq!(uuid.get_version_num(), 7);
        assert!(a < b);
        Ok(())
    }

    #[test]
    fn outside_ids_are_checked() {
        assert_eq!(
            ConversationId::parse("  chat-42 ")
                .map(|i| i.to_string())
                .ok(),
            Some("chat-42".to_owned())
        );
        for bad in ["", "   ", "a\u{0}b", &"x".repeat(MAX_ID_LEN + 1)] {
            let err = ConversationId::parse(bad).err();
            assert!(
                matches!(&err, Some(Error::InvalidInput { parameter, .. }) if parameter == "conversation_id"),
                "{bad:?}: {err:?}"
            );
        }
    }

    #[test]
    fn serde_checks_too() {
        assert!(serde_json::from_str::<ConversationId>("\"\"").is_err());
        let id = ConversationId::new();
        let text = serde_json::to_string(&id).unwrap_or_default();
        assert_eq!(text, format!("\"{id}\""));
    }
}

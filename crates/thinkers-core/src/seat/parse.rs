//! The error every closed vocabulary of this module reports when a name is not one of its words.

use std::fmt;

/// A name that is not one of the accepted words of a vocabulary (a grade, a depth, an output
/// size, a dialect). Names the vocabulary, the bad value and every accepted word.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ParseNameError {
    what: &'static str,
    value: String,
    accepted: &'static [&'static str],
}

impl ParseNameError {
    #[doc(hidden)]
    pub fn new(what: &'static str, value: &str, accepted: &'static [&'static str]) -> Self {
        Self {
            what,
            value: value.to_owned(),
            accepted,
        }
    }

    /// The vocabulary, for example `grade`.
    pub fn what(&self) -> &'static str {
        self.what
    }

    /// The value that was not recognised.
    pub fn value(&self) -> &str {
        &self.value
    }

    /// The words the vocabulary accepts.
    pub fn accepted(&self) -> &'static [&'static str] {
        self.accepted
    }
}

impl fmt::Display for ParseNameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown {} `{}`; expected one of: {}",
            self.what,
            self.value,
            self.accepted.join(", ")
        )
    }
}

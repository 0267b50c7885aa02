//! The identity every job carries: [`JobId`]. Its own module, so the record rows and the job
//! contract both name it without importing each other.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::Result;

/// A job's identity: a time-ordered UUID (v7), unique across processes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct JobId(pub uuid::Uuid);

impl JobId {
    /// A fresh id.
    pub fn new() -> Self {
        Self(uuid::Uuid::now_v7())
    }

    /// Parse the text form.
    pub fn parse(s: &str) -> Result<Self> {
        uuid::Uuid::parse_str(s.trim())
            .map(Self)
            .map_err(|e| crate::Error::invalid_input("job id", Some(s.to_owned()), e.to_string()))
    }
}

impl Default for JobId {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl fmt::Debug for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "JobId({})", self.0)
    }
}

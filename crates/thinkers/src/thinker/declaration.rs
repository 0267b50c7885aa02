//! What a thinker declares (grade, output size, context comfort) and what one run is given
//! (the query, the depth, the artifacts handed in).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::artifacts::ArtifactRef;
use crate::conversation::Stamps;
use crate::model::{Depth, Grade, OutputSize};

pub use crate::model::META_THINKER_DEPTH;
pub(crate) use crate::model::{effective_depth, parent_thinker_depth};

/// The seat words every thinker must state: the grade its work needs and the output size of its
/// largest turn, plus optional context-comfort overrides.
///
/// Every thinker constructor takes one, so a thinker without a declaration does not compile.
/// Budgets never propagate: a thinker started by another declares its own.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ThinkerDeclaration {
    grade: Grade,
    output: OutputSize,
    comfort_tokens: Option<u32>,
    compaction_trigger: Option<f32>,
}

impl ThinkerDeclaration {
    /// A declaration at `grade` whose turns book `output`.
    pub fn new(grade: Grade, output: OutputSize) -> Self {
        Self {
            grade,
            output,
            comfort_tokens: None,
            compaction_trigger: None,
        }
    }

    /// Override the comfortable context size (the framework default is 128K tokens, or the
    /// entry's window when smaller).
    #[must_use]
    pub fn comfort_tokens(mut self, tokens: u32) -> Self {
        self.comfort_tokens = Some(tokens);
        self
    }

    /// Override the share of the comfort window at which compaction starts (default 0.92).
    #[must_use]
    pub fn compaction_trigger(mut self, share: f32) -> Self {
        self.compaction_trigger = Some(share);
        self
    }

    /// The declared grade.
    pub fn grade(&self) -> Grade {
        self.grade
    }

    /// The declared output size.
    pub fn output(&self) -> OutputSize {
        self.output
    }

    /// The comfort-window override, if any.
    pub fn comfort(&self) -> Option<u32> {
        self.comfort_tokens
    }

    /// The compaction-trigger override, if any.
    pub fn trigger(&self) -> Option<f32> {
        self.compaction_trigger
    }

    /// Raise (or change) the grade. The last value set wins. Set on a thinker
    /// ([`ModelDependent::set_grade`](crate::model::ModelDependent::set_grade)), it also serves
    /// the conversation an earlier run obtained: the next run stamps it over that conversation's
    /// grade.
    pub(crate) fn set_grade(&mut self, grade: Grade) {
        self.grade = grade;
    }

    /// Replace the output declaration (a rung or a raw count). The last value set wins. Set on a
    /// thinker (`Thinker::set_output`), it also serves the conversation an earlier
    /// run obtained: the next run stamps it over that conversation's output size.
    pub fn set_output(&mut self, output: OutputSize) {
        self.output = output;
    }
}

/// The seat words set on a thinker after it was built: its grade
/// ([`ModelDependent::set_grade`](crate::model::ModelDependent::set_grade)) and output size. The
/// last declaration wins, so where a new conversation is stamped from the declaration, a
/// conversation an earlier run obtained (held by the thinker, or resumed by id) has these
/// stamped over its own at the start of every run that continues it; the stamps are saved with
/// it, so the conversation keeps them when it is resumed later.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Redeclared {
    pub(crate) grade: Option<Grade>,
    pub(crate) output: Option<OutputSize>,
}

impl Redeclared {
    /// `stamps` with the words set after construction written over them.
    pub(crate) fn over(self, stamps: Stamps) -> Stamps {
        Stamps {
            grade: self.grade.unwrap_or(stamps.grade),
            output: self.output.unwrap_or(stamps.output),
            ..stamps
        }
    }
}

/// What a goal-directed thinker is asked in one run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ThinkerInput {
    /// The question or task for this run.
    pub query: String,
    /// How hard to work. Never deeper than the caller's own depth.
    #[serde(default = "standard_depth")]
    pub depth: Depth,
    /// Refs of artifacts handed to this run (`@a1`, …).
    #[serde(default)]
    pub artifact_refs: Vec<ArtifactRef>,
}

fn standard_depth() -> Depth {
    Depth::Standard
}

impl From<&str> for ThinkerInput {
    /// The same as [`ThinkerInput::query`]: a query at [`Depth::Standard`] with no artifacts.
    fn from(query: &str) -> Self {
        Self::query(query)
    }
}

impl From<String> for ThinkerInput {
    /// The same as [`ThinkerInput::query`]: a query at [`Depth::Standard`] with no artifacts.
    fn from(query: String) -> Self {
        Self::query(query)
    }
}

impl ThinkerInput {
    /// A query at [`Depth::Standard`] with no artifacts.
    pub fn query(query: impl Into<String>) -> Self {
        Self {
            query: query.into(),
            depth: Depth::Standard,
            artifact_refs: Vec::new(),
        }
    }

    /// The same input at another depth.
    #[must_use]
    pub fn with_depth(mut self, depth: Depth) -> Self {
        self.depth = depth;
        self
    }
}

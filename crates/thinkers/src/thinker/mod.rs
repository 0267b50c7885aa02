//! Thinkers: model-driven orchestration.
//!
//! A thinker is a model given an objective and a palette of tools, run in a loop until it gives
//! a final answer of a declared type. The loop is implemented once (privately) and split by
//! phase: reconcile hook → read-only sweep → render → one model turn through the [`TurnSource`]
//! seam → tool round (admission check, validation, parallel calls in the turn's step, one batch
//! of results) → final answer (the answer-shape boundary, artifact refs,
//! [`Guardrail`]s). Families differ by hooks and answer phase, not by copies of the loop, and
//! share their setters (written once, inherent on each family).
//!
//! * [`ThinkerDeclaration`] — grade and output size, required by every constructor.
//! * [`Thinker`] — works toward one typed answer; [`ThinkerInput`] carries the
//!   query, the depth (clamped to a calling thinker's) and artifact refs.
//! * [`ReactiveThinker`] and [`ChatThinker`] — answer a person's messages turn by turn over a
//!   conversation that lasts between turns ([`ChatEvent`]s report each turn).
//! * [`ThinkerObserver`] — the conversation, transcript, artifacts and refusals after a run.
//! * [`ContentStream`] — where a directly submitted thinker publishes its accepted answer.
//! * [`ToollessThinker`] — no loop: one model call per candidate answer of a typed answer, with
//!   guardrails (at most [`MAX_GUARDRAIL_CORRECTIONS`] corrections) and no tools.
//! * [`DecisionThinker`] — the model only chooses (or ranks) among given options, with a
//!   confidence per option where the provider returns log-probabilities.
//!
//! **Orchestrators.** A looping thinker built with `delegating()` offers its model
//! `sub_thinker` ([`SubThinkerInput`]) at or above its delegation threshold; with a [`crate::hub::ToolHub`] in reach (the thinker's own or a
//! dispatcher service) it also gets `request_tools` and `request_skill` over its compatible
//! catalogs ([`DoorOutcome`]). Any [`Thinker`] or doer can be put on a palette as a tool by name
//! ([`JobTool`]), run as the calling thinker's child.
//!
//! **Read-only.** Under a read-only scope the loop withholds every tool that is not read-only
//! from the palette (logged and recorded in [`ThinkerState::withheld`]), and the admission
//! check refuses such a call whatever the palette said; both sit outside any hook. Children the
//! thinker submits inherit its scope through the submission door.

/// Implements [`crate::model::ModelDependent`] for a thinker type (or its job) whose seat lives
/// in its `core: ThinkerCore`: the declaration carries the grade, the core the pin. Every family
/// uses it, so the seat reads the same everywhere; a grade set through it is stamped over the
/// conversation the next run continues (`ThinkerCore::set_grade`).
macro_rules! seat_in_core {
    (impl $(<$($g:ident),+>)? for $ty:ty) => {
        impl$(<$($g),+>)? $crate::model::ModelDependent for $ty {
            fn grade(&self) -> $crate::model::Grade {
                self.core.declaration.grade()
            }
            fn set_grade(&mut self, grade: $crate::model::Grade) {
                self.core.set_grade(grade);
            }
            fn pin(&self) -> Option<&str> {
                self.core.pin.as_deref()
            }
            fn pin_model(&mut self, entry: String) {
                self.core.pin = Some(entry.into());
            }
        }
    };
}

// The shared vocabulary of every family.
mod answer;
mod artifacts;
#[macro_use]
mod builder;
mod declaration;
mod events;
mod guardrail;
mod reasoning;
#[cfg(any(test, feature = "test-utils"))]
mod scripted;
mod state;
// The loop and its phases (`turn_loop/`), the families (`families/`), delegation: the doors and
// the sub-thinker (`delegation/`).
mod delegation;
mod families;
mod turn_loop;

pub(crate) use delegation::{as_tool, doors, subthinker};
use families::{chat, decision, reactive, toolless};
use turn_loop::turn;

use families::single;
use turn_loop::{conversing, finish, reactive_phase, tool_round};

#[cfg(test)]
pub(crate) use answer::{AnswerShape, Judgement};
pub use artifacts::{Artifact, ArtifactRef, Artifacts};
pub use as_tool::{DoerToolExt, JobTool};
pub use chat::ChatArtifact;
pub use chat::{ChatEvent, ChatEvents, ChatThinker};
pub use decision::DecisionJob;
pub use decision::Scored;
pub use decision::{Choice, Confidence, DecisionOption, DecisionThinker, Ranking};
pub use declaration::{META_THINKER_DEPTH, ThinkerDeclaration, ThinkerInput};
pub use doors::RefusedName;
pub use doors::{DoorOutcome, REQUEST_SKILL, REQUEST_TOOLS, STATE_GRANTED_TOOLS, STATE_SKILLS};
pub use events::{ContentStream, ContentStreamEvent, META_CONTENT};
pub use guardrail::{Guardrail, Verdict};
pub use reactive::{
    DEFAULT_CHAT_ITERATIONS, DEFAULT_TOOL_CALLS_PER_MESSAGE, Delivery, ReactiveThinker,
    ReactiveTurn,
};
pub use reasoning::AnalysisReasoning;
#[cfg(any(test, feature = "test-utils"))]
pub use scripted::ScriptedTurns;
pub use single::{Thinker, ThinkerJob, ThinkerOutput};
pub use state::{RefusedCall, ThinkerObserver, ThinkerState, Withheld};
pub use subthinker::{SUB_THINKER, SubThinkerInput, SubThinkerOutput};
pub use toolless::{
    GuardrailRefusal, MAX_GUARDRAIL_CORRECTIONS, SystemPrompt, ToollessJob, ToollessThinker,
};
pub use turn::{ModelTurns, TurnRequest, TurnSource};
pub use turn_loop::{DefaultHooks, ThinkerHooks, ThinkerLimits};

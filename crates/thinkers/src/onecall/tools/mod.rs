//! Built-in one-call model tools.
//!
//! * [`QuickQuestion`] (`quick_llm_question`) — one question answered with a checkable
//!   justification, at the grade the asker states for that question;
//! * [`Summarization`] (`summarization`, small grade) — a summary near a target length, with key
//!   points and an optional focus;
//! * [`AnalyzeViolation`] (`analyze_violation`, small grade) — whether a text breaks a rule, how
//!   seriously, with verbatim evidence.
//!
//! All three are read-only. Offer one to a caller with
//! [`ModelToolProvider::new`](super::ModelToolProvider::new), or run it directly with
//! [`ModelToolJob::new`](super::ModelToolJob::new).
//!
//! Fields that carry a justification ask for one a reader can check against the input, never for
//! the model's private deliberation: a model keeps its reasoning in native thinking where it has
//! it, and some providers refuse fields worded as a request for it.

mod analyze_violation;
mod quick_question;
mod summarization;

pub use analyze_violation::ViolationInput;
pub use analyze_violation::{AnalyzeViolation, Severity, ViolationAnalysis};
pub use quick_question::{QuickAnswer, QuickQuestion, QuickQuestionInput};
pub(crate) use summarization::JobSummarizer;
pub use summarization::{Summarization, SummarizationInput, Summary};

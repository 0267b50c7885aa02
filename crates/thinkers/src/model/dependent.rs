//! [`ModelDependent`]: the face of every job that takes a seat at a model.

use super::{Entry, Grade, ModelRouter};
use crate::Result;
use crate::dispatch::BudgetStore;

/// A job that takes a seat at a model: a thinker, the model-call job, every one-call tool.
///
/// It carries a grade (the capability floor its work needs, a rung or [`Grade::Ceiling`]) and an
/// optional pin naming one catalog entry. A pin bypasses the picker but never the compliance
/// envelope, and a thinker hands its pin to every call it makes, so pinning a thinker pins its
/// whole conversation to one entry.
///
/// The requirement side (asking admission for a seat at a depth and output size, priced from
/// the exact request body) belongs with the model-call work and will join this trait there; the
/// router lookup it builds on is [`ModelDependent::resolve_entry`].
///
/// The trait is object safe.
pub trait ModelDependent {
    /// The declared grade.
    fn grade(&self) -> Grade;

    /// Change the grade, for example to raise it for one run. The last value set wins.
    fn set_grade(&mut self, grade: Grade);

    /// The pinned catalog entry id, if any.
    fn pin(&self) -> Option<&str>;

    /// Pin every call of this job to one catalog entry id.
    fn pin_model(&mut self, entry: String);

    /// The entry serving this job's next call: its pin when pinned (checked against the
    /// envelope), otherwise the router's pick for its grade.
    fn resolve_entry<'r>(
        &self,
        router: &'r ModelRouter,
        budgets: &dyn BudgetStore,
    ) -> Result<&'r Entry> {
        router.resolve(self.grade(), self.pin(), budgets)
    }
}

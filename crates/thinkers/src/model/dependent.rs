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

    /// Change the grade, for example to raise it for one run. The last value set wins. A
    /// thinker's conversation is stamped with the grade when it is obtained, so the change
    /// serves conversations obtained after it, not one the thinker already holds.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dispatch::MemoryBudgets;
    use crate::model::{Catalog, Envelope};

    /// The smallest model-dependent job: a grade and a pin.
    struct Asker {
        grade: Grade,
        pin: Option<String>,
    }

    impl ModelDependent for Asker {
        fn grade(&self) -> Grade {
            self.grade
        }
        fn set_grade(&mut self, grade: Grade) {
            self.grade = grade;
        }
        fn pin(&self) -> Option<&str> {
            self.pin.as_deref()
        }
        fn pin_model(&mut self, entry: String) {
            self.pin = Some(entry);
        }
    }

    #[test]
    fn resolution_follows_grade_then_pin_through_a_trait_object() {
        let router =
            ModelRouter::with_headroom_picker(Catalog::bundled(), Envelope::unrestricted());
        let budgets = MemoryBudgets::new();
        let mut asker = Asker {
            grade: Grade::Small,
            pin: None,
        };
        let job: &mut dyn ModelDependent = &mut asker;
        assert_eq!(
            job.resolve_entry(&router, &budgets).unwrap().grade(),
            Grade::Small
        );

        job.set_grade(Grade::Large);
        assert_eq!(job.grade(), Grade::Large);
        assert_eq!(
            job.resolve_entry(&router, &budgets).unwrap().grade(),
            Grade::Large
        );

        job.pin_model("sim-xl-b".to_owned());
        assert_eq!(job.pin(), Some("sim-xl-b"));
        assert_eq!(
            job.resolve_entry(&router, &budgets).unwrap().id(),
            "sim-xl-b"
        );
    }
}

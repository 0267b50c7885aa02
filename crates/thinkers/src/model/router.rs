//! [`ModelRouter`]: from a seat's grade (and optional pin) to one catalog entry, inside the
//! compliance envelope.

use std::fmt;

use super::{Catalog, Entry, Envelope, EnvelopeViolation, Grade, HeadroomPicker, Picker};
use crate::Result;
use crate::dispatch::BudgetStore;
use crate::error::Error;

/// Why a seat could not be given an entry. Converted into [`Error`] (as the error's source) by
/// [`ModelRouter::resolve`]; a pin problem or a grade nobody serves is invalid input, a picker
/// that breaks its contract is a system failure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RouteError {
    /// The pin names no catalog entry.
    #[error("the pinned entry `{0}` is not in the catalog")]
    UnknownPin(String),
    /// The pin names a closed entry.
    #[error("the pinned entry `{0}` is closed: the catalog lists it but it is not served")]
    ClosedPin(String),
    /// The pin names an entry outside the compliance envelope.
    #[error("the pin was refused: {0}")]
    PinOutsideEnvelope(EnvelopeViolation),
    /// No open entry of the rung lies inside the envelope.
    #[error("no open entry of grade `{grade}` inside the compliance envelope{}", detail(.listed, .closed, .outside))]
    NoEntry {
        /// The rung asked for (after resolving `Ceiling`).
        grade: Grade,
        /// Entries of the rung in the catalog.
        listed: usize,
        /// How many of them are closed.
        closed: usize,
        /// How many open ones the envelope excludes.
        outside: usize,
    },
    /// The picker returned nothing, or an id that was not a candidate.
    #[error("the picker chose {chosen:?} for grade `{grade}`, which is not one of its candidates")]
    PickerRefused {
        /// The rung.
        grade: Grade,
        /// What the picker returned.
        chosen: Option<String>,
    },
}

fn detail(listed: &usize, closed: &usize, outside: &usize) -> String {
    if *listed == 0 {
        " (the catalog lists none)".to_owned()
    } else {
        format!(" (the catalog lists {listed}: {closed} closed, {outside} outside the envelope)")
    }
}

impl From<RouteError> for Error {
    fn from(err: RouteError) -> Self {
        let (parameter, value) = match &err {
            RouteError::UnknownPin(id) | RouteError::ClosedPin(id) => ("pin", id.clone()),
            RouteError::PinOutsideEnvelope(v) => ("pin", v.entry.clone()),
            RouteError::NoEntry { grade, .. } => ("grade", grade.to_string()),
            RouteError::PickerRefused { .. } => {
                return Self::system("model picker", err.to_string()).with_source(err);
            }
        };
        Self::InvalidInput {
            parameter: parameter.to_owned(),
            value: Some(value),
            reason: err.to_string(),
            source: Some(Box::new(err)),
        }
    }
}

/// Resolves seats to catalog entries: `Ceiling` to the deployment's strongest rung, a pin to its
/// entry (never outside the envelope), and otherwise the picker's choice among the open entries
/// of the rung inside the envelope.
pub struct ModelRouter {
    catalog: Catalog,
    envelope: Envelope,
    picker: Box<dyn Picker>,
    ceiling: Grade,
}

impl fmt::Debug for ModelRouter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModelRouter")
            .field("catalog", &self.catalog.source_name())
            .field("entries", &self.catalog.entries().len())
            .field("envelope", &self.envelope)
            .field("ceiling", &self.ceiling)
            .finish_non_exhaustive()
    }
}

impl ModelRouter {
    /// A router over `catalog`, confined to `envelope`, choosing with `picker`. The ceiling is
    /// resolved once here, through [`Picker::ceiling`].
    pub fn new(catalog: Catalog, envelope: Envelope, picker: Box<dyn Picker>) -> Self {
        let ceiling = picker.ceiling(&catalog, &envelope);
        Self {
            catalog,
            envelope,
            picker,
            ceiling,
        }
    }

    /// A router with the default [`HeadroomPicker`].
    pub(crate) fn with_headroom_picker(catalog: Catalog, envelope: Envelope) -> Self {
        Self::new(catalog, envelope, Box::new(HeadroomPicker))
    }

    /// The catalog.
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// The compliance envelope.
    pub fn envelope(&self) -> &Envelope {
        &self.envelope
    }

    /// The rung `Ceiling` stands for here.
    pub fn ceiling(&self) -> Grade {
        self.ceiling
    }

    /// `grade` with `Ceiling` resolved to a rung.
    pub(crate) fn rung(&self, grade: Grade) -> Grade {
        grade.or_ceiling(self.ceiling)
    }

    /// The open entries of the rung (`Ceiling` resolved) inside the envelope, in catalog order:
    /// what the picker chooses among and what a benchmark races.
    pub fn candidates(&self, grade: Grade) -> Vec<&Entry> {
        self.catalog
            .entries_of(self.rung(grade))
            .into_iter()
            .filter(|e| e.is_open() && self.envelope.permits(e).is_ok())
            .collect()
    }

    /// The entry a seat of `grade` (pinned to `pin`, if any) is served by.
    ///
    /// A pin bypasses the picker but not the envelope: an unknown, closed or excluded pin is an
    /// [`Error::InvalidInput`] on parameter `pin` naming the entry (and the envelope rule). An
    /// unpinned seat fails on parameter `grade` when no open entry of the rung lies inside the
    /// envelope. The typed reason is the error's source, a [`RouteError`].
    pub fn resolve(
        &self,
        grade: Grade,
        pin: Option<&str>,
        budgets: &dyn BudgetStore,
    ) -> Result<&Entry> {
        self.route(grade, pin, budgets).map_err(Error::from)
    }

    /// [`ModelRouter::resolve`] with the typed reason.
    pub(crate) fn route(
        &self,
        grade: Grade,
        pin: Option<&str>,
        budgets: &dyn BudgetStore,
    ) -> Result<&Entry, RouteError> {
        let rung = self.rung(grade);
        if let Some(id) = pin {
            let entry = self
                .catalog
                .entries()
                .iter()
                .find(|e| e.id() == id)
                .ok_or_else(|| RouteError::UnknownPin(id.to_owned()))?;
            if !entry.is_open() {
                return Err(RouteError::ClosedPin(id.to_owned()));
            }
            self.envelope
                .permits(entry)
                .map_err(RouteError::PinOutsideEnvelope)?;
            return Ok(entry);
        }

        let candidates = self.candidates(rung);
        if candidates.is_empty() {
            let listed = self.catalog.entries_of(rung);
            let closed = listed.iter().filter(|e| !e.is_open()).count();
            return Err(RouteError::NoEntry {
                grade: rung,
                listed: listed.len(),
                closed,
                outside: listed.len() - closed,
            });
        }
        let chosen = self.picker.pick(rung, &candidates, budgets);
        chosen
            .as_deref()
            .and_then(|id| candidates.iter().copied().find(|e| e.id() == id))
            .ok_or(RouteError::PickerRefused {
                grade: rung,
                chosen,
            })
    }

    /// Register every entry's limits with the budget store, under [`Entry::budget_name`].
    pub(crate) fn configure_budgets(&self, store: &dyn BudgetStore) {
        for entry in self.catalog.entries() {
            store.configure(&entry.budget_name(), entry.limits());
        }
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;
    use crate::dispatch::{MemoryBudgets, Reservation};
    use crate::error::ErrorKind;
    use crate::job::{Ask, Seat};
    use crate::model::EnvelopeRule;

    fn router(envelope: Envelope) -> ModelRouter {
        ModelRouter::with_headroom_picker(Catalog::bundled(), envelope)
    }

    fn route_error(err: &Error) -> &RouteError {
        err.source()
            .and_then(|s| s.downcast_ref::<RouteError>())
            .unwrap_or_else(|| panic!("no RouteError behind {err}"))
    }

    /// A catalog with one XL entry and, optionally, one Mega entry (open or closed).
    fn small_catalog(mega: Option<bool>) -> Catalog {
        let mut text = String::from(
            "[providers.p]\ndialect = \"openai-compatible\"\nbase_url = \"http://localhost:1/v1\"\n\
             [[entries]]\nid = \"x\"\nprovider = \"p\"\nmodel = \"x\"\ngrade = \"xl\"\n\
             context_window = 1000\noutput_ceiling = 100\nprice_in = 1\nprice_out = 1\ncurrency = \"USD\"\n",
        );
        if let Some(open) = mega {
            text.push_str(&format!(
                "[[entries]]\nid = \"m\"\nprovider = \"p\"\nmodel = \"m\"\ngrade = \"mega\"\n\
                 context_window = 1000\noutput_ceiling = 100\nprice_in = 1\nprice_out = 1\n\
                 currency = \"USD\"\nopen = {open}\n"
            ));
        }
        Catalog::from_toml_str(&text, "small.toml").unwrap()
    }

    #[test]
    fn unpinned_seats_get_the_pickers_choice_among_open_entries_of_the_rung() {
        let r = router(Envelope::unrestricted());
        let budgets = MemoryBudgets::new();
        r.configure_budgets(&budgets);
        let small = r.resolve(Grade::Small, None, &budgets).unwrap();
        assert_eq!(small.id(), "sim-small-text");
        let medium = r.resolve(Grade::Medium, None, &budgets).unwrap();
        assert_eq!(medium.grade(), Grade::Medium);
        assert!(medium.is_open());
        let ids: Vec<&str> = r.candidates(Grade::Medium).iter().map(|e| e.id()).collect();
        assert_eq!(
            ids,
            ["sim-medium-a", "sim-medium-b"],
            "the closed entry is no candidate"
        );
    }

    #[tokio::test]
    async fn the_router_follows_headroom() {
        let r = router(Envelope::unrestricted());
        let budgets = MemoryBudgets::new();
        r.configure_budgets(&budgets);
        let ask = Ask {
            budget: Seat::budget_for("sim-small-text").into(),
            tokens: 10_000,
            input_tokens: 0,
            output_tokens: 0,
            requests: 1,
            slots: 1,
        };
        assert!(matches!(
            budgets.try_reserve(&ask).await.unwrap(),
            Reservation::Granted(_)
        ));
        assert_eq!(
            r.resolve(Grade::Small, None, &budgets).unwrap().id(),
            "sim-small-a"
        );
    }

    #[test]
    fn ceiling_is_resolved_to_mega_when_an_open_mega_entry_is_served() {
        let r = router(Envelope::unrestricted());
        assert_eq!(r.ceiling(), Grade::Mega);
        let e = r
            .resolve(Grade::Ceiling, None, &MemoryBudgets::new())
            .unwrap();
        assert_eq!(e.grade(), Grade::Mega);
        assert_eq!(r.candidates(Grade::Ceiling).len(), 2);

        let with_mega =
            ModelRouter::with_headroom_picker(small_catalog(Some(true)), Envelope::unrestricted());
        assert_eq!(
            with_mega
                .resolve(Grade::Ceiling, None, &MemoryBudgets::new())
                .unwrap()
                .id(),
            "m"
        );
    }

    #[test]
    fn ceiling_falls_to_xl_without_an_open_mega_entry() {
        let budgets = MemoryBudgets::new();
        for mega in [None, Some(false)] {
            let r =
                ModelRouter::with_headroom_picker(small_catalog(mega), Envelope::unrestricted());
            assert_eq!(r.ceiling(), Grade::Xl, "mega = {mega:?}");
            assert_eq!(r.resolve(Grade::Ceiling, None, &budgets).unwrap().id(), "x");
        }
    }

    #[test]
    fn ceiling_falls_to_xl_when_every_mega_entry_is_outside_the_envelope() {
        // sim-mega-a is us/30d and sim-mega-b eu/zero: neither is us/zero, but sim-xl-a is.
        let envelope = Envelope::unrestricted()
            .require_tag("region", ["us"])
            .require_tag("retention", ["zero"]);
        let r = router(envelope);
        assert_eq!(r.ceiling(), Grade::Xl);
        let e = r
            .resolve(Grade::Ceiling, None, &MemoryBudgets::new())
            .unwrap();
        assert_eq!(e.id(), "sim-xl-a");
    }

    #[test]
    fn a_picker_may_define_its_own_ceiling() {
        struct LargeCeiling;
        impl Picker for LargeCeiling {
            fn pick(&self, _: Grade, c: &[&Entry], _: &dyn BudgetStore) -> Option<String> {
                c.last().map(|e| e.id().to_owned())
            }
            fn ceiling(&self, _: &Catalog, _: &Envelope) -> Grade {
                Grade::Large
            }
        }
        let r = ModelRouter::new(
            Catalog::bundled(),
            Envelope::unrestricted(),
            Box::new(LargeCeiling),
        );
        let e = r
            .resolve(Grade::Ceiling, None, &MemoryBudgets::new())
            .unwrap();
        assert_eq!(e.id(), "sim-large-b");
    }

    #[test]
    fn a_pin_bypasses_the_picker() {
        let r = router(Envelope::unrestricted());
        let budgets = MemoryBudgets::new();
        let e = r
            .resolve(Grade::Small, Some("sim-small-b"), &budgets)
            .unwrap();
        assert_eq!(e.id(), "sim-small-b");
        // The pin decides even across grades.
        let e = r
            .resolve(Grade::Ceiling, Some("sim-medium-a"), &budgets)
            .unwrap();
        assert_eq!(e.id(), "sim-medium-a");
    }

    #[test]
    fn a_pin_outside_the_envelope_is_refused_naming_entry_and_rule() {
        let r = router(Envelope::unrestricted().require_tag("region", ["eu"]));
        let err = r
            .resolve(Grade::Small, Some("sim-small-a"), &MemoryBudgets::new())
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
        let msg = err.to_string();
        assert!(
            msg.contains("`pin`") && msg.contains("sim-small-a"),
            "{msg}"
        );
        assert!(msg.contains("region `us` is not one of {eu}"), "{msg}");
        match route_error(&err) {
            RouteError::PinOutsideEnvelope(v) => {
                assert_eq!(v.entry, "sim-small-a");
                assert!(matches!(&v.rule, EnvelopeRule::Tag { tag, .. } if tag == "region"));
            }
            other => panic!("unexpected {other}"),
        }
        // The same entry unpinned is simply not a candidate.
        let e = r
            .resolve(Grade::Small, None, &MemoryBudgets::new())
            .unwrap();
        assert_ne!(e.id(), "sim-small-a");
        assert_eq!(e.tag("region"), Some("eu"));
    }

    #[test]
    fn unknown_and_closed_pins_are_refused() {
        let r = router(Envelope::unrestricted());
        let budgets = MemoryBudgets::new();
        let err = r
            .resolve(Grade::Small, Some("gpt-99"), &budgets)
            .unwrap_err();
        assert!(err.to_string().contains("gpt-99"), "{err}");
        assert_eq!(route_error(&err), &RouteError::UnknownPin("gpt-99".into()));

        let err = r
            .resolve(Grade::Medium, Some("sim-medium-legacy"), &budgets)
            .unwrap_err();
        assert!(
            err.to_string().contains("sim-medium-legacy") && err.to_string().contains("closed")
        );
        assert_eq!(
            route_error(&err),
            &RouteError::ClosedPin("sim-medium-legacy".into())
        );
    }

    #[test]
    fn a_rung_without_open_entries_inside_the_envelope_is_an_error_naming_it() {
        let r = router(Envelope::unrestricted().require_tag("retention", ["7d"]));
        let err = r
            .resolve(Grade::Small, None, &MemoryBudgets::new())
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
        assert!(err.to_string().contains("grade `small`"), "{err}");
        assert_eq!(
            route_error(&err),
            &RouteError::NoEntry {
                grade: Grade::Small,
                listed: 3,
                closed: 0,
                outside: 3
            }
        );
        let empty =
            ModelRouter::with_headroom_picker(Catalog::empty("none"), Envelope::unrestricted());
        let err = empty
            .resolve(Grade::Large, None, &MemoryBudgets::new())
            .unwrap_err();
        assert!(err.to_string().contains("lists none"), "{err}");
    }

    #[test]
    fn a_picker_breaking_its_contract_is_a_system_failure() {
        struct Bogus;
        impl Picker for Bogus {
            fn pick(&self, _: Grade, _: &[&Entry], _: &dyn BudgetStore) -> Option<String> {
                Some("not-a-candidate".into())
            }
        }
        let r = ModelRouter::new(
            Catalog::bundled(),
            Envelope::unrestricted(),
            Box::new(Bogus),
        );
        let err = r
            .resolve(Grade::Small, None, &MemoryBudgets::new())
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::System);
        assert!(err.to_string().contains("not-a-candidate"), "{err}");
    }

    #[test]
    fn configure_budgets_registers_every_entry() {
        let r = router(Envelope::unrestricted());
        let budgets = MemoryBudgets::new();
        r.configure_budgets(&budgets);
        for e in r.catalog().entries() {
            assert_eq!(
                budgets.limits(&e.budget_name()),
                Some(e.limits()),
                "{}",
                e.id()
            );
        }
        assert!(format!("{r:?}").contains("bundled.toml"));
    }
}

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
    pub fn with_headroom_picker(catalog: Catalog, envelope: Envelope) -> Self {
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
    pub fn rung(&self, grade: Grade) -> Grade {
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
    pub fn route(
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
    pub fn configure_budgets(&self, store: &dyn BudgetStore) {
        for entry in self.catalog.entries() {
            store.configure(&entry.budget_name(), entry.limits());
        }
    }
}

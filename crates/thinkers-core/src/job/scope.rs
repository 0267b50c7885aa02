//! The scope a flow runs in: identity axes (a ticket, a tenant) and the read-only binding.
//!
//! A [`ScopeGuard`] is sealed onto a job at the submission door and copied onto every child the
//! job submits, so a whole subtree runs in it without any class arranging it. A child may be
//! submitted in a *narrower* scope (an added axis, read-only switched on) but never a wider one:
//! narrowing (at the submission door) refuses changing or dropping an axis and switching read-only off.

use std::collections::BTreeMap;
use std::fmt;

use crate::{Error, Result};

/// Identity axes plus the read-only flag. Immutable once sealed onto a job.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct ScopeGuard {
    axes: BTreeMap<String, String>,
    read_only: bool,
}

impl ScopeGuard {
    /// No axes, not read-only.
    pub fn unbound() -> Self {
        Self::default()
    }

    /// This scope with an identity axis bound (for example `ticket` = `T-42`).
    #[must_use]
    pub fn with_axis(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.axes.insert(name.into(), value.into());
        self
    }

    /// This scope, read-only.
    #[must_use]
    pub fn read_only(mut self) -> Self {
        self.read_only = true;
        self
    }

    /// Whether the scope is read-only: only tools that declare themselves read-only may run.
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// The value bound to an axis.
    pub fn axis(&self, name: &str) -> Option<&str> {
        self.axes.get(name).map(String::as_str)
    }

    /// Every bound axis.
    pub fn axes(&self) -> impl Iterator<Item = (&str, &str)> {
        self.axes.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Check that `child` is this scope or narrower and return it; a widening is refused with an
    /// error naming the axis or the flag.
    pub(crate) fn narrow_to(&self, child: Self) -> Result<Self> {
        if self.read_only && !child.read_only {
            return Err(Error::invalid_input(
                "scope.read_only",
                Some("false".into()),
                "a child of a read-only scope must stay read-only",
            ));
        }
        for (name, value) in &self.axes {
            match child.axes.get(name) {
                Some(v) if v == value => {}
                Some(v) => {
                    return Err(Error::invalid_input(
                        format!("scope.{name}"),
                        Some(v.clone()),
                        format!(
                            "the parent scope binds `{name}` to {value:?}; a child cannot rebind it"
                        ),
                    ));
                }
                None => {
                    return Err(Error::invalid_input(
                        format!("scope.{name}"),
                        None,
                        format!(
                            "the parent scope binds `{name}` to {value:?}; a child cannot drop it"
                        ),
                    ));
                }
            }
        }
        Ok(child)
    }
}

impl fmt::Debug for ScopeGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScopeGuard")
            .field("axes", &self.axes)
            .field("read_only", &self.read_only)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrowing_rules() {
        let parent = ScopeGuard::unbound().with_axis("ticket", "T-1").read_only();
        assert!(
            parent
                .narrow_to(parent.clone().with_axis("tenant", "acme"))
                .is_ok()
        );
        let widened = ScopeGuard::unbound().with_axis("ticket", "T-1");
        let err = parent.narrow_to(widened).unwrap_err();
        assert!(err.to_string().contains("scope.read_only"), "{err}");
        let rebound = ScopeGuard::unbound().with_axis("ticket", "T-2").read_only();
        let err = parent.narrow_to(rebound).unwrap_err();
        assert!(err.to_string().contains("scope.ticket"), "{err}");
        let dropped = ScopeGuard::unbound().read_only();
        assert!(parent.narrow_to(dropped).is_err());
    }
}

//! What a refusal says: the place a value did not fit its schema and what was wrong there, both
//! composed from the schema only.

/// Where a decoded value did not fit its schema, and what was wrong there, composed from the
/// schema only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Misfit {
    /// The place as the schema names it: declared field names joined by `.`, indexes as `[n]`,
    /// and `entry` for a map entry, whose key the model chose (`counts entry`, or `an entry` for
    /// an entry of the root). Empty at the root.
    pub at: String,
    /// What was wrong there.
    pub what: What,
}

/// What was wrong at a [`Misfit`]'s place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum What {
    /// A required field is missing; the place names the field. `expected` is its declared
    /// shape in words, when the schema declares it.
    Missing {
        /// The missing field's shape in words.
        expected: Option<String>,
    },
    /// The value there does not fit; `expected` is the declared shape in words, when known.
    Mistyped {
        /// The declared shape in words.
        expected: Option<String>,
    },
    /// The value there has the declared kind but breaks one of the schema's constraints
    /// (`maximum`, `minItems`, `pattern`, …); `limit` is the constraint's value in the schema.
    Breaks {
        /// The declared shape in words.
        expected: Option<String>,
        /// The schema keyword broken.
        keyword: String,
        /// The keyword's value in the schema, when it is a plain value.
        limit: Option<String>,
    },
    /// The object there carries a field its type does not declare (and admits no others);
    /// `declared` lists the fields it does declare.
    Undeclared {
        /// The declared fields in words.
        declared: String,
    },
}

impl Misfit {
    /// The place with `root` in front (`root` alone at the root). Without a root the place may
    /// be empty.
    pub fn name(&self, root: Option<&str>) -> String {
        let Some(r) = root else {
            return self.at.clone();
        };
        if self.at.is_empty() {
            r.to_owned()
        } else if let Some(rest) = self.at.strip_prefix("an entry") {
            format!("{r} entry{rest}")
        } else if self.at.starts_with('[') {
            format!("{r}{}", self.at)
        } else {
            format!("{r}.{}", self.at)
        }
    }

    /// Whether the value breaks the schema's structure (a kind, a required field, an enum, an
    /// undeclared field) rather than one of its constraints on a well-kinded value.
    pub fn is_structural(&self) -> bool {
        !matches!(self.what, What::Breaks { .. })
    }

    /// The misfit in one sentence, the place written with `root` in front. A misfit at an
    /// unnamed root speaks of "the answer".
    pub fn sentence(&self, root: Option<&str>) -> String {
        let name = self.name(root);
        match (&self.what, name.is_empty()) {
            (What::Missing { expected: Some(e) }, _) => {
                format!("the required field `{name}` is missing; it must be {e}")
            }
            (What::Missing { expected: None }, _) => {
                format!("the required field `{name}` is missing")
            }
            (_, true) => format!("the answer {}", self.predicate()),
            (_, false) => format!("field `{name}` {}", self.predicate()),
        }
    }

    /// What is wrong, without the place: `must be an integer`, `is required and missing; …`.
    pub(crate) fn predicate(&self) -> String {
        match &self.what {
            What::Missing { expected: Some(e) } => {
                format!("is required and missing; it must be {e}")
            }
            What::Missing { expected: None } => "is required and missing".to_owned(),
            What::Mistyped { expected: Some(e) } => format!("must be {e}"),
            What::Mistyped { expected: None } => "does not fit the declared type".to_owned(),
            What::Breaks {
                expected,
                keyword,
                limit,
            } => {
                let limit = limit
                    .as_ref()
                    .map(|l| format!(" ({l})"))
                    .unwrap_or_default();
                match expected {
                    Some(e) => format!("must be {e} within the schema's `{keyword}`{limit}"),
                    None => format!("breaks the schema's `{keyword}`{limit}"),
                }
            }
            What::Undeclared { declared } if declared.is_empty() => {
                "has a field its type does not declare; it declares none".to_owned()
            }
            What::Undeclared { declared } => {
                format!("has a field its type does not declare; the declared fields are {declared}")
            }
        }
    }
}

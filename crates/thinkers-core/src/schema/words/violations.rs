//! An answer without a Rust type checked against its schema by a JSON Schema validator, and what
//! the validator found said in the schema's terms (its own messages quote the value).

use serde_json::Value;

use super::{Misfit, SchemaWords, Step, What, join};

impl SchemaWords<'_> {
    /// Where `value` breaks this schema as a JSON Schema validator finds it, at most `limit`
    /// places, in the schema's terms. Empty when the value fits — or when the schema does not
    /// compile, in which case nothing beyond the caller's own decoding is checked (logged).
    pub fn violations(&self, value: &Value, limit: usize) -> Vec<Misfit> {
        let validator = match jsonschema::validator_for(self.root) {
            Ok(v) => v,
            Err(e) => {
                tracing::warn!(error = %e, "a response schema does not compile; answers are \
                    not validated against it");
                return Vec::new();
            }
        };
        validator
            .iter_errors(value)
            .take(limit)
            .map(|e| self.violation(&e))
            .collect()
    }

    /// One validator error in the schema's terms (the validator's message quotes the value).
    fn violation(&self, e: &jsonschema::ValidationError<'_>) -> Misfit {
        use jsonschema::error::ValidationErrorKind as Kind;
        use jsonschema::paths::LocationSegment;
        let segments: Vec<LocationSegment<'_>> = e.instance_path().iter().collect();
        let steps = segments.iter().map(|seg| match seg {
            LocationSegment::Property(key) => Step::Key(key),
            LocationSegment::Index(index) => Step::Number(*index),
        });
        let place = self.locate(steps);
        if let Some(declared) = place.undeclared {
            return Misfit {
                at: place.shown,
                what: What::Undeclared { declared },
            };
        }
        let node = place.node.map(|n| self.non_null(n));
        let depth = usize::from(!place.shown.is_empty());
        let expected = node.map(|n| self.phrase(n, false, depth));
        let what = match e.kind() {
            Kind::Required { property } => {
                // The property comes from the schema's own `required` list.
                let field = property.as_str().unwrap_or("a field");
                let expected = node
                    .and_then(|n| self.property(n, field))
                    .map(|p| self.phrase(p, false, 1));
                return Misfit {
                    at: join(&place.shown, field),
                    what: What::Missing { expected },
                };
            }
            Kind::AdditionalProperties { .. } | Kind::UnevaluatedProperties { .. } => {
                What::Undeclared {
                    declared: node.map(|n| self.field_list(n, 0)).unwrap_or_default(),
                }
            }
            Kind::Type { .. }
            | Kind::Enum { .. }
            | Kind::Constant { .. }
            | Kind::AnyOf { .. }
            | Kind::OneOfNotValid { .. }
            | Kind::FalseSchema => What::Mistyped { expected },
            _ => {
                let keyword = e.kind().keyword().to_owned();
                let limit = node
                    .and_then(|n| n.get(&keyword))
                    .filter(|v| v.is_number() || v.is_boolean() || v.is_string())
                    .map(Value::to_string);
                What::Breaks {
                    expected,
                    keyword,
                    limit,
                }
            }
        };
        Misfit {
            at: place.shown,
            what,
        }
    }
}

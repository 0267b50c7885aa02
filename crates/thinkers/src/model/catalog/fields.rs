//! Typed reading of one TOML table of a catalog, turning every shape problem into a
//! [`CatalogError`] that names the source, the table, the field and the value.

use std::collections::{BTreeMap, BTreeSet};

use toml::{Spanned, Value};

use super::error::{CatalogError, InvalidValue, Location, Problem};

/// A catalog table as parsed: each field keeps its position in the text.
pub(super) type RawTable = BTreeMap<String, Spanned<Value>>;

/// The text being loaded, for turning byte offsets into lines.
#[derive(Debug, Clone, Copy)]
pub(super) struct Source<'a> {
    pub(super) name: &'a str,
    pub(super) text: &'a str,
}

impl Source<'_> {
    /// The 1-based line and column of a byte offset.
    pub(super) fn line_col(&self, offset: usize) -> (usize, usize) {
        let before = self.text.get(..offset).unwrap_or(self.text);
        let line = before.matches('\n').count() + 1;
        let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
        (line, column)
    }
}

/// A reader over one table that remembers which fields were consumed, so the leftovers can be
/// reported as unknown.
pub(super) struct Fields<'a> {
    source: Source<'a>,
    location: Location,
    table: &'a RawTable,
    used: BTreeSet<&'a str>,
}

impl<'a> Fields<'a> {
    pub(super) fn new(source: Source<'a>, location: Location, table: &'a RawTable) -> Self {
        Self {
            source,
            location,
            table,
            used: BTreeSet::new(),
        }
    }

    /// Replace the location (once the entry's id is known).
    pub(super) fn set_location(&mut self, location: Location) {
        self.location = location;
    }

    /// An error about `field`, at the field's own line when it is present.
    pub(super) fn error(
        &self,
        field: &str,
        value: Option<&Value>,
        problem: Problem,
        reason: impl Into<String>,
    ) -> CatalogError {
        let head = field.split('.').next().unwrap_or(field);
        let line = self
            .table
            .get(head)
            .map(|v| self.source.line_col(v.span().start).0);
        let mut location = self.location.clone();
        match &mut location {
            Location::Provider { line: l, .. } | Location::Entry { line: l, .. } => {
                if line.is_some() {
                    *l = line;
                }
            }
            Location::Document => {}
        }
        CatalogError::Invalid(Box::new(InvalidValue {
            source_name: self.source.name.to_owned(),
            location,
            field: field.to_owned(),
            value: value.map(Value::to_string),
            problem,
            reason: reason.into(),
        }))
    }

    fn wrong_type(&self, field: &str, value: &Value, expected: &str) -> CatalogError {
        self.error(
            field,
            Some(value),
            Problem::WrongType,
            format!("expected {expected}, found {}", value.type_str()),
        )
    }

    /// Mark a field consumed without reading it (the `sim` profile).
    pub(super) fn ignore(&mut self, field: &'a str) {
        self.used.insert(field);
    }

    fn get(&mut self, field: &'a str) -> Option<&'a Value> {
        self.used.insert(field);
        self.table.get(field).map(Spanned::get_ref)
    }

    fn required<T>(&self, field: &str, value: Option<T>) -> Result<T, CatalogError> {
        value.ok_or_else(|| self.error(field, None, Problem::Missing, "this field is required"))
    }

    /// An optional non-empty string.
    pub(super) fn string(&mut self, field: &'a str) -> Result<Option<&'a str>, CatalogError> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::String(s)) if s.trim().is_empty() => Err(self.error(
                field,
                self.value_of(field),
                Problem::BadValue,
                "must not be empty",
            )),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(self.wrong_type(field, other, "a string")),
        }
    }

    /// A required non-empty string.
    pub(super) fn required_string(&mut self, field: &'a str) -> Result<&'a str, CatalogError> {
        let value = self.string(field)?;
        self.required(field, value)
    }

    /// The value of a field as written, for error messages.
    pub(super) fn value_of(&self, field: &str) -> Option<&'a Value> {
        self.table.get(field).map(Spanned::get_ref)
    }

    /// An optional whole number from 0 to `max`.
    pub(super) fn count(&mut self, field: &'a str, max: u64) -> Result<Option<u64>, CatalogError> {
        match self.get(field) {
            None => Ok(None),
            Some(v @ Value::Integer(n)) => match u64::try_from(*n) {
                Ok(n) if n <= max => Ok(Some(n)),
                _ => Err(self.error(
                    field,
                    Some(v),
                    Problem::BadValue,
                    format!("must be a whole number from 0 to {max}"),
                )),
            },
            Some(other) => Err(self.wrong_type(field, other, "an integer")),
        }
    }

    /// A required whole number from 0 to `max`.
    pub(super) fn required_count(&mut self, field: &'a str, max: u64) -> Result<u64, CatalogError> {
        let value = self.count(field, max)?;
        self.required(field, value)
    }

    /// An optional limit: a whole number from 1 to `max` (leave the field out for no limit).
    pub(super) fn limit(&mut self, field: &'a str, max: u64) -> Result<Option<u64>, CatalogError> {
        match self.count(field, max)? {
            Some(0) => Err(self.error(
                field,
                self.value_of(field),
                Problem::BadValue,
                "a limit must be at least 1; leave the field out for no limit",
            )),
            other => Ok(other),
        }
    }

    /// An optional price: a finite, non-negative number (an integer is accepted).
    pub(super) fn price(&mut self, field: &'a str) -> Result<Option<f64>, CatalogError> {
        let (value, number) = match self.get(field) {
            None => return Ok(None),
            Some(v @ Value::Float(f)) => (v, *f),
            Some(v @ Value::Integer(n)) => (v, *n as f64),
            Some(other) => return Err(self.wrong_type(field, other, "a number")),
        };
        if number.is_finite() && number >= 0.0 {
            Ok(Some(number))
        } else {
            Err(self.error(
                field,
                Some(value),
                Problem::BadPrice,
                "a price must be a finite number of at least 0",
            ))
        }
    }

    /// A number of seconds from 0 to `max`, fractions allowed.
    pub(super) fn seconds(
        &mut self,
        field: &'a str,
        max: f64,
    ) -> Result<Option<f64>, CatalogError> {
        let (value, number) = match self.get(field) {
            None => return Ok(None),
            Some(v @ Value::Float(f)) => (v, *f),
            Some(v @ Value::Integer(n)) => (v, *n as f64),
            Some(other) => return Err(self.wrong_type(field, other, "a number of seconds")),
        };
        if number.is_finite() && (0.0..=max).contains(&number) {
            Ok(Some(number))
        } else {
            Err(self.error(
                field,
                Some(value),
                Problem::BadValue,
                format!("must be a number of seconds from 0 to {max}"),
            ))
        }
    }

    /// An optional boolean.
    pub(super) fn boolean(&mut self, field: &'a str) -> Result<Option<bool>, CatalogError> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::Boolean(b)) => Ok(Some(*b)),
            Some(other) => Err(self.wrong_type(field, other, "true or false")),
        }
    }

    /// An optional inline table, as `(key, value)` pairs in key order.
    pub(super) fn table(
        &mut self,
        field: &'a str,
    ) -> Result<Option<Vec<(&'a str, &'a Value)>>, CatalogError> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::Table(t)) => Ok(Some(t.iter().map(|(k, v)| (k.as_str(), v)).collect())),
            Some(other) => Err(self.wrong_type(field, other, "a table")),
        }
    }

    /// Check the value of one key of a nested table (`field.key`) is of the expected kind.
    pub(super) fn nested_string(
        &self,
        field: &str,
        key: &str,
        value: &'a Value,
    ) -> Result<&'a str, CatalogError> {
        let dotted = format!("{field}.{key}");
        match value {
            Value::String(s) if !s.trim().is_empty() => Ok(s),
            Value::String(_) => {
                Err(self.error(&dotted, Some(value), Problem::BadValue, "must not be empty"))
            }
            other => Err(self.wrong_type(&dotted, other, "a string")),
        }
    }

    /// A non-negative integer under a nested key (`field.key`), at most `max`.
    pub(super) fn nested_count(
        &self,
        field: &str,
        key: &str,
        value: &Value,
        max: u64,
    ) -> Result<u64, CatalogError> {
        let dotted = format!("{field}.{key}");
        match value {
            Value::Integer(n) => match u64::try_from(*n) {
                Ok(n) if n <= max => Ok(n),
                _ => Err(self.error(
                    &dotted,
                    Some(value),
                    Problem::BadValue,
                    format!("must be a whole number from 0 to {max}"),
                )),
            },
            other => Err(self.wrong_type(&dotted, other, "an integer")),
        }
    }

    /// Fail on the first field nobody read.
    pub(super) fn finish(self) -> Result<(), CatalogError> {
        match self
            .table
            .iter()
            .find(|(k, _)| !self.used.contains(k.as_str()))
        {
            Some((field, value)) => Err(self.error(
                field,
                Some(value.get_ref()),
                Problem::UnknownField,
                "the catalog format has no such field",
            )),
            None => Ok(()),
        }
    }
}

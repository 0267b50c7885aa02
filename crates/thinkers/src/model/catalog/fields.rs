//! Naming where a catalog goes wrong: the source text (for lines, and values as written), the
//! provider or entry being checked ([`Place`], which also checks the range of its numbers), and
//! the translation of the errors serde raises while reading the file's shape ([`shape_error`])
//! into the same [`CatalogError`]s.

use std::ops::Range;

use serde_path_to_error::Segment;
use toml::{Spanned, Value};

use super::error::{CatalogError, InvalidValue, Location, Problem};
use super::file::{Number, Whole};

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

    /// The 1-based line of a byte offset.
    pub(super) fn line(&self, offset: usize) -> usize {
        self.line_col(offset).0
    }

    /// The text at `span`, as written.
    fn written(&self, span: Range<usize>) -> Option<String> {
        self.text.get(span).map(|s| s.trim().to_owned())
    }

    /// A TOML syntax error, at the parser's position.
    pub(super) fn syntax(&self, err: &toml::de::Error) -> CatalogError {
        self.syntax_at(err.span(), err.message())
    }

    fn syntax_at(&self, span: Option<Range<usize>>, message: &str) -> CatalogError {
        let (line, column) = span.map_or((1, 1), |s| self.line_col(s.start));
        CatalogError::Syntax {
            source_name: self.name.to_owned(),
            line,
            column,
            message: message.to_owned(),
        }
    }
}

/// The document, provider or entry being checked: every error made through it names the
/// source and the place, and the line of the field when its value is at hand.
#[derive(Debug, Clone)]
pub(super) struct Place<'a> {
    source: Source<'a>,
    location: Location,
}

impl<'a> Place<'a> {
    /// The place `location` of `source` (its line, if any, is the table's).
    pub(super) fn new(source: Source<'a>, location: Location) -> Self {
        Self { source, location }
    }

    /// An error about `field`, whose value is `value`: the error names the value as written
    /// and the line it is on.
    pub(super) fn bad<T>(
        &self,
        field: &str,
        value: &Spanned<T>,
        problem: Problem,
        reason: impl Into<String>,
    ) -> CatalogError {
        self.error(field, Some(value.span()), problem, reason.into())
    }

    /// An error about `field` without a value to show (it is absent), at the line of `near`
    /// (the table it belongs in).
    pub(super) fn beside<T>(
        &self,
        field: &str,
        near: &Spanned<T>,
        problem: Problem,
        reason: impl Into<String>,
    ) -> CatalogError {
        let mut located = self.clone();
        at_line(&mut located.location, self.source.line(near.span().start));
        located.error(field, None, problem, reason.into())
    }

    /// An error about `field` without a value to show (it is absent, or the problem is its
    /// absence elsewhere), at the table's line.
    pub(super) fn absent(
        &self,
        field: &str,
        problem: Problem,
        reason: impl Into<String>,
    ) -> CatalogError {
        self.error(field, None, problem, reason.into())
    }

    /// A whole number from 0 to `max`.
    pub(super) fn count(
        &self,
        field: &str,
        value: &Spanned<Whole>,
        max: u64,
    ) -> Result<u64, CatalogError> {
        match u64::try_from(value.get_ref().0) {
            Ok(n) if n <= max => Ok(n),
            _ => Err(self.bad(
                field,
                value,
                Problem::BadValue,
                format!("must be a whole number from 0 to {max}"),
            )),
        }
    }

    /// An optional limit: a whole number from 1 to `max` (the field left out for no limit).
    pub(super) fn limit(
        &self,
        field: &str,
        value: Option<&Spanned<Whole>>,
        max: u64,
    ) -> Result<Option<u64>, CatalogError> {
        let Some(value) = value else {
            return Ok(None);
        };
        match self.count(field, value, max)? {
            0 => Err(self.bad(
                field,
                value,
                Problem::BadValue,
                "a limit must be at least 1; leave the field out for no limit",
            )),
            n => Ok(Some(n)),
        }
    }

    /// An optional price: a finite number of at least 0.
    pub(super) fn price(
        &self,
        field: &str,
        value: Option<&Spanned<Number>>,
    ) -> Result<Option<f64>, CatalogError> {
        let Some(value) = value else {
            return Ok(None);
        };
        let number = value.get_ref().0;
        if number.is_finite() && number >= 0.0 {
            Ok(Some(number))
        } else {
            Err(self.bad(
                field,
                value,
                Problem::BadPrice,
                "a price must be a finite number of at least 0",
            ))
        }
    }

    /// A number of seconds from 0 to `max`, fractions allowed.
    pub(super) fn seconds(
        &self,
        field: &str,
        value: &Spanned<Number>,
        max: f64,
    ) -> Result<f64, CatalogError> {
        let number = value.get_ref().0;
        if number.is_finite() && (0.0..=max).contains(&number) {
            Ok(number)
        } else {
            Err(self.bad(
                field,
                value,
                Problem::BadValue,
                format!("must be a number of seconds from 0 to {max}"),
            ))
        }
    }

    fn error(
        &self,
        field: &str,
        span: Option<Range<usize>>,
        problem: Problem,
        reason: String,
    ) -> CatalogError {
        let mut location = self.location.clone();
        let value = span.and_then(|span| {
            at_line(&mut location, self.source.line(span.start));
            self.source.written(span)
        });
        CatalogError::Invalid(Box::new(InvalidValue {
            source_name: self.source.name.to_owned(),
            location,
            field: field.to_owned(),
            value,
            problem,
            reason,
        }))
    }
}

/// Put `line` in a provider's or entry's location.
fn at_line(location: &mut Location, line: usize) {
    match location {
        Location::Provider { line: l, .. } | Location::Entry { line: l, .. } => *l = Some(line),
        Location::Document => {}
    }
}

/// The prefix of the path segments a `Spanned` value adds (the value inside it).
const SPANNED_PRIVATE: &str = "$__serde_spanned_private_";

/// The [`CatalogError`] for an error serde raised while reading the file's shape.
///
/// The path (`entries[3].api_key_vr`) names the provider or entry (an entry by the id its text
/// gives, when it gives a usable one, else by position) and the field; the error's span gives
/// the line, and the value as written when the span covers it. The kind of problem is read
/// from serde's standard wording (`unknown field`, `missing field`, `invalid type`), which its
/// message keeps: an unknown field's message lists the fields the table takes. A problem
/// outside every provider, entry and `spend` table (an unknown top-level key, `entries` that
/// is not an array of tables) is a [`CatalogError::Syntax`] at its line and column.
pub(super) fn shape_error(
    source: Source<'_>,
    err: &serde_path_to_error::Error<toml::de::Error>,
) -> CatalogError {
    let inner = err.inner();
    let message = inner.message();
    let path: Vec<&Segment> = err
        .path()
        .iter()
        .filter(|s| !matches!(s, Segment::Map { key } if key.starts_with(SPANNED_PRIVATE)))
        .collect();
    // The document read without a shape: the id of the entry at fault, an unknown field's value.
    let loose: Option<toml::Table> = source.text.parse().ok();
    let (location, rest) = match path.as_slice() {
        [Segment::Map { key }, Segment::Map { key: name }, rest @ ..] if key == "providers" => {
            let location = Location::Provider {
                name: name.clone(),
                line: None,
            };
            (location, rest)
        }
        [
            top @ Segment::Map { key },
            at @ Segment::Seq { index },
            rest @ ..,
        ] if key == "entries" => {
            let id = lookup(loose.as_ref(), &[top, at, &id_segment()])
                .and_then(Value::as_str)
                .filter(|id| !id.trim().is_empty())
                .map(str::to_owned);
            let location = Location::Entry {
                id,
                index: *index,
                line: None,
            };
            (location, rest)
        }
        [Segment::Map { key }, ..] if key == "spend" => (Location::Document, path.as_slice()),
        _ => return source.syntax_at(inner.span(), message),
    };
    let missing = message
        .strip_prefix("missing field `")
        .and_then(|m| m.split('`').next());
    let (problem, field, reason) = match missing {
        Some(name) => {
            let field = dotted(rest, Some(name));
            (Problem::Missing, field, "this field is required".to_owned())
        }
        // The table as a whole has the wrong type (`[providers] acme = 3`).
        None if rest.is_empty() => return source.syntax_at(inner.span(), message),
        None if message.starts_with("unknown field") => (
            Problem::UnknownField,
            dotted(rest, None),
            message.to_owned(),
        ),
        None if message.starts_with("invalid type") => {
            (Problem::WrongType, dotted(rest, None), message.to_owned())
        }
        None => (Problem::BadValue, dotted(rest, None), message.to_owned()),
    };
    let mut location = location;
    if let Some(span) = inner.span() {
        at_line(&mut location, source.line(span.start));
    }
    let value = match problem {
        Problem::Missing => None,
        // The span covers the key; the value is read back from the document.
        Problem::UnknownField => lookup(loose.as_ref(), &path).map(Value::to_string),
        _ => inner.span().and_then(|span| source.written(span)),
    };
    CatalogError::Invalid(Box::new(InvalidValue {
        source_name: source.name.to_owned(),
        location,
        field,
        value,
        problem,
        reason,
    }))
}

fn id_segment() -> Segment {
    Segment::Map {
        key: "id".to_owned(),
    }
}

/// The field a path names, dotted (`reasoning_tokens.deep`), with `last` appended.
fn dotted(path: &[&Segment], last: Option<&str>) -> String {
    let mut field = String::new();
    let keys = path.iter().filter_map(|segment| match segment {
        Segment::Map { key } => Some(key.clone()),
        Segment::Seq { index } => Some(format!("[{index}]")),
        Segment::Enum { .. } | Segment::Unknown => None,
    });
    for key in keys.chain(last.map(str::to_owned)) {
        if !field.is_empty() && !key.starts_with('[') {
            field.push('.');
        }
        field.push_str(&key);
    }
    field
}

/// The value at `path` in the document read without a shape.
fn lookup<'v>(document: Option<&'v toml::Table>, path: &[&Segment]) -> Option<&'v Value> {
    let (first, rest) = path.split_first()?;
    let Segment::Map { key } = first else {
        return None;
    };
    let mut value = document?.get(key)?;
    for segment in rest {
        value = match segment {
            Segment::Map { key } => value.as_table()?.get(key)?,
            Segment::Seq { index } => value.as_array()?.get(*index)?,
            Segment::Enum { .. } | Segment::Unknown => return None,
        };
    }
    Some(value)
}

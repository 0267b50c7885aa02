//! [`CatalogError`]: why a catalog could not be loaded, naming the file, the place and the field.

use std::fmt;

use crate::error::Error;

/// Where in a catalog a problem sits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// The document as a whole (a top-level key).
    Document,
    /// A `[providers.<name>]` table.
    Provider {
        /// The provider's key.
        name: String,
        /// The 1-based line of its table, when known.
        line: Option<usize>,
    },
    /// One `[[entries]]` table.
    Entry {
        /// Its id, when it has a usable one.
        id: Option<String>,
        /// Its 0-based position among the entries.
        index: usize,
        /// The 1-based line of its table, when known.
        line: Option<usize>,
    },
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Document => f.write_str("top level"),
            Self::Provider { name, line } => {
                write!(f, "provider `{name}`")?;
                write_line(f, *line)
            }
            Self::Entry { id, index, line } => {
                match id {
                    Some(id) => write!(f, "entry `{id}`")?,
                    None => write!(f, "entry #{index} (no id)")?,
                }
                write_line(f, *line)
            }
        }
    }
}

fn write_line(f: &mut fmt::Formatter<'_>, line: Option<usize>) -> fmt::Result {
    match line {
        Some(line) => write!(f, " (line {line})"),
        None => Ok(()),
    }
}

/// What is wrong with a field, so callers and tests can tell failures apart without reading
/// messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Problem {
    /// A required field is absent.
    Missing,
    /// A field this format does not know.
    UnknownField,
    /// The value has the wrong TOML type.
    WrongType,
    /// A grade that is not a rung.
    UnknownGrade,
    /// An id used twice (or a provider name already defined when merging).
    Duplicate,
    /// An entry names a provider the catalog does not define.
    UnknownProvider,
    /// A dialect name the runtime does not speak.
    UnknownDialect,
    /// A negative or non-finite price.
    BadPrice,
    /// A currency that is not three upper-case letters.
    BadCurrency,
    /// A zero context window.
    ZeroContextWindow,
    /// An output ceiling above the context window (or zero).
    BadOutputCeiling,
    /// A key of a reasoning map that is not a depth.
    UnknownDepth,
    /// A key of `output_budgets` that is not a named rung.
    UnknownOutputSize,
    /// Any other value out of range (a zero limit, an empty name, a bad URL).
    BadValue,
    /// Fields that exclude each other are both present.
    Conflict,
}

/// A catalog that could not be loaded. Every variant names the source (a file path or the name
/// given to [`super::Catalog::from_toml_str`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CatalogError {
    /// The file could not be read.
    #[error("{source_name}: cannot read the catalog: {source}")]
    Io {
        /// The path.
        source_name: String,
        /// The I/O failure.
        #[source]
        source: std::io::Error,
    },
    /// The text is not TOML or does not have the catalog's top-level shape.
    #[error("{source_name}:{line}:{column}: TOML error: {message}")]
    Syntax {
        /// The source.
        source_name: String,
        /// 1-based line of the problem (1 when the parser gave no position).
        line: usize,
        /// 1-based column.
        column: usize,
        /// What the parser said.
        message: String,
    },
    /// A value is wrong.
    #[error("{0}")]
    Invalid(Box<InvalidValue>),
    /// A [`super::CatalogBuilder`] was used in the wrong order (a setting before the provider or
    /// entry it applies to).
    #[error("catalog built in code: {0}")]
    Built(String),
}

/// A wrong value in a catalog, with everything needed to find and fix it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{source_name}: {location}: field `{field}`{}: {reason}", show_value(.value.as_deref()))]
pub struct InvalidValue {
    /// The source.
    pub source_name: String,
    /// The provider or entry.
    pub location: Location,
    /// The field, dotted for nested keys (`reasoning_tokens.deep`).
    pub field: String,
    /// The offending value as written, when there is one.
    pub value: Option<String>,
    /// What kind of problem.
    pub problem: Problem,
    /// What is wrong, in words.
    pub reason: String,
}

fn show_value(value: Option<&str>) -> String {
    value.map(|v| format!(" = {v}")).unwrap_or_default()
}

impl CatalogError {
    /// The kind of problem, for an invalid value.
    #[cfg(test)]
    pub(crate) fn problem(&self) -> Option<Problem> {
        match self {
            Self::Invalid(invalid) => Some(invalid.problem),
            Self::Io { .. } | Self::Syntax { .. } | Self::Built(_) => None,
        }
    }

    /// The source the error is about.
    pub fn source_name(&self) -> &str {
        match self {
            Self::Io { source_name, .. } | Self::Syntax { source_name, .. } => source_name,
            Self::Invalid(invalid) => &invalid.source_name,
            Self::Built(_) => "catalog built in code",
        }
    }
}

impl From<CatalogError> for Error {
    /// A catalog that cannot be read is a failure of the filesystem; a malformed one is invalid
    /// input (its author can fix it), reported as parameter `catalog` with the source as value.
    fn from(err: CatalogError) -> Self {
        match &err {
            CatalogError::Io { source_name, .. } => Self::external(
                "filesystem",
                format!("read catalog {source_name}"),
                err.to_string(),
            )
            .with_source(err),
            CatalogError::Syntax { .. } | CatalogError::Invalid(_) | CatalogError::Built(_) => {
                Self::InvalidInput {
                    parameter: "catalog".to_owned(),
                    value: Some(err.source_name().to_owned()),
                    reason: err.to_string(),
                    source: Some(Box::new(err)),
                }
            }
        }
    }
}

//! The shape of a catalog file, as serde reads it: one struct per table, each refusing the
//! fields it does not know (`deny_unknown_fields`), so a misspelt field is named as unknown
//! together with the fields the table takes.
//!
//! Reading checks only the shape: which fields exist, which are required, and the TOML type of
//! each value (strings also must not be blank). Values keep their place in the text
//! ([`Spanned`]) so the checks made afterwards in [`super::load`] (ranges, names, fields that
//! go together) can name the line and the value as written. Tables whose keys are names the
//! runtime defines (depths, output rungs) are read as maps and their keys checked afterwards,
//! so the error says which names exist.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Unexpected, Visitor};
use toml::Spanned;

use super::error::CatalogError;
use super::fields::{Source, shape_error};

/// A whole catalog document.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a catalog document")]
pub(super) struct CatalogFile {
    /// `[providers.<name>]`.
    #[serde(default)]
    pub(super) providers: BTreeMap<String, Spanned<ProviderTable>>,
    /// `[[entries]]`.
    #[serde(default)]
    pub(super) entries: Vec<Spanned<EntryTable>>,
    /// The caps on every call (`[spend]`).
    pub(super) spend: Option<Spanned<SpendTable>>,
}

impl CatalogFile {
    /// Parse `source`'s text. A TOML syntax error, a field nobody knows, a missing required
    /// field or a value of the wrong type is an error naming the provider or entry, the field
    /// and the line (see [`shape_error`]).
    pub(super) fn parse(source: Source<'_>) -> Result<Self, CatalogError> {
        let document = toml::Deserializer::parse(source.text).map_err(|e| source.syntax(&e))?;
        serde_path_to_error::deserialize(document).map_err(|e| shape_error(source, &e))
    }
}

/// One `[providers.<name>]` table.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a provider table")]
pub(super) struct ProviderTable {
    pub(super) dialect: Spanned<Text>,
    pub(super) base_url: Spanned<Text>,
    pub(super) api_key_env: Option<Spanned<Text>>,
    pub(super) structured_output: Option<Spanned<Text>>,
    pub(super) stream_tools: Option<bool>,
    pub(super) prompt_cache: Option<bool>,
    /// Azure OpenAI addressing (see [`super::azure`]).
    pub(super) azure: Option<Spanned<Text>>,
    pub(super) api_version: Option<Spanned<Text>>,
    pub(super) auth: Option<Spanned<Text>>,
    /// `bedrock-converse` only (see [`super::AwsSettings`]).
    pub(super) region: Option<Spanned<Text>>,
    pub(super) access_key_env: Option<Spanned<Text>>,
    pub(super) secret_key_env: Option<Spanned<Text>>,
    pub(super) session_token_env: Option<Spanned<Text>>,
    pub(super) spend: Option<Spanned<SpendTable>>,
}

/// One `[[entries]]` table.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "an entry table")]
pub(super) struct EntryTable {
    pub(super) id: Spanned<Text>,
    pub(super) provider: Spanned<Text>,
    pub(super) model: Spanned<Text>,
    pub(super) grade: Spanned<Text>,
    pub(super) context_window: Spanned<Whole>,
    pub(super) output_ceiling: Spanned<Whole>,
    pub(super) tpm: Option<Spanned<Whole>>,
    pub(super) itpm: Option<Spanned<Whole>>,
    pub(super) otpm: Option<Spanned<Whole>>,
    pub(super) rpm: Option<Spanned<Whole>>,
    pub(super) concurrency: Option<Spanned<Whole>>,
    pub(super) burst_seconds: Option<Spanned<Number>>,
    pub(super) price_in: Option<Spanned<Number>>,
    pub(super) price_out: Option<Spanned<Number>>,
    pub(super) price_cached: Option<Spanned<Number>>,
    pub(super) price_cache_write: Option<Spanned<Number>>,
    pub(super) currency: Option<Spanned<Text>>,
    pub(super) prompt_cache: Option<bool>,
    pub(super) cache_ttl: Option<Spanned<Text>>,
    pub(super) cache_reads_count: Option<bool>,
    pub(super) thinking: Option<bool>,
    pub(super) native_tools: Option<bool>,
    pub(super) open: Option<bool>,
    /// Depth name → tokens.
    pub(super) reasoning_tokens: Option<BTreeMap<String, Spanned<Whole>>>,
    /// Depth name → effort name.
    pub(super) reasoning_effort: Option<BTreeMap<String, Spanned<Text>>>,
    /// Output rung name → tokens.
    pub(super) output_budgets: Option<BTreeMap<String, Spanned<Whole>>>,
    pub(super) compliance: Option<BTreeMap<String, Spanned<Text>>>,
    pub(super) tokenizer: Option<Spanned<Text>>,
    pub(super) spend: Option<Spanned<SpendTable>>,
    /// The simulated provider's behaviour profile: its shape is `thinkers-sim`'s business.
    #[serde(rename = "sim")]
    pub(super) _sim: Option<IgnoredAny>,
}

/// A `spend` table: on the document, a provider or an entry (see [`super::spend`]).
#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a spend table")]
pub(super) struct SpendTable {
    pub(super) currency: Option<Spanned<Text>>,
    pub(super) per_run: Option<Spanned<Number>>,
    pub(super) per_day: Option<Spanned<Number>>,
    pub(super) per_scope: Option<PerScope>,
}

/// A non-blank string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Text(String);

impl Text {
    /// The string.
    pub(super) fn as_str(&self) -> &str {
        &self.0
    }

    /// The string of an optional field, if present.
    pub(super) fn of(field: Option<&Spanned<Self>>) -> Option<&str> {
        field.map(|value| value.get_ref().as_str())
    }
}

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        if text.trim().is_empty() {
            return Err(de::Error::invalid_value(
                Unexpected::Str(&text),
                &"a string that is not empty",
            ));
        }
        Ok(Self(text))
    }
}

/// An integer, range unchecked (each field has its own range).
#[derive(Debug, Clone, Copy)]
pub(super) struct Whole(pub(super) i64);

impl<'de> Deserialize<'de> for Whole {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct WholeVisitor;
        impl Visitor<'_> for WholeVisitor {
            type Value = Whole;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an integer")
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Whole, E> {
                Ok(Whole(n))
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Whole, E> {
                i64::try_from(n)
                    .map(Whole)
                    .map_err(|_| E::invalid_value(Unexpected::Unsigned(n), &self))
            }
        }
        deserializer.deserialize_i64(WholeVisitor)
    }
}

/// A number: a float or an integer, range unchecked.
#[derive(Debug, Clone, Copy)]
pub(super) struct Number(pub(super) f64);

impl<'de> Deserialize<'de> for Number {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct NumberVisitor;
        impl Visitor<'_> for NumberVisitor {
            type Value = Number;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number")
            }
            fn visit_f64<E: de::Error>(self, n: f64) -> Result<Number, E> {
                Ok(Number(n))
            }
            // An integer price or amount (`price_out = 2`) is read as the same number.
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Number, E> {
                Ok(Number(n as f64))
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Number, E> {
                Ok(Number(n as f64))
            }
        }
        deserializer.deserialize_f64(NumberVisitor)
    }
}

/// `per_scope`: scope axis → amount. Its own type only so that a value that is not a table says
/// what the table holds.
pub(super) struct PerScope(pub(super) BTreeMap<String, Spanned<Number>>);

impl<'de> Deserialize<'de> for PerScope {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct AxesVisitor;
        impl<'de> Visitor<'de> for AxesVisitor {
            type Value = PerScope;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a table of scope axis = amount, such as { tenant = 5.0 }")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<PerScope, A::Error> {
                let mut axes = BTreeMap::new();
                while let Some((axis, amount)) = map.next_entry()? {
                    axes.insert(axis, amount);
                }
                Ok(PerScope(axes))
            }
        }
        deserializer.deserialize_map(AxesVisitor)
    }
}

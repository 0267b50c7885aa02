//! The model catalog: which providers exist, which models they serve, and what each model
//! costs, allows and translates a seat's words into.
//!
//! A catalog is TOML (the format is shared with `thinkers-sim`, which reads the optional
//! `[entries.sim]` behaviour profiles the runtime ignores). [`Catalog::bundled`] lists entries
//! served by the simulated provider, so everything runs offline; [`Catalog::load`] reads a
//! user's file, [`Catalog::builder`] writes one in code (with keys given in code, if wanted),
//! and [`Catalog::merge`] combines them.
//!
//! Loading validates everything once: a [`CatalogError`] names the source, the provider or entry
//! (by id, or by position when the id is missing) and the field with its bad value. After that
//! the accessors cannot fail except on an unknown name.

mod aws;
mod azure;
mod builder;
mod cache;
mod entry;
mod error;
mod fields;
mod file;
mod keys;
mod load;
mod provider;
mod spend;
#[cfg(test)]
mod tests;
mod tokenizer;

use std::collections::BTreeMap;
use std::path::Path;

pub use aws::AwsSettings;
pub use azure::Auth;
pub use azure::AzureApi;
pub use builder::{CatalogBuilder, DEFAULT_CONTEXT_WINDOW, DEFAULT_OUTPUT_CEILING};
pub(crate) use cache::BedrockCaching;
pub use cache::{CacheTtl, PromptCache};
pub use entry::{EFFORT_TOKENS, Entry, Pricing, Reasoning, effort_tokens};
pub use error::InvalidValue;
pub use error::Problem;
pub use error::{CatalogError, Location};
pub use keys::ApiKey;
pub use provider::{
    Dialect, KeySource, Provider, SIM_DEFAULT_KEY, SIM_KEY_ENV, SIM_PLACEHOLDER, StructuredOutput,
};
pub use tokenizer::Tokenizer;

use crate::Result;
use crate::error::Error;
use crate::model::Grade;

/// The text of the bundled catalog.
/// The text of the bundled catalog (its providers point at the simulated provider).
pub const BUNDLED_TOML: &str = include_str!("../../../catalogs/bundled.toml");

/// The source name the bundled catalog reports in errors.
const BUNDLED_NAME: &str = "bundled.toml";

/// A validated set of providers and model entries.
#[derive(Debug, Clone)]
pub struct Catalog {
    source: String,
    providers: BTreeMap<String, Provider>,
    entries: Vec<Entry>,
    /// The spending caps its `spend` tables state.
    caps: Vec<crate::dispatch::SpendCap>,
}

impl Catalog {
    /// Parse and validate catalog text. `source_name` (a path or any label) is named in every
    /// error.
    pub fn from_toml_str(text: &str, source_name: &str) -> Result<Self, CatalogError> {
        let loaded = load::load(text, source_name)?;
        Ok(Self {
            source: source_name.to_owned(),
            providers: loaded.providers,
            entries: loaded.entries,
            caps: loaded.caps,
        })
    }

    /// Read and validate a catalog file.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, CatalogError> {
        let path = path.as_ref();
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| CatalogError::Io {
            source_name: name.clone(),
            source,
        })?;
        Self::from_toml_str(&text, &name)
    }

    /// The catalog shipped with the crate: entries on every rung served by the simulated
    /// provider, through providers whose base URLs hold [`SIM_PLACEHOLDER`] until
    /// [`Catalog::with_sim_url`] is called. Their key variable is [`SIM_KEY_ENV`], which defaults
    /// to [`SIM_DEFAULT_KEY`].
    pub fn bundled() -> Self {
        match Self::from_toml_str(BUNDLED_TOML, BUNDLED_NAME) {
            Ok(catalog) => catalog,
            // The bundled text is validated by this crate's tests; should it ever break, an
            // empty catalog makes every resolution fail with a clear message instead of a panic.
            Err(err) => {
                tracing::error!(error = %err, "the bundled catalog is invalid");
                Self::empty(BUNDLED_NAME)
            }
        }
    }

    /// A catalog with no providers and no entries.
    pub(crate) fn empty(source_name: &str) -> Self {
        Self {
            source: source_name.to_owned(),
            providers: BTreeMap::new(),
            entries: Vec::new(),
            caps: Vec::new(),
        }
    }

    /// Point every provider whose base URL holds [`SIM_PLACEHOLDER`] at a running simulated
    /// provider (for example `http://127.0.0.1:43123`; a trailing slash is ignored).
    pub(crate) fn bind_sim(&mut self, base_url: &str) {
        let base = base_url.trim_end_matches('/');
        for provider in self.providers.values_mut() {
            provider.base_url = provider.base_url.replace(SIM_PLACEHOLDER, base);
        }
    }

    /// This catalog with every provider whose base URL holds [`SIM_PLACEHOLDER`] pointed at a
    /// running simulated provider (for example `http://127.0.0.1:43123`; a trailing slash is
    /// ignored).
    #[must_use]
    pub fn with_sim_url(mut self, base_url: &str) -> Self {
        self.bind_sim(base_url);
        self
    }

    /// Whether some provider still waits for [`Catalog::with_sim_url`].
    pub fn needs_sim(&self) -> bool {
        self.providers.values().any(Provider::needs_sim)
    }

    /// Add another catalog's providers, entries and spending caps (a user's catalog on top of
    /// the bundled one). A provider name or entry id both catalogs define is an error naming it.
    pub fn merge(&mut self, other: Self) -> Result<(), CatalogError> {
        let duplicate = |location: Location, field: &str, value: &str| {
            CatalogError::Invalid(Box::new(InvalidValue {
                source_name: other.source.clone(),
                location,
                field: field.to_owned(),
                value: Some(format!("{value:?}")),
                problem: Problem::Duplicate,
                reason: format!("already defined by {}", self.source),
            }))
        };
        if let Some(name) = other
            .providers
            .keys()
            .find(|n| self.providers.contains_key(*n))
        {
            let location = Location::Provider {
                name: name.clone(),
                line: None,
            };
            return Err(duplicate(location, "name", name));
        }
        let clash = other
            .entries
            .iter()
            .enumerate()
            .find(|(_, e)| self.entries.iter().any(|mine| mine.id == e.id));
        if let Some((index, entry)) = clash {
            let location = Location::Entry {
                id: Some(entry.id.to_string()),
                index,
                line: None,
            };
            return Err(duplicate(location, "id", &entry.id));
        }
        self.providers.extend(other.providers);
        self.entries.extend(other.entries);
        self.caps.extend(other.caps);
        self.source = format!("{} + {}", self.source, other.source);
        Ok(())
    }

    /// Where the catalog came from (a path, a label, or several joined by `+` after a merge).
    pub fn source_name(&self) -> &str {
        &self.source
    }

    /// Every entry, in catalog order.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The entry with this id; an unknown id is an error naming it.
    pub fn entry(&self, id: &str) -> Result<&Entry> {
        self.entries.iter().find(|e| &*e.id == id).ok_or_else(|| {
            Error::invalid_input(
                "entry",
                Some(id.to_owned()),
                format!("the catalog {} has no entry with this id", self.source),
            )
        })
    }

    /// The entries of one rung, open and closed, in catalog order. `Ceiling` has none: resolve
    /// it first.
    pub fn entries_of(&self, grade: Grade) -> Vec<&Entry> {
        self.entries.iter().filter(|e| e.grade == grade).collect()
    }

    /// Every entry grouped by rung (weakest first), each group sorted by id. Rungs without
    /// entries are absent.
    pub fn entries_by_grade(&self) -> BTreeMap<Grade, Vec<&Entry>> {
        let mut groups: BTreeMap<Grade, Vec<&Entry>> = BTreeMap::new();
        for entry in &self.entries {
            groups.entry(entry.grade).or_default().push(entry);
        }
        for group in groups.values_mut() {
            group.sort_by(|a, b| a.id.cmp(&b.id));
        }
        groups
    }

    /// The spending caps the catalog states (`[spend]`, and `spend` on providers and entries),
    /// which a runtime built on it enforces beside those set in code.
    pub fn spend_caps(&self) -> &[crate::dispatch::SpendCap] {
        &self.caps
    }

    /// Every provider, by name.
    pub fn providers(&self) -> &BTreeMap<String, Provider> {
        &self.providers
    }

    /// The provider with this name; an unknown name is an error naming it.
    pub fn provider(&self, name: &str) -> Result<&Provider> {
        self.providers.get(name).ok_or_else(|| {
            Error::invalid_input(
                "provider",
                Some(name.to_owned()),
                format!("the catalog {} defines no such provider", self.source),
            )
        })
    }
}

//! [`CatalogBuilder`]: a catalog written in Rust instead of TOML.
//!
//! The builder writes the same fields a TOML catalog has and runs them through the same loader,
//! so a catalog built in code is validated exactly as a file is, and its errors name the
//! provider or entry and the field. A key can be given in code (the key itself, or a function
//! that fetches it), which no TOML catalog can do.

use std::collections::BTreeSet;
use std::sync::Arc;

use toml::{Table, Value};

use super::Catalog;
use super::error::CatalogError;
use super::load::load_keyed;
use super::provider::{Dialect, KeySource};
use crate::model::ApiKey;
use crate::model::Grade;

/// The source name errors of a built catalog report.
const SOURCE: &str = "catalog built in code";

/// The default context window of an entry added with [`CatalogBuilder::model`].
pub const DEFAULT_CONTEXT_WINDOW: u32 = 128_000;
/// The default output ceiling of an entry added with [`CatalogBuilder::model`].
pub const DEFAULT_OUTPUT_CEILING: u32 = 16_384;

/// Builds a [`Catalog`] in code. Provider settings apply to the provider added last, entry
/// settings to the entry added last.
///
/// Prices are optional: [`CatalogBuilder::prices`] states them, [`CatalogBuilder::free`] says
/// a model really costs nothing (a local server), and an entry with neither has no prices. The
/// calls of such an entry are recorded with their cost unknown, and every report (`thinkers
/// cost`, benchmark reports, the runs explorer, the call's span) says "unknown" for them rather
/// than counting them as free.
///
/// ```
/// use thinkers::model::{Catalog, Grade};
///
/// let catalog = Catalog::builder()
///     .provider("openai", thinkers::model::Dialect::OpenAi, "https://api.openai.com/v1")
///     .api_key_env("OPENAI_API_KEY")
///     .model("gpt-4o-mini", Grade::Small)
///     .prices(0.15, 0.60, "USD")
///     .build()?;
/// assert_eq!(catalog.entries().len(), 1);
/// # Ok::<(), thinkers::model::CatalogError>(())
/// ```
#[derive(Debug, Default)]
pub struct CatalogBuilder {
    providers: Table,
    entries: Vec<Table>,
    keys: Vec<(String, KeySource)>,
    last_provider: Option<String>,
    /// A call made with nothing to apply to, reported by `build`.
    misuse: Option<String>,
}

impl CatalogBuilder {
    /// Add a provider: its name (entries refer to it), the wire format it speaks and its base
    /// URL.
    #[must_use]
    pub fn provider(mut self, name: &str, dialect: Dialect, base_url: &str) -> Self {
        let mut table = Table::new();
        table.insert("dialect".into(), Value::from(dialect.as_str()));
        table.insert("base_url".into(), Value::from(base_url));
        self.providers.insert(name.to_owned(), Value::Table(table));
        self.last_provider = Some(name.to_owned());
        self
    }

    /// The last provider reads its key from this environment variable when first used.
    #[must_use]
    pub fn api_key_env(self, var: &str) -> Self {
        self.provider_field("api_key_env", Value::from(var))
    }

    /// The last provider's key, given in code. It is never written anywhere: not in errors,
    /// logs, records or `Debug` output.
    #[must_use]
    pub fn api_key(self, key: impl Into<String>) -> Self {
        self.key_source(KeySource::Key(ApiKey::new(key)))
    }

    /// The last provider asks `source` for its key when first used (a secret manager, a file).
    /// A `None` fails the call with an error naming the provider.
    #[must_use]
    pub fn api_key_fn(self, source: impl Fn() -> Option<String> + Send + Sync + 'static) -> Self {
        self.key_source(KeySource::Fn(Arc::new(source)))
    }

    /// Add an entry on the last provider whose id is the model name, with a context window of
    /// [`DEFAULT_CONTEXT_WINDOW`] and an output ceiling of [`DEFAULT_OUTPUT_CEILING`].
    #[must_use]
    pub fn model(self, model: &str, grade: Grade) -> Self {
        self.entry(model, model, grade)
    }

    /// Add an entry with its own id on the last provider.
    #[must_use]
    pub fn entry(mut self, id: &str, model: &str, grade: Grade) -> Self {
        let Some(provider) = self.last_provider.clone() else {
            self.misuse
                .get_or_insert_with(|| format!("entry `{id}` was added before any provider"));
            return self;
        };
        let mut table = Table::new();
        table.insert("id".into(), Value::from(id));
        table.insert("provider".into(), Value::from(provider));
        table.insert("model".into(), Value::from(model));
        table.insert("grade".into(), Value::from(grade.to_string()));
        table.insert(
            "context_window".into(),
            Value::from(i64::from(DEFAULT_CONTEXT_WINDOW)),
        );
        table.insert(
            "output_ceiling".into(),
            Value::from(i64::from(DEFAULT_OUTPUT_CEILING)),
        );
        self.entries.push(table);
        self
    }

    /// The grade the last entry is listed at.
    #[must_use]
    pub fn grade(self, grade: Grade) -> Self {
        self.entry_field("grade", Value::from(grade.to_string()))
    }

    /// The last entry's prices per million input and output tokens, in `currency` (ISO 4217).
    #[must_use]
    pub fn prices(self, input: f64, output: f64, currency: &str) -> Self {
        self.entry_field("price_in", Value::from(input))
            .entry_field("price_out", Value::from(output))
            .entry_field("currency", Value::from(currency))
    }

    /// The last entry's price per million cached input tokens (the input price otherwise).
    #[must_use]
    pub fn cached_price(self, price: f64) -> Self {
        self.entry_field("price_cached", Value::from(price))
    }

    /// The last entry's price per million input tokens written to the provider's prompt cache
    /// (otherwise 1.25x the input price for Anthropic's models, 2x with the hour TTL, and the
    /// input price elsewhere).
    #[must_use]
    pub fn cache_write_price(self, price: f64) -> Self {
        self.entry_field("price_cache_write", Value::from(price))
    }

    /// Whether the last entry's requests ask the provider to cache their prefix (on unless
    /// turned off; see [`crate::model::PromptCache`]); with a TTL other than the default (an
    /// Anthropic entry only), Anthropic's cache lasts that long.
    #[must_use]
    pub fn prompt_cache(self, cache: crate::model::PromptCache) -> Self {
        match cache {
            crate::model::PromptCache::Off => self.entry_field("prompt_cache", Value::from(false)),
            // The default TTL is not written: `cache_ttl` is an Anthropic field.
            crate::model::PromptCache::On(ttl) if ttl == crate::model::CacheTtl::default() => {
                self.entry_field("prompt_cache", Value::from(true))
            }
            crate::model::PromptCache::On(ttl) => self
                .entry_field("prompt_cache", Value::from(true))
                .entry_field("cache_ttl", Value::from(ttl.as_str())),
        }
    }

    /// The last entry costs nothing (a model on your own machine): its calls are recorded at a
    /// cost of 0 USD. Without this or [`Self::prices`] the entry has no prices and the cost of
    /// its calls is recorded as unknown.
    #[must_use]
    pub fn free(self) -> Self {
        self.prices(0.0, 0.0, "USD")
    }

    /// The last entry's context window and output ceiling, in tokens.
    #[must_use]
    pub fn window(self, context_window: u32, output_ceiling: u32) -> Self {
        self.entry_field("context_window", Value::from(i64::from(context_window)))
            .entry_field("output_ceiling", Value::from(i64::from(output_ceiling)))
    }

    /// The last entry's provider limits: tokens and requests per minute (either may be absent).
    #[must_use]
    pub fn limits(self, tpm: Option<u64>, rpm: Option<u64>) -> Self {
        let as_value = |n: u64| Value::from(i64::try_from(n).unwrap_or(i64::MAX));
        let mut this = self;
        if let Some(tpm) = tpm {
            this = this.entry_field("tpm", as_value(tpm));
        }
        if let Some(rpm) = rpm {
            this = this.entry_field("rpm", as_value(rpm));
        }
        this
    }

    /// How the last entry's requests are counted for admission (the default is the length
    /// estimate; `Tokenizer::O200kBase` counts exactly for current OpenAI models).
    #[must_use]
    pub fn tokenizer(self, tokenizer: crate::model::Tokenizer) -> Self {
        let name = match tokenizer {
            crate::model::Tokenizer::Estimate => "estimate",
            crate::model::Tokenizer::O200kBase => "o200k_base",
        };
        self.entry_field("tokenizer", Value::from(name))
    }

    /// Validate and build the catalog. Errors name the provider or entry and the field, as a
    /// TOML catalog's do (the source is "catalog built in code").
    pub fn build(self) -> Result<Catalog, CatalogError> {
        if let Some(misuse) = self.misuse {
            return Err(CatalogError::Built(misuse));
        }
        let keyed: BTreeSet<String> = self.keys.iter().map(|(name, _)| name.clone()).collect();
        let mut document = Table::new();
        document.insert("providers".into(), Value::Table(self.providers));
        document.insert(
            "entries".into(),
            Value::Array(self.entries.into_iter().map(Value::Table).collect()),
        );
        let text = toml::to_string(&document).map_err(|e| CatalogError::Built(e.to_string()))?;
        let mut loaded = load_keyed(&text, SOURCE, &keyed)?;
        for (name, source) in self.keys {
            if let Some(provider) = loaded.providers.get_mut(&name) {
                provider.key = Some(source);
            }
        }
        Ok(Catalog {
            source: SOURCE.to_owned(),
            providers: loaded.providers,
            entries: loaded.entries,
            caps: loaded.caps,
        })
    }

    fn key_source(mut self, source: KeySource) -> Self {
        match self.last_provider.clone() {
            Some(name) => self.keys.push((name, source)),
            None => {
                self.misuse
                    .get_or_insert_with(|| "a key was given before any provider".to_owned());
            }
        }
        self
    }

    fn provider_field(mut self, field: &str, value: Value) -> Self {
        let provider = self
            .last_provider
            .as_ref()
            .and_then(|name| self.providers.get_mut(name))
            .and_then(Value::as_table_mut);
        match provider {
            Some(table) => {
                table.insert(field.to_owned(), value);
            }
            None => {
                self.misuse
                    .get_or_insert_with(|| format!("`{field}` was set before any provider"));
            }
        }
        self
    }

    fn entry_field(mut self, field: &str, value: Value) -> Self {
        match self.entries.last_mut() {
            Some(table) => {
                table.insert(field.to_owned(), value);
            }
            None => {
                self.misuse
                    .get_or_insert_with(|| format!("`{field}` was set before any entry"));
            }
        }
        self
    }
}

impl Catalog {
    /// A catalog written in code; see [`CatalogBuilder`].
    pub fn builder() -> CatalogBuilder {
        CatalogBuilder::default()
    }

    /// One OpenAI model: provider `openai` at `OPENAI_BASE_URL` (or
    /// `https://api.openai.com/v1`), key from `OPENAI_API_KEY`, as the official SDK reads them,
    /// listed at [`Grade::Medium`] (a thinker that declares no grade runs on the catalog's
    /// strongest rung, so one model serves it at any grade; [`CatalogBuilder::grade`] changes
    /// it). Chain [`CatalogBuilder::prices`] (or [`CatalogBuilder::free`]; without either the
    /// cost of its calls is unknown) and [`CatalogBuilder::build`].
    pub fn openai(model: &str) -> CatalogBuilder {
        let grade = Grade::Medium;
        let base = std::env::var("OPENAI_BASE_URL")
            .ok()
            .filter(|url| !url.trim().is_empty())
            .unwrap_or_else(|| "https://api.openai.com/v1".to_owned());
        Self::builder()
            .provider("openai", Dialect::OpenAi, &base)
            .api_key_env("OPENAI_API_KEY")
            .model(model, grade)
    }

    /// One Anthropic model: provider `anthropic` at `ANTHROPIC_BASE_URL` (or
    /// `https://api.anthropic.com`), key from `ANTHROPIC_API_KEY`, as the official SDK reads
    /// them, listed at [`Grade::Medium`] like [`Catalog::openai`]. Chain
    /// [`CatalogBuilder::prices`] (optional) and [`CatalogBuilder::build`].
    pub fn anthropic(model: &str) -> CatalogBuilder {
        let grade = Grade::Medium;
        let base = std::env::var("ANTHROPIC_BASE_URL")
            .ok()
            .filter(|url| !url.trim().is_empty())
            .unwrap_or_else(|| "https://api.anthropic.com".to_owned());
        Self::builder()
            .provider("anthropic", Dialect::Anthropic, &base)
            .api_key_env("ANTHROPIC_API_KEY")
            .model(model, grade)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::catalog::Problem;

    #[test]
    fn a_built_catalog_is_validated_like_a_file() {
        let catalog = Catalog::builder()
            .provider(
                "local",
                Dialect::OpenAiCompatible,
                "http://127.0.0.1:8080/v1",
            )
            .model("smol", Grade::Small)
            .free()
            .window(8_192, 1_024)
            .limits(Some(40_000), None)
            .build()
            .unwrap();
        let entry = catalog.entry("smol").unwrap();
        assert_eq!(entry.context_window(), 8_192);
        assert_eq!(entry.pricing().unwrap().input, 0.0);
        assert_eq!(catalog.source_name(), SOURCE);
        assert_eq!(entry.tokenizer(), crate::model::Tokenizer::Estimate);
        let exact = Catalog::openai("gpt-4o-mini")
            .grade(Grade::Small)
            .prices(0.15, 0.6, "USD")
            .tokenizer(crate::model::Tokenizer::O200kBase)
            .build()
            .unwrap();
        let entry = exact.entry("gpt-4o-mini").unwrap();
        assert_eq!(entry.tokenizer(), crate::model::Tokenizer::O200kBase);
        entry.tokenizer().preload();
    }

    #[test]
    fn an_entry_without_prices_is_accepted_and_its_cost_is_unknown() {
        let catalog = Catalog::builder()
            .provider("openai", Dialect::OpenAi, "https://api.openai.com/v1")
            .api_key_env("OPENAI_API_KEY")
            .model("gpt-4o-mini", Grade::Small)
            .build()
            .unwrap();
        let entry = catalog.entry("gpt-4o-mini").unwrap();
        assert!(!entry.priced());
        assert_eq!(entry.pricing(), None);
        assert_eq!(entry.currency(), None);
        assert_eq!(entry.cost(1_000, 0, 0, 1_000), None);
        assert_eq!(entry.list_price(), None);
        let free = Catalog::openai("gpt-4o-mini")
            .grade(Grade::Small)
            .free()
            .build()
            .unwrap();
        let entry = free.entry("gpt-4o-mini").unwrap();
        assert!(entry.priced());
        assert_eq!(entry.cost(1_000, 0, 0, 1_000), Some(0.0));
    }

    #[test]
    fn half_given_prices_are_refused_naming_the_entry_and_the_missing_field() {
        let err = Catalog::openai("gpt-4o-mini")
            .grade(Grade::Small)
            .cached_price(0.075)
            .build()
            .unwrap_err();
        let text = err.to_string();
        assert!(text.contains("entry `gpt-4o-mini`"), "{text}");
        assert!(text.contains("field `price_in`"), "{text}");
        assert!(matches!(err.problem(), Some(Problem::Missing)), "{err:?}");
        let err = Catalog::openai("gpt-4o-mini")
            .grade(Grade::Small)
            .prices(-1.0, 0.6, "USD")
            .build()
            .unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("gpt-4o-mini") && text.contains("`price_in`"),
            "{text}"
        );
        assert!(matches!(err.problem(), Some(Problem::BadPrice)), "{err:?}");
    }

    #[test]
    fn a_key_given_in_code_is_used_and_never_shown() {
        let catalog = Catalog::builder()
            .provider("openai", Dialect::OpenAi, "https://api.openai.com/v1")
            .api_key("sk-test-secret-123")
            .model("gpt-4o-mini", Grade::Small)
            .prices(0.15, 0.6, "USD")
            .build()
            .unwrap();
        let provider = catalog.provider("openai").unwrap();
        assert_eq!(
            provider.api_key().unwrap().as_deref(),
            Some("sk-test-secret-123")
        );
        let shown = format!("{catalog:?} {}", serde_json::to_string(provider).unwrap());
        assert!(!shown.contains("sk-test-secret-123"), "{shown}");
    }

    #[test]
    fn a_key_function_that_returns_nothing_is_an_error_naming_the_provider() {
        let catalog = Catalog::builder()
            .provider("vault", Dialect::Anthropic, "https://api.anthropic.com")
            .api_key_fn(|| None)
            .model("claude", Grade::Medium)
            .prices(3.0, 15.0, "USD")
            .build()
            .unwrap();
        let err = catalog.provider("vault").unwrap().api_key().unwrap_err();
        assert!(err.to_string().contains("`vault`"), "{err}");
    }

    #[test]
    fn settings_before_a_provider_or_entry_are_refused() {
        let err = Catalog::builder()
            .prices(1.0, 2.0, "USD")
            .build()
            .unwrap_err();
        assert!(err.to_string().contains("before any entry"), "{err}");
        let err = Catalog::builder()
            .model("m", Grade::Small)
            .build()
            .unwrap_err();
        assert!(err.to_string().contains("before any provider"), "{err}");
    }
}

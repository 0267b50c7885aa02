//! Reading the models to serve from a catalog file (the runtime's TOML catalog format).
//!
//! Only what the sim needs is read from each `[[entries]]` table: `model`, `tpm`, `rpm`,
//! `native_tools`, `thinking`, `output_ceiling` and the optional `[entries.sim]` table: the
//! behaviour profile, plus the limits only the sim enforces (`itpm`, `otpm`, `max_concurrency`,
//! `limit_shape`, `limit_window_ms`) and its prompt cache settings (`prompt_cache`,
//! `cache_min_tokens`, `cache_ttl_ms`, `cache_reads_count`); the runtime ignores `[entries.sim]`.
//! Everything else (providers, prices, grades, compliance tags…) is ignored. When several entries
//! name the same model, the first one wins.

use std::path::Path;

use serde::Deserialize;

use crate::config::{DEFAULT_OUTPUT_CEILING, Profile, SimConfig, SimModel};
use crate::error::{Result, SimError};
use crate::limits::LimitShape;

/// The keys of `[entries.sim]` that are limits rather than profile settings.
const LIMIT_KEYS: [&str; 9] = [
    "itpm",
    "otpm",
    "max_concurrency",
    "limit_shape",
    "limit_window_ms",
    "prompt_cache",
    "cache_min_tokens",
    "cache_ttl_ms",
    "cache_reads_count",
];

/// The limits an `[entries.sim]` table may set.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct SimLimits {
    #[serde(default)]
    itpm: Option<u64>,
    #[serde(default)]
    otpm: Option<u64>,
    #[serde(default)]
    max_concurrency: Option<u64>,
    #[serde(default)]
    limit_shape: LimitShape,
    #[serde(default)]
    limit_window_ms: Option<u64>,
    #[serde(default)]
    prompt_cache: Option<bool>,
    #[serde(default)]
    cache_min_tokens: Option<u64>,
    #[serde(default)]
    cache_ttl_ms: Option<u64>,
    #[serde(default)]
    cache_reads_count: Option<bool>,
}

/// Splits an `[entries.sim]` table into its limits and its behaviour profile (`None` when the
/// table holds limits only).
fn split_sim(table: Option<toml::Table>) -> Result<(SimLimits, Option<Profile>)> {
    let Some(mut table) = table else {
        return Ok((SimLimits::default(), None));
    };
    let mut limits = toml::Table::new();
    for key in LIMIT_KEYS {
        if let Some(value) = table.remove(key) {
            limits.insert(key.to_owned(), value);
        }
    }
    let had_limits = !limits.is_empty();
    let toml_error = |source| SimError::Toml {
        what: "catalog",
        source,
    };
    let limits: SimLimits = toml::Value::Table(limits).try_into().map_err(toml_error)?;
    let profile = if had_limits && table.is_empty() {
        None
    } else {
        Some(toml::Value::Table(table).try_into().map_err(toml_error)?)
    };
    Ok((limits, profile))
}

#[derive(Debug, Deserialize)]
struct CatalogFile {
    #[serde(default)]
    entries: Vec<CatalogEntry>,
}

#[derive(Debug, Deserialize)]
struct CatalogEntry {
    model: String,
    #[serde(default)]
    tpm: Option<u64>,
    #[serde(default)]
    rpm: Option<u64>,
    #[serde(default)]
    native_tools: Option<bool>,
    #[serde(default)]
    thinking: Option<bool>,
    #[serde(default)]
    output_ceiling: Option<u32>,
    #[serde(default)]
    sim: Option<toml::Table>,
}

impl SimConfig {
    /// Reads the served models from catalog TOML text. Other settings keep their defaults (seed 0,
    /// no script, no body log); unknown model names are answered 404.
    pub fn from_catalog_toml(text: &str) -> Result<Self> {
        let catalog: CatalogFile = toml::from_str(text).map_err(|source| SimError::Toml {
            what: "catalog",
            source,
        })?;
        let mut config = Self {
            accept_any_model: Some(false),
            ..Self::default()
        };
        for entry in catalog.entries {
            if config.models.iter().any(|m| m.name == entry.model) {
                continue;
            }
            let (limits, profile) = split_sim(entry.sim)?;
            config.models.push(SimModel {
                name: entry.model,
                tpm: entry.tpm,
                rpm: entry.rpm,
                itpm: limits.itpm,
                otpm: limits.otpm,
                max_concurrency: limits.max_concurrency,
                limit_shape: limits.limit_shape,
                limit_window_ms: limits.limit_window_ms,
                native_tools: entry.native_tools.unwrap_or(true),
                thinking: entry.thinking.unwrap_or(false),
                output_ceiling: entry.output_ceiling.unwrap_or(DEFAULT_OUTPUT_CEILING),
                profile,
                prompt_cache: limits.prompt_cache.unwrap_or(true),
                cache_min_tokens: limits.cache_min_tokens,
                cache_ttl_ms: limits.cache_ttl_ms,
                cache_reads_count: limits.cache_reads_count,
            });
        }
        config.validate()?;
        Ok(config)
    }

    /// Reads the served models from a catalog file (see [`Self::from_catalog_toml`]).
    pub fn from_catalog_file(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| SimError::ReadFile {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_catalog_toml(&text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fault::FaultKind;

    const CATALOG: &str = r#"
[providers.sim-openai]
dialect = "openai"
base_url = "{sim}/v1"
api_key_env = "THINKERS_SIM_KEY"

[[entries]]
id = "sim-small-a"
provider = "sim-openai"
model = "sim-small-a"
grade = "small"
context_window = 128000
output_ceiling = 8192
tpm = 400000
rpm = 1000
price_in = 0.15
price_out = 0.60
currency = "USD"
thinking = false
native_tools = true
reasoning_tokens = { immediate = 0, quick = 0, standard = 2048, thorough = 8192 }
compliance = { region = "eu", retention = "zero" }

[entries.sim]
latency_ms = [5, 30]
tool_rounds = 2
parallel_tool_calls = 3
rates = { wrong_shape = 0.05, overloaded = 0.01 }
quality = 0.8

[[entries]]
id = "sim-text"
provider = "sim-openai"
model = "sim-text"
grade = "small"
native_tools = false

[[entries]]
id = "sim-small-a-again"
provider = "sim-openai"
model = "sim-small-a"
grade = "medium"
tpm = 1
"#;

    #[test]
    fn reads_entries_and_profiles() {
        let config = SimConfig::from_catalog_toml(CATALOG).unwrap();
        assert_eq!(config.models.len(), 2);
        assert!(!config.accepts_any_model());
        let a = &config.models[0];
        assert_eq!(a.name, "sim-small-a");
        assert_eq!(
            (a.tpm, a.rpm, a.output_ceiling),
            (Some(400_000), Some(1000), 8192)
        );
        let profile = a.profile.as_ref().unwrap();
        assert_eq!(profile.latency_ms, [5, 30]);
        assert_eq!(profile.tool_rounds, 2);
        assert_eq!(profile.parallel_tool_calls, 3);
        assert_eq!(profile.rates[&FaultKind::Overloaded529], 0.01);
        assert_eq!(profile.quality, 0.8);
        let text = &config.models[1];
        assert!(!text.native_tools);
        assert_eq!(text.tpm, None);
        assert!(text.profile.is_none());
    }

    #[test]
    fn rejects_bad_toml_and_bad_profiles() {
        assert!(matches!(
            SimConfig::from_catalog_toml("entries = 3"),
            Err(SimError::Toml { .. })
        ));
        let bad = "[[entries]]\nmodel = \"m\"\n[entries.sim]\nquality = 3.0\n";
        assert!(matches!(
            SimConfig::from_catalog_toml(bad),
            Err(SimError::InvalidConfig(_))
        ));
    }

    #[test]
    fn reads_the_sim_only_limits_from_the_sim_table() {
        let text = r#"
[[entries]]
model = "limited"
tpm = 90000
rpm = 50

[entries.sim]
itpm = 40000
otpm = 8000
max_concurrency = 3
limit_shape = "fixed"
limit_window_ms = 10000
latency_ms = [1, 2]

[[entries]]
model = "bucket"
tpm = 60000

[entries.sim]
limit_shape = "token_bucket"
"#;
        let config = SimConfig::from_catalog_toml(text).unwrap();
        let m = &config.models[0];
        assert_eq!(
            (m.tpm, m.rpm, m.itpm, m.otpm),
            (Some(90_000), Some(50), Some(40_000), Some(8_000))
        );
        assert_eq!(m.max_concurrency, Some(3));
        assert_eq!(m.limit_shape, LimitShape::Fixed);
        assert_eq!(m.limit_window_ms, Some(10_000));
        assert_eq!(m.profile.as_ref().unwrap().latency_ms, [1, 2]);
        let b = &config.models[1];
        assert_eq!(b.limit_shape, LimitShape::TokenBucket);
        assert!(
            b.profile.is_none(),
            "a table of limits only sets no profile"
        );

        let bad = "[[entries]]\nmodel = \"m\"\n[entries.sim]\nlimit_shape = \"leaky\"\n";
        let err = SimConfig::from_catalog_toml(bad).unwrap_err();
        assert!(matches!(err, SimError::Toml { .. }), "{err:?}");
        let source = std::error::Error::source(&err).unwrap().to_string();
        assert!(source.contains("unknown limit_shape `leaky`"), "{source}");
        let zero = "[[entries]]\nmodel = \"m\"\n[entries.sim]\nmax_concurrency = 0\n";
        assert!(matches!(
            SimConfig::from_catalog_toml(zero),
            Err(SimError::InvalidLimit {
                field: "max_concurrency",
                ..
            })
        ));
    }
}

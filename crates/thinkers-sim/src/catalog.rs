//! Reading the models to serve from a catalog file (the runtime's TOML catalog format).
//!
//! Only what the sim needs is read from each `[[entries]]` table: `model`, `tpm`, `rpm`,
//! `native_tools`, `thinking`, `output_ceiling` and the optional `[entries.sim]` behaviour profile.
//! Everything else (providers, prices, grades, compliance tags…) is ignored. When several entries
//! name the same model, the first one wins.

use std::path::Path;

use serde::Deserialize;

use crate::config::{DEFAULT_OUTPUT_CEILING, Profile, SimConfig, SimModel};
use crate::error::{Result, SimError};

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
    sim: Option<Profile>,
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
            config.models.push(SimModel {
                name: entry.model,
                tpm: entry.tpm,
                rpm: entry.rpm,
                limit_window_ms: None,
                native_tools: entry.native_tools.unwrap_or(true),
                thinking: entry.thinking.unwrap_or(false),
                output_ceiling: entry.output_ceiling.unwrap_or(DEFAULT_OUTPUT_CEILING),
                profile: entry.sim,
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
}

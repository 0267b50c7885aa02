//! Configuration of a simulated provider: the models it serves, their limits and behaviour
//! profiles, the seed that makes it deterministic, an optional script.
//!
//! Build one in code with [`SimConfig::builder`], read it from a catalog with
//! [`SimConfig::from_catalog_toml`] / [`SimConfig::from_catalog_file`], or deserialize it (serde).

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use crate::error::{Result, SimError};
use crate::fault::FaultRates;
use crate::script::Script;

/// How long a `hang` fault keeps a request open when the configuration does not say otherwise.
pub const DEFAULT_HANG_MS: u64 = 300_000;

/// The output ceiling of a model whose configuration does not name one.
pub const DEFAULT_OUTPUT_CEILING: u32 = 16_384;

/// How a model behaves: latency, tool rounds, random fault rates, answer quality.
///
/// It mirrors the `[entries.sim]` table of the catalog format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Profile {
    /// Latency of each request in milliseconds, uniform in `[min, max]`, deterministic by seed.
    pub latency_ms: [u64; 2],
    /// Schema-driven mode: how many tool rounds happen before the final answer.
    pub tool_rounds: u32,
    /// How many tool calls a tool round makes (capped by the tools offered).
    pub parallel_tool_calls: u32,
    /// Random fault probabilities per kind (0..=1).
    pub rates: FaultRates,
    /// 0..=1: how often schema-driven answers use "good" values rather than weak ones.
    pub quality: f64,
    /// `false` plays a server that cannot stream an answer that may call a tool
    /// (llama-cpp-python's `chatml-function-calling` format): a streamed request that offers
    /// tools gets an event stream that ends without an event
    /// ([`crate::FaultKind::EmptyStream`]) unless another fault was asked for. Default `true`.
    pub streams_tools: bool,
}

impl Default for Profile {
    fn default() -> Self {
        Self {
            latency_ms: [0, 0],
            tool_rounds: 1,
            parallel_tool_calls: 1,
            rates: FaultRates::new(),
            quality: 1.0,
            streams_tools: true,
        }
    }
}

impl Profile {
    fn validate(&self, owner: &str) -> Result<()> {
        let [min, max] = self.latency_ms;
        if min > max {
            return Err(SimError::InvalidConfig(format!(
                "{owner}: latency_ms [{min}, {max}] has min above max"
            )));
        }
        if !(0.0..=1.0).contains(&self.quality) {
            return Err(SimError::InvalidConfig(format!(
                "{owner}: quality {} is outside 0..=1",
                self.quality
            )));
        }
        if let Some((kind, rate)) = self.rates.iter().find(|(_, r)| !(0.0..=1.0).contains(*r)) {
            return Err(SimError::InvalidConfig(format!(
                "{owner}: fault rate {rate} for {kind} is outside 0..=1"
            )));
        }
        Ok(())
    }
}

/// One model the sim serves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimModel {
    /// The model name clients send on the wire.
    pub name: String,
    /// Tokens per minute (sliding 60 s window, the sim's own count); `None` is unlimited.
    #[serde(default)]
    pub tpm: Option<u64>,
    /// Requests per minute (sliding 60 s window); `None` is unlimited.
    #[serde(default)]
    pub rpm: Option<u64>,
    /// Enforce `tpm` and `rpm` pro rata over a shorter sliding window, in milliseconds (for
    /// example 10,000: `tpm = 150000` admits 25,000 tokens in any 10 s), as providers enforce
    /// per-minute limits over shorter periods; `None` (or more than 60 s) is the minute.
    #[serde(default)]
    pub limit_window_ms: Option<u64>,
    /// Whether the model accepts the native `tools` parameter; `false` means text-tool mode only.
    #[serde(default = "yes")]
    pub native_tools: bool,
    /// Whether the model supports thinking (Anthropic thinking blocks, OpenAI reasoning effort).
    #[serde(default)]
    pub thinking: bool,
    /// The most output tokens the model emits in one answer.
    #[serde(default = "default_ceiling")]
    pub output_ceiling: u32,
    /// The behaviour profile; `None` uses the configuration's default profile.
    #[serde(default)]
    pub profile: Option<Profile>,
}

fn yes() -> bool {
    true
}

fn default_ceiling() -> u32 {
    DEFAULT_OUTPUT_CEILING
}

impl SimModel {
    /// A model with native tools, no thinking, no limits and the default profile.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            tpm: None,
            rpm: None,
            limit_window_ms: None,
            native_tools: true,
            thinking: false,
            output_ceiling: DEFAULT_OUTPUT_CEILING,
            profile: None,
        }
    }

    /// Sets the tokens-per-minute limit.
    #[must_use]
    pub fn tpm(mut self, tpm: u64) -> Self {
        self.tpm = Some(tpm);
        self
    }

    /// Sets the requests-per-minute limit.
    #[must_use]
    pub fn rpm(mut self, rpm: u64) -> Self {
        self.rpm = Some(rpm);
        self
    }

    /// Enforces the limits pro rata over a sliding `window` shorter than a minute.
    #[must_use]
    pub fn limit_window(mut self, window: std::time::Duration) -> Self {
        self.limit_window_ms = Some(u64::try_from(window.as_millis()).unwrap_or(u64::MAX));
        self
    }

    /// Sets whether the model supports native tools.
    #[must_use]
    pub fn native_tools(mut self, native: bool) -> Self {
        self.native_tools = native;
        self
    }

    /// Sets whether the model supports thinking.
    #[must_use]
    pub fn thinking(mut self, thinking: bool) -> Self {
        self.thinking = thinking;
        self
    }

    /// Sets the output ceiling.
    #[must_use]
    pub fn output_ceiling(mut self, tokens: u32) -> Self {
        self.output_ceiling = tokens;
        self
    }

    /// Sets the behaviour profile.
    #[must_use]
    pub fn profile(mut self, profile: Profile) -> Self {
        self.profile = Some(profile);
        self
    }
}

/// The whole configuration of a simulated provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SimConfig {
    /// The models served. A request naming another model gets the provider's 404, unless
    /// unknown models are accepted (see `accept_any_model`).
    pub models: Vec<SimModel>,
    /// Serve unknown model names with the default profile and no limits. `None` (the default)
    /// accepts them only when `models` is empty, so `SimConfig::default()` answers whatever model a
    /// test names while a configuration that lists models answers 404 for the others.
    pub accept_any_model: Option<bool>,
    /// The seed: answers are a function of (seed, request); latency and random faults of
    /// (seed, model, request ordinal).
    pub seed: u64,
    /// Scripted answers, tried before the schema-driven mode.
    pub script: Option<Script>,
    /// The profile of models that name none.
    pub default_profile: Option<Profile>,
    /// Keep every request body for `GET /sim/requests` / [`crate::Sim::requests`].
    pub log_bodies: bool,
    /// The port to bind on 127.0.0.1; `None` picks a free one.
    pub port: Option<u16>,
    /// How long a `hang` fault keeps the request open, in milliseconds.
    pub hang_ms: u64,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            models: Vec::new(),
            accept_any_model: None,
            seed: 0,
            script: None,
            default_profile: None,
            log_bodies: false,
            port: None,
            hang_ms: DEFAULT_HANG_MS,
        }
    }
}

impl SimConfig {
    /// The same configuration with every random fault rate set to zero and no latency: answers
    /// stay deterministic and schema-driven, and faults happen only when injected. Tests that
    /// assert exact behaviour start from this.
    #[must_use]
    pub fn calm(mut self) -> Self {
        for m in &mut self.models {
            if let Some(p) = &mut m.profile {
                p.rates = FaultRates::default();
                p.latency_ms = [0, 0];
            }
        }
        if let Some(p) = &mut self.default_profile {
            p.rates = FaultRates::default();
            p.latency_ms = [0, 0];
        }
        self
    }

    /// Whether a request naming a model that is not listed is served (see `accept_any_model`).
    pub fn accepts_any_model(&self) -> bool {
        self.accept_any_model.unwrap_or(self.models.is_empty())
    }

    /// Starts a builder from the default configuration.
    pub fn builder() -> SimConfigBuilder {
        SimConfigBuilder {
            config: Self::default(),
        }
    }

    /// Checks the rules serde cannot express: unique model names, ranges of latency, quality and
    /// fault rates.
    pub fn validate(&self) -> Result<()> {
        let mut seen = HashSet::new();
        for model in &self.models {
            if model.name.is_empty() {
                return Err(SimError::InvalidConfig("a model has an empty name".into()));
            }
            if !seen.insert(model.name.as_str()) {
                return Err(SimError::InvalidConfig(format!(
                    "model `{}` is listed twice",
                    model.name
                )));
            }
            if let Some(profile) = &model.profile {
                profile.validate(&format!("model `{}`", model.name))?;
            }
        }
        if let Some(profile) = &self.default_profile {
            profile.validate("default profile")?;
        }
        Ok(())
    }
}

/// Builds a [`SimConfig`] step by step; [`SimConfigBuilder::build`] validates it.
#[derive(Debug, Clone)]
pub struct SimConfigBuilder {
    config: SimConfig,
}

impl SimConfigBuilder {
    /// Adds a served model.
    #[must_use]
    pub fn model(mut self, model: SimModel) -> Self {
        self.config.models.push(model);
        self
    }

    /// Serves unknown model names with the default profile instead of answering 404.
    #[must_use]
    pub fn accept_any_model(mut self, accept: bool) -> Self {
        self.config.accept_any_model = Some(accept);
        self
    }

    /// Sets the seed.
    #[must_use]
    pub fn seed(mut self, seed: u64) -> Self {
        self.config.seed = seed;
        self
    }

    /// Sets the script.
    #[must_use]
    pub fn script(mut self, script: Script) -> Self {
        self.config.script = Some(script);
        self
    }

    /// Sets the profile of models that name none.
    #[must_use]
    pub fn default_profile(mut self, profile: Profile) -> Self {
        self.config.default_profile = Some(profile);
        self
    }

    /// Keeps request bodies for inspection.
    #[must_use]
    pub fn log_bodies(mut self, log: bool) -> Self {
        self.config.log_bodies = log;
        self
    }

    /// Binds a fixed port on 127.0.0.1.
    #[must_use]
    pub fn port(mut self, port: u16) -> Self {
        self.config.port = Some(port);
        self
    }

    /// Sets how long a `hang` fault keeps a request open.
    #[must_use]
    pub fn hang_ms(mut self, ms: u64) -> Self {
        self.config.hang_ms = ms;
        self
    }

    /// Validates and returns the configuration.
    pub fn build(self) -> Result<SimConfig> {
        self.config.validate()?;
        Ok(self.config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builder_validates_ranges_and_duplicates() {
        let bad = Profile {
            latency_ms: [10, 5],
            ..Profile::default()
        };
        assert!(
            SimConfig::builder()
                .model(SimModel::new("a").profile(bad))
                .build()
                .is_err()
        );
        assert!(
            SimConfig::builder()
                .model(SimModel::new("a"))
                .model(SimModel::new("a"))
                .build()
                .is_err()
        );
        let ok = SimConfig::builder()
            .model(SimModel::new("a").tpm(10))
            .seed(3)
            .build()
            .unwrap();
        assert!(!ok.accepts_any_model());
        assert!(SimConfig::default().accepts_any_model());
        assert_eq!(ok.models[0].tpm, Some(10));
    }

    #[test]
    fn config_deserializes_from_json_with_defaults() {
        let cfg: SimConfig =
            serde_json::from_str(r#"{"models":[{"name":"m","profile":{"tool_rounds":2}}]}"#)
                .unwrap();
        let model = &cfg.models[0];
        assert!(model.native_tools);
        assert_eq!(model.output_ceiling, DEFAULT_OUTPUT_CEILING);
        let profile = model.profile.as_ref().unwrap();
        assert_eq!(profile.tool_rounds, 2);
        assert_eq!(profile.parallel_tool_calls, 1);
        assert_eq!(cfg.hang_ms, DEFAULT_HANG_MS);
    }
}

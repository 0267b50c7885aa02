//! Configuration of a simulated provider: the models it serves, their limits and behaviour
//! profiles, the seed that makes it deterministic, an optional script.
//!
//! Build one in code with [`SimConfig::builder`], read it from a catalog with
//! [`SimConfig::from_catalog_toml`] / [`SimConfig::from_catalog_file`], or deserialize it (serde).

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use crate::error::{Result, SimError};
use crate::fault::FaultRates;
use crate::limits::{LimitShape, WINDOW};
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
    /// The `response_format` types (`json_schema`, `json_object`) the server refuses, as
    /// llama-cpp-python's server refuses `json_schema` (it knows only `text` and `json_object`):
    /// a Chat Completions request asking for one gets HTTP 500 whose `internal_server_error`
    /// body is the validation error naming `response_format`. Empty by default.
    pub refused_formats: Vec<String>,
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
            refused_formats: Vec::new(),
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
        if let Some(format) = self
            .refused_formats
            .iter()
            .find(|f| !["json_schema", "json_object"].contains(&f.as_str()))
        {
            return Err(SimError::InvalidConfig(format!(
                "{owner}: refused_formats names `{format}`; a server may refuse `json_schema` \
                 or `json_object`"
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
    /// Tokens per minute, input + output (the sim's own count); `None` is unlimited.
    #[serde(default)]
    pub tpm: Option<u64>,
    /// Requests per minute; `None` is unlimited.
    #[serde(default)]
    pub rpm: Option<u64>,
    /// Input tokens per minute, enforced on their own (Anthropic's and Bedrock's ITPM); `None` is
    /// unlimited.
    #[serde(default)]
    pub itpm: Option<u64>,
    /// Output tokens per minute, enforced on their own (Anthropic's and Bedrock's OTPM): charged
    /// the output asked for at admission, settled to the output produced; `None` is unlimited.
    #[serde(default)]
    pub otpm: Option<u64>,
    /// The most requests in flight at once (from admission until the answer is sent); the next
    /// one is refused with a 429. `None` is unlimited.
    #[serde(default)]
    pub max_concurrency: Option<u64>,
    /// How the per-minute figures are enforced: `sliding` (the default), `fixed` or
    /// `token_bucket` (see [`crate::limits`]).
    #[serde(default)]
    pub limit_shape: LimitShape,
    /// The window the per-minute figures are enforced over, pro rata, in milliseconds (for
    /// example 10,000: `tpm = 150000` admits 25,000 tokens in any 10 s, sliding, or per fixed
    /// 10 s window), as providers enforce per-minute limits over shorter periods; for a
    /// `token_bucket`, the capacity is the figure's share of this window. `None` (or more than
    /// 60 s) is the minute; 0 is refused.
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
    /// Prompt caching as the providers do it (see [`crate::cache`]): explicit breakpoints on
    /// Anthropic and Bedrock, automatic prefixes on OpenAI and Gemini. Default `true`; `false`
    /// reports no cache use (breakpoints are still checked).
    #[serde(default = "yes")]
    pub prompt_cache: bool,
    /// The shortest cacheable prefix, in tokens (the sim's estimate): 1024 unless set (Anthropic
    /// documents 2048 or 4096 for some models, Gemini 4096 for Pro ones).
    #[serde(default)]
    pub cache_min_tokens: Option<u64>,
    /// How long an automatic (OpenAI, Gemini) cache entry lives after its last use, in
    /// milliseconds: 300,000 (5 minutes) unless set. Anthropic's and Bedrock's breakpoints say
    /// their own (`"5m"` or `"1h"`).
    #[serde(default)]
    pub cache_ttl_ms: Option<u64>,
    /// Whether tokens read from the cache are charged to `itpm` and `tpm`. Unset: not on
    /// Anthropic's Messages API (cache reads do not count toward its ITPM on current models),
    /// charged on the other dialects.
    #[serde(default)]
    pub cache_reads_count: Option<bool>,
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
            itpm: None,
            otpm: None,
            max_concurrency: None,
            limit_shape: LimitShape::Sliding,
            limit_window_ms: None,
            native_tools: true,
            thinking: false,
            output_ceiling: DEFAULT_OUTPUT_CEILING,
            profile: None,
            prompt_cache: true,
            cache_min_tokens: None,
            cache_ttl_ms: None,
            cache_reads_count: None,
        }
    }

    /// Turns prompt caching on (the default) or off.
    #[must_use]
    pub fn prompt_cache(mut self, on: bool) -> Self {
        self.prompt_cache = on;
        self
    }

    /// Sets the shortest cacheable prefix, in tokens.
    #[must_use]
    pub fn cache_min_tokens(mut self, tokens: u64) -> Self {
        self.cache_min_tokens = Some(tokens);
        self
    }

    /// Sets how long an automatic (OpenAI, Gemini) cache entry lives after its last use.
    #[must_use]
    pub fn cache_ttl(mut self, ttl: std::time::Duration) -> Self {
        self.cache_ttl_ms = Some(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX));
        self
    }

    /// Sets whether cache reads are charged to `itpm` and `tpm` (unset: not on Anthropic, yes
    /// elsewhere).
    #[must_use]
    pub fn cache_reads_count(mut self, count: bool) -> Self {
        self.cache_reads_count = Some(count);
        self
    }

    /// The cache settings in force: the configured ones or their defaults.
    pub(crate) fn cache_settings(&self) -> crate::cache::Settings {
        crate::cache::Settings {
            enabled: self.prompt_cache,
            min_tokens: self
                .cache_min_tokens
                .unwrap_or(crate::cache::DEFAULT_MIN_TOKENS),
            ttl: self
                .cache_ttl_ms
                .map_or(crate::cache::DEFAULT_TTL, std::time::Duration::from_millis),
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

    /// Sets the input-tokens-per-minute limit (enforced apart from `tpm`).
    #[must_use]
    pub fn itpm(mut self, itpm: u64) -> Self {
        self.itpm = Some(itpm);
        self
    }

    /// Sets the output-tokens-per-minute limit (enforced apart from `tpm`).
    #[must_use]
    pub fn otpm(mut self, otpm: u64) -> Self {
        self.otpm = Some(otpm);
        self
    }

    /// Sets the most requests in flight at once.
    #[must_use]
    pub fn max_concurrency(mut self, max: u64) -> Self {
        self.max_concurrency = Some(max);
        self
    }

    /// Sets how the per-minute figures are enforced (sliding by default).
    #[must_use]
    pub fn limit_shape(mut self, shape: LimitShape) -> Self {
        self.limit_shape = shape;
        self
    }

    /// Enforces the limits pro rata over a `window` shorter than a minute (sliding unless
    /// [`Self::limit_shape`] says otherwise).
    #[must_use]
    pub fn limit_window(mut self, window: std::time::Duration) -> Self {
        self.limit_window_ms = Some(u64::try_from(window.as_millis()).unwrap_or(u64::MAX));
        self
    }

    /// The window the per-minute figures are enforced over: `limit_window_ms`, at most a minute.
    pub fn limit_window_duration(&self) -> std::time::Duration {
        self.limit_window_ms
            .map_or(WINDOW, std::time::Duration::from_millis)
            .min(WINDOW)
    }

    /// Checks the limit fields: no figure and no window of zero.
    fn validate_limits(&self) -> Result<()> {
        let bad = |field: &'static str, value: u64, reason: &'static str| SimError::InvalidLimit {
            model: self.name.clone(),
            field,
            value: value.to_string(),
            reason,
        };
        let figures = [
            ("rpm", self.rpm),
            ("tpm", self.tpm),
            ("itpm", self.itpm),
            ("otpm", self.otpm),
            ("max_concurrency", self.max_concurrency),
        ];
        for (field, value) in figures {
            if value == Some(0) {
                return Err(bad(
                    field,
                    0,
                    "it would refuse every request; leave the field out for no limit",
                ));
            }
        }
        if self.limit_window_ms == Some(0) {
            return Err(bad(
                "limit_window_ms",
                0,
                "a window must last at least 1 ms",
            ));
        }
        if self.cache_ttl_ms == Some(0) {
            return Err(bad(
                "cache_ttl_ms",
                0,
                "a cache entry must live at least 1 ms; set prompt_cache = false for no cache",
            ));
        }
        Ok(())
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

    /// Checks the rules serde cannot express: unique model names, limits and windows above zero,
    /// ranges of latency, quality and fault rates.
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
            model.validate_limits()?;
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
mod tests;

//! [`PromptCache`]: whether an entry asks its provider to cache prompt prefixes, and for how
//! long (`prompt_cache` and `cache_ttl` in catalogs).

use serde::Serialize;
use toml::Spanned;

use super::error::{CatalogError, Problem};
use super::fields::Place;
use super::file::Text;
use super::provider::Dialect;

/// How long Anthropic keeps a cached prefix (`cache_ttl`: `"5m"`, the default, or `"1h"`). A
/// write costs 1.25x the input price for five minutes and 2x for an hour, unless the entry gives
/// `price_cache_write`; a read costs `price_cached`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
pub enum CacheTtl {
    /// Five minutes, refreshed by each hit (`"5m"`).
    #[default]
    #[serde(rename = "5m")]
    FiveMinutes,
    /// One hour (`"1h"`).
    #[serde(rename = "1h")]
    OneHour,
}

impl CacheTtl {
    /// The names catalogs use.
    pub(crate) const NAMES: [&'static str; 2] = ["5m", "1h"];

    /// The name catalogs and the wire use.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::FiveMinutes => "5m",
            Self::OneHour => "1h",
        }
    }

    /// How long a cached prefix lasts after its last use.
    pub(crate) fn duration(self) -> std::time::Duration {
        match self {
            Self::FiveMinutes => std::time::Duration::from_secs(300),
            Self::OneHour => std::time::Duration::from_secs(3600),
        }
    }

    /// The TTL of a catalog name.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "5m" => Some(Self::FiveMinutes),
            "1h" => Some(Self::OneHour),
            _ => None,
        }
    }

    /// What a cache write costs, as a multiple of the input price, when the catalog gives no
    /// `price_cache_write` for an Anthropic entry (as Anthropic prices them).
    pub(crate) fn write_multiplier(self) -> f64 {
        match self {
            Self::FiveMinutes => 1.25,
            Self::OneHour => 2.0,
        }
    }
}

/// Whether requests ask the provider to cache their prefix (on by default; `prompt_cache =
/// false` on a provider or an entry turns it off, the entry's setting winning).
///
/// What "asking" means depends on the dialect: Anthropic gets `cache_control` breakpoints,
/// Bedrock Converse `cachePoint` blocks (Claude and Nova models), OpenAI Chat and Responses a
/// `prompt_cache_key` per system content and tools; Gemini and OpenAI-compatible servers get
/// nothing (their caching, if any, is implicit). Cache reads and writes are recorded whatever this says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PromptCache {
    /// Nothing is asked.
    Off,
    /// Cache, for this long where the provider takes a TTL (Anthropic).
    On(CacheTtl),
}

impl Default for PromptCache {
    fn default() -> Self {
        Self::On(CacheTtl::default())
    }
}

impl PromptCache {
    /// Whether caching is asked for.
    pub(crate) fn is_on(self) -> bool {
        matches!(self, Self::On(_))
    }
}

/// Which Bedrock models take `cachePoint` blocks, by a simple rule on the model id (an inference
/// profile's region prefix such as `us.` or `global.` included): an id holding `anthropic.claude`
/// is a Claude model (checkpoints after `system`, `toolConfig.tools` and in `messages`), one
/// holding `amazon.nova` a Nova model (`system` and `messages`; Nova takes none in its tools).
/// Any other id (an ARN, a model Bedrock does not cache) gets no checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BedrockCaching {
    /// No checkpoints.
    None,
    /// Claude: system, tools and messages.
    Claude,
    /// Nova: system and messages.
    Nova,
}

impl BedrockCaching {
    /// The rule for `model`.
    pub(crate) fn of(model: &str) -> Self {
        let model = model.to_ascii_lowercase();
        if model.contains("anthropic.claude") {
            Self::Claude
        } else if model.contains("amazon.nova") {
            Self::Nova
        } else {
            Self::None
        }
    }
}

/// `prompt_cache` (the entry's, else its provider's, else on) and `cache_ttl` (Anthropic
/// entries only: `"5m"` by default, or `"1h"`).
pub(super) fn read_prompt_cache(
    f: &Place<'_>,
    prompt_cache: Option<bool>,
    cache_ttl: Option<&Spanned<Text>>,
    dialect: Dialect,
    provider_caches: bool,
) -> Result<PromptCache, CatalogError> {
    let on = prompt_cache.unwrap_or(provider_caches);
    let ttl = match cache_ttl {
        None => CacheTtl::default(),
        Some(name) if dialect != Dialect::Anthropic => {
            return Err(f.bad(
                "cache_ttl",
                name,
                Problem::Conflict,
                format!(
                    "a cache TTL is read only for the `anthropic` dialect, not `{dialect}` \
                     (the others cache for as long as the provider decides)"
                ),
            ));
        }
        Some(name) => CacheTtl::from_name(name.get_ref().as_str()).ok_or_else(|| {
            f.bad(
                "cache_ttl",
                name,
                Problem::BadValue,
                format!(
                    "unknown cache TTL; use one of: {}",
                    CacheTtl::NAMES.join(", ")
                ),
            )
        })?,
    };
    if let Some(name) = cache_ttl
        && !on
    {
        return Err(f.bad(
            "cache_ttl",
            name,
            Problem::Conflict,
            "cache_ttl has no effect with prompt_cache = false; remove one of them",
        ));
    }
    Ok(if on {
        PromptCache::On(ttl)
    } else {
        PromptCache::Off
    })
}

//! [`Entry`]: one callable model as the catalog describes it, and what it translates seat words
//! (depth, output size) into.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;

use super::PromptCache;
use crate::dispatch::{Limits, Rate};
use crate::model::Tokenizer;
use crate::model::{Depth, Grade, OutputSize};

/// Prices of one entry, per million tokens, in `currency`. An entry whose catalog gives no
/// prices has none ([`Entry::pricing`] is `None`): what its calls cost is unknown, and every
/// report says so instead of counting them as free.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pricing {
    /// Per million uncached input tokens.
    pub input: f64,
    /// Per million output tokens (reasoning tokens are billed as output).
    pub output: f64,
    /// Per million input tokens read from the provider's prompt cache (`price_cached`; the input
    /// price when the catalog gives none).
    pub cached: f64,
    /// Per million input tokens written to the provider's prompt cache (`price_cache_write`).
    /// When the catalog gives none: for an Anthropic entry 1.25x the input price with the
    /// five-minute TTL and 2x with the hour (`CacheTtl::write_multiplier`), as Anthropic
    /// prices writes; for the other dialects the input price (OpenAI, Gemini and Bedrock's
    /// non-Anthropic models charge nothing extra to write).
    pub cache_write: f64,
    /// ISO 4217 code, three upper-case letters, for example `USD`.
    pub currency: Arc<str>,
}

impl Pricing {
    /// The cost of one call in [`Pricing::currency`]. The input tokens are taken apart: `input`
    /// counts the uncached ones only, `cache_read` those read from the provider's prompt cache,
    /// `cache_write` those written to it (the three add up to the call's whole input); `output`
    /// counts every emitted token, reasoning included.
    pub fn cost(&self, input: u64, cache_read: u64, cache_write: u64, output: u64) -> f64 {
        (input as f64 * self.input
            + cache_read as f64 * self.cached
            + cache_write as f64 * self.cache_write
            + output as f64 * self.output)
            / 1_000_000.0
    }
}

/// The reasoning tokens a call reserves (and may spend beyond its answer budget) for a
/// provider effort name, for entries that map depth to effort names
/// ([`Reasoning::Effort`]) and give no reservation of their own (`reasoning_tokens` beside
/// `reasoning_effort`, [`Entry::reasoning_tokens`]). A provider says how hard to think with such
/// a name but sets no number, so the framework assumes one: the figures follow the thresholds
/// the OpenAI dialect uses the other way round (a token budget of at most 2,048 is sent as `low`,
/// at most 8,192 as `medium`, more as `high`). Names are matched without regard to ASCII case.
pub const EFFORT_TOKENS: [(&str, u32); 7] = [
    ("none", 0),
    ("minimal", 1_024),
    ("low", 2_048),
    ("medium", 8_192),
    ("high", 16_384),
    ("xhigh", 32_768),
    ("max", 32_768),
];

/// The reasoning tokens assumed for an effort name [`EFFORT_TOKENS`] does not list, by the depth
/// it was named for: the figure of the name that depth usually maps to (`minimal`, `low`,
/// `medium`, `high`).
pub fn effort_tokens(name: &str, depth: Depth) -> u32 {
    let name = name.trim();
    EFFORT_TOKENS
        .iter()
        .find(|(known, _)| known.eq_ignore_ascii_case(name))
        .map_or_else(
            || match depth {
                Depth::Immediate => 1_024,
                Depth::Quick => 2_048,
                Depth::Standard => 8_192,
                Depth::Thorough => 16_384,
            },
            |(_, tokens)| *tokens,
        )
}

/// How an entry turns a [`Depth`] into reasoning.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reasoning {
    /// The model does no separate reasoning.
    None,
    /// A reasoning-token budget per depth; a depth the catalog leaves out gets none.
    Tokens(BTreeMap<Depth, u32>),
    /// A provider effort name per depth (for example `low`/`medium`/`high`); a depth the catalog
    /// leaves out sends no effort parameter.
    Effort(BTreeMap<Depth, String>),
}

/// One model as the catalog lists it: where it is served, its rung, its limits and prices, and
/// how it translates a seat's depth and output size into numbers.
///
/// Entries are built only by the catalog loader, which validates them, so the invariants below
/// hold for every entry a program sees: the id is non-empty and unique in its catalog, the
/// provider exists, the grade is a rung, the context window is positive and at least the output
/// ceiling, prices (when given) are finite and non-negative with a currency, and limits are
/// positive when present.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Entry {
    // The id, budget name and model are shared (`Arc<str>`) with every seat and outcome made for
    // the entry, so a model call does not copy them.
    pub(super) id: Arc<str>,
    /// The name of its admission budget ([`crate::job::Seat::budget_for`] of the id), made once.
    pub(super) budget: Arc<str>,
    pub(super) provider: String,
    pub(super) model: Arc<str>,
    pub(super) grade: Grade,
    pub(super) context_window: u32,
    pub(super) output_ceiling: u32,
    pub(super) tpm: Option<u64>,
    /// Input tokens per minute, where the provider limits them apart (`itpm`).
    pub(super) itpm: Option<u64>,
    /// Output tokens per minute, where the provider limits them apart (`otpm`).
    pub(super) otpm: Option<u64>,
    pub(super) rpm: Option<u64>,
    /// The burst the provider accepts, as a stretch of `tpm`/`rpm` (`burst_seconds`).
    pub(super) burst: Option<std::time::Duration>,
    pub(super) concurrency: Option<u32>,
    /// `None` when the catalog gives no prices: the cost of its calls is unknown.
    pub(super) pricing: Option<Pricing>,
    pub(super) reasoning: Reasoning,
    /// What each depth's effort name reserves, where the entry says (`reasoning_tokens` beside
    /// `reasoning_effort`); a depth it leaves out reserves what [`effort_tokens`] assumes.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub(super) effort_tokens: BTreeMap<Depth, u32>,
    pub(super) thinking: bool,
    pub(super) native_tools: bool,
    pub(super) open: bool,
    pub(super) compliance: BTreeMap<String, String>,
    /// Overrides of the named rungs, indexed like [`OutputSize::RUNGS`].
    pub(super) output_budgets: [Option<u32>; 4],
    /// How its requests are counted for admission (`tokenizer`).
    pub(super) tokenizer: Tokenizer,
    /// Whether its requests ask the provider to cache their prefix (`prompt_cache`, `cache_ttl`).
    pub(super) prompt_cache: PromptCache,
    /// Whether the provider counts cache reads toward its input limits (`cache_reads_count`).
    pub(super) cache_reads_count: bool,
}

impl Entry {
    /// The unique catalog id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The key of the [`super::Provider`] serving it.
    pub fn provider(&self) -> &str {
        &self.provider
    }

    /// The model name sent on the wire.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// Its rung of the ladder (never `Ceiling`).
    pub fn grade(&self) -> Grade {
        self.grade
    }

    /// The context window in tokens.
    pub fn context_window(&self) -> u32 {
        self.context_window
    }

    /// The most output tokens the model can emit in one call.
    pub fn output_ceiling(&self) -> u32 {
        self.output_ceiling
    }

    /// Tokens per minute the provider allows, if limited.
    pub fn tpm(&self) -> Option<u64> {
        self.tpm
    }

    /// Input tokens per minute the provider allows, where it limits them apart from output.
    pub fn itpm(&self) -> Option<u64> {
        self.itpm
    }

    /// Output tokens per minute the provider allows, where it limits them apart from input.
    pub fn otpm(&self) -> Option<u64> {
        self.otpm
    }

    /// Requests per minute the provider allows, if limited.
    pub fn rpm(&self) -> Option<u64> {
        self.rpm
    }

    /// The burst the provider accepts on `tpm` and `rpm`, as seconds' worth of each
    /// (`burst_seconds`); `None` for the conservative default (see [`crate::dispatch::bucket`]).
    pub fn burst(&self) -> Option<std::time::Duration> {
        self.burst
    }

    /// How its requests are counted for admission: the length estimate (the default) or an
    /// exact tokenizer (`tokenizer` in the catalog; see [`crate::llm::tokens`]).
    pub(crate) fn tokenizer(&self) -> Tokenizer {
        self.tokenizer
    }

    /// Calls in flight at once the provider allows, if limited.
    pub fn concurrency(&self) -> Option<u32> {
        self.concurrency
    }

    /// Its prices; `None` when the catalog gives none (the cost of its calls is unknown, never
    /// taken as zero; a free entry states prices of 0).
    pub fn pricing(&self) -> Option<&Pricing> {
        self.pricing.as_ref()
    }

    /// Whether the catalog gives its prices.
    pub fn priced(&self) -> bool {
        self.pricing.is_some()
    }

    /// The currency its calls cost in; `None` for an entry without prices.
    pub fn currency(&self) -> Option<&Arc<str>> {
        self.pricing.as_ref().map(|p| &p.currency)
    }

    /// How it turns depth into reasoning.
    pub(crate) fn reasoning(&self) -> &Reasoning {
        &self.reasoning
    }

    /// Whether it emits native thinking blocks.
    pub fn thinking(&self) -> bool {
        self.thinking
    }

    /// Whether it supports native tool calling; `false` means the text-tool protocol is used.
    pub fn native_tools(&self) -> bool {
        self.native_tools
    }

    /// Whether it is served (open) or only listed (closed, never callable).
    pub fn is_open(&self) -> bool {
        self.open
    }

    /// Its compliance tags, for example `region = "eu"`, checked by the
    /// [`crate::model::Envelope`].
    #[cfg(test)]
    pub(crate) fn compliance(&self) -> &BTreeMap<String, String> {
        &self.compliance
    }

    /// One compliance tag.
    pub(crate) fn tag(&self, name: &str) -> Option<&str> {
        self.compliance.get(name).map(String::as_str)
    }

    /// The entry's own budget for a named rung, when the catalog overrides it.
    pub(crate) fn output_budget(&self, size: OutputSize) -> Option<u32> {
        let index = OutputSize::RUNGS.iter().position(|r| *r == size)?;
        self.output_budgets.get(index).copied().flatten()
    }

    /// The output tokens a seat of `size` books on this entry: the entry's override of the rung
    /// or the framework value, capped at the output ceiling; `Max` is the ceiling; a raw count
    /// is capped at the ceiling too.
    pub fn output_tokens(&self, size: OutputSize) -> u32 {
        let wanted = match size {
            OutputSize::Max => self.output_ceiling,
            OutputSize::Tokens(n) => n,
            rung => self
                .output_budget(rung)
                .or(rung.rung_tokens())
                .unwrap_or(self.output_ceiling),
        };
        wanted.min(self.output_ceiling)
    }

    /// The reasoning tokens a call at `depth` reserves: the entry's token budget for it, or, for
    /// an entry that names an effort for it, the entry's own reservation for that depth
    /// (`reasoning_tokens` beside `reasoning_effort`), else the figure [`effort_tokens`] assumes
    /// for the name. 0 when the entry does no separate reasoning or names nothing for the depth.
    pub fn reasoning_tokens(&self, depth: Depth) -> u32 {
        match &self.reasoning {
            Reasoning::Tokens(map) => map.get(&depth).copied().unwrap_or(0),
            Reasoning::Effort(map) => map.get(&depth).map_or(0, |name| {
                self.effort_tokens
                    .get(&depth)
                    .copied()
                    .unwrap_or_else(|| effort_tokens(name, depth))
            }),
            Reasoning::None => 0,
        }
    }

    /// The provider effort name for `depth`, when the entry declares effort names.
    pub(crate) fn reasoning_effort(&self, depth: Depth) -> Option<&str> {
        match &self.reasoning {
            Reasoning::Effort(map) => map.get(&depth).map(String::as_str),
            Reasoning::None | Reasoning::Tokens(_) => None,
        }
    }

    /// The admission budget its calls reserve against (`model:<id>`).
    pub fn budget_name(&self) -> Arc<str> {
        Arc::clone(&self.budget)
    }

    /// The id, shared.
    pub(crate) fn shared_id(&self) -> Arc<str> {
        Arc::clone(&self.id)
    }

    /// The model name, shared.
    pub(crate) fn shared_model(&self) -> Arc<str> {
        Arc::clone(&self.model)
    }

    /// [`Self::budget_name`], borrowed.
    pub fn budget(&self) -> &str {
        &self.budget
    }

    /// Its admission limits: `tpm` as tokens per minute, `itpm`/`otpm` as input/output tokens
    /// per minute, `rpm` as requests per minute (each with the entry's burst), and
    /// `concurrency`; an absent limit is unlimited.
    pub fn limits(&self) -> Limits {
        let rate = |amount| Rate {
            burst: self.burst,
            ..Rate::per_minute(amount)
        };
        Limits {
            tokens: self.tpm.map(rate),
            input_tokens: self.itpm.map(rate),
            output_tokens: self.otpm.map(rate),
            requests: self.rpm.map(rate),
            concurrency: self.concurrency,
        }
    }

    /// The cost of one call in the entry's currency (see [`Pricing::cost`]: uncached input,
    /// cache reads, cache writes, output); `None` (unknown) for an entry without prices.
    pub fn cost(&self, input: u64, cache_read: u64, cache_write: u64, output: u64) -> Option<f64> {
        self.pricing
            .as_ref()
            .map(|p| p.cost(input, cache_read, cache_write, output))
    }

    /// The most a call of `input` counted tokens and an output budget of `output` can cost: the
    /// whole output budget, and the input at the input price or, where a cache write costs
    /// more, all of it written to the cache. `None` for an entry without prices.
    pub(crate) fn worst_cost(&self, input: u64, output: u64) -> Option<f64> {
        let p = self.pricing.as_ref()?;
        Some(p.cost(input, 0, 0, output).max(p.cost(0, 0, input, output)))
    }

    /// Whether its requests ask the provider to cache their prefix, and for how long.
    pub(crate) fn prompt_cache(&self) -> PromptCache {
        self.prompt_cache
    }

    /// Whether the provider counts cache reads toward its input-token limits (`tpm`, `itpm`):
    /// `cache_reads_count` in the catalog; by default not on the Anthropic dialect (Anthropic
    /// leaves them out of its input-tokens-per-minute limit for current models), yes elsewhere.
    /// When not, a call's input settles on the budget without its cache reads.
    pub(crate) fn cache_reads_count(&self) -> bool {
        self.cache_reads_count
    }

    /// Input plus output price per million tokens: the picker's cost tie-break; `None` for an
    /// entry without prices.
    pub(crate) fn list_price(&self) -> Option<f64> {
        self.pricing.as_ref().map(|p| p.input + p.output)
    }
}

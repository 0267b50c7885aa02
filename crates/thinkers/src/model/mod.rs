//! Models: the words a seat speaks and the catalog that turns them into a callable entry.
//!
//! A seat never names a model. It declares a [`Grade`] (how capable), a [`Depth`] (how much
//! effort) and an [`OutputSize`] (how much answer); the [`Catalog`] entry that serves the call
//! translates depth into reasoning tokens or an effort level and the output size into a token
//! budget capped at the entry's ceiling.
//!
//! Choosing the entry is the [`ModelRouter`]'s job:
//!
//! 1. [`Grade::Ceiling`] is resolved to the strongest rung the deployment serves
//!    ([`resolve_ceiling`]: the highest rung with an open entry inside the envelope);
//! 2. a pin names its entry directly, bypassing the picker but never the compliance
//!    [`Envelope`];
//! 3. otherwise the [`Picker`] (by default [`HeadroomPicker`]: most admission headroom, then
//!    cheapest) chooses among the open entries of the rung inside the envelope.
//!
//! Jobs that take a seat implement [`ModelDependent`].
//!
//! `Depth` and `OutputSize` both have a `Standard` variant. Never import either enum's variants
//! by name: write `Depth::Standard` and `OutputSize::Standard` so each site says which it means.

pub mod catalog;
mod dependent;
mod envelope;
mod picker;
mod router;
mod thinker_depth;

pub use crate::seat::{Depth, Grade, OutputSize, ParseNameError};
pub use catalog::Auth;
pub use catalog::AzureApi;
pub(crate) use catalog::BedrockCaching;
pub use catalog::{
    ApiKey, AwsSettings, CacheTtl, Catalog, CatalogBuilder, CatalogError, Dialect, EFFORT_TOKENS,
    Entry, KeySource, Pricing, PromptCache, Provider, Reasoning, SIM_DEFAULT_KEY, SIM_KEY_ENV,
    SIM_PLACEHOLDER, StructuredOutput, Tokenizer, effort_tokens,
};
pub use dependent::ModelDependent;
pub use envelope::Envelope;
pub use envelope::EnvelopeRule;
pub use envelope::EnvelopeViolation;
pub use picker::{HeadroomPicker, Picker, cheaper_first, resolve_ceiling};
pub use router::{ModelRouter, RouteError};
pub use thinker_depth::META_THINKER_DEPTH;
pub(crate) use thinker_depth::{effective_depth, parent_thinker_depth};

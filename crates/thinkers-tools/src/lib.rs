//! The built-in service tools of thinkers: tools that call an external service with a parameter
//! the model chose.
//!
//! * [`WebFetch`] (`web_fetch`) — a web page as readable text, behind an address guard;
//! * [`PubmedFetch`] (`pubmed_fetch`) — PubMed articles by id, rate-limited through the named
//!   admission budget [`PUBMED_BUDGET`];
//! * [`EpoClaims`] (`epo_claims`) — the numbered claims of a patent publication from EPO Open
//!   Patent Services.
//!
//! All three are read-only, and all three keep the same contract about failures, so a model can
//! tell what to do next from the error alone:
//!
//! 1. **The tool's own checks come first and stay outside any wrap**: a parameter of the wrong
//!    shape is an [`thinkers::Error::InvalidInput`] naming the parameter and its value, and no request
//!    is made.
//! 2. **Exactly the step that sends the model's value to the service is wrapped** in
//!    [`thinkers::error::ServiceStep::wrap`]: a client failure the model can correct (a 400, a 404 on a
//!    fetch) becomes an `InvalidInput` naming the parameter as the model knows it and its value;
//!    an uncorrectable failure (401/403, 5xx) or a transport failure becomes an
//!    [`thinkers::Error::ExternalService`] naming the service and the step. A failure of the model's
//!    parameter is never a [`thinkers::Error::System`].
//! 3. **Retry signals pass through**: a 429 (or a 503 with `Retry-After`) becomes
//!    [`thinkers::Error::throttled`] on the tool's admission budget, so the dispatcher pauses that
//!    budget, waits as long as the service asked, and runs the call again.
//!
//! Every tool takes a config struct with a `base_url` (or, for `web_fetch`, an address policy),
//! so tests and deployments can point it at another server. `pubmed_fetch` and `epo_claims`
//! share one HTTP client ([`shared_client`]); `web_fetch` has its own (see [`web_fetch::guard`]).

// Every public item carries rustdoc: the workspace warns, the library refuses.
#![deny(missing_docs)]

mod epo;
mod http;
mod pubmed;
pub mod web_fetch;
mod xml;

pub use epo::{
    Claim, EPO_BUDGET, EpoClaims, EpoClaimsConfig, EpoClaimsInput, EpoCredentials, PatentClaims,
    PublicationNumber,
};
pub use http::shared_client;
pub use pubmed::{
    MAX_PMIDS, PUBMED_BUDGET, PubmedArticle, PubmedArticles, PubmedConfig, PubmedFetch,
    PubmedFetchInput, RATE_MARGIN,
};
pub use web_fetch::{AddressPolicy, Refused, WebFetch, WebFetchConfig, WebFetchInput, WebPage};

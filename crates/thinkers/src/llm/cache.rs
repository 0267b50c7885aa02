//! The response cache: answers kept by the exact request that produced them.
//!
//! A worker that dies mid-workflow leaves its workflow to another worker, which runs it again
//! from the start. The model calls the dead worker completed are not sent (and paid) again: each
//! successful answer is stored under a key of the exact bytes that were sent ([`CacheKey`]:
//! SHA-256 of the endpoint and the body) as soon as it is received, and a call whose bytes hash to
//! a stored key is answered from the store instead of the provider. Replays hit because encoding
//! is deterministic: the same conversation renders to the same bytes (tool-call ids are numbered,
//! not random; no timestamps go into bodies).
//!
//! The cache is optional. A dispatcher finds it as the [`ResponseCacheService`] service; without
//! one, every call goes to the provider. The PostgreSQL and SQLite stores provide one each
//! (`thinkers_store::PgResponseCache`, `thinkers_store::SqliteResponseCache`), which a runtime with a store
//! registers for the calls of durable runs only ([`ResponseCacheService::for_durable_runs`]).
//!
//! A call answered from the cache is still recorded as a model call (its usage as the provider
//! reported it when it was paid, its cost zero), and the cache notes the hit with the job that
//! made it, so a trajectory stays complete and shows what was not paid for. A hit does not
//! consume provider budget: its reservation is reconciled to zero. A cache that already holds
//! the answer when the call asks for admission ([`ResponseCache::holds`], the Restate journal)
//! answers it without any seat at all.

use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use futures::future::BoxFuture;
use sha2::{Digest, Sha256};

use super::http::replay_as_deltas;
use super::{ChatResponse, EncodedRequest, ModelClient, SendOptions, SendOutcome, StreamDelta};
use crate::Result;
use crate::job::{JobContext, JobId};

/// The key of a cached answer: SHA-256 over the endpoint URL, a newline and the exact body.
/// Headers (API keys) are not part of it.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct CacheKey([u8; 32]);

impl CacheKey {
    /// The key of an encoded request.
    pub fn of(request: &EncodedRequest) -> Self {
        let mut h = Sha256::new();
        h.update(request.url.as_bytes());
        h.update(b"\n");
        h.update(&request.body);
        Self(h.finalize().into())
    }

    /// The 32 bytes of the hash.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The hash in lower-case hex.
    pub fn to_hex(&self) -> String {
        use fmt::Write as _;
        self.0.iter().fold(String::with_capacity(64), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
    }
}

impl fmt::Debug for CacheKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CacheKey({})", self.to_hex())
    }
}

/// Which job looked an answer up or stored it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheUse {
    /// The workflow (root job) of the call.
    pub workflow: JobId,
    /// The job that made the call.
    pub job: JobId,
    /// The key of the durable run the call belongs to, if any (see [`crate::durable`]): a
    /// cache that journals per run (the Restate engine) finds the run by it.
    pub run: Option<std::sync::Arc<str>>,
}

/// A store of model answers by [`CacheKey`]. Implementations must be safe to share between
/// processes that serve the same workflows: a stored answer is never replaced by another one.
pub trait ResponseCache: Send + Sync + 'static {
    /// The answer stored under `key`, if any. A hit is noted with `by`.
    fn get<'a>(
        &'a self,
        key: &'a CacheKey,
        by: CacheUse,
    ) -> BoxFuture<'a, Result<Option<ChatResponse>>>;

    /// Store `response` under `key` (a no-op when an answer is already stored). `entry` is the
    /// catalog entry that answered.
    fn put<'a>(
        &'a self,
        key: &'a CacheKey,
        entry: &'a str,
        response: &'a ChatResponse,
        by: CacheUse,
    ) -> BoxFuture<'a, Result<()>>;

    /// Whether the answer under `key` is at hand now, without waiting (a journal already read):
    /// such a call takes no admission seat, and [`ResponseCache::get`] must then answer it. The
    /// default is `false`: the call takes its seat, which a hit reconciles to zero tokens.
    fn holds(&self, _key: &CacheKey, _by: &CacheUse) -> bool {
        false
    }
}

/// The response cache as a dispatcher service: register it with
/// `RuntimeBuilder::service(Arc::new(ResponseCacheService::new(cache)))`.
#[derive(Clone)]
pub struct ResponseCacheService {
    cache: Arc<dyn ResponseCache>,
    durable_only: bool,
}

impl fmt::Debug for ResponseCacheService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseCacheService")
            .field("durable_only", &self.durable_only)
            .finish_non_exhaustive()
    }
}

impl ResponseCacheService {
    /// Wrap a cache that answers every call of the dispatcher.
    pub fn new(cache: Arc<dyn ResponseCache>) -> Self {
        Self {
            cache,
            durable_only: false,
        }
    }

    /// Wrap a cache that answers only the calls made within a durable run (see
    /// [`crate::durable`]): a replay of the run is served from it, while any other call (a
    /// benchmark that samples the same question twice) always reaches the provider. The
    /// runtime registers the embedded store's cache this way.
    pub fn for_durable_runs(cache: Arc<dyn ResponseCache>) -> Self {
        Self {
            cache,
            durable_only: true,
        }
    }

    /// The cache.
    pub(crate) fn cache(&self) -> &Arc<dyn ResponseCache> {
        &self.cache
    }
}

fn lost_answer() -> crate::Error {
    crate::Error::system(
        "response cache",
        "the cache held this call's answer when it was admitted without a seat, and no longer \
         answers it; nothing was sent",
    )
}

/// What [`send`] returns: the outcome, and whether it came from the cache.
#[derive(Debug)]
pub(crate) struct CachedSend {
    /// The answer (no rate observation when it came from the cache).
    pub(crate) outcome: SendOutcome,
    /// Whether the cache answered (nothing was sent).
    pub(crate) from_cache: bool,
}

/// The job's response cache, if its dispatcher has one that serves this job.
fn service_for(cx: &JobContext) -> Option<std::sync::Arc<ResponseCacheService>> {
    cx.services()
        .get::<ResponseCacheService>()
        .filter(|s| !s.durable_only || crate::durable::is_durable(cx))
}

fn cache_use(cx: &JobContext) -> CacheUse {
    CacheUse {
        workflow: cx.workflow(),
        job: cx.id(),
        run: crate::durable::is_durable(cx)
            .then(|| std::sync::Arc::from(crate::durable::run_key_of(cx).0)),
    }
}

/// Whether the job's response cache holds the answer to `request` already
/// ([`ResponseCache::holds`]): the call is then answered from it without a seat.
pub(crate) fn holds_answer(request: &EncodedRequest, cx: &JobContext) -> bool {
    service_for(cx).is_some_and(|s| s.cache().holds(&CacheKey::of(request), &cache_use(cx)))
}

/// Send `request` through the job's response cache, if the dispatcher has one: answer from the
/// cache on a hit, else send and store the answer before returning it. `answered` sees a
/// provider's answer as soon as it is in, before it is stored (the call settles its seat
/// there, so the budget does not wait on the store). Cache failures are
/// logged and never fail the call (the provider is asked instead; an unstored answer is only a
/// lost saving) — except for a call admitted without a seat because the cache held its answer
/// (`held`): nothing is sent for it, and a cache that no longer answers is an error.
///
/// Crate-private: it sends without asking for a permit, so only `converse_bound`, which spends
/// the attempt's admitted seat first (or has none to spend when `held`), calls it.
pub(crate) async fn send(
    client: &ModelClient,
    request: &EncodedRequest,
    options: &SendOptions,
    stream: Option<&mut (dyn FnMut(StreamDelta) + Send)>,
    held: bool,
    answered: &mut (dyn FnMut(&SendOutcome) + Send),
    cx: &JobContext,
) -> Result<CachedSend> {
    let entry = options.entry.as_deref().unwrap_or_default();
    let service = service_for(cx);
    let Some(service) = service else {
        if held {
            return Err(lost_answer());
        }
        let outcome = match stream {
            Some(sink) => client.send_with(request, options, sink).await?,
            None => client.send_with(request, options, &mut |_| {}).await?,
        };
        return Ok(CachedSend {
            outcome,
            from_cache: false,
        });
    };
    let key = CacheKey::of(request);
    let by = cache_use(cx);
    let started = Instant::now();
    match service.cache().get(&key, by.clone()).await {
        Ok(Some(response)) => {
            if let Some(sink) = stream {
                replay_as_deltas(&response, sink);
            }
            tracing::debug!(key = ?key, "model call answered from the response cache");
            return Ok(CachedSend {
                outcome: SendOutcome {
                    response,
                    rate: None,
                    latency: started.elapsed(),
                },
                from_cache: true,
            });
        }
        Ok(None) if held => return Err(lost_answer()),
        Err(e) if held => return Err(e),
        Ok(None) => {}
        Err(e) => tracing::warn!(error = %e, "response cache lookup failed; asking the provider"),
    }
    let outcome = match stream {
        Some(sink) => client.send_with(request, options, sink).await?,
        None => client.send_with(request, options, &mut |_| {}).await?,
    };
    answered(&outcome);
    if let Err(e) = service
        .cache()
        .put(&key, entry, &outcome.response, by)
        .await
    {
        tracing::warn!(error = %e, "storing the answer in the response cache failed");
    }
    Ok(CachedSend {
        outcome,
        from_cache: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_covers_endpoint_and_body() {
        let enc = |url: &str, body: &'static str| EncodedRequest {
            url: url.to_owned(),
            headers: Vec::new(),
            body: bytes::Bytes::from_static(body.as_bytes()),
            plan: super::super::DecodePlan {
                dialect: super::super::Dialect::OpenAi,
                text_tools: false,
                next_call_number: 0,
                stream: false,
            },
        };
        let a = CacheKey::of(&enc("http://a/v1", "{}"));
        assert_eq!(a, CacheKey::of(&enc("http://a/v1", "{}")));
        assert_ne!(a, CacheKey::of(&enc("http://b/v1", "{}")));
        assert_ne!(a, CacheKey::of(&enc("http://a/v1", "{ }")));
        assert_eq!(a.to_hex().len(), 64);
    }
}

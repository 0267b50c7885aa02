//! The path of one model request, shared by every dialect:
//! authenticate → parse → find the model → decode and check (cache breakpoints included) → log →
//! admit against the limits (cache reads charged or not, per model) → choose a fault → wait the
//! latency → serve a transport fault, or read and write the prompt cache, plan and render the
//! answer.

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes, HttpBody};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::{StreamExt, stream};
use rand::Rng;
use rand::rngs::StdRng;
use serde_json::Value;

use super::faulty::{self, FaultCtx, Rendered};
use super::render::render;
use super::state::{Admission, ModelSlot, Shared, lock};
use crate::api_error::ApiError;
use crate::cache::{self, CacheUse};
use crate::exchange::{AnswerFormat, Dialect, Exchange};
use crate::fault::{FAULT_HEADER, FaultKind, FaultParams, parse_fault_header};
use crate::limits::{Cost, RateState};
use crate::plan::{self, PlanContext};
use crate::seeding::ordinal_rng;
use crate::stats::{LoggedRequest, Outcome};
use crate::{anthropic, bedrock, gemini, openai, rate_headers, responses, tokens};

/// What a request's path says, for a dialect that names the model and the streaming in the URL
/// (Gemini: `/v1beta/models/{model}:streamGenerateContent`, or the same under `/v1`).
#[derive(Debug, Default)]
pub(crate) struct PathArgs {
    /// The model named in the path.
    pub(crate) model: Option<String>,
    /// Whether the path asks for a stream.
    pub(crate) stream: bool,
}

/// A request that got this far, for error answers.
struct Ctx {
    dialect: Dialect,
    request_id: String,
}

impl Ctx {
    fn error(&self, error: ApiError) -> Response {
        error.into_response_for(self.dialect, &self.request_id)
    }
}

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    header_str(headers, "authorization")
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty())
}

/// The API key a request carried: `x-api-key` (or Azure's `api-key`, or Gemini's
/// `x-goog-api-key`), else `authorization: Bearer …`.
fn api_key(headers: &HeaderMap) -> &str {
    header_str(headers, "x-api-key")
        .or_else(|| header_str(headers, "api-key"))
        .or_else(|| header_str(headers, "x-goog-api-key"))
        .or_else(|| bearer(headers))
        .unwrap_or_default()
}

/// OpenAI wants `Authorization: Bearer …`, Azure OpenAI `api-key` (or a bearer token).
/// Anthropic wants `x-api-key` (current official SDKs send the key as `Authorization: Bearer …`,
/// which the API accepts too) and `anthropic-version`. Gemini wants `x-goog-api-key` (an OAuth
/// bearer token works too).
fn authenticate(dialect: Dialect, headers: &HeaderMap, azure: bool) -> Result<(), ApiError> {
    match dialect {
        Dialect::Gemini => header_str(headers, "x-goog-api-key")
            .or_else(|| bearer(headers))
            .map(|_| ())
            .ok_or(ApiError::MissingKey),
        Dialect::Bedrock => bedrock::authenticated(headers)
            .then_some(())
            .ok_or(ApiError::MissingKey),
        Dialect::OpenAi | Dialect::OpenAiResponses if azure => header_str(headers, "api-key")
            .or_else(|| bearer(headers))
            .map(|_| ())
            .ok_or(ApiError::MissingKey),
        Dialect::OpenAi | Dialect::OpenAiResponses => {
            bearer(headers).map(|_| ()).ok_or(ApiError::MissingKey)
        }
        Dialect::Anthropic => {
            header_str(headers, "x-api-key")
                .or_else(|| bearer(headers))
                .ok_or(ApiError::MissingKey)?;
            header_str(headers, "anthropic-version").ok_or(ApiError::MissingVersion)?;
            Ok(())
        }
    }
}

/// How an Azure OpenAI request reached the sim: its key may be in `api-key`, and a deployment
/// URL names the model (the body's `model` is then optional and ignored).
#[derive(Debug, Clone, Default)]
pub(crate) struct Azure {
    pub(crate) deployment: Option<String>,
}

/// Authenticates, parses the body and finds the model it (or the path) names.
fn read_request(
    shared: &Shared,
    dialect: Dialect,
    path_model: Option<&str>,
    headers: &HeaderMap,
    body: &[u8],
    azure: Option<&Azure>,
) -> Result<(Value, Arc<ModelSlot>), ApiError> {
    authenticate(dialect, headers, azure.is_some())?;
    let mut raw: Value = serde_json::from_slice(body).map_err(|e| {
        ApiError::invalid(
            format!("We could not parse the JSON body of your request: {e}"),
            None,
        )
    })?;
    if let (Some(deployment), Some(body)) = (
        azure.and_then(|a| a.deployment.as_deref()),
        raw.as_object_mut(),
    ) {
        body.insert("model".into(), Value::from(deployment));
    }
    let Some(model_name) = path_model.or_else(|| raw.get("model").and_then(Value::as_str)) else {
        return Err(ApiError::invalid(
            "you must provide a model parameter",
            Some("model"),
        ));
    };
    let slot = shared
        .model(model_name)
        .ok_or_else(|| ApiError::ModelNotFound(model_name.to_owned()))?;
    Ok((raw, slot))
}

/// `POST /v1/messages/count_tokens`: the sim's input token count of a Messages body (which needs
/// no `max_tokens`), checked like a real request. Neither rate limited nor counted in the stats.
pub(crate) async fn count_tokens(shared: Arc<Shared>, headers: HeaderMap, body: Bytes) -> Response {
    let ctx = Ctx {
        dialect: Dialect::Anthropic,
        request_id: format!("req_{}", uuid::Uuid::new_v4().simple()),
    };
    let (mut raw, slot) = match read_request(&shared, ctx.dialect, None, &headers, &body, None) {
        Ok(found) => found,
        Err(e) => return ctx.error(e),
    };
    if let Some(body) = raw.as_object_mut() {
        body.insert("max_tokens".into(), Value::from(slot.model.output_ceiling));
        body.remove("stream");
    }
    match anthropic::decode(&raw, &slot.model, shared.seed, &shared.signer) {
        Ok(exchange) => axum::Json(serde_json::json!({
            "input_tokens": tokens::input_tokens(&exchange)
        }))
        .into_response(),
        Err(e) => ctx.error(e),
    }
}

/// Handles one request to a model endpoint.
pub(crate) async fn handle(
    shared: Arc<Shared>,
    dialect: Dialect,
    endpoint: &'static str,
    path: PathArgs,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    handle_with(shared, dialect, endpoint, path, headers, body, None).await
}

/// Handles one Bedrock Converse request: the model and whether it streams come from the path.
pub(crate) async fn handle_bedrock(
    shared: Arc<Shared>,
    model: String,
    stream: bool,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let endpoint = if stream {
        "/model/{modelId}/converse-stream"
    } else {
        "/model/{modelId}/converse"
    };
    let path = PathArgs {
        model: Some(model),
        stream,
    };
    handle(shared, Dialect::Bedrock, endpoint, path, headers, body).await
}

/// Handles one request to a model endpoint, reached the Azure OpenAI way when `azure` is set.
pub(crate) async fn handle_as(
    shared: Arc<Shared>,
    dialect: Dialect,
    endpoint: &'static str,
    headers: HeaderMap,
    body: Bytes,
    azure: Option<Azure>,
) -> Response {
    handle_with(
        shared,
        dialect,
        endpoint,
        PathArgs::default(),
        headers,
        body,
        azure,
    )
    .await
}

async fn handle_with(
    shared: Arc<Shared>,
    dialect: Dialect,
    endpoint: &'static str,
    path: PathArgs,
    headers: HeaderMap,
    body: Bytes,
    azure: Option<Azure>,
) -> Response {
    let ctx = Ctx {
        dialect,
        request_id: format!("req_{}", uuid::Uuid::new_v4().simple()),
    };
    let (raw, slot) = match read_request(
        &shared,
        dialect,
        path.model.as_deref(),
        &headers,
        &body,
        azure.as_ref(),
    ) {
        Ok(found) => found,
        Err(e) => return ctx.error(e),
    };
    let decoded = match dialect {
        Dialect::OpenAi => openai::decode(&raw, &slot.model, shared.seed),
        Dialect::Anthropic => anthropic::decode(&raw, &slot.model, shared.seed, &shared.signer),
        Dialect::OpenAiResponses => {
            responses::decode(&raw, &slot.model, shared.seed, &shared.signer)
        }
        Dialect::Gemini => {
            gemini::decode(&raw, &slot.model, shared.seed, &shared.signer, path.stream)
        }
        Dialect::Bedrock => {
            bedrock::decode(&raw, &slot.model, shared.seed, &shared.signer, path.stream)
        }
    };
    let exchange = match decoded {
        Ok(exchange) => exchange,
        Err(e) => {
            lock(&shared.stats).record(&slot.model.name, Outcome::Invalid);
            return ctx.error(e);
        }
    };
    // A header naming no known kind is refused, so a typo cannot silently disable a test's fault.
    let header_fault = match header_str(&headers, FAULT_HEADER).map(parse_fault_header) {
        None => None,
        Some(Ok(fault)) => Some(fault),
        Some(Err(e)) => {
            lock(&shared.stats).record(&slot.model.name, Outcome::Invalid);
            return ctx.error(ApiError::invalid(
                format!("{e} in the {FAULT_HEADER} header"),
                None,
            ));
        }
    };
    // Breakpoints are checked whether or not the model caches.
    let prompt = match cache::build(dialect, &raw, &exchange) {
        Ok(prompt) => prompt,
        Err(e) => {
            lock(&shared.stats).record(&slot.model.name, Outcome::Invalid);
            return ctx.error(e);
        }
    };
    let input = tokens::input_tokens(&exchange);
    // Anthropic does not count cache reads toward its input-token limits; the others do, unless
    // the model says otherwise.
    let reads_count = slot
        .model
        .cache_reads_count
        .unwrap_or(dialect != Dialect::Anthropic);
    let charged = |used: CacheUse| {
        if reads_count {
            input
        } else {
            input - used.read
        }
    };
    let peeked = slot.cache_peek(&prompt, input);
    // A `response_format` the server refuses (`Profile::refused_formats`): refused once the
    // request is logged, before admission, as llama-cpp-python's server refuses `json_schema`.
    let refused = (dialect == Dialect::OpenAi)
        .then(|| openai::refused_format(&raw, &slot.profile.refused_formats))
        .flatten();
    if shared.log_bodies {
        lock(&shared.log).push(LoggedRequest {
            model: slot.model.name.clone(),
            endpoint: endpoint.to_owned(),
            input_tokens: input,
            timestamp: chrono::Utc::now().to_rfc3339(),
            headers: headers
                .iter()
                .map(|(k, v)| {
                    (
                        k.as_str().to_owned(),
                        String::from_utf8_lossy(v.as_bytes()).into_owned(),
                    )
                })
                .collect(),
            body: raw,
            raw_body: String::from_utf8_lossy(&body).into_owned(),
        });
    }
    if let Some(refusal) = refused {
        lock(&shared.stats).record(&slot.model.name, Outcome::Invalid);
        return ctx.error(refusal);
    }
    let ordinal = slot
        .ordinal
        .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
    let mut rng = ordinal_rng(shared.seed, &slot.model.name, ordinal);

    // Charged its input and the output it asks for; in flight until `admission` is dropped, with
    // the response body (see `hold_until_sent`).
    let reservation = Cost {
        input: charged(peeked),
        output: exchange.max_output.unwrap_or(0),
    };
    let admission = match slot.admit(reservation) {
        Ok(admission) => admission,
        Err(refusal) => {
            lock(&shared.stats).record(&slot.model.name, Outcome::RateLimited(refusal.kind));
            return ctx.error(ApiError::RateLimited {
                model: slot.model.name.clone(),
                refusal,
            });
        }
    };
    lock(&shared.stats).record_admitted(&slot.model.name, admission.in_flight());
    let response = async {
        let fault = header_fault
            .or_else(|| choose_fault(&shared, &slot, &exchange, &mut rng))
            .or_else(|| {
                let cannot_stream = !slot.profile.streams_tools
                    && exchange.stream
                    && !exchange.offered_tools().is_empty();
                cannot_stream.then(|| (FaultKind::EmptyStream, FaultParams::default()))
            });
        let [min, max] = slot.profile.latency_ms;
        let latency = if max > min {
            rng.random_range(min..=max)
        } else {
            min
        };
        if latency > 0 {
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(latency)) => {}
                () = shared.shutdown.cancelled() => {}
            }
        }
        let settle = |input: u64, output: u64| -> Option<RateState> {
            lock(&shared.stats).record_settled(&slot.model.name, input, output);
            admission.settle(Cost { input, output })
        };

        if let Some((kind, params)) = fault
            && (kind.is_transport() && (kind != FaultKind::StreamError || !exchange.stream))
        {
            let state = settle(charged(peeked), 0);
            lock(&shared.stats).record(&slot.model.name, Outcome::Fault(kind));
            return match kind {
                FaultKind::Overloaded529 => ctx.error(ApiError::Overloaded),
                FaultKind::RateLimit429 => ctx.error(ApiError::RateLimitFault {
                    state: state.map(Box::new),
                }),
                FaultKind::Hang => {
                    let hang = params.hang_ms.unwrap_or(shared.hang_ms);
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_millis(hang)) => {}
                        () = shared.shutdown.cancelled() => {}
                    }
                    ctx.error(ApiError::Server)
                }
                _ => ctx.error(ApiError::Server),
            };
        }
        let (fault, params) = match fault {
            Some((kind, params)) => (Some(kind), params),
            None => (None, FaultParams::default()),
        };

        // The prompt reached the model: its prefixes are read and written.
        let cached = slot.cache_commit(&prompt, input);
        let content_fault = fault.filter(|k| !k.is_transport() && !k.is_exchange());
        let mut plan = plan::plan(
            &exchange,
            &PlanContext {
                model: &slot.model,
                profile: &slot.profile,
                script: shared.script.as_ref(),
                fault: content_fault,
            },
        );
        // An exchange fault delivers no answer, except a slow first event, which delivers it late.
        let unanswered = fault.filter(|k| k.is_exchange() && *k != FaultKind::SlowFirstEvent);
        let state = settle(
            charged(cached),
            if unanswered.is_some() {
                0
            } else {
                plan.output_tokens
            },
        );
        {
            let mut stats = lock(&shared.stats);
            if let Some(kind) = unanswered {
                stats.record(&slot.model.name, Outcome::Fault(kind));
            } else {
                stats.record(
                    &slot.model.name,
                    Outcome::Answered {
                        input,
                        output: plan.output_tokens,
                    },
                );
                stats.record_cache(&slot.model.name, cached.read, cached.written());
                if let Some(kind) = fault {
                    stats.record_content_fault(&slot.model.name, kind);
                }
            }
        }

        let request_headers = headers;
        let mut headers = HeaderMap::new();
        crate::api_error::insert_request_id(&mut headers, dialect, &ctx.request_id);
        if let Some(state) = &state {
            rate_headers::insert(&mut headers, dialect, state);
        }
        let cut_stream = fault == Some(FaultKind::StreamError);
        let created = chrono::Utc::now().timestamp();
        if let Some(kind) = fault.filter(|k| k.is_exchange()) {
            let answer = render(
                &shared, &slot, &exchange, &mut plan, dialect, input, cached, created, None,
            );
            let fault_ctx = FaultCtx {
                dialect,
                endpoint,
                request_id: &ctx.request_id,
                key: api_key(&request_headers),
                host: header_str(&request_headers, "host").unwrap_or("127.0.0.1"),
                hang_ms: shared.hang_ms,
                shutdown: &shared.shutdown,
                headers,
            };
            return faulty::serve(fault_ctx, kind, params, answer);
        }
        // A truncated stream: OpenAI's connection breaks after three frames; Anthropic's and
        // Responses' frames themselves stop after four with an error event, Gemini's after one.
        let (openai_cut, frames_cut) = match dialect {
            Dialect::OpenAi => (cut_stream.then_some(3), None),
            Dialect::Anthropic | Dialect::OpenAiResponses | Dialect::Bedrock => {
                (None, cut_stream.then_some(4))
            }
            Dialect::Gemini => (None, cut_stream.then_some(1)),
        };
        match render(
            &shared, &slot, &exchange, &mut plan, dialect, input, cached, created, frames_cut,
        ) {
            Rendered::Stream(frames) if dialect == Dialect::Bedrock => {
                headers.insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static(bedrock::EVENT_STREAM),
                );
                (
                    StatusCode::OK,
                    headers,
                    Body::from_stream(stream::iter(
                        frames.into_iter().map(Ok::<_, std::io::Error>),
                    )),
                )
                    .into_response()
            }
            Rendered::Stream(frames) => sse(headers, frames, openai_cut),
            Rendered::Whole(body) => (StatusCode::OK, headers, axum::Json(body)).into_response(),
        }
    }
    .await;
    hold_until_sent(response, admission)
}

/// Keeps `admission` (the request in flight) until the response has been sent: at once for a body
/// of known length, at the end of the stream (or when the client goes away) for a stream.
fn hold_until_sent(response: Response, admission: Admission) -> Response {
    if response.body().size_hint().exact().is_some() {
        return response;
    }
    let (parts, body) = response.into_parts();
    let body = body.into_data_stream().map(move |chunk| {
        let _in_flight = &admission;
        chunk
    });
    Response::from_parts(parts, Body::from_stream(body))
}

/// A 200 event stream of `frames`; with `cut_after`, the connection is broken after that many
/// frames instead of ending cleanly.
fn sse(mut headers: HeaderMap, frames: Vec<Bytes>, cut_after: Option<usize>) -> Response {
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream; charset=utf-8"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    let body = match cut_after {
        None => Body::from_stream(stream::iter(
            frames.into_iter().map(Ok::<_, std::io::Error>),
        )),
        Some(n) => {
            let head = stream::iter(frames.into_iter().take(n).map(Ok));
            // Pause before breaking the connection so the first events reach the client, as
            // when a real stream dies midway.
            let cut = stream::once(async {
                tokio::time::sleep(Duration::from_millis(20)).await;
                Err(std::io::Error::new(
                    std::io::ErrorKind::ConnectionAborted,
                    "stream cut by a stream_error fault",
                ))
            });
            Body::from_stream(head.chain(cut))
        }
    };
    (StatusCode::OK, headers, body).into_response()
}

/// Picks this request's fault when the header named none: an injected rule first, then the
/// profile's rates.
fn choose_fault(
    shared: &Shared,
    slot: &ModelSlot,
    exchange: &Exchange,
    rng: &mut StdRng,
) -> Option<(FaultKind, FaultParams)> {
    if let Some(taken) = lock(&shared.faults).take(&slot.model.name) {
        return Some(taken);
    }
    // Roll every rate, in a fixed order, so one request's rolls never depend on which kinds apply.
    let mut chosen = None;
    for kind in FaultKind::ALL {
        let rate = slot.profile.rates.get(&kind).copied().unwrap_or(0.0);
        let hit = rate > 0.0 && rng.random_bool(rate.clamp(0.0, 1.0));
        if hit && chosen.is_none() && applies(kind, exchange) {
            chosen = Some(kind);
        }
    }
    chosen.map(|kind| (kind, FaultParams::default()))
}

/// Whether a randomly rolled fault makes sense for this request.
fn applies(kind: FaultKind, exchange: &Exchange) -> bool {
    match kind {
        FaultKind::MalformedJson | FaultKind::WrongShape => exchange.format != AnswerFormat::Text,
        FaultKind::UnknownTool | FaultKind::InvalidToolArgs => !exchange.offered_tools().is_empty(),
        FaultKind::StreamError
        | FaultKind::StallBeforeContent
        | FaultKind::EmptyStream
        | FaultKind::TruncatedStream
        | FaultKind::StreamErrorEchoKey => exchange.stream,
        FaultKind::EchoKey
        | FaultKind::Error200
        | FaultKind::RedirectKey
        | FaultKind::RetryAfter
        | FaultKind::StallMidStream
        | FaultKind::SlowFirstEvent
        | FaultKind::HtmlBody
        | FaultKind::CutJson
        | FaultKind::EmptyAnswer
        | FaultKind::Http500
        | FaultKind::Overloaded529
        | FaultKind::RateLimit429
        | FaultKind::Hang
        | FaultKind::Truncate => true,
    }
}

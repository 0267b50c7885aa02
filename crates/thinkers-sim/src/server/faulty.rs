//! The faults that shape the HTTP exchange rather than the model's answer ([`FaultKind::is_exchange`]):
//! error bodies that echo the API key, redirects, server-requested waits, streams that stall,
//! end early or carry an error event, bodies that are not JSON, empty answers.
//!
//! The normal answer is rendered first (as frames for a stream, as a JSON value otherwise), so a
//! stall or a truncation cuts a real answer at a real event boundary.

use std::future;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::{StreamExt, stream};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::exchange::Dialect;
use crate::fault::{FaultKind, FaultParams};

/// The normal answer, rendered.
pub(crate) enum Rendered {
    /// The frames of a streamed answer, in order.
    Stream(Vec<Bytes>),
    /// A whole answer body.
    Whole(Value),
}

/// What a fault needs to know about the request.
pub(crate) struct FaultCtx<'a> {
    pub(crate) dialect: Dialect,
    pub(crate) endpoint: &'a str,
    pub(crate) request_id: &'a str,
    /// The API key the request carried (`x-api-key`, else `authorization: Bearer …`).
    pub(crate) key: &'a str,
    /// The `host` header, for a redirect's `Location`.
    pub(crate) host: &'a str,
    /// The silence of stalls when the rule names none.
    pub(crate) hang_ms: u64,
    pub(crate) shutdown: &'a CancellationToken,
    /// The request id and rate-limit headers of a normal answer.
    pub(crate) headers: HeaderMap,
}

/// How a staged body ends.
#[derive(Clone, Copy)]
enum End {
    /// The body ends cleanly.
    Close,
    /// The connection breaks.
    Cut,
}

/// A body of `head`, a pause, `rest`, then `end`. A pause ends early when the sim shuts down.
fn staged(
    head: Vec<Bytes>,
    pause: Option<(Duration, CancellationToken)>,
    rest: Vec<Bytes>,
    end: End,
) -> Body {
    type Item = Result<Bytes, std::io::Error>;
    let head = stream::iter(head.into_iter().map(Ok::<Bytes, std::io::Error>));
    let pause = stream::once(async move {
        if let Some((wait, token)) = pause {
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = token.cancelled() => {}
            }
        }
    })
    .filter_map(|()| future::ready(None::<Item>));
    let rest = stream::iter(rest.into_iter().map(Ok::<Bytes, std::io::Error>));
    let end = stream::once(async move {
        match end {
            End::Close => None,
            End::Cut => {
                // Let the events written so far reach the client before the break.
                tokio::time::sleep(Duration::from_millis(20)).await;
                Some(Err(std::io::Error::new(
                    std::io::ErrorKind::ConnectionAborted,
                    "connection cut by a fault",
                )))
            }
        }
    })
    .filter_map(future::ready);
    Body::from_stream(head.chain(pause).chain(rest).chain(end))
}

fn with_type(mut headers: HeaderMap, content_type: &'static str) -> HeaderMap {
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    if content_type.starts_with("text/event-stream") {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    }
    headers
}

const SSE: &str = "text/event-stream; charset=utf-8";

/// The media type of a stream in `dialect`: server-sent events, or Bedrock's event stream.
fn stream_type(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Bedrock => crate::bedrock::EVENT_STREAM,
        Dialect::OpenAi | Dialect::Anthropic | Dialect::OpenAiResponses | Dialect::Gemini => SSE,
    }
}
const JSON: &str = "application/json";

/// The error `type` (and OpenAI `code`) a provider uses for `status`.
fn error_type(dialect: Dialect, status: u16) -> (&'static str, Option<&'static str>) {
    match dialect {
        Dialect::OpenAi | Dialect::OpenAiResponses => match status {
            401 => ("invalid_request_error", Some("invalid_api_key")),
            403 => (
                "invalid_request_error",
                Some("unsupported_country_region_territory"),
            ),
            404 => ("invalid_request_error", Some("model_not_found")),
            429 => ("requests", Some("rate_limit_exceeded")),
            500..=599 => ("server_error", None),
            _ => ("invalid_request_error", None),
        },
        Dialect::Anthropic => (
            match status {
                401 => "authentication_error",
                403 => "permission_error",
                404 => "not_found_error",
                408 => "timeout_error",
                413 => "request_too_large",
                429 => "rate_limit_error",
                529 => "overloaded_error",
                500..=599 => "api_error",
                _ => "invalid_request_error",
            },
            None,
        ),
        Dialect::Gemini => (
            match status {
                400 => "INVALID_ARGUMENT",
                401 => "UNAUTHENTICATED",
                403 => "PERMISSION_DENIED",
                404 => "NOT_FOUND",
                429 => "RESOURCE_EXHAUSTED",
                503 => "UNAVAILABLE",
                504 => "DEADLINE_EXCEEDED",
                500..=599 => "INTERNAL",
                _ => "FAILED_PRECONDITION",
            },
            None,
        ),
        Dialect::Bedrock => (
            match status {
                400 => "ValidationException",
                401 | 403 => "AccessDeniedException",
                404 => "ResourceNotFoundException",
                408 => "ModelTimeoutException",
                424 => "ModelErrorException",
                429 => "ThrottlingException",
                503 => "ServiceUnavailableException",
                500..=599 => "InternalServerException",
                _ => "ValidationException",
            },
            None,
        ),
    }
}

/// The error object (the part inside `"error"`).
fn error_object(dialect: Dialect, status: u16, message: &str) -> Value {
    let (kind, code) = error_type(dialect, status);
    match dialect {
        Dialect::OpenAi | Dialect::OpenAiResponses => {
            json!({"message": message, "type": kind, "param": null, "code": code})
        }
        Dialect::Anthropic => json!({"type": kind, "message": message}),
        Dialect::Gemini => json!({"code": status, "message": message, "status": kind}),
        // The exception's name travels in `x-amzn-ErrorType`, or (as here) in `__type`.
        Dialect::Bedrock => json!({"__type": kind, "message": message}),
    }
}

/// A whole error body in the dialect's shape.
fn error_body(ctx: &FaultCtx<'_>, status: u16, message: &str) -> Value {
    let error = error_object(ctx.dialect, status, message);
    match ctx.dialect {
        Dialect::OpenAi | Dialect::OpenAiResponses | Dialect::Gemini => json!({"error": error}),
        Dialect::Anthropic => {
            json!({"type": "error", "error": error, "request_id": ctx.request_id})
        }
        Dialect::Bedrock => error,
    }
}

/// A message that echoes the key, as providers word it for `status`.
fn echo_message(status: u16, key: &str) -> String {
    match status {
        401 => format!(
            "Incorrect API key provided: {key}. You can find your API key in your account settings."
        ),
        403 => format!("The API key {key} does not have permission to use this resource."),
        404 => format!("The model does not exist or the API key {key} has no access to it."),
        429 => format!("Rate limit reached for the API key {key}. Please try again in 1s."),
        _ => format!("The request made with the API key {key} failed (status {status})."),
    }
}

fn status_code(status: u16) -> StatusCode {
    StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

fn json_response(status: u16, headers: HeaderMap, body: &Value) -> Response {
    (
        status_code(status),
        with_type(headers, JSON),
        body.to_string(),
    )
        .into_response()
}

/// How many frames open a stream before its first content event: OpenAI's role chunk;
/// Anthropic's `message_start`, the first `content_block_start` and its `ping`; Responses'
/// `response.created` and `response.in_progress`; none for Gemini, whose every event carries
/// content.
fn opening(dialect: Dialect, frames: &[Bytes]) -> usize {
    let n = match dialect {
        Dialect::OpenAi | Dialect::Bedrock => 1,
        Dialect::Anthropic => 3,
        Dialect::OpenAiResponses => 2,
        Dialect::Gemini => 0,
    };
    n.min(frames.len())
}

/// The opening frames and then up to `events` content frames, never the finishing ones.
fn head_frames(dialect: Dialect, frames: &[Bytes], events: u32) -> Vec<Bytes> {
    let open = opening(dialect, frames);
    let events = usize::try_from(events).unwrap_or(usize::MAX);
    // The last two frames finish the answer in both dialects.
    let end = open
        .saturating_add(events)
        .min(frames.len().saturating_sub(2))
        .max(open);
    frames[..end].to_vec()
}

/// The whole answer's JSON text cut at half its length.
fn cut_text(body: &Value) -> Bytes {
    let text = body.to_string();
    let mut half = text.len() / 2;
    while !text.is_char_boundary(half) {
        half -= 1;
    }
    Bytes::from(text[..half].to_owned())
}

fn sse_frame(dialect: Dialect, name: &str, data: &Value) -> Bytes {
    match dialect {
        Dialect::OpenAi => Bytes::from(format!("data: {data}\n\n")),
        Dialect::Gemini => Bytes::from(format!("data: {data}\r\n\r\n")),
        Dialect::Anthropic | Dialect::OpenAiResponses => {
            Bytes::from(format!("event: {name}\ndata: {data}\n\n"))
        }
        Dialect::Bedrock => crate::bedrock::event(name, data),
    }
}

/// Serves `kind` in place of `answer`.
pub(crate) fn serve(
    ctx: FaultCtx<'_>,
    kind: FaultKind,
    params: FaultParams,
    answer: Rendered,
) -> Response {
    let hang = Duration::from_millis(params.hang_ms.unwrap_or(ctx.hang_ms));
    let pause = Some((hang, ctx.shutdown.clone()));
    let dialect = ctx.dialect;
    match (kind, answer) {
        (FaultKind::EchoKey | FaultKind::StreamErrorEchoKey, Rendered::Whole(_))
        | (FaultKind::EchoKey, Rendered::Stream(_)) => {
            let status = params.status.unwrap_or(401);
            let body = error_body(&ctx, status, &echo_message(status, ctx.key));
            json_response(status, ctx.headers, &body)
        }
        (FaultKind::StreamErrorEchoKey, Rendered::Stream(frames)) => {
            let status = params.status.unwrap_or(401);
            let error = error_object(dialect, status, &echo_message(status, ctx.key));
            let mut head = head_frames(dialect, &frames, params.events.unwrap_or(0));
            head.push(match dialect {
                Dialect::OpenAi | Dialect::Gemini => {
                    sse_frame(dialect, "error", &json!({"error": error}))
                }
                Dialect::Anthropic => {
                    sse_frame(dialect, "error", &json!({"type": "error", "error": error}))
                }
                // The Responses `error` event carries the error's fields itself.
                Dialect::OpenAiResponses => {
                    let mut event = error;
                    event["type"] = json!("error");
                    event["code"] = json!(error_type(dialect, status).1.unwrap_or("server_error"));
                    sse_frame(dialect, "error", &event)
                }
                Dialect::Bedrock => crate::bedrock::exception(
                    "internalServerException",
                    error["message"].as_str().unwrap_or_default(),
                ),
            });
            let body = staged(head, None, Vec::new(), End::Close);
            (
                StatusCode::OK,
                with_type(ctx.headers, stream_type(dialect)),
                body,
            )
                .into_response()
        }
        (FaultKind::Error200, _) => {
            let body = error_body(&ctx, 401, &echo_message(401, ctx.key));
            json_response(200, ctx.headers, &body)
        }
        (FaultKind::RedirectKey, _) => redirect(ctx),
        (FaultKind::RetryAfter, _) => retry_after(&ctx, params),
        (FaultKind::StallMidStream, Rendered::Stream(frames)) => {
            let head = head_frames(dialect, &frames, params.events.unwrap_or(2));
            let body = staged(head, pause, Vec::new(), End::Cut);
            (
                StatusCode::OK,
                with_type(ctx.headers, stream_type(dialect)),
                body,
            )
                .into_response()
        }
        (FaultKind::StallMidStream, Rendered::Whole(value)) => {
            let body = staged(vec![cut_text(&value)], pause, Vec::new(), End::Cut);
            (StatusCode::OK, with_type(ctx.headers, JSON), body).into_response()
        }
        (FaultKind::StallBeforeContent, Rendered::Stream(frames)) => {
            let head = frames[..opening(dialect, &frames)].to_vec();
            let body = staged(head, pause, Vec::new(), End::Cut);
            (
                StatusCode::OK,
                with_type(ctx.headers, stream_type(dialect)),
                body,
            )
                .into_response()
        }
        (FaultKind::StallBeforeContent, Rendered::Whole(_)) => {
            let body = staged(Vec::new(), pause, Vec::new(), End::Cut);
            (StatusCode::OK, with_type(ctx.headers, JSON), body).into_response()
        }
        (FaultKind::SlowFirstEvent, Rendered::Stream(frames)) => {
            let body = staged(Vec::new(), pause, frames, End::Close);
            (
                StatusCode::OK,
                with_type(ctx.headers, stream_type(dialect)),
                body,
            )
                .into_response()
        }
        (FaultKind::SlowFirstEvent, Rendered::Whole(value)) => {
            let text = Bytes::from(value.to_string());
            let body = staged(Vec::new(), pause, vec![text], End::Close);
            (StatusCode::OK, with_type(ctx.headers, JSON), body).into_response()
        }
        (FaultKind::EmptyStream, Rendered::Stream(_)) => (
            StatusCode::OK,
            with_type(ctx.headers, stream_type(dialect)),
            Body::empty(),
        )
            .into_response(),
        (FaultKind::EmptyStream, Rendered::Whole(_)) => {
            (StatusCode::OK, with_type(ctx.headers, JSON), Body::empty()).into_response()
        }
        (FaultKind::TruncatedStream, Rendered::Stream(frames)) => {
            let head = frames[..opening(dialect, &frames)].to_vec();
            let body = staged(head, None, Vec::new(), End::Close);
            (
                StatusCode::OK,
                with_type(ctx.headers, stream_type(dialect)),
                body,
            )
                .into_response()
        }
        (FaultKind::TruncatedStream | FaultKind::CutJson, Rendered::Whole(value)) => (
            StatusCode::OK,
            with_type(ctx.headers, JSON),
            cut_text(&value),
        )
            .into_response(),
        (FaultKind::CutJson, Rendered::Stream(_)) => {
            // A server that ignored `stream` and then broke off its JSON answer.
            let whole = json!({"id": ctx.request_id, "object": "chat.completion", "choices": [
                {"index": 0, "message": {"role": "assistant", "content": "cut short"}}]});
            (
                StatusCode::OK,
                with_type(ctx.headers, JSON),
                cut_text(&whole),
            )
                .into_response()
        }
        (FaultKind::HtmlBody, _) => (
            StatusCode::OK,
            with_type(ctx.headers, "text/html; charset=utf-8"),
            HTML_PAGE,
        )
            .into_response(),
        (FaultKind::EmptyAnswer, answer) => empty_answer(ctx, answer),
        // Kinds served elsewhere never reach this function; answer them as a server error.
        (_, _) => {
            let body = error_body(&ctx, 500, "Internal server error");
            json_response(500, ctx.headers, &body)
        }
    }
}

/// A gateway's sign-in page: what a misconfigured proxy answers instead of the provider.
const HTML_PAGE: &str = "<!DOCTYPE html>\n<html><head><title>Sign in</title></head>\
<body><h1>Sign in to continue</h1><p>This network requires you to sign in.</p></body></html>\n";

fn redirect(ctx: FaultCtx<'_>) -> Response {
    let location = format!("http://{}{}?key={}", ctx.host, ctx.endpoint, ctx.key);
    let mut headers = ctx.headers;
    let value =
        HeaderValue::from_str(&location).unwrap_or_else(|_| HeaderValue::from_static("/v1/moved"));
    headers.insert(header::LOCATION, value);
    let page = format!("<html><body><a href=\"{location}\">Temporary Redirect</a>.</body></html>");
    (
        StatusCode::TEMPORARY_REDIRECT,
        with_type(headers, "text/html; charset=utf-8"),
        page,
    )
        .into_response()
}

fn retry_after(ctx: &FaultCtx<'_>, params: FaultParams) -> Response {
    let status = params.status.unwrap_or(503);
    let mut headers = ctx.headers.clone();
    let (secs, ms) = match (params.retry_after_s, params.retry_after_ms) {
        (None, None) => (Some(1), None),
        other => other,
    };
    if let Some(s) = secs
        && let Ok(v) = HeaderValue::from_str(&s.to_string())
    {
        headers.insert(header::RETRY_AFTER, v);
    }
    if let Some(ms) = ms
        && let Ok(v) = HeaderValue::from_str(&ms.to_string())
    {
        headers.insert(HeaderName::from_static("retry-after-ms"), v);
    }
    let body = error_body(
        ctx,
        status,
        "The server is busy and asked you to retry after the wait in its retry-after headers.",
    );
    json_response(status, headers, &body)
}

fn empty_answer(ctx: FaultCtx<'_>, answer: Rendered) -> Response {
    let dialect = ctx.dialect;
    match (dialect, answer) {
        (Dialect::Anthropic, Rendered::Whole(mut value)) => {
            value["content"] = json!([]);
            value["stop_reason"] = Value::Null;
            value["usage"]["output_tokens"] = json!(0);
            json_response(200, ctx.headers, &value)
        }
        (Dialect::Anthropic, Rendered::Stream(frames)) => {
            let mut head: Vec<Bytes> = frames.into_iter().take(1).collect();
            head.push(sse_frame(
                dialect,
                "message_delta",
                &json!({"type": "message_delta",
                    "delta": {"stop_reason": null, "stop_sequence": null},
                    "usage": {"output_tokens": 0}}),
            ));
            head.push(sse_frame(
                dialect,
                "message_stop",
                &json!({"type": "message_stop"}),
            ));
            let body = staged(head, None, Vec::new(), End::Close);
            (
                StatusCode::OK,
                with_type(ctx.headers, stream_type(dialect)),
                body,
            )
                .into_response()
        }
        (Dialect::OpenAi, Rendered::Whole(mut value)) => {
            value["choices"][0]["message"] = json!({"role": "assistant", "content": ""});
            value["choices"][0]["finish_reason"] = Value::Null;
            json_response(200, ctx.headers, &value)
        }
        (Dialect::Bedrock, Rendered::Whole(mut value)) => {
            value["output"]["message"]["content"] = json!([]);
            if let Some(body) = value.as_object_mut() {
                body.remove("stopReason");
            }
            json_response(200, ctx.headers, &value)
        }
        (Dialect::Bedrock, Rendered::Stream(frames)) => {
            // `messageStart`, then the closing `metadata` with no `messageStop`.
            let mut head: Vec<Bytes> = frames.iter().take(1).cloned().collect();
            head.extend(frames.last().cloned());
            let body = staged(head, None, Vec::new(), End::Close);
            (
                StatusCode::OK,
                with_type(ctx.headers, stream_type(dialect)),
                body,
            )
                .into_response()
        }
        (Dialect::OpenAi, Rendered::Stream(frames)) => {
            let mut head: Vec<Bytes> = frames.into_iter().take(1).collect();
            head.push(Bytes::from_static(b"data: [DONE]\n\n"));
            let body = staged(head, None, Vec::new(), End::Close);
            (
                StatusCode::OK,
                with_type(ctx.headers, stream_type(dialect)),
                body,
            )
                .into_response()
        }
        // Responses: a completed response without output items.
        (Dialect::OpenAiResponses, Rendered::Whole(mut value)) => {
            value["output"] = json!([]);
            value["usage"]["output_tokens"] = json!(0);
            json_response(200, ctx.headers, &value)
        }
        (Dialect::OpenAiResponses, Rendered::Stream(frames)) => {
            let mut head: Vec<Bytes> = frames.into_iter().take(2).collect();
            head.push(sse_frame(
                dialect,
                "response.completed",
                &json!({"type": "response.completed", "sequence_number": 2,
                    "response": {"object": "response", "status": "completed", "output": [],
                        "error": null, "usage": {"input_tokens": 0, "output_tokens": 0}}}),
            ));
            let body = staged(head, None, Vec::new(), End::Close);
            (StatusCode::OK, with_type(ctx.headers, SSE), body).into_response()
        }
        (Dialect::Gemini, Rendered::Whole(mut value)) => {
            value["candidates"][0]["content"]["parts"] = json!([]);
            if let Some(c) = value["candidates"][0].as_object_mut() {
                c.remove("finishReason");
            }
            json_response(200, ctx.headers, &value)
        }
        (Dialect::Gemini, Rendered::Stream(_)) => {
            let empty = json!({"candidates": [{"content": {"parts": [], "role": "model"},
                "index": 0}]});
            let head = vec![sse_frame(dialect, "", &empty)];
            let body = staged(head, None, Vec::new(), End::Close);
            (StatusCode::OK, with_type(ctx.headers, SSE), body).into_response()
        }
    }
}

//! The client against throwaway local HTTP servers: what reaches the wire, and how each failure
//! is mapped.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Response, StatusCode};
use serde_json::json;

use super::fixtures::{self, CANARY_KEY};
use crate::llm::{ApiKey, Dialect, ModelClient, StopReason, StreamDelta, WireTarget, encode};
use crate::{Error, ErrorKind, RetrySignal};

#[derive(Clone)]
pub(super) struct Script {
    status: u16,
    headers: Vec<(&'static str, String)>,
    pub(super) body: Vec<Result<&'static str, &'static str>>,
    pub(super) delay: Duration,
    /// The pause before each chunk after the first.
    pub(super) gap: Duration,
}

impl Script {
    pub(super) fn new(status: u16, body: &'static str) -> Self {
        Self {
            status,
            headers: vec![("content-type", "application/json".into())],
            body: vec![Ok(body)],
            delay: Duration::ZERO,
            gap: Duration::from_millis(50),
        }
    }
    pub(super) fn header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.retain(|(n, _)| *n != name);
        self.headers.push((name, value.into()));
        self
    }
    pub(super) fn sse(self) -> Self {
        self.header("content-type", "text/event-stream")
    }
}

#[derive(Default)]
pub(super) struct Seen {
    pub(super) bodies: Vec<Bytes>,
    pub(super) headers: Vec<HeaderMap>,
}

impl Seen {
    /// Header `name` of the `i`th request, as text.
    pub(super) fn header(&self, i: usize, name: &str) -> Option<&str> {
        self.headers.get(i)?.get(name)?.to_str().ok()
    }
}

/// Serve the script on 127.0.0.1:0; returns the base URL and what the server received.
pub(super) async fn serve(script: Script) -> anyhow::Result<(String, Arc<Mutex<Seen>>)> {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let record = seen.clone();
    let app = Router::new().fallback(move |headers: HeaderMap, body: Bytes| {
        let script = script.clone();
        let record = record.clone();
        async move {
            if let Ok(mut s) = record.lock() {
                s.bodies.push(body);
                s.headers.push(headers);
            }
            tokio::time::sleep(script.delay).await;
            let chunks = script.body.into_iter().map(|c| match c {
                Ok(text) => Ok(Bytes::from_static(text.as_bytes())),
                Err(why) => Err(std::io::Error::other(why)),
            });
            // A pause before each later chunk lets the earlier ones reach the client first.
            let gap = script.gap;
            let paced = futures::StreamExt::then(
                futures::stream::iter(chunks.enumerate()),
                move |(i, c)| async move {
                    if i > 0 {
                        tokio::time::sleep(gap).await;
                    }
                    c
                },
            );
            let mut resp = Response::new(Body::from_stream(paced));
            *resp.status_mut() =
                StatusCode::from_u16(script.status).unwrap_or(StatusCode::IM_A_TEAPOT);
            for (k, v) in script.headers {
                if let Ok(v) = v.parse() {
                    resp.headers_mut().insert(k, v);
                }
            }
            resp
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok((format!("http://{addr}"), seen))
}

pub(super) fn openai(base: &str) -> WireTarget {
    WireTarget::new(Dialect::OpenAi, format!("{base}/v1"), "gpt-x")
        .with_key(ApiKey::new(CANARY_KEY))
}

fn anthropic(base: &str) -> WireTarget {
    WireTarget::new(Dialect::Anthropic, base, "claude-x").with_key(ApiKey::new(CANARY_KEY))
}

pub(super) async fn fail(script: Script, dialect: Dialect) -> anyhow::Result<Error> {
    let (base, _) = serve(script).await?;
    let target = if dialect == Dialect::Anthropic {
        anthropic(&base)
    } else {
        openai(&base)
    };
    let client = ModelClient::new()?;
    match client.send(&target, &fixtures::plain()).await {
        Ok(o) => anyhow::bail!("expected a failure, got {:?}", o.response),
        Err(e) => {
            let shown = format!("{e} {e:?} {}", e.for_model());
            assert!(!shown.contains(CANARY_KEY), "the key leaked: {shown}");
            Ok(e)
        }
    }
}

pub(super) fn throttled_after(e: &Error) -> Option<Option<Duration>> {
    match e {
        Error::Retry(RetrySignal::Throttled { retry_after, .. }) => Some(*retry_after),
        _ => None,
    }
}

pub(super) const OK_BODY: &str = r#"{"id":"c1","object":"chat.completion","model":"gpt-x","choices":[{"index":0,"message":{"role":"assistant","content":"Sunny."},"finish_reason":"stop"}],"usage":{"prompt_tokens":20,"completion_tokens":2,"total_tokens":22}}"#;

#[tokio::test]
async fn sends_the_encoded_bytes_and_reads_rate_headers() -> anyhow::Result<()> {
    let script = Script::new(200, OK_BODY)
        .header("x-ratelimit-remaining-tokens", "1000")
        .header("x-ratelimit-reset-tokens", "1s")
        .header("x-ratelimit-remaining-requests", "9");
    let (base, seen) = serve(script).await?;
    let target = openai(&base);
    let enc = encode(&target, &fixtures::with_tools())?;
    let out = ModelClient::new()?.send_encoded(&enc).await?;
    assert_eq!(out.response.text(), "Sunny.");
    assert_eq!(out.response.stop, StopReason::EndTurn);
    assert_eq!(out.response.usage.input, 20);
    let rate = out
        .rate
        .ok_or_else(|| anyhow::anyhow!("no rate observation"))?;
    assert_eq!(rate.tokens.remaining, Some(1000));
    assert_eq!(rate.tokens.reset, Some(Duration::from_secs(1)));
    assert_eq!(rate.requests.remaining, Some(9));
    let seen = seen.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
    assert_eq!(seen.bodies[0], enc.body);
    assert_eq!(
        seen.header(0, "authorization"),
        Some(format!("Bearer {CANARY_KEY}").as_str())
    );
    Ok(())
}

#[tokio::test]
async fn throttling_reads_each_kind_of_wait() -> anyhow::Result<()> {
    let rl = r#"{"error":{"message":"Rate limit reached for gpt-x","type":"tokens","param":null,"code":"rate_limit_exceeded"}}"#;
    let e = fail(
        Script::new(429, rl)
            .header("retry-after-ms", "1500")
            .header("retry-after", "9"),
        Dialect::OpenAi,
    )
    .await?;
    assert_eq!(throttled_after(&e), Some(Some(Duration::from_millis(1500))));
    let e = fail(
        Script::new(429, rl).header("retry-after", "7"),
        Dialect::OpenAi,
    )
    .await?;
    assert_eq!(throttled_after(&e), Some(Some(Duration::from_secs(7))));
    let date = (chrono::Utc::now() + chrono::Duration::seconds(30))
        .format("%a, %d %b %Y %H:%M:%S GMT")
        .to_string();
    let e = fail(
        Script::new(429, rl).header("retry-after", date),
        Dialect::OpenAi,
    )
    .await?;
    let wait = throttled_after(&e).flatten().unwrap_or_default();
    assert!(
        (Duration::from_secs(27)..=Duration::from_secs(30)).contains(&wait),
        "{wait:?}"
    );
    let e = fail(
        Script::new(429, rl)
            .header("x-ratelimit-remaining-tokens", "0")
            .header("x-ratelimit-reset-tokens", "6m0s")
            .header("x-ratelimit-remaining-requests", "5")
            .header("x-ratelimit-reset-requests", "250ms"),
        Dialect::OpenAi,
    )
    .await?;
    assert_eq!(throttled_after(&e), Some(Some(Duration::from_secs(360))));
    let reset = (chrono::Utc::now() + chrono::Duration::seconds(20)).to_rfc3339();
    let body = r#"{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}"#;
    let e = fail(
        Script::new(429, body)
            .header("anthropic-ratelimit-input-tokens-remaining", "0")
            .header("anthropic-ratelimit-input-tokens-reset", reset),
        Dialect::Anthropic,
    )
    .await?;
    let wait = throttled_after(&e).flatten().unwrap_or_default();
    assert!(
        (Duration::from_secs(17)..=Duration::from_secs(20)).contains(&wait),
        "{wait:?}"
    );
    Ok(())
}

#[tokio::test]
async fn overload_server_errors_and_bad_requests_map_to_their_kinds() -> anyhow::Result<()> {
    let overloaded =
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    // Anthropic's 529 `overloaded_error` is an outage like a 503: transient, not a throttle.
    let e = fail(Script::new(529, overloaded), Dialect::Anthropic).await?;
    assert!(
        matches!(&e, Error::Retry(RetrySignal::Transient { detail, .. }) if detail.contains("HTTP 529")),
        "{e:?}"
    );
    let e = fail(
        Script::new(
            500,
            r#"{"type":"error","error":{"type":"api_error","message":"Internal"}}"#,
        ),
        Dialect::Anthropic,
    )
    .await?;
    assert!(
        matches!(e, Error::Retry(RetrySignal::Transient { ref service, .. }) if service == "anthropic")
    );
    let e = fail(
        Script::new(502, "<html>bad gateway</html>").header("content-type", "text/html"),
        Dialect::OpenAi,
    )
    .await?;
    assert!(matches!(e, Error::Retry(RetrySignal::Transient { .. })));
    let bad = r#"{"error":{"message":"Invalid type for 'max_completion_tokens'","type":"invalid_request_error","param":"max_completion_tokens","code":"invalid_type"}}"#;
    match fail(Script::new(400, bad), Dialect::OpenAi).await? {
        Error::InvalidInput {
            parameter, reason, ..
        } => {
            assert_eq!(parameter, "max_completion_tokens");
            assert!(reason.contains("Invalid type"), "{reason}");
        }
        other => anyhow::bail!("unexpected {other:?}"),
    }
    let bad = r#"{"type":"error","error":{"type":"invalid_request_error","message":"messages: roles must alternate"}}"#;
    let e = fail(Script::new(400, bad), Dialect::Anthropic).await?;
    assert!(matches!(e, Error::InvalidInput { ref parameter, .. } if parameter == "request"));
    assert!(e.to_string().contains("roles must alternate"));
    Ok(())
}

#[tokio::test]
async fn authentication_and_quota_failures_are_final_and_never_show_the_key() -> anyhow::Result<()>
{
    let echo: &'static str = Box::leak(
        format!(r#"{{"error":{{"message":"Incorrect API key provided: {CANARY_KEY}.","type":"invalid_request_error","code":"invalid_api_key"}}}}"#)
            .into_boxed_str(),
    );
    match fail(Script::new(401, echo), Dialect::OpenAi).await? {
        Error::ExternalService { service, step, .. } => {
            assert_eq!(
                (service.as_str(), step.as_str()),
                ("openai", "authentication")
            );
        }
        other => anyhow::bail!("unexpected {other:?}"),
    }
    let quota = r#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#;
    let e = fail(
        Script::new(429, quota).header("retry-after", "1"),
        Dialect::OpenAi,
    )
    .await?;
    assert_eq!(e.kind(), ErrorKind::ExternalService);
    assert!(!e.is_retry_signal());
    Ok(())
}

#[tokio::test]
async fn timeouts_and_refused_connections_are_transient() -> anyhow::Result<()> {
    let mut slow = Script::new(200, OK_BODY);
    slow.delay = Duration::from_secs(3);
    let (base, _) = serve(slow).await?;
    let client = ModelClient::builder()
        .request_timeout(Duration::from_millis(300))
        .build()?;
    let e = client.send(&openai(&base), &fixtures::plain()).await.err();
    assert!(
        matches!(e, Some(Error::Retry(RetrySignal::Transient { .. }))),
        "{e:?}"
    );
    let closed = {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        l.local_addr()?
    };
    let e = client
        .send(&openai(&format!("http://{closed}")), &fixtures::plain())
        .await
        .err();
    assert!(
        matches!(e, Some(Error::Retry(RetrySignal::Transient { .. }))),
        "{e:?}"
    );
    Ok(())
}

const OPENAI_SSE: &str = "data: {\"model\":\"gpt-x\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hel\"},\"finish_reason\":null}]}\n\n\
data: {\"model\":\"gpt-x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"stop\"}]}\n\n\
data: {\"model\":\"gpt-x\",\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2}}\n\n\
data: [DONE]\n\n";

#[tokio::test]
async fn streams_deltas_over_http() -> anyhow::Result<()> {
    let (base, seen) = serve(Script::new(200, OPENAI_SSE).sse()).await?;
    let mut deltas = Vec::new();
    let out = ModelClient::new()?
        .send_streaming(&openai(&base), &fixtures::plain(), |d| deltas.push(d))
        .await?;
    assert_eq!(out.response.text(), "Hello");
    assert_eq!(out.response.usage.output, 2);
    assert_eq!(
        deltas,
        vec![
            StreamDelta::Text("Hel".into()),
            StreamDelta::Text("lo".into())
        ]
    );
    let seen = seen.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
    let sent: serde_json::Value = serde_json::from_slice(&seen.bodies[0])?;
    assert_eq!(sent["stream"], true);
    assert_eq!(sent["stream_options"], json!({"include_usage": true}));
    Ok(())
}

#[tokio::test]
async fn a_stream_that_breaks_after_an_event_is_not_replayed() -> anyhow::Result<()> {
    let mut script = Script::new(200, "").sse();
    script.body = vec![
        Ok(
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"function\":{\"name\":\"get_weather\",\"arguments\":\"\"}}]}}]}\n\n",
        ),
        Err("connection reset"),
    ];
    let (base, _) = serve(script).await?;
    let e = ModelClient::new()?
        .send_streaming(&openai(&base), &fixtures::with_tools(), |_| {})
        .await
        .err();
    assert!(
        matches!(e, Some(Error::ExternalService { ref step, .. }) if step == "stream"),
        "{e:?}"
    );

    let anthropic_sse = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-x\",\"usage\":{\"input_tokens\":3}}}\n\n\
event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
    let (base, _) = serve(Script::new(200, anthropic_sse).sse()).await?;
    let e = ModelClient::new()?
        .send_streaming(&anthropic(&base), &fixtures::plain(), |_| {})
        .await
        .err();
    // `message_start` carries no content: the error is classified like an HTTP failure
    // (overloaded: transient) and the request may be sent again.
    assert!(
        matches!(e, Some(Error::Retry(RetrySignal::Transient { .. }))),
        "{e:?}"
    );
    Ok(())
}

#[tokio::test]
async fn a_server_that_ignores_stream_still_answers() -> anyhow::Result<()> {
    let (base, _) = serve(Script::new(200, OK_BODY)).await?;
    let mut deltas = Vec::new();
    let out = ModelClient::new()?
        .send_streaming(&openai(&base), &fixtures::plain(), |d| deltas.push(d))
        .await?;
    assert_eq!(out.response.text(), "Sunny.");
    assert_eq!(deltas, vec![StreamDelta::Text("Sunny.".into())]);
    Ok(())
}

#[tokio::test]
async fn max_tokens_is_not_an_error_here() -> anyhow::Result<()> {
    let body = r#"{"type":"message","model":"claude-x","content":[{"type":"text","text":"Partial"}],"stop_reason":"max_tokens","usage":{"input_tokens":5,"output_tokens":16}}"#;
    let (base, seen) = serve(Script::new(200, body)).await?;
    let out = ModelClient::new()?
        .send(&anthropic(&base), &fixtures::plain())
        .await?;
    assert_eq!(out.response.stop, StopReason::MaxTokens);
    let seen = seen.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
    assert_eq!(seen.header(0, "x-api-key"), Some(CANARY_KEY));
    assert_eq!(seen.header(0, "anthropic-version"), Some("2023-06-01"));
    Ok(())
}

#[tokio::test]
async fn text_protocol_tools_look_native_to_the_caller() -> anyhow::Result<()> {
    let body = r#"{"model":"local","choices":[{"message":{"role":"assistant","content":"{\"tool_calls\":[{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Lima\"}}]}"},"finish_reason":"stop"}]}"#;
    let (base, seen) = serve(Script::new(200, body)).await?;
    let target = WireTarget::new(Dialect::OpenAiCompatible, format!("{base}/v1"), "local")
        .with_native_tools(false);
    let out = ModelClient::new()?
        .send(&target, &fixtures::tool_round())
        .await?;
    assert_eq!(out.response.stop, StopReason::ToolUse);
    let calls = out.response.tool_calls();
    assert_eq!((calls[0].id, calls[0].name), ("call_3", "get_weather"));
    assert_eq!(calls[0].arguments, &json!({"city": "Lima"}));
    let seen = seen.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
    let sent: serde_json::Value = serde_json::from_slice(&seen.bodies[0])?;
    assert!(sent.get("tools").is_none());
    assert!(seen.headers[0].get("authorization").is_none());
    Ok(())
}

#[tokio::test]
async fn a_malformed_endpoint_is_a_clear_error_not_a_retry() -> anyhow::Result<()> {
    let client = ModelClient::new()?;
    let target = WireTarget::new(Dialect::OpenAi, "not a url", "gpt-x");
    let Err(err) = client.send(&target, &fixtures::plain()).await else {
        anyhow::bail!("a request to a malformed endpoint was sent");
    };
    assert!(!matches!(err, Error::Retry(_)), "not retried: {err:?}");
    assert!(
        err.to_string()
            .contains("`not a url/chat/completions` is not a valid URL"),
        "{err}"
    );
    Ok(())
}

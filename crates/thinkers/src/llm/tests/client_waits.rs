//! The client's waits, stalls, unreadable answers and refusals against throwaway local servers:
//! a server's `Retry-After` on every retryable status, the idle timeout of a stream, a body that
//! is not JSON, an empty key, a redirect and an unknown model.

use std::time::Duration;

use super::client::{OK_BODY, Script, fail, openai, serve, throttled_after};
use super::fixtures::{self, CANARY_KEY};
use crate::llm::{ApiKey, Dialect, ModelClient, StreamDelta, WireTarget};
use crate::{Error, RetrySignal};

fn transient_after(e: &Error) -> Option<Option<Duration>> {
    match e {
        Error::Retry(RetrySignal::Transient { retry_after, .. }) => Some(*retry_after),
        _ => None,
    }
}

#[tokio::test]
async fn every_retryable_status_carries_the_servers_wait() -> anyhow::Result<()> {
    let body = r#"{"error":{"message":"busy","type":"server_error"}}"#;
    for status in [500, 502, 503, 504, 529, 408, 409] {
        let e = fail(
            Script::new(status, body).header("retry-after", "3"),
            Dialect::OpenAi,
        )
        .await?;
        assert_eq!(
            transient_after(&e),
            Some(Some(Duration::from_secs(3))),
            "HTTP {status}: {e:?}"
        );
        let e = fail(
            Script::new(status, body).header("retry-after-ms", "1500"),
            Dialect::Anthropic,
        )
        .await?;
        assert_eq!(
            transient_after(&e),
            Some(Some(Duration::from_millis(1500))),
            "HTTP {status}: {e:?}"
        );
    }
    let e = fail(
        Script::new(429, body).header("retry-after", "2"),
        Dialect::Anthropic,
    )
    .await?;
    assert_eq!(
        throttled_after(&e),
        Some(Some(Duration::from_secs(2))),
        "{e:?}"
    );
    Ok(())
}

const OPENAI_FIRST: &str = "data: {\"model\":\"gpt-x\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hel\"},\"finish_reason\":null}]}\n\n";
const OPENAI_REST: &str = "data: {\"model\":\"gpt-x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";

#[tokio::test]
async fn a_stream_that_stalls_after_content_fails_at_the_idle_timeout() -> anyhow::Result<()> {
    let mut script = Script::new(200, "").sse();
    script.body = vec![Ok(OPENAI_FIRST), Ok(OPENAI_REST)];
    script.gap = Duration::from_secs(30);
    let (base, seen) = serve(script).await?;
    let client = ModelClient::builder()
        .request_timeout(Duration::from_secs(60))
        .stream_idle_timeout(Duration::from_millis(300))
        .build()?;
    let started = std::time::Instant::now();
    let mut deltas = Vec::new();
    let e = client
        .send_streaming(&openai(&base), &fixtures::plain(), |d| deltas.push(d))
        .await
        .err();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    match &e {
        Some(Error::ExternalService { step, detail, .. }) => {
            assert_eq!(step, "stream");
            assert!(detail.contains("no event for"), "{detail}");
            assert!(detail.contains("never replayed"), "{detail}");
        }
        other => anyhow::bail!("expected a final stream failure, got {other:?}"),
    }
    assert_eq!(deltas, vec![StreamDelta::Text("Hel".into())]);
    assert_eq!(
        seen.lock()
            .map_err(|_| anyhow::anyhow!("poisoned"))?
            .bodies
            .len(),
        1
    );
    Ok(())
}

#[tokio::test]
async fn the_wait_for_the_first_content_is_the_attempts_not_the_idle_timeout() -> anyhow::Result<()>
{
    // A reasoning model thinking silently: the head and the first event come late.
    let mut script = Script::new(200, "").sse();
    script.body = vec![Ok(OPENAI_FIRST), Ok(OPENAI_REST)];
    script.delay = Duration::from_millis(900);
    let (base, _) = serve(script).await?;
    let client = ModelClient::builder()
        .request_timeout(Duration::from_secs(20))
        .stream_idle_timeout(Duration::from_millis(300))
        .build()?;
    let out = client
        .send_streaming(&openai(&base), &fixtures::plain(), |_| {})
        .await?;
    assert_eq!(out.response.text(), "Hello");
    Ok(())
}

#[tokio::test]
async fn a_body_that_is_not_json_is_unreadable_and_names_its_content_type() -> anyhow::Result<()> {
    let e = fail(
        Script::new(200, "<html><body>Welcome to nginx</body></html>")
            .header("content-type", "text/html"),
        Dialect::OpenAi,
    )
    .await?;
    match &e {
        Error::Retry(RetrySignal::UnreadableAnswer { detail, .. }) => {
            assert!(detail.contains("content-type `text/html`"), "{detail}");
            assert!(detail.contains("/v1/chat/completions"), "{detail}");
        }
        other => anyhow::bail!("expected an unreadable answer, got {other:?}"),
    }
    Ok(())
}

#[tokio::test]
async fn an_empty_key_is_never_sent() -> anyhow::Result<()> {
    let (base, seen) = serve(Script::new(200, OK_BODY)).await?;
    let target =
        WireTarget::new(Dialect::OpenAi, format!("{base}/v1"), "gpt-x").with_key(ApiKey::new(""));
    let Err(err) = ModelClient::new()?.send(&target, &fixtures::plain()).await else {
        anyhow::bail!("a request with an empty key was sent");
    };
    assert!(err.to_string().contains("empty API key"), "{err}");
    assert!(
        seen.lock()
            .map_err(|_| anyhow::anyhow!("poisoned"))?
            .bodies
            .is_empty()
    );
    Ok(())
}

#[tokio::test]
async fn a_redirect_names_its_target_without_the_key() -> anyhow::Result<()> {
    let e = fail(
        Script::new(307, "").header(
            "location",
            format!("https://elsewhere.example/v1/chat/completions?key={CANARY_KEY}"),
        ),
        Dialect::OpenAi,
    )
    .await?;
    match &e {
        Error::ExternalService { step, detail, .. } => {
            assert_eq!(step, "redirect");
            assert!(detail.contains("elsewhere.example"), "{detail}");
            assert!(detail.contains("key=<redacted>"), "{detail}");
        }
        other => anyhow::bail!("expected a redirect failure, got {other:?}"),
    }
    Ok(())
}

#[tokio::test]
async fn an_unknown_model_is_a_configuration_error_naming_it() -> anyhow::Result<()> {
    let body = r#"{"error":{"message":"The model `gpt-x` does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}"#;
    let e = fail(Script::new(404, body), Dialect::OpenAi).await?;
    match &e {
        Error::ExternalService { step, detail, .. } => {
            assert_eq!(step, "configuration");
            assert!(
                detail.contains("model `gpt-x` not found at provider `openai`"),
                "{detail}"
            );
        }
        other => anyhow::bail!("expected a configuration error, got {other:?}"),
    }
    Ok(())
}

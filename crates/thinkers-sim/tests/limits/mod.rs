//! Rate limits (TPM, RPM) with the providers' 429 bodies and headers, and latency.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use thinkers_sim::{Profile, SimConfig, SimModel};

use crate::support::*;

fn user(text: &str) -> Value {
    json!({"role": "user", "content": text})
}

fn limited(tpm: u64, rpm: u64) -> SimConfig {
    SimConfig::builder()
        .model(SimModel::new("gpt-limited").tpm(tpm).rpm(rpm))
        .model(SimModel::new("claude-limited").tpm(tpm).rpm(rpm))
        .build()
        .unwrap()
}

#[tokio::test]
async fn tpm_exceeded_gets_openai_429_with_headers() {
    let sim = start(limited(600, 100)).await;
    let body = json!({"model": "gpt-limited", "max_completion_tokens": 400, "messages": [user("hello there")]});
    let first = openai(&sim, &body).await;
    assert_eq!(first.status, 200, "{}", first.body);
    assert_eq!(
        first.header("x-ratelimit-limit-tokens").as_deref(),
        Some("600")
    );
    assert_eq!(
        first.header("x-ratelimit-limit-requests").as_deref(),
        Some("100")
    );
    assert_eq!(
        first.header("x-ratelimit-remaining-requests").as_deref(),
        Some("99")
    );
    let used = first.body["usage"]["total_tokens"].as_u64().unwrap();
    let remaining: u64 = first
        .header("x-ratelimit-remaining-tokens")
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(remaining, 600 - used, "unused output is given back");
    assert!(
        first
            .header("x-ratelimit-reset-tokens")
            .unwrap()
            .ends_with('s')
    );

    // Keep asking for 400 output tokens until what is left of the window cannot hold them.
    let mut refused = None;
    for _ in 0..40 {
        let r = openai(&sim, &body).await;
        if r.status == 429 {
            refused = Some(r);
            break;
        }
    }
    let r = refused.expect("the TPM limit must bite");
    assert_openai_schema("ErrorResponse", &r.body);
    assert_eq!(r.body["error"]["type"], "tokens");
    assert_eq!(r.body["error"]["code"], "rate_limit_exceeded");
    assert!(r.body["error"]["param"].is_null());
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("tokens per min (TPM): Limit 600")
    );
    let retry: u64 = r.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry));
    let retry_ms: u64 = r.header("retry-after-ms").unwrap().parse().unwrap();
    assert!(retry_ms > 50_000 && retry_ms <= 60_000, "{retry_ms}");
    let reset = r.header("x-ratelimit-reset-tokens").unwrap();
    assert!(reset.ends_with('s'), "{reset}");
    assert!(r.header("x-ratelimit-remaining-tokens").is_some());
    assert_eq!(sim.stats().model("gpt-limited").rate_limited, 1);

    // A request larger than the whole limit is "too large" and carries no retry-after.
    let huge =
        json!({"model": "gpt-limited", "max_completion_tokens": 5_000, "messages": [user("x")]});
    let r = openai(&sim, &huge).await;
    assert_eq!(r.status, 429);
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("Request too large")
    );
    assert!(r.header("retry-after").is_none());

    // Reset empties the window.
    sim.reset();
    assert_eq!(openai(&sim, &body).await.status, 200);
}

#[tokio::test]
async fn rpm_exceeded_gets_anthropic_429_with_headers() {
    let sim = start(limited(1_000_000, 2)).await;
    let body = json!({"model": "claude-limited", "max_tokens": 100, "messages": [user("hi")]});
    let first = anthropic(&sim, &body).await;
    assert_eq!(first.status, 200);
    assert_eq!(
        first
            .header("anthropic-ratelimit-requests-limit")
            .as_deref(),
        Some("2")
    );
    assert_eq!(
        first
            .header("anthropic-ratelimit-requests-remaining")
            .as_deref(),
        Some("1")
    );
    for family in ["input-tokens", "output-tokens", "tokens"] {
        assert_eq!(
            first
                .header(&format!("anthropic-ratelimit-{family}-limit"))
                .as_deref(),
            Some("1000000")
        );
        let reset = first
            .header(&format!("anthropic-ratelimit-{family}-reset"))
            .unwrap();
        assert!(
            chrono::DateTime::parse_from_rfc3339(&reset).is_ok(),
            "{reset}"
        );
    }
    assert_eq!(anthropic(&sim, &body).await.status, 200);
    let r = anthropic(&sim, &body).await;
    assert_eq!(r.status, 429);
    assert_eq!(r.body["type"], "error");
    assert_eq!(r.body["error"]["type"], "rate_limit_error");
    assert_eq!(
        r.header("anthropic-ratelimit-requests-remaining")
            .as_deref(),
        Some("0")
    );
    let reset = r.header("anthropic-ratelimit-requests-reset").unwrap();
    let reset = chrono::DateTime::parse_from_rfc3339(&reset).unwrap();
    assert!(reset > chrono::Utc::now());
    let retry: u64 = r.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry));
    // The OpenAI dialect reports the requests limit with its own type.
    let r = openai(
        &sim,
        &json!({"model": "claude-limited", "messages": [user("hi")]}),
    )
    .await;
    assert_eq!(r.status, 429);
    assert_eq!(r.body["error"]["type"], "requests");
    assert_eq!(sim.stats().model("claude-limited").rate_limited, 2);
}

#[tokio::test]
async fn latency_comes_from_the_profile() {
    let sim = start(
        SimConfig::builder()
            .model(SimModel::new("slow").profile(Profile {
                latency_ms: [150, 150],
                ..Profile::default()
            }))
            .build()
            .unwrap(),
    )
    .await;
    let started = Instant::now();
    let r = openai(&sim, &json!({"model": "slow", "messages": [user("hi")]})).await;
    assert_eq!(r.status, 200);
    assert!(started.elapsed() >= Duration::from_millis(150));
}

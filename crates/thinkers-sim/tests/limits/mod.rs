//! Rate limits (RPM, TPM, ITPM, OTPM, concurrency; sliding, fixed, token bucket) with the
//! providers' 429 bodies and headers, the stats they leave, and latency.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use thinkers_sim::limits::{LimitKind, LimitShape};
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

/// The number in a header.
fn number(r: &Reply, name: &str) -> u64 {
    r.header(name)
        .unwrap_or_else(|| panic!("no {name}"))
        .parse()
        .unwrap()
}

#[tokio::test]
async fn openai_headers_state_the_per_minute_figure_over_a_short_window() {
    // 6,000 tokens and 60 requests per minute, enforced per sliding 10 s: 1,000 tokens and 10
    // requests in any 10 s.
    let sim = start(
        SimConfig::builder()
            .model(
                SimModel::new("gpt-windowed")
                    .tpm(6_000)
                    .rpm(60)
                    .limit_window(Duration::from_secs(10)),
            )
            .build()
            .unwrap(),
    )
    .await;
    let body =
        json!({"model": "gpt-windowed", "max_completion_tokens": 900, "messages": [user("hi")]});
    let first = openai(&sim, &body).await;
    assert_eq!(first.status, 200, "{}", first.body);
    assert_eq!(number(&first, "x-ratelimit-limit-tokens"), 6_000);
    assert_eq!(number(&first, "x-ratelimit-limit-requests"), 60);
    assert_eq!(number(&first, "x-ratelimit-remaining-requests"), 9);
    let used = first.body["usage"]["total_tokens"].as_u64().unwrap();
    assert_eq!(number(&first, "x-ratelimit-remaining-tokens"), 1_000 - used);
    let reset = first.header("x-ratelimit-reset-tokens").unwrap();
    assert!(reset.ends_with('s') && reset != "0s", "{reset}");
    // The same headers on the Responses API.
    let r = client()
        .post(format!("{}/responses", sim.openai_base_url()))
        .bearer_auth("sk-test")
        .json(&json!({"model": "gpt-windowed", "input": "hi", "max_output_tokens": 100}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-ratelimit-limit-tokens"], "6000");
    assert_eq!(r.headers()["x-ratelimit-remaining-requests"], "8");
    // Soon what is left of the 10 s cannot hold another 900 of output.
    let mut refused = None;
    for _ in 0..8 {
        let r = openai(&sim, &body).await;
        if r.status == 429 {
            refused = Some(r);
            break;
        }
    }
    let r = refused.expect("the 10 s share must bite");
    assert_eq!(r.body["error"]["type"], "tokens");
    assert_eq!(number(&r, "x-ratelimit-limit-tokens"), 6_000);
    let asked = 900 + first.body["usage"]["prompt_tokens"].as_u64().unwrap();
    assert!(number(&r, "x-ratelimit-remaining-tokens") < asked);
    let retry_ms = number(&r, "retry-after-ms");
    assert!(retry_ms > 8_000 && retry_ms <= 10_000, "{retry_ms}");
    assert_eq!(number(&r, "retry-after"), retry_ms.div_ceil(1000));
    let stats = sim.stats().model("gpt-windowed");
    assert_eq!(stats.rate_limited_by(LimitKind::Tokens), 1);
    assert_eq!(stats.admitted + stats.rate_limited, stats.requests);
}

#[tokio::test]
async fn anthropic_families_carry_itpm_and_otpm_and_refuse_apart() {
    let sim = start(
        SimConfig::builder()
            .model(
                SimModel::new("claude-split")
                    .rpm(50)
                    .itpm(30_000)
                    .otpm(1_000),
            )
            .build()
            .unwrap(),
    )
    .await;
    let body = json!({"model": "claude-split", "max_tokens": 600, "messages": [user("hello")]});
    let first = anthropic(&sim, &body).await;
    assert_eq!(first.status, 200, "{}", first.body);
    let h = |name: &str| number(&first, &format!("anthropic-ratelimit-{name}"));
    assert_eq!(h("requests-limit"), 50);
    assert_eq!(h("requests-remaining"), 49);
    assert_eq!(h("input-tokens-limit"), 30_000);
    assert_eq!(h("output-tokens-limit"), 1_000);
    let input = first.body["usage"]["input_tokens"].as_u64().unwrap();
    let output = first.body["usage"]["output_tokens"].as_u64().unwrap();
    assert_eq!(h("input-tokens-remaining"), 30_000 - input);
    assert_eq!(h("output-tokens-remaining"), 1_000 - output);
    // `tokens-*` reports the most restrictive: the output limit.
    assert_eq!(h("tokens-limit"), 1_000);
    for family in ["requests", "tokens", "input-tokens", "output-tokens"] {
        let reset = first
            .header(&format!("anthropic-ratelimit-{family}-reset"))
            .unwrap();
        assert!(
            chrono::DateTime::parse_from_rfc3339(&reset).is_ok(),
            "{reset}"
        );
    }
    // A request asking more output than is left of the minute is refused by OTPM while input
    // has room, until the first request's output leaves the window.
    let greedy = json!({"model": "claude-split", "max_tokens": 1_000, "messages": [user("hello")]});
    let r = anthropic(&sim, &greedy).await;
    assert_eq!(r.status, 429, "{}", r.body);
    assert_eq!(r.body["error"]["type"], "rate_limit_error");
    let message = r.body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("1000 output tokens per minute"),
        "{message}"
    );
    let retry = number(&r, "retry-after");
    assert!((55..=60).contains(&retry), "{retry}");
    assert_eq!(
        number(&r, "anthropic-ratelimit-output-tokens-remaining"),
        1_000 - output
    );
    assert!(r.header("retry-after-ms").is_none());
    // Input-heavy asks are refused by ITPM instead.
    let long = "word ".repeat(30_000);
    let r = anthropic(
        &sim,
        &json!({"model": "claude-split", "max_tokens": 1, "messages": [user(&long)]}),
    )
    .await;
    assert_eq!(r.status, 429);
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("input tokens per minute")
    );
    let stats = sim.stats().model("claude-split");
    assert_eq!(stats.rate_limited_by(LimitKind::OutputTokens), 1);
    assert_eq!(stats.rate_limited_by(LimitKind::InputTokens), 1);
    assert_eq!(stats.admitted, 1);
    assert_eq!(
        (stats.settled_input_tokens, stats.settled_output_tokens),
        (input, output)
    );
}

#[tokio::test]
async fn a_token_bucket_429_says_the_true_wait() {
    // 6 requests per minute: a burst of 6, then one every 10 s.
    let sim = start(
        SimConfig::builder()
            .model(
                SimModel::new("gpt-bucket")
                    .rpm(6)
                    .limit_shape(LimitShape::TokenBucket),
            )
            .build()
            .unwrap(),
    )
    .await;
    let body = json!({"model": "gpt-bucket", "messages": [user("hi")]});
    let started = Instant::now();
    for _ in 0..6 {
        assert_eq!(openai(&sim, &body).await.status, 200);
    }
    let r = openai(&sim, &body).await;
    let elapsed = u64::try_from(started.elapsed().as_millis()).unwrap();
    assert_eq!(r.status, 429);
    assert_eq!(r.body["error"]["type"], "requests");
    let retry_ms = number(&r, "retry-after-ms");
    assert!(
        retry_ms <= 10_000 && retry_ms + elapsed + 50 >= 10_000,
        "{retry_ms} after {elapsed} ms"
    );
    assert_eq!(number(&r, "retry-after"), retry_ms.div_ceil(1000));
    assert_eq!(number(&r, "x-ratelimit-limit-requests"), 6);
    assert_eq!(number(&r, "x-ratelimit-remaining-requests"), 0);
}

#[tokio::test]
async fn concurrency_refuses_the_request_over_the_limit_until_the_first_is_sent() {
    let sim = start(
        SimConfig::builder()
            .model(SimModel::new("one-at-a-time").max_concurrency(1))
            .build()
            .unwrap(),
    )
    .await;
    let body = json!({"model": "one-at-a-time", "max_tokens": 50, "stream": true, "messages": [user("hi")]});
    // The head of a slow stream arrives at once; the request stays in flight until its body ends.
    let slow = client()
        .post(format!("{}/v1/messages", sim.base_url()))
        .header("x-api-key", "sk-ant-test")
        .header("anthropic-version", "2023-06-01")
        .header("x-sim-fault", "slow_first_event; hang_ms=400")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(slow.status(), 200);
    let plain = json!({"model": "one-at-a-time", "max_tokens": 50, "messages": [user("hi")]});
    let r = anthropic(&sim, &plain).await;
    assert_eq!(r.status, 429, "{}", r.body);
    assert_eq!(r.body["error"]["type"], "rate_limit_error");
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("1 concurrent requests")
    );
    assert_eq!(number(&r, "retry-after"), 1);
    let r = openai(&sim, &plain).await;
    assert_eq!(r.status, 429);
    assert_eq!(r.body["error"]["type"], "requests");
    // Once the stream has been read to its end, the next request is admitted.
    let (events, _) = events(slow).await;
    assert!(!events.is_empty());
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(anthropic(&sim, &plain).await.status, 200);
    let stats = sim.stats().model("one-at-a-time");
    assert_eq!(stats.rate_limited_by(LimitKind::Concurrency), 2);
    assert_eq!(stats.peak_in_flight, 1);
    assert_eq!(stats.admitted, 2);
}

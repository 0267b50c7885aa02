//! Prompt caching over real HTTP, per dialect: a write then a read with each dialect's usage
//! fields, nothing below the minimum, a miss after a changed byte, Anthropic's lookback and its
//! limit of four breakpoints, cache reads left out of (or charged to) `itpm`, and the stats.
//! Expiry is tested on the cache itself, with its clock (`src/cache/tests.rs`).

use serde_json::{Value, json};
use thinkers_sim::limits::LimitKind;
use thinkers_sim::{Sim, SimConfig, SimModel};

use crate::support::*;

/// About 1550 tokens of stable prefix (6200 bytes).
fn big() -> String {
    "The cached part of the prompt. ".repeat(200)
}

fn sim_config() -> SimConfig {
    SimConfig::builder()
        .model(SimModel::new("claude-cache"))
        .model(SimModel::new("claude-itpm").itpm(2000))
        .model(
            SimModel::new("claude-itpm-reads")
                .itpm(2000)
                .cache_reads_count(true),
        )
        .model(SimModel::new("claude-nocache").prompt_cache(false))
        .model(SimModel::new("gpt-cache"))
        .model(SimModel::new("gemini-flash-sim"))
        .model(SimModel::new("gemini-pro-sim").cache_min_tokens(4096))
        .model(SimModel::new("anthropic.claude-cache-v1:0"))
        .seed(3)
        .build()
        .unwrap()
}

fn cached_system(model: &str, system: &str, question: &str) -> Value {
    json!({
        "model": model,
        "max_tokens": 64,
        "system": [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": question}]
    })
}

fn u(body: &Value, pointer: &str) -> u64 {
    body.pointer(pointer)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("{pointer} missing in {body}"))
}

/// Input tokens of an Anthropic body, by `count_tokens`.
async fn count(sim: &Sim, body: &Value) -> u64 {
    let mut body = body.clone();
    body.as_object_mut().unwrap().remove("max_tokens");
    let resp = client()
        .post(format!("{}/v1/messages/count_tokens", sim.base_url()))
        .header("x-api-key", "sk-ant-test")
        .header("anthropic-version", "2023-06-01")
        .json(&body)
        .send()
        .await
        .unwrap();
    resp.json::<Value>().await.unwrap()["input_tokens"]
        .as_u64()
        .unwrap()
}

#[tokio::test]
async fn anthropic_writes_then_reads_a_marked_prefix() {
    let sim = start(sim_config()).await;
    let body = cached_system("claude-cache", &big(), "What is a seat?");
    let total = count(&sim, &body).await;

    let first = anthropic(&sim, &body).await;
    assert_eq!(first.status, 200, "{}", first.body);
    let usage = &first.body["usage"];
    let written = u(usage, "/cache_creation_input_tokens");
    assert!(written >= 1024, "{usage}");
    assert_eq!(u(usage, "/cache_read_input_tokens"), 0);
    assert_eq!(
        u(usage, "/cache_creation/ephemeral_5m_input_tokens"),
        written
    );
    assert_eq!(u(usage, "/cache_creation/ephemeral_1h_input_tokens"), 0);
    assert_eq!(u(usage, "/input_tokens") + written, total, "{usage}");

    let second = anthropic(&sim, &body).await;
    let usage = &second.body["usage"];
    assert_eq!(u(usage, "/cache_read_input_tokens"), written, "{usage}");
    assert_eq!(u(usage, "/cache_creation_input_tokens"), 0);
    assert_eq!(u(usage, "/input_tokens") + written, total);

    // A different question after the breakpoint still reads the prefix.
    let other = anthropic(&sim, &cached_system("claude-cache", &big(), "And a chair?")).await;
    assert_eq!(u(&other.body, "/usage/cache_read_input_tokens"), written);

    // The stream's `message_start` reports the same.
    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    let (events, _) = anthropic_stream(&sim, &streamed, &[]).await;
    let start = events
        .iter()
        .map(|e| e.json())
        .find(|e| e["type"] == "message_start")
        .unwrap();
    assert_eq!(
        u(&start, "/message/usage/cache_read_input_tokens"),
        written,
        "{start}"
    );

    let stats = sim.stats().model("claude-cache");
    assert_eq!(stats.cache_write_tokens, written);
    assert_eq!(stats.cache_read_tokens, 3 * written);
    assert!(stats.cache_hit_ratio() > 0.5, "{stats:?}");
    sim.shutdown().await.unwrap();
}

#[tokio::test]
async fn anthropic_caches_nothing_below_the_minimum_or_when_off() {
    let sim = start(sim_config()).await;
    let short = cached_system("claude-cache", "You are terse.", "Hi");
    for _ in 0..2 {
        let r = anthropic(&sim, &short).await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(u(&r.body, "/usage/cache_creation_input_tokens"), 0);
        assert_eq!(u(&r.body, "/usage/cache_read_input_tokens"), 0);
    }
    let off = cached_system("claude-nocache", &big(), "Hi");
    for _ in 0..2 {
        let r = anthropic(&sim, &off).await;
        assert_eq!(u(&r.body, "/usage/cache_creation_input_tokens"), 0);
        assert_eq!(u(&r.body, "/usage/cache_read_input_tokens"), 0);
    }
    sim.shutdown().await.unwrap();
}

#[tokio::test]
async fn anthropic_misses_after_a_changed_byte_before_the_breakpoint() {
    let sim = start(sim_config()).await;
    let body = cached_system("claude-cache", &big(), "Hi");
    let written = u(
        &anthropic(&sim, &body).await.body,
        "/usage/cache_creation_input_tokens",
    );
    let mut changed = big();
    changed.replace_range(0..1, "t");
    let r = anthropic(&sim, &cached_system("claude-cache", &changed, "Hi")).await;
    assert_eq!(u(&r.body, "/usage/cache_read_input_tokens"), 0);
    assert_eq!(u(&r.body, "/usage/cache_creation_input_tokens"), written);
    sim.shutdown().await.unwrap();
}

#[tokio::test]
async fn anthropic_rolling_breakpoint_reads_the_previous_turn_and_one_hour_is_reported_apart() {
    let sim = start(sim_config()).await;
    let turn1 = json!({
        "model": "claude-cache", "max_tokens": 64,
        "system": [{"type": "text", "text": big(), "cache_control": {"type": "ephemeral", "ttl": "1h"}}],
        "messages": [{"role": "user", "content": [
            {"type": "text", "text": "First question.", "cache_control": {"type": "ephemeral"}}]}]
    });
    let first = anthropic(&sim, &turn1).await;
    assert_eq!(first.status, 200, "{}", first.body);
    let usage = &first.body["usage"];
    let system_part = u(usage, "/cache_creation/ephemeral_1h_input_tokens");
    let turn_part = u(usage, "/cache_creation/ephemeral_5m_input_tokens");
    assert!(system_part >= 1024 && turn_part > 0, "{usage}");

    // Turn 2 moves the 5-minute breakpoint to its last message; lookback finds turn 1's.
    let turn2 = json!({
        "model": "claude-cache", "max_tokens": 64,
        "system": [{"type": "text", "text": big(), "cache_control": {"type": "ephemeral", "ttl": "1h"}}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "First question."}]},
            {"role": "assistant", "content": "An answer."},
            {"role": "user", "content": [
                {"type": "text", "text": "Second question.", "cache_control": {"type": "ephemeral"}}]}
        ]
    });
    let second = anthropic(&sim, &turn2).await;
    let usage = &second.body["usage"];
    assert_eq!(
        u(usage, "/cache_read_input_tokens"),
        system_part + turn_part,
        "{usage}"
    );
    assert!(u(usage, "/cache_creation/ephemeral_5m_input_tokens") > 0);
    assert_eq!(u(usage, "/cache_creation/ephemeral_1h_input_tokens"), 0);
    sim.shutdown().await.unwrap();
}

#[tokio::test]
async fn anthropic_refuses_a_fifth_breakpoint() {
    let sim = start(sim_config()).await;
    let cc = json!({"type": "ephemeral"});
    let body = json!({
        "model": "claude-cache", "max_tokens": 64,
        "tools": [{"name": "lookup", "input_schema": {"type": "object"}, "cache_control": cc}],
        "system": [{"type": "text", "text": "a", "cache_control": cc},
                   {"type": "text", "text": "b", "cache_control": cc}],
        "messages": [{"role": "user", "content": [
            {"type": "text", "text": "c", "cache_control": cc},
            {"type": "text", "text": "d", "cache_control": cc}]}]
    });
    let r = anthropic(&sim, &body).await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.body["error"]["type"], "invalid_request_error");
    assert_eq!(
        r.body["error"]["message"],
        "A maximum of 4 blocks with cache_control may be provided. Found 5."
    );
    // Four are fine; a bad ttl is refused too.
    let mut four = body.clone();
    four["messages"][0]["content"][1]
        .as_object_mut()
        .unwrap()
        .remove("cache_control");
    assert_eq!(anthropic(&sim, &four).await.status, 200);
    let mut bad = four.clone();
    bad["system"][0]["cache_control"]["ttl"] = json!("2h");
    let r = anthropic(&sim, &bad).await;
    assert_eq!(r.status, 400);
    assert!(
        r.body["error"]["message"].as_str().unwrap().contains("ttl"),
        "{}",
        r.body
    );
    sim.shutdown().await.unwrap();
}

#[tokio::test]
async fn itpm_leaves_cache_reads_out_unless_told_otherwise() {
    let sim = start(sim_config()).await;
    // ~1560 input tokens against an ITPM of 2000: the write is charged, the read is not.
    let body = cached_system("claude-itpm", &big(), "Hi");
    assert_eq!(anthropic(&sim, &body).await.status, 200);
    let second = anthropic(&sim, &body).await;
    assert_eq!(second.status, 200, "{}", second.body);
    assert!(u(&second.body, "/usage/cache_read_input_tokens") > 1024);
    let stats = sim.stats().model("claude-itpm");
    assert!(stats.settled_input_tokens < 1700, "{stats:?}");

    // Charged to ITPM, the same read does not fit.
    let body = cached_system("claude-itpm-reads", &big(), "Hi");
    assert_eq!(anthropic(&sim, &body).await.status, 200);
    let refused = anthropic(&sim, &body).await;
    assert_eq!(refused.status, 429, "{}", refused.body);
    assert_eq!(
        sim.stats()
            .model("claude-itpm-reads")
            .rate_limited_by(LimitKind::InputTokens),
        1
    );
    sim.shutdown().await.unwrap();
}

#[tokio::test]
async fn openai_chat_caches_automatically_in_128_token_steps() {
    let sim = start(sim_config()).await;
    let body = json!({"model": "gpt-cache", "messages": [
        {"role": "system", "content": big()}, {"role": "user", "content": "Hi"}]});
    let first = openai(&sim, &body).await;
    assert_eq!(first.status, 200, "{}", first.body);
    assert_eq!(
        u(&first.body, "/usage/prompt_tokens_details/cached_tokens"),
        0
    );
    let second = openai(&sim, &body).await;
    let prompt = u(&second.body, "/usage/prompt_tokens");
    let cached = u(&second.body, "/usage/prompt_tokens_details/cached_tokens");
    assert_eq!(
        prompt,
        u(&first.body, "/usage/prompt_tokens"),
        "cached tokens stay in prompt_tokens"
    );
    assert!(
        cached >= 1024 && cached.is_multiple_of(128) && cached <= prompt,
        "{cached} of {prompt}"
    );
    // Another `prompt_cache_key` is another cache; the same key finds it again.
    let mut keyed = body.clone();
    keyed["prompt_cache_key"] = json!("tenant-7");
    keyed["prompt_cache_retention"] = json!("in_memory");
    let r = openai(&sim, &keyed).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(u(&r.body, "/usage/prompt_tokens_details/cached_tokens"), 0);
    let r = openai(&sim, &keyed).await;
    assert_eq!(
        u(&r.body, "/usage/prompt_tokens_details/cached_tokens"),
        cached
    );
    // A short prompt is never cached.
    let short = json!({"model": "gpt-cache", "messages": [{"role": "user", "content": "Hi"}]});
    openai(&sim, &short).await;
    let r = openai(&sim, &short).await;
    assert_eq!(u(&r.body, "/usage/prompt_tokens_details/cached_tokens"), 0);
    let stats = sim.stats().model("gpt-cache");
    assert_eq!(stats.cache_read_tokens, 2 * cached);
    assert_eq!(stats.cache_write_tokens, 0);
    sim.shutdown().await.unwrap();
}

#[tokio::test]
async fn openai_responses_reports_input_tokens_details() {
    let sim = start(sim_config()).await;
    let body = json!({"model": "gpt-cache", "instructions": big(), "input": "Hi"});
    let send = || async {
        let resp = client()
            .post(format!("{}/responses", sim.openai_base_url()))
            .bearer_auth("sk-test")
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        resp.json::<Value>().await.unwrap()
    };
    assert_eq!(
        u(&send().await, "/usage/input_tokens_details/cached_tokens"),
        0
    );
    let second = send().await;
    let cached = u(&second, "/usage/input_tokens_details/cached_tokens");
    assert!(cached >= 1024 && cached.is_multiple_of(128), "{second}");
    assert!(cached <= u(&second, "/usage/input_tokens"));
    sim.shutdown().await.unwrap();
}

#[tokio::test]
async fn gemini_reports_cached_content_tokens_from_the_models_minimum() {
    let sim = start(sim_config()).await;
    let body = json!({
        "systemInstruction": {"parts": [{"text": big()}]},
        "contents": [{"role": "user", "parts": [{"text": "Hi"}]}]
    });
    let first = gemini(&sim, "gemini-flash-sim", &body).await;
    assert_eq!(first.status, 200, "{}", first.body);
    assert!(
        first.body["usageMetadata"]
            .get("cachedContentTokenCount")
            .is_none()
    );
    let second = gemini(&sim, "gemini-flash-sim", &body).await;
    let meta = &second.body["usageMetadata"];
    let cached = u(meta, "/cachedContentTokenCount");
    assert!(
        cached >= 1024 && cached <= u(meta, "/promptTokenCount"),
        "{meta}"
    );
    assert_eq!(u(meta, "/cacheTokensDetails/0/tokenCount"), cached);
    // A Pro-like model with a 4096-token minimum caches none of this prompt.
    for _ in 0..2 {
        let r = gemini(&sim, "gemini-pro-sim", &body).await;
        assert!(
            r.body["usageMetadata"]
                .get("cachedContentTokenCount")
                .is_none()
        );
    }
    sim.shutdown().await.unwrap();
}

#[tokio::test]
async fn bedrock_cache_points_write_then_read() {
    let sim = start(sim_config()).await;
    let body = json!({
        "system": [{"text": big()}, {"cachePoint": {"type": "default"}}],
        "messages": [{"role": "user", "content": [{"text": "Hi"}]}]
    });
    let send = || async {
        let resp = client()
            .post(format!(
                "{}/model/anthropic.claude-cache-v1:0/converse",
                sim.base_url()
            ))
            .header(
                "authorization",
                "AWS4-HMAC-SHA256 Credential=AKIDTEST/20260101/us-east-1/bedrock/aws4_request, \
                 SignedHeaders=content-type;host;x-amz-date, Signature=0123abcd",
            )
            .header("x-amz-date", "20260101T000000Z")
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        resp.json::<Value>().await.unwrap()
    };
    let first = send().await;
    let usage = &first["usage"];
    let written = u(usage, "/cacheWriteInputTokens");
    assert!(written >= 1024, "{usage}");
    assert_eq!(u(usage, "/cacheReadInputTokens"), 0);
    let total = u(usage, "/inputTokens") + written;
    assert_eq!(u(usage, "/totalTokens"), total + u(usage, "/outputTokens"));
    let second = send().await;
    let usage = &second["usage"];
    assert_eq!(u(usage, "/cacheReadInputTokens"), written, "{usage}");
    assert_eq!(u(usage, "/cacheWriteInputTokens"), 0);
    assert_eq!(u(usage, "/inputTokens") + written, total);
    sim.shutdown().await.unwrap();
}

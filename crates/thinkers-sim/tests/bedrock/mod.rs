//! Bedrock Converse over real HTTP: authentication, the `ThrottlingException` of a limit, the
//! reasoning signature check, and `converse-stream`'s event-stream frames.

use aws_smithy_eventstream::frame::{DecodedFrame, MessageFrameDecoder};
use aws_smithy_types::event_stream::HeaderValue;
use bytes::BytesMut;
use serde_json::{Value, json};
use thinkers_sim::{Sim, SimConfig, SimModel};

use crate::support::*;

const SIGV4: &str = "AWS4-HMAC-SHA256 Credential=AKIDTEST/20260101/us-east-1/bedrock/aws4_request, \
                     SignedHeaders=content-type;host;x-amz-date, Signature=0123abcd";

async fn converse_at(
    sim: &Sim,
    model: &str,
    op: &str,
    body: &Value,
    signed: bool,
) -> reqwest::Response {
    let mut req = client()
        .post(format!("{}/model/{model}/{op}", sim.base_url()))
        .json(body);
    if signed {
        req = req
            .header("authorization", SIGV4)
            .header("x-amz-date", "20260101T000000Z");
    }
    req.send().await.unwrap()
}

fn user(text: &str) -> Value {
    json!({"role": "user", "content": [{"text": text}]})
}

fn sim_config() -> SimConfig {
    SimConfig::builder()
        .model(SimModel::new("anthropic.claude-test-v1:0").thinking(true))
        .model(SimModel::new("amazon.limited-v1:0").tpm(600).rpm(100))
        .seed(7)
        .build()
        .unwrap()
}

#[tokio::test]
async fn an_unsigned_request_is_refused_and_a_signed_one_answered() {
    let sim = start(sim_config()).await;
    let body = json!({"messages": [user("Hi")]});
    // The model id arrives percent-encoded in the path.
    let r = converse_at(
        &sim,
        "anthropic.claude-test-v1%3A0",
        "converse",
        &body,
        false,
    )
    .await;
    assert_eq!(r.status(), 403);
    assert!(
        r.headers()["x-amzn-errortype"]
            .to_str()
            .unwrap()
            .starts_with("MissingAuthenticationTokenException:")
    );
    let r = converse_at(
        &sim,
        "anthropic.claude-test-v1%3A0",
        "converse",
        &body,
        true,
    )
    .await;
    assert_eq!(r.status(), 200);
    assert!(r.headers().contains_key("x-amzn-requestid"));
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["stopReason"], "end_turn");
    assert!(v["output"]["message"]["content"][0]["text"].is_string());
    assert!(v["usage"]["totalTokens"].as_u64().unwrap() > 0);
}

#[tokio::test]
async fn a_limit_answers_bedrocks_throttling_exception() {
    let sim = start(sim_config()).await;
    let body = json!({"messages": [user("hello there")], "inferenceConfig": {"maxTokens": 400}});
    let mut refused = None;
    for _ in 0..40 {
        let r = converse_at(&sim, "amazon.limited-v1:0", "converse", &body, true).await;
        if r.status() == 429 {
            refused = Some(r);
            break;
        }
        assert_eq!(r.status(), 200);
        // Bedrock sends no rate-limit headers.
        assert!(!r.headers().keys().any(|k| k.as_str().contains("ratelimit")));
    }
    let r = refused.expect("the TPM limit refused a request");
    assert_eq!(
        r.headers()["x-amzn-errortype"].to_str().unwrap(),
        "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/"
    );
    assert!(r.headers().get("retry-after").is_none());
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        v,
        json!({"message": "Too many tokens, please wait before trying again."})
    );
}

#[tokio::test]
async fn reasoning_must_come_back_unmodified() {
    let sim = start(sim_config()).await;
    let thinking = json!({"thinking": {"type": "enabled", "budget_tokens": 1024}});
    let first = json!({"messages": [user("Why?")], "inferenceConfig": {"maxTokens": 4096},
        "additionalModelRequestFields": thinking});
    let r = converse_at(&sim, "anthropic.claude-test-v1:0", "converse", &first, true).await;
    let v: Value = r.json().await.unwrap();
    let message = v["output"]["message"].clone();
    assert!(message["content"][0]["reasoningContent"]["reasoningText"]["signature"].is_string());
    let mut next = json!({"messages": [user("Why?"), message, user("And then?")],
        "inferenceConfig": {"maxTokens": 4096}, "additionalModelRequestFields": thinking});
    let r = converse_at(&sim, "anthropic.claude-test-v1:0", "converse", &next, true).await;
    assert_eq!(r.status(), 200);
    next["messages"][1]["content"][0]["reasoningContent"]["reasoningText"]["text"] =
        json!("edited");
    let r = converse_at(&sim, "anthropic.claude-test-v1:0", "converse", &next, true).await;
    assert_eq!(r.status(), 400);
    assert!(
        r.headers()["x-amzn-errortype"]
            .to_str()
            .unwrap()
            .starts_with("ValidationException:")
    );
}

#[tokio::test]
async fn converse_stream_answers_event_stream_frames() {
    let sim = start(sim_config()).await;
    let body = json!({"messages": [user("What is a seat?")]});
    let r = converse_at(
        &sim,
        "anthropic.claude-test-v1:0",
        "converse-stream",
        &body,
        true,
    )
    .await;
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.headers()["content-type"].to_str().unwrap(),
        "application/vnd.amazon.eventstream"
    );
    let mut buf = BytesMut::from(&r.bytes().await.unwrap()[..]);
    let mut decoder = MessageFrameDecoder::new();
    let mut kinds = Vec::new();
    let mut text = String::new();
    while let DecodedFrame::Complete(m) = decoder.decode_frame(&mut buf).unwrap() {
        let kind = m
            .headers()
            .iter()
            .find(|h| h.name().as_str() == ":event-type")
            .and_then(|h| match h.value() {
                HeaderValue::String(s) => Some(s.as_str().to_owned()),
                _ => None,
            })
            .unwrap();
        let payload: Value = serde_json::from_slice(m.payload()).unwrap();
        if kind == "contentBlockDelta" {
            text.push_str(payload["delta"]["text"].as_str().unwrap());
        }
        kinds.push(kind);
    }
    assert_eq!(kinds.first().map(String::as_str), Some("messageStart"));
    assert_eq!(kinds[kinds.len() - 2..], ["messageStop", "metadata"]);
    assert!(!text.is_empty());
}

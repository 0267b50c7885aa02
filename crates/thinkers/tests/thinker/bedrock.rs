//! A thinker over Amazon Bedrock Converse: real HTTP against thinkers-sim's `/model/{id}/converse`
//! and `/converse-stream`, requests signed with AWS SigV4 — a tool round and a typed answer,
//! reasoning signatures carried back byte-identical across turns (the sim refuses an altered
//! one), a throttled attempt retried, a streamed call read from event-stream frames, and streamed
//! reasoning whose signature goes back whole on the next turn.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use thinkers::Runtime;
use thinkers::conversation::Message;
use thinkers::dispatch::DispatchConfig;
use thinkers::llm::{ChatRequest, LlmCall, StreamDelta};
use thinkers::model::{Catalog, Depth, Grade, ModelDependent, OutputSize};
use thinkers::record::MemoryRecorder;
use thinkers::thinker::{Thinker, ThinkerDeclaration, ThinkerInput};
use thinkers_sim::{FaultKind, FaultRule, Sim, SimConfig};

use crate::e2e::Brief;
use crate::support::Lookup;

/// Two Bedrock entries served by the sim; the credentials come from the sim's key variable
/// (which falls back to a dummy key), so no AWS variable is needed.
const CATALOG: &str = r#"
[providers.bedrock]
dialect = "bedrock-converse"
base_url = "{sim}"
region = "eu-west-3"
access_key_env = "THINKERS_SIM_KEY"
secret_key_env = "THINKERS_SIM_KEY"

[[entries]]
id = "bedrock-small"
provider = "bedrock"
model = "anthropic.claude-sim-small-v1:0"
grade = "small"
context_window = 200000
output_ceiling = 8192
price_in = 1.0
price_out = 5.0
currency = "USD"
native_tools = true
[entries.sim]
tool_rounds = 1

[[entries]]
id = "bedrock-thinking"
provider = "bedrock"
model = "anthropic.claude-sim-large-v1:0"
grade = "medium"
context_window = 200000
output_ceiling = 32000
price_in = 3.0
price_out = 15.0
currency = "USD"
thinking = true
native_tools = true
reasoning_tokens = { immediate = 0, quick = 1024, standard = 2048, thorough = 4096 }
[entries.sim]
tool_rounds = 1
"#;

struct Setup {
    sim: Sim,
    rt: Runtime,
}

async fn setup() -> Setup {
    let config = SimConfig {
        log_bodies: true,
        ..SimConfig::from_catalog_toml(CATALOG).unwrap().calm()
    };
    let sim = Sim::start(config).await.unwrap();
    let catalog = Catalog::from_toml_str(CATALOG, "bedrock-test.toml")
        .unwrap()
        .with_sim_url(&sim.base_url());
    let rt = Runtime::builder(catalog)
        .recorder(Arc::new(MemoryRecorder::new()))
        .config(DispatchConfig {
            transient_backoff: Duration::from_millis(10),
            throttle_backoff: Duration::from_millis(10),
            ..DispatchConfig::default()
        })
        .build()
        .await
        .unwrap();
    Setup { sim, rt }
}

fn thinker(entry: &str, grade: Grade) -> Thinker<Brief> {
    let mut t = Thinker::<Brief>::declared(
        ThinkerDeclaration::new(grade, OutputSize::Compact),
        "Answer the question from the glossary.",
    )
    .tool(Lookup::default())
    .class("bedrock_thinker");
    t.pin_model(entry.to_owned());
    t
}

fn header<'a>(r: &'a thinkers_sim::LoggedRequest, name: &str) -> &'a str {
    r.headers
        .iter()
        .find(|(k, _)| k == name)
        .map_or("", |(_, v)| v.as_str())
}

#[tokio::test]
async fn a_thinker_with_a_tool_completes_over_converse_with_signed_requests() {
    let s = setup().await;
    let answer =
        s.rt.run(
            thinker("bedrock-small", Grade::Small)
                .ask(ThinkerInput::query("What is a seat?").with_depth(Depth::Quick)),
        )
        .await
        .unwrap();
    assert!(!answer.summary.is_empty());
    let sent = s.sim.requests();
    assert_eq!(sent.len(), 2, "a tool round, then the answer");
    for r in &sent {
        assert_eq!(r.model, "anthropic.claude-sim-small-v1:0");
        assert_eq!(r.endpoint, "/model/{modelId}/converse");
        let auth = header(r, "authorization");
        assert!(
            auth.starts_with("AWS4-HMAC-SHA256 Credential=")
                && auth.contains("/eu-west-3/bedrock/aws4_request"),
            "{auth}"
        );
        assert!(!header(r, "x-amz-date").is_empty());
        assert!(r.body.get("modelId").is_none() && r.body.get("model").is_none());
    }
    // The second turn carries the call and its result as Converse blocks.
    let second = &sent[1].body["messages"];
    let call = &second[1]["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b.get("toolUse").is_some())
        .unwrap()["toolUse"];
    assert_eq!(call["name"], "lookup");
    let result = &second[2]["content"][0]["toolResult"];
    assert_eq!(result["toolUseId"], call["toolUseId"]);
    assert!(sent[1].body["toolConfig"]["tools"][0]["toolSpec"]["name"] == "lookup");
}

#[tokio::test]
async fn reasoning_signatures_go_back_byte_identical_across_turns() {
    let s = setup().await;
    let answer =
        s.rt.run(
            thinker("bedrock-thinking", Grade::Medium)
                .ask(ThinkerInput::query("What is a grade?").with_depth(Depth::Standard)),
        )
        .await
        .unwrap();
    assert!(
        !answer.reasoning.is_empty(),
        "filled from the reasoning block"
    );
    let sent = s.sim.requests();
    assert_eq!(sent.len(), 2);
    assert_eq!(
        sent[0].body["additionalModelRequestFields"]["thinking"]["budget_tokens"],
        2048
    );
    // The first answer's reasoning block leads the assistant turn of the second request, text
    // and signature exactly as the sim wrote them (it verifies the signature, and would have
    // refused the turn otherwise).
    let block = &sent[1].body["messages"][1]["content"][0]["reasoningContent"]["reasoningText"];
    let (text, signature) = (
        block["text"].as_str().unwrap(),
        block["signature"].as_str().unwrap(),
    );
    assert!(!text.is_empty() && !signature.is_empty());
    let literal = serde_json::to_string(signature).unwrap();
    assert!(sent[1].raw_body.contains(&literal));
}

#[tokio::test]
async fn a_throttled_attempt_is_retried_and_a_stream_is_read_from_event_frames() {
    let s = setup().await;
    s.sim.inject(
        FaultRule::new(FaultKind::RateLimit429)
            .for_model("anthropic.claude-sim-small-v1:0")
            .times(1),
    );
    let text = Arc::new(Mutex::new(String::new()));
    let sink = Arc::clone(&text);
    let req = ChatRequest::new("Be brief.", vec![Message::user_text("What is a seat?")]);
    let job = LlmCall::new(Grade::Small, OutputSize::Compact, req)
        .pinned("bedrock-small".to_owned())
        .streaming(Box::new(move |d| {
            if let StreamDelta::Text(t) = d {
                sink.lock().unwrap().push_str(&t);
            }
        }));
    let out = s.rt.run(job).await.unwrap();
    let stats = s.sim.stats().model("anthropic.claude-sim-small-v1:0");
    assert_eq!(stats.faults, 1, "throttled once");
    assert_eq!(stats.requests, 2, "then asked again");
    let sent = s.sim.requests();
    assert!(
        sent.iter()
            .all(|r| r.endpoint == "/model/{modelId}/converse-stream")
    );
    assert!(!out.response.text().is_empty());
    assert_eq!(
        *text.lock().unwrap(),
        out.response.text(),
        "the deltas are the answer"
    );
    assert!(out.response.usage.output > 0);
}

#[tokio::test]
async fn streamed_reasoning_keeps_its_signature_for_the_next_turn() {
    let s = setup().await;
    let thought = Arc::new(Mutex::new(String::new()));
    let sink = Arc::clone(&thought);
    let first = ChatRequest::new(
        "Be brief.",
        vec![Message::user_text("Why is a seat a seat?")],
    );
    let job = LlmCall::new(Grade::Medium, OutputSize::Compact, first.clone())
        .pinned("bedrock-thinking".to_owned())
        .depth(Depth::Standard)
        .streaming(Box::new(move |d| {
            if let StreamDelta::Thinking(t) = d {
                sink.lock().unwrap().push_str(&t);
            }
        }));
    let out = s.rt.run(job).await.unwrap();
    let Some(thinkers::conversation::ContentBlock::Thinking {
        thinking,
        signature,
    }) = out.response.content.first().cloned()
    else {
        panic!("no reasoning block first: {:?}", out.response.content);
    };
    assert_eq!(
        *thought.lock().unwrap(),
        thinking,
        "the deltas are the reasoning"
    );
    assert!(!signature.is_empty());
    // The streamed block goes back whole on the next turn, and the sim's signature check passes.
    let mut next = first;
    let messages = Arc::make_mut(&mut next.messages);
    messages.push(out.response.to_message());
    messages.push(Message::user_text("And a grade?"));
    let job = LlmCall::new(Grade::Medium, OutputSize::Compact, next)
        .pinned("bedrock-thinking".to_owned())
        .depth(Depth::Standard);
    s.rt.run(job).await.unwrap();
    let sent = s.sim.requests();
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0].endpoint, "/model/{modelId}/converse-stream");
    let block = &sent[1].body["messages"][1]["content"][0]["reasoningContent"]["reasoningText"];
    assert_eq!(block["text"], thinking.as_str());
    assert_eq!(block["signature"], signature.as_str());
}

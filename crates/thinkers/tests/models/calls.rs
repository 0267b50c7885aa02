//! Plain, tool and structured calls on each dialect; records; pins and the envelope.

use std::sync::Arc;

use serde_json::json;
use thinkers::conversation::Message;
use thinkers::llm::{ChatRequest, LlmCall, ResponseSchema, StopReason, ToolSpec};
use thinkers::model::{Catalog, Depth, Dialect, Envelope, Grade, OutputSize};
use thinkers::ops::cost::{self, GroupBy};
use thinkers::record::MemoryRecorder;
use thinkers::{ErrorKind, Runtime};

use crate::support::setup;

fn question() -> ChatRequest {
    ChatRequest::new(
        "You answer questions about the glossary.",
        vec![Message::user_text("What is a seat?")],
    )
}

fn with_tool() -> ChatRequest {
    let mut r = question();
    r.tools.push(ToolSpec {
        name: "lookup".into(),
        description: "Look a term up.".into(),
        parameters: json!({
            "type": "object",
            "properties": {"term": {"type": "string"}},
            "required": ["term"],
            "additionalProperties": false
        })
        .into(),
    });
    r
}

fn structured() -> ChatRequest {
    let mut r = question();
    r.response = Some(ResponseSchema {
        name: "answer".into(),
        schema: json!({
            "type": "object",
            "properties": {
                "summary": {"type": "string"},
                "confidence": {"type": "number", "minimum": 0, "maximum": 1}
            },
            "required": ["summary", "confidence"],
            "additionalProperties": false
        })
        .into(),
    });
    r
}

const ENTRIES: [&str; 4] = [
    "sim-small-a",
    "sim-small-b",
    "sim-small-text",
    "sim-medium-b",
];

#[tokio::test]
async fn plain_tool_and_structured_calls_on_every_dialect() {
    let s = setup().await;
    for entry in ENTRIES {
        let out =
            s.rt.run(LlmCall::new(Grade::Small, OutputSize::Compact, question()).pinned(entry))
                .await
                .unwrap_or_else(|e| panic!("{entry}: {e}"));
        assert_eq!(&*out.entry, entry);
        assert!(!out.response.text().is_empty(), "{entry}: empty answer");
        assert_eq!(out.response.stop, StopReason::EndTurn, "{entry}");

        let out =
            s.rt.run(LlmCall::new(Grade::Small, OutputSize::Compact, with_tool()).pinned(entry))
                .await
                .unwrap_or_else(|e| panic!("{entry}: {e}"));
        let calls = out.response.tool_calls();
        assert!(!calls.is_empty(), "{entry}: {:?}", out.response);
        for c in &calls {
            assert_eq!(c.name, "lookup");
            assert!(c.arguments["term"].is_string(), "{entry}");
            assert!(!c.id.is_empty());
        }
        let mut ids: Vec<_> = calls.iter().map(|c| c.id).collect();
        ids.dedup();
        assert_eq!(ids.len(), calls.len(), "{entry}: tool-call ids are unique");
        assert_eq!(out.response.stop, StopReason::ToolUse, "{entry}");

        let out =
            s.rt.run(LlmCall::new(Grade::Small, OutputSize::Compact, structured()).pinned(entry))
                .await
                .unwrap_or_else(|e| panic!("{entry}: {e}"));
        let v: serde_json::Value = serde_json::from_str(&out.response.text())
            .unwrap_or_else(|e| panic!("{entry}: {e}: {}", out.response.text()));
        assert!(
            v["summary"].is_string() && v["confidence"].is_number(),
            "{entry}: {v}"
        );
    }
    // The text-only entry never received a `tools` parameter.
    let text_bodies: Vec<_> = s
        .sim
        .requests()
        .into_iter()
        .filter(|r| r.model == "sim-small-text")
        .collect();
    assert_eq!(text_bodies.len(), 3);
    assert!(text_bodies.iter().all(|r| r.body.get("tools").is_none()));
}

#[tokio::test]
async fn every_call_is_recorded_with_tokens_latency_and_cost() {
    let s = setup().await;
    let out =
        s.rt.run(
            LlmCall::new(Grade::Small, OutputSize::Compact, question())
                .pinned("sim-small-text")
                .class("glossary_question"),
        )
        .await
        .unwrap();
    let runs = s.rec.llm_runs();
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    assert_eq!(run.class, "glossary_question");
    assert_eq!(run.entry, "sim-small-text");
    assert!(run.input_tokens > 0 && run.output_tokens > 0);
    assert_eq!(run.output_budget, 4096);
    assert_eq!(run.currency, "EUR");
    assert!(run.cost.unwrap() > 0.0);
    assert_eq!(run.cost, out.cost);
    assert_eq!(run.stop_reason, "end_turn");
    // The sim counted what it received too.
    assert_eq!(s.sim.stats().model("sim-small-text").requests, 1);
}

#[tokio::test]
async fn depth_becomes_reasoning_on_the_wire() {
    let s = setup().await;
    s.rt.run(
        LlmCall::new(Grade::Medium, OutputSize::Compact, question())
            .pinned("sim-medium-b")
            .depth(Depth::Thorough),
    )
    .await
    .unwrap();
    s.rt.run(
        LlmCall::new(Grade::Medium, OutputSize::Compact, question())
            .pinned("sim-medium-a")
            .depth(Depth::Quick),
    )
    .await
    .unwrap();
    let reqs = s.sim.requests();
    let anthropic = reqs.iter().find(|r| r.model == "sim-medium-b").unwrap();
    assert_eq!(anthropic.body["thinking"]["type"], "enabled");
    assert_eq!(anthropic.body["thinking"]["budget_tokens"], 16000);
    let openai = reqs.iter().find(|r| r.model == "sim-medium-a").unwrap();
    assert_eq!(openai.body["reasoning_effort"], "low");
    // The answer keeps its 4,096 tokens; the cap makes room for the reasoning `low` reserves.
    assert_eq!(
        openai.body["max_completion_tokens"],
        4096 + thinkers::model::effort_tokens("low", Depth::Quick)
    );
}

#[tokio::test]
async fn the_picker_serves_an_open_entry_of_the_grade() {
    let s = setup().await;
    let out =
        s.rt.run(LlmCall::new(Grade::Large, OutputSize::Verdict, question()))
            .await
            .unwrap();
    assert!(out.entry.starts_with("sim-large-"), "{}", out.entry);
    let out =
        s.rt.run(LlmCall::new(
            Grade::Ceiling,
            OutputSize::Verdict,
            question(),
        ))
        .await
        .unwrap();
    assert!(out.entry.starts_with("sim-mega-"), "{}", out.entry);
}

#[tokio::test]
async fn a_pin_outside_the_envelope_is_refused_naming_entry_and_rule() {
    let sim = thinkers_sim::Sim::start(thinkers_sim::SimConfig::default())
        .await
        .unwrap();
    let catalog = thinkers::model::Catalog::bundled().with_sim_url(&sim.base_url());
    let rt = thinkers::Runtime::builder(catalog)
        .envelope(Envelope::unrestricted().require_tag("region", ["eu"]))
        .build()
        .await
        .unwrap();
    // sim-small-a is a US entry.
    let err = rt
        .run(LlmCall::new(Grade::Small, OutputSize::Verdict, question()).pinned("sim-small-a"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    let text = format!(
        "{err} {:?}",
        std::error::Error::source(&err).map(ToString::to_string)
    );
    assert!(text.contains("sim-small-a"), "{text}");
    assert!(text.contains("region"), "{text}");
    assert_eq!(sim.stats().totals.requests, 0, "nothing reached the wire");
    // Unpinned, the picker stays inside the envelope.
    let out = rt
        .run(LlmCall::new(Grade::Small, OutputSize::Verdict, question()))
        .await
        .unwrap();
    assert_ne!(&*out.entry, "sim-small-a");
}

#[test]
fn the_example_catalogs_load() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/catalogs/examples");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let c = thinkers::model::Catalog::load(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert!(!c.entries().is_empty());
            assert!(!c.needs_sim());
            n += 1;
        }
    }
    assert_eq!(
        n, 7,
        "openai, anthropic, ollama, openai-responses, azure, gemini, bedrock"
    );
    // The Gemini example speaks the gemini dialect with its version in the base URL.
    let gemini = thinkers::model::Catalog::load(format!("{dir}/gemini.toml")).unwrap();
    let provider = gemini.provider("gemini").unwrap();
    assert_eq!(provider.dialect, thinkers::llm::Dialect::Gemini);
    assert!(
        provider.base_url.ends_with("/v1beta"),
        "{}",
        provider.base_url
    );
    assert_eq!(gemini.entries().len(), 3);
}

#[tokio::test]
async fn a_call_to_an_entry_without_prices_is_recorded_with_its_cost_unknown() {
    let s = setup().await;
    let catalog = Catalog::builder()
        .provider(
            "local",
            Dialect::OpenAi,
            &format!("{}/v1", s.sim.base_url()),
        )
        .api_key("any")
        .model("sim-small-a", Grade::Small)
        .build()
        .unwrap();
    let rec = MemoryRecorder::new();
    let rt = Runtime::builder(catalog)
        .recorder(Arc::new(rec.clone()))
        .build()
        .await
        .unwrap();
    let out = rt
        .run(LlmCall::new(Grade::Small, OutputSize::Compact, question()).class("unpriced"))
        .await
        .unwrap();
    assert_eq!((out.cost, &*out.currency), (None, ""));
    let runs = rec.llm_runs();
    assert_eq!(runs.len(), 1);
    assert!(runs[0].output_tokens > 0, "{:?}", runs[0]);
    assert_eq!((runs[0].cost, runs[0].currency.as_str()), (None, ""));
    let report = cost::report(&runs, GroupBy::Entry);
    let row = report.row("sim-small-a", "").unwrap();
    assert_eq!((row.cost, row.unpriced_calls), (None, 1));
    assert_eq!(row.cost_text(), "unknown");
    rt.shutdown().await.unwrap();
}

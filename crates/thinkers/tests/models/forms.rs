//! Issue 48, item 6: a local server works from a minimal catalog. An `openai-compatible`
//! provider whose catalog leaves `structured_output` unset, against a server that refuses
//! `json_schema` as llama-cpp-python's does (the sim's `refused_formats`: HTTP 500 with a
//! validation error naming `response_format`): the first refusal moves the provider to the next
//! form at once (no transient retries), later calls go straight to it, the choice is logged once,
//! and the refused call is on the record as a failed attempt that cost nothing. A form the
//! catalog set stays authoritative: its refusal is one error naming the entry, the field and the
//! URL.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use thinkers::Runtime;
use thinkers::model::{Catalog, Grade, ModelDependent, OutputSize};
use thinkers::record::{JobStatus, MemoryRecorder};
use thinkers::thinker::{SystemPrompt, ThinkerDeclaration, ToollessThinker};
use thinkers_sim::{Profile, Sim, SimConfig, SimModel};

use crate::support::{LogBuffer, quick_retries};

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Ticket {
    /// What the customer wrote.
    pub text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Urgency {
    Low,
    High,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Triage {
    /// How urgent the ticket is.
    pub urgency: Urgency,
    /// Whether the customer is blocked.
    pub blocked: bool,
}

/// A sim serving `m-llama`, refusing the `response_format` types in `refused`.
async fn llama_sim(refused: &[&str]) -> Sim {
    Sim::start(
        SimConfig::builder()
            .log_bodies(true)
            .model(SimModel::new("m-llama").profile(Profile {
                refused_formats: refused.iter().map(|f| (*f).to_owned()).collect(),
                ..Profile::default()
            }))
            .build()
            .unwrap(),
    )
    .await
    .unwrap()
}

/// A runtime over a catalog naming the provider and the model, and `extra` in the provider's
/// table; its recorder.
async fn runtime(sim: &Sim, extra: &str) -> (Runtime, MemoryRecorder) {
    let toml = format!(
        "[providers.local]\ndialect = \"openai-compatible\"\nbase_url = \"{}\"\n\
         api_key_env = \"THINKERS_SIM_KEY\"\n{extra}\n\n[[entries]]\nid = \"llama\"\n\
         provider = \"local\"\nmodel = \"m-llama\"\ngrade = \"small\"\ncontext_window = 8192\n\
         output_ceiling = 1024\n",
        sim.openai_base_url()
    );
    let rec = MemoryRecorder::new();
    let rt = Runtime::builder(Catalog::from_toml_str(&toml, "minimal.toml").unwrap())
        .recorder(std::sync::Arc::new(rec.clone()))
        .config(quick_retries())
        .build()
        .await
        .unwrap();
    (rt, rec)
}

fn triage() -> ToollessThinker<Ticket, Triage> {
    let mut t = ToollessThinker::<Ticket, Triage>::new(
        ThinkerDeclaration::new(Grade::Small, OutputSize::Verdict),
        SystemPrompt::new("Classify the support ticket.").unwrap(),
    )
    .class("triage");
    t.pin_model("llama".to_owned());
    t
}

fn ticket() -> Ticket {
    Ticket {
        text: "Every invoice export fails with a timeout.".into(),
    }
}

/// The `response_format` type of each request the sim received, in order (`None`: none sent).
fn formats(sim: &Sim) -> Vec<Option<String>> {
    sim.requests()
        .iter()
        .map(|r| {
            r.body
                .pointer("/response_format/type")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .collect()
}

fn some(form: &str) -> Option<String> {
    Some(form.to_owned())
}

/// The attempts of each model-call job of the runs so far, in order.
fn call_attempts(rec: &MemoryRecorder) -> Vec<u32> {
    let mut calls: Vec<_> = rec
        .jobs()
        .into_iter()
        .filter(|j| j.start.class.starts_with("triage."))
        .collect();
    calls.sort_by_key(|j| j.start.started_at_ms);
    calls
        .iter()
        .map(|j| {
            assert_eq!(j.status(), JobStatus::Succeeded, "{j:?}");
            j.end.as_ref().unwrap().attempts
        })
        .collect()
}

#[tokio::test]
async fn a_refused_json_schema_moves_the_provider_to_json_object_once() {
    let logs = LogBuffer::default();
    let _guard = logs.install();
    let sim = llama_sim(&["json_schema"]).await;
    let (rt, rec) = runtime(&sim, "").await;

    let first = rt
        .run(triage().ask(ticket()))
        .await
        .expect("a typed answer");
    assert!(matches!(first.urgency, Urgency::Low | Urgency::High));
    // Refused once (no transient retries), then accepted in the next form.
    assert_eq!(
        formats(&sim),
        [some("json_schema"), some("json_object")],
        "{:?}",
        sim.requests()
    );
    let refused = &sim.requests()[0];
    assert_eq!(refused.model, "m-llama");
    let accepted = &sim.requests()[1].body["response_format"];
    assert!(
        accepted["schema"].is_object(),
        "the schema travels: {accepted}"
    );

    // The second run goes straight to the accepted form.
    rt.run(triage().ask(ticket()))
        .await
        .expect("a typed answer");
    assert_eq!(
        formats(&sim),
        [
            some("json_schema"),
            some("json_object"),
            some("json_object")
        ]
    );

    // The record: the refused call is a failed attempt of the first call's job; only the
    // answered calls have rows, and the refusal handed its seat's tokens back.
    assert_eq!(call_attempts(&rec), [2, 1]);
    assert_eq!(rec.llm_runs().len(), 2, "{:?}", rec.llm_runs());
    let stats = sim.stats().model("m-llama");
    assert_eq!((stats.requests, stats.answered), (3, 2));

    // One warning naming the provider and the form chosen.
    let text = logs.text();
    let warnings: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("WARN") && l.contains("structured"))
        .collect();
    assert_eq!(warnings.len(), 1, "{text}");
    eprintln!("{}", warnings[0]);
    assert!(
        warnings[0].contains("provider `local`") && warnings[0].contains("`json_object`"),
        "{}",
        warnings[0]
    );
    rt.shutdown().await.unwrap();
}

/// A server that refuses both `response_format` types: the schema ends in the prompt.
#[tokio::test]
async fn a_server_refusing_both_formats_gets_the_schema_in_the_prompt() {
    let sim = llama_sim(&["json_schema", "json_object"]).await;
    let (rt, rec) = runtime(&sim, "").await;
    rt.run(triage().ask(ticket()))
        .await
        .expect("a typed answer");
    rt.run(triage().ask(ticket()))
        .await
        .expect("a typed answer");
    assert_eq!(
        formats(&sim),
        [some("json_schema"), some("json_object"), None, None]
    );
    let system = sim.requests()[2].body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        system.contains("urgency"),
        "the schema is in the prompt: {system}"
    );
    assert_eq!(call_attempts(&rec), [3, 1]);
    rt.shutdown().await.unwrap();
}

/// `structured_output` set in the catalog is authoritative: its refusal is one request and one
/// error naming the entry, the catalog field and the URL, never retried as an outage.
#[tokio::test]
async fn a_form_the_catalog_set_is_refused_once_with_an_error_naming_it() {
    let sim = llama_sim(&["json_schema"]).await;
    let (rt, _rec) = runtime(&sim, "structured_output = \"json_schema\"").await;
    let started = std::time::Instant::now();
    let err = rt
        .run(triage().ask(ticket()))
        .await
        .expect_err("the catalog's form is refused");
    let msg = err.to_string();
    eprintln!("{msg}");
    assert_eq!(formats(&sim), [some("json_schema")], "{msg}");
    for part in [
        "entry `llama`",
        "structured_output",
        "response_format",
        "/v1/chat/completions",
        "HTTP 500",
    ] {
        assert!(msg.contains(part), "{part} in {msg}");
    }
    assert!(started.elapsed() < Duration::from_secs(5), "no backoff");
    rt.shutdown().await.unwrap();
}

/// A server that cannot stream an answer that may call a tool (the sim's `streams_tools =
/// false`, as llama-cpp-python ends such a stream without an event) under a provider whose
/// catalog leaves `stream_tools` unset: the first empty stream makes the provider ask for such
/// answers whole, at once and for every later call, and says so once.
#[tokio::test]
async fn an_empty_tool_stream_makes_the_provider_ask_for_such_answers_whole() {
    use std::sync::{Arc, Mutex};

    use serde_json::json;
    use thinkers::conversation::Message;
    use thinkers::llm::{ChatRequest, LlmCall, StreamDelta, ToolSpec};

    let logs = LogBuffer::default();
    let _guard = logs.install();
    let sim = Sim::start(
        SimConfig::builder()
            .log_bodies(true)
            .model(SimModel::new("m-llama").profile(Profile {
                streams_tools: false,
                ..Profile::default()
            }))
            .build()
            .unwrap(),
    )
    .await
    .unwrap();
    let (rt, rec) = runtime(&sim, "").await;
    for _ in 0..2 {
        let mut req = ChatRequest::new("Be brief.", vec![Message::user_text("Look it up.")]);
        req.tools = vec![ToolSpec {
            name: "lookup".into(),
            description: "Look a term up.".into(),
            parameters: Arc::new(json!({"type": "object",
                "properties": {"term": {"type": "string"}}, "required": ["term"]})),
        }];
        let seen = Arc::new(Mutex::new(0usize));
        let sink = Arc::clone(&seen);
        let call = LlmCall::new(Grade::Small, OutputSize::Compact, req)
            .pinned("llama".to_owned())
            .class("triage.stream")
            .streaming(Box::new(move |_: StreamDelta| {
                *sink.lock().unwrap() += 1;
            }));
        rt.run(call)
            .await
            .expect("asked whole, the call is answered");
        assert!(
            *seen.lock().unwrap() > 0,
            "the stream's reader saw the answer"
        );
    }
    let streamed: Vec<bool> = sim
        .requests()
        .iter()
        .map(|r| r.body.get("stream") == Some(&Value::Bool(true)))
        .collect();
    assert_eq!(streamed, [true, false, false], "{:?}", sim.requests());
    assert_eq!(call_attempts(&rec), [2, 1]);
    let text = logs.text();
    let warnings = text
        .lines()
        .filter(|l| l.contains("WARN") && l.contains("asked for whole"))
        .count();
    assert_eq!(warnings, 1, "{text}");
    rt.shutdown().await.unwrap();
}

//! A simulated provider with a runtime bound to it, a runtime for the test seam, a scripted
//! answerer and a small probe tool.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use thinkers::Runtime;
use thinkers::conversation::ContentBlock;
use thinkers::dispatch::DispatchConfig;
use thinkers::error::BoxError;
use thinkers::job::AttemptInfo;
use thinkers::llm::{ChatRequest, ChatResponse, ModelClient, StopReason, Usage};
use thinkers::model::catalog::BUNDLED_TOML;
use thinkers::model::{Catalog, Envelope, Grade, OutputSize};
use thinkers::onecall::{AnswerRequest, Answerer, ModelTool};
use thinkers::record::MemoryRecorder;
use thinkers_sim::{Sim, SimConfig};

/// A value that must never appear in a correction turn or an error's message.
pub const CANARY: &str = "CANARY-5f0e2a";

pub struct Setup {
    pub sim: Sim,
    pub rt: Runtime,
    pub rec: MemoryRecorder,
}

/// A calm sim (no random faults, no latency) serving the bundled catalog and logging bodies, and
/// a runtime bound to it.
pub async fn setup() -> Setup {
    setup_with(|c| c, Envelope::unrestricted()).await
}

pub async fn setup_with(tune: impl FnOnce(SimConfig) -> SimConfig, envelope: Envelope) -> Setup {
    let config = SimConfig::from_catalog_toml(BUNDLED_TOML).unwrap().calm();
    let config = SimConfig {
        log_bodies: true,
        hang_ms: 10_000,
        ..tune(config)
    };
    let sim = Sim::start(config).await.unwrap();
    let catalog = Catalog::bundled().with_sim_url(&sim.base_url());
    let (rt, rec) = runtime(catalog, envelope).await;
    Setup { sim, rt, rec }
}

/// A runtime for the test seam: the bundled catalog bound to an address nothing listens on, so a
/// request that reached the transport would fail.
pub async fn seam_runtime() -> (Runtime, MemoryRecorder) {
    runtime(
        Catalog::bundled().with_sim_url("http://127.0.0.1:9"),
        Envelope::unrestricted(),
    )
    .await
}

async fn runtime(catalog: Catalog, envelope: Envelope) -> (Runtime, MemoryRecorder) {
    let rec = MemoryRecorder::new();
    let client = ModelClient::builder()
        .request_timeout(Duration::from_secs(2))
        .build()
        .unwrap();
    let rt = Runtime::builder(catalog)
        .envelope(envelope)
        .recorder(Arc::new(rec.clone()))
        .client(client)
        .config(DispatchConfig {
            transient_backoff: Duration::from_millis(10),
            throttle_backoff: Duration::from_millis(10),
            ..DispatchConfig::default()
        })
        .build()
        .await
        .unwrap();
    (rt, rec)
}

/// An answer of plain text that ended normally.
pub fn answer(text: &str) -> ChatResponse {
    ChatResponse {
        content: vec![ContentBlock::text(text)],
        stop: StopReason::EndTurn,
        usage: Usage::default(),
        model: "scripted".into(),
        logprobs: None,
    }
}

/// An answer cut off at its output budget.
pub fn truncated(text: &str) -> ChatResponse {
    ChatResponse {
        stop: StopReason::MaxTokens,
        ..answer(text)
    }
}

/// What the scripted answerer was asked, one attempt.
#[derive(Debug, Clone)]
pub struct Seen {
    pub request: ChatRequest,
    pub entry: String,
    pub attempt: AttemptInfo,
}

/// Answers from a queue and keeps every request it was asked. An empty queue is a test failure
/// reported as a system error.
#[derive(Default)]
pub struct Scripted {
    queue: Mutex<VecDeque<Result<ChatResponse, BoxError>>>,
    seen: Mutex<Vec<Seen>>,
}

impl Scripted {
    pub fn new(answers: Vec<Result<ChatResponse, BoxError>>) -> Arc<Self> {
        Arc::new(Self {
            queue: Mutex::new(answers.into()),
            seen: Mutex::new(Vec::new()),
        })
    }

    pub fn texts(texts: &[&str]) -> Arc<Self> {
        Self::new(texts.iter().map(|t| Ok(answer(t))).collect())
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    pub fn left(&self) -> usize {
        self.queue.lock().unwrap().len()
    }
}

impl Answerer for Scripted {
    fn answer(&self, ask: &AnswerRequest<'_>) -> Result<ChatResponse, BoxError> {
        self.seen.lock().unwrap().push(Seen {
            request: ask.request.clone(),
            entry: ask.entry.to_owned(),
            attempt: ask.attempt,
        });
        self.queue
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or_else(|| Err("the scripted answerer ran out of answers".into()))
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ProbeInput {
    /// What to rate.
    pub topic: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Label {
    /// Fine.
    Good,
    /// Not fine.
    Bad,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Rating {
    /// The verdict.
    pub label: Label,
    /// A score from 0 to 10.
    #[schemars(range(max = 10))]
    pub score: u32,
}

/// A one-call tool for protocol tests: a grade of its own (or none), a check on the score.
#[derive(Debug, Clone, Copy)]
pub struct Probe {
    pub grade: Option<Grade>,
}

impl Probe {
    pub const SMALL: Self = Self {
        grade: Some(Grade::Small),
    };
    pub const GRADELESS: Self = Self { grade: None };
}

impl ModelTool for Probe {
    const NAME: &'static str = "probe";
    type Input = ProbeInput;
    type Output = Rating;

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed("Rate a topic.")
    }

    fn instructions(&self) -> Cow<'static, str> {
        Cow::Borrowed("You rate topics. Answer with a JSON object that matches the schema.")
    }

    fn output_size(&self, _input: &ProbeInput) -> OutputSize {
        OutputSize::Compact
    }

    fn grade(&self, _input: &ProbeInput) -> Option<Grade> {
        self.grade
    }

    fn validate(&self, _input: &ProbeInput, output: &Rating) -> Result<(), String> {
        if output.score > 10 {
            Err("`score` must be at most 10".to_owned())
        } else {
            Ok(())
        }
    }
}

pub fn probe_input() -> ProbeInput {
    ProbeInput {
        topic: "tea".into(),
    }
}

pub const GOOD: &str = r#"{"label": "good", "score": 7}"#;

//! Shared pieces of the chat tests: a glossary tool, a turn source that runs a callback before
//! each scripted turn, and event collection.

use std::borrow::Cow;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use thinkers::Dispatcher;
use thinkers::job::JobContext;
use thinkers::llm::ChatResponse;
use thinkers::record::MemoryRecorder;
use thinkers::thinker::{ChatEvent, ChatEvents, ScriptedTurns, TurnRequest, TurnSource};
use thinkers::tool::{Tool, ToolContext};
use thinkers_sim::SimConfig;

#[path = "../common/offline.rs"]
mod offline;

pub use offline::Setup;

/// A calm sim serving the bundled catalog, and a runtime bound to it.
pub async fn setup_with(tune: impl FnOnce(SimConfig) -> SimConfig) -> Setup {
    offline::start(Duration::from_secs(5), tune).await
}

pub fn dispatcher() -> (Dispatcher, MemoryRecorder) {
    let rec = MemoryRecorder::new();
    let d = Dispatcher::builder()
        .recorder(Arc::new(rec.clone()))
        .build();
    (d, rec)
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct LookupInput {
    /// The term to look up.
    pub term: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Definition {
    pub term: String,
    pub meaning: String,
}

/// A read-only glossary lookup that counts its calls.
#[derive(Debug, Default, Clone)]
pub struct Lookup {
    pub calls: Arc<AtomicUsize>,
}

impl Tool for Lookup {
    const NAME: &'static str = "lookup";
    type Input = LookupInput;
    type Output = Definition;
    fn description(&self) -> Cow<'static, str> {
        "Look a term up in the glossary.".into()
    }
    fn read_only(&self) -> bool {
        true
    }
    async fn call(
        &self,
        input: &LookupInput,
        _cx: &ToolContext<'_>,
    ) -> thinkers::Result<Definition> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Ok(Definition {
            term: input.term.clone(),
            meaning: format!("the meaning of {}", input.term),
        })
    }
}

type OnTurn = Arc<dyn Fn(u32) + Send + Sync>;

/// Scripted turns with a callback run before each (its argument counts turns from 1): how a
/// test acts "while the model works".
#[derive(Clone)]
pub struct Steered {
    pub script: ScriptedTurns,
    on_turn: OnTurn,
    count: Arc<AtomicU32>,
}

impl Steered {
    pub fn new(script: ScriptedTurns, on_turn: impl Fn(u32) + Send + Sync + 'static) -> Self {
        Self {
            script,
            on_turn: Arc::new(on_turn),
            count: Arc::default(),
        }
    }
}

impl TurnSource for Steered {
    fn take_turn<'a>(
        &'a self,
        turn: TurnRequest,
        cx: &'a JobContext,
    ) -> BoxFuture<'a, thinkers::Result<ChatResponse>> {
        let n = self.count.fetch_add(1, Ordering::SeqCst) + 1;
        (self.on_turn)(n);
        self.script.take_turn(turn, cx)
    }
}

/// Events collected in order.
#[derive(Clone, Default)]
pub struct Collected(pub Arc<Mutex<Vec<ChatEvent>>>);

impl Collected {
    pub fn sink(&self) -> ChatEvents {
        let store = self.0.clone();
        ChatEvents::new(move |e| store.lock().unwrap().push(e))
    }

    pub fn all(&self) -> Vec<ChatEvent> {
        self.0.lock().unwrap().clone()
    }

    pub fn names(&self) -> Vec<&'static str> {
        self.all().iter().map(ChatEvent::name).collect()
    }
}

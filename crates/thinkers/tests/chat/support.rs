//! Shared pieces of the chat tests: a glossary tool, a turn source that runs a callback before
//! each scripted turn, and event collection.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use thinkers::Dispatcher;
use thinkers::job::FanOut;
use thinkers::llm::ChatResponse;
use thinkers::record::MemoryRecorder;
use thinkers::thinker::{ChatEvent, ChatEvents, ScriptedTurns, TurnRequest, TurnSource};
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

#[path = "../common/glossary.rs"]
mod glossary;

pub use glossary::Lookup;

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
        step: &'a FanOut,
    ) -> BoxFuture<'a, thinkers::Result<ChatResponse>> {
        let n = self.count.fetch_add(1, Ordering::SeqCst) + 1;
        (self.on_turn)(n);
        self.script.take_turn(turn, step)
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

//! Shared tools, runtimes and a log capture for the thinker tests.

use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use thinkers::Dispatcher;
use thinkers::job::BoxJob;
use thinkers::record::MemoryRecorder;
use thinkers::tool::{ToolCallContext, ToolOutput, ToolProvider, TypedToolProvider};
use thinkers_sim::SimConfig;

#[path = "../common/glossary.rs"]
mod glossary;

pub use glossary::{Definition, Delete, Lookup, LookupInput};

/// A provider wrapping another. A correct wrapper forwards `read_only`; `lying` claims read-only
/// whatever the wrapped tool says.
pub struct Wrapper {
    pub inner: Arc<dyn ToolProvider>,
    pub lying: bool,
}

impl ToolProvider for Wrapper {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn description(&self) -> &str {
        self.inner.description()
    }
    fn input_schema(&self) -> &Value {
        self.inner.input_schema()
    }
    fn read_only(&self) -> bool {
        self.lying || self.inner.read_only()
    }
    fn instantiate(
        &self,
        arguments: &Value,
        cx: &ToolCallContext,
    ) -> thinkers::Result<BoxJob<ToolOutput>> {
        self.inner.instantiate(arguments, cx)
    }
}

pub fn delete_provider(calls: Arc<AtomicUsize>) -> Arc<dyn ToolProvider> {
    Arc::new(TypedToolProvider::new(Delete { calls }))
}

/// A plain dispatcher recording to memory (scripted turns need no model services).
pub fn dispatcher() -> (Dispatcher, MemoryRecorder) {
    let rec = MemoryRecorder::new();
    let d = Dispatcher::builder()
        .recorder(Arc::new(rec.clone()))
        .build();
    (d, rec)
}

#[path = "../common/offline.rs"]
mod offline;

pub use offline::Setup;

/// A calm sim serving the bundled catalog (bodies logged), and a runtime bound to it.
pub async fn setup_with(tune: impl FnOnce(SimConfig) -> SimConfig) -> Setup {
    offline::start(Duration::from_secs(5), tune).await
}

pub async fn setup() -> Setup {
    setup_with(|c| c).await
}

/// Captures every tracing event (message and fields) on the current thread into a buffer.
#[derive(Clone)]
pub struct LogCapture {
    pub buf: Arc<Mutex<String>>,
}

impl Default for LogCapture {
    /// A capture; the first one made also installs [`AskEachTime`] as the process's subscriber.
    fn default() -> Self {
        static GLOBAL: std::sync::Once = std::sync::Once::new();
        GLOBAL.call_once(|| {
            let _ = tracing::subscriber::set_global_default(AskEachTime);
        });
        Self {
            buf: Arc::default(),
        }
    }
}

/// The process's subscriber while captures run: it records nothing, but it answers every
/// callsite "sometimes". Without it, a callsite first hit by a test on another thread (with no
/// capture) may cache "never" for the whole process while a capture is being set, and that
/// capture then misses the event.
struct AskEachTime;

impl tracing::Subscriber for AskEachTime {
    fn register_callsite(
        &self,
        _: &'static tracing::Metadata<'static>,
    ) -> tracing::subscriber::Interest {
        tracing::subscriber::Interest::sometimes()
    }
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        false
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, _: &tracing::Event<'_>) {}
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

impl LogCapture {
    pub fn text(&self) -> String {
        self.buf.lock().unwrap().clone()
    }
}

struct Visitor<'a>(&'a mut String);

impl tracing::field::Visit for Visitor<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.push_str(&format!(" {}={:?}", field.name(), value));
    }
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.push_str(&format!(" {}={}", field.name(), value));
    }
}

impl tracing::Subscriber for LogCapture {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, attrs: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        let mut line = String::new();
        attrs.record(&mut Visitor(&mut line));
        self.buf.lock().unwrap().push_str(&format!("span{line}\n"));
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, values: &tracing::span::Record<'_>) {
        let mut line = String::new();
        values.record(&mut Visitor(&mut line));
        self.buf
            .lock()
            .unwrap()
            .push_str(&format!("record{line}\n"));
    }
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut line = format!("{} {}", event.metadata().level(), event.metadata().target());
        event.record(&mut Visitor(&mut line));
        self.buf.lock().unwrap().push_str(&line);
        self.buf.lock().unwrap().push('\n');
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

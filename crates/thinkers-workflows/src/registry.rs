//! [`WorkflowRegistry`]: workflows by name, each a factory from JSON input to a job.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::FutureExt as _;
use futures::future::BoxFuture;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use thinkers::dispatch::Dispatcher;
use thinkers::job::{Job, JobId};
use thinkers::{Error, Result};

/// A started workflow: its root job's id and the future of its JSON output.
pub(crate) type Started = (JobId, BoxFuture<'static, Result<Value>>);

type Launch = Box<dyn FnOnce(&Dispatcher, Option<String>, bool) -> Started + Send>;
type Factory = dyn Fn(Value) -> Result<Launch> + Send + Sync;

/// Workflows (doers, thinkers, any job) by name. A service process runs only the names it registered;
/// `submit` checks the input against the registry it is given, so a bad input is refused before
/// it reaches the engine.
#[derive(Clone, Default)]
pub struct WorkflowRegistry {
    factories: BTreeMap<String, Arc<Factory>>,
}

impl std::fmt::Debug for WorkflowRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkflowRegistry")
            .field("names", &self.factories.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl WorkflowRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Register `name`: `make` turns the workflow's input (JSON decoded into `I`) into the root
    /// job, whose output is stored as JSON. A later registration of the same name replaces the
    /// earlier one.
    pub fn register<I, J, F>(&mut self, name: impl Into<String>, make: F) -> &mut Self
    where
        I: DeserializeOwned,
        J: Job,
        J::Output: Serialize,
        F: Fn(I) -> Result<J> + Send + Sync + 'static,
    {
        let name = name.into();
        let owner = name.clone();
        let factory = move |input: Value| -> Result<Launch> {
            let job = make(decode_input(&owner, &input)?)?;
            let owner = owner.clone();
            Ok(Box::new(
                move |dispatcher: &Dispatcher, durable: Option<String>, owned: bool| {
                    let handle = match durable {
                        Some(key) => {
                            dispatcher.submit(thinkers::durable::DurableRun::new(key, job))
                        }
                        None => dispatcher.submit(job),
                    };
                    let id = handle.id();
                    let output = CancelOnDrop {
                        handle: Some(handle),
                        owned,
                    }
                    .map(move |r| {
                        r.and_then(|out| {
                            serde_json::to_value(out).map_err(|e| {
                                Error::system(
                                    format!("workflow `{owner}`"),
                                    "its output did not serialize to JSON",
                                )
                                .with_source(e)
                            })
                        })
                    })
                    .boxed();
                    (id, output)
                },
            ))
        };
        self.factories.insert(name, Arc::new(factory));
        self
    }

    /// The registered names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.factories.keys().map(String::as_str)
    }

    /// Whether `name` is registered.
    pub fn contains(&self, name: &str) -> bool {
        self.factories.contains_key(name)
    }

    /// An error naming `name` and the registered names, unless `name` is registered.
    pub fn check_name(&self, name: &str) -> Result<()> {
        if self.contains(name) {
            return Ok(());
        }
        let known = self.names().collect::<Vec<_>>().join(", ");
        Err(Error::invalid_input(
            "workflow",
            Some(name.to_owned()),
            format!("no workflow of that name is registered (registered: {known})"),
        ))
    }

    /// Check that `name` is registered and that `input` makes its job (the job is built and
    /// dropped): the errors name the unknown workflow or the input field that does not fit.
    pub fn check(&self, name: &str, input: &Value) -> Result<()> {
        self.factory(name)?(input.clone()).map(drop)
    }

    /// Start `name` on `dispatcher` with `input`, in this process: the root job's id (the
    /// workflow's id in the record) and the future of its JSON output. The errors name the
    /// unknown workflow or the input field that does not fit.
    pub fn start(
        &self,
        name: &str,
        input: Value,
        dispatcher: &Dispatcher,
    ) -> Result<(JobId, BoxFuture<'static, Result<Value>>)> {
        Ok(self.factory(name)?(input)?(dispatcher, None, false))
    }

    /// [`WorkflowRegistry::start`] as the durable run `key` (see [`thinkers::durable`]): its tool
    /// calls are journaled under `key`, and starting it again under `key` replays it.
    pub fn start_durable(
        &self,
        name: &str,
        input: Value,
        key: &str,
        dispatcher: &Dispatcher,
    ) -> Result<(JobId, BoxFuture<'static, Result<Value>>)> {
        Ok(self.factory(name)?(input)?(
            dispatcher,
            Some(key.to_owned()),
            false,
        ))
    }

    /// [`WorkflowRegistry::start_durable`] whose run is cancelled when the returned future is
    /// dropped before it finished (an engine invocation that ended must leave nothing running).
    pub(crate) fn start_owned(
        &self,
        name: &str,
        input: Value,
        key: &str,
        dispatcher: &Dispatcher,
    ) -> Result<Started> {
        Ok(self.factory(name)?(input)?(
            dispatcher,
            Some(key.to_owned()),
            true,
        ))
    }

    fn factory(&self, name: &str) -> Result<&Arc<Factory>> {
        self.check_name(name)?;
        self.factories
            .get(name)
            .ok_or_else(|| Error::system("workflow registry", "a checked name vanished"))
    }
}

/// A job's handle that cancels the job when dropped unfinished, if `owned`.
struct CancelOnDrop<T> {
    handle: Option<thinkers::dispatch::JobHandle<T>>,
    owned: bool,
}

impl<T: 'static> std::future::Future for CancelOnDrop<T> {
    type Output = Result<T>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<T>> {
        let Some(handle) = self.handle.as_mut() else {
            return std::task::Poll::Ready(Err(Error::system(
                "workflow registry",
                "a finished workflow was polled again",
            )));
        };
        let out = std::pin::Pin::new(handle).poll(cx);
        if out.is_ready() {
            self.handle = None;
        }
        out
    }
}

impl<T> Drop for CancelOnDrop<T> {
    fn drop(&mut self) {
        if let (true, Some(handle)) = (self.owned, &self.handle) {
            handle.cancel();
        }
    }
}

/// Decode a workflow's input, naming the field that does not fit.
pub fn decode_input<I: DeserializeOwned>(workflow: &str, input: &Value) -> Result<I> {
    thinkers_core::schema::decode_tracked(input).map_err(|e| {
        let path = e.path().to_string();
        let parameter = if path == "." || path.is_empty() {
            "input".to_owned()
        } else {
            format!("input.{path}")
        };
        Error::invalid_input(
            parameter,
            None,
            format!("workflow `{workflow}`: {}", e.inner()),
        )
    })
}

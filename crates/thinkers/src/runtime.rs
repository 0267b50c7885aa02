//! [`Runtime`]: a dispatcher wired for model work in one call.
//!
//! It loads the catalog, configures one admission budget per entry from the entry's limits,
//! registers the [`ModelServices`] (router, HTTP client, token counter), and records to a
//! [`RuntimeStore`] when one is given (the `thinkers-store` crate: SQLite or PostgreSQL), or to a
//! given recorder. Everything it builds is reachable, so a program can also wire the pieces
//! itself.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::Result;
use futures::future::BoxFuture;

use crate::conversation::{ConversationService, ConversationStore, MemoryConversationStore};
use crate::dispatch::{BudgetStore, DispatchConfig, Dispatcher, MemoryBudgets, Services};
use crate::job::{Job, JobId};
use crate::llm::{ModelClient, ModelServices};
use crate::model::{Catalog, Envelope, ModelRouter, Picker};
use crate::ops::{CostLedger, LedgerRecorder};
use crate::record::{NoopRecorder, Recorder};

/// How long [`Runtime::shutdown`] waits for cancelled jobs to record their ends.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// A dispatcher with model services, budgets from the catalog and a recorder.
///
/// Its record is complete when it ends: by [`Runtime::shutdown`] (a graceful stop you can
/// await), or when its last clone is dropped. Either way running work is cancelled and records
/// why, and every row is written (a drop on a current-thread tokio runtime cannot wait for
/// that, and logs what it leaves unwritten instead).
#[derive(Clone)]
pub struct Runtime {
    lifecycle: Arc<Lifecycle>,
    dispatcher: Dispatcher,
    models: Arc<ModelServices>,
    recorder: Arc<dyn Recorder>,
    conversations: Arc<ConversationService>,
    ledger: Arc<CostLedger>,
    store: Option<Arc<dyn RuntimeStore>>,
}

/// A database a [`Runtime`] keeps its record in: the `thinkers-store` crate's `Store` (SQLite or
/// PostgreSQL) implements it, and its `RuntimeBuilderExt::database` hands one to
/// [`RuntimeBuilder::store`]. With a store, the runtime's recorder, durable conversations,
/// durable steps, approvals and the response cache of durable runs all live in it.
pub trait RuntimeStore: std::any::Any + Send + Sync {
    /// A recorder writing to this store; `durable_calls` says whether a model call's row is
    /// committed before the call's answer is handed on.
    fn recorder(&self, durable_calls: bool) -> Result<Arc<dyn Recorder>>;

    /// Durable conversations in this store.
    fn conversations(&self) -> Arc<dyn ConversationStore>;

    /// The journal of durable steps and the approvals in this store (see [`crate::durable`]).
    fn steps(&self) -> Arc<dyn crate::durable::StepStore>;

    /// The response cache in this store, for the model calls of durable runs only (see
    /// [`crate::llm::ResponseCacheService::for_durable_runs`]).
    fn durable_response_cache(&self) -> crate::llm::ResponseCacheService;

    /// Keep the report of the benchmark job `job` of `workflow` (see [`crate::benchmark`]).
    fn save_benchmark_report(
        &self,
        workflow: JobId,
        job: JobId,
        report: serde_json::Value,
    ) -> BoxFuture<'_, Result<()>>;
}

/// Opens a runtime's store when the runtime is built.
type StoreOpener = BoxFuture<'static, Result<Arc<dyn RuntimeStore>>>;

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("models", &self.models)
            .finish_non_exhaustive()
    }
}

/// Builds a [`Runtime`].
#[must_use]
pub struct RuntimeBuilder {
    catalog: Catalog,
    envelope: Envelope,
    picker: Option<Box<dyn Picker>>,
    recorder: Option<Arc<dyn Recorder>>,
    store: Option<StoreOpener>,
    durable_calls: bool,
    budgets: Option<Arc<dyn BudgetStore>>,
    config: DispatchConfig,
    client: Option<ModelClient>,
    conversations: Option<ConversationService>,
    services: Services,
    spend_caps: Vec<crate::dispatch::SpendCap>,
    spend_store: Option<Arc<dyn crate::dispatch::SpendStore>>,
}

impl std::fmt::Debug for RuntimeBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuntimeBuilder").finish_non_exhaustive()
    }
}

impl Runtime {
    /// A builder over a catalog. For offline use, bind the bundled catalog to a running
    /// simulated provider: `Catalog::bundled().with_sim_url(&sim.base_url())`.
    pub fn builder(catalog: Catalog) -> RuntimeBuilder {
        RuntimeBuilder {
            catalog,
            envelope: Envelope::unrestricted(),
            picker: None,
            recorder: None,
            store: None,
            durable_calls: true,
            budgets: None,
            config: DispatchConfig::default(),
            client: None,
            conversations: None,
            services: Services::default(),
            spend_caps: Vec::new(),
            spend_store: None,
        }
    }

    /// A runtime over one OpenAI model ([`Catalog::openai`]: `OPENAI_BASE_URL`,
    /// `OPENAI_API_KEY`), with the defaults of [`Runtime::builder`]: what a first program needs.
    pub async fn openai(model: &str) -> Result<Self> {
        Self::builder(Catalog::openai(model).build()?).build().await
    }

    /// A runtime over one Anthropic model ([`Catalog::anthropic`]: `ANTHROPIC_BASE_URL`,
    /// `ANTHROPIC_API_KEY`), with the defaults of [`Runtime::builder`].
    pub async fn anthropic(model: &str) -> Result<Self> {
        Self::builder(Catalog::anthropic(model).build()?)
            .build()
            .await
    }

    /// The dispatcher.
    pub fn dispatcher(&self) -> &Dispatcher {
        &self.dispatcher
    }

    /// The model services.
    pub fn models(&self) -> &Arc<ModelServices> {
        &self.models
    }

    /// The conversation service (registered on the dispatcher, so thinkers use it): durable
    /// conversations go to the database when one was given, else to memory.
    pub fn conversations(&self) -> &Arc<ConversationService> {
        &self.conversations
    }

    /// The cost ledger the runtime's recorder feeds (registered on the dispatcher, so a
    /// benchmark finds it).
    pub fn ledger(&self) -> &Arc<CostLedger> {
        &self.ledger
    }

    /// The store the runtime records to, when it was given one (the `thinkers-store` crate's
    /// `RuntimeExt` names it by its type).
    pub fn record_store(&self) -> Option<&Arc<dyn RuntimeStore>> {
        self.store.as_ref()
    }

    /// Submit a root job and wait for it.
    pub async fn run<J: Job>(&self, job: J) -> Result<J::Output> {
        self.dispatcher.run(job).await
    }

    /// Run `job` as the durable run `key` (see [`crate::durable`]): its finished tool calls are
    /// journaled under `key`, and running the same job under the same `key` again (after a
    /// crash, or after [`Runtime::approve`] / [`Runtime::deny`] decided the calls an
    /// [`crate::Error::AwaitingApproval`] named) answers them from the journal and goes on.
    /// With a store, the runtime registers its response cache for durable runs, so a replay
    /// sends no model call whose answer is stored.
    pub async fn run_durable<J: Job>(&self, key: &str, job: J) -> Result<J::Output> {
        self.dispatcher
            .run(crate::durable::DurableRun::new(key, job))
            .await
    }

    /// The journal and approvals of the runtime's store.
    fn steps(&self) -> Result<Arc<dyn crate::durable::StepStore>> {
        self.dispatcher
            .services()
            .get::<crate::durable::DurableSteps>()
            .map(|d| Arc::clone(d.store()))
            .ok_or_else(|| {
                crate::Error::invalid_input(
                    "database",
                    None,
                    "this runtime keeps no store, so it has no approvals; give it one with \
                     RuntimeBuilder::store (thinkers-store's RuntimeBuilderExt::database)",
                )
            })
    }

    /// The approvals in the runtime's store, oldest first: the pending ones, or all.
    pub async fn approvals(&self, pending_only: bool) -> Result<Vec<crate::durable::Approval>> {
        self.steps()?.approvals(pending_only).await
    }

    /// Approve the pending call `id`: the next run of its durable run runs it. On PostgreSQL
    /// the run's workflow is marked `queued` once nothing of it is pending.
    pub async fn approve(&self, id: &str) -> Result<crate::durable::Approval> {
        self.steps()?
            .decide(id, &crate::durable::Decision::Approve)
            .await
    }

    /// Deny the pending call `id`: the next run of its durable run answers the call with the
    /// denial and `reason`, and the model goes on.
    pub async fn deny(&self, id: &str, reason: &str) -> Result<crate::durable::Approval> {
        self.steps()?
            .decide(
                id,
                &crate::durable::Decision::Deny {
                    reason: reason.to_owned(),
                },
            )
            .await
    }

    /// Decide the pending call `id` in any way (see [`crate::durable::Decision`]): run it, deny
    /// it, answer it with a stated result, or fail its run. The decision covers the stored call
    /// with its arguments only.
    pub async fn decide(
        &self,
        id: &str,
        decision: &crate::durable::Decision,
    ) -> Result<crate::durable::Approval> {
        self.steps()?.decide(id, decision).await
    }

    /// Wait until every record queued so far is stored.
    pub async fn flush(&self) -> Result<()> {
        self.recorder.flush().await
    }

    /// Cancel the work still running (each job records its end as cancelled because the
    /// runtime shut down), wait up to [`SHUTDOWN_GRACE`] for it, then write every queued row and
    /// close the recorder (a job still running after the grace is recorded as interrupted).
    /// Later calls do nothing.
    pub async fn shutdown(&self) -> Result<()> {
        self.shutdown_because("the runtime shut down").await
    }

    /// [`Self::shutdown`], with the reason the cancelled jobs record (for example "the process
    /// was stopped by SIGINT").
    pub async fn shutdown_because(&self, reason: &str) -> Result<()> {
        self.lifecycle.shut_down(reason).await
    }
}

/// Ends a runtime once: by [`Runtime::shutdown`], or when its last clone is dropped.
struct Lifecycle {
    shut_down: AtomicBool,
    dispatcher: Dispatcher,
    recorder: Arc<dyn Recorder>,
    /// The tokio runtime the runtime was built on, for the shutdown a drop runs.
    handle: tokio::runtime::Handle,
}

impl Lifecycle {
    async fn shut_down(&self, reason: &str) -> Result<()> {
        if self.shut_down.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        let left = self.dispatcher.shutdown(reason, SHUTDOWN_GRACE).await;
        if left > 0 {
            tracing::warn!(
                jobs = left,
                "runtime shutdown: jobs still running after the grace period are recorded as \
                 interrupted"
            );
        }
        self.recorder.close().await
    }
}

/// A runtime dropped without [`Runtime::shutdown`] shuts down there: running jobs are
/// cancelled and record why, and every queued row is written before the drop returns. That
/// blocks the dropping thread, which tokio allows on a multi-threaded runtime (the default of
/// `#[tokio::main]`) and outside any runtime; on a current-thread runtime it cannot wait, so it
/// logs what is left unwritten (call `shutdown` there).
impl Drop for Lifecycle {
    fn drop(&mut self) {
        if self.shut_down.load(Ordering::SeqCst) {
            return;
        }
        use tokio::runtime::{Handle, RuntimeFlavor};
        let reason = "the runtime was dropped";
        let handle = self.handle.clone();
        // A current-thread runtime is driven only by its own `block_on`: waiting on it from
        // here would never end.
        let drives_itself = handle.runtime_flavor() == RuntimeFlavor::MultiThread;
        let wait = || -> Option<Result<()>> {
            match Handle::try_current() {
                Ok(current) if current.runtime_flavor() == RuntimeFlavor::MultiThread => {
                    Some(tokio::task::block_in_place(|| {
                        handle.block_on(self.shut_down(reason))
                    }))
                }
                Err(_) if drives_itself => Some(handle.block_on(self.shut_down(reason))),
                _ => None,
            }
        };
        // A drop during tokio's own shutdown may find its timers gone: that is logged, never a
        // panic out of a destructor.
        let outcome =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(wait)).unwrap_or_else(|_| {
                Some(Err(crate::Error::system(
                    "runtime",
                    "the tokio runtime was shutting down",
                )))
            });
        match outcome {
            Some(Ok(())) => {}
            Some(Err(e)) => tracing::warn!(
                error = %e,
                "a runtime dropped without shutdown(): writing its record failed"
            ),
            None => {
                let running = self.dispatcher.running_tasks();
                let unwritten = self.recorder.unwritten();
                if running > 0 || unwritten > 0 {
                    tracing::warn!(
                        running_jobs = running,
                        unwritten_rows = unwritten,
                        "a runtime was dropped without shutdown() where a drop cannot wait (a \
                         current-thread tokio runtime): its running jobs will not record their \
                         ends and queued rows may not be written"
                    );
                }
            }
        }
    }
}

impl RuntimeBuilder {
    /// Restrict the entries calls may use.
    pub fn envelope(mut self, envelope: Envelope) -> Self {
        self.envelope = envelope;
        self
    }

    /// Replace the default picker (most headroom, then cheapest).
    pub fn picker(mut self, picker: Box<dyn Picker>) -> Self {
        self.picker = Some(picker);
        self
    }

    /// Record through this recorder (instead of a database).
    pub fn recorder(mut self, recorder: Arc<dyn Recorder>) -> Self {
        self.recorder = Some(recorder);
        self
    }

    /// Keep the record in the store `open` yields, opened by [`Self::build`] (an error it
    /// returns is the build's). The `thinkers-store` crate's `RuntimeBuilderExt::database`
    /// calls this with a SQLite file or URL, or a `postgres://` URL.
    pub fn store<F>(mut self, open: F) -> Self
    where
        F: Future<Output = Result<Arc<dyn RuntimeStore>>> + Send + 'static,
    {
        self.store = Some(Box::pin(open));
        self
    }

    /// Whether the database recorder commits a model call's row before the call's answer is
    /// handed on (group commit; on by default). Off, a killed process may lose the rows of its
    /// last calls; on, a call waits for its batch's commit.
    pub fn durable_model_calls(mut self, on: bool) -> Self {
        self.durable_calls = on;
        self
    }

    /// Enforce a spending cap on model calls (per run, per scope-axis value, per UTC day; see
    /// [`crate::dispatch::SpendCaps`]): each call holds its worst-case cost before it is sent, and a
    /// call that would pass a cap fails with [`crate::Error::SpendCapReached`]. May be given
    /// several times; the catalog's caps ([`Catalog::spend_caps`]) hold as well.
    pub fn spend_cap(mut self, cap: crate::dispatch::SpendCap) -> Self {
        self.spend_caps.push(cap);
        self
    }

    /// Keep the spending caps' sums in this store (default: in-process; a
    /// `thinkers_redis::RedisBudgets` shares them between processes).
    pub fn spend_store(mut self, store: Arc<dyn crate::dispatch::SpendStore>) -> Self {
        self.spend_store = Some(store);
        self
    }

    /// Use this budget store (default: in-process).
    pub fn budgets(mut self, budgets: Arc<dyn BudgetStore>) -> Self {
        self.budgets = Some(budgets);
        self
    }

    /// Replace the retry bounds.
    pub fn config(mut self, config: DispatchConfig) -> Self {
        self.config = config;
        self
    }

    /// Use this HTTP client for model calls.
    pub fn client(mut self, client: ModelClient) -> Self {
        self.client = Some(client);
        self
    }

    /// Use this conversation service instead of the default one over the runtime's store.
    pub fn conversations(mut self, service: ConversationService) -> Self {
        self.conversations = Some(service);
        self
    }

    /// Which tool calls wait for a person's approval, beyond those whose tool asks for it (see
    /// [`crate::durable`]). Pending calls are kept in the runtime's store.
    pub fn approval_policy(self, policy: crate::durable::ApprovalPolicy) -> Self {
        self.service(Arc::new(policy))
    }

    /// Register a service jobs find through `cx.services().get::<T>()` (a tool hub, a content
    /// stream, a cost ledger, …). A later service of the same type replaces an earlier one.
    pub fn service<T: Send + Sync + 'static>(mut self, service: Arc<T>) -> Self {
        self.services.insert(service);
        self
    }

    /// Build the runtime. Opens the store when one was given: the recorder (unless one was
    /// given) and the durable conversations both use it.
    pub async fn build(self) -> Result<Runtime> {
        if self.catalog.needs_sim() {
            return Err(crate::Error::invalid_input(
                "catalog",
                Some(self.catalog.source_name().to_owned()),
                "its providers point at the simulated provider ({sim}); bind it first with \
                 Catalog::with_sim_url",
            ));
        }
        let mut services = self.services;
        // The catalog's caps, then the ones set in code.
        let mut caps = self.catalog.spend_caps().to_vec();
        caps.extend(self.spend_caps);
        if !caps.is_empty() {
            let store = self
                .spend_store
                .unwrap_or_else(|| Arc::new(crate::dispatch::MemorySpend::new()));
            services.insert(Arc::new(crate::dispatch::SpendCaps::new(caps, store)?));
        }
        let router = match self.picker {
            Some(p) => ModelRouter::new(self.catalog, self.envelope, p),
            None => ModelRouter::with_headroom_picker(self.catalog, self.envelope),
        };
        let budgets = self
            .budgets
            .unwrap_or_else(|| Arc::new(MemoryBudgets::new()));
        router.configure_budgets(budgets.as_ref());
        let client = match self.client {
            Some(c) => c,
            None => ModelClient::new()?,
        };
        let models = Arc::new(ModelServices::with_client(router, client));
        let store = match self.store {
            Some(open) => Some(open.await?),
            None => None,
        };
        let recorder: Arc<dyn Recorder> = match (self.recorder, &store) {
            (Some(r), _) => r,
            (None, Some(s)) => s.recorder(self.durable_calls)?,
            (None, None) => Arc::new(NoopRecorder),
        };
        // Every row also feeds the cost ledger, which keeps only the workflows it watches.
        let ledger = Arc::new(CostLedger::new());
        let recorder: Arc<dyn Recorder> =
            Arc::new(LedgerRecorder::new(recorder, CostLedger::clone(&ledger)));
        let conversations = Arc::new(match (self.conversations, &store) {
            (Some(c), _) => c,
            (None, Some(s)) => ConversationService::new(s.conversations()),
            (None, None) => ConversationService::new(Arc::new(MemoryConversationStore::new())),
        });
        // The caller's services last, so one of theirs replaces a default of the same type.
        let mut dispatcher = Dispatcher::builder()
            .budgets(budgets)
            .recorder(recorder.clone())
            .service(models.clone())
            .service(conversations.clone())
            .service(ledger.clone());
        if let Some(s) = &store {
            // The store itself too: a benchmark keeps its report there.
            dispatcher = dispatcher
                .service(Arc::new(Arc::clone(s)))
                .service(Arc::new(crate::durable::DurableSteps::new(s.steps())))
                .service(Arc::new(s.durable_response_cache()));
        }
        let dispatcher = dispatcher.services(services).config(self.config).build();
        Ok(Runtime {
            lifecycle: Arc::new(Lifecycle {
                shut_down: AtomicBool::new(false),
                dispatcher: dispatcher.clone(),
                recorder: recorder.clone(),
                handle: tokio::runtime::Handle::current(),
            }),
            dispatcher,
            models,
            recorder,
            conversations,
            ledger,
            store,
        })
    }
}

//! The job contract: [`Job`], [`Orchestrator`] and the context every job runs in.
//!
//! A job is one unit of work the dispatcher runs. Before every attempt the dispatcher asks the job
//! for its [`Requirements`] (a model seat, a slot of a named service budget), waits until they are
//! admitted, and then calls [`Job::execute`] with the granted [`Resources`]. The dispatcher's
//! kernel lives here too (published as [`crate::dispatch`]): it is the only code that makes a
//! [`JobContext`] or [`Resources`], so both mean what they say wherever a job receives them. Because `execute`
//! takes `&mut self`, a job that asks to be run again (a correction, a truncation escalation) is
//! re-run as the *same instance*, with whatever state it grew.
//!
//! An [`Orchestrator`] is a job that holds nothing: it coordinates other jobs. The blanket
//! `impl<T: Orchestrator> Job for T` answers no requirements and no timeout, and bridges
//! `execute(res, cx)` to `Orchestrator::execute(cx)`. An orchestrator cannot implement `Job`
//! itself, so it cannot take resources: the type system enforces "orchestrators hold nothing".
//!
//! [`Doer`] (coded orchestration) and thinkers (model-driven orchestration, `thinkers::thinker`)
//! are orchestrators. A doer runs children one after another with [`JobContext::submit`] and
//! side by side with [`JobContext::fan_out`]; both stamp each child with its step ordinal (see
//! [`context`] for the contract).

pub mod context;
mod dynjob;
mod handle;
pub(crate) mod kernel;
mod limits;
mod requirements;
pub mod scope;
mod services;

pub use crate::id::JobId;
pub use context::{FanOut, JobContext, META_ITERATION};
pub use dynjob::{BoxJob, DynJob};
pub use handle::JobHandle;
pub use limits::{Limits, Rate};
pub use requirements::{Ask, AttemptInfo, Requirement, Requirements, Resources, Seat, SeatUse};
pub use scope::ScopeGuard;
pub use services::Services;

use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::time::Duration;

use crate::Result;

/// How many corrections the dispatcher allows a job unless it says otherwise.
pub const DEFAULT_MAX_CORRECTIONS: u32 = 3;

/// One unit of work the dispatcher runs.
pub trait Job: Send + 'static {
    /// What the job produces.
    type Output: Send + 'static;

    /// The job class, used in records, traces and sizing.
    fn class(&self) -> Cow<'static, str>;

    /// What this attempt needs admitted. Called before every attempt, so each attempt gets a fresh
    /// binding (a re-rendered body, a re-priced reservation).
    fn requirements(&mut self, req: &mut Requirements, cx: &JobContext) -> Result<()> {
        let _ = (req, cx);
        Ok(())
    }

    /// A bound on each attempt's execution time (admission waits do not count).
    fn timeout(&self) -> Option<Duration> {
        None
    }

    /// How many correction signals the dispatcher honours before giving up.
    fn max_corrections(&self) -> u32 {
        DEFAULT_MAX_CORRECTIONS
    }

    /// Do the work with the admitted resources.
    fn execute(
        &mut self,
        res: &Resources,
        cx: &JobContext,
    ) -> impl Future<Output = Result<Self::Output>> + Send;
}

/// A job that holds no resources and coordinates other jobs.
///
/// Implement this instead of [`Job`]; the blanket implementation supplies the job contract and
/// cannot be overridden.
pub trait Orchestrator: Send + 'static {
    /// What the orchestration produces.
    type Output: Send + 'static;

    /// The job class, used in records, traces and sizing.
    fn class(&self) -> Cow<'static, str>;

    /// How many correction signals the dispatcher honours before giving up.
    fn max_corrections(&self) -> u32 {
        DEFAULT_MAX_CORRECTIONS
    }

    /// Coordinate: submit children through the context, wait, branch, loop.
    fn execute(&mut self, cx: &JobContext) -> impl Future<Output = Result<Self::Output>> + Send;
}

impl<T: Orchestrator> Job for T {
    type Output = T::Output;

    fn class(&self) -> Cow<'static, str> {
        Orchestrator::class(self)
    }

    fn requirements(&mut self, _req: &mut Requirements, _cx: &JobContext) -> Result<()> {
        Ok(())
    }

    fn timeout(&self) -> Option<Duration> {
        None
    }

    fn max_corrections(&self) -> u32 {
        Orchestrator::max_corrections(self)
    }

    fn execute(
        &mut self,
        _res: &Resources,
        cx: &JobContext,
    ) -> impl Future<Output = Result<Self::Output>> + Send {
        Orchestrator::execute(self, cx)
    }
}

/// Marker for coded orchestration: an [`Orchestrator`] whose logic is Rust code.
pub trait Doer: Orchestrator {}

/// A doer made from a closure; see [`doer`].
pub struct FnDoer<F> {
    class: Cow<'static, str>,
    body: F,
}

impl<F> fmt::Debug for FnDoer<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnDoer")
            .field("class", &self.class)
            .finish_non_exhaustive()
    }
}

/// Make a doer from a closure that receives the doer's context.
///
/// ```
/// use thinkers_core::job::{Orchestrator, doer};
/// let fan_out = doer("fan_out", |cx| async move {
///     let step = cx.fan_out();
///     let a = step.submit(doer("a", |_| async { Ok(1) }));
///     let b = step.submit(doer("b", |_| async { Ok(2) }));
///     Ok(a.await? + b.await?)
/// });
/// assert_eq!(Orchestrator::class(&fan_out), "fan_out");
/// // A dispatcher runs it: `thinkers::Dispatcher::run(fan_out)` gives 3 (the crate-level docs of
/// // `thinkers` run a doer end to end).
/// ```
pub fn doer<F, Fut, O>(class: impl Into<Cow<'static, str>>, body: F) -> FnDoer<F>
where
    F: FnMut(JobContext) -> Fut + Send + 'static,
    Fut: Future<Output = Result<O>> + Send,
    O: Send + 'static,
{
    FnDoer {
        class: class.into(),
        body,
    }
}

impl<F, Fut, O> Orchestrator for FnDoer<F>
where
    F: FnMut(JobContext) -> Fut + Send + 'static,
    Fut: Future<Output = Result<O>> + Send,
    O: Send + 'static,
{
    type Output = O;

    fn class(&self) -> Cow<'static, str> {
        self.class.clone()
    }

    fn execute(&mut self, cx: &JobContext) -> impl Future<Output = Result<O>> + Send {
        (self.body)(cx.clone())
    }
}

impl<F, Fut, O> Doer for FnDoer<F>
where
    F: FnMut(JobContext) -> Fut + Send + 'static,
    Fut: Future<Output = Result<O>> + Send,
    O: Send + 'static,
{
}

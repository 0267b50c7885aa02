//! The door a running job submits its children through: [`Submitter`], object-safe, so the job
//! contract does not depend on the dispatcher that implements it.
//!
//! A child crosses the door with its type erased ([`erase`]: a boxed job whose output is boxed as
//! [`AnyOutput`]); [`JobContext`]'s submission methods read the output back as the child's own
//! type, so callers never see the erasure.

use std::any::Any;
use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;

use super::{BoxJob, Job, JobContext, JobHandle, Requirements, Resources, ScopeGuard, Services};
use crate::Result;
use crate::record::Recorder;

/// A job's output with its type erased, as it crosses the [`Submitter`].
pub type AnyOutput = Box<dyn Any + Send>;

/// What runs the jobs a [`JobContext`] submits: the dispatcher. Every method takes the parent's
/// context, so the child is linked, scoped and stamped under it.
pub trait Submitter: Send + Sync + 'static {
    /// Run `job` on a task of its own as a child of `parent`, with step `ordinal`, in `scope`
    /// (the parent's when `None`).
    fn spawn(
        self: Arc<Self>,
        job: BoxJob<AnyOutput>,
        parent: &JobContext,
        ordinal: Option<u32>,
        scope: Option<Arc<ScopeGuard>>,
    ) -> JobHandle<AnyOutput>;

    /// Run `job` as a child of `parent` inside the caller's task (see
    /// [`JobContext::run_in_current_step`]).
    fn run_here<'a>(
        self: Arc<Self>,
        job: BoxJob<AnyOutput>,
        parent: &'a JobContext,
        ordinal: Option<u32>,
    ) -> BoxFuture<'a, Result<AnyOutput>>;

    /// The shared services jobs look up by type.
    fn services(&self) -> &Services;

    /// Where job starts, ends and model calls are recorded.
    fn recorder(&self) -> &Arc<dyn Recorder>;

    /// Why the submitter stopped every job, once it has.
    fn stop_reason(&self) -> Option<Arc<str>>;

    /// Itself, for a runtime to find its own type behind the trait.
    fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync>;
}

/// `job` with its output boxed, ready to cross the [`Submitter`].
pub fn erase<J: Job>(job: J) -> BoxJob<AnyOutput> {
    BoxJob::new(Erased(job))
}

struct Erased<J>(J);

impl<J: Job> Job for Erased<J> {
    type Output = AnyOutput;

    fn class(&self) -> Cow<'static, str> {
        self.0.class()
    }

    fn requirements(&mut self, req: &mut Requirements, cx: &JobContext) -> Result<()> {
        self.0.requirements(req, cx)
    }

    fn timeout(&self) -> Option<Duration> {
        self.0.timeout()
    }

    fn max_corrections(&self) -> u32 {
        self.0.max_corrections()
    }

    async fn execute(&mut self, res: &Resources, cx: &JobContext) -> Result<AnyOutput> {
        let out = self.0.execute(res, cx).await?;
        Ok(Box::new(out))
    }
}

//! The object-safe form of [`Job`], for registries and tool providers.

use std::borrow::Cow;
use std::time::Duration;

use futures::future::BoxFuture;

use super::{Job, JobContext, Requirements, Resources};
use crate::Result;

/// An object-safe job. Every [`Job`] is one; [`BoxJob`] turns it back into a [`Job`].
pub trait DynJob: Send + 'static {
    /// What the job produces.
    type Output: Send + 'static;
    /// See [`Job::class`].
    fn class(&self) -> Cow<'static, str>;
    /// See [`Job::requirements`].
    fn requirements(&mut self, req: &mut Requirements, cx: &JobContext) -> Result<()>;
    /// See [`Job::timeout`].
    fn timeout(&self) -> Option<Duration>;
    /// See [`Job::max_corrections`].
    fn max_corrections(&self) -> u32;
    /// See [`Job::execute`].
    fn execute_boxed<'a>(
        &'a mut self,
        res: &'a Resources,
        cx: &'a JobContext,
    ) -> BoxFuture<'a, Result<Self::Output>>;
}

impl<J: Job> DynJob for J {
    type Output = J::Output;
    fn class(&self) -> Cow<'static, str> {
        Job::class(self)
    }
    fn requirements(&mut self, req: &mut Requirements, cx: &JobContext) -> Result<()> {
        Job::requirements(self, req, cx)
    }
    fn timeout(&self) -> Option<Duration> {
        Job::timeout(self)
    }
    fn max_corrections(&self) -> u32 {
        Job::max_corrections(self)
    }
    fn execute_boxed<'a>(
        &'a mut self,
        res: &'a Resources,
        cx: &'a JobContext,
    ) -> BoxFuture<'a, Result<Self::Output>> {
        Box::pin(Job::execute(self, res, cx))
    }
}

/// A boxed, type-erased job with a known output type.
pub struct BoxJob<O>(Box<dyn DynJob<Output = O>>);

impl<O: Send + 'static> BoxJob<O> {
    /// Box a job.
    pub fn new(job: impl Job<Output = O>) -> Self {
        Self(Box::new(job))
    }
}

impl<O: Send + 'static> std::fmt::Debug for BoxJob<O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("BoxJob").field(&self.0.class()).finish()
    }
}

impl<O: Send + 'static> Job for BoxJob<O> {
    type Output = O;
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
    async fn execute(&mut self, res: &Resources, cx: &JobContext) -> Result<O> {
        self.0.execute_boxed(res, cx).await
    }
}

//! The handle of a submitted job: a future of its output.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::task::JoinHandle;

use crate::job::{JobContext, JobId};
use crate::{Error, Result};

/// A submitted job. Await it for the output; dropping it does not cancel the job.
pub struct JobHandle<T> {
    cx: JobContext,
    task: JoinHandle<Result<T>>,
}

impl<T> std::fmt::Debug for JobHandle<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobHandle")
            .field("id", &self.cx.id())
            .finish()
    }
}

impl<T> JobHandle<T> {
    pub(crate) fn new(cx: JobContext, task: JoinHandle<Result<T>>) -> Self {
        Self { cx, task }
    }

    /// The job's id.
    pub fn id(&self) -> JobId {
        self.cx.id()
    }

    /// The job's context (metadata, scope, lineage), readable during and after the run.
    pub fn context(&self) -> &JobContext {
        &self.cx
    }

    /// Cancel the job and every job it submitted. The handle then resolves to
    /// [`Error::Cancelled`] (unless the job had already finished).
    pub fn cancel(&self) {
        self.cx.node.cancel_token().cancel();
    }
}

impl<T> Future for JobHandle<T> {
    type Output = Result<T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match Pin::new(&mut self.task).poll(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Ok(r)) => Poll::Ready(r),
            Poll::Ready(Err(e)) if e.is_cancelled() => Poll::Ready(Err(Error::Cancelled)),
            Poll::Ready(Err(e)) => {
                Poll::Ready(Err(Error::system("dispatcher task", e.to_string())))
            }
        }
    }
}

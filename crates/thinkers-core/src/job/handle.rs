//! The handle of a submitted job: a future of its output.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::task::JoinHandle;

use super::{JobContext, JobId};
use crate::{Error, Result};

/// A submitted job. Await it for the output; drop it to let the job run on unobserved.
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
    /// The handle of the job `cx` running on `task`: made by the submission door only.
    pub(crate) fn new(cx: JobContext, task: JoinHandle<Result<T>>) -> Self {
        Self { cx, task }
    }

    /// The job's id.
    pub fn id(&self) -> JobId {
        self.cx.id()
    }

    /// The job's context.
    pub fn context(&self) -> &JobContext {
        &self.cx
    }

    /// Cancel the job (and everything under it).
    pub fn cancel(&self) {
        self.cx.node.cancel_token().cancel();
    }
}

fn joined<T>(joined: std::result::Result<Result<T>, tokio::task::JoinError>) -> Result<T> {
    match joined {
        Ok(r) => r,
        Err(e) if e.is_cancelled() => Err(Error::Cancelled),
        Err(e) => Err(Error::system("dispatcher task", e.to_string())),
    }
}

impl<T: 'static> Future for JobHandle<T> {
    type Output = Result<T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.task).poll(cx).map(joined)
    }
}

//! The handle of a submitted job: a future of its output.

use std::any::Any;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::task::JoinHandle;

use super::submit::AnyOutput;
use super::{JobContext, JobId};
use crate::{Error, Result};

/// A submitted job. Await it for the output; drop it to let the job run on unobserved.
pub struct JobHandle<T> {
    cx: JobContext,
    task: Task<T>,
}

/// The task behind a handle: one that yields the output as it is, or one whose output crossed
/// the object-safe [`super::Submitter`] and is turned back into `T` when it arrives.
enum Task<T> {
    Typed(JoinHandle<Result<T>>),
    Erased(JoinHandle<Result<AnyOutput>>, PhantomData<fn() -> T>),
}

impl<T> std::fmt::Debug for JobHandle<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobHandle")
            .field("id", &self.cx.id())
            .finish()
    }
}

impl<T> JobHandle<T> {
    /// The handle of the job `cx` running on `task`. Made by a dispatcher as it spawns a job.
    #[doc(hidden)]
    pub fn new(cx: JobContext, task: JoinHandle<Result<T>>) -> Self {
        Self {
            cx,
            task: Task::Typed(task),
        }
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

impl JobHandle<AnyOutput> {
    /// The same job, its output read back as `T`: what it is when the job's output type is `T`.
    pub(crate) fn downcast<T: Send + 'static>(self) -> JobHandle<T> {
        let task = match self.task {
            Task::Typed(task) | Task::Erased(task, _) => Task::Erased(task, PhantomData),
        };
        JobHandle { cx: self.cx, task }
    }
}

/// An erased output read back as `T`; any other type is a system error, never a panic.
pub(crate) fn output_as<T: 'static>(out: AnyOutput, class: &str) -> Result<T> {
    let out: Box<dyn Any> = out;
    out.downcast::<T>().map(|t| *t).map_err(|_| {
        Error::system(
            "job handle",
            format!(
                "the output of `{class}` is not a {}",
                std::any::type_name::<T>()
            ),
        )
    })
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
        let this = &mut *self;
        match &mut this.task {
            Task::Typed(task) => Pin::new(task).poll(cx).map(joined),
            Task::Erased(task, _) => Pin::new(task)
                .poll(cx)
                .map(|r| joined(r).and_then(|out| output_as(out, this.cx.class()))),
        }
    }
}

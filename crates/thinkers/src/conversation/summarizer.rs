//! [`Summarizer`]: what compaction asks to condense older turns.
//!
//! The production summariser is the `summarization` one-call tool at [`crate::model::Grade::Small`],
//! run through the dispatcher so its call is admitted, priced and recorded like any other. This
//! module only defines the seam: implement [`Summarizer`] directly, or wrap an async closure with
//! [`summarizer_fn`] (for example one that submits the tool and returns its text).

use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;

use crate::Result;

/// Condenses a transcript into a summary of about `target_tokens` tokens.
///
/// The compaction guarantee (the compacted request fits under the trigger) holds when the summary
/// stays within `target_tokens`; a longer summary is kept, and the compaction record shows the
/// size it reached.
pub trait Summarizer: Send + Sync + 'static {
    /// Summarise `transcript` (readable text of the turns being folded, as
    /// [`super::Conversation::transcript`] renders them) in at most about `target_tokens` tokens.
    fn summarize<'a>(
        &'a self,
        transcript: &'a str,
        target_tokens: u32,
    ) -> BoxFuture<'a, Result<String>>;
}

impl<T: Summarizer + ?Sized> Summarizer for Arc<T> {
    fn summarize<'a>(
        &'a self,
        transcript: &'a str,
        target_tokens: u32,
    ) -> BoxFuture<'a, Result<String>> {
        (**self).summarize(transcript, target_tokens)
    }
}

impl<T: Summarizer + ?Sized> Summarizer for Box<T> {
    fn summarize<'a>(
        &'a self,
        transcript: &'a str,
        target_tokens: u32,
    ) -> BoxFuture<'a, Result<String>> {
        (**self).summarize(transcript, target_tokens)
    }
}

/// A [`Summarizer`] over an async closure taking the transcript and the target token count.
/// Build one with [`summarizer_fn`].
#[derive(Clone)]
pub struct FnSummarizer<F>(F);

impl<F> std::fmt::Debug for FnSummarizer<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FnSummarizer")
    }
}

/// Wrap `f` as a [`Summarizer`]: the adapter point for the `summarization` tool.
pub fn summarizer_fn<F, Fut>(f: F) -> FnSummarizer<F>
where
    F: Fn(String, u32) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<String>> + Send + 'static,
{
    FnSummarizer(f)
}

impl<F, Fut> Summarizer for FnSummarizer<F>
where
    F: Fn(String, u32) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<String>> + Send + 'static,
{
    fn summarize<'a>(
        &'a self,
        transcript: &'a str,
        target_tokens: u32,
    ) -> BoxFuture<'a, Result<String>> {
        Box::pin((self.0)(transcript.to_owned(), target_tokens))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn closures_summarise() -> anyhow::Result<()> {
        let s: Arc<dyn Summarizer> = Arc::new(summarizer_fn(|text: String, target| async move {
            Ok(format!("{} chars in {target}", text.len()))
        }));
        assert_eq!(s.summarize("hello", 10).await?, "5 chars in 10");
        Ok(())
    }
}

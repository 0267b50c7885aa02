//! The dispatcher stage of the demo: a doer that fans out, gets throttled, corrects itself and
//! survives a failing child.

use std::borrow::Cow;
use std::time::Duration;

use thinkers::job::{Job, JobContext, JobId, Resources, doer};
use thinkers::{Dispatcher, Error, Result};

/// A stand-in for a slow lookup.
struct FetchSource {
    name: &'static str,
    millis: u64,
}

impl Job for FetchSource {
    type Output = String;
    fn class(&self) -> Cow<'static, str> {
        "fetch_source".into()
    }
    async fn execute(&mut self, _: &Resources, _: &JobContext) -> Result<String> {
        tokio::time::sleep(Duration::from_millis(self.millis)).await;
        Ok(format!("{} ({} ms)", self.name, self.millis))
    }
}

/// A call whose provider throttles the first attempt.
struct RateLimitedCall {
    attempts: u32,
}

impl Job for RateLimitedCall {
    type Output = u32;
    fn class(&self) -> Cow<'static, str> {
        "rate_limited_call".into()
    }
    async fn execute(&mut self, _: &Resources, _: &JobContext) -> Result<u32> {
        self.attempts += 1;
        if self.attempts == 1 {
            return Err(Error::throttled(None, Some(Duration::from_millis(300))));
        }
        Ok(self.attempts)
    }
}

/// A job whose first answer does not parse; it asks to be re-run on its grown state.
struct SelfCorrecting {
    transcript: Vec<String>,
}

impl Job for SelfCorrecting {
    type Output = Vec<String>;
    fn class(&self) -> Cow<'static, str> {
        "self_correcting_parse".into()
    }
    async fn execute(&mut self, _: &Resources, _: &JobContext) -> Result<Vec<String>> {
        if self.transcript.is_empty() {
            self.transcript.push("answer 1: not JSON".into());
            return Err(Error::correction("the answer was not JSON"));
        }
        self.transcript.push("answer 2: {\"ok\": true}".into());
        Ok(self.transcript.clone())
    }
}

/// A service that is down.
struct FlakyService;

impl Job for FlakyService {
    type Output = ();
    fn class(&self) -> Cow<'static, str> {
        "flaky_service".into()
    }
    async fn execute(&mut self, _: &Resources, _: &JobContext) -> Result<()> {
        Err(Error::external(
            "inventory",
            "lookup",
            "HTTP 503 Service Unavailable",
        ))
    }
}

/// What the stage prints.
pub(crate) struct Outcome {
    pub(crate) workflow: JobId,
    sources: Vec<String>,
    attempts: u32,
    transcript: Vec<String>,
    failure: Option<Error>,
}

impl Outcome {
    pub(crate) fn print(&self) {
        println!("Dispatcher stage");
        println!(
            "  fan-out (one step, in parallel): {}",
            self.sources.join(", ")
        );
        println!("  throttled call succeeded on attempt {}", self.attempts);
        println!("  corrected job: {}", self.transcript.join(" → "));
        match &self.failure {
            Some(e) => println!("  failed child, recorded and survived: {e}"),
            None => println!("  the failing child unexpectedly succeeded"),
        }
    }
}

pub(crate) async fn run(dispatcher: &Dispatcher) -> anyhow::Result<Outcome> {
    let handle = dispatcher.submit(doer("demo_workflow", |cx| async move {
        // Step 1: three lookups in parallel, sharing one ordinal.
        let step = cx.fan_out();
        let fetches: Vec<_> = [("glossary", 120), ("tickets", 80), ("wiki", 150)]
            .into_iter()
            .map(|(name, millis)| step.submit(FetchSource { name, millis }))
            .collect();
        let mut sources = Vec::new();
        for f in fetches {
            sources.push(f.await?);
        }
        // Step 2: throttled once, then admitted again.
        let attempts = cx.submit(RateLimitedCall { attempts: 0 }).await?;
        // Step 3: corrected once, the same instance re-run.
        let transcript = cx
            .submit(SelfCorrecting {
                transcript: Vec::new(),
            })
            .await?;
        // Step 4: a failure the doer survives.
        let failure = cx.submit(FlakyService).await.err();
        Ok((sources, attempts, transcript, failure))
    }));
    let workflow = handle.id();
    let (sources, attempts, transcript, failure) = handle.await?;
    Ok(Outcome {
        workflow,
        sources,
        attempts,
        transcript,
        failure,
    })
}

//! Admission by construction (issue 30, point 2): the one public way to a model,
//! `converse_bound`, sends only under a seat the attempt was admitted for, and only once. The
//! compile-time half (no public send, no permit outside the dispatcher) is in
//! `tests/compile_fail/`: no public send, and no `Resources` or permit anywhere but the
//! dispatcher's attempt loop). A call whose answer the response cache already holds (a replayed
//! Restate step) asks for no seat at all.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use thinkers::ErrorKind;
use thinkers::conversation::Message;
use thinkers::job::{Job, JobContext, Requirements, Resources};
use thinkers::llm::{
    BoundSeat, CacheKey, CacheUse, ChatRequest, ChatResponse, LlmOutcome, ResponseCache,
    ResponseCacheService, converse_bound, require_seat,
};
use thinkers::model::{Catalog, Depth, Grade, ModelDependent, OutputSize};

use crate::support::setup;

const ENTRY: &str = "sim-small-a";

fn question() -> ChatRequest {
    ChatRequest::new(
        "You answer questions about the glossary.",
        vec![Message::user_text("What is a seat?")],
    )
}

/// The seat of the jobs below: Small, pinned to one entry.
struct Pinned;

impl ModelDependent for Pinned {
    fn grade(&self) -> Grade {
        Grade::Small
    }
    fn set_grade(&mut self, _: Grade) {}
    fn pin(&self) -> Option<&str> {
        Some(ENTRY)
    }
    fn pin_model(&mut self, _: String) {}
}

/// Bind `question()` for one attempt, adding its seat to `req`.
fn bind(req: &mut Requirements, cx: &JobContext) -> thinkers::Result<BoundSeat> {
    let mut request = question();
    require_seat(
        &Pinned,
        Depth::Quick,
        OutputSize::Compact,
        &mut request,
        req,
        cx,
    )
}

/// A job that asks admission for nothing, then binds a seat inside `execute` (on requirements of
/// its own making, which admission never sees) and tries to send under it.
struct Unadmitted;

impl Job for Unadmitted {
    type Output = LlmOutcome;

    fn class(&self) -> Cow<'static, str> {
        Cow::Borrowed("unadmitted")
    }

    async fn execute(&mut self, res: &Resources, cx: &JobContext) -> thinkers::Result<LlmOutcome> {
        let mut own = Requirements::new(res.attempt());
        let bound = bind(&mut own, cx)?;
        converse_bound(bound, "unadmitted", None, res, cx).await
    }
}

#[tokio::test]
async fn a_call_under_a_seat_admission_never_granted_is_refused_before_the_wire() {
    let s = setup().await;
    let err = s.rt.run(Unadmitted).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::System, "{err}");
    let text = err.to_string();
    assert!(text.contains("no unspent admitted seat"), "{text}");
    assert!(text.contains(ENTRY), "the refusal names the entry: {text}");
    assert_eq!(
        s.sim.stats().totals.requests,
        0,
        "nothing reached the provider"
    );
}

/// A job admitted for one seat that binds the same request twice before its attempt (the
/// second binding on requirements of its own, so both are priced alike), sends under the first,
/// then tries the second on the same admission.
#[derive(Default)]
struct Twice {
    bound: Vec<BoundSeat>,
}

impl Job for Twice {
    type Output = (LlmOutcome, thinkers::Error);

    fn class(&self) -> Cow<'static, str> {
        Cow::Borrowed("twice")
    }

    fn requirements(&mut self, req: &mut Requirements, cx: &JobContext) -> thinkers::Result<()> {
        let first = bind(req, cx)?;
        let mut own = Requirements::new(req.attempt());
        let second = bind(&mut own, cx)?;
        assert_eq!(
            own.items(),
            req.items(),
            "the second seat is the admitted one's twin"
        );
        self.bound = vec![first, second];
        Ok(())
    }

    async fn execute(
        &mut self,
        res: &Resources,
        cx: &JobContext,
    ) -> thinkers::Result<(LlmOutcome, thinkers::Error)> {
        let mut bound = std::mem::take(&mut self.bound).into_iter();
        let (Some(first), Some(second)) = (bound.next(), bound.next()) else {
            return Err(thinkers::Error::system("twice", "not bound"));
        };
        let first = converse_bound(first, "twice", None, res, cx).await?;
        match converse_bound(second, "twice", None, res, cx).await {
            Ok(_) => Err(thinkers::Error::system("twice", "a second call was sent")),
            Err(e) => Ok((first, e)),
        }
    }
}

#[tokio::test]
async fn one_admitted_seat_serves_one_call() {
    let s = setup().await;
    let (first, second) = s.rt.run(Twice::default()).await.unwrap();
    assert_eq!(&*first.entry, ENTRY);
    assert_eq!(second.kind(), ErrorKind::System, "{second}");
    assert!(
        second.to_string().contains("no unspent admitted seat"),
        "{second}"
    );
    assert_eq!(
        s.sim.stats().model(ENTRY).requests,
        1,
        "only the admitted call reached the provider"
    );
}

/// A response cache in memory whose answers are all at hand ([`ResponseCache::holds`]), as a
/// Restate journal read before the round is.
#[derive(Default)]
struct HeldAnswers {
    answers: Mutex<HashMap<CacheKey, ChatResponse>>,
}

impl ResponseCache for HeldAnswers {
    fn get<'a>(
        &'a self,
        key: &'a CacheKey,
        _by: CacheUse,
    ) -> BoxFuture<'a, thinkers::Result<Option<ChatResponse>>> {
        let found = self.answers.lock().unwrap().get(key).cloned();
        Box::pin(async move { Ok(found) })
    }

    fn put<'a>(
        &'a self,
        key: &'a CacheKey,
        _entry: &'a str,
        response: &'a ChatResponse,
        _by: CacheUse,
    ) -> BoxFuture<'a, thinkers::Result<()>> {
        self.answers.lock().unwrap().insert(*key, response.clone());
        Box::pin(async { Ok(()) })
    }

    fn holds(&self, key: &CacheKey, _by: &CacheUse) -> bool {
        self.answers.lock().unwrap().contains_key(key)
    }
}

/// A job that binds `question()` and keeps what it asked admission for.
#[derive(Default)]
struct Asks {
    bound: Option<BoundSeat>,
    seats: Arc<Mutex<Vec<usize>>>,
}

impl Job for Asks {
    type Output = LlmOutcome;

    fn class(&self) -> Cow<'static, str> {
        Cow::Borrowed("asks")
    }

    fn requirements(&mut self, req: &mut Requirements, cx: &JobContext) -> thinkers::Result<()> {
        self.bound = Some(bind(req, cx)?);
        self.seats.lock().unwrap().push(req.items().len());
        Ok(())
    }

    async fn execute(&mut self, res: &Resources, cx: &JobContext) -> thinkers::Result<LlmOutcome> {
        let bound = self
            .bound
            .take()
            .ok_or_else(|| thinkers::Error::system("asks", "not bound"))?;
        converse_bound(bound, "asks", None, res, cx).await
    }
}

#[tokio::test]
async fn a_call_whose_answer_is_held_takes_no_seat_and_sends_nothing() {
    let s = setup().await;
    let cache = Arc::new(HeldAnswers::default());
    let rt = thinkers::Runtime::builder(Catalog::bundled().with_sim_url(&s.sim.base_url()))
        .service(Arc::new(ResponseCacheService::new(cache.clone())))
        .build()
        .await
        .unwrap();
    // Paid once: the first call takes its seat and stores the answer.
    let first = Asks::default();
    let seats = Arc::clone(&first.seats);
    let paid = rt.run(first).await.unwrap();
    assert_eq!(
        *seats.lock().unwrap(),
        [1],
        "the first call asked for its seat"
    );
    // The entry's budget is closed for an hour: a call that asks for a seat would wait.
    let budget = Catalog::bundled().entry(ENTRY).unwrap().budget_name();
    rt.dispatcher()
        .admission()
        .store()
        .pause(&budget, Duration::from_secs(3600));
    let again = Asks::default();
    let seats = Arc::clone(&again.seats);
    let held = tokio::time::timeout(Duration::from_secs(20), rt.run(again))
        .await
        .expect("a held answer waits for no seat")
        .unwrap();
    assert_eq!(
        *seats.lock().unwrap(),
        [0],
        "no requirement was asked of admission"
    );
    assert_eq!(held.response.text(), paid.response.text());
    assert_eq!(
        s.sim.stats().model(ENTRY).requests,
        1,
        "the held answer was not sent again"
    );
}

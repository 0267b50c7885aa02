//! [`LlmCall`]: one model call as a job.
//!
//! Per attempt, in `requirements`: resolve the entry (pin or picker, inside the envelope), turn the
//! seat's words into numbers (output size → max tokens, capped at the entry's ceiling or raised to
//! it under the truncation escalation; depth → reasoning budget or effort), render the exact
//! request body, count its tokens, and ask admission for a seat priced from those bytes. In
//! `execute`: send exactly those bytes, feed the provider's rate-limit headers back to the budget,
//! reconcile the reservation with the reported usage, calibrate the token counter, record an
//! LLM-run row with the cost in the entry's currency, and ask for a truncation escalation when
//! the answer hit its budget on a first attempt.
//!
//! A call whose request carries a response schema corrects its answer like a one-call tool, through
//! the same bounded exchange (`onecall::correction`). The answer "parses" when it is JSON that
//! keeps the schema's structure at every depth (kinds, required fields, enum values, no field an
//! object does not admit) — what a typed decoder would check — and is "valid" when it also keeps
//! the schema's constraints (bounds, lengths, patterns). Either failure goes back to the model as
//! a correction turn and the dispatcher runs the call again on the grown request, at most
//! [`crate::onecall::MAX_CORRECTIONS`] times. Past that an answer that still does not parse fails
//! the call ([`Error::InvalidInput`] on `answer`), and one that parses but is still not valid is
//! returned as it is. An answer with tool calls or cut off at its
//! budget is not judged. A caller that judges answers itself (a thinker's turn, whose answer-shape
//! boundary corrects inside the thinker's conversation) opts out with [`LlmCall::uncorrected`].

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use tracing::Instrument;

use super::cached_prefix::Prints;
use super::client::LimitSink;
use super::failed::Failed;
use super::{
    ChatRequest, ChatResponse, EncodedRequest, ModelServices, Reasoning, SendOptions, SendOutcome,
    StopReason, StreamDelta,
};
use crate::error::RetrySignal;
use crate::job::{Job, JobContext, Requirements, Resources, Seat};
use crate::llm::correction::{Corrector, MAX_CORRECTIONS};
use crate::llm::shape::AnswerShape;
use crate::model::catalog::PromptCache;
use crate::model::{Depth, Grade, ModelDependent, OutputSize};
use crate::record::{LlmRun, now_ms};
use crate::{Error, Result};

/// What one model call produced.
#[derive(Debug, Clone)]
pub struct LlmOutcome {
    /// The decoded answer.
    pub response: ChatResponse,
    /// The catalog entry that served it.
    pub entry: Arc<str>,
    /// The provider's model name.
    pub model: Arc<str>,
    /// Cost in `currency`; `None` when it is unknown (not zero): the entry has no prices, or the
    /// provider's answer carried no usage counts and the entry is not free.
    pub cost: Option<f64>,
    /// The entry's currency; empty when the cost is unknown.
    pub currency: Arc<str>,
    /// Whether this was the truncation-escalation attempt (output budget at the ceiling).
    pub escalated: bool,
    /// Wall latency of the call.
    pub latency: Duration,
    /// Input tokens counted locally from the exact body (before calibration).
    pub counted_input_tokens: u64,
}

/// A streaming callback.
pub type DeltaSink = Box<dyn FnMut(StreamDelta) + Send>;

struct Bound {
    /// The seat priced for this body: asked of admission and spent by the call, unless `held`.
    seat: Seat,
    /// The response cache held the answer when the seat was asked for (a journaled step being
    /// replayed): no seat was asked, and the call is answered from the cache or fails.
    held: bool,
    entry: Arc<str>,
    provider: Arc<str>,
    budget: Arc<str>,
    model: Arc<str>,
    encoded: EncodedRequest,
    counted: u64,
    /// The whole input, as counted: the seat asks for it less the expected cache reads.
    input_whole: u64,
    /// The request's prefixes, where its cache reads leave the seat (see `cached_prefix`).
    prints: Option<Prints>,
    output_budget: u32,
    escalated: bool,
    /// What the request asked in the forms a server may refuse (`super::negotiate`).
    asked: super::negotiate::Asked,
}

/// One model call as a job: a seat (grade or pin, depth, output size) and a request.
pub struct LlmCall {
    class: Cow<'static, str>,
    grade: Grade,
    pin: Option<Arc<str>>,
    depth: Depth,
    output: OutputSize,
    request: ChatRequest,
    stream: Option<DeltaSink>,
    bound: Option<Bound>,
    /// Whether an answer to a response schema is judged and corrected here.
    corrects: bool,
    corrector: Option<Corrector>,
}

impl std::fmt::Debug for LlmCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmCall")
            .field("class", &self.class)
            .field("grade", &self.grade)
            .field("pin", &self.pin)
            .field("depth", &self.depth)
            .field("output", &self.output)
            .finish_non_exhaustive()
    }
}

impl LlmCall {
    /// A call at `grade` with `output` as its answer budget. Depth is [`Depth::Standard`] until
    /// set.
    pub fn new(grade: Grade, output: OutputSize, request: ChatRequest) -> Self {
        Self {
            class: Cow::Borrowed("llm_call"),
            grade,
            pin: None,
            depth: Depth::Standard,
            output,
            request,
            stream: None,
            bound: None,
            corrects: true,
            corrector: None,
        }
    }

    /// Hand the answer to the caller as the model wrote it, without judging it against the
    /// response schema: for a caller that judges and corrects answers itself.
    #[must_use]
    pub fn uncorrected(mut self) -> Self {
        self.corrects = false;
        self
    }

    /// Correction turns appended so far.
    pub fn corrections(&self) -> u32 {
        self.corrector.as_ref().map_or(0, Corrector::corrections)
    }

    /// Judge an answer to a response schema through the shared correction exchange (see the
    /// module docs): the outcome when it is accepted or returned as it is, else the correction
    /// signal or, past the bound, the misfit.
    fn settle(&mut self, outcome: LlmOutcome) -> Result<LlmOutcome> {
        let response = &outcome.response;
        if !self.corrects
            || response.stop == StopReason::MaxTokens
            || !response.tool_calls().is_empty()
        {
            return Ok(outcome);
        }
        let Some(contract) = self.request.response.as_ref() else {
            return Ok(outcome);
        };
        let corrector = self.corrector.get_or_insert_with(|| {
            Corrector::new(Arc::new(AnswerShape::from_schema(
                &contract.name,
                Arc::clone(&contract.schema),
            )))
        });
        corrector.exchange(
            &self.class,
            &mut self.request,
            response,
            |shape, text| shape.decode_untyped(text),
            |_, (_, broken)| broken.clone().map_or(Ok(()), Err),
        )?;
        Ok(outcome)
    }

    /// The job class recorded for the call (sizing groups by it). Callers set their own.
    #[must_use]
    pub fn class(mut self, class: impl Into<Cow<'static, str>>) -> Self {
        self.class = class.into();
        self
    }

    /// The effort.
    #[must_use]
    pub fn depth(mut self, depth: Depth) -> Self {
        self.depth = depth;
        self
    }

    /// Pin the call to one catalog entry.
    #[must_use]
    pub fn pinned(mut self, entry: impl Into<Arc<str>>) -> Self {
        self.pin = Some(entry.into());
        self
    }

    /// Stream the answer, handing each delta to `sink` as it arrives.
    #[must_use]
    pub fn streaming(mut self, sink: DeltaSink) -> Self {
        self.stream = Some(sink);
        self.request.stream = true;
        self
    }

    /// The request (its budgets are filled per attempt).
    pub fn request(&self) -> &ChatRequest {
        &self.request
    }
}

impl ModelDependent for LlmCall {
    fn grade(&self) -> Grade {
        self.grade
    }
    fn set_grade(&mut self, grade: Grade) {
        self.grade = grade;
    }
    fn pin(&self) -> Option<&str> {
        self.pin.as_deref()
    }
    fn pin_model(&mut self, entry: String) {
        self.pin = Some(entry.into());
    }
}

pub(crate) use super::seat_tokens::{output_budget, reasoning_for};

/// Bind a request to an entry for one attempt and ask admission for its seat: the shared
/// `require_seat` of every model-dependent job. Returns the encoded body and its local count.
/// A request whose answer the job's response cache already holds
/// ([`super::ResponseCache::holds`]) asks for no seat: it is answered from the cache.
pub fn require_seat(
    seat: &dyn ModelDependent,
    depth: Depth,
    output: OutputSize,
    request: &mut ChatRequest,
    req: &mut Requirements,
    cx: &JobContext,
) -> Result<BoundSeat> {
    let services = cx.services().require::<ModelServices>()?;
    let budgets = cx.budgets();
    let entry = seat.resolve_entry(services.router(), budgets.as_ref())?;
    let escalated = req.attempt().escalated;
    let output_tokens = output_budget(entry, output, escalated);
    let (reasoning, mut reasoning_tokens) = reasoning_for(entry, depth);
    request.max_output_tokens = output_tokens;
    if matches!(reasoning, Reasoning::Effort(_)) {
        // A provider counts an effort level's reasoning toward the output cap, so the cap grows
        // by the reasoning reserved (within the entry's ceiling) and the answer keeps its budget.
        let cap = output_tokens
            .saturating_add(reasoning_tokens)
            .min(entry.output_ceiling().max(output_tokens));
        reasoning_tokens = cap - output_tokens;
        request.max_output_tokens = cap;
    }
    request.reasoning = reasoning;
    let target = services.target(entry)?;
    let encoded = super::encode(&target, request)?;
    let asked = if target.dialect == super::Dialect::OpenAiCompatible {
        let provider = services.router().catalog().provider(entry.provider())?;
        super::negotiate::Asked::of(provider, &target, request, &encoded)
    } else {
        super::negotiate::Asked::default()
    };
    let counted = services.counter().count_for(entry.id(), &encoded.body);
    let input_whole = services.counter().estimate(entry.id(), counted);
    // Where the provider leaves cache reads out of its limits, the seat asks only for the input
    // it will count: what the request adds to a prefix an earlier call left in the cache.
    let prints = (entry.prompt_cache().is_on() && !entry.cache_reads_count())
        .then(|| Prints::of(entry.id(), request));
    let expected_reads = prints.as_ref().map_or(0, |p| {
        services
            .prefixes()
            .expected(p, tokio::time::Instant::now())
            .min(input_whole)
    });
    let budget = entry.budget_name();
    let seat = Seat {
        entry: entry.shared_id(),
        budget: Arc::clone(&budget),
        input_tokens: input_whole - expected_reads,
        output_tokens: u64::from(output_tokens),
        reasoning_tokens: u64::from(reasoning_tokens),
    };
    // An answer the response cache already holds (a replayed journal step) takes no seat.
    let held = super::cache::holds_answer(&encoded, cx);
    if !held {
        req.seat(seat.clone());
    }
    Ok(BoundSeat(Bound {
        seat,
        held,
        entry: entry.shared_id(),
        provider: Arc::from(entry.provider()),
        budget,
        model: entry.shared_model(),
        encoded,
        counted,
        input_whole,
        prints,
        output_budget: output_tokens,
        escalated,
        asked,
    }))
}

/// A request bound to an entry for one attempt (see [`require_seat`]).
pub struct BoundSeat(Bound);

impl std::fmt::Debug for BoundSeat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BoundSeat")
            .field("entry", &self.0.entry)
            .finish_non_exhaustive()
    }
}

impl BoundSeat {
    /// The entry id.
    pub fn entry(&self) -> &str {
        &self.0.entry
    }
    /// The exact body that will be sent.
    pub(crate) fn encoded(&self) -> &EncodedRequest {
        &self.0.encoded
    }
}

/// Send a bound request and do the bookkeeping: rate observation, reconciliation, calibration,
/// the LLM-run row. Returns the outcome; a truncated first attempt becomes a
/// [`RetrySignal::TruncationEscalation`].
///
/// This is the only public way to a model, and it needs the attempt's [`Resources`] around a
/// permit the dispatcher's admission minted (others are refused): the call spends the seat `bound` was priced for, which must be among
/// the seats admitted for the attempt and not spent yet (else an [`Error::System`] and nothing
/// is sent). A request bound without a seat (its answer was held) is answered from the cache
/// and never sent.
pub async fn converse_bound(
    bound: BoundSeat,
    class: &str,
    stream: Option<&mut (dyn FnMut(StreamDelta) + Send)>,
    res: &Resources,
    cx: &JobContext,
) -> Result<LlmOutcome> {
    let b = bound.0;
    if !b.held {
        res.spend_seat(&b.seat)?;
    }
    let services = cx.services().require::<ModelServices>()?;
    let span = crate::telemetry::model_call_span(
        &b.entry,
        &b.model,
        b.encoded.plan.dialect.as_str(),
        u64::from(b.output_budget),
    );
    let limits = services.client().limits();
    let spent = res.attempt().transient_time;
    let (store, log) = (cx.budgets(), cx.limit_log());
    log.first_standing(&**store, &b.budget, Some(&b.entry), cx);
    // The limits a refusal states feed the budget before its pause, as an answer's headers do.
    let refused_limits = {
        let (store, budget) = (Arc::clone(store), Arc::clone(&b.budget));
        LimitSink::new(move |stated| store.observe(&budget, stated))
    };
    let options = SendOptions {
        provider: Some(Arc::clone(&b.provider)),
        entry: Some(Arc::clone(&b.entry)),
        timeout: Some(limits.call_timeout.saturating_sub(spent)),
        refused_limits: Some(refused_limits),
        answer_form: b.asked.native_form(),
        probe_stream_tools: b.asked.streams_tools,
    };
    // The worst case is held on the runtime's spending caps before anything is sent.
    let entry = services.router().catalog().entry(&b.entry)?;
    let spend = if b.held {
        None
    } else {
        let seat = &b.seat;
        // The whole input: a cache read expected may not happen.
        let worst = entry.worst_cost(b.input_whole, seat.output_tokens + seat.reasoning_tokens);
        let currency = entry.currency().map_or("", |c| &**c);
        crate::dispatch::spend::hold(cx, &b.entry, entry.provider(), worst, currency).await?
    };
    let started = std::time::Instant::now();
    // Through the response cache when the dispatcher has one (`super::cache`). A provider's
    // answer settles the seat at once, not after the answer is stored (a journal write).
    let (reads_count, client) = (entry.cache_reads_count(), services.client());
    let mut settle = |o: &SendOutcome| {
        if o.response.usage.reported {
            res.report_seat_usage(o.response.usage.seat_use(reads_count));
            res.settle_seat_now();
        }
    };
    let sent = super::cache::send(
        client,
        &b.encoded,
        &options,
        stream,
        b.held,
        &mut settle,
        cx,
    )
    .instrument(span.clone())
    .await;
    let (outcome, from_cache) = match sent {
        Ok(o) => {
            if !o.from_cache {
                let called_tool = !o.outcome.response.tool_calls().is_empty();
                services.forms().accepted(&b.provider, b.asked, called_tool);
            }
            (o.outcome, o.from_cache)
        }
        Err(e) => {
            crate::telemetry::record_error(&span, &e);
            // A refused `response_format` generated nothing: the seat gives its tokens back.
            if matches!(&e, Error::ExternalService { step, .. }
                if step == super::negotiate::ANSWER_FORM_STEP)
            {
                res.report_seat_usage(crate::job::SeatUse::NONE);
            }
            // A refused form the runtime may change is asked again in the next one.
            let e = services.forms().after_failure(&b.provider, b.asked, e);
            let failed = Failed {
                entry: &b.entry,
                budget: &b.budget,
                spent: spent + started.elapsed(),
                attempts: res.attempt().number,
                limits,
            };
            return Err(failed.settle(e, cx));
        }
    };
    // The answer's headers feed the budget; its standing before (the first time, above) and
    // after is recorded when it changed (`thinkers_core::dispatch::LimitLog`).
    if let Some(obs) = outcome.rate {
        store.observe(&b.budget, obs);
    }
    log.standing(&**store, &b.budget, Some(&b.entry), cx);
    let usage = outcome.response.usage;
    // An answer without usage counts leaves the seat unreported: it keeps its whole reservation.
    if from_cache {
        res.report_seat_usage(crate::job::SeatUse::NONE);
    } else if usage.reported {
        res.report_seat_usage(usage.seat_use(entry.cache_reads_count()));
    }
    services
        .counter()
        .calibrate(&b.entry, b.counted, usage.input);
    // The input taken apart: cache reads, cache writes, the rest (each bounded by the whole, in
    // case a provider's parts exceed it).
    let cache_read = usage.cached.min(usage.input);
    let cache_write = usage.cache_creation.min(usage.input - cache_read);
    // What the provider now holds of this request's prefix, for the calls that extend it: in
    // the units of the seat's own estimate (its share of the provider's count of the input, times
    // the estimate), so a later seat takes it from an estimate made the same way.
    if let (Some(prints), PromptCache::On(ttl), false) =
        (&b.prints, entry.prompt_cache(), from_cache)
        && usage.input > 0
    {
        let held = (cache_read + cache_write) as f64 / usage.input as f64;
        services.prefixes().learn(
            prints,
            (held * b.input_whole as f64).round() as u64,
            ttl.duration().mul_f64(0.9),
            tokio::time::Instant::now(),
        );
    }
    // A cached answer paid nothing; an entry without prices costs an unknown amount, and so
    // does an answer without usage counts unless the entry is free.
    let free = entry.pricing().is_some_and(|p| {
        [p.input, p.output, p.cached, p.cache_write]
            .iter()
            .all(|x| *x == 0.0)
    });
    let cost = if from_cache {
        Some(0.0)
    } else if !usage.reported && !free {
        None
    } else {
        entry.cost(
            usage.input - cache_read - cache_write,
            cache_read,
            cache_write,
            usage.output,
        )
    };
    if let Some(spend) = spend {
        spend.settle(cost).await;
    }
    // An unknown cost has no currency: the reports count it apart, never as free.
    let currency = match cost {
        Some(_) => entry.currency().map_or_else(|| Arc::from(""), Arc::clone),
        None => Arc::from(""),
    };
    // The row is built only for a recorder that keeps it or a span that carries its usage.
    let recorder = cx.recorder();
    if recorder.keeps_rows() || !span.is_disabled() {
        let run = LlmRun {
            job: cx.id(),
            workflow: cx.workflow(),
            class: class.to_owned(),
            entry: b.entry.to_string(),
            model: b.model.to_string(),
            input_tokens: usage.input,
            output_tokens: usage.output,
            reasoning_tokens: usage.reasoning,
            cached_tokens: usage.cached,
            cache_write_tokens: usage.cache_creation,
            output_budget: u64::from(b.output_budget),
            latency_ms: u64::try_from(outcome.latency.as_millis()).unwrap_or(u64::MAX),
            stop_reason: outcome.response.stop.name().to_owned(),
            cost,
            currency: currency.to_string(),
            at_ms: now_ms(),
            escalated: b.escalated,
        };
        crate::telemetry::record_usage(&span, &crate::telemetry::ModelUsage::from(&run));
        // On the record before the answer is used (when the recorder makes calls durable).
        if let Err(e) = recorder.llm_run_durable(run).await {
            tracing::error!(entry = %b.entry, error = %e,
                "the model call's row could not be stored; its answer is used all the same");
        }
    }
    if outcome.response.stop == StopReason::MaxTokens && !b.escalated {
        return Err(Error::Retry(RetrySignal::TruncationEscalation));
    }
    Ok(LlmOutcome {
        response: outcome.response,
        entry: b.entry,
        model: b.model,
        cost,
        currency,
        escalated: b.escalated,
        latency: outcome.latency,
        counted_input_tokens: b.counted,
    })
}

impl Job for LlmCall {
    type Output = LlmOutcome;

    fn class(&self) -> Cow<'static, str> {
        self.class.clone()
    }

    fn requirements(&mut self, req: &mut Requirements, cx: &JobContext) -> Result<()> {
        // The request is bound while `self` answers for the seat (grade and pin).
        // A placeholder that allocates nothing stands in for it meanwhile.
        static NO_MESSAGES: std::sync::LazyLock<Arc<Vec<crate::llm::message::Message>>> =
            std::sync::LazyLock::new(|| Arc::new(Vec::new()));
        let placeholder = ChatRequest::new(String::new(), Arc::clone(&NO_MESSAGES));
        let mut request = std::mem::replace(&mut self.request, placeholder);
        let bound = require_seat(&*self, self.depth, self.output, &mut request, req, cx);
        self.request = request;
        self.bound = Some(bound?.0);
        Ok(())
    }

    async fn execute(&mut self, res: &Resources, cx: &JobContext) -> Result<LlmOutcome> {
        let bound = self
            .bound
            .take()
            .ok_or_else(|| Error::system("llm_call", "executed without a bound seat"))?;
        let sink = self
            .stream
            .as_mut()
            .map(|s| s.as_mut() as &mut (dyn FnMut(StreamDelta) + Send));
        // Boxed: the call's future (the HTTP exchange, the cache, the bookkeeping) is the
        // largest part of a model turn, and every future around it, up to the thinker's own,
        // would otherwise hold it inline and copy it as each is built.
        let outcome =
            Box::pin(converse_bound(BoundSeat(bound), &self.class, sink, res, cx)).await?;
        self.settle(outcome)
    }

    fn max_corrections(&self) -> u32 {
        MAX_CORRECTIONS
    }
}

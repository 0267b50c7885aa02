//! Seats over real HTTP: the reservation against the exact bytes on the wire, grade and pin
//! inheritance, pins and the envelope, and the LLM-run records.

use std::sync::{Arc, Mutex};

use thinkers::ErrorKind;
use thinkers::llm::{Dialect, EncodedRequest, TokenCounter, Tokenizer, tokens};
use thinkers::model::{Envelope, Grade};
use thinkers::onecall::tools::{QuickQuestion, QuickQuestionInput};
use thinkers::onecall::{ExchangeHook, ModelToolJob, ModelToolProvider};
use thinkers::tool::{ToolCallContext, ToolProvider};
use thinkers_sim::{FaultKind, FaultRule, SimConfig};

use crate::support::{Probe, Rating, setup, setup_with};

/// What the exchange hook saw of one exchange.
#[derive(Debug, Clone)]
struct Sighting {
    entry: String,
    encoded: EncodedRequest,
    seat_input: u64,
    seat_output: u64,
    counted: u64,
}

fn recorder() -> (ExchangeHook, Arc<Mutex<Vec<Sighting>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let hook: ExchangeHook = Arc::new(move |x| {
        let seat = x.seat.expect("a granted seat");
        log.lock().unwrap().push(Sighting {
            entry: x.entry.to_owned(),
            encoded: x.encoded.clone(),
            seat_input: seat.input_tokens,
            seat_output: seat.output_tokens,
            counted: x.outcome.expect("a real call").counted_input_tokens,
        });
    });
    (hook, seen)
}

fn question(grade: Grade) -> QuickQuestionInput {
    QuickQuestionInput {
        question: "Which budget does a seat draw from?".into(),
        grade,
        context: None,
    }
}

#[tokio::test]
async fn the_reservation_is_counted_from_the_exact_bytes_the_provider_received() {
    // A fresh runtime: an OpenAI-family entry starts with a calibration factor of 1.0, so the
    // seat's input tokens are exactly the local count of the body.
    let s = setup().await;
    s.sim.inject(
        FaultRule::new(FaultKind::MalformedJson)
            .for_model("sim-small-a")
            .times(1),
    );
    let (hook, seen) = recorder();
    let job = ModelToolJob::new(Arc::new(QuickQuestion), question(Grade::Small))
        .unwrap()
        .pinned("sim-small-a")
        .on_exchange(hook);
    s.rt.run(job).await.unwrap();

    let seen = seen.lock().unwrap().clone();
    let logged = s.sim.requests();
    assert_eq!(seen.len(), 2, "the faulty exchange and the corrected one");
    assert_eq!(logged.len(), 2);
    for (sighting, wire) in seen.iter().zip(&logged) {
        // The bytes priced are the bytes the provider received, re-rendered per attempt (the
        // corrected attempt's body is longer).
        assert_eq!(
            sighting.encoded.body_str(),
            wire.raw_body,
            "{}",
            sighting.entry
        );
        assert_eq!(sighting.seat_output, 4_096);
        // The count is the length estimate of exactly those bytes.
        let fresh = TokenCounter::new().count_encoded(&sighting.encoded);
        assert_eq!(sighting.counted, fresh);
        assert_eq!(
            sighting.counted,
            wire.raw_body.len().div_ceil(tokens::BYTES_PER_TOKEN) as u64
        );
    }
    // Before any report the reservation is the count at the dialect's starting factor.
    let start = tokens::starting_factor(Dialect::OpenAi, Tokenizer::Estimate);
    assert_eq!(
        seen[0].seat_input,
        (seen[0].counted as f64 * start).ceil() as u64,
        "before any calibration the reservation is the count at the starting factor"
    );
    assert!(seen[1].encoded.body.len() > seen[0].encoded.body.len());
    // The first call taught the entry's factor (and the spread of its ratio) from what the
    // provider reported; the second reservation is its own count priced at the mean factor
    // plus the deviation margin.
    let reported = s.rec.llm_runs()[0].input_tokens as f64;
    let w = tokens::CALIBRATION_WEIGHT;
    let error = reported / seen[0].counted as f64 - start;
    let factor = (start + w * error).clamp(tokens::MIN_FACTOR, tokens::MAX_FACTOR);
    let deviation = w * error.abs().min(tokens::MAX_FACTOR);
    let priced = (factor + tokens::RESERVATION_DEVIATIONS * deviation).min(tokens::MAX_FACTOR);
    assert_eq!(
        seen[1].seat_input,
        (seen[1].counted as f64 * priced).ceil() as u64
    );
    assert!(seen[1].seat_input >= (seen[1].counted as f64 * factor).ceil() as u64);
}

#[tokio::test]
async fn every_call_is_recorded_with_tokens_latency_and_cost() {
    let s = setup_with(
        |mut c: SimConfig| {
            for m in &mut c.models {
                if let Some(p) = &mut m.profile {
                    p.latency_ms = [3, 6];
                }
            }
            c
        },
        Envelope::unrestricted(),
    )
    .await;
    s.sim.inject(
        FaultRule::new(FaultKind::WrongShape)
            .for_model("sim-small-b")
            .times(1),
    );
    let job = ModelToolJob::new(Arc::new(QuickQuestion), question(Grade::Small))
        .unwrap()
        .pinned("sim-small-b");
    s.rt.run(job).await.unwrap();
    let runs = s.rec.llm_runs();
    assert_eq!(runs.len(), 2);
    let job_id = s.rec.jobs()[0].start.id;
    for run in &runs {
        assert_eq!(run.class, "quick_llm_question");
        assert_eq!(run.entry, "sim-small-b");
        assert_eq!(run.job, job_id, "both calls belong to the one tool job");
        assert!(run.input_tokens > 0 && run.output_tokens > 0, "{run:?}");
        assert!(run.latency_ms >= 3, "{run:?}");
        assert!(run.cost.unwrap() > 0.0, "{run:?}");
        assert!(!run.currency.is_empty());
        assert_eq!(run.output_budget, 4_096);
    }
    assert!(
        runs[1].input_tokens > runs[0].input_tokens,
        "the corrected call carries the grown conversation"
    );
}

#[tokio::test]
async fn grade_and_pin_come_from_the_tool_or_its_caller() {
    let s = setup().await;
    let provider = ModelToolProvider::new(Probe::GRADELESS);
    let args = serde_json::json!({"topic": "tea"});

    let out =
        s.rt.run(
            provider
                .instantiate(&args, &ToolCallContext::with_grade(Grade::Large))
                .unwrap(),
        )
        .await
        .unwrap();
    assert!(out.downcast::<Rating>().is_some());
    let mut pinned_parent = ToolCallContext::with_grade(Grade::Medium);
    pinned_parent.parent_pin = Some("sim-medium-b".into());
    s.rt.run(provider.instantiate(&args, &pinned_parent).unwrap())
        .await
        .unwrap();
    // A provider pinned to its own entry serves it whatever the caller is pinned to.
    let pinned = ModelToolProvider::new(Probe::SMALL).pinned("sim-small-text");
    s.rt.run(pinned.instantiate(&args, &pinned_parent).unwrap())
        .await
        .unwrap();

    let entries: Vec<String> = s.rec.llm_runs().into_iter().map(|r| r.entry).collect();
    assert_eq!(entries.len(), 3, "{entries:?}");
    assert!(entries[0].starts_with("sim-large-"), "{entries:?}");
    assert_eq!(entries[1], "sim-medium-b");
    assert_eq!(entries[2], "sim-small-text");
}

#[tokio::test]
async fn the_grade_stated_in_a_question_picks_the_rung() {
    let s = setup().await;
    for grade in [Grade::Small, Grade::Xl] {
        let job = ModelToolJob::new(Arc::new(QuickQuestion), question(grade)).unwrap();
        s.rt.run(job).await.unwrap();
    }
    let runs = s.rec.llm_runs();
    assert!(runs[0].entry.starts_with("sim-small-"), "{}", runs[0].entry);
    assert!(runs[1].entry.starts_with("sim-xl-"), "{}", runs[1].entry);
}

#[tokio::test]
async fn a_pin_outside_the_envelope_is_refused_naming_the_entry_and_the_rule() {
    let s = setup_with(
        |c| c,
        Envelope::unrestricted().require_tag("region", ["eu"]),
    )
    .await;
    // sim-small-a is a US entry.
    let job = ModelToolJob::new(Arc::new(QuickQuestion), question(Grade::Small))
        .unwrap()
        .pinned("sim-small-a");
    let err = s.rt.run(job).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    let text = format!(
        "{err} {:?}",
        std::error::Error::source(&err).map(ToString::to_string)
    );
    assert!(
        text.contains("sim-small-a") && text.contains("region"),
        "{text}"
    );
    assert_eq!(s.sim.stats().totals.requests, 0, "nothing reached the wire");
    // The caller's pin is held to the same envelope.
    let mut cx = ToolCallContext::with_grade(Grade::Small);
    cx.parent_pin = Some("sim-small-a".into());
    let provider = ModelToolProvider::new(QuickQuestion);
    let call = provider
        .instantiate(
            &serde_json::json!({"question": "Why?", "grade": "small"}),
            &cx,
        )
        .unwrap();
    let err = s.rt.run(call).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    // Unpinned, the picker stays inside the envelope.
    let job = ModelToolJob::new(Arc::new(QuickQuestion), question(Grade::Small)).unwrap();
    s.rt.run(job).await.unwrap();
    assert_ne!(s.rec.llm_runs()[0].entry, "sim-small-a");
}

/// The reasoning effort each call sent to the sim, in order, for `entry`.
fn efforts(s: &crate::support::Setup, entry: &str) -> Vec<Option<String>> {
    s.sim
        .requests()
        .into_iter()
        .filter(|r| r.model == entry)
        .map(|r| r.body["reasoning_effort"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn a_call_works_at_its_callers_depth_lowered_to_what_the_tool_allows() {
    use thinkers::job::doer;
    use thinkers::model::Depth;
    use thinkers::thinker::META_THINKER_DEPTH;

    let s = setup().await;
    // The probe allows `standard` (its default). sim-medium-a maps quick → low,
    // standard → medium, thorough → high, and names nothing for immediate.
    let provider = ModelToolProvider::new(Probe::GRADELESS);
    let args = serde_json::json!({"topic": "tea"});
    let callers = [
        Some(Depth::Quick),
        Some(Depth::Thorough),
        None,
        Some(Depth::Immediate),
    ];
    for depth in callers {
        let mut cx = ToolCallContext::with_grade(Grade::Medium);
        cx.parent_pin = Some("sim-medium-a".into());
        cx.parent_depth = depth;
        s.rt.run(provider.instantiate(&args, &cx).unwrap())
            .await
            .unwrap();
    }
    // Code that calls the tool under a thinker: the nearest thinker's depth.
    let medium = Probe {
        grade: Some(Grade::Medium),
    };
    s.rt.run(doer("under_a_thinker", move |cx| {
        cx.set_metadata(META_THINKER_DEPTH, serde_json::json!("quick"));
        let job = ModelToolJob::new(Arc::new(medium), crate::support::probe_input())
            .unwrap()
            .pinned("sim-medium-a");
        async move { cx.submit(job).await }
    }))
    .await
    .unwrap();
    // A depth named on the job is the caller's too, and is lowered the same way.
    let job = ModelToolJob::new(Arc::new(medium), crate::support::probe_input())
        .unwrap()
        .pinned("sim-medium-a")
        .depth(Depth::Thorough);
    s.rt.run(job).await.unwrap();

    let low = Some("low".to_owned());
    let medium_effort = Some("medium".to_owned());
    assert_eq!(
        efforts(&s, "sim-medium-a"),
        [
            low.clone(),
            medium_effort.clone(),
            medium_effort.clone(),
            None,
            low,
            medium_effort
        ]
    );
}

#[tokio::test]
async fn no_code_between_a_thinker_and_its_tool_raises_the_tools_depth() {
    use thinkers::job::doer;
    use thinkers::model::Depth;
    use thinkers::thinker::META_THINKER_DEPTH;

    let s = setup().await;
    let medium = Probe {
        grade: Some(Grade::Medium),
    };
    // A thinker at quick above; a doer between it and the tool publishes `thorough` as its own
    // depth, and the job names `thorough` too: the call still works at quick (`low`).
    s.rt.run(doer("under_a_quick_thinker", move |cx| {
        cx.set_metadata(META_THINKER_DEPTH, serde_json::json!("quick"));
        async move {
            cx.submit(doer("in_between", move |cx| {
                cx.set_metadata(META_THINKER_DEPTH, serde_json::json!("thorough"));
                let job = ModelToolJob::new(Arc::new(medium), crate::support::probe_input())
                    .unwrap()
                    .pinned("sim-medium-a")
                    .depth(Depth::Thorough);
                async move { cx.submit(job).await }
            }))
            .await
        }
    }))
    .await
    .unwrap();
    assert_eq!(efforts(&s, "sim-medium-a"), [Some("low".to_owned())]);
}

#[tokio::test]
async fn an_effort_level_reserves_reasoning_tokens_and_the_cap_makes_room_for_them() {
    let s = setup().await;
    let seats = Arc::new(Mutex::new(Vec::new()));
    let log = seats.clone();
    let hook: ExchangeHook = Arc::new(move |x| {
        log.lock()
            .unwrap()
            .push(x.seat.expect("a granted seat").clone());
    });
    // sim-medium-a names `medium` for the probe's standard depth.
    let job = ModelToolJob::new(
        Arc::new(Probe {
            grade: Some(Grade::Medium),
        }),
        crate::support::probe_input(),
    )
    .unwrap()
    .pinned("sim-medium-a")
    .on_exchange(hook);
    s.rt.run(job).await.unwrap();
    let seat = seats.lock().unwrap()[0].clone();
    let medium = thinkers::model::effort_tokens("medium", thinkers::model::Depth::Standard);
    assert_eq!(medium, 8_192);
    assert_eq!(seat.output_tokens, 4_096, "the answer keeps its budget");
    assert_eq!(seat.reasoning_tokens, u64::from(medium));
    let body = &s.sim.requests()[0].body;
    assert_eq!(body["reasoning_effort"], "medium");
    assert_eq!(body["max_completion_tokens"], 4_096 + medium);
    // The record keeps the answer's budget.
    assert_eq!(s.rec.llm_runs()[0].output_budget, 4_096);
}

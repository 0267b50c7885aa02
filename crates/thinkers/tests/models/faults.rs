//! Each fault of the simulated provider, through real HTTP, and what it becomes.

use thinkers::ErrorKind;
use thinkers::conversation::Message;
use thinkers::llm::{ChatRequest, LlmCall, StopReason};
use thinkers::model::{Grade, OutputSize};
use thinkers::record::JobStatus;
use thinkers_sim::{FaultKind, FaultRule};

use crate::support::setup;

fn call(entry: &str) -> LlmCall {
    let req = ChatRequest::new("Be brief.", vec![Message::user_text("Say something.")]);
    LlmCall::new(Grade::Small, OutputSize::Compact, req).pinned(entry)
}

async fn once(
    kind: FaultKind,
    entry: &str,
) -> (
    thinkers::Result<thinkers::llm::LlmOutcome>,
    crate::support::Setup,
) {
    let s = setup().await;
    s.sim.inject(FaultRule::new(kind).for_model(entry).times(1));
    let r = s.rt.run(call(entry)).await;
    (r, s)
}

#[tokio::test]
async fn throttling_429_and_529_wait_and_readmit() {
    for (kind, entry) in [
        (FaultKind::RateLimit429, "sim-small-a"),
        (FaultKind::RateLimit429, "sim-small-b"),
        (FaultKind::Overloaded529, "sim-small-b"),
        (FaultKind::Overloaded529, "sim-small-a"),
    ] {
        let (r, s) = once(kind, entry).await;
        let out = r.unwrap_or_else(|e| panic!("{kind:?} on {entry}: {e}"));
        assert_eq!(&*out.entry, entry);
        assert_eq!(
            s.sim.stats().model(entry).requests,
            2,
            "{kind:?}: one refused, one served"
        );
        let row = &s.rec.jobs()[0];
        assert_eq!(row.status(), JobStatus::Succeeded);
        assert_eq!(row.end.as_ref().unwrap().attempts, 2);
    }
}

#[tokio::test]
async fn server_errors_and_hangs_are_retried_with_backoff() {
    for kind in [FaultKind::Http500, FaultKind::Hang] {
        let (r, s) = once(kind, "sim-small-a").await;
        r.unwrap_or_else(|e| panic!("{kind:?}: {e}"));
        assert_eq!(s.sim.stats().model("sim-small-a").requests, 2, "{kind:?}");
    }
}

#[tokio::test]
async fn persistent_server_errors_fail_as_external_service() {
    let s = setup().await;
    s.sim.inject(
        FaultRule::new(FaultKind::Http500)
            .for_model("sim-small-a")
            .times(100),
    );
    let err = s.rt.run(call("sim-small-a")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ExternalService);
    let bound = s.rt.dispatcher().config().max_transient_retries;
    assert_eq!(
        s.sim.stats().model("sim-small-a").requests,
        u64::from(bound) + 1
    );
}

#[tokio::test]
async fn truncation_escalates_once_to_the_ceiling() {
    let (r, s) = once(FaultKind::Truncate, "sim-small-a").await;
    let out = r.unwrap();
    assert!(out.escalated);
    let runs = s.rec.llm_runs();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0].stop_reason, "max_tokens");
    assert_eq!(runs[0].output_budget, 4096);
    assert!(!runs[0].escalated);
    assert!(runs[1].escalated);
    assert_eq!(runs[1].output_budget, 16384, "the entry's output ceiling");
    let bodies = s.sim.requests();
    assert_eq!(bodies[1].body["max_completion_tokens"], 16384);
}

#[tokio::test]
async fn answer_faults_come_back_as_answers_for_the_caller_to_correct() {
    for (kind, check) in [
        (FaultKind::MalformedJson, "malformed"),
        (FaultKind::WrongShape, "wrong shape"),
    ] {
        let (r, _) = once(kind, "sim-small-a").await;
        let out = r.unwrap_or_else(|e| panic!("{check}: {e}"));
        assert_eq!(out.response.stop, StopReason::EndTurn, "{check}");
    }
}

#[tokio::test]
async fn a_broken_stream_is_not_replayed() {
    let s = setup().await;
    s.sim.inject(
        FaultRule::new(FaultKind::StreamError)
            .for_model("sim-small-b")
            .times(1),
    );
    let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = seen.clone();
    let job = call("sim-small-b").streaming(Box::new(move |_| {
        counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }));
    let err = s.rt.run(job).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ExternalService, "{err}");
    assert_eq!(
        s.sim.stats().model("sim-small-b").requests,
        1,
        "never replayed"
    );
}

#[tokio::test]
async fn streaming_delivers_deltas_and_the_same_answer() {
    let s = setup().await;
    let deltas = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let sink = deltas.clone();
    for entry in ["sim-small-a", "sim-small-b"] {
        deltas.lock().unwrap().clear();
        let sink = sink.clone();
        let job = call(entry).streaming(Box::new(move |d| {
            if let thinkers::llm::StreamDelta::Text(t) = d {
                sink.lock().unwrap().push_str(&t);
            }
        }));
        let out = s.rt.run(job).await.unwrap();
        assert_eq!(*deltas.lock().unwrap(), out.response.text(), "{entry}");
        assert!(
            out.response.usage.output > 0,
            "{entry}: usage arrives at the end of a stream"
        );
    }
}

#[tokio::test]
async fn a_missing_api_key_names_the_variable() {
    let sim = thinkers_sim::Sim::start(thinkers_sim::SimConfig::default())
        .await
        .unwrap();
    let toml = format!(
        r#"
[providers.p]
dialect = "openai"
base_url = "{}/v1"
api_key_env = "THINKERS_TEST_KEY_THAT_IS_NOT_SET"

[[entries]]
id = "e"
provider = "p"
model = "m"
grade = "small"
context_window = 8000
output_ceiling = 1000
price_in = 1.0
price_out = 2.0
currency = "USD"
"#,
        sim.base_url()
    );
    let catalog = thinkers::model::Catalog::from_toml_str(&toml, "test.toml").unwrap();
    let rt = thinkers::Runtime::builder(catalog).build().await.unwrap();
    let err = rt.run(call("e")).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("THINKERS_TEST_KEY_THAT_IS_NOT_SET"),
        "{err}"
    );
}

#[tokio::test]
async fn an_unauthenticated_call_is_an_external_failure_naming_authentication() {
    let sim = thinkers_sim::Sim::start(thinkers_sim::SimConfig::default())
        .await
        .unwrap();
    // A local server needs no key, so the runtime sends none and the sim answers 401.
    let toml = format!(
        r#"
[providers.local]
dialect = "openai-compatible"
base_url = "{}/v1"

[[entries]]
id = "e"
provider = "local"
model = "m"
grade = "small"
context_window = 8000
output_ceiling = 1000
price_in = 0.0
price_out = 0.0
currency = "USD"
"#,
        sim.base_url()
    );
    let catalog = thinkers::model::Catalog::from_toml_str(&toml, "test.toml").unwrap();
    let rt = thinkers::Runtime::builder(catalog).build().await.unwrap();
    let err = rt.run(call("e")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ExternalService);
    assert!(err.to_string().contains("authentication"), "{err}");
}

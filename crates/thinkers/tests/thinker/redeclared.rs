//! Late declarations act: a grade raised or an output size set on a thinker after its first run
//! serves the next call (the conversation is stamped anew, so it keeps them when resumed), and
//! an effort-named catalog entry reserves its own reasoning figure where it gives one, over real
//! HTTP against thinkers-sim.

use std::sync::Arc;
use std::time::Duration;

use thinkers::Runtime;
use thinkers::dispatch::DispatchConfig;
use thinkers::llm::ModelClient;
use thinkers::model::catalog::BUNDLED_TOML;
use thinkers::model::{Catalog, Depth, Grade, ModelDependent, OutputSize};
use thinkers::record::MemoryRecorder;
use thinkers::thinker::{Thinker, ThinkerDeclaration, ThinkerInput};
use thinkers_sim::{Sim, SimConfig};

use crate::support::setup;

fn thinker(grade: Grade, output: OutputSize) -> Thinker<String> {
    Thinker::<String>::declared(ThinkerDeclaration::new(grade, output), "Answer.")
}

/// Quick: no `sub_thinker`, so each run is one model call.
fn ask(query: &str) -> ThinkerInput {
    ThinkerInput::query(query).with_depth(Depth::Quick)
}

#[tokio::test]
async fn a_grade_raised_after_the_first_run_sends_the_next_call_to_an_entry_of_that_grade() {
    let s = setup().await;
    let catalog = Catalog::bundled();
    let grade_of = |entry: &str| catalog.entry(entry).unwrap().grade();
    let mut t = thinker(Grade::Small, OutputSize::Compact);
    s.rt.run(t.ask(ask("What is a seat?"))).await.unwrap();
    let first: Vec<String> = s.rec.llm_runs().into_iter().map(|r| r.entry).collect();
    assert_eq!(first.len(), 1);
    assert_eq!(grade_of(&first[0]), Grade::Small, "{first:?}");

    t.set_grade(Grade::Large);
    s.rt.run(t.ask(ask("And a grade?"))).await.unwrap();
    let runs = s.rec.llm_runs();
    assert_eq!(runs.len(), 2);
    assert_eq!(
        grade_of(&runs[1].entry),
        Grade::Large,
        "the raised grade serves the next call: {}",
        runs[1].entry
    );
    let large: u64 = catalog
        .entries_of(Grade::Large)
        .iter()
        .map(|e| s.sim.stats().model(e.model()).requests)
        .sum();
    assert_eq!(large, 1, "one request reached a large model");
    // The conversation was stamped with it, so it keeps the grade when resumed.
    let stamps = *t.observer().conversation().unwrap().stamps();
    assert_eq!(stamps.grade, Grade::Large);
    assert_eq!(stamps.output, OutputSize::Compact);
}

#[tokio::test]
async fn an_output_size_set_after_the_first_run_caps_the_next_request() {
    let s = setup().await;
    let mut t = thinker(Grade::Small, OutputSize::Compact);
    t.pin_model("sim-small-a".to_owned());
    s.rt.run(t.ask(ask("What is a seat?"))).await.unwrap();
    t.set_output(OutputSize::Tokens(777));
    s.rt.run(t.ask(ask("And a grade?"))).await.unwrap();
    let caps: Vec<_> = s
        .sim
        .requests()
        .iter()
        .map(|r| r.body["max_completion_tokens"].clone())
        .collect();
    assert_eq!(caps, [4_096, 777], "the new size books the next call");
    let budgets: Vec<u64> = s.rec.llm_runs().iter().map(|r| r.output_budget).collect();
    assert_eq!(budgets, [4_096, 777]);
    let stamps = *t.observer().conversation().unwrap().stamps();
    assert_eq!(stamps.output, OutputSize::Tokens(777));
}

const OWN: &str = "sim-effort-own";

/// The bundled catalog plus an effort-named entry that gives its own reservation for `low`.
fn effort_catalog() -> String {
    format!(
        r#"{BUNDLED_TOML}
[[entries]]
id = "{OWN}"
provider = "sim-openai"
model = "{OWN}"
grade = "medium"
context_window = 128000
output_ceiling = 16384
price_in = 0.40
price_out = 1.60
currency = "USD"
thinking = true
native_tools = true
reasoning_effort = {{ quick = "low", standard = "medium" }}
reasoning_tokens = {{ quick = 1500 }}

[entries.sim]
latency_ms = [0, 0]
"#
    )
}

#[tokio::test]
async fn an_effort_entry_reserves_its_own_reasoning_figure() {
    let text = effort_catalog();
    let config = SimConfig {
        log_bodies: true,
        ..SimConfig::from_catalog_toml(&text).unwrap().calm()
    };
    let sim = Sim::start(config).await.unwrap();
    let catalog = Catalog::from_toml_str(&text, "effort.toml")
        .unwrap()
        .with_sim_url(&sim.base_url());
    let entry = catalog.entry(OWN).unwrap();
    assert_eq!(entry.reasoning_tokens(Depth::Quick), 1_500);
    assert_ne!(
        thinkers::model::effort_tokens("low", Depth::Quick),
        1_500,
        "the table would reserve another figure"
    );
    let rec = MemoryRecorder::new();
    let rt = Runtime::builder(catalog)
        .recorder(Arc::new(rec.clone()))
        .client(
            ModelClient::builder()
                .request_timeout(Duration::from_secs(10))
                .build()
                .unwrap(),
        )
        .config(DispatchConfig {
            transient_backoff: Duration::from_millis(10),
            ..DispatchConfig::default()
        })
        .build()
        .await
        .unwrap();
    let mut t = thinker(Grade::Medium, OutputSize::Compact);
    t.pin_model(OWN.to_owned());
    rt.run(t.ask(ask("What is a seat?"))).await.unwrap();
    let body = &sim.requests()[0].body;
    assert_eq!(body["reasoning_effort"], "low");
    // The answer keeps its 4,096 tokens; the cap grows by what the seat reserved for reasoning:
    // the entry's own 1,500.
    assert_eq!(body["max_completion_tokens"], 4_096 + 1_500);
    assert_eq!(rec.llm_runs()[0].output_budget, 4_096);
}

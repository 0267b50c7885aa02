//! The OpenAI Responses dialect and Azure OpenAI through `LlmCall` over real HTTP: usage with
//! reasoning tokens, a streamed answer, a 429 whose wait admission honours, rate-limit headers
//! observed, and errors that name the entry and the URL without the key (the Azure key travels
//! in `api-key`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use thinkers::Runtime;
use thinkers::dispatch::DispatchConfig;
use thinkers::model::{Catalog, SIM_DEFAULT_KEY};
use thinkers::record::MemoryRecorder;
use thinkers_sim::{FaultKind, FaultRule, Sim, SimConfig};

use crate::support::{call, error_texts, streamed};

const CATALOG: &str = r#"
[providers.responses]
dialect = "openai-responses"
base_url = "{sim}/v1"
api_key_env = "THINKERS_SIM_KEY"

[providers.azure]
dialect = "openai"
base_url = "{sim}"
api_key_env = "THINKERS_SIM_KEY"
azure = "deployment"
api_version = "2024-10-21"

[[entries]]
id = "r-think"
provider = "responses"
model = "m-r-think"
grade = "small"
context_window = 64000
output_ceiling = 8000
tpm = 500000
rpm = 600
price_in = 1.0
price_out = 4.0
currency = "USD"
thinking = true
reasoning_effort = { standard = "low" }

[[entries]]
id = "az-chat"
provider = "azure"
model = "m-az-chat"
grade = "small"
context_window = 64000
output_ceiling = 8000
price_in = 1.0
price_out = 4.0
currency = "USD"
"#;

async fn setup() -> (Sim, Runtime) {
    let config = SimConfig {
        log_bodies: true,
        ..SimConfig::from_catalog_toml(CATALOG).unwrap().calm()
    };
    let sim = Sim::start(config).await.unwrap();
    let catalog = Catalog::from_toml_str(CATALOG, "families.toml")
        .unwrap()
        .with_sim_url(&sim.base_url());
    let rt = Runtime::builder(catalog)
        .recorder(Arc::new(MemoryRecorder::new()))
        .config(DispatchConfig {
            transient_backoff: Duration::from_millis(10),
            throttle_backoff: Duration::from_millis(10),
            ..DispatchConfig::default()
        })
        .build()
        .await
        .unwrap();
    (sim, rt)
}

#[tokio::test]
async fn a_reasoning_call_reports_reasoning_tokens_and_streams() {
    let (sim, rt) = setup().await;
    let out = rt.run(call("r-think")).await.unwrap();
    let first = sim.requests()[0].body.clone();
    assert_eq!(first["reasoning"]["effort"], "low");
    assert_eq!(first["include"][0], "reasoning.encrypted_content");
    assert!(out.response.usage.reasoning > 0, "{:?}", out.response.usage);
    assert!(out.response.usage.output > out.response.usage.reasoning);
    assert!(!out.response.text().is_empty());
    let (job, text) = streamed("r-think");
    let out = rt.run(job).await.unwrap();
    assert_eq!(*text.lock().unwrap(), out.response.text());
    let last = sim.requests().last().unwrap().body.clone();
    assert_eq!(last["stream"], true);
    assert_eq!(sim.stats().model("m-r-think").answered, 2);
}

#[tokio::test]
async fn a_429_is_waited_out_as_the_provider_asks() {
    let (sim, rt) = setup().await;
    sim.inject(
        FaultRule::new(FaultKind::RetryAfter)
            .status(429)
            .retry_after_ms(400)
            .for_model("m-r-think")
            .times(1),
    );
    let start = Instant::now();
    let out = rt.run(call("r-think")).await.unwrap();
    assert!(
        start.elapsed() >= Duration::from_millis(400),
        "{:?}",
        start.elapsed()
    );
    assert!(!out.response.text().is_empty());
    assert_eq!(sim.stats().model("m-r-think").requests, 2);
}

#[tokio::test]
async fn errors_name_the_entry_and_url_and_never_the_azure_key() {
    let (sim, rt) = setup().await;
    sim.inject(
        FaultRule::new(FaultKind::EchoKey)
            .status(401)
            .for_model("m-az-chat")
            .times(1),
    );
    let err = rt.run(call("az-chat")).await.unwrap_err();
    let texts = error_texts(&err);
    let all = texts.join("\n");
    assert!(!all.contains(SIM_DEFAULT_KEY), "{all}");
    assert!(all.contains("<redacted>"), "{all}");
    let shown = err.to_string();
    assert!(shown.contains("entry `az-chat`"), "{shown}");
    let url = format!(
        "POST {}/openai/deployments/m-az-chat/chat/completions",
        sim.base_url()
    );
    assert!(shown.contains(&url), "{shown}");
    assert!(
        !shown.contains("api-version"),
        "the query is not shown: {shown}"
    );
    // The key went only in the `api-key` header.
    for r in sim.requests() {
        for (name, value) in &r.headers {
            if value.contains(SIM_DEFAULT_KEY) {
                assert_eq!(name, "api-key");
            }
        }
    }
}

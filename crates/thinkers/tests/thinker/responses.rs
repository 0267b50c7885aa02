//! Single-objective thinkers with a tool over real HTTP against thinkers-sim in the OpenAI
//! Responses dialect (a reasoning entry whose reasoning items travel back across turns) and on
//! Azure OpenAI (a deployment URL for Chat Completions, the v1 path for Responses), each with
//! the key in the header its provider uses.

use std::sync::Arc;
use std::time::Duration;

use thinkers::Runtime;
use thinkers::dispatch::DispatchConfig;
use thinkers::model::{Catalog, Depth, Grade, ModelDependent, OutputSize};
use thinkers::record::MemoryRecorder;
use thinkers::thinker::{Thinker, ThinkerDeclaration, ThinkerInput};
use thinkers_sim::{Sim, SimConfig};

use crate::e2e::Brief;
use crate::support::Lookup;

const CATALOG: &str = r#"
[providers.sim-responses]
dialect = "openai-responses"
base_url = "{sim}/v1"
api_key_env = "THINKERS_SIM_KEY"

[providers.sim-azure-chat]
dialect = "openai"
base_url = "{sim}"
api_key_env = "THINKERS_SIM_KEY"
azure = "deployment"
api_version = "2024-10-21"

[providers.sim-azure-responses]
dialect = "openai-responses"
base_url = "{sim}"
api_key_env = "THINKERS_SIM_KEY"
azure = "v1"

[[entries]]
id = "resp-reasoner"
provider = "sim-responses"
model = "resp-reasoner"
grade = "medium"
context_window = 128000
output_ceiling = 16384
price_in = 1.0
price_out = 4.0
currency = "USD"
thinking = true
native_tools = true
reasoning_effort = { quick = "low", standard = "medium", thorough = "high" }

[[entries]]
id = "azure-chat"
provider = "sim-azure-chat"
model = "azure-gpt"
grade = "small"
context_window = 128000
output_ceiling = 16384
tpm = 1000000
rpm = 1000
price_in = 0.15
price_out = 0.6
currency = "USD"

[[entries]]
id = "azure-responses"
provider = "sim-azure-responses"
model = "azure-resp"
grade = "small"
context_window = 128000
output_ceiling = 16384
price_in = 0.15
price_out = 0.6
currency = "USD"
"#;

struct Setup {
    sim: Sim,
    rt: Runtime,
}

async fn setup() -> Setup {
    let config = SimConfig {
        log_bodies: true,
        ..SimConfig::from_catalog_toml(CATALOG).unwrap().calm()
    };
    let sim = Sim::start(config).await.unwrap();
    let catalog = Catalog::from_toml_str(CATALOG, "responses.toml")
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
    Setup { sim, rt }
}

/// The official `openai` SDK's request types accept every Responses body the runtime sent
/// (`ResponseCreateParams`, streaming or not, through pydantic). Skipped loudly without
/// `THINKERS_TEST_PYTHON` (which `scripts/test.sh` sets).
fn the_sdk_accepts(bodies: &[serde_json::Value]) {
    let Ok(python) = std::env::var("THINKERS_TEST_PYTHON") else {
        eprintln!(
            "SKIPPED: THINKERS_TEST_PYTHON is not set; the bodies were not checked by the SDK"
        );
        return;
    };
    const CHECK: &str = r#"
import json, sys, pydantic
from openai.types.responses import response_create_params as p
whole = pydantic.TypeAdapter(p.ResponseCreateParamsNonStreaming)
streamed = pydantic.TypeAdapter(p.ResponseCreateParamsStreaming)
n = 0
for line in sys.stdin:
    body = json.loads(line)
    (streamed if body.get("stream") else whole).validate_python(body)
    n += 1
print(f"{n} bodies valid")
"#;
    let lines: String = bodies.iter().map(|b| format!("{b}\n")).collect();
    let mut child = std::process::Command::new(python)
        .args(["-c", CHECK])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), lines.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(&format!("{} bodies valid", bodies.len())),
        "{stdout}"
    );
}

fn thinker(entry: &str, grade: Grade) -> Thinker<Brief> {
    let mut t = Thinker::<Brief>::declared(
        ThinkerDeclaration::new(grade, OutputSize::Compact),
        "Answer the question from the glossary.",
    )
    .tool(Lookup::default())
    .class("glossary_thinker");
    t.pin_model(entry.to_owned());
    t
}

#[tokio::test]
async fn a_responses_thinker_calls_its_tool_and_carries_reasoning_items_back() {
    let s = setup().await;
    let t = thinker("resp-reasoner", Grade::Medium);
    let answer =
        s.rt.run(t.ask(ThinkerInput::query("What is a seat?").with_depth(Depth::Standard)))
            .await
            .unwrap();
    assert!(!answer.summary.is_empty());
    let requests = s.sim.requests();
    assert_eq!(requests.len(), 2, "a tool round, then the answer");
    for r in &requests {
        assert_eq!(r.endpoint, "/v1/responses");
        assert_eq!(r.body["store"], false);
        assert_eq!(r.body["reasoning"]["effort"], "medium");
        assert_eq!(r.body["include"][0], "reasoning.encrypted_content");
    }
    assert_eq!(requests[0].body["tools"][0]["name"], "lookup");
    assert_eq!(requests[1].body["text"]["format"]["type"], "json_schema");
    // The first answer's reasoning item went back with the call and its output; the sim only
    // accepts it when its encrypted content verifies (unchanged).
    let input = requests[1].body["input"].as_array().unwrap();
    let kinds: Vec<&str> = input.iter().filter_map(|i| i["type"].as_str()).collect();
    let at = kinds.iter().position(|k| *k == "reasoning").unwrap();
    assert_eq!(kinds[at + 1], "function_call", "{kinds:?}");
    assert!(kinds.contains(&"function_call_output"));
    assert!(input[at]["encrypted_content"].as_str().unwrap().len() > 20);
    let stats = s.sim.stats().model("resp-reasoner");
    assert_eq!((stats.requests, stats.answered, stats.invalid), (2, 2, 0));
    let bodies: Vec<_> = requests.iter().map(|r| r.body.clone()).collect();
    the_sdk_accepts(&bodies);
}

#[tokio::test]
async fn azure_thinkers_complete_on_the_deployment_and_v1_paths() {
    let s = setup().await;
    for (entry, endpoint) in [
        (
            "azure-chat",
            "/openai/deployments/{deployment}/chat/completions",
        ),
        ("azure-responses", "/openai/v1/responses"),
    ] {
        s.sim.reset();
        let t = thinker(entry, Grade::Small);
        let answer =
            s.rt.run(t.ask(ThinkerInput::query("What is a grade?").with_depth(Depth::Quick)))
                .await
                .unwrap_or_else(|e| panic!("{entry}: {e}"));
        assert!(!answer.summary.is_empty(), "{entry}");
        let requests = s.sim.requests();
        assert_eq!(requests.len(), 2, "{entry}: a tool round, then the answer");
        for r in &requests {
            assert_eq!(r.endpoint, endpoint, "{entry}");
            let header = |name: &str| {
                r.headers
                    .iter()
                    .find(|(k, _)| k == name)
                    .map(|(_, v)| v.clone())
            };
            assert_eq!(
                header("api-key").as_deref(),
                Some(thinkers::model::SIM_DEFAULT_KEY),
                "{entry}"
            );
            assert_eq!(header("authorization"), None, "{entry}");
        }
        let tool_round = requests[1].raw_body.clone();
        assert!(tool_round.contains("lookup"), "{entry}: {tool_round}");
        if endpoint.ends_with("responses") {
            let bodies: Vec<_> = requests.iter().map(|r| r.body.clone()).collect();
            the_sdk_accepts(&bodies);
        }
    }
}

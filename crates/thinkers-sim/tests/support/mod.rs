//! Helpers shared by the integration tests: starting a sim, calling it over real HTTP in either
//! dialect, reading event streams, and validating answers against the OpenAI specification.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::sync::OnceLock;

use eventsource_stream::Eventsource;
use futures::StreamExt;
use reqwest::header::HeaderMap;
use serde_json::{Value, json};
use thinkers_sim::{Sim, SimConfig, SimModel};

/// A reply: status, headers, parsed JSON body.
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Value,
}

impl Reply {
    pub(crate) fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
    }
}

pub(crate) fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}

/// A sim serving the usual test models: `gpt-sim` (native tools), `claude-sim` (native tools and
/// thinking), `text-sim` (no native tools).
pub(crate) async fn start_default() -> Sim {
    start(
        SimConfig::builder()
            .model(SimModel::new("gpt-sim").thinking(true))
            .model(SimModel::new("gpt-plain"))
            .model(SimModel::new("claude-sim").thinking(true))
            .model(SimModel::new("text-sim").native_tools(false))
            .seed(42)
            .build()
            .unwrap(),
    )
    .await
}

pub(crate) async fn start(config: SimConfig) -> Sim {
    Sim::start(config).await.unwrap()
}

pub(crate) async fn openai_with(sim: &Sim, body: &Value, extra: &[(&str, &str)]) -> Reply {
    let mut req = client()
        .post(format!("{}/chat/completions", sim.openai_base_url()))
        .bearer_auth("sk-test")
        .json(body);
    for (k, v) in extra {
        req = req.header(*k, *v);
    }
    let resp = req.send().await.unwrap();
    reply(resp).await
}

pub(crate) async fn openai(sim: &Sim, body: &Value) -> Reply {
    openai_with(sim, body, &[]).await
}

pub(crate) async fn anthropic_with(sim: &Sim, body: &Value, extra: &[(&str, &str)]) -> Reply {
    let mut req = client()
        .post(format!("{}/v1/messages", sim.base_url()))
        .header("x-api-key", "sk-ant-test")
        .header("anthropic-version", "2023-06-01")
        .json(body);
    for (k, v) in extra {
        req = req.header(*k, *v);
    }
    reply(req.send().await.unwrap()).await
}

pub(crate) async fn anthropic(sim: &Sim, body: &Value) -> Reply {
    anthropic_with(sim, body, &[]).await
}

/// `POST /v1beta/models/{model}:generateContent` with a key in `x-goog-api-key`.
pub(crate) async fn gemini_with(
    sim: &Sim,
    model: &str,
    body: &Value,
    extra: &[(&str, &str)],
) -> Reply {
    let mut req = client()
        .post(format!(
            "{}/models/{model}:generateContent",
            sim.gemini_base_url()
        ))
        .header("x-goog-api-key", "AIza-test")
        .json(body);
    for (k, v) in extra {
        req = req.header(*k, *v);
    }
    reply(req.send().await.unwrap()).await
}

pub(crate) async fn gemini(sim: &Sim, model: &str, body: &Value) -> Reply {
    gemini_with(sim, model, body, &[]).await
}

/// `POST /v1beta/models/{model}:streamGenerateContent?alt=sse`.
pub(crate) async fn gemini_stream(
    sim: &Sim,
    model: &str,
    body: &Value,
    extra: &[(&str, &str)],
) -> (Vec<Sse>, bool) {
    let mut req = client()
        .post(format!(
            "{}/models/{model}:streamGenerateContent?alt=sse",
            sim.gemini_base_url()
        ))
        .header("x-goog-api-key", "AIza-test")
        .json(body);
    for (k, v) in extra {
        req = req.header(*k, *v);
    }
    events(req.send().await.unwrap()).await
}

async fn reply(resp: reqwest::Response) -> Reply {
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let text = resp.text().await.unwrap();
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    Reply {
        status,
        headers,
        body,
    }
}

/// One server-sent event: its name (empty for OpenAI) and its data.
#[derive(Debug, Clone)]
pub(crate) struct Sse {
    pub(crate) event: String,
    pub(crate) data: String,
}

impl Sse {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.data).unwrap()
    }
}

/// The events of a streamed answer, and whether the body ended with a transport error.
pub(crate) async fn events(resp: reqwest::Response) -> (Vec<Sse>, bool) {
    assert_eq!(resp.status().as_u16(), 200);
    let content_type = resp.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(
        content_type.starts_with("text/event-stream"),
        "{content_type}"
    );
    let mut stream = resp.bytes_stream().eventsource();
    let mut out = Vec::new();
    let mut broken = false;
    while let Some(item) = stream.next().await {
        match item {
            Ok(event) => out.push(Sse {
                event: event.event,
                data: event.data,
            }),
            Err(_) => {
                broken = true;
                break;
            }
        }
    }
    (out, broken)
}

pub(crate) async fn openai_stream(
    sim: &Sim,
    body: &Value,
    extra: &[(&str, &str)],
) -> (Vec<Sse>, bool) {
    let mut req = client()
        .post(format!("{}/chat/completions", sim.openai_base_url()))
        .bearer_auth("sk-test")
        .json(body);
    for (k, v) in extra {
        req = req.header(*k, *v);
    }
    events(req.send().await.unwrap()).await
}

pub(crate) async fn anthropic_stream(
    sim: &Sim,
    body: &Value,
    extra: &[(&str, &str)],
) -> (Vec<Sse>, bool) {
    let mut req = client()
        .post(format!("{}/v1/messages", sim.base_url()))
        .header("x-api-key", "sk-ant-test")
        .header("anthropic-version", "2023-06-01")
        .json(body);
    for (k, v) in extra {
        req = req.header(*k, *v);
    }
    events(req.send().await.unwrap()).await
}

pub(crate) fn weather_tool_openai() -> Value {
    json!({"type": "function", "function": {
        "name": "get_weather",
        "description": "Current weather for a city",
        "parameters": weather_schema()
    }})
}

pub(crate) fn time_tool_openai() -> Value {
    json!({"type": "function", "function": {
        "name": "get_time",
        "description": "Local time in a timezone",
        "parameters": {"type": "object", "properties": {"tz": {"type": "string", "enum": ["UTC", "CET"]}}, "required": ["tz"], "additionalProperties": false}
    }})
}

pub(crate) fn weather_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "city": {"type": "string", "minLength": 2},
            "unit": {"type": ["string", "null"], "enum": ["c", "f", null]},
            "days": {"type": "integer", "minimum": 1, "maximum": 7}
        },
        "required": ["city", "unit", "days"],
        "additionalProperties": false
    })
}

/// Asserts `value` is valid for `schema` (Draft 2020-12, formats checked).
pub(crate) fn assert_valid(schema: &Value, value: &Value) {
    let validator = jsonschema::draft202012::options()
        .should_validate_formats(true)
        .build(schema)
        .unwrap();
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| e.to_string())
        .collect();
    assert!(
        errors.is_empty(),
        "{value} is invalid for {schema}: {errors:?}"
    );
}

pub(crate) fn is_valid(schema: &Value, value: &Value) -> bool {
    jsonschema::draft202012::is_valid(schema, value)
}

/// The OpenAI specification extract, with OpenAPI's `nullable: true` turned into JSON Schema.
fn openai_spec() -> &'static Value {
    static SPEC: OnceLock<Value> = OnceLock::new();
    SPEC.get_or_init(|| {
        let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let candidates = [
            std::env::var("THINKERS_OPENAI_SPEC").ok().map(PathBuf::from),
            Some(manifest.join("../../specs/openai-chat-completions.openapi.json")),
            Some(manifest.join("../../../shared/specs/openai-chat-completions.openapi.json")),
        ];
        let path = candidates
            .into_iter()
            .flatten()
            .find(|p| p.exists())
            .expect("the OpenAI spec extract (shared/specs/openai-chat-completions.openapi.json) is needed; set THINKERS_OPENAI_SPEC");
        let mut spec: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        denullable(&mut spec);
        spec
    })
}

fn denullable(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for v in map.values_mut() {
                denullable(v);
            }
            if map.remove("nullable") == Some(Value::Bool(true)) {
                if let Some(Value::String(t)) = map.get("type").cloned() {
                    map.insert("type".into(), json!([t, "null"]));
                    if let Some(Value::Array(options)) = map.get_mut("enum") {
                        options.push(Value::Null);
                    }
                } else {
                    let inner = Value::Object(std::mem::take(map));
                    map.insert("anyOf".into(), json!([inner, {"type": "null"}]));
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(denullable),
        _ => {}
    }
}

/// Asserts `value` is valid for the spec's component schema `name`.
pub(crate) fn assert_openai_schema(name: &str, value: &Value) {
    let spec = openai_spec();
    let root = json!({
        "components": spec["components"],
        "$ref": format!("#/components/schemas/{name}")
    });
    let validator = jsonschema::draft202012::new(&root).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{value} is not a valid {name}: {errors:?}"
    );
}

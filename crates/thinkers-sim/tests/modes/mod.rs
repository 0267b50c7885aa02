//! Text-tool mode, scripted mode and determinism.

use serde_json::{Value, json};
use thinkers_sim::{
    Profile, Script, ScriptAnswer, ScriptRule, ScriptToolCall, SimConfig, SimModel,
};

use crate::support::*;

fn user(text: &str) -> Value {
    json!({"role": "user", "content": text})
}

fn text_protocol_system() -> String {
    let tools = json!([{"name": "lookup", "description": "Look a term up",
        "parameters": {"type": "object", "required": ["term"], "properties": {"term": {"type": "string"}}}}]);
    let schema = json!({"type": "object", "required": ["answer", "cited"], "properties": {
        "answer": {"type": "string"}, "cited": {"type": "boolean"}}});
    format!(
        "You answer from the glossary.\n<tools>\n{tools}\n</tools>\nAnswer with JSON:\n<response_schema>\n{schema}\n</response_schema>\n"
    )
}

#[tokio::test]
async fn text_tool_mode_calls_tools_in_text_and_reads_results() {
    let sim = start_default().await;
    let refused = openai(
        &sim,
        &json!({"model": "text-sim", "tools": [weather_tool_openai()],
        "messages": [user("x")]}),
    )
    .await;
    assert_eq!(refused.status, 400);
    assert_eq!(refused.body["error"]["param"], "tools");
    let refused = anthropic(
        &sim,
        &json!({"model": "text-sim", "max_tokens": 100,
        "tools": [{"name": "t", "input_schema": {"type": "object"}}], "messages": [user("x")]}),
    )
    .await;
    assert_eq!(refused.status, 400);

    let system = text_protocol_system();
    let first = openai(
        &sim,
        &json!({"model": "text-sim", "messages": [
        {"role": "system", "content": system}, user("What is a seat?")]}),
    )
    .await;
    assert_eq!(first.status, 200, "{}", first.body);
    let choice = &first.body["choices"][0];
    assert_eq!(choice["finish_reason"], "stop");
    assert!(choice["message"].get("tool_calls").is_none());
    let reply: Value =
        serde_json::from_str(choice["message"]["content"].as_str().unwrap()).unwrap();
    let call = &reply["tool_calls"][0];
    assert_eq!(call["name"], "lookup");
    assert!(call["arguments"]["term"].is_string());

    let results =
        "<tool_result name=\"lookup\" id=\"t1\">A seat is a reserved model slot.</tool_result>";
    let second = openai(
        &sim,
        &json!({"model": "text-sim", "messages": [
        {"role": "system", "content": system}, user("What is a seat?"),
        {"role": "assistant", "content": choice["message"]["content"]}, user(results)]}),
    )
    .await;
    let content = second.body["choices"][0]["message"]["content"]
        .as_str()
        .unwrap();
    let answer: Value = serde_json::from_str(content).unwrap();
    assert!(
        answer["answer"]
            .as_str()
            .unwrap()
            .contains("A seat is a reserved model slot."),
        "{answer}"
    );
    assert!(answer["cited"].is_boolean());

    // The same protocol through the Anthropic dialect.
    let first = anthropic(
        &sim,
        &json!({"model": "text-sim", "max_tokens": 1024, "system": system,
        "messages": [user("What is a seat?")]}),
    )
    .await;
    assert_eq!(first.body["stop_reason"], "end_turn");
    let reply: Value =
        serde_json::from_str(first.body["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(reply["tool_calls"][0]["name"], "lookup");
}

fn scripted_sim_config() -> SimConfig {
    let script = Script::new(vec![
        ScriptRule::when_contains(
            "weather",
            ScriptAnswer::ToolCalls(vec![ScriptToolCall {
                name: "get_weather".into(),
                arguments: json!({"city": "Paris", "unit": "c", "days": 1}),
            }]),
        )
        .times(1),
        ScriptRule::when_contains("sunny", ScriptAnswer::Text("It is sunny in Paris.".into())),
        ScriptRule::when_contains("report", ScriptAnswer::Json(json!({"status": "done"})))
            .for_model("gpt-sim"),
    ]);
    SimConfig::builder()
        .model(SimModel::new("gpt-sim"))
        .model(SimModel::new("other"))
        .script(script)
        .build()
        .unwrap()
}

#[tokio::test]
async fn scripted_rules_answer_first_and_fall_back_to_schema_driven() {
    let sim = start(scripted_sim_config()).await;
    let tools = json!([weather_tool_openai()]);
    let first = openai(
        &sim,
        &json!({"model": "gpt-sim", "tools": tools, "messages": [user("what's the weather?")]}),
    )
    .await;
    let call = &first.body["choices"][0]["message"]["tool_calls"][0];
    assert_eq!(call["function"]["name"], "get_weather");
    assert_eq!(
        call["function"]["arguments"],
        json!({"city": "Paris", "unit": "c", "days": 1}).to_string()
    );
    let second = openai(
        &sim,
        &json!({"model": "gpt-sim", "tools": tools, "messages": [
        user("what's the weather?"), first.body["choices"][0]["message"].clone(),
        {"role": "tool", "tool_call_id": call["id"], "content": "sunny, 24C"}]}),
    )
    .await;
    assert_eq!(
        second.body["choices"][0]["message"]["content"],
        "It is sunny in Paris."
    );
    // `times = 1` is spent: the same question now gets a schema-driven answer.
    let third = openai(
        &sim,
        &json!({"model": "gpt-sim", "messages": [user("what's the weather?")]}),
    )
    .await;
    assert!(
        third.body["choices"][0]["message"]["content"]
            .as_str()
            .unwrap()
            .contains("what's the weather?")
    );
    // Model-restricted rules.
    let json_answer = openai(
        &sim,
        &json!({"model": "gpt-sim", "messages": [user("the report please")]}),
    )
    .await;
    assert_eq!(
        json_answer.body["choices"][0]["message"]["content"],
        json!({"status": "done"}).to_string()
    );
    let other = openai(
        &sim,
        &json!({"model": "other", "messages": [user("the report please")]}),
    )
    .await;
    assert_ne!(
        other.body["choices"][0]["message"]["content"],
        json!({"status": "done"}).to_string()
    );
    // Reset restores the spent budget.
    sim.reset();
    let again = openai(
        &sim,
        &json!({"model": "gpt-sim", "tools": tools, "messages": [user("what's the weather?")]}),
    )
    .await;
    assert_eq!(again.body["choices"][0]["finish_reason"], "tool_calls");
}

#[tokio::test]
async fn scripts_load_from_toml_and_json_files() {
    let dir = tempfile::tempdir().unwrap();
    let toml_path = dir.path().join("script.toml");
    std::fs::write(
        &toml_path,
        "[[rules]]\ncontains = \"ping\"\nanswer = { text = \"pong\" }\n",
    )
    .unwrap();
    let json_path = dir.path().join("script.json");
    std::fs::write(
        &json_path,
        r#"{"rules": [{"contains": "ping", "answer": {"text": "pong"}}]}"#,
    )
    .unwrap();
    let a = Script::from_file(&toml_path).unwrap();
    let b = Script::from_file(&json_path).unwrap();
    assert_eq!(a, b);
    let sim = start(SimConfig::builder().script(a).build().unwrap()).await;
    let reply = anthropic(
        &sim,
        &json!({"model": "any-model", "max_tokens": 50, "messages": [user("ping")]}),
    )
    .await;
    assert_eq!(reply.body["content"][0]["text"], "pong");
    assert!(Script::from_file(dir.path().join("missing.toml")).is_err());
}

fn busy_request() -> Value {
    json!({"model": "m", "tools": [weather_tool_openai(), time_tool_openai()], "messages": [user("plan my week")]})
}

#[tokio::test]
async fn answers_are_deterministic_for_a_seed() {
    let config = |seed| {
        SimConfig::builder()
            .model(SimModel::new("m").profile(Profile {
                parallel_tool_calls: 2,
                quality: 0.5,
                ..Profile::default()
            }))
            .seed(seed)
            .build()
            .unwrap()
    };
    let a = start(config(5)).await;
    let b = start(config(5)).await;
    let answer = |r: Reply| r.body["choices"][0]["message"]["tool_calls"].clone();
    let first = answer(openai(&a, &busy_request()).await);
    assert!(first.is_array());
    assert_eq!(first, answer(openai(&b, &busy_request()).await));
    assert_eq!(first, answer(openai(&a, &busy_request()).await));
    let mut differs = false;
    for seed in 6..12 {
        let other = start(config(seed)).await;
        differs |= answer(openai(&other, &busy_request()).await) != first;
    }
    assert!(differs, "other seeds should give other arguments");
}

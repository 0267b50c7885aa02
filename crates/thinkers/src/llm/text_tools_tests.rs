//! Tests of the text-tool protocol: the system content, replies parsed into calls, history
//! rendered back (without what the model made up), the streaming gate.

use super::*;
use serde_json::json;

fn tool() -> ToolSpec {
    ToolSpec {
        name: "get_weather".into(),
        description: "Current weather for a city".into(),
        parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}).into(),
    }
}

#[test]
fn the_tool_list_sits_between_marker_lines_as_a_json_array() -> anyhow::Result<()> {
    let s = render_system("Be terse.", &[tool()], &ToolChoice::Auto, None);
    let start = s
        .find("\n<tools>\n")
        .ok_or_else(|| anyhow::anyhow!("no <tools>"))?
        + 9;
    let end = s
        .find("\n</tools>")
        .ok_or_else(|| anyhow::anyhow!("no </tools>"))?;
    let list: Vec<Value> = serde_json::from_str(&s[start..end])?;
    assert_eq!(list[0]["name"], "get_weather");
    assert_eq!(list[0]["parameters"]["required"], json!(["city"]));
    assert!(s.starts_with("Be terse.\n\n"));
    Ok(())
}

#[test]
fn the_schema_sits_between_marker_lines() -> anyhow::Result<()> {
    let schema = ResponseSchema {
        name: "answer".into(),
        schema: json!({"type": "object"}).into(),
    };
    let s = render_system("", &[], &ToolChoice::Auto, Some(&schema));
    let inner = s
        .split("<response_schema>\n")
        .nth(1)
        .and_then(|r| r.split("\n</response_schema>").next())
        .ok_or_else(|| anyhow::anyhow!("no block"))?;
    assert_eq!(
        serde_json::from_str::<Value>(inner)?,
        json!({"type": "object"})
    );
    assert!(!s.contains("<tools>"));
    Ok(())
}

#[test]
fn replies_parse_bare_fenced_and_inside_prose() {
    let bare =
        r#"{"tool_calls":[{"name":"a","arguments":{"x":1}},{"name":"b","arguments":"{\"y\":2}"}]}"#;
    let calls = parse_reply(bare, 3).unwrap_or_default();
    assert_eq!(
        calls,
        vec![
            ContentBlock::tool_call("call_3", "a", json!({"x": 1})),
            ContentBlock::tool_call("call_4", "b", json!({"y": 2})),
        ]
    );
    let fenced = format!("```json\n{bare}\n```");
    assert_eq!(parse_reply(&fenced, 3).map(|c| c.len()), Some(2));
    let prose = format!("Let me look.\n```json\n{bare}\n```\n");
    let blocks = parse_reply(&prose, 1).unwrap_or_default();
    assert_eq!(blocks[0], ContentBlock::text("Let me look."));
    assert_eq!(blocks.len(), 3);
}

#[test]
fn final_answers_are_not_tool_calls() {
    assert!(parse_reply("The weather is fine.", 1).is_none());
    assert!(parse_reply(r#"{"answer": 42}"#, 1).is_none());
    assert!(parse_reply(r#"{"tool_calls": []}"#, 1).is_none());
    assert!(parse_reply(r#"{"tool_calls": [{"arguments": {}}]}"#, 1).is_none());
}

#[test]
fn history_renders_back_in_the_protocol() {
    let msgs = vec![
        Message::assistant(vec![ContentBlock::tool_call(
            "call_1",
            "get_weather",
            json!({"city": "Paris"}),
        )]),
        Message::tool_results(vec![ContentBlock::tool_result(
            "call_1",
            "get_weather",
            "11C",
        )]),
        Message::tool_results(vec![ContentBlock::tool_error(
            "call_2",
            "get_weather",
            "no \"city\"",
        )]),
    ];
    let out = to_text_protocol(&msgs, &[tool()]);
    assert_eq!(
        out[0].text(),
        r#"{"tool_calls":[{"name":"get_weather","arguments":{"city":"Paris"}}]}"#
    );
    assert_eq!(out.len(), 2);
    assert_eq!(
        out[1].text(),
        "<tool_result name=\"get_weather\" id=\"call_1\">11C</tool_result>\n\
         <tool_result name=\"get_weather\" id=\"call_2\">ERROR: no \"city\"</tool_result>"
    );
}

#[test]
fn a_failed_call_to_a_tool_not_offered_is_written_back_without_what_the_model_made_up() {
    const MADE_UP: &str = "made_up_tool_q7";
    let msgs = vec![
        Message::assistant(vec![
            ContentBlock::tool_call("call_1", MADE_UP, json!({"secret_key_q7": 1})),
            ContentBlock::tool_call("call_2", "get_weather", json!({"city": "Oslo"})),
        ]),
        Message::tool_results(vec![
            ContentBlock::tool_error("call_1", MADE_UP, "no such tool"),
            ContentBlock::tool_result("call_2", "get_weather", "3C"),
        ]),
        // A tool the request no longer offers that ran keeps its name.
        Message::assistant(vec![ContentBlock::tool_call(
            "call_3",
            "sub_thinker",
            json!({"task": "t"}),
        )]),
        Message::tool_results(vec![ContentBlock::tool_result(
            "call_3",
            "sub_thinker",
            "done",
        )]),
    ];
    let out = to_text_protocol(&msgs, &[tool()]);
    let all: String = out.iter().map(Message::text).collect();
    assert!(!all.contains(MADE_UP), "{all}");
    assert!(!all.contains("secret_key_q7"), "{all}");
    assert_eq!(
        out[0].text(),
        r#"{"tool_calls":[{},{"name":"get_weather","arguments":{"city":"Oslo"}}]}"#
    );
    assert_eq!(
        out[1].text(),
        "<tool_result id=\"call_1\">ERROR: no such tool</tool_result>\n\
         <tool_result name=\"get_weather\" id=\"call_2\">3C</tool_result>"
    );
    assert!(out[2].text().contains(r#""name":"sub_thinker""#));
    assert!(out[3].text().contains(r#"name="sub_thinker""#));
}

#[test]
fn the_gate_holds_possible_calls_and_streams_prose() {
    let mut seen = Vec::new();
    let mut g = TextGate::default();
    g.text("  {\"tool_", &mut |d| seen.push(d));
    g.text("calls\": []}", &mut |d| seen.push(d));
    assert!(seen.is_empty());
    g.finish(
        &[ContentBlock::tool_call("call_1", "a", json!({}))],
        &mut |d| seen.push(d),
    );
    assert_eq!(seen.len(), 2);

    let mut seen = Vec::new();
    let mut g = TextGate::default();
    g.text(" ", &mut |d| seen.push(d));
    g.text("Hello", &mut |d| seen.push(d));
    g.text(" world", &mut |d| seen.push(d));
    g.finish(&[ContentBlock::text(" Hello world")], &mut |d| seen.push(d));
    assert_eq!(
        seen,
        vec![
            StreamDelta::Text(" Hello".into()),
            StreamDelta::Text(" world".into())
        ]
    );
}

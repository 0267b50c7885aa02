//! Planner decisions, without HTTP.

use serde_json::{Value, json};

use super::*;
use crate::exchange::{Message, Part, Role};

fn tool(name: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: String::new(),
        schema: json!({"type": "object", "required": ["q"], "properties": {"q": {"type": "string"}}}),
    }
}

fn exchange(tools: Vec<ToolSpec>) -> Exchange {
    Exchange {
        dialect: Dialect::OpenAi,
        model: "m".into(),
        content_seed: 1,
        system: String::new(),
        messages: vec![Message {
            role: Role::User,
            parts: vec![Part::Text("find the answer".into())],
        }],
        tools,
        text_tools: Vec::new(),
        tool_choice: ToolChoice::Auto,
        parallel: true,
        format: AnswerFormat::Text,
        thinking: false,
        include_thoughts: false,
        reasoning_effort: None,
        max_output: None,
        stream: false,
        include_usage: false,
        logprobs: None,
        encrypted_reasoning: false,
    }
}

fn run(exchange: &Exchange, profile: &Profile, fault: Option<FaultKind>) -> Plan {
    let model = SimModel::new("m");
    plan(
        exchange,
        &PlanContext {
            model: &model,
            profile,
            script: None,
            fault,
        },
    )
}

fn calls(plan: &Plan) -> Vec<String> {
    match &plan.body {
        Body::ToolCalls(calls) => calls.iter().map(|c| c.name.clone()).collect(),
        Body::Text(_) => Vec::new(),
    }
}

#[test]
fn parallel_calls_cycle_through_tools_and_respect_parallel_flag() {
    let profile = Profile {
        parallel_tool_calls: 3,
        ..Profile::default()
    };
    let mut ex = exchange(vec![tool("a"), tool("b")]);
    let names = calls(&run(&ex, &profile, None));
    assert_eq!(names.len(), 3);
    assert!(names.contains(&"a".to_owned()) && names.contains(&"b".to_owned()));
    ex.parallel = false;
    assert_eq!(calls(&run(&ex, &profile, None)).len(), 1);
    ex.tool_choice = ToolChoice::None;
    assert!(calls(&run(&ex, &profile, None)).is_empty());
}

#[test]
fn rounds_are_counted_from_the_conversation() {
    let profile = Profile::default();
    let mut ex = exchange(vec![tool("a")]);
    ex.messages.push(Message {
        role: Role::Assistant,
        parts: vec![Part::ToolCall {
            name: "a".into(),
            arguments: "{}".into(),
        }],
    });
    ex.messages.push(Message {
        role: Role::Tool,
        parts: vec![Part::ToolResult("the tool says 7".into())],
    });
    let plan = run(&ex, &profile, None);
    assert_eq!(plan.finish, Finish::Stop);
    let Body::Text(text) = &plan.body else {
        panic!("expected text")
    };
    assert!(text.contains("the tool says 7"));
    // A forced tool is called whatever the round count.
    ex.tool_choice = ToolChoice::Named("a".into());
    assert_eq!(calls(&run(&ex, &profile, None)), vec!["a".to_owned()]);
}

#[test]
fn text_mode_writes_protocol_json() {
    let mut ex = exchange(Vec::new());
    ex.text_tools = vec![tool("lookup")];
    let plan = run(&ex, &Profile::default(), None);
    assert_eq!(plan.finish, Finish::Stop);
    let Body::Text(text) = &plan.body else {
        panic!("expected text")
    };
    let value: Value = serde_json::from_str(text).unwrap();
    assert_eq!(value["tool_calls"][0]["name"], "lookup");
    assert!(value["tool_calls"][0]["arguments"]["q"].is_string());
}

#[test]
fn budgets_cut_answers_and_cap_reasoning() {
    let mut ex = exchange(Vec::new());
    ex.max_output = Some(2);
    let plan = run(&ex, &Profile::default(), None);
    assert_eq!(plan.finish, Finish::Length);
    assert_eq!(plan.output_tokens, 2);
    let Body::Text(text) = &plan.body else {
        panic!("expected text")
    };
    assert!(text.chars().count() <= 8);

    ex.max_output = Some(1000);
    ex.thinking = true;
    ex.reasoning_effort = Some("max".into());
    let plan = run(&ex, &Profile::default(), None);
    assert_eq!(
        plan.reasoning_tokens, 500,
        "reasoning takes at most half the budget"
    );
    assert!(plan.output_tokens > plan.reasoning_tokens);
}

#[test]
fn unknown_tool_names_avoid_offered_ones() {
    let ex = exchange(vec![tool("unknown_tool")]);
    let plan = run(&ex, &Profile::default(), Some(FaultKind::UnknownTool));
    assert_eq!(calls(&plan), vec!["unknown_tool_2".to_owned()]);
}

#[test]
fn anthropic_thinking_describes_the_next_step() {
    let mut ex = exchange(vec![tool("search")]);
    ex.dialect = Dialect::Anthropic;
    ex.thinking = true;
    let plan = run(&ex, &Profile::default(), None);
    let thinking = plan.thinking.clone().unwrap();
    assert!(thinking.contains("find the answer") && thinking.contains("search"));
    assert!(calls(&plan)[0].starts_with("search"));
}

#[test]
fn quotable_words_come_from_user_texts_and_tool_results_only() {
    let mut ex = exchange(Vec::new());
    ex.system = "Refs look like @a99.".into();
    ex.messages = vec![
        Message {
            role: Role::User,
            parts: vec![Part::Text("Compare @a1: and the rest.".into())],
        },
        Message {
            role: Role::Assistant,
            parts: vec![Part::Text("I made up @a42".into())],
        },
        Message {
            role: Role::Tool,
            parts: vec![Part::ToolResult(
                "[artifact @a2] {\"term\":\"grade\"}".into(),
            )],
        },
    ];
    assert_eq!(
        ex.quotable_words(),
        [
            "Compare", "@a1", "and", "the", "rest", "artifact", "@a2", "term", "grade"
        ]
    );
}

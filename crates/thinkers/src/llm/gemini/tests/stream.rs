//! Streamed answers: thoughts, text and calls event by event; streams that end early or carry errors.

use super::*;

const STREAM: &str = r#"data: {"candidates": [{"content": {"parts": [{"text": "Let me","thought": true}],"role": "model"},"index": 0}],"modelVersion": "gemini-x-001"}

data: {"candidates": [{"content": {"parts": [{"text": " think.","thought": true,"thoughtSignature": "EqQB"}],"role": "model"},"index": 0}],"modelVersion": "gemini-x-001"}

data: {"candidates": [{"content": {"parts": [{"text": "Check"}],"role": "model"},"index": 0}],"modelVersion": "gemini-x-001"}

data: {"candidates": [{"content": {"parts": [{"text": "ing."}],"role": "model"},"index": 0}],"modelVersion": "gemini-x-001"}

data: {"candidates": [{"content": {"parts": [{"text": "","thoughtSignature": "VGV4dA=="}],"role": "model"},"index": 0}],"modelVersion": "gemini-x-001"}

data: {"candidates": [{"content": {"parts": [{"functionCall": {"name": "get_weather","args": {"city": "Paris"}},"thoughtSignature": "Q2FsbA=="},{"functionCall": {"name": "get_time","args": {}}}],"role": "model"},"index": 0}],"modelVersion": "gemini-x-001"}

data: {"candidates": [{"content": {"parts": [{"text": ""}],"role": "model"},"finishReason": "STOP","index": 0}],"usageMetadata": {"promptTokenCount": 472,"candidatesTokenCount": 20,"thoughtsTokenCount": 69,"totalTokenCount": 561},"modelVersion": "gemini-x-001"}

"#;

#[tokio::test]
async fn decodes_a_thought_text_and_call_stream() -> anyhow::Result<()> {
    let (r, deltas) = decode_sse(plan(Dialect::Gemini, false), STREAM).await;
    let r = r?;
    assert_eq!(r.stop, StopReason::ToolUse);
    assert_eq!(r.model, "gemini-x-001");
    assert_eq!(
        r.content,
        vec![
            ContentBlock::Thinking {
                thinking: "Let me think.".into(),
                signature: "gemini:EqQB".into()
            },
            ContentBlock::RedactedThinking {
                data: "gemini:VGV4dA==".into()
            },
            ContentBlock::text("Checking."),
            ContentBlock::RedactedThinking {
                data: "gemini:Q2FsbA==".into()
            },
            ContentBlock::tool_call("call_1", "get_weather", json!({"city": "Paris"})),
            ContentBlock::tool_call("call_2", "get_time", json!({})),
        ]
    );
    assert_eq!(
        (r.usage.input, r.usage.output, r.usage.reasoning),
        (472, 89, 69)
    );
    assert_eq!(
        deltas,
        vec![
            StreamDelta::Thinking("Let me".into()),
            StreamDelta::Thinking(" think.".into()),
            StreamDelta::Text("Check".into()),
            StreamDelta::Text("ing.".into()),
            StreamDelta::ToolCallStart {
                index: 0,
                id: "call_1".into(),
                name: "get_weather".into()
            },
            StreamDelta::ToolCallArguments {
                index: 0,
                fragment: "{\"city\":\"Paris\"}".into()
            },
            StreamDelta::ToolCallStart {
                index: 1,
                id: "call_2".into(),
                name: "get_time".into()
            },
            StreamDelta::ToolCallArguments {
                index: 1,
                fragment: "{}".into()
            },
        ]
    );
    // Sent back, the streamed turn carries its signatures on the parts they closed.
    let mut req = fixtures::with_tools();
    next_turn(&mut req, &r);
    let (_, v) = encode_json(&req, true, true)?;
    assert_eq!(
        v["contents"][1]["parts"],
        json!([
            {"text": "Let me think.", "thought": true, "thoughtSignature": "EqQB"},
            {"text": "Checking.", "thoughtSignature": "VGV4dA=="},
            {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": "Q2FsbA=="},
            {"functionCall": {"name": "get_time", "args": {}}}
        ])
    );
    Ok(())
}

#[tokio::test]
async fn streams_that_end_early_or_carry_errors() {
    let events: Vec<&str> = STREAM.split_inclusive("\n\n").collect();
    // Cut before any content: transient, the request may be sent again.
    let (r, _) = decode_sse(plan(Dialect::Gemini, false), "").await;
    assert!(
        matches!(r, Err(Error::Retry(RetrySignal::Transient { .. }))),
        "{r:?}"
    );
    // Cut after content: final.
    let head: String = events[..3].concat();
    let (r, deltas) = decode_sse(plan(Dialect::Gemini, false), &head).await;
    assert!(!deltas.is_empty());
    assert_eq!(r.err().map(|e| e.kind()), Some(ErrorKind::ExternalService));
    // An error event before content: classified (quota → throttled with its RetryInfo wait).
    let error = r#"data: {"error": {"code": 429, "message": "Resource has been exhausted", "status": "RESOURCE_EXHAUSTED", "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "3s"}]}}

"#;
    let (r, _) = decode_sse(plan(Dialect::Gemini, false), error).await;
    match r {
        Err(Error::Retry(RetrySignal::Throttled { retry_after, .. })) => {
            assert_eq!(retry_after, Some(Duration::from_secs(3)));
        }
        other => panic!("{other:?}"),
    }
    let unavailable = r#"data: {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}

"#;
    let (r, _) = decode_sse(plan(Dialect::Gemini, false), unavailable).await;
    assert!(
        matches!(r, Err(Error::Retry(RetrySignal::Transient { .. }))),
        "{r:?}"
    );
    // After content it is final whatever it says.
    let sse = format!("{}{error}", events[..3].concat());
    let (r, _) = decode_sse(plan(Dialect::Gemini, false), &sse).await;
    assert_eq!(r.err().map(|e| e.kind()), Some(ErrorKind::ExternalService));
}

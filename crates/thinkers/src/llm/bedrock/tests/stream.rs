//! converse-stream: event-stream frames decoded frame by frame; exceptions and early ends classified.

use super::*;

/// An event-stream frame as Bedrock writes it.
fn event(kind: &str, payload: &Value) -> Vec<u8> {
    let frame = Frame::new_from_parts(
        vec![
            FrameHeader::new(":event-type", HeaderValue::String(kind.to_owned().into())),
            FrameHeader::new(
                ":content-type",
                HeaderValue::String("application/json".into()),
            ),
            FrameHeader::new(":message-type", HeaderValue::String("event".into())),
        ],
        payload.to_string().into_bytes(),
    );
    let mut out = Vec::new();
    write_message_to(&frame, &mut out).unwrap_or_else(|_| unreachable!());
    out
}

fn exception(kind: &str, message: &str) -> Vec<u8> {
    let frame = Frame::new_from_parts(
        vec![
            FrameHeader::new(
                ":exception-type",
                HeaderValue::String(kind.to_owned().into()),
            ),
            FrameHeader::new(
                ":content-type",
                HeaderValue::String("application/json".into()),
            ),
            FrameHeader::new(":message-type", HeaderValue::String("exception".into())),
        ],
        json!({"message": message}).to_string().into_bytes(),
    );
    let mut out = Vec::new();
    write_message_to(&frame, &mut out).unwrap_or_else(|_| unreachable!());
    out
}

fn tool_stream() -> Vec<u8> {
    let mut out = Vec::new();
    for (kind, payload) in [
        ("messageStart", json!({"role": "assistant"})),
        (
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "The user "}}}),
        ),
        (
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "wants weather."}}}),
        ),
        (
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"signature": SIGNATURE}}}),
        ),
        ("contentBlockStop", json!({"contentBlockIndex": 0})),
        (
            "contentBlockDelta",
            json!({"contentBlockIndex": 1, "delta": {"text": "Let me "}}),
        ),
        (
            "contentBlockDelta",
            json!({"contentBlockIndex": 1, "delta": {"text": "check."}}),
        ),
        ("contentBlockStop", json!({"contentBlockIndex": 1})),
        (
            "contentBlockStart",
            json!({"contentBlockIndex": 2, "start": {"toolUse": {"toolUseId": "tooluse_7", "name": "get_weather"}}}),
        ),
        (
            "contentBlockDelta",
            json!({"contentBlockIndex": 2, "delta": {"toolUse": {"input": "{\"city\":"}}}),
        ),
        (
            "contentBlockDelta",
            json!({"contentBlockIndex": 2, "delta": {"toolUse": {"input": "\"Paris\"}"}}}),
        ),
        ("contentBlockStop", json!({"contentBlockIndex": 2})),
        ("messageStop", json!({"stopReason": "tool_use"})),
        (
            "metadata",
            json!({"usage": {"inputTokens": 12, "outputTokens": 9, "totalTokens": 21}, "metrics": {"latencyMs": 80}}),
        ),
    ] {
        out.extend(event(kind, &payload));
    }
    out
}

/// Feed frames in small chunks through the frame reader, then the decoder.
fn run_stream(
    bytes: &[u8],
) -> (
    crate::Result<crate::llm::ChatResponse>,
    Vec<StreamDelta>,
    bool,
) {
    let mut reader = crate::llm::bedrock::stream::FrameReader::default();
    let mut decoder = StreamDecoder::new(plan(Dialect::BedrockConverse, false));
    let mut deltas = Vec::new();
    for chunk in bytes.chunks(7) {
        let messages = match reader.push(chunk) {
            Ok(m) => m,
            Err(e) => return (Err(Error::system("test", e)), deltas, false),
        };
        for m in messages {
            if let Err(e) = decoder.push(&m, &mut |d| deltas.push(d)) {
                let delivered = decoder.delivered_content();
                return (Err(e), deltas, delivered);
            }
        }
    }
    let delivered = decoder.delivered_content();
    let r = decoder.finish(&mut |d| deltas.push(d));
    (r, deltas, delivered)
}

#[test]
fn an_event_stream_is_decoded_frame_by_frame() -> anyhow::Result<()> {
    // The closing `metadata` frame says the stream is done.
    let mut reader = crate::llm::bedrock::stream::FrameReader::default();
    let mut decoder = StreamDecoder::new(plan(Dialect::BedrockConverse, false));
    for m in reader.push(&tool_stream()).map_err(anyhow::Error::msg)? {
        assert!(!decoder.is_done());
        decoder.push(&m, &mut |_| {})?;
    }
    assert!(decoder.is_done());
    let (r, deltas, _) = run_stream(&tool_stream());
    let r = r?;
    assert_eq!(r.stop, StopReason::ToolUse);
    assert_eq!(
        r.content[0],
        ContentBlock::Thinking {
            thinking: "The user wants weather.".into(),
            signature: SIGNATURE.into()
        }
    );
    assert_eq!(r.text(), "Let me check.");
    assert_eq!(r.tool_calls()[0].id, "tooluse_7");
    assert_eq!(r.tool_calls()[0].arguments, &json!({"city": "Paris"}));
    assert_eq!((r.usage.input, r.usage.output), (12, 9));
    assert!(deltas.contains(&StreamDelta::Thinking("The user ".into())));
    assert!(deltas.contains(&StreamDelta::Text("check.".into())));
    assert!(deltas.contains(&StreamDelta::ToolCallStart {
        index: 0,
        id: "tooluse_7".into(),
        name: "get_weather".into()
    }));
    assert!(deltas.contains(&StreamDelta::ToolCallArguments {
        index: 0,
        fragment: "\"Paris\"}".into()
    }));
    Ok(())
}

#[test]
fn stream_exceptions_and_early_ends_are_classified() {
    // A throttling exception before any content is throttling.
    let mut bytes = event("messageStart", &json!({"role": "assistant"}));
    bytes.extend(exception(
        "throttlingException",
        "Too many tokens, please wait.",
    ));
    let (r, _, delivered) = run_stream(&bytes);
    assert!(!delivered);
    assert!(
        matches!(r, Err(Error::Retry(RetrySignal::Throttled { .. }))),
        "{r:?}"
    );
    // After content, any exception is final.
    let mut prefix = Vec::new();
    for (kind, payload) in [
        ("messageStart", json!({"role": "assistant"})),
        (
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"text": "Hel"}}),
        ),
    ] {
        prefix.extend(event(kind, &payload));
    }
    let mut errored = prefix.clone();
    errored.extend(exception("modelStreamErrorException", "The model failed."));
    let (r, _, delivered) = run_stream(&errored);
    assert!(delivered);
    assert!(
        matches!(&r, Err(e) if e.kind() == crate::ErrorKind::ExternalService),
        "{r:?}"
    );
    // A stream that ends without `messageStop`: transient before content, final after.
    let (r, _, _) = run_stream(&event("messageStart", &json!({"role": "assistant"})));
    assert!(
        matches!(r, Err(Error::Retry(RetrySignal::Transient { .. }))),
        "{r:?}"
    );
    let (r, _, _) = run_stream(&prefix);
    assert!(
        matches!(&r, Err(e) if e.kind() == crate::ErrorKind::ExternalService),
        "{r:?}"
    );
    // A corrupted frame is refused by the checksum.
    let mut broken = tool_stream();
    broken[20] ^= 0xff;
    let mut reader = crate::llm::bedrock::stream::FrameReader::default();
    assert!(reader.push(&broken).is_err());
}

proptest::proptest! {
    /// Nothing a server sends can panic the frame reader or the decoder behind it: arbitrary
    /// bytes, and real frames with a byte changed or cut short.
    #[test]
    fn no_bytes_panic_the_frame_reader(
        noise in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..256),
        at in 0usize..4096,
        flip in 1u8..=255,
        cut in 0usize..4096,
    ) {
        let _ = run_stream(&noise);
        let mut frames = tool_stream();
        let i = at % frames.len();
        frames[i] ^= flip;
        let _ = run_stream(&frames);
        let whole = tool_stream();
        let _ = run_stream(&whole[..cut % whole.len()]);
    }
}

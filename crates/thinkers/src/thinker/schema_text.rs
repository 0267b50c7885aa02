//! The model text around an answer: a leading thinking block and code fences.

/// Where a model in thinking mode opens and closes the thinking it writes before its answer.
const THINK_OPEN: &str = "<think>";
const THINK_CLOSE: &str = "</think>";

/// A JSON answer wrapped in a Markdown code fence, unwrapped.
pub(super) fn strip_fences(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("```") else {
        return text;
    };
    let rest = rest.strip_prefix("json").unwrap_or(rest);
    rest.strip_suffix("```").unwrap_or(rest).trim()
}

/// The answer after a leading `<think>…</think>` block (a model in thinking mode writes its
/// thinking first, in the answer text): what follows the block, or nothing when the block is
/// never closed (the answer was all thinking). Text without such a block is returned as it is.
pub(super) fn strip_thinking(text: &str) -> &str {
    let Some(rest) = text.trim_start().strip_prefix(THINK_OPEN) else {
        return text;
    };
    match rest.find(THINK_CLOSE) {
        Some(end) => &rest[end + THINK_CLOSE.len()..],
        None => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leading_thinking_block_is_dropped() {
        assert_eq!(
            strip_thinking("\n<think>\nLook it up.\n</think>\n\nA seat.").trim(),
            "A seat."
        );
        assert_eq!(strip_thinking("<think>never closed"), "");
        assert_eq!(
            strip_thinking("A seat. <think>x</think>"),
            "A seat. <think>x</think>"
        );
        assert_eq!(strip_fences("```json\n{\"a\": 1}\n```"), "{\"a\": 1}");
    }
}

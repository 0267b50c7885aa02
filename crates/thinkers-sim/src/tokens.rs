//! The sim's own token count: a simple, documented, deterministic estimate.
//!
//! Input tokens of a request = ⌈B / 4⌉ + 3 per message + 3, where B is the number of UTF-8 bytes
//! of the text the model reads: the system prompt, every message's text, tool-call names and
//! arguments, tool results and thinking text, plus each offered tool's name, description and
//! compact JSON schema. Output tokens of an answer = ⌈B / 4⌉ (at least 1) over the visible text,
//! tool-call names and arguments, and thinking text. OpenAI reasoning tokens are added on top.
//!
//! The estimate is what the rate limits charge, what usage reports and what the stats count. It
//! is close to a real tokenizer on English prose and lower than one on JSON, so a client that
//! budgets with tiktoken stays on the safe side.

use crate::exchange::{Exchange, Part, ToolSpec};

/// ⌈bytes / 4⌉.
pub fn tokens_for_bytes(bytes: usize) -> u64 {
    bytes.div_ceil(4) as u64
}

fn tool_bytes(tool: &ToolSpec) -> usize {
    tool.name.len() + tool.description.len() + tool.schema.to_string().len()
}

/// The input token estimate of a request.
pub(crate) fn input_tokens(exchange: &Exchange) -> u64 {
    let mut bytes = exchange.system.len();
    for message in &exchange.messages {
        for part in &message.parts {
            bytes += match part {
                Part::Text(t) | Part::ToolResult(t) | Part::Thinking(t) => t.len(),
                Part::ToolCall { name, arguments } => name.len() + arguments.len(),
            };
        }
    }
    // Text-protocol tools are already inside the system prompt.
    bytes += exchange.tools.iter().map(tool_bytes).sum::<usize>();
    tokens_for_bytes(bytes) + 3 * exchange.message_count() as u64 + 3
}

/// The output token estimate of an answer made of these pieces of text.
pub(crate) fn output_tokens<'a>(pieces: impl IntoIterator<Item = &'a str>) -> u64 {
    let bytes: usize = pieces.into_iter().map(str::len).sum();
    tokens_for_bytes(bytes).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_up() {
        assert_eq!(tokens_for_bytes(0), 0);
        assert_eq!(tokens_for_bytes(1), 1);
        assert_eq!(tokens_for_bytes(8), 2);
        assert_eq!(tokens_for_bytes(9), 3);
        assert_eq!(output_tokens([""]), 1);
        assert_eq!(output_tokens(["abcd", "efgh1"]), 3);
    }
}

// A loopless thinker (toolless or decision) makes one model call with no tools, so it has no
// `tool` method: offering it a tool does not compile.
use thinkers::prelude::*;
use thinkers::thinker::{SystemPrompt, ToollessThinker};

/// Count the words of a text.
#[thinkers::tool(read_only)]
async fn word_count(text: String) -> Result<usize> {
    Ok(text.split_whitespace().count())
}

fn main() {
    let seat = ThinkerDeclaration::new(Grade::Small, OutputSize::Verdict);
    let prompt = SystemPrompt::new("Answer.").unwrap();
    let thinker = ToollessThinker::<String, String>::new(seat, prompt);
    let _ = thinker.tool(word_count);
}

//! The smallest program: a tool written as an async fn, a thinker that uses it, one question.

/// Count the words of a text.
#[thinkers::tool(read_only)]
async fn word_count(text: String) -> thinkers::Result<usize> {
    Ok(text.split_whitespace().count())
}

#[tokio::main]
async fn main() -> thinkers::Result<()> {
    let rt = thinkers::Runtime::openai("gpt-4o-mini").await?;
    let thinker = thinkers::Thinker::<String>::new("Count words with the tool.").tool(word_count);
    println!("{}", rt.run(thinker.ask("Words in 'a b c'?")).await?);
    Ok(())
}

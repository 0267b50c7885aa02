//! The smallest program: a tool written as an async fn, a thinker that uses it, one question.
use thinkers::prelude::*;
/// Count the words of a text.
#[thinkers::tool(read_only)]
async fn word_count(text: String) -> Result<usize> {
    Ok(text.split_whitespace().count())
}

#[tokio::main]
async fn main() -> Result<()> {
    let catalog = Catalog::openai("gpt-4o-mini", Grade::Small).build()?;
    let rt = Runtime::builder(catalog).build().await?;
    let seat = ThinkerDeclaration::new(Grade::Small, OutputSize::Compact);
    let thinker = SingleObjectiveThinker::<String>::new(seat, "Count words with the tool.");
    let job = thinker.tool(word_count).ask("Words in 'a b c'?");
    println!("{}", rt.run(job).await?);
    rt.shutdown().await
}

// A tool's doc comment is the description the model reads: without one it does not compile.

#[thinkers::tool]
async fn undocumented(text: String) -> thinkers::Result<usize> {
    Ok(text.len())
}

fn main() {}

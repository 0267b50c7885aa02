//! A typed tool, called through the dispatcher twice: once from Rust with a typed input, once the
//! way a model calls it (JSON arguments through its `ToolProvider`), plus the refusal a model
//! gets for arguments that do not fit.
//!
//! Run it with `cargo run -p thinkers --example tool`.

use std::borrow::Cow;
use std::sync::Arc;

use anyhow::Result;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use thinkers::Runtime;
use thinkers::tool::{
    Tool, ToolCallContext, ToolContext, ToolJob, ToolProvider, TypedToolProvider,
};

#[path = "support/mod.rs"]
mod support;

/// What `count_words` takes.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct CountInput {
    /// The text whose words are counted.
    pub text: String,
}

/// What `count_words` returns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WordCount {
    /// How many words the text has.
    pub words: usize,
    /// Its longest word.
    pub longest: String,
}

/// Counts the words of a text. It changes nothing, so it says it is read-only.
pub struct CountWords;

impl Tool for CountWords {
    const NAME: &'static str = "count_words";
    type Input = CountInput;
    type Output = WordCount;

    fn description(&self) -> Cow<'static, str> {
        "Count the words of a text and find its longest word.".into()
    }

    fn read_only(&self) -> bool {
        true
    }

    async fn call(&self, input: &CountInput, _cx: &ToolContext<'_>) -> thinkers::Result<WordCount> {
        let words: Vec<&str> = input.text.split_whitespace().collect();
        let longest = words.iter().max_by_key(|w| w.len()).copied().unwrap_or("");
        Ok(WordCount {
            words: words.len(),
            longest: longest.to_owned(),
        })
    }
}

/// What the example did.
#[derive(Debug)]
pub struct Outcome {
    /// The typed call's result.
    pub typed: WordCount,
    /// The result of the call made with JSON arguments, as the model would see it.
    pub from_json: serde_json::Value,
    /// The refusal of arguments that name a field the tool does not have.
    pub refusal: String,
}

/// Call `count_words` from Rust, then as a model would, then with bad arguments.
pub async fn run(rt: &Runtime) -> Result<Outcome> {
    // From Rust: the tool and its typed input make a job; the dispatcher runs and records it.
    let typed = rt
        .run(ToolJob::new(
            Arc::new(CountWords),
            CountInput {
                text: "one dispatcher runs every job".into(),
            },
        ))
        .await?;
    println!("typed call: {typed:?}");

    // As a model calls it: by name, with JSON arguments checked against the input's schema.
    let provider = TypedToolProvider::new(CountWords);
    println!(
        "the model sees `{}`: {}\nschema: {}",
        provider.name(),
        provider.description(),
        provider.input_schema()
    );
    let job = provider.instantiate(
        &json!({"text": "tools doers thinkers"}),
        &ToolCallContext::default(),
    )?;
    let from_json = rt.dispatcher().run(job).await?.json;
    println!("JSON call: {from_json}");

    // Arguments that do not fit are refused before anything runs, naming the parameter.
    let refusal = match provider.decode(&json!({"txt": "typo"})) {
        Ok(_) => anyhow::bail!("arguments without `text` were accepted"),
        Err(e) => e.to_string(),
    };
    println!("refused: {refusal}");
    Ok(Outcome {
        typed,
        from_json,
        refusal,
    })
}

/// A tool needs no model, but the example runs on the same runtime as the others.
pub fn tune(config: thinkers_sim::SimConfig) -> thinkers_sim::SimConfig {
    config
}

#[tokio::main]
async fn main() -> Result<()> {
    let env = support::from_args(tune).await?;
    run(&env.rt).await?;
    // Cancels what still runs and writes every record before the process exits.
    env.rt.shutdown().await?;
    Ok(())
}

//! The providers stage of the demo: one streamed call per provider family of the catalog (its
//! wire dialect, and Azure OpenAI apart from OpenAI), each pinned to that family's cheapest open
//! entry, so every family the catalog names shows that it answers. Offline, the bundled catalog
//! has one family per format the sim speaks: OpenAI Chat Completions, Anthropic Messages, OpenAI
//! Responses, Gemini and Bedrock Converse.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::Context as _;
use thinkers::Runtime;
use thinkers::conversation::Message;
use thinkers::llm::{ChatRequest, LlmCall, StreamDelta};
use thinkers::model::{Catalog, Depth, Dialect, Entry, Grade, OutputSize, Provider, cheaper_first};

use super::Progress;

const QUESTION: &str = "What does a dispatcher admit, in a few words?";

/// The family a provider belongs to: its dialect, and whether it is an Azure OpenAI resource.
pub(crate) fn family(provider: &Provider) -> &'static str {
    match (provider.dialect, provider.azure.is_some()) {
        (Dialect::OpenAi, false) => "OpenAI Chat Completions",
        (Dialect::OpenAi, true) => "Azure OpenAI Chat Completions",
        (Dialect::OpenAiResponses, false) => "OpenAI Responses",
        (Dialect::OpenAiResponses, true) => "Azure OpenAI Responses",
        (Dialect::OpenAiCompatible, _) => "OpenAI-compatible server",
        (Dialect::Anthropic, _) => "Anthropic Messages",
        (Dialect::Gemini, _) => "Gemini generateContent",
        (Dialect::BedrockConverse, _) => "Bedrock Converse",
    }
}

/// The family of the entry `id`, or `None` when the catalog does not name it.
pub(crate) fn family_of(catalog: &Catalog, id: &str) -> Option<&'static str> {
    let entry = catalog.entry(id).ok()?;
    catalog.provider(entry.provider()).ok().map(family)
}

/// Each family's cheapest open entry, in the order the catalog first names the family.
fn one_entry_per_family(catalog: &Catalog) -> Vec<(&'static str, &Entry)> {
    let mut chosen: Vec<(&'static str, &Entry)> = Vec::new();
    for entry in catalog.entries().iter().filter(|e| e.is_open()) {
        let Ok(provider) = catalog.provider(entry.provider()) else {
            continue;
        };
        let name = family(provider);
        match chosen.iter_mut().find(|(f, _)| *f == name) {
            Some(slot) if cheaper_first(entry, slot.1).is_lt() => slot.1 = entry,
            Some(_) => {}
            None => chosen.push((name, entry)),
        }
    }
    chosen
}

/// One family's answer.
struct Answered {
    family: &'static str,
    entry: String,
    model: String,
    answer: String,
    pieces: usize,
    input: u64,
    output: u64,
}

/// What the stage prints.
pub(crate) struct Outcome {
    answers: Vec<Answered>,
}

impl Outcome {
    pub(crate) fn print(&self) {
        println!(
            "Provider families (one streamed call each, pinned to the family's cheapest entry)"
        );
        println!("  question: {QUESTION:?}");
        for a in &self.answers {
            let mut answer: String = a.answer.chars().take(60).collect();
            if answer.len() < a.answer.len() {
                answer.push('…');
            }
            println!(
                "  {:<30} {} (model {}): {} pieces, {} in / {} out: {answer}",
                a.family, a.entry, a.model, a.pieces, a.input, a.output
            );
        }
    }
}

pub(crate) async fn run(rt: &Runtime, progress: &Progress) -> anyhow::Result<Outcome> {
    let catalog = rt.models().router().catalog();
    let families = one_entry_per_family(catalog);
    anyhow::ensure!(!families.is_empty(), "the catalog has no open entry");
    let mut answers = Vec::new();
    let mut failures = Vec::new();
    for (family, entry) in families {
        progress.set(format!("provider families: {family} ({})", entry.id()));
        let pieces = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&pieces);
        let call = LlmCall::new(
            Grade::Small,
            OutputSize::Verdict,
            ChatRequest::new(
                "Answer in one short sentence.",
                vec![Message::user_text(QUESTION)],
            ),
        )
        .class("provider_family_call")
        .depth(Depth::Quick)
        .pinned(entry.id().to_owned())
        .streaming(Box::new(move |delta| {
            if let StreamDelta::Text(_) = delta {
                counted.fetch_add(1, Ordering::Relaxed);
            }
        }));
        match rt
            .run(call)
            .await
            .with_context(|| format!("{family} ({})", entry.id()))
        {
            Ok(outcome) => answers.push(Answered {
                family,
                entry: outcome.entry.to_string(),
                model: outcome.model.to_string(),
                answer: outcome.response.text().trim().to_owned(),
                pieces: pieces.load(Ordering::Relaxed),
                input: outcome.response.usage.input,
                output: outcome.response.usage.output,
            }),
            Err(e) => failures.push(format!("{e:#}")),
        }
    }
    if !failures.is_empty() {
        anyhow::bail!(
            "{} of {} provider families did not answer: {}",
            failures.len(),
            failures.len() + answers.len(),
            failures.join("; ")
        );
    }
    Ok(Outcome { answers })
}

//! The thinker stage of the demo: a doer fans out single-objective thinkers with a tool in one
//! step — one of them, the researcher, works from a tool hub: it discovers the glossary tool with
//! `request_tools`, loads a skill with `request_skill` and delegates a lookup to a sub-thinker —
//! then resumes one of their conversations by id with a follow-up question.
//!
//! Against the simulated provider, the researcher's moves come from [`script`] (a simulated
//! model follows a script); against a real catalog, the model decides.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use thinkers::Runtime;
use thinkers::conversation::ConversationId;
use thinkers::hub::{Skill, ToolHub};
use thinkers::job::{JobId, doer};
use thinkers::model::{Grade, OutputSize};
use thinkers::thinker::{Thinker, ThinkerDeclaration, ThinkerInput, ThinkerLimits};
use thinkers::tool::{Tool, ToolContext};
use thinkers_sim::{Script, ScriptAnswer, ScriptRule, ScriptToolCall};

use super::Progress;

/// The glossary the thinkers look terms up in.
fn glossary() -> BTreeMap<&'static str, &'static str> {
    BTreeMap::from([
        (
            "seat",
            "a claim on a model at a grade: the job that holds it makes model calls",
        ),
        (
            "grade",
            "the capability floor work needs: small, medium, large, mega (or ceiling)",
        ),
        (
            "admission",
            "the dispatcher's check that a job fits the provider's rate and concurrency limits",
        ),
        (
            "artifact",
            "a typed tool output kept by the runtime and named in answers by a short ref",
        ),
    ])
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub(crate) struct LookupInput {
    /// The term to look up, in lower case.
    term: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub(crate) struct Definition {
    term: String,
    meaning: String,
}

/// Looks a term up in the demo glossary.
pub(crate) struct Lookup;

impl Tool for Lookup {
    const NAME: &'static str = "glossary_lookup";
    type Input = LookupInput;
    type Output = Definition;

    fn description(&self) -> Cow<'static, str> {
        "Look a term up in the runtime's glossary (seat, grade, admission, artifact).".into()
    }

    fn read_only(&self) -> bool {
        true
    }

    async fn call(&self, input: &LookupInput, _: &ToolContext<'_>) -> thinkers::Result<Definition> {
        let term = input.term.trim().to_lowercase();
        let meaning = glossary()
            .get(term.as_str())
            .map(|m| (*m).to_owned())
            .unwrap_or_else(|| {
                format!(
                    "not in the glossary; the known terms are: {}",
                    glossary().keys().copied().collect::<Vec<_>>().join(", ")
                )
            });
        Ok(Definition { term, meaning })
    }
}

/// A thinker's answer.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub(crate) struct Explanation {
    /// A justification a reader can check: which entries were looked up and how they combine.
    reasoning: String,
    /// The explanation in one or two sentences.
    summary: String,
}

/// The query that starts the researcher's scripted moves.
const RESEARCH: &str = "DEMO-RESEARCH: how do a seat and a grade relate?";
/// The objective the researcher hands its sub-thinker.
const DELEGATED: &str = "DEMO-DELEGATE: look up the term grade in the glossary";
/// Marks the sub-thinker's summary.
const SUB_SUMMARY: &str = "DEMO-SUB-SUMMARY";

/// What the simulated model does for the researcher: discover, load, delegate, answer.
pub(crate) fn script() -> Script {
    let call = |name: &str, arguments: serde_json::Value| {
        ScriptAnswer::ToolCalls(vec![ScriptToolCall {
            name: name.to_owned(),
            arguments,
        }])
    };
    let rule = |needle: &str, answer| ScriptRule::when_contains(needle, answer).times(1);
    Script::new(vec![
        rule(
            "DEMO-RESEARCH",
            call("request_tools", json!({"tool_names": ["glossary_lookup"]})),
        ),
        rule(
            r#""granted":["glossary_lookup"]"#,
            call("request_skill", json!({"skill_names": ["plain_words"]})),
        ),
        rule(
            r#""granted":["plain_words"]"#,
            call(
                "sub_thinker",
                json!({"objective": DELEGATED, "artifact_refs": []}),
            ),
        ),
        rule(
            "DEMO-DELEGATE",
            call("glossary_lookup", json!({"term": "grade"})),
        ),
        rule(
            "the capability floor",
            ScriptAnswer::Json(json!({
                "reasoning": "looked the term up in the glossary",
                "answer": {
                    "summary": format!("{SUB_SUMMARY}: a grade is the capability floor work needs"),
                    "reasoning": {
                        "approach": "looked the term up in the glossary",
                        "steps": ["@a1 defines a grade as the capability floor work needs"]
                    },
                    "artifacts": ["@a1"]
                }
            })),
        ),
        rule(
            SUB_SUMMARY,
            ScriptAnswer::Json(json!({
                "reasoning": "the sub-thinker looked up grade; the glossary defines seat",
                "answer": {
                    "reasoning": "a seat is claimed at a grade, which the sub-thinker looked up",
                    "summary": "A seat is a claim on a model at a grade; the grade is the \
                                capability floor the work needs."
                }
            })),
        ),
    ])
}

/// A hub holding the glossary tool and one skill, for the researcher to discover.
fn hub() -> anyhow::Result<Arc<ToolHub>> {
    let hub = ToolHub::new();
    hub.register_tool(Lookup)?;
    hub.register_skill(Skill::new(
        "plain_words",
        "How to explain terms to a newcomer.",
        "Explain in plain words, one idea per sentence, no jargon left undefined.",
    )?);
    Ok(Arc::new(hub))
}

fn researcher(hub: Arc<ToolHub>) -> Thinker<Explanation> {
    Thinker::<Explanation>::declared(
        ThinkerDeclaration::new(Grade::Small, OutputSize::Compact),
        "You research how terms of an agent runtime relate. Find the tools and skills you need, \
         and delegate lookups to a sub-thinker when that helps.",
    )
    .hub(hub)
    .delegating()
    .limits(demo_limits())
    .class("researcher")
}

/// The demo's thinkers (and its chat) need four turns at most (the researcher: discover, load a
/// skill, delegate, answer). Against a real catalog a model that keeps calling tools is stopped at
/// five, so the demo's cost stays small.
pub(crate) fn demo_limits() -> ThinkerLimits {
    ThinkerLimits {
        max_iterations: 5,
        ..ThinkerLimits::default()
    }
}

pub(crate) fn explainer() -> Thinker<Explanation> {
    Thinker::<Explanation>::declared(
        ThinkerDeclaration::new(Grade::Small, OutputSize::Compact),
        "You explain terms of an agent runtime to a new engineer. Look every term up in the \
         glossary before you explain it.",
    )
    .tool(Lookup)
    .durable()
    .limits(demo_limits())
    .class("explainer")
}

/// What the stage prints.
pub(crate) struct Outcome {
    pub(crate) workflow: JobId,
    answers: Vec<(String, String)>,
    followup: String,
    conversation: ConversationId,
}

impl Outcome {
    pub(crate) fn print(&self) {
        println!("Thinker stage");
        for (question, answer) in &self.answers {
            println!("  Q: {question}\n     {answer}");
        }
        println!(
            "  resumed conversation {} with a follow-up:\n     {}",
            self.conversation, self.followup
        );
    }
}

pub(crate) async fn run(rt: &Runtime, progress: &Progress) -> anyhow::Result<Outcome> {
    let questions = [
        "What is a seat?",
        "What does admission protect?",
        "What is an artifact?",
    ];
    progress.set("thinkers: three explainers and a researcher fan out in one step");
    let thinkers: Arc<Vec<_>> = Arc::new(questions.iter().map(|_| explainer()).collect());
    let research = Arc::new(researcher(hub()?));
    let shared = Arc::clone(&thinkers);
    let handle = rt.dispatcher().submit(doer("explain_workflow", move |cx| {
        let shared = Arc::clone(&shared);
        let research = Arc::clone(&research);
        async move {
            let step = cx.fan_out();
            let handles: Vec<_> = shared
                .iter()
                .zip(questions)
                .map(|(t, q)| step.submit(t.ask(ThinkerInput::query(q))))
                .collect();
            let researched = step.submit(research.ask(ThinkerInput::query(RESEARCH)));
            let mut answers = Vec::new();
            for h in handles {
                answers.push(h.await?);
            }
            answers.push(researched.await?);
            Ok(answers)
        }
    }));
    let workflow = handle.id();
    let answers = handle.await?;
    let answers = questions
        .iter()
        .copied()
        .chain([RESEARCH])
        .zip(answers)
        .map(|(q, a)| (q.to_owned(), a.summary))
        .collect();

    progress.set("thinkers: resuming a conversation by id");
    let conversation = thinkers[0]
        .observer()
        .conversation_id()
        .ok_or_else(|| anyhow::anyhow!("the first explainer kept no conversation"))?;
    // A new thinker object, as another process would have: the conversation comes from the store.
    let followup = rt
        .run(explainer().resume(
            conversation.clone(),
            ThinkerInput::query("And how does a seat relate to a grade?"),
        ))
        .await?;
    Ok(Outcome {
        workflow,
        answers,
        followup: followup.summary,
        conversation,
    })
}

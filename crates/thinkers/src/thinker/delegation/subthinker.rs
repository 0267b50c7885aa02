//! `sub_thinker`: the sub-agent a thinker's model starts on part of its problem.
//!
//! The model gives a natural-language objective and the refs of the artifacts it hands over. The
//! sub-thinker is a single-objective run of the same loop that:
//!
//! * keeps the parent's palette as it stood this turn (the provider instances, so tools a hook
//!   wired in survive) without the doors, which it rebuilds over the catalogs the parent's doors
//!   offered at launch, so its own doors offer exactly those;
//! * works at the parent's grade (and pin), with its own output size, at the depth the model
//!   asked for (`depth` in its input) clamped to the parent's, or the parent's when it asked for
//!   none, and delegates further only at [`Depth::Thorough`];
//! * runs as the parent's child, so the submission door seals the parent's scope (identity axes
//!   and the read-only binding) onto it and onto everything it starts;
//! * starts with an artifact registry holding only the listed refs (under the same refs): a ref
//!   named only in the objective's text is not handed over.
//!
//! It answers a summary, its reasoning in structure ([`AnalysisReasoning`]: the approach and the
//! steps, a justification the parent can check) and artifact refs; the parent receives all three
//! as they are (the typed [`SubThinkerOutput`], and its JSON in the tool result). The artifacts
//! it relies on are registered in the parent's registry (new refs, or the parent's own for
//! handed-over ones) and the parent reads them summarised with those refs.

use std::borrow::Cow;
use std::sync::{Arc, LazyLock};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::conversation::ConversationService;
use crate::hub::ToolHub;
use crate::job::{BoxJob, JobContext, Orchestrator};
use crate::llm::ToolSpec;
use crate::model::{Depth, Grade, OutputSize};
use crate::thinker::answer::AnswerShape;
use crate::thinker::artifacts::{self, ArtifactRef};
use crate::thinker::declaration::{ThinkerDeclaration, ThinkerInput};
use crate::thinker::doors::{Captured, Orchestration};
use crate::thinker::finish::SingleAnswer;
use crate::thinker::reasoning::AnalysisReasoning;
use crate::thinker::state::ThinkerObserver;
use crate::thinker::turn::Turns;
use crate::thinker::turn_loop::{ThinkerCore, ThinkerHooks, ThinkerLimits, run_loop};
use crate::tool::{ToolCallContext, ToolOutput, ToolProvider, ToolRegistry, decode_arguments};
use crate::{Error, Result};

/// The tool name of the sub-agent.
pub const SUB_THINKER: &str = "sub_thinker";

/// The longest summary of one returned artifact inside the output, in bytes, so that a few of
/// them fit in what the parent reads of the whole output.
const RETURNED_SUMMARY_BYTES: usize = 400;

/// The system task of every sub-thinker; what to do arrives as its query.
const SUB_TASK: &str = "You are a sub-agent: another agent handed you one part of its problem. \
Work on exactly that part with the tools you have, then answer with a summary the other agent can \
use, the approach and steps that justify it, and the refs of the artifacts that support it.";

/// What the model gives `sub_thinker`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SubThinkerInput {
    /// What the sub-agent should find out or do, in plain language, with any context it needs.
    pub objective: String,
    /// Refs of the artifacts to hand over (such as @a1); only these are available to it.
    #[serde(default)]
    pub artifact_refs: Vec<ArtifactRef>,
    /// How hard the sub-agent should work: immediate, quick, standard or thorough. Your own
    /// effort, stated in your instructions, is the most you may give: lower it for a simple
    /// part, never raise it above yours (a deeper value is lowered to yours). Leave it out to
    /// give your own.
    #[serde(default)]
    pub depth: Option<Depth>,
}

/// The final answer a sub-thinker's model gives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct SubThinkerAnswer {
    /// What was found or done, for the agent that asked.
    pub summary: String,
    /// The justification of the summary: the approach and the steps a reader can check. Under
    /// native thinking it is not asked for and comes from the thinking block instead.
    pub reasoning: AnalysisReasoning,
    /// Refs of the artifacts the summary relies on.
    pub artifacts: Vec<ArtifactRef>,
}

/// What `sub_thinker` returns to the parent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SubThinkerOutput {
    /// The sub-agent's summary.
    pub summary: String,
    /// The justification it gave for its summary, as an approach and its steps.
    pub reasoning: AnalysisReasoning,
    /// The artifacts it relied on, under the parent's refs.
    pub artifacts: Vec<ArtifactRef>,
    /// Each of those artifacts summarised with its ref, as the parent reads it.
    pub artifact_summaries: Vec<String>,
}

/// Hooks of a sub-thinker: it delegates further only at [`Depth::Thorough`].
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SubThinkerHooks;

impl ThinkerHooks for SubThinkerHooks {
    fn delegation_threshold(&self) -> Depth {
        Depth::Thorough
    }
}

/// Everything a launch needs from the parent at the turn the door was built. Built every turn,
/// so it holds only cheap clones (the palette is a list of `Arc`s); the sub-thinker's core is
/// made from it when the model calls the door.
pub(crate) struct Launch {
    /// The parent's grade, used when the call carries none.
    grade: Grade,
    pin: Option<Arc<str>>,
    limits: ThinkerLimits,
    turns: Turns,
    conversations: Option<ConversationService>,
    durable: bool,
    /// The parent's palette this turn, doors removed.
    palette: ToolRegistry,
    hub: Option<Arc<ToolHub>>,
    catalogs: Captured,
    parent: ThinkerObserver,
    depth: Depth,
}

impl Launch {
    /// A launch over the parent's `core`, with this turn's palette (doors removed), catalogs and
    /// hub (none: the delegate has no doors).
    pub(crate) fn new(
        core: &ThinkerCore,
        palette: ToolRegistry,
        catalogs: Captured,
        hub: Option<Arc<ToolHub>>,
        parent: &ThinkerObserver,
        depth: Depth,
    ) -> Self {
        Self {
            grade: core.declaration.grade(),
            pin: core.pin.clone(),
            limits: core.limits,
            turns: core.turns.clone(),
            conversations: core.conversations.clone(),
            durable: core.durable,
            palette,
            hub,
            catalogs,
            parent: parent.clone(),
            depth,
        }
    }

    /// The sub-thinker's core at `grade`. Budgets never propagate: it books its own output
    /// size; its conversations live in a fresh private store unless the parent named a service.
    fn core(&self, grade: Grade) -> ThinkerCore {
        let mut core = ThinkerCore::new(
            ThinkerDeclaration::new(grade, OutputSize::Standard),
            SUB_TASK.to_owned(),
        );
        core.class = SUB_THINKER.to_owned();
        core.registry = self.palette.clone();
        core.limits = self.limits;
        core.pin = self.pin.clone();
        core.turns = self.turns.clone();
        core.hooks = Arc::new(SubThinkerHooks);
        core.conversations = self.conversations.clone();
        core.durable = self.durable;
        core.orchestration = Orchestration {
            hub: self.hub.clone(),
            captured: Some(self.catalogs.clone()),
            delegates: true,
            ..Orchestration::default()
        };
        core
    }
}

/// What `sub_thinker` does, for the model.
const DESCRIPTION: &str = "Hand one part of the problem to a sub-agent with your tools. Give it a \
self-contained objective and the refs of the artifacts it needs; it answers a summary and \
artifacts.";

/// The input schema of `sub_thinker`, generated once and shared by every turn's door.
fn input_schema() -> &'static Arc<Value> {
    static SCHEMA: LazyLock<Arc<Value>> = LazyLock::new(crate::schema::of::<SubThinkerInput>);
    &SCHEMA
}

/// The `sub_thinker` provider, rebuilt with each turn's palette and catalogs.
pub(crate) struct SubThinkerDoor {
    launch: Arc<Launch>,
}

impl SubThinkerDoor {
    pub(crate) fn new(launch: Launch) -> Self {
        Self {
            launch: Arc::new(launch),
        }
    }
}

impl ToolProvider for SubThinkerDoor {
    fn name(&self) -> &str {
        SUB_THINKER
    }
    fn description(&self) -> &str {
        DESCRIPTION
    }
    fn input_schema(&self) -> &Value {
        input_schema()
    }
    fn shared_input_schema(&self) -> Arc<Value> {
        Arc::clone(input_schema())
    }
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: Cow::Borrowed(SUB_THINKER),
            description: Cow::Borrowed(DESCRIPTION),
            parameters: Arc::clone(input_schema()),
        }
    }
    /// Running the door again replays the sub-thinker: each of its own effects is journaled
    /// apart, so none repeats.
    fn idempotent(&self) -> bool {
        true
    }
    fn instantiate(&self, arguments: &Value, cx: &ToolCallContext) -> Result<BoxJob<ToolOutput>> {
        let input: SubThinkerInput = decode_arguments(arguments)?;
        if input.objective.trim().is_empty() {
            return Err(Error::invalid_input(
                "objective",
                None,
                "the objective is empty; say what the sub-agent should do",
            ));
        }
        {
            let st = self.launch.parent.lock();
            if let Some(unknown) = input
                .artifact_refs
                .iter()
                .position(|r| st.artifacts.get(r).is_none())
            {
                let known = st.artifacts.known_refs();
                // Named by its position: the ref the model wrote is not repeated.
                return Err(Error::invalid_input(
                    format!("artifact_refs[{unknown}]"),
                    None,
                    format!("no artifact has this ref; the known refs are: {known}"),
                ));
            }
        }
        let grade = cx.parent_grade.unwrap_or(self.launch.grade);
        Ok(BoxJob::new(SubThinkerJob {
            launch: self.launch.clone(),
            input,
            grade,
        }))
    }
}

/// One run of a sub-thinker, as the child job of the parent's tool round.
struct SubThinkerJob {
    launch: Arc<Launch>,
    input: SubThinkerInput,
    grade: Grade,
}

impl Orchestrator for SubThinkerJob {
    type Output = ToolOutput;

    fn class(&self) -> Cow<'static, str> {
        Cow::Borrowed(SUB_THINKER)
    }

    /// The loop bounds its own corrections.
    fn max_corrections(&self) -> u32 {
        0
    }

    async fn execute(&mut self, cx: &JobContext) -> Result<ToolOutput> {
        // Budgets never propagate: the sub-thinker's answer is a summary with refs.
        let core = self.launch.core(self.grade);
        let observer = ThinkerObserver::default();
        let mut query = self.input.objective.clone();
        {
            let parent = self.launch.parent.lock();
            let mut own = observer.lock();
            for r in &self.input.artifact_refs {
                if let Some(a) = parent.artifacts.get(r) {
                    own.artifacts.seed(a.clone());
                    query.push_str("\n\n");
                    query.push_str(&artifacts::summary(r, &a.output));
                }
            }
        }
        // The parent's model may lower the depth, never raise it.
        let depth = self
            .input
            .depth
            .map_or(self.launch.depth, |asked| asked.clamp_to(self.launch.depth));
        let input = ThinkerInput {
            query,
            depth,
            artifact_refs: self.input.artifact_refs.clone(),
        };
        let phase = SingleAnswer {
            shape: Arc::new(AnswerShape::<SubThinkerAnswer>::new()),
            guardrails: Vec::new(),
            max_answer_corrections: core.limits.max_answer_corrections,
            max_guardrail_corrections: core.limits.max_guardrail_corrections,
            content: None,
            answer_corrections: 0,
            guardrail_corrections: 0,
        };
        let answer = run_loop(&core, phase, &input, None, &observer, cx).await?;
        let mut refs = Vec::with_capacity(answer.artifacts.len());
        let mut summaries = Vec::with_capacity(answer.artifacts.len());
        {
            let own = observer.lock();
            let mut parent = self.launch.parent.lock();
            for r in &answer.artifacts {
                let Some(a) = own.artifacts.get(r) else {
                    continue;
                };
                let handed = self.input.artifact_refs.contains(r);
                let reference = if handed {
                    r.clone()
                } else {
                    parent.artifacts.register(&a.tool, a.output.clone())
                };
                summaries.push(artifacts::summary_within(
                    &reference,
                    &a.output,
                    RETURNED_SUMMARY_BYTES,
                ));
                refs.push(reference);
            }
        }
        let output = SubThinkerOutput {
            summary: answer.summary,
            reasoning: answer.reasoning,
            artifacts: refs,
            artifact_summaries: summaries,
        };
        let json =
            serde_json::to_value(&output).map_err(|e| Error::system(SUB_THINKER, e.to_string()))?;
        Ok(ToolOutput {
            json,
            typed: Arc::new(output),
        })
    }
}

/// A `sub_thinker` tool over a thinker's declared palette, its own hub's compatible catalogs
/// (empty without a hub) and its observer's artifacts, for code that starts a delegate outside a
/// model turn (a doer, a tool).
pub(crate) fn door_for(
    core: &ThinkerCore,
    observer: &ThinkerObserver,
    depth: Depth,
) -> Arc<dyn ToolProvider> {
    let orch = &core.orchestration;
    let catalogs = orch
        .hub
        .as_ref()
        .map(|hub| Captured {
            tools: hub.tool_catalog(&orch.tools),
            skills: hub.skill_catalog(&orch.skills),
        })
        .unwrap_or_default();
    let launch = Launch::new(
        core,
        core.registry.clone(),
        catalogs,
        orch.hub.clone(),
        observer,
        depth,
    );
    Arc::new(SubThinkerDoor::new(launch))
}

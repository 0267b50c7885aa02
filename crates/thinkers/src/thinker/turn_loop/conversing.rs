//! The loop's conversation plumbing: which [`ConversationService`] a run uses, opening a new
//! conversation or resuming one by id, the guidance derived at render time, the compaction check
//! before every call, and saving a durable conversation after every turn.

use std::sync::Arc;

use crate::conversation::{
    CompactionRecord, Compactor, ContentBlock, Conversation, ConversationId, ConversationService,
    MemoryConversationStore, Message, Objective, Role, Stamps, WireSizer,
};
use crate::job::JobContext;
use crate::llm::strict::shared_json_len;
use crate::llm::{ChatRequest, ModelServices, ResponseSchema, ToolSpec};
use crate::model::Depth;
use crate::onecall::tools::JobSummarizer;
use crate::record::CompactionRow;
use crate::thinker::artifacts::LEGEND;
use crate::thinker::declaration::ThinkerInput;
use crate::thinker::state::ThinkerObserver;
use crate::thinker::subthinker::SUB_THINKER;
use crate::thinker::turn_loop::ThinkerCore;
use crate::{Error, Result};

/// The parallel-calls hint: calls made in one turn run in parallel. Sent only when the palette
/// holds more than one tool (with one, there is nothing to combine).
pub(crate) const TOOL_GUIDANCE: &str = "Make independent tool calls in one turn.";

/// A thinker-private service for thinkers run where no [`ConversationService`] is registered:
/// its conversations live as long as the thinker.
pub(crate) fn private_service() -> ConversationService {
    ConversationService::new(Arc::new(MemoryConversationStore::new()))
}

/// The service a run uses: the thinker's own, else the one registered on the dispatcher, else
/// the thinker-private one.
pub(crate) fn service_for(core: &ThinkerCore, cx: &JobContext) -> ConversationService {
    if let Some(own) = &core.conversations {
        return own.clone();
    }
    match cx.services().get::<ConversationService>() {
        Some(registered) => (*registered).clone(),
        None => core.private.clone(),
    }
}

/// Start or continue the conversation, then add the run's query.
///
/// * `resume` given: the conversation saved under that id (an unknown id is an error naming it);
///   the objective stays the one it began with.
/// * otherwise the conversation an earlier run of this thinker left, if any;
/// * otherwise a new one, stamped from the declaration and depth, with the objective in the task
///   slot and the seeded follow-up right after it.
///
/// Every call of the run reads its seat from the conversation's stamps: an existing conversation
/// keeps its comfort window and trigger, takes this run's `depth`, and keeps its grade and output
/// size unless the thinker was given new ones after construction (`set_grade`, `set_output`:
/// the last declaration wins, `Redeclared`), which are stamped over them.
pub(crate) async fn open(
    core: &ThinkerCore,
    input: &ThinkerInput,
    depth: Depth,
    resume: Option<&ConversationId>,
    service: &ConversationService,
    observer: &ThinkerObserver,
) -> Result<()> {
    let held = observer.lock().conversation.take();
    let existing = match resume {
        Some(id) if held.as_ref().is_some_and(|c| c.id() == id) => held,
        Some(id) => match service.resume(id).await {
            Ok(conv) => Some(conv),
            Err(e) => {
                // The conversation this thinker held stays with it.
                observer.lock().conversation = held;
                return Err(e);
            }
        },
        None => held,
    };
    let mut conv = match existing {
        // A conversation keeps the context overrides it was stamped with when obtained; the
        // run's depth (the one source of a run's effort) is stamped over the old one, and so are
        // a grade and output size set on the thinker after construction, so the calls of this
        // run read them from the conversation like the rest, and a save keeps them.
        Some(mut conv) => {
            let stamps = *conv.stamps();
            let restamped = core.redeclared.over(Stamps { depth, ..stamps });
            if restamped != stamps {
                if (restamped.grade, restamped.output) != (stamps.grade, stamps.output) {
                    tracing::info!(
                        conversation = %conv.id(),
                        from_grade = ?stamps.grade,
                        grade = ?restamped.grade,
                        from_output = ?stamps.output,
                        output = ?restamped.output,
                        "a grade or output size set after construction is stamped over the \
                         conversation"
                    );
                }
                conv.set_stamps(restamped);
            }
            conv
        }
        None => {
            let declaration = &core.declaration;
            let mut stamps = Stamps::new(declaration.grade(), depth, declaration.output());
            if let Some(window) = declaration.comfort() {
                stamps = stamps.with_comfort_window(window)?;
            }
            if let Some(trigger) = declaration.trigger() {
                stamps = stamps.with_compaction_trigger(f64::from(trigger))?;
            }
            let mut conv = service.obtain_new(stamps, core.durable);
            conv.objective_mut()
                .put(Objective::TASK, core.objective.clone());
            if let Some(followup) = core.hooks.seeded_followup(input) {
                conv.push(Message::user_text(followup));
            }
            conv
        }
    };
    let mut blocks = vec![ContentBlock::text(input.query.clone())];
    if !input.artifact_refs.is_empty() {
        let refs: Vec<&str> = input.artifact_refs.iter().map(|r| r.as_str()).collect();
        blocks.push(ContentBlock::text(format!(
            "Artifacts handed to you: {}",
            refs.join(", ")
        )));
    }
    // A reactive run has no query: its messages arrive through its inbox at each step.
    if !(input.query.is_empty() && input.artifact_refs.is_empty()) {
        conv.push(Message::new(Role::User, blocks));
    }
    observer.lock().conversation = Some(conv);
    Ok(())
}

/// The request of one turn: the objective with the guidance this turn needs, derived here and
/// never stored, then every message (a failed turn's [`crate::conversation::no_answer`] marker
/// as the model reads it: that it failed, never why). Each piece is sent only where it changes what the model
/// does: the ref legend when the answer contract uses refs, the parallel-calls hint
/// ([`TOOL_GUIDANCE`]) when the `palette` holds more than one tool, and the effort line of the
/// run's depth as [`effort_line`] says. The depth is the run's, so a depth that changes between
/// runs of one conversation is the one the model reads.
pub(crate) fn render(
    conv: &Conversation,
    depth: Depth,
    uses_refs: bool,
    palette: &[ToolSpec],
) -> ChatRequest {
    let objective = conv.objective();
    let derived = [
        objective.get(Objective::GUIDANCE),
        uses_refs.then_some(LEGEND),
        (palette.len() > 1).then_some(TOOL_GUIDANCE),
        effort_line(depth, palette),
    ];
    let mut guidance = String::with_capacity(derived.iter().flatten().map(|p| p.len() + 2).sum());
    for part in derived.into_iter().flatten() {
        if !guidance.is_empty() {
            guidance.push_str("\n\n");
        }
        guidance.push_str(part);
    }
    let system = objective.render_replacing(Objective::GUIDANCE, &guidance);
    ChatRequest::new(
        system,
        crate::conversation::no_answer::for_model(conv.shared_messages()),
    )
}

/// The line that tells the model the run's depth ([`Depth::hint`]), where the model can act on
/// it; elsewhere the depth acts without words (the reasoning budget or effort on the wire, the
/// output cap, the delegation threshold):
///
/// * whenever `sub_thinker` is on the palette, whatever the depth: its `depth` parameter may not
///   exceed "your own effort, stated in your instructions";
/// * at [`Depth::Thorough`]: verify each claim and weigh the alternatives, more than a model
///   does unasked;
/// * at [`Depth::Immediate`] with tools offered: answer from what it has instead of calling
///   them.
///
/// At quick and standard depth without `sub_thinker` nothing is said: those lines only asked
/// for what a model does anyway.
pub(crate) fn effort_line(depth: Depth, palette: &[ToolSpec]) -> Option<&'static str> {
    let delegates = palette.iter().any(|t| t.name == SUB_THINKER);
    let acts = match depth {
        Depth::Thorough => true,
        Depth::Immediate => !palette.is_empty(),
        Depth::Quick | Depth::Standard => false,
    };
    (delegates || acts).then(|| depth.hint())
}

/// Compact the conversation when this turn's request (its tools and answer shape included,
/// measured for the entry that will serve it) passes the conversation's threshold. Without
/// model services registered (a loop driven by scripted turns) there is nothing to measure.
///
/// The summariser is the service's when it has one, else the summarization tool at Small, run
/// as a child of this thinker and pinned to the thinker's pin when it has one. Each compaction
/// is recorded.
pub(crate) async fn compact_if_needed(
    core: &ThinkerCore,
    service: &ConversationService,
    observer: &ThinkerObserver,
    tools: &[ToolSpec],
    response: Option<&ResponseSchema>,
    cx: &JobContext,
) -> Result<Option<CompactionRecord>> {
    let Some(models) = cx.services().get::<ModelServices>() else {
        return Ok(None);
    };
    let budgets = cx.budgets();
    let Some(mut conv) = observer.lock().conversation.take() else {
        return Err(Error::system("thinker loop", "no conversation is open"));
    };
    // The entry that will serve the turn: the conversation's stamped grade (or the pin), as the
    // turn's own call resolves it.
    let Ok(entry) =
        models
            .router()
            .resolve(conv.stamps().grade, core.pin.as_deref(), budgets.as_ref())
    else {
        // The turn's own call reports why no entry serves it.
        observer.lock().conversation = Some(conv);
        return Ok(None);
    };
    let window = Some(entry.context_window());
    let threshold = conv.stamps().compaction_threshold(window);
    // Every token is at least one byte of the body, so a request whose text is well under the
    // threshold cannot be over it: skip the exact count.
    if rough_upper_bound(&conv, tools, response) <= threshold {
        observer.lock().conversation = Some(conv);
        return Ok(None);
    }
    let mut sizer = WireSizer::new((*models.target(entry)?).clone(), models.shared_counter())
        .with_tools(tools.to_vec())
        .with_entry(entry.id());
    if let Some(response) = response {
        sizer = sizer.with_response(response.clone());
    }
    // The summariser's call is pinned like the turns: a pinned thinker's whole conversation is
    // served by its entry.
    let mut summarizer = JobSummarizer::new(cx.clone());
    if let Some(pin) = &core.pin {
        summarizer = summarizer.pinned(Arc::clone(pin));
    }
    let fallback = Compactor::new(Arc::new(summarizer));
    let outcome = service
        .compact_with_fallback(&mut conv, &sizer, window, &fallback)
        .await;
    observer.lock().conversation = Some(conv);
    let record = outcome?;
    if let Some(r) = &record {
        cx.recorder().compaction(CompactionRow {
            job: cx.id(),
            workflow: cx.workflow(),
            conversation: r.conversation.to_string(),
            before_tokens: r.before_tokens,
            after_tokens: r.after_tokens,
            summarized_messages: r.summarized_messages as u64,
            at_ms: r.at_ms,
        });
    }
    Ok(record)
}

/// An upper bound on the tokens of the request: its text bytes, escaped worst-case, plus room
/// for the JSON around every block.
fn rough_upper_bound(
    conv: &Conversation,
    tools: &[ToolSpec],
    response: Option<&ResponseSchema>,
) -> u64 {
    let mut bytes = conv.objective().render_len_bound()
        + LEGEND.len()
        + TOOL_GUIDANCE.len()
        + Depth::Thorough.hint().len();
    let mut blocks = 0usize;
    for m in conv.messages() {
        for b in &m.content {
            blocks += 1;
            // Media is counted by the provider, not by its bytes here: measure exactly.
            let Some(n) = b.text_bytes() else {
                return u64::MAX;
            };
            bytes += n;
        }
    }
    for t in tools {
        bytes += t.name.len() + t.description.len() + shared_json_len(&t.parameters);
    }
    if let Some(response) = response {
        bytes += response.name.len() + shared_json_len(&response.schema);
    }
    // JSON escaping at most sextuples a byte (`\u0000`); 64 bytes of framing per block.
    (bytes as u64)
        .saturating_mul(6)
        .saturating_add(64 * blocks as u64 + 1024)
}

/// Save a durable conversation (after every turn, so a crash loses at most the turn in flight).
/// A temporary conversation stays with the thinker.
pub(crate) async fn save_if_durable(
    service: &ConversationService,
    observer: &ThinkerObserver,
) -> Result<()> {
    let durable = observer
        .lock()
        .conversation
        .as_ref()
        .is_some_and(|c| c.is_durable() && c.has_unsaved_changes());
    if !durable {
        return Ok(());
    }
    // Save a copy, so code reading the observer meanwhile (a chat host serving history) still
    // sees the conversation; the loop is its only writer, so the saved copy then replaces it.
    let Some(mut conv) = observer.lock().conversation.clone() else {
        return Ok(());
    };
    service.save(&mut conv).await?;
    observer.lock().conversation = Some(conv);
    Ok(())
}

/// Whether the conversation's last message is the model's answer with tool calls that have no
/// results yet (a step that stopped for a person).
pub(crate) fn has_open_calls(observer: &ThinkerObserver) -> bool {
    let st = observer.lock();
    st.conversation
        .as_ref()
        .and_then(|c| c.messages().last())
        .is_some_and(|m| {
            m.role == crate::conversation::Role::Assistant
                && !crate::llm::ToolCallView::all(&m.content).is_empty()
        })
}

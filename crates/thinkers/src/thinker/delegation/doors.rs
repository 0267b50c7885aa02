//! The catalog doors, `request_tools` and `request_skill`, and the per-turn step that wires the
//! built-in orchestrators into every thinker's palette.
//!
//! Each turn, after the family's reconcile hook, with a [`ToolHub`] in reach (the thinker's own
//! or the dispatcher's): the tools this conversation was granted are put back in the palette
//! (they are kept in the conversation's state, so they survive compaction and resumption); the
//! compatible catalogs are reconciled against what the hub holds now (minus what the palette
//! already has, then the catalog hooks); each door is rebuilt with a schema that enumerates its
//! catalog (`oneOf` of `{const, description}`), or withdrawn when its catalog is empty. Then, for a
//! thinker built with `delegating()` (and for every sub-thinker), with or without a hub,
//! `sub_thinker` is rebuilt over this turn's palette and catalogs (empty without a hub) and
//! handed to
//! [`ThinkerHooks::reconcile_delegation`](crate::thinker::ThinkerHooks::reconcile_delegation), which keeps
//! it at or above the thinker's delegation threshold. The read-only sweep runs after all of this.
//!
//! A door call goes through the hub's admission rules in the caller's scope. Granted tools join
//! the palette from the next turn; granted skills are written into the conversation's
//! [`Objective::SKILLS`] slot, so their text rides the system content of every later call.

use std::borrow::Cow;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::conversation::{Conversation, Objective};
use crate::hub::{CatalogEntry, Compatible, Granted, ToolHub};
use crate::job::{BoxJob, JobContext, Orchestrator};
use crate::model::Depth;
use crate::thinker::state::ThinkerObserver;
use crate::thinker::subthinker::{Launch, SubThinkerDoor};
use crate::thinker::turn_loop::ThinkerCore;
use crate::tool::{ToolCallContext, ToolOutput, ToolProvider, ToolRegistry};
use crate::{Error, Result};

/// The name of the door through which a model adds tools from the hub to its palette.
pub const REQUEST_TOOLS: &str = "request_tools";
/// The name of the door through which a model loads skills into its conversation.
pub const REQUEST_SKILL: &str = "request_skill";
/// Conversation-state key: the names of the tools granted through `request_tools`.
pub const STATE_GRANTED_TOOLS: &str = "thinker.granted_tools";
/// Conversation-state key: the skills attached through `request_skill` (name and text).
pub const STATE_SKILLS: &str = "thinker.skills";

/// How a thinker takes part in the hub: where the hub is, what it is compatible with, and (for a
/// sub-thinker) the catalogs its parent offered at launch.
#[derive(Clone, Default)]
pub(crate) struct Orchestration {
    /// The thinker's own hub; otherwise the one registered on the dispatcher, if any.
    pub(crate) hub: Option<Arc<ToolHub>>,
    pub(crate) tools: Compatible,
    pub(crate) skills: Compatible,
    pub(crate) captured: Option<Captured>,
    /// Whether the model is offered `sub_thinker` (set by the `delegating()` setter; on for a
    /// sub-thinker, whose parent chose it).
    pub(crate) delegates: bool,
}

/// The catalogs a parent's doors offered when it launched a sub-thinker.
#[derive(Debug, Clone, Default)]
pub(crate) struct Captured {
    pub(crate) tools: Vec<CatalogEntry>,
    pub(crate) skills: Vec<CatalogEntry>,
}

/// The hub a run uses: the thinker's own, else the dispatcher's service.
pub(crate) fn hub_for(core: &ThinkerCore, cx: &JobContext) -> Option<Arc<ToolHub>> {
    core.orchestration
        .hub
        .clone()
        .or_else(|| cx.services().get::<ToolHub>())
}

/// The `sub_thinker` door a run built without a hub, and the palette it was built over: while
/// the palette stays the same, later turns reuse it (it would be built the same).
pub(crate) type BuiltDoor = Option<(ToolRegistry, Arc<dyn ToolProvider>)>;

/// The orchestrator step of one turn (see the module docs). Without a hub the catalog doors are
/// absent and `sub_thinker` is still built, over the palette with empty catalogs; `built` keeps
/// that door for the next turn.
pub(crate) fn reconcile(
    core: &ThinkerCore,
    registry: &mut ToolRegistry,
    depth: Depth,
    observer: &ThinkerObserver,
    cx: &JobContext,
    built: &mut BuiltDoor,
) {
    let hub = hub_for(core, cx);
    if let Some(hub) = &hub {
        restore_granted(hub, registry, observer);
    }
    for door in DOORS {
        registry.unregister(door);
    }
    // The catalogs are offered over the palette as it stands before any door joins it.
    let palette = registry.clone();
    let catalogs = match &hub {
        Some(hub) => offer_catalogs(core, registry, &palette, hub, depth, observer),
        None => Captured::default(),
    };
    if !core.orchestration.delegates {
        return;
    }
    let door = match (&hub, &*built) {
        // Everything else a launch holds is the run's own (core, observer, depth), so the same
        // palette makes the same door.
        (None, Some((kept, door))) if kept.same_providers(&palette) => Arc::clone(door),
        _ => {
            let keep = hub.is_none().then(|| palette.clone());
            let launch = Launch::new(core, palette, catalogs, hub, observer, depth);
            let door: Arc<dyn ToolProvider> = Arc::new(SubThinkerDoor::new(launch));
            if let Some(palette) = keep {
                *built = Some((palette, Arc::clone(&door)));
            }
            door
        }
    };
    core.hooks.reconcile_delegation(registry, depth, door);
}

/// The three built-in orchestrators' names.
const DOORS: [&str; 3] = [
    REQUEST_TOOLS,
    REQUEST_SKILL,
    crate::thinker::subthinker::SUB_THINKER,
];

/// Put back in the palette the hub tools this conversation was granted.
fn restore_granted(hub: &ToolHub, registry: &mut ToolRegistry, observer: &ThinkerObserver) {
    let granted = {
        let st = observer.lock();
        st.conversation
            .as_ref()
            .map(granted_tools)
            .unwrap_or_default()
    };
    for name in &granted {
        if !registry.contains(name)
            && let Some(p) = hub.tool(name)
        {
            registry.register(p);
        }
    }
}

/// Reconcile this turn's catalogs (the captured ones for a sub-thinker, else the hub's
/// compatible ones), minus what the palette holds and the attached skills, through the catalog
/// hooks; register a door over each non-empty one and return both for `sub_thinker`'s launch.
fn offer_catalogs(
    core: &ThinkerCore,
    registry: &mut ToolRegistry,
    palette: &ToolRegistry,
    hub: &Arc<ToolHub>,
    depth: Depth,
    observer: &ThinkerObserver,
) -> Captured {
    let attached = {
        let st = observer.lock();
        st.conversation
            .as_ref()
            .map(attached_skills)
            .unwrap_or_default()
    };
    let orch = &core.orchestration;
    let (mut tools, mut skills) = match &orch.captured {
        Some(c) => (c.tools.clone(), c.skills.clone()),
        None => (
            hub.tool_catalog(&orch.tools),
            hub.skill_catalog(&orch.skills),
        ),
    };
    tools.retain(|e| !palette.contains(&e.name) && !is_door(&e.name));
    skills.retain(|e| !attached.iter().any(|s| s.name == e.name));
    core.hooks.reconcile_tool_catalog(&mut tools, depth);
    core.hooks.reconcile_skill_catalog(&mut skills, depth);
    for (kind, catalog) in [(DoorKind::Tools, &tools), (DoorKind::Skills, &skills)] {
        if !catalog.is_empty() {
            registry.register(Arc::new(CatalogDoor::new(
                kind,
                catalog,
                hub.clone(),
                observer.clone(),
            )));
        }
    }
    Captured { tools, skills }
}

fn is_door(name: &str) -> bool {
    DOORS.contains(&name)
}

/// The tool names granted to this conversation.
fn granted_tools(conv: &Conversation) -> Vec<String> {
    conv.state_value(STATE_GRANTED_TOOLS)
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default()
}

/// A skill attached to a conversation, as kept in its state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Attached {
    name: String,
    text: String,
}

fn attached_skills(conv: &Conversation) -> Vec<Attached> {
    conv.state_value(STATE_SKILLS)
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default()
}

/// The preamble the skills slot holds for these skills.
fn preamble(skills: &[Attached]) -> String {
    let mut out = String::from("Skills you loaded (follow them where they apply):");
    for s in skills {
        out.push_str(&format!("\n\n### Skill: {}\n{}", s.name, s.text));
    }
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DoorKind {
    Tools,
    Skills,
}

impl DoorKind {
    fn name(self) -> &'static str {
        match self {
            Self::Tools => REQUEST_TOOLS,
            Self::Skills => REQUEST_SKILL,
        }
    }

    fn field(self) -> &'static str {
        match self {
            Self::Tools => "tool_names",
            Self::Skills => "skill_names",
        }
    }
}

/// A door rebuilt each turn over its catalog.
struct CatalogDoor {
    kind: DoorKind,
    description: String,
    schema: Arc<Value>,
    accepted: Vec<String>,
    hub: Arc<ToolHub>,
    observer: ThinkerObserver,
}

impl CatalogDoor {
    fn new(
        kind: DoorKind,
        catalog: &[CatalogEntry],
        hub: Arc<ToolHub>,
        observer: ThinkerObserver,
    ) -> Self {
        let (description, items) = match kind {
            DoorKind::Tools => (
                "Add tools to your palette. Name the tools you need; each is admitted or refused \
                 with a reason, and admitted tools can be called from your next turn.",
                "The tools to add; pick from the listed names.",
            ),
            DoorKind::Skills => (
                "Load skills into this conversation. A loaded skill's instructions are part of \
                 your system content from the next turn on.",
                "The skills to load; pick from the listed names.",
            ),
        };
        Self {
            kind,
            description: description.to_owned(),
            schema: Arc::new(catalog_schema(kind.field(), items, catalog)),
            accepted: catalog.iter().map(|e| e.name.clone()).collect(),
            hub,
            observer,
        }
    }
}

/// The input schema of a door: one required array field whose items are `oneOf` the catalog's
/// names, each a `{const, description}`, so a provider validates names natively.
pub(crate) fn catalog_schema(field: &str, description: &str, catalog: &[CatalogEntry]) -> Value {
    let names: Vec<Value> = catalog
        .iter()
        .map(|e| json!({"const": e.name, "description": e.description}))
        .collect();
    json!({
        "type": "object",
        "properties": {
            field: {
                "type": "array",
                "description": description,
                "minItems": 1,
                "items": {"oneOf": names},
            }
        },
        "required": [field],
        "additionalProperties": false,
    })
}

impl ToolProvider for CatalogDoor {
    fn name(&self) -> &str {
        self.kind.name()
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn input_schema(&self) -> &Value {
        &self.schema
    }
    fn shared_input_schema(&self) -> Arc<Value> {
        Arc::clone(&self.schema)
    }
    /// Loading a skill changes nothing outside the conversation; taking a tool widens the palette.
    fn read_only(&self) -> bool {
        self.kind == DoorKind::Skills
    }
    /// Running a door again replays the thinker behind it: each of its own effects is journaled
    /// apart, so none repeats.
    fn idempotent(&self) -> bool {
        true
    }
    fn instantiate(&self, arguments: &Value, _cx: &ToolCallContext) -> Result<BoxJob<ToolOutput>> {
        let field = self.kind.field();
        let accepted = || {
            format!(
                "give a non-empty array of names from the schema; the accepted names are: {}",
                self.accepted.join(", ")
            )
        };
        // Never echo what the model sent: the reason lists only the schema's names.
        let names: Vec<String> = arguments
            .get(field)
            .and_then(Value::as_array)
            .and_then(|items| {
                items
                    .iter()
                    .map(|i| i.as_str().map(str::to_owned))
                    .collect::<Option<Vec<_>>>()
            })
            .filter(|n| !n.is_empty())
            .ok_or_else(|| Error::invalid_input(field, None, accepted()))?;
        let unknown = names.iter().filter(|n| !self.accepted.contains(n)).count();
        if unknown > 0 {
            return Err(Error::invalid_input(
                field,
                None,
                format!("{unknown} name(s) are not offered; {}", accepted()),
            ));
        }
        let mut names = names;
        names.dedup();
        Ok(BoxJob::new(DoorJob {
            kind: self.kind,
            names,
            hub: self.hub.clone(),
            observer: self.observer.clone(),
        }))
    }
}

/// What a door call answers: the names granted, and the ones refused with the reason.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DoorOutcome {
    /// Granted names (tools callable from the next turn; skills attached).
    pub granted: Vec<String>,
    /// Refused names with the reason.
    pub refused: Vec<RefusedName>,
}

/// A name a door refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefusedName {
    /// The tool or skill name.
    pub name: String,
    /// Why it was refused.
    pub reason: String,
}

struct DoorJob {
    kind: DoorKind,
    names: Vec<String>,
    hub: Arc<ToolHub>,
    observer: ThinkerObserver,
}

impl Orchestrator for DoorJob {
    type Output = ToolOutput;

    fn class(&self) -> Cow<'static, str> {
        Cow::Borrowed(self.kind.name())
    }

    async fn execute(&mut self, cx: &JobContext) -> Result<ToolOutput> {
        let door = self.kind.name();
        let mut outcome = DoorOutcome::default();
        // The admission rules run before the conversation is touched (and without its lock).
        let mut skills = Vec::new();
        match self.kind {
            DoorKind::Tools => {
                for (name, g) in self.hub.request_tools(&self.names, cx.scope()) {
                    match g {
                        Granted::Admitted(_) => outcome.granted.push(name),
                        Granted::Refused(reason) => {
                            outcome.refused.push(RefusedName { name, reason });
                        }
                    }
                }
            }
            DoorKind::Skills => {
                for (name, g) in self.hub.request_skills(&self.names, cx.scope()) {
                    match g {
                        Granted::Admitted(skill) => {
                            outcome.granted.push(name);
                            skills.push(skill);
                        }
                        Granted::Refused(reason) => {
                            outcome.refused.push(RefusedName { name, reason });
                        }
                    }
                }
            }
        }
        for r in &outcome.refused {
            tracing::info!(door, name = r.name, reason = r.reason, "request refused");
        }
        {
            let mut st = self.observer.lock();
            let Some(conv) = st.conversation.as_mut() else {
                return Err(Error::system(door, "no conversation is open"));
            };
            match self.kind {
                DoorKind::Tools => {
                    let mut granted = granted_tools(conv);
                    for name in &outcome.granted {
                        if !granted.contains(name) {
                            granted.push(name.clone());
                        }
                    }
                    conv.set_state(STATE_GRANTED_TOOLS, json!(granted));
                }
                DoorKind::Skills => {
                    let mut attached = attached_skills(conv);
                    for skill in &skills {
                        if !attached.iter().any(|a| a.name == skill.name()) {
                            attached.push(Attached {
                                name: skill.name().to_owned(),
                                text: skill.text().to_owned(),
                            });
                        }
                    }
                    if !attached.is_empty() {
                        conv.objective_mut()
                            .put(Objective::SKILLS, preamble(&attached));
                    }
                    let state = serde_json::to_value(&attached)
                        .map_err(|e| Error::system(door, e.to_string()))?;
                    conv.set_state(STATE_SKILLS, state);
                }
            }
        }
        let json = serde_json::to_value(&outcome)
            .map_err(|e| Error::system(self.kind.name(), e.to_string()))?;
        Ok(ToolOutput {
            json,
            typed: Arc::new(outcome),
        })
    }
}

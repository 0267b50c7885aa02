//! [`ThinkerCore`]: what every thinker family holds (declaration, objective, palette, hooks,
//! limits, turn source, conversation settings), with the [`ThinkerHooks`] a family overrides and
//! the [`ThinkerLimits`] that bound a run.

use std::sync::Arc;

use crate::conversation::ConversationService;
use crate::hub::CatalogEntry;
use crate::model::Depth;
use crate::model::{Grade, OutputSize};
use crate::thinker::conversing;
use crate::thinker::declaration::{Redeclared, ThinkerDeclaration, ThinkerInput};
use crate::thinker::doors::Orchestration;
use crate::thinker::events::ContentStream;
use crate::thinker::turn::Turns;
use crate::tool::{ToolProvider, ToolRegistry};

/// Hooks a thinker family (or a thinker) overrides; every method has a default.
pub trait ThinkerHooks: Send + Sync + 'static {
    /// Bring the palette to the state this turn needs. Runs at the start of every turn and must
    /// be idempotent: the same state in gives the same registry out ([`ToolRegistry`]'s register
    /// and unregister are no-ops when nothing changes). The read-only sweep runs after it
    /// returns, whatever it does.
    fn reconcile_tools(&self, registry: &mut ToolRegistry, depth: Depth) {
        let _ = (registry, depth);
    }

    /// A message placed right after the objective, before the first turn, in a new
    /// conversation only: the last context the model reads before it starts (a plan to follow).
    fn seeded_followup(&self, input: &ThinkerInput) -> Option<String> {
        let _ = input;
        None
    }

    /// The shallowest depth at which this thinker may delegate: [`Depth::Standard`] for a
    /// thinker; a sub-thinker raises it to [`Depth::Thorough`].
    fn delegation_threshold(&self) -> Depth {
        Depth::Standard
    }

    /// Keep `sub_thinker` in the palette or take it out (every turn of a thinker built with
    /// `delegating()`, after [`ThinkerHooks::reconcile_tools`], hub or not; a thinker built
    /// without it never has the door, and this is not called). The default keeps it when
    /// `depth` is at or above [`ThinkerHooks::delegation_threshold`] and removes it below.
    fn reconcile_delegation(
        &self,
        registry: &mut ToolRegistry,
        depth: Depth,
        sub_thinker: Arc<dyn ToolProvider>,
    ) {
        if depth >= self.delegation_threshold() {
            registry.register(sub_thinker);
        } else {
            registry.unregister(sub_thinker.name());
        }
    }

    /// Adjust the catalog `request_tools` offers this turn (the hub's compatible tools not in
    /// the palette yet). An empty catalog withdraws the door for the turn.
    fn reconcile_tool_catalog(&self, catalog: &mut Vec<CatalogEntry>, depth: Depth) {
        let _ = (catalog, depth);
    }

    /// Adjust the catalog `request_skill` offers this turn (the hub's compatible skills not yet
    /// attached). An empty catalog withdraws the door for the turn.
    fn reconcile_skill_catalog(&self, catalog: &mut Vec<CatalogEntry>, depth: Depth) {
        let _ = (catalog, depth);
    }
}

/// The hooks that change nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct DefaultHooks;

impl ThinkerHooks for DefaultHooks {}

/// Bounds of one run; each kind of retry counts on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThinkerLimits {
    /// Model turns per run.
    pub max_iterations: u32,
    /// Corrections of wrong-shaped answers (and unknown artifact refs) per run.
    pub max_answer_corrections: u32,
    /// Corrections after a guardrail refusal per run.
    pub max_guardrail_corrections: u32,
    /// Tool calls run in one turn; the excess is refused back to the model.
    pub max_tool_calls_per_turn: usize,
}

impl Default for ThinkerLimits {
    fn default() -> Self {
        Self {
            max_iterations: 10,
            max_answer_corrections: 3,
            max_guardrail_corrections: 3,
            max_tool_calls_per_turn: 16,
        }
    }
}

/// What every thinker family shares: declaration, objective, palette, bounds and seams.
#[derive(Clone)]
pub(crate) struct ThinkerCore {
    pub(crate) class: String,
    pub(crate) declaration: ThinkerDeclaration,
    /// The grade and output size set after construction, stamped over a continued conversation.
    pub(crate) redeclared: Redeclared,
    pub(crate) objective: String,
    pub(crate) registry: ToolRegistry,
    pub(crate) limits: ThinkerLimits,
    pub(crate) pin: Option<Arc<str>>,
    pub(crate) turns: Turns,
    pub(crate) hooks: Arc<dyn ThinkerHooks>,
    pub(crate) content: Option<ContentStream>,
    /// The conversation service this thinker uses instead of the dispatcher's.
    pub(crate) conversations: Option<ConversationService>,
    /// Where conversations live when no service is given or registered.
    pub(crate) private: ConversationService,
    /// Whether new conversations are durable (saved to the store after every turn).
    pub(crate) durable: bool,
    /// The hub, compatible catalogs and captured catalogs of the built-in orchestrators.
    pub(crate) orchestration: Orchestration,
}

impl std::fmt::Debug for ThinkerCore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThinkerCore")
            .field("class", &self.class)
            .field("declaration", &self.declaration)
            .field("redeclared", &self.redeclared)
            .field("tools", &self.registry)
            .field("limits", &self.limits)
            .field("pin", &self.pin)
            .finish_non_exhaustive()
    }
}

impl ThinkerCore {
    pub(crate) fn new(declaration: ThinkerDeclaration, objective: String) -> Self {
        Self {
            class: "thinker".into(),
            declaration,
            redeclared: Redeclared::default(),
            objective,
            registry: ToolRegistry::new(),
            limits: ThinkerLimits::default(),
            pin: None,
            turns: Turns::Model,
            hooks: Arc::new(DefaultHooks),
            content: None,
            conversations: None,
            private: conversing::private_service(),
            durable: false,
            orchestration: Orchestration::default(),
        }
    }

    /// Raise (or change) the grade after construction: the declaration takes it, and the next
    /// run stamps it over the conversation it continues ([`Redeclared`]).
    pub(crate) fn set_grade(&mut self, grade: Grade) {
        self.declaration.set_grade(grade);
        self.redeclared.grade = Some(grade);
    }

    /// Replace the output size after construction, as [`Self::set_grade`] does the grade.
    pub(crate) fn set_output(&mut self, output: OutputSize) {
        self.declaration.set_output(output);
        self.redeclared.output = Some(output);
    }
}

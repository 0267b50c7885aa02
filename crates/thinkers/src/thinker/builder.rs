//! The setters the thinker families share, written once over the
//! [`ThinkerCore`](crate::thinker::ThinkerCore) each family holds.
//!
//! * [`ThinkerBuilder`]: every family ([`SingleObjectiveThinker`], [`ToollessThinker`],
//!   [`DecisionThinker`], [`ReactiveThinker`], [`ChatThinker`]): turn source, job class, content
//!   stream.
//! * [`LoopThinkerBuilder`]: the families that run the loop and so take tools, hooks and
//!   bounds ([`SingleObjectiveThinker`], [`ReactiveThinker`], [`ChatThinker`]). The loopless
//!   families refuse tools with an error of their own instead
//!   ([`ToollessThinker::tool`]).
//!
//! Both are sealed: only the families implement them. They are in [`crate::prelude`].
//!
//! [`SingleObjectiveThinker`]: crate::thinker::SingleObjectiveThinker
//! [`ToollessThinker`]: crate::thinker::ToollessThinker
//! [`ToollessThinker::tool`]: crate::thinker::ToollessThinker::tool
//! [`DecisionThinker`]: crate::thinker::DecisionThinker
//! [`ReactiveThinker`]: crate::thinker::ReactiveThinker
//! [`ChatThinker`]: crate::thinker::ChatThinker

use std::sync::Arc;

use crate::conversation::ConversationService;
use crate::hub::ToolHub;
use crate::thinker::events::ContentStream;
use crate::thinker::turn::{TurnSource, Turns};
use crate::thinker::turn_loop::{ThinkerHooks, ThinkerLimits};
use crate::tool::{Tool, ToolProvider, TypedToolProvider};

pub(crate) mod sealed {
    use crate::thinker::turn_loop::ThinkerCore;

    /// The one accessor the shared setters go through; outside the crate it cannot be named,
    /// so no other type implements the builders.
    pub trait HasCore {
        /// The core the family's runs are made from.
        fn core_mut(&mut self) -> &mut ThinkerCore;
    }
}

/// The setters every thinker family has (see the module docs).
pub trait ThinkerBuilder: sealed::HasCore + Sized {
    /// Answer turns from this source instead of the model (tests drive the thinker this way).
    /// A [`ReactiveThinker`](crate::thinker::ReactiveThinker) given [`ChatEvents`] keeps this
    /// source instead of streaming from the model, whichever was set first.
    ///
    /// [`ChatEvents`]: crate::thinker::ChatEvents
    #[must_use]
    fn turns(mut self, source: impl TurnSource) -> Self {
        self.core_mut().turns = Turns::from_source(source);
        self
    }

    /// The job class recorded for runs; model calls are recorded as `<class>.turn` by a
    /// looping thinker and `<class>.call` by a loopless one.
    #[must_use]
    fn class(mut self, class: impl Into<String>) -> Self {
        self.core_mut().class = class.into();
        self
    }

    /// Publish accepted answers of direct runs to this stream (otherwise to a [`ContentStream`]
    /// registered as a dispatcher service, if any).
    #[must_use]
    fn content_stream(mut self, stream: ContentStream) -> Self {
        self.core_mut().content = Some(stream);
        self
    }
}

/// The setters of the families that run the loop: tools, hooks, bounds, conversations, hub
/// (see the module docs).
pub trait LoopThinkerBuilder: ThinkerBuilder {
    /// Declare a typed tool.
    #[must_use]
    fn tool<T: Tool>(self, tool: T) -> Self {
        self.provider(Arc::new(TypedToolProvider::new(tool)))
    }

    /// Declare a tool provider (an MCP tool, a wrapper, a dynamic tool).
    #[must_use]
    fn provider(mut self, provider: Arc<dyn ToolProvider>) -> Self {
        self.core_mut().registry.register(provider);
        self
    }

    /// Use these hooks.
    #[must_use]
    fn hooks(mut self, hooks: impl ThinkerHooks) -> Self {
        self.core_mut().hooks = Arc::new(hooks);
        self
    }

    /// Replace the bounds of a run (model turns per run, corrections, tool calls per turn).
    #[must_use]
    fn limits(mut self, limits: ThinkerLimits) -> Self {
        self.core_mut().limits = limits;
        self
    }

    /// Keep this thinker's new conversations durable: saved to the conversation store after
    /// every turn, resumable by id from another process. Temporary (the default, except for a
    /// [`ChatThinker`](crate::thinker::ChatThinker)) conversations stay with the thinker and are
    /// resumable only through it.
    #[must_use]
    fn durable(mut self) -> Self {
        self.core_mut().durable = true;
        self
    }

    /// Use this conversation service instead of the one registered on the dispatcher (the
    /// runtime registers one over its store).
    #[must_use]
    fn conversations(mut self, service: ConversationService) -> Self {
        self.core_mut().conversations = Some(service);
        self
    }

    /// Use this hub for the built-in orchestrators (the catalog doors `request_tools` and
    /// `request_skill`, and the catalogs a `sub_thinker` inherits) instead of the one registered
    /// on the dispatcher (with neither, the thinker has no doors; it keeps `sub_thinker`, whose
    /// delegate then has no doors either).
    #[must_use]
    fn hub(mut self, hub: Arc<ToolHub>) -> Self {
        self.core_mut().orchestration.hub = Some(hub);
        self
    }
}

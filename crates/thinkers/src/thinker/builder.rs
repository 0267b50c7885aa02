//! The setters the thinker families share, written once as macros over the
//! `ThinkerCore` each family holds and expanded into each
//! family's own `impl`, so they are inherent methods: nothing to import.
//!
//! * `shared_setters!`: every family ([`Thinker`], [`ToollessThinker`], [`DecisionThinker`],
//!   [`ReactiveThinker`], [`ChatThinker`]): turn source, job class, content stream.
//! * `loop_setters!`: the families that run the loop and so take tools, hooks and bounds
//!   ([`Thinker`], [`ReactiveThinker`], [`ChatThinker`]). The loopless families have no `tool`
//!   method: a tool could never be offered to their model.
//!
//! [`Thinker`]: crate::thinker::Thinker
//! [`ToollessThinker`]: crate::thinker::ToollessThinker
//! [`DecisionThinker`]: crate::thinker::DecisionThinker
//! [`ReactiveThinker`]: crate::thinker::ReactiveThinker
//! [`ChatThinker`]: crate::thinker::ChatThinker

pub(crate) mod sealed {
    use crate::thinker::turn_loop::ThinkerCore;

    /// The one accessor the shared setters go through; outside the crate it cannot be named,
    /// so only the families expand the setters.
    pub(crate) trait HasCore {
        /// The core the family's runs are made from.
        fn core_mut(&mut self) -> &mut ThinkerCore;
    }
}

/// The setters every family has, as inherent methods of `$ty` (a family implementing
/// [`sealed::HasCore`]).
macro_rules! shared_setters {
    (impl $(<$($g:ident),+>)? for $ty:ty) => {
        impl$(<$($g),+>)? $ty {
            /// Answer turns from this source instead of the model (tests drive a thinker this
            /// way). A [`ReactiveThinker`](crate::thinker::ReactiveThinker) given
            /// [`ChatEvents`](crate::thinker::ChatEvents) keeps this source instead of streaming
            /// from the model, whichever was set first.
            #[must_use]
            pub fn turns(mut self, source: impl $crate::thinker::turn::TurnSource) -> Self {
                $crate::thinker::builder::sealed::HasCore::core_mut(&mut self).turns = $crate::thinker::turn::Turns::from_source(source);
                self
            }

            /// The job class recorded for runs; model calls are recorded as `<class>.turn` by a
            /// looping thinker and `<class>.call` by a loopless one.
            #[must_use]
            pub fn class(mut self, class: impl Into<String>) -> Self {
                $crate::thinker::builder::sealed::HasCore::core_mut(&mut self).class = class.into();
                self
            }

            /// Publish accepted answers of direct runs to this stream (otherwise to a
            /// [`ContentStream`](crate::thinker::ContentStream) registered as a dispatcher
            /// service, if any).
            #[must_use]
            pub fn content_stream(mut self, stream: $crate::thinker::ContentStream) -> Self {
                $crate::thinker::builder::sealed::HasCore::core_mut(&mut self).content = Some(stream);
                self
            }
        }
    };
}

/// The setters of the families that run the loop (tools, hooks, bounds, conversations, hub), as
/// inherent methods of `$ty`.
macro_rules! loop_setters {
    (impl $(<$($g:ident),+>)? for $ty:ty) => {
        impl$(<$($g),+>)? $ty {
            /// Declare a typed tool (a `#[thinkers::tool]` fn or a [`Tool`]).
            ///
            /// [`Tool`]: crate::tool::Tool
            #[must_use]
            pub fn tool<T: $crate::tool::Tool>(self, tool: T) -> Self {
                self.provider(std::sync::Arc::new($crate::tool::TypedToolProvider::new(tool)))
            }

            /// Declare a tool provider (an MCP tool, a wrapper, a dynamic tool).
            #[must_use]
            pub fn provider(
                mut self,
                provider: std::sync::Arc<dyn $crate::tool::ToolProvider>,
            ) -> Self {
                $crate::thinker::builder::sealed::HasCore::core_mut(&mut self).registry.register(provider);
                self
            }

            /// Use these hooks.
            #[must_use]
            pub fn hooks(mut self, hooks: impl $crate::thinker::turn_loop::ThinkerHooks) -> Self {
                $crate::thinker::builder::sealed::HasCore::core_mut(&mut self).hooks = std::sync::Arc::new(hooks);
                self
            }

            /// Replace the bounds of a run (model turns per run, corrections, tool calls per
            /// turn).
            #[must_use]
            pub fn limits(mut self, limits: $crate::thinker::turn_loop::ThinkerLimits) -> Self {
                $crate::thinker::builder::sealed::HasCore::core_mut(&mut self).limits = limits;
                self
            }

            /// Keep this thinker's new conversations durable: saved to the conversation store
            /// after every turn, resumable by id from another process. Temporary (the default,
            /// except for a [`ChatThinker`](crate::thinker::ChatThinker)) conversations stay
            /// with the thinker and are resumable only through it.
            #[must_use]
            pub fn durable(mut self) -> Self {
                $crate::thinker::builder::sealed::HasCore::core_mut(&mut self).durable = true;
                self
            }

            /// Use this conversation service instead of the one registered on the dispatcher
            /// (the runtime registers one over its store).
            #[must_use]
            pub fn conversations(
                mut self,
                service: $crate::conversation::ConversationService,
            ) -> Self {
                $crate::thinker::builder::sealed::HasCore::core_mut(&mut self).conversations = Some(service);
                self
            }

            /// Offer the model `sub_thinker`: from the delegation threshold
            /// ([`Depth::Standard`](crate::model::Depth::Standard)) up, it may hand a
            /// self-contained part of its problem to a sub-agent with this thinker's tools, run
            /// as its child. Off by default, so the palette holds only the tools given to it
            /// (and a hub's catalog doors).
            #[must_use]
            pub fn delegating(mut self) -> Self {
                $crate::thinker::builder::sealed::HasCore::core_mut(&mut self).orchestration.delegates = true;
                self
            }

            /// Use this hub for the built-in orchestrators (the catalog doors `request_tools`
            /// and `request_skill`, and the catalogs a `sub_thinker` inherits) instead of the
            /// one registered on the dispatcher (with neither, the thinker has no catalog
            /// doors; with [`delegating`](Self::delegating) it keeps that door, whose
            /// delegate then has no catalog doors either).
            #[must_use]
            pub fn hub(mut self, hub: std::sync::Arc<$crate::hub::ToolHub>) -> Self {
                $crate::thinker::builder::sealed::HasCore::core_mut(&mut self).orchestration.hub = Some(hub);
                self
            }
        }
    };
}

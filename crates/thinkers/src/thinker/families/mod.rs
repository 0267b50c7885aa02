//! The thinker families: each a value holding a [`crate::thinker::ThinkerCore`] and an answer phase for
//! the loop in [`super::turn_loop`].
//!
//! * [`single`]: one typed answer, guarded ([`crate::thinker::Thinker`]);
//! * [`decision`]: a choice or ranking among declared options;
//! * [`toolless`]: one model call, typed in and out, corrected by guardrails;
//! * [`reactive`] and [`chat`]: a conversation that answers each message as it comes.

pub(crate) mod chat;
pub(crate) mod decision;
pub(crate) mod reactive;
pub(crate) mod single;
pub(crate) mod toolless;

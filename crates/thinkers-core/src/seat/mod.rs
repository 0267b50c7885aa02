//! The vocabulary of a model seat, shared by every module that asks for one: a [`Grade`] (how
//! capable), a [`Depth`] (how much reasoning) and an [`OutputSize`] (how much answer), and the
//! [`ParseNameError`] each reports for a name it does not know. It imports nothing of the
//! crate, so the tool and job contracts can use it without the model catalog; `thinkers::model`
//! re-exports all of it.

mod depth;
mod grade;
mod output;
mod parse;

pub use depth::Depth;
pub use grade::Grade;
pub use output::OutputSize;
pub use parse::ParseNameError;

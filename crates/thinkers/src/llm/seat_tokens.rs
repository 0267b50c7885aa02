//! What a seat books on an entry: its output tokens and its reasoning at a depth.

use super::Reasoning;
use crate::model::{Depth, Entry, OutputSize, Reasoning as EntryReasoning};

/// The output tokens a seat books on an entry: the declared size, or the ceiling when escalated.
pub(crate) fn output_budget(entry: &Entry, output: OutputSize, escalated: bool) -> u32 {
    if escalated {
        entry.output_ceiling()
    } else {
        entry.output_tokens(output)
    }
}

/// The reasoning an entry applies at a depth, as a request setting and a token reservation.
pub(crate) fn reasoning_for(entry: &Entry, depth: Depth) -> (Reasoning, u32) {
    match entry.reasoning() {
        EntryReasoning::Tokens(_) => {
            let n = entry.reasoning_tokens(depth);
            if n == 0 {
                (Reasoning::Off, 0)
            } else {
                (Reasoning::Tokens(n), n)
            }
        }
        EntryReasoning::Effort(_) => match entry.reasoning_effort(depth) {
            Some(effort) => (
                Reasoning::Effort(effort.to_owned()),
                entry.reasoning_tokens(depth),
            ),
            None => (Reasoning::Off, 0),
        },
        EntryReasoning::None => (Reasoning::Off, 0),
    }
}

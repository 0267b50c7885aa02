//! Where a request asks the provider to cache its prefix: the breakpoints of Anthropic's
//! `cache_control` and Bedrock's `cachePoint`, placed the same way for both (the wire forms stay
//! in the dialects).
//!
//! The prefix is read in the order tools → system → messages. Up to [`MAX_BREAKPOINTS`] are
//! placed, each only where the prefix up to it can reach the provider's minimum cacheable length
//! ([`MIN_CACHEABLE_TOKENS`]):
//!
//! * after the last tool definition, and after the system content: these stay put from turn to
//!   turn, so a new conversation with the same tools and objective reads them;
//! * after the last block of the last turn: the growing conversation's breakpoint, which moves
//!   forward each turn and writes the whole prefix;
//! * after the last block of the previous turn of the same role (the previous request's last
//!   turn): the point the previous request wrote, so this one reads it even when the turns added
//!   since hold more blocks than the provider looks back (20).
//!
//! The encoder runs before the request is counted (the count is taken from the encoded bytes),
//! so the minimum is checked on the bytes: a prefix whose JSON is shorter than the minimum in
//! bytes cannot reach it in tokens (a token is at least one byte), and gets no breakpoint. A
//! longer one is marked even if it stays below the minimum in tokens; the provider then caches
//! nothing there, without an error.

/// The smallest prefix, in tokens, the provider caches (Anthropic's Sonnet and Opus, Bedrock's
/// Claude and Nova; some models need more, and simply cache nothing below their own minimum).
pub(crate) const MIN_CACHEABLE_TOKENS: usize = 1024;

/// The most breakpoints a request may carry (Anthropic and Bedrock refuse a fifth).
pub(crate) const MAX_BREAKPOINTS: usize = 4;

/// One rendered turn, as the placement sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TurnSize {
    /// The length of its JSON.
    pub(crate) bytes: usize,
    /// Whether it is a user turn (else an assistant turn).
    pub(crate) user: bool,
    /// Whether it holds a block that can carry a breakpoint.
    pub(crate) markable: bool,
}

/// The breakpoints of one request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Breakpoints {
    /// After the last tool definition.
    pub(crate) tools: bool,
    /// After the system content.
    pub(crate) system: bool,
    /// After the last block of these turns (indices, ascending).
    pub(crate) turns: Vec<usize>,
}

impl Breakpoints {
    /// Where the breakpoints of a request with these parts go (none when `on` is false).
    pub(crate) fn place(on: bool, tools: usize, system: usize, turns: &[TurnSize]) -> Self {
        let mut out = Self::default();
        if !on {
            return out;
        }
        let reaches = |bytes: usize| bytes >= MIN_CACHEABLE_TOKENS;
        out.tools = tools > 0 && reaches(tools);
        out.system = system > 0 && reaches(tools + system);
        let mut upto = Vec::with_capacity(turns.len());
        let mut sum = tools + system;
        for t in turns {
            sum += t.bytes;
            upto.push(sum);
        }
        if let Some(last) = turns.len().checked_sub(1) {
            let role = turns[last].user;
            let previous = turns[..last]
                .iter()
                .rposition(|t| t.user == role && t.markable);
            if let Some(p) = previous.filter(|&p| reaches(upto[p])) {
                out.turns.push(p);
            }
            if turns[last].markable && reaches(upto[last]) {
                out.turns.push(last);
            }
        }
        // The placement above makes at most four; the cap drops the earliest should it ever
        // make more (the last turn's breakpoint matters most: it writes the whole prefix).
        while out.count() > MAX_BREAKPOINTS {
            if out.tools {
                out.tools = false;
            } else if out.system {
                out.system = false;
            } else {
                out.turns.remove(0);
            }
        }
        out
    }

    /// How many breakpoints there are.
    pub(crate) fn count(&self) -> usize {
        usize::from(self.tools) + usize::from(self.system) + self.turns.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(bytes: usize, user: bool) -> TurnSize {
        TurnSize {
            bytes,
            user,
            markable: true,
        }
    }

    #[test]
    fn a_long_conversation_gets_four_breakpoints_and_never_more() {
        let turns = [
            turn(2_000, true),
            turn(500, false),
            turn(3_000, true),
            turn(500, false),
            turn(100, true),
        ];
        let b = Breakpoints::place(true, 5_000, 2_000, &turns);
        assert_eq!(
            b,
            Breakpoints {
                tools: true,
                system: true,
                turns: vec![2, 4],
            }
        );
        assert_eq!(b.count(), MAX_BREAKPOINTS);
        assert_eq!(Breakpoints::place(false, 5_000, 2_000, &turns).count(), 0);
    }

    #[test]
    fn a_prefix_below_the_minimum_gets_none() {
        let turns = [turn(200, true), turn(100, false), turn(300, true)];
        assert_eq!(Breakpoints::place(true, 100, 200, &turns).count(), 0);
        // Short tools alone are not marked; the system content that carries them past is.
        let b = Breakpoints::place(true, 400, 700, &turns);
        assert_eq!((b.tools, b.system), (false, true));
        assert_eq!(b.turns, vec![0, 2]);
        // A turn with nothing to mark (only thinking) is skipped.
        let only_thinking = [TurnSize {
            markable: false,
            ..turn(5_000, true)
        }];
        assert_eq!(Breakpoints::place(true, 0, 0, &only_thinking).count(), 0);
    }
}

//! What a request will read from its provider's prompt cache, learned from the calls before it,
//! so its seat asks admission only for the input the provider counts.
//!
//! Where a provider leaves cache reads out of its input limits (Anthropic: `cache_reads_count =
//! false`), a turn of a conversation whose earlier turn was cached reads that turn's whole prefix
//! from the cache and is counted only for what it adds. After each call that read or wrote the
//! cache, the memo keeps how much of the request's whole prefix (tools, system content and every
//! message: the request's last breakpoint covers them) the provider now holds, in the units of
//! the seat's own input estimate, keyed by a fingerprint of that prefix and the entry, until the
//! cache's time to live would have run out. A later request whose messages extend a remembered
//! prefix expects to read that much; its seat asks for the rest.
//!
//! A wrong guess costs no correctness: the seat settles to the usage the provider reports, and
//! an overrun's time is taken from the budget then (see `thinkers_core::dispatch::bucket`). The
//! fingerprints are in-process hashes; nothing is stored.

use std::collections::VecDeque;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use super::ChatRequest;

/// The most prefixes remembered; the oldest go first.
const REMEMBERED: usize = 4096;

/// Fingerprints of a request's prefixes: one per message count, `prints[i]` covering the
/// tools, the system content and the first `i + 1` messages, for one entry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Prints(Vec<u64>);

impl Prints {
    /// The fingerprints of `request`'s prefixes for calls to `entry`.
    pub(crate) fn of(entry: &str, request: &ChatRequest) -> Self {
        let mut h = DefaultHasher::new();
        entry.hash(&mut h);
        request.system.hash(&mut h);
        for tool in &request.tools {
            tool.name.hash(&mut h);
            tool.description.hash(&mut h);
            let _ = serde_json::to_writer(HashWriter(&mut h), &tool.parameters);
        }
        let mut prints = Vec::with_capacity(request.messages.len());
        for message in request.messages.iter() {
            // A message that cannot be written ends the prefixes: nothing past it is matched.
            if serde_json::to_writer(HashWriter(&mut h), message).is_err() {
                break;
            }
            prints.push(h.clone().finish());
        }
        Self(prints)
    }
}

/// Feeds written bytes to a hasher.
struct HashWriter<'a>(&'a mut DefaultHasher);

impl std::io::Write for HashWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The prefixes the providers hold, as far as the calls' usage told.
#[derive(Debug, Default)]
pub(crate) struct PrefixMemo {
    held: Mutex<Held>,
}

#[derive(Debug, Default)]
struct Held {
    tokens: foldhash::HashMap<u64, (u64, Instant)>,
    order: VecDeque<u64>,
}

impl PrefixMemo {
    /// The tokens a request with `prints` is expected to read from the cache now: those of the
    /// longest remembered prefix it extends, 0 when it extends none.
    pub(crate) fn expected(&self, prints: &Prints, now: Instant) -> u64 {
        let held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        prints
            .0
            .iter()
            .rev()
            .find_map(|p| held.tokens.get(p).filter(|(_, until)| now < *until))
            .map_or(0, |(tokens, _)| *tokens)
    }

    /// A call whose request had `prints` left `tokens` of its whole prefix (in the seat's
    /// estimate's units) in the provider's cache, which lasts `ttl` from `now`.
    pub(crate) fn learn(&self, prints: &Prints, tokens: u64, ttl: Duration, now: Instant) {
        let Some(&whole) = prints.0.last() else {
            return;
        };
        if tokens == 0 {
            return;
        }
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        let until = now.checked_add(ttl).unwrap_or(now);
        if held.tokens.insert(whole, (tokens, until)).is_none() {
            held.order.push_back(whole);
        }
        while held.order.len() > REMEMBERED {
            if let Some(oldest) = held.order.pop_front() {
                held.tokens.remove(&oldest);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::llm::message::Message;

    fn request(turns: &[&str]) -> ChatRequest {
        let messages: Vec<Message> = turns.iter().map(|t| Message::user_text(*t)).collect();
        ChatRequest::new("You help.", Arc::new(messages))
    }

    #[test]
    fn a_request_extending_a_cached_one_expects_its_prefix() {
        let memo = PrefixMemo::default();
        let now = Instant::now();
        let ttl = Duration::from_secs(300);
        let first = request(&["one"]);
        let second = request(&["one", "two", "three"]);
        assert_eq!(memo.expected(&Prints::of("e", &second), now), 0);
        memo.learn(&Prints::of("e", &first), 4_000, ttl, now);
        assert_eq!(memo.expected(&Prints::of("e", &second), now), 4_000);
        // Another entry, another system content, a different history: nothing expected.
        assert_eq!(memo.expected(&Prints::of("f", &second), now), 0);
        let mut other = second.clone();
        other.system = "You hinder.".into();
        assert_eq!(memo.expected(&Prints::of("e", &other), now), 0);
        assert_eq!(
            memo.expected(&Prints::of("e", &request(&["uno", "two"])), now),
            0
        );
        // The longest remembered prefix wins; an expired one counts for nothing.
        memo.learn(&Prints::of("e", &second), 6_000, ttl, now);
        let third = request(&["one", "two", "three", "four"]);
        assert_eq!(memo.expected(&Prints::of("e", &third), now), 6_000);
        assert_eq!(memo.expected(&Prints::of("e", &third), now + ttl), 0);
    }

    #[test]
    fn the_memo_forgets_its_oldest_prefixes_past_its_size() {
        let memo = PrefixMemo::default();
        let now = Instant::now();
        let ttl = Duration::from_secs(300);
        let first = Prints::of("e", &request(&["first"]));
        memo.learn(&first, 10, ttl, now);
        for i in 0..REMEMBERED {
            memo.learn(&Prints::of("e", &request(&[&i.to_string()])), 10, ttl, now);
        }
        assert_eq!(memo.expected(&first, now), 0);
        let held = memo.held.lock().unwrap();
        assert_eq!(
            (held.tokens.len(), held.order.len()),
            (REMEMBERED, REMEMBERED)
        );
    }
}

//! Prompt caching, per model, the way each provider documents it.
//!
//! **Explicit breakpoints** (Anthropic Messages `cache_control`, Bedrock Converse `cachePoint`):
//! the prompt is a list of blocks in the order tools → system → messages; a breakpoint caches
//! the prefix up to and including its block, for 5 minutes (or 1 hour when asked), refreshed on
//! each hit. A request reads the longest cached prefix that ends at one of its breakpoints or at
//! one of the [`LOOKBACK_BLOCKS`] blocks before one, and writes the prefix of every later
//! breakpoint that reaches the model's minimum (`cache_min_tokens`, 1024 by default); a shorter
//! prefix is not cached, silently. Anthropic allows [`MAX_BREAKPOINTS`] breakpoints; a fifth is
//! a 400. A block's identity is its JSON without its `cache_control`, so moving a breakpoint
//! does not change the prefix before it. On Anthropic, `tool_choice` and `thinking` are part of
//! the messages' prefix (changing them misses the messages, not tools and system).
//!
//! **Automatic** (OpenAI Chat Completions and Responses, Gemini implicit caching): every prompt
//! whose estimate reaches the minimum is cached whole, in blocks of [`AUTO_INCREMENT`] tokens;
//! a request reads the longest cached run of whole blocks, reported only from the minimum up
//! (1024, 1152, 1280…). The prefix is the text the sim counts (tools, system, messages, in that
//! order, with role markers). OpenAI's `prompt_cache_key` names a separate cache (requests with
//! the same key share one; requests without a key share the default one). Entries live
//! `cache_ttl_ms` (5 minutes by default) after their last use.
//!
//! Token counts are the sim's estimate ([`crate::tokens`]): a prefix of B counted bytes spanning
//! M messages is ⌈B / 4⌉ + 3 M + 3 tokens, so a whole prompt's prefix is its input estimate.
//! Time is `tokio::time::Instant`, so tests can pause and advance it.

mod prompt;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::time::Duration;

use tokio::time::Instant;

pub(crate) use prompt::build;

/// The minimum cacheable prefix unless a model sets another.
pub const DEFAULT_MIN_TOKENS: u64 = 1024;

/// How long an entry lives after its last use: Anthropic's and Bedrock's default (`"5m"`), and
/// the automatic caches' idle time unless a model sets another.
pub const DEFAULT_TTL: Duration = Duration::from_secs(300);

/// Anthropic's and Bedrock's extended time to live (`"ttl": "1h"`).
pub const LONG_TTL: Duration = Duration::from_secs(3600);

/// The most breakpoints an Anthropic request may carry.
pub const MAX_BREAKPOINTS: usize = 4;

/// How many blocks before each breakpoint are checked for a cached prefix.
pub const LOOKBACK_BLOCKS: usize = 20;

/// The increment of an automatic cache hit, in tokens.
pub const AUTO_INCREMENT: u64 = 128;

/// A prefix that can be cached: the hash of its bytes and its token estimate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Point {
    pub(crate) hash: u64,
    pub(crate) tokens: u64,
}

/// The cacheable prefixes of one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Prompt {
    /// Anthropic and Bedrock: a point at the end of every block, and the breakpoints among them
    /// (index into `points`, time to live).
    Explicit {
        points: Vec<Point>,
        breakpoints: Vec<(usize, Duration)>,
    },
    /// OpenAI and Gemini: a point every [`AUTO_INCREMENT`] tokens.
    Automatic { points: Vec<Point> },
}

/// What a request read from and wrote to the cache, in tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct CacheUse {
    /// Tokens read from the cache.
    pub(crate) read: u64,
    /// Tokens written with the 5-minute (or the automatic) time to live.
    pub(crate) write_5m: u64,
    /// Tokens written with the 1-hour time to live.
    pub(crate) write_1h: u64,
}

impl CacheUse {
    /// Tokens written, whatever their time to live.
    pub(crate) fn written(self) -> u64 {
        self.write_5m + self.write_1h
    }

    /// The input tokens neither read from nor written to the cache.
    pub(crate) fn uncached(self, total: u64) -> u64 {
        total.saturating_sub(self.read + self.written())
    }

    /// The same use, never more than `total` tokens in all.
    fn clamped(self, total: u64) -> Self {
        let read = self.read.min(total);
        let write_1h = self.write_1h.min(total - read);
        let write_5m = self.write_5m.min(total - read - write_1h);
        Self {
            read,
            write_5m,
            write_1h,
        }
    }
}

/// A model's cache settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Settings {
    pub(crate) enabled: bool,
    pub(crate) min_tokens: u64,
    /// The automatic caches' time to live.
    pub(crate) ttl: Duration,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    ttl: Duration,
    expires: Instant,
}

/// What a request would do to the cache.
#[derive(Debug, Default)]
struct Planned {
    usage: CacheUse,
    read: Option<u64>,
    writes: Vec<(u64, Duration)>,
}

/// One model's cached prefixes.
#[derive(Debug)]
pub(crate) struct PromptCache {
    settings: Settings,
    entries: HashMap<u64, Entry>,
    commits: u64,
}

impl PromptCache {
    pub(crate) fn new(settings: Settings) -> Self {
        Self {
            settings,
            entries: HashMap::new(),
            commits: 0,
        }
    }

    fn alive(&self, hash: u64, now: Instant) -> bool {
        self.entries.get(&hash).is_some_and(|e| e.expires > now)
    }

    fn plan(&self, prompt: &Prompt, now: Instant) -> Planned {
        if !self.settings.enabled {
            return Planned::default();
        }
        let min = self.settings.min_tokens;
        match prompt {
            Prompt::Explicit {
                points,
                breakpoints,
            } => {
                let mut read: Option<usize> = None;
                for &(at, _) in breakpoints {
                    let from = at.saturating_sub(LOOKBACK_BLOCKS);
                    for (i, point) in points.iter().enumerate().take(at + 1).skip(from) {
                        if read.is_none_or(|r| i > r) && self.alive(point.hash, now) {
                            read = Some(i);
                        }
                    }
                }
                let mut usage = CacheUse {
                    read: read.map_or(0, |i| points[i].tokens),
                    ..CacheUse::default()
                };
                let mut covered = usage.read;
                let mut marks = breakpoints.clone();
                marks.sort_by_key(|(at, _)| *at);
                let mut writes = Vec::new();
                for (at, ttl) in marks {
                    let point = points[at];
                    if read.is_some_and(|r| at <= r) || point.tokens < min {
                        continue;
                    }
                    if point.tokens > covered {
                        let fresh = point.tokens - covered;
                        if ttl > DEFAULT_TTL {
                            usage.write_1h += fresh;
                        } else {
                            usage.write_5m += fresh;
                        }
                        covered = point.tokens;
                    }
                    writes.push((point.hash, ttl));
                }
                Planned {
                    usage,
                    read: read.map(|i| points[i].hash),
                    writes,
                }
            }
            Prompt::Automatic { points } => {
                let ttl = self.settings.ttl;
                let hit = points
                    .iter()
                    .rev()
                    .find(|p| p.tokens >= min && self.alive(p.hash, now));
                let whole = points.last().is_some_and(|p| p.tokens >= min);
                Planned {
                    usage: CacheUse {
                        read: hit.map_or(0, |p| p.tokens),
                        ..CacheUse::default()
                    },
                    read: hit.map(|p| p.hash),
                    writes: if whole {
                        points
                            .iter()
                            .filter(|p| p.tokens >= min)
                            .map(|p| (p.hash, ttl))
                            .collect()
                    } else {
                        Vec::new()
                    },
                }
            }
        }
    }

    /// What `prompt` would read and write now, changing nothing (for the admission charge).
    pub(crate) fn peek(&self, prompt: &Prompt, total: u64, now: Instant) -> CacheUse {
        self.plan(prompt, now).usage.clamped(total)
    }

    /// Reads and writes `prompt`'s prefixes: the prefix read is refreshed, the new ones stored.
    pub(crate) fn commit(&mut self, prompt: &Prompt, total: u64, now: Instant) -> CacheUse {
        let planned = self.plan(prompt, now);
        if let Some(hash) = planned.read
            && let Some(entry) = self.entries.get_mut(&hash)
        {
            entry.expires = now + entry.ttl;
        }
        for (hash, ttl) in planned.writes {
            let entry = self
                .entries
                .entry(hash)
                .or_insert(Entry { ttl, expires: now });
            entry.ttl = entry.ttl.max(ttl);
            entry.expires = entry.expires.max(now + ttl);
        }
        self.commits += 1;
        if self.commits.is_multiple_of(64) {
            self.entries.retain(|_, e| e.expires > now);
        }
        planned.usage.clamped(total)
    }

    /// Forgets every entry.
    pub(crate) fn clear(&mut self) {
        self.entries.clear();
    }
}

//! The ledger of a token axis. Providers charge an ask when it arrives (their own count of its
//! input plus the output it asks for), change that charge to its use once it ends, and count the
//! charge in a window from its arrival. The axis keeps its own grants the same way, on the safe
//! side of what it cannot see: a grant counts whole while its call is out (arrival comes some
//! time after the grant), then its use until a window after the answer; a lease that ends
//! without settling counts whole until a window after it ended. An ask is granted only while
//! what the ledger counts plus the ask fit the window's share of the rate (an ask larger than the
//! share goes alone, once the ledger counts none of ours).
//! - The window is [`MIN_WINDOW`] until the provider first answers (whatever its window, a
//!   second's share in every second keeps within it), [`ASSUMED_WINDOW`] if it answers without
//!   stating its room or reset; then the longer of the time the most room it ever stated
//!   (`remaining`) lasts at the rate and the longest `reset` it stated, up to [`LONGEST_WINDOW`].
//!   Both fall within a sliding window, a fixed window and a token bucket holding the window's
//!   share, so this window is never longer than the provider's.
//! - "A window after" is that window, or longer where a stated reset shows the provider's window
//!   may be longer: a reset plus the age of our latest grant then that had surely reached the
//!   provider (older than our quickest answer) bounds the provider's window from above.
//! - What the provider counted beyond our reservation (its input count above ours, reported as
//!   usage) makes every grant still out count that much more, by the largest share seen in the
//!   ledger; and what its stated `remaining` shows it holding beyond what the ledger counts
//!   (another client, a count of ours too low) is counted as charged when it was stated.
//! - Grants stay in the ledger for [`LONGEST_WINDOW`], so a window learned longer later still
//!   counts them.

use std::time::Duration;

use tokio::time::Instant;

use super::{ASSUMED_WINDOW, Bucket, LONGEST_WINDOW, MIN_WINDOW, later, secs};

/// The lease id of a ledger entry that stands for what the provider holds beyond our grants (it
/// never settles).
pub(super) const UNSEEN: u64 = u64::MAX;

/// One of a token axis's own grants, as the provider counts it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Grant {
    /// When it was granted (the provider charges it on arrival).
    pub(super) at: Instant,
    /// Its lease.
    pub(super) id: u64,
    /// What the provider counts for it now: its reservation until it settles, then its use.
    pub(super) counts: u64,
    /// The units the pacing charged it on grant.
    pub(super) paced: f64,
    /// When it settled (`None` while out). The provider charged it on arrival, which is after
    /// the grant and before the answer: it counts the grant whole while out, and its use until a
    /// window after the answer at the latest.
    pub(super) settled: Option<Instant>,
    /// Once settled: how much more than our reservation the provider counted the ask, as a share
    /// of the reservation (its own token count of the input against ours).
    pub(super) short: f64,
}

impl Bucket {
    /// The window whose share of the rate the ledger holds, in seconds: the shortest a provider
    /// is taken to enforce until it first answers, the assumed one if it answers without stating
    /// its room or reset; then the longest of the time the most room it ever stated lasts at the
    /// rate and the longest reset it stated (from [`MIN_WINDOW`] to [`LONGEST_WINDOW`]); never
    /// shorter than the catalog's burst.
    pub(super) fn window(&self, now: Instant) -> f64 {
        let room = self.widest.map(|r| r as f64 / self.per_second(now));
        let reset = self.longest_reset.map(|d| d.as_secs_f64());
        let stated = match (room, reset) {
            (None, None) if self.use_share.is_none() => MIN_WINDOW.as_secs_f64(),
            (None, None) => ASSUMED_WINDOW.as_secs_f64(),
            (a, b) => a
                .unwrap_or(0.0)
                .max(b.unwrap_or(0.0))
                .clamp(MIN_WINDOW.as_secs_f64(), LONGEST_WINDOW.as_secs_f64()),
        };
        stated.max(self.tolerance().as_secs_f64())
    }

    /// How long the ledger counts a grant, in seconds: the window, or the longest the provider's
    /// window can be by its reset (a window known only from below would let a grant leave the
    /// ledger while the provider still counts it).
    pub(super) fn span(&self, now: Instant) -> f64 {
        let window = self.window(now);
        self.reach.map_or(window, |r| {
            r.as_secs_f64()
                .clamp(window, LONGEST_WINDOW.as_secs_f64().max(window))
        })
    }

    /// Drop from the ledger the grants no window holds any more.
    pub(super) fn expire(&mut self, now: Instant) {
        let keep = secs(self.span(now).max(LONGEST_WINDOW.as_secs_f64()));
        while self
            .ledger
            .front()
            .is_some_and(|g| later(g.at, keep) <= now)
        {
            self.ledger.pop_front();
        }
    }

    /// The ledger's grants of the last `span` seconds at `now`, oldest first.
    fn within(&self, now: Instant, span: f64) -> impl Iterator<Item = &Grant> {
        let span = secs(span);
        let from = self.ledger.partition_point(|g| later(g.at, span) <= now);
        self.ledger.range(from..)
    }

    /// When the provider has surely dropped `g` (`None` while it is out): a window after its
    /// answer.
    fn leaves(g: &Grant, span: Duration) -> Option<Instant> {
        g.settled.map(|t| later(t, span))
    }

    /// The ledger's grants a provider's window may still hold at `now`, oldest first.
    fn counted(&self, now: Instant) -> impl Iterator<Item = &Grant> {
        let span = secs(self.span(now));
        self.ledger
            .iter()
            .filter(move |g| Self::leaves(g, span).is_none_or(|t| t > now))
    }

    /// How much a grant still out may count beyond its reservation, as a share of it: the most
    /// the provider counted beyond ours for any grant in the ledger.
    fn shortfall(&self) -> f64 {
        self.ledger.iter().map(|g| g.short).fold(0.0, f64::max)
    }

    /// What the provider counts for `g`, a grant still out counted as the largest shortfall.
    fn weight(g: &Grant, shortfall: f64) -> f64 {
        if g.settled.is_none() {
            g.counts as f64 * (1.0 + shortfall)
        } else {
            g.counts as f64
        }
    }

    /// What the provider's window may hold of ours at `now`.
    pub(super) fn held(&self, now: Instant) -> f64 {
        let shortfall = self.shortfall();
        self.counted(now).map(|g| Self::weight(g, shortfall)).sum()
    }

    /// `None` when the ledger has room for `need` now; otherwise how long until enough of its
    /// settled grants leave the window (when only grants still out stand in the way, a window:
    /// their settles wake the waiters sooner).
    pub(super) fn ledger_wait(&self, now: Instant, need: u64) -> Option<Duration> {
        let share = self.per_second(now) * self.window(now);
        let span = secs(self.span(now));
        let shortfall = self.shortfall();
        let need = need as f64 * (1.0 + shortfall);
        let fits = |held: f64| held < 0.5 || held + need <= share;
        let mut held = self.held(now);
        if fits(held) {
            return None;
        }
        let mut leaving: Vec<(Instant, f64)> = self
            .counted(now)
            .filter_map(|g| Some((Self::leaves(g, span)?, Self::weight(g, shortfall))))
            .collect();
        leaving.sort_by_key(|l| l.0);
        for (at, weight) in leaving {
            held -= weight;
            if fits(held) {
                return Some(
                    at.saturating_duration_since(now)
                        .max(Duration::from_micros(1)),
                );
            }
        }
        Some(span)
    }

    /// Whether the axis keeps a ledger: a token axis whose catalog gives no burst (a burst says
    /// the provider is a bucket of that many seconds, which the pacing is exactly).
    pub(super) fn ledgered(&self) -> bool {
        self.tokens && self.tolerance().is_zero()
    }

    /// The provider says `remaining` of the window's share is left: what it holds beyond what
    /// the ledger counts (another client's calls, a charge its count of an ask's tokens made
    /// larger than ours) is counted as charged now.
    pub(super) fn count_unseen(&mut self, now: Instant, remaining: u64) {
        if !self.ledgered() {
            return;
        }
        self.expire(now);
        // Against the shortest the provider's window can be: what it holds of ours is no less.
        let window = self.window(now);
        let ours: u64 = self.within(now, window).map(|g| g.counts).sum();
        let unseen = self.per_second(now) * window - ours as f64 - remaining as f64;
        if unseen >= 1.0 {
            self.ledger.push_back(Grant {
                at: now,
                id: UNSEEN,
                counts: unseen as u64,
                paced: 0.0,
                settled: Some(now),
                short: 0.0,
            });
        }
    }
}

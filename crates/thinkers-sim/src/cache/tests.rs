#![allow(clippy::unwrap_used)]

use std::time::Duration;

use tokio::time::Instant;

use super::*;

fn settings(min_tokens: u64) -> Settings {
    Settings {
        enabled: true,
        min_tokens,
        ttl: DEFAULT_TTL,
    }
}

/// `n` blocks of `per` tokens each; `salt` changes every hash from block `from` on.
fn blocks(n: usize, per: u64, salt: u64, from: usize) -> Vec<Point> {
    (0..n)
        .map(|i| Point {
            hash: if i >= from {
                (i as u64) << 32 | salt
            } else {
                i as u64
            },
            tokens: per * (i as u64 + 1),
        })
        .collect()
}

fn explicit(points: Vec<Point>, marks: &[(usize, Duration)]) -> Prompt {
    Prompt::Explicit {
        points,
        breakpoints: marks.to_vec(),
    }
}

#[test]
fn a_breakpoint_writes_then_reads_its_prefix() {
    let mut cache = PromptCache::new(settings(1024));
    let now = Instant::now();
    let prompt = explicit(blocks(4, 400, 0, 99), &[(2, DEFAULT_TTL)]);
    let first = cache.commit(&prompt, 1700, now);
    assert_eq!(
        first,
        CacheUse {
            read: 0,
            write_5m: 1200,
            write_1h: 0
        }
    );
    assert_eq!(first.uncached(1700), 500);
    let second = cache.commit(&prompt, 1700, now + Duration::from_secs(1));
    assert_eq!(
        second,
        CacheUse {
            read: 1200,
            ..CacheUse::default()
        }
    );
    // A peek changes nothing.
    assert_eq!(cache.peek(&prompt, 1700, now), second);
}

#[test]
fn below_the_minimum_nothing_is_cached() {
    let mut cache = PromptCache::new(settings(1024));
    let now = Instant::now();
    let prompt = explicit(blocks(4, 200, 0, 99), &[(3, DEFAULT_TTL)]);
    assert_eq!(cache.commit(&prompt, 900, now), CacheUse::default());
    assert_eq!(cache.commit(&prompt, 900, now), CacheUse::default());
    // The same prefix is cached once the model's minimum is lower.
    let mut low = PromptCache::new(settings(500));
    assert_eq!(low.commit(&prompt, 900, now).write_5m, 800);
}

#[test]
fn a_changed_block_before_the_breakpoint_misses() {
    let mut cache = PromptCache::new(settings(1024));
    let now = Instant::now();
    cache.commit(
        &explicit(blocks(4, 400, 0, 99), &[(3, DEFAULT_TTL)]),
        1600,
        now,
    );
    let changed = explicit(blocks(4, 400, 7, 1), &[(3, DEFAULT_TTL)]);
    assert_eq!(cache.commit(&changed, 1600, now).read, 0);
}

#[test]
fn lookback_finds_an_earlier_breakpoint_within_twenty_blocks() {
    let now = Instant::now();
    // Turn 1 marks block 5; turn 2 marks block 15 (ten blocks later): block 5's prefix is read
    // and the rest written.
    let mut cache = PromptCache::new(settings(1024));
    cache.commit(
        &explicit(blocks(6, 200, 0, 99), &[(5, DEFAULT_TTL)]),
        1200,
        now,
    );
    let later = explicit(blocks(16, 200, 0, 99), &[(15, DEFAULT_TTL)]);
    assert_eq!(
        cache.commit(&later, 3200, now),
        CacheUse {
            read: 1200,
            write_5m: 2000,
            write_1h: 0
        }
    );
    // Thirty blocks later is out of reach: everything is written again.
    let mut cache = PromptCache::new(settings(1024));
    cache.commit(
        &explicit(blocks(6, 200, 0, 99), &[(5, DEFAULT_TTL)]),
        1200,
        now,
    );
    let far = explicit(blocks(36, 200, 0, 99), &[(35, DEFAULT_TTL)]);
    assert_eq!(
        cache.commit(&far, 7200, now),
        CacheUse {
            read: 0,
            write_5m: 7200,
            write_1h: 0
        }
    );
}

#[test]
fn entries_expire_after_their_ttl_and_hits_refresh_them() {
    let mut cache = PromptCache::new(settings(1024));
    let t0 = Instant::now();
    let prompt = explicit(blocks(3, 400, 0, 99), &[(2, DEFAULT_TTL)]);
    cache.commit(&prompt, 1200, t0);
    // A hit at 4 minutes keeps it alive until 9 minutes.
    assert_eq!(
        cache
            .commit(&prompt, 1200, t0 + Duration::from_secs(240))
            .read,
        1200
    );
    assert_eq!(
        cache
            .commit(&prompt, 1200, t0 + Duration::from_secs(480))
            .read,
        1200
    );
    // 5 minutes without use: gone, written again.
    let late = cache.commit(&prompt, 1200, t0 + Duration::from_secs(781));
    assert_eq!((late.read, late.write_5m), (0, 1200));
}

#[test]
fn one_hour_breakpoints_outlive_five_minute_ones_and_are_reported_apart() {
    let mut cache = PromptCache::new(settings(1024));
    let t0 = Instant::now();
    let prompt = explicit(blocks(6, 400, 0, 99), &[(2, LONG_TTL), (5, DEFAULT_TTL)]);
    assert_eq!(
        cache.commit(&prompt, 2400, t0),
        CacheUse {
            read: 0,
            write_5m: 1200,
            write_1h: 1200
        }
    );
    let later = cache.commit(&prompt, 2400, t0 + Duration::from_secs(1800));
    assert_eq!(
        later,
        CacheUse {
            read: 1200,
            write_5m: 1200,
            write_1h: 0
        }
    );
}

#[test]
fn automatic_hits_come_in_128_token_steps_from_the_minimum() {
    let mut cache = PromptCache::new(settings(1024));
    let now = Instant::now();
    let points = |n: u64, salt: u64, from: u64| Prompt::Automatic {
        points: (1..=n)
            .map(|k| Point {
                hash: if k >= from { k << 32 | salt } else { k },
                tokens: k * AUTO_INCREMENT,
            })
            .collect(),
    };
    // 7 blocks (896 tokens): below the minimum, not cached.
    assert_eq!(cache.commit(&points(7, 0, 99), 950, now).read, 0);
    assert_eq!(cache.commit(&points(7, 0, 99), 950, now).read, 0);
    // 12 blocks cached; a prompt sharing 10 of them reads 1280.
    assert_eq!(cache.commit(&points(12, 0, 99), 1600, now).read, 0);
    assert_eq!(cache.commit(&points(12, 0, 99), 1600, now).read, 1536);
    assert_eq!(cache.commit(&points(14, 3, 11), 1800, now).read, 1280);
    // Sharing fewer than 8 blocks is no hit.
    assert_eq!(cache.commit(&points(14, 4, 6), 1800, now).read, 0);
    // Automatic caches report no writes.
    assert_eq!(cache.commit(&points(20, 5, 1), 2600, now).written(), 0);
}

#[test]
fn a_disabled_cache_reports_nothing() {
    let mut cache = PromptCache::new(Settings {
        enabled: false,
        ..settings(0)
    });
    let prompt = explicit(blocks(3, 400, 0, 99), &[(2, DEFAULT_TTL)]);
    let now = Instant::now();
    cache.commit(&prompt, 1200, now);
    assert_eq!(cache.commit(&prompt, 1200, now), CacheUse::default());
}

#[test]
fn use_never_exceeds_the_whole_input() {
    let used = CacheUse {
        read: 900,
        write_5m: 300,
        write_1h: 0,
    };
    assert_eq!(
        used.clamped(1000),
        CacheUse {
            read: 900,
            write_5m: 100,
            write_1h: 0
        }
    );
}

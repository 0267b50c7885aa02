//! [`SpendStore`] on Redis: every process holding on one cap key draws on one sum. A hold is one
//! script (check and add atomically); a settle is awaited by the call, so its next hold sees it.

use std::sync::LazyLock;

use futures::future::BoxFuture;
use redis::Script;

use super::{RedisBudgets, redis_error};
use thinkers::dispatch::{Held, SpendStore};
use thinkers::{Error, Result};

/// How long a cap's sum is kept after its last use: past a day key's day, and long enough for
/// any run.
const KEEP_MS: i64 = 8 * 24 * 3600 * 1000;

/// KEYS: the sum. ARGV: the limit, the amount (billionths), the keep time (ms).
/// Returns {1, the sum after} when held, {0, the sum} when refused.
const HOLD: &str = r"
local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
local limit, amount = tonumber(ARGV[1]), tonumber(ARGV[2])
if cur + amount > limit then return {0, cur} end
local after = redis.call('INCRBY', KEYS[1], amount)
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return {1, after}
";

/// KEYS: the sum. ARGV: the change (cost less the hold; may be negative).
const SETTLE: &str = r"
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local after = redis.call('INCRBY', KEYS[1], ARGV[1])
if after < 0 then redis.call('SET', KEYS[1], 0, 'KEEPTTL') end
return 1
";

static HOLD_SCRIPT: LazyLock<Script> = LazyLock::new(|| Script::new(HOLD));
static SETTLE_SCRIPT: LazyLock<Script> = LazyLock::new(|| Script::new(SETTLE));

fn signed(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl SpendStore for RedisBudgets {
    fn hold<'a>(&'a self, key: &'a str, limit: u64, amount: u64) -> BoxFuture<'a, Result<Held>> {
        Box::pin(async move {
            let mut conn = self.inner.conn.clone();
            let answer: Vec<i64> = HOLD_SCRIPT
                .key(self.inner.key(key, "spend"))
                .arg(signed(limit))
                .arg(signed(amount))
                .arg(KEEP_MS)
                .invoke_async(&mut conn)
                .await
                .map_err(|e| redis_error("hold spend", &e))?;
            Ok(match answer[..] {
                [1, _] => Held::Yes,
                [_, spent] => Held::No(u64::try_from(spent).unwrap_or(0)),
                _ => {
                    return Err(Error::system(
                        "redis spend caps",
                        format!("the hold script answered {answer:?}, not two numbers"),
                    ));
                }
            })
        })
    }

    fn settle(&self, key: &str, held: u64, cost: u64) -> BoxFuture<'static, ()> {
        let change = signed(cost).saturating_sub(signed(held));
        let mut inv = SETTLE_SCRIPT.prepare_invoke();
        inv.key(self.inner.key(key, "spend")).arg(change);
        let mut conn = self.inner.conn.clone();
        Box::pin(async move {
            if let Err(e) = inv.invoke_async::<i64>(&mut conn).await {
                tracing::warn!(error = %e, "redis spend caps: settle failed");
            }
        })
    }
}

//! The server-side Lua scripts of [`super::RedisBudgets`]. Each runs atomically in Redis and reads
//! the clock with `TIME`, so every process judges windows and leases by the same clock.
//!
//! Keys of one budget (`P` is the store's prefix and the budget name):
//! `P:tok:z`/`P:req:z` (sorted sets of grants scored by grant time, ms), `P:tok:a`/`P:req:a`
//! (hash grant → amount), `P:tok:s`/`P:req:s` (the running sum), `P:held:z` (sorted set of
//! concurrency holders scored by lease expiry), `P:held:s` (hash holder → slots), `P:pause`
//! (pause end, ms) and `P:seq` (the lease id counter, kept a day after its last use).

use std::sync::LazyLock;

use redis::Script;

/// Shared helpers: the server clock, purging a window, the wait until a need fits.
const PRELUDE: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local function purge(z, a, s, window)
  local cut = now - window
  local old = redis.call('ZRANGEBYSCORE', z, '-inf', cut)
  local sum = tonumber(redis.call('GET', s) or '0')
  if #old > 0 then
    for _, m in ipairs(old) do
      sum = sum - tonumber(redis.call('HGET', a, m) or '0')
      redis.call('HDEL', a, m)
    end
    redis.call('ZREMRANGEBYSCORE', z, '-inf', cut)
    if sum < 0 then sum = 0 end
    redis.call('SET', s, sum)
  end
  return sum
end

local function wait_for(z, a, sum, need, limit, window)
  local excess = sum + need - limit
  local freed = 0
  local entries = redis.call('ZRANGE', z, 0, -1, 'WITHSCORES')
  for i = 1, #entries, 2 do
    freed = freed + tonumber(redis.call('HGET', a, entries[i]) or '0')
    if freed >= excess then
      local w = tonumber(entries[i + 1]) + window - now
      if w < 1 then w = 1 end
      return w
    end
  end
  return window
end

local function push(z, a, s, id, at, amount, window)
  redis.call('ZADD', z, at, id)
  redis.call('HSET', a, id, amount)
  local sum = redis.call('INCRBY', s, amount)
  local keep = window + 60000
  redis.call('PEXPIRE', z, keep)
  redis.call('PEXPIRE', a, keep)
  redis.call('PEXPIRE', s, keep)
  return sum
end

local function held(hz, hs)
  local dead = redis.call('ZRANGEBYSCORE', hz, '-inf', now)
  for _, m in ipairs(dead) do redis.call('HDEL', hs, m) end
  if #dead > 0 then redis.call('ZREMRANGEBYSCORE', hz, '-inf', now) end
  local n = 0
  for _, v in ipairs(redis.call('HVALS', hs)) do n = n + tonumber(v) end
  return n
end
";

/// Reserve. KEYS: tok:z tok:a tok:s req:z req:a req:s held:z held:s pause seq.
/// ARGV: token limit, token window ms, request limit, request window ms, concurrency (each -1
/// when unlimited), asked tokens, requests, slots, lease ttl ms.
/// Returns {0, lease id, ...} granted or {1, wait ms or -1 for "after a release", ...}, followed
/// by the token sum, request sum and slots held after the decision.
const RESERVE: &str = r"
local tl, tw, rl, rw, cl = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local at, ar, as, ttl = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
local ts, rs, inflight = 0, 0, 0
if tl >= 0 then ts = purge(KEYS[1], KEYS[2], KEYS[3], tw) end
if rl >= 0 then rs = purge(KEYS[4], KEYS[5], KEYS[6], rw) end
if cl >= 0 then inflight = held(KEYS[7], KEYS[8]) end
local paused = tonumber(redis.call('GET', KEYS[9]) or '0')
if paused > now then return {1, paused - now, ts, rs, inflight} end
if cl >= 0 and inflight + as > cl then return {1, -1, ts, rs, inflight} end
if tl >= 0 and ts + at > tl then return {1, wait_for(KEYS[1], KEYS[2], ts, at, tl, tw), ts, rs, inflight} end
if rl >= 0 and rs + ar > rl then return {1, wait_for(KEYS[4], KEYS[5], rs, ar, rl, rw), ts, rs, inflight} end
local id = redis.call('INCR', KEYS[10])
redis.call('PEXPIRE', KEYS[10], 86400000)
if tl >= 0 and at > 0 then ts = push(KEYS[1], KEYS[2], KEYS[3], id, now, at, tw) end
if rl >= 0 and ar > 0 then rs = push(KEYS[4], KEYS[5], KEYS[6], id, now, ar, rw) end
if cl >= 0 and as > 0 then
  redis.call('ZADD', KEYS[7], now + ttl, id)
  redis.call('HSET', KEYS[8], id, as)
  inflight = inflight + as
end
return {0, id, ts, rs, inflight}
";

/// Settle a grant's tokens. KEYS: tok:z tok:a tok:s. ARGV: lease id, tokens used.
const SETTLE: &str = r"
local old = redis.call('HGET', KEYS[2], ARGV[1])
if not old then return 0 end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('INCRBY', KEYS[3], tonumber(ARGV[2]) - tonumber(old))
return 1
";

/// Release a holder. KEYS: held:z held:s. ARGV: lease id.
const RELEASE: &str = r"
redis.call('ZREM', KEYS[1], ARGV[1])
return redis.call('HDEL', KEYS[2], ARGV[1])
";

/// Extend the leases still held. KEYS: held:z. ARGV: ttl ms, lease ids…
const HEARTBEAT: &str = r"
local n = 0
for i = 2, #ARGV do
  n = n + redis.call('ZADD', KEYS[1], 'XX', 'CH', now + tonumber(ARGV[1]), ARGV[i])
end
return n
";

/// Pause the budget. KEYS: pause. ARGV: wait ms. A longer pause already set stays.
const PAUSE: &str = r"
local untl = now + tonumber(ARGV[1])
local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
if cur < untl then redis.call('SET', KEYS[1], untl, 'PX', tonumber(ARGV[1])) end
return 1
";

/// Book the difference when the provider has less room than the window says. KEYS: z a s seq.
/// ARGV: limit, window ms (period plus skew), period ms, remaining, reset ms.
const OBSERVE: &str = r"
local limit, window, per = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local remaining, reset = tonumber(ARGV[4]), tonumber(ARGV[5])
local sum = purge(KEYS[1], KEYS[2], KEYS[3], window)
local ours = limit - sum
if ours < 0 then ours = 0 end
if remaining >= ours then return 0 end
if reset > per then reset = per end
local id = 'p' .. redis.call('INCR', KEYS[4])
push(KEYS[1], KEYS[2], KEYS[3], id, now + reset - per, ours - remaining, window)
return ours - remaining
";

fn with_prelude(body: &str) -> Script {
    Script::new(&format!("{PRELUDE}\n{body}"))
}

/// The compiled scripts (each sent once per connection, then run by its SHA).
pub(super) struct Scripts {
    pub(super) reserve: Script,
    pub(super) settle: Script,
    pub(super) release: Script,
    pub(super) heartbeat: Script,
    pub(super) pause: Script,
    pub(super) observe: Script,
}

/// The scripts, built once per process.
pub(super) static SCRIPTS: LazyLock<Scripts> = LazyLock::new(|| Scripts {
    reserve: with_prelude(RESERVE),
    settle: Script::new(SETTLE),
    release: Script::new(RELEASE),
    heartbeat: with_prelude(HEARTBEAT),
    pause: with_prelude(PAUSE),
    observe: with_prelude(OBSERVE),
});

//! The server-side Lua scripts of [`super::RedisBudgets`]. Each runs atomically in Redis and reads
//! the clock with `TIME`, so every process judges buckets and leases by the same clock.
//!
//! Keys of one budget (`P` is the store's prefix and the budget name): `P:tok:b`/`P:req:b` (the
//! token and request buckets: hash of `level`, `at`, the refill factor `f` and its time `fat`,
//! the last throttle's end `tu`, a learned window `win` and the largest ask of the last window `big` (seen at `bigat`), kept an hour
//! after their last use),
//! `P:held:z` (sorted set of concurrency holders scored by lease expiry), `P:held:s` (hash
//! holder → slots), `P:pause` (pause end, ms) and `P:seq` (the lease id counter, kept a day
//! after its last use).
//!
//! The bucket arithmetic is [`crate::dispatch::bucket`]'s, in milliseconds, with the same
//! constants (formatted into the prelude from the Rust ones).

use std::sync::LazyLock;

use redis::Script;

use crate::dispatch::bucket::{
    ASSUMED_WINDOW, BURST_SHARE, FACTOR_FLOOR, FACTOR_RECOVERY, THROTTLE_DECREASE,
};

/// Shared helpers: the server clock, the buckets, the concurrency holders. A bucket is described
/// by three arguments: its rate per ms (`-1` when the axis is unlimited), its explicit burst in
/// ms (`-1` for the default) and the figure's amount (the capacity never exceeds it).
const PRELUDE: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local KEEP = 3600000

local function capacity(b)
  local function share(w) return SHARE * b.rho * w end
  local c
  if b.burst >= 0 and b.win == nil then c = b.rho * b.burst
  elseif b.burst >= 0 then c = math.min(b.rho * b.burst, share(b.win))
  else c = share(b.win or AWIN) end
  local growth = b.amount
  if b.win then growth = b.rho * b.win / 2 end
  c = math.max(c, math.min(b.big, growth))
  return math.min(c, b.amount)
end

local function factor(b)
  local f = b.f + REC * math.max(0, now - b.fat) / 1000
  if f > 1 then f = 1 end
  return f
end

local function refill(b)
  local paid = 0
  if b.win then paid = b.cap / b.win end
  local r = factor(b) * (b.rho - paid)
  if r < b.rho * 1e-6 then r = b.rho * 1e-6 end
  return r
end

local function advance(b)
  if now > b.at then
    b.level = math.min(b.cap, b.level + refill(b) * (now - b.at))
    b.at = now
  end
end

local function load(key, rho, burst, amount)
  local h = redis.call('HMGET', key, 'level', 'at', 'f', 'fat', 'tu', 'win', 'big', 'bigat')
  local b = {key = key, rho = rho, burst = burst, amount = amount}
  b.win = tonumber(h[6])
  if b.win == nil and burst < 0 then b.win = math.min(AWIN, amount / rho) end
  b.f = tonumber(h[3]) or 1
  b.fat = tonumber(h[4]) or now
  b.tu = tonumber(h[5]) or now
  b.big = tonumber(h[7]) or 0
  b.bigat = tonumber(h[8]) or now
  b.cap = capacity(b)
  b.level = tonumber(h[1])
  if b.level == nil then b.fresh = true; b.level = b.cap end
  b.at = tonumber(h[2]) or now
  advance(b)
  return b
end

local function save(b)
  redis.call('HSET', b.key, 'level', tostring(b.level), 'at', tostring(b.at), 'f', tostring(b.f),
    'fat', tostring(b.fat), 'tu', tostring(b.tu), 'big', tostring(b.big),
    'bigat', tostring(b.bigat))
  if b.win then redis.call('HSET', b.key, 'win', tostring(b.win)) end
  redis.call('PEXPIRE', b.key, KEEP)
end

-- nil when `need` fits now, else the wait in ms. A larger ask than any before grows the bucket.
local function check(b, need)
  if need >= b.big or now - b.bigat > (b.win or AWIN) then
    b.big = need
    b.bigat = now
    b.cap = capacity(b)
    if b.fresh then b.level = b.cap end
    b.level = math.min(b.level, b.cap)
    save(b)
  end
  local n = math.min(need, b.cap)
  if b.at <= now and b.level >= n then return nil end
  return math.max(0, b.at - now) + math.max(0, n - b.level) / refill(b)
end

local function headroom(b)
  if b == nil then return 1000000 end
  if b.at > now then return 0 end
  return math.floor(math.max(0, math.min(1, b.level / math.max(b.cap, 1e-9))) * 1000000)
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

/// Reserve. KEYS: tok:b req:b held:z held:s pause seq.
/// ARGV: the token bucket (rate per ms, burst ms, amount), the request bucket (the same three),
/// concurrency (-1 when unlimited), asked tokens, requests, slots, lease ttl ms.
/// Returns {0, lease id, ...} granted or {1, wait ms or -1 for "after a release", ...}, followed
/// by the token and request headroom (parts per million) and the slots held after the decision.
const RESERVE: &str = r"
local tr, tb, ta = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local rr, rb, ra = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local cl = tonumber(ARGV[7])
local at, ar, as, ttl = tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11])
local tok, req, inflight = nil, nil, 0
if tr >= 0 then tok = load(KEYS[1], tr, tb, ta) end
if rr >= 0 then req = load(KEYS[2], rr, rb, ra) end
if cl >= 0 then inflight = held(KEYS[3], KEYS[4]) end
local function answer(kind, value)
  return {kind, value, headroom(tok), headroom(req), inflight}
end
local paused = tonumber(redis.call('GET', KEYS[5]) or '0')
if paused > now then return answer(1, math.ceil(paused - now)) end
if cl >= 0 and inflight + as > cl then return answer(1, -1) end
local wait = nil
if tok then wait = check(tok, at) end
if req then
  local w = check(req, ar)
  if w and (wait == nil or w > wait) then wait = w end
end
if wait then return answer(1, math.max(1, math.ceil(wait))) end
local id = redis.call('INCR', KEYS[6])
redis.call('PEXPIRE', KEYS[6], 86400000)
if tok then tok.level = tok.level - at; save(tok) end
if req then req.level = req.level - ar; save(req) end
if cl >= 0 and as > 0 then
  redis.call('ZADD', KEYS[3], now + ttl, id)
  redis.call('HSET', KEYS[4], id, as)
  inflight = inflight + as
end
return answer(0, id)
";

/// Settle a grant's tokens. KEYS: tok:b. ARGV: the token bucket (three), reserved, used.
const SETTLE: &str = r"
local b = load(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]))
b.level = math.min(b.cap, b.level + tonumber(ARGV[4]) - tonumber(ARGV[5]))
save(b)
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

/// Pause the budget and empty its buckets until the pause ends. KEYS: pause tok:b req:b.
/// ARGV: wait ms, the token bucket (three), the request bucket (three). A longer pause already
/// set stays.
const PAUSE: &str = r"
local untl = now + tonumber(ARGV[1])
local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
if cur < untl then redis.call('SET', KEYS[1], math.ceil(untl), 'PX', tonumber(ARGV[1])) end
for i, key in ipairs({KEYS[2], KEYS[3]}) do
  local rho = tonumber(ARGV[3 * i - 1])
  if rho >= 0 then
    local b = load(key, rho, tonumber(ARGV[3 * i]), tonumber(ARGV[3 * i + 1]))
    b.level = math.min(b.level, 0)
    b.at = math.max(b.at, untl)
    if now >= b.tu then
      b.f = math.max(FLOOR, factor(b) * DEC)
      b.fat = now
    end
    b.tu = math.max(b.tu, untl)
    save(b)
  end
end
return 1
";

/// Learn from a provider's headers. KEYS: b. ARGV: the bucket (three), the stated limit and the
/// remaining count (each -1 when absent).
const OBSERVE: &str = r"
local b = load(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]))
local limit, remaining = tonumber(ARGV[4]), tonumber(ARGV[5])
if limit > 0 then
  local ours
  if b.win then ours = b.rho * b.win else ours = b.rho * b.burst end
  if limit < ours then
    b.win = math.max(1000, limit / b.rho)
    b.cap = capacity(b)
    b.level = math.min(b.level, b.cap)
  end
end
if remaining >= 0 then b.level = math.min(b.level, remaining) end
b.fresh = false
save(b)
return 1
";

/// The prelude's constants, from the Rust ones.
fn constants() -> String {
    format!(
        "local SHARE, DEC, FLOOR, REC, AWIN = {BURST_SHARE:?}, {THROTTLE_DECREASE:?}, \
         {FACTOR_FLOOR:?}, {FACTOR_RECOVERY:?}, {}\n",
        ASSUMED_WINDOW.as_millis()
    )
}

fn with_prelude(body: &str) -> Script {
    Script::new(&format!("{}{PRELUDE}\n{body}", constants()))
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
    settle: with_prelude(SETTLE),
    release: Script::new(RELEASE),
    heartbeat: with_prelude(HEARTBEAT),
    pause: with_prelude(PAUSE),
    observe: with_prelude(OBSERVE),
});

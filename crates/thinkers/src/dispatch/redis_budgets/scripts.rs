//! The server-side Lua scripts of [`super::RedisBudgets`]. Each runs atomically in Redis and reads
//! the clock with `TIME`, so every process judges buckets and leases by the same clock.
//!
//! Keys of one budget (`P` is the store's prefix and the budget name): `P:tok:b`, `P:in:b`,
//! `P:out:b`, `P:req:b` (the token, input-token, output-token and request axes: hash of the time they are paid up to `tat`, the provider's stated rate
//! `st`, the learned rate `lr` (since `lat`), the last throttle's end `tu`, the units let through
//! since `sat` (`since`), the room the provider last stated `rm` (at `rmat`, until `rmu`) and
//! the most it ever stated `wide`, whether it states a limit `heard`,
//! kept an hour after their last use),
//! `P:held:z` (sorted set of concurrency holders scored by lease expiry), `P:held:s` (hash
//! holder → slots), `P:pause` (pause end, ms) and `P:seq` (the lease id counter, kept a day
//! after its last use).
//!
//! The pacing arithmetic is [`crate::dispatch::bucket`]'s, in milliseconds, with the same
//! constants (formatted into the prelude from the Rust ones).

use std::sync::LazyLock;

use redis::Script;

use crate::dispatch::bucket::{
    ASSUMED_WINDOW, LARGEST_CUT, LONGEST_WINDOW, MAX_WAIT, MIN_WINDOW, RECOVERY, THROTTLE_DECREASE,
};

/// Shared helpers: the server clock, the paced axes, the concurrency holders. An axis is
/// described by three arguments: the catalog's rate per ms (`-1` when the catalog leaves the
/// axis out), its explicit burst in ms (`-1` for none) and the figure's amount.
const PRELUDE: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local KEEP = 3600000

-- nil for an axis neither the catalog nor the provider gave a rate.
local function load(key, rho, burst)
  local h = redis.call('HMGET', key, 'tat', 'st', 'lr', 'lat', 'tu', 'since', 'sat', 'rm', 'rmat', 'rmu', 'wide', 'heard')
  local b = {key = key, cat = rho, burst = burst}
  b.st = tonumber(h[2])
  if rho < 0 and b.st == nil then return nil end
  b.tat = tonumber(h[1]) or now
  b.lr = tonumber(h[3])
  b.lat = tonumber(h[4]) or now
  b.tu = tonumber(h[5]) or now
  b.since = tonumber(h[6]) or 0
  b.sat = tonumber(h[7]) or now
  b.rm = tonumber(h[8])
  b.rmat = tonumber(h[9]) or now
  b.rmu = tonumber(h[10]) or now
  b.wide = tonumber(h[11])
  b.heard = h[12] == '1'
  return b
end

local function save(b)
  redis.call('HSET', b.key, 'tat', tostring(b.tat), 'tu', tostring(b.tu),
    'since', tostring(b.since), 'sat', tostring(b.sat))
  if b.rm then
    redis.call('HSET', b.key, 'rm', tostring(b.rm), 'rmat', tostring(b.rmat), 'rmu', tostring(b.rmu))
  end
  if b.st then redis.call('HSET', b.key, 'st', tostring(b.st))
  else redis.call('HDEL', b.key, 'st') end
  if b.lr then redis.call('HSET', b.key, 'lr', tostring(b.lr), 'lat', tostring(b.lat)) end
  if b.wide then redis.call('HSET', b.key, 'wide', tostring(b.wide)) end
  if b.heard then redis.call('HSET', b.key, 'heard', '1') end
  redis.call('PEXPIRE', b.key, KEEP)
end

local function rate(b)
  local r = b.cat
  if r < 0 or (b.st and b.st < r) then r = b.st end
  if b.lr then r = math.min(r, b.lr * (1 + REC * math.max(0, now - b.lat) / 1000)) end
  return math.max(r, 1e-12)
end

local function tolerance(b)
  if b.burst > 0 then return b.burst end
  return 0
end

-- nil when the axis grants `n` now, else the wait in ms.
local function wait(b, n)
  local r = rate(b)
  local w = math.max(0, b.tat - math.max(0, tolerance(b) - n / r) - now)
  if b.rm and now < b.rmu then
    local have = b.rm + r * (now - b.rmat)
    if have < n then w = math.max(w, math.min((n - have) / r, b.rmu - now)) end
  end
  if w > 0 then return w end
  return nil
end

local function take(b, n)
  if b.tat < now then b.since = 0; b.sat = now end
  b.tat = math.max(b.tat, now) + math.min(n / rate(b), MAXW)
  b.since = b.since + n
  if b.rm then b.rm = b.rm - n end
end

local function window(b)
  if b.wide == nil then return AWIN end
  return math.max(MINW, math.min(LWIN, b.wide / rate(b)))
end

local function margin(b, n, used)
  if b.burst > 0 then return 0 end
  local share = rate(b) * window(b)
  if n < share then return n * used / (share - n) end
  return 0
end

local function headroom(b)
  if not b then return 1000000 end
  local ahead = math.max(0, b.tat - now)
  local span = math.max(tolerance(b), AWIN)
  local free = 1 - ahead / span
  if b.rm and now < b.rmu then
    local r = rate(b)
    free = math.min(free, (b.rm + r * (now - b.rmat)) / (r * span))
  end
  return math.floor(math.max(0, math.min(1, free)) * 1000000)
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

/// Reserve. KEYS: held:z held:s pause seq, then the axes' keys (tok:b in:b out:b req:b).
/// ARGV: concurrency (-1 when unlimited), slots, lease ttl ms, then per axis four: its rate per
/// ms, burst ms, amount (the axis's three) and the units asked.
/// Returns {0, lease id, ...} granted, {1, wait ms or -1 for "after a release", ...} or {2, the
/// pause's wait ms, ...},
/// followed by the slots held after the decision and each axis's headroom (parts per million).
const RESERVE: &str = r"
local cl, as, ttl = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local axes, asked = {}, {}
for i = 5, #KEYS do
  local a = 4 + 4 * (i - 5)
  axes[i - 4] = load(KEYS[i], tonumber(ARGV[a]), tonumber(ARGV[a + 1])) or false
  asked[i - 4] = tonumber(ARGV[a + 3])
end
local inflight = 0
if cl >= 0 then inflight = held(KEYS[1], KEYS[2]) end
local function answer(kind, value)
  local out = {kind, value, inflight}
  for i = 1, #axes do out[#out + 1] = headroom(axes[i] or nil) end
  return out
end
local paused = tonumber(redis.call('GET', KEYS[3]) or '0')
if paused > now then return answer(2, math.ceil(paused - now)) end
if cl >= 0 and inflight + as > cl then return answer(1, -1) end
local w = nil
for i = 1, #axes do
  if axes[i] then
    local wi = wait(axes[i], asked[i])
    if wi and (w == nil or wi > w) then w = wi end
  end
end
if w then return answer(1, math.max(1, math.ceil(w))) end
local id = redis.call('INCR', KEYS[4])
redis.call('PEXPIRE', KEYS[4], 86400000)
for i = 1, #axes do
  if axes[i] then take(axes[i], asked[i]); save(axes[i]) end
end
if cl >= 0 and as > 0 then
  redis.call('ZADD', KEYS[1], now + ttl, id)
  redis.call('HSET', KEYS[2], id, as)
  inflight = inflight + as
end
return answer(0, id)
";

/// Settle a grant's tokens on each token axis. KEYS: the axes' keys. ARGV: per axis five: the
/// axis's three, reserved, used.
const SETTLE: &str = r"
for i = 1, #KEYS do
  local a = 5 * (i - 1)
  local b = load(KEYS[i], tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]))
  if b then
    local reserved, used = tonumber(ARGV[a + 4]), tonumber(ARGV[a + 5])
    local owed = used + margin(b, reserved, used) - reserved
    if owed > 0 then b.tat = math.max(b.tat, now) + math.min(owed / rate(b), MAXW)
    else b.tat = math.max(b.tat + owed / rate(b), now) end
    b.since = math.max(0, b.since + used - reserved)
    if b.rm then b.rm = b.rm + reserved - used end
    save(b)
  end
end
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

/// Pause the budget and hold its axes until the pause ends; an axis that was sending at its
/// rate learns the rate (once per pause). KEYS: pause, then the axes' keys. ARGV: wait ms, then
/// each axis's three. A longer pause already set stays.
const PAUSE: &str = r"
local untl = now + math.min(tonumber(ARGV[1]), MAXW)
local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
if cur < untl then redis.call('SET', KEYS[1], math.ceil(untl), 'PX', math.ceil(untl - now)) end
for i = 2, #KEYS do
  local b = load(KEYS[i], tonumber(ARGV[3 * i - 4]), tonumber(ARGV[3 * i - 3]))
  if b then
    local busy = b.tat >= now
    b.tat = math.max(b.tat, untl)
    if busy and now >= b.tu then
      local before = rate(b)
      local through = before
      if untl > b.sat then through = b.since / (untl - b.sat) end
      local learned = before * DEC
      if through < before and not b.heard then learned = through end
      b.lr = math.max(learned, before * CUT)
      b.lat = now
      b.since = 0
      b.sat = now
    end
    b.tu = math.max(b.tu, untl)
    save(b)
  end
end
return 1
";

/// Learn from a provider's headers. KEYS: b. ARGV: the axis (three), the stated per-minute
/// limit, the remaining count and the reset in ms (each -1 when absent).
const OBSERVE: &str = r"
local limit, remaining, reset = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local b = load(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]))
if b == nil then
  if limit <= 0 then return 0 end
  b = {key = KEYS[1], cat = -1, burst = -1, tat = now, tu = now, since = 0, sat = now}
end
if limit > 0 then
  b.heard = true
  local st = limit / 60000
  if b.cat < 0 or st < b.cat then b.st = st else b.st = nil end
end
if remaining >= 0 then
  b.wide = math.max(b.wide or 0, remaining)
end
if remaining >= 0 and b.tat <= now then
  b.rm = remaining
  b.rmat = now
  if reset >= 0 then b.rmu = now + math.min(reset, MAXW) else b.rmu = now + AWIN end
end
save(b)
return 1
";

/// The prelude's constants, from the Rust ones.
fn constants() -> String {
    format!(
        "local DEC, CUT, REC, AWIN, MINW, LWIN, MAXW = {THROTTLE_DECREASE:?}, {LARGEST_CUT:?}, \
         {RECOVERY:?}, {}, {}, {}, {}\n",
        ASSUMED_WINDOW.as_millis(),
        MIN_WINDOW.as_millis(),
        LONGEST_WINDOW.as_millis(),
        MAX_WAIT.as_millis()
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

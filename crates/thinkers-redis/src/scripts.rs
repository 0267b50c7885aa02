//! The server-side Lua scripts of [`super::RedisBudgets`]. Each runs atomically in Redis and reads
//! the clock with `TIME`, so every process judges buckets and leases by the same clock.
//!
//! Keys of one budget (`P` is the store's prefix and the budget name): `P:tok:b`, `P:in:b`,
//! `P:out:b`, `P:req:b` (the token, input-token, output-token and request axes: hash of the time
//! they are paid up to `tat`, the provider's stated rate `st`, the learned rate `lr` (since
//! `lat`), the last throttle's end `tu`, the units let through since `sat` (`since`), the room
//! the provider last stated `rm` (at `rmat`, until `rmu`) and the most it ever stated `wide`, the
//! longest reset it stated `lrst`, whether it states a limit `heard`, and, on a token axis, the
//! smoothed share of a reservation grants use `us`, the quickest answer `qk` and the least reset
//! plus age of the latest grant older than it `rch`; on the token axis's hash, while no axis paces
//! the budget, the requests `ur` and tokens `ut` that went through since its first grant `uat`,
//! and `uun`, the end of the pause of the throttle that paced its tokens on them; kept an hour
//! after their last use), the token axes' ledgers `…:b:l` (sorted set of lease ids scored by
//! grant time), `…:b:c` (hash lease id → what the provider counts for it now), `…:b:p` (hash
//! lease id → what the pacing charged it), `…:b:t` (hash lease id → when it settled) and `…:b:x`
//! (hash lease id → how much more than its reservation the provider counted, as a share of it),
//! named from their axis's key inside the script (one hash tag, so one slot), `P:held:z` (sorted
//! set of concurrency holders scored by lease expiry), `P:held:s` (hash holder → slots),
//! `P:pause` (pause end, ms) and `P:seq` (the lease id counter, kept a day after its last use).
//!
//! The pacing arithmetic is [`thinkers::dispatch::bucket`]'s, in milliseconds, with the same
//! constants (formatted into the prelude from the Rust ones).

use std::sync::LazyLock;

use redis::Script;

use thinkers::dispatch::bucket::{
    ASSUMED_WINDOW, LARGEST_CUT, LONGEST_WINDOW, MAX_WAIT, MIN_WINDOW, RECOVERY, THROTTLE_DECREASE,
    USE_SMOOTHING,
};

/// Shared helpers: the server clock, the paced axes, the concurrency holders. An axis is
/// described by three arguments: the catalog's rate per ms (`-1` when the catalog leaves the
/// axis out), its explicit burst in ms (`-1` for none) and the figure's amount.
const PRELUDE: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local KEEP = 3600000

-- nil for an axis neither the catalog nor the provider gave a rate, nor a throttle taught one.
local function load(key, rho, burst)
  local h = redis.call('HMGET', key, 'tat', 'st', 'lr', 'lat', 'tu', 'since', 'sat', 'rm', 'rmat', 'rmu', 'wide', 'heard', 'lrst', 'us', 'rch', 'qk')
  local b = {key = key, cat = rho, burst = burst, tok = string.sub(key, -6) ~= ':req:b' and burst <= 0}
  b.st = tonumber(h[2])
  b.lr = tonumber(h[3])
  if rho < 0 and b.st == nil and b.lr == nil then return nil end
  b.tat = tonumber(h[1]) or now
  b.lat = tonumber(h[4]) or now
  b.tu = tonumber(h[5]) or now
  b.since = tonumber(h[6]) or 0
  b.sat = tonumber(h[7]) or now
  b.rm = tonumber(h[8])
  b.rmat = tonumber(h[9]) or now
  b.rmu = tonumber(h[10]) or now
  b.wide = tonumber(h[11])
  b.heard = h[12] == '1'
  b.lrst = tonumber(h[13])
  b.us = tonumber(h[14])
  b.rch = tonumber(h[15])
  b.qk = tonumber(h[16])
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
  if b.lrst then redis.call('HSET', b.key, 'lrst', tostring(b.lrst)) end
  if b.us then redis.call('HSET', b.key, 'us', tostring(b.us)) end
  if b.rch then redis.call('HSET', b.key, 'rch', tostring(b.rch)) end
  if b.qk then redis.call('HSET', b.key, 'qk', tostring(b.qk)) end
  redis.call('PEXPIRE', b.key, KEEP)
  if b.tok then
    for _, part in ipairs({':l', ':c', ':p', ':t', ':x'}) do redis.call('PEXPIRE', b.key .. part, KEEP) end
  end
end

local function rate(b)
  local r = math.huge
  if b.cat >= 0 then r = b.cat end
  if b.st and b.st < r then r = b.st end
  if b.lr then r = math.min(r, b.lr * (1 + REC * math.max(0, now - b.lat) / 1000)) end
  return math.max(r, 1e-12)
end

local function tolerance(b)
  if b.burst > 0 then return b.burst end
  return 0
end

-- The window whose share of the rate the ledger holds, in ms.
local function window(b)
  local w = nil
  if b.wide then w = b.wide / rate(b) end
  if b.lrst then w = math.max(w or 0, b.lrst) end
  if w == nil then
    if b.us == nil then w = MINW else w = AWIN end
  else w = math.max(MINW, math.min(LWIN, w)) end
  return math.max(w, tolerance(b))
end

-- How long the ledger counts a grant, in ms.
local function span(b)
  local w = window(b)
  if b.rch then return math.max(w, math.min(b.rch, math.max(LWIN, w))) end
  return w
end

-- Drop from the ledger the grants no window holds any more (kept a longest window whatever the
-- window, in chunks: a long idle leaves many).
local function expire(b)
  local cut = now - math.max(span(b), LWIN)
  local l = b.key .. ':l'
  while true do
    local gone = redis.call('ZRANGEBYSCORE', l, '-inf', cut, 'LIMIT', 0, 500)
    if #gone == 0 then break end
    for _, part in ipairs({':c', ':p', ':t', ':x'}) do redis.call('HDEL', b.key .. part, unpack(gone)) end
    redis.call('ZREM', l, unpack(gone))
  end
end

-- The most the provider counted beyond our reservation for a grant in the ledger, as a share of
-- the reservation.
local function shortfall(b)
  local worst = 0
  for _, v in ipairs(redis.call('HVALS', b.key .. ':x')) do worst = math.max(worst, tonumber(v) or 0) end
  return worst
end

-- The ledger's grants arrived after `from` (ms), oldest first: what the provider counts for
-- them, and when each settled (false while out).
local function grants(b, from)
  local counts, settled = {}, {}
  local off = 0
  while true do
    local ids = redis.call('ZRANGEBYSCORE', b.key .. ':l', '(' .. tostring(from), '+inf', 'LIMIT', off, 500)
    if #ids == 0 then break end
    for _, v in ipairs(redis.call('HMGET', b.key .. ':c', unpack(ids))) do counts[#counts + 1] = tonumber(v) or 0 end
    for _, v in ipairs(redis.call('HMGET', b.key .. ':t', unpack(ids))) do settled[#settled + 1] = tonumber(v) or false end
    off = off + 500
  end
  return counts, settled
end

-- The grants the provider's window may still hold: what it counts for each (one still out at the
-- shortfall) and when it surely dropped it (false while out: a window after its answer). Read
-- once per script run (a grant made after adds itself).
local function weights(b)
  if b.w then return b.w, b.lv, b.sc end
  local sp = span(b)
  local counts, settled = grants(b, -1)
  local scale = 1 + shortfall(b)
  local w, leaves = {}, {}
  for i = 1, #counts do
    if not settled[i] then
      w[#w + 1] = counts[i] * scale; leaves[#leaves + 1] = false
    elseif settled[i] + sp > now then
      w[#w + 1] = counts[i]; leaves[#leaves + 1] = settled[i] + sp
    end
  end
  b.w, b.lv, b.sc = w, leaves, scale
  return w, leaves, scale
end

local function lheld(b)
  local w = weights(b)
  local h = 0
  for _, v in ipairs(w) do h = h + v end
  return h
end

-- nil when the ledger has room for `n` now, else the wait in ms until enough of its settled grants
-- leave the window (a window when only grants still out stand in the way).
local function lwait(b, n)
  local share = rate(b) * window(b)
  local w, leaves, scale = weights(b)
  local need = n * scale
  local h = 0
  for _, v in ipairs(w) do h = h + v end
  local function fits(x) return x < 0.5 or x + need <= share end
  if fits(h) then return nil end
  local order = {}
  for i = 1, #w do if leaves[i] then order[#order + 1] = i end end
  table.sort(order, function(x, y) return leaves[x] < leaves[y] end)
  for _, i in ipairs(order) do
    h = h - w[i]
    if fits(h) then return math.max(0.001, leaves[i] - now) end
  end
  return span(b)
end

-- nil when the axis grants `n` now, else the wait in ms.
local function wait(b, n)
  local r = rate(b)
  local w = math.max(0, b.tat - math.max(0, tolerance(b) - n / r) - now)
  if b.rm and now < b.rmu then
    local have = b.rm + r * (now - b.rmat)
    if have < n then w = math.max(w, math.min((n - have) / r, b.rmu - now)) end
  end
  if b.tok then
    expire(b)
    local lw = lwait(b, n)
    if lw then w = math.max(w, lw) end
  end
  if w > 0 then return w end
  return nil
end

local function take(b, n, id)
  local paced = n
  if b.tok then paced = n * (b.us or 1) end
  local step = math.min(paced / rate(b), MAXW)
  local bank = 0
  if b.tok then bank = step end
  local from = math.max(b.tat, now - bank)
  if b.tat < now - step then b.since = 0; b.sat = now end
  if b.tok then
    redis.call('ZADD', b.key .. ':l', now, id)
    redis.call('HSET', b.key .. ':c', id, n)
    redis.call('HSET', b.key .. ':p', id, tostring(paced))
    if b.w then b.w[#b.w + 1] = n * b.sc; b.lv[#b.lv + 1] = false end
  end
  b.tat = from + step
  b.since = b.since + n
  if b.rm then b.rm = b.rm - n end
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
  if b.tok then free = math.min(free, 1 - lheld(b) / (rate(b) * window(b))) end
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
local paced = false
for i = 1, #axes do
  if axes[i] then take(axes[i], asked[i], id); save(axes[i]); paced = true end
end
if not paced then
  -- No axis paces the budget: count what goes through (on the token axis's hash) until a
  -- throttle paces it.
  redis.call('HSETNX', KEYS[5], 'uat', tostring(now))
  redis.call('HINCRBY', KEYS[5], 'ur', 1)
  redis.call('HINCRBYFLOAT', KEYS[5], 'ut', asked[1])
  redis.call('PEXPIRE', KEYS[5], KEEP)
end
if cl >= 0 and as > 0 then
  redis.call('ZADD', KEYS[1], now + ttl, id)
  redis.call('HSET', KEYS[2], id, as)
  inflight = inflight + as
end
return answer(0, id)
";

/// Settle a grant's tokens on each token axis. KEYS: the axes' keys. ARGV: the lease id, then per
/// axis six: the axis's three, reserved, used, and how much more than reserved the provider
/// counted on arrival.
const SETTLE: &str = r"
local id = ARGV[1]
-- A budget no axis paced counts what goes through on its token axis's hash: a finished call at
-- its use. Once a throttle paced its tokens on that count (until the pause ends, `uun`), a call
-- of the refused burst that comes back refused (it used nothing) was never counted: the rate
-- learned leaves it out.
local uat = tonumber(redis.call('HGET', KEYS[1], 'uat') or '')
if uat then
  local reserved, used = tonumber(ARGV[5]), tonumber(ARGV[6])
  local uun = tonumber(redis.call('HGET', KEYS[1], 'uun') or '')
  if not uun then
    local left = tonumber(redis.call('HINCRBYFLOAT', KEYS[1], 'ut', used - reserved))
    if left < 0 then redis.call('HSET', KEYS[1], 'ut', '0') end
  elseif now >= uun then
    redis.call('HDEL', KEYS[1], 'uat', 'ur', 'ut', 'uun')
  elseif used == 0 then
    local left = math.max(0, tonumber(redis.call('HINCRBYFLOAT', KEYS[1], 'ut', -reserved)))
    redis.call('HSET', KEYS[1], 'ut', tostring(left),
      'lr', tostring(math.max(left / math.max(1, uun - uat) * DEC, 1e-12)))
  end
end
for i = 1, #KEYS do
  local a = 1 + 6 * (i - 1)
  local b = load(KEYS[i], tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]))
  if b then
    local reserved, used, short = tonumber(ARGV[a + 4]), tonumber(ARGV[a + 5]), tonumber(ARGV[a + 6])
    local paced = reserved
    if b.tok then paced = reserved * (b.us or 1) end
    local counted = tonumber(redis.call('HGET', b.key .. ':c', id))
    if counted then
      redis.call('HSET', b.key .. ':c', id, used)
      redis.call('HSET', b.key .. ':t', id, tostring(now))
      if short > 0 then redis.call('HSET', b.key .. ':x', id, tostring(short / math.max(1, reserved))) end
      local took = now - tonumber(redis.call('ZSCORE', b.key .. ':l', id) or now)
      if b.qk == nil or took < b.qk then b.qk = took end
      paced = tonumber(redis.call('HGET', b.key .. ':p', id)) or paced
    end
    if b.tok and used > 0 and reserved > 0 then
      local sh = math.min(1, used / reserved)
      if b.us then b.us = b.us + (sh - b.us) * SMOOTH else b.us = sh end
    end
    local owed = used - paced
    local floor = now
    if b.tok and counted then floor = now - paced / rate(b) end
    if owed > 0 then b.tat = math.max(b.tat, floor) + math.min(owed / rate(b), MAXW)
    else b.tat = math.max(b.tat + owed / rate(b), floor) end
    b.since = math.max(0, b.since + used - reserved)
    if b.rm then b.rm = b.rm + reserved - used end
    save(b)
  end
end
return 1
";

/// Release a lease. KEYS: held:z held:s, then the token axes' keys. ARGV: lease id. A grant it
/// never settled counts whole for a window from now.
const RELEASE: &str = r"
for i = 3, #KEYS do
  if redis.call('HEXISTS', KEYS[i] .. ':c', ARGV[1]) == 1 and redis.call('HEXISTS', KEYS[i] .. ':t', ARGV[1]) == 0 then
    redis.call('HSET', KEYS[i] .. ':t', ARGV[1], tostring(now))
  end
end
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
local paced = false
for i = 2, #KEYS do
  local b = load(KEYS[i], tonumber(ARGV[3 * i - 4]), tonumber(ARGV[3 * i - 3]))
  if b then
    paced = true
    local busy = b.tat >= now
    b.tat = math.max(b.tat, untl)
    if busy and now >= b.tu then
      local before = rate(b)
      local through = before
      if untl > b.sat then through = b.since / (untl - b.sat) end
      local basis = before
      if through < before and not b.heard then basis = through end
      b.lr = math.max(basis * DEC, before * CUT)
      b.lat = now
    end
    if untl > b.sat then b.since = 0; b.sat = untl end
    b.tu = math.max(b.tu, untl)
    save(b)
  end
end
local sat = tonumber(redis.call('HGET', KEYS[2], 'uat') or '')
if sat and redis.call('HEXISTS', KEYS[2], 'uun') == 0 then
  if paced then
    redis.call('HDEL', KEYS[2], 'uat', 'ur', 'ut')
  else
    -- No axis paced the budget: what went through since its first grant, over that time and
    -- the wait, paces it from now on (tokens where the grants carried them, else requests).
    local ut = tonumber(redis.call('HGET', KEYS[2], 'ut') or '0') or 0
    local ur = tonumber(redis.call('HGET', KEYS[2], 'ur') or '0') or 0
    local span = math.max(1, untl - sat)
    local key, lr = KEYS[2], ut / span
    if ut < 1 then key, lr = KEYS[5], ur / span end
    redis.call('HSET', key, 'lr', tostring(math.max(lr * DEC, 1e-12)), 'lat', tostring(now),
      'tat', tostring(untl), 'tu', tostring(untl), 'since', '0', 'sat', tostring(untl))
    redis.call('PEXPIRE', key, KEEP)
    if ut < 1 then redis.call('HDEL', KEYS[2], 'uat', 'ur', 'ut')
    else redis.call('HSET', KEYS[2], 'uun', tostring(untl)) end
  end
end
return 1
";

/// Learn from a provider's headers. KEYS: b. ARGV: the axis (three), the stated per-minute
/// limit, the remaining count and the reset in ms (each -1 when absent), and how much later than
/// stated the reset may be (ms, its precision).
const OBSERVE: &str = r"
local limit, remaining, reset = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local slack = tonumber(ARGV[7]) or 0
local b = load(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]))
if b == nil then
  if limit <= 0 then return 0 end
  b = {key = KEYS[1], cat = -1, burst = -1, tat = now, tu = now, since = 0, sat = now,
    tok = string.sub(KEYS[1], -6) ~= ':req:b'}
end
if limit > 0 then
  b.heard = true
  local st = limit / 60000
  if b.cat < 0 or st < b.cat then b.st = st else b.st = nil end
end
if remaining >= 0 then
  b.wide = math.max(b.wide or 0, remaining)
end
if reset >= 0 then
  b.lrst = math.max(b.lrst or 0, math.min(reset, MAXW))
  local last = nil
  if b.qk then
    local older = redis.call('ZREVRANGEBYSCORE', KEYS[1] .. ':l', now - b.qk, '-inf', 'WITHSCORES', 'LIMIT', 0, 16)
    for i = 1, #older, 2 do
      if string.sub(older[i], 1, 7) ~= 'unseen:' then last = tonumber(older[i + 1]); break end
    end
  end
  if last and reset > 0 then
    local reach = math.min(reset, MAXW) + slack + math.max(0, now - last)
    if b.rch == nil or reach < b.rch then b.rch = reach end
  end
end
if remaining >= 0 and b.tok then
  -- What the provider holds beyond what the ledger counts is counted as charged now.
  expire(b)
  local ours = grants(b, now - window(b))
  local held = 0
  for _, v in ipairs(ours) do held = held + v end
  local unseen = math.floor(rate(b) * window(b) - held - remaining)
  if unseen >= 1 then
    local member = 'unseen:' .. tostring(now)
    redis.call('ZADD', b.key .. ':l', now, member)
    redis.call('HSET', b.key .. ':c', member, unseen)
    redis.call('HSET', b.key .. ':p', member, '0')
    redis.call('HSET', b.key .. ':t', member, tostring(now))
  end
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
        "local DEC, CUT, REC, SMOOTH, AWIN, MINW, LWIN, MAXW = {THROTTLE_DECREASE:?}, \
         {LARGEST_CUT:?}, {RECOVERY:?}, {USE_SMOOTHING:?}, {}, {}, {}, {}\n",
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
    release: with_prelude(RELEASE),
    heartbeat: with_prelude(HEARTBEAT),
    pause: with_prelude(PAUSE),
    observe: with_prelude(OBSERVE),
});

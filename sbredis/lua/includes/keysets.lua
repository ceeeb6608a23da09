--[[
  keysets: further partition-shaped key sets passed after the first 24 keys, all under the first
  key's hash tag (a topic partition's subscriptions, a partition's transfer queue; see
  sbredis/_core/keys.py). Needs includes/partition.lua first.

  keyset(i) names the i-th further set (i >= 1): KEYS[24 * i + 1 .. 24 * i + 24], in the order of
  keys.PARTITION_KEY_NAMES, as a table
    {cfg, st, sched, exp, dd, m = <main group>, d = <dead-letter group>, ses = <sessions>}
  whose groups have the fields of includes/partition.lua's MAIN and DLQ (log ready locked lk dc
  deferred, main) and ses those of SES (includes/sessions.lua). keyset_count() is how many further sets were passed.
]]
local function keyset(i)
  local b = 24 * i
  return {cfg = KEYS[b + 1], st = KEYS[b + 2], sched = KEYS[b + 9], exp = KEYS[b + 10], dd = KEYS[b + 11],
          m = {log = KEYS[b + 3], ready = KEYS[b + 4], locked = KEYS[b + 5], lk = KEYS[b + 6],
               dc = KEYS[b + 7], deferred = KEYS[b + 8], main = true},
          d = {log = KEYS[b + 12], ready = KEYS[b + 13], locked = KEYS[b + 14], lk = KEYS[b + 15],
               dc = KEYS[b + 16], deferred = KEYS[b + 17], main = false},
          ses = {sr = KEYS[b + 18], sa = KEYS[b + 19], sl = KEYS[b + 20], sx = KEYS[b + 21],
                 sk = KEYS[b + 22], ss = KEYS[b + 23], su = KEYS[b + 24]}}
end

-- The key passed after the first 24 and `sets` further sets (nil when none was): a subscription's
-- forward_out passes its topic partition's fan-out journal there.
local function key_after(sets)
  local b = 24 * (sets + 1)
  return KEYS[b + 1]
end

local function keyset_count()
  return math.floor(#KEYS / 24) - 1
end

-- A log entry's field value by name (nil when absent); f is the flat list {'b', blob, 'e', ...}.
local function field_of(f, name)
  for i = 1, #f, 2 do
    if f[i] == name then return f[i + 1] end
  end
  return nil
end

--[[
  fansets: the subscription key sets of a publish, passed after the topic partition's 24 keys and
  its fan-out journal (KEYS[25]), all under its hash tag: only the 10 keys a fan-out writes per
  subscription (keys.FAN_KEY_NAMES), not all 24 of includes/keysets.lua. Needs includes/partition.lua first.

  fanset(i) names the i-th set (i >= 1): KEYS[25 + 10 * (i - 1) + 1 .. + 10], in the order of
  keys.FAN_KEY_NAMES, as a table {cfg, st, sched, exp, m = {log}, d = {log, ready},
  ses = {sr, sa, sl}} shaped as a part of keyset(i). fanset_count() is how many sets were passed.
  A read-only check passes only cfg and st of each subscription: checkset(i), checkset_count().
]]
local function fanset(i)
  local b = 25 + 10 * (i - 1)
  return {cfg = KEYS[b + 1], st = KEYS[b + 2], sched = KEYS[b + 4], exp = KEYS[b + 5],
          m = {log = KEYS[b + 3]}, d = {log = KEYS[b + 6], ready = KEYS[b + 7]},
          ses = {sr = KEYS[b + 8], sa = KEYS[b + 9], sl = KEYS[b + 10]}}
end

local function fanset_count()
  return (#KEYS - 25) / 10
end

-- a read-only check passes 2 keys a set, cfg and st (keys.CHECK_KEY_NAMES): checkset(i) and
-- checkset_count() as fanset's
local function checkset(i)
  local b = 25 + 2 * (i - 1)
  return {cfg = KEYS[b + 1], st = KEYS[b + 2]}
end

local function checkset_count()
  return (#KEYS - 25) / 2
end

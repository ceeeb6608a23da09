--[[
  renew: extend the locks the caller holds by the entity's lock duration, from now.
  KEYS: the partition's 23 keys (includes/partition.lua)
  ARGV[1] group 'm' | 'd'   ARGV[2] n   then n pairs: seq, lock nonce
  Returns: {now_ms, locked_until_ms_1, ..., locked_until_ms_n}   0: lock lost
  Errors:  NOTFOUND  DISABLED
]]
--@include partition
--@include messages
--@include settle
local cfg = load_cfg()
local bad = check_receive(cfg)
if bad then return bad end
local G = group_of(ARGV[1])
local n = tonumber(ARGV[2])
local now = now_ms()
local untl = now + cfg.lock_ms
local seqs, recs = held_all(G, n, 3, now)
renew_held(G, seqs, recs, untl)
local out = {now}
for i = 1, n do
  if recs[i] then out[i + 1] = untl else out[i + 1] = 0 end
end
touch(now)
return out

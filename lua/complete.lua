--[[
  complete: remove messages whose locks the caller holds. Messages whose lock is lost are left as
  they are and reported.
  KEYS: the partition's 23 keys (includes/partition.lua)
  ARGV[1] group 'm' | 'd'   ARGV[2] n   then n pairs: seq, lock nonce
  Returns: {status_1, ..., status_n}   0 completed, 1 lock lost (unknown, elapsed or not ours)
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
local seqs, recs = held_all(G, n, 3, now)
complete_held(G, seqs, recs)
local out = {}
for i = 1, n do
  if recs[i] then out[i] = 0 else out[i] = 1 end
end
touch(now)
return out

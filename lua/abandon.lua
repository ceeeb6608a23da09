--[[
  abandon: release locks at once; each message goes back to the front of its place (ready, or
  deferred when it was received as deferred), or to the dead-letter group after max_dc
  deliveries, or expires when its TTL passed while it was locked.
  KEYS: the partition's 23 keys (includes/partition.lua)
  ARGV[1] group 'm' | 'd'   ARGV[2] n   then n pairs: seq, lock nonce
  ARGV[3 + 2n] '1': release without counting the delivery (messages never handed to a user)
  Returns: {status_1, ..., status_n}   0 released, 1 lock lost
  Errors:  NOTFOUND  DISABLED
]]
--@include partition
--@include messages
local cfg = load_cfg()
local bad = check_receive(cfg)
if bad then return bad end
local G = group_of(ARGV[1])
local n = tonumber(ARGV[2])
local undo = ARGV[3 + 2 * n] == '1'
local now = now_ms()
local seqs, recs = held_all(G, n, 3, now)
local out = {}
for i = 1, n do
  local seq, rec = seqs[i], recs[i]
  if rec then
    release(G, cfg, seq, rec, now, undo)
    out[i] = 0
  else
    out[i] = 1
  end
end
touch(now)
return out

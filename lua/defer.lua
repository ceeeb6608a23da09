--[[
  defer: set locked messages aside; only receive_deferred returns them again.
  KEYS: the partition's 17 keys (includes/partition.lua)
  ARGV[1] group 'm' | 'd'   ARGV[2] n   then n pairs: seq, lock nonce
  Returns: {status_1, ..., status_n}   0 deferred, 1 lock lost
  Errors:  NOTFOUND  DISABLED
]]
--@include partition
--@include messages
local cfg = load_cfg()
local bad = check_receive(cfg)
if bad then return bad end
local G = group_of(ARGV[1])
local n = tonumber(ARGV[2])
local now = now_ms()
local seqs, recs = held_all(G, n, 3, now)
local out = {}
for i = 1, n do
  local seq, rec = seqs[i], recs[i]
  if rec then
    local _, _, x, _, dc = parse_lock(rec)
    redis.call('HSET', G.dc, seq, dc)
    redis.call('HDEL', G.lk, seq)
    redis.call('ZREM', G.locked, seq)
    redis.call('ZADD', G.deferred, seq, seq)
    if G.main and x > 0 then redis.call('ZADD', K_EXP, x, seq) end
    out[i] = 0
  else
    out[i] = 1
  end
end
touch(now)
return out

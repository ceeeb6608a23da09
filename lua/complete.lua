--[[
  complete: remove messages whose locks the caller holds. Messages whose lock is lost are left as
  they are and reported.
  KEYS: the partition's 17 keys (includes/partition.lua)
  ARGV[1] group 'm' | 'd'   ARGV[2] n   then n pairs: seq, lock nonce
  Returns: {status_1, ..., status_n}   0 completed, 1 lock lost (unknown, elapsed or not ours)
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
local out, done, counted = {}, {}, {}
local size = 0
for i = 1, n do
  local seq, rec = seqs[i], recs[i]
  if rec then
    local _, _, _, sz, dc = parse_lock(rec)
    size = size + sz
    done[#done + 1] = seq
    if dc > 1 then counted[#counted + 1] = seq end
    out[i] = 0
  else
    out[i] = 1
  end
end
if #done > 0 then
  call_many('XDEL', G.log, done)
  call_many('HDEL', G.lk, done)
  call_many('ZREM', G.locked, done)
  if #counted > 0 then call_many('HDEL', G.dc, counted) end
  redis.call('HINCRBY', K_ST, 'size', -size)
end
touch(now)
return out

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
local out, done = {}, {}
local size = 0
for i = 1, n do
  local seq = ARGV[1 + 2 * i]
  local rec = held(G, seq, ARGV[2 + 2 * i], now)
  if rec then
    local _, _, _, sz = parse_lock(rec)
    size = size + sz
    done[#done + 1] = seq
    out[i] = 0
  else
    out[i] = 1
  end
end
if #done > 0 then
  call_many('XDEL', G.log, done)
  call_many('HDEL', G.lk, done)
  call_many('ZREM', G.locked, done)
  call_many('HDEL', G.dc, done)
  redis.call('HINCRBY', K_ST, 'size', -size)
end
touch(now)
return out

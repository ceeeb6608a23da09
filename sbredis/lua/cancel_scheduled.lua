--[[
  cancel_scheduled: remove scheduled messages before they are enqueued, all or none. A message
  whose time has come (by the server clock) is enqueued, even before a receive moves it to ready.
  KEYS: the partition's 24 keys (includes/partition.lua)
  ARGV[1] n   ARGV[2..n+1] sequence numbers (partition-local)
  Returns: n
  Errors:  NOTFOUND  NOMSG (a sequence number is not a pending scheduled message; nothing removed)
]]
--@include partition
--@include messages
local cfg = load_cfg()
if not cfg then return fail('NOTFOUND') end
local n = tonumber(ARGV[1])
local now = now_ms()
for i = 2, n + 1 do
  local at = redis.call('ZSCORE', K_SCHED, ARGV[i])
  if not at or tonumber(at) <= now then return fail('NOMSG') end
end
for i = 2, n + 1 do
  local seq = ARGV[i]
  local f = entry(MAIN, seq)
  redis.call('ZREM', K_SCHED, seq)
  redis.call('ZREM', K_EXP, seq)
  if f then drop(MAIN, seq, #f[2]) end
end
touch(now)
return n

--[[
  probe: how many messages one receive could take from this partition now (available, due
  scheduled, elapsed locks; for the dead-letter group also main-queue messages whose TTL or lock
  has passed, which its receive sweeps over), read-only; a receive over many partitions asks this
  before it locks.
  KEYS: the partition's 24 keys (includes/partition.lua)
  ARGV[1] group 'm' | 'd'
  Returns: count (0 when the entity is missing or disabled for receive: the receive reports that)
]]
--@include partition
local G = group_of(ARGV[1])
local now = now_ms()
local n = redis.call('ZCOUNT', G.locked, '-inf', '(' .. now)
if G.main then
  n = n + redis.call('ZCOUNT', K_SCHED, '-inf', now)
  if redis.call('HGET', K_CFG, 'sess') == '1' then
    n = n + redis.call('ZCARD', G.ready)
  else  -- available: in ready or past the cursor, i.e. every main-log message not locked,
        -- deferred or scheduled (as stats.lua counts; the cursor itself may lag behind messages
        -- removed past it, so seq - cur would over-count for good)
    n = n + redis.call('XLEN', G.log) - redis.call('ZCARD', G.locked) - redis.call('ZCARD', G.deferred)
          - redis.call('ZCARD', K_SCHED)
  end
else
  n = n + redis.call('ZCARD', G.ready) + redis.call('ZCOUNT', K_EXP, '-inf', now)
      + redis.call('ZCOUNT', MAIN.locked, '-inf', '(' .. now)
end
return n

--[[
  stats: the partition's message counts and size, read-only.
  KEYS: the partition's 24 keys (includes/partition.lua)
  ARGV: none
  Returns: {ready, locked, deferred, scheduled, dlq_ready, dlq_locked, dlq_deferred, size_bytes,
            last_access_ms, last_seq, last_dlq_seq}
  Errors:  NOTFOUND
]]
--@include partition
if redis.call('EXISTS', K_CFG) == 0 then return fail('NOTFOUND') end
local st = redis.call('HMGET', K_ST, 'size', 'acc', 'seq', 'dseq')
local locked, deferred, sched = redis.call('ZCARD', MAIN.locked), redis.call('ZCARD', MAIN.deferred),
                                redis.call('ZCARD', K_SCHED)
local ready
if redis.call('HGET', K_CFG, 'sess') == '1' then
  ready = redis.call('ZCARD', MAIN.ready) + redis.call('ZCARD', SES.sr)
else  -- every main-log message is available (indexed in ready or past the cursor), locked, deferred
  ready = redis.call('XLEN', MAIN.log) - locked - deferred - sched  -- or a pending schedule
end
return {ready, locked, deferred, sched,
        redis.call('ZCARD', DLQ.ready), redis.call('ZCARD', DLQ.locked),
        redis.call('ZCARD', DLQ.deferred), tonumber(st[1] or '0'), tonumber(st[2] or '0'),
        tonumber(st[3] or '0'), tonumber(st[4] or '0')}

--[[
  dashboard_counts: one partition's counts and its transfer queue's, read-only, for the dashboard's
  overview. stats.lua reads one queue per call; this reads a partition and its transfer queue
  together and skips the sorted sets of a group whose log is empty (most of them, on an idle
  namespace), so a thousand 16-partition entities cost 16,000 short calls.
  KEYS: per partition, 18 of the 24 keys of includes/partition.lua, under its hash tag:
    [1] cfg  [2] st  [3] log  [4] ready  [5] locked  [6] deferred  [7] sched
    [8] dlq log  [9] dlq ready  [10] dlq locked  [11] dlq deferred  [12] sessions' ready index (SES.sr)
    [13] transfer log  [14] transfer sched
    [15] transfer dlq log  [16] transfer dlq ready  [17] transfer dlq locked  [18] transfer dlq deferred
    then 18 more per further partition (on a standalone server the dashboard passes many partitions
    in one call, sparing the per-call cost; a cluster needs one call per partition: one hash tag
    per call). Only the 18 keys read are passed: the whole 24 of a partition and of its transfer
    queue would be 48 keys a partition, and the overview passes every partition's at every read.
  ARGV: none
  Returns: per partition {found, active, locked, deferred, scheduled, dead_letter, size_bytes, last_seq,
            last_dlq_seq, transfer, transfer_dead_letter}, flattened (found is always 1: a partition
            deleted since the registry was read counts as empty)
  Every message of a group has an entry in the group's log (scheduled ones too, in the main log),
  so an empty log means an empty group.
]]
local function group(log, a, b, c)
  if redis.call('XLEN', log) == 0 then return 0 end
  return redis.call('ZCARD', a) + redis.call('ZCARD', b) + redis.call('ZCARD', c)
end

local out = {}
for base = 0, #KEYS - 18, 18 do
  local K = function(i) return KEYS[base + i] end
  local row = {1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
  -- a partition never written to has none of its logs (a log outlives its last entry), hence no size
  -- and no messages: one call settles it, for most partitions of an idle namespace (a second reads
  -- its sequence counter, which only a topic's partition has without a log)
  if redis.call('EXISTS', K(3), K(8), K(13), K(15)) > 0 then
    local st = redis.call('HMGET', K(2), 'size', 'seq', 'dseq')
    row[7], row[8], row[9] = tonumber(st[1] or '0'), tonumber(st[2] or '0'), tonumber(st[3] or '0')
    local n = redis.call('XLEN', K(3))
    if n > 0 then
      local ready
      local locked, deferred, sched = redis.call('ZCARD', K(5)), redis.call('ZCARD', K(6)), redis.call('ZCARD', K(7))
      if redis.call('HGET', K(1), 'sess') == '1' then
        ready = redis.call('ZCARD', K(4)) + redis.call('ZCARD', K(12))
      else  -- as stats.lua: every main-log entry is available, locked, deferred or a pending schedule
        ready = n - locked - deferred - sched
      end
      row[2], row[3], row[4], row[5] = ready + locked + deferred, locked, deferred, sched
    end
    row[6] = group(K(8), K(9), K(10), K(11))
    local transfer = redis.call('XLEN', K(13))
    if transfer > 0 then row[10] = transfer - redis.call('ZCARD', K(14)) end
    row[11] = group(K(15), K(16), K(17), K(18))
  else  -- a topic's partition keeps no log (its copies go to its subscriptions) but counts what was sent
    row[8] = tonumber(redis.call('HGET', K(2), 'seq') or '0')
  end
  for i = 1, 11 do out[#out + 1] = row[i] end
end
return out

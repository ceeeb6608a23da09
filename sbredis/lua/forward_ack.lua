--[[
  forward_ack: settle outbox entries of one partition after a delivery attempt: remove the
  delivered ones, move the undeliverable ones to the transfer dead-letter subqueue. An entry that
  is gone already (settled by a concurrent drain) is skipped, so repeating an ack is harmless.
  KEYS: the partition's 24 keys, then its transfer queue's 24 (includes/keysets.lua)
  ARGV[1] n, then 5 per entry: outbox seq, outcome ('ok' delivered | 'dl' transfer dead-letter),
          reason, description, blob to store in the transfer dead-letter subqueue ('' the entry's)
  Returns: {status_1, ..., status_n}   0 settled, 1 already gone
  Errors:  NOTFOUND
]]
--@include partition
--@include keysets
if redis.call('EXISTS', K_CFG) == 0 then return fail('NOTFOUND') end
local T = keyset(1)
local n = tonumber(ARGV[1])
local now = now_ms()
local out = {}
local delta = 0
for i = 1, n do
  local tseq = ARGV[5 * i - 3]
  local r = redis.call('XRANGE', T.m.log, tseq, tseq)
  if #r == 0 then
    out[i] = 1
  else
    local blob = r[1][2][2]
    delta = delta - #blob
    if ARGV[5 * i - 2] == 'dl' then
      local stored = ARGV[5 * i + 1]
      if stored == '' then stored = blob end
      local dseq = redis.call('HINCRBY', T.st, 'dseq', 1)
      redis.call('XADD', T.d.log, dseq .. '-0', 'b', stored, 'e', now, 'x', '0', 'r', ARGV[5 * i - 1],
                 'rd', ARGV[5 * i], 'os', tseq)
      redis.call('ZADD', T.d.ready, dseq, dseq)
      delta = delta + #stored
    end
    redis.call('XDEL', T.m.log, tseq)
    redis.call('ZREM', T.m.ready, tseq)
    out[i] = 0
  end
end
if delta ~= 0 then redis.call('HINCRBY', T.st, 'size', delta) end
return out

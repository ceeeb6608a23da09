--[[
  session_state: read or write the state of a session the caller holds. The state stays after
  the session's messages are gone (until set to nothing or the entity is deleted). Op 'count'
  gives the number of the session's available messages (one ZLEXCOUNT; `sbredis sessions show`).
  KEYS: the partition's 24 keys (includes/partition.lua)
  ARGV[1] op 'get' | 'set' | 'del' | 'count'   ARGV[2] session id   ARGV[3] the session lock's nonce
  ARGV[4] the state (op 'set')
  Returns: get: the state or nil; set, del: 1; count: the number of available messages
  Errors:  NOTFOUND  DISABLED  LOST (the caller does not hold the session lock)
           SIZE (the state is larger than the entity's maximum message size)
]]
--@include partition
--@include sessions
local cfg = load_cfg()
local bad = check_receive(cfg)
if bad then return bad end
local op, sid, nonce = ARGV[1], ARGV[2], ARGV[3]
local now = now_ms()
local holder, untl = sess_lock_of(SES, sid)
if holder ~= nonce or untl < now then return fail('LOST') end
if op == 'get' then
  return redis.call('HGET', SES.ss, sid)
end
if op == 'count' then  -- members '<sid> NUL <13 digits>' (includes/sessions.lua)
  local lo = '[' .. sid .. '\0' .. string.rep('0', 13)
  return redis.call('ZLEXCOUNT', SES.sr, lo, '[' .. sid .. '\0' .. string.rep('9', 13))
end
touch(now)
if op == 'set' then
  if #ARGV[4] > cfg.max_msg then return fail('SIZE') end
  redis.call('HSET', SES.ss, sid, ARGV[4])
  redis.call('ZADD', SES.su, now, sid)
else
  redis.call('HDEL', SES.ss, sid)
  redis.call('ZREM', SES.su, sid)
end
return 1

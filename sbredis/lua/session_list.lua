--[[
  session_list: the sessions of this partition that have available messages, a lock holder
  (locked messages) or state, read-only. Reads each session with available messages once
  (a ZRANGEBYLEX jump per session), then the lock and state hashes: O(sessions), never the
  messages.
  KEYS: the partition's 23 keys (includes/partition.lua)
  ARGV: none
  Returns: {session id, ...} (unordered, may repeat)
  Errors:  NOTFOUND
]]
--@include partition
--@include sessions
if redis.call('EXISTS', K_CFG) == 0 then return fail('NOTFOUND') end
local out = {}
local from = '-'
while true do
  local r = redis.call('ZRANGEBYLEX', SES.sr, from, '+', 'LIMIT', 0, 1)
  if #r == 0 then break end
  local sid = sess_id(r[1])
  out[#out + 1] = sid
  from = '[' .. sid .. '\1'
end
local held = redis.call('HKEYS', SES.sl)
for i = 1, #held do out[#out + 1] = held[i] end
local stated = redis.call('HKEYS', SES.ss)
for i = 1, #stated do out[#out + 1] = stated[i] end
return out

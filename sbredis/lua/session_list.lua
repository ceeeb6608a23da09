--[[
  session_list: the sessions of this partition that have available messages, a lock holder
  (locked messages) or state, read-only, a page at a time. Reads each session with available
  messages once (a ZRANGEBYLEX jump per session), then the lock and state hashes (HSCAN): never
  the messages. A call does at most LIST_PAGE jumps (no further 100 once it has run LIST_US
  microseconds) or one HSCAN of LIST_PAGE (the per-call cap) and returns where the next call
  goes on.
  With ARGV[2] (state_updated_after), only the sessions whose state was set after that time:
  a page of LIST_PAGE from SES.su, by score.
  KEYS: the partition's 24 keys (includes/partition.lua)
  ARGV[1] cursor ('' or absent: from the start; else the `next` of the previous call)
  ARGV[2] state updated after (ms; '' or absent: every session)
  Returns: {next, session id, ...} (unordered, may repeat; next: '' when the listing is complete)
  Errors:  NOTFOUND
]]
--@include partition
--@include sessions
if redis.call('EXISTS', K_CFG) == 0 then return fail('NOTFOUND') end
local LIST_PAGE, LIST_US = 1000, 5000
local function clock_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local cursor = ARGV[1] or ''
local after = ARGV[2] or ''
if after ~= '' then
  -- the cursor: 'u' and the offset into the zset's members above `after`
  local offset = 0
  if cursor ~= '' then offset = tonumber(string.sub(cursor, 2)) or 0 end
  local r = redis.call('ZRANGEBYSCORE', SES.su, '(' .. after, '+inf', 'LIMIT', offset, LIST_PAGE)
  local out = {''}
  for i = 1, #r do out[#out + 1] = r[i] end
  if #r == LIST_PAGE then out[1] = 'u' .. (offset + LIST_PAGE) end
  return out
end
if cursor == '' then cursor = 'r-' end
-- the cursor: 'r' and the ZRANGEBYLEX start in SES.sr, 'l' or 's' and the HSCAN cursor of SES.sl
-- or SES.ss
local phase, pos = string.sub(cursor, 1, 1), string.sub(cursor, 2)
local out = {''}
local work = 0
if phase == 'r' then
  local start = clock_us()
  while true do
    if work >= LIST_PAGE or (work % 100 == 99 and clock_us() - start >= LIST_US) then
      out[1] = 'r' .. pos
      return out
    end
    local r = redis.call('ZRANGEBYLEX', SES.sr, pos, '+', 'LIMIT', 0, 1)
    work = work + 1
    if #r == 0 then break end
    local sid = sess_id(r[1])
    out[#out + 1] = sid
    pos = '[' .. sid .. '\1'
  end
  phase, pos = 'l', '0'
end
if phase == 'l' then
  local r = redis.call('HSCAN', SES.sl, pos, 'COUNT', LIST_PAGE)
  for i = 1, #r[2], 2 do out[#out + 1] = r[2][i] end
  if r[1] ~= '0' then
    out[1] = 'l' .. r[1]
    return out
  end
  phase, pos = 's', '0'
end
local r = redis.call('HSCAN', SES.ss, pos, 'COUNT', LIST_PAGE)
for i = 1, #r[2], 2 do out[#out + 1] = r[2][i] end
if r[1] ~= '0' then out[1] = 's' .. r[1] end
return out

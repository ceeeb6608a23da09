--[[
  syphon_lease: take, keep or give up the syphon lease of a backlog queue (paired namespaces), so
  one syphon at a time moves its messages (in order) while several may run.
  KEYS: the partition's 24 keys (includes/partition.lua); the lease is field 'sl' of st,
        'holder|until_ms'
  ARGV[1] holder: a syphon's random id
  ARGV[2] lease_ms: hold it until now + lease_ms; 0 gives it up
  Returns: 1 when `holder` holds the lease now (or, giving up, no longer holds it), 0 when another
           syphon holds it
  Errors:  NOTFOUND
]]
--@include partition
local cfg = load_cfg()
if not cfg then return fail('NOTFOUND') end
local now = now_ms()
local current = redis.call('HGET', K_ST, 'sl')
if current then
  local bar = string.find(current, '|', 1, true)
  local holder = string.sub(current, 1, bar - 1)
  local till = tonumber(string.sub(current, bar + 1))
  if holder ~= ARGV[1] and till > now then return 0 end
end
local ms = tonumber(ARGV[2])
if ms == 0 then
  if current then redis.call('HDEL', K_ST, 'sl') end
  return 1
end
redis.call('HSET', K_ST, 'sl', ARGV[1] .. '|' .. (now + ms))
return 1

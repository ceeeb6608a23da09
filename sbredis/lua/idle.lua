--[[
  idle: auto-delete-on-idle for one partition of an entity: check whether it was used after a
  cutoff, take it out of service (status Disabled, the old status kept in cfg 'pre') when it was
  not, or put it back. Used means: st.acc after the cutoff (sends, receives, peeks, updates), a
  scheduled message still pending after it, or forwarding configured (never idle). A topic
  passes its subscriptions' keys too: any of them used keeps the topic.
  KEYS: the partition's 24 keys, then 24 per further key set (includes/keysets.lua)
  ARGV[1] mode 'check' | 'retire' | 'restore'   ARGV[2] cutoff ms
  Returns: check, retire: {1 idle (retire: now out of service) | 0 used, last use ms}
           restore: {1, 0}
  Errors:  NOTFOUND
]]
--@include partition
--@include keysets
if redis.call('EXISTS', K_CFG) == 0 then return fail('NOTFOUND') end
local mode = ARGV[1]
local cutoff = tonumber(ARGV[2])
local sets = {{cfg = K_CFG, st = K_ST, sched = K_SCHED}}
for i = 1, keyset_count() do sets[#sets + 1] = keyset(i) end

if mode == 'restore' then
  for i = 1, #sets do
    local S = sets[i]
    local pre = redis.call('HGET', S.cfg, 'pre')
    if pre then
      redis.call('HSET', S.cfg, 'status', pre)
      redis.call('HDEL', S.cfg, 'pre')
    end
  end
  return {1, 0}
end

local last = 0
for i = 1, #sets do
  local S = sets[i]
  local c = redis.call('HMGET', S.cfg, 'fwd', 'fwdl')
  if (c[1] and c[1] ~= '') or (c[2] and c[2] ~= '') then
    last = now_ms()
  end
  local acc = tonumber(redis.call('HGET', S.st, 'acc') or '0')
  if acc > last then last = acc end
  local pending = redis.call('ZRANGE', S.sched, -1, -1, 'WITHSCORES')
  if #pending > 0 and tonumber(pending[2]) > last then last = tonumber(pending[2]) end
end
if last > cutoff then return {0, last} end
if mode == 'retire' then
  for i = 1, #sets do
    local S = sets[i]
    if not redis.call('HGET', S.cfg, 'pre') then
      redis.call('HSET', S.cfg, 'pre', redis.call('HGET', S.cfg, 'status') or 'Active')
    end
    redis.call('HSET', S.cfg, 'status', 'Disabled')
  end
end
return {1, last}

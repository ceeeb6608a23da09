--[[
  send: store a batch of messages in one partition's main queue, all or none.
  KEYS: the partition's 17 keys (includes/partition.lua)
  ARGV[1] n   then 4 per message: message_id ('' when duplicate detection does not apply),
          ttl_ms (0: the entity default), scheduled_ms (0: now), blob
  Returns: {now_ms, seq_1, ..., seq_n}  seq 0: a duplicate, accepted and dropped
  Errors:  NOTFOUND  DISABLED (send)  SIZE (a message or the batch over max_msg)
           QUOTA (entity full)
]]
--@include partition
local cfg = load_cfg()
if not cfg then return fail('NOTFOUND') end
if cfg.status == 'Disabled' or cfg.status == 'SendDisabled' then return fail('DISABLED') end
local n = tonumber(ARGV[1])
local total = 0
for i = 1, n do
  local size = #ARGV[1 + 4 * i]
  if size > cfg.max_msg then return fail('SIZE') end
  total = total + size
end
if total > cfg.max_msg then return fail('SIZE') end
local stored = tonumber(redis.call('HGET', K_ST, 'size') or '0')
if stored + total > cfg.max_size then return fail('QUOTA') end

local now = now_ms()
local keep = {}
local fresh = 0
if cfg.dedup_ms > 0 then
  redis.call('ZREMRANGEBYSCORE', K_DD, '-inf', now)
  local seen = {}
  local marks = {}
  for i = 1, n do
    local mid = ARGV[4 * i - 2]
    if mid ~= '' and (seen[mid] or redis.call('ZSCORE', K_DD, mid)) then
      keep[i] = false
    else
      keep[i] = true
      fresh = fresh + 1
      if mid ~= '' then
        seen[mid] = true
        marks[#marks + 1] = now + cfg.dedup_ms
        marks[#marks + 1] = mid
      end
    end
  end
  if #marks > 0 then call_many('ZADD', K_DD, marks) end
else
  for i = 1, n do keep[i] = true end
  fresh = n
end

local out = {now}
if fresh == 0 then
  for i = 1, n do out[i + 1] = 0 end
  touch(now)
  return out
end
local seq = redis.call('HINCRBY', K_ST, 'seq', fresh) - fresh
local ready, sched, exp = {}, {}, {}
local added = 0
for i = 1, n do
  if keep[i] then
    seq = seq + 1
    local ttl = tonumber(ARGV[4 * i - 1])
    local at = tonumber(ARGV[4 * i])
    local blob = ARGV[4 * i + 1]
    if ttl == 0 or (cfg.ttl_ms > 0 and ttl > cfg.ttl_ms) then ttl = cfg.ttl_ms end
    local enq = now
    if at > now then enq = at end
    local x = 0
    if ttl > 0 then x = enq + ttl end
    redis.call('XADD', MAIN.log, seq .. '-0', 'b', blob, 'e', enq, 'x', x)
    if enq > now then
      sched[#sched + 1] = enq
      sched[#sched + 1] = seq
    else
      ready[#ready + 1] = seq
      ready[#ready + 1] = seq
    end
    if x > 0 then
      exp[#exp + 1] = x
      exp[#exp + 1] = seq
    end
    added = added + #blob
    out[i + 1] = seq
  else
    out[i + 1] = 0
  end
end
if #ready > 0 then call_many('ZADD', MAIN.ready, ready) end
if #sched > 0 then call_many('ZADD', K_SCHED, sched) end
if #exp > 0 then call_many('ZADD', K_EXP, exp) end
redis.call('HINCRBY', K_ST, 'size', added)
touch(now)
return out

--[[
  forward_in: store messages forwarded from another entity's outbox in one queue partition, once:
  the partition keeps, per source partition, the highest outbox sequence number it accepted (a
  drain delivers each outbox prefix in order), and drops what is at or below it; duplicate
  detection applies as to a send.
  KEYS: the partition's 24 keys (includes/partition.lua)
  ARGV[1] source ('<path>:<p>:<incarnation>')
  ARGV[2] n, then 7 per message (the layout of publish): message_id ('' when duplicate detection
          does not apply), ttl_ms (0: the default), scheduled_ms (0: now), hop count, expires_ms
          (0: from the ttl; else an upper bound), outbox seq, blob
  Returns: {now_ms, seq_1, ..., seq_n}  seq 0: dropped (a duplicate, or forwarded before)
  Errors:  NOTFOUND  DISABLED (send)  SIZE (a message over max_msg)  QUOTA (entity full)
           NOSESSION (the entity requires sessions and a message has no session id)
]]
--@include partition
--@include sessions
local cfg = load_cfg()
if not cfg then return fail('NOTFOUND') end
if cfg.status == 'Disabled' or cfg.status == 'SendDisabled' then return fail('DISABLED') end
local n = tonumber(ARGV[2])
local total = 0
for i = 1, n do
  local size = #ARGV[2 + 7 * i]
  if size > cfg.max_msg then return fail('SIZE') end
  total = total + size
end
local sids = nil
if cfg.sess then
  sids = {}
  for i = 1, n do
    sids[i] = blob_sid(ARGV[2 + 7 * i])
    if not sids[i] then return fail('NOSESSION') end
  end
end
local stored = tonumber(redis.call('HGET', K_ST, 'size') or '0')
if stored + total > cfg.max_size then return fail('QUOTA') end

local now = now_ms()
local mark_field = 'f:' .. ARGV[1]
local mark = tonumber(redis.call('HGET', K_ST, mark_field) or '0')
local keep, top = {}, mark
for i = 1, n do
  local fseq = tonumber(ARGV[1 + 7 * i])
  keep[i] = fseq > mark
  if fseq > top then top = fseq end
end
if cfg.dedup_ms > 0 then
  redis.call('ZREMRANGEBYSCORE', K_DD, '-inf', now)
  local seen, marks = {}, {}
  for i = 1, n do
    local mid = ARGV[7 * i - 4]
    if keep[i] and mid ~= '' then
      if seen[mid] or redis.call('ZSCORE', K_DD, mid) then
        keep[i] = false
      else
        seen[mid] = true
        marks[#marks + 1] = now + cfg.dedup_ms
        marks[#marks + 1] = mid
      end
    end
  end
  if #marks > 0 then call_many('ZADD', K_DD, marks) end
end
if top > mark then redis.call('HSET', K_ST, mark_field, top) end

local out = {now}
local added = 0
if not sids then cursor_init() end
for i = 1, n do
  if keep[i] then
    local seq = redis.call('HINCRBY', K_ST, 'seq', 1)
    local ttl = tonumber(ARGV[7 * i - 3])
    local at = tonumber(ARGV[7 * i - 2])
    local hop = ARGV[7 * i - 1]
    local xabs = tonumber(ARGV[7 * i])
    local blob = ARGV[2 + 7 * i]
    if ttl == 0 or (cfg.ttl_ms > 0 and ttl > cfg.ttl_ms) then ttl = cfg.ttl_ms end
    local enq = now
    if at > now then enq = at end
    local x = 0
    if ttl > 0 then x = enq + ttl end
    if xabs > 0 and (x == 0 or xabs < x) then x = xabs end
    if sids then
      redis.call('XADD', MAIN.log, seq .. '-0', 'b', blob, 'e', enq, 'x', x, 'h', hop, 's', sids[i])
    else
      redis.call('XADD', MAIN.log, seq .. '-0', 'b', blob, 'e', enq, 'x', x, 'h', hop)
    end
    if enq > now then
      redis.call('ZADD', K_SCHED, enq, seq)
    elseif sids then
      sess_ready(SES, sids[i], seq)
    end  -- else available past the cursor (includes/messages.lua's cursor_of): no ready entry
    if x > 0 then redis.call('ZADD', K_EXP, x, seq) end
    added = added + #blob
    out[i + 1] = seq
  else
    out[i + 1] = 0
  end
end
if added > 0 then redis.call('HINCRBY', K_ST, 'size', added) end
touch(now)
return out

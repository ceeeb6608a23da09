--[[
  send: store a batch of messages in one partition's main queue, all or none.
  KEYS: the first of the partition's 24 keys (cfg) alone: includes/partition.lua names the others
  ARGV[1] n   ARGV[2] w: 4 or 1 arguments per message, then the messages (includes/store.lua):
          w = 4: message_id ('' when duplicate detection does not apply), ttl_ms (0: the entity
          default), scheduled_ms (0: now), blob;  w = 1: blob (all three defaults)
  Returns: {now_ms, seq_1, ..., seq_n}  seq 0: a duplicate, accepted and dropped
           {now_ms, seq_1} when n > 1 and none was a duplicate: seq_i = seq_1 + i - 1
  Errors:  NOTFOUND  DISABLED (send)  SIZE (a message or the batch over max_msg)
           QUOTA (entity full)  NOSESSION (the entity requires sessions and a message has no
           session id; nothing is stored)  INVALID (w is neither 1 nor 4)
  On a session entity each message goes to its session (includes/sessions.lua), not to ready.
]]
--@include partition
local n = tonumber(ARGV[1])
local w = tonumber(ARGV[2])
-- The usual send: blobs alone (no message TTL, schedule or duplicate check), no sessions. Done
-- before includes/store.lua's helpers are built (Redis runs a script's whole body per call):
-- load_cfg's checks on the six settings it needs, read as values (load_cfg reads ten into a
-- table), store_check's checks, then what store() writes for such messages (each goes past the
-- cursor and expires, if at all, at now + the entity's default TTL), without its per-message
-- branches. A session entity's send reads cfg again below.
local c = w == 1 and n > 0 and redis.call('HMGET', K_CFG, 'status', 'gen', 'sess', 'max_msg', 'max_size', 'ttl_ms')
if c and c[1] and c[3] ~= '1' and (CALLER_GEN == '' or not c[2] or c[2] == '' or c[2] == CALLER_GEN) then
  if c[1] == 'Disabled' or c[1] == 'SendDisabled' then return fail('DISABLED') end
  local max_msg, max_size, ttl_ms = tonumber(c[4]), tonumber(c[5]), tonumber(c[6])
  local total = 0
  for i = 1, n do
    local size = #ARGV[2 + i]
    if size > max_msg then return fail('SIZE') end
    total = total + size
  end
  if total > max_msg then return fail('SIZE') end
  -- st is read once and written once (HINCRBYs and touch() would be a call each)
  local st = redis.call('HMGET', K_ST, 'seq', 'size', 'cur')
  local seq, size = tonumber(st[1] or '0'), tonumber(st[2] or '0')
  if size + total > max_size then return fail('QUOTA') end
  local now = now_ms()
  if not st[3] then redis.call('HSET', K_ST, 'cur', seq) end  -- cursor_init(), at the last seq
  local now_s, xs = tostring(now), '0'
  local exp = nil
  if ttl_ms > 0 then exp, xs = {}, tostring(now + ttl_ms) end
  for i = 1, n do
    redis.call('XADD', MAIN.log, seq + i, 'b', ARGV[2 + i], 'e', now_s, 'x', xs)
    if exp then exp[2 * i - 1], exp[2 * i] = xs, seq + i end
  end
  if exp then call_many('ZADD', K_EXP, exp) end
  redis.call('HSET', K_ST, 'seq', seq + n, 'size', size + total, 'acc', now)
  return {now, seq + 1}
end
-- not found, another generation's, or a session entity: load_cfg's answer
local cfg = load_cfg()
if not cfg then return fail('NOTFOUND') end
if cfg.status == 'Disabled' or cfg.status == 'SendDisabled' then return fail('DISABLED') end
if w ~= 1 and w ~= 4 then return fail('INVALID') end
--@include store
local bad = store_check(cfg, 2, n, w, true)
if bad then return bad end
local now = now_ms()
local out = {now}
local stored = store(cfg, now, 2, n, w, out)
touch(now)
if stored == n and n > 1 then return {now, out[2]} end  -- consecutive: a short reply
return out

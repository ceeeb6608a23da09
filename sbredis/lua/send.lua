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
-- The usual send: blobs alone (no message TTL, schedule or duplicate check) to an entity without
-- sessions. It runs before includes/partition.lua's opening (Redis runs a script's whole body per
-- call, and the opening's key names, group tables and helper closures are a fifth of a one-message
-- send's script time), so it names the keys it uses itself, as partition.lua does (the cfg key's
-- prefix followed by their names in keys.PARTITION_KEY_NAMES, under partition.lua's variable
-- names; tests/unit/test_lua_contract.py checks both), and reads the caller's generation, the last
-- argument, in place (partition.lua's CALLER_GEN and fail()). It reads the six settings it uses as
-- values, then does what includes/store.lua's store_check and store() do for such messages: each
-- goes past the cursor and expires, if at all, at now + the entity's default TTL. st is read once
-- and written once. With a default TTL, the expiry index of up to FAST_EXP messages is one plain
-- ZADD; a larger batch's is written after the opening, by call_many (which widens the set first
-- for WIDE_ITEMS members or more). Anything else (not found, another generation's, a session
-- entity, ...) goes on to load_cfg's answer.
local fast_exp, fast_reply  -- a large plain batch's expiry index and reply, for after the opening
do
  local FAST_EXP = 15
  local K_CFG = KEYS[1]
  local n = tonumber(ARGV[1])
  local c = ARGV[2] == '1' and n > 0
    and redis.call('HMGET', K_CFG, 'status', 'gen', 'sess', 'max_msg', 'max_size', 'ttl_ms')
  local gen = ARGV[#ARGV]
  local ttl_ms = c and tonumber(c[6] or '0')
  if c and c[1] and c[3] ~= '1' and (gen == '' or not c[2] or c[2] == '' or c[2] == gen) then
    if c[1] == 'Disabled' or c[1] == 'SendDisabled' then return redis.error_reply('SBERR DISABLED') end
    local max_msg = tonumber(c[4])
    local total = 0
    for i = 1, n do
      local size = #ARGV[2 + i]
      if size > max_msg then return redis.error_reply('SBERR SIZE') end
      total = total + size
    end
    if total > max_msg then return redis.error_reply('SBERR SIZE') end
    local p = string.sub(K_CFG, 1, -4)  -- '<tag>:' of '<tag>:cfg'
    local K_ST, MAIN = p .. 'st', {log = p .. 'log'}
    local st = redis.call('HMGET', K_ST, 'seq', 'size', 'cur')
    local seq, size = tonumber(st[1] or '0'), tonumber(st[2] or '0')
    if size + total > tonumber(c[5]) then return redis.error_reply('SBERR QUOTA') end
    local t = redis.call('TIME')
    local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    if not st[3] then redis.call('HSET', K_ST, 'cur', seq) end  -- cursor_init(), at the last seq
    local now_s, xs = tostring(now), '0'  -- formatted once, not at every use
    if ttl_ms > 0 then xs = tostring(now + ttl_ms) end
    for i = 1, n do
      redis.call('XADD', MAIN.log, seq + i, 'b', ARGV[2 + i], 'e', now_s, 'x', xs)
    end
    local exp = ttl_ms > 0 and {}
    if exp then
      for i = 1, n do exp[2 * i - 1], exp[2 * i] = xs, seq + i end
    end
    redis.call('HSET', K_ST, 'seq', seq + n, 'size', size + total, 'acc', now)
    if exp and n > FAST_EXP then
      fast_exp, fast_reply = exp, {now, seq + 1}
    else
      if exp then
        local K_EXP = p .. 'exp'
        redis.call('ZADD', K_EXP, unpack(exp))
      end
      return {now, seq + 1}
    end
  end
end
--@include partition
if fast_exp then
  call_many('ZADD', K_EXP, fast_exp)
  return fast_reply
end
local n = tonumber(ARGV[1])
local w = tonumber(ARGV[2])
-- not found, another generation's, a session entity, or a message with its own TTL, schedule or
-- message id: load_cfg's answer
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

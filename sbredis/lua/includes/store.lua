--[[
  store: check and store new messages in the partition's main queue (send, tx_commit).
  Needs includes/partition.lua first; brings includes/sessions.lua with it. On a session entity
  every message needs a session id and goes to its session; elsewhere an available message goes
  past the main queue's cursor and needs no ready entry (includes/messages.lua's cursor_of).

  The messages are ARGV[b + 1 ...], w per message. w = 4: message_id ('' when duplicate detection
  does not apply), ttl_ms (0: the entity default), scheduled_ms (0: now), blob. w = 1: the blob
  alone, for a message with all three defaults (the common send: a quarter of the arguments, each
  of which costs a string conversion on both sides).
]]
--@include sessions

-- nil when the n messages may be stored, else the error reply: SIZE (a message over max_msg, or
-- with `batch` their sum), QUOTA (the entity would be over max_size), NOSESSION (a session entity
-- and a message without a session id).
local STORE_SIDS = {}  -- ARGV base -> the session ids store_check read (session entities)

local function store_check(cfg, b, n, w, batch)
  local total = 0
  local sids = {}
  for i = 1, n do
    local size = #ARGV[b + w * i]
    if size > cfg.max_msg then return fail('SIZE') end
    if cfg.sess then
      sids[i] = blob_sid(ARGV[b + w * i])
      if not sids[i] then return fail('NOSESSION') end
    end
    total = total + size
  end
  if cfg.sess then STORE_SIDS[b] = sids end
  if batch and total > cfg.max_msg then return fail('SIZE') end
  local stored = tonumber(redis.call('HGET', K_ST, 'size') or '0')
  if stored + total > cfg.max_size then return fail('QUOTA') end
  return nil
end

-- Store the n messages (checked with store_check) at server time `now`, duplicates dropped
-- within the entity's window. Appends each message's seq (0: a duplicate) to `out`; returns how
-- many were stored (n: none was a duplicate, and their seqs are consecutive).
local function store(cfg, now, b, n, w, out)
  local keep = {}
  local fresh = 0
  if cfg.dedup_ms > 0 and w == 4 then
    redis.call('ZREMRANGEBYSCORE', K_DD, '-inf', now)
    local seen = {}
    local marks = {}
    for i = 1, n do
      local mid = ARGV[b + 4 * i - 3]
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
  local o = #out
  if fresh == 0 then
    for i = 1, n do out[o + i] = 0 end
    return 0
  end
  local sids = STORE_SIDS[b] or {}
  if not cfg.sess then cursor_init() end  -- available messages go past the cursor, unindexed
  local seq = redis.call('HINCRBY', K_ST, 'seq', fresh) - fresh
  local now_s = tostring(now)  -- numbers are formatted (sprintf) at every use: once each here
  local ready, sched, exp = {}, {}, {}
  local nr, ns, nx = 0, 0, 0  -- their lengths (# is a search)
  local added = 0
  for i = 1, n do
    if keep[i] then
      seq = seq + 1
      local ttl, at = 0, 0
      if w == 4 then
        ttl = tonumber(ARGV[b + 4 * i - 2])
        at = tonumber(ARGV[b + 4 * i - 1])
      end
      local blob = ARGV[b + w * i]
      if ttl == 0 or (cfg.ttl_ms > 0 and ttl > cfg.ttl_ms) then ttl = cfg.ttl_ms end
      local enq = now
      if at > now then enq = at end
      local x = 0
      if ttl > 0 then x = enq + ttl end
      local id, e, xs = seq, now_s, '0'  -- redis.call formats a number faster than tostring
      if enq > now then e = tostring(enq) end
      if x > 0 then xs = tostring(x) end
      local sid = cfg.sess and (sids[i] or blob_sid(blob))
      if sid then  -- entry id <seq> is <seq>-0
        redis.call('XADD', MAIN.log, id, 'b', blob, 'e', e, 'x', xs, 's', sid)
      else
        redis.call('XADD', MAIN.log, id, 'b', blob, 'e', e, 'x', xs)
      end
      if enq > now then
        sched[ns + 1], sched[ns + 2] = e, id
        ns = ns + 2
      elseif sid then
        sess_ready(SES, sid, id)
      elseif cfg.sess then  -- (not reached: store_check refuses a message without a session id)
        ready[nr + 1], ready[nr + 2] = id, id
        nr = nr + 2
      end
      if x > 0 then
        exp[nx + 1], exp[nx + 2] = xs, id
        nx = nx + 2
      end
      added = added + #blob
      out[o + i] = seq
    else
      out[o + i] = 0
    end
  end
  if nr > 0 then call_many('ZADD', MAIN.ready, ready) end
  if ns > 0 then call_many('ZADD', K_SCHED, sched) end
  if nx > 0 then call_many('ZADD', K_EXP, exp) end
  redis.call('HINCRBY', K_ST, 'size', added)
  return fresh
end

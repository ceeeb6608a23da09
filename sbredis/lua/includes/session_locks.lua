--[[
  session_locks: take, free and sweep session locks of this partition (SES). Needs
  includes/partition.lua and includes/messages.lua first.
  A session lock that elapsed is found by its score in SES.sx (server clock) when a session is
  next taken: its locked messages are released as an elapsed message lock would be (the delivery
  counts, max_delivery_count applies) and the session is available to others again.
]]

-- End the lock of session sid: its locked messages go back to the session (counted as a
-- delivery unless `undo`), and the session is available again when it has messages. Returns how
-- many locked messages it released.
local function sess_free(cfg, sid, now, undo)
  local held = sess_members(SES, true, sid, 100000)
  for i = 1, #held do
    local seq = sess_seq(held[i])
    local rec = redis.call('HGET', MAIN.lk, seq)
    if rec then
      release(MAIN, cfg, seq, rec, now, undo)
    else
      redis.call('ZREM', SES.sk, held[i])
    end
  end
  redis.call('HDEL', SES.sl, sid)
  redis.call('ZREM', SES.sx, sid)
  local first = sess_members(SES, false, sid, 1)
  if #first > 0 then redis.call('ZADD', SES.sa, 'NX', tonumber(sess_seq(first[1])), sid) end
  return #held
end

-- Locked messages a sweep of elapsed session locks releases before it leaves the next elapsed
-- session for the next call (each release is several writes: 200 stay near 2 ms). One session is
-- always freed whole, so a sweep makes progress (docs/keyspace.md, "Per-call caps").
local SESS_FREE_BUDGET = 200

-- Free the sessions whose lock elapsed before `now` (at most `limit`, and no further one once
-- SESS_FREE_BUDGET locked messages were released).
local function sess_sweep(cfg, now, limit)
  local gone = redis.call('ZRANGEBYSCORE', SES.sx, '-inf', '(' .. now, 'LIMIT', 0, limit)
  local freed = 0
  for i = 1, #gone do
    if freed >= SESS_FREE_BUDGET then break end
    freed = freed + sess_free(cfg, gone[i], now, false)
  end
end

-- Lock session sid for `nonce` until `untl`.
local function sess_take(sid, nonce, untl)
  redis.call('HSET', SES.sl, sid, nonce .. '|' .. untl)
  redis.call('ZADD', SES.sx, untl, sid)
  redis.call('ZREM', SES.sa, sid)
end

-- nil when `nonce` holds session sid's lock at `now`, else the LOST error reply.
local function sess_check(sid, nonce, now)
  local holder, untl = sess_lock_of(SES, sid)
  if holder ~= nonce or untl < now then return fail('LOST') end
  return nil
end

--[[
  settle: apply a settlement to messages whose locks were checked with held() (includes/messages.lua):
  complete, defer, dead-letter and renew (abandon is messages.lua's release()). Shared by the
  single-operation scripts and tx_commit. Needs includes/partition.lua and includes/messages.lua.
  A session message's settlement also drops it from its session's locked set (sess_unlocked); its
  lock check is held()'s, since a session message's lock is the session lock (includes/sessions.lua).
]]

-- Remove completed messages: seqs with their lock records recs (false entries are skipped). Only
-- the size, the delivery count and the session id of a record are read. The dc hash holds a count
-- for a message only after a lock on it ended without completion (release, defer_held), and the
-- next lock's record counts one more: a record with delivery count 1 has no dc entry to remove.
local function complete_held(G, seqs, recs)
  local done, k = {}, 0
  local counted, c = {}, 0
  local size = 0
  for i = 1, #seqs do
    local rec = recs[i]
    if rec then
      local sz, dc, tail = string.match(rec, '|%a|%d+|(%d+)|(%d+)()')
      if tail <= #rec then sess_unlocked(string.sub(rec, tail + 1), seqs[i]) end
      size = size + sz
      k = k + 1
      done[k] = seqs[i]
      if dc ~= '1' then
        c = c + 1
        counted[c] = seqs[i]
      end
    end
  end
  if k > 0 then
    remove_entries(G, done, k)
    -- every lock of the group completed at once (the usual batch: receive n, complete them):
    -- the lock records and deadlines are exactly `done` (both hold the same seqs); DEL frees them
    -- without looking each one up
    if k > 1 and redis.call('HLEN', G.lk) == k and redis.call('ZCARD', G.locked) == k then
      redis.call('DEL', G.lk, G.locked)
    else
      call_many('HDEL', G.lk, done)
      call_many('ZREM', G.locked, done)
    end
    if c > 0 then call_many('HDEL', G.dc, counted) end
    redis.call('HINCRBY', K_ST, 'size', -size)
  end
end

-- Set a locked message aside (deferred), keeping its delivery count and its expiry.
local function defer_held(G, seq, rec)
  local _, _, x, _, dc, sid = parse_lock(rec)
  sess_unlocked(sid, seq)
  redis.call('HSET', G.dc, seq, dc)
  redis.call('HDEL', G.lk, seq)
  redis.call('ZREM', G.locked, seq)
  redis.call('ZADD', G.deferred, seq, seq)
  if G.main and x > 0 then redis.call('ZADD', K_EXP, x, seq) end
end

-- Move a locked main-queue message (log entry f) to the dead-letter group with the caller's reason.
local function dead_letter_held(seq, rec, f, reason, description)
  local _, _, _, _, dc, sid = parse_lock(rec)
  sess_unlocked(sid, seq)
  redis.call('HDEL', MAIN.lk, seq)
  redis.call('ZREM', MAIN.locked, seq)
  dead_letter(seq, f, reason, description, dc)
end

-- Extend held locks to `untl` (ms): the locked zset, and the records that carry their lock's end
-- (lock_record, includes/messages.lua).
local function renew_held(G, seqs, recs, untl)
  local renewed, k = {}, 0
  local rewrite, w = {}, 0
  for i = 1, #seqs do
    local rec = recs[i]
    if rec then
      renewed[k + 1], renewed[k + 2] = untl, seqs[i]
      k = k + 2
      local nonce, rest = string.match(rec, '^([^|]*)|%d+(|.*)$')
      if nonce then
        rewrite[w + 1], rewrite[w + 2] = seqs[i], nonce .. '|' .. untl .. rest
        w = w + 2
      end
    end
  end
  if k > 0 then call_many('ZADD', G.locked, renewed) end
  if w > 0 then call_many('HSET', G.lk, rewrite) end
end

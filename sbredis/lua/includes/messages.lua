--[[
  messages: read one log entry, release a lock, expire, drop and dead-letter a message.
  Needs includes/partition.lua first; brings includes/sessions.lua with it.
]]
--@include sessions

-- The log entry's field list {'b', blob, 'e', enq, 'x', exp, ...} or nil.
local function entry(G, seq)
  local r = redis.call('XRANGE', G.log, seq, seq)
  if #r == 0 then return nil end
  return r[1][2]
end

-- Fetch the entries of ascending seqs; one XRANGE when they lie close together.
local function entries(G, seqs)
  local out = {}
  local n = #seqs
  if n == 0 then return out end
  local first, last = tonumber(seqs[1]), tonumber(seqs[n])
  if last - first < 2 * n + 8 then
    local r = redis.call('XRANGE', G.log, first, last)
    if #r == n and last - first + 1 == n then
      for i = 1, n do out[seqs[i]] = r[i][2] end
      return out
    end
    for i = 1, #r do
      local id = r[i][1]
      out[string.sub(id, 1, #id - 2)] = r[i][2]
    end
  else
    for i = 1, n do
      local f = entry(G, seqs[i])
      if f then out[seqs[i]] = f end
    end
  end
  return out
end

-- Append a message to a reply, flat: blob, enqueued ms, expires ms [, reason, description].
-- (receive.lua writes the same layout inline.)
-- `o`: the reply's length (counted by the caller: # is a search); returns the new length.
-- `x`: the expiry as a number when the caller has it (an integer reply; tonumber is a strtod, so
-- the other numbers stay strings for the client to parse).
local function put(out, G, f, o, x)
  o = o or #out
  out[o + 1], out[o + 2], out[o + 3] = f[2], f[4], x or f[6]
  if G.main then return o + 3 end
  out[o + 4], out[o + 5] = f[8], f[10]
  return o + 5
end

-- The main queue's cursor (st field 'cur'): a message of the main log past it that is not a
-- pending schedule is available with no ready entry (a send writes no index); ready holds the
-- available messages at or below it (returned by an abandon or an elapsed lock, due schedules).
-- A partition last written before cursors existed has every message indexed in ready: its cursor
-- is its last seq (includes/partition.lua's cursor_init). nil for a group without a cursor: the
-- dead-letter group, and a session entity's main queue (its messages wait in their sessions).
local function cursor_of(G, cfg)
  if not G.main or cfg.sess then return nil end
  local c = redis.call('HMGET', K_ST, 'cur', 'seq')
  return tonumber(c[1] or c[2] or '0')
end

-- A lock record carries the delivery count of the locked delivery: the dc hash holds a count
-- only while a message is not locked (written back when a lock ends without completion).
-- A session message's record ends with '|<session id>' (includes/sessions.lua).
-- receive.lua builds the same records inline (its hot loop): change both together.
local function lock_record(nonce, home, x, size, dc, sid)
  local r = nonce .. '|' .. home .. '|' .. x .. '|' .. size .. '|' .. dc
  if sid then return r .. '|' .. sid end
  return r
end

-- nonce, home ('r' ready | 'd' deferred), expires ms, size bytes, delivery count, session id (nil
-- for a message without a session)
local function parse_lock(v)
  local nonce, home, x, size, dc, sid = string.match(v, '^([^|]*)|(%a)|(%d+)|(%d+)|(%d+)|?(.*)$')
  if sid == '' then sid = nil end
  return nonce, home, tonumber(x), tonumber(size), tonumber(dc), sid
end

-- Remove a message from its group for good.
local function drop(G, seq, size)
  redis.call('XDEL', G.log, seq)
  redis.call('HDEL', G.dc, seq)
  redis.call('HINCRBY', K_ST, 'size', -size)
end

-- Move a main-queue message into the dead-letter group under a new dead-letter sequence number.
-- `dc`: its delivery count (read from the dc hash when nil).
local function dead_letter(seq, f, reason, description, dc)
  dc = tostring(dc or redis.call('HGET', MAIN.dc, seq) or '0')
  local dseq = redis.call('HINCRBY', K_ST, 'dseq', 1)
  redis.call('XADD', DLQ.log, dseq .. '-0', 'b', f[2], 'e', f[4], 'x', '0', 'r', reason,
             'rd', description, 'os', seq)
  redis.call('ZADD', DLQ.ready, dseq, dseq)
  if dc ~= '0' then redis.call('HSET', DLQ.dc, dseq, dc) end
  redis.call('XDEL', MAIN.log, seq)
  redis.call('HDEL', MAIN.dc, seq)
  return dseq
end

-- An expired main-queue message: dead-letter it when the entity says so, else drop it.
local function expire(cfg, seq, f)
  if cfg.dl_exp then
    dead_letter(seq, f, 'TTLExpiredException', 'The message expired and was dead lettered.')
  else
    drop(MAIN, seq, #f[2])
  end
end

-- A lock ended (abandon, defer-less release or elapse): the message goes home, to the
-- dead-letter group after max_dc deliveries, or away when it expired while locked.
-- `undo` releases a lock that was never handed to a user: its delivery is not counted.
-- `due` (ms, optional): a main-queue message that would go back to ready is scheduled for then
-- instead (the sweep puts a due schedule in ready, or its session's ready set).
local function release(G, cfg, seq, rec, now, undo, due)
  local _, home, x, _, dc, sid = parse_lock(rec)
  redis.call('HDEL', G.lk, seq)
  redis.call('ZREM', G.locked, seq)
  sess_unlocked(sid, seq)
  if undo then dc = dc - 1 end
  if dc > 0 then
    redis.call('HSET', G.dc, seq, dc)
  else
    redis.call('HDEL', G.dc, seq)
  end
  if G.main then
    if (not undo) and dc >= cfg.max_dc then
      local f = entry(G, seq)
      if f then
        dead_letter(seq, f, 'MaxDeliveryCountExceeded',
                    'Message could not be consumed after ' .. cfg.max_dc .. ' delivery attempts.')
      end
      return
    end
    if x > 0 and x <= now then
      local f = entry(G, seq)
      if f then expire(cfg, seq, f) end
      return
    end
    if x > 0 then redis.call('ZADD', K_EXP, x, seq) end
  end
  if home == 'd' then
    redis.call('ZADD', G.deferred, seq, seq)
  elseif due and G.main then
    redis.call('ZADD', K_SCHED, due, seq)
  elseif sid then
    sess_ready(SES, sid, seq)
  else
    redis.call('ZADD', G.ready, seq, seq)
  end
end

-- Bounded housekeeping before handing messages out: due schedules, elapsed locks, expiries.
local function sweep(G, cfg, now, limit)
  if G.main then
    local due = redis.call('ZRANGEBYSCORE', K_SCHED, '-inf', now, 'LIMIT', 0, limit)
    if #due > 0 and cfg.sess then
      call_many('ZREM', K_SCHED, due)
      for i = 1, #due do
        local f = entry(G, due[i])
        local sid = f and sess_of(f)
        if sid then
          sess_ready(SES, sid, due[i])
        elseif f then
          redis.call('ZADD', G.ready, due[i], due[i])
        end
      end
    elseif #due > 0 then
      call_many('ZREM', K_SCHED, due)
      local cur = cursor_of(G, cfg)
      local pairs_ = {}
      for i = 1, #due do
        if not cur or tonumber(due[i]) <= cur then  -- past the cursor, the cursor hands it out
          pairs_[#pairs_ + 1] = due[i]
          pairs_[#pairs_ + 1] = due[i]
        end
      end
      if #pairs_ > 0 then call_many('ZADD', G.ready, pairs_) end
    end
  end
  local gone = redis.call('ZRANGEBYSCORE', G.locked, '-inf', '(' .. now, 'LIMIT', 0, limit)
  for i = 1, #gone do
    local rec = redis.call('HGET', G.lk, gone[i])
    if rec then
      release(G, cfg, gone[i], rec, now, false)
    else
      redis.call('ZREM', G.locked, gone[i])
    end
  end
  if G.main then
    local old = redis.call('ZRANGEBYSCORE', K_EXP, '-inf', now, 'LIMIT', 0, limit)
    local cur = #old > 0 and cursor_of(G, cfg)
    for i = 1, #old do
      local seq = old[i]
      redis.call('ZREM', K_EXP, seq)
      if cfg.sess then
        local f = entry(G, seq)
        local sid = f and sess_of(f)
        if f and ((sid and redis.call('ZREM', SES.sr, skey(sid, seq)) == 1)
                  or redis.call('ZREM', G.ready, seq) == 1 or redis.call('ZREM', G.deferred, seq) == 1) then
          expire(cfg, seq, f)
        end
      elseif (cur and tonumber(seq) > cur) or redis.call('ZREM', G.ready, seq) == 1
             or redis.call('ZREM', G.deferred, seq) == 1 then  -- available or deferred, not locked
        local f = entry(G, seq)
        if f then expire(cfg, seq, f) end
      end
    end
  end
end

-- Up to `want` available messages of G, oldest first: ready, then the main log past the cursor
-- (which moves on over what it reads). At most want + limit are read: expired ones met on the way
-- are expired (never handed out), pending schedules past the cursor are passed over (the sweep
-- puts them in ready when due). Returns seqs, log entries, expires ms, their count n, and how many
-- of them came from ready (only those can have a delivery count: the rest were never delivered).
-- tonumber is a strtod, per message a large part of a receive: the expiry of log entry f is read
-- as a number only when it is not '0' (most messages have none), and an enqueue time is compared
-- with now as decimal ms strings (both written from integers below 1e14: no sign, exponent or
-- leading zeros, so longer is later, else byte order).
local function expiry(f)
  local x = f[6]
  if x == '0' then return 0 end
  return tonumber(x)
end

local function take(G, cfg, now, want, limit)
  local seqs, fields, xs = {}, {}, {}
  local n = 0
  local budget = want + limit
  local function offer(seq, f)  -- an expired message is expired, never handed out
    local x = expiry(f)
    if G.main and x > 0 and x <= now then
      expire(cfg, seq, f)
    else
      n = n + 1
      seqs[n], fields[n], xs[n] = seq, f, x
    end
  end
  while n < want and budget > 0 do
    -- ZRANGE + ZREMRANGEBYRANK: ZPOPMIN's reply would carry every score, formatted as a double
    local batch = redis.call('ZRANGE', G.ready, 0, math.min(want - n, budget) - 1)
    local k = #batch
    if k == 0 then break end
    redis.call('ZREMRANGEBYRANK', G.ready, 0, k - 1)
    budget = budget - k
    local fs = entries(G, batch)
    for i = 1, k do
      local seq = batch[i]
      local f = fs[seq]
      if f then offer(seq, f) end
    end
  end
  local from_ready = n
  local cur = n < want and budget > 0 and cursor_of(G, cfg)
  if not cur then return seqs, fields, xs, n, from_ready end
  local start = cur
  local now_s = tostring(now)
  local passed, np = {}, 0  -- seqs read past the cursor (a due schedule among them may still be in sched)
  while n < want and budget > 0 do
    local r = redis.call('XRANGE', G.log, cur + 1, '+', 'COUNT', math.min(want - n, budget))
    local k = #r
    if k == 0 then break end
    budget = budget - k
    for i = 1, k do  -- offer() inlined: this loop runs per message of nearly every receive
      local e = r[i]
      local id, f = e[1], e[2]
      local seq = string.sub(id, 1, #id - 2)
      local enq = f[4]
      -- a pending schedule has its enqueue time ahead (the sched check guards a clock step back)
      if not ((#enq > #now_s or (#enq == #now_s and enq > now_s)) and redis.call('ZSCORE', K_SCHED, seq)) then
        np = np + 1
        passed[np] = seq
        local x = f[6]
        if x == '0' then
          n = n + 1
          seqs[n], fields[n], xs[n] = seq, f, 0
        else
          offer(seq, f)
        end
      end
    end
    local id = r[k][1]
    cur = tonumber(string.sub(id, 1, #id - 2))
  end
  if cur ~= start then redis.call('HSET', K_ST, 'cur', cur) end
  if np > 0 and redis.call('ZCARD', K_SCHED) > 0 then call_many('ZREM', K_SCHED, passed) end
  return seqs, fields, xs, n, from_ready
end

-- The lock records of seqs that still hold an unexpired lock with their nonce (nonces[i], or
-- `nonces` itself when it is one string shared by all), by the server clock `now` (false for the
-- others): what every settlement checks first.
-- A lock record and its locked-until are written and removed together, so when no lock of the
-- group has elapsed (the common case: one ZRANGEBYSCORE) a record alone says the lock holds.
local function held(G, seqs, nonces, now)
  local recs = redis.call('HMGET', G.lk, unpack(seqs))
  local untl = false
  if #redis.call('ZRANGEBYSCORE', G.locked, '-inf', '(' .. now, 'LIMIT', 0, 1) > 0 then
    untl = redis.call('ZMSCORE', G.locked, unpack(seqs))
  end
  local out = {}
  local shared = type(nonces) == 'string' and nonces .. '|'
  local pfx = {}  -- nonce -> 'nonce|' (a mixed batch mostly repeats one nonce)
  for i = 1, #seqs do
    local rec, p = recs[i], shared
    if not p then
      local nonce = nonces[i]
      p = pfx[nonce]
      if not p then
        p = nonce .. '|'
        pfx[nonce] = p
      end
    end
    if rec and string.sub(rec, 1, #p) == p and (not untl or (untl[i] and tonumber(untl[i]) >= now)) then
      out[i] = rec
    else
      out[i] = false
    end
  end
  return out
end

-- held() for the messages a settlement script names from ARGV[2] on: n, then the lock nonce they
-- all share followed by n seqs, or '' followed by n pairs (seq, nonce). Returns the seqs, their
-- lock records and the index of the first ARGV after them.
local function held_args(G, now)
  local n = tonumber(ARGV[2])
  local nonce = ARGV[3]
  local seqs = {}
  if nonce ~= '' then
    for i = 1, n do seqs[i] = ARGV[3 + i] end
    return seqs, held(G, seqs, nonce, now), 4 + n
  end
  local nonces = {}
  for i = 1, n do
    seqs[i] = ARGV[2 + 2 * i]
    nonces[i] = ARGV[3 + 2 * i]
  end
  return seqs, held(G, seqs, nonces, now), 4 + 2 * n
end

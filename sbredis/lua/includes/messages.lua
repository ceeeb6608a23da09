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
-- A message without a session has its lock's end (locked-until ms, `untl`) in its record too,
-- after the nonce, so a settlement checks its lock with one read (the locked zset keeps the same
-- score for the sweep of elapsed locks; renew_held writes both):
--   nonce|until|home|expires|size|delivery count
-- A session message's record has none (its lock is its session's: session_renew moves the
-- locked zset alone) and ends with '|<session id>' (includes/sessions.lua):
--   nonce|home|expires|size|delivery count|session id
-- A record written before records carried their lock's end has the second form without a
-- session id; held() and parse_lock() read both forms (the lock's end then from the zset).
-- receive.lua builds the same records inline (its hot loop): change both together.
local function lock_record(nonce, home, x, size, dc, sid, untl)
  if sid then return nonce .. '|' .. home .. '|' .. x .. '|' .. size .. '|' .. dc .. '|' .. sid end
  return nonce .. '|' .. untl .. '|' .. home .. '|' .. x .. '|' .. size .. '|' .. dc
end

-- nonce, home ('r' ready | 'd' deferred), expires ms, size bytes, delivery count, session id (nil
-- for a message without a session), locked-until ms (nil when the record has none)
local function parse_lock(v)
  local nonce, untl, home, x, size, dc, sid = string.match(v, '^([^|]*)|(%d*)|?(%a)|(%d+)|(%d+)|(%d+)|?(.*)$')
  if sid == '' then sid = nil end
  return nonce, home, tonumber(x), tonumber(size), tonumber(dc), sid, tonumber(untl)
end

-- Remove the log entries of k messages `done` (completed, expired). Completing in receive order
-- (the usual case) removes the log's oldest entries: consecutive seqs with nothing older in the log, which
-- one XTRIM MINID drops (XDEL seeks each id: several times the work). `done` holds seqs as the lock
-- records name them (decimal, no leading zeros), so for them string order by (length, bytes) is
-- numeric order; tonumber (a strtod) runs on the ends only.
local function remove_entries(G, done, k)
  if k > 1 then
    local prev, rising = done[1], true
    for i = 2, k do
      local s = done[i]
      if not (#s > #prev or (#s == #prev and s > prev)) then
        rising = false
        break
      end
      prev = s
    end
    local last = tonumber(done[k])
    if rising and last - tonumber(done[1]) == k - 1
       and #redis.call('XRANGE', G.log, '-', '(' .. done[1] .. '-0', 'COUNT', 1) == 0 then
      redis.call('XTRIM', G.log, 'MINID', last + 1)
      return
    end
  end
  call_many('XDEL', G.log, done)
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

-- Microseconds on a clock that runs while a script does: TIME through Redis 7.0; Redis 7.2 on
-- answers TIME with the time the script started, and newer servers (8.2) give Lua os.clock (the
-- server process's CPU time) instead. (rawget: naming a missing global fails the script.)
local OS_CLOCK = rawget(_G, 'os') and rawget(_G, 'os').clock
local function clock_us()
  if OS_CLOCK then return OS_CLOCK() * 1000000 end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- The per-call expiry budget: a call expires (dead-letters or drops, as expire() does one) at
-- most EXPIRE_BUDGET messages, in chunks of at most EXPIRE_CHUNK, and stops before a chunk that
-- would take it past EXPIRE_US microseconds by the rate it has gone at so far: a loaded server
-- gets through fewer messages a call, and the call stays about as short all the same. On a server
-- whose clock stands still during a script (Redis 7.2 without os.clock) the count alone bounds
-- the call: EXPIRE_STILL messages. The caller reports that it stopped with expired messages left
-- and the client calls again at once (docs/keyspace.md, "Per-call caps").
-- (EXPIRE_CHUNK stays under call_many's slice of 4000: a chunk is unpacked into one call.)
local EXPIRE_BUDGET, EXPIRE_CHUNK, EXPIRE_US, EXPIRE_STILL, EXPIRE_MIN = 5000, 500, 12000, 1500, 50
-- While expired messages lie past the cursor (a backlog in the way of the live messages behind
-- it), the sweep gets SKIP_SWEEP_US of the call and take() reads past the cursor for SKIP_READ_US,
-- passing over expired entries without expiring them (reading one costs a fraction of expiring
-- it), at most SKIP_MAX a call: the cursor reaches a live message behind the backlog in a few
-- calls, and the sweeps that follow expire the backlog (see take()).
-- Its pages grow with what it passed over in the call, up to SKIP_PAGE entries: an XRANGE that
-- starts inside a stream node scans the node up to its start, which for pages of a few entries
-- costs several times their reading. (A page of expired entries is read whatever their size, as
-- the sweep reads its chunks of EXPIRE_CHUNK.)
local SKIP_SWEEP_US, SKIP_READ_US, SKIP_MAX, SKIP_PAGE = 3000, 9000, 8000, 256

-- The size of the next chunk of a sweep that started at `start` (clock_us), may spend `us`
-- microseconds (EXPIRE_US or SKIP_SWEEP_US) and has handled `done` messages so far; 0: the call
-- stops here.
local function expire_next(start, done, us)
  local cap = EXPIRE_BUDGET
  local c = EXPIRE_CHUNK
  if done > 0 then
    local spent = clock_us() - start
    if spent <= 0 then  -- the clock stands still
      cap = math.floor(EXPIRE_STILL * us / EXPIRE_US)
    elseif spent >= us then
      return 0
    else  -- as many as fit in the time left at the rate so far
      c = math.min(c, math.floor((us - spent) * done / spent))
    end
  end
  c = math.min(c, cap - done)
  if c < EXPIRE_MIN and c < cap - done then return 0 end
  return math.max(c, 0)
end

-- Remove the log entries of the ascending seqs nums[a..b] (strings seqs[a..b]). The run of
-- consecutive seqs they start with goes with one XTRIM MINID when nothing older is left in the
-- log: a backlog expired in seq order is always the log's oldest part, and an XDEL seeks and
-- rewrites its stream node for each id (about 15 times the work of a trim per entry).
local function remove_run(G, nums, seqs, a, b)
  local p = a
  while p < b and nums[p + 1] == nums[p] + 1 do p = p + 1 end
  if #redis.call('XRANGE', G.log, '-', '(' .. seqs[a] .. '-0', 'COUNT', 1) == 0 then
    redis.call('XTRIM', G.log, 'MINID', nums[p] + 1)
    a = p + 1
  end
  if a > b then return end
  local rest = {}
  for i = a, b do rest[i - a + 1] = seqs[i] end
  call_many('XDEL', G.log, rest)
end

-- Expire the messages nums[a..b] (ascending seqs; seqs[a..b] the same as strings), members of
-- the expiry index (K_EXP) whose TTL has passed, that are available or deferred (a locked one has
-- no index entry: its lock's end expires it; it is passed over). Their per-message writes are
-- batched: a few calls for the chunk rather than a few per message. The caller removes them from
-- the index. Returns the seqs it expired and their count.
-- Available at or below the cursor: in ready, or passed over by take() while expired (in the
-- index, in neither ready, deferred nor sched, and not locked). `indexed`: the seqs were taken
-- from the index (sweep_expired), else they were read off the log's head (sweep_head), where
-- the index and sched say which ones at or below the cursor take() passed over.
local function expire_chunk(cfg, nums, seqs, a, b, fs_head, indexed)
  -- Ascending seqs are a few runs of consecutive ones, each read with one XRANGE (a read per
  -- entry seeks and scans its stream node every time). `fs_head`: their entries, when they were
  -- read already as the log's oldest ones.
  local lo = fs_head and b + 1 or a
  local fs = fs_head or {}
  for i = lo, b do
    if i == b or nums[i + 1] > nums[i] + 8 then  -- a run ends (a short gap is read over)
      local r = redis.call('XRANGE', MAIN.log, seqs[lo], seqs[i])
      for j = 1, #r do
        local id = r[j][1]
        fs[string.sub(id, 1, #id - 2)] = r[j][2]
      end
      lo = i + 1
    end
  end
  local cur = cursor_of(MAIN, cfg)
  local unlocked = {}  -- seq -> true: at or below the cursor, available or deferred (sweep_head's chunk)
  if cur and not indexed then
    local ask, m = {}, 0
    for i = a, b do
      if nums[i] <= cur and fs[seqs[i]] then
        m = m + 1
        ask[m] = seqs[i]
      end
    end
    if m > 0 then
      local inx, insc = redis.call('ZMSCORE', K_EXP, unpack(ask)), redis.call('ZMSCORE', K_SCHED, unpack(ask))
      local avail, v = {}, 0
      for j = 1, m do
        if inx[j] and not insc[j] then
          unlocked[ask[j]] = true
          v = v + 1
          avail[v] = ask[j]
        end
      end
      -- those abandoned or deferred before they expired leave ready or deferred, in one call each
      if v > 0 then
        call_many('ZREM', MAIN.ready, avail)
        call_many('ZREM', MAIN.deferred, avail)
      end
    end
  end
  local sids, in_sr = {}, {}
  if cfg.sess then
    -- A run of consecutive seqs of one session whose members are all in SES.sr leaves it with one
    -- ZREMRANGEBYLEX: its members are adjacent there ('<sid> NUL <seq>'). The range is read first:
    -- it holds the whole run when it has that many members of the run's length (a longer one is of
    -- a session '<sid> NUL ...', which must stay).
    for i = a, b do
      local f = fs[seqs[i]]
      sids[i] = f and sess_of(f)
    end
    local i = a
    while i <= b do
      local j, sid = i, sids[i]
      while sid and j < b and sids[j + 1] == sid and nums[j + 1] == nums[j] + 1 do j = j + 1 end
      if sid and j > i then
        local x, y = '[' .. skey(sid, nums[i]), '[' .. skey(sid, nums[j])
        local got = redis.call('ZRANGEBYLEX', SES.sr, x, y, 'LIMIT', 0, j - i + 2)
        local whole = #got == j - i + 1
        local len = #sid + 14
        for m = 1, #got do
          if #got[m] ~= len then whole = false end
        end
        if whole then
          redis.call('ZREMRANGEBYLEX', SES.sr, x, y)
          for m = i, j do in_sr[m] = true end
        end
      end
      i = j + 1
    end
  end
  local gone, gnums, dfs, n, size = {}, {}, {}, 0, 0
  for i = a, b do
    local seq = seqs[i]
    local f = fs[seq]
    local available = false
    if not f then
      available = false
    elseif cfg.sess then
      local sid = sids[i]
      available = in_sr[i] or (sid and redis.call('ZREM', SES.sr, skey(sid, seq)) == 1)
                  or redis.call('ZREM', MAIN.ready, seq) == 1 or redis.call('ZREM', MAIN.deferred, seq) == 1
    else  -- past the cursor: never read, so neither locked nor deferred
      available = unlocked[seq] or (cur and nums[i] > cur) or redis.call('ZREM', MAIN.ready, seq) == 1
                  or redis.call('ZREM', MAIN.deferred, seq) == 1
                  or (indexed and cur and not redis.call('ZSCORE', K_SCHED, seq)
                      and redis.call('HEXISTS', MAIN.lk, seq) == 0)
    end
    if available then
      n = n + 1
      gone[n], gnums[n], dfs[n] = seq, nums[i], f
      size = size + #f[2]
    end
  end
  if n == 0 then return gone, 0 end
  -- The delivery counts of these messages (seq -> count, those that have one), and the seqs whose
  -- count goes. The dc hash holds the counts of messages delivered and not locked now (abandoned,
  -- deferred): usually far fewer than a chunk, so the whole hash is read rather than a field per
  -- message; a larger one is asked for these seqs alone, or not at all when they are dropped.
  local nd = redis.call('HLEN', MAIN.dc)
  local dcs, uncount = {}, {}
  if nd > 0 and nd <= n then
    local all = redis.call('HGETALL', MAIN.dc)
    for i = 1, #all, 2 do dcs[all[i]] = all[i + 1] end
  elseif nd > 0 and cfg.dl_exp then
    local got = redis.call('HMGET', MAIN.dc, unpack(gone))
    for i = 1, n do dcs[gone[i]] = got[i] end
  elseif nd > 0 then
    uncount = gone
  end
  if cfg.dl_exp then  -- dead_letter() of each
    local dseq = redis.call('HINCRBY', K_ST, 'dseq', n) - n
    local ready, counts, nc = {}, {}, 0
    local reason, description = 'TTLExpiredException', 'The message expired and was dead lettered.'
    for i = 1, n do
      local f, d = dfs[i], tostring(dseq + i)  -- formatted once for its three uses
      redis.call('XADD', DLQ.log, d .. '-0', 'b', f[2], 'e', f[4], 'x', '0', 'r', reason,
                 'rd', description, 'os', gone[i])
      ready[2 * i - 1], ready[2 * i] = d, d
      local dc = dcs[gone[i]]
      if dc and dc ~= '0' then
        counts[nc + 1], counts[nc + 2] = d, dc
        nc = nc + 2
      end
    end
    call_many('ZADD', DLQ.ready, ready)
    if nc > 0 then call_many('HSET', DLQ.dc, counts) end
  else  -- drop() of each
    redis.call('HINCRBY', K_ST, 'size', -size)
  end
  if fs_head and n == b - a + 1 then  -- all of the log's oldest entries: no older one to look for
    redis.call('XTRIM', MAIN.log, 'MINID', gnums[n] + 1)
  else
    remove_run(MAIN, gnums, gone, 1, n)
  end
  if nd > 0 and uncount ~= gone then
    for i = 1, n do
      if dcs[gone[i]] then uncount[#uncount + 1] = gone[i] end
    end
  end
  if #uncount > 0 then call_many('HDEL', MAIN.dc, uncount) end
  return gone, n
end

-- Expire the messages at the head of the main log (its oldest entries) while they have expired:
-- a backlog that expired is usually the log's oldest part, read here in seq order with one XRANGE
-- a chunk and removed with one XTRIM (includes no sort of the index, whose same-ms members are in
-- string order). Stops at the first entry that has not expired, or at a chunk holding one that is
-- not available (locked: its lock's end expires it). Returns whether the budget ran out, and how
-- many it expired.
local function sweep_head(cfg, now, start, us)
  local now_s = tostring(now)
  local chunk, done = 1, 0
  while true do
    local r = redis.call('XRANGE', MAIN.log, '-', '+', 'COUNT', chunk)
    local nums, seqs, fs, k = {}, {}, {}, 0
    for i = 1, #r do
      local f = r[i][2]
      local x = f[6]  -- decimal ms (no sign, exponent or leading zeros): longer is later
      if x == '0' or #x > #now_s or (#x == #now_s and x > now_s) then break end
      local id = r[i][1]
      local seq = string.sub(id, 1, #id - 2)
      k = k + 1
      nums[k], seqs[k], fs[seq] = tonumber(seq), seq, f
    end
    if k == 0 then return false, done end
    local gone, n = expire_chunk(cfg, nums, seqs, 1, k, fs)
    if n > 0 then call_many('ZREM', K_EXP, gone) end
    if n < k or k < #r then return false, done + n end
    done = done + n
    -- (the first read only looked whether the head has expired)
    chunk = expire_next(start, done, us)
    if chunk == 0 then return true, done end
  end
end

-- Whether the first entry past the main log's cursor has expired: a backlog of expired messages
-- lies in take()'s way (it passes over them: see take()).
local function backlog_ahead(cfg, now)
  local cur = cursor_of(MAIN, cfg)
  if not cur then return false end
  local e = redis.call('XRANGE', MAIN.log, cur + 1, '+', 'COUNT', 1)[1]
  local x = e and e[2][6]
  return x ~= nil and x ~= '0' and tonumber(x) <= now
end

-- Expire the messages whose TTL passed by `now`, within the per-call expiry budget: the log's head
-- (sweep_head), then the rest from the expiry index, EXPIRE_CHUNK members at a time. `skipping`:
-- the caller's take() can pass over expired messages past the cursor (a receive of the main queue).
-- Returns true when it stopped on the budget with expired messages left in the index, and whether
-- the caller's take() is to pass over expired ones (backlog_ahead: the sweep took the smaller
-- share of the call). Only a dead-lettering entity's take() passes over them: a dead-lettering
-- costs several times a read, while a drop off the log's head (an XTRIM) costs about a read,
-- which the sweep would then do again.
local function sweep_expired(cfg, now, skipping)
  if #redis.call('ZRANGEBYSCORE', K_EXP, '-inf', now, 'LIMIT', 0, 1) == 0 then return false, false end
  local ahead = skipping and cfg.dl_exp and backlog_ahead(cfg, now)
  local us = ahead and SKIP_SWEEP_US or EXPIRE_US
  local start = clock_us()
  local over, done = sweep_head(cfg, now, start, us)
  if over then return true, ahead end
  while true do
    local c = expire_next(start, done, us)
    if c == 0 then return #redis.call('ZRANGEBYSCORE', K_EXP, '-inf', now, 'LIMIT', 0, 1) > 0, ahead end
    local old = redis.call('ZRANGEBYSCORE', K_EXP, '-inf', now, 'LIMIT', 0, c + 1)
    local k = #old
    local left = k > c  -- one more than the chunk is read to know whether any are left
    if left then
      old[k] = nil
      k = c
    end
    if k > 0 then
      redis.call('ZREMRANGEBYRANK', K_EXP, 0, k - 1)
      local nums, seqs = {}, {}
      for i = 1, k do nums[i] = tonumber(old[i]) end
      table.sort(nums)
      for i = 1, k do seqs[i] = string.format('%d', nums[i]) end
      expire_chunk(cfg, nums, seqs, 1, k, nil, true)
    end
    if not left then return false, ahead end
    done = done + c
  end
end

-- Bounded housekeeping before handing messages out: due schedules, elapsed locks (up to `limit`
-- each), expiries (sweep_expired, `skipping` passed on). Returns true when expired messages are
-- left for another call, and whether take() is to pass over expired ones past the cursor.
local function sweep(G, cfg, now, limit, skipping)
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
  if G.main then return sweep_expired(cfg, now, skipping) end
  return false, false
end

-- Message bytes a call reads at most (receive, session_receive, peek, forward_out): past them it
-- takes no further message (always at least one), so a count of large messages cannot hold the
-- server (5,000 of 50 KB took 3.3 s in one call). Reads go in chunks of read_chunk(cfg) messages,
-- so one chunk can pass READ_BYTES by at most READ_BYTES (docs/keyspace.md, Per-call caps).
local READ_BYTES = 8388608
-- And the wall time a call spends reading messages (receive, session_receive, receive_deferred):
-- past it no further chunk is read, and the reply says to call again at once (5,000 messages of
-- 1 KB took 70 ms in one receive). Wall time, not a count: a loaded server gets through fewer
-- messages in it, and the call stays short all the same. A chunk is at most READ_CHUNK messages,
-- so the clock is looked at often enough.
local READ_US, READ_CHUNK = 6000, 256
local function read_chunk(cfg)
  return math.max(1, math.min(READ_CHUNK, math.floor(READ_BYTES / cfg.max_msg)))
end

-- Up to `want` log entries of group G from `from` on (an XRANGE start: '-', '<seq>' or
-- '(<id>'), oldest first, read in chunks of `chunk` (read_chunk(cfg)), no further chunk past
-- READ_BYTES (peek, forward_out). Returns the entries, and the seq after the last one when
-- READ_BYTES stopped the read with fewer than `want` (where a next call goes on), else 0.
local function read_log(G, from, want, chunk)
  local r, n, bytes = {}, 0, 0
  while n < want do
    if bytes >= READ_BYTES then
      local id = r[n][1]
      return r, tonumber(string.sub(id, 1, #id - 2)) + 1
    end
    local ask = math.min(want - n, chunk)
    local page = redis.call('XRANGE', G.log, from, '+', 'COUNT', ask)
    for i = 1, #page do
      n = n + 1
      r[n] = page[i]
      bytes = bytes + #page[i][2][2]
    end
    if #page < ask then break end
    from = '(' .. page[#page][1]
  end
  return r, 0
end

-- Up to `want` available messages of G, oldest first: ready, then the main log past the cursor
-- (which moves on over what it reads). At most want + limit are read, and
-- no further chunk past READ_BYTES, nor, when `timed`, past READ_US: expired ones met on the way
-- are expired (never handed out), pending schedules past the cursor are passed over (the sweep
-- puts them in ready when due). Returns seqs, log entries, expires ms, their count n, and how many
-- of them came from ready (only those can have a delivery count: the rest were never delivered),
-- and whether it stopped on READ_US.
-- `skip` (the sweep found expired messages past the cursor: sweep_expired): the cursor passes
-- over expired entries without expiring them, for up to SKIP_READ_US and SKIP_MAX entries, on top
-- of want + limit. Such an entry stays in the expiry index, in neither ready nor deferred: the
-- sweeps that follow expire it (expire_chunk counts an index member at or below the cursor that
-- is neither locked nor a pending schedule as available), and the counts, which go by the log's
-- length less the locked, deferred and scheduled, see it as before. Putting it in ready instead
-- would set it before the cursor for every later take(), which reads ready first.
-- tonumber is a strtod, per message a large part of a receive: the expiry of log entry f is read
-- as a number only when it is not '0' (most messages have none), and an enqueue time is compared
-- with now as decimal ms strings (both written from integers below 1e14: no sign, exponent or
-- leading zeros, so longer is later, else byte order).
local function expiry(f)
  local x = f[6]
  if x == '0' then return 0 end
  return tonumber(x)
end

local function take(G, cfg, now, want, limit, timed, skip)
  local seqs, fields, xs = {}, {}, {}
  local n = 0
  local budget = want + limit
  local chunk, bytes = read_chunk(cfg), 0
  local start, late = clock_us(), false
  local read_us = skip and SKIP_READ_US or READ_US
  local function over()  -- read_us spent: the caller reports that more may be left
    late = timed and clock_us() - start >= read_us
    return late
  end
  local function offer(seq, f)  -- an expired message is expired, never handed out
    local x = expiry(f)
    if G.main and x > 0 and x <= now then
      expire(cfg, seq, f)
    else
      n = n + 1
      seqs[n], fields[n], xs[n] = seq, f, x
    end
  end
  while n < want and budget > 0 and bytes < READ_BYTES do
    -- ZRANGE + ZREMRANGEBYRANK: ZPOPMIN's reply would carry every score, formatted as a double
    local batch = redis.call('ZRANGE', G.ready, 0, math.min(want - n, budget, chunk) - 1)
    local k = #batch
    if k == 0 then break end
    redis.call('ZREMRANGEBYRANK', G.ready, 0, k - 1)
    budget = budget - k
    local fs = entries(G, batch)
    for i = 1, k do
      local seq = batch[i]
      local f = fs[seq]
      if f then
        offer(seq, f)
        bytes = bytes + #f[2]
      end
    end
    if over() then break end
  end
  local from_ready = n
  local cur = n < want and budget > 0 and bytes < READ_BYTES and not late and cursor_of(G, cfg)
  if not cur then return seqs, fields, xs, n, from_ready, late end
  local first = cur
  local now_s = tostring(now)
  local passed, np = {}, 0  -- seqs read past the cursor (a due schedule among them may still be in sched)
  local skipped = 0
  while n < want and budget > 0 and bytes < READ_BYTES do
    -- passing over expired entries, a page holds as many as were passed over so far (see
    -- SKIP_PAGE): the cursor stops after the last entry used (the page's entries past it stay unread)
    local ask = skip and math.min(SKIP_PAGE, math.max(chunk, skipped)) or math.min(want - n, budget, chunk)
    local r = redis.call('XRANGE', G.log, cur + 1, '+', 'COUNT', ask)
    local k = #r
    if k == 0 then break end
    local used = 0
    for i = 1, k do  -- offer() inlined: this loop runs per message of nearly every receive
      if n >= want or budget <= 0 then break end
      used = i
      local e = r[i]
      local id, f = e[1], e[2]
      bytes = bytes + #f[2]
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
          budget = budget - 1
        elseif skip and tonumber(x) <= now then
          skipped = skipped + 1
        else
          offer(seq, f)
          budget = budget - 1
        end
      else
        budget = budget - 1
      end
    end
    local id = r[used][1]
    cur = tonumber(string.sub(id, 1, #id - 2))
    if over() or skipped >= SKIP_MAX then break end
  end
  if cur ~= first then redis.call('HSET', K_ST, 'cur', cur) end
  if np > 0 and redis.call('ZCARD', K_SCHED) > 0 then call_many('ZREM', K_SCHED, passed) end
  return seqs, fields, xs, n, from_ready, late
end

-- The lock records of seqs that still hold an unexpired lock with their nonce (nonces[i], or
-- `nonces` itself when it is one string shared by all), by the server clock `now` (false for the
-- others): what every settlement checks first.
-- A record with its lock's end in it (lock_record) is checked on its own. For the others (a
-- session message, a record of the older form) the locked zset says: a lock record and its
-- locked-until are written and removed together, so when no lock of the group has elapsed (one
-- ZRANGEBYSCORE) a record alone says the lock holds.
local function held(G, seqs, nonces, now)
  local recs = redis.call('HMGET', G.lk, unpack(seqs))
  local out = {}
  local shared = type(nonces) == 'string' and nonces .. '|'
  local pfx = {}  -- nonce -> 'nonce|' (a mixed batch mostly repeats one nonce)
  local zs = nil  -- indexes whose record has no lock end: the zset decides
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
    out[i] = false
    if rec and string.sub(rec, 1, #p) == p then
      local u = string.match(rec, '^(%d+)|', #p + 1)
      if not u then
        zs = zs or {}
        zs[#zs + 1] = i
        out[i] = rec
      elseif tonumber(u) >= now then
        out[i] = rec
      end
    end
  end
  if zs and #redis.call('ZRANGEBYSCORE', G.locked, '-inf', '(' .. now, 'LIMIT', 0, 1) > 0 then
    local ask = {}
    for j = 1, #zs do ask[j] = seqs[zs[j]] end
    local untl = redis.call('ZMSCORE', G.locked, unpack(ask))
    for j = 1, #zs do
      if not (untl[j] and tonumber(untl[j]) >= now) then out[zs[j]] = false end
    end
  end
  return out
end

-- held() for the messages a settlement script names from ARGV[2] on: n, then the lock nonce they
-- all share followed by n seqs, or '' followed by n pairs (seq, nonce). Returns the seqs, their
-- lock records and the index of the first ARGV after them; nil when n is not a count of what
-- ARGV holds (the caller fails INVALID: a hostile n such as 'inf' would loop until BUSY).
local function held_args(G, now)
  local n = tonumber(ARGV[2])
  local nonce = ARGV[3]
  local per = (nonce == '' or nonce == nil) and 2 or 1
  if not n or n < 0 or n ~= math.floor(n) or nonce == nil or 3 + per * n > #ARGV then return nil end
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

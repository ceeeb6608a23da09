--[[
  receive: hand out up to `count` available messages of one partition, oldest first (ready, then
  the main log past its cursor: includes/messages.lua's take), after a bounded sweep (due
  schedules, elapsed locks, expiries: includes/messages.lua's sweep). Expired messages are never
  handed out.
  A dead-letter receive sweeps the main queue first, so messages whose TTL or last delivery has
  passed are in the dead-letter group when it looks (no main-queue receive is needed).
  KEYS: the first of the partition's 24 keys (cfg) alone: includes/partition.lua names the others;
        a subscription's receive passes its topic partition's fan-out journal (keys.journal_key)
        after it
  ARGV[1] group 'm' | 'd'   ARGV[2] mode 'L' peek-lock | 'D' receive-and-delete
  ARGV[3] count   ARGV[4] lock nonce   ARGV[5] sweep limit
  Returns: {now_ms, locked_until_ms, more, then per message: seq, delivery_count, blob,
           enqueued_ms, expires_ms [, dead-letter reason, dead-letter description: group 'd' only]}
           (delivery_count and expires_ms as integer replies)
           more: 1 when the sweep stopped on its expiry budget with expired messages left (call
           again at once: a live message may wait behind them; the read passes over expired
           ones past the cursor meanwhile), or the read stopped on its time budget
           (includes/messages.lua's READ_US: call again for the rest), else 0;
           {0, 0, 2} and nothing else: a fan-out to the subscriptions (or a cancel of their
           copies) is unfinished and its writer stalled, or a cancelled message falls due
           (includes/journal.lua): the caller finishes it, then calls again
  Errors:  NOTFOUND  DISABLED (receive)  SESSIONREQ (the entity requires sessions: session_receive)
  One message under a lock from the main queue of a non-session entity (a receive with
  prefetch_count 0 or a count of 1) is handed out before includes/partition.lua's opening (Redis
  runs a script's whole body at every call) when nothing is due for the sweep: no due schedule, no
  elapsed lock, no expired message. It names the keys it uses itself, as partition.lua does (the
  cfg key's prefix followed by their names in keys.PARTITION_KEY_NAMES, under partition.lua's
  variable names; tests/unit/test_lua_contract.py checks both), and reads the caller's generation,
  the last argument, and the clock in place. It takes the first of ready, else the first entry past
  the cursor, and writes its one lock record. Anything else (a subscription's fan-out journal
  present, a sweep to do, a message that is expired or a pending schedule, an entry gone from the
  log, several messages, another group or mode, a session, stale or missing entity) takes the
  general path, which reads everything again.
]]
if ARGV[1] == 'm' and ARGV[2] == 'L' and ARGV[3] == '1' then
  local K_CFG = KEYS[1]
  local K_FJ = KEYS[2]  -- a subscription's: its topic partition's fan-out journal
  local CALLER_GEN = ARGV[#ARGV]
  local c = redis.call('HMGET', K_CFG, 'status', 'lock_ms', 'sess', 'gen')
  local status, gen = c[1], c[4]
  -- a journal left (a fan-out or cancel in progress, or its writer died): the general path
  -- decides whether to finish it first (journal_to_finish)
  if status and status ~= 'Disabled' and status ~= 'ReceiveDisabled' and c[3] ~= '1'
      and (CALLER_GEN == '' or not gen or gen == '' or gen == CALLER_GEN)
      and not (K_FJ and redis.call('EXISTS', K_FJ) == 1) then
    local t = redis.call('TIME')  -- now_ms()
    local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    local untl = now + tonumber(c[2])
    local p = string.sub(K_CFG, 1, -4)  -- '<tag>:' of '<tag>:cfg'
    local K_ST, K_SCHED, K_EXP = p .. 'st', p .. 'sched', p .. 'exp'
    local MAIN = {log = p .. 'log', ready = p .. 'ready', locked = p .. 'locked', lk = p .. 'lk',
                  dc = p .. 'dc'}
    -- nothing for sweep() to do: a due schedule, an elapsed lock, an expiry (without message TTLs
    -- and schedules the schedule and expiry sets are absent: one EXISTS answers for both, 2.6 µs
    -- less than their two reads; the locked set, which other receivers' locks keep, is read).
    -- The first EXISTS asks about ready too: absent (nothing abandoned or returned; the usual
    -- case past the cursor) it also saves ready's ZRANGE, present it costs the second EXISTS.
    local quiet = redis.call('EXISTS', K_SCHED, K_EXP, MAIN.ready) == 0
    if (quiet or redis.call('EXISTS', K_SCHED, K_EXP) == 0
        or (#redis.call('ZRANGEBYSCORE', K_SCHED, '-inf', now, 'LIMIT', 0, 1) == 0
        and #redis.call('ZRANGEBYSCORE', K_EXP, '-inf', now, 'LIMIT', 0, 1) == 0))
        and #redis.call('ZRANGEBYSCORE', MAIN.locked, '-inf', '(' .. now, 'LIMIT', 0, 1) == 0 then
      local seq, f, dc, cur
      local first = not quiet and redis.call('ZRANGE', MAIN.ready, 0, 0)[1]
      if first then
        local e = redis.call('XRANGE', MAIN.log, first, first)[1]
        if e then seq, f, dc = first, e[2], redis.call('HGET', MAIN.dc, first) end
      else
        local st = redis.call('HMGET', K_ST, 'cur', 'seq')
        local e = redis.call('XRANGE', MAIN.log, tonumber(st[1] or st[2] or '0') + 1, '+', 'COUNT', 1)[1]
        if not e then  -- nothing available
          redis.call('HSET', K_ST, 'acc', now)  -- touch(now)
          return {now, untl, 0}
        end
        seq, f, cur = string.sub(e[1], 1, #e[1] - 2), e[2], true
      end
      -- take()'s checks: an expired message is expired, a pending schedule past the cursor
      -- (enqueue time ahead: decimal ms strings, longer is later) is passed over
      local x, enq, now_s = f and f[6], f and f[4], tostring(now)
      if f and (x == '0' or tonumber(x) > now) and (#enq < #now_s or (#enq == #now_s and enq <= now_s)) then
        if cur then
          redis.call('HSET', K_ST, 'cur', seq, 'acc', now)  -- and touch(now)
        else
          redis.call('ZREM', MAIN.ready, seq)
          redis.call('HSET', K_ST, 'acc', now)  -- touch(now)
        end
        if x ~= '0' then redis.call('ZREM', K_EXP, seq) end
        dc = (tonumber(dc) or 0) + 1
        -- includes/messages.lua's lock_record(nonce, 'r', x, size, dc, nil, untl)
        redis.call('HSET', MAIN.lk, seq, ARGV[4] .. '|' .. untl .. '|r|' .. x .. '|' .. #f[2] .. '|' .. dc)
        redis.call('ZADD', MAIN.locked, untl, seq)
        return {now, untl, 0, seq, dc, f[2], enq, tonumber(x)}
      end
    end
  end
end
--@include partition
--@include journal
-- a publish or cancel split across calls left its journal: when its writer died (no progress for
-- a while; includes/journal.lua) the caller finishes it first, so a topic nobody publishes to
-- again still delivers every copy; a live one is left to its writer, without waiting for it
if journal_to_finish() then return {0, 0, 2} end
--@include messages
local cfg = load_cfg()
local bad = check_receive(cfg)
if bad then return bad end
local G = group_of(ARGV[1])
if cfg.sess and G.main then return fail('SESSIONREQ') end
local lock = ARGV[2] == 'L'
local want = tonumber(ARGV[3])
local nonce = ARGV[4]
local limit = tonumber(ARGV[5])
local now = now_ms()
-- expired messages past the cursor: the sweep takes the smaller share of the call, and take()
-- passes over them to the live messages behind (includes/messages.lua's take)
local more, skip = sweep(MAIN, cfg, now, limit, G.main)
if not G.main then sweep(G, cfg, now, limit) end

local untl = now + cfg.lock_ms
-- the sweep left expired messages: read no more than asked for (they are the next call's work)
local seqs, fields, xs, n, from_ready, late = take(G, cfg, now, want, more and 0 or limit, true, skip)

local out = {now, untl, (more or late) and 1 or 0}
if n == 0 then
  touch(now)
  return out
end
-- the counts of earlier deliveries: only messages from ready can have one (those read past the
-- cursor were never delivered), and only while the dc hash is not empty (a lock ended without
-- completion)
local counted = from_ready > 0 and redis.call('HLEN', G.dc) > 0
local dcs = counted and redis.call('HMGET', G.dc, unpack(seqs, 1, from_ready)) or {}
local expiring = {}
local e, o = 0, 3
local dlq = not G.main
for i = 1, n do
  local dc = dcs[i]
  if dc then dc = dc + 1 else dc = 1 end
  dcs[i] = dc
  local x, f = xs[i], fields[i]
  if x > 0 then
    e = e + 1
    expiring[e] = seqs[i]
  end
  -- includes/messages.lua's put(), inlined (the reply layout is the one in the header above)
  out[o + 1], out[o + 2], out[o + 3], out[o + 4], out[o + 5] = seqs[i], dc, f[2], f[4], x
  if dlq then
    out[o + 6], out[o + 7] = f[8], f[10]
    o = o + 7
  else
    o = o + 5
  end
end
if e > 0 and G.main then call_many('ZREM', K_EXP, expiring) end
if lock then
  local locks, recs = {}, {}
  local untl_s = tostring(untl)  -- a number is formatted (sprintf) at every use: strings here
  -- the records are includes/messages.lua's lock_record(nonce, 'r', x, size, dc, nil, untl),
  -- built inline
  local head = nonce .. '|' .. untl_s .. '|r|'
  local sizes = {}  -- blob length -> '|<length>|' (most messages of a batch share a few lengths)
  for i = 1, n do
    local f, seq, dc = fields[i], seqs[i], dcs[i]
    local b = #f[2]
    local sz = sizes[b]
    if not sz then
      sz = '|' .. b .. '|'
      sizes[b] = sz
    end
    locks[2 * i - 1], locks[2 * i] = untl_s, seq
    recs[2 * i - 1] = seq
    if dc == 1 then
      recs[2 * i] = head .. f[6] .. sz .. '1'
    else
      recs[2 * i] = head .. f[6] .. sz .. dc
    end
  end
  call_many('HSET', G.lk, recs)
  call_many('ZADD', G.locked, locks)
else
  local size = 0
  for i = 1, n do size = size + #fields[i][2] end
  call_many('XDEL', G.log, seqs)
  if counted then redis.call('HDEL', G.dc, unpack(seqs, 1, from_ready)) end
  redis.call('HINCRBY', K_ST, 'size', -size)
end
touch(now)
return out

--[[
  forward_out: move what one partition of a queue or subscription forwards into its transfer
  queue (the outbox, under the same hash tag), then return the oldest outbox entries for the
  caller to deliver. Available main-queue messages go when cfg.fwd names a destination,
  dead-lettered ones when cfg.fwdl does; due schedules, elapsed locks and expiries are swept first.
  A session entity's messages go session by session, each session's in send order; the session
  id travels in the message, so the destination keeps the session (fanout.destination_partition
  puts a session in one partition, and a destination that requires sessions files it there).
  A Disabled entity moves nothing (its outbox is still returned).
  KEYS: the partition's 24 keys, then its transfer queue's 24 (includes/keysets.lua); a
        subscription's call passes its topic partition's fan-out journal (keys.journal_key) after
        them
  ARGV[1] most messages to move   ARGV[2] most entries to return   ARGV[3] sweep limit
  (moves and returns also stop once READ_BYTES of messages were read: includes/messages.lua)
  Returns: {now_ms, incarnation, more, then 7 per entry: outbox seq, destination, hop count,
           expires_ms, blob, dead-letter reason, dead-letter description}
           (the reason is '' for a message forwarded from the main queue); more: 1 when the
           sweep stopped on its expiry budget with expired messages left (a live message may
           wait behind them: call again), else 0;
           {0, '', 2} and nothing else: a fan-out to the subscriptions (or a cancel of their
           copies) is unfinished and its writer stalled, or a cancelled message falls due
           (includes/journal.lua, as in receive.lua): the caller finishes it, then calls again
  Errors:  NOTFOUND
]]
--@include partition
--@include messages
--@include keysets
--@include journal
-- a subscription forwards no copy a receive would not hand out: a stalled fan-out or a cancel
-- whose messages fall due is finished first (receive.lua). The journal follows the two key sets,
-- not the first (includes/partition.lua's K_FJ).
K_FJ = key_after(1)
if journal_to_finish() then return {0, '', 2} end
local cfg = load_cfg()
if not cfg then return fail('NOTFOUND') end
local T = keyset(1)
local move_max, ret_max, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local now = now_ms()
local inc = redis.call('HGET', T.st, 'inc')
if not inc then
  local t = redis.call('TIME')
  inc = t[1] .. string.format('%06d', tonumber(t[2]))
  redis.call('HSET', T.st, 'inc', inc)
end
local dest = redis.call('HMGET', K_CFG, 'fwd', 'fwdl')

-- Up to `want` available messages of the sessions (cfg.sess), as take() gives the others: the
-- lowest members of SES.sr (whole sessions first, each in send order), handed on in send order.
-- A held session's available messages go too: an entity that forwards passes what it stores on.
-- Expired ones are expired. SES.sa is kept lazily (a session found without messages is dropped
-- when met), so it needs nothing here.
local function take_sessions(want)
  local seqs, fields, xs, n = {}, {}, {}, 0
  local members = redis.call('ZRANGE', SES.sr, 0, want - 1)
  if #members == 0 then return seqs, fields, xs, 0 end
  call_many('ZREM', SES.sr, members)
  local ids = {}
  for i = 1, #members do ids[i] = sess_seq(members[i]) end
  -- in send order over the sessions taken (entries() wants ascending seqs; each session's stay in order)
  table.sort(ids, function(a, b) return tonumber(a) < tonumber(b) end)
  local es = entries(MAIN, ids)
  for i = 1, #ids do
    local seq = ids[i]
    local f = es[seq]
    if f then
      local x = tonumber(f[6])
      if x > 0 and x <= now then
        expire(cfg, seq, f)
      else
        n = n + 1
        seqs[n], fields[n], xs[n] = seq, f, x
      end
    end
  end
  return seqs, fields, xs, n
end

local more = 0
local function move(G, to)
  if sweep(G, cfg, now, limit) then more = 1 end
  local seqs, fs, xs, n
  if G.main and cfg.sess then
    seqs, fs, xs, n = take_sessions(move_max)
  else
    seqs, fs, xs, n = take(G, cfg, now, move_max, limit)  -- expired ones are expired there
  end
  local moved = 0
  for i = 1, n do
    local seq, f, x = seqs[i], fs[i], xs[i]
    local tseq = redis.call('HINCRBY', T.st, 'seq', 1)
    local hop = field_of(f, 'h') or '0'
    if G.main then
      redis.call('XADD', T.m.log, tseq .. '-0', 'b', f[2], 'e', now, 'x', x, 'h', hop, 't', to)
      redis.call('ZREM', K_EXP, seq)
    else
      redis.call('XADD', T.m.log, tseq .. '-0', 'b', f[2], 'e', now, 'x', '0', 'h', hop, 't', to,
                 'r', f[8], 'rd', f[10])
    end
    redis.call('ZADD', T.m.ready, tseq, tseq)
    redis.call('XDEL', G.log, seq)
    redis.call('HDEL', G.dc, seq)
    moved = moved + #f[2]
  end
  if moved > 0 then
    redis.call('HINCRBY', K_ST, 'size', -moved)
    redis.call('HINCRBY', T.st, 'size', moved)
  end
end

if cfg.status ~= 'Disabled' then
  if dest[1] and dest[1] ~= '' then move(MAIN, dest[1]) end
  if dest[2] and dest[2] ~= '' then move(DLQ, dest[2]) end
end

local out = {now, inc, more}
-- at most ret_max entries and READ_BYTES of them (includes/messages.lua); the caller goes on
-- while a reply is full by either
local r = read_log(T.m, '-', ret_max, read_chunk(cfg))
for i = 1, #r do
  local id = r[i][1]
  local f = r[i][2]
  out[#out + 1] = string.sub(id, 1, #id - 2)
  out[#out + 1] = field_of(f, 't') or ''
  out[#out + 1] = field_of(f, 'h') or '0'
  out[#out + 1] = field_of(f, 'x') or '0'
  out[#out + 1] = f[2]
  out[#out + 1] = field_of(f, 'r') or ''
  out[#out + 1] = field_of(f, 'rd') or ''
end
return out

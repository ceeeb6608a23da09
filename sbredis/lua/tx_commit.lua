--[[
  tx_commit: apply a transaction's operations on one partition (its home), all or none: settlements
  of messages received from this partition, sends to this partition's main queue, and sends to
  other entities, which go into this partition's transfer queue (the outbox, same hash tag) for
  the forwarder to deliver once (docs/transactions.md). Everything is checked first (every lock
  held and unexpired by the server clock, sizes, quota, entity status), then applied.
  A committed transaction leaves a marker 'tx:<id>' in the dd sorted set (score: when it may be
  forgotten, ARGV[2] ms later), so a commit retried after a connection error in doubt is
  recognised and not applied twice.
  KEYS: the partition's 24 keys, then its transfer queue's 24 (includes/keysets.lua)
  ARGV[1] transaction id   ARGV[2] how long the commit marker is kept (ms)
  ARGV[3] n settlements, then 6 per settlement: action ('complete' | 'abandon' | 'defer' |
          'dead_letter' | 'renew'), group ('m' | 'd'), seq, lock nonce, dead-letter reason,
          dead-letter description ('' unless dead_letter)
  ARGV[4 + 6n] m sends to this partition, then 4 per message (includes/store.lua's layout, w = 4)
  ARGV[5 + 6n + 4m] v transfers, then 2 per transfer: destination path, blob
  Returns: {1, now_ms, locked_until_ms (of renewed locks), seq_1, ..., seq_m}  seq 0: a duplicate
           {2, now_ms, locked_until_ms}  committed before (this is a retry): nothing applied now
           {0, i_1, ..., i_k}  nothing applied: the settlements i_1..i_k (1-based) lost their locks
  Errors:  NOTFOUND  DISABLED (receive when settling, send when sending)  SIZE  QUOTA
           INVALID (an unknown action or group, dead-lettering a dead-lettered message, transfers
           from a partition without a transfer queue)
]]
--@include partition
--@include messages
--@include keysets
--@include settle
--@include store
local cfg = load_cfg()
if not cfg then return fail('NOTFOUND') end
local marker = 'tx:' .. ARGV[1]
local keep_ms = tonumber(ARGV[2])
local done_at = redis.call('ZSCORE', K_DD, marker)
if done_at then
  local at = tonumber(done_at) - keep_ms
  return {2, at, at + cfg.lock_ms}
end
local n = tonumber(ARGV[3])
local sb = 4 + 6 * n
local m = tonumber(ARGV[sb])
local vb = sb + 1 + 4 * m
local v = tonumber(ARGV[vb])

-- check
if n > 0 then
  local bad = check_receive(cfg)
  if bad then return bad end
end
if m > 0 then
  if cfg.status == 'Disabled' or cfg.status == 'SendDisabled' then return fail('DISABLED') end
  local bad = store_check(cfg, sb, m, 4, false)
  if bad then return bad end
end
local T = keyset(1)
if v > 0 and redis.call('EXISTS', T.cfg) == 0 then return fail('INVALID') end
local now = now_ms()

local ACTIONS = {complete = true, abandon = true, defer = true, dead_letter = true, renew = true}
local ops = {}
local by_group = {m = {seqs = {}, nonces = {}, at = {}}, d = {seqs = {}, nonces = {}, at = {}}}
for i = 1, n do
  local a = 3 + 6 * (i - 1)
  local op = {action = ARGV[a + 1], group = ARGV[a + 2], seq = ARGV[a + 3],
              reason = ARGV[a + 5], description = ARGV[a + 6]}
  if not ACTIONS[op.action] or (op.group ~= 'm' and op.group ~= 'd') then return fail('INVALID') end
  if op.action == 'dead_letter' and op.group ~= 'm' then return fail('INVALID') end
  local g = by_group[op.group]
  g.seqs[#g.seqs + 1] = op.seq
  g.nonces[#g.nonces + 1] = ARGV[a + 4]
  g.at[#g.at + 1] = i
  ops[i] = op
end
local lost = {0}
for _, name in ipairs({'m', 'd'}) do
  local g = by_group[name]
  if #g.seqs > 0 then
    local recs = held(group_of(name), g.seqs, g.nonces, now)
    for j = 1, #g.seqs do
      local op = ops[g.at[j]]
      op.rec = recs[j]
      if op.rec and op.action == 'dead_letter' then
        op.f = entry(MAIN, op.seq)
        if not op.f then op.rec = false end
      end
      if not op.rec then lost[#lost + 1] = g.at[j] end
    end
  end
end
if #lost > 1 then
  table.sort(lost)
  return lost
end

-- apply
local untl = now + cfg.lock_ms
local completed = {m = {{}, {}}, d = {{}, {}}}
for i = 1, n do
  local op = ops[i]
  local G = group_of(op.group)
  if op.action == 'complete' then
    local c = completed[op.group]
    c[1][#c[1] + 1] = op.seq
    c[2][#c[2] + 1] = op.rec
  elseif op.action == 'abandon' then
    release(G, cfg, op.seq, op.rec, now, false)
  elseif op.action == 'defer' then
    defer_held(G, op.seq, op.rec)
  elseif op.action == 'dead_letter' then
    dead_letter_held(op.seq, op.rec, op.f, op.reason, op.description)
  else
    renew_held(G, {op.seq}, {op.rec}, untl)
  end
end
for _, name in ipairs({'m', 'd'}) do
  local c = completed[name]
  if #c[1] > 0 then complete_held(group_of(name), c[1], c[2]) end
end
local out = {1, now, untl}
if m > 0 then store(cfg, now, sb, m, 4, out) end
if v > 0 then
  local tseq = redis.call('HINCRBY', T.st, 'seq', v) - v
  local added = 0
  for i = 1, v do
    tseq = tseq + 1
    local blob = ARGV[vb + 2 * i]
    redis.call('XADD', T.m.log, tseq .. '-0', 'b', blob, 'e', now, 'x', '0', 'h', '0',
               't', ARGV[vb + 2 * i - 1])
    redis.call('ZADD', T.m.ready, tseq, tseq)
    added = added + #blob
  end
  redis.call('HINCRBY', T.st, 'size', added)
end
redis.call('ZREMRANGEBYSCORE', K_DD, '-inf', now)
redis.call('ZADD', K_DD, now + keep_ms, marker)
touch(now)
return out

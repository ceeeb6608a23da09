--[[
  partition: names for the 24 keys every script receives, the server clock, config and error replies.

  Every sbredis script is called with the same KEYS list: all keys of one partition, all under one
  hash tag (see sbredis/_core/keys.py for the keyspace table), or with the first of them (cfg) alone
  (complete, receive and send, the calls of a one-message loop: 23 fewer arguments to pack, send
  and parse at every call); then the others are named here from it, as keys.py names them: the
  cfg key's prefix followed by each name of keys.PARTITION_KEY_NAMES (st, sched, exp and dd at
  once, a group's or the sessions' keys when the script first uses them). All share the hash tag,
  so they are in the declared key's cluster slot (docs/keyspace.md, "Keys a script names itself").
    KEYS[1] cfg    hash    entity settings copied into the partition
    KEYS[2] st     hash    seq, dseq (last sequence numbers), size (bytes stored), acc (last use, ms),
                           cur (the main queue's cursor: includes/messages.lua's cursor_of)
    KEYS[3..8]     main queue group:        log ready locked lk dc deferred
    KEYS[9] sched  zset    seq -> scheduled enqueue ms
    KEYS[10] exp   zset    seq -> expires-at ms (available and deferred messages with a TTL)
    KEYS[11] dd    zset    message_id -> end of its duplicate-detection window (ms)
    KEYS[12..17]   dead-letter group:       log ready locked lk dc deferred
    KEYS[18..24]   sessions (SES):          sr sa sl sx sk ss su (includes/sessions.lua)
  A group is: log (stream, id "<seq>-0", fields b blob, e enqueued ms, x expires ms [, r, rd, os]),
  ready (zset seq -> seq: available, oldest first; in the main queue of a non-session entity only
  those at or below the cursor, the rest are available with no index), locked (zset seq -> locked-until ms),
  lk (hash seq -> lock record "nonce|locked-until|home|expires|size|delivery count", or for a
  session message "nonce|home|expires|size|delivery count|session id": includes/messages.lua's
  lock_record), dc (hash seq ->
  delivery count of a message not locked now: a lock carries the count in its record),
  deferred (zset seq -> seq).
  ARGV[1] of every message script names the group it works on: 'm' main queue, 'd' dead-letter.

  Every call passes one more argument after the script's own ARGV: the caller's entity generation
  (sbredis/_core/protocol/base.py's Call.gen), taken off ARGV here, before the script reads it.
  Each create of an entity writes a fresh generation into its cfg (field gen); load_cfg() treats a
  partition whose generation is not the caller's as missing and fail('NOTFOUND') answers STALE: the
  caller read its metadata before the entity was deleted and created again, and reloads it. An
  empty generation (admin tools, entities created before generations) is not checked.
]]
local K_CFG, K_ST, K_SCHED, K_EXP, K_DD, MAIN, DLQ, SES
-- after the 24 (or after the cfg key alone): a topic partition's fan-out journal
-- (keys.journal_key) in publish.lua and in a subscription's receive.lua, the only scripts that
-- read it (a queue's receive passes none: nil; in a call of several key sets, KEYS[25] starts the
-- next set)
local K_FJ
if #KEYS <= 2 then  -- the cfg key alone, or with a topic partition's fan-out journal after it
  local p = string.sub(KEYS[1], 1, -4)  -- '<tag>:' of '<tag>:cfg' (keys.PARTITION_KEY_NAMES, in order)
  K_CFG, K_ST, K_SCHED, K_EXP, K_DD, K_FJ = KEYS[1], p .. 'st', p .. 'sched', p .. 'exp', p .. 'dd', KEYS[2]
  -- A group's (and the sessions') key names are built on first use, as the group's prefix
  -- (g[0]) followed by the field's name, which is the key's name in keys.PARTITION_KEY_NAMES: a
  -- one-message call uses three to five of the 19, and this opening runs at every call.
  local named = {__index = function(g, f)
    local k = g[0] .. f
    g[f] = k
    return k
  end}
  MAIN = setmetatable({[0] = p, main = true}, named)
  DLQ = setmetatable({[0] = p .. 'd:', main = false}, named)
  SES = setmetatable({[0] = p}, named)
else
  K_CFG, K_ST, K_SCHED, K_EXP, K_DD, K_FJ = KEYS[1], KEYS[2], KEYS[9], KEYS[10], KEYS[11], KEYS[25]
  MAIN = {log = KEYS[3], ready = KEYS[4], locked = KEYS[5], lk = KEYS[6], dc = KEYS[7], deferred = KEYS[8],
          main = true}
  DLQ = {log = KEYS[12], ready = KEYS[13], locked = KEYS[14], lk = KEYS[15], dc = KEYS[16],
         deferred = KEYS[17], main = false}
  SES = {sr = KEYS[18], sa = KEYS[19], sl = KEYS[20], sx = KEYS[21], sk = KEYS[22], ss = KEYS[23],
         su = KEYS[24]}
end
local CALLER_GEN = table.remove(ARGV) or ''
local CFG_STALE = false  -- load_cfg() found the partition under another generation than the caller's

local function group_of(sub)
  if sub == 'd' then return DLQ end
  return MAIN
end

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- The reply of a topic script called with a stale subscription set (publish, cancel_topic_scheduled):
-- {-1, subv, name_1, forwards_1, ...} from the topic partition's cfg ('sub:<name>' fields), from
-- which the caller rebuilds its keys and calls again.
local function subs_reply(subv)
  local all = redis.call('HGETALL', K_CFG)
  local out = {-1, subv}
  for i = 1, #all, 2 do
    if string.sub(all[i], 1, 4) == 'sub:' then
      out[#out + 1] = string.sub(all[i], 5)
      out[#out + 1] = all[i + 1]
    end
  end
  return out
end

-- Error replies carry a short code that sbredis/_core/errors.py maps to an exception.
local function fail(code)
  if code == 'NOTFOUND' and CFG_STALE then code = 'STALE' end
  return redis.error_reply('SBERR ' .. code)
end

-- Entity settings, or nil when the entity does not exist (in this partition) or exists under
-- another generation than the caller's (then fail('NOTFOUND') answers STALE).
local function load_cfg()
  local c = redis.call('HMGET', K_CFG, 'status', 'lock_ms', 'max_dc', 'ttl_ms', 'dl_exp',
                       'dedup_ms', 'max_msg', 'max_size', 'sess', 'gen')
  if not c[1] then return nil end
  if CALLER_GEN ~= '' and c[10] and c[10] ~= '' and c[10] ~= CALLER_GEN then
    CFG_STALE = true
    return nil
  end
  return {status = c[1], lock_ms = tonumber(c[2]), max_dc = tonumber(c[3]), ttl_ms = tonumber(c[4]),
          dl_exp = c[5] == '1', dedup_ms = tonumber(c[6]), max_msg = tonumber(c[7]),
          max_size = tonumber(c[8]), sess = c[9] == '1'}
end

-- load_cfg() for a call that needs the entity's status alone (a settlement's one-message path):
-- two fields read instead of ten, no settings table; nil when load_cfg() would return nil.
local function load_status()
  local c = redis.call('HMGET', K_CFG, 'status', 'gen')
  if not c[1] then return nil end
  if CALLER_GEN ~= '' and c[2] and c[2] ~= '' and c[2] ~= CALLER_GEN then
    CFG_STALE = true
    return nil
  end
  return c[1]
end

-- nil when receiving (and settling) is allowed, else the error reply to return.
local function check_receive(cfg)
  if not cfg then return fail('NOTFOUND') end
  if cfg.status == 'Disabled' or cfg.status == 'ReceiveDisabled' then return fail('DISABLED') end
  return nil
end

-- tostring for integers that repeat within a call (sizes, counts): Lua formats a number with
-- sprintf at each use, a table lookup is cheaper.
local INT_STR = {}
local function int_str(n)
  local s = INT_STR[n]
  if not s then
    s = tostring(n)
    INT_STR[n] = s
  end
  return s
end

-- Before a writer gives out new main-queue seqs in a partition of a non-session entity: give the
-- partition its cursor (includes/messages.lua's cursor_of) if it has none, at its last seq, so the
-- messages stored from now on need no ready entry. (publish.lua does the same for a subscription.)
local function cursor_init()
  if redis.call('HEXISTS', K_ST, 'cur') == 0 then
    redis.call('HSET', K_ST, 'cur', redis.call('HGET', K_ST, 'seq') or '0')
  end
end

-- Last use of the partition (st.acc, ms): auto-delete on idle (idle.lua, at least 5 minutes) and
-- accessed_at read it. A one-message complete leaves it alone when the receive or renewal that
-- set the lock touched it less than ACC_SLACK_MS before (complete.lua): a write saved per message.
local function touch(now)
  redis.call('HSET', K_ST, 'acc', now)
end

-- Small hashes and sorted sets are kept as one packed list (ziplist / listpack) in which every
-- insert, lookup and removal scans the list: k pairs written into such a key cost O(k^2). Before a
-- large HSET or ZADD batch the key is turned into its hashtable / skiplist form (Redis converts when
-- a member is longer than hash- / zset-max-ziplist-value, 64 by default; that member is removed
-- again at once), so each pair costs O(1) / O(log n) now and in the calls that follow.
-- (byte 255 never occurs in UTF-8, so no message id, session id or seq can be this member)
-- (no string.rep, and the pad pairs built only when a batch is that large: this file's opening
-- runs at every call of every script)
local WIDE_TAIL = '~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~'  -- after byte 255
local WIDE_ITEMS = 32

-- Redis caps the arguments one Lua call can unpack; large batches go in slices.
local function call_many(cmd, key, items)
  local n = #items
  local pad, wide = nil, nil  -- pad pair, its removal
  if n >= WIDE_ITEMS then
    wide = string.char(255) .. WIDE_TAIL
    if cmd == 'HSET' then pad = {wide, '', 'HDEL'} elseif cmd == 'ZADD' then pad = {0, wide, 'ZREM'} end
  end
  if pad then redis.call(cmd, key, pad[1], pad[2]) end
  local i = 1
  while i <= n do
    local j = math.min(i + 3999, n)
    redis.call(cmd, key, unpack(items, i, j))
    i = j + 1
  end
  if pad then
    cmd = pad[3]
    redis.call(cmd, key, wide)
  end
end

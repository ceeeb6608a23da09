--[[
  cancel_topic_scheduled: cancel scheduled topic messages of one topic partition: every copy that
  publish stored in the subscriptions, for all the sequence numbers given or none. A cancel of
  few copies (the client's splits(): subscriptions x messages at most CHUNK) is one call; a wider
  one is split as a wide publish is (docs/topics.md, "Wide fan-outs"): a 'start' call refuses it
  or takes it (the numbers leave the topic's schedule: no later chunk of a publish adds copies,
  and a second cancel is NOMSG) and records a journal in the topic partition's fan-out journal
  key (includes/journal.lua; id 'c<n>'), then continuations remove CHUNK copies each, in the
  order of the messages' copy maps. While a cancelled message falls due, receivers of the
  subscriptions finish the journal before they receive (no cancelled copy is handed out).
  KEYS: one call: the topic partition's 24 keys, then 24 per subscription (includes/keysets.lua),
        in the order of the names in ARGV; start and continuation: the topic partition's 24 keys,
        its fan-out journal, then the 10 keys of includes/fansets.lua for each name of the chunk
        (none for start)
  ARGV[1] subv (as publish); '*' a start call, followed by n and the n numbers; '+' a
          continuation, followed by the journal id and its cursor (as publish)
  ARGV[2] k, then the k subscription names
  ARGV[3 + k] n, then n topic sequence numbers (partition-local)
  Returns: one call: {0} when cancelled; when ARGV[1] is stale: {-1, subv, name_1, forwards_1, ...}
           start: {0, jid, cursor, the first chunk's names...} (the journal recorded), {0} (no
           copies: done); {-2, jid, cursor, names...} while another journal is pending (finish
           it, then call again)
           continuation: {-2, jid, cursor, the next chunk's names...}, or {0} when done
  Errors:  NOTFOUND  NOMSG (a number is not a scheduled message that is still pending)
           INVALID (start without the journal in KEYS, or n not what ARGV holds)
  Cost: one call and a chunk: CHUNK copies, about 10 us of server time each (a ZREM, an XDEL and
  an HINCRBY of the subscription's size, a ZREM of its expiry), and one decode of the copy map of
  each message they reach (at most 2,000 subscriptions' copies); start: 2 reads a number.
]]
--@include partition
--@include keysets
--@include fansets
--@include journal
local CHUNK = 200  -- copies a call removes (protocol/cancel_topic_scheduled.py's CHUNK): 2-4 ms

local freed = {}  -- subscription key set -> the bytes this call removed from its partition
local freed_sets = {}

-- remove one copy ({name, seq, size, ...} at m[c]; a map written before sizes were kept is
-- {name, seq, ...}, stride 2, and its copy is read back for its size) from its subscription S
local function remove_copy(S, m, c, stride)
  local seq = tostring(m[c + 1])
  if redis.call('ZREM', S.sched, seq) == 1 then
    local size = stride == 3 and m[c + 2]
    if not size then
      local r = redis.call('XRANGE', S.m.log, seq, seq)
      size = #r > 0 and #r[1][2][2]
    end
    if size and redis.call('XDEL', S.m.log, seq) == 1 then
      if not freed[S] then freed_sets[#freed_sets + 1] = S end
      freed[S] = (freed[S] or 0) + size
    end
    redis.call('ZREM', S.exp, seq)
  end
end

-- each subscription partition's size, once for all its copies this call removed
local function settle_sizes()
  for x = 1, #freed_sets do
    local S = freed_sets[x]
    redis.call('HINCRBY', S.st, 'size', -freed[S])
  end
end

local decoded = {}  -- this call's decoded copy maps (a chunk and the next one's names read the same)

-- the copies of the messages q[i..] from copy o of q[i] on, at most CHUNK: each(m, c, stride)
-- per copy, done(tseq) per message whose copies are all passed; returns where the rest starts
local function walk(q, i, o, each, done)
  local left = CHUNK
  while i <= #q and left > 0 do
    local m = decoded[q[i]]
    if not m then
      m = cjson.decode(redis.call('HGET', MAIN.lk, q[i]) or '[]')
      decoded[q[i]] = m
    end
    local stride = (#m >= 3 and type(m[3]) == 'number') and 3 or 2
    local copies = math.floor(#m / stride)
    local upto = math.min(copies, o + left)
    for x = o, upto - 1 do each(m, x * stride + 1, stride) end
    left = left - (upto - o)
    if upto < copies then return i, upto end
    if done then done(q[i]) end
    i, o = i + 1, 0
  end
  return i, o
end

-- the subscription names of the chunk at (i, o), each once
local function names_at(q, i, o)
  local names, seen = {}, {}
  walk(q, i, o, function(m, c)
    local name = m[c]
    if not seen[name] then
      seen[name] = true
      names[#names + 1] = name
    end
  end)
  return names
end

local cfg = load_cfg()
local mode = ARGV[1]

if mode == '+' then
  local j, reply = continued(cfg, 'q', 'i', 'o')
  if not j then return reply end
  local cur = tonumber(j[2])
  if string.sub(j[1], 1, 1) ~= 'c' or j[1] ~= ARGV[2] or j[2] ~= ARGV[3] then return pending(j[1], cur) end
  local names = chunk_names(cur)
  local c = fanset_count()
  if c ~= #names or not sets_match(fanset, names, 0, c) then return pending(j[1], cur) end
  local index = {}
  for x = 1, c do index[names[x]] = x end
  local q = cjson.decode(j[3])
  local sets = {}
  local i, o = walk(q, tonumber(j[4]), tonumber(j[5]), function(m, x, stride)
    local s = index[m[x]]
    if s then
      sets[s] = sets[s] or fanset(s)
      remove_copy(sets[s], m, x, stride)
    end
  end, function(tseq) redis.call('HDEL', MAIN.lk, tseq) end)
  settle_sizes()
  redis.call('HDEL', K_FJ, 'n' .. cur)
  local nxt = names_at(q, i, o)
  local now = now_ms()
  touch(now)
  if #nxt == 0 then  -- the maps left have no copies (bounded by n)
    for x = i, #q do redis.call('HDEL', MAIN.lk, q[x]) end
    redis.call('DEL', K_FJ)
    return {0}
  end
  cur = cur + 1
  redis.call('HSET', K_FJ, 'cur', cur, 'i', i, 'o', o, 'pt', now, 'n' .. cur, cjson.encode(nxt))
  return pending(j[1], cur)
end

if not cfg then return fail('NOTFOUND') end
local now = now_ms()

-- the numbers, each a scheduled message still pending, or none is cancelled
local function check(from, n)
  local due = nil
  for i = 1, n do
    local tseq = ARGV[from + i]
    local at = redis.call('ZSCORE', K_SCHED, tseq)
    if not at or tonumber(at) <= now or redis.call('HEXISTS', MAIN.lk, tseq) == 0 then return nil end
    if not due or tonumber(at) < due then due = tonumber(at) end
  end
  return due or now
end

if mode == '*' then
  if not K_FJ then return fail('INVALID') end
  local n = tonumber(ARGV[2])
  if not n or n < 1 or n % 1 ~= 0 or 2 + n ~= #ARGV then return fail('INVALID') end
  local j = redis.call('HMGET', K_FJ, 'id', 'cur')
  if j[1] then return pending(j[1], tonumber(j[2])) end
  local due = check(2, n)
  if not due then return fail('NOMSG') end
  local q = {}
  for i = 1, n do q[i] = ARGV[2 + i] end
  call_many('ZREM', K_SCHED, q)
  touch(now)
  local names = names_at(q, 1, 0)
  if #names == 0 then
    call_many('HDEL', MAIN.lk, q)
    return {0}
  end
  local jid = 'c' .. redis.call('HINCRBY', K_ST, 'jid', 1)
  redis.call('HSET', K_FJ, 'id', jid, 'cur', 0, 'q', cjson.encode(q), 'i', 1, 'o', 0, 'pt', now, 'due', due,
             'n0', cjson.encode(names))
  local out = {0, jid, 0}
  for x = 1, #names do out[#out + 1] = names[x] end
  return out
end

-- one call
local subv = redis.call('HGET', K_CFG, 'subv') or '0'
local k = tonumber(ARGV[2])
if subv ~= ARGV[1] or keyset_count() ~= k then
  return subs_reply(subv)
end
local n = tonumber(ARGV[3 + k])
if not check(3 + k, n) then return fail('NOMSG') end
local index = {}
for j = 1, k do index[ARGV[2 + j]] = j end
local sets = {}  -- keyset(j) of the subscriptions met so far
for i = 1, n do
  local tseq = ARGV[3 + k + i]
  local m = cjson.decode(redis.call('HGET', MAIN.lk, tseq) or '[]')  -- '[]': a number given twice
  local stride = (#m >= 3 and type(m[3]) == 'number') and 3 or 2
  for c = 1, #m, stride do
    local j = index[m[c]]
    if j then
      sets[j] = sets[j] or keyset(j)
      remove_copy(sets[j], m, c, stride)
    end
  end
  redis.call('ZREM', K_SCHED, tseq)
  redis.call('HDEL', MAIN.lk, tseq)
end
settle_sizes()
touch(now)
return {0}

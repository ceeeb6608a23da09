--[[
  cancel_topic_scheduled: cancel scheduled topic messages of one topic partition: every copy that
  publish stored in the subscriptions, for all the sequence numbers given or none.
  KEYS: the topic partition's 24 keys, then 24 per subscription (includes/keysets.lua), in the
        order of the names in ARGV
  ARGV[1] subv (as publish)   ARGV[2] k, then the k subscription names
  ARGV[3 + k] n, then n topic sequence numbers (partition-local)
  Returns: {0} when cancelled; when ARGV[1] is stale: {-1, subv, name_1, forwards_1, ...}
  Errors:  NOTFOUND  NOMSG (a number is not a scheduled message that is still pending)
]]
--@include partition
--@include keysets
local cfg = load_cfg()
if not cfg then return fail('NOTFOUND') end
local subv = redis.call('HGET', K_CFG, 'subv') or '0'
local k = tonumber(ARGV[2])
if subv ~= ARGV[1] or keyset_count() ~= k then
  return subs_reply(subv)
end
local now = now_ms()
local n = tonumber(ARGV[3 + k])
local index = {}
for j = 1, k do index[ARGV[2 + j]] = j end
local maps = {}
for i = 1, n do
  local tseq = ARGV[3 + k + i]
  local at = redis.call('ZSCORE', K_SCHED, tseq)
  local map = redis.call('HGET', MAIN.lk, tseq)
  if not at or tonumber(at) <= now or not map then return fail('NOMSG') end
  maps[i] = cjson.decode(map)
end
local sets = {}  -- keyset(j) of the subscriptions met so far
for i = 1, n do
  local m = maps[i]
  -- {name, seq, size, ...}; a map written before sizes were kept is {name, seq, ...}, and its
  -- copies are read back for their size
  local stride = (#m >= 3 and type(m[3]) == 'number') and 3 or 2
  for c = 1, #m, stride do
    local j = index[m[c]]
    if j then
      local S = sets[j]
      if not S then
        S = keyset(j)
        sets[j] = S
      end
      local seq = tostring(m[c + 1])
      if redis.call('ZREM', S.sched, seq) == 1 then
        local size = stride == 3 and m[c + 2]
        if not size then
          local r = redis.call('XRANGE', S.m.log, seq, seq)
          size = #r > 0 and #r[1][2][2]
        end
        if size and redis.call('XDEL', S.m.log, seq) == 1 then redis.call('HINCRBY', S.st, 'size', -size) end
        redis.call('ZREM', S.exp, seq)
      end
    end
  end
  local tseq = ARGV[3 + k + i]
  redis.call('ZREM', K_SCHED, tseq)
  redis.call('HDEL', MAIN.lk, tseq)
end
touch(now)
return {0}

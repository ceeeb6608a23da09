--[[
  journal: a topic partition's fan-out journal (K_FJ, keys.journal_key), left by a publish or a
  cancel_topic_scheduled split across calls. Fields: id (a publish's is a number, a cancel's
  'c<number>'), cur (the cursor), n<cur> (the names of the chunk at cur: each chunk's own, so a
  call decodes its chunk, not the whole set), pt (ms: the last call that made progress, the start
  or a chunk), due (a cancel's: when its first message falls due); the rest is the writer's.
  Needs includes/partition.lua first.
]]
local JOURNAL_STALL_MS = 1000  -- a journal with no progress for this long: its writer died

-- the names of the journal's chunk at cursor cur
local function chunk_names(cur)
  return cjson.decode(redis.call('HGET', K_FJ, 'n' .. cur) or '[]')
end

-- the reply that names a pending journal: its id, cursor and the names of its next chunk
local function pending(jid, cur)
  local out = {-2, jid, cur}
  local names = chunk_names(cur)
  for i = 1, #names do out[#out + 1] = names[i] end
  return out
end

-- whether a receive should finish the pending journal before its own work: only one whose writer
-- made no progress for JOURNAL_STALL_MS (it died: a live one is left to its writer, and the receive
-- does not wait for it), or a cancel whose messages fall due (no cancelled copy is handed out)
local function journal_to_finish()
  if not K_FJ then return false end
  local j = redis.call('HMGET', K_FJ, 'id', 'pt', 'due')
  if not j[1] then return false end
  local now = now_ms()
  return not j[2] or now - tonumber(j[2]) >= JOURNAL_STALL_MS or (j[3] ~= false and tonumber(j[3]) <= now)
end

-- the sets in KEYS (set_of(1 .. c)) must be those of names[a + 1 .. a + c]: a caller's wrong
-- KEYS never writes another subscription's keys
local function sets_match(set_of, names, a, c)
  local prefix = string.sub(K_CFG, 1, -4) .. 's:'
  for j = 1, c do
    if set_of(j).cfg ~= prefix .. names[a + j] .. ':cfg' then return false end
  end
  return true
end

-- a continuation's journal fields (id, cur, then `...`), or nil and the reply when there is
-- nothing to write: no journal; the topic is gone (its journal goes with it: its subscriptions'
-- copies went with them); the caller's generation is stale
local function continued(cfg, ...)
  if not cfg then
    if CFG_STALE then return nil, fail('NOTFOUND') end
    redis.call('DEL', K_FJ)
    return nil, {0}
  end
  local j = redis.call('HMGET', K_FJ, 'id', 'cur', ...)
  if not j[1] then return nil, {0} end
  return j
end

--[[
  send: store a batch of messages in one partition's main queue, all or none.
  KEYS: the partition's 24 keys (includes/partition.lua)
  ARGV[1] n   ARGV[2] w: 4 or 1 arguments per message, then the messages (includes/store.lua):
          w = 4: message_id ('' when duplicate detection does not apply), ttl_ms (0: the entity
          default), scheduled_ms (0: now), blob;  w = 1: blob (all three defaults)
  Returns: {now_ms, seq_1, ..., seq_n}  seq 0: a duplicate, accepted and dropped
           {now_ms, seq_1} when n > 1 and none was a duplicate: seq_i = seq_1 + i - 1
  Errors:  NOTFOUND  DISABLED (send)  SIZE (a message or the batch over max_msg)
           QUOTA (entity full)  NOSESSION (the entity requires sessions and a message has no
           session id; nothing is stored)  INVALID (w is neither 1 nor 4)
  On a session entity each message goes to its session (includes/sessions.lua), not to ready.
]]
--@include partition
--@include store
local cfg = load_cfg()
if not cfg then return fail('NOTFOUND') end
if cfg.status == 'Disabled' or cfg.status == 'SendDisabled' then return fail('DISABLED') end
local n = tonumber(ARGV[1])
local w = tonumber(ARGV[2])
if w ~= 1 and w ~= 4 then return fail('INVALID') end
local bad = store_check(cfg, 2, n, w, true)
if bad then return bad end
local now = now_ms()
if w == 1 and not cfg.sess and n > 0 then  -- the usual send: no duplicates, consecutive seqs
  local first = store_plain(cfg, now, 2, n)
  touch(now)
  return {now, first}
end
local out = {now}
local stored = store(cfg, now, 2, n, w, out)
touch(now)
if stored == n and n > 1 then return {now, out[2]} end  -- consecutive: a short reply
return out

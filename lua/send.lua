--[[
  send: store a batch of messages in one partition's main queue, all or none.
  KEYS: the partition's 23 keys (includes/partition.lua)
  ARGV[1] n   then 4 per message: message_id ('' when duplicate detection does not apply),
          ttl_ms (0: the entity default), scheduled_ms (0: now), blob
  Returns: {now_ms, seq_1, ..., seq_n}  seq 0: a duplicate, accepted and dropped
  Errors:  NOTFOUND  DISABLED (send)  SIZE (a message or the batch over max_msg)
           QUOTA (entity full)  NOSESSION (the entity requires sessions and a message has no
           session id; nothing is stored)
  On a session entity each message goes to its session (includes/sessions.lua), not to ready.
]]
--@include partition
--@include store
local cfg = load_cfg()
if not cfg then return fail('NOTFOUND') end
if cfg.status == 'Disabled' or cfg.status == 'SendDisabled' then return fail('DISABLED') end
local n = tonumber(ARGV[1])
local bad = store_check(cfg, 1, n, true)
if bad then return bad end
local now = now_ms()
local out = {now}
store(cfg, now, 1, n, out)
touch(now)
return out

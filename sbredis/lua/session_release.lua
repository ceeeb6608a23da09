--[[
  session_release: a receiver lets go of its session (closing): messages it still holds locked go
  back to the session (ARGV[3..]: those never handed to the user, not counted as a delivery; the
  others counted), and the session is available to others.
  KEYS: the partition's 24 keys (includes/partition.lua)
  ARGV[1] session id   ARGV[2] the session lock's nonce   ARGV[3] n, then n sequence numbers
          (partition-local) of messages fetched ahead and never handed out
  Returns: 1 released, 0 the caller did not hold the session (nothing changed)
  Errors:  NOTFOUND
]]
--@include partition
--@include messages
--@include session_locks
local cfg = load_cfg()
if not cfg then return fail('NOTFOUND') end
local sid, nonce = ARGV[1], ARGV[2]
local holder = sess_lock_of(SES, sid)
if holder ~= nonce then return 0 end
local now = now_ms()
local n = tonumber(ARGV[3])
for i = 4, n + 3 do
  local seq = ARGV[i]
  local rec = redis.call('HGET', MAIN.lk, seq)
  if rec and string.sub(rec, 1, #nonce + 1) == nonce .. '|' then release(MAIN, cfg, seq, rec, now, true) end
end
sess_free(cfg, sid, now, false)
touch(now)
return 1

--[[
  session_renew: extend a session lock the caller holds by the entity's lock duration, from now;
  the locks of the session's locked messages move with it.
  KEYS: the partition's 24 keys (includes/partition.lua)
  ARGV[1] session id   ARGV[2] the session lock's nonce
  Returns: {now_ms, locked_until_ms}
  Errors:  NOTFOUND  DISABLED  LOST (the lock elapsed or another receiver took the session)
]]
--@include partition
--@include messages
--@include session_locks
local cfg = load_cfg()
local bad = check_receive(cfg)
if bad then return bad end
local sid, nonce = ARGV[1], ARGV[2]
local now = now_ms()
local lost = sess_check(sid, nonce, now)
if lost then return lost end
local untl = now + cfg.lock_ms
sess_take(sid, nonce, untl)
local held = sess_members(SES, true, sid, 100000)
if #held > 0 then
  local locks = {}
  for i = 1, #held do
    locks[#locks + 1] = untl
    locks[#locks + 1] = sess_seq(held[i])
  end
  call_many('ZADD', MAIN.locked, locks)
end
touch(now)
return {now, untl}

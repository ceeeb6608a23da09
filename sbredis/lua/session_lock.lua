--[[
  session_lock: lock one session of this partition for a receiver: a named one, or the first
  session with available messages that no one holds (NEXT_AVAILABLE_SESSION). Elapsed session
  locks are freed first; due scheduled messages become available in their sessions.
  KEYS: the partition's 24 keys (includes/partition.lua); a subscription's passes its topic
        partition's fan-out journal (keys.journal_key) after them
  ARGV[1] session id ('' for the next available)   ARGV[2] lock nonce   ARGV[3] sweep limit
  Returns: {now_ms, locked_until_ms, session id}; {now_ms, 0, ''} when ARGV[1] is '' and no
           session is available here; {now_ms, 0, '', 1} when this call's budget ran out first
           (`limit` sessions without messages dropped, or the next session's first message expired
           with expired messages left to sweep): call again at once; {0, 0, '', 2} when ARGV[1]
           is '' and a fan-out to the subscriptions is unfinished and stalled, or a cancel's
           message falls due (includes/journal.lua): the caller finishes it, then calls again
           (a session it delivers may be the one to offer)
  Errors:  NOTFOUND  DISABLED  NOTSESSIONFUL (the entity does not require sessions)
           HELD (another receiver holds the named session)
]]
--@include partition
--@include journal
if ARGV[1] == '' and journal_to_finish() then return {0, 0, '', 2} end
--@include messages
--@include session_locks
local cfg = load_cfg()
local bad = check_receive(cfg)
if bad then return bad end
if not cfg.sess then return fail('NOTSESSIONFUL') end
local sid = ARGV[1]
local nonce = ARGV[2]
local limit = tonumber(ARGV[3])
local now = now_ms()
local more = sweep(MAIN, cfg, now, limit)
sess_sweep(cfg, now, limit)
local untl = now + cfg.lock_ms
touch(now)
if sid ~= '' then
  local holder, until_ = sess_lock_of(SES, sid)
  if holder == nonce and until_ >= now then return {now, until_, sid} end  -- a retried call
  if holder then
    if until_ >= now then return fail('HELD') end
    sess_free(cfg, sid, now, false)
  end
  sess_take(sid, nonce, untl)
  return {now, untl, sid}
end
for _ = 1, limit do
  local top = redis.call('ZRANGE', SES.sa, 0, 0)
  if #top == 0 then return {now, 0, ''} end
  local cand = top[1]
  local first = redis.call('HEXISTS', SES.sl, cand) == 0 and sess_members(SES, false, cand, 1)
  if first and #first > 0 then
    -- a session whose next message expired is not taken while the sweep has expired messages
    -- left: the receiver would wait on it, and a live session may come after it
    local f = more and entry(MAIN, sess_seq(first[1]))
    local x = f and expiry(f) or 0
    if x > 0 and x <= now then return {now, 0, '', 1} end
    sess_take(cand, nonce, untl)
    return {now, untl, cand}
  end
  redis.call('ZREM', SES.sa, cand)
end
return {now, 0, '', 1}

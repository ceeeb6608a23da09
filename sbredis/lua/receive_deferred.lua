--[[
  receive_deferred: take deferred messages by sequence number (peek-lock or receive-and-delete).
  Every number must name a deferred message of the group, else nothing changes. A deferred
  message that expired meanwhile is expired instead of returned. A deferred message whose lock
  (from an earlier receive_deferred) has elapsed is deferred again first, as a sweep would.
  KEYS: the partition's 24 keys (includes/partition.lua)
  ARGV[1] group 'm' | 'd'   ARGV[2] mode 'L' | 'D'   ARGV[3] lock nonce   ARGV[4] n
  ARGV[5..n+4] sequence numbers (partition-local)
  ARGV[n+5] session id ('' or absent: none); on the main group of a session entity it is required,
          the lock nonce must be the session's lock, and every message must be of that session
          (its lock is then the session's: includes/sessions.lua)
  Returns: {now_ms, locked_until_ms, taken, then per message as receive} (receive's reply with
           `taken` for its `more`: 0 when every number was taken; else this call stopped once it
           had read READ_BYTES of messages or spent READ_US (includes/messages.lua), having
           taken the first `taken` numbers, and the caller asks for the rest again)
  Errors:  NOTFOUND  DISABLED  NOMSG (a number is not a deferred message [of the session])
           SESSIONREQ (a session entity without a session id)  LOST (the session lock is not held)
           UNSETTLED (peek-lock: the session would hold more than SESS_HELD_MAX locked messages)
]]
--@include partition
--@include messages
local cfg = load_cfg()
local bad = check_receive(cfg)
if bad then return bad end
local G = group_of(ARGV[1])
local lock = ARGV[2] == 'L'
local nonce = ARGV[3]
local n = tonumber(ARGV[4])
local now = now_ms()
for i = 5, n + 4 do
  local seq = ARGV[i]
  if not redis.call('ZSCORE', G.deferred, seq) then
    local untl = redis.call('ZSCORE', G.locked, seq)
    local rec = untl and tonumber(untl) < now and redis.call('HGET', G.lk, seq)
    if rec and select(2, parse_lock(rec)) == 'd' then release(G, cfg, seq, rec, now, false) end
  end
end
for i = 5, n + 4 do
  if not redis.call('ZSCORE', G.deferred, ARGV[i]) then return fail('NOMSG') end
end
local untl = now + cfg.lock_ms
local sid = nil
if cfg.sess and G.main then
  sid = ARGV[n + 5] or ''
  if sid == '' then return fail('SESSIONREQ') end
  local holder, until_ = sess_lock_of(SES, sid)
  if holder ~= nonce or until_ < now then return fail('LOST') end
  untl = until_
  if lock and sess_held(SES, sid) + n > SESS_HELD_MAX then return fail('UNSETTLED') end
  for i = 5, n + 4 do
    local f = entry(G, ARGV[i])
    if f and sess_of(f) ~= sid then return fail('NOMSG') end
  end
end
local out = {now, untl, 0}
local bytes = 0
local start = clock_us()
for i = 5, n + 4 do
  -- the rest are the next call's (all were checked above): past READ_BYTES, or READ_US of reading
  if bytes >= READ_BYTES or (i % 64 == 0 and clock_us() - start >= READ_US) then
    out[3] = i - 5
    break
  end
  local seq = ARGV[i]
  local f = entry(G, seq)
  if f then bytes = bytes + #f[2] end
  redis.call('ZREM', G.deferred, seq)
  if f then
    local x = tonumber(f[6])
    if G.main then redis.call('ZREM', K_EXP, seq) end
    if G.main and x > 0 and x <= now then
      expire(cfg, seq, f)
    else
      local dc = tonumber(redis.call('HGET', G.dc, seq) or '0') + 1
      if lock then
        redis.call('HSET', G.lk, seq, lock_record(nonce, 'd', x, #f[2], dc, sid, untl))
        redis.call('ZADD', G.locked, untl, seq)
        if sid then redis.call('ZADD', SES.sk, 0, skey(sid, seq)) end
      else
        drop(G, seq, #f[2])
      end
      out[#out + 1] = seq
      out[#out + 1] = dc
      put(out, G, f, nil, x)
    end
  end
end
touch(now)
return out

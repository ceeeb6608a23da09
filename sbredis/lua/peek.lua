--[[
  peek: read messages from a sequence number on, oldest first, without locking or changing them.
  Expired messages not yet removed may show.
  KEYS: the partition's 24 keys (includes/partition.lua)
  ARGV[1] group 'm' | 'd'   ARGV[2] first seq (partition-local)   ARGV[3] count
  ARGV[4] session id ('' or absent: every message): only that session's messages (the log is
          read on until `count` of them are found, it ends, or the per-call cap PEEK_SCAN / PEEK_US
          is reached: then `resume` says where the next call goes on)
  Returns: {now_ms, resume, then per message: seq, delivery_count, state, blob, enqueued_ms,
           expires_ms [, dead-letter reason, dead-letter description: group 'd' only]}
           state: 0 active, 1 deferred, 2 scheduled (ServiceBusMessageState)
           resume: the seq a peek that stopped on its cap (READ_BYTES of messages read, and for a
           session-filtered one PEEK_SCAN / PEEK_US) goes on from, else 0
  Errors:  NOTFOUND
]]
--@include partition
--@include messages
local cfg = load_cfg()
if not cfg then return fail('NOTFOUND') end
local G = group_of(ARGV[1])
local now = now_ms()
local want = tonumber(ARGV[3])
local sid = ARGV[4] or ''
-- Log entries a session-filtered peek reads at most per call (4 pages), and no further page once
-- the call has run PEEK_US microseconds: a session's messages spread thin among others' cost no
-- more than this; the client calls again from `resume`.
local PEEK_SCAN, PAGE, PEEK_US = 2000, 500, 5000
local r
local resume = 0
local chunk = read_chunk(cfg)
if sid == '' or not G.main then
  r, resume = read_log(G, ARGV[2], want, chunk)  -- stops past READ_BYTES (includes/messages.lua)
else
  r = {}
  local from = ARGV[2]
  local read = 0
  local start = clock_us()
  local page_size, bytes = math.min(PAGE, chunk), 0
  while #r < want do
    if read >= PEEK_SCAN or bytes >= READ_BYTES or (read > 0 and clock_us() - start >= PEEK_US) then
      local id = string.sub(from, 2)  -- '(<seq>-0': the last entry read
      resume = tonumber(string.sub(id, 1, #id - 2)) + 1
      break
    end
    local page = redis.call('XRANGE', G.log, from, '+', 'COUNT', page_size)
    read = read + #page
    for i = 1, #page do
      bytes = bytes + #page[i][2][2]
      if #r < want and sess_of(page[i][2]) == sid then r[#r + 1] = page[i] end
    end
    if #page < page_size then break end
    from = '(' .. page[#page][1]
  end
end
local out = {now, resume}
-- A bulk read mostly meets none of these: one size check per call spares four lookups per message.
local any_deferred = redis.call('ZCARD', G.deferred) > 0
local any_sched = G.main and redis.call('ZCARD', K_SCHED) > 0
local any_lock = redis.call('HLEN', G.lk) > 0
local any_dc = redis.call('HLEN', G.dc) > 0
for i = 1, #r do
  local id = r[i][1]
  local seq = string.sub(id, 1, #id - 2)
  local state = 0
  if any_deferred and redis.call('ZSCORE', G.deferred, seq) then
    state = 1
  elseif any_sched and redis.call('ZSCORE', K_SCHED, seq) then
    state = 2
  end
  out[#out + 1] = seq
  local rec = any_lock and redis.call('HGET', G.lk, seq)
  local dc = 0
  if rec then
    local _, _, _, _, held_dc = parse_lock(rec)
    dc = held_dc
  elseif any_dc then
    dc = tonumber(redis.call('HGET', G.dc, seq) or '0')
  end
  out[#out + 1] = dc
  out[#out + 1] = state
  put(out, G, r[i][2])
end
touch(now)
return out

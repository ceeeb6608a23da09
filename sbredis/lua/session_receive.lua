--[[
  session_receive: hand out up to `count` available messages of a session the caller holds,
  oldest first (send order), after a bounded sweep (due schedules, elapsed locks, expiries).
  Their locks are the session lock: same nonce, same locked-until (includes/sessions.lua).
  KEYS: the partition's 24 keys (includes/partition.lua); a subscription's session receive passes
        its topic partition's fan-out journal (keys.journal_key) after them
  ARGV[1] session id   ARGV[2] mode 'L' peek-lock | 'D' receive-and-delete   ARGV[3] count
  ARGV[4] the session lock's nonce   ARGV[5] sweep limit
  Returns: {now_ms, locked_until_ms, more, then per message: seq, delivery_count, blob,
           enqueued_ms, expires_ms} (delivery_count and expires_ms as integer replies)
           more: 1 when the sweep stopped on its expiry budget with expired messages left, or
           the read on its time budget (includes/messages.lua's READ_US): call again at once;
           else 0
  Errors:  NOTFOUND  DISABLED  NOTSESSIONFUL (the entity does not require sessions)
           LOST (the caller does not hold the session lock: elapsed, or taken by another)
           UNSETTLED (peek-lock: the session holds SESS_HELD_MAX locked messages already; with
           fewer, `count` is cut to what is left)
  {0, 0, 2} and nothing else: a fan-out to the subscriptions is unfinished and stalled, or a
  cancel's message falls due (includes/journal.lua): the caller finishes it, then calls again
  (as receive.lua)
]]
--@include partition
--@include journal
if journal_to_finish() then return {0, 0, 2} end
--@include messages
--@include session_locks
local cfg = load_cfg()
local bad = check_receive(cfg)
if bad then return bad end
if not cfg.sess then return fail('NOTSESSIONFUL') end
local sid = ARGV[1]
local lock = ARGV[2] == 'L'
local want = tonumber(ARGV[3])
local nonce = ARGV[4]
local limit = tonumber(ARGV[5])
local now = now_ms()
local lost = sess_check(sid, nonce, now)
if lost then return lost end
local _, untl = sess_lock_of(SES, sid)
if lock then
  local room = SESS_HELD_MAX - sess_held(SES, sid)
  if room <= 0 then return fail('UNSETTLED') end
  if want > room then want = room end
end
local more = sweep(MAIN, cfg, now, limit)

local got = {}
local budget = want + limit
if more then budget = want end  -- the sweep left expired messages: the next call's work
local chunk, bytes = read_chunk(cfg), 0  -- READ_BYTES (includes/messages.lua)
local start, late = clock_us(), false  -- READ_US (includes/messages.lua)
while #got < want and budget > 0 and bytes < READ_BYTES and not late do
  local members = sess_members(SES, false, sid, math.min(want - #got, budget, chunk))
  if #members == 0 then break end
  call_many('ZREM', SES.sr, members)
  budget = budget - #members
  local seqs = {}
  for i = 1, #members do seqs[i] = sess_seq(members[i]) end
  local fs = entries(MAIN, seqs)
  for i = 1, #seqs do
    local seq = seqs[i]
    local f = fs[seq]
    if f then
      bytes = bytes + #f[2]
      local x = tonumber(f[6])
      if x > 0 and x <= now then
        expire(cfg, seq, f)
      else
        got[#got + 1] = {seq, f, x}
      end
    end
  end
  late = clock_us() - start >= READ_US
end

local out = {now, untl, (more or late) and 1 or 0}
touch(now)
if #got == 0 then return out end
local seqs = {}
for i = 1, #got do seqs[i] = got[i][1] end
local dcs = redis.call('HMGET', MAIN.dc, unpack(seqs))
local expiring = {}
for i = 1, #got do
  local dc = tonumber(dcs[i] or '0') + 1
  dcs[i] = dc
  if got[i][3] > 0 then expiring[#expiring + 1] = seqs[i] end
  out[#out + 1] = seqs[i]
  out[#out + 1] = dc
  put(out, MAIN, got[i][2], nil, got[i][3])
end
if #expiring > 0 then call_many('ZREM', K_EXP, expiring) end
if lock then
  local locks, recs, held = {}, {}, {}
  for i = 1, #got do
    locks[#locks + 1] = untl
    locks[#locks + 1] = seqs[i]
    recs[#recs + 1] = seqs[i]
    recs[#recs + 1] = lock_record(nonce, 'r', got[i][3], #got[i][2][2], dcs[i], sid)
    held[#held + 1] = 0
    held[#held + 1] = skey(sid, seqs[i])
  end
  call_many('HSET', MAIN.lk, recs)
  call_many('ZADD', MAIN.locked, locks)
  call_many('ZADD', SES.sk, held)
else
  local size = 0
  for i = 1, #got do size = size + #got[i][2][2] end
  call_many('XDEL', MAIN.log, seqs)
  call_many('HDEL', MAIN.dc, seqs)
  redis.call('HINCRBY', K_ST, 'size', -size)
end
return out

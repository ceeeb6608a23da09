--[[
  complete: remove messages whose locks the caller holds. Messages whose lock is lost are left as
  they are and reported.
  KEYS: the first of the partition's 24 keys (cfg) alone: includes/partition.lua names the others
  ARGV[1] group 'm' | 'd'   ARGV[2] n
  ARGV[3] the lock nonce of all n messages, then n seqs; or '' then n pairs: seq, lock nonce
          (held_args, includes/messages.lua)
  Returns: {status_1, ..., status_n}   0 completed, 1 lock lost (unknown, elapsed or not ours)
  Errors:  NOTFOUND  DISABLED  INVALID (n is not a count of the ARGV given)
  One message under one nonce (complete_message in a loop) is settled before the general path's
  helpers are defined: Redis runs a script's whole body at every call, and each helper is a
  closure built per call. Its lock record carries the lock's end, so one read checks the lock,
  and the partition's last use is left as the receive wrote it when that was under
  ACC_SLACK_MS ago (includes/partition.lua's touch). Anything else (several messages, a lock not
  held, a session message, a record of the older form, a missing or disabled entity) takes the
  general path, which reads everything again.
]]
--@include partition
local group, n, nonce, seq = unpack(ARGV, 1, 4)  -- with n = 1 and a nonce, seq is the one message
if n == '1' and nonce ~= '' then
  -- load_status(), with the lock duration
  local c = redis.call('HMGET', K_CFG, 'status', 'gen', 'lock_ms')
  local status, gen = c[1], c[2]
  if status and status ~= 'Disabled' and status ~= 'ReceiveDisabled'
      and (CALLER_GEN == '' or not gen or gen == '' or gen == CALLER_GEN) then
    local G = group_of(group)
    local rec = redis.call('HGET', G.lk, seq)
    local p = nonce .. '|'
    if rec and string.sub(rec, 1, #p) == p then
      -- a record with its lock's end, and no session id (includes/messages.lua's lock_record):
      -- one read checks the lock; its size and delivery count are what settle.lua's
      -- complete_held reads
      local untl, sz, dc = string.match(rec, '^(%d+)|%a|%d+|(%d+)|(%d+)$', #p + 1)
      local now = untl and now_ms()
      if untl and tonumber(untl) >= now then
        untl = tonumber(untl)
        redis.call('XDEL', G.log, seq)
        redis.call('HDEL', G.lk, seq)
        redis.call('ZREM', G.locked, seq)
        if dc ~= '1' then redis.call('HDEL', G.dc, seq) end
        redis.call('HINCRBY', K_ST, 'size', -sz)
        -- last use: the receive or renewal that set this lock's end touched it then (at untl -
        -- lock_ms); a complete soon after changes it by less than ACC_SLACK_MS
        if now - (untl - (tonumber(c[3]) or 0)) >= ACC_SLACK_MS then touch(now) end
        return {0}
      end
    end
  end
end
--@include messages
--@include settle
local cfg = load_cfg()
local bad = check_receive(cfg)
if bad then return bad end
local G = group_of(ARGV[1])
local now = now_ms()
local seqs, recs = held_args(G, now)
if not seqs then return fail('INVALID') end
complete_held(G, seqs, recs)
local out = {}
for i = 1, #seqs do
  if recs[i] then out[i] = 0 else out[i] = 1 end
end
touch(now)
return out

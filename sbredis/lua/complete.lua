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
  closure built per call. Anything else (several messages, a lock not held, a session message, a
  missing or disabled entity) takes the general path, which reads everything again.
]]
--@include partition
local group, n, nonce, seq = unpack(ARGV, 1, 4)  -- with n = 1 and a nonce, seq is the one message
if n == '1' and nonce ~= '' then
  local status = load_status()
  if status and status ~= 'Disabled' and status ~= 'ReceiveDisabled' then
    local G = group_of(group)
    local now = now_ms()
    local p = nonce .. '|'
    local rec = redis.call('HGET', G.lk, seq)
    local untl = rec and string.sub(rec, 1, #p) == p and redis.call('ZSCORE', G.locked, seq)
    if untl and tonumber(untl) >= now then
      -- the lock record's size and delivery count (settle.lua's complete_held, for one message)
      local sz, dc, tail = string.match(rec, '|%a|%d+|(%d+)|(%d+)()')
      if tail > #rec then  -- no session id after them (a session message leaves its session too)
        redis.call('XDEL', G.log, seq)
        redis.call('HDEL', G.lk, seq)
        redis.call('ZREM', G.locked, seq)
        if dc ~= '1' then redis.call('HDEL', G.dc, seq) end
        redis.call('HINCRBY', K_ST, 'size', -sz)
        touch(now)
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

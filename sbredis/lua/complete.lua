--[[
  complete: remove messages whose locks the caller holds. Messages whose lock is lost are left as
  they are and reported.
  KEYS: the first of the partition's 24 keys (cfg) alone: includes/partition.lua names the others
  ARGV[1] group 'm' | 'd'   ARGV[2] n
  ARGV[3] the lock nonce of all n messages, then n seqs; or '' then n pairs: seq, lock nonce
          (held_args, includes/messages.lua)
  Returns: {status_1, ..., status_n}   0 completed, 1 lock lost (unknown, elapsed or not ours)
  Errors:  NOTFOUND  DISABLED  INVALID (n is not a count of the ARGV given)
  One message under one nonce (complete_message in a loop) is settled before includes/partition.lua's
  opening: Redis runs a script's whole body at every call, and the opening's key names, group
  tables and helper closures cost more script time than the settlement itself. So this path names
  the keys it uses itself, as partition.lua does (the cfg key's prefix followed by their names in
  keys.PARTITION_KEY_NAMES, under partition.lua's variable names; tests/unit/test_lua_contract.py
  checks both), and reads the caller's generation, the last argument, and the clock in place
  (partition.lua's CALLER_GEN and now_ms()). Its lock record carries the lock's end, so one read
  checks the lock, and the partition's last use is left as the receive wrote it when that was
  under ACC_SLACK_MS ago (partition.lua's touch). Anything else (several messages, a lock not
  held, a session message, a record of the older form, a missing or disabled entity) takes the
  general path, which reads everything again.
]]
do
  -- a complete less than ACC_SLACK_MS after the receive or renewal that set the lock's end leaves
  -- st.acc (auto-delete on idle, accessed_at) as that call wrote it: a write saved per message
  local ACC_SLACK_MS = 100
  local group, n, nonce, seq = unpack(ARGV, 1, 4)  -- with n = 1 and a nonce, seq is the one message
  if n == '1' and nonce ~= '' then
    local gen = ARGV[#ARGV]  -- partition.lua's CALLER_GEN
    local K_CFG = KEYS[1]
    -- load_status(), with the lock duration
    local c = redis.call('HMGET', K_CFG, 'status', 'gen', 'lock_ms')
    local status = c[1]
    if status and status ~= 'Disabled' and status ~= 'ReceiveDisabled'
        and (gen == '' or not c[2] or c[2] == '' or c[2] == gen) then
      local p = string.sub(K_CFG, 1, -4)  -- '<tag>:' of '<tag>:cfg'
      if group == 'd' then p = p .. 'd:' end  -- group_of(): the dead-letter group's names
      local G = {log = p .. 'log', locked = p .. 'locked', lk = p .. 'lk', dc = p .. 'dc'}
      local rec = redis.call('HGET', G.lk, seq)
      local owner = nonce .. '|'
      if rec and string.sub(rec, 1, #owner) == owner then
        -- a record with its lock's end, and no session id (includes/messages.lua's lock_record):
        -- one read checks the lock; its size and delivery count are what settle.lua's
        -- complete_held reads
        local untl, sz, dc = string.match(rec, '^(%d+)|%a|%d+|(%d+)|(%d+)$', #owner + 1)
        local t = untl and redis.call('TIME')  -- now_ms()
        local now = t and tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
        if untl and tonumber(untl) >= now then
          untl = tonumber(untl)
          local K_ST = string.sub(K_CFG, 1, -4) .. 'st'
          redis.call('XDEL', G.log, seq)
          redis.call('HDEL', G.lk, seq)
          redis.call('ZREM', G.locked, seq)
          if dc ~= '1' then redis.call('HDEL', G.dc, seq) end
          redis.call('HINCRBY', K_ST, 'size', -sz)
          -- last use: the receive or renewal that set this lock's end touched it then (at untl -
          -- lock_ms); touch(now) when that was ACC_SLACK_MS ago or more
          if now - (untl - (tonumber(c[3]) or 0)) >= ACC_SLACK_MS then
            redis.call('HSET', K_ST, 'acc', now)
          end
          return {0}
        end
      end
    end
  end
end
--@include partition
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

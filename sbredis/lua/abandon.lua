--[[
  abandon: release locks at once; each message goes back to the front of its place (ready, or
  deferred when it was received as deferred), or to the dead-letter group after max_dc
  deliveries, or expires when its TTL passed while it was locked.
  KEYS: the partition's 24 keys (includes/partition.lua)
  ARGV[1] group 'm' | 'd'   ARGV[2] n
  ARGV[3] the lock nonce of all n messages, then n seqs; or '' then n pairs: seq, lock nonce
          (held_args, includes/messages.lua)
  then '1': release without counting the delivery (messages never handed to a user)
  then delay_ms (optional, 0 or absent: none): a main-queue message going back to ready (not a
          deferred one) becomes a scheduled message due in delay_ms (a retry with backoff: its
          delivery count is kept, and max_dc still dead-letters it first)
  Returns: {status_1, ..., status_n}   0 released, 1 lock lost
  Errors:  NOTFOUND  DISABLED  INVALID (n is not a count of the ARGV given)
]]
--@include partition
--@include messages
local cfg = load_cfg()
local bad = check_receive(cfg)
if bad then return bad end
local G = group_of(ARGV[1])
local now = now_ms()
local seqs, recs, after = held_args(G, now)
if not seqs then return fail('INVALID') end
local undo = ARGV[after] == '1'
local delay = tonumber(ARGV[after + 1] or '0') or 0
local due = delay > 0 and now + delay or nil
local out = {}
for i = 1, #seqs do
  local seq, rec = seqs[i], recs[i]
  if rec then
    release(G, cfg, seq, rec, now, undo, due)
    out[i] = 0
  else
    out[i] = 1
  end
end
touch(now)
return out

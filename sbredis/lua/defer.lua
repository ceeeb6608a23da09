--[[
  defer: set locked messages aside; only receive_deferred returns them again.
  KEYS: the partition's 24 keys (includes/partition.lua)
  ARGV[1] group 'm' | 'd'   ARGV[2] n
  ARGV[3] the lock nonce of all n messages, then n seqs; or '' then n pairs: seq, lock nonce
          (held_args, includes/messages.lua)
  Returns: {status_1, ..., status_n}   0 deferred, 1 lock lost
  Errors:  NOTFOUND  DISABLED  INVALID (n is not a count of the ARGV given)
]]
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
local out = {}
for i = 1, #seqs do
  if recs[i] then
    defer_held(G, seqs[i], recs[i])
    out[i] = 0
  else
    out[i] = 1
  end
end
touch(now)
return out

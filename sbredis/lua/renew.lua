--[[
  renew: extend the locks the caller holds by the entity's lock duration, from now.
  KEYS: the partition's 24 keys (includes/partition.lua)
  ARGV[1] group 'm' | 'd'   ARGV[2] n
  ARGV[3] the lock nonce of all n messages, then n seqs; or '' then n pairs: seq, lock nonce
          (held_args, includes/messages.lua)
  Returns: {now_ms, locked_until_ms_1, ..., locked_until_ms_n}   0: lock lost
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
local untl = now + cfg.lock_ms
local seqs, recs = held_args(G, now)
if not seqs then return fail('INVALID') end
renew_held(G, seqs, recs, untl)
local out = {now}
for i = 1, #seqs do
  if recs[i] then out[i + 1] = untl else out[i + 1] = 0 end
end
touch(now)
return out

--[[
  dead_letter: move locked main-queue messages to the dead-letter group with the caller's reason.
  KEYS: the partition's 24 keys (includes/partition.lua)
  ARGV[1] group (must be 'm')   ARGV[2] n
  ARGV[3] the lock nonce of all n messages, then n seqs; or '' then n pairs: seq, lock nonce
          (held_args, includes/messages.lua)
  then the reason and the error description
  Returns: {status_1, ..., status_n}   0 dead-lettered, 1 lock lost
  Errors:  NOTFOUND  DISABLED  INVALID (group is not the main queue, or n is not a count of the ARGV given)
]]
--@include partition
--@include messages
--@include settle
local cfg = load_cfg()
local bad = check_receive(cfg)
if bad then return bad end
if ARGV[1] ~= 'm' then return fail('INVALID') end
local now = now_ms()
local seqs, recs, after = held_args(MAIN, now)
if not seqs then return fail('INVALID') end
local reason, description = ARGV[after], ARGV[after + 1]
local out = {}
for i = 1, #seqs do
  local seq = seqs[i]
  local f = recs[i] and entry(MAIN, seq)
  if f then
    dead_letter_held(seq, recs[i], f, reason, description)
    out[i] = 0
  else
    out[i] = 1
  end
end
touch(now)
return out

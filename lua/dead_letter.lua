--[[
  dead_letter: move locked main-queue messages to the dead-letter group with the caller's reason.
  KEYS: the partition's 23 keys (includes/partition.lua)
  ARGV[1] group (must be 'm')   ARGV[2] n   then n pairs: seq, lock nonce
  ARGV[3 + 2n] reason   ARGV[4 + 2n] error description
  Returns: {status_1, ..., status_n}   0 dead-lettered, 1 lock lost
  Errors:  NOTFOUND  DISABLED  INVALID (group is not the main queue)
]]
--@include partition
--@include messages
--@include settle
local cfg = load_cfg()
local bad = check_receive(cfg)
if bad then return bad end
if ARGV[1] ~= 'm' then return fail('INVALID') end
local n = tonumber(ARGV[2])
local reason, description = ARGV[3 + 2 * n], ARGV[4 + 2 * n]
local now = now_ms()
local seqs, recs = held_all(MAIN, n, 3, now)
local out = {}
for i = 1, n do
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

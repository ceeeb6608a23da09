--[[
  sessions: the per-partition session structures (entities with requires_session: cfg sess = 1).
  Needs includes/partition.lua first. Z is a session key table: SES (includes/partition.lua) or a
  further key set's ses (includes/keysets.lua).

  Design (sbredis/_core/keys.py has the keyspace table):
    Z.sr  zset, scores 0  available messages of all sessions, member '<sid> NUL <seq as 13 digits>':
                          one ZRANGEBYLEX reads one session's messages in sequence order
    Z.sa  zset            sessions with available messages and no lock holder, score = the seq that
                          made them available (NEXT_AVAILABLE_SESSION takes the lowest); kept lazily:
                          a session found without messages is dropped when met
    Z.sl  hash            sid -> 'nonce|locked-until ms' (the session lock)
    Z.sx  zset            sid -> locked-until ms (elapsed session locks are found by score)
    Z.sk  zset, scores 0  the locked messages of each session (members as sr); a session
                          message's lock has the session lock's nonce and locked-until, so the
                          message-lock checks of every settlement (held_args) cover the session lock
    Z.ss  hash            sid -> session state
    Z.su  zset            sid -> when its state was last set (ms; list_*_sessions(state_updated_after=))
  A session message's log entry has the field s = sid; its lock record ends with '|<sid>'.
  Functions for settlement code (complete, defer, dead-letter here and in tx_commit):
    sess_unlocked(sid, seq)     a session message's lock ended: drop it from SES.sk (sid may be nil)
    sess_lock_of(Z, sid)        nonce, locked-until ms of the session's lock record (nil when none)
    sess_held(Z, sid)           how many messages the session holds locked (at most SESS_HELD_MAX)
]]

local SESS_DIGITS = '%013d'

-- The sr/sk member of a session message.
local function skey(sid, seq)
  return sid .. '\0' .. string.format(SESS_DIGITS, tonumber(seq))
end

-- The seq of an sr/sk member (as the other structures write it: no leading zeros).
local function sess_seq(member)
  return tostring(tonumber(string.sub(member, -13)))
end

-- The session id of an sr/sk member.
local function sess_id(member)
  return string.sub(member, 1, #member - 14)
end

-- Up to n members of session sid in Z.sr (available), or Z.sk when `locked`, oldest first.
local function sess_members(Z, locked, sid, n)
  local lo, hi = '[' .. sid .. '\0', '(' .. sid .. '\1'
  local r
  if locked then
    r = redis.call('ZRANGEBYLEX', Z.sk, lo, hi, 'LIMIT', 0, n)
  else
    r = redis.call('ZRANGEBYLEX', Z.sr, lo, hi, 'LIMIT', 0, n)
  end
  local out = {}
  local len = #sid + 14
  for i = 1, #r do
    if #r[i] == len then out[#out + 1] = r[i] end  -- a longer member belongs to a session 'sid NUL ...'
  end
  return out
end

-- Messages one session may hold locked at once (docs/keyspace.md, Per-call caps): renewing,
-- releasing or freeing a session lock touches each of them in one call.
local SESS_HELD_MAX = 2000

-- How many messages session sid holds locked (Z.sk), as session_state counts available ones (an
-- id extending sid with a NUL and a digit would be counted too: an upper bound).
local function sess_held(Z, sid)
  return redis.call('ZLEXCOUNT', Z.sk, '[' .. sid .. '\0', '[' .. sid .. '\0' .. string.rep('9', 13))
end

-- The session id in a log entry's field list (field s), or nil.
local function sess_of(f)
  for i = 7, #f, 2 do
    if f[i] == 's' then return f[i + 1] end
  end
  return nil
end

-- The session id in a stored message (the header's sid), or nil when unset or empty.
local function blob_sid(blob)
  local b1, b2, b3, b4 = string.byte(blob, 2, 5)
  if not b4 then return nil end
  local hlen = ((b1 * 256 + b2) * 256 + b3) * 256 + b4
  local raw = string.sub(blob, 6, 5 + hlen)
  if not string.find(raw, '"sid"', 1, true) then return nil end
  local ok, h = pcall(cjson.decode, raw)
  if not ok or type(h) ~= 'table' then return nil end
  local sid = h.sid
  if type(sid) ~= 'string' or sid == '' then return nil end
  return sid
end

-- nonce, locked-until ms of the session's lock record (elapsed or not), or nil.
local function sess_lock_of(Z, sid)
  local v = redis.call('HGET', Z.sl, sid)
  if not v then return nil end
  local nonce, untl = string.match(v, '^(.*)|(%d+)$')
  return nonce, tonumber(untl)
end

-- A message of session sid is available: into Z.sr, and the session into Z.sa unless it is held.
local function sess_ready(Z, sid, seq)
  redis.call('ZADD', Z.sr, 0, skey(sid, seq))
  if redis.call('HEXISTS', Z.sl, sid) == 0 then
    redis.call('ZADD', Z.sa, 'NX', seq, sid)
  end
end

-- A session message's lock ended (settled, released): it is no longer one of the session's locked.
local function sess_unlocked(sid, seq)
  if sid then redis.call('ZREM', SES.sk, skey(sid, seq)) end
end

--[[
  rules: evaluate subscription rule programs (compiled by sbredis/_core/rules.py) on one message.
  No Redis calls, no globals, deterministic. Needs nothing else included.

  rules_limits(max_string, call_work, walk_work)    -> nil (once per script call)
  rules_walk(program)                               -> true | nil, err (charge walking one rule)
  rules_walk_cost(program)                          -> units (walking it the first time)
  rules_match(program, hdr, ap, brk)                -> true | false | nil, err, reason
  rules_apply_action(program, hdr, ap, brk)         -> hdr2, ap2, changes | nil, err, reason
  rules_header(text, hdr2, ap2, changes)            -> header JSON after an action | nil
  rules_json(value)                                 -> JSON text (lossless numbers, sorted keys)

  program  the JSON text of a compiled program, or its cjson.decode table (decoded programs are
           cached per script call, keyed by the text)
  hdr      the message header, cjson-decoded (codec.FIELDS short keys: id ci sj to rt sid rts ct
           pk; ttl = time to live ms; se = scheduled enqueue ms); its 'ap' key is not read
  ap       the application properties (header 'ap'), cjson-decoded: string, number, boolean,
           cjson.null, or a tagged table {["$dt"]=ms} {["$td"]=us} {["$u"]=uuid} {["$b"]=base64};
           nil when the message has none
  brk      optional: values the broker knows at fan-out: sn (sequence number), et (enqueued ms),
           xt (expires-at ms), sz (size in bytes), dc (delivery count); nil reads as NULL
  text     the header JSON that hdr and ap were decoded from

  rules_match is true only when the filter is TRUE (FALSE and unknown give false); nil, err, reason
  on an evaluation error, where reason is the dead-letter reason for the copy:
    FilterException              a type mismatch, integer division by zero, a bad LIKE escape, an
                                 unknown system property named by property(...)
    RuleEvaluationLimitExceeded  the evaluation needed more work than R_WORK_EVAL units, or the
                                 script call's evaluations together more than rules_limits allows
    MessageSizeExceeded          a string (a concatenation) longer than rules_limits' max_string
  rules_apply_action runs SET/REMOVE on shallow copies of hdr and ap (the originals are never
  changed) and returns the copies (ap2 is a table, maybe empty) and what changed, for
  rules_header; the same nil, err, reason on an evaluation error. rules_header writes the new
  header: every member and property the action did not change keeps its value and type (cjson
  rounds numbers to 14 digits and reads 2.0 as 2: unless the tables hold every number exactly,
  the untouched members are copied from `text` byte for byte), changed ones are encoded in their
  kind (a double always with a point or exponent).

  Work (docs/rules.md, Limits): a unit is about a nanosecond of server time (measured on redis
  6.2 and 7.0): a byte compared or case-folded costs 1, concatenated 3, a step of Lua-level matching
  R_STEP, a byte string.find passes R_FIND + #needle / 32 (memchr stops at each byte equal to
  the needle's first and memcmp runs there). Evaluation counts the work that depends on the data
  (LIKE, concatenation, property names); the work per program node is bounded by the program's
  size (1024 characters). rules_limits sets the budget of the script call; each evaluation may
  use at most R_WORK_EVAL of what is left.
  Rules: a rule costs work before its program runs, whatever the message: its field read off the
  subscription's cfg, sorted with the others and an evaluation set up (about 2 us), and its JSON
  decoded the first time in a script call (about 30 ns a byte); walking it again for the next
  message about 1 us. rules_walk charges that: R_RULE + R_RULE_BYTE a byte the first time the
  call walks a program, R_RULE_AGAIN after that, for each rule the caller is about
  to evaluate (a memoized answer included) to the call's walk budget (rules_limits' walk_work);
  nil, err once that is spent (reason RuleEvaluationLimitExceeded). rules_walk_cost is the most a
  rule's walk costs: a caller can refuse a rule list that cannot fit before walking any of it.
  rules_match answers some correlation filters from their text (rules_prescreen); the charge
  does not count on it.
]]

local R_FLOOR, R_CEIL, R_FMOD, R_HUGE = math.floor, math.ceil, math.fmod, math.huge
local R_EMPTY = {}
local R_NUM = {i = true, f = true}
local R_ORDERED = {i = true, f = true, d = true, t = true}
local R_KIND_NAME = {n = 'NULL', i = 'integer', f = 'double', s = 'string', b = 'boolean',
                     d = 'DateTime', t = 'TimeSpan', u = 'Guid', x = 'byte array'}
-- property('sys.<name>') resolved at run time: rules.py SYSTEM_PROPERTIES ('@' marks a broker value)
local R_SYS_NAMES = {
  messageid = 'id', correlationid = 'ci', label = 'sj', subject = 'sj', to = 'to', replyto = 'rt',
  sessionid = 'sid', replytosessionid = 'rts', contenttype = 'ct', partitionkey = 'pk',
  timetolive = 'ttl', scheduledenqueuetimeutc = 'se',
  sequencenumber = '@sn', enqueuedtimeutc = '@et', expiresatutc = '@xt', size = '@sz',
  deliverycount = '@dc',
}
-- The message being evaluated (set per call: evaluation allocates no context table).
local R_HDR, R_AP, R_BRK, R_LOW, R_CHG = R_EMPTY, R_EMPTY, R_EMPTY, nil, nil
-- Per script call: decoded programs, compiled LIKE patterns, the case-insensitive index of each
-- message's property names (filters share it: they never change the properties).
local R_PROGRAMS, R_LIKE, R_LOWS = {}, {}, {}
local R_WALKED = {}  -- the programs rules_walk charged in full
local R_OPS = {}
-- Work budget (units): per evaluation, the script call's (rules_limits), the units left now.
local R_WORK_EVAL, R_STEP, R_FIND = 3145728, 400, 4
local R_LIM = {call = 4194304, call_left = 4194304, max_string = R_HUGE, compile = 0, walk = R_HUGE,
               walk_left = R_HUGE}
-- Walking a rule: units per rule and per byte of its program (docs/rules.md, Limits)
local R_RULE, R_RULE_BYTE, R_RULE_AGAIN = 2048, 32, 1024
local R_WORK, R_INDEXED = 0, false  -- units left; whether this evaluation indexed names already

-- An evaluation error: a table, so that pcall tells it from a bug in this file.
local function rules_fail(msg, reason)
  error({msg, reason or 'FilterException'}, 0)
end

-- A value for an error message: long strings are cut (an error is stored as the dead-letter
-- description).
local function rules_clip(s)
  if #s > 64 then return string.sub(s, 1, 64) .. '...' end
  return s
end

local function rules_charge(units)
  R_WORK = R_WORK - units
  if R_WORK < 0 then
    if R_LIM.call_left < R_WORK_EVAL then  -- the script call's budget was the smaller
      rules_fail('the evaluations of this script call needed more than ' .. R_LIM.call .. ' work units',
                 'RuleEvaluationLimitExceeded')
    end
    rules_fail('the evaluation needed more than ' .. R_WORK_EVAL .. ' work units', 'RuleEvaluationLimitExceeded')
  end
end

-- The longest string evaluation may build (the entity's maximum message size), the work all
-- evaluations of this script call may do together (the default: 4194304 units), and the work of
-- walking rules (rules_walk; the default: no limit).
local function rules_limits(max_string, call_work, walk_work)
  R_LIM.max_string = max_string or R_HUGE
  if call_work then
    R_LIM.call, R_LIM.call_left = call_work, call_work
  end
  if walk_work then
    R_LIM.walk, R_LIM.walk_left = walk_work, walk_work
  end
end

-- The work of walking a rule whose program (or action) is the JSON text `program` the first time
-- in a script call (it is decoded then, and cached).
local function rules_walk_cost(program)
  return R_RULE + R_RULE_BYTE * #program
end

-- Charge walking one rule: true, or nil and the error when the script call's walk budget cannot
-- pay for it (nor for any rule after it). A program walked before in this call costs R_RULE_AGAIN.
local function rules_walk(program)
  local cost = R_RULE_AGAIN
  if not R_WALKED[program] then
    cost = rules_walk_cost(program)
    R_WALKED[program] = true
  end
  R_LIM.walk_left = R_LIM.walk_left - cost
  if R_LIM.walk_left >= 0 then return true end
  return nil, 'the rules of this publish needed more than ' .. R_LIM.walk .. ' work units before evaluation'
end

-- A stored value as (value, kind); kinds are the keys of R_KIND_NAME.
local function rules_value(v)
  local t = type(v)
  if t == 'string' then return v, 's' end
  if t == 'number' then
    if v == R_FLOOR(v) and v > -R_HUGE and v < R_HUGE then return v, 'i' end
    return v, 'f'
  end
  if t == 'boolean' then return v, 'b' end
  if t == 'table' then
    local x = v['$dt']
    if x then return x, 'd' end
    x = v['$td']
    if x then return x, 't' end
    x = v['$u']
    if x then return x, 'u' end
    x = v['$b']
    if x then return x, 'x' end
    rules_fail('unsupported property value')
  end
  return nil, 'n'  -- nil or cjson.null
end

-- The name under which the application properties hold `name` (exact, else ASCII
-- case-insensitive; among names equal but for case the byte-wise smallest), or nil.
local function rules_user_key(name, low)
  if R_AP[name] ~= nil then return name end
  if not R_LOW then
    -- the first index of an evaluation is linear in the message, as decoding it was (and filters
    -- share theirs); one built again (after a REMOVE) is work
    local again = R_INDEXED
    R_INDEXED = true
    R_LOW = {}
    for k in pairs(R_AP) do
      if type(k) == 'string' then  -- (a raw client's "ap" may be an array)
        if again then rules_charge(2 * R_STEP + #k) end
        local l = string.lower(k)
        local cur = R_LOW[l]
        if cur == nil or k < cur then R_LOW[l] = k end
      end
    end
  end
  return R_LOW[low or name]
end

local function rules_sys(key)
  local v = R_HDR[key]
  if key == 'pk' and v == nil then v = R_HDR.sid end
  if v == nil then return nil, 'n' end
  if key == 'ttl' then return v * 1000, 't' end
  if key == 'se' then return v, 'd' end
  return rules_value(v)
end

local function rules_brk(key)
  local v = R_BRK[key]
  if v == nil then return nil, 'n' end
  if key == 'et' or key == 'xt' then return v, 'd' end
  return rules_value(v)
end

-- property(name): a property reference node for a name computed at run time.
local function rules_named(name, kind)
  if kind == 'n' then return nil end
  if kind ~= 's' then rules_fail('property() needs a string, not ' .. R_KIND_NAME[kind]) end
  rules_charge(#name)
  local low = string.lower(name)
  if string.sub(low, 1, 4) == 'sys.' then
    local key = R_SYS_NAMES[string.sub(low, 5)]
    if not key then rules_fail("the system property '" .. rules_clip(string.sub(name, 5)) .. "' does not exist") end
    if string.sub(key, 1, 1) == '@' then return {'b', string.sub(key, 2)} end
    return {'s', key}
  end
  if string.sub(low, 1, 5) == 'user.' then
    name, low = string.sub(name, 6), string.sub(low, 6)
  end
  return {'p', name, low}
end

local function rules_eval(n)
  local t = type(n)
  if t == 'table' then
    local f = R_OPS[n[1]]
    if not f then error('rules: unknown opcode ' .. tostring(n[1]), 0) end
    return f(n)
  end
  if t == 'string' then return n, 's' end
  if t == 'boolean' then return n, 'b' end
  error('rules: malformed program node', 0)
end

-- constants
R_OPS['i'] = function(n) return n[2], 'i' end
R_OPS['f'] = function(n) return n[2], 'f' end
R_OPS['null'] = function() return nil, 'n' end
R_OPS['d'] = function(n) return n[2], 'd' end
R_OPS['t'] = function(n) return n[2], 't' end
R_OPS['u'] = function(n) return n[2], 'u' end
R_OPS['x'] = function(n) return n[2], 'x' end

-- properties
R_OPS['p'] = function(n)
  local k = rules_user_key(n[2], n[3])
  if k == nil then return nil, 'n' end
  return rules_value(R_AP[k])
end
R_OPS['s'] = function(n) return rules_sys(n[2]) end
R_OPS['b'] = function(n) return rules_brk(n[2]) end
R_OPS['pp'] = function(n)
  local ref = rules_named(rules_eval(n[2]))
  if not ref then return nil, 'n' end
  return rules_eval(ref)
end

-- logic (three-valued: true, false, nil = unknown); AND stops at FALSE, OR at TRUE
local function rules_cond(n)
  local v, k = rules_eval(n)
  if k ~= 'b' and k ~= 'n' then rules_fail('a ' .. R_KIND_NAME[k] .. ' is not a condition') end
  return v
end
R_OPS['and'] = function(n)
  local unknown = false
  for i = 2, #n do
    local v = rules_cond(n[i])
    if v == false then return false, 'b' end
    if v == nil then unknown = true end
  end
  if unknown then return nil, 'n' end
  return true, 'b'
end
R_OPS['or'] = function(n)
  local unknown = false
  for i = 2, #n do
    local v = rules_cond(n[i])
    if v == true then return true, 'b' end
    if v == nil then unknown = true end
  end
  if unknown then return nil, 'n' end
  return false, 'b'
end
R_OPS['not'] = function(n)
  local v = rules_cond(n[2])
  if v == nil then return nil, 'n' end
  return not v, 'b'
end

-- comparison: NULL gives unknown; numbers compare across integer and double; other kinds
-- only with their own kind; strings, booleans, Guids and byte arrays only for = and <>.
local function rules_compare(op, a, ka, b, kb)
  if ka == 'n' or kb == 'n' then return nil end
  if ka ~= kb and not (R_NUM[ka] and R_NUM[kb]) then
    rules_fail('cannot compare ' .. R_KIND_NAME[ka] .. ' with ' .. R_KIND_NAME[kb])
  end
  if op == '=' then return a == b end
  if op == '<>' then return a ~= b end
  if not R_ORDERED[ka] then
    rules_fail("operator '" .. op .. "' cannot be applied to " .. R_KIND_NAME[ka] .. ' values')
  end
  if op == '<' then return a < b end
  if op == '<=' then return a <= b end
  if op == '>' then return a > b end
  return a >= b
end
for _, op in ipairs({'=', '<>', '<', '<=', '>', '>='}) do
  R_OPS[op] = function(n)
    local a, ka = rules_eval(n[2])
    local b, kb = rules_eval(n[3])
    local r = rules_compare(op, a, ka, b, kb)
    if r == nil then return nil, 'n' end
    return r, 'b'
  end
end

-- x IN (a, b, ...) is x = a OR x = b OR ...
R_OPS['in'] = function(n)
  local a, ka = rules_eval(n[2])
  if ka == 'n' then return nil, 'n' end
  local unknown = false
  for i = 3, #n do
    local b, kb = rules_eval(n[i])
    local r = rules_compare('=', a, ka, b, kb)
    if r then return true, 'b' end
    if r == nil then unknown = true end
  end
  if unknown then return nil, 'n' end
  return false, 'b'
end

R_OPS['isnull'] = function(n)
  local _, k = rules_eval(n[2])
  return k == 'n', 'b'
end

R_OPS['exists'] = function(n)
  local ref = n[2]
  if ref[1] == 'pp' then
    ref = rules_named(rules_eval(ref[2]))
    if not ref then return nil, 'n' end
  end
  if ref[1] == 'p' then return rules_user_key(ref[2], ref[3]) ~= nil, 'b' end
  local _, k = rules_eval(ref)
  return k ~= 'n', 'b'
end

-- Correlation-filter equality: a missing property or another type is simply no match.
R_OPS['ceq'] = function(n)
  local a, ka = rules_eval(n[2])
  if ka == 'n' then return false, 'b' end
  local b, kb = rules_eval(n[3])
  if ka ~= kb and not (R_NUM[ka] and R_NUM[kb]) then return false, 'b' end
  return a == b, 'b'
end

-- arithmetic, C# style: integer op integer is an integer (/ truncates, % takes the sign of
-- the dividend, both fail on zero); a double on either side gives a double (IEEE: x/0 is
-- infinite); string + string concatenates; DateTime - DateTime is a TimeSpan; DateTime +/-
-- TimeSpan is a DateTime; TimeSpan +/- TimeSpan is a TimeSpan. NULL in, NULL out.
local function rules_arith(op, a, ka, b, kb)
  if ka == 'n' or kb == 'n' then return nil, 'n' end
  if R_NUM[ka] and R_NUM[kb] then
    if ka == 'i' and kb == 'i' then
      if op == '+' then return a + b, 'i' end
      if op == '-' then return a - b, 'i' end
      if op == '*' then return a * b, 'i' end
      if b == 0 then rules_fail('division by zero') end
      if op == '%' then return R_FMOD(a, b), 'i' end
      local q = a / b
      if q >= 0 then return R_FLOOR(q), 'i' end
      return R_CEIL(q), 'i'
    end
    if op == '+' then return a + b, 'f' end
    if op == '-' then return a - b, 'f' end
    if op == '*' then return a * b, 'f' end
    if op == '/' then return a / b, 'f' end
    return R_FMOD(a, b), 'f'
  end
  if op == '+' then
    if ka == 's' and kb == 's' then
      local len = #a + #b
      if len > R_LIM.max_string then
        rules_fail('a string of ' .. len .. ' bytes is longer than the maximum message size (' .. R_LIM.max_string ..
                   ' bytes)', 'MessageSizeExceeded')
      end
      rules_charge(3 * len)
      return a .. b, 's'
    end
    if ka == 'd' and kb == 't' then return a + b / 1000, 'd' end
    if ka == 't' and kb == 'd' then return b + a / 1000, 'd' end
    if ka == 't' and kb == 't' then return a + b, 't' end
  elseif op == '-' then
    if ka == 'd' and kb == 'd' then return (a - b) * 1000, 't' end
    if ka == 'd' and kb == 't' then return a - b / 1000, 'd' end
    if ka == 't' and kb == 't' then return a - b, 't' end
  end
  rules_fail("operator '" .. op .. "' cannot be applied to " .. R_KIND_NAME[ka] .. ' and ' .. R_KIND_NAME[kb])
end
for _, op in ipairs({'+', '-', '*', '/', '%'}) do
  R_OPS[op] = function(n)
    local a, ka = rules_eval(n[2])
    local b, kb = rules_eval(n[3])
    return rules_arith(op, a, ka, b, kb)
  end
end
R_OPS['neg'] = function(n)
  local a, k = rules_eval(n[2])
  if k == 'n' then return nil, 'n' end
  if k ~= 'i' and k ~= 'f' and k ~= 't' then rules_fail("unary '-' cannot be applied to a " .. R_KIND_NAME[k]) end
  return -a, k
end
R_OPS['pos'] = function(n)
  local a, k = rules_eval(n[2])
  if k ~= 'n' and k ~= 'i' and k ~= 'f' and k ~= 't' then
    rules_fail("unary '+' cannot be applied to a " .. R_KIND_NAME[k])
  end
  return a, k
end

-- LIKE: % any run of characters, _ one character, the escape character makes the next character
-- literal; case-sensitive. Matched without backtracking, so the work is at most about
-- subject x pattern bytes and is counted: the pattern, split at its %s into segments of literal
-- runs and _s (a segment has a fixed number of characters), has its first segment matched at the
-- start, its last at the end, and each one between at its leftmost place after the one before
-- (the leftmost place also ends first, which leaves the most room for the rest).
-- A character is a byte that is not a UTF-8 continuation byte with up to three continuation
-- bytes after it, or else a single byte (so that _ is defined, and bounded, on any bytes).
local R_CONT_RANGE = string.char(128) .. '-' .. string.char(191)
local R_CHAR_AT = '^[^' .. R_CONT_RANGE .. '][' .. R_CONT_RANGE .. ']?[' .. R_CONT_RANGE .. ']?[' ..
                  R_CONT_RANGE .. ']?'
local R_ONE_CHAR = R_CHAR_AT .. '$'

-- The segments of a pattern: each a list of literal strings and counts of _ (alternating). A run
-- of %s is one %, a run of _s one count.
local function rules_like_compile(p, esc)
  local segs, seg, lits, nl = {}, {}, {}, 0
  local i, n = 1, #p
  local w = string.find(p, '[%%_]')
  local e = esc and string.find(p, esc, 1, true)
  while true do
    local s = w
    if e and (not s or e <= s) then s = e end
    if not s then break end
    rules_charge(2 * R_STEP)
    if s > i then
      nl = nl + 1
      lits[nl] = string.sub(p, i, s - 1)
    end
    if s == e then
      local from = s + #esc
      if from > n then rules_fail('the LIKE pattern ends with its escape character') end
      local _, ce = string.find(p, R_CHAR_AT, from)
      nl = nl + 1
      lits[nl] = string.sub(p, from, ce or from)
      i = (ce or from) + 1
    else
      if nl > 0 then
        seg[#seg + 1] = nl == 1 and lits[1] or table.concat(lits, '', 1, nl)
        nl = 0
      end
      local c = string.byte(p, s)
      local _, last = string.find(p, c == 37 and '^%%+' or '^_+', s)
      if e and e <= last then last = e - 1 end  -- the escape character ends the run
      if c == 37 then
        segs[#segs + 1] = seg
        seg = {}
      elseif type(seg[#seg]) == 'number' then
        seg[#seg] = seg[#seg] + last - s + 1
      else
        seg[#seg + 1] = last - s + 1
      end
      i = last + 1
    end
    if w and w < i then w = string.find(p, '[%%_]', i) end
    if e and e < i then e = string.find(p, esc, i, true) end
  end
  if i <= n then
    nl = nl + 1
    lits[nl] = string.sub(p, i)
  end
  if nl > 0 then seg[#seg + 1] = table.concat(lits, '', 1, nl) end
  segs[#segs + 1] = seg
  segs.cost = R_LIM.compile - R_WORK
  return segs
end

-- A cached pattern is charged what compiling it cost: the same message costs the same whatever
-- was evaluated before it.
local function rules_like_pattern(p, esc)
  local cache = R_LIKE[esc or '']
  if not cache then
    cache = {}
    R_LIKE[esc or ''] = cache
  end
  local segs = cache[p]
  if segs then
    rules_charge(#p + segs.cost)
  else
    rules_charge(#p)
    R_LIM.compile = R_WORK
    segs = rules_like_compile(p, esc)
    cache[p] = segs
  end
  return segs
end

-- The position after `u` characters from pos, nil when they go past `last`.
local function rules_skip_chars(s, pos, u, last)
  rules_charge(u * R_STEP)
  for _ = 1, u do
    if pos > last then return nil end
    local _, ce = string.find(s, R_CHAR_AT, pos)
    pos = (ce or pos) + 1
  end
  if pos > last + 1 then return nil end
  return pos
end

-- The first position >= p0 where the literal `lit` occurs, or nil. A window the budget cannot
-- pay for at once is searched in pieces of 64 KiB, each paid before it is searched.
local function rules_find(s, lit, p0)
  local cost, n, m = R_FIND + R_FLOOR(#lit / 32), #s, #lit
  if n - p0 + 1 < m then return nil end
  if (n - p0 + 1) * cost <= R_WORK then
    local c = string.find(s, lit, p0, true)
    rules_charge((((c and c + m) or (n + 1)) - p0) * cost + R_STEP)
    return c
  end
  while true do
    local last = p0 + 65534 + m
    if last > n then last = n end
    rules_charge((last - p0 + 1) * (cost + 1) + R_STEP)
    local c = string.find(string.sub(s, p0, last), lit, 1, true)
    if c then return p0 + c - 1 end
    if last == n then return nil end
    p0 = last - m + 2
  end
end

-- Match seg's items k.. at pos, within s[pos..last]: the position after the match, or nil.
local function rules_seg_at(s, seg, k, pos, last)
  for j = k, #seg do
    local it = seg[j]
    if type(it) == 'number' then
      pos = rules_skip_chars(s, pos, it, last)
      if not pos then return nil end
    else
      local e = pos + #it - 1
      if e > last then return nil end
      rules_charge(#it + R_STEP)
      if string.sub(s, pos, e) ~= it then return nil end
      pos = e + 1
    end
  end
  return pos
end

-- The leftmost match of seg in s[pos..last]: the position after it, or nil.
local function rules_seg_find(s, seg, pos, last)
  local k, p0 = 1, pos
  if type(seg[1]) == 'number' then
    p0 = rules_skip_chars(s, pos, seg[1], last)
    if not p0 or #seg == 1 then return p0 end
    k = 2
  end
  local lit = seg[k]
  if lit == nil then return pos end
  while true do
    local c = rules_find(s, lit, p0)
    if not c or c + #lit - 1 > last then return nil end
    local e = rules_seg_at(s, seg, k + 1, c + #lit, last)
    if e then return e end
    p0 = c + 1
  end
end

-- Match seg so that it ends at `last` and starts at or after `first`: its start, or nil.
local function rules_seg_end(s, seg, first, last)
  local pos = last
  for j = #seg, 1, -1 do
    local it = seg[j]
    if type(it) == 'number' then
      rules_charge(it * R_STEP)
      for _ = 1, it do
        if pos < first then return nil end
        -- the character ending at pos: back over up to 3 continuation bytes to a lead byte
        local b = pos
        while b > pos - 3 and b > first do
          local c = string.byte(s, b)
          if c < 128 or c > 191 then break end
          b = b - 1
        end
        local c = string.byte(s, b)
        if c >= 128 and c <= 191 then b = pos end
        pos = b - 1
      end
    else
      local st = pos - #it + 1
      if st < first then return nil end
      rules_charge(#it + R_STEP)
      if string.sub(s, st, pos) ~= it then return nil end
      pos = st - 1
    end
  end
  return pos + 1
end

-- A first or last segment that is one literal (a prefix, a suffix: the common patterns) is
-- compared in place; its work is bounded by the pattern's length, which was charged.
local function rules_like_match(s, segs)
  local n, nseg = #s, #segs
  local first, last, pos, tail = segs[1], segs[nseg], 1, n + 1
  if #first == 1 and type(first[1]) == 'string' then
    local lit = first[1]
    if string.sub(s, 1, #lit) ~= lit then return false end
    pos = #lit + 1
  elseif #first > 0 then
    pos = rules_seg_at(s, first, 1, 1, n)
  end
  if nseg == 1 or not pos then return pos == n + 1 end
  if #last == 1 and type(last[1]) == 'string' then
    local lit = last[1]
    tail = n - #lit + 1
    if tail < pos or string.sub(s, tail) ~= lit then return false end
  elseif #last > 0 then
    tail = rules_seg_end(s, last, pos, n)
  end
  if not tail then return false end
  for j = 2, nseg - 1 do
    pos = rules_seg_find(s, segs[j], pos, tail - 1)
    if not pos then return false end
  end
  return true
end

R_OPS['like'] = function(n)
  local a, ka = rules_eval(n[2])
  local p, kp = rules_eval(n[3])
  local esc, ke = nil, 'b'
  if n[4] ~= nil then esc, ke = rules_eval(n[4]) end
  if ka == 'n' or kp == 'n' or ke == 'n' then return nil, 'n' end
  if ka ~= 's' or kp ~= 's' then
    rules_fail('LIKE needs strings, not ' .. R_KIND_NAME[ka] .. ' LIKE ' .. R_KIND_NAME[kp])
  end
  if esc ~= nil and (ke ~= 's' or (#esc ~= 1 and not string.find(esc, R_ONE_CHAR))) then
    rules_fail('the ESCAPE character must be a string of length 1')
  end
  return rules_like_match(a, rules_like_pattern(p, esc)), 'b'
end

local function rules_program(program)
  if type(program) == 'table' then return program end
  local p = R_PROGRAMS[program]
  if not p then
    p = cjson.decode(program)
    if type(p) ~= 'table' or p[1] ~= 1 then error('rules: unsupported program version', 0) end
    R_PROGRAMS[program] = p
  end
  return p
end

-- Run fn(prog) with the message installed, within the work budget; nil, err, reason for an
-- evaluation error (a table raised by rules_fail); any other error is a bug and is raised again.
local function rules_run(fn, prog, hdr, ap, brk, shared)
  local left = R_LIM.call_left
  local budget = left < R_WORK_EVAL and left or R_WORK_EVAL
  R_WORK, R_INDEXED = budget, false
  R_HDR, R_AP, R_BRK = hdr or R_EMPTY, ap or R_EMPTY, brk or R_EMPTY
  R_LOW = shared and ap and R_LOWS[ap] or nil
  local ok, r1, r2, r3 = pcall(fn, prog)
  if shared and ap and R_LOW then R_LOWS[ap] = R_LOW end
  R_HDR, R_AP, R_BRK, R_LOW = R_EMPTY, R_EMPTY, R_EMPTY, nil
  if R_WORK < budget then R_LIM.call_left = left - (R_WORK < 0 and budget or budget - R_WORK) end
  if ok then return r1, r2, r3 end
  if type(r1) == 'table' then return nil, r1[1], r1[2] end
  error(r1, 0)
end

local function rules_match_run(prog)
  local v = rules_cond(prog[2])
  return v == true
end

-- A correlation filter whose first field is a system property holding a plain string: the
-- program starts [1,["and",["ceq",["s",key],text] or is [1,["ceq",["s",key],text]]. A message
-- whose property is missing, or another string, does not match it (ceq is false, and AND stops
-- there): answered from the text, without decoding the program (most of a rule's cost when a
-- subscription routes by correlation id over many rules). Nil when the program must run.
local function rules_prescreen(program, hdr)
  local key, text = string.match(program, '^%[1,%["and",%["ceq",%["s","(%l+)"%],"([^"\\]*)"%],')
  if not key then key, text = string.match(program, '^%[1,%["ceq",%["s","(%l+)"%],"([^"\\]*)"%]%]$') end
  if not key or key == 'ttl' or key == 'se' then return nil end
  local v = hdr[key]
  if key == 'pk' and v == nil then v = hdr.sid end
  if v == nil or (type(v) == 'string' and v ~= text) then return false end
  return nil
end

local function rules_match(program, hdr, ap, brk)
  if type(program) == 'string' and hdr and rules_prescreen(program, hdr) == false then return false end
  if ap == cjson.null then ap = nil end
  if ap ~= nil and type(ap) ~= 'table' then return nil, 'the application properties are not an object', 'FilterException' end
  local v, err, reason = rules_run(rules_match_run, rules_program(program), hdr, ap, brk, true)
  if v == nil then return nil, err, reason end
  return v
end

-- A value as stored in the application properties (the codec's tagged form).
local function rules_store(v, k)
  if k == 'n' then return cjson.null end
  if k == 'i' or k == 'f' then
    if v ~= v or v == R_HUGE or v == -R_HUGE then rules_fail('cannot store a non-finite number') end
    return v
  end
  if k == 'd' then return {['$dt'] = R_FLOOR(v)} end
  if k == 't' then return {['$td'] = R_FLOOR(v)} end
  if k == 'u' then return {['$u'] = v} end
  if k == 'x' then return {['$b'] = v} end
  return v
end

local function rules_set_sys(key, v, k)
  if not R_CHG.h then R_CHG.h = {} end
  R_CHG.h[key] = true
  if key == 'ttl' then
    if k == 'n' then R_HDR.ttl = nil return end
    if k ~= 't' then rules_fail('sys.TimeToLive needs a TimeSpan, not ' .. R_KIND_NAME[k]) end
    if v <= 0 then rules_fail('sys.TimeToLive must be positive') end
    R_HDR.ttl = R_CEIL(v / 1000)
  elseif key == 'se' then
    if k == 'n' then R_HDR.se = nil return end
    if k ~= 'd' then rules_fail('sys.ScheduledEnqueueTimeUtc needs a DateTime, not ' .. R_KIND_NAME[k]) end
    R_HDR.se = R_FLOOR(v)
  else
    if k == 'n' then
      if key == 'id' then rules_fail('sys.MessageId cannot be NULL') end
      R_HDR[key] = nil
      return
    end
    if k ~= 's' then rules_fail('this system property needs a string, not ' .. R_KIND_NAME[k]) end
    R_HDR[key] = v
  end
end

-- changes: h = header keys SET (false: none), a = application property -> kind of its new value,
-- ap = true when a property was set or removed
local function rules_action_run(prog)
  R_CHG = {h = false, a = {}, ap = false}
  for i = 2, #prog do
    local st = prog[i]
    local ref = st[2]
    if st[1] == 'set' then
      local v, k = rules_eval(st[3])
      if ref[1] == 's' then
        rules_set_sys(ref[2], v, k)
      else
        local key = rules_user_key(ref[2], ref[3])
        if key == nil then
          key = ref[2]
          if R_LOW then  -- a new name: keep the case-folded index instead of building it again
            local low = ref[3] or ref[2]
            local cur = R_LOW[low]
            if cur == nil or key < cur then R_LOW[low] = key end
          end
        end
        R_AP[key] = rules_store(v, k)
        R_CHG.a[key] = k
        R_CHG.ap = true
      end
    elseif st[1] == 'rm' then
      local key = rules_user_key(ref[2], ref[3])
      if key ~= nil then
        R_AP[key] = nil
        R_CHG.a[key] = nil
        R_CHG.ap = true
        R_LOW = nil
      end
    else
      error('rules: unknown statement ' .. tostring(st[1]), 0)
    end
  end
  return R_HDR, R_AP, R_CHG
end

local function rules_copy(t)
  local c = {}
  if type(t) == 'table' then
    for k, v in pairs(t) do c[k] = v end
  end
  return c
end

local function rules_apply_action(program, hdr, ap, brk)
  if ap ~= nil and type(ap) ~= 'table' and ap ~= cjson.null then
    return nil, 'the application properties are not an object', 'FilterException'
  end
  return rules_run(rules_action_run, rules_program(program), rules_copy(hdr), rules_copy(ap), brk)
end

-- JSON for a header after an action: cjson.encode keeps 14 significant digits, this keeps all
-- (integers up to 2^63 as integers, other numbers with 17 digits); keys sorted.
local function rules_json(v)
  local t = type(v)
  if t == 'table' then
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = k end
    table.sort(keys)
    local parts = {}
    for i = 1, #keys do parts[i] = cjson.encode(keys[i]) .. ':' .. rules_json(v[keys[i]]) end
    return '{' .. table.concat(parts, ',') .. '}'
  end
  if t == 'number' then
    if v ~= v or v == R_HUGE or v == -R_HUGE then return 'null' end
    if v == R_FLOOR(v) and v > -2^63 and v < 2^63 then return string.format('%d', v) end
    return string.format('%.17g', v)
  end
  if t == 'string' then return cjson.encode(v) end
  if t == 'boolean' then return tostring(v) end
  return 'null'
end

-- A value an action stored, in its kind: a double keeps a point or an exponent (2.0, not 2).
local function rules_encode(v, k)
  if k == 'f' then
    local s = string.format('%.17g', v)
    if not string.find(s, '[.eEn]') then s = s .. '.0' end
    return s
  end
  return rules_json(v)
end

-- JSON text scanning, for JSON that cjson has decoded (so it is well formed): each function
-- takes the position of a token's first byte. Plain finds (memchr) where they can: the Lua pattern
-- matcher costs tens of ns a byte.
local function rules_json_string_end(text, i)
  local j = i + 1
  while true do
    local q = string.find(text, '"', j, true)
    local b = q - 1
    while string.byte(text, b) == 92 do b = b - 1 end  -- \: escaped when an odd number precede
    if (q - 1 - b) % 2 == 0 then return q end
    j = q + 1
  end
end

local function rules_json_value_end(text, i)
  local c = string.byte(text, i)
  if c == 34 then return rules_json_string_end(text, i) end
  if c == 123 or c == 91 then  -- { [
    local depth, j = 0, i
    while true do
      local q = string.find(text, '[%[%]{}"]', j)
      local b = string.byte(text, q)
      if b == 34 then
        j = rules_json_string_end(text, q) + 1
      else
        if b == 123 or b == 91 then depth = depth + 1 else depth = depth - 1 end
        if depth == 0 then return q end
        j = q + 1
      end
    end
  end
  local _, e = string.find(text, '^[^,}%]%s]*', i)  -- number, true, false, null
  return e
end

-- The members of the object whose '{' is at i: {list of {key, key start, key end, value start,
-- value end, members of the value when it is the object named `inner`}, map key -> index of its
-- last member (cjson keeps the last of equal keys), the text between '{' and the first key},
-- and the position of the closing '}'.
local function rules_json_members(text, i, inner)
  local list, last = {}, {}
  local _, e = string.find(text, '^%s*', i + 1)
  local obj = {list, last, string.sub(text, i + 1, e)}
  i = e + 1
  if string.byte(text, i) == 125 then return obj, i end  -- }
  while true do
    local ke = rules_json_string_end(text, i)
    local key = string.sub(text, i + 1, ke - 1)
    if string.find(key, '\\', 1, true) then key = cjson.decode(string.sub(text, i, ke)) end
    local vs = ke + 2
    if string.byte(text, ke + 1) ~= 58 or string.find(text, '^%s', vs) then  -- not ':' + value
      _, vs = string.find(text, '^%s*:%s*', ke + 1)
      vs = vs + 1
    end
    local m = {key, i, ke, vs}
    if key == inner and string.byte(text, vs) == 123 then
      m[6], m[5] = rules_json_members(text, vs)
    else
      m[5] = rules_json_value_end(text, vs)
    end
    list[#list + 1] = m
    last[key] = #list
    local ve = m[5]
    local c = string.byte(text, ve + 1)
    if c == 125 then return obj, ve + 1 end
    if c == 44 and string.byte(text, ve + 2) == 34 then
      i = ve + 2
    else
      _, e = string.find(text, '^%s*', ve + 1)
      if string.byte(text, e + 1) == 125 then return obj, e + 1 end
      _, e = string.find(text, '^%s*', e + 2)
      i = e + 1
    end
  end
end

-- The application properties after an action as JSON: untouched members copied from the
-- original object's text (obj: rules_json_members' first result, or nil), the ones set encoded,
-- new ones after them in name order.
local function rules_ap_text(text, obj, ap, kinds)
  local parts, seen = {}, {}
  if obj then
    local list, last = obj[1], obj[2]
    for idx = 1, #list do
      local m = list[idx]
      local key = m[1]
      if last[key] == idx and ap[key] ~= nil then
        seen[key] = true
        if kinds[key] then
          parts[#parts + 1] = string.sub(text, m[2], m[3]) .. ':' .. rules_encode(ap[key], kinds[key])
        else
          parts[#parts + 1] = string.sub(text, m[2], m[5])
        end
      end
    end
  end
  local added = {}
  for key in pairs(ap) do
    if not seen[key] then added[#added + 1] = key end
  end
  table.sort(added)
  for _, key in ipairs(added) do
    parts[#parts + 1] = cjson.encode(key) .. ':' .. rules_encode(ap[key], kinds[key])
  end
  return '{' .. table.concat(parts, ',') .. '}'
end

local function rules_splice(text, hdr, ap, chg)
  local set = chg.h or R_EMPTY
  local _, open = string.find(text, '^%s*{')
  local obj = rules_json_members(text, open, 'ap')
  local list, last, lead = obj[1], obj[2], obj[3]
  local parts, seen = {}, {}
  local has_ap = next(ap) ~= nil
  for idx = 1, #list do
    local m = list[idx]
    local key = m[1]
    if last[key] == idx then
      seen[key] = true
      if key == 'ap' then
        if not chg.ap then
          parts[#parts + 1] = string.sub(text, m[2], m[5])
        elseif has_ap then
          parts[#parts + 1] = string.sub(text, m[2], m[3]) .. ':' .. rules_ap_text(text, m[6], ap, chg.a)
        end
      elseif not set[key] then
        parts[#parts + 1] = string.sub(text, m[2], m[5])
      elseif hdr[key] ~= nil then
        parts[#parts + 1] = string.sub(text, m[2], m[3]) .. ':' .. rules_json(hdr[key])
      end
    end
  end
  local added = {}
  for key in pairs(set) do
    if not seen[key] and hdr[key] ~= nil then added[#added + 1] = key end
  end
  table.sort(added)
  for _, key in ipairs(added) do parts[#parts + 1] = cjson.encode(key) .. ':' .. rules_json(hdr[key]) end
  if not seen.ap and chg.ap and has_ap then parts[#parts + 1] = '"ap":' .. rules_ap_text(nil, nil, ap, chg.a) end
  return '{' .. lead .. table.concat(parts, ',') .. '}'
end

-- The header encoded again from the tables, the properties the action set in their kind.
local function rules_header_of(hdr, ap, kinds)
  local keys = {}
  for k in pairs(hdr) do
    if k ~= 'ap' then keys[#keys + 1] = k end
  end
  if next(ap) ~= nil then keys[#keys + 1] = 'ap' end
  table.sort(keys)
  for i = 1, #keys do
    local k = keys[i]
    if k == 'ap' then
      local names = {}
      for name in pairs(ap) do names[#names + 1] = name end
      table.sort(names)
      for n = 1, #names do
        local name = names[n]
        names[n] = cjson.encode(name) .. ':' .. rules_encode(ap[name], kinds[name])
      end
      keys[i] = '"ap":{' .. table.concat(names, ',') .. '}'
    else
      keys[i] = cjson.encode(k) .. ':' .. rules_json(hdr[k])
    end
  end
  return '{' .. table.concat(keys, ',') .. '}'
end

-- No number beyond 2^53 among t's values (and in the tagged tables among them), and no NaN (the
-- sender's NaN, which rules_json would write as null).
local function rules_exact_values(t)
  for _, v in pairs(t) do
    if type(v) == 'number' then
      if v >= 9007199254740992 or v <= -9007199254740992 or v ~= v then return false end
    elseif type(v) == 'table' then
      for _, x in pairs(v) do
        if type(x) == 'number' and (x >= 9007199254740992 or x <= -9007199254740992) then return false end
      end
    end
  end
  return true
end

-- Whether encoding the tables again gives back every value and type of `text`: no double with an
-- integral value written with a point ('2.0': cjson reads 2), no number beyond 2^53 (cjson keeps
-- 14 digits; Python writes the doubles from 1e16 on with an exponent, so these cover those too).
-- A '.0' inside a string only costs the splice. (Cheaper than splicing: plain finds and a walk
-- over the decoded values.)
local function rules_reencodes(text, hdr, ap)
  local j = 1
  while true do
    local q = string.find(text, '.0', j, true)
    if not q then break end
    local _, e = string.find(text, '^0*', q + 1)
    local c = string.byte(text, e + 1)
    if not c or c < 48 or c > 57 then return false end
    j = e + 1
  end
  return rules_exact_values(hdr) and rules_exact_values(ap)
end

-- The header after an action (docs at the top), or nil when it cannot be written: only a raw
-- client can store properties that are not an object of names (an array, names of mixed types).
local function rules_header(text, hdr, ap, chg)
  local ok, out
  if not rules_reencodes(text, hdr, ap) then
    ok, out = pcall(rules_splice, text, hdr, ap, chg)
    if ok then return out end
  end
  ok, out = pcall(rules_header_of, hdr, ap, chg.a)
  if ok then return out end
  return nil
end

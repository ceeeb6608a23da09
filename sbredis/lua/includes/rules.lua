--[[
  rules: evaluate subscription rule programs (compiled by sbredis/_core/rules.py) on one message.
  No Redis calls, no globals, deterministic. Needs nothing else included.

  rules_match(program, hdr, ap, brk)          -> true | false | nil, err
  rules_apply_action(program, hdr, ap, brk)   -> hdr2, ap2 | nil, err
  rules_json(value)                           -> JSON text (lossless numbers, sorted keys)

  program  the JSON text of a compiled program, or its cjson.decode table (decoded programs are
           cached per script call, keyed by the text)
  hdr      the message header, cjson-decoded (codec.FIELDS short keys: id ci sj to rt sid rts ct
           pk; ttl = time to live ms; se = scheduled enqueue ms); its 'ap' key is not read
  ap       the application properties (header 'ap'), cjson-decoded: string, number, boolean,
           cjson.null, or a tagged table {["$dt"]=ms} {["$td"]=us} {["$u"]=uuid} {["$b"]=base64};
           nil when the message has none
  brk      optional: values the broker knows at fan-out: sn (sequence number), et (enqueued ms),
           xt (expires-at ms), sz (size in bytes), dc (delivery count); nil reads as NULL

  rules_match is true only when the filter is TRUE (FALSE and unknown give false); nil, err on an
  evaluation error (a type mismatch, integer division by zero, a bad LIKE escape, an unknown
  system property named by property(...)): the caller dead-letters or drops the message.
  rules_apply_action runs SET/REMOVE on shallow copies of hdr and ap (the originals are never
  changed) and returns the copies (ap2 is a table, maybe empty); nil, err on an evaluation error.
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
local R_HDR, R_AP, R_BRK, R_LOW = R_EMPTY, R_EMPTY, R_EMPTY, nil
local R_PROGRAMS, R_LIKE = {}, {}
local R_OPS = {}

-- An evaluation error: a table, so that pcall tells it from a bug in this file.
local function rules_fail(msg)
  error({msg}, 0)
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
    R_LOW = {}
    for k in pairs(R_AP) do
      local l = string.lower(k)
      local cur = R_LOW[l]
      if cur == nil or k < cur then R_LOW[l] = k end
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
  local low = string.lower(name)
  if string.sub(low, 1, 4) == 'sys.' then
    local key = R_SYS_NAMES[string.sub(low, 5)]
    if not key then rules_fail("the system property '" .. string.sub(name, 5) .. "' does not exist") end
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
    if ka == 's' and kb == 's' then return a .. b, 's' end
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

-- LIKE: % any run of characters, _ one character (UTF-8), the escape character makes the next
-- character literal; case-sensitive. Patterns become anchored Lua patterns, cached per call.
-- one UTF-8 character (built with string.char: the bytecode keeps only ASCII string constants)
local R_UTF8_CHAR = '[%z\1-\127' .. string.char(194) .. '-' .. string.char(244) .. '][' ..
                    string.char(128) .. '-' .. string.char(191) .. ']*'
local R_UTF8_ONE = '^' .. R_UTF8_CHAR .. '$'
local function rules_like_pattern(p, esc)
  local cache = R_LIKE[esc or '']
  if not cache then
    cache = {}
    R_LIKE[esc or ''] = cache
  end
  local lp = cache[p]
  if lp then return lp end
  local out, i, n, escaping = {'^'}, 1, #p, false
  while i <= n do
    local s, j = string.find(p, R_UTF8_CHAR, i)
    if s ~= i then j = i end  -- not UTF-8: take the byte
    local c = string.sub(p, i, j)
    if escaping then
      escaping = false
      if c == '\0' then c = '%z' elseif string.find(c, '^%p$') then c = '%' .. c end
      out[#out + 1] = c
    elseif c == esc then
      escaping = true
    elseif c == '%' then
      out[#out + 1] = '.-'
    elseif c == '_' then
      out[#out + 1] = R_UTF8_CHAR
    else
      if c == '\0' then c = '%z' elseif string.find(c, '^%p$') then c = '%' .. c end
      out[#out + 1] = c
    end
    i = j + 1
  end
  if escaping then rules_fail('the LIKE pattern ends with its escape character') end
  out[#out + 1] = '$'
  lp = table.concat(out)
  cache[p] = lp
  return lp
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
  if esc ~= nil and (ke ~= 's' or not string.find(esc, R_UTF8_ONE)) then
    rules_fail('the ESCAPE character must be a string of length 1')
  end
  return string.find(a, rules_like_pattern(p, esc)) ~= nil, 'b'
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

-- Run fn(prog) with the message installed; nil, err for an evaluation error (a table raised
-- by rules_fail); any other error is a bug and is raised again.
local function rules_run(fn, prog, hdr, ap, brk)
  R_HDR, R_AP, R_BRK, R_LOW = hdr or R_EMPTY, ap or R_EMPTY, brk or R_EMPTY, nil
  local ok, r1, r2 = pcall(fn, prog)
  R_HDR, R_AP, R_BRK, R_LOW = R_EMPTY, R_EMPTY, R_EMPTY, nil
  if ok then return r1, r2 end
  if type(r1) == 'table' then return nil, r1[1] end
  error(r1, 0)
end

local function rules_match_run(prog)
  local v = rules_cond(prog[2])
  return v == true
end

local function rules_match(program, hdr, ap, brk)
  local v, err = rules_run(rules_match_run, rules_program(program), hdr, ap, brk)
  if v == nil then return nil, err end
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

local function rules_action_run(prog)
  for i = 2, #prog do
    local st = prog[i]
    local ref = st[2]
    if st[1] == 'set' then
      local v, k = rules_eval(st[3])
      if ref[1] == 's' then
        rules_set_sys(ref[2], v, k)
      else
        R_AP[rules_user_key(ref[2], ref[3]) or ref[2]] = rules_store(v, k)
        R_LOW = nil
      end
    elseif st[1] == 'rm' then
      local key = rules_user_key(ref[2], ref[3])
      if key ~= nil then
        R_AP[key] = nil
        R_LOW = nil
      end
    else
      error('rules: unknown statement ' .. tostring(st[1]), 0)
    end
  end
  return R_HDR, R_AP
end

local function rules_copy(t)
  local c = {}
  if t then
    for k, v in pairs(t) do c[k] = v end
  end
  return c
end

local function rules_apply_action(program, hdr, ap, brk)
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

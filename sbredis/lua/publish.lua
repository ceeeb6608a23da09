--[[
  publish: fan a batch of messages out of one topic partition into the same partition of every
  subscription whose rules match (one hash tag: the subscriptions' keys live under the topic
  partition's tag). A small fan-out is one atomic call, as every other script: every copy of every
  message is stored, or none. A wide one (more subscriptions x messages than one call's BUDGET) is
  split across calls (docs/topics.md, "Wide fan-outs"): 'check' calls refuse it before anything is
  written, a 'start' call takes the messages (sequence numbers, duplicate detection) and records
  them and the subscription set in the topic partition's fan-out journal (the client passes it no
  subscription's keys: c = 0), and continuation calls write one chunk each.
  KEYS: the topic partition's 24 keys, its fan-out journal (keys.journal_key), then 10 per
        subscription (the keys a fan-out writes, includes/fansets.lua): of all the names in ARGV
        (mode ''), of names a + 1 .. a + c ('start') or of the journal's next chunk; a 'check'
        passes 2 per subscription (cfg and st: keys.CHECK_KEY_NAMES)
  ARGV[1] subv: the version of the subscription set the caller built KEYS for ('+': a continuation,
          whose only other arguments are the journal id and the cursor the caller expects)
  ARGV[2] k: the number of subscriptions, then their k names
  ARGV[3 + k] source: '' for a send, else the forwarding source ('<path>:<p>:<incarnation>')
  ARGV[4 + k] n, then 7 per message: message_id ('' when duplicate detection does not apply),
          ttl_ms (0: the default), scheduled_ms (0: now), hop count, expires_ms (0: from the ttl;
          else an upper bound, a forwarded message's expiry), outbox seq (0 unless forwarded),
          blob
  ARGV[5 + k + 7n] mode: '' (or absent) all subscriptions in this call; 'check' a read-only check
          of subscriptions a + 1 .. a + c (c: the sets in KEYS; the client names only those, a = 0);
          'start' the first writing call of a split fan-out, for subscriptions 1 .. c (naming all
          k, which the journal records; the client passes c = 0); then a: the offset of the
          first set
  Returns: {now_ms, seq_1, ..., seq_n}: the topic's sequence numbers, 0 for a message dropped as
           a duplicate (or, forwarded, at or below the source's high-water mark); 'start' adds
           the journal's state after them when it recorded one: jid, cursor, the next chunk's
           names; 'check': {0};
           when ARGV[1] is not the current version: {-1, subv, name_1, forwards_1, name_2, ...};
           while a journal is pending (a mode that writes the topic, or a continuation naming
           another state): {-2, jid, cursor, the names of its next chunk...} (help finish it,
           then call again); a continuation that finished the journal, or found none: {0}
  Errors:  NOTFOUND  DISABLED (send)  SIZE (a message, or a sent batch, over max_msg)
           INVALID (KEYS without the journal, or k or n not what ARGV holds)
           QUOTA (a subscription partition would exceed the topic's max_size)
           NOSESSION (a copy for a subscription that requires sessions has no session id; nothing
           is stored)
           A continuation refuses nothing (the messages were accepted): quota is not checked
           again, a session copy without a session id (its subscription was recreated requiring
           sessions) is not stored, a deleted or disabled subscription is skipped.
  Per subscription: status Disabled receives nothing; every rule is evaluated (in name order);
  one copy for all matching rules without an action, one copy per matching rule with an action
  (the action applied to it; a copy for a session subscription goes to its session, see
  includes/sessions.lua); an evaluation error stores one copy in the subscription's
  dead-letter subqueue when its cfg says dlf = 1, else none, with the reason rules.lua gives
  (FilterException, RuleEvaluationLimitExceeded, MessageSizeExceeded: also an action's copy
  over max_msg). TTL: the message's, else the topic's default, capped by the topic's and by the
  subscription's.
  Cost: a fixed part per subscription (its keys, one read of its cfg and one of its st, one write
  of its st) and one XADD per copy; a topic has at most 2,000 subscriptions (docs/topics.md).
  A call's chunk is at most BUDGET units, 2 per subscription, 1 per subscription x message and 1
  per subscription x BUDGET_BYTES of the messages (protocol/publish.py's chunk_size).
]]
--@include partition
--@include fansets
--@include rules
--@include sessions
--@include journal
local BUDGET = 200  -- a call's work units: a few ms of server CPU (docs/topics.md, Wide fan-outs)
local BUDGET_BYTES = 65536  -- a unit's bytes of the messages' blobs, per subscription
local NONE = {}  -- a subscription's dead-letter copies until it has one (never changed)
-- A call reads at most READ_FIELDS fields of its subscriptions' cfgs past the $Default-only ones
-- (HGETALL and sorting the rules: about 2 us a rule); walking the rules costs at most WALK +
-- WALK_PAIR per subscription x message units, and never more than WALK_MAX (rules.lua's
-- rules_walk; docs/rules.md, Limits); a subscription whose rules cost more than WALK for one
-- message is not walked at all
local READ_FIELDS, WALK, WALK_PAIR, WALK_MAX = 4096, 8388608, 131072, 12582912

-- the subscriptions a chunk writes for n messages of `bytes` in all: each copy also costs a unit
-- per BUDGET_BYTES (copying 1 MB into a stream takes about 0.6 ms)
local function chunk_of(n, bytes)
  local c = math.floor(BUDGET / (2 + n + math.floor(bytes / BUDGET_BYTES)))
  if c < 1 then c = 1 end
  return c
end

local set_of = fanset  -- checkset in a check call (2 keys a subscription)

-- the subscriptions of the sets in KEYS (names[a + 1 .. a + c]): settings and rules. Most
-- subscriptions have only the $Default rule: cfg 'nf' counts the fields the subscription's
-- settings wrote (with itself), so when HLEN is that, 'pre' (idle.lua) and rf:$Default, there is
-- no other rule and one HMGET reads all; else the rules are read off HGETALL's reply (at 2,000
-- subscriptions the reads of cfg are most of a one-message publish).
local function read_subs(names, a, c)
  local subs = {}
  local decode_needed = false
  local default_only = {}  -- program -> the rule list {{'$Default', program}}, shared (never changed)
  local fields = READ_FIELDS
  for j = 1, c do
    local S = set_of(j)
    local f = redis.call('HMGET', S.cfg, 'status', 'pre', 'ttl_ms', 'dlf', 'sess', 'nf', 'rf:$Default', 'ra:$Default')
    local status, pre, ttl, dlf, sess = f[1], f[2], f[3], f[4], f[5]
    local rules, actions, over = {}, nil, nil
    local len = (status or pre) and redis.call('HLEN', S.cfg) or 0
    if f[6] and f[7] and not f[8] and len == tonumber(f[6]) + (pre and 2 or 1) then
      rules = default_only[f[7]]
      if not rules then
        rules = {{'$Default', f[7]}}
        default_only[f[7]] = rules
      end
    elseif len > fields then
      -- more rules than this call may read: not read, its copies dead-lettered (evaluate)
      over = 'The rules of the subscription were not evaluated: its settings hold ' .. len ..
             ' fields, more than the ' .. fields .. ' this publish can still read (at most ' .. READ_FIELDS .. ')'
    elseif status or pre then
      fields = fields - len
      local raw = redis.call('HGETALL', S.cfg)
      local rnames, progs = {}, {}
      for i = 1, #raw, 2 do
        local fld = raw[i]
        if string.byte(fld, 1) == 114 and string.byte(fld, 3) == 58 then  -- 'r?:'
          local kind = string.sub(fld, 1, 3)
          if kind == 'rf:' then
            local rname = string.sub(fld, 4)
            rnames[#rnames + 1] = rname
            progs[rname] = raw[i + 1]
          elseif kind == 'ra:' then
            actions = actions or {}
            actions[string.sub(fld, 4)] = raw[i + 1]
          end
        end
      end
      -- in name order: sorting the names alone (no Lua comparator) is a third of sorting the rules
      table.sort(rnames)
      for r = 1, #rnames do rules[r] = {rnames[r], progs[rnames[r]]} end
    end
    local walk = 0  -- the most walking the rules costs for one message
    for r = 1, #rules do
      local rule = rules[r]
      if actions then rule[3] = actions[rule[1]] end
      if rule[3] then walk = walk + rules_walk_cost(rule[3]) end
      if rule[2] ~= '[1,true]' and rule[2] ~= '[1,false]' then walk = walk + rules_walk_cost(rule[2]) end
      if walk > 0 then decode_needed = true end
    end
    if walk > WALK then
      -- a rule list no publish can walk: its copies are dead-lettered, whatever the other
      -- subscriptions of the call (evaluate)
      over = 'The rules of the subscription were not evaluated: walking them costs ' .. walk ..
             ' work units, more than a publish allows (' .. WALK .. ')'
    end
    -- while auto-delete-on-idle retires a subscription (cfg 'pre': its status before), it still
    -- gets copies: deleted with it, or kept if it is put back (idle.lua); a deleted one (no cfg)
    -- gets none
    status = pre or status
    subs[j] = {S = S, name = names[a + j], on = status ~= nil and status ~= 'Disabled',
               ttl = tonumber(ttl or '0'), dlf = dlf == '1', rules = rules, sess = sess == '1',
               copies = {}, dead = NONE, added = 0, over = over}
  end
  return subs, decode_needed
end

-- evaluation: every copy of msgs ({tseq, blob, ttl, at, hop, xabs} each) for subs, and the bytes
-- each subscription would gain; nothing is written. strict: a copy refused (NOSESSION) or a
-- subscription over its quota is the error code returned; else such a copy is dropped and
-- quota is not checked (a continuation: the messages were accepted).
local function evaluate(cfg, subs, decode_needed, msgs, now, strict)
  local total = 0
  for i = 1, #msgs do total = total + #msgs[i][2] end
  -- rule evaluation's work: a base, and more per message and per byte of the batch (docs/rules.md,
  -- Limits): ordinary rules use a few thousand units a message
  local k = #subs
  rules_limits(cfg.max_msg, 2097152 + 32768 * #msgs + 4 * total, math.min(WALK + WALK_PAIR * #msgs * k, WALK_MAX))
  for i = 1, #msgs do
    local msg = msgs[i]
    local tseq, blob, ttl, at = msg[1], msg[2], msg[3], msg[4]
    local hdr, ap, body, brk, htext
    if decode_needed then
      local b1, b2, b3, b4 = string.byte(blob, 2, 5)
      local hlen = ((b1 * 256 + b2) * 256 + b3) * 256 + b4
      htext = string.sub(blob, 6, 5 + hlen)
      hdr = cjson.decode(htext)
      ap = hdr.ap
      hdr.ap = nil
      body = string.sub(blob, 6 + hlen)
      local enq = now
      if at > now then enq = at end
      brk = {sn = tseq, et = enq, sz = #blob, dc = 0}
      local t = ttl
      if t == 0 or (cfg.ttl_ms > 0 and t > cfg.ttl_ms) then t = cfg.ttl_ms end
      if t > 0 then brk.xt = enq + t end
    end
    -- a program gives the same answer for the same message: evaluate each distinct one once
    local matches, actions = {}, {}
    local plain_copy = nil  -- {blob, ttl, at, i}: the plain copy of message i, shared
    for j = 1, k do
      local sub = subs[j]
      if sub.on then
        local plain, acted, err, reason = false, nil, nil, nil
        if sub.over then err, reason = sub.over, 'RuleEvaluationLimitExceeded' end
        for r = 1, sub.over and 0 or #sub.rules do
          local rule = sub.rules[r]
          local matched
          if rule[2] == '[1,true]' then
            matched = true
          elseif rule[2] == '[1,false]' then
            matched = false
          else
            local ok, werr = rules_walk(rule[2])
            if not ok then
              err, reason = 'The filter of a rule failed: ' .. werr, 'RuleEvaluationLimitExceeded'
              break
            end
            local memo = matches[rule[2]]
            if not memo then
              local m, e, why = rules_match(rule[2], hdr, ap, brk)
              memo = {m, e, why}
              matches[rule[2]] = memo
            end
            matched = memo[1]
            if matched == nil then
              err, reason = 'The filter of a rule failed: ' .. tostring(memo[2]), memo[3]
              break
            end
          end
          if matched then
            if rule[3] then
              local ok, werr = rules_walk(rule[3])
              if not ok then
                err, reason = 'The action of a rule failed: ' .. werr, 'RuleEvaluationLimitExceeded'
                break
              end
              local copy = actions[rule[3]]
              if not copy then
                local h2, a2, chg = rules_apply_action(rule[3], hdr, ap, brk)
                if h2 == nil then
                  copy = {false, 'The action of a rule failed: ' .. tostring(a2), chg}
                else
                  local js = rules_header(htext, h2, a2, chg)
                  local len = js and #js or 0
                  if not js then
                    copy = {false, 'The action of a rule failed: the application properties are not an object of names',
                            'FilterException'}
                  elseif 5 + len + #body > cfg.max_msg then
                    copy = {false, 'The copy after the action of a rule is ' .. (5 + len + #body) .. ' bytes, over ' ..
                            'the maximum message size (' .. cfg.max_msg .. ' bytes)', 'MessageSizeExceeded'}
                  else
                    local cttl, cat = ttl, at
                    if h2.ttl ~= hdr.ttl then cttl = tonumber(h2.ttl or 0) end
                    if h2.se ~= hdr.se then cat = tonumber(h2.se or 0) end
                    copy = {string.char(1, math.floor(len / 16777216) % 256, math.floor(len / 65536) % 256,
                                        math.floor(len / 256) % 256, len % 256) .. js .. body, cttl, cat}
                  end
                end
                actions[rule[3]] = copy
              end
              if not copy[1] then
                err, reason = copy[2], copy[3]
                break
              end
              acted = acted or {}
              acted[#acted + 1] = copy
            else
              plain = true
            end
          end
        end
        if err then
          if sub.dlf then
            if sub.dead == NONE then sub.dead = {} end
            sub.dead[#sub.dead + 1] = {blob, err, reason or 'FilterException'}
            sub.added = sub.added + #blob
          end
        else
          local first = #sub.copies + 1
          if plain then
            -- one table for every subscription's plain copy of message i (a session
            -- subscription's copy gets its own: the session id is added to it below)
            local pc = plain_copy
            if sub.sess or not pc then pc = {blob, ttl, at, i} end
            if not sub.sess then plain_copy = pc end
            sub.copies[#sub.copies + 1] = pc
            sub.added = sub.added + #blob
          end
          for a = 1, #(acted or NONE) do
            local c = acted[a]
            sub.copies[#sub.copies + 1] = {c[1], c[2], c[3], i}
            sub.added = sub.added + #c[1]
          end
          if sub.sess then
            local c = first
            while c <= #sub.copies do
              local copy = sub.copies[c]
              copy[5] = blob_sid(copy[1])
              if copy[5] then
                c = c + 1
              elseif strict then
                return 'NOSESSION'
              else
                sub.added = sub.added - #copy[1]
                table.remove(sub.copies, c)
              end
            end
          end
        end
      end
    end
  end
  -- one read of each receiving subscription's st serves the size check and the writes
  for j = 1, k do
    local sub = subs[j]
    if sub.added > 0 then
      local S = sub.S
      local st = redis.call('HMGET', S.st, 'size', 'seq', 'cur')
      sub.size = tonumber(st[1] or '0')
      if strict and sub.size + sub.added > cfg.max_size then return 'QUOTA' end
      sub.seq = tonumber(st[2] or '0')
      sub.cur = st[3]
    end
  end
  return nil
end

-- the writes of subs' copies. scheduled: tseq -> {enq, name, seq, size, ...}, the copy maps this
-- call adds to (filled here, written by the caller)
local function write_subs(cfg, subs, msgs, now, scheduled, order)
  for j = 1, #subs do
    local sub = subs[j]
    local S = sub.S
    local nc = #sub.copies
    if nc > 0 then
      local seq = sub.seq
      if not sub.sess and not sub.cur then  -- partition.lua's cursor_init
        redis.call('HSET', S.st, 'cur', seq, 'seq', seq + nc, 'size', sub.size + sub.added)
      else  -- available copies go past the subscription's cursor, unindexed
        redis.call('HSET', S.st, 'seq', seq + nc, 'size', sub.size + sub.added)
      end
      local sched, exp = nil, nil  -- zset pairs, made when a copy needs one
      for c = 1, nc do
        local copy = sub.copies[c]
        local msg = msgs[copy[4]]
        seq = seq + 1
        local ttl = copy[2]
        if ttl == 0 or (cfg.ttl_ms > 0 and ttl > cfg.ttl_ms) then ttl = cfg.ttl_ms end
        if sub.ttl > 0 and (ttl == 0 or ttl > sub.ttl) then ttl = sub.ttl end
        local enq = now
        if copy[3] > now then enq = copy[3] end
        local x = 0
        if ttl > 0 then x = enq + ttl end
        local xabs = msg[6]
        if xabs > 0 and (x == 0 or xabs < x) then x = xabs end
        local hop = msg[5]
        if copy[5] then
          redis.call('XADD', S.m.log, seq .. '-0', 'b', copy[1], 'e', enq, 'x', x, 'h', hop, 's', copy[5])
        elseif hop == '0' then
          redis.call('XADD', S.m.log, seq .. '-0', 'b', copy[1], 'e', enq, 'x', x)
        else
          redis.call('XADD', S.m.log, seq .. '-0', 'b', copy[1], 'e', enq, 'x', x, 'h', hop)
        end
        if enq > now then
          sched = sched or {}
          sched[#sched + 1] = enq
          sched[#sched + 1] = seq
          local tseq = msg[1]
          local m = scheduled[tseq]
          if not m then
            m = {enq}
            scheduled[tseq] = m
            order[#order + 1] = tseq
          end
          m[#m + 1] = sub.name
          m[#m + 1] = seq
          m[#m + 1] = #copy[1]  -- its size: a cancel need not read the copy back
        elseif copy[5] then  -- (a session subscription's copy has one: else NOSESSION above)
          sess_ready(S.ses, copy[5], seq)
        end
        if x > 0 then
          exp = exp or {}
          exp[#exp + 1] = x
          exp[#exp + 1] = seq
        end
      end
      if sched then call_many('ZADD', S.sched, sched) end
      if exp then call_many('ZADD', S.exp, exp) end
    end
    for d = 1, #sub.dead do
      local dseq = redis.call('HINCRBY', S.st, 'dseq', 1)
      redis.call('XADD', S.d.log, dseq .. '-0', 'b', sub.dead[d][1], 'e', now, 'x', '0', 'r', sub.dead[d][3],
                 'rd', sub.dead[d][2], 'os', '0')
      redis.call('ZADD', S.d.ready, dseq, dseq)
    end
    if nc == 0 and sub.added > 0 then redis.call('HSET', S.st, 'size', sub.size + sub.added) end
  end
end

if not K_FJ then return fail('INVALID') end  -- publish's KEYS always have the journal
local cfg = load_cfg()

-- a continuation: one chunk of the pending journal, if the caller names its id and cursor
if ARGV[1] == '+' then
  local j, reply = continued(cfg, 'k', 'meta', 'now')
  if not j then return reply end
  local cur = tonumber(j[2])
  local c = fanset_count()
  if j[1] ~= ARGV[2] or j[2] ~= ARGV[3] or c == 0 then return pending(j[1], cur) end
  local names = chunk_names(cur)
  if c ~= #names or not sets_match(set_of, names, 0, c) then return pending(j[1], cur) end
  local meta = cjson.decode(j[4])
  local now = tonumber(j[5])
  -- the stored form of each message; a scheduled one that was cancelled meanwhile
  -- (cancel_topic_scheduled removed its entry) gets no more copies
  local msgs = {}
  for i = 1, #meta do
    local m = meta[i]
    if m[3] <= now or redis.call('ZSCORE', K_SCHED, m[1]) then
      msgs[#msgs + 1] = {m[1], redis.call('HGET', K_FJ, 'b' .. i), m[2], m[3], m[4], m[5]}
    end
  end
  local subs, decode_needed = read_subs(names, 0, c)
  evaluate(cfg, subs, decode_needed, msgs, now, false)
  local scheduled, order = {}, {}
  write_subs(cfg, subs, msgs, now, scheduled, order)
  -- each chunk appends its copies to the message's copy map as text: decoding and encoding the
  -- whole map at every chunk made a schedule to 2,000 subscriptions quadratic (calls up to 0.9 s)
  for o = 1, #order do
    local tseq = order[o]
    local m = scheduled[tseq]
    if #m > 1 then
      table.remove(m, 1)
      local add = string.sub(cjson.encode(m), 2, -2)
      local map = redis.call('HGET', MAIN.lk, tseq) or '[]'
      if #map <= 2 then  -- '[]', or '{}' (cjson's empty table)
        map = '[' .. add .. ']'
      else
        map = string.sub(map, 1, -2) .. ',' .. add .. ']'
      end
      redis.call('HSET', MAIN.lk, tseq, map)
    end
  end
  redis.call('HDEL', K_FJ, 'n' .. cur)
  cur = cur + c
  if cur >= tonumber(j[3]) then
    redis.call('DEL', K_FJ)
    return {0}
  end
  redis.call('HSET', K_FJ, 'cur', cur, 'pt', now_ms())  -- progress: receivers leave it to its writer
  return pending(j[1], cur)
end

if not cfg then return fail('NOTFOUND') end
if cfg.status == 'Disabled' or cfg.status == 'SendDisabled' then return fail('DISABLED') end
-- k and n bound every loop below: ARGV must hold what they count (the client never sends else)
local k = tonumber(ARGV[2])
if not k or k < 0 or k % 1 ~= 0 or 4 + k > #ARGV then return fail('INVALID') end
local source = ARGV[3 + k]
local base = 4 + k
local n = tonumber(ARGV[base])
if not n or n < 0 or n % 1 ~= 0 or base + 7 * n > #ARGV then return fail('INVALID') end
local mode = ARGV[base + 7 * n + 1] or ''
local a = tonumber(ARGV[base + 7 * n + 2] or '0')
local writes = mode ~= 'check'
if not writes then set_of = checkset end
local c = writes and fanset_count() or checkset_count()
-- while a journal is pending, nothing else is fanned out here: the caller finishes it first,
-- so no subscription sees a later message before an earlier one
if writes then
  local j = redis.call('HMGET', K_FJ, 'id', 'cur')
  if j[1] then return pending(j[1], j[2]) end
end
local subv = redis.call('HGET', K_CFG, 'subv') or '0'
local names = {}
for i = 1, k do names[i] = ARGV[2 + i] end
if subv ~= ARGV[1] or (mode == '' and c ~= k) or (mode == 'start' and a ~= 0) or a + c > k
   or (mode ~= '' and not sets_match(set_of, names, a, c)) then
  return subs_reply(subv)
end
local total = 0
for i = 1, n do
  local size = #ARGV[base + 7 * i]
  if size > cfg.max_msg then return fail('SIZE') end
  total = total + size
end
if source == '' and total > cfg.max_msg then return fail('SIZE') end

local now = now_ms()
if writes then
  -- scheduled messages that materialized no longer need their copy map (bounded cleanup)
  local done = redis.call('ZRANGEBYSCORE', K_SCHED, '-inf', now, 'LIMIT', 0, 100)
  if #done > 0 then
    call_many('ZREM', K_SCHED, done)
    call_many('HDEL', MAIN.lk, done)
  end
end

-- which messages are stored: forwarded ones above the source's mark, then duplicate detection
local keep = {}
local mark_field, mark, top = nil, 0, 0
if source ~= '' then
  mark_field = 'f:' .. source
  mark = tonumber(redis.call('HGET', K_ST, mark_field) or '0')
end
for i = 1, n do
  local fseq = tonumber(ARGV[base + 7 * i - 1])
  keep[i] = fseq == 0 or fseq > mark
  if fseq > top then top = fseq end
end
local marks = {}
if cfg.dedup_ms > 0 then
  if writes then redis.call('ZREMRANGEBYSCORE', K_DD, '-inf', now) end
  local seen = {}
  for i = 1, n do
    local mid = ARGV[base + 7 * i - 6]
    if keep[i] and mid ~= '' then
      local until_ms = seen[mid] or redis.call('ZSCORE', K_DD, mid)
      if until_ms and (until_ms == true or tonumber(until_ms) > now) then
        keep[i] = false
      else
        seen[mid] = true
        marks[#marks + 1] = now + cfg.dedup_ms
        marks[#marks + 1] = mid
      end
    end
  end
end

-- the kept messages ({tseq, blob, ttl, at, hop, xabs}), numbered after the topic's last one
local seq0 = tonumber(redis.call('HGET', K_ST, 'seq') or '0')
local msgs = {}
local tseqs = {}
for i = 1, n do
  if keep[i] then
    local tseq = seq0 + #msgs + 1
    tseqs[i] = tseq
    msgs[#msgs + 1] = {tseq, ARGV[base + 7 * i], tonumber(ARGV[base + 7 * i - 5]), tonumber(ARGV[base + 7 * i - 4]),
                       ARGV[base + 7 * i - 3], tonumber(ARGV[base + 7 * i - 2])}
  end
end

-- evaluation: nothing is written until every copy of this call is known and fits
local subs, decode_needed = read_subs(names, a, c)
local bad = evaluate(cfg, subs, decode_needed, msgs, now, true)
if bad then return fail(bad) end
if not writes then return {0} end

-- writes
if #marks > 0 then call_many('ZADD', K_DD, marks) end
if mark_field and top > mark then redis.call('HSET', K_ST, mark_field, top) end
local out = {now}
for i = 1, n do out[i + 1] = tseqs[i] or 0 end
if #msgs > 0 then redis.call('HINCRBY', K_ST, 'seq', #msgs) end
local split = mode == 'start' and #msgs > 0 and c < k
local scheduled, order = {}, {}
if split then
  -- every scheduled message gets its copy map now (empty until a chunk adds copies): a cancel
  -- meanwhile removes it, and the chunks after that store no more copies of it
  for i = 1, #msgs do
    local m = msgs[i]
    if m[4] > now then
      scheduled[m[1]] = {m[4]}
      order[#order + 1] = m[1]
    end
  end
end
write_subs(cfg, subs, msgs, now, scheduled, order)
for o = 1, #order do
  local tseq = order[o]
  local m = scheduled[tseq]
  redis.call('ZADD', K_SCHED, m[1], tseq)
  table.remove(m, 1)
  redis.call('HSET', MAIN.lk, tseq, cjson.encode(m))
end
if split then
  -- the journal: the stored form of each message, the set of subscriptions and the cursor
  local jid = redis.call('HINCRBY', K_ST, 'jid', 1)
  local meta = {}
  local fields = {'id', jid, 'cur', c, 'k', k, 'subv', subv, 'now', now, 'pt', now}
  for i = 1, #msgs do
    local m = msgs[i]
    meta[i] = {m[1], m[3], m[4], m[5], m[6]}
    fields[#fields + 1] = 'b' .. i
    fields[#fields + 1] = m[2]
  end
  fields[#fields + 1] = 'meta'
  fields[#fields + 1] = cjson.encode(meta)
  -- the rest of the set, chunk by chunk ('n<cursor>': the names of the chunk starting there)
  local bytes = 0
  for i = 1, #msgs do bytes = bytes + #msgs[i][2] end
  local size = chunk_of(#msgs, bytes)
  for from = c, k - 1, size do
    local chunk = {}
    for i = from + 1, math.min(k, from + size) do chunk[#chunk + 1] = names[i] end
    fields[#fields + 1] = 'n' .. from
    fields[#fields + 1] = cjson.encode(chunk)
  end
  call_many('HSET', K_FJ, fields)
  local p = pending(tostring(jid), c)
  for x = 2, #p do out[#out + 1] = p[x] end
end
touch(now)
return out

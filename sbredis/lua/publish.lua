--[[
  publish: fan a batch of messages out of one topic partition into the same partition of every
  subscription whose rules match: every copy of every message is stored, or none (one script,
  one hash tag: the subscriptions' keys live under the topic partition's tag).
  KEYS: the topic partition's 24 keys, then 10 per subscription (the keys a fan-out writes,
        includes/fansets.lua), in the order of the names in ARGV
  ARGV[1] subv: the version of the subscription set the caller built KEYS for
  ARGV[2] k: the number of subscriptions, then their k names
  ARGV[3 + k] source: '' for a send, else the forwarding source ('<path>:<p>:<incarnation>')
  ARGV[4 + k] n, then 7 per message: message_id ('' when duplicate detection does not apply),
          ttl_ms (0: the default), scheduled_ms (0: now), hop count, expires_ms (0: from the ttl;
          else an upper bound, a forwarded message's expiry), outbox seq (0 unless forwarded),
          blob
  Returns: {now_ms, seq_1, ..., seq_n}: the topic's sequence numbers, 0 for a message dropped as
           a duplicate (or, forwarded, at or below the source's high-water mark); when ARGV[1] is
           not the current version: {-1, subv, name_1, forwards_1, name_2, forwards_2, ...}
  Errors:  NOTFOUND  DISABLED (send)  SIZE (a message, or a sent batch, over max_msg)
           QUOTA (a subscription partition would exceed the topic's max_size)
           NOSESSION (a copy for a subscription that requires sessions has no session id; nothing
           is stored)
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
]]
--@include partition
--@include fansets
--@include rules
--@include sessions
local cfg = load_cfg()
if not cfg then return fail('NOTFOUND') end
if cfg.status == 'Disabled' or cfg.status == 'SendDisabled' then return fail('DISABLED') end
local subv = redis.call('HGET', K_CFG, 'subv') or '0'
local k = tonumber(ARGV[2])
if subv ~= ARGV[1] or fanset_count() ~= k then
  local all = redis.call('HGETALL', K_CFG)
  local out = {-1, subv}
  for i = 1, #all, 2 do
    if string.sub(all[i], 1, 4) == 'sub:' then
      out[#out + 1] = string.sub(all[i], 5)
      out[#out + 1] = all[i + 1]
    end
  end
  return out
end
local source = ARGV[3 + k]
local base = 4 + k
local n = tonumber(ARGV[base])
local total = 0
for i = 1, n do
  local size = #ARGV[base + 7 * i]
  if size > cfg.max_msg then return fail('SIZE') end
  total = total + size
end
if source == '' and total > cfg.max_msg then return fail('SIZE') end

local now = now_ms()
-- scheduled messages that materialized no longer need their copy map (bounded cleanup)
local done = redis.call('ZRANGEBYSCORE', K_SCHED, '-inf', now, 'LIMIT', 0, 100)
if #done > 0 then
  call_many('ZREM', K_SCHED, done)
  call_many('HDEL', MAIN.lk, done)
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
  redis.call('ZREMRANGEBYSCORE', K_DD, '-inf', now)
  local seen = {}
  for i = 1, n do
    local mid = ARGV[base + 7 * i - 6]
    if keep[i] and mid ~= '' then
      if seen[mid] or redis.call('ZSCORE', K_DD, mid) then
        keep[i] = false
      else
        seen[mid] = true
        marks[#marks + 1] = now + cfg.dedup_ms
        marks[#marks + 1] = mid
      end
    end
  end
end

-- the subscriptions: settings and rules of this partition. Most subscriptions have only the
-- $Default rule: cfg 'nf' counts the fields the subscription's settings wrote (with itself), so
-- when HLEN is that, 'pre' (idle.lua) and rf:$Default, there is no other rule and one HMGET reads
-- all; else the rules are read off HGETALL's reply (at 2,000 subscriptions the reads of cfg are
-- most of a one-message publish).
local subs = {}
local decode_needed = false
local default_only = {}  -- program -> the rule list {{'$Default', program}}, shared (never changed)
local NONE = {}  -- a subscription's dead-letter copies until it has one (never changed)
for j = 1, k do
  local S = fanset(j)
  local c = redis.call('HMGET', S.cfg, 'status', 'pre', 'ttl_ms', 'dlf', 'sess', 'nf', 'rf:$Default', 'ra:$Default')
  local status, pre, ttl, dlf, sess = c[1], c[2], c[3], c[4], c[5]
  local rules, actions = {}, nil
  if c[6] and c[7] and not c[8] and redis.call('HLEN', S.cfg) == tonumber(c[6]) + (pre and 2 or 1) then
    rules = default_only[c[7]]
    if not rules then
      rules = {{'$Default', c[7]}}
      default_only[c[7]] = rules
    end
  else
    local raw = redis.call('HGETALL', S.cfg)
    for i = 1, #raw, 2 do
      local f = raw[i]
      if string.byte(f, 1) == 114 and string.byte(f, 3) == 58 then  -- 'r?:'
        local kind = string.sub(f, 1, 3)
        if kind == 'rf:' then
          rules[#rules + 1] = {string.sub(f, 4), raw[i + 1]}
        elseif kind == 'ra:' then
          actions = actions or {}
          actions[string.sub(f, 4)] = raw[i + 1]
        end
      end
    end
  end
  for r = 1, #rules do
    local rule = rules[r]
    if actions then rule[3] = actions[rule[1]] end
    if rule[3] or (rule[2] ~= '[1,true]' and rule[2] ~= '[1,false]') then decode_needed = true end
  end
  if #rules > 1 then table.sort(rules, function(a, b) return a[1] < b[1] end) end
  -- while auto-delete-on-idle retires a subscription (cfg 'pre': its status before), it still
  -- gets copies: deleted with it, or kept if it is put back (idle.lua)
  status = pre or status
  subs[j] = {S = S, name = ARGV[2 + j], on = status ~= nil and status ~= 'Disabled',
             ttl = tonumber(ttl or '0'), dlf = dlf == '1', rules = rules, sess = sess == '1',
             copies = {}, dead = NONE, added = 0}
end

-- evaluation: nothing is written until every copy is known and fits
-- rule evaluation's work: a base, and more per message and per byte of the batch (docs/rules.md,
-- Limits): ordinary rules use a few thousand units a message
rules_limits(cfg.max_msg, 2097152 + 32768 * n + 4 * total)
local seq0 = tonumber(redis.call('HGET', K_ST, 'seq') or '0')
local tseqs = {}
local fresh = 0
for i = 1, n do
  if keep[i] then
    fresh = fresh + 1
    local tseq = seq0 + fresh
    tseqs[i] = tseq
    local blob = ARGV[base + 7 * i]
    local ttl = tonumber(ARGV[base + 7 * i - 5])
    local at = tonumber(ARGV[base + 7 * i - 4])
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
        for r = 1, #sub.rules do
          local rule = sub.rules[r]
          local matched
          if rule[2] == '[1,true]' then
            matched = true
          elseif rule[2] == '[1,false]' then
            matched = false
          else
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
            for c = first, #sub.copies do
              local copy = sub.copies[c]
              copy[5] = blob_sid(copy[1])
              if not copy[5] then return fail('NOSESSION') end
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
    if sub.size + sub.added > cfg.max_size then return fail('QUOTA') end
    sub.seq = tonumber(st[2] or '0')
    sub.cur = st[3]
  end
end

-- writes
if #marks > 0 then call_many('ZADD', K_DD, marks) end
if mark_field and top > mark then redis.call('HSET', K_ST, mark_field, top) end
local out = {now}
for i = 1, n do out[i + 1] = tseqs[i] or 0 end
if fresh > 0 then redis.call('HINCRBY', K_ST, 'seq', fresh) end
local scheduled, order = {}, {}  -- tseq -> {enq, name, seq, size, ...}: a scheduled message's copies
for j = 1, k do
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
      local i = copy[4]
      seq = seq + 1
      local ttl = copy[2]
      if ttl == 0 or (cfg.ttl_ms > 0 and ttl > cfg.ttl_ms) then ttl = cfg.ttl_ms end
      if sub.ttl > 0 and (ttl == 0 or ttl > sub.ttl) then ttl = sub.ttl end
      local enq = now
      if copy[3] > now then enq = copy[3] end
      local x = 0
      if ttl > 0 then x = enq + ttl end
      local xabs = tonumber(ARGV[base + 7 * i - 2])
      if xabs > 0 and (x == 0 or xabs < x) then x = xabs end
      local hop = ARGV[base + 7 * i - 3]
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
        local tseq = tseqs[i]
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
for o = 1, #order do
  local tseq = order[o]
  local m = scheduled[tseq]
  redis.call('ZADD', K_SCHED, m[1], tseq)
  table.remove(m, 1)
  redis.call('HSET', MAIN.lk, tseq, cjson.encode(m))
end
touch(now)
return out

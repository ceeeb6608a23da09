"""Mutation testing of the core: do the tests notice when a comparison, a constant or a condition changes?

python scripts/mutation.py                      # every Lua mutant, then every Python mutant
python scripts/mutation.py --lua                # the hand-made Lua mutants only
python scripts/mutation.py --python --max 40    # at most 40 Python mutants per target (spread evenly)
python scripts/mutation.py --only L-held-nonce,P-validation-7   # chosen mutants (ids from a table)
python scripts/mutation.py --list               # print the mutants, run nothing
python scripts/mutation.py --doc                # the results table into docs/reliability.md
python scripts/mutation.py --only P-send_plan-7 --tests "tests/integration/test_cluster.py -k killed"
                                                # a mutant against another selection

Not run by CI (a full run is a long series of pytest runs; run it with nothing else busy). The
tree is copied once to a temporary directory; each mutant is written into the copy (the aio shell's
generated sync twin is regenerated there), the focused tests of its target run against it
(``pytest -x``, real redis-server processes, one run at a time), and the file is put back. A mutant
is *killed* when a test fails, *timeout* when the run exceeds --timeout (counted as killed: the
change was noticed), *survived* when every test passed. The table is printed and the results are
written to bench/results/reliability/mutation.json (or --out); docs/reliability.md ("Mutation
testing") gives each survivor's verdict.

Python mutants are made by an AST mutator over chosen functions and classes: comparison operators
swapped (< <=, > >=, == !=, in / not in, is / is not), and/or swapped, integer constants off by
one, + and - swapped, a `not` dropped, an if/while condition negated. Lua mutants are hand-made
(LUA below): the lock checks, expiry and scheduled-time comparisons, delivery-count thresholds and
the duplicate-detection window, each a one-line edit of a script's key line.
"""

from __future__ import annotations

import argparse
import ast
import copy
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "results" / "reliability" / "mutation.json"
DOC = ROOT / "docs" / "reliability.md"
DOC_START, DOC_END = "<!-- mutation-table -->", "<!-- /mutation-table -->"
SKIP_COPY = {".git", ".venv", "node_modules", "__pycache__", ".mypy_cache", ".ruff_cache", "site", ".pytest_cache"}

# Focused test selections (pytest arguments). Conformance tests run on the standalone backend
# through the sync API: the sync shell is generated from the aio one, so it carries the mutant too.
ONE = ["-k", "not cluster and not memory and not async"]
IT = "tests/integration/"
LUA_TESTS = [
    "tests/reliability/test_boundaries.py",  # the millisecond boundaries, on a server clock that stands still
    IT + "test_send_receive.py",
    IT + "test_expiry_schedule_dedup.py",
    IT + "test_sessions.py",
    IT + "test_transactions.py",
    IT + "test_batches.py",
    IT + "test_one_at_a_time.py",  # complete.lua's one-message path (its own lock checks)
    IT + "test_lock_renewal.py::test_a_message_locked_ahead_is_not_dead_lettered_on_close",
    "-k",
    "(standalone or boundaries) and not async",
]
TESTS: dict[str, list[str]] = {
    "sbredis/_core/settlement.py": [
        IT + "test_send_receive.py",
        IT + "test_batches.py",
        IT + "test_transactions.py",
        IT + "test_abandon_delay.py",  # abandon_extra: the delay's range and its milliseconds
        IT + "test_abandon_delay_bounds.py",
        *ONE,
    ],
    "sbredis/_core/renewal.py": [  # test_clock: a client an hour off renews by the server's clock
        "tests/unit/test_concurrency.py",
        "tests/unit/test_renewer_arguments.py",
        IT + "test_lock_renewal.py",
        "tests/reliability/test_clock.py",
        *ONE,
    ],
    "sbredis/_core/send_plan.py": [  # partition_of also places sessions and transactional sends
        IT + "test_partition_keys.py",
        IT + "test_partial_send.py",  # which partitions failed and which stored
        IT + "test_send_receive.py",
        IT + "test_batches.py",
        IT + "test_topics.py",
        IT + "test_sessions.py",
        IT + "test_transactions.py",
        IT + "test_expiry_schedule_dedup.py",  # schedule_messages
        IT + "test_pipelining.py",  # pack(): concurrent sends coalesced into one call
        IT + "test_caller_isolation.py",  # group_outcomes: a shared call refused for one caller
        "tests/unit/test_send_plan_pack.py",  # pack()'s limits, to the byte and the message
        *ONE,
    ],
    "sbredis/_core/validation.py": [
        IT + "test_sequence_number_args.py",
        IT + "test_amqp.py",  # as_messages: AmqpAnnotatedMessage and mappings
        "tests/unit/test_message.py",
        "tests/unit/test_entity.py",
        "tests/unit/test_ops.py",
        IT + "test_sessions.py",
        IT + "test_send_receive.py",
        IT + "test_batches.py",
        *ONE,
    ],
    # the receiver through both APIs (the sync shell is generated from it): concurrent settlements
    # coalesce only in the async one
    "sbredis/aio/_receiver.py": [
        IT + "test_send_receive.py",
        IT + "test_batches.py",
        IT + "test_sessions.py",
        IT + "test_pipelining.py",  # concurrent settlements: _settle_now with many callers' entries
        IT + "test_generations.py",  # receive, peek and settle after a delete-and-create
        IT + "test_abandon_delay.py",
        IT + "test_lock_renewal.py",  # prefetch, lock expiry, renew_each for the AutoLockRenewer
        IT + "test_async.py",
        "tests/reliability/test_clock.py",  # the prefetch buffer's lock check by the server's clock
        "tests/reliability/test_expiry_sweep.py::test_a_receiver_with_no_wait_limit_gets_a_live_message_behind_expired_ones",
        "-k",
        "not cluster and not memory",
    ],
    # the coalescer is hand-written in both shells: its unit tests (each with a short deadline, so a
    # hang fails rather than times out) and the async tests exercise this one (-k: a test id with
    # "async", or with no API in it; "sync" alone would match "async" too)
    "sbredis/_concurrency.py": [
        "tests/unit/test_coalescer.py",
        IT + "test_pipelining.py",
        IT + "test_async.py",
        IT + "test_send_receive.py",
        "-k",
        "not cluster and not memory and (async or not sync)",
    ],
}
# What is mutated in each Python target: None for the whole module, else top-level function and
# class names.
SCOPE: dict[str, set[str] | None] = {
    "sbredis/_core/settlement.py": None,
    "sbredis/_core/renewal.py": None,
    "sbredis/_core/send_plan.py": None,
    "sbredis/_core/validation.py": None,
    "sbredis/aio/_receiver.py": None,
    "sbredis/_concurrency.py": {"AsyncCoalescer"},
}


@dataclass
class Mutant:
    id: str
    file: str
    line: int
    what: str
    tests: list[str]
    old: str = ""  # Lua: the exact text replaced (must occur once in the file)
    new: str = ""
    source: str = field(default="", repr=False)  # Python: the whole mutated module
    status: str = ""
    seconds: float = 0.0


# take()'s READ_US stop shows in a receive of thousands of messages (the slowlog fixture fails a
# script call over 50 ms; receive_messages must still return all of them): too slow for every mutant
READ_TESTS = [
    *LUA_TESTS[:-2],
    "tests/reliability/test_script_caps.py::test_receiving_thousands_of_small_messages_is_spread_over_calls_and_complete",
    "-k",
    "(standalone or boundaries or thousands) and not async",
]


def lua(mid: str, file: str, old: str, new: str, what: str, tests: list[str] | None = None) -> Mutant:
    path = "sbredis/lua/" + file
    text = (ROOT / path).read_text()
    line = text[: text.find(old)].count("\n") + 1 if old in text else 0
    return Mutant("L-" + mid, path, line, what, tests or LUA_TESTS, old, new)


LUA = [
    # lock checks: held() is every settlement's check (nonce and locked-until), settle.lua applies it
    lua(
        "held-nonce",
        "includes/messages.lua",
        "    if rec and string.sub(rec, 1, #p) == p then\n      local u",
        "    if rec then\n      local u",
        "held(): a lock record held by another nonce counts as ours",
    ),
    lua(
        "held-elapsed",
        "includes/messages.lua",
        "elseif tonumber(u) >= now then",
        "else",
        "held(): an elapsed lock still counts as held",
    ),
    lua(
        "held-boundary",
        "includes/messages.lua",
        "elseif tonumber(u) >= now then",
        "elseif tonumber(u) > now then",
        "held(): a lock ending this very ms counts as lost",
    ),
    lua(
        "held-probe",
        "includes/messages.lua",
        "'(' .. now, 'LIMIT', 0, 1) > 0",
        "'(' .. now, 'LIMIT', 0, 1) > 1",
        "held(): the elapsed-lock probe never fires (its LIMIT 1 reply is never > 1)",
    ),
    lua(
        "complete-status",
        "complete.lua",
        "if recs[i] then out[i] = 0 else out[i] = 1 end",
        "out[i] = 0",
        "complete: a lost lock is reported as completed",
    ),
    lua(
        "abandon-status",
        "abandon.lua",
        "    out[i] = 1\n",
        "    out[i] = 0\n",
        "abandon: a lost lock is reported as released",
    ),
    lua(
        "renew-status",
        "renew.lua",
        "if recs[i] then out[i + 1] = untl else out[i + 1] = 0 end",
        "out[i + 1] = untl",
        "renew: a lost lock is reported as renewed",
    ),
    lua(
        "renew-span",
        "renew.lua",
        "local untl = now + cfg.lock_ms",
        "local untl = now + cfg.lock_ms / 2",
        "renew: a renewal extends by half the lock duration",
    ),
    lua(
        "dl-lock",
        "dead_letter.lua",
        "local f = recs[i] and entry(MAIN, seq)",
        "local f = entry(MAIN, seq)",
        "dead_letter: no lock check",
    ),
    lua(
        "dl-group",
        "dead_letter.lua",
        "if ARGV[1] ~= 'm' then return fail('INVALID') end",
        "",
        "dead_letter: a dead-letter message may be dead-lettered again",
    ),
    lua(
        "defer-lock",
        "defer.lua",
        "  if recs[i] then\n    defer_held",
        "  if true then\n    defer_held",
        "defer: no lock check",
    ),
    lua(
        "session-check",
        "includes/session_locks.lua",
        "if holder ~= nonce or untl < now then",
        "if holder ~= nonce then",
        "sess_check: an elapsed session lock still counts as held",
    ),
    lua(
        "session-check-boundary",
        "includes/session_locks.lua",
        "untl < now then",
        "untl <= now then",
        "sess_check: a session lock ending this very ms counts as lost",
    ),
    lua(
        "session-held",
        "session_lock.lua",
        "if until_ >= now then return fail('HELD') end",
        "",
        "session_lock: a session held by another receiver is taken over",
    ),
    lua(
        "session-held-boundary",
        "session_lock.lua",
        "if until_ >= now then return fail('HELD') end",
        "if until_ > now then return fail('HELD') end",
        "session_lock: a lock ending this very ms is free",
    ),
    lua(
        "deferred-session",
        "receive_deferred.lua",
        "if holder ~= nonce or until_ < now then",
        "if holder ~= nonce then",
        "receive_deferred: an elapsed session lock still counts as held",
    ),
    lua(
        "complete-trim",
        "includes/messages.lua",
        "and #redis.call('XRANGE', G.log, '-', '(' .. done[1] .. '-0', 'COUNT', 1) == 0 then",
        "then",
        "remove_entries (complete): XTRIM even when older messages are still in the log",
    ),
    lua(
        "complete-del",
        "includes/settle.lua",
        "redis.call('HLEN', G.lk) == k and redis.call('ZCARD', G.locked) == k",
        "redis.call('HLEN', G.lk) == k",
        "complete: the DEL shortcut checks the lock records only",
    ),
    lua(
        "complete-dc",
        "includes/settle.lua",
        "if dc ~= '1' then",
        "if dc ~= '2' then",
        "complete: a twice-delivered message's delivery count stays in the dc hash",
    ),
    # expiry comparisons (sweep, take, release, receive_deferred, store)
    lua(
        "release-expired",
        "includes/messages.lua",
        "if x > 0 and x <= now then",
        "if x > 0 and x < now then",
        "release(): a message expiring this very ms goes back instead of expiring",
    ),
    lua(
        "release-expired-drop",
        "includes/messages.lua",
        "if x > 0 and x <= now then",
        "if false then",
        "release(): a message whose TTL passed while locked goes back",
    ),
    lua(
        "take-expired",
        "includes/messages.lua",
        "if G.main and x > 0 and x <= now then",
        "if G.main and x > 0 and x < now then",
        "take(): a message expiring this very ms is handed out",
    ),
    lua(
        "take-expired-drop",
        "includes/messages.lua",
        "if G.main and x > 0 and x <= now then",
        "if false then",
        "take(): expired messages are handed out",
    ),
    lua(
        "sweep-expiry-late",
        "includes/messages.lua",
        "if #redis.call('ZRANGEBYSCORE', K_EXP, '-inf', now, 'LIMIT', 0, 1) == 0",
        "if #redis.call('ZRANGEBYSCORE', K_EXP, '-inf', now - 60000, 'LIMIT', 0, 1) == 0",
        "sweep: expiries run a minute late",
    ),
    lua(
        "sweep-expiry-boundary",
        "includes/messages.lua",
        "if #redis.call('ZRANGEBYSCORE', K_EXP, '-inf', now, 'LIMIT', 0, 1) == 0",
        "if #redis.call('ZRANGEBYSCORE', K_EXP, '-inf', '(' .. now, 'LIMIT', 0, 1) == 0",
        "sweep: messages expiring this very ms, when no others have expired, wait for the next sweep",
    ),
    lua(
        "sweep-expiry-cursor",
        "includes/messages.lua",
        "(cur and nums[i] > cur)",
        "(cur and nums[i] >= cur)",
        "sweep: the message at the cursor counts as unread",
        ["tests/reliability/test_expiry_sweep.py", "-k", "at_the_cursor or near_the_head"],
    ),
    lua(
        "sweep-head-locked",
        "includes/messages.lua",
        "if fs_head and n == b - a + 1 then",
        "if fs_head then",
        "sweep: the log's expired head is trimmed with a locked message among it",
        ["tests/reliability/test_expiry_sweep.py", "-k", "locked_message_near_the_head"],
    ),
    lua(
        "sweep-head-expired",
        "includes/messages.lua",
        "if x == '0' or #x > #now_s or (#x == #now_s and x > now_s) then break end",
        "if x == '0' then break end",
        "sweep: the log's head is expired whatever its TTL",
        ["tests/reliability/test_expiry_sweep.py", "-k", "still_live_at_the_head"],
    ),
    lua(
        "take-skip-live",
        "includes/messages.lua",
        "elseif skip and tonumber(x) <= now then",
        "elseif skip then",
        "take(): passing over an expired backlog, live messages with a TTL are passed over too",
        ["tests/reliability/test_expiry_sweep.py", "-k", "in_order"],
    ),
    lua(
        "sweep-passed-over-index",
        "includes/messages.lua",
        "or (indexed and cur and not redis.call('ZSCORE', K_SCHED, seq)",
        "or (false and cur and not redis.call('ZSCORE', K_SCHED, seq)",
        "sweep: expired messages take() passed over, taken from the expiry index, stay in the log for good",
        ["tests/reliability/test_expiry_sweep.py", "-k", "deferred_head"],
    ),
    lua(
        "sweep-still-clock",
        "includes/messages.lua",
        "if spent <= 0 then  -- the clock stands still",
        "if false then",
        "sweep: a clock that stands still during a script (Redis 7.2) leaves the call unbounded but for its count",
        ["tests/reliability/test_expiry_sweep.py", "-k", "stands_still"],
    ),
    lua(
        "sweep-locks-late",
        "includes/messages.lua",
        "redis.call('ZRANGEBYSCORE', G.locked, '-inf', '(' .. now, 'LIMIT', 0, limit)",
        "redis.call('ZRANGEBYSCORE', G.locked, '-inf', '(' .. (now - 60000), 'LIMIT', 0, limit)",
        "sweep: elapsed locks are released a minute late",
    ),
    lua(
        "deferred-expired",
        "receive_deferred.lua",
        "if G.main and x > 0 and x <= now then",
        "if false then",
        "receive_deferred: an expired deferred message is handed out",
    ),
    lua(
        "ttl-cap",
        "includes/store.lua",
        "if ttl == 0 or (cfg.ttl_ms > 0 and ttl > cfg.ttl_ms) then",
        "if ttl == 0 then",
        "store: a message TTL over the entity's default is not capped",
    ),
    lua(
        "ttl-from-send",
        "includes/store.lua",
        "if ttl > 0 then x = enq + ttl end",
        "if ttl > 0 then x = now + ttl end",
        "store: a scheduled message's TTL counts from the send, not from its enqueue time",
    ),
    lua(
        "ttl-plain",
        "send.lua",
        "if ttl_ms > 0 then xs = tostring(now + ttl_ms) end",
        "if ttl_ms > 0 then xs = tostring(now + ttl_ms * 2) end",
        "send.lua's plain path: the entity's default TTL doubled",
    ),
    # complete.lua's fast path (one message under one nonce), before the general path
    lua(
        "cf-guard",
        "complete.lua",
        "if n == '1' and nonce ~= '' then",
        "if nonce ~= '' then",
        "complete fast path: taken for several messages under one nonce (only the first settled)",
    ),
    lua(
        "cf-status",
        "complete.lua",
        "if status and status ~= 'Disabled' and status ~= 'ReceiveDisabled'\n",
        "if status\n",
        "complete fast path: a receive-disabled entity's message is completed",
    ),
    lua(
        "cf-nonce",
        "complete.lua",
        "if rec and string.sub(rec, 1, #owner) == owner then",
        "if rec then",
        "complete fast path: a lock record held by another nonce counts as ours",
    ),
    lua(
        "cf-elapsed",
        "complete.lua",
        "if untl and tonumber(untl) >= now then",
        "if untl then",
        "complete fast path: an elapsed lock still counts as held",
    ),
    lua(
        "cf-boundary",
        "complete.lua",
        "if untl and tonumber(untl) >= now then",
        "if untl and tonumber(untl) > now then",
        "complete fast path: a lock ending this very ms counts as lost (left to the general path)",
    ),
    lua(
        "cf-session",
        "includes/messages.lua",
        "  if sid then return nonce .. '|' .. home",
        "  if false then return nonce .. '|' .. home",
        "lock records: a session message's carries its lock's end and no session id, so complete's "
        "fast path takes it without leaving its session",
    ),
    lua(
        "cf-xdel",
        "complete.lua",
        "          redis.call('XDEL', G.log, seq)\n",
        "",
        "complete fast path: the message stays in the log",
    ),
    lua(
        "cf-dc",
        "complete.lua",
        "if dc ~= '1' then redis.call('HDEL', G.dc, seq) end",
        "if dc ~= '2' then redis.call('HDEL', G.dc, seq) end",
        "complete fast path: a twice-delivered message's delivery count stays in the dc hash",
    ),
    lua(
        "cf-size",
        "complete.lua",
        "          redis.call('HINCRBY', K_ST, 'size', -sz)\n",
        "",
        "complete fast path: the completed message's size stays counted against the entity's quota",
    ),
    # send.lua's fast path (blobs alone, no sessions)
    lua(
        "sf-guard",
        "send.lua",
        "if c and c[1] and c[3] ~= '1' and",
        "if c and c[1] and",
        "send fast path: taken on a session entity (a message without a session id is stored)",
    ),
    lua(
        "sf-disabled",
        "send.lua",
        "    if c[1] == 'Disabled' or c[1] == 'SendDisabled' then return redis.error_reply('SBERR DISABLED') end\n",
        "",
        "send fast path: a send-disabled entity stores the message",
        [IT + "test_send_one.py"],
    ),
    lua(
        "sf-msg-size",
        "send.lua",
        "      if size > max_msg then return redis.error_reply('SBERR SIZE') end\n",
        "",
        "send fast path: no per-message size check",
    ),
    lua(
        "sf-batch-size",
        "send.lua",
        "    if total > max_msg then return redis.error_reply('SBERR SIZE') end\n",
        "",
        "send fast path: no check of the batch's total size",
    ),
    lua(
        "sf-quota",
        "send.lua",
        "+ total > tonumber(c[5]) then",
        "+ total > tonumber(c[5]) * 2 then",
        "send fast path: the entity's max size doubled",
    ),
    lua(
        "sf-quota-boundary",
        "send.lua",
        "+ total > tonumber(c[5]) then",
        "+ total >= tonumber(c[5]) then",
        "send fast path: a send that fills the entity exactly is refused",
    ),
    lua(
        "sf-seq",
        "send.lua",
        "redis.call('HSET', K_ST, 'seq', seq + n,",
        "redis.call('HSET', K_ST, 'seq', seq + n - 1,",
        "send fast path: the last seq recorded one short (the next send reuses it)",
    ),
    lua(
        "sf-enq",
        "send.lua",
        "'b', ARGV[2 + i], 'e', now_s, 'x', xs)",
        "'b', ARGV[2 + i], 'e', tostring(now + 60000), 'x', xs)",
        "send fast path: the enqueue time a minute ahead",
    ),
    lua(
        "sf-exp-index",
        "send.lua",
        "        redis.call('ZADD', K_EXP, unpack(exp))\n",
        "",
        "send fast path: the expiry index left out (expiry only when a receive reads the message)",
    ),
    lua(
        "sf-exp-batch",
        "send.lua",
        "  call_many('ZADD', K_EXP, fast_exp)\n",
        "",
        "send fast path: a batch of over 15 plain messages gets no expiry index (expiry only when a "
        "receive reads them)",
    ),
    # receive.lua's fast path (one message under a lock, nothing due for the sweep)
    lua(
        "rf-guard",
        "receive.lua",
        "if ARGV[1] == 'm' and ARGV[2] == 'L' and ARGV[3] == '1' then",
        "if ARGV[1] == 'm' and ARGV[2] == 'L' then",
        "receive fast path: taken for a count of several (one message handed out)",
    ),
    lua(
        "rf-locked",
        "receive.lua",
        "\n        and #redis.call('ZRANGEBYSCORE', MAIN.locked, '-inf', '(' .. now, 'LIMIT', 0, 1) == 0 then",
        " then",
        "receive fast path: taken with an elapsed lock to release (the message waits behind newer ones)",
    ),
    lua(
        "rf-exists",
        "receive.lua",
        "redis.call('EXISTS', K_SCHED, K_EXP) == 0",
        "redis.call('EXISTS', K_EXP) == 0",
        "receive fast path: the shortcut for absent sweep sets overlooks the schedule set (a due "
        "schedule the cursor passed waits behind newer messages)",
    ),
    lua(
        "rf-quiet",
        "receive.lua",
        "redis.call('EXISTS', K_SCHED, K_EXP, MAIN.ready) == 0",
        "redis.call('EXISTS', K_SCHED, K_EXP) == 0",
        "receive fast path: the shortcut for absent sweep sets overlooks ready (an abandoned message "
        "waits behind newer ones)",
    ),
    lua(
        "rf-dc",
        "receive.lua",
        "dc = (tonumber(dc) or 0) + 1",
        "dc = 1",
        "receive fast path: a redelivered message's count starts again",
    ),
    lua(
        "rf-cursor",
        "receive.lua",
        "redis.call('HSET', K_ST, 'cur', seq, 'acc', now)",
        "redis.call('HSET', K_ST, 'acc', now)",
        "receive fast path: the cursor does not move on (the message is handed out again)",
    ),
    lua(
        "rf-ready",
        "receive.lua",
        "          redis.call('ZREM', MAIN.ready, seq)\n",
        "",
        "receive fast path: a message taken from ready stays there (handed out twice)",
    ),
    lua(
        "sf-size",
        "send.lua",
        "'size', size + total, 'acc', now)",
        "'size', size, 'acc', now)",
        "send fast path: the stored size not counted",
    ),
    lua(
        "sf-gen",
        "send.lua",
        "(gen == '' or not c[2] or c[2] == '' or c[2] == gen)",
        "(gen == '' or not c[2] or c[2] == '' or c[2] ~= gen)",
        "send fast path: taken for a sender of another generation (no STALE, its metadata not reloaded)",
        [IT + "test_send_one.py"],
    ),
    lua(
        "sf-cursor",
        "send.lua",
        "if not st[3] then redis.call('HSET', K_ST, 'cur', seq) end",
        "if false then redis.call('HSET', K_ST, 'cur', seq) end",
        "send fast path: a partition without a cursor gets none (its messages are stored unindexed)",
    ),
    # take()'s stop on READ_US of wall time, and receive.lua's report of it
    lua(
        "read-us-never",
        "includes/messages.lua",
        "late = timed and clock_us() - start >= read_us",
        "late = false",
        "take(): a receive reads on past READ_US (SKIP_READ_US) (one long script call)",
        READ_TESTS,
    ),
    lua(
        "read-us-always",
        "includes/messages.lua",
        "late = timed and clock_us() - start >= read_us",
        "late = timed",
        "take(): a receive stops after its first chunk",
        READ_TESTS,
    ),
    lua(
        "read-us-report",
        "receive.lua",
        "local out = {now, untl, (more or late) and 1 or 0}",
        "local out = {now, untl, more and 1 or 0}",
        "receive: a read stopped on READ_US is not reported (the rest waits for a later receive)",
        READ_TESTS,
    ),
    # delivery-count thresholds
    lua(
        "max-dc",
        "includes/messages.lua",
        "dc >= cfg.max_dc then",
        "dc > cfg.max_dc then",
        "release(): one delivery more than max_delivery_count before dead-lettering",
    ),
    lua(
        "max-dc-undo",
        "includes/messages.lua",
        "if (not undo) and dc >= cfg.max_dc then",
        "if dc >= cfg.max_dc then",
        "release(): an uncounted release (never handed out) can dead-letter",
    ),
    lua(
        "undo-count",
        "includes/messages.lua",
        "  if undo then dc = dc - 1 end\n",
        "",
        "release(): a delivery never handed to a user is counted",
    ),
    lua(
        "receive-dc",
        "receive.lua",
        "if dc then dc = dc + 1 else dc = 1 end",
        "if dc then dc = dc else dc = 1 end",
        "receive: a redelivery does not count",
    ),
    lua(
        "defer-dc",
        "includes/settle.lua",
        "  redis.call('HSET', G.dc, seq, dc)\n",
        "",
        "defer: a deferred message loses its delivery count",
    ),
    # scheduled-time comparisons
    lua(
        "sched-due-early",
        "includes/messages.lua",
        "redis.call('ZRANGEBYSCORE', K_SCHED, '-inf', now, 'LIMIT', 0, limit)",
        "redis.call('ZRANGEBYSCORE', K_SCHED, '-inf', now + 60000, 'LIMIT', 0, limit)",
        "sweep: schedules come due a minute early",
    ),
    lua(
        "sched-due-boundary",
        "includes/messages.lua",
        "redis.call('ZRANGEBYSCORE', K_SCHED, '-inf', now, 'LIMIT', 0, limit)",
        "redis.call('ZRANGEBYSCORE', K_SCHED, '-inf', '(' .. now, 'LIMIT', 0, limit)",
        "sweep: a schedule due this very ms waits for the next sweep",
    ),
    lua(
        "sched-store",
        "includes/store.lua",
        "if at > now then enq = at end",
        "if at >= now then enq = at end",
        "store: scheduled_ms == now counts as scheduled",
    ),
    lua(
        "sched-store-drop",
        "includes/store.lua",
        "if at > now then enq = at end",
        "",
        "store: the scheduled time is ignored",
    ),
    lua(
        "sched-take",
        "includes/messages.lua",
        "if not ((#enq > #now_s or (#enq == #now_s and enq > now_s)) and",
        "if not ((#enq == #now_s and enq > now_s) and",
        "take(): the enqueue-time length check dropped",
    ),
    lua(
        "sched-take-drop",
        "includes/messages.lua",
        "and redis.call('ZSCORE', K_SCHED, seq)) then",
        "and false) then",
        "take(): pending schedules past the cursor are handed out",
    ),
    # duplicate-detection window
    lua(
        "dedup-expire",
        "includes/store.lua",
        "    redis.call('ZREMRANGEBYSCORE', K_DD, '-inf', now)\n",
        "",
        "store: duplicate-detection marks never leave the window",
    ),
    lua(
        "dedup-expire-boundary",
        "includes/store.lua",
        "redis.call('ZREMRANGEBYSCORE', K_DD, '-inf', now)",
        "redis.call('ZREMRANGEBYSCORE', K_DD, '-inf', '(' .. now)",
        "store: a mark ending this very ms still drops a duplicate",
    ),
    lua(
        "dedup-window",
        "includes/store.lua",
        "marks[#marks + 1] = now + cfg.dedup_ms",
        "marks[#marks + 1] = now + cfg.dedup_ms / 10",
        "store: the window is a tenth of duplicate_detection_history_time_window",
    ),
    lua(
        "dedup-batch",
        "includes/store.lua",
        "if mid ~= '' and (seen[mid] or redis.call",
        "if mid ~= '' and (redis.call",
        "store: duplicates within one batch are both stored",
    ),
    lua(
        "dedup-w",
        "includes/store.lua",
        "if cfg.dedup_ms > 0 and w == 4 then",
        "if cfg.dedup_ms > 0 and w == 1 then",
        "store: duplicate detection skipped for messages with ids",
    ),
    # a forwarding subscription's drain checks its topic partition's fan-out journal first
    lua(
        "fwd-journal",
        "forward_out.lua",
        "if journal_to_finish() then return {0, '', 2} end",
        "if false and journal_to_finish() then return {0, '', 2} end",
        "forward_out: a drain forwards cancelled copies that fell due, and never finishes a stalled publish",
        [IT + "test_topics_wide.py", "-k", "forwarding_subscription and sync"],
    ),
    # a publish charges walking each rule (rules.lua) and refuses a rule list that cannot fit
    lua(
        "rule-walk",
        "includes/rules.lua",
        "  R_LIM.walk_left = R_LIM.walk_left - cost\n",
        "  R_LIM.walk_left = R_LIM.walk_left - 0\n",
        "rules: walking a rule costs nothing (a publish walks any number of rules)",
        ["tests/reliability/test_rules_limits.py", "-k", "walk or reads"],
    ),
    lua(
        "rule-walk-list",
        "publish.lua",
        "    if walk > WALK then\n",
        "    if false then\n",
        "publish: a subscription's rule list that costs more than a publish walks is walked anyway",
        ["tests/reliability/test_rules_limits.py", "-k", "walk or reads"],
    ),
    lua(
        "rule-prescreen",
        "includes/rules.lua",
        "if v == nil or (type(v) == 'string' and v ~= text) then return false end",
        "if v == nil or type(v) == 'string' then return false end",
        "rules: a correlation filter answered from its text never matches",
        ["tests/reliability/test_rules_limits.py", "-k", "answered_without"],
    ),
]


# ------------------------------------------------------------------------------- Python mutants
SWAP: dict[type, type] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
SYMBOL: dict[type, str] = {
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.In: "in",
    ast.NotIn: "not in",
    ast.Is: "is",
    ast.IsNot: "is not",
    ast.And: "and",
    ast.Or: "or",
    ast.Add: "+",
    ast.Sub: "-",
}


def _in_scope(tree: ast.Module, names: set[str] | None) -> list[ast.AST]:
    """The nodes to mutate: everything under the chosen top-level definitions, docstrings and
    annotations excluded (a mutant there changes nothing the tests run)."""
    roots = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    if names is not None:
        roots = [n for n in roots if n.name in names]
    skip: set[int] = set()
    for root in roots:
        for n in ast.walk(root):
            for a in ("returns", "annotation"):
                sub = getattr(n, a, None)
                if sub is not None:
                    skip.update(id(x) for x in ast.walk(sub))
    out = []
    for root in roots:
        for n in ast.walk(root):
            if id(n) not in skip:
                out.append(n)
    return out


def _mutations(node: ast.AST) -> list[tuple[str, object]]:
    """(description, how) for each mutation of `node`; `how` is applied by _apply."""
    out: list[tuple[str, object]] = []
    if isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            if type(op) in SWAP:
                out.append((f"{SYMBOL[type(op)]} -> {SYMBOL[SWAP[type(op)]]}", ("cmp", i)))
    elif isinstance(node, ast.BoolOp):
        other = ast.Or if isinstance(node.op, ast.And) else ast.And
        out.append((f"{SYMBOL[type(node.op)]} -> {SYMBOL[other]}", ("bool",)))
    elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        if not (isinstance(node.left, ast.Constant) and isinstance(node.left.value, str)):
            flip = ast.Sub if isinstance(node.op, ast.Add) else ast.Add
            out.append((f"{SYMBOL[type(node.op)]} -> {SYMBOL[flip]}", ("binop",)))
    elif isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        out.append((f"{node.value} -> {node.value + 1}", ("int",)))
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        out.append(("not x -> x", ("not",)))
    elif isinstance(node, (ast.If, ast.While)) and not (
        isinstance(node.test, ast.UnaryOp) and isinstance(node.test.op, ast.Not)
    ):  # `if not x` negated is the `not` dropped: one mutant, made above
        out.append(("condition negated", ("neg",)))
    return out


def _apply(tree: ast.Module, node: ast.AST, how: tuple[object, ...]) -> None:
    kind = how[0]
    if kind == "cmp":
        assert isinstance(node, ast.Compare)
        i = how[1]
        assert isinstance(i, int)
        node.ops[i] = SWAP[type(node.ops[i])]()
    elif kind == "bool":
        assert isinstance(node, ast.BoolOp)
        node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
    elif kind == "binop":
        assert isinstance(node, ast.BinOp)
        node.op = ast.Sub() if isinstance(node.op, ast.Add) else ast.Add()
    elif kind == "int":
        assert isinstance(node, ast.Constant) and isinstance(node.value, int)
        node.value = node.value + 1
    elif kind == "not":
        assert isinstance(node, ast.UnaryOp)
        # replace the UnaryOp by its operand in its parent
        for parent in ast.walk(tree):
            for name, value in ast.iter_fields(parent):
                if value is node:
                    setattr(parent, name, node.operand)
                    return
                if isinstance(value, list):
                    for j, v in enumerate(value):
                        if v is node:
                            value[j] = node.operand
                            return
    elif kind == "neg":
        assert isinstance(node, (ast.If, ast.While))
        node.test = ast.UnaryOp(op=ast.Not(), operand=node.test)


def python_mutants(file: str) -> list[Mutant]:
    text = (ROOT / file).read_text()
    base = ast.parse(text)
    plain = ast.unparse(base)
    stem = Path(file).stem.lstrip("_")
    out: list[Mutant] = []
    seen: set[str] = set()
    nodes = _in_scope(base, SCOPE[file])
    for k, node in enumerate(nodes):
        for what, how in _mutations(node):
            tree = copy.deepcopy(base)
            target = _in_scope(tree, SCOPE[file])[k]
            assert isinstance(how, tuple)
            _apply(tree, target, how)
            src = ast.unparse(ast.fix_missing_locations(tree))
            if src == plain or src in seen:
                continue
            seen.add(src)
            line = getattr(node, "lineno", 0)
            out.append(Mutant(f"P-{stem}-{len(out) + 1}", file, line, what, TESTS[file], source=src))
    return out


def spread(ms: list[Mutant], most: int | None) -> list[Mutant]:
    """At most `most` of ms, evenly spaced through the file (so every function gets its share)."""
    if most is None or len(ms) <= most:
        return ms
    step = len(ms) / most
    return [ms[int(i * step)] for i in range(most)]


# ------------------------------------------------------------------------------- running
def copy_tree(dst: Path) -> None:
    shutil.copytree(ROOT, dst, ignore=lambda d, names: [n for n in names if n in SKIP_COPY], symlinks=True)


def pytest(tree: Path, tests: list[str], timeout: float, show: bool = False) -> tuple[str, float]:
    """Run the selection against `tree`: (status, seconds). `show`: print the output of a failed run."""
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}
    # -n0: one process (a mutant's few target tests finish sooner than xdist's workers start)
    # --no-cov: coverage (in addopts) would slow every run and measures nothing here
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-n0", "--no-cov", "-p", "no:cacheprovider", "--no-header"]
    cmd += tests
    t0 = time.monotonic()
    # its own process group: a run past the timeout is killed with the redis-servers it started
    proc = subprocess.Popen(
        cmd, cwd=tree, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return "timeout", time.monotonic() - t0
    # 0: all passed; 1: a test failed; anything else (collection or usage error) counts as killed
    # too, but is worth a look: it is printed
    if proc.returncode not in (0, 1) or (show and proc.returncode):
        print(out.decode()[-2000:], err.decode()[-2000:], sep="\n", file=sys.stderr)
    return ("survived" if proc.returncode == 0 else "killed"), time.monotonic() - t0


def run(mutants: list[Mutant], timeout: float) -> None:
    with tempfile.TemporaryDirectory(prefix="sbredis-mut-") as tmp:
        tree = Path(tmp) / "tree"
        copy_tree(tree)
        baselines: dict[tuple[str, ...], None] = {}
        for m in mutants:
            key = tuple(m.tests)
            if key not in baselines:  # the selection must pass unmutated, or every mutant looks killed
                status, secs = pytest(tree, m.tests, timeout * 3, show=True)
                if status != "survived":
                    raise SystemExit(f"the unmutated tree fails {' '.join(m.tests)} ({status}): fix that first")
                print(f"baseline {' '.join(m.tests)}: passed in {secs:.1f} s", flush=True)
                baselines[key] = None
            path = tree / m.file
            original = path.read_text()
            try:
                if m.source:
                    path.write_text(m.source)
                else:
                    assert original.count(m.old) == 1, f"{m.id}: {m.old!r} must occur once in {m.file}"
                    path.write_text(original.replace(m.old, m.new))
                if m.file.startswith("sbredis/aio/"):
                    subprocess.run([sys.executable, "scripts/unasync.py"], cwd=tree, check=True, capture_output=True)
                m.status, m.seconds = pytest(tree, m.tests, timeout)
            finally:
                path.write_text(original)
                if m.file.startswith("sbredis/aio/"):
                    shutil.rmtree(tree / "sbredis" / "_sync")
                    shutil.copytree(
                        ROOT / "sbredis" / "_sync",
                        tree / "sbredis" / "_sync",
                        ignore=shutil.ignore_patterns("__pycache__"),
                    )
            print(f"{m.status:9} {m.seconds:5.1f} s  {m.id:28} {m.file}:{m.line}  {m.what}", flush=True)


def table(results: list[dict[str, Any]]) -> str:
    """The markdown table of results (rows of the JSON), per target and in all."""
    rows = ["| target | mutants | killed | timeout | survived | score |", "| --- | ---: | ---: | ---: | ---: | ---: |"]
    by: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        by.setdefault("Lua scripts" if r["id"].startswith("L-") else f"`{r['file']}`", []).append(r)
    for name, rs in [*by.items(), ("all", results)]:
        k = sum(r["status"] == "killed" for r in rs)
        t = sum(r["status"] == "timeout" for r in rs)
        s = sum(r["status"] == "survived" for r in rs)
        rows.append(f"| {name} | {len(rs)} | {k} | {t} | {s} | {100 * (k + t) / max(1, len(rs)):.1f} % |")
    return "\n".join(rows)


def write_doc(results: list[dict[str, Any]]) -> None:
    """Put the table between the markers of docs/reliability.md."""
    text = DOC.read_text()
    head, rest = text.split(DOC_START, 1)
    _, tail = rest.split(DOC_END, 1)
    DOC.write_text(f"{head}{DOC_START}\n{table(results)}\n{DOC_END}{tail}")


def stale_lua(mutants: list[Mutant]) -> list[str]:
    """Lua mutants whose `old` text is not in their script exactly once (the script changed)."""
    return [m.id for m in mutants if m.old and (ROOT / m.file).read_text().count(m.old) != 1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lua", action="store_true", help="the Lua mutants")
    ap.add_argument("--python", action="store_true", help="the Python mutants")
    ap.add_argument("--target", action="append", help="Python targets (default: all of TESTS)")
    ap.add_argument("--max", type=int, help="at most this many Python mutants per target")
    ap.add_argument("--only", help="comma-separated mutant ids")
    ap.add_argument("--tests", help="pytest arguments that replace the mutants' test selections (one string)")
    ap.add_argument("--timeout", type=float, default=120, help="seconds per mutant run (default 120)")
    ap.add_argument("--list", action="store_true", help="list the mutants and exit")
    ap.add_argument("--doc", action="store_true", help="write the results table into docs/reliability.md and exit")
    ap.add_argument(
        "--merge", action="store_true", help="update the results JSON: these mutants replace their earlier entries"
    )
    ap.add_argument("--out", type=Path, default=OUT, help=f"results JSON (default {OUT.relative_to(ROOT)})")
    args = ap.parse_args(argv)
    both = not (args.lua or args.python)
    mutants: list[Mutant] = []
    if args.lua or both or args.only:
        mutants += LUA
    if args.python or both or args.only:
        for t in args.target or list(TESTS):
            mutants += spread(python_mutants(t), args.max)
    if args.only:
        wanted = set(args.only.split(","))
        mutants = [m for m in mutants if m.id in wanted]
        if missing := wanted - {m.id for m in mutants}:
            raise SystemExit(f"no such mutants: {', '.join(sorted(missing))}")
    if stale := stale_lua(mutants):
        raise SystemExit(f"Lua mutants whose text no longer occurs exactly once (update LUA): {', '.join(stale)}")
    if args.tests:  # e.g. a slow test outside the focused selection that kills a survivor
        for m in mutants:
            m.tests = shlex.split(args.tests)
    if args.doc:
        write_doc(json.loads(args.out.read_text())["results"])
        return 0
    if args.list:
        for m in mutants:
            print(f"{m.id:28} {m.file}:{m.line}  {m.what}")
        print(f"{len(mutants)} mutants")
        return 0
    run(mutants, args.timeout)
    survivors = [m for m in mutants if m.status == "survived"]
    for m in survivors:
        print(f"survived: {m.id} {m.file}:{m.line} {m.what}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    rows = [{k: v for k, v in asdict(m).items() if k not in ("source", "tests", "old", "new")} for m in mutants]
    if args.merge and args.out.exists():
        fresh = {r["id"]: r for r in rows}
        earlier = json.loads(args.out.read_text())["results"]
        rows = [fresh.pop(r["id"], r) for r in earlier] + list(fresh.values())
    print(table(rows))
    result = {
        "mutants": len(rows),
        "killed": sum(r["status"] == "killed" for r in rows),
        "timeout": sum(r["status"] == "timeout" for r in rows),
        "survived": sum(r["status"] == "survived" for r in rows),
        "results": rows,
    }
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python
"""How close a Lua-on-streams broker can come to raw redis-py: floors for the core ratio targets.

    python bench/bench_floors.py [--url redis://host:port/db] [--quick] [--rounds N]

The targets are batched send >= 1.0x raw pipelined XADD and receive + complete >= 0.4x raw
XREADGROUP + XACK, with every state change a Lua script on Redis Streams and sorted sets.
This bench runs, in one process on one server with 1 KiB bodies and batches of 100, the raw
baselines, sbredis itself, and stripped-down scripts that do only the unavoidable part of each
operation, so the distance between "raw" and "any broker built this way" is measured, not argued:

send rows
  * raw            pipeline of 100 ``XADD key * b <1 KiB>`` (the baseline of the targets)
  * nop script     one EVALSHA of ``return 1`` carrying sbredis's send arguments (client,
                   socket and argument conversion: the cost of calling a script at all)
  * XADD-only      a script that XADDs each message with the fields sbredis stores (b, e, x)
                   and nothing else: no sequence counter, ready index, TTL, dedup or quota
  * sbredis        ``sender.send_messages(100 messages)``
receive rows
  * raw            ``XREADGROUP COUNT 100`` + ``XACK`` (the baseline of the targets)
  * PEL scripts    XREADGROUP inside a script, then XACK + XDEL: the stream's pending list as
                   the lock table; no lock deadline, so elapsed locks could only be found by
                   scanning the pending list (not O(log n)), no delivery count check, no expiry
  * lock scripts   sbredis's structures and nothing else: pop the ready index, read the
                   entries, write a lock record and a lock deadline; complete checks both and
                   removes the entry, record and deadline (no Python message objects, no expiry,
                   delivery counts, quota, sweep)
  * sbredis        ``receive_messages(100)`` + ``complete_messages``

Every figure is the median of --rounds rounds; the variants alternate inside each round.
Results: bench/results/floors.json (with the machine and versions).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for p in (ROOT, ROOT / "bench"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

import redis  # noqa: E402
from bench_core import BATCH, BODY, fmt_rate, machine_info, median, xread_entries  # noqa: E402

from sbredis import ServiceBusClient, ServiceBusMessage  # noqa: E402
from sbredis.management import ServiceBusAdministrationClient  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "floors.json"
pc = time.perf_counter

NOP = "return 1"
# ARGV: n, first seq, now, then the blobs (as sbredis sends messages with default ttl/schedule: w = 1)
XADD_ONLY = """
local n, seq, now = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
for i = 1, n do
  redis.call('XADD', KEYS[1], tostring(seq + i), 'b', ARGV[3 + i], 'e', now, 'x', '0')
end
return n
"""
# KEYS: stream; ARGV: consumer (the lock nonce), count
PEL_RECEIVE = """
local r = redis.call('XREADGROUP', 'GROUP', 'g', ARGV[1], 'COUNT', ARGV[2], 'STREAMS', KEYS[1], '>')
if not r then return {} end
local out = {}
for _, e in ipairs(r[1][2]) do
  out[#out + 1] = e[1]
  out[#out + 1] = e[2][2]
end
return out
"""
PEL_COMPLETE = """
redis.call('XACK', KEYS[1], 'g', unpack(ARGV))
redis.call('XDEL', KEYS[1], unpack(ARGV))
return #ARGV
"""
# KEYS: stream, ready zset, lock hash, deadline zset; ARGV: nonce, count, lock ms
LOCK_RECEIVE = """
local p = redis.call('ZPOPMIN', KEYS[2], ARGV[2])
if #p == 0 then return {} end
local e = redis.call('XRANGE', KEYS[1], p[1], p[#p - 1])
local t = redis.call('TIME')
local untl = tostring(t[1] * 1000 + math.floor(t[2] / 1000) + tonumber(ARGV[3]))
local lk, dl, out = {}, {}, {}
for _, en in ipairs(e) do
  local s = string.sub(en[1], 1, -3)
  lk[#lk + 1] = s
  lk[#lk + 1] = ARGV[1]
  dl[#dl + 1] = untl
  dl[#dl + 1] = s
  out[#out + 1] = s
  out[#out + 1] = en[2][2]
end
redis.call('HSET', KEYS[3], unpack(lk))
redis.call('ZADD', KEYS[4], unpack(dl))
return out
"""
# ARGV: pairs seq, nonce
LOCK_COMPLETE = """
local n = #ARGV / 2
local seqs = {}
for i = 1, n do seqs[i] = ARGV[2 * i - 1] end
local recs = redis.call('HMGET', KEYS[3], unpack(seqs))
local untl = redis.call('ZMSCORE', KEYS[4], unpack(seqs))
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local ok = {}
for i = 1, n do
  if recs[i] == ARGV[2 * i] and untl[i] and tonumber(untl[i]) >= now then ok[#ok + 1] = seqs[i] end
end
if #ok > 0 then
  redis.call('XDEL', KEYS[1], unpack(ok))
  redis.call('HDEL', KEYS[3], unpack(ok))
  redis.call('ZREM', KEYS[4], unpack(ok))
end
return #ok
"""


class Floors:
    def __init__(self, url: str, batches: int) -> None:
        self.r = redis.Redis.from_url(url)
        self.batches = batches
        self.tag = uuid.uuid4().hex[:8]
        self.admin = ServiceBusAdministrationClient.from_connection_string(url)
        self.client = ServiceBusClient.from_connection_string(url)
        self.queue = f"bench-{self.tag}-floor"
        self.admin.create_queue(self.queue, max_size_in_megabytes=1 << 16)
        self.sender = self.client.get_queue_sender(self.queue)
        self.receiver = self.client.get_queue_receiver(self.queue)
        k = f"bench:{self.tag}:"
        self.stream, self.ready, self.lk, self.dl = k + "{f}s", k + "{f}ready", k + "{f}lk", k + "{f}dl"
        self.sha = {name: self.r.script_load(src) for name, src in _SCRIPTS.items()}
        # distinct messages for every call, as sbredis sends them (each has its own message id): Lua
        # interns strings, so a script called again with the same blobs would reuse them and not pay
        # for creating (and later collecting) 100 KiB of Lua strings per call, which a real send does
        self.send_args: list[list[Any]] = [
            [ServiceBusMessage(BODY).encoded() for _ in range(BATCH)] for _ in range(batches)
        ]

    def close(self) -> None:
        self.receiver.close()
        self.sender.close()
        self.client.close()
        self.admin.delete_queue(self.queue)
        self.admin.close()
        self.r.delete(self.stream, self.ready, self.lk, self.dl)
        self.r.close()

    def srv(self) -> tuple[int, int]:
        """Redis-side usec so far (INFO commandstats): of script calls, and of the other commands
        (commands a script runs are counted in both, so a variant reports one or the other)."""
        scripts = other = 0
        for k, v in self.r.info("commandstats").items():
            name = k.removeprefix("cmdstat_")
            if name in ("evalsha", "eval"):
                scripts += int(v["usec"])
            elif name not in _OWN:
                other += int(v["usec"])
        return scripts, other

    def fresh_stream(self, group: bool) -> None:
        self.r.delete(self.stream, self.ready, self.lk, self.dl)
        if group:
            self.r.xgroup_create(self.stream, "g", id="0", mkstream=True)

    # -- send variants: seconds for self.batches calls of 100 messages
    def send_raw(self) -> tuple[float, int]:
        self.fresh_stream(False)
        fields: dict[Any, Any] = {b"b": BODY}
        u0, t0 = self.srv(), pc()
        for _ in range(self.batches):
            with self.r.pipeline(transaction=False) as p:
                for _ in range(BATCH):
                    p.xadd(self.stream, fields)
                p.execute()
        return pc() - t0, usec_since(u0, self.srv())

    def send_script(self, name: str) -> tuple[float, int]:
        self.fresh_stream(False)
        sha, seq, now = self.sha[name], 0, int(time.time() * 1000)
        u0, t0 = self.srv(), pc()
        for args in self.send_args:
            self.r.evalsha(sha, 1, self.stream, BATCH, seq, now, *args)
            seq += BATCH
        return pc() - t0, usec_since(u0, self.srv())

    def send_sbredis(self) -> tuple[float, int]:
        # the messages are made first (not timed), and the server time read around the whole loop
        # as for the other variants (an INFO between calls would disturb what is measured)
        batches = [[ServiceBusMessage(BODY) for _ in range(BATCH)] for _ in range(self.batches)]
        u0, t0 = self.srv(), pc()
        for msgs in batches:
            self.sender.send_messages(msgs)
        spent, usec = pc() - t0, usec_since(u0, self.srv())
        self.drain_sbredis()  # keep the queue short between rounds (not timed)
        return spent, usec

    # -- receive variants: seconds to receive and complete self.batches x 100 prefilled messages
    def prefill_stream(self, ready: bool) -> None:
        self.fresh_stream(True)
        if ready:  # as sbredis's call_many does: the lock hash and deadline set in their large
            # encodings from the start (a member longer than 64 bytes; it never matches a seq)
            self.r.hset(self.lk, WIDE, "")
            self.r.zadd(self.dl, {WIDE: 0})
        seq = 0
        for _ in range(self.batches):
            with self.r.pipeline(transaction=False) as p:
                for _ in range(BATCH):
                    seq += 1
                    p.xadd(self.stream, {b"b": BODY}, id=f"{seq}-0")
                    if ready:
                        p.zadd(self.ready, {str(seq): seq})
                p.execute()

    def recv_raw(self) -> tuple[float, int]:
        self.prefill_stream(False)
        u0, t0 = self.srv(), pc()
        while True:
            entries = xread_entries(self.r.xreadgroup("g", "c", {self.stream: ">"}, count=BATCH))
            if not entries:
                break
            ids = []
            for eid, fields in entries:
                fields[b"b"]
                ids.append(eid)
            self.r.xack(self.stream, "g", *ids)
        return pc() - t0, usec_since(u0, self.srv())

    def recv_pel(self) -> tuple[float, int]:
        self.prefill_stream(False)
        recv, comp = self.sha["pel_receive"], self.sha["pel_complete"]
        u0, t0 = self.srv(), pc()
        while True:
            out = self.r.evalsha(recv, 1, self.stream, "n1", BATCH)
            if not out:
                break
            self.r.evalsha(comp, 1, self.stream, *out[0::2])
        return pc() - t0, usec_since(u0, self.srv())

    def recv_lock(self) -> tuple[float, int]:
        self.prefill_stream(True)
        recv, comp = self.sha["lock_receive"], self.sha["lock_complete"]
        keys = (self.stream, self.ready, self.lk, self.dl)
        u0, t0 = self.srv(), pc()
        while True:
            out = self.r.evalsha(recv, 4, *keys, "n1", BATCH, 60_000)
            if not out:
                break
            args: list[Any] = []
            for s in out[0::2]:
                args += (s, b"n1")
            self.r.evalsha(comp, 4, *keys, *args)
        return pc() - t0, usec_since(u0, self.srv())

    def recv_sbredis(self) -> tuple[float, int]:
        for _ in range(self.batches):
            self.sender.send_messages([ServiceBusMessage(BODY) for _ in range(BATCH)])
        return self.drain_sbredis()

    def drain_sbredis(self) -> tuple[float, int]:
        u0, t0 = self.srv(), pc()
        while True:
            msgs = self.receiver.receive_messages(BATCH, wait=False)
            if not msgs:
                break
            for m in msgs:
                m.body  # noqa: B018 - decode cost counted, as in bench_core
            self.receiver.complete_messages(msgs)
        return pc() - t0, usec_since(u0, self.srv())


def usec_since(before: tuple[int, int], after: tuple[int, int]) -> int:
    """Server usec between two srv() readings: the script calls' when there were any, else the commands'."""
    scripts = after[0] - before[0]
    return scripts if scripts else after[1] - before[1]


WIDE = b"\xff" + b"~" * 64
_OWN = {"info", "config", "script", "hello", "client", "ping"}
_SCRIPTS = {
    "nop": NOP,
    "xadd_only": XADD_ONLY,
    "pel_receive": PEL_RECEIVE,
    "pel_complete": PEL_COMPLETE,
    "lock_receive": LOCK_RECEIVE,
    "lock_complete": LOCK_COMPLETE,
}

ROWS: list[tuple[str, str, Callable[[Floors], tuple[float, int]]]] = [
    ("send", "raw pipelined XADD x100", Floors.send_raw),
    ("send", "script call only (return 1, sbredis's send arguments)", lambda f: f.send_script("nop")),
    ("send", "script: XADD each message, nothing else", lambda f: f.send_script("xadd_only")),
    ("send", "sbredis send_messages(100)", Floors.send_sbredis),
    ("receive", "raw XREADGROUP 100 + XACK", Floors.recv_raw),
    ("receive", "scripts: XREADGROUP / XACK+XDEL (PEL as lock table)", Floors.recv_pel),
    ("receive", "scripts: ready index, lock record and deadline only", Floors.recv_lock),
    ("receive", "sbredis receive_messages(100) + complete_messages", Floors.recv_sbredis),
]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", help="Redis URL (default: start a private redis-server)")
    ap.add_argument("--quick", action="store_true", help="smaller rounds (about 20 s in all)")
    ap.add_argument("--rounds", type=int, default=None, help="rounds per figure (default 5, 3 with --quick)")
    ap.add_argument("--batches", type=int, default=None, help="calls of 100 per round (default 150, 40 with --quick)")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    rounds = args.rounds or (3 if args.quick else 5)
    batches = args.batches or (40 if args.quick else 150)
    redis_server = None
    url = args.url
    if url is None:
        from tests.redis_server import RedisServer

        redis_server = RedisServer().start()
        url = redis_server.url
    try:
        f = Floors(url, batches)
        try:
            rates: dict[str, list[float]] = {label: [] for _, label, _ in ROWS}
            server: dict[str, list[float]] = {label: [] for _, label, _ in ROWS}
            n = batches * BATCH
            for _ in range(rounds):
                for _, label, fn in ROWS:
                    seconds, usec = fn(f)
                    rates[label].append(n / seconds)
                    server[label].append(usec / n)
            machine = machine_info(f.r)
        finally:
            f.close()
    finally:
        if redis_server is not None:
            redis_server.stop()
    rows: list[dict[str, Any]] = []
    base: dict[str, float] = {}
    for kind, label, _ in ROWS:
        m = median(rates[label])
        base.setdefault(kind, m)
        rows.append(
            {
                "kind": kind,
                "variant": label,
                "msgs_per_s": m,
                "ratio_to_raw": m / base[kind],
                "server_us_per_msg": median(server[label]),
                "rounds": rates[label],
            }
        )
    width = max(len(r["variant"]) for r in rows)
    print(f"\n{'variant':<{width}} | {'msgs/s':>9} | vs raw | server us/msg")
    print(f"{'-' * width}-+-{'-' * 9}-+--------+--------------")
    for r in rows:
        print(
            f"{r['variant']:<{width}} | {fmt_rate(r['msgs_per_s']):>9} | {r['ratio_to_raw']:5.2f}x | "
            f"{r['server_us_per_msg']:13.2f}"
        )
    print(f"\n{BATCH} x 1 KiB per call, {batches * BATCH} messages per round, median of {rounds} rounds")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    doc = {"machine": machine, "batch": BATCH, "body_bytes": len(BODY), "rounds": rounds, "rows": rows}
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
